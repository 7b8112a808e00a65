//! Scenario: `--status-updates` on each kind users write, through every state a name can be in. A Service,
//! an Ingress, an HTTPRoute and a DNSEndpoint go, together, through:
//!
//! - **published**, then each cause below and back to published, which shows the status clears when the
//!   cause goes;
//! - **filtered**: a name under `--exclude-domains`, the flag named;
//! - **conflicting with another object**: each asks for a CNAME at a name a Service holds with an A record
//!   (a CNAME shares its name with no other record), the holder named;
//! - **refused by the provider**: a name BIND's update-policy denies (`Zone::refusing`), the rcode shown;
//! - **held**: the object cannot be evaluated, its record kept: the Service with a target annotation that is
//!   no target, the DNSEndpoint with an entry whose target is illegal. The ingress and Gateway sources skip
//!   a bad target with a warning rather than fail the object (external-dns's behaviour); they fail one only
//!   on a `--fqdn-template` that cannot run on it (or an undecodable object). So extdns runs with
//!   [`TEMPLATE`], which runs only on an object that names no host itself and fails on every name this run
//!   has: the Ingress and the route drop their hosts, the template runs on them and fails, and each shows
//!   Held (the Ingress with the template's error), its record kept in BIND, until its host is back.
//!
//! Services show the condition `externaldns.k8s.io/Published`, Ingresses and routes the annotation
//! `externaldns.k8s.io/status`, DNSEndpoints their `Ready` condition with PR #6609's reasons (Programmed,
//! Filtered, Failed, Invalid) and extdns's `Conflict`. While refused, `kubectl get` shows each, and
//! `/summary` lists each object's name with its reason.
//!
//! The DNSEndpoint is of the `externaldns.nginx.org` group, whose CRD keeps conditions (external-dns's own
//! CRD has none in its status schema); deploy/'s ClusterRole grants only the upstream group, so this run
//! reads with the admin kubeconfig (the `status` scenario checks deploy/'s RBAC).

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::controllers::{Run, Which};
use crate::dns::{self, DnsServer, Kind, Zone};
use crate::objects::{self as o, Parent, RouteKind};

use super::Ctx;
use super::differential::apply_once_served;
use super::install::apply_json;
use super::status::{resource, until_shows};
use super::wait::{alive, answers};

const GROUP: &str = "externaldns.nginx.org";
/// The name the holder Service publishes an A record at, and the others ask a CNAME for.
const HOLDER: &str = "holder.apps.example.org";
const ELSEWHERE: &str = "elsewhere.example.net";
/// `--fqdn-template`: a template written for long names (the first 40 bytes of the object's), which fails
/// on a shorter one. The sources run it only on an object that names no host of its own.
const TEMPLATE: &str = "{{ slice .Name 0 40 }}.apps.example.org";

/// Where every object stands in one step of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Published,
    Filtered,
    Conflict,
    Refused,
    Held,
}

/// The object kinds, by their short name (the first label of their names).
const KINDS: [&str; 4] = ["svc", "ing", "route", "dep"];

/// The name object `k` asks for in `phase`.
fn name(k: &str, phase: Phase) -> String {
    match phase {
        Phase::Published | Phase::Held => format!("{k}.apps.example.org"),
        Phase::Filtered => format!("{k}.filtered.apps.example.org"),
        Phase::Conflict => HOLDER.to_string(),
        Phase::Refused => format!("refused-{k}.apps.example.org"),
    }
}

/// The target annotation of object `k` (the Service or the Ingress) in `phase`.
fn target(k: &str, phase: Phase) -> Option<&'static str> {
    match phase {
        Phase::Conflict => Some(ELSEWHERE),
        Phase::Held if k == "svc" => Some("not a target!"),
        _ => None,
    }
}

fn object(ns: &str, k: &str, phase: Phase) -> Value {
    let host = name(k, phase);
    // Held: the Ingress and the route name no host of their own, so the failing template runs on them.
    let hosts: &[&str] = if phase == Phase::Held { &[] } else { &[host.as_str()] };
    let mut annotations = vec![];
    if let Some(t) = target(k, phase) {
        annotations.push(("target", t));
    }
    match k {
        "svc" => {
            annotations.push(("hostname", host.as_str()));
            o::lb_service(
                ns,
                "svc",
                o::annotations(&annotations),
                json!([{ "ip": "203.0.113.60" }]),
            )
        }
        "ing" => o::ingress(
            ns,
            "ing",
            o::annotations(&annotations),
            hosts,
            json!([{ "ip": "203.0.113.61" }]),
        ),
        "route" => {
            // A route's own target annotation is ignored: the Gateway's is what changes its record.
            let gateway = if phase == Phase::Conflict { "gw-cname" } else { "gw" };
            o::route(
                RouteKind::Http,
                ns,
                "route",
                json!({}),
                (!hosts.is_empty()).then_some(hosts),
                &Parent::gateway(gateway, "http"),
                true,
            )
        }
        _ => {
            let entry = match phase {
                Phase::Conflict => json!({"dnsName": HOLDER, "recordType": "CNAME", "targets": [ELSEWHERE]}),
                // An address with a trailing dot is no address: the entry is skipped, its record kept.
                Phase::Held => json!({"dnsName": host, "recordType": "A", "targets": ["203.0.113.63."]}),
                _ => json!({"dnsName": host, "recordType": "A", "targets": ["203.0.113.63"]}),
            };
            json!({
                "apiVersion": format!("{GROUP}/v1"), "kind": "DNSEndpoint",
                "metadata": {"name": "dep", "namespace": ns},
                "spec": {"endpoints": [entry]}
            })
        }
    }
}

