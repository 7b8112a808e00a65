//! `--dns-provider-crds`: several providers in one deployment (docs/multi-provider.md).
//!
//! One set of informers, shared through a [`ClusterFanout`]; per DNSProvider or ClusterDNSProvider object, its
//! own pipeline: settings from the deployment's command line with the object's flags applied ([`args`]),
//! provider, registry and a [`Controller`] of its own (its cache, schedule, pacing, deletion guard and failure
//! backoff), run as a task of its own. The manager follows the objects: a new one starts a pipeline, a changed
//! one (its generation, or its Secret's resourceVersion, read again every `--interval`) rebuilds only that
//! one, a deleted one stops it and leaves its records, saying so in its status before its finalizer goes.
//! Nothing one pipeline does (a bad spec, a missing Secret, an API down, a panic) reaches another.

pub mod args;
pub mod plan;
pub mod preview;
pub mod status;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use extdns_controller::{CancellationToken, EventSink, Metrics, start_metrics_server};
use extdns_dnsprovider::status::Reason;
use extdns_dnsprovider::{Credentials, FINALIZER, ProviderId, ProviderKind, ProviderObject, conflicts};
use extdns_informer::{ClusterFanout, LiveCluster};
use extdns_leader::Leadership;
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::runtime::WatchStreamExt as _;
use kube::runtime::watcher::{self, Event};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::{debug, error, info, warn};

use crate::events::KubeEvents;
use crate::providers::build_observed_provider;
use crate::run::{REVISION, VERSION, kube_client, spawn_signal_handler};
use crate::settings::ProviderSettings;
use crate::settings::fleet::FleetSettings;
use status::{Observer, StatusWriter};

/// How often the manager looks at its pipelines' health and readiness.
const TICK: Duration = Duration::from_secs(1);
/// How long a pipeline that failed (to build, or by a panic) first waits before it is built again with an
/// unchanged spec; doubled at each failure in a row, up to [`REBUILD_AFTER_MAX`].
const REBUILD_AFTER: Duration = Duration::from_secs(5);
const REBUILD_AFTER_MAX: Duration = Duration::from_secs(300);

/// The wait before the rebuild after `failures` failures in a row.
fn rebuild_after(failures: u32) -> Duration {
    REBUILD_AFTER
        .saturating_mul(1 << failures.saturating_sub(1).min(16))
        .min(REBUILD_AFTER_MAX)
}

/// Runs the providers of the provider objects until SIGTERM.
pub async fn run(fleet: &FleetSettings) -> anyhow::Result<()> {
    let shutdown = CancellationToken::new();
    spawn_signal_handler(shutdown.clone());
    let client = kube_client(&fleet.kube).await?;
    let kinds = crate::wiring::build_pipeline(&fleet.sources)?.watched_kinds();
    let cluster = LiveCluster::start(client.clone(), &kinds, fleet.kube.live.clone())?;
    let fanout = ClusterFanout::new(Arc::new(cluster));
    let root = Arc::new(Metrics::for_providers(VERSION, REVISION));

    let election_stop = CancellationToken::new();
    let mut election_task = None;
    let mut leadership = Leadership::always();
    if let Some(leader) = &fleet.leader {
        let (election, lead) = crate::run::start_election(leader, &fleet.kube).await?;
        leadership = lead;
        election_task = Some(tokio::spawn(election.run(election_stop.clone())));
    }
    let events: Option<Arc<dyn EventSink>> = fleet.events.any().then(|| {
        let instance = std::env::var("POD_NAME").ok().filter(|n| !n.is_empty());
        Arc::new(KubeEvents::new(
            client.clone(),
            instance,
            fleet.kube.live.overrides.clone(),
        )) as Arc<dyn EventSink>
    });
    let namespace = std::env::var("POD_NAMESPACE")
        .ok()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| client.default_namespace().to_string());
    info!(
        version = VERSION,
        namespace = %namespace,
        leader_elect = fleet.leader.is_some(),
        "extdns starting: providers from DNSProvider and ClusterDNSProvider objects"
    );
    let server = start_metrics_server(&fleet.metrics_address, root.clone(), shutdown.clone()).await?;
    let mut manager = Manager {
        client,
        fleet: fleet.clone(),
        fanout,
        root,
        leadership,
        events,
        namespace,
        objects: BTreeMap::new(),
        invalid: BTreeMap::new(),
        versions: HashMap::new(),
        pipelines: HashMap::new(),
        writers: HashMap::new(),
    };
    manager.run(shutdown.clone()).await;
    manager.stop_all().await;
    election_stop.cancel();
    if let Some(task) = election_task {
        let _ = task.await;
    }
    let _ = server.handle.await;
    Ok(())
}

