//! Shared names (`--shared-names`, docs/shared-names.md): one record several owners publish together, each
//! owner (`--txt-owner-id`, one per cluster) contributing its own targets. [`SharedRegistry`] sits over the
//! TXT registry: names not marked shared go through it untouched; a shared name's record is the union of
//! the live owners' contributions, each held in the owner's own contribution record, and each owner proves
//! itself alive with one heartbeat per domain, so a dead owner's targets are pruned by the others without a
//! write per name. Each contribution names its unhealthy targets apart ([`health`]), so every owner
//! publishes the same set: the healthy targets, or all of them when none is healthy (fail open).

mod format;
pub mod health;
mod heartbeat;
mod maintain;
mod preview;
#[cfg(test)]
mod tests;
mod view;
mod write;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use extdns_endpoint::{Change, DomainFilter, Endpoint, shared};
use extdns_provider::{Provider, ProviderError, ReadState, zone::Placement};

pub use format::{Contribution, Format, FormatError, Heartbeat, SharedValue};
pub use preview::{OwnerShare, SharedName};
use view::SharedView;

use crate::{Ownership, Registry, RegistryError, Snapshot, Written};

/// The shared names' settings (`--shared-owner-ttl`, the heartbeat period).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SharedConfig {
    /// An owner whose heartbeat is older than this is dead: its targets are pruned (`--shared-owner-ttl`).
    pub owner_ttl: Duration,
    /// How often the heartbeat is written again (`--interval`): a heartbeat younger than this is left as is.
    pub heartbeat_every: Duration,
}

impl SharedConfig {
    /// A TTL of `owner_ttl` with a heartbeat every `heartbeat_every`, unchecked ([`SharedConfig::check`]).
    pub fn new(owner_ttl: Duration, heartbeat_every: Duration) -> Self {
        SharedConfig {
            owner_ttl,
            heartbeat_every,
        }
    }

    /// Refuses a TTL that would prune a live owner between two of its heartbeats (under three periods).
    pub fn check(&self) -> Result<(), SharedConfigError> {
        if self.owner_ttl < self.heartbeat_every * 3 {
            return Err(SharedConfigError::TtlTooShort {
                ttl: self.owner_ttl,
                every: self.heartbeat_every,
            });
        }
        Ok(())
    }
}

impl Default for SharedConfig {
    /// A ten-minute TTL over external-dns's one-minute interval: ten missed heartbeats before pruning.
    fn default() -> Self {
        SharedConfig {
            owner_ttl: Duration::from_secs(600),
            heartbeat_every: Duration::from_secs(60),
        }
    }
}

/// Why the shared-name settings cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SharedConfigError {
    /// The TTL would prune a live owner between two of its heartbeats.
    #[error(
        "--shared-owner-ttl ({ttl:?}) must be at least three heartbeat periods (--interval, {every:?}): a live \
         owner would be pruned between two heartbeats"
    )]
    TtlTooShort {
        /// The TTL given.
        ttl: Duration,
        /// The heartbeat period.
        every: Duration,
    },
    /// The owner id cannot be written into the records.
    #[error(transparent)]
    Format(#[from] FormatError),
}

/// Counters of what the shared names did, for the metrics (`extdns_shared_*`).
#[derive(Debug, Default)]
pub struct SharedStats {
    owners_pruned: AtomicU64,
    conflicts: AtomicU64,
    heartbeats_written: AtomicU64,
}

impl SharedStats {
    /// Dead owners pruned from a shared record (one per owner and record).
    pub fn owners_pruned(&self) -> u64 {
        self.owners_pruned.load(Ordering::Relaxed)
    }

    /// Conflicts found (a plain owner beside shared ones, two processes under our owner id), one per name
    /// and sync.
    pub fn conflicts(&self) -> u64 {
        self.conflicts.load(Ordering::Relaxed)
    }

    /// Heartbeats written.
    pub fn heartbeats_written(&self) -> u64 {
        self.heartbeats_written.load(Ordering::Relaxed)
    }

    fn add(&self, what: SharedCount, n: u64) {
        let counter = match what {
            SharedCount::OwnersPruned => &self.owners_pruned,
            SharedCount::Conflicts => &self.conflicts,
            SharedCount::HeartbeatsWritten => &self.heartbeats_written,
        };
        counter.fetch_add(n, Ordering::Relaxed);
    }
}

/// What [`SharedMetrics`] counts, each with one label value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SharedCount {
    /// Dead owners pruned from a shared record (`extdns_shared_owners_pruned_total`), by the pruned
    /// owner's id.
    OwnersPruned,
    /// Conflicts refused (`extdns_shared_conflicts_total`), by kind: `plain_owner` (a plain and a shared
    /// owner on one name) or `instance` (two processes under one owner id).
    Conflicts,
    /// Heartbeats written (`extdns_shared_heartbeats_written_total`), by domain.
    HeartbeatsWritten,
}

