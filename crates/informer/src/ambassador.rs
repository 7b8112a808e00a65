//! Emissary-ingress's (Ambassador's) Host (`getambassador.io/v3alpha1`, and `v2`, which Emissary 3 serves
//! with it): the fields of the API type the `ambassador-host` source reads, and its conversion to
//! [`view::AmbassadorHost`].
//!
//! Written by hand rather than generated from Emissary's CRD: the CRD's TLS, ACME and request-policy
//! settings are most of it and none of what a DNS record needs; the source reads the hostname and the
//! metadata (its annotations name the Service whose address is the target). The field read is the same in
//! both versions, so one type decodes either.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

use crate::ResourceKind;
use crate::convert::meta;
use crate::crd_type::namespaced_crd;
use crate::view;
use crate::watched::{Convert, sealed::Sealed};

/// A Host as the API serves it, trimmed to what the source reads.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct Host {
    /// Identity, labels and annotations.
    pub metadata: ObjectMeta,
    /// `spec`; absent on a Host that names nothing, which then publishes nothing.
    pub spec: Option<HostSpec>,
}

/// `spec` of a Host: what the source reads of it.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct HostSpec {
    /// `hostname`: the name published.
    pub hostname: Option<String>,
}

namespaced_crd!(Host, ResourceKind::AmbassadorHost);

impl Sealed for Host {
    type View = view::AmbassadorHost;
    const KIND: ResourceKind = ResourceKind::AmbassadorHost;
    fn view(&self, _: &Convert<'_>) -> view::AmbassadorHost {
        view::AmbassadorHost {
            meta: meta(&self.metadata),
            hostname: self
                .spec
                .as_ref()
                .and_then(|s| s.hostname.as_deref())
                .unwrap_or_default()
                .into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view_of(value: serde_json::Value) -> view::AmbassadorHost {
        crate::watched::view_of::<Host>(value)
    }

    /// The shape an Emissary 3.10 API server serves a v3alpha1 Host in, with the fields its conversion
    /// webhook adds (external-dns's `TestAmbassadorHostSource_RealApiserverObject`).
    #[test]
    fn a_served_host_keeps_its_hostname_and_annotations() {
        let v = view_of(serde_json::json!({
            "apiVersion": "getambassador.io/v3alpha1", "kind": "Host",
            "metadata": {"name": "my-host", "namespace": "default",
                         "annotations": {"external-dns.ambassador-service": "emissary/emissary-ingress"}},
            "spec": {"hostname": "my-host.example.com", "ambassador_id": ["default"],
                     "acmeProvider": {"authority": "none"}, "tlsSecret": {"name": "s"}}
        }));
        assert_eq!(
            (v.meta.namespace.as_str(), v.meta.name.as_str()),
            ("default", "my-host")
        );
        assert_eq!(&*v.hostname, "my-host.example.com");
        assert_eq!(
            v.meta.annotations.get("external-dns.ambassador-service"),
            Some("emissary/emissary-ingress")
        );
    }

    #[test]
    fn a_v2_host_decodes_as_the_same_view() {
        let v = view_of(serde_json::json!({
            "apiVersion": "getambassador.io/v2", "kind": "Host",
            "metadata": {"name": "old", "namespace": "web"},
            "spec": {"hostname": "old.example.com", "ambassador_id": "default"}
        }));
        assert_eq!(&*v.hostname, "old.example.com");
    }

    #[test]
    fn a_host_without_spec_has_no_hostname() {
        let v = view_of(serde_json::json!({
            "apiVersion": "getambassador.io/v3alpha1", "kind": "Host",
            "metadata": {"name": "empty", "namespace": "web"}
        }));
        assert!(v.hostname.is_empty());
    }
}
