//! What extdns's test suites share: real servers started on 127.0.0.1 free ports ([`dns_server`] for BIND
//! and Knot, [`pdns`], [`etcd`], [`moto`], [`dnsmasq`]), strict stateful fakes of the APIs that have no
//! runnable server ([`route53_fake`], [`cloudflare_fake`], [`google_fake`], [`azure_fake`], [`pihole_fake`],
//! [`dynamodb_fake`]) on one skeleton ([`fake`]: serving, state, request log, faults, the documented limits a
//! variable lowers, [`fake::limits`]) with the record-data
//! rules they share ([`rdata`]: TLSA, SVCB and HTTPS from the RFCs), a server with one
//! fixed answer on the same skeleton ([`canned`]), a Kubernetes control
//! plane (`control_plane`, feature `control-plane`: etcd and kube-apiserver with deploy/ applied), [`dig`]
//! helpers, certificates ([`tls`]), RFC 3339 timestamps ([`rfc3339`]), child processes owned by PID
//! ([`proc`]), runs of the binary under test ([`cli`]) over [`manifests`], external-dns's connector source ([`connector`]) and what a test that runs external-dns
//! beside extdns needs ([`differential`]), the providers' benchmark round
//! ([`bench`](mod@bench)), the apex rule every provider's test checks through the TXT registry ([`apex`]), XML requests read as element trees ([`xml_tree`]), and the one rule for a server
//! that is not installed ([`available`]).
//!
//! That rule: plain `cargo test` on a machine with only the Rust toolchain passes, so a test that needs a
//! real server skips with one line naming `cargo xtask test`. `cargo xtask test` (and so CI) sets
//! [`REQUIRE_SERVERS`], and then a missing server fails the test naming the command that installs it:
//! the suite that is supposed to prove the real-server paths can never pass by skipping them.
//!
//! ```
//! use extdns_test_support::require;
//!
//! fn updates_reach_bind() {
//!     require!(Bind);
//!     // ... start `dns_server::DnsServer` and test against it
//! }
//! # updates_reach_bind();
//! ```
//!
//! A dev-dependency only (`publish = false`).

pub mod apex;
pub mod azure_fake;
mod background;
pub mod bench;
pub mod canned;
pub mod cli;
pub mod cloudflare_fake;
pub mod connector;
#[cfg(feature = "control-plane")]
pub mod control_plane;
pub mod differential;
pub mod dig;
pub mod dns_server;
pub mod dnsmasq;
pub mod dynamodb_fake;
pub mod etcd;
pub mod fake;
pub mod first_sync;
pub mod google_fake;
#[cfg(feature = "kube-api")]
pub mod kube_api;
#[cfg(feature = "kube-objects")]
pub mod kube_objects;
pub mod lines;
pub mod logs;
pub mod loopback;
pub mod manifests;
pub mod moto;
pub mod pdns;
pub mod pihole_fake;
pub mod proc;
pub mod rdata;
pub mod registry;
pub mod rfc3339;
pub mod route53_fake;
pub mod tls;
pub mod tls_proxy;
pub mod xml_tree;

pub mod validator;

pub mod unbound;

use std::io::Write;
use std::net::{TcpListener, UdpSocket};
use std::path::{Path, PathBuf};

/// Where nothing answers: port 1 of loopback, which no test is handed (free ports are ephemeral ones).
pub const UNANSWERED_URL: &str = "http://127.0.0.1:1/latest/api/token";

/// A client for a test's requests to its own servers on loopback: never through a proxy the environment names.
pub fn loopback_client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap_or_default()
}

/// The error of a request to [`UNANSWERED_URL`] (a refused connection), for tests of how a call that got no
/// answer is classified. Never through a proxy.
pub async fn unanswered_request() -> reqwest::Error {
    match loopback_client().put(UNANSWERED_URL).send().await {
        Err(e) => e,
        Ok(r) => panic!("{UNANSWERED_URL} answered {}", r.status()),
    }
}

/// Whether `url` names this machine (`127.0.0.0/8`, `::1` or `localhost`): what a test asserts of an
/// endpoint it built from variables before the first request, so that a variable missing or misspelt
/// fails the test rather than sending it to a cloud host.
pub fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

/// Set (to anything but empty or `0`) by `cargo xtask test` on the `cargo test` it runs: a missing server
/// is then a failure, never a skip.
pub const REQUIRE_SERVERS: &str = "EXTDNS_REQUIRE_TEST_SERVERS";

