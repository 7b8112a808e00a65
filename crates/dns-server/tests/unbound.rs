//! The signed zone as Unbound sees it: Unbound as a validating resolver with the zone's DS as its only
//! trust anchor and the zone as a stub (it iterates to the built-in server as to any authoritative server,
//! where BIND's test forwards), must call every answer shape secure (AD set) — positive, wildcard, CNAME
//! chain, a name that does not exist, NODATA, the DNSKEY set — and the delegation to an unsigned child
//! provably insecure: the child's answer comes back without AD but not SERVFAIL, which needs the parent's
//! signed proof that the child has no DS. A forged set and an expired signature are bogus (SERVFAIL).

mod common;

use common::{Served, ep, name, zone_config};
use extdns_dns_server::dnssec::{DnssecConfig, KeyAlgorithm, ZoneKey};
use extdns_dns_server::zones::{RrSet, SetOrigin};
use extdns_dns_server::{ServerConfig, ZoneConfig};
use extdns_endpoint::{Change, RecordType};
use extdns_test_support::require;
use extdns_test_support::unbound::{Stub, Unbound};
use hickory_proto::rr::RData;
use hickory_proto::rr::rdata::A;

/// The parent (example.org., signed by a new key of `algorithm`, with the records of every answer shape
/// and a delegation to sub.example.org.), the unsigned child, and Unbound validating both.
struct Signed {
    parent: Served,
    #[allow(dead_code, reason = "kept so the child keeps answering")]
    child: Served,
    unbound: Unbound,
}

fn signed(algorithm: KeyAlgorithm) -> Signed {
    let key = ZoneKey::generate(algorithm).expect("a key");
    let zone = zone_config();
    let ds = format!("example.org. DS {}", key.ds(&zone.origin).expect("a DS"));
    let zone = ZoneConfig {
        dnssec: Some(DnssecConfig::new(key)),
        ..zone
    };
    let parent = Served::with(ServerConfig::new(
        vec!["127.0.0.1:0".parse().expect("address")],
        vec![zone],
    ));
    parent.apply(
        &[
            ep("web.example.org", RecordType::A, &["192.0.2.1", "192.0.2.2"]),
            ep("www.example.org", RecordType::Cname, &["web.example.org"]),
            ep("chain.example.org", RecordType::Cname, &["www.example.org"]),
            ep("*.wild.example.org", RecordType::A, &["192.0.2.4"]),
            ep("a.b.c.example.org", RecordType::A, &["192.0.2.3"]),
            ep("sub.example.org", RecordType::Ns, &["ns.sub.example.org"]),
            ep("ns.sub.example.org", RecordType::A, &["192.0.2.6"]),
        ]
        .map(Change::Create),
    );
    let child_zone = ZoneConfig::new(
        name("sub.example.org."),
        name("ns.sub.example.org."),
        Some("192.0.2.6".parse().expect("address")),
    )
    .expect("the child zone");
    let child = Served::with(ServerConfig::new(
        vec!["127.0.0.1:0".parse().expect("address")],
        vec![child_zone],
    ));
    child.apply(&[Change::Create(ep(
        "host.sub.example.org",
        RecordType::A,
        &["192.0.2.7"],
    ))]);
    let unbound = Unbound::start(
        &[ds],
        &[
            Stub {
                zone: "example.org",
                port: parent.port(),
            },
            Stub {
                zone: "sub.example.org",
                port: child.port(),
            },
        ],
    );
    Signed { parent, child, unbound }
}

/// Asserts Unbound validated `name TYPE` with `status`; returns the answers.
fn secure(unbound: &Unbound, name: &str, rtype: &str, status: &str) -> Vec<String> {
    let v = unbound.ask(name, rtype);
    assert_eq!(v.status, status, "{name} {rtype}: {v:?}\n{}", unbound.log());
    assert!(
        v.authenticated,
        "{name} {rtype} not validated: {v:?}\n{}",
        unbound.log()
    );
    v.answers
}

