//! Incremental reconcile, for every route kind: a change to a route, a Gateway, a ListenerSet or a
//! Namespace names every route whose endpoints it changed (and not the unrelated ones), and the pipeline's
//! incremental path then yields exactly what a full evaluation yields for the affected names.

use std::collections::{BTreeMap, BTreeSet};

use extdns_source::pipeline::testing::{check_affected, check_against_full, endpoints_by_object};
use extdns_source::{Pipeline, PipelineConfig};

use super::*;

/// A cluster as plain lists, so a test can change one object and build the store again.
#[derive(Clone)]
struct Fixture {
    gateways: Vec<Gateway>,
    listener_sets: Vec<ListenerSet>,
    namespaces: Vec<Namespace>,
    routes: Vec<Route>,
}

impl Fixture {
    fn store(&self) -> ClusterStore {
        let mut c = ClusterStore::new();
        c.extend(self.gateways.iter().cloned());
        c.extend(self.listener_sets.iter().cloned());
        c.extend(self.namespaces.iter().cloned());
        c.extend(self.routes.iter().cloned());
        c
    }

    fn gateway(&mut self, name: &str) -> &mut Gateway {
        let found = self.gateways.iter_mut().find(|g| g.meta.name == name);
        found.unwrap_or_else(|| panic!("no Gateway {name} in the fixture"))
    }

    fn namespace(&mut self, name: &str) -> &mut Namespace {
        let found = self.namespaces.iter_mut().find(|n| n.name == name);
        found.unwrap_or_else(|| panic!("no Namespace {name} in the fixture"))
    }

    /// The route `name` (route names are unique in the fixture).
    fn route(&mut self, name: &str) -> &mut Route {
        let found = self.routes.iter_mut().find(|r| r.meta.name == name);
        found.unwrap_or_else(|| panic!("no route {name} in the fixture"))
    }
}

/// One listener per protocol, so every route kind finds one.
fn listeners(allowed: impl Fn(Listener) -> Listener) -> Vec<Listener> {
    [
        ("http", "HTTP", 80),
        ("tls", "TLS", 443),
        ("tcp", "TCP", 9000),
        ("udp", "UDP", 5353),
    ]
    .into_iter()
    .map(|(name, protocol, port)| allowed(listener(name, protocol, port, None)))
    .collect()
}

fn named(kind: RouteKind, ns: &str, name: &str, hostnames: &str, parent: ParentReference) -> Route {
    route(kind, ns, name, &[], &[parent]).with_annotation(ALPHA, "hostname", hostnames)
}

/// Gateways `infra/gw` (ListenerSets from `team=a` namespaces), `infra/sel` (routes from `team=a`
/// namespaces only) and `infra/gw2`; ListenerSet `lsns/ls` on `gw`; routes of `kind` on each, two of
/// them sharing a name.
fn base(kind: RouteKind) -> Fixture {
    let team_a = || Some(selector(&[("team", "a")]));
    let mut gw = gateway("infra", "gw", listeners(|l| l), &["192.0.2.1"]);
    gw.allowed_listeners = Some(AllowedListeners {
        namespaces_from: Some("Selector".into()),
        namespaces_selector: team_a(),
    });
    let sel = gateway(
        "infra",
        "sel",
        listeners(|l| allowing(l, Some("Selector"), team_a(), &[])),
        &["192.0.2.2"],
    );
    let gw2 = gateway("infra", "gw2", listeners(|l| l), &["192.0.2.3"]);
    let ls = listener_set("lsns", "ls", gw_ref("infra", "gw"), listeners(|l| l));
    let routes = vec![
        named(
            kind,
            "apps",
            "r-gw",
            "gw.example.org,shared.example.org,ttl.example.org",
            gw_ref("infra", "gw"),
        ),
        // Same name and targets as r-gw, with a TTL: its record is put first.
        named(kind, "apps", "r-ttl", "ttl.example.org", gw_ref("infra", "gw")).annotated(&[
            (&format!("{ALPHA}hostname"), "ttl.example.org"),
            (&format!("{ALPHA}ttl"), "60"),
        ]),
        named(
            kind,
            "apps",
            "r-gw2",
            "gw2.example.org,shared.example.org",
            gw_ref("infra", "gw2"),
        ),
        named(kind, "apps", "r-sel", "sel.example.org", gw_ref("infra", "sel")),
        named(kind, "other", "r-sel2", "sel2.example.org", gw_ref("infra", "sel")),
        named(kind, "apps", "r-ls", "ls.example.org", ls_ref("lsns", "ls")),
        named(kind, "other", "r-other", "other.example.org", gw_ref("infra", "gw2")),
    ];
    Fixture {
        gateways: vec![gw, sel, gw2],
        listener_sets: vec![ls],
        namespaces: vec![
            namespace("apps", &[("team", "a")]),
            namespace("other", &[("team", "b")]),
            namespace("lsns", &[("team", "a")]),
            namespace("infra", &[]),
        ],
        routes,
    }
}

