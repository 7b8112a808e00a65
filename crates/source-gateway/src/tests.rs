//! The rules of the Gateway route sources, one test per rule, on clusters built directly from views.

use std::sync::{Arc, Mutex};

use extdns_endpoint::{Endpoint, RecordType, Ttl};
use extdns_informer::ClusterStore;
use extdns_informer::view::{
    AllowedListeners, AllowedRoutes, Gateway, LabelSelector, LabelSelectorRequirement, Listener, ListenerSet, Meta,
    Namespace, ParentReference, Route, RouteGroupKind, RouteKind, RouteParentStatus,
};
use extdns_source::{Annotations, Selector, SourceConfig};

use super::*;

mod incremental;

const GA: &str = "external-dns.kubernetes.io/";
const ALPHA: &str = "external-dns.alpha.kubernetes.io/";

// ------------------------------------------------------------------------------------------------ builders

fn meta(ns: &str, name: &str) -> Meta {
    Meta {
        name: name.into(),
        namespace: ns.into(),
        ..Meta::default()
    }
}

fn with_labels(mut m: Meta, labels: &[(&str, &str)]) -> Meta {
    m.labels = labels.iter().copied().collect();
    m
}

fn with_annotations(mut m: Meta, annotations: &[(&str, &str)]) -> Meta {
    m.annotations = annotations.iter().copied().collect();
    m
}

fn listener(name: &str, protocol: &str, port: i32, hostname: Option<&str>) -> Listener {
    Listener {
        name: name.into(),
        protocol: protocol.into(),
        port,
        hostname: hostname.map(str::to_string),
        allowed_routes: Some(AllowedRoutes {
            namespaces_from: Some("All".into()),
            ..AllowedRoutes::default()
        }),
    }
}

fn http(name: &str, hostname: Option<&str>) -> Listener {
    listener(name, "HTTP", 80, hostname)
}

fn allowing(mut l: Listener, from: Option<&str>, selector: Option<LabelSelector>, kinds: &[&str]) -> Listener {
    l.allowed_routes = Some(AllowedRoutes {
        namespaces_from: from.map(str::to_string),
        namespaces_selector: selector,
        kinds: kinds
            .iter()
            .map(|k| RouteGroupKind {
                group: None,
                kind: k.to_string(),
            })
            .collect(),
    });
    l
}

fn gateway(ns: &str, name: &str, listeners: Vec<Listener>, addresses: &[&str]) -> Gateway {
    Gateway {
        meta: meta(ns, name),
        gateway_class_name: "example".into(),
        listeners,
        allowed_listeners: None,
        addresses: addresses.iter().map(|s| s.to_string()).collect(),
    }
}

fn gw_ref(ns: &str, name: &str) -> ParentReference {
    ParentReference {
        namespace: Some(ns.into()),
        name: name.into(),
        ..ParentReference::default()
    }
}

fn accepted(r: ParentReference) -> RouteParentStatus {
    RouteParentStatus {
        parent_ref: r,
        accepted: Some("True".into()),
    }
}

/// A route attached (spec and status, Accepted) to each given parent.
fn route(kind: RouteKind, ns: &str, name: &str, hostnames: &[&str], parents: &[ParentReference]) -> Route {
    Route {
        kind,
        meta: meta(ns, name),
        hostnames: hostnames.iter().map(|s| s.to_string()).collect(),
        parent_refs: parents.to_vec(),
        parents: parents.iter().cloned().map(accepted).collect(),
        template_fields: None,
    }
}

fn httproute(ns: &str, name: &str, hostnames: &[&str], parents: &[ParentReference]) -> Route {
    route(RouteKind::Http, ns, name, hostnames, parents)
}

fn namespace(name: &str, labels: &[(&str, &str)]) -> Namespace {
    Namespace {
        name: name.into(),
        labels: labels.iter().copied().collect(),
    }
}

fn selector(labels: &[(&str, &str)]) -> LabelSelector {
    LabelSelector {
        match_labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        match_expressions: vec![],
    }
}

/// The usual world: Gateway `infra/gw` with one HTTP listener (any hostname, routes from all namespaces)
/// at 1.2.3.4.
fn world() -> ClusterStore {
    let mut c = ClusterStore::new();
    c.add(gateway("infra", "gw", vec![http("http", None)], &["1.2.3.4"]));
    c
}

fn config() -> GatewaySourceConfig {
    GatewaySourceConfig::default()
}

fn run_kind(kind: RouteKind, cfg: GatewaySourceConfig, c: &ClusterStore) -> Vec<Endpoint> {
    let source = GatewayRouteSource::new(kind, cfg);
    // Silently: tests that count warnings see the one evaluation below.
    tracing::subscriber::with_default(tracing::subscriber::NoSubscriber::default(), || {
        check_per_object(&source, c)
    });
    match source.collect(c) {
        Ok(eps) => eps,
        Err(e) => panic!("source failed: {e}"),
    }
}

/// The per-object contract, checked on every fixture the tests run.
pub(crate) fn check_per_object(source: &GatewayRouteSource, c: &ClusterStore) {
    incremental::block_on(extdns_source::index::check_per_object_contract(source, c));
}

fn run(cfg: GatewaySourceConfig, c: &ClusterStore) -> Vec<Endpoint> {
    run_kind(RouteKind::Http, cfg, c)
}

/// `name TYPE target,target` lines, sorted: compact to compare.
fn lines(eps: &[Endpoint]) -> Vec<String> {
    let mut v: Vec<String> = eps
        .iter()
        .map(|e| format!("{} {} {}", e.dns_name, e.record_type, e.targets.join(",")))
        .collect();
    v.sort();
    v
}

fn names(eps: &[Endpoint]) -> Vec<String> {
    let mut v: Vec<String> = eps.iter().map(|e| e.dns_name.clone()).collect();
    v.sort();
    v.dedup();
    v
}

/// Run `f` capturing everything logged at WARN and above.
fn warnings<T>(f: impl FnOnce() -> T) -> (T, String) {
    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            if let Ok(mut v) = self.0.lock() {
                v.extend_from_slice(b);
            }
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let buf = Buf::default();
    let writer = buf.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::WARN)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let out = tracing::subscriber::with_default(subscriber, f);
    let text = buf
        .0
        .lock()
        .map(|v| String::from_utf8_lossy(&v).into_owned())
        .unwrap_or_default();
    (out, text)
}

// --------------------------------------------------------------------------------------- the source itself

#[test]
fn source_name_is_the_route_kind_source_name() {
    for kind in RouteKind::ALL {
        let s = GatewayRouteSource::new(kind, config());
        assert_eq!(s.name(), kind.source_name());
    }
}

#[test]
fn watched_kinds_are_route_gateway_namespace_and_listener_sets_with_the_flag() {
    let s = GatewayRouteSource::new(RouteKind::Tcp, config());
    assert_eq!(
        s.watched_kinds(),
        vec![
            ResourceKind::Route(RouteKind::Tcp),
            ResourceKind::Gateway,
            ResourceKind::Namespace
        ]
    );
    let s = GatewayRouteSource::new(
        RouteKind::Http,
        GatewaySourceConfig {
            listener_sets: true,
            ..config()
        },
    );
    assert!(s.watched_kinds().contains(&ResourceKind::ListenerSet));
}

#[test]
fn endpoints_is_the_same_as_collect() {
    let mut c = world();
    c.add(httproute("apps", "web", &["web.example.com"], &[gw_ref("infra", "gw")]));
    let s = GatewayRouteSource::new(RouteKind::Http, config());
    let rt = tokio::runtime::Builder::new_current_thread().build();
    let eps = match rt {
        Ok(rt) => rt.block_on(s.endpoints(&c)),
        Err(e) => panic!("{e}"),
    };
    assert_eq!(lines(&eps.unwrap_or_default()), vec!["web.example.com A 1.2.3.4"]);
}

#[test]
fn attached_route_publishes_its_hostname_at_the_gateway_addresses() {
    let mut c = world();
    c.add(httproute("apps", "web", &["web.example.com"], &[gw_ref("infra", "gw")]));
    assert_eq!(lines(&run(config(), &c)), vec!["web.example.com A 1.2.3.4"]);
}

#[test]
fn each_source_reads_only_its_own_route_kind() {
    let mut c = ClusterStore::new();
    c.add(gateway(
        "infra",
        "gw",
        vec![
            http("http", None),
            listener("tls", "TLS", 443, None),
            listener("tcp", "TCP", 5432, None),
            listener("udp", "UDP", 53, None),
        ],
        &["1.2.3.4"],
    ));
    let p = [gw_ref("infra", "gw")];
    c.add(route(RouteKind::Http, "apps", "h", &["h.example.com"], &p));
    c.add(route(RouteKind::Grpc, "apps", "g", &["g.example.com"], &p));
    c.add(route(RouteKind::Tls, "apps", "t", &["t.example.com"], &p));
    let mut tcp = route(RouteKind::Tcp, "apps", "tcp", &[], &p);
    tcp.meta.annotations = [(format!("{GA}hostname"), "tcp.example.com".to_string())]
        .into_iter()
        .collect();
    c.add(tcp);
    let mut udp = route(RouteKind::Udp, "apps", "udp", &[], &p);
    udp.meta.annotations = [(format!("{GA}hostname"), "udp.example.com".to_string())]
        .into_iter()
        .collect();
    c.add(udp);
    assert_eq!(names(&run_kind(RouteKind::Http, config(), &c)), vec!["h.example.com"]);
    assert_eq!(names(&run_kind(RouteKind::Grpc, config(), &c)), vec!["g.example.com"]);
    assert_eq!(names(&run_kind(RouteKind::Tls, config(), &c)), vec!["t.example.com"]);
    assert_eq!(names(&run_kind(RouteKind::Tcp, config(), &c)), vec!["tcp.example.com"]);
    assert_eq!(names(&run_kind(RouteKind::Udp, config(), &c)), vec!["udp.example.com"]);
}

