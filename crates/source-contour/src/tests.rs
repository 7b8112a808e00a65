//! external-dns v0.23.0's `source/contour_httpproxy_test.go` rules, one test per behaviour, then extdns's
//! own: failing objects, incremental evaluation.
//!
//! Each HTTPProxy is written as the JSON an API server would hold, loaded through the manifest loader (the
//! same ingest path as the live informer), so the conversion is under test too.

use extdns_informer::{ObjectKey, ResourceKind};
use extdns_source::Source;
use extdns_source::annotations::PREFIX_ALPHA;
use extdns_source::pipeline::testing::{
    FakeMeta, Fixture, Flags, assert_records, check_fails_alone, check_reads_only_itself, evaluate_ok, ga,
    load_balancer_status, rendered_labelled, store,
};
use extdns_source::template::TemplateKind;
use serde_json::{Value, json};

use super::*;

const NS: &str = "testing";

/// external-dns's `fakeHTTPProxy`.
#[derive(Default, Clone)]
struct Fake {
    meta: FakeMeta,
    fqdn: Option<&'static str>,
    ips: Vec<&'static str>,
    hostnames: Vec<&'static str>,
}

extdns_source::fixture!(Fake);

impl Fake {
    fn new(name: &'static str) -> Fake {
        Fake::named(name, NS)
    }
    fn fqdn(mut self, f: &'static str) -> Self {
        self.fqdn = Some(f);
        self
    }
    fn ips(mut self, ips: &[&'static str]) -> Self {
        self.ips = ips.to_vec();
        self
    }
    fn lb(mut self, h: &[&'static str]) -> Self {
        self.hostnames = h.to_vec();
        self
    }

    fn json(&self) -> Value {
        let mut spec = json!({"routes": [{"services": [{"name": "web", "port": 80}]}]});
        if let Some(f) = self.fqdn {
            spec["virtualhost"] = json!({"fqdn": f});
        }
        json!({
            "apiVersion": "projectcontour.io/v1",
            "kind": "HTTPProxy",
            "metadata": self.meta.json(),
            "spec": spec,
            "status": {"currentStatus": "valid", "loadBalancer": load_balancer_status(&self.ips, &self.hostnames)},
        })
    }
}

fn source_and_store(flags: &Flags, items: &[Fake]) -> (HttpProxySource, ClusterStore) {
    let config = flags.config();
    let objects: Vec<Value> = items.iter().map(Fake::json).collect();
    let store = store(&objects, &config, TemplateKind::HttpProxy);
    (HttpProxySource::new(config), store)
}

/// The records `items` publish under `flags`, rendered and sorted.
fn run(flags: &Flags, items: &[Fake]) -> Vec<String> {
    let (src, store) = source_and_store(flags, items);
    rendered_labelled(&evaluate_ok(&src, &store))
}

fn case(flags: Flags, items: &[Fake], expected: &[&str]) {
    assert_records("records", run(&flags, items), expected);
}

fn none() -> Flags {
    Flags::default()
}

const R: &str = "resource=HTTPProxy/testing";

#[test]
fn the_fqdn_points_at_a_load_balancer_hostname_as_a_cname() {
    case(
        none(),
        &[Fake::new("a").fqdn("foo.bar").lb(&["lb.com"])],
        &[&format!("foo.bar CNAME lb.com {R}/a")],
    );
}

#[test]
fn the_fqdn_points_at_load_balancer_addresses_by_family() {
    case(
        none(),
        &[Fake::new("a")
            .fqdn("foo.bar")
            .ips(&["8.8.8.8", "127.0.0.1", "2606:4700:4700::1111"])
            .lb(&["elb.com", "alb.com"])],
        &[
            &format!("foo.bar A 127.0.0.1,8.8.8.8 {R}/a"),
            &format!("foo.bar AAAA 2606:4700:4700::1111 {R}/a"),
            &format!("foo.bar CNAME alb.com,elb.com {R}/a"),
        ],
    );
}

#[test]
fn a_proxy_without_virtualhost_publishes_nothing() {
    case(none(), &[Fake::new("delegate").ips(&["8.8.8.8"])], &[]);
}

#[test]
fn a_proxy_without_targets_publishes_nothing() {
    case(none(), &[Fake::new("a").fqdn("foo.bar")], &[]);
}

#[test]
fn provider_specific_annotations_become_properties() {
    case(
        none(),
        &[Fake::new("a")
            .fqdn("foo.bar")
            .ips(&["8.8.8.8"])
            .ann(ga("aws-weight"), "10")
            .ann(ga("set-identifier"), "one")],
        &[&format!("foo.bar A 8.8.8.8 aws/weight=10 set=one {R}/a")],
    );
}

#[test]
fn proxies_of_every_namespace_publish_unless_namespace_is_set() {
    let items = [
        Fake::new("a").ns("testing1").fqdn("a.example.org").ips(&["8.8.8.8"]),
        Fake::new("b").ns("testing2").fqdn("b.example.org").lb(&["lb.com"]),
    ];
    case(
        none(),
        &items,
        &[
            "a.example.org A 8.8.8.8 resource=HTTPProxy/testing1/a",
            "b.example.org CNAME lb.com resource=HTTPProxy/testing2/b",
        ],
    );
    case(
        Flags {
            namespace: Some("testing1"),
            ..none()
        },
        &items,
        &["a.example.org A 8.8.8.8 resource=HTTPProxy/testing1/a"],
    );
}

#[test]
fn the_annotation_filter_admits_only_matching_proxies() {
    let items = [
        Fake::new("a")
            .fqdn("a.example.org")
            .ips(&["8.8.8.8"])
            .ann("kubernetes.io/ingress.class", "contour"),
        Fake::new("b")
            .fqdn("b.example.org")
            .ips(&["8.8.8.8"])
            .ann("kubernetes.io/ingress.class", "alb"),
    ];
    case(
        Flags {
            annotation_filter: "kubernetes.io/ingress.class in (contour, nginx)",
            ..none()
        },
        &items,
        &[&format!("a.example.org A 8.8.8.8 {R}/a")],
    );
    case(
        Flags {
            annotation_filter: "kubernetes.io/ingress.class=nginx",
            ..none()
        },
        &items,
        &[],
    );
}

#[test]
fn the_label_filter_admits_only_matching_proxies() {
    let items = [
        Fake::new("a")
            .fqdn("a.example.org")
            .ips(&["8.8.8.8"])
            .label("app", "web"),
        Fake::new("b")
            .fqdn("b.example.org")
            .ips(&["8.8.8.8"])
            .label("app", "db"),
    ];
    case(
        Flags {
            label_filter: "app=web",
            ..none()
        },
        &items,
        &[&format!("a.example.org A 8.8.8.8 {R}/a")],
    );
}

#[test]
fn only_proxies_of_no_controller_or_dns_controller_publish() {
    let items = [
        Fake::new("ours")
            .fqdn("ours.example.org")
            .ips(&["8.8.8.8"])
            .ann(ga("controller"), "dns-controller"),
        Fake::new("theirs")
            .fqdn("theirs.example.org")
            .ips(&["8.8.8.8"])
            .ann(ga("controller"), "some-other-tool"),
    ];
    case(none(), &items, &[&format!("ours.example.org A 8.8.8.8 {R}/ours")]);
    // Another controller's proxy is skipped even when the template would give it a name.
    case(
        Flags {
            fqdn_template: Some("{{.Name}}.ext-dns.test.com"),
            ..none()
        },
        &items,
        &[&format!("ours.example.org A 8.8.8.8 {R}/ours")],
    );
}

#[test]
fn the_template_names_proxies_without_a_name_of_their_own() {
    case(
        Flags {
            fqdn_template: Some("{{.Name}}.ext-dns.test.com, {{.Name}}.example.com"),
            ..none()
        },
        &[
            Fake::new("fake1").fqdn("fake1.example.org").ips(&["8.8.8.8"]),
            Fake::new("fake2").lb(&["elb.com"]),
        ],
        &[
            &format!("fake1.example.org A 8.8.8.8 {R}/fake1"),
            &format!("fake2.example.com CNAME elb.com {R}/fake2"),
            &format!("fake2.ext-dns.test.com CNAME elb.com {R}/fake2"),
        ],
    );
}

#[test]
fn combine_fqdn_annotation_adds_the_template_names_to_the_proxys_own() {
    case(
        Flags {
            fqdn_template: Some("{{.Name}}.ext-dns.test.com"),
            combine: true,
            ..none()
        },
        &[Fake::new("fake1").fqdn("fake1.example.org").ips(&["8.8.8.8"])],
        &[
            &format!("fake1.example.org A 8.8.8.8 {R}/fake1"),
            &format!("fake1.ext-dns.test.com A 8.8.8.8 {R}/fake1"),
        ],
    );
}

#[test]
fn the_template_names_point_at_the_target_annotation() {
    case(
        Flags {
            fqdn_template: Some("{{.Name}}.ext-dns.test.com"),
            ..none()
        },
        &[Fake::new("fake1")
            .ips(&["8.8.8.8"])
            .ann(ga("target"), "httpproxy-target.com")],
        &[&format!("fake1.ext-dns.test.com CNAME httpproxy-target.com {R}/fake1")],
    );
}

#[test]
fn the_template_reads_the_httpproxy_go_fields() {
    case(
        Flags {
            fqdn_template: Some("{{.Spec.VirtualHost.Fqdn}}.copy.example.com,{{.Namespace}}-{{.Kind}}.example.com"),
            combine: true,
            ..none()
        },
        &[Fake::new("t").fqdn("shop.example.org").ips(&["192.0.2.1"])],
        &[
            &format!("shop.example.org A 192.0.2.1 {R}/t"),
            &format!("shop.example.org.copy.example.com A 192.0.2.1 {R}/t"),
            &format!("testing-HTTPProxy.example.com A 192.0.2.1 {R}/t"),
        ],
    );
}

#[test]
fn the_hostname_annotation_adds_names_at_the_proxys_targets() {
    case(
        none(),
        &[Fake::new("a")
            .fqdn("example.org")
            .ips(&["8.8.8.8"])
            .ann(ga("hostname"), "dns-through-hostname.com, another.com")],
        &[
            &format!("another.com A 8.8.8.8 {R}/a"),
            &format!("dns-through-hostname.com A 8.8.8.8 {R}/a"),
            &format!("example.org A 8.8.8.8 {R}/a"),
        ],
    );
}

#[test]
fn the_legacy_annotation_prefix_is_read_too() {
    case(
        none(),
        &[Fake::new("a")
            .fqdn("example.org")
            .ips(&["8.8.8.8"])
            .ann(format!("{PREFIX_ALPHA}hostname"), "legacy.example.org")],
        &[
            &format!("example.org A 8.8.8.8 {R}/a"),
            &format!("legacy.example.org A 8.8.8.8 {R}/a"),
        ],
    );
}

#[test]
fn the_target_annotation_replaces_the_load_balancer() {
    case(
        none(),
        &[Fake::new("a")
            .fqdn("example.org")
            .ips(&["8.8.8.8"])
            .ann(ga("hostname"), "dns-through-hostname.com")
            .ann(ga("target"), "httpproxy-target.com")],
        &[
            &format!("dns-through-hostname.com CNAME httpproxy-target.com {R}/a"),
            &format!("example.org CNAME httpproxy-target.com {R}/a"),
        ],
    );
}

#[test]
fn the_ttl_annotation_sets_the_records_ttl() {
    case(
        none(),
        &[Fake::new("a").fqdn("example.org").ips(&["8.8.8.8"]).ann(ga("ttl"), "6")],
        &[&format!("example.org A 8.8.8.8 ttl=6 {R}/a")],
    );
}

#[test]
fn an_empty_target_annotation_falls_back_to_the_load_balancer() {
    case(
        none(),
        &[Fake::new("a")
            .fqdn("example.org")
            .ips(&["8.8.8.8"])
            .ann(ga("target"), "")],
        &[&format!("example.org A 8.8.8.8 {R}/a")],
    );
}

#[test]
fn ignore_hostname_annotation_publishes_only_the_fqdn() {
    case(
        Flags {
            ignore_hostname_annotation: true,
            ..none()
        },
        &[Fake::new("a")
            .fqdn("example.org")
            .ips(&["8.8.8.8"])
            .ann(ga("hostname"), "dns-through-hostname.com")],
        &[&format!("example.org A 8.8.8.8 {R}/a")],
    );
}

#[test]
fn proxies_sharing_a_name_merge_their_targets() {
    case(
        none(),
        &[
            Fake::new("a").fqdn("shared.example.org").ips(&["192.0.2.1"]),
            Fake::new("b").fqdn("shared.example.org").ips(&["192.0.2.2"]),
        ],
        &[&format!("shared.example.org A 192.0.2.1,192.0.2.2 {R}/a")],
    );
}

// ------------------------------------------------------------------------------------------- extdns's own

#[test]
fn a_failing_template_fails_only_its_proxy() {
    let (src, store) = source_and_store(
        &Flags {
            fqdn_template: Some("{{.Spec.VirtualHost.Fqdn}}.example.org"),
            ..none()
        },
        &[
            Fake::new("ok").fqdn("ok.example.org").ips(&["192.0.2.1"]),
            Fake::new("bad").ips(&["192.0.2.2"]),
        ],
    );
    let bad = ObjectKey::new(ResourceKind::HttpProxy, NS, "bad");
    check_fails_alone(&src, &store, &bad, &["ok.example.org"]);
}

#[test]
fn a_change_re_evaluates_only_the_changed_proxy() {
    let (src, store) = source_and_store(
        &none(),
        &[
            Fake::new("a").fqdn("a.example.org").ips(&["192.0.2.1"]),
            Fake::new("b").fqdn("b.example.org").ips(&["192.0.2.2"]),
        ],
    );
    let a = ObjectKey::new(ResourceKind::HttpProxy, NS, "a");
    let ingress = ObjectKey::new(ResourceKind::Ingress, NS, "a");
    check_reads_only_itself(&src, &store, &a, &ingress);
    assert_eq!(src.watched_kinds(), vec![ResourceKind::HttpProxy]);
}
