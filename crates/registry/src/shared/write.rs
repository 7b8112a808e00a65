//! Writing the plan's changes to shared names: our contribution record, then the record as the union of
//! every owner's contribution; and refusing what would fight another owner.

use extdns_endpoint::{Change, Endpoint, RecordType, Targets, label, shared};
use extdns_provider::failure::FailureKind;
use extdns_provider::{ChangeFailure, ProviderError, ReadState, Unit};

use super::format::{Contribution, FormatError};
use super::health;
use super::view::{Key, SharedView, key_of};
use super::{SharedCount, SharedRegistry};
use crate::{RegistryError, Snapshot};

/// The plan's changes sorted: plain ones for the TXT registry, shared ones for us, and refused ones.
pub(super) struct Split {
    pub(super) plain: Vec<Change>,
    pub(super) shared: Vec<Change>,
    pub(super) withheld: Vec<ChangeFailure>,
}

/// What writing the shared changes did, per change of the plan: a change in neither list was written.
#[derive(Default)]
pub(super) struct SharedWrite {
    /// Changes not sent (their bookkeeping value could not be made), refused.
    pub(super) withheld: Vec<ChangeFailure>,
    /// Changes sent that did not land, each with the kind and message the provider gave its failure.
    pub(super) failed: Vec<ChangeFailure>,
    /// The provider's error when the call failed as a whole (so every sent change is in `failed`).
    pub(super) whole: Option<ProviderError>,
}

/// The plan's changes `units` write, each once.
fn written_changes<'a>(units: &[(Unit<'a>, Option<&'a Change>)]) -> impl Iterator<Item = &'a Change> + use<'a> {
    let mut seen: Vec<&Change> = Vec::new();
    for (_, c) in units {
        if let Some(c) = c
            && !seen.iter().any(|s| std::ptr::eq(*s, *c))
        {
            seen.push(c);
        }
    }
    seen.into_iter()
}

/// What one shared change sends: the record's change and our contribution record's change.
struct Pair {
    record: Option<Change>,
    contribution: Option<Change>,
}

impl SharedRegistry {
    /// Sorts `changes`, refusing what cannot be written: a plain record at a name others share, a shared
    /// name that is not an A or AAAA record without set identifier, or one with a conflict.
    pub(super) fn split(&self, view: &SharedView, read: &ReadState, changes: &[Change]) -> Split {
        let mut split = Split {
            plain: Vec::new(),
            shared: Vec::new(),
            withheld: Vec::new(),
        };
        for c in changes {
            let e = c.endpoint();
            let is_shared = shared::is_shared(e) || c.previous().is_some_and(shared::is_shared);
            let key = key_of(e);
            let refuse = |why: String| ChangeFailure::new(e, FailureKind::Refused, why);
            if !is_shared {
                if e.set_identifier.is_empty() && view.contributions.contains_key(&key) {
                    let owners = owners(view, &key);
                    self.conflict(e, "plain_owner", &format!("shared by {owners}"), "a plain record");
                    split.withheld.push(refuse(format!(
                        "not written: the name is shared by {owners}; a plain record would take it from them \
                         (mark it shared in this cluster too, or remove it from theirs)"
                    )));
                } else {
                    split.plain.push(c.clone());
                }
                continue;
            }
            if !matches!(e.record_type, RecordType::A | RecordType::Aaaa) || !e.set_identifier.is_empty() {
                split.withheld.push(refuse(
                    "not written: only A and AAAA records without a set identifier can be shared (a CNAME holds \
                     one target; a routing policy's record is already one per cluster)"
                        .to_string(),
                ));
                continue;
            }
            if let Some(plain) = view.plain_owner.get(&key) {
                self.conflict(e, "plain_owner", &format!("plain owner {plain:?}"), &owners(view, &key));
                split.withheld.push(refuse(format!(
                    "not written: the name has both a plain ownership record (owner {plain:?}) and shared owners \
                     ({}); remove one of them",
                    owners(view, &key)
                )));
                continue;
            }
            if let Some(h) = view.second_instance.get(&self.domain_of(read, &e.dns_name)) {
                if !h.conflict {
                    split.withheld.push(ChangeFailure::new(
                        e,
                        FailureKind::Transient,
                        format!(
                            "not written yet: this process took our owner id's heartbeat over from instance {}, \
                             and writes shared names once no other process takes it back",
                            h.instance
                        ),
                    ));
                    continue;
                }
                self.conflict(
                    e,
                    "instance",
                    &format!("instance {}", h.instance),
                    &format!("instance {}", self.instance),
                );
                split.withheld.push(refuse(format!(
                    "not written: another process (instance {}) writes heartbeats under our owner id {:?}",
                    h.instance, self.owner
                )));
                continue;
            }
            split.shared.push(c.clone());
        }
        split
    }

