//! SvcParams (RFC 9460 §7 and §14.3.2): keys, their typed values, their presentation rules.

use std::collections::BTreeMap;
use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;

use super::RdataProblem;
use super::presentation::{char_string, write_quoted, write_value};

/// An SvcParam key: its number on the wire; named keys print by name, the others as `keyNNNNN`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SvcParamKey(pub u16);

/// The keys RFC 9460 names, by number.
const NAMES: [&str; 7] = [
    "mandatory",
    "alpn",
    "no-default-alpn",
    "port",
    "ipv4hint",
    "ech",
    "ipv6hint",
];

impl SvcParamKey {
    /// `mandatory` (0): keys a client must understand.
    pub const MANDATORY: SvcParamKey = SvcParamKey(0);
    /// `alpn` (1): the protocols offered.
    pub const ALPN: SvcParamKey = SvcParamKey(1);
    /// `no-default-alpn` (2): the scheme's default protocol is not offered.
    pub const NO_DEFAULT_ALPN: SvcParamKey = SvcParamKey(2);
    /// `port` (3).
    pub const PORT: SvcParamKey = SvcParamKey(3);
    /// `ipv4hint` (4).
    pub const IPV4HINT: SvcParamKey = SvcParamKey(4);
    /// `ech` (5): an ECHConfigList.
    pub const ECH: SvcParamKey = SvcParamKey(5);
    /// `ipv6hint` (6).
    pub const IPV6HINT: SvcParamKey = SvcParamKey(6);

    /// The key's name, for the seven RFC 9460 defines.
    pub fn name(self) -> Option<&'static str> {
        NAMES.get(usize::from(self.0)).copied()
    }

    /// A key as written: a name, or `keyNNNNN` for one without a name (65535 is reserved).
    pub fn parse(text: &str) -> Result<SvcParamKey, RdataProblem> {
        if let Some(n) = NAMES.iter().position(|n| *n == text) {
            return u16::try_from(n)
                .map(SvcParamKey)
                .map_err(|_| RdataProblem::UnknownKey { key: text.to_string() });
        }
        let number = text
            .strip_prefix("key")
            .filter(|d| !(d.is_empty() || d.len() > 1 && d.starts_with('0')))
            .and_then(|d| super::decimal(d, 65534))
            .and_then(|n| u16::try_from(n).ok())
            .ok_or_else(|| RdataProblem::UnknownKey { key: text.to_string() })?;
        let key = SvcParamKey(number);
        match key.name() {
            Some(name) => Err(RdataProblem::NumericNamedKey {
                key: text.to_string(),
                name,
            }),
            None => Ok(key),
        }
    }
}

impl fmt::Display for SvcParamKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "key{}", self.0),
        }
    }
}

/// One SvcParam's value, typed for the keys RFC 9460 names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SvcParamValue {
    /// `mandatory`: the keys listed, in key order.
    Mandatory(Vec<SvcParamKey>),
    /// `alpn`: protocol ids (`h2`, `h3`), in the order given.
    Alpn(Vec<Vec<u8>>),
    /// `no-default-alpn`: no value.
    NoDefaultAlpn,
    /// `port`.
    Port(u16),
    /// `ipv4hint`, in the order given.
    Ipv4Hint(Vec<Ipv4Addr>),
    /// `ech`: the ECHConfigList's bytes (base64 in presentation).
    Ech(Vec<u8>),
    /// `ipv6hint`, in the order given.
    Ipv6Hint(Vec<Ipv6Addr>),
    /// `keyNNNNN`: opaque bytes.
    Opaque(Vec<u8>),
}

