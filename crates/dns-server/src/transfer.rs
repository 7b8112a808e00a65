//! Zone transfers to the configured secondaries (AXFR, RFC 5936; IXFR, RFC 1995), TSIG-signed requests of
//! any kind (RFC 8945), and the NOTIFY loop ([`crate::notify`]) that tells secondaries to come and fetch.
//!
//! A transfer is answered from one snapshot: the records are cloned under the zones' read lock, the lock is
//! dropped, and only then are the messages encoded, signed and written, so a slow secondary never holds up
//! a write and a write never tears a transfer. A signed zone goes out with its signatures and an NSEC
//! chain ([`crate::signed_transfer`]); its IXFR carries the changes of the signatures and the chain
//! beside the data's.

use std::net::SocketAddr;
use std::sync::Arc;

use extdns_dns_wire::{Refusal, RequestError, ResponseSigner, SignedRequest, unix_now, verify_request};
use hickory_proto::op::{Header, HeaderCounts, Message, MessageType, Metadata, OpCode, ResponseCode};
use hickory_proto::rr::{LowerName, RData, Record, RecordType};
use hickory_proto::serialize::binary::{BinEncodable, BinEncoder};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use crate::config::ServerConfig;
use crate::metrics::{KindLabels, ReasonLabels, ServerMetrics, Transport};
use crate::signed_transfer::SignedZone;
use crate::zones::{Diff, Zone, Zones};

/// Records are packed into transfer messages until one passes this size (RFC 5936 §2.2 leaves it to us;
/// BIND and Knot use similar sizes). Below the 64 KiB TCP maximum with room for the largest record.
const MESSAGE_SIZE: usize = 16 * 1024;

/// Whether `request` is handled here rather than by [`crate::answer`]: a transfer, or any signed request.
pub(crate) fn handles(request: &Message) -> bool {
    request.signature.is_some() || transfer_type(request).is_some()
}

/// The transfer `request` asks for. Only a request with one question is a transfer: one with several is
/// a FORMERR of the query path, which echoes no question (echoing them all could outgrow the datagram).
fn transfer_type(request: &Message) -> Option<RecordType> {
    match request.queries.as_slice() {
        [query] => Some(query.query_type()).filter(|t| matches!(t, RecordType::AXFR | RecordType::IXFR)),
        _ => None,
    }
}

/// Transfers, signed requests and NOTIFY, over the served zones.
#[derive(Debug)]
pub(crate) struct Transfers {
    zones: Arc<Zones>,
    config: Arc<ServerConfig>,
    metrics: ServerMetrics,
}

/// A refused transfer: the answer's response code and the metric's reason.
struct Denied {
    rcode: ResponseCode,
    reason: &'static str,
}

impl Denied {
    fn new(rcode: ResponseCode, reason: &'static str) -> Denied {
        Denied { rcode, reason }
    }
}

/// A transfer's content, copied under the read lock.
enum Snapshot {
    /// The records to send.
    Records(Vec<Record>),
    /// A signed zone, whose NSEC chain is made and signed once the lock is dropped.
    Signed(Box<SignedZone>),
}

impl Transfers {
    pub(crate) fn new(zones: Arc<Zones>, config: Arc<ServerConfig>, metrics: ServerMetrics) -> Transfers {
        Transfers { zones, config, metrics }
    }

    /// Answers a request [`handles`] accepts over TCP: writes each message of the answer, prefixed by its
    /// length (RFC 7766).
    pub(crate) async fn serve_tcp<W: AsyncWrite + Unpin + Send>(
        &self,
        wire: &[u8],
        request: &Message,
        peer: SocketAddr,
        out: &mut W,
    ) -> std::io::Result<()> {
        // Built whole before the first write: the zones' lock is never held across an await.
        let messages = self.respond(wire, request, peer, Transport::Tcp, u16::MAX);
        // A secondary that stops reading would hold its connection slot for good: each message must leave
        // within the idle time, as a query's answer must.
        let stall = self.config.limits.tcp_idle;
        let stalled = || std::io::Error::new(std::io::ErrorKind::TimedOut, "the client stopped reading the answer");
        let mut framed = Vec::new();
        for message in messages {
            let len = u16::try_from(message.len()).map_err(|_| std::io::Error::other("a message over 64 KiB"))?;
            framed.clear();
            framed.extend_from_slice(&len.to_be_bytes());
            framed.extend_from_slice(&message);
            tokio::time::timeout(stall, out.write_all(&framed))
                .await
                .map_err(|_| stalled())??;
        }
        tokio::time::timeout(stall, out.flush()).await.map_err(|_| stalled())?
    }

    /// Answers a request [`handles`] accepts over UDP: the one message to send, if any.
    pub(crate) fn respond_udp(
        &self,
        wire: &[u8],
        request: &Message,
        peer: SocketAddr,
        max_size: u16,
    ) -> Option<Vec<u8>> {
        self.respond(wire, request, peer, Transport::Udp, max_size)
            .into_iter()
            .next()
    }

    /// Sends NOTIFY to the secondaries after every change, until `shutdown`.
    pub(crate) async fn notify(self: Arc<Self>, shutdown: CancellationToken) {
        crate::notify::run(self.zones.clone(), self.config.clone(), self.metrics.clone(), shutdown).await;
    }

