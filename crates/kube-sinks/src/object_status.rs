//! `--status-updates`: each object's names' outcome ([`extdns_controller::NameStatuses`]) written where
//! `kubectl` shows it, by the leader alone, only when it changes, at a bounded rate.
//!
//! - **Service**: a condition of type [`CONDITION_TYPE`] in `status.conditions`, through the status
//!   subresource. The Service's status is the cloud controller's and kube-proxy's business too, so it is
//!   written with server-side apply under our own field manager ([`FIELD_MANAGER`]): `status.conditions`
//!   is a list keyed by `type`, and the apply owns our one entry and nothing else.
//! - **Ingress and Gateway API routes**: their status belongs to their controllers (an Ingress's
//!   `status.loadBalancer` to the ingress controller; a route's `status.parents` to the Gateway's
//!   controller, one entry per parent it accepts, which extdns is not). Their status holds no place for a
//!   third party, so the outcome goes to an annotation, [`ANNOTATION`], written by server-side apply under
//!   our field manager: GitOps tools diff server-side and leave alone what another manager owns, so it is
//!   never drift.
//!
//! DNSEndpoints keep their own conditions (`crate::crd_status`, external-dns's PR #6609 names).
//!
//! The writer runs beside the controller, woken by the name book: a sync's writes to DNS never wait for
//! it, and it steps aside for them. Each change the live view records holds the writes until a sync has
//! folded its outcomes in (its write to DNS is done), or [`HOLD_AT_MOST`] has passed (a change that needs
//! no write folds nothing): a change after a hold ended, by a fold or by the bound, holds them afresh, one
//! during a hold shares it. A burst of writes stops at the next change of the
//! view: the API server, extdns's client and its CPU serve the change first, the status after it. What it wrote is remembered, so an unchanged outcome costs nothing; a token bucket
//! ([`TokenBucket`]) bounds the writes however many objects change at once (what waits keeps only its
//! latest outcome); a follower writes nothing and forgets what it wrote, so a replica that leads again
//! writes every outcome once. The object's uid, when the sync saw one, goes into the apply as a
//! precondition: an object made again under the same name since is left to the next sync.
//!
//! Each kind is written at the version the live view watches it at (discovery found it, and finds it
//! again when the served version changes), so a 404 means the object is gone: its write is dropped, not
//! retried, until the object's outcome changes again.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use extdns_controller::{CancellationToken, NameBook, NameStatuses, ObjectNames, Reason, truncate_note};
use extdns_informer::{Cluster, KindOverrides, ObjectKey, ResourceKind, Uid};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::time::Instant;
use tracing::{debug, info, warn};

/// The condition type on Services: a domain of our own, as Kubernetes asks of conditions not the object's
/// own controller's.
pub const CONDITION_TYPE: &str = "externaldns.k8s.io/Published";
/// The annotation on Ingresses and routes.
pub const ANNOTATION: &str = extdns_informer::convert::STATUS_ANNOTATION;
/// The field manager of every status write, so `managedFields` says who wrote what.
pub const FIELD_MANAGER: &str = "extdns";
/// The longest message, an Event note's: a condition message may be far longer, but a status nobody can
/// read at once helps nobody, and a Service with thousands of names must not grow without bound.
pub const MESSAGE_MAX: usize = extdns_controller::NOTE_MAX;
/// How often a writer with something left to write (a write that failed, a follower that may lead) looks
/// again without being woken.
const RETRY_EVERY: Duration = Duration::from_secs(30);

/// How long a kind whose status writes the API server forbids is left alone: a user who switched from
/// external-dns keeps its RBAC, which grants no `patch`; one warning, then one try per pause, not a
/// refused write per object per retry.
const FORBIDDEN_PAUSE: Duration = Duration::from_secs(600);

/// The longest the writer holds its writes after a change of the view while no sync says its write is
/// done: a change that asks for no write (or a sync without `--events`) folds nothing, and the status must
/// still follow.
pub const HOLD_AT_MOST: Duration = Duration::from_secs(1);

/// What one object shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectStatus {
    /// Every name published.
    pub published: bool,
    /// The worst of its names' reasons.
    pub reason: Reason,
    /// Each name and where it stands, cut to [`MESSAGE_MAX`].
    pub message: String,
}

/// How an object of `kind` is told, if it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    /// A condition in `status.conditions`.
    Condition,
    /// The [`ANNOTATION`] annotation.
    Annotation,
}

/// The mechanism for `kind`; `None` for kinds not written here (DNSEndpoints have their own writer; the
/// other sources' kinds are not asked for yet).
pub fn mechanism(kind: ResourceKind) -> Option<Mechanism> {
    match kind {
        ResourceKind::Service => Some(Mechanism::Condition),
        ResourceKind::Ingress | ResourceKind::Route(_) => Some(Mechanism::Annotation),
        _ => None,
    }
}

