//! The serving benchmark (`serve`, issues 36 and 49): `dnsperf` against three authoritative servers holding
//! the same zone, each unsigned and signed, one after the other in one run: Knot DNS (Debian; signed with
//! `dnssec-signing: on`, one ECDSA P-256 CSK, NSEC), CoreDNS (its `file` plugin; signed with the `dnssec`
//! plugin and a key from `dnssec-keygen`) and extdns (`--provider=dns-server`, the records read from
//! DNSEndpoint manifests; signed with `--dns-server-dnssec-zone` and a key Secret from `extdns dnssec
//! secret` among them). A signed server is asked with DO set (`dnsperf -D`, `dig +dnssec`), so every answer
//! carries its signatures and denial.
//!
//! One generated zone of N records (a mix of A, AAAA, CNAME, TXT, MX and SRV, and one wildcard) is written
//! as a zone file for Knot and CoreDNS and as DNSEndpoint objects of [`PER_OBJECT`] endpoints each for
//! extdns. Before anything is measured, every server answers a sample of the benchmark's queries and the
//! answers must match the first server's and what the zone says (a hit has an answer, a miss NXDOMAIN, a
//! name without the type NOERROR with no answer and the SOA): a benchmark of wrong answers is worthless.
//!
//! The arrangement on the project's two-core machine: each server runs pinned to CPU 1 (`taskset`) with
//! one UDP worker (Knot's `udp-workers`, `GOMAXPROCS`, extdns's `--dns-server-udp-workers`), and dnsperf
//! (one thread) and this harness run pinned to CPU 0. dnsperf runs
//! with `-v`, which reports each query's latency; the percentiles are computed from all of them.
//!
//! Each server is asked twice: in a closed loop (100 queries outstanding, as fast as it answers), and at a
//! fixed rate every server sustains (`--rate`, `dnsperf -Q`). The closed loop alone compares tails badly:
//! dnsperf shares its CPU with nothing but sends as fast as the server answers, so a faster server makes
//! the client the busier program, and each server's tail is measured at a different load; at a fixed rate
//! every server is measured at the same load, well below what it can take. Even so a fixed-rate run's tail
//! moves from one run to the next by more than servers differ, so the fixed rate is asked again at the end
//! in interleaved rounds (`--rounds`: every server in turn, each round), and their medians are compared.
//!
//! Memory per served record is the server's resident memory after the measured runs (the closed loop, then
//! the fixed rate), less its resident memory with an empty zone after a shorter run of the same queries,
//! divided by N; its anonymous part (heap and stacks) is reported apart, as the full run touches more of the
//! binary's code pages. It is reported right after the closed loop too: a server that finishes its first
//! load behind the queries (extdns's sync runs below its answering thread, which the closed loop keeps
//! busy on the one CPU) still holds that load's working memory then. With
//! `--churn on` it is reported again at the end of the runs under changes (the server started afresh for
//! them), against the same empty-zone baseline: what a server holds once its zone has been changing.
//!
//! The empty-zone baseline charges the records with everything the first load touches once, whatever the
//! zone's size: the code that reads and writes them, pools grown to their first use. So each server also
//! serves a quarter of the zone (after the same short run), and the memory a record *added* costs is
//! reported beside it: (RSS with N records − RSS with N/4) / (3N/4), the zone's own cost per record.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use extdns_test_support::proc::{Proc, eventually};

use crate::procfs;

const ZONE: &str = "example.org";
const TTL: u32 = 300;
/// The apex NS and its glue, the same in all three servers.
const NS: &str = "ns1";
const NS_GLUE: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 53);
/// Endpoints per DNSEndpoint object in extdns's manifests.
const PER_OBJECT: usize = 100;
/// Lines of the query file (dnsperf starts over at its end).
const QUERIES: usize = 100_000;
/// Queries whose answers are compared across the servers before measuring.
const SAMPLE: usize = 400;
/// The run with an empty zone, for the baseline of resident memory.
const EMPTY_RUN: u64 = 5;
/// The CPU the servers run on, and the one dnsperf and this harness run on.
const SERVER_CPU: &str = "1";
const CLIENT_CPU: &str = "0";
/// The fixed rate each server is measured at besides the closed loop, queries a second: what issue 49's
/// first independent measurement used, below what the slowest server (CoreDNS signed, about 19k on one CPU)
/// cannot take only for that one.
const DEFAULT_RATE: u64 = 30_000;
/// Interleaved rounds at the fixed rate: the tail's percentiles move between two runs of one server by
/// more than they differ between servers (issue 49), so each server is asked in several rounds, in turn
/// with the others, and the median compared.
const DEFAULT_ROUNDS: usize = 5;
/// Seconds a server resumed for its round is asked before the measured run: what it does on waking (its
/// timers due while it was stopped) is not its tail at the rate.
const ROUND_WARMUP: u64 = 2;
/// How long a server may take to answer the last record of the zone.
const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// The servers the benchmark knows, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    Knot,
    CoreDns,
    Extdns,
    KnotSigned,
    CoreDnsSigned,
    ExtdnsSigned,
}

impl Server {
    /// Every server, in the order a default run takes them.
    const ALL: [Server; 6] = [
        Server::Knot,
        Server::KnotSigned,
        Server::CoreDns,
        Server::CoreDnsSigned,
        Server::Extdns,
        Server::ExtdnsSigned,
    ];

    fn name(self) -> &'static str {
        match self {
            Server::Knot => "knot",
            Server::CoreDns => "coredns",
            Server::Extdns => "extdns",
            Server::KnotSigned => "knot-signed",
            Server::CoreDnsSigned => "coredns-signed",
            Server::ExtdnsSigned => "extdns-signed",
        }
    }

    fn parse(name: &str) -> Option<Server> {
        Server::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Whether the zone is signed and asked with DO.
    fn signed(self) -> bool {
        matches!(self, Server::KnotSigned | Server::CoreDnsSigned | Server::ExtdnsSigned)
    }

    /// Whether a name that does not exist gets NOERROR with a proof rather than NXDOMAIN when DO is set:
    /// CoreDNS's "black lies"; Knot and extdns keep NXDOMAIN with the NSECs of their chain.
    fn compact_denial(self) -> bool {
        matches!(self, Server::CoreDnsSigned)
    }

    /// The same server unsigned, which a signed one is compared with.
    fn family(self) -> Server {
        match self {
            Server::KnotSigned => Server::Knot,
            Server::CoreDnsSigned => Server::CoreDns,
            Server::ExtdnsSigned => Server::Extdns,
            other => other,
        }
    }
}

/// `serve`'s arguments.
#[derive(Debug, Clone)]
pub struct Options {
    /// Records in the zone.
    pub records: usize,
    /// Length of each measured dnsperf run.
    pub seconds: u64,
    /// dnsperf's clients (`-c`).
    pub clients: usize,
    /// Which servers, in the order they run.
    pub servers: Vec<Server>,
    /// Whether each server (but CoreDNS) is measured a second time while [`CHURN`] names change a second.
    pub churn: bool,
    /// The fixed rate (queries a second) each server is also measured at; 0 measures the closed loop only.
    pub rate: u64,
    /// Interleaved rounds at the fixed rate after the runs ([`interleaved_tails`]); 0 runs none.
    pub rounds: usize,
    /// The CoreDNS binary (`cargo xtask bench serve` builds it).
    pub coredns: Option<PathBuf>,
    /// Where the markdown report goes.
    pub report: PathBuf,
}

impl Options {
    /// `--records N --seconds S --clients C --servers knot,coredns,extdns[,NAME-signed...] --churn on|off
    /// --rate Q --rounds R --coredns PATH --report FILE`, each optional.
    pub fn parse(args: &[String]) -> Result<Options> {
        let mut o = Options {
            records: 10_000,
            seconds: 30,
            clients: 10,
            servers: Server::ALL.to_vec(),
            churn: true,
            rate: DEFAULT_RATE,
            rounds: DEFAULT_ROUNDS,
            coredns: None,
            report: PathBuf::from("target/bench-serve.md"),
        };
        for (flag, value) in crate::flags::pairs(args)? {
            let number = |what: &str| -> Result<u64> {
                value
                    .parse()
                    .with_context(|| format!("serve: {what} {value}: not a number"))
            };
            match flag.as_str() {
                "--records" => o.records = number("--records")? as usize,
                "--seconds" => o.seconds = number("--seconds")?,
                "--clients" => o.clients = number("--clients")? as usize,
                "--servers" => {
                    o.servers = value
                        .split(',')
                        .map(|s| {
                            Server::parse(s).with_context(|| {
                                format!("serve: --servers {s}: knot, coredns or extdns, each also as NAME-signed")
                            })
                        })
                        .collect::<Result<_>>()?;
                }
                "--churn" => {
                    o.churn = match value.as_str() {
                        "on" => true,
                        "off" => false,
                        other => bail!("serve: --churn {other}: on or off"),
                    }
                }
                "--rate" => o.rate = number("--rate")?,
                "--rounds" => o.rounds = number("--rounds")? as usize,
                "--coredns" => o.coredns = Some(PathBuf::from(value)),
                "--report" => o.report = PathBuf::from(value),
                other => bail!("serve: unknown argument {other}"),
            }
        }
        if !(20..=1 << 20).contains(&o.records) {
            bail!("serve: --records must be between 20 and {}", 1 << 20);
        }
        if o.seconds == 0 || o.clients == 0 || o.servers.is_empty() {
            bail!("serve: --seconds, --clients and --servers need at least one");
        }
        if o.servers.iter().any(|s| s.family() == Server::CoreDns) && o.coredns.is_none() {
            bail!("serve: CoreDNS needs --coredns PATH (`cargo xtask bench serve` builds it)");
        }
        Ok(o)
    }
}

// ------------------------------------------------------------------------------------------ the zone

/// One record of the generated zone: owner (relative to the zone), type, its data as a zone file writes it
/// and as a DNSEndpoint target.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Record {
    owner: String,
    rtype: &'static str,
    zone_data: String,
    target: String,
}