/// A pipeline the manager runs, or could not build.
struct Pipeline {
    generation: i64,
    secret_version: Option<String>,
    secret_read: Instant,
    state: State,
    /// Failures in a row with this generation and Secret (the rebuild's backoff); a change starts again.
    failures: u32,
}

enum State {
    Running {
        cancel: CancellationToken,
        task: JoinHandle<()>,
        metrics: Arc<Metrics>,
        /// The built-in DNS server of a `dns-server` pipeline.
        serving: Option<JoinHandle<()>>,
    },
    /// Not built (bad spec, no credentials, conflict) or stopped by a panic; built again when the object or
    /// its Secret changes, or after [`rebuild_after`] for what may pass (an API down, a panic).
    Failed { at: Instant, retry: bool },
}

struct Manager {
    client: kube::Client,
    fleet: FleetSettings,
    fanout: Arc<ClusterFanout>,
    root: Arc<Metrics>,
    leadership: Leadership,
    events: Option<Arc<dyn EventSink>>,
    /// The controller's namespace: where a ClusterDNSProvider's Secret is by default.
    namespace: String,
    objects: BTreeMap<ProviderId, ProviderObject>,
    /// Objects whose spec does not decode: their pipeline is stopped and their status says why.
    invalid: BTreeMap<ProviderId, Invalid>,
    /// Each object's resourceVersion as last delivered: the precondition of a finalizer change.
    versions: HashMap<ProviderId, String>,
    pipelines: HashMap<ProviderId, Pipeline>,
    writers: HashMap<ProviderId, Arc<StatusWriter>>,
}

/// An object whose spec does not decode.
#[derive(Clone)]
struct Invalid {
    generation: i64,
    why: String,
    /// It is being deleted, with these finalizers: extdns's is still removed.
    deleting: bool,
    finalizers: Vec<String>,
}

/// One kind's objects as its watcher delivers them.
enum Delivery {
    Apply(DynamicObject),
    Delete(DynamicObject),
    Relisted(ProviderKind, Vec<DynamicObject>),
    Unavailable(ProviderKind, String),
}

fn watch(client: &kube::Client, kind: ProviderKind) -> impl futures::Stream<Item = Delivery> + Send + 'static {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &kind.api_resource());
    let mut listing: Option<Vec<DynamicObject>> = None;
    watcher::watcher(api, watcher::Config::default())
        .default_backoff()
        .filter_map(move |event| {
            let delivery = match event {
                Ok(Event::Init) => {
                    listing = Some(Vec::new());
                    None
                }
                Ok(Event::InitApply(o)) => {
                    listing.get_or_insert_with(Vec::new).push(o);
                    None
                }
                Ok(Event::InitDone) => Some(Delivery::Relisted(kind, listing.take().unwrap_or_default())),
                Ok(Event::Apply(o)) => Some(Delivery::Apply(o)),
                Ok(Event::Delete(o)) => Some(Delivery::Delete(o)),
                Err(e) => Some(Delivery::Unavailable(kind, e.to_string())),
            };
            std::future::ready(delivery)
        })
}

