//! Apex records through the TXT registry, as every provider's tests check them against the rule
//! external-dns v0.23.0 follows (issue 50): with default flags, a record at a delegated child zone's apex
//! (`sub.example.org`) is owned through `a-sub.example.org` in the parent zone; one at a top zone's apex
//! (`example.org`, whose ownership name `a-example.org` no zone holds) is written without an ownership
//! record and is nobody's, said once with the flag that fixes it (a `--txt-prefix` ending in a dot); and
//! the sync does not fail. Each provider's test then checks where its backend put the records.

use std::sync::Arc;

use extdns_endpoint::{Change, Endpoint, RecordType};
use extdns_provider::Provider;
use extdns_registry::{Ownership, OwnershipConfig, Registry, RegistryError, Snapshot, TxtRegistry, TxtRegistryConfig};

/// The owner a TXT registry with default flags writes.
pub const OWNER: &str = "default";

/// A TXT registry with default flags over `provider`.
pub fn txt_registry(provider: Arc<dyn Provider>) -> TxtRegistry {
    let ownership = Ownership::new(OwnershipConfig::default()).unwrap_or_else(|e| panic!("{e}"));
    TxtRegistry::new(provider, TxtRegistryConfig::new(ownership))
}

/// One sync's write of `changes` through `registry`: a read, then the changes applied on it.
pub async fn sync(registry: &TxtRegistry, changes: &[Change]) -> Result<(), RegistryError> {
    let snapshot = registry.records().await?;
    registry.apply(&snapshot, changes).await.map(drop)
}

/// The owner a registry's read gives the record named `name` (the first of that name), if any.
pub fn owner(read: &Snapshot, name: &str) -> Option<String> {
    let record = read.records.iter().find(|r| r.dns_name == name);
    record.and_then(|r| r.owner().map(str::to_string))
}

/// What publishing the two apexes left, as the registry reads it back.
#[derive(Debug)]
pub struct Published {
    /// The owner of the top zone's apex record: `None`, as external-dns leaves it.
    pub top_owner: Option<String>,
    /// The owner of the child zone's apex record: [`OWNER`].
    pub child_owner: Option<String>,
    /// How many warning lines named `--txt-prefix` (one: said once).
    pub txt_prefix_warnings: usize,
}

impl Published {
    /// Asserts external-dns v0.23.0's outcome: the child's apex owned, the top apex nobody's, said once.
    pub fn assert_as_external_dns(&self) {
        assert_eq!(
            self.child_owner.as_deref(),
            Some(OWNER),
            "the child zone's apex owned through the parent zone"
        );
        assert_eq!(self.top_owner, None, "the top apex nobody's, as external-dns leaves it");
        assert_eq!(
            self.txt_prefix_warnings, 1,
            "the top apex's missing ownership said once, naming --txt-prefix"
        );
    }
}

/// Publishes an A record at `top` (a top zone's apex) and one at `child` (a delegated child zone's apex)
/// through a TXT registry with default flags over `provider` in one sync, and reads them back.
pub async fn publish(provider: Arc<dyn Provider>, top: &str, child: &str) -> Published {
    let logs = crate::logs::Logs::at(tracing::Level::WARN);
    let registry = txt_registry(provider);
    let created = [
        Change::Create(Endpoint::new(top, RecordType::A, ["192.0.2.1"])),
        Change::Create(Endpoint::new(child, RecordType::A, ["192.0.2.2"])),
    ];
    {
        let _capture = logs.capture();
        sync(&registry, &created)
            .await
            .unwrap_or_else(|e| panic!("both apexes are written and the sync does not fail: {e}"));
    }
    let read = registry.records().await.unwrap_or_else(|e| panic!("{e}"));
    Published {
        top_owner: owner(&read, top),
        child_owner: owner(&read, child),
        txt_prefix_warnings: logs.text().lines().filter(|l| l.contains("--txt-prefix")).count(),
    }
}