/// Where PowerDNS's gsqlite3 backend keeps its schema (Debian's pdns-backend-sqlite3).
pub const PDNS_SQLITE_SCHEMA: &str = "/usr/share/pdns-backend-sqlite3/schema/schema.sqlite3.sql";

/// Something outside the Rust toolchain a test runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    /// BIND 9 (`named`), queried with `dig`.
    Bind,
    /// Knot DNS (`knotd`), queried with `dig`.
    Knot,
    /// PowerDNS Authoritative with its sqlite3 backend, queried with `dig`.
    PowerDns,
    /// dnsmasq (Debian's `dnsmasq-base`), serving the Pi-hole fake's lists, queried with `dig`.
    Dnsmasq,
    /// etcd, the Go build `cargo xtask test` makes (`EXTDNS_TEST_ETCD`).
    Etcd,
    /// moto's Route53 server (`moto_server`).
    Moto,
    /// external-dns v0.23.0, the Go build `cargo xtask test` makes (`EXTDNS_TEST_EXTERNAL_DNS`).
    ExternalDns,
    /// amazon-ec2-metadata-mock v1.13.0 (IMDS), the Go build `cargo xtask test` makes
    /// (`EXTDNS_TEST_EC2_METADATA_MOCK`).
    Ec2MetadataMock,
    /// helm v3.22.0, the Go build `cargo xtask test` makes (`EXTDNS_TEST_HELM`).
    Helm,
    /// kubectl, the Go build `cargo xtask test` makes (`EXTDNS_TEST_KUBECTL`).
    Kubectl,
    /// kube-apiserver, the Go build `cargo xtask test` makes (`EXTDNS_TEST_KUBE_APISERVER`).
    KubeApiserver,
    /// external-dns v0.23.0's Helm chart (1.23.0), copied from its Go module by `cargo xtask test`
    /// (`EXTDNS_TEST_EXTERNAL_DNS_CHART`).
    ExternalDnsChart,
    /// The `openssl` command, which makes the certificates of the TLS tests.
    OpenSsl,
    /// `unshare` and `ip`, which give a test a network namespace of its own.
    NetNamespace,
    /// `dig` and Knot's `kdig`, the two DNS clients the built-in DNS server's answers are checked with, and
    /// `delv` (beside `dig`), which validates DNSSEC answers itself.
    DnsClients,
    /// Prometheus's `promtool` (Debian's `prometheus`), which tests the chart's alerts on recorded series.
    Promtool,

    /// Unbound (`unbound`, `unbound-control`), the validating resolver of the DNSSEC tests, queried with `dig`.
    Unbound,
}

