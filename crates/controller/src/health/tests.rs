//! The health verdicts as a sync applies them: the unhealthy targets named for the registry, the
//! properties taken off; then real sockets on loopback through the controller and the shared registry: a
//! TCP listener that closes and comes back, an HTTP server that answers 500 then 200, each target leaving
//! and returning in the published record, and two owners whose targets all fail at once both staying.

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use extdns_endpoint::shared::{self, HEALTH_CHECK, HEALTH_INTERVAL, HEALTH_THRESHOLD};
use extdns_endpoint::{Endpoint, RecordType};
use extdns_informer::{ClusterStore, LiveCluster};
use extdns_provider::{InMemoryProvider, Provider};
use extdns_registry::shared::health;
use extdns_registry::shared::{SharedConfig, SharedRegistry};
use extdns_registry::{Ownership, OwnershipConfig, TxtRegistry, TxtRegistryConfig};
use extdns_source::{DesiredIndex, PipelineOutput, SourceError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::filter::apply;
use super::*;
use crate::{Controller, ControllerConfig, DesiredEndpoints};

type Res = Result<(), Box<dyn std::error::Error>>;

const OWNER: &str = "cluster-a";
const NAME: &str = "web.example.org";
/// How long a test waits for a transition: far beyond what a probe every second needs, so a busy machine
/// only makes it slower.
const PATIENCE: Duration = Duration::from_secs(60);

fn shared_a(targets: &[&str], check: &str) -> Endpoint {
    let mut e = Endpoint::new(NAME, RecordType::A, targets.iter().copied());
    shared::mark(&mut e);
    e.provider_specific.set(HEALTH_CHECK, check);
    e.provider_specific.set(HEALTH_INTERVAL, "1s");
    e.provider_specific.set(HEALTH_THRESHOLD, "1");
    e
}

fn tcp_key(target: &str) -> ProbeKey {
    ProbeKey {
        name: NAME.into(),
        target: target.parse().expect("an address"),
        check: HealthCheck {
            probe: Probe::Tcp { port: 443 },
            interval: Duration::from_secs(1),
            threshold: 1,
        },
    }
}

/// A shared registry of `owner` over `provider`.
fn registry(provider: Arc<dyn Provider>, owner: &str) -> Result<SharedRegistry, Box<dyn std::error::Error>> {
    let mut config = OwnershipConfig::default();
    config.owner_id = owner.into();
    let ownership = Ownership::new(config)?;
    let txt = Arc::new(TxtRegistry::new(
        provider.clone(),
        TxtRegistryConfig::new(ownership.clone()),
    ));
    Ok(SharedRegistry::new(txt, provider, &ownership, SharedConfig::default())?)
}

fn targets(endpoints: &[Endpoint]) -> Vec<String> {
    let mut t: Vec<String> = endpoints
        .iter()
        .flat_map(|e| e.targets.iter().map(|t| t.to_string()).collect::<Vec<_>>())
        .collect();
    t.sort();
    t
}

/// Marks `key`'s target as its probes would (the tables of these tests probe nothing): one probe's result,
/// through the table's own bookkeeping (the keys' threshold is one).
fn set(table: &HealthTable, key: &ProbeKey, healthy: bool) {
    table.watch(key);
    let result = if healthy {
        Ok(())
    } else {
        Err(ProbeFailure::Timeout {
            addr: std::net::SocketAddr::new(key.target, 443),
            timeout: Duration::from_secs(1),
        })
    };
    table.state.record(key, result);
}

/// The value of `extdns_shared_health_targets{state}` in `metrics`.
fn gauge(metrics: &Metrics, state: &str) -> Option<u64> {
    let prefix = format!("extdns_shared_health_targets{{state=\"{state}\"}} ");
    metrics
        .encode()
        .lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .and_then(|v| v.trim().parse().ok())
}

#[tokio::test(flavor = "current_thread")]
async fn the_target_gauge_follows_every_transition_insertion_and_removal() -> Res {
    let metrics = Arc::new(Metrics::new("test", "test"));
    let table = HealthTable::idle_counting(Some(metrics.clone()));
    let counts = |table: &HealthTable| table.state.lock().counts();
    let desired = || vec![shared_a(&["192.0.2.1", "192.0.2.2", "192.0.2.3"], "tcp:443")];
    apply(desired(), Some(&table), true);
    assert_eq!(
        (gauge(&metrics, "healthy"), gauge(&metrics, "unhealthy")),
        (Some(3), Some(0))
    );
    set(&table, &tcp_key("192.0.2.1"), false);
    set(&table, &tcp_key("192.0.2.2"), false);
    assert_eq!(
        (gauge(&metrics, "healthy"), gauge(&metrics, "unhealthy")),
        (Some(1), Some(2))
    );
    // A failure of a target already unhealthy, or a success of a healthy one, is no transition.
    set(&table, &tcp_key("192.0.2.1"), false);
    set(&table, &tcp_key("192.0.2.3"), true);
    assert_eq!(
        (gauge(&metrics, "healthy"), gauge(&metrics, "unhealthy")),
        (Some(1), Some(2))
    );
    set(&table, &tcp_key("192.0.2.2"), true);
    assert_eq!(
        (gauge(&metrics, "healthy"), gauge(&metrics, "unhealthy")),
        (Some(2), Some(1))
    );
    // A full sync that no longer asks for the unhealthy target and one healthy one drops them from both.
    apply(vec![shared_a(&["192.0.2.2"], "tcp:443")], Some(&table), true);
    assert_eq!(
        (gauge(&metrics, "healthy"), gauge(&metrics, "unhealthy")),
        (Some(1), Some(0))
    );
    assert_eq!(counts(&table), (1, 0));
    // The kept count agrees with a recount of the verdicts.
    apply(desired(), Some(&table), true);
    set(&table, &tcp_key("192.0.2.3"), false);
    let recount = {
        let inner = table.state.lock();
        let unhealthy = inner.probes.values().filter(|s| !s.verdict.healthy()).count();
        (inner.probes.len() - unhealthy, unhealthy)
    };
    assert_eq!(counts(&table), recount);
    assert_eq!(recount, (2, 1));
    Ok(())
}

#[tokio::test(flavor = "current_thread")]
async fn an_unhealthy_target_is_named_for_the_registry_and_the_properties_never_reach_the_plan() -> Res {
    let table = HealthTable::idle();
    set(&table, &tcp_key("192.0.2.1"), false);
    let out = apply(
        vec![shared_a(&["192.0.2.1", "192.0.2.2"], "tcp:443")],
        Some(&table),
        true,
    );
    // Every target stays on the endpoint: the registry publishes what every owner's verdicts say.
    assert_eq!(targets(&out), ["192.0.2.1", "192.0.2.2"]);
    assert_eq!(health::unhealthy_of(&out[0]), ["192.0.2.1"]);
    for property in [HEALTH_CHECK, HEALTH_INTERVAL, HEALTH_THRESHOLD] {
        assert_eq!(out[0].provider_specific.get(property), None, "{property}");
    }
    assert!(shared::is_shared(&out[0]));
    // Healthy again: no verdict on the endpoint.
    set(&table, &tcp_key("192.0.2.1"), true);
    let out = apply(
        vec![shared_a(&["192.0.2.1", "192.0.2.2"], "tcp:443")],
        Some(&table),
        true,
    );
    assert_eq!(out[0].provider_specific.get(health::UNHEALTHY), None);
    // Without a table (extdns plan builds none) the properties go all the same, and no verdict is named.
    let out = apply(vec![shared_a(&["192.0.2.1"], "tcp:443")], None, true);
    assert_eq!(targets(&out), ["192.0.2.1"]);
    assert_eq!(out[0].provider_specific.get(HEALTH_CHECK), None);
    assert_eq!(out[0].provider_specific.get(health::UNHEALTHY), None);
    Ok(())
}

#[tokio::test(flavor = "current_thread")]
async fn names_not_shared_or_with_a_bad_check_are_not_probed_and_stay() -> Res {
    let table = HealthTable::idle();
    let mut plain = shared_a(&["192.0.2.1"], "tcp:443");
    shared::unmark(&mut plain);
    let out = apply(vec![plain, shared_a(&["192.0.2.2"], "udp:53")], Some(&table), true);
    assert_eq!(targets(&out), ["192.0.2.1", "192.0.2.2"]);
    assert!(out.iter().all(|e| e.provider_specific.get(HEALTH_CHECK).is_none()));
    assert!(out.iter().all(|e| e.provider_specific.get(health::UNHEALTHY).is_none()));
    assert!(table.state.lock().probes.is_empty());
    Ok(())
}

#[tokio::test(flavor = "current_thread")]
async fn a_full_sync_stops_the_probes_no_endpoint_asks_for() -> Res {
    let table = HealthTable::idle();
    apply(
        vec![shared_a(&["192.0.2.1", "192.0.2.2"], "tcp:443")],
        Some(&table),
        true,
    );
    assert_eq!(table.state.lock().probes.len(), 2);
    // An incremental sync sees only some names: it stops nothing.
    apply(Vec::new(), Some(&table), false);
    assert_eq!(table.state.lock().probes.len(), 2);
    apply(vec![shared_a(&["192.0.2.2"], "tcp:443")], Some(&table), true);
    let left: HashSet<IpAddr> = table.state.lock().probes.keys().map(|k| k.target).collect();
    assert_eq!(left, HashSet::from([IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2))]));
    Ok(())
}

