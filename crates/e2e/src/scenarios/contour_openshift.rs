//! The contour-httpproxy and openshift-route sources on the API server with each project's published CRDs
//! installed (`EXTDNS_TEST_PROJECT_CRDS`, copied by xtask out of the projects' Go modules), the objects
//! created with the status the project's controller writes (the tests play Contour and the OpenShift
//! router). external-dns v0.23.0 and extdns from the same flags publish identical zones, holding the records
//! v0.23.0's source code makes of the objects, and each takes over the other's without a change. (The
//! reference's openshift modules are the newest matched pair the module proxy here serves, not the versions
//! v0.23.0 pins: xtask's gobuild.rs.)

use std::collections::BTreeSet;

use anyhow::{Result, bail};
use serde_json::{Value, json};

use crate::controllers::Run;
use crate::dns::{self, Record};
use crate::objects::annotations;

use super::Ctx;
use super::differential::{against_v023, is_ownership};

/// external-dns v0.23.0 and extdns on the same HTTPProxies: names from the virtual host, the hostname
/// annotation and the template-free rules (addresses by family, a load balancer hostname, the target
/// annotation, a TTL, a proxy only included by another, one without status, another controller's). No two
/// proxies share a name: external-dns's merge keeps the `resource` label of whichever its informer lists
/// first, in Go map order, so its zone is not stable (the source's unit tests cover the merge).
pub fn contour(ctx: &mut Ctx) -> Result<()> {
    let ns = ctx.namespace("differential-contour")?;
    install(ctx, "contour")?;
    for proxy in proxies(&ns) {
        ctx.cp.kube.apply(&proxy)?;
    }
    against_v023(
        ctx,
        |which| Run::of_sources(which, &ns, &["contour-httpproxy"]),
        |zone| expect_records(zone, CONTOUR_RECORDS, "HTTPProxy/"),
    )
}

/// external-dns v0.23.0 and extdns on the same Routes, without and with `--openshift-router-name`: identical
/// zones holding what v0.23.0's rules make of them (the host a router admitted at its canonical hostname;
/// `spec.host` alone publishes nothing), and take-over both ways changes nothing.
pub fn openshift(ctx: &mut Ctx) -> Result<()> {
    let ns = ctx.namespace("differential-openshift")?;
    install(ctx, "openshift")?;
    for route in routes(&ns) {
        ctx.cp.kube.apply(&route)?;
    }
    let checks: [(Option<&str>, ZoneCheck); 2] = [
        (None, |zone| expect_records(zone, OPENSHIFT_RECORDS, "route/")),
        (Some("internal"), |zone| {
            expect_records(zone, OPENSHIFT_INTERNAL_RECORDS, "route/")
        }),
    ];
    for (router, check) in checks {
        let run = |which| {
            let run = Run::of_sources(which, &ns, &["openshift-route"]);
            match router {
                Some(r) => run.flag(format!("--openshift-router-name={r}")),
                None => run,
            }
        };
        eprintln!("  --openshift-router-name={}", router.unwrap_or(""));
        against_v023(ctx, run, check)?;
    }
    Ok(())
}

/// What a zone must hold, checked after the comparison.
type ZoneCheck = fn(&[Record]) -> Result<()>;

/// The project's CRDs; deploy/'s ClusterRole already grants their kinds to the ServiceAccount the
/// controllers run as.
fn install(ctx: &Ctx, project: &str) -> Result<()> {
    ctx.cp.kube.install_crds(&crate::crds::project(project)?)
}

/// The non-ownership records of `zone` are exactly `expected` (`name TYPE rdata`), and every ownership
/// record's `resource` label starts with `label` (the kind as external-dns spells it).
fn expect_records(zone: &[Record], expected: &[&str], label: &str) -> Result<()> {
    // The zone's own records (its name server and the server's address) are the test server's.
    let server = format!("ns1.{}", dns::ZONE);
    let got: BTreeSet<String> = zone
        .iter()
        .map(|r| (r.name.trim_end_matches('.'), r))
        .filter(|(name, r)| !is_ownership(r) && !matches!(r.rtype.as_str(), "SOA" | "NS") && *name != server)
        .map(|(name, r)| format!("{name} {} {}", r.rtype, r.rdata))
        .collect();
    let want: BTreeSet<String> = expected.iter().map(|s| s.to_string()).collect();
    if got != want {
        bail!("records: got {got:#?}, want {want:#?}");
    }
    for r in zone.iter().filter(|r| is_ownership(r)) {
        if !r.rdata.contains(&format!("resource={label}")) {
            bail!("ownership record {} {} names no {label} resource", r.name, r.rdata);
        }
    }
    Ok(())
}

const CONTOUR_RECORDS: &[&str] = &[
    "v4.example.org A 192.0.2.10",
    "v4.example.org A 192.0.2.11",
    "v6.example.org AAAA 2001:db8::10",
    "lb.example.org CNAME envoy.lb.example.net.",
    "alias-a.example.org A 192.0.2.10",
    "alias-a.example.org A 192.0.2.11",
    "alias-b.example.org A 192.0.2.10",
    "alias-b.example.org A 192.0.2.11",
    "targeted.example.org CNAME target.example.net.",
    "ttl.example.org A 192.0.2.12",
];

