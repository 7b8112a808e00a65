//! The multi-provider benchmark (issue 37): what one extdns with three ClusterDNSProviders costs beside the
//! three external-dns v0.23.0 Deployments it replaces, on one API server loaded with many Services.
//!
//! The Services' names are split in thirds over three zones, each served by a BIND server of its own. extdns
//! runs with `--dns-provider-crds` and one ClusterDNSProvider per zone (RFC2136, its domain filter the zone);
//! each external-dns runs with the same flags as one of those providers (`--domain-filter` its zone). Each
//! side runs alone on a freshly restarted API server: the first full sync (start → every name of every zone
//! answers), the API requests (the audit log) and the API server's memory to then and over an idle period,
//! and the controllers' memory and CPU (external-dns: the three processes summed).
//!
//! The third zone is not on BIND but on the Route53 fake (issue 50): extdns's third ClusterDNSProvider and the
//! third external-dns are `--provider=aws` there (a fresh fake a side), so that one provider can be throttled
//! by its cloud honestly, the way an account's quota throttles it.
//!
//! After the first sync and the idle period comes the churn (issue 50, `--churn-rate R --churn-seconds S`):
//! LoadBalancer Services' addresses changed R a second for S seconds, spread over the three zones, twice:
//! once with the Route53 account at its documented limit, once throttled to one request a second.
//! Each change's latency runs from the moment the API server accepted it to the moment its name answers with
//! the new address where its provider publishes (BIND, or the fake's record set), per provider and per
//! controller (src/change_latency.rs, shared with the scale benchmark's streams); beside it each provider's
//! requests over the run. The healthy providers' latencies in the two runs side by side show whether the
//! throttled one delayed them; nothing passes or fails on them.
//!
//! The objects, the probes, the audit and /proc readings are the scale benchmark's (src/scale.rs).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::flags::{self, count, seconds};
use extdns_dnsprovider::ProviderKind;
use extdns_test_support::dig;
use extdns_test_support::fake::RateLimit;
use extdns_test_support::route53_fake::{self, Fake};
use serde_json::json;

use crate::change_latency::{self, Lookup, Stream};
use crate::controllers::{Run, Which, zone_flags};
use crate::dns::{DnsServer, Kind, Zone};
use crate::proc::Proc;
use crate::scale::{self, Probe, Usage};
use crate::scenarios::Ctx;
use crate::scenarios::latency::Figures as Latency;
use crate::scenarios::providers::{rfc2136, tsig_secret};

/// The zones, one a provider (and one an external-dns).
const ZONES: [&str; 3] = ["p0.example.org", "p1.example.org", "p2.example.org"];
/// Where the providers' Secrets are.
const NS: &str = "multi-provider";
/// The zone on the Route53 fake, the one throttled in the churn's second run; the others are on BIND.
const ROUTE53: usize = 2;
/// The Route53 account in the churn's throttled run: one request a second (Route53 documents five), as if
/// other clients of the account spent the rest of its budget. (At one request every ten seconds extdns's
/// Route53 provider made no progress at all: its retries give up before the bucket refills.)
const THROTTLE: RateLimit = RateLimit::bucket(1, 1.0);
/// The churn's runs: the Route53 account's limit in each (`None`: the documented one), and its name.
const RUNS: [(Option<RateLimit>, &str); 2] = [
    (None, "Route53 at its documented limit (5 requests/s)"),
    (Some(THROTTLE), "Route53 throttled (1 request/s)"),
];
/// A change not answered by then is counted as not answered (a throttled provider may take minutes).
const CHURN_TIMEOUT: Duration = Duration::from_secs(120);
/// The Route53 Secret's keys: a static key (the fake's account) and the endpoint.
const ACCESS_KEY: &str = "AKIDMULTI";
const SECRET_KEY: &str = "multi-provider-secret";

