//! An answer's wire form, written here rather than by hickory's message encoder (issue 49: signed answers
//! as cheap as Knot's). hickory's name compression allocates for every name it writes and for every label
//! it remembers, compressed or not, and searches what it remembered by copying; a signed answer has many
//! names (each RRSIG's owner and signer, each NSEC's owner and next name), so that was much of its cost.
//! Here the names already written are remembered as offsets into the message itself, with no allocation,
//! and a signed answer's RRSIGs and NSECs are written from what was stored when the zone was signed
//! ([`DnssecRecords`]: an NSEC's next name and type bitmap, an RRSIG's fields around the zone's name),
//! never made into records per answer.
//!
//! The wire is what hickory writes: names compressed where RFC 1035 allows it (owners, and the names in
//! CNAME, NS, PTR, MX and SOA data), never in SRV data (RFC 2782) nor in the DNSSEC data (RFC 4034 §6.2,
//! stored uncompressed); record data of other types is written by hickory.

use hickory_proto::ProtoError;
use hickory_proto::op::{Edns, Header, HeaderCounts, Message};
use hickory_proto::rr::{DNSClass, Name, RData, Record, RecordType};
use hickory_proto::serialize::binary::{BinEncodable, BinEncoder};

use crate::dnssec::Signed;
use crate::dnssec_answer::{AuthorityRecord, DnssecRecords};
use crate::zones::RrSet;

/// The names' suffixes remembered for compression: more than an answer that fits in a datagram has;
/// a suffix past them is written whole, never wrongly.
const MAX_SUFFIXES: usize = 64;

/// The header's length: the first name starts after it.
const HEADER_LEN: usize = 12;

/// The highest offset a compression pointer can name (14 bits).
const MAX_POINTER: usize = 0x3FFF;

/// Writes `message` with the DNSSEC records `dnssec` adds to it into `out` (cleared first): the header
/// with its counts, the question, each answer record followed by the RRSIGs of the set it ends, the
/// authority records and then the DNSSEC ones of the authority section, the additional records and the
/// OPT record.
pub(crate) fn write(message: &Message, dnssec: &DnssecRecords<'_>, out: &mut Vec<u8>) -> Result<(), ProtoError> {
    out.clear();
    out.resize(HEADER_LEN, 0);
    let mut writer = Writer {
        out,
        suffixes: [0; MAX_SUFFIXES],
        remembered: 0,
    };
    let mut counts = HeaderCounts::default();
    for query in &message.queries {
        writer.name(query.name())?;
        writer.u16(u16::from(query.query_type()));
        writer.u16(u16::from(query.query_class()));
        counts.queries = count(counts.queries, 1)?;
    }
    for (index, record) in message.answers.iter().enumerate() {
        writer.record(record)?;
        counts.answers = count(counts.answers, 1)?;
        if let Some(signed) = dnssec.signature_after(index) {
            let written = writer.signatures(&record.name, None, signed)?;
            counts.answers = count(counts.answers, written)?;
        }
    }
    for record in &message.authorities {
        writer.record(record)?;
        counts.authorities = count(counts.authorities, 1)?;
    }
    for extra in dnssec.authorities() {
        let written = writer.authority(&extra)?;
        counts.authorities = count(counts.authorities, written)?;
    }
    for record in &message.additionals {
        writer.record(record)?;
        counts.additionals = count(counts.additionals, 1)?;
    }
    if let Some(edns) = &message.edns {
        let mut edns = edns.clone();
        // RFC 6891 §6.1.3: the response code's high bits travel in the OPT record.
        edns.set_rcode_high(message.metadata.response_code.high());
        edns.emit(&mut writer.encoder())?;
        counts.additionals = count(counts.additionals, 1)?;
    }
    let header = Header {
        metadata: message.metadata,
        counts,
    };
    header.emit(&mut BinEncoder::with_offset(writer.out, 0))?;
    if writer.out.len() > usize::from(u16::MAX) {
        return Err(ProtoError::MaxBufferSizeExceeded(usize::from(u16::MAX)));
    }
    Ok(())
}