// ------------------------------------------------------------------------------------- routes considered

#[test]
fn label_filter_selects_routes() -> Result<(), extdns_source::SelectorError> {
    let mut c = world();
    let mut public = httproute("apps", "public", &["public.example.com"], &[gw_ref("infra", "gw")]);
    public.meta = with_labels(public.meta, &[("dns", "public")]);
    c.add(public);
    c.add(httproute(
        "apps",
        "private",
        &["private.example.com"],
        &[gw_ref("infra", "gw")],
    ));
    let cfg = GatewaySourceConfig {
        common: {
            let mut common = SourceConfig::default();
            common.label_filter = Selector::parse("dns=public")?;
            common
        },
        ..config()
    };
    assert_eq!(names(&run(cfg, &c)), vec!["public.example.com"]);
    Ok(())
}

#[test]
fn label_filter_does_not_apply_to_gateways() -> Result<(), extdns_source::SelectorError> {
    let mut c = world();
    let mut r = httproute("apps", "web", &["web.example.com"], &[gw_ref("infra", "gw")]);
    r.meta = with_labels(r.meta, &[("dns", "public")]);
    c.add(r);
    let cfg = GatewaySourceConfig {
        common: {
            let mut common = SourceConfig::default();
            common.label_filter = Selector::parse("dns=public")?;
            common
        },
        ..config()
    };
    // The Gateway has no labels at all and is still used.
    assert_eq!(names(&run(cfg, &c)), vec!["web.example.com"]);
    Ok(())
}

#[test]
fn annotation_filter_selects_routes() -> Result<(), extdns_source::SelectorError> {
    let mut c = world();
    let mut r = httproute("apps", "yes", &["yes.example.com"], &[gw_ref("infra", "gw")]);
    r.meta = with_annotations(r.meta, &[("team", "a")]);
    c.add(r);
    c.add(httproute("apps", "no", &["no.example.com"], &[gw_ref("infra", "gw")]));
    let cfg = GatewaySourceConfig {
        common: {
            let mut common = SourceConfig::default();
            common.annotation_filter = Selector::parse("team=a")?;
            common
        },
        ..config()
    };
    assert_eq!(names(&run(cfg, &c)), vec!["yes.example.com"]);
    Ok(())
}

#[test]
fn namespace_flag_limits_routes_but_not_gateways() {
    let mut c = world();
    c.add(httproute("apps", "in", &["in.example.com"], &[gw_ref("infra", "gw")]));
    c.add(httproute(
        "other",
        "out",
        &["out.example.com"],
        &[gw_ref("infra", "gw")],
    ));
    let cfg = GatewaySourceConfig {
        common: {
            let mut common = SourceConfig::default();
            common.namespace = Some("apps".into());
            common
        },
        ..config()
    };
    // The Gateway lives in `infra`, outside --namespace, and still serves the route.
    assert_eq!(names(&run(cfg, &c)), vec!["in.example.com"]);
}

#[test]
fn controller_annotation_excludes_routes_of_other_controllers() {
    let mut c = world();
    let mut foreign = httproute("apps", "foreign", &["foreign.example.com"], &[gw_ref("infra", "gw")]);
    foreign.meta = with_annotations(foreign.meta, &[(&format!("{ALPHA}controller"), "someone-else")]);
    c.add(foreign);
    let mut ours = httproute("apps", "ours", &["ours.example.com"], &[gw_ref("infra", "gw")]);
    ours.meta = with_annotations(ours.meta, &[(&format!("{GA}controller"), "dns-controller")]);
    c.add(ours);
    assert_eq!(names(&run(config(), &c)), vec!["ours.example.com"]);
}

// ------------------------------------------------------------------------------------------- domain names

#[test]
fn spec_hostnames_of_http_grpc_and_tls_routes_are_published() {
    for (kind, protocol) in [
        (RouteKind::Http, "HTTP"),
        (RouteKind::Grpc, "HTTPS"),
        (RouteKind::Tls, "TLS"),
    ] {
        let mut c = ClusterStore::new();
        c.add(gateway(
            "infra",
            "gw",
            vec![listener("l", protocol, 443, None)],
            &["1.2.3.4"],
        ));
        c.add(route(
            kind,
            "apps",
            "r",
            &["a.example.com", "b.example.com"],
            &[gw_ref("infra", "gw")],
        ));
        assert_eq!(
            names(&run_kind(kind, config(), &c)),
            vec!["a.example.com", "b.example.com"],
            "{kind:?}"
        );
    }
}

#[test]
fn tcp_and_udp_routes_have_no_spec_hostnames() {
    for (kind, protocol) in [(RouteKind::Tcp, "TCP"), (RouteKind::Udp, "UDP")] {
        let mut c = ClusterStore::new();
        c.add(gateway(
            "infra",
            "gw",
            vec![listener("l", protocol, 53, Some("l.example.com"))],
            &["1.2.3.4"],
        ));
        // Even if a view carried hostnames for these kinds, they are not read: the listener hostname is used.
        c.add(route(
            kind,
            "apps",
            "r",
            &["spec.example.com"],
            &[gw_ref("infra", "gw")],
        ));
        assert_eq!(names(&run_kind(kind, config(), &c)), vec!["l.example.com"], "{kind:?}");
    }
}

#[test]
fn hostname_annotation_adds_names_under_either_prefix() {
    let mut c = world();
    let mut r = httproute("apps", "web", &["spec.example.com"], &[gw_ref("infra", "gw")]);
    r.meta = with_annotations(r.meta, &[(&format!("{ALPHA}hostname"), "a.example.com, b.example.com")]);
    c.add(r);
    let mut r2 = httproute("apps", "web2", &[], &[gw_ref("infra", "gw")]);
    r2.meta = with_annotations(r2.meta, &[(&format!("{GA}hostname"), "c.example.com")]);
    c.add(r2);
    assert_eq!(
        names(&run(config(), &c)),
        vec!["a.example.com", "b.example.com", "c.example.com", "spec.example.com"]
    );
}

#[test]
fn hostname_annotation_under_ga_prefix_wins_over_alpha() {
    let mut c = world();
    let mut r = httproute("apps", "web", &[], &[gw_ref("infra", "gw")]);
    r.meta = with_annotations(
        r.meta,
        &[
            (&format!("{ALPHA}hostname"), "alpha.example.com"),
            (&format!("{GA}hostname"), "ga.example.com"),
        ],
    );
    c.add(r);
    assert_eq!(names(&run(config(), &c)), vec!["ga.example.com"]);
}

#[test]
fn annotation_prefix_flag_reads_only_that_prefix() -> Result<(), extdns_source::AnnotationError> {
    let mut c = world();
    let mut r = httproute("apps", "web", &[], &[gw_ref("infra", "gw")]);
    r.meta = with_annotations(
        r.meta,
        &[
            (&format!("{ALPHA}hostname"), "alpha.example.com"),
            (&format!("{GA}hostname"), "ga.example.com"),
        ],
    );
    c.add(r);
    let cfg = GatewaySourceConfig {
        common: {
            let mut common = SourceConfig::default();
            common.annotations = Annotations::with_prefix(ALPHA)?;
            common
        },
        ..config()
    };
    assert_eq!(names(&run(cfg, &c)), vec!["alpha.example.com"]);
    Ok(())
}

#[test]
fn ignore_hostname_annotation_drops_annotation_names() {
    let mut c = world();
    let mut r = httproute("apps", "web", &["spec.example.com"], &[gw_ref("infra", "gw")]);
    r.meta = with_annotations(r.meta, &[(&format!("{GA}hostname"), "ann.example.com")]);
    c.add(r);
    let cfg = GatewaySourceConfig {
        common: {
            let mut common = SourceConfig::default();
            common.ignore_hostname_annotation = true;
            common
        },
        ..config()
    };
    assert_eq!(names(&run(cfg, &c)), vec!["spec.example.com"]);
}

#[test]
fn hostnames_are_lower_cased_and_deduplicated() {
    let mut c = world();
    let mut r = httproute("apps", "web", &["Web.Example.com"], &[gw_ref("infra", "gw")]);
    r.meta = with_annotations(
        r.meta,
        &[(&format!("{GA}hostname"), "web.example.com.,WEB.example.com")],
    );
    c.add(r);
    assert_eq!(lines(&run(config(), &c)), vec!["web.example.com A 1.2.3.4"]);
}

