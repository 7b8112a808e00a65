//! Incremental reconcile with the real parts short of servers: the live cluster fed watch events, the
//! service source, the TXT registry and the in-memory provider behind a counter. A change to one object
//! writes exactly the records that object (or the object it feeds) publishes, reads no zone, and a full
//! sync still repairs what was changed behind extdns's back.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use extdns_controller::{Controller, ControllerConfig, SyncReport, SyncState};
use extdns_endpoint::{Change, RecordType};
use extdns_informer::{ChangeSet, Cluster, ClusterStore, LiveCluster, LiveOptions};
use extdns_provider::{InMemoryProvider, Provider, ReadState, Unit};
use extdns_source::Source;
use extdns_source::resolver::StaticResolver;
use extdns_source_service::{ServiceSource, ServiceSourceConfig};
use kube::runtime::watcher::Event;

use extdns_test_support::kube_objects::{headless_service, lb_service, listed, node, node_port_service, pod, slice};

use extdns_test_support::kube_objects::ZONE;

mod common;
use common::Recorder;

/// Each written record as `action name type`.
fn each_record(units: &[Unit<'_>]) -> Vec<String> {
    units
        .iter()
        .map(|u| {
            let e = u.change.endpoint();
            format!("{} {} {}", u.change.action(), e.dns_name, e.record_type)
        })
        .collect()
}

/// The live cluster, which the test can make look unsynced (as it is while a new selector's Pods are listed).
struct Holdable {
    live: Arc<LiveCluster>,
    unsynced: AtomicBool,
}

impl Cluster for Holdable {
    fn store(&self) -> Arc<ClusterStore> {
        self.live.store()
    }
    fn synced(&self) -> bool {
        !self.unsynced.load(Ordering::SeqCst) && self.live.synced()
    }
    fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.live.changes()
    }
    fn take_changes(&self) -> ChangeSet {
        self.live.take_changes()
    }
}

struct Setup {
    cluster: Arc<LiveCluster>,
    view: Arc<Holdable>,
    provider: Arc<Recorder<Vec<String>>>,
    controller: Controller,
    state: SyncState,
}

impl Setup {
    fn new() -> Result<Setup, Box<dyn std::error::Error>> {
        Self::with(|_| {})
    }

    /// A setup whose controller configuration `configure` adjusts.
    fn with(configure: impl FnOnce(&mut ControllerConfig)) -> Result<Setup, Box<dyn std::error::Error>> {
        let source = ServiceSource::new(ServiceSourceConfig::default(), Arc::new(StaticResolver::new()));
        let kinds = source.watched_kinds();
        // As the binary watches: only the Pods a headless or `Local` NodePort Service selects are kept.
        let mut live = LiveOptions::default();
        live.pods_on_demand = true;
        let cluster = Arc::new(LiveCluster::detached(&kinds, live));
        listed(
            &cluster,
            vec![
                lb_service("a", "192.0.2.1"),
                lb_service("b", "192.0.2.2"),
                headless_service("headless"),
                node_port_service("np"),
            ],
        );
        listed(&cluster, vec![slice("headless", &["10.1.0.1", "10.1.0.2"])]);
        listed(
            &cluster,
            vec![pod("headless-0", "10.1.0.1"), pod("headless-1", "10.1.0.2")],
        );
        listed(&cluster, vec![node("n1", "198.51.100.1")]);
        for k in kinds {
            assert!(!cluster.unsynced_kinds().contains(&k));
        }

        let provider = Arc::new(Recorder::new(
            InMemoryProvider::new(vec![ZONE.to_string()]),
            Duration::ZERO,
            each_record,
        ));
        let mut config = ControllerConfig {
            events: true,
            ..ControllerConfig::default()
        };
        configure(&mut config);
        let view = Arc::new(Holdable {
            live: cluster.clone(),
            unsynced: AtomicBool::new(false),
        });
        let controller = common::controller(view.clone(), source, provider.clone(), config)?;
        Ok(Setup {
            cluster,
            view,
            provider,
            controller,
            state: SyncState::default(),
        })
    }

    /// A setup after its first (full) sync, whose writes are taken; and that sync's report.
    async fn synced() -> Result<(Setup, SyncReport), Box<dyn std::error::Error>> {
        let mut s = Setup::new()?;
        let first = s.sync(true).await;
        s.take_writes();
        Ok((s, first))
    }