/// Writes the answer to a plain query ([`crate::plain`]) into `out` (cleared first), as [`write`] writes
/// the same answer made a message: a header with `id`, AA, RD and CD as the request had them, and TC when
/// `set` is `None` (a slipped answer); the question as the client wrote it (`question`, its name
/// uncompressed); each record of `set` owned by the question's name, a pointer to it; and, when `edns` is
/// `Some`, an OPT record with its payload size (ours) and DO bit (the client's).
pub(crate) fn write_plain(
    out: &mut Vec<u8>,
    id: [u8; 2],
    flags: PlainFlags,
    question: &[u8],
    set: Option<&RrSet>,
    edns: Option<(u16, bool)>,
) -> Result<(), ProtoError> {
    out.clear();
    out.extend_from_slice(&id);
    // QR, opcode QUERY, AA; TC for a slipped answer; RD echoed. Then RA, Z and AD clear, CD echoed,
    // NOERROR.
    let truncated = if set.is_none() { 0x02 } else { 0 };
    out.push(0x80 | 0x04 | truncated | u8::from(flags.recursion_desired));
    out.push(if flags.checking_disabled { 0x10 } else { 0 });
    let answers = set.map_or(0, |s| s.data.len());
    let answers = u16::try_from(answers).map_err(|_| ProtoError::Message("too many records for the header's count"))?;
    for count in [1, answers, 0, u16::from(edns.is_some())] {
        out.extend_from_slice(&count.to_be_bytes());
    }
    out.extend_from_slice(question);
    let mut writer = Writer {
        out,
        suffixes: [0; MAX_SUFFIXES],
        remembered: 0,
    };
    if let Some(set) = set {
        for data in set.data.iter() {
            // The owner is the question's name, right after the header.
            writer
                .out
                .extend_from_slice(&(0xC000 | HEADER_LEN as u16).to_be_bytes());
            writer.u16(u16::from(set.record_type));
            writer.u16(u16::from(DNSClass::IN));
            writer.u32(set.ttl);
            let length_at = writer.out.len();
            writer.u16(0);
            writer.rdata(&data)?;
            writer.patch_length(length_at)?;
        }
    }
    if let Some((payload, dnssec_ok)) = edns {
        let mut ours = Edns::new();
        ours.set_max_payload(payload);
        ours.set_dnssec_ok(dnssec_ok);
        ours.emit(&mut writer.encoder())?;
    }
    Ok(())
}

/// The request's header flags a plain answer echoes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PlainFlags {
    pub(crate) recursion_desired: bool,
    pub(crate) checking_disabled: bool,
}

/// `counted` plus `more`, as a header count.
fn count(counted: u16, more: usize) -> Result<u16, ProtoError> {
    u16::try_from(more)
        .ok()
        .and_then(|more| counted.checked_add(more))
        .ok_or(ProtoError::Message("too many records for the header's count"))
}

/// The message being written and the offsets of the label sequences written so far.
struct Writer<'a> {
    out: &'a mut Vec<u8>,
    /// Where each remembered suffix starts: a label, its length byte first, ending in the root or a
    /// pointer.
    suffixes: [u16; MAX_SUFFIXES],
    remembered: usize,
}

