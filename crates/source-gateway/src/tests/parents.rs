//! Which parents a route publishes through: Gateways (references, status, the gateway flags) and ListenerSets (`--gateway-listener-sets`).

use super::*;

/// `cfg` with `--gateway-name`.
fn named_gateway(name: &str, cfg: GatewaySourceConfig) -> GatewaySourceConfig {
    GatewaySourceConfig {
        gateway_name: Some(name.into()),
        ..cfg
    }
}

#[test]
fn parent_with_another_group_or_kind_is_ignored() {
    let mut other_group = gw_ref("infra", "gw");
    other_group.group = Some("networking.k8s.io".into());
    let mut other_kind = gw_ref("infra", "gw");
    other_kind.kind = Some("Service".into());
    for p in [other_group, other_kind] {
        assert!(published([web_on("web.example.com", p.clone())]).is_empty(), "{p:?}");
    }
}

#[test]
fn parent_group_and_kind_may_be_explicit_or_defaulted() {
    let mut explicit = gw_ref("infra", "gw");
    explicit.group = Some("gateway.networking.k8s.io".into());
    explicit.kind = Some("Gateway".into());
    let a = httproute("apps", "a", &["a.example.com"], &[explicit.clone()]);
    // Spec with the defaults written out, status without them (and the other way round): the same parent.
    let mut b = httproute("apps", "b", &["b.example.com"], &[explicit]);
    b.parents = vec![accepted(gw_ref("infra", "gw"))];
    assert_eq!(names(&published([a, b])), vec!["a.example.com", "b.example.com"]);
}

#[test]
fn parent_namespace_defaults_to_the_route_namespace() {
    let mut c = world();
    c.add(gateway("apps", "local", vec![http("http", None)], &["5.6.7.8"]));
    c.add(web_on("web.example.com", local_ref("local")));
    assert_eq!(lines(&run(config(), &c)), vec!["web.example.com A 5.6.7.8"]);
}

#[test]
fn status_parent_not_in_spec_parent_refs_is_ignored() {
    let mut r = web_on("web.example.com", gw_ref("infra", "other"));
    r.parents = vec![accepted(gw_ref("infra", "gw"))];
    assert!(published([r]).is_empty());
}

#[test]
fn route_needs_its_parent_in_spec_and_in_status() {
    let mut without_spec = web_on("web.example.com", gw_ref("infra", "gw"));
    without_spec.parent_refs.clear();
    let mut without_status = web_on("web.example.com", gw_ref("infra", "gw"));
    without_status.parents.clear();
    for r in [without_spec, without_status] {
        assert!(published([r.clone()]).is_empty(), "{r:?}");
    }
}

#[test]
fn gateway_name_and_namespace_flags_keep_only_matching_gateways() {
    let mut c = world();
    c.add(gateway("infra", "external", vec![http("http", None)], &["2.3.4.5"]));
    c.add(gateway("edge", "gw", vec![http("http", None)], &["9.9.9.9"]));
    c.add(attached("apps", "echo", &["echo.example.org"]));
    c.add(httproute(
        "apps",
        "echo2",
        &["echo2.example.org"],
        &[gw_ref("infra", "external")],
    ));
    c.add(httproute("apps", "b", &["b.example.com"], &[gw_ref("edge", "gw")]));
    let by_name = named_gateway("external", config());
    assert_eq!(lines(&run(by_name, &c)), vec!["echo2.example.org A 2.3.4.5"]);
    let by_namespace = GatewaySourceConfig {
        gateway_namespace: Some("edge".into()),
        ..config()
    };
    assert_eq!(lines(&run(by_namespace, &c)), vec!["b.example.com A 9.9.9.9"]);
}

#[test]
fn gateway_name_flag_with_route_on_two_gateways_uses_only_the_named_one() {
    let mut c = world();
    c.add(gateway("infra", "other", vec![http("http", None)], &["2.3.4.5"]));
    let mut r = web_on("web.example.com", gw_ref("infra", "gw"));
    r.parent_refs.push(gw_ref("infra", "other"));
    r.parents.push(accepted(gw_ref("infra", "other")));
    c.add(r);
    let cfg = named_gateway("gw", config());
    assert_eq!(lines(&run(cfg, &c)), vec!["web.example.com A 1.2.3.4"]);
}

