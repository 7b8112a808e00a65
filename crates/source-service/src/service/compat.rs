//! `--compatibility`: the naming conventions of older DNS controllers, applied only when a Service's
//! annotations produced no records. As in external-dns these records carry no TTL, labels or
//! provider-specific properties; unlike it, an IPv6 load balancer address becomes an AAAA record (external-dns
//! writes an A record that validation then drops).

use extdns_endpoint::{Endpoint, RecordType, Target};
use extdns_source::annotations::split_list as split;

use super::svc::Svc;
use crate::config::Compatibility;
use crate::context::Ctx;

/// Mate's hostname annotation (a single name).
pub const MATE_HOSTNAME: &str = "zalando.org/dnsname";
/// Molecule's hostname annotation (a comma-separated list), read only with the label `dns=route53`.
pub const MOLECULE_HOSTNAME: &str = "domainName";
pub const MOLECULE_LABEL: &str = "dns";
pub const MOLECULE_LABEL_VALUE: &str = "route53";
/// kOps dns-controller's annotations.
pub use extdns_source::annotations::kops::{EXTERNAL as KOPS_EXTERNAL, INTERNAL as KOPS_INTERNAL};
/// The label kOps puts on worker nodes.
pub const KOPS_NODE_ROLE: &str = "node-role.kubernetes.io/node";

pub(crate) fn endpoints(ctx: &Ctx<'_>, s: &Svc<'_>, mode: Compatibility) -> Vec<Endpoint> {
    let svc = s.svc;
    let a = &svc.meta.annotations;
    match mode {
        Compatibility::Mate => match a.get(MATE_HOSTNAME) {
            Some(h) => load_balancer(s, &[h.to_string()], MATE_HOSTNAME),
            None => Vec::new(),
        },
        Compatibility::Molecule => {
            if svc.meta.labels.get(MOLECULE_LABEL) != Some(MOLECULE_LABEL_VALUE) {
                return Vec::new();
            }
            match a.get(MOLECULE_HOSTNAME) {
                Some(h) => load_balancer(s, &split(h), MOLECULE_HOSTNAME),
                None => Vec::new(),
            }
        }
        Compatibility::KopsDnsController => {
            let external = a.get(KOPS_EXTERNAL);
            let internal = a.get(KOPS_INTERNAL);
            match svc.service_type.as_str() {
                "NodePort" => match (external, internal) {
                    (Some(h), None) => kops_node_port(ctx, s, &split(h), true),
                    (None, Some(h)) => kops_node_port(ctx, s, &split(h), false),
                    // dns-controller publishes nothing when both are set.
                    _ => Vec::new(),
                },
                "LoadBalancer" => {
                    let mut out = Vec::new();
                    if let Some(h) = external {
                        out.extend(load_balancer(s, &split(h), KOPS_EXTERNAL));
                    }
                    if let Some(h) = internal {
                        out.extend(load_balancer(s, &split(h), KOPS_INTERNAL));
                    }
                    out
                }
                _ => Vec::new(),
            }
        }
    }
}

/// One record per load balancer ingress address or hostname, for each name.
fn load_balancer(s: &Svc<'_>, hostnames: &[String], field: &str) -> Vec<Endpoint> {
    let mut out = Vec::new();
    for h in hostnames {
        let Some(h) = s.valid_name(h, field) else { continue };
        for (i, ingress) in s.svc.load_balancer_ingress.iter().enumerate() {
            if let Some(ip) = ingress.ip.as_deref().filter(|ip| !ip.is_empty())
                && let Some(ip) = s.ip(ip, || format!("status.loadBalancer.ingress[{i}].ip"))
            {
                out.push(Endpoint::new(h, ip.suitable_type(), [ip]));
            }
            if let Some(host) = ingress.hostname.as_deref().filter(|h| !h.is_empty()) {
                out.push(Endpoint::new(h, RecordType::Cname, [host]));
            }
        }
    }
    out
}

