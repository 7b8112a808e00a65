//! Answers to ordinary queries from the zones: what an authoritative-only server says (RFC 1034 §4.3.2
//! with RFC 2308's negative answers, RFC 4592's wildcards, RFC 6891's EDNS and RFC 8482's minimal ANY),
//! and the fitting of an answer into the size the client can take.
//!
//! Nothing here recurses, ever: RA is never set, and a name outside the served zones is REFUSED.

use hickory_proto::ProtoError;
use hickory_proto::op::{Edns, Message, Metadata, OpCode, ResponseCode};
use hickory_proto::rr::{DNSClass, LowerName, Name, RData, RecordType};

use crate::dnssec::ZoneSigning;
use crate::dnssec_answer::{AnswerSet, Denial, DnssecRecords, Proof};
use crate::metrics::Transport;
use crate::name_key::NameKey;
use crate::zones::{Node, RrSet, Zone, ZoneSet};

/// The UDP payload size the server offers in its OPT record: the DNS Flag Day 2020 value, which fits in
/// one unfragmented packet on every common path.
pub(crate) const OUR_PAYLOAD: u16 = 1232;

/// The plain DNS limit for UDP answers to clients without EDNS (RFC 1035 §4.2.1).
const PLAIN_UDP: u16 = 512;

/// CNAMEs followed in one answer; a longer in-zone chain stops there (the resolver goes on from the last
/// target itself), as BIND and Knot bound theirs.
const MAX_CHAIN: usize = 8;

/// The answer to `request` as a client reads it: a query (not a transfer) that parsed, received over
/// `transport` by a client that takes `max_size` bytes, signed when the client set DO and the zone is
/// signed, written whole and read back (the listeners [`encode`] what [`prepare`] made instead).
#[cfg(test)]
pub(crate) fn respond(zones: &ZoneSet, request: &Message, transport: Transport, max_size: u16) -> Message {
    prepare(zones, request, transport, max_size).signed().read_back()
}

/// The answer to `request`, received over `transport` by a client that takes `max_size` bytes, not
/// signed yet ([`Answer::signed`] completes it, [`encode`] fits it): the listeners rate limit it first
/// ([`crate::guard`]) and sign only what is sent, so a flood that is dropped costs no signature.
pub(crate) fn prepare<'z>(zones: &'z ZoneSet, request: &Message, _transport: Transport, _max_size: u16) -> Answer<'z> {
    let mut response = Message::new(
        request.metadata.id,
        hickory_proto::op::MessageType::Response,
        request.op_code,
    );
    response.metadata = Metadata::response_from_request(&request.metadata);
    if let Some(edns) = &request.edns {
        let mut ours = Edns::new();
        ours.set_max_payload(OUR_PAYLOAD);
        // RFC 3225 §3: the DO bit is copied; a signed zone's answer then carries its DNSSEC records.
        ours.set_dnssec_ok(edns.flags().dnssec_ok);
        response.edns = Some(ours);
        if edns.version() > 0 {
            // RFC 6891 §6.1.3: a version we do not speak gets BADVERS, and nothing else.
            response.metadata.response_code = ResponseCode::BADVERS;
            return response.into();
        }
    }
    let [query] = request.queries.as_slice() else {
        response.metadata.response_code = match request.op_code {
            OpCode::Query | OpCode::Notify | OpCode::Update => ResponseCode::FormErr,
            _ => ResponseCode::NotImp,
        };
        return response.into();
    };
    match request.op_code {
        OpCode::Query => response.queries.push(query.clone()),
        // The server is the primary and takes no updates: as BIND and Knot, NOTAUTH for a zone not
        // served; for one served, REFUSED for UPDATE (BIND: policy) and NOTAUTH for NOTIFY (Knot: we
        // are no secondary to act on it).
        op @ (OpCode::Notify | OpCode::Update) => {
            response.queries.push(query.clone());
            let served = zones.zone(&LowerName::new(query.name())).is_some();
            response.metadata.response_code = match op {
                OpCode::Update if served => ResponseCode::Refused,
                _ => ResponseCode::NotAuth,
            };
            return response.into();
        }
        // STATUS, IQUERY (obsolete), DSO and unassigned codes: NOTIMP with no sections, as BIND.
        _ => {
            response.metadata.response_code = ResponseCode::NotImp;
            return response.into();
        }
    }
    match query.query_type() {
        // Types that only live in the additional section, or are never asked for.
        RecordType::OPT | RecordType::TSIG => {
            response.metadata.response_code = ResponseCode::FormErr;
            return response.into();
        }
        // Only reached when the transfer side gave the request back: refuse, as a server without a
        // transfer for the asker does.
        RecordType::AXFR | RecordType::IXFR => {
            response.metadata.response_code = ResponseCode::Refused;
            return response.into();
        }
        _ => {}
    }
    // A name hickory read always fits a key: `None` only as a zone that does not hold it would be.
    let found = NameKey::new(query.name()).and_then(|name| Some((zones.zone_holding(&name)?, name)));
    let (zone, name) = match (query.query_class(), found) {
        (DNSClass::IN, Some(found)) => found,
        _ => {
            response.metadata.response_code = ResponseCode::Refused;
            return response.into();
        }
    };
    response.metadata.authoritative = true;
    let mut proof = Proof::default();
    resolve(zone, query.name(), name, query.query_type(), &mut response, &mut proof);
    let dnssec_ok = request.edns.as_ref().is_some_and(|e| e.flags().dnssec_ok);
    let dnssec = match (dnssec_ok, zone.signing()) {
        (true, Some(signing)) => Some(Pending { zone, signing, proof }),
        _ => None,
    };
    Answer {
        message: response,
        dnssec,
    }
}

