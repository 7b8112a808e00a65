//! The reconcile loop.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use extdns_endpoint::name::name_key;
use extdns_endpoint::{Change, Endpoint};
use extdns_informer::{ChangeSet, Cluster, ClusterStore, ObjectKey};
use extdns_leader::Leadership;
use extdns_plan::{NotOwned, PlanConfig};
use extdns_provider::{FailedRecords, FailureReason};
use extdns_registry::{Registry, RegistryError, Snapshot, Written};
use extdns_source::{ChangedOutput, DesiredIndex, Failures, Pipeline, PipelineOutput, SourceError};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, error, info, warn};

use crate::Metrics;
use crate::events::{EventSink, EventsConfig, Outcome, Uids, events_for, with_uids};
use crate::guard::{DeletionGuard, OwnedCounts};
use crate::health::HealthTable;
use crate::hold::hold_records_of_failed_objects;
use crate::name_status::{Asked, SyncFacts};
use crate::schedule::{Schedule, jittered};
use crate::status::{ProviderSync, StatusSink, SyncObserver, SyncStatus};

/// How often the loop looks again while the informers have not finished their first list.
const UNSYNCED_RETRY: Duration = Duration::from_secs(1);
/// How often the loop repeats that it is still waiting for the informers.
const UNSYNCED_WARN_EVERY: Duration = Duration::from_secs(60);

/// Where the desired endpoints come from: the source pipeline in production, a fake in tests.
#[async_trait]
pub trait DesiredEndpoints: Send + Sync {
    /// Every desired endpoint; with `index`, also what incremental syncs update ([`DesiredIndex`]).
    async fn desired(
        &self,
        cluster: &ClusterStore,
        index: Option<&mut DesiredIndex>,
    ) -> Result<PipelineOutput, SourceError>;

    /// Brings `index` up to date with `changes` and returns the endpoints of the names they affect, or
    /// `None` when only a full sync can tell (the default: these endpoints cannot be followed object by
    /// object, so every sync is a full one).
    async fn desired_changed(
        &self,
        _cluster: &ClusterStore,
        _index: &mut DesiredIndex,
        _changes: &ChangeSet,
    ) -> Result<Option<ChangedOutput>, SourceError> {
        Ok(None)
    }
}

#[async_trait]
impl DesiredEndpoints for Pipeline {
    async fn desired(
        &self,
        cluster: &ClusterStore,
        index: Option<&mut DesiredIndex>,
    ) -> Result<PipelineOutput, SourceError> {
        self.evaluate(cluster, index).await
    }

    async fn desired_changed(
        &self,
        cluster: &ClusterStore,
        index: &mut DesiredIndex,
        changes: &ChangeSet,
    ) -> Result<Option<ChangedOutput>, SourceError> {
        self.evaluate_changes(cluster, index, changes).await
    }
}

/// What the loop keeps between syncs: the provider's records as the last full sync read them, with every
/// change applied since folded in (found by name: [`extdns_registry::RecordsByName`]), what extdns owns of them
/// per zone, and (with `--events`) the desired endpoints by object, so that a change costs what it touches
/// (incremental reconcile). The records also serve full syncs for `--txt-cache-interval`: this is the one
/// cache of provider records.
struct Cache {
    snapshot: Snapshot,
    /// The deletion guard's count of the records extdns owns, kept up to date with every write folded in.
    owned: OwnedCounts,
    /// When the records must be read from the provider again: `records_cache_interval` after their read,
    /// jittered ([`crate::schedule::jittered`]).
    read_until: Instant,
    /// The provider's read state does not outlive writes: read the records again before the next plan.
    stale: bool,
    /// `None` without `--events`: only the records are kept.
    index: Option<DesiredIndex>,
}

/// The records and desired endpoints one plan works from.
struct PlanInput<'a> {
    snapshot: &'a Snapshot,
    /// The records the plan compares with: all of them in a full sync, those of the affected names in an
    /// incremental one.
    current: &'a [Endpoint],
    /// Every record, for the deletion guard's count of what extdns owns per zone when `owned` has not
    /// counted them yet (or counted for other zones).
    all_current: &'a [Endpoint],
    owned: &'a mut OwnedCounts,
    desired: Vec<Endpoint>,
    failed: &'a Failures,
    full: bool,
    /// The store the sources evaluated: the uids of the objects the outcome names are taken from it.
    store: &'a ClusterStore,
    /// The name keys an incremental sync plans (`None`: a full sync plans every name), so the names'
    /// outcomes ([`crate::name_status`]) replace only those.
    planned: Option<&'a BTreeSet<String>>,
}

/// What the names' outcomes are computed from beside the sync's [`Outcome`].
struct NamesInput<'a> {
    asked: &'a [Asked],
    current: &'a [Endpoint],
    provider_filter: &'a extdns_endpoint::DomainFilter,
    failed: &'a Failures,
    store: &'a ClusterStore,
    planned: Option<&'a BTreeSet<String>>,
}

/// The loop's knobs (`--interval`, `--min-event-sync-interval`, `--events`, `--dry-run`) and the plan's.
#[derive(Debug, Clone)]
pub struct ControllerConfig {
    /// `--interval`: the longest a drift from the cluster can last.
    pub interval: Duration,
    /// The least time between two full syncs asked for by cluster events (external-dns's meaning).
    pub min_event_sync_interval: Duration,
    /// The least time between two writes of incremental syncs: zero (the default) writes each change as
    /// soon as it is evaluated, paced only by what the provider takes; the binary sets it to an explicit
    /// `--min-event-sync-interval`.
    pub min_incremental_write_interval: Duration,
    /// Sync on cluster changes as well as on the interval.
    pub events: bool,
    /// Compute and log the plan, never apply it.
    pub dry_run: bool,
    /// The plan's configuration; its owner id must be the one the registry writes.
    pub plan: PlanConfig,
    /// When a plan's deletes are held back.
    pub deletion_guard: DeletionGuard,
    /// `--txt-cache-interval`, `--provider-cache-time`, `--provider-reread-interval`: a full sync reuses the
    /// records read (with every change applied since folded in) for about this long (a tenth more or less,
    /// drawn at each read, so that controllers sharing an account do not read together) instead of reading
    /// every zone again; zero reads them every time. A record changed behind extdns's back is repaired at
    /// the next read.
    pub records_cache_interval: Duration,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        ControllerConfig {
            interval: Duration::from_secs(60),
            min_event_sync_interval: Duration::from_secs(5),
            min_incremental_write_interval: Duration::ZERO,
            events: false,
            dry_run: false,
            plan: PlanConfig::default(),
            deletion_guard: DeletionGuard::default(),
            records_cache_interval: Duration::ZERO,
        }
    }
}