#[derive(Debug, Clone)]
pub struct Options {
    pub services: usize,
    pub pods: usize,
    pub idle: Duration,
    /// Changes a second in the churn.
    pub churn_rate: u32,
    /// How long each churn run lasts; 0 skips the churn.
    pub churn_seconds: Duration,
    pub report: PathBuf,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            services: 10_000,
            pods: 10_000,
            idle: Duration::from_secs(120),
            churn_rate: 10,
            churn_seconds: Duration::from_secs(60),
            report: PathBuf::from("target/bench-multi-provider.md"),
        }
    }
}

impl Options {
    /// `--services N --pods M --idle SECONDS --churn-rate R --churn-seconds S --report FILE`, each optional.
    pub fn parse(args: &[String]) -> Result<Options> {
        let mut o = Options::default();
        let load: fn(&mut Options) -> [&mut usize; 2] = |o| [&mut o.services, &mut o.pods];
        flags::read_loaded("multi-provider", args, &mut o, load, |o, flag, value| {
            match flag {
                "--idle" => o.idle = seconds(flag, &value)?,
                "--churn-seconds" => o.churn_seconds = seconds(flag, &value)?,
                "--churn-rate" => {
                    o.churn_rate = u32::try_from(count(flag, &value)?)
                        .ok()
                        .filter(|r| *r > 0)
                        .with_context(|| format!("multi-provider: --churn-rate {value}: a positive rate"))?
                }
                "--report" => o.report = PathBuf::from(value),
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        if o.services < ZONES.len() * 10 {
            bail!("multi-provider: --services must be at least {}", ZONES.len() * 10);
        }
        Ok(o)
    }
}

/// The zone of Service `i`.
fn zone_of(i: usize) -> &'static str {
    ZONES[i % ZONES.len()]
}

/// Service `i`'s hostname.
fn host(i: usize) -> String {
    format!("svc-{i}.{}", zone_of(i))
}

/// Where one side's three zones are published: two BIND servers, and a zone on a Route53 fake of its own.
struct Zones {
    bind: [DnsServer; 2],
    route53: Fake,
    zone_id: String,
}

impl Zones {
    fn start() -> Zones {
        let route53 = Fake::start_in_background();
        let zone_id = route53.zone(ZONES[ROUTE53], false, &[]);
        Zones {
            bind: [0, 1].map(|z| DnsServer::start(Kind::Bind, &[Zone::new(ZONES[z])])),
            route53,
            zone_id,
        }
    }

    /// The A answer of `name` in the Route53 zone, read from the fake without copying the zone (polled often).
    fn route53_answer(&self, name: &str) -> Option<Vec<Ipv4Addr>> {
        let s = self.route53.lock();
        let zone = s.zones.iter().find(|z| z.id == self.zone_id)?;
        let set = zone
            .sets
            .get(&(route53_fake::absolute(name), "A".to_string(), String::new()))?;
        let values = set.resource_records.as_ref()?;
        Some(values.items.iter().filter_map(|v| v.value.parse().ok()).collect())
    }

    /// How many Service names have their A record in the Route53 zone.
    fn route53_services(&self) -> usize {
        let s = self.route53.lock();
        s.zones.iter().find(|z| z.id == self.zone_id).map_or(0, |z| {
            z.sets
                .keys()
                .filter(|(name, kind, _)| kind == "A" && name.starts_with("svc-"))
                .count()
        })
    }

    /// The requests each zone's provider has answered so far: the UPDATE messages BIND applied (its SOA
    /// serial, which each one raises), the Route53 API calls; and Route53's Throttling answers.
    fn requests(&self) -> Result<([f64; 3], f64)> {
        let mut out = [0.0; 3];
        for (z, server) in self.bind.iter().enumerate() {
            let soa = dig::short(server.port, ZONES[z], "SOA");
            out[z] = soa
                .first()
                .and_then(|soa| soa.split_whitespace().nth(2)?.parse().ok())
                .with_context(|| format!("no SOA serial in {}'s answer {soa:?}", ZONES[z]))?;
        }
        let s = self.route53.lock();
        out[ROUTE53] = s.requests.api_calls() as f64;
        Ok((out, s.requests.throttled() as f64))
    }
}

/// One churn run as one side's providers saw it.
#[derive(Debug, Default, Clone)]
struct Churn {
    /// By zone: each change's latency to its answer.
    seen: [Stream; 3],
    /// By zone: the provider requests over the run ([`Zones::requests`]).
    requests: [f64; 3],
    /// Route53's Throttling answers over the run.
    throttled: f64,
    /// The controllers' API requests over the run.
    api: usize,
}

/// Distinct address generations a churn change can take: two sides of two runs each, so that no change
/// sets the address a Service already has.
const GENERATIONS: u32 = 4;

/// One churn run on `zones`: `opts.churn_rate` address changes a second over the LoadBalancer Services, each
/// to a generation of addresses no earlier change used (`first`, then every [`GENERATIONS`]th).
fn churn(ctx: &Ctx, zones: &Zones, opts: &Options, first: u32) -> Result<Churn> {
    let targets: Vec<usize> = (0..opts.services).filter(|&i| !scale::headless(i)).collect();
    let count = opts.churn_rate as usize * opts.churn_seconds.as_secs() as usize;
    let bind = zones.bind.each_ref().map(|b| b.port);
    let answers = bind.map(|port| move |name: &str| change_latency::dns_answer(port, name));
    let route53 = |name: &str| zones.route53_answer(name);
    let lookups: [Lookup<'_>; 3] = [&answers[0], &answers[1], &route53];
    let (before, throttled_before) = zones.requests()?;
    let seen = change_latency::stream(&lookups, opts.churn_rate, count, CHURN_TIMEOUT, |k| {
        let i = targets[k % targets.len()];
        let generation = first + GENERATIONS * (k / targets.len()) as u32;
        let ip = scale::lb_ip(generation, i);
        let svc = scale::lb_service_at(&scale::namespace(i), &format!("svc-{i}"), &host(i), ip);
        ctx.cp.kube.apply(&svc)?;
        Ok(vec![(i % ZONES.len(), host(i), ip)])
    })?;
    let (after, throttled_after) = zones.requests()?;
    let mut out = Churn {
        throttled: throttled_after - throttled_before,
        ..Churn::default()
    };
    for (z, s) in seen.into_iter().enumerate().take(ZONES.len()) {
        out.seen[z] = s;
        out.requests[z] = after[z] - before[z];
    }
    Ok(out)
}

/// Both churn runs of one side (`side` 0: extdns, 1: external-dns): the Route53 account at its documented
/// limit, then throttled; each run's API requests of side `side` from `audit`.
fn churns(ctx: &Ctx, audit: &Path, zones: &Zones, opts: &Options, side: usize) -> Result<Vec<Churn>> {
    let mut out = Vec::new();
    for (run, (limit, label)) in RUNS.iter().enumerate() {
        zones
            .route53
            .lock()
            .faults
            .limit(vec![limit.unwrap_or(route53_fake::RATE_LIMIT)]);
        let before = requests(audit)?;
        let mut c = churn(ctx, zones, opts, 1 + (2 * side + run) as u32)?;
        c.api = since(&before, &requests(audit)?, side).values().sum();
        for (z, zone) in ZONES.iter().enumerate() {
            let l = latency(&c.seen[z]);
            eprintln!(
                "multi-provider: churn, {label}: {zone}: p50 {:?}, p99 {:?}, {} not answered, {} requests",
                l.median(),
                l.p99(),
                c.seen[z].timeouts,
                c.requests[z]
            );
        }
        if c.throttled > 0.0 {
            eprintln!(
                "multi-provider: churn, {label}: Route53 answered Throttling {} times",
                c.throttled
            );
        }
        out.push(c);
    }
    zones.route53.lock().faults.limit(vec![route53_fake::RATE_LIMIT]);
    Ok(out)
}

/// `seen`'s samples as latency figures.
fn latency(seen: &Stream) -> Latency {
    Latency {
        which: Which::Extdns,
        samples: seen.samples.clone(),
    }
}

/// What one side (extdns, or the three external-dns together) did.
#[derive(Debug, Default)]
struct Side {
    first_sync: Option<Duration>,
    /// Requests by verb to the first sync, and over the idle period.
    requests: [BTreeMap<String, usize>; 2],
    /// kube-apiserver's VmRSS before the controllers started, its peak to the first sync, after the idle
    /// period (bytes).
    apiserver: [f64; 3],
    /// The controllers' usage summed, after the first sync and after the idle period.
    usage: [Usage; 2],
    processes: usize,
    /// The churn runs ([`RUNS`]), none when skipped.
    churn: Vec<Churn>,
}

/// What a request was for: the informers' kinds, the provider objects, Secrets, or API discovery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Informers,
    Providers,
    Secrets,
    Discovery,
}

impl Class {
    const ALL: [Class; 4] = [Class::Informers, Class::Providers, Class::Secrets, Class::Discovery];

    fn of(uri: &str) -> Class {
        let path = uri.split('?').next().unwrap_or_default();
        if path.contains("/externaldns.k8s.io/") {
            Class::Providers
        } else if path.contains("/secrets/") {
            Class::Secrets
        } else if matches!(path, "/api" | "/apis") || path.starts_with("/openapi") {
            Class::Discovery
        } else {
            Class::Informers
        }
    }

    fn name(self) -> &'static str {
        match self {
            Class::Informers => "the informers' (Services, EndpointSlices, Pods, Nodes)",
            Class::Providers => "the provider objects' (list, watch, finalizer and status patches)",
            Class::Secrets => "Secret reads",
            Class::Discovery => "API discovery",
        }
    }
}

/// Requests per side in the audit log so far, by `<verb> <class>`.
fn requests(audit: &Path) -> Result<[BTreeMap<String, usize>; 2]> {
    scale::requests_by(audit, &|e| {
        let verb = e["verb"].as_str().unwrap_or("(none)");
        format!("{verb} {:?}", Class::of(e["requestURI"].as_str().unwrap_or_default()))
    })
}

/// Requests of one side (index 0: extdns, 1: external-dns) between two readings of the audit log.
fn since(
    before: &[BTreeMap<String, usize>; 2],
    after: &[BTreeMap<String, usize>; 2],
    i: usize,
) -> BTreeMap<String, usize> {
    after[i]
        .iter()
        .map(|(verb, n)| (verb.clone(), n - before[i].get(verb).copied().unwrap_or_default()))
        .filter(|(_, n)| *n > 0)
        .collect()
}

fn summed(procs: &[Proc], ticks: f64) -> Result<Usage> {
    let mut sum = Usage::default();
    for p in procs {
        let u = scale::usage(p, ticks)?;
        sum.rss += u.rss;
        sum.anon += u.anon;
        sum.hwm += u.hwm;
        sum.cpu += u.cpu;
    }
    Ok(sum)
}

/// Starts one side's processes against the zones.
type Start = fn(&Ctx, &Zones) -> Result<Vec<Proc>>;

/// One side alone on a freshly restarted API server: `start` starts its processes against `zones`; the
/// first sync is when every Service of every zone answers; then the idle period, then the churn.
fn side(ctx: &mut Ctx, audit: &Path, opts: &Options, which: Which, start: Start) -> Result<Side> {
    let i = usize::from(which != Which::Extdns);
    ctx.cp.restart_apiserver()?;
    std::thread::sleep(Duration::from_secs(10));
    let pid = ctx.cp.apiserver_pid().context("kube-apiserver is not running")?;
    let zones = Zones::start();
    let timeout = Duration::from_secs(120) + Duration::from_millis(30) * opts.services as u32;
    let before = requests(audit)?;
    let apiserver_before = scale::rss_of(pid).unwrap_or_default();
    let began = Instant::now();
    let mut procs = start(ctx, &zones)?;
    let (synced, peak) = scale::with_peak_rss(pid, apiserver_before, || {
        std::thread::scope(|s| {
            let count = |z: usize| (0..opts.services).filter(|&i| i % ZONES.len() == z).count();
            let mut waits: Vec<_> = zones
                .bind
                .iter()
                .zip(ZONES)
                .enumerate()
                .map(|(z, (server, zone))| {
                    let port = server.port;
                    s.spawn(move || {
                        let names: Vec<Probe> = (0..opts.services)
                            .filter(|&i| i % ZONES.len() == z)
                            .map(|i| (host(i), None))
                            .collect();
                        scale::wait_zone_named(port, zone, began, timeout, &scale::spread(&names), |records| {
                            scale::every_service(records, count(z))
                        })
                    })
                })
                .collect();
            let zones = &zones;
            waits.push(s.spawn(move || {
                while began.elapsed() < timeout {
                    if zones.route53_services() == count(ROUTE53) {
                        return Some(began.elapsed());
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
                None
            }));
            let each: Vec<Option<Duration>> = waits.into_iter().map(|h| h.join().ok().flatten()).collect();
            each.iter().try_fold(Duration::ZERO, |max, d| d.map(|d| max.max(d)))
        })
    });
    let mut out = Side {
        first_sync: synced,
        processes: procs.len(),
        ..Side::default()
    };
    if synced.is_none() {
        for p in &mut procs {
            eprintln!("{} log:\n{}", p.name, p.log_tail(20));
        }
        bail!("{}: not every zone complete within {timeout:?}", which.name());
    }
    let ticks = crate::procfs::clock_ticks();
    let at_sync = requests(audit)?;
    out.usage[0] = summed(&procs, ticks)?;
    eprintln!(
        "multi-provider: {}: first sync {synced:?}, requests {:?}; idle for {} s",
        which.name(),
        since(&before, &at_sync, i),
        opts.idle.as_secs()
    );
    std::thread::sleep(opts.idle);
    let after_idle = requests(audit)?;
    out.usage[1] = summed(&procs, ticks)?;
    out.requests = [since(&before, &at_sync, i), since(&at_sync, &after_idle, i)];
    out.apiserver = [apiserver_before, peak, scale::rss_of(pid).unwrap_or_default()];
    if !opts.churn_seconds.is_zero() {
        out.churn = churns(ctx, audit, &zones, opts, i)?;
    }
    for p in &mut procs {
        p.terminate(Duration::from_secs(5));
    }
    Ok(out)
}

/// extdns: three ClusterDNSProviders, one a zone: RFC2136 to the BIND servers, `aws` to the Route53 fake.
fn extdns(ctx: &Ctx, zones: &Zones) -> Result<Vec<Proc>> {
    for (z, (server, zone)) in zones.bind.iter().zip(ZONES).enumerate() {
        let mut provider = rfc2136(
            ProviderKind::Cluster,
            NS,
            &format!("mp-{z}"),
            server.port,
            json!({ "rfc2136-zone": zone }),
            Some(NS),
        );
        provider["spec"]["domainFilter"]["include"] = json!([zone]);
        ctx.cp.kube.apply(&provider)?;
    }
    ctx.cp.kube.apply(&json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": { "name": "route53", "namespace": NS },
        "stringData": route53_env(&zones.route53).into_iter().collect::<BTreeMap<_, _>>(),
    }))?;
    ctx.cp.kube.apply(&json!({
        "apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "ClusterDNSProvider",
        "metadata": { "name": format!("mp-{ROUTE53}") },
        "spec": {
            "type": "aws",
            "domainFilter": { "include": [ZONES[ROUTE53]] },
            "config": { "policy": "sync" },
            "credentialsRef": { "name": "route53", "namespace": NS },
        },
    }))?;
    let mut run = Run::new(Which::Extdns, "").flag("--dns-provider-crds");
    run.cluster_wide = true;
    run.provider = Some(Vec::new());
    for f in scale::FLAGS {
        run = run.flag(f);
    }
    Ok(vec![
        run.start_own_provider(&ctx.cp, &ctx.log("multi-provider-extdns"))?,
    ])
}

/// The Route53 fake's account and endpoint, as variables (external-dns) or Secret keys (extdns).
fn route53_env(fake: &Fake) -> Vec<(&'static str, String)> {
    vec![
        ("AWS_ACCESS_KEY_ID", ACCESS_KEY.to_string()),
        ("AWS_SECRET_ACCESS_KEY", SECRET_KEY.to_string()),
        ("AWS_ENDPOINT_URL_ROUTE_53", fake.url.clone()),
    ]
}

/// Three external-dns, each with one provider's flags: RFC2136 to a BIND server, or `aws` to the Route53 fake.
fn external_dns(ctx: &Ctx, zones: &Zones) -> Result<Vec<Proc>> {
    let mut procs = Vec::new();
    for (z, zone) in ZONES.iter().enumerate() {
        let owner = format!("mp-{z}");
        let mut run = Run::new(Which::ExternalDns, "");
        run.cluster_wide = true;
        run.provider = Some(match zones.bind.get(z) {
            Some(server) => zone_flags(&owner, server.port, zone),
            None => {
                run.env = route53_env(&zones.route53);
                run.env.push(("AWS_REGION", "us-east-1".to_string()));
                [
                    "--provider=aws".to_string(),
                    format!("--domain-filter={zone}"),
                    "--registry=txt".to_string(),
                    format!("--txt-owner-id={owner}"),
                    "--policy=sync".to_string(),
                ]
                .to_vec()
            }
        });
        for f in scale::FLAGS {
            run = run.flag(f);
        }
        procs.push(run.start_own_provider(&ctx.cp, &ctx.log(&format!("multi-provider-external-dns-{z}")))?);
    }
    Ok(procs)
}

pub fn run(mut ctx: Ctx, opts: &Options) -> Result<bool> {
    let audit = ctx
        .cp
        .audit_log
        .clone()
        .context("the multi-provider benchmark needs an audited control plane")?;
    for n in 0..scale::NAMESPACES {
        ctx.cp
            .kube
            .namespace(&scale::namespace(n), json!({ "extdns-e2e": "multi-provider" }))?;
    }
    ctx.cp.kube.namespace(NS, json!({ "extdns-e2e": "multi-provider" }))?;
    ctx.cp
        .kube
        .apply(&tsig_secret(NS, crate::scenarios::providers::SECRET_NAME))?;
    let objs = scale::objects_named(opts.services, opts.pods, &host);
    eprintln!("multi-provider: loading {} objects", objs.len());
    let loading = Instant::now();
    ctx.cp.kube.apply_all(&objs, scale::CONCURRENCY)?;
    let load = loading.elapsed();
    let pods = objs.iter().filter(|o| o["kind"] == "Pod").count();
    eprintln!(
        "multi-provider: {} objects loaded in {:.1} s",
        objs.len(),
        load.as_secs_f64()
    );
    let sides = [
        side(&mut ctx, &audit, opts, Which::Extdns, extdns)?,
        side(&mut ctx, &audit, opts, Which::ExternalDns, external_dns)?,
    ];
    std::fs::copy(&audit, ctx.log("multi-provider-audit"))?;
    let report = report(opts, objs.len(), pods, load, &sides);
    println!("{report}");
    if let Some(dir) = opts.report.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&opts.report, &report).with_context(|| format!("writing {}", opts.report.display()))?;
    eprintln!("multi-provider: report written to {}", opts.report.display());
    Ok(true)
}

