//! external-dns v0.23's `source/f5_virtualserver_test.go` and `f5_transportserver_test.go` rules, one test
//! each, then extdns's own: the kinds kept apart, incremental evaluation, the merge.
//!
//! Each object is written as the JSON an API server would hold (the fields F5's CRDs accept), loaded
//! through the manifest loader (the same ingest path as the live informer), so the conversion is under
//! test too.

use extdns_informer::{ClusterStore, LoadOptions, ObjectKey, ResourceKind};
use extdns_source::Source;
use extdns_source::annotations::PREFIX_ALPHA;
use extdns_source::pipeline::testing::{
    FakeMeta, Fixture, Flags, check_reads_only_itself, evaluate_ok, ga, load, rendered_labelled,
};
use serde_json::{Value, json};

use super::*;

const NS: &str = "default";

/// One VirtualServer or TransportServer as written.
#[derive(Clone)]
struct Fake {
    kind: F5Kind,
    meta: FakeMeta,
    host: Option<&'static str>,
    aliases: Vec<&'static str>,
    address: Option<&'static str>,
    vs_address: Option<&'static str>,
    status: &'static str,
}

fn vs(name: &'static str) -> Fake {
    Fake {
        kind: F5Kind::VirtualServer,
        meta: FakeMeta::new(name, NS),
        host: Some("www.example.com"),
        aliases: Vec::new(),
        address: None,
        vs_address: None,
        status: "OK",
    }
}

fn ts(name: &'static str) -> Fake {
    Fake {
        kind: F5Kind::TransportServer,
        ..vs(name)
    }
}

extdns_source::fixture!(Fake);

