//! Registries decide which DNS records extdns owns. The TXT registry (external-dns compatible) stores
//! ownership in TXT records next to each record, or (`--txt-ownership=metadata`, [`MetadataRegistry`]) on the
//! records themselves where the provider keeps metadata; the noop registry owns everything and stores nothing.
//!
//! ```
//! use std::sync::Arc;
//!
//! use extdns_endpoint::{Change, Endpoint, RecordType, label};
//! use extdns_provider::{InMemoryProvider, Provider};
//! use extdns_registry::{Ownership, OwnershipConfig, Registry, TxtRegistry, TxtRegistryConfig};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let provider = Arc::new(InMemoryProvider::new(vec!["example.org".to_string()]));
//! let mut owner = OwnershipConfig::default();
//! owner.owner_id = "my-cluster".to_string();
//! let ownership = Ownership::new(owner)?;
//! let registry = TxtRegistry::new(provider.clone(), TxtRegistryConfig::new(ownership));
//!
//! let web = Endpoint::new("web.example.org", RecordType::A, ["192.0.2.10"]);
//! let snapshot = registry.records().await?;
//! let _written = registry.apply(&snapshot, &[Change::Create(web)]).await?;
//!
//! // The record comes back owned; its ownership TXT record is written beside it but hidden here.
//! let snapshot = registry.records().await?;
//! assert_eq!(snapshot.records.len(), 1);
//! assert_eq!(snapshot.records[0].labels.get(label::OWNER).map(String::as_str), Some("my-cluster"));
//! assert_eq!(provider.records().await?.endpoints.len(), 2);
//! # Ok(())
//! # }
//! ```

pub mod claims;
pub mod crypto;
pub mod labels;
pub mod mapper;
pub mod metadata;
mod noop;
mod placement;
#[cfg(test)]
mod placement_tests;
mod records;
pub mod shared;
mod txt;
#[cfg(test)]
mod txt_tests;

use async_trait::async_trait;
use extdns_endpoint::{Change, DomainFilter, Endpoint};
use extdns_provider::{ChangeFailure, ProviderError, ReadState};

pub use crypto::{AesKey, CryptoError};
pub use mapper::NameMapper;
pub use metadata::MetadataRegistry;
pub use noop::NoopRegistry;
pub use placement::Once;
pub use records::RecordsByName;
pub use shared::{SharedConfig, SharedRegistry};
pub use txt::{FORCE_UPDATE, Ownership, OwnershipConfig, TxtRegistry, TxtRegistryConfig};

/// Where ownership is written (`--txt-ownership`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum OwnershipStore {
    /// In a TXT record beside each record, as external-dns writes it (the default).
    #[default]
    Txt,
    /// On the record itself, in the metadata its provider keeps (a Cloudflare comment, an Azure record
    /// set's metadata): one record per record in the zone. [`MetadataRegistry`].
    Metadata,
}

/// The layer between the plan and a provider.
///
/// A registry keeps no state between [`Registry::records`] and [`Registry::apply`]: what a read learnt and
/// the write needs travels in the [`Snapshot`], which `apply` consumes.
#[async_trait]
pub trait Registry: Send + Sync {
    /// The provider's records with their ownership labels (`owner`, `resource`); the registry's own
    /// bookkeeping records are hidden.
    async fn records(&self) -> Result<Snapshot, RegistryError>;

    /// Apply the plan's changes to what `snapshot` read, adding or removing the registry's bookkeeping
    /// records alongside (each with its record, all or nothing). Returns the bookkeeping records as they
    /// were sent, for [`fold_applied`](Registry::fold_applied).
    async fn apply(&self, snapshot: &Snapshot, changes: &[Change]) -> Result<Written, RegistryError>;

    /// Folds changes [`apply`](Registry::apply) wrote in full into `snapshot`, so that it reads as the
    /// provider now would, records, labels and bookkeeping alike (incremental reconcile plans against it
    /// instead of reading every zone again). The bookkeeping records are folded in as `written` holds them,
    /// never derived again: an encrypted ownership record sealed a second time would differ from the one in
    /// the zone, and a later update or delete would name a value that is not there. False when that cannot be
    /// known because the provider's read state does not outlive writes; the caller must then read again.
    fn fold_applied(&self, snapshot: &mut Snapshot, changes: &[Change], written: Written) -> bool;

    /// The provider's canonicalisation of desired endpoints.
    async fn adjust_endpoints(&self, endpoints: Vec<Endpoint>) -> Result<Vec<Endpoint>, RegistryError>;

