//! The webhook protocol against the real external-dns v0.23.0 binary, both ways, with real BIND behind the
//! server and every answer read back with `dig`:
//!
//! a. `extdns --provider=webhook` → `external-dns --webhook-server --provider=rfc2136` → BIND;
//! b. `external-dns --provider=webhook` → `extdns --webhook-server --provider=rfc2136` → BIND.
//!
//! c. the same stalling clients against both servers' connection timeouts (#6484).
//!
//! external-dns needs a source in (b). It runs `--source=connector`: each sync it connects to a TCP server
//! and reads a gob-encoded endpoint list, which this test serves. That needs no Kubernetes API server and
//! yields exactly the records the test chooses, sync after sync (`--source=fake` invents new random names
//! every sync, so a second sync would never be a no-op; `service` or `crd` need a whole control plane).
//!
//! external-dns's webhook server always listens on 127.0.0.1:8888, so chain (a) takes a file lock and
//! waits for that port to be free before starting it.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use extdns_test_support::cli::{self, ok, tempdir};
use extdns_test_support::connector::{self, GobEndpoint};
use extdns_test_support::dns_server::{DnsServer, KEY_NAME, Kind, SECRET, Zone};
use extdns_test_support::manifests::{self, web};
use extdns_test_support::proc::OwnedChild;
use extdns_test_support::{dig, free_port, require};

const OWNER: &str = "interop";
const MEDIA_TYPE: &str = "application/external.dns.webhook+json;version=1";

fn external_dns() -> PathBuf {
    extdns_test_support::env_program("EXTDNS_TEST_EXTERNAL_DNS")
        .unwrap_or_else(|e| panic!("{e}: run `cargo xtask test`"))
}

fn rfc2136_flags(server: &DnsServer) -> Vec<String> {
    [
        "--rfc2136-host=127.0.0.1".to_string(),
        format!("--rfc2136-port={}", server.port),
        "--rfc2136-zone=example.org".to_string(),
        format!("--rfc2136-tsig-keyname={KEY_NAME}"),
        format!("--rfc2136-tsig-secret={SECRET}"),
        "--rfc2136-tsig-secret-alg=hmac-sha256".to_string(),
        "--rfc2136-tsig-axfr".to_string(),
    ]
    .into()
}

