//! Why each name an object asks for is (or is not) in DNS: one outcome per (object, name), computed from
//! what a sync already knows (the names the sources asked for, the records the plan compared them with,
//! the plan's filters, the provider's refusals, the objects the sources could not evaluate), never by
//! evaluating anything again.
//!
//! It is computed after the records are written, so it never delays a change reaching DNS, and kept in a
//! [`NameBook`] that the status writers (Service conditions, the Ingress and route annotation, DNSEndpoint
//! conditions), the `/summary` endpoint and `extdns explain` all read: one model, so what `kubectl`, the
//! summary and explain say about a name is the same.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use extdns_endpoint::name::name_key;
use extdns_endpoint::{Change, DomainFilter, Endpoint, ObjectRefs, RecordType};
use extdns_informer::{ObjectKey, ResourceKind, Uid};
use extdns_plan::PlanConfig;
use extdns_provider::FailureReason;
use extdns_source::{Failures, Held};

mod by_name;
mod name_list;
use by_name::{ByName, IndexEdits};
pub use name_list::{NameList, NameRef};
use serde::Serialize;
use tokio::sync::watch;

/// The other party of a conflict, so the user knows whom to talk to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Party {
    /// Another object asks for the same name and type and holds it (its `resource` label, e.g.
    /// `service/shop/web`; empty when the record names none).
    Object(Box<str>),
    /// The record in the zone belongs to another owner id (empty: a record with no owner at all).
    Owner(Box<str>),
}

impl std::fmt::Display for Party {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Party::Object(o) if o.is_empty() => f.write_str("a record that names no object"),
            Party::Object(o) => write!(f, "object {o}"),
            Party::Owner(o) if o.is_empty() => f.write_str("a record no owner id claims"),
            Party::Owner(o) => write!(f, "owner id {o:?}"),
        }
    }
}

/// Where one name stands, with what the user needs to act on it.
///
/// 24 bytes: the book keeps one per name asked for, for as long as it is asked for (issue 49: the whole
/// process's memory per record), so each variant holds at most one boxed string or one pointer, and a
/// published name shares its provider and zone with every name of the zone ([`PublishedIn`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "reason")]
pub enum NameState {
    /// The record is in the zone as asked.
    Published {
        /// Where; one value shared by every outcome of a sync in the zone.
        #[serde(flatten)]
        at: Arc<PublishedIn>,
    },
    /// Asked for, not written yet (a dry run, the deletion guard, or a write still to come).
    Pending,
    /// Someone else holds the name.
    Conflict {
        /// Who.
        with: Box<Party>,
    },
    /// Part of the object is invalid; this name's record is kept as it was.
    Invalid {
        /// What is wrong, naming the field (as the source said it).
        field: Box<str>,
    },
    /// The provider would not take the record.
    Refused {
        /// What the provider said.
        error: Box<str>,
    },
    /// A flag keeps the name out of the plan.
    Filtered {
        /// Which flag.
        flag: &'static str,
    },
    /// The object could not be evaluated: its records are kept as they are.
    Held {
        /// Why, as the source said it.
        why: Box<str>,
    },
}

/// Where a published name is: the provider and zone holding it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct PublishedIn {
    /// The provider that holds it (`--provider`).
    pub provider: String,
    /// The zone (the provider's domain filter include) the name falls in, when it has one.
    pub zone: Option<String>,
}

/// The state without its detail: the condition reason and the summary's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Reason {
    /// See [`NameState::Published`].
    Published,
    /// See [`NameState::Pending`].
    Pending,
    /// See [`NameState::Conflict`].
    Conflict,
    /// See [`NameState::Invalid`].
    Invalid,
    /// See [`NameState::Refused`].
    Refused,
    /// See [`NameState::Filtered`].
    Filtered,
    /// See [`NameState::Held`].
    Held,
}

impl Reason {
    /// Every reason, worst last: an object's condition takes the worst of its names'.
    pub const ALL: [Reason; 7] = [
        Reason::Published,
        Reason::Pending,
        Reason::Filtered,
        Reason::Conflict,
        Reason::Invalid,
        Reason::Refused,
        Reason::Held,
    ];

    /// The reason as conditions and the summary spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Published => "Published",
            Reason::Pending => "Pending",
            Reason::Conflict => "Conflict",
            Reason::Invalid => "Invalid",
            Reason::Refused => "Refused",
            Reason::Filtered => "Filtered",
            Reason::Held => "Held",
        }
    }

    /// How bad it is, for picking an object's reason ([`Reason::ALL`]'s order).
    fn rank(self) -> usize {
        Reason::ALL.iter().position(|r| *r == self).unwrap_or(0)
    }
}

impl NameState {
    /// Published by `provider`, in `zone` if it has one (one value per name: the book's syncs share one
    /// per zone instead).
    pub fn published(provider: &str, zone: Option<&str>) -> NameState {
        NameState::Published {
            at: Arc::new(PublishedIn {
                provider: provider.to_string(),
                zone: zone.map(str::to_string),
            }),
        }
    }

    /// In conflict with `party`.
    pub fn conflict(party: Party) -> NameState {
        NameState::Conflict { with: Box::new(party) }
    }

    /// The reason alone.
    pub fn reason(&self) -> Reason {
        match self {
            NameState::Published { .. } => Reason::Published,
            NameState::Pending => Reason::Pending,
            NameState::Conflict { .. } => Reason::Conflict,
            NameState::Invalid { .. } => Reason::Invalid,
            NameState::Refused { .. } => Reason::Refused,
            NameState::Filtered { .. } => Reason::Filtered,
            NameState::Held { .. } => Reason::Held,
        }
    }
}

impl std::fmt::Display for NameState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NameState::Published { at } => match &at.zone {
                Some(z) => write!(f, "published by {} in zone {z}", at.provider),
                None => write!(f, "published by {}", at.provider),
            },
            NameState::Pending => f.write_str("not written yet"),
            NameState::Conflict { with } => write!(f, "held by {with}"),
            NameState::Invalid { field } => write!(f, "invalid: {field}"),
            NameState::Refused { error } => write!(f, "refused by the provider: {error}"),
            NameState::Filtered { flag } => write!(f, "filtered out by {flag}"),
            NameState::Held { why } => write!(f, "kept as it is, the object could not be evaluated: {why}"),
        }
    }
}

