//! Project automation, run as `cargo xtask <command>`. Kept to std, anyhow and serde_json so it builds in seconds on a
//! fresh machine; the end-to-end suite itself is the `extdns-e2e` binary (crates/e2e), which xtask builds
//! and starts with the paths of the programs it needs.
//!
//! - `test`: everything CI runs, on a fresh Debian machine too: installs what is missing (Debian packages
//!   when root, the Go programs with `go`), then the unit tests, the real-DNS-server suites and the real
//!   Kubernetes end-to-end suite with the differential against external-dns.
//! - `chart-tests`: external-dns's own chart tests (helm-unittest suites of v0.22.0 and v0.23.0) on
//!   `charts/extdns`, every case passing but the deliberate differences (src/chart_tests.rs); part of `test`.
//! - `e2e [SCENARIO...]`: the real-server suites only (RFC2136 against BIND and Knot, then the Kubernetes
//!   scenarios; with names, only those scenarios).
//! - `bench [FILTER]`: every criterion benchmark (or those matching FILTER); `bench e2e-latency [--count N]`:
//!   the `--events` latency of extdns and external-dns on a real API server and BIND; `bench scale [--services N]
//!   [--pods M] [--changes K] [--idle SECONDS] [--stream SECONDS] [--watch-list on|off] [--crd-kinds on]`: both
//!   side by side on a loaded API server (single changes, streams of 1 and 10 changes a second, a burst of
//!   1,000; WatchList off: a server without streaming lists), the table into `target/bench-scale.md`
//!   (`--crd-kinds on`: instead, extdns alone without and with the projects' CRDs and sources,
//!   docs/performance.md); `bench multi-provider [--services N]
//!   [--pods M] [--idle SECONDS] [--churn-rate R] [--churn-seconds S]`: one extdns with three ClusterDNSProviders
//!   (two RFC2136, one on a Route53 fake) against three external-dns, each side alone on the loaded API server
//!   (first sync, requests, API server and controller memory; then R changes a second for S seconds with the
//!   Route53 account at its limit, then throttled: change → answer and requests per provider), the table into
//!   `target/bench-multi-provider.md`; `bench cloud-first-sync [--records N]
//!   [--provider google|azure|aws|cloudflare|all] [--batch-interval D]`: the first sync of N records (10,000) by each into a cloud
//!   DNS fake of its own (Cloud DNS, Azure DNS, Route53 or Cloudflare, their documented limits on, through the TLS
//!   proxy, in a loopback-only network namespace): wall time, requests by kind, 429s, CPU, peak RSS, the zone checked,
//!   the least the limit allows; the table into `target/bench-cloud.md`;
//!   `bench provider-budget [--records N] [--provider aws|cloudflare|google|azure|all] [--interval S] [--window S]`:
//!   both running against rate-limited cloud fakes (documented limits on), requests an hour at rest and at one
//!   change a second, 429s; the table into `target/bench-provider-budget.md`;
//!   `bench serve [--records N] [--seconds S] [--clients C] [--servers knot,coredns,extdns] [--rate Q] [--rounds R] [--churn on|off]`: dnsperf against Knot
//!   DNS, CoreDNS (built from its module) and extdns `--provider=dns-server` (the binary `dist` ships) serving
//!   the same zone of N records (10,000), answers checked first: queries per second, latency percentiles,
//!   memory per record, the table into `target/bench-serve.md`.
//! - `dist [--arch amd64|arm64]... [--pgo]`: the release binaries for linux/amd64 and linux/arm64 (static, LTO,
//!   stripped, version and commit stamped; the other architecture with Debian's cross gcc) into
//!   `dist/linux-<arch>/`, each with its SHA-256 checksum and a CycloneDX SBOM; refuses a version CHANGELOG.md
//!   does not name. `--pgo` first trains a profile of the native binary, which lays its code out (src/pgo.rs).
//! - `image`: checks the Dockerfile against `dist` and writes the container build context to `target/image/`
//!   (and builds the image where a container engine runs).
//! - `check-crates`: every library crate has complete metadata and a runnable crate doc, tests alone and packages.
//! - `conventions [DIR]`: no string errors in library code, crate dependencies as DESIGN.md's layer table says, no
//!   import circle between the modules of a crate (src/conventions); also a test `cargo test --workspace` runs.
//! - `fuzz [--seconds N] [--no-sanitizer] [TARGET...]`: the cargo-fuzz targets in `fuzz/`, each for a bounded
//!   time (nightly).

