//! The server as the internet meets it, checked with real clients on loopback: DNS cookies as `dig` and
//! `kdig` send them (a wrong server cookie gets BADCOOKIE and a fresh one), DNS over TLS with `kdig +tls`
//! and `dig +tls` (and the certificate replaced on disk, then served), and response rate limiting under a
//! flood of identical queries from many addresses of one /24 (127.0.0.0/8 is all loopback), with a
//! cookie-bearing client and TCP unaffected.

mod common;

use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{Served, ep, zone_config};
use extdns_dns_server::metrics::ResultLabels;
use extdns_dns_server::{CookieSecret, RrlConfig, ServerConfig, TlsConfig};
use extdns_endpoint::{Change, RecordType};
use extdns_test_support::tls::Ca;
use extdns_test_support::{need, require};
use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::Name;
use hickory_proto::rr::rdata::opt::{EdnsCode, EdnsOption};

/// The server of `config` on 127.0.0.1 with `web.example.org` (two A records) in its zone.
fn served(config: ServerConfig) -> Served {
    let served = Served::with(config);
    served.apply(&[Change::Create(ep(
        "web.example.org",
        RecordType::A,
        &["192.0.2.1", "192.0.2.2"],
    ))]);
    served
}

fn config() -> ServerConfig {
    ServerConfig::new(vec!["127.0.0.1:0".parse().expect("address")], vec![zone_config()])
}

