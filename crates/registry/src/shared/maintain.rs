//! What an owner does every interval whether or not anything changed: keep its heartbeat fresh in each
//! domain it shares names in, and prune the owners whose heartbeat is older than `--shared-owner-ttl` from
//! the names it shares with them.

use std::collections::{BTreeMap, BTreeSet};

use extdns_endpoint::{Change, Endpoint, RecordType};
use extdns_provider::{ReadState, Unit};

use super::format::Format;
use super::view::{Key, SharedView, Stored, heartbeat_domain};
use super::write::record_change;
use super::{SharedCount, SharedRegistry};
use crate::{RegistryError, Snapshot};

/// One maintenance pass's writes, and how to fold them into the view once written.
#[derive(Default)]
pub(super) struct Plan {
    /// Our heartbeats: created, rewritten or deleted.
    beats: Vec<Change>,
    /// Per pruned record: the record's change (to the live owners' union), then the dead owners'
    /// contribution records' deletes.
    prunes: Vec<Prune>,
    /// Dead owners' heartbeats that vouch for nothing any more.
    dead_beats: Vec<(String, String, Change)>,
}

/// One shared record's dead owners pruned.
struct Prune {
    key: Key,
    /// The record to the live owners' union.
    record: Option<Change>,
    /// The dead owners' contribution records.
    deletes: Vec<Change>,
    /// The dead owners.
    dead: Vec<String>,
}

impl Plan {
    /// The (record, owner) pairs this pass prunes.
    pub(super) fn pruned(&self) -> Vec<(&Key, &String)> {
        self.prunes
            .iter()
            .flat_map(|p| p.dead.iter().map(move |o| (&p.key, o)))
            .collect()
    }
}

impl SharedRegistry {
    /// Writes the heartbeats due and prunes dead owners; returns whether anything was written. `snapshot`
    /// is folded to read as the zone now is.
    pub(super) async fn keep_alive_and_prune(&self, snapshot: &mut Snapshot) -> Result<bool, RegistryError> {
        let Some(view) = snapshot.registry_state::<SharedView>() else {
            return Ok(false);
        };
        let plan = self.plan_maintenance(view, snapshot.provider_state(), false)?;
        let mut units: Vec<Unit<'_>> = plan.beats.iter().map(Unit::new).collect();
        for p in &plan.prunes {
            units.extend(p.record.iter().map(Unit::new));
            units.extend(p.deletes.iter().map(Unit::new));
        }
        units.extend(plan.dead_beats.iter().map(|(_, _, c)| Unit::new(c)));
        if units.is_empty() {
            return Ok(false);
        }
        self.provider.apply(snapshot.provider_state(), &units).await?;
        drop(units);
        for c in plan.beats.iter().filter(|c| !matches!(c, Change::Delete(_))) {
            self.count(
                SharedCount::HeartbeatsWritten,
                &heartbeat_domain(&c.endpoint().dns_name),
                1,
            );
        }
        for p in &plan.prunes {
            if p.dead.is_empty() {
                tracing::info!(name = %p.key.0, record_type = %p.key.1, "shared record rewritten to its owners' union");
                continue;
            }
            for dead in &p.dead {
                self.count(SharedCount::OwnersPruned, dead, 1);
            }
            tracing::info!(
                name = %p.key.0, record_type = %p.key.1, dead_owners = ?p.dead, ttl = ?self.config.owner_ttl,
                "pruned owners whose heartbeat is older than --shared-owner-ttl from a shared name"
            );
        }
        if let Some(view) = snapshot.registry_state_mut::<SharedView>() {
            fold(view, plan, &self.format);
        }
        Ok(true)
    }

