//! The built-in DNS server's query path: any bytes arriving on its UDP port get a well-formed answer
//! (it decodes, echoes the ID, has QR set, and fits in the client's UDP payload size) or nothing; never a panic.
//!
//! The zone behind it has every answer shape: data, a CNAME chain, a wildcard, an empty non-terminal, a
//! delegation with glue, an MX with an in-zone target, and a record set too big for UDP.

#![no_main]

use std::str::FromStr;
use std::sync::{Arc, OnceLock};

use extdns_dns_server::server::fuzzing::QueryPath;
use extdns_dns_server::{DnsServerProvider, ServerConfig, ZoneConfig, Zones};
use extdns_endpoint::{Change, Endpoint, RecordType};
use hickory_proto::op::{Message, MessageType};
use hickory_proto::rr::Name;
use libfuzzer_sys::fuzz_target;

fn name(s: &str) -> Name {
    Name::from_str(s).expect("fixed name")
}

fn path() -> &'static QueryPath {
    static PATH: OnceLock<QueryPath> = OnceLock::new();
    PATH.get_or_init(|| {
        let zone = ZoneConfig::new(
            name("example.org."),
            name("ns1.example.org."),
            Some("192.0.2.53".parse().expect("fixed address")),
        )
        .expect("fixed zone");
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
        QueryPath::new(zones, config)
    })
}

fuzz_target!(|data: &[u8]| {
    let Some(answer) = path().udp(data) else { return };
    let message = match Message::from_vec(&answer) {
        Ok(m) => m,
        Err(e) => panic!("the answer to {data:02x?} does not decode: {e}\n{answer:02x?}"),
    };
    assert!(data.len() >= 12, "an answer to fewer bytes than a header");
    assert_eq!(
        message.metadata.id,
        u16::from_be_bytes([data[0], data[1]]),
        "the ID is echoed"
    );
    assert_eq!(message.message_type, MessageType::Response);
    assert_eq!(data[2] & 0x80, 0, "a response was answered");
    // 512 octets without EDNS, else the lesser of the client's payload size and ours (RFC 6891 §6.2.5).
    let limit = match Message::from_vec(data).ok().and_then(|request| request.edns) {
        Some(edns) => usize::from(edns.max_payload().clamp(512, 1232)),
        None => 512,
    };
    assert!(
        answer.len() <= limit,
        "{} bytes over UDP, more than the {limit} the client takes",
        answer.len()
    );
    assert!(!message.metadata.recursion_available, "RA is never set");
});
