//! Scenario 4: kube-apiserver stops for 10 s (etcd keeps running and compacts its history meanwhile) and
//! comes back on the same address. extdns keeps running and keeps syncing from what it has, deleting
//! nothing; its watches resume, the ones whose resourceVersion was compacted away get `410 Gone` and relist,
//! and the changes made after the restart reach DNS.

use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use crate::controllers::{Run, Which};
use crate::dns;
use crate::objects as o;

use super::Ctx;
use super::wait::{alive, answers, ownership};

const OUTAGE: Duration = Duration::from_secs(10);

pub fn run(ctx: &mut Ctx) -> Result<()> {
    let ns = ctx.namespace("outage")?;
    let server = dns::bind();
    let svc = |name: &str, ip: &str| o::lb_at(&ns, name, &format!("{name}.example.org"), ip);
    ctx.cp.kube.apply(&svc("a", "203.0.113.30"))?;
    ctx.cp.kube.apply(&svc("b", "203.0.113.31"))?;

    // A short interval: extdns keeps syncing through the outage, from the objects it already has.
    let run = Run::new(Which::Extdns, &ns).flag("--events").flag("--interval=2s");
    let mut extdns = run.start(&ctx.cp, &server, &ctx.log("outage-extdns"))?;
    answers(&server, &mut extdns, "a.example.org", "A", &["203.0.113.30"])?;
    answers(&server, &mut extdns, "b.example.org", "A", &["203.0.113.31"])?;
    let zone_before = dns::zone(&server)?;
    let serial = server.serial(dns::ZONE);
    let log_before = extdns.log_text().len();

    eprintln!("  stopping kube-apiserver for {} s", OUTAGE.as_secs());
    let stopped = Instant::now();
    ctx.cp.stop_apiserver();
    let revision = ctx.cp.compact_etcd()?;
    eprintln!("  etcd compacted at revision {revision}");
    while stopped.elapsed() < OUTAGE {
        alive(&mut extdns)?;
        std::thread::sleep(Duration::from_millis(500));
    }
    alive(&mut extdns)?;
    if server.serial(dns::ZONE) != serial || dns::zone(&server)? != zone_before {
        bail!(
            "the zone changed while the API server was down:\n{}",
            extdns.log_tail(30)
        );
    }
    let during = extdns.log_text()[log_before..].to_string();
    if !during.contains("watch failed") {
        bail!(
            "extdns did not notice the outage (no failed watch logged):\n{}",
            extdns.log_tail(30)
        );
    }
    let syncs_during = during.matches("All records are already up to date").count();
    eprintln!("  during the outage: extdns kept running, {syncs_during} syncs changed nothing");

    ctx.cp.restart_apiserver()?;
    // Changes made after the restart: one new, one gone, one updated.
    ctx.cp.kube.apply(&svc("c", "203.0.113.33"))?;
    ctx.cp.kube.delete("v1", "Service", Some(&ns), "b")?;
    ctx.cp.kube.apply(&svc("a", "203.0.113.32"))?;
    answers(&server, &mut extdns, "c.example.org", "A", &["203.0.113.33"])?;
    answers(&server, &mut extdns, "b.example.org", "A", &[])?;
    ownership(&server, &mut extdns, "A", "b.example.org", false)?;
    answers(&server, &mut extdns, "a.example.org", "A", &["203.0.113.32"])?;
    alive(&mut extdns)?;

    // The resumed watches were refused for their compacted resourceVersion (410 Gone, reason Expired) and
    // relisted: the changes above arrived through the relisted, re-established watches.
    let log = extdns.log_text();
    let expired = log[log_before..]
        .lines()
        .filter(|l| l.contains("too old resource version") && l.contains("Expired"))
        .count();
    // A restarted server can refuse requests (403) until its authorizer has read the RBAC objects; a watch
    // that retries in that window is refused and its kind relisted after the refusal instead, so on a loaded
    // machine every watch may take that path. Either way the kind was listed again, not resumed blindly.
    let refused = log[log_before..]
        .lines()
        .filter(|l| l.contains("cannot list this kind") && l.contains("status=403"))
        .count();
    if expired == 0 && refused == 0 {
        bail!(
            "no watch answered 410 Gone (too old resource version) after the restart, and none was refused:\n{}",
            crate::proc::tail(&log[log_before..], 40)
        );
    }
    eprintln!(
        "  {expired} watches resumed with a compacted resourceVersion, got 410 Gone and relisted; {refused} \
         were refused while the restarted server's authorizer caught up, and relisted after"
    );
    Ok(())
}
