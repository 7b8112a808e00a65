//! The DNSSEC records of an answer from a signed zone to a client that set DO (RFC 3225): the answer is
//! built unsigned by `crate::answer`, which notes as it walks the zone what each set of the answer is
//! signed as and what the negative part is about (a [`Proof`]); this picks each set's stored RRSIG and the
//! denial a negative, wildcard or referral answer needs from that note, without walking the zone again,
//! so the unsigned path stays as it was and the two meet in one call. The denials are the NSECs of the
//! zone's chain, signed when the zone was written (`crate::dnssec::ZoneSigning::relink`): an answer
//! signs nothing, whatever the name asked, and copies nothing either: what it picks are references
//! ([`DnssecRecords`]) that `crate::wire` writes as the bytes they are stored as.

use hickory_proto::op::Message;
use hickory_proto::rr::{Name, RecordType};

use crate::dnssec::{Nsec, Signed, ZoneSigning};
use crate::name_key::WireName;
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
    /// The node it is stored and signed under: the name's own, or the wildcard's that synthesised it.
    pub(crate) signed_as: &'z Node,
    /// Its type.
    pub(crate) record_type: RecordType,
    /// For a set a wildcard synthesised: the labels of the next closer name, whose absence the answer
    /// proves.
    pub(crate) next_closer: Option<u8>,
}

/// What the negative part of an answer is about.
#[derive(Debug)]
pub(crate) enum Denial<'z> {
    /// The name (the last of the chain) does not exist: NXDOMAIN, proved by the NSECs covering it and
    /// the wildcard that could have stood for it.
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

/// Record sets' RRSIGs and NSECs the authority section of a signed answer can hold: a wildcard's proof
/// for each set, and the SOA's signature and two NSECs of a denial.
const MAX_AUTHORITIES: usize = MAX_SETS + 3;

/// The DNSSEC records a signed answer adds to the message built unsigned, as the zone's signing stores
/// them: [`crate::wire`] writes their bytes, so an answer makes no record of them (issue 49: a signed
/// answer as cheap as Knot's). Held on the stack, borrowed from the snapshot the answer was read from.
#[derive(Debug, Default)]
pub(crate) struct DnssecRecords<'z> {
    /// Each answer set's signature, by the index of the set's last record in the answer section.
    answers: [Option<(usize, Signed<'z>)>; MAX_SETS],
    /// What follows the authority section's own records, in order.
    authorities: [Option<AuthorityRecord<'z>>; MAX_AUTHORITIES],
}

/// A DNSSEC record (with its signatures) of the authority section.
#[derive(Debug, Clone, Copy)]
pub(crate) enum AuthorityRecord<'z> {
    /// The signature of a set of the section (the SOA), served with `ttl`.
    Signature {
        owner: &'z Name,
        ttl: u32,
        signature: Signed<'z>,
    },
    /// An NSEC of the chain and its signature.
    Nsec(Nsec<'z>),
}

impl<'z> DnssecRecords<'z> {
    /// The signature that follows the answer record at `index`, the last of its set.
    pub(crate) fn signature_after(&self, index: usize) -> Option<Signed<'z>> {
        self.answers
            .iter()
            .map_while(Option::as_ref)
            .find(|(last, _)| *last == index)
            .map(|(_, signature)| *signature)
    }

    /// The records that follow the authority section's own, in order.
    pub(crate) fn authorities(&self) -> impl Iterator<Item = AuthorityRecord<'z>> + '_ {
        self.authorities.iter().map_while(|a| *a)
    }

    fn sign_answer(&mut self, last: usize, signature: Signed<'z>) {
        if let Some(slot) = self.answers.iter_mut().find(|s| s.is_none()) {
            *slot = Some((last, signature));
        }
    }

    fn add_authority(&mut self, record: AuthorityRecord<'z>) {
        if let Some(slot) = self.authorities.iter_mut().find(|s| s.is_none()) {
            *slot = Some(record);
        }
    }

    /// An NSEC and its signature, unless the section holds that NSEC already: one NSEC often proves two
    /// things.
    fn add_nsec(&mut self, nsec: Option<Nsec<'z>>) {
        let Some(nsec) = nsec else { return };
        let already = self
            .authorities()
            .any(|a| matches!(a, AuthorityRecord::Nsec(n) if n.is(&nsec)));
        if !already {
            self.add_authority(AuthorityRecord::Nsec(nsec));
        }
    }
}

/// The signatures and proofs a validator needs in `response` (the authoritative answer from `zone` that
/// `proof` was noted for), all of them made when the zone was written: answering signs nothing, and
/// copies nothing either.
pub(crate) fn dnssec_records<'z>(
    zone: &'z Zone,
    signing: &'z ZoneSigning,
    proof: &Proof<'z>,
    response: &Message,
) -> DnssecRecords<'z> {
    let ctx = Ctx { zone, signing };
    let mut records = DnssecRecords::default();
    ctx.sign_answers(&proof.sets, response, &mut records);
    match &proof.denial {
        Some(Denial::Unsigned(cut)) => records.add_nsec(signing.link_at(cut.wire_name())),
        Some(Denial::NoName(last)) => {
            // RFC 4035 §3.1.3.2: the NSEC covering the name, and the one covering the wildcard of its
            // closest encloser, which could have answered for it.
            ctx.sign_soa(response, &mut records);
            let last = WireName::of(last);
            records.add_nsec(signing.link_covering(&last));
            if let Some(wildcard) = ctx.wildcard_of_encloser(&last) {
                records.add_nsec(signing.link_covering(&wildcard));
            }
        }
        Some(Denial::NoType(last, node)) => {
            ctx.sign_soa(response, &mut records);
            let asked = WireName::of(last);
            let at = node.wire_name();
            if *at != asked {
                // A wildcard's NODATA (RFC 4035 §3.1.3.4): the name asked does not exist, the wildcard
                // lacks the type.
                records.add_nsec(signing.link_covering(&asked));
                records.add_nsec(signing.link_at(at));
            } else if node.is_empty_non_terminal() {
                // No NSEC at an empty non-terminal: the one covering it, whose next name is below it.
                records.add_nsec(signing.link_covering(&asked));
            } else {
                records.add_nsec(signing.link_at(&asked));
            }
        }
        None => {}
    }
    records
}

