//! The built-in server's answers as real clients read them: BIND's `dig` and Knot's `kdig` against a
//! [`DnsServer`] on 127.0.0.1, its zone filled through [`DnsServerProvider`] as the controller fills it.
//! Every answer shape (hit, NXDOMAIN, NODATA, ENT, wildcard, CNAME chain, referral, ANY, EDNS, BADVERS,
//! REFUSED, TC and the TCP retry) is checked with both tools; malformed bytes go over raw sockets.

mod common;

use std::io::{Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::process::Command;
use std::time::Duration;

use common::{Served, ep, every_answer_shape};
use extdns_dns_server::Limits;
use extdns_endpoint::{Change, RecordType};
use extdns_test_support::{need, require};

/// The server with the test records: every answer shape the DNSSEC suites ask about (hits, a CNAME chain,
/// an empty non-terminal, a wildcard, a delegation with glue), a CNAME out of the zone, MX, TXT, and an A
/// record of 100 targets (too big for a plain UDP answer).
fn served(limits: Limits) -> Served {
    let served = Served::start(Vec::new(), Vec::new(), limits);
    let many: Vec<String> = (0..100).map(|i| format!("10.0.{}.{}", i / 250, i % 250 + 1)).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    served.apply(&every_answer_shape());
    let records = [
        ep("out.example.org", RecordType::Cname, &["web.example.com"]),
        ep("mail.example.org", RecordType::Mx, &["10 mx.example.org"]),
        ep("mx.example.org", RecordType::A, &["192.0.2.7"]),
        ep("txt.example.org", RecordType::Txt, &["\"hello world\""]),
        ep("big.example.org", RecordType::A, &many),
    ];
    served.apply(&records.map(Change::Create));
    served
}

/// The two clients, each asked with its own spelling of "no recursion, one try, two seconds".
#[derive(Debug, Clone, Copy)]
enum Tool {
    Dig,
    Kdig,
}

const TOOLS: [Tool; 2] = [Tool::Dig, Tool::Kdig];

/// One answer as a tool printed it.
#[derive(Debug, Default)]
struct Reply {
    status: String,
    flags: Vec<String>,
    answer: Vec<String>,
    authority: Vec<String>,
    additional: Vec<String>,
    /// The server's UDP payload size from its OPT record, if it sent one.
    udp_size: Option<u16>,
    text: String,
}

impl Reply {
    fn flag(&self, f: &str) -> bool {
        self.flags.iter().any(|x| x == f)
    }

    /// The record lines of a section as `name type rdata` (TTL and class dropped), lower-case names.
    fn short(lines: &[String]) -> Vec<String> {
        lines
            .iter()
            .map(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                format!("{} {} {}", w[0].to_ascii_lowercase(), w[3], w[4..].join(" "))
            })
            .collect()
    }
}

fn ask(tool: Tool, port: u16, args: &[&str]) -> Reply {
    let port = port.to_string();
    let (program, common): (&str, Vec<&str>) = match tool {
        Tool::Dig => ("dig", vec!["@127.0.0.1", "-p", &port, "+time=2", "+tries=1", "+norec"]),
        Tool::Kdig => ("kdig", vec!["@127.0.0.1", "-p", &port, "+time=2", "+retry=0", "+norec"]),
    };
    let out = Command::new(need(program))
        .args(&common)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    parse(&String::from_utf8_lossy(&out.stdout))
}