/// Where the shared names' counts go besides [`SharedStats`] (the controller's Prometheus metrics; the
/// registry depends on no metrics library).
pub trait SharedMetrics: Send + Sync {
    /// `n` more of `what`, for `label` (what [`SharedCount`] says each is labelled by).
    fn count(&self, what: SharedCount, label: &str, n: u64);
}

/// The clock in Unix seconds; a function so tests can move it.
pub type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// The system clock in Unix seconds.
pub fn system_clock() -> Clock {
    Arc::new(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    })
}

/// Owners kept without a heartbeat that were already logged, per domain and owner, so the info line comes once,
/// not every interval. Only the log reads it: no verdict depends on what an earlier call saw (the design
/// forbids state between a read and a write).
#[derive(Debug, Default)]
struct Reported {
    missing_heartbeat: BTreeSet<(String, String)>,
}

/// The shared-name layer over a registry (the TXT registry): see the module documentation.
pub struct SharedRegistry {
    inner: Arc<dyn Registry>,
    provider: Arc<dyn Provider>,
    owner: String,
    format: Format,
    config: SharedConfig,
    /// This process's instance id, in its heartbeats.
    instance: String,
    clock: Clock,
    reported: Mutex<Reported>,
    stats: Arc<SharedStats>,
    metrics: Option<Arc<dyn SharedMetrics>>,
}

impl std::fmt::Debug for SharedRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedRegistry")
            .field("owner", &self.owner)
            .field("instance", &self.instance)
            .finish_non_exhaustive()
    }
}

impl SharedRegistry {
    /// Shared names over `inner` (the TXT registry over `provider`, with `ownership`'s settings).
    pub fn new(
        inner: Arc<dyn Registry>,
        provider: Arc<dyn Provider>,
        ownership: &Ownership,
        config: SharedConfig,
    ) -> Result<SharedRegistry, SharedConfigError> {
        config.check()?;
        Format::check_owner(ownership.owner_id())?;
        Ok(SharedRegistry {
            inner,
            provider,
            owner: ownership.owner_id().to_string(),
            format: Format::new(
                ownership.mapper().clone(),
                ownership.key().cloned(),
                ownership.encrypts(),
            ),
            config,
            instance: new_instance_id(),
            clock: system_clock(),
            reported: Mutex::new(Reported::default()),
            stats: Arc::default(),
            metrics: None,
        })
    }

    /// The same with another clock (tests) and instance id.
    pub fn with_clock(mut self, clock: Clock, instance: impl Into<String>) -> Self {
        self.clock = clock;
        self.instance = instance.into();
        self
    }

