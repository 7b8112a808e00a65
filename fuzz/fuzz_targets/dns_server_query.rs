//! The built-in DNS server's query path: any bytes arriving on its UDP port get a well-formed answer
//! (it decodes, echoes the ID, has QR set, and fits in the client's UDP payload size) or nothing; never a panic.
//!
//! The zone behind it has every answer shape: data, a CNAME chain, a wildcard, an empty non-terminal, a
//! delegation with glue, an MX with an in-zone target, and a record set too big for UDP.

#![no_main]

use std::sync::OnceLock;

use extdns_dns_server::server::fuzzing::QueryPath;
use libfuzzer_sys::fuzz_target;

#[path = "shared/fixed_zone.rs"]
mod fixed_zone;
#[path = "shared/udp_answer.rs"]
mod udp_answer;

fn path() -> &'static QueryPath {
    static PATH: OnceLock<QueryPath> = OnceLock::new();
    PATH.get_or_init(|| fixed_zone::query_path(fixed_zone::example_org()))
}

fuzz_target!(|data: &[u8]| {
    let Some(answer) = path().udp(data) else { return };
    udp_answer::checked(data, &answer);
});
