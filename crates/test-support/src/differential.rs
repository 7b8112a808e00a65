//! What the differential tests share: external-dns v0.23.0, unmodified, and extdns run from the same
//! objects, each against a fake of its own (or both against one), and their records compared step by step.
//! extdns reads manifests; external-dns reads the same endpoints from its connector source ([`Objects`]).
//! External-dns's cloud SDKs reach the fakes at their real host names through a TLS proxy ([`proxy`],
//! [`external_dns`]), and a run that could reach the Internet is kept off it by re-running the test in a
//! network namespace with only loopback ([`inside_loopback_namespace`]).

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use tempfile::TempDir;

use crate::cli;
use crate::connector::{self, GobEndpoint};
use crate::manifests::lb_service;
use crate::tls_proxy::TlsProxy;

/// Set inside the network namespace a differential re-runs itself in.
const INSIDE: &str = "EXTDNS_TEST_NETNS";

/// What a run inside the namespace prints last, so the outside knows the scenario ran (and was not
/// filtered out).
pub const DONE: &str = "differential: done inside a loopback-only network namespace";

/// Runs the test named `test` of this test binary again inside a network namespace with only loopback, so
/// nothing can reach a cloud or a metadata address even if a variable were missing. `true` when this is
/// the run inside (the caller goes on with the scenario and prints [`DONE`] last); `false` outside, once
/// the run inside has passed.
pub fn inside_loopback_namespace(test: &str) -> bool {
    if std::env::var_os(INSIDE).is_some() {
        // /proc/net is the namespace's own (sysfs still shows the host's).
        let links: Vec<String> = std::fs::read_to_string("/proc/net/dev")
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split_once(':').map(|(name, _)| name.trim().to_string()))
            .collect();
        assert_eq!(links, ["lo"], "only loopback in the namespace");
        return true;
    }
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("{e}"));
    let out = Command::new("unshare")
        .args(["--net", "--map-root-user", "--", "sh", "-c"])
        .arg("ip link set lo up || exit 97; exec \"$0\" \"$@\"")
        .arg(exe)
        .args(["--exact", test, "--nocapture"])
        .env(INSIDE, "1")
        .output()
        .unwrap_or_else(|e| panic!("cannot run unshare (util-linux): {e}"));
    let all = cli::text(&out);
    assert_eq!(out.status.code(), Some(0), "inside the namespace:\n{all}");
    assert!(all.contains(DONE), "the scenario ran inside:\n{all}");
    false
}

/// The test `test` of this test binary as a differential runs it: skipped where external-dns, a network
/// namespace or OpenSSL is missing; otherwise re-run inside a loopback-only network namespace
/// ([`inside_loopback_namespace`]), where `scenario` runs and [`DONE`] is printed after it.
pub fn in_loopback_namespace(test: &str, scenario: impl FnOnce()) {
    crate::require!(ExternalDns, NetNamespace, OpenSsl);
    if inside_loopback_namespace(test) {
        scenario();
        println!("{DONE}");
    }
}

/// A TLS proxy that sends each of `hosts` to the fake at `to`.
pub fn proxy(hosts: &[&str], to: SocketAddr) -> TlsProxy {
    let routes: Vec<(&str, SocketAddr)> = hosts.iter().map(|h| (*h, to)).collect();
    TlsProxy::start(&routes).unwrap_or_else(|e| panic!("the TLS proxy: {e:#}"))
}

/// The objects of one step, as both controllers see them: manifests for extdns in [`Objects::dir`], the
/// same endpoints from external-dns's connector source on [`Objects::source`].
pub struct Objects {
    /// extdns's `--manifests` directory.
    pub dir: TempDir,
    /// The connector source's port (`--connector-source-server=127.0.0.1:<port>`).
    pub source: u16,
    endpoints: Arc<Mutex<Vec<GobEndpoint>>>,
}

impl Objects {
    /// No objects yet, the connector source serving.
    pub fn serve() -> Objects {
        let endpoints = Arc::new(Mutex::new(Vec::new()));
        Objects {
            dir: cli::tempdir(),
            source: connector::serve(endpoints.clone()),
            endpoints,
        }
    }

    /// The next step's objects: `manifests` for extdns and `endpoints`, the same records, for external-dns.
    pub fn publish(&self, manifests: &str, endpoints: Vec<GobEndpoint>) {
        cli::write_manifests(self.dir.path(), manifests);
        if let Ok(mut e) = self.endpoints.lock() {
            *e = endpoints;
        }
    }

