//! external-dns v0.22's `source/ingress_test.go` table cases, one row each (`testEndpointsFromIngress`,
//! `testEndpointsFromIngressHostnameSourceAnnotation`, `testIngressEndpoints`, `TestIngressWithConfiguration`),
//! then extdns's own: failing objects, incremental evaluation.
//!
//! Each Ingress is written as the JSON an API server would hold, loaded through the manifest loader (the
//! same ingest path as the live informer), so the conversion is under test too.

use extdns_informer::{ClusterStore, LoadOptions, ObjectKey, ResourceKind};
use extdns_source::Source;
use extdns_source::annotations::PREFIX_ALPHA;
use extdns_source::pipeline::testing::{
    FakeMeta, Fixture, assert_records, check_fails_alone, check_reads_only_itself, evaluate_ok, ga, load,
    load_balancer_status, render, rendered,
};
use extdns_source::template::TemplateKind;
use serde_json::{Value, json};

use super::*;

const NS: &str = "testing";

/// external-dns's `fakeIngress`.
#[derive(Default, Clone)]
struct Fake {
    meta: FakeMeta,
    /// `spec.rules[].host`.
    dnsnames: Vec<&'static str>,
    /// `spec.tls[].hosts`.
    tlsdnsnames: Vec<Vec<&'static str>>,
    ips: Vec<&'static str>,
    hostnames: Vec<&'static str>,
    class: Option<&'static str>,
}

extdns_source::fixture!(Fake);

