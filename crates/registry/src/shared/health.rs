//! The health of a shared name's targets as every owner must read it alike (docs/shared-names.md,
//! "Health"): each owner's contribution lists its unhealthy targets apart, and the published record is
//! the healthy targets of every owner, or, when none is healthy, every target of every owner (fail open).
//! Computed from the contributions alone, so every owner writes and repairs the record to the same set,
//! and two owners whose targets all fail in the same interval both stay published instead of both
//! withdrawing.
//!
//! The controller's prober says which of this owner's targets are unhealthy by the provider-specific
//! property [`UNHEALTHY`] on the desired endpoint; the plan compares it (a target changing health is a
//! change of our contribution) and the registry takes it off before the provider sees the record.

use extdns_endpoint::Endpoint;

use super::format::Contribution;

/// The provider-specific property listing a shared name's own unhealthy targets, space-separated in
/// sorted order (the one spelling, so the plan sees no difference that is only an order).
pub const UNHEALTHY: &str = "extdns/shared-unhealthy";

/// Sets on `e` the targets of it that are `unhealthy`; removes the property when there are none.
pub fn set_unhealthy(e: &mut Endpoint, unhealthy: impl IntoIterator<Item = String>) {
    let mut list: Vec<String> = unhealthy.into_iter().collect();
    list.sort();
    list.dedup();
    if list.is_empty() {
        e.provider_specific.remove(UNHEALTHY);
    } else {
        e.provider_specific.set(UNHEALTHY, list.join(" "));
    }
}

/// `e`'s unhealthy targets, sorted: those the property names that `e` holds (a stale name is ignored).
pub fn unhealthy_of(e: &Endpoint) -> Vec<String> {
    let Some(list) = e.provider_specific.get(UNHEALTHY) else {
        return Vec::new();
    };
    let held: Vec<String> = e.targets.iter().map(|t| t.to_string()).collect();
    let mut out: Vec<String> = list
        .split(' ')
        .filter(|t| !t.is_empty() && held.iter().any(|h| h == t))
        .map(str::to_string)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Takes the property off `e`, returning the unhealthy targets it named ([`unhealthy_of`]).
pub fn take_unhealthy(e: &mut Endpoint) -> Vec<String> {
    let list = unhealthy_of(e);
    e.provider_specific.remove(UNHEALTHY);
    list
}

/// The record's targets as an owner alone at the name publishes them (a registry without the shared
/// layer, where the name is a plain record): its unhealthy targets withdrawn unless all are (fail open).
/// The property is taken off either way.
pub fn withdraw_alone(e: &mut Endpoint) {
    let unhealthy = take_unhealthy(e);
    if unhealthy.is_empty() || unhealthy.len() >= e.targets.len() {
        return;
    }
    e.targets.retain(|t| {
        let t = t.to_string();
        !unhealthy.contains(&t)
    });
}

/// The targets a shared record publishes given its owners' `contributions`: every healthy target, or,
/// when no owner has one, every target (fail open). Sorted, without duplicates. A contribution written
/// without health (an older extdns) counts as all healthy.
pub fn published<'a>(contributions: impl IntoIterator<Item = &'a Contribution>) -> Vec<String> {
    let mut healthy = Vec::new();
    let mut all = Vec::new();
    for c in contributions {
        for t in &c.targets {
            all.push(t.clone());
            if !c.unhealthy.contains(t) {
                healthy.push(t.clone());
            }
        }
    }
    let mut out = if healthy.is_empty() { all } else { healthy };
    out.sort();
    out.dedup();
    out
}

/// Whether [`published`] fails open for `contributions`: they hold targets and none is healthy.
pub fn fails_open<'a>(contributions: impl IntoIterator<Item = &'a Contribution>) -> bool {
    let mut any = false;
    for c in contributions {
        if c.targets.iter().any(|t| !c.unhealthy.contains(t)) {
            return false;
        }
        any |= !c.targets.is_empty();
    }
    any
}

#[cfg(test)]
mod tests {
    use extdns_endpoint::RecordType;

