//! Headless ClusterIP Services (`clusterIP: None`): one record per name with the address of every Pod
//! behind the Service, plus `<pod spec.hostname>.<name>` records for Pods that set a hostname.
//!
//! Pods are found through the Service's EndpointSlices, as external-dns reads them today: ready endpoints
//! (an unknown readiness counts as ready), not-ready ones too with `spec.publishNotReadyAddresses` or
//! `--always-publish-not-ready-addresses`; each endpoint's target must be a Pod matching `spec.selector`,
//! and only its first address is used.

use extdns_endpoint::{Endpoint, RecordType, Target, TargetKind};
use std::sync::Arc;

use extdns_informer::view::Pod;
use extdns_source::annotations::key;

use super::svc::Svc;
use super::svc::selector_matches;
use crate::context::Ctx;

/// What one Pod behind the Service contributes, the same for every name of the Service.
#[derive(Debug)]
pub(crate) struct Member {
    /// The Pod (for its `spec.hostname`).
    pub pod: Arc<Pod>,
    pub targets: Vec<Target>,
}

impl Member {
    /// The Pod's `spec.hostname`, when set.
    pub fn hostname(&self) -> Option<&str> {
        self.pod.hostname.as_deref().filter(|h| !h.is_empty())
    }
}

/// The Pods behind a headless Service and their targets.
pub(crate) fn members(ctx: &Ctx<'_>, s: &Svc<'_>) -> Vec<Member> {
    let cfg = ctx.cfg;
    let svc = s.svc;
    let annotations = &cfg.common.annotations;
    let endpoints_type = annotations.get(&svc.meta.annotations, key::ENDPOINTS_TYPE);
    let node_external_ip = endpoints_type == Some("NodeExternalIP");
    let host_ip = !node_external_ip && (endpoints_type == Some("HostIP") || cfg.publish_host_ip);
    let publish_pod_ips = !node_external_ip && !host_ip;
    let publish_not_ready = svc.publish_not_ready_addresses || cfg.always_publish_not_ready_addresses;
    let namespace = svc.meta.namespace.as_str();

    let mut members = Vec::new();
    for slice in ctx.cluster.endpoint_slices(namespace, &svc.meta.name) {
        if publish_pod_ips && slice.address_type != "IPv4" && slice.address_type != "IPv6" {
            tracing::debug!(service = s.id(), slice = %slice.meta.name, address_type = %slice.address_type,
                "skipping EndpointSlice: addresses are not IPs");
            continue;
        }
        for (i, ep) in slice.endpoints.iter().enumerate() {
            if !ep.ready.unwrap_or(true) && !publish_not_ready {
                continue;
            }
            let field = || format!("EndpointSlice {}: endpoints[{i}]", slice.meta.name);
            let pod_name = match &ep.target_ref {
                Some(r)
                    if r.kind.as_deref() == Some("Pod")
                        && r.api_version.as_deref().unwrap_or("").is_empty()
                        && r.name.as_deref().is_some_and(|n| !n.is_empty()) =>
                {
                    r.name.as_deref().unwrap_or_default()
                }
                _ => {
                    tracing::debug!(service = s.id(), field = %field(), "skipping endpoint: its target is not a Pod");
                    continue;
                }
            };
            let Some(pod) = ctx.cluster.pod(namespace, pod_name) else {
                tracing::warn!(service = s.id(), field = %format_args!("{}.targetRef", field()), pod = pod_name,
                    "skipping endpoint: its Pod does not exist");
                continue;
            };
            if !selector_matches(&svc.selector, &pod.labels) {
                tracing::debug!(
                    service = s.id(),
                    pod = pod_name,
                    "skipping endpoint: Pod does not match spec.selector"
                );
                continue;
            }

            let pod_targets = annotations.targets(&pod.annotations);
            let targets: Vec<Target> = if !pod_targets.is_empty() {
                pod_targets.into_iter().filter(|t| !t.is_empty()).collect()
            } else if node_external_ip {
                node_external_ips(ctx, s, &pod.name, pod.node_name.as_deref())
            } else if host_ip {
                match pod.host_ip.as_deref().filter(|ip| !ip.is_empty()) {
                    Some(ip) => s
                        .ip(ip, || format!("pod {}: status.hostIP", pod.name))
                        .into_iter()
                        .collect(),
                    None => {
                        tracing::warn!(
                            service = s.id(),
                            pod = pod_name,
                            field = "status.hostIP",
                            "skipping endpoint: the Pod has no host IP"
                        );
                        Vec::new()
                    }
                }
            } else {
                match ep.addresses.first() {
                    Some(addr) => s.ip(addr, || format!("{}.addresses[0]", field())).into_iter().collect(),
                    None => {
                        tracing::warn!(service = s.id(), field = %field(), "skipping endpoint: it has no address");
                        Vec::new()
                    }
                }
            };
            if targets.is_empty() {
                continue;
            }
            members.push(Member { pod, targets });
        }
    }
    members
}