impl Manager {
    async fn run(&mut self, shutdown: CancellationToken) {
        let mut deliveries = futures::stream::select(
            Box::pin(watch(&self.client, ProviderKind::Cluster)),
            Box::pin(watch(&self.client, ProviderKind::Namespaced)),
        );
        let mut listed: HashMap<ProviderKind, bool> = HashMap::new();
        let mut tick = tokio::time::interval(TICK);
        let mut was_leader = self.leadership.is_leader();
        loop {
            tokio::select! {
                biased;
                _ = shutdown.cancelled() => break,
                delivery = deliveries.next() => {
                    let Some(delivery) = delivery else { break };
                    match delivery {
                        Delivery::Relisted(kind, objects) => {
                            listed.insert(kind, true);
                            self.objects.retain(|id, _| id.kind() != kind);
                            self.invalid.retain(|id, _| id.kind() != kind);
                            self.versions.retain(|id, _| id.kind() != kind);
                            for o in objects {
                                self.apply(&o);
                            }
                        }
                        Delivery::Apply(o) => self.apply(&o),
                        Delivery::Delete(o) => {
                            if let Some(id) = ProviderId::of(&o) {
                                self.objects.remove(&id);
                                self.invalid.remove(&id);
                                self.versions.remove(&id);
                            }
                        }
                        Delivery::Unavailable(kind, why) => {
                            if listed.insert(kind, true).is_none() {
                                warn!(kind = kind.kind(), error = %why, "cannot list the provider objects of this \
                                      kind (is its CRD installed and may extdns list it?); trying again with backoff");
                            }
                            continue;
                        }
                    }
                    self.reconcile().await;
                }
                _ = tick.tick() => {
                    let leader = self.leadership.is_leader();
                    self.root.set_leader(leader);
                    if leader && !was_leader {
                        // What was wanted while another replica led is written now.
                        for w in self.writers.values() {
                            w.flush().await;
                        }
                    }
                    was_leader = leader;
                    self.reconcile().await;
                    if listed.len() == ProviderKind::ALL.len() && !self.root.is_ready() && self.pipelines_ready() {
                        info!(providers = self.pipelines.len(), "every provider synced once: ready");
                        self.root.mark_ready();
                    }
                }
            }
        }
    }

    /// Records one object as the watch delivered it; one that does not decode says so in its status.
    fn apply(&mut self, object: &DynamicObject) {
        if let (Some(id), Some(version)) = (ProviderId::of(object), &object.metadata.resource_version) {
            self.versions.insert(id, version.clone());
        }
        match ProviderObject::from_dynamic(object) {
            Ok(p) => {
                self.invalid.remove(&p.id);
                self.objects.insert(p.id.clone(), p);
            }
            Err(e) => {
                warn!(error = %e, "a provider object does not decode; its pipeline stops until it is fixed");
                if let Some(id) = ProviderId::of(object) {
                    self.objects.remove(&id);
                    let meta = &object.metadata;
                    let invalid = Invalid {
                        generation: meta.generation.unwrap_or(0),
                        why: e.to_string(),
                        deleting: meta.deletion_timestamp.is_some(),
                        finalizers: meta.finalizers.clone().unwrap_or_default(),
                    };
                    self.invalid.insert(id, invalid);
                }
            }
        }
    }

    fn pipelines_ready(&self) -> bool {
        self.pipelines.values().all(|p| match &p.state {
            State::Running { metrics, .. } => metrics.is_ready(),
            State::Failed { .. } => true,
        })
    }

    async fn reconcile(&mut self) {
        let gone: Vec<ProviderId> = self
            .pipelines
            .keys()
            .filter(|id| !self.objects.contains_key(id) && !self.invalid.contains_key(id))
            .cloned()
            .collect();
        for id in gone {
            info!(provider = %id, "provider object deleted: its pipeline stops; its records are left in place");
            self.stop(&id).await;
            self.writers.remove(&id);
        }
        let invalid: Vec<(ProviderId, Invalid)> = self.invalid.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        for (id, invalid) in invalid {
            let api = self.api(&id);
            let writer = self
                .writers
                .entry(id.clone())
                .or_insert_with(|| Arc::new(StatusWriter::new(api, id.name(), None, self.leadership.clone())))
                .clone();
            if invalid.deleting {
                // Not stuck in deletion for a bad spec: stopped, and extdns's finalizer removed.
                self.stop(&id).await;
                if self.leadership.is_leader() && invalid.finalizers.iter().any(|f| f == FINALIZER) {
                    writer
                        .set(
                            invalid.generation,
                            Reason::Deleting,
                            "stopped; its records are left in place",
                        )
                        .await;
                    self.set_finalizer(&id, &invalid.finalizers, false).await;
                }
            } else if self
                .pipelines
                .get(&id)
                .is_none_or(|p| p.generation != invalid.generation)
            {
                self.stop(&id).await;
                self.fail(&id, invalid.generation, None, false, 0);
                writer.set(invalid.generation, Reason::ConfigInvalid, invalid.why).await;
            }
        }
        let objects: Vec<ProviderObject> = self.objects.values().cloned().collect();
        let refused: HashMap<ProviderId, String> = conflicts(&objects.iter().collect::<Vec<_>>())
            .into_iter()
            .map(|c| (c.refused, c.why))
            .collect();
        for object in objects {
            self.reconcile_one(&object, refused.get(&object.id)).await;
        }
    }

