//! The noop registry (`--registry=noop`): no ownership records. Every record counts as manageable, so the
//! plan does no ownership checks (owner id `""`); use it only on zones extdns alone manages.

use std::sync::Arc;

use async_trait::async_trait;
use extdns_endpoint::{Change, DomainFilter, Endpoint};
use extdns_provider::{Provider, Unit};

use crate::{Registry, RegistryError, Snapshot, Written};

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
    /// A registry that passes every record through to `provider` as owned.
    pub fn new(provider: Arc<dyn Provider>) -> Self {
        NoopRegistry { provider }
    }
}

#[async_trait]
impl Registry for NoopRegistry {
    async fn records(&self) -> Result<Snapshot, RegistryError> {
        let read = self.provider.records().await?;
        Ok(Snapshot::new(read.endpoints, read.state))
    }

    async fn apply(&self, snapshot: &Snapshot, changes: &[Change]) -> Result<Written, RegistryError> {
        let units: Vec<Unit<'_>> = changes.iter().map(Unit::new).collect();
        self.provider.apply(&snapshot.provider, &units).await?;
        Ok(Written::default())
    }

    fn fold_applied(&self, snapshot: &mut Snapshot, changes: &[Change], _: Written) -> bool {
        snapshot.records.fold(changes.iter(), |_, _| None);
        self.provider.read_state_outlives_writes()
    }

    async fn adjust_endpoints(&self, endpoints: Vec<Endpoint>) -> Result<Vec<Endpoint>, RegistryError> {
        crate::plain_adjusted(self.provider.as_ref(), endpoints).await
    }

    fn domain_filter(&self) -> DomainFilter {
        self.provider.domain_filter()
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
        let read = registry.records().await?;
        registry.apply(&read, &[Change::Create(e.clone())]).await?;
        // No ownership TXT record is written and none is expected.
        assert_eq!(provider.snapshot(), vec![e.clone()]);
        assert_eq!(registry.records().await?.records.into_vec(), vec![e]);
        assert!(
            registry.domain_filter().matches("a.example.com") && !registry.domain_filter().matches("a.example.org")
        );
        Ok(())
    }

    #[tokio::test]
    async fn a_registry_without_shared_names_publishes_a_shared_name_as_a_plain_record() -> Result<(), RegistryError> {
        let registry = NoopRegistry::new(Arc::new(InMemoryProvider::new(vec!["example.com".into()])));
        let mut e = Endpoint::new("x.example.com", RecordType::A, ["1.2.3.4"]);
        extdns_endpoint::shared::mark(&mut e);
        let adjusted = registry.adjust_endpoints(vec![e]).await?;
        // No provider stores the mark: left on, the plan would see a difference at every sync.
        assert!(!extdns_endpoint::shared::is_shared(&adjusted[0]), "{adjusted:?}");
        assert_eq!(
            adjusted[0].targets,
            Endpoint::new("x.example.com", RecordType::A, ["1.2.3.4"]).targets
        );
        Ok(())
    }
}
