//! Which routes a source reads and the names each asks for: filters, spec hostnames, annotations, the listener fallback, the FQDN template, and what cannot be evaluated.

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
    let label_filter = Selector::parse("dns=public")?;
    let cfg = sharing(config(), |c| c.label_filter = label_filter);
    assert_eq!(names(&run(cfg, &c)), vec!["public.example.com"]);
    Ok(())
}

#[test]
fn label_filter_does_not_apply_to_gateways() -> Result<(), extdns_source::SelectorError> {
    let mut c = world();
    let mut r = httproute("apps", "web", &["web.example.com"], &[gw_ref("infra", "gw")]);
    r.meta = with_labels(r.meta, &[("dns", "public")]);
    c.add(r);
    let label_filter = Selector::parse("dns=public")?;
    let cfg = sharing(config(), |c| c.label_filter = label_filter);
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
    let annotation_filter = Selector::parse("team=a")?;
    let cfg = sharing(config(), |c| c.annotation_filter = annotation_filter);
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
    let cfg = sharing(config(), |c| c.namespace = Some("apps".into()));
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
    let annotations = Annotations::with_prefix(ALPHA)?;
    let cfg = sharing(config(), |c| c.annotations = annotations);
    assert_eq!(names(&run(cfg, &c)), vec!["alpha.example.com"]);
    Ok(())
}

#[test]
fn ignore_hostname_annotation_drops_annotation_names() {
    let mut c = world();
    let mut r = httproute("apps", "web", &["spec.example.com"], &[gw_ref("infra", "gw")]);
    r.meta = with_annotations(r.meta, &[(&format!("{GA}hostname"), "ann.example.com")]);
    c.add(r);
    let cfg = sharing(config(), |c| c.ignore_hostname_annotation = true);
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
    let cfg = sharing(config(), |c| c.ignore_hostname_annotation = true);
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

fn templated(template: &str, combine: bool) -> GatewaySourceConfig {
    let t = match extdns_source::FqdnTemplate::parse(&[template.to_string()]) {
        Ok(Some(t)) => t,
        other => panic!("template {template:?}: {other:?}"),
    };
    sharing(config(), |c| {
        c.fqdn_template = Some(Arc::new(t));
        c.combine_fqdn_annotation = combine;
    })
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
    let out =
        collect(&GatewayRouteSource::new(RouteKind::Http, cfg), &c).expect("a failing template is not a sync error");
    assert_eq!(names(&out.endpoints), vec!["shop.example.com"]);
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
    let out =
        collect(&GatewayRouteSource::new(RouteKind::Http, cfg), &c).expect("a failing template is not a sync error");
    assert_eq!(names(&out.endpoints), vec!["shop.example.com"]);
    let failed: Vec<String> = out
        .failed
        .iter()
        .map(|(k, _)| extdns_source::resource_label(k))
        .collect();
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
    let out = collect(
        &GatewayRouteSource::new(RouteKind::Http, GatewaySourceConfig::default()),
        &c,
    )
    .expect("a malformed hostname is not a sync error");
    assert_eq!(names(&out.endpoints), vec!["web.example.com"]);
    let failed: Vec<String> = out
        .failed
        .iter()
        .map(|(k, _)| extdns_source::resource_label(k))
        .collect();
    assert_eq!(failed, vec!["httproute/apps/web"]);
}
