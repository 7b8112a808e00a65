//! The system programs the real-server tests run, from Debian packages: installed with apt-get when xtask
//! runs as root, otherwise named in an error with the exact command to run.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

/// What xtask looks for to tell whether a Debian package is installed.
enum Provides {
    /// A program on PATH (or in /usr/sbin, /sbin).
    Program(&'static str),
    /// A file, for packages without a program of their own (PowerDNS's sqlite3 backend is a module
    /// `pdns_server` loads; its schema is the arch-independent file to look for).
    File(&'static str),
    /// A module `python3` can import: Debian's python3 lacks `ensurepip`, so `python3 -m venv` fails
    /// until python3-venv is installed (the Route53 tests install moto into a venv, `ensure_moto`).
    PythonModule(&'static str),
}

impl Provides {
    fn present(&self) -> bool {
        match self {
            Provides::Program(name) => crate::find_program(name).is_some(),
            Provides::File(path) => Path::new(path).is_file(),
            Provides::PythonModule(module) => Command::new("python3")
                .args(["-c", &format!("import {module}")])
                .output()
                .is_ok_and(|o| o.status.success()),
        }
    }
}

/// What the tests and release builds need beyond the toolchains (the real servers, and make for jemalloc) →
/// the Debian package that provides it.
const REQUIRED: &[(Provides, &str)] = &[
    // Release builds (feature `jemalloc`: `dist`, `bench scale`, `latency`) build jemalloc from source with make.
    (Provides::Program("make"), "make"),
    (Provides::Program("named"), "bind9"),
    (Provides::Program("knotd"), "knot"),
    (Provides::Program("dig"), "bind9-dnsutils"),
    // The built-in DNS server's answers are checked with Knot's client as well as BIND's.
    (Provides::Program("kdig"), "knot-dnsutils"),
    (Provides::Program("openssl"), "openssl"),
    (Provides::Program("kill"), "procps"),
    (Provides::PythonModule("ensurepip"), "python3-venv"),
    // The webhook conformance test runs external-dns (fixed port 8888) in its own network namespace.
    (Provides::Program("unshare"), "util-linux"),
    (Provides::Program("ip"), "iproute2"),
    (Provides::Program("pdns_server"), "pdns-server"),
    (Provides::Program("pdnsutil"), "pdns-server"),
    (Provides::Program("sqlite3"), "sqlite3"),
    // The Pi-hole fake's lists are served by a real dnsmasq: the binary alone (dnsmasq-base), so no system
    // service is installed or started.
    (Provides::Program("dnsmasq"), "dnsmasq-base"),
    (
        Provides::File("/usr/share/pdns-backend-sqlite3/schema/schema.sqlite3.sql"),
        "pdns-backend-sqlite3",
    ),
    // The chart's alerts are tested with `promtool test rules` (crates/extdns/tests/observability.rs); Debian
    // ships promtool with the server, whose service a container never starts.
    (Provides::Program("promtool"), "prometheus"),
    // The DNSSEC tests validate the built-in server's signed zones with Unbound as well as BIND.
    (Provides::Program("unbound"), "unbound"),
    // What the DNSSEC suites call besides: Unbound's control program (anchors swapped with the cache kept)
    // and BIND's `delv`, checked by the harness on their own (a machine may have dig without delv).
    (Provides::Program("unbound-control"), "unbound"),
    (Provides::Program("delv"), "bind9-dnsutils"),
];

/// The packages whose programs or files are missing, each once, in table order.
fn missing_packages() -> Vec<&'static str> {
    let mut missing: Vec<&str> = Vec::new();
    for (provides, package) in REQUIRED {
        if !missing.contains(package) && !provides.present() {
            missing.push(package);
        }
    }
    missing
}

/// Makes sure everything [`REQUIRED`] lists is there.
pub fn ensure_system_packages() -> Result<()> {
    let missing = missing_packages();
    if missing.is_empty() {
        return Ok(());
    }
    apt_install(&missing)?;
    let still = missing_packages();
    if !still.is_empty() {
        bail!("still missing after the install: {}", still.join(", "));
    }
    Ok(())
}

/// Programs a benchmark alone needs (`bench serve`: dnsperf), given as (program, Debian package): installed
/// like [`REQUIRED`]'s when missing, but not part of what the tests need.
pub fn ensure_programs(needed: &[(&str, &str)]) -> Result<()> {
    let missing: Vec<&str> = needed
        .iter()
        .filter(|(program, _)| crate::find_program(program).is_none())
        .map(|(_, package)| *package)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    apt_install(&missing)
}

/// Installs Debian packages with apt-get when xtask runs as root; otherwise an error naming the command to run.
pub fn apt_install(packages: &[&str]) -> Result<()> {
    let install = format!("apt-get install -y --no-install-recommends {}", packages.join(" "));
    if !is_root() || crate::find_program("apt-get").is_none() {
        bail!(
            "{} missing: run `sudo apt-get update && sudo {install}`",
            packages.join(", ")
        );
    }
    eprintln!("xtask: installing {}", packages.join(" "));
    // Debian's maintainer scripts would start the system's named and knotd; the tests start their own on
    // free ports, so keep the packaged services from starting while we install (unless a policy exists).
    let policy = Path::new("/usr/sbin/policy-rc.d");
    let own_policy = !policy.exists();
    if own_policy {
        std::fs::write(
            policy,
            "#!/bin/sh\n# written by cargo xtask for the duration of an install\nexit 101\n",
        )
        .with_context(|| format!("writing {}", policy.display()))?;
        set_executable(policy)?;
    }
    let result = (|| {
        let mut update = Command::new("apt-get");
        update.args(["update", "-qq"]);
        crate::run(update)?;
        let mut cmd = Command::new("apt-get");
        cmd.args(["install", "-y", "-qq", "--no-install-recommends"])
            .args(packages)
            .env("DEBIAN_FRONTEND", "noninteractive");
        crate::run(cmd)
    })();
    if own_policy {
        let _ = std::fs::remove_file(policy);
    }
    result
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

fn set_executable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mut perms = std::fs::metadata(path)?.permissions();
    perms.set_mode(0o755);
    std::fs::set_permissions(path, perms).with_context(|| format!("chmod {}", path.display()))
}

/// The command that installs moto's Route53 server, named when xtask cannot run it itself.
const MOTO_INSTALL: &str = "python3 -m venv target/moto-venv && target/moto-venv/bin/pip install 'moto[server]'";

/// moto's `moto_server`, which the Route53 tests start: the one in `target/moto-venv`, else one on PATH,
/// else installed into `target/moto-venv` with pip (the venv keeps it out of the system's Python).
pub fn ensure_moto(target: &Path) -> Result<std::path::PathBuf> {
    let venv = target.join("moto-venv");
    let server = venv.join("bin/moto_server");
    if server.is_file() {
        return Ok(server);
    }
    if let Some(found) = crate::find_program("moto_server") {
        return Ok(found);
    }
    if crate::find_program("python3").is_none() {
        bail!(
            "the Route53 tests need moto's server and python3 is missing: install python3 (with venv), then run `{MOTO_INSTALL}`"
        );
    }
    eprintln!("xtask: installing moto[server] into {}", venv.display());
    let mut make = Command::new("python3");
    make.args(["-m", "venv"]).arg(&venv);
    crate::run(make).with_context(|| {
        format!("creating the venv failed (Debian needs python3-venv); run `{MOTO_INSTALL}` yourself")
    })?;
    let mut pip = Command::new(venv.join("bin/pip"));
    pip.args(["install", "--quiet", "moto[server]"]);
    crate::run(pip).with_context(|| format!("installing moto failed; run `{MOTO_INSTALL}` yourself"))?;
    if !server.is_file() {
        bail!(
            "{} is still missing after the install; run `{MOTO_INSTALL}`",
            server.display()
        );
    }
    Ok(server)
}
