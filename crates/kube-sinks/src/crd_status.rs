//! `--source=crd`: each sync's outcome written back onto the DNSEndpoints, as external-dns writes it.
//!
//! - `status.observedGeneration`: set to `metadata.generation` whenever they differ, with an update of the
//!   status subresource (external-dns v0.22's rule and verb, so the same RBAC serves both).
//! - `status.conditions` `Accepted` (reasons `Accepted`, `Invalid`) and `Ready` (`Programmed`, `Failed`,
//!   `Filtered`, `Invalid`), the names of external-dns's open PR #6609, so tools built for it read ours.
//!   v0.22's CRD has no `conditions` in its status schema and the API server prunes them; to never
//!   rewrite a status that cannot hold them at every sync, conditions alone trigger a write only when the
//!   object already carries some (a CRD that keeps them); otherwise they ride along with the
//!   observedGeneration update.
//!
//! Writes happen only when something changed. The status is read first (the view keeps no
//! resourceVersion) and replaced with the read's resourceVersion, so a concurrent edit wins and the next
//! sync retries. The outcome is the sync's, computed before its write, which may take long: an object the
//! outcome names whose uid is no longer the one it had then (deleted and made again since,
//! [`SyncStatus::uids`]), or whose uid as read is not the view's, is left to the next sync, which computes
//! its own.

use std::sync::Arc;

use async_trait::async_trait;
use extdns_controller::{NameBook, NameState, ObjectNames, StatusSink, SyncStatus};
use extdns_informer::view::{DnsEndpoint, DnsEndpointCondition};
use extdns_informer::{ClusterStore, KindOverrides, ObjectKey, ResourceKind, Uid};
use extdns_plan::PlanConfig;
use extdns_source_crd::{CrdSourceConfig, InvalidEntry, object_endpoints};
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use serde_json::{Value, json};
use tracing::{debug, warn};

/// Writes DNSEndpoint status with the binary's client.
pub struct CrdStatus {
    client: kube::Client,
    /// The configured resource; the one the live view watches (its plural found by discovery) wins.
    resource: ApiResource,
    config: CrdSourceConfig,
    plan: PlanConfig,
    /// Each name's outcome ([`NameBook`]), for what PR #6609 has no reason for: a name another object or
    /// owner holds (`Ready` `Conflict`), and the provider's own words for a refusal.
    names: Option<NameBook>,
}

impl CrdStatus {
    /// A status writer for the DNSEndpoint kind as configured (`overrides`), in the source's scope (`config`).
    /// `plan` says which entries the plan leaves alone (`--domain-filter`, `--exclude-domains`,
    /// `--managed-record-types`, ...): those make `Ready` `Filtered`.
    pub fn new(client: kube::Client, overrides: &KindOverrides, config: CrdSourceConfig, plan: PlanConfig) -> Self {
        CrdStatus {
            client,
            resource: overrides.api_resource(ResourceKind::DnsEndpoint),
            config,
            plan,
            names: None,
        }
    }

    /// Reads each object's names' outcomes from `book` (the controller folds them in before it reports).
    pub fn with_names(mut self, book: NameBook) -> Self {
        self.names = Some(book);
        self
    }