/// Record `i`: record 0 is the wildcard `*.apps`; the others by `i % 20`: 11 in 20 A, 3 AAAA, 2 CNAME (to
/// an A record of the zone), 2 TXT, 1 MX and 1 SRV (their targets outside the zone, so no server adds
/// additional records).
fn record(i: usize) -> Record {
    let v4 = Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 0, 0, 0)) + i as u32).to_string();
    let (owner, rtype, zone_data, target) = match i % 20 {
        _ if i == 0 => ("*.apps".to_string(), "A", "192.0.2.80".to_string(), None),
        0..=10 => (format!("web-{i}"), "A", v4, None),
        11..=13 => {
            let v6 = Ipv6Addr::from((0x2001_0db8_u128 << 96) | i as u128).to_string();
            (format!("v6-{i}"), "AAAA", v6, None)
        }
        14..=15 => {
            let to = format!("web-{}.{ZONE}", i - i % 20 + 1);
            (format!("www-{i}"), "CNAME", format!("{to}."), Some(to))
        }
        16..=17 => {
            let text = format!(
                "site-verification={:016x}",
                (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
            );
            (format!("txt-{i}"), "TXT", format!("\"{text}\""), Some(text))
        }
        18 => {
            let to = format!("10 mx{}.mail.example.net", i % 7);
            (format!("mail-{i}"), "MX", format!("{to}."), Some(to))
        }
        _ => {
            // external-dns's SRV targets end with the dot (its endpoint validation says so); MX's need not.
            let to = format!("10 5 443 node-{i}.example.net.");
            (format!("_https._tcp.svc-{i}"), "SRV", to, None)
        }
    };
    let target = target.unwrap_or_else(|| zone_data.clone());
    Record {
        owner,
        rtype,
        zone_data,
        target,
    }
}

fn fqdn(owner: &str) -> String {
    format!("{owner}.{ZONE}")
}

/// The zone file Knot and CoreDNS load: the SOA and NS extdns's defaults give (its timers from the agreed
/// flag defaults), the glue, then the records.
fn zone_file(n: usize) -> String {
    let mut z = format!(
        "$ORIGIN {ZONE}.\n$TTL {TTL}\n@ SOA {NS}.{ZONE}. hostmaster.{ZONE}. 1 3600 600 604800 30\n@ NS {NS}.{ZONE}.\n{NS} A {NS_GLUE}\n"
    );
    for i in 0..n {
        let r = record(i);
        let _ = writeln!(z, "{} {} {}", r.owner, r.rtype, r.zone_data);
    }
    z
}

/// The same records as DNSEndpoint objects of [`PER_OBJECT`] endpoints each.
fn dns_endpoints(n: usize) -> String {
    let mut out = String::new();
    for (object, start) in (0..n).step_by(PER_OBJECT).enumerate() {
        let _ = writeln!(
            out,
            "---\napiVersion: externaldns.k8s.io/v1alpha1\nkind: DNSEndpoint\nmetadata: {{name: zone-{object}, namespace: bench}}\nspec:\n  endpoints:"
        );
        for i in start..(start + PER_OBJECT).min(n) {
            let r = record(i);
            let _ = writeln!(
                out,
                "  - {{dnsName: \"{}\", recordType: {}, recordTTL: {TTL}, targets: [\"{}\"]}}",
                fqdn(&r.owner),
                r.rtype,
                r.target
            );
        }
    }
    out
}

// --------------------------------------------------------------------------------------- the queries

/// What a query must get.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Expect {
    /// NOERROR with an answer.
    Hit,
    /// NXDOMAIN.
    NxDomain,
    /// NOERROR, no answer.
    NoData,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Query {
    name: String,
    qtype: &'static str,
    expect: Expect,
}

/// splitmix64: a fixed sequence, so every run (and every server) gets the same queries.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) % n as u64) as usize
    }
}

/// An A record's index near `i` (the first 11 of every 20 but record 0 are A records).
fn a_record_near(i: usize, n: usize) -> usize {
    let j = i - i % 20 + 1 + i % 10;
    if j < n { j } else { 1 }
}

/// The query mix, in 20ths: 15 hits on records drawn uniformly from the zone (the record's type; A for a
/// CNAME, which the server follows; a name under the wildcard for record 0), 1 a name under the wildcard, 2
/// names that do not exist (NXDOMAIN), 2 A records asked for AAAA or TXT (NODATA).
fn queries(n: usize, count: usize) -> Vec<Query> {
    let mut rng = Rng(36);
    (0..count)
        .map(|k| {
            let pick = rng.below(n);
            match k % 20 {
                0..=14 => {
                    let r = record(pick);
                    let name = if pick == 0 {
                        format!("q{k}.apps.{ZONE}")
                    } else {
                        fqdn(&r.owner)
                    };
                    let qtype = if r.rtype == "CNAME" { "A" } else { r.rtype };
                    Query {
                        name,
                        qtype,
                        expect: Expect::Hit,
                    }
                }
                15 => Query {
                    name: format!("h{pick}.apps.{ZONE}"),
                    qtype: "A",
                    expect: Expect::Hit,
                },
                16..=17 => Query {
                    name: format!("nx-{pick}.{ZONE}"),
                    qtype: if k % 2 == 0 { "A" } else { "AAAA" },
                    expect: Expect::NxDomain,
                },
                _ => Query {
                    name: fqdn(&record(a_record_near(pick, n)).owner),
                    qtype: if k % 2 == 0 { "AAAA" } else { "TXT" },
                    expect: Expect::NoData,
                },
            }
        })
        .collect()
}

/// The mix as the report states it.
fn mix(qs: &[Query]) -> String {
    let share = |e: Expect| 100.0 * qs.iter().filter(|q| q.expect == e).count() as f64 / qs.len() as f64;
    let wildcard =
        100.0 * qs.iter().filter(|q| q.name.ends_with(&format!(".apps.{ZONE}"))).count() as f64 / qs.len() as f64;
    format!(
        "{:.0} % hits ({wildcard:.0} % of all through the wildcard, A queries of CNAME names followed to their A \
         record), {:.0} % NXDOMAIN, {:.0} % NODATA",
        share(Expect::Hit),
        share(Expect::NxDomain),
        share(Expect::NoData)
    )
}

fn query_file(qs: &[Query]) -> String {
    qs.iter().map(|q| format!("{} {}\n", q.name, q.qtype)).collect()
}

// -------------------------------------------------------------------------------------- the servers

/// Where a server's files and log go.
struct Dirs {
    zone_file: PathBuf,
    manifests: PathBuf,
}

/// Starts `server` on `port` pinned to [`SERVER_CPU`], serving `dirs`' zone; with `churn`, ready to take
/// the changes of [`Churn`] (Knot's UPDATE allowed from loopback; extdns syncing every second from
/// manifests of its own, which the churn rewrites).
fn start(
    server: Server,
    port: u16,
    dirs: &Dirs,
    dir: &Path,
    extdns: &Path,
    opts: &Options,
    churn: bool,
) -> Result<Proc> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut cmd = Command::new("taskset");
    cmd.args(["-c", SERVER_CPU]);
    match server.family() {
        Server::Knot => {
            let path = knot_conf(server.signed(), churn, port, dirs, dir)?;
            cmd.arg(extdns_test_support::need("knotd")).arg("-c").arg(path);
        }
        Server::CoreDns => {
            // The file plugin alone: no log, no cache, no reload, no other plugin in the query's way; the
            // dnssec plugin after it when signed.
            let dnssec = if server.signed() {
                let key = dnssec_keygen(dir)?;
                format!("    dnssec {ZONE} {{\n        key file {}\n    }}\n", key.display())
            } else {
                String::new()
            };
            let corefile = format!(
                "{ZONE}:{port} {{\n    bind 127.0.0.1\n    file {} {{\n        reload 0\n    }}\n{dnssec}}}\n",
                dirs.zone_file.display()
            );
            let path = dir.join("Corefile");
            std::fs::write(&path, corefile).with_context(|| format!("writing {}", path.display()))?;
            let coredns = opts.coredns.as_deref().context("--coredns is required")?;
            cmd.env("GOMAXPROCS", "1")
                .arg(coredns)
                .arg("-conf")
                .arg(path)
                .arg("-quiet");
        }
        _ => {
            let mut flags = extdns_flags(port);
            if server.signed() {
                flags.push(format!("--dns-server-dnssec-zone={ZONE}"));
            }
            let manifests = if server.signed() || churn {
                own_manifests(extdns, &flags, server.signed(), dirs, dir)?
            } else {
                dirs.manifests.clone()
            };
            if churn {
                // Each sync reads the manifests again; the default minute would take a change a minute.
                flags.push("--interval=1s".to_string());
                Churn::Extdns(manifests.join(CHURN_FILE)).apply(0)?;
            }
            cmd.arg(extdns)
                .args(&flags)
                .arg("--manifests")
                .arg(manifests)
                .arg(format!(
                    "--metrics-address=127.0.0.1:{}",
                    extdns_test_support::free_port()
                ));
        }
    }
    Proc::spawn(server.name(), cmd, &dir.join("server.log"))
}