    async fn sync(&mut self, full: bool) -> SyncReport {
        match self.controller.sync(&mut self.state, full).await {
            Ok(r) => r,
            Err(e) => panic!("sync failed: {e}"),
        }
    }

    /// The records written since the last take, sorted.
    fn take_writes(&self) -> Vec<String> {
        let mut w = self.provider.take_writes().concat();
        w.sort();
        w
    }

    /// An incremental sync: the records it wrote, having read no zone.
    async fn incremental(&mut self) -> Vec<String> {
        self.incremental_report().await;
        self.take_writes()
    }

    /// An incremental sync, which must read no zone.
    async fn incremental_report(&mut self) -> SyncReport {
        let reads = self.provider.reads();
        let report = self.sync(false).await;
        assert!(!report.full, "a change to single objects is handled incrementally");
        assert_eq!(self.provider.reads(), reads, "an incremental sync reads no zone");
        report
    }

    fn apply(&self, event: Event<k8s_openapi::api::core::v1::Service>) {
        self.cluster.apply_event(event);
    }

    /// `events`, then an incremental sync: how many deletes it held back and how many changes it applied.
    async fn step(&mut self, events: Vec<Event<k8s_openapi::api::core::v1::Service>>) -> (usize, usize) {
        for e in events {
            self.apply(e);
        }
        let report = self.incremental_report().await;
        (report.held_back.len(), report.changes.len())
    }

    async fn answer(&self, name: &str, record_type: RecordType) -> Vec<String> {
        let records = match self.provider.inner.records().await {
            Ok(r) => r.endpoints,
            Err(e) => panic!("read: {e}"),
        };
        let mut t: Vec<String> = records
            .iter()
            .filter(|e| e.dns_name == name && e.record_type == record_type)
            .flat_map(|e| e.targets.iter().map(|t| t.to_string()))
            .collect();
        t.sort();
        t
    }
}

#[tokio::test]
async fn each_change_writes_exactly_the_records_of_the_objects_it_affects() -> Result<(), Box<dyn std::error::Error>> {
    let mut s = Setup::new()?;
    let first = s.sync(true).await;
    assert!(first.full && first.applied);
    let created = s.take_writes();
    for name in ["a", "b", "headless", "np"] {
        assert!(
            created.contains(&format!("create {name}.{ZONE} A")),
            "{name} is created by the first sync: {created:?}"
        );
    }
    assert_eq!(s.answer(&format!("np.{ZONE}"), RecordType::A).await, ["198.51.100.1"]);

    // A Service: only its own record.
    s.cluster.apply_event(Event::Apply(lb_service("a", "192.0.2.11")));
    assert_eq!(s.incremental().await, [format!("update a.{ZONE} A")]);
    assert_eq!(s.answer(&format!("a.{ZONE}"), RecordType::A).await, ["192.0.2.11"]);

    // An EndpointSlice: the headless Service it belongs to.
    s.cluster
        .apply_event(Event::Apply(slice("headless", &["10.1.0.1", "10.1.0.3"])));
    assert_eq!(s.incremental().await, [format!("update headless.{ZONE} A")]);
    assert_eq!(
        s.answer(&format!("headless.{ZONE}"), RecordType::A).await,
        ["10.1.0.1", "10.1.0.3"]
    );

    // A Node: the NodePort Service it serves.
    s.cluster.apply_event(Event::Apply(node("n1", "198.51.100.9")));
    let written = s.incremental().await;
    assert!(written.contains(&format!("update np.{ZONE} A")), "{written:?}");
    assert!(
        written.iter().all(|w| w.contains(&format!(" np.{ZONE} "))
            || w.contains(&format!("_np._tcp.{ZONE}"))
            || w.contains("._tcp.np.")),
        "only np's records: {written:?}"
    );
    assert_eq!(s.answer(&format!("np.{ZONE}"), RecordType::A).await, ["198.51.100.9"]);

    // A Pod whose address no record shows: nothing to write.
    s.cluster.apply_event(Event::Apply(pod("unrelated", "10.9.9.9")));
    assert_eq!(s.incremental().await, Vec::<String>::new());

    // A deleted Service: its record, nothing else.
    s.cluster.apply_event(Event::Delete(lb_service("b", "192.0.2.2")));
    assert_eq!(s.incremental().await, [format!("delete b.{ZONE} A")]);
    assert!(s.answer(&format!("b.{ZONE}"), RecordType::A).await.is_empty());

    // Nothing changed: an incremental sync is free.
    assert_eq!(s.incremental().await, Vec::<String>::new());
    Ok(())
}

