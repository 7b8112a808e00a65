//! `gateway-versions`: the Gateway API as a cluster installs it from a release, v1.6.1, whose two channels
//! serve the route kinds at different versions (docs/sources/gateway.md lists them).
//!
//! A CRD's stored versions pin it to its channel, so each channel gets a control plane of its own:
//! 1. the standard channel (TLSRoute, TCPRoute and UDPRoute served at v1 only), every route created at v1,
//!    one `extdns --once` with every gateway source → zone A;
//! 2. the experimental channel, the same routes with TCPRoute and UDPRoute created at v1alpha2 and the
//!    TLSRoutes at v1alpha2 and v1alpha3 → zone B (extdns reads v1, which this channel serves too);
//! 3. on that control plane, v1 of TLSRoute, TCPRoute and UDPRoute no longer served (as on a cluster still
//!    on an older experimental release), so extdns must read them at v1alpha3 and v1alpha2 → zone C.
//!
//! A == B == C, and every route kind published. The CRDs come from the release itself: the Go module
//! `sigs.k8s.io/gateway-api` that xtask copies (`EXTDNS_TEST_GATEWAY_API_CRDS`).

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

use crate::control_plane::ControlPlane;
use crate::controllers::{Run, Which};
use crate::crds;
use crate::dns::{self, Record};
use crate::objects::{self as o, Parent, RouteKind};

use super::Ctx;
use super::install::from_env;

const NS: &str = "gateway-versions";
const ADDRESS: &str = "203.0.113.140";
const GROUP: &str = "gateway.networking.k8s.io";

/// One route of the scenario: its kind, name, hostnames (or the annotation's for TCP and UDP), parent and
/// the name it publishes.
struct Route {
    kind: RouteKind,
    name: &'static str,
    hostname: &'static str,
    parent: Parent<'static>,
    /// The version it is created at on the experimental channel (on the standard one: v1).
    experimental: &'static str,
}

fn routes() -> [Route; 7] {
    let gw = |section| Parent::gateway("gw", section);
    [
        Route {
            kind: RouteKind::Http,
            name: "web",
            hostname: "web.apps.example.org",
            parent: gw("http"),
            experimental: "v1",
        },
        Route {
            kind: RouteKind::Http,
            name: "via-ls",
            hostname: "app.ls.example.org",
            parent: Parent::listener_set("ls"),
            experimental: "v1",
        },
        Route {
            kind: RouteKind::Grpc,
            name: "grpc",
            hostname: "grpc.apps.example.org",
            parent: gw("https"),
            experimental: "v1",
        },
        Route {
            kind: RouteKind::Tls,
            name: "tls2",
            hostname: "alpha2.tls.example.org",
            parent: gw("tls"),
            experimental: "v1alpha2",
        },
        Route {
            kind: RouteKind::Tls,
            name: "tls3",
            hostname: "alpha3.tls.example.org",
            parent: gw("tls"),
            experimental: "v1alpha3",
        },
        Route {
            kind: RouteKind::Tcp,
            name: "tcp",
            hostname: "tcp.example.org",
            parent: gw("tcp"),
            experimental: "v1alpha2",
        },
        Route {
            kind: RouteKind::Udp,
            name: "udp",
            hostname: "udp.example.org",
            parent: gw("udp"),
            experimental: "v1alpha2",
        },
    ]
}

/// The versions each channel of the release serves, as docs/sources/gateway.md lists them: what the
/// scenario's premise rests on.
const STANDARD: &[(&str, &[&str])] = &[
    ("HTTPRoute", &["v1", "v1beta1"]),
    ("GRPCRoute", &["v1"]),
    ("TLSRoute", &["v1"]),
    ("TCPRoute", &["v1"]),
    ("UDPRoute", &["v1"]),
    ("Gateway", &["v1", "v1beta1"]),
    ("ListenerSet", &["v1"]),
];
const EXPERIMENTAL: &[(&str, &[&str])] = &[
    ("HTTPRoute", &["v1", "v1beta1"]),
    ("GRPCRoute", &["v1"]),
    ("TLSRoute", &["v1", "v1alpha2", "v1alpha3"]),
    ("TCPRoute", &["v1", "v1alpha2"]),
    ("UDPRoute", &["v1", "v1alpha2"]),
    ("Gateway", &["v1", "v1beta1"]),
    ("ListenerSet", &["v1"]),
];

pub fn run(ctx: &mut Ctx) -> Result<()> {
    let release = from_env("EXTDNS_TEST_GATEWAY_API_CRDS")?;
    let standard = crds::gateway_api_release(&release.join("standard"))?;
    let mut experimental = crds::gateway_api_release(&release.join("experimental"))?;
    check_served(&standard, STANDARD, "standard")?;
    check_served(&experimental, EXPERIMENTAL, "experimental")?;
    let bins = ctx.cp.binaries().clone();

    eprintln!("  standard channel: a control plane of its own");
    let zone_a = {
        let cp = ControlPlane::start_with_crds(&bins, &standard)?;
        create(&cp, |_| "v1")?;
        publish(&cp, &ctx.logs, "standard", "v1")?
    };
    expect_every_route(&zone_a)?;

    eprintln!("  experimental channel: a control plane of its own");
    let cp = ControlPlane::start_with_crds(&bins, &experimental)?;
    create(&cp, |r| r.experimental)?;
    let zone_b = publish(&cp, &ctx.logs, "experimental", "v1")?;
    same_zone(&zone_a, &zone_b, "the experimental channel")?;

    // v1 of the kinds with alpha versions no longer served: extdns finds v1alpha3 and v1alpha2 by discovery.
    for crd in &mut experimental {
        if ["TLSRoute", "TCPRoute", "UDPRoute"].contains(&crd.spec.names.kind.as_str()) {
            for v in &mut crd.spec.versions {
                if v.name == "v1" {
                    v.served = false;
                }
            }
        }
    }
    cp.kube.install_crds(&experimental)?;
    for plural in ["tlsroutes", "tcproutes", "udproutes"] {
        not_served(&cp, plural)?;
    }
    let zone_c = publish(&cp, &ctx.logs, "alpha-only", "alpha")?;
    same_zone(&zone_a, &zone_c, "v1alpha2 and v1alpha3 reads")
}