/// What `names` makes the object show; `None` without names.
pub fn status_of(names: &ObjectNames) -> Option<ObjectStatus> {
    let reason = names.reason()?;
    let parts: Vec<String> = names
        .names
        .iter()
        .map(|n| {
            if n.name.is_empty() {
                n.state.to_string()
            } else {
                format!("{} {}: {}", n.name, n.record_type, n.state)
            }
        })
        .collect();
    Some(ObjectStatus {
        published: reason == Reason::Published,
        reason,
        message: truncate_note(parts.join("; ")),
    })
}

/// The Service status apply: our one condition.
pub fn condition_patch(
    api_version: &str,
    key: &ObjectKey,
    uid: Option<Uid>,
    status: &ObjectStatus,
    since: &str,
) -> Value {
    json!({
        "apiVersion": api_version,
        "kind": "Service",
        "metadata": metadata(key, uid),
        "status": {"conditions": [{
            "type": CONDITION_TYPE,
            "status": if status.published { "True" } else { "False" },
            "reason": status.reason.as_str(),
            "message": status.message,
            "lastTransitionTime": since,
        }]},
    })
}

/// The Ingress or route apply: our one annotation, `{"reason": .., "message": ..}`.
pub fn annotation_patch(
    api_version: &str,
    kind: &str,
    key: &ObjectKey,
    uid: Option<Uid>,
    status: &ObjectStatus,
) -> Value {
    let value = json!({"published": status.published, "reason": status.reason.as_str(), "message": status.message});
    let mut meta = metadata(key, uid);
    meta["annotations"] = json!({ ANNOTATION: value.to_string() });
    json!({"apiVersion": api_version, "kind": kind, "metadata": meta})
}

fn metadata(key: &ObjectKey, uid: Option<Uid>) -> Value {
    let mut meta = json!({"name": key.name, "namespace": key.namespace});
    if let Some(uid) = uid {
        // A precondition: the apply fails on an object made again under this name since.
        meta["uid"] = json!(uid.to_string());
    }
    meta
}

/// Tokens at a steady rate up to a burst: `take` says whether a write may go now, `ready_at` when the next
/// one may.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    per_second: f64,
    burst: f64,
    tokens: f64,
    at: Instant,
}

impl TokenBucket {
    /// Full at first: `burst` writes at once, then `per_second`.
    pub fn new(per_second: f64, burst: u32) -> Self {
        let burst = f64::from(burst.max(1));
        TokenBucket {
            per_second: per_second.max(0.001),
            burst,
            tokens: burst,
            at: Instant::now(),
        }
    }

    fn refill(&mut self, now: Instant) {
        let gained = now.saturating_duration_since(self.at).as_secs_f64() * self.per_second;
        self.tokens = (self.tokens + gained).min(self.burst);
        self.at = now;
    }

    /// Takes a token if there is one.
    pub fn take(&mut self, now: Instant) -> bool {
        self.refill(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// When the next token comes.
    pub fn ready_at(&self) -> Instant {
        let missing = (1.0 - self.tokens).max(0.0);
        self.at + Duration::from_secs_f64(missing / self.per_second)
    }
}

/// Why a status could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StatusWriteError {
    /// The API server refused or could not be reached.
    #[error("cannot write the status of {object}: {source}")]
    Api {
        /// The object.
        object: ObjectKey,
        /// What the client said.
        source: kube::Error,
    },
    /// A 404 from a version the view does not watch the kind at (not watched yet: the configured or the
    /// table's version, a guess): the object may well exist, so this is no sign it is gone.
    #[error(
        "cannot write the status of {object} at {api_version}, a version guessed while the kind is not watched: {source}"
    )]
    Unwatched {
        /// The object.
        object: ObjectKey,
        /// The version the write went to.
        api_version: String,
        /// What the client said.
        source: kube::Error,
    },
}

impl StatusWriteError {
    /// Whether the API server refused the write for want of permission (403): retrying the kind's other
    /// objects would be refused too.
    pub fn is_forbidden(&self) -> bool {
        match self {
            StatusWriteError::Api {
                source: kube::Error::Api(status),
                ..
            } => status.code == 403,
            StatusWriteError::Api { .. } | StatusWriteError::Unwatched { .. } => false,
        }
    }

    /// Whether the object the outcome was for is gone: deleted (404, at the version the view watches) or
    /// made again under its name (409, the uid precondition). The next sync's outcome is the new object's.
    pub fn is_gone(&self) -> bool {
        match self {
            StatusWriteError::Api {
                source: kube::Error::Api(status),
                ..
            } => status.code == 404 || status.code == 409,
            StatusWriteError::Api { .. } | StatusWriteError::Unwatched { .. } => false,
        }
    }
}

/// Where the writes go: the API server in the binary, a record in tests.
#[async_trait]
pub trait StatusApi: Send + Sync {
    /// Writes `status` onto `key`'s object (of uid `uid` when known) the way `mechanism` says;
    /// `since` is the condition's transition time.
    async fn write(
        &self,
        key: &ObjectKey,
        uid: Option<Uid>,
        mechanism: Mechanism,
        status: &ObjectStatus,
        since: &str,
    ) -> Result<(), StatusWriteError>;

