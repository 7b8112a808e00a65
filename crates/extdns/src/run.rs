//! The controller command (no subcommand): wires the cluster view, the source pipeline, the provider and the
//! registry into the reconcile loop, then runs it until SIGTERM (or once, with `--once`).

use std::sync::Arc;
use std::time::Duration;

pub(crate) use extdns_controller::spawn_signal_handler;
use extdns_controller::{CancellationToken, Metrics, SyncReport, start_metrics_server};
use extdns_leader::{ElectionConfig, LeaderElection};
use extdns_provider::Provider;
use extdns_wiring::{Error as WiringError, RegistryError};
pub use extdns_wiring::{
    build_cluster, build_controller, controller_with_cluster, controller_with_pipeline, kube_client, watched_kinds,
};
use tracing::info;

use crate::crd_status::CrdStatus;
use crate::dns_server::{Serving, provider_and_server};
use crate::events::KubeEvents;
use crate::settings::{ClusterSettings, EnabledSource, KubeSettings, LeaderSettings, Settings, ValidationError};
use extdns_kube_sinks::object_status::{KubeStatusApi, StatusWriter, TokenBucket};

/// How long `--once` waits for the informers' first list (external-dns's cache-sync timeout).
pub const ONCE_SYNC_TIMEOUT: Duration = Duration::from_secs(60);

/// `--status-updates`' steady rate of writes per second and its burst: a first sync of thousands of
/// objects spreads its statuses over minutes rather than loading the API server, and a change of a few
/// objects is written at once.
pub(crate) const STATUS_QPS: f64 = 5.0;
/// See [`STATUS_QPS`].
pub(crate) const STATUS_BURST: u32 = 50;

/// The version `build_info` reports.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The source revision `build_info` reports, when the build sets `EXTDNS_REVISION`.
pub const REVISION: &str = match option_env!("EXTDNS_REVISION") {
    Some(r) => r,
    None => "unknown",
};

/// Runs the controller as the settings say; returns when the loop stops (SIGTERM/SIGINT) or, with `--once`,
/// after the single sync. An error is a startup failure or, with `--once`, a failed sync.
pub async fn run(settings: &Settings) -> anyhow::Result<()> {
    let shutdown = CancellationToken::new();
    spawn_signal_handler(shutdown.clone());
    // The built-in DNS server is bound before anything else connects anywhere: a busy address fails the
    // start. It serves from the first sync on; until then every name in its zones is NXDOMAIN, which is
    // why /readyz waits for that sync.
    let (metrics, provider, dns_server) =
        provider_and_server(&settings.provider, Metrics::new(VERSION, REVISION)).await?;
    let mut controller = build_controller(settings, provider, metrics.clone())
        .await
        .map_err(flagged)?;
    if dns_server.is_some() {
        // The zones are this process's: every replica writes its own, leader or not.
        controller = controller.with_local_provider();
    }
    // The answers on threads of their own, ahead of this loop's (`crate::priority`).
    let serving = dns_server
        .map(|server| Serving::start(server, shutdown.clone()))
        .transpose()?;
    // The election stops only after the loop: a lease released while a sync still writes would let the
    // next leader start too early.
    let election_stop = CancellationToken::new();
    let mut election_task = None;
    let mut leading = extdns_leader::Leadership::always();
    if let (Some(leader), ClusterSettings::ApiServer(kube)) = (&settings.leader, &settings.cluster) {
        let (election, leadership) = start_election(leader, kube).await?;
        leading = leadership.clone();
        controller = controller.with_leadership(leadership);
        election_task = Some(tokio::spawn(election.run(election_stop.clone())));
    }
    controller = controller.with_provider_name(settings.provider.name());
    let status_writer = match (&settings.cluster, settings.status_updates && !settings.once) {
        (ClusterSettings::ApiServer(kube), true) => {
            let api = KubeStatusApi::new(
                kube_client(kube).await?,
                kube.live.overrides.clone(),
                controller.cluster(),
            );
            let is_leader = Arc::new(move || leading.is_leader());
            let writer = StatusWriter::new(Arc::new(api), is_leader, TokenBucket::new(STATUS_QPS, STATUS_BURST));
            Some(tokio::spawn(writer.run(metrics.names().clone(), shutdown.clone())))
        }
        _ => None,
    };
    let crd = settings.sources.enabled.contains(&EnabledSource::Crd);
    if let (true, ClusterSettings::ApiServer(kube)) = (crd || settings.events.any(), &settings.cluster) {
        let client = kube_client(kube).await?;
        let overrides = &kube.live.overrides;
        if settings.events.any() {
            let sink = KubeEvents::for_this_pod(client.clone(), overrides.clone());
            controller = controller.with_events(settings.events, Arc::new(sink));
        }
        if crd {
            // Status goes where the live view watches DNSEndpoints (the plural its discovery found).
            let sink = CrdStatus::new(
                client,
                overrides,
                settings.sources.crd.clone(),
                settings.controller.plan.clone(),
            )
            .with_names(metrics.names().clone());
            controller = controller.with_status(Arc::new(sink));
        }
    }
    let c = &settings.controller;
    info!(
        version = VERSION,
        provider = settings.provider.name(),
        registry = settings.registry.name(),
        policy = c.plan.policy.as_str(),
        cluster = match settings.cluster {
            ClusterSettings::ApiServer(_) => "api-server",
            ClusterSettings::Manifests(_) => "manifests",
        },
        interval = ?c.interval,
        events = c.events,
        dry_run = c.dry_run,
        once = settings.once,
        leader_elect = settings.leader.is_some(),
        "extdns starting"
    );

    if settings.once {
        // No metrics server: nothing would scrape a process that exits after one sync, and a busy port
        // should not fail a one-shot run.
        let report = controller.run_once_when_synced(ONCE_SYNC_TIMEOUT, &shutdown).await?;
        info!(
            changes = report.changes.len(),
            applied = report.applied,
            held = report.kept.len(),
            "sync complete"
        );
        if let Some(serving) = serving {
            // Exiting would take the answers with it: serve what the one sync wrote until stopped.
            info!("--once with --provider=dns-server: answering from the synced records until SIGTERM or Ctrl-C");
            shutdown.cancelled().await;
            serving.stopped().await;
        }
        return Ok(());
    }

    let server = start_metrics_server(&settings.metrics_address, metrics, shutdown.clone()).await?;
    controller.run(shutdown.clone()).await;
    shutdown.cancel();
    if let Some(serving) = serving {
        serving.stopped().await;
    }
    election_stop.cancel();
    if let Some(task) = election_task {
        let _ = task.await;
    }
    let _ = server.handle.await;
    if let Some(writer) = status_writer {
        let _ = writer.await;
    }
    Ok(())
}