mod chart_tests;
mod conventions;
mod crates;
mod deps;
mod fuzz;
mod gobuild;
mod pgo;
mod release;
mod shipped;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail, ensure};

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let command = args.next().unwrap_or_default();
    let rest: Vec<String> = args.collect();
    match command.as_str() {
        "test" => test(),
        "dist" => release::dist(&rest),
        "image" => release::image(),
        "check-crates" => crates::check_crates(&rest),
        "conventions" => conventions::run(&rest),
        "bench" if rest.first().map(String::as_str) == Some("e2e-latency") => latency(&rest[1..]),
        "bench" if rest.first().map(String::as_str) == Some("scale") => scale(&rest[1..]),
        "bench" if rest.first().map(String::as_str) == Some("multi-provider") => multi_provider(&rest[1..]),
        "bench" if rest.first().map(String::as_str) == Some("cloud-first-sync") => cloud_first_sync(&rest[1..]),
        "bench" if rest.first().map(String::as_str) == Some("provider-budget") => provider_budget(&rest[1..]),
        "bench" if rest.first().map(String::as_str) == Some("serve") => serve(&rest[1..]),
        "bench" => bench(&rest),
        "e2e" => e2e(&rest),
        "chart-tests" => chart_tests::run(&go_binaries()?),
        "fuzz" => fuzz::fuzz(&rest),
        _ => {
            eprintln!(
                "usage: cargo xtask <test | chart-tests | e2e [SCENARIO...] | bench [FILTER] | bench e2e-latency [--count N] | bench scale [--services N] [--pods M] [--changes K] [--idle SECONDS] [--stream SECONDS] [--watch-list on|off] [--crd-kinds on] | bench multi-provider [--services N] [--pods M] [--idle SECONDS] [--churn-rate R] [--churn-seconds S] | bench cloud-first-sync [--records N] [--provider google|azure|aws|cloudflare|all] [--batch-interval D] | bench provider-budget [--records N] [--provider aws|cloudflare|google|azure|all] [--interval S] [--window S] | bench serve [--records N] [--seconds S] [--clients C] [--servers knot,coredns,extdns] [--rate Q] [--rounds R] [--churn on|off] | dist [--arch amd64|arm64|all] [--pgo] | image | check-crates [--verify] | conventions [DIR] | fuzz [--seconds N] [--no-sanitizer] [TARGET...]>"
            );
            std::process::exit(2);
        }
    }
}

pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

pub(crate) fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) if !d.is_empty() => {
            let d = PathBuf::from(d);
            if d.is_absolute() { d } else { root().join(d) }
        }
        _ => root().join("target"),
    }
}

pub(crate) fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string()));
    cmd.current_dir(root());
    cmd
}

/// The rustc cargo builds with (`RUSTC`, else the one on PATH).
pub(crate) fn rustc() -> Command {
    Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string()))
}

pub(crate) fn run(mut cmd: Command) -> Result<()> {
    let (shown, status) = start(&mut cmd, Command::status)?;
    ensure!(status.success(), "{shown} failed with {status}");
    Ok(())
}

/// A command's standard output; a failure is an error naming the command and quoting what it printed.
pub(crate) fn output(mut cmd: Command) -> Result<String> {
    let (shown, out) = start(&mut cmd, Command::output)?;
    let printed = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    ensure!(
        out.status.success(),
        "{shown} failed with {}: {}{}",
        out.status,
        printed(&out.stdout),
        printed(&out.stderr)
    );
    Ok(printed(&out.stdout))
}

/// Runs `cmd` by `how` (to its status, or its output), with the command as shown in errors: a command that
/// cannot start is an error naming it.
fn start<T>(cmd: &mut Command, how: fn(&mut Command) -> std::io::Result<T>) -> Result<(String, T)> {
    let shown = format!("{cmd:?}");
    let done = how(cmd).with_context(|| format!("cannot start {shown}"))?;
    Ok((shown, done))
}