    /// The change counter of the view whose objects are written ([`Cluster::changes`]), for the writer to
    /// hold its writes while a change is on its way to DNS; `None` (the default) holds nothing.
    fn view_changes(&self) -> Option<watch::Receiver<u64>> {
        None
    }
}

/// [`StatusApi`] over a kube client: server-side apply under [`FIELD_MANAGER`].
pub struct KubeStatusApi {
    client: kube::Client,
    overrides: KindOverrides,
    /// The live view, whose watchers know the version each kind is served at.
    cluster: Arc<dyn Cluster>,
}

impl KubeStatusApi {
    /// Writes with `client`, each kind where `cluster`'s watchers found it served, else where
    /// configuration (`overrides`) puts it.
    pub fn new(client: kube::Client, overrides: KindOverrides, cluster: Arc<dyn Cluster>) -> Self {
        KubeStatusApi {
            client,
            overrides,
            cluster,
        }
    }
}

#[async_trait]
impl StatusApi for KubeStatusApi {
    async fn write(
        &self,
        key: &ObjectKey,
        uid: Option<Uid>,
        mechanism: Mechanism,
        status: &ObjectStatus,
        since: &str,
    ) -> Result<(), StatusWriteError> {
        let watched = self.cluster.store().watched_at(key.kind);
        let guessed = watched.is_none();
        let resource = watched.unwrap_or_else(|| self.overrides.api_resource(key.kind));
        let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), &key.namespace, &resource);
        // Forced: the condition type and the annotation are ours alone; another manager that set them
        // (an older extdns of another name) gives them up.
        let params = PatchParams::apply(FIELD_MANAGER).force();
        let written = match mechanism {
            Mechanism::Condition => {
                let patch = condition_patch(&resource.api_version, key, uid, status, since);
                api.patch_status(&key.name, &params, &Patch::Apply(&patch)).await
            }
            Mechanism::Annotation => {
                let patch = annotation_patch(&resource.api_version, &resource.kind, key, uid, status);
                api.patch(&key.name, &params, &Patch::Apply(&patch)).await
            }
        };
        written.map(|_| ()).map_err(|source| match source {
            kube::Error::Api(ref status) if guessed && status.code == 404 => StatusWriteError::Unwatched {
                object: key.clone(),
                api_version: resource.api_version.clone(),
                source,
            },
            source => StatusWriteError::Api {
                object: key.clone(),
                source,
            },
        })
    }

    fn view_changes(&self) -> Option<watch::Receiver<u64>> {
        Some(self.cluster.changes())
    }
}

/// What the writer remembers of one object: what it wrote, and since when its condition's status holds.
#[derive(Debug, Clone)]
struct Written {
    status: ObjectStatus,
    since: String,
}

/// The writer: remembers what it wrote, queues what changed, writes as the bucket allows.
pub struct StatusWriter {
    api: Arc<dyn StatusApi>,
    is_leader: Arc<dyn Fn() -> bool + Send + Sync>,
    bucket: TokenBucket,
    written: BTreeMap<ObjectKey, Written>,
    /// Each object's names as the last [`StatusWriter::consider`] saw them: the book shares an object's
    /// names between folds that did not touch it, so an object whose names are the very same is skipped
    /// without working its status out again (10,000 objects a sync otherwise).
    considered: BTreeMap<ObjectKey, Arc<ObjectNames>>,
    /// What changed and is not written yet, with the object's uid: the latest outcome only.
    pending: BTreeMap<ObjectKey, (Option<Uid>, ObjectStatus)>,
    /// Outcomes whose object was gone when written (404, 409): not queued again while the book says the
    /// same of it, so a deleted object is written once, not at every retry, until the sync drops it.
    gone: BTreeMap<ObjectKey, (Option<Uid>, ObjectStatus)>,
    /// Kinds (per namespace: RBAC is often granted per namespace) whose writes were forbidden (403), left
    /// alone until then.
    forbidden: BTreeMap<(ResourceKind, String), Instant>,
    /// Kinds whose refusal was logged: once per process. Status is extdns's own addition, so running on
    /// external-dns's RBAC (a drop-in switch) is a choice, told once, never a warning.
    told_forbidden: std::collections::BTreeSet<ResourceKind>,
    /// The view's change counter ([`StatusApi::view_changes`]).
    view: Option<watch::Receiver<u64>>,
    /// Since when a change of the view is on its way to DNS, no sync having folded since: the change that
    /// started the running hold (a stale one, past [`HOLD_AT_MOST`], is replaced by the next change).
    held_since: Option<Instant>,
}

impl StatusWriter {
    /// A writer through `api`, writing while `is_leader` says so, at most `bucket` allows.
    pub fn new(api: Arc<dyn StatusApi>, is_leader: Arc<dyn Fn() -> bool + Send + Sync>, bucket: TokenBucket) -> Self {
        StatusWriter {
            is_leader,
            bucket,
            written: BTreeMap::new(),
            considered: BTreeMap::new(),
            pending: BTreeMap::new(),
            gone: BTreeMap::new(),
            forbidden: BTreeMap::new(),
            told_forbidden: std::collections::BTreeSet::new(),
            view: api.view_changes(),
            held_since: None,
            api,
        }
    }

