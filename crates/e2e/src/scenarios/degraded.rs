//! A cluster as it is: a kind extdns cannot list degrades only what needs it.
//!
//! `missing-crd`: the UDPRoute CRD is deleted. extdns (every source on) publishes the Services and the other
//! routes, warns once about UDPRoute, and when the CRD is installed again its routes publish without a
//! restart.
//!
//! `namespaced-role`: extdns runs with the Role external-dns's chart renders for `namespaced: true` and the
//! service source (pods, services, endpointslices; no nodes). The namespace's LoadBalancer Services
//! publish; the record a NodePort Service published earlier (with full RBAC) is held, not deleted; one
//! warning names Nodes and the missing RBAC rule.

use std::time::Duration;

use anyhow::{Result, bail};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::json;

use crate::controllers::{Run, Which};
use crate::crds;
use crate::dns;
use crate::objects::{self as o, RouteKind};

use super::Ctx;
use super::wait::{alive, answers};

const GATEWAY_ADDRESS: &str = "203.0.113.120";
const UDP_CRD: &str = "udproutes.gateway.networking.k8s.io";
const WARNING: &str = "cannot list this kind";

pub fn missing_crd(ctx: &mut Ctx) -> Result<()> {
    let ns = ctx.namespace("missing-crd")?;
    let udp: Vec<_> = crds::gateway_api()
        .into_iter()
        .filter(|c| c.spec.names.kind == "UDPRoute")
        .collect();
    ctx.cp
        .kube
        .delete("apiextensions.k8s.io/v1", "CustomResourceDefinition", None, UDP_CRD)?;
    // Gone, not terminating: the API server's own finalizer deletes the routes other scenarios left.
    let crds: kube::Api<CustomResourceDefinition> = kube::Api::all(ctx.cp.kube.client());
    crate::proc::eventually(
        "the UDPRoute CRD deleted",
        Duration::from_secs(60),
        Duration::from_millis(200),
        || Ok(ctx.cp.kube.block_on(crds.get_opt(UDP_CRD))?.is_none().then_some(())),
    )?;
    let result = missing_crd_scenario(ctx, &ns, &udp);
    // Whatever happened, the next scenarios get the CRD back.
    ctx.cp.kube.install_crds(&udp)?;
    result
}

fn missing_crd_scenario(ctx: &mut Ctx, ns: &str, udp: &[CustomResourceDefinition]) -> Result<()> {
    let kube = &ctx.cp.kube;
    let server = dns::bind();
    kube.apply(&o::gateway_class())?;
    kube.apply(&o::gateway(ns, "gw", GATEWAY_ADDRESS))?;
    kube.apply(&o::lb_at(ns, "web", "web.missing.example.org", "203.0.113.121"))?;
    kube.apply(&o::annotated_route(
        RouteKind::Tcp,
        ns,
        "tcp",
        "tcp.missing.example.org",
        "tcp",
    ))?;

    let run = Run::new(Which::Extdns, ns).flag("--events").flag("--interval=1h");
    let mut extdns = run.start(&ctx.cp, &server, &ctx.log("missing-crd-extdns"))?;
    answers(&server, &mut extdns, "web.missing.example.org", "A", &["203.0.113.121"])?;
    answers(&server, &mut extdns, "tcp.missing.example.org", "A", &[GATEWAY_ADDRESS])?;
    // The watcher re-checks with backoff (about 1 s, 2 s, 4 s): still one warning.
    std::thread::sleep(Duration::from_secs(4));
    one_warning(&extdns.log_text(), &[WARNING, &format!("CRD {UDP_CRD}")])?;

    // The CRD installed again: the UDPRoute source publishes, no restart.
    kube.install_crds(udp)?;
    kube.apply(&o::annotated_route(
        RouteKind::Udp,
        ns,
        "udp",
        "udp.missing.example.org",
        "udp",
    ))?;
    answers(&server, &mut extdns, "udp.missing.example.org", "A", &[GATEWAY_ADDRESS])?;
    answers(&server, &mut extdns, "web.missing.example.org", "A", &["203.0.113.121"])?;
    alive(&mut extdns)
}

