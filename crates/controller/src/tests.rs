//! The loop's rules, checked with small fakes of the cluster, the sources and the registry.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use extdns_endpoint::{Change, Changes, DomainFilter, Endpoint, RecordType, label};
use extdns_informer::{Cluster, ClusterStore};
use extdns_provider::{ChangeFailure, FailureKind, ProviderError};
use extdns_registry::{Registry, RegistryError, Snapshot, Written};
use extdns_source::SourceError;
use extdns_source::{DesiredIndex, Failures, PipelineOutput};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::{Controller, ControllerConfig, DesiredEndpoints, Metrics, SyncError};
use extdns_leader::Leadership;

const OWNER: &str = "default";

/// A cluster whose synced flag and change counter the test drives; the objects are irrelevant because the
/// fake source ignores them.
struct FakeCluster {
    store: Arc<ClusterStore>,
    /// The store served from the second call of `store()` on (the cluster as it is once a sync evaluated).
    later: Mutex<Option<Arc<ClusterStore>>>,
    served: AtomicUsize,
    synced: AtomicBool,
    changes: watch::Sender<u64>,
}

impl FakeCluster {
    fn new(synced: bool) -> Arc<Self> {
        Self::holding(ClusterStore::new(), synced)
    }

    /// A cluster holding `store`'s objects (for what reads them beside the source: uids).
    fn holding(store: ClusterStore, synced: bool) -> Arc<Self> {
        Arc::new(FakeCluster {
            store: Arc::new(store),
            later: Mutex::new(None),
            served: AtomicUsize::new(0),
            synced: AtomicBool::new(synced),
            changes: watch::Sender::new(0),
        })
    }

    fn touch(&self) {
        self.changes.send_modify(|n| *n += 1);
    }
}

impl Cluster for FakeCluster {
    fn store(&self) -> Arc<ClusterStore> {
        let later = self.later.lock().map(|l| l.clone()).unwrap_or_default();
        match later {
            Some(later) if self.served.fetch_add(1, Ordering::SeqCst) > 0 => later,
            _ => Arc::clone(&self.store),
        }
    }
    fn synced(&self) -> bool {
        self.synced.load(Ordering::SeqCst)
    }
    fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }
}

/// Desired endpoints set by the test, or a failure.
#[derive(Default)]
struct FakeSource {
    endpoints: Mutex<Vec<Endpoint>>,
    /// The `resource` keys reported as not evaluated.
    failed: Mutex<std::collections::BTreeSet<String>>,
    /// Why some of `failed` failed.
    why: Mutex<std::collections::BTreeMap<String, String>>,
    fail: AtomicBool,
    calls: AtomicUsize,
}

impl FakeSource {
    fn with(endpoints: Vec<Endpoint>) -> Arc<Self> {
        Arc::new(FakeSource {
            endpoints: Mutex::new(endpoints),
            ..FakeSource::default()
        })
    }

    fn set(&self, endpoints: Vec<Endpoint>) {
        if let Ok(mut e) = self.endpoints.lock() {
            *e = endpoints;
        }
    }
}

#[async_trait]
impl DesiredEndpoints for FakeSource {
    async fn desired(&self, _: &ClusterStore, _: Option<&mut DesiredIndex>) -> Result<PipelineOutput, SourceError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.fail.load(Ordering::SeqCst) {
            return Err(SourceError::Other {
                source_name: "fake".into(),
                message: "template failed".into(),
            });
        }
        let endpoints = self.endpoints.lock().map(|e| e.clone()).unwrap_or_default();
        let labels = self.failed.lock().map(|f| f.clone()).unwrap_or_default();
        let why = self.why.lock().map(|w| w.clone()).unwrap_or_default();
        let mut failed = Failures::new();
        for label in &labels {
            if let Some(object) = extdns_informer::ObjectKey::from_resource_label(label) {
                failed.insert(object, why.get(label).cloned());
            }
        }
        let failed_by_source = [("fake".to_string(), failed.len())].into_iter().collect();
        Ok(PipelineOutput {
            endpoints,
            failed,
            failed_by_source,
            ..PipelineOutput::default()
        })
    }
}

/// A registry over a plain list of records (ownership is a label, as the TXT registry reports it). The
/// first `fail_applies` calls to `apply_changes` fail with the given kind of error.
struct FakeRegistry {
    records: Mutex<Vec<Endpoint>>,
    applies: AtomicUsize,
    reads: AtomicUsize,
    fail_applies: AtomicUsize,
    failure: fn(&[Change]) -> ProviderError,
    /// Records (by name) the registry does not send and reports withheld, as the TXT registry does a record
    /// whose ownership name the provider refuses.
    withhold: Mutex<Vec<&'static str>>,
}

impl FakeRegistry {
    fn new(records: Vec<Endpoint>) -> Arc<Self> {
        Self::failing(records, 0, |_| ProviderError::transient("timeout"))
    }

    fn failing(records: Vec<Endpoint>, fail_applies: usize, failure: fn(&[Change]) -> ProviderError) -> Arc<Self> {
        Arc::new(FakeRegistry {
            records: Mutex::new(records),
            applies: AtomicUsize::new(0),
            reads: AtomicUsize::new(0),
            fail_applies: AtomicUsize::new(fail_applies),
            failure,
            withhold: Mutex::new(Vec::new()),
        })
    }