/// A long-running server process, killed when dropped; its output goes to a log file read on failure.
struct Server {
    child: OwnedChild,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Server {
    fn spawn(mut cmd: Command) -> Server {
        let dir = tempdir();
        let log = dir.path().join("server.log");
        let file = match std::fs::File::create(&log) {
            Ok(f) => f,
            Err(e) => panic!("{e}"),
        };
        let err = file.try_clone().ok();
        cmd.stdout(Stdio::from(file));
        if let Some(err) = err {
            cmd.stderr(Stdio::from(err));
        }
        match cmd.spawn() {
            Ok(child) => Server {
                child: OwnedChild(child),
                log,
                _dir: dir,
            },
            Err(e) => panic!("cannot start {cmd:?}: {e}"),
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Wait until `GET http://addr/` negotiates, failing with the server's log if it does not.
    fn wait_negotiating(&mut self, addr: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if !self.running() {
                panic!("the webhook server exited:\n{}", self.log());
            }
            if negotiates(addr) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("the webhook server on {addr} never negotiated:\n{}", self.log());
    }
}

/// One raw negotiation request; true when the answer is 200 with the exact media type.
fn negotiates(addr: &str) -> bool {
    use std::io::Read;
    let Ok(mut s) = TcpStream::connect(addr) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let req = format!("GET / HTTP/1.1\r\nHost: {addr}\r\nAccept: {MEDIA_TYPE}\r\nConnection: close\r\n\r\n");
    let mut out = String::new();
    if s.write_all(req.as_bytes()).is_err() || s.read_to_string(&mut out).is_err() {
        return false;
    }
    out.starts_with("HTTP/1.1 200")
        && out
            .to_ascii_lowercase()
            .contains(&format!("content-type: {MEDIA_TYPE}\r\n"))
}

/// The names of the TXT ownership records of our owner in the zone, read with AXFR.
fn ownership_records(server: &DnsServer) -> Vec<String> {
    match server.axfr("example.org") {
        Ok(zone) => dig::owned_names(&zone, OWNER),
        Err(e) => panic!("{e:#}"),
    }
}

fn bind() -> DnsServer {
    DnsServer::start(
        Kind::Bind,
        &[Zone::new("example.org").with_record("legacy IN A 192.0.2.99")],
    )
}

/// The checks both chains share, given a way to run one sync with `web`'s address (or none: everything
/// removed) and whether the alias exists.
fn lifecycle(server: &DnsServer, sync: &mut dyn FnMut(Option<&str>, bool)) {
    // 1. Create.
    sync(Some("192.0.2.10"), true);
    assert_eq!(server.dig("web.example.org", "A"), vec!["192.0.2.10"]);
    assert_eq!(server.ttl("web.example.org", "A"), Some(120));
    assert_eq!(server.dig("alias.example.org", "CNAME"), vec!["lb.example.net."]);
    assert_eq!(
        ownership_records(server),
        vec!["a-web.example.org", "cname-alias.example.org"]
    );

    // 2. The same records again: nothing changes, not even the SOA serial.
    let serial = server.serial("example.org");
    sync(Some("192.0.2.10"), true);
    assert_eq!(server.serial("example.org"), serial, "a second sync changes nothing");

    // 3. Update web's address, remove the alias.
    sync(Some("192.0.2.20"), false);
    assert_eq!(server.dig("web.example.org", "A"), vec!["192.0.2.20"]);
    assert_eq!(server.dig("alias.example.org", "CNAME"), Vec::<String>::new());
    assert_eq!(
        ownership_records(server),
        vec!["a-web.example.org"],
        "the alias's TXT went with it"
    );
    assert_eq!(
        server.dig("legacy.example.org", "A"),
        vec!["192.0.2.99"],
        "a foreign record survives"
    );

    // 4. Everything removed: what we own goes, the foreign record stays.
    sync(None, false);
    assert_eq!(server.dig("web.example.org", "A"), Vec::<String>::new());
    assert_eq!(ownership_records(server), Vec::<String>::new());
    assert_eq!(
        server.dig("legacy.example.org", "A"),
        vec!["192.0.2.99"],
        "a foreign record survives"
    );
}

// ------------------------------------------------------------------------------------------------ chain a

/// Services as manifests: `web` (A, TTL 120) and optionally `alias` (CNAME).
fn services(web_ip: Option<&str>, alias: bool) -> String {
    let mut docs = Vec::new();
    if let Some(ip) = web_ip {
        docs.push(web(&[ip]));
    }
    if alias {
        docs.push(manifests::alias());
    }
    docs.join("---\n")
}

/// external-dns's server port is fixed; this lock keeps our own tests from racing for it, and the wait
/// covers anyone else's process that holds it for a while.
fn lock_port_8888() -> std::fs::File {
    let path = std::env::temp_dir().join("extdns-webhook-127.0.0.1-8888.lock");
    let file = match std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
    {
        Ok(f) => f,
        Err(e) => panic!("cannot open {}: {e}", path.display()),
    };
    if let Err(e) = file.lock() {
        panic!("cannot lock {}: {e}", path.display());
    }
    file
}

/// A BIND server, and [`start_external_dns_server`] in front of it once this process holds the port's lock
/// (returned, to keep until the test ends).
fn external_dns_server_on_8888() -> (DnsServer, std::fs::File, Server) {
    let dns = bind();
    let lock = lock_port_8888();
    let mut flags = vec!["--provider=rfc2136".to_string()];
    flags.extend(rfc2136_flags(&dns));
    let server = start_external_dns_server(&flags);
    (dns, lock, server)
}

/// `external-dns --webhook-server` with `flags` (its provider's), on its fixed 127.0.0.1:8888. Another
/// process may take the port between our check and external-dns's bind (ours then exits at once): wait and
/// start it again.
fn start_external_dns_server(flags: &[String]) -> Server {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        while TcpListener::bind("127.0.0.1:8888").is_err() {
            assert!(Instant::now() < deadline, "127.0.0.1:8888 stayed busy for 5 minutes");
            std::thread::sleep(Duration::from_millis(250));
        }
        let mut cmd = cli::command(external_dns(), &[]);
        cmd.args(["--webhook-server", "--source=empty", "--policy=sync"])
            .arg(format!("--metrics-address=127.0.0.1:{}", free_port()))
            .args(flags);
        let mut server = Server::spawn(cmd);
        let started = Instant::now();
        while server.running() && !negotiates("127.0.0.1:8888") && started.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(100));
        }
        // Negotiating is not enough, it could be someone else's server: ours must still be alive.
        std::thread::sleep(Duration::from_millis(300));
        if server.running() && negotiates("127.0.0.1:8888") {
            return server;
        }
        let log = server.log();
        assert!(
            Instant::now() < deadline && log.contains("address already in use"),
            "external-dns's webhook server did not start:\n{log}"
        );
    }
}