/// Why a sync did not complete. None of these stops the loop; `--once` turns them into a non-zero exit.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SyncError {
    /// The view of the cluster is incomplete, so what is missing from it may only not be listed yet.
    #[error("not every informer has synced yet; nothing was planned")]
    NotSynced,
    /// Nothing is planned from a partial view: a failing source stops the sync.
    #[error("a source failed, nothing was planned: {0}")]
    Source(#[from] SourceError),
    /// The registry or its provider could not read or write.
    #[error("registry: {0}")]
    Registry(#[from] RegistryError),
    /// The view never became complete, so no sync could be trusted.
    #[error("the informers did not sync within {0:?}")]
    SyncTimeout(Duration),
    /// Shut down while waiting for the view.
    #[error("stopped before the informers synced")]
    Cancelled,
    /// Another replica holds the leader lease (or this one could not renew it in time): only the leader
    /// writes, and a follower does not even read the provider.
    #[error("this replica is not the leader; nothing was sent to the provider")]
    NotLeader,
}

/// What one completed sync did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SyncReport {
    /// The plan's changes (before the registry adds its ownership records), in apply order.
    pub changes: Vec<Change>,
    /// Whether the changes were handed to the registry (false for a dry run and for a sync with nothing to do).
    pub applied: bool,
    /// Deletes the deletion guard held back (not in `changes`).
    pub held_back: Vec<Change>,
    /// Changes to records of objects the sources could not evaluate, kept as they are (not in `changes`).
    pub kept: Vec<Change>,
    /// A full sync (every record read, every object evaluated) rather than an incremental one.
    pub full: bool,
    /// Records the plan looked at that extdns does not own (another owner id, or none): left alone.
    pub not_owned: NotOwned,
    /// The records extdns owns in the provider's zones after this sync (as the deletion guard counts them:
    /// those counted before, plus what it created, less what it deleted); `None` when nothing was planned.
    pub owned: Option<usize>,
    /// A dry run only: the registry could not work out which of `changes` it would withhold (not send, as
    /// when the provider refuses an ownership record's name), so those changes show as pending when some
    /// may be refused. The registry's error, complete on its own; `extdns plan` and `extdns explain` print
    /// it beside the changes concerned (all of `changes`).
    pub withheld_unknown: Option<String>,
}

/// What the loop carries from one sync to the next, so that a change costs what it touches; see
/// [`Controller::sync`]. Starts empty: the first sync is a full one.
#[derive(Default)]
pub struct SyncState {
    cache: Option<Cache>,
}

impl SyncState {
    /// Whether the next sync must be a full one (nothing cached, or the last sync failed).
    pub fn needs_full(&self) -> bool {
        self.cache.as_ref().is_none_or(|c| c.index.is_none())
    }
}

impl std::fmt::Debug for SyncState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SyncState")
            .field("cached", &self.cache.is_some())
            .finish()
    }
}

/// Keeps DNS in step with the cluster: decides when to sync and whether it is safe to, and applies plans.
pub struct Controller {
    cluster: Arc<dyn Cluster>,
    source: Arc<dyn DesiredEndpoints>,
    registry: Arc<dyn Registry>,
    config: ControllerConfig,
    metrics: Arc<Metrics>,
    leadership: Leadership,
    /// The provider is this process's own (the built-in DNS server): every replica writes it whatever the
    /// lease says, and the lease decides only who writes Events and DNSEndpoint status.
    local_provider: bool,
    /// `--events-emit`: which events, and where they go; `None` emits nothing.
    events: Option<(EventsConfig, Arc<dyn EventSink>)>,
    /// Where each sync's outcome is written back onto the objects (DNSEndpoint status); `None` writes nothing.
    status: Option<Arc<dyn StatusSink>>,
    /// Told each sync attempt's outcome for the provider's own status (`--dns-provider-crds`).
    observer: Option<Arc<dyn SyncObserver>>,
    /// The provider's name (`--provider`), for what the names' outcomes say published them.
    provider_name: String,
    /// Shared names' health verdicts (`shared-health-check`); `None` probes nothing (the health
    /// properties are still taken off the desired endpoints).
    health: Option<HealthTable>,
}

impl Controller {
    /// A controller over the cluster view, the sources' desired endpoints and the registry; `metrics` is shared
    /// with the metrics server so it can serve what syncs record.
    pub fn new(
        cluster: Arc<dyn Cluster>,
        source: Arc<dyn DesiredEndpoints>,
        registry: Arc<dyn Registry>,
        config: ControllerConfig,
        metrics: Arc<Metrics>,
    ) -> Self {
        Controller {
            cluster,
            source,
            registry,
            config,
            metrics,
            leadership: Leadership::always(),
            local_provider: false,
            events: None,
            status: None,
            observer: None,
            provider_name: String::new(),
            health: None,
        }
    }

    /// Probe shared names' own targets where their `shared-health-check` asks, withdraw the unhealthy
    /// ones, and sync in full at each transition (docs/shared-names.md, "Health").
    pub fn with_health(mut self, table: HealthTable) -> Self {
        self.health = Some(table);
        self
    }

