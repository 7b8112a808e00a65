//! The plan: the changes that take the current DNS records to the desired ones.
//!
//! The rules are external-dns's (`plan/plan.go`): records are filtered by domain and managed type, grouped in
//! rows by (normalised name, set identifier), and each row decides its creates, updates and deletes under the
//! conflict resolver. Ownership is what keeps extdns from damaging records it does not manage: updates and
//! deletes only touch records whose `owner` label is ours, and a create at a name only happens when every
//! record already at that name is ours. Unlike external-dns, the output order is deterministic (sorted by
//! name, type and set identifier), so two runs over the same input send the same requests.

mod conflict;
mod name;
mod policy;
#[cfg(test)]
mod tests;

use std::collections::HashMap;

use extdns_endpoint::{Changes, DomainFilter, Endpoint, RecordType, label};

pub use conflict::{cname_conflicts, resolve_create, resolve_update};
pub use name::normalize_dns_name;
pub use policy::{Policy, UnknownPolicy};

/// How to plan: the policy, the record types extdns manages, the user's domain filter and the owner id.
#[derive(Debug, Clone)]
pub struct PlanConfig {
    pub policy: Policy,
    /// `--managed-record-types` (default A, AAAA, CNAME). Exact, case-sensitive types.
    pub managed_types: Vec<RecordType>,
    /// `--exclude-record-types`; wins over `managed_types`.
    pub excluded_types: Vec<RecordType>,
    /// `--domain-filter` / `--exclude-domains` / the regex pair. The provider's filter is applied as well.
    pub domain_filter: DomainFilter,
    /// The registry's owner id. Empty means "no ownership" (the noop registry): nothing is owner-filtered.
    pub owner_id: String,
    /// `--migrate-from-txt-owner`: while set, every owned record is updated so its TXT is rewritten.
    pub old_owner_id: Option<String>,
}

impl Default for PlanConfig {
    fn default() -> Self {
        PlanConfig {
            policy: Policy::Sync,
            managed_types: default_managed_types(),
            excluded_types: Vec::new(),
            domain_filter: DomainFilter::default(),
            owner_id: String::new(),
            old_owner_id: None,
        }
    }
}

/// external-dns's default `--managed-record-types`.
pub fn default_managed_types() -> Vec<RecordType> {
    vec![RecordType::A, RecordType::Aaaa, RecordType::Cname]
}

impl PlanConfig {
    /// Whether the plan looks at records of this type at all.
    pub fn is_managed(&self, t: &RecordType) -> bool {
        self.managed_types.contains(t) && !self.excluded_types.contains(t)
    }
}

/// What a plan produced: the changes to apply, and the creates it refused because another owner (or nobody)
/// holds a record at the same name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlanOutcome {
    pub changes: Changes,
    /// One entry per foreign record that blocked a create; feeds the
    /// `registry_skipped_records_owner_mismatch_per_sync` gauge.
    pub owner_mismatches: Vec<OwnerMismatch>,
}

/// A record at a name we wanted to create at, held by someone else (labels of the external-dns gauge).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OwnerMismatch {
    /// The type of the foreign record.
    pub record_type: String,
    /// Our owner id.
    pub owner: String,
    /// The foreign record's owner label, or its set identifier when it has no owner (as external-dns reports).
    pub foreign_owner: String,
    /// The record's name without its first label (the whole name when only one label would remain).
    pub domain: String,
}

/// Records of one type in one row.
struct TypeSlot<'a> {
    record_type: &'a RecordType,
    /// The last current record of this type wins, as in external-dns.
    current: Option<&'a Endpoint>,
    candidates: Vec<&'a Endpoint>,
}

/// Everything at one (normalised name, set identifier).
#[derive(Default)]
struct Row<'a> {
    current: Vec<&'a Endpoint>,
    candidates: Vec<&'a Endpoint>,
    types: Vec<TypeSlot<'a>>,
}

