//! A signed zone as a secondary takes it by AXFR: every record set with its stored RRSIG, DNSKEY, CDS and
//! CDNSKEY at the apex, and the zone's NSEC chain with its signatures.
//!
//! The chain (RFC 4034 §4.1: every authoritative name and delegation point in canonical order, each
//! naming the next and its own types, the last naming the apex) is the one the server denies with,
//! kept and signed as the zone is written (`crate::dnssec::ZoneSigning::relink`), so a transfer signs
//! nothing. Knot, BIND and any other secondary serve it as they serve any NSEC-signed zone (NXDOMAIN
//! with the covering NSEC and the wildcard's, NODATA with the name's own), so their answers validate
//! with our DS. Names below a delegation (glue) are not authoritative: the chain skips them and their
//! signatures are not sent.

use hickory_proto::rr::{Name, Record, RecordType};

use crate::zones::Zone;

/// A signed zone's content, copied under the read lock: every record and signature, the chain's NSECs.
#[derive(Debug)]
pub(crate) struct SignedZone {
    soa: Record,
    nodes: Vec<NodeCopy>,
    /// The chain's NSEC records and their signatures.
    chain: Vec<Record>,
}

/// One name's records and their signatures.
#[derive(Debug)]
struct NodeCopy {
    name: Name,
    /// Whether the name holds an NS set below the apex: a delegation.
    cut: bool,
    /// Every record but the SOA.
    records: Vec<Record>,
    /// The stored RRSIGs of its sets (the SOA's among them).
    signatures: Vec<Record>,
}

impl SignedZone {
    /// The content of `zone` with the SOA `soa`, if the zone is signed; empty non-terminals are left out
    /// (they exist only as the names below them, and a plain NSEC chain skips them).
    pub(crate) fn snapshot(zone: &Zone, soa: Record) -> Option<SignedZone> {
        let signing = zone.signing()?;
        let nodes = zone
            .nodes()
            .filter(|n| !n.is_empty_non_terminal())
            .map(|node| {
                let name = node.name().into_owned();
                NodeCopy {
                    cut: node.rrset(RecordType::NS).is_some() && node.wire_name() != signing.apex(),
                    records: node
                        .rrsets()
                        .iter()
                        .filter(|s| s.record_type != RecordType::SOA)
                        .flat_map(|s| s.records(name.clone()))
                        .collect(),
                    signatures: node
                        .rrsets()
                        .iter()
                        .flat_map(|s| signing.rrsig_records(node.wire_name(), s.record_type, &name))
                        .collect(),
                    name,
                }
            })
            .collect();
        Some(SignedZone {
            soa,
            nodes,
            chain: signing.chain_records().collect(),
        })
    }

    /// The AXFR's records: the SOA, every record and signature, the NSEC chain, the SOA again. Sorted
    /// without the lock.
    pub(crate) fn records(self) -> Vec<Record> {
        let SignedZone { soa, mut nodes, chain } = self;
        nodes.sort_by(|a, b| a.name.cmp(&b.name));
        let mut records = vec![soa.clone()];
        // In canonical order a delegation's descendants follow it directly, so one pass tells them apart.
        let mut cut: Option<Name> = None;
        for node in nodes {
            let occluded = cut.as_ref().is_some_and(|c| c.zone_of(&node.name) && *c != node.name);
            records.extend(node.records);
            if occluded {
                continue;
            }
            if node.cut {
                cut = Some(node.name.clone());
            }
            records.extend(node.signatures);
        }
        records.extend(chain);
        records.push(soa);
        records
    }
}

#[cfg(test)]
mod tests {
    use hickory_proto::dnssec::rdata::{DNSKEY, DNSSECRData, RRSIG};
    use hickory_proto::dnssec::{PublicKey, TBS};
    use hickory_proto::rr::{DNSClass, LowerName, RData};

    use super::*;
    use crate::answer::tests::{a, name, set};
    use crate::dnssec::KeyAlgorithm;

    /// The transfer of the signed example.org. of the answer tests.
    fn transferred() -> Vec<Record> {
        let zones = crate::dnssec_answer::tests::signed(KeyAlgorithm::EcdsaP256);
        {
            let mut all = zones.write();
            let zone = &mut all.zones_mut()[0];
            zone.put(&name("a.b.c.example.org."), set(vec![a("192.0.2.3")]));
        }
        let all = zones.read();
        let zone = &all.zones()[0];
        let snapshot = SignedZone::snapshot(zone, zone.soa()).expect("signed");
        drop(all);
        snapshot.records()
    }