/// The desired endpoints a test sets.
struct Fixed(Mutex<Vec<Endpoint>>);

#[async_trait]
impl DesiredEndpoints for Fixed {
    async fn desired(&self, _: &ClusterStore, _: Option<&mut DesiredIndex>) -> Result<PipelineOutput, SourceError> {
        let endpoints = self.0.lock().map(|e| e.clone()).unwrap_or_default();
        Ok(PipelineOutput {
            endpoints,
            ..PipelineOutput::default()
        })
    }
}

/// A controller of `cluster-a` publishing `desired` over an in-memory zone, probing with `table`.
fn controller(
    desired: Vec<Endpoint>,
    table: &HealthTable,
) -> Result<(Controller, Arc<InMemoryProvider>), Box<dyn std::error::Error>> {
    let provider = Arc::new(InMemoryProvider::new(vec!["example.org".into()]));
    Ok((controller_of(provider.clone(), OWNER, desired, table)?, provider))
}

/// A controller of `owner` publishing `desired` over `provider`, probing with `table`.
fn controller_of(
    provider: Arc<InMemoryProvider>,
    owner: &str,
    desired: Vec<Endpoint>,
    table: &HealthTable,
) -> Result<Controller, Box<dyn std::error::Error>> {
    let registry = Arc::new(registry(provider, owner)?);
    let mut config = ControllerConfig::default();
    config.plan.owner_id = owner.into();
    // Only a transition may bring the next sync: the interval never comes within a test.
    config.interval = Duration::from_secs(3600);
    let cluster = Arc::new(LiveCluster::from_store(ClusterStore::new()));
    let metrics = Arc::new(Metrics::new("test", "test"));
    Ok(
        Controller::new(cluster, Arc::new(Fixed(Mutex::new(desired))), registry, config, metrics)
            .with_health(table.clone()),
    )
}