/// Knot's configuration in `dir`: one UDP and one TCP worker for the one CPU it may use (more workers only
/// take turns on it), the zone loaded from the file and never written back, no journal; signed, one ECDSA
/// P-256 CSK (as extdns signs) and NSEC, signed once at load by the one background worker.
fn knot_conf(signed: bool, churn: bool, port: u16, dirs: &Dirs, dir: &Path) -> Result<PathBuf> {
    let dp = dir.display();
    std::fs::create_dir_all(dir.join("db"))?;
    let (policy, signing) = if signed {
        (
            "policy:\n  - id: csk\n    algorithm: ecdsap256sha256\n    single-type-signing: on\n    nsec3: off\n",
            "    dnssec-signing: on\n    dnssec-policy: csk\n",
        )
    } else {
        ("", "")
    };
    let (acl, zone_acl) = if churn {
        (
            "acl:\n  - id: update\n    address: 127.0.0.1\n    action: update\n",
            "    acl: update\n",
        )
    } else {
        ("", "")
    };
    let conf = format!(
        "server:\n    rundir: \"{dp}\"\n    pidfile: \"{dp}/knot.pid\"\n    listen: 127.0.0.1@{port}\n    \
         udp-workers: 1\n    tcp-workers: 1\n    background-workers: 1\n\
         database:\n    storage: \"{dp}/db\"\ncontrol:\n    listen: \"{dp}/knot.sock\"\n\
         log:\n  - target: stderr\n    any: warning\n{policy}{acl}\
         template:\n  - id: default\n    zonefile-sync: -1\n    zonefile-load: whole\n    journal-content: none\n\
         zone:\n  - domain: {ZONE}\n    file: \"{}\"\n{signing}{zone_acl}",
        dirs.zone_file.display()
    );
    let path = dir.join("knot.conf");
    std::fs::write(&path, conf).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// A CSK for CoreDNS's dnssec plugin, made by BIND's `dnssec-keygen` in `dir`; the path without its
/// `.key`/`.private` ending, as the plugin's `key file` takes it.
fn dnssec_keygen(dir: &Path) -> Result<PathBuf> {
    let mut keygen = Command::new(extdns_test_support::need("dnssec-keygen"));
    keygen
        .args(["-q", "-a", "ECDSAP256SHA256", "-f", "KSK", "-K"])
        .arg(dir)
        .arg(ZONE);
    let out = extdns_test_support::proc::output(keygen).context("dnssec-keygen (bind9-utils)")?;
    let base = out.trim();
    if base.is_empty() {
        bail!("dnssec-keygen printed no key name");
    }
    Ok(dir.join(base))
}

/// extdns's flags for the benchmark's zone on `port`, as a daemon reading DNSEndpoint manifests.
fn extdns_flags(port: u16) -> Vec<String> {
    let mut flags = vec![
        "--provider=dns-server".to_string(),
        format!("--dns-server-zone={ZONE}"),
        format!("--dns-server-listen=127.0.0.1:{port}"),
        format!("--dns-server-ns={NS}.{ZONE}={NS_GLUE}"),
        "--source=crd".to_string(),
        // One UDP worker thread, as Knot's `udp-workers: 1`, on the one CPU it may use.
        "--dns-server-udp-workers=1".to_string(),
    ];
    // external-dns manages A, AAAA and CNAME unless told more.
    flags.extend(["A", "AAAA", "CNAME", "TXT", "MX", "SRV"].map(|t| format!("--managed-record-types={t}")));
    flags
}

/// The manifests of one extdns in `dir`: the zone's DNSEndpoints and, `signed`, the key Secret `extdns
/// dnssec secret` prints for `flags`.
fn own_manifests(extdns: &Path, flags: &[String], signed: bool, dirs: &Dirs, dir: &Path) -> Result<PathBuf> {
    let manifests = dir.join("manifests");
    std::fs::create_dir_all(&manifests).with_context(|| format!("creating {}", manifests.display()))?;
    for entry in std::fs::read_dir(&dirs.manifests).with_context(|| format!("reading {}", dirs.manifests.display()))? {
        let from = entry?.path();
        if let Some(name) = from.file_name() {
            std::fs::copy(&from, manifests.join(name)).with_context(|| format!("copying {}", from.display()))?;
        }
    }
    if !signed {
        return Ok(manifests);
    }
    let mut secret = Command::new(extdns);
    secret.args(["dnssec", "secret"]).args(flags);
    let json = extdns_test_support::proc::output(secret).context("extdns dnssec secret")?;
    std::fs::write(manifests.join("dnssec-keys.yaml"), json).context("writing the key Secret")?;
    Ok(manifests)
}

// ------------------------------------------------------------------------------------------ the churn

/// Names changed every second during a server's second run: each gets a new address, so 100 changes a
/// second (issue 49: "the same mix while 100 changes per second are applied").
const CHURN: usize = 100;
/// extdns's manifest file of the changed names, rewritten every second.
const CHURN_FILE: &str = "churn.yaml";

/// The address of churn name `k` at second `tick`.
fn churn_address(k: usize, tick: u64) -> Ipv4Addr {
    Ipv4Addr::new(10, 200, (tick % 250) as u8, k as u8 + 1)
}

/// How a server takes the changes.
#[derive(Debug, Clone)]
enum Churn {
    /// One DNS UPDATE (`nsupdate`) of all the names, to the server on this port.
    Update(u16),
    /// The DNSEndpoint manifest extdns reads every sync, replaced whole (written aside, then renamed).
    Extdns(PathBuf),
}

impl Churn {
    fn of(server: Server, port: u16, dir: &Path) -> Option<Churn> {
        match server.family() {
            Server::Knot => Some(Churn::Update(port)),
            Server::Extdns => Some(Churn::Extdns(dir.join("manifests").join(CHURN_FILE))),
            // The file plugin takes changes by reloading the whole zone file; not measured.
            _ => None,
        }
    }

    /// Gives every churn name its address of second `tick`.
    fn apply(&self, tick: u64) -> Result<()> {
        match self {
            Churn::Update(port) => {
                let mut script = format!("server 127.0.0.1 {port}\nzone {ZONE}\n");
                for k in 0..CHURN {
                    let _ = write!(
                        script,
                        "update delete churn-{k}.{ZONE} A\nupdate add churn-{k}.{ZONE} {TTL} A {}\n",
                        churn_address(k, tick)
                    );
                }
                script.push_str("send\n");
                let mut nsupdate = Command::new(extdns_test_support::need("nsupdate"));
                nsupdate
                    .stdin(Stdio::piped())
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped());
                let mut child = nsupdate.spawn().context("cannot start nsupdate")?;
                if let Some(mut stdin) = child.stdin.take() {
                    std::io::Write::write_all(&mut stdin, script.as_bytes()).context("writing to nsupdate")?;
                }
                let out = child.wait_with_output().context("nsupdate")?;
                if !out.status.success() {
                    bail!("nsupdate failed: {}", String::from_utf8_lossy(&out.stderr));
                }
                Ok(())
            }
            Churn::Extdns(file) => {
                let mut yaml = "apiVersion: externaldns.k8s.io/v1alpha1\nkind: DNSEndpoint\n\
                                metadata: {name: churn, namespace: bench}\nspec:\n  endpoints:\n"
                    .to_string();
                for k in 0..CHURN {
                    let _ = writeln!(
                        yaml,
                        "  - {{dnsName: \"churn-{k}.{ZONE}\", recordType: A, recordTTL: {TTL}, targets: [\"{}\"]}}",
                        churn_address(k, tick)
                    );
                }
                let aside = file.with_extension("tmp");
                std::fs::write(&aside, yaml).with_context(|| format!("writing {}", aside.display()))?;
                std::fs::rename(&aside, file).with_context(|| format!("replacing {}", file.display()))
            }
        }
    }
}

/// Applies `churn` once a second from a thread of its own until `stop`; the last tick applied.
fn churning(churn: Churn, stop: std::sync::Arc<std::sync::atomic::AtomicBool>) -> std::thread::JoinHandle<Result<u64>> {
    std::thread::spawn(move || {
        let start = Instant::now();
        let mut tick = 0;
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            tick += 1;
            churn.apply(tick)?;
            let next = start + Duration::from_secs(tick);
            while Instant::now() < next && !stop.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Ok(tick)
    })
}

/// Waits until the server on `port` answers `probe` as expected; the seconds it took from `since`.
fn ready(proc: &mut Proc, port: u16, probe: &Query, since: Instant) -> Result<f64> {
    eventually(
        &format!("{} answering {} {}", proc.name, probe.name, probe.qtype),
        READY_TIMEOUT,
        Duration::from_millis(100),
        || {
            if let Some(status) = proc.exited() {
                bail!("{} exited with {status}: {}", proc.name, proc.log_tail(20));
            }
            let out = extdns_test_support::dig::dig(
                port,
                &["+noall", "+comments", "+answer", "+authority", &probe.name, probe.qtype],
            );
            Ok(parse_dig(&out)
                .into_iter()
                .next()
                .filter(|a| matches(a, probe.expect))
                .map(|_| ()))
        },
    )?;
    Ok(since.elapsed().as_secs_f64())
}

// ------------------------------------------------------------------------------------ answers checked

/// One response as dig printed it: status, the AA bit, the answer section and the owner and type of each
/// authority record, normalised (lower case, single spaces, sorted) for comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Answer {
    status: String,
    aa: bool,
    answer: Vec<String>,
    authority: Vec<String>,
}

/// dig's `+noall +comments +answer +authority` output, one [`Answer`] per response (batch mode prints one
/// after another).
fn parse_dig(out: &str) -> Vec<Answer> {
    let mut answers: Vec<Answer> = Vec::new();
    let mut section = "";
    for line in out.lines() {
        let line = line.trim();
        if let Some(header) = line.strip_prefix(";; ->>HEADER<<-") {
            let status = header
                .split(',')
                .find_map(|f| f.trim().strip_prefix("status:"))
                .unwrap_or("?")
                .trim()
                .to_string();
            answers.push(Answer {
                status,
                aa: false,
                answer: Vec::new(),
                authority: Vec::new(),
            });
            section = "";
        } else if let Some(flags) = line.strip_prefix(";; flags:") {
            if let Some(a) = answers.last_mut() {
                a.aa = flags
                    .split(';')
                    .next()
                    .unwrap_or("")
                    .split_whitespace()
                    .any(|f| f == "aa");
            }
        } else if let Some(name) = line.strip_prefix(";; ").and_then(|l| l.strip_suffix(" SECTION:")) {
            section = if name == "ANSWER" {
                "answer"
            } else if name == "AUTHORITY" {
                "authority"
            } else {
                ""
            };
        } else if !line.is_empty() && !line.starts_with(';') {
            let fields: Vec<String> = line.split_whitespace().map(str::to_lowercase).collect();
            let Some(a) = answers.last_mut() else { continue };
            match section {
                "answer" => a.answer.push(fields.join(" ")),
                // Owner and type: an SOA's serial and a referral's order are not what is compared.
                "authority" if fields.len() >= 4 => a.authority.push(format!("{} {}", fields[0], fields[3])),
                _ => {}
            }
        }
    }
    for a in &mut answers {
        a.answer.sort();
        a.authority.sort();
        a.authority.dedup();
    }
    answers
}

/// Whether an answer without DNSSEC is what `expect` says.
fn matches(a: &Answer, expect: Expect) -> bool {
    matches_from(Server::Knot, a, expect)
}

/// [`matches`] as `server` answers: signed, a hit carries its RRSIG; with compact denial, a name that does
/// not exist is NOERROR with no answer (the proof is in the authority section).
fn matches_from(server: Server, a: &Answer, expect: Expect) -> bool {
    let soa = a.authority.iter().any(|r| r == &format!("{ZONE}. soa"));
    let answer = unsigned(&a.answer);
    a.aa && match expect {
        Expect::Hit => {
            a.status == "NOERROR"
                && !answer.is_empty()
                && (!server.signed() || a.answer.iter().any(|r| record_type(r) == "rrsig"))
        }
        Expect::NxDomain => {
            let status = a.status == "NXDOMAIN" || (server.compact_denial() && a.status == "NOERROR");
            status && answer.is_empty() && soa
        }
        Expect::NoData => a.status == "NOERROR" && answer.is_empty() && soa,
    }
}

/// The type of an answer line (`name ttl class type data`).
fn record_type(line: &str) -> &str {
    line.split_whitespace().nth(3).unwrap_or("")
}

/// Whether a type is DNSSEC's own (signatures and denial), which only a signed server adds.
fn is_dnssec(rtype: &str) -> bool {
    matches!(rtype, "rrsig" | "nsec" | "nsec3")
}

