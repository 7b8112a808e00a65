//! Hand-over of records between two owner ids in two phases, each declared by its owner.
//!
//! 1. The releasing owner runs with `--txt-release-to-owner=<adopter>` ([`PlanConfig::release_to`]): it
//!    stops updating and deleting the records it owns, and writes the release into each one's ownership
//!    record (the [`label::RELEASED_TO`] label), the record itself unchanged.
//! 2. The adopting owner runs with `--txt-adopt-from-owner=<releaser>` ([`PlanConfig::adopt_from`]): a
//!    record of the releaser that names it as [`label::RELEASED_TO`] and is identical to what the adopter
//!    would write (targets, TTL where the adopter sets one, provider-specific properties) is taken over by
//!    an update whose only effect is its ownership record, rewritten to the adopter. A record that differs,
//!    or was not released, stays the releaser's: never duplicated, never deleted, never without an owner.
//!
//! Both are plain plans, so `extdns plan` previews each phase: the releaser's marking updates, then the
//! adopter's take-overs.

use extdns_endpoint::{Change, Endpoint, label};

use crate::PlanConfig;

/// Whether `current` is a record the adopter ([`PlanConfig::adopt_from`]) may take over
/// ([`Endpoint::adoptable_by`], the rule the registries ask too).
pub(crate) fn adoptable(config: &PlanConfig, current: &Endpoint) -> bool {
    current.adoptable_by(&config.owner_id, config.adopt_from.as_deref())
}

/// The update taking `current` over: `desired` (identical to it) owned by us.
pub(crate) fn adopt(config: &PlanConfig, current: &Endpoint, mut desired: Endpoint) -> Change {
    desired.labels.insert(label::OWNER.to_string(), config.owner_id.clone());
    desired.labels.remove(label::RELEASED_TO);
    tracing::info!(record = %current, from = current.owner().unwrap_or(""), "adopting a released record");
    Change::update(current.clone(), desired)
}

/// The releaser's plan (`to` being [`PlanConfig::release_to`]): no update or delete of a record we own;
/// instead each one not yet released gets an update writing the release into its ownership record.
/// Creates stay (a new record is released at the next sync). `owned` says which records are ours,
/// `current` are the records the plan looked at.
pub(crate) fn release<'e>(
    to: &str,
    current: impl Iterator<Item = &'e Endpoint>,
    owned: impl Fn(&Endpoint) -> bool,
    changes: &mut Vec<Change>,
) {
    changes.retain(|c| match c {
        Change::Create(_) => true,
        Change::Delete(e) => !owned(e),
        Change::Update { old, .. } => !owned(old),
    });
    for e in current.filter(|e| owned(e) && e.label(label::RELEASED_TO) != Some(to)) {
        let mut released = e.clone();
        released.labels.insert(label::RELEASED_TO.to_string(), to.to_string());
        changes.push(Change::update(e.clone(), released));
    }
}
