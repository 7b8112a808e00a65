//! Zone transfers to real secondaries: BIND and Knot, configured as secondaries of the built-in server,
//! take the zone by AXFR, follow every change made through [`extdns_dns_server::DnsServerProvider`] by
//! NOTIFY and IXFR (in about a second on an idle machine, a figure the test prints), and end with exactly the records the server serves. Transfers from another address, unsigned,
//! or with a wrong key are refused, as `dig` and `kdig` show.

mod common;

use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{Served, ep, name};
use extdns_dns_server::dnssec::{DnssecConfig, KeyAlgorithm, ZoneKey};
use extdns_dns_server::{Limits, Secondary, ServerConfig, ZoneConfig};
use extdns_dns_wire::{TsigAlgorithm, TsigKey};
use extdns_endpoint::{Change, RecordType};
use extdns_test_support::dns_server::{self, ExtraKey, Kind, Primary};
use extdns_test_support::validator::Validator;
use extdns_test_support::{dig, free_port, need, require};
use hickory_proto::op::{Message, Query};
use hickory_proto::rr::{RData, RecordType as WireType};
use prometheus_client::encoding::text::encode;
use prometheus_client::registry::Registry;

const ZONE: &str = "example.org";
/// How long a secondary may take to follow a write before the test gives up: far below its own refresh
/// timer, so following in time shows that the NOTIFY did it, and far above the second it takes on an idle
/// machine, so a loaded one does not fail it.
const FOLLOW_WITHIN: Duration = Duration::from_secs(20);

/// The test key shared by the server and its secondaries (the launchers' own [`dns_server::KEY_NAME`]).
fn shared_key() -> ExtraKey {
    ExtraKey {
        name: dns_server::KEY_NAME.into(),
        algorithm: "hmac-sha256".into(),
        secret: dns_server::SECRET.into(),
    }
}

fn decode(b64: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(b64)
        .expect("the launchers' secret is base64")
}

/// The launchers' key as the server knows it: [`dns_server::DnsServer::axfr`] and `dig::axfr` sign with it.
fn launchers_key() -> TsigKey {
    TsigKey::new(
        dns_server::KEY_NAME,
        TsigAlgorithm::HmacSha256,
        &decode(dns_server::SECRET),
    )
    .expect("key")
}

/// The built-in server with the secondaries on `ports`, each required to sign with the shared key when
/// `signed`.
fn served(ports: &[u16], signed: bool) -> Served {
    let key = launchers_key();
    let secondaries = ports
        .iter()
        .map(|p| Secondary {
            address: SocketAddr::from(([127, 0, 0, 1], *p)),
            key: signed.then(|| name(dns_server::KEY_NAME)),
        })
        .collect();
    Served::start(secondaries, vec![key], still_serials())
}

/// Limits under which serials do not settle (one replica): NOTIFY follows each write at once, and the
/// tests that count each change's transfer see nothing between them. Settling is tested apart.
fn still_serials() -> Limits {
    Limits {
        serial_cell: None,
        ..Limits::default()
    }
}

/// The zone's serial, as the server holds it.
fn serial(served: &Served) -> u32 {
    served.zones.read().zones()[0].serial()
}

/// The server's metrics in the text format.
fn metrics(served: &Served) -> String {
    let mut registry = Registry::with_prefix("extdns_dns_server");
    served.metrics.register(&mut registry);
    let mut text = String::new();
    encode(&mut text, &registry).expect("metrics encode");
    text
}

/// The zone's serial as `port` answers a SOA query over UDP (a socket, not a `dig` process, so that
/// polling every few milliseconds costs the loaded machine little).
fn serial_at(port: u16) -> Option<u32> {
    let socket = UdpSocket::bind("127.0.0.1:0").ok()?;
    socket.set_read_timeout(Some(Duration::from_millis(200))).ok()?;
    let mut query = Message::query();
    query.add_query(Query::query(name("example.org."), WireType::SOA));
    socket.send_to(&query.to_vec().ok()?, ("127.0.0.1", port)).ok()?;
    let mut buf = [0u8; 2048];
    let n = socket.recv(&mut buf).ok()?;
    let answer = Message::from_vec(&buf[..n]).ok()?;
    answer.answers.iter().find_map(|r| match &r.data {
        RData::SOA(soa) => Some(soa.serial),
        _ => None,
    })
}

