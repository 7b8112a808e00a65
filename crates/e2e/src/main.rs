//! `extdns-e2e`: extdns against a real kube-apiserver (with etcd) and real BIND, and beside external-dns
//! v0.23.0 on the same objects (and v0.22.0, for the take-over users upgrading from it take). Started by
//! `cargo xtask e2e` / `cargo xtask test`, which build the Go programs first and pass their paths:
//!
//! ```text
//! extdns-e2e --etcd P --kube-apiserver P --kubectl P --external-dns P --external-dns-previous P --extdns P \
//!     [--logs DIR] run [SCENARIO...]
//! extdns-e2e ... latency [--count N]
//! extdns-e2e ... scale [--services N] [--pods M] [--changes K] [--idle SECONDS] [--watch-list on|off] [--crd-kinds on]
//!     [--report FILE]
//! extdns-e2e ... multi-provider [--services N] [--pods M] [--idle SECONDS] [--report FILE]
//! extdns-e2e ... cloud-first-sync [--records N] [--provider google|azure|aws|cloudflare|all] [--batch-interval D] [--report FILE]
//! extdns-e2e ... provider-budget [--records N] [--provider aws|cloudflare|google|azure|all] [--interval S] [--window S] [--report FILE]
//! extdns-e2e ... serve [--records N] [--seconds S] [--clients C] [--servers knot,coredns,extdns] [--coredns P] [--report FILE]
//! extdns-e2e list
//! ```
//!
//! `cloud-first-sync` starts no control plane: it runs both controllers once against a cloud DNS fake
//! (src/cloud_bench.rs), nor does `provider-budget`: both running for minutes against rate-limited cloud fakes
//! (src/budget_bench.rs), nor does `serve`: dnsperf against Knot DNS, CoreDNS and extdns serving the same zone
//! (src/serve_bench.rs). One control plane serves every scenario of a run; each scenario has its own namespace and BIND server.
//! Every process started here is stopped by PID when the run ends, also when a scenario fails.

mod budget_bench;
mod change_latency;
mod cloud_bench;
mod cloud_env;
mod controllers;
mod dns;
mod flags;
mod multi_bench;
mod objects;
mod procfs;
mod scale;
mod scale_crd_kinds;
mod scenarios;
mod serve_bench;

use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use extdns_test_support::control_plane::{self, crds, kube};
use extdns_test_support::proc;

use control_plane::{Binaries, ControlPlane};
use scenarios::{ALL, Ctx};

struct Args {
    bins: Binaries,
    logs: PathBuf,
    command: String,
    rest: Vec<String>,
}

fn usage() -> &'static str {
    "usage: extdns-e2e --etcd P --kube-apiserver P --kubectl P --external-dns P --external-dns-previous P --extdns P \
     [--logs DIR] \
     (run [SCENARIO...] | latency [--count N] | scale [--services N] [--pods M] [--changes K] [--idle SECONDS] \
     [--watch-list on|off] [--report FILE] | multi-provider [--services N] [--pods M] [--idle SECONDS] \
     [--report FILE] | cloud-first-sync [--records N] [--provider google|azure|aws|cloudflare|all] \
     [--batch-interval D] [--report FILE] | provider-budget [--records N] \
     [--provider aws|cloudflare|google|azure|all] [--interval S] [--window S] [--report FILE] | serve [--records N] [--seconds S] [--clients C] \
     [--servers knot,coredns,extdns] [--coredns P] [--report FILE] | list)"
}

fn parse_args() -> Result<Args> {
    let mut etcd = None;
    let mut apiserver = None;
    let mut kubectl = None;
    let mut external_dns = None;
    let mut external_dns_previous = None;
    let mut extdns = None;
    let mut logs = PathBuf::from("target/e2e-logs");
    let mut positional = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        let mut value = |name: &str| -> Result<PathBuf> {
            inline
                .clone()
                .or_else(|| args.next())
                .map(PathBuf::from)
                .with_context(|| format!("{name} needs a value"))
        };
        match flag.as_str() {
            "--etcd" => etcd = Some(value("--etcd")?),
            "--kube-apiserver" => apiserver = Some(value("--kube-apiserver")?),
            "--kubectl" => kubectl = Some(value("--kubectl")?),
            "--external-dns" => external_dns = Some(value("--external-dns")?),
            "--external-dns-previous" => external_dns_previous = Some(value("--external-dns-previous")?),
            "--extdns" => extdns = Some(value("--extdns")?),
            "--logs" => logs = value("--logs")?,
            _ => positional.push(a),
        }
    }
    let command = if positional.is_empty() {
        "run".to_string()
    } else {
        positional.remove(0)
    };
    let need = |p: Option<PathBuf>, name: &str| -> Result<PathBuf> {
        let p = p.with_context(|| format!("--{name} is required\n{}", usage()))?;
        if !p.is_file() {
            bail!("--{name} {}: no such file (`cargo xtask e2e` builds it)", p.display());
        }
        Ok(p)
    };
    if command == "list" {
        return Ok(Args {
            bins: Binaries {
                etcd: PathBuf::new(),
                kube_apiserver: PathBuf::new(),
                kubectl: PathBuf::new(),
                external_dns: PathBuf::new(),
                external_dns_previous: PathBuf::new(),
                extdns: PathBuf::new(),
            },
            logs,
            command,
            rest: positional,
        });
    }
    Ok(Args {
        bins: Binaries {
            etcd: need(etcd, "etcd")?,
            kube_apiserver: need(apiserver, "kube-apiserver")?,
            kubectl: need(kubectl, "kubectl")?,
            external_dns: need(external_dns, "external-dns")?,
            external_dns_previous: need(external_dns_previous, "external-dns-previous")?,
            extdns: need(extdns, "extdns")?,
        },
        logs,
        command,
        rest: positional,
    })
}

