//! Incremental reconcile on a real API server: a change to one Service writes that Service's record and no
//! other, planned against the records extdns cached (a record edited by hand in BIND meanwhile is not
//! noticed), and the next full sync (`--interval`) reads the zone again and repairs the edit.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::controllers::{Run, Which};
use crate::dns::{self, DnsServer, KEY_NAME, SECRET};
use crate::objects as o;

use super::Ctx;
use super::wait::{answers, record_writes};

/// Long enough that the steps before the repair run between two full syncs even on a loaded machine.
const INTERVAL: Duration = Duration::from_secs(20);

fn host(name: &str) -> String {
    format!("{name}.{}", dns::ZONE)
}

/// Replaces the A record of `name` behind extdns's back, with BIND's own `nsupdate`.
fn edit_by_hand(server: &DnsServer, name: &str, ip: &str) -> Result<()> {
    let script = format!(
        "server 127.0.0.1 {}\nzone {}\nupdate delete {name}. A\nupdate add {name}. 300 A {ip}\nsend\n",
        server.port,
        dns::ZONE
    );
    let mut child = Command::new(dns::need("nsupdate"))
        .args(["-y", &format!("hmac-sha256:{KEY_NAME}:{SECRET}")])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting nsupdate")?;
    if let Some(stdin) = child.stdin.as_mut() {
        use std::io::Write;
        stdin.write_all(script.as_bytes())?;
    }
    let out = child.wait_with_output()?;
    if !out.status.success() {
        bail!("nsupdate failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}

pub fn run(ctx: &mut Ctx) -> Result<()> {
    let ns = ctx.namespace("drift")?;
    let server = dns::bind();
    let kube = &ctx.cp.kube;
    let service = |name: &str, ip: &str| o::lb_at(&ns, name, &host(name), ip);
    for (name, ip) in [
        ("one", "198.51.100.1"),
        ("two", "198.51.100.2"),
        ("three", "198.51.100.3"),
    ] {
        kube.apply(&service(name, ip))?;
    }
    let interval = format!("--interval={}s", INTERVAL.as_secs());
    let run = Run::new(Which::Extdns, &ns).flag("--events").flag(interval.as_str());
    let started = Instant::now();
    let mut extdns = run.start(&ctx.cp, &server, &ctx.log("drift-extdns"))?;
    answers(&server, &mut extdns, &host("three"), "A", &["198.51.100.3"])?;
    answers(&server, &mut extdns, &host("one"), "A", &["198.51.100.1"])?;

    edit_by_hand(&server, &host("one"), "203.0.113.66")?;
    let before = record_writes(&extdns.log_text()).len();
    kube.apply(&service("two", "198.51.100.22"))?;
    answers(&server, &mut extdns, &host("two"), "A", &["198.51.100.22"])?;
    if started.elapsed() >= INTERVAL {
        bail!(
            "the steps took {:?}, longer than the interval: the full sync may have run in between",
            started.elapsed()
        );
    }
    let log = extdns.log_text();
    let since: Vec<&str> = record_writes(&log).into_iter().skip(before).collect();
    if since.len() != 1 || !since[0].contains(&host("two")) {
        bail!("the change to Service two must write exactly its record, wrote: {since:#?}");
    }
    let edited = dns::answers(&server, &host("one"), "A");
    if edited != ["203.0.113.66"] {
        bail!("the incremental sync must plan against its cache, not read the zone: one answers {edited:?}");
    }
    println!("  change to one Service: 1 record written; the hand edit is left until the full sync");

    // The full sync reads the zone and puts the record back.
    answers(&server, &mut extdns, &host("one"), "A", &["198.51.100.1"])?;
    println!("  full sync {:?} after start repaired the hand edit", started.elapsed());
    extdns.terminate(Duration::from_secs(10));
    Ok(())
}