#[test]
fn listener_hostname_used_when_nothing_else_gave_a_name() {
    let mut c = ClusterStore::new();
    c.add(gateway(
        "infra",
        "gw",
        vec![
            http("a", Some("a.example.com")),
            http("wild", Some("*.example.org")),
            http("any", None),
        ],
        &["1.2.3.4"],
    ));
    c.add(httproute("apps", "web", &[], &[gw_ref("infra", "gw")]));
    // A listener without hostname gives nothing; a wildcard listener gives a wildcard record.
    assert_eq!(names(&run(config(), &c)), vec!["*.example.org", "a.example.com"]);
}

#[test]
fn listener_hostname_not_used_when_the_annotation_gave_a_name() {
    let mut c = ClusterStore::new();
    c.add(gateway(
        "infra",
        "gw",
        vec![http("a", Some("a.example.com"))],
        &["1.2.3.4"],
    ));
    let mut r = httproute("apps", "web", &[], &[gw_ref("infra", "gw")]);
    r.meta = with_annotations(r.meta, &[(&format!("{GA}hostname"), "other.example.net")]);
    c.add(r);
    // The annotation name does not fit the listener, and the listener name is not used instead.
    assert!(run(config(), &c).is_empty());
}

#[test]
fn listener_hostname_fallback_ignores_empty_annotation_items() {
    let mut c = ClusterStore::new();
    c.add(gateway(
        "infra",
        "gw",
        vec![http("a", Some("a.example.com"))],
        &["1.2.3.4"],
    ));
    let mut r = httproute("apps", "web", &[], &[gw_ref("infra", "gw")]);
    r.meta = with_annotations(r.meta, &[(&format!("{GA}hostname"), " , ")]);
    c.add(r);
    assert_eq!(names(&run(config(), &c)), vec!["a.example.com"]);
}

#[test]
fn gateway_hostname_source_annotation_only_uses_only_the_annotation() {
    let mut c = ClusterStore::new();
    c.add(gateway("infra", "gw", vec![http("l", None)], &["1.2.3.4"]));
    let mut r = httproute("apps", "web", &["spec.example.com"], &[gw_ref("infra", "gw")]);
    r.meta = with_annotations(
        r.meta,
        &[
            (&format!("{GA}gateway-hostname-source"), "Annotation-Only"),
            (&format!("{GA}hostname"), "ann.example.com"),
        ],
    );
    c.add(r);
    assert_eq!(names(&run(config(), &c)), vec!["ann.example.com"]);
}

#[test]
fn gateway_hostname_source_annotation_only_with_ignore_flag_publishes_nothing() {
    let mut c = ClusterStore::new();
    c.add(gateway(
        "infra",
        "gw",
        vec![http("l", Some("l.example.com"))],
        &["1.2.3.4"],
    ));
    let mut r = httproute("apps", "web", &["l.example.com"], &[gw_ref("infra", "gw")]);
    r.meta = with_annotations(
        r.meta,
        &[
            (&format!("{GA}gateway-hostname-source"), "annotation-only"),
            (&format!("{GA}hostname"), "l.example.com"),
        ],
    );
    c.add(r);
    let cfg = GatewaySourceConfig {
        common: {
            let mut common = SourceConfig::default();
            common.ignore_hostname_annotation = true;
            common
        },
        ..config()
    };
    assert!(run(cfg, &c).is_empty());
}

#[test]
fn gateway_hostname_source_defined_hosts_only_ignores_annotation_and_listener_names() {
    let mut c = ClusterStore::new();
    c.add(gateway(
        "infra",
        "gw",
        vec![http("l", Some("*.example.com"))],
        &["1.2.3.4"],
    ));
    let mut r = httproute("apps", "web", &["spec.example.com"], &[gw_ref("infra", "gw")]);
    r.meta = with_annotations(
        r.meta,
        &[
            (&format!("{GA}gateway-hostname-source"), "defined-hosts-only"),
            (&format!("{GA}hostname"), "ann.example.com"),
        ],
    );
    c.add(r);
    let mut bare = httproute("apps", "bare", &[], &[gw_ref("infra", "gw")]);
    bare.meta = with_annotations(
        bare.meta,
        &[(&format!("{GA}gateway-hostname-source"), "defined-hosts-only")],
    );
    c.add(bare);
    assert_eq!(names(&run(config(), &c)), vec!["spec.example.com"]);
}

#[test]
fn gateway_hostname_source_unknown_value_warns_and_uses_every_source() {
    let mut c = world();
    let mut r = httproute("apps", "web", &["spec.example.com"], &[gw_ref("infra", "gw")]);
    r.meta = with_annotations(
        r.meta,
        &[
            (&format!("{GA}gateway-hostname-source"), "both-please"),
            (&format!("{GA}hostname"), "ann.example.com"),
        ],
    );
    c.add(r);
    let (eps, logs) = warnings(|| run(config(), &c));
    assert_eq!(names(&eps), vec!["ann.example.com", "spec.example.com"]);
    assert!(
        logs.contains("HTTPRoute apps/web") && logs.contains("both-please"),
        "{logs}"
    );
}

#[test]
fn invalid_route_hostname_is_skipped_with_a_warning_and_the_rest_published() {
    let mut c = world();
    let mut r = httproute(
        "apps",
        "web",
        &["bad_name.example.com", "good.example.com", "10.0.0.1"],
        &[gw_ref("infra", "gw")],
    );
    r.meta = with_annotations(
        r.meta,
        &[(&format!("{GA}hostname"), "-bad.example.com,ann.example.com")],
    );
    c.add(r);
    let (eps, logs) = warnings(|| run(config(), &c));
    assert_eq!(names(&eps), vec!["ann.example.com", "good.example.com"]);
    assert!(logs.contains("HTTPRoute apps/web"), "{logs}");
    assert!(
        logs.contains("spec.hostnames") && logs.contains("bad_name.example.com"),
        "{logs}"
    );
    assert!(
        logs.contains("hostname annotation") && logs.contains("-bad.example.com"),
        "{logs}"
    );
    assert!(logs.contains("10.0.0.1"), "{logs}");
}

#[test]
fn invalid_only_hostname_does_not_fall_back_to_listener_hostname() {
    let mut c = ClusterStore::new();
    c.add(gateway(
        "infra",
        "gw",
        vec![http("l", Some("*.example.com"))],
        &["1.2.3.4"],
    ));
    c.add(httproute(
        "apps",
        "web",
        &["bad_name.example.com"],
        &[gw_ref("infra", "gw")],
    ));
    assert!(run(config(), &c).is_empty());
}

// -------------------------------------------------------------------------------------- matching gateways

#[test]
fn parent_with_another_group_is_ignored() {
    let mut c = world();
    let mut p = gw_ref("infra", "gw");
    p.group = Some("networking.k8s.io".into());
    c.add(httproute("apps", "web", &["web.example.com"], &[p]));
    assert!(run(config(), &c).is_empty());
}

#[test]
fn parent_with_another_kind_is_ignored() {
    let mut c = world();
    let mut p = gw_ref("infra", "gw");
    p.kind = Some("Service".into());
    c.add(httproute("apps", "web", &["web.example.com"], &[p]));
    assert!(run(config(), &c).is_empty());
}

#[test]
fn parent_group_and_kind_may_be_explicit_or_defaulted() {
    let mut c = world();
    let mut explicit = gw_ref("infra", "gw");
    explicit.group = Some("gateway.networking.k8s.io".into());
    explicit.kind = Some("Gateway".into());
    c.add(httproute("apps", "a", &["a.example.com"], &[explicit.clone()]));
    // Spec with the defaults written out, status without them (and the other way round): the same parent.
    let mut r = httproute("apps", "b", &["b.example.com"], &[explicit]);
    r.parents = vec![accepted(gw_ref("infra", "gw"))];
    c.add(r);
    assert_eq!(names(&run(config(), &c)), vec!["a.example.com", "b.example.com"]);
}

#[test]
fn parent_namespace_defaults_to_the_route_namespace() {
    let mut c = world();
    c.add(gateway("apps", "local", vec![http("http", None)], &["5.6.7.8"]));
    let p = ParentReference {
        name: "local".into(),
        ..ParentReference::default()
    };
    c.add(httproute("apps", "web", &["web.example.com"], &[p]));
    assert_eq!(lines(&run(config(), &c)), vec!["web.example.com A 5.6.7.8"]);
}

#[test]
fn status_parent_not_in_spec_parent_refs_is_ignored() {
    let mut c = world();
    let mut r = httproute("apps", "web", &["web.example.com"], &[gw_ref("infra", "other")]);
    r.parents = vec![accepted(gw_ref("infra", "gw"))];
    c.add(r);
    assert!(run(config(), &c).is_empty());
}

#[test]
fn route_without_parent_refs_publishes_nothing() {
    let mut c = world();
    let mut r = httproute("apps", "web", &["web.example.com"], &[gw_ref("infra", "gw")]);
    r.parent_refs.clear();
    c.add(r);
    assert!(run(config(), &c).is_empty());
}

#[test]
fn spec_parent_without_status_publishes_nothing() {
    let mut c = world();
    let mut r = httproute("apps", "web", &["web.example.com"], &[gw_ref("infra", "gw")]);
    r.parents.clear();
    c.add(r);
    assert!(run(config(), &c).is_empty());
}