fn source(kind: RouteKind) -> GatewayRouteSource {
    GatewayRouteSource::new(kind, with_listener_sets())
}

/// Each name's records.
/// Each route's endpoints and failure, by `resource` key.
fn by_object(kind: RouteKind, c: &ClusterStore) -> BTreeMap<String, String> {
    block_on(endpoints_by_object(&source(kind), c))
}

pub(super) fn block_on<F: std::future::Future>(f: F) -> F::Output {
    match tokio::runtime::Builder::new_current_thread().build() {
        Ok(rt) => rt.block_on(f),
        Err(e) => panic!("no runtime: {e}"),
    }
}

/// How route `ns/name` of `kind` is named in the maps compared.
fn key(kind: RouteKind, ns_name: &str) -> String {
    format!("{} {ns_name}", kind.kind())
}

/// Applies a change to the fixture of every route kind and checks it from every side; `must_change` are
/// the routes (`ns/name`) the change is known to alter, so the test cannot pass by changing nothing;
/// `unrelated` routes must not be named.
fn check(
    change: impl Fn(&mut Fixture),
    changes: impl Fn(RouteKind) -> ChangeSet,
    must_change: &[&str],
    unrelated: &[&str],
) {
    for kind in RouteKind::ALL {
        let before = base(kind);
        let mut after = base(kind);
        change(&mut after);
        let changes = changes(kind);
        let (before, after) = (before.store(), after.store());

        let context = format!("{kind:?}");
        let named = |rs: &[&str]| -> Vec<String> { rs.iter().map(|r| key(kind, r)).collect() };
        block_on(check_affected(
            &source(kind),
            &before,
            &after,
            &changes,
            &named(must_change),
            &named(unrelated),
            &context,
        ));
        let p = Pipeline::new(vec![Box::new(source(kind))], PipelineConfig::default());
        block_on(check_against_full(&p, &before, &after, &changes, &context));
    }
}

/// The change of route `ns/name`, of whichever kind is checked.
fn route_changed(ns: &'static str, name: &'static str) -> impl Fn(RouteKind) -> ChangeSet {
    move |kind| ChangeSet::of(ObjectKey::new(ResourceKind::Route(kind), ns, name))
}

/// The change of object `ns/name` of `kind`, for every route kind checked.
fn changed(kind: ResourceKind, ns: &'static str, name: &'static str) -> impl Fn(RouteKind) -> ChangeSet {
    move |_| ChangeSet::of(ObjectKey::new(kind, ns, name))
}

#[test]
fn a_route_change_affects_that_route_only() {
    check(
        |f| {
            let r = f.route("r-gw2");
            r.annotate(&[(&format!("{ALPHA}hostname"), "gw2b.example.org,shared.example.org")]);
        },
        route_changed("apps", "r-gw2"),
        &["apps/r-gw2"],
        &["apps/r-gw", "apps/r-sel", "other/r-sel2", "apps/r-ls", "other/r-other"],
    );
}

#[test]
fn a_route_sharing_a_name_and_targets_keeps_its_configured_ttl_first() {
    check(
        |f| {
            let r = f.route("r-ttl");
            r.annotate(&[
                (&format!("{ALPHA}hostname"), "ttl.example.org"),
                (&format!("{ALPHA}ttl"), "120"),
            ]);
        },
        route_changed("apps", "r-ttl"),
        &["apps/r-ttl"],
        &["apps/r-gw", "apps/r-gw2", "apps/r-sel", "apps/r-ls", "other/r-other"],
    );
}