    fn writer(&mut self, object: &ProviderObject) -> Arc<StatusWriter> {
        let api = self.api(&object.id);
        let leadership = self.leadership.clone();
        self.writers
            .entry(object.id.clone())
            .or_insert_with(|| {
                Arc::new(StatusWriter::new(
                    api,
                    object.id.name(),
                    object.status.clone(),
                    leadership,
                ))
            })
            .clone()
    }

    fn api(&self, id: &ProviderId) -> Api<DynamicObject> {
        let resource = id.kind().api_resource();
        match id.namespace() {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, &resource),
            None => Api::all_with(self.client.clone(), &resource),
        }
    }

    async fn reconcile_one(&mut self, object: &ProviderObject, conflict: Option<&String>) {
        let id = &object.id;
        let writer = self.writer(object);
        let leader = self.leadership.is_leader();
        if object.deleting {
            if self.pipelines.contains_key(id) {
                info!(provider = %id, "provider object being deleted: its pipeline stops; its records are left in place");
                self.stop(id).await;
            }
            if leader && object.finalizers.iter().any(|f| f == FINALIZER) {
                let records = object.status.as_ref().and_then(|s| s.records).unwrap_or(0);
                writer
                    .set(
                        object.generation,
                        Reason::Deleting,
                        match records {
                            1 => "stopped; its 1 record is left in place".to_string(),
                            n => format!("stopped; its {n} records are left in place"),
                        },
                    )
                    .await;
                self.set_finalizer(id, &object.finalizers, false).await;
            }
            return;
        }
        if leader && !object.finalizers.iter().any(|f| f == FINALIZER) {
            self.set_finalizer(id, &object.finalizers, true).await;
        }
        if let Some(why) = conflict {
            if self.pipelines.contains_key(id) {
                self.stop(id).await;
            }
            self.fail(id, object.generation, None, false, 0);
            writer.set(object.generation, Reason::Conflict, why.clone()).await;
            return;
        }
        // The Secret: read when the pipeline is (re)built, then every --interval.
        self.reap(id, &writer).await;
        let current = self.pipelines.get(id);
        let secret_due = current.is_none_or(|p| p.secret_read.elapsed() >= self.fleet.interval);
        let unchanged = current.is_some_and(|p| p.generation == object.generation);
        let healthy = current.is_some_and(|p| match &p.state {
            State::Running { task, .. } => !task.is_finished(),
            State::Failed { at, retry } => !(*retry && at.elapsed() >= rebuild_after(p.failures)),
        });
        // Failures in a row count only while nothing changed.
        let failures = current
            .filter(|p| p.generation == object.generation)
            .map_or(0, |p| p.failures);
        if unchanged && healthy && !secret_due {
            return;
        }
        let (credentials, secret_version) = match self.read_secret(object).await {
            Ok(read) => read,
            Err(SecretError::Invalid(why)) => {
                if self.pipelines.contains_key(id) {
                    warn!(provider = %id, %why, "credentials no longer readable: the pipeline stops");
                    self.stop(id).await;
                }
                self.fail(id, object.generation, None, false, 0);
                writer.set(object.generation, Reason::CredentialsInvalid, why).await;
                return;
            }
            Err(SecretError::Unreachable(why)) => {
                // The API server, not the Secret: a running pipeline keeps running with what it has.
                warn!(provider = %id, %why, "cannot read the provider's Secret now; trying again");
                return;
            }
        };
        let mut failures = failures;
        if let Some(p) = self.pipelines.get_mut(id) {
            p.secret_read = Instant::now();
            if p.secret_version != secret_version {
                failures = 0;
            } else if unchanged && healthy {
                return;
            }
        }
        if self.pipelines.contains_key(id) {
            info!(provider = %id, generation = object.generation, "provider object or its Secret changed: rebuilding its pipeline");
            self.stop(id).await;
        }
        // Said before the pipeline starts: its first sync may report before `start` returns.
        writer
            .set(object.generation, Reason::Pending, "waiting for the first sync")
            .await;
        match self.start(object, &credentials, writer.clone()).await {
            Ok(state) => {
                info!(provider = %id, r#type = %object.spec.type_, "provider pipeline started");
                self.pipelines.insert(
                    id.clone(),
                    Pipeline {
                        generation: object.generation,
                        secret_version,
                        secret_read: Instant::now(),
                        state,
                        failures,
                    },
                );
            }
            Err((reason, why, retry)) => {
                warn!(provider = %id, reason = reason.as_str(), error = %why, "cannot start the provider's pipeline");
                self.fail(id, object.generation, secret_version, retry, failures + 1);
                writer.set(object.generation, reason, why).await;
            }
        }
    }

    fn fail(&mut self, id: &ProviderId, generation: i64, secret_version: Option<String>, retry: bool, failures: u32) {
        self.pipelines.insert(
            id.clone(),
            Pipeline {
                generation,
                secret_version,
                secret_read: Instant::now(),
                state: State::Failed {
                    at: Instant::now(),
                    retry,
                },
                failures,
            },
        );
    }

    /// A pipeline whose task ended while it should run (a panic: the controller's loop returns only when
    /// cancelled) is marked failed, `SyncFailed`, and built again after its backoff; the others run on.
    async fn reap(&mut self, id: &ProviderId, writer: &StatusWriter) {
        let finished = self
            .pipelines
            .get(id)
            .is_some_and(|p| matches!(&p.state, State::Running { task, .. } if task.is_finished()));
        if !finished {
            return;
        }
        let Some((generation, secret_version, failures, panic)) = self.take(id).await else {
            return;
        };
        let failures = failures + 1;
        let why = match panic {
            Some(text) => format!("the provider's pipeline panicked: {text}"),
            None => "the provider's pipeline stopped unexpectedly".to_string(),
        };
        let wait = rebuild_after(failures);
        error!(provider = %id, error = %why, rebuild_in = ?wait, "provider pipeline failed; the others run on");
        self.fail(id, generation, secret_version, true, failures);
        writer
            .set(
                generation,
                Reason::SyncFailed,
                format!("{why}; built again in {}s", wait.as_secs()),
            )
            .await;
    }

    /// Builds and starts `object`'s pipeline; on failure, the reason, the message and whether trying again
    /// with the same spec may succeed.
    async fn start(
        &self,
        object: &ProviderObject,
        credentials: &Credentials,
        writer: Arc<StatusWriter>,
    ) -> Result<State, (Reason, String, bool)> {
        let settings = args::provider_settings(&self.fleet, object, credentials)
            .map_err(|e| (Reason::ConfigInvalid, e.to_string(), false))?;
        let mut metrics = self.root.child();
        let cancel = CancellationToken::new();
        let bound = crate::dns_server::bind_if_serving(&settings.provider, &mut metrics)
            .map_err(|e| (Reason::ConfigInvalid, crate::error_text(&e), false))?;
        let metrics = Arc::new(metrics);
        let (provider, serving) = match bound {
            Some((provider, server)) => (provider, Some(tokio::spawn(server.run(cancel.clone())))),
            None => {
                let provider = build_observed_provider(&settings.provider, Some(&metrics))
                    .await
                    .map_err(|e| (Reason::ConfigInvalid, e.to_string(), true))?;
                (provider, None)
            }
        };
        let local = matches!(settings.provider, ProviderSettings::DnsServer(_));
        let controller =
            crate::run::controller_with_cluster(&settings, self.fanout.subscribe(), provider, metrics.clone())
                .map_err(|e| (Reason::ConfigInvalid, crate::error_text(&e), false))?;
        let mut controller = controller.with_leadership(self.leadership.clone());
        if local {
            controller = controller.with_local_provider();
        }
        if let Some(sink) = &self.events {
            controller = controller.with_events(self.fleet.events, sink.clone());
        }
        let includes_zones = object
            .spec
            .domain_filter
            .as_ref()
            .is_some_and(|f| !f.include.is_empty());
        let controller = controller.with_sync_observer(Arc::new(Observer {
            writer,
            generation: object.generation,
            includes_zones,
        }));
        self.root.attach(&object.id.label(), metrics.clone());
        let span = tracing::info_span!("provider", provider = %object.id.label());
        let run_token = cancel.clone();
        let task = tokio::spawn(tracing::Instrument::instrument(
            async move { controller.run(run_token).await },
            span,
        ));
        Ok(State::Running {
            cancel,
            task,
            metrics,
            serving,
        })
    }

    /// Stops `id`'s pipeline after its sync in progress (a record is never left half written).
    async fn stop(&mut self, id: &ProviderId) {
        if let Some((.., Some(text))) = self.take(id).await {
            error!(provider = %id, panic = %text, "the provider's pipeline panicked");
        }
    }

    /// Takes `id`'s pipeline out, cancels it and waits for it (and its DNS server) to end: its generation,
    /// Secret version, failures in a row and, if its task panicked, the panic's text.
    async fn take(&mut self, id: &ProviderId) -> Option<(i64, Option<String>, u32, Option<String>)> {
        let pipeline = self.pipelines.remove(id)?;
        self.root.detach(&id.label());
        let mut panic = None;
        if let State::Running {
            cancel, task, serving, ..
        } = pipeline.state
        {
            cancel.cancel();
            if let Err(e) = task.await
                && e.is_panic()
            {
                panic = Some(panic_text(e.into_panic()));
            }
            if let Some(serving) = serving {
                let _ = serving.await;
            }
        }
        Some((pipeline.generation, pipeline.secret_version, pipeline.failures, panic))
    }

    /// SIGTERM: every pipeline told at once, then each awaited, so the shutdown waits for the longest sync
    /// in progress, not their sum.
    async fn stop_all(&mut self) {
        for pipeline in self.pipelines.values() {
            if let State::Running { cancel, .. } = &pipeline.state {
                cancel.cancel();
            }
        }
        let ids: Vec<ProviderId> = self.pipelines.keys().cloned().collect();
        for id in ids {
            self.stop(&id).await;
        }
    }

    /// Adds or removes extdns's finalizer among `finalizers` (the object's as delivered), under the
    /// object's resourceVersion: a write over a newer object (another finalizer added meanwhile) is refused
    /// and done again from the newer one.
    async fn set_finalizer(&mut self, id: &ProviderId, finalizers: &[String], present: bool) {
        let mut finalizers: Vec<&str> = finalizers
            .iter()
            .map(String::as_str)
            .filter(|f| *f != FINALIZER)
            .collect();
        if present {
            finalizers.push(FINALIZER);
        }
        let mut patch = serde_json::json!({ "metadata": { "finalizers": finalizers } });
        if let Some(version) = self.versions.get(id) {
            patch["metadata"]["resourceVersion"] = serde_json::json!(version);
        }
        let api = self.api(id);
        match api
            .patch(id.name(), &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            // Known at once, so the next pass does not write it again before the watch delivers it.
            Ok(updated) => {
                if let Some(version) = updated.metadata.resource_version {
                    self.versions.insert(id.clone(), version);
                }
                if let Some(object) = self.objects.get_mut(id) {
                    object.finalizers = updated.metadata.finalizers.unwrap_or_default();
                }
            }
            // Gone already: the finalizer was the last thing holding it.
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            // Changed since delivered: done again from the newer object the watch brings.
            Err(kube::Error::Api(e)) if e.code == 409 => {
                debug!(provider = %id, "the provider object changed meanwhile; its finalizers are set again")
            }
            Err(e) => {
                warn!(provider = %id, error = %e, "cannot update the provider object's finalizers; trying again")
            }
        }
    }

    async fn read_secret(&self, object: &ProviderObject) -> Result<(Credentials, Option<String>), SecretError> {
        read_secret(&self.client, object, &self.namespace).await
    }
}