/// One name of one object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NameOutcome {
    /// The name as asked; empty when the object could not be evaluated and owns no record yet (its names
    /// are unknown). Boxed, as the set identifier: never grown once made, and 8 bytes less a name than a
    /// `String` (the book keeps one outcome a name for as long as the name is asked for).
    pub name: Box<str>,
    /// The record type (empty, [`RecordType::Other`], with an empty name); the type itself rather than its
    /// text, which was a heap string per name (the book is one of the process's costs per record).
    pub record_type: RecordType,
    /// The set identifier, empty for most records.
    #[serde(skip_serializing_if = "str::is_empty")]
    pub set_identifier: Box<str>,
    /// Where it stands.
    #[serde(flatten)]
    pub state: NameState,
}

/// Every name of one object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ObjectNames {
    /// The object's uid when the sync computed this, so a writer leaves an object made again since alone.
    #[serde(skip)]
    pub uid: Option<Uid>,
    /// Sorted by name, type and set identifier.
    pub names: NameList,
}

impl ObjectNames {
    /// The object's reason: the worst of its names' ([`Reason::ALL`]'s order); `None` without names.
    pub fn reason(&self) -> Option<Reason> {
        self.names
            .states()
            .iter()
            .map(NameState::reason)
            .max_by_key(|r| r.rank())
    }
}

/// Every object's names, as the syncs so far left them.
///
/// Kept so that folding one incremental sync in costs what that sync touched, not what the book holds:
/// each object's names are shared ([`Arc`]) so a copy of the book made while a reader holds it copies
/// pointers, not strings; an index from name to objects finds the objects a sync's names touch; and the
/// names per kind and reason are counted as objects come and go (the `extdns_records` gauge reads them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NameStatuses {
    /// Each key shared with the name index's entries of the object.
    objects: BTreeMap<Arc<ObjectKey>, Arc<ObjectNames>>,
    /// Name → the objects with an outcome at that name ([`ByName`]: a hash and a shared key per name, not
    /// a copy of the name and of each object's key: 350 → 16 B a name, `tests/name_status_memory.rs`).
    by_name: ByName,
    /// The objects with a nameless outcome (failed before owning a record): every incremental fold visits
    /// them, as the sync reports them afresh.
    nameless: BTreeSet<ObjectKey>,
    /// Names per object kind and reason; a pair once counted stays, at zero, so the gauge reads zero
    /// rather than losing the series.
    counts: BTreeMap<(ResourceKind, Reason), usize>,
}

impl NameStatuses {
    /// Each object with its names, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&ObjectKey, &ObjectNames)> {
        self.objects.iter().map(|(k, n)| (k.as_ref(), n.as_ref()))
    }

    /// Each object with its names as shared, in key order: an object a fold did not touch keeps the very
    /// same [`Arc`] from one book to the next, so a reader that kept the last one it saw
    /// ([`Arc::ptr_eq`]) tells what changed without comparing names.
    pub fn iter_shared(&self) -> impl Iterator<Item = (&ObjectKey, &Arc<ObjectNames>)> {
        self.objects.iter().map(|(k, n)| (k.as_ref(), n))
    }

    /// One object's names.
    pub fn get(&self, key: &ObjectKey) -> Option<&ObjectNames> {
        self.objects.get(key).map(Arc::as_ref)
    }

    /// How many objects have names.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// Whether no object has any.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// How many names each object kind has in each reason: every reason of every kind seen so far,
    /// zero included.
    pub fn counts(&self) -> impl Iterator<Item = (ResourceKind, Reason, usize)> + '_ {
        let kinds: BTreeSet<ResourceKind> = self.counts.keys().map(|(k, _)| *k).collect();
        kinds.into_iter().flat_map(move |kind| {
            Reason::ALL
                .into_iter()
                .map(move |r| (kind, r, self.counts.get(&(kind, r)).copied().unwrap_or(0)))
        })
    }

    /// Folds one sync's outcomes in; returns whether anything changed. A full sync (`planned: None`)
    /// replaces everything; an incremental one replaces, for every object, the names it planned (name
    /// keys) and keeps the rest, so an object that asks for a name it did not touch keeps that name's
    /// outcome. An incremental fold visits only the objects in `update`, those with an outcome at a
    /// planned name, and those with a nameless one.
    pub(crate) fn fold(
        &mut self,
        update: BTreeMap<ObjectKey, ObjectNames>,
        planned: Option<&BTreeSet<String>>,
    ) -> bool {
        let Some(planned) = planned else {
            return self.replace_all(update);
        };
        let mut affected: BTreeSet<ObjectKey> = self.nameless.clone();
        affected.extend(update.keys().filter(|k| self.objects.contains_key(*k)).cloned());
        for name in planned {
            affected.extend(self.by_name.get(name).cloned());
        }
        let mut update = update;
        let mut changed = false;
        let mut edits = IndexEdits::default();
        for key in affected {
            let Some(old) = self.objects.get(&key) else { continue };
            let kept = old
                .names
                .iter()
                .filter(|n| !n.name.is_empty() && !planned.contains(name_key(n.name).as_ref()));
            let new = update.remove(&key);
            let uid = new.as_ref().and_then(|n| n.uid).or(old.uid);
            let names = match &new {
                Some(new) => {
                    let mut names: Vec<NameRef<'_>> = kept.chain(&new.names).collect();
                    drop_redundant_nameless(&mut names);
                    sorted(names)
                }
                None => kept.collect(),
            };
            changed |= self.put(key, ObjectNames { uid, names }, &mut edits);
        }
        // Objects with no outcome before: theirs as computed.
        for (key, names) in update {
            changed |= self.put(key, names, &mut edits);
        }
        self.by_name.apply(edits);
        changed
    }

    /// The union of several books (one per provider object, `--dns-provider-crds`): each object's names
    /// from every book, in name order, its uid the first book's that knows it. Given to
    /// [`NameBook::replace`], which keeps the names it already holds where they are the same.
    pub fn union<'a>(books: impl IntoIterator<Item = &'a NameStatuses>) -> BTreeMap<ObjectKey, ObjectNames> {
        let mut objects: BTreeMap<ObjectKey, (Option<Uid>, Vec<NameRef<'a>>)> = BTreeMap::new();
        for book in books {
            for (key, names) in book.iter() {
                let (uid, merged) = objects.entry(key.clone()).or_default();
                *uid = uid.or(names.uid);
                merged.extend(&names.names);
            }
        }
        objects
            .into_iter()
            .map(|(key, (uid, names))| {
                (
                    key,
                    ObjectNames {
                        uid,
                        names: sorted(names),
                    },
                )
            })
            .collect()
    }

    fn replace_all(&mut self, update: BTreeMap<ObjectKey, ObjectNames>) -> bool {
        let gone: Vec<ObjectKey> = self
            .objects
            .keys()
            .filter(|k| !update.contains_key(k.as_ref()))
            .map(|k| k.as_ref().clone())
            .collect();
        let mut changed = !gone.is_empty();
        let mut edits = IndexEdits::default();
        for key in gone {
            self.remove(&key, &mut edits);
        }
        for (key, names) in update {
            changed |= self.put(key, names, &mut edits);
        }
        self.by_name.apply(edits);
        changed
    }

    /// Sets `key`'s names (none: the object leaves the book); whether that changed anything. The index's
    /// changes go to `edits`.
    fn put(&mut self, key: ObjectKey, names: ObjectNames, edits: &mut IndexEdits) -> bool {
        if self.objects.get(&key).map(Arc::as_ref) == Some(&names) {
            return false;
        }
        let had = self.remove(&key, edits);
        if names.names.is_empty() {
            return had;
        }
        let key = Arc::new(key);
        for n in &names.names {
            *self.counts.entry((key.kind, n.state.reason())).or_default() += 1;
            if n.name.is_empty() {
                self.nameless.insert(key.as_ref().clone());
            } else {
                edits.enter(n.name, &key);
            }
        }
        self.objects.insert(key, Arc::new(names));
        true
    }

    /// Takes `key` out of the book and its counts, and its index entries out through `edits`; whether it
    /// was there.
    fn remove(&mut self, key: &ObjectKey, edits: &mut IndexEdits) -> bool {
        let Some((shared, old)) = self.objects.remove_entry(key) else {
            return false;
        };
        self.nameless.remove(key);
        for n in &old.names {
            if let Some(c) = self.counts.get_mut(&(key.kind, n.state.reason())) {
                *c = c.saturating_sub(1);
            }
        }
        edits.leave(shared);
        true
    }
}

