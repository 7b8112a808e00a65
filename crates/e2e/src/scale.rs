//! The scale benchmark: extdns and external-dns v0.23.0 side by side on one API server loaded with many
//! LoadBalancer Services and Pods, each controller syncing its own BIND with the same flags. Measures the
//! first full sync, change → answer for single changes, a burst of target updates, memory and CPU from
//! /proc, and the API requests each made (from the API server's audit log), and writes a markdown table of
//! both with their ratio.
//!
//! Before that, each controller's first sync is measured alone on a freshly restarted API server, once with
//! the WatchList feature on (streaming lists) and once with it off (paged LISTs): its time, its requests by
//! verb, and how much the API server's memory grows while serving its initial lists.
//!
//! Nothing schedules Pods here: they are plain objects, a share of them behind headless Services through
//! EndpointSlices the harness writes, so the service source has to read Pods too.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::flags::{self, count, seconds};
use serde_json::{Value, json};

use crate::change_latency::{self, Lookup, POLL, Stream};
use crate::controllers::{Run, Which};
use crate::dns::{self, ZONE};
use crate::objects::{self as o, annotations};
use crate::proc::Proc;
use crate::procfs;
use crate::scenarios::Ctx;
use crate::scenarios::latency::Figures as Latency;

pub(crate) const NAMESPACES: usize = 10;
/// Creates in flight at once while loading.
pub(crate) const CONCURRENCY: usize = 32;
/// One Service in this many is headless.
const HEADLESS_EVERY: usize = 10;
const PODS_PER_HEADLESS: usize = 3;
/// `--min-event-sync-interval`'s default (both controllers run with defaults), plus a margin: each change
/// is made at least this long after the previous answer, so it lands in a quiet cluster.
const SPACING: Duration = Duration::from_millis(5500);
const CHANGE_TIMEOUT: Duration = Duration::from_secs(30);
const BURST: usize = 1000;
const WHICH: [Which; 2] = [Which::Extdns, Which::ExternalDns];

/// The flags both controllers get beyond [`crate::controllers::cluster_flags`].
pub(crate) const FLAGS: [&str; 1] = ["--events"];

#[derive(Debug, Clone)]
pub struct Options {
    pub services: usize,
    pub pods: usize,
    pub changes: usize,
    pub idle: Duration,
    /// How long each stream of changes lasts (1 and 10 changes a second); 0 skips them.
    pub stream: Duration,
    /// kube-apiserver's WatchList feature (streaming lists); off, every initial list is a paged LIST.
    pub watch_list: bool,
    pub report: PathBuf,
    /// The CRD-kinds variant instead of the benchmark (`--crd-kinds on`): extdns alone, without and with
    /// the projects' CRDs and sources (src/scale_crd_kinds.rs).
    pub crd_kinds: bool,
    /// `--status-updates on`: extdns writes each Service's status (issue 48); the report adds its status
    /// writes a second during each stream beside the change → DNS latency, which must not move.
    pub status_updates: bool,
    /// `--alone off` skips each controller's first sync alone (WatchList on and off, four API server
    /// restarts): a run that compares something else, e.g. status on and off, at a size where those take
    /// most of its time.
    pub alone: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            services: 10_000,
            pods: 50_000,
            changes: 100,
            idle: Duration::from_secs(300),
            stream: Duration::from_secs(60),
            watch_list: true,
            report: PathBuf::from("target/bench-scale.md"),
            crd_kinds: false,
            status_updates: false,
            alone: true,
        }
    }
}

impl Options {
    /// `--services N --pods M --changes K --idle SECONDS --watch-list on|off --status-updates on|off
    /// --alone on|off --report FILE`, each optional.
    pub fn parse(args: &[String]) -> Result<Options> {
        let mut o = Options::default();
        let load: fn(&mut Options) -> [&mut usize; 2] = |o| [&mut o.services, &mut o.pods];
        flags::read_loaded("scale", args, &mut o, load, |o, flag, value| {
            match flag {
                "--changes" => o.changes = count(flag, &value)?,
                "--idle" => o.idle = seconds(flag, &value)?,
                "--stream" => o.stream = seconds(flag, &value)?,
                "--report" => o.report = PathBuf::from(value),
                "--crd-kinds" => {
                    o.crd_kinds = match value.as_str() {
                        "on" => true,
                        "off" => false,
                        other => bail!("scale: --crd-kinds {other}: on or off"),
                    }
                }
                "--status-updates" => {
                    o.status_updates = match value.as_str() {
                        "on" => true,
                        "off" => false,
                        other => bail!("scale: --status-updates {other}: on or off"),
                    }
                }
                "--alone" => {
                    o.alone = match value.as_str() {
                        "on" => true,
                        "off" => false,
                        other => bail!("scale: --alone {other}: on or off"),
                    }
                }
                "--watch-list" => {
                    o.watch_list = match value.as_str() {
                        "on" => true,
                        "off" => false,
                        other => bail!("scale: --watch-list {other}: on or off"),
                    }
                }
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        if o.services < HEADLESS_EVERY {
            bail!("scale: --services must be at least {HEADLESS_EVERY}");
        }
        Ok(o)
    }
}

/// Service `i`: headless one time in [`HEADLESS_EVERY`], spread over the namespaces.
pub(crate) fn namespace(i: usize) -> String {
    format!("scale-{}", i % NAMESPACES)
}
pub(crate) fn headless(i: usize) -> bool {
    (i / NAMESPACES).is_multiple_of(HEADLESS_EVERY)
}
pub(crate) fn host(name: &str) -> String {
    format!("{name}.{ZONE}")
}
/// Address `i` of a generation of load balancer IPs (generation 1: after an update).
pub(crate) fn lb_ip(generation: u32, i: usize) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(Ipv4Addr::new(100, 64, 0, 0)) + (generation << 21) + i as u32)
}

/// A LoadBalancer Service without node ports: the node port range (2,768 ports) would run out long before
/// the Services do, and nothing here routes through nodes.
fn lb_service(ns: &str, name: &str, ip: Ipv4Addr) -> Value {
    lb_service_at(ns, name, &host(name), ip)
}

/// [`lb_service`] with the hostname `hostname`.
pub(crate) fn lb_service_at(ns: &str, name: &str, hostname: &str, ip: Ipv4Addr) -> Value {
    let mut svc = o::lb_at(ns, name, hostname, &ip.to_string());
    svc["spec"]["allocateLoadBalancerNodePorts"] = json!(false);
    svc
}

/// A Pod as it is before anything schedules it: no node, no status.
fn pod(ns: &str, name: &str, app: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": { "name": name, "namespace": ns, "labels": { "app": app } },
        "spec": { "containers": [{ "name": "app", "image": "example.invalid/app:1" }] },
    })
}

