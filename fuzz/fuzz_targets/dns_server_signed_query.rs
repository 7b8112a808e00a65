//! The built-in DNS server's query path over a DNSSEC-signed zone: any bytes arriving on its UDP port get
//! a well-formed answer or nothing, never a panic, and every RRSIG an answer carries verifies with the
//! zone's DNSKEY over the records it covers in that section: stored signatures (plain and wildcard) and
//! the NSECs of the zone's chain (signed when the zone was written) alike.
//!
//! The zone has every answer shape: data, a CNAME chain, a wildcard, an empty non-terminal, a delegation
//! with glue, an MX with an in-zone target, and a record set too big for UDP.

#![no_main]

use std::sync::OnceLock;

use extdns_dns_server::dnssec::{DnssecConfig, KeyAlgorithm, ZoneKey};
use extdns_dns_server::server::fuzzing::QueryPath;
use hickory_proto::dnssec::rdata::{DNSKEY, DNSSECRData};
use hickory_proto::dnssec::{PublicKey, TBS};
use hickory_proto::rr::{DNSClass, RData, Record};
use libfuzzer_sys::fuzz_target;

#[path = "shared/fixed_zone.rs"]
mod fixed_zone;
#[path = "shared/udp_answer.rs"]
mod udp_answer;

fn path() -> &'static (QueryPath, DNSKEY) {
    static PATH: OnceLock<(QueryPath, DNSKEY)> = OnceLock::new();
    PATH.get_or_init(|| {
        let key = ZoneKey::generate(KeyAlgorithm::EcdsaP256).expect("a key");
        let dnskey = key.dnskey().expect("its DNSKEY");
        let mut zone = fixed_zone::example_org();
        zone.dnssec = Some(DnssecConfig::new(key));
        (fixed_zone::query_path(zone), dnskey)
    })
}

/// Every RRSIG of `section` verifies over the records of its name and type there.
fn verify(section: &[Record], key: &DNSKEY) {
    for record in section {
        let RData::DNSSEC(DNSSECRData::RRSIG(sig)) = &record.data else {
            continue;
        };
        let input = sig.input();
        let covered = section
            .iter()
            .filter(|r| r.name == record.name && r.record_type() == input.type_covered);
        let tbs = TBS::from_input(&record.name, DNSClass::IN, input, covered).expect("signed data");
        if let Err(e) = key.public_key().verify(tbs.as_ref(), sig.sig()) {
            panic!(
                "the RRSIG of {} {:?} does not verify: {e}",
                record.name, input.type_covered
            );
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let (path, key) = path();
    let Some(answer) = path.udp(data) else { return };
    let message = udp_answer::checked(data, &answer);
    verify(&message.answers, key);
    verify(&message.authorities, key);
});
