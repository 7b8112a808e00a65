//! external-dns v0.23's `source/traefik_proxy_test.go` cases, one test each (IngressRoute, IngressRouteTCP,
//! IngressRouteUDP, the legacy group, the group flags, the filters), then extdns's own: the Traefik
//! Service's address for routers without a target, and incremental evaluation.
//!
//! Each router is written as the JSON an API server would hold, loaded through the manifest loader (the same
//! ingest path as the live informer), so the conversion is under test too.

use std::collections::BTreeSet;

use extdns_informer::{ChangeSet, ClusterStore, LoadOptions, ObjectKey, ResourceKind};
use extdns_source::annotations::PREFIX_ALPHA;
use extdns_source::pipeline::testing::{evaluate_ok, ga, load_balancer_service, load_lenient, render};
use extdns_source::{Objects, Source, SourceExt};
use serde_json::{Value, json};

use super::*;

/// external-dns's test namespace.
const NS: &str = "traefik";
const TARGET: &str = "target.domain.tld";

/// A router of `kind` (`IngressRoute`, ...) in `group`, with `rules` and `annotations`.
fn router(group: &str, kind: &str, name: &str, annotations: &[(&str, &str)], rules: &[&str]) -> Value {
    let annotations: serde_json::Map<String, Value> =
        annotations.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
    let routes: Vec<Value> = rules
        .iter()
        .map(|m| json!({"match": m, "services": [{"name": "whoami", "port": 80}]}))
        .collect();
    json!({
        "apiVersion": format!("{group}/v1alpha1"),
        "kind": kind,
        "metadata": {"name": name, "namespace": NS, "annotations": annotations},
        "spec": {"routes": routes},
    })
}

fn ingress_route(name: &str, annotations: &[(&str, &str)], rules: &[&str]) -> Value {
    router("traefik.io", "IngressRoute", name, annotations, rules)
}

fn with_labels(mut v: Value, labels: &[(&str, &str)]) -> Value {
    v["metadata"]["labels"] = labels.iter().map(|(k, val)| (k.to_string(), json!(val))).collect();
    v
}

/// A store holding `items`, read leniently as the controller reads manifests: an object that does not
/// decode is recorded, not refused.
fn cluster(items: &[Value]) -> ClusterStore {
    load_lenient(items, LoadOptions::default())
}

/// The traefik source's own flags a test sets.
#[derive(Default)]
struct Own {
    enable_legacy: bool,
    disable_new: bool,
    service: Option<&'static str>,
}

type Flags = extdns_source::pipeline::testing::Flags<Own>;

fn source(f: &Flags) -> TraefikSource {
    let service = f.source.service.map(|s| s.parse().expect("service"));
    TraefikSource::new(TraefikSourceConfig::new(
        f.config(),
        f.source.enable_legacy,
        f.source.disable_new,
        service,
    ))
}

/// The endpoint's line ([`render`]), then ` <- ` and its `resource` label.
fn line(e: &Endpoint) -> String {
    let resource = e.resource().unwrap_or_default();
    format!("{} <- {resource}", render(e))
}

fn run(flags: &Flags, items: &[Value]) -> Vec<String> {
    let mut got: Vec<String> = evaluate_ok(&source(flags), &cluster(items)).iter().map(line).collect();
    got.sort();
    got
}

/// external-dns's tests run with this annotation filter.
fn traefik_class() -> Flags {
    Flags {
        annotation_filter: "kubernetes.io/ingress.class=traefik",
        ..Flags::default()
    }
}

const CLASS: (&str, &str) = ("kubernetes.io/ingress.class", "traefik");

// ---------------------------------------------------------------------------------------- IngressRoute

#[test]
fn ingress_route_with_hostname_annotation() {
    let hostname = ga("hostname");
    let target = ga("target");
    let r = ingress_route("a", &[(&hostname, "a.example.com"), (&target, TARGET), CLASS], &[]);
    assert_eq!(
        run(&traefik_class(), &[r]),
        ["a.example.com CNAME target.domain.tld <- ingressroute/traefik/a"]
    );
}

#[test]
fn ingress_route_with_host_rule() {
    let target = ga("target");
    let r = ingress_route("b", &[(&target, TARGET), CLASS], &["Host(`b.example.com`)"]);
    assert_eq!(
        run(&traefik_class(), &[r]),
        ["b.example.com CNAME target.domain.tld <- ingressroute/traefik/b"]
    );
}