/// Every object of the cluster: Services, Pods (those behind headless Services first), EndpointSlices.
pub(crate) fn objects(opts: &Options) -> Vec<Value> {
    objects_named(opts.services, opts.pods, &|i| host(&format!("svc-{i}")))
}

/// [`objects`] for `services` Services and `pods` Pods, Service `i` (named `svc-i`) at hostname `host(i)`.
pub(crate) fn objects_named(services: usize, pods_wanted: usize, host: &dyn Fn(usize) -> String) -> Vec<Value> {
    let headless_count = (0..services).filter(|&i| headless(i)).count();
    let per = (pods_wanted / headless_count.max(1)).clamp(1, PODS_PER_HEADLESS);
    let mut objs = Vec::with_capacity(services + pods_wanted + headless_count);
    let mut pods = 0;
    for i in 0..services {
        let (ns, name) = (namespace(i), format!("svc-{i}"));
        if !headless(i) {
            objs.push(lb_service_at(&ns, &name, &host(i), lb_ip(0, i)));
            continue;
        }
        objs.push(o::headless_service(
            &ns,
            &name,
            &name,
            annotations(&[("hostname", &host(i))]),
        ));
        let mut endpoints = Vec::new();
        for p in 0..per {
            let pod_name = format!("{name}-{p}");
            objs.push(pod(&ns, &pod_name, &name));
            endpoints.push((
                Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 128, 0, 0)) + pods).to_string(),
                pod_name,
            ));
            pods += 1;
        }
        let endpoints: Vec<(&str, &str)> = endpoints.iter().map(|(ip, p)| (ip.as_str(), p.as_str())).collect();
        let mut slice = o::endpoint_slice(&ns, &format!("{name}-1"), &name, &endpoints);
        // No per-Pod names: one name per Service, so the expected zone is one A name per Service.
        if let Some(eps) = slice["endpoints"].as_array_mut() {
            for ep in eps {
                if let Some(ep) = ep.as_object_mut() {
                    ep.remove("hostname");
                }
            }
        }
        objs.push(slice);
    }
    for k in pods as usize..pods_wanted {
        objs.push(pod(&namespace(k), &format!("pod-{k}"), "filler"));
    }
    objs
}

/// VmRSS, its anonymous share RssAnon, VmHWM (bytes) and utime+stime (seconds) of a running process.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Usage {
    pub rss: f64,
    /// What the process allocated; the rest of `rss` is file-backed, mostly the binary's code pages.
    pub anon: f64,
    pub hwm: f64,
    pub cpu: f64,
}

/// One figure of a benchmark's table: what it is, each controller's value (extdns, external-dns), the unit and
/// the decimals shown.
pub(crate) type FigureRow = (String, [Option<f64>; 2], &'static str, usize);

/// The memory figures of the two controllers from their samples after the first sync (`first`) and after
/// `idle` seconds idle (`rested`), each named after `who` (`""`, or `"controller "` beside other processes):
/// RSS and peak RSS up to the first sync, RSS and anonymous memory after the idle time.
pub(crate) fn memory_rows(who: &str, idle: u64, first: [Usage; 2], rested: [Usage; 2]) -> Vec<FigureRow> {
    let mb = |b: f64| Some(b / 1_048_576.0);
    vec![
        (
            format!("{who}RSS after the first sync"),
            first.map(|u| mb(u.rss)),
            "MB",
            0,
        ),
        (
            format!("{who}peak RSS up to the first sync (VmHWM)"),
            first.map(|u| mb(u.hwm)),
            "MB",
            0,
        ),
        (
            format!("{who}RSS after {idle} s idle"),
            rested.map(|u| mb(u.rss)),
            "MB",
            0,
        ),
        (
            format!("{who}anonymous memory (RssAnon) after {idle} s idle"),
            rested.map(|u| mb(u.anon)),
            "MB",
            0,
        ),
    ]
}

/// The CPU figures of the two controllers from the same samples as [`memory_rows`]: start to the first sync,
/// and over the idle time.
pub(crate) fn cpu_rows(who: &str, idle: u64, first: [Usage; 2], rested: [Usage; 2]) -> Vec<FigureRow> {
    let idle_cpu = [0, 1].map(|i| Some(rested[i].cpu - first[i].cpu));
    vec![
        (
            format!("{who}CPU, start → first sync"),
            first.map(|u| Some(u.cpu)),
            "s",
            2,
        ),
        (format!("{who}CPU, {idle} s idle"), idle_cpu, "s", 2),
    ]
}

pub(crate) fn usage(proc: &Proc, ticks: f64) -> Result<Usage> {
    let pid = proc.pid().with_context(|| format!("{} is not running", proc.name))?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let bytes = |key: &str| procfs::status_bytes(&status, key);
    let cpu = procfs::cpu_seconds(&format!("/proc/{pid}/stat"), 14, ticks);
    let (Some(rss), Some(anon), Some(hwm), Ok(cpu)) = (bytes("VmRSS:"), bytes("RssAnon:"), bytes("VmHWM:"), cpu) else {
        bail!("unreadable /proc/{pid}/status or stat of {}", proc.name);
    };
    Ok(Usage { rss, anon, hwm, cpu })
}

/// Requests per controller in the audit log so far (distinct audit ids, told apart by user agent), and the
/// user agents seen.
fn requests(audit: &Path) -> Result<([usize; 2], BTreeSet<String>)> {
    let text = std::fs::read_to_string(audit).with_context(|| format!("reading {}", audit.display()))?;
    let mut ids: [HashSet<String>; 2] = Default::default();
    let mut agents = BTreeSet::new();
    for line in text.lines() {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            continue; // a line being written
        };
        let Some(id) = event["auditID"].as_str() else {
            continue;
        };
        // external-dns (client-go) says `ExternalDNS/v0.23.0`, extdns `extdns/<version>`.
        let agent = event["userAgent"].as_str().unwrap_or("(none)");
        let external = agent.to_ascii_lowercase().starts_with("externaldns");
        ids[usize::from(external)].insert(id.to_string());
        if !agents.contains(agent) {
            agents.insert(agent.to_string());
        }
    }
    Ok(([ids[0].len(), ids[1].len()], agents))
}

