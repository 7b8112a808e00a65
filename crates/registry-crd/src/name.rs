//! The name of the DNSRecord object that holds one record's ownership, as external-dns v0.23 derives it:
//! both controllers find each other's objects by this name, so it must match byte for byte.

use extdns_endpoint::Endpoint;
use sha2::{Digest, Sha256};

/// The longest object name the API server takes (an RFC 1123 subdomain).
const MAX_NAME: usize = 253;

/// The object name of `record`'s DNSRecord: the record's name, lower-cased, one trailing dot dropped, each
/// run of characters other than `a-z0-9` made one `-` and dashes trimmed from both ends (`record` when
/// nothing is left), so `kubectl get dnsrecords` reads like the zone; then `-` and 8 hex digits of the
/// SHA-256 of `name/TYPE/set-identifier`, so records the readable part cannot tell apart (`a.b` and
/// `a-b`, another type or set identifier, a name cut to fit) still get objects of their own.
pub fn object_name(record: &Endpoint) -> String {
    let name = record.dns_name.to_lowercase();
    let name = name.strip_suffix('.').unwrap_or(&name);
    let record_type = record.record_type.as_str().to_uppercase();
    let identity = format!("{name}/{record_type}/{}", record.set_identifier);
    let digest = Sha256::digest(identity.as_bytes());
    let suffix: String = std::iter::once("-".to_string())
        .chain(digest.iter().take(4).map(|b| format!("{b:02x}")))
        .collect();

    let mut readable = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            readable.push(c);
        } else if !readable.ends_with('-') {
            readable.push('-');
        }
    }
    let mut readable = readable.trim_matches('-');
    // Only ASCII is left, so any byte index is a character boundary.
    let room = MAX_NAME - suffix.len();
    if readable.len() > room {
        readable = readable[..room].trim_matches('-');
    }
    if readable.is_empty() {
        readable = "record";
    }
    format!("{readable}{suffix}")
}

/// Whether `value` can be a label value (the owner label, `externaldns.k8s.io/owner`): at most 63
/// characters of `A-Za-z0-9-_.`, beginning and ending alphanumeric.
pub fn is_label_value(value: &str) -> bool {
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    value.len() <= 63
        && alnum(value.chars().next())
        && alnum(value.chars().last())
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

#[cfg(test)]
mod tests {
    use extdns_endpoint::RecordType;

    use super::*;

    fn ep(name: &str, record_type: &str, set: &str) -> Endpoint {
        Endpoint::new(name, record_type.parse().unwrap_or(RecordType::A), ["192.0.2.1"]).with_set_identifier(set)
    }

    #[test]
    fn names_match_external_dns() {
        // sha256("../A/") begins 6fbee3c6: nothing readable is left of "..." after the trailing dot goes.
        let mut dots = ep("x", "A", "");
        dots.dns_name = "...".into();
        assert_eq!(object_name(&dots), "record-6fbee3c6");
        // sha256("web.example.org/A/") and sha256("web.example.org/A/blue"), computed with sha256sum.
        assert_eq!(object_name(&ep("web.example.org", "A", "")), "web-example-org-43fd9d43");
        assert_eq!(
            object_name(&ep("Web.Example.org.", "A", "")),
            "web-example-org-43fd9d43"
        );
        assert_eq!(
            object_name(&ep("web.example.org", "A", "blue")),
            "web-example-org-1c188b56"
        );
        assert_eq!(
            object_name(&ep("*.example.org", "A", "")).split_at(12).0,
            "example-org-"
        );
        assert_eq!(
            object_name(&ep("_dmarc.example.org", "TXT", "")).split_at(12).0,
            "dmarc-exampl"
        );
    }

    #[test]
    fn names_that_read_alike_differ() {
        let names = [
            object_name(&ep("sub.example.org", "A", "")),
            object_name(&ep("sub-example.org", "A", "")),
            object_name(&ep("sub.example.org", "AAAA", "")),
            object_name(&ep("sub.example.org", "A", "eu")),
        ];
        for (i, a) in names.iter().enumerate() {
            for b in &names[i + 1..] {
                assert_ne!(a, b);
            }
        }
    }

    #[test]
    fn long_names_are_cut_to_a_valid_object_name() {
        let long = format!("{}example.org", "a.".repeat(200));
        let name = object_name(&ep(&long, "A", ""));
        // Cut at 244 characters, where a dash falls and is trimmed: one short of the limit.
        assert_eq!(name.len(), MAX_NAME - 1);
        assert!(!name.contains("--"), "{name}");
        assert!(
            name.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        );
        assert!(name.starts_with('a') && !name.ends_with('-'));
    }

    #[test]
    fn owner_ids_must_be_label_values() {
        assert!(is_label_value("default"));
        assert!(is_label_value("my-cluster.eu_1"));
        assert!(!is_label_value(""));
        assert!(!is_label_value("-x"));
        assert!(!is_label_value("a b"));
        assert!(!is_label_value(&"a".repeat(64)));
    }
}
