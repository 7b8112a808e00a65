//! What one `endpoints()` call shares between Services: the configuration, the cluster view, resolved load
//! balancer hostnames and an index of node addresses built at most once per call (a NodePort Service over a
//! thousand nodes must not classify a thousand addresses again for every Service).

use std::cell::OnceCell;
use std::collections::HashMap;

use extdns_endpoint::{Target, TargetKind};
use extdns_informer::ClusterStore;
use extdns_informer::view::{self, Node};
use extdns_source::ResolveError;

use crate::config::ServiceSourceConfig;

/// Load balancer hostname → its addresses, or why it could not be resolved.
pub(crate) type Resolved = HashMap<String, Result<Vec<Target>, ResolveError>>;

pub(crate) struct Ctx<'a> {
    pub cfg: &'a ServiceSourceConfig,
    pub cluster: &'a ClusterStore,
    pub resolved: Resolved,
    nodes: OnceCell<NodeIndex>,
}

impl<'a> Ctx<'a> {
    pub fn new(cfg: &'a ServiceSourceConfig, cluster: &'a ClusterStore, resolved: Resolved) -> Self {
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

/// Addresses split by family, so records can be built without sorting them by family again.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct SplitTargets {
    pub v4: Vec<Target>,
    pub v6: Vec<Target>,
}

impl SplitTargets {
    /// Add an address; anything else is not a node address and is left out.
    fn push(&mut self, address: Target) {
        match address.kind() {
            TargetKind::Ipv4(_) => self.v4.push(address),
            TargetKind::Ipv6(_) => self.v6.push(address),
            _ => {}
        }
    }

    fn extend(&mut self, other: &SplitTargets) {
        self.v4.extend(other.v4.iter().cloned());
        self.v6.extend(other.v6.iter().cloned());
    }

    pub fn is_empty(&self) -> bool {
        self.v4.is_empty() && self.v6.is_empty()
    }

    /// Both families, IPv4 first.
    pub fn all(&self) -> impl Iterator<Item = &Target> {
        self.v4.iter().chain(self.v6.iter())
    }
}

/// A node's usable addresses, classified as the NodePort rules need them.
#[derive(Debug, Default)]
pub(crate) struct NodeAddrs {
    /// `ExternalIP` addresses.
    pub external: SplitTargets,
    /// `InternalIP` addresses; the `v6` ones are those `--expose-internal-ipv6` makes public.
    pub internal: SplitTargets,
    pub unschedulable: bool,
}

impl NodeAddrs {
    fn of(node: &Node) -> NodeAddrs {
        let mut addrs = NodeAddrs {
            unschedulable: node.unschedulable,
            ..NodeAddrs::default()
        };
        for (i, a) in node.addresses.iter().enumerate() {
            let list = match a.address_type.as_str() {
                view::EXTERNAL_IP => &mut addrs.external,
                view::INTERNAL_IP => &mut addrs.internal,
                _ => continue,
            };
            let address = Target::from(a.address.as_str());
            if !address.is_ip() {
                tracing::warn!(
                    node = %node.name,
                    field = %format_args!("status.addresses[{i}].address"),
                    value = %a.address,
                    "skipping node address: not an IP address"
                );
                continue;
            }
            list.push(address);
        }
        addrs
    }

    /// External addresses, plus IPv6 internal ones with `--expose-internal-ipv6` (IPv6 addresses are
    /// often routable even when a node reports them as internal).
    pub fn public(&self, expose_internal_ipv6: bool) -> SplitTargets {
        let mut t = self.external.clone();
        if expose_internal_ipv6 {
            t.v6.extend(self.internal.v6.iter().cloned());
        }
        t
    }
}

/// The node addresses a NodePort Service publishes, per `access` annotation value, over a set of nodes.
#[derive(Debug, Default)]
pub(crate) struct NodeTargets {
    /// `access: public`: external addresses, plus IPv6 internal ones with `--expose-internal-ipv6`.
    pub public: SplitTargets,
    /// `access: private`: internal addresses, both families.
    pub private: SplitTargets,
    /// No `access`: public when any node has an external address, else private.
    pub default: SplitTargets,
}

impl NodeTargets {
    pub fn over<'n>(nodes: impl IntoIterator<Item = &'n NodeAddrs>, expose_internal_ipv6: bool) -> NodeTargets {
        let mut external = SplitTargets::default();
        let mut private = SplitTargets::default();
        for n in nodes {
            external.extend(&n.external);
            private.extend(&n.internal);
        }
        let any_external = !external.is_empty();
        let mut public = external;
        if expose_internal_ipv6 {
            public.v6.extend(private.v6.iter().cloned());
        }
        // Sorted once here, the per-record sort the merge does later is linear.
        for list in [&mut public.v4, &mut public.v6, &mut private.v4, &mut private.v6] {
            list.sort_unstable();
            list.dedup();
        }
        let default = if any_external { public.clone() } else { private.clone() };
        NodeTargets {
            public,
            private,
            default,
        }
    }

    pub fn for_access(&self, access: Option<&str>) -> &SplitTargets {
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
    fn build(cluster: &ClusterStore, cfg: &ServiceSourceConfig) -> NodeIndex {
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