#[test]
fn gateway_name_flag_keeps_only_that_gateway() {
    let mut c = world();
    c.add(gateway("infra", "external", vec![http("http", None)], &["2.3.4.5"]));
    c.add(httproute(
        "apps",
        "echo",
        &["echo.example.org"],
        &[gw_ref("infra", "gw")],
    ));
    c.add(httproute(
        "apps",
        "echo2",
        &["echo2.example.org"],
        &[gw_ref("infra", "external")],
    ));
    let cfg = GatewaySourceConfig {
        gateway_name: Some("external".into()),
        ..config()
    };
    assert_eq!(lines(&run(cfg, &c)), vec!["echo2.example.org A 2.3.4.5"]);
}

#[test]
fn gateway_name_flag_with_route_on_two_gateways_uses_only_the_named_one() {
    let mut c = world();
    c.add(gateway("infra", "other", vec![http("http", None)], &["2.3.4.5"]));
    c.add(httproute(
        "apps",
        "web",
        &["web.example.com"],
        &[gw_ref("infra", "gw"), gw_ref("infra", "other")],
    ));
    let cfg = GatewaySourceConfig {
        gateway_name: Some("gw".into()),
        ..config()
    };
    assert_eq!(lines(&run(cfg, &c)), vec!["web.example.com A 1.2.3.4"]);
}

#[test]
fn gateway_namespace_flag_keeps_only_gateways_in_that_namespace() {
    let mut c = world();
    c.add(gateway("edge", "gw", vec![http("http", None)], &["9.9.9.9"]));
    c.add(httproute("apps", "a", &["a.example.com"], &[gw_ref("infra", "gw")]));
    c.add(httproute("apps", "b", &["b.example.com"], &[gw_ref("edge", "gw")]));
    let cfg = GatewaySourceConfig {
        gateway_namespace: Some("edge".into()),
        ..config()
    };
    assert_eq!(lines(&run(cfg, &c)), vec!["b.example.com A 9.9.9.9"]);
}

#[test]
fn gateway_label_filter_keeps_only_matching_gateways() -> Result<(), extdns_source::SelectorError> {
    let mut c = ClusterStore::new();
    let mut public = gateway("infra", "public", vec![http("http", None)], &["1.1.1.1"]);
    public.meta = with_labels(public.meta, &[("exposure", "public")]);
    c.add(public);
    c.add(gateway("infra", "private", vec![http("http", None)], &["10.0.0.1"]));
    c.add(httproute(
        "apps",
        "web",
        &["web.example.com"],
        &[gw_ref("infra", "public"), gw_ref("infra", "private")],
    ));
    let cfg = GatewaySourceConfig {
        gateway_label_filter: Selector::parse("exposure=public")?,
        ..config()
    };
    assert_eq!(lines(&run(cfg, &c)), vec!["web.example.com A 1.1.1.1"]);
    Ok(())
}

#[test]
fn missing_gateway_publishes_nothing() {
    let mut c = world();
    c.add(httproute(
        "apps",
        "web",
        &["web.example.com"],
        &[gw_ref("infra", "nope")],
    ));
    assert!(run(config(), &c).is_empty());
}

#[test]
fn parent_must_have_accepted_the_route() {
    for status in [Some("False"), Some("Unknown"), None] {
        let mut c = world();
        let mut r = httproute("apps", "web", &["web.example.com"], &[gw_ref("infra", "gw")]);
        r.parents[0].accepted = status.map(str::to_string);
        c.add(r);
        assert!(run(config(), &c).is_empty(), "{status:?}");
    }
}

#[test]
fn gateway_with_a_foreign_controller_annotation_is_not_a_parent() {
    let mut c = ClusterStore::new();
    let mut gw = gateway("infra", "gw", vec![http("http", None)], &["1.2.3.4"]);
    gw.meta = with_annotations(gw.meta, &[(&format!("{GA}controller"), "other")]);
    c.add(gw);
    c.add(httproute("apps", "web", &["web.example.com"], &[gw_ref("infra", "gw")]));
    assert!(run(config(), &c).is_empty());
}

#[test]
fn annotation_filter_does_not_apply_to_gateways() -> Result<(), extdns_source::SelectorError> {
    let mut c = world();
    let mut r = httproute("apps", "web", &["web.example.com"], &[gw_ref("infra", "gw")]);
    r.meta = with_annotations(r.meta, &[("team", "a")]);
    c.add(r);
    let cfg = GatewaySourceConfig {
        common: {
            let mut common = SourceConfig::default();
            common.annotation_filter = Selector::parse("team=a")?;
            common
        },
        ..config()
    };
    assert_eq!(names(&run(cfg, &c)), vec!["web.example.com"]);
    Ok(())
}

// -------------------------------------------------------------------------------------- matching listeners

fn two_listener_world() -> ClusterStore {
    let mut c = ClusterStore::new();
    c.add(gateway(
        "infra",
        "gw",
        vec![
            http("foo", Some("foo.example.internal")),
            listener("bar", "HTTP", 8080, Some("bar.example.internal")),
        ],
        &["1.2.3.4"],
    ));
    c
}

#[test]
fn section_name_selects_one_listener() {
    let mut c = two_listener_world();
    let mut p = gw_ref("infra", "gw");
    p.section_name = Some("foo".into());
    c.add(httproute("apps", "web", &["*.example.internal"], &[p]));
    assert_eq!(names(&run(config(), &c)), vec!["foo.example.internal"]);
}

#[test]
fn section_name_is_read_from_the_status_parent() {
    let mut c = two_listener_world();
    let mut r = httproute("apps", "web", &["*.example.internal"], &[gw_ref("infra", "gw")]);
    r.parents[0].parent_ref.section_name = Some("bar".into());
    c.add(r);
    assert_eq!(names(&run(config(), &c)), vec!["bar.example.internal"]);
}

#[test]
fn unknown_section_name_matches_no_listener() {
    let mut c = two_listener_world();
    let mut p = gw_ref("infra", "gw");
    p.section_name = Some("nope".into());
    c.add(httproute("apps", "web", &["*.example.internal"], &[p]));
    assert!(run(config(), &c).is_empty());
}

#[test]
fn without_section_name_every_listener_is_considered() {
    let mut c = two_listener_world();
    c.add(httproute(
        "apps",
        "web",
        &["*.example.internal"],
        &[gw_ref("infra", "gw")],
    ));
    assert_eq!(
        names(&run(config(), &c)),
        vec!["bar.example.internal", "foo.example.internal"]
    );
}

#[test]
fn port_selects_listeners() {
    let mut c = two_listener_world();
    let mut p = gw_ref("infra", "gw");
    p.port = Some(8080);
    c.add(httproute("apps", "web", &["*.example.internal"], &[p]));
    assert_eq!(names(&run(config(), &c)), vec!["bar.example.internal"]);
    let mut c = two_listener_world();
    let mut p = gw_ref("infra", "gw");
    p.port = Some(9999);
    c.add(httproute("apps", "web", &["*.example.internal"], &[p]));
    assert!(run(config(), &c).is_empty());
}

#[test]
fn port_applies_to_every_listener_with_that_port() {
    let mut c = ClusterStore::new();
    c.add(gateway(
        "infra",
        "gw",
        vec![
            http("foo", Some("foo.example.internal")),
            http("bar", Some("bar.example.internal")),
        ],
        &["1.2.3.4"],
    ));
    let mut p = gw_ref("infra", "gw");
    p.port = Some(80);
    c.add(httproute("apps", "web", &["*.example.internal"], &[p]));
    assert_eq!(
        names(&run(config(), &c)),
        vec!["bar.example.internal", "foo.example.internal"]
    );
}

#[test]
fn protocol_mismatch_listener_is_not_used() {
    let mut c = ClusterStore::new();
    c.add(gateway(
        "infra",
        "gw",
        vec![listener("tcp", "TCP", 80, None)],
        &["1.2.3.4"],
    ));
    c.add(httproute("apps", "web", &["web.example.com"], &[gw_ref("infra", "gw")]));
    assert!(run(config(), &c).is_empty());
}

#[test]
fn protocol_https_listener_serves_http_and_grpc_routes() {
    let mut c = ClusterStore::new();
    c.add(gateway(
        "infra",
        "gw",
        vec![listener("https", "HTTPS", 443, None)],
        &["1.2.3.4"],
    ));
    c.add(route(
        RouteKind::Http,
        "apps",
        "h",
        &["h.example.com"],
        &[gw_ref("infra", "gw")],
    ));
    c.add(route(
        RouteKind::Grpc,
        "apps",
        "g",
        &["g.example.com"],
        &[gw_ref("infra", "gw")],
    ));
    assert_eq!(names(&run_kind(RouteKind::Http, config(), &c)), vec!["h.example.com"]);
    assert_eq!(names(&run_kind(RouteKind::Grpc, config(), &c)), vec!["g.example.com"]);
}

#[test]
fn protocol_tcp_route_on_tls_listener_is_published() {
    let mut c = ClusterStore::new();
    c.add(gateway(
        "infra",
        "gw",
        vec![listener("tls", "TLS", 443, Some("db.example.com"))],
        &["1.2.3.4"],
    ));
    c.add(route(RouteKind::Tcp, "apps", "db", &[], &[gw_ref("infra", "gw")]));
    assert_eq!(
        lines(&run_kind(RouteKind::Tcp, config(), &c)),
        vec!["db.example.com A 1.2.3.4"]
    );
}

