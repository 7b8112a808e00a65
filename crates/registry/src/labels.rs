//! The ownership TXT value: `"heritage=external-dns,external-dns/owner=<id>,external-dns/resource=<ref>"`,
//! byte for byte as external-dns writes it, so a zone can switch controllers without losing ownership.

use extdns_endpoint::{Labels, label};

use crate::crypto::{self, AesKey, CryptoError};

const HERITAGE: &str = "external-dns";

/// The value carries no `heritage=external-dns`: it is an ordinary TXT record, not one of ours.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("TXT value has no external-dns heritage")]
pub struct InvalidHeritage;

/// The plain serialisation: `heritage=external-dns` first, then every label sorted by key as
/// `external-dns/<key>=<value>`, except the encryption nonce; in double quotes when `with_quotes`.
pub fn serialize_plain(labels: &Labels, with_quotes: bool) -> String {
    let mut out = String::with_capacity(64);
    if with_quotes {
        out.push('"');
    }
    out.push_str("heritage=");
    out.push_str(HERITAGE);
    // Labels is a BTreeMap, so iteration is already sorted by key.
    for (k, v) in labels {
        if k == label::TXT_ENCRYPTION_NONCE {
            continue;
        }
        out.push(',');
        out.push_str(HERITAGE);
        out.push('/');
        out.push_str(k);
        out.push('=');
        out.push_str(v);
    }
    if with_quotes {
        out.push('"');
    }
    out
}

/// The value to write. With a key (encryption enabled), the plain text is encrypted under the nonce in the
/// `txt-encryption-nonce` label, or a fresh one that is then stored in the labels, as external-dns does.
pub fn serialize(labels: &mut Labels, with_quotes: bool, encrypt_with: Option<&AesKey>) -> Result<String, CryptoError> {
    let Some(key) = encrypt_with else {
        return Ok(serialize_plain(labels, with_quotes));
    };
    let nonce = match labels.get(label::TXT_ENCRYPTION_NONCE) {
        Some(n) => n.clone(),
        None => {
            let n = crypto::generate_nonce()?;
            labels.insert(label::TXT_ENCRYPTION_NONCE.to_string(), n.clone());
            n
        }
    };
    let sealed = match crypto::encrypt(&serialize_plain(labels, false), key, &nonce) {
        Ok(s) => s,
        Err(CryptoError::BadNonce(bad)) => {
            // A nonce label that is not 12 bytes of base64 cannot be reused; a fresh one is as good.
            tracing::warn!(nonce = bad, "unusable encryption nonce label; using a fresh nonce");
            let n = crypto::generate_nonce()?;
            labels.insert(label::TXT_ENCRYPTION_NONCE.to_string(), n.clone());
            crypto::encrypt(&serialize_plain(labels, false), key, &n)?
        }
        Err(e) => return Err(e),
    };
    Ok(if with_quotes { format!("\"{sealed}\"") } else { sealed })
}

/// Parse a plain value: surrounding quotes dropped, tokens split on `,` and at their first `=` (tokens
/// without `=` ignored); `heritage` must be present and be `external-dns`; `external-dns/<key>` tokens become
/// labels; other keys are ignored.
pub fn parse_plain(text: &str) -> Result<Labels, InvalidHeritage> {
    let text = text.trim_matches('"');
    let mut labels = Labels::new();
    let mut heritage = false;
    for token in text.split(',') {
        let Some((key, value)) = token.split_once('=') else {
            continue;
        };
        if key == "heritage" {
            if value != HERITAGE {
                return Err(InvalidHeritage);
            }
            heritage = true;
            continue;
        }
        if key.starts_with(HERITAGE) {
            let key = key.strip_prefix("external-dns/").unwrap_or(key);
            labels.insert(key.to_string(), value.to_string());
        }
    }
    if heritage { Ok(labels) } else { Err(InvalidHeritage) }
}

