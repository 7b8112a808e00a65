//! The pod source's rules, one test each, after external-dns v0.23's `source/pod_test.go` and
//! `pod_fqdn_test.go` tables, then extdns's own (failing Pods, incremental evaluation).
//!
//! Pods and Nodes are written as the JSON an API server would hold and loaded through the manifest loader
//! (the same ingest path as the live informer: Pods keep only the annotations under the read prefixes).

use std::collections::BTreeSet;

use extdns_informer::{ChangeSet, ClusterStore, LoadOptions, ObjectKey, PodAnnotationPrefixes, ResourceKind};
use extdns_source::annotations::{PREFIX_ALPHA, PREFIX_GA, kops};
use extdns_source::pipeline::testing::{
    FakeMeta, Fixture, alpha, check_against_full, check_fails_alone, evaluate_ok, evaluated_objects, ga, kept_fields,
    load, rendered,
};
use extdns_source::template::TemplateKind;
use extdns_source::{Pipeline, PipelineConfig, Source, SourceExt, SourceOutput};
use serde_json::{Value, json};

use super::*;

const NS: &str = "kube-system";

/// One Pod as the API server holds it.
#[derive(Clone, Default)]
struct Fake {
    meta: FakeMeta,
    ips: Vec<&'static str>,
    node: Option<&'static str>,
    host_network: bool,
}

extdns_source::fixture!(Fake);

impl Fake {
    fn new(name: &'static str, ip: &'static str) -> Fake {
        Fake {
            meta: FakeMeta::new(name, NS),
            ips: vec![ip],
            node: Some("my-node1"),
            host_network: true,
        }
    }
    fn ips(mut self, ips: &[&'static str]) -> Self {
        self.ips = ips.to_vec();
        self
    }
    fn pod_network(mut self) -> Self {
        self.host_network = false;
        self
    }
    fn on(mut self, node: &'static str) -> Self {
        self.node = Some(node);
        self
    }
    fn json(&self) -> Value {
        let mut status =
            json!({"phase": "Running", "podIPs": self.ips.iter().map(|ip| json!({"ip": ip})).collect::<Vec<_>>()});
        if let Some(first) = self.ips.first() {
            status["podIP"] = json!(first);
        }
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": self.meta.json(),
            "spec": {"hostNetwork": self.host_network, "nodeName": self.node, "serviceAccountName": "agent"},
            "status": status,
        })
    }
}

/// A Node with addresses `(type, address)`.
fn node(name: &str, addresses: &[(&str, &str)]) -> Value {
    let addresses: Vec<Value> = addresses
        .iter()
        .map(|(t, a)| json!({"type": t, "address": a}))
        .collect();
    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": {"addresses": addresses}})
}

/// The two Nodes of external-dns's table: one with public addresses (an IPv4 and an IPv6 `ExternalIP`, an
/// IPv6 `InternalIP`), one with an internal IPv4 address only.
fn nodes() -> Vec<Value> {
    vec![
        node(
            "my-node1",
            &[
                ("ExternalIP", "54.10.11.1"),
                ("InternalIP", "10.0.1.1"),
                ("InternalIP", "2001:db8::1"),
                ("ExternalIP", "2001:db8::9"),
            ],
        ),
        node("my-node2", &[("InternalIP", "10.0.1.2")]),
    ]
}

/// The flags a case sets.
/// The pod source's own flags a case sets.
#[derive(Default)]
struct Own {
    ignore_non_host_network: bool,
    domain: Option<&'static str>,
    kops: bool,
}

type Flags = extdns_source::pipeline::testing::Flags<Own>;

fn source(f: &Flags) -> PodSource {
    let mut config = PodSourceConfig::new(f.config());
    config.fqdn_target_template = f.target_template();
    config.ignore_non_host_network_pods = f.source.ignore_non_host_network;
    config.pod_source_domain = f.source.domain.map(String::from);
    config.kops_dns_controller = f.source.kops;
    PodSource::new(config)
}