impl<'a> Row<'a> {
    fn slot(&mut self, t: &'a RecordType) -> &mut TypeSlot<'a> {
        let i = match self.types.iter().position(|s| s.record_type == t) {
            Some(i) => i,
            None => {
                self.types.push(TypeSlot {
                    record_type: t,
                    current: None,
                    candidates: Vec::new(),
                });
                self.types.len() - 1
            }
        };
        &mut self.types[i]
    }
}

/// Compute the changes from `current` (the registry's records, with ownership labels) to `desired` (the
/// sources' endpoints after the provider's adjustment). `provider_filter` is the provider's (registry's)
/// domain filter; a record must pass it and `config.domain_filter`.
pub fn calculate(
    config: &PlanConfig,
    current: &[Endpoint],
    desired: &[Endpoint],
    provider_filter: &DomainFilter,
) -> PlanOutcome {
    let filters: Vec<&DomainFilter> = [&config.domain_filter, provider_filter]
        .into_iter()
        .filter(|f| f.is_configured())
        .collect();
    let admitted = |e: &Endpoint| config.is_managed(&e.record_type) && filters.iter().all(|f| f.matches(&e.dns_name));

    let mut index: HashMap<(String, &str), usize> = HashMap::with_capacity(current.len().max(desired.len()));
    let mut rows: Vec<Row<'_>> = Vec::with_capacity(current.len().max(desired.len()));
    for e in current.iter().filter(|e| admitted(e)) {
        let key = (normalize_dns_name(&e.dns_name), e.set_identifier.as_str());
        let i = *index.entry(key).or_insert_with(|| {
            rows.push(Row::default());
            rows.len() - 1
        });
        let row = &mut rows[i];
        row.current.push(e);
        row.slot(&e.record_type).current = Some(e);
    }
    for e in desired.iter().filter(|e| admitted(e)) {
        let key = (normalize_dns_name(&e.dns_name), e.set_identifier.as_str());
        let i = *index.entry(key).or_insert_with(|| {
            rows.push(Row::default());
            rows.len() - 1
        });
        let row = &mut rows[i];
        row.candidates.push(e);
        row.slot(&e.record_type).candidates.push(e);
    }
    drop(index);

    let mut changes = Changes::default();
    let mut mismatches = Vec::new();
    for row in &rows {
        plan_row(config, row, &mut changes, &mut mismatches);
    }

    let mut changes = config.policy.apply(changes);
    if !config.owner_id.is_empty() {
        let owned = |e: &Endpoint| e.owner() == Some(config.owner_id.as_str());
        changes.delete.retain(owned);
        let mut seen = std::collections::HashSet::with_capacity(changes.delete.len());
        changes.delete.retain(|e| seen.insert(e.key()));
        // Old and new sides are filtered independently in external-dns; the new side carries the current
        // owner (copied in `plan_row`), so filtering pairs keeps exactly the same records and the pairing.
        let (old, new): (Vec<_>, Vec<_>) = std::mem::take(&mut changes.update_old)
            .into_iter()
            .zip(std::mem::take(&mut changes.update_new))
            .filter(|(o, n)| owned(o) && owned(n))
            .unzip();
        changes.update_old = old;
        changes.update_new = new;
    }
    sort_changes(&mut changes);
    mismatches.sort();
    PlanOutcome {
        changes,
        owner_mismatches: mismatches,
    }
}

fn plan_row<'a>(config: &PlanConfig, row: &Row<'a>, changes: &mut Changes, mismatches: &mut Vec<OwnerMismatch>) {
    let discard_cnames = cname_conflicts(&row.candidates);
    if discard_cnames {
        tracing::info!(
            name = %row.candidates[0].dns_name,
            "conflicting record type candidates; discarding CNAME record"
        );
    }
    fn candidates_of<'s, 'a>(s: &'s TypeSlot<'a>, discard_cnames: bool) -> &'s [&'a Endpoint] {
        if discard_cnames && *s.record_type == RecordType::Cname {
            &[]
        } else {
            &s.candidates
        }
    }

    if row.current.is_empty() {
        for slot in &row.types {
            if let Some(c) = resolve_create(candidates_of(slot, discard_cnames)) {
                changes.create.push(c.clone());
            }
        }
        return;
    }
    if row.candidates.is_empty() {
        changes.delete.extend(row.current.iter().map(|&e| e.clone()));
        return;
    }

    let mut creates = Vec::new();
    for slot in &row.types {
        let candidates = candidates_of(slot, discard_cnames);
        match (slot.current, candidates.is_empty()) {
            (Some(current), true) => changes.delete.push(current.clone()),
            (None, false) => creates.extend(resolve_create(candidates)),
            (Some(current), false) => {
                let Some(desired) = resolve_update(current, candidates) else {
                    continue;
                };
                if needs_update(config, desired, current) {
                    let mut new = desired.clone();
                    // The new side keeps the current owner so the owner filter treats both sides alike.
                    new.labels
                        .insert(label::OWNER.to_string(), current.owner().unwrap_or("").to_string());
                    changes.update_new.push(new);
                    changes.update_old.push(current.clone());
                }
            }
            (None, true) => {}
        }
    }
    if creates.is_empty() {
        return;
    }
    if !config.owner_id.is_empty() {
        let foreign: Vec<&&Endpoint> = row
            .current
            .iter()
            .filter(|e| e.owner() != Some(config.owner_id.as_str()))
            .collect();
        if !foreign.is_empty() {
            for e in foreign {
                tracing::debug!(
                    record = %e,
                    owner = e.owner().unwrap_or(""),
                    "not creating records at a name held by another owner"
                );
                mismatches.push(OwnerMismatch {
                    record_type: e.record_type.to_string(),
                    owner: config.owner_id.clone(),
                    foreign_owner: match e.owner() {
                        Some(o) if !o.is_empty() => o.to_string(),
                        _ => e.set_identifier.clone(),
                    },
                    domain: parent_domain(&e.dns_name).to_string(),
                });
            }
            return;
        }
    }
    changes.create.extend(creates.into_iter().cloned());
}

