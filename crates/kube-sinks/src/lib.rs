//! What a sync tells the Kubernetes API, apart from the records: the controller's Events
//! ([`events::KubeEvents`], `--events-emit`) and the status of DNSEndpoints ([`crd_status::CrdStatus`],
//! `--source=crd`).
//!
//! The controller decides what to say (its `EventSink` and `StatusSink` traits take plain values); these
//! sinks say it with a kube client the binary hands them. Each writes on the object the watcher stored,
//! named by its `ObjectKey` and the uid the store kept beside it, so an Event costs its write alone: no
//! read of the object first. A crate of its own so the binary stays flags → settings → wiring, and so the
//! one place that turns the controller's outcome into API writes is small enough to read at once.

pub mod crd_status;
pub mod events;

pub use crd_status::CrdStatus;
pub use events::{KubeEvents, MAX_EVENTS_PER_SYNC, REPORTING_CONTROLLER};
