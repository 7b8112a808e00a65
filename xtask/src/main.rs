//! Project automation, run as `cargo xtask <command>`. Kept dependency-free (std + anyhow) so it builds in
//! seconds and works on a fresh machine.
//!
//! - `dist`: release build of the `extdns` binary into `dist/` with a SHA-256 checksum file.
//! - `bench [FILTER]`: every criterion benchmark in the workspace (or those matching FILTER).
//! - `e2e`: the tests that run against real DNS servers (BIND, Knot), after checking the servers are installed.
//! - `fuzz [--seconds N] [TARGET...]`: the cargo-fuzz targets in `fuzz/`, each for a bounded time (nightly).

mod fuzz;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let command = args.next().unwrap_or_default();
    let rest: Vec<String> = args.collect();
    match command.as_str() {
        "dist" => dist(),
        "bench" => bench(&rest),
        "e2e" => e2e(),
        "fuzz" => fuzz::fuzz(&rest),
        _ => {
            eprintln!("usage: cargo xtask <dist | bench [FILTER] | e2e | fuzz [--seconds N] [TARGET...]>");
            std::process::exit(2);
        }
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string()));
    cmd.current_dir(root());
    cmd
}

fn run(mut cmd: Command) -> Result<()> {
    let shown = format!("{cmd:?}");
    let status = cmd.status().with_context(|| format!("cannot start {shown}"))?;
    if !status.success() {
        bail!("{shown} failed with {status}");
    }
    Ok(())
}

fn dist() -> Result<()> {
    let mut build = cargo();
    build.args(["build", "--release", "--locked", "-p", "extdns"]);
    run(build)?;
    let dist = root().join("dist");
    std::fs::create_dir_all(&dist)?;
    let binary = root().join("target/release/extdns");
    let target = dist.join("extdns");
    std::fs::copy(&binary, &target).with_context(|| format!("copying {}", binary.display()))?;
    let mut sum = Command::new("sha256sum");
    sum.arg("extdns").current_dir(&dist);
    let out = sum
        .output()
        .context("sha256sum is needed to write the checksum (coreutils)")?;
    if !out.status.success() {
        bail!("sha256sum failed");
    }
    std::fs::write(dist.join("extdns.sha256"), &out.stdout)?;
    print!("{}", String::from_utf8_lossy(&out.stdout));
    println!("wrote {}", target.display());
    Ok(())
}

fn bench(filter: &[String]) -> Result<()> {
    let mut cmd = cargo();
    cmd.args(["bench", "--workspace", "--benches"]);
    if !filter.is_empty() {
        cmd.arg("--").args(filter);
    }
    run(cmd)
}

fn e2e() -> Result<()> {
    let missing: Vec<&str> = [("named", "bind9"), ("knotd", "knot"), ("dig", "bind9-dnsutils")]
        .into_iter()
        .filter(|(bin, _)| !on_path(bin))
        .map(|(_, pkg)| pkg)
        .collect();
    if !missing.is_empty() {
        bail!("real DNS servers are missing: apt-get install -y {}", missing.join(" "));
    }
    let mut cmd = cargo();
    cmd.args([
        "test",
        "-p",
        "extdns-provider-rfc2136",
        "-p",
        "extdns",
        "--",
        "--test-threads=2",
    ]);
    run(cmd)
}

fn on_path(bin: &str) -> bool {
    let dirs = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&dirs)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
        .any(|d| d.join(bin).is_file())
}
