//! Where a record and its ownership record go, and how a pair the provider cannot take in one write is
//! written. A record's ownership record is named after the record (`a-` glued to its first label), so it is
//! not always in the record's zone:
//!
//! * the apex of a delegated child zone (`sub.example.org`) has its ownership record (`a-sub.example.org`)
//!   in the parent zone: the two are written one after the other, as external-dns writes them (per zone);
//! * the apex of a top zone (`example.org`) has its ownership record (`a-example.org`) in no zone at all:
//!   the record is written alone and is not extdns's (external-dns does the same), which is said once with
//!   the flag that puts ownership records inside the zone;
//! * a name the provider is documented to refuse (Azure: a `*` that is not a whole first label,
//!   `a-*.example.org`) is never sent, so a record is not written and undone again on every sync.
//!
//! The decision is made here once, from [`Provider::placement`], for every provider that knows its zones.

use std::collections::HashSet;
use std::sync::Mutex;

use extdns_endpoint::{Change, Endpoint};
use extdns_provider::failure::FailureKind;
use extdns_provider::zone::Placement;
use extdns_provider::{ChangeFailure, Failures, Provider, ProviderError, ReadState, Unit};

/// How a record's change and its ownership change reach the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pairing {
    /// One unit: they land together or not at all.
    Together,
    /// Two zones hold them: two writes, ownership first for a create or update (the record is written
    /// only once its ownership record landed), the record first for a delete (an ownership record is
    /// never removed from a record that stays).
    Apart,
    /// No zone holds the ownership record: the record is written alone, and is not extdns's.
    Unowned,
    /// The provider refuses the ownership record's name: neither is written.
    Refused(&'static str),
}

/// How `change` (a record's) and `ownership` (its ownership change) are written, as the provider places
/// their names in the read `read`.
pub(crate) fn pairing(provider: &dyn Provider, read: &ReadState, change: &Change, ownership: &Change) -> Pairing {
    let record = provider.placement(read, &change.endpoint().dns_name);
    let owner = provider.placement(read, &ownership.endpoint().dns_name);
    // An ownership record to be made (a create, or an update of a record owned through an old-format
    // ownership record, which writes its new-format one) is what a zone may not hold or the provider refuse.
    let new_ownership = matches!(ownership, Change::Create(_));
    match (record, owner) {
        (_, Placement::Refused(why)) if matches!(change, Change::Create(_)) => Pairing::Refused(why),
        (Placement::Zone(_), Placement::Outside) if new_ownership => Pairing::Unowned,
        (Placement::Zone(a), Placement::Zone(b)) if a != b => Pairing::Apart,
        _ => Pairing::Together,
    }
}

/// Names already warned about, so a condition that repeats at every sync is logged once (public for the
/// registries in other crates, which warn about the same conditions).
#[derive(Debug, Default)]
pub struct Once(Mutex<HashSet<String>>);

impl Once {
    /// True the first time `key` is seen.
    pub fn first(&self, key: &str) -> bool {
        let mut seen = self.0.lock().unwrap_or_else(|p| p.into_inner());
        !seen.contains(key) && seen.insert(key.to_string())
    }
}

/// Say once that `record` is written without an ownership record (`txt` lies in no zone), with the flag
/// that puts ownership records inside the zone.
pub(crate) fn warn_unowned(once: &Once, record: &Endpoint, txt: &str) {
    if once.first(&record.dns_name) {
        tracing::warn!(
            record = %record.dns_name, r#type = %record.record_type, ownership_record = %txt,
            "no zone holds this record's ownership record, so it is written without one and is not extdns's: \
             extdns will neither update nor delete it (external-dns leaves it so too). A --txt-prefix naming \
             the record type and ending in a dot (e.g. --txt-prefix=_extdns-%{{record_type}}.) puts \
             ownership records inside the zone"
        );
    }
}

/// Say once that `record` is not written because the provider refuses its ownership record's name.
pub(crate) fn warn_refused(once: &Once, record: &Endpoint, txt: &str, why: &str) {
    if once.first(&record.dns_name) {
        let hint = if record.dns_name.starts_with('*') {
            "; --txt-wildcard-replacement (e.g. --txt-wildcard-replacement=wildcard) names the ownership \
             records of wildcards without the '*'"
        } else {
            ""
        };
        tracing::warn!(
            record = %record.dns_name, r#type = %record.record_type, ownership_record = %txt,
            "this record is not written: the provider refuses its ownership record's name ({why}), and a record \
             extdns cannot own would be one it could never update or delete{hint}"
        );
    }
}

