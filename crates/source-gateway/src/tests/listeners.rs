//! Which listeners of a parent a route attaches to (section name, port, protocol, allowed routes), and its names narrowed by their hostnames.

use super::*;

/// The names published for `r` on Gateway `infra/gw` with listeners `foo` (port 80, for
/// `foo.example.internal`) and `bar` (port 8080, for `bar.example.internal`).
fn on_two_listeners(r: Route) -> Vec<String> {
    let mut c = world_with(vec![
        http("foo", Some("foo.example.internal")),
        listener("bar", "HTTP", 8080, Some("bar.example.internal")),
    ]);
    c.add(r);
    names(&run(config(), &c))
}

#[test]
fn section_name_selects_one_listener() {
    let mut p = gw_ref("infra", "gw");
    p.section_name = Some("foo".into());
    assert_eq!(
        on_two_listeners(web_on("*.example.internal", p)),
        vec!["foo.example.internal"]
    );
}

#[test]
fn section_name_is_read_from_the_status_parent() {
    let mut r = web_on("*.example.internal", gw_ref("infra", "gw"));
    r.parents[0].parent_ref.section_name = Some("bar".into());
    assert_eq!(on_two_listeners(r), vec!["bar.example.internal"]);
}

#[test]
fn unknown_section_name_matches_no_listener() {
    let mut p = gw_ref("infra", "gw");
    p.section_name = Some("nope".into());
    assert!(on_two_listeners(web_on("*.example.internal", p)).is_empty());
}

#[test]
fn without_section_name_every_listener_is_considered() {
    assert_eq!(
        on_two_listeners(web_on("*.example.internal", gw_ref("infra", "gw"))),
        vec!["bar.example.internal", "foo.example.internal"]
    );
}

#[test]
fn port_selects_listeners() {
    let mut p = gw_ref("infra", "gw");
    p.port = Some(8080);
    assert_eq!(
        on_two_listeners(web_on("*.example.internal", p)),
        vec!["bar.example.internal"]
    );
    let mut p = gw_ref("infra", "gw");
    p.port = Some(9999);
    assert!(on_two_listeners(web_on("*.example.internal", p)).is_empty());
}

#[test]
fn port_applies_to_every_listener_with_that_port() {
    let mut c = world_with(vec![
        http("foo", Some("foo.example.internal")),
        http("bar", Some("bar.example.internal")),
    ]);
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
    let mut c = world_with(vec![listener("tcp", "TCP", 80, None)]);
    c.add(attached("apps", "web", &["web.example.com"]));
    assert!(run(config(), &c).is_empty());
}

#[test]
fn protocol_https_listener_serves_http_and_grpc_routes() {
    let mut c = world_with(vec![listener("https", "HTTPS", 443, None)]);
    c.add(attached_kind(RouteKind::Http, "apps", "h", &["h.example.com"]));
    c.add(attached_kind(RouteKind::Grpc, "apps", "g", &["g.example.com"]));
    assert_eq!(names(&run_kind(RouteKind::Http, config(), &c)), vec!["h.example.com"]);
    assert_eq!(names(&run_kind(RouteKind::Grpc, config(), &c)), vec!["g.example.com"]);
}

#[test]
fn protocol_tcp_route_on_tls_listener_is_published() {
    let mut c = world_with(vec![listener("tls", "TLS", 443, Some("db.example.com"))]);
    c.add(attached_kind(RouteKind::Tcp, "apps", "db", &[]));
    assert_eq!(
        lines(&run_kind(RouteKind::Tcp, config(), &c)),
        vec!["db.example.com A 1.2.3.4"]
    );
}

#[test]
fn protocol_tls_route_not_on_tcp_listener() {
    let mut c = world_with(vec![listener("tcp", "TCP", 443, None)]);
    c.add(attached_kind(RouteKind::Tls, "apps", "t", &["t.example.com"]));
    assert!(run_kind(RouteKind::Tls, config(), &c).is_empty());
}