struct Ctx<'z> {
    zone: &'z Zone,
    signing: &'z ZoneSigning,
}

impl<'z> Ctx<'z> {
    /// Each record set of the answer section gets its RRSIG after its last record; a set a wildcard
    /// synthesised gets the wildcard's signature and the NSEC proving the name asked does not exist.
    fn sign_answers(&self, sets: &[Option<AnswerSet<'z>>], response: &Message, records: &mut DnssecRecords<'z>) {
        let mut start = 0;
        for set in sets.iter().map_while(Option::as_ref) {
            let Some(owner) = response.answers.get(start).map(|r| &r.name) else {
                break;
            };
            start += set.records;
            if let Some(signature) = self
                .signing
                .stored_signature(set.signed_as.wire_name(), set.record_type)
            {
                records.sign_answer(start - 1, signature);
            }
            if let Some(labels) = set.next_closer {
                let next_closer = WireName::of(&owner.trim_to(usize::from(labels)));
                records.add_nsec(self.signing.link_covering(&next_closer));
            }
        }
    }

    /// The SOA of a negative answer signed, with the SOA's negative TTL (RFC 2308 §3), as the SOA
    /// itself is served.
    fn sign_soa(&self, response: &Message, records: &mut DnssecRecords<'z>) {
        let Some(soa) = response.authorities.iter().find(|r| r.record_type() == RecordType::SOA) else {
            return;
        };
        if let Some(signature) = self.signing.stored_signature(self.signing.apex(), RecordType::SOA) {
            records.add_authority(AuthorityRecord::Signature {
                owner: self.zone.origin(),
                ttl: soa.ttl,
                signature,
            });
        }
    }

    /// The wildcard at the closest encloser of `name` (a name that does not exist): the deepest of its
    /// ancestors the zone holds, empty non-terminals included.
    fn wildcard_of_encloser(&self, name: &WireName) -> Option<WireName> {
        let apex = self.signing.apex();
        name.ancestors()
            .find(|above| above == apex || self.zone.node_at(above.labels()).is_some())?
            .wildcard_child()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use hickory_proto::dnssec::rdata::{DNSKEY, DNSSECRData, NSEC, RRSIG};
    use hickory_proto::dnssec::{PublicKey, TBS};
    use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query, ResponseCode};
    use hickory_proto::rr::rdata::NS;
    use hickory_proto::rr::{DNSClass, LowerName, Name, RData, Record, RecordType};

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
            .map(|s| {
                (
                    s.signed_as.lower_name().to_string(),
                    s.record_type,
                    s.next_closer,
                    s.records,
                )
            })
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
        let r = answer.signed().read_back();
        assert_eq!(verify(&r.answers, &key), [RecordType::CNAME, RecordType::A]);
        assert_eq!(verify(&r.authorities, &key), [RecordType::NSEC]);
        let (nsec, data) = nsec_of(&r.authorities);
        let target = name("x.wild.example.org.");
        assert!(nsec.name < target && &target < data.next_domain_name());
        drop(set);
        let ent = ask(&zones, "b.c.example.org.", RecordType::A, true);
        assert_eq!(ent.response_code, ResponseCode::NoError);
        let (nsec, data) = nsec_of(&ent.authorities);
        let ent_name = name("b.c.example.org.");
        assert!(
            nsec.name < ent_name && ent_name.zone_of(data.next_domain_name()),
            "an empty non-terminal: the NSEC covering it names a name below it next"
        );
    }