/// Reads dig's and kdig's output alike: their header lines differ in punctuation only.
fn parse(text: &str) -> Reply {
    let mut reply = Reply {
        text: text.to_string(),
        ..Reply::default()
    };
    let word_after = |line: &str, key: &str| -> Option<String> {
        let at = line.find(key)? + key.len();
        Some(line[at..].chars().take_while(|c| c.is_ascii_alphanumeric()).collect())
    };
    let mut section = "";
    for line in text.lines() {
        let lower = line.to_ascii_lowercase();
        if lower.contains("->>header<<-") {
            reply.status = word_after(line, "status: ").unwrap_or_default();
        } else if let Some(rest) = lower.strip_prefix(";; flags:") {
            let flags = rest.split(';').next().unwrap_or("");
            reply.flags = flags.split_whitespace().map(str::to_string).collect();
        } else if let Some(size) = word_after(&lower, "udp: ").or_else(|| word_after(&lower, "udp size: ")) {
            reply.udp_size = size.parse().ok();
        }
        if line.starts_with(";; ") && line.ends_with(':') {
            section = if line.contains("ANSWER") {
                "answer"
            } else if line.contains("AUTHORITY") {
                "authority"
            } else if line.contains("ADDITIONAL") {
                "additional"
            } else {
                ""
            };
            continue;
        }
        if line.trim().is_empty() {
            section = "";
            continue;
        }
        if line.starts_with(';') {
            continue;
        }
        match section {
            "answer" => reply.answer.push(line.to_string()),
            "authority" => reply.authority.push(line.to_string()),
            "additional" => reply.additional.push(line.to_string()),
            _ => {}
        }
    }
    reply
}

#[test]
fn hits_negative_answers_and_ents_read_right_in_dig_and_kdig() {
    require!(DnsClients);
    let s = served(Limits::default());
    for tool in TOOLS {
        let hit = ask(tool, s.port(), &["WEB.example.ORG", "A"]);
        assert_eq!(hit.status, "NOERROR", "{tool:?}: {}", hit.text);
        assert!(
            hit.flag("qr") && hit.flag("aa") && !hit.flag("ra") && !hit.flag("tc"),
            "{tool:?}: {}",
            hit.text
        );
        assert_eq!(
            Reply::short(&hit.answer),
            ["web.example.org. A 192.0.2.1", "web.example.org. A 192.0.2.2"],
            "{tool:?}: {}",
            hit.text
        );
        if matches!(tool, Tool::Dig) {
            // kdig lower-cases the name before it sends it; dig sends it as typed.
            assert!(
                hit.text.contains("WEB.example.ORG"),
                "the question as asked: {}",
                hit.text
            );
        }

        let nx = ask(tool, s.port(), &["nope.example.org", "A"]);
        assert_eq!(nx.status, "NXDOMAIN", "{tool:?}: {}", nx.text);
        assert!(nx.flag("aa") && nx.answer.is_empty());
        assert_eq!(nx.authority.len(), 1, "{}", nx.text);
        assert!(nx.authority[0].contains("SOA"), "{}", nx.text);
        let ttl: u32 = nx.authority[0]
            .split_whitespace()
            .nth(1)
            .and_then(|t| t.parse().ok())
            .expect("TTL");
        assert_eq!(ttl, 30, "the negative TTL is the SOA minimum");

        let nodata = ask(tool, s.port(), &["web.example.org", "AAAA"]);
        assert_eq!(nodata.status, "NOERROR", "{}", nodata.text);
        assert!(
            nodata.answer.is_empty() && nodata.authority[0].contains("SOA"),
            "{}",
            nodata.text
        );

        let ent = ask(tool, s.port(), &["b.c.example.org", "A"]);
        assert_eq!(ent.status, "NOERROR", "an empty non-terminal is NODATA: {}", ent.text);
        assert!(ent.answer.is_empty() && ent.authority[0].contains("SOA"));

        let txt = ask(tool, s.port(), &["txt.example.org", "TXT"]);
        assert_eq!(
            Reply::short(&txt.answer),
            ["txt.example.org. TXT \"hello world\""],
            "{}",
            txt.text
        );

        let mx = ask(tool, s.port(), &["mail.example.org", "MX"]);
        assert_eq!(
            Reply::short(&mx.additional),
            ["mx.example.org. A 192.0.2.7"],
            "{}",
            mx.text
        );

        let refused = ask(tool, s.port(), &["example.com", "A"]);
        assert_eq!(refused.status, "REFUSED", "{}", refused.text);
        assert!(!refused.flag("aa"));
    }
}

