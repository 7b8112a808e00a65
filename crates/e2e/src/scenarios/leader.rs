//! Leader election on the real API server.
//!
//! `leader`: two extdns replicas with `--leader-elect` against one BIND. Only the leader writes (the
//! follower logs no change); after `kill -9` of the leader the follower takes the lease over and writes a
//! record created right after the kill, within 15 s (the figure is printed); every record is there once.
//! `leader-defaults` does the same at kube-scheduler's default timings, five times, killing the leader at
//! another point of its renew cycle each time, and prints every figure.
//!
//! `lease`: the election crate itself against the API server: create, renew, a race of two replicas for an
//! expired lease (one wins, the other gets a conflict), fencing on expiry, release on shutdown, and the
//! running election: a watching follower takes over exactly one lease duration after the last renewal,
//! and a released lease at once.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use extdns_leader::{ElectionConfig, LeaderElection, LeaseTiming};
use k8s_openapi::api::coordination::v1::Lease;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::controllers::{OWNER, Run, Which, wait_for_log};
use crate::dns;
use crate::objects::{self as o, annotations};
use crate::proc;

use super::Ctx;
use super::wait::{self, CONVERGE, record_writes};

/// The namespace of deploy/'s Role, so the ServiceAccount may use the Lease.
const LEASE_NAMESPACE: &str = "extdns";
/// The longest a takeover after a `kill -9` may take.
const TAKEOVER: Duration = Duration::from_secs(15);

fn host(name: &str) -> String {
    format!("{name}.leader.example.org")
}

/// The election's timing as flags, and the same values for the checks.
struct Timing {
    lease: Duration,
    flags: [String; 3],
}

impl Timing {
    fn new(lease: u64, renew: u64, retry: u64) -> Timing {
        Timing {
            lease: Duration::from_secs(lease),
            flags: [
                format!("--leader-elect-lease-duration={lease}s"),
                format!("--leader-elect-renew-deadline={renew}s"),
                format!("--leader-elect-retry-period={retry}s"),
            ],
        }
    }
}

/// `leader`: a short lease (6 s, renew deadline 4 s, retry 1 s) and one kill, so the default suite stays
/// quick.
pub fn run(ctx: &mut Ctx) -> Result<()> {
    let figures = takeovers(ctx, "leader", &Timing::new(6, 4, 1), &[Duration::from_millis(500)])?;
    for f in &figures {
        if f.kill_to_record > TAKEOVER {
            bail!("the takeover took {:?}, more than {TAKEOVER:?}", f.kill_to_record);
        }
    }
    Ok(())
}

/// `leader-defaults`: kube-scheduler's defaults (lease 15 s, renew deadline 10 s, retry 2 s) and five kills,
/// each at another point of the leader's 2 s renew cycle.
pub fn run_defaults(ctx: &mut Ctx) -> Result<()> {
    let offsets = [0, 400, 800, 1200, 1600].map(Duration::from_millis);
    let figures = takeovers(ctx, "leader-defaults", &Timing::new(15, 10, 2), &offsets)?;
    eprintln!("  | kill | renewal → kill | kill → record in DNS | renewal → record |");
    for (i, f) in figures.iter().enumerate() {
        eprintln!(
            "  | {} | {:.2} s | {:.2} s | {:.2} s |",
            i + 1,
            f.renewal_to_kill.as_secs_f64(),
            f.kill_to_record.as_secs_f64(),
            (f.renewal_to_kill + f.kill_to_record).as_secs_f64()
        );
    }
    Ok(())
}

/// One takeover: when the killed leader had last renewed, and when the new leader's record answered.
struct Figure {
    /// From the renewal the scenario saw (the lease's new resourceVersion) to the kill.
    renewal_to_kill: Duration,
    /// From the kill to the record created at the kill answering in BIND.
    kill_to_record: Duration,
}

