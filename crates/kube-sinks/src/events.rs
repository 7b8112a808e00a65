//! `--events-emit`: the controller's events, published as events.k8s.io/v1 Events with kube's recorder.
//!
//! The recorder turns a repeat of the same event (same object, reason and action) within its cache window
//! into a PATCH of the event's series count instead of a new object, so an object that fails every sync
//! costs one small write per sync, not a growing pile of events. A cap per sync bounds the rest: a sync
//! that touches thousands of objects (the first one of a large cluster) emits the first
//! [`MAX_EVENTS_PER_SYNC`] and logs how many it left out.
//!
//! An event costs its write alone: the object's uid, which `kubectl describe` matches events by, comes with
//! the event ([`RecordEvent::uid`], from the watcher's store as the sync planned, before its write: an
//! object deleted and made again under its name while the write ran is another uid, and gets none of the
//! old one's events), so the object is never read back for it. An
//! event without one (the object is gone, or was read from a manifest without a canonical uid) is recorded
//! by kind, namespace and name only: `kubectl get events` lists it, `kubectl describe` of a recreated object
//! of that name does not.

use async_trait::async_trait;
use extdns_controller::{EventKind, EventSink, RecordEvent};
use extdns_informer::KindOverrides;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use tracing::{debug, warn};

/// At most this many events per sync; the rest are logged at debug level only.
pub const MAX_EVENTS_PER_SYNC: usize = 100;

/// The `reportingController` of our events: external-dns's, so tools that filter on it keep working.
pub const REPORTING_CONTROLLER: &str = "external-dns";

/// Publishes the controller's events through kube's recorder.
pub struct KubeEvents {
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
            recorder: Recorder::new(client, reporter),
            overrides,
        }
    }
}

impl KubeEvents {
    /// [`KubeEvents::new`] for this replica: its instance is the pod's name as the downward API gives it
    /// (`POD_NAME`), none when unset.
    pub fn for_this_pod(client: kube::Client, overrides: KindOverrides) -> Self {
        let instance = std::env::var("POD_NAME").ok().filter(|n| !n.is_empty());
        KubeEvents::new(client, instance, overrides)
    }
}

/// The reference to the event's object: its kind where configuration (`overrides`) put it, and the uid the
/// event carries, if any (see the module's documentation). Made from the event alone: no API call.
pub fn reference(overrides: &KindOverrides, event: &RecordEvent) -> ObjectReference {
    let object = &event.object;
    let resource = overrides.api_resource(object.kind);
    ObjectReference {
        api_version: Some(resource.api_version),
        kind: Some(resource.kind),
        namespace: (!object.namespace.is_empty()).then(|| object.namespace.clone()),
        name: Some(object.name.clone()),
        uid: event.uid.map(|u| u.to_string()),
        resource_version: None,
        field_path: None,
    }
}

#[async_trait]
impl EventSink for KubeEvents {
    async fn emit(&self, events: Vec<RecordEvent>) {
        let total = events.len();
        for e in events.into_iter().take(MAX_EVENTS_PER_SYNC) {
            let reference = reference(&self.overrides, &e);
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

#[cfg(test)]
mod tests {
    use extdns_controller::EventReason;
    use extdns_informer::{ObjectKey, ResourceKind, Uid};

    use super::*;

    fn event(object: ObjectKey, uid: Option<Uid>) -> RecordEvent {
        RecordEvent {
            object,
            uid,
            kind: EventKind::Normal,
            reason: EventReason::RecordReady,
            action: "CreateRecord",
            note: String::new(),
        }
    }

    #[test]
    fn the_reference_names_the_object_by_the_uid_the_event_carries() {
        let text = "3f2b7c1e-9a4d-4e0b-8c6f-0123456789ab";
        let web = ObjectKey::new(ResourceKind::Service, "shop", "web");
        let r = reference(&KindOverrides::default(), &event(web.clone(), Uid::parse(text)));
        assert_eq!(
            (
                r.api_version.as_deref(),
                r.kind.as_deref(),
                r.namespace.as_deref(),
                r.name.as_deref()
            ),
            (Some("v1"), Some("Service"), Some("shop"), Some("web"))
        );
        assert_eq!(r.uid.as_deref(), Some(text));
        // Gone, or from a manifest without a canonical uid: by name only.
        assert_eq!(reference(&KindOverrides::default(), &event(web, None)).uid, None);
        // A cluster-scoped object has no namespace.
        let node = ObjectKey::new(ResourceKind::Node, "", "n1");
        assert_eq!(reference(&KindOverrides::default(), &event(node, None)).namespace, None);
    }
}
