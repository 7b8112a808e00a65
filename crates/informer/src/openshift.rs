//! OpenShift's Route (`route.openshift.io/v1`): the fields of the API type the `openshift-route` source reads,
//! written by hand rather than generated from OpenShift's CRD (the backends, TLS and path are none of what a
//! DNS record needs), and its conversion to [`view::OpenShiftRoute`]. As external-dns, the source reads the
//! host each router admitted the route under (`status.ingress[]`), not `spec.host`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

use crate::ResourceKind;
use crate::convert::meta;
use crate::crd_type::namespaced_crd;
use crate::view;
use crate::watched::{Convert, sealed::Sealed};

/// A Route as the API serves it, trimmed to what the source reads.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct Route {
    /// Identity, labels and annotations.
    pub metadata: ObjectMeta,
    /// `spec`, kept until the conversion only for FQDN templates (`{{.Spec.Host}}`): as external-dns, the
    /// source publishes the host a router admitted, not this.
    pub spec: serde_json::Value,
    /// `status`; the routers that admitted the route.
    pub status: RouteStatus,
}

/// `status` of a Route, as the routers write it.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct RouteStatus {
    /// One entry per router that looked at the route.
    pub ingress: Vec<RouteIngress>,
    /// The fields no source reads, kept until the conversion so an FQDN template can read them
    /// ([`crate::TemplateFields`]); the view drops them.
    #[serde(flatten)]
    pub rest: serde_json::Map<String, serde_json::Value>,
}

/// One `status.ingress[]` entry: what one router made of the route.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, rename_all = "camelCase")]
pub struct RouteIngress {
    /// The host the router serves the route under.
    pub host: String,
    /// The router's name (`--openshift-router-name` selects by it).
    pub router_name: String,
    /// The router's own DNS name, the record's target.
    pub router_canonical_hostname: String,
    /// The router's conditions; only `Admitted` counts.
    pub conditions: Vec<RouteIngressCondition>,
    /// The fields no source reads, kept until the conversion so an FQDN template can read them
    /// ([`crate::TemplateFields`]); the view drops them.
    #[serde(flatten)]
    pub rest: serde_json::Map<String, serde_json::Value>,
}

/// One condition of a `status.ingress[]` entry.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct RouteIngressCondition {
    /// `Admitted` (the only type OpenShift defines).
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// The fields no source reads, kept until the conversion so an FQDN template can read them
    /// ([`crate::TemplateFields`]); the view drops them.
    #[serde(flatten)]
    pub rest: serde_json::Map<String, serde_json::Value>,
}

namespaced_crd!(Route, ResourceKind::OpenShiftRoute);

impl Sealed for Route {
    type View = view::OpenShiftRoute;
    const KIND: ResourceKind = ResourceKind::OpenShiftRoute;
    fn view(&self, _: &Convert<'_>) -> view::OpenShiftRoute {
        let ingress = self.status.ingress.iter().map(|i| view::RouterIngress {
            host: i.host.as_str().into(),
            router_name: i.router_name.as_str().into(),
            router_canonical_hostname: i.router_canonical_hostname.as_str().into(),
            // The first condition of the type decides, as external-dns reads it.
            admitted: i
                .conditions
                .iter()
                .find(|c| c.type_ == "Admitted")
                .is_some_and(|c| c.status == "True"),
        });
        view::OpenShiftRoute {
            meta: meta(&self.metadata),
            ingress: ingress.collect(),
            template_fields: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_router_entry_reaches_the_view_with_its_admission() {
        let v = crate::watched::view_of::<Route>(serde_json::json!({
            "apiVersion": "route.openshift.io/v1", "kind": "Route",
            "metadata": {"name": "shop", "namespace": "web"},
            "spec": {"host": "shop.example.org", "to": {"kind": "Service", "name": "shop"}},
            "status": {"ingress": [
                {"host": "shop.example.org", "routerName": "default",
                 "routerCanonicalHostname": "router-default.apps.example.org",
                 "conditions": [{"type": "Admitted", "status": "True"}]},
                {"host": "shop.example.org", "routerName": "internal",
                 "conditions": [{"type": "Admitted", "status": "False"}]}
            ]}
        }));
        assert_eq!(v.ingress.len(), 2);
        assert_eq!(
            &*v.ingress[0].router_canonical_hostname,
            "router-default.apps.example.org"
        );
        assert!(v.ingress[0].admitted);
        assert_eq!(&*v.ingress[1].router_name, "internal");
        assert!(!v.ingress[1].admitted);
    }
}
