//! `cargo xtask fuzz [--seconds N] [--no-sanitizer] [TARGET...]`: every cargo-fuzz target in `fuzz/` (or those named) for a
//! bounded time each, failing on any crash, with the executions per target.
//!
//! The targets are built once, then each runs on a working corpus under `fuzz/target/corpus/<target>`
//! seeded from the committed `fuzz/corpus/<target>`: new inputs libFuzzer finds stay out of the git tree,
//! and accumulate between local runs. Crashing inputs land in `fuzz/artifacts/<target>/`.
//!
//! The build goes to a cache outside the checkout ([`build_dir`]), as Go's build cache and cargo's registry
//! are: CI runs in a fresh clone, and a `fuzz/target` inside it made every run compile the nightly,
//! coverage-instrumented dependency tree again (most of the stage). Only the workspace's own crates, whose
//! sources a fresh clone writes anew, are compiled again.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::{output, root, run};

/// Seconds per target when `--seconds` is not given.
const DEFAULT_SECONDS: u64 = 30;
/// An input slower than this is reported as a hang (libFuzzer's `-timeout`).
const INPUT_TIMEOUT_SECONDS: u64 = 30;
/// Memory above this is reported as a crash (libFuzzer's `-rss_limit_mb`).
const RSS_LIMIT_MB: u64 = 2048;

struct Outcome {
    target: String,
    execs: Option<u64>,
    seconds: f64,
    corpus: usize,
    crash: Option<String>,
}

pub fn fuzz(args: &[String]) -> Result<()> {
    let Args {
        seconds,
        mut targets,
        sanitizer,
    } = parse_args(args)?;
    let dir = root().join("fuzz");
    check_nightly()?;
    ensure_cargo_fuzz()?;

    let known = list_targets(&dir)?;
    if targets.is_empty() {
        targets = known.clone();
    }
    if let Some(unknown) = targets.iter().find(|t| !known.contains(t)) {
        bail!("no fuzz target {unknown:?}; the targets are {}", known.join(", "));
    }

    // One build of every target; the runs below find it up to date.
    let mut build = nightly_cargo(&dir);
    build.args(["fuzz", "build"]).args(sanitizer_args(sanitizer));
    run(build)?;

    let mut outcomes = Vec::new();
    for target in &targets {
        outcomes.push(run_target(&dir, target, seconds, sanitizer)?);
    }

    println!(
        "\n{:<12} {:>12} {:>9} {:>8} {:>8}  result",
        "target", "execs", "execs/s", "seconds", "corpus"
    );
    for o in &outcomes {
        let execs = o.execs.map_or_else(|| "?".to_string(), |e| e.to_string());
        let rate = o
            .execs
            .map_or_else(|| "?".to_string(), |e| format!("{:.0}", e as f64 / o.seconds.max(1.0)));
        let result = o.crash.as_deref().unwrap_or("ok");
        println!(
            "{:<12} {:>12} {:>9} {:>8.0} {:>8}  {result}",
            o.target, execs, rate, o.seconds, o.corpus
        );
    }
    let failed: Vec<&str> = outcomes
        .iter()
        .filter(|o| o.crash.is_some())
        .map(|o| o.target.as_str())
        .collect();
    if !failed.is_empty() {
        bail!(
            "fuzz targets failed: {} (inputs in fuzz/artifacts/; replay with `cargo +nightly fuzz run <target> <input>` in fuzz/)",
            failed.join(", ")
        );
    }
    Ok(())
}

/// What to run and how: `--seconds N` per target, `--no-sanitizer` to build without AddressSanitizer.
struct Args {
    seconds: u64,
    targets: Vec<String>,
    /// The project forbids `unsafe`, so AddressSanitizer finds little that Rust's own checks miss; without it
    /// the build is about a third cheaper and runs faster, which is what a short CI run wants. Coverage
    /// guidance and every assertion stay.
    sanitizer: bool,
}

fn parse_args(args: &[String]) -> Result<Args> {
    let mut seconds = DEFAULT_SECONDS;
    let mut targets = Vec::new();
    let mut sanitizer = true;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--no-sanitizer" {
            sanitizer = false;
            continue;
        }
        let value = if a == "--seconds" {
            Some(it.next().context("--seconds needs a number")?.as_str())
        } else {
            a.strip_prefix("--seconds=")
        };
        match value {
            Some(v) => {
                seconds = v
                    .parse()
                    .ok()
                    .filter(|s| *s > 0)
                    .with_context(|| format!("--seconds {v:?} is not a positive number"))?;
            }
            None if a.starts_with('-') => {
                bail!("unknown option {a}; usage: cargo xtask fuzz [--seconds N] [--no-sanitizer] [TARGET...]")
            }
            None => targets.push(a.clone()),
        }
    }
    Ok(Args {
        seconds,
        targets,
        sanitizer,
    })
}

/// `cargo fuzz build` and `cargo fuzz run` must agree on the sanitizer, or `run` rebuilds.
fn sanitizer_args(sanitizer: bool) -> &'static [&'static str] {
    if sanitizer { &[] } else { &["--sanitizer", "none"] }
}

