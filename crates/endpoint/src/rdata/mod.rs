//! Typed record data for the types whose targets have a structure every provider must agree on: TLSA
//! (RFC 6698) and SVCB/HTTPS (RFC 9460).
//!
//! A target of these types enters as presentation-format text (a DNSEndpoint's `targets`, a PowerDNS
//! `content`, a Cloudflare `data`) and is parsed here once, into [`Tlsa`] or [`Svcb`], whose `Display` is the
//! one canonical text: lower-case hex, SvcParams in key order, values quoted only where they must be. A
//! source stores that text and a provider renders what it reads back the same way, so the plan compares
//! equal text for equal records and never rewrites a record because a server printed it differently.
//! The types live here, beside [`RecordType`], because every provider reads targets from this crate,
//! while only the wire providers depend on `dns-wire`.

mod presentation;
mod svc_param;
mod svcb;
mod tlsa;

pub use svc_param::{SvcParamKey, SvcParamValue, SvcParams};
pub use svcb::Svcb;
pub use tlsa::Tlsa;

use crate::{Endpoint, RecordType, Target};

/// A target of a typed record type that is not valid record data, with the type and text it came in as.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {record_type} target {target:?}: {problem}")]
pub struct InvalidRdata {
    /// The record type the target was given for.
    pub record_type: RecordType,
    /// The target as given.
    pub target: String,
    /// What is wrong, naming the field.
    #[source]
    pub problem: RdataProblem,
}

/// What is wrong with a TLSA or SVCB/HTTPS target; each variant names the field at fault.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RdataProblem {
    /// Too few whitespace-separated fields.
    #[error("expected {want}, got {got} field(s)")]
    FieldCount {
        /// The fields the type needs, in order.
        want: &'static str,
        /// How many were given.
        got: usize,
    },
    /// A numeric field that is not a decimal number in its range.
    #[error("{field} {value:?} is not a number from 0 to {max}")]
    Number {
        /// The field's name (`usage`, `selector`, `matching type`, `priority`).
        field: &'static str,
        /// The text given.
        value: String,
        /// The largest value allowed.
        max: u32,
    },
    /// TLSA certificate association data missing.
    #[error("certificate association data is empty")]
    EmptyCertificate,
    /// TLSA certificate association data that is not hexadecimal.
    #[error("certificate association data {value:?} is not hexadecimal")]
    CertificateNotHex {
        /// The data given, with whitespace and colons removed.
        value: String,
    },
    /// A TLSA digest of the wrong length for its matching type.
    #[error(
        "matching type {matching_type} ({digest}) needs {want} hex digits of certificate association data, got {got}"
    )]
    DigestLength {
        /// The matching type (1 or 2).
        matching_type: u8,
        /// The digest it names.
        digest: &'static str,
        /// Hex digits needed.
        want: usize,
        /// Hex digits given.
        got: usize,
    },
    /// An SVCB target name that is not a domain name.
    #[error("target name {value:?} is not a domain name (\".\" or letters, digits, '-' and '_' in labels)")]
    TargetName {
        /// The text given.
        value: String,
    },
    /// SvcParams on an alias-mode record.
    #[error("alias mode (priority 0) takes no SvcParams, got {key}")]
    ParamsInAliasMode {
        /// The first key given.
        key: String,
    },
    /// A quote or escape that is not closed or not valid.
    #[error("SvcParam {param:?} has {why}")]
    Syntax {
        /// The parameter as written.
        param: String,
        /// What is malformed.
        why: &'static str,
    },
    /// A key that is neither a known name nor `keyNNNNN`.
    #[error(
        "SvcParam key {key:?} is not one of mandatory, alpn, no-default-alpn, port, ipv4hint, ech, ipv6hint or keyNNNNN (0 to 65534)"
    )]
    UnknownKey {
        /// The key as written.
        key: String,
    },
    /// `keyNNNNN` spelling of a key that has a name.
    #[error("SvcParam {key} must be written by its name, {name}")]
    NumericNamedKey {
        /// The key as written.
        key: String,
        /// Its name.
        name: &'static str,
    },
    /// A key given twice.
    #[error("SvcParam {key} is given twice")]
    DuplicateKey {
        /// The key.
        key: SvcParamKey,
    },
    /// A key that needs a value written without one.
    #[error("SvcParam {key} needs a value")]
    MissingValue {
        /// The key.
        key: SvcParamKey,
    },
    /// A key that takes no value written with one.
    #[error("SvcParam {key} takes no value")]
    UnexpectedValue {
        /// The key.
        key: SvcParamKey,
    },
    /// A value that does not parse as its key's type.
    #[error("SvcParam {key} value {value:?} is not {want}")]
    BadValue {
        /// The key.
        key: SvcParamKey,
        /// The value after unquoting.
        value: String,
        /// What the key's value must be.
        want: &'static str,
    },
    /// `mandatory` naming itself.
    #[error("SvcParam mandatory lists mandatory itself")]
    MandatoryListsItself,
    /// `mandatory` naming a key the record does not have.
    #[error("SvcParam mandatory lists {key}, which the record does not have")]
    MandatoryKeyMissing {
        /// The key listed.
        key: SvcParamKey,
    },
    /// `no-default-alpn` without `alpn` (RFC 9460 §7.1.1).
    #[error("SvcParam no-default-alpn needs alpn too")]
    NoDefaultAlpnWithoutAlpn,
}