#[test]
fn ingress_route_with_host_header_rule() {
    let target = ga("target");
    let r = ingress_route("c", &[(&target, TARGET), CLASS], &["HostHeader(`c.example.com`)"]);
    assert_eq!(
        run(&traefik_class(), &[r]),
        ["c.example.com CNAME target.domain.tld <- ingressroute/traefik/c"]
    );
}

#[test]
fn ingress_route_with_multiple_host_rules() {
    let target = ga("target");
    let r = ingress_route(
        "m",
        &[(&target, TARGET), CLASS],
        &["Host(`d.example.com`) || Host(`e.example.com`)"],
    );
    assert_eq!(
        run(&traefik_class(), &[r]),
        [
            "d.example.com CNAME target.domain.tld <- ingressroute/traefik/m",
            "e.example.com CNAME target.domain.tld <- ingressroute/traefik/m"
        ]
    );
}

#[test]
fn ingress_route_with_multiple_host_rules_and_annotation() {
    let (hostname, target) = (ga("hostname"), ga("target"));
    let r = ingress_route(
        "m",
        &[(&hostname, "f.example.com"), (&target, TARGET), CLASS],
        &["Host(`g.example.com`, `h.example.com`)"],
    );
    assert_eq!(
        run(&traefik_class(), &[r]),
        [
            "f.example.com CNAME target.domain.tld <- ingressroute/traefik/m",
            "g.example.com CNAME target.domain.tld <- ingressroute/traefik/m",
            "h.example.com CNAME target.domain.tld <- ingressroute/traefik/m"
        ]
    );
}

#[test]
fn ingress_route_ignoring_the_hostname_annotation() {
    let (hostname, target) = (ga("hostname"), ga("target"));
    let r = ingress_route(
        "m",
        &[(&hostname, "f.example.com"), (&target, TARGET), CLASS],
        &["Host(`g.example.com`, `h.example.com`)"],
    );
    let flags = Flags {
        ignore_hostname_annotation: true,
        ..traefik_class()
    };
    assert_eq!(
        run(&flags, &[r]),
        [
            "g.example.com CNAME target.domain.tld <- ingressroute/traefik/m",
            "h.example.com CNAME target.domain.tld <- ingressroute/traefik/m"
        ]
    );
}

#[test]
fn ingress_route_omits_the_wildcard_host() {
    let target = ga("target");
    let r = ingress_route("w", &[(&target, TARGET), CLASS], &["Host(`*`)"]);
    assert!(run(&traefik_class(), &[r]).is_empty());
}

#[test]
fn ingress_route_with_matching_label_filter() {
    let target = ga("target");
    let r = with_labels(
        ingress_route("l", &[(&target, TARGET), CLASS], &["Host(`l.example.com`)"]),
        &[("app", "traefik")],
    );
    let flags = Flags {
        label_filter: "app=traefik",
        ..traefik_class()
    };
    assert_eq!(
        run(&flags, &[r]),
        ["l.example.com CNAME target.domain.tld <- ingressroute/traefik/l"]
    );
}

#[test]
fn ingress_route_with_non_matching_label_filter() {
    let target = ga("target");
    let r = with_labels(
        ingress_route("l", &[(&target, TARGET), CLASS], &["Host(`l.example.com`)"]),
        &[("app", "other")],
    );
    let flags = Flags {
        label_filter: "app=traefik",
        ..traefik_class()
    };
    assert!(run(&flags, &[r]).is_empty());
}

#[test]
fn ingress_route_with_provider_specific_annotation() {
    let (hostname, target, weight) = (ga("hostname"), ga("target"), ga("aws-weight"));
    let r = ingress_route(
        "p",
        &[(&hostname, "a.example.com"), (&target, TARGET), CLASS, (&weight, "10")],
        &[],
    );
    assert_eq!(
        run(&traefik_class(), &[r]),
        ["a.example.com CNAME target.domain.tld aws/weight=10 <- ingressroute/traefik/p"]
    );
}

#[test]
fn a_router_outside_the_annotation_filter_is_not_published() {
    let target = ga("target");
    let r = ingress_route("x", &[(&target, TARGET)], &["Host(`x.example.com`)"]);
    assert!(run(&traefik_class(), &[r]).is_empty());
}