#[tokio::test(flavor = "current_thread")]
async fn two_owners_whose_targets_all_fail_in_one_interval_both_stay_published() -> Res {
    let provider = Arc::new(InMemoryProvider::new(vec!["example.org".into()]));
    let (table_a, table_b) = (HealthTable::idle(), HealthTable::idle());
    let a = controller_of(
        provider.clone(),
        OWNER,
        vec![shared_a(&["192.0.2.1"], "tcp:443")],
        &table_a,
    )?;
    let b = controller_of(
        provider.clone(),
        "cluster-b",
        vec![shared_a(&["192.0.2.2"], "tcp:443")],
        &table_b,
    )?;
    a.run_once().await?;
    b.run_once().await?;
    assert_eq!(published(&provider).await?, ["192.0.2.1", "192.0.2.2"]);

    // a's target fails: b's healthy one is the record.
    set(&table_a, &tcp_key("192.0.2.1"), false);
    a.run_once().await?;
    assert_eq!(published(&provider).await?, ["192.0.2.2"]);
    // b's fails in the same interval: nothing healthy is left anywhere, so everything is published, and
    // each owner's next sync (or upkeep) keeps it so.
    set(&table_b, &tcp_key("192.0.2.2"), false);
    b.run_once().await?;
    assert_eq!(published(&provider).await?, ["192.0.2.1", "192.0.2.2"]);
    a.run_once().await?;
    b.run_once().await?;
    assert_eq!(published(&provider).await?, ["192.0.2.1", "192.0.2.2"]);
    // b recovers: only its healthy target stays.
    set(&table_b, &tcp_key("192.0.2.2"), true);
    b.run_once().await?;
    assert_eq!(published(&provider).await?, ["192.0.2.2"]);
    a.run_once().await?;
    assert_eq!(published(&provider).await?, ["192.0.2.2"]);
    // And a: both again.
    set(&table_a, &tcp_key("192.0.2.1"), true);
    a.run_once().await?;
    assert_eq!(published(&provider).await?, ["192.0.2.1", "192.0.2.2"]);
    Ok(())
}

/// The published targets of the A record.
async fn published(provider: &InMemoryProvider) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let records = provider.records().await?.endpoints;
    Ok(targets(
        &records
            .into_iter()
            .filter(|e| e.dns_name == NAME && e.record_type == RecordType::A)
            .collect::<Vec<_>>(),
    ))
}