/// Requests per controller by verb (`list`, `watch`, ...) in the audit log so far, distinct audit ids.
pub(crate) fn requests_by_verb(audit: &Path) -> Result<[BTreeMap<String, usize>; 2]> {
    requests_by(audit, &|event| event["verb"].as_str().unwrap_or("(none)").to_string())
}

/// Requests per controller in the audit log so far, distinct audit ids, counted under `key(event)`.
pub(crate) fn requests_by(audit: &Path, key: &dyn Fn(&Value) -> String) -> Result<[BTreeMap<String, usize>; 2]> {
    let text = std::fs::read_to_string(audit).with_context(|| format!("reading {}", audit.display()))?;
    let mut seen: HashSet<String> = HashSet::new();
    let mut out: [BTreeMap<String, usize>; 2] = Default::default();
    for line in text.lines() {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let Some(id) = event["auditID"].as_str() else {
            continue;
        };
        if !seen.insert(id.to_string()) {
            continue;
        }
        let agent = event["userAgent"].as_str().unwrap_or("(none)");
        let external = agent.to_ascii_lowercase().starts_with("externaldns");
        *out[usize::from(external)].entry(key(&event)).or_default() += 1;
    }
    Ok(out)
}

/// Every one of the `services` Service names has its A record in `zone`.
pub(crate) fn every_service(zone: &[dns::Record], services: usize) -> bool {
    zone.iter()
        .filter(|r| r.rtype == "A" && r.name.starts_with("svc-"))
        .map(|r| &r.name)
        .collect::<HashSet<_>>()
        .len()
        == services
}

/// VmRSS of a process (bytes), if it runs.
pub(crate) fn rss_of(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    Some(line.split_whitespace().nth(1)?.parse::<f64>().ok()? * 1024.0)
}

/// Runs `f` while sampling the VmRSS of process `pid` every 50 ms: `f`'s result and the peak (at least
/// `baseline`, bytes).
pub(crate) fn with_peak_rss<T>(pid: u32, baseline: f64, f: impl FnOnce() -> T) -> (T, f64) {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let sampler = s.spawn(|| {
            let mut peak = baseline;
            while !stop.load(Ordering::Relaxed) {
                peak = peak.max(rss_of(pid).unwrap_or_default());
                std::thread::sleep(Duration::from_millis(50));
            }
            peak
        });
        let out = f();
        stop.store(true, Ordering::Relaxed);
        (out, sampler.join().unwrap_or(baseline))
    })
}

/// Each controller's first sync alone: the API server restarted (its memory then holds only its own caches),
/// left to settle, the controller started against a BIND of its own, the API server's VmRSS sampled every
/// 50 ms until every Service name answers, the controller stopped. `watch_list`: the API server's WatchList
/// feature (streaming lists).
fn first_syncs_alone(
    ctx: &mut Ctx,
    audit: &Path,
    services: usize,
    probes: &[Probe],
    timeout: Duration,
    watch_list: bool,
) -> Result<[Alone; 2]> {
    let mut out: [Alone; 2] = Default::default();
    ctx.cp
        .set_feature_gates(if watch_list { &[] } else { &["WatchList=false"] });
    for (i, which) in WHICH.iter().enumerate() {
        ctx.cp.restart_apiserver()?;
        std::thread::sleep(Duration::from_secs(10));
        let pid = ctx.cp.apiserver_pid().context("kube-apiserver is not running")?;
        let before = requests_by_verb(audit)?;
        let server = dns::bind();
        let mut run = Run::new(*which, "");
        run.cluster_wide = true;
        run.owner = "scale-alone";
        for f in FLAGS {
            run = run.flag(f);
        }
        let apiserver_before = rss_of(pid).unwrap_or_default();
        let since = Instant::now();
        let mut proc = run.start(&ctx.cp, &server, &ctx.log(&format!("scale-alone-{}", which.name())))?;
        let (synced, peak) = with_peak_rss(pid, apiserver_before, || {
            wait_zone(server.port, since, timeout, probes, |z| every_service(z, services))
        });
        proc.terminate(Duration::from_secs(5));
        let after = requests_by_verb(audit)?;
        let requests = after[i]
            .iter()
            .map(|(verb, n)| (verb.clone(), n - before[i].get(verb).copied().unwrap_or_default()))
            .filter(|(_, n)| *n > 0)
            .collect();
        eprintln!(
            "scale: {} alone, WatchList {}: first sync {synced:?}, requests {requests:?}, kube-apiserver {:.0} MB → peak {:.0} MB",
            which.name(),
            if watch_list { "on" } else { "off" },
            apiserver_before / 1_048_576.0,
            peak / 1_048_576.0
        );
        out[i] = Alone {
            first_sync: synced,
            requests,
            apiserver_before,
            apiserver_peak: peak,
        };
    }
    Ok(out)
}