/// An incremental sync sees only the records of the names it plans, so a failed object whose records lie
/// elsewhere comes with a nameless outcome: it says nothing its named ones do not.
fn drop_redundant_nameless(names: &mut Vec<NameRef<'_>>) {
    let named: BTreeSet<Reason> = names
        .iter()
        .filter(|n| !n.name.is_empty())
        .map(|n| n.state.reason())
        .collect();
    names.retain(|n| !n.name.is_empty() || !named.contains(&n.state.reason()));
}

/// Outcomes made elsewhere (from manifests, in tests): each object's names as given.
impl FromIterator<(ObjectKey, ObjectNames)> for NameStatuses {
    fn from_iter<I: IntoIterator<Item = (ObjectKey, ObjectNames)>>(iter: I) -> Self {
        let mut statuses = NameStatuses::default();
        statuses.replace_all(iter.into_iter().collect());
        statuses
    }
}

/// An object's outcomes sorted, without the same one twice, as the book keeps them: made from borrowed
/// outcomes, so a fold or a union copies each name once, into the list.
fn sorted(mut names: Vec<NameRef<'_>>) -> NameList {
    names.sort_by(order);
    names.dedup();
    names.into_iter().collect()
}

fn order(a: &NameRef<'_>, b: &NameRef<'_>) -> std::cmp::Ordering {
    // By the type's text, not its variant order: the order names were always listed in.
    (&a.name, a.record_type.as_str(), &a.set_identifier).cmp(&(&b.name, b.record_type.as_str(), &b.set_identifier))
}

/// Where the latest [`NameStatuses`] are kept: written by the controller after each sync, read by the
/// `/summary` endpoint, the `extdns_records` gauge and the status writers, which [`NameBook::subscribe`]
/// wakes when it changes.
#[derive(Debug, Clone)]
pub struct NameBook {
    latest: Arc<watch::Sender<Arc<NameStatuses>>>,
    /// How many times the outcomes changed: what a reader that must not hold them (and so make every fold
    /// copy them) compares.
    version: Arc<std::sync::atomic::AtomicU64>,
    /// How many syncs folded their outcomes in, changed or not: each is a sync whose write is done.
    folds: Arc<watch::Sender<u64>>,
}

impl Default for NameBook {
    fn default() -> Self {
        NameBook {
            latest: Arc::new(watch::Sender::new(Arc::default())),
            version: Arc::default(),
            folds: Arc::new(watch::Sender::new(0)),
        }
    }
}

impl NameBook {
    /// The latest outcomes (empty before the first sync).
    pub fn latest(&self) -> Arc<NameStatuses> {
        self.latest.borrow().clone()
    }

    /// A receiver woken each time a sync changes the outcomes.
    pub fn subscribe(&self) -> watch::Receiver<Arc<NameStatuses>> {
        self.latest.subscribe()
    }

    /// Folds one sync's outcomes in ([`NameStatuses::fold`]); wakes readers only if something changed, and
    /// says whether it did. The book is changed in place; only while a reader holds the previous outcomes
    /// is it copied first, and that copy shares every object's names.
    pub(crate) fn fold(&self, update: BTreeMap<ObjectKey, ObjectNames>, planned: Option<&BTreeSet<String>>) -> bool {
        let changed = self
            .latest
            .send_if_modified(|latest| Arc::make_mut(latest).fold(update, planned));
        if changed {
            self.version.fetch_add(1, std::sync::atomic::Ordering::Release);
        }
        self.folds.send_modify(|n| *n = n.wrapping_add(1));
        changed
    }