#[test]
fn gateway_label_filter_keeps_only_matching_gateways() -> Result<(), extdns_source::SelectorError> {
    let mut c = ClusterStore::new();
    c.add(gateway("infra", "public", vec![http("http", None)], &["1.1.1.1"]).labelled(&[("exposure", "public")]));
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
    assert!(published([web_on("web.example.com", gw_ref("infra", "nope"))]).is_empty());
}

#[test]
fn parent_must_have_accepted_the_route() {
    for status in [Some("False"), Some("Unknown"), None] {
        let mut r = web_on("web.example.com", gw_ref("infra", "gw"));
        r.parents[0].accepted = status.map(str::to_string);
        assert!(published([r]).is_empty(), "{status:?}");
    }
}

#[test]
fn gateway_with_a_foreign_controller_annotation_is_not_a_parent() {
    let mut c = ClusterStore::new();
    c.add(infra_gw(vec![http("http", None)]).with_annotation(GA, "controller", "other"));
    c.add(web_on("web.example.com", gw_ref("infra", "gw")));
    assert!(run(config(), &c).is_empty());
}

/// external-dns #6545 (`IsControllerMatch` on Gateways at index time): a Gateway whose `controller`
/// annotation names another controller than `dns-controller` (an empty value included) is no parent. A route
/// attached through it alone publishes nothing and is no failure, so `--policy=sync` deletes its records;
/// a route also attached to one of our Gateways publishes through that one only.
#[test]
fn gateway_controller_filter_6545_routes_attached_only_through_a_foreign_gateway_publish_nothing() {
    for (prefix, value) in [(GA, "other"), (ALPHA, "other"), (GA, "")] {
        let mut c = ClusterStore::new();
        c.add(
            gateway("infra", "theirs", vec![http("http", None)], &["192.0.2.1"]).with_annotation(
                prefix,
                "controller",
                value,
            ),
        );
        c.add(
            gateway("infra", "ours", vec![http("http", None)], &["192.0.2.2"]).with_annotation(
                GA,
                "controller",
                "dns-controller",
            ),
        );
        c.add(httproute(
            "apps",
            "only-theirs",
            &["a.example.com"],
            &[gw_ref("infra", "theirs")],
        ));
        c.add(httproute(
            "apps",
            "both",
            &["b.example.com"],
            &[gw_ref("infra", "theirs"), gw_ref("infra", "ours")],
        ));
        let out = collect(&GatewayRouteSource::new(RouteKind::Http, config()), &c);
        let Ok(out) = out else {
            panic!("source failed: {out:?}");
        };
        assert_eq!(
            lines(&out.endpoints),
            vec!["b.example.com A 192.0.2.2"],
            "{prefix}controller={value:?}"
        );
        assert!(
            out.failed.is_empty(),
            "an excluded Gateway fails nothing: {:?}",
            out.failed
        );
    }
}

#[test]
fn annotation_filter_does_not_apply_to_gateways() -> Result<(), extdns_source::SelectorError> {
    let mut c = world();
    c.add(web_on("web.example.com", gw_ref("infra", "gw")).annotated(&[("team", "a")]));
    // The Gateway has no annotations at all and is still used.
    let cfg = annotation_filtered(config(), "team=a")?;
    assert_eq!(names(&run(cfg, &c)), vec!["web.example.com"]);
    Ok(())
}

/// `--dns-provider-crds`: a route's own routing annotations decide which provider publishes it; its
/// Gateway's are not read (the Gateway makes no records of its own).
#[test]
fn a_route_is_routed_by_its_own_annotations_not_its_gateways() {
    use extdns_source::ProviderRoute;
    const ROUTE: &str = "external-dns.kubernetes.io/cluster-provider";
    let mut c = ClusterStore::new();
    c.add(infra_gw(vec![http("http", None)]).annotated(&[(ROUTE, "elsewhere")]));
    c.add(attached("apps", "web", &["web.example.com"]));
    c.add(attached("apps", "pub", &["pub.example.com"]).annotated(&[(ROUTE, "public")]));
    let provider = |name: &str| sharing(config(), |s| s.route = Some(ProviderRoute::cluster(name)));
    assert_eq!(
        names(&run(provider("public"), &c)),
        vec!["pub.example.com", "web.example.com"]
    );
    assert_eq!(names(&run(provider("internal"), &c)), vec!["web.example.com"]);
    assert_eq!(names(&run(provider("elsewhere"), &c)), vec!["web.example.com"]);
}