impl Server {
    /// How the skip line and the failure name it.
    pub fn label(self) -> &'static str {
        match self {
            Server::Bind => "BIND (named)",
            Server::Knot => "Knot (knotd)",
            Server::PowerDns => "PowerDNS (pdns_server)",
            Server::Dnsmasq => "dnsmasq",
            Server::Etcd => "etcd (EXTDNS_TEST_ETCD)",
            Server::Moto => "moto (moto_server)",
            Server::ExternalDns => "the external-dns build (EXTDNS_TEST_EXTERNAL_DNS)",
            Server::Ec2MetadataMock => "the amazon-ec2-metadata-mock build (EXTDNS_TEST_EC2_METADATA_MOCK)",
            Server::Helm => "helm (EXTDNS_TEST_HELM)",
            Server::Kubectl => "kubectl (EXTDNS_TEST_KUBECTL)",
            Server::KubeApiserver => "kube-apiserver (EXTDNS_TEST_KUBE_APISERVER)",
            Server::ExternalDnsChart => "external-dns's Helm chart (EXTDNS_TEST_EXTERNAL_DNS_CHART)",
            Server::OpenSsl => "openssl",
            Server::NetNamespace => "unshare and ip",
            Server::DnsClients => "dig and kdig",
            Server::Promtool => "promtool",

            Server::Unbound => "Unbound (unbound)",
        }
    }

    /// How to get it, as a sentence's end: the command that installs it.
    pub fn install(self) -> &'static str {
        match self {
            Server::Bind => "install it with `apt-get install -y bind9 bind9-dnsutils`",
            Server::Knot => "install it with `apt-get install -y knot bind9-dnsutils`",
            Server::PowerDns => {
                "install it with `apt-get install -y pdns-server pdns-backend-sqlite3 sqlite3 bind9-dnsutils`"
            }
            Server::Dnsmasq => "install it with `apt-get install -y dnsmasq-base bind9-dnsutils`",
            Server::Etcd => "run `cargo xtask test`, which builds etcd and sets EXTDNS_TEST_ETCD",
            Server::Moto => moto::INSTALL,
            Server::ExternalDns => {
                "run `cargo xtask test`, which builds external-dns v0.23.0 and sets EXTDNS_TEST_EXTERNAL_DNS"
            }
            Server::Ec2MetadataMock => {
                "run `cargo xtask test`, which builds amazon-ec2-metadata-mock v1.13.0 and sets \
                 EXTDNS_TEST_EC2_METADATA_MOCK"
            }
            Server::Helm => "run `cargo xtask test`, which builds helm v3.22.0 and sets EXTDNS_TEST_HELM",
            Server::Kubectl => "run `cargo xtask test`, which builds kubectl and sets EXTDNS_TEST_KUBECTL",
            Server::KubeApiserver => {
                "run `cargo xtask test`, which builds kube-apiserver and sets EXTDNS_TEST_KUBE_APISERVER"
            }
            Server::ExternalDnsChart => {
                "run `cargo xtask test`, which copies external-dns's chart and sets EXTDNS_TEST_EXTERNAL_DNS_CHART"
            }
            Server::OpenSsl => "install it with `apt-get install -y openssl`",
            Server::NetNamespace => "install them with `apt-get install -y util-linux iproute2`",
            Server::DnsClients => "install them with `apt-get install -y bind9-dnsutils knot-dnsutils`",
            Server::Promtool => "install it with `apt-get install -y --no-install-recommends prometheus`",

            Server::Unbound => "install it with `apt-get install -y --no-install-recommends unbound bind9-dnsutils`",
        }
    }

    /// What is missing for it, or `None` when everything is there.
    pub fn missing(self) -> Option<String> {
        let programs: &[&str] = match self {
            Server::Bind => &["named", "dig"],
            Server::Knot => &["knotd", "dig"],
            Server::PowerDns => {
                if !Path::new(PDNS_SQLITE_SCHEMA).is_file() {
                    return Some(PDNS_SQLITE_SCHEMA.to_string());
                }
                &["pdns_server", "pdnsutil", "sqlite3", "dig"]
            }
            Server::Dnsmasq => &["dnsmasq", "dig"],
            Server::Etcd => return env_program("EXTDNS_TEST_ETCD").err(),
            Server::ExternalDns => return env_program("EXTDNS_TEST_EXTERNAL_DNS").err(),
            Server::Ec2MetadataMock => return env_program("EXTDNS_TEST_EC2_METADATA_MOCK").err(),
            Server::Moto => return moto::moto_server().is_none().then(|| "moto_server".to_string()),
            Server::Helm => return env_program("EXTDNS_TEST_HELM").err(),
            Server::Kubectl => return env_program("EXTDNS_TEST_KUBECTL").err(),
            Server::KubeApiserver => return env_program("EXTDNS_TEST_KUBE_APISERVER").err(),
            Server::ExternalDnsChart => {
                return match std::env::var_os("EXTDNS_TEST_EXTERNAL_DNS_CHART").filter(|v| !v.is_empty()) {
                    Some(dir) if Path::new(&dir).join("Chart.yaml").is_file() => None,
                    Some(dir) => Some(format!("{} has no Chart.yaml", dir.to_string_lossy())),
                    None => Some("EXTDNS_TEST_EXTERNAL_DNS_CHART is not set".to_string()),
                };
            }
            Server::OpenSsl => &["openssl"],
            Server::NetNamespace => &["unshare", "ip"],
            Server::DnsClients => &["dig", "kdig", "delv"],
            Server::Promtool => &["promtool"],

            Server::Unbound => &["unbound", "unbound-control", "dig"],
        };
        let missing: Vec<&str> = programs.iter().copied().filter(|p| program(p).is_none()).collect();
        (!missing.is_empty()).then(|| missing.join(", "))
    }
}

/// Whether a run must have every server ([`REQUIRE_SERVERS`] is set).
pub fn servers_required() -> bool {
    std::env::var_os(REQUIRE_SERVERS).is_some_and(|v| !v.is_empty() && v != "0")
}

