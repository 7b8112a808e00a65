//! The in-memory provider (`--provider=inmemory`): DNS zones held in memory, with external-dns's validation
//! of change batches. Useful to try extdns without a DNS server, and the backend of the controller's tests.
//!
//! Differences from external-dns, on purpose:
//! * With no `--inmemory-zone`, external-dns has no zones and silently drops every change; extdns uses one
//!   implicit zone holding every name, so `--provider=inmemory` works out of the box.
//! * A record belongs to the longest zone it lies in at a label boundary (`badexample.com` is not in
//!   `example.com`); records in no zone are skipped with a warning rather than silently.
//! * It stores what a DNS server stores (name, type, set identifier, TTL, targets) plus the provider-specific
//!   hints external-dns's in-memory provider keeps, but not labels: ownership must come from the registry's
//!   TXT records, as with a real server.
//! * A rejected batch is split ([`crate::batch::apply_split`]) so the valid changes still land.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use extdns_endpoint::{Change, DomainFilter, Endpoint, EndpointKey, Labels};

use crate::batch::{self, Unit};
use crate::pace::{Pacer, Rate};
use crate::zone::Placement;
use crate::{Provider, ProviderError, ReadState, Records};

/// Decides whether a change to this record should be refused (for tests); the string is the reason.
pub type FailOn = Arc<dyn Fn(&Endpoint) -> Option<String> + Send + Sync>;

type Zone = BTreeMap<EndpointKey, Endpoint>;

/// Zones of records in memory.
pub struct InMemoryProvider {
    /// Zone names as configured, lower-case without trailing dot; `""` is the implicit catch-all zone.
    zone_names: Vec<String>,
    zones: Mutex<BTreeMap<String, Zone>>,
    filter: DomainFilter,
    fail_on: Mutex<Option<FailOn>>,
    unavailable: AtomicBool,
    apply_calls: AtomicUsize,
    /// `--provider-write-rate`: each batch written to a zone is one write request.
    pacer: Pacer,
    /// When each batch was written (tokio's clock, so paused-time tests read it exactly).
    writes: Mutex<Vec<tokio::time::Instant>>,
}

impl fmt::Debug for InMemoryProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InMemoryProvider")
            .field("zones", &self.zone_names)
            .finish_non_exhaustive()
    }
}

/// Why the in-memory backend refused a batch (external-dns's in-memory errors).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InMemoryError {
    /// A create of a record that exists.
    #[error("record already exists")]
    AlreadyExists,
    /// An update or delete of a record that does not exist.
    #[error("record not found")]
    NotFound,
    /// The same record is changed twice in one batch.
    #[error("invalid batch request: the record appears twice")]
    Duplicate,
    /// A failure a test injected with [`InMemoryProvider::set_fail_on`], in the test's words.
    #[error("{0}")]
    Injected(String),
}

impl InMemoryProvider {
    /// A provider with these zones (`--inmemory-zone`, repeatable); none means one zone holding every name.
    /// Zone names are compared case-insensitively and may carry a trailing dot.
    pub fn new(zones: Vec<String>) -> Self {
        let mut zone_names: Vec<String> = zones
            .iter()
            .map(|z| z.trim().trim_end_matches('.').to_ascii_lowercase())
            .filter(|z| !z.is_empty())
            .collect();
        zone_names.sort();
        zone_names.dedup();
        let filter = DomainFilter::new(&zone_names, &[]);
        if zone_names.is_empty() {
            zone_names.push(String::new());
        }
        let zones = zone_names.iter().map(|z| (z.clone(), Zone::new())).collect();
        InMemoryProvider {
            zone_names,
            zones: Mutex::new(zones),
            filter,
            fail_on: Mutex::new(None),
            unavailable: AtomicBool::new(false),
            apply_calls: AtomicUsize::new(0),
            pacer: Pacer::unlimited(),
            writes: Mutex::new(Vec::new()),
        }
    }

    /// Writes at most at `rate` (`--provider-write-rate`; none by default).
    pub fn with_write_rate(mut self, rate: Option<Rate>) -> Self {
        self.pacer = Pacer::new(None, rate);
        self
    }