#[test]
fn protocol_tls_route_not_on_tcp_listener() {
    let mut c = ClusterStore::new();
    c.add(gateway(
        "infra",
        "gw",
        vec![listener("tcp", "TCP", 443, None)],
        &["1.2.3.4"],
    ));
    c.add(route(
        RouteKind::Tls,
        "apps",
        "t",
        &["t.example.com"],
        &[gw_ref("infra", "gw")],
    ));
    assert!(run_kind(RouteKind::Tls, config(), &c).is_empty());
}

#[test]
fn allowed_routes_default_same_namespace_only() {
    let mut c = ClusterStore::new();
    let mut l = http("http", None);
    l.allowed_routes = None;
    c.add(gateway("infra", "gw", vec![l], &["1.2.3.4"]));
    c.add(httproute(
        "infra",
        "same",
        &["same.example.com"],
        &[gw_ref("infra", "gw")],
    ));
    c.add(httproute(
        "apps",
        "other",
        &["other.example.com"],
        &[gw_ref("infra", "gw")],
    ));
    assert_eq!(names(&run(config(), &c)), vec!["same.example.com"]);
}

#[test]
fn allowed_routes_from_same_uses_the_gateway_namespace() {
    let mut c = ClusterStore::new();
    c.add(gateway(
        "infra",
        "gw",
        vec![allowing(http("http", None), Some("Same"), None, &[])],
        &["1.2.3.4"],
    ));
    c.add(httproute(
        "infra",
        "same",
        &["same.example.com"],
        &[gw_ref("infra", "gw")],
    ));
    c.add(httproute(
        "apps",
        "other",
        &["other.example.com"],
        &[gw_ref("infra", "gw")],
    ));
    assert_eq!(names(&run(config(), &c)), vec!["same.example.com"]);
}

#[test]
fn allowed_routes_from_all_admits_any_namespace() {
    let mut c = world();
    c.add(httproute(
        "anywhere",
        "web",
        &["web.example.com"],
        &[gw_ref("infra", "gw")],
    ));
    assert_eq!(names(&run(config(), &c)), vec!["web.example.com"]);
}

#[test]
fn allowed_routes_selector_uses_the_route_namespace_labels() {
    let mut c = ClusterStore::new();
    c.add(gateway(
        "infra",
        "gw",
        vec![allowing(
            http("http", None),
            Some("Selector"),
            Some(selector(&[("team", "foo")])),
            &[],
        )],
        &["1.2.3.4"],
    ));
    c.add(namespace("foo-apps", &[("team", "foo")]));
    c.add(namespace("bar-apps", &[("team", "bar")]));
    c.add(httproute("foo-apps", "a", &["a.example.com"], &[gw_ref("infra", "gw")]));
    c.add(httproute("bar-apps", "b", &["b.example.com"], &[gw_ref("infra", "gw")]));
    c.add(httproute("ghost", "c", &["c.example.com"], &[gw_ref("infra", "gw")]));
    assert_eq!(names(&run(config(), &c)), vec!["a.example.com"]);
}

#[test]
fn allowed_routes_malformed_selector_skips_that_listener_only() {
    let mut c = ClusterStore::new();
    let bad = LabelSelector {
        match_labels: vec![],
        match_expressions: vec![LabelSelectorRequirement {
            key: "team".into(),
            operator: "Near".into(),
            values: vec![],
        }],
    };
    c.add(gateway(
        "infra",
        "gw",
        vec![
            allowing(http("bad", Some("bad.example.com")), Some("Selector"), Some(bad), &[]),
            http("good", Some("good.example.com")),
        ],
        &["1.2.3.4"],
    ));
    c.add(namespace("apps", &[("team", "foo")]));
    c.add(httproute("apps", "web", &["*.example.com"], &[gw_ref("infra", "gw")]));
    let (eps, logs) = warnings(|| run(config(), &c));
    assert_eq!(names(&eps), vec!["good.example.com"]);
    assert!(logs.contains("Gateway infra/gw"), "{logs}");
    assert!(
        logs.contains("spec.listeners[bad].allowedRoutes.namespaces.selector"),
        "{logs}"
    );
}

#[test]
fn allowed_routes_kinds_restrict_route_kinds() {
    let mut c = ClusterStore::new();
    c.add(gateway(
        "infra",
        "gw",
        vec![
            allowing(
                http("grpc-only", Some("grpc.example.com")),
                Some("All"),
                None,
                &["GRPCRoute"],
            ),
            allowing(
                http("http-only", Some("http.example.com")),
                Some("All"),
                None,
                &["HTTPRoute"],
            ),
        ],
        &["1.2.3.4"],
    ));
    c.add(route(
        RouteKind::Http,
        "apps",
        "h",
        &["*.example.com"],
        &[gw_ref("infra", "gw")],
    ));
    c.add(route(
        RouteKind::Grpc,
        "apps",
        "g",
        &["*.example.com"],
        &[gw_ref("infra", "gw")],
    ));
    assert_eq!(
        names(&run_kind(RouteKind::Http, config(), &c)),
        vec!["http.example.com"]
    );
    assert_eq!(
        names(&run_kind(RouteKind::Grpc, config(), &c)),
        vec!["grpc.example.com"]
    );
}

// ---------------------------------------------------------------------------------------- hostname narrowing

fn narrowing(listener_host: Option<&str>, route_hosts: &[&str]) -> Vec<String> {
    let mut c = ClusterStore::new();
    c.add(gateway("infra", "gw", vec![http("l", listener_host)], &["1.2.3.4"]));
    c.add(httproute("apps", "web", route_hosts, &[gw_ref("infra", "gw")]));
    names(&run(config(), &c))
}

#[test]
fn narrowing_listener_without_hostname_keeps_route_names() {
    assert_eq!(
        narrowing(None, &["a.example.com", "*.example.org"]),
        vec!["*.example.org", "a.example.com"]
    );
}

#[test]
fn narrowing_wildcard_listener_keeps_names_below_it() {
    assert_eq!(
        narrowing(
            Some("*.example.internal"),
            &[
                "foo.example.internal",
                "a.b.example.internal",
                "example.internal",
                "x.other"
            ]
        ),
        vec!["a.b.example.internal", "foo.example.internal"]
    );
}

#[test]
fn narrowing_wildcard_route_takes_the_listener_name() {
    assert_eq!(
        narrowing(Some("foo.example.internal"), &["*.example.internal"]),
        vec!["foo.example.internal"]
    );
}

#[test]
fn narrowing_two_wildcards_give_the_narrower_wildcard() {
    assert_eq!(
        narrowing(Some("*.example.internal"), &["*.example.internal"]),
        vec!["*.example.internal"]
    );
    assert_eq!(
        narrowing(Some("*.example.internal"), &["*.foo.example.internal"]),
        vec!["*.foo.example.internal"]
    );
}

#[test]
fn narrowing_exact_names_must_be_equal() {
    assert_eq!(
        narrowing(Some("a.example.com"), &["a.example.com", "b.example.com"]),
        vec!["a.example.com"]
    );
}

#[test]
fn narrowing_applies_to_annotation_names() {
    let mut c = ClusterStore::new();
    c.add(gateway(
        "infra",
        "gw",
        vec![http("l", Some("*.example.com"))],
        &["1.2.3.4"],
    ));
    let mut r = httproute("apps", "web", &[], &[gw_ref("infra", "gw")]);
    r.meta = with_annotations(r.meta, &[(&format!("{GA}hostname"), "in.example.com,out.example.net")]);
    c.add(r);
    assert_eq!(names(&run(config(), &c)), vec!["in.example.com"]);
}

#[test]
fn invalid_listener_hostname_skips_that_listener_with_a_warning() {
    let mut c = ClusterStore::new();
    c.add(gateway(
        "infra",
        "gw",
        vec![
            http("broken", Some("bad_host.example.com")),
            http("ok", Some("*.example.com")),
        ],
        &["1.2.3.4"],
    ));
    c.add(httproute(
        "apps",
        "web",
        &["a.example.com", "bad-host.example.com"],
        &[gw_ref("infra", "gw")],
    ));
    let (eps, logs) = warnings(|| run(config(), &c));
    assert_eq!(names(&eps), vec!["a.example.com", "bad-host.example.com"]);
    assert!(
        logs.contains("Gateway infra/gw") && logs.contains("spec.listeners[broken].hostname"),
        "{logs}"
    );
}

#[test]
fn narrowing_combines_several_listeners_and_parents() {
    let mut c = ClusterStore::new();
    c.add(gateway(
        "infra",
        "a",
        vec![http("l", Some("*.a.example.com"))],
        &["1.1.1.1"],
    ));
    c.add(gateway(
        "infra",
        "b",
        vec![http("l", Some("*.b.example.com"))],
        &["2.2.2.2"],
    ));
    c.add(httproute(
        "apps",
        "web",
        &["x.a.example.com", "x.b.example.com"],
        &[gw_ref("infra", "a"), gw_ref("infra", "b")],
    ));
    assert_eq!(
        lines(&run(config(), &c)),
        vec!["x.a.example.com A 1.1.1.1", "x.b.example.com A 2.2.2.2"]
    );
}

// ------------------------------------------------------------------------------------------------- targets