/// The one decision about a test's servers: `true` when all of `servers` are there. When one is missing,
/// the test fails naming the install command if [`servers_required`], and otherwise this prints one skip
/// line naming `cargo xtask test` and returns `false` (the caller returns: [`require!`] does both).
pub fn available(servers: &[Server]) -> bool {
    let missing: Vec<(Server, String)> = servers
        .iter()
        .filter_map(|&s| s.missing().map(|what| (s, what)))
        .collect();
    if missing.is_empty() {
        return true;
    }
    if servers_required() {
        let lines: Vec<String> = missing
            .iter()
            .map(|(s, what)| format!("{} is missing ({what}): {}", s.label(), s.install()))
            .collect();
        panic!("{} ({REQUIRE_SERVERS} is set: never skipped)", lines.join("; "));
    }
    let needs: Vec<&str> = missing.iter().map(|(s, _)| s.label()).collect();
    let test = std::thread::current()
        .name()
        .filter(|n| *n != "main")
        .map(|n| format!("{n}: "))
        .unwrap_or_default();
    // Straight to the process's stderr: libtest captures `eprintln!` of passing tests, and a skip must show.
    let _ = writeln!(
        std::io::stderr().lock(),
        "{test}skipped: needs {}; run cargo xtask test",
        needs.join(", ")
    );
    false
}

/// Returns from the test (skipped) unless every named [`Server`] is [`available`]. Works in tests that
/// return `()` and in tests that return `Result<(), E>`.
#[macro_export]
macro_rules! require {
    ($($server:ident),+ $(,)?) => {
        if !$crate::available(&[$($crate::Server::$server),+]) {
            return $crate::Skipped::skipped();
        }
    };
}

/// What a skipped test returns.
pub trait Skipped {
    /// A passing result.
    fn skipped() -> Self;
}

impl Skipped for () {
    fn skipped() -> Self {}
}

impl<E> Skipped for Result<(), E> {
    fn skipped() -> Self {
        Ok(())
    }
}

/// A program on PATH, or in the sbin directories Debian puts daemons in (not on a user's PATH).
pub fn program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/local/sbin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The path of a program a test needs, or a panic naming the package that provides it. Tests check
/// [`available`] first; this is the launchers' own guard.
pub fn need(name: &str) -> PathBuf {
    let package = match name {
        "named" => "bind9",
        "knotd" | "knotc" => "knot",
        "dig" | "nsupdate" | "delv" => "bind9-dnsutils",
        "kdig" => "knot-dnsutils",
        "pdns_server" | "pdnsutil" => "pdns-server pdns-backend-sqlite3",
        "sqlite3" => "sqlite3",
        "dnsmasq" => "dnsmasq-base",
        "openssl" => "openssl",

        "unbound" | "unbound-control" => "unbound",
        other => other,
    };
    program(name).unwrap_or_else(|| panic!("{name} not found: install it with `apt-get install -y {package}`"))
}

/// The program an environment variable names (`cargo xtask test` exports the Go builds' paths), or what
/// is missing.
pub fn env_program(var: &str) -> Result<PathBuf, String> {
    match std::env::var_os(var).filter(|v| !v.is_empty()) {
        Some(p) if Path::new(&p).is_file() => Ok(PathBuf::from(p)),
        Some(p) => Err(format!("{var}={} is not a file", p.to_string_lossy())),
        None => Err(format!("{var} is not set")),
    }
}

/// A port free on 127.0.0.1 for both TCP and UDP right now.
pub fn try_free_port() -> std::io::Result<u16> {
    let mut last = None;
    for _ in 0..50 {
        let addr = match TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()) {
            Ok(a) => a,
            Err(e) => {
                last = Some(e);
                continue;
            }
        };
        match UdpSocket::bind(addr) {
            Ok(_) => return Ok(addr.port()),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free port on 127.0.0.1")))
}

/// [`try_free_port`], panicking when there is none.
pub fn free_port() -> u16 {
    try_free_port().unwrap_or_else(|e| panic!("no free port on 127.0.0.1: {e}"))
}

/// The first port of the system's ephemeral range, which it gives to sockets bound to port 0 (Linux's
/// default when it cannot be read).
fn ephemeral_ports_from() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32_768)
}