    /// A sync ended with no outcomes to fold (its changed objects publish no names): told to the
    /// [`NameBook::folds`] readers all the same, since the change that started it is done with.
    pub(crate) fn passed(&self) {
        self.folds.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// A receiver woken after every sync that folded its outcomes in, whether they changed or not: the
    /// sync's write to DNS is done by then. The status writer, which holds its writes back while a change
    /// of the view is on its way to DNS, waits for it.
    pub fn folds(&self) -> watch::Receiver<u64> {
        self.folds.subscribe()
    }

    /// Increases each time the outcomes change; read it before [`NameBook::latest`].
    pub fn version(&self) -> u64 {
        self.version.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Makes the outcomes `objects` (a union made elsewhere, [`NameStatuses::union`]); wakes readers only
    /// if they differ. In place, like a fold: an object whose names are the same keeps the very same
    /// shared names, so the status writer, which skips an object whose names it last saw
    /// ([`NameStatuses::iter_shared`]), does not write every object's status again at every merge.
    pub(crate) fn replace(&self, objects: BTreeMap<ObjectKey, ObjectNames>) {
        let changed = self
            .latest
            .send_if_modified(|latest| Arc::make_mut(latest).replace_all(objects));
        if changed {
            self.version.fetch_add(1, std::sync::atomic::Ordering::Release);
        }
    }
}

/// One desired endpoint as the outcome needs it: taken before the plan consumes the endpoints (names and
/// shared object keys only, no targets).
#[derive(Debug, Clone)]
pub(crate) struct Asked {
    name: String,
    record_type: RecordType,
    set_identifier: String,
    objects: ObjectRefs,
    /// The `resource` label the record would be written with, to tell the conflict resolver's winner.
    resource: String,
}

impl Asked {
    /// What `desired` asks for.
    pub(crate) fn of(desired: &[Endpoint]) -> Vec<Asked> {
        desired
            .iter()
            .filter(|e| !e.ref_objects.is_empty())
            .map(|e| Asked {
                name: e.dns_name.clone(),
                record_type: e.record_type.clone(),
                set_identifier: e.set_identifier.clone(),
                objects: e.ref_objects.clone(),
                resource: e.resource().map(|r| r.into_owned()).unwrap_or_default(),
            })
            .collect()
    }
}

/// What one sync knows, as the outcome reads it.
pub(crate) struct SyncFacts<'a> {
    /// What the sources asked for ([`Asked::of`]).
    pub asked: &'a [Asked],
    /// The records the plan compared with.
    pub current: &'a [Endpoint],
    /// The plan's filters and owner id.
    pub plan: &'a PlanConfig,
    /// The provider's zones.
    pub provider_filter: &'a DomainFilter,
    /// The provider's name, for the published message.
    pub provider: &'a str,
    /// The changes the provider took.
    pub applied: &'a [&'a Change],
    /// The changes it refused.
    pub errored: &'a [(&'a Change, Option<&'a FailureReason>)],
    /// The changes a dry run would have made and did not: a record one would write for another object
    /// is that object's, so the name is a conflict already, and one it would write for this object is
    /// pending (not published until written).
    pub unwritten: &'a [Change],
    /// The objects the sources could not evaluate.
    pub failed: &'a Failures,
    /// The uids of the objects, as the sync saw them.
    pub uids: &'a dyn Fn(&ObjectKey) -> Option<Uid>,
}

/// One row of the plan: a name key, type and set identifier, borrowed from the sync's endpoints (a name
/// already in its key's spelling, as names almost always are, is not copied): the outcome is computed after
/// every sync, for every record and every name asked for.
type Row<'a> = (Cow<'a, str>, &'a str, &'a str);

fn row_of(e: &Endpoint) -> Row<'_> {
    (name_key(&e.dns_name), e.record_type.as_str(), &e.set_identifier)
}

/// Who holds each row: the `resource` label of the record there.
type Holders<'a> = BTreeMap<Row<'a>, Cow<'a, str>>;

/// The outcome of every object `facts` names.
pub(crate) fn compute<'a>(facts: &SyncFacts<'a>) -> BTreeMap<ObjectKey, ObjectNames> {
    let owner = facts.plan.owner_id.as_str();
    // Who holds each row after this sync: what was written, else what was there.
    let mut holder: Holders<'a> = BTreeMap::new();
    let mut foreign: BTreeMap<Cow<'a, str>, &'a str> = BTreeMap::new();
    for e in facts.current {
        let mine = owner.is_empty() || e.owner() == Some(owner);
        if mine {
            holder.insert(row_of(e), e.resource().unwrap_or_default());
        } else {
            foreign
                .entry(name_key(&e.dns_name))
                .or_insert_with(|| e.owner().unwrap_or_default());
        }
    }
    let mut refused: BTreeMap<Row<'a>, String> = BTreeMap::new();
    for (c, why) in facts.errored {
        let e = c.endpoint();
        let error = why.map_or_else(
            || "the write failed (see the extdns log)".to_string(),
            |w| w.to_string(),
        );
        refused.insert(row_of(e), error);
    }
    for c in facts.applied {
        let e = c.endpoint();
        match c {
            Change::Delete(_) => {
                holder.remove(&row_of(e));
            }
            _ => {
                holder.insert(row_of(e), e.resource().unwrap_or_default());
            }
        }
    }

    // A dry run's changes as if written: a row it would write for another object is that object's (a
    // conflict already, a CNAME beside it too), and one it would write for this object is pending.
    let mut would_write: BTreeSet<Row<'a>> = BTreeSet::new();
    for c in facts.unwritten {
        let e = c.endpoint();
        let row = row_of(e);
        if refused.contains_key(&row) {
            continue;
        }
        match c {
            Change::Delete(_) => {
                holder.remove(&row);
            }
            _ => {
                holder.insert(row.clone(), e.resource().unwrap_or_default());
                would_write.insert(row);
            }
        }
    }

    let mut out: Outcomes = BTreeMap::new();
    let mut shared = SharedNames::new(facts.provider);
    for a in facts.asked {
        let row = (name_key(&a.name), a.record_type.as_str(), a.set_identifier.as_str());
        let state = match holder.get(&row) {
            Some(resource) if would_write.contains(&row) && *resource != a.resource => {
                NameState::conflict(Party::Object(resource.as_ref().into()))
            }
            _ if would_write.contains(&row) => NameState::Pending,
            _ => state_of(facts, a, &row, &holder, &foreign, &refused, &mut shared),
        };
        for key in a.objects.iter() {
            if facts.failed.contains(key) && matches!(facts.failed.held(key), Some(Held::All)) {
                continue;
            }
            push(
                &mut out,
                facts,
                key,
                a.name.clone(),
                a.record_type.clone(),
                &a.set_identifier,
                state.clone(),
            );
        }
    }
    held_names(facts, &mut out);
    out.into_iter()
        .map(|(key, (uid, names))| {
            let names = sorted(names.iter().map(NameOutcome::borrowed).collect());
            (key, ObjectNames { uid, names })
        })
        .collect()
}