    /// The messages answering `request`: verified and signed when it is signed, refused as the RFCs say
    /// otherwise. Empty only when a signature cannot be made (logged).
    fn respond(
        &self,
        wire: &[u8],
        request: &Message,
        peer: SocketAddr,
        transport: Transport,
        max_size: u16,
    ) -> Vec<Vec<u8>> {
        let now = unix_now();
        let signed = match request.signature.is_some() {
            true => match verify_request(&self.config.keys, wire, now) {
                Ok(signed) => Some(signed),
                Err(refusal) => return self.refuse_signature(request, peer, &refusal, now),
            },
            false => None,
        };
        let mut signer = signed.as_ref().map(SignedRequest::signer);
        let overhead = signer.as_ref().map_or(0, ResponseSigner::overhead);
        let budget = usize::from(max_size).saturating_sub(overhead);
        let mut messages = match transfer_type(request) {
            None => vec![self.answer(request, transport, budget)],
            Some(qtype) => match self.transfer(request, qtype, peer, signed.as_ref(), transport, budget) {
                Ok(messages) => messages,
                Err(denied) => {
                    tracing::warn!(%peer, zone = %query_name(request), reason = denied.reason, rcode = %denied.rcode, "refused a zone transfer");
                    self.count_refusal(denied.reason);
                    vec![header_only(request, denied.rcode)]
                }
            },
        };
        if let Some(signer) = signer.as_mut() {
            for message in &mut messages {
                if let Err(error) = signer.sign(message, now) {
                    tracing::error!(%peer, %error, "cannot sign an answer; sending nothing");
                    return Vec::new();
                }
            }
        }
        messages
    }

    fn refuse_signature(&self, request: &Message, peer: SocketAddr, refusal: &Refusal, now: u64) -> Vec<Vec<u8>> {
        let error = refusal.error();
        tracing::warn!(%peer, name = %query_name(request), %error, "refused a signed request");
        let (rcode, reason) = match error {
            RequestError::BadKey { .. } => (ResponseCode::NotAuth, "badkey"),
            RequestError::BadSig { .. } => (ResponseCode::NotAuth, "badsig"),
            RequestError::BadTime { .. } => (ResponseCode::NotAuth, "badtime"),
            RequestError::BadTrunc { .. } => (ResponseCode::NotAuth, "badtrunc"),
            _ => (ResponseCode::FormErr, "malformed"),
        };
        self.count_refusal(reason);
        let mut answer = header_only(request, rcode);
        if let Err(error) = refusal.seal(&mut answer, now) {
            tracing::error!(%peer, %error, "cannot add the TSIG error to an answer; sending nothing");
            return Vec::new();
        }
        vec![answer]
    }

    fn count_refusal(&self, reason: &'static str) {
        self.metrics.refused.get_or_create(&ReasonLabels { reason }).inc();
    }

    /// A signed request that is no transfer: answered as an unsigned one would be (any opcode), fitted into
    /// `budget` bytes, which leaves room for the signature.
    fn answer(&self, request: &Message, transport: Transport, budget: usize) -> Vec<u8> {
        let max = u16::try_from(budget).unwrap_or(u16::MAX);
        let zones = self.zones.read();
        let mut response = crate::answer::prepare(&zones, request, transport, max).signed();
        let mut out = Vec::new();
        match crate::answer::encode(&mut response, max, &mut out) {
            Ok(_) => out,
            Err(error) => {
                tracing::error!(%error, name = %query_name(request), "cannot encode an answer");
                header_only(request, ResponseCode::ServFail)
            }
        }
    }

    /// An AXFR or IXFR answer, or why it is refused.
    fn transfer(
        &self,
        request: &Message,
        qtype: RecordType,
        peer: SocketAddr,
        signed: Option<&SignedRequest>,
        transport: Transport,
        budget: usize,
    ) -> Result<Vec<Vec<u8>>, Denied> {
        if request.metadata.op_code != OpCode::Query || request.queries.len() != 1 {
            return Err(Denied::new(ResponseCode::FormErr, "malformed"));
        }
        self.allowed(peer, signed)?;
        if transport == Transport::Udp && qtype == RecordType::AXFR {
            // As BIND answers: AXFR is a TCP-only exchange (RFC 5936 §4.2).
            return Err(Denied::new(ResponseCode::FormErr, "udp"));
        }
        let client_serial = match qtype {
            RecordType::IXFR => Some(ixfr_serial(request).ok_or(Denied::new(ResponseCode::FormErr, "malformed"))?),
            _ => None,
        };
        let (kind, snapshot) = {
            let set = self.zones.read();
            let name = LowerName::new(request.queries[0].name());
            let zone = set.zone(&name).ok_or(Denied::new(ResponseCode::NotAuth, "zone"))?;
            let soa = zone.soa();
            let whole = |soa: Record| match SignedZone::snapshot(zone, soa.clone()) {
                Some(signed) => Snapshot::Signed(Box::new(signed)),
                None => Snapshot::Records(axfr_records(soa, zone.records_without_soa())),
            };
            match client_serial {
                Some(client) if !serial_before(client, zone.serial()) => ("ixfr_current", Snapshot::Records(vec![soa])),
                // A signed zone's IXFR carries the changes of its signatures and NSEC chain too; the
                // whole zone when the journal does not reach back.
                Some(client) if zone.signing().is_some() => match signed_ixfr_records(zone, &soa, client) {
                    Some(records) => ("ixfr", Snapshot::Records(records)),
                    None => ("ixfr_full", whole(soa)),
                },
                Some(client) => match zone
                    .journal()
                    .since(client)
                    .and_then(|diffs| diffs.map(Change::of).collect())
                {
                    Some(changes) => ("ixfr", Snapshot::Records(ixfr_records(&soa, changes))),
                    None => ("ixfr_full", whole(soa)),
                },
                None => ("axfr", whole(soa)),
            }
        };
        let records = match snapshot {
            Snapshot::Records(records) => records,
            Snapshot::Signed(signed) => signed.records(),
        };
        let encoded = match transport {
            Transport::Tcp => encode(request, &records, MESSAGE_SIZE),
            // RFC 1995 §2: over UDP the whole answer in one message, or the current SOA alone, which tells
            // the client to ask again over TCP.
            Transport::Udp => match encode(request, &records, usize::MAX) {
                Ok(one) if one.len() == 1 && one[0].len() <= budget => Ok(one),
                _ => encode(request, &records[..1], usize::MAX),
            },
        };
        let messages = encoded.map_err(|error| {
            tracing::error!(%error, zone = %query_name(request), "cannot encode a zone transfer");
            Denied::new(ResponseCode::ServFail, "encoding")
        })?;
        tracing::debug!(%peer, zone = %query_name(request), kind, records = records.len(), messages = messages.len(), "zone transfer");
        self.metrics.transfers.get_or_create(&KindLabels { kind }).inc();
        Ok(messages)
    }