impl Writer<'_> {
    fn u16(&mut self, value: u16) {
        self.out.extend_from_slice(&value.to_be_bytes());
    }

    fn u32(&mut self, value: u32) {
        self.out.extend_from_slice(&value.to_be_bytes());
    }

    /// hickory's encoder, writing at the end of the message (for the data this does not write itself).
    fn encoder(&mut self) -> BinEncoder<'_> {
        let end = u32::try_from(self.out.len()).unwrap_or(u32::MAX);
        BinEncoder::with_offset(self.out, end)
    }

    /// One record of the message.
    fn record(&mut self, record: &Record) -> Result<(), ProtoError> {
        self.name(&record.name)?;
        self.u16(u16::from(record.record_type()));
        self.u16(u16::from(record.dns_class));
        self.u32(record.ttl);
        let length_at = self.out.len();
        self.u16(0);
        self.rdata(&record.data)?;
        self.patch_length(length_at)
    }

    /// A record whose RDATA is stored as its wire form, in `parts` written one after the other.
    fn stored(&mut self, owner: &Name, record_type: RecordType, ttl: u32, parts: &[&[u8]]) -> Result<(), ProtoError> {
        self.name(owner)?;
        self.u16(u16::from(record_type));
        self.u16(u16::from(DNSClass::IN));
        self.u32(ttl);
        let length = parts.iter().map(|p| p.len()).sum::<usize>();
        self.u16(u16::try_from(length).map_err(|_| ProtoError::Message("stored RDATA too long"))?);
        for part in parts {
            self.out.extend_from_slice(part);
        }
        Ok(())
    }

    /// One DNSSEC record of the authority section and its signatures; how many records.
    fn authority(&mut self, extra: &AuthorityRecord<'_>) -> Result<usize, ProtoError> {
        match extra {
            AuthorityRecord::Signature { owner, ttl, signature } => self.signatures(owner, Some(*ttl), *signature),
            AuthorityRecord::Nsec(nsec) => {
                let owner = nsec.owner();
                self.stored(&owner, RecordType::NSEC, nsec.ttl(), &nsec.rdata_parts())?;
                Ok(1 + self.signatures(&owner, None, nsec.signed())?)
            }
        }
    }

    /// The RRSIG records of `owner`, served with `ttl` (the set's own when `None`); how many.
    fn signatures(&mut self, owner: &Name, ttl: Option<u32>, signed: Signed<'_>) -> Result<usize, ProtoError> {
        let mut written = 0;
        for signature in signed.iter() {
            let ttl = ttl.unwrap_or_else(|| signature.ttl());
            let rdata = [signature.head(), signed.signer(), signature.signature()];
            self.stored(owner, RecordType::RRSIG, ttl, &rdata)?;
            written += 1;
        }
        Ok(written)
    }

    /// Writes the RDATA length into the two bytes at `at`, from what follows them.
    fn patch_length(&mut self, at: usize) -> Result<(), ProtoError> {
        let length = u16::try_from(self.out.len() - at - 2).map_err(|_| ProtoError::Message("RDATA too long"))?;
        if let Some(field) = self.out.get_mut(at..at + 2) {
            field.copy_from_slice(&length.to_be_bytes());
        }
        Ok(())
    }

    /// Record data: the types whose names compress (RFC 1035 §3.3) and the common ones written here,
    /// the rest by hickory.
    fn rdata(&mut self, data: &RData) -> Result<(), ProtoError> {
        match data {
            RData::A(a) => self.out.extend_from_slice(&a.0.octets()),
            RData::AAAA(aaaa) => self.out.extend_from_slice(&aaaa.0.octets()),
            RData::CNAME(name) => self.name(&name.0)?,
            RData::NS(name) => self.name(&name.0)?,
            RData::PTR(name) => self.name(&name.0)?,
            RData::MX(mx) => {
                self.u16(mx.preference);
                self.name(&mx.exchange)?;
            }
            RData::SOA(soa) => {
                self.name(&soa.mname)?;
                self.name(&soa.rname)?;
                self.u32(soa.serial);
                for timer in [soa.refresh, soa.retry, soa.expire] {
                    self.out.extend_from_slice(&timer.to_be_bytes());
                }
                self.u32(soa.minimum);
            }
            RData::SRV(srv) => {
                self.u16(srv.priority);
                self.u16(srv.weight);
                self.u16(srv.port);
                // RFC 2782: the target is not compressed.
                self.uncompressed(&srv.target)?;
            }
            other => other.emit(&mut self.encoder())?,
        }
        Ok(())
    }

    /// A name in full, remembered for no later name.
    fn uncompressed(&mut self, name: &Name) -> Result<(), ProtoError> {
        for label in name.iter() {
            self.label(label)?;
        }
        self.out.push(0);
        Ok(())
    }

    /// A name, as a pointer to the longest of its suffixes already written (after its first labels), and
    /// its new suffixes remembered.
    fn name(&mut self, name: &Name) -> Result<(), ProtoError> {
        let labels = name.iter().len();
        for skip in 0..labels {
            if let Some(pointer) = self.find(name, skip) {
                self.labels_remembered(name, skip)?;
                self.u16(0xC000 | pointer);
                return Ok(());
            }
        }
        self.labels_remembered(name, labels)?;
        self.out.push(0);
        Ok(())
    }

    /// The first `count` labels of `name`, each remembered as the start of a suffix.
    fn labels_remembered(&mut self, name: &Name, count: usize) -> Result<(), ProtoError> {
        for label in name.iter().take(count) {
            self.remember();
            self.label(label)?;
        }
        Ok(())
    }

    fn label(&mut self, label: &[u8]) -> Result<(), ProtoError> {
        let length = u8::try_from(label.len())
            .ok()
            .filter(|&l| l <= 63)
            .ok_or(ProtoError::Message("a label longer than 63 bytes"))?;
        self.out.push(length);
        self.out.extend_from_slice(label);
        Ok(())
    }

    /// Notes that a suffix starts here, if a pointer can reach it and there is room.
    fn remember(&mut self) {
        let here = self.out.len();
        if here > MAX_POINTER {
            return;
        }
        if let (Some(slot), Ok(here)) = (self.suffixes.get_mut(self.remembered), u16::try_from(here)) {
            *slot = here;
            self.remembered += 1;
        }
    }

    /// Where a suffix equal to `name` without its first `skip` labels was written, byte for byte (so a
    /// name keeps the case it is written in).
    fn find(&self, name: &Name, skip: usize) -> Option<u16> {
        self.suffixes
            .get(..self.remembered)?
            .iter()
            .copied()
            .find(|&at| written_equals(self.out, usize::from(at), name.iter().skip(skip)))
    }
}