/// Each object's uid and outcomes, as a sync pushes them.
type Outcomes = BTreeMap<ObjectKey, (Option<Uid>, Vec<NameOutcome>)>;

fn state_of(
    facts: &SyncFacts<'_>,
    a: &Asked,
    row: &Row<'_>,
    holder: &Holders<'_>,
    foreign: &BTreeMap<Cow<'_, str>, &str>,
    refused: &BTreeMap<Row<'_>, String>,
    shared: &mut SharedNames<'_>,
) -> NameState {
    if let Some(flag) = filtered_by(facts.plan, facts.provider_filter, &a.name, &a.record_type) {
        return NameState::Filtered { flag };
    }
    if let Some(error) = refused.get(row) {
        return NameState::Refused {
            error: error.as_str().into(),
        };
    }
    match holder.get(row) {
        Some(resource) if *resource == a.resource => shared.published(facts.provider_filter, &a.name),
        Some(resource) => NameState::conflict(Party::Object(resource.as_ref().into())),
        None => match foreign.get(&row.0) {
            Some(other) => NameState::conflict(Party::Owner((*other).into())),
            None => match cname_blocked_by(a, row, holder) {
                Some(resource) => NameState::conflict(Party::Object(resource.into())),
                None => NameState::Pending,
            },
        },
    }
}

/// The provider and zones as the outcomes of one sync share them: one value per zone rather than one per
/// published name, which the book keeps an outcome for (`tests/name_status_memory.rs`).
struct SharedNames<'p> {
    provider: &'p str,
    /// The places named so far: a provider has a handful of zones, so a scan finds one.
    places: Vec<Arc<PublishedIn>>,
}

impl<'p> SharedNames<'p> {
    fn new(provider: &'p str) -> SharedNames<'p> {
        SharedNames {
            provider,
            places: Vec::new(),
        }
    }

    /// `name` published by the provider, in its zone.
    fn published(&mut self, provider_zones: &DomainFilter, name: &str) -> NameState {
        let zone = zone_of(provider_zones, name);
        let known = self.places.iter().find(|p| p.zone == zone);
        let at = match known {
            Some(at) => Arc::clone(at),
            None => {
                let at = Arc::new(PublishedIn {
                    provider: self.provider.to_string(),
                    zone,
                });
                self.places.push(Arc::clone(&at));
                at
            }
        };
        NameState::Published { at }
    }
}

/// A CNAME cannot share its name with another record, and the plan drops the CNAME asked beside another
/// type (external-dns's rule): the holder of a record of another type at the name, if there is one.
fn cname_blocked_by<'h, 'a>(a: &Asked, row: &Row<'a>, holder: &'h Holders<'a>) -> Option<&'h str> {
    if a.record_type != RecordType::Cname {
        return None;
    }
    let start = (row.0.clone(), "", "");
    holder
        .range(start..)
        .take_while(|((name, _, _), _)| *name == row.0)
        .find(|((_, t, _), _)| *t != row.1)
        .map(|(_, resource)| resource.as_ref())
}

/// The flag that keeps `name`/`record_type` out of the plan, if one does (the plan's own admission rule).
fn filtered_by(
    plan: &PlanConfig,
    provider: &DomainFilter,
    name: &str,
    record_type: &RecordType,
) -> Option<&'static str> {
    if plan.excluded_types.contains(record_type) {
        return Some("--exclude-record-types");
    }
    if !plan.managed_types.contains(record_type) {
        return Some("--managed-record-types");
    }
    outside_zones(plan, provider, name)
}

/// The filter that keeps `name` out whatever its type, if one does: the plan's domain filter, or the
/// provider's zones (`extdns explain` calls that "no zone").
pub fn outside_zones(plan: &PlanConfig, provider: &DomainFilter, name: &str) -> Option<&'static str> {
    if plan.domain_filter.is_configured() && !plan.domain_filter.matches(name) {
        return Some("--domain-filter/--exclude-domains");
    }
    if provider.is_configured() && !provider.matches(name) {
        return Some(PROVIDER_ZONES);
    }
    None
}

/// How [`NameState::Filtered`] names the provider's zones: a name in none of them.
pub const PROVIDER_ZONES: &str = "the provider's zones (--zone-id-filter, --domain-filter)";

/// The provider zone `name` falls in: the longest include it is or ends in (`None`: no zone, or a provider
/// that names none); public so `extdns explain` maps a name no object asks for.
pub fn zone_of(provider: &DomainFilter, name: &str) -> Option<String> {
    let name = name_key(name);
    provider
        .includes()
        .iter()
        .filter(|z| {
            let z = z.trim_end_matches('.').to_ascii_lowercase();
            *name == z || name.ends_with(&format!(".{z}"))
        })
        .max_by_key(|z| z.len())
        .cloned()
}

/// The records of objects the sources could not evaluate: kept as they are, so Held (the whole object
/// failed) or Invalid (only the parts the source named); an object that owns none yet gets one nameless
/// outcome, so its failure shows all the same.
fn held_names(facts: &SyncFacts<'_>, out: &mut Outcomes) {
    let mut records: BTreeMap<ObjectKey, Vec<&Endpoint>> = BTreeMap::new();
    for e in facts.current {
        if let Some(key) = e.resource().and_then(|r| ObjectKey::from_resource_label(&r))
            && facts.failed.contains(&key)
        {
            records.entry(key).or_default().push(e);
        }
    }
    for (key, why) in facts.failed.iter() {
        let why = why
            .unwrap_or("it could not be evaluated (see the extdns log)")
            .to_string();
        let held = facts.failed.held(key);
        let mut any = false;
        for e in records.get(key).into_iter().flatten() {
            let state = match held {
                Some(Held::Part(part)) => {
                    if !part.keeps(&e.dns_name, &e.record_type, false) {
                        continue;
                    }
                    NameState::Invalid {
                        field: why.as_str().into(),
                    }
                }
                _ => NameState::Held {
                    why: why.as_str().into(),
                },
            };
            any = true;
            push(
                out,
                facts,
                key,
                e.dns_name.clone(),
                e.record_type.clone(),
                &e.set_identifier,
                state,
            );
        }
        if !any {
            let state = match held {
                Some(Held::Part(_)) => NameState::Invalid { field: why.into() },
                _ => NameState::Held { why: why.into() },
            };
            push(out, facts, key, String::new(), RecordType::from(""), "", state);
        }
    }
}