/// The canonical text of `target` for `record_type`: `Some` for the typed types (TLSA, SVCB, HTTPS), `None`
/// for the others, whose text is kept as it is. A source stores this text; a provider renders what it
/// reads back through it, so both sides compare equal.
pub fn canonical_target(record_type: &RecordType, target: &str) -> Result<Option<String>, InvalidRdata> {
    let wrap = |problem| InvalidRdata {
        record_type: record_type.clone(),
        target: target.to_string(),
        problem,
    };
    match record_type {
        RecordType::Tlsa => target.parse::<Tlsa>().map(|t| Some(t.to_string())).map_err(wrap),
        RecordType::Svcb | RecordType::Https => target.parse::<Svcb>().map(|s| Some(s.to_string())).map_err(wrap),
        _ => Ok(None),
    }
}

/// Put the targets of a TLSA, SVCB or HTTPS endpoint read from a provider in canonical text, each that
/// parses (one that does not is kept as read, and then differs from any desired target). For providers
/// that hand targets through as text (the webhook), so a server's own spelling does not look like a change.
pub fn canonicalize_targets(e: &mut Endpoint) {
    if !e.record_type.has_typed_rdata() {
        return;
    }
    for t in e.targets.iter_mut() {
        if let Ok(Some(canonical)) = canonical_target(&e.record_type, t) {
            *t = Target::from(canonical);
        }
    }
}

/// A decimal number made of ASCII digits only (no sign, no space), as zone files and Go's `ParseUint` read
/// them; `None` when it is not one or exceeds `max`.
fn decimal(s: &str, max: u32) -> Option<u32> {
    if s.is_empty() || s.len() > 10 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<u64>()
        .ok()
        .filter(|v| *v <= u64::from(max))
        .and_then(|v| u32::try_from(v).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_typed_types_have_a_canonical_form() {
        assert_eq!(canonical_target(&RecordType::Txt, "ANY text"), Ok(None));
        assert_eq!(
            canonical_target(&RecordType::Https, "1 . port=443 alpn=h2")
                .ok()
                .flatten()
                .as_deref(),
            Some("1 . alpn=h2 port=443")
        );
    }

    #[test]
    fn the_error_names_the_type_the_target_and_the_field() {
        let err = canonical_target(&RecordType::Tlsa, "4 1 1 ab").err();
        let text = err.as_ref().map(ToString::to_string).unwrap_or_default();
        assert_eq!(
            text,
            r#"invalid TLSA target "4 1 1 ab": usage "4" is not a number from 0 to 3"#
        );
        assert!(err.as_ref().and_then(std::error::Error::source).is_some());
    }

    #[test]
    fn read_targets_are_put_in_canonical_text_when_they_parse() {
        let mut e = Endpoint::new("x.example.org", RecordType::Https, ["1 . port=443 alpn=h2", "junk"]);
        canonicalize_targets(&mut e);
        assert_eq!(
            e.targets,
            crate::Targets(vec!["1 . alpn=h2 port=443".into(), "junk".into()])
        );
        let mut txt = Endpoint::new("x.example.org", RecordType::Txt, ["1 . port=443 alpn=h2"]);
        canonicalize_targets(&mut txt);
        assert_eq!(txt.targets[0], "1 . port=443 alpn=h2");
    }

    #[test]
    fn decimals_are_digits_only() {
        assert_eq!(decimal("42", 255), Some(42));
        for bad in ["", "+1", "-1", " 1", "256", "99999999999"] {
            assert_eq!(decimal(bad, 255), None, "{bad:?}");
        }
    }
}
