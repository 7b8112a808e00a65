//! Scenario 2: one long-running `extdns --events` follows every kind of change: create → the record
//! appears; update an annotation, a load balancer status, EndpointSlices, a Node address, a route status, a
//! Gateway address → the record follows; delete → the record and its ownership TXT go.

use anyhow::Result;
use serde_json::json;

use crate::controllers::{Run, Which};
use crate::dns::{self, DnsServer};
use crate::objects::{self as o, Parent, RouteKind, annotations};
use crate::proc::Proc;

use super::wait::{self, alive, answers, ownership};
use super::{Ctx, sources};

pub fn run(ctx: &mut Ctx) -> Result<()> {
    let ns = ctx.namespace("lifecycle")?;
    let server = dns::bind();
    steps(ctx, &ns, &server)
}

fn steps(ctx: &mut Ctx, ns: &str, server: &DnsServer) -> Result<()> {
    let kube = &ctx.cp.kube;
    let node = format!("{ns}-node-1");

    // --- create
    let web = |host: &str, ttl: &str, ip: &str| {
        o::lb_service(
            ns,
            "web",
            annotations(&[("hostname", host), ("ttl", ttl)]),
            json!([{ "ip": ip }]),
        )
    };
    kube.apply(&web("web.example.org", "60", "203.0.113.20"))?;
    sources::create_db(kube, ns, [&node, &node])?;
    kube.apply(&o::node(
        &node,
        &[("InternalIP", "10.2.0.1"), ("ExternalIP", "198.51.100.10")],
    ))?;
    kube.apply(&o::nodeport_service(
        ns,
        "np",
        annotations(&[("hostname", "np.example.org")]),
    ))?;
    kube.apply(&o::gateway_class())?;
    kube.apply(&o::gateway(ns, "gw", "203.0.113.100"))?;
    let route = |accepted: bool| {
        o::route(
            RouteKind::Http,
            ns,
            "app",
            json!({}),
            Some(&["app.apps.example.org"]),
            &Parent::gateway("gw", "http"),
            accepted,
        )
    };
    kube.apply(&route(true))?;

    let run = Run::new(Which::Extdns, ns).flag("--events").flag("--interval=1h");
    let mut extdns: Proc = run.start(&ctx.cp, server, &ctx.log("lifecycle-extdns"))?;
    answers(server, &mut extdns, "web.example.org", "A", &["203.0.113.20"])?;
    sources::assert_ttl(server, "web.example.org", "A", 60)?;
    answers(server, &mut extdns, "db.example.org", "A", &["10.1.0.10", "10.1.0.11"])?;
    answers(server, &mut extdns, "db-0.db.example.org", "A", &["10.1.0.10"])?;
    answers(server, &mut extdns, "np.example.org", "A", &["198.51.100.10"])?;
    answers(server, &mut extdns, "app.apps.example.org", "A", &["203.0.113.100"])?;

    // --- update: annotations (name and TTL)
    kube.apply(&web("web2.example.org", "300", "203.0.113.20"))?;
    answers(server, &mut extdns, "web2.example.org", "A", &["203.0.113.20"])?;
    sources::assert_ttl(server, "web2.example.org", "A", 300)?;
    answers(server, &mut extdns, "web.example.org", "A", &[])?;
    ownership(server, &mut extdns, "A", "web.example.org", false)?;
    ownership(server, &mut extdns, "A", "web2.example.org", true)?;

    // --- update: load balancer status
    kube.apply(&web("web2.example.org", "300", "203.0.113.21"))?;
    answers(server, &mut extdns, "web2.example.org", "A", &["203.0.113.21"])?;

    // --- update: EndpointSlice churn (a second slice with a new Pod, an endpoint leaving the first)
    kube.apply(&o::pod(ns, "db-2", "db", "10.1.0.12", &node))?;
    kube.apply(&o::endpoint_slice(ns, "db-b", "db", &[("10.1.0.12", "db-2")]))?;
    answers(
        server,
        &mut extdns,
        "db.example.org",
        "A",
        &["10.1.0.10", "10.1.0.11", "10.1.0.12"],
    )?;
    answers(server, &mut extdns, "db-2.db.example.org", "A", &["10.1.0.12"])?;
    kube.apply(&o::endpoint_slice(ns, "db-a", "db", &[("10.1.0.11", "db-1")]))?;
    answers(server, &mut extdns, "db.example.org", "A", &["10.1.0.11", "10.1.0.12"])?;
    answers(server, &mut extdns, "db-0.db.example.org", "A", &[])?;
    kube.delete("discovery.k8s.io/v1", "EndpointSlice", Some(ns), "db-b")?;
    answers(server, &mut extdns, "db.example.org", "A", &["10.1.0.11"])?;
    answers(server, &mut extdns, "db-2.db.example.org", "A", &[])?;

    // --- create: a headless Service after its Pod. Nothing selected the Pod when it came, so the API server
    // did not even send it (extdns watches Pods by a selector covering what Services select); the new
    // selector starts that watch over with a wider cover. The pause lets the Pod be created well before the
    // Service, which is what this step is about.
    kube.apply(&o::pod(ns, "cache-0", "cache", "10.1.0.20", &node))?;
    kube.apply(&o::endpoint_slice(ns, "cache-a", "cache", &[("10.1.0.20", "cache-0")]))?;
    std::thread::sleep(std::time::Duration::from_secs(1));
    kube.apply(&o::headless_at(ns, "cache", "cache.example.org"))?;
    answers(server, &mut extdns, "cache.example.org", "A", &["10.1.0.20"])?;

    // --- update: a Node's address
    kube.apply(&o::node(
        &node,
        &[("InternalIP", "10.2.0.1"), ("ExternalIP", "198.51.100.11")],
    ))?;
    answers(server, &mut extdns, "np.example.org", "A", &["198.51.100.11"])?;

    // --- update: route status (no longer accepted, accepted again) and the Gateway's address
    kube.apply(&route(false))?;
    answers(server, &mut extdns, "app.apps.example.org", "A", &[])?;
    kube.apply(&route(true))?;
    answers(server, &mut extdns, "app.apps.example.org", "A", &["203.0.113.100"])?;
    kube.apply(&o::gateway(ns, "gw", "203.0.113.101"))?;
    answers(server, &mut extdns, "app.apps.example.org", "A", &["203.0.113.101"])?;

    // --- delete: records and their ownership records go, nothing else stays behind
    kube.delete("v1", "Service", Some(ns), "web")?;
    kube.delete("v1", "Service", Some(ns), "db")?;
    kube.delete("v1", "Service", Some(ns), "cache")?;
    kube.delete("v1", "Service", Some(ns), "np")?;
    kube.delete("gateway.networking.k8s.io/v1", "HTTPRoute", Some(ns), "app")?;
    for (name, t) in [
        ("web2.example.org", "A"),
        ("db.example.org", "A"),
        ("db-1.db.example.org", "A"),
        ("cache.example.org", "A"),
        ("np.example.org", "A"),
        ("app.apps.example.org", "A"),
    ] {
        answers(server, &mut extdns, name, t, &[])?;
    }
    crate::proc::eventually(
        "every ownership record gone",
        wait::CONVERGE,
        std::time::Duration::from_millis(200),
        || {
            let zone = dns::zone(server)?;
            let owned = dns::owned_txt(&zone, crate::controllers::OWNER).len();
            Ok((owned == 0).then_some(()))
        },
    )?;
    // The SRV record of the NodePort Service went too.
    let zone = dns::zone(server)?;
    if let Some(r) = zone.iter().find(|r| r.rtype == "SRV") {
        anyhow::bail!("SRV record left behind: {r}");
    }
    alive(&mut extdns)
}
