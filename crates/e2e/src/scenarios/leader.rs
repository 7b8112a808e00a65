//! Leader election on the real API server.
//!
//! `leader`: two extdns replicas with `--leader-elect` against one BIND. Only the leader writes (the
//! follower logs no change); after `kill -9` of the leader the follower takes the lease over and writes a
//! record created right after the kill, within 15 s (the figure is printed); every record is there once.
//!
//! `lease`: the election crate itself against the API server: create, renew, a race of two replicas for an
//! expired lease (one wins, the other gets a conflict), fencing on expiry, and release on shutdown.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use extdns_leader::{ElectionConfig, LeaderElection, LeaseTiming};
use k8s_openapi::api::coordination::v1::Lease;
use serde_json::json;

use crate::controllers::{OWNER, Run, Which, wait_for_log};
use crate::dns;
use crate::objects::{self as o, annotations};

use super::Ctx;
use super::wait::{self, CONVERGE};

/// The namespace of deploy/'s Role, so the ServiceAccount may use the Lease.
const LEASE_NAMESPACE: &str = "extdns";
/// The longest a takeover after a `kill -9` may take.
const TAKEOVER: Duration = Duration::from_secs(15);

fn host(name: &str) -> String {
    format!("{name}.leader.example.org")
}

/// The log lines of a change sent to the provider (any verb).
fn writes(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| l.contains("create record") || l.contains("update record") || l.contains("delete record"))
        .collect()
}

pub fn run(ctx: &mut Ctx) -> Result<()> {
    let ns = ctx.namespace("leader")?;
    let server = dns::bind();
    let services = ["a", "b", "c"];
    for (i, name) in services.iter().enumerate() {
        ctx.cp.kube.apply(&o::lb_service(
            &ns,
            name,
            annotations(&[("hostname", &host(name))]),
            json!([{ "ip": format!("198.51.100.{}", i + 1) }]),
        ))?;
    }
    // Short lease timing so the test is quick: a takeover waits the lease duration plus a retry period.
    let lease = format!("extdns-{ns}");
    let run = Run::new(Which::Extdns, &ns)
        .flag("--events")
        .flag("--interval=1h")
        .flag("--leader-elect")
        .flag(format!("--leader-elect-resource-namespace={LEASE_NAMESPACE}"))
        .flag(format!("--leader-elect-resource-name={lease}"))
        .flag("--leader-elect-lease-duration=6s")
        .flag("--leader-elect-renew-deadline=4s")
        .flag("--leader-elect-retry-period=1s");

    let mut first = run.start(&ctx.cp, &server, &ctx.log("leader-first"))?;
    wait_for_log(&mut first, "became the leader", CONVERGE)?;
    let mut second = run.start(&ctx.cp, &server, &ctx.log("leader-second"))?;
    wait_for_log(&mut second, "not the leader", CONVERGE)?;
    for (i, name) in services.iter().enumerate() {
        wait::answers(
            &server,
            &mut first,
            &host(name),
            "A",
            &[&format!("198.51.100.{}", i + 1)],
        )?;
    }
    // A change while both run: the leader writes it, the follower does not.
    ctx.cp.kube.apply(&o::lb_service(
        &ns,
        "d",
        annotations(&[("hostname", &host("d"))]),
        json!([{ "ip": "198.51.100.4" }]),
    ))?;
    wait::answers(&server, &mut first, &host("d"), "A", &["198.51.100.4"])?;
    std::thread::sleep(Duration::from_secs(1));
    let follower_log = second.log_text();
    if !writes(&follower_log).is_empty() {
        bail!(
            "the follower wrote while another replica led:\n{}",
            writes(&follower_log).join("\n")
        );
    }
    if writes(&first.log_text()).is_empty() {
        bail!("the leader logged no write:\n{}", first.log_tail(30));
    }

    // kill -9 the leader (no release), then create a record at once: the follower must write it.
    first.kill9();
    let killed = Instant::now();
    ctx.cp.kube.apply(&o::lb_service(
        &ns,
        "e",
        annotations(&[("hostname", &host("e"))]),
        json!([{ "ip": "198.51.100.5" }]),
    ))?;
    wait::answers(&server, &mut second, &host("e"), "A", &["198.51.100.5"])?;
    let took = killed.elapsed();
    eprintln!(
        "  takeover: the follower wrote a record created at the kill {:.1} s after the kill -9 \
         (lease duration 6 s, retry period 1 s)",
        took.as_secs_f64()
    );
    if took > TAKEOVER {
        bail!("the takeover took {took:?}, more than {TAKEOVER:?}");
    }
    if !second.log_text().contains("became the leader") {
        bail!("the new leader did not log its election:\n{}", second.log_tail(30));
    }

    // Nothing written twice, nothing lost: every name has its one answer and its one ownership record.
    let zone = dns::zone(&server)?;
    for (i, name) in ["a", "b", "c", "d", "e"].iter().enumerate() {
        let fqdn = host(name);
        let want = vec![format!("198.51.100.{}", i + 1)];
        let got = dns::answers(&server, &fqdn, "A");
        if got != want {
            bail!("{fqdn} A: want {want:?}, got {got:?}");
        }
        let txt = dns::records_of(&zone, &format!("a-{fqdn}"));
        if txt.len() != 1 {
            bail!("{} ownership records for {fqdn}: {txt:?}", txt.len());
        }
    }
    let owned = dns::owned_txt(&zone, OWNER).len();
    if owned != 5 {
        bail!("want 5 ownership records, got {owned}");
    }
    // The old leader's records were not written again by the new one (each name was created once).
    let creates_of = |log: &str, name: &str| writes(log).iter().filter(|l| l.contains(&host(name))).count();
    let (log_1, log_2) = (first.log_text(), second.log_text());
    for name in ["a", "b", "c", "d"] {
        if creates_of(&log_2, name) != 0 || creates_of(&log_1, name) != 1 {
            bail!(
                "{name} was written {} times by the first leader and {} by the second",
                creates_of(&log_1, name),
                creates_of(&log_2, name)
            );
        }
    }
    if creates_of(&log_2, "e") != 1 {
        bail!("the new leader wrote e {} times", creates_of(&log_2, "e"));
    }
    Ok(())
}