    /// A transfer may come only from a secondary's address, and only signed with its key when it names one.
    /// Several secondaries may share an address (the port is not the client's): any of them admits.
    fn allowed(&self, peer: SocketAddr, signed: Option<&SignedRequest>) -> Result<(), Denied> {
        let ip = peer.ip().to_canonical();
        let mut here = self
            .config
            .secondaries
            .iter()
            .filter(|s| s.address.ip().to_canonical() == ip)
            .peekable();
        if here.peek().is_none() {
            return Err(Denied::new(ResponseCode::Refused, "address"));
        }
        let used = signed.map(|s| s.key().name());
        let admitted = here.any(|s| match (&s.key, &used) {
            (None, _) => true,
            (Some(wanted), Some(used)) => wanted.to_ascii().trim_end_matches('.').eq_ignore_ascii_case(used),
            (Some(_), None) => false,
        });
        if admitted {
            Ok(())
        } else {
            Err(Denied::new(ResponseCode::Refused, "key"))
        }
    }
}

fn query_name(request: &Message) -> String {
    request
        .queries
        .first()
        .map(|q| q.name().to_string())
        .unwrap_or_default()
}

/// An answer with the question and a response code only.
fn header_only(request: &Message, rcode: ResponseCode) -> Vec<u8> {
    let mut response = Message::response(request.metadata.id, request.metadata.op_code);
    response.metadata.response_code = rcode;
    response.metadata.recursion_desired = request.metadata.recursion_desired;
    // The question is echoed only when there is one: several are malformed (RFC 9619), and echoing them
    // all could make the answer larger than the client's datagram.
    if let [query] = request.queries.as_slice() {
        response.add_query(query.clone());
    }
    // Encoding a header and a question that were just decoded does not fail; the bare header is the
    // fallback that always encodes.
    response.to_vec().unwrap_or_else(|_| {
        let mut bare = request.metadata.id.to_be_bytes().to_vec();
        bare.extend_from_slice(&[0x80, u16::from(rcode) as u8 & 0x0f, 0, 0, 0, 0, 0, 0, 0, 0]);
        bare
    })
}

/// The client's serial: the SOA in the IXFR request's authority section (RFC 1995 §3).
fn ixfr_serial(request: &Message) -> Option<u32> {
    request.authorities.iter().find_map(|r| match &r.data {
        RData::SOA(soa) => Some(soa.serial),
        _ => None,
    })
}

/// Whether serial `a` is older than `b` in RFC 1982 arithmetic.
fn serial_before(a: u32, b: u32) -> bool {
    a != b && b.wrapping_sub(a) < (1 << 31)
}

/// SOA, every other record, SOA: an AXFR, also IXFR's answer when the journal does not reach back.
fn axfr_records(soa: Record, rest: impl Iterator<Item = Record>) -> Vec<Record> {
    let mut records = vec![soa.clone()];
    records.extend(rest);
    records.push(soa);
    records
}

/// A journal's diff read back for an answer.
struct Change {
    from: u32,
    to: u32,
    removed: Vec<Record>,
    added: Vec<Record>,
}

impl Change {
    /// `diff`'s records read back; `None` (logged) should they not, which only a bug here can make: the
    /// answer is then the whole zone.
    fn of(diff: &Diff) -> Option<Change> {
        let read = |records: &crate::packed_records::PackedRecords| {
            records
                .unpack()
                .map_err(|e| tracing::warn!(error = %e, from = diff.from, "a journaled diff does not read back"))
                .ok()
        };
        Some(Change {
            from: diff.from,
            to: diff.to,
            removed: read(&diff.removed)?,
            added: read(&diff.added)?,
        })
    }
}

