//! F5 Container Ingress Services' VirtualServer and TransportServer (`cis.f5.com/v1`): the API types the
//! `f5-virtualserver` and `f5-transportserver` sources read, and their conversion to [`view::F5Server`].
//!
//! Written by hand with the fields the sources read, not generated from F5's CRDs: the CRDs carry dozens of
//! pool, profile and iRule fields no source looks at, and each field read here is optional in the CRD
//! (TransportServer requires fields of its pool and port, none of which the source reads). The two kinds
//! share one view, as the sources differ only in VirtualServer's `hostAliases`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

use crate::ResourceKind;
use crate::convert::meta;
use crate::crd_type::namespaced_crd;
use crate::view;
use crate::watched::{Convert, sealed::Sealed};

/// A VirtualServer as far as the source reads it.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct VirtualServer {
    /// Identity, labels and annotations.
    pub metadata: ObjectMeta,
    /// The names and the address asked for.
    pub spec: VirtualServerSpec,
    /// The address the controller gave.
    pub status: ServerStatus,
}

/// `spec` of a VirtualServer: what the source reads of it.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, rename_all = "camelCase")]
pub struct VirtualServerSpec {
    /// `host`: the name published.
    pub host: Option<String>,
    /// `hostAliases`: more names, published with the same targets.
    pub host_aliases: Option<Vec<String>>,
    /// `virtualServerAddress`: the address asked for, the target when no annotation sets one.
    pub virtual_server_address: Option<String>,
}

/// A TransportServer as far as the source reads it.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct TransportServer {
    /// Identity, labels and annotations.
    pub metadata: ObjectMeta,
    /// The name and the address asked for.
    pub spec: TransportServerSpec,
    /// The address the controller gave.
    pub status: ServerStatus,
}

/// `spec` of a TransportServer: what the source reads of it.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, rename_all = "camelCase")]
pub struct TransportServerSpec {
    /// `host`: the name published.
    pub host: Option<String>,
    /// `virtualServerAddress`: the address asked for, the target when no annotation sets one.
    pub virtual_server_address: Option<String>,
}

/// `status` of both kinds (F5's `CustomResourceStatus`).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ServerStatus {
    /// `vsAddress`: the address the BIG-IP virtual server listens on; `None` (any case) or empty while it
    /// has none, and the object then publishes nothing.
    pub vs_address: Option<String>,
}

namespaced_crd!(VirtualServer, ResourceKind::F5VirtualServer);
namespaced_crd!(TransportServer, ResourceKind::F5TransportServer);

impl Sealed for VirtualServer {
    type View = view::F5Server;
    const KIND: ResourceKind = ResourceKind::F5VirtualServer;
    fn view(&self, _: &Convert<'_>) -> view::F5Server {
        view::F5Server {
            kind: view::F5Kind::VirtualServer,
            meta: meta(&self.metadata),
            host: self.spec.host.clone().unwrap_or_default(),
            host_aliases: self.spec.host_aliases.clone().unwrap_or_default(),
            virtual_server_address: self.spec.virtual_server_address.clone().unwrap_or_default(),
            vs_address: self.status.vs_address.clone().unwrap_or_default(),
        }
    }
}

impl Sealed for TransportServer {
    type View = view::F5Server;
    const KIND: ResourceKind = ResourceKind::F5TransportServer;
    fn view(&self, _: &Convert<'_>) -> view::F5Server {
        view::F5Server {
            kind: view::F5Kind::TransportServer,
            meta: meta(&self.metadata),
            host: self.spec.host.clone().unwrap_or_default(),
            host_aliases: Vec::new(),
            virtual_server_address: self.spec.virtual_server_address.clone().unwrap_or_default(),
            vs_address: self.status.vs_address.clone().unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_virtual_servers_names_and_addresses_reach_the_view() {
        let v = crate::watched::view_of::<VirtualServer>(serde_json::json!({
            "apiVersion": "cis.f5.com/v1", "kind": "VirtualServer",
            "metadata": {"name": "web", "namespace": "ns", "annotations": {"a": "b"}},
            "spec": {"host": "web.example.org", "hostAliases": ["www.example.org"],
                     "virtualServerAddress": "192.0.2.1", "pools": [{"service": "web", "servicePort": 80}]},
            "status": {"vsAddress": "192.0.2.2", "status": "Ok"}
        }));
        assert_eq!(v.kind, view::F5Kind::VirtualServer);
        assert_eq!((v.meta.namespace.as_str(), v.meta.name.as_str()), ("ns", "web"));
        assert_eq!(v.host, "web.example.org");
        assert_eq!(v.host_aliases, vec!["www.example.org".to_string()]);
        assert_eq!(v.virtual_server_address, "192.0.2.1");
        assert_eq!(v.vs_address, "192.0.2.2");
    }

    #[test]
    fn a_transport_server_without_status_has_no_address() {
        let v = crate::watched::view_of::<TransportServer>(serde_json::json!({
            "apiVersion": "cis.f5.com/v1", "kind": "TransportServer",
            "metadata": {"name": "db", "namespace": "ns"},
            "spec": {"host": "db.example.org", "virtualServerPort": 5432, "mode": "standard",
                     "pool": {"service": "db", "servicePort": 5432}}
        }));
        assert_eq!(v.kind, view::F5Kind::TransportServer);
        assert_eq!(v.host, "db.example.org");
        assert!(v.host_aliases.is_empty() && v.vs_address.is_empty() && v.virtual_server_address.is_empty());
    }
}