/// Whether the name written at `at` in `wire` (following pointers) is `labels`, byte for byte.
fn written_equals<'l>(wire: &[u8], mut at: usize, mut labels: impl Iterator<Item = &'l [u8]>) -> bool {
    // Pointers written here only point backwards, so a name has fewer jumps than bytes before it.
    let mut jumps = 0;
    loop {
        let Some(&length) = wire.get(at) else {
            return false;
        };
        if length & 0xC0 == 0xC0 {
            let Some(&low) = wire.get(at + 1) else {
                return false;
            };
            at = (usize::from(length & 0x3F) << 8) | usize::from(low);
            jumps += 1;
            if jumps > HEADER_LEN + MAX_POINTER {
                return false;
            }
            continue;
        }
        let length = usize::from(length);
        match labels.next() {
            None => return length == 0,
            Some(label) => {
                if length == 0 || wire.get(at + 1..at + 1 + length) != Some(label) {
                    return false;
                }
                at += 1 + length;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use hickory_proto::op::{Edns, MessageType, OpCode, Query};
    use hickory_proto::rr::rdata::{A, CNAME, MX, SOA, SRV, TXT};

    use super::*;

    fn name(s: &str) -> Name {
        Name::from_ascii(s).expect("test name")
    }

    /// A message of every type written here, with names that share suffixes in different cases.
    fn message() -> Message {
        let mut m = Message::new(7, MessageType::Response, OpCode::Query);
        m.metadata.authoritative = true;
        m.add_query(Query::query(name("WWW.Example.org."), RecordType::A));
        let owner = name("WWW.Example.org.");
        m.answers.push(Record::from_rdata(
            owner.clone(),
            60,
            RData::CNAME(CNAME(name("web.example.org."))),
        ));
        m.answers.push(Record::from_rdata(
            name("web.example.org."),
            60,
            RData::A(A::new(192, 0, 2, 1)),
        ));
        m.answers.push(Record::from_rdata(
            name("web.example.org."),
            60,
            RData::MX(MX::new(10, name("mx.example.org."))),
        ));
        m.answers.push(Record::from_rdata(
            name("_x._tcp.example.org."),
            60,
            RData::SRV(SRV::new(1, 2, 3, name("node.example.org."))),
        ));
        m.answers.push(Record::from_rdata(
            name("web.example.org."),
            60,
            RData::TXT(TXT::new(vec!["hello".into()])),
        ));
        m.authorities.push(Record::from_rdata(
            name("example.org."),
            30,
            RData::SOA(SOA::new(
                name("ns1.example.org."),
                name("hostmaster.example.org."),
                1,
                2,
                3,
                4,
                5,
            )),
        ));
        let mut edns = Edns::new();
        edns.set_dnssec_ok(true);
        m.set_edns(edns);
        m
    }

    #[test]
    fn a_message_reads_back_as_hickory_reads_it_and_is_no_longer_than_hickorys() {
        let m = message();
        let mut ours = Vec::new();
        write(&m, &DnssecRecords::default(), &mut ours).expect("writes");
        let back = Message::from_vec(&ours).expect("reads back");
        assert_eq!(back.queries, m.queries);
        assert_eq!(back.answers, m.answers);
        assert_eq!(back.authorities, m.authorities);
        assert_eq!(back.metadata.id, 7);
        assert!(back.metadata.authoritative);
        assert!(back.edns.as_ref().is_some_and(|e| e.flags().dnssec_ok));
        assert_eq!(
            back.answers[0].name.to_string(),
            "WWW.Example.org.",
            "the owner keeps the question's case"
        );
        let hickorys = m.to_vec().expect("hickory writes");
        assert!(
            ours.len() <= hickorys.len(),
            "compressed at least as well: {} against {}",
            ours.len(),
            hickorys.len()
        );
    }

    #[test]
    fn a_suffix_in_another_case_is_not_pointed_to() {
        let mut ours = Vec::new();
        write(&message(), &DnssecRecords::default(), &mut ours).expect("writes");
        // "Example" from the question, "example" from the CNAME's target: both spelt out; and the SRV
        // target's, never compressed; every later one a pointer.
        let count = |needle: &[u8]| ours.windows(needle.len()).filter(|w| w == &needle).count();
        assert_eq!(count(b"\x07Example"), 1);
        assert_eq!(count(b"\x07example"), 2);
    }
}