/// An answer built but not signed yet: the message as an unsigned server would send it, and, when the
/// client set DO and the zone is signed, what signing it needs (borrowed from the zones, so it lives no
/// longer than the read lock).
#[derive(Debug)]
pub(crate) struct Answer<'z> {
    message: Message,
    dnssec: Option<Pending<'z>>,
}

/// What signing an answer needs: the zone, its signer and what the answer's walk noted.
#[derive(Debug)]
struct Pending<'z> {
    zone: &'z Zone,
    signing: &'z ZoneSigning,
    proof: Proof<'z>,
}

impl<'z> Answer<'z> {
    /// The answer as built, before any DNSSEC record is added: what rate limiting classifies.
    pub(crate) fn message(&self) -> &Message {
        &self.message
    }

    /// What the walk noted for signing, when the answer is to be signed.
    #[cfg(test)]
    pub(crate) fn proof(&self) -> Option<&Proof<'_>> {
        self.dnssec.as_ref().map(|p| &p.proof)
    }

    /// The answer without its DNSSEC records: for one that is slipped rather than sent.
    pub(crate) fn unsigned(self) -> Message {
        self.message
    }

    /// The answer to send, with its signatures and denial when the client asked for them (all made
    /// when the zone was written: they are written from where the zone keeps them).
    pub(crate) fn signed(self) -> Response<'z> {
        let dnssec = match &self.dnssec {
            Some(p) => crate::dnssec_answer::dnssec_records(p.zone, p.signing, &p.proof, &self.message),
            None => DnssecRecords::default(),
        };
        Response {
            message: self.message,
            dnssec,
        }
    }
}

/// An answer to send: the message as built, and the DNSSEC records [`encode`] writes into it (none
/// unless the client set DO and the zone is signed), borrowed from the snapshot it was answered from.
#[derive(Debug)]
pub(crate) struct Response<'z> {
    pub(crate) message: Message,
    dnssec: DnssecRecords<'z>,
}

impl Response<'_> {
    /// The response as a client reads it: written whole and read back.
    #[cfg(test)]
    pub(crate) fn read_back(mut self) -> Message {
        let mut wire = Vec::new();
        encode(&mut self, u16::MAX, &mut wire).expect("an answer encodes");
        Message::from_vec(&wire).expect("an answer reads back")
    }
}

impl From<Message> for Response<'_> {
    /// A message sent as it is: a refusal, an error, a slipped answer.
    fn from(message: Message) -> Self {
        Response {
            message,
            dnssec: DnssecRecords::default(),
        }
    }
}

impl From<Message> for Answer<'_> {
    /// A message that needs no signing (a refusal, an error).
    fn from(message: Message) -> Self {
        Answer { message, dnssec: None }
    }
}