/// The controller's namespace: `POD_NAMESPACE` (the downward API), else the client's default.
pub(crate) fn pod_namespace(client: &kube::Client) -> String {
    std::env::var("POD_NAMESPACE")
        .ok()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| client.default_namespace().to_string())
}

/// The election for `--leader-elect`, not started yet: the Lease in the configured namespace (else the
/// pod's), held under this pod's name and a random suffix.
pub(crate) async fn start_election(
    leader: &LeaderSettings,
    kube: &KubeSettings,
) -> anyhow::Result<(LeaderElection, extdns_leader::Leadership)> {
    let client = kube_client(kube).await?;
    let config = ElectionConfig::for_this_pod(&leader.name, leader.namespace.as_deref(), leader.timing);
    Ok(LeaderElection::new(client, config))
}

/// One sync with a given provider, as `--once` does it (tests use an in-memory provider they can inspect).
pub async fn run_once_with(settings: &Settings, provider: Arc<dyn Provider>) -> anyhow::Result<SyncReport> {
    let metrics = Arc::new(Metrics::new(VERSION, REVISION));
    let controller = build_controller(settings, provider, metrics).await.map_err(flagged)?;
    Ok(controller
        .run_once_when_synced(ONCE_SYNC_TIMEOUT, &CancellationToken::new())
        .await?)
}

/// A wiring error as the commands report it: a refused setting is bad configuration ([`ValidationError`],
/// the usage exit code), named after its flag; anything else is a failure.
pub(crate) fn flagged(e: WiringError) -> anyhow::Error {
    let usage = |message: String| anyhow::Error::from(ValidationError(message));
    match e {
        WiringError::Resolver(e) => usage(format!("--resolve-service-load-balancer-hostname: {e}")),
        WiringError::Registry(RegistryError::Dynamodb(e)) => usage(format!("--registry=dynamodb: {e}")),
        WiringError::Registry(RegistryError::NeedsClient) => usage(
            "--registry=crd keeps ownership in DNSRecord objects: it is built with the controller's Kubernetes \
             client (build_controller)"
                .to_string(),
        ),
        WiringError::Registry(RegistryError::NoApiServer) => anyhow::anyhow!(
            "--registry=crd keeps ownership in DNSRecord objects on the API server; --manifests has none"
        ),
        WiringError::Registry(e) => usage(e.to_string()),
        other => other.into(),
    }
}