#[test]
fn gateway_status_addresses_are_the_targets() {
    let mut c = ClusterStore::new();
    c.add(gateway("infra", "gw", vec![http("l", None)], &["1.2.3.4", "5.6.7.8"]));
    c.add(httproute("apps", "web", &["web.example.com"], &[gw_ref("infra", "gw")]));
    assert_eq!(lines(&run(config(), &c)), vec!["web.example.com A 1.2.3.4,5.6.7.8"]);
}

#[test]
fn targets_of_one_gateway_are_sorted_and_deduplicated() {
    let mut c = ClusterStore::new();
    c.add(gateway(
        "infra",
        "gw",
        vec![http("l", None)],
        &["5.6.7.8", "1.2.3.4", "5.6.7.8"],
    ));
    c.add(httproute("apps", "web", &["web.example.com"], &[gw_ref("infra", "gw")]));
    assert_eq!(
        run(config(), &c)[0].targets.0,
        vec!["1.2.3.4".to_string(), "5.6.7.8".to_string()]
    );
}

#[test]
fn gateway_target_annotation_overrides_status_addresses() {
    let mut c = ClusterStore::new();
    let mut gw = gateway("infra", "gw", vec![http("l", None)], &["1.2.3.4"]);
    gw.meta = with_annotations(gw.meta, &[(&format!("{ALPHA}target"), "lb.example.net.")]);
    c.add(gw);
    c.add(httproute("apps", "web", &["web.example.com"], &[gw_ref("infra", "gw")]));
    assert_eq!(lines(&run(config(), &c)), vec!["web.example.com CNAME lb.example.net"]);
}

#[test]
fn route_target_annotation_is_ignored() {
    let mut c = world();
    let mut r = httproute("apps", "web", &["web.example.com"], &[gw_ref("infra", "gw")]);
    r.meta = with_annotations(r.meta, &[(&format!("{GA}target"), "9.9.9.9")]);
    c.add(r);
    assert_eq!(lines(&run(config(), &c)), vec!["web.example.com A 1.2.3.4"]);
}

#[test]
fn targets_are_combined_and_deduplicated_across_parents() {
    let mut c = ClusterStore::new();
    let mut annotated = gateway("infra", "annotated", vec![http("l", None)], &["7.7.7.7"]);
    annotated.meta = with_annotations(annotated.meta, &[(&format!("{GA}target"), "4.3.2.1")]);
    c.add(annotated);
    c.add(gateway(
        "infra",
        "plain",
        vec![http("l", None)],
        &["2.3.4.5", "4.3.2.1"],
    ));
    c.add(httproute(
        "apps",
        "web",
        &["web.example.com"],
        &[gw_ref("infra", "annotated"), gw_ref("infra", "plain")],
    ));
    assert_eq!(lines(&run(config(), &c)), vec!["web.example.com A 2.3.4.5,4.3.2.1"]);
}

#[test]
fn record_type_follows_the_targets() {
    let mut c = ClusterStore::new();
    c.add(gateway(
        "infra",
        "gw",
        vec![http("l", None)],
        &["2001:db8::1", "1.2.3.4", "lb.example.net"],
    ));
    c.add(httproute("apps", "web", &["web.example.com"], &[gw_ref("infra", "gw")]));
    assert_eq!(
        lines(&run(config(), &c)),
        vec![
            "web.example.com A 1.2.3.4",
            "web.example.com AAAA 2001:db8::1",
            "web.example.com CNAME lb.example.net"
        ]
    );
}

#[test]
fn gateway_without_addresses_publishes_nothing() {
    let mut c = ClusterStore::new();
    c.add(gateway("infra", "gw", vec![http("l", None)], &[]));
    c.add(httproute("apps", "web", &["web.example.com"], &[gw_ref("infra", "gw")]));
    assert!(run(config(), &c).is_empty());
}

#[test]
fn invalid_address_is_skipped_with_a_warning_and_the_rest_published() {
    let mut c = ClusterStore::new();
    c.add(gateway(
        "infra",
        "gw",
        vec![http("l", None)],
        &["1.2.3.4", "not an address", "1.2.3.4:80"],
    ));
    let mut annotated = gateway("infra", "annotated", vec![http("l", None)], &[]);
    annotated.meta = with_annotations(annotated.meta, &[(&format!("{GA}target"), "5.6.7.8,bad..name")]);
    c.add(annotated);
    c.add(httproute(
        "apps",
        "web",
        &["web.example.com"],
        &[gw_ref("infra", "gw"), gw_ref("infra", "annotated")],
    ));
    let (eps, logs) = warnings(|| run(config(), &c));
    assert_eq!(lines(&eps), vec!["web.example.com A 1.2.3.4,5.6.7.8"]);
    assert!(
        logs.contains("Gateway infra/gw") && logs.contains("status.addresses[1].value"),
        "{logs}"
    );
    assert!(logs.contains("status.addresses[2].value"), "{logs}");
    assert!(logs.contains("not an address") && logs.contains("1.2.3.4:80"), "{logs}");
    assert!(
        logs.contains("Gateway infra/annotated") && logs.contains("target annotation"),
        "{logs}"
    );
}

#[test]
fn resource_label_is_kind_namespace_name() {
    let mut c = ClusterStore::new();
    c.add(gateway(
        "infra",
        "gw",
        vec![http("l", None), listener("tcp", "TCP", 5432, Some("db.example.com"))],
        &["1.2.3.4"],
    ));
    c.add(httproute(
        "apps",
        "echo",
        &["echo.example.com"],
        &[gw_ref("infra", "gw")],
    ));
    c.add(route(RouteKind::Tcp, "data", "db", &[], &[gw_ref("infra", "gw")]));
    let eps = run(config(), &c);
    assert_eq!(eps.len(), 1);
    assert_eq!(eps[0].resource(), Some("httproute/apps/echo"));
    let refs: Vec<String> = eps[0].ref_objects.iter().map(|r| r.to_string()).collect();
    assert_eq!(refs, vec!["gateway-httproute/apps/echo"]);
    let tcp = run_kind(RouteKind::Tcp, config(), &c);
    assert_eq!(tcp.len(), 1);
    assert_eq!(tcp[0].resource(), Some("tcproute/data/db"));
}

#[test]
fn ttl_set_identifier_and_provider_specific_come_from_the_route() {
    let mut c = ClusterStore::new();
    let mut gw = gateway("infra", "gw", vec![http("l", None)], &["1.2.3.4"]);
    // Gateway annotations other than target are not read.
    gw.meta = with_annotations(
        gw.meta,
        &[(&format!("{GA}ttl"), "999"), (&format!("{GA}set-identifier"), "gw")],
    );
    c.add(gw);
    let mut r = httproute("apps", "web", &["web.example.com"], &[gw_ref("infra", "gw")]);
    r.meta = with_annotations(
        r.meta,
        &[
            (&format!("{GA}ttl"), "10m"),
            (&format!("{GA}set-identifier"), "blue"),
            (&format!("{GA}aws-weight"), "10"),
            (&format!("{GA}alias"), "true"),
        ],
    );
    c.add(r);
    let eps = run(config(), &c);
    assert_eq!(eps.len(), 1);
    assert_eq!(eps[0].record_ttl, Ttl(600));
    assert_eq!(eps[0].set_identifier, "blue");
    assert_eq!(eps[0].provider_specific.get("aws/weight"), Some("10"));
    assert_eq!(eps[0].provider_specific.get("alias"), Some("true"));
}

#[test]
fn invalid_ttl_annotation_leaves_ttl_unset() {
    let mut c = world();
    let mut r = httproute("apps", "web", &["web.example.com"], &[gw_ref("infra", "gw")]);
    r.meta = with_annotations(r.meta, &[(&format!("{GA}ttl"), "forever")]);
    c.add(r);
    let (eps, logs) = warnings(|| run(config(), &c));
    assert_eq!(eps.len(), 1);
    assert_eq!(eps[0].record_ttl, Ttl(0));
    assert!(logs.contains("HTTPRoute apps/web"), "{logs}");
}

#[test]
fn endpoints_of_routes_with_the_same_name_are_merged() {
    let mut c = ClusterStore::new();
    c.add(gateway("infra", "a", vec![http("l", None)], &["1.1.1.1"]));
    c.add(gateway("infra", "b", vec![http("l", None)], &["2.2.2.2"]));
    c.add(httproute("apps", "one", &["web.example.com"], &[gw_ref("infra", "a")]));
    c.add(httproute("apps", "two", &["web.example.com"], &[gw_ref("infra", "b")]));
    let eps = run(config(), &c);
    assert_eq!(lines(&eps), vec!["web.example.com A 1.1.1.1,2.2.2.2"]);
    assert_eq!(eps[0].ref_objects.len(), 2);
}

#[test]
fn endpoint_record_types_are_a_aaaa_cname() {
    let mut c = ClusterStore::new();
    c.add(gateway("infra", "gw", vec![http("l", None)], &["lb.example.net"]));
    c.add(httproute("apps", "web", &["web.example.com"], &[gw_ref("infra", "gw")]));
    let eps = run(config(), &c);
    assert_eq!(eps[0].record_type, RecordType::Cname);
}

// ------------------------------------------------------------------------------------------- listener sets

