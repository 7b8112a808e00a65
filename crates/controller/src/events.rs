//! What a sync tells the cluster (`--events-emit`): Kubernetes Events on the objects whose records it
//! wrote, could not write, or would not plan.
//!
//! The controller only decides *what* to say; an [`EventSink`] (the binary's, over kube's event recorder)
//! says it. That keeps the API client out of the controller and the sources, and lets tests read the
//! events as plain values.

use std::collections::BTreeMap;

use async_trait::async_trait;
use extdns_endpoint::{Change, Endpoint, ObjectRefs};
use extdns_informer::{ClusterStore, ObjectKey, Uid};
use extdns_provider::FailureReason;

/// The longest note an event carries: the API server rejects notes over 1 kB.
pub const NOTE_MAX: usize = 1024;

/// Normal for what went as asked, Warning for what did not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum EventKind {
    /// What went as the object asks.
    Normal,
    /// What did not, so `kubectl get events --field-selector type=Warning` finds it.
    Warning,
}

/// Why an event was emitted. The first three are external-dns's reasons; the others are ours (external-dns
/// has no event for them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum EventReason {
    /// A record the object asks for now exists as asked.
    RecordReady,
    /// A record the object no longer asks for was removed.
    RecordDeleted,
    /// A record the object asks for could not be written.
    RecordError,
    /// The object asks for something that cannot be published (a bad annotation, a failing template); its
    /// records are kept as they are.
    InvalidInput,
    /// The deletion guard held back this delete.
    DeletionHeldBack,
}

impl EventReason {
    /// The reason as Kubernetes shows it (external-dns's spelling for the first three).
    pub fn as_str(self) -> &'static str {
        match self {
            EventReason::RecordReady => "RecordReady",
            EventReason::RecordDeleted => "RecordDeleted",
            EventReason::RecordError => "RecordError",
            EventReason::InvalidInput => "InvalidInput",
            EventReason::DeletionHeldBack => "DeletionHeldBack",
        }
    }

    fn kind(self) -> EventKind {
        match self {
            EventReason::RecordReady | EventReason::RecordDeleted => EventKind::Normal,
            _ => EventKind::Warning,
        }
    }
}

/// Which events `--events-emit` asked for. Nothing by default: no flag, no events, no API calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct EventsConfig {
    /// `RecordReady` events are wanted.
    pub record_ready: bool,
    /// `RecordDeleted` events are wanted.
    pub record_deleted: bool,
    /// Also turns on the other Warning events (`InvalidInput`, `DeletionHeldBack`): they, too, say a
    /// record is not what the object asks for.
    pub record_error: bool,
}

impl EventsConfig {
    /// The set `--events-emit` names; a flag's values map one to one.
    pub fn new(record_ready: bool, record_deleted: bool, record_error: bool) -> Self {
        EventsConfig {
            record_ready,
            record_deleted,
            record_error,
        }
    }

    /// Whether any event is wanted, so no recorder (and no API call) exists otherwise.
    pub fn any(&self) -> bool {
        self.record_ready || self.record_deleted || self.record_error
    }

    fn wants(&self, reason: EventReason) -> bool {
        match reason {
            EventReason::RecordReady => self.record_ready,
            EventReason::RecordDeleted => self.record_deleted,
            _ => self.record_error,
        }
    }
}

/// One event on one object. Everything one sync says about one object for one reason is one event (its
/// note lists the records), so the recorder's series de-duplication counts syncs, not records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordEvent {
    /// The object the event is recorded on, so `kubectl describe` shows it there.
    pub object: ObjectKey,
    /// The object's uid as the watcher's store held it when the sync planned ([`ClusterStore::uid`], taken
    /// before the write, so an object made again under its name since gets none of these events), which
    /// `kubectl describe` matches events by; `None` for an object that is gone (its records were deleted), one read from a
    /// manifest without a canonical uid, or a kind whose views keep none. The sink records the event
    /// without a uid then: it never reads the object back from the API server for it.
    pub uid: Option<Uid>,
    /// Normal or Warning.
    pub kind: EventKind,
    /// Why; the recorder counts repeats per reason.
    pub reason: EventReason,
    /// What extdns did or tried (`CreateRecord`, `UpdateRecord`, `DeleteRecord`, `Evaluate`).
    pub action: &'static str,
    /// The records concerned, cut to [`NOTE_MAX`] bytes as the API server requires.
    pub note: String,
}

/// Where events go: kube's recorder in the binary, a vector in tests. Failing to emit an event never fails
/// a sync, so the sink reports its own errors.
#[async_trait]
pub trait EventSink: Send + Sync {
    /// Publishes one sync's events; errors are the sink's to report.
    async fn emit(&self, events: Vec<RecordEvent>);
}

/// What one sync did to records, as the events need it.
#[derive(Debug, Default)]
pub(crate) struct Outcome<'a> {
    /// Changes the provider took.
    pub applied: Vec<&'a Change>,
    /// Changes the provider refused, with why when it named them one by one.
    pub errored: Vec<(&'a Change, Option<&'a FailureReason>)>,
    pub held_back: &'a [Change],
    /// The objects the sources could not evaluate, with why when known.
    pub failed: Vec<(&'a ObjectKey, Option<&'a str>)>,
}