#[test]
fn wildcards_cname_chains_and_referrals_read_right_in_dig_and_kdig() {
    require!(DnsClients);
    let s = served(Limits::default());
    for tool in TOOLS {
        let wild = ask(tool, s.port(), &["anything.wild.example.org", "A"]);
        assert_eq!(
            Reply::short(&wild.answer),
            ["anything.wild.example.org. A 192.0.2.4"],
            "{tool:?}: {}",
            wild.text
        );
        assert!(wild.flag("aa"));

        let chain = ask(tool, s.port(), &["chain.example.org", "A"]);
        assert_eq!(
            Reply::short(&chain.answer),
            [
                "chain.example.org. CNAME www.example.org.",
                "www.example.org. CNAME web.example.org.",
                "web.example.org. A 192.0.2.1",
                "web.example.org. A 192.0.2.2",
            ],
            "{tool:?}: {}",
            chain.text
        );
        let out = ask(tool, s.port(), &["out.example.org", "A"]);
        assert_eq!(Reply::short(&out.answer), ["out.example.org. CNAME web.example.com."]);
        assert_eq!(out.status, "NOERROR");

        let referral = ask(tool, s.port(), &["host.sub.example.org", "A"]);
        assert_eq!(referral.status, "NOERROR", "{}", referral.text);
        assert!(
            !referral.flag("aa") && referral.answer.is_empty(),
            "{tool:?}: {}",
            referral.text
        );
        assert_eq!(
            Reply::short(&referral.authority),
            ["sub.example.org. NS ns.sub.example.org."]
        );
        assert_eq!(Reply::short(&referral.additional), ["ns.sub.example.org. A 192.0.2.6"]);

        let any = ask(tool, s.port(), &["example.org", "ANY"]);
        let types: std::collections::BTreeSet<String> = Reply::short(&any.answer)
            .iter()
            .map(|l| l.split(' ').nth(1).unwrap_or("").to_string())
            .collect();
        assert_eq!(types.len(), 1, "RFC 8482: one record set: {}", any.text);
    }
}

#[test]
fn edns_badvers_and_truncation_with_the_tcp_retry() {
    require!(DnsClients);
    let s = served(Limits::default());
    for tool in TOOLS {
        let edns = ask(tool, s.port(), &["+edns=0", "+bufsize=4096", "web.example.org", "A"]);
        assert_eq!(edns.udp_size, Some(1232), "{tool:?}: our payload size: {}", edns.text);
        let plain = ask(tool, s.port(), &["+noedns", "web.example.org", "A"]);
        assert_eq!(
            plain.udp_size, None,
            "{tool:?}: no OPT without one asked: {}",
            plain.text
        );
        // dig would otherwise retry with version 0 on BADVERS; kdig never does.
        let version_one: &[&str] = match tool {
            Tool::Dig => &["+edns=1", "+noednsnegotiation", "web.example.org", "A"],
            Tool::Kdig => &["+edns=1", "web.example.org", "A"],
        };
        let badvers = ask(tool, s.port(), version_one);
        assert_eq!(badvers.status, "BADVERS", "{tool:?}: {}", badvers.text);
        assert!(badvers.answer.is_empty());

        // 100 A records: 1.6 kB, more than 512 and than 1232.
        let truncated = ask(tool, s.port(), &["+ignore", "+noedns", "big.example.org", "A"]);
        assert!(
            truncated.flag("tc") && truncated.flag("aa"),
            "{tool:?}: {}",
            truncated.text
        );
        assert!(truncated.answer.is_empty(), "{}", truncated.text);
        let retried = ask(tool, s.port(), &["big.example.org", "A"]);
        assert!(
            !retried.flag("tc"),
            "{tool:?} retries over TCP by itself: {}",
            retried.text
        );
        assert_eq!(retried.answer.len(), 100, "{tool:?}: {}", retried.text);
        let tcp = ask(tool, s.port(), &["+tcp", "big.example.org", "A"]);
        assert_eq!(tcp.answer.len(), 100);
    }
    assert!(s.metrics.truncated.get() >= 4, "truncations are counted");
}

