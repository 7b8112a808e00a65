//! The DNSSEC records of an answer from a signed zone to a client that set DO (RFC 3225): the answer is
//! built unsigned by `crate::answer`, which notes as it walks the zone what each set of the answer is
//! signed as and what the negative part is about (a [`Proof`]); this adds each set's stored RRSIG and the
//! denial a negative, wildcard or referral answer needs from that note, without walking the zone again,
//! so the unsigned path stays as it was and the two meet in one call.

use hickory_proto::op::{Message, ResponseCode};
use hickory_proto::rr::{LowerName, Name, RData, Record, RecordType};

use crate::dnssec::ZoneSigning;
use crate::dnssec::denial;
use crate::zones::{Node, Zone};

/// Record sets an answer can hold: one per link of the longest CNAME chain followed.
const MAX_SETS: usize = 8;

/// What the walk that built an answer found, for signing it: the sets of its answer section in order,
/// and what its denial is about. Held on the stack: an answer to a client without DO pays nothing more.
#[derive(Debug, Default)]
pub(crate) struct Proof<'z> {
    sets: [Option<AnswerSet<'z>>; MAX_SETS],
    denial: Option<Denial<'z>>,
}

/// One record set of the answer section.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AnswerSet<'z> {
    /// How many records of the answer section it is.
    pub(crate) records: usize,
    /// The name it is stored and signed under: the name itself, or the wildcard that synthesised it.
    pub(crate) signed_as: &'z LowerName,
    /// Its type.
    pub(crate) record_type: RecordType,
    /// For a set a wildcard synthesised: the labels of the next closer name, whose absence the answer
    /// proves.
    pub(crate) next_closer: Option<u8>,
}

/// What the negative part of an answer is about.
#[derive(Debug)]
pub(crate) enum Denial<'z> {
    /// The name (the last of the chain) does not exist: RFC 9824's NXNAME.
    NoName(Name),
    /// The name exists (or a wildcard stands for it) with these sets, not the type asked.
    NoType(Name, &'z Node),
    /// A referral to this delegation, which has no DS: unsigned.
    Unsigned(&'z Node),
}

impl<'z> Proof<'z> {
    /// Notes the next set of the answer section.
    pub(crate) fn answered(&mut self, set: AnswerSet<'z>) {
        if let Some(slot) = self.sets.iter_mut().find(|s| s.is_none()) {
            *slot = Some(set);
        }
    }

    /// Notes what the answer denies.
    pub(crate) fn deny(&mut self, denial: Denial<'z>) {
        self.denial = Some(denial);
    }
}

/// Adds to `response` (the authoritative answer from `zone` that `proof` was noted for) the signatures
/// and proofs a validator needs; `now` dates the proofs signed here (seconds since the epoch).
pub(crate) fn add_dnssec(zone: &Zone, signing: &ZoneSigning, proof: Proof<'_>, response: &mut Message, now: u32) {
    let ctx = Ctx { zone, signing, now };
    ctx.sign_answers(&proof.sets, response);
    match proof.denial {
        Some(Denial::Unsigned(cut)) => ctx.referral(cut, response),
        Some(Denial::NoName(last)) => {
            ctx.sign_soa(response);
            response.metadata.response_code = ResponseCode::NoError;
            ctx.push_signed(&mut response.authorities, denial::nxname(&last), last);
        }
        Some(Denial::NoType(last, node)) => {
            ctx.sign_soa(response);
            let nsec = denial::at_name(&last, types_of(node));
            ctx.push_signed(&mut response.authorities, nsec, last);
        }
        None => {}
    }
}

struct Ctx<'a> {
    zone: &'a Zone,
    signing: &'a ZoneSigning,
    now: u32,
}