/// `endpoints-type: NodeExternalIP`: the external addresses of the Pod's node, plus its IPv6 internal
/// ones with `--expose-internal-ipv6`.
fn node_external_ips(ctx: &Ctx<'_>, s: &Svc<'_>, pod: &str, node_name: Option<&str>) -> Vec<Target> {
    let Some(node_name) = node_name.filter(|n| !n.is_empty()) else {
        tracing::warn!(
            service = s.id(),
            pod,
            field = "spec.nodeName",
            "skipping endpoint: the Pod is on no node"
        );
        return Vec::new();
    };
    let Some(node) = ctx.nodes().get(node_name) else {
        tracing::warn!(
            service = s.id(),
            pod,
            node = node_name,
            "skipping endpoint: the Pod's node does not exist"
        );
        return Vec::new();
    };
    node.public(ctx.cfg.expose_internal_ipv6).all().cloned().collect()
}

/// The records of one name: the name with every member's targets, and `<pod hostname>.<name>` with that
/// member's targets, each split by address family.
pub(crate) fn endpoints(s: &Svc<'_>, hostname: &str, members: &[Member]) -> Vec<Endpoint> {
    let mut shared: [(RecordType, Vec<Target>); 3] = [
        (RecordType::A, Vec::new()),
        (RecordType::Aaaa, Vec::new()),
        (RecordType::Cname, Vec::new()),
    ];
    let mut out = Vec::new();
    for m in members {
        let mut own: [Vec<Target>; 3] = Default::default();
        for t in &m.targets {
            let slot = match t.kind() {
                TargetKind::Ipv4(_) => 0,
                TargetKind::Ipv6(_) => 1,
                _ => 2,
            };
            shared[slot].1.push(t.clone());
            if m.hostname().is_some() {
                own[slot].push(t.clone());
            }
        }
        let Some(pod_hostname) = m.hostname() else { continue };
        let mut name = format!("{pod_hostname}.{hostname}");
        if s.valid_name(&name, "Pod spec.hostname") != Some(name.as_str()) {
            continue;
        }
        let mut own = own
            .into_iter()
            .zip(&shared)
            .filter(|(targets, _)| !targets.is_empty())
            .peekable();
        while let Some((targets, (rt, _))) = own.next() {
            let name = if own.peek().is_some() {
                name.clone()
            } else {
                std::mem::take(&mut name)
            };
            out.push(s.record_named(name, rt.clone(), targets));
        }
    }
    for (rt, targets) in shared {
        if !targets.is_empty() {
            out.push(s.record(hostname, rt, targets));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use extdns_informer::ClusterStore;
    use extdns_informer::view::{EndpointSlice, Pod};

    use crate::ServiceSourceConfig;
    use crate::testutil::*;

    fn headless() -> Sv {
        Sv::new("default", "db", "ClusterIP")
            .headless()
            .selector("app", "db")
            .a("hostname", "db.example.com")
    }

    fn app_pod(name: &str) -> Pod {
        pod(name, "default", &[("app", "db")])
    }

    fn cluster(svc: Sv, pods: Vec<Pod>, slices: Vec<EndpointSlice>) -> ClusterStore {
        let mut c = cluster_of(vec![svc.build()]);
        for p in pods {
            c.add(p);
        }
        for s in slices {
            c.add(s);
        }
        c
    }

    fn three_pods() -> (Vec<Pod>, EndpointSlice) {
        let pods = vec![app_pod("db-0"), app_pod("db-1"), app_pod("db-2")];
        let eps = [
            ("10.0.0.1", "db-0", Some(true)),
            ("10.0.0.2", "db-1", Some(true)),
            ("10.0.0.3", "db-2", Some(true)),
        ];
        (pods, ipv4_slice("default", "db", &eps))
    }

    fn cfg() -> ServiceSourceConfig {
        ServiceSourceConfig::default()
    }

    #[test]
    fn headless_service_publishes_the_address_of_every_ready_pod() {
        let (pods, s) = three_pods();
        let eps = run(cfg(), &cluster(headless(), pods, vec![s]));
        assert_eq!(show(&eps), owned(&["db.example.com A 10.0.0.1,10.0.0.2,10.0.0.3"]));
        assert_eq!(eps[0].resource().as_deref(), Some("service/default/db"));
    }

    #[test]
    fn headless_service_publishes_first_address_only() {
        let s = slice(
            "default",
            "db",
            "IPv4",
            vec![endpoint(&["10.0.0.1", "10.0.0.9"], "db-0", None)],
        );
        let eps = run(cfg(), &cluster(headless(), vec![app_pod("db-0")], vec![s]));
        assert_eq!(show(&eps), owned(&["db.example.com A 10.0.0.1"]));
    }

    #[test]
    fn headless_endpoint_with_unknown_readiness_counts_as_ready() {
        let s = ipv4_slice("default", "db", &[("10.0.0.1", "db-0", None)]);
        assert_eq!(
            run(cfg(), &cluster(headless(), vec![app_pod("db-0")], vec![s])).len(),
            1
        );
    }

    fn ready_and_not_ready() -> (Vec<Pod>, Vec<EndpointSlice>) {
        let s = ipv4_slice(
            "default",
            "db",
            &[("10.0.0.1", "db-0", Some(true)), ("10.0.0.2", "db-1", Some(false))],
        );
        (vec![app_pod("db-0"), app_pod("db-1")], vec![s])
    }

    #[test]
    fn headless_not_ready_addresses_are_skipped_by_default() {
        let (pods, slices) = ready_and_not_ready();
        assert_eq!(
            show(&run(cfg(), &cluster(headless(), pods, slices))),
            owned(&["db.example.com A 10.0.0.1"])
        );
    }

    #[test]
    fn headless_publish_not_ready_addresses_includes_not_ready_ones() {
        let (pods, slices) = ready_and_not_ready();
        let eps = run(cfg(), &cluster(headless().publish_not_ready(), pods, slices));
        assert_eq!(show(&eps), owned(&["db.example.com A 10.0.0.1,10.0.0.2"]));
    }

    #[test]
    fn headless_always_publish_not_ready_addresses_flag_includes_not_ready_ones() {
        let (pods, slices) = ready_and_not_ready();
        let c = configured(|c| c.always_publish_not_ready_addresses = true);
        assert_eq!(
            show(&run(c, &cluster(headless(), pods, slices))),
            owned(&["db.example.com A 10.0.0.1,10.0.0.2"])
        );
    }

    #[test]
    fn headless_address_whose_pod_does_not_match_the_selector_is_ignored() {
        let s = ipv4_slice(
            "default",
            "db",
            &[("10.0.0.1", "db-0", None), ("10.0.0.2", "other", None)],
        );
        let pods = vec![app_pod("db-0"), pod("other", "default", &[("app", "web")])];
        assert_eq!(
            show(&run(cfg(), &cluster(headless(), pods, vec![s]))),
            owned(&["db.example.com A 10.0.0.1"])
        );
    }

    #[test]
    fn headless_endpoint_pointing_at_a_missing_pod_is_skipped() {
        let s = ipv4_slice(
            "default",
            "db",
            &[("10.0.0.1", "db-0", None), ("10.0.0.2", "gone", None)],
        );
        let eps = run(cfg(), &cluster(headless(), vec![app_pod("db-0")], vec![s]));
        assert_eq!(show(&eps), owned(&["db.example.com A 10.0.0.1"]));
    }

    #[test]
    fn headless_endpoint_must_target_a_pod() {
        let mut not_pod = endpoint(&["10.0.0.2"], "db-1", None);
        if let Some(r) = not_pod.target_ref.as_mut() {
            r.kind = Some("Node".into());
        }
        let mut no_ref = endpoint(&["10.0.0.3"], "db-2", None);
        no_ref.target_ref = None;
        let s = slice(
            "default",
            "db",
            "IPv4",
            vec![endpoint(&["10.0.0.1"], "db-0", None), not_pod, no_ref],
        );
        let pods = vec![app_pod("db-0"), app_pod("db-1"), app_pod("db-2")];
        assert_eq!(
            show(&run(cfg(), &cluster(headless(), pods, vec![s]))),
            owned(&["db.example.com A 10.0.0.1"])
        );
    }

    #[test]
    fn headless_pod_hostname_prefixes_each_name_of_the_service() {
        let pods = vec![
            pod_with("db-0", "default", &[("app", "db")], |p| {
                p.hostname = Some("db-0".into())
            }),
            app_pod("db-1"),
        ];
        let s = ipv4_slice(
            "default",
            "db",
            &[("10.0.0.1", "db-0", None), ("10.0.0.2", "db-1", None)],
        );
        let svc = headless().a("hostname", "db.example.com,db.example.org");
        assert_eq!(
            show(&run(cfg(), &cluster(svc, pods, vec![s]))),
            owned(&[
                "db-0.db.example.com A 10.0.0.1",
                "db-0.db.example.org A 10.0.0.1",
                "db.example.com A 10.0.0.1,10.0.0.2",
                "db.example.org A 10.0.0.1,10.0.0.2",
            ])
        );
    }

    #[test]
    fn headless_pod_target_annotation_wins_over_its_address() {
        let pods = vec![pod_with("db-0", "default", &[("app", "db")], |p| {
            p.annotations = [(format!("{ALPHA}target"), "lb.example.com".to_string())]
                .into_iter()
                .collect();
            p.hostname = Some("db-0".into());
        })];
        let s = ipv4_slice("default", "db", &[("10.0.0.1", "db-0", None)]);
        assert_eq!(
            show(&run(cfg(), &cluster(headless(), pods, vec![s]))),
            owned(&[
                "db-0.db.example.com CNAME lb.example.com",
                "db.example.com CNAME lb.example.com"
            ])
        );
    }

    #[test]
    fn headless_service_target_annotation_skips_pod_records() {
        let pods = vec![pod_with("db-0", "default", &[("app", "db")], |p| {
            p.hostname = Some("db-0".into())
        })];
        let s = ipv4_slice("default", "db", &[("10.0.0.1", "db-0", None)]);
        let svc = headless().g("target", "9.9.9.9");
        assert_eq!(
            show(&run(cfg(), &cluster(svc, pods, vec![s]))),
            owned(&["db.example.com A 9.9.9.9"])
        );
    }

    fn on_node(name: &str) -> Pod {
        pod_with(name, "default", &[("app", "db")], |p| {
            p.node_name = Some("n1".into());
            p.host_ip = Some("192.168.0.1".into());
        })
    }

    fn with_node(svc: Sv) -> ClusterStore {
        let s = ipv4_slice("default", "db", &[("10.0.0.1", "db-0", None)]);
        let mut c = cluster(svc, vec![on_node("db-0")], vec![s]);
        c.add(node(
            "n1",
            &[
                ("InternalIP", "192.168.0.1"),
                ("ExternalIP", "34.0.0.1"),
                ("InternalIP", "2001:db8::1"),
            ],
        ));
        c
    }

    /// What `cfg` publishes for `svc` with its one Pod on a Node ([`with_node`]), as [`show`] lines.
    fn via_node(cfg: ServiceSourceConfig, svc: Sv) -> Vec<String> {
        show(&run(cfg, &with_node(svc)))
    }

    #[test]
    fn headless_endpoints_type_node_external_ip_publishes_the_nodes_external_ips() {
        assert_eq!(
            via_node(cfg(), headless().a("endpoints-type", "NodeExternalIP")),
            owned(&["db.example.com A 34.0.0.1"])
        );
    }

    #[test]
    fn headless_node_external_ip_adds_ipv6_internal_ips_only_with_expose_internal_ipv6() {
        let c = configured(|c| c.expose_internal_ipv6 = true);
        assert_eq!(
            via_node(c, headless().g("endpoints-type", "NodeExternalIP")),
            owned(&["db.example.com A 34.0.0.1", "db.example.com AAAA 2001:db8::1"])
        );
    }

    #[test]
    fn headless_endpoints_type_host_ip_publishes_the_pods_host_ip() {
        assert_eq!(
            via_node(cfg(), headless().a("endpoints-type", "HostIP")),
            owned(&["db.example.com A 192.168.0.1"])
        );
    }

    #[test]
    fn headless_publish_host_ip_flag_publishes_the_pods_host_ip() {
        let c = configured(|c| c.publish_host_ip = true);
        assert_eq!(via_node(c, headless()), owned(&["db.example.com A 192.168.0.1"]));
    }

    #[test]
    fn headless_fqdn_slices_are_skipped() {
        let s = slice(
            "default",
            "db",
            "FQDN",
            vec![endpoint(&["db-0.internal"], "db-0", None)],
        );
        assert!(run(cfg(), &cluster(headless(), vec![app_pod("db-0")], vec![s])).is_empty());
    }

    #[test]
    fn headless_dual_stack_slices_give_a_and_aaaa_records() {
        let v4 = ipv4_slice("default", "db", &[("10.0.0.1", "db-0", None)]);
        let mut v6 = slice("default", "db", "IPv6", vec![endpoint(&["fd00::1"], "db-0", None)]);
        v6.meta.name = "db-v6".into();
        let eps = run(cfg(), &cluster(headless(), vec![app_pod("db-0")], vec![v4, v6]));
        assert_eq!(
            show(&eps),
            owned(&["db.example.com A 10.0.0.1", "db.example.com AAAA fd00::1"])
        );
    }

    #[test]
    fn headless_records_carry_the_service_ttl_and_set_identifier() {
        let s = ipv4_slice("default", "db", &[("10.0.0.1", "db-0", None)]);
        let svc = headless().a("ttl", "30").a("set-identifier", "eu");
        let eps = run(cfg(), &cluster(svc, vec![app_pod("db-0")], vec![s]));
        assert_eq!(show(&eps), owned(&["db.example.com A 10.0.0.1 ttl=30 id=eu"]));
    }

    #[test]
    fn headless_unparsable_address_skips_only_that_endpoint() {
        let s = ipv4_slice(
            "default",
            "db",
            &[("10.0.0.300", "db-0", None), ("10.0.0.2", "db-1", None)],
        );
        let eps = run(
            cfg(),
            &cluster(headless(), vec![app_pod("db-0"), app_pod("db-1")], vec![s]),
        );
        assert_eq!(show(&eps), owned(&["db.example.com A 10.0.0.2"]));
    }
}
