//! Registries wrapped to fail in one chosen way, for the tests of what reads a registry (the controller's
//! dry run, `extdns explain` and `plan`).

use std::sync::Arc;

use async_trait::async_trait;
use extdns_endpoint::{Change, DomainFilter, Endpoint};
use extdns_provider::ChangeFailure;
use extdns_registry::{Registry, RegistryError, Snapshot, Written};

/// The registry it wraps, except that it cannot work out what it would withhold (as the TXT registry
/// cannot when its encryption fails): a dry run must say so rather than guess.
pub struct WithheldFails(pub Arc<dyn Registry>);

#[async_trait]
impl Registry for WithheldFails {
    async fn records(&self) -> Result<Snapshot, RegistryError> {
        self.0.records().await
    }

    async fn apply(&self, snapshot: &Snapshot, changes: &[Change]) -> Result<Written, RegistryError> {
        self.0.apply(snapshot, changes).await
    }

    fn fold_applied(&self, snapshot: &mut Snapshot, changes: &[Change], written: Written) -> bool {
        self.0.fold_applied(snapshot, changes, written)
    }

    async fn adjust_endpoints(&self, endpoints: Vec<Endpoint>) -> Result<Vec<Endpoint>, RegistryError> {
        self.0.adjust_endpoints(endpoints).await
    }

    fn domain_filter(&self) -> DomainFilter {
        self.0.domain_filter()
    }

    fn withheld(&self, _: &Snapshot, _: &[Change]) -> Result<Vec<ChangeFailure>, RegistryError> {
        Err(RegistryError::EncryptionWithoutKey)
    }
}
