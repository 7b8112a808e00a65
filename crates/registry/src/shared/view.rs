//! What a read says about shared names: every owner's contribution to each shared record, every owner's
//! heartbeat per domain, and the records themselves; and the records the plan sees instead (ours with our
//! own targets, the others' hidden).

use std::collections::BTreeMap;

use extdns_endpoint::{Endpoint, RecordType, Targets, label, shared};

use super::format::{Contribution, Format, Heartbeat, SharedValue};
use super::health;
use super::heartbeat::{self, SecondInstance};

/// A shared record's identity: its lower-cased name and type (shared records have no set identifier).
pub(crate) type Key = (String, RecordType);

/// `e`'s [`Key`].
pub(crate) fn key_of(e: &Endpoint) -> Key {
    (e.dns_name.to_ascii_lowercase(), e.record_type.clone())
}

/// A bookkeeping record as read: what it states, and its name and values exactly as the zone holds them
/// (an update or delete names these).
#[derive(Debug, Clone)]
pub(crate) struct Stored<T> {
    pub(crate) value: T,
    pub(crate) name: String,
    pub(crate) values: Targets,
}

/// The shared names of one read.
#[derive(Debug, Default)]
pub(crate) struct SharedView {
    /// Each shared record's contributions, by owner.
    pub(crate) contributions: BTreeMap<Key, BTreeMap<String, Stored<Contribution>>>,
    /// Heartbeats by domain, then owner.
    pub(crate) heartbeats: BTreeMap<String, BTreeMap<String, Stored<Heartbeat>>>,
    /// The shared records as the zone holds them (the union).
    pub(crate) records: BTreeMap<Key, Endpoint>,
    /// Shared records that also have a plain (external-dns style) ownership record, with its owner.
    pub(crate) plain_owner: BTreeMap<Key, String>,
    /// Per domain, another process under our owner id (two extdns with one `--txt-owner-id`), proven alive
    /// or not yet proven stopped: [`SharedView::judge_instances`]. Judged from the zone at each read and
    /// carried by the snapshot, so the verdict never depends on what an earlier call remembered.
    pub(crate) second_instance: BTreeMap<String, SecondInstance>,
}

impl SharedView {
    /// Takes the shared bookkeeping out of `records` (a registry's records, with ownership labels) and
    /// returns the records the plan sees for `owner`: ours at a shared name with our own targets, marked
    /// shared; the other owners' shared records, and any name with both a plain and a shared owner,
    /// left out.
    pub(crate) fn extract(records: Vec<Endpoint>, format: &Format, owner: &str) -> (SharedView, Vec<Endpoint>) {
        let mut view = SharedView::default();
        let mut rest = Vec::with_capacity(records.len());
        for r in records {
            if let Some(r) = view.add(r, format) {
                rest.push(r);
            }
        }
        let mut plan = Vec::with_capacity(rest.len());
        for r in rest {
            let key = key_of(&r);
            if !r.set_identifier.is_empty() || !view.contributions.contains_key(&key) {
                plan.push(r);
                continue;
            }
            if let Some(plain) = r.owner().filter(|o| !o.is_empty()) {
                view.plain_owner.insert(key.clone(), plain.to_string());
            }
            view.records.insert(key, r);
        }
        for (key, by_owner) in &view.contributions {
            if view.plain_owner.contains_key(key) {
                continue;
            }
            let (Some(ours), Some(record)) = (by_owner.get(owner), view.records.get(key)) else {
                continue;
            };
            plan.push(as_planned(record, &ours.value));
        }
        (view, plan)
    }

    /// Finds, per domain, another process under our owner id, from our owner id's heartbeat as read
    /// ([`heartbeat::judge`]): one that took the heartbeat from us (a conflict), or one whose heartbeat we
    /// have not held long enough to know it stopped. No clock is read: another host's clock, behind or
    /// ahead of ours, changes nothing.
    pub(crate) fn judge_instances(&mut self, owner: &str, instance: &str) {
        self.second_instance = self
            .heartbeats
            .iter()
            .filter_map(|(domain, by_owner)| {
                let other = heartbeat::judge(&by_owner.get(owner)?.value, instance)?;
                Some((domain.clone(), other))
            })
            .collect();
    }

    /// Takes `r` in when it is shared bookkeeping (a contribution or a heartbeat), else gives it back.
    pub(crate) fn add(&mut self, r: Endpoint, format: &Format) -> Option<Endpoint> {
        let parsed = (r.record_type == RecordType::Txt)
            .then(|| r.targets.iter().find_map(|t| format.parse(t)))
            .flatten();
        let Some(value) = parsed else {
            return Some(r);
        };
        match value {
            SharedValue::Contribution(c) => {
                let key = (c.record.to_ascii_lowercase(), c.record_type.clone());
                let owner = c.owner.clone();
                self.contributions.entry(key).or_default().insert(owner, stored(c, r));
            }
            SharedValue::Heartbeat(h) => {
                let owner = h.owner.clone();
                let domain = heartbeat_domain(&r.dns_name);
                self.heartbeats.entry(domain).or_default().insert(owner, stored(h, r));
            }
        }
        None
    }

    /// The targets `key`'s record publishes from the contributions of owners `keep` accepts, with ours
    /// (`ours`, when given) in place of what the zone holds of ours: [`health::published`].
    pub(crate) fn published(&self, key: &Key, keep: impl Fn(&str) -> bool, ours: Option<&Contribution>) -> Vec<String> {
        health::published(self.kept(key, keep).chain(ours))
    }

    /// Whether [`SharedView::published`] of the same arguments fails open: targets, none of them healthy.
    pub(crate) fn fails_open(&self, key: &Key, keep: impl Fn(&str) -> bool, ours: Option<&Contribution>) -> bool {
        health::fails_open(self.kept(key, keep).chain(ours))
    }

    /// `key`'s contributions by owners `keep` accepts.
    fn kept(&self, key: &Key, keep: impl Fn(&str) -> bool) -> impl Iterator<Item = &Contribution> {
        self.contributions
            .get(key)
            .into_iter()
            .flat_map(|m| m.values())
            .map(|s| &s.value)
            .filter(move |c| keep(&c.owner))
    }
}

/// The domain a heartbeat named `_extdns-heartbeat.<owner label>.<domain>` vouches for.
pub(crate) fn heartbeat_domain(name: &str) -> String {
    name.splitn(3, '.').nth(2).unwrap_or_default().to_ascii_lowercase()
}

fn stored<T>(value: T, r: Endpoint) -> Stored<T> {
    Stored {
        value,
        name: r.dns_name,
        values: r.targets,
    }
}

/// The shared record as the plan sees it for one owner: that owner's targets, owned by it, naming its
/// object, marked shared, with those it found unhealthy named ([`health::UNHEALTHY`]) so the plan sees a
/// change of health as a change.
fn as_planned(record: &Endpoint, ours: &Contribution) -> Endpoint {
    let mut e = record.clone();
    e.targets = Targets::new(ours.targets.iter().map(String::as_str));
    e.labels.insert(label::OWNER, ours.owner.clone());
    if let Some(r) = &ours.resource {
        e.labels.insert(label::RESOURCE, r.clone());
    }
    shared::mark(&mut e);
    health::set_unhealthy(&mut e, ours.unhealthy.iter().cloned());
    e
}
