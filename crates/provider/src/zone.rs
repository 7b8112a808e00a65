//! Which zone a record goes to. Every provider asks the same two questions: is this name in this zone (on a
//! label boundary: `notexample.org` is not in `example.org`), and which of several zones is the closest one
//! that contains it (the longest suffix). DNS names compare without regard to ASCII case or a trailing dot,
//! so neither side needs normalising first.

use extdns_endpoint::{DomainFilter, RecordType};

use crate::batch::Unit;

/// Whether `name` is `zone` or a name under it, on a label boundary, ignoring ASCII case and trailing dots.
/// The root zone (`""` or `"."`) contains every name.
pub fn in_zone(name: &str, zone: &str) -> bool {
    let (name, zone) = (trim(name), trim(zone));
    if zone.is_empty() {
        return true;
    }
    let Some(cut) = name.len().checked_sub(zone.len()) else {
        return false;
    };
    name.is_char_boundary(cut)
        && name[cut..].eq_ignore_ascii_case(zone)
        && (cut == 0 || name.as_bytes()[cut - 1] == b'.')
}

/// Whether `name` lies strictly under `zone` (in it, and not its apex).
pub fn under(name: &str, zone: &str) -> bool {
    trim(name).len() > trim(zone).len() && in_zone(name, zone)
}

/// The index of the zone closest to `name`: of the zones that contain it, the one with the longest name
/// (the last of equally long ones, so a list sorted by name then id picks the same one every time).
/// `zone_name` reads a zone's name; callers keep their own zone types.
pub fn closest<Z>(zones: &[Z], name: &str, zone_name: impl Fn(&Z) -> &str) -> Option<usize> {
    zones
        .iter()
        .enumerate()
        .filter(|(_, z)| in_zone(name, zone_name(z)))
        .max_by_key(|(_, z)| trim(zone_name(z)).len())
        .map(|(i, _)| i)
}

/// Whether a zone is one the domain filter asks to manage, as external-dns selects zones: the filter
/// accepts the zone's name, or (with `match_parent`) names a domain under it.
pub fn selected(filter: &DomainFilter, zone: &str, match_parent: bool) -> bool {
    let zone = trim(zone);
    filter.matches(zone) || (match_parent && filter.match_parent(zone))
}

/// Where a provider would write a record of some name, as one read of its zones knows them
/// ([`crate::Provider::placement`]). The registry asks it of a record and of its ownership record before
/// writing them: two zones are two writes (the ownership record first), an ownership record no zone holds is
/// not written at all (the record is then not extdns's, as external-dns leaves it), and a name the provider
/// is known to refuse is never sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// The provider keeps no zones of its own (every name goes to one server), or there is no read to ask:
    /// nothing is known, so the write decides.
    Unknown,
    /// The zone of the read that holds the name (an index into the read's zones).
    Zone(usize),
    /// No zone of the read holds the name.
    Outside,
    /// A zone holds the name, but the provider refuses such a name whatever its data (a documented rule of
    /// the backend), for the reason given.
    Refused(&'static str),
}

impl Placement {
    /// The zone of the closest of `zones` (as [`closest`] picks it), or [`Placement::Outside`].
    pub fn closest<Z>(zones: &[Z], name: &str, zone_name: impl Fn(&Z) -> &str) -> Placement {
        closest(zones, name, zone_name).map_or(Placement::Outside, Placement::Zone)
    }
}

/// Why a unit cannot be written to one of a provider's zones: the provider refuses it before sending
/// anything.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Unplaced {
    /// A change of a record type the provider does not manage.
    #[error("{record_type} records are not supported on {provider} by extdns")]
    Unsupported {
        /// The record's type.
        record_type: RecordType,
        /// How messages name the provider.
        provider: &'static str,
    },
    /// No zone of the provider holds the name.
    #[error("no {provider} zone contains {name}")]
    NoZone {
        /// The record's name.
        name: String,
        /// How messages name the provider.
        provider: &'static str,
    },
    /// The record and its ownership record would go to different zones, so they could not land together.
    #[error("the record and its ownership record are in different zones")]
    SplitZones,
}

/// The zone every change of `unit` goes to (an index, as [`closest`] gives), when the provider manages
/// their types (`supported`) and one zone holds them all (`zone_for`); `provider` names the provider in
/// the refusal.
pub fn of_unit(
    unit: &Unit<'_>,
    provider: &'static str,
    supported: impl Fn(&RecordType) -> bool,
    zone_for: impl Fn(&str) -> Option<usize>,
) -> Result<usize, Unplaced> {
    let mut zone = None;
    for ep in unit.changes().map(|c| c.endpoint()) {
        if !supported(&ep.record_type) {
            let record_type = ep.record_type.clone();
            return Err(Unplaced::Unsupported { record_type, provider });
        }
        match (zone_for(&ep.dns_name), zone) {
            (None, _) => {
                let name = ep.dns_name.clone();
                return Err(Unplaced::NoZone { name, provider });
            }
            (Some(z), Some(prev)) if z != prev => return Err(Unplaced::SplitZones),
            (Some(z), _) => zone = Some(z),
        }
    }
    // A unit holds at least its record's change, so a zone was found.
    zone.ok_or(Unplaced::SplitZones)
}