/// Waits until every secondary serves `serial`; how long each took since `since`.
fn wait_serial(secondaries: &[&dns_server::DnsServer], serial: u32, since: Instant, within: Duration) -> Vec<Duration> {
    let mut took: Vec<Option<Duration>> = vec![None; secondaries.len()];
    while took.iter().any(Option::is_none) {
        for (i, s) in secondaries.iter().enumerate() {
            if took[i].is_none() && serial_at(s.port) == Some(serial) {
                took[i] = Some(since.elapsed());
            }
        }
        for (i, s) in secondaries.iter().enumerate() {
            assert!(
                took[i].is_some() || since.elapsed() < within,
                "{} does not serve serial {serial} after {within:?}; log:\n{}",
                s.kind.name(),
                s.log()
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    took.into_iter().flatten().collect()
}

fn same_records(served: &Served, secondaries: &[&dns_server::DnsServer], step: &str) {
    let ours = dig::axfr(served.port(), ZONE).expect("AXFR from the built-in server");
    assert!(ours.len() >= 3, "{step}: {ours:?}");
    for s in secondaries {
        let theirs = s.axfr(ZONE).expect("AXFR from the secondary");
        assert_eq!(
            theirs,
            ours,
            "{step}: {} differs from the built-in server",
            s.kind.name()
        );
    }
}

/// How many incoming IXFRs Knot's `log` says it finished (an AXFR-style one goes on as an AXFR).
fn finished_ixfrs(log: &str) -> usize {
    log.lines()
        .filter(|l| l.contains("IXFR, incoming") && l.contains("finished"))
        .count()
}

/// `kdig` with `args` against the server: its output.
fn kdig(port: u16, args: &[&str]) -> String {
    let out = Command::new(need("kdig"))
        .args(["@127.0.0.1", "-p", &port.to_string(), "+time=2", "+retry=0"])
        .args(args)
        .output()
        .expect("kdig runs");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn bind_and_knot_secondaries_with_a_tsig_key_follow_every_change_by_notify_and_ixfr() {
    require!(Bind, Knot, DnsClients);
    let served = follow(true);
    refusals(&served);
}

#[test]
fn bind_and_knot_secondaries_by_address_alone_follow_every_change_by_notify_and_ixfr() {
    require!(Bind, Knot, DnsClients);
    let served = follow(false);
    // By address alone: an unsigned transfer from 127.0.0.1 is allowed, one from elsewhere is not.
    let k = kdig(served.port(), &["AXFR", ZONE]);
    assert!(k.contains("web.example.org.") && !k.contains("ERROR"), "{k}");
    let k = kdig(served.port(), &["-b", "127.0.0.2", "AXFR", ZONE]);
    assert!(k.contains("REFUSED"), "{k}");
}

/// Starts the server and a BIND and a Knot secondary of it (signing with the shared key when `signed`),
/// and checks that they take the zone and follow each of four writes by NOTIFY, incrementally.
fn follow(signed: bool) -> Served {
    let (bind_port, knot_port) = (free_port(), free_port());
    let served = served(&[bind_port, knot_port], signed);
    served.apply(&[
        Change::Create(ep("web.example.org", RecordType::A, &["192.0.2.1", "192.0.2.2"])),
        Change::Create(ep("www.example.org", RecordType::Cname, &["web.example.org"])),
        Change::Create(ep("txt.example.org", RecordType::Txt, &["\"hello world\""])),
        Change::Create(ep("mail.example.org", RecordType::Mx, &["10 mx.example.org"])),
        // The typed records go to the secondaries as they are served (the AXFRs compared below).
        Change::Create(ep("web.example.org", RecordType::Https, &["1 . alpn=h2 port=8443"])),
        Change::Create(ep("_443._tcp.web.example.org", RecordType::Tlsa, &["3 1 0 abcdef"])),
    ]);

    let primary = Primary {
        port: served.port(),
        key: signed.then(shared_key),
    };
    let bind = dns_server::DnsServer::start_secondary(Kind::Bind, bind_port, &[ZONE], &primary);
    let knot = dns_server::DnsServer::start_secondary(Kind::Knot, knot_port, &[ZONE], &primary);
    let secondaries = [&bind, &knot];
    wait_serial(&secondaries, serial(&served), Instant::now(), Duration::from_secs(20));
    same_records(&served, &secondaries, "after the first AXFR");
    let ours = dig::axfr(served.port(), ZONE).expect("AXFR from the built-in server");
    for t in ["TLSA", "HTTPS"] {
        assert!(ours.iter().any(|r| r.rtype == t), "{t} in the AXFR: {ours:?}");
    }

    // Each step, and the records of its IXFR: four SOAs (new; old, removed; new, added; new) and the
    // records the step removed and added.
    let steps: Vec<(&str, Vec<Change>, usize)> = vec![
        (
            "create",
            vec![Change::Create(ep("new.example.org", RecordType::A, &["192.0.2.10"]))],
            4 + 1,
        ),
        (
            "update",
            vec![Change::Update {
                old: Box::new(ep("web.example.org", RecordType::A, &["192.0.2.1", "192.0.2.2"])),
                new: Box::new(ep("web.example.org", RecordType::A, &["192.0.2.3"])),
            }],
            4 + 2 + 1,
        ),
        (
            "delete",
            vec![Change::Delete(ep(
                "txt.example.org",
                RecordType::Txt,
                &["\"hello world\""],
            ))],
            4 + 1,
        ),
        (
            "several at once",
            vec![
                Change::Create(ep("a.b.deep.example.org", RecordType::Aaaa, &["2001:db8::1"])),
                Change::Delete(ep("www.example.org", RecordType::Cname, &["web.example.org"])),
                Change::Create(ep("srv.example.org", RecordType::Srv, &["0 5 443 web.example.org"])),
            ],
            4 + 1 + 2,
        ),
    ];
    let mut worst = Duration::ZERO;
    for (step, changes, _) in &steps {
        // A second apart, as changes in a cluster mostly are: both secondaries hold back a refresh that
        // comes soon after their previous one (BIND releases SOA queries in ticks of 500 ms, Knot waits up to
        // a second), which is theirs to decide and measured apart below.
        std::thread::sleep(Duration::from_millis(1100));
        let start = Instant::now();
        served.apply(changes);
        let serial = serial(&served);
        // Followed by NOTIFY, not by the secondaries' own refresh (hours away): what shows it is that they
        // follow at all within the wait, the NOTIFYs acknowledged and the IXFRs counted below. How long it
        // took is a figure (a loaded machine stretches it), not a pass mark.
        let took = wait_serial(&secondaries, serial, start, FOLLOW_WITHIN);
        for (s, took) in secondaries.iter().zip(took) {
            eprintln!(
                "{step}: {} serves serial {serial} {took:?} after the write began",
                s.kind.name()
            );
            worst = worst.max(took);
        }
        same_records(&served, &secondaries, step);
    }
    eprintln!("slowest follow-up: {worst:?}");

    // A burst of writes with no pause: the secondaries end with the last one (NOTIFYs superseded and
    // coalesced), later by up to their own hold-back.
    let start = Instant::now();
    for i in 0..5 {
        served.apply(&[Change::Create(ep(
            &format!("burst{i}.example.org"),
            RecordType::A,
            &["192.0.2.20"],
        ))]);
    }
    let took = wait_serial(&secondaries, serial(&served), start, FOLLOW_WITHIN);
    eprintln!("a burst of five writes: followed after {took:?}");
    same_records(&served, &secondaries, "after a burst");

    // The follow-ups were incremental. BIND 9.18 does not name the kind of an incoming transfer at its
    // default level, but counts its records: after the first transfer, each has exactly the IXFR's (an
    // AXFR would carry the whole zone, at least 9).
    let bind_log = bind.log();
    let counts: Vec<usize> = bind_log
        .lines()
        .filter_map(|l| {
            l.split_once("Transfer completed: 1 messages, ")?
                .1
                .split_once(" records")?
                .0
                .parse()
                .ok()
        })
        .collect();
    let expected: Vec<usize> = steps.iter().map(|(_, _, n)| *n).collect();
    assert_eq!(
        counts.get(1..=steps.len()),
        Some(&expected[..]),
        "BIND's incoming transfers:\n{bind_log}"
    );
    let knot_log = knot.log();
    let knot_ixfr = finished_ixfrs(&knot_log);
    assert!(
        knot_ixfr >= steps.len(),
        "Knot finished {knot_ixfr} incoming IXFRs:\n{knot_log}"
    );
    let metrics = metrics(&served);
    assert!(
        metrics.contains("extdns_dns_server_transfers_total{kind=\"ixfr\"}"),
        "{metrics}"
    );
    assert!(
        metrics.contains("extdns_dns_server_notifies_total{result=\"acknowledged\"}"),
        "{metrics}"
    );
    served
}

/// A transfer from an address that is no secondary, unsigned, or with a wrong key is refused, and counted.
fn refusals(served: &Served) {
    let port = served.port();
    let good = format!("hmac-sha256:{}:{}", dns_server::KEY_NAME, dns_server::SECRET);
    let wrong = format!("hmac-sha256:{}:{}", dns_server::KEY_NAME, dns_server::WRONG_SECRET);
    let unknown = format!("hmac-sha256:nobody:{}", dns_server::SECRET);

    // dig: the right key from 127.0.0.2 (not a secondary's address), then from 127.0.0.1 unsigned, with a
    // wrong secret, with an unknown key.
    let from_elsewhere = dig::dig(port, &["-b", "127.0.0.2", "+tcp", "-y", &good, ZONE, "AXFR"]);
    assert!(from_elsewhere.contains("Transfer failed"), "{from_elsewhere}");
    let unsigned = dig::dig(port, &["+tcp", ZONE, "AXFR"]);
    assert!(unsigned.contains("Transfer failed"), "{unsigned}");
    let bad_sig = dig::dig(port, &["+tcp", "-y", &wrong, ZONE, "AXFR"]);
    assert!(
        bad_sig.contains("BADSIG") && bad_sig.contains("Transfer failed"),
        "{bad_sig}"
    );
    let signed = dig::dig(port, &["+tcp", "-y", &good, ZONE, "AXFR"]);
    assert!(
        signed.contains("SOA") && !signed.contains("Transfer failed"),
        "{signed}"
    );

    // kdig prints the status and the TSIG error.
    let k = kdig(port, &["-b", "127.0.0.2", "-y", &good, "AXFR", ZONE]);
    assert!(k.contains("REFUSED"), "kdig from 127.0.0.2: {k}");
    let k = kdig(port, &["AXFR", ZONE]);
    assert!(k.contains("REFUSED"), "kdig unsigned: {k}");
    let k = kdig(port, &["-y", &wrong, "AXFR", ZONE]);
    assert!(k.contains("error 'BADSIG'"), "kdig wrong secret: {k}");
    let k = kdig(port, &["-y", &unknown, "AXFR", ZONE]);
    assert!(k.contains("error 'BADKEY'"), "kdig unknown key: {k}");
    // AXFR over UDP is refused as BIND refuses it.
    let k = kdig(port, &["+notcp", "-y", &good, "AXFR", ZONE]);
    assert!(k.contains("FORMERR"), "kdig AXFR over UDP: {k}");

    let metrics = metrics(served);
    for reason in ["address", "key", "badsig", "badkey", "udp"] {
        assert!(
            metrics.contains(&format!("extdns_dns_server_refused_total{{reason=\"{reason}\"}}")),
            "{reason}: {metrics}"
        );
    }
}

#[test]
fn ixfr_answers_the_changes_since_the_clients_serial_and_the_whole_zone_before_the_journal() {
    require!(DnsClients);
    let served = served(&[free_port()], false);
    served.apply(&[Change::Create(ep("web.example.org", RecordType::A, &["192.0.2.1"]))]);
    let before = serial(&served);
    served.apply(&[Change::Update {
        old: Box::new(ep("web.example.org", RecordType::A, &["192.0.2.1"])),
        new: Box::new(ep("web.example.org", RecordType::A, &["192.0.2.2"])),
    }]);
    let mid = serial(&served);
    served.apply(&[Change::Create(ep("api.example.org", RecordType::A, &["192.0.2.3"]))]);
    let now = serial(&served);

    let ixfr = kdig(served.port(), &["+tcp", &format!("IXFR={before}"), ZONE]);
    let lines: Vec<&str> = ixfr.lines().filter(|l| l.contains("\tIN\t")).collect();
    let shape: Vec<String> = lines
        .iter()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            match f.get(3) {
                Some(&"SOA") => format!("SOA {}", f.get(6).unwrap_or(&"?")),
                Some(t) => format!("{} {} {}", f[0], t, f.get(4).unwrap_or(&"?")),
                None => String::new(),
            }
        })
        .collect();
    let expected = [
        format!("SOA {now}"),
        format!("SOA {before}"),
        "web.example.org. A 192.0.2.1".into(),
        format!("SOA {mid}"),
        "web.example.org. A 192.0.2.2".into(),
        format!("SOA {mid}"),
        format!("SOA {now}"),
        "api.example.org. A 192.0.2.3".into(),
        format!("SOA {now}"),
    ];
    assert_eq!(shape, expected, "{ixfr}");

    // Up to date: the current SOA alone.
    let current = kdig(served.port(), &["+tcp", &format!("IXFR={now}"), ZONE]);
    assert_eq!(
        current.lines().filter(|l| l.contains("\tSOA\t")).count(),
        1,
        "{current}"
    );
    // A serial the journal never saw: the whole zone, AXFR-style.
    let full = kdig(served.port(), &["+tcp", "IXFR=7", ZONE]);
    assert!(
        full.contains("api.example.org.") && full.contains("ns1.example.org."),
        "{full}"
    );
    assert!(
        !full.contains("192.0.2.1"),
        "no removed record in a full answer: {full}"
    );
}

/// `name TYPE` as the validating resolver saw it: validated (AD) with `status`; its answers.
fn validated(validator: &Validator, name: &str, rtype: &str, status: &str) -> Vec<String> {
    let v = validator.ask(name, rtype);
    assert!(
        v.status == status && v.authenticated,
        "{name} {rtype}: {v:?}\n{}",
        validator.log()
    );
    v.answers
}

/// A signed zone on a real secondary: Knot takes it by AXFR (every set's RRSIG, the apex's DNSKEY, CDS
/// and CDNSKEY, and the NSEC chain the transfer makes), and a validating BIND with the zone's DS,
/// forwarding to Knot alone, calls every answer shape Knot gives secure, its denials among them (made
/// from the chain: Knot has no key). After a change Knot asks for IXFR and is answered incrementally
/// (the new set, its signature, the links around it and the SOA's), and the new record and the denials
/// around it validate too.
#[test]
fn a_knot_secondary_of_a_signed_zone_serves_answers_that_validate() {
    require!(Knot, Bind, DnsClients);
    let knot_port = free_port();
    let key = ZoneKey::generate(KeyAlgorithm::EcdsaP256).expect("a key");
    let zone = common::zone_config();
    let ds = key.ds(&zone.origin).expect("a DS").to_string();
    let zone = ZoneConfig {
        dnssec: Some(DnssecConfig::new(key)),
        ..zone
    };
    let served = Served::with(ServerConfig {
        secondaries: vec![Secondary {
            address: SocketAddr::from(([127, 0, 0, 1], knot_port)),
            key: None,
        }],
        limits: still_serials(),
        ..ServerConfig::new(vec!["127.0.0.1:0".parse().expect("address")], vec![zone])
    });
    served.apply(&common::every_answer_shape());
    let primary = Primary {
        port: served.port(),
        key: None,
    };
    let knot = dns_server::DnsServer::start_secondary(Kind::Knot, knot_port, &[ZONE], &primary);
    wait_serial(&[&knot], serial(&served), Instant::now(), FOLLOW_WITHIN);
    let rrsigs = kdig(knot.port, &["+dnssec", "web.example.org", "A"]);
    assert!(rrsigs.contains("RRSIG"), "Knot serves the signatures: {rrsigs}");

    let validator = Validator::start(ZONE, &ds, knot.port);
    assert_eq!(validated(&validator, "web.example.org", "A", "NOERROR").len(), 2);
    assert_eq!(validated(&validator, "chain.example.org", "A", "NOERROR").len(), 4);
    let wild = validated(&validator, "a.b.wild.example.org", "A", "NOERROR");
    assert!(wild.iter().any(|r| r.ends_with("A 192.0.2.4")), "{wild:?}");
    assert_eq!(validated(&validator, ZONE, "DNSKEY", "NOERROR").len(), 1);
    // Knot's denials, from the transferred chain: a plain NXDOMAIN (the secondary cannot make compact
    // answers), NODATA, an empty non-terminal, a delegation without DS.
    assert!(validated(&validator, "nope.example.org", "A", "NXDOMAIN").is_empty());
    assert!(validated(&validator, "web.example.org", "TXT", "NOERROR").is_empty());
    assert!(validated(&validator, "b.c.example.org", "A", "NOERROR").is_empty());
    assert!(validated(&validator, "sub.example.org", "DS", "NOERROR").is_empty());

    std::thread::sleep(Duration::from_millis(1100));
    let start = Instant::now();
    served.apply(&[Change::Create(ep("pub.example.org", RecordType::A, &["192.0.2.10"]))]);
    let took = wait_serial(&[&knot], serial(&served), start, FOLLOW_WITHIN);
    eprintln!("Knot serves the signed change {took:?} after the write began");
    // A name no NSEC the resolver has seen covers (it synthesises NXDOMAIN from those it holds, RFC 8198).
    let new = validated(&validator, "pub.example.org", "A", "NOERROR");
    assert_eq!(new.len(), 1, "{new:?}");
    // The denials around the new name come from the links the IXFR changed.
    assert!(validated(&validator, "pub.example.org", "TXT", "NOERROR").is_empty());
    assert!(validated(&validator, "pua.example.org", "A", "NXDOMAIN").is_empty());
    incremental(&knot, &served);
}

/// Asserts that Knot took every IXFR of the signed zone as it came: incremental (not AXFR-style), with
/// no change it could not apply (a deleted record it did not hold fails the transfer).
fn incremental(knot: &dns_server::DnsServer, served: &Served) {
    let log = knot.log();
    assert!(
        log.lines().any(|l| l.contains("IXFR, incoming")),
        "Knot asked for IXFR:\n{log}"
    );
    assert!(
        !log.lines()
            .any(|l| l.contains("AXFR-style") || l.contains("fallback") || l.contains("failed") || l.contains("error")),
        "Knot applied the incremental answer:\n{log}"
    );
    assert!(
        metrics(served).contains("extdns_dns_server_transfers_total{kind=\"ixfr\"}"),
        "answered with the changes"
    );
}

/// The replicas' Service on one port of 127.0.0.1: its UDP datagrams and TCP connections go to the
/// replicas in turn, as kube-proxy spreads them, so a secondary whose primary it is asks each replica in
/// turn. Its threads live as long as the test process.
struct Service {
    port: u16,
}

impl Service {
    fn start(replicas: [u16; 2]) -> Service {
        let (udp, tcp) = loop {
            let port = free_port();
            if let (Ok(udp), Ok(tcp)) = (
                UdpSocket::bind(("127.0.0.1", port)),
                TcpListener::bind(("127.0.0.1", port)),
            ) {
                break (udp, tcp);
            }
        };
        let port = tcp.local_addr().expect("address").port();
        let turn = Arc::new(AtomicUsize::new(0));
        let next = {
            let turn = turn.clone();
            move || SocketAddr::from(([127, 0, 0, 1], replicas[turn.fetch_add(1, Ordering::Relaxed) % 2]))
        };
        let next_udp = next.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 65_535];
            while let Ok((n, client)) = udp.recv_from(&mut buf) {
                let (query, replica) = (buf[..n].to_vec(), next_udp());
                let Ok(reply_to) = udp.try_clone() else { return };
                std::thread::spawn(move || {
                    let Ok(upstream) = UdpSocket::bind("127.0.0.1:0") else {
                        return;
                    };
                    let _ = upstream.set_read_timeout(Some(Duration::from_secs(2)));
                    let mut answer = [0u8; 65_535];
                    if upstream.send_to(&query, replica).is_ok()
                        && let Ok(m) = upstream.recv(&mut answer)
                    {
                        let _ = reply_to.send_to(&answer[..m], client);
                    }
                });
            }
        });
        std::thread::spawn(move || {
            for client in tcp.incoming().flatten() {
                let Ok(upstream) = TcpStream::connect(next()) else {
                    continue;
                };
                let (Ok(mut client_read), Ok(mut upstream_write)) = (client.try_clone(), upstream.try_clone()) else {
                    continue;
                };
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut client_read, &mut upstream_write);
                    let _ = upstream_write.shutdown(std::net::Shutdown::Write);
                });
                let (mut upstream_read, mut client_write) = (upstream, client);
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut upstream_read, &mut client_write);
                    let _ = client_write.shutdown(std::net::Shutdown::Write);
                });
            }
        });
        Service { port }
    }
}

