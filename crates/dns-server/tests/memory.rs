//! The served zone's own memory per record (issue 49): a zone of 10,000 records of the serving benchmark's
//! mix (`cargo xtask bench serve`: 55 % A, 15 % AAAA, 10 % CNAME, 10 % TXT, 5 % MX, 5 % SRV, one wildcard)
//! written through the provider as the controller writes it, its heap counted by a counting allocator
//! (this test binary's alone), unsigned and signed as the benchmark signs it (one ECDSA P-256 key: each
//! set's RRSIG and each name's signed NSEC besides). The whole process's figure is the benchmark's.

#[allow(
    dead_code,
    reason = "this suite takes the zone and endpoint spelling, not the running server"
)]
mod common;

use std::alloc::System;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::{Arc, Mutex};

use cap::Cap;
use common::{ep, zone_config};
use extdns_dns_server::dnssec::{DnssecConfig, KeyAlgorithm, ZoneKey};
use extdns_dns_server::{DnsServerProvider, Limits, ZoneConfig, Zones};
use extdns_endpoint::{Change, Endpoint, RecordType, Ttl};

#[global_allocator]
static ALLOC: Cap<System> = Cap::new(System, usize::MAX);

const RECORDS: usize = 10_000;

/// Record `i` of the benchmark's zone (`crates/e2e/src/serve_bench.rs`, `record`).
fn record(i: usize) -> Endpoint {
    let name = |owner: String| format!("{owner}.example.org");
    let e = match i % 20 {
        _ if i == 0 => ep("*.apps.example.org", RecordType::A, &["192.0.2.80"]),
        0..=10 => {
            let v4 = Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 0, 0, 0)) + i as u32).to_string();
            ep(&name(format!("web-{i}")), RecordType::A, &[&v4])
        }
        11..=13 => {
            let v6 = Ipv6Addr::from((0x2001_0db8_u128 << 96) | i as u128).to_string();
            ep(&name(format!("v6-{i}")), RecordType::Aaaa, &[&v6])
        }
        14..=15 => {
            let to = format!("web-{}.example.org", i - i % 20 + 1);
            ep(&name(format!("www-{i}")), RecordType::Cname, &[&to])
        }
        16..=17 => {
            let text = format!(
                "site-verification={:016x}",
                (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
            );
            ep(&name(format!("txt-{i}")), RecordType::Txt, &[&text])
        }
        18 => ep(
            &name(format!("mail-{i}")),
            RecordType::Mx,
            &[&format!("10 mx{}.mail.example.net", i % 7)],
        ),
        _ => ep(
            &name(format!("_https._tcp.svc-{i}")),
            RecordType::Srv,
            &[&format!("10 5 443 node-{i}.example.net.")],
        ),
    };
    e.with_ttl(Ttl(300))
}

/// One measurement at a time: the counting allocator counts every thread of the test binary.
static MEASURING: Mutex<()> = Mutex::new(());

/// Heap bytes the zone of `config` holds per record once the first sync of the benchmark's zone is
/// applied; `apex` records (SOA, NS, glue, and a signed zone's key sets) besides the records written.
fn bytes_per_record(config: ZoneConfig, apex: usize) -> f64 {
    let _alone = MEASURING.lock().unwrap_or_else(|p| p.into_inner());
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    let zones = Arc::new(Zones::new(&[config], 1, Limits::default()));
    let provider = DnsServerProvider::new(zones.clone(), 300);
    let changes: Vec<Change> = (0..RECORDS).map(|i| Change::Create(record(i))).collect();
    let before = ALLOC.allocated();
    runtime
        .block_on(extdns_provider::apply_changes(&provider, &changes))
        .expect("the zone takes the records");
    let after = ALLOC.allocated();
    assert_eq!(zones.read().zones()[0].record_count(), RECORDS + apex);
    (after - before) as f64 / RECORDS as f64
}

#[test]
fn the_served_zone_holds_a_record_in_few_bytes() {
    let per_record = bytes_per_record(zone_config(), 3);
    println!(
        "served zone: {per_record:.0} B per record; Node {} B, RrSet {} B, RData {} B, Name {} B",
        size_of::<extdns_dns_server::zones::Node>(),
        size_of::<extdns_dns_server::zones::RrSet>(),
        size_of::<hickory_proto::rr::RData>(),
        size_of::<hickory_proto::rr::Name>()
    );
    // 1,377 B before the zone's vectors were cut to their length (issue 49), 604 B after; 405 B once a
    // node held its name once and a shard was sorted vectors instead of a hash table; 389 B once a set's
    // rarely needed spelling of its targets was boxed; 265 B once A and AAAA data was held as addresses
    // (`SetData`), below Knot's 340 B for its whole process; 249 B once a set kept the endpoint it was
    // written from only when the set does not spell it back (`Spelt`: a set 48 B, not 64); 205 B once a
    // node's key was its name's wire bytes kept inside it (`WireName`: a node 80 B, not 120); 184 B once
    // a node's one set was kept inside it (a node 104 B, and no 48-byte list beside it); 179 B once a set
    // of one address kept it inside the set; 128 B once every other set (CNAME, TXT, MX, SRV: 30 % of the
    // mix) kept its records' wire form rather than hickory's 184-byte `RData` each.
    assert!(per_record < 145.0, "{per_record:.0} B per record");
}

#[test]
fn the_signed_zone_holds_a_record_and_its_signatures_in_few_bytes() {
    let key = ZoneKey::generate(KeyAlgorithm::EcdsaP256).expect("a key");
    let config = ZoneConfig {
        dnssec: Some(DnssecConfig::new(key)),
        ..zone_config()
    };
    let per_record = bytes_per_record(config, 6);
    println!("signed zone: {per_record:.0} B per record");
    // 997 B once each set's RRSIG and each NSEC were kept as their RDATA's wire form rather than hickory
    // records (issue 49): the unsigned zone's 265 B, each name's NSEC (owner, data, signature) and each
    // set's signature, in shards and chunks; 981 B with the smaller set; 918 B once the chain's chunks
    // were cut to their length after each write (they held about twice their names' bytes); 874 B with
    // the smaller node, 852 B with its set inside it, 652 B once the signatures, the chain and its links
    // kept their names as the nodes do (40 B, not hickory's 80, and a link's owner once, not twice).
    // 596 B with the other sets' wire form; 566 B once a set's RRSIGs were packed in one allocation, not a
    // list of boxed ones; 486 B once each signature was held inline without its signer's name (84 B, no
    // allocation); 442 B once each name's NSEC was held with the name in the chain rather than in a map
    // by name beside it; 396 B once an NSEC's next name was read from the chain and its type bitmap
    // shared by every name of its kind, no RDATA held. Knot signed holds its whole process in 1,119 B a
    // record.
    assert!(per_record < 420.0, "{per_record:.0} B per record");
}
