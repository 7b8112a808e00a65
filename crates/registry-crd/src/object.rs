//! external-dns's DNSRecord objects (`externaldns.k8s.io/v1alpha1`), as JSON: what is read from them and
//! written into them. Kept as the API server's `DynamicObject`s, so fields another writer adds survive our
//! updates, and one object that does not decode is skipped alone.

use extdns_endpoint::Endpoint;
use kube::api::{ApiResource, DynamicObject};
use serde_json::{Value, json};

/// The label naming the owner id a DNSRecord belongs to.
pub const OWNER_LABEL: &str = "externaldns.k8s.io/owner";

/// The one condition the registry reads and writes: whether the record is live in the provider.
pub const READY: &str = "Ready";

/// The API resource of DNSRecords.
pub fn api_resource() -> ApiResource {
    ApiResource {
        group: "externaldns.k8s.io".into(),
        version: "v1alpha1".into(),
        api_version: "externaldns.k8s.io/v1alpha1".into(),
        kind: "DNSRecord".into(),
        plural: "dnsrecords".into(),
    }
}

/// Where a record stands, the reason of the `Ready` condition (external-dns's three).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Taken into the plan, not yet written to the provider (`Ready` False).
    Accepted,
    /// Written to the provider (`Ready` True): only these records count as current.
    Programmed,
    /// The provider refused it (`Ready` False).
    Failed,
}

impl Stage {
    /// The condition's `reason`.
    pub fn reason(self) -> &'static str {
        match self {
            Stage::Accepted => "Accepted",
            Stage::Programmed => "Programmed",
            Stage::Failed => "Failed",
        }
    }

    fn status(self) -> &'static str {
        match self {
            Stage::Programmed => "True",
            Stage::Accepted | Stage::Failed => "False",
        }
    }
}

/// A new DNSRecord `name` in `namespace` owned by `owner`, holding `endpoint`.
pub fn new_object(name: &str, namespace: &str, owner: &str, endpoint: &Endpoint) -> DynamicObject {
    let mut object = DynamicObject::new(name, &api_resource())
        .within(namespace)
        .data(json!({ "spec": { "endpoint": endpoint } }));
    object.metadata.labels = Some([(OWNER_LABEL.to_string(), owner.to_string())].into());
    object
}

/// The owner id the object's label names.
pub fn owner(object: &DynamicObject) -> Option<&str> {
    object.metadata.labels.as_ref()?.get(OWNER_LABEL).map(String::as_str)
}

/// Makes `owner` the owner the object's label names (an adoption, phase 2 of a hand-over).
pub fn set_owner(object: &mut DynamicObject, owner: &str) {
    object
        .metadata
        .labels
        .get_or_insert_default()
        .insert(OWNER_LABEL.to_string(), owner.to_string());
}

/// The `Ready` condition, if the object has one.
fn ready_condition(object: &DynamicObject) -> Option<&Value> {
    object.data["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == READY)
}

/// Whether the record is live in the provider (`Ready` True): only these are current records.
pub fn is_ready(object: &DynamicObject) -> bool {
    ready_condition(object).is_some_and(|c| c["status"] == "True")
}

/// The record the object holds (`spec.endpoint`).
pub fn endpoint(object: &DynamicObject) -> Result<Endpoint, serde_json::Error> {
    serde_json::from_value(object.data["spec"]["endpoint"].clone())
}

/// Makes the object hold `endpoint` (`spec.endpoint`), other fields of its spec kept.
pub fn set_endpoint(object: &mut DynamicObject, endpoint: &Endpoint) {
    let value = json!(endpoint);
    match object.data.get_mut("spec").and_then(Value::as_object_mut) {
        Some(spec) => {
            spec.insert("endpoint".into(), value);
        }
        None => {
            if let Some(data) = object.data.as_object_mut() {
                data.insert("spec".into(), json!({ "endpoint": value }));
            }
        }
    }
}

/// Sets the `Ready` condition to `stage` with `message`, other conditions kept. Its transition time (`now`,
/// RFC 3339) changes only when its status does, as Kubernetes conditions keep it.
pub fn set_ready(object: &mut DynamicObject, stage: Stage, message: &str, now: &str) {
    let since = ready_condition(object)
        .filter(|c| c["status"] == stage.status())
        .and_then(|c| c["lastTransitionTime"].as_str())
        .unwrap_or(now)
        .to_string();
    let condition = json!({
        "type": READY,
        "status": stage.status(),
        "reason": stage.reason(),
        "message": message,
        "lastTransitionTime": since,
    });
    let Some(data) = object.data.as_object_mut() else {
        return;
    };
    let status = data.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    let conditions = &mut status["conditions"];
    match conditions.as_array_mut() {
        Some(list) => match list.iter_mut().find(|c| c["type"] == READY) {
            Some(c) => *c = condition,
            None => list.push(condition),
        },
        None => *conditions = json!([condition]),
    }
}

#[cfg(test)]
mod tests {
    use extdns_endpoint::RecordType;

    use super::*;

    #[test]
    fn an_object_holds_its_record_and_owner() -> Result<(), serde_json::Error> {
        let mut e = Endpoint::new("web.example.org", RecordType::A, ["192.0.2.1"]).with_label("owner", "me");
        e.ref_objects
            .extend(extdns_endpoint::ObjectKey::from_resource_label("service/shop/web"));
        let o = new_object("web-example-org-43fd9d43", "dns", "me", &e);
        assert_eq!(owner(&o), Some("me"));
        // Read back, the record names its object by the `resource` label rendered when it was written.
        let mut as_written = e.clone();
        as_written.detach_objects();
        assert_eq!(endpoint(&o)?, as_written);
        assert!(!is_ready(&o));
        let json = serde_json::to_value(&o)?;
        assert_eq!(json["apiVersion"], "externaldns.k8s.io/v1alpha1");
        assert_eq!(json["kind"], "DNSRecord");
        assert_eq!(
            json["spec"]["endpoint"],
            json!({"dnsName": "web.example.org", "targets": ["192.0.2.1"], "recordType": "A",
                   "labels": {"owner": "me", "resource": "service/shop/web"}})
        );
        Ok(())
    }

    #[test]
    fn ready_keeps_its_transition_time_until_its_status_changes() {
        let e = Endpoint::new("web.example.org", RecordType::A, ["192.0.2.1"]);
        let mut o = new_object("n", "dns", "me", &e);
        o.data["status"] = json!({"conditions": [{"type": "Other", "status": "True"}]});
        set_ready(&mut o, Stage::Accepted, "pending", "2026-01-01T00:00:00Z");
        set_ready(&mut o, Stage::Failed, "refused", "2026-01-01T00:00:01Z");
        let ready = |o: &DynamicObject| ready_condition(o).cloned().unwrap_or_default();
        assert_eq!(ready(&o)["lastTransitionTime"], "2026-01-01T00:00:00Z");
        assert_eq!(ready(&o)["reason"], "Failed");
        assert!(!is_ready(&o));
        set_ready(&mut o, Stage::Programmed, "live", "2026-01-01T00:00:02Z");
        assert_eq!(ready(&o)["lastTransitionTime"], "2026-01-01T00:00:02Z");
        assert!(is_ready(&o));
        assert_eq!(o.data["status"]["conditions"].as_array().map(Vec::len), Some(2));
    }
}