fn listener_set_world(allowed_from: Option<&str>) -> ClusterStore {
    let mut c = ClusterStore::new();
    let mut gw = gateway(
        "default",
        "my-gateway",
        vec![http("own", Some("own.example.org"))],
        &["10.64.0.1", "10.64.0.2"],
    );
    gw.allowed_listeners = allowed_from.map(|f| AllowedListeners {
        namespaces_from: Some(f.into()),
        namespaces_selector: None,
    });
    c.add(gw);
    c.add(ListenerSet {
        meta: meta("default", "my-listenerset"),
        parent_ref: ParentReference {
            name: "my-gateway".into(),
            ..ParentReference::default()
        },
        listeners: vec![listener("app", "HTTP", 80, Some("*.example.com"))],
        accepted: true,
        accepted_listeners: vec!["app".into()],
    });
    c
}

fn ls_ref(ns: &str, name: &str) -> ParentReference {
    ParentReference {
        kind: Some("ListenerSet".into()),
        ..gw_ref(ns, name)
    }
}

fn with_listener_sets() -> GatewaySourceConfig {
    GatewaySourceConfig {
        listener_sets: true,
        ..config()
    }
}

#[test]
fn listener_set_parent_publishes_at_its_gateway_addresses() {
    let mut c = listener_set_world(Some("All"));
    c.add(httproute(
        "default",
        "app",
        &["app.example.com"],
        &[ls_ref("default", "my-listenerset")],
    ));
    assert_eq!(
        lines(&run(with_listener_sets(), &c)),
        vec!["app.example.com A 10.64.0.1,10.64.0.2"]
    );
}

#[test]
fn listener_set_parent_is_ignored_without_the_flag() {
    let mut c = listener_set_world(Some("All"));
    c.add(httproute(
        "default",
        "app",
        &["app.example.com"],
        &[ls_ref("default", "my-listenerset")],
    ));
    assert!(run(config(), &c).is_empty());
}

#[test]
fn listener_set_uses_only_its_own_listeners() {
    let mut c = listener_set_world(Some("All"));
    // own.example.org is served by a listener of the Gateway itself, not of the ListenerSet.
    c.add(httproute(
        "default",
        "app",
        &["own.example.org"],
        &[ls_ref("default", "my-listenerset")],
    ));
    assert!(run(with_listener_sets(), &c).is_empty());
}

#[test]
fn listener_set_needs_the_gateway_to_allow_it() {
    for from in [None, Some("None"), Some("Elsewhere")] {
        let mut c = listener_set_world(from);
        c.add(httproute(
            "default",
            "app",
            &["app.example.com"],
            &[ls_ref("default", "my-listenerset")],
        ));
        assert!(run(with_listener_sets(), &c).is_empty(), "{from:?}");
    }
    let mut c = listener_set_world(Some("Same"));
    c.add(httproute(
        "default",
        "app",
        &["app.example.com"],
        &[ls_ref("default", "my-listenerset")],
    ));
    assert_eq!(names(&run(with_listener_sets(), &c)), vec!["app.example.com"]);
}

#[test]
fn listener_set_allowed_by_selector_on_its_namespace() {
    let mut c = ClusterStore::new();
    let mut gw = gateway("infra", "gw", vec![], &["1.2.3.4"]);
    gw.allowed_listeners = Some(AllowedListeners {
        namespaces_from: Some("Selector".into()),
        namespaces_selector: Some(selector(&[("listeners", "ok")])),
    });
    c.add(gw);
    c.add(namespace("team-a", &[("listeners", "ok")]));
    c.add(namespace("team-b", &[]));
    for ns in ["team-a", "team-b"] {
        c.add(ListenerSet {
            meta: meta(ns, "ls"),
            parent_ref: ParentReference {
                name: "gw".into(),
                namespace: Some("infra".into()),
                ..ParentReference::default()
            },
            listeners: vec![allowing(
                http("l", Some(&format!("{ns}.example.com"))),
                Some("Same"),
                None,
                &[],
            )],
            accepted: true,
            accepted_listeners: vec!["l".into()],
        });
        c.add(httproute(
            ns,
            "web",
            &[&format!("{ns}.example.com")],
            &[ls_ref(ns, "ls")],
        ));
    }
    // allowedRoutes Same on a ListenerSet listener compares with the ListenerSet's namespace.
    assert_eq!(names(&run(with_listener_sets(), &c)), vec!["team-a.example.com"]);
}

#[test]
fn listener_set_must_be_accepted_and_so_must_its_listener() {
    let mut c = listener_set_world(Some("All"));
    c.add(ListenerSet {
        meta: meta("default", "not-accepted"),
        parent_ref: ParentReference {
            name: "my-gateway".into(),
            ..ParentReference::default()
        },
        listeners: vec![http("app", None)],
        accepted: false,
        accepted_listeners: vec!["app".into()],
    });
    c.add(ListenerSet {
        meta: meta("default", "listener-not-accepted"),
        parent_ref: ParentReference {
            name: "my-gateway".into(),
            ..ParentReference::default()
        },
        listeners: vec![http("app", None)],
        accepted: true,
        accepted_listeners: vec![],
    });
    c.add(httproute(
        "default",
        "a",
        &["a.example.org"],
        &[ls_ref("default", "not-accepted")],
    ));
    c.add(httproute(
        "default",
        "b",
        &["b.example.org"],
        &[ls_ref("default", "listener-not-accepted")],
    ));
    assert!(run(with_listener_sets(), &c).is_empty());
}

#[test]
fn listener_set_target_annotation_overrides_the_gateway() {
    let mut c = listener_set_world(Some("All"));
    let mut ls = ListenerSet {
        meta: meta("default", "annotated"),
        parent_ref: ParentReference {
            name: "my-gateway".into(),
            ..ParentReference::default()
        },
        listeners: vec![http("app", None)],
        accepted: true,
        accepted_listeners: vec!["app".into()],
    };
    ls.meta = with_annotations(ls.meta, &[(&format!("{GA}target"), "ls.example.net")]);
    c.add(ls);
    c.add(httproute(
        "default",
        "a",
        &["a.example.org"],
        &[ls_ref("default", "annotated")],
    ));
    assert_eq!(
        lines(&run(with_listener_sets(), &c)),
        vec!["a.example.org CNAME ls.example.net"]
    );
}

#[test]
fn listener_set_falls_back_to_the_gateway_target_annotation() {
    let mut c = ClusterStore::new();
    let mut gw = gateway("default", "gw", vec![], &["10.0.0.1"]);
    gw.allowed_listeners = Some(AllowedListeners {
        namespaces_from: Some("All".into()),
        namespaces_selector: None,
    });
    gw.meta = with_annotations(gw.meta, &[(&format!("{GA}target"), "gw.example.net")]);
    c.add(gw);
    c.add(ListenerSet {
        meta: meta("default", "ls"),
        parent_ref: ParentReference {
            name: "gw".into(),
            ..ParentReference::default()
        },
        listeners: vec![http("app", None)],
        accepted: true,
        accepted_listeners: vec!["app".into()],
    });
    c.add(httproute(
        "default",
        "a",
        &["a.example.org"],
        &[ls_ref("default", "ls")],
    ));
    assert_eq!(
        lines(&run(with_listener_sets(), &c)),
        vec!["a.example.org CNAME gw.example.net"]
    );
}

#[test]
fn listener_set_gateway_name_flag_compares_the_parent_gateway() {
    let mut c = listener_set_world(Some("All"));
    c.add(httproute(
        "default",
        "app",
        &["app.example.com"],
        &[ls_ref("default", "my-listenerset")],
    ));
    let other = GatewaySourceConfig {
        gateway_name: Some("other".into()),
        ..with_listener_sets()
    };
    assert!(run(other, &c).is_empty());
    let same = GatewaySourceConfig {
        gateway_name: Some("my-gateway".into()),
        ..with_listener_sets()
    };
    assert_eq!(names(&run(same, &c)), vec!["app.example.com"]);
}

#[test]
fn listener_set_with_foreign_controller_or_filtered_annotation_is_not_a_parent()
-> Result<(), extdns_source::SelectorError> {
    let mut c = listener_set_world(Some("All"));
    let mut ls = ListenerSet {
        meta: meta("default", "foreign"),
        parent_ref: ParentReference {
            name: "my-gateway".into(),
            ..ParentReference::default()
        },
        listeners: vec![http("app", None)],
        accepted: true,
        accepted_listeners: vec!["app".into()],
    };
    ls.meta = with_annotations(ls.meta, &[(&format!("{GA}controller"), "other")]);
    c.add(ls);
    c.add(httproute(
        "default",
        "a",
        &["a.example.org"],
        &[ls_ref("default", "foreign")],
    ));
    assert!(run(with_listener_sets(), &c).is_empty());

    // --annotation-filter applies to ListenerSets (and routes), not to Gateways.
    let mut c = listener_set_world(Some("All"));
    let mut r = httproute(
        "default",
        "app",
        &["app.example.com"],
        &[ls_ref("default", "my-listenerset")],
    );
    r.meta = with_annotations(r.meta, &[("dns", "yes")]);
    c.add(r);
    let cfg = GatewaySourceConfig {
        common: {
            let mut common = SourceConfig::default();
            common.annotation_filter = Selector::parse("dns=yes")?;
            common
        },
        ..with_listener_sets()
    };
    assert!(run(cfg, &c).is_empty());
    Ok(())
}