#[tokio::test]
async fn a_record_changed_by_hand_is_repaired_by_the_next_full_sync_only() -> Result<(), Box<dyn std::error::Error>> {
    let (mut s, _) = Setup::synced().await?;

    // Someone edits a's record in the zone directly.
    let name = format!("a.{ZONE}");
    let records = s.provider.inner.records().await?.endpoints;
    let Some(current) = records
        .iter()
        .find(|e| e.dns_name == name && e.record_type == RecordType::A)
        .cloned()
    else {
        panic!("a's record exists");
    };
    let mut edited = current.clone();
    edited.targets = ["203.0.113.66"].into_iter().collect();
    let edit = Change::update(current, edited);
    s.provider
        .inner
        .apply(&ReadState::default(), &[Unit::new(&edit)])
        .await?;

    // An unrelated change is planned against the cache, which does not know of the edit.
    s.cluster.apply_event(Event::Apply(lb_service("b", "192.0.2.22")));
    assert_eq!(s.incremental().await, [format!("update b.{ZONE} A")]);
    assert_eq!(s.answer(&name, RecordType::A).await, ["203.0.113.66"]);

    // The periodic full sync reads the zone and puts the record back.
    let report = s.sync(true).await;
    assert!(report.full);
    assert_eq!(s.take_writes(), [format!("update {name} A")]);
    assert_eq!(s.answer(&name, RecordType::A).await, ["192.0.2.1"]);
    Ok(())
}

#[tokio::test]
async fn a_burst_of_changes_is_one_write() -> Result<(), Box<dyn std::error::Error>> {
    let (mut s, _) = Setup::synced().await?;
    for i in 0..50 {
        s.cluster.apply_event(Event::Apply(lb_service(
            &format!("burst{i}"),
            &format!("192.0.2.{}", 100 + i),
        )));
    }
    s.cluster.apply_event(Event::Apply(lb_service("a", "192.0.2.99")));
    let written = s.incremental().await;
    assert_eq!(written.len(), 51, "{written:?}");
    assert_eq!(
        s.answer(&format!("burst49.{ZONE}"), RecordType::A).await,
        ["192.0.2.149"]
    );
    Ok(())
}

#[tokio::test]
async fn a_moment_unsynced_keeps_the_cache_and_the_changes() -> Result<(), Box<dyn std::error::Error>> {
    let (mut s, first) = Setup::synced().await?;
    assert!(first.full);
    s.cluster.apply_event(Event::Apply(lb_service("a", "192.0.2.21")));
    s.view.unsynced.store(true, Ordering::SeqCst);
    let held = s.controller.sync(&mut s.state, false).await;
    assert!(held.is_err(), "nothing is planned from an unsynced view: {held:?}");
    assert!(!s.state.needs_full(), "nothing was read or changed, so the cache holds");
    s.view.unsynced.store(false, Ordering::SeqCst);
    assert_eq!(s.incremental().await, [format!("update a.{ZONE} A")]);
    Ok(())
}

/// A full sync planned from the cached records (`--txt-cache-interval`) finds nothing to do after each
/// incremental sync, and neither does one that reads the zone: the records found by name and folded in
/// change by change are the ones a read gives, so incremental and full syncs plan alike.
#[tokio::test]
async fn after_any_sequence_of_changes_a_full_sync_finds_nothing_to_do() -> Result<(), Box<dyn std::error::Error>> {
    let mut s = Setup::with(|c| c.records_cache_interval = std::time::Duration::from_secs(3600))?;
    assert!(s.sync(true).await.applied);
    s.take_writes();
    let svc = |i: usize, ip: u8| lb_service(&format!("s{i}"), &format!("192.0.2.{ip}"));
    let steps: Vec<Vec<Event<k8s_openapi::api::core::v1::Service>>> = vec![
        (0..12).map(|i| Event::Apply(svc(i, 10))).collect(),
        vec![
            Event::Apply(svc(3, 11)),
            Event::Apply(svc(3, 12)),
            Event::Delete(svc(4, 10)),
        ],
        vec![
            Event::Apply(lb_service("a", "192.0.2.100")),
            Event::Delete(lb_service("b", "192.0.2.2")),
        ],
        (0..12).step_by(2).map(|i| Event::Delete(svc(i, 10))).collect(),
        vec![
            Event::Apply(svc(4, 13)),
            Event::Apply(svc(0, 14)),
            Event::Apply(lb_service("b", "192.0.2.2")),
        ],
        (1..12).step_by(2).map(|i| Event::Apply(svc(i, 15))).collect(),
    ];
    for (n, step) in steps.into_iter().enumerate() {
        for e in step {
            s.apply(e);
        }
        assert!(!s.incremental().await.is_empty(), "step {n} writes");
        let reads = s.provider.reads();
        let full = s.sync(true).await;
        assert_eq!(s.provider.reads(), reads, "planned from the cache");
        assert!(full.full && full.changes.is_empty(), "step {n}: {:?}", full.changes);
        assert_eq!(s.take_writes(), Vec::<String>::new());
    }
    assert_eq!(s.answer(&format!("s3.{ZONE}"), RecordType::A).await, ["192.0.2.15"]);
    assert!(s.answer(&format!("s2.{ZONE}"), RecordType::A).await.is_empty());
    assert_eq!(s.answer(&format!("s0.{ZONE}"), RecordType::A).await, ["192.0.2.14"]);

    // And against a fresh read of the zone.
    s.state = SyncState::default();
    let fresh = s.sync(true).await;
    assert!(fresh.changes.is_empty(), "{:?}", fresh.changes);
    Ok(())
}