/// Each kind of `want` is served at exactly these versions in `crds`.
fn check_served(crds: &[CustomResourceDefinition], want: &[(&str, &[&str])], channel: &str) -> Result<()> {
    for (kind, versions) in want {
        let crd = crds
            .iter()
            .find(|c| c.spec.names.kind == *kind)
            .with_context(|| format!("the {channel} channel has no {kind} CRD"))?;
        let mut served: Vec<&str> = crd
            .spec
            .versions
            .iter()
            .filter(|v| v.served)
            .map(|v| v.name.as_str())
            .collect();
        served.sort_unstable();
        let mut versions = versions.to_vec();
        versions.sort_unstable();
        if served != versions {
            bail!("the {channel} channel serves {kind} at {served:?}, docs/sources/gateway.md says {versions:?}");
        }
    }
    Ok(())
}

/// The namespace, GatewayClass, Gateway, ListenerSet and routes, each route at the version `version` gives.
fn create(cp: &ControlPlane, version: impl Fn(&Route) -> &'static str) -> Result<()> {
    let kube = &cp.kube;
    kube.namespace(NS, serde_json::json!({ "extdns-e2e": NS }))?;
    kube.apply(&o::gateway_class())?;
    kube.apply(&o::gateway(NS, "gw", ADDRESS))?;
    kube.apply(&o::listener_set(NS, "ls", "gw", "*.ls.example.org"))?;
    for r in routes() {
        let (annotations, hostnames) = match r.kind {
            RouteKind::Tcp | RouteKind::Udp => (o::annotations(&[("hostname", r.hostname)]), None),
            _ => (o::annotations(&[]), Some(&[r.hostname][..])),
        };
        let mut obj = o::route(r.kind, NS, r.name, annotations, hostnames, &r.parent, true);
        obj["apiVersion"] = format!("{GROUP}/{}", version(&r)).into();
        kube.apply(&obj)
            .with_context(|| format!("creating {} {} at {}", r.kind.kind(), r.name, version(&r)))?;
    }
    Ok(())
}

/// One `extdns --once` with every gateway source into a fresh BIND; its zone. `read` is the version extdns
/// must watch TLS, TCP and UDP routes at (`alpha`: v1alpha3 for TLSRoute, v1alpha2 for the others), from
/// its debug log.
fn publish(cp: &ControlPlane, logs: &Path, label: &str, read: &str) -> Result<Vec<Record>> {
    let server = dns::bind();
    let out = Run::new(Which::Extdns, NS)
        .flag("--log-level=debug")
        .once(cp, &server)
        .with_context(|| format!("extdns on the {label} CRDs"))?;
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(logs.join(format!("gateway-versions-{label}-extdns.log")), &log)?;
    for (kind, alpha) in [
        ("TLSRoute", "v1alpha3"),
        ("TCPRoute", "v1alpha2"),
        ("UDPRoute", "v1alpha2"),
    ] {
        let version = if read == "alpha" { alpha } else { read };
        let watched = format!("{GROUP}/{version}");
        if !log
            .lines()
            .any(|l| l.contains("watching") && l.contains(&format!("kind={kind}")) && l.contains(&watched))
        {
            bail!(
                "extdns on the {label} CRDs did not watch {kind} at {watched}; its log is in {}",
                logs.display()
            );
        }
    }
    if log.lines().any(|l| l.contains(" WARN ")) {
        bail!(
            "extdns on the {label} CRDs warned:\n{}",
            log.lines()
                .filter(|l| l.contains(" WARN "))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    dns::zone(&server)
}

/// Every route published its name at the Gateway's address.
fn expect_every_route(zone: &[Record]) -> Result<()> {
    for r in routes() {
        let records = dns::records_of(zone, r.hostname);
        if !records.iter().any(|rec| rec.rtype == "A" && rec.rdata == ADDRESS) {
            bail!(
                "{} {} did not publish {} A {ADDRESS}: {records:?}",
                r.kind.kind(),
                r.name,
                r.hostname
            );
        }
    }
    Ok(())
}

fn same_zone(a: &[Record], b: &[Record], what: &str) -> Result<()> {
    if a != b {
        let only_a: Vec<&Record> = a.iter().filter(|r| !b.contains(r)).collect();
        let only_b: Vec<&Record> = b.iter().filter(|r| !a.contains(r)).collect();
        bail!("{what} gave another zone than the standard channel's: only there {only_a:#?}, only here {only_b:#?}");
    }
    Ok(())
}

/// Waits until the API server answers 404 to a list of `plural` at v1 (a version it no longer serves).
fn not_served(cp: &ControlPlane, plural: &str) -> Result<()> {
    let resource = kube::core::ApiResource {
        group: GROUP.into(),
        version: "v1".into(),
        api_version: format!("{GROUP}/v1"),
        kind: String::new(),
        plural: plural.into(),
    };
    let api: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(cp.kube.client(), NS, &resource);
    crate::proc::eventually(
        &format!("{plural} at v1 no longer served"),
        Duration::from_secs(30),
        Duration::from_millis(100),
        || match cp.kube.block_on(api.list(&Default::default())) {
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(Some(())),
            _ => Ok(None),
        },
    )
}