fn push(
    out: &mut Outcomes,
    facts: &SyncFacts<'_>,
    key: &ObjectKey,
    name: String,
    record_type: RecordType,
    set_identifier: &str,
    state: NameState,
) {
    let (_, names) = out
        .entry(key.clone())
        .or_insert_with(|| ((facts.uids)(key), Vec::new()));
    names.push(NameOutcome {
        name: name.into(),
        record_type,
        set_identifier: set_identifier.into(),
        state,
    });
}

#[cfg(test)]
mod tests {
    use extdns_endpoint::{Change, DomainFilter, Endpoint, RecordType, label};
    use extdns_informer::ResourceKind;
    use extdns_provider::FailureKind;
    use extdns_source::HeldRecords;

    use super::*;

    const OWNER: &str = "me";

    fn svc(name: &str) -> ObjectKey {
        ObjectKey::new(ResourceKind::Service, "shop", name)
    }

    /// What `object` asks for: `name` A `target`.
    fn desired(object: &str, name: &str, target: &str) -> Endpoint {
        let mut e = Endpoint::new(name, RecordType::A, [target]);
        e.ref_objects.insert(svc(object));
        e
    }

    /// A record in the zone of `owner`, written for `object`.
    fn record(object: &str, name: &str, owner: &str) -> Endpoint {
        Endpoint::new(name, RecordType::A, ["192.0.2.1"])
            .with_label(label::OWNER, owner)
            .with_label(label::RESOURCE, svc(object).resource_label())
    }

    fn plan() -> PlanConfig {
        PlanConfig {
            owner_id: OWNER.to_string(),
            domain_filter: DomainFilter::new(&["example.org"], &[]),
            ..PlanConfig::default()
        }
    }

    struct Case {
        desired: Vec<Endpoint>,
        current: Vec<Endpoint>,
        applied: Vec<Change>,
        errored: Vec<(Change, Option<FailureReason>)>,
        unwritten: Vec<Change>,
        failed: Failures,
    }

    impl Case {
        fn new(desired: Vec<Endpoint>) -> Case {
            Case {
                desired,
                current: Vec::new(),
                applied: Vec::new(),
                errored: Vec::new(),
                unwritten: Vec::new(),
                failed: Failures::new(),
            }
        }

        fn run(&self) -> BTreeMap<ObjectKey, ObjectNames> {
            let asked = Asked::of(&self.desired);
            let plan = plan();
            let provider = DomainFilter::new(&["example.org", "sub.example.org"], &[]);
            let applied: Vec<&Change> = self.applied.iter().collect();
            let errored: Vec<(&Change, Option<&FailureReason>)> =
                self.errored.iter().map(|(c, w)| (c, w.as_ref())).collect();
            let uids = |_: &ObjectKey| None;
            compute(&SyncFacts {
                asked: &asked,
                current: &self.current,
                plan: &plan,
                provider_filter: &provider,
                provider: "rfc2136",
                applied: &applied,
                errored: &errored,
                unwritten: &self.unwritten,
                failed: &self.failed,
                uids: &uids,
            })
        }
    }

    /// The one state `object` has at `name`.
    fn state(out: &BTreeMap<ObjectKey, ObjectNames>, object: &str, name: &str) -> NameState {
        let names = &out[&svc(object)].names;
        let found: Vec<_> = names.iter().filter(|n| *n.name == *name).collect();
        assert_eq!(found.len(), 1, "{names:?}");
        found[0].state.clone()
    }

    #[test]
    fn a_written_name_is_published_in_its_zone() {
        let mut case = Case::new(vec![desired("web", "web.sub.example.org", "192.0.2.1")]);
        case.applied = vec![Change::Create(desired("web", "web.sub.example.org", "192.0.2.1"))];
        assert_eq!(
            state(&case.run(), "web", "web.sub.example.org"),
            NameState::published("rfc2136", Some("sub.example.org"))
        );
        // Already there and ours: published without a write.
        let mut case = Case::new(vec![desired("web", "web.example.org", "192.0.2.1")]);
        case.current = vec![record("web", "web.example.org", OWNER)];
        assert_eq!(state(&case.run(), "web", "web.example.org").reason(), Reason::Published);
    }

    #[test]
    fn a_name_not_written_yet_is_pending() {
        let case = Case::new(vec![desired("web", "web.example.org", "192.0.2.1")]);
        assert_eq!(state(&case.run(), "web", "web.example.org"), NameState::Pending);
    }

    #[test]
    fn a_name_another_object_holds_is_a_conflict_naming_it() {
        let mut case = Case::new(vec![
            desired("a", "web.example.org", "192.0.2.1"),
            desired("b", "web.example.org", "192.0.2.2"),
        ]);
        case.applied = vec![Change::Create(desired("a", "web.example.org", "192.0.2.1"))];
        let out = case.run();
        assert_eq!(state(&out, "a", "web.example.org").reason(), Reason::Published);
        assert_eq!(
            state(&out, "b", "web.example.org"),
            NameState::conflict(Party::Object("service/shop/a".into()))
        );
    }

    #[test]
    fn a_dry_run_names_the_object_it_would_write_the_name_for_and_the_other_one_a_conflict() {
        let mut case = Case::new(vec![
            desired("a", "web.example.org", "192.0.2.1"),
            desired("b", "web.example.org", "192.0.2.2"),
        ]);
        case.unwritten = vec![Change::Create(desired("a", "web.example.org", "192.0.2.1"))];
        let out = case.run();
        assert_eq!(state(&out, "a", "web.example.org"), NameState::Pending);
        assert_eq!(
            state(&out, "b", "web.example.org"),
            NameState::conflict(Party::Object("service/shop/a".into()))
        );
    }