/// Where a name sits in a zone.
enum Place<'z> {
    /// The name is at or below a delegation point other than the apex: the node holding the NS set.
    Cut(&'z Node),
    /// The name exists (with data or as an empty non-terminal).
    Node(&'z Node),
    /// The name does not exist, but the wildcard at its closest encloser does (RFC 4592 §3.3.1): the
    /// wildcard's node and the labels of the next closer name (the encloser's and one more).
    Wildcard(&'z Node, u8),
    /// The name does not exist and nothing synthesises it.
    Nothing,
}

/// Walks from `name` up to the apex once: the exact node or closest encloser, and the highest delegation
/// point on the way (the zone's authority ends at the first cut below the apex). Each name on the way is a
/// suffix of `name`'s buffer, none made. Labels are counted as hickory counts them (a leading `*` left
/// out), as the signatures made for the answer count them.
fn place<'z>(zone: &'z Zone, name: &NameKey, query_type: RecordType) -> Place<'z> {
    let apex_labels = usize::from(zone.lower_origin().num_labels());
    let mut exact = None;
    // The closest encloser below the apex, as the labels of `name` above it.
    let mut encloser = None;
    let mut cut = None;
    let mut skip = 0;
    loop {
        let current = name.suffix(skip);
        if current.hickory_count() <= apex_labels {
            break;
        }
        if let Some(node) = zone.node_at(current) {
            if encloser.is_none() && exact.is_none() {
                if skip == 0 {
                    exact = Some(node);
                } else {
                    encloser = Some(skip);
                }
            }
            // A DS query at the cut itself is the parent side's (RFC 4035 §3.1.4.1): not a referral.
            let ds_at_cut = query_type == RecordType::DS && skip == 0;
            if node.rrset(RecordType::NS).is_some() && !ds_at_cut {
                cut = Some(node);
            }
        }
        // The name above has one label fewer than this one in full; at the apex or above it, the walk ends.
        if current.count().saturating_sub(1) <= apex_labels {
            break;
        }
        skip += 1;
    }
    if let Some(cut) = cut {
        return Place::Cut(cut);
    }
    let apex_skip = name.labels().saturating_sub(zone.lower_origin().iter().len());
    if let Some(found) = exact.or_else(|| (apex_skip == 0).then(|| zone.node_at(name.suffix(0))).flatten()) {
        return Place::Node(found);
    }
    let encloser = name.suffix(encloser.unwrap_or(apex_skip));
    let next_closer = u8::try_from(encloser.hickory_count() + 1).unwrap_or(u8::MAX);
    let Some(source) = NameKey::wildcard_above(encloser) else {
        return Place::Nothing;
    };
    match zone.node_at(source.suffix(0)) {
        Some(found) => Place::Wildcard(found, next_closer),
        None => Place::Nothing,
    }
}

/// The set `name`'s answer to `record_type` is made of when it is `name`'s own: the name exists in `zone`
/// as itself (not by a wildcard, not at or below a delegation) and holds that type. What the plain path
/// ([`crate::plain`]) answers alone; `None` leaves the question to [`prepare`].
pub(crate) fn own_set<'z>(zone: &'z Zone, name: &NameKey, record_type: RecordType) -> Option<&'z RrSet> {
    match place(zone, name, record_type) {
        Place::Node(node) => node.rrset(record_type),
        Place::Cut(_) | Place::Wildcard(..) | Place::Nothing => None,
    }
}

