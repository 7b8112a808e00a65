//! The node source's rules, one test each, after external-dns v0.23's `source/node_test.go` and
//! `node_fqdn_test.go` tables, then extdns's own (failing Nodes, incremental evaluation).
//!
//! Each Node is written as the JSON an API server would hold and loaded through the manifest loader (the
//! same ingest path as the live informer), so the conversion is under test too.

use std::path::Path;

use extdns_informer::manifests::{Format, Loader};
use extdns_informer::{ChangeSet, ClusterStore, LoadOptions, ObjectKey, ResourceKind};
use extdns_source::pipeline::testing::{
    FakeMeta, Fixture, check_against_full, check_reads_only_itself, evaluate_ok, ga, kept_fields, load,
    rendered_labelled,
};
use extdns_source::template::TemplateKind;
use extdns_source::{Pipeline, PipelineConfig, Source, SourceExt, SourceOutput};
use serde_json::{Value, json};

use super::*;

/// One Node as the API server holds it.
#[derive(Clone, Default)]
struct Fake {
    meta: FakeMeta,
    addresses: Vec<(&'static str, &'static str)>,
    unschedulable: bool,
}

extdns_source::fixture!(Fake);

impl Fake {
    fn new(name: &'static str) -> Fake {
        Fake::named(name, "")
    }
    fn external(mut self, a: &'static str) -> Self {
        self.addresses.push(("ExternalIP", a));
        self
    }
    fn internal(mut self, a: &'static str) -> Self {
        self.addresses.push(("InternalIP", a));
        self
    }
    fn cordoned(mut self) -> Self {
        self.unschedulable = true;
        self
    }
    fn json(&self) -> Value {
        let addresses: Vec<Value> = self
            .addresses
            .iter()
            .map(|(t, a)| json!({"type": t, "address": a}))
            .collect();
        json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": self.meta.json(),
            "spec": {"unschedulable": self.unschedulable, "providerID": format!("fake://{}", self.meta.name)},
            "status": {"addresses": addresses},
        })
    }
}

/// The flags a case sets.
/// The node source's own flags a case sets.
#[derive(Default)]
struct Own {
    include_unschedulable: bool,
    expose_internal_ipv6: bool,
}

type Flags = extdns_source::pipeline::testing::Flags<Own>;

fn source(f: &Flags) -> NodeSource {
    let mut config = NodeSourceConfig::new(f.config());
    config.fqdn_target_template = f.target_template();
    config.exclude_unschedulable = !f.source.include_unschedulable;
    config.expose_internal_ipv6 = f.source.expose_internal_ipv6;
    NodeSource::new(config)
}

/// A store holding `nodes`, keeping the fields `src`'s templates read.
fn cluster(src: &NodeSource, nodes: &[Fake]) -> ClusterStore {
    let mut options = LoadOptions::default();
    options.template_fields = kept_fields(
        TemplateKind::Node,
        src.config.common.fqdn_template.as_deref(),
        src.config.fqdn_target_template.as_deref(),
    );
    load(&nodes.iter().map(Fake::json).collect::<Vec<_>>(), options)
}

fn evaluate(flags: &Flags, nodes: &[Fake]) -> SourceOutput {
    let src = source(flags);
    let store = cluster(&src, nodes);
    futures::executor::block_on(src.evaluate_all(&store)).expect("evaluates")
}

/// The records `flags` make of `nodes`, rendered with their `resource` label and sorted; no Node may fail.
fn records(flags: Flags, nodes: &[Fake]) -> Vec<String> {
    let src = source(&flags);
    rendered_labelled(&evaluate_ok(&src, &cluster(&src, nodes)))
}

fn none() -> Flags {
    Flags::default()
}

#[test]
fn a_node_publishes_its_own_name_at_its_external_address_naming_itself() {
    assert_eq!(
        records(none(), &[Fake::new("node1").external("1.2.3.4")]),
        ["node1 A 1.2.3.4 resource=node/node1"]
    );
    assert_eq!(
        records(none(), &[Fake::new("node1.example.org").external("2001:db8::8")]),
        ["node1.example.org AAAA 2001:db8::8 resource=node/node1.example.org"]
    );
}

