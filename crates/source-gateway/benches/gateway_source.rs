//! One sync of `gateway-httproute` over a large in-memory cluster: 5,000 HTTPRoutes in 200 namespaces on 50
//! Gateways of 10 listeners each (wildcard, exact and no hostnames; allowedRoutes All, Same and Selector;
//! a few TCP/TLS listeners the routes cannot use). Target: under 50 ms.
#![allow(missing_docs, reason = "criterion_group! defines public functions of its own")]

use criterion::{Criterion, criterion_group, criterion_main};
use extdns_informer::ClusterStore;
use extdns_informer::view::{
    AllowedRoutes, Gateway, LabelSelector, Listener, Meta, Namespace, ParentReference, Route, RouteKind,
    RouteParentStatus,
};
use extdns_source::SourceExt;
use extdns_source_gateway::{GatewayRouteSource, GatewaySourceConfig};

const NAMESPACES: usize = 200;
const GATEWAYS: usize = 50;
const ROUTES: usize = 5_000;

fn meta(ns: &str, name: &str) -> Meta {
    Meta {
        name: name.into(),
        namespace: ns.into(),
        ..Meta::default()
    }
}

fn allowed(i: usize) -> Option<AllowedRoutes> {
    let (from, selector) = match i % 4 {
        0 => ("All", None),
        1 => ("Same", None),
        2 => (
            "Selector",
            Some(LabelSelector {
                match_labels: vec![("team".into(), format!("team-{}", i % 10))],
                ..LabelSelector::default()
            }),
        ),
        _ => ("All", None),
    };
    Some(AllowedRoutes {
        namespaces_from: Some(from.into()),
        namespaces_selector: selector,
        kinds: vec![],
    })
}

fn listeners(g: usize) -> Vec<Listener> {
    (0..10)
        .map(|i| {
            let (protocol, port) = match i {
                8 => ("TCP", 5432),
                9 => ("TLS", 8443),
                _ if i % 2 == 0 => ("HTTP", 80 + i as i32),
                _ => ("HTTPS", 443 + i as i32),
            };
            let hostname = match i {
                0 => None,
                1 | 3 | 5 | 7 => Some(format!("*.s{i}.g{g}.example.com")),
                _ => Some(format!("app{i}.s{i}.g{g}.example.com")),
            };
            // Listener 0 serves every namespace, so every route finds at least one listener.
            let allowed_routes = if i == 0 { allowed(0) } else { allowed(i + g) };
            Listener {
                name: format!("l{i}"),
                hostname,
                port,
                protocol: protocol.into(),
                allowed_routes,
            }
        })
        .collect()
}

fn cluster() -> ClusterStore {
    let mut c = ClusterStore::new();
    for n in 0..NAMESPACES {
        c.add(Namespace {
            name: format!("ns-{n}"),
            labels: [
                ("team", format!("team-{}", n % 10)),
                ("env", if n % 2 == 0 { "prod" } else { "dev" }.into()),
            ]
            .into_iter()
            .collect(),
        });
    }
    for g in 0..GATEWAYS {
        c.add(Gateway {
            meta: meta(&format!("ns-{}", g * 4), &format!("gw-{g}")),
            gateway_class_name: "example".into(),
            listeners: listeners(g),
            allowed_listeners: None,
            addresses: vec![format!("10.0.{g}.1"), format!("10.0.{g}.2")],
        });
    }
    for r in 0..ROUTES {
        let ns = format!("ns-{}", r % NAMESPACES);
        let g = r % GATEWAYS;
        let mut refs = vec![ParentReference {
            namespace: Some(format!("ns-{}", g * 4)),
            name: format!("gw-{g}"),
            section_name: if r % 7 == 0 { Some(format!("l{}", r % 10)) } else { None },
            ..ParentReference::default()
        }];
        if r % 5 == 0 {
            let g2 = (g + 1) % GATEWAYS;
            refs.push(ParentReference {
                namespace: Some(format!("ns-{}", g2 * 4)),
                name: format!("gw-{g2}"),
                ..ParentReference::default()
            });
        }
        let s = 1 + 2 * (r % 4);
        let hostnames = vec![
            format!("r{r}.s{s}.g{g}.example.com"),
            if r % 3 == 0 {
                format!("*.s{s}.g{g}.example.com")
            } else {
                format!("www{r}.example.org")
            },
        ];
        c.add(Route {
            kind: RouteKind::Http,
            meta: meta(&ns, &format!("route-{r}")),
            hostnames,
            parents: refs
                .iter()
                .map(|p| RouteParentStatus {
                    parent_ref: p.clone(),
                    accepted: Some("True".into()),
                })
                .collect(),
            parent_refs: refs,
            template_fields: None,
        });
    }
    c
}

fn bench(c: &mut Criterion) {
    let cluster = cluster();
    let source = GatewayRouteSource::new(RouteKind::Http, GatewaySourceConfig::default());
    let collect = |cluster: &ClusterStore| futures::executor::block_on(source.evaluate_all(cluster));
    let produced = collect(&cluster).map(|o| o.endpoints.len()).unwrap_or(0);
    assert!(
        produced > ROUTES,
        "the benchmark cluster must publish at least one record per route, got {produced}"
    );
    eprintln!("gateway-httproute: {produced} endpoints from {ROUTES} routes");
    c.bench_function("gateway_httproute_5000_routes_50_gateways", |b| {
        b.iter(|| collect(std::hint::black_box(&cluster)))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