/// Fills the answer to `qname`/`query_type` in `zone`, following in-zone CNAMEs, and notes in `proof`
/// what signing it needs (so a DO answer walks the tree once).
fn resolve<'z>(
    zone: &'z Zone,
    qname: &Name,
    lower: NameKey,
    query_type: RecordType,
    response: &mut Message,
    proof: &mut Proof<'z>,
) {
    let mut owner = qname.clone();
    let mut lower = lower;
    let mut seen: Vec<NameKey> = Vec::new();
    for step in 0..MAX_CHAIN {
        let (node, next_closer) = match place(zone, &lower, query_type) {
            Place::Cut(cut) if step == 0 => {
                referral(zone, cut, response);
                proof.deny(Denial::Unsigned(cut));
                return;
            }
            // A CNAME into a delegated name: the answer stops at the CNAME, the resolver asks on.
            Place::Cut(_) => return,
            Place::Nothing => {
                response.metadata.response_code = ResponseCode::NXDomain;
                response.authorities.push(zone.negative_soa());
                proof.deny(Denial::NoName(owner));
                return;
            }
            // An exact name is answered under the question's spelling (and compresses against it); a
            // wildcard's records are owned by the name asked for (RFC 4592 §2.1.1).
            Place::Node(found) => (found, None),
            Place::Wildcard(found, next_closer) => (found, Some(next_closer)),
        };
        let mut answer = |set: &RrSet, response: &mut Message| {
            let before = response.answers.len();
            response.answers.extend(set.records(owner.clone()));
            proof.answered(AnswerSet {
                records: response.answers.len() - before,
                signed_as: node,
                record_type: set.record_type,
                next_closer,
            });
        };
        if query_type == RecordType::ANY {
            // RFC 8482 §4.1: one record set of those present is enough.
            match node.rrsets().first() {
                Some(set) => answer(set, response),
                None => {
                    response.authorities.push(zone.negative_soa());
                    proof.deny(Denial::NoType(owner, node));
                }
            }
            return;
        }
        if let Some(set) = node.rrset(query_type) {
            answer(set, response);
            additional_addresses(zone, set.data.naming().iter(), response);
            return;
        }
        let Some(cname) = node.rrset(RecordType::CNAME) else {
            // NODATA: the name exists (perhaps only as an empty non-terminal), the type does not.
            response.authorities.push(zone.negative_soa());
            proof.deny(Denial::NoType(owner, node));
            return;
        };
        answer(cname, response);
        let naming = cname.data.naming();
        let Some(RData::CNAME(target)) = naming.first() else {
            return;
        };
        let Some(target_lower) = NameKey::new(&target.0) else {
            return;
        };
        if !target_lower.is_within(zone.lower_origin()) || seen.contains(&target_lower) || target_lower == lower {
            return;
        }
        seen.push(std::mem::replace(&mut lower, target_lower));
        owner = target.0.clone();
    }
}

/// A referral to the delegation at `cut`: not authoritative, the NS set in authority and the in-zone
/// addresses of its names (glue) in additional.
fn referral(zone: &Zone, cut: &Node, response: &mut Message) {
    response.metadata.authoritative = false;
    let Some(ns) = cut.rrset(RecordType::NS) else { return };
    response.authorities.extend(ns.records(cut.name().into_owned()));
    add_addresses(zone, ns.data.naming().iter().filter_map(target_of), response);
}

/// Addresses of in-zone MX, SRV and NS targets, so the client need not ask for them (RFC 1035 §3.3.9).
fn additional_addresses<'a>(zone: &Zone, data: impl Iterator<Item = &'a RData>, response: &mut Message) {
    add_addresses(zone, data.filter_map(target_of), response);
}

fn target_of(data: &RData) -> Option<&Name> {
    match data {
        RData::MX(mx) => Some(&mx.exchange),
        RData::SRV(srv) => Some(&srv.target),
        RData::NS(ns) => Some(&ns.0),
        _ => None,
    }
}

fn add_addresses<'a>(zone: &Zone, targets: impl Iterator<Item = &'a Name>, response: &mut Message) {
    for target in targets {
        let lower = LowerName::new(target);
        if !zone.lower_origin().zone_of(&lower) {
            continue;
        }
        let Some(node) = zone.node(&lower) else { continue };
        for record_type in [RecordType::A, RecordType::AAAA] {
            let Some(set) = node.rrset(record_type) else { continue };
            let present = response
                .additionals
                .iter()
                .any(|r| r.record_type() == record_type && LowerName::new(&r.name) == lower);
            if !present {
                response.additionals.extend(set.records(node.name().into_owned()));
            }
        }
    }
}

/// How an answer was fitted into the client's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fit {
    /// Sent whole.
    Whole,
    /// The additional section was left out (RFC 2181 §9: no TC for that alone).
    Trimmed,
    /// Header and question only, TC set: the client asks again over TCP.
    Truncated,
}

/// The largest answer `request`'s sender takes over UDP: 512 without EDNS, else the lesser of its payload
/// size and ours (RFC 6891 §6.2.5).
pub(crate) fn udp_limit(request: &Message) -> u16 {
    udp_limit_for(request.edns.as_ref().map(Edns::max_payload))
}

/// The largest UDP answer to a client that offered `payload` in its OPT record (`None`: it sent none).
pub(crate) fn udp_limit_for(payload: Option<u16>) -> u16 {
    payload.map_or(PLAIN_UDP, |p| p.clamp(PLAIN_UDP, OUR_PAYLOAD))
}