/// IXFR's incremental answer (RFC 1995 §4): the current SOA, then for each change the SOA it started from,
/// the records it removed, the SOA it made and the records it added, then the current SOA again.
fn ixfr_records(soa: &Record, changes: Vec<Change>) -> Vec<Record> {
    let at = |serial: u32| {
        let mut record = soa.clone();
        if let RData::SOA(data) = &mut record.data {
            data.serial = serial;
        }
        record
    };
    let mut records = vec![soa.clone()];
    for change in changes {
        records.push(at(change.from));
        records.extend(change.removed);
        records.push(at(change.to));
        records.extend(change.added);
    }
    records.push(soa.clone());
    records
}

/// A signed zone's incremental IXFR answer from `client`'s serial: the journal's diffs, the last one
/// also removing the RRSIGs and NSECs the secondary holds that changed since (a set's signature, a
/// link's next name or types) and adding the current ones, so the secondary ends with exactly the
/// signed zone an AXFR would give it. `None` when the journal does not reach back to `client`, or its
/// diff from there kept no signing state (the answer is then the whole zone).
///
/// Also `None` when the secondary may hold another replica's signatures: an IXFR deletes records by
/// their bytes, and another replica's ECDSA RRSIGs differ from this one's (a random nonce), so the
/// deletions would miss. Only a zone whose serials do not settle (one replica) or whose key signs alike
/// on every replica (Ed25519, with the windows every replica shares) is answered incrementally.
fn signed_ixfr_records(zone: &Zone, soa: &Record, client: u32) -> Option<Vec<Record>> {
    if zone.serials_settle() && !zone.signing()?.signs_alike_everywhere() {
        return None;
    }
    let diffs: Vec<&Diff> = zone.journal().since(client)?.collect();
    let old = diffs.first()?.signed_from.clone()?;
    let (removed, added) = zone.signing()?.changes_since(&old)?;
    // An answer is bounded by the zone it updates: every record of the signed zone (its data, a
    // signature per set, an NSEC and its signature per name) replaced once is a deletion and an
    // addition each, twice the zone. A renewal round re-signing the whole zone stays within that and
    // goes as its changes; more means diffs piling up on the same names, and the whole zone is the
    // smaller answer. Counted before the diffs are read back.
    let changed = diffs.iter().map(|d| d.removed.len() + d.added.len()).sum::<usize>() + removed.len() + added.len();
    let signing = zone.signing()?;
    let whole = zone.record_count() + signing.len() + 2 * signing.chain_len();
    if changed > 2 * whole {
        return None;
    }
    let mut changes: Vec<Change> = diffs.into_iter().map(Change::of).collect::<Option<_>>()?;
    let last = changes.last_mut()?;
    last.removed.extend(removed);
    last.added.extend(added);
    Some(ixfr_records(soa, changes))
}