/// An HTTPProxy with Contour's status: `lb` its Envoy Service's addresses (`ip` or `hostname` entries).
fn proxy(ns: &str, name: &str, fqdn: Option<&str>, annotations: Value, lb: &[Value]) -> Value {
    let mut spec = json!({"routes": [{"services": [{"name": "web", "port": 80}]}]});
    if let Some(fqdn) = fqdn {
        spec["virtualhost"] = json!({"fqdn": fqdn});
    }
    let mut object = json!({
        "apiVersion": "projectcontour.io/v1", "kind": "HTTPProxy",
        "metadata": {"name": name, "namespace": ns, "annotations": annotations},
        "spec": spec,
    });
    if !lb.is_empty() {
        object["status"] =
            json!({"currentStatus": "valid", "description": "Valid HTTPProxy", "loadBalancer": {"ingress": lb}});
    }
    object
}

fn proxies(ns: &str) -> Vec<Value> {
    let ip = |a: &str| json!({"ip": a});
    let none = json!({});
    let pair = [ip("192.0.2.10"), ip("192.0.2.11")];
    vec![
        proxy(ns, "v4", Some("v4.example.org"), none.clone(), &pair),
        proxy(ns, "v6", Some("v6.example.org"), none.clone(), &[ip("2001:db8::10")]),
        proxy(
            ns,
            "lb",
            Some("lb.example.org"),
            none.clone(),
            &[json!({"hostname": "envoy.lb.example.net"})],
        ),
        proxy(
            ns,
            "alias",
            Some("alias-a.example.org"),
            annotations(&[("hostname", "alias-b.example.org")]),
            &pair,
        ),
        proxy(
            ns,
            "targeted",
            Some("targeted.example.org"),
            annotations(&[("target", "target.example.net")]),
            &pair,
        ),
        proxy(
            ns,
            "ttl",
            Some("ttl.example.org"),
            annotations(&[("ttl", "120")]),
            &[ip("192.0.2.12")],
        ),
        // Only included by a root proxy: no virtual host, no name.
        proxy(ns, "included", None, none.clone(), &pair),
        // Not yet given an address by Contour.
        proxy(ns, "pending", Some("pending.example.org"), none.clone(), &[]),
        proxy(
            ns,
            "foreign",
            Some("foreign.example.org"),
            annotations(&[("controller", "someone-else")]),
            &pair,
        ),
    ]
}

const OPENSHIFT_RECORDS: &[&str] = &[
    "shop.example.org CNAME router-default.apps.example.net.",
    "www.shop.example.org CNAME router-default.apps.example.net.",
    "second.example.org CNAME router-internal.apps.example.net.",
    "targeted.example.org CNAME lb.example.net.",
];

/// With `--openshift-router-name=internal`: only what that router admitted.
const OPENSHIFT_INTERNAL_RECORDS: &[&str] = &[
    "shop.example.org CNAME router-internal.apps.example.net.",
    "www.shop.example.org CNAME router-internal.apps.example.net.",
    "second.example.org CNAME router-internal.apps.example.net.",
];

/// One `status.ingress[]` entry as an OpenShift router writes it.
fn admitted(host: &str, router: &str, admitted: bool) -> Value {
    json!({
        "host": host, "routerName": router, "wildcardPolicy": "None",
        "routerCanonicalHostname": format!("router-{router}.apps.example.net"),
        "conditions": [{"type": "Admitted", "status": if admitted { "True" } else { "False" },
                        "lastTransitionTime": "2026-01-01T00:00:00Z"}]
    })
}

fn route(ns: &str, name: &str, host: &str, annotations: Value, ingress: &[Value]) -> Value {
    let mut object = json!({
        "apiVersion": "route.openshift.io/v1", "kind": "Route",
        "metadata": {"name": name, "namespace": ns, "annotations": annotations},
        "spec": {"host": host, "to": {"kind": "Service", "name": "web", "weight": 100}, "wildcardPolicy": "None"},
    });
    if !ingress.is_empty() {
        object["status"] = json!({"ingress": ingress});
    }
    object
}

fn routes(ns: &str) -> Vec<Value> {
    let none = json!({});
    vec![
        route(
            ns,
            "shop",
            "shop.example.org",
            annotations(&[("hostname", "www.shop.example.org")]),
            &[
                admitted("shop.example.org", "default", true),
                admitted("shop.example.org", "internal", true),
            ],
        ),
        // The first router refused it: the next that admitted it publishes.
        route(
            ns,
            "second",
            "second.example.org",
            none.clone(),
            &[
                admitted("second.example.org", "default", false),
                admitted("second.example.org", "internal", true),
            ],
        ),
        // The target annotation replaces the router's name; the internal router never saw it.
        route(
            ns,
            "targeted",
            "targeted.example.org",
            annotations(&[("target", "lb.example.net")]),
            &[admitted("targeted.example.org", "default", true)],
        ),
        // No router admitted it: its spec.host alone publishes nothing.
        route(ns, "unadmitted", "unadmitted.example.org", none, &[]),
    ]
}
