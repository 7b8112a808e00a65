//! The FQDN template, and what cannot be evaluated.

use super::*;

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
