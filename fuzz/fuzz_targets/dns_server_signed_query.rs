//! The built-in DNS server's query path over a DNSSEC-signed zone: any bytes arriving on its UDP port get
//! a well-formed answer or nothing, never a panic, and every RRSIG an answer carries verifies with the
//! zone's DNSKEY over the records it covers in that section: stored signatures (plain and wildcard) and
//! the NSECs of compact denial signed on the spot alike.
//!
//! The zone has every answer shape: data, a CNAME chain, a wildcard, an empty non-terminal, a delegation
//! with glue, an MX with an in-zone target, and a record set too big for UDP.

#![no_main]

use std::str::FromStr;
use std::sync::{Arc, OnceLock};

use extdns_dns_server::dnssec::{DnssecConfig, KeyAlgorithm, ZoneKey};
use extdns_dns_server::server::fuzzing::QueryPath;
use extdns_dns_server::{DnsServerProvider, ServerConfig, ZoneConfig, Zones};
use extdns_endpoint::{Change, Endpoint, RecordType};
use hickory_proto::dnssec::rdata::{DNSKEY, DNSSECRData};
use hickory_proto::dnssec::{PublicKey, TBS};
use hickory_proto::op::{Message, MessageType};
use hickory_proto::rr::{DNSClass, Name, RData, Record};
use libfuzzer_sys::fuzz_target;

fn name(s: &str) -> Name {
    Name::from_str(s).expect("fixed name")
}

fn path() -> &'static (QueryPath, DNSKEY) {
    static PATH: OnceLock<(QueryPath, DNSKEY)> = OnceLock::new();
    PATH.get_or_init(|| {
        let key = ZoneKey::generate(KeyAlgorithm::EcdsaP256).expect("a key");
        let dnskey = key.dnskey().expect("its DNSKEY");
        let mut zone = ZoneConfig::new(
            name("example.org."),
            name("ns1.example.org."),
            Some("192.0.2.53".parse().expect("fixed address")),
        )
        .expect("fixed zone");
        zone.dnssec = Some(DnssecConfig::new(key));
        let config = Arc::new(ServerConfig::new(Vec::new(), vec![zone]));
        let zones = Arc::new(Zones::new(&config.zones, 1, config.limits));
        let provider = DnsServerProvider::new(zones.clone(), 60);
        let many: Vec<String> = (0..120).map(|i| format!("10.0.0.{i}")).collect();
        let endpoints = [
            Endpoint::new("web.example.org", RecordType::A, ["192.0.2.1", "192.0.2.2"]),
            Endpoint::new("www.example.org", RecordType::Cname, ["web.example.org"]),
            Endpoint::new("loop.example.org", RecordType::Cname, ["loop.example.org"]),
            Endpoint::new("a.b.c.example.org", RecordType::Aaaa, ["2001:db8::1"]),
            Endpoint::new("*.wild.example.org", RecordType::Txt, ["\"wild\""]),
            Endpoint::new("sub.example.org", RecordType::Ns, ["ns.sub.example.org"]),
            Endpoint::new("ns.sub.example.org", RecordType::A, ["192.0.2.6"]),
            Endpoint::new("mail.example.org", RecordType::Mx, ["10 web.example.org"]),
            Endpoint::new("big.example.org", RecordType::A, many),
        ];
        let changes: Vec<Change> = endpoints.into_iter().map(Change::Create).collect();
        let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
        runtime
            .block_on(extdns_provider::apply_changes(&provider, &changes))
            .expect("the fixed zone applies");
        (QueryPath::new(zones, config), dnskey)
    })
}

/// Every RRSIG of `section` verifies over the records of its name and type there.
fn verify(section: &[Record], key: &DNSKEY) {
    for record in section {
        let RData::DNSSEC(DNSSECRData::RRSIG(sig)) = &record.data else { continue };
        let input = sig.input();
        let covered = section
            .iter()
            .filter(|r| r.name == record.name && r.record_type() == input.type_covered);
        let tbs = TBS::from_input(&record.name, DNSClass::IN, input, covered).expect("signed data");
        if let Err(e) = key.public_key().verify(tbs.as_ref(), sig.sig()) {
            panic!("the RRSIG of {} {:?} does not verify: {e}", record.name, input.type_covered);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let (path, key) = path();
    let Some(answer) = path.udp(data) else { return };
    let message = match Message::from_vec(&answer) {
        Ok(m) => m,
        Err(e) => panic!("the answer to {data:02x?} does not decode: {e}\n{answer:02x?}"),
    };
    assert_eq!(message.message_type, MessageType::Response);
    let limit = match Message::from_vec(data).ok().and_then(|request| request.edns) {
        Some(edns) => usize::from(edns.max_payload().clamp(512, 1232)),
        None => 512,
    };
    assert!(answer.len() <= limit, "{} bytes over UDP, more than {limit}", answer.len());
    verify(&message.answers, key);
    verify(&message.authorities, key);
});