/// Encodes `response` into `out` (cleared first) within `max_size` bytes: whole if it fits, else without
/// its additional section, else as header, question and OPT with TC set.
pub(crate) fn encode(response: &mut Response<'_>, max_size: u16, out: &mut Vec<u8>) -> Result<Fit, ProtoError> {
    let max = usize::from(max_size);
    let Response { message, dnssec } = response;
    crate::wire::write(message, dnssec, out)?;
    if out.len() <= max {
        return Ok(Fit::Whole);
    }
    if !message.additionals.is_empty() {
        message.additionals.clear();
        // Glue of a referral is needed to follow it (RFC 9471): leaving it out makes the answer truncated.
        let referral = !message.metadata.authoritative && !message.authorities.is_empty();
        message.metadata.truncation = referral;
        crate::wire::write(message, dnssec, out)?;
        if out.len() <= max {
            return Ok(if referral { Fit::Truncated } else { Fit::Trimmed });
        }
    }
    message.answers.clear();
    message.authorities.clear();
    message.additionals.clear();
    message.metadata.truncation = true;
    *dnssec = DnssecRecords::default();
    crate::wire::write(message, dnssec, out)?;
    Ok(Fit::Truncated)
}

/// Header flags of a request whose body did not parse, read straight from its first 12 bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawHeader {
    id: u16,
    /// The opcode bits and RD, as the request had them.
    flags: u8,
    /// QR: the packet is a response, never answered.
    pub(crate) is_response: bool,
}

impl RawHeader {
    /// The header of `wire`, if it has one.
    pub(crate) fn read(wire: &[u8]) -> Option<RawHeader> {
        let header = wire.get(..12)?;
        Some(RawHeader {
            id: u16::from_be_bytes([header[0], header[1]]),
            flags: header[2] & 0x79,
            is_response: header[2] & 0x80 != 0,
        })
    }