    /// The provider's domain filter.
    fn domain_filter(&self) -> DomainFilter;

    /// Bookkeeping kept fresh every full sync whether or not the plan changes anything (the shared names'
    /// heartbeats and pruning, [`SharedRegistry`]), written before the plan is applied and folded into
    /// `snapshot`; never called in a dry run or without the lease. Returns whether it wrote. Nothing by
    /// default.
    async fn maintain(&self, _snapshot: &mut Snapshot) -> Result<bool, RegistryError> {
        Ok(false)
    }

    /// The changes [`apply`](Registry::apply) would not send and would report refused, as far as that is
    /// known without writing (an ownership record's name the provider refuses, a name another owner's
    /// ownership record claims): a dry run (`extdns explain`) reports them refused, as the sync would.
    /// What only the provider's answer tells stays unknown. None by default.
    fn withheld(&self, _snapshot: &Snapshot, _changes: &[Change]) -> Result<Vec<ChangeFailure>, RegistryError> {
        Ok(Vec::new())
    }
}

/// What [`Registry::records`] read: the records the plan works from, and what [`Registry::apply`] needs to
/// write against exactly that read.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// The provider's records with ownership labels, found by name; the registry's own records are hidden.
    pub records: RecordsByName,
    provider: ReadState,
    /// The ownership records present; `None` when the records were read without them (the noop registry,
    /// tests), so the absence of one proves nothing.
    ownership_records: Option<txt::OwnershipRecords>,
    /// What a registry outside this crate read beside the records (the DynamoDB registry's items), for its
    /// own `apply` and `fold_applied`; only the same type gets it back. One per layer: the shared layer's
    /// view lies beside the state of the registry under it (the metadata registry's), each found by its type.
    registry: Vec<RegistryState>,
}

/// A registry's own read state in a [`Snapshot`]; opaque to everyone else.
struct RegistryState(Box<dyn std::any::Any + Send + Sync>);

impl std::fmt::Debug for RegistryState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RegistryState(..)")
    }
}

impl Snapshot {
    /// A snapshot of records read without ownership records (the noop registry, tests).
    pub fn new(records: Vec<Endpoint>, provider: ReadState) -> Self {
        Snapshot {
            records: RecordsByName::new(records),
            provider,
            ownership_records: None,
            registry: Vec::new(),
        }
    }

    /// A snapshot of a registry that keeps its bookkeeping outside the provider (the DynamoDB registry):
    /// the records with their labels, the provider's read state, and what the registry read beside them.
    pub fn with_registry_state<T: std::any::Any + Send + Sync>(
        records: Vec<Endpoint>,
        provider: ReadState,
        state: T,
    ) -> Self {
        Snapshot {
            registry: vec![RegistryState(Box::new(state))],
            ..Snapshot::new(records, provider)
        }
    }

    /// The provider's read state, handed back to its `apply`.
    pub fn provider_state(&self) -> &ReadState {
        &self.provider
    }

    /// The registry's own read state, if it stored one of type `T`.
    pub fn registry_state<T: std::any::Any>(&self) -> Option<&T> {
        self.registry.iter().find_map(|s| s.0.downcast_ref())
    }

    /// The registry's own read state, to fold a write into.
    pub fn registry_state_mut<T: std::any::Any>(&mut self) -> Option<&mut T> {
        self.registry.iter_mut().find_map(|s| s.0.downcast_mut())
    }

    /// Adds a layer's read state beside the state of the registry under it, which keeps its own: the shared
    /// layer works over the TXT registry and over the metadata registry alike.
    fn add_registry_state<T: std::any::Any + Send + Sync>(&mut self, state: T) {
        self.registry.push(RegistryState(Box::new(state)));
    }
}

/// The bookkeeping records one [`Registry::apply`] sent, exactly as sent, for
/// [`Registry::fold_applied`]; empty for a registry that keeps none.
#[derive(Debug, Default)]
pub struct Written {
    /// One entry per change the registry wrote (in order), with the ownership change sent beside it.
    ownership: Vec<txt::Sent>,
    /// What a registry outside this crate wrote (the DynamoDB registry's items, the changes it skipped).
    registry: Option<RegistryState>,
    /// The changes the registry did not send, each with why (the provider refuses its ownership record's
    /// name): the controller reports them as refused, never as written.
    withheld: Vec<ChangeFailure>,
}

impl Written {
    /// The changes this write did not send, and why: a write is reported only where it was made.
    pub fn withheld(&self) -> &[ChangeFailure] {
        &self.withheld
    }

