//! The controller command (no subcommand): wires the cluster view, the source pipeline, the provider and the
//! registry into the reconcile loop, then runs it until SIGTERM (or once, with `--once`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use extdns_controller::{CancellationToken, Controller, ControllerConfig, Metrics, SyncReport, start_metrics_server};
use extdns_endpoint::{DomainFilter, RecordType};
use extdns_informer::view::RouteKind;
use extdns_informer::{Cluster, LiveCluster, LiveOptions, ResourceKind};
use extdns_plan::{PlanConfig, Policy};
use extdns_provider::Provider;
use extdns_registry::{NoopRegistry, Registry, TxtRegistry, TxtRegistryConfig};
use tracing::info;

use crate::flags::{Flags, RegistryName};
use crate::providers::build_provider;
use crate::validate::ValidationError;
use crate::wiring;
use extdns_source::Pipeline;

/// How long `--once` waits for the informers' first list (external-dns's cache-sync timeout).
pub const ONCE_SYNC_TIMEOUT: Duration = Duration::from_secs(60);

/// The version `build_info` reports.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The source revision `build_info` reports, when the build sets `EXTDNS_REVISION`.
pub const REVISION: &str = match option_env!("EXTDNS_REVISION") {
    Some(r) => r,
    None => "unknown",
};

fn invalid(message: impl Into<String>) -> ValidationError {
    ValidationError(message.into())
}

/// Runs the controller as the flags say; returns when the loop stops (SIGTERM/SIGINT) or, with `--once`,
/// after the single sync. An error is a startup failure or, with `--once`, a failed sync.
pub async fn run(flags: Flags) -> anyhow::Result<()> {
    let shutdown = CancellationToken::new();
    spawn_signal_handler(shutdown.clone());
    let provider = build_provider(&flags)?;
    let metrics = Arc::new(Metrics::new(VERSION, REVISION));
    let controller = build_controller(&flags, provider, metrics.clone()).await?;
    info!(
        version = VERSION,
        provider = flags.provider.provider.map(|p| p.as_str()).unwrap_or_default(),
        registry = flags.registry.registry.as_str(),
        policy = flags.registry.policy.as_str(),
        cluster = if flags.offline.manifests.is_empty() { "api-server" } else { "manifests" },
        interval = ?flags.control.interval,
        events = flags.control.events,
        dry_run = flags.control.dry_run,
        once = flags.control.once,
        "extdns starting"
    );

    if flags.control.once {
        // No metrics server: nothing would scrape a process that exits after one sync, and a busy port
        // should not fail a one-shot run.
        let report = controller.run_once_when_synced(ONCE_SYNC_TIMEOUT, &shutdown).await?;
        info!(
            changes = report.changes.len(),
            applied = report.applied,
            "sync complete"
        );
        return Ok(());
    }

    let server = start_metrics_server(&flags.control.metrics_address, metrics, shutdown.clone()).await?;
    controller.run(shutdown.clone()).await;
    shutdown.cancel();
    let _ = server.handle.await;
    Ok(())
}

/// One sync with a given provider, as `--once` does it (tests use an in-memory provider they can inspect).
pub async fn run_once_with(flags: &Flags, provider: Arc<dyn Provider>) -> anyhow::Result<SyncReport> {
    let metrics = Arc::new(Metrics::new(VERSION, REVISION));
    let controller = build_controller(flags, provider, metrics).await?;
    Ok(controller
        .run_once_when_synced(ONCE_SYNC_TIMEOUT, &CancellationToken::new())
        .await?)
}

/// Everything but the provider: the source pipeline, the cluster view it reads, the registry and the loop's
/// configuration.
pub async fn build_controller(
    flags: &Flags,
    provider: Arc<dyn Provider>,
    metrics: Arc<Metrics>,
) -> anyhow::Result<Controller> {
    let pipeline = wiring::build_pipeline(flags)?;
    let cluster = build_cluster(flags, &pipeline.watched_kinds()).await?;
    controller_with_pipeline(flags, pipeline, cluster, provider, metrics)
}

