//! The traefik-proxy source on the real API server, with Traefik's published CRDs installed (its v3 Go
//! module's `traefik.io` CRDs, and the same CRDs moved to `traefik.containo.us`, the group Traefik v2 served
//! the same schema under: v3's module no longer publishes it).
//!
//! - [`differential`]: external-dns v0.23.0 and extdns, `--source=traefik-proxy --traefik-enable-legacy`
//!   alone, on IngressRoutes, IngressRouteTCPs and IngressRouteUDPs of both groups that carry the target
//!   annotation (external-dns publishes nothing without it): identical zones, take-over both ways clean.
//! - [`service_target`]: extdns only (`--traefik-service`): routers without a target annotation publish
//!   the Traefik Service's load balancer address, and follow it when it changes, event-driven.

use anyhow::Result;
use serde_json::{Value, json};

use crate::controllers::{Run, Which};
use crate::dns::{self, Record};
use crate::objects::{self as o, annotations};

use super::Ctx;
use super::differential::{against_v023, apply_once_served};
use super::install::apply_json;
use super::wait::answers;

/// The group Traefik v2 served its routers under.
const LEGACY: &str = "traefik.containo.us";

/// Traefik's CRDs in both groups; returns once the routers' CRDs serve (the first object applies).
fn install_crds(ctx: &Ctx) -> Result<()> {
    let crds = crate::crds::project("traefik")?;
    for crd in crds.iter().chain(crate::crds::in_group(&crds, LEGACY).iter()) {
        apply_json(ctx, &serde_json::to_value(crd)?)?;
    }
    Ok(())
}

/// A router of `kind` in `group`, one route per rule (UDP routes have no rule: `rules` empty gives one
/// route with a service only), as Traefik's CRD requires them.
fn router(group: &str, kind: &str, ns: &str, name: &str, annotations: Value, rules: &[&str]) -> Value {
    let service = json!({"name": "whoami", "port": 80});
    let routes: Vec<Value> = if rules.is_empty() {
        vec![json!({"services": [service]})]
    } else {
        rules
            .iter()
            .map(|m| json!({"match": m, "services": [service]}))
            .collect()
    };
    json!({
        "apiVersion": format!("{group}/v1alpha1"), "kind": kind,
        "metadata": {"name": name, "namespace": ns, "annotations": annotations},
        "spec": {"routes": routes},
    })
}

/// Every rule external-dns v0.23 reads, in both groups, each router with a target annotation.
fn routers(ns: &str) -> Vec<Value> {
    let io = "traefik.io";
    let at = |target: &str| annotations(&[("target", target)]);
    vec![
        router(
            io,
            "IngressRoute",
            ns,
            "web",
            annotations(&[("target", "203.0.113.60"), ("ttl", "120")]),
            &["Host(`web.traefik.example.org`) || Host(`www.traefik.example.org`)"],
        ),
        router(
            io,
            "IngressRoute",
            ns,
            "multi",
            at("203.0.113.61"),
            &[
                "Host(`a.traefik.example.org`, `b.traefik.example.org`) && PathPrefix(`/`)",
                "HostHeader(`c.traefik.example.org`)",
            ],
        ),
        router(
            io,
            "IngressRoute",
            ns,
            "annotated",
            annotations(&[("target", "lb.example.net"), ("hostname", "named.traefik.example.org")]),
            &["Host(`*`)", "PathPrefix(`/any`)"],
        ),
        router(
            io,
            "IngressRouteTCP",
            ns,
            "db",
            at("203.0.113.62"),
            &["HostSNI(`db.traefik.example.org`)", "HostSNI(`*`)"],
        ),
        router(
            io,
            "IngressRouteUDP",
            ns,
            "dns",
            annotations(&[("target", "203.0.113.63"), ("hostname", "udp.traefik.example.org")]),
            &[],
        ),
        router(
            io,
            "IngressRoute",
            ns,
            "no-target",
            json!({}),
            &["Host(`none.traefik.example.org`)"],
        ),
        router(
            LEGACY,
            "IngressRoute",
            ns,
            "legacy",
            at("203.0.113.64"),
            &["Host(`legacy.traefik.example.org`)"],
        ),
        router(
            LEGACY,
            "IngressRouteTCP",
            ns,
            "legacy-tcp",
            at("legacy-lb.example.net"),
            &["HostSNI(`legacy-tcp.traefik.example.org`)"],
        ),
    ]
}

