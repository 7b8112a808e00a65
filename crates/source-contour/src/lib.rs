//! The Contour source (`--source=contour-httpproxy`): DNS records for `projectcontour.io/v1` HTTPProxies.
//!
//! An HTTPProxy publishes its `spec.virtualhost.fqdn` and its hostname annotation (or the FQDN template's
//! names), pointed at the `target` annotation or else at its `status.loadBalancer.ingress` (IPs and
//! hostnames), which Contour copies from its Envoy Service. A proxy without a virtual host (one only
//! included by another) publishes only what its annotations or the template give. See
//! docs/sources/contour-httpproxy.md.
//!
//! ```
//! use std::path::Path;
//!
//! use extdns_informer::LoadOptions;
//! use extdns_informer::manifests::{Format, Loader};
//! use extdns_source::SourceExt;
//! use extdns_source_contour::HttpProxySource;
//!
//! let yaml = "
//! apiVersion: projectcontour.io/v1
//! kind: HTTPProxy
//! metadata: {name: shop, namespace: default}
//! spec: {virtualhost: {fqdn: shop.example.org}}
//! status: {loadBalancer: {ingress: [{ip: 192.0.2.8}]}}
//! ";
//! let mut loader = Loader::new(LoadOptions::default());
//! loader.add_str(yaml, Path::new("example.yaml"), Format::Yaml)?;
//! let store = loader.finish().store;
//!
//! let source = HttpProxySource::new(Default::default());
//! let endpoints = futures::executor::block_on(source.evaluate_all(&store))?.endpoints;
//! assert_eq!(endpoints.len(), 1);
//! assert_eq!(endpoints[0].dns_name, "shop.example.org");
//! assert_eq!(endpoints[0].targets[0].as_str(), "192.0.2.8");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use extdns_informer::view::HttpProxy;
use extdns_informer::{ClusterStore, ResourceKind};
use extdns_source::own_hosts::{OwnHosts, OwnKind, OwnKindSource, load_balancer_targets, object_endpoints};
use extdns_source::{Evaluation, Objects, SourceConfig};

/// The `--source` name.
pub const SOURCE_NAME: &str = "contour-httpproxy";

/// How the source reads HTTPProxies from the store.
const PROXIES: OwnKind<HttpProxy> = extdns_source::own_kind!(ResourceKind::HttpProxy);

/// The contour-httpproxy source. Its configuration is only what every source shares: external-dns has no
/// flag of its own for it.
#[derive(Clone, Debug, Default)]
pub struct HttpProxySource {
    common: SourceConfig,
}

impl HttpProxySource {
    /// The source over HTTPProxies in `common`'s scope (`--namespace`, the filters, the annotation
    /// prefixes, `--fqdn-template`, `--combine-fqdn-annotation`, `--ignore-hostname-annotation`).
    pub fn new(common: SourceConfig) -> Self {
        HttpProxySource { common }
    }

    /// Its configuration.
    pub fn config(&self) -> &SourceConfig {
        &self.common
    }
}

impl OwnKindSource for HttpProxySource {
    type View = HttpProxy;
    const NAME: &'static str = SOURCE_NAME;
    const KIND: OwnKind<HttpProxy> = PROXIES;

    fn evaluate_now(&self, cluster: &ClusterStore, objects: Objects<'_>) -> Evaluation {
        PROXIES.evaluate(cluster, objects, &self.common, |proxy, object| {
            let own = OwnHosts {
                hosts: proxy.fqdn.as_deref().into_iter().collect(),
                status_targets: load_balancer_targets(&proxy.load_balancer_ingress),
            };
            object_endpoints(&self.common, SOURCE_NAME, proxy, object, own)
        })
    }
}

#[cfg(test)]
mod tests;