/// ListenerSets from the namespaces `from` (and `selector`) may attach to the Gateway.
fn allowed_listeners(from: &str, selector: Option<LabelSelector>) -> Option<AllowedListeners> {
    Some(AllowedListeners {
        namespaces_from: Some(from.into()),
        namespaces_selector: selector,
    })
}

/// Gateway `default/my-gateway` (own listener for `own.example.org`, ListenerSets allowed from
/// `allowed_from`) and its ListenerSet `default/my-listenerset` for `*.example.com`.
fn listener_set_world(allowed_from: Option<&str>) -> ClusterStore {
    let mut c = ClusterStore::new();
    let mut gw = gateway(
        "default",
        "my-gateway",
        vec![http("own", Some("own.example.org"))],
        &["10.64.0.1", "10.64.0.2"],
    );
    gw.allowed_listeners = allowed_from.and_then(|f| allowed_listeners(f, None));
    c.add(gw);
    c.add(on_my_gateway(
        "my-listenerset",
        vec![listener("app", "HTTP", 80, Some("*.example.com"))],
    ));
    c
}

/// A ListenerSet in `default` on `my-gateway`.
fn on_my_gateway(name: &str, listeners: Vec<Listener>) -> ListenerSet {
    listener_set("default", name, local_ref("my-gateway"), listeners)
}

/// An HTTPRoute in `default` for `hostnames`, attached to ListenerSet `default/set`.
fn on_listener_set(name: &str, set: &str, hostnames: &[&str]) -> Route {
    httproute("default", name, hostnames, &[ls_ref("default", set)])
}

/// The route `default/app` for `app.example.com` on `my-listenerset`.
fn app_route() -> Route {
    on_listener_set("app", "my-listenerset", &["app.example.com"])
}

/// The [`listener_set_world`] with the [`app_route`].
fn app_world(allowed_from: Option<&str>) -> ClusterStore {
    let mut c = listener_set_world(allowed_from);
    c.add(app_route());
    c
}

/// What the source publishes with `--gateway-listener-sets`, as [`lines`].
fn set_lines(c: &ClusterStore) -> Vec<String> {
    lines(&run(with_listener_sets(), c))
}

#[test]
fn listener_set_parent_publishes_at_its_gateway_addresses() {
    let c = app_world(Some("All"));
    assert_eq!(set_lines(&c), vec!["app.example.com A 10.64.0.1,10.64.0.2"]);
}

#[test]
fn listener_set_parent_is_ignored_without_the_flag() {
    let c = app_world(Some("All"));
    assert!(run(config(), &c).is_empty());
}

#[test]
fn listener_set_uses_only_its_own_listeners() {
    let mut c = listener_set_world(Some("All"));
    // own.example.org is served by a listener of the Gateway itself, not of the ListenerSet.
    c.add(on_listener_set("app", "my-listenerset", &["own.example.org"]));
    assert!(run(with_listener_sets(), &c).is_empty());
}

#[test]
fn listener_set_needs_the_gateway_to_allow_it() {
    for from in [None, Some("None"), Some("Elsewhere")] {
        assert!(set_lines(&app_world(from)).is_empty(), "{from:?}");
    }
    let c = app_world(Some("Same"));
    assert_eq!(names(&run(with_listener_sets(), &c)), vec!["app.example.com"]);
}

