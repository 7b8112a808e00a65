//! The cluster view backed by the API server: one kube-runtime watcher per kind the enabled sources read,
//! feeding one [`ClusterStore`].
//!
//! Every object of a list page or watch event is decoded on its own: one the typed model
//! cannot read is skipped with a warning naming it and the field at fault, and recorded in the store as
//! undecodable, while the list it came in still completes and the view still syncs. Objects are converted
//! to their compact view as they arrive and only the view is kept, never the API object, so memory grows
//! with the fields extdns reads (docs/performance.md has the figures).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt::Debug;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::ListParams;
use kube::core::{ApiResource, DynamicResourceScope, WatchEvent};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client, Resource};
use serde::Deserialize;
use serde::de::Deserializer;
use serde_json::Value;
use tokio::runtime::Handle;
use tokio::sync::watch;
use tokio::task::{AbortHandle, JoinHandle};

use crate::availability::{self, Choice, Served, Unavailable};
use crate::decode::DecodeError;
use crate::intern::Interner;
use crate::item::Item;
use crate::kinds::{self, ApiResourceOf, ChangeKey, Demand, KindSpec, KindVisitor, Scope, WatchIn, Watched};
use crate::pod_demand::{Cover, Fetches, PodDemand, selector_string};
use crate::watched::{self, Convert, PodAnnotationPrefixes};
use crate::{ChangeSet, Cluster, ClusterStore, KindOverrides, ObjectKey, ResourceKind, StrMap, Sym, TemplateFields};

/// What to watch, beyond the kinds.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct LiveOptions {
    /// The namespace Services, EndpointSlices, Pods and routes are watched in; `None` or empty means all
    /// namespaces.
    pub namespace: Option<String>,
    /// The namespace Gateways are watched in; `None` or empty means all.
    pub gateway_namespace: Option<String>,
    /// Label selectors sent to the API server, per kind, in the Kubernetes string syntax. Filtering
    /// server-side means objects that can never match are neither sent nor stored.
    pub label_selectors: BTreeMap<ResourceKind, String>,
    /// The annotations Pods keep.
    pub pod_annotation_prefixes: PodAnnotationPrefixes,
    /// The fields templates read, kept beyond the views.
    pub template_fields: TemplateFields,
    /// Keep only the Pods a headless or `Local` NodePort Service selects, listing a selector's Pods when such
    /// a Service appears ([`crate::pod_demand`]); otherwise every watched Pod is kept. The binary turns it
    /// on. A detached view cannot list: it keeps what it is fed and the demand allows.
    pub pods_on_demand: bool,
    /// Kinds watched at a configured resource instead of the table's (DNSEndpoints of
    /// `--crd-source-apiversion`/`--crd-source-kind`).
    pub overrides: KindOverrides,
    /// Kinds the table keeps on demand that an enabled source reads whole (the pod source reads every Pod
    /// of `--namespace`, not only those Services select): these are watched and kept whole, whatever
    /// [`pods_on_demand`](Self::pods_on_demand) says. Filled from what the sources declare
    /// (`Source::reads_whole` in extdns-source), never by kind name.
    pub read_whole: BTreeSet<ResourceKind>,
}

/// Why the live view could not start or sync.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InformerError {
    /// Watchers are tasks: they need a Tokio runtime to run on.
    #[error("the live cluster must be started inside a Tokio runtime")]
    NoRuntime(#[source] tokio::runtime::TryCurrentError),
    /// The initial list did not finish in time; nothing may be planned from a partial view.
    #[error("the initial list of {} did not complete within {timeout:?}", kinds(pending))]
    SyncTimeout {
        /// The kinds still listing.
        pending: Vec<ResourceKind>,
        /// How long was waited.
        timeout: Duration,
    },
}

fn kinds(list: &[ResourceKind]) -> String {
    list.iter().map(|k| k.kind()).collect::<Vec<_>>().join(", ")
}

/// A cluster view kept up to date by watchers. Dropping it stops the watchers.
#[derive(Debug)]
pub struct LiveCluster {
    inner: Arc<Inner>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for LiveCluster {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
        let fetches = &mut *self.inner.fetches();
        for t in fetches.tasks.drain(..).chain(fetches.watch.task.take()) {
            t.abort();
        }
    }
}

impl LiveCluster {
    /// Starts one watcher per kind in `kinds` (duplicates are watched once). The view is not
    /// [`synced`](Cluster::synced) until every watcher has completed its first list. Watch errors (an
    /// unreachable API server, missing RBAC, an absent CRD) are logged and retried with backoff; they keep
    /// the view unsynced rather than failing here.
    pub fn start(client: Client, kinds: &[ResourceKind], opts: LiveOptions) -> Result<LiveCluster, InformerError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(InformerError::NoRuntime)?;
        let kinds: BTreeSet<ResourceKind> = kinds.iter().copied().collect();
        let kinds_list: Vec<ResourceKind> = kinds.iter().copied().collect();
        let inner = Arc::new(Inner::new(ClusterStore::new(), &kinds_list, opts).with_api(client, runtime));
        let mut tasks = Vec::new();
        for kind in kinds {
            if inner.follows_demand && kinds::demand().is_some_and(|d| d.kept == kind) {
                // Started once the selecting kind is listed, for what it selects (crate::pod_demand).
                continue;
            }
            let spec = kind.spec();
            let namespace = inner.namespace_of(spec);
            let watch = Watch {
                namespace,
                labels: None,
                inner: Arc::clone(&inner),
            };
            tasks.extend(kinds::dispatch(kind, watch));
        }
        Ok(LiveCluster { inner, tasks })
    }

    /// A cluster with the same store and conversions but no watchers: events are fed with
    /// [`apply_event`](Self::apply_event). For benchmarks, and for tests that want the live behaviour
    /// without an API server. `kinds` are the kinds that must see `InitDone` before the view is synced.
    pub fn detached(kinds: &[ResourceKind], opts: LiveOptions) -> LiveCluster {
        LiveCluster {
            inner: Arc::new(Inner::new(ClusterStore::new(), kinds, opts)),
            tasks: Vec::new(),
        }
    }

    /// A view of objects that do not change, such as those loaded from manifest files: synced from the
    /// start, and no change is ever announced.
    pub fn from_store(store: ClusterStore) -> LiveCluster {
        LiveCluster {
            inner: Arc::new(Inner::new(store, &[], LiveOptions::default())),
            tasks: Vec::new(),
        }
    }

    /// Feeds one watcher event, exactly as the watcher of that kind would.
    pub fn apply_event<K: Watched>(&self, event: Event<K>) {
        let event = match event {
            Event::Apply(o) => Event::Apply(Decoded::Object(o)),
            Event::Delete(o) => Event::Delete(Decoded::Object(o)),
            Event::Init => Event::Init,
            Event::InitApply(o) => Event::InitApply(Decoded::Object(o)),
            Event::InitDone => Event::InitDone,
        };
        self.inner.ingest::<K>(event);
    }

    /// Feeds one line of a watch stream as the API server sends it (`{"type":"ADDED","object":{…}}`),
    /// decoded as the watcher of that kind decodes it: for benchmarks of the whole ingest path, from
    /// the API's text to the store. A bookmark or an error event changes nothing.
    pub fn apply_watch_line<K: Watched>(&self, line: &str) -> Result<(), serde_json::Error> {
        let event = match serde_json::from_str::<WatchEvent<Decoded<K>>>(line)? {
            WatchEvent::Added(o) | WatchEvent::Modified(o) => Event::Apply(o),
            WatchEvent::Deleted(o) => Event::Delete(o),
            WatchEvent::Bookmark(_) | WatchEvent::Error(_) => return Ok(()),
        };
        self.inner.ingest::<K>(event);
        Ok(())
    }

    /// Waits until every watcher has completed its first list, or fails naming the kinds still listing.
    pub async fn wait_until_synced(&self, timeout: Duration) -> Result<(), InformerError> {
        let mut changes = self.changes();
        let wait = async {
            while !self.synced() {
                if changes.changed().await.is_err() {
                    // The sender lives as long as `self`; unreachable in practice, and not a reason to spin.
                    std::future::pending::<()>().await;
                }
            }
        };
        tokio::time::timeout(timeout, wait)
            .await
            .map_err(|_| InformerError::SyncTimeout {
                pending: self.inner.unsynced_kinds(),
                timeout,
            })
    }

    /// The kinds whose first list has not completed yet.
    pub fn unsynced_kinds(&self) -> Vec<ResourceKind> {
        self.inner.unsynced_kinds()
    }

    /// The shared strings of stored Pods, for memory accounting.
    pub fn interner(&self) -> &Interner {
        self.inner.store.interner()
    }
}