impl Fake {
    fn new(name: &'static str) -> Fake {
        Fake::named(name, NS)
    }
    fn hosts(mut self, h: &[&'static str]) -> Self {
        self.dnsnames = h.to_vec();
        self
    }
    fn tls(mut self, h: &[&'static str]) -> Self {
        self.tlsdnsnames.push(h.to_vec());
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
    fn class(mut self, c: &'static str) -> Self {
        self.class = Some(c);
        self
    }

    fn json(&self) -> Value {
        let mut spec = json!({
            "rules": self.dnsnames.iter().map(|h| json!({"host": h})).collect::<Vec<_>>(),
            "tls": self.tlsdnsnames.iter().map(|h| json!({"hosts": h})).collect::<Vec<_>>(),
        });
        if let Some(c) = self.class {
            spec["ingressClassName"] = json!(c);
        }
        json!({
            "apiVersion": "networking.k8s.io/v1",
            "kind": "Ingress",
            "metadata": self.meta.json(),
            "spec": spec,
            "status": {"loadBalancer": load_balancer_status(&self.ips, &self.hostnames)},
        })
    }
}

/// The ingress source's own flags a case sets.
#[derive(Default)]
struct Own {
    ignore_tls: bool,
    ignore_rules: bool,
    classes: Vec<&'static str>,
}

type Flags = extdns_source::pipeline::testing::Flags<Own>;

fn source(f: &Flags) -> IngressSource {
    IngressSource::new(IngressSourceConfig::new(
        f.config(),
        f.source.classes.iter().map(|c| c.to_string()).collect(),
        f.source.ignore_tls,
        f.source.ignore_rules,
    ))
}

/// A store holding `items`, as loaded with `options`.
fn cluster(items: &[Fake], options: LoadOptions) -> ClusterStore {
    load(&items.iter().map(Fake::json).collect::<Vec<_>>(), options)
}

fn run(flags: &Flags, items: &[Fake]) -> Vec<Endpoint> {
    let store = cluster(items, flags.load_options(&[TemplateKind::Ingress]));
    evaluate_ok(&source(flags), &store)
}

/// One table row: the flags, the Ingresses, and the records expected (any order).
fn case(title: &str, flags: Flags, items: &[Fake], expected: &[&str]) {
    assert_records(title, rendered(&run(&flags, items)), expected);
}

fn none() -> Flags {
    Flags::default()
}

// ------------------------------------------------------------------------------ testEndpointsFromIngress

#[test]
fn endpoints_from_ingress() {
    let one = |f: Fake| vec![f];
    case(
        "one rule.host one lb.hostname",
        none(),
        &one(Fake::new("a").hosts(&["foo.bar"]).lb(&["lb.com"])),
        &["foo.bar CNAME lb.com"],
    );
    case(
        "one rule.host one lb.IP",
        none(),
        &one(Fake::new("a").hosts(&["foo.bar"]).ips(&["8.8.8.8"])),
        &["foo.bar A 8.8.8.8"],
    );
    case(
        "one rule.host one lb.IPv6",
        none(),
        &one(Fake::new("a").hosts(&["foo.bar"]).ips(&["2606:4700:4700::1111"])),
        &["foo.bar AAAA 2606:4700:4700::1111"],
    );
    case(
        "one rule.host two lb.IP, two lb.IPv6 and two lb.Hostname",
        none(),
        &one(Fake::new("a")
            .hosts(&["foo.bar"])
            .ips(&["8.8.8.8", "127.0.0.1", "2606:4700:4700::1111", "2606:4700:4700::1001"])
            .lb(&["elb.com", "alb.com"])),
        &[
            "foo.bar A 127.0.0.1,8.8.8.8",
            "foo.bar AAAA 2606:4700:4700::1001,2606:4700:4700::1111",
            "foo.bar CNAME alb.com,elb.com",
        ],
    );
    case(
        "no rule.host",
        none(),
        &one(Fake::new("a")
            .ips(&["8.8.8.8", "127.0.0.1"])
            .lb(&["elb.com", "alb.com"])),
        &[],
    );
    case(
        "one empty rule.host",
        none(),
        &one(Fake::new("a")
            .hosts(&[""])
            .ips(&["8.8.8.8", "127.0.0.1"])
            .lb(&["elb.com", "alb.com"])),
        &[],
    );
    case("no targets", none(), &one(Fake::new("a").hosts(&[""])), &[]);
    case(
        "ignore rules with one rule.host one lb.hostname",
        Flags::own(Own {
            ignore_rules: true,
            ..Own::default()
        }),
        &one(Fake::new("a").hosts(&["test"]).lb(&["lb.com"])),
        &[],
    );
    case(
        "invalid hostname does not generate endpoints",
        none(),
        &one(Fake::new("a").hosts(&["this-is-an-exceedingly-long-label-that-external-dns-should-reject.example.org"])),
        &[],
    );
}

// ------------------------------------------------------------- testEndpointsFromIngressHostnameSourceAnnotation

#[test]
fn hostname_source_annotation() {
    let base = || Fake::new("a").hosts(&["foo.bar"]).lb(&["lb.com"]);
    case(
        "No ingress-hostname-source annotation, one rule.host, one annotation host",
        none(),
        &[base().ann(ga("hostname"), "foo.baz")],
        &["foo.bar CNAME lb.com", "foo.baz CNAME lb.com"],
    );
    case(
        "No ingress-hostname-source annotation, one rule.host",
        none(),
        &[base()],
        &["foo.bar CNAME lb.com"],
    );
    case(
        "Ingress-hostname-source=defined-hosts-only, one rule.host, one annotation host",
        none(),
        &[base()
            .ann(ga("hostname"), "foo.baz")
            .ann(ga("ingress-hostname-source"), "defined-hosts-only")],
        &["foo.bar CNAME lb.com"],
    );
    case(
        "Ingress-hostname-source=annotation-only, one rule.host, one annotation host",
        none(),
        &[base()
            .ann(ga("hostname"), "foo.baz")
            .ann(ga("ingress-hostname-source"), "annotation-only")],
        &["foo.baz CNAME lb.com"],
    );
    // extdns's own rows: the value is case-insensitive, either prefix is read, and an unknown value
    // publishes neither the rules nor the annotation (external-dns's `endpointsFromIngress`).
    case(
        "Ingress-hostname-source=Annotation-Only under the alpha prefix",
        none(),
        &[base()
            .ann(format!("{PREFIX_ALPHA}hostname"), "foo.baz")
            .ann(format!("{PREFIX_ALPHA}ingress-hostname-source"), "Annotation-Only")],
        &["foo.baz CNAME lb.com"],
    );
    case(
        "unknown ingress-hostname-source",
        none(),
        &[base()
            .ann(ga("hostname"), "foo.baz")
            .ann(ga("ingress-hostname-source"), "both")],
        &[],
    );
}

// ----------------------------------------------------------------------------------- testIngressEndpoints

#[test]
fn ingress_endpoints() {
    case("no ingress", none(), &[], &[]);
    let two = || {
        vec![
            Fake::new("fake1").hosts(&["example.org"]).ips(&["8.8.8.8"]),
            Fake::new("fake2").hosts(&["new.org"]).lb(&["lb.com"]),
        ]
    };
    case(
        "two simple ingresses",
        none(),
        &two(),
        &["example.org A 8.8.8.8", "new.org CNAME lb.com"],
    );
    case(
        "ipv6 ingress",
        none(),
        &[Fake::new("fake1").hosts(&["example.org"]).ips(&["2001:DB8::1"])],
        &["example.org AAAA 2001:DB8::1"],
    );
    case(
        "dualstack ingress",
        none(),
        &[Fake::new("fake1")
            .hosts(&["example.org"])
            .ips(&["8.8.8.8", "2001:DB8::1"])],
        &["example.org A 8.8.8.8", "example.org AAAA 2001:DB8::1"],
    );
    case(
        "ignore rules",
        Flags::own(Own {
            ignore_rules: true,
            ..Own::default()
        }),
        &two(),
        &[],
    );
    let two_ns = || {
        vec![
            Fake::new("fake1")
                .ns("testing1")
                .hosts(&["example.org"])
                .ips(&["8.8.8.8"]),
            Fake::new("fake2").ns("testing2").hosts(&["new.org"]).lb(&["lb.com"]),
        ]
    };
    case(
        "two simple ingresses on different namespaces",
        none(),
        &two_ns(),
        &["example.org A 8.8.8.8", "new.org CNAME lb.com"],
    );
    case(
        "two simple ingresses on different namespaces with target namespace",
        Flags {
            namespace: Some("testing1"),
            ..none()
        },
        &two_ns(),
        &["example.org A 8.8.8.8"],
    );
    let classed = |c: &'static str| {
        vec![
            Fake::new("fake1")
                .ann("kubernetes.io/ingress.class", c)
                .hosts(&["example.org"])
                .ips(&["8.8.8.8"]),
        ]
    };
    let filter = |f: &'static str| Flags {
        annotation_filter: f,
        ..none()
    };
    case(
        "valid matching annotation filter expression",
        filter("kubernetes.io/ingress.class in (alb, nginx)"),
        &classed("nginx"),
        &["example.org A 8.8.8.8"],
    );
    case(
        "valid non-matching annotation filter expression",
        filter("kubernetes.io/ingress.class in (alb, nginx)"),
        &classed("tectonic"),
        &[],
    );
    // "invalid annotation filter expression": extdns refuses an unparsable filter at startup
    // (crates/extdns settings), so there is no source to run it on.
    case(
        "valid matching annotation filter label",
        filter("kubernetes.io/ingress.class=nginx"),
        &classed("nginx"),
        &["example.org A 8.8.8.8"],
    );
    case(
        "valid non-matching annotation filter label",
        filter("kubernetes.io/ingress.class=nginx"),
        &classed("alb"),
        &[],
    );
    case(
        "our controller type is dns-controller",
        none(),
        &[Fake::new("fake1")
            .ann(ga("controller"), "dns-controller")
            .hosts(&["example.org"])
            .ips(&["8.8.8.8"])],
        &["example.org A 8.8.8.8"],
    );
    case(
        "different controller types are ignored",
        none(),
        &[Fake::new("fake1")
            .ann(ga("controller"), "some-other-tool")
            .hosts(&["example.org"])
            .ips(&["8.8.8.8"])],
        &[],
    );
    let template = |t: &'static str| Flags {
        fqdn_template: Some(t),
        ..none()
    };
    case(
        "template for ingress if host is missing",
        template("{{.Name}}.ext-dns.test.com"),
        &[Fake::new("fake1")
            .ann(ga("controller"), "dns-controller")
            .ips(&["8.8.8.8"])
            .lb(&["elb.com"])],
        &[
            "fake1.ext-dns.test.com A 8.8.8.8",
            "fake1.ext-dns.test.com CNAME elb.com",
        ],
    );
    case(
        "another controller annotation skipped even with template",
        template("{{.Name}}.ext-dns.test.com"),
        &[Fake::new("fake1")
            .ann(ga("controller"), "other-controller")
            .ips(&["8.8.8.8"])],
        &[],
    );
    case(
        "multiple FQDN template hostnames",
        template("{{.Name}}.ext-dns.test.com, {{.Name}}.ext-dna.test.com"),
        &[Fake::new("fake1").ips(&["8.8.8.8"])],
        &["fake1.ext-dns.test.com A 8.8.8.8", "fake1.ext-dna.test.com A 8.8.8.8"],
    );
    case(
        "multiple FQDN template hostnames (combined with annotations)",
        Flags {
            fqdn_template: Some("{{.Name}}.ext-dns.test.com, {{.Name}}.ext-dna.test.com"),
            combine: true,
            ..none()
        },
        &[
            Fake::new("fake1").ips(&["8.8.8.8"]),
            Fake::new("fake2")
                .ann(ga("target"), "ingress-target.com")
                .hosts(&["example.org"]),
        ],
        &[
            "fake1.ext-dns.test.com A 8.8.8.8",
            "fake1.ext-dna.test.com A 8.8.8.8",
            "example.org CNAME ingress-target.com",
            "fake2.ext-dns.test.com CNAME ingress-target.com",
            "fake2.ext-dna.test.com CNAME ingress-target.com",
        ],
    );
    case(
        "ingress rules with annotation",
        none(),
        &[
            Fake::new("fake1")
                .ann(ga("target"), "ingress-target.com")
                .hosts(&["example.org"]),
            Fake::new("fake2")
                .ann(ga("target"), "ingress-target.com")
                .hosts(&["example2.org"])
                .ips(&["8.8.8.8"]),
            Fake::new("fake3").ann(ga("target"), "1.2.3.4").hosts(&["example3.org"]),
        ],
        &[
            "example.org CNAME ingress-target.com",
            "example2.org CNAME ingress-target.com",
            "example3.org A 1.2.3.4",
        ],
    );
    case(
        "ingress rules with single tls having single hostname",
        none(),
        &[Fake::new("fake1").tls(&["example.org"]).ips(&["1.2.3.4"])],
        &["example.org A 1.2.3.4"],
    );
    case(
        "ingress rules with single tls having multiple hostnames",
        none(),
        &[Fake::new("fake1")
            .tls(&["example.org", "example2.org"])
            .ips(&["1.2.3.4"])],
        &["example.org A 1.2.3.4", "example2.org A 1.2.3.4"],
    );
    case(
        "ingress rules with multiple tls having multiple hostnames",
        none(),
        &[Fake::new("fake1")
            .tls(&["example.org", "example2.org"])
            .tls(&["example3.org", "example4.org"])
            .ips(&["1.2.3.4"])],
        &[
            "example.org A 1.2.3.4",
            "example2.org A 1.2.3.4",
            "example3.org A 1.2.3.4",
            "example4.org A 1.2.3.4",
        ],
    );
    case(
        "ingress rules with hostname annotation",
        none(),
        &[Fake::new("fake1")
            .ann(ga("hostname"), "dns-through-hostname.com")
            .hosts(&["example.org"])
            .ips(&["1.2.3.4"])],
        &["example.org A 1.2.3.4", "dns-through-hostname.com A 1.2.3.4"],
    );
    case(
        "ingress rules with hostname annotation having multiple hostnames",
        none(),
        &[Fake::new("fake1")
            .ann(
                ga("hostname"),
                "dns-through-hostname.com, another-dns-through-hostname.com",
            )
            .hosts(&["example.org"])
            .ips(&["1.2.3.4"])],
        &[
            "example.org A 1.2.3.4",
            "dns-through-hostname.com A 1.2.3.4",
            "another-dns-through-hostname.com A 1.2.3.4",
        ],
    );
    case(
        "ingress rules with hostname and target annotation",
        none(),
        &[Fake::new("fake1")
            .ann(ga("hostname"), "dns-through-hostname.com")
            .ann(ga("target"), "ingress-target.com")
            .hosts(&["example.org"])],
        &[
            "example.org CNAME ingress-target.com",
            "dns-through-hostname.com CNAME ingress-target.com",
        ],
    );
    case(
        "ingress rules with annotation and custom TTL",
        none(),
        &[
            Fake::new("fake1")
                .ann(ga("target"), "ingress-target.com")
                .ann(ga("ttl"), "6")
                .hosts(&["example.org"]),
            Fake::new("fake2")
                .ann(ga("target"), "ingress-target.com")
                .ann(ga("ttl"), "1")
                .hosts(&["example2.org"])
                .ips(&["8.8.8.8"]),
            Fake::new("fake3")
                .ann(ga("target"), "ingress-target.com")
                .ann(ga("ttl"), "10s")
                .hosts(&["example3.org"])
                .ips(&["8.8.4.4"]),
        ],
        &[
            "example.org CNAME ingress-target.com ttl=6",
            "example2.org CNAME ingress-target.com ttl=1",
            "example3.org CNAME ingress-target.com ttl=10",
        ],
    );
    case(
        "ingress rules with alias and target annotation",
        none(),
        &[Fake::new("fake1")
            .ann(ga("target"), "ingress-target.com")
            .ann(ga("alias"), "true")
            .hosts(&["example.org"])],
        &["example.org CNAME ingress-target.com alias=true"],
    );
    case(
        "ingress rules with alias set false and target annotation",
        none(),
        &[Fake::new("fake1")
            .ann(ga("target"), "ingress-target.com")
            .ann(ga("alias"), "false")
            .hosts(&["example.org"])],
        &["example.org CNAME ingress-target.com"],
    );
    case(
        "template for ingress with annotation",
        template("{{.Name}}.ext-dns.test.com"),
        &[
            Fake::new("fake1").ann(ga("target"), "ingress-target.com"),
            Fake::new("fake2")
                .ann(ga("target"), "ingress-target.com")
                .ips(&["8.8.8.8"]),
            Fake::new("fake3").ann(ga("target"), "1.2.3.4"),
        ],
        &[
            "fake1.ext-dns.test.com CNAME ingress-target.com",
            "fake2.ext-dns.test.com CNAME ingress-target.com",
            "fake3.ext-dns.test.com A 1.2.3.4",
        ],
    );
    case(
        "Ingress with empty annotation",
        template("{{.Name}}.ext-dns.test.com"),
        &[Fake::new("fake1").ann(ga("target"), "")],
        &[],
    );
    case(
        "ignore hostname annotation",
        Flags {
            ignore_hostname_annotation: true,
            ..none()
        },
        &[
            Fake::new("fake1").hosts(&["example.org"]).ips(&["8.8.8.8"]),
            Fake::new("fake2")
                .ann(ga("hostname"), "dns-through-hostname.com")
                .hosts(&["new.org"])
                .lb(&["lb.com"]),
        ],
        &["example.org A 8.8.8.8", "new.org CNAME lb.com"],
    );
    case(
        "ignore tls section",
        Flags::own(Own {
            ignore_tls: true,
            ..Own::default()
        }),
        &[Fake::new("fake1").tls(&["example.org"]).ips(&["1.2.3.4"])],
        &[],
    );
    case(
        "reading tls section",
        none(),
        &[Fake::new("fake1").tls(&["example.org"]).ips(&["1.2.3.4"])],
        &["example.org A 1.2.3.4"],
    );
    case(
        "ingressClassName filtering",
        Flags::own(Own {
            classes: vec!["public", "dmz"],
            ..Own::default()
        }),
        &[
            Fake::new("none").tls(&["none.example.org"]).ips(&["1.0.0.0"]),
            Fake::new("fake-public")
                .tls(&["example.org"])
                .ips(&["1.2.3.4"])
                .class("public"),
            Fake::new("fake-internal")
                .tls(&["int.example.org"])
                .ips(&["2.3.4.5"])
                .class("internal"),
            Fake::new("fake-dmz")
                .tls(&["dmz.example.org"])
                .ips(&["3.4.5.6"])
                .class("dmz"),
            Fake::new("annotated-dmz")
                .tls(&["annodmz.example.org"])
                .ips(&["4.5.6.7"])
                .ann("kubernetes.io/ingress.class", "dmz"),
            Fake::new("fake-internal-annotated-dmz")
                .tls(&["int-annodmz.example.org"])
                .ips(&["5.6.7.8"])
                .ann("kubernetes.io/ingress.class", "dmz")
                .class("internal"),
            Fake::new("fake-dmz-annotated-internal")
                .tls(&["dmz-annoint.example.org"])
                .ips(&["6.7.8.9"])
                .ann("kubernetes.io/ingress.class", "internal")
                .class("dmz"),
            Fake::new("empty-annotated-dmz")
                .tls(&["empty-annotdmz.example.org"])
                .ips(&["7.8.9.0"])
                .ann("kubernetes.io/ingress.class", "dmz")
                .class(""),
            Fake::new("empty-annotated-internal")
                .tls(&["empty-annotint.example.org"])
                .ips(&["8.9.0.1"])
                .ann("kubernetes.io/ingress.class", "internal")
                .class(""),
        ],
        &[
            "example.org A 1.2.3.4",
            "dmz.example.org A 3.4.5.6",
            "annodmz.example.org A 4.5.6.7",
            "dmz-annoint.example.org A 6.7.8.9",
            "empty-annotdmz.example.org A 7.8.9.0",
        ],
    );
    let labelled = |app: &'static str| {
        vec![
            Fake::new("fake1")
                .hosts(&["example.org"])
                .ips(&["8.8.8.8"])
                .label("app", app)
                .label("name", "reverse-proxy"),
        ]
    };
    let label = Flags {
        label_filter: "app=web-external",
        ..none()
    };
    case(
        "ingress with matching labels",
        label,
        &labelled("web-external"),
        &["example.org A 8.8.8.8"],
    );
    let label = Flags {
        label_filter: "app=web-external",
        ..none()
    };
    case("ingress without matching labels", label, &labelled("web-internal"), &[]);
}