/// A name to probe and the A answer it must give (`None`: any address).
pub(crate) type Probe = (String, Option<Ipv4Addr>);

/// Polls the BIND server on `port` until every probe answers (UDP queries, cheap) and then an AXFR of the
/// whole zone satisfies `done`; the time from `since` to the start of that transfer, or `None` after
/// `timeout`. Probing first keeps the harness from spending the CPU the controllers are measured on.
pub(crate) fn wait_zone(
    port: u16,
    since: Instant,
    timeout: Duration,
    probes: &[Probe],
    done: impl Fn(&[dns::Record]) -> bool,
) -> Option<Duration> {
    wait_zone_named(port, ZONE, since, timeout, probes, done)
}

/// [`wait_zone`] for the zone `zone`.
pub(crate) fn wait_zone_named(
    port: u16,
    zone: &str,
    since: Instant,
    timeout: Duration,
    probes: &[Probe],
    done: impl Fn(&[dns::Record]) -> bool,
) -> Option<Duration> {
    while since.elapsed() < timeout {
        let answered = probes.iter().all(|(name, want)| {
            dns::query_a(port, name, Duration::from_secs(1)).is_ok_and(|a| match (a, want) {
                (Some(a), Some(ip)) => a == [*ip],
                (Some(a), None) => !a.is_empty(),
                (None, _) => false,
            })
        });
        if answered {
            let at = since.elapsed();
            if dns::zone_on(port, zone).is_ok_and(|z| done(&z)) {
                return Some(at);
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

/// About 20 of `names`, evenly spread, the last one included.
pub(crate) fn spread<T: Clone>(names: &[T]) -> Vec<T> {
    let step = names.len().div_ceil(20).max(1);
    let mut picked: Vec<T> = names.iter().step_by(step).cloned().collect();
    if let Some(last) = names.last() {
        picked.push(last.clone());
    }
    picked
}

/// What one controller did, phase by phase.
#[derive(Debug, Default)]
struct Figures {
    first_sync: Option<Duration>,
    samples: Vec<Duration>,
    timeouts: usize,
    burst: Option<Duration>,
    /// After the first sync, after idling, after the changes, after the burst.
    usage: [Usage; 4],
    requests: [usize; 4],
    /// The streams of changes, 1 and 10 a second.
    streams: [Stream; 2],
    /// WatchList on, then off.
    alone: [Alone; 2],
    /// With `--status-updates on`: extdns's status writes (server-side applies of a status, from the audit
    /// log) during each stream and the spacing after it, and that time.
    status_writes: [Option<(f64, Duration)>; 2],
    /// The controller's API requests during each stream and the spacing after it (status writes
    /// included): what the API server serves beside the change → DNS latency.
    stream_requests: [Option<usize>; 2],
}

/// extdns's status writes in the audit log so far: patches of a `status` subresource.
fn status_writes(audit: &Path) -> Result<usize> {
    let [ours, _] = requests_by(audit, &|event| {
        let status = event["verb"] == "patch" && event["objectRef"]["subresource"] == "status";
        if status { "status" } else { "other" }.to_string()
    })?;
    Ok(ours.get("status").copied().unwrap_or(0))
}

/// The rates of the streams, changes a second.
const STREAM_RATES: [u32; 2] = [1, 10];

/// `extdns_writes_total` (every kind) from the metrics endpoint on `port`.
fn writes_total(port: u16) -> Result<f64> {
    use std::io::{Read, Write};
    let mut conn = std::net::TcpStream::connect(("127.0.0.1", port))?;
    conn.set_read_timeout(Some(Duration::from_secs(5)))?;
    conn.write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
    let mut text = String::new();
    conn.read_to_string(&mut text)?;
    Ok(text
        .lines()
        .filter(|l| l.starts_with("extdns_writes_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum())
}

/// A stream of target updates, `rate` a second, of the LoadBalancer Services `targets` (one each, a new
/// address of `generation`): each change's time from its API call returning to the new answer on each BIND,
/// both controllers at once.
fn stream(
    kube: &extdns_test_support::control_plane::kube::Kube,
    servers: &[dns::DnsServer; 2],
    targets: &[usize],
    rate: u32,
    generation: u32,
) -> Result<[Stream; 2]> {
    let ports = servers.each_ref().map(|s| s.port);
    let answers = ports.map(|port| move |name: &str| change_latency::dns_answer(port, name));
    let lookups: [Lookup<'_>; 2] = [&answers[0], &answers[1]];
    let seen = change_latency::stream(&lookups, rate, targets.len(), CHANGE_TIMEOUT, |k| {
        let i = targets[k];
        let (ns, name) = (namespace(i), format!("svc-{i}"));
        let ip = lb_ip(generation, i);
        kube.apply(&lb_service(&ns, &name, ip))?;
        Ok((0..2).map(|place| (place, host(&name), ip)).collect())
    })?;
    let mut out: [Stream; 2] = Default::default();
    for (o, s) in out.iter_mut().zip(seen) {
        *o = s;
    }
    Ok(out)
}

/// A controller's first sync alone on a freshly started API server.
#[derive(Debug, Default)]
struct Alone {
    first_sync: Option<Duration>,
    /// Its requests by verb (`list`, `watch`, ...) up to the first sync.
    requests: BTreeMap<String, usize>,
    /// The API server's VmRSS before the controller started, and its peak until the first sync (bytes).
    apiserver_before: f64,
    apiserver_peak: f64,
}

/// The audit log of the control plane, and its namespaces made; what every scale run starts with.
pub(crate) fn audited_namespaces(ctx: &Ctx) -> Result<PathBuf> {
    let audit = ctx
        .cp
        .audit_log
        .clone()
        .context("the scale benchmark needs an audited control plane")?;
    for n in 0..NAMESPACES {
        ctx.cp
            .kube
            .namespace(&format!("scale-{n}"), json!({ "extdns-e2e": "scale" }))?;
    }
    Ok(audit)
}

pub fn run(mut ctx: Ctx, opts: &Options) -> Result<bool> {
    let audit = audited_namespaces(&ctx)?;
    let objs = objects(opts);
    eprintln!("scale: loading {} objects", objs.len());
    let loading = Instant::now();
    ctx.cp.kube.apply_all(&objs, CONCURRENCY)?;
    let load = loading.elapsed();
    eprintln!("scale: {} objects loaded in {:.1} s", objs.len(), load.as_secs_f64());

    // (0) Each controller's first sync alone.
    let services = opts.services;
    let all: Vec<Probe> = (0..services).map(|i| (host(&format!("svc-{i}")), None)).collect();
    let probes = spread(&all);
    let sync_timeout = Duration::from_secs(120) + Duration::from_millis(30) * services as u32;
    let mut alone: [[Alone; 2]; 2] = Default::default();
    let modes = if opts.alone { &[true, false][..] } else { &[] };
    for (mode, &watch_list) in modes.iter().enumerate() {
        for (i, a) in first_syncs_alone(&mut ctx, &audit, services, &probes, sync_timeout, watch_list)?
            .into_iter()
            .enumerate()
        {
            alone[i][mode] = a;
        }
    }
    // The rest on the server as configured.
    ctx.cp
        .set_feature_gates(if opts.watch_list { &[] } else { &["WatchList=false"] });
    ctx.cp.restart_apiserver()?;
    let kube = &ctx.cp.kube;

    // The requests of the runs alone are not this phase's.
    let (before, _) = requests(&audit)?;
    let servers = [dns::bind(), dns::bind()];
    let mut procs = Vec::new();
    let mut started = Vec::new();
    let extdns_metrics = extdns_test_support::try_free_port()?;
    for (which, server) in WHICH.iter().zip(&servers) {
        let mut run = Run::new(*which, "");
        run.cluster_wide = true;
        run.owner = "scale";
        if *which == Which::Extdns {
            run.metrics_port = Some(extdns_metrics);
            if opts.status_updates {
                run = run.flag("--status-updates=true");
            }
        }
        for f in FLAGS {
            run = run.flag(f);
        }
        started.push(Instant::now());
        procs.push(run.start(&ctx.cp, server, &ctx.log(&format!("scale-{}", which.name())))?);
    }
    let mut figures: [Figures; 2] = Default::default();
    let ticks = procfs::clock_ticks();

    for (f, a) in figures.iter_mut().zip(alone) {
        f.alone = a;
    }

    // (1) First full sync: every Service name answers.
    let synced: Vec<Option<Duration>> = std::thread::scope(|s| {
        let handles: Vec<_> = servers
            .iter()
            .zip(&started)
            .map(|(server, since)| {
                let (port, probes) = (server.port, &probes);
                s.spawn(move || wait_zone(port, *since, sync_timeout, probes, |z| every_service(z, services)))
            })
            .collect();
        handles.into_iter().map(|h| h.join().ok().flatten()).collect()
    });
    for (i, f) in figures.iter_mut().enumerate() {
        f.first_sync = synced[i];
        eprintln!("scale: {} first sync: {:?}", WHICH[i].name(), synced[i]);
    }
    let sample = |figures: &mut [Figures; 2], procs: &[Proc], phase: usize| -> Result<()> {
        let (reqs, agents) = requests(&audit)?;
        if phase == 0 {
            eprintln!("scale: user agents in the audit log: {agents:?}");
        }
        for (i, f) in figures.iter_mut().enumerate() {
            f.usage[phase] = usage(&procs[i], ticks)?;
            f.requests[phase] = reqs[i] - before[i];
        }
        Ok(())
    };
    if figures.iter().any(|f| f.first_sync.is_none()) {
        for p in &mut procs {
            eprintln!("{} log:\n{}", p.name, p.log_tail(20));
        }
        bail!("a controller did not complete its first sync within {sync_timeout:?}");
    }
    sample(&mut figures, &procs, 0)?;

    // (3) Idle.
    eprintln!("scale: idle for {} s", opts.idle.as_secs());
    std::thread::sleep(opts.idle);
    sample(&mut figures, &procs, 1)?;

    // (2) Single changes: create a Service, update its target, delete it.
    for c in 0..opts.changes {
        let (j, step) = (c / 3, c % 3);
        let (ns, name) = (namespace(j), format!("chg-{j}"));
        let expect = match step {
            0 | 1 => {
                let ip = lb_ip(2 + step as u32, j);
                kube.apply(&lb_service(&ns, &name, ip))?;
                vec![ip]
            }
            _ => {
                kube.delete("v1", "Service", Some(&ns), &name)?;
                vec![]
            }
        };
        let t0 = Instant::now();
        let mut took: [Option<Duration>; 2] = [None, None];
        while took.iter().any(Option::is_none) && t0.elapsed() < CHANGE_TIMEOUT {
            for (i, server) in servers.iter().enumerate() {
                if took[i].is_none() && dns::query_a(server.port, &host(&name), POLL)?.is_some_and(|a| a == expect) {
                    took[i] = Some(t0.elapsed());
                }
            }
            std::thread::sleep(POLL);
        }
        for (i, f) in figures.iter_mut().enumerate() {
            match took[i] {
                Some(d) => f.samples.push(d),
                None => f.timeouts += 1,
            }
        }
        eprintln!(
            "scale: change {c} ({}): extdns {:?}, external-dns {:?}",
            ["create", "update", "delete"][step],
            took[0],
            took[1]
        );
        std::thread::sleep(SPACING);
    }
    // The streams: 1 and 10 target updates a second, each of a Service of its own (from the end of the
    // list, away from the burst's).
    if !opts.stream.is_zero() {
        let mut free = (0..services).rev().filter(|&i| !headless(i));
        for (s, rate) in STREAM_RATES.iter().enumerate() {
            let count = (opts.stream.as_secs() as usize) * *rate as usize;
            let targets: Vec<usize> = free.by_ref().take(count).collect();
            eprintln!(
                "scale: a stream of {rate} change(s) a second for {} s",
                opts.stream.as_secs()
            );
            let before = writes_total(extdns_metrics)?;
            let status_before = status_writes(&audit)?;
            let (requests_before, _) = requests(&audit)?;
            let began = Instant::now();
            let seen = stream(kube, &servers, &targets, *rate, 4 + s as u32)?;
            let length = began.elapsed();
            let writes = writes_total(extdns_metrics)? - before;
            // What the writer still had queued lands after the stream: counted while the spacing passes.
            std::thread::sleep(SPACING);
            let status = status_writes(&audit)?.saturating_sub(status_before);
            let (requests_after, _) = requests(&audit)?;
            for (i, f) in figures.iter_mut().enumerate() {
                f.streams[s] = seen[i].clone();
                f.stream_requests[s] = Some(requests_after[i].saturating_sub(requests_before[i]));
            }
            figures[0].streams[s].writes = Some((writes, length));
            for (i, f) in figures.iter().enumerate() {
                let l = Latency {
                    which: WHICH[i],
                    samples: f.streams[s].samples.clone(),
                };
                eprintln!(
                    "scale: {} at {rate}/s: median {:?}, p99 {:?}, {} not answered",
                    WHICH[i].name(),
                    l.median(),
                    l.p99(),
                    f.streams[s].timeouts
                );
            }
            eprintln!("scale: extdns wrote {writes} times in {length:?}");
            if opts.status_updates {
                figures[0].status_writes[s] = Some((status as f64, length + SPACING));
                eprintln!(
                    "scale: extdns wrote {status} statuses for the {} changes",
                    targets.len()
                );
            }
        }
    }
    sample(&mut figures, &procs, 2)?;

    // The burst: target updates of up to BURST LoadBalancer Services, as fast as the API server takes them.
    let burst: Vec<usize> = (0..services).filter(|&i| !headless(i)).take(BURST).collect();
    let updates: Vec<Value> = burst
        .iter()
        .map(|&i| lb_service(&namespace(i), &format!("svc-{i}"), lb_ip(1, i)))
        .collect();
    let writing = Instant::now();
    kube.apply_all(&updates, CONCURRENCY)?;
    let written = Instant::now();
    eprintln!(
        "scale: burst of {} updates written in {:.1} s",
        burst.len(),
        (written - writing).as_secs_f64()
    );
    let expected: HashMap<String, String> = burst
        .iter()
        .map(|&i| (format!("svc-{i}.{ZONE}."), lb_ip(1, i).to_string()))
        .collect();
    let probes = spread(
        &burst
            .iter()
            .map(|&i| (host(&format!("svc-{i}")), Some(lb_ip(1, i))))
            .collect::<Vec<Probe>>(),
    );
    let converged: Vec<Option<Duration>> = std::thread::scope(|s| {
        let handles: Vec<_> = servers
            .iter()
            .map(|server| {
                let (port, expected, probes) = (server.port, &expected, &probes);
                s.spawn(move || {
                    wait_zone(port, written, Duration::from_secs(180), probes, |z| {
                        let new = z
                            .iter()
                            .filter(|r| r.rtype == "A" && expected.get(&r.name) == Some(&r.rdata))
                            .count();
                        new == expected.len()
                    })
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().ok().flatten()).collect()
    });
    for (i, f) in figures.iter_mut().enumerate() {
        f.burst = converged[i];
    }
    sample(&mut figures, &procs, 3)?;
    for p in &mut procs {
        p.terminate(Duration::from_secs(5));
    }
    // Kept beside the controller logs: which request was whose.
    std::fs::copy(&audit, ctx.log("scale-audit"))?;

    let pods = objs.iter().filter(|o| o["kind"] == "Pod").count();
    let report = report(opts, objs.len(), pods, load, burst.len(), &figures);
    println!("{report}");
    if let Some(dir) = opts.report.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&opts.report, &report).with_context(|| format!("writing {}", opts.report.display()))?;
    eprintln!("scale: report written to {}", opts.report.display());

    let extdns = &figures[0];
    let mut ok = true;
    if extdns.timeouts > 0 {
        eprintln!(
            "scale: FAILED: extdns missed {} of {} changes",
            extdns.timeouts, opts.changes
        );
        ok = false;
    }
    let missed: usize = extdns.streams.iter().map(|s| s.timeouts).sum();
    if missed > 0 {
        eprintln!("scale: FAILED: extdns missed {missed} changes of the streams");
        ok = false;
    }
    if extdns.burst.is_none() {
        eprintln!("scale: FAILED: extdns did not converge after the burst");
        ok = false;
    }
    Ok(ok)
}

/// The markdown report: how the run was made, then one row per figure with the extdns/external-dns ratio.
fn report(opts: &Options, objects: usize, pods: usize, load: Duration, burst: usize, f: &[Figures; 2]) -> String {
    let secs = |d: Option<Duration>| d.map(|d| d.as_secs_f64());
    let ms = |d: Duration| Some(d.as_secs_f64() * 1000.0);
    let latency = |i: usize| Latency {
        which: WHICH[i],
        samples: f[i].samples.clone(),
    };
    let mb = |b: f64| Some(b / 1_048_576.0);
    let each = |g: &dyn Fn(&Figures) -> Option<f64>| [g(&f[0]), g(&f[1])];
    let headless = (0..opts.services).filter(|&i| headless(i)).count();
    let idle = opts.idle.as_secs();
    let k = opts.changes;
    let stream = opts.stream.as_secs();
    let stream_stat = |s: usize, stat: &dyn Fn(&Latency) -> Duration| {
        [0, 1].map(|i| {
            let l = Latency {
                which: WHICH[i],
                samples: f[i].streams[s].samples.clone(),
            };
            ms(stat(&l)).filter(|_| !l.samples.is_empty())
        })
    };
    let verb = |f: &Alone, v: &str| Some(f.requests.get(v).copied().unwrap_or_default() as f64);
    let mut rows: Vec<FigureRow> = Vec::new();
    let labels = if opts.alone {
        &["WatchList on", "WatchList off"][..]
    } else {
        &[]
    };
    for (mode, &label) in labels.iter().enumerate() {
        let alone = |g: &dyn Fn(&Alone) -> Option<f64>| [g(&f[0].alone[mode]), g(&f[1].alone[mode])];
        rows.extend([
            (
                format!("alone, {label}: first full sync (start → every name answers)"),
                alone(&|a| secs(a.first_sync)),
                "s",
                1,
            ),
            (
                format!("alone, {label}: API requests to the first sync"),
                alone(&|a| Some(a.requests.values().sum::<usize>() as f64)),
                "",
                0,
            ),
            (
                format!("alone, {label}: of which LIST"),
                alone(&|a| verb(a, "list")),
                "",
                0,
            ),
            (
                format!("alone, {label}: of which WATCH"),
                alone(&|a| verb(a, "watch")),
                "",
                0,
            ),
            (
                format!("alone, {label}: kube-apiserver RSS before the controller started"),
                alone(&|a| mb(a.apiserver_before)),
                "MB",
                0,
            ),
            (
                format!("alone, {label}: kube-apiserver peak RSS growth to the first sync"),
                alone(&|a| mb(a.apiserver_peak - a.apiserver_before)),
                "MB",
                0,
            ),
        ]);
    }
    rows.extend(vec![
        (
            "first full sync (start → every name answers)".into(),
            each(&|f| secs(f.first_sync)),
            "s",
            1,
        ),
        (
            format!("change → answer, median ({k} changes)"),
            [0, 1].map(|i| ms(latency(i).median()).filter(|_| !f[i].samples.is_empty())),
            "ms",
            0,
        ),
        (
            format!("change → answer, p99 ({k} changes)"),
            [0, 1].map(|i| ms(latency(i).p99()).filter(|_| !f[i].samples.is_empty())),
            "ms",
            0,
        ),
        (
            "changes not answered within 30 s".into(),
            each(&|f| Some(f.timeouts as f64)),
            "",
            0,
        ),
        (
            format!("stream of 1 change/s for {stream} s → answer, median"),
            stream_stat(0, &|l| l.median()),
            "ms",
            0,
        ),
        (
            format!("stream of 1 change/s for {stream} s → answer, p99"),
            stream_stat(0, &|l| l.p99()),
            "ms",
            0,
        ),
        (
            format!("stream of 10 changes/s for {stream} s → answer, median"),
            stream_stat(1, &|l| l.median()),
            "ms",
            0,
        ),
        (
            format!("stream of 10 changes/s for {stream} s → answer, p99"),
            stream_stat(1, &|l| l.p99()),
            "ms",
            0,
        ),
        (
            "stream changes not answered within 30 s".into(),
            each(&|f| Some(f.streams.iter().map(|s| s.timeouts).sum::<usize>() as f64)),
            "",
            0,
        ),
        (
            "writes a second during the 10/s stream (extdns_writes_total)".into(),
            each(&|f| f.streams[1].writes.map(|(w, d)| w / d.as_secs_f64().max(1e-9))),
            "",
            1,
        ),
        (
            "status writes a second during the 10/s stream and the pause after it (--status-updates on; 5/s bucket)"
                .into(),
            each(&|f| f.status_writes[1].map(|(w, d)| w / d.as_secs_f64().max(1e-9))),
            "",
            1,
        ),
        (
            "status writes a second during the 1/s stream and the pause after it (--status-updates on)".into(),
            each(&|f| f.status_writes[0].map(|(w, d)| w / d.as_secs_f64().max(1e-9))),
            "",
            1,
        ),
        (
            "API requests during the 1/s stream and the pause after it".into(),
            each(&|f| f.stream_requests[0].map(|n| n as f64)),
            "",
            0,
        ),
        (
            "API requests during the 10/s stream and the pause after it".into(),
            each(&|f| f.stream_requests[1].map(|n| n as f64)),
            "",
            0,
        ),
        (
            format!("burst of {burst} target updates → all answer (from the last write)"),
            each(&|f| secs(f.burst)),
            "s",
            1,
        ),
    ]);
    let (first, rested) = ([f[0].usage[0], f[1].usage[0]], [f[0].usage[1], f[1].usage[1]]);
    rows.extend(memory_rows("", idle, first, rested));
    rows.extend(vec![
        (
            "RSS after the changes and the burst".into(),
            each(&|f| mb(f.usage[3].rss)),
            "MB",
            0,
        ),
        (
            "peak RSS over the run (VmHWM)".into(),
            each(&|f| mb(f.usage[3].hwm)),
            "MB",
            0,
        ),
    ]);
    rows.extend(cpu_rows("", idle, first, rested));
    rows.extend(vec![
        (
            format!("CPU, {k} changes"),
            each(&|f| Some(f.usage[2].cpu - f.usage[1].cpu)),
            "s",
            2,
        ),
        (
            "CPU, the burst".into(),
            each(&|f| Some(f.usage[3].cpu - f.usage[2].cpu)),
            "s",
            2,
        ),
        (
            "API requests, start → first sync".into(),
            each(&|f| Some(f.requests[0] as f64)),
            "",
            0,
        ),
        (
            format!("API requests, {idle} s idle"),
            each(&|f| Some((f.requests[1] - f.requests[0]) as f64)),
            "",
            0,
        ),
        (
            format!("API requests, {k} changes"),
            each(&|f| Some((f.requests[2] - f.requests[1]) as f64)),
            "",
            0,
        ),
        (
            "API requests, the burst".into(),
            each(&|f| Some((f.requests[3] - f.requests[2]) as f64)),
            "",
            0,
        ),
    ]);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} Services ({} LoadBalancer, {headless} headless behind EndpointSlices) and {} Pods in {NAMESPACES} \
         namespaces: {objects} objects loaded in {:.1} s ({:.0} objects/s, {CONCURRENCY} in flight).\n\
         Both controllers: `--source=service {}`, RFC2136 to a BIND server each, TXT registry, `--policy=sync`, \
         defaults otherwise{}; {}started together (WatchList {}).\n",
        opts.services,
        opts.services - headless,
        pods,
        load.as_secs_f64(),
        objects as f64 / load.as_secs_f64().max(0.001),
        FLAGS.join(" "),
        if opts.status_updates {
            " (extdns with `--status-updates=true`)"
        } else {
            ""
        },
        if opts.alone {
            "first each alone on a freshly restarted kube-apiserver (WatchList on, then off), then "
        } else {
            ""
        },
        if opts.watch_list { "on" } else { "off" },
    );
    comparison(&mut out, ["extdns", "external-dns v0.23.0"], rows);
    out
}

/// The table of `rows` under `out`'s intro: each figure of both sides (`–` where one is missing) and
/// their ratio, shared by the benchmarks that set extdns beside external-dns.
pub(crate) fn comparison(out: &mut String, sides: [&str; 2], rows: Vec<FigureRow>) {
    let [ours, theirs] = sides;
    let _ = writeln!(
        out,
        "| | {ours} | {theirs} | extdns / external-dns |\n|---|---|---|---|"
    );
    for (label, [a, b], unit, prec) in rows {
        let show = |v: Option<f64>| match v {
            Some(v) => format!("{v:.prec$} {unit}").trim_end().to_string(),
            None => "–".to_string(),
        };
        let ratio = match (a, b) {
            (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
            _ => "–".to_string(),
        };
        let _ = writeln!(out, "| {label} | {} | {} | {ratio} |", show(a), show(b));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tenth_of_the_services_are_headless_with_pods_and_every_pod_is_created() {
        let opts = Options {
            services: 300,
            pods: 600,
            ..Options::default()
        };
        let objs = objects(&opts);
        let count = |kind: &str| objs.iter().filter(|o| o["kind"] == kind).count();
        assert_eq!(count("Service"), 300);
        assert_eq!(count("EndpointSlice"), 30);
        assert_eq!(count("Pod"), 600);
        let namespaces: HashSet<&str> = objs
            .iter()
            .filter_map(|o| o["metadata"]["namespace"].as_str())
            .collect();
        assert_eq!(namespaces.len(), NAMESPACES);
        // Every endpoint names a Pod of its namespace, without a per-Pod hostname.
        for slice in objs.iter().filter(|o| o["kind"] == "EndpointSlice") {
            for ep in slice["endpoints"].as_array().into_iter().flatten() {
                assert!(ep.get("hostname").is_none());
                let pod = &ep["targetRef"]["name"];
                assert!(objs.iter().any(|o| o["kind"] == "Pod"
                    && o["metadata"]["name"] == *pod
                    && o["metadata"]["namespace"] == slice["metadata"]["namespace"]));
            }
        }
    }

    #[test]
    fn spread_picks_evenly_and_ends_with_the_last() {
        let names: Vec<usize> = (0..1000).collect();
        let picked = spread(&names);
        assert_eq!(picked.first(), Some(&0));
        assert_eq!(picked.last(), Some(&999));
        assert!((20..=22).contains(&picked.len()), "{}", picked.len());
        assert_eq!(spread(&[7]), vec![7, 7]);
    }

    #[test]
    fn load_balancer_generations_do_not_overlap() {
        assert_eq!(lb_ip(0, 0), Ipv4Addr::new(100, 64, 0, 0));
        assert_ne!(lb_ip(0, 9_999), lb_ip(1, 9_999));
        assert!(lb_ip(0, 100_000) < lb_ip(1, 0));
    }

    #[test]
    fn options_parse_and_reject_unknown_flags() -> Result<()> {
        let args: Vec<String> = ["--services", "300", "--idle", "5"].map(String::from).to_vec();
        let o = Options::parse(&args)?;
        assert_eq!((o.services, o.pods, o.idle), (300, 50_000, Duration::from_secs(5)));
        assert!(Options::parse(&["--nodes".to_string(), "1".to_string()]).is_err());
        assert!(Options::parse(&["--pods".to_string()]).is_err());
        assert!(o.watch_list, "streaming lists by default");
        let off = Options::parse(&["--watch-list".to_string(), "off".to_string()])?;
        assert!(!off.watch_list);
        assert!(Options::parse(&["--watch-list".to_string(), "maybe".to_string()]).is_err());
        Ok(())
    }
}
