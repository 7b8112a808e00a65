//! The runner: one kube-runtime `Controller` per kind of provider object, watch-driven. Each reconcile
//! builds the map [`decide_all`](crate::decide::decide_all) reads (every object both watches hold, the
//! pipelines held, this object's Secret once read) and carries out its object's decision ([`act`]); the
//! leader's go through kube-runtime's `finalizer` helper, which adds extdns's finalizer and removes it once
//! the status says the records stay. Nothing polls: what must happen later comes back as a requeue (the
//! Secret read again every `--interval`, a backoff's end, the next look at a pipeline not synced yet), a
//! pipeline that ended or synced first triggers its object, a deletion, a kind's first list or a new
//! leader triggers every object, and the watch's own events mark a kind listed or unavailable ([`watch`]).

mod act;
mod watch;

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use extdns_controller::{CancellationToken, Metrics};
use extdns_dnsprovider::{FINALIZER, ProviderId, ProviderKind, ProviderObject};
use extdns_leader::Leadership;
use futures::{Stream, StreamExt as _};
use kube::api::{Api, DynamicObject};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::finalizer::{Error as FinalizerError, Event as Finalize, finalizer};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher;
use kube::runtime::{WatchStreamExt as _, reflector::store::Writer};
use tokio::sync::mpsc;
use tracing::{debug, warn};

use crate::decide::{self, KindState, Now};
use crate::decoded::Decoded;
use crate::factory::PipelineFactory;
use crate::forbidden::{Forbidden, Write, is_forbidden};
use crate::held::HeldPipelines;
use crate::status::StatusWriter;

