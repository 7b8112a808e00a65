//! The targets: Gateway addresses and the target annotation; labels, TTL and merging of the records.

use super::*;

/// The endpoints of a route for `web.example.com` on Gateway `infra/gw` at `addresses`.
fn web_at(addresses: &[&str]) -> Vec<Endpoint> {
    let mut c = ClusterStore::new();
    c.add(gateway("infra", "gw", vec![http("l", None)], addresses));
    c.add(attached("apps", "web", &["web.example.com"]));
    run(config(), &c)
}

#[test]
fn gateway_status_addresses_are_the_targets() {
    assert_eq!(
        lines(&web_at(&["1.2.3.4", "5.6.7.8"])),
        vec!["web.example.com A 1.2.3.4,5.6.7.8"]
    );
}

#[test]
fn targets_of_one_gateway_are_sorted_and_deduplicated() {
    assert_eq!(
        web_at(&["5.6.7.8", "1.2.3.4", "5.6.7.8"])[0].targets.0,
        vec!["1.2.3.4".to_string(), "5.6.7.8".to_string()]
    );
}

#[test]
fn gateway_target_annotation_overrides_status_addresses() {
    let mut c = ClusterStore::new();
    c.add(infra_gw(vec![http("l", None)]).with_annotation(ALPHA, "target", "lb.example.net."));
    c.add(attached("apps", "web", &["web.example.com"]));
    assert_eq!(lines(&run(config(), &c)), vec!["web.example.com CNAME lb.example.net"]);
}

#[test]
fn route_target_annotation_is_ignored() {
    let mut c = world();
    c.add(attached("apps", "web", &["web.example.com"]).with_annotation(GA, "target", "9.9.9.9"));
    assert_eq!(lines(&run(config(), &c)), vec!["web.example.com A 1.2.3.4"]);
}

#[test]
fn targets_are_combined_and_deduplicated_across_parents() {
    let mut c = ClusterStore::new();
    c.add(gateway("infra", "annotated", vec![http("l", None)], &["7.7.7.7"]).with_annotation(GA, "target", "4.3.2.1"));
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
    assert_eq!(
        lines(&web_at(&["2001:db8::1", "1.2.3.4", "lb.example.net"])),
        vec![
            "web.example.com A 1.2.3.4",
            "web.example.com AAAA 2001:db8::1",
            "web.example.com CNAME lb.example.net"
        ]
    );
}

#[test]
fn gateway_without_addresses_publishes_nothing() {
    assert!(web_at(&[]).is_empty());
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
    c.add(gateway("infra", "annotated", vec![http("l", None)], &[]).with_annotation(GA, "target", "5.6.7.8,bad..name"));
    c.add(httproute(
        "apps",
        "web",
        &["web.example.com"],
        &[gw_ref("infra", "gw"), gw_ref("infra", "annotated")],
    ));
    let (eps, logs) = run_warned(&c);
    assert_eq!(lines(&eps), vec!["web.example.com A 1.2.3.4,5.6.7.8"]);
    assert_mentions(
        &logs,
        &[
            "Gateway infra/gw",
            "status.addresses[1].value",
            "status.addresses[2].value",
            "not an address",
            "1.2.3.4:80",
            "Gateway infra/annotated",
            "target annotation",
        ],
    );
}

#[test]
fn resource_label_is_kind_namespace_name() {
    let mut c = world_with(vec![
        http("l", None),
        listener("tcp", "TCP", 5432, Some("db.example.com")),
    ]);
    c.add(attached("apps", "echo", &["echo.example.com"]));
    c.add(attached_kind(RouteKind::Tcp, "data", "db", &[]));
    let eps = run(config(), &c);
    assert_eq!(eps.len(), 1);
    assert_eq!(eps[0].resource().as_deref(), Some("httproute/apps/echo"));
    let refs: Vec<&ObjectKey> = eps[0].ref_objects.iter().map(|k| &**k).collect();
    assert_eq!(
        refs,
        vec![&ObjectKey::new(ResourceKind::Route(RouteKind::Http), "apps", "echo")]
    );
    let tcp = run_kind(RouteKind::Tcp, config(), &c);
    assert_eq!(tcp.len(), 1);
    assert_eq!(tcp[0].resource().as_deref(), Some("tcproute/data/db"));
}

#[test]
fn ttl_set_identifier_and_provider_specific_come_from_the_route() {
    let mut c = ClusterStore::new();
    let mut gw = infra_gw(vec![http("l", None)]);
    // Gateway annotations other than target are not read.
    gw.annotate(&[(&format!("{GA}ttl"), "999"), (&format!("{GA}set-identifier"), "gw")]);
    c.add(gw);
    c.add(attached("apps", "web", &["web.example.com"]).annotated(&[
        (&format!("{GA}ttl"), "10m"),
        (&format!("{GA}set-identifier"), "blue"),
        (&format!("{GA}aws-weight"), "10"),
        (&format!("{GA}alias"), "true"),
    ]));
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
    c.add(attached("apps", "web", &["web.example.com"]).with_annotation(GA, "ttl", "forever"));
    let (eps, logs) = run_warned(&c);
    assert_eq!(eps.len(), 1);
    assert_eq!(eps[0].record_ttl, Ttl(0));
    assert_mentions(&logs, &["HTTPRoute apps/web"]);
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
    assert_eq!(web_at(&["lb.example.net"])[0].record_type, RecordType::Cname);
}