/// Starts the watcher of a kind in `namespace` (all for `None`), at the version discovery finds served
/// ([`crate::availability`]), for the objects `labels` selects (a demand's cover) beyond the configured
/// selector; `None` for a view without API access.
struct Watch<'a> {
    namespace: Option<&'a str>,
    labels: Option<String>,
    inner: Arc<Inner>,
}

impl KindVisitor for Watch<'_> {
    type Output = Option<JoinHandle<()>>;
    fn visit<K: Watched>(self) -> Option<JoinHandle<()>> {
        let Watch {
            namespace,
            labels,
            inner,
        } = self;
        let ApiAccess { client, runtime } = inner.api.clone()?;
        let mut cfg = watcher::Config::default().any_semantic();
        let labels = inner.with_configured_selector(K::KIND, labels.as_deref());
        if !labels.is_empty() {
            cfg = cfg.labels(&labels);
        }
        let namespace = namespace.map(str::to_string);
        Some(runtime.spawn(run::<K>(client, namespace, cfg, inner)))
    }
}

/// Watches `K` at the version the server serves (discovery at start, shared by every kind), and again at
/// the version discovery then finds whenever a list gets 404. A kind configuration moved to another group,
/// version or kind (DNSEndpoints with `--crd-source-apiversion`) is watched where it says, at the plural
/// the server serves that kind at (discovery again; the configured guess until it can tell). A list
/// refused (403) or not served at any version extdns reads marks the kind unavailable; the watcher keeps
/// retrying with its backoff, so the kind becomes available again as soon as a list succeeds.
async fn run<K: Watched>(client: Client, namespace: Option<String>, cfg: watcher::Config, inner: Arc<Inner>) {
    let kind = K::KIND;
    let spec = kind.spec();
    let ns = namespace.as_deref();
    let overridden = inner.opts.overrides.get(kind).cloned();
    let mut resource = match &overridden {
        Some(configured) => {
            let served = inner.discovered.get_or_init(|| availability::discover(&client)).await;
            served
                .as_ref()
                .and_then(|s| s.resolve(configured))
                .unwrap_or_else(|| configured.clone())
        }
        None if spec.group.is_empty() => spec.api_resource(spec.preferred_version()),
        None => {
            let served = inner.discovered.get_or_init(|| availability::discover(&client)).await;
            match served.as_ref().map(|s| s.choose(spec)) {
                Some(Choice::Version(v)) => spec.api_resource(v),
                Some(Choice::None) => {
                    let resource = spec.api_resource(spec.preferred_version());
                    let why = Unavailable::of(&resource, spec.versions, 404, ns, served.as_ref());
                    inner.unavailable(kind, why);
                    resource
                }
                None => spec.api_resource(spec.preferred_version()),
            }
        }
    };
    let mut recheck = Recheck::default();
    // How many streaming lists this kind's watchers have started; the watchers' requests go through a client
    // that counts them (see `counting_streaming_lists`).
    let started = Arc::new(AtomicU64::new(0));
    let client = counting_streaming_lists(client, Arc::clone(&started));
    // Whether this kind's next watcher may stream its list. A streaming watch the server answers with
    // something other than watch events or a Status (`404 page not found` as text, for a resource it does
    // not serve) says nothing about why; the kind then lists in pages until a list succeeds, and a paged
    // list's errors carry the status (404, 403) the checks below act on.
    let mut may_stream = true;
    loop {
        // The versions extdns reads: a configured resource's own, else the table's.
        let own = [resource.version.as_str()];
        let reads: &[&str] = if overridden.is_some() { &own } else { spec.versions };
        let streaming = may_stream && inner.streaming_lists.load(Ordering::Relaxed);
        tracing::debug!(
            kind = %resource.kind, version = %resource.api_version, plural = %resource.plural, streaming, "watching"
        );
        inner.store.set_watched_at(kind, resource.clone());
        let api: Api<Decoded<K>> = match ns {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
            None => Api::all_with(client.clone(), &resource),
        };
        let cfg = if streaming {
            cfg.clone().streaming_lists()
        } else {
            cfg.clone()
        };
        let mut events = pin!(watcher::watcher(api, cfg).default_backoff());
        let mut next = None;
        // The list under way, if any, by the number of streaming lists started when it began; the store
        // buffers its objects and keeps serving the old view until it completes. A streaming list begins
        // with its first object, not with an `Init` event as a paged one does, so the store is told here.
        // The watcher starts a streaming list over after a 410, and without any event when its stream ends
        // before the end bookmark (a connection cut, an idle timeout): the next object is then the new
        // attempt's, and the count has moved. The attempt cut short is dropped, so the list that completes
        // replaces the view alone and an object deleted between the attempts goes; until then the view
        // stays as it was. A paged list starts over with an `Init` event of its own.
        let mut listing: Option<u64> = None;
        // Whether this watcher has completed a list (after that, its errors are the watch's own).
        let mut listed_once = false;
        while let Some(event) = events.next().await {
            match event {
                Ok(event) => {
                    let attempt = started.load(Ordering::SeqCst);
                    match event {
                        Event::Init => listing = Some(attempt),
                        Event::InitApply(_) | Event::InitDone if listing != Some(attempt) => {
                            if listing.is_some() {
                                tracing::debug!(
                                    kind = %resource.kind,
                                    "the streaming list was cut short and started over; listing anew"
                                );
                            }
                            inner.ingest::<K>(Event::Init);
                            listing = Some(attempt);
                        }
                        _ => {}
                    }
                    let listed = matches!(event, Event::InitDone);
                    inner.ingest::<K>(event);
                    if listed {
                        listing = None;
                        listed_once = true;
                        may_stream = true;
                        recheck = Recheck::default();
                        inner.available(kind, &resource.api_version);
                    }
                }
                Err(e) if streaming && refuses_streaming_lists(&e) => {
                    if inner.streaming_lists.swap(false, Ordering::Relaxed) {
                        tracing::info!(
                            kind = %resource.kind, error = %e,
                            "the API server does not serve streaming lists (WatchList); listing in pages"
                        );
                    }
                    next = Some(resource.clone());
                    break;
                }
                Err(e @ watcher::Error::WatchFailed(_)) if streaming && !listed_once && status_of(&e).is_none() => {
                    tracing::debug!(kind = %resource.kind, error = %e, "the streaming list failed; listing in pages");
                    may_stream = false;
                    next = Some(resource.clone());
                    break;
                }
                Err(e) => {
                    // A list the watcher starts over after an error is told apart as any restart is: by
                    // its `Init` (paged) or by the count of streaming lists started (`listing` above).
                    match status_of(&e) {
                        Some(404) => {
                            let served = availability::discover(&client).await;
                            let found = served.as_ref().and_then(|s| match &overridden {
                                Some(configured) => s.resolve(configured),
                                None => match s.choose(spec) {
                                    Choice::Version(v) => Some(spec.api_resource(v)),
                                    Choice::None => None,
                                },
                            });
                            match found {
                                Some(found) if found != resource => {
                                    tracing::info!(
                                        kind = %resource.kind, from = %resource.api_version, to = %found.api_version,
                                        plural = %found.plural, "the served version changed; watching it"
                                    );
                                    next = Some(found);
                                }
                                _ => {
                                    let why = Unavailable::of(&resource, reads, 404, ns, served.as_ref());
                                    inner.unavailable(kind, why);
                                    recheck.wait().await;
                                    next = Some(resource.clone());
                                }
                            }
                            break;
                        }
                        Some(403) => {
                            inner.unavailable(kind, Unavailable::of(&resource, reads, 403, ns, None));
                            recheck.wait().await;
                            next = Some(resource.clone());
                            break;
                        }
                        _ => tracing::warn!(kind = %resource.kind, error = %e, "watch failed; retrying with backoff"),
                    }
                }
            }
        }
        // A new watcher for the re-check, so the pause is the re-check's alone, not the watcher's growing backoff.
        match next {
            Some(found) => resource = found,
            None => return,
        }
    }
}

