//! Contour's HTTPProxy (`projectcontour.io/v1`): the fields of the API type the `contour-httpproxy` source
//! reads, written by hand rather than generated from Contour's CRD (its routes, includes and TLS settings
//! would be most of the code and none of what a DNS record needs), and its conversion to
//! [`view::HttpProxy`]. The fields it does not name are kept whole until the conversion, for templates.
//! Fields the object leaves out take their defaults, so a proxy that only includes
//! others (no `virtualhost`) or has no status yet still decodes.

use k8s_openapi::api::core::v1::LoadBalancerStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

use crate::ResourceKind;
use crate::convert::{load_balancer_ingress, meta};
use crate::crd_type::namespaced_crd;
use crate::view;
use crate::watched::{Convert, sealed::Sealed};

/// An HTTPProxy as the API serves it, trimmed to what the source reads.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct HttpProxy {
    /// Identity, labels and annotations.
    pub metadata: ObjectMeta,
    /// `spec`; only its virtual host counts.
    pub spec: HttpProxySpec,
    /// `status`; only its load balancer counts.
    pub status: HttpProxyStatus,
}

/// `spec` of an HTTPProxy.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct HttpProxySpec {
    /// `spec.virtualhost`; absent on a proxy only included by a root proxy.
    pub virtualhost: Option<VirtualHost>,
    /// The fields no source reads, kept until the conversion so an FQDN template can read them
    /// ([`crate::TemplateFields`]); the view drops them.
    #[serde(flatten)]
    pub rest: serde_json::Map<String, serde_json::Value>,
}

/// `spec.virtualhost` of a root HTTPProxy.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct VirtualHost {
    /// `fqdn`: the name the proxy serves, published.
    pub fqdn: String,
    /// The fields no source reads, kept until the conversion so an FQDN template can read them
    /// ([`crate::TemplateFields`]); the view drops them.
    #[serde(flatten)]
    pub rest: serde_json::Map<String, serde_json::Value>,
}

/// `status` of an HTTPProxy, as Contour writes it.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, rename_all = "camelCase")]
pub struct HttpProxyStatus {
    /// The addresses of Contour's Envoy Service, copied by Contour (`--envoy-service-name` or
    /// `--ingress-status-address`): the targets when no target annotation is set.
    pub load_balancer: Option<LoadBalancerStatus>,
    /// The fields no source reads, kept until the conversion so an FQDN template can read them
    /// ([`crate::TemplateFields`]); the view drops them.
    #[serde(flatten)]
    pub rest: serde_json::Map<String, serde_json::Value>,
}

namespaced_crd!(HttpProxy, ResourceKind::HttpProxy);

impl Sealed for HttpProxy {
    type View = view::HttpProxy;
    const KIND: ResourceKind = ResourceKind::HttpProxy;
    fn view(&self, _: &Convert<'_>) -> view::HttpProxy {
        view::HttpProxy {
            meta: meta(&self.metadata),
            fqdn: self
                .spec
                .virtualhost
                .as_ref()
                .map(|v| v.fqdn.as_str())
                .filter(|f| !f.is_empty())
                .map(Box::from),
            load_balancer_ingress: load_balancer_ingress(
                self.status.load_balancer.as_ref().and_then(|lb| lb.ingress.as_ref()),
            ),
            template_fields: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view_of(value: serde_json::Value) -> view::HttpProxy {
        crate::watched::view_of::<HttpProxy>(value)
    }

    #[test]
    fn the_fqdn_and_the_load_balancer_reach_the_view() {
        let v = view_of(serde_json::json!({
            "apiVersion": "projectcontour.io/v1", "kind": "HTTPProxy",
            "metadata": {"name": "shop", "namespace": "web", "annotations": {"a": "b"}},
            "spec": {"virtualhost": {"fqdn": "shop.example.org", "tls": {"secretName": "s"}},
                     "routes": [{"services": [{"name": "s", "port": 80}]}]},
            "status": {"currentStatus": "valid", "conditions": [{"type": "Valid", "status": "True"}],
                       "loadBalancer": {"ingress": [{"ip": "192.0.2.1"}, {"hostname": "lb.example.net"}]}}
        }));
        assert_eq!(v.meta.name, "shop");
        assert_eq!(v.fqdn.as_deref(), Some("shop.example.org"));
        assert_eq!(v.load_balancer_ingress.len(), 2);
        assert_eq!(v.load_balancer_ingress[0].ip.as_deref(), Some("192.0.2.1"));
        assert_eq!(v.load_balancer_ingress[1].hostname.as_deref(), Some("lb.example.net"));
    }

    #[test]
    fn an_included_proxy_without_virtualhost_or_status_decodes_with_no_name() {
        let v = view_of(serde_json::json!({
            "apiVersion": "projectcontour.io/v1", "kind": "HTTPProxy",
            "metadata": {"name": "child", "namespace": "web"},
            "spec": {"routes": []}
        }));
        assert_eq!(v.fqdn, None);
        assert!(v.load_balancer_ingress.is_empty());
    }
}