pub fn namespaced_role(ctx: &mut Ctx) -> Result<()> {
    let ns = ctx.namespace("namespaced")?;
    let kube = &ctx.cp.kube;
    let server = dns::bind();
    kube.apply(&o::node("namespaced-node", &[("ExternalIP", "198.51.100.77")]))?;
    kube.apply(&o::nodeport_service(
        &ns,
        "np",
        o::annotations(&[("hostname", "np.namespaced.example.org")]),
    ))?;
    kube.apply(&o::lb_at(&ns, "lb1", "lb1.namespaced.example.org", "203.0.113.131"))?;
    // With the deploy/ ClusterRole (Nodes readable) the NodePort Service publishes its nodes' addresses.
    let mut full = Run::new(Which::Extdns, &ns).flag("--source=service");
    full.only_sources = true;
    full.once(&ctx.cp, &server)?;
    let node_port = dns::answers(&server, "np.namespaced.example.org", "A");
    if !node_port.iter().any(|a| a == "198.51.100.77") {
        bail!("the NodePort Service did not publish its node's address: {node_port:?}");
    }

    // external-dns's chart, `namespaced: true`, service source: a Role without nodes.
    let sa = "external-dns";
    kube.apply(&json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa, "namespace": ns}}))?;
    kube.apply(&json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": sa, "namespace": ns},
        "rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "watch", "list"]},
            {"apiGroups": [""], "resources": ["services"], "verbs": ["get", "watch", "list"]},
            {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["get", "watch", "list"]},
        ],
    }))?;
    kube.apply(&json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": sa, "namespace": ns},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": sa},
        "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": ns}],
    }))?;
    let kubeconfig = super::install::service_account_kubeconfig(ctx, &ns, sa, &ctx.logs)?;
    let kube = &ctx.cp.kube;
    kube.apply(&o::lb_at(&ns, "lb2", "lb2.namespaced.example.org", "203.0.113.132"))?;

    let mut run = Run::new(Which::Extdns, &ns)
        .flag("--source=service")
        .flag("--events")
        .flag("--interval=1h");
    run.kubeconfig = Some(kubeconfig);
    run.only_sources = true;
    let mut extdns = run.start(&ctx.cp, &server, &ctx.log("namespaced-role-extdns"))?;
    answers(
        &server,
        &mut extdns,
        "lb2.namespaced.example.org",
        "A",
        &["203.0.113.132"],
    )?;
    answers(
        &server,
        &mut extdns,
        "lb1.namespaced.example.org",
        "A",
        &["203.0.113.131"],
    )?;
    let refs: Vec<&str> = node_port.iter().map(String::as_str).collect();
    std::thread::sleep(Duration::from_secs(4));
    answers(&server, &mut extdns, "np.namespaced.example.org", "A", &refs)?;
    let log = extdns.log_text();
    one_warning(&log, &["kind=Node", "resources [nodes]"])?;
    if !log
        .lines()
        .any(|l| l.contains("keeping the record as it is") && l.contains("np.namespaced.example.org"))
    {
        bail!(
            "no hold of np.namespaced.example.org in the log:\n{}",
            extdns.log_tail(30)
        );
    }
    alive(&mut extdns)
}

/// The log has exactly one warning, naming all of `names`, but for the holds of single records (one per
/// held record and sync, by design): a missing kind must cause exactly one, the re-checks included (the
/// client libraries' own lines for each retry among them).
fn one_warning(log: &str, names: &[&str]) -> Result<()> {
    let warnings: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("WARN") && !l.contains("keeping the record as it is"))
        .collect();
    match warnings[..] {
        [w] if names.iter().all(|n| w.contains(n)) => Ok(()),
        _ => bail!("want one warning naming {names:?}, got {warnings:#?}"),
    }
}
