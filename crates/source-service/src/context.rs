//! What one `endpoints()` call shares between Services: the configuration, the cluster view, resolved load
//! balancer hostnames and an index of node addresses built at most once per call (a NodePort Service over a
//! thousand nodes must not classify a thousand addresses again for every Service).

use std::cell::OnceCell;
use std::collections::HashMap;

use extdns_endpoint::{RecordType, suitable_type};
use extdns_informer::Cluster;
use extdns_informer::view::Node;

use crate::config::ServiceSourceConfig;

/// Load balancer hostname → its addresses, or why it could not be resolved.
pub(crate) type Resolved = HashMap<String, Result<Vec<String>, String>>;

pub(crate) struct Ctx<'a> {
    pub cfg: &'a ServiceSourceConfig,
    pub cluster: &'a dyn Cluster,
    pub resolved: Resolved,
    nodes: OnceCell<NodeIndex>,
}

impl<'a> Ctx<'a> {
    pub fn new(cfg: &'a ServiceSourceConfig, cluster: &'a dyn Cluster, resolved: Resolved) -> Self {
        Ctx {
            cfg,
            cluster,
            resolved,
            nodes: OnceCell::new(),
        }
    }

    pub fn nodes(&self) -> &NodeIndex {
        self.nodes.get_or_init(|| NodeIndex::build(self.cluster, self.cfg))
    }
}

/// A node's usable addresses, classified as the NodePort rules need them.
#[derive(Debug, Default)]
pub(crate) struct NodeAddrs {
    /// `ExternalIP` addresses.
    pub external: Vec<String>,
    /// `InternalIP` addresses, both families.
    pub internal: Vec<String>,
    /// The IPv6 ones among `internal`.
    pub internal_v6: Vec<String>,
    pub unschedulable: bool,
}

impl NodeAddrs {
    fn of(node: &Node) -> NodeAddrs {
        let mut addrs = NodeAddrs {
            unschedulable: node.unschedulable,
            ..NodeAddrs::default()
        };
        for (i, a) in node.addresses.iter().enumerate() {
            let external = match a.address_type.as_str() {
                "ExternalIP" => true,
                "InternalIP" => false,
                _ => continue,
            };
            let family = suitable_type(&a.address);
            if family == RecordType::Cname {
                tracing::warn!(
                    node = %node.name,
                    field = %format_args!("status.addresses[{i}].address"),
                    value = %a.address,
                    "skipping node address: not an IP address"
                );
                continue;
            }
            if external {
                addrs.external.push(a.address.clone());
            } else {
                if family == RecordType::Aaaa {
                    addrs.internal_v6.push(a.address.clone());
                }
                addrs.internal.push(a.address.clone());
            }
        }
        addrs
    }
}

/// The node addresses a NodePort Service publishes, per `access` annotation value, over a set of nodes.
#[derive(Debug, Default)]
pub(crate) struct NodeTargets {
    /// `access: public`: external addresses, plus IPv6 internal ones with `--expose-internal-ipv6`.
    pub public: Vec<String>,
    /// `access: private`: internal addresses.
    pub private: Vec<String>,
    /// No `access`: public when any node has an external address, else private.
    pub default: Vec<String>,
}

impl NodeTargets {
    pub fn over<'n>(nodes: impl IntoIterator<Item = &'n NodeAddrs>, expose_internal_ipv6: bool) -> NodeTargets {
        let mut external = Vec::new();
        let mut internal_v6 = Vec::new();
        let mut private = Vec::new();
        for n in nodes {
            external.extend(n.external.iter().cloned());
            internal_v6.extend(n.internal_v6.iter().cloned());
            private.extend(n.internal.iter().cloned());
        }
        let mut public = external;
        let any_external = !public.is_empty();
        if expose_internal_ipv6 {
            public.extend(internal_v6);
        }
        // Sorted once here, the per-record sort the merge does later is linear.
        public.sort_unstable();
        private.sort_unstable();
        let default = if any_external { public.clone() } else { private.clone() };
        NodeTargets {
            public,
            private,
            default,
        }
    }

    pub fn for_access(&self, access: Option<&str>) -> &[String] {
        match access {
            Some("public") => &self.public,
            Some("private") => &self.private,
            _ => &self.default,
        }
    }
}

/// All nodes of the cluster by name, and the targets over every node a NodePort Service without the Local
/// traffic policy uses (unschedulable ones left out unless `--no-exclude-unschedulable`).
pub(crate) struct NodeIndex {
    by_name: HashMap<String, NodeAddrs>,
    pub all: NodeTargets,
}

impl NodeIndex {
    fn build(cluster: &dyn Cluster, cfg: &ServiceSourceConfig) -> NodeIndex {
        let nodes = cluster.nodes();
        let by_name: HashMap<String, NodeAddrs> = nodes.iter().map(|n| (n.name.clone(), NodeAddrs::of(n))).collect();
        let eligible = nodes
            .iter()
            .filter_map(|n| by_name.get(&n.name))
            .filter(|a| !(a.unschedulable && cfg.exclude_unschedulable));
        let all = NodeTargets::over(eligible, cfg.expose_internal_ipv6);
        NodeIndex { by_name, all }
    }

    pub fn get(&self, name: &str) -> Option<&NodeAddrs> {
        self.by_name.get(name)
    }
}
