//! The signed zone as real validators see it: BIND as a validating resolver, with the zone's DS as its
//! only trust anchor, forwards every query to the built-in server and must call each answer shape secure
//! (AD set) — positive, wildcard, CNAME chain, a name that does not exist, NODATA, and the proof that a
//! delegation is unsigned — and an answer whose data changed behind the signer bogus (SERVFAIL). A
//! referral itself is not asked through BIND: a forwarding BIND refuses any referral from its forwarder
//! ("non-improving referral"); its NSEC and signature are checked in the unit tests.

mod common;

use common::{Served, every_answer_shape, forged_a, name, zone_config};
use extdns_dns_server::dnssec::{DnssecConfig, KeyAlgorithm, ZoneKey};
use extdns_dns_server::{Limits, ServerConfig};
use extdns_test_support::require;
use extdns_test_support::validator::{Validator, secure};

/// The server with example.org. signed by a new key of `algorithm`, and the records of every answer
/// shape, and BIND validating it from the key's DS.
fn signed(algorithm: KeyAlgorithm) -> (Served, Validator) {
    let key = ZoneKey::generate(algorithm).expect("a key");
    let zone = zone_config();
    let ds = key.ds(&zone.origin).expect("a DS").to_string();
    let zone = extdns_dns_server::ZoneConfig {
        dnssec: Some(DnssecConfig::new(key)),
        ..zone
    };
    let config = ServerConfig::new(vec!["127.0.0.1:0".parse().expect("address")], vec![zone]);
    let served = Served::with(ServerConfig {
        limits: Limits::default(),
        ..config
    });
    served.apply(&every_answer_shape());
    let validator = Validator::start("example.org", &ds, served.port());
    (served, validator)
}

#[test]
fn every_answer_shape_validates_with_either_algorithm() {
    require!(Bind);
    for algorithm in [KeyAlgorithm::EcdsaP256, KeyAlgorithm::Ed25519] {
        let (_served, validator) = signed(algorithm);
        let web = secure(&validator, "web.example.org", "A", "NOERROR");
        assert_eq!(web.len(), 2, "{web:?}");
        let wild = secure(&validator, "a.b.wild.example.org", "A", "NOERROR");
        assert!(wild.iter().any(|r| r.ends_with("A 192.0.2.4")), "{wild:?}");
        let chain = secure(&validator, "chain.example.org", "A", "NOERROR");
        assert_eq!(chain.len(), 4, "two CNAMEs and two addresses: {chain:?}");
        // A name that does not exist: NXDOMAIN, proved by the NSEC chain.
        assert!(secure(&validator, "nope.example.org", "A", "NXDOMAIN").is_empty());
        assert!(secure(&validator, "web.example.org", "TXT", "NOERROR").is_empty());
        assert!(
            secure(&validator, "b.c.example.org", "A", "NOERROR").is_empty(),
            "an empty non-terminal"
        );
        assert!(
            secure(&validator, "x.wild.example.org", "TXT", "NOERROR").is_empty(),
            "a wildcard's NODATA"
        );
        // The delegation is provably unsigned: no DS at the cut, the NSEC there says so.
        assert!(secure(&validator, "sub.example.org", "DS", "NOERROR").is_empty());
        let keys = secure(&validator, "example.org", "DNSKEY", "NOERROR");
        assert_eq!(keys.len(), 1, "one CSK: {keys:?}");
        assert_eq!(secure(&validator, "example.org", "CDS", "NOERROR").len(), 1);
    }
}

#[test]
fn data_changed_behind_the_signer_is_bogus() {
    require!(Bind);
    let (served, validator) = signed(KeyAlgorithm::EcdsaP256);
    secure(&validator, "web.example.org", "A", "NOERROR");
    // A name the resolver has not cached yet.
    let forged = forged_a();
    served.zones.put_behind_signer(&name("a.b.c.example.org."), forged);
    let v = validator.ask("a.b.c.example.org", "A");
    assert_eq!(v.status, "SERVFAIL", "a forged set must not validate: {v:?}");
    // The rest of the zone still validates.
    secure(&validator, "chain.example.org", "CNAME", "NOERROR");
}
