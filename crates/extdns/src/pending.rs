//! TEMPORARY: bridges until the service source takes `extdns_source::Resolver` (it still uses its own
//! `shim::Resolver`). The pipeline types are re-exported from `extdns_source` for code that imported them
//! from here. Delete this module when the service source switches.

use std::net::IpAddr;
use std::sync::Arc;

use async_trait::async_trait;

pub use extdns_source::wrappers::{Pipeline, PipelineConfig, PipelineOutput};
pub use extdns_source::{Resolver, SystemResolver};

/// An `extdns_source::Resolver` seen through the service source's temporary resolver trait.
pub struct ShimResolver(pub Arc<dyn Resolver>);

#[async_trait]
impl extdns_source_service::shim::Resolver for ShimResolver {
    async fn lookup_ip(&self, host: &str) -> Result<Vec<IpAddr>, extdns_source_service::shim::ResolveError> {
        self.0.lookup_ip(host).await.map_err(|e| {
            tracing::debug!(error = %e, "load balancer hostname not resolved");
            extdns_source_service::shim::ResolveError::NotFound(host.to_string())
        })
    }
}
