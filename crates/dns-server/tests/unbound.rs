//! The signed zone as Unbound sees it: Unbound as a validating resolver with the zone's DS as its only
//! trust anchor and the zone as a stub (it iterates to the built-in server as to any authoritative server,
//! where BIND's test forwards), must call every answer shape secure (AD set) — positive, wildcard, CNAME
//! chain, a name that does not exist, NODATA, the DNSKEY set — and the delegation to an unsigned child
//! provably insecure: the child's answer comes back without AD but not SERVFAIL, which needs the parent's
//! signed proof that the child has no DS. A forged set and an expired signature are bogus (SERVFAIL). A
//! key rollover, with resolvers asking throughout, never fails one.

mod common;

use common::{Served, ep, every_answer_shape, forged_a, name, zone_config};
use extdns_dns_server::dnssec::{DnssecConfig, KeyAlgorithm, ZoneKey};
use extdns_dns_server::{ServerConfig, ZoneConfig};
use extdns_endpoint::{Change, RecordType};
use extdns_test_support::require;
use extdns_test_support::unbound::{Stub, Unbound};
use extdns_test_support::validator::secure;

/// The parent (example.org., signed by a new key of `algorithm`, with the records of every answer shape
/// and a delegation to sub.example.org.), the unsigned child, and Unbound validating both.
struct Signed {
    parent: Served,
    /// The parent's DS, as Unbound's trust anchor spells it.
    ds: String,
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
    parent.apply(&every_answer_shape());
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
        std::slice::from_ref(&ds),
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
    Signed {
        parent,
        ds,
        child,
        unbound,
    }
}

/// The names and types of every answer shape [`signed`]'s parent serves.
const SHAPES: [(&str, &str); 9] = [
    ("web.example.org", "A"),
    ("a.b.wild.example.org", "A"),
    ("chain.example.org", "A"),
    ("nope.example.org", "A"),
    ("web.example.org", "TXT"),
    ("b.c.example.org", "A"),
    ("x.wild.example.org", "TXT"),
    ("example.org", "DNSKEY"),
    ("sub.example.org", "DS"),
];

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
        // A name that does not exist: NXDOMAIN, proved by the NSEC chain.
        assert!(secure(unbound, "nope.example.org", "A", "NXDOMAIN").is_empty());
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
    let forged = forged_a();
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

