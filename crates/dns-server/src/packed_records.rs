//! Records kept in their wire form, for the journal: a zone that changes holds its last writes' removed
//! and added records until the secondaries have taken them, up to half the zone. A hickory `Record` is 280
//! bytes (an 80-byte name, a 184-byte `RData`); here a record is its wire form, its owner compressed against
//! the names before it, about 36 bytes for the benchmark's names (issue 49: memory while the zone changes).
//! They are read back only when an IXFR asks for them.

use hickory_proto::ProtoError;
use hickory_proto::rr::Record;
use hickory_proto::serialize::binary::{BinDecodable, BinDecoder, BinEncodable, BinEncoder};

/// Records, one after the other as a message's section holds them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PackedRecords {
    bytes: Box<[u8]>,
    count: usize,
}

impl PackedRecords {
    /// `records` in their wire form.
    pub fn pack(records: &[Record]) -> Result<PackedRecords, ProtoError> {
        let mut bytes = Vec::new();
        let mut encoder = BinEncoder::new(&mut bytes);
        for record in records {
            record.emit(&mut encoder)?;
        }
        Ok(PackedRecords {
            bytes: bytes.into_boxed_slice(),
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
        let mut decoder = BinDecoder::new(&self.bytes);
        (0..self.count)
            .map(|_| Record::read(&mut decoder).map_err(ProtoError::from))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use hickory_proto::rr::rdata::{A, CNAME, MX, TXT};
    use hickory_proto::rr::{Name, RData};

    use super::*;

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
        println!(
            "{} B packed for {} records of {} B",
            packed.bytes.len(),
            records.len(),
            size_of::<Record>()
        );
        assert_eq!(packed.len(), 400);
        assert_eq!(packed.unpack().expect("reads back"), records);
        assert!(
            packed.bytes.len() * 5 < records.len() * size_of::<Record>(),
            "{} bytes for {} records of {} bytes",
            packed.bytes.len(),
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
}
