//! The one dry-run sync `extdns plan` and `extdns explain` both start from: the controller built exactly as
//! the default command builds it (same flags, cluster view, sources, provider and registry), run once with
//! `--dry-run` forced on, so ownership, the policy, the hold of failing objects' records and the deletion
//! guard apply as they would in a sync, and nothing is written (the dry run is enforced in the controller,
//! above every provider).
//!
//! Besides the sync's report it keeps what explain needs and the report does not carry: the outcome of
//! every name ([`NameStatuses`], the same model the status writers and `/summary` read) and the records
//! the registry read, with their owners; and what `extdns plan` shows of shared names, previewed from that
//! same read (the zones are read once).

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use extdns_controller::{CancellationToken, Metrics, NameStatuses, SyncReport};
use extdns_endpoint::{Change, DomainFilter, Endpoint};
use extdns_provider::{ChangeFailure, Provider};
use extdns_registry::shared::{SharedName, SharedRegistry};
use extdns_registry::{Registry, RegistryError, Snapshot, Written};

use crate::run::{ONCE_SYNC_TIMEOUT, REVISION, VERSION, flagged};
use crate::settings::Settings;

/// What one dry-run sync saw and would do.
#[derive(Debug)]
pub struct DryRun {
    /// The changes the sync would make (what `extdns plan` prints).
    pub report: SyncReport,
    /// Every object's names and where each stands.
    pub names: Arc<NameStatuses>,
    /// The records the registry read, with their ownership labels (the registry's own records hidden).
    pub records: Vec<Endpoint>,
    /// The provider's zones (its domain filter).
    pub zones: DomainFilter,
    /// The shared records the read found, each owner's contribution and what pruning would do (empty
    /// with a registry that keeps none).
    pub shared: Vec<SharedName>,
}

/// One dry-run sync with `provider`, as the settings say otherwise.
pub async fn dry_run(settings: &Settings, provider: Arc<dyn Provider>) -> anyhow::Result<DryRun> {
    dry_run_as(settings, provider, settings.provider.name()).await
}

/// [`dry_run`], the names' outcomes saying `label` published them: a provider object's label
/// (`team-a/public`) with `--dns-provider-crds`, as its running pipeline says.
pub async fn dry_run_as(settings: &Settings, provider: Arc<dyn Provider>, label: &str) -> anyhow::Result<DryRun> {
    let mut settings = settings.clone();
    settings.controller.dry_run = true;
    let metrics = Arc::new(Metrics::new(VERSION, REVISION));
    let previewer = crate::plan_shared::previewer(&settings.registry, provider.clone())?;
    let registry = extdns_wiring::registry_for(&settings, provider, &metrics)
        .await
        .map_err(flagged)?;
    dry_run_on(&settings, registry, previewer, label, metrics).await
}

/// [`dry_run_as`] over a registry already built (the tests' registries that fail where a real one rarely
/// does), `metrics` the ones it was built with.
pub(crate) async fn dry_run_on(
    settings: &Settings,
    registry: Arc<dyn Registry>,
    previewer: Option<SharedRegistry>,
    label: &str,
    metrics: Arc<Metrics>,
) -> anyhow::Result<DryRun> {
    let mut settings = settings.clone();
    settings.controller.dry_run = true;
    let recording = Arc::new(Recording::new(registry, previewer));
    let controller = extdns_wiring::controller_with_registry(&settings, recording.clone(), metrics.clone())
        .await
        .map_err(flagged)?
        .with_provider_name(label);
    let report = controller
        .run_once_when_synced(ONCE_SYNC_TIMEOUT, &CancellationToken::new())
        .await?;
    Ok(DryRun {
        report,
        names: metrics.names().latest(),
        records: recording.take(),
        zones: recording.domain_filter(),
        shared: recording.take_shared(),
    })
}

/// A registry that keeps a copy of the records it read: the plan's own view of the zone, so what explain
/// says about a name's owner, and what plan shows of shared names, is what the sync decided from, with no
/// second read.
struct Recording {
    inner: Arc<dyn Registry>,
    read: Mutex<Vec<Endpoint>>,
    /// Previews the shared names of each read (the shared layer over the same provider and settings as
    /// `inner`, which it reads nothing through); `None` with a registry that keeps none.
    previewer: Option<SharedRegistry>,
    shared: Mutex<Vec<SharedName>>,
}

impl Recording {
    fn new(inner: Arc<dyn Registry>, previewer: Option<SharedRegistry>) -> Self {
        Recording {
            inner,
            read: Mutex::new(Vec::new()),
            previewer,
            shared: Mutex::new(Vec::new()),
        }
    }

    /// The records of the last read.
    fn take(&self) -> Vec<Endpoint> {
        std::mem::take(&mut *self.read.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// The shared names of the last read.
    fn take_shared(&self) -> Vec<SharedName> {
        std::mem::take(&mut *self.shared.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

#[async_trait]
impl Registry for Recording {
    async fn records(&self) -> Result<Snapshot, RegistryError> {
        let snapshot = self.inner.records().await?;
        *self.read.lock().unwrap_or_else(|p| p.into_inner()) = snapshot.records.to_vec();
        if let Some(previewer) = &self.previewer {
            *self.shared.lock().unwrap_or_else(|p| p.into_inner()) = previewer.preview(&snapshot);
        }
        Ok(snapshot)
    }

    async fn apply(&self, snapshot: &Snapshot, changes: &[Change]) -> Result<Written, RegistryError> {
        // Never reached in a dry run (the controller sends nothing); delegated all the same, so this stays
        // the registry it wraps.
        self.inner.apply(snapshot, changes).await
    }

    fn fold_applied(&self, snapshot: &mut Snapshot, changes: &[Change], written: Written) -> bool {
        self.inner.fold_applied(snapshot, changes, written)
    }

    async fn adjust_endpoints(&self, endpoints: Vec<Endpoint>) -> Result<Vec<Endpoint>, RegistryError> {
        self.inner.adjust_endpoints(endpoints).await
    }

    fn domain_filter(&self) -> DomainFilter {
        self.inner.domain_filter()
    }

    async fn maintain(&self, snapshot: &mut Snapshot) -> Result<bool, RegistryError> {
        self.inner.maintain(snapshot).await
    }

    fn withheld(&self, snapshot: &Snapshot, changes: &[Change]) -> Result<Vec<ChangeFailure>, RegistryError> {
        self.inner.withheld(snapshot, changes)
    }
}
