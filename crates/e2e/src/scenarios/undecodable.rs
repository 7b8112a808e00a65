//! Scenario 5: an object the typed model cannot decode. The HTTPRoute CRD is replaced by one whose schema
//! accepts anything as `spec.hostnames`, and a route with a string there (where a list belongs) sits among
//! good routes. extdns must skip it with a warning naming it, publish the others, and keep following
//! changes (the informer is not stalled by it).

use anyhow::{Result, bail};
use serde_json::json;

use crate::controllers::{Run, Which};
use crate::crds;
use crate::dns;
use crate::objects::{self as o, Parent, RouteKind};

use super::Ctx;
use super::wait::{alive, answers};

pub fn run(ctx: &mut Ctx) -> Result<()> {
    let ns = ctx.namespace("undecodable")?;
    ctx.cp.kube.install_crds(&[crds::httproute_with_loose_hostnames()?])?;
    let result = scenario(ctx, &ns);
    // Put the strict schema back for whatever runs next (the bad route goes first, or it would not fit).
    let _ = ctx
        .cp
        .kube
        .delete("gateway.networking.k8s.io/v1", "HTTPRoute", Some(&ns), "bad");
    let strict: Vec<_> = crds::gateway_api()
        .into_iter()
        .filter(|c| c.spec.names.kind == "HTTPRoute")
        .collect();
    ctx.cp.kube.install_crds(&strict)?;
    result
}

fn scenario(ctx: &mut Ctx, ns: &str) -> Result<()> {
    let kube = &ctx.cp.kube;
    let server = dns::bind();
    kube.apply(&o::gateway_class())?;
    kube.apply(&o::gateway(ns, "gw", "203.0.113.100"))?;
    let parent = Parent::gateway("gw", "http");
    let route = |name: &str, host: &str| o::route(RouteKind::Http, ns, name, json!({}), Some(&[host]), &parent, true);
    kube.apply(&route("good", "good.apps.example.org"))?;
    let mut bad = route("bad", "bad.apps.example.org");
    bad["spec"]["hostnames"] = json!("bad.apps.example.org");
    kube.apply(&bad)?;
    kube.apply(&route("zz-good", "zz-good.apps.example.org"))?;

    let run = Run::new(Which::Extdns, ns).flag("--events").flag("--interval=1h");
    let mut extdns = run.start(&ctx.cp, &server, &ctx.log("undecodable-extdns"))?;
    answers(&server, &mut extdns, "good.apps.example.org", "A", &["203.0.113.100"])?;
    answers(
        &server,
        &mut extdns,
        "zz-good.apps.example.org",
        "A",
        &["203.0.113.100"],
    )?;
    if !dns::answers(&server, "bad.apps.example.org", "A").is_empty() {
        bail!("the undecodable route published a record");
    }
    let log = extdns.log_text();
    // extdns's own warning (not the client library's dump of a response body) names the object.
    let named = log
        .lines()
        .any(|l| l.contains("WARN") && !l.contains("kube_client") && l.contains("bad") && l.contains(ns));
    if !named {
        bail!("no warning naming {ns}/bad in extdns's log:\n{}", extdns.log_tail(30));
    }
    // Later changes still flow: the informer is not stuck on the bad object.
    kube.apply(&route("later", "later.apps.example.org"))?;
    answers(&server, &mut extdns, "later.apps.example.org", "A", &["203.0.113.100"])?;
    kube.delete("gateway.networking.k8s.io/v1", "HTTPRoute", Some(ns), "good")?;
    answers(&server, &mut extdns, "good.apps.example.org", "A", &[])?;
    alive(&mut extdns)
}