/// A Knot secondary on `knot_port` whose primary is the Service of `replicas`, once it serves `serial`.
fn knot_following(replicas: [&Served; 2], knot_port: u16, serial: u32) -> dns_server::DnsServer {
    let service = Service::start([replicas[0].port(), replicas[1].port()]);
    let primary = Primary {
        port: service.port,
        key: None,
    };
    let knot = dns_server::DnsServer::start_secondary(Kind::Knot, knot_port, &[ZONE], &primary);
    wait_serial(&[&knot], serial, Instant::now(), FOLLOW_WITHIN);
    knot
}

/// Waits until the first half-second of a span of `cell` has begun, so that writes made now land in one
/// span on every replica.
fn at_span_start(cell: Duration) {
    let cell = cell.as_millis();
    loop {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_millis();
        if (50..500).contains(&(now % cell)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until every replica's serial has settled; the serial they settled on, which must be one.
fn settled(replicas: &[&Served]) -> u32 {
    let start = Instant::now();
    while replicas.iter().any(|r| r.zones.settles_at().is_some()) {
        assert!(start.elapsed() < FOLLOW_WITHIN, "the serials did not settle");
        std::thread::sleep(Duration::from_millis(50));
    }
    let serials: Vec<u32> = replicas.iter().map(|r| serial(r)).collect();
    assert!(
        serials.windows(2).all(|w| w[0] == w[1]),
        "the replicas hold the same records and settled on {serials:?}"
    );
    serials[0]
}

/// Two replicas fed the same changes in different batches (one write for all on the first, one a change on
/// the second, a moment later) settle on one serial, and a Knot secondary whose primary is their Service
/// (asking each in turn) follows every change with the records both serve. Both replicas' NOTIFYs are
/// acknowledged (on loopback they come from the one address Knot accepts) and none is refused.
#[test]
fn two_replicas_settle_on_one_serial_and_a_knot_secondary_follows_their_service() {
    require!(Knot, DnsClients);
    let knot_port = free_port();
    // Six seconds: a replica may write three times in a span and still settle past its own writes (half a
    // span of serials is kept for them).
    let cell = Duration::from_secs(6);
    let replica = || {
        let secondary = Secondary {
            address: SocketAddr::from(([127, 0, 0, 1], knot_port)),
            key: None,
        };
        let limits = Limits {
            serial_cell: Some(cell),
            ..Limits::default()
        };
        Served::start(vec![secondary], vec![launchers_key()], limits)
    };
    let (one, two) = (replica(), replica());
    let apply = |changes: &[Change]| {
        one.apply(changes);
        std::thread::sleep(Duration::from_millis(150));
        for change in changes {
            two.apply(std::slice::from_ref(change));
        }
    };
    at_span_start(cell);
    apply(&[
        Change::Create(ep("web.example.org", RecordType::A, &["192.0.2.1", "192.0.2.2"])),
        Change::Create(ep("www.example.org", RecordType::Cname, &["web.example.org"])),
        Change::Create(ep("txt.example.org", RecordType::Txt, &["\"hello world\""])),
    ]);
    assert_ne!(
        serial(&one),
        serial(&two),
        "provisional serials follow each replica's writes"
    );
    let first = settled(&[&one, &two]);

    let knot = knot_following([&one, &two], knot_port, first);
    same_records(&one, &[&knot], "the first transfer");
    same_records(&two, &[&knot], "the first transfer");

    let steps: Vec<(&str, Vec<Change>)> = vec![
        (
            "create",
            vec![
                Change::Create(ep("new.example.org", RecordType::A, &["192.0.2.10"])),
                Change::Create(ep("a.b.deep.example.org", RecordType::Aaaa, &["2001:db8::1"])),
            ],
        ),
        (
            "update and delete",
            vec![
                Change::Update {
                    old: Box::new(ep("web.example.org", RecordType::A, &["192.0.2.1", "192.0.2.2"])),
                    new: Box::new(ep("web.example.org", RecordType::A, &["192.0.2.3"])),
                },
                Change::Delete(ep("txt.example.org", RecordType::Txt, &["\"hello world\""])),
            ],
        ),
    ];
    let mut last = first;
    for (step, changes) in &steps {
        at_span_start(cell);
        let start = Instant::now();
        apply(changes);
        let serial = settled(&[&one, &two]);
        assert!(serial != last, "{step}: a new serial");
        last = serial;
        let took = wait_serial(&[&knot], serial, start, FOLLOW_WITHIN);
        eprintln!("{step}: Knot serves the settled serial {serial} {took:?} after the writes began");
        same_records(&one, &[&knot], step);
        same_records(&two, &[&knot], step);
    }
    let log = knot.log();
    assert!(
        !log.lines().any(|l| l.contains("failed") || l.contains("error")),
        "Knot took every transfer as it came, from whichever replica:\n{log}"
    );
    for (name, replica) in [("one", &one), ("two", &two)] {
        let metrics = metrics(replica);
        assert!(
            metrics.contains("extdns_dns_server_notifies_total{result=\"acknowledged\"}"),
            "{name}: {metrics}"
        );
        assert!(
            !metrics.contains("result=\"refused\""),
            "{name}: no NOTIFY refused: {metrics}"
        );
    }
}

/// The RRSIGs covering `name TYPE` that `port` serves (asked over TCP with DO).
fn rrsigs(port: u16, name: &str, rtype: WireType) -> Vec<hickory_proto::dnssec::rdata::RRSIG> {
    use hickory_proto::dnssec::rdata::DNSSECRData;
    use hickory_proto::op::Edns;

    let mut query = Message::query();
    query.add_query(Query::query(common::name(name), rtype));
    let mut edns = Edns::new();
    edns.set_dnssec_ok(true);
    edns.set_max_payload(4096);
    query.set_edns(edns);
    let wire = query.to_vec().expect("query encodes");
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connects");
    stream.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
    let length = u16::try_from(wire.len()).expect("a short query");
    std::io::Write::write_all(&mut stream, &[&length.to_be_bytes()[..], &wire].concat()).expect("sends");
    let mut length = [0u8; 2];
    std::io::Read::read_exact(&mut stream, &mut length).expect("an answer");
    let mut answer = vec![0u8; usize::from(u16::from_be_bytes(length))];
    std::io::Read::read_exact(&mut stream, &mut answer).expect("an answer");
    let answer = Message::from_vec(&answer).expect("the answer parses");
    answer
        .answers
        .iter()
        .filter_map(|r| match &r.data {
            RData::DNSSEC(DNSSECRData::RRSIG(sig)) if sig.input().type_covered == rtype => Some(sig.clone()),
            _ => None,
        })
        .collect()
}

/// The inception and expiration of the RRSIGs covering `name TYPE` that `port` serves.
fn rrsig_windows(port: u16, name: &str, rtype: WireType) -> Vec<(u32, u32)> {
    rrsigs(port, name, rtype)
        .iter()
        .map(|sig| (sig.input().sig_inception.get(), sig.input().sig_expiration.get()))
        .collect()
}

/// Renewed signatures reach a real secondary: the renewal re-signs the sets whose instant has come and
/// moves the serial on (the settled one, as every replica would), the server sends NOTIFY, and Knot,
/// which had taken the zone before, serves the new signatures: the RRSIGs read from it are dated one
/// renewal period later, as the server's own are, taken by an incremental IXFR. The renewal runs as if a
/// period had passed; Knot, a secondary that does not validate, serves what it transferred.
#[test]
fn a_knot_secondary_serves_the_signatures_a_renewal_made_after_the_new_serial() {
    require!(Knot, DnsClients);
    let knot_port = free_port();
    // Ed25519: every replica's signatures are the same bytes, so the zone's IXFR is incremental even
    // with serials settling (several replicas).
    let key = ZoneKey::generate(KeyAlgorithm::Ed25519).expect("a key");
    let zone = ZoneConfig {
        dnssec: Some(DnssecConfig::new(key)),
        ..common::zone_config()
    };
    let served = Served::with(ServerConfig {
        secondaries: vec![Secondary {
            address: SocketAddr::from(([127, 0, 0, 1], knot_port)),
            key: None,
        }],
        limits: Limits {
            serial_cell: Some(Duration::from_secs(2)),
            ..Limits::default()
        },
        ..ServerConfig::new(vec!["127.0.0.1:0".parse().expect("address")], vec![zone])
    });
    served.apply(&common::every_answer_shape());
    let first = settled(&[&served]);
    let primary = Primary {
        port: served.port(),
        key: None,
    };
    let knot = dns_server::DnsServer::start_secondary(Kind::Knot, knot_port, &[ZONE], &primary);
    wait_serial(&[&knot], first, Instant::now(), FOLLOW_WITHIN);
    let signed = [
        ("web.example.org", WireType::A),
        (ZONE, WireType::SOA),
        (ZONE, WireType::DNSKEY),
    ];
    let before: Vec<_> = signed.iter().map(|(n, t)| rrsig_windows(knot.port, n, *t)).collect();
    for ((n, t), windows) in signed.iter().zip(&before) {
        assert_eq!(windows.len(), 1, "{n} {t}: {windows:?}");
        assert_eq!(
            windows,
            &rrsig_windows(served.port(), n, *t),
            "{n} {t}: Knot serves ours"
        );
    }

    let period = served.zones.read().zones()[0]
        .signing()
        .expect("signed")
        .renewal_period();
    let later = u32::try_from(extdns_dns_wire::unix_now()).expect("a 32-bit clock") + period;
    let start = Instant::now();
    let renewed = extdns_dns_server::dnssec_renew::renew(&served.zones, later);
    assert!(renewed > 10, "every set's instant came: {renewed} renewed");
    let moved = serial(&served);
    assert!(
        moved != first && served.zones.read().zones()[0].serial_is_shared(),
        "{moved}"
    );
    let took = wait_serial(&[&knot], moved, start, FOLLOW_WITHIN);
    eprintln!("Knot serves the renewed signatures {took:?} after the renewal");
    for ((n, t), old) in signed.iter().zip(&before) {
        let new = rrsig_windows(knot.port, n, *t);
        assert_eq!(
            new,
            rrsig_windows(served.port(), n, *t),
            "{n} {t}: Knot serves the renewed ones"
        );
        // The SOA is signed anew with each serial; every set is dated from its own instant.
        assert_eq!(
            new,
            vec![(old[0].0 + period, old[0].1 + period)],
            "{n} {t}: one period on"
        );
    }
    incremental(&knot, &served);
}

/// Two replicas of an Ed25519-signed zone behind their Service, a Knot secondary following it (item 6
/// of issue 49). The replicas sign apart (each its own writes, at its own moment), yet make the same
/// validity windows and so the same signature bytes: they settle on one serial, and Knot takes every
/// change by an incremental IXFR from whichever replica it reaches, deleting the RRSIGs another replica
/// sent it by their bytes. After a renewal round on both (each at its own moment in the slot) both move
/// to one serial, and Knot serves the renewed windows.
#[test]
fn two_replicas_of_an_ed25519_zone_sign_alike_and_a_knot_secondary_takes_their_changes_incrementally() {
    require!(Knot, DnsClients);
    let knot_port = free_port();
    let key = ZoneKey::generate(KeyAlgorithm::Ed25519).expect("a key");
    let cell = Duration::from_secs(6);
    let replica = || {
        let zone = ZoneConfig {
            dnssec: Some(DnssecConfig::new(key.clone())),
            ..common::zone_config()
        };
        Served::with(ServerConfig {
            secondaries: vec![Secondary {
                address: SocketAddr::from(([127, 0, 0, 1], knot_port)),
                key: None,
            }],
            // The launchers' key, which `same_records`' AXFR signs with.
            keys: vec![launchers_key()],
            limits: Limits {
                serial_cell: Some(cell),
                ..Limits::default()
            },
            ..ServerConfig::new(vec!["127.0.0.1:0".parse().expect("address")], vec![zone])
        })
    };
    let (one, two) = (replica(), replica());
    let apply = |changes: &[Change]| {
        one.apply(changes);
        std::thread::sleep(Duration::from_millis(150));
        two.apply(changes);
    };
    at_span_start(cell);
    apply(&common::every_answer_shape());
    let first = settled(&[&one, &two]);
    let alike = |step: &str| {
        for (n, t) in [
            ("web.example.org", WireType::A),
            (ZONE, WireType::SOA),
            (ZONE, WireType::DNSKEY),
        ] {
            let sigs = rrsigs(one.port(), n, t);
            assert!(!sigs.is_empty(), "{step}: {n} {t} signed");
            assert_eq!(
                sigs,
                rrsigs(two.port(), n, t),
                "{step}: {n} {t}: the same bytes on both"
            );
        }
    };
    alike("the first sync");

    let knot = knot_following([&one, &two], knot_port, first);
    for step in ["create", "delete"] {
        at_span_start(cell);
        let start = Instant::now();
        match step {
            "create" => apply(&[Change::Create(ep("pub.example.org", RecordType::A, &["192.0.2.10"]))]),
            _ => apply(&[Change::Delete(ep("pub.example.org", RecordType::A, &["192.0.2.10"]))]),
        }
        let serial = settled(&[&one, &two]);
        let took = wait_serial(&[&knot], serial, start, FOLLOW_WITHIN);
        eprintln!("{step}: Knot serves the settled serial {serial} {took:?} after the writes began");
        alike(step);
        // Every record, signature and NSEC, as either replica serves them.
        same_records(&one, &[&knot], step);
        same_records(&two, &[&knot], step);
    }

    let (period, slot) = {
        let set = one.zones.read();
        let signing = set.zones()[0].signing().expect("signed");
        (signing.renewal_period(), signing.renewal_slot())
    };
    let now = u32::try_from(extdns_dns_wire::unix_now()).expect("a 32-bit clock");
    // A slot boundary a period on, then one serial span past it: the round's instant may be that very
    // boundary, and a replica entering a round within the round's own span takes a provisional serial
    // (settled later, alike on both), which this step is not about. Both passes fall in one slot.
    let cell_secs = u32::try_from(cell.as_secs()).expect("a short cell");
    let later = (now / slot + 1) * slot + period + cell_secs;
    assert!(cell_secs + 40 < slot, "both passes in one slot");
    let before = serial(&one);
    let start = Instant::now();
    assert!(extdns_dns_server::dnssec_renew::renew(&one.zones, later) > 10);
    assert!(extdns_dns_server::dnssec_renew::renew(&two.zones, later + 40) > 10);
    let renewed = serial(&one);
    assert!(renewed != before, "a new serial for the round");
    assert_eq!(serial(&two), renewed, "the same round, the same serial");
    let took = wait_serial(&[&knot], renewed, start, FOLLOW_WITHIN);
    eprintln!("renewal: Knot serves the round's serial {took:?} after the renewals");
    alike("the renewal");
    assert_eq!(
        rrsig_windows(knot.port, "web.example.org", WireType::A),
        rrsig_windows(one.port(), "web.example.org", WireType::A),
        "Knot serves the renewed window"
    );
    // Knot's SOA query may reach a replica whose serial has not settled yet and take that provisional
    // serial; an IXFR from it is answered whole (AXFR-style), by design. Every incremental answer,
    // from either replica, applies; the renewal's among them.
    let log = knot.log();
    let ixfrs = finished_ixfrs(&log);
    assert!(ixfrs >= 3, "incremental answers to changes and to the renewal:\n{log}");
    assert!(
        !log.lines()
            .any(|l| l.contains("fallback") || l.contains("failed") || l.contains("error")),
        "Knot applied every incremental answer, from either replica:\n{log}"
    );
    let last = log
        .lines()
        .rev()
        .find(|l| l.contains("XFR, incoming"))
        .unwrap_or_default();
    assert!(
        last.contains("IXFR") && last.contains("finished"),
        "the renewal came incrementally:\n{log}"
    );
}
