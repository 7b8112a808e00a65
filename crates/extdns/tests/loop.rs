//! The running loop: event-driven syncs over a live cluster view, and the binary as a long-running process
//! (health, metrics, logs, SIGTERM).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use extdns::flags::try_parse_from;
use extdns::run::{controller_with_cluster, watched_kinds};
use extdns::settings;
use extdns_controller::{CancellationToken, Metrics};
use extdns_informer::{LiveCluster, LiveOptions, ResourceKind};
use extdns_provider::InMemoryProvider;
use extdns_test_support::cli::assert_mentions;
use extdns_test_support::http_get;
use extdns_test_support::proc::OwnedChild;
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1 as discovery;
use kube::runtime::watcher::Event;

type Error = Box<dyn std::error::Error>;

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

fn lb_service(name: &str, host: &str, ip: &str) -> Result<core::Service, Error> {
    Ok(serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "namespace": "default",
                     "annotations": {"external-dns.kubernetes.io/hostname": host}},
        "spec": {"type": "LoadBalancer", "clusterIP": "10.96.0.1", "ports": [{"port": 80}]},
        "status": {"loadBalancer": {"ingress": [{"ip": ip}]}}
    }))?)
}

/// Completes the first list of every kind, as the watchers would on an empty cluster.
fn list_empty(cluster: &LiveCluster, kinds: &[ResourceKind]) -> Result<(), Error> {
    for kind in kinds {
        match kind {
            ResourceKind::Service => done::<core::Service>(cluster),
            ResourceKind::EndpointSlice => done::<discovery::EndpointSlice>(cluster),
            ResourceKind::Pod => done::<core::Pod>(cluster),
            ResourceKind::Node => done::<core::Node>(cluster),
            ResourceKind::Namespace => done::<core::Namespace>(cluster),
            other => return Err(format!("this test does not feed {other:?}").into()),
        }
    }
    Ok(())
}

fn done<K: extdns_informer::Watched>(cluster: &LiveCluster) {
    cluster.apply_event(Event::<K>::Init);
    cluster.apply_event(Event::<K>::InitDone);
}

