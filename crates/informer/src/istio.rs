//! Istio's networking.istio.io Gateway and VirtualService: the API types the `istio-gateway` and
//! `istio-virtualservice` sources read, and their conversions to [`view::IstioGateway`] and
//! [`view::VirtualService`].
//!
//! Written by hand with the fields the sources read, not generated from Istio's CRDs: Istio's types are
//! protobuf messages whose CRD schemas leave almost everything open, and extdns reads five fields of them.
//! Every served version (v1, v1beta1, v1alpha3) has these fields alike, so one type serves them all; the
//! watch addresses the version discovery found through the `ApiResource` it is given, and every field is
//! optional, as in the CRDs.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

use crate::ResourceKind;
use crate::convert::meta;
use crate::crd_type::namespaced_crd;
use crate::view;
use crate::watched::{Convert, sealed::Sealed};

/// An Istio Gateway as the API serves it.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct IstioGateway {
    /// Identity.
    pub metadata: ObjectMeta,
    /// `None` when the object has no spec.
    pub spec: Option<GatewaySpec>,
}

/// The fields of a Gateway's spec the sources read.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct GatewaySpec {
    /// The labels of the ingress gateway Pods; matched against Services' selectors.
    pub selector: Option<BTreeMap<String, String>>,
    /// The servers, each with the hosts it serves.
    pub servers: Option<Vec<Option<Server>>>,
}

/// One `spec.servers[]` entry, as far as the sources read it.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct Server {
    /// `host` or `namespace/host`; `*` and `*.example.org` wildcards.
    pub hosts: Option<Vec<String>>,
}

/// An Istio VirtualService as the API serves it.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct VirtualService {
    /// Identity.
    pub metadata: ObjectMeta,
    /// `None` when the object has no spec.
    pub spec: Option<VirtualServiceSpec>,
}

/// The fields of a VirtualService's spec the sources read.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, rename_all = "camelCase")]
pub struct VirtualServiceSpec {
    /// The names it routes.
    pub hosts: Option<Vec<String>>,
    /// The Gateways it binds to (`namespace/name`, `name`, `mesh`).
    pub gateways: Option<Vec<String>>,
    /// The namespaces it is visible in.
    pub export_to: Option<Vec<String>>,
}

namespaced_crd!(IstioGateway, ResourceKind::IstioGateway);
namespaced_crd!(VirtualService, ResourceKind::VirtualService);

impl Sealed for IstioGateway {
    type View = view::IstioGateway;
    const KIND: ResourceKind = ResourceKind::IstioGateway;
    fn view(&self, _: &Convert<'_>) -> view::IstioGateway {
        let spec = self.spec.as_ref();
        let mut hosts: Vec<String> = spec
            .and_then(|s| s.servers.as_ref())
            .into_iter()
            .flatten()
            .flatten()
            .flat_map(|server| server.hosts.iter().flatten().cloned())
            .collect();
        hosts.shrink_to_fit();
        view::IstioGateway {
            meta: meta(&self.metadata),
            selector: spec.and_then(|s| s.selector.as_ref()).into_iter().flatten().collect(),
            hosts,
            template_fields: None,
        }
    }
}

impl Sealed for VirtualService {
    type View = view::VirtualService;
    const KIND: ResourceKind = ResourceKind::VirtualService;
    fn view(&self, _: &Convert<'_>) -> view::VirtualService {
        let spec = self.spec.as_ref();
        let list = |f: fn(&VirtualServiceSpec) -> &Option<Vec<String>>| -> Vec<String> {
            spec.and_then(|s| f(s).clone()).unwrap_or_default()
        };
        view::VirtualService {
            meta: meta(&self.metadata),
            hosts: list(|s| &s.hosts),
            gateways: list(|s| &s.gateways),
            export_to: list(|s| &s.export_to),
            template_fields: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gateway_keeps_its_selector_and_every_servers_hosts_in_order() {
        let v = crate::watched::view_of::<IstioGateway>(serde_json::json!({
            "apiVersion": "networking.istio.io/v1beta1", "kind": "Gateway",
            "metadata": {"name": "gw", "namespace": "istio-system"},
            "spec": {
                "selector": {"istio": "ingressgateway"},
                "servers": [
                    {"port": {"number": 80, "name": "http", "protocol": "HTTP"}, "hosts": ["a.example.org", "ns/b.example.org"]},
                    null,
                    {"port": {"number": 443, "name": "https", "protocol": "HTTPS"}, "hosts": ["*"], "tls": {"mode": "SIMPLE"}}
                ]
            }
        }));
        assert_eq!(v.selector.get("istio"), Some("ingressgateway"));
        assert_eq!(v.hosts, ["a.example.org", "ns/b.example.org", "*"]);
    }

    #[test]
    fn a_virtual_service_keeps_hosts_gateways_and_export_to() {
        let v = crate::watched::view_of::<VirtualService>(serde_json::json!({
            "apiVersion": "networking.istio.io/v1", "kind": "VirtualService",
            "metadata": {"name": "vs", "namespace": "shop"},
            "spec": {"hosts": ["shop.example.org"], "gateways": ["istio-system/gw", "mesh"], "exportTo": ["."],
                     "http": [{"route": [{"destination": {"host": "web"}}]}]}
        }));
        assert_eq!(v.hosts, ["shop.example.org"]);
        assert_eq!(v.gateways, ["istio-system/gw", "mesh"]);
        assert_eq!(v.export_to, ["."]);
        let empty = crate::watched::view_of::<VirtualService>(serde_json::json!({
            "apiVersion": "networking.istio.io/v1alpha3", "kind": "VirtualService",
            "metadata": {"name": "vs", "namespace": "shop"}
        }));
        assert!(empty.hosts.is_empty() && empty.gateways.is_empty());
    }
}