/// A program on PATH, or in the sbin directories Debian puts daemons in (not on a user's PATH).
pub(crate) fn find_program(name: &str) -> Option<PathBuf> {
    let dirs = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&dirs)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn bench(filter: &[String]) -> Result<()> {
    let mut cmd = cargo();
    cmd.args(["bench", "--workspace", "--benches"]);
    if !filter.is_empty() {
        cmd.arg("--").args(filter);
    }
    run(cmd)
}

/// Everything, as CI runs it: prerequisites, unit tests and real-DNS-server suites (`cargo test
/// --workspace`), then the Kubernetes end-to-end suite, then the scale benchmark at a small scale so it
/// cannot rot (it fails when a controller never completes its first sync or extdns misses a change).
fn test() -> Result<()> {
    // The test build and the Go builds in parallel: each leaves a core idle for minutes (module downloads,
    // single-threaded links, the last crates of a build), and on a fresh machine they are most of CI's time.
    let servers = timed("build the tests; install and build the servers", || {
        let mut build = cargo();
        build.args(["test", "--workspace", "--no-run"]);
        let shown = format!("{build:?}");
        let mut build = build.spawn().with_context(|| format!("cannot start {shown}"))?;
        let servers = TestServers::ensure();
        if servers.is_err() {
            // The error names what to install; no need to wait for the build to say it.
            let _ = build.kill();
        }
        let built = build.wait().with_context(|| format!("waiting for {shown}"))?;
        let servers = servers?;
        if !built.success() {
            bail!("{shown} failed with {built}");
        }
        Ok(servers)
    })?;
    timed("cargo test (unit, provider and interop suites)", || {
        let mut tests = cargo();
        tests.args(["test", "--workspace", "--", "--test-threads=2"]);
        servers.export_to(&mut tests);
        run(tests)
    })?;
    timed("external-dns's chart tests (helm-unittest) on charts/extdns", || {
        chart_tests::run(&servers.go)
    })?;
    timed("end-to-end scenarios on a real API server", || {
        kube_e2e(&servers.go, Profile::Dev, &["run".to_string()])
    })?;
    // Logs of its own, so the suite's stay for reading.
    let logs = target_dir().join("e2e-logs-scale");
    let mut small: Vec<String> = [
        "scale",
        "--services",
        "300",
        "--pods",
        "600",
        "--changes",
        "6",
        "--idle",
        "5",
        "--stream",
        "5",
    ]
    .map(String::from)
    .to_vec();
    small.extend([
        format!("--logs={}", logs.display()),
        "--report".to_string(),
        logs.join("bench-scale.md").display().to_string(),
    ]);
    timed("the scale run, small", || kube_e2e(&servers.go, Profile::Dev, &small))
}

/// Runs one step of `cargo xtask test` and says how long it took: CI's budget is kept step by step
/// (docs/development.md).
fn timed<T>(step: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let started = std::time::Instant::now();
    let result = f();
    eprintln!(
        "xtask: {step}: {} s{}",
        started.elapsed().as_secs(),
        if result.is_err() { " (failed)" } else { "" }
    );
    result
}

/// What the real-server tests run, installed or built when missing.
pub(crate) struct TestServers {
    go: gobuild::GoBinaries,
    moto: PathBuf,
}

impl TestServers {
    pub(crate) fn ensure() -> Result<TestServers> {
        let go = go_binaries()?;
        let moto = deps::ensure_moto(&target_dir())?;
        Ok(TestServers { go, moto })
    }

    /// Tells a `cargo test` run where the Go programs and moto are (`EXTDNS_TEST_*`), and that every
    /// real server must be there.
    pub(crate) fn export_to(&self, cmd: &mut Command) {
        self.go.export_to(cmd);
        cmd.env("EXTDNS_TEST_MOTO_SERVER", &self.moto);
        require_servers(cmd);
    }
}

