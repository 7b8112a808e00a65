//! `dns-server`: `--provider=dns-server` on the real API server, queried on the port it serves.
//!
//! 1. A LoadBalancer Service, an Ingress, an HTTPRoute and a DNSEndpoint (A and an in-zone CNAME) answer over
//!    UDP and TCP, authoritatively; a name without records is NXDOMAIN, a name outside the zone REFUSED.
//! 2. Twenty changes, five per kind, each one API write giving a new name: the time from the write's
//!    acknowledgement to the first query that sees the name, polling the served port every 0.2 ms. The
//!    median must be under 10 ms; the p99 is printed beside it.
//! 3. Two replicas with `--leader-elect`, each on its own port, both answer. `kill -9` of the follower leaves
//!    the leader answering, and a change made after the kill answers there; a third replica joins, then
//!    `kill -9` of the leader leaves it answering (before it takes the lease over), a change made after the
//!    kill included.

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use serde_json::{Value, json};

use crate::controllers::{Run, Which, wait_for_log};
use crate::dns::{ZONE, query_a};
use crate::objects::{self as o, Parent, RouteKind};
use crate::proc::{Proc, eventually};
use extdns_test_support::{dig, try_free_port};

use super::Ctx;
use super::install::{apply_file, from_env};
use super::latency::Figures;
use super::wait::{CONVERGE, until_answers};

/// The bound on the median time from an API write to its answer.
const TARGET: Duration = Duration::from_millis(10);
/// Changes timed (five of each kind).
const CHANGES: usize = 20;
/// How often the served port is asked while a change is awaited.
const POLL: Duration = Duration::from_micros(200);
/// Where the Gateway's listeners are (`objects::gateway`), and its address.
const GATEWAY: &str = "gw";
const GATEWAY_ADDRESS: &str = "203.0.113.100";
/// The namespace of deploy/'s Role, so the ServiceAccount may use the Lease.
const LEASE_NAMESPACE: &str = "extdns";

fn host(name: &str) -> String {
    format!("{name}.dns.{ZONE}")
}

pub fn run(ctx: &mut Ctx) -> Result<()> {
    let ns = ctx.namespace("dns-server")?;
    let chart = from_env("EXTDNS_TEST_EXTERNAL_DNS_CHART")?;
    apply_file(ctx, &chart.join("crds/dnsendpoints.externaldns.k8s.io.yaml"))?;
    create_objects(ctx, &ns)?;

    let port = try_free_port()?;
    let mut extdns = serving(&ns, port, &[]).start_own_provider(&ctx.cp, &ctx.log("dns-server"))?;
    let want = [
        (host("web"), "A", vec!["198.51.100.1".to_string()]),
        (host("shop"), "A", vec!["198.51.100.2".to_string()]),
        (format!("app.apps.{ZONE}"), "A", vec![GATEWAY_ADDRESS.to_string()]),
        (host("api"), "A", vec!["198.51.100.3".to_string()]),
        // An in-zone CNAME is followed in the answer.
        (
            host("alias"),
            "A",
            vec!["198.51.100.1".to_string(), format!("{}.", host("web"))],
        ),
    ];
    for (name, t, answers) in &want {
        served(&mut extdns, port, name, t, answers)?;
    }
    for (name, t, answers) in &want {
        let tcp = dig::short(port, name, t);
        if &tcp != answers {
            bail!("{name} {t} over TCP: {tcp:?}, over UDP {answers:?}");
        }
    }
    status_is(port, &host("missing"), "NXDOMAIN", true)?;
    status_is(port, "www.example.net", "REFUSED", false)?;

    let figures = changes(ctx, &ns, &mut extdns, port)?;
    println!(
        "\ndns-server: {} changes (Service, Ingress, HTTPRoute, DNSEndpoint in turn), API write acknowledged → \
         answered on the served port: median {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        figures.samples.len(),
        ms(figures.median()),
        ms(figures.p99()),
        ms(figures.samples.iter().max().copied().unwrap_or_default()),
    );
    if figures.median() > TARGET {
        bail!(
            "the median change took {:.1} ms to answer, more than {TARGET:?}",
            ms(figures.median())
        );
    }
    extdns.terminate(Duration::from_secs(5));

    replicas(ctx, &ns)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// extdns serving [`ZONE`] on 127.0.0.1:`port` from every source the scenario writes, on events.
fn serving<'a>(ns: &'a str, port: u16, extra: &[String]) -> Run<'a> {
    let mut run = Run::new(Which::Extdns, ns)
        .flag("--source=crd")
        .flag("--events")
        .flag("--interval=1h");
    run.provider = Some(vec![
        "--provider=dns-server".to_string(),
        format!("--dns-server-zone={ZONE}"),
        format!("--dns-server-listen=127.0.0.1:{port}"),
        "--policy=sync".to_string(),
    ]);
    for f in extra {
        run = run.flag(f.as_str());
    }
    run
}

