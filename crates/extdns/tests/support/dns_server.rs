//! extdns with its built-in DNS server over the examples, as dns_server.rs and observability.rs run it.

// The manifest tests (chart, deploy) include `support` too and use none of this.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use extdns_test_support::http_get;
use extdns_test_support::proc::{Proc, eventually};

type Error = Box<dyn std::error::Error>;

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// extdns over the examples with the dns-server on a port of its choosing, with a clean `EXTERNAL_DNS_*`
/// environment, its log in `dir`.
pub fn start(dir: &Path, extra: &[&str]) -> Result<Proc, Error> {
    let mut cmd = extdns_test_support::cli::command(env!("CARGO_BIN_EXE_extdns"), &[]);
    cmd.args([
        "--provider=dns-server",
        "--dns-server-zone=example.com",
        "--dns-server-listen=127.0.0.1:0",
    ])
    .args(["--source=service", "--source=gateway-httproute", "--manifests"])
    .arg(examples())
    .args(extra);
    Ok(Proc::spawn("extdns", cmd, &dir.join("extdns.log"))?)
}

/// The port the log says the server answers on (port 0 asked the system for one).
pub fn served_port(p: &Proc) -> Result<u16, Error> {
    Ok(eventually(
        "the DNS server's address in the log",
        Duration::from_secs(30),
        Duration::from_millis(50),
        || {
            Ok(p.log_text().lines().find_map(|l| {
                let rest = l.split("answering DNS for the zones on 127.0.0.1:").nth(1)?;
                rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
            }))
        },
    )?)
}

/// Waits until a running extdns's `/readyz` answers 200 (its first full sync done).
pub fn wait_ready(metrics: u16) -> Result<(), Error> {
    eventually(
        "/readyz to answer 200",
        Duration::from_secs(60),
        Duration::from_millis(50),
        || {
            Ok(http_get(metrics, "/readyz")
                .ok()
                .filter(|r| r.starts_with("HTTP/1.1 200")))
        },
    )?;
    Ok(())
}