impl Fake {
    fn host(mut self, h: Option<&'static str>) -> Self {
        self.host = h;
        self
    }
    fn aliases(mut self, a: &[&'static str]) -> Self {
        self.aliases = a.to_vec();
        self
    }
    fn address(mut self, a: &'static str) -> Self {
        self.address = Some(a);
        self
    }
    fn vs_address(mut self, a: &'static str) -> Self {
        self.vs_address = Some(a);
        self
    }
    fn status(mut self, s: &'static str) -> Self {
        self.status = s;
        self
    }

    fn json(&self) -> Value {
        let (kind, mut spec) = match self.kind {
            F5Kind::VirtualServer => (
                "VirtualServer",
                json!({"pools": [{"service": "web", "servicePort": 80}]}),
            ),
            F5Kind::TransportServer => (
                "TransportServer",
                json!({"virtualServerPort": 5432, "mode": "standard", "pool": {"service": "db", "servicePort": 5432}}),
            ),
        };
        if let Some(h) = self.host {
            spec["host"] = json!(h);
        }
        if !self.aliases.is_empty() {
            spec["hostAliases"] = json!(self.aliases);
        }
        if let Some(a) = self.address {
            spec["virtualServerAddress"] = json!(a);
        }
        let mut status = json!({"status": self.status});
        if let Some(a) = self.vs_address {
            status["vsAddress"] = json!(a);
        }
        json!({
            "apiVersion": "cis.f5.com/v1",
            "kind": kind,
            "metadata": self.meta.json(),
            "spec": spec,
            "status": status,
        })
    }
}

/// A store holding `items`.
fn cluster(items: &[Fake]) -> ClusterStore {
    load(
        &items.iter().map(Fake::json).collect::<Vec<_>>(),
        LoadOptions::default(),
    )
}

fn source(kind: F5Kind, f: &Flags) -> F5Source {
    F5Source::new(kind, F5SourceConfig::new(f.config()))
}

/// The records `items` publish, rendered with their `resource` label and sorted; no object may fail.
fn run(kind: F5Kind, flags: &Flags, items: &[Fake]) -> Vec<String> {
    let store = load(
        &items.iter().map(Fake::json).collect::<Vec<_>>(),
        LoadOptions::default(),
    );
    rendered_labelled(&evaluate_ok(&source(kind, flags), &store))
}

/// Runs both kinds' cases: each rule holds for VirtualServers and TransportServers alike.
fn both(flags: Flags, make: impl Fn(Fake) -> Fake, expected: &[&str]) {
    for (kind, fake, label) in [
        (
            F5Kind::VirtualServer,
            vs("test"),
            "resource=f5-virtualserver/default/test",
        ),
        (
            F5Kind::TransportServer,
            ts("test"),
            "resource=f5-transportserver/default/test",
        ),
    ] {
        let want: Vec<String> = expected.iter().map(|e| format!("{e} {label}")).collect();
        assert_eq!(run(kind, &flags, &[make(fake)]), want, "{kind:?}");
    }
}

#[test]
fn the_target_annotation_wins_over_both_addresses() {
    both(
        Flags::default(),
        |f| {
            f.ann(ga("target"), "192.168.1.150")
                .address("192.168.1.100")
                .vs_address("192.168.1.200")
        },
        &["www.example.com A 192.168.1.150"],
    );
}

#[test]
fn the_virtual_server_address_is_the_target_without_an_annotation() {
    both(
        Flags::default(),
        |f| f.address("192.168.1.100").vs_address("192.168.1.200"),
        &["www.example.com A 192.168.1.100"],
    );
}

#[test]
fn the_status_address_is_the_target_when_the_spec_has_none() {
    both(
        Flags::default(),
        |f| f.vs_address("192.168.1.100"),
        &["www.example.com A 192.168.1.100"],
    );
}

#[test]
fn nothing_is_published_without_a_status_address() {
    both(Flags::default(), |f| f.address("192.168.1.100"), &[]);
    both(
        Flags::default(),
        |f| f.ann(ga("target"), "192.168.1.150").vs_address(""),
        &[],
    );
}

#[test]
fn a_status_address_of_none_in_any_case_publishes_nothing() {
    both(Flags::default(), |f| f.vs_address("None").status("OK"), &[]);
    both(Flags::default(), |f| f.address("192.168.1.100").vs_address("NONE"), &[]);
}

#[test]
fn an_error_status_with_a_valid_address_still_publishes() {
    both(
        Flags::default(),
        |f| {
            f.ann(ga("ttl"), "600")
                .address("192.168.1.100")
                .vs_address("192.168.1.100")
                .status("ERROR")
        },
        &["www.example.com A 192.168.1.100 ttl=600"],
    );
}

#[test]
fn the_ttl_annotation_sets_the_ttl_under_either_prefix() {
    both(
        Flags::default(),
        |f| f.ann(ga("ttl"), "1m").vs_address("192.168.1.100"),
        &["www.example.com A 192.168.1.100 ttl=60"],
    );
    both(
        Flags::default(),
        |f| f.ann(format!("{PREFIX_ALPHA}ttl"), "600").vs_address("192.168.1.100"),
        &["www.example.com A 192.168.1.100 ttl=600"],
    );
}

#[test]
fn a_matching_annotation_filter_admits_and_another_excludes() {
    let make = |f: Fake| f.ann("kubernetes.io/ingress.class", "f5").vs_address("192.168.1.100");
    both(
        Flags {
            annotation_filter: "kubernetes.io/ingress.class=f5",
            ..Flags::default()
        },
        make,
        &["www.example.com A 192.168.1.100"],
    );
    both(
        Flags {
            annotation_filter: "kubernetes.io/ingress.class=nginx",
            ..Flags::default()
        },
        make,
        &[],
    );
}

#[test]
fn a_matching_label_filter_admits_and_another_excludes() {
    let make = |f: Fake| f.label("app", "f5").vs_address("192.168.1.100");
    let filter = |label_filter| Flags {
        label_filter,
        ..Flags::default()
    };
    both(filter("app=f5"), make, &["www.example.com A 192.168.1.100"]);
    both(filter("app=other"), make, &[]);
}

#[test]
fn an_object_claimed_by_another_controller_is_excluded() {
    both(
        Flags::default(),
        |f| f.ann(ga("controller"), "someone-else").vs_address("192.168.1.100"),
        &[],
    );
}

#[test]
fn only_the_configured_namespace_is_read() {
    let flags = |namespace| Flags {
        namespace: Some(namespace),
        ..Flags::default()
    };
    both(flags("other"), |f| f.vs_address("192.168.1.100"), &[]);
    both(
        flags(NS),
        |f| f.vs_address("192.168.1.100"),
        &["www.example.com A 192.168.1.100"],
    );
}

#[test]
fn provider_specific_set_identifier_and_hostname_annotations_are_not_read() {
    both(
        Flags::default(),
        |f| {
            f.ann("external-dns.alpha.kubernetes.io/aws-weight", "10")
                .ann(ga("set-identifier"), "blue")
                .ann(ga("cloudflare-proxied"), "true")
                .ann(ga("hostname"), "other.example.com")
                .address("192.168.1.100")
                .vs_address("192.168.1.100")
        },
        &["www.example.com A 192.168.1.100"],
    );
}

#[test]
fn an_ipv6_address_makes_an_aaaa_record_and_a_hostname_target_a_cname() {
    both(
        Flags::default(),
        |f| f.address("2001:db8::1").vs_address("2001:db8::1"),
        &["www.example.com AAAA 2001:db8::1"],
    );
    both(
        Flags::default(),
        |f| f.ann(ga("target"), "lb.example.net").vs_address("192.168.1.100"),
        &["www.example.com CNAME lb.example.net"],
    );
}

#[test]
fn an_object_without_a_host_publishes_nothing() {
    both(Flags::default(), |f| f.host(None).vs_address("192.168.1.100"), &[]);
}

#[test]
fn host_aliases_publish_the_same_targets_and_ttl() {
    let make = || {
        vs("test")
            .aliases(&["alias1.example.com", "", "alias2.example.com"])
            .ann(ga("ttl"), "300")
            .vs_address("192.168.1.100")
    };
    let label = "ttl=300 resource=f5-virtualserver/default/test";
    assert_eq!(
        run(F5Kind::VirtualServer, &Flags::default(), &[make()]),
        vec![
            format!("alias1.example.com A 192.168.1.100 {label}"),
            format!("alias2.example.com A 192.168.1.100 {label}"),
            format!("www.example.com A 192.168.1.100 {label}"),
        ]
    );
    let annotated = vs("test")
        .aliases(&["alias.example.com"])
        .ann(ga("target"), "192.168.1.150")
        .vs_address("192.168.1.100");
    assert_eq!(
        run(F5Kind::VirtualServer, &Flags::default(), &[annotated]),
        vec![
            "alias.example.com A 192.168.1.150 resource=f5-virtualserver/default/test".to_string(),
            "www.example.com A 192.168.1.150 resource=f5-virtualserver/default/test".to_string(),
        ]
    );
}

#[test]
fn objects_sharing_a_name_merge_their_targets() {
    let items = [vs("a").vs_address("192.0.2.1"), vs("b").vs_address("192.0.2.2")];
    let got = run(F5Kind::VirtualServer, &Flags::default(), &items);
    assert_eq!(
        got,
        vec!["www.example.com A 192.0.2.1,192.0.2.2 resource=f5-virtualserver/default/a"]
    );
}

// ------------------------------------------------------------------------------------------- extdns's own

#[test]
fn each_source_reads_only_its_own_kind() {
    let items = [
        vs("web").host(Some("web.example.com")).vs_address("192.0.2.1"),
        ts("db").host(Some("db.example.com")).vs_address("192.0.2.2"),
    ];
    assert_eq!(
        run(F5Kind::VirtualServer, &Flags::default(), &items),
        vec!["web.example.com A 192.0.2.1 resource=f5-virtualserver/default/web"]
    );
    assert_eq!(
        run(F5Kind::TransportServer, &Flags::default(), &items),
        vec!["db.example.com A 192.0.2.2 resource=f5-transportserver/default/db"]
    );
    let ts_source = source(F5Kind::TransportServer, &Flags::default());
    assert_eq!(ts_source.name(), "f5-transportserver");
    assert_eq!(ts_source.watched_kinds(), vec![ResourceKind::F5TransportServer]);
}

#[test]
fn a_change_re_evaluates_only_the_changed_object() {
    let src = source(F5Kind::VirtualServer, &Flags::default());
    let store = cluster(&[
        vs("a").host(Some("a.example.com")).vs_address("192.0.2.1"),
        vs("b").host(Some("b.example.com")).vs_address("192.0.2.2"),
    ]);
    let a = ObjectKey::new(ResourceKind::F5VirtualServer, NS, "a");
    // A TransportServer change re-evaluates no VirtualServer.
    let other_kind = ObjectKey::new(ResourceKind::F5TransportServer, NS, "a");
    check_reads_only_itself(&src, &store, &a, &other_kind);
}