/// `client`, counting in `started` each streaming list (a watch with `sendInitialEvents=true`) it sends.
/// kube-runtime's watcher starts a streaming list over without an event when its stream ends before the
/// bookmark that ends the initial events (`State::InitialWatch` on the stream's end, in kube-runtime
/// 4.2's `watcher.rs`), so its events cannot tell one attempt's objects from the next's; its requests
/// can. The watcher sends the request of an attempt after the last event of the one before and before
/// the first of its own, so the count read with an event is that of the attempt the event belongs to.
fn counting_streaming_lists(client: Client, started: Arc<AtomicU64>) -> Client {
    let default_namespace = client.default_namespace().to_string();
    let counting = tower::service_fn(move |request: http::Request<kube::client::Body>| {
        if starts_streaming_list(request.uri()) {
            started.fetch_add(1, Ordering::SeqCst);
        }
        let client = client.clone();
        async move { client.send(request).await }
    });
    Client::new(counting, default_namespace)
}

/// Whether a request is a streaming list: a watch that asks for the initial events.
fn starts_streaming_list(uri: &http::Uri) -> bool {
    uri.query()
        .is_some_and(|q| q.split('&').any(|p| p == "sendInitialEvents=true"))
}

/// Whether the API server refused a streaming list (`sendInitialEvents`): 422 from servers with the WatchList
/// feature off, and from those before 1.27, which refuse `resourceVersionMatch` on a watch; 400 from any that
/// cannot parse the request. The refusal is the watch response's status, which the client reports either
/// as the watch failing to start or as the first item of its stream.
fn refuses_streaming_lists(e: &watcher::Error) -> bool {
    matches!(
        e,
        watcher::Error::WatchStartFailed(kube::Error::Api(s)) | watcher::Error::WatchFailed(kube::Error::Api(s))
            if s.code == 422 || s.code == 400
    )
}

/// The pause before listing an unavailable kind again: from one second, doubling, capped at 30 s (a CRD
/// installed or a Role granted is picked up within that). Each re-check starts a new watcher, whose own
/// backoff starts afresh.
#[derive(Debug, Default)]
struct Recheck {
    attempts: u32,
}

impl Recheck {
    async fn wait(&mut self) {
        let delay = Duration::from_secs(1u64 << self.attempts.min(5)).min(Duration::from_secs(30));
        self.attempts = self.attempts.saturating_add(1);
        tokio::time::sleep(delay).await;
    }
}

/// The HTTP status of a failed list or watch, when the API server answered one (also how the provider
/// manager tells a kind that cannot be listed from a transient failure).
pub fn status_of(e: &watcher::Error) -> Option<u16> {
    match e {
        watcher::Error::InitialListFailed(kube::Error::Api(s))
        | watcher::Error::WatchStartFailed(kube::Error::Api(s))
        | watcher::Error::WatchFailed(kube::Error::Api(s)) => Some(s.code),
        watcher::Error::WatchError(s) => Some(s.code),
        _ => None,
    }
}

impl Cluster for LiveCluster {
    fn store(&self) -> Arc<ClusterStore> {
        Arc::clone(&self.inner.store)
    }

    fn synced(&self) -> bool {
        self.inner.unsynced_kinds().is_empty()
    }

    fn changes(&self) -> watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    fn take_changes(&self) -> ChangeSet {
        std::mem::take(&mut *self.inner.pending_changes())
    }
}

/// One object of kind `K` as a list page or watch event carries it, decoded on its own so that an object
/// the typed model cannot read fails alone instead of failing the list (and with it every sync).
#[derive(Debug, Clone)]
enum Decoded<K> {
    Object(K),
    /// What could be read of its metadata (its identity and resource version), and why the rest could not.
    Undecodable {
        meta: Box<ObjectMeta>,
        error: DecodeError,
    },
}

/// The API resource (group, version, plural) travels as the dynamic type, so the version watched is the
/// one the table or discovery chooses, not the one the typed model was generated from.
impl<K: Watched> Resource for Decoded<K> {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        Cow::Borrowed(&dt.kind)
    }
    fn group(dt: &ApiResource) -> Cow<'_, str> {
        Cow::Borrowed(&dt.group)
    }
    fn version(dt: &ApiResource) -> Cow<'_, str> {
        Cow::Borrowed(&dt.version)
    }
    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        Cow::Borrowed(&dt.api_version)
    }
    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        Cow::Borrowed(&dt.plural)
    }
    fn meta(&self) -> &ObjectMeta {
        match self {
            Decoded::Object(o) => o.meta(),
            Decoded::Undecodable { meta, .. } => meta,
        }
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        match self {
            Decoded::Object(o) => o.meta_mut(),
            Decoded::Undecodable { meta, .. } => meta,
        }
    }
}