/// Answer lines without the DNSSEC records.
fn unsigned(lines: &[String]) -> Vec<String> {
    lines.iter().filter(|l| !is_dnssec(record_type(l))).cloned().collect()
}

/// What a comparison looks at: a positive answer's authority section is the server's choice (CoreDNS adds
/// the apex NS, Knot nothing), a negative one's must hold the SOA; DNSSEC records are left out (each
/// server signs with its own key), and so is the status of a name that does not exist (NXDOMAIN, or
/// NOERROR with a compact proof).
fn compared(a: &Answer, expect: Expect) -> (String, bool, Vec<String>, Vec<String>) {
    let answer = unsigned(&a.answer);
    let authority = if answer.is_empty() {
        a.authority
            .iter()
            .filter(|r| !is_dnssec(r.rsplit(' ').next().unwrap_or("")))
            .cloned()
            .collect()
    } else {
        Vec::new()
    };
    let status = if expect == Expect::NxDomain {
        "(no such name)".to_string()
    } else {
        a.status.clone()
    };
    (status, a.aa, answer, authority)
}

/// What dig prints before a "response" without QR, which it then parses as the answer.
const NOT_A_RESPONSE: &str = ";; Warning: query response not set";

/// Where [`sample_answers`] keeps dig's output, in the server's log directory.
const SAMPLE_OUTPUT: &str = "sample-answers.txt";

/// The sample's answers from the server on `port`, by one `dig -f` (over UDP, as dnsperf asks; with DO when
/// `signed`).
fn sample_answers(port: u16, sample: &[Query], dir: &Path, signed: bool) -> Result<Vec<Answer>> {
    let batch = dir.join("sample.txt");
    std::fs::write(&batch, query_file(sample)).with_context(|| format!("writing {}", batch.display()))?;
    let batch = batch.display().to_string();
    let mut args = vec!["+noall", "+comments", "+answer", "+authority", "-f", &batch];
    if signed {
        args.push("+dnssec");
    }
    // dig takes a datagram without QR for the answer, warning that it is not one: its own query, come
    // back because the source port the system gave it is the server's (both from the ephemeral range;
    // seen with Knot and extdns alike). Asked again, from other ports.
    let mut out = extdns_test_support::dig::dig(port, &args);
    for _ in 0..3 {
        if !out.contains(NOT_A_RESPONSE) {
            break;
        }
        eprintln!("serve: dig took its own query for an answer on port {port}; asking again");
        out = extdns_test_support::dig::dig(port, &args);
    }
    // Kept beside the logs: a check that fails is read against what dig printed, not only its parse.
    let raw = dir.join(SAMPLE_OUTPUT);
    std::fs::write(&raw, &out).with_context(|| format!("writing {}", raw.display()))?;
    let answers = parse_dig(&out);
    if answers.len() != sample.len() {
        bail!(
            "dig got {} responses to {} queries on port {port}: {}",
            answers.len(),
            sample.len(),
            extdns_test_support::proc::tail(&out, 10)
        );
    }
    Ok(answers)
}

/// Checks one server's sample answers against the zone and against the first server's.
fn check_answers(server: Server, sample: &[Query], got: &[Answer], reference: Option<(&str, &[Answer])>) -> Result<()> {
    let who = server.name();
    for (i, (q, a)) in sample.iter().zip(got).enumerate() {
        if !matches_from(server, a, q.expect) {
            bail!("{who}: {} {} should be {:?}, got {a:?}", q.name, q.qtype, q.expect);
        }
        if let Some((first, theirs)) = reference
            && compared(a, q.expect) != compared(&theirs[i], q.expect)
        {
            bail!(
                "{who} and {first} answer {} {} differently:\n  {who}: {a:?}\n  {first}: {:?}",
                q.name,
                q.qtype,
                theirs[i]
            );
        }
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------ dnsperf

/// What one dnsperf run reported, and the latencies of every query it printed.
#[derive(Debug, Default, Clone)]
struct Perf {
    sent: u64,
    completed: u64,
    lost: u64,
    qps: f64,
    /// Microseconds, one per answered query, sorted.
    latencies: Vec<u32>,
    rcodes: BTreeMap<String, u64>,
    request_size: f64,
    response_size: f64,
    /// dnsperf's own CPU seconds: near the run's length, the client rather than the server set the pace.
    client_cpu: f64,
}

impl Perf {
    /// The `p`-th percentile latency in microseconds (nearest rank).
    fn percentile(&self, p: f64) -> f64 {
        if self.latencies.is_empty() {
            return f64::NAN;
        }
        let rank = ((p / 100.0) * self.latencies.len() as f64).ceil() as usize;
        f64::from(self.latencies[rank.clamp(1, self.latencies.len()) - 1])
    }

    fn average(&self) -> f64 {
        if self.latencies.is_empty() {
            return f64::NAN;
        }
        self.latencies.iter().map(|&l| f64::from(l)).sum::<f64>() / self.latencies.len() as f64
    }

    /// Reads one line of dnsperf's output: a query's result under `-v` (`> NOERROR name type 0.000123`, or
    /// `T` for a timeout), or a line of its statistics.
    fn read_line(&mut self, line: &str) {
        if let Some(result) = line.strip_prefix("> ") {
            let fields: Vec<&str> = result.split_whitespace().collect();
            if let (Some(&rcode), Some(latency)) = (fields.first(), fields.last().and_then(|l| l.parse::<f64>().ok()))
                && rcode != "T"
                && rcode != "I"
                && fields.len() >= 4
            {
                *self.rcodes.entry(rcode.to_string()).or_default() += 1;
                self.latencies.push((latency * 1e6).round() as u32);
            }
            return;
        }
        let line = line.trim();
        let first_number = |rest: &str| -> Option<f64> { rest.split_whitespace().next()?.parse().ok() };
        if let Some(rest) = line.strip_prefix("Queries sent:") {
            self.sent = first_number(rest).unwrap_or_default() as u64;
        } else if let Some(rest) = line.strip_prefix("Queries completed:") {
            self.completed = first_number(rest).unwrap_or_default() as u64;
        } else if let Some(rest) = line.strip_prefix("Queries lost:") {
            self.lost = first_number(rest).unwrap_or_default() as u64;
        } else if let Some(rest) = line.strip_prefix("Queries per second:") {
            self.qps = first_number(rest).unwrap_or_default();
        } else if let Some(rest) = line.strip_prefix("Average packet size:") {
            // `request 31, response 68`
            for part in rest.split(',') {
                let mut words = part.split_whitespace();
                match (words.next(), words.next().and_then(|v| v.parse().ok())) {
                    (Some("request"), Some(v)) => self.request_size = v,
                    (Some("response"), Some(v)) => self.response_size = v,
                    _ => {}
                }
            }
        }
    }
}

/// How one dnsperf run asks.
#[derive(Clone, Copy)]
struct Load<'a> {
    queries: &'a Path,
    seconds: u64,
    clients: usize,
    /// DO set on every query (`-D`): a signed server's answers then carry their signatures.
    dnssec: bool,
    /// Queries a second (`-Q`); `None` for a closed loop, as fast as the answers come.
    rate: Option<u64>,
}

impl Load<'_> {
    /// The same queries at `rate` a second.
    fn at(&self, rate: u64) -> Load<'_> {
        Load {
            rate: Some(rate),
            ..*self
        }
    }
}

/// dnsperf against `port` as `load` says, pinned to [`CLIENT_CPU`], each query's latency read as it comes.
fn dnsperf(port: u16, load: &Load<'_>, log: &Path) -> Result<Perf> {
    let (queries, seconds, clients) = (load.queries, load.seconds, load.clients);
    let mut cmd = Command::new("taskset");
    cmd.args(["-c", CLIENT_CPU])
        .arg(extdns_test_support::need("dnsperf"))
        .args(["-s", "127.0.0.1", "-p", &port.to_string(), "-T", "1", "-v"])
        .args(load.dnssec.then_some("-D"))
        .args(load.rate.into_iter().flat_map(|q| ["-Q".to_string(), q.to_string()]))
        .args(["-c", &clients.to_string(), "-l", &seconds.to_string()])
        .arg("-d")
        .arg(queries)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?);
    let cpu_before = children_cpu()?;
    let mut child = cmd.spawn().with_context(|| format!("cannot start {cmd:?}"))?;
    let stdout = child.stdout.take().context("dnsperf's output")?;
    let mut perf = Perf::default();
    for line in BufReader::new(stdout).lines() {
        perf.read_line(&line.context("reading dnsperf's output")?);
    }
    let status = child.wait()?;
    if !status.success() {
        bail!(
            "dnsperf failed with {status}: {}",
            extdns_test_support::proc::tail(&std::fs::read_to_string(log).unwrap_or_default(), 10)
        );
    }
    if perf.completed == 0 || perf.latencies.is_empty() {
        bail!(
            "dnsperf completed no query against port {port}; its log is {}",
            log.display()
        );
    }
    perf.latencies.sort_unstable();
    perf.client_cpu = children_cpu()? - cpu_before;
    Ok(perf)
}

