//! `--events-emit`: the controller's events, published as events.k8s.io/v1 Events with kube's recorder.
//!
//! The recorder turns a repeat of the same event (same object, reason and action) within its cache window
//! into a PATCH of the event's series count instead of a new object, so an object that fails every sync
//! costs one small write per sync, not a growing pile of events. A cap per sync bounds the rest: a sync
//! that touches thousands of objects (the first one of a large cluster) emits the first
//! [`MAX_EVENTS_PER_SYNC`] and logs how many it left out.

use async_trait::async_trait;
use extdns_controller::{EventKind, EventSink, RecordEvent};
use extdns_endpoint::ObjectRef;
use extdns_informer::view::RouteKind;
use extdns_informer::{KindOverrides, ResourceKind};
use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
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
    async fn reference(&self, object: &ObjectRef) -> Option<ObjectReference> {
        let resource = kind_of(&object.source, &self.overrides)?;
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
        Some(ObjectReference {
            api_version: Some(resource.api_version.clone()),
            kind: Some(resource.kind.clone()),
            namespace,
            name: Some(object.name.clone()),
            uid: meta.as_ref().and_then(|m| m.uid.clone()),
            resource_version: meta.and_then(|m| m.resource_version),
            field_path: None,
        })
    }
}

#[async_trait]
impl EventSink for KubeEvents {
    async fn emit(&self, events: Vec<RecordEvent>) {
        let total = events.len();
        for e in events.into_iter().take(MAX_EVENTS_PER_SYNC) {
            let Some(reference) = self.reference(&e.object).await else {
                debug!(object = %e.object, reason = e.reason.as_str(), "no event: extdns does not know the object's kind");
                continue;
            };
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

/// The API resource of the object a source names (the `source` of an endpoint's object, or the first part
/// of its `resource` label); `None` for what no source produces. The kinds extdns reads come from its kind
/// table, in the version it watches, or from where configuration moved them (`overrides`); records other
/// external-dns sources wrote name kinds it does not read yet.
pub fn kind_of(source: &str, overrides: &KindOverrides) -> Option<ApiResource> {
    let kind = RouteKind::from_source_name(source)
        .map(ResourceKind::Route)
        .or_else(|| ResourceKind::from_lowercase(source));
    if let Some(kind) = kind {
        return Some(overrides.api_resource(kind));
    }
    let (group, version, kind, plural) = match source {
        "ingress" => ("networking.k8s.io", "v1", "Ingress", "ingresses"),
        "crd" | "dnsendpoint" => ("externaldns.k8s.io", "v1alpha1", "DNSEndpoint", "dnsendpoints"),
        _ => return None,
    };
    Some(ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(group, version, kind),
        plural,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_source_of_records_names_a_kind() {
        let table = KindOverrides::new();
        // A DNSEndpoint of another group (--crd-source-apiversion): its events name that group.
        let mut nginx = KindOverrides::new();
        nginx.set_resource(
            ResourceKind::DnsEndpoint,
            "externaldns.nginx.org/v1",
            "DNSEndpoint",
            "dnsendpoints",
        );
        let cases = [
            ("service", &table, "v1", "Service", "services"),
            (
                "gateway-httproute",
                &table,
                "gateway.networking.k8s.io/v1",
                "HTTPRoute",
                "httproutes",
            ),
            // The `resource` label's spelling of a route.
            (
                "tcproute",
                &table,
                "gateway.networking.k8s.io/v1",
                "TCPRoute",
                "tcproutes",
            ),
            ("ingress", &table, "networking.k8s.io/v1", "Ingress", "ingresses"),
            (
                "crd",
                &table,
                "externaldns.k8s.io/v1alpha1",
                "DNSEndpoint",
                "dnsendpoints",
            ),
            ("crd", &nginx, "externaldns.nginx.org/v1", "DNSEndpoint", "dnsendpoints"),
        ];
        for (source, overrides, api_version, kind, plural) in cases {
            let r = kind_of(source, overrides).unwrap_or_else(|| panic!("{source}: no kind"));
            assert_eq!(
                (r.api_version.as_str(), r.kind.as_str(), r.plural.as_str()),
                (api_version, kind, plural)
            );
        }
        assert_eq!(kind_of("fake", &table), None);
    }
}