impl<'de, K: Watched> Deserialize<'de> for Decoded<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut value = Value::deserialize(deserializer)?;
        Ok(match watched::decode::<K>(&mut value) {
            Ok(o) => Decoded::Object(o),
            Err(error) => Decoded::Undecodable {
                meta: Box::new(identity(&value)),
                error,
            },
        })
    }
}

/// The metadata of an object that failed to decode: all of it when it reads, else at least what the
/// watcher and the store need (name, namespace, resource version).
fn identity(value: &Value) -> ObjectMeta {
    let meta = value.get("metadata").unwrap_or(&Value::Null);
    ObjectMeta::deserialize(meta).unwrap_or_else(|_| {
        let field = |f: &str| meta.get(f).and_then(Value::as_str).map(str::to_string);
        ObjectMeta {
            name: field("name"),
            namespace: field("namespace"),
            resource_version: field("resourceVersion"),
            ..ObjectMeta::default()
        }
    })
}

/// Everything the watcher tasks and the view share.
#[derive(Debug)]
struct Inner {
    opts: LiveOptions,
    store: Arc<ClusterStore>,
    changes: watch::Sender<u64>,
    unsynced: Mutex<BTreeSet<ResourceKind>>,
    /// What changed since the controller last took the changes.
    pending: Mutex<ChangeSet>,
    /// For listing the Pods a new demand selects; `None` for a detached view.
    api: Option<ApiAccess>,
    /// Whether the kept kind's watcher follows the demand ([`crate::pod_demand`]): on demand, with API
    /// access, and both the kept and the selecting kind watched.
    follows_demand: bool,
    /// Which Pods are kept ([`LiveOptions::pods_on_demand`]).
    demand: Mutex<PodDemand>,
    fetches: Mutex<Fetches>,
    /// What the API discovery at start found, shared by every watcher (one request for all of them).
    discovered: tokio::sync::OnceCell<Option<Served>>,
    /// Whether initial lists stream (WatchList: one watch with `sendInitialEvents`, objects one by one,
    /// instead of pages of a LIST the API server builds whole in memory). Cleared for every kind the first
    /// time the server refuses one, so the others list in pages straight away.
    streaming_lists: AtomicBool,
}

#[derive(Clone)]
struct ApiAccess {
    client: Client,
    runtime: Handle,
}

impl Debug for ApiAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiAccess")
    }
}

impl Inner {
    fn new(store: ClusterStore, kinds: &[ResourceKind], opts: LiveOptions) -> Self {
        Inner {
            opts,
            store: Arc::new(store),
            changes: watch::Sender::new(0),
            unsynced: Mutex::new(kinds.iter().copied().collect()),
            pending: Mutex::new(ChangeSet::new()),
            api: None,
            follows_demand: false,
            demand: Mutex::new(PodDemand::default()),
            fetches: Mutex::new(Fetches::default()),
            discovered: tokio::sync::OnceCell::new(),
            streaming_lists: AtomicBool::new(true),
        }
    }

    fn with_api(mut self, client: Client, runtime: Handle) -> Self {
        self.api = Some(ApiAccess { client, runtime });
        let demand = self.on_demand();
        let watched = self.unsynced.get_mut().unwrap_or_else(|e| e.into_inner());
        self.follows_demand = demand.is_some_and(|d| watched.contains(&d.kept) && watched.contains(&d.selected_by));
        self
    }

    /// The namespace a kind is watched in; `None` for all.
    fn namespace_of(&self, spec: &KindSpec) -> Option<&str> {
        let configured = match spec.scope {
            Scope::Cluster | Scope::Namespaced(WatchIn::All) => None,
            Scope::Namespaced(WatchIn::Sources) => self.opts.namespace.as_deref(),
            Scope::Namespaced(WatchIn::Gateways) => self.opts.gateway_namespace.as_deref(),
        };
        configured.filter(|n| !n.is_empty())
    }

