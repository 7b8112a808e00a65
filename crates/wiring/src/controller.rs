//! [`Settings`]: everything the controller reads, typed, and the controller assembled from it: the cluster
//! view the sources read, the source pipeline, the registry over the provider and the loop's
//! configuration.

use std::path::PathBuf;
use std::sync::Arc;

use extdns_controller::{Controller, ControllerConfig, EventsConfig, HealthTable, Metrics};
use extdns_informer::client::{ClientConfig, ClientError};
use extdns_informer::manifests::ManifestError;
use extdns_informer::{Cluster, InformerError, LiveCluster, LiveOptions, ManifestCluster, ResourceKind};
use extdns_leader::LeaseTiming;
use extdns_provider::Provider;
use extdns_provider::http::{Observe, Observer};
use extdns_registry::{
    MetadataRegistry, NoopRegistry, OwnershipStore, Registry, SharedRegistry, TxtRegistry, TxtRegistryConfig, metadata,
    shared::SharedMetrics,
};
use extdns_registry_crd::{CrdRegistry, CrdRegistryConfig};
use extdns_registry_dynamodb::{DynamoDbConfig, DynamoDbRegistry};
use extdns_source::Pipeline;
use extdns_source::resolver::ResolveError;

use crate::{ProviderSettings, SourceSettings, build_pipeline, default_resolver};

/// The controller: the sources, the provider, the registry, the loop and the cluster view. Filled by the
/// binary from the flags, every value checked there.
#[derive(Debug, Clone)]
pub struct Settings {
    /// What the sources and the pipeline read.
    pub sources: SourceSettings,
    /// The provider the records live in.
    pub provider: ProviderSettings,
    /// How ownership of the records is kept.
    pub registry: RegistrySettings,
    /// The loop's knobs and the plan's configuration, whose owner id is the registry's.
    pub controller: ControllerConfig,
    /// Where the objects come from: the API server or manifest files.
    pub cluster: ClusterSettings,
    /// One sync, then exit.
    pub once: bool,
    /// Where `/metrics` and `/healthz` are served.
    pub metrics_address: String,
    /// The Lease the replicas share; `None` for a single replica.
    pub leader: Option<LeaderSettings>,
    /// Which Kubernetes Events to emit.
    pub events: EventsConfig,
    /// `--status-updates`: write each object's names' outcome onto it (the API server only).
    pub status_updates: bool,
}

/// The registry, with the validated ownership for the TXT one.
#[derive(Debug, Clone)]
pub enum RegistrySettings {
    /// `txt`: ownership in TXT records beside each record.
    Txt(Box<TxtRegistryConfig>),
    /// `noop`: every record is treated as owned.
    Noop,
    /// `crd`: ownership in DNSRecord objects on the API server; an empty namespace is the controller's own,
    /// found when the client is built.
    Crd(CrdRegistryConfig),
    /// `dynamodb`: ownership labels in a DynamoDB table.
    Dynamodb(Box<DynamoDbConfig>),
    /// An external-dns registry extdns does not implement, by its name; refused when built.
    Unsupported(&'static str),
}

impl RegistrySettings {
    /// The owner id the registry writes and the plan reads records as; empty for a registry that keeps no
    /// ownership.
    pub fn owner_id(&self) -> &str {
        match self {
            RegistrySettings::Txt(config) => config.ownership.owner_id(),
            RegistrySettings::Crd(config) => &config.owner_id,
            RegistrySettings::Dynamodb(config) => config.ownership.owner_id(),
            RegistrySettings::Noop | RegistrySettings::Unsupported(_) => "",
        }
    }

    /// external-dns's name of the registry.
    pub fn name(&self) -> &'static str {
        match self {
            RegistrySettings::Txt(_) => "txt",
            RegistrySettings::Noop => "noop",
            RegistrySettings::Crd(_) => "crd",
            RegistrySettings::Dynamodb(_) => "dynamodb",
            RegistrySettings::Unsupported(name) => name,
        }
    }
}

/// Where the controller reads the cluster from.
#[derive(Debug, Clone)]
pub enum ClusterSettings {
    /// Objects loaded from files (read with [`SourceSettings::load_options`]).
    Manifests(Vec<PathBuf>),
    /// Objects watched on the API server.
    ApiServer(Box<KubeSettings>),
}

/// The Kubernetes client and what the live view watches.
#[derive(Debug, Clone)]
pub struct KubeSettings {
    /// The kubeconfig, the server and the request timeout.
    pub client: ClientConfig,
    /// What the live view watches: namespaces, selectors, kept fields.
    pub live: LiveOptions,
}

/// Which Lease the replicas share and how its timing goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderSettings {
    /// Replicas that share the name elect one leader.
    pub name: String,
    /// `None`: the pod's own namespace, found when the controller starts.
    pub namespace: Option<String>,
    /// How long a lease lasts and how often it is renewed and retried.
    pub timing: LeaseTiming,
}