// ----------------------------------------------------------------------------- TestIngressWithConfiguration

#[test]
fn ingress_with_configuration() {
    case(
        "hostname and targets configured as annotations",
        none(),
        &[Fake::new("my-ingress")
            .ns("default")
            .ann(ga("hostname"), "bla.example.org")
            .ann(ga("target"), "target.example.org")
            .class("nginx")
            .hosts(&["app.example.com"])
            .ips(&["1.2.3.4"])],
        &[
            "app.example.com CNAME target.example.org",
            "bla.example.org CNAME target.example.org",
        ],
    );
    let wildcard = || {
        vec![
            Fake::new("my-ingress")
                .ns("default")
                .class("alb")
                .tls(&["*.example.com"])
                .hosts(&["abc.example.com"])
                .ips(&["1.2.3.4"]),
        ]
    };
    case(
        "ingress with spec.tls with wildcard domains and tls not ignored",
        none(),
        &wildcard(),
        &["abc.example.com A 1.2.3.4", "*.example.com A 1.2.3.4"],
    );
    case(
        "ingress with spec.tls with wildcard domains and tls is ignored",
        Flags::own(Own {
            ignore_tls: true,
            ..Own::default()
        }),
        &wildcard(),
        &["abc.example.com A 1.2.3.4"],
    );
    let keycloak = [
        Fake::new("keycloak")
            .ns("default")
            .ann(ga("hostname"), "keycloak.blah.com")
            .hosts(&["keycloak.blah.com"])
            .lb(&["blah-1922533626.us-west-2.elb.amazonaws.com"]),
        Fake::new("keycloak-another")
            .ns("default")
            .ann(ga("hostname"), "anotherkeycloak.blah.com")
            .class("alb")
            .hosts(&["keycloak.blah.com"])
            .lb(&["blah-3488114.us-west-2.elb.amazonaws.com"]),
    ];
    let endpoints = run(&none(), &keycloak);
    let mut got: Vec<(String, String)> = endpoints
        .iter()
        .map(|e| (render(e), e.resource().unwrap_or_default().into_owned()))
        .collect();
    got.sort();
    assert_eq!(
        got,
        vec![
            (
                "anotherkeycloak.blah.com CNAME blah-3488114.us-west-2.elb.amazonaws.com".to_string(),
                "ingress/default/keycloak-another".to_string()
            ),
            (
                "keycloak.blah.com CNAME blah-1922533626.us-west-2.elb.amazonaws.com".to_string(),
                "ingress/default/keycloak".to_string()
            ),
            (
                "keycloak.blah.com CNAME blah-3488114.us-west-2.elb.amazonaws.com".to_string(),
                "ingress/default/keycloak-another".to_string()
            ),
        ],
        "multiple ingresses with same hostname, different CNAME targets and hostname annotation override"
    );
    case(
        "multiple ingresses with same hostname, different IPs from different ingressClasses are merged",
        none(),
        &[
            Fake::new("my-service")
                .ns("old-ns")
                .class("old-class")
                .hosts(&["my-service.example.com"])
                .ips(&["10.0.0.1"]),
            Fake::new("my-service")
                .ns("new-ns")
                .class("new-class")
                .hosts(&["my-service.example.com"])
                .ips(&["10.0.0.2"]),
        ],
        &["my-service.example.com A 10.0.0.1,10.0.0.2"],
    );
    // The AWS Load Balancer Controller's frontend NLB: its hostname beside the ALB's in the status.
    let alb_with_nlb = || {
        Fake::new("my-ingress")
            .ns("default")
            .ann("alb.ingress.kubernetes.io/enable-frontend-nlb", "true")
            .ann("alb.ingress.kubernetes.io/frontend-nlb-scheme", "internal")
            .class("alb")
            .hosts(&["some.subdomain.mydomain.com"])
            .lb(&[
                "internal-k8s-some-domain.us-east-1.elb.amazonaws.com",
                "k8s-another-domain-nlb-123456789.elb.us-east-1.amazonaws.com",
            ])
    };
    case(
        "ingress with when AWS ALB controller and NLB type generates two targets for CNAME",
        none(),
        &[alb_with_nlb()],
        &[
            "some.subdomain.mydomain.com CNAME internal-k8s-some-domain.us-east-1.elb.amazonaws.com,k8s-another-domain-nlb-123456789.elb.us-east-1.amazonaws.com",
        ],
    );
    case(
        "ingress with when AWS ALB controller and NLB with target annotation and CNAME with single target",
        none(),
        &[alb_with_nlb().ann(
            ga("target"),
            "k8s-another-domain-nlb-123456789.elb.us-east-1.amazonaws.com",
        )],
        &["some.subdomain.mydomain.com CNAME k8s-another-domain-nlb-123456789.elb.us-east-1.amazonaws.com"],
    );
    case(
        "no annotations, multiple ingresses, mixed IP and Hostname targets",
        none(),
        &[Fake::new("my-ingress")
            .ns("default")
            .class("alb")
            .hosts(&["app.example.com"])
            .ips(&["1.2.3.4"])
            .lb(&["foo.tld"])],
        &["app.example.com A 1.2.3.4", "app.example.com CNAME foo.tld"],
    );
}

