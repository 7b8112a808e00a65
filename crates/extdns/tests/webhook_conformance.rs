//! `extdns webhook-conformance` against the real external-dns v0.23.0 webhook server, and its exit codes.
//!
//! `external-dns --webhook-server` always listens on 127.0.0.1:8888, which other tests and engineers on the
//! same machine may hold. Each run therefore gets its own network namespace (`unshare --net
//! --map-root-user`, util-linux; loopback raised with `ip`, iproute2): external-dns and the extdns command
//! both run inside it, so the port is private and nothing leaks out.

use std::process::Output;

use extdns_test_support::proc::OwnedChild;
use extdns_test_support::{env_program, free_port, require};
use extdns_webhook_conformance::{CHECKS, Kind, kind_of};

type Error = Box<dyn std::error::Error>;

/// The script run inside the namespace: loopback up, external-dns serving its in-memory provider over the
/// webhook protocol, the extdns command against it (the kit retries negotiation while external-dns starts),
/// then external-dns killed (as a webhook server it ignores SIGTERM: the signal cancels its controller
/// context, which the HTTP server does not watch). Its exit code is the command's.
const SCRIPT: &str = r#"
ip link set lo up || exit 97
"$EXTERNAL_DNS" --webhook-server --provider=inmemory --inmemory-zone=example.org \
    --source=fake --policy=sync --metrics-address=127.0.0.1:7979 >"$EDNS_LOG" 2>&1 &
edns=$!
"$EXTDNS" webhook-conformance --url http://127.0.0.1:8888 "$@"
rc=$?
kill -KILL "$edns"
wait "$edns" 2>/dev/null
exit $rc
"#;

/// Runs `extdns webhook-conformance <args>` against external-dns in a fresh network namespace.
fn against_external_dns(args: &[&str]) -> Result<(Output, String), Error> {
    let dir = tempfile::tempdir()?;
    let log = dir.path().join("external-dns.log");
    let mut cmd = extdns_test_support::cli::command("unshare", &[]);
    cmd.args(["--net", "--map-root-user", "--", "sh", "-c", SCRIPT, "sh"])
        .args(args)
        .env("EXTERNAL_DNS", env_program("EXTDNS_TEST_EXTERNAL_DNS")?)
        .env("EXTDNS", env!("CARGO_BIN_EXE_extdns"))
        .env("EDNS_LOG", &log);
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run unshare (util-linux): {e}"))?;
    let log_text = std::fs::read_to_string(&log).unwrap_or_default();
    Ok((out, log_text))
}

/// The lines of every check, asserting each named check printed PASS.
fn assert_all_pass(out: &Output, edns_log: &str) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let context = format!(
        "stdout:\n{stdout}\nstderr:\n{stderr}\nexternal-dns log (tail):\n{}",
        tail(edns_log)
    );
    assert_ne!(
        out.status.code(),
        Some(97),
        "cannot raise loopback in the namespace (iproute2)\n{context}"
    );
    for name in CHECKS {
        let line = match kind_of(name) {
            Kind::Protocol => format!("PASS {name}"),
            _ => format!("SUPPORTED {name}"),
        };
        assert!(stdout.lines().any(|l| l == line), "missing `{line}`\n{context}");
    }
    assert!(!stdout.contains("FAIL") && !stdout.contains("UNSUPPORTED"), "{context}");
    assert_eq!(out.status.code(), Some(0), "{context}");
}

fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

#[test]
fn external_dns_webhook_server_passes_every_check() -> Result<(), Error> {
    require!(ExternalDns, NetNamespace);
    let (out, log) = against_external_dns(&[])?;
    assert_all_pass(&out, &log);
    // external-dns's in-memory provider negotiates an empty filter, so the documented default zone is used.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("capabilities supported (zone example.org)"), "{stdout}");
    Ok(())
}

#[test]
fn external_dns_webhook_server_passes_under_a_chosen_zone() -> Result<(), Error> {
    require!(ExternalDns, NetNamespace);
    let (out, log) = against_external_dns(&["--zone", "Sub.Example.org."])?;
    assert_all_pass(&out, &log);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("capabilities supported (zone sub.example.org)"),
        "{stdout}"
    );
    Ok(())
}

fn extdns(args: &[&str]) -> Result<Output, Error> {
    let mut cmd = extdns_test_support::cli::command(env!("CARGO_BIN_EXE_extdns"), &[]);
    Ok(cmd.arg("webhook-conformance").args(args).output()?)
}

#[test]
fn bad_usage_exits_2() -> Result<(), Error> {
    for args in [
        &[][..],
        &["--url", "not a url"][..],
        &["--url", "ftp://127.0.0.1/"][..],
        &["--url", "http://127.0.0.1:1", "--zone", "a..b"][..],
        &["--url", "http://127.0.0.1:1", "--source=service"][..],
    ] {
        let out = extdns(args)?;
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    Ok(())
}

#[test]
fn an_unreachable_server_exits_1_naming_the_check() -> Result<(), Error> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let url = format!("http://{}", listener.local_addr()?);
    drop(listener);
    let out = extdns(&["--url", &url])?;
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.lines().any(|l| l.starts_with("FAIL negotiate.status-200: ")),
        "{stdout}"
    );
    Ok(())
}

#[test]
fn extdns_webhook_server_passes_every_check() -> Result<(), Error> {
    let (port, metrics) = (free_port(), free_port());
    let mut server = extdns_test_support::cli::command(env!("CARGO_BIN_EXE_extdns"), &[]);
    server
        .args([
            "--webhook-server",
            "--provider=inmemory",
            "--inmemory-zone=example.org",
            "--source=service",
        ])
        .arg(format!("--webhook-server-address=127.0.0.1:{port}"))
        .arg(format!("--metrics-address=127.0.0.1:{metrics}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // Killed when the test ends, however it ends.
    let _server = OwnedChild(server.spawn()?);
    // The kit retries negotiation while the server starts.
    let out = extdns(&["--url", &format!("http://127.0.0.1:{port}")])?;
    assert_all_pass(&out, "");
    // extdns negotiates its provider's zones, so the kit writes under the in-memory zone.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("capabilities supported (zone example.org)"), "{stdout}");
    Ok(())
}
