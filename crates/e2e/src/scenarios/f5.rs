//! The F5 sources against external-dns v0.23.0 on the real API server with F5 CIS v2.20.2's own CRDs
//! (`EXTDNS_TEST_PROJECT_CRDS/f5`, copied out of its Go module): VirtualServers and TransportServers as F5's
//! controller leaves them (the test plays the controller and writes `status.vsAddress`), published by both
//! with `--source=f5-virtualserver --source=f5-transportserver` and the same flags, each on its own BIND,
//! both as deploy/'s ServiceAccount (whose ClusterRole grants F5's kinds).
//! Identical zones (ownership records included), every rule represented, and take-over both ways changes
//! nothing.

use anyhow::{Result, bail};
use serde_json::{Value, json};

use crate::controllers::{Run, Which};
use crate::dns::{self, Record, differences};
use extdns_test_support::control_plane::crds;

use super::Ctx;
use super::differential::{same_zones, takeover};

pub fn run(ctx: &mut Ctx) -> Result<()> {
    let ns = ctx.namespace("f5")?;
    ctx.cp.kube.install_crds(&crds::project("f5")?)?;
    for object in objects(&ns) {
        ctx.cp.kube.apply(&object)?;
    }
    let external_dns = f5_run(Which::ExternalDns, &ns);
    let extdns = f5_run(Which::Extdns, &ns);
    let (theirs, ours) = (dns::bind(), dns::bind());
    external_dns.once(&ctx.cp, &theirs)?;
    let first = dns::zone(&theirs)?;
    external_dns.once(&ctx.cp, &theirs)?;
    let second = dns::zone(&theirs)?;
    if first != second {
        bail!(
            "external-dns's zone changed on its second run:\n{}",
            differences(&first, &second).join("\n")
        );
    }
    extdns.once(&ctx.cp, &ours)?;
    every_rule_published(&same_zones(&theirs, &ours)?)?;
    takeover(ctx, &extdns, &theirs, "extdns on external-dns's zone")?;
    takeover(ctx, &external_dns, &ours, "external-dns on extdns's zone")?;
    Ok(())
}

/// Both F5 sources only, with the common flags (namespace, RFC2136 to the run's BIND, the owner id).
fn f5_run(which: Which, ns: &str) -> Run<'_> {
    Run::of_sources(which, ns, &["f5-virtualserver", "f5-transportserver"])
}

/// A VirtualServer or TransportServer (`kind`) with `spec`, the fields F5's CRD requires of the kind added
/// (a VirtualServer's pool; a TransportServer's port, mode and pool), and, when given, the status F5's
/// controller writes.
fn server(kind: &str, ns: &str, name: &str, annotations: Value, mut spec: Value, vs_address: Option<&str>) -> Value {
    if kind == "VirtualServer" {
        spec["pools"] = json!([{"path": "/", "service": name, "servicePort": 80}]);
    } else {
        spec["virtualServerPort"] = json!(5432);
        spec["mode"] = json!("standard");
        spec["pool"] = json!({"service": name, "servicePort": 5432});
    }
    let mut object = json!({
        "apiVersion": "cis.f5.com/v1", "kind": kind,
        "metadata": {"name": name, "namespace": ns, "annotations": annotations},
        "spec": spec,
    });
    if let Some(a) = vs_address {
        object["status"] = json!({"vsAddress": a, "status": "Ok"});
    }
    object
}

/// One object per rule: the spec address, the status address alone, host aliases with a TTL, the target
/// annotation (a CNAME), an IPv6 address, no address yet (`None`), no status at all.
#[rustfmt::skip]
fn objects(ns: &str) -> Vec<Value> {
    const VS: &str = "VirtualServer";
    const TS: &str = "TransportServer";
    let ttl = |t: &str| json!({"external-dns.kubernetes.io/ttl": t});
    let rows: [(&str, &str, Value, Value, Option<&str>); 7] = [
        (VS, "web", ttl("120"),
         json!({"host": "web.f5.example.org", "hostAliases": ["www.f5.example.org"], "virtualServerAddress": "192.0.2.50"}),
         Some("192.0.2.50")),
        (VS, "status-only", json!({}), json!({"host": "status.f5.example.org", "ipamLabel": "prod"}),
         Some("192.0.2.51")),
        (VS, "annotated", json!({"external-dns.kubernetes.io/target": "lb.example.net"}),
         json!({"host": "annotated.f5.example.org", "virtualServerAddress": "192.0.2.52"}), Some("192.0.2.52")),
        (VS, "ipv6", json!({}), json!({"host": "v6.f5.example.org", "virtualServerAddress": "2001:db8::50"}),
         Some("2001:db8::50")),
        (VS, "pending", json!({}), json!({"host": "pending.f5.example.org", "ipamLabel": "prod"}),
         Some("None")),
        (TS, "db", ttl("300"), json!({"host": "db.f5.example.org", "virtualServerAddress": "192.0.2.60"}),
         Some("192.0.2.60")),
        (TS, "unassigned", json!({}),
         json!({"host": "unassigned.f5.example.org", "virtualServerAddress": "192.0.2.61"}), None),
    ];
    rows.into_iter()
        .map(|(kind, name, annotations, spec, vs_address)| server(kind, ns, name, annotations, spec, vs_address))
        .collect()
}

/// What [`objects`] must publish, so identical zones cannot mean two empty ones; and what it must not.
fn every_rule_published(zone: &[Record]) -> Result<()> {
    let has = |name: &str, rtype: &str| {
        zone.iter()
            .any(|r| r.name.trim_end_matches('.') == name && r.rtype == rtype)
    };
    for (name, rtype) in [
        ("web.f5.example.org", "A"),
        ("www.f5.example.org", "A"),
        ("status.f5.example.org", "A"),
        ("annotated.f5.example.org", "CNAME"),
        ("v6.f5.example.org", "AAAA"),
        ("db.f5.example.org", "A"),
    ] {
        if !has(name, rtype) {
            bail!("{name} {rtype} was not published");
        }
    }
    for name in ["pending.f5.example.org", "unassigned.f5.example.org"] {
        if zone.iter().any(|r| r.name.trim_end_matches('.') == name) {
            bail!("{name} was published without an address in status.vsAddress");
        }
    }
    Ok(())
}