/// Two replicas against one BIND; only the leader writes. Then, once per offset: wait for the leader to
/// renew, kill -9 it `offset` later, create a Service at once, and time until the follower's record
/// answers; a fresh replica joins as the next follower. At the end every record is there exactly once and
/// was written once.
fn takeovers(ctx: &mut Ctx, prefix: &str, timing: &Timing, offsets: &[Duration]) -> Result<Vec<Figure>> {
    let ns = ctx.namespace(prefix)?;
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
    let lease = format!("extdns-{ns}");
    let mut run = Run::new(Which::Extdns, &ns)
        .flag("--events")
        .flag("--interval=1h")
        .flag("--leader-elect")
        .flag(format!("--leader-elect-resource-namespace={LEASE_NAMESPACE}"))
        .flag(format!("--leader-elect-resource-name={lease}"));
    for flag in &timing.flags {
        run = run.flag(flag.as_str());
    }
    let leases: kube::Api<Lease> = kube::Api::namespaced(ctx.cp.kube.client(), LEASE_NAMESPACE);

    let mut leader = run.start(&ctx.cp, &server, &ctx.log(&format!("{prefix}-1")))?;
    wait_for_log(&mut leader, "became the leader", CONVERGE)?;
    let mut follower = run.start(&ctx.cp, &server, &ctx.log(&format!("{prefix}-2")))?;
    wait_for_log(&mut follower, "not the leader", CONVERGE)?;
    for (i, name) in services.iter().enumerate() {
        wait::answers(
            &server,
            &mut leader,
            &host(name),
            "A",
            &[&format!("198.51.100.{}", i + 1)],
        )?;
    }
    // A change while both run: the leader writes it, the follower does not.
    ctx.cp.kube.apply(&o::lb_at(&ns, "d", &host("d"), "198.51.100.4"))?;
    wait::answers(&server, &mut leader, &host("d"), "A", &["198.51.100.4"])?;
    std::thread::sleep(Duration::from_secs(1));
    let follower_log = follower.log_text();
    if !record_writes(&follower_log).is_empty() {
        bail!(
            "the follower wrote while another replica led:\n{}",
            record_writes(&follower_log).join("\n")
        );
    }
    if record_writes(&leader.log_text()).is_empty() {
        bail!("the leader logged no write:\n{}", leader.log_tail(30));
    }

    let mut figures = Vec::new();
    let mut names: Vec<String> = ["a", "b", "c", "d"].map(String::from).to_vec();
    let mut killed_logs = Vec::new();
    for (round, offset) in offsets.iter().enumerate() {
        // kill -9 the leader (no release) `offset` after a renewal, and create a record at once: the
        // follower must write it.
        let renewed = next_renewal(ctx, &leases, &lease)?;
        std::thread::sleep(offset.saturating_sub(renewed.elapsed()));
        let killed = Instant::now();
        leader.kill9();
        let renewal_to_kill = killed - renewed;
        let name = format!("k{round}");
        let ip = format!("198.51.100.{}", 10 + round);
        ctx.cp.kube.apply(&o::lb_at(&ns, &name, &host(&name), &ip))?;
        wait::answers(&server, &mut follower, &host(&name), "A", &[&ip])?;
        let kill_to_record = killed.elapsed();
        eprintln!(
            "  takeover {}: killed {:.2} s after a renewal; the new leader's record answered {:.2} s after the \
             kill ({:.2} s after the renewal; lease {:?})",
            round + 1,
            renewal_to_kill.as_secs_f64(),
            kill_to_record.as_secs_f64(),
            (renewal_to_kill + kill_to_record).as_secs_f64(),
            timing.lease,
        );
        // The fencing: the follower took over no earlier than one lease duration after the last renewal
        // (less the time the scenario took to see that renewal), and the sync followed at once.
        let since_renewal = renewal_to_kill + kill_to_record;
        if since_renewal + Duration::from_millis(300) < timing.lease {
            bail!("the follower wrote {since_renewal:?} after the leader's last renewal, before the lease ran out");
        }
        if !follower.log_text().contains("became the leader") {
            bail!("the new leader did not log its election:\n{}", follower.log_tail(30));
        }
        figures.push(Figure {
            renewal_to_kill,
            kill_to_record,
        });
        names.push(name);
        killed_logs.push(leader.log_text());
        // The follower leads now; a fresh replica joins as the next follower.
        leader = follower;
        if round + 1 < offsets.len() {
            follower = run.start(&ctx.cp, &server, &ctx.log(&format!("{prefix}-{}", round + 3)))?;
            wait_for_log(&mut follower, "not the leader", CONVERGE)?;
        } else {
            break;
        }
    }
    killed_logs.push(leader.log_text());
    drop(leader);
    // deploy/'s Role lets every replica watch the lease; without it they would fall back to polling.
    if let Some(log) = killed_logs.iter().find(|log| log.contains("cannot watch the lease")) {
        bail!("a replica could not watch the lease:\n{}", proc::tail(log, 20));
    }

    // Nothing written twice, nothing lost: every name has its one answer and its one ownership record,
    // written by exactly one replica, once.
    let zone = dns::zone(&server)?;
    for name in &names {
        let fqdn = host(name);
        let got = dns::answers(&server, &fqdn, "A");
        if got.len() != 1 {
            bail!("{fqdn} A: want one answer, got {got:?}");
        }
        let txt = dns::records_of(&zone, &format!("a-{fqdn}"));
        if txt.len() != 1 {
            bail!("{} ownership records for {fqdn}: {txt:?}", txt.len());
        }
        let by: Vec<usize> = killed_logs
            .iter()
            .map(|log| record_writes(log).iter().filter(|l| l.contains(&fqdn)).count())
            .collect();
        if by.iter().sum::<usize>() != 1 {
            bail!("{fqdn} was not written exactly once (writes per replica, in order: {by:?})");
        }
    }
    let owned = dns::owned_txt(&zone, OWNER).len();
    if owned != names.len() {
        bail!("want {} ownership records, got {owned}", names.len());
    }
    Ok(figures)
}