    /// The view changed at `now`: writes wait for the sync it starts ([`StatusWriter::synced`]).
    ///
    /// The hold is per change: a change that lands when no hold runs (none yet, the last one ended by a
    /// sync's fold or by its [`HOLD_AT_MOST`]) holds the writes afresh from `now`; one that lands while a
    /// hold runs shares it, so a stream of changes never holds the status longer than the bound from the
    /// first of them. A hold that ran out is not kept: it would let every later change through until
    /// the next fold.
    pub fn view_changed(&mut self, now: Instant) {
        if let Some(view) = self.view.as_mut() {
            view.borrow_and_update();
        }
        if self.held_until(now).is_none() {
            self.held_since = Some(now);
        }
    }

    /// A sync folded its outcomes in: its write is done, writes may go (the next change holds them again).
    pub fn synced(&mut self) {
        self.held_since = None;
    }

    /// Until when writes are held at `now`, if they are: a change of the view is on its way to DNS.
    pub fn held_until(&self, now: Instant) -> Option<Instant> {
        self.held_since
            .map(|since| since + HOLD_AT_MOST)
            .filter(|until| *until > now)
    }

    /// Whether the view changed since the writer last looked: a burst of writes stops there.
    fn view_moved(&self) -> bool {
        self.view.as_ref().is_some_and(|v| v.has_changed().unwrap_or(false))
    }

    /// Queues every object whose status differs from what was written; an object that is gone from the
    /// outcomes is forgotten (a later one is written afresh).
    pub fn consider(&mut self, statuses: &NameStatuses) {
        // Nothing considered yet (or forgotten by a follower): every map is checked against the book.
        let afresh = self.considered.is_empty();
        for (key, names) in statuses.iter_shared() {
            match self.considered.get_mut(key) {
                Some(seen) if Arc::ptr_eq(seen, names) => continue,
                Some(seen) => *seen = names.clone(),
                None => {
                    self.considered.insert(key.clone(), names.clone());
                }
            }
            let Some(_) = mechanism(key.kind) else { continue };
            let Some(status) = status_of(names) else {
                // No status any more: what was queued or written of it is forgotten.
                self.pending.remove(key);
                self.written.remove(key);
                self.gone.remove(key);
                continue;
            };
            let was_gone = self
                .gone
                .get(key)
                .is_some_and(|(uid, gone)| *uid == names.uid && *gone == status);
            if was_gone || self.written.get(key).is_some_and(|w| w.status == status) {
                self.pending.remove(key);
            } else {
                self.gone.remove(key);
                self.pending.insert(key.clone(), (names.uid, status));
            }
        }
        // Every key of the book is in `considered` now; more means objects left the book.
        if afresh || self.considered.len() != statuses.len() {
            let known = |k: &ObjectKey| statuses.get(k).is_some();
            self.considered.retain(|k, _| known(k));
            self.written.retain(|k, _| known(k));
            self.pending.retain(|k, _| known(k));
            self.gone.retain(|k, _| known(k));
        }
    }

    /// Writes what is pending while the bucket has tokens; returns when it should be called again (`None`:
    /// nothing left). A follower writes nothing, and forgets what it wrote.
    pub async fn drain(&mut self, now: Instant) -> Option<Instant> {
        if !(self.is_leader)() {
            // What it wrote is forgotten, so what it considered must be looked at again once it leads.
            self.written.clear();
            self.considered.clear();
            return (!self.pending.is_empty()).then(|| now + RETRY_EVERY);
        }
        self.forbidden.retain(|_, until| *until > now);
        if self.view_moved() {
            return Some(now);
        }
        let mut failed = Vec::new();
        // One key at a time from a cursor, not the whole backlog copied at each call (the first sync queues
        // every object), and each key looked at once a burst.
        let mut after: Option<ObjectKey> = None;
        loop {
            let from = match &after {
                Some(k) => Bound::Excluded(k),
                None => Bound::Unbounded,
            };
            let Some(key) = self
                .pending
                .range::<ObjectKey, _>((from, Bound::Unbounded))
                .map(|(k, _)| k)
                .find(|k| !self.forbidden.contains_key(&(k.kind, k.namespace.clone())))
                .cloned()
            else {
                break;
            };
            after = Some(key.clone());
            if self.view_moved() {
                // A change is on its way to DNS: the rest waits for its sync. What failed in this burst
                // goes back to pending first, or it would wait for the next change of the book.
                self.pending.extend(failed);
                return Some(now);
            }
            if !self.bucket.take(now) {
                break;
            }
            let Some((uid, status)) = self.pending.remove(&key) else {
                continue;
            };
            let Some(mechanism) = mechanism(key.kind) else { continue };
            // The transition time moves only when the condition's status does.
            let since = match self.written.get(&key) {
                Some(w) if w.status.published == status.published => w.since.clone(),
                _ => k8s_openapi::jiff::Timestamp::now().to_string(),
            };
            match self.api.write(&key, uid, mechanism, &status, &since).await {
                Ok(()) => {
                    debug!(object = %key, reason = status.reason.as_str(), "status written");
                    self.written.insert(key, Written { status, since });
                }
                Err(e) if e.is_gone() => {
                    debug!(object = %key, error = %e, "status not written: the object is gone; dropped");
                    self.written.remove(&key);
                    self.gone.insert(key, (uid, status));
                }
                Err(e) if e.is_forbidden() => {
                    if self.told_forbidden.insert(key.kind) {
                        info!(
                            error = %e,
                            kind = ?key.kind,
                            pause = ?FORBIDDEN_PAUSE,
                            "status not written: the RBAC grants no `patch` on this kind (the chart's status role does; --status-updates=false stops trying); tried again after each pause"
                        );
                    } else {
                        debug!(error = %e, kind = ?key.kind, "status writes still forbidden");
                    }
                    self.forbidden
                        .insert((key.kind, key.namespace.clone()), now + FORBIDDEN_PAUSE);
                    failed.push((key, (uid, status)));
                }
                Err(e) => {
                    warn!(error = %e, "status not written; retried later");
                    failed.push((key, (uid, status)));
                }
            }
        }
        let retry = !failed.is_empty();
        self.pending.extend(failed);
        let writable = self
            .pending
            .keys()
            .any(|k| !self.forbidden.contains_key(&(k.kind, k.namespace.clone())));
        if self.pending.is_empty() {
            None
        } else if retry {
            Some(now + RETRY_EVERY)
        } else if writable {
            Some(self.bucket.ready_at())
        } else {
            // Only forbidden kinds are left: nothing to do before the first pause ends.
            self.forbidden.values().min().copied()
        }
    }