/// Asserts Unbound called `name TYPE` bogus.
fn bogus(unbound: &Unbound, name: &str, rtype: &str) {
    let v = unbound.ask(name, rtype);
    assert_eq!(
        v.status,
        "SERVFAIL",
        "{name} {rtype} must not validate: {v:?}\n{}",
        unbound.log()
    );
}

#[test]
fn every_answer_shape_is_secure_to_unbound_with_either_algorithm() {
    require!(Unbound);
    for algorithm in [KeyAlgorithm::EcdsaP256, KeyAlgorithm::Ed25519] {
        // Bound whole: the servers stop when dropped.
        let served = signed(algorithm);
        let unbound = &served.unbound;
        let web = secure(unbound, "web.example.org", "A", "NOERROR");
        assert_eq!(web.len(), 2, "{web:?}");
        let wild = secure(unbound, "a.b.wild.example.org", "A", "NOERROR");
        assert!(wild.iter().any(|r| r.ends_with("A 192.0.2.4")), "{wild:?}");
        let chain = secure(unbound, "chain.example.org", "A", "NOERROR");
        assert_eq!(chain.len(), 4, "two CNAMEs and two addresses: {chain:?}");
        // A name that does not exist: compact denial answers NODATA, which the resolver proves.
        assert!(secure(unbound, "nope.example.org", "A", "NOERROR").is_empty());
        assert!(secure(unbound, "web.example.org", "TXT", "NOERROR").is_empty());
        assert!(
            secure(unbound, "b.c.example.org", "A", "NOERROR").is_empty(),
            "an empty non-terminal"
        );
        assert!(
            secure(unbound, "x.wild.example.org", "TXT", "NOERROR").is_empty(),
            "a wildcard's NODATA"
        );
        let keys = secure(unbound, "example.org", "DNSKEY", "NOERROR");
        assert_eq!(keys.len(), 1, "one CSK: {keys:?}");
        assert_eq!(secure(unbound, "example.org", "CDS", "NOERROR").len(), 1);
        // The delegation: the parent proves there is no DS at the cut (secure NODATA), so the child's
        // answer is insecure (no AD) rather than bogus.
        assert!(secure(unbound, "sub.example.org", "DS", "NOERROR").is_empty());
        let child = unbound.ask("host.sub.example.org", "A");
        assert_eq!(child.status, "NOERROR", "{child:?}\n{}", unbound.log());
        assert!(!child.authenticated, "an unsigned child is insecure: {child:?}");
        assert_eq!(child.answers.len(), 1, "{child:?}");
    }
}

#[test]
fn a_forged_set_and_an_expired_signature_are_bogus_to_unbound() {
    require!(Unbound);
    let served = signed(KeyAlgorithm::EcdsaP256);
    let (parent, unbound) = (&served.parent, &served.unbound);
    secure(unbound, "web.example.org", "A", "NOERROR");
    // Names the resolver has not cached yet.
    let forged = RrSet {
        record_type: hickory_proto::rr::RecordType::A,
        ttl: 60,
        data: vec![RData::A(A([203, 0, 113, 66].into()))],
        origin: SetOrigin::Managed {
            record_type: RecordType::A,
            spelt: None,
        },
    };
    parent.zones.put_behind_signer(&name("a.b.c.example.org."), forged);
    bogus(unbound, "a.b.c.example.org", "A");
    // Signed 30 days ago for 14 days (and at most a quarter more): expired two weeks ago.
    let month_ago = extdns_dns_wire::unix_now().saturating_sub(30 * 86_400);
    let month_ago = u32::try_from(month_ago % (1 << 32)).expect("32 bits");
    parent.zones.sign_again_at(
        &name("www.example.org."),
        hickory_proto::rr::RecordType::CNAME,
        month_ago,
    );
    bogus(unbound, "www.example.org", "CNAME");
    assert!(
        unbound.log().contains("expired"),
        "bogus for its expiry: {}",
        unbound.log()
    );
    // The rest of the zone still validates.
    secure(unbound, "chain.example.org", "CNAME", "NOERROR");
}
