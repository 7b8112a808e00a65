//! Records kept in their wire form, for the journal: a zone that changes holds its last writes' removed
//! and added records until the secondaries have taken them, up to half the zone. A hickory `Record` is 280
//! bytes (an 80-byte name, a 184-byte `RData`); here a record is its wire form, its owner compressed against
//! the names before it, about 36 bytes for the benchmark's names (issue 49: memory while the zone changes).
//! They are read back only when an IXFR asks for them.

use hickory_proto::ProtoError;
use hickory_proto::rr::Record;
use hickory_proto::serialize::binary::{BinDecodable, BinDecoder, BinEncodable, BinEncoder};

/// Records, one after the other as a message's section holds them, in chunks: an encoder writes at most a
/// message's 65,535 bytes, and a chunk's names are compressed against the names before them in the chunk.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PackedRecords {
    chunks: Box<[Chunk]>,
    count: usize,
}

/// As many records as one encoder took.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Chunk {
    bytes: Box<[u8]>,
    count: usize,
}

impl PackedRecords {
    /// `records` in their wire form.
    pub fn pack(records: &[Record]) -> Result<PackedRecords, ProtoError> {
        let mut chunks = Vec::new();
        let mut rest = records;
        while !rest.is_empty() {
            let chunk = Chunk::pack(rest)?;
            rest = rest.get(chunk.count..).unwrap_or_default();
            chunks.push(chunk);
        }
        Ok(PackedRecords {
            chunks: chunks.into_boxed_slice(),
            count: records.len(),
        })
    }

    /// How many records.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The records, read back.
    pub fn unpack(&self) -> Result<Vec<Record>, ProtoError> {
        let mut records = Vec::with_capacity(self.count);
        for chunk in &self.chunks {
            let mut decoder = BinDecoder::new(&chunk.bytes);
            for _ in 0..chunk.count {
                records.push(Record::read(&mut decoder).map_err(ProtoError::from)?);
            }
        }
        Ok(records)
    }
}

impl Chunk {
    /// The first of `records` that one encoder takes, at least one: a record that does not fit in an
    /// empty chunk is an error (no record does: the whole record is at most 65,535 bytes on the wire).
    fn pack(records: &[Record]) -> Result<Chunk, ProtoError> {
        let mut bytes = Vec::new();
        let mut count = 0;
        let mut full_at = None;
        {
            let mut encoder = BinEncoder::new(&mut bytes);
            for record in records {
                let start = encoder.offset();
                match record.emit(&mut encoder) {
                    Ok(()) => count += 1,
                    Err(e) if count == 0 => return Err(e),
                    Err(_) => {
                        full_at = Some(start);
                        break;
                    }
                }
            }
        }
        // What the record that did not fit wrote before it failed.
        if let Some(start) = full_at {
            bytes.truncate(start);
        }
        Ok(Chunk {
            bytes: bytes.into_boxed_slice(),
            count,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use hickory_proto::rr::rdata::{A, CNAME, MX, TXT};
    use hickory_proto::rr::{Name, RData};

    use super::*;

    fn packed_bytes(packed: &PackedRecords) -> usize {
        packed.chunks.iter().map(|c| c.bytes.len()).sum()
    }

    #[test]
    fn records_read_back_as_packed_in_a_fifth_of_their_size() {
        let name = |s: &str| Name::from_str(s).expect("name");
        let records: Vec<Record> = (0..100u8)
            .flat_map(|i| {
                let owner = name(&format!("web-{i}.example.org."));
                [
                    Record::from_rdata(owner.clone(), 300, RData::A(A::new(192, 0, 2, i))),
                    Record::from_rdata(owner.clone(), 60, RData::TXT(TXT::new(vec![format!("v={i}")]))),
                    Record::from_rdata(name(&format!("www-{i}.example.org.")), 300, RData::CNAME(CNAME(owner))),
                    Record::from_rdata(
                        name("example.org."),
                        300,
                        RData::MX(MX::new(10, name("mx.example.net."))),
                    ),
                ]
            })
            .collect();
        let packed = PackedRecords::pack(&records).expect("packs");
        assert_eq!(packed.len(), 400);
        assert_eq!(packed.unpack().expect("reads back"), records);
        assert!(
            packed_bytes(&packed) * 5 < records.len() * size_of::<Record>(),
            "{} bytes for {} records of {} bytes",
            packed_bytes(&packed),
            records.len(),
            size_of::<Record>()
        );
        assert!(
            PackedRecords::pack(&[])
                .expect("packs")
                .unpack()
                .expect("reads")
                .is_empty()
        );
    }

    #[test]
    fn more_records_than_a_message_holds_are_packed_in_chunks_and_read_back() {
        let records: Vec<Record> = (0..5_000u32)
            .map(|i| {
                let owner = Name::from_str(&format!("host-{i}.example.org.")).expect("name");
                let text = TXT::new(vec![format!("a text long enough to fill a message sooner {i}")]);
                Record::from_rdata(owner, 300, RData::TXT(text))
            })
            .collect();
        let packed = PackedRecords::pack(&records).expect("packs");
        assert!(packed.chunks.len() > 3, "{} chunks", packed.chunks.len());
        assert!(packed.chunks.iter().all(|c| c.bytes.len() <= usize::from(u16::MAX)));
        assert_eq!(packed.len(), 5_000);
        assert_eq!(packed.unpack().expect("reads back"), records);
    }
}
