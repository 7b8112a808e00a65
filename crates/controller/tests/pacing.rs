//! The loop's pacing with `--events`, in paused time, with the real parts short of servers: the live view
//! fed watch events, the service source, the TXT registry and the in-memory provider (with its write rate,
//! as `--provider-write-rate` sets it) behind a recorder. A change is written as soon as it is evaluated;
//! changes arriving while a write is in flight join the next write; an explicit
//! `--min-event-sync-interval` spaces incremental writes; and the provider's limit holds whatever the rate
//! of changes.

use std::sync::Arc;
use std::time::Duration;

use extdns_controller::{CancellationToken, ControllerConfig};
use extdns_endpoint::RecordType;
use extdns_informer::{LiveCluster, LiveOptions};
use extdns_provider::pace::Rate;
use extdns_provider::{InMemoryProvider, Provider, Unit};
use extdns_source::Source;
use extdns_source::resolver::StaticResolver;
use extdns_source_service::{ServiceSource, ServiceSourceConfig};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::runtime::watcher::Event;
use tokio::time::{Instant, sleep};

use extdns_test_support::kube_objects::{ZONE, lb_service, listed};

/// One apply call: when it started, and the A records it carried.
type Write = (Instant, Vec<String>);

mod common;
use common::Recorder;

/// An apply call as its start and the A records it carried.
fn timed(units: &[Unit<'_>]) -> Write {
    let mut names: Vec<String> = units
        .iter()
        .map(|u| u.change.endpoint())
        .filter(|e| e.record_type == RecordType::A)
        .map(|e| e.dns_name.trim_end_matches(&format!(".{ZONE}")).to_string())
        .collect();
    names.sort();
    (Instant::now(), names)
}

struct Running {
    cluster: Arc<LiveCluster>,
    provider: Arc<Recorder<Write>>,
    stop: CancellationToken,
    handle: tokio::task::JoinHandle<()>,
}

impl Running {
    /// The loop running over two listed Services, its first full sync done.
    async fn start(config: ControllerConfig, latency: Duration, write_rate: Option<Rate>) -> Running {
        let source = ServiceSource::new(ServiceSourceConfig::default(), Arc::new(StaticResolver::new()));
        let cluster = Arc::new(LiveCluster::detached(&source.watched_kinds(), LiveOptions::default()));
        listed(
            &cluster,
            vec![lb_service("a", "192.0.2.1"), lb_service("b", "192.0.2.2")],
        );
        listed::<EndpointSlice>(&cluster, vec![]);
        listed::<Pod>(&cluster, vec![]);
        listed::<Node>(&cluster, vec![]);
        assert!(cluster.unsynced_kinds().is_empty(), "every watched kind is listed");
        let provider = Arc::new(Recorder::new(
            InMemoryProvider::new(vec![ZONE.to_string()]).with_write_rate(write_rate),
            latency,
            timed,
        ));
        let config = ControllerConfig {
            events: true,
            interval: Duration::from_secs(3600),
            ..config
        };
        let controller = match common::controller(cluster.clone(), source, provider.clone(), config) {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        };
        let stop = CancellationToken::new();
        let token = stop.clone();
        let handle = tokio::spawn(async move { controller.run(token).await });
        // The first, full sync writes both Services; let every wait it may start run out.
        sleep(Duration::from_secs(10)).await;
        let first = provider.writes();
        assert_eq!(first.len(), 1, "{first:?}");
        assert_eq!(first[0].1, ["a", "b"]);
        Running {
            cluster,
            provider,
            stop,
            handle,
        }
    }

    fn change(&self, name: &str, i: u32) {
        let ip = format!("198.51.{}.{}", i / 250, 1 + i % 250);
        self.cluster.apply_event(Event::Apply(lb_service(name, &ip)));
    }

    /// The apply calls after the first sync's, each with its start relative to `t`, in milliseconds.
    fn writes_since(&self, t: Instant) -> Vec<(u128, Vec<String>)> {
        self.provider
            .writes()
            .into_iter()
            .skip(1)
            .map(|(at, names)| (at.duration_since(t).as_millis(), names))
            .collect()
    }

    async fn stop(self) {
        self.stop.cancel();
        if let Err(e) = self.handle.await {
            panic!("the loop panicked: {e}");
        }
    }
}

fn names(n: &[&str]) -> Vec<String> {
    n.iter().map(|s| s.to_string()).collect()
}

#[tokio::test(start_paused = true)]
async fn a_single_change_is_written_at_once() {
    let run = Running::start(ControllerConfig::default(), Duration::ZERO, None).await;
    let t = Instant::now();
    run.change("new", 0);
    sleep(Duration::from_millis(1)).await;
    assert_eq!(run.writes_since(t), [(0, names(&["new"]))]);
    run.stop().await;
}

#[tokio::test(start_paused = true)]
async fn changes_during_a_write_in_flight_join_the_next_write() {
    // Each write takes 100 ms to come back.
    let run = Running::start(ControllerConfig::default(), Duration::from_millis(100), None).await;
    let t = Instant::now();
    run.change("first", 0);
    for (i, name) in ["x", "y", "z"].iter().enumerate() {
        sleep(Duration::from_millis(20)).await;
        run.change(name, i as u32 + 1);
    }
    sleep(Duration::from_secs(1)).await;
    assert_eq!(
        run.writes_since(t),
        [(0, names(&["first"])), (100, names(&["x", "y", "z"]))],
        "the three changes made while the first write was in flight are one write, the moment it returned"
    );
    run.stop().await;
}

#[tokio::test(start_paused = true)]
async fn an_explicit_min_event_sync_interval_spaces_incremental_writes() {
    let config = ControllerConfig {
        min_event_sync_interval: Duration::from_secs(2),
        min_incremental_write_interval: Duration::from_secs(2),
        ..ControllerConfig::default()
    };
    let run = Running::start(config, Duration::ZERO, None).await;
    let t = Instant::now();
    run.change("first", 0);
    sleep(Duration::from_millis(500)).await;
    run.change("second", 1);
    sleep(Duration::from_millis(500)).await;
    run.change("third", 2);
    sleep(Duration::from_secs(5)).await;
    assert_eq!(
        run.writes_since(t),
        [(0, names(&["first"])), (2000, names(&["second", "third"]))]
    );
    run.stop().await;
}

#[tokio::test(start_paused = true)]
async fn the_provider_write_rate_holds_under_fifty_changes_a_second() {
    let rate = Rate::per_second(5.0);
    let run = Running::start(ControllerConfig::default(), Duration::ZERO, rate).await;
    let before = run.provider.inner.write_times().len();
    let t = Instant::now();
    let changes = 250u32;
    // 50 new Services a second for 5 s.
    for i in 0..changes {
        run.change(&format!("s{i}"), i);
        sleep(Duration::from_millis(20)).await;
    }
    sleep(Duration::from_secs(2)).await;

    let times = run.provider.inner.write_times().split_off(before);
    // At most 5 writes in any second: the write 5 places later is at least a second later.
    for (i, pair) in times.windows(6).enumerate() {
        let gap = pair[5].duration_since(pair[0]);
        assert!(gap >= Duration::from_secs(1), "writes {i}..{} within {gap:?}", i + 5);
    }
    // Coalesced: far fewer writes than changes, and every change written within the stream plus a slot.
    // The stream lasts 5 s: a slot every 200 ms, and the last changes' write one slot after it.
    assert!(times.len() <= 5 * 5 + 2, "{} writes for {changes} changes", times.len());
    let written: usize = run.writes_since(t).iter().map(|(_, n)| n.len()).sum();
    assert_eq!(written, changes as usize, "every change was written once");
    let last = times.last().map(|l| l.duration_since(t));
    assert!(
        last.is_some_and(|l| l <= Duration::from_millis(20 * changes as u64 + 200)),
        "the last change waited more than one slot: {last:?}"
    );
    for i in [0, changes / 2, changes - 1] {
        let name = format!("s{i}.{ZONE}");
        let records = match run.provider.inner.records().await {
            Ok(r) => r.endpoints,
            Err(e) => panic!("{e}"),
        };
        assert!(
            records
                .iter()
                .any(|e| e.dns_name == name && e.record_type == RecordType::A),
            "{name} missing"
        );
    }
    run.stop().await;
}