    /// Runs until `shutdown`: woken by `book`, writing as [`StatusWriter::drain`] allows, holding its
    /// writes while a change of the view is on its way to DNS (until `book` says a sync folded).
    pub async fn run(mut self, book: NameBook, shutdown: CancellationToken) {
        let mut rx = book.subscribe();
        let mut folds = Some(book.folds());
        let mut view = self.view.clone();
        // The book is scanned when it changed, not on every timer wake while a backlog drains.
        let mut changed_since = true;
        loop {
            if changed_since {
                let latest = rx.borrow_and_update().clone();
                self.consider(&latest);
                changed_since = false;
            }
            let now = Instant::now();
            let wake = match self.held_until(now) {
                Some(until) => until,
                None => self.drain(now).await.unwrap_or_else(|| Instant::now() + RETRY_EVERY),
            };
            let woken = tokio::select! {
                biased;
                _ = shutdown.cancelled() => break,
                changed = rx.changed() => {
                    if changed.is_err() {
                        break;
                    }
                    Woken::Book
                }
                _ = next(&mut folds) => Woken::Folded,
                _ = next(&mut view) => Woken::View,
                _ = tokio::time::sleep_until(wake) => Woken::Timer,
            };
            match woken {
                Woken::Book => changed_since = true,
                Woken::Folded => self.synced(),
                Woken::View => self.view_changed(Instant::now()),
                Woken::Timer => {}
            }
        }
    }
}

/// What woke the writer's loop.
enum Woken {
    Book,
    Folded,
    View,
    Timer,
}