    /// Writes `conditions` on `o`, unless the object read is not the one of uid `uid` (the view's).
    async fn write(
        &self,
        resource: &ApiResource,
        o: &DnsEndpoint,
        uid: Option<Uid>,
        conditions: &[DnsEndpointCondition],
    ) -> Result<(), kube::Error> {
        let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), &o.meta.namespace, resource);
        let mut current = api.get(&o.meta.name).await?;
        // The view's uid names the object the conditions were computed for; one recreated since under the
        // same name gets its status at the next sync, from its own view.
        let read = current.metadata.uid.as_deref().and_then(Uid::parse);
        if uid.is_some() && read != uid {
            debug!(namespace = %o.meta.namespace, name = %o.meta.name, "DNSEndpoint recreated since the view; status left to the next sync");
            return Ok(());
        }
        let generation = current.metadata.generation;
        let now = k8s_openapi::jiff::Timestamp::now().to_string();
        let old: Vec<Value> = current.data["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let conditions: Vec<Value> = conditions
            .iter()
            .map(|c| {
                // A condition keeps its transition time unless its status changes.
                let since = old
                    .iter()
                    .find(|x| x["type"] == c.type_.as_str() && x["status"] == c.status.as_str())
                    .and_then(|x| x["lastTransitionTime"].as_str().map(String::from))
                    .unwrap_or_else(|| now.clone());
                json!({"type": c.type_, "status": c.status, "reason": c.reason, "message": c.message,
                       "observedGeneration": generation, "lastTransitionTime": since})
            })
            .collect();
        let status = current
            .data
            .as_object_mut()
            .map(|d| d.entry("status").or_insert_with(|| json!({})));
        if let Some(Value::Object(status)) = status {
            status.insert("observedGeneration".into(), json!(generation));
            status.insert("conditions".into(), Value::Array(conditions));
        }
        api.replace_status(&o.meta.name, &PostParams::default(), &current)
            .await?;
        Ok(())
    }
}

/// The conditions an object's outcome calls for: `Accepted`, then `Ready`. `Ready` is, in this order,
/// `Invalid` when nothing of the object can be published, `Failed` when the provider refused a change of
/// its records, `Filtered` when a valid entry is one the plan leaves alone (outside the domain filter, or
/// of a type not managed), else `Programmed`.
pub fn conditions(o: &DnsEndpoint, status: &SyncStatus, plan: &PlanConfig) -> Vec<DnsEndpointCondition> {
    conditions_with(o, status, plan, None)
}

/// [`conditions`], told by the object's names' outcomes (`names`) what PR #6609 has no reason for:
/// `Ready` is `Conflict` (after `Invalid` and `Failed`) when another object or owner holds one of its
/// names, naming them; `Failed` while the provider's refusal of one of its names stands (not only in the
/// sync that was refused), with the provider's error.
pub fn conditions_with(
    o: &DnsEndpoint,
    status: &SyncStatus,
    plan: &PlanConfig,
    names: Option<&ObjectNames>,
) -> Vec<DnsEndpointCondition> {
    let (endpoints, invalid) = object_endpoints(o);
    let key = ObjectKey::new(ResourceKind::DnsEndpoint, &o.meta.namespace, &o.meta.name);
    let cond = |type_: &str, ok: bool, reason: &str, message: String| DnsEndpointCondition {
        type_: type_.into(),
        status: if ok { "True" } else { "False" }.into(),
        reason: reason.into(),
        message,
    };
    let accepted = if invalid.is_empty() && !status.failed.contains(&key) {
        cond("Accepted", true, "Accepted", "every entry is valid".into())
    } else {
        cond("Accepted", false, "Invalid", describe(&invalid))
    };
    let filtered: Vec<String> = endpoints
        .iter()
        .filter_map(|e| {
            let why = if !plan.domain_filter.matches(&e.dns_name) {
                "outside the domain filter"
            } else if !plan.is_managed(&e.record_type) {
                "a record type not managed (--managed-record-types, --exclude-record-types)"
            } else {
                return None;
            };
            Some(format!("{} {}: {why}", e.dns_name, e.record_type))
        })
        .collect();
    // An object with skipped entries fails in part (their records are held); it is ready when the rest is.
    let failed_whole = status.failed.contains(&key) && invalid.is_empty();
    // The book keeps an outcome until a sync plans its name again; this sync's own refusals may be of
    // other objects.
    let conflicts = said(names, |s| matches!(s, NameState::Conflict { .. }));
    let refused = said(names, |s| matches!(s, NameState::Refused { .. }));
    let ready = if failed_whole || (endpoints.is_empty() && !invalid.is_empty()) {
        cond("Ready", false, "Invalid", "no entry can be published".into())
    } else if status.errored.contains(&key) || !refused.is_empty() {
        let message = if refused.is_empty() {
            "the provider refused a change of its records".to_string()
        } else {
            refused
        };
        cond("Ready", false, "Failed", message)
    } else if !conflicts.is_empty() {
        cond("Ready", false, "Conflict", format!("not published: {conflicts}"))
    } else if endpoints.is_empty() {
        cond("Ready", false, "Filtered", "no records to publish".into())
    } else if !filtered.is_empty() {
        cond(
            "Ready",
            false,
            "Filtered",
            format!("not published: {}", filtered.join("; ")),
        )
    } else {
        cond("Ready", true, "Programmed", "its records are published".into())
    };
    vec![accepted, ready]
}