#[test]
fn external_addresses_win_and_internal_ipv6_joins_only_when_exposed() {
    let node = || {
        Fake::new("node1")
            .external("1.2.3.4")
            .external("2001:db8::8")
            .internal("2.3.4.5")
            .internal("2001:db8::9")
    };
    assert_eq!(
        records(none(), &[node()]),
        [
            "node1 A 1.2.3.4 resource=node/node1",
            "node1 AAAA 2001:db8::8 resource=node/node1"
        ]
    );
    let exposed = Flags::own(Own {
        expose_internal_ipv6: true,
        ..Own::default()
    });
    assert_eq!(
        records(exposed, &[node()]),
        [
            "node1 A 1.2.3.4 resource=node/node1",
            "node1 AAAA 2001:db8::8,2001:db8::9 resource=node/node1"
        ]
    );
}

#[test]
fn without_an_external_address_the_internal_ones_are_published_ipv6_included() {
    let node = Fake::new("node1").internal("2.3.4.5").internal("2001:db8::9");
    assert_eq!(
        records(none(), std::slice::from_ref(&node)),
        [
            "node1 A 2.3.4.5 resource=node/node1",
            "node1 AAAA 2001:db8::9 resource=node/node1"
        ]
    );
}

#[test]
fn the_target_annotation_replaces_the_addresses() {
    let node = Fake::new("node1.example.org")
        .external("1.2.3.4")
        .ann(ga("target"), "203.2.45.7");
    assert_eq!(
        records(none(), &[node]),
        ["node1.example.org A 203.2.45.7 resource=node/node1.example.org"]
    );
}

#[test]
fn the_ttl_annotation_sets_the_ttl_and_an_invalid_one_leaves_it_unset() {
    let valid = Fake::new("node1").external("1.2.3.4").ann(ga("ttl"), "10");
    assert_eq!(
        records(none(), &[valid]),
        ["node1 A 1.2.3.4 ttl=10 resource=node/node1"]
    );
    let invalid = Fake::new("node1").external("1.2.3.4").ann(ga("ttl"), "foo");
    assert_eq!(records(none(), &[invalid]), ["node1 A 1.2.3.4 resource=node/node1"]);
}

#[test]
fn the_hostname_annotation_is_not_read_on_nodes() {
    let node = Fake::new("node1")
        .external("1.2.3.4")
        .ann(ga("hostname"), "worker-1.example.org");
    assert_eq!(records(none(), &[node]), ["node1 A 1.2.3.4 resource=node/node1"]);
}

#[test]
fn unschedulable_nodes_are_excluded_unless_asked_for() {
    let nodes = [
        Fake::new("node1").external("1.2.3.4").cordoned(),
        Fake::new("node2").external("1.2.3.5"),
    ];
    assert_eq!(records(none(), &nodes), ["node2 A 1.2.3.5 resource=node/node2"]);
    let included = Flags::own(Own {
        include_unschedulable: true,
        ..Own::default()
    });
    assert_eq!(
        records(included, &nodes),
        [
            "node1 A 1.2.3.4 resource=node/node1",
            "node2 A 1.2.3.5 resource=node/node2"
        ]
    );
}

