//! Shared names across two real clusters (issue 47, docs/shared-names.md): two kube-apiservers, an extdns
//! each (owners `cluster-one` and `cluster-two`), one zone, with a short `--interval` and
//! `--shared-owner-ttl` so a shared name's whole life fits in a couple of minutes.
//!
//! On BIND ([`run`]): the name answers with both clusters' targets; one cluster's Service deleted removes
//! only its target; `kill -9` of one extdns removes its targets after the TTL and not before (both sides of
//! the bound, from the dead process's last heartbeat as the zone holds it), while a name it alone still
//! owns keeps its target (the last owner is never pruned); the restarted extdns takes its targets back;
//! external-dns v0.23.0 as a third owner keeps its own name and leaves the shared ones alone (and v0.22.0 too); one extdns's
//! writes refused for longer than the TTL (its TSIG key's grant taken out of BIND's update policy) get it
//! pruned, and when they are accepted again it restores its targets without the other losing any; a second
//! extdns under cluster one's owner id writes nothing shared, warns naming both instances and counts the
//! conflict. Neither cluster's plain names (nor external-dns's) are touched by anyone else throughout.
//!
//! On the strict Route53 fake ([`route53`]; moto's Route53 cannot take two writers, see there): the core (union, one Service deleted, the `kill -9` bound, the restart).
//!
//! Both print the time from the `kill -9` to the dead cluster's targets leaving the record.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use extdns_test_support::dns_server::ExtraKey;
use extdns_test_support::route53_fake::Fake;
use extdns_test_support::{http_get, try_free_port};
use serde_json::{Value, json};

use crate::control_plane::ControlPlane;
use crate::controllers::{Run, Which, wait_for_log, zone_flags};
use crate::dns::{self, DnsServer, Kind, Record, ZONE, Zone};
use crate::objects as o;
use crate::proc::{Proc, eventually};

use super::Ctx;
use super::owners::owner_run;

/// The shared name both clusters publish throughout.
const WEB: &str = "shared.example.org";
/// A second shared name, whose Service cluster one deletes.
const API: &str = "shared-api.example.org";
/// How often each extdns syncs, and its heartbeat period.
const INTERVAL: u64 = 2;
/// `--shared-owner-ttl`: five heartbeats, so a live owner is never pruned on a busy machine.
const TTL: u64 = 10;
/// What a busy machine may add to the TTL and one interval before a dead owner is pruned: the survivor's
/// sync taking long, the zone read and the write.
const SLACK: u64 = 20;
/// How long a change may take to show while both run (a sync, a write, a machine shared with builds).
const CONVERGE: Duration = Duration::from_secs(60);
/// Cluster two's own TSIG key: its writes are refused by taking this key's grant out of the update policy.
const TWO_KEY: &str = "cluster-two-key";
const TWO_SECRET: &str = "Y2x1c3Rlci10d28tc2VjcmV0LWZvci10aGUtZTJlLXRlc3Q=";
/// The line BIND logs when it read its configuration again.
const RELOADED: &str = "reloading configuration succeeded";

/// One cluster: its API server, namespace, owner id and addresses.
struct Cluster<'a> {
    cp: &'a ControlPlane,
    ns: String,
    owner: &'static str,
    web: &'static str,
    api: &'static str,
    /// A plain (unshared) name only this cluster publishes.
    plain: (&'static str, &'static str),
}

impl Cluster<'_> {
    /// Its Services: the two shared names and its plain one.
    fn publish(&self) -> Result<()> {
        self.cp.kube.apply(&shared_lb(&self.ns, "web", WEB, self.web))?;
        self.cp.kube.apply(&shared_lb(&self.ns, "api", API, self.api))?;
        self.cp
            .kube
            .apply(&o::lb_at(&self.ns, "plain", self.plain.0, self.plain.1))?;
        Ok(())
    }
}

/// Per cluster, the addresses of its [`WEB`], [`API`] and plain name, on BIND and on Route53.
const BIND_ADDRESSES: [[&str; 3]; 2] = [
    ["203.0.113.81", "203.0.113.83", "203.0.113.85"],
    ["203.0.113.82", "203.0.113.84", "203.0.113.86"],
];
const ROUTE53_ADDRESSES: [[&str; 3]; 2] = [
    ["203.0.113.91", "203.0.113.93", "203.0.113.95"],
    ["203.0.113.92", "203.0.113.94", "203.0.113.96"],
];