/// A store holding `pods` and `nodes`, keeping what the binary keeps for `src`.
fn cluster(src: &PodSource, pods: &[Fake], nodes: &[Value]) -> ClusterStore {
    let mut options = LoadOptions::default();
    options.template_fields = kept_fields(
        TemplateKind::Pod,
        src.config.common.fqdn_template.as_deref(),
        src.config.fqdn_target_template.as_deref(),
    );
    // What the binary keeps of a Pod's annotations for the pod source: the read prefixes, kOps's and the
    // annotation filter's keys.
    let mut keep = vec![
        PREFIX_GA.to_string(),
        PREFIX_ALPHA.to_string(),
        "dns.alpha.kubernetes.io/".into(),
    ];
    keep.extend(src.config.common.annotation_filter.keys().map(String::from));
    options.pod_annotation_prefixes = PodAnnotationPrefixes::new(keep);
    let objects: Vec<Value> = pods.iter().map(Fake::json).chain(nodes.iter().cloned()).collect();
    load(&objects, options)
}

fn evaluate(flags: &Flags, pods: &[Fake]) -> SourceOutput {
    let src = source(flags);
    let store = cluster(&src, pods, &nodes());
    futures::executor::block_on(src.evaluate_all(&store)).expect("evaluates")
}

/// The records `flags` make of `pods`, rendered and sorted; no Pod may fail.
fn records(flags: Flags, pods: &[Fake]) -> Vec<String> {
    let src = source(&flags);
    rendered(&evaluate_ok(&src, &cluster(&src, pods, &nodes())))
}

fn none() -> Flags {
    Flags::default()
}

#[test]
fn the_internal_hostname_publishes_the_pod_ips() {
    let pods = [
        Fake::new("my-pod1", "10.0.1.1").ann(alpha("internal-hostname"), "internal.a.foo.example.org"),
        Fake::new("my-pod2", "10.0.1.2").ann(alpha("internal-hostname"), "internal.a.foo.example.org"),
    ];
    assert_eq!(
        records(none(), &pods),
        ["internal.a.foo.example.org A 10.0.1.1,10.0.1.2"]
    );
}

#[test]
fn the_internal_hostname_of_an_ipv6_pod_is_an_aaaa_record() {
    let pod = Fake::new("my-pod1", "2001:db8::1").ann(ga("internal-hostname"), "internal.a.foo.example.org");
    assert_eq!(records(none(), &[pod]), ["internal.a.foo.example.org AAAA 2001:db8::1"]);
}

#[test]
fn the_hostname_publishes_the_public_addresses_of_the_pods_node() {
    let pods = [
        Fake::new("my-pod1", "10.0.1.1").ann(ga("hostname"), "a.foo.example.org"),
        Fake::new("my-pod2", "10.0.1.2")
            .on("my-node2")
            .ann(ga("hostname"), "a.foo.example.org"),
    ];
    // my-node2 has only an internal IPv4 address: nothing public to add.
    assert_eq!(
        records(none(), &pods),
        [
            "a.foo.example.org A 54.10.11.1",
            "a.foo.example.org AAAA 2001:db8::1,2001:db8::9"
        ]
    );
}

#[test]
fn the_hostname_of_a_pod_whose_node_is_unknown_publishes_nothing_yet() {
    let pod = Fake::new("my-pod1", "10.0.1.1")
        .on("gone")
        .ann(ga("hostname"), "a.foo.example.org");
    assert!(records(none(), &[pod]).is_empty());
}

#[test]
fn the_target_annotation_replaces_the_addresses_of_both_hostnames() {
    let pod = Fake::new("my-pod1", "10.0.1.1")
        .ann(ga("hostname"), "a.foo.example.org")
        .ann(ga("internal-hostname"), "internal.foo.example.org")
        .ann(ga("target"), "208.1.2.1,lb.example.org");
    assert_eq!(
        records(none(), &[pod]),
        [
            "a.foo.example.org A 208.1.2.1",
            "a.foo.example.org CNAME lb.example.org",
            "internal.foo.example.org A 208.1.2.1",
            "internal.foo.example.org CNAME lb.example.org"
        ]
    );
}

