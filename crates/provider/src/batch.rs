//! Batching shared by providers: cut a change set into batches a backend accepts, and when a backend rejects a
//! batch, split it until every good change has landed and every bad one is named.
//!
//! The unit of all of this is a [`Unit`]: a record's change together with the registry's ownership change for
//! it. A unit is never split, so a record and its ownership TXT record land together or not at all: an
//! ownership record without its record would later make extdns delete a record of that name that someone
//! else created.
//!
//! The splitting assumes what DNS backends generally guarantee: a batch the backend refuses
//! ([`FailureKind::Refused`]) was not applied at all (an RFC 2136 UPDATE is atomic, so are Route53 change batches and the in-memory
//! provider's validation). Applying its halves again therefore never applies a change twice. Batches are
//! sub-slices of the caller's units: nothing is copied to split or retry them.

use std::future::Future;

use extdns_endpoint::{Change, RecordName};

use crate::{ChangeFailure, FailureKind, ProviderError};

/// A record's change and the ownership change the registry adds for it: applied whole or not at all.
#[derive(Debug, Clone, Copy)]
pub struct Unit<'a> {
    /// The record's own change.
    pub change: &'a Change,
    /// The registry's TXT (or other) ownership change for the same record; `None` without one.
    pub ownership: Option<&'a Change>,
}

impl<'a> Unit<'a> {
    /// A unit of one change (no registry, or a change that needs no ownership record).
    pub fn new(change: &'a Change) -> Self {
        Unit {
            change,
            ownership: None,
        }
    }

    /// A record's change written together with its ownership change.
    pub fn with_ownership(change: &'a Change, ownership: &'a Change) -> Self {
        Unit {
            change,
            ownership: Some(ownership),
        }
    }

    /// The record change first, then its ownership change.
    pub fn changes(&self) -> impl Iterator<Item = &'a Change> + use<'a> {
        std::iter::once(self.change).chain(self.ownership)
    }

    /// How many changes the unit holds (what batch sizes count).
    pub fn len(&self) -> usize {
        1 + usize::from(self.ownership.is_some())
    }

    /// A unit is never empty; for clippy's `len_without_is_empty`.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// How failures name the unit: by its record.
    pub fn record_name(&self) -> RecordName<'a> {
        self.change.record_name()
    }

    /// A failure of the whole unit, of `kind`, as `message` says; named by its record's key.
    pub fn failure(&self, kind: FailureKind, message: impl Into<String>) -> ChangeFailure {
        ChangeFailure::new(self.change.endpoint(), kind, message)
    }

    /// The backend (or the provider's own validation) refused this unit's record.
    pub fn refused(&self, message: impl Into<String>) -> ChangeFailure {
        self.failure(FailureKind::Refused, message)
    }
}

/// Order units for sending: deletes first (they free names for the creates that follow), then updates, then
/// creates; the caller's order (the plan's, by name) is kept within each kind.
pub fn sort_for_apply(units: &mut [Unit<'_>]) {
    units.sort_by_key(|u| u.change.apply_order());
}

/// What a batch limit counts, for one item or a whole batch: changes, characters of record values, and
/// record values (Route53 limits all three; most backends only the first).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Size {
    /// Changes counted (a unit with an ownership change counts two).
    pub changes: usize,
    /// Characters of record values, as the provider counts them.
    pub bytes: usize,
    /// Record values (targets).
    pub values: usize,
}

impl Size {
    /// A size of `changes` changes and nothing else counted.
    pub fn changes(changes: usize) -> Size {
        Size {
            changes,
            ..Size::default()
        }
    }
}

impl std::ops::Add for Size {
    type Output = Size;
    fn add(self, o: Size) -> Size {
        Size {
            changes: self.changes.saturating_add(o.changes),
            bytes: self.bytes.saturating_add(o.bytes),
            values: self.values.saturating_add(o.values),
        }
    }
}

/// The most one batch may hold. `usize::MAX` is no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most changes a batch may hold.
    pub changes: usize,
    /// Most characters of record values a batch may hold.
    pub bytes: usize,
    /// Most record values a batch may hold.
    pub values: usize,
}

impl Limits {
    /// At most `changes` changes a batch (at least 1), bytes and values unlimited.
    pub fn changes(changes: usize) -> Limits {
        Limits {
            changes: changes.max(1),
            bytes: usize::MAX,
            values: usize::MAX,
        }
    }

    fn admit(&self, size: Size) -> bool {
        size.changes <= self.changes && size.bytes <= self.bytes && size.values <= self.values
    }
}

