//! The record data of TLSA (RFC 6698 section 2.2) and SVCB/HTTPS (RFC 9460 section 2.1 and appendix A),
//! read from presentation format as the strict fakes check it before they store a record.
//!
//! Written here from the RFCs, apart from the endpoint crate's parser: a fake that shared the provider's
//! reading of the data would accept whatever mistake the two have in common. What each vendor adds (a
//! target name that must be absolute, the hex case it answers with) is the fake's own rule, beside it.

use std::net::{Ipv4Addr, Ipv6Addr};

use extdns_endpoint::RecordType;

/// One well-formed record of each type whose data has fields (TLSA, SVCB, HTTPS), as a source writes
/// it: what a provider whose API holds none of them must refuse naming the type.
pub fn structured_samples() -> [(RecordType, &'static str); 3] {
    [
        (RecordType::Tlsa, "3 1 0 abcd"),
        (RecordType::Svcb, "1 . alpn=h2"),
        (RecordType::Https, "1 . alpn=h2"),
    ]
}

/// A TLSA record's fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tlsa {
    /// Certificate usage (one octet).
    pub usage: u8,
    /// Selector (one octet).
    pub selector: u8,
    /// Matching type (one octet).
    pub matching_type: u8,
    /// The certificate association data, hex as written (whitespace removed).
    pub data: String,
}

/// An SVCB or HTTPS record's fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Svcb {
    /// SvcPriority: 0 is AliasMode.
    pub priority: u16,
    /// TargetName as written (`.` for the owner name itself).
    pub target: String,
    /// The SvcParams as written, `key` or `key=value` (value unquoted), in the order given.
    pub params: Vec<(String, Option<String>)>,
}

