//! The noop registry (`--registry=noop`): no ownership records. Every record counts as manageable, so the
//! plan does no ownership checks (owner id `""`); use it only on zones extdns alone manages.

use std::sync::Arc;

use async_trait::async_trait;
use extdns_endpoint::{Changes, DomainFilter, Endpoint};
use extdns_provider::Provider;

use crate::{Registry, RegistryError};

/// Passes records and changes straight through to the provider.
pub struct NoopRegistry {
    provider: Arc<dyn Provider>,
}

impl std::fmt::Debug for NoopRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NoopRegistry").finish_non_exhaustive()
    }
}

impl NoopRegistry {
    pub fn new(provider: Arc<dyn Provider>) -> Self {
        NoopRegistry { provider }
    }
}

#[async_trait]
impl Registry for NoopRegistry {
    async fn records(&self) -> Result<Vec<Endpoint>, RegistryError> {
        Ok(self.provider.records().await?)
    }

    async fn apply_changes(&self, changes: Changes) -> Result<(), RegistryError> {
        Ok(self.provider.apply_changes(&changes).await?)
    }

    async fn adjust_endpoints(&self, endpoints: Vec<Endpoint>) -> Result<Vec<Endpoint>, RegistryError> {
        Ok(self.provider.adjust_endpoints(endpoints).await?)
    }

    fn domain_filter(&self) -> DomainFilter {
        self.provider.domain_filter()
    }

    fn owner_id(&self) -> &str {
        ""
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use extdns_endpoint::RecordType;
    use extdns_provider::InMemoryProvider;

    #[tokio::test]
    async fn noop_registry_passes_records_and_changes_through() -> Result<(), RegistryError> {
        let provider = Arc::new(InMemoryProvider::new(vec!["example.com".into()]));
        let registry = NoopRegistry::new(provider.clone());
        let e = Endpoint::new("x.example.com", RecordType::A, ["1.2.3.4"]);
        registry
            .apply_changes(Changes {
                create: vec![e.clone()],
                ..Changes::default()
            })
            .await?;
        // No ownership TXT record is written and none is expected.
        assert_eq!(provider.snapshot(), vec![e.clone()]);
        assert_eq!(registry.records().await?, vec![e]);
        assert_eq!(registry.owner_id(), "");
        assert!(
            registry.domain_filter().matches("a.example.com") && !registry.domain_filter().matches("a.example.org")
        );
        Ok(())
    }
}