/// [`build_controller`] over a given cluster view (tests use a live view fed by hand, or one that never
/// syncs).
pub fn controller_with_cluster(
    flags: &Flags,
    cluster: Arc<dyn Cluster>,
    provider: Arc<dyn Provider>,
    metrics: Arc<Metrics>,
) -> anyhow::Result<Controller> {
    controller_with_pipeline(flags, wiring::build_pipeline(flags)?, cluster, provider, metrics)
}

/// The kinds the sources the flags enable read (what the live view watches).
pub fn watched_kinds(flags: &Flags) -> Result<Vec<ResourceKind>, ValidationError> {
    Ok(wiring::build_pipeline(flags)?.watched_kinds())
}

/// The controller over a given pipeline and cluster view (tests add sources of their own, e.g. one that fails).
pub fn controller_with_pipeline(
    flags: &Flags,
    pipeline: Pipeline,
    cluster: Arc<dyn Cluster>,
    provider: Arc<dyn Provider>,
    metrics: Arc<Metrics>,
) -> anyhow::Result<Controller> {
    let registry = build_registry(flags, provider)?;
    let config = controller_config(flags)?;
    let source = Arc::new(pipeline);
    Ok(Controller::new(cluster, source, registry, config, metrics))
}

/// The loop's knobs and the plan's configuration.
pub fn controller_config(flags: &Flags) -> Result<ControllerConfig, ValidationError> {
    let c = &flags.control;
    Ok(ControllerConfig {
        interval: c.interval,
        min_event_sync_interval: c.min_event_sync_interval,
        events: c.events,
        dry_run: c.dry_run,
        plan: plan_config(flags)?,
    })
}

/// The plan's configuration: policy, managed types, the user's domain filter, the owner to migrate from.
/// The owner id itself comes from the registry.
pub fn plan_config(flags: &Flags) -> Result<PlanConfig, ValidationError> {
    let p = &flags.provider;
    let policy: Policy = flags
        .registry
        .policy
        .as_str()
        .parse()
        .map_err(|e| invalid(format!("--policy: {e}")))?;
    let domain_filter = DomainFilter::from_flags(
        &p.domain_filter,
        &p.exclude_domains,
        &p.regex_domain_filter,
        &p.regex_domain_exclusion,
    )
    .map_err(|e| invalid(format!("--regex-domain-filter/--regex-domain-exclusion: {e}")))?;
    Ok(PlanConfig {
        policy,
        managed_types: record_types(&p.managed_record_types),
        excluded_types: record_types(&p.exclude_record_types),
        domain_filter,
        owner_id: String::new(),
        old_owner_id: non_empty(&flags.registry.migrate_from_txt_owner),
    })
}

/// `--registry` over the provider.
pub fn build_registry(flags: &Flags, provider: Arc<dyn Provider>) -> Result<Arc<dyn Registry>, ValidationError> {
    let r = &flags.registry;
    match r.registry {
        RegistryName::Txt => {
            let config = TxtRegistryConfig {
                owner_id: r.txt_owner_id.clone(),
                prefix: r.txt_prefix.clone(),
                suffix: r.txt_suffix.clone(),
                wildcard_replacement: r.txt_wildcard_replacement.clone(),
                encrypt_enabled: r.txt_encrypt_enabled,
                encrypt_aes_key: non_empty(&r.txt_encrypt_aes_key),
                migrate_from_owner: non_empty(&r.migrate_from_txt_owner),
                cache_interval: r.txt_cache_interval,
                managed_types: record_types(&flags.provider.managed_record_types),
                excluded_types: record_types(&flags.provider.exclude_record_types),
            };
            let registry = TxtRegistry::new(provider, config).map_err(|e| invalid(e.to_string()))?;
            Ok(Arc::new(registry))
        }
        RegistryName::Noop => Ok(Arc::new(NoopRegistry::new(provider))),
        other => Err(invalid(format!(
            "registry {} is not supported by extdns yet",
            other.as_str()
        ))),
    }
}

/// The cluster view: the `--manifests` files when given, else the API server (kubeconfig or in-cluster).
pub async fn build_cluster(flags: &Flags, kinds: &[ResourceKind]) -> anyhow::Result<Arc<dyn Cluster>> {
    if !flags.offline.manifests.is_empty() {
        let store = extdns_informer::load(&flags.offline.manifests, &wiring::load_options(flags))?;
        return Ok(Arc::new(LiveCluster::from_store(store)));
    }
    let client = kube_client(flags).await?;
    let cluster = LiveCluster::start(client, kinds, live_options(flags)?)?;
    Ok(Arc::new(cluster))
}