/// Where the fuzz targets are built: `EXTDNS_FUZZ_TARGET_DIR` when set, else
/// `$XDG_CACHE_HOME/extdns/fuzz-target` (`~/.cache/extdns/fuzz-target`), which outlives a checkout. Never the
/// workspace's `CARGO_TARGET_DIR`: the nightly, instrumented builds share nothing with the workspace's.
fn build_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("EXTDNS_FUZZ_TARGET_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")));
    match cache {
        Some(cache) => cache.join("extdns").join("fuzz-target"),
        // No home to cache in: the checkout's own, rebuilt in every clone.
        None => root().join("fuzz").join("target"),
    }
}

/// `cargo +nightly` through rustup's proxy: the `cargo` running xtask is the stable one, and would not
/// understand `+nightly`; its toolchain variables must not leak into the nightly build either. It builds into
/// [`build_dir`].
fn nightly_cargo(dir: &Path) -> Command {
    let mut cmd = Command::new("cargo");
    cmd.arg("+nightly")
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", build_dir())
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("CARGO")
        .env_remove("RUSTC")
        .env_remove("RUSTDOC");
    cmd
}

fn check_nightly() -> Result<()> {
    let ok = nightly_cargo(&root())
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        bail!("fuzzing needs the nightly toolchain: rustup toolchain install nightly --profile minimal");
    }
    Ok(())
}

fn ensure_cargo_fuzz() -> Result<()> {
    let present = nightly_cargo(&root())
        .args(["fuzz", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if present {
        return Ok(());
    }
    println!("cargo-fuzz is missing; installing it");
    let mut install = Command::new("cargo");
    install
        .args(["install", "cargo-fuzz", "--locked"])
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("CARGO");
    run(install)
}

fn list_targets(dir: &Path) -> Result<Vec<String>> {
    let mut list = nightly_cargo(dir);
    list.args(["fuzz", "list"]);
    Ok(output(list)?
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect())
}

fn run_target(dir: &Path, target: &str, seconds: u64, sanitizer: bool) -> Result<Outcome> {
    let seeds = dir.join("corpus").join(target);
    let work = dir.join("target").join("corpus").join(target);
    std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    let logs = dir.join("target").join("logs");
    std::fs::create_dir_all(&logs)?;
    let log_path = logs.join(format!("{target}.log"));
    let mut log = std::fs::File::create(&log_path).with_context(|| format!("creating {}", log_path.display()))?;

    println!("\n== fuzz {target} for {seconds}s (log: {})", log_path.display());
    let mut cmd = nightly_cargo(dir);
    cmd.args(["fuzz", "run"])
        .args(sanitizer_args(sanitizer))
        .arg(target)
        .arg(&work);
    if seeds.is_dir() {
        cmd.arg(&seeds);
    }
    cmd.arg("--")
        .arg(format!("-max_total_time={seconds}"))
        .arg(format!("-timeout={INPUT_TIMEOUT_SECONDS}"))
        .arg(format!("-rss_limit_mb={RSS_LIMIT_MB}"))
        .arg("-print_final_stats=1");
    let dict = dir.join("dict").join(format!("{target}.dict"));
    if dict.is_file() {
        cmd.arg(format!("-dict={}", dict.display()));
    }
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());

    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start cargo fuzz run {target}"))?;
    // libFuzzer reports on stderr; stdout only carries what a target prints.
    let stdout = child.stdout.take();
    let copier = std::thread::spawn(move || {
        let mut lines = Vec::new();
        if let Some(out) = stdout {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                lines.push(line);
            }
        }
        lines
    });
    let mut execs = None;
    let mut tail: VecDeque<String> = VecDeque::new();
    if let Some(err) = child.stderr.take() {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            writeln!(log, "{line}")?;
            if let Some(n) = line.strip_prefix("stat::number_of_executed_units:") {
                execs = n.trim().parse().ok();
            }
            if shows(&line) {
                println!("{line}");
            }
            if tail.len() == 80 {
                tail.pop_front();
            }
            tail.push_back(line);
        }
    }
    let status = child.wait()?;
    for line in copier.join().unwrap_or_default() {
        writeln!(log, "{line}")?;
    }
    let corpus = std::fs::read_dir(&work).map(|d| d.count()).unwrap_or(0);
    let crash = if status.success() {
        None
    } else {
        eprintln!("-- last lines of {}:", log_path.display());
        for line in &tail {
            eprintln!("{line}");
        }
        Some(format!("FAILED ({status})"))
    };
    Ok(Outcome {
        target: target.to_string(),
        execs,
        seconds: started.elapsed().as_secs_f64(),
        corpus,
        crash,
    })
}

/// The lines of libFuzzer's output worth seeing live: findings and the final summary, not the progress.
fn shows(line: &str) -> bool {
    [
        "==",
        "SUMMARY",
        "Done ",
        "panicked",
        "Test unit written",
        "ERROR",
        "error:",
        "stat::",
    ]
    .iter()
    .any(|p| line.starts_with(p) || line.contains("panicked at"))
}