/// A key rollover with two Unbounds asking every 100 ms throughout: `early` learns the new DS as soon as
/// the operator swaps it (the rollover logs it), `late` holds the old DS until the last moment the
/// rollover allows (the parent's DS TTL after the swap). Timings shortened to seconds; each resolver
/// keeps what it cached across the swap. No answer may be SERVFAIL, and every one is secure.
#[test]
fn a_rollover_never_fails_a_validating_resolver() {
    use std::time::{Duration, Instant};

    use extdns_dns_server::dnssec::ZoneKeys;
    use extdns_dns_server::dnssec::rollover::{KeyRing, RollStep, RollTimings};
    use extdns_endpoint::Ttl;

    require!(Unbound);
    let old = ZoneKey::generate(KeyAlgorithm::EcdsaP256).expect("a key");
    let ds_of = |key: &ZoneKey| format!("example.org. DS {}", key.ds(&name("example.org.")).expect("a DS"));
    let (keys, updates) = tokio::sync::watch::channel(ZoneKeys::single(old.clone()));
    let timings = RollTimings {
        dnskey_ttl: 2,
        max_zone_ttl: 3,
        propagation_delay: 1,
        parent_ds_ttl: 2,
    };
    let zone = ZoneConfig {
        ttl: 2,
        dnssec: Some(DnssecConfig {
            updates: Some(updates),
            ..DnssecConfig::new(old.clone())
        }),
        ..zone_config()
    };
    let served = Served::with(ServerConfig::new(
        vec!["127.0.0.1:0".parse().expect("address")],
        vec![zone],
    ));
    let ttl = |e: extdns_endpoint::Endpoint| e.with_ttl(Ttl(3));
    served.apply(
        &[
            ttl(ep("web.example.org", RecordType::A, &["192.0.2.1"])),
            ttl(ep("www.example.org", RecordType::Cname, &["web.example.org"])),
            ttl(ep("*.wild.example.org", RecordType::A, &["192.0.2.4"])),
        ]
        .map(Change::Create),
    );
    let stub = [Stub {
        zone: "example.org",
        port: served.port(),
    }];
    let early = Unbound::start(&[ds_of(&old)], &stub);
    let late = Unbound::start(&[ds_of(&old)], &stub);
    let questions = [
        ("web.example.org", "A"),
        ("www.example.org", "A"),
        ("x.wild.example.org", "A"),
        ("nope.example.org", "A"),
        ("web.example.org", "TXT"),
        ("example.org", "DNSKEY"),
    ];

    let mut ring = KeyRing::new(old.clone());
    assert!(ring.request());
    let (mut queries, mut servfails, mut insecure) = (0usize, 0usize, Vec::new());
    let mut steps = Vec::new();
    let mut retired_at = None;
    let deadline = Instant::now() + Duration::from_secs(50);
    let mut next_query = Instant::now();
    while retired_at.is_none_or(|t: Instant| t.elapsed() < Duration::from_secs(4)) {
        assert!(Instant::now() < deadline, "the rollover did not end: {steps:?}");
        let now = extdns_dns_wire::unix_now();
        let step = ring
            .advance(now, &timings, || ZoneKey::generate(KeyAlgorithm::EcdsaP256))
            .expect("advances");
        match step {
            // The operator reads the DS the rollover logs and gives it to the parent: `early` sees it at once.
            Some(RollStep::Active) => {
                let next = ring.next.clone().expect("the new key");
                early.set_anchors(&[ds_of(&next)]);
                assert_eq!(ring.ds_swapped(now).ok(), Some(true));
            }
            // The last resolver holding the old DS lets go of it as the old key leaves.
            Some(RollStep::Retired) => {
                late.set_anchors(&[ds_of(&ring.current)]);
                retired_at = Some(Instant::now());
            }
            _ => {}
        }
        if let Some(step) = step {
            steps.push(step);
            keys.send_replace(ring.keys());
        }
        for unbound in [&early, &late] {
            let (qname, qtype) = questions[queries % questions.len()];
            let v = unbound.ask(qname, qtype);
            queries += 1;
            if v.status == "SERVFAIL" {
                servfails += 1;
                eprintln!("SERVFAIL for {qname} {qtype} after {steps:?}\n{}", unbound.log());
            } else if !v.authenticated {
                insecure.push(format!("{qname} {qtype} after {steps:?}: {v:?}"));
            }
        }
        next_query += Duration::from_millis(100);
        std::thread::sleep(next_query.saturating_duration_since(Instant::now()));
    }
    eprintln!("rollover: {queries} queries through {steps:?}, {servfails} SERVFAIL");
    assert_eq!(steps, [RollStep::Published, RollStep::Active, RollStep::Retired]);
    assert_eq!(servfails, 0, "no SERVFAIL at any moment of the rollover");
    assert!(insecure.is_empty(), "every answer secure: {insecure:#?}");
    // Over: the new key alone, and both resolvers validate from its DS.
    let dnskeys = secure(&early, "example.org", "DNSKEY", "NOERROR");
    assert_eq!(dnskeys.len(), 1, "{dnskeys:?}");
    secure(&late, "web.example.org", "A", "NOERROR");
}

/// `delv`, asking the server itself and validating from the same DS, agrees with Unbound: every answer shape
/// fully validated (the denials as negative responses), and the forged set not.
#[test]
fn delv_agrees_with_unbound_on_every_answer_shape() {
    use extdns_test_support::validator::delv;

    require!(Unbound, DnsClients);
    let served = signed(KeyAlgorithm::EcdsaP256);
    let (parent, unbound) = (&served.parent, &served.unbound);
    let ds = &served.ds;
    for (qname, qtype) in SHAPES {
        let status = if qname.starts_with("nope.") {
            "NXDOMAIN"
        } else {
            "NOERROR"
        };
        secure(unbound, qname, qtype, status);
        let said = delv(parent.port(), ds, qname, qtype);
        assert!(
            said.contains("; fully validated") || said.contains("; negative response, fully validated"),
            "delv on {qname} {qtype}:\n{said}"
        );
    }
    parent.zones.put_behind_signer(&name("a.b.c.example.org."), forged_a());
    let said = delv(parent.port(), ds, "a.b.c.example.org", "A");
    assert!(!said.contains("fully validated"), "a forged set:\n{said}");
    bogus(unbound, "a.b.c.example.org", "A");
}
