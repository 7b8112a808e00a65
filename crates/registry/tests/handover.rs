//! A hand-over between two owner ids in two phases (`--txt-release-to-owner`, then
//! `--txt-adopt-from-owner`), as two controllers drive the plan and the TXT registry over one zone: after
//! each sync of either, every record is in the zone once, with exactly one ownership record.

use std::sync::Arc;

use extdns_endpoint::{Change, Endpoint, ObjectKey, RecordType, label};
use extdns_plan::{PlanConfig, calculate};
use extdns_provider::InMemoryProvider;
use extdns_registry::{Ownership, OwnershipConfig, Registry, RegistryError, TxtRegistry, TxtRegistryConfig};

/// An A record as a source asks for it, for the Service `web` of namespace `default`.
fn a(name: &str, ip: &str) -> Endpoint {
    let mut e = Endpoint::new(name, RecordType::A, [ip]);
    e.ref_objects
        .extend(ObjectKey::from_resource_label("service/default/web"));
    e
}

/// One controller: its owner id, what it declares, its registry.
struct Controller {
    plan: PlanConfig,
    registry: TxtRegistry,
}

impl Controller {
    fn new(zone: &Arc<InMemoryProvider>, owner: &str, release_to: Option<&str>, adopt_from: Option<&str>) -> Self {
        let mut o = OwnershipConfig::default();
        o.owner_id = owner.to_string();
        o.adopt_from_owner = adopt_from.map(str::to_string);
        let ownership = Ownership::new(o).expect("valid ownership");
        let plan = PlanConfig {
            owner_id: owner.to_string(),
            release_to: release_to.map(str::to_string),
            adopt_from: adopt_from.map(str::to_string),
            ..PlanConfig::default()
        };
        Controller {
            plan,
            registry: TxtRegistry::new(zone.clone(), TxtRegistryConfig::new(ownership)),
        }
    }

    /// One reconcile towards `desired`; the changes it applied.
    async fn sync(&self, desired: &[Endpoint]) -> Result<Vec<Change>, RegistryError> {
        let snapshot = self.registry.records().await?;
        let mut changes = calculate(&self.plan, &snapshot.records, desired, &self.registry.domain_filter()).changes;
        changes.retain(Change::is_effective);
        if !changes.is_empty() {
            self.registry.apply(&snapshot, &changes).await?;
        }
        Ok(changes)
    }
}

/// The A records of the zone as (name, target, owner), read by `reader`; and that each has exactly one
/// ownership record.
async fn held(zone: &InMemoryProvider, reader: &Controller) -> Result<Vec<(String, String, String)>, RegistryError> {
    let all = zone.snapshot();
    let a_records: Vec<&Endpoint> = all.iter().filter(|e| e.record_type == RecordType::A).collect();
    for r in &a_records {
        let ownership = all
            .iter()
            .filter(|e| e.record_type == RecordType::Txt && e.dns_name == format!("a-{}", r.dns_name))
            .map(|e| e.targets.len())
            .sum::<usize>();
        assert_eq!(ownership, 1, "{} has one ownership record: {all:?}", r.dns_name);
    }
    let read = reader.registry.records().await?.records.into_vec();
    let mut out: Vec<(String, String, String)> = read
        .iter()
        .filter(|e| e.record_type == RecordType::A)
        .map(|e| {
            (
                e.dns_name.clone(),
                e.targets.join(","),
                e.owner().unwrap_or("").to_string(),
            )
        })
        .collect();
    out.sort();
    assert_eq!(out.len(), a_records.len(), "no record duplicated or lost");
    Ok(out)
}

fn row(name: &str, target: &str, owner: &str) -> (String, String, String) {
    (name.to_string(), target.to_string(), owner.to_string())
}

#[tokio::test]
async fn records_are_handed_over_in_two_phases_never_unowned_duplicated_or_deleted() -> Result<(), RegistryError> {
    let zone = Arc::new(InMemoryProvider::new(vec!["example.org".into()]));
    let blue_wants = [a("web.example.org", "192.0.2.1"), a("api.example.org", "192.0.2.2")];
    let blue = Controller::new(&zone, "blue", None, None);
    blue.sync(&blue_wants).await?;

    // Phase 1: blue releases to green. Its records stay as they are, the release in their ownership
    // records; a record blue no longer asks for is not deleted, a change it asks for is not made.
    let blue = Controller::new(&zone, "blue", Some("green"), None);
    let marking = blue.sync(&[a("web.example.org", "192.0.2.9")]).await?;
    assert_eq!(marking.len(), 2, "{marking:?}");
    let read = blue.registry.records().await?.records.into_vec();
    assert!(
        read.iter().all(|e| e.label(label::RELEASED_TO) == Some("green")),
        "{read:?}"
    );
    assert_eq!(
        held(&zone, &blue).await?,
        [
            row("api.example.org", "192.0.2.2", "blue"),
            row("web.example.org", "192.0.2.1", "blue")
        ]
    );
    assert!(blue.sync(&[]).await?.is_empty(), "a released record is never deleted");

    // Phase 2: green adopts what it would write identically (web); api differs, so it stays blue's.
    let green = Controller::new(&zone, "green", None, Some("blue"));
    let adopted = green
        .sync(&[a("web.example.org", "192.0.2.1"), a("api.example.org", "192.0.2.7")])
        .await?;
    assert_eq!(adopted.len(), 1, "{adopted:?}");
    assert_eq!(
        held(&zone, &green).await?,
        [
            row("api.example.org", "192.0.2.2", "blue"),
            row("web.example.org", "192.0.2.1", "green")
        ]
    );

    // Settled: neither touches the other's record, whatever it asks for.
    assert!(blue.sync(&blue_wants).await?.is_empty());
    assert!(
        green
            .sync(&[a("web.example.org", "192.0.2.1"), a("api.example.org", "192.0.2.7")])
            .await?
            .is_empty()
    );
    // Green now manages web as its own.
    let moved = green.sync(&[a("web.example.org", "192.0.2.3")]).await?;
    assert_eq!(moved.len(), 1, "{moved:?}");
    assert_eq!(
        held(&zone, &green).await?,
        [
            row("api.example.org", "192.0.2.2", "blue"),
            row("web.example.org", "192.0.2.3", "green")
        ]
    );
    Ok(())
}

#[tokio::test]
async fn nothing_is_adopted_before_the_owner_releases_it() -> Result<(), RegistryError> {
    let zone = Arc::new(InMemoryProvider::new(vec!["example.org".into()]));
    let wants = [a("web.example.org", "192.0.2.1")];
    Controller::new(&zone, "blue", None, None).sync(&wants).await?;
    let green = Controller::new(&zone, "green", None, Some("blue"));
    assert!(green.sync(&wants).await?.is_empty());
    assert_eq!(
        held(&zone, &green).await?,
        [row("web.example.org", "192.0.2.1", "blue")]
    );
    Ok(())
}