/// What the manager is configured with.
#[derive(Debug, Clone)]
pub struct ManagerConfig {
    /// `--interval`: how often each provider's Secret is read again.
    pub interval: Duration,
    /// The controller's namespace: where a ClusterDNSProvider's Secret is by default.
    pub namespace: String,
    /// Where a write the API server forbids is logged and counted ([`Forbidden::register`]).
    pub forbidden: Arc<Forbidden>,
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

/// One kind's triggers: an object to look at (its pipeline ended, or synced first), and everything (a
/// deletion, a kind's first list, a new leader).
struct Triggers {
    object: mpsc::UnboundedSender<ObjectRef<DynamicObject>>,
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
    decoded: Decoded,
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

/// What a kind's controller is fed from: its store's writer and its triggers' receivers.
struct Feeds {
    writer: Writer<DynamicObject>,
    object: mpsc::UnboundedReceiver<ObjectRef<DynamicObject>>,
    everything: mpsc::UnboundedReceiver<()>,
}

impl Manager {
    /// A manager over both kinds' stores, and what feeds each kind's controller.
    fn new(
        client: kube::Client,
        factory: Arc<dyn PipelineFactory>,
        root: Arc<Metrics>,
        leadership: Leadership,
        config: ManagerConfig,
    ) -> (Arc<Manager>, Vec<(ProviderKind, Feeds)>) {
        let mut feeds = Vec::new();
        let mut stores = Vec::new();
        let mut triggers = Vec::new();
        for kind in ProviderKind::ALL {
            let writer: Writer<DynamicObject> = Writer::new(kind.api_resource());
            stores.push((kind, writer.as_reader()));
            let (object, object_rx) = mpsc::unbounded_channel();
            let (everything, everything_rx) = mpsc::unbounded_channel();
            triggers.push((kind, Triggers { object, everything }));
            let feed = Feeds {
                writer,
                object: object_rx,
                everything: everything_rx,
            };
            feeds.push((kind, feed));
        }
        let kinds = ProviderKind::ALL
            .iter()
            .map(|k| (index(*k), KindState::Waiting))
            .collect();
        let manager = Manager {
            client,
            factory,
            root,
            leadership,
            config,
            stores,
            kinds: Mutex::new(kinds),
            triggers,
            held: HeldPipelines::default(),
            decoded: Decoded::default(),
            writers: Mutex::new(BTreeMap::new()),
        };
        (Arc::new(manager), feeds)
    }
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
    let (manager, feeds) = Manager::new(client.clone(), factory, root, leadership, config);
    tokio::spawn(manager.clone().follow_leadership(shutdown.clone()));
    let controllers = feeds.into_iter().map(|(kind, feed)| {
        let resource = kind.api_resource();
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        let m = manager.clone();
        let objects = reflector::reflector(
            feed.writer,
            watcher::watcher(api, watcher::Config::default()).default_backoff(),
        )
        .inspect(move |event| m.watched(kind, event))
        .applied_objects();
        let (_, reader) = manager.stores[index(kind)].clone();
        Controller::for_stream_with(objects, reader, resource)
            .reconcile_on(receiver(feed.object))
            .reconcile_all_on(receiver(feed.everything))
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
    let meta = &object.metadata;
    let finalized = meta.finalizers.iter().flatten().any(|f| f == FINALIZER);
    let deleting = meta.deletion_timestamp.is_some();
    if !(m.leadership.is_leader() && (finalized || !deleting)) {
        // A follower writes no finalizer; nor does anyone on an object deleted without ours.
        return Ok(m.reconcile_one(&id, &object).await);
    }
    let api = m.api(&id);
    let result = finalizer(&api, FINALIZER, object.clone(), |event| async {
        let (Finalize::Apply(o) | Finalize::Cleanup(o)) = event;
        Ok::<_, Infallible>(m.reconcile_one(&id, &o).await)
    })
    .await;
    match result {
        Ok(action) => {
            m.config.forbidden.allowed(&id, Write::Finalizer);
            Ok(action)
        }
        // Gone already: the finalizer was the last thing holding it.
        Err(FinalizerError::RemoveFinalizer(kube::Error::Api(e))) if e.code == 404 => Ok(Action::await_change()),
        // Without RBAC for the finalizer the provider runs all the same (a deletion then only stops it).
        Err(FinalizerError::AddFinalizer(e)) if is_forbidden(&e) => {
            m.config.forbidden.refused(&id, Write::Finalizer, &e);
            Ok(m.reconcile_one(&id, &object).await)
        }
        // Its pipeline is stopped; the object stays until its finalizer is removed: tried again at the
        // interval, not every few seconds.
        Err(FinalizerError::RemoveFinalizer(e)) if is_forbidden(&e) => {
            m.config.forbidden.refused(&id, Write::Finalizer, &e);
            Ok(Action::requeue(m.config.interval))
        }
        Err(source) => Err(Error::Finalizer {
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

    /// `id`'s object as its watch's store holds it now.
    fn stored(&self, id: &ProviderId) -> Option<Arc<DynamicObject>> {
        let mut reference = ObjectRef::new_with(id.name(), id.kind().api_resource());
        if let Some(ns) = id.namespace() {
            reference = reference.within(ns);
        }
        self.stores[index(id.kind())].1.get(&reference)
    }

    fn now(&self) -> Now {
        Now {
            at: Instant::now(),
            leader: self.leadership.is_leader(),
            interval: self.config.interval,
        }
    }

    fn trigger_everything(&self) {
        for (_, t) in &self.triggers {
            let _ = t.everything.send(());
        }
    }

    /// A function that has `id`'s object looked at again.
    fn trigger(&self, id: &ProviderId) -> impl FnOnce() + Send + 'static {
        let trigger = self.triggers[index(id.kind())].1.object.clone();
        let mut reference = ObjectRef::new_with(id.name(), id.kind().api_resource());
        if let Some(ns) = id.namespace() {
            reference = reference.within(ns);
        }
        move || {
            let _ = trigger.send(reference);
        }
    }

    /// The status writer of the object `id` of uid `uid` (a new one for an object made again under its
    /// name: what the old one wanted is not the new one's).
    fn writer(&self, id: &ProviderId, uid: Option<&str>, object: Option<&ProviderObject>) -> Arc<StatusWriter> {
        let mut writers = self.writers.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(w) = writers.get(id).filter(|w| w.uid() == uid) {
            return w.clone();
        }
        let writer = Arc::new(StatusWriter::new(
            self.api(id),
            (id.clone(), uid.map(str::to_string)),
            object.and_then(|o| o.status.clone()),
            self.leadership.clone(),
            self.config.forbidden.clone(),
        ));
        writers.insert(id.clone(), writer.clone());
        writer
    }
}

#[cfg(test)]
mod tests;