fn dns_endpoint(ns: &str, name: &str, entries: Value) -> Value {
    json!({
        "apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "DNSEndpoint",
        "metadata": { "name": name, "namespace": ns },
        "spec": { "endpoints": entries },
    })
}

fn a_entry(name: &str, ip: &str) -> Value {
    json!({ "dnsName": name, "recordType": "A", "targets": [ip] })
}

/// One object of each kind, and the objects the changes move (each starting at a name of its own).
fn create_objects(ctx: &Ctx, ns: &str) -> Result<()> {
    let kube = &ctx.cp.kube;
    kube.apply(&o::lb_at(ns, "web", &host("web"), "198.51.100.1"))?;
    kube.apply(&o::ingress_at(ns, "shop", &host("shop"), "198.51.100.2"))?;
    kube.apply(&o::gateway_class())?;
    kube.apply(&o::gateway(ns, GATEWAY, GATEWAY_ADDRESS))?;
    kube.apply(&route(ns, "app", &format!("app.apps.{ZONE}"), true))?;
    let endpoint = dns_endpoint(
        ns,
        "api",
        json!([
            a_entry(&host("api"), "198.51.100.3"),
            { "dnsName": host("alias"), "recordType": "CNAME", "targets": [host("web")] },
        ]),
    );
    // The CRD was just installed: the API server serves its kind a moment later.
    eventually(
        "the DNSEndpoint CRD serves",
        Duration::from_secs(30),
        Duration::from_millis(200),
        || Ok(kube.apply(&endpoint).ok()),
    )?;
    // What the changes move, with the status the first write needs (later writes leave status alone).
    kube.apply(&o::lb_at(ns, "moving", &host("svc-start"), "198.51.100.10"))?;
    kube.apply(&o::ingress_at(ns, "moving", &host("ing-start"), "198.51.100.11"))?;
    kube.apply(&route(ns, "moving", &format!("route-start.apps.{ZONE}"), true))?;
    Ok(())
}

/// An HTTPRoute on the Gateway's HTTP listener, accepted; without its status when `with_status` is false
/// (a spec change, one write).
fn route(ns: &str, name: &str, hostname: &str, with_status: bool) -> Value {
    let mut r = o::route(
        RouteKind::Http,
        ns,
        name,
        json!({}),
        Some(&[hostname]),
        &Parent::gateway(GATEWAY, "http"),
        true,
    );
    if !with_status && let Some(obj) = r.as_object_mut() {
        obj.remove("status");
    }
    r
}

/// `o` without its `status`: [`crate::kube::Kube::apply`] then makes one write (the spec).
fn spec_only(mut o: Value) -> Value {
    if let Some(obj) = o.as_object_mut() {
        obj.remove("status");
    }
    o
}