/// Cut items into consecutive batches within `limits`, `size` giving each item's share. An item is never
/// cut; one larger than a limit on its own travels alone (and the backend names what is wrong with it).
/// Batches borrow from `items`.
pub fn split_by<T>(items: &[T], limits: Limits, size: impl Fn(&T) -> Size) -> Vec<&[T]> {
    let mut batches = Vec::new();
    let (mut start, mut total) = (0, Size::default());
    for (i, item) in items.iter().enumerate() {
        let own = size(item);
        if i > start && !limits.admit(total + own) {
            batches.push(&items[start..i]);
            (start, total) = (i, Size::default());
        }
        total = total + own;
    }
    if start < items.len() {
        batches.push(&items[start..]);
    }
    batches
}

/// Cut units into batches of at most `size` changes (a unit counts its record and its ownership record; a
/// unit larger than `size` travels alone). Batches borrow from `units`.
pub fn split<'u, 'a>(units: &'u [Unit<'a>], size: usize) -> Vec<&'u [Unit<'a>]> {
    split_by(units, Limits::changes(size), |u| Size::changes(u.len()))
}

/// A batch in a backend's encoding: what goes out, the units it carries, and the units that could not be
/// encoded, each named with why.
#[derive(Debug)]
pub struct Encoded<'u, 'a, T> {
    /// The encoded changes of every unit in `sent`, in order.
    pub items: Vec<T>,
    /// The units `items` carries, for naming them when the backend refuses the batch.
    pub sent: Vec<&'u Unit<'a>>,
    /// The units left out, with the encoder's error.
    pub failures: Vec<ChangeFailure>,
}

/// Encodes every change of `batch` with `encode`. A unit is encoded whole or not at all, so a record never
/// goes out without its ownership record.
pub fn encode<'u, 'a, T, E: std::fmt::Display>(
    batch: &'u [Unit<'a>],
    mut encode: impl FnMut(&'a Change) -> Result<Vec<T>, E>,
) -> Encoded<'u, 'a, T> {
    let mut out = Encoded {
        items: Vec::new(),
        sent: Vec::new(),
        failures: Vec::new(),
    };
    for unit in batch {
        let encoded = unit.changes().try_fold(Vec::new(), |mut acc, change| {
            acc.extend(encode(change)?);
            Ok::<_, E>(acc)
        });
        match encoded {
            Ok(items) => {
                out.items.extend(items);
                out.sent.push(unit);
            }
            Err(e) => out.failures.push(unit.refused(e.to_string())),
        }
    }
    out
}

/// An item a batch is made of: a [`Unit`], or a provider's encoding of one (which fails by the unit's name).
pub trait AsUnit<'a> {
    /// The unit this item encodes.
    fn unit(&self) -> Unit<'a>;
}

impl<'a> AsUnit<'a> for Unit<'a> {
    fn unit(&self) -> Unit<'a> {
        *self
    }
}

