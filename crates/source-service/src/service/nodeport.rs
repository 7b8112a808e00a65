//! NodePort Services: the addresses of the nodes that can serve the port, and an SRV record per port.

use std::borrow::Cow;
use std::collections::HashMap;

use extdns_endpoint::{Endpoint, RecordType};
use extdns_informer::view::{Pod, PodPhase};
use extdns_source::annotations::key;

use super::svc::Svc;
use super::svc::selector_matches;
use crate::context::{Ctx, NodeTargets, SplitTargets};

/// The node addresses a NodePort Service publishes.
///
/// With `externalTrafficPolicy: Local` only nodes running one of the Service's Pods can answer, so those
/// are the nodes; otherwise every node. Unschedulable nodes are left out unless `--no-exclude-unschedulable`.
/// The `access` annotation then picks public or private addresses (see [`NodeTargets`]).
pub(crate) fn targets<'c>(ctx: &'c Ctx<'_>, s: &Svc<'_>) -> Cow<'c, SplitTargets> {
    let access = ctx.cfg.common.annotations.get(&s.svc.meta.annotations, key::ACCESS);
    let index = ctx.nodes();
    if s.svc.external_traffic_policy.as_deref() != Some("Local") {
        return Cow::Borrowed(index.all.for_access(access));
    }
    let pods = ctx.cluster.pods(&s.svc.meta.namespace);
    let names = local_nodes(
        pods.iter()
            .map(AsRef::as_ref)
            .filter(|p| selector_matches(&s.svc.selector, &p.labels)),
    );
    let nodes = names.into_iter().filter_map(|name| {
        let node = index.get(name);
        if node.is_none() {
            tracing::debug!(
                service = s.id(),
                node = name,
                "a Pod of the Service runs on an unknown node"
            );
        }
        node
    });
    let nodes = nodes.filter(|n| !(n.unschedulable && ctx.cfg.exclude_unschedulable));
    let targets = NodeTargets::over(nodes, ctx.cfg.expose_internal_ipv6);
    Cow::Owned(targets.for_access(access).clone())
}

/// How well a running Pod serves: ready and not terminating beats ready but terminating, which beats
/// running but not ready.
fn rank(p: &Pod) -> u8 {
    match (p.ready, p.terminating) {
        (true, false) => 3,
        (true, true) => 2,
        (false, _) => 1,
    }
}

/// The nodes running the Service's Pods (already selected), keeping only the nodes whose best Pod has the
/// best rank found anywhere: traffic goes to ready Pods when there are any, and only falls back to
/// terminating or not-ready ones when there are none. Pods not in phase Running count for nothing.
pub(crate) fn local_nodes<'p>(pods: impl Iterator<Item = &'p Pod>) -> Vec<&'p str> {
    let mut order: Vec<&str> = Vec::new();
    let mut best: HashMap<&str, u8> = HashMap::new();
    for p in pods {
        if p.phase != PodPhase::Running {
            continue;
        }
        let Some(node) = p.node_name.as_deref().filter(|n| !n.is_empty()) else {
            continue;
        };
        let r = rank(p);
        match best.get_mut(node) {
            Some(b) => *b = (*b).max(r),
            None => {
                best.insert(node, r);
                order.push(node);
            }
        }
    }
    let Some(max) = best.values().copied().max() else {
        return Vec::new();
    };
    order.into_iter().filter(|n| best.get(n) == Some(&max)).collect()
}

