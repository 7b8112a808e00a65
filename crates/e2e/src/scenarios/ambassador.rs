//! The ambassador-host source against external-dns v0.23.0 on the real API server with Emissary-ingress's
//! own CRDs (`EXTDNS_TEST_PROJECT_CRDS/emissary`, copied by xtask out of its Go module, made structural
//! and converted between Host versions by the API server, where Emissary's release tooling and conversion
//! webhook would: [`emissary_crds`]). Hosts in both served versions name Emissary's LoadBalancer Services
//! in each of Emissary's spellings; both controllers run `--source=ambassador-host` with the same flags,
//! each on its own BIND, as deploy/'s ServiceAccount (whose ClusterRole grants Hosts). Identical zones
//! (ownership records included), every rule represented, and take-over both ways changes nothing.

use anyhow::{Result, bail};
use serde_json::{Value, json};

use extdns_test_support::control_plane::crds;

use crate::controllers::Run;
use crate::dns::Record;
use crate::objects::{self as o, annotations};

use super::Ctx;
use super::differential::against_v023;

/// Emissary's Service's load balancer address.
const LB_IP: &str = "203.0.113.80";
/// The external IP of the Service that has one (beside a load balancer address, which it then hides).
const EXTERNAL_IP: &str = "203.0.113.82";
/// The Service annotation's key, fixed whatever the annotation prefix.
const SERVICE: &str = "external-dns.ambassador-service";

pub fn differential(ctx: &mut Ctx) -> Result<()> {
    let ns = ctx.namespace("ambassador")?;
    ctx.cp.kube.install_crds(&emissary_crds()?)?;
    for object in objects(&ns) {
        ctx.cp.kube.apply(&object)?;
    }
    against_v023(
        ctx,
        |which| Run::of_sources(which, &ns, &["ambassador-host"]),
        published,
    )
}

/// Emissary's CRDs as its release installs them: structural, converted between versions by the API server
/// where Emissary's webhook would (the test plays that webhook; the Host fields read are the same in both).
pub fn emissary_crds()
-> Result<Vec<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>> {
    crds::made_structural(&crds::with_identity_conversion(&crds::project("emissary")?))
}

/// A Host of `version` serving `hostname`, with `annotations`.
fn host(ns: &str, name: &str, version: &str, annotations: Value, hostname: &str) -> Value {
    json!({
        "apiVersion": format!("getambassador.io/{version}"), "kind": "Host",
        "metadata": {"name": name, "namespace": ns, "annotations": annotations},
        "spec": {"hostname": hostname, "ambassador_id": ["default"], "acmeProvider": {"authority": "none"}},
    })
}

/// `annotations` under the prefix, and the Service annotation naming `service` when given.
fn with_service(service: Option<&str>, pairs: &[(&str, &str)]) -> Value {
    let mut a = annotations(pairs);
    if let Some(s) = service {
        a[SERVICE] = json!(s);
    }
    a
}

/// The workload: Emissary's Services (a load balancer IP; external IPs beside one; a load balancer
/// hostname) and one Host per rule: each spelling of the Service reference, both versions, a TTL, the
/// target annotation (with a Service that does not exist), another controller's annotation (not read), and
/// the Hosts that publish nothing (no Service annotation; a Service that does not exist; an invalid
/// reference). No two Hosts share a name: external-dns's merge keeps the `resource` label of whichever its
/// informer lists first, so its zone would not be stable (the source's unit tests cover the merge).
fn objects(ns: &str) -> Vec<Value> {
    let mut external = o::lb_service(ns, "edge", json!({}), json!([{ "ip": "203.0.113.81" }]));
    external["spec"]["externalIPs"] = json!([EXTERNAL_IP]);
    let ns_name = |name: &str| format!("{ns}/{name}");
    vec![
        o::lb_service(ns, "emissary-ingress", json!({}), json!([{ "ip": LB_IP }])),
        external,
        o::lb_service(ns, "named-lb", json!({}), json!([{ "hostname": "lb.example.net" }])),
        host(
            ns,
            "shop",
            "v3alpha1",
            with_service(Some(&ns_name("emissary-ingress")), &[("ttl", "120")]),
            "shop.amb.example.org",
        ),
        host(
            ns,
            "dotted",
            "v3alpha1",
            with_service(Some(&format!("emissary-ingress.{ns}")), &[]),
            "dotted.amb.example.org",
        ),
        host(
            ns,
            "old",
            "v2",
            with_service(Some(&ns_name("edge")), &[]),
            "old.amb.example.org",
        ),
        host(
            ns,
            "cname",
            "v3alpha1",
            with_service(Some(&ns_name("named-lb")), &[]),
            "cname.amb.example.org",
        ),
        host(
            ns,
            "pinned",
            "v3alpha1",
            with_service(Some(&ns_name("gone")), &[("target", "203.0.113.90")]),
            "pinned.amb.example.org",
        ),
        host(
            ns,
            "claimed",
            "v3alpha1",
            with_service(Some(&ns_name("emissary-ingress")), &[("controller", "someone-else")]),
            "claimed.amb.example.org",
        ),
        host(
            ns,
            "unannotated",
            "v3alpha1",
            with_service(None, &[("target", "203.0.113.91")]),
            "unannotated.amb.example.org",
        ),
        host(
            ns,
            "missing",
            "v3alpha1",
            with_service(Some(&ns_name("gone")), &[]),
            "missing.amb.example.org",
        ),
        host(
            ns,
            "invalid",
            "v3alpha1",
            with_service(Some(&format!("{ns}/emissary-ingress/x")), &[]),
            "invalid.amb.example.org",
        ),
    ]
}

/// What [`objects`] must publish, so identical zones cannot mean two empty ones; and what it must not.
fn published(zone: &[Record]) -> Result<()> {
    let expected = [
        ("shop.amb.example.org", "A", LB_IP),
        ("dotted.amb.example.org", "A", LB_IP),
        ("old.amb.example.org", "A", EXTERNAL_IP),
        ("cname.amb.example.org", "CNAME", "lb.example.net."),
        ("pinned.amb.example.org", "A", "203.0.113.90"),
        ("claimed.amb.example.org", "A", LB_IP),
    ];
    for (name, rtype, rdata) in expected {
        let found = zone.iter().any(|r| {
            r.name.trim_end_matches('.') == name
                && r.rtype == rtype
                && r.rdata.trim_end_matches('.') == rdata.trim_end_matches('.')
        });
        if !found {
            let lines: Vec<String> = zone.iter().map(ToString::to_string).collect();
            bail!(
                "{name} {rtype} {rdata} is not published: the comparison would prove nothing for it; the zone:\n{}",
                lines.join("\n")
            );
        }
    }
    for name in ["unannotated", "missing", "invalid"] {
        let name = format!("{name}.amb.example.org");
        if let Some(r) = zone.iter().find(|r| r.name.trim_end_matches('.') == name) {
            bail!("{name} must publish nothing, but {r:?} is in the zone");
        }
    }
    Ok(())
}