    /// What this pass writes. Heartbeats: ours where we contribute and it is due (missing, or older than half
    /// a period), deleted where we contribute nothing; another process's under our owner id taken over. While
    /// the read found another process in a domain ([`SharedView::judge_instances`]: a conflict, or one not yet
    /// proven stopped), nothing shared is written or pruned there. Pruning: on
    /// every name we contribute to, the owners whose heartbeat was read and is older than the TTL; an owner
    /// whose heartbeat was not found is kept (fail open); we are alive, so never the last owner. A `preview`
    /// (`extdns plan`, often run beside the live process under the same owner id) is never stopped by another
    /// instance's heartbeat, counts nothing and logs nothing.
    pub(super) fn plan_maintenance(
        &self,
        view: &SharedView,
        read: &ReadState,
        preview: bool,
    ) -> Result<Plan, RegistryError> {
        let now = (self.clock)();
        let ttl = self.config.owner_ttl.as_secs();
        let every = self.config.heartbeat_every.as_secs();
        let mut plan = Plan::default();
        let domain_of: BTreeMap<&Key, String> = view
            .contributions
            .keys()
            .map(|k| (k, self.domain_of(read, &k.0)))
            .collect();
        let ours: BTreeSet<&String> = view
            .contributions
            .iter()
            .filter(|(_, m)| m.contains_key(&self.owner))
            .filter_map(|(k, _)| domain_of.get(k))
            .collect();
        let mut blocked: BTreeSet<&String> = BTreeSet::new();
        // Another process's heartbeat under our owner id where we contribute nothing yet (left by a process
        // that stopped before deleting it) is taken over too, or it would hold our first shared name there
        // back for good; ours is deleted there below, at the next pass.
        let held_by_another = |d: &&String| {
            view.heartbeats
                .get(*d)
                .and_then(|m| m.get(&self.owner))
                .is_some_and(|h| h.value.instance != self.instance)
        };
        let left_behind = view
            .second_instance
            .keys()
            .filter(|d| !preview && !ours.contains(d) && held_by_another(d));
        let beat_domains: BTreeSet<&String> = ours.iter().copied().chain(left_behind).collect();
        for domain in &beat_domains {
            if !preview && let Some(other) = view.second_instance.get(*domain) {
                blocked.insert(domain);
                self.report_second_instance(domain, other);
            }
            match view.heartbeats.get(*domain).and_then(|m| m.get(&self.owner)) {
                None => plan.beats.push(Change::Create(self.heartbeat_record(domain)?)),
                // Our own heartbeat's age is our clock against our clock: rewritten once per period.
                Some(h) if h.value.instance == self.instance => {
                    if now.saturating_sub(h.value.at) >= every / 2 {
                        plan.beats
                            .push(Change::update(stored(h), self.heartbeat_over(domain, Some(&h.value))?));
                    }
                }
                Some(_) if preview => {}
                // Another process's: taken over at every upkeep (module `heartbeat` says why that finds a
                // live one and lets a stopped one go), whatever its writer's clock says.
                Some(h) => plan
                    .beats
                    .push(Change::update(stored(h), self.heartbeat_over(domain, Some(&h.value))?)),
            }
        }
        for (domain, by_owner) in &view.heartbeats {
            if let Some(h) = by_owner.get(&self.owner)
                && !ours.contains(domain)
                && h.value.instance == self.instance
            {
                plan.beats.push(Change::Delete(stored(h)));
            }
        }
        // Dead only on evidence: a heartbeat read and older than the TTL. A missing one may be a read that
        // missed it (a zone outside our filters, a partial list, an owner placing the domain differently), and
        // pruning on it would remove a live owner's targets: that owner is kept (fail open).
        let heartbeat = |domain: &str, owner: &str| view.heartbeats.get(domain).and_then(|m| m.get(owner));
        let dead =
            |domain: &str, owner: &str| heartbeat(domain, owner).is_some_and(|h| now.saturating_sub(h.value.at) > ttl);
        let mut missing: BTreeSet<(String, String)> = BTreeSet::new();
        let mut pruned: BTreeMap<(&String, &String), usize> = BTreeMap::new();
        for (key, by_owner) in &view.contributions {
            let Some(domain) = domain_of.get(key) else { continue };
            if !by_owner.contains_key(&self.owner) || blocked.contains(domain) || view.plain_owner.contains_key(key) {
                continue;
            }
            missing.extend(
                by_owner
                    .keys()
                    .filter(|o| **o != self.owner && heartbeat(domain, o).is_none())
                    .map(|o| (domain.clone(), o.clone())),
            );
            let gone: Vec<&String> = by_owner
                .keys()
                .filter(|o| **o != self.owner && dead(domain, o))
                .collect();
            if gone.is_empty() {
                // No one to prune, but two owners writing at once may have left the record without the
                // other's latest targets: repaired here, a write only when the record differs from the union.
                let union = view.published(key, |_| true, None);
                let template = Endpoint::new(&key.0, key.1.clone(), std::iter::empty::<&str>());
                if let Some(record) = record_change(view.records.get(key), key, &union, &template) {
                    plan.prunes.push(Prune {
                        key: key.clone(),
                        record: Some(record),
                        deletes: Vec::new(),
                        dead: Vec::new(),
                    });
                }
                continue;
            }
            for o in &gone {
                *pruned.entry((domain, o)).or_default() += 1;
            }
            let union = view.published(key, |o| !gone.iter().any(|g| g.as_str() == o), None);
            let template = Endpoint::new(&key.0, key.1.clone(), std::iter::empty::<&str>());
            let record = record_change(view.records.get(key), key, &union, &template);
            let deletes = gone
                .iter()
                .filter_map(|o| by_owner.get(*o))
                .map(|s| Change::Delete(stored(s)))
                .collect();
            plan.prunes.push(Prune {
                key: key.clone(),
                record,
                deletes,
                dead: gone.into_iter().cloned().collect(),
            });
        }
        // A dead owner's heartbeat goes with its last contribution in the domain.
        for ((domain, owner), n) in pruned {
            let left = view
                .contributions
                .iter()
                .filter(|(k, m)| domain_of.get(k) == Some(domain) && m.contains_key(owner))
                .count();
            if left == n
                && let Some(h) = view.heartbeats.get(domain).and_then(|m| m.get(owner))
            {
                plan.dead_beats
                    .push((domain.clone(), owner.clone(), Change::Delete(stored(h))));
            }
        }
        if !preview {
            self.report_missing_heartbeats(missing);
        }
        Ok(plan)
    }