/// The run's rcodes must be the query file's: NOERROR and NXDOMAIN only, NXDOMAIN in its share (dnsperf
/// may stop anywhere in the file, hence the tolerance).
fn check_rcodes(who: &str, perf: &Perf, nx_share: f64) -> Result<()> {
    let total: u64 = perf.rcodes.values().sum();
    if let Some(other) = perf.rcodes.keys().find(|r| *r != "NOERROR" && *r != "NXDOMAIN") {
        bail!("{who}: dnsperf got {other} answers: {:?}", perf.rcodes);
    }
    let nx = perf.rcodes.get("NXDOMAIN").copied().unwrap_or_default() as f64 / total.max(1) as f64;
    if (nx - nx_share).abs() > 0.02 {
        bail!(
            "{who}: {:.1} % NXDOMAIN where the queries hold {:.1} %: {:?}",
            nx * 100.0,
            nx_share * 100.0,
            perf.rcodes
        );
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------ /proc

/// A process's resident memory, KiB: all of it, and the anonymous part alone (heap and stacks, without
/// the binary's code pages, which a run that answers every kind of query touches more of than an empty
/// zone's run does).
#[derive(Debug, Clone, Copy)]
struct Resident {
    total: f64,
    anon: f64,
}

fn resident_kib(pid: u32) -> Result<Resident> {
    let status =
        std::fs::read_to_string(format!("/proc/{pid}/status")).with_context(|| format!("/proc/{pid}/status"))?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .with_context(|| format!("no {name} in /proc/{pid}/status"))
    };
    Ok(Resident {
        total: field("VmRSS:")?,
        anon: field("RssAnon:")?,
    })
}

/// CPU seconds (user and system) a process has used.
fn cpu_seconds(pid: u32) -> Result<f64> {
    procfs::cpu_seconds(&format!("/proc/{pid}/stat"), 14, procfs::clock_ticks())
}

/// CPU seconds of this process's children that have been waited for (dnsperf's, once it has ended).
fn children_cpu() -> Result<f64> {
    procfs::cpu_seconds("/proc/self/stat", 16, procfs::clock_ticks())
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The first line of `program --version`-like output, for the report.
fn version(program: &Path, arg: &str) -> String {
    Command::new(program)
        .arg(arg)
        .output()
        .map(|o| {
            let text = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
            text.lines().next().unwrap_or("").trim().to_string()
        })
        .unwrap_or_default()
}

// ------------------------------------------------------------------------------------------- the run

/// One server's figures.
#[derive(Debug)]
struct Figures {
    server: Server,
    label: String,
    ready: f64,
    perf: Perf,
    /// The same queries while [`CHURN`] names change every second; `None` where not measured.
    churned: Option<Perf>,
    /// The same queries at the fixed rate (`--rate`), still and while the names change; `None` where not
    /// measured.
    fixed: Option<Perf>,
    churned_fixed: Option<Perf>,
    /// Resident memory at the end of the churned runs; `None` where not measured.
    churned_rss: Option<Resident>,
    /// The fixed rate's tail in each interleaved round ([`interleaved_tails`]); empty where not measured.
    rounds: Vec<Tail>,
    cpu: f64,
    /// Resident memory after the closed loop and the fixed rate.
    rss: Resident,
    /// Resident memory right after the closed loop.
    loaded_rss: Resident,
    empty_rss: Resident,
    /// Resident memory serving a quarter of the zone, after the empty zone's run.
    quarter_rss: Resident,
    load: String,
}

/// `server` started afresh to take changes, measured with each of `loads` in turn while [`Churn`] changes
/// [`CHURN`] names a second, and its resident memory at the end (what the changes left it holding);
/// `None` for a server whose changes are not measured. The last change must be served at the end.
fn churned_run(
    server: Server,
    full: &Dirs,
    dir: &Path,
    extdns: &Path,
    opts: &Options,
    last: &Query,
    loads: &[Load<'_>],
) -> Result<Option<(Vec<Perf>, Resident)>> {
    let who = server.name();
    let churn_dir = dir.join(format!("{who}-churn"));
    let port = extdns_test_support::server_port();
    let Some(churn) = Churn::of(server, port, &churn_dir) else {
        return Ok(None);
    };
    let mut proc = start(server, port, full, &churn_dir, extdns, opts, true)?;
    ready(&mut proc, port, last, Instant::now())?;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let changer = churning(churn, stop.clone());
    let perfs: Result<Vec<Perf>> = loads
        .iter()
        .enumerate()
        .map(|(i, load)| {
            eprintln!(
                "serve: {who}: dnsperf for {} s ({}) while {CHURN} names change every second",
                load.seconds,
                load.rate
                    .map_or("closed loop".to_string(), |q| format!("{q} queries/s")),
            );
            dnsperf(port, load, &churn_dir.join(format!("dnsperf-{i}.log")))
        })
        .collect();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let ticks = changer
        .join()
        .map_err(|_| anyhow::anyhow!("the churn thread panicked"))??;
    let perfs = perfs?;
    // The last change is served: the changes did land during the run.
    let probe = Query {
        name: format!("churn-0.{ZONE}"),
        qtype: "A",
        expect: Expect::Hit,
    };
    let want = churn_address(0, ticks).to_string();
    eventually(
        &format!("{who} serving the last change ({want})"),
        Duration::from_secs(30),
        Duration::from_millis(200),
        || {
            let out = extdns_test_support::dig::dig(port, &["+short", &probe.name, probe.qtype]);
            Ok(out.lines().any(|l| l.trim() == want).then_some(()))
        },
    )?;
    if let Some(status) = proc.exited() {
        bail!("{who} exited during the churn with {status}: {}", proc.log_tail(20));
    }
    let rss = resident_kib(proc.pid().context("the server's pid")?)?;
    proc.terminate(Duration::from_secs(5));
    for perf in &perfs {
        eprintln!(
            "serve: {who}: {ticks} seconds of changes; {:.0} queries/s, p99 {:.0} µs",
            perf.qps,
            perf.percentile(99.0)
        );
    }
    Ok(Some((perfs, rss)))
}

/// A fixed-rate run's tail, microseconds.
#[derive(Debug, Clone, Copy)]
struct Tail {
    p99: f64,
    p999: f64,
    p9999: f64,
}

impl Tail {
    fn of(perf: &Perf) -> Tail {
        Tail {
            p99: perf.percentile(99.0),
            p999: perf.percentile(99.9),
            p9999: perf.percentile(99.99),
        }
    }
}

/// The median of `values` (the mean of the middle two for an even count); NaN for none.
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// Each server's fixed-rate tail in `opts.rounds` interleaved rounds, in `opts.servers`' order. Every
/// server is started afresh on its own port and held stopped (SIGSTOP) but while it is asked: each round
/// asks each server in turn (the order rotated a place a round) for [`ROUND_WARMUP`] seconds, then for
/// `load`'s, so a change of the machine's speed during the run (a neighbour of the VM, the host's turbo)
/// falls on every server alike rather than on whichever ran then. A stopped server takes no CPU from the
/// one asked, on the CPU they share.
fn interleaved_tails(
    full: &Dirs,
    dir: &Path,
    extdns: &Path,
    opts: &Options,
    last: &Query,
    load: &Load<'_>,
    nx_share: f64,
) -> Result<Vec<Vec<Tail>>> {
    let mut running = Vec::new();
    for &server in &opts.servers {
        let who = server.name();
        let port = extdns_test_support::server_port();
        let mut proc = start(
            server,
            port,
            full,
            &dir.join(format!("{who}-rounds")),
            extdns,
            opts,
            false,
        )?;
        ready(&mut proc, port, last, Instant::now())?;
        proc.signal("-STOP")?;
        running.push((server, port, proc));
    }
    let mut tails = vec![Vec::new(); running.len()];
    for round in 0..opts.rounds {
        for turn in 0..running.len() {
            let at = (turn + round) % running.len();
            let (server, port, proc) = &mut running[at];
            let (who, port) = (server.name(), *port);
            let load = Load {
                dnssec: server.signed(),
                ..*load
            };
            let logs = dir.join(format!("{who}-rounds"));
            proc.signal("-CONT")?;
            let warmup = Load {
                seconds: ROUND_WARMUP,
                ..load
            };
            dnsperf(port, &warmup, &logs.join(format!("dnsperf-warmup-{round}.log")))?;
            eprintln!(
                "serve: round {} of {}: {who} for {} s at {} queries/s",
                round + 1,
                opts.rounds,
                load.seconds,
                opts.rate
            );
            let perf = dnsperf(port, &load, &logs.join(format!("dnsperf-{round}.log")))?;
            proc.signal("-STOP")?;
            if let Some(status) = proc.exited() {
                bail!("{who} exited during its round with {status}: {}", proc.log_tail(20));
            }
            check_rcodes(who, &perf, if server.compact_denial() { 0.0 } else { nx_share })?;
            tails[at].push(Tail::of(&perf));
        }
    }
    for (_, _, proc) in &mut running {
        // A stopped process takes SIGTERM only once resumed.
        proc.signal("-CONT")?;
        proc.terminate(Duration::from_secs(5));
    }
    Ok(tails)
}

/// Runs the benchmark and writes the report.
pub fn run(extdns: &Path, logs: &Path, opts: &Options) -> Result<()> {
    // This harness and dnsperf on one CPU, the servers on the other (all threads of this process).
    let me = std::process::id().to_string();
    extdns_test_support::proc::output({
        let mut c = Command::new("taskset");
        c.args(["-a", "-p", "-c", CLIENT_CPU, &me]);
        c
    })
    .context("pinning the harness to CPU 0 (taskset, util-linux)")?;
    let dir = logs.join("serve");
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("clearing {}", dir.display()))?;
    }
    let n = opts.records;
    let full = write_inputs(&dir.join("zone"), n)?;
    let empty = write_inputs(&dir.join("empty"), 0)?;
    let quarter = write_inputs(&dir.join("quarter"), n / 4)?;
    let qs = queries(n, QUERIES);
    let query_path = dir.join("queries.txt");
    std::fs::write(&query_path, query_file(&qs)).with_context(|| format!("writing {}", query_path.display()))?;
    let nx_share = qs.iter().filter(|q| q.expect == Expect::NxDomain).count() as f64 / qs.len() as f64;
    // The last record of the zone: a server answering it has loaded everything.
    let last = queries_for_record(n - 1);
    let sample: Vec<Query> = qs.iter().take(SAMPLE).cloned().chain([last.clone()]).collect();

    let mut figures: Vec<Figures> = Vec::new();
    let mut reference: Option<(&str, Vec<Answer>)> = None;
    for &server in &opts.servers {
        let who = server.name();
        let port = extdns_test_support::server_port();
        let started = Instant::now();
        let mut proc = start(server, port, &full, &dir.join(who), extdns, opts, false)?;
        let ready_s = ready(&mut proc, port, &last, started)?;
        eprintln!(
            "serve: {who}: answering all {n} records after {ready_s:.2} s; checking {} answers",
            sample.len()
        );
        let got = sample_answers(port, &sample, &dir.join(who), server.signed())?;
        check_answers(
            server,
            &sample,
            &got,
            reference.as_ref().map(|(name, a)| (*name, a.as_slice())),
        )
        .with_context(|| format!("dig's output: {}", dir.join(who).join(SAMPLE_OUTPUT).display()))?;
        if reference.is_none() {
            reference = Some((who, got));
        }
        let pid = proc.pid().context("the server's pid")?;
        let load = load_average();
        eprintln!(
            "serve: {who}: dnsperf for {} s, {} clients (load average {load})",
            opts.seconds, opts.clients
        );
        let measured = Load {
            queries: &query_path,
            seconds: opts.seconds,
            clients: opts.clients,
            dnssec: server.signed(),
            rate: None,
        };
        let cpu_before = cpu_seconds(pid)?;
        let perf = dnsperf(port, &measured, &dir.join(who).join("dnsperf.log"))?;
        let cpu = cpu_seconds(pid)? - cpu_before;
        let loaded_rss = resident_kib(pid)?;
        let fixed = (opts.rate > 0)
            .then(|| {
                eprintln!(
                    "serve: {who}: dnsperf for {} s at {} queries/s",
                    opts.seconds, opts.rate
                );
                dnsperf(port, &measured.at(opts.rate), &dir.join(who).join("dnsperf-fixed.log"))
            })
            .transpose()?;
        let rss = resident_kib(pid)?;
        if let Some(status) = proc.exited() {
            bail!("{who} exited during the run with {status}: {}", proc.log_tail(20));
        }
        let nx_expected = if server.compact_denial() { 0.0 } else { nx_share };
        check_rcodes(who, &perf, nx_expected)?;
        if let Some(f) = &fixed {
            check_rcodes(who, f, nx_expected)?;
        }
        proc.terminate(Duration::from_secs(5));
        eprintln!(
            "serve: {who}: {:.0} queries/s, p99 {:.0} µs, RSS {:.1} MiB",
            perf.qps,
            perf.percentile(99.0),
            rss.total / 1024.0
        );

        let mut loads = vec![measured];
        loads.extend((opts.rate > 0).then(|| measured.at(opts.rate)));
        let (churned, churned_rss) = match opts.churn {
            true => match churned_run(server, &full, &dir, extdns, opts, &last, &loads)? {
                Some((perfs, rss)) => (perfs, Some(rss)),
                None => (Vec::new(), None),
            },
            false => (Vec::new(), None),
        };
        for c in &churned {
            check_rcodes(who, c, nx_expected)?;
        }
        let mut churned = churned.into_iter();
        let (churned, churned_fixed) = (churned.next(), churned.next());

        // The baselines: the same server with an empty zone, and with a quarter of it, each after a
        // shorter run of the same queries.
        let short = Load {
            seconds: EMPTY_RUN.min(opts.seconds),
            ..measured
        };
        let apex = Query {
            name: format!("nx.{ZONE}"),
            qtype: "A",
            expect: Expect::NxDomain,
        };
        let baseline = |inputs: &Dirs, probe: &Query, name: &str| -> Result<Resident> {
            let baseline_dir = dir.join(format!("{who}-{name}"));
            let port = extdns_test_support::server_port();
            let mut proc = start(server, port, inputs, &baseline_dir, extdns, opts, false)?;
            ready(&mut proc, port, probe, Instant::now())?;
            dnsperf(port, &short, &baseline_dir.join("dnsperf.log"))?;
            let rss = resident_kib(proc.pid().context("the server's pid")?)?;
            proc.terminate(Duration::from_secs(5));
            Ok(rss)
        };
        let empty_rss = baseline(&empty, &apex, "empty")?;
        let quarter_rss = baseline(&quarter, &queries_for_record(n / 4 - 1), "quarter")?;

        let product = match server.family() {
            Server::Knot => version(&extdns_test_support::need("knotd"), "--version")
                .rsplit(' ')
                .next()
                .map(|v| format!("Knot DNS {v}"))
                .unwrap_or_else(|| "Knot DNS".into()),
            Server::CoreDns => opts
                .coredns
                .as_deref()
                .map(|c| version(c, "-version").replace("CoreDNS-", "CoreDNS "))
                .unwrap_or_default(),
            _ => "extdns".to_string(),
        };
        let label = if server.signed() {
            format!("{product} signed")
        } else {
            product
        };
        figures.push(Figures {
            server,
            label,
            ready: ready_s,
            perf,
            churned,
            fixed,
            churned_fixed,
            churned_rss,
            rounds: Vec::new(),
            cpu,
            rss,
            loaded_rss,
            empty_rss,
            quarter_rss,
            load,
        });
    }
    if opts.rate > 0 && opts.rounds > 0 {
        let measured = Load {
            queries: &query_path,
            seconds: opts.seconds,
            clients: opts.clients,
            dnssec: false,
            rate: Some(opts.rate),
        };
        let tails = interleaved_tails(&full, &dir, extdns, opts, &last, &measured, nx_share)?;
        for (f, tails) in figures.iter_mut().zip(tails) {
            f.rounds = tails;
        }
    }
    let report = report(opts, &mix(&qs), &figures);
    print!("{report}");
    if let Some(parent) = opts.report.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::write(&opts.report, &report).with_context(|| format!("writing {}", opts.report.display()))?;
    eprintln!(
        "serve: report in {}; inputs and logs in {}",
        opts.report.display(),
        dir.display()
    );
    Ok(())
}

/// The hit query of record `i`.
fn queries_for_record(i: usize) -> Query {
    let r = record(i);
    Query {
        name: if i == 0 {
            format!("x.apps.{ZONE}")
        } else {
            fqdn(&r.owner)
        },
        qtype: if r.rtype == "CNAME" { "A" } else { r.rtype },
        expect: Expect::Hit,
    }
}

/// The zone file and the manifests of `n` records under `dir`.
fn write_inputs(dir: &Path, n: usize) -> Result<Dirs> {
    let manifests = dir.join("manifests");
    std::fs::create_dir_all(&manifests).with_context(|| format!("creating {}", manifests.display()))?;
    let zone_file = dir.join(format!("{ZONE}.zone"));
    std::fs::write(&zone_file, self::zone_file(n)).with_context(|| format!("writing {}", zone_file.display()))?;
    std::fs::write(manifests.join("records.yaml"), dns_endpoints(n)).context("writing the DNSEndpoints")?;
    Ok(Dirs { zone_file, manifests })
}

/// The `p`-th percentile latency of `run`, or `n/a` for a run not measured.
fn percentile_of(run: Option<&Perf>, p: f64) -> String {
    run.map_or_else(|| "n/a".to_string(), |c| format!("{:.0} µs", c.percentile(p)))
}

/// The queries a second of `run`, or `n/a` for a run not measured.
fn qps_of(run: Option<&Perf>) -> String {
    run.map_or_else(|| "n/a".to_string(), |c| format!("{:.0}", c.qps))
}

/// The median of `run`'s rounds' percentile `pick` and their range, or `n/a` where none ran.
fn rounds_of(rounds: &[Tail], pick: fn(&Tail) -> f64) -> String {
    if rounds.is_empty() {
        return "n/a".to_string();
    }
    let values: Vec<f64> = rounds.iter().map(pick).collect();
    let (low, high) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &v| (l.min(v), h.max(v)));
    format!("{:.0} µs ({low:.0}–{high:.0})", median(values))
}

