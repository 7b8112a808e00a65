//! The target a provider reads back for a record whose data has a typed form (TLSA, SVCB, HTTPS).
//!
//! A cloud answers such data in its own spelling (Cloudflare upper-cases a TLSA digest, a server may quote
//! SvcParams or order them its own way), while a source asks for the endpoint crate's canonical text
//! ([`extdns_endpoint::canonical_target`]). Every provider renders what it reads through that one form, so
//! the plan compares equal text for equal records and the next sync plans nothing. Data extdns cannot parse
//! (valid DNS that external-dns's stricter rules refuse, such as a TLSA usage of 255) is kept as read, with a
//! warning: it compares unequal to any desired target, so a record extdns owns is rewritten, and someone
//! else's is left alone as always.

use std::borrow::Cow;

use extdns_endpoint::{RecordType, canonical_target};

/// `data` of a `record_type` record as read, in the form sources give it: canonical for the typed types,
/// unchanged for the others and for typed data that does not parse.
pub fn target<'a>(record_type: &RecordType, data: &'a str) -> Cow<'a, str> {
    match canonical_target(record_type, data) {
        Ok(Some(canonical)) => Cow::Owned(canonical),
        Ok(None) => Cow::Borrowed(data),
        Err(e) => {
            tracing::warn!(error = %e, "record data read back as it is: extdns cannot parse it");
            Cow::Borrowed(data)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_data_is_read_back_in_canonical_form_and_the_rest_as_it_is() {
        let sha256 = "AB".repeat(32);
        assert_eq!(
            target(&RecordType::Tlsa, &format!("3 1 1 {sha256}")),
            format!("3 1 1 {}", "ab".repeat(32))
        );
        assert_eq!(
            target(&RecordType::Https, r#"1 . port="8443" alpn="h2""#),
            "1 . alpn=h2 port=8443"
        );
        assert_eq!(target(&RecordType::Svcb, "0 Svc.Example.NET"), "0 svc.example.net.");
        assert_eq!(target(&RecordType::Txt, "\"ANY\""), "\"ANY\"");
        assert_eq!(
            target(&RecordType::Tlsa, "255 1 1 ab"),
            "255 1 1 ab",
            "kept when unparsable"
        );
    }
}
