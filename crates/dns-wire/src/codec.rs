//! Between endpoint targets (external-dns's text forms) and DNS record data.
//!
//! TXT values are compared in one canonical form: the concatenation of the record's character-strings,
//! unquoted. That is how external-dns reads them back since it stopped looping on no-op updates, and it is
//! what a DKIM or SPF value means. A target written in zone-file quoting (`"a" "b"`, as the TXT registry
//! writes its heritage records) is unquoted first; any other target is taken byte for byte.

use std::str::FromStr;

use extdns_endpoint::{RdataProblem, RecordType, Svcb, Target, TargetKind, Tlsa};
use hickory_proto::ProtoError;
use hickory_proto::rr::rdata::{A, AAAA, CNAME, MX, NS, NULL, PTR, SRV, TXT};
use hickory_proto::rr::{Name, RData, RecordType as WireType};
use hickory_proto::serialize::binary::{BinDecodable, BinDecoder, BinEncodable, BinEncoder};

pub use crate::names::{name, name_text};
use crate::typed;

/// Why a name or a target cannot be written as DNS data.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// An empty name or the root, which no endpoint may carry.
    #[error("empty name")]
    EmptyName,
    /// Text that is not a DNS name.
    #[error("invalid DNS name {name:?}: {source}")]
    Name {
        /// The text as given.
        name: String,
        /// Why hickory refused it.
        #[source]
        source: ProtoError,
    },
    /// A target that is not valid data of its record type.
    #[error("invalid {record_type} target {target:?}: {reason}")]
    Target {
        /// The endpoint's record type.
        record_type: RecordType,
        /// The target as given.
        target: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// The record data for one target of an endpoint of type `rt`.
pub fn rdata(rt: &RecordType, target: &Target) -> Result<RData, CodecError> {
    let bad = |what: &str| CodecError::Target {
        record_type: rt.clone(),
        target: target.to_string(),
        reason: what.to_string(),
    };
    Ok(match rt {
        RecordType::A => match address(target) {
            TargetKind::Ipv4(a) => RData::A(A(a)),
            _ => return Err(bad("not an IPv4 address")),
        },
        RecordType::Aaaa => match address(target) {
            TargetKind::Ipv6(a) if !target.contains('%') => RData::AAAA(AAAA(a)),
            _ => return Err(bad("not an IPv6 address")),
        },
        RecordType::Cname => RData::CNAME(CNAME(name(target).map_err(|e| bad(&e.to_string()))?)),
        RecordType::Ns => RData::NS(NS(name(target).map_err(|e| bad(&e.to_string()))?)),
        RecordType::Ptr => RData::PTR(PTR(name(target).map_err(|e| bad(&e.to_string()))?)),
        RecordType::Dname => {
            let n = name(target).map_err(|e| bad(&e.to_string()))?;
            let mut bytes = Vec::new();
            let mut enc = BinEncoder::new(&mut bytes);
            enc.set_canonical_form(true);
            n.emit(&mut enc).map_err(|e| bad(&e.to_string()))?;
            RData::Unknown {
                code: WireType::DNAME,
                rdata: NULL::with(bytes),
            }
        }
        RecordType::Txt => {
            let chunks = txt_chunks(&canonical_txt(target));
            RData::TXT(TXT::from_bytes(chunks.iter().map(Vec::as_slice).collect()))
        }
        RecordType::Srv => {
            let f: Vec<&str> = target.split_whitespace().collect();
            let [p, w, port, host] = f.as_slice() else {
                return Err(bad("want \"priority weight port target\""));
            };
            let num = |s: &str| {
                s.parse::<u16>()
                    .map_err(|_| bad(&format!("{s:?} is not a number 0-65535")))
            };
            RData::SRV(SRV::new(
                num(p)?,
                num(w)?,
                num(port)?,
                name(host).map_err(|e| bad(&e.to_string()))?,
            ))
        }
        RecordType::Mx => {
            let f: Vec<&str> = target.split_whitespace().collect();
            let [pref, host] = f.as_slice() else {
                return Err(bad("want \"preference host\""));
            };
            let pref = pref
                .parse::<u16>()
                .map_err(|_| bad("preference is not a number 0-65535"))?;
            RData::MX(MX::new(pref, name(host).map_err(|e| bad(&e.to_string()))?))
        }
        RecordType::Tlsa => {
            let t: Tlsa = target.parse().map_err(|e: RdataProblem| bad(&e.to_string()))?;
            typed::tlsa_rdata(&t).map_err(|e| bad(&e.to_string()))?
        }
        RecordType::Svcb | RecordType::Https => {
            let s: Svcb = target.parse().map_err(|e: RdataProblem| bad(&e.to_string()))?;
            typed::svcb_rdata(&s, *rt == RecordType::Https).map_err(|e| bad(&e.to_string()))?
        }
        other => {
            let wire = WireType::from_str(other.as_str()).map_err(|_| bad("unknown record type"))?;
            RData::try_from_str(wire, target).map_err(|e| bad(&e.to_string()))?
        }
    })
}

/// The address an A or AAAA target holds. Surrounding space is tolerated, as by the zone-file parser
/// external-dns hands targets to.
fn address(target: &Target) -> TargetKind {
    let trimmed = target.trim();
    if trimmed.len() == target.len() {
        target.kind()
    } else {
        TargetKind::of(trimmed)
    }
}

/// The endpoint type and target of a record read from the zone, or `None` for types extdns does not
/// manage (SOA, DNSKEY, CAA...). Addresses become targets without being spelled out and parsed again.
pub fn target(data: &RData) -> Option<(RecordType, Target)> {
    Some(match data {
        RData::A(a) => (RecordType::A, Target::from(a.0)),
        RData::AAAA(a) => (RecordType::Aaaa, Target::from(a.0)),
        RData::CNAME(n) => (RecordType::Cname, name_text(&n.0).into()),
        RData::NS(n) => (RecordType::Ns, name_text(&n.0).into()),
        RData::PTR(n) => (RecordType::Ptr, name_text(&n.0).into()),
        RData::TXT(t) => (RecordType::Txt, txt_value(&t.txt_data).into()),
        // SRV keeps its target's dot, as external-dns does for SRV; the name is spelled as `name_text` spells
        // names, so it reads back to the same bytes.
        RData::SRV(s) => {
            let host = if s.target.is_root() {
                ".".to_string()
            } else {
                format!("{}.", name_text(&s.target))
            };
            (
                RecordType::Srv,
                format!("{} {} {} {host}", s.priority, s.weight, s.port).into(),
            )
        }
        RData::MX(m) => (
            RecordType::Mx,
            format!("{} {}", m.preference, name_text(&m.exchange)).into(),
        ),
        RData::NAPTR(n) => (RecordType::Naptr, n.to_string().into()),
        // In their canonical text, which is what a source stores (see `extdns_endpoint::canonical_target`).
        RData::TLSA(_) => (RecordType::Tlsa, typed::tlsa_target(data)?.to_string().into()),
        RData::SVCB(_) => (RecordType::Svcb, typed::svcb_target(data)?.to_string().into()),
        RData::HTTPS(_) => (RecordType::Https, typed::svcb_target(data)?.to_string().into()),
        RData::Unknown {
            code: WireType::DNAME,
            rdata,
        } => {
            let mut dec = BinDecoder::new(&rdata.anything);
            (RecordType::Dname, name_text(&Name::read(&mut dec).ok()?).into())
        }
        _ => return None,
    })
}

/// The canonical value of a TXT record: its character-strings joined.
pub fn txt_value(chunks: &[Box<[u8]>]) -> String {
    let bytes: Vec<u8> = chunks.iter().flat_map(|c| c.iter().copied()).collect();
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// A TXT target in canonical form: zone-file quoting undone when the whole target is quoted strings,
/// otherwise unchanged.
pub fn canonical_txt(target: &str) -> String {
    if target.len() >= 2
        && target.starts_with('"')
        && target.ends_with('"')
        && let Some(strings) = unquote(target)
    {
        let bytes: Vec<u8> = strings.concat();
        return String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    }
    target.to_string()
}

/// Parse `"one" "two"` (zone-file character-strings with `\"`, `\\` and `\DDD` escapes). `None` when the
/// text is not entirely made of quoted strings.
fn unquote(s: &str) -> Option<Vec<Vec<u8>>> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if b[i] != b'"' {
            return None;
        }
        i += 1;
        let mut cur = Vec::new();
        loop {
            match b.get(i) {
                None => return None,
                Some(b'"') => {
                    i += 1;
                    break;
                }
                Some(b'\\') => {
                    let (byte, len) = extdns_endpoint::escape::decode(b, i)?;
                    cur.push(byte);
                    i += len;
                }
                Some(&c) => {
                    cur.push(c);
                    i += 1;
                }
            }
        }
        out.push(cur);
    }
    if out.is_empty() { None } else { Some(out) }
}