/// Waits for the lease's next renewal (a new resourceVersion) and returns when the scenario saw it.
fn next_renewal(ctx: &Ctx, api: &kube::Api<Lease>, name: &str) -> Result<Instant> {
    let version = |ctx: &Ctx| -> Result<String> {
        let lease = ctx
            .cp
            .kube
            .block_on(api.get(name))
            .with_context(|| format!("reading lease {name}"))?;
        Ok(lease.metadata.resource_version.unwrap_or_default())
    };
    let first = version(ctx)?;
    let start = Instant::now();
    while start.elapsed() < CONVERGE {
        if version(ctx)? != first {
            return Ok(Instant::now());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    bail!("lease {name} was not renewed within {CONVERGE:?}")
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
    running(ctx, &ns)
}

/// The election as the binary runs it ([`LeaderElection::run`]): followers that watch the lease take it over
/// one lease duration after the last renewal they saw, not at their next poll, and a released lease at once.
fn running(ctx: &Ctx, ns: &str) -> Result<()> {
    // A retry period long next to the watch's latency, so a follower that only polled would come late.
    let timing = LeaseTiming::new(
        Duration::from_secs(4),
        Duration::from_secs(3),
        Duration::from_millis(2500),
    )?;
    let client = ctx.cp.kube.client();
    let elect = |id: &str| LeaderElection::new(client.clone(), ElectionConfig::new(ns, "w", id, timing));
    let kube = &ctx.cp.kube;
    let (mut a, lead_a) = elect("a");
    let (b, lead_b) = elect("b");
    let (c, lead_c) = elect("c");
    kube.block_on(a.attempt());
    if !lead_a.is_leader() {
        bail!("a did not acquire lease w");
    }
    let (stop_b, stop_c) = (CancellationToken::new(), CancellationToken::new());
    // The elections run on the client's runtime meanwhile, as in the binary.
    let runtime = kube.block_on(async { tokio::runtime::Handle::current() });
    let mut b_run = Some(runtime.spawn(b.run(stop_b.clone())));
    let mut c_run = Some(runtime.spawn(c.run(stop_c.clone())));

    // a renews every 300 ms for longer than a lease duration: the running followers see every renewal.
    let renewing = Instant::now();
    let (mut last_sent, mut last_done) = (renewing, renewing);
    while renewing.elapsed() < timing.lease_duration + Duration::from_secs(1) {
        last_sent = Instant::now();
        kube.block_on(a.attempt());
        last_done = Instant::now();
        if !lead_a.is_leader() || lead_b.is_leader() || lead_c.is_leader() {
            bail!("leadership moved while a renewed every 300 ms");
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    // a stops renewing (as if killed): b or c takes over when the lease runs out by its clock.
    let winner = loop {
        if lead_a.is_leader() && (lead_b.is_leader() || lead_c.is_leader()) {
            bail!("two replicas led at once");
        }
        if lead_b.is_leader() {
            break "b";
        }
        if lead_c.is_leader() {
            break "c";
        }
        if last_done.elapsed() > Duration::from_secs(15) {
            bail!("nobody took lease w over within 15 s of the last renewal");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let (since_sent, since_done) = (last_sent.elapsed(), last_done.elapsed());
    eprintln!(
        "  lease: the running follower {winner} took over {:.2} s after the last renewal returned (lease {:?}, \
         retry period {:?})",
        since_done.as_secs_f64(),
        timing.lease_duration,
        timing.retry_period
    );
    if since_sent < timing.lease_duration {
        bail!("{winner} took over {since_sent:?} after the last renewal was sent, before the lease ran out");
    }
    // Watching, not polling: a follower that only polled would come up to a retry period after the lease
    // ran out. The bound is that whole period, not a latency target: a loaded machine delays a watch event
    // by far less.
    if since_done > timing.lease_duration + timing.retry_period {
        bail!(
            "{winner} took over {since_done:?} after the last renewal: later than a poll every {:?} would have",
            timing.retry_period
        );
    }
    std::thread::sleep(Duration::from_millis(500));
    if lead_a.is_leader() || (lead_b.is_leader() == lead_c.is_leader()) {
        bail!(
            "after the takeover: a {}, b {}, c {} lead",
            lead_a.is_leader(),
            lead_b.is_leader(),
            lead_c.is_leader()
        );
    }

    // The winner shuts down and releases the lease; the other, watching, takes it at once.
    let (stop_winner, winner_run, lead_other) = if winner == "b" {
        (&stop_b, b_run.take(), &lead_c)
    } else {
        (&stop_c, c_run.take(), &lead_b)
    };
    stop_winner.cancel();
    if let Some(task) = winner_run {
        kube.block_on(task).context("the winner's election")?;
    }
    let released = Instant::now();
    while !lead_other.is_leader() {
        // At once, by the watch: a follower that only polled would wait up to a retry period.
        if released.elapsed() > timing.retry_period {
            bail!(
                "the released lease was not taken within a retry period ({:?}), as if the followers polled",
                timing.retry_period
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    eprintln!(
        "  lease: the released lease was taken over {:.0} ms after the release",
        released.elapsed().as_secs_f64() * 1000.0
    );
    stop_b.cancel();
    stop_c.cancel();
    for task in [b_run, c_run].into_iter().flatten() {
        kube.block_on(task).context("the last election")?;
    }
    let (holder, _, _) = stored(&kube::Api::namespaced(client.clone(), ns), ctx, "w")?;
    if holder.is_some() {
        bail!("lease w was not released at the end: holder {holder:?}");
    }
    drop(a);
    Ok(())
}