#[test]
fn the_ttl_annotation_sets_the_ttl_of_every_record_of_the_pod() {
    let pod = Fake::new("my-pod1", "10.0.1.1")
        .ann(ga("internal-hostname"), "internal.foo.example.org")
        .ann(ga("ttl"), "1m");
    assert_eq!(records(none(), &[pod]), ["internal.foo.example.org A 10.0.1.1 ttl=60"]);
}

#[test]
fn non_host_network_pods_publish_unless_ignored() {
    let pod = || {
        Fake::new("my-pod1", "100.0.1.1")
            .pod_network()
            .ann(ga("internal-hostname"), "internal.foo.example.org")
    };
    assert_eq!(records(none(), &[pod()]), ["internal.foo.example.org A 100.0.1.1"]);
    let ignoring = Flags::own(Own {
        ignore_non_host_network: true,
        ..Own::default()
    });
    assert!(records(ignoring, &[pod()]).is_empty());
}

#[test]
fn the_pod_source_domain_publishes_each_pod_by_name() {
    let flags = || {
        Flags::own(Own {
            domain: Some("example.org"),
            ..Own::default()
        })
    };
    assert_eq!(
        records(
            flags(),
            &[Fake::new("my-pod1", "10.0.1.1"), Fake::new("my-pod2", "10.0.1.2")]
        ),
        ["my-pod1.example.org A 10.0.1.1", "my-pod2.example.org A 10.0.1.2"]
    );
    let targeted = Fake::new("my-pod1", "10.0.1.1").ann(ga("target"), "208.1.2.1");
    assert_eq!(records(flags(), &[targeted]), ["my-pod1.example.org A 208.1.2.1"]);
}

#[test]
fn kops_annotations_count_only_in_kops_compatibility() {
    let pod = || {
        Fake::new("my-pod1", "10.0.1.1")
            .ann(kops::INTERNAL, "internal.a.foo.example.org")
            .ann(kops::EXTERNAL, "a.foo.example.org")
            .ann(ga("target"), "208.1.2.1")
    };
    assert!(records(none(), &[pod()]).is_empty(), "a target alone names nothing");
    let kops = Flags::own(Own {
        kops: true,
        ..Own::default()
    });
    assert_eq!(
        records(kops, &[pod()]),
        [
            "a.foo.example.org A 54.10.11.1",
            "a.foo.example.org AAAA 2001:db8::1,2001:db8::9",
            "internal.a.foo.example.org A 10.0.1.1"
        ],
        "kOps's names ignore the target annotation"
    );
}

#[test]
fn the_filters_and_the_namespace_admit_pods() {
    let pod = |name, ns| {
        Fake::new(name, "10.0.1.1")
            .ns(ns)
            .ann(ga("internal-hostname"), "internal.foo.example.org")
    };
    let scoped = Flags {
        namespace: Some("kube-system"),
        ..none()
    };
    assert_eq!(
        records(
            scoped,
            &[pod("a", "kube-system"), pod("b", "default").ips(&["10.0.1.2"])]
        ),
        ["internal.foo.example.org A 10.0.1.1"]
    );
    let labelled = Flags {
        label_filter: "app=agent",
        ..none()
    };
    assert_eq!(
        records(
            labelled,
            &[pod("a", NS).label("app", "agent"), pod("b", NS).ips(&["10.0.1.2"])]
        ),
        ["internal.foo.example.org A 10.0.1.1"]
    );
    let annotated = Flags {
        annotation_filter: "team.example.org/dns in (public)",
        ..none()
    };
    assert_eq!(
        records(
            annotated,
            &[
                pod("a", NS).ann("team.example.org/dns", "public"),
                pod("b", NS).ips(&["10.0.1.2"]).ann("team.example.org/dns", "private")
            ]
        ),
        ["internal.foo.example.org A 10.0.1.1"]
    );
    let theirs = pod("c", NS).ann(ga("controller"), "other");
    assert!(records(none(), &[theirs]).is_empty());
}