#[test]
fn extdns_client_with_external_dns_webhook_server_and_bind() {
    require!(ExternalDns, Bind);
    let (dns, _lock, mut server) = external_dns_server_on_8888();

    let dir = tempdir();
    let manifests = dir.path().join("objects.yaml");
    let mut sync = |web: Option<&str>, alias: bool| {
        if let Err(e) = std::fs::write(&manifests, services(web, alias)) {
            panic!("{e}");
        }
        let mut cmd = cli::command(env!("CARGO_BIN_EXE_extdns"), &[]);
        cmd.args(["--once", "--source=service", "--provider=webhook", "--registry=txt"])
            .args(["--txt-owner-id", OWNER, "--policy=sync"])
            .args(["--webhook-provider-url=http://127.0.0.1:8888"])
            .args(["--manifests", &dir.path().display().to_string()]);
        let out = cli::run(&mut cmd);
        assert!(server.running(), "external-dns's server died:\n{}", server.log());
        ok(&out, "extdns --provider=webhook");
    };
    lifecycle(&dns, &mut sync);
    let log = server.log();
    assert!(
        log.contains("Adding RR: web.example.org"),
        "the changes went through external-dns:\n{log}"
    );
}

/// The conformance kit against external-dns's own server with its rfc2136 provider in front of BIND: every
/// protocol check passes, the capability table says what that provider stores, and the run leaves nothing
/// in the zone (AXFR).
#[test]
fn conformance_kit_against_external_dns_rfc2136_webhook_server_and_bind() {
    require!(ExternalDns, Bind);
    let (dns, _lock, mut server) = external_dns_server_on_8888();
    let mut cmd = cli::command(env!("CARGO_BIN_EXE_extdns"), &[]);
    cmd.args([
        "webhook-conformance",
        "--url",
        "http://127.0.0.1:8888",
        "--zone",
        "example.org",
    ]);
    let out = cli::run(&mut cmd);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let context = format!(
        "stdout:\n{stdout}\nstderr:\n{}\nexternal-dns:\n{}",
        String::from_utf8_lossy(&out.stderr),
        server.log()
    );
    println!("{stdout}");
    assert!(server.running(), "external-dns's server died\n{context}");
    for name in extdns_webhook_conformance::CHECKS {
        let protocol = extdns_webhook_conformance::kind_of(name) == extdns_webhook_conformance::Kind::Protocol;
        let reported = if protocol {
            stdout.lines().any(|l| l == format!("PASS {name}"))
        } else {
            stdout
                .lines()
                .any(|l| l == format!("SUPPORTED {name}") || l.starts_with(&format!("UNSUPPORTED {name}: ")))
        };
        assert!(reported, "{name}\n{context}");
    }
    // What external-dns's rfc2136 provider stores, and what it cannot.
    for stored in ["a", "aaaa", "cname", "txt"] {
        assert!(
            stdout.contains(&format!("SUPPORTED roundtrip.{stored}\n")),
            "{stored}\n{context}"
        );
    }
    for lacking in ["set-identifier", "provider-specific"] {
        assert!(
            stdout.contains(&format!("UNSUPPORTED roundtrip.{lacking}: ")),
            "{lacking}\n{context}"
        );
    }
    assert_eq!(out.status.code(), Some(0), "{context}");
    let key = format!("hmac-sha256:{KEY_NAME}:{SECRET}");
    let axfr = dig::dig(
        dns.port,
        &["+tcp", "+noall", "+answer", "-y", &key, "example.org", "AXFR"],
    );
    assert!(axfr.contains("legacy.example.org."), "the AXFR worked: {axfr}");
    assert!(!axfr.contains("conformance-"), "the run left records behind:\n{axfr}");
}