#[test]
fn the_label_and_annotation_filters_and_the_controller_annotation_admit_nodes() {
    const KEY: &str = "service.beta.kubernetes.io/external-traffic";
    const FILTER: &str = "service.beta.kubernetes.io/external-traffic in (Global, OnlyLocal)";
    let labelled = |v| Fake::new("node1").external("1.2.3.4").label(KEY, v);
    let annotated = |v| Fake::new("node1").external("1.2.3.4").ann(KEY, v);
    let by_label = || Flags {
        label_filter: FILTER,
        ..none()
    };
    let by_annotation = || Flags {
        annotation_filter: FILTER,
        ..none()
    };
    assert_eq!(records(by_label(), &[labelled("OnlyLocal")]).len(), 1);
    assert!(records(by_label(), &[labelled("SomethingElse")]).is_empty());
    assert_eq!(records(by_annotation(), &[annotated("OnlyLocal")]).len(), 1);
    assert!(records(by_annotation(), &[annotated("SomethingElse")]).is_empty());
    let ours = Fake::new("node1")
        .external("1.2.3.4")
        .ann(ga("controller"), "dns-controller");
    let theirs = Fake::new("node2")
        .external("1.2.3.5")
        .ann(ga("controller"), "not-dns-controller");
    assert_eq!(
        records(none(), &[ours, theirs]),
        ["node1 A 1.2.3.4 resource=node/node1"]
    );
}

#[test]
fn the_namespace_flag_does_not_scope_nodes() {
    let scoped = Flags {
        namespace: Some("team-a"),
        ..none()
    };
    assert_eq!(
        records(scoped, &[Fake::new("node1").external("1.2.3.4")]),
        ["node1 A 1.2.3.4 resource=node/node1"]
    );
}

#[test]
fn the_fqdn_template_replaces_the_node_name() {
    let flags = Flags {
        fqdn_template: Some("{{.Name}}.example.org"),
        ..none()
    };
    let node = Fake::new("node1").external("1.2.3.4").external("2001:db8::8");
    assert_eq!(
        records(flags, &[node]),
        [
            "node1.example.org A 1.2.3.4 resource=node/node1",
            "node1.example.org AAAA 2001:db8::8 resource=node/node1"
        ]
    );
}

#[test]
fn combine_publishes_the_node_name_and_the_template_names() {
    let flags = Flags {
        fqdn_template: Some("{{.Name}}.example.org"),
        combine: true,
        ..none()
    };
    assert_eq!(
        records(flags, &[Fake::new("node1").external("1.2.3.4")]),
        [
            "node1 A 1.2.3.4 resource=node/node1",
            "node1.example.org A 1.2.3.4 resource=node/node1"
        ]
    );
}

#[test]
fn a_template_reads_node_fields_beyond_the_view() {
    let flags = Flags {
        fqdn_template: Some(
            r#"{{.Name}}.{{index .Labels "zone"}}.example.org,{{trimPrefix .Spec.ProviderID "fake://"}}.id.example.org,{{range .Status.Addresses}}{{if eq .Type "InternalIP"}}{{.Address | replace "." "-"}}.ip.example.org{{end}}{{end}}"#,
        ),
        ..none()
    };
    let node = Fake::new("node1")
        .external("1.2.3.4")
        .internal("10.0.0.1")
        .label("zone", "eu");
    assert_eq!(
        records(flags, &[node]),
        [
            "10-0-0-1.ip.example.org A 1.2.3.4 resource=node/node1",
            "node1.eu.example.org A 1.2.3.4 resource=node/node1",
            "node1.id.example.org A 1.2.3.4 resource=node/node1"
        ]
    );
}