/// `object`'s credentials and its Secret's resourceVersion (none without a `credentialsRef`); a
/// ClusterDNSProvider's Secret is in `namespace` unless it names another.
pub(crate) async fn read_secret(
    client: &kube::Client,
    object: &ProviderObject,
    namespace: &str,
) -> Result<(Credentials, Option<String>), SecretError> {
    let Some((namespace, name)) = object.secret(namespace) else {
        return Ok((Credentials::default(), None));
    };
    let shown = format!("{namespace}/{name}");
    let api: Api<Secret> = Api::namespaced(client.clone(), &namespace);
    let secret = match api.get_opt(&name).await {
        Ok(Some(secret)) => secret,
        Ok(None) => {
            return Err(SecretError::Invalid(format!(
                "Secret {shown} (spec.credentialsRef) not found"
            )));
        }
        Err(kube::Error::Api(e)) if e.code == 403 => {
            return Err(SecretError::Invalid(format!(
                "extdns may not read Secret {shown} (spec.credentialsRef): {}",
                e.message
            )));
        }
        Err(e) => return Err(SecretError::Unreachable(e.to_string())),
    };
    let data = secret.data.unwrap_or_default();
    let credentials = Credentials::from_secret(&shown, data.iter().map(|(k, v)| (k.as_str(), v.0.as_slice())))
        .map_err(|e| SecretError::Invalid(e.to_string()))?;
    Ok((credentials, secret.metadata.resource_version))
}

