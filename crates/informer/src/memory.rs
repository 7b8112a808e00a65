use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use tokio::sync::watch;

use crate::Cluster;
use crate::view::{EndpointSlice, Gateway, ListenerSet, Namespace, Node, Pod, Route, RouteKind, Service};

/// A cluster view held in memory, filled once: from manifest files (`extdns endpoints`, `--manifests`) or by
/// tests. It is always synced and never changes.
#[derive(Debug)]
pub struct MemoryCluster {
    services: Vec<Arc<Service>>,
    slices: HashMap<(String, String), Vec<Arc<EndpointSlice>>>,
    pods: HashMap<String, BTreeMap<String, Arc<Pod>>>,
    nodes: BTreeMap<String, Arc<Node>>,
    namespaces: HashMap<String, Arc<Namespace>>,
    gateways: BTreeMap<(String, String), Arc<Gateway>>,
    listener_sets: BTreeMap<(String, String), Arc<ListenerSet>>,
    routes: HashMap<RouteKind, Vec<Arc<Route>>>,
    changes: watch::Sender<u64>,
}

impl Default for MemoryCluster {
    fn default() -> Self {
        MemoryCluster {
            services: Vec::new(),
            slices: HashMap::new(),
            pods: HashMap::new(),
            nodes: BTreeMap::new(),
            namespaces: HashMap::new(),
            gateways: BTreeMap::new(),
            listener_sets: BTreeMap::new(),
            routes: HashMap::new(),
            changes: watch::Sender::new(0),
        }
    }
}

impl MemoryCluster {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add_service(&mut self, s: Service) -> &mut Self {
        self.services.push(Arc::new(s));
        self
    }

    /// Indexed by its `kubernetes.io/service-name` label; a slice without one belongs to no Service.
    pub fn add_endpoint_slice(&mut self, s: EndpointSlice) -> &mut Self {
        if let Some(svc) = s.service_name.clone() {
            self.slices
                .entry((s.meta.namespace.clone(), svc))
                .or_default()
                .push(Arc::new(s));
        }
        self
    }

    pub fn add_pod(&mut self, p: Pod) -> &mut Self {
        self.pods
            .entry(p.namespace.to_string())
            .or_default()
            .insert(p.name.to_string(), Arc::new(p));
        self
    }

    pub fn add_node(&mut self, n: Node) -> &mut Self {
        self.nodes.insert(n.name.clone(), Arc::new(n));
        self
    }

    pub fn add_namespace(&mut self, n: Namespace) -> &mut Self {
        self.namespaces.insert(n.name.clone(), Arc::new(n));
        self
    }

    pub fn add_gateway(&mut self, g: Gateway) -> &mut Self {
        self.gateways
            .insert((g.meta.namespace.clone(), g.meta.name.clone()), Arc::new(g));
        self
    }

    pub fn add_listener_set(&mut self, l: ListenerSet) -> &mut Self {
        self.listener_sets
            .insert((l.meta.namespace.clone(), l.meta.name.clone()), Arc::new(l));
        self
    }

    pub fn add_route(&mut self, r: Route) -> &mut Self {
        self.routes.entry(r.kind).or_default().push(Arc::new(r));
        self
    }
}

impl Cluster for MemoryCluster {
    fn services(&self) -> Vec<Arc<Service>> {
        self.services.clone()
    }

    fn endpoint_slices(&self, namespace: &str, service: &str) -> Vec<Arc<EndpointSlice>> {
        self.slices
            .get(&(namespace.to_string(), service.to_string()))
            .cloned()
            .unwrap_or_default()
    }

    fn pods(&self, namespace: &str) -> Vec<Arc<Pod>> {
        self.pods
            .get(namespace)
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    }

    fn pod(&self, namespace: &str, name: &str) -> Option<Arc<Pod>> {
        self.pods.get(namespace)?.get(name).cloned()
    }

    fn nodes(&self) -> Vec<Arc<Node>> {
        self.nodes.values().cloned().collect()
    }

    fn node(&self, name: &str) -> Option<Arc<Node>> {
        self.nodes.get(name).cloned()
    }

    fn namespace(&self, name: &str) -> Option<Arc<Namespace>> {
        self.namespaces.get(name).cloned()
    }

    fn gateways(&self) -> Vec<Arc<Gateway>> {
        self.gateways.values().cloned().collect()
    }

    fn gateway(&self, namespace: &str, name: &str) -> Option<Arc<Gateway>> {
        self.gateways.get(&(namespace.to_string(), name.to_string())).cloned()
    }

    fn listener_sets(&self) -> Vec<Arc<ListenerSet>> {
        self.listener_sets.values().cloned().collect()
    }

    fn listener_set(&self, namespace: &str, name: &str) -> Option<Arc<ListenerSet>> {
        self.listener_sets
            .get(&(namespace.to_string(), name.to_string()))
            .cloned()
    }

    fn routes(&self, kind: RouteKind) -> Vec<Arc<Route>> {
        self.routes.get(&kind).cloned().unwrap_or_default()
    }

    fn synced(&self) -> bool {
        true
    }

    fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::Meta;

    #[test]
    fn slices_are_found_by_their_service() {
        let mut c = MemoryCluster::new();
        c.add_endpoint_slice(EndpointSlice {
            meta: Meta {
                name: "web-abc".into(),
                namespace: "default".into(),
                ..Meta::default()
            },
            service_name: Some("web".into()),
            ..EndpointSlice::default()
        });
        assert_eq!(c.endpoint_slices("default", "web").len(), 1);
        assert!(c.endpoint_slices("other", "web").is_empty());
    }

    #[test]
    fn pods_are_found_by_namespace_and_name() {
        let mut c = MemoryCluster::new();
        c.add_pod(Pod {
            name: "p".into(),
            namespace: "ns".into(),
            ..Pod::default()
        });
        assert!(c.pod("ns", "p").is_some());
        assert_eq!(c.pods("ns").len(), 1);
        assert!(c.pod("other", "p").is_none());
    }
}