    /// What every conversion of this view shares.
    fn convert(&self) -> Convert<'_> {
        Convert {
            interner: self.store.interner(),
            pod_annotation_prefixes: &self.opts.pod_annotation_prefixes,
            template_fields: &self.opts.template_fields,
        }
    }

    /// The kinds whose first list has not completed, and those a list of new demand is in flight for. A
    /// kind found unavailable is not among them: it is known missing, not pending.
    fn unsynced_kinds(&self) -> Vec<ResourceKind> {
        let mut kinds = self.unsynced.lock().unwrap_or_else(|e| e.into_inner()).clone();
        kinds.extend(self.demand_listing());
        let unavailable = self.store.unavailable_kinds();
        kinds.retain(|k| !unavailable.contains_key(k));
        kinds.into_iter().collect()
    }

    /// Records that `kind` cannot be listed. The first time for a cause it warns once, naming the kind,
    /// the version tried, the status and what is missing, and the view counts as changed: what needs the
    /// kind must now be held, and the view may just have become synced without it.
    fn unavailable(&self, kind: ResourceKind, why: Unavailable) {
        let before = self.store.set_unavailable(kind, Some(why.clone()));
        if before.as_ref().map(|b| b.reason) == Some(why.reason) {
            tracing::debug!(%kind, %why, "still unavailable");
            return;
        }
        // A configured kind is named as configured (`--crd-source-kind`), not as the table's row.
        let name = self.opts.overrides.get(kind).map_or(kind.kind(), |r| r.kind.as_str());
        tracing::warn!(
            kind = %name, version = %why.api_version, status = why.status, reason = %why.reason, missing = %why.missing,
            "cannot list this kind: what needs it is held, everything else syncs; re-checking with backoff"
        );
        self.selecting_unavailable(kind);
        self.pending_changes().mark_everything();
        self.bump();
    }

    /// Records that `kind` was listed at `api_version`; if it was unavailable, the whole view changed.
    fn available(&self, kind: ResourceKind, api_version: &str) {
        if self.store.set_unavailable(kind, None).is_some() {
            tracing::info!(%kind, version = api_version, "listed: available again");
            self.pending_changes().mark_everything();
            self.bump();
        }
    }

    fn is_synced(&self, kind: ResourceKind) -> bool {
        !self.unsynced.lock().unwrap_or_else(|e| e.into_inner()).contains(&kind)
    }

    /// Marks a kind listed; true when it was the last one, i.e. the whole view just became synced.
    fn mark_synced(&self, kind: ResourceKind) -> bool {
        let mut unsynced = self.unsynced.lock().unwrap_or_else(|e| e.into_inner());
        unsynced.remove(&kind) && unsynced.is_empty()
    }

    fn fetches(&self) -> MutexGuard<'_, Fetches> {
        self.fetches.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn demand(&self) -> MutexGuard<'_, PodDemand> {
        self.demand.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn bump(&self) {
        self.changes.send_modify(|c| *c = c.wrapping_add(1));
    }

    /// Applies one watcher event to the store. Changes bump the counter once the kind has been listed;
    /// the first list bumps it once, when the last kind completes, so a waiter sees the view become
    /// synced.
    fn ingest<K: Watched>(self: &Arc<Self>, event: Event<Decoded<K>>) {
        let kind = K::KIND;
        let store = &*self.store;
        let Some(index) = store.index::<K::View>(kind) else {
            tracing::error!(%kind, "no index for this kind; its events are ignored");
            return;
        };
        let convert = self.convert();
        let ns = |m: &ObjectMeta| store.interner().intern(m.namespace.as_deref().unwrap_or_default());
        let name = |m: &ObjectMeta| -> Box<str> { m.name.as_deref().unwrap_or_default().into() };
        // The object an incremental sync must look at: its namespace, its name and, for kinds stored in
        // groups (EndpointSlices by Service), the groups it left and joined.
        type Touched = (Sym, Box<str>, [Option<Box<str>>; 2]);
        let mut touched: Option<Touched> = None;
        // What the object announced before the event and after it (a Service's selector labels).
        let mut announced = Vec::new();
        let changed = match event {
            Event::Apply(Decoded::Object(o)) => {
                let (ns, name) = (ns(o.meta()), name(o.meta()));
                let view = watched::convert(&o, &convert);
                let groups = [index.group_of(&ns, &name), view.group().map(Box::from)];
                announced = index.announced_of(&ns, &name);
                announced.extend(view.announces());
                touched = Some((ns.clone(), name.clone(), groups));
                if self.keeps(&view, &ns) {
                    index.upsert(ns, view, watched::uid(&o))
                } else {
                    index.remove(&ns, &name)
                }
            }
            Event::Apply(Decoded::Undecodable { meta, error }) => {
                warn_undecodable(kind, &meta, &error);
                let (ns, name) = (ns(&meta), name(&meta));
                touched = Some((ns.clone(), name.clone(), [index.group_of(&ns, &name), None]));
                announced = index.announced_of(&ns, &name);
                index.mark_undecodable(ns, &name)
            }
            Event::Delete(o) => {
                let m = o.meta();
                let (ns, name) = (ns(m), name(m));
                touched = Some((ns.clone(), name.clone(), [index.group_of(&ns, &name), None]));
                announced = index.announced_of(&ns, &name);
                index.remove(&ns, &name)
            }
            Event::Init => {
                self.demand_relisting(kind);
                index.begin_relist();
                false
            }
            Event::InitApply(Decoded::Object(o)) => {
                let ns = ns(o.meta());
                let view = watched::convert(&o, &convert);
                if self.keeps(&view, &ns) {
                    index.relist_add(ns, Ok((view, watched::uid(&o))));
                }
                false
            }
            Event::InitApply(Decoded::Undecodable { meta, error }) => {
                warn_undecodable(kind, &meta, &error);
                index.relist_add(ns(&meta), Err(name(&meta)));
                false
            }
            Event::InitDone => {
                index.finish_relist();
                let was_synced = self.is_synced(kind);
                // Before the kind counts as listed: from then on the kept kind's objects are stored only if
                // the demand selects them, so one ingested before the demand is rebuilt would be lost.
                self.selecting_listed(kind, !was_synced);
                let now_all_synced = self.mark_synced(kind);
                tracing::debug!(%kind, objects = index.len(), "list complete");
                self.kept_listed(kind);
                if was_synced {
                    // A re-list after a watch desync may have changed anything, and says nothing of what.
                    self.pending_changes().mark_everything();
                }
                was_synced || now_all_synced
            }
        };
        if let Some((ns, name, _)) = &touched {
            self.demand_touched(kind, ns, name, changed);
        }
        if changed && self.is_synced(kind) {
            if let Some((ns, name, groups)) = touched {
                let mut pending = self.pending_changes();
                match kind.spec().changes {
                    ChangeKey::Group => {
                        for group in groups.iter().flatten() {
                            pending.insert(ObjectKey::new(kind, &ns, group));
                        }
                    }
                    ChangeKey::Own => pending.insert(ObjectKey::new(kind, &ns, &name)),
                }
                pending.announce(announced);
            }
            self.bump();
        }
    }

    fn pending_changes(&self) -> MutexGuard<'_, ChangeSet> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    // Pods on demand: the bookkeeping is crate::pod_demand's, what the view does with it is here.

    /// The demand of the kind table, when the view keeps on demand: asked to, and no source reads the kept
    /// kind whole.
    fn on_demand(&self) -> Option<Demand> {
        kinds::demand().filter(|d| self.opts.pods_on_demand && !self.opts.read_whole.contains(&d.kept))
    }

    /// The label selector the kept kind is listed with: `labels` (a demand's) and the configured one.
    fn with_configured_selector(&self, kind: ResourceKind, labels: Option<&str>) -> String {
        let configured = self.opts.label_selectors.get(&kind).map(String::as_str);
        [labels, configured]
            .into_iter()
            .flatten()
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Whether the store keeps this view: every one, except objects of the kept kind nothing selects. Until
    /// the selecting kind is listed the demand is unknown and every object is kept (a live view's watcher of
    /// the kept kind starts only then; a detached one drops the unselected objects then, in
    /// [`Inner::selecting_listed`]).
    fn keeps<V: Item>(&self, view: &V, ns: &str) -> bool {
        match (self.on_demand(), view.labels()) {
            (Some(d), Some(labels)) if view.kind() == d.kept && self.is_synced(d.selected_by) => {
                self.demand().wants(ns, labels)
            }
            _ => true,
        }
    }

    /// Drops the stored objects of the kept kind the demand does not select.
    fn prune(&self, d: Demand) {
        let Some(index) = self.store.any_index(d.kept) else {
            return;
        };
        let demand = self.demand();
        let dropped = index.retain_labelled(&|ns, labels| demand.wants(ns, labels));
        tracing::debug!(dropped, kind = %d.kept, "dropped the objects nothing selects");
    }

    /// After an event of a selecting object: brings the demand up to date and lists what it newly selects.
    fn selector_changed(self: &Arc<Self>, d: Demand, ns: &Sym, name: &str) {
        let selector = self
            .store
            .any_index(d.selected_by)
            .and_then(|i| i.selector_of(ns, name));
        let fetch = match selector {
            Some(selector) => self.demand().upsert(ns, name, selector.as_ref()),
            None => {
                self.demand().remove(ns, name);
                None
            }
        };
        let Some(selector) = fetch else {
            return;
        };
        if self.follows_demand && !self.fetches().watch.cover.covers(&selector) {
            let cover = Cover::of(&self.demand());
            self.follow(d, cover);
        } else {
            self.fetch_selected(d, ns.clone(), selector);
        }
    }

    /// After a list of the selecting kind: the demand from scratch, and what it newly selects. The first
    /// list starts the kept kind's watcher with its cover, or, in a detached view, where every object was
    /// kept until then, drops the ones not selected. A later list starts the watcher over when the cover
    /// grew, and otherwise lists what the demand newly selects.
    fn selectors_relisted(self: &Arc<Self>, d: Demand, first: bool) {
        let selecting = self
            .store
            .any_index(d.selected_by)
            .map(|i| i.selectors())
            .unwrap_or_default();
        let fetch = self.demand().rebuild(selecting.into_iter());
        if self.follows_demand {
            let cover = Cover::of(&self.demand());
            if first || !self.fetches().watch.cover.contains(&cover) {
                self.follow(d, cover);
                return;
            }
        } else if first {
            self.prune(d);
            return;
        }
        for (ns, selector) in fetch {
            self.fetch_selected(d, ns, selector);
        }
    }

    /// Starts the kept kind's watcher (over) with `cover`, the cover of the whole demand. With nothing to
    /// cover, a running watcher is left as it is (keeping too much is safe) and without one the kind counts as
    /// listed, empty. A watcher started after the kind was first listed holds the view unsynced until its
    /// list is in, and that list counts as a re-list (everything may have changed meanwhile).
    fn follow(self: &Arc<Self>, d: Demand, cover: Cover) {
        let mut fetches = self.fetches();
        let watch = &mut fetches.watch;
        if cover == Cover::Nothing {
            let watching = watch.task.is_some();
            drop(fetches);
            if !watching && self.mark_synced(d.kept) {
                self.bump();
            }
            return;
        }
        if let Some(old) = watch.task.take() {
            old.abort();
        }
        let labels = cover.label_selector();
        tracing::debug!(kind = %d.kept, selector = labels.as_deref().unwrap_or("(everything)"), "watching what the demand selects");
        watch.cover = cover;
        watch.listing = self.is_synced(d.kept);
        let spec = d.kept.spec();
        let start = Watch {
            namespace: self.namespace_of(spec),
            labels,
            inner: Arc::clone(self),
        };
        watch.task = kinds::dispatch(d.kept, start).map(|t| t.abort_handle());
    }

    /// The selecting kind cannot be listed: until it can nothing selects the kept kind, so a kept kind still
    /// waiting for its demand counts as listed, empty, instead of holding the whole view.
    fn selecting_unavailable(&self, kind: ResourceKind) {
        let Some(d) = self
            .on_demand()
            .filter(|d| d.selected_by == kind && self.follows_demand)
        else {
            return;
        };
        if self.fetches().watch.task.is_none() {
            self.mark_synced(d.kept);
        }
    }

    /// Lists the objects of the kept kind in `namespace` that `selector` selects into the store, holding the
    /// view unsynced until they are in; deferred while the kept kind is (re-)listing.
    fn fetch_selected(self: &Arc<Self>, d: Demand, namespace: Sym, selector: StrMap) {
        let Some(api) = self.api.clone() else {
            // Detached: events are fed by hand, there is nothing to list from.
            return;
        };
        let relisting = self.store.any_index(d.kept).is_some_and(|i| i.is_relisting());
        if !self.is_synced(d.kept) || relisting {
            self.fetches().deferred.push((namespace, selector));
            return;
        }
        let id = {
            let mut fetches = self.fetches();
            fetches.next += 1;
            let id = fetches.next;
            fetches.active.insert(id, HashSet::new());
            id
        };
        let labels = self.with_configured_selector(d.kept, Some(&selector_string(&selector)));
        let list = ListSelected {
            inner: Arc::clone(self),
            api,
            namespace,
            labels,
            id,
        };
        let task = kinds::dispatch(d.kept, list);
        let mut fetches = self.fetches();
        fetches.tasks.retain(|t| !t.is_finished());
        fetches.tasks.push(task);
    }

    /// Stores the objects a fetch listed, except those a watch event touched meanwhile, and lets the view
    /// sync.
    fn apply_fetched<K: Watched>(&self, id: u64, objects: Vec<Decoded<K>>) {
        let touched = self.fetches().active.remove(&id).unwrap_or_default();
        let store = &*self.store;
        let Some(index) = store.index::<K::View>(K::KIND) else {
            return;
        };
        let mut stored = 0usize;
        for object in objects {
            let meta = object.meta();
            let ns = store.interner().intern(meta.namespace.as_deref().unwrap_or_default());
            let name: Box<str> = meta.name.as_deref().unwrap_or_default().into();
            if touched.contains(&(ns.clone(), name.clone())) {
                continue;
            }
            let changed = match object {
                Decoded::Object(o) => {
                    let view = watched::convert(&o, &self.convert());
                    self.keeps(&view, &ns) && index.upsert(ns.clone(), view, watched::uid(&o))
                }
                Decoded::Undecodable { meta, error } => {
                    warn_undecodable(K::KIND, &meta, &error);
                    index.mark_undecodable(ns.clone(), &name)
                }
            };
            if changed {
                stored += 1;
                self.pending_changes().insert(ObjectKey::new(K::KIND, &ns, &name));
            }
        }
        tracing::debug!(stored, kind = %K::KIND, "listed the objects of a new selector");
        self.bump();
    }

    /// The kind a list of new demand is in flight for, if any: it reads unsynced meanwhile.
    fn demand_listing(&self) -> Option<ResourceKind> {
        let d = kinds::demand()?;
        let fetches = self.fetches();
        (!fetches.active.is_empty() || fetches.watch.listing).then_some(d.kept)
    }

    /// A list of `kind` starts: a list of the kept kind keeps the objects of the demand so far, so the
    /// fetches asked for meanwhile wait for it.
    fn demand_relisting(&self, kind: ResourceKind) {
        if kinds::demand().is_some_and(|d| d.kept == kind) {
            self.fetches().deferred.clear();
        }
    }

    /// An event touched the object `ns/name` of `kind` (`changed`: its view changed): an object of the kept
    /// kind is then at least as new as any list in flight, and a selecting object's demand may have changed.
    fn demand_touched(self: &Arc<Self>, kind: ResourceKind, ns: &Sym, name: &str, changed: bool) {
        let Some(d) = kinds::demand() else {
            return;
        };
        if kind == d.kept {
            let mut fetches = self.fetches();
            for seen in fetches.active.values_mut() {
                seen.insert((ns.clone(), name.into()));
            }
        }
        if changed && kind == d.selected_by && self.on_demand().is_some() {
            self.selector_changed(d, ns, name);
        }
    }

    /// A complete list of the selecting kind (`first`: its first one), before that kind counts as listed:
    /// the demand follows it, and a live view's kept-kind watcher starts with its cover. Were the kind marked
    /// listed first, an object of the kept kind ingested in between (a detached view may be fed both kinds at
    /// once) would meet the old, possibly empty, demand and be dropped for good: the first list of a detached
    /// view fetches nothing, as every object was kept until then.
    fn selecting_listed(self: &Arc<Self>, kind: ResourceKind, first: bool) {
        if let Some(d) = self.on_demand().filter(|d| d.selected_by == kind) {
            self.selectors_relisted(d, first);
        }
    }

    /// A complete list of the kept kind, once it counts as listed: drops what the demand does not select
    /// (objects listed before the selecting kind was in were all kept) and starts the fetches deferred
    /// during it.
    fn kept_listed(self: &Arc<Self>, kind: ResourceKind) {
        let Some(d) = self.on_demand().filter(|d| d.kept == kind) else {
            return;
        };
        {
            // Only the running watcher's list ends the wait: one just aborted for a wider cover may still be
            // finishing its last event on another worker thread.
            let watch = &mut self.fetches().watch;
            if watch.task.as_ref().map(AbortHandle::id) == tokio::task::try_id() {
                watch.listing = false;
            }
        }
        if self.is_synced(d.selected_by) {
            self.prune(d);
        }
        let deferred = std::mem::take(&mut self.fetches().deferred);
        for (ns, selector) in deferred {
            self.fetch_selected(d, ns, selector);
        }
    }
}