/// `extdns --webhook-server --source=service` with `flags` (its provider's) on a free port, negotiating;
/// with the address it serves on.
fn start_extdns_server<I, S>(flags: I) -> (Server, String)
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let address = format!("127.0.0.1:{}", free_port());
    let mut cmd = cli::command(env!("CARGO_BIN_EXE_extdns"), &[]);
    cmd.args(["--webhook-server", "--source=service"])
        .arg(format!("--webhook-server-address={address}"))
        .arg(format!("--metrics-address=127.0.0.1:{}", free_port()))
        .args(flags);
    let mut server = Server::spawn(cmd);
    server.wait_negotiating(&address);
    (server, address)
}

// ------------------------------------------------------------------------------------------------ chain b

#[test]
fn external_dns_client_with_extdns_webhook_server_and_bind() {
    require!(ExternalDns, Bind);
    let dns = bind();
    let mut flags = vec!["--provider=rfc2136".to_string()];
    flags.extend(rfc2136_flags(&dns));
    let (mut server, address) = start_extdns_server(&flags);

    let endpoints = Arc::new(Mutex::new(Vec::new()));
    let source = connector::serve(endpoints.clone());
    let mut sync = |web: Option<&str>, alias: bool| {
        let mut set = Vec::new();
        if let Some(ip) = web {
            set.push(GobEndpoint::new("web.example.org", "A", &[ip], 120));
        }
        if alias {
            set.push(GobEndpoint::new("alias.example.org", "CNAME", &["lb.example.net"], 0));
        }
        if let Ok(mut e) = endpoints.lock() {
            *e = set;
        }
        let mut cmd = cli::command(external_dns(), &[]);
        cmd.args([
            "--once",
            "--source=connector",
            "--provider=webhook",
            "--registry=txt",
            "--policy=sync",
        ])
        .args(["--txt-owner-id", OWNER])
        .arg(format!("--connector-source-server=127.0.0.1:{source}"))
        .arg(format!("--webhook-provider-url=http://{address}"))
        .arg(format!("--metrics-address=127.0.0.1:{}", free_port()));
        let out = cli::run(&mut cmd);
        assert!(server.running(), "extdns's server died:\n{}", server.log());
        ok(&out, "external-dns --provider=webhook");
    };
    lifecycle(&dns, &mut sync);
}

/// What a client stalling on a webhook server sees: the answer's status line (empty: none) and how long
/// after its last byte the server closed the connection.
#[derive(Debug)]
struct Seen {
    status: String,
    closed_after: Duration,
}

/// The ways a client stalls, each where one of the four timeouts bounds it.
#[derive(Debug, Clone, Copy)]
enum Stall {
    /// Connects and sends nothing.
    Silent,
    /// Sends half a request head.
    HalfHead,
    /// One whole GET, then keeps the connection without a next request (timed from the answer).
    Idle,
    /// Announces 100 bytes of body and sends one.
    ShortBody,
    /// Sends a whole body of changes in two parts, `gap` apart.
    SlowBody { gap: Duration },
}

