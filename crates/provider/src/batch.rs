//! Batching shared by providers: cut a large change set into batches a backend accepts, and when a backend
//! rejects a batch, split it until every good change has landed and every bad one is named.
//!
//! The splitting assumes what DNS backends generally guarantee: a batch that fails with a non-transient
//! error was not applied at all (an RFC 2136 UPDATE is atomic, so are Route53 change batches and the in-memory
//! provider's validation). Applying its halves again therefore never applies a change twice.

use std::collections::HashMap;
use std::future::Future;

use extdns_endpoint::{Changes, Endpoint, label};

use crate::{ChangeFailure, ProviderError};

/// One change that must travel as a whole: an update's old and new sides belong together.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    Create(Endpoint),
    Update { old: Endpoint, new: Endpoint },
    Delete(Endpoint),
}

impl Change {
    /// The record as it will be after the change (the old one for a delete).
    pub fn endpoint(&self) -> &Endpoint {
        match self {
            Change::Create(e) | Change::Delete(e) => e,
            Change::Update { new, .. } => new,
        }
    }

    /// `create`, `update` or `delete`, for messages.
    pub fn action(&self) -> &'static str {
        match self {
            Change::Create(_) => "create",
            Change::Update { .. } => "update",
            Change::Delete(_) => "delete",
        }
    }

    /// How a failure names this change: `<name> <type>` (and the set identifier when there is one).
    pub fn record_name(&self) -> String {
        record_name(self.endpoint())
    }

    fn order(&self) -> u8 {
        match self {
            Change::Delete(_) => 0,
            Change::Update { .. } => 1,
            Change::Create(_) => 2,
        }
    }
}

/// `<name> <type>`, with ` set-identifier=<id>` when the record has one: how failures name a record.
pub fn record_name(e: &Endpoint) -> String {
    if e.set_identifier.is_empty() {
        format!("{} {}", e.dns_name, e.record_type)
    } else {
        format!("{} {} set-identifier={}", e.dns_name, e.record_type, e.set_identifier)
    }
}

/// The changes as a list of units: deletes first (they free names for the creates that follow), then
/// updates, then creates. Updates whose sides do not pair up (different lengths) keep the extra sides as
/// deletes or creates so nothing is lost silently.
pub fn to_units(changes: &Changes) -> Vec<Change> {
    let mut units = Vec::with_capacity(changes.len());
    units.extend(changes.delete.iter().cloned().map(Change::Delete));
    let mut old = changes.update_old.iter();
    let mut new = changes.update_new.iter();
    loop {
        match (old.next(), new.next()) {
            (Some(o), Some(n)) => units.push(Change::Update {
                old: o.clone(),
                new: n.clone(),
            }),
            (Some(o), None) => {
                tracing::warn!(record = %o, "update without a new side; treating it as unchanged");
            }
            (None, Some(n)) => {
                tracing::warn!(record = %n, "update without an old side; treating it as a create");
                units.push(Change::Create(n.clone()));
            }
            (None, None) => break,
        }
    }
    units.extend(changes.create.iter().cloned().map(Change::Create));
    units
}

/// The inverse of [`to_units`].
pub fn from_units(units: &[Change]) -> Changes {
    let mut c = Changes::default();
    for u in units {
        match u {
            Change::Create(e) => c.create.push(e.clone()),
            Change::Update { old, new } => {
                c.update_old.push(old.clone());
                c.update_new.push(new.clone());
            }
            Change::Delete(e) => c.delete.push(e.clone()),
        }
    }
    c
}

/// The name a change is grouped under: a registry TXT record goes with the record it owns.
fn group_key(c: &Change) -> (String, String) {
    let e = c.endpoint();
    let name = e.label(label::OWNED_RECORD).unwrap_or(&e.dns_name);
    (name.to_ascii_lowercase(), e.set_identifier.clone())
}

/// Cut changes into batches of at most `size` units (an update counts once). Changes at the same name and
/// set identifier, including the registry's TXT records for them, stay in one batch when they fit, so a
/// record and its ownership record land together; within a batch deletes come first.
pub fn split(changes: &Changes, size: usize) -> Vec<Changes> {
    split_units(to_units(changes), size)
        .iter()
        .map(|b| from_units(b))
        .collect()
}