#[test]
fn the_fqdn_template_publishes_each_name_at_every_pod_ip() {
    let flags = Flags {
        fqdn_template: Some("{{ .Name }}.{{ .Namespace }}.example.org"),
        ..none()
    };
    let pods = [
        Fake::new("pod-1", "100.67.94.101").ips(&["100.67.94.101", "2041:0000:140F::875B:131B"]),
        Fake::new("pod-2", "100.67.94.102").ns("default"),
        Fake::new("pod-3", "").ips(&[]),
    ];
    assert_eq!(
        records(flags, &pods),
        [
            "pod-1.kube-system.example.org A 100.67.94.101",
            "pod-1.kube-system.example.org AAAA 2041:0000:140F::875B:131B",
            "pod-2.default.example.org A 100.67.94.102"
        ]
    );
}

#[test]
fn the_fqdn_template_runs_only_when_the_annotations_gave_nothing_unless_combined() {
    let pod = || Fake::new("pod-1", "100.67.94.101").ann(ga("internal-hostname"), "annotated.example.com");
    let alone = Flags {
        fqdn_template: Some("{{ .Name }}.tmpl.example.com"),
        ..none()
    };
    assert_eq!(records(alone, &[pod()]), ["annotated.example.com A 100.67.94.101"]);
    let combined = Flags {
        fqdn_template: Some("{{ .Name }}.tmpl.example.com"),
        combine: true,
        source: Own {
            domain: Some("example.org"),
            ..Own::default()
        },
        ..none()
    };
    assert_eq!(
        records(combined, &[pod()]),
        [
            "annotated.example.com A 100.67.94.101",
            "pod-1.example.org A 100.67.94.101",
            "pod-1.tmpl.example.com A 100.67.94.101"
        ]
    );
}

#[test]
fn a_template_reads_pod_fields_and_annotations_beyond_the_view() {
    let flags = Flags {
        fqdn_template: Some(
            r#"{{ .Name }}.{{ .Annotations.workload }}.{{ .Spec.ServiceAccountName }}.{{ index .ObjectMeta.Labels "topology.kubernetes.io/region" }}.{{ .Kind | toLower }}.tld"#,
        ),
        ..none()
    };
    let pod = Fake::new("pod-1", "100.67.94.101")
        .ann("workload", "cluster-resources")
        .label("topology.kubernetes.io/region", "eu-west-1a");
    assert_eq!(
        records(flags, &[pod]),
        ["pod-1.cluster-resources.agent.eu-west-1a.pod.tld A 100.67.94.101"]
    );
}

#[test]
fn the_fqdn_target_template_publishes_pairs_and_skips_items_without_a_colon() {
    let flags = Flags {
        fqdn_target_template: Some(
            "{{.Name}}.example.com:1.2.3.4,{{.Name}}.lb.example.com:lb.example.com,{{.Name}}.{{.APIVersion}}.broken",
        ),
        ..none()
    };
    assert_eq!(
        records(flags, &[Fake::new("pod-1", "100.67.94.101")]),
        [
            "pod-1.example.com A 1.2.3.4",
            "pod-1.lb.example.com CNAME lb.example.com"
        ]
    );
}

#[test]
fn the_fqdn_target_template_adds_to_the_annotations_only_when_combined() {
    let pod = || Fake::new("pod-1", "100.67.94.101").ann(ga("internal-hostname"), "annotated.example.com");
    let flags = |combine| Flags {
        fqdn_target_template: Some("{{.Name}}.tmpl.example.com:lb.example.com"),
        combine,
        ..none()
    };
    assert_eq!(
        records(flags(false), &[pod()]),
        ["annotated.example.com A 100.67.94.101"]
    );
    assert_eq!(
        records(flags(true), &[pod()]),
        [
            "annotated.example.com A 100.67.94.101",
            "pod-1.tmpl.example.com CNAME lb.example.com"
        ]
    );
}