    use super::*;

    fn contribution(owner: &str, targets: &[&str], unhealthy: &[&str]) -> Contribution {
        Contribution {
            owner: owner.into(),
            record: "web.example.org".into(),
            record_type: RecordType::A,
            resource: None,
            targets: targets.iter().map(|t| t.to_string()).collect(),
            unhealthy: unhealthy.iter().map(|t| t.to_string()).collect(),
        }
    }

    #[test]
    fn two_owners_both_all_unhealthy_keep_everything() {
        let a = contribution("a", &["192.0.2.1"], &["192.0.2.1"]);
        let b = contribution("b", &["192.0.2.2", "192.0.2.3"], &["192.0.2.2", "192.0.2.3"]);
        assert_eq!(published([&a, &b]), ["192.0.2.1", "192.0.2.2", "192.0.2.3"]);
        assert!(fails_open([&a, &b]));
    }

    #[test]
    fn one_healthy_owner_withdraws_the_others_unhealthy_targets() {
        let a = contribution("a", &["192.0.2.1"], &["192.0.2.1"]);
        let b = contribution("b", &["192.0.2.2", "192.0.2.3"], &["192.0.2.3"]);
        assert_eq!(published([&a, &b]), ["192.0.2.2"]);
        assert!(!fails_open([&a, &b]));
    }

    #[test]
    fn a_recovered_target_is_published_again() {
        let a = contribution("a", &["192.0.2.1"], &["192.0.2.1"]);
        let b = contribution("b", &["192.0.2.2"], &[]);
        assert_eq!(published([&a, &b]), ["192.0.2.2"]);
        let a = contribution("a", &["192.0.2.1"], &[]);
        assert_eq!(published([&a, &b]), ["192.0.2.1", "192.0.2.2"]);
    }

    #[test]
    fn a_contribution_without_health_counts_as_healthy() {
        // An older extdns writes no unhealthy field: its targets are healthy to every reader.
        let old = contribution("old", &["192.0.2.1"], &[]);
        let a = contribution("a", &["192.0.2.2"], &["192.0.2.2"]);
        assert_eq!(published([&old, &a]), ["192.0.2.1"]);
        assert!(published(std::iter::empty()).is_empty());
    }

    #[test]
    fn the_property_is_one_sorted_spelling_and_names_only_held_targets() {
        let mut e = Endpoint::new(
            "web.example.org",
            RecordType::A,
            ["192.0.2.1", "192.0.2.2", "192.0.2.3"],
        );
        set_unhealthy(&mut e, ["192.0.2.3".to_string(), "192.0.2.1".to_string()]);
        assert_eq!(e.provider_specific.get(UNHEALTHY), Some("192.0.2.1 192.0.2.3"));
        e.provider_specific.set(UNHEALTHY, "192.0.2.9 192.0.2.3");
        assert_eq!(unhealthy_of(&e), ["192.0.2.3"]);
        set_unhealthy(&mut e, Vec::new());
        assert_eq!(e.provider_specific.get(UNHEALTHY), None);
    }

    #[test]
    fn an_owner_alone_withdraws_unhealthy_targets_unless_all_are() {
        let mut e = Endpoint::new("web.example.org", RecordType::A, ["192.0.2.1", "192.0.2.2"]);
        set_unhealthy(&mut e, ["192.0.2.1".to_string()]);
        withdraw_alone(&mut e);
        assert_eq!(
            e.targets.iter().map(|t| t.to_string()).collect::<Vec<_>>(),
            ["192.0.2.2"]
        );
        assert_eq!(e.provider_specific.get(UNHEALTHY), None);
        let mut e = Endpoint::new("web.example.org", RecordType::A, ["192.0.2.1"]);
        set_unhealthy(&mut e, ["192.0.2.1".to_string()]);
        withdraw_alone(&mut e);
        assert_eq!(e.targets.len(), 1, "fail open");
        assert_eq!(e.provider_specific.get(UNHEALTHY), None);
    }
}