#[test]
fn listener_set_allowed_by_selector_on_its_namespace() {
    let mut c = ClusterStore::new();
    let mut gw = infra_gw(vec![]);
    gw.allowed_listeners = allowed_listeners("Selector", Some(selector(&[("listeners", "ok")])));
    c.add(gw);
    c.add(namespace("team-a", &[("listeners", "ok")]));
    c.add(namespace("team-b", &[]));
    for ns in ["team-a", "team-b"] {
        let host = format!("{ns}.example.com");
        let same = allowing(http("l", Some(&host)), Some("Same"), None, &[]);
        c.add(listener_set(ns, "ls", gw_ref("infra", "gw"), vec![same]));
        c.add(httproute(ns, "web", &[&host], &[ls_ref(ns, "ls")]));
    }
    // allowedRoutes Same on a ListenerSet listener compares with the ListenerSet's namespace.
    assert_eq!(names(&run(with_listener_sets(), &c)), vec!["team-a.example.com"]);
}

#[test]
fn listener_set_must_be_accepted_and_so_must_its_listener() {
    let mut c = listener_set_world(Some("All"));
    let mut not_accepted = on_my_gateway("not-accepted", vec![http("app", None)]);
    not_accepted.accepted = false;
    c.add(not_accepted);
    let mut listener_not_accepted = on_my_gateway("listener-not-accepted", vec![http("app", None)]);
    listener_not_accepted.accepted_listeners.clear();
    c.add(listener_not_accepted);
    c.add(on_listener_set("a", "not-accepted", &["a.example.org"]));
    c.add(on_listener_set("b", "listener-not-accepted", &["b.example.org"]));
    assert!(run(with_listener_sets(), &c).is_empty());
}

#[test]
fn listener_set_target_annotation_overrides_the_gateway() {
    let mut c = listener_set_world(Some("All"));
    c.add(on_my_gateway("annotated", vec![http("app", None)]).with_annotation(GA, "target", "ls.example.net"));
    c.add(on_listener_set("a", "annotated", &["a.example.org"]));
    assert_eq!(set_lines(&c), vec!["a.example.org CNAME ls.example.net"]);
}

#[test]
fn listener_set_falls_back_to_the_gateway_target_annotation() {
    let mut c = ClusterStore::new();
    let mut gw = gateway("default", "gw", vec![], &["10.0.0.1"]);
    gw.allowed_listeners = allowed_listeners("All", None);
    gw.annotate(&[(&format!("{GA}target"), "gw.example.net")]);
    c.add(gw);
    c.add(listener_set("default", "ls", local_ref("gw"), vec![http("app", None)]));
    c.add(on_listener_set("a", "ls", &["a.example.org"]));
    assert_eq!(set_lines(&c), vec!["a.example.org CNAME gw.example.net"]);
}

#[test]
fn listener_set_gateway_name_flag_compares_the_parent_gateway() {
    let c = app_world(Some("All"));
    let other = named_gateway("other", with_listener_sets());
    assert!(run(other, &c).is_empty());
    let same = named_gateway("my-gateway", with_listener_sets());
    assert_eq!(names(&run(same, &c)), vec!["app.example.com"]);
}

#[test]
fn listener_set_with_foreign_controller_or_filtered_annotation_is_not_a_parent()
-> Result<(), extdns_source::SelectorError> {
    let mut c = listener_set_world(Some("All"));
    c.add(on_my_gateway("foreign", vec![http("app", None)]).with_annotation(GA, "controller", "other"));
    c.add(on_listener_set("a", "foreign", &["a.example.org"]));
    assert!(run(with_listener_sets(), &c).is_empty());

    // --annotation-filter applies to ListenerSets (and routes), not to Gateways.
    let mut c = listener_set_world(Some("All"));
    c.add(app_route().annotated(&[("dns", "yes")]));
    assert!(run(annotation_filtered(with_listener_sets(), "dns=yes")?, &c).is_empty());
    Ok(())
}

#[test]
fn listener_set_section_name_selects_its_listener() {
    let mut c = listener_set_world(Some("All"));
    c.add(on_my_gateway(
        "two",
        vec![http("a", Some("a.example.org")), http("b", Some("b.example.org"))],
    ));
    let mut p = ls_ref("default", "two");
    p.section_name = Some("b".into());
    c.add(httproute("default", "r", &["*.example.org"], &[p]));
    assert_eq!(names(&run(with_listener_sets(), &c)), vec!["b.example.org"]);
}