fn trim(name: &str) -> &str {
    name.trim_end_matches('.')
}

#[cfg(test)]
mod tests {
    use super::*;
    use extdns_endpoint::{Change, Endpoint};

    #[test]
    fn a_unit_goes_to_the_one_zone_of_all_its_changes() {
        let zones = ["example.org", "sub.example.org"];
        let zone_for = |name: &str| closest(&zones, name, |z| z);
        let a = |name: &str| Change::Create(Endpoint::new(name, RecordType::A, ["192.0.2.1"]));
        let txt = |name: &str| Change::Create(Endpoint::new(name, RecordType::Txt, ["\"x\""]));
        let only_a = |t: &RecordType| *t == RecordType::A;
        let place = |unit: Unit<'_>| of_unit(&unit, "Test", only_a, zone_for);
        let (web, www) = (a("web.sub.example.org"), a("www.example.org"));
        assert_eq!(place(Unit::new(&web)), Ok(1));
        assert_eq!(place(Unit::with_ownership(&web, &www)), Err(Unplaced::SplitZones));
        let outside = a("web.example.com");
        let refused = place(Unit::new(&outside)).map_err(|e| e.to_string());
        assert_eq!(refused, Err("no Test zone contains web.example.com".to_string()));
        let ownership = txt("a-web.sub.example.org");
        let refused = place(Unit::with_ownership(&web, &ownership)).map_err(|e| e.to_string());
        assert_eq!(
            refused,
            Err("TXT records are not supported on Test by extdns".to_string())
        );
    }

    #[test]
    fn names_are_in_a_zone_only_on_a_label_boundary() {
        assert!(in_zone("example.org", "example.org"));
        assert!(in_zone("a.b.example.org.", "Example.ORG"));
        assert!(in_zone("WEB.example.org", "example.org."));
        assert!(!in_zone("notexample.org", "example.org"));
        assert!(!in_zone("example.org", "a.example.org"));
        assert!(!in_zone("org", "example.org"));
        assert!(in_zone("anything.example", ""));
        assert!(in_zone("anything.example", "."));
        // A multi-byte character where the suffix would start is no match, not a panic.
        assert!(!in_zone("é.org", "xample.org"));
        assert!(!in_zone("aé", "a"));
    }

    #[test]
    fn under_excludes_the_apex() {
        assert!(under("lb.us-east-1.elb.amazonaws.com", "us-east-1.elb.amazonaws.com"));
        assert!(!under("us-east-1.elb.amazonaws.com", "us-east-1.elb.amazonaws.com"));
        assert!(!under("xus-east-1.elb.amazonaws.com", "us-east-1.elb.amazonaws.com"));
    }

    #[test]
    fn the_closest_zone_is_the_longest_suffix() {
        let zones = ["example.org", "k8s.example.org.", "2.0.192.in-addr.arpa", "example.com"];
        let closest = |name| closest(&zones, name, |z| z).map(|i| zones[i]);
        assert_eq!(closest("web.k8s.example.org"), Some("k8s.example.org."));
        assert_eq!(closest("K8S.example.org."), Some("k8s.example.org."));
        assert_eq!(closest("web.example.org"), Some("example.org"));
        assert_eq!(closest("10.2.0.192.in-addr.arpa"), Some("2.0.192.in-addr.arpa"));
        assert_eq!(closest("notexample.org"), None);
        assert_eq!(closest("example.net"), None);
    }

    #[test]
    fn of_equally_long_zones_the_last_wins() {
        let zones = [("example.org", "Z1"), ("example.org", "Z2")];
        assert_eq!(closest(&zones, "a.example.org", |z| z.0), Some(1));
    }

    #[test]
    fn zones_are_selected_by_the_domain_filter() {
        let f = DomainFilter::new(&["apps.k8s.example.org"], &[] as &[&str]);
        assert!(selected(&f, "k8s.example.org.", true), "a zone above a filtered name");
        assert!(!selected(&f, "k8s.example.org", false), "only with match_parent");
        assert!(selected(&f, "apps.k8s.example.org", false));
        assert!(!selected(&f, "example.com", true));
        assert!(selected(&DomainFilter::default(), "example.com", false));
        let excluded = DomainFilter::new(&["example.org"], &["k8s.example.org"]);
        assert!(!selected(&excluded, "k8s.example.org", true));
    }
}