/// The deletion guard weighs an incremental sync's deletes against every record extdns owns in the zone,
/// counted as the writes folded in left them: a mass delete is held back, a delete that is a small share
/// of a zone that grew goes through, and one that is a large share of a zone that shrank is held again.
#[tokio::test]
async fn the_deletion_guard_holds_back_a_mass_delete_in_an_incremental_sync() -> Result<(), Box<dyn std::error::Error>>
{
    let mut s = Setup::new()?;
    s.sync(true).await;
    s.take_writes();
    let svc = |prefix: &str, i: usize| lb_service(&format!("{prefix}{i}"), "192.0.2.50");
    let created: Vec<_> = (0..20).map(|i| Event::Apply(svc("s", i))).collect();
    assert_eq!(s.step(created).await, (0, 20));
    s.take_writes();

    // 16 of the 24 records extdns owns (a, b, headless, np and s0..s19): held back, still answering.
    assert_eq!(
        s.step((0..16).map(|i| Event::Delete(svc("s", i))).collect()).await,
        (16, 0)
    );
    assert_eq!(s.take_writes(), Vec::<String>::new());
    assert_eq!(s.answer(&format!("s0.{ZONE}"), RecordType::A).await, ["192.0.2.50"]);

    // 40 more: 20 deletes of 64 owned records pass (of the 24 counted before the creates they would not).
    assert_eq!(
        s.step((0..40).map(|i| Event::Apply(svc("n", i))).collect()).await,
        (0, 40)
    );
    assert_eq!(
        s.step((0..20).map(|i| Event::Delete(svc("n", i))).collect()).await,
        (0, 20)
    );
    assert!(s.answer(&format!("n0.{ZONE}"), RecordType::A).await.is_empty());

    // 44 owned now: 25 deletes are held back (of the 64 counted before the deletes they would pass).
    let mut gone: Vec<_> = (20..40).map(|i| Event::Delete(svc("n", i))).collect();
    gone.extend((16..20).map(|i| Event::Delete(svc("s", i))));
    gone.push(Event::Delete(lb_service("a", "192.0.2.1")));
    assert_eq!(s.step(gone).await, (25, 0));
    assert_eq!(s.answer(&format!("n39.{ZONE}"), RecordType::A).await, ["192.0.2.50"]);
    Ok(())
}

/// The status writer holds its writes from a change until a sync says it is done with it; a sync whose
/// changes publish nothing (or that finds no change) says so too, or every such change would hold the
/// writes for the whole of the hold's limit.
#[tokio::test]
async fn a_sync_with_nothing_to_fold_still_tells_it_is_done() -> Result<(), Box<dyn std::error::Error>> {
    let (mut s, _) = Setup::synced().await?;
    let mut folds = s.controller.metrics().names().folds();
    folds.mark_unchanged();
    s.cluster.apply_event(Event::Apply(pod("unrelated", "10.9.9.9")));
    assert_eq!(s.incremental().await, Vec::<String>::new());
    assert!(folds.has_changed().unwrap_or(false), "a change that publishes nothing");
    folds.mark_unchanged();
    assert_eq!(s.incremental().await, Vec::<String>::new());
    assert!(folds.has_changed().unwrap_or(false), "no change at all");
    Ok(())
}
