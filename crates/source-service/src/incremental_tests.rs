//! Incremental reconcile: a change to one object names every Service whose endpoints it changed (and not
//! the unrelated ones), and the pipeline's incremental path then yields exactly what a full evaluation
//! yields for the affected names.

use std::collections::BTreeSet;

use extdns_informer::view::{EndpointSlice, Node, Pod, Service};
use extdns_informer::{ChangeSet, ClusterStore, ObjectKey, ResourceKind};
use extdns_source::pipeline::testing::{check_affected, check_against_full};
use extdns_source::{Objects, Pipeline, PipelineConfig, Source};
use futures::executor::block_on;

use crate::ServiceSourceConfig;
use crate::testutil::*;

/// A cluster as plain lists, so a test can change one object and build the store again.
#[derive(Clone)]
struct Fixture {
    services: Vec<Service>,
    slices: Vec<EndpointSlice>,
    pods: Vec<Pod>,
    nodes: Vec<Node>,
}

impl Fixture {
    fn store(&self) -> ClusterStore {
        let mut c = cluster_of(self.services.clone());
        c.extend(self.slices.iter().cloned());
        c.extend(self.pods.iter().cloned());
        c.extend(self.nodes.iter().cloned());
        c
    }

    fn service(&mut self, ns: &str, name: &str) -> &mut Service {
        let found = self
            .services
            .iter_mut()
            .find(|s| s.meta.namespace == ns && s.meta.name == name);
        found.unwrap_or_else(|| panic!("no Service {ns}/{name} in the fixture"))
    }

    fn pod(&mut self, ns: &str, name: &str) -> &mut Pod {
        let found = self.pods.iter_mut().find(|p| &*p.namespace == ns && &*p.name == name);
        found.unwrap_or_else(|| panic!("no Pod {ns}/{name} in the fixture"))
    }
}

fn on_node(node: &'static str) -> impl FnOnce(&mut Pod) {
    move |p: &mut Pod| p.node_name = Some(node.into())
}

/// Two namespaces with a Service of every kind that reads other objects, and some that read none.
fn base() -> Fixture {
    let services = vec![
        // Headless, publishing Pod addresses.
        Sv::new("a", "db", "ClusterIP")
            .headless()
            .selector("app", "db")
            .a("hostname", "db.example.com")
            .build(),
        // Headless, publishing the addresses of its Pods' nodes.
        Sv::new("a", "cache", "ClusterIP")
            .headless()
            .selector("app", "cache")
            .a("hostname", "cache.example.com")
            .a("endpoints-type", "NodeExternalIP")
            .build(),
        // NodePort with the Local traffic policy: the nodes running its Pods.
        Sv::new("a", "web", "NodePort")
            .cluster_ip("10.96.0.5")
            .selector("app", "web")
            .local()
            .a("hostname", "web.example.com")
            .build(),
        // NodePort on every node.
        Sv::new("a", "np", "NodePort")
            .cluster_ip("10.96.0.6")
            .a("hostname", "np.example.com")
            .port(Some("TCP"), Some(30080))
            .build(),
        Sv::lb("a", "lb")
            .a("hostname", "lb.example.com")
            .ingress_ip("192.0.2.1")
            .build(),
        // Two Services sharing a name: the merge joins their targets, owned by the first.
        Sv::lb("a", "shared1")
            .a("hostname", "shared.example.com")
            .ingress_ip("192.0.2.11")
            .build(),
        Sv::lb("a", "shared2")
            .a("hostname", "shared.example.com")
            .ingress_ip("192.0.2.12")
            .build(),
        Sv::new("a", "internal", "ClusterIP")
            .cluster_ip("10.96.0.7")
            .a("internal-hostname", "internal.example.com")
            .build(),
        // The same headless Service in another namespace, with a Pod of the same name.
        Sv::new("b", "db", "ClusterIP")
            .headless()
            .selector("app", "db")
            .a("hostname", "db.b.example.com")
            .build(),
    ];
    let slices = vec![
        ipv4_slice(
            "a",
            "db",
            &[("10.0.0.1", "db-0", Some(true)), ("10.0.0.2", "db-1", Some(true))],
        ),
        ipv4_slice("a", "cache", &[("10.0.1.1", "cache-0", Some(true))]),
        ipv4_slice("b", "db", &[("10.1.0.1", "db-0", Some(true))]),
    ];
    let pods = vec![
        pod_with("db-0", "a", &[("app", "db")], on_node("n1")),
        pod_with("db-1", "a", &[("app", "db")], on_node("n2")),
        pod_with("cache-0", "a", &[("app", "cache")], on_node("n1")),
        pod_with("web-0", "a", &[("app", "web")], on_node("n1")),
        pod_with("other", "a", &[("app", "other")], on_node("n2")),
        pod_with("db-0", "b", &[("app", "db")], on_node("n2")),
    ];
    let nodes = vec![
        node("n1", &[("InternalIP", "10.9.0.1"), ("ExternalIP", "203.0.113.1")]),
        node("n2", &[("InternalIP", "10.9.0.2"), ("ExternalIP", "203.0.113.2")]),
    ];
    Fixture {
        services,
        slices,
        pods,
        nodes,
    }
}