/// The records as authoritative answers to `request`, each message filled until it passes `limit` bytes,
/// the question repeated in every message. At least one message, even for no records.
fn encode(request: &Message, records: &[Record], limit: usize) -> Result<Vec<Vec<u8>>, hickory_proto::ProtoError> {
    let mut metadata = Metadata::new(request.metadata.id, MessageType::Response, OpCode::Query);
    metadata.authoritative = true;
    let mut messages = Vec::new();
    let mut rest = records.iter().peekable();
    loop {
        let mut buf = Vec::with_capacity(limit.min(MESSAGE_SIZE) + 512);
        {
            let mut encoder = BinEncoder::new(&mut buf);
            let place = encoder.place::<Header>()?;
            let queries = encoder.emit_all(request.queries.iter())?;
            let mut answers: u16 = 0;
            while let Some(record) = rest.peek() {
                if answers > 0 && (encoder.len() >= limit || answers == u16::MAX) {
                    break;
                }
                record.emit(&mut encoder)?;
                answers += 1;
                rest.next();
            }
            let counts = HeaderCounts {
                queries: u16::try_from(queries).unwrap_or(u16::MAX),
                answers,
                authorities: 0,
                additionals: 0,
            };
            place.replace(&mut encoder, Header { metadata, counts })?;
        }
        messages.push(buf);
        if rest.peek().is_none() {
            return Ok(messages);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use extdns_dns_wire::{TsigAlgorithm, TsigKey};
    use hickory_proto::op::Query;
    use hickory_proto::rr::Name;
    use hickory_proto::rr::rdata::{A, TXT};

    use super::*;

    fn soa(serial: u32) -> Record {
        let name = |s: &str| Name::from_str(s).unwrap_or_default();
        let data = hickory_proto::rr::rdata::SOA::new(
            name("ns1.example.org."),
            name("hostmaster.example.org."),
            serial,
            3600,
            600,
            604_800,
            30,
        );
        Record::from_rdata(name("example.org."), 300, RData::SOA(data))
    }

    fn a(owner: &str, ip: [u8; 4]) -> Record {
        Record::from_rdata(
            Name::from_str(owner).unwrap_or_default(),
            60,
            RData::A(A(std::net::Ipv4Addr::from(ip))),
        )
    }

    fn serial_of(record: &Record) -> Option<u32> {
        match &record.data {
            RData::SOA(s) => Some(s.serial),
            _ => None,
        }
    }

    #[test]
    fn ixfr_frames_each_change_between_its_two_soas_inside_the_current_one() {
        let packed = |records: Vec<Record>| crate::packed_records::PackedRecords::pack(&records).expect("packs");
        let diffs = [
            Diff {
                from: 10,
                to: 11,
                removed: packed(vec![]),
                added: packed(vec![a("web.example.org.", [192, 0, 2, 1])]),
                from_shared: true,
                signed_from: None,
                resigned: 0,
            },
            Diff {
                from: 11,
                to: 12,
                removed: packed(vec![a("web.example.org.", [192, 0, 2, 1])]),
                added: packed(vec![a("web.example.org.", [192, 0, 2, 2])]),
                from_shared: true,
                signed_from: None,
                resigned: 0,
            },
        ];
        let changes = diffs
            .iter()
            .map(Change::of)
            .collect::<Option<Vec<_>>>()
            .expect("reads back");
        let records = ixfr_records(&soa(12), changes);
        let shape: Vec<String> = records
            .iter()
            .map(|r| match (&r.data, serial_of(r)) {
                (_, Some(serial)) => format!("SOA {serial}"),
                (RData::A(ip), _) => format!("A {ip}"),
                _ => "?".into(),
            })
            .collect();
        assert_eq!(
            shape,
            [
                "SOA 12",
                "SOA 10",
                "SOA 11",
                "A 192.0.2.1",
                "SOA 11",
                "A 192.0.2.1",
                "SOA 12",
                "A 192.0.2.2",
                "SOA 12"
            ]
        );
    }

    #[test]
    fn axfr_puts_the_soa_first_and_last() {
        let records = axfr_records(soa(7), [a("a.example.org.", [192, 0, 2, 1])].into_iter());
        let serials: Vec<Option<u32>> = records.iter().map(serial_of).collect();
        assert_eq!(serials, [Some(7), None, Some(7)]);
    }

    #[test]
    fn serials_compare_in_rfc_1982_arithmetic() {
        assert!(serial_before(1, 2));
        assert!(!serial_before(2, 2));
        assert!(!serial_before(3, 2));
        assert!(serial_before(u32::MAX, 1), "wraps around");
        assert!(!serial_before(1, 1 + (1 << 31)), "half the space away is not before");
    }

    #[test]
    fn a_large_transfer_is_split_into_messages_that_each_decode_with_the_question() {
        let mut request = Message::query();
        request.add_query(Query::query(
            Name::from_str("example.org.").unwrap_or_default(),
            RecordType::AXFR,
        ));
        let long = "x".repeat(200);
        let mut records = vec![soa(1)];
        for i in 0..500u32 {
            let owner = Name::from_str(&format!("r{i}.example.org.")).unwrap_or_default();
            records.push(Record::from_rdata(owner, 60, RData::TXT(TXT::new(vec![long.clone()]))));
        }
        records.push(soa(1));
        let Ok(messages) = encode(&request, &records, MESSAGE_SIZE) else {
            panic!("encode")
        };
        assert!(messages.len() > 5, "{} messages", messages.len());
        let mut seen = 0;
        for wire in &messages {
            assert!(wire.len() < MESSAGE_SIZE + 512, "{} bytes", wire.len());
            let Ok(message) = Message::from_vec(wire) else {
                panic!("decode")
            };
            assert!(message.metadata.authoritative);
            assert_eq!(message.queries.len(), 1);
            seen += message.answers.len();
        }
        assert_eq!(seen, records.len());
    }

    /// The key the tests' secondaries sign with.
    fn xfr_key() -> TsigKey {
        TsigKey::new("xfr", TsigAlgorithm::HmacSha256, b"secret").unwrap_or_else(|e| panic!("key: {e}"))
    }

    /// One replica's transfers: serials do not settle, so IXFR answers from every serial.
    fn transfers(secondaries: Vec<crate::config::Secondary>, key: &TsigKey) -> Transfers {
        let limits = crate::config::Limits {
            serial_cell: None,
            ..crate::config::Limits::default()
        };
        transfers_within(secondaries, key, limits)
    }

    fn transfers_within(
        secondaries: Vec<crate::config::Secondary>,
        key: &TsigKey,
        limits: crate::config::Limits,
    ) -> Transfers {
        let config = Arc::new(ServerConfig {
            secondaries,
            keys: vec![key.clone()],
            limits,
            ..ServerConfig::new(Vec::new(), vec![crate::zones::tests::zone_config("example.org.")])
        });
        let zones = Arc::new(Zones::new(&config.zones, 5, config.limits));
        Transfers::new(zones, config, ServerMetrics::default())
    }

    fn request(qtype: RecordType, client_serial: Option<u32>) -> Message {
        let mut request = Message::query();
        request.add_query(Query::query(Name::from_str("example.org.").unwrap_or_default(), qtype));
        if let Some(serial) = client_serial {
            request.add_authority(soa(serial));
        }
        request
    }

    fn ask(
        t: &Transfers,
        mut request: Message,
        key: Option<&TsigKey>,
        peer: &str,
        transport: Transport,
    ) -> Vec<Message> {
        let wire = match key {
            Some(k) => k.sign(&mut request, extdns_dns_wire::unix_now()).map(|(w, _)| w),
            None => request.to_vec().map_err(|_| unreachable!()),
        };
        let Ok(wire) = wire else { panic!("encode") };
        let Ok(decoded) = Message::from_vec(&wire) else {
            panic!("decode")
        };
        let peer: SocketAddr = peer.parse().unwrap_or_else(|_| panic!("peer"));
        t.respond(&wire, &decoded, peer, transport, 512)
            .iter()
            .map(|w| Message::from_vec(w).unwrap_or_else(|e| panic!("answer: {e}")))
            .collect()
    }

    fn rcode(answers: &[Message]) -> ResponseCode {
        answers
            .first()
            .map_or(ResponseCode::ServFail, |m| m.metadata.response_code)
    }

    #[test]
    fn transfers_come_only_from_a_secondarys_address_signed_with_its_key() {
        let key = xfr_key();
        let Ok(other) = TsigKey::new("other", TsigAlgorithm::HmacSha256, b"secret") else {
            panic!("key")
        };
        let secondary = |address: &str, key: Option<&str>| crate::config::Secondary {
            address: address.parse().unwrap_or_else(|_| panic!("address")),
            key: key.map(|k| Name::from_str(k).unwrap_or_default()),
        };
        let t = transfers(
            vec![
                secondary("192.0.2.1:53", Some("xfr")),
                secondary("192.0.2.2:5300", None),
            ],
            &key,
        );
        let axfr = || request(RecordType::AXFR, None);
        // The port of the secondary's address is not the client's: any source port will do.
        let got = ask(&t, axfr(), Some(&key), "192.0.2.1:40000", Transport::Tcp);
        assert_eq!(rcode(&got), ResponseCode::NoError);
        assert!(got.iter().all(|m| m.signature.is_some()), "every message is signed");
        assert_eq!(
            rcode(&ask(&t, axfr(), None, "192.0.2.1:40000", Transport::Tcp)),
            ResponseCode::Refused
        );
        assert_eq!(
            rcode(&ask(&t, axfr(), Some(&other), "192.0.2.1:1", Transport::Tcp)),
            ResponseCode::NotAuth,
            "a key we do not know"
        );
        assert_eq!(
            rcode(&ask(&t, axfr(), Some(&key), "192.0.2.9:1", Transport::Tcp)),
            ResponseCode::Refused
        );
        assert_eq!(
            rcode(&ask(&t, axfr(), None, "192.0.2.2:1", Transport::Tcp)),
            ResponseCode::NoError
        );
        // IPv4-mapped IPv6 (a dual-stack socket) is the same address.
        assert_eq!(
            rcode(&ask(&t, axfr(), None, "[::ffff:192.0.2.2]:1", Transport::Tcp)),
            ResponseCode::NoError
        );
        // Over UDP: AXFR is FORMERR, as BIND answers.
        assert_eq!(
            rcode(&ask(&t, axfr(), None, "192.0.2.2:1", Transport::Udp)),
            ResponseCode::FormErr
        );
        // An IXFR without the client's SOA is malformed; a zone we do not serve is NOTAUTH.
        assert_eq!(
            rcode(&ask(
                &t,
                request(RecordType::IXFR, None),
                None,
                "192.0.2.2:1",
                Transport::Tcp
            )),
            ResponseCode::FormErr
        );
        let mut elsewhere = Message::query();
        elsewhere.add_query(Query::query(
            Name::from_str("example.com.").unwrap_or_default(),
            RecordType::AXFR,
        ));
        assert_eq!(
            rcode(&ask(&t, elsewhere, None, "192.0.2.2:1", Transport::Tcp)),
            ResponseCode::NotAuth
        );

        let mut text = String::new();
        let mut registry = prometheus_client::registry::Registry::default();
        t.metrics.register(&mut registry);
        let _ = prometheus_client::encoding::text::encode(&mut text, &registry);
        for reason in ["address", "key", "badkey", "udp", "malformed", "zone"] {
            assert!(
                text.contains(&format!("refused_total{{reason=\"{reason}\"}} 1")),
                "{reason}: {text}"
            );
        }
    }

    #[test]
    fn udp_ixfr_answers_the_diff_when_it_fits_and_the_soa_alone_when_it_does_not() {
        let key = xfr_key();
        let t = transfers(
            vec![crate::config::Secondary {
                address: "192.0.2.2:53".parse().unwrap_or_else(|_| panic!("address")),
                key: None,
            }],
            &key,
        );
        {
            let mut set = t.zones.write();
            let zone = &mut set.zones_mut()[0];
            let many: Vec<Record> = (0..40)
                .map(|i| a(&format!("host{i}.example.org."), [192, 0, 2, i]))
                .collect();
            zone.commit(0, vec![], many);
            zone.commit(0, vec![], vec![a("one.example.org.", [192, 0, 2, 1])]);
        }
        // From serial 6: one small diff, in one UDP message.
        let ixfr = |serial, transport| {
            ask(
                &t,
                request(RecordType::IXFR, Some(serial)),
                None,
                "192.0.2.2:1",
                transport,
            )
        };
        let small = ixfr(6, Transport::Udp);
        let serials: Vec<Option<u32>> = small[0].answers.iter().map(serial_of).collect();
        assert_eq!(serials.iter().flatten().count(), 4, "{serials:?}");
        assert_eq!(small[0].answers.len(), 5);
        // From serial 5: two diffs, too large for 512 bytes: the current SOA alone, to retry over TCP.
        let big = ixfr(5, Transport::Udp);
        assert_eq!(big[0].answers.len(), 1);
        assert_eq!(serial_of(&big[0].answers[0]), Some(7));
        // Up to date, or newer than ours: the current SOA alone.
        let current = ixfr(7, Transport::Tcp);
        assert_eq!(current[0].answers.len(), 1);
    }

    #[tokio::test]
    async fn a_secondary_that_stops_reading_a_transfer_is_let_go_after_the_idle_time() {
        let key = xfr_key();
        let limits = crate::config::Limits {
            tcp_idle: std::time::Duration::from_millis(100),
            ..crate::config::Limits::default()
        };
        let secondary = crate::config::Secondary {
            address: "192.0.2.2:53".parse().unwrap_or_else(|_| panic!("address")),
            key: None,
        };
        let t = transfers_within(vec![secondary], &key, limits);
        let request = request(RecordType::AXFR, None);
        let Ok(wire) = request.to_vec() else { panic!("encode") };
        // A pipe of 32 bytes nobody reads: the zone's first message does not fit.
        let (_client, mut server) = tokio::io::duplex(32);
        let peer = "192.0.2.2:40000".parse().unwrap_or_else(|_| panic!("peer"));
        let started = std::time::Instant::now();
        let served = t.serve_tcp(&wire, &request, peer, &mut server).await;
        assert_eq!(served.map_err(|e| e.kind()), Err(std::io::ErrorKind::TimedOut));
        assert!(
            started.elapsed() < std::time::Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn a_signed_ordinary_query_is_answered_and_signed() {
        let key = xfr_key();
        let t = transfers(Vec::new(), &key);
        let got = ask(
            &t,
            request(RecordType::SOA, None),
            Some(&key),
            "198.51.100.1:1",
            Transport::Udp,
        );
        assert_eq!(got.len(), 1);
        assert!(got[0].signature.is_some(), "signed");
        assert_eq!(got[0].metadata.response_code, ResponseCode::NoError);
        assert_eq!(got[0].answers.iter().filter_map(serial_of).collect::<Vec<_>>(), [5]);
        // Other opcodes are answered as unsigned ones are (a NOTIFY to the primary: NOTAUTH), signed.
        let mut notify = request(RecordType::SOA, None);
        notify.metadata.op_code = OpCode::Notify;
        let got = ask(&t, notify, Some(&key), "198.51.100.1:1", Transport::Udp);
        assert_eq!(rcode(&got), ResponseCode::NotAuth);
        assert!(got[0].signature.is_some(), "signed");
    }

    /// `held` (a secondary's records, SOA left out) after it applies the IXFR answer `answer` as RFC 1995
    /// §4 says: each deleted record must be one it holds (by name, type and data, as a secondary
    /// matches them), else the test fails as Knot would refuse the transfer.
    fn apply_ixfr(mut held: Vec<Record>, answer: &[Record]) -> Vec<Record> {
        let same = |a: &Record, b: &Record| {
            a.name.to_lowercase() == b.name.to_lowercase() && a.record_type() == b.record_type() && a.data == b.data
        };
        let mut adding = true;
        let inner = answer.get(1..answer.len().saturating_sub(1)).unwrap_or_default();
        for record in inner {
            if record.record_type() == RecordType::SOA {
                adding = !adding;
            } else if adding {
                held.push(record.clone());
            } else {
                let at = held
                    .iter()
                    .position(|h| same(h, record))
                    .unwrap_or_else(|| panic!("the secondary holds no {record}"));
                held.remove(at);
            }
        }
        held
    }

    /// The records of `zone`'s AXFR but the SOA, as text, sorted.
    fn axfr_text(zone: &Zone) -> Vec<String> {
        sorted_text(held_records(zone).iter())
    }

    fn sorted_text<'a>(records: impl Iterator<Item = &'a Record>) -> Vec<String> {
        let mut text: Vec<String> = records.map(|r| r.to_string().to_lowercase()).collect();
        text.sort();
        text
    }

    #[test]
    fn a_signed_zones_ixfr_carries_the_changed_signatures_and_links_and_ends_where_the_axfr_does() {
        use crate::answer::tests::{a as a_set, name, set};

        let zones = signed_zones();
        let now = crate::dnssec::now();
        // A write as the provider makes it: the records it removed and added journaled.
        let write = |puts: &[(&str, &str)], removes: &[&str]| {
            let mut all = zones.write();
            let zone = &mut all.zones_mut()[0];
            let (mut removed, mut added) = (Vec::new(), Vec::new());
            for (owner, ip) in puts {
                let new = set(vec![a_set(ip)]);
                added.extend(new.records(name(owner)));
                let old = zone.put(&name(owner), new);
                removed.extend(old.iter().flat_map(|old| old.records(name(owner)).collect::<Vec<_>>()));
            }
            for owner in removes {
                let old = zone.remove(&LowerName::new(&name(owner)), RecordType::A);
                removed.extend(old.iter().flat_map(|old| old.records(name(owner)).collect::<Vec<_>>()));
            }
            zone.commit(crate::dnssec::now(), removed, added);
        };
        let hosts: Vec<String> = (0..50).map(|n| format!("host{n}.example.org.")).collect();
        let mut puts: Vec<(&str, &str)> = hosts.iter().map(|h| (h.as_str(), "192.0.2.1")).collect();
        // Glue below a delegation: signed, but transferred without its signature.
        puts.push(("ns.sub.example.org.", "192.0.2.53"));
        write(&puts, &[]);
        {
            let mut all = zones.write();
            let delegation = set(vec![RData::NS(hickory_proto::rr::rdata::NS(name(
                "ns.sub.example.org.",
            )))]);
            all.zones_mut()[0].put(&name("sub.example.org."), delegation);
            all.zones_mut()[0].commit(crate::dnssec::now(), Vec::new(), Vec::new());
        }
        let (from, held) = {
            let set = zones.read();
            let zone = &set.zones()[0];
            (zone.serial(), held_records(zone))
        };

        // A changed set, a new name and a gone one: their signatures and the links around them.
        write(
            &[("host7.example.org.", "192.0.2.7"), ("new.example.org.", "192.0.2.9")],
            &["host3.example.org."],
        );
        let set = zones.read();
        let zone = &set.zones()[0];
        let answer = signed_ixfr_records(zone, &zone.soa(), from).expect("incremental");
        assert!(answer.len() < held.len() / 4, "incremental: {} records", answer.len());
        let untouched = answer.iter().any(|r| r.name.to_ascii() == "host20.example.org.");
        assert!(!untouched, "an untouched set is not sent");
        let after_write = apply_ixfr(held.clone(), &answer);
        assert_eq!(
            sorted_text(after_write.iter()),
            axfr_text(zone),
            "the secondary holds the signed zone"
        );
        drop(set);

        // A renewal round on top: from the same serial, or from the one after the write.
        let period = zones.read().zones()[0].signing().expect("signed").renewal_period();
        assert!(crate::dnssec_renew::renew(&zones, now + period) > 50);
        let set = zones.read();
        let zone = &set.zones()[0];
        let answer = signed_ixfr_records(zone, &zone.soa(), from).expect("incremental");
        assert_eq!(sorted_text(apply_ixfr(held, &answer).iter()), axfr_text(zone));
        assert!(
            signed_ixfr_records(zone, &zone.soa(), 12_345).is_none(),
            "not in the journal"
        );
        let from = zone.serial();
        drop(set);

        // The delegation goes: its glue's signatures, kept all along, are transferred again.
        {
            let mut all = zones.write();
            let zone = &mut all.zones_mut()[0];
            let owner = name("sub.example.org.");
            let old = zone
                .remove(&LowerName::new(&owner), RecordType::NS)
                .expect("the delegation");
            let removed: Vec<Record> = old.records(owner.clone()).collect();
            zone.commit(crate::dnssec::now(), removed, Vec::new());
        }
        let set = zones.read();
        let zone = &set.zones()[0];
        // A delegation that goes changes which sets are glue: answered whole, as the AXFR is.
        assert!(
            signed_ixfr_records(zone, &zone.soa(), from).is_none(),
            "a delegation change is answered whole"
        );
    }

    #[test]
    fn a_signed_ixfr_larger_than_twice_the_zone_is_answered_whole() {
        use crate::answer::tests::{a as a_set, name, set};

        let zones = signed_zones();
        let owner = name("web.example.org.");
        // One name's address changed again and again: each diff is small, their sum is not.
        let toggle = |n: usize| {
            let mut all = zones.write();
            let zone = &mut all.zones_mut()[0];
            let new = set(vec![a_set(if n.is_multiple_of(2) { "192.0.2.1" } else { "192.0.2.2" })]);
            let added: Vec<Record> = new.records(owner.clone()).collect();
            let removed: Vec<Record> = zone
                .put(&owner, new)
                .map(|old| old.records(owner.clone()).collect())
                .unwrap_or_default();
            zone.commit(crate::dnssec::now(), removed, added);
        };
        toggle(0);
        let from = zones.read().zones()[0].serial();
        toggle(1);
        let set = zones.read();
        let zone = &set.zones()[0];
        assert!(signed_ixfr_records(zone, &zone.soa(), from).is_some(), "a small change");
        let whole = held_records(zone).len();
        drop(set);
        for n in 2..(2 * whole) {
            toggle(n);
        }
        let set = zones.read();
        let zone = &set.zones()[0];
        assert!(zone.journal().since(from).is_some(), "still journalled");
        assert!(signed_ixfr_records(zone, &zone.soa(), from).is_none(), "answered whole");
    }

    /// One signed zone, `example.org.`, with an ECDSA key and serials that do not settle.
    fn signed_zones() -> Zones {
        let mut config = crate::zones::tests::zone_config("example.org.");
        let key = crate::dnssec::ZoneKey::generate(crate::dnssec::KeyAlgorithm::EcdsaP256).expect("a key");
        config.dnssec = Some(crate::dnssec::DnssecConfig::new(key));
        let limits = crate::config::Limits {
            serial_cell: None,
            ..crate::config::Limits::default()
        };
        Zones::new(&[config], 5, limits)
    }

    /// The records of `zone`'s AXFR but the SOA.
    fn held_records(zone: &Zone) -> Vec<Record> {
        SignedZone::snapshot(zone, zone.soa())
            .map(SignedZone::records)
            .unwrap_or_default()
            .into_iter()
            .filter(|r| r.record_type() != RecordType::SOA)
            .collect()
    }
}