/// The reasons object `k` may show in `phase`, and what its message must contain.
fn expected(ns: &str, k: &str, phase: Phase) -> (&'static [&'static str], String) {
    let dep = k == "dep";
    match phase {
        Phase::Published if dep => (&["Programmed"], String::new()),
        Phase::Published => (&["Published"], name(k, phase)),
        Phase::Filtered if dep => (&["Filtered"], name(k, phase)),
        Phase::Filtered => (&["Filtered"], "--exclude-domains".into()),
        Phase::Conflict => (&["Conflict"], format!("service/{ns}/holder")),
        Phase::Refused if dep => (&["Failed"], "refused by the provider".into()),
        Phase::Refused => (&["Refused"], "refused by the provider".into()),
        Phase::Held if dep => (&["Invalid"], String::new()),
        Phase::Held if k == "svc" => (&["Held", "Invalid"], String::new()),
        // The template's error is the Ingress's reason; the Gateway source tells no reason for a route
        // it skips (only its log does), so the route shows its kept record.
        Phase::Held if k == "ing" => (&["Held"], format!("template failed on ingress {ns}/ing")),
        Phase::Held => (&["Held"], format!("{} A: kept as it is", name(k, phase))),
    }
}

fn gateway_with_target(ns: &str, name: &str, address: &str, target: &str) -> Value {
    let mut gw = o::gateway(ns, name, address);
    gw["metadata"]["annotations"] = o::annotations(&[("target", target)]);
    gw
}

/// Applies object `k` as it is in `phase` (the DNSEndpoint with kubectl: the e2e client knows the upstream
/// group's kinds only).
fn apply(ctx: &Ctx, ns: &str, k: &str, phase: Phase) -> Result<()> {
    let o = object(ns, k, phase);
    if k == "dep" {
        apply_json(ctx, &o)
    } else {
        ctx.cp.kube.apply(&o).map(|_| ())
    }
}

/// Applies every object in `phase` and waits until each shows it.
fn step(ctx: &Ctx, extdns: &mut crate::proc::Proc, ns: &str, phase: Phase) -> Result<()> {
    for k in KINDS {
        apply(ctx, ns, k, phase)?;
    }
    for k in KINDS {
        let r = match k {
            "svc" => resource("v1", "Service", "services"),
            "ing" => resource("networking.k8s.io/v1", "Ingress", "ingresses"),
            "route" => resource("gateway.networking.k8s.io/v1", "HTTPRoute", "httproutes"),
            _ => resource(&format!("{GROUP}/v1"), "DNSEndpoint", "dnsendpoints"),
        };
        let (reasons, message) = expected(ns, k, phase);
        until_shows(ctx, extdns, ns, &r, k, reasons, &message).with_context(|| format!("{k} in {phase:?}"))?;
    }
    Ok(())
}