#[test]
fn a_router_claimed_by_another_controller_is_not_published() {
    let (target, controller) = (ga("target"), ga("controller"));
    let r = ingress_route(
        "x",
        &[(&target, TARGET), (&controller, "other")],
        &["Host(`x.example.com`)"],
    );
    assert!(run(&Flags::default(), &[r]).is_empty());
}

#[test]
fn the_legacy_prefix_and_ttl_and_set_identifier_are_read() {
    let target = format!("{PREFIX_ALPHA}target");
    let (ttl, set) = (ga("ttl"), ga("set-identifier"));
    let r = ingress_route(
        "t",
        &[(&target, "192.0.2.1,2001:db8::1"), (&ttl, "10m"), (&set, "blue")],
        &["Host(`t.example.com`)"],
    );
    assert_eq!(
        run(&Flags::default(), &[r]),
        [
            "t.example.com A 192.0.2.1 ttl=600 set=blue <- ingressroute/traefik/t",
            "t.example.com AAAA 2001:db8::1 ttl=600 set=blue <- ingressroute/traefik/t"
        ]
    );
}

#[test]
fn without_a_target_annotation_nothing_is_published() {
    let r = ingress_route("n", &[], &["Host(`n.example.com`)"]);
    assert!(run(&Flags::default(), &[r]).is_empty());
}

#[test]
fn routers_sharing_a_name_have_their_targets_joined() {
    let target = ga("target");
    let a = ingress_route("a", &[(&target, "192.0.2.1")], &["Host(`s.example.com`)"]);
    let b = ingress_route("b", &[(&target, "192.0.2.2")], &["Host(`s.example.com`)"]);
    assert_eq!(
        run(&Flags::default(), &[a, b]),
        ["s.example.com A 192.0.2.1,192.0.2.2 <- ingressroute/traefik/a"]
    );
}

// ------------------------------------------------------------------------------------- IngressRouteTCP

fn tcp(group: &str, name: &str, annotations: &[(&str, &str)], rules: &[&str]) -> Value {
    router(group, "IngressRouteTCP", name, annotations, rules)
}

#[test]
fn ingress_route_tcp_with_hostname_annotation() {
    let (hostname, target) = (ga("hostname"), ga("target"));
    let r = tcp(
        "traefik.io",
        "a",
        &[(&hostname, "a.example.com"), (&target, TARGET), CLASS],
        &[],
    );
    assert_eq!(
        run(&traefik_class(), &[r]),
        ["a.example.com CNAME target.domain.tld <- ingressroutetcp/traefik/a"]
    );
}

#[test]
fn ingress_route_tcp_with_host_sni_rules_and_annotation() {
    let (hostname, target) = (ga("hostname"), ga("target"));
    let r = tcp(
        "traefik.io",
        "m",
        &[(&hostname, "f.example.com"), (&target, TARGET), CLASS],
        &["HostSNI(`g.example.com`, `h.example.com`)", "HostSNI(`i.example.com`)"],
    );
    assert_eq!(
        run(&traefik_class(), &[r]),
        [
            "f.example.com CNAME target.domain.tld <- ingressroutetcp/traefik/m",
            "g.example.com CNAME target.domain.tld <- ingressroutetcp/traefik/m",
            "h.example.com CNAME target.domain.tld <- ingressroutetcp/traefik/m",
            "i.example.com CNAME target.domain.tld <- ingressroutetcp/traefik/m"
        ]
    );
}

#[test]
fn ingress_route_tcp_omits_the_wildcard_host_sni() {
    let target = ga("target");
    let r = tcp("traefik.io", "w", &[(&target, TARGET), CLASS], &["HostSNI(`*`)"]);
    assert!(run(&traefik_class(), &[r]).is_empty());
}

// ------------------------------------------------------------------------------------- IngressRouteUDP

#[test]
fn ingress_route_udp_publishes_its_hostname_annotation_only() {
    let (hostname, target) = (ga("hostname"), ga("target"));
    let r = router(
        "traefik.io",
        "IngressRouteUDP",
        "u",
        &[(&hostname, "a.example.com, b.example.com"), (&target, TARGET), CLASS],
        &["Host(`ignored.example.com`)"],
    );
    assert_eq!(
        run(&traefik_class(), std::slice::from_ref(&r)),
        [
            "a.example.com CNAME target.domain.tld <- ingressrouteudp/traefik/u",
            "b.example.com CNAME target.domain.tld <- ingressrouteudp/traefik/u"
        ]
    );
    let ignoring = Flags {
        ignore_hostname_annotation: true,
        ..traefik_class()
    };
    assert!(run(&ignoring, &[r]).is_empty());
}

