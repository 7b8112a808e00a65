//! The conflict resolver: which desired endpoint wins when several ask for the same name and type.
//!
//! The rules are external-dns's `PerResource` resolver. They must match exactly, because two controllers (or
//! extdns replacing external-dns on a live zone) would otherwise flap a record between two answers.

use extdns_endpoint::{Endpoint, RecordType};

/// The candidate to create: the one with the "least" targets ([`extdns_endpoint::Targets::is_less`]:
/// fewer targets first, then IPs before hostnames, IPs by address, hostnames by string); the first wins ties.
pub fn resolve_create<'a>(candidates: &[&'a Endpoint]) -> Option<&'a Endpoint> {
    let mut best: Option<&'a Endpoint> = None;
    for &c in candidates {
        match best {
            Some(b) if !c.targets.is_less(&b.targets) => {}
            _ => best = Some(c),
        }
    }
    best
}

/// The candidate to update `current` to: the resource that already holds the name keeps it (so a second
/// object claiming the same name does not steal it); otherwise the create rule decides. The current record
/// names its object by the `resource` label it was written with, a candidate by the object it names
/// ([`Endpoint::resource`] renders it; none for one naming no object): compared as the labels they are
/// written with, a missing one as empty, so a record written without `resource` stays with such a candidate.
pub fn resolve_update<'a>(current: &Endpoint, candidates: &[&'a Endpoint]) -> Option<&'a Endpoint> {
    let current_resource = current.resource();
    let mut sorted: Vec<&'a Endpoint> = candidates.to_vec();
    // A stable sort by the create order, so among several candidates of the holding resource the least wins.
    sorted.sort_by(|a, b| {
        if a.targets.is_less(&b.targets) {
            std::cmp::Ordering::Less
        } else if b.targets.is_less(&a.targets) {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    });
    sorted
        .iter()
        .copied()
        .find(|c| c.resource() == current_resource)
        .or_else(|| resolve_create(&sorted))
}

/// Whether the candidates of one row mix CNAME with another type. A CNAME cannot coexist with other records
/// at a name, so the CNAME candidates are then discarded (the current CNAME, if any, stays so it is deleted).
pub fn cname_conflicts(candidates: &[&Endpoint]) -> bool {
    if candidates.len() <= 1 {
        return false;
    }
    let mut cname = false;
    let mut other = false;
    for c in candidates {
        if c.record_type == RecordType::Cname {
            cname = true;
        } else {
            other = true;
        }
        if cname && other {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use extdns_endpoint::{ObjectKey, label};
    use extdns_object::ResourceKind;

    fn ep(targets: &[&str]) -> Endpoint {
        Endpoint::new("x.example.com", RecordType::A, targets.iter().copied())
    }

    fn cname(target: &str) -> Endpoint {
        Endpoint::new("x.example.com", RecordType::Cname, [target])
    }

    /// A desired A record of the Service `default/<service>`.
    fn of(service: &str, targets: &[&str]) -> Endpoint {
        ep(targets).with_ref_object(ObjectKey::new(ResourceKind::Service, "default", service))
    }

    /// A current A record written for the Service `default/<service>`: its `resource` label as read back.
    fn held_by(service: &str, targets: &[&str]) -> Endpoint {
        ep(targets).with_label(label::RESOURCE, format!("service/default/{service}"))
    }

    /// The resource whose candidate [`resolve_update`] keeps.
    fn update_winner(current: &Endpoint, candidates: &[&Endpoint]) -> Option<String> {
        resolve_update(current, candidates)
            .and_then(Endpoint::resource)
            .map(|r| r.into_owned())
    }

    #[test]
    fn resolve_create_prefers_fewer_targets() {
        let (a, b) = (ep(&["1.1.1.1", "2.2.2.2"]), ep(&["9.9.9.9"]));
        assert_eq!(resolve_create(&[&a, &b]), Some(&b));
    }

    #[test]
    fn resolve_create_prefers_ips_over_hostnames_and_lower_addresses() {
        let (a, b) = (cname("a.example.com"), ep(&["10.0.0.1"]));
        assert_eq!(resolve_create(&[&a, &b]), Some(&b));
        let (c, d) = (ep(&["10.0.0.1"]), ep(&["9.0.0.1"]));
        assert_eq!(resolve_create(&[&c, &d]), Some(&d));
        let (e, f) = (cname("b.example.com"), cname("a.example.com"));
        assert_eq!(resolve_create(&[&e, &f]), Some(&f));
    }

    #[test]
    fn resolve_create_keeps_the_first_of_equal_candidates() {
        let a = of("a", &["1.1.1.1"]);
        let b = of("b", &["1.1.1.1"]);
        assert_eq!(
            resolve_create(&[&a, &b]).and_then(Endpoint::resource).as_deref(),
            Some("service/default/a")
        );
        assert_eq!(resolve_create(&[]), None);
    }

    #[test]
    fn resolve_update_keeps_the_resource_that_holds_the_record() {
        let current = held_by("b", &["1.1.1.1"]);
        let a = of("a", &["1.1.1.1"]);
        let b = of("b", &["2.2.2.2", "3.3.3.3"]);
        assert_eq!(update_winner(&current, &[&a, &b]).as_deref(), Some("service/default/b"));
        // A record merged from two Services is named by the first, whatever the other is.
        let merged =
            of("b", &["2.2.2.2", "3.3.3.3"]).with_ref_object(ObjectKey::new(ResourceKind::Service, "default", "a"));
        assert_eq!(
            update_winner(&current, &[&a, &merged]).as_deref(),
            Some("service/default/b")
        );
    }

    #[test]
    fn resolve_update_falls_back_to_the_create_rule() {
        let current = held_by("gone", &["1.1.1.1"]);
        let a = of("a", &["2.2.2.2", "3.3.3.3"]);
        let b = of("b", &["4.4.4.4"]);
        assert_eq!(update_winner(&current, &[&a, &b]).as_deref(), Some("service/default/b"));
    }

    #[test]
    fn resolve_update_prefers_the_least_candidate_of_the_holding_resource() {
        let current = held_by("a", &["1.1.1.1"]);
        let a1 = of("a", &["5.5.5.5"]);
        let a2 = of("a", &["4.4.4.4"]);
        assert_eq!(
            resolve_update(&current, &[&a1, &a2]).map(|e| e.targets[0].as_str()),
            Some("4.4.4.4")
        );
    }

    #[test]
    fn resolve_update_matches_a_missing_resource_label_with_a_missing_one() {
        let current = ep(&["1.1.1.1"]);
        let a = of("a", &["1.1.1.1"]);
        let b = ep(&["2.2.2.2", "3.3.3.3"]);
        assert_eq!(resolve_update(&current, &[&a, &b]).map(|e| e.targets.len()), Some(2));
    }

    #[test]
    fn cname_conflicts_only_when_mixed_with_another_type() {
        let (a, c1, c2) = (ep(&["1.1.1.1"]), cname("a.example.com"), cname("b.example.com"));
        assert!(cname_conflicts(&[&a, &c1]));
        assert!(!cname_conflicts(&[&c1, &c2]));
        assert!(!cname_conflicts(&[&c1]));
        let aaaa = Endpoint::new("x.example.com", RecordType::Aaaa, ["2001:db8::1"]);
        assert!(!cname_conflicts(&[&a, &aaaa]));
    }
}
