//! The TXT registry over a provider whose zones are strict as the clouds' are: a write names one zone, and
//! every record in it must lie in that zone. Apex records (a top zone's, a delegated child zone's) and
//! names the provider refuses are written as external-dns writes them, and no sync fails for them.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use extdns_endpoint::{Change, Endpoint, RecordType, label};
use extdns_provider::failure::FailureKind;
use extdns_provider::zone::{self, Placement};
use extdns_provider::{Failures, Provider, ProviderError, ReadState, Records, Unit};

use crate::{Ownership, OwnershipConfig, Registry, TxtRegistry, TxtRegistryConfig};

/// Zones as a cloud keeps them: each record stored in one zone; a unit whose changes two zones (or none)
/// hold is refused, as Cloud DNS and Azure refuse a change naming a record outside the zone.
struct StrictZones {
    zones: Vec<&'static str>,
    records: Mutex<Vec<(usize, Endpoint)>>,
    /// Records (by name) whose writes are refused.
    refuse: Vec<&'static str>,
    /// Records (by name) whose writes land but whose call fails whole (a timeout after the write).
    land_then_fail: Vec<&'static str>,
    /// Records (by name) whose call fails whole before anything is written.
    fail_whole: Vec<&'static str>,
    /// Calls to `apply`.
    calls: Mutex<usize>,
}

impl StrictZones {
    fn new(zones: Vec<&'static str>) -> Self {
        StrictZones {
            zones,
            records: Mutex::new(Vec::new()),
            refuse: Vec::new(),
            land_then_fail: Vec::new(),
            fail_whole: Vec::new(),
            calls: Mutex::new(0),
        }
    }

    /// These zones, refusing the writes of the records named.
    fn refusing(self, refuse: Vec<&'static str>) -> Self {
        StrictZones { refuse, ..self }
    }

    /// These zones, where a call writing one of the records named writes, then fails whole.
    fn landing_then_failing(self, land_then_fail: Vec<&'static str>) -> Self {
        StrictZones { land_then_fail, ..self }
    }

    /// These zones, where a call writing one of the records named fails whole, writing nothing.
    fn failing_whole(self, fail_whole: Vec<&'static str>) -> Self {
        StrictZones { fail_whole, ..self }
    }

    /// The records of zone `zone`, as `name type`.
    fn zone(&self, zone: &str) -> Vec<String> {
        let at = self.zones.iter().position(|z| *z == zone);
        let records = self.records.lock().expect("records");
        let mut names: Vec<String> = records
            .iter()
            .filter(|(z, _)| Some(*z) == at)
            .map(|(_, e)| format!("{} {}", e.dns_name, e.record_type))
            .collect();
        names.sort();
        names
    }

    fn calls(&self) -> usize {
        *self.calls.lock().expect("calls")
    }
}

#[async_trait]
impl Provider for StrictZones {
    async fn records(&self) -> Result<Records, ProviderError> {
        let records = self.records.lock().expect("records");
        Ok(records.iter().map(|(_, e)| e.clone()).collect::<Vec<_>>().into())
    }

