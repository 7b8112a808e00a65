//! The Prometheus metrics, under external-dns's exact names so existing dashboards and alerts keep working.
//!
//! prometheus-client appends `_total` to counters itself, so the three real counters are registered without
//! it (`controller_no_op_runs`, `registry_errors`, `source_errors`) and come out as external-dns's names.
//! external-dns's `registry_endpoints_total` and `source_endpoints_total` are gauges whose names happen to
//! end in `_total`; they are registered verbatim.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
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
use crate::process::Process;
use crate::requests::RequestDurations;

/// The prefix of every metric external-dns has too, under its names.
pub const PREFIX: &str = "external_dns";
/// The prefix of the metrics only extdns has (its safety features), kept apart from external-dns's names.
pub const EXTDNS_PREFIX: &str = "extdns";
/// The families that are the process's, not a provider's: scraped from the root only.
const BUILD_INFO: &str = "external_dns_build_info";
const LEADER: &str = "extdns_leader";

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
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
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
    /// Whether `/readyz` answers 200: set once this replica completed a full sync (or, following a leader
    /// of a shared provider, once its informers synced), never cleared.
    ready: AtomicBool,
    /// One child per provider object (`--dns-provider-crds`), by its `provider` label: their families are
    /// scraped with this root's, each sample labelled.
    children: RwLock<Vec<(String, Arc<Metrics>)>>,
}

impl Metrics {
    /// `version` and `revision` go into `build_info`.
    pub fn new(version: &str, revision: &str) -> Self {
        let mut root = Registry::default();
        let m = Metrics {
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
            registry: Registry::default(),
            ready: AtomicBool::new(false),
            children: RwLock::default(),
        };
        let build_info = Family::<BuildInfoLabels, Gauge>::default();
        build_info
            .get_or_create(&BuildInfoLabels {
                version: version.to_string(),
                revision: revision.to_string(),
                os: std::env::consts::OS.to_string(),
                arch: std::env::consts::ARCH.to_string(),
            })
            .set(1);
        let extdns = root.sub_registry_with_prefix(EXTDNS_PREFIX);
        extdns.register(
            "deletion_guard_blocked",
            "1 while the deletion guard holds back the deletes of a zone, 0 once a sync passes it",
            m.deletion_guard_blocked.clone(),
        );
        // 1 until told otherwise: without leader election the one replica always leads.
        m.leader.set(1);
        extdns.register(
            "leader",
            "1 while this replica holds the leader lease (always 1 without leader election), else 0",
            m.leader.clone(),
        );
        extdns.register(
            "source_objects_failed",
            "Objects a source could not evaluate in the last sync; their records are kept as they are",
            m.source_objects_failed.clone(),
        );
        extdns.register(
            "informer_unavailable",
            "Kinds the API server does not let extdns list (1 each, by reason: crd_absent, not_served, forbidden); \
             the records of what needs them are held",
            m.informer_unavailable.clone(),
        );
        extdns.register(
            "syncs",
            "Completed syncs by kind: full (every zone read, every object evaluated) or incremental (the objects \
             a change affected, their names only)",
            m.syncs.clone(),
        );
        extdns.register(
            "writes",
            "Writes handed to the provider, by the kind of sync that made them: with --events, how many of the \
             cluster's changes were coalesced into one (each may be several provider requests)",
            m.writes.clone(),
        );
        let registry = root.sub_registry_with_prefix(PREFIX);
        registry.register(
            "build_info",
            "A metric with a constant '1' value labeled with the build",
            build_info,
        );
        registry.register(
            "controller_last_reconcile_timestamp_seconds",
            "Timestamp of last attempted sync with the DNS provider",
            m.last_reconcile_timestamp.clone(),
        );
        registry.register(
            "controller_last_sync_timestamp_seconds",
            "Timestamp of last successful sync with the DNS provider",
            m.last_sync_timestamp.clone(),
        );
        registry.register(
            "controller_no_op_runs",
            "Number of reconcile loops ending up with no changes on the DNS provider side",
            m.no_op_runs.clone(),
        );
        registry.register(
            "controller_consecutive_soft_errors",
            "Number of consecutive failed syncs",
            m.consecutive_soft_errors.clone(),
        );
        registry.register(
            "controller_verified_records",
            "Number of DNS records that exist both in the source and the registry, by record type",
            m.verified_records.clone(),
        );
        registry.register(
            "registry_endpoints_total",
            "Number of Endpoints in the registry",
            m.registry_endpoints.clone(),
        );
        registry.register(
            "registry_errors",
            "Number of Registry errors",
            m.registry_errors.clone(),
        );
        registry.register(
            "registry_records",
            "Number of registry records, by record type",
            m.registry_records.clone(),
        );
        registry.register(
            "registry_skipped_records_owner_mismatch_per_sync",
            "Number of records skipped in the last sync because another owner id owns them",
            m.owner_mismatch.clone(),
        );
        registry.register(
            "source_endpoints_total",
            "Number of Endpoints in all sources",
            m.source_endpoints.clone(),
        );
        registry.register("source_errors", "Number of Source errors", m.source_errors.clone());
        registry.register(
            "source_records",
            "Number of source records, by record type",
            m.source_records.clone(),
        );
        registry.register(
            "source_invalid_endpoints",
            "Number of endpoints dropped as invalid in the last sync, by record type and source",
            m.source_invalid.clone(),
        );
        registry.register(
            "source_deduplicated_endpoints",
            "Number of duplicate endpoints removed in the last sync, by record type and source",
            m.source_deduplicated.clone(),
        );
        for (call, gauges) in ["records", "applychanges", "adjustendpoints"].iter().zip(&m.webhook) {
            let what = match *call {
                "records" => "Records",
                "applychanges" => "ApplyChanges",
                _ => "AdjustEndpoints",
            };
            registry.register(
                format!("webhook_provider_{call}_errors_total"),
                format!("Errors with {what} method"),
                gauges.errors.clone(),
            );
            registry.register(
                format!("webhook_provider_{call}_requests_total"),
                format!("Requests with {what} method"),
                gauges.requests.clone(),
            );
        }
        Metrics { registry: root, ..m }
    }