/// Parse a value as read from DNS. With a key, an encrypted value is decrypted first (its nonce is kept in
/// the `txt-encryption-nonce` label); a value that does not decrypt is parsed as plain text, because a zone
/// can hold records written before encryption was turned on.
pub fn parse(text: &str, key: Option<&AesKey>) -> Result<Labels, InvalidHeritage> {
    if let Some(key) = key
        && let Ok((plain, nonce)) = crypto::decrypt(text.trim_matches('"'), key)
    {
        let mut labels = parse_plain(&plain)?;
        labels.insert(label::TXT_ENCRYPTION_NONCE.to_string(), nonce);
        return Ok(labels);
    }
    parse_plain(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    const DOCUMENTED: &str =
        "\"heritage=external-dns,external-dns/owner=default,external-dns/resource=service/default/nginx\"";

    #[test]
    fn serialisation_matches_the_documented_external_dns_value() {
        let l = labels(&[("resource", "service/default/nginx"), ("owner", "default")]);
        assert_eq!(serialize_plain(&l, true), DOCUMENTED);
        assert_eq!(serialize_plain(&l, false), DOCUMENTED.trim_matches('"'));
    }

    #[test]
    fn serialisation_sorts_every_label_and_skips_the_nonce() {
        let l = labels(&[
            ("zeta", "1"),
            ("owner", "o"),
            ("txt-encryption-nonce", "xyz"),
            ("alpha", "2"),
        ]);
        assert_eq!(
            serialize_plain(&l, true),
            "\"heritage=external-dns,external-dns/alpha=2,external-dns/owner=o,external-dns/zeta=1\""
        );
        assert_eq!(serialize_plain(&Labels::new(), true), "\"heritage=external-dns\"");
    }

    #[test]
    fn the_documented_value_parses_to_owner_and_resource() {
        assert_eq!(
            parse_plain(DOCUMENTED),
            Ok(labels(&[("owner", "default"), ("resource", "service/default/nginx")]))
        );
    }

    #[test]
    fn values_round_trip() {
        let l = labels(&[("owner", "team-a"), ("resource", "httproute/web/shop"), ("extra", "x")]);
        assert_eq!(parse_plain(&serialize_plain(&l, true)), Ok(l.clone()));
        assert_eq!(parse_plain(&serialize_plain(&l, false)), Ok(l));
    }

    #[test]
    fn a_value_without_heritage_is_not_ours() {
        assert_eq!(parse_plain("\"v=spf1 include:example.com ~all\""), Err(InvalidHeritage));
        assert_eq!(parse_plain("external-dns/owner=x"), Err(InvalidHeritage));
        assert_eq!(parse_plain(""), Err(InvalidHeritage));
    }

    #[test]
    fn a_foreign_heritage_is_not_ours() {
        assert_eq!(
            parse_plain("\"heritage=someone-else,external-dns/owner=x\""),
            Err(InvalidHeritage)
        );
    }

    #[test]
    fn tokens_without_equals_and_foreign_keys_are_ignored() {
        assert_eq!(
            parse_plain("\"heritage=external-dns,garbage,other/key=1,external-dns/owner=me\""),
            Ok(labels(&[("owner", "me")]))
        );
    }

    #[test]
    fn values_split_at_the_first_equals_sign() {
        assert_eq!(
            parse_plain("heritage=external-dns,external-dns/resource=crd/ns/a=b"),
            Ok(labels(&[("resource", "crd/ns/a=b")]))
        );
    }

    #[test]
    fn encrypted_values_round_trip_and_keep_their_nonce() -> Result<(), CryptoError> {
        let key = AesKey::from_bytes([3; 32]);
        let mut l = labels(&[("owner", "default"), ("resource", "service/default/nginx")]);
        let value = serialize(&mut l, true, Some(&key))?;
        assert!(value.starts_with('"') && value.ends_with('"') && !value.contains("heritage"));
        let nonce = l.get(label::TXT_ENCRYPTION_NONCE).cloned();
        assert!(nonce.is_some());
        let mut read = parse(&value, Some(&key)).map_err(|_| CryptoError::Open)?;
        assert_eq!(read, l);
        // Re-serialising what was read gives the same value: no spurious TXT updates.
        assert_eq!(serialize(&mut read, true, Some(&key))?, value);
        Ok(())
    }

    #[test]
    fn plain_values_are_read_when_a_key_is_configured() {
        let key = AesKey::from_bytes([3; 32]);
        assert_eq!(parse(DOCUMENTED, Some(&key)).map(|l| l.len()), Ok(2));
    }

    #[test]
    fn encrypted_values_are_not_ours_without_the_key() -> Result<(), CryptoError> {
        let mut l = labels(&[("owner", "default")]);
        let value = serialize(&mut l, true, Some(&AesKey::from_bytes([3; 32])))?;
        assert_eq!(parse(&value, None), Err(InvalidHeritage));
        assert_eq!(parse(&value, Some(&AesKey::from_bytes([4; 32]))), Err(InvalidHeritage));
        Ok(())
    }

    #[test]
    fn an_unusable_nonce_label_is_replaced() -> Result<(), CryptoError> {
        let key = AesKey::from_bytes([3; 32]);
        let mut l = labels(&[("owner", "default"), ("txt-encryption-nonce", "bad")]);
        let value = serialize(&mut l, true, Some(&key))?;
        assert_ne!(l.get(label::TXT_ENCRYPTION_NONCE).map(String::as_str), Some("bad"));
        assert_eq!(parse(&value, Some(&key)).ok(), Some(l));
        Ok(())
    }
}