/// What the live view watches beyond the kinds: the namespaces and the server-side label selectors, so
/// objects the sources would drop anyway are neither sent nor stored.
pub fn live_options(flags: &Flags) -> Result<LiveOptions, ValidationError> {
    let common = wiring::source_config(flags)?;
    let gateway = wiring::gateway_source_config(flags, common.clone())?;
    let mut label_selectors = BTreeMap::new();
    if !common.label_filter.is_everything() {
        let selector = common.label_filter.to_string();
        label_selectors.insert(ResourceKind::Service, selector.clone());
        for kind in [
            RouteKind::Http,
            RouteKind::Grpc,
            RouteKind::Tls,
            RouteKind::Tcp,
            RouteKind::Udp,
        ] {
            label_selectors.insert(ResourceKind::Route(kind), selector.clone());
        }
    }
    if !gateway.gateway_label_filter.is_everything() {
        label_selectors.insert(ResourceKind::Gateway, gateway.gateway_label_filter.to_string());
    }
    let mut options = LiveOptions::default();
    options.namespace = common.namespace;
    options.gateway_namespace = gateway.gateway_namespace;
    options.label_selectors = label_selectors;
    options.pod_annotation_prefixes = wiring::load_options(flags).pod_annotation_prefixes;
    Ok(options)
}

/// A Kubernetes client from `--kubeconfig` (else `KUBECONFIG`, `~/.kube/config` or the in-cluster
/// service account), `--server` overriding the URL. The request timeout bounds connecting and sending;
/// reads are not cut, because watches are long-lived streams that may stay quiet for minutes.
pub async fn kube_client(flags: &Flags) -> anyhow::Result<kube::Client> {
    let k = &flags.kube;
    let mut config = if k.kubeconfig.is_empty() {
        match kube::Config::infer().await {
            Ok(config) => config,
            Err(e) if !k.server.is_empty() => {
                tracing::debug!(error = %e, "no kubeconfig or in-cluster configuration; using --server alone");
                kube::Config::new(parse_server(&k.server)?)
            }
            Err(e) => return Err(e).context("cannot find a Kubernetes configuration (use --kubeconfig or --server)"),
        }
    } else {
        let path = PathBuf::from(&k.kubeconfig);
        let kubeconfig = kube::config::Kubeconfig::read_from(&path)
            .with_context(|| format!("cannot read --kubeconfig {}", path.display()))?;
        kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default())
            .await
            .with_context(|| format!("invalid --kubeconfig {}", path.display()))?
    };
    if !k.server.is_empty() {
        config.cluster_url = parse_server(&k.server)?;
    }
    let timeout = k.effective_request_timeout();
    let timeout = (!timeout.is_zero() && !flags.control.events).then_some(timeout);
    config.connect_timeout = timeout;
    config.write_timeout = timeout;
    kube::Client::try_from(config).context("cannot build the Kubernetes client")
}

fn parse_server<T>(server: &str) -> anyhow::Result<T>
where
    T: std::str::FromStr,
    T::Err: std::error::Error + Send + Sync + 'static,
{
    server
        .parse::<T>()
        .with_context(|| format!("--server {server:?} is not a URL"))
}

/// SIGTERM (the kubelet stopping the pod) and SIGINT (Ctrl-C) stop the loop after the sync in progress.
fn spawn_signal_handler(shutdown: CancellationToken) {
    tokio::spawn(async move {
        wait_for_signal().await;
        info!("received a termination signal; stopping after the sync in progress");
        shutdown.cancel();
    });
}

#[cfg(unix)]
async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot listen for SIGTERM; only Ctrl-C stops extdns");
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

#[cfg(not(unix))]
async fn wait_for_signal() {
    let _ = tokio::signal::ctrl_c().await;
}

fn record_types(values: &[String]) -> Vec<RecordType> {
    values.iter().map(|v| RecordType::from(v.as_str())).collect()
}

fn non_empty(s: &str) -> Option<String> {
    if s.is_empty() { None } else { Some(s.to_string()) }
}