    #[test]
    fn a_dry_run_names_the_object_whose_address_would_block_a_cname() {
        let mut alias = Endpoint::new("web.example.org", RecordType::Cname, ["elsewhere.example.net"]);
        alias.ref_objects.insert(svc("alias"));
        let mut case = Case::new(vec![desired("web", "web.example.org", "192.0.2.1"), alias]);
        case.unwritten = vec![Change::Create(desired("web", "web.example.org", "192.0.2.1"))];
        let out = case.run();
        assert_eq!(state(&out, "web", "web.example.org"), NameState::Pending);
        assert_eq!(
            state(&out, "alias", "web.example.org"),
            NameState::conflict(Party::Object("service/shop/web".into()))
        );
    }

    #[test]
    fn a_cname_beside_another_objects_address_is_a_conflict_naming_it() {
        let mut alias = Endpoint::new("web.example.org", RecordType::Cname, ["elsewhere.example.net"]);
        alias.ref_objects.insert(svc("alias"));
        let mut case = Case::new(vec![desired("web", "web.example.org", "192.0.2.1"), alias]);
        case.current = vec![record("web", "web.example.org", OWNER)];
        let out = case.run();
        assert_eq!(state(&out, "web", "web.example.org").reason(), Reason::Published);
        assert_eq!(
            state(&out, "alias", "web.example.org"),
            NameState::conflict(Party::Object("service/shop/web".into()))
        );
    }

    #[test]
    fn a_name_another_owner_holds_is_a_conflict_naming_the_owner() {
        let mut case = Case::new(vec![desired("web", "web.example.org", "192.0.2.1")]);
        case.current = vec![record("other", "web.example.org", "cluster-b")];
        assert_eq!(
            state(&case.run(), "web", "web.example.org"),
            NameState::conflict(Party::Owner("cluster-b".into()))
        );
    }

    #[test]
    fn a_change_the_provider_refused_is_refused_with_its_error() {
        let mut case = Case::new(vec![desired("web", "web.example.org", "192.0.2.1")]);
        let change = Change::Create(desired("web", "web.example.org", "192.0.2.1"));
        let why = FailureReason {
            kind: FailureKind::Refused,
            message: "NOTZONE".into(),
        };
        case.errored = vec![(change, Some(why))];
        assert_eq!(
            state(&case.run(), "web", "web.example.org"),
            NameState::Refused {
                error: "NOTZONE".into()
            }
        );
    }

    #[test]
    fn a_name_outside_the_filters_is_filtered_by_the_flag_that_keeps_it_out() {
        let mut aaaa = desired("web", "v6.example.org", "2001:db8::1");
        aaaa.record_type = RecordType::Mx;
        let case = Case::new(vec![desired("web", "web.example.net", "192.0.2.1"), aaaa]);
        let out = case.run();
        assert_eq!(
            state(&out, "web", "web.example.net"),
            NameState::Filtered {
                flag: "--domain-filter/--exclude-domains"
            }
        );
        assert_eq!(
            state(&out, "web", "v6.example.org"),
            NameState::Filtered {
                flag: "--managed-record-types"
            }
        );
    }

    #[test]
    fn a_failed_object_holds_its_records_and_a_failed_part_is_invalid() {
        let mut case = Case::new(vec![desired("part", "ok.example.org", "192.0.2.1")]);
        case.current = vec![
            record("web", "web.example.org", OWNER),
            record("part", "bad.example.org", OWNER),
        ];
        case.failed
            .insert(svc("web"), Some("annotation ttl: not a duration".into()));
        let mut held = HeldRecords::new();
        held.name("bad.example.org", None);
        case.failed
            .insert_part(svc("part"), Some("spec.endpoints[1]: illegal target".into()), held);
        case.failed.insert(svc("new"), None);
        let out = case.run();
        assert_eq!(
            state(&out, "web", "web.example.org"),
            NameState::Held {
                why: "annotation ttl: not a duration".into()
            }
        );
        assert_eq!(
            state(&out, "part", "bad.example.org"),
            NameState::Invalid {
                field: "spec.endpoints[1]: illegal target".into()
            }
        );
        assert_eq!(state(&out, "part", "ok.example.org"), NameState::Pending);
        // Failing before owning any record: one nameless outcome says so.
        assert_eq!(state(&out, "new", "").reason(), Reason::Held);
        assert_eq!(out[&svc("part")].reason(), Some(Reason::Invalid));
    }

    #[test]
    fn an_incremental_fold_replaces_only_the_planned_names() {
        let outcome = |name: &str, state: NameState| NameOutcome {
            name: name.into(),
            record_type: "A".into(),
            set_identifier: Box::default(),
            state,
        };
        let book = NameBook::default();
        let mut rx = book.subscribe();
        let web = ObjectNames {
            uid: None,
            names: vec![
                outcome("a.example.org", NameState::Pending),
                outcome("b.example.org", NameState::Pending),
            ]
            .into(),
        };
        let mut folds = book.folds();
        book.fold(BTreeMap::from([(svc("web"), web.clone())]), None);
        assert!(rx.has_changed().unwrap_or(false));
        rx.mark_unchanged();
        folds.mark_unchanged();
        // The same again: readers are not woken, but the sync is told done (the status writer waits for it).
        book.fold(BTreeMap::from([(svc("web"), web)]), None);
        assert!(!rx.has_changed().unwrap_or(true));
        assert!(folds.has_changed().unwrap_or(false), "every fold is a sync done");
        let published = NameState::published("p", None);
        let update = ObjectNames {
            uid: None,
            names: vec![outcome("a.example.org", published.clone())].into(),
        };
        let planned = BTreeSet::from(["a.example.org".to_string()]);
        book.fold(BTreeMap::from([(svc("web"), update)]), Some(&planned));
        let latest = book.latest();
        let names = &latest.get(&svc("web")).map(|n| n.names.clone()).unwrap_or_default();
        assert_eq!(
            names.iter().map(|n| n.state.reason()).collect::<Vec<_>>(),
            [Reason::Published, Reason::Pending]
        );
        // The object's names planned, and none asked any more: the object is gone from the book.
        let planned = BTreeSet::from(["a.example.org".to_string(), "b.example.org".to_string()]);
        book.fold(BTreeMap::new(), Some(&planned));
        assert!(book.latest().is_empty());
    }

    fn one(name: &str, state: NameState) -> ObjectNames {
        ObjectNames {
            uid: None,
            names: vec![NameOutcome {
                name: name.into(),
                record_type: "A".into(),
                set_identifier: Box::default(),
                state,
            }]
            .into(),
        }
    }