/// Twenty single-write changes, each a new name; the time from each write's acknowledgement to its answer.
fn changes(ctx: &Ctx, ns: &str, extdns: &mut Proc, port: u16) -> Result<Figures> {
    let kube = &ctx.cp.kube;
    let mut samples = Vec::with_capacity(CHANGES);
    for i in 0..CHANGES {
        let (name, ip, object) = match i % 4 {
            0 => {
                let name = host(&format!("svc-{i}"));
                let obj = spec_only(o::lb_at(ns, "moving", &name, "198.51.100.10"));
                (name, "198.51.100.10", obj)
            }
            1 => {
                let name = host(&format!("ing-{i}"));
                let obj = spec_only(o::ingress(ns, "moving", json!({}), &[&name], json!([])));
                (name, "198.51.100.11", obj)
            }
            2 => {
                let name = format!("route-{i}.apps.{ZONE}");
                let obj = route(ns, "moving", &name, false);
                (name, GATEWAY_ADDRESS, obj)
            }
            _ => {
                let name = host(&format!("ep-{i}"));
                let obj = dns_endpoint(ns, "moving", json!([a_entry(&name, "198.51.100.12")]));
                (name, "198.51.100.12", obj)
            }
        };
        kube.apply(&object)?;
        let acknowledged = Instant::now();
        loop {
            if let Some(found) = query_a(port, &name, Duration::from_millis(200))?
                && !found.is_empty()
            {
                if found.iter().any(|a| a.to_string() == ip) {
                    break;
                }
                bail!("{name} answered {found:?}, not {ip}");
            }
            if acknowledged.elapsed() > CONVERGE {
                bail!(
                    "{name} not answered {CONVERGE:?} after its write:\n{}",
                    extdns.log_tail(25)
                );
            }
            if let Some(status) = extdns.exited() {
                bail!("extdns exited with {status}:\n{}", extdns.log_tail(25));
            }
            std::thread::sleep(POLL);
        }
        let took = acknowledged.elapsed();
        eprintln!("  change {i}: {name} answered {:.2} ms after the write", ms(took));
        samples.push(took);
        // Let the removal of the object's previous name land before the next write.
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(Figures {
        which: Which::Extdns,
        samples,
    })
}

/// Waits until `name TYPE` answers `want` over UDP on `port`, failing early if extdns exits.
fn served(extdns: &mut Proc, port: u16, name: &str, t: &str, want: &[String]) -> Result<()> {
    let what = format!("{name} {t} = {want:?} on port {port}");
    until_answers(extdns, &what, Duration::from_millis(50), want, || {
        dig::short_udp(port, name, t)
    })
}

/// `name A` gets `status` (and the AA bit when `authoritative`).
fn status_is(port: u16, name: &str, status: &str, authoritative: bool) -> Result<()> {
    let out = dig::dig(port, &[name, "A"]);
    let header = out
        .lines()
        .find(|l| l.contains("status:"))
        .unwrap_or_default()
        .to_string();
    let flags = out.lines().find(|l| l.contains(" flags:")).unwrap_or_default();
    if !header.contains(&format!("status: {status}")) {
        bail!("{name} A: expected {status}, got:\n{out}");
    }
    // ";; flags: qr aa; QUERY: 1, ..."
    let aa = flags
        .split("flags:")
        .nth(1)
        .and_then(|f| f.split(';').next())
        .is_some_and(|f| f.split_whitespace().any(|w| w == "aa"));
    if aa != authoritative {
        bail!("{name} A: the AA bit is {aa}, expected {authoritative}:\n{out}");
    }
    Ok(())
}

/// Two replicas with leader election; each killed in turn while another answers.
fn replicas(ctx: &mut Ctx, ns: &str) -> Result<()> {
    let lease = format!("extdns-{ns}");
    let election = [
        "--leader-elect".to_string(),
        format!("--leader-elect-resource-namespace={LEASE_NAMESPACE}"),
        format!("--leader-elect-resource-name={lease}"),
        "--leader-elect-lease-duration=6s".to_string(),
        "--leader-elect-renew-deadline=4s".to_string(),
        "--leader-elect-retry-period=1s".to_string(),
    ];
    let start = |ctx: &Ctx, name: &str| -> Result<(Proc, u16)> {
        let port = try_free_port()?;
        let proc = serving(ns, port, &election).start_own_provider(&ctx.cp, &ctx.log(name))?;
        Ok((proc, port))
    };
    let web = vec!["198.51.100.1".to_string()];
    let (mut leader, leader_port) = start(ctx, "dns-server-replica-1")?;
    wait_for_log(&mut leader, "became the leader", CONVERGE)?;
    let (mut follower, follower_port) = start(ctx, "dns-server-replica-2")?;
    served(&mut leader, leader_port, &host("web"), "A", &web)?;
    served(&mut follower, follower_port, &host("web"), "A", &web)?;
    is_follower(&follower)?;

    // The follower killed: the leader answers on, a change made after the kill included.
    follower.kill9();
    still_answers(&mut leader, leader_port, &web)?;
    after_kill(ctx, ns, &mut leader, leader_port, "after-follower", "198.51.100.20")?;

    // A third replica joins; the leader killed: the newcomer answers before and after it takes over.
    let (mut third, third_port) = start(ctx, "dns-server-replica-3")?;
    served(
        &mut third,
        third_port,
        &host("after-follower"),
        "A",
        &["198.51.100.20".to_string()],
    )?;
    is_follower(&third)?;
    leader.kill9();
    still_answers(&mut third, third_port, &web)?;
    after_kill(ctx, ns, &mut third, third_port, "after-leader", "198.51.100.21")?;
    third.terminate(Duration::from_secs(5));
    Ok(())
}

/// A replica that answers without the lease (serving needs no leadership).
fn is_follower(replica: &Proc) -> Result<()> {
    if replica.log_text().contains("became the leader") {
        bail!(
            "{} took the lease while the first replica held it:\n{}",
            replica.name,
            replica.log_tail(25)
        );
    }
    Ok(())
}

/// The survivor answers at once after the kill.
fn still_answers(survivor: &mut Proc, port: u16, web: &[String]) -> Result<()> {
    let now = dig::short_udp(port, &host("web"), "A");
    if now != web {
        bail!(
            "{} stopped answering after the other replica's kill: {now:?}\n{}",
            survivor.name,
            survivor.log_tail(25)
        );
    }
    Ok(())
}

/// A DNSEndpoint created after a kill answers on the survivor's port; the time is printed.
fn after_kill(ctx: &Ctx, ns: &str, survivor: &mut Proc, port: u16, name: &str, ip: &str) -> Result<()> {
    let killed = Instant::now();
    ctx.cp
        .kube
        .apply(&dns_endpoint(ns, name, json!([a_entry(&host(name), ip)])))?;
    served(survivor, port, &host(name), "A", &[ip.to_string()])?;
    eprintln!(
        "  {}: a DNSEndpoint created after the kill answered on the survivor {:.1} ms later",
        host(name),
        ms(killed.elapsed())
    );
    Ok(())
}
