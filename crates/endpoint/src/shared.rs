//! The mark of a shared name (docs/shared-names.md): a record several owners (`--txt-owner-id`, one per
//! cluster) publish together, each contributing its own targets. Sources set it from the
//! `external-dns.kubernetes.io/shared: "true"` annotation (either prefix) or a DNSEndpoint entry's
//! `providerSpecific` `extdns/shared=true`; the registry reads it. It travels as a provider-specific
//! property so that the plan compares it (a name turning shared or plain is a change) and a record read
//! back as shared compares equal to the desired one.

use crate::Endpoint;

/// The provider-specific property marking a shared name; only the value `true` counts.
pub const PROPERTY: &str = "extdns/shared";

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
}