/// Apply `items` through `apply` (which applies one batch atomically). When the backend refuses a batch as
/// a whole ([`FailureKind::Refused`]), the batch is split in halves and each half applied again, down to
/// single units, so every good unit lands and each bad one is reported by name in
/// [`ProviderError::Partial`]. Any other error stops at once (a transient error, refused credentials, an
/// answer that cannot be used: splitting cannot help), and the next sync plans again from what did land.
pub async fn apply_split<'u, 'a, T, F, Fut>(items: &'u [T], mut apply: F) -> Result<(), ProviderError>
where
    T: AsUnit<'a>,
    F: FnMut(&'u [T]) -> Fut,
    Fut: Future<Output = Result<(), ProviderError>>,
{
    let mut failures = Vec::new();
    // An explicit stack instead of recursion: async recursion needs boxing, and the depth is log2(len).
    let mut stack: Vec<&'u [T]> = vec![items];
    while let Some(batch) = stack.pop() {
        if batch.is_empty() {
            continue;
        }
        match apply(batch).await {
            Ok(()) => {}
            Err(ProviderError::Partial { failures: f }) => failures.extend(f),
            Err(e) if e.kind() == Some(FailureKind::Refused) && batch.len() == 1 => {
                let u = batch[0].unit();
                failures.push(u.refused(format!("{}: {}", u.change.action(), e)));
            }
            Err(e) if e.kind() == Some(FailureKind::Refused) => {
                tracing::debug!(units = batch.len(), reason = %e, "batch refused; splitting it");
                let (first, second) = batch.split_at(batch.len() / 2);
                // Pushed in reverse so the first half is applied first (deletes before creates).
                stack.push(second);
                stack.push(first);
            }
            Err(e) => {
                if !failures.is_empty() {
                    tracing::warn!(failed = failures.len(), "changes failed before the provider stopped");
                }
                return Err(e);
            }
        }
    }
    Failures(failures).into_result()
}

/// Apply `units` (already in apply order) in batches of `size` changes through `apply`, splitting failed
/// batches ([`apply_split`]); the failures of all batches are reported together. Transient errors stop at
/// the first batch that hits one.
pub async fn apply_in_batches<'u, 'a, F, Fut>(
    units: &'u [Unit<'a>],
    size: usize,
    mut apply: F,
) -> Result<(), ProviderError>
where
    F: FnMut(&'u [Unit<'a>]) -> Fut,
    Fut: Future<Output = Result<(), ProviderError>>,
{
    let mut failures = Failures::default();
    for batch in split(units, size) {
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

    /// Record one failure found before anything was applied (e.g. a change no zone accepts).
    pub fn push(&mut self, failure: ChangeFailure) {
        self.0.push(failure);
    }

    /// Refuse `unit` before anything is sent (a type the provider does not manage, a name no zone holds),
    /// with a warning naming its record and why.
    pub fn refuse(&mut self, unit: &Unit<'_>, reason: impl std::fmt::Display) {
        tracing::warn!(record = %unit.record_name(), %reason, "change refused");
        self.0.push(unit.refused(reason.to_string()));
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
    use extdns_endpoint::{Endpoint, RecordType, label};
    use std::sync::{Arc, Mutex};

    fn a(name: &str) -> Endpoint {
        Endpoint::new(name, RecordType::A, ["1.2.3.4"])
    }

    fn txt_for(name: &str) -> Endpoint {
        Endpoint::new(&format!("a-{name}"), RecordType::Txt, ["\"heritage=external-dns\""])
            .with_label(label::OWNED_RECORD, name)
    }

    fn creates(names: &[&str]) -> Vec<Change> {
        names.iter().map(|n| Change::Create(a(n))).collect()
    }

    fn units(changes: &[Change]) -> Vec<Unit<'_>> {
        changes.iter().map(Unit::new).collect()
    }

    fn names(batch: &[Unit<'_>]) -> Vec<String> {
        batch
            .iter()
            .flat_map(Unit::changes)
            .map(|c| {
                let sign = match c {
                    Change::Delete(_) => '-',
                    Change::Update { .. } => '~',
                    Change::Create(_) => '+',
                };
                format!("{sign}{}", c.endpoint().dns_name)
            })
            .collect()
    }

    #[test]
    fn split_respects_the_batch_size() {
        let names: Vec<String> = (0..10).map(|i| format!("r{i}.example.com")).collect();
        let changes = creates(&names.iter().map(String::as_str).collect::<Vec<_>>());
        let units = units(&changes);
        let batches = split(&units, 4);
        assert_eq!(batches.iter().map(|b| b.len()).collect::<Vec<_>>(), [4, 4, 2]);
    }

    #[test]
    fn split_never_separates_a_record_from_its_ownership_record() {
        let records = creates(&["r0.example.com", "r1.example.com", "r2.example.com"]);
        let txts: Vec<Change> = ["r0.example.com", "r1.example.com", "r2.example.com"]
            .iter()
            .map(|n| Change::Create(txt_for(n)))
            .collect();
        let units: Vec<Unit<'_>> = records
            .iter()
            .zip(&txts)
            .map(|(r, t)| Unit::with_ownership(r, t))
            .collect();
        // Three changes a batch: each batch holds one unit (two changes), never a unit cut in two.
        let batches = split(&units, 3);
        assert_eq!(batches.len(), 3);
        for b in &batches {
            assert_eq!(
                names(b),
                [
                    format!("+{}", b[0].change.endpoint().dns_name),
                    format!("+a-{}", b[0].change.endpoint().dns_name)
                ]
            );
        }
    }

    #[test]
    fn a_unit_larger_than_a_batch_travels_alone() {
        let (record, txt) = (
            Change::Create(a("x.example.com")),
            Change::Create(txt_for("x.example.com")),
        );
        let units = [Unit::with_ownership(&record, &txt)];
        assert_eq!(split(&units, 1).len(), 1);
    }

    #[test]
    fn units_are_sent_deletes_first() {
        let changes = vec![Change::Create(a("x.example.com")), Change::Delete(a("x.example.com"))];
        let mut units = units(&changes);
        sort_for_apply(&mut units);
        assert_eq!(names(&units), ["-x.example.com", "+x.example.com"]);
    }

    /// A backend that rejects any batch containing a "bad" name, and records what it applied.
    fn backend<'u, 'a>(
        applied: Arc<Mutex<Vec<String>>>,
        calls: Arc<Mutex<usize>>,
    ) -> impl FnMut(&'u [Unit<'a>]) -> std::future::Ready<Result<(), ProviderError>> {
        move |batch: &[Unit<'_>]| {
            *calls.lock().unwrap_or_else(|p| p.into_inner()) += 1;
            if batch
                .iter()
                .flat_map(Unit::changes)
                .any(|c| c.endpoint().dns_name.starts_with("bad"))
            {
                return std::future::ready(Err(ProviderError::refused("REFUSED")));
            }
            let mut a = applied.lock().unwrap_or_else(|p| p.into_inner());
            a.extend(
                batch
                    .iter()
                    .flat_map(Unit::changes)
                    .map(|c| c.endpoint().dns_name.clone()),
            );
            std::future::ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn one_rejected_change_does_not_stop_the_others() {
        let applied = Arc::new(Mutex::new(Vec::new()));
        let calls = Arc::new(Mutex::new(0));
        let mut changes: Vec<Change> = (0..7)
            .map(|i| Change::Create(a(&format!("ok{i}.example.com"))))
            .collect();
        changes.insert(3, Change::Create(a("bad.example.com")));
        let units = units(&changes);
        let err = apply_split(&units, backend(applied.clone(), calls.clone())).await;
        let Err(ProviderError::Partial { failures }) = err else {
            panic!("expected a partial failure, got {err:?}")
        };
        assert_eq!(failures.len(), 1);
        assert_eq!(failures[0].key, a("bad.example.com").key());
        assert_eq!(failures[0].reason.kind, FailureKind::Refused);
        let message = &failures[0].reason.message;
        assert!(message.contains("create") && message.contains("REFUSED"), "{message}");
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
        let changes = creates(&["bad1.example.com", "ok.example.com", "bad2.example.com"]);
        let units = units(&changes);
        let Err(ProviderError::Partial { failures }) = apply_split(&units, backend(applied.clone(), calls)).await
        else {
            panic!("expected a partial failure")
        };
        let mut named: Vec<_> = failures.iter().map(|f| f.key.dns_name.clone()).collect();
        named.sort();
        assert_eq!(named, ["bad1.example.com", "bad2.example.com"]);
        assert_eq!(*applied.lock().unwrap_or_else(|p| p.into_inner()), ["ok.example.com"]);
    }

    #[tokio::test]
    async fn a_clean_batch_is_applied_in_one_call() {
        let mut calls = 0;
        let changes = creates(&["a.example.com", "b.example.com"]);
        let units = units(&changes);
        let r = apply_split(&units, |_| {
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
        let changes = creates(&[
            "bad1.example.com",
            "ok1.example.com",
            "ok2.example.com",
            "bad2.example.com",
        ]);
        let units = units(&changes);
        let r = apply_in_batches(&units, 2, backend(applied.clone(), calls)).await;
        let Err(ProviderError::Partial { failures }) = r else {
            panic!("expected a partial failure")
        };
        assert_eq!(failures.len(), 2);
        assert_eq!(applied.lock().unwrap_or_else(|p| p.into_inner()).len(), 2);
    }

    #[test]
    fn split_by_respects_changes_bytes_and_values() {
        // (changes, bytes, values) of each item.
        let items = [(1, 10, 1), (1, 10, 1), (1, 25, 3), (1, 5, 1), (2, 1, 1)];
        let size = |&(changes, bytes, values): &(usize, usize, usize)| Size { changes, bytes, values };
        let lens = |changes, bytes, values| {
            let limits = Limits { changes, bytes, values };
            split_by(&items, limits, size)
                .iter()
                .map(|b| b.len())
                .collect::<Vec<_>>()
        };
        let max = usize::MAX;
        // Two changes fit, a third does not.
        assert_eq!(lens(2, max, max), [2, 2, 1]);
        // 10+10 bytes fit, 25 more do not; 25+5 do.
        assert_eq!(lens(100, 30, max), [2, 2, 1]);
        // The three-value item goes alone.
        assert_eq!(lens(100, max, 3), [2, 1, 2]);
        // An item over the byte limit on its own travels alone.
        assert_eq!(lens(100, 20, max), [2, 1, 2]);
        assert!(split_by(&items[..0], Limits::changes(1), size).is_empty());
    }

    #[tokio::test]
    async fn only_a_refused_batch_is_split() {
        let changes = creates(&["a.example.com", "b.example.com", "c.example.com"]);
        let units = units(&changes);
        for error in [
            || ProviderError::transient("timeout"),
            || ProviderError::new(FailureKind::Throttled { retry_after: None }, "slow down"),
            || ProviderError::fatal("unreadable answer"),
            || ProviderError::auth("wrong key"),
        ] {
            let mut calls = 0;
            let r = apply_split(&units, |_| {
                calls += 1;
                std::future::ready(Err(error()))
            })
            .await;
            assert!(r.is_err() && !matches!(r, Err(ProviderError::Partial { .. })), "{r:?}");
            assert_eq!(calls, 1, "{r:?} must not be split");
        }
    }
}
