//! The node and pod sources against external-dns v0.23.0: Nodes of every address shape (external and
//! internal addresses, IPv6, a cordoned one, the `target` and `ttl` annotations) and Pods on the host network
//! and off it (the `hostname`, `internal-hostname`, `target` and `ttl` annotations, `--pod-source-domain`, a
//! template), published by both controllers from the same flags, each into its own BIND: identical zones
//! (ownership records with `resource: node/<name>` included), and take-over both ways changes nothing.
//!
//! Nodes are cluster-scoped and the control plane is shared by every scenario, so both controllers read only
//! this scenario's objects: every Node and Pod made here carries [`LABEL`] with the scenario's namespace,
//! and `--label-filter` selects it.

use anyhow::{Result, bail};
use serde_json::{Value, json};

use crate::controllers::{Run, Which};
use crate::dns::{self, DnsServer};
use crate::objects::{self as o, annotations};

use super::Ctx;
use super::differential::{identical_then_takeover, settle_external_dns};

/// The label both controllers select by: this scenario's objects only.
const LABEL: &str = "extdns-e2e/node-pod";

pub fn run(ctx: &mut Ctx) -> Result<()> {
    let ns = ctx.namespace("node-pod")?;
    create_objects(ctx, &ns)?;
    let theirs = dns::bind();
    let ours = dns::bind();
    let external_dns = node_pod_run(Which::ExternalDns, &ns);
    let extdns = node_pod_run(Which::Extdns, &ns);
    settle_external_dns(ctx, &external_dns, &theirs, |_| true)?;
    extdns.once(&ctx.cp, &ours)?;
    check_published(&ours, &ns)?;
    identical_then_takeover(ctx, (&external_dns, &theirs), (&extdns, &ours))
}

/// `--source=node --source=pod` alone, this scenario's objects, a template for Nodes (their own names are
/// outside the zone) and for Pods the annotations give no name, `--pod-source-domain`, IPv6 internal
/// addresses exposed.
fn node_pod_run(which: Which, ns: &str) -> Run<'_> {
    let mut run = Run::new(which, ns)
        .flag("--source=node")
        .flag("--source=pod")
        .flag(format!("--label-filter={LABEL}={ns}"))
        .flag(r#"--fqdn-template={{if isSource "node"}}{{.Name}}.nodes.example.org{{else}}{{.Name}}.{{.Namespace}}.pods.example.org{{end}}"#)
        .flag("--pod-source-domain=by-name.example.org")
        .flag("--expose-internal-ipv6");
    run.only_sources = true;
    run
}

/// A Node labelled for this scenario (and, by [`o::node`], for deletion after it), with these addresses,
/// spec and annotations.
fn node(ns: &str, name: &str, addresses: &[(&str, &str)], spec: Value, annotations: Value) -> Value {
    let mut node = o::node(&format!("{ns}-{name}"), addresses);
    node["metadata"]["labels"][LABEL] = json!(ns);
    node["metadata"]["annotations"] = annotations;
    node["spec"] = spec;
    node
}

/// A running Pod of this scenario on `node`, with `ip`, on the host network or not.
fn pod(ns: &str, name: &str, node: &str, ip: &str, host_network: bool, annotations: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": { "name": name, "namespace": ns, "labels": { LABEL: ns }, "annotations": annotations },
        "spec": {
            "nodeName": format!("{ns}-{node}"),
            "hostNetwork": host_network,
            "containers": [{ "name": "agent", "image": "example.invalid/agent:1" }],
        },
        "status": { "phase": "Running", "podIP": ip, "podIPs": [{ "ip": ip }], "hostIP": ip },
    })
}

fn create_objects(ctx: &Ctx, ns: &str) -> Result<()> {
    let kube = &ctx.cp.kube;
    let none = || json!({});
    let nodes = [
        node(
            ns,
            "ext",
            &[
                ("InternalIP", "10.9.0.10"),
                ("ExternalIP", "198.51.100.10"),
                ("InternalIP", "fd00::10"),
                ("Hostname", "ext"),
            ],
            none(),
            none(),
        ),
        node(ns, "int", &[("InternalIP", "10.9.0.11")], none(), none()),
        node(
            ns,
            "cordoned",
            &[("ExternalIP", "198.51.100.12")],
            json!({ "unschedulable": true }),
            none(),
        ),
        node(
            ns,
            "annotated",
            &[("ExternalIP", "198.51.100.13")],
            none(),
            annotations(&[("ttl", "120"), ("target", "203.0.113.50")]),
        ),
    ];
    for n in &nodes {
        kube.apply(n)?;
    }
    // Two Pods under the same hostname and internal hostname.
    let agents = annotations(&[
        ("hostname", "agents.example.org"),
        ("internal-hostname", "agents.internal.example.org"),
    ]);
    let pods = [
        pod(ns, "agent-a", "ext", "10.9.0.10", true, agents.clone()),
        pod(ns, "agent-b", "int", "10.9.0.11", true, agents),
        pod(
            ns,
            "targeted",
            "ext",
            "10.9.0.10",
            true,
            annotations(&[("hostname", "tgt.example.org"), ("target", "lb.example.net")]),
        ),
        pod(
            ns,
            "web-0",
            "int",
            "10.244.1.5",
            false,
            annotations(&[("internal-hostname", "web.internal.example.org"), ("ttl", "90")]),
        ),
        pod(ns, "plain", "int", "10.244.1.6", false, none()),
    ];
    for p in &pods {
        kube.apply(p)?;
    }
    Ok(())
}

/// What extdns must have published, beyond the comparison: the address rules of each source show in the
/// zone (so identical zones cannot both be empty or both miss a rule).
fn check_published(server: &DnsServer, ns: &str) -> Result<()> {
    let expect = |name: &str, rtype: &str, want: &[&str]| -> Result<()> {
        let got = dns::answers(server, name, rtype);
        if got != want {
            bail!("{name} {rtype}: got {got:?}, want {want:?}");
        }
        Ok(())
    };
    expect(&format!("{ns}-ext.nodes.example.org"), "A", &["198.51.100.10"])?;
    expect(&format!("{ns}-ext.nodes.example.org"), "AAAA", &["fd00::10"])?;
    expect(&format!("{ns}-int.nodes.example.org"), "A", &["10.9.0.11"])?;
    expect(&format!("{ns}-cordoned.nodes.example.org"), "A", &[])?;
    expect(&format!("{ns}-annotated.nodes.example.org"), "A", &["203.0.113.50"])?;
    expect("agents.example.org", "A", &["198.51.100.10"])?;
    expect("agents.internal.example.org", "A", &["10.9.0.10", "10.9.0.11"])?;
    expect("tgt.example.org", "CNAME", &["lb.example.net."])?;
    expect("web.internal.example.org", "A", &["10.244.1.5"])?;
    expect("plain.by-name.example.org", "A", &["10.244.1.6"])?;
    Ok(())
}