// -------------------------------------------------------------------------------- the two API groups

fn both_groups() -> Vec<Value> {
    let target = ga("target");
    vec![
        ingress_route("new", &[(&target, TARGET)], &["Host(`new.example.com`)"]),
        router(
            "traefik.containo.us",
            "IngressRoute",
            "old",
            &[(&target, TARGET)],
            &["Host(`old.example.com`)"],
        ),
        tcp(
            "traefik.containo.us",
            "old-tcp",
            &[(&target, TARGET)],
            &["HostSNI(`old-tcp.example.com`)"],
        ),
    ]
}

#[test]
fn the_legacy_group_is_read_only_when_enabled() {
    assert_eq!(
        run(&Flags::default(), &both_groups()),
        ["new.example.com CNAME target.domain.tld <- ingressroute/traefik/new"]
    );
    let legacy = Flags::own(Own {
        enable_legacy: true,
        ..Own::default()
    });
    assert_eq!(
        run(&legacy, &both_groups()),
        [
            "new.example.com CNAME target.domain.tld <- ingressroute/traefik/new",
            "old-tcp.example.com CNAME target.domain.tld <- ingressroutetcp/traefik/old-tcp",
            "old.example.com CNAME target.domain.tld <- ingressroute/traefik/old"
        ]
    );
}

#[test]
fn the_new_group_is_not_read_when_disabled() {
    let only_legacy = Flags::own(Own {
        enable_legacy: true,
        disable_new: true,
        ..Own::default()
    });
    assert_eq!(
        run(&only_legacy, &both_groups()),
        [
            "old-tcp.example.com CNAME target.domain.tld <- ingressroutetcp/traefik/old-tcp",
            "old.example.com CNAME target.domain.tld <- ingressroute/traefik/old"
        ]
    );
    let neither = Flags::own(Own {
        disable_new: true,
        ..Own::default()
    });
    assert!(run(&neither, &both_groups()).is_empty());
    assert!(source(&neither).watched_kinds().is_empty());
}

#[test]
fn only_the_enabled_groups_kinds_are_watched() {
    let kinds = source(&Flags::default()).watched_kinds();
    assert_eq!(
        kinds,
        [
            ResourceKind::Traefik(TraefikKind::IngressRoute),
            ResourceKind::Traefik(TraefikKind::IngressRouteTcp),
            ResourceKind::Traefik(TraefikKind::IngressRouteUdp)
        ]
    );
    let with_service = Flags::own(Own {
        enable_legacy: true,
        service: Some("traefik/traefik"),
        ..Own::default()
    });
    let kinds = source(&with_service).watched_kinds();
    assert_eq!(kinds.len(), 7);
    assert_eq!(kinds.last(), Some(&ResourceKind::Service));
}

#[test]
fn an_undecodable_router_fails_alone() {
    let target = ga("target");
    let good = ingress_route("good", &[(&target, TARGET)], &["Host(`good.example.com`)"]);
    let mut bad = ingress_route("bad", &[(&target, TARGET)], &[]);
    bad["spec"]["routes"] = json!([{"match": 42}]);
    let out =
        futures::executor::block_on(source(&Flags::default()).evaluate_all(&cluster(&[good, bad]))).expect("evaluates");
    assert_eq!(out.endpoints.len(), 1);
    let failed: Vec<&ObjectKey> = out.failed.iter().map(|(k, _)| k).collect();
    assert_eq!(
        failed,
        [&ObjectKey::new(
            ResourceKind::Traefik(TraefikKind::IngressRoute),
            NS,
            "bad"
        )]
    );
}

// ------------------------------------------------------------------- the Traefik Service (extdns only)

fn with_service() -> Flags {
    Flags::own(Own {
        service: Some("traefik-system/traefik"),
        ..Own::default()
    })
}

