//! Which Gateways a route publishes through: parent references, status, the gateway flags.

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