fn stall(addr: &str, how: Stall) -> Seen {
    use std::io::Read;
    let Ok(mut s) = TcpStream::connect(addr) else {
        panic!("cannot connect to {addr}");
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(15)));
    let mut send = |bytes: &[u8]| {
        if let Err(e) = s.write_all(bytes) {
            panic!("{how:?} to {addr}: {e}");
        }
    };
    match how {
        Stall::Silent => {}
        Stall::HalfHead => send(b"GET /records HTTP/1.1\r\nHost: web"),
        Stall::Idle => send(b"GET /records HTTP/1.1\r\nHost: webhook\r\n\r\n"),
        Stall::ShortBody => send(b"POST /records HTTP/1.1\r\nHost: webhook\r\nContent-Length: 100\r\n\r\n{"),
        Stall::SlowBody { gap } => {
            let body = br#"{"create":[{"dnsName":"web.example.org","targets":["192.0.2.1"],"recordType":"A"}]}"#;
            send(
                format!(
                    "POST /records HTTP/1.1\r\nHost: webhook\r\nContent-Length: {}\r\n\r\n",
                    body.len()
                )
                .as_bytes(),
            );
            send(&body[..10]);
            std::thread::sleep(gap);
            send(&body[10..]);
        }
    }
    let mut last = Instant::now();
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                out.extend_from_slice(&buf[..n]);
                // The idle time counts from the answer.
                if matches!(how, Stall::Idle) {
                    last = Instant::now();
                }
            }
        }
    }
    let text = String::from_utf8_lossy(&out);
    Seen {
        status: text.lines().next().unwrap_or_default().to_string(),
        closed_after: last.elapsed(),
    }
}

/// Less than the gap between two of the timeouts under test (whole seconds): closing times closer than
/// this come from the same timeout. Slack for a busy machine, not a latency target.
const SAME_TIMEOUT: Duration = Duration::from_millis(900);

/// Each stall against both servers at once; their answers must be the same, and closed by the same timeout:
/// the timeouts under test are whole seconds apart, so two closing times less than [`SAME_TIMEOUT`] apart
/// were caused by the same one, however busy the machine (a loaded scheduler delays a close, it never
/// brings one forward).
fn same_answers(extdns: &str, stalls: &[Stall]) -> Vec<Seen> {
    let runs: Vec<_> = stalls
        .iter()
        .flat_map(|&how| {
            [std::thread::spawn(move || stall("127.0.0.1:8888", how)), {
                let extdns = extdns.to_string();
                std::thread::spawn(move || stall(&extdns, how))
            }]
        })
        .collect();
    let seen: Vec<Seen> = runs
        .into_iter()
        .map(|r| r.join().unwrap_or_else(|_| panic!("a probe panicked")))
        .collect();
    for (how, pair) in stalls.iter().zip(seen.chunks(2)) {
        let (theirs, ours) = (&pair[0], &pair[1]);
        assert_eq!(
            ours.status, theirs.status,
            "{how:?}: extdns {ours:?}, external-dns {theirs:?}"
        );
        assert!(
            ours.closed_after.abs_diff(theirs.closed_after) < SAME_TIMEOUT,
            "{how:?}: extdns {ours:?}, external-dns {theirs:?}"
        );
    }
    seen.into_iter().skip(1).step_by(2).collect()
}

