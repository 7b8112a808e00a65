//! What a sync tells the Kubernetes API, apart from the records: the controller's Events
//! ([`events::KubeEvents`], `--events-emit`), the status of DNSEndpoints ([`crd_status::CrdStatus`],
//! `--source=crd`), and each name's outcome on Services, Ingresses and routes
//! ([`object_status::StatusWriter`], `--status-updates`).
//!
//! The controller decides what to say (its `EventSink` and `StatusSink` traits take plain values); these
//! sinks say it with a kube client the binary hands them. Each writes on the object the watcher stored,
//! named by its `ObjectKey` and the uid the store kept beside it, so an Event costs its write alone: no
//! read of the object first. A crate of its own so the binary stays flags → settings → wiring, and so the
//! one place that turns the controller's outcome into API writes is small enough to read at once.
//!
//! An Event names its object by the key and the uid the watcher stored, with no API call:
//!
//! ```
//! use extdns_controller::{EventKind, EventReason, RecordEvent};
//! use extdns_informer::{KindOverrides, ObjectKey, ResourceKind, Uid};
//!
//! let event = RecordEvent {
//!     object: ObjectKey::new(ResourceKind::Service, "shop", "web"),
//!     uid: Uid::parse("3f2b7c1e-9a4d-4e0b-8c6f-0123456789ab"),
//!     kind: EventKind::Normal,
//!     reason: EventReason::RecordReady,
//!     action: "CreateRecord",
//!     note: "web.example.org A".to_string(),
//! };
//! let reference = extdns_kube_sinks::events::reference(&KindOverrides::default(), &event);
//! assert_eq!(reference.kind.as_deref(), Some("Service"));
//! assert_eq!(reference.uid.as_deref(), Some("3f2b7c1e-9a4d-4e0b-8c6f-0123456789ab"));
//! assert_eq!(reference.resource_version, None);
//! ```

pub mod crd_status;
pub mod events;
pub mod object_status;
#[cfg(test)]
mod testing;

pub use crd_status::CrdStatus;
pub use events::{KubeEvents, MAX_EVENTS_PER_SYNC, REPORTING_CONTROLLER};
pub use object_status::{KubeStatusApi, StatusWriter, TokenBucket};
