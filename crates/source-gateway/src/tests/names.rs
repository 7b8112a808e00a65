//! The domain names a route asks for: spec hostnames, annotations, the listener fallback.

use super::*;

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
