//! The Istio sources: `istio-gateway` (networking.istio.io Gateways) and `istio-virtualservice`
//! (VirtualServices bound to them), as external-dns v0.23 reads them. See docs/sources/istio.md.
//!
//! A Gateway publishes the hosts of its servers (a `namespace/` prefix dropped, the bare `*` skipped) and
//! its hostname annotation, or the FQDN template's names, pointing at its target annotation, else at the
//! load balancer of the Ingress its `external-dns.kubernetes.io/ingress` annotation names, else at
//! the addresses of the Services its `spec.selector` selects (their selectors hold each of its labels: the
//! ingress gateway's Service). A VirtualService publishes its hosts and hostname annotation pointing at its
//! target annotation, else at the targets of each Gateway of its `spec.gateways` it binds to for that name
//! (exported to the Gateway's namespace, admitted by one of the Gateway's server hosts); `mesh` is no
//! Gateway.
//!
//! Both read the cluster through the store's reverse indexes for incremental syncs: a Service's change
//! re-evaluates the Gateways selecting it by its labels before or after the change, an Ingress's the
//! Gateways naming it, and a Gateway's the VirtualServices naming it.
//!
//! ```
//! use std::path::Path;
//!
//! use extdns_informer::LoadOptions;
//! use extdns_informer::manifests::{Format, Loader};
//! use extdns_source::SourceExt;
//! use extdns_source_istio::{IstioGatewaySource, IstioSourceConfig, VirtualServiceSource};
//!
//! let yaml = "
//! apiVersion: v1
//! kind: Service
//! metadata: {name: istio-ingressgateway, namespace: istio-system}
//! spec: {type: LoadBalancer, selector: {istio: ingressgateway}}
//! status: {loadBalancer: {ingress: [{ip: 192.0.2.9}]}}
//! ---
//! apiVersion: networking.istio.io/v1
//! kind: Gateway
//! metadata: {name: public, namespace: istio-system}
//! spec:
//!   selector: {istio: ingressgateway}
//!   servers: [{port: {number: 80, name: http, protocol: HTTP}, hosts: ['*.example.org']}]
//! ---
//! apiVersion: networking.istio.io/v1
//! kind: VirtualService
//! metadata: {name: shop, namespace: shop}
//! spec: {hosts: [shop.example.org], gateways: [istio-system/public]}
//! ";
//! let mut loader = Loader::new(LoadOptions::default());
//! loader.add_str(yaml, Path::new("example.yaml"), Format::Yaml)?;
//! let store = loader.finish().store;
//!
//! let source = VirtualServiceSource::new(IstioSourceConfig::default());
//! let endpoints = futures::executor::block_on(source.evaluate_all(&store))?.endpoints;
//! assert_eq!(endpoints.len(), 1);
//! assert_eq!(endpoints[0].dns_name, "shop.example.org");
//! assert_eq!(endpoints[0].targets[0].as_str(), "192.0.2.9");
//!
//! // The Gateway's own host is a wildcard: its source publishes it as written.
//! let gateways = IstioGatewaySource::new(IstioSourceConfig::default());
//! let endpoints = futures::executor::block_on(gateways.evaluate_all(&store))?.endpoints;
//! assert_eq!(endpoints[0].dns_name, "*.example.org");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod affected;
mod gateway;
mod hosts;
mod targets;
mod virtualservice;

pub use gateway::IstioGatewaySource;
pub use virtualservice::VirtualServiceSource;

use extdns_endpoint::{Endpoint, merge_endpoints};
use extdns_source::{SourceConfig, TemplateError};

/// The `--source` name of the Gateway source.
pub const GATEWAY_SOURCE_NAME: &str = "istio-gateway";
/// The `--source` name of the VirtualService source.
pub const VIRTUAL_SERVICE_SOURCE_NAME: &str = "istio-virtualservice";

/// The configuration of both Istio sources: external-dns v0.23 has no flag of their own, only those every
/// source shares.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct IstioSourceConfig {
    /// `--namespace`, `--label-filter`, `--annotation-filter`, annotation prefixes, `--fqdn-template`,
    /// `--combine-fqdn-annotation`, `--ignore-hostname-annotation`.
    pub common: SourceConfig,
}

impl IstioSourceConfig {
    /// The configuration from what every source shares.
    pub fn new(common: SourceConfig) -> Self {
        IstioSourceConfig { common }
    }
}

/// Why one Istio object could not be evaluated; its records are then held as they are (external-dns
/// fails the whole source instead, so nothing of any object changes that sync).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum IstioError {
    /// The Gateway's Ingress annotation has more than one `/`.
    #[error("Gateway {gateway}: invalid Ingress annotation {value:?} (expected name or namespace/name)")]
    InvalidIngressReference {
        /// `namespace/name` of the Gateway.
        gateway: String,
        /// The annotation's value.
        value: String,
    },
    /// The Ingress the Gateway's annotation names does not exist (or is out of scope).
    #[error("Gateway {gateway}: the Ingress {ingress} its annotation names is not found")]
    IngressNotFound {
        /// `namespace/name` of the Gateway.
        gateway: String,
        /// `namespace/name` of the Ingress.
        ingress: String,
    },
    /// A `spec.gateways` entry of a VirtualService has more than one `/`.
    #[error("invalid gateway {value:?} in spec.gateways (expected name or namespace/name)")]
    InvalidGatewayReference {
        /// The entry.
        value: String,
    },
    /// The FQDN template failed on the object.
    #[error("FQDN template: {0}")]
    Template(#[source] TemplateError),
}

/// The merge across objects of one source: targets of one name joined, then, among equal records that
/// differ only in TTL, the one with a configured TTL first. Both treat each name on its own.
fn merge(endpoints: Vec<Endpoint>) -> Vec<Endpoint> {
    extdns_source::tie::configured_ttl_first(merge_endpoints(endpoints))
}

#[cfg(test)]
mod tests;