#[test]
fn a_change_through_the_provider_answers_on_the_next_query() {
    require!(DnsClients);
    let s = served(Limits::default());
    assert_eq!(ask(Tool::Dig, s.port(), &["new.example.org", "A"]).status, "NXDOMAIN");
    s.apply(&[Change::Create(ep("new.example.org", RecordType::A, &["192.0.2.99"]))]);
    for tool in TOOLS {
        let r = ask(tool, s.port(), &["new.example.org", "A"]);
        assert_eq!(
            Reply::short(&r.answer),
            ["new.example.org. A 192.0.2.99"],
            "{tool:?}: {}",
            r.text
        );
    }
    let old = ep("web.example.org", RecordType::A, &["192.0.2.1", "192.0.2.2"]);
    let new = ep("web.example.org", RecordType::A, &["192.0.2.10"]);
    s.apply(&[Change::update(old, new.clone())]);
    let r = ask(Tool::Kdig, s.port(), &["web.example.org", "A"]);
    assert_eq!(Reply::short(&r.answer), ["web.example.org. A 192.0.2.10"], "{}", r.text);
    s.apply(&[Change::Delete(new)]);
    assert_eq!(ask(Tool::Dig, s.port(), &["web.example.org", "A"]).status, "NXDOMAIN");
}

/// TLSA, HTTPS and SVCB written through the provider are answered (as `dig` and `kdig` read them), read
/// back by the provider in canonical text, updated and deleted (the transfer suite transfers them).
#[test]
fn tlsa_https_and_svcb_are_served_read_back_and_transferred() {
    require!(DnsClients);
    let s = served(Limits::default());
    let tlsa = format!("3 1 1 {}", "ab".repeat(32));
    let records = [
        ep("_443._tcp.web.example.org", RecordType::Tlsa, &[tlsa.as_str()]),
        ep("web.example.org", RecordType::Https, &["1 . alpn=h2,h3 port=8443"]),
        ep("_dns.example.org", RecordType::Svcb, &["0 dns.example.net."]),
    ];
    s.apply(&records.clone().map(Change::Create));
    for e in &records {
        let want: Vec<String> = e.targets.iter().map(ToString::to_string).collect();
        assert_eq!(
            extdns_test_support::dig::typed(s.port(), &e.dns_name, e.record_type.as_str()),
            want,
            "dig {e}"
        );
        let r = ask(Tool::Kdig, s.port(), &[&e.dns_name, e.record_type.as_str()]);
        assert_eq!(r.status, "NOERROR", "kdig {e}: {}", r.text);
        assert_eq!(r.answer.len(), 1, "kdig {e}: {}", r.text);
    }
    let read = s
        .runtime
        .block_on(extdns_provider::Provider::records(&s.provider))
        .expect("reads")
        .endpoints;
    for e in &records {
        assert!(
            read.iter()
                .any(|r| r.dns_name == e.dns_name && r.record_type == e.record_type && r.targets == e.targets),
            "{e} read back as {read:?}"
        );
    }
    let new = ep("web.example.org", RecordType::Https, &["2 svc.example.net. alpn=h3"]);
    s.apply(&[Change::update(records[1].clone(), new.clone())]);
    assert_eq!(
        extdns_test_support::dig::typed(s.port(), "web.example.org", "HTTPS"),
        ["2 svc.example.net. alpn=h3"]
    );
    s.apply(&[
        Change::Delete(new),
        Change::Delete(records[0].clone()),
        Change::Delete(records[2].clone()),
    ]);
    for e in &records {
        assert!(
            extdns_test_support::dig::short(s.port(), &e.dns_name, e.record_type.as_str()).is_empty(),
            "{e} deleted"
        );
    }
}

/// A query for `web.example.org A` with this ID, flags and additional records, on the wire.
fn raw_query(id: u16, flags: u16, additional: &[&[u8]]) -> Vec<u8> {
    let mut q = Vec::new();
    q.extend_from_slice(&id.to_be_bytes());
    q.extend_from_slice(&flags.to_be_bytes());
    let arcount = u16::try_from(additional.len()).expect("count");
    q.extend_from_slice(&[0, 1, 0, 0, 0, 0]);
    q.extend_from_slice(&arcount.to_be_bytes());
    q.extend_from_slice(b"\x03web\x07example\x03org\x00\x00\x01\x00\x01");
    for r in additional {
        q.extend_from_slice(r);
    }
    q
}

/// An OPT record: root owner, type 41, payload 1232, version 0, no options.
const OPT: &[u8] = b"\x00\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x00";

