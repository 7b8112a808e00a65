//! The source itself: its name, the kinds it watches, which routes it considers (filters).

use super::*;

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
