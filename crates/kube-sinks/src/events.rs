//! `--events-emit`: the controller's events, published as events.k8s.io/v1 Events with kube's recorder.
//!
//! The recorder turns a repeat of the same event (same object, reason and action) within its cache window
//! into a PATCH of the event's series count instead of a new object, so an object that fails every sync
//! costs one small write per sync, not a growing pile of events. A cap per sync bounds the rest: a sync
//! that touches thousands of objects (the first one of a large cluster) emits the first
//! [`MAX_EVENTS_PER_SYNC`] and logs how many it left out.

use async_trait::async_trait;
use extdns_controller::{EventKind, EventSink, RecordEvent};
use extdns_informer::{KindOverrides, ObjectKey};
use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{Api, DynamicObject};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use tracing::{debug, warn};

/// At most this many events per sync; the rest are logged at debug level only.
pub const MAX_EVENTS_PER_SYNC: usize = 100;

/// The `reportingController` of our events: external-dns's, so tools that filter on it keep working.
pub const REPORTING_CONTROLLER: &str = "external-dns";

/// Publishes the controller's events through kube's recorder.
pub struct KubeEvents {
    client: kube::Client,
    recorder: Recorder,
    /// Where configuration moved a kind (a DNSEndpoint of another group), so its events name it there.
    overrides: KindOverrides,
}

impl KubeEvents {
    /// `instance` is this replica's name (the pod's), so events of two replicas are told apart.
    pub fn new(client: kube::Client, instance: Option<String>, overrides: KindOverrides) -> Self {
        let reporter = Reporter {
            controller: REPORTING_CONTROLLER.to_string(),
            instance,
        };
        KubeEvents {
            recorder: Recorder::new(client.clone(), reporter),
            client,
            overrides,
        }
    }

    /// The reference to the object, with its uid when it still exists: `kubectl describe` matches events
    /// by uid, and an object that is gone (its records were deleted) gets its event without one.
    async fn reference(&self, object: &ObjectKey) -> ObjectReference {
        let resource = self.overrides.api_resource(object.kind);
        let namespace = (!object.namespace.is_empty()).then(|| object.namespace.clone());
        let api: Api<DynamicObject> = match &namespace {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, &resource),
            None => Api::all_with(self.client.clone(), &resource),
        };
        let meta = match api.get_opt(&object.name).await {
            Ok(found) => found.map(|o| o.metadata),
            Err(e) => {
                debug!(object = %object, error = %e, "cannot read the object for its event's uid");
                None
            }
        };
        ObjectReference {
            api_version: Some(resource.api_version.clone()),
            kind: Some(resource.kind.clone()),
            namespace,
            name: Some(object.name.clone()),
            uid: meta.as_ref().and_then(|m| m.uid.clone()),
            resource_version: meta.and_then(|m| m.resource_version),
            field_path: None,
        }
    }
}

#[async_trait]
impl EventSink for KubeEvents {
    async fn emit(&self, events: Vec<RecordEvent>) {
        let total = events.len();
        for e in events.into_iter().take(MAX_EVENTS_PER_SYNC) {
            let reference = self.reference(&e.object).await;
            let event = Event {
                type_: match e.kind {
                    EventKind::Normal => EventType::Normal,
                    EventKind::Warning => EventType::Warning,
                },
                reason: e.reason.as_str().to_string(),
                note: Some(e.note),
                action: e.action.to_string(),
                secondary: None,
            };
            if let Err(err) = self.recorder.publish(&event, &reference).await {
                warn!(object = %e.object, reason = e.reason.as_str(), error = %err, "cannot publish the event");
            }
        }
        if total > MAX_EVENTS_PER_SYNC {
            debug!(
                emitted = MAX_EVENTS_PER_SYNC,
                left_out = total - MAX_EVENTS_PER_SYNC,
                "too many events for one sync; the rest were left out"
            );
        }
    }
}