/// Lists the objects of a kind in `namespace` that `labels` selects (new demand), then stores them
/// ([`Inner::apply_fetched`]).
struct ListSelected {
    inner: Arc<Inner>,
    api: ApiAccess,
    namespace: Sym,
    labels: String,
    id: u64,
}

impl KindVisitor for ListSelected {
    type Output = AbortHandle;
    fn visit<K: Watched>(self) -> AbortHandle {
        let ListSelected {
            inner,
            api: ApiAccess { client, runtime },
            namespace,
            labels,
            id,
        } = self;
        let task = runtime.spawn(async move {
            let spec = K::KIND.spec();
            let api: Api<Decoded<K>> =
                Api::namespaced_with(client, &namespace, &spec.api_resource(spec.preferred_version()));
            let objects = list_all(&api, &labels).await;
            inner.apply_fetched(id, objects);
        });
        task.abort_handle()
    }
}

/// Every object `labels` selects (pages of 500, as the watchers list), retried with backoff until the list
/// succeeds: the view stays unsynced meanwhile, which is the safe side.
async fn list_all<K: Watched>(api: &Api<Decoded<K>>, labels: &str) -> Vec<Decoded<K>> {
    let mut delay = Duration::from_secs(1);
    loop {
        match list_pages(api, labels).await {
            Ok(items) => return items,
            Err(e) => {
                tracing::warn!(error = %e, selector = labels, retry_in = ?delay, kind = %K::KIND,
                    "listing the objects a new selector selects failed");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(30));
            }
        }
    }
}