    /// Registers metrics of a part the binary wires in (the built-in DNS server's), under `prefix`
    /// (`extdns_dns_server`), beside the controller's; before the metrics are shared.
    pub fn register_with_prefix(&mut self, prefix: &str, register: impl FnOnce(&mut Registry)) {
        register(self.registry.sub_registry_with_prefix(prefix));
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

    /// Every metric in `format`: the registry's (and its children's, each sample labelled with its
    /// provider), the request-duration summary and the `process_*` series.
    pub fn encode_as(&self, format: Format) -> String {
        let mut openmetrics = self.registry_text();
        let children = self.children.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        if !children.is_empty() {
            let texts: Vec<(&str, String)> = children.iter().map(|(l, c)| (l.as_str(), c.registry_text())).collect();
            openmetrics = exposition::merge_providers(&openmetrics, &texts, &[BUILD_INFO, LEADER]);
        }
        drop(children);
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

    /// The registry's OpenMetrics text, `# EOF` included.
    fn registry_text(&self) -> String {
        let mut openmetrics = String::new();
        // Writing into a String cannot fail; an error here could only come from a label encoder, and an
        // empty scrape is better than a crash.
        if prometheus_client::encoding::text::encode(&mut openmetrics, &self.registry).is_err() {
            openmetrics.clear();
        }
        openmetrics
    }

    /// A child for one provider object's controller (`--dns-provider-crds`): metrics of its own, sharing this
    /// root's request-duration summary. Scraped with the root once [`Metrics::attach`]ed.
    pub fn child(&self) -> Metrics {
        Metrics {
            requests: self.requests.clone(),
            ..Metrics::new("", "")
        }
    }

    /// Scrapes `child` with this root from now on, each of its samples labelled `provider="<label>"`;
    /// replaces a child of the same label.
    pub fn attach(&self, label: &str, child: Arc<Metrics>) {
        let mut children = self.children.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        children.retain(|(l, _)| l != label);
        children.push((label.to_string(), child));
        children.sort_by(|a, b| a.0.cmp(&b.0));
    }

    /// Stops scraping the child of `label` (its provider object is gone).
    pub fn detach(&self, label: &str) {
        let mut children = self.children.write().unwrap_or_else(std::sync::PoisonError::into_inner);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The value of the sample whose name and labels start with `prefix`, from the exposition text.
    fn sample(text: &str, prefix: &str) -> Option<f64> {
        text.lines()
            .find(|l| l.starts_with(prefix))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
    }

    #[test]
    fn a_part_wired_in_registers_its_metrics_under_its_prefix() {
        let mut m = Metrics::new("0", "0");
        let answers = Counter::<u64>::default();
        m.register_with_prefix("extdns_dns_server", |r| {
            r.register("answers", "DNS answers sent", answers.clone());
        });
        answers.inc();
        assert!(
            m.encode().contains("\nextdns_dns_server_answers_total 1\n"),
            "{}",
            m.encode()
        );
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

    /// Every family of a scrape once, in both formats: no repeated `# TYPE`, and each family's samples
    /// together (what Prometheus's parsers require).
    fn families_are_whole(text: &str) {
        let mut seen: Vec<&str> = Vec::new();
        let mut current = "";
        for line in text.lines() {
            if let Some(t) = line.strip_prefix("# TYPE ") {
                let name = t.rsplit_once(' ').map_or(t, |(n, _)| n);
                assert!(!seen.contains(&name), "{name} described twice:\n{text}");
                seen.push(name);
                current = name;
            } else if !line.starts_with('#') && !line.is_empty() {
                assert!(line.starts_with(current), "{line} outside its family {current}");
            }
        }
    }

    #[test]
    fn providers_are_scraped_as_one_family_each_with_a_provider_label() {
        let root = Metrics::new("1.0", "abc");
        let (a, b) = (Arc::new(root.child()), Arc::new(root.child()));
        a.registry_errors.inc();
        b.registry_errors.inc();
        b.registry_errors.inc();
        a.observe_registry(&[Endpoint::new("a.example.com", RecordType::A, ["1.2.3.4"])]);
        root.attach("public", a);
        root.attach("team-a/zone", b.clone());
        for format in [Format::OpenMetrics, Format::Text] {
            let text = root.encode_as(format);
            families_are_whole(&text);
            assert_eq!(
                sample(&text, "external_dns_registry_errors_total{provider=\"public\"}"),
                Some(1.0)
            );
            assert_eq!(
                sample(&text, "external_dns_registry_errors_total{provider=\"team-a/zone\"}"),
                Some(2.0)
            );
            assert_eq!(
                sample(
                    &text,
                    "external_dns_registry_records{provider=\"public\",record_type=\"A\"}"
                ),
                Some(1.0)
            );
            assert!(
                !text
                    .lines()
                    .any(|l| l.starts_with("external_dns_registry_errors_total ")),
                "the root's own samples are gone"
            );
            assert_eq!(
                text.matches("external_dns_build_info{").count(),
                1,
                "the process's, once"
            );
            assert!(text.contains("version=\"1.0\""));
        }
        root.detach("team-a/zone");
        assert!(!root.encode().contains("team-a/zone"));
        assert_eq!(Arc::strong_count(&b), 1, "detached: the root no longer holds it");
    }
}