// ------------------------------------------------------------------------------------------- extdns's own

#[test]
fn a_failing_template_fails_only_its_ingress() {
    let src = source(&Flags {
        fqdn_template: Some("{{.Spec.Nope}}.example.org"),
        ..none()
    });
    let store = cluster(
        &[
            Fake::new("ok").hosts(&["ok.example.org"]).ips(&["192.0.2.1"]),
            Fake::new("bad").ips(&["192.0.2.2"]),
        ],
        LoadOptions::default(),
    );
    let bad = ObjectKey::new(ResourceKind::Ingress, NS, "bad");
    check_fails_alone(&src, &store, &bad, &["ok.example.org"]);
}

#[test]
fn a_change_re_evaluates_only_the_changed_ingress() {
    let src = source(&none());
    let store = cluster(
        &[
            Fake::new("a").hosts(&["a.example.org"]).ips(&["192.0.2.1"]),
            Fake::new("b").hosts(&["b.example.org"]).ips(&["192.0.2.2"]),
        ],
        LoadOptions::default(),
    );
    let a = ObjectKey::new(ResourceKind::Ingress, NS, "a");
    // A Service change re-evaluates no Ingress.
    let service = ObjectKey::new(ResourceKind::Service, NS, "a");
    check_reads_only_itself(&src, &store, &a, &service);
    assert_eq!(src.watched_kinds(), vec![ResourceKind::Ingress]);
}

