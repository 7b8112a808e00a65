//! The Istio sources against external-dns v0.23.0: Istio's own CRDs (every version Istio serves, from its
//! Go module, `EXTDNS_TEST_PROJECT_CRDS`), a workload of Gateways and VirtualServices in one namespace
//! with the ingress gateway's LoadBalancer Service, both controllers with
//! `--source=istio-gateway --source=istio-virtualservice` and the same owner id, each on its own BIND:
//! identical zones, and take-over both ways changes nothing.

use anyhow::{Result, bail};
use serde_json::{Value, json};

use extdns_test_support::control_plane::crds;

use crate::controllers::Run;
use crate::dns::Record;
use crate::objects::{self as o, annotations};

use super::Ctx;
use super::differential::against_v023;

/// The ingress gateway's load balancer address.
const LB_IP: &str = "203.0.113.50";

pub fn differential(ctx: &mut Ctx) -> Result<()> {
    let ns = ctx.namespace("istio")?;
    ctx.cp.kube.install_crds(&crds::project("istio")?)?;
    for object in objects(&ns) {
        ctx.cp.kube.apply(&object)?;
    }
    let sources = ["istio-gateway", "istio-virtualservice"];
    against_v023(ctx, |which| Run::of_sources(which, &ns, &sources), published)
}

/// The names the workload publishes, at their addresses, and the one it must not.
fn published(zone: &[Record]) -> Result<()> {
    let expected = [
        ("gw.example.org", LB_IP),
        ("*.apps.example.org", LB_IP),
        ("shop.apps.example.org", LB_IP),
        ("annotated.apps.example.org", LB_IP),
        ("internal.example.org", "203.0.113.60"),
        ("direct.example.org", "203.0.113.61"),
        ("edge.example.org", "203.0.113.70"),
        ("templated-free.example.org", LB_IP),
    ];
    for (name, address) in expected {
        if !zone
            .iter()
            .any(|r| r.name.trim_end_matches('.') == name && r.rtype == "A" && r.rdata == address)
        {
            let lines: Vec<String> = zone.iter().map(ToString::to_string).collect();
            bail!(
                "{name} A {address} is not published: the comparison would prove nothing for it; the zone:\n{}",
                lines.join("\n")
            );
        }
    }
    if let Some(r) = zone
        .iter()
        .find(|r| r.name.trim_end_matches('.') == "hidden.apps.example.org")
    {
        bail!("a VirtualService not exported to the Gateway's namespace published {r:?}");
    }
    Ok(())
}

fn gateway(ns: &str, name: &str, version: &str, annotations: Value, selector: Value, hosts: &[&str]) -> Value {
    json!({
        "apiVersion": format!("networking.istio.io/{version}"), "kind": "Gateway",
        "metadata": {"name": name, "namespace": ns, "annotations": annotations},
        "spec": {
            "selector": selector,
            "servers": [{"port": {"number": 80, "name": "http", "protocol": "HTTP"}, "hosts": hosts}]
        }
    })
}

fn virtual_service(ns: &str, name: &str, annotations: Value, spec: Value) -> Value {
    json!({
        "apiVersion": "networking.istio.io/v1", "kind": "VirtualService",
        "metadata": {"name": name, "namespace": ns, "annotations": annotations},
        "spec": spec,
    })
}

/// The workload: the ingress gateway's Service (and a Service of another selector, not read), Gateways
/// reaching their targets each way (selector, target annotation, Ingress annotation) in each version, and
/// VirtualServices bound through them (by name, `mesh` beside, a wildcard server host, a hostname
/// annotation, a target annotation, one not exported to the Gateway's namespace).
fn objects(ns: &str) -> Vec<Value> {
    let ingress_gateway = json!({"istio": "ingressgateway"});
    let mut gateway_service = o::lb_service(ns, "istio-ingressgateway", json!({}), json!([{ "ip": LB_IP }]));
    gateway_service["spec"]["selector"] = json!({"istio": "ingressgateway", "app": "istio-ingressgateway"});
    let mut other_service = o::lb_service(ns, "egress", json!({}), json!([{ "ip": "203.0.113.99" }]));
    other_service["spec"]["selector"] = json!({"istio": "egressgateway"});
    let edge = o::ingress(
        ns,
        "edge",
        json!({}),
        &["ingress-only.other.org"],
        json!([{ "ip": "203.0.113.70" }]),
    );
    vec![
        gateway_service,
        other_service,
        edge,
        gateway(
            ns,
            "public",
            "v1",
            annotations(&[("ttl", "120")]),
            ingress_gateway.clone(),
            &["gw.example.org", &format!("{ns}/*.apps.example.org"), "*"],
        ),
        gateway(
            ns,
            "internal",
            "v1beta1",
            annotations(&[("target", "203.0.113.60")]),
            ingress_gateway.clone(),
            &["internal.example.org", "free.example.org"],
        ),
        gateway(
            ns,
            "edge",
            "v1alpha3",
            json!({"external-dns.kubernetes.io/ingress": "edge"}),
            ingress_gateway.clone(),
            &["edge.example.org"],
        ),
        virtual_service(
            ns,
            "shop",
            annotations(&[("hostname", "annotated.apps.example.org")]),
            json!({"hosts": ["shop.apps.example.org", "shop.other.org"], "gateways": ["mesh", "public"],
                   "http": [{"route": [{"destination": {"host": "shop"}}]}]}),
        ),
        virtual_service(
            ns,
            "direct",
            annotations(&[("target", "203.0.113.61")]),
            json!({"hosts": ["direct.example.org"], "gateways": [format!("{ns}/internal")]}),
        ),
        virtual_service(
            ns,
            "hidden",
            json!({}),
            json!({"hosts": ["hidden.apps.example.org"], "gateways": ["public"], "exportTo": ["elsewhere"]}),
        ),
        // Bound through the selector-less Gateway: every Service of the namespace is its target.
        gateway(ns, "free", "v1", json!({}), json!({}), &["templated-free.example.org"]),
    ]
}
