//! The DNSSEC records of an answer from a signed zone to a client that set DO (RFC 3225): the answer is
//! built unsigned by `crate::answer`, then this adds each set's stored RRSIG and the denial a negative, wildcard or referral
//! answer needs, so the unsigned path stays as it was and the two meet in one call.

use hickory_proto::op::{Message, ResponseCode};
use hickory_proto::rr::{LowerName, Name, RData, Record, RecordType};

use crate::dnssec::ZoneSigning;
use crate::dnssec::denial;
use crate::zones::{Node, Zone};

/// Adds to `response` (the authoritative answer to `qname`/`qtype` from `zone`) the signatures and proofs
/// a validator needs; `now` dates the proofs signed here (seconds since the epoch).
pub(crate) fn add_dnssec(
    zone: &Zone,
    signing: &ZoneSigning,
    qname: &Name,
    qtype: RecordType,
    response: &mut Message,
    now: u32,
) {
    let ctx = Ctx { zone, signing, now };
    if !response.metadata.authoritative {
        ctx.referral(response);
        return;
    }
    ctx.sign_answers(response);
    let negative = response.authorities.iter().any(|r| r.record_type() == RecordType::SOA);
    if negative {
        ctx.deny(qname, qtype, response);
    }
}

struct Ctx<'a> {
    zone: &'a Zone,
    signing: &'a ZoneSigning,
    now: u32,
}

impl Ctx<'_> {
    /// A referral: the delegation is unsigned, which an NSEC at the cut with NS and no DS proves.
    fn referral(&self, response: &mut Message) {
        let Some(cut) = response
            .authorities
            .iter()
            .find(|r| r.record_type() == RecordType::NS)
            .map(|r| r.name.clone())
        else {
            return;
        };
        let types = self
            .zone
            .node(&LowerName::new(&cut))
            .map(|n| types_of(n).collect::<Vec<_>>())
            .unwrap_or_else(|| vec![RecordType::NS]);
        let ttl = self.negative_ttl();
        if let Some(nsec) = denial::at_name(&cut, types) {
            self.push_signed(&mut response.authorities, &cut, ttl, nsec);
        }
    }

    /// Each record set of the answer section followed by its RRSIG; a set a wildcard synthesised gets
    /// the wildcard's signature and the NSEC proving the name asked does not exist.
    fn sign_answers(&self, response: &mut Message) {
        let answers = std::mem::take(&mut response.answers);
        let mut signed = Vec::with_capacity(answers.len() * 2);
        let mut at = 0;
        while at < answers.len() {
            let first = &answers[at];
            let end = at
                + answers[at..]
                    .iter()
                    .take_while(|r| r.record_type() == first.record_type() && r.name == first.name)
                    .count();
            signed.extend_from_slice(&answers[at..end]);
            let owner = first.name.clone();
            let record_type = first.record_type();
            let lower = LowerName::new(&owner);
            let exact = self.zone.node(&lower).and_then(|n| n.rrset(record_type)).is_some();
            if exact {
                signed.extend(self.signing.rrsig_records(&lower, record_type, &owner));
            } else if let Some((wildcard, next_closer)) = self.wildcard_of(&lower) {
                signed.extend(self.signing.rrsig_records(&wildcard, record_type, &owner));
                self.prove_absent(&next_closer, response);
            }
            at = end;
        }
        response.answers = signed;
    }

    /// The denial of a negative answer: the SOA's signature, and an NSEC at the last name of the chain
    /// (compact: a name that does not exist is answered NODATA, NXNAME in its bitmap).
    fn deny(&self, qname: &Name, qtype: RecordType, response: &mut Message) {
        if let Some(soa) = response.authorities.iter().find(|r| r.record_type() == RecordType::SOA) {
            let lower = LowerName::new(&soa.name);
            // Served with the SOA's negative TTL (RFC 2308 §3), as the SOA itself is.
            let sig = self
                .signing
                .rrsig_records(&lower, RecordType::SOA, &soa.name)
                .into_iter()
                .map(|mut sig| {
                    sig.ttl = soa.ttl;
                    sig
                })
                .collect::<Vec<_>>();
            response.authorities.extend(sig);
        }
        let last = last_name(qname, qtype, &response.answers);
        let lower = LowerName::new(&last);
        if !self.zone.lower_origin().zone_of(&lower) {
            return;
        }
        let nsec = if response.metadata.response_code == ResponseCode::NXDomain {
            response.metadata.response_code = ResponseCode::NoError;
            denial::nxname(&last)
        } else {
            let node = self
                .zone
                .node(&lower)
                .or_else(|| self.wildcard_of(&lower).and_then(|(w, _)| self.zone.node(&w)));
            let types: Vec<RecordType> = node.map(|n| types_of(n).collect()).unwrap_or_default();
            denial::at_name(&last, types)
        };
        let ttl = self.negative_ttl();
        if let Some(nsec) = nsec {
            self.push_signed(&mut response.authorities, &last, ttl, nsec);
        }
    }

    /// For a name that does not exist: the wildcard at its closest encloser, and the next closer name
    /// (the encloser with one more label of the name), if that wildcard exists.
    fn wildcard_of(&self, name: &LowerName) -> Option<(LowerName, Name)> {
        let apex = self.zone.lower_origin().num_labels();
        let mut next_closer: Name = name.into();
        let mut encloser = next_closer.base_name();
        while encloser.num_labels() >= apex {
            if self.zone.node(&LowerName::new(&encloser)).is_some() {
                let wildcard = LowerName::new(&encloser.prepend_label("*").ok()?);
                return self.zone.node(&wildcard).map(|_| (wildcard, next_closer));
            }
            next_closer = encloser;
            encloser = next_closer.base_name();
        }
        None
    }

    /// The NSEC covering `next_closer` and its signature, in the authority section.
    fn prove_absent(&self, next_closer: &Name, response: &mut Message) {
        let Some((owner, nsec)) = denial::covering(next_closer) else {
            return;
        };
        let already = response.authorities.iter().any(|r| r.name == owner);
        if !already {
            let ttl = self.negative_ttl();
            self.push_signed(&mut response.authorities, &owner, ttl, nsec);
        }
    }

    fn push_signed(&self, section: &mut Vec<Record>, owner: &Name, ttl: u32, data: RData) {
        let sig = self.signing.sign_now(owner, ttl, std::slice::from_ref(&data), self.now);
        section.push(Record::from_rdata(owner.clone(), ttl, data));
        section.extend(sig);
    }

    /// An NSEC's TTL: the negative TTL (RFC 9077).
    fn negative_ttl(&self) -> u32 {
        self.zone.negative_soa().ttl
    }
}

