//! TLSA (RFC 6698) and SVCB/HTTPS (RFC 9460) record data on the wire, from and to the typed targets of
//! `extdns_endpoint` ([`Tlsa`], [`Svcb`]).
//!
//! The wire form is built here byte by byte from the typed value and handed to hickory's own reader, so
//! the record data the RFC 2136 client sends and the built-in server stores is exactly what hickory reads
//! off the wire (a deletion's data then equals the stored data). Reading goes the other way: hickory's
//! record data is written out and parsed here, so every server's spelling ends in one canonical target.

use std::net::{Ipv4Addr, Ipv6Addr};

use crate::CodecError;
use extdns_endpoint::{SvcParamKey, SvcParamValue, SvcParams, Svcb, Tlsa};
use hickory_proto::ProtoError;
use hickory_proto::rr::{Name, RData, RecordType as WireType};
use hickory_proto::serialize::binary::{BinDecodable, BinDecoder, BinEncodable, BinEncoder, DecodeError, Restrict};

/// Why typed record data could not be turned into hickory's.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TypedError {
    /// The target name is not a DNS name.
    #[error("target name {name:?} is not a DNS name: {source}")]
    TargetName {
        /// The name as given.
        name: String,
        /// Why it was refused.
        #[source]
        source: CodecError,
    },
    /// The record data is longer than DNS allows (65535 octets) or a value longer than its length field.
    #[error("the record data is too long for DNS")]
    TooLong,
    /// hickory could not encode the target name.
    #[error("the target name does not encode: {0}")]
    Encode(#[source] ProtoError),
    /// hickory could not read the data built.
    #[error("hickory does not read the record data: {0}")]
    Decode(#[source] DecodeError),
}

/// TLSA record data.
pub fn tlsa_rdata(t: &Tlsa) -> Result<RData, TypedError> {
    let mut bytes = vec![t.usage, t.selector, t.matching_type];
    bytes.extend_from_slice(&t.data);
    hickory(WireType::TLSA, &bytes)
}

/// SVCB (`https == false`) or HTTPS record data.
pub fn svcb_rdata(s: &Svcb, https: bool) -> Result<RData, TypedError> {
    let mut bytes = s.priority.to_be_bytes().to_vec();
    let target = if s.target == "." {
        Name::root()
    } else {
        crate::names::name(s.target_name()).map_err(|source| TypedError::TargetName {
            name: s.target.clone(),
            source,
        })?
    };
    let mut name_bytes = Vec::new();
    let mut enc = BinEncoder::new(&mut name_bytes);
    enc.set_canonical_form(true);
    target.emit(&mut enc).map_err(TypedError::Encode)?;
    bytes.extend_from_slice(&name_bytes);
    for (key, value) in &s.params.0 {
        let v = param_bytes(value)?;
        bytes.extend_from_slice(&key.0.to_be_bytes());
        bytes.extend_from_slice(&u16::try_from(v.len()).map_err(|_| TypedError::TooLong)?.to_be_bytes());
        bytes.extend_from_slice(&v);
    }
    hickory(if https { WireType::HTTPS } else { WireType::SVCB }, &bytes)
}

fn param_bytes(value: &SvcParamValue) -> Result<Vec<u8>, TypedError> {
    Ok(match value {
        SvcParamValue::Mandatory(keys) => keys.iter().flat_map(|k| k.0.to_be_bytes()).collect(),
        SvcParamValue::Alpn(ids) => {
            let mut out = Vec::new();
            for id in ids {
                out.push(u8::try_from(id.len()).map_err(|_| TypedError::TooLong)?);
                out.extend_from_slice(id);
            }
            out
        }
        SvcParamValue::NoDefaultAlpn => Vec::new(),
        SvcParamValue::Port(p) => p.to_be_bytes().to_vec(),
        SvcParamValue::Ipv4Hint(a) => a.iter().flat_map(|a| a.octets()).collect(),
        SvcParamValue::Ech(b) | SvcParamValue::Opaque(b) => b.clone(),
        SvcParamValue::Ipv6Hint(a) => a.iter().flat_map(|a| a.octets()).collect(),
    })
}

/// hickory's record data of `wire` read from `bytes`.
fn hickory(wire: WireType, bytes: &[u8]) -> Result<RData, TypedError> {
    let len = u16::try_from(bytes.len()).map_err(|_| TypedError::TooLong)?;
    let mut dec = BinDecoder::new(bytes);
    RData::read(&mut dec, wire, Restrict::new(len)).map_err(TypedError::Decode)
}

/// The bytes of hickory's record data.
fn wire_bytes(data: &RData) -> Option<Vec<u8>> {
    let mut bytes = Vec::new();
    let mut enc = BinEncoder::new(&mut bytes);
    enc.set_canonical_form(true);
    data.emit(&mut enc).ok()?;
    Some(bytes)
}

/// The TLSA target of hickory's record data; `None` when it is not valid TLSA data as external-dns reads it.
pub fn tlsa_target(data: &RData) -> Option<Tlsa> {
    let bytes = wire_bytes(data)?;
    let [usage, selector, matching_type, rest @ ..] = bytes.as_slice() else {
        return None;
    };
    let hex: String = rest.iter().map(|b| format!("{b:02x}")).collect();
    // Through the text form, so what is read obeys the same rules as what a source may write.
    format!("{usage} {selector} {matching_type} {hex}").parse().ok()
}

/// The SVCB/HTTPS target of hickory's record data; `None` when it breaks RFC 9460's rules.
pub fn svcb_target(data: &RData) -> Option<Svcb> {
    let bytes = wire_bytes(data)?;
    let mut dec = BinDecoder::new(&bytes);
    let priority = u16::from_be_bytes([dec.read_u8().ok()?.unverified(), dec.read_u8().ok()?.unverified()]);
    let name = Name::read(&mut dec).ok()?;
    let target = if name.is_root() {
        ".".to_string()
    } else {
        format!("{}.", crate::names::name_text(&name))
    };
    let mut rest = dec.read_slice(dec.len()).ok()?.unverified();
    let mut params = SvcParams::default();
    while !rest.is_empty() {
        let [k0, k1, l0, l1, tail @ ..] = rest else {
            return None;
        };
        let (key, len) = (
            SvcParamKey(u16::from_be_bytes([*k0, *k1])),
            usize::from(u16::from_be_bytes([*l0, *l1])),
        );
        let value = tail.get(..len)?;
        rest = &tail[len..];
        if params.0.insert(key, param_value(key, value)?).is_some() {
            return None;
        }
    }
    if priority == 0 && !params.is_empty() {
        return None;
    }
    params.check().ok()?;
    let s = Svcb {
        priority,
        target,
        params,
    };
    // The text a source would write must read to the same value (a name hickory accepts but the target
    // rule refuses is not managed).
    (s.to_string().parse::<Svcb>().ok()? == s).then_some(s)
}

fn param_value(key: SvcParamKey, v: &[u8]) -> Option<SvcParamValue> {
    Some(match key {
        SvcParamKey::MANDATORY => {
            if v.is_empty() || !v.len().is_multiple_of(2) {
                return None;
            }
            let mut keys: Vec<SvcParamKey> = v
                .chunks(2)
                .map(|c| SvcParamKey(u16::from_be_bytes([c[0], c[1]])))
                .collect();
            keys.sort_unstable();
            SvcParamValue::Mandatory(keys)
        }
        SvcParamKey::ALPN => {
            let mut ids = Vec::new();
            let mut rest = v;
            while let [len, tail @ ..] = rest {
                let len = usize::from(*len);
                ids.push(tail.get(..len).filter(|id| !id.is_empty())?.to_vec());
                rest = &tail[len..];
            }
            if ids.is_empty() {
                return None;
            }
            SvcParamValue::Alpn(ids)
        }
        SvcParamKey::NO_DEFAULT_ALPN if v.is_empty() => SvcParamValue::NoDefaultAlpn,
        SvcParamKey::PORT => SvcParamValue::Port(u16::from_be_bytes(v.try_into().ok()?)),
        SvcParamKey::IPV4HINT if !v.is_empty() && v.len().is_multiple_of(4) => SvcParamValue::Ipv4Hint(
            v.chunks(4)
                .map(|c| <[u8; 4]>::try_from(c).map(Ipv4Addr::from))
                .collect::<Result<_, _>>()
                .ok()?,
        ),
        SvcParamKey::ECH if !v.is_empty() => SvcParamValue::Ech(v.to_vec()),
        SvcParamKey::IPV6HINT if !v.is_empty() && v.len().is_multiple_of(16) => SvcParamValue::Ipv6Hint(
            v.chunks(16)
                .map(|c| <[u8; 16]>::try_from(c).map(Ipv6Addr::from))
                .collect::<Result<_, _>>()
                .ok()?,
        ),
        k if k.name().is_none() => SvcParamValue::Opaque(v.to_vec()),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svcb(text: &str, https: bool) -> Option<String> {
        let s: Svcb = text.parse().ok()?;
        let data = svcb_rdata(&s, https).ok()?;
        assert_eq!(data.record_type(), if https { WireType::HTTPS } else { WireType::SVCB });
        svcb_target(&data).map(|s| s.to_string())
    }

    #[test]
    fn svcb_and_https_round_trip_through_hickory() {
        for text in [
            "0 pool.svc.example.",
            "0 .",
            "1 . alpn=h2,h3 no-default-alpn port=8443 ipv4hint=192.0.2.1,192.0.2.2 ech=\"AEj+DQBE\" ipv6hint=2001:db8::1",
            "2 svc.example. mandatory=alpn,port alpn=h3 port=443 key65000=\"a b\" key65001=\"\"",
        ] {
            assert_eq!(svcb(text, true).as_deref(), Some(text), "HTTPS {text}");
            assert_eq!(svcb(text, false).as_deref(), Some(text), "SVCB {text}");
        }
    }

    #[test]
    fn the_wire_form_is_rfc_9460s() {
        // RFC 9460 Appendix D.2, figure 4: "16 foo.example.org. alpn=h2,h3-19 mandatory=ipv4hint,alpn
        // ipv4hint=192.0.2.1".
        let s: Svcb = "16 foo.example.org. alpn=h2,h3-19 mandatory=ipv4hint,alpn ipv4hint=192.0.2.1"
            .parse()
            .expect("parses");
        let data = svcb_rdata(&s, false).expect("encodes");
        let want: &[u8] = b"\x00\x10\x03foo\x07example\x03org\x00\
            \x00\x00\x00\x04\x00\x01\x00\x04\
            \x00\x01\x00\x09\x02h2\x05h3-19\
            \x00\x04\x00\x04\xc0\x00\x02\x01";
        assert_eq!(wire_bytes(&data).as_deref(), Some(want));
    }

    #[test]
    fn tlsa_round_trips_in_lower_case_hex() {
        let t: Tlsa = format!("3 1 1 {}", "AB".repeat(32)).parse().expect("parses");
        let data = tlsa_rdata(&t).expect("encodes");
        assert_eq!(data.record_type(), WireType::TLSA);
        assert_eq!(
            tlsa_target(&data).map(|t| t.to_string()),
            Some(format!("3 1 1 {}", "ab".repeat(32)))
        );
    }
}