/// Split a canonical TXT value into character-strings of at most 255 bytes, never inside a UTF-8 sequence.
pub fn txt_chunks(value: &str) -> Vec<Vec<u8>> {
    extdns_endpoint::txt::character_strings(value)
        .into_iter()
        .map(|s| s.as_bytes().to_vec())
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn ownership_names_of_wildcard_records_are_written_as_raw_labels() {
        let n = name("a-*.apps.example.org").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(n.num_labels(), 4);
        assert_eq!(name_text(&n), "a-*.apps.example.org");
        assert!(name("bad..example.org").is_err());
        assert!(name("has space.example.org").is_err());
        // Targets no DNS name can hold are refused, not smuggled through as raw labels.
        assert!(name("1.2.3.4/24").is_err());
        assert!(name("fe80::1%eth0").is_err());
    }

    use super::*;

    fn roundtrip(rt: RecordType, t: &str) -> Option<(RecordType, Target)> {
        rdata(&rt, &t.into()).ok().and_then(|d| target(&d))
    }

    /// `written` as `rt`'s record data reads back as the target `read`.
    fn reads_back(rt: RecordType, written: &str, read: &str) {
        assert_eq!(
            roundtrip(rt.clone(), written),
            Some((rt.clone(), read.into())),
            "{rt} {written:?}"
        );
    }

    #[test]
    fn targets_round_trip_through_record_data() {
        reads_back(RecordType::A, "192.0.2.1", "192.0.2.1");
        reads_back(RecordType::Aaaa, "2001:db8::1", "2001:db8::1");
        reads_back(RecordType::Cname, "Web.Example.org.", "web.example.org");
        reads_back(RecordType::Ptr, "web.example.org", "web.example.org");
        reads_back(RecordType::Dname, "other.example", "other.example");
        reads_back(RecordType::Mx, "10 mail.example.org", "10 mail.example.org");
    }

    #[test]
    fn srv_targets_keep_the_trailing_dot_like_external_dns() {
        reads_back(
            RecordType::Srv,
            "0 50 30192 foo.example.org.",
            "0 50 30192 foo.example.org.",
        );
        reads_back(
            RecordType::Srv,
            "0 50 30192 foo.example.org",
            "0 50 30192 foo.example.org.",
        );
        assert!(rdata(&RecordType::Srv, &"0 50 foo".into()).is_err());
    }

    #[test]
    fn invalid_targets_are_errors_naming_the_target() {
        let e = rdata(&RecordType::A, &"not-an-ip".into())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("not-an-ip") && e.contains('A'), "{e}");
        assert!(rdata(&RecordType::Aaaa, &"192.0.2.1".into()).is_err());
        assert!(
            rdata(&RecordType::Aaaa, &"fe80::1%eth0".into()).is_err(),
            "no zone in a record"
        );
        assert!(rdata(&RecordType::A, &"01.2.3.4".into()).is_err());
    }

    #[test]
    fn address_targets_may_have_surrounding_space_like_zone_file_text() {
        reads_back(RecordType::A, " 192.0.2.1 ", "192.0.2.1");
        reads_back(RecordType::Aaaa, "2001:DB8::1 ", "2001:db8::1");
    }

    #[test]
    fn quoted_txt_targets_are_unquoted_and_plain_ones_kept() {
        assert_eq!(
            canonical_txt("\"heritage=external-dns,external-dns/owner=x\""),
            "heritage=external-dns,external-dns/owner=x"
        );
        assert_eq!(canonical_txt("\"v=DKIM1; k=rsa; \" \"p=MIG\""), "v=DKIM1; k=rsa; p=MIG");
        assert_eq!(canonical_txt(r#""say \"hi\" \065""#), "say \"hi\" A");
        assert_eq!(canonical_txt("v=spf1 -all"), "v=spf1 -all");
        // Not entirely quoted strings: taken verbatim.
        assert_eq!(canonical_txt("\"a\" b \"c\""), "\"a\" b \"c\"");
    }

    #[test]
    fn long_txt_values_are_split_into_255_byte_strings_and_read_back_whole() {
        let long = "é".repeat(200); // 400 bytes, two-byte characters
        let chunks = txt_chunks(&long);
        assert!(chunks.iter().all(|c| c.len() <= 255 && std::str::from_utf8(c).is_ok()));
        let boxed: Vec<Box<[u8]>> = chunks.into_iter().map(Vec::into_boxed_slice).collect();
        assert_eq!(txt_value(&boxed), long);
    }

    #[test]
    fn wildcard_and_underscore_names_round_trip() {
        for n in ["*.example.org", "_sip._tcp.example.org", "a-b.example.org"] {
            assert_eq!(name(n).map(|x| name_text(&x)).ok().as_deref(), Some(n));
        }
        assert_eq!(
            name("Web.Example.ORG.").map(|x| name_text(&x)).ok().as_deref(),
            Some("web.example.org")
        );
        assert!(name("").is_err() && name(".").is_err());
    }

    #[test]
    fn unmanaged_types_are_not_read() {
        let soa = RData::try_from_str(WireType::SOA, "ns1.example.org. h.example.org. 1 2 3 4 5");
        assert!(soa.is_ok_and(|d| target(&d).is_none()));
    }
}

#[cfg(test)]
mod presentation_tests {
    use super::*;

    /// Found by the `dns_names` fuzz target: a zone transfer named a node with the byte 0xfa in a label;
    /// its text must lead back to that node, not to the UTF-8 spelling of "ú".
    #[test]
    fn a_label_byte_outside_ascii_reads_back_as_the_same_name() {
        let read = Name::from_labels([&b"exam\xfale"[..], b"org"]).expect("name");
        let text = name_text(&read);
        assert_eq!(text, "exam\\250le.org");
        assert_eq!(name(&text).expect("parses"), read);
    }

    /// Also found by `dns_names`: punctuation hickory's parser refuses (`ex?mple`) is escaped, not lost.
    #[test]
    fn punctuation_in_a_label_reads_back_as_the_same_name() {
        let read = Name::from_labels([&b"a-*"[..], b"apps", b"ex?mple", b"org"]).expect("name");
        let text = name_text(&read);
        assert_eq!(text, "a-*.apps.ex\\063mple.org");
        assert_eq!(name(&text).expect("parses"), read);
    }

    #[test]
    fn escaped_dots_and_backslashes_stay_inside_their_label() {
        let read = Name::from_labels([&b"a.b\\c"[..], b"example", b"org"]).expect("name");
        let text = name_text(&read);
        assert_eq!(text, "a\\046b\\092c.example.org");
        assert_eq!(name(&text).expect("parses"), read);
        assert_eq!(name("a\\.b.example.org").expect("parses").num_labels(), 3);
    }
}