/// [`split`] on units.
pub fn split_units(units: Vec<Change>, size: usize) -> Vec<Vec<Change>> {
    let size = size.max(1);
    let mut index: HashMap<(String, String), usize> = HashMap::new();
    let mut groups: Vec<Vec<Change>> = Vec::new();
    for u in units {
        let key = group_key(&u);
        match index.get(&key) {
            Some(&i) => groups[i].push(u),
            None => {
                index.insert(key, groups.len());
                groups.push(vec![u]);
            }
        }
    }
    let mut batches: Vec<Vec<Change>> = Vec::new();
    let mut current: Vec<Change> = Vec::new();
    for mut g in groups {
        g.sort_by_key(Change::order);
        if !current.is_empty() && current.len() + g.len() > size {
            batches.push(std::mem::take(&mut current));
        }
        for u in g {
            if current.len() == size {
                batches.push(std::mem::take(&mut current));
            }
            current.push(u);
        }
    }
    if !current.is_empty() {
        batches.push(current);
    }
    for b in &mut batches {
        b.sort_by_key(Change::order);
    }
    batches
}

/// Apply `units` through `apply` (which applies one batch atomically). When a batch fails with an error that
/// names no change and is not transient (the backend rejected the batch), it is split in halves and each
/// half retried, down to single changes, so every good change lands and each bad one is reported by name in
/// [`ProviderError::Partial`]. Transient and authentication errors stop at once: splitting cannot help, and
/// the next sync plans again from what did land.
pub async fn apply_split<F, Fut>(units: Vec<Change>, mut apply: F) -> Result<(), ProviderError>
where
    F: FnMut(Vec<Change>) -> Fut,
    Fut: Future<Output = Result<(), ProviderError>>,
{
    let mut failures = Vec::new();
    // An explicit stack instead of recursion: async recursion needs boxing, and the depth is log2(len).
    let mut stack: Vec<Vec<Change>> = vec![units];
    while let Some(batch) = stack.pop() {
        if batch.is_empty() {
            continue;
        }
        match apply(batch.clone()).await {
            Ok(()) => {}
            Err(ProviderError::Partial { failures: f }) => failures.extend(f),
            Err(e @ (ProviderError::Transient(_) | ProviderError::Auth(_))) => {
                if !failures.is_empty() {
                    tracing::warn!(
                        failed = failures.len(),
                        "changes failed before the provider became unavailable"
                    );
                }
                return Err(e);
            }
            Err(e) if batch.len() == 1 => {
                let c = &batch[0];
                failures.push(ChangeFailure {
                    record: c.record_name(),
                    reason: format!("{}: {}", c.action(), e),
                });
            }
            Err(e) => {
                tracing::debug!(changes = batch.len(), error = %e, "batch rejected; splitting it");
                let mut first = batch;
                let second = first.split_off(first.len() / 2);
                // Pushed in reverse so the first half is applied first (deletes before creates).
                stack.push(second);
                stack.push(first);
            }
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(ProviderError::Partial { failures })
    }
}

/// Apply `changes` in batches of `size` through `apply`, splitting failed batches ([`apply_split`]); the
/// failures of all batches are reported together. Transient errors stop at the first batch that hits one.
pub async fn apply_in_batches<F, Fut>(changes: &Changes, size: usize, mut apply: F) -> Result<(), ProviderError>
where
    F: FnMut(Vec<Change>) -> Fut,
    Fut: Future<Output = Result<(), ProviderError>>,
{
    let mut failures = Failures::default();
    for batch in split_units(to_units(changes), size) {
        failures.absorb(apply_split(batch, &mut apply).await)?;
    }
    failures.into_result()
}

/// Collects the failed changes of several independent applies (batches, zones) so one partial failure does
/// not stop the others, while any other error still does.
#[derive(Debug, Default)]
pub struct Failures(Vec<ChangeFailure>);

impl Failures {
    /// Keep the failed changes of a partial failure; pass any other error on.
    pub fn absorb(&mut self, result: Result<(), ProviderError>) -> Result<(), ProviderError> {
        match result {
            Err(ProviderError::Partial { failures }) => {
                self.0.extend(failures);
                Ok(())
            }
            other => other,
        }
    }

    /// Start from failures found before anything was applied (e.g. changes no zone accepts).
    pub fn from_vec(failures: Vec<ChangeFailure>) -> Self {
        Failures(failures)
    }

    /// `Ok` when nothing failed, else one [`ProviderError::Partial`] naming every failed change.
    pub fn into_result(self) -> Result<(), ProviderError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(ProviderError::Partial { failures: self.0 })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use extdns_endpoint::RecordType;
    use std::sync::{Arc, Mutex};

    fn a(name: &str) -> Endpoint {
        Endpoint::new(name, RecordType::A, ["1.2.3.4"])
    }

    fn txt_for(name: &str) -> Endpoint {
        Endpoint::new(&format!("a-{name}"), RecordType::Txt, ["\"heritage=external-dns\""])
            .with_label(label::OWNED_RECORD, name)
    }

    fn names(batch: &Changes) -> Vec<String> {
        let mut v: Vec<String> = batch.delete.iter().map(|e| format!("-{}", e.dns_name)).collect();
        v.extend(batch.update_new.iter().map(|e| format!("~{}", e.dns_name)));
        v.extend(batch.create.iter().map(|e| format!("+{}", e.dns_name)));
        v
    }

    #[test]
    fn units_round_trip_and_keep_update_sides_together() {
        let c = Changes {
            create: vec![a("c.example.com")],
            update_old: vec![a("u.example.com")],
            update_new: vec![a("u.example.com").with_ttl(extdns_endpoint::Ttl(5))],
            delete: vec![a("d.example.com")],
        };
        let units = to_units(&c);
        assert_eq!(units.len(), 3);
        assert!(matches!(&units[1], Change::Update { old, new } if old.record_ttl.0 == 0 && new.record_ttl.0 == 5));
        assert_eq!(from_units(&units), c);
    }

    #[test]
    fn split_respects_the_batch_size() {
        let c = Changes {
            create: (0..10).map(|i| a(&format!("r{i}.example.com"))).collect(),
            ..Changes::default()
        };
        let batches = split(&c, 4);
        assert_eq!(batches.iter().map(Changes::len).collect::<Vec<_>>(), [4, 4, 2]);
        let total: usize = batches.iter().map(Changes::len).sum();
        assert_eq!(total, 10);
    }

    #[test]
    fn split_keeps_a_record_with_its_txt_record() {
        let mut create = Vec::new();
        for i in 0..3 {
            let n = format!("r{i}.example.com");
            create.push(a(&n));
        }
        for i in 0..3 {
            create.push(txt_for(&format!("r{i}.example.com")));
        }
        let batches = split(
            &Changes {
                create,
                ..Changes::default()
            },
            3,
        );
        for b in &batches {
            for e in b.create.iter().filter(|e| e.record_type == RecordType::A) {
                assert!(
                    b.create
                        .iter()
                        .any(|t| t.label(label::OWNED_RECORD) == Some(e.dns_name.as_str())),
                    "{b:?}"
                );
            }
        }
        assert_eq!(batches.iter().map(Changes::len).sum::<usize>(), 6);
    }

    #[test]
    fn split_puts_deletes_before_creates_in_a_batch() {
        let c = Changes {
            create: vec![a("x.example.com")],
            delete: vec![a("x.example.com")],
            ..Changes::default()
        };
        let units = split_units(to_units(&c), 10);
        assert_eq!(units.len(), 1);
        assert!(matches!(units[0][0], Change::Delete(_)));
        assert_eq!(names(&split(&c, 10)[0]), ["-x.example.com", "+x.example.com"]);
    }

    #[test]
    fn split_cuts_groups_larger_than_a_batch() {
        let c = Changes {
            create: (0..5).map(|_| a("same.example.com")).collect(),
            ..Changes::default()
        };
        assert_eq!(split(&c, 2).iter().map(Changes::len).collect::<Vec<_>>(), [2, 2, 1]);
    }

    /// A backend that rejects any batch containing a "bad" name, and records what it applied.
    fn backend(
        applied: Arc<Mutex<Vec<String>>>,
        calls: Arc<Mutex<usize>>,
    ) -> impl FnMut(Vec<Change>) -> std::future::Ready<Result<(), ProviderError>> {
        move |batch: Vec<Change>| {
            *calls.lock().unwrap_or_else(|p| p.into_inner()) += 1;
            if batch.iter().any(|c| c.endpoint().dns_name.starts_with("bad")) {
                return std::future::ready(Err(ProviderError::Invalid("REFUSED".into())));
            }
            let mut a = applied.lock().unwrap_or_else(|p| p.into_inner());
            a.extend(batch.iter().map(|c| c.endpoint().dns_name.clone()));
            std::future::ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn one_rejected_change_does_not_stop_the_others() {
        let applied = Arc::new(Mutex::new(Vec::new()));
        let calls = Arc::new(Mutex::new(0));
        let mut create: Vec<Endpoint> = (0..7).map(|i| a(&format!("ok{i}.example.com"))).collect();
        create.insert(3, a("bad.example.com"));
        let units = to_units(&Changes {
            create,
            ..Changes::default()
        });
        let err = apply_split(units, backend(applied.clone(), calls.clone())).await;
        let Err(ProviderError::Partial { failures }) = err else {
            panic!("expected a partial failure, got {err:?}")
        };
        assert_eq!(failures.len(), 1);
        assert_eq!(failures[0].record, "bad.example.com A");
        assert!(failures[0].reason.contains("create") && failures[0].reason.contains("REFUSED"));
        let mut got = applied.lock().unwrap_or_else(|p| p.into_inner()).clone();
        got.sort();
        assert_eq!(got, (0..7).map(|i| format!("ok{i}.example.com")).collect::<Vec<_>>());
        // Bisection: far fewer calls than one per change plus retries of everything.
        assert!(*calls.lock().unwrap_or_else(|p| p.into_inner()) <= 8);
    }

    #[tokio::test]
    async fn every_rejected_change_is_named() {
        let applied = Arc::new(Mutex::new(Vec::new()));
        let calls = Arc::new(Mutex::new(0));
        let create = vec![a("bad1.example.com"), a("ok.example.com"), a("bad2.example.com")];
        let units = to_units(&Changes {
            create,
            ..Changes::default()
        });
        let Err(ProviderError::Partial { failures }) = apply_split(units, backend(applied.clone(), calls)).await else {
            panic!("expected a partial failure")
        };
        let mut named: Vec<_> = failures.iter().map(|f| f.record.clone()).collect();
        named.sort();
        assert_eq!(named, ["bad1.example.com A", "bad2.example.com A"]);
        assert_eq!(*applied.lock().unwrap_or_else(|p| p.into_inner()), ["ok.example.com"]);
    }

    #[tokio::test]
    async fn transient_errors_are_not_split() {
        let mut calls = 0;
        let units = to_units(&Changes {
            create: vec![a("a.example.com"), a("b.example.com")],
            ..Changes::default()
        });
        let r = apply_split(units, |_| {
            calls += 1;
            std::future::ready(Err(ProviderError::Transient("timeout".into())))
        })
        .await;
        assert!(matches!(r, Err(ProviderError::Transient(_))));
        assert_eq!(calls, 1);
    }

    #[tokio::test]
    async fn a_clean_batch_is_applied_in_one_call() {
        let mut calls = 0;
        let units = to_units(&Changes {
            create: vec![a("a.example.com"), a("b.example.com")],
            ..Changes::default()
        });
        let r = apply_split(units, |_| {
            calls += 1;
            std::future::ready(Ok(()))
        })
        .await;
        assert!(r.is_ok());
        assert_eq!(calls, 1);
    }

    #[tokio::test]
    async fn batches_report_failures_together() {
        let applied = Arc::new(Mutex::new(Vec::new()));
        let calls = Arc::new(Mutex::new(0));
        let create = vec![
            a("bad1.example.com"),
            a("ok1.example.com"),
            a("ok2.example.com"),
            a("bad2.example.com"),
        ];
        let c = Changes {
            create,
            ..Changes::default()
        };
        let r = apply_in_batches(&c, 2, backend(applied.clone(), calls)).await;
        let Err(ProviderError::Partial { failures }) = r else {
            panic!("expected a partial failure")
        };
        assert_eq!(failures.len(), 2);
        assert_eq!(applied.lock().unwrap_or_else(|p| p.into_inner()).len(), 2);
    }
}