/// Waits until the record holds `want`, syncing after each transition when `sync` (else the loop does).
async fn until_published(
    provider: &InMemoryProvider,
    controller: Option<&Controller>,
    table: &HealthTable,
    want: &[&str],
) -> Res {
    let mut transitions = table.transitions();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        if let Some(c) = controller {
            c.run_once().await?;
        }
        let now = published(provider).await?;
        if now == want {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            return Err(format!("the record holds {now:?}, not {want:?}").into());
        }
        let _ = tokio::time::timeout(Duration::from_millis(200), transitions.changed()).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_tcp_listener_withdraws_its_target_and_a_new_one_brings_it_back() -> Res {
    let one = TcpListener::bind("127.0.0.1:0").await?;
    let port = one.local_addr()?.port();
    let _two = TcpListener::bind(("127.0.0.2", port)).await?;
    let table = HealthTable::new(None);
    let desired = vec![shared_a(&["127.0.0.1", "127.0.0.2"], &format!("tcp:{port}"))];
    let (controller, provider) = controller(desired, &table)?;
    controller.run_once().await?;
    assert_eq!(published(&provider).await?, ["127.0.0.1", "127.0.0.2"]);

    drop(one);
    until_published(&provider, Some(&controller), &table, &["127.0.0.2"]).await?;
    let _one = TcpListener::bind(("127.0.0.1", port)).await?;
    until_published(&provider, Some(&controller), &table, &["127.0.0.1", "127.0.0.2"]).await?;
    Ok(())
}

/// An HTTP server answering every request with 200 while `ok`, else 500.
async fn http_server(ip: &str, ok: Arc<AtomicBool>) -> Result<u16, Box<dyn std::error::Error>> {
    let listener = TcpListener::bind((ip, 0)).await?;
    let port = listener.local_addr()?.port();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let ok = ok.clone();
            tokio::spawn(async move {
                let mut request = [0u8; 1024];
                let _ = socket.read(&mut request).await;
                let status = if ok.load(Ordering::SeqCst) {
                    "200 OK"
                } else {
                    "500 Internal Server Error"
                };
                let answer = format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
                let _ = socket.write_all(answer.as_bytes()).await;
            });
        }
    });
    Ok(port)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_loop_syncs_at_a_transition_withdrawing_a_target_answering_500_until_it_answers_200() -> Res {
    let ok = Arc::new(AtomicBool::new(true));
    let port = http_server("127.0.0.1", ok.clone()).await?;
    let metrics = Arc::new(Metrics::new("test", "test"));
    let table = HealthTable::new(Some(metrics.clone()));
    let desired = vec![shared_a(&["127.0.0.1"], &format!("http:{port}/healthz"))];
    let (controller, provider) = controller(desired, &table)?;
    // Another owner publishes a target at the name, so this cluster's one target may leave it.
    let other = registry(provider.clone(), "cluster-b")?;
    let mut other_controller_config = ControllerConfig::default();
    other_controller_config.plan.owner_id = "cluster-b".into();
    let other_target = {
        let mut e = Endpoint::new(NAME, RecordType::A, ["192.0.2.9"]);
        shared::mark(&mut e);
        e
    };
    Controller::new(
        Arc::new(LiveCluster::from_store(ClusterStore::new())),
        Arc::new(Fixed(Mutex::new(vec![other_target]))),
        Arc::new(other),
        other_controller_config,
        Arc::new(Metrics::new("test", "test")),
    )
    .run_once()
    .await?;

    let controller = Arc::new(controller);
    let stop = CancellationToken::new();
    let running = tokio::spawn({
        let (controller, stop) = (controller.clone(), stop.clone());
        async move { controller.run(stop).await }
    });
    // The interval is an hour: after the first sync, only transitions bring the next ones.
    until_published(&provider, None, &table, &["127.0.0.1", "192.0.2.9"]).await?;
    ok.store(false, Ordering::SeqCst);
    until_published(&provider, None, &table, &["192.0.2.9"]).await?;
    ok.store(true, Ordering::SeqCst);
    until_published(&provider, None, &table, &["127.0.0.1", "192.0.2.9"]).await?;
    stop.cancel();
    running.await?;
    let text = metrics.encode();
    for line in [
        "extdns_shared_health_probes_total{result=\"failure\"} ",
        "extdns_shared_health_probes_total{result=\"success\"} ",
        "extdns_shared_health_targets{state=\"healthy\"} 1\n",
        "extdns_shared_health_targets{state=\"unhealthy\"} 0\n",
    ] {
        assert!(text.contains(line), "{line} in {text}");
    }
    Ok(())
}