    /// When each batch was written to a zone, in order (one write request each).
    pub fn write_times(&self) -> Vec<tokio::time::Instant> {
        self.writes.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// A provider holding `records` already (they are placed in their zones without validation; records
    /// outside every zone are dropped).
    pub fn with_records(zones: Vec<String>, records: impl IntoIterator<Item = Endpoint>) -> Self {
        let p = Self::new(zones);
        p.insert(records);
        p
    }

    /// Put records in place without validation, replacing records with the same key (test setup).
    pub fn insert(&self, records: impl IntoIterator<Item = Endpoint>) {
        let mut zones = self.lock();
        for r in records {
            if let Some(z) = self.zone_of(&r.dns_name) {
                let r = stored(r);
                zones.entry(z.to_string()).or_default().insert(r.key(), r);
            }
        }
    }

    /// Every record, sorted by name, type and set identifier.
    pub fn snapshot(&self) -> Vec<Endpoint> {
        let zones = self.lock();
        let mut all: Vec<Endpoint> = zones.values().flat_map(|z| z.values().cloned()).collect();
        all.sort_by(|a, b| {
            (&a.dns_name, &a.record_type, &a.set_identifier).cmp(&(&b.dns_name, &b.record_type, &b.set_identifier))
        });
        all
    }

    /// The configured zones (empty for the implicit catch-all zone).
    pub fn zones(&self) -> Vec<String> {
        self.zone_names.iter().filter(|z| !z.is_empty()).cloned().collect()
    }

    /// Refuse changes to the records this function names a reason for (`None` to stop refusing). A
    /// provider that rejects one change, for tests of batch splitting and failure reporting.
    pub fn set_fail_on(&self, fail_on: Option<FailOn>) {
        *self.fail_on.lock().unwrap_or_else(|p| p.into_inner()) = fail_on;
    }

    /// Refuse every write, naming each record: the provider a dry run must never call.
    pub fn fail_all_writes(&self) {
        self.set_fail_on(Some(Arc::new(|_| {
            Some("writes are refused by this test provider".to_string())
        })));
    }

    /// While set, every call fails with a transient error (a backend that is down).
    pub fn set_unavailable(&self, unavailable: bool) {
        self.unavailable.store(unavailable, Ordering::SeqCst);
    }

    /// How many times `apply_changes` was called (with changes or not).
    pub fn apply_calls(&self) -> usize {
        self.apply_calls.load(Ordering::SeqCst)
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Zone>> {
        self.zones.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The longest zone `name` lies in, at a label boundary, ignoring case and a trailing dot.
    fn zone_of(&self, name: &str) -> Option<&str> {
        crate::zone::closest(&self.zone_names, name, String::as_str).map(|i| self.zone_names[i].as_str())
    }

    fn check_available(&self) -> Result<(), ProviderError> {
        if self.unavailable.load(Ordering::SeqCst) {
            return Err(ProviderError::transient("in-memory provider set unavailable"));
        }
        Ok(())
    }

    /// Validate and apply one batch to one zone, all or nothing (external-dns's `validateChangeBatch`):
    /// a create of an existing record, an update or delete of a missing one, or the same record twice in the
    /// batch refuses the whole batch.
    fn apply_atomic(&self, zone: &str, batch: &[Unit<'_>]) -> Result<(), ProviderError> {
        self.check_available()?;
        let fail_on = self.fail_on.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let mut zones = self.lock();
        let records = zones.entry(zone.to_string()).or_default();
        let mut seen = std::collections::HashSet::with_capacity(batch.len());
        for c in batch.iter().flat_map(Unit::changes) {
            let e = c.endpoint();
            if let Some(reason) = fail_on.as_ref().and_then(|f| f(e)) {
                return Err(ProviderError::refused(InMemoryError::Injected(reason).to_string()));
            }
            let key = e.key();
            let exists = records.contains_key(&key);
            let problem = match c {
                Change::Create(_) if exists => Some(InMemoryError::AlreadyExists),
                Change::Update { .. } | Change::Delete(_) if !exists => Some(InMemoryError::NotFound),
                _ => None,
            };
            if let Some(p) = problem {
                return Err(ProviderError::refused(format!("{}: {p}", c.record_name())));
            }
            if !seen.insert(key) {
                return Err(ProviderError::refused(format!(
                    "{}: {}",
                    c.record_name(),
                    InMemoryError::Duplicate
                )));
            }
        }
        for c in batch.iter().flat_map(Unit::changes) {
            if let Change::Delete(e) = c {
                records.remove(&e.key());
            } else {
                let e = stored(c.endpoint().clone());
                records.insert(e.key(), e);
            }
        }
        Ok(())
    }
}

/// What the backend keeps of an endpoint.
fn stored(mut e: Endpoint) -> Endpoint {
    e.labels = Labels::new();
    e.ref_objects.clear();
    e
}

#[async_trait]
impl Provider for InMemoryProvider {
    async fn records(&self) -> Result<Records, ProviderError> {
        self.check_available()?;
        Ok(self.snapshot().into())
    }

    async fn apply(&self, _read: &ReadState, units: &[Unit<'_>]) -> Result<(), ProviderError> {
        self.apply_calls.fetch_add(1, Ordering::SeqCst);
        self.check_available()?;
        let mut per_zone: BTreeMap<&str, Vec<Unit<'_>>> = BTreeMap::new();
        for u in units {
            match self.zone_of(&u.change.endpoint().dns_name) {
                Some(z) => per_zone.entry(z).or_default().push(*u),
                None => tracing::warn!(record = %u.record_name(), "record is in no in-memory zone; skipping it"),
            }
        }
        let mut failures = batch::Failures::default();
        for (zone, mut units) in per_zone {
            batch::sort_for_apply(&mut units);
            let write = |b| async move {
                self.pacer.write().await;
                self.writes
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(tokio::time::Instant::now());
                self.apply_atomic(zone, b)
            };
            failures.absorb(batch::apply_split(&units, write).await)?;
        }
        failures.into_result()
    }

    fn domain_filter(&self) -> DomainFilter {
        self.filter.clone()
    }

    /// Its zones are configured, not read: the closest holds the name (the implicit zone holds every one).
    fn placement(&self, _read: &ReadState, name: &str) -> Placement {
        Placement::closest(&self.zone_names, name, String::as_str)
    }

    /// Its read state is empty.
    fn read_state_outlives_writes(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ChangeFailure;
    use extdns_endpoint::{Changes, RecordType, Ttl, label};

    /// The tests speak external-dns's four-list shape; each change is its own unit.
    trait ApplyChanges {
        async fn apply_changes(&self, changes: &Changes) -> Result<(), ProviderError>;
    }

    impl ApplyChanges for InMemoryProvider {
        async fn apply_changes(&self, changes: &Changes) -> Result<(), ProviderError> {
            let changes = changes
                .clone()
                .into_changes()
                .map_err(|e| ProviderError::fatal(e.to_string()))?;
            crate::apply_changes(self, &changes).await
        }
    }

    fn a(name: &str, ip: &str) -> Endpoint {
        Endpoint::new(name, RecordType::A, [ip])
    }

    fn create(eps: Vec<Endpoint>) -> Changes {
        Changes {
            create: eps,
            ..Changes::default()
        }
    }

    /// The changes `p` refused of `changes`, which must not all land.
    async fn refused(p: &InMemoryProvider, changes: &Changes) -> Vec<ChangeFailure> {
        match p.apply_changes(changes).await {
            Err(ProviderError::Partial { failures }) => failures,
            other => panic!("expected a failure, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn created_records_are_returned() -> Result<(), ProviderError> {
        let p = InMemoryProvider::new(vec!["example.com".into()]);
        p.apply_changes(&create(vec![a("x.example.com", "1.1.1.1").with_ttl(Ttl(60))]))
            .await?;
        let records = p.records().await?.endpoints;
        assert_eq!(records, vec![a("x.example.com", "1.1.1.1").with_ttl(Ttl(60))]);
        Ok(())
    }

    #[tokio::test]
    async fn updates_replace_and_deletes_remove() -> Result<(), ProviderError> {
        let p = InMemoryProvider::with_records(vec!["example.com".into()], [a("x.example.com", "1.1.1.1")]);
        let update = Changes {
            update_old: vec![a("x.example.com", "1.1.1.1")],
            update_new: vec![a("x.example.com", "2.2.2.2")],
            ..Changes::default()
        };
        p.apply_changes(&update).await?;
        assert_eq!(p.snapshot()[0].targets.0, ["2.2.2.2"]);
        p.apply_changes(&Changes {
            delete: vec![a("x.example.com", "2.2.2.2")],
            ..Changes::default()
        })
        .await?;
        assert!(p.snapshot().is_empty());
        Ok(())
    }

    #[tokio::test]
    async fn creating_an_existing_record_is_refused_and_named() {
        let p = InMemoryProvider::with_records(vec!["example.com".into()], [a("x.example.com", "1.1.1.1")]);
        let failures = refused(&p, &create(vec![a("x.example.com", "2.2.2.2")])).await;
        assert_eq!(failures[0].key.dns_name, "x.example.com");
        assert!(
            failures[0].reason.message.contains("already exists"),
            "{}",
            failures[0].reason.message
        );
        assert_eq!(p.snapshot()[0].targets.0, ["1.1.1.1"]);
    }

    #[tokio::test]
    async fn updating_or_deleting_a_missing_record_is_refused() {
        let p = InMemoryProvider::new(vec!["example.com".into()]);
        let update = Changes {
            update_old: vec![a("x.example.com", "1.1.1.1")],
            update_new: vec![a("x.example.com", "2.2.2.2")],
            ..Changes::default()
        };
        let r = p.apply_changes(&update).await;
        assert!(
            matches!(&r, Err(ProviderError::Partial { failures }) if failures[0].reason.message.contains("not found"))
        );
        let r = p
            .apply_changes(&Changes {
                delete: vec![a("y.example.com", "1.1.1.1")],
                ..Changes::default()
            })
            .await;
        assert!(matches!(&r, Err(ProviderError::Partial { failures }) if failures[0].key.dns_name == "y.example.com"));
        assert!(p.snapshot().is_empty());
    }

    #[tokio::test]
    async fn the_same_record_twice_in_one_batch_is_refused() {
        let p = InMemoryProvider::new(vec!["example.com".into()]);
        let twice = create(vec![a("x.example.com", "1.1.1.1"), a("x.example.com", "2.2.2.2")]);
        // Split in halves, the first create lands and the second then finds the record existing.
        let failures = refused(&p, &twice).await;
        assert_eq!(failures.len(), 1);
        assert_eq!(p.snapshot().len(), 1);
    }

    #[tokio::test]
    async fn one_bad_change_does_not_stop_the_others() -> Result<(), ProviderError> {
        let p = InMemoryProvider::with_records(vec!["example.com".into()], [a("taken.example.com", "1.1.1.1")]);
        let changes = create(vec![
            a("one.example.com", "1.1.1.1"),
            a("taken.example.com", "2.2.2.2"),
            a("two.example.com", "1.1.1.1"),
        ]);
        let failures = refused(&p, &changes).await;
        assert_eq!(failures.len(), 1);
        assert_eq!(failures[0].key.dns_name, "taken.example.com");
        let names: Vec<_> = p.records().await?.endpoints.into_iter().map(|e| e.dns_name).collect();
        assert_eq!(names, ["one.example.com", "taken.example.com", "two.example.com"]);
        Ok(())
    }

    #[tokio::test]
    async fn injected_failures_name_the_rejected_record() -> Result<(), ProviderError> {
        let p = InMemoryProvider::new(vec!["example.com".into()]);
        p.set_fail_on(Some(Arc::new(|e: &Endpoint| {
            e.dns_name.starts_with("bad").then(|| "SERVFAIL".to_string())
        })));
        let changes = create(vec![a("bad.example.com", "1.1.1.1"), a("ok.example.com", "1.1.1.1")]);
        let failures = refused(&p, &changes).await;
        assert_eq!(failures[0].to_string(), "bad.example.com A: create: refused: SERVFAIL");
        assert_eq!(p.snapshot().len(), 1);
        p.set_fail_on(None);
        p.apply_changes(&create(vec![a("bad.example.com", "1.1.1.1")])).await?;
        assert_eq!(p.snapshot().len(), 2);
        Ok(())
    }

    #[tokio::test]
    async fn a_provider_failing_all_writes_changes_nothing() {
        let p = InMemoryProvider::new(vec![]);
        p.fail_all_writes();
        assert!(
            p.apply_changes(&create(vec![a("x.example.com", "1.1.1.1")]))
                .await
                .is_err()
        );
        assert!(p.snapshot().is_empty());
        assert_eq!(p.apply_calls(), 1);
    }

    #[tokio::test]
    async fn an_unavailable_provider_fails_transiently() {
        let p = InMemoryProvider::new(vec![]);
        p.set_unavailable(true);
        assert!(p.records().await.is_err_and(|e| e.is_transient()));
        assert!(
            p.apply_changes(&create(vec![a("x.example.com", "1.1.1.1")]))
                .await
                .is_err_and(|e| e.is_transient())
        );
        p.set_unavailable(false);
        assert!(p.records().await.is_ok());
    }

    #[tokio::test]
    async fn without_zones_every_name_is_accepted() -> Result<(), ProviderError> {
        let p = InMemoryProvider::new(vec![]);
        p.apply_changes(&create(vec![
            a("x.example.com", "1.1.1.1"),
            a("y.example.org", "1.1.1.1"),
        ]))
        .await?;
        assert_eq!(p.snapshot().len(), 2);
        assert!(!p.domain_filter().is_configured());
        assert!(p.zones().is_empty());
        Ok(())
    }

    #[tokio::test]
    async fn records_outside_every_zone_are_skipped() -> Result<(), ProviderError> {
        let p = InMemoryProvider::new(vec!["Example.com.".into()]);
        p.apply_changes(&create(vec![
            a("x.example.org", "1.1.1.1"),
            a("x.badexample.com", "1.1.1.1"),
        ]))
        .await?;
        assert!(p.snapshot().is_empty());
        p.apply_changes(&create(vec![
            a("X.EXAMPLE.com", "1.1.1.1"),
            a("example.com", "1.1.1.1"),
        ]))
        .await?;
        assert_eq!(p.snapshot().len(), 2);
        Ok(())
    }

    #[test]
    fn the_domain_filter_is_the_zones() {
        let p = InMemoryProvider::new(vec!["example.com".into(), "example.org.".into()]);
        let f = p.domain_filter();
        assert!(f.matches("a.example.com") && f.matches("example.org"));
        assert!(!f.matches("example.net"));
        assert_eq!(p.zones(), ["example.com", "example.org"]);
    }

    #[test]
    fn records_go_to_the_longest_matching_zone() {
        let p = InMemoryProvider::new(vec!["example.com".into(), "sub.example.com".into()]);
        assert_eq!(p.zone_of("a.sub.example.com"), Some("sub.example.com"));
        assert_eq!(p.zone_of("a.example.com"), Some("example.com"));
        assert_eq!(p.zone_of("a.badsub.example.com"), Some("example.com"));
    }

    #[tokio::test]
    async fn labels_are_not_stored_but_provider_specific_hints_are() -> Result<(), ProviderError> {
        let p = InMemoryProvider::new(vec![]);
        let mut e = a("x.example.com", "1.1.1.1").with_label(label::OWNER, "me");
        e.provider_specific.set("alias", "true");
        p.apply_changes(&create(vec![e])).await?;
        let r = &p.records().await?.endpoints[0];
        assert!(r.labels.is_empty());
        assert_eq!(r.provider_specific.get("alias"), Some("true"));
        Ok(())
    }

    #[tokio::test]
    async fn set_identifiers_make_distinct_records() -> Result<(), ProviderError> {
        let p = InMemoryProvider::new(vec![]);
        let blue = a("x.example.com", "1.1.1.1").with_set_identifier("blue");
        let green = a("x.example.com", "2.2.2.2").with_set_identifier("green");
        p.apply_changes(&create(vec![blue, green])).await?;
        assert_eq!(p.snapshot().len(), 2);
        Ok(())
    }
}
