//! The runner: one kube-runtime `Controller` per kind of provider object, watch-driven. Each reconcile
//! builds the map [`decide_all`] reads (every object both watches hold, the pipelines held, this object's
//! Secret once read) and carries out its object's decision; the leader's go through kube-runtime's
//! `finalizer` helper, which adds extdns's finalizer and removes it once the status says the records stay.
//! Nothing polls: what must happen later comes back as a requeue (the Secret read again every
//! `--interval`, a backoff's end), a pipeline that ended triggers its object, a deletion or a new leader
//! triggers every object, and the watch's own events mark a kind listed or unavailable.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use extdns_controller::{CancellationToken, Metrics};
use extdns_dnsprovider::status::Reason;
use extdns_dnsprovider::{Credentials, FINALIZER, ProviderId, ProviderKind, ProviderObject};
use extdns_leader::Leadership;
use futures::{FutureExt as _, Stream, StreamExt as _};
use kube::api::{Api, DynamicObject};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::finalizer::{Error as FinalizerError, Event as Finalize, finalizer};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt as _, reflector::store::Writer};
use tokio::sync::mpsc;
use tracing::{Instrument as _, debug, info, warn};

use crate::decide::{self, Act, Decision, KindState, Now, Pipeline, PipelineState, Row, SecretRead, Seen};
use crate::factory::{PipelineFactory, PipelineRequest};
use crate::held::{Held, HeldPipelines, Running};
use crate::secret::read_secret;
use crate::status::{Observer, StatusWriter};

/// How soon a pipeline that has not synced once is looked at again, for the manager's readiness.
const STARTING: Duration = Duration::from_secs(1);

/// What the manager is configured with.
#[derive(Debug, Clone)]
pub struct ManagerConfig {
    /// `--interval`: how often each provider's Secret is read again.
    pub interval: Duration,
    /// The controller's namespace: where a ClusterDNSProvider's Secret is by default.
    pub namespace: String,
}

/// Why one reconcile failed (retried after [`decide::REBUILD_AFTER`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Adding or removing extdns's finalizer failed (the object changed meanwhile, or the API refused).
    #[error("{provider}: cannot update extdns's finalizer: {source}")]
    Finalizer {
        /// The provider object.
        provider: String,
        /// kube-runtime's error.
        #[source]
        source: FinalizerError<Infallible>,
    },
}

/// One kind's triggers: a pipeline that ended (its object), and everything (a deletion, a new leader).
struct Triggers {
    ended: mpsc::UnboundedSender<ObjectRef<DynamicObject>>,
    everything: mpsc::UnboundedSender<()>,
}

/// The manager's state, shared by both kinds' controllers.
pub struct Manager {
    client: kube::Client,
    factory: Arc<dyn PipelineFactory>,
    root: Arc<Metrics>,
    leadership: Leadership,
    config: ManagerConfig,
    stores: Vec<(ProviderKind, Store<DynamicObject>)>,
    kinds: Mutex<BTreeMap<usize, KindState>>,
    triggers: Vec<(ProviderKind, Triggers)>,
    held: HeldPipelines,
    writers: Mutex<BTreeMap<ProviderId, Arc<StatusWriter>>>,
}

fn index(kind: ProviderKind) -> usize {
    match kind {
        ProviderKind::Cluster => 0,
        ProviderKind::Namespaced => 1,
    }
}

/// A stream of what `rx` receives.
fn receiver<T: Send + 'static>(rx: mpsc::UnboundedReceiver<T>) -> impl Stream<Item = T> + Send + 'static {
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|item| (item, rx)) })
}