#[test]
fn listener_set_section_name_selects_its_listener() {
    let mut c = listener_set_world(Some("All"));
    c.add(ListenerSet {
        meta: meta("default", "two"),
        parent_ref: ParentReference {
            name: "my-gateway".into(),
            ..ParentReference::default()
        },
        listeners: vec![http("a", Some("a.example.org")), http("b", Some("b.example.org"))],
        accepted: true,
        accepted_listeners: vec!["a".into(), "b".into()],
    });
    let mut p = ls_ref("default", "two");
    p.section_name = Some("b".into());
    c.add(httproute("default", "r", &["*.example.org"], &[p]));
    assert_eq!(names(&run(with_listener_sets(), &c)), vec!["b.example.org"]);
}

// ------------------------------------------------------------------------------------------- fqdn template

fn templated(template: &str, combine: bool) -> GatewaySourceConfig {
    let t = match extdns_source::FqdnTemplate::parse(&[template.to_string()]) {
        Ok(Some(t)) => t,
        other => panic!("template {template:?}: {other:?}"),
    };
    GatewaySourceConfig {
        common: {
            let mut common = SourceConfig::default();
            common.fqdn_template = Some(Arc::new(t));
            common.combine_fqdn_annotation = combine;
            common
        },
        ..config()
    }
}

#[test]
fn fqdn_template_names_routes_without_spec_or_annotation_names() {
    let mut c = world();
    c.add(httproute("apps", "bare", &[], &[gw_ref("infra", "gw")]));
    c.add(httproute(
        "apps",
        "named",
        &["named.example.com"],
        &[gw_ref("infra", "gw")],
    ));
    let mut annotated = httproute("apps", "annotated", &[], &[gw_ref("infra", "gw")]);
    annotated.meta = with_annotations(annotated.meta, &[(&format!("{GA}hostname"), "annotated.example.com")]);
    c.add(annotated);
    let cfg = templated(
        "{{.Name}}.zero.internal, {{.Name}}.one.internal. , {{.Namespace}}.two.internal",
        false,
    );
    assert_eq!(
        names(&run(cfg, &c)),
        vec![
            "annotated.example.com",
            "apps.two.internal",
            "bare.one.internal",
            "bare.zero.internal",
            "named.example.com"
        ]
    );
}

#[test]
fn fqdn_template_with_combine_adds_to_the_route_names() {
    let mut c = world();
    let mut r = httproute("apps", "web", &["spec.example.com"], &[gw_ref("infra", "gw")]);
    r.meta = with_annotations(r.meta, &[(&format!("{GA}hostname"), "ann.example.com")]);
    c.add(r);
    assert_eq!(
        names(&run(templated("{{.Name}}.tpl.example.com", true), &c)),
        vec!["ann.example.com", "spec.example.com", "web.tpl.example.com"]
    );
}

#[test]
fn fqdn_template_names_are_narrowed_and_suppress_the_listener_fallback() {
    let mut c = ClusterStore::new();
    c.add(gateway(
        "infra",
        "gw",
        vec![http("l", Some("*.example.com"))],
        &["1.2.3.4"],
    ));
    c.add(httproute("apps", "in", &[], &[gw_ref("infra", "gw")]));
    c.add(httproute("other", "out", &[], &[gw_ref("infra", "gw")]));
    let cfg = templated(
        "{{.Name}}.{{if eq .Namespace \"apps\"}}example.com{{else}}example.net{{end}}",
        false,
    );
    // `out.example.net` is not under the listener's hostname, and `*.example.com` is not used instead.
    assert_eq!(names(&run(cfg, &c)), vec!["in.example.com"]);
}

#[test]
fn fqdn_template_sees_the_route_kind() {
    let mut c = ClusterStore::new();
    c.add(gateway(
        "infra",
        "gw",
        vec![listener("udp", "UDP", 53, None)],
        &["1.2.3.4"],
    ));
    c.add(route(RouteKind::Udp, "apps", "dns", &[], &[gw_ref("infra", "gw")]));
    let eps = run_kind(RouteKind::Udp, templated("{{.Name}}.{{.Kind}}.example.com", false), &c);
    assert_eq!(names(&eps), vec!["dns.udproute.example.com"]);
}

#[test]
fn fqdn_template_is_not_used_with_annotation_only() {
    let mut c = world();
    let mut r = httproute("apps", "web", &[], &[gw_ref("infra", "gw")]);
    r.meta = with_annotations(r.meta, &[(&format!("{GA}gateway-hostname-source"), "annotation-only")]);
    c.add(r);
    assert!(run(templated("{{.Name}}.tpl.example.com", true), &c).is_empty());
}

#[test]
fn fqdn_template_failure_skips_only_that_route() {
    let mut c = world();
    c.add(httproute("apps", "web", &[], &[gw_ref("infra", "gw")]));
    c.add(httproute(
        "apps",
        "shop",
        &["shop.example.com"],
        &[gw_ref("infra", "gw")],
    ));
    let cfg = templated("{{.Spec.NoSuchField}}.example.com", false);
    let eps = GatewayRouteSource::new(RouteKind::Http, cfg)
        .collect(&c)
        .expect("a failing template is not a sync error");
    assert_eq!(names(&eps), vec!["shop.example.com"]);
}

#[test]
fn of_two_routes_publishing_the_same_name_and_targets_the_one_with_a_ttl_comes_first() {
    // "wild" names `*.apps.example.org` itself; "wild-ttl" has a TTL and inherits the listener's hostname.
    // The deduplication keeps the first of the two, so the annotated route wins as external-dns's zone
    // ends up with (TTL 60, that route's resource label).
    let mut c = ClusterStore::new();
    c.add(gateway(
        "infra",
        "gw",
        vec![http("l", Some("*.apps.example.org"))],
        &["1.1.1.1"],
    ));
    c.add(httproute(
        "infra",
        "wild",
        &["*.apps.example.org"],
        &[gw_ref("infra", "gw")],
    ));
    let mut annotated = httproute("infra", "wild-ttl", &[], &[gw_ref("infra", "gw")]);
    annotated.meta = with_annotations(annotated.meta, &[(&format!("{GA}ttl"), "60")]);
    c.add(annotated);
    let eps = run(config(), &c);
    assert_eq!(
        lines(&eps),
        vec!["*.apps.example.org A 1.1.1.1", "*.apps.example.org A 1.1.1.1"]
    );
    assert_eq!(eps[0].record_ttl, Ttl(60));
    assert_eq!(eps[0].resource(), Some("httproute/infra/wild-ttl"));
    assert_eq!(eps[1].record_ttl, Ttl(0));
}

#[test]
fn endpoints_differing_only_in_ttl_keep_their_order_when_the_first_has_a_ttl() {
    let mut c = ClusterStore::new();
    c.add(gateway(
        "infra",
        "gw",
        vec![http("l", Some("*.apps.example.org"))],
        &["1.1.1.1"],
    ));
    let mut first = httproute("infra", "a", &["*.apps.example.org"], &[gw_ref("infra", "gw")]);
    first.meta = with_annotations(first.meta, &[(&format!("{GA}ttl"), "120")]);
    c.add(first);
    let mut second = httproute("infra", "b", &[], &[gw_ref("infra", "gw")]);
    second.meta = with_annotations(second.meta, &[(&format!("{GA}ttl"), "60")]);
    c.add(second);
    let eps = run(config(), &c);
    assert_eq!(eps.len(), 2);
    assert_eq!(eps[0].record_ttl, Ttl(120));
    assert_eq!(eps[0].resource(), Some("httproute/infra/a"));
}

#[test]
fn routes_that_cannot_be_evaluated_are_reported_by_their_resource_key() {
    let mut c = world();
    c.add(httproute("apps", "web", &[], &[gw_ref("infra", "gw")]));
    c.add(httproute(
        "apps",
        "shop",
        &["shop.example.com"],
        &[gw_ref("infra", "gw")],
    ));
    c.add_undecodable(ResourceKind::Route(RouteKind::Http), "apps", "broken");
    let cfg = templated("{{.Spec.NoSuchField}}.example.com", false);
    let out = GatewayRouteSource::new(RouteKind::Http, cfg)
        .collect_output(&c)
        .expect("a failing template is not a sync error");
    assert_eq!(names(&out.endpoints), vec!["shop.example.com"]);
    let failed: Vec<&str> = out.failed.iter().map(String::as_str).collect();
    assert_eq!(failed, vec!["httproute/apps/broken", "httproute/apps/web"]);
    // The resource key is the one the route's records carry.
    assert_eq!(out.endpoints[0].resource(), Some("httproute/apps/shop"));
}

#[test]
fn a_route_with_a_malformed_hostname_is_reported_failed_and_its_valid_names_still_published() {
    let mut c = world();
    c.add(httproute(
        "apps",
        "web",
        &["web.example.com", "bad_name..example.com"],
        &[gw_ref("infra", "gw")],
    ));
    let out = GatewayRouteSource::new(RouteKind::Http, GatewaySourceConfig::default())
        .collect_output(&c)
        .expect("a malformed hostname is not a sync error");
    assert_eq!(names(&out.endpoints), vec!["web.example.com"]);
    let failed: Vec<&str> = out.failed.iter().map(String::as_str).collect();
    assert_eq!(failed, vec!["httproute/apps/web"]);
}