#[test]
fn a_router_without_a_target_publishes_the_traefik_service_address() {
    let r = ingress_route("n", &[], &["Host(`n.example.com`)"]);
    let svc = load_balancer_service("traefik-system", "traefik", &["192.0.2.10", "lb.example.net"]);
    assert_eq!(
        run(&with_service(), &[r, svc]),
        [
            "n.example.com A 192.0.2.10 <- ingressroute/traefik/n",
            "n.example.com CNAME lb.example.net <- ingressroute/traefik/n"
        ]
    );
}

#[test]
fn a_target_annotation_wins_over_the_traefik_service() {
    let target = ga("target");
    let r = ingress_route("a", &[(&target, "192.0.2.1")], &["Host(`a.example.com`)"]);
    let svc = load_balancer_service("traefik-system", "traefik", &["192.0.2.10"]);
    assert_eq!(
        run(&with_service(), &[r, svc]),
        ["a.example.com A 192.0.2.1 <- ingressroute/traefik/a"]
    );
}

#[test]
fn without_the_service_or_its_address_nothing_is_published() {
    let r = ingress_route("n", &[], &["Host(`n.example.com`)"]);
    assert!(run(&with_service(), std::slice::from_ref(&r)).is_empty());
    let pending = load_balancer_service("traefik-system", "traefik", &[]);
    assert!(run(&with_service(), &[r.clone(), pending]).is_empty());
    let other = load_balancer_service("traefik-system", "other", &["192.0.2.10"]);
    assert!(run(&with_service(), &[r, other]).is_empty());
}

#[test]
fn a_change_of_the_traefik_service_affects_the_routers_taking_their_target_from_it() {
    let target = ga("target");
    let items = [
        ingress_route("no-target", &[], &["Host(`n.example.com`)"]),
        tcp("traefik.io", "tcp-no-target", &[], &["HostSNI(`t.example.com`)"]),
        ingress_route("annotated", &[(&target, "192.0.2.1")], &["Host(`a.example.com`)"]),
        load_balancer_service("traefik-system", "traefik", &["192.0.2.10"]),
    ];
    let store = cluster(&items);
    let src = source(&with_service());
    let svc = ObjectKey::new(ResourceKind::Service, "traefik-system", "traefik");
    let affected = src.affected(&store, &ChangeSet::of(svc));
    let ir = |t, n| ObjectKey::new(ResourceKind::Traefik(t), NS, n);
    assert_eq!(
        affected,
        Some(BTreeSet::from([
            ir(TraefikKind::IngressRoute, "no-target"),
            ir(TraefikKind::IngressRouteTcp, "tcp-no-target")
        ]))
    );
    let other = ObjectKey::new(ResourceKind::Service, "traefik-system", "other");
    assert_eq!(src.affected(&store, &ChangeSet::of(other)), Some(BTreeSet::new()));
    // Without --traefik-service no Service change affects a router.
    let plain = source(&Flags::default());
    let svc = ObjectKey::new(ResourceKind::Service, "traefik-system", "traefik");
    assert_eq!(plain.affected(&store, &ChangeSet::of(svc)), Some(BTreeSet::new()));
}

#[test]
fn a_changed_router_alone_is_evaluated_again() {
    let target = ga("target");
    let items = [
        ingress_route("a", &[(&target, "192.0.2.1")], &["Host(`a.example.com`)"]),
        ingress_route("b", &[(&target, "192.0.2.2")], &["Host(`b.example.com`)"]),
    ];
    let store = cluster(&items);
    let src = source(&Flags::default());
    let a = ObjectKey::new(ResourceKind::Traefik(TraefikKind::IngressRoute), NS, "a");
    let affected = src.affected(&store, &ChangeSet::of(a.clone()));
    assert_eq!(affected, Some(BTreeSet::from([a.clone()])));
    let only = BTreeSet::from([a.clone()]);
    let ev = src.evaluate_now(&store, Objects::Only(&only));
    let objects: Vec<&ObjectKey> = ev.objects.iter().map(|o| &o.object).collect();
    assert_eq!(objects, [&a]);
    // A legacy router's change means nothing while the legacy group is not read.
    let legacy = ObjectKey::new(ResourceKind::Traefik(TraefikKind::LegacyIngressRoute), NS, "a");
    assert_eq!(src.affected(&store, &ChangeSet::of(legacy)), Some(BTreeSet::new()));
    assert_eq!(src.affected(&store, &ChangeSet::everything()), None);
}