/// external-dns's update conditions: a configured TTL that differs, different targets, different
/// provider-specific properties, or an owner migration in progress.
fn needs_update(config: &PlanConfig, desired: &Endpoint, current: &Endpoint) -> bool {
    (desired.record_ttl.is_configured() && desired.record_ttl != current.record_ttl)
        || !desired.targets.same(&current.targets)
        || provider_specific_differs(desired, current)
        || config
            .old_owner_id
            .as_deref()
            .is_some_and(|old| !old.is_empty() && current.owner().unwrap_or("") != old)
}

/// Compared by name: a property only one side has, or with another value, is a difference. Properties the
/// provider returns but the sources never set therefore cause an update every sync unless the provider's
/// `adjust_endpoints` sets them too (external-dns behaves the same).
fn provider_specific_differs(desired: &Endpoint, current: &Endpoint) -> bool {
    let mut wanted: HashMap<&str, &str> = desired
        .provider_specific
        .iter()
        .map(|p| (p.name.as_str(), p.value.as_str()))
        .collect();
    for p in current.provider_specific.iter() {
        match wanted.remove(p.name.as_str()) {
            Some(v) if v == p.value => {}
            _ => return true,
        }
    }
    !wanted.is_empty()
}

/// The gauge's `domain` label: the name without its first label, unless that leaves a single label.
fn parent_domain(name: &str) -> &str {
    match name.split_once('.') {
        Some((_, rest)) if rest.contains('.') => rest,
        _ => name,
    }
}

fn sort_key(e: &Endpoint) -> (&str, &RecordType, &str) {
    (e.dns_name.as_str(), &e.record_type, e.set_identifier.as_str())
}

fn sort_changes(changes: &mut Changes) {
    changes.create.sort_by(|a, b| sort_key(a).cmp(&sort_key(b)));
    changes.delete.sort_by(|a, b| sort_key(a).cmp(&sort_key(b)));
    let mut pairs: Vec<(Endpoint, Endpoint)> = std::mem::take(&mut changes.update_old)
        .into_iter()
        .zip(std::mem::take(&mut changes.update_new))
        .collect();
    pairs.sort_by(|a, b| sort_key(&a.1).cmp(&sort_key(&b.1)));
    (changes.update_old, changes.update_new) = pairs.into_iter().unzip();
}