    /// A conflict on `e`'s name between `theirs` and `ours`: warned, counted; the refusal carries it to the
    /// object's Event.
    fn conflict(&self, e: &Endpoint, kind: &str, theirs: &str, ours: &str) {
        self.count(SharedCount::Conflicts, kind, 1);
        tracing::warn!(
            name = %e.dns_name, record_type = %e.record_type, theirs, ours, owner = %self.owner,
            "shared name conflict: nothing is written for this name"
        );
    }

    /// Writes the shared changes: per change our contribution record and the record as the new union,
    /// with our heartbeat first where the domain has none of ours. Reports each change by what happened to
    /// it ([`SharedWrite`]); an error only when a bookkeeping value cannot be made.
    pub(super) async fn write_shared(
        &self,
        snapshot: &Snapshot,
        view: &SharedView,
        changes: &[Change],
    ) -> Result<SharedWrite, RegistryError> {
        let mut out = SharedWrite::default();
        if changes.is_empty() {
            return Ok(out);
        }
        let read = snapshot.provider_state();
        let mut pairs: Vec<(&Change, Pair)> = Vec::new();
        let mut beats: Vec<Change> = Vec::new();
        let mut beat_domains = Vec::new();
        for c in changes {
            match self.pair(view, c) {
                Ok(p) => {
                    let domain = self.domain_of(read, &c.endpoint().dns_name);
                    let ours = view.heartbeats.get(&domain).and_then(|m| m.get(&self.owner));
                    if p.contribution.is_some() && ours.is_none() && !beat_domains.contains(&domain) {
                        beats.push(Change::Create(self.heartbeat_record(&domain)?));
                        beat_domains.push(domain);
                    }
                    pairs.push((c, p));
                }
                Err(why) => out.withheld.push(ChangeFailure::new(
                    c.endpoint(),
                    FailureKind::Refused,
                    format!("not written: {why}"),
                )),
            }
        }
        // Each unit with the plan's change it writes (none for a heartbeat).
        let mut units: Vec<(Unit<'_>, Option<&Change>)> = beats.iter().map(|b| (Unit::new(b), None)).collect();
        for (c, p) in &pairs {
            match (&p.record, &p.contribution) {
                (Some(r), o) => units.push((
                    Unit {
                        change: r,
                        ownership: o.as_ref(),
                    },
                    Some(*c),
                )),
                (None, Some(o)) => units.push((Unit::new(o), Some(*c))),
                (None, None) => {}
            }
        }
        if units.is_empty() {
            return Ok(out);
        }
        let sent: Vec<Unit<'_>> = units.iter().map(|(u, _)| *u).collect();
        let failures = match self.provider.apply(read, &sent).await {
            Ok(()) => Vec::new(),
            Err(ProviderError::Partial { failures }) => failures,
            Err(whole) => {
                // Nothing was written: every change failed as the call did.
                let kind = whole.kind().unwrap_or(FailureKind::Transient);
                let message = whole.to_string();
                out.failed = written_changes(&units)
                    .map(|c| ChangeFailure::new(c.endpoint(), kind, message.clone()))
                    .collect();
                out.whole = Some(whole);
                return Ok(out);
            }
        };
        let mut beats_failed = Vec::new();
        for f in &failures {
            let hit: Vec<&(Unit<'_>, Option<&Change>)> = units
                .iter()
                .filter(|(u, _)| u.changes().any(|c| f.is_for(c.endpoint())))
                .collect();
            let planned: Vec<&Change> = if hit.is_empty() {
                // A failure naming nothing we sent: no change is reported written that it may concern.
                written_changes(&units).collect()
            } else {
                hit.iter().filter_map(|(_, c)| *c).collect()
            };
            if hit.iter().any(|(_, c)| c.is_none()) {
                beats_failed.push(f.key.dns_name.clone());
            }
            for c in planned {
                if !out.failed.iter().any(|done| done.is_for(c.endpoint())) {
                    out.failed.push(ChangeFailure::new(
                        c.endpoint(),
                        f.reason.kind,
                        f.reason.message.clone(),
                    ));
                }
            }
        }
        for (b, domain) in beats.iter().zip(&beat_domains) {
            if beats_failed.contains(&b.endpoint().dns_name) {
                // The upkeep writes it at the next full sync; until then the others keep us (no heartbeat
                // is no evidence of death).
                tracing::warn!(domain = %domain, owner = %self.owner, "our heartbeat could not be written");
            } else {
                self.count(SharedCount::HeartbeatsWritten, domain, 1);
            }
        }
        Ok(out)
    }

    /// What change `c` sends: our contribution as it becomes, and the record as the union of it with every
    /// other owner's.
    fn pair(&self, view: &SharedView, c: &Change) -> Result<Pair, FormatError> {
        let e = c.endpoint();
        let key = key_of(e);
        let ours = match c {
            Change::Delete(_) => None,
            Change::Create(_) | Change::Update { .. } => {
                let new = c.endpoint();
                let mut targets: Vec<String> = new.targets.iter().map(|t| t.to_string()).collect();
                targets.sort();
                targets.dedup();
                Some(Contribution {
                    owner: self.owner.clone(),
                    record: new.dns_name.clone(),
                    record_type: new.record_type.clone(),
                    resource: new.resource().map(|r| r.into_owned()),
                    targets,
                    unhealthy: health::unhealthy_of(new),
                })
            }
        };
        let stored = view.contributions.get(&key).and_then(|m| m.get(&self.owner));
        let contribution = match (stored, &ours) {
            (Some(s), Some(o)) if s.value == *o => None,
            (Some(s), Some(o)) => Some(Change::update(
                self.stored_endpoint(s.name.clone(), s.values.clone(), e),
                self.contribution_record(o, e)?,
            )),
            (None, Some(o)) => Some(Change::Create(self.contribution_record(o, e)?)),
            (Some(s), None) => Some(Change::Delete(self.stored_endpoint(
                s.name.clone(),
                s.values.clone(),
                e,
            ))),
            (None, None) => None,
        };
        let union = view.published(&key, |o| o != self.owner, ours.as_ref());
        let record = record_change(view.records.get(&key), &key, &union, e);
        if record.is_some() && view.fails_open(&key, |o| o != self.owner, ours.as_ref()) {
            tracing::warn!(
                name = %e.dns_name, record_type = %e.record_type,
                "every target of the shared name is unhealthy, every owner's: all stay published (fail open)"
            );
        }
        Ok(Pair { record, contribution })
    }

    /// Our contribution record stating `c`, for the record `e`.
    fn contribution_record(&self, c: &Contribution, e: &Endpoint) -> Result<Endpoint, FormatError> {
        let value = self.format.contribution_value(c)?;
        let name = self.format.contribution_name(&self.owner, &c.record, &c.record_type);
        Ok(self.stored_endpoint(name, Targets::new([value]), e))
    }

    /// A contribution record named `name` holding `values`, owned by the record `e`.
    fn stored_endpoint(&self, name: String, values: Targets, e: &Endpoint) -> Endpoint {
        let mut txt = Endpoint::new(&name, RecordType::Txt, std::iter::empty::<&str>());
        txt.targets = values;
        txt.labels.insert(label::OWNED_RECORD, e.dns_name.clone());
        txt
    }
}

/// The change taking the record from `current` to hold `union`; `desired` gives the TTL. None when it holds
/// it already.
pub(super) fn record_change(
    current: Option<&Endpoint>,
    key: &Key,
    union: &[String],
    desired: &Endpoint,
) -> Option<Change> {
    let mut wanted = match current {
        Some(c) => c.clone(),
        None => Endpoint::new(&desired.dns_name, key.1.clone(), std::iter::empty::<&str>()),
    };
    wanted.targets = Targets::new(union.iter().map(String::as_str));
    if desired.record_ttl.is_configured() {
        wanted.record_ttl = desired.record_ttl;
    }
    shared::unmark(&mut wanted);
    wanted.provider_specific.remove(health::UNHEALTHY);
    wanted.labels = Default::default();
    wanted.ref_objects.clear();
    match current {
        None if union.is_empty() => None,
        None => Some(Change::Create(wanted)),
        Some(c) if union.is_empty() => Some(Change::Delete(c.clone())),
        Some(c) if c.targets.same(&wanted.targets) && c.record_ttl == wanted.record_ttl => None,
        Some(c) => Some(Change::update(c.clone(), wanted)),
    }
}

/// The owners of `key`'s contributions, for messages.
fn owners(view: &SharedView, key: &Key) -> String {
    view.contributions
        .get(key)
        .map(|m| m.keys().map(|o| format!("{o:?}")).collect::<Vec<_>>().join(", "))
        .unwrap_or_default()
}