/// Both controllers with the traefik-proxy source alone, the legacy group read too.
fn traefik_run(which: Which, ns: &str) -> Run<'_> {
    Run::of_sources(which, ns, &["traefik-proxy"]).flag("--traefik-enable-legacy")
}

/// Every kind and group published, and the router without a target not.
fn every_router_published(zone: &[Record]) -> Result<()> {
    for name in [
        "web.traefik.example.org",
        "b.traefik.example.org",
        "c.traefik.example.org",
        "named.traefik.example.org",
        "db.traefik.example.org",
        "udp.traefik.example.org",
        "legacy.traefik.example.org",
        "legacy-tcp.traefik.example.org",
    ] {
        if !zone
            .iter()
            .any(|r| r.name.trim_end_matches('.') == name && r.rtype != "TXT")
        {
            let records: Vec<String> = zone.iter().map(ToString::to_string).collect();
            anyhow::bail!(
                "{name} not published: the comparison would prove nothing for it; the zone:\n{}",
                records.join("\n")
            );
        }
    }
    if zone.iter().any(|r| r.name.contains("none.traefik")) {
        anyhow::bail!("a router without a target annotation was published");
    }
    Ok(())
}

pub fn differential(ctx: &mut Ctx) -> Result<()> {
    let ns = ctx.namespace("traefik")?;
    install_crds(ctx)?;
    apply_once_served(ctx, &routers(&ns))?;
    against_v023(ctx, |which| traefik_run(which, &ns), every_router_published)
}

pub fn service_target(ctx: &mut Ctx) -> Result<()> {
    let ns = ctx.namespace("traefik-service")?;
    install_crds(ctx)?;
    let kube = &ctx.cp.kube;
    let traefik = |ingress: Value| o::lb_service(&ns, "traefik", json!({}), ingress);
    kube.apply(&traefik(json!([{"ip": "203.0.113.70"}])))?;
    let io = "traefik.io";
    apply_once_served(
        ctx,
        &[
            router(
                io,
                "IngressRoute",
                &ns,
                "blog",
                json!({}),
                &["Host(`blog.traefik.example.org`)"],
            ),
            router(
                io,
                "IngressRoute",
                &ns,
                "pinned",
                annotations(&[("target", "203.0.113.79")]),
                &["Host(`pinned.traefik.example.org`)"],
            ),
        ],
    )?;
    let server = dns::bind();
    let mut run = Run::new(Which::Extdns, &ns)
        .flag("--source=traefik-proxy")
        .flag(format!("--traefik-service={ns}/traefik"))
        .flag("--events")
        .flag("--interval=1h");
    run.only_sources = true;
    let mut extdns = run.start(&ctx.cp, &server, &ctx.log("traefik-service-extdns"))?;
    let pinned_stays =
        |extdns: &mut crate::proc::Proc| answers(&server, extdns, "pinned.traefik.example.org", "A", &["203.0.113.79"]);
    answers(&server, &mut extdns, "blog.traefik.example.org", "A", &["203.0.113.70"])?;
    pinned_stays(&mut extdns)?;

    // The Service's address changes: the router without a target follows it (the hour-long interval
    // leaves the Service's event alone to trigger it), the one with a target stays.
    kube.apply(&traefik(json!([{"ip": "203.0.113.71"}])))?;
    answers(&server, &mut extdns, "blog.traefik.example.org", "A", &["203.0.113.71"])?;
    pinned_stays(&mut extdns)?;

    // A router created now takes the current address; a load balancer hostname becomes a CNAME.
    apply_json(
        ctx,
        &router(
            io,
            "IngressRouteTCP",
            &ns,
            "late",
            json!({}),
            &["HostSNI(`late.traefik.example.org`)"],
        ),
    )?;
    answers(&server, &mut extdns, "late.traefik.example.org", "A", &["203.0.113.71"])?;
    kube.apply(&traefik(json!([{"hostname": "lb.example.net"}])))?;
    answers(
        &server,
        &mut extdns,
        "blog.traefik.example.org",
        "CNAME",
        &["lb.example.net."],
    )?;
    answers(
        &server,
        &mut extdns,
        "late.traefik.example.org",
        "CNAME",
        &["lb.example.net."],
    )?;
    eprintln!("  routers without a target follow the Traefik Service's address");
    Ok(())
}