    /// Never sends the changes to these records' names, and says so in what it returns.
    fn withholding(self: Arc<Self>, names: &[&'static str]) -> Arc<Self> {
        if let Ok(mut w) = self.withhold.lock() {
            w.extend_from_slice(names);
        }
        self
    }

    /// How many times the records were read: one per full sync.
    fn reads(&self) -> usize {
        self.reads.load(Ordering::SeqCst)
    }

    /// How many times changes were applied, failed ones included.
    fn applies(&self) -> usize {
        self.applies.load(Ordering::SeqCst)
    }

    fn snapshot(&self) -> Vec<Endpoint> {
        self.records.lock().map(|r| r.clone()).unwrap_or_default()
    }

    fn write(&self, changes: &[Change], skip: &[ChangeFailure]) {
        let Ok(mut records) = self.records.lock() else { return };
        let key = |e: &Endpoint| (e.dns_name.clone(), e.record_type.clone(), e.set_identifier.clone());
        for c in changes.iter().filter(|c| !skip.iter().any(|f| f.is_for(c.endpoint()))) {
            if let Some(gone) = c.previous() {
                records.retain(|r| key(r) != key(gone));
            }
            if !matches!(c, Change::Delete(_)) {
                records.push(c.endpoint().clone().with_label(label::OWNER, OWNER));
            }
        }
    }
}

#[async_trait]
impl Registry for FakeRegistry {
    async fn records(&self) -> Result<Snapshot, RegistryError> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        Ok(Snapshot::new(self.snapshot(), Default::default()))
    }

    async fn apply(&self, _: &Snapshot, changes: &[Change]) -> Result<Written, RegistryError> {
        self.applies.fetch_add(1, Ordering::SeqCst);
        let failing = self
            .fail_applies
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if failing {
            let err = (self.failure)(changes);
            if let ProviderError::Partial { failures } = &err {
                self.write(changes, failures);
            }
            return Err(err.into());
        }
        let withhold = self.withhold.lock().map(|w| w.clone()).unwrap_or_default();
        let withheld: Vec<ChangeFailure> = changes
            .iter()
            .filter(|c| withhold.contains(&c.endpoint().dns_name.as_str()))
            .map(|c| ChangeFailure::new(c.endpoint(), FailureKind::Refused, "withheld by the test"))
            .collect();
        self.write(changes, &withheld);
        Ok(Written::withholding(withheld))
    }

    /// Reads every time: the fake's records are its truth.
    fn fold_applied(&self, _: &mut Snapshot, _: &[Change], _: Written) -> bool {
        false
    }

    async fn adjust_endpoints(&self, endpoints: Vec<Endpoint>) -> Result<Vec<Endpoint>, RegistryError> {
        Ok(endpoints)
    }

    fn domain_filter(&self) -> DomainFilter {
        DomainFilter::default()
    }
}

fn a(name: &str, ip: &str) -> Endpoint {
    Endpoint::new(name, RecordType::A, [ip])
}

fn owned(e: Endpoint, owner: &str) -> Endpoint {
    e.with_label(label::OWNER, owner)
}

/// A cluster (its view complete or not), a source wanting `want`, an empty registry.
fn parts(synced: bool, want: Vec<Endpoint>) -> (Arc<FakeCluster>, Arc<FakeSource>, Arc<FakeRegistry>) {
    (
        FakeCluster::new(synced),
        FakeSource::with(want),
        FakeRegistry::new(vec![]),
    )
}

fn controller(
    cluster: &Arc<FakeCluster>,
    source: &Arc<FakeSource>,
    registry: &Arc<FakeRegistry>,
    mut config: ControllerConfig,
) -> Controller {
    // As the binary does: the plan's owner id is the one the registry writes.
    config.plan.owner_id = OWNER.to_string();
    let cluster: Arc<dyn Cluster> = cluster.clone();
    let source: Arc<dyn DesiredEndpoints> = source.clone();
    let registry: Arc<dyn Registry> = registry.clone();
    Controller::new(
        cluster,
        source,
        registry,
        config,
        Arc::new(Metrics::new("test", "test")),
    )
}