impl Svcb {
    /// The SvcParams as text, each `key="value"` or `key`, space-separated (the `value` field Cloudflare's
    /// `data` takes).
    pub fn params_text(&self) -> String {
        self.params
            .iter()
            .map(|(k, v)| match v {
                Some(v) => format!("{k}=\"{v}\""),
                None => k.clone(),
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// A one-octet field of a TLSA record.
fn octet(field: Option<&str>, name: &str) -> Result<u8, String> {
    field
        .and_then(|f| f.parse::<u8>().ok())
        .ok_or_else(|| format!("the TLSA {name} must be a number from 0 to 255"))
}

/// Hex of an even, non-zero number of digits.
pub fn is_hex(data: &str) -> bool {
    !data.is_empty() && data.len().is_multiple_of(2) && data.bytes().all(|b| b.is_ascii_hexdigit())
}

/// TLSA data in presentation format: `usage selector matching-type hex`, the hex possibly broken by
/// whitespace (RFC 6698 section 2.2).
pub fn tlsa(text: &str) -> Result<Tlsa, String> {
    let mut fields = text.split_ascii_whitespace();
    let usage = octet(fields.next(), "usage")?;
    let selector = octet(fields.next(), "selector")?;
    let matching_type = octet(fields.next(), "matching type")?;
    let data: String = fields.collect();
    if !is_hex(&data) {
        return Err(format!(
            "the TLSA certificate association data {data:?} is not hex of whole octets"
        ));
    }
    Ok(Tlsa {
        usage,
        selector,
        matching_type,
        data,
    })
}

/// The words of SVCB presentation data: split on unquoted spaces, a `"..."` part taken whole (quotes
/// removed, `\` escaping the next character kept as written).
fn words(text: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_ascii_whitespace()).is_some() {}
        if chars.peek().is_none() {
            return Ok(out);
        }
        let mut word = String::new();
        while let Some(c) = chars.next_if(|c| !c.is_ascii_whitespace()) {
            match c {
                '"' => loop {
                    match chars.next() {
                        None => return Err(format!("an unterminated quote in {text:?}")),
                        Some('"') => break,
                        Some('\\') => {
                            word.push('\\');
                            word.extend(chars.next());
                        }
                        Some(c) => word.push(c),
                    }
                },
                '\\' => {
                    word.push('\\');
                    word.extend(chars.next());
                }
                c => word.push(c),
            }
        }
        out.push(word);
    }
}

/// The number of a SvcParamKey (RFC 9460 section 14.3.2), or `None` for a key no registry or `keyNNNNN`
/// names. `key65535` is reserved ("Invalid key").
pub fn key_number(key: &str) -> Option<u16> {
    Some(match key {
        "mandatory" => 0,
        "alpn" => 1,
        "no-default-alpn" => 2,
        "port" => 3,
        "ipv4hint" => 4,
        "ech" => 5,
        "ipv6hint" => 6,
        other => {
            let digits = other.strip_prefix("key")?;
            if digits.is_empty() || digits.len() > 5 || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            digits.parse::<u16>().ok().filter(|n| *n != 65535)?
        }
    })
}

/// A SvcParam's value held to its key's format (RFC 9460 section 7).
fn param_value(key: &str, value: Option<&str>) -> Result<(), String> {
    let bad = || format!("the SvcParam {key}={:?} is malformed", value.unwrap_or_default());
    let list = |v: &str| v.split(',').map(str::to_string).collect::<Vec<_>>();
    match (key, value) {
        ("no-default-alpn", None) => Ok(()),
        ("no-default-alpn", Some(_)) => Err("no-default-alpn takes no value".into()),
        (k, None) if !k.starts_with("key") => Err(format!("the SvcParam {k} needs a value")),
        (_, None) => Ok(()),
        ("port", Some(v)) => v.parse::<u16>().map(drop).map_err(|_| bad()),
        ("ipv4hint", Some(v)) if list(v).iter().all(|a| a.parse::<Ipv4Addr>().is_ok()) => Ok(()),
        ("ipv6hint", Some(v)) if list(v).iter().all(|a| a.parse::<Ipv6Addr>().is_ok()) => Ok(()),
        ("ipv4hint" | "ipv6hint", Some(_)) => Err(bad()),
        ("alpn" | "mandatory", Some(v)) if list(v).iter().any(String::is_empty) => Err(bad()),
        ("mandatory", Some(v)) if list(v).iter().any(|k| key_number(k).is_none_or(|n| n == 0)) => Err(bad()),
        ("ech", Some("")) => Err(bad()),
        _ => Ok(()),
    }
}

/// SVCB or HTTPS data in presentation format: `priority target [key[=value]]...` (RFC 9460 section 2.1):
/// each key known or `keyNNNNN`, none twice, each value in its key's format, every key `mandatory` names
/// present.
pub fn svcb(text: &str) -> Result<Svcb, String> {
    let words = words(text)?;
    let (Some(priority), Some(target)) = (words.first(), words.get(1)) else {
        return Err(format!("{text:?} is not `priority target [params]`"));
    };
    let priority = priority
        .parse::<u16>()
        .map_err(|_| format!("the SvcPriority {priority:?} is not a number from 0 to 65535"))?;
    if target.is_empty() || target.contains("..") || (target.starts_with('.') && target != ".") {
        return Err(format!("the TargetName {target:?} is not a domain name"));
    }
    let mut params: Vec<(String, Option<String>)> = Vec::new();
    for w in &words[2..] {
        let (key, value) = match w.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (w.as_str(), None),
        };
        if key_number(key).is_none() {
            return Err(format!("{key:?} is not a SvcParamKey"));
        }
        if params.iter().any(|(k, _)| key_number(k) == key_number(key)) {
            return Err(format!("the SvcParam {key} is given twice"));
        }
        param_value(key, value)?;
        params.push((key.to_string(), value.map(str::to_string)));
    }
    if let Some((_, Some(mandatory))) = params.iter().find(|(k, _)| k == "mandatory") {
        for m in mandatory.split(',') {
            if !params.iter().any(|(k, _)| key_number(k) == key_number(m)) {
                return Err(format!("the mandatory key {m} is missing"));
            }
        }
    }
    Ok(Svcb {
        priority,
        target: target.clone(),
        params,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tlsa_data_is_three_octets_and_hex() {
        let t = tlsa("3 1 1 0A0b 0c0D").map_err(|e| e.to_string());
        assert_eq!(
            t,
            Ok(Tlsa {
                usage: 3,
                selector: 1,
                matching_type: 1,
                data: "0A0b0c0D".into()
            })
        );
        assert!(tlsa("3 1 1").is_err(), "no data");
        assert!(tlsa("3 1 1 abc").is_err(), "half an octet");
        assert!(tlsa("256 1 1 ab").is_err(), "usage over one octet");
        assert!(tlsa("3 1 x ab").is_err());
    }

    #[test]
    fn svcb_data_keeps_its_params_and_refuses_bad_ones() -> Result<(), String> {
        let s = svcb(r#"1 . alpn="h2,h3" port=8443 ipv4hint=192.0.2.1,192.0.2.2 no-default-alpn"#)?;
        assert_eq!((s.priority, s.target.as_str()), (1, "."));
        assert_eq!(
            s.params_text(),
            r#"alpn="h2,h3" port="8443" ipv4hint="192.0.2.1,192.0.2.2" no-default-alpn"#
        );
        assert_eq!(svcb("0 svc.example.com.")?.params, []);
        assert!(svcb("1 . port=x").is_err());
        assert!(svcb("1 . ipv6hint=192.0.2.1").is_err());
        assert!(svcb("1 . alpn=h2 alpn=h3").is_err(), "a key twice");
        assert!(svcb("1 . key3=1 port=2").is_err(), "key3 is port");
        assert!(svcb("1 . mandatory=port alpn=h2").is_err(), "a mandatory key missing");
        assert!(svcb("1 . foo=bar").is_err());
        assert!(svcb("1 . key65535").is_err());
        assert!(svcb("65536 .").is_err());
        assert!(svcb("1").is_err());
        assert!(svcb(r#"1 . alpn="h2"#).is_err(), "unterminated quote");
        Ok(())
    }
}