/// The next change of `rx`; never, once its sender is gone (then `rx` is dropped).
async fn next(rx: &mut Option<watch::Receiver<u64>>) {
    let Some(r) = rx.as_mut() else {
        return std::future::pending().await;
    };
    if r.changed().await.is_err() {
        *rx = None;
        std::future::pending::<()>().await;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, Ordering};

    use extdns_controller::{NameState, Party};

    use super::*;
    use crate::testing::web_names as names;

    #[derive(Default)]
    struct Recorded(Mutex<Vec<(ObjectKey, Mechanism, Reason)>>);

    impl Recorded {
        fn take(&self) -> Vec<(ObjectKey, Mechanism, Reason)> {
            std::mem::take(&mut *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
        }
    }

    #[async_trait]
    impl StatusApi for Recorded {
        async fn write(
            &self,
            key: &ObjectKey,
            _uid: Option<Uid>,
            mechanism: Mechanism,
            status: &ObjectStatus,
            _since: &str,
        ) -> Result<(), StatusWriteError> {
            self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push((
                key.clone(),
                mechanism,
                status.reason,
            ));
            Ok(())
        }
    }

    fn published() -> NameState {
        NameState::published("rfc2136", Some("example.org"))
    }

    /// The statuses of `count` Services and one Ingress and one DNSEndpoint, each in `state`.
    fn statuses(count: usize, state: NameState) -> NameStatuses {
        let mut update = BTreeMap::new();
        for i in 0..count {
            update.insert(
                ObjectKey::new(ResourceKind::Service, "shop", &format!("web{i}")),
                names(state.clone()),
            );
        }
        update.insert(
            ObjectKey::new(ResourceKind::Ingress, "shop", "site"),
            names(state.clone()),
        );
        update.insert(ObjectKey::new(ResourceKind::DnsEndpoint, "shop", "recs"), names(state));
        update.into_iter().collect()
    }

    fn writer(api: &Arc<Recorded>, leader: &Arc<AtomicBool>, bucket: TokenBucket) -> StatusWriter {
        let leader = leader.clone();
        StatusWriter::new(api.clone(), Arc::new(move || leader.load(Ordering::SeqCst)), bucket)
    }

    #[tokio::test(start_paused = true)]
    async fn writes_only_what_changed() {
        let api = Arc::new(Recorded::default());
        let leader = Arc::new(AtomicBool::new(true));
        let mut w = writer(&api, &leader, TokenBucket::new(100.0, 100));
        w.consider(&statuses(2, published()));
        assert_eq!(w.drain(Instant::now()).await, None);
        let first = api.take();
        // Two Services by condition, the Ingress by annotation, the DNSEndpoint not here.
        assert_eq!(first.len(), 3, "{first:?}");
        assert_eq!(first.iter().filter(|w| w.1 == Mechanism::Annotation).count(), 1);
        // The same outcome again: nothing written.
        w.consider(&statuses(2, published()));
        w.drain(Instant::now()).await;
        assert!(api.take().is_empty());
        // A conflict: every object again, with its new reason.
        let conflict = NameState::conflict(Party::Owner("b".into()));
        w.consider(&statuses(2, conflict));
        w.drain(Instant::now()).await;
        let again = api.take();
        assert_eq!(again.len(), 3);
        assert!(again.iter().all(|w| w.2 == Reason::Conflict));
    }

    #[tokio::test(start_paused = true)]
    async fn the_bucket_bounds_the_writes() {
        let api = Arc::new(Recorded::default());
        let leader = Arc::new(AtomicBool::new(true));
        let mut w = writer(&api, &leader, TokenBucket::new(10.0, 5));
        w.consider(&statuses(50, published()));
        let next = w.drain(Instant::now()).await;
        assert_eq!(api.take().len(), 5, "the burst, no more");
        let Some(next) = next else {
            panic!("51 objects wait, yet the writer says it is done");
        };
        // A second later: ten more (the rate), never the rest at once.
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(next <= Instant::now());
        w.drain(Instant::now()).await;
        assert_eq!(api.take().len(), 5, "capped at the burst");
        // Everything is written in the end.
        let mut total = 10;
        for _ in 0..20 {
            tokio::time::advance(Duration::from_secs(1)).await;
            w.drain(Instant::now()).await;
            total += api.take().len();
        }
        assert_eq!(total, 51);
    }

    /// Every write of a Service fails with the status `code(n)` gives its `n`th try (external-dns's RBAC
    /// grants no `patch`: 403; the object gone: 404, or 409 once made again); other kinds' are recorded.
    struct FailsServices {
        ok: Recorded,
        tries: Mutex<usize>,
        code: fn(usize) -> u16,
    }

    impl FailsServices {
        fn new(code: fn(usize) -> u16) -> Arc<Self> {
            Arc::new(FailsServices {
                ok: Recorded::default(),
                tries: Mutex::new(0),
                code,
            })
        }

        fn tries(&self) -> usize {
            *self.tries.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
        }
    }

    #[async_trait]
    impl StatusApi for FailsServices {
        async fn write(
            &self,
            key: &ObjectKey,
            uid: Option<Uid>,
            mechanism: Mechanism,
            status: &ObjectStatus,
            since: &str,
        ) -> Result<(), StatusWriteError> {
            if key.kind == ResourceKind::Service {
                let mut tries = self.tries.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                *tries += 1;
                let status = kube::core::Status::failure("refused", "Refused").with_code((self.code)(*tries));
                return Err(StatusWriteError::Api {
                    object: key.clone(),
                    source: kube::Error::Api(Box::new(status)),
                });
            }
            self.ok.write(key, uid, mechanism, status, since).await
        }
    }

    /// Records writes over a view whose change counter the test moves, or the third write moves (a change
    /// arriving while a burst is written).
    struct OverAView {
        ok: Recorded,
        view: watch::Sender<u64>,
        change_at_write: Option<usize>,
    }

    impl OverAView {
        fn new(change_at_write: Option<usize>) -> Arc<Self> {
            Arc::new(OverAView {
                ok: Recorded::default(),
                view: watch::Sender::new(0),
                change_at_write,
            })
        }
    }

    #[async_trait]
    impl StatusApi for OverAView {
        async fn write(
            &self,
            key: &ObjectKey,
            uid: Option<Uid>,
            mechanism: Mechanism,
            status: &ObjectStatus,
            since: &str,
        ) -> Result<(), StatusWriteError> {
            self.ok.write(key, uid, mechanism, status, since).await?;
            let written = self
                .ok
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .len();
            if self.change_at_write == Some(written) {
                self.view.send_modify(|n| *n += 1);
            }
            Ok(())
        }

        fn view_changes(&self) -> Option<watch::Receiver<u64>> {
            Some(self.view.subscribe())
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_burst_stops_at_a_change_of_the_view() {
        let api = OverAView::new(Some(3));
        let mut w = StatusWriter::new(api.clone(), Arc::new(|| true), TokenBucket::new(100.0, 100));
        w.consider(&statuses(20, published()));
        let now = Instant::now();
        assert_eq!(w.drain(now).await, Some(now), "called again at once, to see the change");
        assert_eq!(api.ok.take().len(), 3, "the writes after the change wait for its sync");
    }

    #[tokio::test(start_paused = true)]
    async fn writes_are_held_from_a_change_of_the_view_until_a_sync_folded_or_at_most_a_while() {
        let api = OverAView::new(None);
        let mut w = StatusWriter::new(api.clone(), Arc::new(|| true), TokenBucket::new(100.0, 100));
        let start = Instant::now();
        assert_eq!(w.held_until(start), None, "nothing on its way to DNS");
        api.view.send_modify(|n| *n += 1);
        w.view_changed(start);
        assert_eq!(w.held_until(start), Some(start + HOLD_AT_MOST));
        // A second change while held does not push the hold further.
        w.view_changed(start + Duration::from_millis(500));
        assert_eq!(
            w.held_until(start + Duration::from_millis(500)),
            Some(start + HOLD_AT_MOST)
        );
        w.synced();
        assert_eq!(w.held_until(start), None, "the sync wrote: the statuses may go");
        // A change no sync folds for (it needed no write): held no longer than the bound.
        w.view_changed(start);
        assert_eq!(w.held_until(start + HOLD_AT_MOST), None);
        // The change was seen: a burst after it is not cut short for it.
        w.consider(&statuses(4, published()));
        assert_eq!(w.drain(start + HOLD_AT_MOST).await, None);
        assert_eq!(api.ok.take().len(), 5);
    }

    #[tokio::test(start_paused = true)]
    async fn each_change_holds_the_writes_whatever_ended_the_hold_before_it() {
        let api = OverAView::new(None);
        let mut w = StatusWriter::new(api.clone(), Arc::new(|| true), TokenBucket::new(100.0, 100));
        let start = Instant::now();
        let at = |ms| start + Duration::from_millis(ms);
        // Two changes in a row, one sync between: each holds the writer until its own sync.
        w.view_changed(start);
        assert_eq!(w.held_until(start), Some(start + HOLD_AT_MOST), "the first change");
        w.synced();
        assert_eq!(w.held_until(at(10)), None, "its sync wrote");
        w.view_changed(at(20));
        assert_eq!(w.held_until(at(20)), Some(at(20) + HOLD_AT_MOST), "the second change");
        w.synced();
        assert_eq!(w.held_until(at(30)), None);
        // A change whose sync is slower than the bound: the hold runs out, and the next change before
        // that sync's fold still holds the writer, from its own time.
        w.view_changed(at(100));
        let after = at(100) + HOLD_AT_MOST + Duration::from_millis(50);
        assert_eq!(w.held_until(after), None, "the bound");
        w.view_changed(after);
        assert_eq!(
            w.held_until(after),
            Some(after + HOLD_AT_MOST),
            "a new change, a new hold"
        );
        w.synced();
        assert_eq!(w.held_until(after), None);
    }

    #[test]
    fn a_404_at_a_guessed_version_is_no_sign_the_object_is_gone() {
        let error = |code| {
            kube::Error::Api(Box::new(
                kube::core::Status::failure("not found", "NotFound").with_code(code),
            ))
        };
        let object = ObjectKey {
            kind: ResourceKind::Ingress,
            namespace: "ns".into(),
            name: "web".into(),
        };
        let served = StatusWriteError::Api {
            object: object.clone(),
            source: error(404),
        };
        let guessed = StatusWriteError::Unwatched {
            object,
            api_version: "networking.k8s.io/v1beta1".into(),
            source: error(404),
        };
        assert!(served.is_gone());
        assert!(!guessed.is_gone(), "retried, not dropped");
    }

    #[tokio::test(start_paused = true)]
    async fn a_forbidden_kind_is_tried_once_per_pause_and_the_other_kinds_are_written() {
        let api = FailsServices::new(|_| 403);
        let mut w = StatusWriter::new(api.clone(), Arc::new(|| true), TokenBucket::new(100.0, 100));
        w.consider(&statuses(20, published()));
        let next = w.drain(Instant::now()).await;
        let refused = || api.tries();
        assert_eq!(refused(), 1, "one refused Service, not twenty");
        assert_eq!(api.ok.take().len(), 1, "the Ingress is still written");
        // Only the Services wait: the writer sleeps until the pause ends, not in a busy loop.
        let start = Instant::now();
        assert_eq!(next, Some(start + RETRY_EVERY), "the failure is retried later");
        tokio::time::advance(RETRY_EVERY).await;
        assert_eq!(w.drain(Instant::now()).await, Some(start + FORBIDDEN_PAUSE));
        assert_eq!(refused(), 1, "no write of the kind during the pause");
        tokio::time::advance(FORBIDDEN_PAUSE).await;
        w.drain(Instant::now()).await;
        assert_eq!(refused(), 2, "one try after the pause");
    }

    #[tokio::test(start_paused = true)]
    async fn a_gone_object_is_dropped_not_retried_until_its_outcome_changes() {
        let api = FailsServices::new(|n| if n.is_multiple_of(2) { 409 } else { 404 });
        let mut w = StatusWriter::new(api.clone(), Arc::new(|| true), TokenBucket::new(100.0, 100));
        let tries = || api.tries();
        w.consider(&statuses(2, published()));
        assert_eq!(w.drain(Instant::now()).await, None, "nothing left to retry");
        assert_eq!(
            (tries(), api.ok.take().len()),
            (2, 1),
            "each Service tried once, the Ingress written"
        );
        // Later syncs still list them (the deletion not seen yet) with the same outcome: not tried again.
        for _ in 0..3 {
            tokio::time::advance(RETRY_EVERY).await;
            w.consider(&statuses(2, published()));
            assert_eq!(w.drain(Instant::now()).await, None);
        }
        assert_eq!(tries(), 2);
        // A new outcome (the object back, say): tried again.
        w.consider(&statuses(2, NameState::Pending));
        w.drain(Instant::now()).await;
        assert_eq!(tries(), 4);
    }

    #[tokio::test(start_paused = true)]
    async fn a_follower_writes_nothing_and_a_new_leader_writes_everything_once() {
        let api = Arc::new(Recorded::default());
        let leader = Arc::new(AtomicBool::new(true));
        let mut w = writer(&api, &leader, TokenBucket::new(100.0, 100));
        w.consider(&statuses(1, published()));
        w.drain(Instant::now()).await;
        assert_eq!(api.take().len(), 2);
        leader.store(false, Ordering::SeqCst);
        w.consider(&statuses(1, NameState::Pending));
        assert!(w.drain(Instant::now()).await.is_some(), "kept for when it leads");
        assert!(api.take().is_empty());
        // Leading again (another replica may have written meanwhile): everything once.
        leader.store(true, Ordering::SeqCst);
        w.consider(&statuses(1, published()));
        w.drain(Instant::now()).await;
        assert_eq!(api.take().len(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn a_book_seen_before_is_skipped_until_leading_again_makes_it_new() {
        let api = Arc::new(Recorded::default());
        let leader = Arc::new(AtomicBool::new(true));
        let mut w = writer(&api, &leader, TokenBucket::new(100.0, 100));
        let book = statuses(1, published());
        w.consider(&book);
        w.drain(Instant::now()).await;
        assert_eq!(api.take().len(), 2);
        // The very same names again (a fold that touched other objects): nothing to do.
        w.consider(&book.clone());
        assert_eq!(w.drain(Instant::now()).await, None);
        assert!(api.take().is_empty());
        // A follower forgets what it wrote, so the same book, seen when leading again, is written whole.
        leader.store(false, Ordering::SeqCst);
        w.drain(Instant::now()).await;
        leader.store(true, Ordering::SeqCst);
        w.consider(&book);
        w.drain(Instant::now()).await;
        assert_eq!(api.take().len(), 2);
        // An object that leaves the book is forgotten, and written afresh when it comes back.
        w.consider(&NameStatuses::default());
        w.consider(&book);
        w.drain(Instant::now()).await;
        assert_eq!(api.take().len(), 2);
    }

    #[test]
    fn the_patches_touch_only_our_condition_and_annotation() {
        let key = ObjectKey::new(ResourceKind::Service, "shop", "web");
        let status = status_of(&names(published())).unwrap_or_else(|| panic!("a name"));
        assert!(status.published);
        let uid = Uid::parse("3f2b7c1e-9a4d-4e0b-8c6f-0123456789ab");
        let p = condition_patch("v1", &key, uid, &status, "2026-01-01T00:00:00Z");
        let c = &p["status"]["conditions"][0];
        assert_eq!(
            (c["type"].as_str(), c["status"].as_str(), c["reason"].as_str()),
            (Some(CONDITION_TYPE), Some("True"), Some("Published"))
        );
        assert!(
            c["message"]
                .as_str()
                .unwrap_or_default()
                .contains("web.example.org A: published by rfc2136 in zone example.org")
        );
        assert_eq!(p["metadata"]["uid"], "3f2b7c1e-9a4d-4e0b-8c6f-0123456789ab");
        assert_eq!(
            p.as_object().map(|o| o.len()),
            Some(4),
            "apiVersion, kind, metadata, status: {p}"
        );
        let a = annotation_patch("networking.k8s.io/v1", "Ingress", &key, None, &status);
        let value: Value = serde_json::from_str(a["metadata"]["annotations"][ANNOTATION].as_str().unwrap_or_default())
            .unwrap_or_default();
        assert_eq!(value["reason"], "Published");
        assert!(a.get("spec").is_none() && a.get("status").is_none());
    }
}