fn sample(metrics: &Metrics, prefix: &str) -> Option<f64> {
    metrics
        .encode()
        .lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// `external_dns_controller_last_sync_timestamp_seconds`: 0 until a sync completes.
fn last_sync(c: &Controller) -> Option<f64> {
    sample(c.metrics(), "external_dns_controller_last_sync_timestamp_seconds ")
}

fn names(records: &[Endpoint]) -> Vec<String> {
    let mut n: Vec<String> = records
        .iter()
        .map(|e| format!("{} {} {}", e.dns_name, e.record_type, e.targets.join(",")))
        .collect();
    n.sort();
    n
}

#[tokio::test]
async fn first_sync_creates_and_second_sync_is_a_no_op() -> Result<(), SyncError> {
    let (cluster, source, registry) = parts(true, vec![a("web.example.com", "10.0.0.1")]);
    let c = controller(&cluster, &source, &registry, ControllerConfig::default());

    let first = c.run_once().await?;
    assert!(first.applied);
    assert_eq!(four(&first.changes).create.len(), 1);
    assert_eq!(names(&registry.snapshot()), ["web.example.com A 10.0.0.1"]);

    let second = c.run_once().await?;
    assert!(!second.applied);
    assert!(second.changes.is_empty());
    assert_eq!(registry.applies(), 1);
    assert_eq!(
        sample(c.metrics(), "external_dns_controller_no_op_runs_total "),
        Some(1.0)
    );
    assert!(last_sync(&c).is_some_and(|t| t > 0.0));
    Ok(())
}

#[tokio::test]
async fn unsynced_informer_plans_nothing() {
    let cluster = FakeCluster::new(false);
    let source = FakeSource::with(vec![]);
    let registry = FakeRegistry::new(vec![owned(a("web.example.com", "10.0.0.1"), OWNER)]);
    let c = controller(&cluster, &source, &registry, ControllerConfig::default());

    let result = c.run_once().await;
    assert!(matches!(result, Err(SyncError::NotSynced)), "{result:?}");
    assert_eq!(registry.applies(), 0);
    assert_eq!(source.calls.load(Ordering::SeqCst), 0);
    assert_eq!(names(&registry.snapshot()), ["web.example.com A 10.0.0.1"]);
    assert_eq!(last_sync(&c), Some(0.0), "no sync has completed");
}

#[tokio::test]
async fn source_error_plans_nothing_and_is_counted() {
    let cluster = FakeCluster::new(true);
    let source = FakeSource::with(vec![]);
    source.fail.store(true, Ordering::SeqCst);
    let registry = FakeRegistry::new(vec![owned(a("web.example.com", "10.0.0.1"), OWNER)]);
    let c = controller(&cluster, &source, &registry, ControllerConfig::default());

    let result = c.run_once().await;
    assert!(matches!(result, Err(SyncError::Source(_))), "{result:?}");
    assert_eq!(registry.applies(), 0);
    assert_eq!(names(&registry.snapshot()), ["web.example.com A 10.0.0.1"]);
    assert_eq!(sample(c.metrics(), "external_dns_source_errors_total "), Some(1.0));
}

#[tokio::test]
async fn dry_run_computes_the_plan_but_applies_nothing() -> Result<(), SyncError> {
    let cluster = FakeCluster::new(true);
    let source = FakeSource::with(vec![a("new.example.com", "10.0.0.2")]);
    let registry = FakeRegistry::new(vec![owned(a("old.example.com", "10.0.0.1"), OWNER)]);
    let config = ControllerConfig {
        dry_run: true,
        ..ControllerConfig::default()
    };
    let c = controller(&cluster, &source, &registry, config);

    let report = c.run_once().await?;
    assert!(!report.applied);
    assert_eq!(names(&four(&report.changes).create), ["new.example.com A 10.0.0.2"]);
    assert_eq!(names(&four(&report.changes).delete), ["old.example.com A 10.0.0.1"]);
    assert_eq!(registry.applies(), 0);
    assert_eq!(names(&registry.snapshot()), ["old.example.com A 10.0.0.1"]);
    Ok(())
}

#[tokio::test]
async fn a_dry_run_that_cannot_tell_what_the_registry_withholds_reports_it() -> Result<(), SyncError> {
    let cluster = FakeCluster::new(true);
    let source = FakeSource::with(vec![a("new.example.com", "10.0.0.2")]);
    let registry = FakeRegistry::new(vec![]);
    let config = ControllerConfig {
        dry_run: true,
        ..ControllerConfig::default()
    };
    let c = controller(&cluster, &source, &registry, config);
    assert_eq!(c.run_once().await?.withheld_unknown, None, "a registry that can tell");

    let mut config = ControllerConfig {
        dry_run: true,
        ..ControllerConfig::default()
    };
    config.plan.owner_id = OWNER.to_string();
    let failing: Arc<dyn Registry> = Arc::new(extdns_test_support::registry::WithheldFails(registry.clone()));
    let cluster_dyn: Arc<dyn Cluster> = cluster.clone();
    let source_dyn: Arc<dyn DesiredEndpoints> = source.clone();
    let c = Controller::new(
        cluster_dyn,
        source_dyn,
        failing,
        config,
        Arc::new(Metrics::new("test", "")),
    );
    let report = c.run_once().await?;
    assert_eq!(names(&four(&report.changes).create), ["new.example.com A 10.0.0.2"]);
    assert_eq!(
        report.withheld_unknown.as_deref(),
        Some(RegistryError::EncryptionWithoutKey.to_string().as_str())
    );
    assert_eq!(registry.applies(), 0);
    Ok(())
}

#[tokio::test]
async fn records_of_another_owner_are_never_touched() -> Result<(), SyncError> {
    let cluster = FakeCluster::new(true);
    // The sources want a different address and a new AAAA at a name another owner holds, and nothing at
    // another name it holds.
    let source = FakeSource::with(vec![
        a("taken.example.com", "10.0.0.9"),
        Endpoint::new("taken.example.com", RecordType::Aaaa, ["::1"]),
    ]);
    let registry = FakeRegistry::new(vec![
        owned(a("taken.example.com", "10.0.0.1"), "someone-else"),
        owned(a("theirs.example.com", "10.0.0.2"), "someone-else"),
    ]);
    let c = controller(&cluster, &source, &registry, ControllerConfig::default());

    let report = c.run_once().await?;
    assert!(report.changes.is_empty(), "{:?}", report.changes);
    // Both are left alone, one of them at a name the sources ask for (`extdns plan` says both).
    assert_eq!(report.not_owned, extdns_plan::NotOwned { records: 2, wanted: 1 });
    assert_eq!(registry.applies(), 0);
    assert_eq!(
        names(&registry.snapshot()),
        ["taken.example.com A 10.0.0.1", "theirs.example.com A 10.0.0.2"]
    );
    let text = c.metrics().encode();
    assert!(
        text.contains("registry_skipped_records_owner_mismatch_per_sync{record_type=\"A\",owner=\"default\",foreign_owner=\"someone-else\""),
        "{text}"
    );
    Ok(())
}

#[tokio::test]
async fn provider_error_is_returned_and_counted() {
    let cluster = FakeCluster::new(true);
    let source = FakeSource::with(vec![a("web.example.com", "10.0.0.1")]);
    let registry = FakeRegistry::failing(vec![], 1, |_| ProviderError::transient("connection refused"));
    let c = controller(&cluster, &source, &registry, ControllerConfig::default());

    let result = c.run_once().await;
    assert!(matches!(result, Err(SyncError::Registry(_))), "{result:?}");
    assert_eq!(sample(c.metrics(), "external_dns_registry_errors_total "), Some(1.0));
    assert_eq!(last_sync(&c), Some(0.0), "no sync has completed");
}

#[tokio::test]
async fn partial_failure_keeps_the_changes_that_landed() {
    let cluster = FakeCluster::new(true);
    let source = FakeSource::with(vec![
        a("good.example.com", "10.0.0.1"),
        a("bad.example.com", "10.0.0.2"),
    ]);
    let registry = FakeRegistry::failing(vec![], 1, |_| ProviderError::Partial {
        failures: vec![ChangeFailure::new(
            &a("bad.example.com", "10.0.0.2"),
            FailureKind::Refused,
            "REFUSED",
        )],
    });
    let c = controller(&cluster, &source, &registry, ControllerConfig::default());

    assert!(matches!(c.run_once().await, Err(SyncError::Registry(_))));
    assert_eq!(names(&registry.snapshot()), ["good.example.com A 10.0.0.1"]);
    // The next sync retries only what is still missing.
    let retry = c.run_once().await;
    assert!(
        retry
            .as_ref()
            .is_ok_and(|r| names(&four(&r.changes).create) == ["bad.example.com A 10.0.0.2"]),
        "{retry:?}"
    );
}

#[tokio::test]
async fn waits_for_informers_before_a_single_sync() -> Result<(), SyncError> {
    let (cluster, source, registry) = parts(false, vec![a("web.example.com", "10.0.0.1")]);
    let c = controller(&cluster, &source, &registry, ControllerConfig::default());
    let shutdown = CancellationToken::new();

    let timed_out = c.run_once_when_synced(Duration::from_millis(300), &shutdown).await;
    assert!(matches!(timed_out, Err(SyncError::SyncTimeout(_))), "{timed_out:?}");
    assert_eq!(registry.applies(), 0);

    let later = cluster.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        later.synced.store(true, Ordering::SeqCst);
    });
    let report = c.run_once_when_synced(Duration::from_secs(10), &shutdown).await?;
    assert!(report.applied);
    Ok(())
}