impl SvcParamValue {
    /// The value of `key` from its presentation text (`None`: written without `=`).
    pub fn parse(key: SvcParamKey, value: Option<&str>) -> Result<SvcParamValue, RdataProblem> {
        let Some(raw) = value else {
            return match key {
                SvcParamKey::NO_DEFAULT_ALPN => Ok(SvcParamValue::NoDefaultAlpn),
                k if k.name().is_none() => Ok(SvcParamValue::Opaque(Vec::new())),
                _ => Err(RdataProblem::MissingValue { key }),
            };
        };
        let bytes = char_string(raw).ok_or(RdataProblem::Syntax {
            param: format!("{key}={raw}"),
            why: "a bad escape or a stray quote",
        })?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let bad = |want: &'static str| RdataProblem::BadValue {
            key,
            value: text.clone(),
            want,
        };
        if bytes.is_empty() && key.name().is_some() {
            return Err(match key {
                SvcParamKey::NO_DEFAULT_ALPN => RdataProblem::UnexpectedValue { key },
                _ => RdataProblem::MissingValue { key },
            });
        }
        Ok(match key {
            SvcParamKey::MANDATORY => {
                let mut keys = Vec::new();
                for k in text.split(',') {
                    let k = SvcParamKey::parse(k).map_err(|_| bad("a comma-separated list of SvcParam keys"))?;
                    if k == SvcParamKey::MANDATORY {
                        return Err(RdataProblem::MandatoryListsItself);
                    }
                    if keys.contains(&k) {
                        return Err(RdataProblem::DuplicateKey { key: k });
                    }
                    keys.push(k);
                }
                keys.sort_unstable();
                SvcParamValue::Mandatory(keys)
            }
            SvcParamKey::ALPN => {
                if bytes.contains(&b'\\') {
                    return Err(bad("a list of protocol ids without escaped commas or backslashes"));
                }
                let ids: Vec<Vec<u8>> = bytes.split(|b| *b == b',').map(<[u8]>::to_vec).collect();
                if ids.iter().any(|id| id.is_empty() || id.len() > 255) {
                    return Err(bad("a comma-separated list of protocol ids of 1 to 255 octets"));
                }
                SvcParamValue::Alpn(ids)
            }
            SvcParamKey::NO_DEFAULT_ALPN => return Err(RdataProblem::UnexpectedValue { key }),
            SvcParamKey::PORT => super::decimal(&text, 65535)
                .and_then(|p| u16::try_from(p).ok())
                .map(SvcParamValue::Port)
                .ok_or_else(|| bad("a port number from 0 to 65535"))?,
            SvcParamKey::IPV4HINT => SvcParamValue::Ipv4Hint(
                text.split(',')
                    .map(str::parse)
                    .collect::<Result<_, _>>()
                    .map_err(|_| bad("a comma-separated list of IPv4 addresses"))?,
            ),
            SvcParamKey::ECH => SvcParamValue::Ech(
                BASE64
                    .decode(&bytes)
                    .ok()
                    .filter(|b| !b.is_empty())
                    .ok_or_else(|| bad("an ECHConfigList in base64"))?,
            ),
            SvcParamKey::IPV6HINT => SvcParamValue::Ipv6Hint(
                text.split(',')
                    .map(str::parse)
                    .collect::<Result<_, _>>()
                    .map_err(|_| bad("a comma-separated list of IPv6 addresses"))?,
            ),
            _ => SvcParamValue::Opaque(bytes),
        })
    }

    /// Append ` key=value` (or ` key` when there is no value) in canonical form.
    fn write(&self, key: SvcParamKey, out: &mut String) {
        out.push(' ');
        out.push_str(&key.to_string());
        let join = |items: Vec<String>| items.join(",");
        let value: Option<Vec<u8>> = match self {
            SvcParamValue::Mandatory(keys) => Some(join(keys.iter().map(ToString::to_string).collect()).into_bytes()),
            SvcParamValue::Alpn(ids) => Some(ids.join(&b","[..])),
            SvcParamValue::NoDefaultAlpn => None,
            SvcParamValue::Port(p) => Some(p.to_string().into_bytes()),
            SvcParamValue::Ipv4Hint(a) => Some(join(a.iter().map(ToString::to_string).collect()).into_bytes()),
            // Quoted, as RFC 9460's examples and PowerDNS (which refuses it unquoted) write it.
            SvcParamValue::Ech(b) => {
                out.push_str(&format!("=\"{}\"", BASE64.encode(b)));
                None
            }
            SvcParamValue::Ipv6Hint(a) => Some(join(a.iter().map(ToString::to_string).collect()).into_bytes()),
            // Always quoted, an empty one too, as PowerDNS prints them (it refuses a bare `keyNNNNN` and any
            // spelling of its content but its own).
            SvcParamValue::Opaque(b) => {
                out.push('=');
                write_quoted(b, out);
                None
            }
        };
        if let Some(v) = value {
            out.push('=');
            write_value(&v, out);
        }
    }
}

/// A record's SvcParams, by key: at most one value per key, written in key order as RFC 9460 orders them
/// on the wire, whatever order they were given in.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct SvcParams(pub BTreeMap<SvcParamKey, SvcParamValue>);