/// Plain `cargo test` skips a test whose server is missing; the runs xtask starts (and so CI) fail instead,
/// naming the install command (crates/test-support: `REQUIRE_SERVERS`, decided in `available`).
pub(crate) fn require_servers(cmd: &mut Command) {
    cmd.env("EXTDNS_REQUIRE_TEST_SERVERS", "1");
}

/// The real-server suites: RFC2136 against BIND and Knot, PowerDNS, then the Kubernetes scenarios. Scenario names
/// run only those scenarios.
fn e2e(scenarios: &[String]) -> Result<()> {
    let go = go_binaries()?;
    if scenarios.is_empty() {
        let mut cmd = cargo();
        cmd.args([
            "test",
            "-p",
            "extdns-provider-rfc2136",
            "-p",
            "extdns-provider-aws",
            "-p",
            "extdns-provider-pdns",
            "-p",
            "extdns",
            "--",
            "--test-threads=2",
        ]);
        go.export_to(&mut cmd);
        cmd.env("EXTDNS_TEST_MOTO_SERVER", deps::ensure_moto(&target_dir())?);
        require_servers(&mut cmd);
        run(cmd)?;
    }
    kube_e2e(&go, Profile::Dev, &subcommand("run", scenarios))
}

/// The system packages, then the Go programs (built once, then found).
pub(crate) fn go_binaries() -> Result<gobuild::GoBinaries> {
    deps::ensure_system_packages()?;
    gobuild::ensure(&target_dir())
}

/// `extdns-e2e`'s arguments: `command`, then `args`.
fn subcommand(command: &str, args: &[String]) -> Vec<String> {
    std::iter::once(command.to_string())
        .chain(args.iter().cloned())
        .collect()
}

/// A benchmark's arguments: `command`, then `args`, then where its report goes: `target/<report>`.
fn reported(command: &str, args: &[String], report: &str) -> Vec<String> {
    let mut e2e_args = subcommand(command, args);
    e2e_args.extend(["--report".to_string(), target_dir().join(report).display().to_string()]);
    e2e_args
}

/// Runs the benchmark `command` on the `profile` build of extdns, its report written to `target/<report>`.
fn benchmark(command: &str, args: &[String], profile: Profile, report: &str) -> Result<()> {
    kube_e2e(&go_binaries()?, profile, &reported(command, args, report))
}

fn latency(args: &[String]) -> Result<()> {
    kube_e2e(&go_binaries()?, Profile::Release, &subcommand("latency", args))
}

/// The scale benchmark on the shipped build of extdns; the report goes to `target/bench-scale.md`.
fn scale(args: &[String]) -> Result<()> {
    benchmark("scale", args, Profile::Dist, "bench-scale.md")
}

/// One extdns with three providers against three external-dns on a loaded API server; the report goes to
/// `target/bench-multi-provider.md`. extdns is the release build with the shipped allocator, as for
/// `cloud-first-sync`.
fn multi_provider(args: &[String]) -> Result<()> {
    benchmark("multi-provider", args, Profile::Release, "bench-multi-provider.md")
}

/// The first sync into a cloud DNS fake, extdns beside external-dns; the report goes to `target/bench-cloud.md`.
/// extdns is the release build with the shipped allocator ([`RELEASE_BUILD`], one build with the harness).
fn cloud_first_sync(args: &[String]) -> Result<()> {
    benchmark("cloud-first-sync", args, Profile::Release, "bench-cloud.md")
}

/// Steady-state provider requests of extdns beside external-dns against rate-limited cloud fakes; the report
/// goes to `target/bench-provider-budget.md`. extdns is the release build, as for `cloud-first-sync`.
fn provider_budget(args: &[String]) -> Result<()> {
    benchmark("provider-budget", args, Profile::Release, "bench-provider-budget.md")
}