/// Each name's records, as a full evaluation through the pipeline makes them.
fn pipeline(cfg: &ServiceSourceConfig) -> Pipeline {
    Pipeline::new(vec![Box::new(source(cfg.clone()))], PipelineConfig::default())
}

/// Applies a change and checks it from every side; `must_change` are the Services the change is known to
/// alter (so the test cannot pass by changing nothing), `unrelated` Services must not be named.
fn check(change: impl FnOnce(&mut Fixture), changes: ChangeSet, must_change: &[&str], unrelated: &[&str]) {
    check_on(
        &ServiceSourceConfig::default(),
        base(),
        change,
        changes,
        must_change,
        unrelated,
    );
}

/// [`check`] with a configuration and a fixture of the test's own.
fn check_on(
    cfg: &ServiceSourceConfig,
    before: Fixture,
    change: impl FnOnce(&mut Fixture),
    changes: ChangeSet,
    must_change: &[&str],
    unrelated: &[&str],
) {
    let mut after = before.clone();
    change(&mut after);
    let (before, after) = (before.store(), after.store());

    block_on(check_affected(
        &source(cfg.clone()),
        &before,
        &after,
        &changes,
        must_change,
        unrelated,
        "service source",
    ));
    block_on(check_against_full(
        &pipeline(cfg),
        &before,
        &after,
        &changes,
        "service source",
    ));
}

/// The change of object `ns/name` of `kind`.
fn changed(kind: ResourceKind, ns: &str, name: &str) -> ChangeSet {
    ChangeSet::of(ObjectKey::new(kind, ns, name))
}

const LB: &str = "Service a/lb";
const DB: &str = "Service a/db";
const CACHE: &str = "Service a/cache";
const WEB: &str = "Service a/web";
const NP: &str = "Service a/np";
const SHARED1: &str = "Service a/shared1";
const SHARED2: &str = "Service a/shared2";
const INTERNAL: &str = "Service a/internal";
const B_DB: &str = "Service b/db";

#[test]
fn a_service_change_affects_that_service_only() {
    check(
        |f| f.service("a", "lb").load_balancer_ingress[0].ip = Some("192.0.2.99".into()),
        changed(ResourceKind::Service, "a", "lb"),
        &[LB],
        &[DB, CACHE, WEB, NP, SHARED1, SHARED2, INTERNAL, B_DB],
    );
}

#[test]
fn a_service_sharing_a_name_is_merged_again_with_the_others() {
    check(
        |f| f.service("a", "shared2").load_balancer_ingress[0].ip = Some("192.0.2.99".into()),
        changed(ResourceKind::Service, "a", "shared2"),
        &[SHARED2],
        &[LB, DB, SHARED1, B_DB],
    );
}

#[test]
fn a_deleted_service_takes_its_names_along() {
    check(
        |f| f.services.retain(|s| s.meta.name != "shared1"),
        changed(ResourceKind::Service, "a", "shared1"),
        &[SHARED1],
        &[LB, SHARED2, B_DB],
    );
}

#[test]
fn a_service_that_becomes_undecodable_is_failed() {
    let before = base();
    let mut after = before.clone();
    after.services.retain(|s| s.meta.name != "lb");
    let mut store = after.store();
    store.add_undecodable(ResourceKind::Service, "a", "lb");
    let src = source(ServiceSourceConfig::default());
    let changes = changed(ResourceKind::Service, "a", "lb");
    let affected = src.affected(&store, &changes);
    let lb = ObjectKey::new(ResourceKind::Service, "a", "lb");
    assert_eq!(affected, Some([lb.clone()].into()));
    let only = affected.unwrap_or_default();
    let evaluation = match block_on(src.evaluate(&store, Objects::Only(&only))) {
        Ok(evaluation) => evaluation,
        Err(e) => panic!("{e}"),
    };
    assert!(evaluation.objects.is_empty());
    assert_eq!(evaluation.failed.iter().map(|(k, _)| k).collect::<Vec<_>>(), vec![&lb]);
}

#[test]
fn an_endpoint_slice_change_affects_its_service() {
    check(
        |f| f.slices[0].endpoints.truncate(1),
        changed(ResourceKind::EndpointSlice, "a", "db"),
        &[DB],
        &[CACHE, WEB, NP, LB, B_DB],
    );
}

#[test]
fn a_pod_change_affects_the_headless_services_whose_slices_name_it() {
    check(
        |f| f.pod("a", "db-0").hostname = Some("db-0".into()),
        changed(ResourceKind::Pod, "a", "db-0"),
        &[DB],
        &[CACHE, NP, LB, INTERNAL, B_DB],
    );
}