/// external-dns v0.23's server timeouts (#6484): the same stalling clients against its server and
/// extdns's, both with the in-memory provider and the same four timeouts, get the same answers at the same
/// times: closed without an answer at the header timeout, at the idle timeout after an answer, 400 at the
/// read timeout, and no answer when the body completes after the write timeout (which falls to the read
/// timeout for idle connections when the idle timeout is 0).
#[test]
fn webhook_server_timeouts_6484_match_external_dns() {
    require!(ExternalDns);
    let _lock = lock_port_8888();
    let configurations: [(&[&str], &[Stall]); 2] = [
        (
            &["1s", "2s", "4s", "3s"],
            &[Stall::Silent, Stall::HalfHead, Stall::Idle, Stall::ShortBody],
        ),
        (
            &["1s", "3s", "1s", "0s"],
            &[
                Stall::Idle,
                Stall::SlowBody {
                    gap: Duration::from_secs(2),
                },
            ],
        ),
    ];
    for (timeouts, stalls) in configurations {
        let mut flags = vec![
            "--provider=inmemory".to_string(),
            "--inmemory-zone=example.org".to_string(),
        ];
        for (flag, value) in ["read-header", "read", "write", "idle"].iter().zip(timeouts) {
            flags.push(format!("--webhook-provider-{flag}-timeout={value}"));
        }
        let external_dns = start_external_dns_server(&flags);
        let (mut extdns, address) = start_extdns_server(&flags);
        let seen = same_answers(&address, stalls);
        let summary: Vec<_> = stalls
            .iter()
            .zip(&seen)
            .map(|(how, s)| format!("{how:?}: {s:?}"))
            .collect();
        eprintln!("timeouts {timeouts:?}:\n  {}", summary.join("\n  "));
        // And what Go answers, so two servers wrong the same way cannot pass.
        for (how, s) in stalls.iter().zip(&seen) {
            let (status, secs) = match how {
                Stall::Silent | Stall::HalfHead => ("", 1.0),
                Stall::Idle => ("HTTP/1.1 200 OK", 3.0),
                Stall::ShortBody => ("HTTP/1.1 400 Bad Request", 2.0),
                Stall::SlowBody { .. } => ("", 0.0),
            };
            assert_eq!(s.status, status, "{how:?}");
            // Closed by the expected timeout: not before it, and before the next one could have fired.
            let closed = s.closed_after.as_secs_f64();
            assert!(
                closed > secs - 0.2 && closed < secs + SAME_TIMEOUT.as_secs_f64(),
                "{how:?}: {s:?}"
            );
        }
        drop(external_dns);
        assert!(extdns.running(), "extdns's server died:\n{}", extdns.log());
    }
}

/// One request with `Connection: close`: the status line and the body.
fn exchange(addr: &str, method: &str, path: &str, body: &str) -> (String, String) {
    use std::io::Read;
    let Ok(mut s) = TcpStream::connect(addr) else {
        panic!("cannot connect to {addr}");
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: webhook\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut out = String::new();
    if let Err(e) = s
        .write_all(request.as_bytes())
        .and_then(|()| s.read_to_string(&mut out))
    {
        panic!("{method} {path} on {addr}: {e}");
    }
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    (head.lines().next().unwrap_or_default().to_string(), body.to_string())
}

/// external-dns's server decodes request keys whatever their case (Go's `encoding/json`): a body written
/// `{"Create":[{"DNSName":...}]}` is applied by both servers, and both then list the same records.
#[test]
fn request_keys_in_any_case_are_applied_by_both_servers() {
    require!(ExternalDns);
    let _lock = lock_port_8888();
    let flags = [
        "--provider=inmemory".to_string(),
        "--inmemory-zone=example.org".to_string(),
    ];
    let _external_dns = start_external_dns_server(&flags);
    let (_extdns, address) = start_extdns_server(&flags);
    let body =
        r#"{"Create":[{"DNSName":"any-case.example.org","Targets":["192.0.2.7"],"RecordType":"A","RecordTTL":300}]}"#;
    let mut records = Vec::new();
    for addr in ["127.0.0.1:8888", address.as_str()] {
        let (status, _) = exchange(addr, "POST", "/records", body);
        assert_eq!(status, "HTTP/1.1 204 No Content", "{addr}");
        let (status, listed) = exchange(addr, "GET", "/records", "");
        assert_eq!(status, "HTTP/1.1 200 OK", "{addr}");
        let listed: serde_json::Value =
            serde_json::from_str(&listed).unwrap_or_else(|e| panic!("{addr}: {e}: {listed}"));
        records.push(listed);
    }
    assert_eq!(records[0], records[1], "external-dns, then extdns");
    assert_eq!(records[1][0]["dnsName"], "any-case.example.org", "{}", records[1]);
}