    /// Logs, once per domain and owner until its heartbeat is read again, the owners kept because no
    /// heartbeat of theirs was found: a cluster that died without one is never pruned, and an operator
    /// should know why its targets stay.
    fn report_missing_heartbeats(&self, missing: BTreeSet<(String, String)>) {
        let mut reported = self.reported();
        for (domain, owner) in missing.difference(&reported.missing_heartbeat) {
            tracing::info!(
                domain = %domain, owner = %owner,
                "shared owner kept: it has contributions but no heartbeat was found in this domain; an owner \
                 is pruned only when its heartbeat is read and older than --shared-owner-ttl"
            );
        }
        reported.missing_heartbeat = missing;
    }
}

/// A bookkeeping record as stored, to update or delete.
fn stored<T>(s: &Stored<T>) -> Endpoint {
    let mut e = Endpoint::new(&s.name, RecordType::Txt, std::iter::empty::<&str>());
    e.targets = s.values.clone();
    e
}

/// Folds a written maintenance pass into the view.
fn fold(view: &mut SharedView, plan: Plan, format: &Format) {
    for c in plan.beats {
        let e = match c {
            Change::Delete(e) => {
                for m in view.heartbeats.values_mut() {
                    m.retain(|_, s| s.name != e.dns_name);
                }
                continue;
            }
            Change::Create(e) => e,
            Change::Update { new, .. } => *new,
        };
        view.add(e, format);
    }
    for Prune { key, record, dead, .. } in plan.prunes {
        if let Some(m) = view.contributions.get_mut(&key) {
            m.retain(|o, _| !dead.contains(o));
        }
        match record {
            Some(Change::Delete(_)) => {
                view.records.remove(&key);
            }
            Some(Change::Create(e)) => {
                view.records.insert(key, e);
            }
            Some(Change::Update { new, .. }) => {
                view.records.insert(key, *new);
            }
            None => {}
        }
    }
    for (domain, owner, _) in plan.dead_beats {
        if let Some(m) = view.heartbeats.get_mut(&domain) {
            m.remove(&owner);
        }
    }
}
