//! Which parents a route publishes through: Gateways (references, status, the gateway flags) and ListenerSets (`--gateway-listener-sets`).

use super::*;

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
    let annotation_filter = Selector::parse("team=a")?;
    let cfg = sharing(config(), |c| c.annotation_filter = annotation_filter);
    assert_eq!(names(&run(cfg, &c)), vec!["web.example.com"]);
    Ok(())
}

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
    let annotation_filter = Selector::parse("dns=yes")?;
    let cfg = sharing(with_listener_sets(), |c| c.annotation_filter = annotation_filter);
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
