//! Scenario: `--status-updates` on a real API server. Each object shows where its names stand, and the
//! status follows the cause:
//!
//! - a Service's `externaldns.k8s.io/Published` condition goes Published, then Filtered (a hostname outside
//!   `--domain-filter`), then Held (a target annotation that is no target: the object cannot be evaluated),
//!   and Published again when the cause goes;
//! - an ExternalName Service asking for a CNAME at the first one's name shows Conflict naming the first,
//!   and Published once the first gives the name up;
//! - an Ingress and an HTTPRoute show the outcome in the `externaldns.k8s.io/status` annotation;
//! - every object, applied server-side by another field manager (the tests'), keeps that manager's fields:
//!   extdns's condition and annotation are owned by the field manager `extdns` alone, so a GitOps tool's
//!   server-side diff sees no drift.

use anyhow::{Context, Result, bail};
use kube::api::{Api, ApiResource, DynamicObject};
use serde_json::{Value, json};

use crate::controllers::{Run, Which};
use crate::dns;
use crate::kube::Kube;
use crate::objects::{self as o, Parent, RouteKind};

use super::Ctx;
use super::wait::{self, alive, answers};

const CONDITION: &str = "externaldns.k8s.io/Published";
const ANNOTATION: &str = "externaldns.k8s.io/status";
const GATEWAY_ADDRESS: &str = "203.0.113.49";

pub(super) fn resource(api_version: &str, kind: &str, plural: &str) -> ApiResource {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    ApiResource {
        group: group.to_string(),
        version: version.to_string(),
        api_version: api_version.to_string(),
        kind: kind.to_string(),
        plural: plural.to_string(),
    }
}

/// The object as stored, or `None` when it is not there.
fn get(kube: &Kube, ns: &str, r: &ApiResource, name: &str) -> Result<Option<Value>> {
    let api: Api<DynamicObject> = Api::namespaced_with(kube.client(), ns, r);
    let found = kube.block_on(api.get_opt(name))?;
    Ok(found.map(serde_json::to_value).transpose()?)
}