    /// FORMERR for this header: ID, opcode and RD echoed, no sections (the body is what we could not read).
    pub(crate) fn format_error(self, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(&self.id.to_be_bytes());
        out.push(0x80 | self.flags);
        out.push(ResponseCode::FormErr.low());
        out.extend_from_slice(&[0; 8]);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use hickory_proto::op::{MessageType, Query};
    use hickory_proto::rr::Record;
    use hickory_proto::rr::rdata::{A, CNAME, MX, NS, TXT};

    use super::*;
    use crate::config::Limits;
    use crate::zones::tests::zone_config;
    use crate::zones::{RrSet, SetOrigin, Zones};

    /// Spelt as written (`from_str` would lower-case it).
    pub(crate) fn name(s: &str) -> Name {
        Name::from_ascii(s).expect("test name")
    }

    pub(crate) fn set(data: Vec<RData>) -> RrSet {
        RrSet {
            record_type: data[0].record_type(),
            ttl: 60,
            data: data.into(),
            origin: SetOrigin::Managed { spelt: None },
        }
    }

    pub(crate) fn a(ip: &str) -> RData {
        RData::A(A(ip.parse().expect("test address")))
    }

    pub(crate) fn cname(target: &str) -> RData {
        RData::CNAME(CNAME(name(target)))
    }

    /// example.org. with web (A), www (CNAME web), loop1/loop2 (a CNAME loop), out (CNAME outside),
    /// deep a.b.c (A, so b.c and c are empty non-terminals), *.wild (A), sub (NS, delegated, with glue
    /// ns.sub), mail (MX to mx), mx (A), txt (TXT).
    pub(crate) fn zones() -> Zones {
        let zones = Zones::new(&[zone_config("example.org.")], 7, Limits::default());
        {
            let mut all = zones.write();
            let zone = all.zone_for_mut(&LowerName::new(&name("example.org."))).expect("zone");
            let mut put = |n: &str, data: Vec<RData>| {
                zone.put(&name(n), set(data));
            };
            put("web.example.org.", vec![a("192.0.2.1"), a("192.0.2.2")]);
            put("www.example.org.", vec![cname("web.example.org.")]);
            put("chain.example.org.", vec![cname("www.example.org.")]);
            put("loop1.example.org.", vec![cname("loop2.example.org.")]);
            put("loop2.example.org.", vec![cname("loop1.example.org.")]);
            put("out.example.org.", vec![cname("web.example.com.")]);
            put("dangling.example.org.", vec![cname("missing.example.org.")]);
            put("a.b.c.example.org.", vec![a("192.0.2.3")]);
            put("*.wild.example.org.", vec![a("192.0.2.4")]);
            put("x.y.wild.example.org.", vec![a("192.0.2.5")]);
            put("sub.example.org.", vec![RData::NS(NS(name("ns.sub.example.org.")))]);
            put("ns.sub.example.org.", vec![a("192.0.2.6")]);
            put(
                "mail.example.org.",
                vec![RData::MX(MX::new(10, name("mx.example.org.")))],
            );
            put("mx.example.org.", vec![a("192.0.2.7")]);
            put("txt.example.org.", vec![RData::TXT(TXT::new(vec!["hello".into()]))]);
        }
        zones
    }

    fn query(qname: &str, qtype: RecordType) -> Message {
        let mut m = Message::new(4242, MessageType::Query, OpCode::Query);
        m.metadata.recursion_desired = true;
        m.add_query(Query::query(name(qname), qtype));
        m
    }

    fn ask(qname: &str, qtype: RecordType) -> Message {
        respond(&zones().read(), &query(qname, qtype), Transport::Udp, 512)
    }

    fn rcode(qname: &str, qtype: RecordType) -> ResponseCode {
        ask(qname, qtype).response_code
    }

    fn texts(records: &[Record]) -> Vec<String> {
        records
            .iter()
            .map(|r| format!("{} {} {}", r.name, r.record_type(), r.data))
            .collect()
    }

    #[test]
    fn a_hit_is_authoritative_with_rd_copied_and_never_ra() {
        let r = ask("web.example.org.", RecordType::A);
        assert_eq!(r.metadata.id, 4242);
        assert_eq!(r.metadata.message_type, MessageType::Response);
        assert!(r.metadata.authoritative && r.metadata.recursion_desired && !r.metadata.recursion_available);
        assert_eq!(r.response_code, ResponseCode::NoError);
        assert_eq!(
            texts(&r.answers),
            ["web.example.org. A 192.0.2.1", "web.example.org. A 192.0.2.2"]
        );
        assert!(r.authorities.is_empty());
    }

    #[test]
    fn names_match_in_any_case_and_the_question_is_echoed_as_asked() {
        let r = ask("WeB.Example.ORG.", RecordType::A);
        assert_eq!(r.queries[0].name().to_string(), "WeB.Example.ORG.");
        assert_eq!(r.answers.len(), 2);
        assert_eq!(r.answers[0].name.to_string(), "WeB.Example.ORG.");
    }

    #[test]
    fn nxdomain_and_nodata_carry_the_negative_soa() {
        let nx = ask("nope.example.org.", RecordType::A);
        assert_eq!(nx.response_code, ResponseCode::NXDomain);
        assert!(nx.metadata.authoritative && nx.answers.is_empty());
        assert_eq!(nx.authorities.len(), 1);
        assert_eq!(nx.authorities[0].record_type(), RecordType::SOA);
        assert_eq!(nx.authorities[0].ttl, 30, "min(the SOA TTL, minimum 30)");
        let nodata = ask("web.example.org.", RecordType::AAAA);
        assert_eq!(nodata.response_code, ResponseCode::NoError);
        assert!(nodata.answers.is_empty());
        assert_eq!(nodata.authorities[0].record_type(), RecordType::SOA);
    }

    #[test]
    fn empty_non_terminals_are_nodata() {
        for ent in ["b.c.example.org.", "c.example.org."] {
            let r = ask(ent, RecordType::A);
            assert_eq!(r.response_code, ResponseCode::NoError, "{ent}");
            assert!(r.answers.is_empty());
            assert_eq!(r.authorities[0].record_type(), RecordType::SOA);
        }
        assert_eq!(rcode("z.c.example.org.", RecordType::A), ResponseCode::NXDomain);
    }

    #[test]
    fn wildcards_synthesise_under_the_name_asked_but_not_where_names_exist() {
        let r = ask("anything.wild.example.org.", RecordType::A);
        assert_eq!(texts(&r.answers), ["anything.wild.example.org. A 192.0.2.4"]);
        assert!(r.metadata.authoritative);
        // Only the closest encloser's wildcard: two labels below `wild` the encloser is still `wild`.
        let deep = ask("a.b.wild.example.org.", RecordType::A);
        assert_eq!(texts(&deep.answers), ["a.b.wild.example.org. A 192.0.2.4"]);
        // `y.wild` exists as an empty non-terminal: it is NODATA, and names below it use `*.y.wild`.
        let ent = ask("y.wild.example.org.", RecordType::A);
        assert!(ent.answers.is_empty() && ent.response_code == ResponseCode::NoError);
        assert_eq!(rcode("q.y.wild.example.org.", RecordType::A), ResponseCode::NXDomain);
        // The wildcard's NODATA.
        let nodata = ask("other.wild.example.org.", RecordType::TXT);
        assert_eq!(nodata.response_code, ResponseCode::NoError);
        assert!(nodata.answers.is_empty());
        // The wildcard node itself answers when asked by name.
        assert_eq!(ask("*.wild.example.org.", RecordType::A).answers.len(), 1);
    }

    #[test]
    fn cname_chains_are_followed_in_zone_and_stop_outside_or_at_a_loop() {
        let r = ask("chain.example.org.", RecordType::A);
        assert_eq!(
            texts(&r.answers),
            [
                "chain.example.org. CNAME www.example.org.",
                "www.example.org. CNAME web.example.org.",
                "web.example.org. A 192.0.2.1",
                "web.example.org. A 192.0.2.2",
            ]
        );
        let cname_asked = ask("www.example.org.", RecordType::CNAME);
        assert_eq!(texts(&cname_asked.answers), ["www.example.org. CNAME web.example.org."]);
        let out = ask("out.example.org.", RecordType::A);
        assert_eq!(texts(&out.answers), ["out.example.org. CNAME web.example.com."]);
        assert_eq!(out.response_code, ResponseCode::NoError);
        let lp = ask("loop1.example.org.", RecordType::A);
        assert_eq!(lp.answers.len(), 2, "{:?}", texts(&lp.answers));
        let dangling = ask("dangling.example.org.", RecordType::A);
        assert_eq!(dangling.answers.len(), 1);
        assert_eq!(
            dangling.response_code,
            ResponseCode::NXDomain,
            "RFC 6604: the last name's code"
        );
    }

    #[test]
    fn delegations_get_a_referral_with_glue() {
        for qname in ["sub.example.org.", "host.sub.example.org.", "ns.sub.example.org."] {
            let r = ask(qname, RecordType::A);
            assert!(!r.metadata.authoritative, "{qname}");
            assert_eq!(r.response_code, ResponseCode::NoError);
            assert!(r.answers.is_empty());
            assert_eq!(texts(&r.authorities), ["sub.example.org. NS ns.sub.example.org."]);
            assert_eq!(texts(&r.additionals), ["ns.sub.example.org. A 192.0.2.6"]);
        }
        let apex_ns = ask("example.org.", RecordType::NS);
        assert!(apex_ns.metadata.authoritative);
        assert_eq!(texts(&apex_ns.answers), ["example.org. NS ns1.example.org."]);
        assert_eq!(texts(&apex_ns.additionals), ["ns1.example.org. A 192.0.2.53"]);
    }

    #[test]
    fn mx_targets_in_the_zone_come_with_their_addresses() {
        let r = ask("mail.example.org.", RecordType::MX);
        assert_eq!(texts(&r.additionals), ["mx.example.org. A 192.0.2.7"]);
    }

    #[test]
    fn any_gets_one_record_set() {
        let r = ask("example.org.", RecordType::ANY);
        let types: std::collections::HashSet<RecordType> = r.answers.iter().map(Record::record_type).collect();
        assert_eq!(types.len(), 1, "{:?}", texts(&r.answers));
        assert_eq!(rcode("nope.example.org.", RecordType::ANY), ResponseCode::NXDomain);
    }

    #[test]
    fn outside_the_zones_other_classes_and_opcodes_are_refused_or_not_implemented() {
        let r = ask("example.com.", RecordType::A);
        assert_eq!(r.response_code, ResponseCode::Refused);
        assert!(!r.metadata.authoritative);
        let mut chaos = query("version.example.org.", RecordType::TXT);
        chaos.queries[0].set_query_class(DNSClass::CH);
        assert_eq!(
            respond(&zones().read(), &chaos, Transport::Udp, 512).response_code,
            ResponseCode::Refused
        );
        // What BIND 9.18 and Knot 3.2 answer (probed with hand-made packets).
        for (op, zone, code) in [
            (OpCode::Update, "example.org.", ResponseCode::Refused),
            (OpCode::Update, "example.com.", ResponseCode::NotAuth),
            (OpCode::Notify, "example.org.", ResponseCode::NotAuth),
            (OpCode::Notify, "example.com.", ResponseCode::NotAuth),
            (OpCode::Status, "example.org.", ResponseCode::NotImp),
            (OpCode::Unknown(3), "example.org.", ResponseCode::NotImp),
        ] {
            let mut m = query(zone, RecordType::SOA);
            m.metadata.op_code = op;
            let r = respond(&zones().read(), &m, Transport::Udp, 512);
            assert_eq!(r.response_code, code, "{op:?} {zone}");
            assert_eq!(r.op_code, op);
            assert!(!r.metadata.authoritative && r.answers.is_empty());
        }
    }

    #[test]
    fn not_exactly_one_question_is_a_format_error() {
        let mut none = query("web.example.org.", RecordType::A);
        none.queries.clear();
        assert_eq!(
            respond(&zones().read(), &none, Transport::Udp, 512).response_code,
            ResponseCode::FormErr
        );
        let mut two = query("web.example.org.", RecordType::A);
        two.add_query(Query::query(name("www.example.org."), RecordType::A));
        let r = respond(&zones().read(), &two, Transport::Udp, 512);
        assert_eq!(r.response_code, ResponseCode::FormErr);
        assert!(r.answers.is_empty());
    }

    #[test]
    fn edns_is_answered_with_our_size_and_unknown_versions_get_badvers() {
        let mut m = query("web.example.org.", RecordType::A);
        let mut edns = Edns::new();
        edns.set_max_payload(4096);
        edns.set_dnssec_ok(true);
        m.set_edns(edns.clone());
        let r = respond(&zones().read(), &m, Transport::Tcp, u16::MAX);
        let ours = r.edns.as_ref().expect("OPT in the answer");
        assert_eq!(ours.max_payload(), OUR_PAYLOAD);
        assert!(ours.flags().dnssec_ok);
        assert_eq!(udp_limit(&m), OUR_PAYLOAD);
        assert!(
            ask("web.example.org.", RecordType::A).edns.is_none(),
            "no OPT without one asked"
        );
        edns.set_version(1);
        m.set_edns(edns);
        let bad = respond(&zones().read(), &m, Transport::Tcp, u16::MAX);
        // Read back, 16 is BADSIG, BADVERS's TSIG twin.
        assert_eq!(u16::from(bad.response_code), u16::from(ResponseCode::BADVERS));
        let mut wire = Vec::new();
        encode(&mut Response::from(bad), 512, &mut wire).expect("encodes");
        let back = Message::from_vec(&wire).expect("decodes");
        // 16 reads back as BADSIG, its TSIG twin: the code is what travels, its high bits in the OPT.
        assert_eq!(u16::from(back.response_code), 16);
    }

    #[test]
    fn answers_too_big_for_udp_are_truncated_to_the_question() {
        let zones = zones();
        {
            let mut all = zones.write();
            let zone = all
                .zone_for_mut(&LowerName::new(&name("big.example.org.")))
                .expect("zone");
            let many = (0..100).map(|i| a(&format!("10.0.0.{i}"))).collect();
            zone.put(&name("big.example.org."), set(many));
        }
        let m = query("BIG.example.org.", RecordType::A);
        let set = zones.read();
        let mut r = prepare(&set, &m, Transport::Udp, 512).signed();
        let mut wire = Vec::new();
        assert_eq!(
            encode(&mut r, udp_limit(&m), &mut wire).expect("encodes"),
            Fit::Truncated
        );
        assert!(wire.len() <= 512);
        let back = Message::from_vec(&wire).expect("decodes");
        assert!(back.metadata.truncation && back.metadata.authoritative);
        assert_eq!(back.queries[0].name().to_string(), "BIG.example.org.");
        assert!(back.answers.is_empty());
        let mut whole = prepare(&set, &m, Transport::Udp, 512).signed();
        assert_eq!(encode(&mut whole, u16::MAX, &mut wire).expect("encodes"), Fit::Whole);
        assert_eq!(Message::from_vec(&wire).expect("decodes").answers.len(), 100);
    }

    #[test]
    fn a_header_alone_gets_a_format_error_echoing_id_opcode_and_rd() {
        let header = RawHeader::read(&[0xab, 0xcd, 0x01 | (5 << 3), 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xff]).expect("header");
        assert!(!header.is_response);
        let mut out = Vec::new();
        header.format_error(&mut out);
        let m = Message::from_vec(&out).expect("decodes");
        assert_eq!(m.metadata.id, 0xabcd);
        assert_eq!(m.message_type, MessageType::Response);
        assert_eq!(m.op_code, OpCode::Update);
        assert!(m.recursion_desired);
        assert_eq!(m.response_code, ResponseCode::FormErr);
        assert!(RawHeader::read(&[0; 11]).is_none());
    }
}