    #[test]
    fn a_missing_name_is_nxdomain_with_the_nsecs_covering_it_and_the_wildcard() {
        let zones = signed(KeyAlgorithm::EcdsaP256);
        let key = dnskey(&zones);
        let r = ask(&zones, "nope.example.org.", RecordType::A, true);
        assert_eq!(r.response_code, ResponseCode::NXDomain);
        assert!(r.answers.is_empty());
        let mut types = verify(&r.authorities, &key);
        types.sort_by_key(|t| u16::from(*t));
        types.dedup();
        assert_eq!(types, [RecordType::SOA, RecordType::NSEC]);
        let covers = |n: &str| {
            let n = name(n);
            r.authorities.iter().any(|rec| match &rec.data {
                RData::DNSSEC(DNSSECRData::NSEC(nsec)) => {
                    rec.name < n && (&n < nsec.next_domain_name() || nsec.next_domain_name() == &name("example.org."))
                }
                _ => false,
            })
        };
        assert!(covers("nope.example.org."), "the name: {r:?}");
        assert!(
            covers("*.example.org."),
            "the wildcard of its closest encloser, the apex"
        );
        assert!(
            !r.authorities.iter().any(|rec| match &rec.data {
                RData::DNSSEC(DNSSECRData::NSEC(nsec)) => nsec.type_bit_maps().any(|t| t == NXNAME),
                _ => false,
            }),
            "no compact answer"
        );
        // Below an empty non-terminal's wildcard-free encloser, and below a name with data.
        let deep = ask(&zones, "x.nope.web.example.org.", RecordType::A, true);
        assert_eq!(deep.response_code, ResponseCode::NXDomain);
        assert_eq!(
            verify(&deep.authorities, &key).len(),
            2,
            "SOA and one NSEC: web's covers the name and *.web alike"
        );
        // Without DO the answer stays a plain NXDOMAIN.
        let plain = ask(&zones, "nope.example.org.", RecordType::A, false);
        assert_eq!(plain.response_code, ResponseCode::NXDomain);
        assert!(!has(&plain.authorities, RecordType::NSEC));
    }

    #[test]
    fn negative_and_wildcard_answers_sign_nothing_however_many_names_are_asked() {
        let zones = signed(KeyAlgorithm::Ed25519);
        let key = dnskey(&zones);
        let before = crate::dnssec::signatures_made();
        for i in 0..300 {
            let missing = ask(&zones, &format!("missing{i}.example.org."), RecordType::A, true);
            assert_eq!(missing.response_code, ResponseCode::NXDomain);
            assert!(has(&missing.authorities, RecordType::NSEC));
            let wild = ask(&zones, &format!("h{i}.wild.example.org."), RecordType::A, true);
            assert!(has(&wild.authorities, RecordType::NSEC));
            let nodata = ask(&zones, &format!("h{i}.wild.example.org."), RecordType::TXT, true);
            assert!(has(&nodata.authorities, RecordType::NSEC));
            if i == 0 {
                for r in [&missing, &wild, &nodata] {
                    verify(&r.authorities, &key);
                }
            }
        }
        assert_eq!(
            crate::dnssec::signatures_made(),
            before,
            "every denial was signed when the zone was written"
        );
    }

    /// The NSECs among `records`, as (owner, next, types), in their order.
    pub(crate) fn nsec_links(records: &[Record]) -> Vec<(Name, Name, Vec<RecordType>)> {
        records
            .iter()
            .filter_map(|r| match &r.data {
                RData::DNSSEC(DNSSECRData::NSEC(n)) => Some((
                    r.name.clone(),
                    n.next_domain_name().clone(),
                    n.type_bit_maps().collect(),
                )),
                _ => None,
            })
            .collect()
    }