/// What `program` printed for `args`.
fn run(program: &str, args: &[&str]) -> String {
    let out = Command::new(need(program))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The status word of dig's or kdig's header line.
fn status(text: &str) -> String {
    let at = text.find("status: ").map(|i| i + 8).unwrap_or(text.len());
    text[at..].chars().take_while(|c| c.is_ascii_alphanumeric()).collect()
}

/// The hexadecimal COOKIE an answer carried, as dig and kdig print it (`COOKIE: <hex>`).
fn cookie(text: &str) -> Option<String> {
    let at = text.find("COOKIE: ")? + 8;
    let hex: String = text[at..].chars().take_while(char::is_ascii_hexdigit).collect();
    Some(hex.to_ascii_lowercase())
}

fn dig(port: u16, args: &[&str]) -> String {
    let port = port.to_string();
    run(
        "dig",
        &[&["@127.0.0.1", "-p", &port, "+time=2", "+tries=1", "+norec"][..], args].concat(),
    )
}

fn kdig(port: u16, args: &[&str]) -> String {
    let port = port.to_string();
    run(
        "kdig",
        &[&["@127.0.0.1", "-p", &port, "+time=2", "+retry=0", "+norec"][..], args].concat(),
    )
}

#[test]
fn cookies_as_dig_and_kdig_send_them_and_a_wrong_server_cookie_gets_badcookie() {
    require!(DnsClients);
    let served = served(config());
    let port = served.port();
    for (tool, ask) in [("dig", dig as fn(u16, &[&str]) -> String), ("kdig", kdig)] {
        let first = ask(port, &["+cookie", "web.example.org", "A"]);
        assert_eq!(status(&first), "NOERROR", "{tool}:\n{first}");
        let both = cookie(&first).unwrap_or_else(|| panic!("{tool}: no cookie in\n{first}"));
        assert_eq!(both.len(), 48, "8 bytes of client and 16 of server cookie: {first}");
        assert_eq!(&both[16..18], "01", "RFC 9018's version");
        // The cookie sent back: answered, with the same server cookie (young).
        let again = ask(port, &[&format!("+cookie={both}"), "web.example.org", "A"]);
        assert_eq!(status(&again), "NOERROR", "{tool}:\n{again}");
        assert_eq!(cookie(&again).as_deref(), Some(both.as_str()), "{tool}:\n{again}");
        assert!(again.contains("192.0.2.1"), "{tool}:\n{again}");
        // A server cookie we did not make: BADCOOKIE, with a fresh one to retry with (dig retries by
        // and kdig retry by themselves unless told not to).
        let wrong = format!(
            "{}{}",
            &both[..40],
            if &both[40..] == "00000000" {
                "11111111"
            } else {
                "00000000"
            }
        );
        let bad = ask(
            port,
            &[
                &["+nobadcookie"][..],
                &[&format!("+cookie={wrong}"), "web.example.org", "A"],
            ]
            .concat(),
        );
        assert_eq!(status(&bad), "BADCOOKIE", "{tool}:\n{bad}");
        let fresh = cookie(&bad).unwrap_or_else(|| panic!("{tool}: no fresh cookie in\n{bad}"));
        assert_eq!(fresh[..16], wrong[..16]);
        assert_ne!(fresh, wrong);
        assert!(!bad.contains("192.0.2.1"), "no answer with BADCOOKIE: {bad}");
        let retried = ask(port, &[&format!("+cookie={fresh}"), "web.example.org", "A"]);
        assert_eq!(status(&retried), "NOERROR", "{tool}:\n{retried}");
        let by_itself = ask(port, &[&format!("+cookie={wrong}"), "web.example.org", "A"]);
        let retried_itself = match tool {
            "dig" => by_itself.contains("BADCOOKIE, retrying") && status(&by_itself) == "NOERROR",
            _ => by_itself.contains("status: BADCOOKIE") && by_itself.contains("status: NOERROR"),
        };
        assert!(retried_itself, "{tool} retries with the fresh cookie:\n{by_itself}");
        // Over TCP the connection proves the address: the wrong cookie gets an answer and a fresh cookie.
        let tcp = ask(port, &["+tcp", &format!("+cookie={wrong}"), "web.example.org", "A"]);
        assert_eq!(status(&tcp), "NOERROR", "{tool}:\n{tcp}");
        assert_ne!(cookie(&tcp).as_deref(), Some(wrong.as_str()));
    }
}

#[test]
fn a_secret_shared_by_replicas_makes_each_replicas_cookie_valid_at_the_other() {
    require!(DnsClients);
    let secret: CookieSecret = "00112233445566778899aabbccddeeff".parse().expect("secret");
    let shared = || ServerConfig {
        cookie_secret: Some(secret.clone()),
        ..config()
    };
    let (one, two) = (served(shared()), served(shared()));
    let first = dig(one.port(), &["+cookie", "web.example.org", "A"]);
    let both = cookie(&first).expect("a cookie");
    let other = dig(two.port(), &[&format!("+cookie={both}"), "web.example.org", "A"]);
    assert_eq!(status(&other), "NOERROR", "{other}");
    assert_eq!(
        cookie(&other).as_deref(),
        Some(both.as_str()),
        "valid as it came: {other}"
    );
}

/// Waits (up to a minute, a bound for a stalled machine, not a measure) until `done` holds.
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within a minute");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn dns_over_tls_answers_kdig_and_dig_and_serves_a_replaced_certificate() {
    require!(DnsClients, OpenSsl);
    let dir = tempfile::tempdir().expect("temp dir");
    let first = Ca::for_localhost(&dir.path().join("first")).expect("a CA");
    let second = Ca::for_localhost(&dir.path().join("second")).expect("a CA");
    let (cert, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    std::fs::copy(first.path("server.crt"), &cert).expect("copy");
    std::fs::copy(first.path("server.key"), &key).expect("copy");
    let tls = TlsConfig {
        reload_every: Duration::from_millis(100),
        ..TlsConfig::new(vec!["127.0.0.1:0".parse().expect("address")], cert.clone(), key.clone())
    };
    let served = served(ServerConfig {
        tls: Some(tls),
        ..config()
    });
    let port = served.tls.expect("a DoT address").port();
    let verified = |ca: &Ca| {
        let ca = format!("+tls-ca={}", ca.path("ca.crt").display());
        kdig(port, &["+tls", &ca, "+tls-hostname=localhost", "web.example.org", "A"])
    };
    let answer = verified(&first);
    assert_eq!(status(&answer), "NOERROR", "{answer}");
    assert!(answer.contains("192.0.2.1") && answer.contains("192.0.2.2"), "{answer}");
    let by_dig = dig(port, &["+tls", "web.example.org", "A"]);
    assert_eq!(status(&by_dig), "NOERROR", "{by_dig}");
    assert!(by_dig.contains("192.0.2.1"), "{by_dig}");
    // The same query path as TCP: a name outside the zones is refused, cookies answered.
    let refused = kdig(port, &["+tls", "example.com", "A"]);
    assert_eq!(status(&refused), "REFUSED", "{refused}");
    assert!(cookie(&kdig(port, &["+tls", "+cookie", "web.example.org", "A"])).is_some());
    assert!(
        !verified(&second).contains("status: NOERROR"),
        "not yet the second certificate"
    );

    // cert-manager's renewal: both files replaced.
    std::fs::copy(second.path("server.crt"), &cert).expect("copy");
    std::fs::copy(second.path("server.key"), &key).expect("copy");
    let reloaded = served
        .metrics
        .tls_reloads
        .get_or_create(&ResultLabels { result: "reloaded" })
        .clone();
    eventually("the certificate reloaded", || reloaded.get() >= 1);
    let answer = verified(&second);
    assert_eq!(status(&answer), "NOERROR", "{answer}");
    assert!(
        !verified(&first).contains("status: NOERROR"),
        "the first certificate is gone"
    );
}

/// A query for `web.example.org A` with EDNS, and a client cookie when given, as wire bytes.
fn query(id: u16, cookie: Option<&[u8]>) -> Vec<u8> {
    let mut m = Message::new(id, MessageType::Query, OpCode::Query);
    m.add_query(Query::query(
        Name::from_ascii("web.example.org.").expect("name"),
        hickory_proto::rr::RecordType::A,
    ));
    let mut edns = Edns::new();
    edns.set_max_payload(1232);
    if let Some(data) = cookie {
        edns.options_mut().insert(EdnsOption::Unknown(10, data.to_vec()));
    }
    m.set_edns(edns);
    m.to_vec().expect("encodes")
}

/// Every answer that arrives on `socket` until it stays quiet for 300 ms (the answers to a flood already
/// sent wait in the socket's buffer).
fn drain(socket: &UdpSocket) -> Vec<Message> {
    socket
        .set_read_timeout(Some(Duration::from_millis(300)))
        .expect("timeout");
    let mut buf = [0u8; 2048];
    let mut got = Vec::new();
    while let Ok(len) = socket.recv(&mut buf) {
        got.push(Message::from_vec(&buf[..len]).expect("an answer decodes"));
    }
    got
}

/// A UDP socket of `source` talking to `server`.
fn client(source: [u8; 4], server: SocketAddr) -> UdpSocket {
    let socket = UdpSocket::bind(SocketAddr::new(IpAddr::from(source), 0)).expect("binds a loopback source");
    socket.connect(server).expect("connects");
    socket
}

/// The answers to a flood of `per_source` identical queries from each of 127.0.0.2..=21 (one /24),
/// sent as fast as the loop goes, and the seconds the flood lasted.
fn flood(server: SocketAddr, per_source: u16) -> (Vec<Message>, u64, usize) {
    let sources: Vec<UdpSocket> = (2..22).map(|h| client([127, 0, 0, h], server)).collect();
    let wire = query(1, None);
    let start = Instant::now();
    for _ in 0..per_source {
        for s in &sources {
            s.send(&wire).expect("sends");
        }
    }
    let seconds = start.elapsed().as_secs() + 1;
    let answers: Vec<Message> = sources.iter().flat_map(drain).collect();
    (answers, seconds, sources.len() * usize::from(per_source))
}

#[test]
fn a_flood_from_one_24_is_capped_at_the_rate_with_slips_while_cookies_and_tcp_pass() {
    let rate = 10;
    let served = served(ServerConfig {
        rrl: Some(RrlConfig {
            responses_per_second: rate,
            // Long enough that the whole test runs inside it, however slow the machine.
            window: Duration::from_secs(60),
            slip: 2,
            ..RrlConfig::default()
        }),
        ..config()
    });
    // A real client got its server cookie before the flood.
    let resolver = client([127, 0, 0, 200], served.address);
    resolver.send(&query(2, Some(&[7; 8]))).expect("sends");
    let first = drain(&resolver);
    let Some(EdnsOption::Unknown(10, cookie)) = first[0].edns.as_ref().and_then(|e| e.option(EdnsCode::Cookie)) else {
        panic!("a cookie in {first:?}");
    };
    let cookie = cookie.clone();

    let (answers, seconds, sent) = flood(served.address, 50);
    let full = answers.iter().filter(|m| !m.answers.is_empty()).count();
    let slipped: Vec<&Message> = answers.iter().filter(|m| m.answers.is_empty()).collect();
    // At most the rate in each second the flood touched (the resolver's query above counted once).
    assert!(full >= 1, "the first answers of the second go out");
    assert!(
        full <= usize::try_from(u64::from(rate) * seconds).expect("small"),
        "{full} full answers in {seconds} s at {rate}/s"
    );
    assert!(!slipped.is_empty(), "every second limited answer slips");
    assert!(
        slipped
            .iter()
            .all(|m| m.metadata.truncation && m.response_code == ResponseCode::NoError)
    );
    assert!(
        answers.len() < sent,
        "the rest is dropped: {} of {sent} answered",
        answers.len()
    );

    // Still inside the window: the cookie-bearing resolver and TCP are answered in full every time.
    resolver
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut buf = [0u8; 2048];
    for id in 0..20 {
        resolver.send(&query(id, Some(&cookie))).expect("sends");
        let len = resolver.recv(&mut buf).expect("an answer to the cookie");
        let got = Message::from_vec(&buf[..len]).expect("decodes");
        assert_eq!(got.answers.len(), 2, "{got:?}");
    }
    let mut tcp = TcpStream::connect(served.address).expect("TCP connects");
    tcp.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    for id in 0..20 {
        let wire = query(id, None);
        let mut framed = u16::try_from(wire.len()).expect("small").to_be_bytes().to_vec();
        framed.extend_from_slice(&wire);
        std::io::Write::write_all(&mut tcp, &framed).expect("writes");
        let mut len = [0u8; 2];
        std::io::Read::read_exact(&mut tcp, &mut len).expect("a length");
        let mut answer = vec![0u8; usize::from(u16::from_be_bytes(len))];
        std::io::Read::read_exact(&mut tcp, &mut answer).expect("an answer");
        assert_eq!(Message::from_vec(&answer).expect("decodes").answers.len(), 2);
    }
    // And the flood's addresses are still limited.
    let (again, _, _) = flood(served.address, 5);
    assert!(
        again.iter().all(|m| m.answers.is_empty()),
        "still limited inside the window"
    );
}

/// The reflection an attacker gets: bytes answered over bytes asked, for a flood of identical queries
/// with a large answer, with RRL off and on. A figure to read (`cargo test -p extdns-dns-server --test
/// internet -- --ignored --nocapture`), not a pass/fail ratio.
#[test]
#[ignore = "prints the amplification factor; run by hand"]
fn amplification_factor_with_rrl_off_and_on() {
    for rrl in [None, Some(RrlConfig::default())] {
        let served = Served::with(ServerConfig { rrl, ..config() });
        let many: Vec<String> = (0..60).map(|i| format!("10.0.0.{}", i + 1)).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        served.apply(&[Change::Create(ep("web.example.org", RecordType::A, &many))]);
        let sources: Vec<UdpSocket> = (2..12).map(|h| client([127, 0, 0, h], served.address)).collect();
        let wire = query(1, None);
        let (mut asked, mut answered) = (0usize, 0usize);
        let mut buf = [0u8; 2048];
        // Read as we go: a burst of large answers overflows a client socket's buffer otherwise, and
        // answers lost there would flatter the figure.
        let mut read = |sources: &[UdpSocket], wait: Duration| {
            for s in sources {
                s.set_read_timeout(Some(wait)).expect("timeout");
                while let Ok(len) = s.recv(&mut buf) {
                    answered += len;
                }
            }
        };
        for _ in 0..3 {
            for round in 0..100 {
                for s in &sources {
                    asked += s.send(&wire).expect("sends");
                }
                if round % 10 == 9 {
                    read(&sources, Duration::from_millis(5));
                }
            }
            std::thread::sleep(Duration::from_secs(1));
        }
        read(&sources, Duration::from_millis(500));
        #[allow(clippy::cast_precision_loss, reason = "a printed figure")]
        let factor = answered as f64 / asked as f64;
        println!(
            "RRL {}: {asked} B asked, {answered} B answered, amplification {factor:.2}",
            if rrl.is_some() { "on (20/s, slip 2)" } else { "off" }
        );
    }
}