/// The lowest port [`server_port`] picks: above the registered services a test machine may run.
const SERVER_PORTS_FROM: u16 = 10_000;

/// A port of 127.0.0.1 free for TCP and UDP alike and below the system's ephemeral range, for a DNS server
/// that clients are pointed at. A port from the ephemeral range ([`free_port`]'s) can later be given to a
/// client's socket as its source port: a client sending from the server's own port receives its own
/// query back (dig then warns "query response not set"), and a benchmark's client could do the same.
pub fn server_port() -> u16 {
    let ephemeral_from = ephemeral_ports_from();
    let span = u64::from(ephemeral_from.saturating_sub(SERVER_PORTS_FROM).max(1));
    // Candidates spread by a randomly seeded hash, so two harnesses starting together do not race for one.
    let seed = std::collections::hash_map::RandomState::new();
    for attempt in 0u64..500 {
        let offset = std::hash::BuildHasher::hash_one(&seed, attempt) % span;
        let port = SERVER_PORTS_FROM.saturating_add(u16::try_from(offset).unwrap_or(0));
        let bound = TcpListener::bind(("127.0.0.1", port)).and_then(|_tcp| UdpSocket::bind(("127.0.0.1", port)));
        if bound.is_ok() {
            return port;
        }
    }
    free_port()
}

/// Serves `app` on a free port of 127.0.0.1 from the current runtime, for as long as the runtime lives: its
/// `http://` URL.
pub async fn serve(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("no free port on 127.0.0.1: {e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

/// The whole answer (status line, headers, body) to a plain `GET path` on `127.0.0.1:port`, for tests that
/// read a process's own endpoints (`/metrics`, `/readyz`) without an HTTP client.
pub fn http_get(port: u16, path: &str) -> std::io::Result<String> {
    use std::io::Read;
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(std::time::Duration::from_secs(5)))?;
    stream.write_all(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes())?;
    let mut out = String::new();
    stream.read_to_string(&mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_this_machine_is_loopback() {
        let url = |u: &str| url::Url::parse(u).unwrap_or_else(|e| panic!("{u}: {e}"));
        assert!(is_loopback(&url("http://127.0.0.1:8000/")));
        assert!(is_loopback(&url("http://[::1]:8000/")));
        assert!(is_loopback(&url("http://localhost/")));
        assert!(!is_loopback(&url("https://dynamodb.eu-west-1.amazonaws.com/")));
        assert!(!is_loopback(&url("http://169.254.169.254/latest")));
    }

    #[test]
    fn free_ports_bind_for_tcp_and_udp() {
        let port = free_port();
        assert_ne!(port, 0);
        assert!(TcpListener::bind(("127.0.0.1", port)).is_ok());
        assert!(UdpSocket::bind(("127.0.0.1", port)).is_ok());
    }

    #[test]
    fn server_ports_are_free_and_below_the_ephemeral_range() {
        let ephemeral_from = ephemeral_ports_from();
        for _ in 0..5 {
            let port = server_port();
            assert!(port >= SERVER_PORTS_FROM, "{port}");
            if ephemeral_from > SERVER_PORTS_FROM {
                assert!(port < ephemeral_from, "{port} is below {ephemeral_from}");
            }
            assert!(TcpListener::bind(("127.0.0.1", port)).is_ok());
            assert!(UdpSocket::bind(("127.0.0.1", port)).is_ok());
        }
    }

    #[test]
    fn programs_are_found_on_path_only_when_they_exist() {
        assert!(program("sh").is_some_and(|p| p.is_file()));
        assert_eq!(program("extdns-no-such-program"), None);
    }

    #[test]
    fn an_unset_or_bad_variable_names_itself() {
        assert_eq!(
            env_program("EXTDNS_TEST_SUPPORT_UNSET_VARIABLE"),
            Err("EXTDNS_TEST_SUPPORT_UNSET_VARIABLE is not set".to_string())
        );
    }

    #[test]
    fn skipped_tests_pass() {
        fn unit() {
            require!(Etcd, ExternalDns);
            // Reached only where both are there.
        }
        fn result() -> Result<(), String> {
            require!(Etcd);
            Ok(())
        }
        // Whatever this machine has, a skip is a pass (and under REQUIRE_SERVERS a missing one panics).
        if servers_required() {
            return;
        }
        unit();
        assert_eq!(result(), Ok(()));
    }
}
