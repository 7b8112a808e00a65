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
    c.add(attached("apps", "web", &["web.example.com"]));
    assert_eq!(lines(&run(config(), &c)), vec!["web.example.com A 1.2.3.4"]);
}

#[test]
fn each_source_reads_only_its_own_route_kind() {
    let mut c = world_with(vec![
        http("http", None),
        listener("tls", "TLS", 443, None),
        listener("tcp", "TCP", 5432, None),
        listener("udp", "UDP", 53, None),
    ]);
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
fn label_and_annotation_filters_select_routes() -> Result<(), extdns_source::SelectorError> {
    let mut c = world();
    c.add(attached("apps", "public", &["public.example.com"]).labelled(&[("dns", "public")]));
    c.add(attached("apps", "yes", &["yes.example.com"]).annotated(&[("team", "a")]));
    c.add(attached("apps", "plain", &["plain.example.com"]));
    let by_label = label_filtered(config(), "dns=public")?;
    assert_eq!(names(&run(by_label, &c)), vec!["public.example.com"]);
    let by_annotation = annotation_filtered(config(), "team=a")?;
    assert_eq!(names(&run(by_annotation, &c)), vec!["yes.example.com"]);
    Ok(())
}

#[test]
fn label_filter_does_not_apply_to_gateways() -> Result<(), extdns_source::SelectorError> {
    let web = attached("apps", "web", &["web.example.com"]).labelled(&[("dns", "public")]);
    let c = {
        let mut c = world();
        c.add(web);
        c
    };
    // The Gateway has no labels at all and is still used.
    assert_eq!(
        names(&run(label_filtered(config(), "dns=public")?, &c)),
        vec!["web.example.com"]
    );
    Ok(())
}

#[test]
fn namespace_flag_limits_routes_but_not_gateways() {
    let mut c = world();
    c.add(attached("apps", "in", &["in.example.com"]));
    c.add(attached("other", "out", &["out.example.com"]));
    let cfg = sharing(config(), |c| c.namespace = Some("apps".into()));
    // The Gateway lives in `infra`, outside --namespace, and still serves the route.
    assert_eq!(names(&run(cfg, &c)), vec!["in.example.com"]);
}

#[test]
fn controller_annotation_excludes_routes_of_other_controllers() {
    let mut c = world();
    c.add(attached("apps", "foreign", &["foreign.example.com"]).with_annotation(ALPHA, "controller", "someone-else"));
    c.add(attached("apps", "ours", &["ours.example.com"]).with_annotation(GA, "controller", "dns-controller"));
    assert_eq!(names(&run(config(), &c)), vec!["ours.example.com"]);
}

#[test]
fn spec_hostnames_of_http_grpc_and_tls_routes_are_published() {
    for (kind, protocol) in [
        (RouteKind::Http, "HTTP"),
        (RouteKind::Grpc, "HTTPS"),
        (RouteKind::Tls, "TLS"),
    ] {
        let mut c = world_with(vec![listener("l", protocol, 443, None)]);
        c.add(attached_kind(kind, "apps", "r", &["a.example.com", "b.example.com"]));
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
        let mut c = world_with(vec![listener("l", protocol, 53, Some("l.example.com"))]);
        // Even if a view carried hostnames for these kinds, they are not read: the listener hostname is used.
        c.add(attached_kind(kind, "apps", "r", &["spec.example.com"]));
        assert_eq!(names(&run_kind(kind, config(), &c)), vec!["l.example.com"], "{kind:?}");
    }
}

#[test]
fn hostname_annotation_adds_names_under_either_prefix() {
    let mut c = world();
    c.add(attached("apps", "web", &["spec.example.com"]).with_annotation(
        ALPHA,
        "hostname",
        "a.example.com, b.example.com",
    ));
    c.add(named_by_annotation("apps", "web2", &[], "c.example.com"));
    assert_eq!(
        names(&run(config(), &c)),
        vec!["a.example.com", "b.example.com", "c.example.com", "spec.example.com"]
    );
}

#[test]
fn hostname_annotation_under_ga_prefix_wins_over_alpha() {
    let mut c = world();
    c.add(attached("apps", "web", &[]).annotated(&[
        (&format!("{ALPHA}hostname"), "alpha.example.com"),
        (&format!("{GA}hostname"), "ga.example.com"),
    ]));
    assert_eq!(names(&run(config(), &c)), vec!["ga.example.com"]);
}

#[test]
fn annotation_prefix_flag_reads_only_that_prefix() -> Result<(), extdns_source::AnnotationError> {
    let mut c = world();
    c.add(attached("apps", "web", &[]).annotated(&[
        (&format!("{ALPHA}hostname"), "alpha.example.com"),
        (&format!("{GA}hostname"), "ga.example.com"),
    ]));
    let annotations = Annotations::with_prefix(ALPHA)?;
    let cfg = sharing(config(), |c| c.annotations = annotations);
    assert_eq!(names(&run(cfg, &c)), vec!["alpha.example.com"]);
    Ok(())
}

#[test]
fn ignore_hostname_annotation_drops_annotation_names() {
    let c = world_with_web_named_twice();
    let cfg = sharing(config(), |c| c.ignore_hostname_annotation = true);
    assert_eq!(names(&run(cfg, &c)), vec!["spec.example.com"]);
}

#[test]
fn hostnames_are_lower_cased_and_deduplicated() {
    let mut c = world();
    c.add(named_by_annotation(
        "apps",
        "web",
        &["Web.Example.com"],
        "web.example.com.,WEB.example.com",
    ));
    assert_eq!(lines(&run(config(), &c)), vec!["web.example.com A 1.2.3.4"]);
}

#[test]
fn listener_hostname_used_when_nothing_else_gave_a_name() {
    let mut c = world_with(vec![
        http("a", Some("a.example.com")),
        http("wild", Some("*.example.org")),
        http("any", None),
    ]);
    c.add(attached("apps", "web", &[]));
    // A listener without hostname gives nothing; a wildcard listener gives a wildcard record.
    assert_eq!(names(&run(config(), &c)), vec!["*.example.org", "a.example.com"]);
}

/// As external-dns (v0.22 and v0.23) resolves route hostnames: a route without spec hostnames gets its
/// listeners' hostnames besides its annotation's names (the e2e differential checks it against v0.23.0).
#[test]
fn listener_hostname_used_beside_the_annotation_when_the_route_has_no_spec_hostname() {
    let mut c = world_with(vec![
        http("a", Some("a.example.com")),
        http("wild", Some("*.example.org")),
    ]);
    c.add(named_by_annotation(
        "apps",
        "web",
        &[],
        "other.example.net, x.example.org",
    ));
    // `other.example.net` fits no listener; `x.example.org` fits the wildcard one.
    assert_eq!(
        names(&run(config(), &c)),
        vec!["*.example.org", "a.example.com", "x.example.org"]
    );
    // With a spec hostname, the listeners' hostnames are not used.
    let mut c = world_with(vec![http("a", Some("a.example.com"))]);
    c.add(named_by_annotation(
        "apps",
        "web",
        &["a.example.com"],
        "other.example.net",
    ));
    assert_eq!(names(&run(config(), &c)), vec!["a.example.com"]);
}

#[test]
fn listener_hostname_fallback_ignores_empty_annotation_items() {
    let mut c = world_with(vec![http("a", Some("a.example.com"))]);
    c.add(named_by_annotation("apps", "web", &[], " , "));
    assert_eq!(names(&run(config(), &c)), vec!["a.example.com"]);
}

/// The route `apps/web` named `spec` in its spec and `annotation` by the hostname annotation, which of them
/// count set by its `gateway-hostname-source` annotation `source`.
fn sourced(spec: &[&str], annotation: &str, source: &str) -> Route {
    named_by_annotation("apps", "web", spec, annotation).with_annotation(GA, "gateway-hostname-source", source)
}

#[test]
fn gateway_hostname_source_annotation_only_uses_only_the_annotation() {
    let mut c = world_with(vec![http("l", None)]);
    c.add(sourced(&["spec.example.com"], "ann.example.com", "Annotation-Only"));
    assert_eq!(names(&run(config(), &c)), vec!["ann.example.com"]);
}

#[test]
fn gateway_hostname_source_annotation_only_with_ignore_flag_publishes_nothing() {
    let mut c = world_with(vec![http("l", Some("l.example.com"))]);
    c.add(sourced(&["l.example.com"], "l.example.com", "annotation-only"));
    let cfg = sharing(config(), |c| c.ignore_hostname_annotation = true);
    assert!(run(cfg, &c).is_empty());
}

#[test]
fn gateway_hostname_source_defined_hosts_only_ignores_annotation_and_listener_names() {
    let mut c = world_with(vec![http("l", Some("*.example.com"))]);
    c.add(sourced(&["spec.example.com"], "ann.example.com", "defined-hosts-only"));
    c.add(attached("apps", "bare", &[]).with_annotation(GA, "gateway-hostname-source", "defined-hosts-only"));
    assert_eq!(names(&run(config(), &c)), vec!["spec.example.com"]);
}

#[test]
fn gateway_hostname_source_unknown_value_warns_and_uses_every_source() {
    let mut c = world();
    c.add(sourced(&["spec.example.com"], "ann.example.com", "both-please"));
    let (eps, logs) = run_warned(&c);
    assert_eq!(names(&eps), vec!["ann.example.com", "spec.example.com"]);
    assert_mentions(&logs, &["HTTPRoute apps/web", "both-please"]);
}

#[test]
fn invalid_route_hostname_is_skipped_with_a_warning_and_the_rest_published() {
    let mut c = world();
    c.add(named_by_annotation(
        "apps",
        "web",
        &["bad_name.example.com", "good.example.com", "10.0.0.1"],
        "-bad.example.com,ann.example.com",
    ));
    let (eps, logs) = run_warned(&c);
    assert_eq!(names(&eps), vec!["ann.example.com", "good.example.com"]);
    // Not evaluated whole: its records are held, and its status says which name and why.
    let out = collect(&GatewayRouteSource::new(RouteKind::Http, config()), &c).expect("evaluated");
    let web = ObjectKey::new(ResourceKind::Route(RouteKind::Http), "apps", "web");
    let why = out.failed.why(&web).expect("the route has a reason");
    assert!(why.starts_with("spec.hostnames \"bad_name.example.com\": it "), "{why}");
    assert_mentions(
        &logs,
        &[
            "HTTPRoute apps/web",
            "spec.hostnames",
            "bad_name.example.com",
            "hostname annotation",
            "-bad.example.com",
            "10.0.0.1",
        ],
    );
}

#[test]
fn invalid_only_hostname_does_not_fall_back_to_listener_hostname() {
    let mut c = world_with(vec![http("l", Some("*.example.com"))]);
    c.add(attached("apps", "web", &["bad_name.example.com"]));
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
    c.add(attached("apps", "bare", &[]));
    c.add(attached("apps", "named", &["named.example.com"]));
    c.add(named_by_annotation("apps", "annotated", &[], "annotated.example.com"));
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
    let c = world_with_web_named_twice();
    assert_eq!(
        names(&run(templated("{{.Name}}.tpl.example.com", true), &c)),
        vec!["ann.example.com", "spec.example.com", "web.tpl.example.com"]
    );
}

#[test]
fn fqdn_template_names_are_narrowed_and_join_the_listener_fallback() {
    let mut c = world_with(vec![http("l", Some("*.example.com"))]);
    c.add(attached("apps", "in", &[]));
    c.add(attached("other", "out", &[]));
    let cfg = templated(
        "{{.Name}}.{{if eq .Namespace \"apps\"}}example.com{{else}}example.net{{end}}",
        false,
    );
    // `out.example.net` is not under the listener's hostname; both routes have no spec hostname, so the
    // listener's `*.example.com` is published for them as well (external-dns v0.23's order: spec,
    // annotation, template, listener fallback).
    assert_eq!(names(&run(cfg, &c)), vec!["*.example.com", "in.example.com"]);
}

#[test]
fn fqdn_template_sees_the_route_kind() {
    let mut c = world_with(vec![listener("udp", "UDP", 53, None)]);
    c.add(attached_kind(RouteKind::Udp, "apps", "dns", &[]));
    let eps = run_kind(RouteKind::Udp, templated("{{.Name}}.{{.Kind}}.example.com", false), &c);
    assert_eq!(names(&eps), vec!["dns.udproute.example.com"]);
}

#[test]
fn fqdn_template_is_not_used_with_annotation_only() {
    let mut c = world();
    c.add(attached("apps", "web", &[]).with_annotation(GA, "gateway-hostname-source", "annotation-only"));
    assert!(run(templated("{{.Name}}.tpl.example.com", true), &c).is_empty());
}

#[test]
fn fqdn_template_failure_skips_only_that_route() {
    let mut c = world();
    c.add(attached("apps", "web", &[]));
    c.add(attached("apps", "shop", &["shop.example.com"]));
    let cfg = templated("{{.Spec.NoSuchField}}.example.com", false);
    let out =
        collect(&GatewayRouteSource::new(RouteKind::Http, cfg), &c).expect("a failing template is not a sync error");
    assert_eq!(names(&out.endpoints), vec!["shop.example.com"]);
    // Its status and event say why.
    let web = ObjectKey::new(ResourceKind::Route(RouteKind::Http), "apps", "web");
    let why = out.failed.why(&web).expect("the failing route has a reason");
    assert!(why.contains("NoSuchField"), "{why}");
    let shop = ObjectKey::new(ResourceKind::Route(RouteKind::Http), "apps", "shop");
    assert!(out.failed.why(&shop).is_none());
}

/// Gateway `infra/gw` at 1.1.1.1 with one listener for `*.apps.example.org`.
fn apps_wildcard_world() -> ClusterStore {
    let mut c = ClusterStore::new();
    c.add(gateway(
        "infra",
        "gw",
        vec![http("l", Some("*.apps.example.org"))],
        &["1.1.1.1"],
    ));
    c
}

#[test]
fn of_two_routes_publishing_the_same_name_and_targets_the_one_with_a_ttl_comes_first() {
    // "wild" names `*.apps.example.org` itself; "wild-ttl" has a TTL and inherits the listener's hostname.
    // The deduplication keeps the first of the two, so the annotated route wins as external-dns's zone
    // ends up with (TTL 60, that route's resource label).
    let mut c = apps_wildcard_world();
    c.add(attached("infra", "wild", &["*.apps.example.org"]));
    c.add(attached("infra", "wild-ttl", &[]).with_annotation(GA, "ttl", "60"));
    let eps = run(config(), &c);
    assert_eq!(
        lines(&eps),
        vec!["*.apps.example.org A 1.1.1.1", "*.apps.example.org A 1.1.1.1"]
    );
    assert_eq!(eps[0].record_ttl, Ttl(60));
    assert_eq!(eps[0].resource().as_deref(), Some("httproute/infra/wild-ttl"));
    assert_eq!(eps[1].record_ttl, Ttl(0));
}

#[test]
fn endpoints_differing_only_in_ttl_keep_their_order_when_the_first_has_a_ttl() {
    let mut c = apps_wildcard_world();
    c.add(attached("infra", "a", &["*.apps.example.org"]).with_annotation(GA, "ttl", "120"));
    c.add(attached("infra", "b", &[]).with_annotation(GA, "ttl", "60"));
    let eps = run(config(), &c);
    assert_eq!(eps.len(), 2);
    assert_eq!(eps[0].record_ttl, Ttl(120));
    assert_eq!(eps[0].resource().as_deref(), Some("httproute/infra/a"));
}

/// The `resource` labels of the routes that could not be evaluated.
fn failed_labels(out: &SourceOutput) -> Vec<String> {
    out.failed.iter().map(|(k, _)| k.resource_label()).collect()
}

#[test]
fn routes_that_cannot_be_evaluated_are_reported_by_their_resource_key() {
    let mut c = world();
    c.add(attached("apps", "web", &[]));
    c.add(attached("apps", "shop", &["shop.example.com"]));
    c.add_undecodable(ResourceKind::Route(RouteKind::Http), "apps", "broken");
    let cfg = templated("{{.Spec.NoSuchField}}.example.com", false);
    let out =
        collect(&GatewayRouteSource::new(RouteKind::Http, cfg), &c).expect("a failing template is not a sync error");
    assert_eq!(names(&out.endpoints), vec!["shop.example.com"]);
    assert_eq!(failed_labels(&out), vec!["httproute/apps/broken", "httproute/apps/web"]);
    // The resource key is the one the route's records carry.
    assert_eq!(out.endpoints[0].resource().as_deref(), Some("httproute/apps/shop"));
}

#[test]
fn a_route_with_a_malformed_hostname_is_reported_failed_and_its_valid_names_still_published() {
    let mut c = world();
    c.add(attached("apps", "web", &["web.example.com", "bad_name..example.com"]));
    let out = collect(
        &GatewayRouteSource::new(RouteKind::Http, GatewaySourceConfig::default()),
        &c,
    )
    .expect("a malformed hostname is not a sync error");
    assert_eq!(names(&out.endpoints), vec!["web.example.com"]);
    assert_eq!(failed_labels(&out), vec!["httproute/apps/web"]);
}

/// external-dns v0.23's order of a route's names (spec, annotation, template, listener fallback): an
/// annotation name keeps the template out, an empty annotation does not, and `defined-hosts-only` takes the
/// template when the spec names nothing.
#[test]
fn gateway_route_hostnames_v023_annotation_before_template_and_empty_annotation_skipped() {
    let mut c = world();
    c.add(named_by_annotation("apps", "annotated", &[], "service.example.com"));
    c.add(named_by_annotation("apps", "empty", &[], ""));
    c.add(attached("apps", "defined", &[]).with_annotation(GA, "gateway-hostname-source", "defined-hosts-only"));
    assert_eq!(
        names(&run(templated("{{.Name}}.template.internal", false), &c)),
        vec![
            "defined.template.internal",
            "empty.template.internal",
            "service.example.com"
        ]
    );
}

/// The usual world with the route `apps/web`, named `spec.example.com` in its spec and `ann.example.com` by
/// annotation.
fn world_with_web_named_twice() -> ClusterStore {
    let mut c = world();
    c.add(named_by_annotation(
        "apps",
        "web",
        &["spec.example.com"],
        "ann.example.com",
    ));
    c
}
