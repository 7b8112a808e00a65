//! external-dns's `source/crd_test.go` table (`testCRDSourceEndpoints`, `TestCRDSourceIllegalTargetWarnings`,
//! `TestDNSEndpointsWithSetResourceLabels`), transcribed, and extdns's own rules for bad entries.

use std::path::Path;

use extdns_endpoint::{Endpoint, RecordType};
use extdns_informer::manifests::{Format, Loader};
use extdns_informer::{ClusterStore, KindOverrides, LoadOptions, ResourceKind};
use extdns_source::pipeline::testing::load;
use extdns_source::{Selector, SourceExt};
use serde_json::{Value, json};

use super::*;
use crate::entry::Invalid;

fn store_with(objects: &[Value], overrides: KindOverrides) -> ClusterStore {
    let mut opts = LoadOptions::default();
    opts.overrides = overrides;
    load(objects, opts)
}

/// A store holding one DNSEndpoint `ns/test` with `entries`, no labels or annotations.
fn one_object(ns: &str, entries: Value) -> ClusterStore {
    store_with(&[plain(ns, entries)], KindOverrides::new())
}

/// A DNSEndpoint `ns/test` with `entries`, no labels or annotations.
fn plain(ns: &str, entries: Value) -> Value {
    dns_endpoint(ns, json!({}), json!({}), entries)
}

fn dns_endpoint(ns: &str, labels: Value, annotations: Value, endpoints: Value) -> Value {
    json!({
        "apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "DNSEndpoint",
        "metadata": {"name": "test", "namespace": ns, "generation": 1, "labels": labels, "annotations": annotations},
        "spec": {"endpoints": endpoints}
    })
}

fn ep(name: &str, record_type: &str, targets: &[&str]) -> Value {
    json!({"dnsName": name, "recordType": record_type, "targets": targets, "recordTTL": 180})
}

/// One row of `testCRDSourceEndpoints`: where the object is and what selects it, its entries, and whether
/// they all publish (as written) or nothing does.
struct Case {
    title: &'static str,
    scope: Scope,
    endpoints: Value,
    expect_endpoints: bool,
}

/// The object's namespace, labels and annotations, and the source's filters, as one row sets them.
struct Scope {
    namespace_filter: &'static str,
    object_namespace: &'static str,
    annotation_filter: &'static str,
    label_filter: &'static str,
    annotations: Value,
    labels: Value,
}

/// Namespace `foo`, no filters: the table's default.
fn in_foo() -> Scope {
    Scope {
        namespace_filter: "foo",
        object_namespace: "foo",
        annotation_filter: "",
        label_filter: "",
        annotations: json!({}),
        labels: json!({}),
    }
}

/// Labelled `test=that` and selected by `--label-filter=test=that`, as most of the table's rows are.
fn labelled_that() -> Scope {
    Scope {
        label_filter: "test=that",
        labels: json!({"test": "that"}),
        ..in_foo()
    }
}

fn row(title: &'static str, scope: Scope, endpoints: Value, expect_endpoints: bool) -> Case {
    Case {
        title,
        scope,
        endpoints,
        expect_endpoints,
    }
}

fn evaluate(source: &CrdSource, store: &ClusterStore) -> Vec<Endpoint> {
    futures::executor::block_on(source.evaluate_all(store))
        .expect("the crd source never fails whole")
        .endpoints
}

/// The endpoints a row's entries spell, as external-dns's `ValidateEndpoints` compares them.
/// What `ValidateEndpoints` compares: name, type, sorted targets, TTL, set identifier, provider-specific.
type Compared = Vec<(String, RecordType, Vec<String>, i64, String, Vec<(String, String)>)>;