#[test]
fn pod_records_name_no_resource_but_refer_to_their_pod() {
    let pod = Fake::new("my-pod1", "10.0.1.1").ann(ga("internal-hostname"), "internal.foo.example.org");
    let out = evaluate(&none(), &[pod]);
    let [e] = out.endpoints.as_slice() else {
        panic!("one record: {:?}", out.endpoints);
    };
    assert_eq!(e.resource(), None);
    assert!(
        e.ref_objects
            .iter()
            .any(|o| **o == ObjectKey::new(ResourceKind::Pod, NS, "my-pod1"))
    );
}

#[test]
fn a_pod_with_an_invalid_name_fails_alone() {
    let pods = [
        Fake::new("bad", "10.0.1.1").ann(
            ga("internal-hostname"),
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.example.org",
        ),
        Fake::new("ok", "10.0.1.2").ann(ga("internal-hostname"), "ok.example.org"),
    ];
    let src = source(&none());
    let store = cluster(&src, &pods, &nodes());
    check_fails_alone(
        &src,
        &store,
        &ObjectKey::new(ResourceKind::Pod, NS, "bad"),
        &["ok.example.org"],
    );
}

#[test]
fn a_changed_pod_or_node_re_evaluates_the_pods_it_touches() {
    let src = source(&none());
    let pods = [
        Fake::new("a", "10.0.1.1").ann(ga("hostname"), "a.example.org"),
        Fake::new("b", "10.0.1.2")
            .on("my-node2")
            .ann(ga("internal-hostname"), "b.example.org"),
    ];
    let before = cluster(&src, &pods, &nodes());
    let moved = [node("my-node1", &[("ExternalIP", "54.10.11.2")]), nodes()[1].clone()];
    let after = cluster(&src, &pods, &moved);
    let a = ObjectKey::new(ResourceKind::Pod, NS, "a");
    let b = ObjectKey::new(ResourceKind::Pod, NS, "b");
    let node1 = ObjectKey::new(ResourceKind::Node, "", "my-node1");
    assert_eq!(
        src.affected(&after, &ChangeSet::of(b.clone())),
        Some(BTreeSet::from([b.clone()]))
    );
    assert_eq!(
        src.affected(&after, &ChangeSet::of(node1.clone())),
        Some(BTreeSet::from([a.clone()]))
    );
    assert_eq!(evaluated_objects(&src, &after, &[&a]), std::slice::from_ref(&a));
    let pipeline = Pipeline::new(vec![Box::new(src)], PipelineConfig::default());
    let changed = futures::executor::block_on(check_against_full(
        &pipeline,
        &before,
        &after,
        &ChangeSet::of(node1),
        "the node of a pod's hostname",
    ));
    assert!(changed.names.contains("a.example.org"), "{:?}", changed.names);
}

#[test]
fn the_source_reads_every_pod_and_the_nodes() {
    let src = source(&none());
    assert_eq!(src.watched_kinds(), [ResourceKind::Pod, ResourceKind::Node]);
    assert_eq!(src.reads_whole(), [ResourceKind::Pod]);
}

/// Pod records name no object, so the controller could not hold the records of the Pods that failed: the
/// whole source fails instead and the sync plans nothing, rather than deleting `a.example.org`.
#[test]
fn without_access_to_nodes_needed_by_a_pod_the_source_fails_and_nothing_is_planned() {
    let src = source(&none());
    let pods = [
        Fake::new("needs-node", "10.0.1.1").ann(ga("hostname"), "a.example.org"),
        Fake::new("own-ip", "10.0.1.2").ann(ga("internal-hostname"), "b.example.org"),
    ];
    let store = cluster(&src, &pods, &[]);
    store.set_unavailable(
        ResourceKind::Node,
        Some(extdns_informer::Unavailable {
            reason: extdns_informer::UnavailableReason::Forbidden,
            api_version: "v1".into(),
            status: 403,
            missing: "RBAC rule".into(),
        }),
    );
    let err = futures::executor::block_on(src.evaluate_all(&store))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("Node unavailable"), "{err}");
}