#[test]
fn a_template_reads_the_ingress_go_fields() {
    case(
        "template over spec and status",
        Flags {
            fqdn_template: Some(
                "{{range .Spec.Rules}}{{.Host}}.copy.example.org,{{end}}{{(index .Status.LoadBalancer.Ingress 0).IP | printf \"ip-%s\"}}.example.org",
            ),
            ..none()
        },
        &[Fake::new("t").ann(ga("target"), "192.0.2.9").ips(&["192.0.2.1"])],
        &["ip-192.0.2.1.example.org A 192.0.2.9"],
    );
}

/// Two Ingresses publish one name with the same targets: the one with a configured TTL comes first, so the
/// pipeline's deduplication keeps it (its TTL and its `resource` label), whatever the names; with both
/// configured, the first by namespace and name. The same every sync ([`extdns_source::tie`]).
#[test]
fn the_tie_break_of_equal_records_is_the_configured_ttl_then_object_order() {
    let winner = |items: &[Fake]| -> (String, i64) {
        let eps = run(&none(), items);
        let e = eps
            .iter()
            .find(|e| e.dns_name == "shared.example.org")
            .expect("published");
        (e.resource().unwrap_or_default().into_owned(), e.record_ttl.0)
    };
    let plain = |n| Fake::new(n).hosts(&["shared.example.org"]).ips(&["192.0.2.1"]);
    assert_eq!(
        winner(&[plain("a"), plain("b").ann(ga("ttl"), "300")]),
        ("ingress/testing/b".to_string(), 300)
    );
    assert_eq!(
        winner(&[plain("a").ann(ga("ttl"), "300"), plain("b")]),
        ("ingress/testing/a".to_string(), 300)
    );
    assert_eq!(
        winner(&[plain("a").ann(ga("ttl"), "600"), plain("b").ann(ga("ttl"), "300")]),
        ("ingress/testing/a".to_string(), 600)
    );
    assert_eq!(winner(&[plain("b"), plain("a")]).0, "ingress/testing/a");
}