fn a_records(p: &InMemoryProvider) -> Vec<String> {
    p.snapshot()
        .into_iter()
        .filter(|e| e.record_type == extdns_endpoint::RecordType::A)
        .map(|e| format!("{} {}", e.dns_name, e.targets.join(",")))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn events_write_at_once_and_an_explicit_min_event_sync_interval_spaces_the_writes() -> Result<(), Error> {
    let cli = try_parse_from([
        "extdns",
        "--source=service",
        "--provider=inmemory",
        "--policy=sync",
        "--events",
        "--interval=1h",
        "--min-event-sync-interval=5s",
    ])?;
    let settings = settings::controller(&cli.flags)?;
    let kinds = watched_kinds(&settings)?;
    let cluster = Arc::new(LiveCluster::detached(&kinds, LiveOptions::default()));
    let provider = Arc::new(InMemoryProvider::new(vec![]));
    let controller = controller_with_cluster(
        &settings,
        cluster.clone(),
        provider.clone(),
        Arc::new(Metrics::new("t", "t")),
    )?;
    let stop = CancellationToken::new();
    let token = stop.clone();
    let handle = tokio::spawn(async move { controller.run(token).await });

    // Nothing is synced while the informers are still listing; the loop waits for them.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(provider.apply_calls(), 0);
    list_empty(&cluster, &kinds)?;
    // The first sync, and the one the completed list itself triggers, settle.
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert!(provider.snapshot().is_empty());

    // A Service appears. Its record is written at once (nothing was written before), not at the next
    // hourly sync.
    cluster.apply_event(Event::Apply(lb_service("web", "web.example.com", "203.0.113.10")?));
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(a_records(&provider), ["web.example.com 203.0.113.10"]);

    // The Service's address changes a second later: `--min-event-sync-interval=5s`, given explicitly,
    // holds the write until 5 s after the last one. Then the Service goes away.
    tokio::time::sleep(Duration::from_secs(1)).await;
    cluster.apply_event(Event::Apply(lb_service("web", "web.example.com", "203.0.113.99")?));
    tokio::time::sleep(Duration::from_millis(3900)).await;
    assert_eq!(
        a_records(&provider),
        ["web.example.com 203.0.113.10"],
        "written sooner than --min-event-sync-interval after the last write"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(a_records(&provider), ["web.example.com 203.0.113.99"]);
    cluster.apply_event(Event::Delete(lb_service("web", "web.example.com", "203.0.113.99")?));
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert!(a_records(&provider).is_empty(), "{:?}", provider.snapshot());
    assert!(
        provider.snapshot().is_empty(),
        "the ownership record stayed: {:?}",
        provider.snapshot()
    );

    stop.cancel();
    handle.await?;
    Ok(())
}

// ---- the binary ----

fn extdns(args: &[&str]) -> Command {
    let mut cmd = extdns_test_support::cli::command(env!("CARGO_BIN_EXE_extdns"), &[]);
    cmd.args(args);
    cmd
}

/// Polls `path` until the response contains `needle`, for at most `timeout`.
fn wait_for(port: u16, path: &str, needle: &str, timeout: Duration) -> Result<String, Error> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Ok(body) = http_get(port, path)
            && body.contains(needle)
        {
            return Ok(body);
        }
        if Instant::now() > deadline {
            return Err(format!("{path} never contained {needle:?}").into());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn running_binary_serves_health_and_metrics_and_stops_cleanly_on_sigterm() -> Result<(), Error> {
    let port = extdns_test_support::free_port();
    let address = format!("127.0.0.1:{port}");
    let ex = examples();
    let child = extdns(&[
        "--source=service",
        "--provider=inmemory",
        "--policy=sync",
        "--interval=1h",
        "--metrics-address",
        &address,
        "--manifests",
        ex.to_str().ok_or("path")?,
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()?;
    // Killed if the test fails before it stopped it.
    let mut child = OwnedChild(child);

    let health = wait_for(port, "/healthz", "200 OK", Duration::from_secs(30))?;
    assert!(health.ends_with("\r\n\r\nOK"), "{health}");
    // The first sync has run once its timestamp is set.
    let metrics = wait_for(
        port,
        "/metrics",
        "external_dns_registry_endpoints_total ",
        Duration::from_secs(30),
    )?;
    assert_mentions(
        &metrics,
        &[
            "external_dns_source_endpoints_total ",
            "external_dns_controller_last_sync_timestamp_seconds ",
            "external_dns_build_info{",
            "external_dns_registry_errors_total 0",
        ],
    );

    let pid = child.id().to_string();
    let killed = Command::new("kill").args(["-TERM", &pid]).status()?;
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if Instant::now() > deadline {
            return Err("extdns did not stop within 20 s of SIGTERM".into());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        e.read_to_string(&mut stderr)?;
    }
    assert!(status.success(), "exit {status:?}; stderr:\n{stderr}");
    assert!(stderr.contains("Terminating main controller loop"), "{stderr}");
    assert!(
        stderr.contains("web.example.com"),
        "the created records were not logged:\n{stderr}"
    );
    Ok(())
}

/// `extdns --once --source=service` over the examples with `extra`: its exit code and stderr.
fn once_over_examples(extra: &[&str]) -> Result<(Option<i32>, String), Error> {
    let ex = examples();
    let mut args = vec!["--once", "--source=service", "--manifests", ex.to_str().ok_or("path")?];
    args.extend_from_slice(extra);
    let out = extdns(&args).output()?;
    Ok((out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned()))
}

#[test]
fn once_logs_every_record_it_creates_and_exits_zero() -> Result<(), Error> {
    let (code, stderr) = once_over_examples(&["--provider=inmemory", "--policy=sync", "--log-format=json"])?;
    assert_eq!(code, Some(0), "{stderr}");
    let creates: Vec<serde_json::Value> = stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["action"] == "create")
        .collect();
    let web = creates
        .iter()
        .find(|v| v["name"] == "web.example.com")
        .ok_or(format!("no create logged:\n{stderr}"))?;
    assert_eq!(web["level"], "INFO");
    assert_eq!(web["record_type"], "A");
    assert_eq!(web["targets"], "203.0.113.10");
    Ok(())
}

#[test]
fn dry_run_logs_what_it_would_do() -> Result<(), Error> {
    let (code, stderr) = once_over_examples(&["--dry-run", "--provider=inmemory", "--policy=sync"])?;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("would create record (dry run)"), "{stderr}");
    assert!(stderr.contains("web.example.com"), "{stderr}");
    Ok(())
}

#[test]
fn unsupported_provider_fails_at_startup_naming_it() -> Result<(), Error> {
    let (code, stderr) = once_over_examples(&["--provider=ns1"])?;
    assert_ne!(code, Some(0));
    assert!(
        stderr.contains("provider ns1 is not supported by extdns yet"),
        "{stderr}"
    );
    Ok(())
}
