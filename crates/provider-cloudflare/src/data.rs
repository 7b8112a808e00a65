//! Targets of the types Cloudflare sets through a `data` object (TLSA, HTTPS, SVCB), to that object and back.
//!
//! Written from the endpoint crate's parsed forms ([`Tlsa`], [`Svcb`]), so what is sent is the data a
//! source asked for; read from the `content` Cloudflare renders (`3 1 1 ABCD...` with the digest in upper
//! case, `1 . alpn="h2"`), put through the canonical form every provider reads back in, so the next sync
//! compares equal text and plans nothing (as external-dns v0.23.0 lower-cases the TLSA digest it reads).

use extdns_endpoint::{InvalidRdata, RecordType, Svcb, Tlsa, canonical_target};

use crate::api::RecordData;

/// The `data` of a `record_type` target: `Ok(None)` for a type written as `content`, an error for a TLSA,
/// HTTPS or SVCB target that is not valid record data.
pub fn of(record_type: &RecordType, target: &str) -> Result<Option<RecordData>, InvalidRdata> {
    let invalid = |problem| InvalidRdata {
        record_type: record_type.clone(),
        target: target.to_string(),
        problem,
    };
    match record_type {
        RecordType::Tlsa => {
            let t: Tlsa = target.parse().map_err(invalid)?;
            let rendered = t.to_string();
            // The canonical text is `usage selector matching-type hex`: the hex is its last field.
            let certificate = rendered.rsplit(' ').next().unwrap_or_default().to_string();
            Ok(Some(RecordData::Tlsa {
                usage: t.usage,
                selector: t.selector,
                matching_type: t.matching_type,
                certificate,
            }))
        }
        RecordType::Https | RecordType::Svcb => {
            let s: Svcb = target.parse().map_err(invalid)?;
            let rendered = s.to_string();
            // The canonical text is `priority target params...`; neither of the first two holds a space.
            let value = rendered.splitn(3, ' ').nth(2).unwrap_or_default().to_string();
            Ok(Some(RecordData::Svcb {
                priority: s.priority,
                target: s.target,
                value,
            }))
        }
        _ => Ok(None),
    }
}

/// The target a record of `record_type` stands for, from the `content` Cloudflare renders: the canonical
/// text for TLSA, HTTPS and SVCB (Cloudflare's upper-case digest lower-cased, its quoting undone), the
/// content itself for the other types and for data extdns cannot parse (it then differs from any desired
/// target: a record extdns owns is rewritten, someone else's left alone).
pub fn read(record_type: &RecordType, content: &str) -> String {
    match canonical_target(record_type, content) {
        Ok(Some(canonical)) => canonical,
        Ok(None) => content.to_string(),
        Err(e) => {
            tracing::warn!(error = %e, "Cloudflare record content kept as read: extdns cannot parse it");
            content.to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tlsa_becomes_its_four_fields_with_lower_case_hex() {
        let digest = "AB".repeat(32);
        let data = of(&RecordType::Tlsa, &format!("3 1 1 {digest}")).map_err(|e| e.to_string());
        assert_eq!(
            data,
            Ok(Some(RecordData::Tlsa {
                usage: 3,
                selector: 1,
                matching_type: 1,
                certificate: "ab".repeat(32),
            }))
        );
        let json = serde_json::to_value(of(&RecordType::Tlsa, "2 0 0 0a0b").ok().flatten()).unwrap_or_default();
        assert_eq!(
            json,
            serde_json::json!({"usage": 2, "selector": 0, "matching_type": 0, "certificate": "0a0b"})
        );
    }

    #[test]
    fn https_and_svcb_become_priority_target_and_value() {
        let data = of(&RecordType::Https, r#"1 . port=8443 alpn="h2,h3""#).map_err(|e| e.to_string());
        assert_eq!(
            data,
            Ok(Some(RecordData::Svcb {
                priority: 1,
                target: ".".into(),
                value: "alpn=h2,h3 port=8443".into(),
            }))
        );
        let alias = of(&RecordType::Svcb, "0 Svc.Example.NET").map_err(|e| e.to_string());
        assert_eq!(
            alias,
            Ok(Some(RecordData::Svcb {
                priority: 0,
                target: "svc.example.net.".into(),
                value: String::new(),
            }))
        );
    }

    #[test]
    fn content_is_read_back_canonical() {
        let digest = "AB".repeat(32);
        assert_eq!(
            read(&RecordType::Tlsa, &format!("3 1 1 {digest}")),
            format!("3 1 1 {}", "ab".repeat(32))
        );
        assert_eq!(
            read(&RecordType::Https, r#"1 . port="8443" alpn="h2""#),
            "1 . alpn=h2 port=8443"
        );
        assert_eq!(
            read(&RecordType::Tlsa, "255 1 1 ab"),
            "255 1 1 ab",
            "kept when unparsable"
        );
    }

    #[test]
    fn other_types_have_no_data_and_bad_targets_are_named() {
        assert_eq!(of(&RecordType::A, "192.0.2.1"), Ok(None));
        let bad = of(&RecordType::Tlsa, "9 1 1 ab")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(bad.contains("TLSA") && bad.contains("usage"), "{bad}");
    }
}