/// The names of `names` whose state `pick` takes, each with what it says, `; `-separated.
fn said(names: Option<&ObjectNames>, pick: impl Fn(&NameState) -> bool) -> String {
    let parts: Vec<String> = names
        .into_iter()
        .flat_map(|n| &n.names)
        .filter(|n| pick(n.state))
        .map(|n| format!("{} {}: {}", n.name, n.record_type, n.state))
        .collect();
    extdns_controller::truncate_note(parts.join("; "))
}

fn describe(invalid: &[InvalidEntry]) -> String {
    if invalid.is_empty() {
        return "the object could not be read".into();
    }
    extdns_source_crd::describe(invalid)
}

/// Whether `status` may be written on the object `key`, whose uid the view holds as `stored`: not when the
/// outcome names the object and it had another uid when the sync computed it (deleted and made again
/// since: that outcome is the old object's).
pub fn outcome_is_for(status: &SyncStatus, key: &ObjectKey, stored: Option<Uid>) -> bool {
    let named = status.failed.contains(key) || status.errored.contains(key);
    match status.uids.get(key) {
        Some(then) if named => stored == Some(*then),
        _ => true,
    }
}

/// Whether `o`'s status needs writing to show `wanted`.
pub fn needs_write(o: &DnsEndpoint, wanted: &[DnsEndpointCondition]) -> bool {
    if o.observed_generation != o.generation {
        return true;
    }
    o.conditions.as_ref().is_some_and(|current| {
        wanted.iter().any(|w| {
            !current
                .iter()
                .any(|c| c.type_ == w.type_ && c.status == w.status && c.reason == w.reason && c.message == w.message)
        })
    })
}

