//! Route names narrowed by listener hostnames.

use super::*;

fn narrowing(listener_host: Option<&str>, route_hosts: &[&str]) -> Vec<String> {
    let mut c = ClusterStore::new();
    c.add(gateway("infra", "gw", vec![http("l", listener_host)], &["1.2.3.4"]));
    c.add(httproute("apps", "web", route_hosts, &[gw_ref("infra", "gw")]));
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
    let mut c = ClusterStore::new();
    c.add(gateway(
        "infra",
        "gw",
        vec![http("l", Some("*.example.com"))],
        &["1.2.3.4"],
    ));
    let mut r = httproute("apps", "web", &[], &[gw_ref("infra", "gw")]);
    r.meta = with_annotations(r.meta, &[(&format!("{GA}hostname"), "in.example.com,out.example.net")]);
    c.add(r);
    assert_eq!(names(&run(config(), &c)), vec!["in.example.com"]);
}

#[test]
fn invalid_listener_hostname_skips_that_listener_with_a_warning() {
    let mut c = ClusterStore::new();
    c.add(gateway(
        "infra",
        "gw",
        vec![
            http("broken", Some("bad_host.example.com")),
            http("ok", Some("*.example.com")),
        ],
        &["1.2.3.4"],
    ));
    c.add(httproute(
        "apps",
        "web",
        &["a.example.com", "bad-host.example.com"],
        &[gw_ref("infra", "gw")],
    ));
    let (eps, logs) = warnings(|| run(config(), &c));
    assert_eq!(names(&eps), vec!["a.example.com", "bad-host.example.com"]);
    assert!(
        logs.contains("Gateway infra/gw") && logs.contains("spec.listeners[broken].hostname"),
        "{logs}"
    );
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
