//! The ownership payload kept on a record itself, version 1 (docs/ownership-metadata.md):
//! `extdns:v1;o=<owner>;r=<resource>` followed by any other label as `;<key>=<value>`, sorted by key.
//!
//! It states what an ownership TXT record states (owner id, the object the record was made for, every other
//! label) in as few characters as it can: Cloudflare's Free plan leaves a record's comment 100 characters,
//! which the user's own comment shares. Values are percent-encoded where they hold anything but letters,
//! digits and `-._~/:@+!*(),`, so the payload holds no space, `;` or `=` of its own and is one word of a
//! comment; the encryption nonce of the TXT format is never written (see [`encode`]).

use extdns_endpoint::{Labels, label};
use extdns_provider::metadata::PAYLOAD_MARK;

/// The payload's first field: the mark every version starts with, and this version.
const HEADER: &str = "extdns:v1";
/// Short keys for the two labels every payload holds.
const SHORT: [(&str, &str); 2] = [("o", label::OWNER), ("r", label::RESOURCE)];

/// Why a payload cannot be read: it is not of a version this extdns reads, or is malformed. Such a record
/// is not extdns's (it is never written over).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PayloadError {
    /// Another version of the payload (a later extdns's).
    #[error("ownership payload of an unknown version ({0:?})")]
    Version(String),
    /// A field without `=`, a bad escape, or no owner.
    #[error("malformed ownership payload: {0}")]
    Malformed(&'static str),
}

/// The payload stating `labels`. The encryption nonce is left out: the payload is not encrypted, as it is
/// seen only by those who may read the zone through the provider's API (unlike a TXT record, which every
/// resolver serves), and sealing it would not fit Cloudflare's 100 characters.
pub fn encode(labels: &Labels) -> String {
    let mut out = String::from(HEADER);
    for (short, long) in SHORT {
        if let Some(v) = labels.get(long) {
            field(&mut out, short, v);
        }
    }
    for (k, v) in labels {
        if k == label::OWNER || k == label::RESOURCE || k == label::TXT_ENCRYPTION_NONCE {
            continue;
        }
        field(&mut out, k, v);
    }
    out
}

fn field(out: &mut String, key: &str, value: &str) {
    out.push(';');
    escape(out, key);
    out.push('=');
    escape(out, value);
}

/// Whether a byte is written as itself.
fn plain(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~/:@+!*(),".contains(&b)
}

fn escape(out: &mut String, s: &str) {
    for &b in s.as_bytes() {
        if plain(b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
}

fn unescape(s: &str) -> Result<String, PayloadError> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3).ok_or(PayloadError::Malformed("a cut escape"))?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| PayloadError::Malformed("a bad escape"))?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| PayloadError::Malformed("an escape that is not UTF-8"))
}

/// The labels a payload states; an owner is required.
pub fn decode(payload: &str) -> Result<Labels, PayloadError> {
    let mut fields = payload.split(';');
    let header = fields.next().unwrap_or_default();
    if header != HEADER {
        return Err(if header.starts_with(PAYLOAD_MARK) {
            PayloadError::Version(header.to_string())
        } else {
            PayloadError::Malformed("no extdns:v1 header")
        });
    }
    let mut labels = Labels::new();
    for f in fields {
        let (k, v) = f
            .split_once('=')
            .ok_or(PayloadError::Malformed("a field without '='"))?;
        let k = unescape(k)?;
        let key = SHORT
            .iter()
            .find(|(short, _)| *short == k)
            .map_or(k, |(_, long)| (*long).to_string());
        labels.insert(key, unescape(v)?);
    }
    if labels.get(label::OWNER).is_none_or(String::is_empty) {
        return Err(PayloadError::Malformed("no owner"));
    }
    Ok(labels)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn the_documented_example_is_written_byte_for_byte() {
        let l = labels(&[("owner", "my-cluster"), ("resource", "service/default/nginx")]);
        assert_eq!(encode(&l), "extdns:v1;o=my-cluster;r=service/default/nginx");
        assert_eq!(decode("extdns:v1;o=my-cluster;r=service/default/nginx"), Ok(l));
    }

    #[test]
    fn other_labels_follow_sorted_and_the_nonce_is_left_out() {
        let l = labels(&[
            ("zeta", "1"),
            ("owner", "o"),
            ("txt-encryption-nonce", "abc"),
            ("alpha", "x y"),
        ]);
        let p = encode(&l);
        assert_eq!(p, "extdns:v1;o=o;alpha=x%20y;zeta=1");
        let mut want = l;
        want.remove("txt-encryption-nonce");
        assert_eq!(decode(&p), Ok(want));
    }

    #[test]
    fn separators_spaces_and_non_ascii_are_escaped_and_read_back() {
        let l = labels(&[("owner", "a;b=c%d e"), ("resource", "crd/ns/ünï")]);
        let p = encode(&l);
        assert!(!p.contains(' ') && p.matches(';').count() == 2 && p.is_ascii(), "{p}");
        assert!(extdns_provider::metadata::is_payload(&p));
        assert_eq!(decode(&p), Ok(l));
    }

    #[test]
    fn unknown_versions_and_malformed_payloads_are_not_read() {
        assert!(matches!(decode("extdns:v2;o=a"), Err(PayloadError::Version(_))));
        assert!(matches!(decode("hello"), Err(PayloadError::Malformed(_))));
        assert!(matches!(decode("extdns:v1;r=x"), Err(PayloadError::Malformed(_))));
        assert!(matches!(decode("extdns:v1;o"), Err(PayloadError::Malformed(_))));
        assert!(matches!(decode("extdns:v1;o=%4"), Err(PayloadError::Malformed(_))));
        assert!(matches!(decode("extdns:v1;o=%FF"), Err(PayloadError::Malformed(_))));
    }
}