fn expected(entries: &Value) -> Compared {
    let mut out: Vec<_> = entries
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap_or_default().to_string();
            let mut targets: Vec<String> = e["targets"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|t| t.as_str().map(String::from))
                .collect();
            targets.sort();
            let ps = e["providerSpecific"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| {
                    (
                        p["name"].as_str().unwrap_or_default().to_string(),
                        p["value"].as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect();
            (
                s("dnsName"),
                s("recordType").parse().unwrap_or(RecordType::A),
                targets,
                e["recordTTL"].as_i64().unwrap_or_default(),
                s("setIdentifier"),
                ps,
            )
        })
        .collect();
    out.sort();
    out
}

fn got(endpoints: &[Endpoint]) -> Compared {
    let mut out: Vec<_> = endpoints
        .iter()
        .map(|e| {
            let mut targets: Vec<String> = e.targets.iter().map(|t| t.as_str().to_string()).collect();
            targets.sort();
            (
                e.dns_name.clone(),
                e.record_type.clone(),
                targets,
                e.record_ttl.0,
                e.set_identifier.clone(),
                e.provider_specific
                    .iter()
                    .map(|p| (p.name.clone(), p.value.clone()))
                    .collect(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn crd_test_go_endpoints_table() {
    let that = || json!({"test": "that"});
    let abc = || json!([ep("abc.example.org", "A", &["1.2.3.4"])]);
    let cases = vec![
        row("endpoints within a specific namespace", in_foo(), abc(), true),
        row(
            "no endpoints within a specific namespace",
            Scope {
                object_namespace: "bar",
                ..in_foo()
            },
            abc(),
            false,
        ),
        row(
            "valid crd with no targets (relies on default-targets)",
            in_foo(),
            json!([ep("no-targets.example.org", "A", &[])]),
            true,
        ),
        row("valid crd gvk with single endpoint", in_foo(), abc(), true),
        row(
            "valid crd gvk with multiple endpoints",
            in_foo(),
            json!([
                ep("abc.example.org", "A", &["1.2.3.4"]),
                ep("xyz.example.org", "CNAME", &["abc.example.org"])
            ]),
            true,
        ),
        row(
            "valid crd gvk with annotation and non matching annotation filter",
            Scope {
                annotations: that(),
                annotation_filter: "test=filter_something_else",
                ..in_foo()
            },
            abc(),
            false,
        ),
        row(
            "valid crd gvk with annotation and matching annotation filter",
            Scope {
                annotations: that(),
                annotation_filter: "test=that",
                ..in_foo()
            },
            abc(),
            true,
        ),
        row(
            "valid crd gvk with label and non matching label filter",
            Scope {
                label_filter: "test=filter_something_else",
                ..labelled_that()
            },
            abc(),
            false,
        ),
        row(
            "valid crd gvk with label and matching label filter",
            labelled_that(),
            abc(),
            true,
        ),
        row(
            "Create NS record",
            labelled_that(),
            json!([ep("abc.example.org", "NS", &["ns1.k8s.io", "ns2.k8s.io"])]),
            true,
        ),
        // external-dns's source emits this entry and its plan drops it (`CheckEndpoint`: an SRV host needs its
        // trailing dot); extdns skips it here, by index, so the zone is the same and its record is held.
        row(
            "Create SRV record",
            labelled_that(),
            json!([ep(
                "_svc._tcp.example.org",
                "SRV",
                &["0 0 80 abc.example.org", "0 0 80 def.example.org"]
            )]),
            false,
        ),
        row(
            "SRV target with trailing dot (RFC 2782 absolute FQDN host) is valid (#6357)",
            labelled_that(),
            json!([ep(
                "_svc._tcp.example.org",
                "SRV",
                &["0 0 80 abc.example.org.", "10 20 443 def.example.org."]
            )]),
            true,
        ),
        row(
            "Create NAPTR record",
            labelled_that(),
            json!([ep("example.org", "NAPTR", NAPTR_DOTTED)]),
            true,
        ),
        row(
            "CNAME target with trailing dot (RFC 1035 §5.1 absolute FQDN) is valid",
            labelled_that(),
            json!([ep("example.org", "CNAME", &["foo.example.org."])]),
            true,
        ),
        row(
            "CNAME target without trailing dot (relative name)",
            labelled_that(),
            json!([{"dnsName": "internal.example.com", "recordType": "CNAME",
                    "targets": ["backend.cluster.local"], "recordTTL": 300}]),
            true,
        ),
        row(
            "DNAME target with trailing dot (RFC 1035 §5.1 absolute FQDN) is valid",
            labelled_that(),
            json!([ep("example.org", "DNAME", &["target.example.net."])]),
            true,
        ),
        row(
            "DNAME target without trailing dot (relative name) is valid",
            labelled_that(),
            json!([ep("example.org", "DNAME", &["target.example.net"])]),
            true,
        ),
        row(
            "CNAME and DNAME with the same name are both emitted",
            labelled_that(),
            json!([
                ep("example.org", "CNAME", &["cname-target.example.net"]),
                ep("example.org", "DNAME", &["dname-target.example.net"])
            ]),
            true,
        ),
        row(
            "illegal target NAPTR",
            labelled_that(),
            json!([ep("example.org", "NAPTR", NAPTR_UNDOTTED)]),
            false,
        ),
        row(
            "valid target TXT",
            labelled_that(),
            json!([ep("example.org", "TXT", &["foo.example.org."])]),
            true,
        ),
        row(
            "illegal target A",
            labelled_that(),
            json!([ep("example.org", "A", &["1.2.3.4."])]),
            false,
        ),
        // The trailing dot is allowed; these targets lack the preference `CheckEndpoint` wants, so, as above,
        // external-dns's plan drops them and extdns's source skips them.
        row(
            "MX Record allowing trailing dot in target",
            labelled_that(),
            json!([ep("example.org", "MX", &["example.com."])]),
            false,
        ),
        row(
            "MX Record without trailing dot in target",
            labelled_that(),
            json!([ep("example.org", "MX", &["example.com"])]),
            false,
        ),
        row(
            "(extdns) MX Records with their preference, with and without a trailing dot",
            labelled_that(),
            json!([ep("example.org", "MX", &["10 example.com.", "20 example.net"])]),
            true,
        ),
        row(
            "provider-specific properties are passed through from DNSEndpoint spec",
            Scope {
                namespace_filter: "bar",
                object_namespace: "bar",
                ..in_foo()
            },
            json!([{
                "dnsName": "subdomain.example.org", "targets": ["other.example.org"], "recordType": "CNAME",
                "recordTTL": 180, "setIdentifier": "some-unique-id",
                "providerSpecific": [
                    {"name": "aws/failover", "value": "PRIMARY"},
                    {"name": "aws/health-check-id", "value": "asdf1234-as12-as12-as12-asdf12345678"},
                    {"name": "aws/evaluate-target-health", "value": "true"}
                ]
            }]),
            true,
        ),
    ];
    for c in cases {
        let scope = c.scope;
        let store = store_with(
            &[dns_endpoint(
                scope.object_namespace,
                scope.labels,
                scope.annotations,
                c.endpoints.clone(),
            )],
            KindOverrides::new(),
        );
        let source = CrdSource::new(CrdSourceConfig {
            namespace: Some(scope.namespace_filter.to_string()),
            annotation_filter: Selector::parse(scope.annotation_filter).expect("filter parses"),
            label_filter: Selector::parse(scope.label_filter).expect("filter parses"),
            ..CrdSourceConfig::default()
        });
        let endpoints = evaluate(&source, &store);
        if !c.expect_endpoints {
            assert!(endpoints.is_empty(), "{}: {endpoints:?}", c.title);
            continue;
        }
        assert_eq!(got(&endpoints), expected(&c.endpoints), "{}", c.title);
        let resource = format!("crd/{}/test", scope.object_namespace);
        for e in &endpoints {
            assert_eq!(e.resource().as_deref(), Some(resource.as_str()), "{}", c.title);
        }
    }
}

/// The NAPTR targets of the table, with the trailing dot NAPTR requires and without.
const NAPTR_DOTTED: &[&str] = &[
    r#"100 10 "S" "SIP+D2U" "!^.*$!sip:customer-service@example.org!" _sip._udp.example.org."#,
    r#"102 10 "S" "SIP+D2T" "!^.*$!sip:customer-service@example.org!" _sip._tcp.example.org."#,
];
const NAPTR_UNDOTTED: &[&str] = &[
    r#"100 10 "S" "SIP+D2U" "!^.*$!sip:customer-service@example.org!" _sip._udp.example.org"#,
    r#"102 10 "S" "SIP+D2T" "!^.*$!sip:customer-service@example.org!" _sip._tcp.example.org"#,
];

/// `TestCRDSourceIllegalTargetWarnings`: the message names the target, the type and the fix.
#[test]
fn crd_test_go_illegal_target_warnings() {
    let cases = [
        (
            ep("example.org", "A", &["1.2.3.4."]),
            Some(r#"illegal target "1.2.3.4." for A record — use "1.2.3.4" not "1.2.3.4.""#),
        ),
        (
            ep("example.org", "NAPTR", &["_sip._udp.example.org"]),
            Some(
                r#"illegal target "_sip._udp.example.org" for NAPTR record — use "_sip._udp.example.org." not "_sip._udp.example.org""#,
            ),
        ),
        (ep("example.org", "CNAME", &[]), None),
        (ep("_svc._tcp.example.org", "SRV", &["0 0 80 abc.example.org."]), None),
    ];
    for (entry, want) in cases {
        let store = one_object("foo", json!([entry]));
        let o = store.dns_endpoint("foo", "test").expect("stored");
        let (_, invalid) = object_endpoints(&o);
        let messages: Vec<String> = invalid.iter().map(|i| i.why.to_string()).collect();
        match want {
            Some(w) => assert_eq!(messages, vec![w.to_string()]),
            None => assert!(messages.is_empty(), "{messages:?}"),
        }
    }
}

/// `TestDNSEndpointsWithSetResourceLabels`: every endpoint carries `resource=crd/<ns>/<name>`, also when
/// the entry brings labels of its own.
#[test]
fn crd_test_go_resource_labels_are_set() {
    let entries = json!([
        {"dnsName": "a.example.org", "recordType": "A", "targets": ["1.1.1.1"],
         "labels": {"owner": "x", "resource": "service/ns/other"}},
        {"dnsName": "b.example.org", "recordType": "AAAA", "targets": ["2001:db8::1"]}
    ]);
    let store = one_object("ns", entries);
    let endpoints = evaluate(&CrdSource::new(CrdSourceConfig::default()), &store);
    assert_eq!(endpoints.len(), 2);
    for e in &endpoints {
        assert_eq!(e.label("resource"), None, "rendered where the record is written");
        assert_eq!(e.resource().as_deref(), Some("crd/ns/test"));
        assert_eq!(
            e.labels_as_written().get("resource").map(String::as_str),
            Some("crd/ns/test")
        );
        assert_eq!(
            e.ref_objects.iter().next().map(|k| &**k),
            Some(&extdns_informer::ObjectKey::new(
                ResourceKind::DnsEndpoint,
                "ns",
                "test"
            ))
        );
    }
    assert_eq!(endpoints[0].label("owner"), Some("x"));
}

#[test]
fn a_bad_entry_is_skipped_and_the_rest_of_the_object_publishes() {
    let entries = json!([
        null,
        {"dnsName": "", "recordType": "A", "targets": ["1.1.1.1"]},
        {"dnsName": "x.example.org", "recordType": "BOGUS", "targets": ["1.1.1.1"]},
        {"dnsName": "x.example.org", "recordType": "A", "targets": ["1.1.1.1"], "recordTTL": -5},
        {"dnsName": "x.example.org", "recordType": "AAAA", "targets": ["2001:db8::1."]},
        {"dnsName": "ok.example.org", "recordType": "A", "targets": ["192.0.2.1"], "recordTTL": 30}
    ]);
    let store = one_object("ns", entries);
    let o = store.dns_endpoint("ns", "test").expect("stored");
    let (endpoints, invalid) = object_endpoints(&o);
    assert_eq!(invalid.iter().map(|i| i.index).collect::<Vec<_>>(), vec![1, 2, 3, 4]);
    assert_eq!(invalid[0].why, Invalid::NoName);
    assert_eq!(invalid[1].why, Invalid::RecordType("BOGUS".into()));
    assert_eq!(invalid[2].why, Invalid::NegativeTtl(-5));
    assert_eq!(endpoints.len(), 1);
    assert_eq!(endpoints[0].dns_name, "ok.example.org");
    assert_eq!(endpoints[0].record_ttl.0, 30);
}

#[test]
fn every_record_type_external_dns_manages_is_read() {
    let entries = json!([
        ep("a.example.org", "A", &["192.0.2.1"]),
        ep("a.example.org", "AAAA", &["2001:db8::1"]),
        ep("c.example.org", "CNAME", &["a.example.org"]),
        ep("t.example.org", "TXT", &["hello world"]),
        ep("_s._tcp.example.org", "SRV", &["0 5 80 a.example.org."]),
        ep("m.example.org", "MX", &["10 mail.example.org"]),
        ep(
            "n.example.org",
            "NAPTR",
            &[r#"1 1 "S" "SIP+D2U" "" _sip._udp.example.org."#]
        ),
        ep("1.2.0.192.in-addr.arpa", "PTR", &["a.example.org"]),
        ep("sub.example.org", "NS", &["ns1.example.org"]),
    ]);
    let store = one_object("ns", entries.clone());
    let endpoints = evaluate(&CrdSource::new(CrdSourceConfig::default()), &store);
    assert_eq!(got(&endpoints), expected(&entries));
}

#[test]
fn tlsa_svcb_and_https_targets_are_read_in_their_canonical_text() {
    let digest = "AB".repeat(32);
    let entries = json!([
        ep("_443._tcp.a.example.org", "TLSA", &[&format!("3 1 1 {digest}")]),
        ep("a.example.org", "HTTPS", &[r#"1 . port=8443 alpn="h2,h3""#]),
        ep("_dns.a.example.org", "SVCB", &["0 DNS.example.org."]),
    ]);
    let store = one_object("ns", entries);
    let endpoints = evaluate(&CrdSource::new(CrdSourceConfig::default()), &store);
    let targets = |t: &str| -> Vec<String> {
        endpoints
            .iter()
            .filter(|e| e.record_type.as_str() == t)
            .flat_map(|e| e.targets.iter().map(ToString::to_string))
            .collect()
    };
    assert_eq!(targets("TLSA"), vec![format!("3 1 1 {}", digest.to_lowercase())]);
    assert_eq!(targets("HTTPS"), vec!["1 . alpn=h2,h3 port=8443".to_string()]);
    assert_eq!(targets("SVCB"), vec!["0 dns.example.org.".to_string()]);
}

#[test]
fn invalid_tlsa_svcb_and_https_entries_are_skipped_naming_the_field() {
    let entries = json!([
        ep("_443._tcp.a.example.org", "TLSA", &["3 1 1 abcd"]),
        ep("a.example.org", "HTTPS", &["0 pool.example.org. alpn=h2"]),
        ep("b.example.org", "SVCB", &["1 . mandatory=port"]),
        ep("c.example.org", "HTTPS", &["1 . alpn=h2"]),
    ]);
    let store = one_object("ns", entries);
    let o = store.dns_endpoint("ns", "test").expect("stored");
    let (endpoints, invalid) = object_endpoints(&o);
    let messages: Vec<String> = invalid.iter().map(|i| i.why.to_string()).collect();
    assert_eq!(
        messages,
        vec![
            r#"invalid TLSA target "3 1 1 abcd": matching type 1 (SHA-256) needs 64 hex digits of certificate association data, got 4"#,
            r#"invalid HTTPS target "0 pool.example.org. alpn=h2": alias mode (priority 0) takes no SvcParams, got alpn"#,
            r#"invalid SVCB target "1 . mandatory=port": SvcParam mandatory lists port, which the record does not have"#,
        ]
    );
    assert_eq!(endpoints.len(), 1);
    assert_eq!(endpoints[0].dns_name, "c.example.org");
}

#[test]
fn records_several_objects_share_are_merged_the_first_owning_them() {
    let a = plain("a", json!([ep("x.example.org", "A", &["192.0.2.2"])]));
    let b = plain("b", json!([ep("x.example.org", "A", &["192.0.2.1"])]));
    let store = store_with(&[b, a], KindOverrides::new());
    let endpoints = evaluate(&CrdSource::new(CrdSourceConfig::default()), &store);
    assert_eq!(endpoints.len(), 1);
    assert_eq!(
        endpoints[0]
            .targets
            .iter()
            .map(|t| t.as_str())
            .collect::<Vec<_>>()
            .join(","),
        "192.0.2.1,192.0.2.2"
    );
    assert_eq!(endpoints[0].resource().as_deref(), Some("crd/a/test"));
    assert_eq!(endpoints[0].ref_objects.len(), 2);
}

#[test]
fn a_configured_group_and_kind_is_read_and_the_default_one_is_not() {
    let mut overrides = KindOverrides::new();
    overrides.set_resource(
        ResourceKind::DnsEndpoint,
        "externaldns.nginx.org/v1",
        "DNSEndpoint",
        "dnsendpoints",
    );
    let mut nginx = plain("ns", json!([ep("n.example.org", "A", &["192.0.2.9"])]));
    nginx["apiVersion"] = json!("externaldns.nginx.org/v1");
    let store = store_with(&[nginx], overrides.clone());
    let endpoints = evaluate(&CrdSource::new(CrdSourceConfig::default()), &store);
    assert_eq!(endpoints.len(), 1);
    assert_eq!(endpoints[0].resource().as_deref(), Some("crd/ns/test"));

    let upstream = plain("ns", json!([]));
    let mut opts = LoadOptions::default();
    opts.overrides = overrides;
    let mut loader = Loader::new(opts);
    assert!(
        loader
            .add_str(&upstream.to_string(), Path::new("t.json"), Format::Json)
            .is_err(),
        "the default group is not read when another is configured"
    );
}

#[test]
fn an_incremental_evaluation_agrees_with_a_full_one() {
    use std::collections::BTreeSet;

    use extdns_informer::ObjectKey;
    use extdns_source::Objects;

    let a = plain("a", json!([ep("x.example.org", "A", &["192.0.2.2"])]));
    let b = plain("b", json!([ep("y.example.org", "A", &["192.0.2.1"])]));
    let store = store_with(&[a, b], KindOverrides::new());
    let source = CrdSource::new(CrdSourceConfig::default());
    let only: BTreeSet<ObjectKey> = [ObjectKey::new(ResourceKind::DnsEndpoint, "b", "test")].into();
    let some = futures::executor::block_on(source.evaluate(&store, Objects::Only(&only))).expect("evaluates");
    assert_eq!(some.objects.len(), 1);
    assert_eq!(some.objects[0].endpoints[0].dns_name, "y.example.org");
}

#[test]
fn a_change_affects_the_changed_dnsendpoints_only() {
    use extdns_informer::{ChangeSet, ObjectKey};
    use extdns_source::Source;

    let store = store_with(&[], KindOverrides::new());
    let source = CrdSource::new(CrdSourceConfig::default());
    let endpoint = ObjectKey::new(ResourceKind::DnsEndpoint, "b", "test");
    let mut changes = ChangeSet::of(endpoint.clone());
    changes.insert(ObjectKey::new(ResourceKind::Service, "b", "web"));
    assert_eq!(source.affected(&store, &changes), Some([endpoint].into()));
    let others = ChangeSet::of(ObjectKey::new(ResourceKind::Ingress, "b", "shop"));
    assert_eq!(source.affected(&store, &others), Some(Default::default()));
    assert_eq!(source.affected(&store, &ChangeSet::everything()), None);
}

fn evaluation(store: &ClusterStore) -> extdns_source::Evaluation {
    let source = CrdSource::new(CrdSourceConfig::default());
    futures::executor::block_on(source.evaluate(store, extdns_source::Objects::All)).expect("evaluates")
}

/// The key of the object `one_object` makes.
fn test_key() -> extdns_informer::ObjectKey {
    extdns_informer::ObjectKey::new(ResourceKind::DnsEndpoint, "ns", "test")
}

/// The records `one_object`'s object holds, failing in part (a panic naming the failures otherwise).
fn held_in_part(failed: &extdns_source::Failures) -> &extdns_source::HeldRecords {
    let Some(extdns_source::Held::Part(held)) = failed.held(&test_key()) else {
        panic!("the object fails in part: {failed:?}");
    };
    held
}

#[test]
fn a_bad_entry_fails_its_object_in_part_holding_the_records_at_its_name() {
    let entries = json!([
        ep("ok.example.org", "A", &["192.0.2.1"]),
        ep("dot.example.org", "A", &["192.0.2.2."]),
        ep("ip.example.org", "A", &["not-an-address"]),
        {"dnsName": "typo.example.org", "recordType": "BOGUS", "targets": ["192.0.2.3"]}
    ]);
    let store = one_object("ns", entries);
    let evaluation = evaluation(&store);
    assert_eq!(evaluation.objects.len(), 1, "the valid entry publishes");
    assert_eq!(evaluation.objects[0].endpoints.len(), 1);
    let held = held_in_part(&evaluation.failed);
    assert!(held.keeps("dot.example.org", &RecordType::A, false));
    assert!(
        held.keeps("ip.example.org.", &RecordType::A, false),
        "an invalid address is an entry's fault too"
    );
    assert!(
        held.keeps("typo.example.org", &RecordType::Txt, false),
        "an unknown type holds every type"
    );
    assert!(!held.keeps("dot.example.org", &RecordType::Aaaa, false));
    assert!(
        !held.keeps("gone.example.org", &RecordType::A, false),
        "a removed entry's record goes"
    );
    let why = evaluation.failed.why(&test_key()).unwrap_or_default();
    for index in 1..=3 {
        assert!(why.contains(&format!("spec.endpoints[{index}] is skipped")), "{why}");
    }
    assert!(!why.contains("spec.endpoints[0]"), "{why}");
}

#[test]
fn a_bad_entry_without_a_usable_name_holds_what_the_object_no_longer_publishes() {
    let long = format!("{}.example.org", "a".repeat(64));
    for bad in [ep("", "A", &["192.0.2.2"]), ep(&long, "A", &["192.0.2.2"])] {
        let entries = json!([ep("ok.example.org", "A", &["192.0.2.1"]), bad]);
        let store = one_object("ns", entries);
        let evaluation = evaluation(&store);
        let held = held_in_part(&evaluation.failed);
        assert!(held.keeps("was.example.org", &RecordType::A, false));
        assert!(!held.keeps("ok.example.org", &RecordType::A, true));
    }
}

#[test]
fn an_object_whose_entries_are_all_valid_does_not_fail() {
    let store = one_object("ns", json!([null, ep("ok.example.org", "A", &["192.0.2.1"])]));
    assert!(evaluation(&store).failed.is_empty(), "a null entry is no error");
}

/// external-dns v0.23 (#6703): with the legacy prefix read, `--annotation-filter` on a configured-prefix key
/// admits a DNSEndpoint that sets it only under `external-dns.alpha.kubernetes.io/` (external-dns copies the
/// key on every object it caches); one prefix read, it does not.
#[test]
fn legacy_annotation_prefix_6703_the_annotation_filter_reads_legacy_keys_on_dnsendpoints() {
    let store = store_with(
        &[dns_endpoint(
            "default",
            json!({}),
            json!({"external-dns.alpha.kubernetes.io/team": "blue"}),
            json!([ep("a.example.org", "A", &["192.0.2.1"])]),
        )],
        KindOverrides::new(),
    );
    let filter = Selector::parse("external-dns.kubernetes.io/team=blue").expect("filter parses");
    let both = CrdSource::new(CrdSourceConfig {
        annotation_filter: filter.clone(),
        ..CrdSourceConfig::default()
    });
    assert_eq!(evaluate(&both, &store).len(), 1);
    let ga_only = CrdSource::new(CrdSourceConfig {
        annotation_filter: filter,
        annotations: Annotations::with_prefix("external-dns.kubernetes.io/").expect("prefix"),
        ..CrdSourceConfig::default()
    });
    assert!(evaluate(&ga_only, &store).is_empty());
}

/// `--dns-provider-crds`: a DNSEndpoint routes like any object: named, it goes to the providers it names;
/// unnamed, to every ClusterDNSProvider and the DNSProviders of its namespace; in flag mode the annotations
/// mean nothing.
#[test]
fn a_dnsendpoint_routes_like_any_object() {
    use extdns_source::ProviderRoute;
    let records = || json!([ep("a.example.org", "A", &["192.0.2.1"])]);
    let named = store_with(
        &[dns_endpoint(
            "team-a",
            json!({}),
            json!({"external-dns.kubernetes.io/cluster-provider": "public"}),
            records(),
        )],
        KindOverrides::new(),
    );
    let unnamed = one_object("team-a", records());
    let count = |store: &ClusterStore, route: Option<ProviderRoute>| {
        let config = CrdSourceConfig {
            route,
            ..CrdSourceConfig::default()
        };
        evaluate(&CrdSource::new(config), store).len()
    };
    assert_eq!(count(&named, Some(ProviderRoute::cluster("public"))), 1);
    assert_eq!(count(&named, Some(ProviderRoute::cluster("internal"))), 0);
    assert_eq!(count(&named, Some(ProviderRoute::namespaced("team-a", "public"))), 0);
    assert_eq!(count(&named, None), 1, "flag mode");
    assert_eq!(count(&unnamed, Some(ProviderRoute::namespaced("team-a", "zone"))), 1);
    assert_eq!(count(&unnamed, Some(ProviderRoute::namespaced("team-b", "zone"))), 0);
    assert_eq!(count(&unnamed, Some(ProviderRoute::cluster("internal"))), 1);
}

fn shared_marks(endpoints: &[Endpoint]) -> Vec<(String, Option<String>)> {
    let mut marks: Vec<_> = endpoints
        .iter()
        .map(|e| {
            (
                e.dns_name.clone(),
                e.provider_specific
                    .get(extdns_endpoint::shared::PROPERTY)
                    .map(str::to_string),
            )
        })
        .collect();
    marks.sort();
    marks
}

fn marked(name: &str) -> (String, Option<String>) {
    (name.to_string(), Some("true".to_string()))
}

#[test]
fn the_shared_annotation_on_the_object_marks_every_entry_under_either_prefix() {
    let entries = json!([
        ep("a.example.org", "A", &["192.0.2.1"]),
        ep("b.example.org", "A", &["192.0.2.2"])
    ]);
    for annotations in [
        json!({"external-dns.kubernetes.io/shared": "true"}),
        json!({"external-dns.alpha.kubernetes.io/shared": "true"}),
    ] {
        let store = store_with(
            &[dns_endpoint("foo", json!({}), annotations.clone(), entries.clone())],
            KindOverrides::new(),
        );
        let got = evaluate(&CrdSource::new(CrdSourceConfig::default()), &store);
        assert_eq!(
            shared_marks(&got),
            vec![marked("a.example.org"), marked("b.example.org")],
            "{annotations}"
        );
    }
}

#[test]
fn the_shared_label_on_the_object_marks_every_entry() {
    let labels = json!({"external-dns.kubernetes.io/shared": "true"});
    let entries = json!([ep("a.example.org", "A", &["192.0.2.1"])]);
    let store = store_with(&[dns_endpoint("foo", labels, json!({}), entries)], KindOverrides::new());
    let got = evaluate(&CrdSource::new(CrdSourceConfig::default()), &store);
    assert_eq!(shared_marks(&got), vec![marked("a.example.org")]);
}

#[test]
fn only_true_marks_the_object_and_an_entrys_own_mark_still_counts() {
    let mut own = ep("own.example.org", "A", &["192.0.2.1"]);
    own["providerSpecific"] = json!([{"name": "extdns/shared", "value": "true"}]);
    let entries = json!([own, ep("plain.example.org", "A", &["192.0.2.2"])]);
    let annotations = json!({"external-dns.kubernetes.io/shared": "false"});
    let store = store_with(
        &[dns_endpoint("foo", json!({}), annotations, entries)],
        KindOverrides::new(),
    );
    let got = evaluate(&CrdSource::new(CrdSourceConfig::default()), &store);
    assert_eq!(
        shared_marks(&got),
        vec![marked("own.example.org"), ("plain.example.org".to_string(), None)]
    );
}

#[test]
fn the_object_mark_follows_the_annotation_prefix_read() {
    let annotations = json!({"external-dns.alpha.kubernetes.io/shared": "true"});
    let entries = json!([ep("a.example.org", "A", &["192.0.2.1"])]);
    let store = store_with(
        &[dns_endpoint("foo", json!({}), annotations, entries)],
        KindOverrides::new(),
    );
    let config = CrdSourceConfig {
        annotations: Annotations::with_prefix("external-dns.kubernetes.io/").expect("prefix"),
        ..CrdSourceConfig::default()
    };
    let got = evaluate(&CrdSource::new(config), &store);
    assert_eq!(shared_marks(&got), vec![("a.example.org".to_string(), None)]);
}

#[test]
fn the_objects_health_check_annotations_reach_every_entry_an_entrys_own_winning() {
    use extdns_endpoint::shared::{HEALTH_CHECK, HEALTH_THRESHOLD};
    let mut own = ep("own.example.org", "A", &["192.0.2.1"]);
    own["providerSpecific"] = json!([{"name": HEALTH_CHECK, "value": "http:80/healthz"}]);
    let entries = json!([own, ep("other.example.org", "A", &["192.0.2.2"])]);
    let annotations = json!({
        "external-dns.kubernetes.io/shared": "true",
        "external-dns.alpha.kubernetes.io/shared-health-check": "tcp:443",
        "external-dns.kubernetes.io/shared-health-threshold": "2",
    });
    let store = store_with(
        &[dns_endpoint("foo", json!({}), annotations, entries)],
        KindOverrides::new(),
    );
    let mut got: Vec<(String, Option<String>, Option<String>)> =
        evaluate(&CrdSource::new(CrdSourceConfig::default()), &store)
            .iter()
            .map(|e| {
                (
                    e.dns_name.clone(),
                    e.provider_specific.get(HEALTH_CHECK).map(str::to_string),
                    e.provider_specific.get(HEALTH_THRESHOLD).map(str::to_string),
                )
            })
            .collect();
    got.sort();
    let some = |s: &str| Some(s.to_string());
    assert_eq!(
        got,
        vec![
            ("other.example.org".to_string(), some("tcp:443"), some("2")),
            ("own.example.org".to_string(), some("http:80/healthz"), some("2")),
        ]
    );
}