    async fn apply(&self, _read: &ReadState, units: &[Unit<'_>]) -> Result<(), ProviderError> {
        *self.calls.lock().expect("calls") += 1;
        let named = |names: &[&str]| {
            units
                .iter()
                .any(|u| names.contains(&u.change.endpoint().dns_name.as_str()))
        };
        if named(&self.fail_whole) {
            return Err(ProviderError::transient("the call failed before writing"));
        }
        let mut failures = Failures::default();
        for unit in units {
            let zone_for = |name: &str| zone::closest(&self.zones, name, |z| z);
            let z = match zone::of_unit(unit, "Strict", |_| true, zone_for) {
                Ok(z) => z,
                Err(refusal) => {
                    failures.refuse(unit, refusal);
                    continue;
                }
            };
            if self.refuse.contains(&unit.change.endpoint().dns_name.as_str()) {
                failures.refuse(unit, "refused by the test");
                continue;
            }
            let mut records = self.records.lock().expect("records");
            for change in unit.changes() {
                if let Some(old) = change.previous() {
                    records.retain(|(_, e)| e.key() != old.key());
                }
                if !matches!(change, Change::Delete(_)) {
                    let mut stored = change.endpoint().clone();
                    stored.labels = extdns_endpoint::Labels::new();
                    records.push((z, stored));
                }
            }
        }
        if named(&self.land_then_fail) {
            return Err(ProviderError::transient("timed out after writing"));
        }
        failures.into_result()
    }

    fn placement(&self, _read: &ReadState, name: &str) -> Placement {
        match Placement::closest(&self.zones, name, |z| z) {
            Placement::Zone(_) if name.contains("-*") => Placement::Refused("a '*' inside a label"),
            p => p,
        }
    }
}

/// The TXT registry, with the default ownership settings, over `zones`; and `zones`, to look into.
fn registry_over(zones: StrictZones) -> (Arc<StrictZones>, TxtRegistry) {
    let provider = Arc::new(zones);
    let ownership = Ownership::new(OwnershipConfig::default()).expect("ownership");
    let registry = TxtRegistry::new(provider.clone(), TxtRegistryConfig::new(ownership));
    (provider, registry)
}

fn a(name: &str) -> Endpoint {
    Endpoint::new(name, RecordType::A, ["192.0.2.1"])
}

/// One sync's write of `changes`, folded into the snapshot it was planned from, which is returned.
async fn sync(registry: &TxtRegistry, changes: &[Change]) -> Result<crate::Snapshot, crate::RegistryError> {
    let mut snapshot = registry.records().await?;
    let written = registry.apply(&snapshot, changes).await?;
    registry.fold_applied(&mut snapshot, changes, written);
    Ok(snapshot)
}

#[tokio::test]
async fn a_child_zone_apex_is_owned_through_the_parent_zone() {
    let (provider, registry) = registry_over(StrictZones::new(vec!["example.org", "sub.example.org"]));
    sync(&registry, &[Change::Create(a("sub.example.org"))])
        .await
        .expect("the child zone's apex is written, its ownership record in the parent zone");
    assert_eq!(provider.zone("sub.example.org"), ["sub.example.org A"]);
    assert_eq!(provider.zone("example.org"), ["a-sub.example.org TXT"]);
    let read = registry.records().await.expect("read");
    assert_eq!(
        read.records[0].owner(),
        Some("default"),
        "owned through a-sub.example.org"
    );

    let delete = Change::Delete(read.records[0].clone());
    sync(&registry, &[delete])
        .await
        .expect("deleted, record then ownership");
    assert!(provider.zone("sub.example.org").is_empty());
    assert!(provider.zone("example.org").is_empty());
}

#[tokio::test]
async fn a_top_zone_apex_is_written_without_ownership_and_is_never_taken_over() {
    let (provider, registry) = registry_over(StrictZones::new(vec!["example.org"]));
    let snapshot = sync(&registry, &[Change::Create(a("example.org"))])
        .await
        .expect("the apex is written, as external-dns writes it");
    assert_eq!(
        provider.zone("example.org"),
        ["example.org A"],
        "no ownership record anywhere"
    );
    assert_eq!(
        snapshot.records[0].owner(),
        None,
        "the folded cache does not call it ours"
    );
    let read = registry.records().await.expect("read");
    assert_eq!(read.records[0].owner(), None, "read back as nobody's");

    let calls = provider.calls();
    let delete = Change::Delete(read.records[0].clone());
    sync(&registry, &[delete])
        .await
        .expect("a delete of a record that is not ours is dropped");
    assert_eq!(provider.calls(), calls, "nothing sent");
    assert_eq!(provider.zone("example.org"), ["example.org A"]);
}

#[tokio::test]
async fn a_record_whose_ownership_name_is_refused_is_not_written() {
    let (provider, registry) = registry_over(StrictZones::new(vec!["example.org"]));
    let wildcard = a("*.example.org");
    for _ in 0..2 {
        let changes = [Change::Create(wildcard.clone())];
        let mut snapshot = registry.records().await.expect("read");
        // Known before writing, so a dry run says it too (`Registry::withheld`).
        let foreseen: Vec<_> = registry
            .withheld(&snapshot, &changes)
            .expect("withheld")
            .iter()
            .map(|f| (f.key.dns_name.clone(), f.reason.message.clone()))
            .collect();
        let written = registry.apply(&snapshot, &changes).await.expect("no failing sync");
        let reported: Vec<_> = written
            .withheld()
            .iter()
            .map(|f| (f.key.dns_name.clone(), f.reason.message.clone()))
            .collect();
        assert_eq!(
            foreseen, reported,
            "a dry run foresees exactly what the write withholds"
        );
        let withheld: Vec<_> = written
            .withheld()
            .iter()
            .map(|f| (f.key.dns_name.as_str(), f.reason.kind))
            .collect();
        assert_eq!(
            withheld,
            [("*.example.org", FailureKind::Refused)],
            "reported refused, never as written"
        );
        registry.fold_applied(&mut snapshot, &changes, written);
        assert!(snapshot.records.is_empty(), "nothing folded in");
    }
    assert_eq!(
        provider.calls(),
        0,
        "neither the record nor a-*.example.org was ever sent"
    );
}

#[tokio::test]
async fn a_withheld_record_is_named_among_the_failures_when_another_record_fails() {
    let (_, registry) = registry_over(StrictZones::new(vec!["example.org"]).refusing(vec!["bad.example.org"]));
    let changes = [Change::Create(a("*.example.org")), Change::Create(a("bad.example.org"))];
    let snapshot = registry.records().await.expect("read");
    let err = registry.apply(&snapshot, &changes).await.err();
    let Some(crate::RegistryError::Provider(ProviderError::Partial { failures })) = err else {
        panic!("want a partial failure, got {err:?}");
    };
    let mut failed: Vec<&str> = failures.iter().map(|f| f.key.dns_name.as_str()).collect();
    failed.sort_unstable();
    assert_eq!(
        failed,
        ["*.example.org", "bad.example.org"],
        "the withheld wildcard is not reported applied"
    );
}

/// A child zone's apex, its ownership record in the parent zone, written by a call that fails: an ownership
/// record stays only beside a record that landed.
#[tokio::test]
async fn a_failed_call_leaves_an_ownership_record_only_beside_a_record_that_landed() {
    struct Case {
        what: &'static str,
        zones: StrictZones,
        /// What the child zone holds after the sync.
        child: &'static [&'static str],
        /// What the parent zone holds after the sync: the ownership record, if it stays.
        parent: &'static [&'static str],
    }
    let both = || StrictZones::new(vec!["example.org", "sub.example.org"]);
    for case in [
        Case {
            what: "a call failing whole after the ownership landed takes the ownership back",
            zones: both().failing_whole(vec!["sub.example.org"]),
            child: &[],
            parent: &[],
        },
        Case {
            what: "ownership records that landed before their call failed whole are taken back",
            zones: both().landing_then_failing(vec!["a-sub.example.org"]),
            child: &[],
            parent: &[],
        },
        Case {
            what: "a record that landed behind a failed call keeps its ownership, or it would be nobody's for good",
            zones: both().landing_then_failing(vec!["sub.example.org"]),
            child: &["sub.example.org A"],
            parent: &["a-sub.example.org TXT"],
        },
    ] {
        let (provider, registry) = registry_over(case.zones);
        let err = sync(&registry, &[Change::Create(a("sub.example.org"))]).await.err();
        assert!(err.is_some(), "{}: the call said it failed", case.what);
        assert_eq!(provider.zone("sub.example.org"), case.child, "{}", case.what);
        assert_eq!(provider.zone("example.org"), case.parent, "{}", case.what);
    }
}