    /// The same, counting into `metrics` too.
    pub fn with_metrics(mut self, metrics: Arc<dyn SharedMetrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// The counters.
    pub fn stats(&self) -> Arc<SharedStats> {
        self.stats.clone()
    }

    /// Counts `n` more of `what` for `label`.
    fn count(&self, what: SharedCount, label: &str, n: u64) {
        if n == 0 {
            return;
        }
        self.stats.add(what, n);
        if let Some(m) = &self.metrics {
            m.count(what, label, n);
        }
    }

    fn reported(&self) -> MutexGuard<'_, Reported> {
        self.reported.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The domain whose heartbeat vouches for owners of `name`: its parent when the provider puts the parent
    /// in the same zone (or cannot say), else the name itself (a zone's apex). Every owner computes the same
    /// domain from the same zones, so one heartbeat per owner covers every shared name under one parent.
    fn domain_of(&self, read: &ReadState, name: &str) -> String {
        let name = name.to_ascii_lowercase();
        let Some((_, parent)) = name.split_once('.') else {
            return name;
        };
        if !parent.contains('.') {
            return name;
        }
        match (
            self.provider.placement(read, &name),
            self.provider.placement(read, parent),
        ) {
            (Placement::Unknown, _) => parent.to_string(),
            (Placement::Zone(a), Placement::Zone(b)) if a == b => parent.to_string(),
            _ => name,
        }
    }
}

/// A random per-process id: two processes under one owner id tell themselves apart by it.
fn new_instance_id() -> String {
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        // No randomness: the process id and start time still differ between two processes.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        return format!("{:x}{:x}", std::process::id(), t);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[async_trait]
impl Registry for SharedRegistry {
    async fn records(&self) -> Result<Snapshot, RegistryError> {
        let mut snapshot = self.inner.records().await?;
        let records = std::mem::take(&mut snapshot.records).into_vec();
        let (mut view, plan) = SharedView::extract(records, &self.format, &self.owner);
        view.judge_instances(&self.owner, &self.instance);
        snapshot.records = plan.into();
        snapshot.add_registry_state(view);
        Ok(snapshot)
    }

    /// The shared changes the split withholds (a plain owner beside the shared ones), and the plain
    /// changes the TXT registry under it would.
    fn withheld(
        &self,
        snapshot: &Snapshot,
        changes: &[Change],
    ) -> Result<Vec<extdns_provider::ChangeFailure>, RegistryError> {
        let Some(view) = snapshot.registry_state::<SharedView>() else {
            return self.inner.withheld(snapshot, changes);
        };
        let split = self.split(view, snapshot.provider_state(), changes);
        let mut withheld = split.withheld;
        withheld.extend(self.inner.withheld(snapshot, &split.plain)?);
        Ok(withheld)
    }

    /// Writes the plain changes through the TXT registry, then the shared ones. Each change is reported by
    /// what happened to it: a partial failure of either part names the changes that failed, each with the
    /// kind and message the provider gave it, and every other change was written.
    async fn apply(&self, snapshot: &Snapshot, changes: &[Change]) -> Result<Written, RegistryError> {
        let Some(view) = snapshot.registry_state::<SharedView>() else {
            return self.inner.apply(snapshot, changes).await;
        };
        let split = self.split(view, snapshot.provider_state(), changes);
        let mut failed = Vec::new();
        let mut written = Written::default();
        if !split.plain.is_empty() {
            match self.inner.apply(snapshot, &split.plain).await {
                Ok(w) => written = w,
                // Its failures name the plain changes that failed (its refusals among them).
                Err(RegistryError::Provider(ProviderError::Partial { failures })) => failed = failures,
                Err(error) => return Err(error),
            }
        }
        let wrote_plain = !split.plain.is_empty();
        written.withheld.extend(split.withheld);
        let shared = match self.write_shared(snapshot, view, &split.shared).await {
            Ok(shared) => shared,
            // The plain changes are in the zone: report them written and the shared ones failed.
            Err(error) if wrote_plain => write::SharedWrite {
                failed: split
                    .shared
                    .iter()
                    .map(|c| {
                        extdns_provider::ChangeFailure::new(
                            c.endpoint(),
                            extdns_provider::FailureKind::Transient,
                            error.to_string(),
                        )
                    })
                    .collect(),
                ..write::SharedWrite::default()
            },
            Err(error) => return Err(error),
        };
        written.withheld.extend(shared.withheld);
        if let Some(whole) = shared.whole
            && !wrote_plain
            && written.withheld.is_empty()
        {
            // Nothing at all was written: the call's own error, as a provider reports it.
            return Err(whole.into());
        }
        failed.extend(shared.failed);
        if failed.is_empty() {
            return Ok(written);
        }
        failed.append(&mut written.withheld);
        Err(ProviderError::Partial { failures: failed }.into())
    }

    fn fold_applied(&self, snapshot: &mut Snapshot, changes: &[Change], written: Written) -> bool {
        let Some(view) = snapshot.registry_state::<SharedView>() else {
            return self.inner.fold_applied(snapshot, changes, written);
        };
        // A write to a shared name changed what the others' contributions and the union look like: read
        // again rather than fold it.
        if changes.iter().any(|c| touches_shared(view, c)) {
            return false;
        }
        self.inner.fold_applied(snapshot, changes, written)
    }

    async fn adjust_endpoints(&self, mut endpoints: Vec<Endpoint>) -> Result<Vec<Endpoint>, RegistryError> {
        // The provider sees the records as it stores them, without the mark and the health verdict, which
        // come back after (a provider may drop properties it does not know).
        let mut marked = std::collections::HashMap::new();
        for e in &mut endpoints {
            let unhealthy = e.provider_specific.remove(health::UNHEALTHY);
            if shared::unmark(e) {
                marked.insert(view::key_of(e), unhealthy);
            }
        }
        let mut adjusted = self.inner.adjust_endpoints(endpoints).await?;
        if !marked.is_empty() {
            for e in &mut adjusted {
                if !e.set_identifier.is_empty() {
                    continue;
                }
                if let Some(unhealthy) = marked.get(&view::key_of(e)) {
                    shared::mark(e);
                    if let Some(list) = unhealthy {
                        e.provider_specific.set(health::UNHEALTHY, list.clone());
                    }
                }
            }
        }
        Ok(adjusted)
    }

    fn domain_filter(&self) -> DomainFilter {
        self.inner.domain_filter()
    }

    async fn maintain(&self, snapshot: &mut Snapshot) -> Result<bool, RegistryError> {
        let wrote = self.keep_alive_and_prune(snapshot).await?;
        if wrote && !self.provider.read_state_outlives_writes() {
            // The read's state (record ids, sets) no longer describes the records just written.
            *snapshot = self.records().await?;
        }
        Ok(wrote)
    }
}

/// Whether `c` writes a shared name, or a plain record at a name the zone holds shared.
fn touches_shared(view: &SharedView, c: &Change) -> bool {
    shared::is_shared(c.endpoint())
        || c.previous().is_some_and(shared::is_shared)
        || view.contributions.contains_key(&view::key_of(c.endpoint()))
}