/// Why the controller could not be assembled.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Load balancer hostnames are to be looked up and the system has no resolver configuration.
    #[error("no resolver for load balancer hostnames: {0}")]
    Resolver(#[source] ResolveError),
    /// The registry cannot be built.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// No Kubernetes client for the settings.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The manifest files cannot be read.
    #[error(transparent)]
    Manifests(#[from] ManifestError),
    /// The live view cannot be started.
    #[error(transparent)]
    Informer(#[from] InformerError),
}

/// Why the registry cannot be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// The DynamoDB registry's configuration is refused.
    #[error(transparent)]
    Dynamodb(#[from] extdns_registry_dynamodb::ConfigError),
    /// `--txt-ownership=metadata` over a provider that keeps no metadata on its records.
    #[error(transparent)]
    Metadata(#[from] extdns_registry::RegistryError),
    /// The CRD registry needs the controller's Kubernetes client ([`build_controller`]).
    #[error(
        "the crd registry keeps ownership in DNSRecord objects: it is built with the controller's Kubernetes client"
    )]
    NeedsClient,
    /// The CRD registry needs the API server, and the objects come from manifest files.
    #[error("the crd registry keeps ownership in DNSRecord objects on the API server; manifest files have none")]
    NoApiServer,
    /// external-dns has this registry; extdns does not.
    #[error("registry {0} is not supported by extdns yet")]
    Unsupported(&'static str),
    /// The shared names' settings or owner id are refused (docs/shared-names.md).
    #[error(transparent)]
    Shared(#[from] extdns_registry::shared::SharedConfigError),
}

/// Everything but the provider: the source pipeline, the cluster view it reads, the registry and the loop's
/// configuration.
pub async fn build_controller(
    settings: &Settings,
    provider: Arc<dyn Provider>,
    metrics: Arc<Metrics>,
) -> Result<Controller, Error> {
    let registry = registry_for(settings, provider, &metrics).await?;
    controller_with_registry(settings, registry, metrics).await
}

/// [`build_controller`] over a given registry: `extdns explain` wraps the one [`registry_for`] builds to
/// keep the records the sync read.
pub async fn controller_with_registry(
    settings: &Settings,
    registry: Arc<dyn Registry>,
    metrics: Arc<Metrics>,
) -> Result<Controller, Error> {
    let pipeline = pipeline(settings)?;
    let cluster = build_cluster(settings, &pipeline).await?;
    Ok(controller_over(settings, pipeline, cluster, registry, metrics))
}

/// The registry the settings name over `provider`, the CRD one included (with a Kubernetes client of its
/// own), as [`build_controller`] builds it.
pub async fn registry_for(
    settings: &Settings,
    provider: Arc<dyn Provider>,
    metrics: &Arc<Metrics>,
) -> Result<Arc<dyn Registry>, Error> {
    match &settings.registry {
        RegistrySettings::Crd(config) => crd_registry(settings, config, provider).await,
        other => Ok(build_registry(other, provider, metrics)?),
    }
}

/// [`build_controller`] over a given cluster view (tests use a live view fed by hand, or one that never
/// syncs; each provider object's pipeline shares one).
pub fn controller_with_cluster(
    settings: &Settings,
    cluster: Arc<dyn Cluster>,
    provider: Arc<dyn Provider>,
    metrics: Arc<Metrics>,
) -> Result<Controller, Error> {
    controller_with_pipeline(settings, pipeline(settings)?, cluster, provider, metrics)
}

/// The controller over a given pipeline and cluster view (tests add sources of their own, e.g. one that fails).
pub fn controller_with_pipeline(
    settings: &Settings,
    pipeline: Pipeline,
    cluster: Arc<dyn Cluster>,
    provider: Arc<dyn Provider>,
    metrics: Arc<Metrics>,
) -> Result<Controller, Error> {
    let registry = build_registry(&settings.registry, provider, &metrics)?;
    Ok(controller_over(settings, pipeline, cluster, registry, metrics))
}

/// The kinds the enabled sources read (what the live view watches).
pub fn watched_kinds(settings: &Settings) -> Result<Vec<ResourceKind>, Error> {
    Ok(pipeline(settings)?.watched_kinds())
}

/// The source pipeline with the resolver the settings ask for.
fn pipeline(settings: &Settings) -> Result<Pipeline, Error> {
    let resolver = default_resolver(&settings.sources).map_err(Error::Resolver)?;
    Ok(build_pipeline(&settings.sources, resolver))
}

fn controller_over(
    settings: &Settings,
    pipeline: Pipeline,
    cluster: Arc<dyn Cluster>,
    registry: Arc<dyn Registry>,
    metrics: Arc<Metrics>,
) -> Controller {
    let health = HealthTable::new(Some(metrics.clone()));
    let controller = Controller::new(
        cluster,
        Arc::new(pipeline),
        registry,
        settings.controller.clone(),
        metrics,
    );
    // Shared names' health checks dial their targets: a dry run (and `extdns plan`, one) dials nothing.
    if settings.controller.dry_run {
        controller
    } else {
        controller.with_health(health)
    }
}

/// The registry over the provider; a registry with requests of its own (DynamoDB) reports them to `metrics`
/// (`external_dns_http_request_duration_seconds`, as external-dns's AWS clients do).
pub fn build_registry(
    settings: &RegistrySettings,
    provider: Arc<dyn Provider>,
    metrics: &Arc<Metrics>,
) -> Result<Arc<dyn Registry>, RegistryError> {
    match settings {
        // --txt-ownership=metadata (issue 50). A metadata store over a provider that keeps none is refused
        // by `MetadataRegistry::new`. Shared names need TXT ownership (docs/shared-names.md).
        RegistrySettings::Txt(config) if config.store == OwnershipStore::Metadata => {
            Ok(Arc::new(MetadataRegistry::new(provider, (**config).clone())?))
        }
        // Shared names (issue 47) over the TXT registry: names not marked shared pass through untouched.
        RegistrySettings::Txt(config) => Ok(Arc::new(
            shared_registry(config, provider)?.with_metrics(metrics.clone() as Arc<dyn SharedMetrics>),
        )),
        RegistrySettings::Noop => Ok(Arc::new(NoopRegistry::new(provider))),
        RegistrySettings::Dynamodb(config) => {
            let mut config = (**config).clone();
            config.client.observer = Observer(Some(metrics.request_durations() as Arc<dyn Observe>));
            Ok(Arc::new(DynamoDbRegistry::new(provider, config)?))
        }
        RegistrySettings::Crd(_) => Err(RegistryError::NeedsClient),
        RegistrySettings::Unsupported(name) => Err(RegistryError::Unsupported(name)),
    }
}

/// The TXT registry over `provider` with the shared-name layer over it (issue 47, docs/shared-names.md), as
/// the controller runs it and `extdns plan` previews its shared names.
pub fn shared_registry(
    config: &TxtRegistryConfig,
    provider: Arc<dyn Provider>,
) -> Result<SharedRegistry, RegistryError> {
    // Where the provider keeps metadata the metadata registry serves TXT ownership too, migrating records
    // owned through their metadata back to TXT records (issue 50); shared names lie over it just the same.
    let txt: Arc<dyn Registry> = if metadata::keeps_metadata(provider.as_ref()) {
        Arc::new(MetadataRegistry::new(provider.clone(), config.clone())?)
    } else {
        Arc::new(TxtRegistry::new(provider.clone(), config.clone()))
    };
    Ok(SharedRegistry::new(
        txt,
        provider,
        &config.ownership,
        config.shared.clone(),
    )?)
}

/// The CRD registry, with a client of its own (the watches' connections stay theirs) in its configured
/// namespace, else the controller's namespace as external-dns finds it.
async fn crd_registry(
    settings: &Settings,
    config: &CrdRegistryConfig,
    provider: Arc<dyn Provider>,
) -> Result<Arc<dyn Registry>, Error> {
    let ClusterSettings::ApiServer(kube) = &settings.cluster else {
        return Err(RegistryError::NoApiServer.into());
    };
    let client = kube_client(kube).await?;
    Ok(Arc::new(CrdRegistry::in_controller_namespace(
        client,
        provider,
        config.clone(),
    )))
}

/// The cluster view: the manifest files when given, else the API server (kubeconfig or in-cluster).
pub async fn build_cluster(settings: &Settings, pipeline: &Pipeline) -> Result<Arc<dyn Cluster>, Error> {
    match &settings.cluster {
        ClusterSettings::Manifests(paths) => {
            // Lenient and read again each sync: the files act as a source of objects (the preview stays strict).
            let cluster = ManifestCluster::load(paths.clone(), settings.sources.load_options.clone())?;
            Ok(Arc::new(cluster))
        }
        ClusterSettings::ApiServer(kube) => {
            let client = kube_client(kube).await?;
            let cluster = LiveCluster::start(client, &pipeline.watched_kinds(), live_options(kube, pipeline))?;
            Ok(Arc::new(cluster))
        }
    }
}

/// What the live view of `pipeline`'s sources watches beyond the kinds: the settings' options, and the kinds
/// a source reads whole though the kind table keeps them on demand (`Source::reads_whole`: the pod source's
/// Pods), so the need is the sources' declaration, never a kind named here.
pub fn live_options(kube: &KubeSettings, pipeline: &Pipeline) -> LiveOptions {
    let mut live = kube.live.clone();
    live.read_whole = pipeline.reads_whole();
    live
}

/// The Kubernetes client of the settings (extdns-informer's, which every part talking to the API server
/// shares).
pub async fn kube_client(settings: &KubeSettings) -> Result<kube::Client, ClientError> {
    extdns_informer::client::connect(&settings.client).await
}
