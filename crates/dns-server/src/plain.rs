//! The commonest query answered straight from its datagram (issue 49: CPU per query): one question, for
//! an address or text record of a name that holds it, as most queries to an authoritative server are.
//! It is read without hickory's message decoder and answered without a hickory `Message` or `Record`:
//! the question is copied as the client wrote it, each record written from the zone's set by the answer
//! writer ([`crate::wire::write_plain`]). Anything else is left to the general path, which reads the
//! request whole: another header, section or EDNS option (a cookie among them), a name spelt with other
//! bytes, another type, a name that is a CNAME, a wildcard's, delegated or missing, a signed answer, or an
//! answer too large for the client. The bytes are the general path's, rate limiting included: the tests
//! compare the two on every shape of the test zone and on requests mutated at random.

use hickory_proto::ProtoError;
use hickory_proto::rr::{DNSClass, RecordType};

use crate::answer;
use crate::name_key::NameKey;
use crate::rrl::Class;
use crate::wire::{self, PlainFlags};
use crate::zones::{RrSet, ZoneSet};

/// What a plain query may ask for: data that names nothing, so the answer is the set alone (no
/// additional section, nothing to compress).
const PLAIN_TYPES: [RecordType; 3] = [RecordType::A, RecordType::AAAA, RecordType::TXT];

/// The header's length.
const HEADER_LEN: usize = 12;

/// A query in its plainest shape, as read from its datagram.
#[derive(Debug)]
pub(crate) struct PlainQuery<'w> {
    id: [u8; 2],
    flags: PlainFlags,
    /// The question as the client wrote it: name, type and class.
    question: &'w [u8],
    name: NameKey,
    record_type: RecordType,
    /// The client's OPT record, when it sent one.
    edns: Option<ClientEdns>,
}

/// What a plain query's OPT record says.
#[derive(Debug, Clone, Copy)]
struct ClientEdns {
    /// The UDP payload size it takes.
    payload: u16,
    /// DO: it wants DNSSEC records.
    dnssec_ok: bool,
}

impl<'w> PlainQuery<'w> {
    /// `wire` when it is a plain query: a header with no flag but RD, RA, AD and CD (opcode QUERY,
    /// NOERROR), one question of class IN for a [`PLAIN_TYPES`] type and a plainly spelt name, nothing
    /// else but an OPT record of EDNS version 0 with no option and no flag but DO, and nothing after it.
    pub(crate) fn read(wire: &'w [u8]) -> Option<PlainQuery<'w>> {
        let header: &[u8; HEADER_LEN] = wire.first_chunk()?;
        // QR, opcode, AA and TC clear; then Z and the response code clear (RA, AD and CD as they come).
        if header[2] & 0xFE != 0 || header[3] & 0x4F != 0 {
            return None;
        }
        let count = |at: usize| u16::from_be_bytes([header[at], header[at + 1]]);
        let additional = count(10);
        if count(4) != 1 || count(6) != 0 || count(8) != 0 || additional > 1 {
            return None;
        }
        let body = wire.get(HEADER_LEN..)?;
        let (name, name_len) = NameKey::read_plain(body)?;
        let &[type_high, type_low, class_high, class_low] = body.get(name_len..name_len + 4)?.first_chunk()?;
        let record_type = RecordType::from(u16::from_be_bytes([type_high, type_low]));
        if !PLAIN_TYPES.contains(&record_type) || u16::from_be_bytes([class_high, class_low]) != u16::from(DNSClass::IN)
        {
            return None;
        }
        let (question, rest) = body.split_at_checked(name_len + 4)?;
        let edns = match (additional, rest) {
            (0, []) => None,
            // The root, OPT, the payload size, extended RCODE 0, version 0, DO or not and no other flag,
            // no option.
            (1, &[0, 0, 41, size_high, size_low, 0, 0, flags, 0, 0, 0]) if flags & 0x7F == 0 => Some(ClientEdns {
                payload: u16::from_be_bytes([size_high, size_low]),
                dnssec_ok: flags & 0x80 != 0,
            }),
            _ => return None,
        };
        Some(PlainQuery {
            id: [header[0], header[1]],
            flags: PlainFlags {
                recursion_desired: header[2] & 0x01 != 0,
                checking_disabled: header[3] & 0x10 != 0,
            },
            question,
            name,
            record_type,
            edns,
        })
    }

    /// The largest answer the client takes over UDP.
    pub(crate) fn udp_limit(&self) -> u16 {
        answer::udp_limit_for(self.edns.map(|e| e.payload))
    }

    /// The set the answer is made of, when the zones answer this query plainly: the name's own set of
    /// the type asked, in a zone that is unsigned or for a client that did not set DO.
    pub(crate) fn own_set<'z>(&self, zones: &'z ZoneSet) -> Option<&'z RrSet> {
        let zone = zones.zone_holding(&self.name)?;
        if zone.signing().is_some() && self.edns.is_some_and(|e| e.dnssec_ok) {
            return None;
        }
        answer::own_set(zone, &self.name, self.record_type)
    }

    /// Writes the answer with `set`'s records into `out`, or, without a set, the answer slipped by the
    /// rate limiter (TC set, no records).
    pub(crate) fn write(&self, set: Option<&RrSet>, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        let edns = self.edns.map(|e| (answer::OUR_PAYLOAD, e.dnssec_ok));
        wire::write_plain(out, self.id, self.flags, self.question, set, edns)
    }

    /// What the rate limiter counts the answer as: a positive answer about the name and type asked.
    pub(crate) fn class(&self) -> (Class, Option<NameKey>, RecordType) {
        (Class::Positive, Some(self.name), self.record_type)
    }
}

