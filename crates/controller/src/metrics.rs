//! The Prometheus metrics, under external-dns's exact names so existing dashboards and alerts keep working.
//!
//! prometheus-client appends `_total` to counters itself, so the three real counters are registered without
//! it (`controller_no_op_runs`, `registry_errors`, `source_errors`) and come out as external-dns's names.
//! external-dns's `registry_endpoints_total` and `source_endpoints_total` are gauges whose names happen to
//! end in `_total`; they are registered verbatim.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

use extdns_endpoint::{Endpoint, RecordType};
use extdns_informer::{ResourceKind, Unavailable};
use extdns_plan::OwnerMismatch;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::exposition::{self, Format, Writer};
use crate::name_status::{NameBook, ObjectNames, Reason};
use crate::process::Process;
use crate::requests::RequestDurations;

/// The prefix of every metric external-dns has too, under its names.
pub const PREFIX: &str = "external_dns";
/// The prefix of the metrics only extdns has (its safety features), kept apart from external-dns's names.
pub const EXTDNS_PREFIX: &str = "extdns";

/// What a [`Metrics`] registers, by what it counts for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// One process, one controller (flag mode): every family.
    Process,
    /// The process of `--dns-provider-crds`: only the process's families (build info, leadership); the
    /// syncs are its children's.
    ProvidersRoot,
    /// One provider object's controller: only the per-sync families, scraped through its root.
    Provider,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ZoneLabel {
    zone: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SyncKindLabel {
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SourceNameLabel {
    source: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UnavailableLabels {
    kind: String,
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RecordTypeLabel {
    record_type: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SourceLabels {
    record_type: String,
    source_type: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OwnerMismatchLabels {
    record_type: String,
    owner: String,
    foreign_owner: String,
    domain: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildInfoLabels {
    version: String,
    revision: String,
    os: String,
    arch: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RecordStateLabels {
    state: &'static str,
    kind: &'static str,
}

type FloatGauge = Gauge<f64, AtomicU64>;

/// The webhook provider's calls external-dns counts (`external_dns_webhook_provider_<call>_{requests,errors}_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WebhookCall {
    /// `GET /records`.
    Records,
    /// `POST /records`.
    ApplyChanges,
    /// `POST /adjustendpoints`.
    AdjustEndpoints,
}

/// A request counter and an error counter. external-dns registers them as gauges whose names end in
/// `_total`; so are they here, for dashboards that query their type.
#[derive(Debug, Default)]
struct CallGauges {
    requests: Gauge,
    errors: Gauge,
}

/// Every metric the controller exports, and the registry that encodes them.
///
/// With `--dns-provider-crds` one process runs a controller per provider object: the binary makes its root
/// with [`Metrics::for_providers`] and one [`Metrics::child`] per object, which the root's scrape labels
/// `provider="<label>"` (see [`Metrics::attach`]).
#[derive(Debug)]
pub struct Metrics {
    role: Role,
    /// The controller's families.
    registry: Registry,
    /// The families of parts the binary wires in ([`Metrics::register_with_prefix`]), encoded after the
    /// controller's.
    extras: Registry,
    pub(crate) last_reconcile_timestamp: FloatGauge,
    pub(crate) last_sync_timestamp: FloatGauge,
    pub(crate) no_op_runs: Counter,
    pub(crate) consecutive_soft_errors: Gauge,
    verified_records: Family<RecordTypeLabel, Gauge>,
    registry_endpoints: Gauge,
    pub(crate) registry_errors: Counter,
    registry_records: Family<RecordTypeLabel, Gauge>,
    owner_mismatch: Family<OwnerMismatchLabels, Gauge>,
    source_endpoints: Gauge,
    pub(crate) source_errors: Counter,
    source_records: Family<RecordTypeLabel, Gauge>,
    source_invalid: Family<SourceLabels, Gauge>,
    source_deduplicated: Family<SourceLabels, Gauge>,
    deletion_guard_blocked: Family<ZoneLabel, Gauge>,
    leader: Gauge,
    source_objects_failed: Family<SourceNameLabel, Gauge>,
    informer_unavailable: Family<UnavailableLabels, Gauge>,
    syncs: Family<SyncKindLabel, Counter>,
    writes: Family<SyncKindLabel, Counter>,
    webhook: [CallGauges; 3],
    requests: Arc<RequestDurations>,
    /// Shared names (issue 47): owners pruned, conflicts refused, heartbeats written.
    shared: SharedCounters,
    /// Whether `/readyz` answers 200: set once this replica completed a full sync (or, following a leader
    /// of a shared provider, once its informers synced), never cleared.
    ready: AtomicBool,
    /// One child per provider object (`--dns-provider-crds`), by its `provider` label, in label order: their
    /// families are scraped with this root's, each sample labelled.
    children: RwLock<Vec<(String, Arc<Metrics>)>>,
    /// Every name's outcome as the last syncs left it: `/summary` serves it, the status writers write it.
    names: NameBook,
    /// `extdns_records`: the book's names by state and object kind.
    records: Family<RecordStateLabels, Gauge>,
}

impl Metrics {
    /// `version` and `revision` go into `build_info`.
    pub fn new(version: &str, revision: &str) -> Self {
        Self::with_role(Role::Process, version, revision)
    }

    /// The root of a process that runs one controller per provider object (`--dns-provider-crds`): it has
    /// the process's families (build info, leadership, request durations, `process_*`, what the binary
    /// registers with [`Metrics::register_with_prefix`]) and scrapes its [`Metrics::child`]ren's, labelled;
    /// it has no per-sync series of its own, so none is scraped unlabelled.
    pub fn for_providers(version: &str, revision: &str) -> Self {
        Self::with_role(Role::ProvidersRoot, version, revision)
    }

    fn with_role(role: Role, version: &str, revision: &str) -> Self {
        let (process, per_sync) = (role != Role::Provider, role != Role::ProvidersRoot);
        let mut root = Registry::default();
        let m = Metrics {
            role,
            last_reconcile_timestamp: FloatGauge::default(),
            last_sync_timestamp: FloatGauge::default(),
            no_op_runs: Counter::default(),
            consecutive_soft_errors: Gauge::default(),
            verified_records: Family::default(),
            registry_endpoints: Gauge::default(),
            registry_errors: Counter::default(),
            registry_records: Family::default(),
            owner_mismatch: Family::default(),
            source_endpoints: Gauge::default(),
            source_errors: Counter::default(),
            source_records: Family::default(),
            source_invalid: Family::default(),
            source_deduplicated: Family::default(),
            deletion_guard_blocked: Family::default(),
            leader: Gauge::default(),
            source_objects_failed: Family::default(),
            informer_unavailable: Family::default(),
            syncs: Family::default(),
            writes: Family::default(),
            webhook: Default::default(),
            requests: Arc::default(),
            shared: SharedCounters::default(),
            registry: Registry::default(),
            extras: Registry::default(),
            ready: AtomicBool::new(false),
            children: RwLock::default(),
            names: NameBook::default(),
            records: Family::default(),
        };
        let extdns = root.sub_registry_with_prefix(EXTDNS_PREFIX);
        if per_sync {
            extdns.register(
                "deletion_guard_blocked",
                "1 while the deletion guard holds back the deletes of a zone, 0 once a sync passes it",
                m.deletion_guard_blocked.clone(),
            );
        }
        // 1 until told otherwise: without leader election the one replica always leads.
        m.leader.set(1);
        if process {
            extdns.register(
                "leader",
                "1 while this replica holds the leader lease (always 1 without leader election), else 0",
                m.leader.clone(),
            );
        }
        if per_sync {
            m.register_extdns_per_sync(extdns);
            m.register_shared(extdns);
        }
        let registry = root.sub_registry_with_prefix(PREFIX);
        if process {
            let build_info = Family::<BuildInfoLabels, Gauge>::default();
            build_info
                .get_or_create(&BuildInfoLabels {
                    version: version.to_string(),
                    revision: revision.to_string(),
                    os: std::env::consts::OS.to_string(),
                    arch: std::env::consts::ARCH.to_string(),
                })
                .set(1);
            registry.register(
                "build_info",
                "A metric with a constant '1' value labeled with the build",
                build_info,
            );
        }
        if per_sync {
            m.register_external_dns_per_sync(registry);
        }
        Metrics { registry: root, ..m }
    }

    /// extdns's own families of one controller's syncs (`extdns_*`).
    fn register_extdns_per_sync(&self, r: &mut Registry) {
        r.register(
            "source_objects_failed",
            "Objects a source could not evaluate in the last sync; their records are kept as they are",
            self.source_objects_failed.clone(),
        );
        r.register(
            "informer_unavailable",
            "Kinds the API server does not let extdns list (1 each, by reason: crd_absent, not_served, forbidden); \
             the records of what needs them are held",
            self.informer_unavailable.clone(),
        );
        r.register(
            "syncs",
            "Completed syncs by kind: full (every zone read, every object evaluated) or incremental (the objects \
             a change affected, their names only)",
            self.syncs.clone(),
        );
        r.register(
            "writes",
            "Writes handed to the provider, by the kind of sync that made them: with --events, how many of the \
             cluster's changes were coalesced into one (each may be several provider requests)",
            self.writes.clone(),
        );
        r.register(
            "records",
            "Names the sources ask for, by where each stands after the last syncs (state: published, pending, \
             held, refused, conflict, invalid, filtered) and the kind of the object asking; /summary lists \
             the ones not published with why",
            self.records.clone(),
        );
    }

    /// external-dns's families of one controller's syncs (`external_dns_*`), under its names.
    fn register_external_dns_per_sync(&self, r: &mut Registry) {
        r.register(
            "controller_last_reconcile_timestamp_seconds",
            "Timestamp of last attempted sync with the DNS provider",
            self.last_reconcile_timestamp.clone(),
        );
        r.register(
            "controller_last_sync_timestamp_seconds",
            "Timestamp of last successful sync with the DNS provider",
            self.last_sync_timestamp.clone(),
        );
        r.register(
            "controller_no_op_runs",
            "Number of reconcile loops ending up with no changes on the DNS provider side",
            self.no_op_runs.clone(),
        );
        r.register(
            "controller_consecutive_soft_errors",
            "Number of consecutive failed syncs",
            self.consecutive_soft_errors.clone(),
        );
        r.register(
            "controller_verified_records",
            "Number of DNS records that exist both in the source and the registry, by record type",
            self.verified_records.clone(),
        );
        r.register(
            "registry_endpoints_total",
            "Number of Endpoints in the registry",
            self.registry_endpoints.clone(),
        );
        r.register(
            "registry_errors",
            "Number of Registry errors",
            self.registry_errors.clone(),
        );
        r.register(
            "registry_records",
            "Number of registry records, by record type",
            self.registry_records.clone(),
        );
        r.register(
            "registry_skipped_records_owner_mismatch_per_sync",
            "Number of records skipped in the last sync because another owner id owns them",
            self.owner_mismatch.clone(),
        );
        r.register(
            "source_endpoints_total",
            "Number of Endpoints in all sources",
            self.source_endpoints.clone(),
        );
        r.register("source_errors", "Number of Source errors", self.source_errors.clone());
        r.register(
            "source_records",
            "Number of source records, by record type",
            self.source_records.clone(),
        );
        r.register(
            "source_invalid_endpoints",
            "Number of endpoints dropped as invalid in the last sync, by record type and source",
            self.source_invalid.clone(),
        );
        r.register(
            "source_deduplicated_endpoints",
            "Number of duplicate endpoints removed in the last sync, by record type and source",
            self.source_deduplicated.clone(),
        );
        for (call, gauges) in ["records", "applychanges", "adjustendpoints"].iter().zip(&self.webhook) {
            let what = match *call {
                "records" => "Records",
                "applychanges" => "ApplyChanges",
                _ => "AdjustEndpoints",
            };
            r.register(
                format!("webhook_provider_{call}_errors_total"),
                format!("Errors with {what} method"),
                gauges.errors.clone(),
            );
            r.register(
                format!("webhook_provider_{call}_requests_total"),
                format!("Requests with {what} method"),
                gauges.requests.clone(),
            );
        }
    }

    /// The shared names' counters (`extdns_shared_*_total`, docs/shared-names.md).
    fn register_shared(&self, r: &mut Registry) {
        r.register(
            "shared_owners_pruned",
            "Owners of shared names pruned for a heartbeat older than --shared-owner-ttl, one per owner and record",
            self.shared.owners_pruned.clone(),
        );
        r.register(
            "shared_conflicts",
            "Shared-name conflicts refused: a plain and a shared owner on one name, or two processes under one owner id",
            self.shared.conflicts.clone(),
        );
        r.register(
            "shared_heartbeats_written",
            "Shared-name heartbeats written (one per owner and domain per interval at rest)",
            self.shared.heartbeats_written.clone(),
        );
        r.register(
            "shared_health_probes",
            "Health probes of shared names' own targets, by result (success, failure)",
            self.shared.health_probes.clone(),
        );
        r.register(
            "shared_health_targets",
            "Own targets of shared names under a health check, by state (healthy, unhealthy: withdrawn unless failing open)",
            self.shared.health_targets.clone(),
        );
    }

    /// Counts one health probe of a shared name's target ([`crate::HealthTable`]).
    pub(crate) fn count_health_probe(&self, ok: bool) {
        let result = if ok { "success" } else { "failure" };
        self.shared
            .health_probes
            .get_or_create(&vec![("result", result.to_string())])
            .inc();
    }

    /// The probed targets by state.
    pub(crate) fn set_health_targets(&self, healthy: usize, unhealthy: usize) {
        for (state, n) in [("healthy", healthy), ("unhealthy", unhealthy)] {
            self.shared
                .health_targets
                .get_or_create(&vec![("state", state.to_string())])
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
    }

    /// Registers metrics of a part the binary wires in (the built-in DNS server's), under `prefix`
    /// (`extdns_dns_server`), beside the controller's; before the metrics are shared. A child's are scraped
    /// labelled with its provider, a root's once without.
    pub fn register_with_prefix(&mut self, prefix: &str, register: impl FnOnce(&mut Registry)) {
        register(self.extras.sub_registry_with_prefix(prefix));
    }

    /// Every name's outcome as the last syncs left it ([`crate::name_status`]), beside the metrics because
    /// the same server serves both (`/summary`).
    pub fn names(&self) -> &NameBook {
        &self.names
    }

    /// With `--dns-provider-crds`: keeps this root's book ([`Metrics::names`]) the union of its children's
    /// (each provider object's controller folds into its own), looking every `every` until `shutdown`, so
    /// `/summary` and the status writer see every provider's names, each naming the provider that took it.
    /// A look that finds no child's book changed (the same shared outcomes) costs a pointer comparison
    /// per child.
    pub async fn merge_children_names(self: Arc<Self>, every: std::time::Duration, shutdown: crate::CancellationToken) {
        // The children and their books' versions as last merged: the books themselves are not held, so a
        // child's fold changes its book in place rather than copying it.
        let mut merged: Vec<(String, u64)> = Vec::new();
        loop {
            let children: Vec<(String, Arc<Metrics>)> =
                self.children.read().unwrap_or_else(PoisonError::into_inner).clone();
            let now: Vec<(String, u64)> = children
                .iter()
                .map(|(label, child)| (label.clone(), child.names.version()))
                .collect();
            if now != merged {
                let books: Vec<Arc<crate::NameStatuses>> = children.iter().map(|(_, c)| c.names.latest()).collect();
                self.names
                    .replace(crate::NameStatuses::union(books.iter().map(Arc::as_ref)));
                merged = now;
            }
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(every) => {}
            }
        }
    }

    /// Whether this replica is ready to be sent traffic (`/readyz`): it completed a full sync, or it follows
    /// the leader of a shared provider with its informers synced.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed)
    }

    /// `/readyz` answers 200 from now on (the controller's first full sync; with `--dns-provider-crds`, the
    /// binary's, when every provider object's pipeline synced once).
    pub fn mark_ready(&self) {
        if !self.ready.swap(true, Ordering::Relaxed) {
            tracing::info!("ready: /readyz answers 200 from now on");
        }
    }

    /// The OpenMetrics text exposition of every metric.
    pub fn encode(&self) -> String {
        self.encode_as(Format::OpenMetrics)
    }

    /// Every metric in `format`: the registries' (and the children's, each sample labelled with its
    /// provider), the request-duration summary and the `process_*` series.
    pub fn encode_as(&self, format: Format) -> String {
        let own = encode_registry(&self.registry);
        let extras = encode_registry(&self.extras);
        let children = self.children.read().unwrap_or_else(PoisonError::into_inner);
        let openmetrics = if self.role == Role::Process && children.is_empty() {
            // One controller: the registries as prometheus-client writes them, nothing re-read.
            let mut one = own;
            one.truncate(one.strip_suffix("# EOF\n").map_or(one.len(), str::len));
            one.push_str(&extras);
            one
        } else {
            let texts: Vec<(&str, String, String)> = children
                .iter()
                .map(|(label, c)| (label.as_str(), encode_registry(&c.registry), encode_registry(&c.extras)))
                .collect();
            let mut parts: Vec<(Option<&str>, &str)> = vec![(None, own.as_str())];
            parts.extend(
                texts
                    .iter()
                    .map(|(label, registry, _)| (Some(*label), registry.as_str())),
            );
            parts.push((None, extras.as_str()));
            parts.extend(texts.iter().map(|(label, _, extras)| (Some(*label), extras.as_str())));
            exposition::merge(&parts)
        };
        let mut out = exposition::from_openmetrics(&openmetrics, format);
        let mut w = Writer { out: &mut out, format };
        self.requests.write(&mut w);
        if let Some(p) = Process::read() {
            p.write(&mut w);
        }
        if format == Format::OpenMetrics {
            out.push_str("# EOF\n");
        }
        out
    }

    /// The metrics of one provider object's controller (`--dns-provider-crds`): its per-sync families,
    /// readiness and extras of its own, the root's request-duration summary shared. Register its extras
    /// (its DNS server's) with [`Metrics::register_with_prefix`], then [`Metrics::attach`] it: the root's
    /// scrape has its samples from then on, each labelled `provider="<label>"` (as its first label).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use extdns_controller::Metrics;
    ///
    /// let root = Arc::new(Metrics::for_providers("1.0.0", "abc"));
    /// let child = Arc::new(root.child()); // `mut` first to register a DNS server's families
    /// root.attach("team-a/public", child.clone()); // hand `child` to this object's Controller
    /// assert!(root.encode().contains("external_dns_registry_errors_total{provider=\"team-a/public\"} 0"));
    /// root.detach("team-a/public"); // the object is gone
    /// assert!(!root.encode().contains("team-a/public"));
    /// ```
    pub fn child(&self) -> Metrics {
        Metrics {
            requests: self.requests.clone(),
            ..Metrics::with_role(Role::Provider, "", "")
        }
    }

    /// Scrapes `child` with this root from now on, each of its samples labelled `provider="<label>"`;
    /// replaces the child of the same label (an object rebuilt).
    pub fn attach(&self, label: &str, child: Arc<Metrics>) {
        let mut children = self.children.write().unwrap_or_else(PoisonError::into_inner);
        match children.binary_search_by(|(l, _)| l.as_str().cmp(label)) {
            Ok(i) => children[i].1 = child,
            Err(i) => children.insert(i, (label.to_string(), child)),
        }
    }

    /// Stops scraping the child of `label` (its provider object is gone): its series leave the scrape.
    pub fn detach(&self, label: &str) {
        let mut children = self.children.write().unwrap_or_else(PoisonError::into_inner);
        children.retain(|(l, _)| l != label);
    }

    /// The request-duration summary, for every provider's HTTP client.
    pub fn request_durations(&self) -> Arc<RequestDurations> {
        self.requests.clone()
    }

    /// One webhook provider call, and whether it failed.
    pub fn count_webhook_call(&self, call: WebhookCall, failed: bool) {
        let gauges = &self.webhook[match call {
            WebhookCall::Records => 0,
            WebhookCall::ApplyChanges => 1,
            WebhookCall::AdjustEndpoints => 2,
        }];
        gauges.requests.inc();
        if failed {
            gauges.errors.inc();
        }
    }

    /// Whether this replica leads, for `extdns_leader`.
    pub fn set_leader(&self, leading: bool) {
        self.leader.set(i64::from(leading));
    }

    pub(crate) fn mark_reconcile(&self) {
        self.last_reconcile_timestamp.set(unix_now());
    }

    pub(crate) fn count_registry_error(&self) {
        self.registry_errors.inc();
    }

    pub(crate) fn count_source_error(&self) {
        self.source_errors.inc();
    }

    pub(crate) fn mark_sync(&self) {
        self.last_sync_timestamp.set(unix_now());
    }

    /// A sync completed; `full` or incremental.
    /// A sync hands its changes to the provider.
    pub(crate) fn count_write(&self, full: bool) {
        let kind = if full { "full" } else { "incremental" };
        self.writes.get_or_create(&SyncKindLabel { kind }).inc();
    }

    pub(crate) fn count_sync(&self, full: bool) {
        let kind = if full { "full" } else { "incremental" };
        self.syncs.get_or_create(&SyncKindLabel { kind }).inc();
    }

    /// The deletion guard's verdict on each zone this sync.
    pub(crate) fn observe_deletion_guard(&self, verdict: &crate::guard::Verdict) {
        for z in &verdict.zones {
            self.deletion_guard_blocked
                .get_or_create(&ZoneLabel { zone: z.zone.clone() })
                .set(i64::from(z.blocked));
        }
    }

    /// What the registry holds this sync.
    pub(crate) fn observe_registry(&self, current: &[Endpoint]) {
        self.registry_endpoints.set(count_i64(current.len()));
        set_by_type(&self.registry_records, current);
    }

    /// What the sources asked for this sync, and how much of it the registry already holds.
    pub(crate) fn observe_source(
        &self,
        desired: &[Endpoint],
        current: &[Endpoint],
        invalid: &BTreeMap<(String, String), usize>,
        deduplicated: &BTreeMap<(String, String), usize>,
    ) {
        self.source_endpoints.set(count_i64(desired.len()));
        set_by_type(&self.source_records, desired);

        let existing: std::collections::HashSet<(&str, &RecordType)> =
            current.iter().map(|e| (e.dns_name.as_str(), &e.record_type)).collect();
        let verified: Vec<&Endpoint> = desired
            .iter()
            .filter(|e| existing.contains(&(e.dns_name.as_str(), &e.record_type)))
            .collect();
        set_by_type(&self.verified_records, verified);

        set_by_source(&self.source_invalid, invalid);
        set_by_source(&self.source_deduplicated, deduplicated);
    }

    /// How many objects each source could not evaluate this sync (every source named, 0 included).
    pub(crate) fn observe_failed_objects(&self, by_source: &BTreeMap<String, usize>) {
        self.source_objects_failed.clear();
        for (source, n) in by_source {
            self.source_objects_failed
                .get_or_create(&SourceNameLabel { source: source.clone() })
                .set(count_i64(*n));
        }
    }

    pub(crate) fn observe_unavailable(&self, kinds: &BTreeMap<ResourceKind, Unavailable>) {
        self.informer_unavailable.clear();
        for (kind, why) in kinds {
            let labels = UnavailableLabels {
                kind: kind.kind().to_string(),
                reason: why.reason.as_str().to_string(),
            };
            self.informer_unavailable.get_or_create(&labels).set(1);
        }
    }

    /// Folds one sync's names' outcomes into the book ([`NameBook`]) and, when they changed, sets
    /// `extdns_records` from its counts (kinds times reasons: a few dozen series, whatever the book holds).
    pub(crate) fn fold_names(
        &self,
        update: BTreeMap<extdns_informer::ObjectKey, ObjectNames>,
        planned: Option<&std::collections::BTreeSet<String>>,
    ) {
        if !self.names.fold(update, planned) {
            return;
        }
        for (kind, reason, n) in self.names.latest().counts() {
            self.records
                .get_or_create(&RecordStateLabels {
                    state: state_label(reason),
                    kind: kind.kind(),
                })
                .set(count_i64(n));
        }
    }

    /// An incremental sync ended with nothing to fold: the status writer's hold for its change ends here,
    /// not at its one-second limit ([`NameBook::passed`]).
    pub(crate) fn sync_folded_nothing(&self) {
        self.names.passed();
    }

    pub(crate) fn observe_owner_mismatches(&self, mismatches: &[OwnerMismatch]) {
        self.owner_mismatch.clear();
        for m in mismatches {
            self.owner_mismatch
                .get_or_create(&OwnerMismatchLabels {
                    record_type: m.record_type.to_string(),
                    owner: m.owner.to_string(),
                    foreign_owner: m.foreign_owner.to_string(),
                    domain: m.domain.to_string(),
                })
                .inc();
        }
    }
}

/// `extdns_records`' `state` label: the reason in the lower case of label values.
fn state_label(reason: Reason) -> &'static str {
    match reason {
        Reason::Published => "published",
        Reason::Pending => "pending",
        Reason::Conflict => "conflict",
        Reason::Invalid => "invalid",
        Reason::Refused => "refused",
        Reason::Filtered => "filtered",
        Reason::Held => "held",
    }
}

/// A registry's OpenMetrics text, `# EOF` included.
fn encode_registry(registry: &Registry) -> String {
    let mut openmetrics = String::new();
    // Writing into a String cannot fail; an error here could only come from a label encoder, and an empty
    // scrape is better than a crash.
    if prometheus_client::encoding::text::encode(&mut openmetrics, registry).is_err() {
        openmetrics.clear();
    }
    openmetrics
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

fn count_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Every known type gets a value (zero included), so a type that disappears drops to 0 instead of keeping
/// its last count; unknown types a provider returns are reported under their own name.
fn set_by_type<'a>(family: &Family<RecordTypeLabel, Gauge>, endpoints: impl IntoIterator<Item = &'a Endpoint>) {
    let mut counts: BTreeMap<&str, i64> = RecordType::KNOWN.iter().map(|t| (t.as_str(), 0)).collect();
    for e in endpoints {
        *counts.entry(e.record_type.as_str()).or_default() += 1;
    }
    family.clear();
    for (record_type, n) in counts {
        family
            .get_or_create(&RecordTypeLabel {
                record_type: record_type.to_string(),
            })
            .set(n);
    }
}

fn set_by_source(family: &Family<SourceLabels, Gauge>, counts: &BTreeMap<(String, String), usize>) {
    family.clear();
    for ((record_type, source_type), n) in counts {
        family
            .get_or_create(&SourceLabels {
                record_type: record_type.clone(),
                source_type: source_type.clone(),
            })
            .set(count_i64(*n));
    }
}

/// The shared names' counters ([`extdns_registry::shared::SharedMetrics`]): labelled families, so a process
/// that never shares a name scrapes as it did before (an empty family is not exposed).
#[derive(Debug, Default)]
struct SharedCounters {
    /// By the pruned owner's id.
    owners_pruned: Family<Vec<(&'static str, String)>, Counter>,
    /// By kind (`plain_owner`, `instance`).
    conflicts: Family<Vec<(&'static str, String)>, Counter>,
    /// By domain.
    heartbeats_written: Family<Vec<(&'static str, String)>, Counter>,
    /// Health probes by result.
    health_probes: Family<Vec<(&'static str, String)>, Counter>,
    /// Probed targets by state.
    health_targets: Family<Vec<(&'static str, String)>, Gauge>,
}

impl extdns_registry::shared::SharedMetrics for Metrics {
    fn count(&self, what: extdns_registry::shared::SharedCount, label: &str, n: u64) {
        use extdns_registry::shared::SharedCount;
        let (family, key) = match what {
            SharedCount::OwnersPruned => (&self.shared.owners_pruned, "owner"),
            SharedCount::Conflicts => (&self.shared.conflicts, "kind"),
            SharedCount::HeartbeatsWritten => (&self.shared.heartbeats_written, "domain"),
            _ => return,
        };
        family.get_or_create(&vec![(key, label.to_string())]).inc_by(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exposition_check;

    /// The value of the sample whose name and labels start with `prefix`, from the exposition text.
    fn sample(text: &str, prefix: &str) -> Option<f64> {
        text.lines()
            .find(|l| l.starts_with(prefix))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
    }

    /// A counter `name` registered in `m` under `extdns_dns_server`, as the DNS server wired in registers its own.
    fn dns_server_counter(m: &mut Metrics, name: &str, help: &str) -> Counter<u64> {
        let counter = Counter::<u64>::default();
        m.register_with_prefix("extdns_dns_server", |r| r.register(name, help, counter.clone()));
        counter
    }

    #[test]
    fn a_part_wired_in_registers_its_metrics_under_its_prefix() {
        let mut m = Metrics::new("0", "0");
        dns_server_counter(&mut m, "answers", "DNS answers sent").inc();
        assert!(
            m.encode().contains("\nextdns_dns_server_answers_total 1\n"),
            "{}",
            m.encode()
        );
    }

    #[test]
    fn the_records_gauge_counts_the_books_names_by_state_and_kind() {
        use crate::name_status::{NameOutcome, NameState};
        use extdns_informer::ObjectKey;

        let m = Metrics::new("0", "0");
        let names = |states: &[NameState]| ObjectNames {
            uid: None,
            names: states
                .iter()
                .enumerate()
                .map(|(i, state)| NameOutcome {
                    name: format!("n{i}.example.org").into(),
                    record_type: "A".into(),
                    set_identifier: Box::default(),
                    state: state.clone(),
                })
                .collect::<Vec<_>>()
                .into(),
        };
        let published = NameState::published("p", None);
        let web = ObjectKey::new(ResourceKind::Service, "shop", "web");
        let site = ObjectKey::new(ResourceKind::Ingress, "shop", "site");
        m.fold_names(
            BTreeMap::from([
                (web.clone(), names(&[published.clone(), NameState::Pending])),
                (
                    site.clone(),
                    names(&[NameState::Filtered {
                        flag: "--domain-filter",
                    }]),
                ),
            ]),
            None,
        );
        let text = m.encode();
        let at = |text: &str, state: &str, kind: &str| {
            sample(text, &format!("extdns_records{{state=\"{state}\",kind=\"{kind}\"}} "))
        };
        assert_eq!(at(&text, "published", "Service"), Some(1.0), "{text}");
        assert_eq!(at(&text, "pending", "Service"), Some(1.0));
        assert_eq!(at(&text, "filtered", "Ingress"), Some(1.0));
        assert_eq!(
            at(&text, "conflict", "Service"),
            Some(0.0),
            "every state of a kind seen"
        );
        // The Ingress published now, the Service gone: its series read zero.
        m.fold_names(BTreeMap::from([(site, names(&[published]))]), None);
        let text = m.encode();
        assert_eq!(at(&text, "published", "Ingress"), Some(1.0), "{text}");
        assert_eq!(at(&text, "filtered", "Ingress"), Some(0.0));
        assert_eq!(at(&text, "published", "Service"), Some(0.0));
        assert_eq!(exposition_check::check(&text, Format::OpenMetrics), Ok(()));
    }

    #[tokio::test(start_paused = true)]
    async fn the_roots_book_is_the_union_of_its_childrens_each_naming_its_provider() {
        use crate::name_status::{NameOutcome, NameState};
        use extdns_informer::ObjectKey;

        let root = Arc::new(Metrics::for_providers("1", "x"));
        let web = ObjectKey::new(ResourceKind::Service, "shop", "web");
        let published = |name: &str, provider: &str| ObjectNames {
            uid: None,
            names: vec![NameOutcome {
                name: name.into(),
                record_type: "A".into(),
                set_identifier: Box::default(),
                state: NameState::published(provider, None),
            }]
            .into(),
        };
        for (label, name) in [
            ("team-a/public", "web.a.example.org"),
            ("internal", "web.b.example.org"),
        ] {
            let child = Arc::new(root.child());
            child.fold_names(BTreeMap::from([(web.clone(), published(name, label))]), None);
            root.attach(label, child);
        }
        let shutdown = crate::CancellationToken::new();
        let task = tokio::spawn(
            root.clone()
                .merge_children_names(std::time::Duration::from_secs(1), shutdown.clone()),
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        let said = |root: &Metrics| -> Vec<String> {
            root.names()
                .latest()
                .get(&web)
                .map(|n| n.names.iter().map(|n| format!("{} {}", n.name, n.state)).collect())
                .unwrap_or_default()
        };
        assert_eq!(
            said(&root),
            [
                "web.a.example.org published by team-a/public",
                "web.b.example.org published by internal"
            ]
        );
        // A provider object goes: its names leave the union at the next look.
        root.detach("internal");
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        assert_eq!(said(&root), ["web.a.example.org published by team-a/public"]);
        shutdown.cancel();
        assert!(task.await.is_ok());
    }

    #[test]
    fn exposes_external_dns_metric_names() {
        let m = Metrics::new("0.1.0", "abc");
        m.no_op_runs.inc();
        m.registry_errors.inc();
        m.source_errors.inc();
        m.observe_registry(&[Endpoint::new("a.example.com", RecordType::A, ["1.2.3.4"])]);
        m.observe_source(&[], &[], &BTreeMap::new(), &BTreeMap::new());
        let text = m.encode();
        for name in [
            "external_dns_build_info{",
            "external_dns_controller_last_reconcile_timestamp_seconds ",
            "external_dns_controller_last_sync_timestamp_seconds ",
            "external_dns_controller_no_op_runs_total ",
            "external_dns_controller_consecutive_soft_errors ",
            "external_dns_controller_verified_records{record_type=\"A\"} ",
            "external_dns_registry_endpoints_total ",
            "external_dns_registry_errors_total ",
            "external_dns_registry_records{record_type=\"A\"} ",
            "external_dns_source_endpoints_total ",
            "external_dns_source_errors_total ",
            "external_dns_source_records{record_type=\"CNAME\"} ",
        ] {
            assert!(
                text.lines().any(|l| l.starts_with(name)),
                "{name} missing from:\n{text}"
            );
        }
        assert!(!text.contains("_total_total"), "{text}");
        assert_eq!(sample(&text, "external_dns_controller_no_op_runs_total "), Some(1.0));
        assert_eq!(
            sample(&text, "external_dns_registry_records{record_type=\"A\"}"),
            Some(1.0)
        );
    }

    #[test]
    fn webhook_calls_are_counted_under_external_dns_gauge_names() {
        let m = Metrics::new("0", "0");
        m.count_webhook_call(WebhookCall::Records, false);
        m.count_webhook_call(WebhookCall::Records, true);
        m.count_webhook_call(WebhookCall::ApplyChanges, true);
        let text = m.encode_as(Format::Text);
        assert!(
            text.contains("# TYPE external_dns_webhook_provider_records_requests_total gauge\n"),
            "{text}"
        );
        for (name, want) in [
            ("records_requests_total", 2.0),
            ("records_errors_total", 1.0),
            ("applychanges_errors_total", 1.0),
            ("adjustendpoints_requests_total", 0.0),
        ] {
            let name = format!("external_dns_webhook_provider_{name} ");
            assert_eq!(sample(&text, &name), Some(want), "{name}");
        }
        assert!(
            text.contains("# TYPE external_dns_http_request_duration_seconds summary\n"),
            "{text}"
        );
    }

    #[test]
    fn endpoints_total_metrics_are_gauges_like_external_dns() {
        let text = Metrics::new("0", "0").encode();
        for family in [
            "external_dns_registry_endpoints_total gauge",
            "external_dns_source_endpoints_total gauge",
            "external_dns_registry_errors counter",
        ] {
            assert!(text.contains(&format!("# TYPE {family}")), "{text}");
        }
    }

    #[test]
    fn verified_records_count_desired_records_the_registry_holds() {
        let m = Metrics::new("0", "0");
        let current = vec![
            Endpoint::new("a.example.com", RecordType::A, ["1.2.3.4"]),
            Endpoint::new("b.example.com", RecordType::Cname, ["x.example.org"]),
        ];
        let desired = vec![
            Endpoint::new("a.example.com", RecordType::A, ["5.6.7.8"]),
            Endpoint::new("b.example.com", RecordType::A, ["1.1.1.1"]),
            Endpoint::new("c.example.com", RecordType::A, ["1.1.1.1"]),
        ];
        m.observe_source(&desired, &current, &BTreeMap::new(), &BTreeMap::new());
        let text = m.encode();
        assert_eq!(
            sample(&text, "external_dns_controller_verified_records{record_type=\"A\"}"),
            Some(1.0)
        );
        assert_eq!(
            sample(&text, "external_dns_source_records{record_type=\"A\"}"),
            Some(3.0)
        );
        assert_eq!(sample(&text, "external_dns_source_endpoints_total "), Some(3.0));
    }

    #[test]
    fn per_sync_gauges_forget_the_previous_sync() {
        let m = Metrics::new("0", "0");
        let invalid = BTreeMap::from([(("A".to_string(), "service".to_string()), 2)]);
        m.observe_source(&[], &[], &invalid, &BTreeMap::new());
        assert!(
            m.encode()
                .contains("source_invalid_endpoints{record_type=\"A\",source_type=\"service\"} 2")
        );
        m.observe_source(&[], &[], &BTreeMap::new(), &BTreeMap::new());
        assert!(!m.encode().contains("source_invalid_endpoints{"));
        m.observe_registry(&[Endpoint::new("a.example.com", RecordType::A, ["1.2.3.4"])]);
        m.observe_registry(&[]);
        assert_eq!(
            sample(&m.encode(), "external_dns_registry_records{record_type=\"A\"}"),
            Some(0.0)
        );
    }

    /// A scrape up to the `process_*` families (what varies from one read to the next), each family's
    /// samples sorted: prometheus-client writes a labelled family's in its hash map's order, which changes
    /// from one process to the next.
    fn before_process(text: &str) -> String {
        let text = text.find("# HELP process_").map_or(text, |i| &text[..i]);
        let mut out = String::new();
        let mut samples: Vec<&str> = Vec::new();
        for line in text.lines().chain(["#"]) {
            if line.starts_with('#') {
                samples.sort_unstable();
                for s in samples.drain(..) {
                    out.push_str(s);
                    out.push('\n');
                }
                if line != "#" {
                    out.push_str(line);
                    out.push('\n');
                }
            } else {
                samples.push(line);
            }
        }
        out
    }

    /// The flag mode's scrape, byte for byte as it was before providers had children (but for the order of
    /// a family's samples): the files were written by that code.
    #[test]
    fn one_controller_scrapes_as_it_always_did() {
        let mut m = Metrics::new("1.2.3", "abc");
        dns_server_counter(&mut m, "answers", "DNS answers sent").inc();
        m.no_op_runs.inc();
        m.observe_registry(&[Endpoint::new("a.example.com", RecordType::A, ["1.2.3.4"])]);
        m.count_webhook_call(WebhookCall::Records, true);
        let platform = format!("os=\"{}\",arch=\"{}\"", std::env::consts::OS, std::env::consts::ARCH);
        for (format, want) in [
            (Format::Text, include_str!("testdata/flag_mode.txt")),
            (Format::OpenMetrics, include_str!("testdata/flag_mode.om")),
        ] {
            let text = m.encode_as(format);
            let want = want.replace("os=\"OS\",arch=\"ARCH\"", &platform);
            assert_eq!(before_process(&text), before_process(&want));
            assert_eq!(exposition_check::check(&text, format), Ok(()), "{text}");
        }
    }

    /// A child as a provider object's controller leaves it after a few syncs: every family with samples,
    /// its DNS server's too.
    fn busy_child(root: &Metrics, records: usize) -> Arc<Metrics> {
        let mut child = root.child();
        let answers = Family::<RecordTypeLabel, Counter>::default();
        child.register_with_prefix("extdns_dns_server", |r| {
            r.register("answers", "DNS answers sent, by record type", answers.clone());
        });
        answers
            .get_or_create(&RecordTypeLabel {
                record_type: "A".into(),
            })
            .inc_by(7);
        let endpoints: Vec<Endpoint> = (0..records)
            .map(|i| Endpoint::new(&format!("r{i}.example.com"), RecordType::A, ["192.0.2.1"]))
            .collect();
        child.observe_registry(&endpoints);
        let by_source = BTreeMap::from([(("A".to_string(), "service".to_string()), 2)]);
        child.observe_source(&endpoints, &endpoints, &by_source, &by_source);
        child.observe_failed_objects(&BTreeMap::from([
            ("service".to_string(), 1),
            ("ingress".to_string(), 0),
        ]));
        child.count_sync(true);
        child.count_write(false);
        child.mark_reconcile();
        child.count_webhook_call(WebhookCall::ApplyChanges, true);
        child.set_leader(false);
        Arc::new(child)
    }

    #[test]
    fn providers_are_scraped_as_one_family_each_with_a_provider_label() {
        let mut root = Metrics::for_providers("1.0", "abc");
        dns_server_counter(&mut root, "queries", "Queries received");
        root.set_leader(true);
        let public = busy_child(&root, 3);
        public.registry_errors.inc();
        let team = busy_child(&root, 5);
        root.attach("public", public);
        root.attach("team-a/zone \"x\"", team.clone());
        for format in [Format::OpenMetrics, Format::Text] {
            let text = root.encode_as(format);
            assert_eq!(exposition_check::check(&text, format), Ok(()), "{text}");
            for (series, want) in [
                ("external_dns_registry_errors_total{provider=\"public\"} ", 1.0),
                (
                    "external_dns_registry_errors_total{provider=\"team-a/zone \\\"x\\\"\"} ",
                    0.0,
                ),
                (
                    "external_dns_registry_records{provider=\"public\",record_type=\"A\"} ",
                    3.0,
                ),
                (
                    "external_dns_registry_records{provider=\"team-a/zone \\\"x\\\"\",record_type=\"A\"} ",
                    5.0,
                ),
                (
                    "extdns_dns_server_answers_total{provider=\"public\",record_type=\"A\"} ",
                    7.0,
                ),
                ("extdns_dns_server_queries_total ", 0.0),
                ("extdns_leader ", 1.0),
            ] {
                assert_eq!(sample(&text, series), Some(want), "{series} in\n{text}");
            }
            // The process's families once, unlabelled; no per-sync series without its provider.
            for line in text.lines().filter(|l| !l.starts_with('#')) {
                let process = [
                    "external_dns_build_info",
                    "extdns_leader",
                    "extdns_dns_server_queries",
                    "process_",
                ]
                .iter()
                .any(|p| line.starts_with(p))
                    || line.starts_with("external_dns_http_request_duration_seconds");
                assert_eq!(process, !line.contains("provider=\""), "{line}");
            }
            assert_eq!(text.matches("external_dns_build_info{").count(), 1);
            assert_eq!(text.lines().filter(|l| l.starts_with("extdns_leader")).count(), 1);
        }
        root.detach("team-a/zone \"x\"");
        let text = root.encode();
        assert!(!text.contains("team-a"), "{text}");
        assert_eq!(exposition_check::check(&text, Format::OpenMetrics), Ok(()));
        assert_eq!(Arc::strong_count(&team), 1, "detached: the root no longer holds it");
        root.detach("public");
        for format in [Format::OpenMetrics, Format::Text] {
            let text = root.encode_as(format);
            assert_eq!(exposition_check::check(&text, format), Ok(()), "{text}");
            assert!(!text.contains("external_dns_registry_errors"), "{text}");
        }
    }

    #[test]
    fn attaching_a_label_again_replaces_its_child() {
        let root = Metrics::for_providers("1.0", "abc");
        let old = busy_child(&root, 1);
        old.registry_errors.inc();
        root.attach("p", old.clone());
        root.attach("p", busy_child(&root, 1));
        let text = root.encode();
        assert_eq!(exposition_check::check(&text, Format::OpenMetrics), Ok(()));
        assert_eq!(
            sample(&text, "external_dns_registry_errors_total{provider=\"p\"} "),
            Some(0.0)
        );
        assert_eq!(Arc::strong_count(&old), 1);
    }

    /// The cost of a scrape with children (`cargo test -p extdns-controller --lib scrape_cost -- --ignored
    /// --nocapture`), reported in docs/operations.md.
    #[test]
    #[ignore = "a measurement, not a check"]
    fn scrape_cost() {
        let root = Metrics::for_providers("1.0", "abc");
        let flag = Metrics::new("1.0", "abc");
        for p in 0..3 {
            root.attach(&format!("team-{p}/public"), busy_child(&root, 100));
        }
        for (what, m) in [("flag mode", &flag), ("3 children", &root)] {
            let runs = 2000;
            let start = std::time::Instant::now();
            let mut bytes = 0;
            for _ in 0..runs {
                bytes = m.encode_as(Format::Text).len() + m.encode_as(Format::OpenMetrics).len();
            }
            let per = start.elapsed() / (2 * runs);
            println!("{what}: {per:?} per scrape, {} bytes", bytes / 2);
        }
    }

    #[test]
    fn shared_name_counts_are_scraped_once_counted() {
        use extdns_registry::shared::{SharedCount, SharedMetrics};
        let m = Metrics::new("1.2.3", "abc");
        assert!(!m.encode().contains("extdns_shared_"));
        m.count(SharedCount::OwnersPruned, "cluster-b", 2);
        m.count(SharedCount::Conflicts, "instance", 1);
        let text = m.encode();
        assert!(
            text.contains("\nextdns_shared_owners_pruned_total{owner=\"cluster-b\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("\nextdns_shared_conflicts_total{kind=\"instance\"} 1\n"),
            "{text}"
        );
        assert!(!text.contains("extdns_shared_heartbeats_written_total "), "{text}");
    }
}