#[test]
fn a_deleted_route_leaves_the_shared_name_to_the_other() {
    check(
        |f| f.routes.retain(|r| r.meta.name != "r-gw"),
        route_changed("apps", "r-gw"),
        &["apps/r-gw"],
        &["apps/r-gw2", "apps/r-sel", "apps/r-ls", "other/r-other"],
    );
}

#[test]
fn a_route_change_of_another_kind_affects_nothing() {
    let c = base(RouteKind::Http).store();
    let changes = ChangeSet::of(ObjectKey::new(ResourceKind::Route(RouteKind::Grpc), "apps", "r-gw"));
    assert_eq!(source(RouteKind::Http).affected(&c, &changes), Some(BTreeSet::new()));
    assert_eq!(source(RouteKind::Http).affected(&c, &ChangeSet::everything()), None);
}

#[test]
fn a_gateway_change_affects_its_routes_and_those_of_its_listener_sets() {
    check(
        |f| f.gateway("gw").addresses = vec!["192.0.2.9".into()],
        changed(ResourceKind::Gateway, "infra", "gw"),
        &["apps/r-gw", "apps/r-ls"],
        &["apps/r-gw2", "apps/r-sel", "other/r-sel2", "other/r-other"],
    );
}

/// external-dns #6545: a Gateway handed to another controller drops out, and its routes with it: the
/// change names them, and their records go as a deleted Gateway's would.
#[test]
fn gateway_controller_filter_6545_a_gateway_handed_to_another_controller_affects_its_routes() {
    check(
        |f| {
            f.gateway("gw2")
                .annotate(&[(&format!("{GA}controller"), "someone-else")])
        },
        changed(ResourceKind::Gateway, "infra", "gw2"),
        &["apps/r-gw2", "other/r-other"],
        &["apps/r-gw", "apps/r-sel", "other/r-sel2", "apps/r-ls"],
    );
}

#[test]
fn a_deleted_gateway_affects_its_routes() {
    check(
        |f| f.gateways.retain(|g| g.meta.name != "gw2"),
        changed(ResourceKind::Gateway, "infra", "gw2"),
        &["apps/r-gw2", "other/r-other"],
        &["apps/r-gw", "apps/r-sel", "other/r-sel2", "apps/r-ls"],
    );
}

#[test]
fn a_listener_set_change_affects_its_routes() {
    check(
        |f| {
            let ls = &mut f.listener_sets[0];
            ls.annotate(&[(&format!("{ALPHA}target"), "198.51.100.7")]);
        },
        changed(ResourceKind::ListenerSet, "lsns", "ls"),
        &["apps/r-ls"],
        &["apps/r-gw", "apps/r-gw2", "apps/r-sel", "other/r-sel2", "other/r-other"],
    );
}

#[test]
fn a_namespace_change_affects_the_routes_it_holds() {
    check(
        |f| f.namespace("other").labels = [("team", "a")].into_iter().collect(),
        changed(ResourceKind::Namespace, "", "other"),
        &["other/r-sel2"],
        &["apps/r-gw", "apps/r-gw2", "apps/r-sel", "apps/r-ls"],
    );
}

#[test]
fn a_namespace_change_affects_the_routes_of_the_listener_sets_it_holds() {
    check(
        |f| f.namespace("lsns").labels = [("team", "b")].into_iter().collect(),
        changed(ResourceKind::Namespace, "", "lsns"),
        &["apps/r-ls"],
        &["apps/r-gw", "apps/r-gw2", "apps/r-sel", "other/r-sel2", "other/r-other"],
    );
}

#[test]
fn the_fixture_publishes_through_every_parent() {
    for kind in RouteKind::ALL {
        let objects = by_object(kind, &base(kind).store());
        let published: Vec<String> = objects.keys().cloned().collect();
        let expected: Vec<String> = [
            "apps/r-gw",
            "apps/r-gw2",
            "apps/r-ls",
            "apps/r-sel",
            "apps/r-ttl",
            "other/r-other",
        ]
        .iter()
        .map(|r| key(kind, r))
        .collect();
        assert_eq!(published, expected, "{kind:?}");
    }
}