/// The reason and message our condition or annotation shows on `object`; on a DNSEndpoint, its `Ready`
/// condition's (PR #6609's names).
fn shown(object: &Value) -> Option<(String, String)> {
    if object["kind"] == "DNSEndpoint" {
        let ready = object["status"]["conditions"]
            .as_array()?
            .iter()
            .find(|c| c["type"] == "Ready")?;
        return Some((
            ready["reason"].as_str()?.to_string(),
            ready["message"].as_str().unwrap_or_default().to_string(),
        ));
    }
    if let Some(c) = object["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == CONDITION))
    {
        let reason = c["reason"].as_str()?.to_string();
        let published = c["status"] == "True";
        if published != (reason == "Published") {
            return Some(("status and reason disagree".into(), c.to_string()));
        }
        return Some((reason, c["message"].as_str().unwrap_or_default().to_string()));
    }
    let text = object["metadata"]["annotations"][ANNOTATION].as_str()?;
    let value: Value = serde_json::from_str(text).ok()?;
    Some((
        value["reason"].as_str()?.to_string(),
        value["message"].as_str().unwrap_or_default().to_string(),
    ))
}

/// Waits until `name` shows `reason` with a message containing `message_has`; returns the object.
pub(super) fn until_shows(
    ctx: &Ctx,
    extdns: &mut crate::proc::Proc,
    ns: &str,
    r: &ApiResource,
    name: &str,
    reason: &[&str],
    message_has: &str,
) -> Result<Value> {
    let what = format!("{} {name} shows {reason:?} ({message_has:?})", r.kind);
    let mut last = None;
    let found = wait::while_alive(extdns, &what, std::time::Duration::from_millis(200), || {
        let Some(object) = get(&ctx.cp.kube, ns, r, name)? else {
            return Ok(None);
        };
        last = shown(&object);
        Ok(last
            .as_ref()
            .is_some_and(|(r, m)| reason.contains(&r.as_str()) && m.contains(message_has))
            .then_some(object))
    });
    found.map_err(|e| anyhow::anyhow!("{e:#}; last shown: {last:?}\nextdns log:\n{}", extdns.log_tail(30)))
}

/// What extdns's field manager owns on `object`, and that the tests' manager still owns `spec`: a GitOps
/// tool's server-side diff ignores the former and finds the latter as it applied it.
fn check_managed_fields(object: &Value, what: &str, ours: &str) -> Result<()> {
    let entries = object["metadata"]["managedFields"]
        .as_array()
        .with_context(|| format!("{what}: no managedFields"))?;
    let of = |manager: &str| -> Vec<&Value> { entries.iter().filter(|e| e["manager"] == manager).collect() };
    let extdns = of("extdns");
    if extdns.is_empty() {
        bail!("{what}: no managedFields entry of the manager extdns: {entries:#?}");
    }
    for e in &extdns {
        if e["operation"] != "Apply" {
            bail!(
                "{what}: extdns wrote with {} rather than server-side apply",
                e["operation"]
            );
        }
        let fields = e["fieldsV1"].to_string();
        if !fields.contains(ours) || fields.contains("\"f:spec\"") {
            bail!("{what}: extdns owns more or other than {ours}: {fields}");
        }
    }
    let applier = entries
        .iter()
        .filter(|e| e["manager"] != "extdns" && e["operation"] == "Apply")
        .map(|e| e["fieldsV1"].to_string())
        .collect::<Vec<_>>()
        .join(" ");
    if !applier.contains("\"f:spec\"") || applier.contains(ours) {
        bail!("{what}: the applier's fields changed: {applier}");
    }
    Ok(())
}

/// The Service `site-svc` at `ip`, with a target annotation that is no target when `bad` (the source
/// cannot evaluate it).
fn held_candidate(ns: &str, ip: &str, bad: bool) -> Value {
    let mut annotations = vec![("hostname", "held.status.example.org")];
    if bad {
        annotations.push(("target", "not a target!"));
    }
    o::lb_service(ns, "site-svc", o::annotations(&annotations), json!([{ "ip": ip }]))
}

pub fn run(ctx: &mut Ctx) -> Result<()> {
    let ns = ctx.namespace("status")?;
    let server = dns::bind();
    let service = resource("v1", "Service", "services");
    let ingress = resource("networking.k8s.io/v1", "Ingress", "ingresses");
    let route = resource("gateway.networking.k8s.io/v1", "HTTPRoute", "httproutes");
    {
        let kube = &ctx.cp.kube;
        kube.apply(&o::lb_at(&ns, "web", "web.status.example.org", "203.0.113.40"))?;
        kube.apply(&o::ingress_at(&ns, "site", "site.status.example.org", "203.0.113.41"))?;
        kube.apply(&o::gateway_class())?;
        kube.apply(&o::gateway(&ns, "gw", GATEWAY_ADDRESS))?;
        kube.apply(&o::route(
            RouteKind::Http,
            &ns,
            "app",
            json!({}),
            Some(&["app.apps.example.org"]),
            &Parent::gateway("gw", "http"),
            true,
        ))?;
    }
    let run = Run::new(Which::Extdns, &ns)
        .flag("--events")
        .flag("--status-updates=true")
        .flag("--interval=1h")
        .flag("--domain-filter=status.example.org")
        .flag("--domain-filter=apps.example.org");
    let mut extdns = run.start(&ctx.cp, &server, &ctx.log("status-extdns"))?;
    answers(&server, &mut extdns, "web.status.example.org", "A", &["203.0.113.40"])?;

    // Published, each the way its API allows.
    let web = until_shows(
        ctx,
        &mut extdns,
        &ns,
        &service,
        "web",
        &["Published"],
        "web.status.example.org A",
    )?;
    check_managed_fields(&web, "Service web", "externaldns.k8s.io/Published")?;
    let site = until_shows(
        ctx,
        &mut extdns,
        &ns,
        &ingress,
        "site",
        &["Published"],
        "site.status.example.org",
    )?;
    check_managed_fields(&site, "Ingress site", ANNOTATION)?;
    let app = until_shows(
        ctx,
        &mut extdns,
        &ns,
        &route,
        "app",
        &["Published"],
        "app.apps.example.org",
    )?;
    check_managed_fields(&app, "HTTPRoute app", ANNOTATION)?;

    // Conflicting with another object: the second asker is told who holds the name.
    let kube = &ctx.cp.kube;
    // An ExternalName Service asks for a CNAME at web's name: a CNAME shares its name with no other record,
    // so the plan drops it (two Services asking for addresses at one name would share the record instead).
    kube.apply(&json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "rival", "namespace": ns,
                     "annotations": o::annotations(&[("hostname", "web.status.example.org")])},
        "spec": {"type": "ExternalName", "externalName": "elsewhere.example.net"},
    }))?;
    until_shows(
        ctx,
        &mut extdns,
        &ns,
        &service,
        "rival",
        &["Conflict"],
        &format!("service/{ns}/web"),
    )?;
    until_shows(ctx, &mut extdns, &ns, &service, "web", &["Published"], "")?;

    // Filtered: a hostname outside --domain-filter names the flag.
    let kube = &ctx.cp.kube;
    kube.apply(&o::lb_at(&ns, "web", "web.other.example.net", "203.0.113.40"))?;
    until_shows(ctx, &mut extdns, &ns, &service, "web", &["Filtered"], "--domain-filter")?;
    // The name web gave up is the rival's now: its conflict clears.
    until_shows(
        ctx,
        &mut extdns,
        &ns,
        &service,
        "rival",
        &["Published"],
        "web.status.example.org CNAME",
    )?;
    answers(
        &server,
        &mut extdns,
        "web.status.example.org",
        "CNAME",
        &["elsewhere.example.net."],
    )?;

    // Held: an object that cannot be evaluated keeps its records, and says why.
    let kube = &ctx.cp.kube;
    kube.apply(&held_candidate(&ns, "203.0.113.43", false))?;
    until_shows(
        ctx,
        &mut extdns,
        &ns,
        &service,
        "site-svc",
        &["Published"],
        "held.status.example.org",
    )?;
    let kube = &ctx.cp.kube;
    kube.apply(&held_candidate(&ns, "203.0.113.43", true))?;
    until_shows(
        ctx,
        &mut extdns,
        &ns,
        &service,
        "site-svc",
        &["Held", "Invalid"],
        "target",
    )?;
    answers(&server, &mut extdns, "held.status.example.org", "A", &["203.0.113.43"])?;

    // The causes go: published again.
    let kube = &ctx.cp.kube;
    kube.apply(&held_candidate(&ns, "203.0.113.44", false))?;
    until_shows(
        ctx,
        &mut extdns,
        &ns,
        &service,
        "site-svc",
        &["Published"],
        "held.status.example.org",
    )?;
    let kube = &ctx.cp.kube;
    kube.apply(&o::lb_at(&ns, "web", "web2.status.example.org", "203.0.113.40"))?;
    let web = until_shows(
        ctx,
        &mut extdns,
        &ns,
        &service,
        "web",
        &["Published"],
        "web2.status.example.org",
    )?;
    check_managed_fields(&web, "Service web, after four changes", "externaldns.k8s.io/Published")?;
    alive(&mut extdns)
}