fn main() -> ExitCode {
    match real_main() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("extdns-e2e: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn real_main() -> Result<bool> {
    let args = parse_args()?;
    match args.command.as_str() {
        "list" => {
            for s in ALL {
                println!(
                    "{:<14} {}{}",
                    s.name,
                    s.about,
                    if s.default { "" } else { " [not default]" }
                );
            }
            Ok(true)
        }
        "run" => run(args),
        "latency" => {
            let mut count = 50;
            let mut rest = args.rest.iter();
            while let Some(a) = rest.next() {
                match a.as_str() {
                    "--count" => {
                        count = rest
                            .next()
                            .and_then(|c| c.parse().ok())
                            .context("--count needs a number")?;
                    }
                    other => bail!("latency: unknown argument {other}"),
                }
            }
            let ctx = start(&args, false, &[])?;
            scenarios::latency::run(ctx, count)?;
            Ok(true)
        }
        "cloud-first-sync" => {
            let opts = cloud_bench::Options::parse(&args.rest)?;
            cloud_bench::run(&args.bins.extdns, &args.bins.external_dns, &args.logs, &opts)?;
            Ok(true)
        }
        "provider-budget" => {
            let opts = budget_bench::Options::parse(&args.rest)?;
            budget_bench::run(&args.bins.extdns, &args.bins.external_dns, &args.logs, &opts)?;
            Ok(true)
        }
        "serve" => {
            let opts = serve_bench::Options::parse(&args.rest)?;
            serve_bench::run(&args.bins.extdns, &args.logs, &opts)?;
            Ok(true)
        }
        "scale" => {
            let opts = scale::Options::parse(&args.rest)?;
            let gates: &[&str] = if opts.watch_list { &[] } else { &["WatchList=false"] };
            if opts.crd_kinds {
                return scale_crd_kinds::run(start(&args, true, gates)?, &opts);
            }
            scale::run(start(&args, true, gates)?, &opts)
        }
        "multi-provider" => {
            let opts = multi_bench::Options::parse(&args.rest)?;
            multi_bench::run(start(&args, true, &[])?, &opts)
        }
        other => bail!("unknown command {other}\n{}", usage()),
    }
}

/// The control plane and scenario context; `audited` logs the controllers' requests (for `scale`, and for
/// the scenarios that check what a controller asked for).
fn start(args: &Args, audited: bool, feature_gates: &[&str]) -> Result<Ctx> {
    let started = Instant::now();
    eprintln!("extdns-e2e: starting etcd and kube-apiserver, installing CRDs and deploy/");
    let cp = if audited {
        ControlPlane::start_audited_with_feature_gates(&args.bins, feature_gates)?
    } else {
        ControlPlane::start(&args.bins)?
    };
    eprintln!(
        "extdns-e2e: control plane ready in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    if args.logs.exists() {
        std::fs::remove_dir_all(&args.logs).with_context(|| format!("clearing {}", args.logs.display()))?;
    }
    Ctx::new(cp, args.logs.clone())
}

fn run(args: Args) -> Result<bool> {
    let selected: Vec<&scenarios::Scenario> = if args.rest.is_empty() {
        ALL.iter().filter(|s| s.default).collect()
    } else {
        let mut v = Vec::new();
        for name in &args.rest {
            v.push(
                ALL.iter()
                    .find(|s| s.name == name)
                    .with_context(|| format!("no scenario {name}; `extdns-e2e list` lists them"))?,
            );
        }
        v
    };
    // Audited: `tenancy` reads which Secrets extdns asked for.
    let mut ctx = start(&args, true, &[])?;
    let started = Instant::now();
    let mut failed = Vec::new();
    for s in &selected {
        eprintln!("\n== {}: {}", s.name, s.about);
        let t = Instant::now();
        let outcome = match (
            std::panic::catch_unwind(AssertUnwindSafe(|| (s.run)(&mut ctx))),
            ctx.delete_cluster_scoped(),
        ) {
            (Ok(Ok(())), Err(e)) => Ok(Err(e)),
            (outcome, _) => outcome,
        };
        let secs = t.elapsed().as_secs_f64();
        match outcome {
            Ok(Ok(())) => eprintln!("ok     {} ({secs:.1} s)", s.name),
            Ok(Err(e)) => {
                eprintln!("FAILED {} ({secs:.1} s): {e:#}", s.name);
                failed.push(s.name);
            }
            Err(_) => {
                eprintln!("FAILED {} ({secs:.1} s): panicked (message above)", s.name);
                failed.push(s.name);
            }
        }
    }
    for s in ALL.iter().filter(|s| !s.default && args.rest.is_empty()) {
        eprintln!(
            "not run: {} ({}); run it with `cargo xtask e2e {}`",
            s.name, s.about, s.name
        );
    }
    eprintln!(
        "\nextdns-e2e: {} passed, {} failed in {:.0} s; controller logs in {}",
        selected.len() - failed.len(),
        failed.len(),
        started.elapsed().as_secs_f64(),
        ctx.logs.display()
    );
    if !failed.is_empty() {
        eprintln!("failed: {}", failed.join(", "));
    }
    Ok(failed.is_empty())
}
