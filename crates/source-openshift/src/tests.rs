//! external-dns v0.23.0's `source/openshift_route_test.go` and `openshift_route_fqdn_test.go` rules, one
//! test per behaviour, then extdns's own: failing objects, incremental evaluation.
//!
//! Each Route is written as the JSON an API server would hold, loaded through the manifest loader (the same
//! ingest path as the live informer), so the conversion is under test too.

use extdns_informer::{ObjectKey, ResourceKind};
use extdns_source::Source;
use extdns_source::pipeline::testing::{
    FakeMeta, Fixture, Flags, assert_records, check_fails_alone, check_reads_only_itself, evaluate_ok, ga,
    rendered_labelled, store,
};
use extdns_source::template::TemplateKind;
use serde_json::{Value, json};

use super::*;

const NS: &str = "default";

/// One `status.ingress[]` entry: host, router, canonical hostname, admitted.
type Router = (&'static str, &'static str, &'static str, bool);

#[derive(Default, Clone)]
struct Fake {
    meta: FakeMeta,
    spec_host: Option<&'static str>,
    routers: Vec<Router>,
}

extdns_source::fixture!(Fake);

impl Fake {
    fn new(name: &'static str) -> Fake {
        Fake::named(name, NS)
    }
    fn spec_host(mut self, h: &'static str) -> Self {
        self.spec_host = Some(h);
        self
    }
    fn router(mut self, r: Router) -> Self {
        self.routers.push(r);
        self
    }

    fn json(&self) -> Value {
        let ingress: Vec<Value> = self
            .routers
            .iter()
            .map(|(host, router, canonical, admitted)| {
                let mut entry = json!({
                    "host": host, "routerName": router,
                    "conditions": [{"type": "Admitted", "status": if *admitted { "True" } else { "False" }}],
                });
                if !canonical.is_empty() {
                    entry["routerCanonicalHostname"] = json!(canonical);
                }
                entry
            })
            .collect();
        let mut spec = json!({"to": {"kind": "Service", "name": "web"}});
        if let Some(h) = self.spec_host {
            spec["host"] = json!(h);
        }
        json!({
            "apiVersion": "route.openshift.io/v1",
            "kind": "Route",
            "metadata": self.meta.json(),
            "spec": spec,
            "status": {"ingress": ingress},
        })
    }
}

const DEFAULT: Router = ("my-domain.com", "default", "router-default.my-domain.com", true);
const TEST: Router = ("my-domain.com", "test", "router-test.my-domain.com", true);

fn refused(r: Router) -> Router {
    (r.0, r.1, r.2, false)
}

fn source_and_store(flags: &Flags, router: Option<&str>, items: &[Fake]) -> (RouteSource, ClusterStore) {
    let common = flags.config();
    let objects: Vec<Value> = items.iter().map(Fake::json).collect();
    let store = store(&objects, &common, TemplateKind::OpenShiftRoute);
    (
        RouteSource::new(RouteSourceConfig::new(common, router.map(String::from))),
        store,
    )
}

fn case_with(flags: Flags, router: Option<&str>, items: &[Fake], expected: &[&str]) {
    let (src, store) = source_and_store(&flags, router, items);
    assert_records("records", rendered_labelled(&evaluate_ok(&src, &store)), expected);
}

fn case(items: &[Fake], expected: &[&str]) {
    case_with(Flags::default(), None, items, expected);
}

const R: &str = "resource=route/default";

#[test]
fn the_admitted_host_points_at_the_routers_canonical_hostname() {
    case(
        &[Fake::new("r").router(DEFAULT)],
        &[&format!("my-domain.com CNAME router-default.my-domain.com {R}/r")],
    );
}

#[test]
fn the_router_name_selects_which_routers_admission_publishes() {
    let route = Fake::new("r").router(DEFAULT).router(TEST);
    case_with(
        Flags::default(),
        Some("default"),
        std::slice::from_ref(&route),
        &[&format!("my-domain.com CNAME router-default.my-domain.com {R}/r")],
    );
    case_with(
        Flags::default(),
        Some("test"),
        &[route],
        &[&format!("my-domain.com CNAME router-test.my-domain.com {R}/r")],
    );
}

#[test]
fn a_route_the_named_router_did_not_admit_publishes_nothing() {
    case_with(
        Flags::default(),
        Some("test"),
        &[Fake::new("r").router(DEFAULT).router(refused(TEST))],
        &[],
    );
}

#[test]
fn a_route_no_router_admitted_publishes_nothing_whatever_its_spec_host() {
    case(
        &[Fake::new("r")
            .spec_host("my-domain.com")
            .router(refused(DEFAULT))
            .router(refused(TEST))],
        &[],
    );
}

#[test]
fn without_a_router_name_the_first_router_that_admitted_publishes() {
    case(
        &[Fake::new("r").router(refused(DEFAULT)).router(TEST)],
        &[&format!("my-domain.com CNAME router-test.my-domain.com {R}/r")],
    );
}

#[test]
fn a_router_without_canonical_hostname_is_passed_over() {
    case(
        &[Fake::new("r").router(("my-domain.com", "bare", "", true)).router(TEST)],
        &[&format!("my-domain.com CNAME router-test.my-domain.com {R}/r")],
    );
}

#[test]
fn the_spec_host_is_not_published_without_an_admitting_router() {
    case(&[Fake::new("r").spec_host("my-domain.com")], &[]);
}

#[test]
fn another_controllers_route_is_skipped() {
    case(&[Fake::new("r").router(DEFAULT).ann(ga("controller"), "foo")], &[]);
}

#[test]
fn the_target_annotation_replaces_the_canonical_hostname() {
    case(
        &[Fake::new("r").router(DEFAULT).ann(ga("target"), "my.site.foo.com")],
        &[&format!("my-domain.com CNAME my.site.foo.com {R}/r")],
    );
}

#[test]
fn the_label_filter_admits_only_matching_routes() {
    let items = [
        Fake::new("a").router(DEFAULT).label("app", "web"),
        Fake::new("b").ns("other").router(TEST).label("app", "db"),
    ];
    case_with(
        Flags {
            label_filter: "app=web",
            ..Flags::default()
        },
        None,
        &items,
        &[&format!("my-domain.com CNAME router-default.my-domain.com {R}/a")],
    );
    case_with(
        Flags {
            label_filter: "app=none",
            ..Flags::default()
        },
        None,
        &items,
        &[],
    );
}

#[test]
fn the_annotation_filter_and_namespace_admit_only_matching_routes() {
    let items = [
        Fake::new("a").router(DEFAULT).ann("team", "web"),
        Fake::new("b").ns("other").router(TEST).ann("team", "db"),
    ];
    case_with(
        Flags {
            annotation_filter: "team=db",
            ..Flags::default()
        },
        None,
        &items,
        &["my-domain.com CNAME router-test.my-domain.com resource=route/other/b"],
    );
    case_with(
        Flags {
            namespace: Some("default"),
            ..Flags::default()
        },
        None,
        &items,
        &[&format!("my-domain.com CNAME router-default.my-domain.com {R}/a")],
    );
}

#[test]
fn provider_specific_annotations_become_properties() {
    case(
        &[Fake::new("r")
            .router(DEFAULT)
            .ann(ga("aws-weight"), "10")
            .ann(ga("set-identifier"), "blue")
            .ann(ga("ttl"), "60")],
        &[&format!(
            "my-domain.com CNAME router-default.my-domain.com ttl=60 aws/weight=10 set=blue {R}/r"
        )],
    );
}

#[test]
fn the_hostname_annotation_adds_names_at_the_routers_target() {
    case(
        &[Fake::new("r")
            .router(DEFAULT)
            .ann(ga("hostname"), "a.example.org,b.example.org")],
        &[
            &format!("a.example.org CNAME router-default.my-domain.com {R}/r"),
            &format!("b.example.org CNAME router-default.my-domain.com {R}/r"),
            &format!("my-domain.com CNAME router-default.my-domain.com {R}/r"),
        ],
    );
    case_with(
        Flags {
            ignore_hostname_annotation: true,
            ..Flags::default()
        },
        None,
        &[Fake::new("r").router(DEFAULT).ann(ga("hostname"), "a.example.org")],
        &[&format!("my-domain.com CNAME router-default.my-domain.com {R}/r")],
    );
}

#[test]
fn the_template_names_routes_no_router_gave_a_host() {
    let flags = Flags {
        fqdn_template: Some("{{.Name}}.{{.Namespace}}.example.org"),
        ..Flags::default()
    };
    case_with(
        flags.clone(),
        None,
        &[
            Fake::new("hosted").router(DEFAULT),
            Fake::new("bare").ann(ga("target"), "lb.example.net"),
        ],
        &[
            &format!("bare.default.example.org CNAME lb.example.net {R}/bare"),
            &format!("my-domain.com CNAME router-default.my-domain.com {R}/hosted"),
        ],
    );
    // Without targets (not admitted, no target annotation) the template's names make no record either.
    case_with(flags, None, &[Fake::new("pending").router(refused(DEFAULT))], &[]);
}

#[test]
fn combine_fqdn_annotation_adds_the_template_names_to_the_routes_own() {
    case_with(
        Flags {
            fqdn_template: Some("{{.Spec.Host}}.copy.example.org,{{(index .Status.Ingress 0).RouterName}}.example.org"),
            combine: true,
            ..Flags::default()
        },
        None,
        &[Fake::new("r").spec_host("spec.example.org").router(DEFAULT)],
        &[
            &format!("default.example.org CNAME router-default.my-domain.com {R}/r"),
            &format!("my-domain.com CNAME router-default.my-domain.com {R}/r"),
            &format!("spec.example.org.copy.example.org CNAME router-default.my-domain.com {R}/r"),
        ],
    );
}

// ------------------------------------------------------------------------------------------- extdns's own

#[test]
fn a_failing_template_fails_only_its_route() {
    let (src, store) = source_and_store(
        &Flags {
            fqdn_template: Some("{{(index .Status.Ingress 0).Host}}.example.org"),
            ..Flags::default()
        },
        None,
        &[
            Fake::new("ok").router(DEFAULT),
            Fake::new("bad").ann(ga("target"), "lb.example.net"),
        ],
    );
    let bad = ObjectKey::new(ResourceKind::OpenShiftRoute, NS, "bad");
    check_fails_alone(&src, &store, &bad, &["my-domain.com"]);
}

#[test]
fn a_change_re_evaluates_only_the_changed_route() {
    let (src, store) = source_and_store(
        &Flags::default(),
        None,
        &[Fake::new("a").router(DEFAULT), Fake::new("b").router(TEST)],
    );
    let a = ObjectKey::new(ResourceKind::OpenShiftRoute, NS, "a");
    let proxy = ObjectKey::new(ResourceKind::HttpProxy, NS, "a");
    check_reads_only_itself(&src, &store, &a, &proxy);
    assert_eq!(src.watched_kinds(), vec![ResourceKind::OpenShiftRoute]);
}