/// A panic's message, when it has one.
fn panic_text(payload: Box<dyn std::any::Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(s) => *s,
        Err(payload) => payload
            .downcast_ref::<&str>()
            .map_or_else(|| "(no message)".to_string(), |s| s.to_string()),
    }
}

pub(crate) enum SecretError {
    /// The Secret is missing, forbidden or unusable: the provider cannot run.
    Invalid(String),
    /// The API server did not answer: try again, keep what runs.
    Unreachable(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_pipeline_waits_longer_each_time_up_to_five_minutes() {
        let waits: Vec<u64> = (1..=9).map(|n| rebuild_after(n).as_secs()).collect();
        assert_eq!(waits, [5, 10, 20, 40, 80, 160, 300, 300, 300]);
        assert_eq!(rebuild_after(u32::MAX), REBUILD_AFTER_MAX);
    }

    #[tokio::test]
    async fn a_pipeline_that_panics_is_marked_failed_and_waits_its_backoff() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("none.yaml");
        std::fs::write(&path, "")?;
        let cluster = extdns_informer::ManifestCluster::load(vec![path], Default::default())?;
        // Nothing listens there: the status write fails and is only logged.
        let client = kube::Client::try_from(kube::Config::new("http://127.0.0.1:9".parse()?))?;
        let line: Vec<std::ffi::OsString> = ["extdns", "--source=service", "--dns-provider-crds"]
            .iter()
            .map(Into::into)
            .collect();
        let flags = crate::flags::try_parse_from(&line)?.flags;
        let root = Arc::new(Metrics::for_providers(VERSION, REVISION));
        let mut manager = Manager {
            client: client.clone(),
            fleet: crate::settings::fleet::fleet(&flags, &line)?,
            fanout: ClusterFanout::new(Arc::new(cluster)),
            root: root.clone(),
            leadership: Leadership::always(),
            events: None,
            namespace: "default".into(),
            objects: BTreeMap::new(),
            invalid: BTreeMap::new(),
            versions: HashMap::new(),
            pipelines: HashMap::new(),
            writers: HashMap::new(),
        };
        let id = ProviderId::Cluster { name: "p".into() };
        let task = tokio::spawn(async { panic!("a bug in one provider") });
        while !task.is_finished() {
            tokio::task::yield_now().await;
        }
        let running = |task, failures| Pipeline {
            generation: 1,
            secret_version: None,
            secret_read: Instant::now(),
            state: State::Running {
                cancel: CancellationToken::new(),
                task,
                metrics: Arc::new(root.child()),
                serving: None,
            },
            failures,
        };
        manager.pipelines.insert(id.clone(), running(task, 2));
        let writer = StatusWriter::new(manager.api(&id), "p", None, Leadership::always());
        manager.reap(&id, &writer).await;
        let reaped = manager.pipelines.get(&id);
        assert!(reaped.is_some_and(|p| p.failures == 3 && matches!(p.state, State::Failed { retry: true, .. })));
        // A running pipeline is left alone.
        let task = tokio::spawn(std::future::pending::<()>());
        manager.pipelines.insert(id.clone(), running(task, 0));
        manager.reap(&id, &writer).await;
        assert!(matches!(
            manager.pipelines.get(&id).map(|p| &p.state),
            Some(State::Running { .. })
        ));
        Ok(())
    }
}