/// Runs the providers of both kinds' objects until `shutdown`, then stops every pipeline after its sync in
/// progress. `root` is the deployment's metrics (each pipeline's attached under its provider label, `/readyz`
/// once every provider synced once).
pub async fn run(
    client: kube::Client,
    factory: Arc<dyn PipelineFactory>,
    root: Arc<Metrics>,
    leadership: Leadership,
    config: ManagerConfig,
    shutdown: CancellationToken,
) {
    let mut watches = Vec::new();
    let mut stores = Vec::new();
    let mut triggers = Vec::new();
    for kind in ProviderKind::ALL {
        let writer: Writer<DynamicObject> = Writer::new(kind.api_resource());
        stores.push((kind, writer.as_reader()));
        let (ended, ended_rx) = mpsc::unbounded_channel();
        let (everything, everything_rx) = mpsc::unbounded_channel();
        triggers.push((kind, Triggers { ended, everything }));
        watches.push((kind, writer, ended_rx, everything_rx));
    }
    let manager = Arc::new(Manager {
        client: client.clone(),
        factory,
        root,
        leadership,
        config,
        stores: stores.clone(),
        kinds: Mutex::new(
            ProviderKind::ALL
                .iter()
                .map(|k| (index(*k), KindState::Waiting))
                .collect(),
        ),
        triggers,
        held: HeldPipelines::default(),
        writers: Mutex::new(BTreeMap::new()),
    });
    tokio::spawn(manager.clone().follow_leadership(shutdown.clone()));
    let controllers = watches.into_iter().map(|(kind, writer, ended, everything)| {
        let resource = kind.api_resource();
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        let m = manager.clone();
        let objects = reflector::reflector(
            writer,
            watcher::watcher(api, watcher::Config::default()).default_backoff(),
        )
        .inspect(move |event| m.watched(kind, event))
        .applied_objects();
        let (_, reader) = stores[index(kind)].clone();
        Controller::for_stream_with(objects, reader, resource)
            .reconcile_on(receiver(ended))
            .reconcile_all_on(receiver(everything))
            .graceful_shutdown_on(shutdown.clone().cancelled_owned())
            .run(reconcile, error_policy, manager.clone())
            .for_each(|result| {
                if let Err(e) = result {
                    debug!(error = %e, "provider object not reconciled");
                }
                std::future::ready(())
            })
    });
    futures::future::join_all(controllers).await;
    manager.held.stop_all(&manager.root).await;
}

async fn reconcile(object: Arc<DynamicObject>, m: Arc<Manager>) -> Result<Action, Error> {
    let Some(id) = ProviderId::of(&object) else {
        return Ok(Action::await_change());
    };
    let (seen, _) = Seen::of(&object);
    if !(m.leadership.is_leader() && (seen.finalized || !seen.deleting)) {
        // A follower writes no finalizer; nor does anyone on an object deleted without ours.
        return Ok(m.reconcile_one(&id, &object).await);
    }
    let api = m.api(&id);
    let result = finalizer(&api, FINALIZER, object, |event| async {
        let (Finalize::Apply(o) | Finalize::Cleanup(o)) = event;
        Ok::<_, Infallible>(m.reconcile_one(&id, &o).await)
    })
    .await;
    match result {
        // Gone already: the finalizer was the last thing holding it.
        Err(FinalizerError::RemoveFinalizer(kube::Error::Api(e))) if e.code == 404 => Ok(Action::await_change()),
        other => other.map_err(|source| Error::Finalizer {
            provider: id.to_string(),
            source,
        }),
    }
}

fn error_policy(_: Arc<DynamicObject>, error: &Error, _: Arc<Manager>) -> Action {
    if error.is_conflict() {
        // The object changed since the store had it (the helper's patch tests the finalizers it saw): the
        // newer object is decided again.
        debug!(%error, "trying again");
    } else {
        warn!(%error, "trying again");
    }
    Action::requeue(decide::REBUILD_AFTER)
}

impl Error {
    /// Whether the object changed under the write (409, or 422 from the patch's test of the finalizers).
    fn is_conflict(&self) -> bool {
        let Error::Finalizer { source, .. } = self;
        matches!(
            source,
            FinalizerError::AddFinalizer(kube::Error::Api(e)) | FinalizerError::RemoveFinalizer(kube::Error::Api(e))
                if e.code == 409 || e.code == 422
        )
    }
}