#[test]
fn is_source_selects_the_node_source() {
    let flags = Flags {
        fqdn_template: Some(r#"{{if isSource "node"}}{{.Name}}.node.example.com{{end}}"#),
        ..none()
    };
    assert_eq!(
        records(flags, &[Fake::new("node1").external("1.2.3.4")]),
        ["node1.node.example.com A 1.2.3.4 resource=node/node1"]
    );
}

#[test]
fn the_fqdn_target_template_publishes_pairs_without_the_node_name_or_a_resource_label() {
    let flags = Flags {
        fqdn_target_template: Some(
            r#"{{.Name}}.example.org:{{range .Status.Addresses}}{{if eq .Type "InternalIP"}}{{.Address}}{{end}}{{end}},broken"#,
        ),
        ..none()
    };
    assert_eq!(
        records(flags, &[Fake::new("node1").external("1.2.3.4").internal("10.0.0.1")]),
        ["node1.example.org A 10.0.0.1"]
    );
}

#[test]
fn a_template_that_gives_no_name_publishes_nothing() {
    let flags = Flags {
        fqdn_template: Some(r#"{{if eq .Name "other"}}x.example.org{{end}}"#),
        ..none()
    };
    assert!(records(flags, &[Fake::new("node1").external("1.2.3.4")]).is_empty());
}

#[test]
fn nodes_given_one_name_share_its_record() {
    let flags = Flags {
        fqdn_template: Some("workers.example.org"),
        ..none()
    };
    assert_eq!(
        records(
            flags,
            &[
                Fake::new("node1").external("1.2.3.4"),
                Fake::new("node2").external("1.2.3.5")
            ]
        ),
        ["workers.example.org A 1.2.3.4,1.2.3.5 resource=node/node1"]
    );
}

/// A name whose one label is 64 characters, one too many.
const LONG_LABEL: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

#[test]
fn a_node_without_addresses_or_with_an_invalid_name_fails_alone_and_keeps_its_records() {
    let nodes = [
        Fake::new("bare"),
        Fake::new(LONG_LABEL).external("1.2.3.4"),
        Fake::new("ok").external("1.2.3.5"),
    ];
    let out = evaluate(&none(), &nodes);
    let bare = ObjectKey::new(ResourceKind::Node, "", "bare");
    assert!(out.failed.contains(&bare), "{:?}", out.failed);
    assert!(
        out.failed
            .why(&bare)
            .is_some_and(|w| w.contains("no ExternalIP or InternalIP"))
    );
    assert_eq!(out.failed.len(), 2, "{:?}", out.failed);
    let names: Vec<&str> = out.endpoints.iter().map(|e| e.dns_name.as_str()).collect();
    assert_eq!(names, ["ok"]);
}

#[test]
fn a_failing_template_fails_its_node_alone() {
    let flags = Flags {
        fqdn_template: Some("{{.Spec.Nope}}.example.org"),
        ..none()
    };
    let src = source(&flags);
    // The template reads a field no Node has: refused when the fields are computed, so run it without.
    let mut loader = Loader::new(LoadOptions::default());
    loader
        .add_str(
            &Fake::new("node1").external("1.2.3.4").json().to_string(),
            Path::new("n.json"),
            Format::Json,
        )
        .expect("loads");
    let store = loader.finish().store;
    let out = futures::executor::block_on(src.evaluate_all(&store)).expect("evaluates");
    assert!(out.failed.contains(&ObjectKey::new(ResourceKind::Node, "", "node1")));
    assert!(out.endpoints.is_empty());
}

#[test]
fn a_change_re_evaluates_only_the_changed_node() {
    let src = source(&none());
    let before = cluster(
        &src,
        &[Fake::new("a").external("1.2.3.4"), Fake::new("b").external("1.2.3.5")],
    );
    let after = cluster(
        &src,
        &[Fake::new("a").external("1.2.3.9"), Fake::new("b").external("1.2.3.5")],
    );
    let a = ObjectKey::new(ResourceKind::Node, "", "a");
    let changes = ChangeSet::of(a.clone());
    // A Service change re-evaluates no Node.
    check_reads_only_itself(&src, &after, &a, &ObjectKey::new(ResourceKind::Service, "ns", "a"));
    let pipeline = Pipeline::new(vec![Box::new(src)], PipelineConfig::default());
    let changed = futures::executor::block_on(check_against_full(
        &pipeline,
        &before,
        &after,
        &changes,
        "a node's address",
    ));
    assert!(changed.names.contains("a"), "{:?}", changed.names);
}

#[test]
fn the_source_watches_nodes_only_and_reads_no_kind_whole() {
    let src = source(&none());
    assert_eq!(src.watched_kinds(), [ResourceKind::Node]);
    assert!(src.reads_whole().is_empty());
}
