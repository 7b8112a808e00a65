//! Fake objects as the API server holds them: their metadata and the builder methods every fake shares, a
//! LoadBalancer Service, and a Node's view.

use extdns_informer::view::{Node, NodeAddress};
use serde_json::{Value, json};

/// An annotation under external-dns's default prefix.
pub fn ga(key: &str) -> String {
    format!("{}{key}", crate::PREFIX_GA)
}

/// An annotation under external-dns's legacy (alpha) prefix.
pub fn alpha(key: &str) -> String {
    format!("{}{key}", crate::PREFIX_ALPHA)
}

/// `metadata` of an object as the API server holds it; an empty `namespace` (a cluster-scoped object) is
/// left out.
pub fn metadata(name: &str, namespace: &str, annotations: &[(String, &str)], labels: &[(&str, &str)]) -> Value {
    let annotations: serde_json::Map<String, Value> =
        annotations.iter().map(|(k, v)| (k.clone(), (*v).into())).collect();
    let labels: serde_json::Map<String, Value> = labels.iter().map(|(k, v)| (k.to_string(), (*v).into())).collect();
    let mut meta = json!({"name": name, "annotations": annotations, "labels": labels});
    if !namespace.is_empty() {
        meta["namespace"] = namespace.into();
    }
    meta
}

/// `status.loadBalancer` with these IPs, then these hostnames.
pub fn load_balancer_status(ips: &[&str], hostnames: &[&str]) -> Value {
    let mut ingress: Vec<Value> = ips.iter().map(|ip| json!({"ip": ip})).collect();
    ingress.extend(hostnames.iter().map(|h| json!({"hostname": h})));
    json!({"ingress": ingress})
}

/// A LoadBalancer Service `namespace/name` as the API server holds it, its `status.loadBalancer` holding
/// `addresses` in order, each an `ip` when it parses as one and a `hostname` otherwise: the Service that
/// sources reading a gateway's or controller's Service (Ambassador, Traefik) publish the addresses of.
pub fn load_balancer_service(namespace: &str, name: &str, addresses: &[&str]) -> Value {
    let ingress: Vec<Value> = addresses
        .iter()
        .map(|a| {
            if a.parse::<std::net::IpAddr>().is_ok() {
                json!({"ip": a})
            } else {
                json!({"hostname": a})
            }
        })
        .collect();
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]},
        "status": {"loadBalancer": {"ingress": ingress}},
    })
}

/// The informer's view of a Node `name` with `addresses` (type, address) in order, for tests that build
/// views rather than load JSON.
pub fn node_view(name: &str, addresses: &[(&str, &str)]) -> Node {
    let address = |&(address_type, address): &(&str, &str)| NodeAddress {
        address_type: address_type.to_string(),
        address: address.to_string(),
    };
    Node {
        name: name.into(),
        addresses: addresses.iter().map(address).collect(),
        ..Node::default()
    }
}

/// A fake object's name, namespace, annotations and labels.
#[derive(Debug, Clone, Default)]
pub struct FakeMeta {
    /// `metadata.name`.
    pub name: &'static str,
    /// `metadata.namespace`.
    pub namespace: &'static str,
    /// `metadata.annotations`, in order.
    pub annotations: Vec<(String, &'static str)>,
    /// `metadata.labels`, in order.
    pub labels: Vec<(&'static str, &'static str)>,
}

impl FakeMeta {
    /// An object `name` in `namespace`, without annotations or labels.
    pub fn new(name: &'static str, namespace: &'static str) -> FakeMeta {
        FakeMeta {
            name,
            namespace,
            ..FakeMeta::default()
        }
    }

    /// `metadata` as the API server holds it.
    pub fn json(&self) -> Value {
        metadata(self.name, self.namespace, &self.annotations, &self.labels)
    }
}

/// The builder methods every fake object shares, over its [`FakeMeta`]; [`crate::fixture!`] implements it
/// for a fake whose metadata is its field `meta`.
pub trait Fixture: Sized {
    /// The object's metadata.
    fn meta_mut(&mut self) -> &mut FakeMeta;

    /// The default fake named `name` in `namespace`.
    fn named(name: &'static str, namespace: &'static str) -> Self
    where
        Self: Default,
    {
        let mut fake = Self::default();
        *fake.meta_mut() = FakeMeta::new(name, namespace);
        fake
    }

    /// The object moved to namespace `ns`.
    fn ns(mut self, ns: &'static str) -> Self {
        self.meta_mut().namespace = ns;
        self
    }

    /// The object with annotation `key` (spelled whole: see [`ga`], [`alpha`]) set to `value`.
    fn ann(mut self, key: impl Into<String>, value: &'static str) -> Self {
        self.meta_mut().annotations.push((key.into(), value));
        self
    }

    /// The object with label `key` set to `value`.
    fn label(mut self, key: &'static str, value: &'static str) -> Self {
        self.meta_mut().labels.push((key, value));
        self
    }
}

/// `impl Fixture for $fake` over its field `meta`, so a fake object gets the shared builder methods in one
/// line.
#[macro_export]
macro_rules! fixture {
    ($fake:ty) => {
        impl $crate::pipeline::testing::Fixture for $fake {
            fn meta_mut(&mut self) -> &mut $crate::pipeline::testing::FakeMeta {
                &mut self.meta
            }
        }
    };
}
