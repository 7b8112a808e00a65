//! The mark of a shared name (docs/shared-names.md): a record several owners (`--txt-owner-id`, one per
//! cluster) publish together, each contributing its own targets. Sources set it from the
//! `external-dns.kubernetes.io/shared: "true"` annotation (either prefix) or a DNSEndpoint entry's
//! `providerSpecific` `extdns/shared=true`; the registry reads it. It travels as a provider-specific
//! property so that the plan compares it (a name turning shared or plain is a change) and a record read
//! back as shared compares equal to the desired one.

use crate::Endpoint;

/// The provider-specific property marking a shared name; only the value `true` counts.
pub const PROPERTY: &str = "extdns/shared";

/// The provider-specific property naming a shared name's health check (`tcp:<port>`,
/// `http:<port>/<path>`, `https:<port>/<path>`): read by the controller's prober, taken off before the plan.
pub const HEALTH_CHECK: &str = "extdns/shared-health-check";
/// The property giving the time between two probes (a Go duration, `10s` by default).
pub const HEALTH_INTERVAL: &str = "extdns/shared-health-interval";
/// The property giving how many failed probes in a row withdraw a target (3 by default).
pub const HEALTH_THRESHOLD: &str = "extdns/shared-health-threshold";

/// The annotation keys (without prefix) of shared names and the property each sets, in one place so the
/// annotated sources and the DNSEndpoint object-level mark agree: `shared` (only the value `true` counts),
/// `shared-health-check`, `shared-health-interval`, `shared-health-threshold`.
pub const ANNOTATIONS: [(&str, &str); 4] = [
    ("shared", PROPERTY),
    ("shared-health-check", HEALTH_CHECK),
    ("shared-health-interval", HEALTH_INTERVAL),
    ("shared-health-threshold", HEALTH_THRESHOLD),
];

/// The property an annotation key (without prefix) sets with `value`, if it is one of [`ANNOTATIONS`]; the
/// `shared` key only with the value `true`.
pub fn annotation_property(key: &str, value: &str) -> Option<&'static str> {
    let (_, property) = ANNOTATIONS.iter().find(|(k, _)| *k == key)?;
    (*property != PROPERTY || value == "true").then_some(*property)
}

/// Whether `e` is a shared name.
pub fn is_shared(e: &Endpoint) -> bool {
    e.provider_specific.get(PROPERTY) == Some("true")
}

/// Marks `e` shared.
pub fn mark(e: &mut Endpoint) {
    e.provider_specific.set(PROPERTY, "true");
}

/// Removes the mark (the record as a provider stores it), returning whether it was there.
pub fn unmark(e: &mut Endpoint) -> bool {
    e.provider_specific.remove(PROPERTY).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RecordType;

    #[test]
    fn only_true_marks_a_name_shared() {
        let mut e = Endpoint::new("web.example.org", RecordType::A, ["192.0.2.1"]);
        assert!(!is_shared(&e));
        e.provider_specific.set(PROPERTY, "false");
        assert!(!is_shared(&e));
        mark(&mut e);
        assert!(is_shared(&e));
        assert!(unmark(&mut e));
        assert!(!is_shared(&e));
        assert!(!unmark(&mut e));
    }

    #[test]
    fn annotations_map_to_their_properties() {
        assert_eq!(annotation_property("shared", "true"), Some(PROPERTY));
        assert_eq!(annotation_property("shared", "yes"), None);
        assert_eq!(
            annotation_property("shared-health-check", "tcp:443"),
            Some(HEALTH_CHECK)
        );
        assert_eq!(
            annotation_property("shared-health-interval", "5s"),
            Some(HEALTH_INTERVAL)
        );
        assert_eq!(
            annotation_property("shared-health-threshold", "2"),
            Some(HEALTH_THRESHOLD)
        );
        assert_eq!(annotation_property("hostname", "a.example.org"), None);
    }
}