#[test]
fn allowed_routes_default_same_namespace_only() {
    let mut c = ClusterStore::new();
    let mut l = http("http", None);
    l.allowed_routes = None;
    c.add(infra_gw(vec![l]));
    c.add(attached("infra", "same", &["same.example.com"]));
    c.add(attached("apps", "other", &["other.example.com"]));
    assert_eq!(names(&run(config(), &c)), vec!["same.example.com"]);
}

#[test]
fn allowed_routes_from_same_uses_the_gateway_namespace() {
    let mut c = world_with(vec![allowing(http("http", None), Some("Same"), None, &[])]);
    c.add(attached("infra", "same", &["same.example.com"]));
    c.add(attached("apps", "other", &["other.example.com"]));
    assert_eq!(names(&run(config(), &c)), vec!["same.example.com"]);
}

#[test]
fn allowed_routes_from_all_admits_any_namespace() {
    let mut c = world();
    c.add(attached("anywhere", "web", &["web.example.com"]));
    assert_eq!(names(&run(config(), &c)), vec!["web.example.com"]);
}

#[test]
fn allowed_routes_selector_uses_the_route_namespace_labels() {
    let mut c = world_with(vec![allowing(
        http("http", None),
        Some("Selector"),
        Some(selector(&[("team", "foo")])),
        &[],
    )]);
    c.add(namespace("foo-apps", &[("team", "foo")]));
    c.add(namespace("bar-apps", &[("team", "bar")]));
    c.add(attached("foo-apps", "a", &["a.example.com"]));
    c.add(attached("bar-apps", "b", &["b.example.com"]));
    c.add(attached("ghost", "c", &["c.example.com"]));
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
    c.add(infra_gw(vec![
        allowing(http("bad", Some("bad.example.com")), Some("Selector"), Some(bad), &[]),
        http("good", Some("good.example.com")),
    ]));
    c.add(namespace("apps", &[("team", "foo")]));
    c.add(attached("apps", "web", &["*.example.com"]));
    let (eps, logs) = run_warned(&c);
    assert_eq!(names(&eps), vec!["good.example.com"]);
    assert_mentions(
        &logs,
        &[
            "Gateway infra/gw",
            "spec.listeners[bad].allowedRoutes.namespaces.selector",
        ],
    );
}

#[test]
fn allowed_routes_kinds_restrict_route_kinds() {
    let mut c = world_with(vec![
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
    ]);
    c.add(attached_kind(RouteKind::Http, "apps", "h", &["*.example.com"]));
    c.add(attached_kind(RouteKind::Grpc, "apps", "g", &["*.example.com"]));
    assert_eq!(
        names(&run_kind(RouteKind::Http, config(), &c)),
        vec!["http.example.com"]
    );
    assert_eq!(
        names(&run_kind(RouteKind::Grpc, config(), &c)),
        vec!["grpc.example.com"]
    );
}

fn narrowing(listener_host: Option<&str>, route_hosts: &[&str]) -> Vec<String> {
    let mut c = world_with(vec![http("l", listener_host)]);
    c.add(attached("apps", "web", route_hosts));
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
    let mut c = world_with(vec![http("l", Some("*.example.com"))]);
    c.add(named_by_annotation(
        "apps",
        "web",
        &["spec.example.com"],
        "in.example.com,out.example.net",
    ));
    // (A spec hostname, so the listener's own hostname is not published beside them.)
    assert_eq!(names(&run(config(), &c)), vec!["in.example.com", "spec.example.com"]);
}

#[test]
fn invalid_listener_hostname_skips_that_listener_with_a_warning() {
    let mut c = world_with(vec![
        http("broken", Some("bad_host.example.com")),
        http("ok", Some("*.example.com")),
    ]);
    c.add(attached("apps", "web", &["a.example.com", "bad-host.example.com"]));
    let (eps, logs) = run_warned(&c);
    assert_eq!(names(&eps), vec!["a.example.com", "bad-host.example.com"]);
    assert_mentions(&logs, &["Gateway infra/gw", "spec.listeners[broken].hostname"]);
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