/// The types at a node, as an NSEC lists them.
fn types_of(node: &Node) -> impl Iterator<Item = RecordType> + '_ {
    node.rrsets().iter().map(|s| s.record_type)
}

/// The name a chain of CNAMEs from `qname` ends at (the name the negative part of the answer is about).
fn last_name(qname: &Name, qtype: RecordType, answers: &[Record]) -> Name {
    let mut last = qname.clone();
    if matches!(qtype, RecordType::CNAME | RecordType::ANY) {
        return last;
    }
    for record in answers {
        if let RData::CNAME(target) = &record.data
            && record.name == last
        {
            last = target.0.clone();
        }
    }
    last
}

#[cfg(test)]
mod tests {
    use hickory_proto::dnssec::rdata::{DNSKEY, DNSSECRData, NSEC, RRSIG};
    use hickory_proto::dnssec::{PublicKey, TBS};
    use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query, ResponseCode};
    use hickory_proto::rr::rdata::NS;
    use hickory_proto::rr::{DNSClass, LowerName, RData, Record, RecordType};

    use crate::answer::respond;
    use crate::answer::tests::{a, cname, name, set};
    use crate::config::Limits;
    use crate::dnssec::denial::NXNAME;
    use crate::dnssec::{DnssecConfig, KeyAlgorithm, ZoneKey};
    use crate::metrics::Transport;
    use crate::zones::Zones;
    use crate::zones::tests::zone_config;

    /// A signed example.org.: web (A), www (CNAME web), chain (CNAME www), *.wild (A), sub (delegated).
    fn signed(algorithm: KeyAlgorithm) -> Zones {
        let mut config = zone_config("example.org.");
        config.dnssec = Some(DnssecConfig::new(ZoneKey::generate(algorithm).expect("key")));
        let zones = Zones::new(&[config], 7, Limits::default());
        {
            let mut all = zones.write();
            let zone = all.zone_for_mut(&LowerName::new(&name("example.org."))).expect("zone");
            let mut put = |n: &str, data: Vec<RData>| {
                zone.put(&name(n), set(data));
            };
            put("web.example.org.", vec![a("192.0.2.1"), a("192.0.2.2")]);
            put("www.example.org.", vec![cname("web.example.org.")]);
            put("chain.example.org.", vec![cname("www.example.org.")]);
            put("*.wild.example.org.", vec![a("192.0.2.4")]);
            put("sub.example.org.", vec![RData::NS(NS(name("ns.sub.example.org.")))]);
            put("ns.sub.example.org.", vec![a("192.0.2.6")]);
        }
        zones
    }

    fn ask(zones: &Zones, qname: &str, qtype: RecordType, dnssec_ok: bool) -> Message {
        let mut m = Message::new(7, MessageType::Query, OpCode::Query);
        m.add_query(Query::query(name(qname), qtype));
        let mut edns = Edns::new();
        edns.set_dnssec_ok(dnssec_ok);
        m.set_edns(edns);
        respond(&zones.read(), &m, Transport::Tcp, u16::MAX)
    }

    fn dnskey(zones: &Zones) -> DNSKEY {
        let r = ask(zones, "example.org.", RecordType::DNSKEY, true);
        r.answers
            .iter()
            .find_map(|r| match &r.data {
                RData::DNSSEC(DNSSECRData::DNSKEY(k)) => Some(k.clone()),
                _ => None,
            })
            .expect("a DNSKEY at the apex")
    }

    /// Checks every RRSIG of `section` against the records it covers there; returns the types covered.
    fn verify(section: &[Record], key: &DNSKEY) -> Vec<RecordType> {
        let mut covered = Vec::new();
        for record in section {
            let RData::DNSSEC(DNSSECRData::RRSIG(sig)) = &record.data else {
                continue;
            };
            let sig: &RRSIG = sig;
            let input = sig.input();
            let rrset: Vec<&Record> = section
                .iter()
                .filter(|r| r.name == record.name && r.record_type() == input.type_covered)
                .collect();
            assert!(!rrset.is_empty(), "an RRSIG over nothing at {}", record.name);
            assert_eq!(record.ttl, rrset[0].ttl, "the RRSIG has its set's TTL");
            let tbs = TBS::from_input(&record.name, DNSClass::IN, input, rrset.into_iter()).expect("tbs");
            key.public_key()
                .verify(tbs.as_ref(), sig.sig())
                .unwrap_or_else(|e| panic!("{} {:?}: {e}", record.name, input.type_covered));
            covered.push(input.type_covered);
        }
        covered
    }

    /// The NSEC record of `section` and its data.
    fn nsec_of(section: &[Record]) -> (&Record, &NSEC) {
        section
            .iter()
            .find_map(|r| match &r.data {
                RData::DNSSEC(DNSSECRData::NSEC(data)) => Some((r, data)),
                _ => None,
            })
            .expect("an NSEC")
    }

    fn has(section: &[Record], record_type: RecordType) -> bool {
        section.iter().any(|r| r.record_type() == record_type)
    }

    #[test]
    fn positive_answers_carry_verifying_signatures_and_only_to_do_clients() {
        for algorithm in [KeyAlgorithm::EcdsaP256, KeyAlgorithm::Ed25519] {
            let zones = signed(algorithm);
            let key = dnskey(&zones);
            let r = ask(&zones, "WEB.example.org.", RecordType::A, true);
            assert_eq!(verify(&r.answers, &key), [RecordType::A]);
            let apex = ask(&zones, "example.org.", RecordType::DNSKEY, true);
            assert_eq!(verify(&apex.answers, &key), [RecordType::DNSKEY]);
            for t in [RecordType::CDS, RecordType::CDNSKEY, RecordType::SOA, RecordType::NS] {
                let r = ask(&zones, "example.org.", t, true);
                assert_eq!(verify(&r.answers, &key), [t]);
            }
            let plain = ask(&zones, "web.example.org.", RecordType::A, false);
            assert!(!has(&plain.answers, RecordType::RRSIG));
        }
    }

    #[test]
    fn a_cname_chain_has_each_link_signed() {
        let zones = signed(KeyAlgorithm::EcdsaP256);
        let key = dnskey(&zones);
        let r = ask(&zones, "chain.example.org.", RecordType::A, true);
        assert_eq!(
            verify(&r.answers, &key),
            [RecordType::CNAME, RecordType::CNAME, RecordType::A]
        );
    }

    #[test]
    fn a_wildcard_answer_has_the_wildcards_signature_and_a_proof_that_the_name_does_not_exist() {
        let zones = signed(KeyAlgorithm::EcdsaP256);
        let key = dnskey(&zones);
        let r = ask(&zones, "a.b.wild.example.org.", RecordType::A, true);
        assert_eq!(verify(&r.answers, &key), [RecordType::A]);
        let RData::DNSSEC(DNSSECRData::RRSIG(sig)) = &r.answers[1].data else {
            panic!("the RRSIG follows the set");
        };
        assert_eq!(sig.input().num_labels, 3, "the labels of *.wild.example.org.");
        assert_eq!(verify(&r.authorities, &key), [RecordType::NSEC]);
        let (nsec, data) = nsec_of(&r.authorities);
        let qname = name("a.b.wild.example.org.");
        assert!(nsec.name < qname && &qname < data.next_domain_name());
    }

    #[test]
    fn a_missing_name_is_a_compact_nodata_with_nxname() {
        let zones = signed(KeyAlgorithm::EcdsaP256);
        let key = dnskey(&zones);
        let r = ask(&zones, "nope.example.org.", RecordType::A, true);
        assert_eq!(r.response_code, ResponseCode::NoError, "RFC 9824: NOERROR");
        assert!(r.answers.is_empty());
        let mut types = verify(&r.authorities, &key);
        types.sort_by_key(|t| u16::from(*t));
        assert_eq!(types, [RecordType::SOA, RecordType::NSEC]);
        let (nsec, data) = nsec_of(&r.authorities);
        assert_eq!(nsec.name, name("nope.example.org."));
        assert!(data.type_bit_maps().any(|t| t == NXNAME));
        // Without DO the answer stays a plain NXDOMAIN.
        let plain = ask(&zones, "nope.example.org.", RecordType::A, false);
        assert_eq!(plain.response_code, ResponseCode::NXDomain);
    }

    #[test]
    fn nodata_lists_the_types_present_and_a_referral_proves_the_delegation_unsigned() {
        let zones = signed(KeyAlgorithm::EcdsaP256);
        let key = dnskey(&zones);
        let r = ask(&zones, "web.example.org.", RecordType::AAAA, true);
        assert_eq!(verify(&r.authorities, &key), [RecordType::SOA, RecordType::NSEC]);
        let (_, data) = nsec_of(&r.authorities);
        let types: Vec<RecordType> = data.type_bit_maps().collect();
        assert!(types.contains(&RecordType::A) && !types.contains(&RecordType::AAAA) && !types.contains(&NXNAME));
        let referral = ask(&zones, "host.sub.example.org.", RecordType::A, true);
        assert!(!referral.metadata.authoritative);
        assert_eq!(verify(&referral.authorities, &key), [RecordType::NSEC]);
        let (_, data) = nsec_of(&referral.authorities);
        assert!(data.type_bit_maps().any(|t| t == RecordType::NS));
        assert!(
            !data
                .type_bit_maps()
                .any(|t| t == RecordType::DS || t == RecordType::SOA)
        );
        assert!(
            !referral.authorities.iter().any(
                |r| matches!(&r.data, RData::DNSSEC(DNSSECRData::RRSIG(s)) if s.input().type_covered == RecordType::NS)
            ),
            "the child's NS set is not ours to sign"
        );
    }

    #[test]
    fn a_change_is_signed_when_written_and_a_removed_set_loses_its_signature() {
        let zones = signed(KeyAlgorithm::EcdsaP256);
        let key = dnskey(&zones);
        let web = LowerName::new(&name("web.example.org."));
        {
            let mut all = zones.write();
            let zone = all.zone_for_mut(&web).expect("zone");
            zone.put(&name("web.example.org."), set(vec![a("192.0.2.9")]));
            zone.commit(0, vec![], vec![]);
        }
        let r = ask(&zones, "web.example.org.", RecordType::A, true);
        assert_eq!(r.answers.len(), 2);
        assert_eq!(verify(&r.answers, &key), [RecordType::A]);
        let soa = ask(&zones, "example.org.", RecordType::SOA, true);
        assert_eq!(
            verify(&soa.answers, &key),
            [RecordType::SOA],
            "the new serial's SOA is signed"
        );
        let before = zones.read().zones()[0].signing().map(|s| s.len());
        zones.write().zones_mut()[0].remove(&web, RecordType::A);
        assert_eq!(
            zones.read().zones()[0].signing().map(|s| s.len()),
            before.map(|n| n - 1)
        );
    }

    #[test]
    fn signatures_falling_due_are_renewed_in_batches() {
        let zones = signed(KeyAlgorithm::EcdsaP256);
        let now = crate::dnssec::now();
        let total = zones.read().zones()[0].signing().map_or(0, |s| s.len());
        assert_eq!(
            crate::dnssec_renew::renew(&zones, now),
            0,
            "fresh signatures are not due"
        );
        // Twelve days on, past half of 14 days plus any jitter, every signature is due.
        let later = now + 12 * 86_400;
        assert_eq!(crate::dnssec_renew::renew(&zones, later), total);
        assert_eq!(
            crate::dnssec_renew::renew(&zones, later),
            0,
            "renewed ones are fresh again"
        );
    }
}
