//! The extdns controller: the reconcile loop, dry run, metrics and health.
//!
//! The controller decides *when* to sync (at startup, every `--interval`, and on cluster changes with
//! `--events`, after a short debounce) and *whether* it is safe to: nothing is planned until every
//! informer has synced and every source succeeded, and with `--dry-run` nothing reaches the registry or the
//! provider. Dry run lives here, above every provider, so no provider can forget it.

mod controller;
mod guard;
mod metrics;
mod schedule;
mod server;

pub use controller::{Controller, ControllerConfig, DesiredEndpoints, SyncError, SyncReport};
pub use guard::{DeletionGuard, Verdict, ZoneVerdict};
pub use metrics::{Metrics, PREFIX as METRICS_PREFIX};
pub use schedule::EVENT_DEBOUNCE;
pub use server::{MetricsServer, ServerError, start_metrics_server};
/// Re-exported so the binary can stop the loop without depending on tokio-util itself.
pub use tokio_util::sync::CancellationToken;

#[cfg(test)]
mod tests;