fn udp_exchange(port: u16, packet: &[u8]) -> Option<Vec<u8>> {
    let socket = UdpSocket::bind("127.0.0.1:0").expect("client socket");
    socket
        .set_read_timeout(Some(Duration::from_millis(500)))
        .expect("timeout");
    socket.send_to(packet, ("127.0.0.1", port)).expect("send");
    let mut buf = [0u8; 4096];
    socket.recv(&mut buf).ok().map(|n| buf[..n].to_vec())
}

fn rcode(answer: &[u8]) -> u8 {
    answer[3] & 0x0f
}

#[test]
fn malformed_bytes_get_formerr_or_silence_over_udp() {
    let s = served(Limits::default());
    let port = s.port();
    // The baseline: a well-formed query is answered.
    let ok = udp_exchange(port, &raw_query(0x1234, 0, &[])).expect("an answer");
    assert_eq!((ok[0], ok[1], rcode(&ok)), (0x12, 0x34, 0));
    assert_eq!(ok[2] & 0x84, 0x84, "QR and AA");
    // Shorter than a header: nothing to answer to.
    assert_eq!(udp_exchange(port, b"\x12\x34\x01"), None);
    // A response (QR set) is never answered.
    assert_eq!(udp_exchange(port, &raw_query(0x1235, 0x8000, &[])), None);
    // A question cut short: FORMERR with the ID and RD.
    let mut cut = raw_query(0x1236, 0x0100, &[]);
    cut.truncate(20);
    let formerr = udp_exchange(port, &cut).expect("FORMERR");
    assert_eq!((formerr[0], formerr[1], rcode(&formerr)), (0x12, 0x36, 1));
    assert_eq!(formerr[2], 0x81, "QR and RD, opcode QUERY");
    // Two OPT records (RFC 6891 §6.1.1): FORMERR.
    let two = udp_exchange(port, &raw_query(0x1237, 0, &[OPT, OPT])).expect("FORMERR");
    assert_eq!(rcode(&two), 1);
    // One OPT: answered, with ours.
    let one = udp_exchange(port, &raw_query(0x1238, 0, &[OPT])).expect("answer");
    assert_eq!(rcode(&one), 0);
    assert_eq!(u16::from_be_bytes([one[10], one[11]]), 1, "our OPT in additional");
    // Garbage after a readable header, and a flood of junk: still answering afterwards.
    for i in 0..200u16 {
        let mut junk = raw_query(i, 0, &[]);
        junk.extend_from_slice(&i.to_be_bytes().repeat(usize::from(i % 7)));
        junk.truncate(12 + usize::from(i % 20));
        let _ = UdpSocket::bind("127.0.0.1:0").and_then(|c| c.send_to(&junk, ("127.0.0.1", port)));
    }
    assert!(udp_exchange(port, &raw_query(0x1239, 0, &[])).is_some());
    let malformed = s
        .metrics
        .malformed
        .get_or_create(&extdns_dns_server::metrics::TransportLabels {
            transport: extdns_dns_server::metrics::Transport::Udp,
        });
    assert!(
        malformed.get() >= 2,
        "malformed requests are counted: {}",
        malformed.get()
    );
    let answers = |rcode: &str| {
        s.metrics
            .answers
            .get_or_create(&extdns_dns_server::metrics::AnswerLabels {
                transport: extdns_dns_server::metrics::Transport::Udp,
                rcode: rcode.into(),
            })
            .get()
    };
    assert!(
        answers("NOERROR") >= 3 && answers("FORMERR") >= 2,
        "answers are counted by rcode"
    );
    let dropped = |reason| {
        s.metrics
            .dropped
            .get_or_create(&extdns_dns_server::metrics::DropLabels {
                transport: extdns_dns_server::metrics::Transport::Udp,
                reason,
            })
            .get()
    };
    assert_eq!(
        (dropped("short"), dropped("response")),
        (1, 1),
        "silence is counted too"
    );
}

/// A fuzzer's find: an IXFR question followed by seventeen more, whose names the encoder cannot compress as
/// the request did. Echoing every question made a 1,244-byte FORMERR to a 1,117-byte request without EDNS.
#[test]
fn a_transfer_with_many_questions_gets_a_formerr_that_fits_the_datagram() {
    let s = served(Limits::default());
    let request = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/multi-question-ixfr.bin"
    ))
    .expect("the fuzzer's input");
    assert_eq!(
        u16::from_be_bytes([request[4], request[5]]),
        18,
        "the input has 18 questions"
    );
    let answer = udp_exchange(s.port(), &request).expect("an answer");
    assert_eq!(rcode(&answer), 1, "FORMERR");
    assert!(answer.len() <= 512, "{} bytes to a request without EDNS", answer.len());
    assert_eq!(u16::from_be_bytes([answer[4], answer[5]]), 0, "no question echoed");
}

