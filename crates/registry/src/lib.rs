//! Registries decide which DNS records extdns owns. The TXT registry (external-dns compatible) stores
//! ownership in TXT records next to each record; the noop registry owns everything and stores nothing.

pub mod crypto;
pub mod labels;
pub mod mapper;
mod noop;
mod txt;
#[cfg(test)]
mod txt_tests;

use async_trait::async_trait;
use extdns_endpoint::{Changes, DomainFilter, Endpoint};
use extdns_provider::ProviderError;

pub use crypto::AesKey;
pub use mapper::NameMapper;
pub use noop::NoopRegistry;
pub use txt::{FORCE_UPDATE, TxtRegistry, TxtRegistryConfig};

/// The layer between the plan and a provider.
#[async_trait]
pub trait Registry: Send + Sync {
    /// The provider's records with their ownership labels (`owner`, `resource`); the registry's own
    /// bookkeeping records are hidden.
    async fn records(&self) -> Result<Vec<Endpoint>, RegistryError>;

    /// Apply the plan's changes, adding or removing the registry's bookkeeping records alongside.
    async fn apply_changes(&self, changes: Changes) -> Result<(), RegistryError>;

    /// The provider's canonicalisation of desired endpoints.
    async fn adjust_endpoints(&self, endpoints: Vec<Endpoint>) -> Result<Vec<Endpoint>, RegistryError>;

    /// The provider's domain filter.
    fn domain_filter(&self) -> DomainFilter;

    /// The owner id the plan filters updates and deletes by; empty for the noop registry (no ownership).
    fn owner_id(&self) -> &str;
}

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error("invalid registry configuration: {0}")]
    Config(String),
}