impl Manager {
    fn api(&self, id: &ProviderId) -> Api<DynamicObject> {
        let resource = id.kind().api_resource();
        match id.namespace() {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, &resource),
            None => Api::all_with(self.client.clone(), &resource),
        }
    }

    fn set_kind(&self, kind: ProviderKind, state: KindState) -> KindState {
        let mut kinds = self.kinds.lock().unwrap_or_else(PoisonError::into_inner);
        kinds.insert(index(kind), state).unwrap_or(KindState::Waiting)
    }

    /// Whether a kind has neither been listed nor found unavailable yet.
    fn a_kind_is_unlisted(&self) -> bool {
        let kinds = self.kinds.lock().unwrap_or_else(PoisonError::into_inner);
        kinds.values().any(|k| *k == KindState::Waiting)
    }

    fn trigger_everything(&self) {
        for (_, t) in &self.triggers {
            let _ = t.everything.send(());
        }
    }

    /// What a kind's watch delivered, after its store took it in: a first list marks the kind listed and
    /// drops the pipelines of objects gone meanwhile; a deletion stops its pipeline; an error before any
    /// list marks the kind unavailable, so readiness does not wait for it.
    fn watched(self: &Arc<Self>, kind: ProviderKind, event: &Result<Event<DynamicObject>, watcher::Error>) {
        match event {
            Ok(Event::InitDone) => {
                if self.set_kind(kind, KindState::Listed) != KindState::Listed {
                    // The other kind's objects are judged for conflicts against this list now: those that
                    // waited for it, and those that ran while this kind could not be listed.
                    self.trigger_everything();
                }
                let (_, store) = &self.stores[index(kind)];
                for id in self.held.ids().into_iter().filter(|id| id.kind() == kind) {
                    let present = store.state().iter().any(|o| ProviderId::of(o).as_ref() == Some(&id));
                    if !present {
                        tokio::spawn(self.clone().forget(id));
                    }
                }
                self.check_ready();
            }
            Ok(Event::Delete(o)) => {
                if let Some(id) = ProviderId::of(o) {
                    tokio::spawn(self.clone().forget(id));
                }
            }
            Err(e) => {
                if self.set_kind(kind, KindState::Unavailable) == KindState::Waiting {
                    warn!(kind = kind.kind(), error = %e, "cannot list the provider objects of this kind (is its CRD \
                          installed and may extdns list it?); trying again with backoff");
                    self.check_ready();
                }
            }
            Ok(_) => {}
        }
    }

    /// An object gone from the watch: decided as gone (its pipeline stops, its records stay), and every
    /// object looked at again (a provider it refused in a conflict may run now).
    async fn forget(self: Arc<Self>, id: ProviderId) {
        let row = Row {
            seen: None,
            object: None,
            secret: SecretRead::NotRead,
            pipeline: self.held.views().remove(&id),
        };
        if decide::decide(&row, None, self.now()).pipeline == Act::Stop {
            info!(provider = %id, "provider object deleted: its pipeline stops; its records are left in place");
            self.held.stop(&id, &self.root).await;
        }
        self.writers.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
        self.trigger_everything();
    }

    fn now(&self) -> Now {
        Now {
            at: Instant::now(),
            leader: self.leadership.is_leader(),
            interval: self.config.interval,
        }
    }

    fn writer(&self, id: &ProviderId, object: Option<&ProviderObject>) -> Arc<StatusWriter> {
        let mut writers = self.writers.lock().unwrap_or_else(PoisonError::into_inner);
        writers
            .entry(id.clone())
            .or_insert_with(|| {
                let status = object.and_then(|o| o.status.clone());
                Arc::new(StatusWriter::new(
                    self.api(id),
                    id.name(),
                    status,
                    self.leadership.clone(),
                ))
            })
            .clone()
    }

    /// The map the decision reads: every object of both watches (`object` for `id`, as reconciled), every
    /// pipeline held, and `secret` for `id`.
    fn rows(&self, id: &ProviderId, object: &DynamicObject, secret: &SecretRead) -> BTreeMap<ProviderId, Row> {
        let mut pipelines = self.held.views();
        let mut rows = BTreeMap::new();
        let objects = self.stores.iter().flat_map(|(_, s)| s.state());
        for o in objects.filter(|o| ProviderId::of(o).as_ref() != Some(id)) {
            if let Some(other) = ProviderId::of(&o) {
                let (seen, object) = Seen::of(&o);
                let pipeline = pipelines.remove(&other);
                let secret = SecretRead::NotRead;
                rows.insert(
                    other,
                    Row {
                        seen: Some(seen),
                        object,
                        secret,
                        pipeline,
                    },
                );
            }
        }
        let (seen, decoded) = Seen::of(object);
        let pipeline = pipelines.remove(id);
        rows.insert(
            id.clone(),
            Row {
                seen: Some(seen),
                object: decoded,
                secret: secret.clone(),
                pipeline,
            },
        );
        for (other, pipeline) in pipelines {
            let row = Row {
                seen: None,
                object: None,
                secret: SecretRead::NotRead,
                pipeline: Some(pipeline),
            };
            rows.insert(other, row);
        }
        rows
    }

    /// Decides `object`'s row (reading its Secret when the decision asks) and carries the decision out.
    async fn reconcile_one(&self, id: &ProviderId, object: &DynamicObject) -> Action {
        // Until both kinds are listed (or known unavailable), a conflict with an object of the other kind
        // cannot be seen: a newer provider over an older one's zones would run its first sync and delete what
        // it does not ask for. The other kind's first list triggers every object again.
        if self.a_kind_is_unlisted() {
            return Action::requeue(STARTING);
        }
        let (seen, decoded) = Seen::of(object);
        let writer = self.writer(id, decoded.as_ref());
        let mut secret = SecretRead::NotRead;
        let mut credentials = Credentials::default();
        let decision = loop {
            let now = self.now();
            let mut decisions = decide::decide_all(&self.rows(id, object, &secret), now);
            let decision = decisions.remove(id).unwrap_or_default();
            // This object's change made another conflict (its owner id or zones moved onto a running one's):
            // that one is looked at now, not at its next requeue.
            if decisions.values().any(|d| {
                matches!(
                    d.pipeline,
                    Act::Refuse {
                        reason: Reason::Conflict,
                        ..
                    }
                )
            }) {
                self.trigger_everything();
            }
            match (&decision.pipeline, &decoded) {
                (Act::ReadSecret, Some(p)) if secret == SecretRead::NotRead => {
                    match read_secret(&self.client, p, &self.config.namespace).await {
                        Ok((read, version)) => {
                            credentials = read;
                            secret = SecretRead::Read(version);
                        }
                        Err(e) => {
                            warn!(provider = %id, error = %e, "cannot use the provider's Secret");
                            secret = e.read();
                        }
                    }
                }
                _ => break decision,
            }
        };
        let requeue = self
            .act(
                id,
                object,
                &seen,
                decoded.as_ref(),
                &secret,
                &credentials,
                decision,
                &writer,
            )
            .await;
        self.check_ready();
        let requeue = match requeue {
            Some(d) if self.held.starting(id) => Some(d.min(STARTING)),
            None if self.held.starting(id) => Some(STARTING),
            other => other,
        };
        requeue.map_or_else(Action::await_change, Action::requeue)
    }

    /// Carries out `decision` for `id`; returns when to look again.
    #[allow(clippy::too_many_arguments)]
    async fn act(
        &self,
        id: &ProviderId,
        object: &DynamicObject,
        seen: &Seen,
        decoded: Option<&ProviderObject>,
        secret: &SecretRead,
        credentials: &Credentials,
        decision: Decision,
        writer: &Arc<StatusWriter>,
    ) -> Option<Duration> {
        let version = match secret {
            SecretRead::Read(v) => v.clone(),
            _ => None,
        };
        let refused = |reason, retry, failures| Held {
            pipeline: Pipeline {
                generation: seen.generation,
                secret_version: version.clone(),
                secret_read: Instant::now(),
                failures,
                state: PipelineState::Refused {
                    reason,
                    at: Instant::now(),
                    retry,
                },
            },
            running: None,
        };
        let mut decision = decision;
        match decision.pipeline {
            Act::Leave | Act::ReadSecret => {}
            Act::SecretChecked => self.held.update(id, |p| p.secret_read = Instant::now()),
            Act::Stop => {
                info!(provider = %id, "provider object being deleted: its pipeline stops; its records are left in place");
                self.held.stop(id, &self.root).await;
            }
            Act::Refuse {
                reason,
                retry,
                failures,
            } => {
                if let Some((_, why)) = &decision.status {
                    warn!(provider = %id, reason = reason.as_str(), error = %why, "the provider cannot run");
                }
                self.held.stop(id, &self.root).await;
                self.held.insert(id.clone(), refused(reason, retry, failures));
            }
            Act::Start { failures } | Act::Rebuild { failures } => {
                if matches!(decision.pipeline, Act::Rebuild { .. }) {
                    info!(provider = %id, generation = seen.generation, "provider object or its Secret changed: rebuilding its pipeline");
                    self.held.stop(id, &self.root).await;
                }
                // Said before the pipeline starts: its first sync may report before `start` returns.
                if let Some((reason, message)) = decision.status.take() {
                    writer.set(seen.generation, reason, message).await;
                }
                if let Some(p) = decoded
                    && let Err(e) = self
                        .start(p, object, credentials, version.clone(), failures, writer)
                        .await
                {
                    warn!(provider = %id, error = %e, "cannot start the provider's pipeline");
                    let failed = decide::build_failed(failures, e.may_pass(), &e.to_string());
                    if let Act::Refuse {
                        reason,
                        retry,
                        failures,
                    } = failed.pipeline
                    {
                        self.held.insert(id.clone(), refused(reason, retry, failures));
                    }
                    decision.status = failed.status;
                    decision.requeue = failed.requeue;
                }
            }
        }
        if let Some((reason, message)) = decision.status {
            writer.set(seen.generation, reason, message).await;
        }
        decision.requeue
    }

    /// Builds `object`'s pipeline and runs it as a task of its own.
    async fn start(
        &self,
        object: &ProviderObject,
        dynamic: &DynamicObject,
        credentials: &Credentials,
        secret_version: Option<String>,
        failures: u32,
        writer: &Arc<StatusWriter>,
    ) -> Result<(), crate::BuildError> {
        let id = &object.id;
        let includes_zones = object
            .spec
            .domain_filter
            .as_ref()
            .is_some_and(|f| !f.include.is_empty());
        let observer = Arc::new(Observer {
            writer: writer.clone(),
            generation: object.generation,
            includes_zones,
        });
        let cancel = CancellationToken::new();
        let built = self
            .factory
            .build(PipelineRequest {
                object,
                credentials,
                observer,
                cancel: cancel.clone(),
            })
            .await?;
        info!(provider = %id, r#type = %object.spec.type_, "provider pipeline started");
        self.root.attach(&id.label(), built.metrics.clone());
        let span = tracing::info_span!("provider", provider = %id.label());
        let trigger = self.triggers[index(id.kind())].1.ended.clone();
        let reference = ObjectRef::from_obj_with(dynamic, id.kind().api_resource());
        // Not stopped by the manager (a panic): the object decides what now (backoff, rebuild).
        let ended = move || {
            let _ = trigger.send(reference);
        };
        let running = Running::spawn(built.run.instrument(span).boxed(), cancel, built.metrics, ended);
        let pipeline = Pipeline {
            generation: object.generation,
            secret_version,
            secret_read: Instant::now(),
            failures,
            state: PipelineState::Running,
        };
        self.held.insert(
            id.clone(),
            Held {
                pipeline,
                running: Some(running),
            },
        );
        Ok(())
    }

    /// `/readyz` turns 200 once both kinds are listed (or known unavailable), every object listed has been
    /// decided, and every pipeline that runs synced once.
    fn check_ready(&self) {
        if self.root.is_ready() {
            return;
        }
        let kinds: Vec<KindState> = self
            .kinds
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .copied()
            .collect();
        let held = self.held.ids();
        let undecided = self
            .stores
            .iter()
            .flat_map(|(_, s)| s.state())
            .filter(|o| o.metadata.deletion_timestamp.is_none())
            .filter_map(|o| ProviderId::of(&o))
            .filter(|id| !held.contains(id))
            .map(|_| false);
        let synced: Vec<bool> = self.held.synced().into_iter().chain(undecided).collect();
        if decide::ready(&kinds, synced.iter().copied()) {
            info!(providers = synced.len(), "every provider synced once: ready");
            self.root.mark_ready();
        }
    }

    /// Follows the election: the leader gauge, and on becoming the leader, what was wanted meanwhile
    /// written and every object looked at again (the finalizers are the leader's).
    async fn follow_leadership(self: Arc<Self>, shutdown: CancellationToken) {
        let mut leadership = self.leadership.clone();
        let mut was = leadership.is_leader();
        self.root.set_leader(was);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = leadership.changed() => {}
            }
            let leads = leadership.is_leader();
            self.root.set_leader(leads);
            if leads && !was {
                let writers: Vec<Arc<StatusWriter>> = self
                    .writers
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .values()
                    .cloned()
                    .collect();
                for w in writers {
                    w.flush().await;
                }
                self.trigger_everything();
            }
            was = leads;
        }
    }
}