impl SvcParams {
    /// Parse `key=value` fields, refusing repeated keys and the inconsistencies RFC 9460 names: `mandatory`
    /// listing a key that is absent, `no-default-alpn` without `alpn`.
    pub fn parse<'a>(fields: impl IntoIterator<Item = &'a str>) -> Result<SvcParams, RdataProblem> {
        let mut params = BTreeMap::new();
        for field in fields {
            let (key, value) = match field.split_once('=') {
                Some((k, v)) => (k, Some(v)),
                None => (field, None),
            };
            let key = SvcParamKey::parse(key)?;
            let value = SvcParamValue::parse(key, value)?;
            if params.insert(key, value).is_some() {
                return Err(RdataProblem::DuplicateKey { key });
            }
        }
        let params = SvcParams(params);
        params.check()?;
        Ok(params)
    }

    /// The rules between keys (RFC 9460 §8 and §7.1.1).
    pub fn check(&self) -> Result<(), RdataProblem> {
        if let Some(SvcParamValue::Mandatory(keys)) = self.0.get(&SvcParamKey::MANDATORY)
            && let Some(missing) = keys.iter().find(|k| !self.0.contains_key(k))
        {
            return Err(RdataProblem::MandatoryKeyMissing { key: *missing });
        }
        if self.0.contains_key(&SvcParamKey::NO_DEFAULT_ALPN) && !self.0.contains_key(&SvcParamKey::ALPN) {
            return Err(RdataProblem::NoDefaultAlpnWithoutAlpn);
        }
        Ok(())
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Append each parameter, preceded by a space, in key order.
    pub(super) fn write(&self, out: &mut String) {
        for (key, value) in &self.0 {
            value.write(*key, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical(fields: &[&str]) -> Result<String, RdataProblem> {
        let p = SvcParams::parse(fields.iter().copied())?;
        let mut s = String::new();
        p.write(&mut s);
        Ok(s)
    }

    #[test]
    fn params_are_written_in_key_order_with_canonical_values() {
        assert_eq!(
            canonical(&[
                "ipv6hint=2001:DB8:0::1",
                "port=8443",
                r#"alpn="h3,h2""#,
                "mandatory=port,alpn",
                "key65000=\"a b\"",
                "ipv4hint=192.0.2.1,192.0.2.2",
                "no-default-alpn",
                "ech=AEj+DQBE",
                "key65001",
            ]),
            Ok(
                " mandatory=alpn,port alpn=h3,h2 no-default-alpn port=8443 ipv4hint=192.0.2.1,192.0.2.2 ech=\"AEj+DQBE\" \
                 ipv6hint=2001:db8::1 key65000=\"a b\" key65001=\"\""
                    .to_string()
            )
        );
    }

    #[test]
    fn keys_are_names_or_key_numbers_without_a_name() {
        assert_eq!(SvcParamKey::parse("key7"), Ok(SvcParamKey(7)));
        assert_eq!(SvcParamKey::parse("alpn"), Ok(SvcParamKey::ALPN));
        assert!(matches!(
            SvcParamKey::parse("key1"),
            Err(RdataProblem::NumericNamedKey { name: "alpn", .. })
        ));
        for bad in ["key65535", "key007", "key", "ALPN", "foo"] {
            assert!(
                matches!(SvcParamKey::parse(bad), Err(RdataProblem::UnknownKey { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn values_are_checked_against_their_key() {
        for (field, key) in [
            ("port=65536", SvcParamKey::PORT),
            ("ipv4hint=2001:db8::1", SvcParamKey::IPV4HINT),
            ("ipv6hint=192.0.2.1", SvcParamKey::IPV6HINT),
            ("ech=not*base64", SvcParamKey::ECH),
            ("alpn=h2,,h3", SvcParamKey::ALPN),
            (r"alpn=h2\\,h3", SvcParamKey::ALPN),
            ("mandatory=foo", SvcParamKey::MANDATORY),
        ] {
            assert!(
                matches!(canonical(&[field]), Err(RdataProblem::BadValue { key: k, .. }) if k == key),
                "{field}"
            );
        }
        assert_eq!(
            canonical(&["port"]),
            Err(RdataProblem::MissingValue { key: SvcParamKey::PORT })
        );
        assert_eq!(
            canonical(&["alpn="]),
            Err(RdataProblem::MissingValue { key: SvcParamKey::ALPN })
        );
        assert_eq!(
            canonical(&["alpn=h2", "no-default-alpn=x"]),
            Err(RdataProblem::UnexpectedValue {
                key: SvcParamKey::NO_DEFAULT_ALPN
            })
        );
    }

    #[test]
    fn rules_between_keys_are_enforced() {
        assert_eq!(
            canonical(&["port=1", "port=2"]),
            Err(RdataProblem::DuplicateKey { key: SvcParamKey::PORT })
        );
        assert_eq!(
            canonical(&["mandatory=mandatory"]),
            Err(RdataProblem::MandatoryListsItself)
        );
        assert_eq!(
            canonical(&["mandatory=port"]),
            Err(RdataProblem::MandatoryKeyMissing { key: SvcParamKey::PORT })
        );
        assert_eq!(
            canonical(&["no-default-alpn"]),
            Err(RdataProblem::NoDefaultAlpnWithoutAlpn)
        );
    }
}
