//! The scale benchmark's CRD-kinds variant (`scale --crd-kinds on`): what the project kinds the CRD sources
//! read cost extdns's informer on an API server loaded with the scale benchmark's Services and Pods. One
//! run, three first syncs of extdns alone, each against a BIND of its own: (a) `--source=service` without
//! the projects' CRDs, (b) the same with every project's CRDs installed (Istio, Traefik, Contour, OpenShift,
//! Emissary, F5), (c) `--source=service` and every CRD source, the CRDs installed. For each: the first sync,
//! RSS and RssAnon after it has settled, and extdns's API requests by verb (from the audit log). (a) and (b)
//! must match: a kind is watched only when a selected source reads it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use extdns_test_support::control_plane::crds;

use crate::controllers::{Run, Which};
use crate::dns;
use crate::procfs;
use crate::scale::{self, FLAGS, Options, Probe, Usage};
use crate::scenarios::Ctx;
use crate::scenarios::ambassador::emissary_crds;

/// The CRD sources of variant (c), beside `--source=service`.
const CRD_SOURCES: [&str; 8] = [
    "--source=istio-gateway",
    "--source=istio-virtualservice",
    "--source=traefik-proxy",
    "--source=contour-httpproxy",
    "--source=openshift-route",
    "--source=f5-virtualserver",
    "--source=f5-transportserver",
    "--source=ambassador-host",
];

/// How long extdns runs after its first sync before it is measured: its watches established, nothing left
/// of the initial lists but what it keeps.
const SETTLE: Duration = Duration::from_secs(20);

/// One variant's figures.
struct Variant {
    name: &'static str,
    first_sync: Option<Duration>,
    usage: Usage,
    requests: BTreeMap<String, usize>,
}

pub fn run(mut ctx: Ctx, opts: &Options) -> Result<bool> {
    let audit = scale::audited_namespaces(&ctx)?;
    let objs = scale::objects(opts);
    eprintln!("scale --crd-kinds: loading {} objects", objs.len());
    ctx.cp.kube.apply_all(&objs, scale::CONCURRENCY)?;
    let services = opts.services;
    let all: Vec<Probe> = (0..services)
        .map(|i| (scale::host(&format!("svc-{i}")), None))
        .collect();
    let probes = scale::spread(&all);
    let timeout = Duration::from_secs(120) + Duration::from_millis(30) * services as u32;
    let measure =
        |ctx: &mut Ctx, name, sources: &[&str]| measure(ctx, &audit, name, sources, services, &probes, timeout);
    let mut variants = vec![measure(&mut ctx, "(a) service, no project CRDs", &[])?];
    let mut installed = Vec::new();
    for project in ["istio", "traefik", "contour", "openshift", "f5"] {
        installed.extend(crds::project(project)?);
    }
    installed.extend(emissary_crds()?);
    ctx.cp.kube.install_crds(&installed)?;
    eprintln!("scale --crd-kinds: {} project CRDs installed", installed.len());
    variants.push(measure(&mut ctx, "(b) service, every project's CRDs", &[])?);
    variants.push(measure(&mut ctx, "(c) service + every CRD source, CRDs", &CRD_SOURCES)?);
    let report = table(services, objs.len(), &variants);
    eprintln!("{report}");
    if let Some(dir) = opts.report.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&opts.report, &report).with_context(|| format!("writing {}", opts.report.display()))?;
    let same = variants[0].requests == variants[1].requests;
    if !same {
        eprintln!("scale --crd-kinds: (a) and (b) made different requests");
    }
    Ok(same && variants.iter().all(|v| v.first_sync.is_some()))
}

/// extdns alone with `sources` (none: the service source only) to its first full sync, then [`SETTLE`].
fn measure(
    ctx: &mut Ctx,
    audit: &Path,
    name: &'static str,
    sources: &[&str],
    services: usize,
    probes: &[Probe],
    timeout: Duration,
) -> Result<Variant> {
    let before = scale::requests_by_verb(audit)?[0].clone();
    let server = dns::bind();
    let mut run = Run::new(Which::Extdns, "");
    run.cluster_wide = true;
    run.owner = "scale-crd-kinds";
    for &f in FLAGS.iter().chain(sources) {
        run = run.flag(f);
    }
    let since = Instant::now();
    let mut proc = run.start(&ctx.cp, &server, &ctx.log(&format!("scale-crd-kinds-{}", &name[1..2])))?;
    let first_sync = scale::wait_zone(server.port, since, timeout, probes, |z| {
        scale::every_service(z, services)
    });
    std::thread::sleep(SETTLE);
    let usage = scale::usage(&proc, procfs::clock_ticks())?;
    proc.terminate(Duration::from_secs(5));
    let after = scale::requests_by_verb(audit)?[0].clone();
    let requests: BTreeMap<String, usize> = after
        .iter()
        .map(|(verb, n)| (verb.clone(), n - before.get(verb).copied().unwrap_or_default()))
        .filter(|(_, n)| *n > 0)
        .collect();
    eprintln!("scale --crd-kinds: {name}: first sync {first_sync:?}, {usage:?}, requests {requests:?}");
    Ok(Variant {
        name,
        first_sync,
        usage,
        requests,
    })
}

/// The markdown table of the variants: one row each, the verbs any of them used as columns.
fn table(services: usize, objects: usize, variants: &[Variant]) -> String {
    let mut verbs: Vec<&String> = variants.iter().flat_map(|v| v.requests.keys()).collect();
    verbs.sort();
    verbs.dedup();
    let mut out = format!(
        "extdns alone, {services} Services ({objects} objects), each variant's first sync then {} s settled\n\n\
         | variant | first sync | RSS | RssAnon |",
        SETTLE.as_secs()
    );
    for verb in &verbs {
        let _ = write!(out, " {verb} |");
    }
    out.push_str("\n|---|---:|---:|---:|");
    out.push_str(&"---:|".repeat(verbs.len()));
    out.push('\n');
    let mb = |b: f64| b / 1_048_576.0;
    for v in variants {
        let sync = v
            .first_sync
            .map_or("timed out".to_string(), |d| format!("{:.1} s", d.as_secs_f64()));
        let _ = write!(
            out,
            "| {} | {sync} | {:.0} MB | {:.0} MB |",
            v.name,
            mb(v.usage.rss),
            mb(v.usage.anon)
        );
        for verb in &verbs {
            let _ = write!(out, " {} |", v.requests.get(*verb).copied().unwrap_or_default());
        }
        out.push('\n');
    }
    out
}