fn tcp_send(stream: &mut TcpStream, message: &[u8]) {
    let len = u16::try_from(message.len()).expect("length");
    stream.write_all(&len.to_be_bytes()).expect("write");
    stream.write_all(message).expect("write");
}

fn tcp_read(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut len = [0u8; 2];
    stream.read_exact(&mut len).ok()?;
    let mut message = vec![0u8; usize::from(u16::from_be_bytes(len))];
    stream.read_exact(&mut message).ok()?;
    Some(message)
}

#[test]
fn tcp_answers_several_queries_per_connection_and_formerr_for_bad_ones() {
    let s = served(Limits::default());
    let mut stream = TcpStream::connect(s.address).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(2))).expect("timeout");
    // Two queries written at once are answered in order.
    let mut both = Vec::new();
    for id in [1u16, 2] {
        let q = raw_query(id, 0, &[]);
        both.extend_from_slice(&u16::try_from(q.len()).expect("length").to_be_bytes());
        both.extend_from_slice(&q);
    }
    stream.write_all(&both).expect("write");
    for id in [1u16, 2] {
        let a = tcp_read(&mut stream).expect("answer");
        assert_eq!(u16::from_be_bytes([a[0], a[1]]), id);
        assert_eq!(rcode(&a), 0);
    }
    // Big answers come whole over TCP.
    let mut big = raw_query(3, 0, &[]);
    big.splice(13..16, b"big".iter().copied());
    tcp_send(&mut stream, &big);
    let a = tcp_read(&mut stream).expect("answer");
    assert_eq!(u16::from_be_bytes([a[6], a[7]]), 100, "100 answers");
    assert_eq!(a[2] & 0x02, 0, "no TC over TCP");
    // A bad body: FORMERR, and the connection goes on.
    let mut cut = raw_query(4, 0, &[]);
    cut.truncate(18);
    tcp_send(&mut stream, &cut);
    assert_eq!(rcode(&tcp_read(&mut stream).expect("FORMERR")), 1);
    tcp_send(&mut stream, &raw_query(5, 0, &[]));
    assert_eq!(tcp_read(&mut stream).expect("answer")[1], 5);
    // No header at all: the stream is not trusted any more and is closed.
    tcp_send(&mut stream, b"\x00\x06ab");
    assert_eq!(tcp_read(&mut stream), None);
}

#[test]
fn tcp_connections_are_capped_and_idle_ones_closed() {
    let limits = Limits {
        tcp_connections: 2,
        tcp_idle: Duration::from_millis(400),
        ..Limits::default()
    };
    let s = served(limits);
    let mut held: Vec<TcpStream> = (0..2)
        .map(|_| TcpStream::connect(s.address).expect("connect"))
        .collect();
    // Let the server accept both before the third arrives.
    std::thread::sleep(Duration::from_millis(100));
    let mut third = TcpStream::connect(s.address).expect("the kernel accepts");
    third.set_read_timeout(Some(Duration::from_secs(2))).expect("timeout");
    let mut buf = [0u8; 1];
    assert_eq!(third.read(&mut buf).ok(), Some(0), "closed at once at the cap");
    assert_eq!(s.metrics.tcp_refused.get(), 1);
    // The held ones are idle: closed by the server after the idle time (a read that ends, not one that times
    // out), which frees their slots for the next connection.
    for stream in &mut held {
        stream.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
        assert_eq!(
            stream.read(&mut buf).ok(),
            Some(0),
            "idle connection closed by the server"
        );
    }
    let mut again = TcpStream::connect(s.address).expect("connect");
    again.set_read_timeout(Some(Duration::from_secs(2))).expect("timeout");
    tcp_send(&mut again, &raw_query(9, 0, &[]));
    assert_eq!(tcp_read(&mut again).expect("answer")[1], 9);
}