// ---- the loop, in paused (virtual) time ----

/// A full sync every `interval` seconds, changes ignored.
fn every(interval: u64) -> ControllerConfig {
    ControllerConfig {
        interval: Duration::from_secs(interval),
        ..ControllerConfig::default()
    }
}

/// `--events`: a full sync every `interval` seconds, and changes synced `min_event` seconds apart at most.
fn on_events(interval: u64, min_event: u64) -> ControllerConfig {
    ControllerConfig {
        events: true,
        min_event_sync_interval: Duration::from_secs(min_event),
        ..every(interval)
    }
}

/// The loop running in the background.
struct Running {
    stop: CancellationToken,
    handle: tokio::task::JoinHandle<Controller>,
}

impl Running {
    /// Stops the loop and waits for it to end; the controller, for its metrics.
    async fn stop(self) -> Result<Controller, tokio::task::JoinError> {
        self.stop.cancel();
        self.handle.await
    }

    /// Stops the loop, which must end cleanly: the end of a test that checked what it ran.
    async fn finish(self) -> Result<(), tokio::task::JoinError> {
        self.stop().await.map(drop)
    }
}

fn spawn_loop(c: Controller) -> Running {
    let stop = CancellationToken::new();
    let token = stop.clone();
    let handle = tokio::spawn(async move {
        c.run(token).await;
        c
    });
    Running { stop, handle }
}

async fn advance(d: Duration) {
    tokio::time::sleep(d).await;
}

#[tokio::test(start_paused = true)]
async fn loop_syncs_at_start_and_every_interval() -> Result<(), tokio::task::JoinError> {
    let (cluster, source, registry) = parts(true, vec![]);
    let running = spawn_loop(controller(&cluster, &source, &registry, every(60)));

    advance(Duration::from_millis(10)).await;
    assert_eq!(registry.reads(), 1);
    advance(Duration::from_secs(59)).await;
    assert_eq!(registry.reads(), 1);
    advance(Duration::from_secs(1)).await;
    assert_eq!(registry.reads(), 2);
    advance(Duration::from_secs(120)).await;
    assert_eq!(registry.reads(), 4);

    running.finish().await
}

/// A source that cannot follow changes object by object makes every event a full sync: the first one
/// runs at once, the ones after it wait until `--min-event-sync-interval` after it, and collapse into one.
#[tokio::test(start_paused = true)]
async fn events_needing_full_syncs_are_min_event_sync_interval_apart() -> Result<(), tokio::task::JoinError> {
    let (cluster, source, registry) = parts(true, vec![]);
    let running = spawn_loop(controller(&cluster, &source, &registry, on_events(60, 5)));

    advance(Duration::from_secs(10)).await;
    assert_eq!(registry.reads(), 1);
    cluster.touch();
    advance(Duration::from_millis(20)).await;
    assert_eq!(registry.reads(), 2, "the first change syncs at once");
    cluster.touch();
    advance(Duration::from_millis(20)).await;
    cluster.touch();
    advance(Duration::from_millis(4900)).await; // t = 14.94 s
    assert_eq!(
        registry.reads(),
        2,
        "a full sync sooner than --min-event-sync-interval after the last"
    );
    advance(Duration::from_millis(100)).await; // t = 15.04 s
    assert_eq!(registry.reads(), 3);
    advance(Duration::from_secs(10)).await;
    assert_eq!(
        registry.reads(),
        3,
        "the changes after the first made more than one sync"
    );

    running.finish().await
}

