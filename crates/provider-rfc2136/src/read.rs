//! A zone read: the records of zone transfers grouped into endpoints as they arrive.
//!
//! A transfer is folded in record by record rather than collected first: at 20,000 records the wire records
//! alone were 9 MB, held beside the endpoints made from them, and a full sync's read was the controller's
//! highest memory of a run (docs/performance.md, "A full sync's working memory: the peaks").

use extdns_endpoint::{Endpoint, RecordType, Ttl};
use hashbrown::HashTable;
use hickory_proto::rr::{DNSClass, Name, RData, Record, RecordType as WireType};

use crate::TxtWire;
use extdns_dns_wire::codec;

/// Endpoints of one or more zones, one per name and type, targets in the order the server sent them.
#[derive(Default)]
pub(crate) struct ZoneRead {
    endpoints: Vec<Endpoint>,
    /// Positions in `endpoints`, hashed by name and type: no copy of any name.
    positions: HashTable<usize>,
    hasher: foldhash::fast::RandomState,
    /// TXT values the server holds split otherwise than extdns would split them.
    wire: TxtWire,
}

fn hash(hasher: &foldhash::fast::RandomState, name: &str, rt: &RecordType) -> u64 {
    use std::hash::BuildHasher;
    hasher.hash_one((name, rt))
}

impl ZoneRead {
    /// Adds one transferred record of `zone`. Skipped: other classes, the zone's own SOA and apex NS (they
    /// belong to whoever runs the server, as in external-dns), and types extdns does not manage.
    pub(crate) fn add(&mut self, r: Record, zone: &Name) {
        if r.dns_class != DNSClass::IN {
            return;
        }
        let rtype = r.record_type();
        if rtype == WireType::SOA || (rtype == WireType::NS && r.name.eq_ignore_root_case(zone)) {
            return;
        }
        let Some((rt, target)) = codec::target(&r.data) else {
            return;
        };
        let name = codec::name_text(&r.name);
        if let RData::TXT(t) = &r.data {
            let chunks: Vec<Vec<u8>> = t.txt_data.iter().map(|c| c.to_vec()).collect();
            if chunks != codec::txt_chunks(&target) {
                self.wire.insert((name.clone(), target.to_string()), chunks);
            }
        }
        let ttl = Ttl(i64::from(r.ttl));
        self.add_endpoint(Endpoint::new(&name, rt, [target]).with_ttl(ttl));
    }

    /// Adds `ep`'s targets to the endpoint of its name and type, or `ep` itself when there is none yet (the
    /// first record of a set gives its TTL).
    fn add_endpoint(&mut self, ep: Endpoint) {
        let Self {
            endpoints,
            positions,
            hasher,
            ..
        } = self;
        let h = hash(hasher, &ep.dns_name, &ep.record_type);
        let same = |&p: &usize| endpoints[p].dns_name == ep.dns_name && endpoints[p].record_type == ep.record_type;
        match positions.find(h, same) {
            Some(&p) => endpoints[p].targets.extend(ep.targets.0),
            None => {
                positions.insert_unique(h, endpoints.len(), |&p| {
                    hash(hasher, &endpoints[p].dns_name, &endpoints[p].record_type)
                });
                endpoints.push(ep);
            }
        }
    }

    /// Folds in the read of another zone.
    pub(crate) fn absorb(&mut self, other: ZoneRead) {
        if self.endpoints.is_empty() {
            *self = other;
            return;
        }
        self.wire.extend(other.wire);
        for ep in other.endpoints {
            self.add_endpoint(ep);
        }
    }

    /// The endpoints, with no room to spare (they are the read's result for a whole sync), and the TXT
    /// values to write back as the server split them.
    pub(crate) fn finish(mut self) -> (Vec<Endpoint>, TxtWire) {
        self.endpoints.shrink_to_fit();
        (self.endpoints, self.wire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hickory_proto::rr::rdata::{A, SOA, TXT};

    fn record(name: &str, ttl: u32, data: RData) -> Record {
        let name = match Name::from_ascii(name) {
            Ok(n) => n,
            Err(e) => panic!("{name}: {e}"),
        };
        Record::from_rdata(name, ttl, data)
    }

    fn a(name: &str, ttl: u32, ip: [u8; 4]) -> Record {
        record(name, ttl, RData::A(A::new(ip[0], ip[1], ip[2], ip[3])))
    }

    fn texts(read: ZoneRead) -> Vec<String> {
        read.finish()
            .0
            .iter()
            .map(|e| {
                format!(
                    "{} {} {} {}",
                    e.dns_name,
                    e.record_type,
                    e.record_ttl.0,
                    e.targets.join(",")
                )
            })
            .collect()
    }

    #[test]
    fn records_of_a_name_and_type_make_one_endpoint_wherever_they_arrive() {
        let zone = match Name::from_ascii("example.org.") {
            Ok(n) => n,
            Err(e) => panic!("{e}"),
        };
        let soa = SOA::new(zone.clone(), zone.clone(), 1, 60, 60, 60, 60);
        let mut read = ZoneRead::default();
        read.add(record("example.org.", 300, RData::SOA(soa)), &zone);
        read.add(a("web.example.org.", 300, [192, 0, 2, 1]), &zone);
        read.add(
            record("web.example.org.", 300, RData::TXT(TXT::new(vec!["v".into()]))),
            &zone,
        );
        read.add(a("api.example.org.", 60, [192, 0, 2, 9]), &zone);
        read.add(a("web.example.org.", 600, [192, 0, 2, 2]), &zone);

        let mut other = ZoneRead::default();
        let child = match Name::from_ascii("k8s.example.org.") {
            Ok(n) => n,
            Err(e) => panic!("{e}"),
        };
        other.add(a("api.example.org.", 60, [192, 0, 2, 10]), &child);
        other.add(a("x.k8s.example.org.", 60, [192, 0, 2, 11]), &child);
        read.absorb(other);

        assert_eq!(
            texts(read),
            [
                "web.example.org A 300 192.0.2.1,192.0.2.2",
                "web.example.org TXT 300 v",
                "api.example.org A 60 192.0.2.9,192.0.2.10",
                "x.k8s.example.org A 60 192.0.2.11",
            ]
        );
    }
}
