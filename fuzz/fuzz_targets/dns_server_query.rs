//! The built-in DNS server's query path: any bytes arriving on its UDP port get a well-formed answer
//! (it decodes, echoes the ID, has QR set, and fits in the client's UDP payload size) or nothing; never a panic.
//!
//! The zone behind it has every answer shape: data, a CNAME chain, a wildcard, an empty non-terminal, a
//! delegation with glue, an MX with an in-zone target, and a record set too big for UDP.

#![no_main]

use std::sync::OnceLock;

use extdns_dns_server::server::fuzzing::QueryPath;
use hickory_proto::op::{Message, MessageType};
use libfuzzer_sys::fuzz_target;

#[path = "shared/fixed_zone.rs"]
mod fixed_zone;

fn path() -> &'static QueryPath {
    static PATH: OnceLock<QueryPath> = OnceLock::new();
    PATH.get_or_init(|| fixed_zone::query_path(fixed_zone::example_org()))
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
