//! `--dns-provider-crds`: several providers in one deployment (docs/multi-provider.md).
//!
//! The manager (crate `extdns-provider-manager`) follows the DNSProvider and ClusterDNSProvider objects and
//! decides what each one's pipeline does; this module is what it cannot know: how one object's pipeline is
//! built from the deployment's command line with the object's flags applied ([`args`]): settings, provider,
//! registry and a [`Controller`](extdns_controller::Controller) of its own over the one set of informers,
//! shared through a [`ClusterFanout`].

pub mod args;
pub mod explain;
pub mod plan;
pub mod preview;

use std::sync::Arc;

use async_trait::async_trait;
use extdns_controller::{CancellationToken, EventSink, Metrics, start_metrics_server};
use extdns_informer::{ClusterFanout, LiveCluster};
use extdns_leader::Leadership;
use extdns_provider_manager::{BuildError, Built, Forbidden, ManagerConfig, PipelineFactory, PipelineRequest};
use futures::FutureExt as _;
use tracing::info;

use crate::events::KubeEvents;
use crate::providers::build_pooled_provider;
use crate::run::{REVISION, STATUS_BURST, STATUS_QPS, VERSION, kube_client, spawn_signal_handler};
use crate::settings::ProviderSettings;
use crate::settings::fleet::FleetSettings;
use extdns_kube_sinks::object_status::{KubeStatusApi, StatusWriter, TokenBucket};
use extdns_provider::budget::PacerPool;

/// How often the root's book is made again from the providers' (when one changed): a status a second
/// late is on time, and the look costs a counter read per provider.
const NAMES_MERGE_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Runs the providers of the provider objects until SIGTERM.
pub async fn run(fleet: &FleetSettings) -> anyhow::Result<()> {
    let shutdown = CancellationToken::new();
    spawn_signal_handler(shutdown.clone());
    let client = kube_client(&fleet.kube).await?;
    let pipeline = crate::wiring::build_pipeline(&fleet.sources)?;
    let live = extdns_wiring::live_options(&fleet.kube, &pipeline);
    let cluster = Arc::new(LiveCluster::start(client.clone(), &pipeline.watched_kinds(), live)?);
    let mut root = Metrics::for_providers(VERSION, REVISION);
    let forbidden = Forbidden::register(&mut root);
    let root = Arc::new(root);
    let election_stop = CancellationToken::new();
    let mut election_task = None;
    let mut leadership = Leadership::always();
    if let Some(leader) = &fleet.leader {
        let (election, lead) = crate::run::start_election(leader, &fleet.kube).await?;
        leadership = lead;
        election_task = Some(tokio::spawn(election.run(election_stop.clone())));
    }
    let overrides = fleet.kube.live.overrides.clone();
    let events = fleet
        .events
        .any()
        .then(|| Arc::new(KubeEvents::for_this_pod(client.clone(), overrides)) as Arc<dyn EventSink>);
    let namespace = crate::run::pod_namespace(&client);
    info!(
        version = VERSION,
        namespace = %namespace,
        leader_elect = fleet.leader.is_some(),
        "extdns starting: providers from DNSProvider and ClusterDNSProvider objects"
    );
    let server = start_metrics_server(&fleet.metrics_address, root.clone(), shutdown.clone()).await?;
    // Each provider's controller folds its names into its own book; `/summary` and the status writer read
    // the root's, their union.
    tokio::spawn(root.clone().merge_children_names(NAMES_MERGE_EVERY, shutdown.clone()));
    if fleet.status_updates {
        let api = KubeStatusApi::new(client.clone(), fleet.kube.live.overrides.clone(), cluster.clone());
        let lead = leadership.clone();
        let writer = StatusWriter::new(
            Arc::new(api),
            Arc::new(move || lead.is_leader()),
            TokenBucket::new(STATUS_QPS, STATUS_BURST),
        );
        tokio::spawn(writer.run(root.names().clone(), shutdown.clone()));
    }
    let factory = Arc::new(Factory {
        fleet: fleet.clone(),
        fanout: ClusterFanout::new(cluster.clone()),
        root: root.clone(),
        leadership: leadership.clone(),
        events,
        pool: Arc::new(PacerPool::new()),
    });
    let config = ManagerConfig {
        interval: fleet.interval,
        namespace,
        forbidden,
    };
    extdns_provider_manager::run(client, factory, root, leadership, config, shutdown).await;
    election_stop.cancel();
    if let Some(task) = election_task {
        let _ = task.await;
    }
    let _ = server.handle.await;
    Ok(())
}

/// Builds each provider object's pipeline as a Deployment with that provider would be built.
struct Factory {
    fleet: FleetSettings,
    fanout: Arc<ClusterFanout>,
    root: Arc<Metrics>,
    leadership: Leadership,
    events: Option<Arc<dyn EventSink>>,
    /// Every provider's account budget: the providers whose credentials name one account share it.
    pool: Arc<PacerPool>,
}

#[async_trait]
impl PipelineFactory for Factory {
    async fn build(&self, request: PipelineRequest<'_>) -> Result<Built, BuildError> {
        let PipelineRequest {
            object,
            credentials,
            observer,
            cancel,
        } = request;
        let invalid = |e: anyhow::Error| BuildError::invalid(crate::error_text(&e), e);
        let settings = args::provider_settings(&self.fleet, object, credentials)
            .map_err(|e| BuildError::invalid(e.to_string(), e))?;
        let mut metrics = self.root.child();
        let bound = crate::dns_server::bind_if_serving(&settings.provider, &mut metrics).map_err(invalid)?;
        let metrics = Arc::new(metrics);
        let (provider, server) = match bound {
            Some((provider, server)) => (provider, Some(server)),
            None => {
                let provider = build_pooled_provider(&settings.provider, Some(&metrics), &self.pool)
                    .await
                    .map_err(|e| BuildError::unavailable(e.to_string(), e))?;
                (provider, None)
            }
        };
        let local = matches!(settings.provider, ProviderSettings::DnsServer(_));
        let controller =
            crate::run::controller_with_cluster(&settings, self.fanout.subscribe(), provider, metrics.clone())
                .map_err(|e| invalid(crate::run::flagged(e)))?;
        // Each name's outcome names the provider object that took it (`team-a/public`).
        let mut controller = controller
            .with_leadership(self.leadership.clone())
            .with_sync_observer(observer)
            .with_provider_name(object.id.label());
        if local {
            controller = controller.with_local_provider();
        }
        if let Some(sink) = &self.events {
            controller = controller.with_events(self.fleet.events, sink.clone());
        }
        // The built-in DNS server answers while the controller runs; a panic in either ends both.
        let run = async move {
            let serving = server.map(|s| s.run(cancel.clone()));
            let syncing = controller.run(cancel.clone());
            match serving {
                Some(serving) => {
                    tokio::join!(serving, syncing);
                }
                None => syncing.await,
            }
        };
        Ok(Built {
            run: run.boxed(),
            metrics,
        })
    }
}

#[cfg(test)]
mod tests;