#[test]
fn a_deleted_pod_affects_the_headless_services_whose_slices_still_name_it() {
    check(
        |f| f.pods.retain(|p| !(&*p.namespace == "a" && &*p.name == "db-1")),
        changed(ResourceKind::Pod, "a", "db-1"),
        &[DB],
        &[CACHE, NP, LB, B_DB],
    );
}

#[test]
fn a_pod_moving_node_affects_local_node_port_and_node_external_ip_services() {
    check(
        |f| {
            f.pod("a", "web-0").node_name = Some("n2".into());
            f.pod("a", "cache-0").node_name = Some("n2".into());
        },
        {
            let mut c = changed(ResourceKind::Pod, "a", "web-0");
            c.insert(ObjectKey::new(ResourceKind::Pod, "a", "cache-0"));
            c
        },
        &[WEB, CACHE],
        &[DB, NP, LB, B_DB],
    );
}

#[test]
fn a_pod_no_slice_names_affects_no_headless_service() {
    check(
        |f| f.pod("a", "other").hostname = Some("other".into()),
        changed(ResourceKind::Pod, "a", "other"),
        &[],
        &[DB, CACHE, NP, LB, B_DB],
    );
}

#[test]
fn a_node_change_affects_node_port_and_node_external_ip_services() {
    check(
        |f| f.nodes[0].addresses[1].address = "203.0.113.9".into(),
        changed(ResourceKind::Node, "", "n1"),
        &[WEB, NP, CACHE],
        &[DB, LB, SHARED1, INTERNAL, B_DB],
    );
}

#[test]
fn changes_to_kinds_the_source_does_not_read_affect_nothing() {
    let src = source(ServiceSourceConfig::default());
    let changes = changed(ResourceKind::Namespace, "", "a");
    assert_eq!(src.affected(&base().store(), &changes), Some(BTreeSet::new()));
    assert_eq!(src.affected(&base().store(), &ChangeSet::everything()), None);
}

#[test]
fn a_name_shared_with_records_without_a_resource_label_is_merged_again_with_them() {
    // Mate's annotation makes records without labels; they own a name they share with a labelled one.
    let cfg = ServiceSourceConfig {
        compatibility: Some(crate::Compatibility::Mate),
        ..ServiceSourceConfig::default()
    };
    let mut fixture = base();
    fixture.services.push(
        Sv::lb("a", "zz-mate")
            .ann(crate::service::MATE_HOSTNAME, "shared.example.com")
            .ingress_ip("192.0.2.50")
            .build(),
    );
    check_on(
        &cfg,
        fixture,
        |f| f.service("a", "shared1").load_balancer_ingress[0].ip = Some("192.0.2.99".into()),
        changed(ResourceKind::Service, "a", "shared1"),
        &[SHARED1],
        &[LB, SHARED2, "service/a/zz-mate", B_DB],
    );
}

/// `--dns-provider-crds`: a Service re-annotated from ClusterDNSProvider `a` to `b` leaves `a`'s desired set
/// (its old names are still affected there) and enters `b`'s, through each pipeline's incremental path over
/// one store.
#[test]
fn a_service_routed_to_another_provider_moves_its_records() {
    use extdns_source::ProviderRoute;
    const ROUTE: &str = "external-dns.kubernetes.io/cluster-provider";
    let routed = |to: &str| {
        let mut f = base();
        let lb = f.service("a", "lb");
        let others = lb.meta.annotations.iter().filter(|(k, _)| *k != ROUTE);
        lb.meta.annotations = others.chain(std::iter::once((ROUTE, to))).collect();
        f.store()
    };
    let (before, after) = (routed("a"), routed("b"));
    let changes = changed(ResourceKind::Service, "a", "lb");
    let lb = |eps: &[extdns_endpoint::Endpoint]| eps.iter().filter(|e| e.dns_name == "lb.example.com").count();
    let full = |p: &Pipeline, store: &ClusterStore| match block_on(p.evaluate(store, None)) {
        Ok(out) => lb(&out.endpoints),
        Err(e) => panic!("{e}"),
    };

    let a = pipeline(&sharing(|c| c.route = Some(ProviderRoute::cluster("a"))));
    let b = pipeline(&sharing(|c| c.route = Some(ProviderRoute::cluster("b"))));
    assert_eq!((full(&a, &before), full(&b, &before)), (1, 0), "a's before");

    let from_a = block_on(check_against_full(&a, &before, &after, &changes, "provider a"));
    assert!(from_a.names.contains("lb.example.com"), "{:?}", from_a.names);
    assert_eq!(lb(&from_a.output.endpoints), 0, "gone from a");
    let to_b = block_on(check_against_full(&b, &before, &after, &changes, "provider b"));
    assert!(to_b.names.contains("lb.example.com"), "{:?}", to_b.names);
    assert_eq!(lb(&to_b.output.endpoints), 1, "b's now");
}
