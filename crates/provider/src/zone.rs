//! Which zone a record goes to. Every provider asks the same two questions: is this name in this zone (on a
//! label boundary: `notexample.org` is not in `example.org`), and which of several zones is the closest one
//! that contains it (the longest suffix). DNS names compare without regard to ASCII case or a trailing dot,
//! so neither side needs normalising first.

use extdns_endpoint::DomainFilter;

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

fn trim(name: &str) -> &str {
    name.trim_end_matches('.')
}

#[cfg(test)]
mod tests {
    use super::*;

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