    /// One LoadBalancer Service per `(object name, hostname, IPv4 address)`: manifests for extdns, and the
    /// same A records (no TTL) from the connector source for external-dns.
    pub fn publish_a_records(&self, records: &[(&str, &'static str, &str)]) {
        let docs: Vec<String> = records
            .iter()
            .map(|(name, host, ip)| lb_service(name, host, &[ip], &[]))
            .collect();
        let endpoints = records
            .iter()
            .map(|(_, host, ip)| GobEndpoint::new(host, "A", &[ip], 0))
            .collect();
        self.publish(&docs.join("---\n"), endpoints);
    }

    /// The two Services the cloud differentials publish in `zone` (`web` with the IPv4 address `web` and an
    /// IPv6 one at TTL 120, `api` with one address), `names` their web and api names; nothing with `None`.
    pub fn publish_web_and_api(&self, zone: &str, names: [&'static str; 2], web: Option<&str>) {
        match web {
            Some(web) => self.publish(&web_and_api(zone, web), web_and_api_endpoints(names, web)),
            None => self.publish("", Vec::new()),
        }
    }
}

/// `web.<zone>` with an IPv4 address `web` and an IPv6 one at TTL 120, `api.<zone>` with one address and
/// no TTL.
fn web_and_api(zone: &str, web: &str) -> String {
    [
        lb_service(
            "web",
            &format!("web.{zone}"),
            &[web, "2001:db8::10"],
            &[("external-dns.kubernetes.io/ttl", "120")],
        ),
        lb_service("api", &format!("api.{zone}"), &["192.0.2.20"], &[]),
    ]
    .join("---\n")
}

/// What [`web_and_api`] publishes, as external-dns's connector source hands it over; `names` are its web
/// and api names.
fn web_and_api_endpoints(names: [&'static str; 2], web: &str) -> Vec<GobEndpoint> {
    vec![
        GobEndpoint::new(names[0], "A", &[web], 120),
        GobEndpoint::new(names[0], "AAAA", &["2001:db8::10"], 120),
        GobEndpoint::new(names[1], "A", &["192.0.2.20"], 0),
    ]
}

/// external-dns v0.23.0 (the build `cargo xtask test` makes) for one sync of the connector source's
/// endpoints: its environment only the variables whose names start with one of `keep`, and, with a
/// `proxy`, every HTTPS request sent through it with its CA trusted. The caller adds the provider's flags.
pub fn external_dns(proxy: Option<&TlsProxy>, home: &Path, source: u16, keep: &[&str]) -> Command {
    let program =
        crate::env_program("EXTDNS_TEST_EXTERNAL_DNS").unwrap_or_else(|e| panic!("{e}: run `cargo xtask test`"));
    let keep: Vec<&str> = keep.iter().copied().chain(["HTTP", "NO_PROXY", "SSL_CERT"]).collect();
    let mut cmd = cli::command(program, &keep);
    if let Some(proxy) = proxy {
        cmd.env("HTTPS_PROXY", &proxy.url)
            .env("HTTP_PROXY", &proxy.url)
            .env("SSL_CERT_FILE", &proxy.ca_file);
    }
    cmd.env("HOME", home)
        .args(["--once", "--source=connector"])
        .arg(format!("--connector-source-server=127.0.0.1:{source}"))
        .arg(format!("--metrics-address=127.0.0.1:{}", crate::free_port()));
    cmd
}

/// One half of a take-over: `run` (one controller on the records the other wrote) succeeds and finds what
/// it wants there, so the fake's count of writes (`writes`) is what it was.
pub fn assert_writes_nothing(what: &str, writes: impl Fn() -> usize, run: impl FnOnce() -> Output) {
    let before = writes();
    cli::ok(&run(), what);
    assert_eq!(writes(), before, "{what}: finds nothing to change");
}

/// Two fakes of one cloud, `ours` for extdns and `theirs` for external-dns, each behind a TLS proxy of its
/// own at the cloud's host names.
pub struct TwoFakes<F> {
    /// extdns's fake.
    pub ours: F,
    /// external-dns's fake.
    pub theirs: F,
    /// The proxy in front of `ours`, for external-dns's take-over of extdns's zone.
    pub to_ours: TlsProxy,
    /// The proxy in front of `theirs`.
    pub to_theirs: TlsProxy,
}

impl<F> TwoFakes<F> {
    /// Two fakes from `start`, each behind a proxy of [`proxy`] for `hosts`, reaching the fake at `addr`.
    pub fn start(start: impl Fn() -> F, addr: impl Fn(&F) -> SocketAddr, hosts: &[&str]) -> TwoFakes<F> {
        let (ours, theirs) = (start(), start());
        let (to_ours, to_theirs) = (proxy(hosts, addr(&ours)), proxy(hosts, addr(&theirs)));
        TwoFakes {
            ours,
            theirs,
            to_ours,
            to_theirs,
        }
    }
}

/// The steps every cloud differential takes with [`TwoFakes`]: what differs between clouds is how each
/// controller is run and what is read off a fake.
pub struct CloudPair<'a, F> {
    /// The two fakes and their proxies.
    pub fakes: &'a TwoFakes<F>,
    /// The objects both controllers read.
    pub objects: &'a Objects,
    /// The zone the objects are published in.
    pub zone: &'a str,
    /// The web and api names, as external-dns's connector source hands them over.
    pub names: [&'static str; 2],
    /// extdns for one sync of [`Objects::dir`] against a fake.
    pub extdns: &'a dyn Fn(&F) -> Output,
    /// external-dns for one sync against a fake through the proxy in front of it.
    pub external_dns: &'a dyn Fn(&F, &TlsProxy) -> Output,
    /// A fake's records as both controllers must leave them.
    pub compared: fn(&F) -> Vec<String>,
    /// How many writes a fake has answered.
    pub writes: fn(&F) -> usize,
}

impl<F> CloudPair<'_, F> {
    /// One step: the web and api Services published (`web` the web address, nothing with `None`), each
    /// controller syncs its own fake, and both fakes hold the same records.
    pub fn step(&self, web: Option<&str>, what: &str) {
        self.objects.publish_web_and_api(self.zone, self.names, web);
        cli::ok(&(self.extdns)(&self.fakes.ours), &format!("extdns: {what}"));
        cli::ok(
            &(self.external_dns)(&self.fakes.theirs, &self.fakes.to_theirs),
            &format!("external-dns: {what}"),
        );
        assert_eq!(
            (self.compared)(&self.fakes.ours),
            (self.compared)(&self.fakes.theirs),
            "{what}: the same records"
        );
    }

    /// After the create step: an update and a delete step (nothing left), a create again, and the take-over
    /// both ways: what one wrote, the other finds as it wants it. Neither proxy refused a connection.
    pub fn update_delete_and_take_over(&self) {
        self.step(Some("192.0.2.11"), "update");
        self.step(None, "delete");
        assert_eq!(
            (self.compared)(&self.fakes.ours),
            Vec::<String>::new(),
            "delete: nothing left"
        );
        self.step(Some("192.0.2.10"), "create again");
        assert_writes_nothing(
            "extdns on external-dns's zone",
            || (self.writes)(&self.fakes.theirs),
            || (self.extdns)(&self.fakes.theirs),
        );
        assert_writes_nothing(
            "external-dns on extdns's zone",
            || (self.writes)(&self.fakes.ours),
            || (self.external_dns)(&self.fakes.ours, &self.fakes.to_ours),
        );
        assert!(self.fakes.to_ours.log().refused.is_empty() && self.fakes.to_theirs.log().refused.is_empty());
    }
}

/// A fake's lines with the ownership records' `resource` label dropped: external-dns's connector source
/// names no object, extdns's Services do; everything else must be the same. `quote` ends the label's value
/// as the fake renders it (`"`, or `\"` inside JSON).
pub fn without_resource_label(lines: Vec<String>, quote: &str) -> Vec<String> {
    lines
        .into_iter()
        .map(|l| match l.find(",external-dns/resource=") {
            Some(at) => {
                let end = l[at..].find(quote).map_or(l.len(), |e| at + e);
                format!("{}{}", &l[..at], &l[end..])
            }
            None => l,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resource_label_alone_is_dropped() {
        let lines = vec![
            "a.example.org. TXT 300 \"heritage=external-dns,external-dns/owner=e2e,external-dns/resource=service/default/web\"".to_string(),
            "a.example.org. A 300 192.0.2.1".to_string(),
        ];
        assert_eq!(
            without_resource_label(lines, "\""),
            [
                "a.example.org. TXT 300 \"heritage=external-dns,external-dns/owner=e2e\"",
                "a.example.org. A 300 192.0.2.1"
            ]
        );
    }

    #[test]
    fn web_and_api_publish_the_same_records_both_ways() {
        let manifests = web_and_api("example.org", "192.0.2.10");
        let endpoints = web_and_api_endpoints(["web.example.org", "api.example.org"], "192.0.2.10");
        for e in &endpoints {
            assert!(manifests.contains(e.dns_name), "{} in the manifests", e.dns_name);
            assert!(e.targets.iter().all(|t| manifests.contains(t.as_str())), "{e:?}");
        }
        assert_eq!(endpoints.len(), 3);
    }
}