async fn list_pages<K: Watched>(api: &Api<Decoded<K>>, labels: &str) -> Result<Vec<Decoded<K>>, kube::Error> {
    let mut params = ListParams::default().limit(500);
    if !labels.is_empty() {
        params = params.labels(labels);
    }
    let mut items = Vec::new();
    loop {
        let page = api.list(&params).await?;
        items.extend(page.items);
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(items),
        }
    }
}

/// Names the object and the field, never the object's content beyond the (cut) offending value.
fn warn_undecodable(kind: ResourceKind, meta: &ObjectMeta, error: &DecodeError) {
    let object = ObjectKey::new(
        kind,
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default(),
    );
    tracing::warn!(
        %object, field = %error.path, problem = %error.problem,
        "skipping an object that cannot be decoded; the other objects are read as usual"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StrMap;
    use crate::view::{Pod, RouteKind, Service};
    use k8s_openapi::api::core::v1 as core;
    use k8s_openapi::api::discovery::v1 as discovery;
    use serde_json::json;

    fn slice(name: &str, ns: &str, service: &str) -> discovery::EndpointSlice {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": ns, "labels": {"kubernetes.io/service-name": service}},
            "addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"]}]
        }))
        .expect("slice")
    }

    fn pod(name: &str, ns: &str) -> core::Pod {
        serde_json::from_value(json!({"metadata": {"name": name, "namespace": ns}})).expect("pod")
    }

    #[test]
    fn objects_share_their_label_and_annotation_keys() {
        let svc = |name: &str| -> core::Service {
            serde_json::from_value(
                json!({"metadata": {"name": name, "namespace": "a", "labels": {"app": name},
                "annotations": {"external-dns.alpha.kubernetes.io/hostname": format!("{name}.example.org")}}}),
            )
            .expect("service")
        };
        let c = LiveCluster::detached(&[ResourceKind::Service], LiveOptions::default());
        listed(&c, vec![svc("web"), svc("api")]);
        let store = c.store();
        let services = store.services();
        let key = |i: usize, map: fn(&Service) -> &StrMap| map(&services[i]).iter().next().map(|(k, _)| k.as_ptr());
        assert_eq!(services.len(), 2);
        assert_eq!(key(0, |s| &s.meta.annotations), key(1, |s| &s.meta.annotations));
        assert_eq!(key(0, |s| &s.meta.labels), key(1, |s| &s.meta.labels));
        assert_eq!(
            services[0].meta.labels.get("app"),
            Some("api"),
            "values stay each object's own"
        );
    }

    fn listed<K: Watched>(c: &LiveCluster, objects: Vec<K>) {
        c.apply_event(Event::<K>::Init);
        for o in objects {
            c.apply_event(Event::InitApply(o));
        }
        c.apply_event(Event::<K>::InitDone);
    }

    #[test]
    fn endpoint_slices_are_indexed_by_namespace_and_service_label() {
        let c = LiveCluster::detached(&[ResourceKind::EndpointSlice], LiveOptions::default());
        listed(
            &c,
            vec![
                slice("web-1", "a", "web"),
                slice("web-2", "a", "web"),
                slice("web-3", "b", "web"),
            ],
        );
        let names = |ns, svc| {
            c.store()
                .endpoint_slices(ns, svc)
                .iter()
                .map(|s| s.meta.name.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(names("a", "web"), vec!["web-1", "web-2"]);
        assert_eq!(names("b", "web"), vec!["web-3"]);

        // Relabelled to another Service: it moves index entries, it is not found twice.
        c.apply_event(Event::Apply(slice("web-2", "a", "api")));
        assert_eq!(names("a", "web"), vec!["web-1"]);
        assert_eq!(names("a", "api"), vec!["web-2"]);

        c.apply_event(Event::Delete(slice("web-1", "a", "web")));
        assert!(names("a", "web").is_empty());
    }

    #[test]
    fn a_relist_replaces_the_store_and_counts_as_a_change() {
        let c = LiveCluster::detached(&[ResourceKind::Pod], LiveOptions::default());
        listed(&c, vec![pod("p1", "a"), pod("p2", "a")]);
        assert!(c.synced());
        let before = *c.changes().borrow();
        // After a watch desync the watcher lists again; p1 went away meanwhile.
        listed(&c, vec![pod("p2", "a"), pod("p3", "b")]);
        assert!(c.store().pod("a", "p1").is_none());
        assert!(c.store().pod("a", "p2").is_some());
        assert_eq!(c.store().pods("b").len(), 1);
        assert!(*c.changes().borrow() > before);
    }

    fn taken(c: &LiveCluster) -> Vec<String> {
        c.take_changes().objects().map(ToString::to_string).collect()
    }

    #[test]
    fn changes_name_each_object_once_and_slices_by_their_service() {
        let c = LiveCluster::detached(
            &[ResourceKind::EndpointSlice, ResourceKind::Pod],
            LiveOptions::default(),
        );
        // The first list is not a change: the first sync reads everything anyway.
        listed(&c, vec![slice("web-1", "a", "web")]);
        listed(&c, vec![pod("p1", "a")]);
        assert!(c.take_changes().is_empty());

        c.apply_event(Event::Apply(pod("p2", "a")));
        c.apply_event(Event::Apply(pod("p2", "a")));
        c.apply_event(Event::Apply(slice("web-1", "a", "api")));
        assert_eq!(
            taken(&c),
            vec!["EndpointSlice a/api", "EndpointSlice a/web", "Pod a/p2"],
            "a relabelled slice touches the Service it left and the one it joined"
        );
        assert!(c.take_changes().is_empty(), "taking forgets");

        // An update no source can see (the view is equal) is not a change.
        c.apply_event(Event::Apply(pod("p2", "a")));
        assert!(c.take_changes().is_empty());

        c.apply_event(Event::Delete(slice("web-1", "a", "api")));
        assert_eq!(taken(&c), vec!["EndpointSlice a/api"]);
    }

    fn dns_endpoint(generation: i64, target: &str, status: serde_json::Value) -> crate::dnsendpoint::DnsEndpoint {
        let mut value = json!({
            "metadata": {"name": "recs", "namespace": "a", "generation": generation},
            "spec": {"endpoints": [{"dnsName": "x.example.org", "recordType": "A", "targets": [target]}]},
            "status": status,
        });
        crate::watched::decode(&mut value).unwrap_or_else(|e| panic!("a DNSEndpoint: {e}"))
    }

    #[test]
    fn extdns_own_dns_endpoint_status_is_stored_but_no_change() {
        let c = LiveCluster::detached(&[ResourceKind::DnsEndpoint], LiveOptions::default());
        listed(&c, vec![dns_endpoint(1, "192.0.2.1", json!({}))]);
        let bumps = *c.changes().borrow();
        // The status writer's own write comes back: the view must keep it (the writer compares with it),
        // and nothing the source reads moved, so no sync is woken.
        let written = json!({"observedGeneration": 1,
            "conditions": [{"type": "Ready", "status": "True", "reason": "Programmed", "message": ""}]});
        c.apply_event(Event::Apply(dns_endpoint(1, "192.0.2.1", written.clone())));
        assert!(c.take_changes().is_empty(), "a status write is no change");
        assert_eq!(*c.changes().borrow(), bumps, "and wakes nobody");
        let stored = c.store().dns_endpoints();
        assert_eq!(stored[0].observed_generation, Some(1), "the status is stored");
        assert_eq!(stored[0].conditions.as_ref().map(Vec::len), Some(1));
        // A change of the spec (its generation with it) is one, status or not.
        c.apply_event(Event::Apply(dns_endpoint(2, "192.0.2.2", written)));
        assert_eq!(taken(&c), vec!["DNSEndpoint a/recs"]);
    }

    #[test]
    fn a_relist_after_the_first_changes_everything() {
        let c = LiveCluster::detached(&[ResourceKind::Pod], LiveOptions::default());
        listed(&c, vec![pod("p1", "a")]);
        c.apply_event(Event::Apply(pod("p2", "a")));
        listed(&c, vec![pod("p2", "a")]);
        assert!(c.take_changes().is_everything());
    }

    #[test]
    fn objects_stay_visible_while_a_relist_is_in_progress() {
        let c = LiveCluster::detached(&[ResourceKind::Pod], LiveOptions::default());
        listed(&c, vec![pod("p1", "a")]);
        c.apply_event(Event::<core::Pod>::Init);
        c.apply_event(Event::InitApply(pod("p2", "a")));
        assert!(
            c.store().pod("a", "p1").is_some(),
            "the old view serves until the new list is complete"
        );
        assert!(c.store().pod("a", "p2").is_none());
        c.apply_event(Event::<core::Pod>::InitDone);
        assert!(c.store().pod("a", "p1").is_none());
        assert!(c.store().pod("a", "p2").is_some());
    }

    #[test]
    fn pods_are_found_by_namespace_and_deleted_namespaces_leave_no_entry() {
        let c = LiveCluster::detached(&[ResourceKind::Pod], LiveOptions::default());
        listed(&c, vec![pod("p1", "a"), pod("p2", "b")]);
        assert_eq!(c.store().pods("a").len(), 1);
        c.apply_event(Event::Delete(pod("p1", "a")));
        assert!(c.store().pods("a").is_empty());
        let store = c.store();
        let pods = store.index::<Pod>(ResourceKind::Pod).expect("pods");
        assert_eq!(pods.namespace_count(), 1, "namespace a is gone");
    }

    #[test]
    fn unwatched_kinds_are_empty_and_do_not_block_sync() {
        let c = LiveCluster::detached(&[ResourceKind::Node], LiveOptions::default());
        assert!(!c.synced());
        listed::<core::Node>(&c, vec![]);
        assert!(c.synced());
        assert!(c.store().services().is_empty());
        assert!(c.store().routes(RouteKind::Http).is_empty());
    }

    #[test]
    fn routes_are_stored_per_kind() {
        let c = LiveCluster::detached(&[], LiveOptions::default());
        let r: gateway_api::grpcroutes::GrpcRoute =
            serde_json::from_value(json!({"metadata": {"name": "r", "namespace": "n"}, "spec": {}})).expect("route");
        c.apply_event(Event::Apply(r));
        assert_eq!(c.store().routes(RouteKind::Grpc).len(), 1);
        assert!(c.store().routes(RouteKind::Http).is_empty());
    }
}

#[cfg(test)]
mod decoded_tests {
    use super::*;
    use k8s_openapi::api::core::v1 as core;
    use kube::core::ObjectList;
    use serde_json::json;

    #[test]
    fn one_bad_item_does_not_fail_its_list() -> Result<(), serde_json::Error> {
        let list = json!({"apiVersion": "v1", "kind": "ServiceList", "metadata": {"resourceVersion": "7"}, "items": [
            {"metadata": {"name": "good", "namespace": "a", "resourceVersion": "5"}, "spec": {"ports": [{"port": 80}]}},
            {"metadata": {"name": "bad", "namespace": "a", "resourceVersion": "6"}, "spec": {"ports": [{"port": "http"}]}},
        ]});
        let list: ObjectList<Decoded<core::Service>> = serde_json::from_value(list)?;
        assert!(matches!(&list.items[0], Decoded::Object(s) if s.metadata.name.as_deref() == Some("good")));
        let Decoded::Undecodable { meta, error } = &list.items[1] else {
            panic!("the bad item must be undecodable: {:?}", list.items[1]);
        };
        assert_eq!(
            (meta.name.as_deref(), meta.resource_version.as_deref()),
            (Some("bad"), Some("6"))
        );
        assert_eq!(error.path, "spec.ports[0].port");
        Ok(())
    }

    #[test]
    fn an_undecodable_object_keeps_its_identity_even_with_odd_metadata() {
        let v = json!({"metadata": {"name": "n", "namespace": "x", "labels": "not-a-map", "resourceVersion": "3"}});
        let meta = identity(&v);
        assert_eq!(
            (
                meta.name.as_deref(),
                meta.namespace.as_deref(),
                meta.resource_version.as_deref()
            ),
            (Some("n"), Some("x"), Some("3"))
        );
    }
}
