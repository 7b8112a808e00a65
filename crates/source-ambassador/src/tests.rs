//! external-dns v0.23.0's `source/ambassador_host_test.go` rules, one test per behaviour, then extdns's
//! own: the rules its test table leaves out, incremental evaluation, the merge.
//!
//! Each Host and Service is written as the JSON an API server would hold, loaded through the manifest
//! loader (the same ingest path as the live informer), so the conversion is under test too. The harness is
//! this one module: [`run`] over [`Fake`] Hosts and [`svc`] Services.

use std::collections::BTreeSet;
use std::path::Path;

use extdns_informer::manifests::{Format, Loader};
use extdns_informer::view::AMBASSADOR_SERVICE_ANNOTATION;
use extdns_informer::{ChangeSet, ClusterStore, LoadOptions, ObjectKey, ResourceKind};
use extdns_source::annotations::PREFIX_ALPHA;
use extdns_source::pipeline::testing::{
    Flags, evaluated_objects, ga, load_balancer_service, metadata, rendered_labelled,
};
use extdns_source::{Source, SourceExt};
use serde_json::{Value, json};

use super::*;

const NS: &str = "default";
/// external-dns's test Service: `emissary/emissary-ingress`, the name Emissary's chart gives it.
const SVC: &str = "emissary/emissary-ingress";
const R: &str = "resource=host/default";

/// One Host as written.
#[derive(Clone)]
struct Fake {
    name: &'static str,
    namespace: &'static str,
    annotations: Vec<(String, &'static str)>,
    labels: Vec<(&'static str, &'static str)>,
    hostname: Option<&'static str>,
}

impl Fake {
    /// A Host named `name` serving www.example.org through [`SVC`].
    fn new(name: &'static str) -> Fake {
        Fake {
            name,
            namespace: NS,
            annotations: vec![(AMBASSADOR_SERVICE_ANNOTATION.to_string(), SVC)],
            labels: Vec::new(),
            hostname: Some("www.example.org"),
        }
    }
    fn ns(mut self, ns: &'static str) -> Self {
        self.namespace = ns;
        self
    }
    fn hostname(mut self, h: Option<&'static str>) -> Self {
        self.hostname = h;
        self
    }
    fn ann(mut self, key: impl Into<String>, value: &'static str) -> Self {
        let key = key.into();
        self.annotations.retain(|(k, _)| *k != key);
        self.annotations.push((key, value));
        self
    }
    fn without_service(mut self) -> Self {
        self.annotations.retain(|(k, _)| k != AMBASSADOR_SERVICE_ANNOTATION);
        self
    }
    fn label(mut self, k: &'static str, v: &'static str) -> Self {
        self.labels.push((k, v));
        self
    }

