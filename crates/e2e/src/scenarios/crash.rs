//! Scenario 3: `kill -9` while extdns is writing, then a restart. Nothing is lost (every record arrives),
//! nothing is duplicated (one answer and one ownership record per name, no record without its ownership
//! record), and a further start finds nothing to change.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use crate::controllers::{OWNER, Run, Which};
use crate::dns::{self, DnsServer};
use crate::objects as o;
use crate::proc::eventually;

use super::Ctx;
use super::wait::CONVERGE;

const SERVICES: usize = 60;

fn host(i: usize) -> String {
    format!("crash-{i}.example.org")
}

fn ip(i: usize) -> String {
    format!("203.0.113.{}", i + 1)
}

/// How far the zone is: the names with an address record, and the names with an ownership record.
fn progress(server: &DnsServer) -> Result<(BTreeSet<String>, BTreeSet<String>)> {
    let zone = dns::zone(server)?;
    let records = zone
        .iter()
        .filter(|r| r.rtype == "A" && r.name.starts_with("crash-"))
        .map(|r| r.name.trim_end_matches('.').to_string())
        .collect();
    let owned = dns::owned_txt(&zone, OWNER)
        .iter()
        .filter_map(|r| r.name.strip_prefix("a-"))
        .map(|n| n.trim_end_matches('.').to_string())
        .collect();
    Ok((records, owned))
}

pub fn run(ctx: &mut Ctx) -> Result<()> {
    let ns = ctx.namespace("crash")?;
    for i in 0..SERVICES {
        ctx.cp
            .kube
            .apply(&o::lb_at(&ns, &format!("svc-{i}"), &host(i), &ip(i)))?;
    }
    // Two records and their two ownership records per DNS UPDATE, so the first sync is many round trips
    // long and a kill lands between two of them. (A batch size of 1 would send a record and its ownership
    // record in separate messages, and a kill between those leaves a record no owner claims.)
    let run = Run::new(Which::Extdns, &ns)
        .flag("--events")
        .flag("--interval=1h")
        .flag("--rfc2136-batch-change-size=4");

    let mut attempt = 0;
    let server = loop {
        attempt += 1;
        let server = dns::bind();
        let mut extdns = run.start(&ctx.cp, &server, &ctx.log(&format!("crash-extdns-{attempt}")))?;
        // Kill as soon as some but not all records are in.
        let deadline = Instant::now() + CONVERGE;
        let mut killed_at = None;
        while Instant::now() < deadline {
            let (records, owned) = progress(&server)?;
            let n = records.len().max(owned.len());
            if n > 0 && n < SERVICES {
                extdns.kill9();
                killed_at = Some(n);
                break;
            }
            if n == SERVICES {
                break;
            }
            if extdns.exited().is_some() {
                bail!("extdns exited before the kill:\n{}", extdns.log_tail(30));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        drop(extdns);
        match killed_at {
            Some(n) => {
                eprintln!("  killed extdns (SIGKILL) with {n} of {SERVICES} names written (attempt {attempt})");
                break server;
            }
            None if attempt < 3 => eprintln!("  the first sync finished before the kill; again with a fresh zone"),
            None => bail!("could not kill extdns mid-sync in {attempt} attempts"),
        }
    };

    // Restart: it converges on everything.
    let mut extdns = run.start(&ctx.cp, &server, &ctx.log("crash-extdns-restart"))?;
    let want: BTreeSet<String> = (0..SERVICES).map(host).collect();
    eventually(
        "every record and ownership record after the restart",
        CONVERGE,
        Duration::from_millis(200),
        || {
            if extdns.exited().is_some() {
                bail!("extdns exited after the restart:\n{}", extdns.log_tail(30));
            }
            let (records, owned) = progress(&server)?;
            Ok((records == want && owned == want).then_some(()))
        },
    )?;
    drop(extdns);

    // Nothing duplicated: one answer per name, the right one, and one ownership record per name.
    let zone = dns::zone(&server)?;
    for i in 0..SERVICES {
        let name = host(i);
        let got = dns::answers(&server, &name, "A");
        if got != vec![ip(i)] {
            bail!("{name} A: want [{}], got {got:?}", ip(i));
        }
        let txt = dns::records_of(&zone, &format!("a-{name}"));
        if txt.len() != 1 {
            bail!("{} ownership records for {name}: {txt:?}", txt.len());
        }
    }

    // A further start, killed the same way after its sync, changes nothing; neither does --once.
    let serial = server.serial(dns::ZONE);
    let mut extdns = run.start(&ctx.cp, &server, &ctx.log("crash-extdns-steady"))?;
    crate::controllers::wait_for_log(&mut extdns, "All records are already up to date", CONVERGE)?;
    extdns.kill9();
    Run::new(Which::Extdns, &ns).once(&ctx.cp, &server)?;
    if server.serial(dns::ZONE) != serial {
        bail!("a start after convergence changed the zone");
    }
    Ok(())
}