/// `_<service name>._<protocol>.<hostname>` SRV records, priority 0, weight 50, one target per port that has
/// a node port; ports with the same protocol share the record.
pub(crate) fn srv_records(s: &Svc<'_>, hostname: &str) -> Vec<Endpoint> {
    let mut out = Vec::new();
    for port in &s.svc.ports {
        let Some(node_port) = port.node_port.filter(|p| *p > 0) else {
            continue;
        };
        let protocol = port
            .protocol
            .as_deref()
            .filter(|p| !p.is_empty())
            .unwrap_or("TCP")
            .to_ascii_lowercase();
        let name = format!("_{}._{protocol}.{hostname}", s.svc.meta.name);
        let Some(name) = s.valid_name(&name, "SRV record name") else {
            continue;
        };
        let target = format!("0 50 {node_port} {hostname}.");
        out.push(s.record(name, RecordType::Srv, vec![target.into()]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::pod;

    fn running(name: &str, node: &str, ready: bool, terminating: bool) -> Pod {
        let mut p = pod(name, "ns", &[]);
        p.phase = PodPhase::Running;
        p.node_name = Some(node.into());
        p.ready = ready;
        p.terminating = terminating;
        p
    }

    #[test]
    fn local_traffic_policy_prefers_nodes_with_ready_pods() {
        let pods = [
            running("a", "n1", true, false),
            running("b", "n2", false, false),
            running("c", "n3", true, true),
        ];
        assert_eq!(local_nodes(pods.iter()), vec!["n1"]);
    }

    #[test]
    fn local_traffic_policy_falls_back_to_terminating_then_running_pods() {
        let pods = [running("b", "n2", false, false), running("c", "n3", true, true)];
        assert_eq!(local_nodes(pods.iter()), vec!["n3"]);
        let pods = [running("b", "n2", false, false), running("d", "n4", false, true)];
        assert_eq!(local_nodes(pods.iter()), vec!["n2", "n4"]);
    }

    #[test]
    fn local_traffic_policy_ranks_a_node_by_its_best_pod() {
        let pods = [
            running("a", "n1", false, false),
            running("b", "n1", true, false),
            running("c", "n2", true, false),
        ];
        assert_eq!(local_nodes(pods.iter()), vec!["n1", "n2"]);
    }

    #[test]
    fn local_traffic_policy_ignores_pods_that_are_not_running() {
        let mut pending = running("a", "n1", true, false);
        pending.phase = PodPhase::Pending;
        let mut nowhere = running("b", "", true, false);
        nowhere.node_name = None;
        assert!(local_nodes([pending, nowhere].iter()).is_empty());
    }

    // -------------------------------------------------------------------------------- through the source

    use extdns_informer::ClusterStore;
    use extdns_informer::view::Node;

    use crate::ServiceSourceConfig;
    use crate::testutil::*;

    fn cfg() -> ServiceSourceConfig {
        ServiceSourceConfig::default()
    }

    fn np() -> Sv {
        Sv::new("default", "web", "NodePort")
            .cluster_ip("10.96.0.5")
            .a("hostname", "web.example.com")
    }

    fn cluster(svc: Sv, nodes: Vec<Node>) -> ClusterStore {
        let mut c = cluster_of(vec![svc.build()]);
        c.extend(nodes);
        c
    }

    /// What `cfg` publishes for `svc` on `nodes`, as [`show`] lines.
    fn published(cfg: ServiceSourceConfig, svc: Sv, nodes: Vec<Node>) -> Vec<String> {
        show(&run(cfg, &cluster(svc, nodes)))
    }

    fn mixed_nodes() -> Vec<Node> {
        vec![
            node(
                "n1",
                &[
                    ("InternalIP", "10.0.0.1"),
                    ("ExternalIP", "34.0.0.1"),
                    ("InternalIP", "fd00::1"),
                ],
            ),
            node(
                "n2",
                &[
                    ("InternalIP", "10.0.0.2"),
                    ("ExternalIP", "34.0.0.2"),
                    ("Hostname", "n2"),
                ],
            ),
        ]
    }

    #[test]
    fn node_port_publishes_the_external_ips_of_every_node() {
        assert_eq!(
            published(cfg(), np(), mixed_nodes()),
            owned(&["web.example.com A 34.0.0.1,34.0.0.2"])
        );
    }

    #[test]
    fn node_port_without_external_ips_publishes_internal_ips() {
        let nodes = vec![
            node("n1", &[("InternalIP", "10.0.0.1")]),
            node("n2", &[("InternalIP", "fd00::2")]),
        ];
        assert_eq!(
            published(cfg(), np(), nodes),
            owned(&["web.example.com A 10.0.0.1", "web.example.com AAAA fd00::2"])
        );
    }

    #[test]
    fn node_port_access_public_uses_external_ips_even_when_there_are_none() {
        let nodes = vec![node("n1", &[("InternalIP", "10.0.0.1")])];
        assert!(published(cfg(), np().a("access", "public"), nodes).is_empty());
        assert_eq!(
            published(cfg(), np().g("access", "public"), mixed_nodes()),
            owned(&["web.example.com A 34.0.0.1,34.0.0.2"])
        );
    }

    #[test]
    fn node_port_access_private_uses_internal_ips_of_both_families() {
        assert_eq!(
            published(cfg(), np().a("access", "private"), mixed_nodes()),
            owned(&["web.example.com A 10.0.0.1,10.0.0.2", "web.example.com AAAA fd00::1"])
        );
    }

    #[test]
    fn node_port_ipv6_internal_ips_count_as_public_only_with_expose_internal_ipv6() {
        let c = configured(|c| c.expose_internal_ipv6 = true);
        assert_eq!(
            published(c.clone(), np(), mixed_nodes()),
            owned(&["web.example.com A 34.0.0.1,34.0.0.2", "web.example.com AAAA fd00::1"])
        );
        assert_eq!(
            published(c, np().a("access", "public"), mixed_nodes()),
            owned(&["web.example.com A 34.0.0.1,34.0.0.2", "web.example.com AAAA fd00::1"])
        );
    }

    fn with_cordoned() -> Vec<Node> {
        let mut cordoned = node("n3", &[("ExternalIP", "34.0.0.3")]);
        cordoned.unschedulable = true;
        vec![node("n1", &[("ExternalIP", "34.0.0.1")]), cordoned]
    }

    #[test]
    fn node_port_unschedulable_nodes_are_excluded_by_default() {
        assert_eq!(
            published(cfg(), np(), with_cordoned()),
            owned(&["web.example.com A 34.0.0.1"])
        );
    }

    #[test]
    fn node_port_no_exclude_unschedulable_keeps_unschedulable_nodes() {
        let c = configured(|c| c.exclude_unschedulable = false);
        assert_eq!(
            published(c, np(), with_cordoned()),
            owned(&["web.example.com A 34.0.0.1,34.0.0.3"])
        );
    }

    fn local_cluster(svc: Sv) -> ClusterStore {
        let nodes = vec![
            node("n1", &[("ExternalIP", "34.0.0.1")]),
            node("n2", &[("ExternalIP", "34.0.0.2")]),
            node("n3", &[("ExternalIP", "34.0.0.3")]),
            node("n4", &[("ExternalIP", "34.0.0.4")]),
        ];
        let mut c = cluster(svc.local().selector("app", "web"), nodes);
        let on = |name: &str, node: &str, labels: &[(&str, &str)]| {
            pod_with(name, "default", labels, |p| p.node_name = Some(node.into()))
        };
        c.add(on("web-1", "n1", &[("app", "web")]));
        c.add(on("web-2", "n2", &[("app", "web")]));
        c.add(on("other", "n3", &[("app", "other")]));
        let mut pending = on("web-4", "n4", &[("app", "web")]);
        pending.phase = PodPhase::Pending;
        c.add(pending);
        let mut elsewhere = on("web-5", "n4", &[("app", "web")]);
        elsewhere.namespace = "other".into();
        c.add(elsewhere);
        c
    }

    #[test]
    fn node_port_local_traffic_policy_publishes_nodes_running_matching_pods() {
        let eps = run(cfg(), &local_cluster(np()));
        assert_eq!(show(&eps), owned(&["web.example.com A 34.0.0.1,34.0.0.2"]));
    }

    #[test]
    fn node_port_srv_record_for_every_port_with_a_node_port() {
        let svc = np()
            .a("ttl", "300")
            .port(None, Some(30080))
            .port(Some("UDP"), Some(30053))
            .port(Some("TCP"), None);
        let eps = run(cfg(), &cluster(svc, vec![node("n1", &[("ExternalIP", "34.0.0.1")])]));
        assert_eq!(
            show(&eps),
            owned(&[
                "_web._tcp.web.example.com SRV 0 50 30080 web.example.com. ttl=300",
                "_web._udp.web.example.com SRV 0 50 30053 web.example.com. ttl=300",
                "web.example.com A 34.0.0.1 ttl=300",
            ])
        );
        assert!(
            eps.iter()
                .all(|e| e.resource().as_deref() == Some("service/default/web"))
        );
    }

    #[test]
    fn node_port_srv_records_of_ports_with_the_same_protocol_merge() {
        let svc = np()
            .a("hostname", "web.example.com.")
            .port(Some("TCP"), Some(30080))
            .port(Some("TCP"), Some(30443));
        assert_eq!(
            published(cfg(), svc, vec![]),
            owned(&["_web._tcp.web.example.com SRV 0 50 30080 web.example.com.,0 50 30443 web.example.com."])
        );
    }

    #[test]
    fn node_port_target_annotation_suppresses_node_addresses_and_srv_records() {
        let svc = np().a("target", "1.1.1.1").port(None, Some(30080));
        assert_eq!(
            published(cfg(), svc, mixed_nodes()),
            owned(&["web.example.com A 1.1.1.1"])
        );
    }

    #[test]
    fn node_port_internal_hostname_behaves_like_hostname() {
        let svc = Sv::new("default", "web", "NodePort")
            .cluster_ip("10.96.0.5")
            .a("internal-hostname", "i.example.com");
        assert_eq!(
            published(cfg(), svc, mixed_nodes()),
            owned(&["i.example.com A 34.0.0.1,34.0.0.2"])
        );
    }

    #[test]
    fn node_port_unparsable_node_address_is_skipped() {
        let nodes = vec![
            node("n1", &[("ExternalIP", "34.0.0.1")]),
            node("n2", &[("ExternalIP", "ec2-34.example")]),
        ];
        assert_eq!(published(cfg(), np(), nodes), owned(&["web.example.com A 34.0.0.1"]));
    }
}