    /// Names the provider (`--provider`) in what the names' outcomes say published them.
    pub fn with_provider_name(mut self, name: impl Into<String>) -> Self {
        self.provider_name = name.into();
        self
    }

    /// Emit Kubernetes Events for what each sync does (`--events-emit`). A config that asks for nothing
    /// keeps the controller silent.
    pub fn with_events(mut self, config: EventsConfig, sink: Arc<dyn EventSink>) -> Self {
        self.events = config.any().then_some((config, sink));
        self
    }

    /// Report each sync's outcome, object by object, to `sink` (DNSEndpoint status).
    pub fn with_status(mut self, sink: Arc<dyn StatusSink>) -> Self {
        self.status = Some(sink);
        self
    }

    /// Tell `observer` every sync attempt's outcome (the provider object's status).
    pub fn with_sync_observer(mut self, observer: Arc<dyn SyncObserver>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Hands one sync attempt to the observer, if any, when this replica reports (the leader; a dropped
    /// sync of a follower says nothing about the provider).
    async fn observe(&self, result: Result<&SyncReport, &SyncError>) {
        let Some(observer) = &self.observer else {
            return;
        };
        if matches!(result, Err(SyncError::NotLeader)) || !self.leadership.is_leader() {
            return;
        }
        let zones = self.registry.domain_filter().includes().to_vec();
        observer.observe(ProviderSync { result, zones }).await;
    }

    /// Hands one sync's outcome to the status sink, and its events to the event sink, if they are on;
    /// `uids` are its objects' when the outcome was computed.
    async fn emit(&self, outcome: Outcome<'_>, uids: &Uids) {
        // Every replica of a local provider syncs: only the leader reports, so nothing is written twice.
        if self.local_provider && !self.leadership.is_leader() {
            return;
        }
        if let Some(status) = &self.status {
            status
                .report(self.cluster.store(), SyncStatus::of(&outcome, uids))
                .await;
        }
        let Some((config, sink)) = &self.events else {
            return;
        };
        let events = events_for(config, &self.config.plan.owner_id, &outcome);
        if !events.is_empty() {
            sink.emit(with_uids(events, uids)).await;
        }
    }

    /// Syncs only while `leadership` says this replica leads (`--leader-elect`); without it, always.
    pub fn with_leadership(mut self, leadership: Leadership) -> Self {
        self.leadership = leadership;
        self
    }

    /// The provider lives in this process (`--provider=dns-server`: the zones it answers from), so every
    /// replica must write it from its own view: with `--leader-elect`, syncs no longer wait for the lease,
    /// which then decides only who emits Events and writes DNSEndpoint status.
    pub fn with_local_provider(mut self) -> Self {
        self.local_provider = true;
        self
    }

    /// Whether this replica may write the provider now.
    fn may_write(&self) -> bool {
        self.local_provider || self.leadership.is_leader()
    }

    /// The metrics this controller records, for the server that exposes them.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// The cluster view the syncs read: what writes back to the objects (their status) addresses each kind
    /// where the view's watchers found it served.
    pub fn cluster(&self) -> Arc<dyn Cluster> {
        self.cluster.clone()
    }

    /// One full reconcile: read the registry, ask the sources, plan, apply. Nothing is planned unless every
    /// informer has synced and every source succeeded, because records missing from an incomplete view would
    /// otherwise be deleted.
    pub async fn run_once(&self) -> Result<SyncReport, SyncError> {
        let result = self.full_sync(None).await.map(|(report, _)| report);
        self.observe(result.as_ref()).await;
        let report = result?;
        self.metrics.count_sync(true);
        self.metrics.mark_ready();
        Ok(report)
    }

    /// One sync as the loop runs it: incremental when `state` holds what one needs and `full` is false,
    /// full otherwise (and when the change needs it). With `--events`, `state` then holds what the next
    /// sync starts from; after a failure it is emptied, so the next sync is a full one.
    pub async fn sync(&self, state: &mut SyncState, full: bool) -> Result<SyncReport, SyncError> {
        // Allowed to go full, it never defers.
        Ok(self.sync_or_defer(state, full, true).await?.unwrap_or_default())
    }

    /// [`Controller::sync`], except that a change found to need a full sync when `may_go_full` is false
    /// is left to the next full sync (`Ok(None)`; `state` then needs one): the loop keeps full syncs asked
    /// for by events `--min-event-sync-interval` apart.
    async fn sync_or_defer(
        &self,
        state: &mut SyncState,
        full: bool,
        may_go_full: bool,
    ) -> Result<Option<SyncReport>, SyncError> {
        if !self.cluster.synced() {
            // Nothing read, nothing changed: what is cached still holds for the next sync (the view is
            // unsynced for a moment whenever a Service's new selector has its Pods listed).
            return Err(SyncError::NotSynced);
        }
        let incremental = match state.cache.as_mut() {
            Some(cache) if !full => self.incremental_sync(cache).await,
            _ => Ok(None),
        };
        let result = match incremental {
            Ok(Some(report)) => Ok(report),
            Ok(None) if !full && !may_go_full => {
                // The changes were taken and the index may be half updated: only a full sync can follow.
                if let Some(cache) = state.cache.as_mut() {
                    cache.index = None;
                }
                debug!("the change needs a full sync; it runs when --min-event-sync-interval has passed");
                return Ok(None);
            }
            Ok(None) => {
                // A full sync rebuilds the desired index from scratch: free the old one first, so that its
                // peak does not hold both. The records may serve again (`--txt-cache-interval`).
                let records = state.cache.take().and_then(|c| self.reusable(c));
                self.full_sync(records).await.map(|(report, c)| {
                    state.cache = c;
                    report
                })
            }
            Err(e) => Err(e),
        };
        match &result {
            Ok(report) => {
                self.metrics.count_sync(report.full);
                if report.full {
                    self.metrics.mark_ready();
                }
            }
            // What is cached may no longer be what the provider holds.
            Err(_) => state.cache = None,
        }
        self.observe(result.as_ref()).await;
        result.map(Some)
    }

    /// The records of `cache`, when a full sync may plan from them instead of reading the provider: until
    /// they are due to be read again, and only if the provider's read state outlives writes.
    fn reusable(&self, cache: Cache) -> Option<(Snapshot, Instant)> {
        (!cache.stale && Instant::now() < cache.read_until).then_some((cache.snapshot, cache.read_until))
    }

    /// When records read now must be read again.
    fn read_until(&self) -> Instant {
        Instant::now() + jittered(self.config.records_cache_interval)
    }

    /// A full sync from `records` (the provider read now when `None`); also what the next sync starts from
    /// when the loop keeps it (`--events`, `--txt-cache-interval`), unless the write failed.
    async fn full_sync(&self, records: Option<(Snapshot, Instant)>) -> Result<(SyncReport, Option<Cache>), SyncError> {
        if !self.may_write() {
            return Err(SyncError::NotLeader);
        }
        self.metrics.mark_reconcile();
        if !self.cluster.synced() {
            return Err(SyncError::NotSynced);
        }
        // Taken before the store is read: whatever changes from here on is looked at again next time.
        let _ = self.cluster.take_changes();

        let (mut snapshot, read_until) = match records {
            Some(records) => {
                debug!("using cached records");
                records
            }
            None => {
                let read_until = self.read_until();
                let snapshot = self
                    .registry
                    .records()
                    .await
                    .inspect_err(|_| self.metrics.count_registry_error())?;
                (snapshot, read_until)
            }
        };
        self.metrics.observe_registry(&snapshot.records);
        // The registry's own upkeep (shared names' heartbeats and pruning), once per full sync, before the
        // plan; folded into the snapshot. Never in a dry run (`extdns plan`) or without the lease.
        // Its failure is logged and counted, never the sync's: bookkeeping must not hold back the records.
        if !self.config.dry_run
            && self.may_write()
            && let Err(error) = self.registry.maintain(&mut snapshot).await
        {
            self.metrics.count_registry_error();
            tracing::warn!(%error, "the registry's upkeep (shared names' heartbeats, pruning) failed; retried next full sync");
            // Some of its writes may have landed while the snapshot it folds them into was left as read:
            // plan from the zone as it is, never from a view that no longer describes it.
            snapshot = self
                .registry
                .records()
                .await
                .inspect_err(|_| self.metrics.count_registry_error())?;
        }

        let store = self.cluster.store();
        let mut index = self.config.events.then(DesiredIndex::default);
        let output = self
            .source
            .desired(&store, index.as_mut())
            .await
            .inspect_err(|_| self.metrics.count_source_error())?;
        // The view can only have been incomplete if an informer restarted its list meanwhile; check again
        // rather than trust a result computed from it.
        if !self.cluster.synced() {
            return Err(SyncError::NotSynced);
        }
        let endpoints = self.health_filtered(output.endpoints, true);
        let desired = self
            .registry
            .adjust_endpoints(endpoints)
            .await
            .inspect_err(|_| self.metrics.count_registry_error())?;
        self.metrics
            .observe_source(&desired, &snapshot.records, &output.invalid, &output.deduplicated);
        self.metrics.observe_failed_objects(&output.failed_by_source);
        let unavailable = store.unavailable_kinds();
        self.metrics.observe_unavailable(&unavailable);
        for (kind, why) in &unavailable {
            info!(%kind, %why, "unavailable: the records of what needs it are held");
        }

        let mut owned = OwnedCounts::default();
        let (report, written) = self
            .plan_and_apply(PlanInput {
                snapshot: &snapshot,
                current: &snapshot.records,
                all_current: &snapshot.records,
                owned: &mut owned,
                desired,
                failed: &output.failed,
                full: true,
                store: &store,
                planned: None,
            })
            .await?;
        let keep = index.is_some() || !self.config.records_cache_interval.is_zero();
        let cache = keep.then(|| {
            let applied = written.is_some();
            let stale = written.is_some_and(|w| !self.registry.fold_applied(&mut snapshot, &report.changes, w));
            if applied {
                // A full sync may change any record: count them again as they now are, here rather than in
                // the next incremental sync, whose latency counts.
                owned.reset();
                if !stale {
                    let zones = self.registry.domain_filter();
                    owned.ensure(zones.includes(), &self.config.plan.owner_id, &snapshot.records);
                }
            }
            // Kept until the next full sync: give back what the read over-reserved.
            snapshot.records.shrink_to_fit();
            Cache {
                snapshot,
                owned,
                read_until,
                stale,
                index,
            }
        });
        Ok((report, cache))
    }

    /// An incremental sync: the objects changed since the last sync are evaluated again, and only the names
    /// they publish (or published) are planned, against the cached records. `Ok(None)` when the change
    /// needs a full sync (everything changed, or a source cannot say what a change affects). Every
    /// guarantee of a full sync holds: nothing is planned from an unsynced view, ownership is checked per
    /// record, the deletion guard counts every record, and records of failing objects are kept.
    async fn incremental_sync(&self, cache: &mut Cache) -> Result<Option<SyncReport>, SyncError> {
        if !self.may_write() {
            return Err(SyncError::NotLeader);
        }
        if !self.cluster.synced() {
            return Err(SyncError::NotSynced);
        }
        let Some(index) = cache.index.as_mut() else {
            return Ok(None);
        };
        let changes = self.cluster.take_changes();
        if changes.is_empty() {
            self.metrics.sync_folded_nothing();
            return Ok(Some(SyncReport::default()));
        }
        self.metrics.mark_reconcile();
        let store = self.cluster.store();
        let Some(changed) = self
            .source
            .desired_changed(&store, index, &changes)
            .await
            .inspect_err(|_| self.metrics.count_source_error())?
        else {
            return Ok(None);
        };
        if !self.cluster.synced() {
            return Err(SyncError::NotSynced);
        }
        if changed.names.is_empty() {
            debug!(
                objects = changes.objects().count(),
                "the changed objects publish no names; nothing to plan"
            );
            self.metrics.mark_sync();
            self.metrics.sync_folded_nothing();
            return Ok(Some(SyncReport::default()));
        }
        if cache.stale {
            cache.read_until = self.read_until();
            cache.snapshot = self
                .registry
                .records()
                .await
                .inspect_err(|_| self.metrics.count_registry_error())?;
            cache.owned.reset();
            cache.stale = false;
        }
        let endpoints = self.health_filtered(changed.output.endpoints, false);
        let desired = self
            .registry
            .adjust_endpoints(endpoints)
            .await
            .inspect_err(|_| self.metrics.count_registry_error())?;
        self.metrics.observe_failed_objects(&changed.output.failed_by_source);
        let names = changed.names.iter().map(String::as_str);
        let current: Vec<Endpoint> = cache.snapshot.records.of_names(names).into_iter().cloned().collect();
        debug!(names = changed.names.len(), records = current.len(), "incremental sync");
        let (report, written) = self
            .plan_and_apply(PlanInput {
                snapshot: &cache.snapshot,
                current: &current,
                all_current: &cache.snapshot.records,
                owned: &mut cache.owned,
                desired,
                failed: &changed.output.failed,
                full: false,
                store: &store,
                planned: Some(&changed.names),
            })
            .await?;
        if let Some(written) = written {
            // The fold changes records at the changes' names only: count those out before and in after.
            let touched: BTreeSet<String> = report
                .changes
                .iter()
                .flat_map(|c| std::iter::once(c.endpoint()).chain(c.previous()))
                .map(|e| name_key(&e.dns_name).into_owned())
                .collect();
            let touched = || touched.iter().map(String::as_str);
            cache.owned.remove(cache.snapshot.records.of_names(touched()));
            if self
                .registry
                .fold_applied(&mut cache.snapshot, &report.changes, written)
            {
                cache.owned.add(cache.snapshot.records.of_names(touched()));
            } else {
                cache.stale = true;
            }
        }
        Ok(Some(report))
    }

    /// The desired endpoints as the health of shared names leaves them (`crate::health`).
    fn health_filtered(&self, endpoints: Vec<Endpoint>, full: bool) -> Vec<Endpoint> {
        crate::health::filter::apply(endpoints, self.health.as_ref(), full)
    }

    /// Plans `input.desired` against `input.current`, holds back what must not change (records of objects
    /// that could not be evaluated, deletes past the deletion guard), applies the rest unless this is a dry
    /// run or another replica leads by now, and reports it (logs, metrics, events). What the registry wrote
    /// beside the changes comes back when they were applied, for the cache to fold in.
    async fn plan_and_apply(&self, input: PlanInput<'_>) -> Result<(SyncReport, Option<Written>), SyncError> {
        let PlanInput {
            snapshot,
            current,
            all_current,
            owned,
            desired,
            failed,
            full,
            store,
            planned,
        } = input;
        let provider_filter = self.registry.domain_filter();
        // Names and object keys only, before the plan consumes the endpoints: what the names' outcomes
        // are computed from once the records are written.
        let asked = Asked::of(&desired);
        let names = NamesInput {
            asked: &asked,
            current,
            provider_filter: &provider_filter,
            failed,
            store,
            planned,
        };
        // The desired set goes into the plan, which moves what it creates into its changes and drops the
        // rest: none of it sits under the write (on a first sync, every record is created).
        let outcome = extdns_plan::calculate_owned(&self.config.plan, current, desired, &provider_filter);
        if full {
            self.metrics.observe_owner_mismatches(&outcome.owner_mismatches);
        }
        for m in &outcome.owner_mismatches {
            debug!(
                record_type = %m.record_type, foreign_owner = %m.foreign_owner, domain = %m.domain,
                "skipping a record owned by another owner id"
            );
        }
        let not_owned = outcome.not_owned;
        let mut changes = outcome.changes;
        changes.retain(Change::is_effective);
        let kept = hold_records_of_failed_objects(failed, &mut changes);
        for c in &kept {
            let e = c.endpoint();
            warn!(
                name = %e.dns_name, record_type = %e.record_type, action = c.action(),
                object = %c.previous().and_then(Endpoint::resource).unwrap_or_default(),
                "keeping the record as it is: the object it belongs to could not be evaluated this sync"
            );
        }
        let zones = provider_filter.includes();
        owned.ensure(zones, &self.config.plan.owner_id, all_current);
        let owned_before = owned.total();
        let held_back = self.guard_deletes(zones, owned, &mut changes);
        let mut failed: Vec<(&ObjectKey, Option<&str>)> = failed.iter().collect();
        // Taken now, before the write: what the events and status say is about these very objects.
        let uids = Uids::of(store, changes.iter().chain(&held_back), failed.iter().map(|(k, _)| *k));

        let mut withheld_unknown = None;
        // Nothing to write, or a dry run: reported, nothing sent.
        let unwritten = if changes.is_empty() {
            self.metrics.no_op_runs.inc();
            if full {
                info!("All records are already up to date");
            } else {
                debug!("All records are already up to date");
            }
            self.metrics.mark_sync();
            let outcome = Outcome {
                held_back: &held_back,
                failed: std::mem::take(&mut failed),
                ..Outcome::default()
            };
            self.record_names(&names, &outcome);
            self.emit(outcome, &uids).await;
            true
        } else if self.config.dry_run {
            log_changes(&changes, Verb::DryRun, &FailedRecords::default());
            info!(changes = changes.len(), "dry run: nothing was sent to the provider");
            self.metrics.mark_sync();
            // What the registry would not send is known without writing: refused, as the sync would say.
            // Carried in the report, not only logged: a dry run that cannot tell says so where it is read.
            let (withheld, unknown) = match self.registry.withheld(snapshot, &changes) {
                Ok(withheld) => (withheld, None),
                Err(error) => {
                    // Debug only: it would say the same at every sync; the report carries it to `plan`
                    // and `explain`.
                    debug!(%error, "dry run: cannot work out which changes the registry would withhold");
                    (Vec::new(), Some(error.to_string()))
                }
            };
            withheld_unknown = unknown;
            let withheld = FailedRecords::of(&withheld);
            let outcome = Outcome {
                errored: changes
                    .iter()
                    .filter_map(|c| withheld.get(c.endpoint()).map(|f| (c, Some(&f.reason))))
                    .collect(),
                ..Outcome::default()
            };
            self.fold_names(&names, &outcome, None, &changes);
            true
        } else {
            false
        };
        if unwritten {
            let report = SyncReport {
                changes,
                applied: false,
                held_back,
                kept,
                full,
                not_owned,
                owned: Some(owned_before),
                withheld_unknown,
            };
            return Ok((report, None));
        }

        // The fence: the plan took time, and the lease may have run out meanwhile. Past this check the write
        // starts within the renew deadline, which is shorter than any other replica's wait for the lease.
        if !self.may_write() {
            warn!(
                changes = changes.len(),
                "lost the leader lease while planning; nothing was sent to the provider"
            );
            return Err(SyncError::NotLeader);
        }
        self.metrics.count_write(full);
        match self.registry.apply(snapshot, &changes).await {
            Ok(written) => {
                // A change the registry withheld (its ownership record's name refused) was not written:
                // it is reported refused, never as applied; the sync itself succeeded.
                let withheld = FailedRecords::of(written.withheld());
                log_changes(&changes, Verb::Applied, &withheld);
                self.metrics.mark_sync();
                let mut outcome = Outcome {
                    held_back: &held_back,
                    failed,
                    ..Outcome::default()
                };
                for c in &changes {
                    match withheld.get(c.endpoint()) {
                        Some(f) => outcome.errored.push((c, Some(&f.reason))),
                        None => outcome.applied.push(c),
                    }
                }
                // What was withheld was not written, so it owns nothing new.
                let owned = owned_after(owned_before, outcome.applied.iter().copied());
                self.record_names(&names, &outcome);
                self.emit(outcome, &uids).await;
                Ok((
                    SyncReport {
                        changes,
                        applied: true,
                        held_back,
                        kept,
                        full,
                        not_owned,
                        owned: Some(owned),
                        withheld_unknown: None,
                    },
                    Some(written),
                ))
            }
            Err(e) => {
                self.metrics.count_registry_error();
                // A partial failure still wrote the other changes: say which ones did land.
                let mut outcome = Outcome {
                    held_back: &held_back,
                    failed,
                    ..Outcome::default()
                };
                if let RegistryError::Provider(extdns_provider::ProviderError::Partial { failures }) = &e {
                    let failed = FailedRecords::of(failures);
                    log_changes(&changes, Verb::Applied, &failed);
                    for c in &changes {
                        match failed.get(c.endpoint()) {
                            Some(f) => outcome.errored.push((c, Some(&f.reason))),
                            None => outcome.applied.push(c),
                        }
                    }
                } else {
                    outcome.errored = changes.iter().map(|c| (c, None)).collect();
                }
                self.record_names_failed(&names, &outcome, &e);
                self.emit(outcome, &uids).await;
                Err(e.into())
            }
        }
    }

    /// Folds this sync's names' outcomes ([`crate::name_status`]) into the book the status writers and
    /// `/summary` read: after the write, so it never delays a record.
    fn record_names(&self, input: &NamesInput<'_>, outcome: &Outcome<'_>) {
        self.fold_names(input, outcome, None, &[]);
    }

    /// [`Controller::record_names`] for a write that failed as a whole: each change it names is refused
    /// with `error` where the provider named no reason of its own.
    fn record_names_failed(&self, input: &NamesInput<'_>, outcome: &Outcome<'_>, error: &RegistryError) {
        let reason = FailureReason {
            kind: extdns_provider::FailureKind::Refused,
            message: error.to_string(),
        };
        self.fold_names(input, outcome, Some(&reason), &[]);
    }

    /// Folds the outcomes in; `unwritten` are the changes of a dry run (see [`SyncFacts::unwritten`]).
    fn fold_names(
        &self,
        input: &NamesInput<'_>,
        outcome: &Outcome<'_>,
        fallback: Option<&FailureReason>,
        unwritten: &[Change],
    ) {
        let errored: Vec<(&Change, Option<&FailureReason>)> =
            outcome.errored.iter().map(|(c, why)| (*c, why.or(fallback))).collect();
        let uid = |key: &ObjectKey| input.store.uid(key);
        let facts = SyncFacts {
            asked: input.asked,
            current: input.current,
            plan: &self.config.plan,
            provider_filter: input.provider_filter,
            provider: &self.provider_name,
            applied: &outcome.applied,
            errored: &errored,
            unwritten,
            failed: input.failed,
            uids: &uid,
        };
        let update = crate::name_status::compute(&facts);
        self.metrics.fold_names(update, input.planned);
    }

    /// Take the deletes the deletion guard holds back out of `changes`, say so (one error per zone, the held
    /// records in a dry run) and set the guard's metric; returns what was held back.
    fn guard_deletes(&self, zones: &[String], owned: &OwnedCounts, changes: &mut Vec<Change>) -> Vec<Change> {
        let guard = self.config.deletion_guard;
        let verdict = guard.check_counted(owned, changes);
        self.metrics.observe_deletion_guard(&verdict);
        if verdict.blocked().next().is_none() {
            return Vec::new();
        }
        for z in verdict.blocked() {
            error!(
                zone = %z.zone, deletes = z.deletes, owned = z.owned, threshold_percent = guard.percent,
                minimum = guard.min,
                "deletion guard: the plan would delete {} of the {} records extdns owns in zone {:?}; none of \
                 these deletes is applied (creates and updates are). If this is intended, raise \
                 --deletion-guard-percent (100 disables the guard)",
                z.deletes, z.owned, z.zone
            );
        }
        let (held, kept): (Vec<Change>, Vec<Change>) = std::mem::take(changes)
            .into_iter()
            .partition(|c| matches!(c, Change::Delete(e) if verdict.holds(zones, e)));
        *changes = kept;
        if self.config.dry_run {
            log_changes(&held, Verb::HeldBack, &FailedRecords::default());
        }
        held
    }

    /// `--once`: wait (at most `timeout`) for the informers' first list, then sync once.
    pub async fn run_once_when_synced(
        &self,
        timeout: Duration,
        shutdown: &CancellationToken,
    ) -> Result<SyncReport, SyncError> {
        let deadline = Instant::now() + timeout;
        let mut wake = self.cluster.changes();
        while !self.cluster.synced() {
            if Instant::now() >= deadline {
                return Err(SyncError::SyncTimeout(timeout));
            }
            // The view announces the moment it becomes synced; the timer only bounds a silent one.
            tokio::select! {
                _ = shutdown.cancelled() => return Err(SyncError::Cancelled),
                _ = changed_or_never(&mut wake) => {}
                _ = tokio::time::sleep(Duration::from_millis(100)) => {}
            }
        }
        self.run_once().await
    }

    /// Sync on the schedule until `shutdown`. Failed syncs are logged, counted and retried with backoff; none
    /// stops the loop. A sync in progress when `shutdown` fires finishes first, so a record is never left
    /// half-written (a record without its ownership TXT would never be managed again).
    pub async fn run(&self, shutdown: CancellationToken) {
        let mut schedule = self.schedule();
        let mut changes = self.config.events.then(|| self.cluster.changes());
        // A shared name's target changing health: a full sync soon, not at the next interval.
        let mut health_changes = self.health.as_ref().map(HealthTable::transitions);
        let mut health_due = false;
        // Wakes the wait for the first list: the view announces the moment it becomes synced.
        let mut synced_wake = self.cluster.changes();
        let mut state = SyncState::default();
        let mut failures: u32 = 0;
        // Since when, and since when last reported, the loop has been waiting for the informers.
        let mut waiting: Option<(Instant, Instant)> = None;
        let mut leadership = self.leadership.clone();
        let mut leading = true;
        loop {
            if shutdown.is_cancelled() {
                break;
            }
            if !self
                .follow_until_leading(&mut leadership, &mut leading, &shutdown)
                .await
            {
                break;
            }
            if !self.local_provider && !std::mem::replace(&mut leading, true) {
                // A new leader syncs at once, in full: its view is warm, but the old leader wrote meanwhile
                // and its last changes may be unfinished.
                state = SyncState::default();
                schedule = self.schedule();
            }
            let now = Instant::now();
            if schedule.is_due(now) && !self.cluster.synced() {
                // Not a sync: the first one runs the moment the last informer has listed (its change wakes
                // this wait), and no event can be held back by a sync that never ran.
                waiting = Some(report_waiting(waiting, now));
                tokio::select! {
                    biased;
                    _ = shutdown.cancelled() => break,
                    _ = changed_or_never(&mut synced_wake) => {}
                    _ = tokio::time::sleep(UNSYNCED_RETRY) => {}
                }
                continue;
            }
            if schedule.is_due(now) {
                let health = std::mem::take(&mut health_due);
                let full = state.needs_full() || schedule.is_full_due(now) || health;
                if full {
                    schedule.start_run(now);
                } else {
                    schedule.start_incremental_run(now);
                }
                let result = match self.sync_or_defer(&mut state, full, schedule.may_go_full(now)).await {
                    Ok(Some(report)) => Ok(report),
                    Ok(None) => {
                        schedule.defer_full(Instant::now());
                        continue;
                    }
                    Err(e) => Err(e),
                };
                if result.as_ref().is_ok_and(|r| r.full && !full) {
                    // The change needed a full sync: the next regular one is an interval from this one.
                    schedule.start_run(now);
                }
                // Only a write starts the wait for the next incremental write (an explicit
                // --min-event-sync-interval); a failed apply may have written too.
                if match &result {
                    Ok(report) => report.applied,
                    Err(e) => matches!(e, SyncError::Registry(_)),
                } {
                    schedule.wrote(now);
                }
                match result {
                    Ok(_) => {
                        failures = 0;
                        waiting = None;
                        self.metrics.consecutive_soft_errors.set(0);
                    }
                    Err(SyncError::NotLeader) => {
                        // The top of the loop waits while another replica leads; if this one leads again
                        // by then (a renewal that was only late), the dropped plan is computed again soon.
                        schedule.retry_after(Instant::now(), UNSYNCED_RETRY);
                    }
                    Err(SyncError::NotSynced) => {
                        // An informer started listing again during the sync.
                        waiting = Some(report_waiting(waiting, Instant::now()));
                        schedule.retry_after(Instant::now(), UNSYNCED_RETRY);
                    }
                    Err(e) => {
                        failures = failures.saturating_add(1);
                        self.metrics.consecutive_soft_errors.set(i64::from(failures));
                        let delay = retry_delay(failures, self.config.interval);
                        error!(error = %e, consecutive_failures = failures, retry_in = ?delay, "sync failed");
                        schedule.retry_after(Instant::now(), delay);
                    }
                }
                continue;
            }
            tokio::select! {
                biased;
                _ = shutdown.cancelled() => break,
                _ = tokio::time::sleep_until(schedule.next_run_at()) => {}
                _ = leadership.changed() => {}
                changed = next_change(&mut health_changes) => {
                    if changed {
                        health_due = true;
                        schedule.on_event(Instant::now(), true);
                    } else {
                        health_changes = None;
                    }
                }
                changed = next_change(&mut changes) => {
                    if changed {
                        schedule.on_event(Instant::now(), state.needs_full());
                    } else {
                        warn!("the cluster's change stream ended; syncing on the interval only");
                        changes = None;
                    }
                }
            }
        }
        info!("Terminating main controller loop");
    }

    /// A schedule starting now: the first sync is due at once.
    fn schedule(&self) -> Schedule {
        Schedule::new(
            Instant::now(),
            self.config.interval,
            self.config.min_event_sync_interval,
            self.config.min_incremental_write_interval,
        )
    }

    /// Sets the leader metric and, while another replica leads, waits (the informers stay warm meanwhile,
    /// so a takeover syncs at once). `leading` is whether this replica led the last time it looked; it is
    /// false on return after a wait. Over a local provider nothing waits: `leading` only follows the lease, so
    /// that becoming a follower is logged once. Returns false when `shutdown` fired.
    async fn follow_until_leading(
        &self,
        leadership: &mut Leadership,
        leading: &mut bool,
        shutdown: &CancellationToken,
    ) -> bool {
        let mut synced_wake = self.cluster.changes();
        loop {
            let now_leading = self.leadership.is_leader();
            self.metrics.set_leader(now_leading);
            if self.local_provider {
                if *leading && !now_leading {
                    info!(
                        "not the leader: syncing this replica's own zones all the same; the leader writes Events \
                         and status"
                    );
                }
                *leading = now_leading;
                return true;
            }
            if now_leading {
                return true;
            }
            if *leading {
                info!("not the leader: watching the cluster, not syncing until this replica holds the lease");
                *leading = false;
            }
            // A follower is ready once its view is warm: it can take over at once.
            if self.cluster.synced() {
                self.metrics.mark_ready();
            }
            tokio::select! {
                biased;
                _ = shutdown.cancelled() => return false,
                _ = leadership.changed() => {}
                _ = changed_or_never(&mut synced_wake), if !self.metrics.is_ready() => {}
            }
        }
    }
}

/// Says that the loop waits for the informers' first list: once at first, then every
/// [`UNSYNCED_WARN_EVERY`] as a warning. Takes and returns since when, and since when last reported.
fn report_waiting(waiting: Option<(Instant, Instant)>, now: Instant) -> (Instant, Instant) {
    match waiting {
        None => {
            info!("waiting for the informers to list every watched kind before syncing");
            (now, now)
        }
        Some((since, reported)) if now.duration_since(reported) >= UNSYNCED_WARN_EVERY => {
            warn!(
                waited = ?now.duration_since(since),
                "the informers have still not listed every watched kind; nothing is planned until they do \
                 (check the API server address, RBAC and installed CRDs)"
            );
            (since, now)
        }
        Some(w) => w,
    }
}

/// The records extdns owns after `changes` were applied to the `before` it owned: each create adds one, each
/// delete takes one (the plan only creates and deletes records it owns).
fn owned_after<'a>(before: usize, changes: impl IntoIterator<Item = &'a Change>) -> usize {
    changes.into_iter().fold(before, |n, c| match c {
        Change::Create(_) => n + 1,
        Change::Delete(_) => n.saturating_sub(1),
        Change::Update { .. } => n,
    })
}

/// The TTL as a log field, absent when not configured (the provider's default applies).
fn ttl(e: &Endpoint) -> Option<i64> {
    e.record_ttl.is_configured().then_some(e.record_ttl.0)
}

/// The set identifier as a log field, absent when empty (the common case).
fn set_id(e: &Endpoint) -> Option<&str> {
    (!e.set_identifier.is_empty()).then_some(e.set_identifier.as_str())
}

/// The wait after `failures` consecutive failed syncs: from one second, doubling, capped at the interval (a
/// provider that is down is asked at most once per interval), half jittered so many extdns instances that
/// lost the same provider do not retry in lock-step.
pub(crate) fn retry_delay(failures: u32, interval: Duration) -> Duration {
    let backoff = extdns_provider::Backoff {
        initial: Duration::from_secs(1),
        max: interval,
        multiplier: 2.0,
        jitter: 0.5,
        max_attempts: u32::MAX,
        throttled_for: extdns_provider::backoff::DEFAULT_THROTTLED_FOR,
    };
    backoff.delay(failures.saturating_sub(1))
}

/// Waits for the next change, forever once the stream ended (the caller's timer takes over).
async fn changed_or_never(changes: &mut watch::Receiver<u64>) {
    if changes.changed().await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Waits for the next change; `false` when the stream ended. Without `--events` it never returns.
async fn next_change(changes: &mut Option<watch::Receiver<u64>>) -> bool {
    match changes {
        Some(rx) => rx.changed().await.is_ok(),
        None => std::future::pending().await,
    }
}

#[derive(Clone, Copy)]
enum Verb {
    Applied,
    DryRun,
    HeldBack,
}

/// One info line per changed record: what, which name and type, which targets. Records in `failed` (the
/// keys of the [`extdns_provider::ChangeFailure`]s) were not applied and are left out.
fn log_changes(changes: &[Change], verb: Verb, failed: &FailedRecords<'_>) {
    let msg = |action: &str| match verb {
        Verb::Applied => format!("{action} record"),
        Verb::DryRun => format!("would {action} record (dry run)"),
        Verb::HeldBack => format!("would {action} record, but the deletion guard holds it back (dry run)"),
    };
    for change in changes {
        if failed.contains(change.endpoint()) {
            continue;
        }
        let e = change.endpoint();
        let targets = e.targets.join(",");
        match change {
            Change::Create(_) => info!(
                action = "create", name = %e.dns_name, record_type = %e.record_type, targets = %targets,
                ttl = ttl(e), set_identifier = set_id(e), "{}", msg("create")
            ),
            Change::Update { old, .. } => info!(
                action = "update", name = %e.dns_name, record_type = %e.record_type, targets = %targets,
                old_targets = %old.targets.join(","), ttl = ttl(e), set_identifier = set_id(e),
                "{}", msg("update")
            ),
            Change::Delete(_) => info!(
                action = "delete", name = %e.dns_name, record_type = %e.record_type, targets = %targets,
                set_identifier = set_id(e), "{}", msg("delete")
            ),
        }
    }
}