/// The events for one sync's outcome, one per (object, reason), in a stable order.
pub(crate) fn events_for(config: &EventsConfig, owner: &str, outcome: &Outcome<'_>) -> Vec<RecordEvent> {
    let mut grouped: BTreeMap<(ObjectKey, EventReason, &'static str), Vec<String>> = BTreeMap::new();
    let mut add = |reason: EventReason, change: &Change, why: Option<&FailureReason>| {
        if !config.wants(reason) {
            return;
        }
        let mut record = describe(change.endpoint(), owner);
        if let Some(why) = why {
            record.push_str(&format!(" ({}: {})", why.kind, why.message));
        }
        for object in objects_of(change) {
            grouped
                .entry((ObjectKey::clone(&object), reason, action_of(change)))
                .or_default()
                .push(record.clone());
        }
    };
    for c in &outcome.applied {
        let reason = match c {
            Change::Delete(_) => EventReason::RecordDeleted,
            _ => EventReason::RecordReady,
        };
        add(reason, c, None);
    }
    for (c, why) in &outcome.errored {
        add(EventReason::RecordError, c, *why);
    }
    for c in outcome.held_back {
        add(EventReason::DeletionHeldBack, c, None);
    }
    let mut events: Vec<RecordEvent> = grouped
        .into_iter()
        .map(|((object, reason, action), records)| {
            let prefix = match reason {
                EventReason::DeletionHeldBack => {
                    "the deletion guard holds back these deletes (too many of the zone's records would go): "
                }
                _ => "",
            };
            RecordEvent {
                object,
                uid: None,
                kind: reason.kind(),
                reason,
                action,
                note: truncate(format!("{prefix}{}", records.join("; "))),
            }
        })
        .collect();
    if config.wants(EventReason::InvalidInput) {
        for (object, why) in &outcome.failed {
            let object = ObjectKey::clone(object);
            let why = why.unwrap_or("it could not be evaluated (see the extdns log)");
            events.push(RecordEvent {
                object,
                uid: None,
                kind: EventKind::Warning,
                reason: EventReason::InvalidInput,
                action: "Evaluate",
                note: truncate(format!(
                    "(external-dns) {why}; the object's records are kept as they are"
                )),
            });
        }
    }
    events
}

/// The uid of each object one sync's outcome names, as the store the sync evaluated held it when the plan
/// was made: before the write, which may take long. An object deleted and made again under its name
/// meanwhile is another object (another uid), and this outcome's Events and status are not its own.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Uids(BTreeMap<ObjectKey, Uid>);

impl Uids {
    /// The uids `store` holds now for the objects of `changes` and `failed`.
    pub(crate) fn of<'a>(
        store: &ClusterStore,
        changes: impl IntoIterator<Item = &'a Change>,
        failed: impl IntoIterator<Item = &'a ObjectKey>,
    ) -> Uids {
        let mut uids = BTreeMap::new();
        let objects = changes.into_iter().flat_map(objects_of);
        for key in objects.map(|k| ObjectKey::clone(&k)).chain(failed.into_iter().cloned()) {
            if let Some(uid) = store.uid(&key) {
                uids.insert(key, uid);
            }
        }
        Uids(uids)
    }

    /// The uid of `key`'s object when the outcome was computed, if the store held one.
    pub(crate) fn get(&self, key: &ObjectKey) -> Option<Uid> {
        self.0.get(key).copied()
    }

    /// Every object's uid.
    pub(crate) fn into_map(self) -> BTreeMap<ObjectKey, Uid> {
        self.0
    }
}

/// Gives each event the uid its object had when the sync computed the outcome ([`Uids`]), so the sink
/// needs no read of the object, and an object made again since never gets an event of the old one's.
pub(crate) fn with_uids(mut events: Vec<RecordEvent>, uids: &Uids) -> Vec<RecordEvent> {
    for e in &mut events {
        e.uid = uids.get(&e.object);
    }
    events
}

/// The objects a change belongs to: the ones the sources named, or, for records read back from the
/// provider (deletes, held-back deletes), the object their `resource` label names, if it is of a kind
/// extdns reads (a record another external-dns source wrote, `istio-gateway/...`, names no object an Event
/// could be recorded on).
pub(crate) fn objects_of(change: &Change) -> ObjectRefs {
    let e = change.endpoint();
    if !e.ref_objects.is_empty() {
        return e.ref_objects.clone();
    }
    change
        .previous()
        .and_then(Endpoint::resource)
        .or_else(|| e.resource())
        .and_then(|r| ObjectKey::from_resource_label(&r))
        .into_iter()
        .collect()
}

fn action_of(change: &Change) -> &'static str {
    match change {
        Change::Create(_) => "CreateRecord",
        Change::Update { .. } => "UpdateRecord",
        Change::Delete(_) => "DeleteRecord",
    }
}

/// external-dns's note format, so what reads its events reads ours.
fn describe(e: &Endpoint, owner: &str) -> String {
    format!(
        "(external-dns) record:{},owner:{},type:{},ttl:{},targets:{}",
        e.dns_name,
        owner,
        e.record_type,
        e.record_ttl.0,
        e.targets.join(",")
    )
}

/// `note` cut to [`NOTE_MAX`] bytes (at a character boundary, ending in `...`): what the API server takes
/// in an Event's note, and what a person reads at once in a condition's message.
pub fn truncate(mut note: String) -> String {
    if note.len() > NOTE_MAX {
        let mut cut = NOTE_MAX - 3;
        while !note.is_char_boundary(cut) {
            cut -= 1;
        }
        note.truncate(cut);
        note.push_str("...");
    }
    note
}