/// The serving benchmark: dnsperf against Knot DNS, CoreDNS and extdns's own DNS server, the shipped binary
/// ([`shipped_extdns`]: memory per record counts its code pages); the report goes to `target/bench-serve.md`.
fn serve(args: &[String]) -> Result<()> {
    let go = go_binaries()?;
    deps::ensure_programs(&[("dnsperf", "dnsperf"), ("taskset", "util-linux")])?;
    // CoreDNS's cold Go build (minutes) runs beside extdns's release build instead of after it, and is
    // waited for before anything is measured: a run never starts without it.
    let target = target_dir();
    let coredns = std::thread::spawn(move || gobuild::coredns(&target));
    let harness = build_harness();
    let coredns = coredns
        .join()
        .map_err(|_| anyhow::anyhow!("the CoreDNS build panicked"))??;
    let harness = harness?;
    let extdns = shipped_extdns()?;
    let mut e2e_args = reported("serve", args, "bench-serve.md");
    e2e_args.push(format!("--coredns={}", coredns.display()));
    run_e2e(&go, &harness, &extdns, &e2e_args)
}

#[derive(Clone, Copy)]
enum Profile {
    Dev,
    Release,
    /// Release for the harness; extdns as `dist` ships it (static, with its profile when one is trained).
    Dist,
}

/// Builds extdns and the e2e runner, then runs `extdns-e2e <args>` with the paths of every program.
fn kube_e2e(go: &gobuild::GoBinaries, profile: Profile, args: &[String]) -> Result<()> {
    let (harness, extdns) = match profile {
        // The same targets as `cargo test --workspace` (dev-dependencies, hence features, unified the same
        // way), so the tests and the end-to-end run share one build instead of compiling twice.
        Profile::Dev => {
            let mut build = cargo();
            build.args(["build", "--workspace", "--bins", "--tests"]);
            run(build)?;
            let bin = target_dir().join("debug");
            (bin.join("extdns-e2e"), bin.join("extdns"))
        }
        Profile::Release => {
            let harness = build_harness()?;
            let extdns = harness.with_file_name("extdns");
            (harness, extdns)
        }
        Profile::Dist => {
            let extdns = shipped_extdns()?;
            (build_harness()?, extdns)
        }
    };
    run_e2e(go, &harness, &extdns, args)
}

/// The shipped binary itself, for this machine: its code pages are part of the resident memory measured,
/// and a release build's are not the shipped one's (44 MB of code against 35 MB; `bench serve` counted
/// 160 B a record more of them at 10,000 records).
fn shipped_extdns() -> Result<PathBuf> {
    let host = shipped::host_target()?;
    let arch = shipped::ARCHES
        .into_iter()
        .find(|a| a.target == host)
        .with_context(|| format!("extdns ships no binary for {host}"))?;
    release::build_shipped(arch, &host, &shipped::git_revision())
}

/// The e2e runner, built for release with extdns as [`RELEASE_BUILD`] says (one build for both).
pub(crate) fn build_harness() -> Result<PathBuf> {
    let mut build = cargo();
    build.args(RELEASE_BUILD);
    run(build)?;
    Ok(target_dir().join("release").join("extdns-e2e"))
}

/// extdns with the allocator the shipped binary has, so that memory figures are the shipped binary's, and the
/// e2e runner.
const RELEASE_BUILD: [&str; 8] = [
    "build",
    "--release",
    "-p",
    "extdns",
    "-p",
    "extdns-e2e",
    "--features",
    "extdns/jemalloc",
];

/// Runs `harness <args>` on `extdns` with the paths of every other program.
pub(crate) fn run_e2e(go: &gobuild::GoBinaries, harness: &Path, extdns: &Path, args: &[String]) -> Result<()> {
    let mut cmd = Command::new(harness);
    cmd.current_dir(root())
        .arg(format!("--etcd={}", go.etcd.display()))
        .arg(format!("--kube-apiserver={}", go.kube_apiserver.display()))
        .arg(format!("--kubectl={}", go.kubectl.display()))
        .arg(format!("--external-dns={}", go.external_dns.display()))
        .arg(format!(
            "--external-dns-previous={}",
            go.external_dns_previous.display()
        ))
        .arg(format!("--extdns={}", extdns.display()))
        .arg(format!("--logs={}", target_dir().join("e2e-logs").display()))
        .args(args);
    // helm and external-dns's chart, for the chart scenarios (`EXTDNS_TEST_HELM`, `EXTDNS_TEST_EXTERNAL_DNS_CHART`).
    go.export_to(&mut cmd);
    run(cmd)
}