    /// A write that sent everything but `withheld`, and keeps no bookkeeping (a registry whose reads are its
    /// truth).
    pub fn withholding(withheld: Vec<ChangeFailure>) -> Self {
        Written {
            withheld,
            ..Written::default()
        }
    }

    /// What a registry that keeps its bookkeeping outside the provider wrote, for its `fold_applied`.
    pub fn with_registry_state<T: std::any::Any + Send + Sync>(state: T) -> Self {
        Written {
            ownership: Vec::new(),
            registry: Some(RegistryState(Box::new(state))),
            withheld: Vec::new(),
        }
    }

    /// The registry's own record of the write, if it stored one of type `T`.
    pub fn into_registry_state<T: std::any::Any>(self) -> Option<T> {
        self.registry.and_then(|s| s.0.downcast::<T>().ok()).map(|b| *b)
    }
}

/// Why a registry could not be built or could not do its work.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// The provider could not read or write.
    #[error(transparent)]
    Provider(#[from] ProviderError),
    /// The owner id is empty: every record would look unowned, or everybody's.
    #[error("the owner id must not be empty")]
    EmptyOwnerId,
    /// A TXT prefix and a TXT suffix were both given.
    #[error("a TXT prefix and a TXT suffix are mutually exclusive; set only one")]
    PrefixAndSuffix,
    /// The encryption key is unusable.
    #[error("invalid encryption key: {0}")]
    InvalidKey(#[source] CryptoError),
    /// Encryption is enabled without a key.
    #[error("encryption of ownership records needs a key (32 bytes, raw or standard base64)")]
    EncryptionWithoutKey,
    /// `--txt-adopt-from-owner` names our own owner id: there is nothing to take over.
    #[error(
        "--txt-adopt-from-owner={0} names this instance's own --txt-owner-id; name the owner releasing the records"
    )]
    AdoptFromSelf(String),
    /// The registry's own store of ownership outside the provider (the CRD registry's DNSRecord objects)
    /// could not be read or written; `what` names the call and the object, so the message stands alone.
    #[error("{what}: {source}")]
    Store {
        /// What was being done, naming the object.
        what: String,
        /// The store's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Ownership on the records themselves was asked of a provider whose records keep no metadata.
    #[error(
        "--txt-ownership=metadata: this provider keeps no metadata on its records (only Cloudflare, Azure and \
         Azure Private DNS do); use --txt-ownership=txt"
    )]
    NoRecordMetadata,
    /// A shared name's bookkeeping record could not be made (docs/shared-names.md).
    #[error("shared names: {0}")]
    Shared(#[source] shared::FormatError),
    /// An ownership record could not be encrypted.
    #[error("cannot encrypt the ownership record of {record}: {source}")]
    Encrypt {
        /// The record whose ownership failed.
        record: String,
        /// The cipher's reason.
        #[source]
        source: CryptoError,
    },
}

/// The endpoints as a registry without the shared-names layer hands them to its provider: the shared
/// mark taken off (only the TXT registry's `SharedRegistry` publishes shared names; elsewhere the name is
/// a plain record), since no provider stores the mark and a desired record carrying it would differ from
/// the current one at every sync; its health verdict applied as an owner alone at the name applies it
/// (unhealthy targets withdrawn unless all are, [`shared::health::withdraw_alone`]); then the provider's
/// own adjustments.
pub async fn plain_adjusted(
    provider: &dyn extdns_provider::Provider,
    mut endpoints: Vec<Endpoint>,
) -> Result<Vec<Endpoint>, RegistryError> {
    for e in &mut endpoints {
        shared::health::withdraw_alone(e);
        extdns_endpoint::shared::unmark(e);
    }
    Ok(provider.adjust_endpoints(endpoints).await?)
}

#[cfg(test)]
mod snapshot_tests {
    use super::*;

    /// The shared layer adds its view over the metadata registry's read state: each finds its own.
    #[test]
    fn a_layers_registry_state_leaves_the_one_under_it() {
        let mut snapshot = Snapshot::with_registry_state(Vec::new(), ReadState::default(), 7u32);
        snapshot.add_registry_state("the layer's view");
        assert_eq!(snapshot.registry_state::<u32>(), Some(&7));
        assert_eq!(snapshot.registry_state::<&str>(), Some(&"the layer's view"));
        if let Some(under) = snapshot.registry_state_mut::<u32>() {
            *under = 8;
        }
        assert_eq!(snapshot.registry_state::<u32>(), Some(&8));
        assert_eq!(snapshot.registry_state::<u64>(), None);
    }
}
