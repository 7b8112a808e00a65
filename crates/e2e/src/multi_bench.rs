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
//! The objects, the probes, the audit and /proc readings are the scale benchmark's (src/scale.rs).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::flags::{self, seconds};
use extdns_dnsprovider::ProviderKind;
use serde_json::json;

use crate::controllers::{Run, Which, zone_flags};
use crate::dns::{DnsServer, Kind, Zone};
use crate::proc::Proc;
use crate::scale::{self, Probe, Usage};
use crate::scenarios::Ctx;
use crate::scenarios::providers::{rfc2136, tsig_secret};

/// The zones, one a provider (and one an external-dns).
const ZONES: [&str; 3] = ["p0.example.org", "p1.example.org", "p2.example.org"];
/// Where the providers' Secret is.
const NS: &str = "multi-provider";

#[derive(Debug, Clone)]
pub struct Options {
    pub services: usize,
    pub pods: usize,
    pub idle: Duration,
    pub report: PathBuf,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            services: 10_000,
            pods: 10_000,
            idle: Duration::from_secs(120),
            report: PathBuf::from("target/bench-multi-provider.md"),
        }
    }
}

impl Options {
    /// `--services N --pods M --idle SECONDS --report FILE`, each optional.
    pub fn parse(args: &[String]) -> Result<Options> {
        let mut o = Options::default();
        let load: fn(&mut Options) -> [&mut usize; 2] = |o| [&mut o.services, &mut o.pods];
        flags::read_loaded("multi-provider", args, &mut o, load, |o, flag, value| {
            match flag {
                "--idle" => o.idle = seconds(flag, &value)?,
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

/// Starts one side's processes against the zones' servers.
type Start = fn(&Ctx, &[DnsServer; 3]) -> Result<Vec<Proc>>;

/// One side alone on a freshly restarted API server: `start` starts its processes against `servers`; the
/// first sync is when every Service of every zone answers.
fn side(ctx: &mut Ctx, audit: &Path, opts: &Options, which: Which, start: Start) -> Result<Side> {
    let i = usize::from(which != Which::Extdns);
    ctx.cp.restart_apiserver()?;
    std::thread::sleep(Duration::from_secs(10));
    let pid = ctx.cp.apiserver_pid().context("kube-apiserver is not running")?;
    let servers = ZONES.map(|z| DnsServer::start(Kind::Bind, &[Zone::new(z)]));
    let timeout = Duration::from_secs(120) + Duration::from_millis(30) * opts.services as u32;
    let before = requests(audit)?;
    let apiserver_before = scale::rss_of(pid).unwrap_or_default();
    let began = Instant::now();
    let mut procs = start(ctx, &servers)?;
    let (synced, peak) = scale::with_peak_rss(pid, apiserver_before, || {
        std::thread::scope(|s| {
            let zones: Vec<_> = servers
                .iter()
                .zip(ZONES)
                .enumerate()
                .map(|(z, (server, zone))| {
                    let port = server.port;
                    s.spawn(move || {
                        let names: Vec<Probe> = (0..opts.services)
                            .filter(|&i| i % ZONES.len() == z)
                            .map(|i| (format!("svc-{i}.{zone}"), None))
                            .collect();
                        let count = names.len();
                        scale::wait_zone_named(port, zone, began, timeout, &scale::spread(&names), |records| {
                            scale::every_service(records, count)
                        })
                    })
                })
                .collect();
            let each: Vec<Option<Duration>> = zones.into_iter().map(|h| h.join().ok().flatten()).collect();
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
    for p in &mut procs {
        p.terminate(Duration::from_secs(5));
    }
    Ok(out)
}

/// extdns: three ClusterDNSProviders, one a zone.
fn extdns(ctx: &Ctx, servers: &[DnsServer; 3]) -> Result<Vec<Proc>> {
    for (z, (server, zone)) in servers.iter().zip(ZONES).enumerate() {
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

/// Three external-dns, each with one provider's flags.
fn external_dns(ctx: &Ctx, servers: &[DnsServer; 3]) -> Result<Vec<Proc>> {
    let mut procs = Vec::new();
    for (z, (server, zone)) in servers.iter().zip(ZONES).enumerate() {
        let owner = format!("mp-{z}");
        let mut run = Run::new(Which::ExternalDns, "");
        run.cluster_wide = true;
        run.provider = Some(zone_flags(&owner, server.port, zone));
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
    let objs = scale::objects_named(opts.services, opts.pods, &|i| format!("svc-{i}.{}", zone_of(i)));
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
         extdns: one process, `--dns-provider-crds` and {} ClusterDNSProviders (RFC2136 to a BIND server each, \
         domain filter its zone); external-dns v0.23.0: {} processes, each with one provider's flags (`--domain-filter` \
         its zone); both `--source=service {}`, TXT registry, `--policy=sync`. Each side alone on a freshly restarted \
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
    out
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
        Ok(())
    }
}