impl Ctx<'_> {
    /// A referral: the delegation is unsigned, which an NSEC at the cut with NS and no DS proves.
    fn referral(&self, cut: &Node, response: &mut Message) {
        let nsec = denial::at_name(cut.name(), types_of(cut));
        self.push_signed(&mut response.authorities, nsec, cut.name().clone());
    }

    /// Each record set of the answer section followed by its RRSIG; a set a wildcard synthesised gets
    /// the wildcard's signature and the NSEC proving the name asked does not exist. The records are
    /// moved, not copied.
    fn sign_answers(&self, sets: &[Option<AnswerSet<'_>>], response: &mut Message) {
        let sets = sets.iter().map_while(|s| s.as_ref());
        if sets.clone().next().is_none() {
            return;
        }
        let answers = std::mem::take(&mut response.answers);
        let mut signed = Vec::with_capacity(answers.len() + MAX_SETS);
        let mut records = answers.into_iter();
        for set in sets {
            let start = signed.len();
            signed.extend(records.by_ref().take(set.records));
            let Some(owner) = signed.get(start).map(|r: &Record| r.name.clone()) else {
                continue;
            };
            signed.extend(self.signing.rrsig_records(set.signed_as, set.record_type, &owner));
            if let Some(labels) = set.next_closer {
                self.prove_absent(&owner.trim_to(usize::from(labels)), response);
            }
        }
        signed.extend(records);
        response.answers = signed;
    }

    /// The SOA of a negative answer signed, with the SOA's negative TTL (RFC 2308 §3), as the SOA
    /// itself is served.
    fn sign_soa(&self, response: &mut Message) {
        let Some(soa) = response.authorities.iter().find(|r| r.record_type() == RecordType::SOA) else {
            return;
        };
        let ttl = soa.ttl;
        let sig = self
            .signing
            .rrsig_records(self.zone.lower_origin(), RecordType::SOA, &soa.name)
            .into_iter()
            .map(|mut sig| {
                sig.ttl = ttl;
                sig
            });
        response.authorities.extend(sig);
    }

    /// The NSEC covering `next_closer` and its signature, in the authority section.
    fn prove_absent(&self, next_closer: &Name, response: &mut Message) {
        let Some((owner, nsec)) = denial::covering(next_closer) else {
            return;
        };
        let already = response.authorities.iter().any(|r| r.name == owner);
        if !already {
            self.push_signed(&mut response.authorities, Some(nsec), owner);
        }
    }

    /// `data` at `owner`, with the negative TTL (RFC 9077), and its signature made now.
    fn push_signed(&self, section: &mut Vec<Record>, data: Option<RData>, owner: Name) {
        let Some(data) = data else { return };
        let ttl = self.zone.negative_ttl();
        let sig = self
            .signing
            .sign_now(&owner, ttl, std::slice::from_ref(&data), self.now);
        section.push(Record::from_rdata(owner, ttl, data));
        section.extend(sig);
    }
}

/// The types at a node, as an NSEC lists them.
fn types_of(node: &Node) -> impl Iterator<Item = RecordType> + '_ {
    node.rrsets().iter().map(|s| s.record_type)
}

#[cfg(test)]
pub(crate) mod tests {
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
    pub(crate) fn signed(algorithm: KeyAlgorithm) -> Zones {
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
    fn one_walk_notes_what_each_set_is_signed_as_and_what_is_denied() {
        let zones = signed(KeyAlgorithm::EcdsaP256);
        {
            let mut all = zones.write();
            let zone = &mut all.zones_mut()[0];
            zone.put(&name("alias.example.org."), set(vec![cname("x.wild.example.org.")]));
            zone.put(&name("a.b.c.example.org."), set(vec![a("192.0.2.3")]));
        }
        let key = dnskey(&zones);
        let set = zones.read();
        let mut m = Message::new(7, MessageType::Query, OpCode::Query);
        m.add_query(Query::query(name("Alias.example.org."), RecordType::A));
        let mut edns = Edns::new();
        edns.set_dnssec_ok(true);
        m.set_edns(edns);
        let answer = crate::answer::prepare(&set, &m, Transport::Tcp, u16::MAX);
        let proof = answer.proof().expect("a DO question to a signed zone");
        let noted: Vec<(String, RecordType, Option<u8>, usize)> = proof
            .sets
            .iter()
            .flatten()
            .map(|s| (s.signed_as.to_string(), s.record_type, s.next_closer, s.records))
            .collect();
        assert_eq!(
            noted,
            [
                ("alias.example.org.".to_string(), RecordType::CNAME, None, 1),
                ("*.wild.example.org.".to_string(), RecordType::A, Some(4), 1),
            ],
            "the CNAME under its own name, the target's set under the wildcard, x.wild the next closer"
        );
        assert!(proof.denial.is_none());
        let r = answer.signed(crate::dnssec::now());
        assert_eq!(verify(&r.answers, &key), [RecordType::CNAME, RecordType::A]);
        assert_eq!(verify(&r.authorities, &key), [RecordType::NSEC]);
        let (nsec, data) = nsec_of(&r.authorities);
        let target = name("x.wild.example.org.");
        assert!(nsec.name < target && &target < data.next_domain_name());
        drop(set);
        let ent = ask(&zones, "b.c.example.org.", RecordType::A, true);
        assert_eq!(ent.response_code, ResponseCode::NoError);
        let (_, data) = nsec_of(&ent.authorities);
        assert_eq!(
            data.type_bit_maps().count(),
            2,
            "an empty non-terminal: NSEC and RRSIG only"
        );
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