    /// The book after folds, and the book built afresh from its objects: the same objects, index and
    /// (non-zero) counts.
    fn assert_consistent(book: &NameStatuses) {
        let fresh: NameStatuses = book.iter().map(|(k, n)| (k.clone(), n.clone())).collect();
        assert_eq!(fresh.objects, book.objects);
        assert_eq!(fresh.by_name, book.by_name);
        assert_eq!(fresh.nameless, book.nameless);
        let nonzero = |b: &NameStatuses| b.counts().filter(|c| c.2 > 0).collect::<Vec<_>>();
        assert_eq!(nonzero(&fresh), nonzero(book));
    }

    #[test]
    fn an_incremental_fold_leaves_the_objects_it_does_not_touch_shared_and_counts_follow() {
        let mut book = NameStatuses::default();
        let full: BTreeMap<ObjectKey, ObjectNames> = (0..100)
            .map(|i| {
                (
                    svc(&format!("s{i}")),
                    one(&format!("s{i}.example.org"), NameState::Pending),
                )
            })
            .collect();
        assert!(book.fold(full, None));
        let before: Vec<Arc<ObjectNames>> = book.objects.values().cloned().collect();
        let count = |b: &NameStatuses, r: Reason| {
            b.counts()
                .find(|c| c.0 == ResourceKind::Service && c.1 == r)
                .map_or(0, |c| c.2)
        };
        assert_eq!(count(&book, Reason::Pending), 100);
        // One name planned: its object's outcome replaced, the 99 others the very same allocations.
        let planned = BTreeSet::from(["s7.example.org".to_string()]);
        let published = NameState::published("p", None);
        let update = BTreeMap::from([(svc("s7"), one("s7.example.org", published.clone()))]);
        assert!(book.fold(update.clone(), Some(&planned)));
        let shared = book
            .objects
            .values()
            .zip(&before)
            .filter(|(a, b)| Arc::ptr_eq(a, b))
            .count();
        assert_eq!(shared, 99);
        assert_eq!(
            (count(&book, Reason::Pending), count(&book, Reason::Published)),
            (99, 1)
        );
        // The same again changes nothing.
        assert!(!book.fold(update, Some(&planned)));
        // A failed object without records (nameless), then the name of another object deleted.
        let failed = ObjectNames {
            uid: None,
            names: NameList::from(vec![NameOutcome {
                name: Box::default(),
                record_type: RecordType::from(""),
                set_identifier: Box::default(),
                state: NameState::Held { why: "bad".into() },
            }]),
        };
        book.fold(BTreeMap::from([(svc("new"), failed)]), Some(&BTreeSet::new()));
        assert_eq!(count(&book, Reason::Held), 1);
        assert_consistent(&book);
        let planned = BTreeSet::from(["s3.example.org".to_string()]);
        assert!(book.fold(BTreeMap::new(), Some(&planned)));
        assert!(book.get(&svc("s3")).is_none());
        assert!(
            book.get(&svc("new")).is_none(),
            "a nameless outcome lasts one sync, as the sync reports it afresh"
        );
        assert_eq!(count(&book, Reason::Held), 0, "the series stays, at zero");
        assert_eq!(count(&book, Reason::Pending), 98);
        assert_consistent(&book);
        // A full sync replaces it all.
        assert!(book.fold(BTreeMap::from([(svc("s1"), one("s1.example.org", published))]), None));
        assert_eq!(book.len(), 1);
        assert_consistent(&book);
    }

    #[test]
    fn a_merge_of_unchanged_children_leaves_every_object_shared_and_wakes_no_reader() {
        // Two provider objects' books (`--dns-provider-crds`), one object in both.
        let child = |names: &[&str]| {
            let mut book = NameStatuses::default();
            let objects = names
                .iter()
                .map(|n| (svc(n), one(&format!("{n}.example.org"), NameState::Pending)))
                .collect();
            book.fold(objects, None);
            book
        };
        let (one_book, two_book) = (child(&["a", "b"]), child(&["b", "c"]));
        let root = NameBook::default();
        root.replace(NameStatuses::union([&one_book, &two_book]));
        let first = root.latest();
        assert_eq!(first.len(), 3);
        assert_eq!(
            first.get(&svc("b")).map(|n| n.names.len()),
            Some(1),
            "the same name once"
        );
        let version = root.version();
        // The children unchanged: the same shared names, no new version.
        root.replace(NameStatuses::union([&one_book, &two_book]));
        let again = root.latest();
        assert_eq!(root.version(), version, "nothing changed");
        assert!(
            first
                .iter_shared()
                .zip(again.iter_shared())
                .all(|((_, a), (_, b))| Arc::ptr_eq(a, b)),
            "every object keeps its shared names"
        );
        // One child's object changes: only it gets new names.
        let published = NameState::published("p", None);
        let mut changed = child(&["a", "b"]);
        let planned = BTreeSet::from(["b.example.org".to_string()]);
        changed.fold(
            BTreeMap::from([(svc("b"), one("b.example.org", published))]),
            Some(&planned),
        );
        root.replace(NameStatuses::union([&changed, &two_book]));
        let after = root.latest();
        assert!(root.version() > version);
        let moved: Vec<String> = first
            .iter_shared()
            .zip(after.iter_shared())
            .filter(|((_, a), (_, b))| !Arc::ptr_eq(a, b))
            .map(|((k, _), _)| k.name.clone())
            .collect();
        assert_eq!(moved, vec!["b".to_string()]);
        assert_consistent(&after);
    }

    #[test]
    fn a_fold_while_a_reader_holds_the_book_leaves_the_reader_its_copy() {
        let book = NameBook::default();
        book.fold(
            BTreeMap::from([(svc("a"), one("a.example.org", NameState::Pending))]),
            None,
        );
        let held = book.latest();
        let planned = BTreeSet::from(["a.example.org".to_string()]);
        let update = BTreeMap::from([(
            svc("a"),
            one(
                "a.example.org",
                NameState::Filtered {
                    flag: "--domain-filter",
                },
            ),
        )]);
        assert!(book.fold(update, Some(&planned)));
        assert_eq!(held.get(&svc("a")).and_then(ObjectNames::reason), Some(Reason::Pending));
        assert_eq!(
            book.latest().get(&svc("a")).and_then(ObjectNames::reason),
            Some(Reason::Filtered)
        );
    }
}
