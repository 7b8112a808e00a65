//! What `extdns plan` shows of shared names: each owner's contribution to each shared record, its
//! heartbeat's age, and what this owner's next upkeep would prune.

use extdns_endpoint::RecordType;

use super::SharedRegistry;
use super::view::SharedView;
use crate::Snapshot;

/// One owner's part of a shared record.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OwnerShare {
    /// Its `--txt-owner-id`.
    pub owner: String,
    /// Its targets, healthy or not.
    pub targets: Vec<String>,
    /// Those of its targets its health checks find unhealthy (published only when no target of the name
    /// is healthy).
    pub unhealthy: Vec<String>,
    /// Seconds since its heartbeat in the record's domain was written (by its clock against ours); `None`
    /// without one.
    pub heartbeat_age: Option<u64>,
    /// Whether the next upkeep of this owner prunes it from the record.
    pub pruned: bool,
}

/// A shared record as the zone holds it and who contributes what.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SharedName {
    /// The record's name.
    pub name: String,
    /// The record's type.
    pub record_type: RecordType,
    /// The targets the record holds now (empty when it is missing).
    pub published: Vec<String>,
    /// The contributions, by owner id.
    pub owners: Vec<OwnerShare>,
    /// A plain (external-dns style) owner beside the shared ones: nothing is written for the name.
    pub plain_owner: Option<String>,
}

impl SharedRegistry {
    /// The shared records `snapshot` read (from [`crate::Registry::records`] of this registry), with what
    /// pruning would do; empty for a snapshot of another registry.
    pub fn preview(&self, snapshot: &Snapshot) -> Vec<SharedName> {
        let Some(view) = snapshot.registry_state::<SharedView>() else {
            return Vec::new();
        };
        let now = (self.clock)();
        let read = snapshot.provider_state();
        let plan = self.plan_maintenance(view, read, true).unwrap_or_default();
        let pruned = plan.pruned();
        view.contributions
            .iter()
            .map(|(key, by_owner)| {
                let domain = self.domain_of(read, &key.0);
                let mut published: Vec<String> = view
                    .records
                    .get(key)
                    .map(|r| r.targets.iter().map(|t| t.to_string()).collect())
                    .unwrap_or_default();
                published.sort();
                SharedName {
                    name: key.0.clone(),
                    record_type: key.1.clone(),
                    published,
                    owners: by_owner
                        .values()
                        .map(|s| OwnerShare {
                            owner: s.value.owner.clone(),
                            targets: s.value.targets.clone(),
                            unhealthy: s.value.unhealthy.clone(),
                            heartbeat_age: view
                                .heartbeats
                                .get(&domain)
                                .and_then(|m| m.get(&s.value.owner))
                                .map(|h| now.saturating_sub(h.value.at)),
                            pruned: pruned.iter().any(|(k, o)| *k == key && **o == s.value.owner),
                        })
                        .collect(),
                    plain_owner: view.plain_owner.get(key).cloned(),
                }
            })
            .collect()
    }
}