#[async_trait]
impl StatusSink for CrdStatus {
    async fn report(&self, cluster: Arc<ClusterStore>, status: SyncStatus) {
        let resource = cluster
            .watched_at(ResourceKind::DnsEndpoint)
            .unwrap_or_else(|| self.resource.clone());
        let book = self.names.as_ref().map(NameBook::latest);
        for o in cluster.dns_endpoints() {
            if !self.config.admits(&o) {
                continue;
            }
            let key = ObjectKey::new(ResourceKind::DnsEndpoint, &o.meta.namespace, &o.meta.name);
            let uid = cluster.uid(&key);
            if !outcome_is_for(&status, &key, uid) {
                debug!(namespace = %o.meta.namespace, name = %o.meta.name, "DNSEndpoint made again since the sync; status left to the next sync");
                continue;
            }
            let names = book.as_ref().and_then(|b| b.get(&key));
            let wanted = conditions_with(&o, &status, &self.plan, names);
            if !needs_write(&o, &wanted) {
                continue;
            }
            match self.write(&resource, &o, uid, &wanted).await {
                Ok(()) => debug!(namespace = %o.meta.namespace, name = %o.meta.name, "DNSEndpoint status written"),
                Err(e) => warn!(
                    "could not update the status of DNSEndpoint {}/{}: {e}",
                    o.meta.namespace, o.meta.name
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use extdns_informer::view::{EntriesBuilder, Meta, RareFields};

    use super::*;

    /// An entry: its name, its one target and its type.
    type Entry<'a> = (&'a str, &'a str, &'a str);

    fn object(entries: Vec<Entry<'_>>, generation: i64, observed: Option<i64>) -> DnsEndpoint {
        let mut list = EntriesBuilder::default();
        for (name, target, record_type) in entries {
            list.push(name, [target], record_type.into(), 0, RareFields::default());
        }
        DnsEndpoint {
            meta: Meta {
                name: "web".into(),
                namespace: "ns".into(),
                ..Meta::default()
            },
            generation: Some(generation),
            observed_generation: observed,
            conditions: None,
            endpoints: list.finish(),
        }
    }

    fn entry(target: &str) -> Entry<'_> {
        ("web.example.org", target, "A")
    }

    fn reasons(c: &[DnsEndpointCondition]) -> Vec<(&str, &str, &str)> {
        c.iter()
            .map(|c| (c.type_.as_str(), c.status.as_str(), c.reason.as_str()))
            .collect()
    }

    /// Asserts the two conditions' (type, status, reason) and that the one at `index` says `message`.
    fn assert_conditions(
        c: &[DnsEndpointCondition],
        expected: [(&str, &str, &str); 2],
        (index, message): (usize, &str),
    ) {
        assert_eq!(reasons(c), expected);
        assert!(c[index].message.contains(message), "{}", c[index].message);
    }

    #[test]
    fn the_names_outcomes_tell_a_conflict_and_the_providers_words() {
        use extdns_controller::Party;

        use crate::testing::web_names as names;

        let ok = object(vec![entry("192.0.2.1")], 1, None);
        let plan = PlanConfig::default();
        let conflict = names(NameState::conflict(Party::Object("service/ns/web".into())));
        let c = conditions_with(&ok, &SyncStatus::default(), &plan, Some(&conflict));
        assert_conditions(
            &c,
            [("Accepted", "True", "Accepted"), ("Ready", "False", "Conflict")],
            (1, "web.example.org A: held by object service/ns/web"),
        );
        let mut refused = SyncStatus::default();
        refused
            .errored
            .insert(ObjectKey::new(ResourceKind::DnsEndpoint, "ns", "web"));
        let said = names(NameState::Refused {
            error: "REFUSED".into(),
        });
        let c = conditions_with(&ok, &refused, &plan, Some(&said));
        assert_conditions(
            &c,
            [("Accepted", "True", "Accepted"), ("Ready", "False", "Failed")],
            (1, "refused by the provider: REFUSED"),
        );
        // A later sync of other objects: the refusal stands until the name is planned again.
        let c = conditions_with(&ok, &SyncStatus::default(), &plan, Some(&said));
        assert_eq!(reasons(&c)[1], ("Ready", "False", "Failed"));
    }

    #[test]
    fn conditions_follow_the_entries_and_the_sync() {
        let ok = object(vec![entry("192.0.2.1")], 1, None);
        let quiet = SyncStatus::default();
        let plan = PlanConfig::default();
        assert_eq!(
            reasons(&conditions(&ok, &quiet, &plan)),
            [("Accepted", "True", "Accepted"), ("Ready", "True", "Programmed")]
        );
        let mut refused = SyncStatus::default();
        refused
            .errored
            .insert(ObjectKey::new(ResourceKind::DnsEndpoint, "ns", "web"));
        assert_eq!(
            reasons(&conditions(&ok, &refused, &plan))[1],
            ("Ready", "False", "Failed")
        );

        let half = object(vec![entry("192.0.2.1"), entry("192.0.2.2.")], 1, None);
        let c = conditions(&half, &quiet, &plan);
        assert_conditions(
            &c,
            [("Accepted", "False", "Invalid"), ("Ready", "True", "Programmed")],
            (0, "spec.endpoints[1] is skipped: illegal target"),
        );
        assert!(
            c[0].message.starts_with("spec.endpoints[1] is skipped: illegal target"),
            "the skipped entry leads the message: {}",
            c[0].message
        );

        let bad = object(vec![entry("192.0.2.2.")], 1, None);
        assert_eq!(
            reasons(&conditions(&bad, &quiet, &plan))[1],
            ("Ready", "False", "Invalid")
        );
        let empty = object(vec![], 1, None);
        assert_eq!(
            reasons(&conditions(&empty, &quiet, &plan))[1],
            ("Ready", "False", "Filtered")
        );
    }

    #[test]
    fn an_outcome_is_not_written_on_an_object_made_again_since_the_sync_computed_it() {
        let key = ObjectKey::new(ResourceKind::DnsEndpoint, "ns", "web");
        let then = Uid::parse("3f2b7c1e-9a4d-4e0b-8c6f-0123456789ab");
        let now = Uid::parse("77777777-9a4d-4e0b-8c6f-0123456789ab");
        let mut failed = SyncStatus::default();
        failed.failed.insert(key.clone());
        if let Some(then) = then {
            failed.uids.insert(key.clone(), then);
        }
        assert!(outcome_is_for(&failed, &key, then), "the very object");
        assert!(
            !outcome_is_for(&failed, &key, now),
            "made again since: the failure is the old one's"
        );
        assert!(!outcome_is_for(&failed, &key, None), "gone from the view since");
        let mut errored = SyncStatus::default();
        errored.errored = failed.failed.clone();
        errored.uids = failed.uids.clone();
        assert!(!outcome_is_for(&errored, &key, now));
        // Not named by the outcome, or named without a uid kept (a manifest): the view's conditions alone.
        assert!(outcome_is_for(&SyncStatus::default(), &key, now));
        let mut no_uid = SyncStatus::default();
        no_uid.failed.insert(key.clone());
        assert!(outcome_is_for(&no_uid, &key, now));
    }

    #[test]
    fn status_is_written_only_when_it_changes() {
        let wanted = conditions(
            &object(vec![entry("192.0.2.1")], 2, None),
            &SyncStatus::default(),
            &PlanConfig::default(),
        );
        // external-dns's rule: observedGeneration behind generation.
        assert!(needs_write(&object(vec![], 2, Some(1)), &wanted));
        assert!(needs_write(&object(vec![], 2, None), &wanted));
        // Up to date, and a CRD that prunes conditions: nothing to write, ever.
        assert!(!needs_write(&object(vec![], 2, Some(2)), &wanted));
        // A CRD that keeps conditions: written when they differ, not when they match.
        let mut kept = object(vec![], 2, Some(2));
        kept.conditions = Some(wanted.clone());
        assert!(!needs_write(&kept, &wanted));
        kept.conditions = Some(vec![wanted[0].clone()]);
        assert!(needs_write(&kept, &wanted));
    }

    #[test]
    fn an_entry_the_plan_leaves_alone_makes_ready_filtered() {
        let ok = object(vec![entry("192.0.2.1")], 1, None);
        let quiet = SyncStatus::default();
        let inside = PlanConfig {
            domain_filter: extdns_endpoint::DomainFilter::new(&["example.org"], &[]),
            ..PlanConfig::default()
        };
        assert_eq!(
            reasons(&conditions(&ok, &quiet, &inside))[1],
            ("Ready", "True", "Programmed")
        );
        for plan in [
            PlanConfig {
                domain_filter: extdns_endpoint::DomainFilter::new(&["example.net"], &[]),
                ..PlanConfig::default()
            },
            PlanConfig {
                domain_filter: extdns_endpoint::DomainFilter::new(&["example.org"], &["web.example.org"]),
                ..PlanConfig::default()
            },
        ] {
            assert_conditions(
                &conditions(&ok, &quiet, &plan),
                [("Accepted", "True", "Accepted"), ("Ready", "False", "Filtered")],
                (1, "web.example.org A: outside the domain filter"),
            );
        }
        // One entry in, one out: still not every record is published.
        let other = ("web.example.net", "192.0.2.2", "A");
        let two = object(vec![entry("192.0.2.1"), other], 1, None);
        let c = conditions(&two, &quiet, &inside);
        assert_eq!(c[1].reason, "Filtered");
        assert!(!c[1].message.contains("web.example.org "), "{}", c[1].message);
        // A type the plan does not manage.
        let ns = ("web.example.org", "ns1.example.org", "NS");
        let c = conditions(&object(vec![ns], 1, None), &quiet, &PlanConfig::default());
        assert_eq!(c[1].reason, "Filtered");
        assert!(c[1].message.contains("not managed"), "{}", c[1].message);
    }
}