/// kOps NodePort Services: the addresses of every node labelled as a worker, external (plus IPv6 internal
/// with `--expose-internal-ipv6`) or internal as the annotation says.
fn kops_node_port(ctx: &Ctx<'_>, s: &Svc<'_>, hostnames: &[String], external: bool) -> Vec<Endpoint> {
    let field = if external { KOPS_EXTERNAL } else { KOPS_INTERNAL };
    let nodes = ctx.cluster.nodes();
    let mut out = Vec::new();
    for h in hostnames {
        let Some(h) = s.valid_name(h, field) else { continue };
        for node in nodes.iter().filter(|n| n.labels.contains_key(KOPS_NODE_ROLE)) {
            for a in &node.addresses {
                let address = Target::from(a.address.as_str());
                let rt = address.suitable_type();
                let wanted = if external {
                    a.address_type == "ExternalIP"
                        || (ctx.cfg.expose_internal_ipv6 && a.address_type == "InternalIP" && rt == RecordType::Aaaa)
                } else {
                    a.address_type == "InternalIP"
                };
                if !wanted {
                    continue;
                }
                if rt == RecordType::Cname {
                    tracing::warn!(service = s.id(), node = %node.name, field = "status.addresses", value = %a.address,
                        "skipping node address: not an IP address");
                    continue;
                }
                out.push(Endpoint::new(h, rt, [address]));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ServiceSourceConfig;
    use crate::testutil::*;

    fn mode(m: Compatibility) -> ServiceSourceConfig {
        configured(|c| c.compatibility = Some(m))
    }

    /// What compatibility mode `m` publishes for `s` alone, as [`show`] lines.
    fn published(m: Compatibility, s: Sv) -> Vec<String> {
        show(&run(mode(m), &cluster_of(vec![s.build()])))
    }

    #[test]
    fn compatibility_mate_uses_the_zalando_dnsname_annotation() {
        let s = Sv::lb("default", "web")
            .ann(MATE_HOSTNAME, "web.example.com")
            .ingress_ip("1.2.3.4")
            .ingress_host("lb.x");
        let eps = run(mode(Compatibility::Mate), &cluster_of(vec![s.build()]));
        assert_eq!(
            show(&eps),
            owned(&["web.example.com A 1.2.3.4", "web.example.com CNAME lb.x"])
        );
        assert!(eps[0].labels.is_empty(), "compatibility records carry no labels");
    }

    #[test]
    fn compatibility_applies_only_when_annotations_produce_nothing() {
        let s = Sv::lb("default", "web")
            .ann(MATE_HOSTNAME, "mate.example.com")
            .a("hostname", "ann.example.com")
            .ingress_ip("1.2.3.4");
        assert_eq!(published(Compatibility::Mate, s), owned(&["ann.example.com A 1.2.3.4"]));
    }

    #[test]
    fn compatibility_is_off_without_the_flag() {
        let s = Sv::lb("default", "web")
            .ann(MATE_HOSTNAME, "web.example.com")
            .ingress_ip("1.2.3.4");
        assert!(run(ServiceSourceConfig::default(), &cluster_of(vec![s.build()])).is_empty());
    }

    #[test]
    fn compatibility_molecule_needs_the_route53_label() {
        let s = Sv::lb("default", "web")
            .ann(MOLECULE_HOSTNAME, "a.example.com, b.example.com")
            .ingress_ip("1.2.3.4");
        assert!(published(Compatibility::Molecule, s.clone()).is_empty());
        let s = s.label(MOLECULE_LABEL, MOLECULE_LABEL_VALUE);
        assert_eq!(
            published(Compatibility::Molecule, s),
            owned(&["a.example.com A 1.2.3.4", "b.example.com A 1.2.3.4"])
        );
    }

    #[test]
    fn compatibility_kops_load_balancer_uses_external_and_internal_annotations() {
        let s = Sv::lb("default", "web")
            .ann(KOPS_EXTERNAL, "ext.example.com")
            .ann(KOPS_INTERNAL, "int.example.com")
            .ingress_ip("1.2.3.4");
        assert_eq!(
            published(Compatibility::KopsDnsController, s),
            owned(&["ext.example.com A 1.2.3.4", "int.example.com A 1.2.3.4"])
        );
    }

    fn kops_nodes(c: &mut extdns_informer::ClusterStore) {
        let mut worker = node(
            "w1",
            &[
                ("ExternalIP", "34.0.0.1"),
                ("InternalIP", "10.0.0.1"),
                ("InternalIP", "fd00::1"),
            ],
        );
        worker.labels = [(KOPS_NODE_ROLE, "")].into_iter().collect();
        c.add(worker);
        c.add(node(
            "master",
            &[("ExternalIP", "34.0.0.9"), ("InternalIP", "10.0.0.9")],
        ));
    }

    #[test]
    fn compatibility_kops_node_port_publishes_worker_node_addresses() {
        let ext = Sv::new("default", "a", "NodePort").ann(KOPS_EXTERNAL, "ext.example.com");
        let int = Sv::new("default", "b", "NodePort").ann(KOPS_INTERNAL, "int.example.com");
        let both = Sv::new("default", "c", "NodePort")
            .ann(KOPS_INTERNAL, "x.example.com")
            .ann(KOPS_EXTERNAL, "y.example.com");
        let mut c = cluster_of(vec![ext.build(), int.build(), both.build()]);
        kops_nodes(&mut c);
        let eps = run(mode(Compatibility::KopsDnsController), &c);
        assert_eq!(
            show(&eps),
            owned(&[
                "ext.example.com A 34.0.0.1",
                "int.example.com A 10.0.0.1",
                "int.example.com AAAA fd00::1"
            ])
        );
        let expose = ServiceSourceConfig {
            expose_internal_ipv6: true,
            ..mode(Compatibility::KopsDnsController)
        };
        let eps = run(expose, &c);
        assert!(show(&eps).contains(&"ext.example.com AAAA fd00::1".to_string()));
    }

    #[test]
    fn compatibility_kops_ignores_other_service_types() {
        let s = Sv::new("default", "a", "ClusterIP")
            .cluster_ip("10.96.0.1")
            .ann(KOPS_EXTERNAL, "ext.example.com");
        assert!(published(Compatibility::KopsDnsController, s).is_empty());
    }

    #[test]
    fn compatibility_mate_publishes_ipv6_ingress_as_aaaa() {
        let s = Sv::lb("default", "web")
            .ann(MATE_HOSTNAME, "web.example.com")
            .ingress_ip("2001:db8::1");
        assert_eq!(
            published(Compatibility::Mate, s),
            owned(&["web.example.com AAAA 2001:db8::1"])
        );
    }
}