/// What `kubectl get` prints for `jsonpath` of one object.
fn kubectl_get(ctx: &Ctx, ns: &str, what: &str, jsonpath: &str) -> Result<String> {
    let out = ctx
        .cp
        .kubectl()
        .args(["get", "-n", ns, what, "-o"])
        .arg(format!("jsonpath={jsonpath}"))
        .output()?;
    if !out.status.success() {
        bail!("kubectl get {what}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// While every object is refused: `kubectl get` shows each object's reason.
fn kubectl_shows_refused(ctx: &Ctx, ns: &str) -> Result<()> {
    let annotation = "{.metadata.annotations.externaldns\\.k8s\\.io/status}";
    for (what, path, want) in [
        (
            "service/svc".to_string(),
            "{.status.conditions[?(@.type==\"externaldns.k8s.io/Published\")].reason}",
            "Refused",
        ),
        ("ingress/ing".to_string(), annotation, "\"reason\":\"Refused\""),
        ("httproute/route".to_string(), annotation, "\"reason\":\"Refused\""),
        (
            format!("dnsendpoints.{GROUP}/dep"),
            "{.status.conditions[?(@.type==\"Ready\")].reason}",
            "Failed",
        ),
    ] {
        let shown = kubectl_get(ctx, ns, &what, path)?;
        if !shown.contains(want) {
            bail!("kubectl get {what} shows {shown:?}, not {want:?}");
        }
    }
    Ok(())
}

/// While every object is refused: `/summary` lists each object's name as refused, with the provider's
/// words.
fn summary_lists_refused(port: u16, ns: &str) -> Result<()> {
    let page = extdns_test_support::http_get(port, "/summary?limit=1000")?;
    let body = page.split("\r\n\r\n").nth(1).unwrap_or_default();
    let summary: Value = serde_json::from_str(body).with_context(|| format!("/summary answered {page}"))?;
    let listed = summary["notPublished"].as_array().cloned().unwrap_or_default();
    for (kind, object) in [
        ("Service", "svc"),
        ("Ingress", "ing"),
        ("HTTPRoute", "route"),
        ("DNSEndpoint", "dep"),
    ] {
        let found = listed.iter().any(|n| {
            n["kind"] == kind
                && n["namespace"] == ns
                && n["object"] == object
                && n["reason"] == "Refused"
                && n["name"] == format!("refused-{object}.apps.example.org").as_str()
        });
        if !found {
            bail!("/summary does not list {kind} {object}'s name as refused: {summary:#}");
        }
    }
    if summary["names"]["Service"]["Refused"].as_u64() != Some(1) {
        bail!(
            "/summary counts {} refused Service names, not 1",
            summary["names"]["Service"]["Refused"]
        );
    }
    Ok(())
}

pub fn run(ctx: &mut Ctx) -> Result<()> {
    let ns = ctx.namespace("status-kinds")?;
    let mut zone = Zone::new(dns::ZONE);
    for k in KINDS {
        zone = zone.refusing(&name(k, Phase::Refused));
    }
    let server = DnsServer::start(Kind::Bind, &[zone]);
    ctx.cp.kube.apply(&super::crd::nginx_crd())?;
    apply_once_served(ctx, &[object(&ns, "dep", Phase::Published)])?;
    {
        let kube = &ctx.cp.kube;
        kube.apply(&o::lb_at(&ns, "holder", HOLDER, "203.0.113.69"))?;
        kube.apply(&o::gateway_class())?;
        kube.apply(&o::gateway(&ns, "gw", "203.0.113.62"))?;
        kube.apply(&gateway_with_target(&ns, "gw-cname", "203.0.113.64", ELSEWHERE))?;
    }
    let metrics = extdns_test_support::try_free_port()?;
    let mut run = Run::new(Which::Extdns, &ns)
        .flag("--events")
        .flag("--status-updates=true")
        .flag("--interval=1h")
        .flag("--exclude-domains=filtered.apps.example.org")
        .flag(format!("--fqdn-template={TEMPLATE}"))
        .flag("--source=crd")
        .flag(format!("--crd-source-apiversion={GROUP}/v1"))
        .flag("--crd-source-kind=DNSEndpoint");
    run.kubeconfig = Some(ctx.cp.admin_kubeconfig.clone());
    run.metrics_port = Some(metrics);
    // The objects exist before extdns starts, so its first sync sees them all.
    for k in KINDS {
        apply(ctx, &ns, k, Phase::Published)?;
    }
    let mut extdns = run.start(&ctx.cp, &server, &ctx.log("status-kinds-extdns"))?;
    answers(&server, &mut extdns, HOLDER, "A", &["203.0.113.69"])?;
    step(ctx, &mut extdns, &ns, Phase::Published)?;
    answers(&server, &mut extdns, "dep.apps.example.org", "A", &["203.0.113.63"])?;

    for cause in [Phase::Filtered, Phase::Conflict, Phase::Refused, Phase::Held] {
        step(ctx, &mut extdns, &ns, cause)?;
        match cause {
            Phase::Refused => {
                kubectl_shows_refused(ctx, &ns)?;
                summary_lists_refused(metrics, &ns)?;
                if !dns::answers(&server, "refused-svc.apps.example.org", "A").is_empty() {
                    bail!("BIND took a name its policy refuses");
                }
            }
            // Held: the records are kept as they were.
            Phase::Held => {
                answers(&server, &mut extdns, "svc.apps.example.org", "A", &["203.0.113.60"])?;
                answers(&server, &mut extdns, "ing.apps.example.org", "A", &["203.0.113.61"])?;
                answers(&server, &mut extdns, "route.apps.example.org", "A", &["203.0.113.62"])?;
            }
            _ => {}
        }
        // The cause goes: published again, every object.
        step(ctx, &mut extdns, &ns, Phase::Published).with_context(|| format!("after {cause:?}"))?;
    }
    answers(&server, &mut extdns, "route.apps.example.org", "A", &["203.0.113.62"])?;
    alive(&mut extdns)
}