/// The lease as stored: holder, transitions, resourceVersion.
fn stored(api: &kube::Api<Lease>, ctx: &Ctx, name: &str) -> Result<(Option<String>, i32, String)> {
    let lease = ctx
        .cp
        .kube
        .block_on(api.get(name))
        .with_context(|| format!("reading lease {name}"))?;
    let spec = lease.spec.unwrap_or_default();
    Ok((
        spec.holder_identity,
        spec.lease_transitions.unwrap_or(0),
        lease.metadata.resource_version.unwrap_or_default(),
    ))
}

pub fn lease(ctx: &mut Ctx) -> Result<()> {
    let ns = ctx.namespace("lease")?;
    let client = ctx.cp.kube.client();
    let api: kube::Api<Lease> = kube::Api::namespaced(client.clone(), &ns);
    let timing = LeaseTiming::new(
        Duration::from_secs(3),
        Duration::from_secs(2),
        Duration::from_millis(500),
    )?;
    let elect = |id: &str| LeaderElection::new(client.clone(), ElectionConfig::new(&ns, "l", id, timing));
    let (mut a, lead_a) = elect("a");
    let (mut b, lead_b) = elect("b");
    let (mut c, lead_c) = elect("c");
    let kube = &ctx.cp.kube;

    // Acquire: no lease yet, a creates it.
    kube.block_on(a.attempt());
    let (holder, transitions, rv1) = stored(&api, ctx, "l")?;
    if holder.as_deref() != Some("a") || transitions != 0 || !lead_a.is_leader() {
        bail!("a did not acquire the new lease: holder {holder:?}, transitions {transitions}");
    }
    // Follow: b and c see a valid lease.
    kube.block_on(b.attempt());
    kube.block_on(c.attempt());
    if lead_b.is_leader() || lead_c.is_leader() {
        bail!("b or c leads while a holds the lease");
    }
    // Renew: a writes again, a new resourceVersion, same holder and transitions.
    std::thread::sleep(Duration::from_millis(500));
    kube.block_on(a.attempt());
    let (holder, transitions, rv2) = stored(&api, ctx, "l")?;
    if holder.as_deref() != Some("a") || transitions != 0 || rv2 == rv1 || !lead_a.is_leader() {
        bail!("a did not renew: holder {holder:?}, transitions {transitions}, rv {rv1} -> {rv2}");
    }
    // b and c keep observing while a renews, so they do not take over.
    for _ in 0..4 {
        std::thread::sleep(Duration::from_millis(500));
        kube.block_on(async { tokio::join!(a.attempt(), b.attempt(), c.attempt()) });
        if !lead_a.is_leader() || lead_b.is_leader() || lead_c.is_leader() {
            bail!("leadership moved while the leader renewed");
        }
    }

    // Expire: a stops renewing (as if killed). Its own term ends at the renew deadline, before b and c may
    // take over; then exactly one of the two racing replicas wins.
    let stopped = Instant::now();
    let mut both_led = false;
    let mut winner = None;
    while stopped.elapsed() < Duration::from_secs(10) {
        kube.block_on(async { tokio::join!(b.attempt(), c.attempt()) });
        let (a_leads, b_leads, c_leads) = (lead_a.is_leader(), lead_b.is_leader(), lead_c.is_leader());
        if [a_leads, b_leads, c_leads].iter().filter(|&&l| l).count() > 1 {
            both_led = true;
        }
        if b_leads || c_leads {
            winner = Some(if b_leads { "b" } else { "c" });
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let took = stopped.elapsed();
    if both_led {
        bail!("two replicas led at once");
    }
    let winner = winner.context("nobody took the expired lease over within 10 s")?;
    if took < timing.renew_deadline {
        bail!("the lease was taken over {took:?} after the last renewal, before the old leader's deadline");
    }
    let (holder, transitions, _) = stored(&api, ctx, "l")?;
    if holder.as_deref() != Some(winner) || transitions != 1 {
        bail!("after the takeover: holder {holder:?} (winner {winner}), transitions {transitions}");
    }
    eprintln!(
        "  lease: {winner} took the expired lease over {:.1} s after the last renewal",
        took.as_secs_f64()
    );
    // The loser's next attempts keep following; a (back from the dead) finds the lease taken and follows.
    kube.block_on(async { tokio::join!(a.attempt(), b.attempt(), c.attempt()) });
    let leaders = [lead_a.is_leader(), lead_b.is_leader(), lead_c.is_leader()];
    if leaders.iter().filter(|&&l| l).count() != 1 || lead_a.is_leader() {
        bail!("after the takeover the leaders are {leaders:?} (a, b, c)");
    }

    // A stale write is refused: a lease written with an old resourceVersion gets 409 Conflict.
    let mut stale = kube.block_on(api.get("l"))?;
    stale.metadata.resource_version = Some(rv1);
    let refused = kube.block_on(api.replace("l", &Default::default(), &stale));
    match refused {
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        other => bail!("a write with a stale resourceVersion was not refused: {other:?}"),
    }

    // Release: the leader's election stops; the lease is released and the other takes it at once.
    let (winner_election, other, lead_other) = if winner == "b" { (b, c, lead_c) } else { (c, b, lead_b) };
    let stop = tokio_util::sync::CancellationToken::new();
    stop.cancel();
    kube.block_on(winner_election.run(stop));
    let (holder, _, _) = stored(&api, ctx, "l")?;
    if holder.is_some() {
        bail!("the lease was not released: holder {holder:?}");
    }
    let mut other = other;
    kube.block_on(other.attempt());
    if !lead_other.is_leader() {
        bail!("the released lease was not taken at once");
    }
    drop(a);
    Ok(())
}