#[tokio::test(start_paused = true)]
/// The first sync writes; a change a second later waits until `--min-event-sync-interval` after that write.
async fn events_never_sync_sooner_than_min_event_sync_interval() -> Result<(), tokio::task::JoinError> {
    let (cluster, source, registry) = parts(true, vec![a("web.example.com", "10.0.0.1")]);
    let running = spawn_loop(controller(&cluster, &source, &registry, on_events(600, 30)));

    advance(Duration::from_secs(1)).await;
    cluster.touch();
    advance(Duration::from_secs(28)).await; // t = 29 s
    assert_eq!(registry.reads(), 1);
    advance(Duration::from_secs(2)).await; // t = 31 s
    assert_eq!(registry.reads(), 2);

    running.finish().await
}

#[tokio::test(start_paused = true)]
async fn changes_are_ignored_without_events() -> Result<(), tokio::task::JoinError> {
    let (cluster, source, registry) = parts(true, vec![]);
    let running = spawn_loop(controller(&cluster, &source, &registry, every(60)));

    advance(Duration::from_secs(1)).await;
    cluster.touch();
    advance(Duration::from_secs(30)).await;
    assert_eq!(registry.reads(), 1);

    running.finish().await
}

#[tokio::test(start_paused = true)]
async fn transient_provider_errors_are_retried_with_backoff_without_exiting() -> Result<(), tokio::task::JoinError> {
    let cluster = FakeCluster::new(true);
    let source = FakeSource::with(vec![a("web.example.com", "10.0.0.1")]);
    let registry = FakeRegistry::failing(vec![], 3, |_| ProviderError::transient("timeout"));
    let running = spawn_loop(controller(&cluster, &source, &registry, every(60)));

    // Retries after at most 1 s, 2 s, 4 s: all four attempts happen well before the next interval.
    advance(Duration::from_secs(8)).await;
    assert_eq!(registry.applies(), 4);
    assert_eq!(names(&registry.snapshot()), ["web.example.com A 10.0.0.1"]);
    assert!(!running.handle.is_finished(), "the loop exited on a transient error");

    let c = running.stop().await?;
    assert_eq!(
        sample(c.metrics(), "external_dns_controller_consecutive_soft_errors "),
        Some(0.0)
    );
    assert_eq!(sample(c.metrics(), "external_dns_registry_errors_total "), Some(3.0));
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn consecutive_failures_are_counted_until_a_sync_succeeds() -> Result<(), tokio::task::JoinError> {
    let cluster = FakeCluster::new(true);
    let source = FakeSource::with(vec![a("web.example.com", "10.0.0.1")]);
    let registry = FakeRegistry::failing(vec![], 100, |_| ProviderError::auth("bad TSIG key"));
    let running = spawn_loop(controller(&cluster, &source, &registry, every(60)));

    advance(Duration::from_millis(1100)).await;
    let c = running.stop().await?;
    let failures = sample(c.metrics(), "external_dns_controller_consecutive_soft_errors ");
    assert!(failures.is_some_and(|n| n >= 2.0), "{failures:?}");
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn loop_waits_for_informers_and_then_syncs() -> Result<(), tokio::task::JoinError> {
    let (cluster, source, registry) = parts(false, vec![a("web.example.com", "10.0.0.1")]);
    let running = spawn_loop(controller(&cluster, &source, &registry, every(60)));

    advance(Duration::from_secs(5)).await;
    assert_eq!(registry.reads(), 0);
    cluster.synced.store(true, Ordering::SeqCst);
    advance(Duration::from_millis(1100)).await;
    assert_eq!(registry.applies(), 1);

    running.finish().await
}

/// The first sync runs the moment the view is complete, even with `--events` and changes during the list:
/// no debounce and no `--min-event-sync-interval` for a sync that never ran.
#[tokio::test(start_paused = true)]
async fn the_first_sync_runs_when_the_informers_are_ready() -> Result<(), tokio::task::JoinError> {
    let (cluster, source, registry) = parts(false, vec![a("web.example.com", "10.0.0.1")]);
    let running = spawn_loop(controller(&cluster, &source, &registry, on_events(60, 5)));

    advance(Duration::from_millis(2500)).await;
    cluster.touch();
    advance(Duration::from_millis(10)).await;
    assert_eq!(registry.reads(), 0, "nothing is read before the view is complete");
    cluster.synced.store(true, Ordering::SeqCst);
    cluster.touch();
    advance(Duration::from_millis(5)).await;
    assert_eq!(registry.applies(), 1, "the first sync follows the list at once");

    running.finish().await
}

#[tokio::test(start_paused = true)]
async fn a_source_failure_in_the_loop_deletes_nothing() -> Result<(), tokio::task::JoinError> {
    let (cluster, source, registry) = parts(true, vec![a("web.example.com", "10.0.0.1")]);
    let running = spawn_loop(controller(&cluster, &source, &registry, every(60)));

    advance(Duration::from_secs(1)).await;
    assert_eq!(registry.applies(), 1);
    // The source now fails: what it would have returned (nothing) must not become deletions.
    source.set(vec![]);
    source.fail.store(true, Ordering::SeqCst);
    advance(Duration::from_secs(300)).await;
    assert_eq!(registry.applies(), 1);
    assert_eq!(names(&registry.snapshot()), ["web.example.com A 10.0.0.1"]);

    running.finish().await
}

#[tokio::test(start_paused = true)]
async fn shutdown_stops_the_loop() {
    let (cluster, source, registry) = parts(true, vec![]);
    let running = spawn_loop(controller(&cluster, &source, &registry, ControllerConfig::default()));
    advance(Duration::from_secs(1)).await;
    let joined = tokio::time::timeout(Duration::from_secs(1), running.stop()).await;
    assert!(matches!(joined, Ok(Ok(_))));
}

#[test]
fn retry_delay_doubles_from_one_second_up_to_the_interval() {
    let minute = Duration::from_secs(60);
    for _ in 0..20 {
        let first = crate::controller::retry_delay(1, minute);
        assert!(
            first >= Duration::from_millis(500) && first <= Duration::from_secs(1),
            "{first:?}"
        );
        let fourth = crate::controller::retry_delay(4, minute);
        assert!(
            fourth >= Duration::from_secs(4) && fourth <= Duration::from_secs(8),
            "{fourth:?}"
        );
        let late = crate::controller::retry_delay(40, minute);
        assert!(late >= Duration::from_secs(30) && late <= minute, "{late:?}");
    }
}

/// A sync's changes in external-dns's four-list shape, which these assertions read best in.
fn four(changes: &[Change]) -> Changes {
    changes.iter().cloned().collect()
}

// ---- records of objects the sources could not evaluate ----

fn of(e: Endpoint, resource: &str) -> Endpoint {
    e.with_label(label::RESOURCE, resource)
}

#[tokio::test]
async fn records_of_an_object_that_failed_are_kept_while_other_changes_land() -> Result<(), SyncError> {
    let cluster = FakeCluster::new(true);
    let registry = FakeRegistry::new(vec![
        owned(of(a("web.example.com", "10.0.0.1"), "service/default/web"), OWNER),
        owned(of(a("api.example.com", "10.0.0.2"), "service/default/api"), OWNER),
    ]);
    // `web` fails this sync (it asks for nothing); `api` moves to a new address; `new` appears.
    let source = FakeSource::with(vec![
        of(a("api.example.com", "10.0.0.3"), "service/default/api"),
        of(a("new.example.com", "10.0.0.4"), "service/default/new"),
    ]);
    if let Ok(mut f) = source.failed.lock() {
        f.insert("service/default/web".to_string());
    }
    let c = controller(&cluster, &source, &registry, ControllerConfig::default());

    let report = c.run_once().await?;
    assert!(report.applied);
    assert_eq!(report.kept.len(), 1, "{report:?}");
    assert!(matches!(&report.kept[0], Change::Delete(e) if e.dns_name == "web.example.com"));
    assert_eq!(
        names(&registry.snapshot()),
        [
            "api.example.com A 10.0.0.3",
            "new.example.com A 10.0.0.4",
            "web.example.com A 10.0.0.1"
        ]
    );
    assert_eq!(
        sample(c.metrics(), "extdns_source_objects_failed{source=\"fake\"} "),
        Some(1.0)
    );

    // Once it evaluates again (here: it is gone from the cluster and no longer failed), its record goes.
    if let Ok(mut f) = source.failed.lock() {
        f.clear();
    }
    let report = c.run_once().await?;
    assert!(report.kept.is_empty());
    assert_eq!(
        names(&registry.snapshot()),
        ["api.example.com A 10.0.0.3", "new.example.com A 10.0.0.4"]
    );
    assert_eq!(
        sample(c.metrics(), "extdns_source_objects_failed{source=\"fake\"} "),
        Some(0.0)
    );
    Ok(())
}

#[tokio::test]
async fn kept_records_do_not_count_towards_the_deletion_guard() -> Result<(), SyncError> {
    let cluster = FakeCluster::new(true);
    let records: Vec<Endpoint> = (0..20)
        .map(|i| {
            owned(
                of(
                    a(&format!("s{i}.example.com"), "10.0.0.1"),
                    &format!("service/default/s{i}"),
                ),
                OWNER,
            )
        })
        .collect();
    let registry = FakeRegistry::new(records);
    // Every object fails (a template broken for all of them): nothing is deleted and the guard is not needed.
    let source = FakeSource::with(vec![]);
    if let Ok(mut f) = source.failed.lock() {
        f.extend((0..20).map(|i| format!("service/default/s{i}")));
    }
    let c = controller(&cluster, &source, &registry, ControllerConfig::default());
    let report = c.run_once().await?;
    assert_eq!(report.kept.len(), 20);
    assert!(report.held_back.is_empty());
    assert!(!report.applied);
    assert_eq!(registry.snapshot().len(), 20);
    Ok(())
}

/// A source that takes `delay` to answer, so leadership can run out while a sync plans.
struct SlowSource {
    delay: Duration,
    endpoints: Vec<Endpoint>,
}

#[async_trait]
impl DesiredEndpoints for SlowSource {
    async fn desired(&self, _: &ClusterStore, _: Option<&mut DesiredIndex>) -> Result<PipelineOutput, SourceError> {
        tokio::time::sleep(self.delay).await;
        Ok(PipelineOutput {
            endpoints: self.endpoints.clone(),
            ..PipelineOutput::default()
        })
    }
}

fn leading_for(d: Duration) -> (watch::Sender<Option<tokio::time::Instant>>, Leadership) {
    let (tx, rx) = watch::channel(Some(tokio::time::Instant::now() + d));
    (tx, Leadership::from_watch(rx))
}

#[tokio::test]
async fn a_follower_neither_reads_nor_writes() {
    let (cluster, source, registry) = parts(true, vec![a("web.example.com", "10.0.0.1")]);
    let (_tx, leadership) = leading_for(Duration::ZERO);
    let c = controller(&cluster, &source, &registry, ControllerConfig::default()).with_leadership(leadership);
    let result = c.run_once().await;
    assert!(matches!(result, Err(SyncError::NotLeader)), "{result:?}");
    assert_eq!(registry.reads(), 0);
    assert_eq!(registry.applies(), 0);
    assert_eq!(source.calls.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn leadership_lost_while_planning_sends_nothing() {
    let cluster: Arc<dyn Cluster> = FakeCluster::new(true);
    let registry = FakeRegistry::new(vec![]);
    let source: Arc<dyn DesiredEndpoints> = Arc::new(SlowSource {
        delay: Duration::from_secs(5),
        endpoints: vec![a("web.example.com", "10.0.0.1")],
    });
    let (_tx, leadership) = leading_for(Duration::from_secs(2));
    let mut config = ControllerConfig::default();
    config.plan.owner_id = OWNER.to_string();
    let registry_dyn: Arc<dyn Registry> = registry.clone();
    let c = Controller::new(
        cluster,
        source,
        registry_dyn,
        config,
        Arc::new(Metrics::new("test", "test")),
    )
    .with_leadership(leadership);
    let result = c.run_once().await;
    assert!(matches!(result, Err(SyncError::NotLeader)), "{result:?}");
    assert_eq!(registry.reads(), 1, "it led when the sync started");
    assert_eq!(registry.applies(), 0, "but not when the write was due");
}

#[tokio::test(start_paused = true)]
async fn the_loop_syncs_only_while_leading_and_at_once_on_takeover() -> Result<(), tokio::task::JoinError> {
    let (cluster, source, registry) = parts(true, vec![]);
    let (tx, rx) = watch::channel(None);
    let config = every(60);
    let c = controller(&cluster, &source, &registry, config).with_leadership(Leadership::from_watch(rx));
    let metrics = c.metrics().clone();
    let running = spawn_loop(c);

    advance(Duration::from_secs(120)).await;
    assert_eq!(registry.reads(), 0, "a follower does not sync");
    assert_eq!(sample(&metrics, "extdns_leader "), Some(0.0));

    // Takeover: a sync at once, not an interval later.
    tx.send_replace(Some(tokio::time::Instant::now() + Duration::from_secs(10)));
    advance(Duration::from_millis(10)).await;
    assert_eq!(registry.reads(), 1);
    assert_eq!(sample(&metrics, "extdns_leader "), Some(1.0));

    // Never renewed: at the deadline the loop stops syncing, without any news from the election.
    advance(Duration::from_secs(10)).await;
    assert_eq!(sample(&metrics, "extdns_leader "), Some(0.0));
    advance(Duration::from_secs(120)).await;
    assert_eq!(registry.reads(), 1);

    running.finish().await
}

#[tokio::test(start_paused = true)]
async fn every_replica_of_a_local_provider_syncs_and_only_the_leader_reports() -> Result<(), SyncError> {
    let (cluster, source, registry) = parts(true, vec![events::of_web(a("web.example.com", "10.0.0.1"))]);
    let (tx, rx) = watch::channel(None);
    let sink = Arc::new(events::KeptEvents::default());
    let dyn_sink: Arc<dyn crate::EventSink> = sink.clone();
    let c = controller(&cluster, &source, &registry, ControllerConfig::default())
        .with_leadership(Leadership::from_watch(rx))
        .with_local_provider()
        .with_events(crate::EventsConfig::new(true, true, true), dyn_sink);
    assert!(!c.metrics().is_ready());
    let report = c.run_once().await?;
    assert!(report.applied, "a follower writes its own provider");
    assert_eq!(registry.applies(), 1);
    assert!(sink.take().is_empty(), "but emits no Events: the leader does");
    assert!(c.metrics().is_ready(), "ready after its first full sync");

    tx.send_replace(Some(tokio::time::Instant::now() + Duration::from_secs(10)));
    source.set(vec![events::of_web(a("web.example.com", "10.0.0.2"))]);
    c.run_once().await?;
    assert_eq!(sink.take().len(), 1, "the leader reports what it wrote");
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn the_loop_of_a_local_providers_follower_syncs_on_schedule() -> Result<(), tokio::task::JoinError> {
    let (cluster, source, registry) = parts(true, vec![a("web.example.com", "10.0.0.1")]);
    let (_tx, rx) = watch::channel(None);
    let c = controller(&cluster, &source, &registry, every(60))
        .with_leadership(Leadership::from_watch(rx))
        .with_local_provider();
    let metrics = c.metrics().clone();
    let running = spawn_loop(c);
    advance(Duration::from_millis(10)).await;
    assert_eq!(
        (registry.reads(), registry.applies()),
        (1, 1),
        "a follower syncs at once"
    );
    assert_eq!(sample(&metrics, "extdns_leader "), Some(0.0), "and says it follows");
    assert!(metrics.is_ready());
    advance(Duration::from_secs(60)).await;
    assert_eq!(registry.reads(), 2, "and every interval");
    running.finish().await
}

#[tokio::test(start_paused = true)]
async fn readiness_waits_for_a_full_sync_or_a_followers_synced_view() -> Result<(), tokio::task::JoinError> {
    // A leader: not ready while the view is incomplete, ready after the first full sync.
    let (cluster, source, registry) = parts(false, vec![]);
    let c = controller(&cluster, &source, &registry, every(60));
    let (metrics, running) = run_until_the_view_completes(&cluster, c).await;
    assert_eq!(registry.reads(), 1);
    assert!(metrics.is_ready());
    running.finish().await?;

    // A follower of a shared provider never syncs: ready once its informers have listed.
    let (cluster, source, registry) = parts(false, vec![]);
    let (_tx, rx) = watch::channel(None);
    let c = controller(&cluster, &source, &registry, every(60)).with_leadership(Leadership::from_watch(rx));
    let (metrics, running) = run_until_the_view_completes(&cluster, c).await;
    assert!(metrics.is_ready());
    assert_eq!(registry.reads(), 0);
    running.finish().await
}

/// Runs `c` on `cluster`, whose view stays incomplete for 5 s (`c` must not be ready meanwhile) and then
/// completes; its metrics, to read what it did once the view was complete, and the running loop.
async fn run_until_the_view_completes(cluster: &FakeCluster, c: Controller) -> (Arc<Metrics>, Running) {
    let metrics = c.metrics().clone();
    let running = spawn_loop(c);
    advance(Duration::from_secs(5)).await;
    assert!(!metrics.is_ready(), "ready before the view was complete");
    cluster.synced.store(true, Ordering::SeqCst);
    cluster.touch();
    advance(Duration::from_millis(10)).await;
    (metrics, running)
}

#[tokio::test]
async fn without_an_election_the_leader_metric_is_one() {
    let metrics = Metrics::new("test", "test");
    assert_eq!(sample(&metrics, "extdns_leader "), Some(1.0));
    metrics.set_leader(false);
    assert_eq!(sample(&metrics, "extdns_leader "), Some(0.0));
}

mod events;

// ------------------------------------------------------------------------- the cache of provider records

fn cached_for(interval: Duration) -> ControllerConfig {
    ControllerConfig {
        records_cache_interval: interval,
        ..ControllerConfig::default()
    }
}

#[tokio::test(start_paused = true)]
async fn full_syncs_plan_from_the_records_read_within_the_cache_interval() -> Result<(), SyncError> {
    let cluster = FakeCluster::new(true);
    let source = FakeSource::with(vec![a("web.example.com", "10.0.0.1")]);
    let registry = FakeRegistry::new(vec![owned(a("web.example.com", "10.0.0.1"), OWNER)]);
    let c = controller(&cluster, &source, &registry, cached_for(Duration::from_secs(60)));
    let mut state = crate::SyncState::default();
    assert!(c.sync(&mut state, true).await?.changes.is_empty());
    // A record extdns owns appears behind its back: the cached records do not know it yet.
    if let Ok(mut records) = registry.records.lock() {
        records.push(owned(a("stray.example.com", "10.0.0.9"), OWNER));
    }
    assert!(
        c.sync(&mut state, true).await?.changes.is_empty(),
        "planned from the cache"
    );
    assert_eq!(registry.reads(), 1);

    // The interval is jittered by a tenth either way: still cached before 54 s, read again after 66 s.
    tokio::time::advance(Duration::from_secs(53)).await;
    assert!(c.sync(&mut state, true).await?.changes.is_empty(), "still cached");
    assert_eq!(registry.reads(), 1);
    tokio::time::advance(Duration::from_secs(14)).await;
    let report = c.sync(&mut state, true).await?;
    assert_eq!(registry.reads(), 2, "read again once the interval is over");
    let deleted: Vec<Endpoint> = report
        .changes
        .iter()
        .filter(|c| matches!(c, Change::Delete(_)))
        .map(|c| c.endpoint().clone())
        .collect();
    assert_eq!(names(&deleted), vec!["stray.example.com A 10.0.0.9"]);
    Ok(())
}

#[tokio::test]
async fn without_a_cache_interval_and_after_a_failed_write_the_records_are_read_again() {
    let cluster = FakeCluster::new(true);
    let source = FakeSource::with(vec![a("web.example.com", "10.0.0.1")]);
    let registry = FakeRegistry::new(vec![owned(a("web.example.com", "10.0.0.1"), OWNER)]);
    let c = controller(&cluster, &source, &registry, cached_for(Duration::ZERO));
    let mut state = crate::SyncState::default();
    for _ in 0..2 {
        assert!(c.sync(&mut state, true).await.is_ok());
    }
    assert_eq!(registry.reads(), 2);

    let registry = FakeRegistry::failing(vec![], 1, |_| ProviderError::transient("timeout"));
    let c = controller(&cluster, &source, &registry, cached_for(Duration::from_secs(3600)));
    let mut state = crate::SyncState::default();
    assert!(c.sync(&mut state, true).await.is_err());
    assert!(c.sync(&mut state, true).await.is_ok());
    assert_eq!(registry.reads(), 2, "a failed write drops what was read");
}

/// Records what the observer was told: `Ok(owned)` or the error's text.
#[derive(Default)]
struct Observed(Mutex<Vec<Result<Option<usize>, String>>>);

#[async_trait]
impl crate::SyncObserver for Observed {
    async fn observe(&self, sync: crate::ProviderSync<'_>) {
        let seen = sync.result.map(|r| r.owned).map_err(ToString::to_string);
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(seen);
    }
}

#[tokio::test]
async fn the_sync_observer_hears_every_attempt_with_the_records_owned_after_it() -> Result<(), SyncError> {
    let (cluster, source, registry) = parts(
        true,
        vec![a("web.example.com", "10.0.0.1"), a("db.example.com", "10.0.0.2")],
    );
    let observed = Arc::new(Observed::default());
    let c = controller(&cluster, &source, &registry, ControllerConfig::default()).with_sync_observer(observed.clone());
    c.run_once().await?;
    source.set(vec![a("web.example.com", "10.0.0.1")]);
    c.run_once().await?;
    cluster.synced.store(false, Ordering::SeqCst);
    assert!(c.run_once().await.is_err());
    let seen = observed
        .0
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    assert_eq!(seen[..2], [Ok(Some(2)), Ok(Some(1))], "two created, then one deleted");
    assert!(
        matches!(&seen[2], Err(e) if e.contains("not every informer has synced")),
        "{seen:?}"
    );
    Ok(())
}