/// A row of the table: its name and how a server's figure is written (given the number of records).
type Row = (&'static str, fn(&Figures, f64) -> String);

/// Of `n` records, how many the quarter zone lacks: the records added between the two.
fn added_of(n: f64) -> f64 {
    n - (n / 4.0).floor()
}

/// Resident memory a record added between the quarter zone and the whole one (of `n` records) costs.
fn per_record_added(f: &Figures, n: f64) -> f64 {
    (f.rss.total - f.quarter_rss.total) * 1024.0 / added_of(n)
}

fn report(opts: &Options, mix: &str, figures: &[Figures]) -> String {
    let mut t = String::new();
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .and_then(|v| v.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_default();
    let dnsperf = Command::new(extdns_test_support::need("dnsperf"))
        .arg("-h")
        .output()
        .ok()
        .and_then(|o| {
            let text = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
            text.lines()
                .find_map(|l| l.trim().strip_prefix("Version ").map(|v| format!("dnsperf {v}")))
        })
        .unwrap_or_else(|| "dnsperf".to_string());
    let _ = writeln!(
        t,
        "### Serving {} records: dnsperf against Knot DNS, CoreDNS and extdns, unsigned and signed\n\n\
         One run, the servers one after the other on 127.0.0.1, each pinned to CPU {SERVER_CPU} with one worker \
         (Knot `udp-workers: 1`, CoreDNS `GOMAXPROCS=1` and its `file` plugin alone, extdns `--provider=dns-server` \
         from DNSEndpoint manifests with `--dns-server-udp-workers=1`); signed: Knot `dnssec-signing: on` (one ECDSA P-256 CSK, NSEC), CoreDNS's \
         `dnssec` plugin (an ECDSA P-256 key), extdns `--dns-server-dnssec-zone` (its ECDSA P-256 CSK, \
         NSEC), asked with DO. {} pinned to CPU {CLIENT_CPU}: UDP, one thread, {} clients, 100 queries \
         outstanding, {} s per server, `-v` for each query's latency. Queries: {QUERIES} lines, {mix}. \
         Every server's answers to {} of them were checked against the zone and the first server's first. \
         Machine: {} CPUs ({cpu}). Memory per record: RSS after the runs (the closed loop, then the fixed rate) less \
         RSS with an empty zone after a {} s run, divided by {}; \"right after the closed loop\": the same before the \
         fixed rate; \"per record added\": RSS after the runs less RSS serving the zone's first quarter (after the \
         empty zone's run), divided by three quarters of the records, which leaves out what the first load touches \
         once whatever the zone's size (code pages, pools). \"With 100 changes/s\": the server started again and measured alike while {CHURN} names \
         get a new address every second (Knot by one DNS UPDATE a second, extdns by the manifest it reads at each \
         one-second sync; CoreDNS's file plugin reloads whole files and is not measured). \"At the fixed rate\": \
         the same server asked again for as long at {} queries a second (`dnsperf -Q`), every server at the same \
         load (in the closed loop a faster server also makes dnsperf, on the other CPU, the busier program). \
         \"Interleaved rounds\": after all that, every server started again and held stopped (SIGSTOP) but for its \
         turn; {} rounds, each asking every server in turn ({ROUND_WARMUP} s to wake, then {} s at the fixed rate), \
         the order rotated each round: the median and the range of the rounds' percentiles.\n",
        opts.records,
        dnsperf,
        opts.clients,
        opts.seconds,
        SAMPLE + 1,
        // Not available_parallelism: this process is pinned to one CPU by now.
        std::fs::read_to_string("/proc/cpuinfo")
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with("processor"))
            .count(),
        EMPTY_RUN.min(opts.seconds),
        opts.records,
        opts.rate,
        opts.rounds,
        opts.seconds,
    );
    let mut header = "| |".to_string();
    let mut rule = "|---|".to_string();
    for f in figures {
        let _ = write!(header, " {} |", f.label);
        rule.push_str("---:|");
    }
    let _ = writeln!(t, "{header}\n{rule}");
    let n = opts.records as f64;
    let rows: [Row; 35] = [
        ("queries per second", |f, _| format!("{:.0}", f.perf.qps)),
        ("latency average", |f, _| format!("{:.0} µs", f.perf.average())),
        ("latency p50", |f, _| format!("{:.0} µs", f.perf.percentile(50.0))),
        ("latency p99", |f, _| format!("{:.0} µs", f.perf.percentile(99.0))),
        ("latency p99.9", |f, _| format!("{:.0} µs", f.perf.percentile(99.9))),
        ("queries sent / lost", |f, _| {
            format!("{} / {}", f.perf.sent, f.perf.lost)
        }),
        ("response size average", |f, _| format!("{:.0} B", f.perf.response_size)),
        ("server CPU during the run", |f, _| format!("{:.1} s", f.cpu)),
        ("queries answered per server CPU second", |f, _| {
            format!("{:.0}", f.perf.completed as f64 / f.cpu)
        }),
        ("dnsperf CPU during the run", |f, _| {
            format!("{:.1} s", f.perf.client_cpu)
        }),
        ("RSS after the runs", |f, _| format!("{:.1} MiB", f.rss.total / 1024.0)),
        ("RSS with an empty zone", |f, _| {
            format!("{:.1} MiB", f.empty_rss.total / 1024.0)
        }),
        ("memory per served record", |f, n| {
            format!("{:.0} B", (f.rss.total - f.empty_rss.total) * 1024.0 / n)
        }),
        ("of which anonymous (not code pages)", |f, n| {
            format!("{:.0} B", (f.rss.anon - f.empty_rss.anon) * 1024.0 / n)
        }),
        ("memory per record added (N/4 to N)", |f, n| {
            format!("{:.0} B", per_record_added(f, n))
        }),
        ("memory per record added: of which anonymous", |f, n| {
            format!("{:.0} B", (f.rss.anon - f.quarter_rss.anon) * 1024.0 / added_of(n))
        }),
        ("right after the closed loop: memory per served record", |f, n| {
            format!("{:.0} B", (f.loaded_rss.total - f.empty_rss.total) * 1024.0 / n)
        }),
        ("right after the closed loop: of which anonymous", |f, n| {
            format!("{:.0} B", (f.loaded_rss.anon - f.empty_rss.anon) * 1024.0 / n)
        }),
        ("start to the last record answered", |f, _| format!("{:.2} s", f.ready)),
        ("with 100 changes/s: queries per second", |f, _| {
            qps_of(f.churned.as_ref())
        }),
        ("with 100 changes/s: latency p50", |f, _| {
            percentile_of(f.churned.as_ref(), 50.0)
        }),
        ("with 100 changes/s: latency p99", |f, _| {
            percentile_of(f.churned.as_ref(), 99.0)
        }),
        ("with 100 changes/s: latency p99.9", |f, _| {
            percentile_of(f.churned.as_ref(), 99.9)
        }),
        ("at the fixed rate: queries per second", |f, _| qps_of(f.fixed.as_ref())),
        ("at the fixed rate: latency p50", |f, _| {
            percentile_of(f.fixed.as_ref(), 50.0)
        }),
        ("at the fixed rate: latency p99", |f, _| {
            percentile_of(f.fixed.as_ref(), 99.0)
        }),
        ("at the fixed rate: latency p99.9", |f, _| {
            percentile_of(f.fixed.as_ref(), 99.9)
        }),
        ("at the fixed rate with 100 changes/s: latency p99", |f, _| {
            percentile_of(f.churned_fixed.as_ref(), 99.0)
        }),
        ("at the fixed rate with 100 changes/s: latency p99.9", |f, _| {
            percentile_of(f.churned_fixed.as_ref(), 99.9)
        }),
        ("at the fixed rate, interleaved rounds: p99 median (range)", |f, _| {
            rounds_of(&f.rounds, |t| t.p99)
        }),
        ("at the fixed rate, interleaved rounds: p99.9 median (range)", |f, _| {
            rounds_of(&f.rounds, |t| t.p999)
        }),
        (
            "at the fixed rate, interleaved rounds: p99.99 median (range)",
            |f, _| rounds_of(&f.rounds, |t| t.p9999),
        ),
        ("with 100 changes/s: memory per served record", |f, n| {
            f.churned_rss.as_ref().map_or("n/a".into(), |rss| {
                format!("{:.0} B", (rss.total - f.empty_rss.total) * 1024.0 / n)
            })
        }),
        ("with 100 changes/s: of which anonymous", |f, n| {
            f.churned_rss.as_ref().map_or("n/a".into(), |rss| {
                format!("{:.0} B", (rss.anon - f.empty_rss.anon) * 1024.0 / n)
            })
        }),
        ("load average before the run", |f, _| f.load.clone()),
    ];
    for (name, value) in rows {
        let mut row = format!("| {name} |");
        for f in figures {
            let _ = write!(row, " {} |", value(f, n));
        }
        let _ = writeln!(t, "{row}");
    }
    t.push('\n');
    let find = |s: Server| figures.iter().find(|f| f.server == s);
    if let (Some(e), Some(k), Some(c)) = (find(Server::Extdns), find(Server::Knot), find(Server::CoreDns)) {
        let yes = |ok: bool| if ok { "met" } else { "**missed**" };
        let _ = writeln!(
            t,
            "Targets (issue 36): queries per second at least CoreDNS's: {}; at least half of Knot's: {}; p99 no worse \
             than CoreDNS's: {}.\n",
            yes(e.perf.qps >= c.perf.qps),
            yes(e.perf.qps >= k.perf.qps / 2.0),
            yes(e.perf.percentile(99.0) <= c.perf.percentile(99.0)),
        );
    }
    let per_record = |f: &Figures| (f.rss.total - f.empty_rss.total) * 1024.0 / n;
    for (ours, knot) in [
        (Server::Extdns, Server::Knot),
        (Server::ExtdnsSigned, Server::KnotSigned),
    ] {
        let (Some(e), Some(k)) = (find(ours), find(knot)) else {
            continue;
        };
        let yes = |ok: bool| if ok { "met" } else { "**missed**" };
        let still = e.churned.as_ref().map_or("not measured", |c| {
            yes(c.percentile(99.0) <= 2.0 * e.perf.percentile(99.0))
        });
        let _ = writeln!(
            t,
            "Targets (issue 49), {} against {}: queries per second at least Knot's: {}; p99.9 no worse than Knot's: \
             {}; memory per served record no more than Knot's: {}; memory per record added no more than Knot's: {}; \
             p99 with 100 changes/s within twice the still zone's: {still}.\n",
            e.label,
            k.label,
            yes(e.perf.qps >= k.perf.qps),
            yes(e.perf.percentile(99.9) <= k.perf.percentile(99.9)),
            yes(per_record(e) <= per_record(k)),
            yes(per_record_added(e, n) <= per_record_added(k, n)),
        );
        if let (Some(ef), Some(kf)) = (&e.fixed, &k.fixed) {
            let still = e
                .churned_fixed
                .as_ref()
                .map_or("not measured", |c| yes(c.percentile(99.0) <= 2.0 * ef.percentile(99.0)));
            let _ = writeln!(
                t,
                "At the fixed rate ({} queries/s), {} against {}: p99.9 no worse than Knot's: {}; p99 with 100 \
                 changes/s within twice the still zone's: {still}.\n",
                opts.rate,
                e.label,
                k.label,
                yes(ef.percentile(99.9) <= kf.percentile(99.9)),
            );
        }
        if !e.rounds.is_empty() && !k.rounds.is_empty() {
            let p999 = |f: &Figures| median(f.rounds.iter().map(|t| t.p999).collect());
            let _ = writeln!(
                t,
                "Over {} interleaved rounds at the fixed rate, {} against {}: median p99.9 no worse than Knot's: {}.\n",
                e.rounds.len(),
                e.label,
                k.label,
                yes(p999(e) <= p999(k)),
            );
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_zone_mixes_the_types_and_has_one_wildcard() {
        let mut count: BTreeMap<&str, usize> = BTreeMap::new();
        for i in 0..10_000 {
            *count.entry(record(i).rtype).or_default() += 1;
        }
        assert_eq!(
            count,
            [
                ("A", 5500),
                ("AAAA", 1500),
                ("CNAME", 1000),
                ("MX", 500),
                ("SRV", 500),
                ("TXT", 1000)
            ]
            .into()
        );
        assert_eq!(record(0).owner, "*.apps");
        assert_eq!(record(14).zone_data, "web-1.example.org.");
        assert_eq!(record(14).target, "web-1.example.org");
        assert_eq!(record(1).rtype, "A", "CNAMEs point at A records");
        assert_eq!(record(11).zone_data, "2001:db8::b");
        assert_eq!(record(19).owner, "_https._tcp.svc-19");
        assert_eq!(record(19).target, "10 5 443 node-19.example.net.");
        assert_eq!(record(16).zone_data, format!("\"{}\"", record(16).target));
        let zone = zone_file(25);
        assert!(zone.contains("*.apps A 192.0.2.80\n"), "{zone}");
        assert!(zone.contains("mail-18 MX 10 mx4.mail.example.net.\n"), "{zone}");
        assert_eq!(zone.lines().count(), 5 + 25);
    }

    #[test]
    fn the_manifests_hold_the_zone_file_records() {
        let yaml = dns_endpoints(250);
        assert_eq!(yaml.matches("kind: DNSEndpoint").count(), 3);
        assert_eq!(yaml.matches("dnsName:").count(), 250);
        assert!(yaml.contains(
            "  - {dnsName: \"*.apps.example.org\", recordType: A, recordTTL: 300, targets: [\"192.0.2.80\"]}\n"
        ));
        assert!(yaml.contains(
            "{dnsName: \"www-34.example.org\", recordType: CNAME, recordTTL: 300, targets: [\"web-21.example.org\"]}"
        ));
        assert!(dns_endpoints(0).is_empty());
    }

    #[test]
    fn the_queries_are_four_fifths_hits_and_say_what_they_expect() {
        let n = 1000;
        let qs = queries(n, 20_000);
        assert_eq!(qs, queries(n, 20_000), "the same every run");
        let share = |e: Expect| qs.iter().filter(|q| q.expect == e).count();
        assert_eq!(
            (share(Expect::Hit), share(Expect::NxDomain), share(Expect::NoData)),
            (16_000, 2000, 2000)
        );
        for q in &qs {
            match q.expect {
                Expect::NxDomain => assert!(q.name.starts_with("nx-")),
                Expect::NoData => {
                    assert!(q.name.starts_with("web-") && q.qtype != "A", "{q:?}");
                    let i: usize = q.name["web-".len()..]
                        .split('.')
                        .next()
                        .unwrap_or("")
                        .parse()
                        .unwrap_or(n);
                    assert!(i < n && record(i).rtype == "A", "{q:?}");
                }
                Expect::Hit => assert!(q.qtype != "CNAME"),
            }
        }
        // Spread over the zone: most records are asked for.
        let distinct: std::collections::BTreeSet<&str> = qs.iter().map(|q| q.name.as_str()).collect();
        assert!(distinct.len() > 900, "{}", distinct.len());
        assert!(mix(&qs).starts_with("80 % hits"), "{}", mix(&qs));
    }

    #[test]
    fn dig_batch_output_reads_as_one_answer_per_response() {
        let out = "\
;; Got answer:
;; ->>HEADER<<- opcode: QUERY, status: NOERROR, id: 4242
;; flags: qr aa; QUERY: 1, ANSWER: 2, AUTHORITY: 0, ADDITIONAL: 1

;; OPT PSEUDOSECTION:
; EDNS: version: 0, flags:; udp: 1232
;; ANSWER SECTION:
www-14.example.org.\t300\tIN\tCNAME\tWEB-1.example.org.
web-1.example.org.\t300\tIN\tA\t10.0.0.1

;; Got answer:
;; ->>HEADER<<- opcode: QUERY, status: NXDOMAIN, id: 7
;; flags: qr aa; QUERY: 1, ANSWER: 0, AUTHORITY: 1, ADDITIONAL: 1

;; AUTHORITY SECTION:
example.org.\t30\tIN\tSOA\tns1.example.org. hostmaster.example.org. 1 3600 600 604800 30
";
        let a = parse_dig(out);
        assert_eq!(a.len(), 2);
        assert_eq!(
            a[0].answer,
            [
                "web-1.example.org. 300 in a 10.0.0.1",
                "www-14.example.org. 300 in cname web-1.example.org."
            ]
        );
        assert!(a[0].aa && matches(&a[0], Expect::Hit) && !matches(&a[0], Expect::NoData));
        assert_eq!(a[1].authority, ["example.org. soa"]);
        assert!(matches(&a[1], Expect::NxDomain) && !matches(&a[1], Expect::NoData));
        let mut not_aa = a[1].clone();
        not_aa.aa = false;
        assert!(!matches(&not_aa, Expect::NxDomain), "an authoritative answer or none");
        assert!(parse_dig(";; connection timed out; no servers could be reached\n").is_empty());
    }

    #[test]
    fn a_different_answer_fails_the_check() {
        let sample = [queries_for_record(1)];
        let good = Answer {
            status: "NOERROR".into(),
            aa: true,
            answer: vec!["web-1.example.org. 300 in a 10.0.0.1".into()],
            authority: vec![],
        };
        let mut ns = good.clone();
        ns.authority = vec!["example.org. ns".into()];
        assert!(
            check_answers(Server::Extdns, &sample, &[ns], Some(("a", std::slice::from_ref(&good)))).is_ok(),
            "positive authority is free"
        );
        let mut other = good.clone();
        other.answer = vec!["web-1.example.org. 60 in a 10.0.0.1".into()];
        let e = check_answers(
            Server::Extdns,
            &sample,
            &[other],
            Some(("a", std::slice::from_ref(&good))),
        )
        .err();
        assert!(e.is_some_and(|e| e.to_string().contains("differently")));
        let refused = Answer {
            status: "REFUSED".into(),
            ..good
        };
        assert!(check_answers(Server::Extdns, &sample, &[refused], None).is_err());
    }

    #[test]
    fn dnsperf_output_gives_statistics_and_latency_percentiles() {
        let mut p = Perf::default();
        for l in [
            "[Status] Sending queries (to 127.0.0.1:15353)",
            "> NOERROR web-1.example.org A 0.000145",
            "> NXDOMAIN nx-3.example.org A 0.000025",
            "> T nx-4.example.org A",
            "> NOERROR web-1.example.org AAAA 0.000010",
            "  Queries sent:         205983",
            "  Queries completed:    205980 (100.00%)",
            "  Queries lost:         3 (0.00%)",
            "  Average packet size:  request 31, response 68",
            "  Queries per second:   102982.334572",
        ] {
            p.read_line(l);
        }
        p.latencies.sort_unstable();
        assert_eq!((p.sent, p.completed, p.lost), (205_983, 205_980, 3));
        assert_eq!((p.request_size, p.response_size), (31.0, 68.0));
        assert!((p.qps - 102_982.33).abs() < 0.01);
        assert_eq!(p.latencies, [10, 25, 145]);
        assert_eq!(
            (p.percentile(50.0), p.percentile(99.0), p.percentile(0.0)),
            (25.0, 145.0, 10.0)
        );
        assert!((p.average() - 60.0).abs() < 1e-9);
        assert_eq!(
            p.rcodes,
            [("NOERROR".to_string(), 2), ("NXDOMAIN".to_string(), 1)].into()
        );
        assert!(check_rcodes("x", &p, 1.0 / 3.0).is_ok());
        assert!(check_rcodes("x", &p, 0.1).is_err(), "a wrong NXDOMAIN share fails");
        p.read_line("> SERVFAIL web-2.example.org A 0.000010");
        assert!(check_rcodes("x", &p, 1.0 / 3.0).is_err());
    }

    #[test]
    fn signed_answers_compare_without_their_signatures_and_compact_denial_is_a_miss() {
        let nx = Query {
            name: "nx-1.example.org".into(),
            qtype: "A",
            expect: Expect::NxDomain,
        };
        let hit = queries_for_record(1);
        let knot = Answer {
            status: "NXDOMAIN".into(),
            aa: true,
            answer: vec![],
            authority: vec![
                "example.org. soa".into(),
                "example.org. rrsig".into(),
                "nx-0.example.org. nsec".into(),
            ],
        };
        let compact = Answer {
            status: "NOERROR".into(),
            authority: vec!["example.org. soa".into(), "nx-1.example.org. nsec".into()],
            ..knot.clone()
        };
        assert!(matches_from(Server::CoreDnsSigned, &compact, Expect::NxDomain));
        assert!(
            !matches_from(Server::KnotSigned, &compact, Expect::NxDomain),
            "Knot says NXDOMAIN"
        );
        assert!(!matches(&compact, Expect::NxDomain), "unsigned, NOERROR is not a miss");
        let reference = [knot];
        assert!(
            check_answers(
                Server::CoreDnsSigned,
                std::slice::from_ref(&nx),
                std::slice::from_ref(&compact),
                Some(("knot-signed", &reference))
            )
            .is_ok()
        );
        let signed = Answer {
            status: "NOERROR".into(),
            aa: true,
            answer: vec![
                "web-1.example.org. 300 in a 10.0.0.1".into(),
                "web-1.example.org. 300 in rrsig a 13 3 300 x y z".into(),
            ],
            authority: vec![],
        };
        let mut bare = signed.clone();
        bare.answer.truncate(1);
        assert!(matches_from(Server::CoreDnsSigned, &signed, Expect::Hit));
        assert!(
            !matches_from(Server::CoreDnsSigned, &bare, Expect::Hit),
            "a signed hit carries its RRSIG"
        );
        assert!(
            check_answers(
                Server::CoreDnsSigned,
                std::slice::from_ref(&hit),
                std::slice::from_ref(&signed),
                Some(("extdns", std::slice::from_ref(&bare)))
            )
            .is_ok()
        );
    }

    #[test]
    fn the_churn_gives_every_name_a_new_address_each_second() -> Result<()> {
        let dir = tempfile::tempdir()?;
        let file = dir.path().join(CHURN_FILE);
        Churn::Extdns(file.clone()).apply(7)?;
        let yaml = std::fs::read_to_string(&file)?;
        assert_eq!(yaml.matches("dnsName:").count(), CHURN);
        assert!(
            yaml.contains(
                "{dnsName: \"churn-0.example.org\", recordType: A, recordTTL: 300, targets: [\"10.200.7.1\"]}"
            ),
            "{yaml}"
        );
        assert_ne!(churn_address(5, 7), churn_address(5, 8));
        assert_ne!(churn_address(5, 7), churn_address(6, 7));
        Ok(())
    }

    #[test]
    fn a_median_takes_the_middle_value_or_the_mean_of_the_middle_two() {
        assert_eq!(median(vec![300.0, 100.0, 200.0]), 200.0);
        assert_eq!(median(vec![400.0, 100.0, 300.0, 200.0]), 250.0);
        assert!(median(Vec::new()).is_nan());
        let rounds = [
            Tail {
                p99: 1.0,
                p999: 300.0,
                p9999: 9.0,
            },
            Tail {
                p99: 1.0,
                p999: 120.0,
                p9999: 9.0,
            },
            Tail {
                p99: 1.0,
                p999: 210.0,
                p9999: 9.0,
            },
        ];
        assert_eq!(rounds_of(&rounds, |t| t.p999), "210 µs (120–300)");
        assert_eq!(rounds_of(&[], |t| t.p999), "n/a");
    }

    #[test]
    fn options_default_to_ten_thousand_records_on_six_servers() -> Result<()> {
        let o = Options::parse(&["--coredns=/x".into()])?;
        assert_eq!((o.records, o.seconds, o.clients, o.churn), (10_000, 30, 10, true));
        assert_eq!(o.servers, Server::ALL);
        assert_eq!(o.rate, DEFAULT_RATE, "a fixed-rate run beside the closed loop");
        assert_eq!(o.rounds, DEFAULT_ROUNDS, "interleaved rounds at the end");
        let o = Options::parse(&["--servers=knot".into(), "--rate=0".into(), "--rounds=0".into()])?;
        assert_eq!((o.rate, o.rounds), (0, 0), "the closed loop alone");
        let o = Options::parse(&["--servers=knot-signed,extdns-signed".into(), "--churn=off".into()])?;
        assert_eq!(
            (o.servers.as_slice(), o.churn),
            ([Server::KnotSigned, Server::ExtdnsSigned].as_slice(), false)
        );
        assert!(
            Options::parse(&["--servers=coredns-signed".into()]).is_err(),
            "CoreDNS needs its binary"
        );
        let o = Options::parse(&["--servers".into(), "knot,extdns".into(), "--records=500".into()])?;
        assert_eq!(
            (o.records, o.servers.as_slice()),
            (500, [Server::Knot, Server::Extdns].as_slice())
        );
        assert!(Options::parse(&[]).is_err(), "CoreDNS needs its binary");
        assert!(Options::parse(&["--servers=bind".into()]).is_err());
        assert!(Options::parse(&["--servers=knot".into(), "--records=5".into()]).is_err());
        Ok(())
    }
}