#[test]
fn an_update_that_writes_a_new_format_ownership_record_no_zone_holds_goes_unowned() {
    let provider = StrictZones::new(vec!["example.org"]);
    let read = ReadState::default();
    let update = Change::Update {
        old: Box::new(a("example.org")),
        new: Box::new(a("example.org")),
    };
    let txt = Endpoint::new("a-example.org", RecordType::Txt, ["\"heritage=external-dns\""]);
    assert_eq!(
        crate::placement::pairing(&provider, &read, &update, &Change::Create(txt)),
        crate::placement::Pairing::Unowned,
        "an apex owned through an old-format record is updated, not refused for a new-format name outside"
    );
}

#[tokio::test]
async fn a_record_refused_after_its_ownership_landed_in_another_zone_takes_it_back() {
    let (provider, registry) =
        registry_over(StrictZones::new(vec!["example.org", "sub.example.org"]).refusing(vec!["sub.example.org"]));
    let err = sync(
        &registry,
        &[Change::Create(a("sub.example.org").with_label(label::RESOURCE, "x"))],
    )
    .await
    .expect_err("the record was refused");
    let crate::RegistryError::Provider(ProviderError::Partial { failures }) = err else {
        panic!("a partial failure, got {err}");
    };
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].key.dns_name, "sub.example.org", "named by the record");
    assert!(
        provider.zone("example.org").is_empty(),
        "the ownership record was removed again"
    );
}

#[tokio::test]
async fn the_prefix_the_warning_names_puts_a_top_apex_s_ownership_record_inside_the_zone() {
    let provider = Arc::new(StrictZones::new(vec!["example.org"]));
    let flags = OwnershipConfig {
        prefix: "_extdns-%{record_type}.".to_string(),
        ..OwnershipConfig::default()
    };
    let ownership = Ownership::new(flags).expect("ownership");
    let registry = TxtRegistry::new(provider.clone(), TxtRegistryConfig::new(ownership));
    sync(&registry, &[Change::Create(a("example.org"))])
        .await
        .expect("written");
    assert_eq!(
        provider.zone("example.org"),
        ["_extdns-a.example.org TXT", "example.org A"]
    );
    let read = registry.records().await.expect("read");
    assert_eq!(read.records[0].owner(), Some("default"), "owned");

    // A prefix without the record type still names it outside the zone.
    let mapper = crate::NameMapper::new("_extdns.", "", "");
    assert_eq!(
        mapper.to_txt_name("example.org", &RecordType::A),
        "_extdns.a-example.org"
    );
}