/// Write `units` (each whole) and the pairs two zones hold (`apart`, see [`write_apart`]) in one apply's
/// worth of calls. `withheld`, the changes not sent, are reported refused beside the failures of a partial
/// write; on success the caller reports them itself.
pub(crate) async fn write(
    provider: &dyn Provider,
    read: &ReadState,
    units: &[Unit<'_>],
    apart: &[(&Change, &Change)],
    withheld: &[ChangeFailure],
) -> Result<(), ProviderError> {
    let mut failures = Failures::default();
    if !apart.is_empty() {
        write_apart(provider, read, apart)
            .await?
            .into_iter()
            .for_each(|f| failures.push(f));
    }
    if !units.is_empty() {
        failures.absorb(provider.apply(read, units).await)?;
    }
    match failures.into_result() {
        Err(ProviderError::Partial { failures: mut failed }) => {
            failed.extend(withheld.iter().cloned());
            Err(ProviderError::Partial { failures: failed })
        }
        other => other,
    }
}

/// Write pairs (record change, ownership change) whose two halves two zones hold: the first half of
/// every pair in one call, then the second half of those whose first half landed; a create whose record
/// failed after its new ownership record landed has that ownership record deleted again (after a new
/// read, which the rare failure pays for). Returns the failures, each named by its record (the plan's
/// change), whichever half failed.
pub(crate) async fn write_apart(
    provider: &dyn Provider,
    read: &ReadState,
    pairs: &[(&Change, &Change)],
) -> Result<Vec<ChangeFailure>, ProviderError> {
    let halves: Vec<(&Change, &Change)> = pairs
        .iter()
        .map(|&(record, ownership)| match record {
            Change::Delete(_) => (record, ownership),
            _ => (ownership, record),
        })
        .collect();
    let first: Vec<Unit<'_>> = halves.iter().map(|(a, _)| Unit::new(a)).collect();
    let failed_first = match partial(provider.apply(read, &first).await) {
        Ok(failed) => failed,
        Err(e) => {
            // Failed whole, yet some ownership records may have landed (a timeout after the write): take
            // back those whose records are not there, as after a failed second half. A throttled, refused
            // or unauthorised call wrote nothing: no read of every zone for it (on a throttled account the
            // read would spend the budget the throttle asked to spare).
            let may_have_landed = matches!(e.kind(), None | Some(FailureKind::Transient));
            let undo: Vec<(&Change, Change)> = pairs
                .iter()
                .filter_map(|&(record, ownership)| match (record, ownership) {
                    (Change::Create(_), Change::Create(txt)) => Some((record, Change::Delete(txt.clone()))),
                    _ => None,
                })
                .collect();
            if may_have_landed && !undo.is_empty() {
                take_back(provider, &undo).await;
            }
            return Err(e);
        }
    };
    let mut failures = Vec::new();
    let mut second: Vec<(usize, Unit<'_>)> = Vec::new();
    for (i, (a, b)) in halves.iter().enumerate() {
        match failed_first.iter().find(|f| f.is_for(a.endpoint())) {
            Some(f) => failures.push(of_record(pairs[i].0, f)),
            None => second.push((i, Unit::new(b))),
        }
    }
    if second.is_empty() {
        return Ok(failures);
    }
    let units: Vec<Unit<'_>> = second.iter().map(|(_, u)| *u).collect();
    // A second call that failed whole failed every one of its changes: their first halves landed all the
    // same, and are taken back below like those of a partial failure.
    let failed_second = match provider.apply(read, &units).await {
        Ok(()) => Vec::new(),
        Err(ProviderError::Partial { failures }) => failures,
        Err(e) => {
            let kind = e.kind().unwrap_or(FailureKind::Transient);
            let message = e.to_string();
            units
                .iter()
                .map(|u| ChangeFailure::new(u.change.endpoint(), kind, message.clone()))
                .collect()
        }
    };
    let mut undo: Vec<(&Change, Change)> = Vec::new();
    for &(i, unit) in &second {
        let Some(f) = failed_second.iter().find(|f| f.is_for(unit.change.endpoint())) else {
            continue;
        };
        let (record, ownership) = pairs[i];
        failures.push(of_record(record, f));
        if let (Change::Create(_), Change::Create(txt)) = (record, ownership) {
            undo.push((record, Change::Delete(txt.clone())));
        }
    }
    if !undo.is_empty() {
        take_back(provider, &undo).await;
    }
    Ok(failures)
}

/// Delete the ownership records of creates whose record failed, unless a new read shows the record there
/// after all (a timeout or a 5xx may hide a write that landed: its ownership record must stay, or the
/// record would be nobody's for good). Read again first in any case: the ownership records were written
/// after the plan's read, and a provider that writes under what it read (Azure's ETags, Cloudflare's record
/// ids) can delete only what a read saw.
async fn take_back(provider: &dyn Provider, undo: &[(&Change, Change)]) {
    let fresh = match provider.records().await {
        Ok(fresh) => fresh,
        Err(e) => {
            tracing::warn!(error = %e, "ownership records written for records that then failed could not be taken back");
            return;
        }
    };
    let there = |change: &Change| fresh.endpoints.iter().any(|e| e.key() == change.endpoint().key());
    // Only ownership records the read shows (a call that failed whole may not have written them).
    let deletes: Vec<Unit<'_>> = undo
        .iter()
        .filter(|(record, delete)| !there(record) && there(delete))
        .map(|(_, delete)| Unit::new(delete))
        .collect();
    if deletes.is_empty() {
        return;
    }
    if let Err(e) = provider.apply(&fresh.state, &deletes).await {
        tracing::warn!(error = %e, "ownership records written for records that then failed could not be taken back");
    }
}

/// The failed changes of a partial failure (none when it succeeded); any other error is passed on.
fn partial(result: Result<(), ProviderError>) -> Result<Vec<ChangeFailure>, ProviderError> {
    match result {
        Ok(()) => Ok(Vec::new()),
        Err(ProviderError::Partial { failures }) => Ok(failures),
        Err(e) => Err(e),
    }
}

/// `failure` (of either half) as a failure of `record`'s change, which is what the controller matches.
fn of_record(record: &Change, failure: &ChangeFailure) -> ChangeFailure {
    let reason = &failure.reason;
    let message = if failure.is_for(record.endpoint()) {
        reason.message.clone()
    } else {
        format!("its ownership record {}: {}", failure.key.dns_name, reason.message)
    };
    ChangeFailure::new(record.endpoint(), reason.kind, message)
}
