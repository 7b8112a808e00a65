//! The built-in DNS server's cookie and rate-limiting path: any bytes from any loopback address get a
//! well-formed answer or nothing, never a panic; a COOKIE option of a malformed length gets FORMERR; BADCOOKIE
//! always carries the client's cookie with a fresh server cookie and no records; a slipped answer is empty.
//!
//! The first byte picks the source (127.0.0.x, so most inputs share one /24 and the limiter, at 5 answers a
//! second, is soon limiting); with the second byte odd, the rest is a COOKIE option's data in an otherwise
//! fixed query (so the fuzzer reaches every cookie length at once), else the rest is the datagram itself.

#![no_main]

use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use extdns_dns_server::server::fuzzing::QueryPath;
use extdns_dns_server::{CookieSecret, RrlConfig, ServerConfig, ZoneConfig};
use extdns_endpoint::{Endpoint, RecordType};
use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::Name;
use hickory_proto::rr::rdata::opt::{EdnsCode, EdnsOption};
use libfuzzer_sys::fuzz_target;

#[path = "shared/udp_answer.rs"]
mod udp_answer;

fn name(s: &str) -> Name {
    Name::from_str(s).expect("fixed name")
}

/// example.org. with an answer, a delegation and its glue, behind a limiter at 5 answers a second and
/// cookies with a fixed secret.
fn path() -> &'static QueryPath {
    static PATH: OnceLock<QueryPath> = OnceLock::new();
    PATH.get_or_init(|| {
        let zone = ZoneConfig::new(name("example.org."), name("ns1.example.org."), None).expect("fixed zone");
        let rrl = RrlConfig {
            responses_per_second: 5,
            window: Duration::from_secs(1),
            slip: 2,
            ..RrlConfig::default()
        };
        let config = ServerConfig {
            rrl: Some(rrl),
            cookie_secret: Some(CookieSecret::from_bytes([7; 16])),
            ..ServerConfig::new(Vec::new(), vec![zone])
        };
        let records = vec![
            Endpoint::new("web.example.org", RecordType::A, ["192.0.2.1", "192.0.2.2"]),
            Endpoint::new("sub.example.org", RecordType::Ns, ["ns.sub.example.org"]),
            Endpoint::new("ns.sub.example.org", RecordType::A, ["192.0.2.6"]),
        ];
        QueryPath::with_records(Arc::new(config), records).expect("the fixed zone applies")
    })
}

/// A query for web.example.org A whose COOKIE option holds `cookie`.
fn with_cookie(cookie: &[u8]) -> Vec<u8> {
    let mut m = Message::new(0x4242, MessageType::Query, OpCode::Query);
    m.add_query(Query::query(name("web.example.org."), hickory_proto::rr::RecordType::A));
    let mut edns = Edns::new();
    edns.options_mut().insert(EdnsOption::Unknown(10, cookie.to_vec()));
    m.set_edns(edns);
    m.to_vec().expect("a fixed query encodes")
}

fuzz_target!(|data: &[u8]| {
    let [host, mode, rest @ ..] = data else { return };
    let structured = mode & 1 == 1;
    let cookie = rest.get(..rest.len().min(64)).unwrap_or_default();
    let wire = if structured { with_cookie(cookie) } else { rest.to_vec() };
    let peer = SocketAddr::from(([127, 0, 0, *host], 5353));
    let Some(answer) = path().udp_from(&wire, peer) else {
        return;
    };
    let message = udp_answer::checked(&wire, &answer);
    if structured {
        let well_formed = cookie.len() == 8 || (16..=40).contains(&cookie.len());
        if !well_formed {
            assert_eq!(
                message.response_code,
                ResponseCode::FormErr,
                "a {}-byte cookie",
                cookie.len()
            );
        }
    }
    if message.response_code == ResponseCode::BADCOOKIE {
        assert!(message.answers.is_empty() && message.authorities.is_empty());
        let Some(EdnsOption::Unknown(10, ours)) = message.edns.as_ref().and_then(|e| e.option(EdnsCode::Cookie)) else {
            panic!("BADCOOKIE without a cookie: {message:?}");
        };
        assert_eq!(ours.len(), 24, "the client cookie and a 16-byte server cookie");
        if structured {
            assert_eq!(ours[..8], cookie[..8], "the client cookie echoed");
        }
    }
    if message.metadata.truncation && message.response_code == ResponseCode::NoError {
        assert!(message.answers.is_empty(), "a truncated answer carries no records");
    }
});