/// Cluster one and two, on their API servers and namespaces, at `addresses`.
fn two_clusters<'a>(
    cps: [&'a ControlPlane; 2],
    namespaces: [String; 2],
    addresses: [[&'static str; 3]; 2],
) -> [Cluster<'a>; 2] {
    let [ns_one, ns_two] = namespaces;
    let cluster = |i: usize, ns: String, owner: &'static str, plain: &'static str| Cluster {
        cp: cps[i],
        ns,
        owner,
        web: addresses[i][0],
        api: addresses[i][1],
        plain: (plain, addresses[i][2]),
    };
    [
        cluster(0, ns_one, "cluster-one", "one-only.example.org"),
        cluster(1, ns_two, "cluster-two", "two-only.example.org"),
    ]
}

/// A LoadBalancer Service at `ip` publishing `host` as a shared name.
fn shared_lb(ns: &str, name: &str, host: &str, ip: &str) -> Value {
    o::lb_service(
        ns,
        name,
        o::annotations(&[("hostname", host), ("shared", "true")]),
        json!([{ "ip": ip }]),
    )
}

/// The namespaces of the two clusters: cluster one's on the run's control plane, cluster two's on `two`.
fn namespaces(ctx: &mut Ctx, two: &ControlPlane, prefix: &str) -> Result<(String, String)> {
    let ns_one = ctx.namespace(&format!("{prefix}-one"))?;
    let ns_two = format!("{prefix}-two");
    two.kube.namespace(&ns_two, json!({ "extdns-e2e": prefix }))?;
    Ok((ns_one, ns_two))
}

/// Where the shared names land, read alike on BIND and on Route53.
trait Published {
    /// The targets of `name`'s A record, sorted; empty without one.
    fn a(&self, name: &str) -> Result<Vec<String>>;
    /// The `at=` (Unix seconds) of `owner`'s heartbeat in the zone, if it has one.
    fn heartbeat_at(&self, owner: &str) -> Result<Option<u64>>;
    /// The whole zone as text, for failure messages.
    fn dump(&self) -> String;
}

struct Bind<'a>(&'a DnsServer);

impl Published for Bind<'_> {
    fn a(&self, name: &str) -> Result<Vec<String>> {
        Ok(dns::answers(self.0, name, "A"))
    }

    fn heartbeat_at(&self, owner: &str) -> Result<Option<u64>> {
        let zone = dns::zone(self.0)?;
        let name = format!("_extdns-heartbeat.{owner}.{ZONE}");
        Ok(dns::records_of(&zone, &name).iter().find_map(|r| at_of(&r.rdata)))
    }

    fn dump(&self) -> String {
        match dns::zone(self.0) {
            Ok(zone) => zone.iter().map(|r| format!("{r}\n")).collect(),
            Err(e) => format!("(no transfer: {e:#})"),
        }
    }
}

struct Route53<'a> {
    fake: &'a Fake,
    zone_id: &'a str,
}

impl Route53<'_> {
    /// The values of the record set `name` `kind`, as the fake holds them.
    fn values(&self, name: &str, kind: &str) -> Vec<String> {
        self.fake
            .find(self.zone_id, name, kind)
            .and_then(|s| s.resource_records)
            .map(|v| v.items.into_iter().map(|x| x.value).collect())
            .unwrap_or_default()
    }
}

impl Published for Route53<'_> {
    fn a(&self, name: &str) -> Result<Vec<String>> {
        let mut values = self.values(name, "A");
        values.sort();
        Ok(values)
    }

    fn heartbeat_at(&self, owner: &str) -> Result<Option<u64>> {
        let name = format!("_extdns-heartbeat.{owner}.{ZONE}");
        Ok(self.values(&name, "TXT").iter().find_map(|v| at_of(v)))
    }

    fn dump(&self) -> String {
        self.fake
            .sets(self.zone_id)
            .iter()
            .map(|s| format!("{} {} {:?}\n", s.name, s.kind, s.resource_records))
            .collect()
    }
}

/// The `at=` of a heartbeat value.
fn at_of(value: &str) -> Option<u64> {
    let rest = value.split(",at=").nth(1)?;
    rest.chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .ok()
}

/// Now, in Unix seconds (the clock extdns writes heartbeats with).
fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Waits until `name` answers exactly `want`.
fn answers(zone: &dyn Published, name: &str, want: &[&str], when: &str) -> Result<()> {
    eventually(
        &format!("{when}: {name} answers {want:?}"),
        CONVERGE,
        Duration::from_millis(250),
        || Ok((zone.a(name)? == want).then_some(())),
    )
    .with_context(|| format!("the zone:\n{}", zone.dump()))
}