    fn json(&self) -> Value {
        let mut host = json!({
            "apiVersion": "getambassador.io/v3alpha1",
            "kind": "Host",
            "metadata": metadata(self.name, self.namespace, &self.annotations, &self.labels),
        });
        if let Some(h) = self.hostname {
            host["spec"] = json!({"hostname": h, "ambassador_id": ["default"]});
        }
        host
    }
}

/// A LoadBalancer Service `namespace/name` with `external_ips` and load balancer `ingress` entries (IPs and
/// hostnames told apart by the parse).
fn svc(namespace: &str, name: &str, external_ips: &[&str], ingress: &[&str]) -> Value {
    let mut service = load_balancer_service(namespace, name, ingress);
    service["spec"]["externalIPs"] = json!(external_ips);
    service
}

/// external-dns's test Service with the load balancer address 1.1.1.1.
fn emissary() -> Value {
    svc("emissary", "emissary-ingress", &[], &["1.1.1.1"])
}

/// The source under `flags` over a store holding what the live informer would: with `--namespace`, only
/// the Hosts and Services of that namespace are watched, so only they are loaded.
fn source_and_store(flags: &Flags, hosts: &[Fake], services: &[Value]) -> (AmbassadorHostSource, ClusterStore) {
    let mut loader = Loader::new(LoadOptions::default());
    let watched = |o: &Value| flags.namespace.is_none_or(|ns| o["metadata"]["namespace"] == ns);
    let objects = hosts.iter().map(Fake::json).chain(services.iter().cloned());
    for o in objects.filter(watched) {
        loader
            .add_str(&o.to_string(), Path::new("test.json"), Format::Json)
            .expect("loads");
    }
    let loaded = loader.finish();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    (AmbassadorHostSource::new(flags.config()), loaded.store)
}

/// The records `hosts` publish with `services` in the cluster under `flags`, rendered and sorted.
fn run(flags: &Flags, hosts: &[Fake], services: &[Value]) -> Vec<String> {
    let (src, store) = source_and_store(flags, hosts, services);
    let out = futures::executor::block_on(src.evaluate_all(&store)).expect("evaluates");
    assert!(out.failed.is_empty(), "{:?}", out.failed);
    rendered_labelled(&out.endpoints)
}

fn case(flags: Flags, hosts: &[Fake], services: &[Value], expected: &[&str]) {
    let mut want: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(run(&flags, hosts, services), want);
}

fn none() -> Flags {
    Flags::default()
}

// ------------------------------------------------------------------------- external-dns v0.23.0's table

#[test]
fn a_host_points_at_its_services_load_balancer_ip() {
    case(
        none(),
        &[Fake::new("basic-host")],
        &[emissary()],
        &[&format!("www.example.org A 1.1.1.1 {R}/basic-host")],
    );
}

#[test]
fn a_load_balancer_hostname_becomes_a_cname() {
    case(
        none(),
        &[Fake::new("basic-host")],
        &[svc("emissary", "emissary-ingress", &[], &["dns.google"])],
        &[&format!("www.example.org CNAME dns.google {R}/basic-host")],
    );
}

#[test]
fn the_services_external_ips_win_over_its_load_balancer() {
    case(
        none(),
        &[Fake::new("service-external-ip")],
        &[svc("emissary", "emissary-ingress", &["2.2.2.2"], &["1.1.1.1"])],
        &[&format!("www.example.org A 2.2.2.2 {R}/service-external-ip")],
    );
}

#[test]
fn the_target_annotation_wins_over_the_service() {
    case(
        none(),
        &[Fake::new("basic-host").ann(ga("target"), "3.3.3.3")],
        &[emissary()],
        &[&format!("www.example.org A 3.3.3.3 {R}/basic-host")],
    );
}

#[test]
fn the_ttl_annotation_sets_the_ttl() {
    case(
        none(),
        &[Fake::new("basic-host").ann(ga("ttl"), "180")],
        &[emissary()],
        &[&format!("www.example.org A 1.1.1.1 ttl=180 {R}/basic-host")],
    );
}

#[test]
fn a_provider_specific_annotation_becomes_a_property() {
    case(
        none(),
        &[Fake::new("basic-host").ann(ga("cloudflare-proxied"), "true")],
        &[emissary()],
        &[&format!(
            "www.example.org A 1.1.1.1 cloudflare/proxied=true {R}/basic-host"
        )],
    );
}

#[test]
fn a_host_without_the_ambassador_service_annotation_publishes_nothing() {
    case(none(), &[Fake::new("basic-host").without_service()], &[emissary()], &[]);
    // Not even with a target of its own: the annotation is what opts a Host in.
    case(
        none(),
        &[Fake::new("basic-host").without_service().ann(ga("target"), "3.3.3.3")],
        &[emissary()],
        &[],
    );
}

#[test]
fn a_matching_annotation_filter_admits_the_host() {
    case(
        Flags {
            annotation_filter: "kubernetes.io/ingress.class in (external-ingress)",
            ..none()
        },
        &[Fake::new("basic-host").ann("kubernetes.io/ingress.class", "external-ingress")],
        &[emissary()],
        &[&format!("www.example.org A 1.1.1.1 {R}/basic-host")],
    );
}

#[test]
fn a_non_matching_annotation_filter_excludes_the_host() {
    for filter in [
        "kubernetes.io/ingress.class in (external-ingress)",
        "kubernetes.io/ingress.class=external-ingress",
    ] {
        case(
            Flags {
                annotation_filter: filter,
                ..none()
            },
            &[Fake::new("basic-host").ann("kubernetes.io/ingress.class", "internal-ingress")],
            &[emissary()],
            &[],
        );
    }
}

#[test]
fn a_non_matching_label_filter_excludes_the_host() {
    case(
        Flags {
            label_filter: "kubernetes.io/ingress.class=external-ingress",
            ..none()
        },
        &[Fake::new("basic-host").label("kubernetes.io/ingress.class", "internal-ingress")],
        &[emissary()],
        &[],
    );
}

#[test]
fn a_matching_label_filter_admits_the_host() {
    case(
        Flags {
            label_filter: "kubernetes.io/ingress.class=external-ingress",
            ..none()
        },
        &[Fake::new("basic-host").label("kubernetes.io/ingress.class", "external-ingress")],
        &[svc("emissary", "emissary-ingress", &[], &["dns.google"])],
        &[&format!("www.example.org CNAME dns.google {R}/basic-host")],
    );
}

#[test]
fn both_filters_must_match() {
    let flags = Flags {
        label_filter: "kubernetes.io/ingress.class=external-ingress",
        annotation_filter: "kubernetes.io/ingress.class=external-ingress",
        ..none()
    };
    let host = |label: &'static str, annotation: &'static str| {
        Fake::new("basic-host")
            .label("kubernetes.io/ingress.class", label)
            .ann("kubernetes.io/ingress.class", annotation)
    };
    let services = [svc("emissary", "emissary-ingress", &[], &["dns.google"])];
    case(
        flags.clone(),
        &[host("external-ingress", "external-ingress")],
        &services,
        &[&format!("www.example.org CNAME dns.google {R}/basic-host")],
    );
    case(
        flags.clone(),
        &[host("internal-ingress", "external-ingress")],
        &services,
        &[],
    );
    case(flags, &[host("external-ingress", "internal-ingress")], &services, &[]);
}

/// external-dns's `TestAmbassadorHostSource_RealApiserverObject`: the target annotation is used without
/// looking the Service up, which need not exist.
#[test]
fn a_target_annotation_needs_no_service() {
    case(
        none(),
        &[Fake::new("my-host")
            .hostname(Some("my-host.example.com"))
            .ann(ga("target"), "203.0.113.10")],
        &[],
        &[&format!("my-host.example.com A 203.0.113.10 {R}/my-host")],
    );
}

// ------------------------------------------------------------------- the Service reference, and the rest

#[test]
fn the_service_is_found_by_each_of_emissarys_spellings() {
    let services = [
        svc("default", "plain", &[], &["192.0.2.1"]),
        svc("edge", "dotted", &[], &["192.0.2.2"]),
        svc("edge", "slashed", &[], &["192.0.2.3"]),
    ];
    case(
        none(),
        &[
            Fake::new("a")
                .hostname(Some("a.example.org"))
                .ann(AMBASSADOR_SERVICE_ANNOTATION, "plain"),
            Fake::new("b")
                .hostname(Some("b.example.org"))
                .ann(AMBASSADOR_SERVICE_ANNOTATION, "dotted.edge"),
            Fake::new("c")
                .hostname(Some("c.example.org"))
                .ann(AMBASSADOR_SERVICE_ANNOTATION, "edge/slashed"),
        ],
        &services,
        &[
            &format!("a.example.org A 192.0.2.1 {R}/a"),
            &format!("b.example.org A 192.0.2.2 {R}/b"),
            &format!("c.example.org A 192.0.2.3 {R}/c"),
        ],
    );
}

#[test]
fn a_host_whose_service_is_missing_or_misnamed_publishes_nothing() {
    case(
        none(),
        &[
            Fake::new("missing").ann(AMBASSADOR_SERVICE_ANNOTATION, "emissary/gone"),
            Fake::new("invalid").ann(AMBASSADOR_SERVICE_ANNOTATION, "emissary/a/b"),
        ],
        &[emissary()],
        &[],
    );
}

#[test]
fn a_service_without_an_address_publishes_nothing() {
    case(
        none(),
        &[Fake::new("pending")],
        &[svc("emissary", "emissary-ingress", &[], &[])],
        &[],
    );
}

#[test]
fn a_host_without_hostname_publishes_nothing() {
    case(none(), &[Fake::new("no-spec").hostname(None)], &[emissary()], &[]);
    case(none(), &[Fake::new("empty").hostname(Some(""))], &[emissary()], &[]);
}

#[test]
fn ipv4_and_ipv6_addresses_become_a_and_aaaa_records() {
    case(
        none(),
        &[Fake::new("dual")],
        &[svc(
            "emissary",
            "emissary-ingress",
            &[],
            &["192.0.2.1", "2001:db8::1", "lb.example.net"],
        )],
        &[
            &format!("www.example.org A 192.0.2.1 {R}/dual"),
            &format!("www.example.org AAAA 2001:db8::1 {R}/dual"),
            &format!("www.example.org CNAME lb.example.net {R}/dual"),
        ],
    );
}

#[test]
fn the_set_identifier_annotation_is_kept() {
    case(
        none(),
        &[Fake::new("weighted")
            .ann(ga("set-identifier"), "blue")
            .ann(ga("aws-weight"), "10")],
        &[emissary()],
        &[&format!(
            "www.example.org A 1.1.1.1 aws/weight=10 set=blue {R}/weighted"
        )],
    );
}

#[test]
fn annotations_under_the_legacy_prefix_are_read() {
    case(
        none(),
        &[Fake::new("legacy").ann(format!("{PREFIX_ALPHA}ttl"), "60")],
        &[emissary()],
        &[&format!("www.example.org A 1.1.1.1 ttl=60 {R}/legacy")],
    );
}

#[test]
fn the_hostname_annotation_and_the_fqdn_template_add_nothing() {
    case(
        Flags {
            fqdn_template: Some("{{.Name}}.template.example.org"),
            combine: true,
            ..none()
        },
        &[Fake::new("basic-host").ann(ga("hostname"), "other.example.org")],
        &[emissary()],
        &[&format!("www.example.org A 1.1.1.1 {R}/basic-host")],
    );
}

#[test]
fn a_controller_annotation_does_not_exclude_the_host() {
    case(
        none(),
        &[Fake::new("claimed").ann(ga("controller"), "someone-else")],
        &[emissary()],
        &[&format!("www.example.org A 1.1.1.1 {R}/claimed")],
    );
    // The other filters still apply to such a Host.
    case(
        Flags {
            annotation_filter: "team=web",
            ..none()
        },
        &[Fake::new("claimed").ann(ga("controller"), "someone-else")],
        &[emissary()],
        &[],
    );
    // An annotation filter on the controller annotation sees it, as external-dns's filter does.
    case(
        Flags {
            annotation_filter: "external-dns.kubernetes.io/controller=someone-else",
            ..none()
        },
        &[Fake::new("claimed").ann(ga("controller"), "someone-else")],
        &[emissary()],
        &[&format!("www.example.org A 1.1.1.1 {R}/claimed")],
    );
}

/// With `--namespace` extdns watches only that namespace's Hosts and Services (external-dns fetches the
/// Service by name in any namespace; docs/sources/ambassador-host.md says so): a Host outside it publishes
/// nothing, nor does one inside naming a Service outside it, whose Service is never read.
#[test]
fn the_namespace_scopes_hosts_and_the_services_they_find() {
    case(
        Flags {
            namespace: Some("web"),
            ..none()
        },
        &[
            Fake::new("in").ns("web").ann(AMBASSADOR_SERVICE_ANNOTATION, "web/edge"),
            Fake::new("elsewhere").ns("web").hostname(Some("elsewhere.example.org")),
            Fake::new("out")
                .hostname(Some("out.example.org"))
                .ann(AMBASSADOR_SERVICE_ANNOTATION, "web/edge"),
        ],
        &[emissary(), svc("web", "edge", &[], &["2.2.2.2"])],
        &["www.example.org A 2.2.2.2 resource=host/web/in"],
    );
}

#[test]
fn hosts_sharing_a_name_merge_their_targets() {
    case(
        none(),
        &[
            Fake::new("a").ann(ga("target"), "192.0.2.1"),
            Fake::new("b").ann(ga("target"), "192.0.2.2"),
        ],
        &[],
        &[&format!("www.example.org A 192.0.2.1,192.0.2.2 {R}/a")],
    );
}

// ------------------------------------------------------------------------------------------- incremental

#[test]
fn a_service_change_re_evaluates_the_hosts_naming_it() {
    let (src, store) = source_and_store(
        &none(),
        &[
            Fake::new("a"),
            Fake::new("b").ann(AMBASSADOR_SERVICE_ANNOTATION, "other.emissary"),
            Fake::new("c").ann(AMBASSADOR_SERVICE_ANNOTATION, "plain"),
        ],
        &[emissary()],
    );
    let host = |name| ObjectKey::new(ResourceKind::AmbassadorHost, NS, name);
    let service = |ns, name| ObjectKey::new(ResourceKind::Service, ns, name);
    assert_eq!(
        src.affected(&store, &ChangeSet::of(service("emissary", "emissary-ingress"))),
        Some(BTreeSet::from([host("a")]))
    );
    // A Service that does not exist yet is found by the name the Host gives it.
    assert_eq!(
        src.affected(&store, &ChangeSet::of(service("emissary", "other"))),
        Some(BTreeSet::from([host("b")]))
    );
    assert_eq!(
        src.affected(&store, &ChangeSet::of(service("default", "plain"))),
        Some(BTreeSet::from([host("c")]))
    );
    assert_eq!(
        src.affected(&store, &ChangeSet::of(service("default", "unrelated"))),
        Some(BTreeSet::new())
    );
    assert_eq!(
        src.affected(&store, &ChangeSet::of(host("b"))),
        Some(BTreeSet::from([host("b")]))
    );
    assert_eq!(src.affected(&store, &ChangeSet::everything()), None);
    assert_eq!(
        src.watched_kinds(),
        vec![ResourceKind::AmbassadorHost, ResourceKind::Service]
    );
}

#[test]
fn an_incremental_evaluation_reads_only_the_given_hosts() {
    let (src, store) = source_and_store(
        &none(),
        &[
            Fake::new("a").hostname(Some("a.example.org")),
            Fake::new("b").hostname(Some("b.example.org")),
        ],
        &[emissary()],
    );
    let a = ObjectKey::new(ResourceKind::AmbassadorHost, NS, "a");
    assert_eq!(evaluated_objects(&src, &store, &[&a]), std::slice::from_ref(&a));
}

#[test]
fn a_v2_host_publishes_as_a_v3alpha1_one() {
    let mut v2 = Fake::new("old").json();
    v2["apiVersion"] = json!("getambassador.io/v2");
    v2["spec"]["ambassador_id"] = json!("default");
    let mut loader = Loader::new(LoadOptions::default());
    for o in [v2, emissary()] {
        loader
            .add_str(&o.to_string(), Path::new("test.json"), Format::Json)
            .expect("loads");
    }
    let store = loader.finish().store;
    let out = futures::executor::block_on(AmbassadorHostSource::default().evaluate_all(&store)).expect("evaluates");
    assert_eq!(
        rendered_labelled(&out.endpoints),
        vec![format!("www.example.org A 1.1.1.1 {R}/old")]
    );
}