/// The markdown report: how the run was made, then one row per figure with the ratio.
fn report(opts: &Options, objects: usize, pods: usize, load: Duration, s: &[Side; 2]) -> String {
    let mb = |b: f64| Some(b / 1_048_576.0);
    let each = |g: &dyn Fn(&Side) -> Option<f64>| [g(&s[0]), g(&s[1])];
    // Keys are `<verb> <class>`.
    let count = |r: &BTreeMap<String, usize>, keep: &dyn Fn(&str, &str) -> bool| {
        Some(
            r.iter()
                .filter(|(k, _)| {
                    let (verb, class) = k.split_once(' ').unwrap_or_default();
                    keep(verb, class)
                })
                .map(|(_, n)| n)
                .sum::<usize>() as f64,
        )
    };
    let idle = opts.idle.as_secs();
    let mut rows: Vec<scale::FigureRow> = vec![(
        "first full sync (start → every name of the three zones answers)".into(),
        each(&|s| s.first_sync.map(|d| d.as_secs_f64())),
        "s",
        1,
    )];
    for (phase, label) in ["to the first sync".to_string(), format!("over {idle} s idle")]
        .iter()
        .enumerate()
    {
        rows.push((
            format!("API requests {label}"),
            each(&|s| count(&s.requests[phase], &|_, _| true)),
            "",
            0,
        ));
        for class in Class::ALL {
            let name = format!("{class:?}");
            rows.push((
                format!("API requests {label}: {}", class.name()),
                each(&|s| count(&s.requests[phase], &|_, c| c == name)),
                "",
                0,
            ));
        }
    }
    rows.push((
        "API requests to the first sync: WATCH (every class)".into(),
        each(&|s| count(&s.requests[0], &|v, _| v == "watch")),
        "",
        0,
    ));
    rows.extend(vec![
        (
            "kube-apiserver RSS before the controllers started".into(),
            each(&|s| mb(s.apiserver[0])),
            "MB",
            0,
        ),
        (
            "kube-apiserver peak RSS growth to the first sync".into(),
            each(&|s| mb(s.apiserver[1] - s.apiserver[0])),
            "MB",
            0,
        ),
        (
            format!("kube-apiserver RSS growth after {idle} s idle"),
            each(&|s| mb(s.apiserver[2] - s.apiserver[0])),
            "MB",
            0,
        ),
    ]);
    let (first, rested) = ([s[0].usage[0], s[1].usage[0]], [s[0].usage[1], s[1].usage[1]]);
    rows.extend(scale::memory_rows("controller ", idle, first, rested));
    rows.extend(scale::cpu_rows("controller ", idle, first, rested));
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} Services ({} zones, a third each) and {pods} Pods in {} namespaces: {objects} objects loaded in {:.1} s.\n\
         extdns: one process, `--dns-provider-crds` and {} ClusterDNSProviders (RFC2136 to a BIND server each for \
         the first two zones, `aws` to a Route53 fake at its documented limit for the third; domain filter its \
         zone); external-dns v0.23.0: {} processes, each with one provider's flags (`--domain-filter` its zone); \
         both `--source=service {}`, TXT registry, `--policy=sync`. Each side alone on a freshly restarted \
         kube-apiserver (WatchList on); external-dns's figures are its processes' sums.\n",
        opts.services,
        ZONES.len(),
        scale::NAMESPACES,
        load.as_secs_f64(),
        ZONES.len(),
        s[1].processes,
        scale::FLAGS.join(" "),
    );
    scale::comparison(&mut out, ["extdns, 3 providers", "3 × external-dns v0.23.0"], rows);
    if !s[0].churn.is_empty() && !s[1].churn.is_empty() {
        churn_report(&mut out, opts, s);
    }
    out
}