/// The flags both extdns get beyond their provider's: the short interval and TTL.
fn shared_flags() -> Vec<String> {
    vec![format!("--interval={INTERVAL}s"), format!("--shared-owner-ttl={TTL}s")]
}

/// The core both variants run, from two extdns started by `start` (cluster 0 or 1, and a log name):
/// the union, one Service deleted, `kill -9` and its bound, the restart. Returns the two running processes
/// and the seconds from the kill to the targets' removal.
fn core(
    zone: &dyn Published,
    one: &Cluster<'_>,
    two: &Cluster<'_>,
    start: &dyn Fn(&Cluster<'_>, &str) -> Result<Proc>,
) -> Result<([Proc; 2], f64)> {
    let first = start(one, "one")?;
    let mut second = start(two, "two")?;
    answers(zone, WEB, &[one.web, two.web], "both clusters")?;
    answers(zone, API, &[one.api, two.api], "both clusters")?;
    for c in [one, two] {
        answers(zone, c.plain.0, &[c.plain.1], "a plain name")?;
    }
    eprintln!("  {WEB} and {API} answer with both clusters' targets");

    one.cp.kube.delete("v1", "Service", Some(&one.ns), "api")?;
    answers(zone, API, &[two.api], "cluster one's api Service deleted")?;
    if zone.a(WEB)? != [one.web, two.web] {
        bail!("deleting cluster one's api Service changed {WEB}: {:?}", zone.a(WEB)?);
    }
    eprintln!("  cluster one's Service deleted: only its target left {API}");

    let removed_after = killed_owner_is_pruned(zone, &mut second, one, two)?;
    if zone.a(API)? != [two.api] {
        bail!(
            "{API}, whose last owner is the dead cluster two, lost its target: {:?}",
            zone.a(API)?
        );
    }
    answers(zone, two.plain.0, &[two.plain.1], "the dead cluster's plain name")?;
    eprintln!("  {API}, owned by the dead cluster alone, keeps its target; so does its plain name");

    let second = start(two, "two-restarted")?;
    answers(zone, WEB, &[one.web, two.web], "cluster two's extdns restarted")?;
    eprintln!("  the restarted extdns took its target back");
    Ok(([first, second], removed_after))
}

/// `kill -9` of cluster two's extdns: its target leaves [`WEB`] after the TTL from its last heartbeat and
/// not before, cluster one's target never; returns the seconds from the kill to the removal.
fn killed_owner_is_pruned(zone: &dyn Published, proc: &mut Proc, one: &Cluster<'_>, two: &Cluster<'_>) -> Result<f64> {
    proc.kill9();
    let killed = unix_now();
    let beat = zone
        .heartbeat_at(two.owner)?
        .context("the killed extdns left no heartbeat in the zone")?;
    let (earliest, latest) = (beat + TTL, beat + TTL + INTERVAL + SLACK);
    let mut seen_present = killed;
    loop {
        let a = zone.a(WEB)?;
        let now = unix_now();
        if !a.iter().any(|t| t == one.web) {
            bail!("{WEB} lost the live cluster's target after the kill: {a:?}");
        }
        if !a.iter().any(|t| t == two.web) {
            if now < earliest as f64 {
                bail!(
                    "the dead cluster's target left {WEB} {:.1} s after its last heartbeat, before the TTL ({TTL} s)",
                    now - beat as f64
                );
            }
            // Seen still there just before the TTL: the lower side of the bound held, not skipped over.
            if seen_present < (earliest - 2) as f64 {
                bail!(
                    "the target was last seen {:.1} s after the heartbeat: the polls missed the moment before the TTL",
                    seen_present - beat as f64
                );
            }
            let after = now - killed;
            eprintln!(
                "  kill -9 of cluster two's extdns: its target left {WEB} {after:.1} s after the kill, {:.1} s after \
                 its last heartbeat (TTL {TTL} s, interval {INTERVAL} s); still there {:.1} s after the heartbeat",
                now - beat as f64,
                seen_present - beat as f64
            );
            return Ok(after);
        }
        seen_present = now;
        if now > latest as f64 {
            bail!(
                "the dead cluster's target is still in {WEB} {:.1} s after its last heartbeat (TTL {TTL} s, \
                 interval {INTERVAL} s, slack {SLACK} s)",
                now - beat as f64
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The BIND scenario: see the module documentation.
pub fn run(ctx: &mut Ctx) -> Result<()> {
    let started = Instant::now();
    let cp_two = ControlPlane::start(ctx.cp.binaries()).context("starting cluster two's control plane")?;
    eprintln!("  cluster two's kube-apiserver ready");
    let (ns_one, ns_two) = namespaces(ctx, &cp_two, "shared")?;
    let ns_legacy = ctx.namespace("shared-legacy")?;
    let ns_same_id = ctx.namespace("shared-same-id")?;
    let server = DnsServer::start_with_keys(
        Kind::Bind,
        &[Zone::new(ZONE)],
        &[ExtraKey {
            name: TWO_KEY.into(),
            algorithm: "hmac-sha256".into(),
            secret: TWO_SECRET.into(),
        }],
    );
    let [one, two] = two_clusters([&ctx.cp, &cp_two], [ns_one, ns_two], BIND_ADDRESSES);
    one.publish()?;
    two.publish()?;
    let logs = ctx.logs.clone();
    let start = |c: &Cluster<'_>, log: &str| -> Result<Proc> {
        let mut run = owner_run(&c.ns, c.owner, &shared_flags());
        if c.owner == "cluster-two" {
            run.provider = Some(two_key_flags(c.owner, server.port, "sync"));
        }
        run.start(c.cp, &server, &logs.join(format!("shared-{log}.log")))
    };
    let zone = Bind(&server);
    let (mut running, removed_after) = core(&zone, &one, &two, &start)?;

    // external-dns v0.23.0, a third owner with a name of its own and a Service asking for the shared name.
    let kube = &ctx.cp.kube;
    kube.apply(&o::lb_at(&ns_legacy, "legacy", "legacy.example.org", "203.0.113.87"))?;
    kube.apply(&o::lb_at(&ns_legacy, "web", WEB, "203.0.113.88"))?;
    let shared_before = shared_records(&server)?;
    let mut legacy = Run::new(Which::ExternalDns, &ns_legacy);
    legacy.owner = "legacy";
    legacy.once(&ctx.cp, &server)?;
    legacy.once(&ctx.cp, &server)?;
    answers(&zone, "legacy.example.org", &["203.0.113.87"], "external-dns")?;
    same_records(&shared_before, &shared_records(&server)?, "external-dns v0.23.0")?;
    eprintln!("  external-dns v0.23.0 published its own name and left the shared ones alone");
    // external-dns v0.22.0, the release before, under an owner of its own and asking the same names: it
    // leaves the shared ones alone too, and the name v0.23.0 owns.
    let mut previous = Run::new(Which::ExternalDnsPrevious, &ns_legacy);
    previous.owner = "legacy-previous";
    previous.once(&ctx.cp, &server)?;
    answers(&zone, "legacy.example.org", &["203.0.113.87"], "external-dns v0.22.0")?;
    same_records(&shared_before, &shared_records(&server)?, "external-dns v0.22.0")?;
    eprintln!("  external-dns v0.22.0 left the shared names and v0.23.0's name alone");
    let plain_before = plain_records(&server)?;

    partition(&server, &zone, &one, &two)?;
    same_owner_id(&ns_same_id, &ctx.log("shared-same-id"), &server, &zone, &one, &two)?;

    // Plain names: each as its owner first wrote it, whatever the other owners did since.
    let plain_after = plain_records(&server)?;
    same_records(
        &plain_before,
        &plain_after,
        "the shared-name owners, the partition and the conflict",
    )?;
    for p in &mut running {
        p.kill9();
    }
    eprintln!(
        "  plain names of both clusters and external-dns's untouched; death to removal {removed_after:.1} s; \
         scenario {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Cluster two's provider flags: RFC2136 with its own TSIG key, under `policy`.
fn two_key_flags(owner: &str, port: u16, policy: &str) -> Vec<String> {
    zone_flags(owner, port, ZONE)
        .into_iter()
        .map(|f| {
            if f.starts_with("--rfc2136-tsig-keyname=") {
                format!("--rfc2136-tsig-keyname={TWO_KEY}")
            } else if f.starts_with("--rfc2136-tsig-secret=") {
                format!("--rfc2136-tsig-secret={TWO_SECRET}")
            } else if f.starts_with("--policy=") {
                format!("--policy={policy}")
            } else {
                f
            }
        })
        .collect()
}

/// Cluster two's writes refused (its key's grant taken out of the update policy) for longer than the TTL:
/// cluster one prunes it, never losing its own target; accepted again, cluster two restores its target.
fn partition(server: &DnsServer, zone: &dyn Published, one: &Cluster<'_>, two: &Cluster<'_>) -> Result<()> {
    let grant = format!(" grant \"{TWO_KEY}\" zonesub ANY;");
    let conf_path = server.dir().join("named.conf");
    let conf = std::fs::read_to_string(&conf_path)?;
    if !conf.contains(&grant) {
        bail!("named.conf has no grant for {TWO_KEY}:\n{conf}");
    }
    reconfigure(server, &conf.replace(&grant, ""))?;
    let cut = unix_now();
    let beat = zone
        .heartbeat_at(two.owner)?
        .context("cluster two has no heartbeat in the zone")?;
    eprintln!("  cluster two's writes refused (its key's grant removed, BIND reloaded)");
    eventually(
        "cluster one prunes the cut-off cluster two",
        Duration::from_secs(TTL + INTERVAL + SLACK + 10),
        Duration::from_millis(250),
        || {
            let a = zone.a(WEB)?;
            if !a.iter().any(|t| t == one.web) {
                bail!("{WEB} lost cluster one's target during the partition: {a:?}");
            }
            Ok((a == [one.web]).then_some(()))
        },
    )?;
    let now = unix_now();
    if now < (beat + TTL) as f64 {
        bail!(
            "cluster two was pruned {:.1} s after its last heartbeat, before the TTL ({TTL} s)",
            now - beat as f64
        );
    }
    eprintln!(
        "  cluster two pruned {:.1} s into the partition, {:.1} s after its last heartbeat",
        now - cut,
        now - beat as f64
    );
    reconfigure(server, &conf)?;
    answers(zone, WEB, &[one.web, two.web], "cluster two's writes accepted again")?;
    eprintln!("  cluster two's writes accepted again: its target is back beside cluster one's");
    Ok(())
}

/// Writes `conf` as BIND's configuration and waits until BIND has read it.
fn reconfigure(server: &DnsServer, conf: &str) -> Result<()> {
    let before = server.log().matches(RELOADED).count();
    std::fs::write(server.dir().join("named.conf"), conf)?;
    server.reload();
    eventually(
        "BIND reads its configuration again",
        Duration::from_secs(20),
        Duration::from_millis(100),
        || Ok((server.log().matches(RELOADED).count() > before).then_some(())),
    )
}

/// A third extdns under cluster one's owner id, on cluster one, asking for [`WEB`] at another address
/// (`upsert-only`, so it deletes none of cluster one's names): it writes nothing for the shared names while
/// cluster one's extdns runs, warns naming both instances, and counts the conflict.
fn same_owner_id(
    ns: &str,
    log: &std::path::Path,
    server: &DnsServer,
    zone: &dyn Published,
    one: &Cluster<'_>,
    two: &Cluster<'_>,
) -> Result<()> {
    one.cp.kube.apply(&shared_lb(ns, "web", WEB, "203.0.113.89"))?;
    let before = shared_records(server)?;
    let mut run = owner_run(ns, one.owner, &shared_flags());
    run.provider = Some(
        zone_flags(one.owner, server.port, ZONE)
            .into_iter()
            .map(|f| {
                if f == "--policy=sync" {
                    "--policy=upsert-only".to_string()
                } else {
                    f
                }
            })
            .collect(),
    );
    let port = try_free_port()?;
    run.metrics_port = Some(port);
    let mut third = run.start(one.cp, server, log)?;
    let warning = "another live process writes heartbeats under our owner id";
    wait_for_log(&mut third, warning, CONVERGE)?;
    let log = third.log_text();
    let line = log.lines().find(|l| l.contains(warning)).unwrap_or_default();
    let field = |name: &str| {
        line.split(&format!("{name}="))
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .map(str::to_string)
    };
    match (field("theirs"), field("ours")) {
        (Some(theirs), Some(ours)) if theirs != ours => {}
        _ => bail!("the conflict warning does not name both instances: {line}"),
    }
    let conflicts = eventually(
        "extdns_shared_conflicts_total on the third extdns's metrics",
        CONVERGE,
        Duration::from_millis(500),
        || {
            let body = http_get(port, "/metrics")?;
            let n: f64 = body
                .lines()
                .filter(|l| l.starts_with("extdns_shared_conflicts_total"))
                .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                .sum();
            Ok((n > 0.0).then_some(n))
        },
    )?;
    // Both run for three more intervals: the shared names stay as they were.
    let until = Instant::now() + Duration::from_secs(3 * INTERVAL);
    while Instant::now() < until {
        let a = zone.a(WEB)?;
        if a != [one.web, two.web] {
            bail!("{WEB} changed while two processes run under one owner id: {a:?}");
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    same_records(
        &before,
        &shared_records(server)?,
        "a second extdns under cluster one's owner id",
    )?;
    third.terminate(Duration::from_secs(10));
    eprintln!(
        "  a second extdns under cluster one's owner id wrote nothing shared, warned naming both instances, \
         extdns_shared_conflicts_total {conflicts}"
    );
    Ok(())
}

/// The shared names' records: the records, the contributions (heartbeats are rewritten every interval).
fn shared_records(server: &DnsServer) -> Result<Vec<Record>> {
    Ok(dns::zone(server)?
        .into_iter()
        .filter(|r| r.name.contains("shared.example.org") || r.name.contains("shared-api.example.org"))
        .filter(|r| !r.name.starts_with("_extdns-heartbeat."))
        .collect())
}

/// The plain names' records and their ownership records, of both clusters and external-dns.
fn plain_records(server: &DnsServer) -> Result<Vec<Record>> {
    Ok(dns::zone(server)?
        .into_iter()
        .filter(|r| ["one-only", "two-only", "legacy"].iter().any(|p| r.name.contains(p)))
        .collect())
}

/// Fails unless `after` holds the records of `before`, no more and no less.
fn same_records(before: &[Record], after: &[Record], by: &str) -> Result<()> {
    let differences = dns::differences(before, after);
    if !differences.is_empty() {
        bail!("{by} changed records it must not:\n{}", differences.join("\n"));
    }
    Ok(())
}

/// The Route53 variant: the core on the strict Route53 fake. Not on moto: its Route53 appends a CREATE of
/// an existing set, deletes a set by name whatever its values, and two change batches at once can lose each
/// other's writes (its record list is rebuilt unlocked), so two owners writing one zone every interval
/// corrupt it there; the fake keeps Route53's rules (a DELETE matches exactly, a batch is atomic).
pub fn route53(ctx: &mut Ctx) -> Result<()> {
    let cp_two = ControlPlane::start(ctx.cp.binaries()).context("starting cluster two's control plane")?;
    let (ns_one, ns_two) = namespaces(ctx, &cp_two, "shared-r53")?;
    let fake = Fake::start_in_background();
    let zone_id = fake.zone(ZONE, false, &[]);
    let [one, two] = two_clusters([&ctx.cp, &cp_two], [ns_one, ns_two], ROUTE53_ADDRESSES);
    one.publish()?;
    two.publish()?;
    let logs = ctx.logs.clone();
    let start = |c: &Cluster<'_>, log: &str| -> Result<Proc> {
        let mut run = owner_run(&c.ns, c.owner, &shared_flags());
        run.provider = Some(
            [
                "--provider=aws",
                "--aws-batch-change-interval=0s",
                &format!("--domain-filter={ZONE}"),
                &format!("--txt-owner-id={}", c.owner),
                "--registry=txt",
                "--policy=sync",
            ]
            .map(String::from)
            .to_vec(),
        );
        // An access key per cluster: two AWS accounts, each within Route53's rate limit on its own.
        run.env = vec![
            ("AWS_ENDPOINT_URL_ROUTE_53", fake.url.clone()),
            (
                "AWS_ACCESS_KEY_ID",
                format!("AKID{}", c.owner.to_ascii_uppercase().replace('-', "")),
            ),
            ("AWS_SECRET_ACCESS_KEY", "secret".to_string()),
            ("AWS_REGION", "us-east-1".to_string()),
        ];
        run.start_own_provider(c.cp, &logs.join(format!("shared-r53-{log}.log")))
    };
    let zone = Route53 {
        fake: &fake,
        zone_id: &zone_id,
    };
    let (mut running, removed_after) = core(&zone, &one, &two, &start)?;
    for c in [&one, &two] {
        answers(&zone, c.plain.0, &[c.plain.1], "a plain name at the end")?;
    }
    for p in &mut running {
        p.kill9();
    }
    eprintln!("  Route53: death to removal {removed_after:.1} s");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_heartbeat_value_gives_its_time() {
        assert_eq!(
            at_of("\"heritage=extdns-shared,kind=heartbeat,owner=a,instance=5f,at=1764000000\""),
            Some(1_764_000_000)
        );
        assert_eq!(at_of("\"heritage=external-dns,external-dns/owner=a\""), None);
    }
}