    fn dnskey(records: &[Record]) -> DNSKEY {
        records
            .iter()
            .find_map(|r| match &r.data {
                RData::DNSSEC(DNSSECRData::DNSKEY(k)) => Some(k.clone()),
                _ => None,
            })
            .expect("the DNSKEY is transferred")
    }

    #[test]
    fn every_authoritative_set_is_signed_and_every_signature_verifies() {
        let records = transferred();
        let key = dnskey(&records);
        let body = &records[1..records.len() - 1];
        let mut covered: Vec<(String, RecordType)> = Vec::new();
        for record in body {
            let RData::DNSSEC(DNSSECRData::RRSIG(sig)) = &record.data else {
                continue;
            };
            let sig: &RRSIG = sig;
            let input = sig.input();
            let mut rrset: Vec<&Record> = body
                .iter()
                .filter(|r| r.name == record.name && r.record_type() == input.type_covered)
                .collect();
            if input.type_covered == RecordType::SOA {
                rrset.push(&records[0]);
            }
            let tbs = TBS::from_input(&record.name, DNSClass::IN, input, rrset.into_iter()).expect("tbs");
            key.public_key()
                .verify(tbs.as_ref(), sig.sig())
                .unwrap_or_else(|e| panic!("{} {:?}: {e}", record.name, input.type_covered));
            covered.push((record.name.to_string().to_lowercase(), input.type_covered));
        }
        for wanted in [
            ("example.org.", RecordType::SOA),
            ("example.org.", RecordType::NS),
            ("example.org.", RecordType::DNSKEY),
            ("example.org.", RecordType::CDS),
            ("example.org.", RecordType::CDNSKEY),
            ("web.example.org.", RecordType::A),
            ("*.wild.example.org.", RecordType::A),
            ("www.example.org.", RecordType::CNAME),
            ("sub.example.org.", RecordType::NSEC),
        ] {
            assert!(
                covered.contains(&(wanted.0.to_string(), wanted.1)),
                "{wanted:?} unsigned: {covered:?}"
            );
        }
        for unsigned in [
            ("sub.example.org.", RecordType::NS),
            ("ns.sub.example.org.", RecordType::A),
        ] {
            assert!(
                !covered.contains(&(unsigned.0.to_string(), unsigned.1)),
                "{unsigned:?}: a delegation and its glue are the child's"
            );
        }
    }

    #[test]
    fn the_nsec_chain_links_every_authoritative_name_in_canonical_order_back_to_the_apex() {
        let records = transferred();
        let links = crate::dnssec_answer::tests::nsec_links(&records);
        let owners: Vec<String> = links.iter().map(|(o, _, _)| o.to_string()).collect();
        assert_eq!(
            owners,
            [
                "example.org.",
                "a.b.c.example.org.",
                "chain.example.org.",
                "ns1.example.org.",
                "sub.example.org.",
                "web.example.org.",
                "*.wild.example.org.",
                "www.example.org.",
            ],
            "canonical order; no empty non-terminal, nothing below the delegation"
        );
        for (i, (_, next, _)) in links.iter().enumerate() {
            let expected = links.get(i + 1).map_or_else(|| name("example.org."), |l| l.0.clone());
            assert_eq!(LowerName::new(next), LowerName::new(&expected));
        }
        let types = |owner: &str| {
            links
                .iter()
                .find(|(o, _, _)| o.to_string() == owner)
                .map(|(_, _, t)| t.clone())
                .unwrap_or_default()
        };
        let apex = types("example.org.");
        for t in [
            RecordType::SOA,
            RecordType::NS,
            RecordType::DNSKEY,
            RecordType::NSEC,
            RecordType::RRSIG,
        ] {
            assert!(apex.contains(&t), "{t} at the apex: {apex:?}");
        }
        let cut = types("sub.example.org.");
        assert!(cut.contains(&RecordType::NS) && !cut.contains(&RecordType::DS) && !cut.contains(&RecordType::SOA));
        let ttl = records
            .iter()
            .find(|r| r.record_type() == RecordType::NSEC)
            .map(|r| r.ttl);
        assert_eq!(ttl, Some(30), "the negative TTL");
    }
}