    /// The chain of the zone, as (owner, next, types) in canonical order.
    fn chain(zones: &Zones) -> Vec<(String, String, Vec<RecordType>)> {
        let set = zones.read();
        let records: Vec<Record> = set.zones()[0].signing().expect("signed").chain_records().collect();
        nsec_links(&records)
            .into_iter()
            .map(|(owner, next, types)| (owner.to_string(), next.to_string(), types))
            .collect()
    }

    #[test]
    fn the_chain_follows_each_write_and_skips_what_lies_below_a_delegation() {
        let zones = signed(KeyAlgorithm::EcdsaP256);
        let owners = |zones: &Zones| chain(zones).into_iter().map(|(o, _, _)| o).collect::<Vec<_>>();
        let linked = |zones: &Zones| {
            let links = chain(zones);
            links
                .iter()
                .enumerate()
                .all(|(i, (_, next, _))| next == links.get(i + 1).map_or("example.org.", |l| l.0.as_str()))
        };
        assert_eq!(
            owners(&zones),
            [
                "example.org.",
                "chain.example.org.",
                "ns1.example.org.",
                "sub.example.org.",
                "web.example.org.",
                "*.wild.example.org.",
                "www.example.org.",
            ],
            "no glue below sub"
        );
        assert!(linked(&zones));
        let before = crate::dnssec::signatures_made();
        {
            let mut all = zones.write();
            let zone = &mut all.zones_mut()[0];
            zone.put(&name("a.b.c.example.org."), set(vec![a("192.0.2.3")]));
        }
        assert_eq!(
            crate::dnssec::signatures_made() - before,
            3,
            "the set, its NSEC and its predecessor's"
        );
        let signed_by = |write: &dyn Fn(&mut crate::zones::Zone)| {
            let before = crate::dnssec::signatures_made();
            write(&mut zones.write().zones_mut()[0]);
            crate::dnssec::signatures_made() - before
        };
        let name_abc = name("a.b.c.example.org.");
        assert_eq!(
            signed_by(&|zone| drop(zone.put(&name_abc, set(vec![a("192.0.2.4")])))),
            1,
            "new data of the same type: the set alone, no NSEC"
        );
        assert_eq!(
            signed_by(&|zone| {
                let text = hickory_proto::rr::rdata::TXT::new(vec!["t".into()]);
                drop(zone.put(&name_abc, set(vec![RData::TXT(text)])));
            }),
            2,
            "a new type: the set and the name's own NSEC, not its predecessor's"
        );
        assert!(linked(&zones));
        {
            let mut all = zones.write();
            let zone = &mut all.zones_mut()[0];
            // The delegation goes: its glue joins the chain; a new one under web takes web's children out.
            zone.remove(&LowerName::new(&name("sub.example.org.")), RecordType::NS);
            zone.put(&name("x.web.example.org."), set(vec![a("192.0.2.4")]));
            zone.put(
                &name("deleg.web.example.org."),
                set(vec![RData::NS(NS(name("ns.other.")))]),
            );
            zone.put(&name("glue.deleg.web.example.org."), set(vec![a("192.0.2.5")]));
            zone.remove(&LowerName::new(&name("chain.example.org.")), RecordType::CNAME);
        }
        assert_eq!(
            owners(&zones),
            [
                "example.org.",
                "a.b.c.example.org.",
                "ns1.example.org.",
                "ns.sub.example.org.",
                "web.example.org.",
                "deleg.web.example.org.",
                "x.web.example.org.",
                "*.wild.example.org.",
                "www.example.org.",
            ]
        );
        assert!(linked(&zones));
        let cut = chain(&zones)
            .into_iter()
            .find(|(o, _, _)| o == "deleg.web.example.org.")
            .expect("the cut");
        assert!(cut.2.contains(&RecordType::NS) && !cut.2.contains(&RecordType::A));
        let key = dnskey(&zones);
        let records: Vec<Record> = zones.read().zones()[0]
            .signing()
            .expect("signed")
            .chain_records()
            .collect();
        assert_eq!(verify(&records, &key).len(), 9, "every NSEC signed");
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
        // Every set's signature and every NSEC of the chain.
        let total = zones.read().zones()[0].signing().map_or(0, |s| s.len() + s.chain_len());
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