#[cfg(test)]
mod tests {
    use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query};
    use hickory_proto::rr::rdata::TXT;
    use hickory_proto::rr::{LowerName, RData};

    use super::*;
    use crate::answer::tests::{a, name, set, zones};
    use crate::metrics::Transport;
    use crate::zones::Zones;

    /// The test zone of the answer path, with an IPv6 name and a TXT set too large for 512 bytes.
    fn test_zones() -> Zones {
        let zones = zones();
        {
            let mut all = zones.write();
            let zone = all.zone_for_mut(&LowerName::new(&name("example.org."))).expect("zone");
            zone.put(
                &name("v6.example.org."),
                set(vec![RData::AAAA("2001:db8::1".parse().expect("address"))]),
            );
            let long: Vec<RData> = (0..8)
                .map(|i| RData::TXT(TXT::new(vec![format!("{i}{}", "x".repeat(90))])))
                .collect();
            zone.put(&name("big.example.org."), set(long));
            zone.put(&name("Mixed.example.org."), set(vec![a("192.0.2.9")]));
        }
        zones
    }

    /// What the general path sends for `wire` over UDP, without rate limiting or cookies.
    fn general(zones: &ZoneSet, wire: &[u8]) -> Option<Vec<u8>> {
        let request = Message::from_vec(wire).ok()?;
        let limit = answer::udp_limit(&request);
        let mut response = answer::prepare(zones, &request, Transport::Udp, limit).signed();
        let mut out = Vec::new();
        answer::encode(&mut response, limit, &mut out).ok()?;
        Some(out)
    }

    /// What the plain path sends for `wire` over UDP, when it answers it.
    fn plain(zones: &ZoneSet, wire: &[u8]) -> Option<Vec<u8>> {
        let query = PlainQuery::read(wire)?;
        let set = query.own_set(zones)?;
        let mut out = Vec::new();
        query.write(Some(set), &mut out).ok()?;
        (out.len() <= usize::from(query.udp_limit())).then_some(out)
    }

    /// A query as a client sends it, with RD and CD as given and, with `edns`, an OPT record of that
    /// payload size and DO bit.
    fn request(qname: &str, qtype: RecordType, rd: bool, cd: bool, edns: Option<(u16, bool)>) -> Vec<u8> {
        let mut m = Message::new(0x1234, MessageType::Query, OpCode::Query);
        m.metadata.recursion_desired = rd;
        m.metadata.checking_disabled = cd;
        m.add_query(Query::query(name(qname), qtype));
        if let Some((payload, dnssec_ok)) = edns {
            let mut e = Edns::new();
            e.set_max_payload(payload);
            e.set_dnssec_ok(dnssec_ok);
            m.set_edns(e);
        }
        m.to_vec().expect("a query encodes")
    }

    const NAMES: [&str; 14] = [
        "web.example.org.",
        "WEB.Example.ORG.",
        "v6.example.org.",
        "txt.example.org.",
        "big.example.org.",
        "mixed.example.org.",
        "www.example.org.",
        "a.b.c.example.org.",
        "b.c.example.org.",
        "any.wild.example.org.",
        "ns.sub.example.org.",
        "missing.example.org.",
        "example.org.",
        "web.example.com.",
    ];

    /// Every request of the test zone's names, types and header and EDNS variants.
    fn requests() -> Vec<Vec<u8>> {
        let mut all = Vec::new();
        for qname in NAMES {
            for qtype in [RecordType::A, RecordType::AAAA, RecordType::TXT, RecordType::MX] {
                for (rd, cd) in [(false, false), (true, false), (true, true)] {
                    for edns in [
                        None,
                        Some((512, false)),
                        Some((1232, true)),
                        Some((4096, false)),
                        Some((100, false)),
                    ] {
                        all.push(request(qname, qtype, rd, cd, edns));
                    }
                }
            }
        }
        all
    }

    #[test]
    fn a_plain_answer_is_the_general_paths_byte_for_byte() {
        let zones = test_zones();
        let zones = zones.read();
        let mut answered = 0;
        for wire in requests() {
            let Some(fast) = plain(&zones, &wire) else { continue };
            answered += 1;
            assert_eq!(
                Some(&fast),
                general(&zones, &wire).as_ref(),
                "{:?}",
                Message::from_vec(&wire)
            );
        }
        // web (both spellings), v6, txt, mixed: by type, header and EDNS; big only where it fits.
        assert!(answered >= 5 * 15, "the plain path answered {answered}");
    }

    #[test]
    fn what_the_plain_path_leaves_is_what_it_cannot_answer_alone() {
        let zones = test_zones();
        let zones = zones.read();
        let left = |qname: &str, qtype: RecordType, edns: Option<(u16, bool)>| {
            plain(&zones, &request(qname, qtype, true, false, edns)).is_none()
        };
        assert!(!left("web.example.org.", RecordType::A, None));
        assert!(left("www.example.org.", RecordType::A, None), "a CNAME");
        assert!(left("any.wild.example.org.", RecordType::A, None), "a wildcard's");
        assert!(left("ns.sub.example.org.", RecordType::A, None), "below a delegation");
        assert!(left("missing.example.org.", RecordType::A, None), "NXDOMAIN");
        assert!(left("web.example.org.", RecordType::AAAA, None), "NODATA");
        assert!(left("mail.example.org.", RecordType::MX, None), "another type");
        assert!(left("web.example.com.", RecordType::A, None), "no zone");
        assert!(
            left("big.example.org.", RecordType::TXT, None),
            "too large for 512 bytes"
        );
        assert!(!left("big.example.org.", RecordType::TXT, Some((1232, false))));
        let mut cookie = Message::from_vec(&request(
            "web.example.org.",
            RecordType::A,
            true,
            false,
            Some((1232, false)),
        ))
        .expect("reads");
        if let Some(edns) = cookie.edns.as_mut() {
            edns.options_mut()
                .insert(hickory_proto::rr::rdata::opt::EdnsOption::Unknown(10, vec![7; 8]));
        }
        assert!(
            PlainQuery::read(&cookie.to_vec().expect("encodes")).is_none(),
            "an EDNS option"
        );
    }

    #[test]
    fn requests_mutated_at_random_get_the_general_paths_answer_whenever_the_plain_path_answers() {
        let zones = test_zones();
        let zones = zones.read();
        // Requests the plain path answers, so that a mutation often leaves one it still answers.
        let seeds: Vec<Vec<u8>> = requests().into_iter().filter(|w| plain(&zones, w).is_some()).collect();
        // A fixed xorshift sequence: the same mutations every run.
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let (mut answered, mut tried) = (0, 0);
        for round in 0..40_000 {
            let mut wire = seeds[round % seeds.len()].clone();
            for _ in 0..=(next() % 2) {
                let at = (next() % wire.len() as u64) as usize;
                match next() % 3 {
                    0 => wire[at] ^= 1 << (next() % 8),
                    1 => wire[at] = (next() & 0xFF) as u8,
                    _ => {
                        let _ = wire.pop();
                    }
                }
                if wire.is_empty() {
                    break;
                }
            }
            tried += 1;
            if let Some(fast) = plain(&zones, &wire) {
                answered += 1;
                assert_eq!(Some(fast), general(&zones, &wire), "{wire:02x?}");
            }
        }
        assert!(
            answered > tried / 40,
            "{answered} of {tried} mutated requests answered plainly"
        );
    }

    #[test]
    fn a_slipped_plain_answer_is_the_general_paths_slip() {
        let zones = test_zones();
        let zones = zones.read();
        let wire = request("web.example.org.", RecordType::A, true, false, Some((1232, false)));
        let query = PlainQuery::read(&wire).expect("plain");
        let mut slipped = Vec::new();
        query.write(None, &mut slipped).expect("writes");
        let request = Message::from_vec(&wire).expect("reads");
        let mut message = answer::prepare(&zones, &request, Transport::Udp, 1232).unsigned();
        message.answers.clear();
        message.metadata.truncation = true;
        let mut general = Vec::new();
        answer::encode(&mut answer::Response::from(message), 1232, &mut general).expect("encodes");
        assert_eq!(slipped, general);
        let back = Message::from_vec(&slipped).expect("reads back");
        assert!(back.metadata.truncation && back.metadata.authoritative && back.answers.is_empty());
        assert_eq!(back.queries, request.queries);
        assert!(back.edns.is_some());
    }
}
