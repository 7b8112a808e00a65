//! The extdns controller: the reconcile loop, dry run, metrics and health.
//!
//! The controller decides *when* to sync (at startup, every `--interval`, and on cluster changes with
//! `--events`: a change is written as soon as it is evaluated, paced by what the provider takes) and
//! *whether* it is safe to: nothing is planned until every
//! informer has synced and every source succeeded, and with `--dry-run` nothing reaches the registry or the
//! provider. Dry run lives here, above every provider, so no provider can forget it.
//!
//! One sync over the in-memory provider, with a stand-in for the sources:
//!
//! ```
//! use std::sync::Arc;
//!
//! use async_trait::async_trait;
//! use extdns_controller::{Controller, ControllerConfig, DesiredEndpoints, Metrics};
//! use extdns_endpoint::{Endpoint, RecordType};
//! use extdns_informer::{ClusterStore, LiveCluster};
//! use extdns_provider::InMemoryProvider;
//! use extdns_registry::{Ownership, OwnershipConfig, TxtRegistry, TxtRegistryConfig};
//! use extdns_source::{DesiredIndex, PipelineOutput, SourceError};
//!
//! /// Always asks for one record.
//! struct OneRecord;
//!
//! #[async_trait]
//! impl DesiredEndpoints for OneRecord {
//!     async fn desired(
//!         &self,
//!         _cluster: &ClusterStore,
//!         _index: Option<&mut DesiredIndex>,
//!     ) -> Result<PipelineOutput, SourceError> {
//!         let web = Endpoint::new("web.example.org", RecordType::A, ["192.0.2.10"]);
//!         Ok(PipelineOutput { endpoints: vec![web], ..PipelineOutput::default() })
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut owner = OwnershipConfig::default();
//! owner.owner_id = "my-cluster".to_string();
//! let ownership = Ownership::new(owner)?;
//! let mut config = ControllerConfig::default();
//! config.plan.owner_id = ownership.owner_id().to_string();
//! let provider = Arc::new(InMemoryProvider::new(vec!["example.org".to_string()]));
//! let registry = Arc::new(TxtRegistry::new(provider, TxtRegistryConfig::new(ownership)));
//! // Objects that never change (as from manifest files): synced from the start.
//! let cluster = Arc::new(LiveCluster::from_store(ClusterStore::new()));
//! let metrics = Arc::new(Metrics::new("0.1.0", "doc"));
//! let controller = Controller::new(cluster, Arc::new(OneRecord), registry, config, metrics);
//!
//! let first = controller.run_once().await?;
//! assert_eq!(first.changes.len(), 1);
//! assert!(first.applied);
//! // The record is there and owned: the next sync has nothing to do.
//! let second = controller.run_once().await?;
//! assert!(second.changes.is_empty());
//! # Ok(())
//! # }
//! ```

mod controller;
mod events;
mod exposition;
#[cfg(test)]
mod exposition_check;
mod guard;
mod health;
mod hold;
mod metrics;
mod name_status;
mod process;
mod requests;
mod schedule;
mod server;
mod signal;
mod status;
mod summary;

pub use controller::{Controller, ControllerConfig, DesiredEndpoints, SyncError, SyncReport, SyncState};
pub use events::{EventKind, EventReason, EventSink, EventsConfig, NOTE_MAX, RecordEvent, truncate as truncate_note};
pub use exposition::Format as MetricsFormat;
pub use guard::{DeletionGuard, Verdict, ZoneVerdict};
pub use health::{HealthCheck, HealthCheckError, HealthTable, Probe, ProbeFailure};
pub use metrics::{Metrics, PREFIX as METRICS_PREFIX, WebhookCall};
pub use name_status::{NameBook, NameList, NameOutcome, NameRef, NameState, NameStatuses, ObjectNames, Party, Reason};
pub use name_status::{PROVIDER_ZONES, outside_zones, zone_of};
pub use requests::RequestDurations;
pub use schedule::EVENT_DEBOUNCE;
pub use server::{MetricsServer, ServerError, start_metrics_server};
pub use signal::spawn_signal_handler;
pub use status::{ProviderSync, StatusSink, SyncObserver, SyncStatus};
pub use summary::{BadContinue, Summary, SummaryQuery};
/// Re-exported so the binary can stop the loop without depending on tokio-util itself.
pub use tokio_util::sync::CancellationToken;

#[cfg(test)]
mod tests;