/// The churn's table: per run and per provider, each change's latency to its answer, the changes not
/// answered, the provider's requests; then the Throttling answers and the API requests of each run.
fn churn_report(out: &mut String, opts: &Options, s: &[Side; 2]) {
    let ms = |d: Option<Duration>| d.map(|d| d.as_secs_f64() * 1000.0);
    let stat = |c: &Churn, z: usize, p: fn(&Latency) -> Duration| {
        let l = latency(&c.seen[z]);
        ms((!l.samples.is_empty()).then(|| p(&l)))
    };
    let mut rows: Vec<scale::FigureRow> = Vec::new();
    for (run, (_, label)) in RUNS.iter().enumerate() {
        let each = |g: &dyn Fn(&Churn) -> Option<f64>| [g(&s[0].churn[run]), g(&s[1].churn[run])];
        for (z, zone) in ZONES.iter().enumerate() {
            let (provider, requests) = if z == ROUTE53 {
                ("Route53", "Route53 API calls")
            } else {
                ("RFC2136", "DNS UPDATE messages applied")
            };
            let name = format!("{label}: {zone} ({provider})");
            rows.extend([
                (
                    format!("{name}: change → answer, p50"),
                    each(&|c| stat(c, z, Latency::median)),
                    "ms",
                    0,
                ),
                (
                    format!("{name}: change → answer, p99"),
                    each(&|c| stat(c, z, Latency::p99)),
                    "ms",
                    0,
                ),
                (
                    format!("{name}: changes answered"),
                    each(&|c| Some(c.seen[z].samples.len() as f64)),
                    "",
                    0,
                ),
                (
                    format!("{name}: changes not answered within {} s", CHURN_TIMEOUT.as_secs()),
                    each(&|c| Some(c.seen[z].timeouts as f64)),
                    "",
                    0,
                ),
                (format!("{name}: {requests}"), each(&|c| Some(c.requests[z])), "", 0),
            ]);
        }
        rows.push((
            format!("{label}: Route53 Throttling answers"),
            each(&|c| Some(c.throttled)),
            "",
            0,
        ));
        rows.push((format!("{label}: API requests"), each(&|c| Some(c.api as f64)), "", 0));
    }
    let _ = writeln!(
        out,
        "\nChurn after the idle period: {} address changes a second of the LoadBalancer Services for {} s, a \
         third a zone, in two runs: {} and {}. Latency from the API server accepting a change to its name \
         answering with the new address (BIND, or the Route53 fake's record set); provider requests over the \
         run (RFC2136: UPDATE messages applied, the SOA serial's increase). The healthy providers' rows of the \
         two runs side by side show whether the throttled provider delayed them.\n",
        opts.churn_rate,
        opts.churn_seconds.as_secs(),
        RUNS[0].1,
        RUNS[1].1,
    );
    scale::comparison(out, ["extdns, 3 providers", "3 × external-dns v0.23.0"], rows);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn services_are_split_in_thirds_over_the_zones() {
        let counts = ZONES.map(|z| (0..300).filter(|&i| zone_of(i) == z).count());
        assert_eq!(counts, [100, 100, 100]);
    }

    #[test]
    fn requests_are_classed_by_path() {
        assert_eq!(Class::of("/api/v1/services?watch=true"), Class::Informers);
        assert_eq!(Class::of("/apis/discovery.k8s.io/v1/endpointslices"), Class::Informers);
        assert_eq!(
            Class::of("/apis/externaldns.k8s.io/v1alpha1/clusterdnsproviders/mp-0/status?"),
            Class::Providers
        );
        assert_eq!(
            Class::of("/api/v1/namespaces/multi-provider/secrets/tsig"),
            Class::Secrets
        );
        assert_eq!(Class::of("/apis"), Class::Discovery);
    }

    #[test]
    fn options_parse_and_reject_unknown_flags() -> Result<()> {
        let o = Options::parse(&["--services".into(), "600".into(), "--idle".into(), "5".into()])?;
        assert_eq!((o.services, o.pods, o.idle), (600, 10_000, Duration::from_secs(5)));
        assert!(Options::parse(&["--changes".into(), "3".into()]).is_err());
        assert!(Options::parse(&["--services".into(), "3".into()]).is_err());
        assert_eq!((o.churn_rate, o.churn_seconds), (10, Duration::from_secs(60)));
        let churn = Options::parse(&["--churn-rate".into(), "4".into(), "--churn-seconds".into(), "20".into()])?;
        assert_eq!((churn.churn_rate, churn.churn_seconds), (4, Duration::from_secs(20)));
        assert!(Options::parse(&["--churn-rate".into(), "0".into()]).is_err());
        Ok(())
    }
}
