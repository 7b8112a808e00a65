//! Plan, TXT registry and in-memory provider together, as the controller drives them: a zone written by
//! external-dns is taken over without changes, extdns reaches a steady state, and foreign records survive.

use std::sync::Arc;

use extdns_endpoint::{Change, Changes, Endpoint, ObjectKey, RecordType};
use extdns_plan::{PlanConfig, calculate};
use extdns_provider::InMemoryProvider;
use extdns_registry::{Ownership, OwnershipConfig, Registry, RegistryError, TxtRegistry, TxtRegistryConfig};

/// The ownership values external-dns (owner "default") writes for the Services default/nginx and default/web,
/// and the one another external-dns (owner "team-b") writes.
const NGINX: &str = "\"heritage=external-dns,external-dns/owner=default,external-dns/resource=service/default/nginx\"";
const WEB: &str = "\"heritage=external-dns,external-dns/owner=default,external-dns/resource=service/default/web\"";
const TEAM_B: &str = "\"heritage=external-dns,external-dns/owner=team-b\"";

/// An A record as a source asks for it: named by its object, whose `resource` label the registry renders.
fn a(name: &str, ip: &str, resource: &str) -> Endpoint {
    let mut e = Endpoint::new(name, RecordType::A, [ip]);
    e.ref_objects.extend(ObjectKey::from_resource_label(resource));
    assert!(!e.ref_objects.is_empty(), "{resource} names an object");
    e
}

/// An A record as a zone holds it, with no labels.
fn zone_a(name: &str, ip: &str) -> Endpoint {
    Endpoint::new(name, RecordType::A, [ip])
}

fn txt(name: &str, value: &str) -> Endpoint {
    Endpoint::new(name, RecordType::Txt, [value])
}

/// One reconcile; returns the changes it applied.
async fn sync(registry: &TxtRegistry, desired: &[Endpoint]) -> Result<Changes, RegistryError> {
    let snapshot = registry.records().await?;
    let desired = registry.adjust_endpoints(desired.to_vec()).await?;
    let config = PlanConfig {
        owner_id: registry.ownership().owner_id().to_string(),
        ..PlanConfig::default()
    };
    let mut changes = calculate(&config, &snapshot.records, &desired, &registry.domain_filter()).changes;
    changes.retain(Change::is_effective);
    if !changes.is_empty() {
        registry.apply(&snapshot, &changes).await?;
    }
    Ok(changes.into_iter().collect())
}

/// An `example.com` zone holding `records` in memory, and a TXT registry over it with `ownership`.
fn zone_with(
    records: Vec<Endpoint>,
    ownership: OwnershipConfig,
) -> Result<(Arc<InMemoryProvider>, TxtRegistry), RegistryError> {
    let provider = Arc::new(InMemoryProvider::with_records(vec!["example.com".into()], records));
    let config = TxtRegistryConfig::new(Ownership::new(ownership)?);
    Ok((provider.clone(), TxtRegistry::new(provider, config)))
}

#[tokio::test]
async fn a_zone_external_dns_manages_is_taken_over_without_changes() -> Result<(), RegistryError> {
    // Exactly what external-dns (owner "default") leaves in a zone for a Service default/nginx.
    let zone = vec![
        zone_a("nginx.example.com", "10.0.0.1"),
        txt("a-nginx.example.com", NGINX),
    ];
    let (provider, registry) = zone_with(zone.clone(), OwnershipConfig::default())?;
    let before = provider.snapshot();
    let changes = sync(
        &registry,
        &[a("nginx.example.com", "10.0.0.1", "service/default/nginx")],
    )
    .await?;
    assert!(changes.is_empty(), "{changes:?}");
    assert_eq!(provider.snapshot(), before);
    assert_eq!(before.len(), zone.len());
    Ok(())
}

#[tokio::test]
async fn syncing_twice_changes_nothing_the_second_time() -> Result<(), RegistryError> {
    let (provider, registry) = zone_with(Vec::new(), OwnershipConfig::default())?;
    let desired = [
        a("web.example.com", "10.0.0.1", "service/default/web"),
        a("api.example.com", "10.0.0.2", "service/default/api"),
    ];
    let first = sync(&registry, &desired).await?;
    assert_eq!(first.create.len(), 2);
    assert_eq!(provider.snapshot().len(), 4, "two records and their two TXT records");
    let second = sync(&registry, &desired).await?;
    assert!(second.is_empty(), "{second:?}");
    // Moving a record is one update of the record and its TXT record.
    let moved = [
        a("web.example.com", "10.0.0.9", "service/default/web"),
        desired[1].clone(),
    ];
    let third = sync(&registry, &moved).await?;
    assert_eq!(third.update_new.len(), 1);
    assert_eq!(
        provider
            .snapshot()
            .iter()
            .filter(|e| e.targets.0 == ["10.0.0.9"])
            .count(),
        1
    );
    // Removing everything removes the TXT records too.
    sync(&registry, &[]).await?;
    assert!(provider.snapshot().is_empty(), "{:?}", provider.snapshot());
    Ok(())
}

#[tokio::test]
async fn records_of_another_owner_or_of_nobody_are_never_touched() -> Result<(), RegistryError> {
    let zone = vec![
        zone_a("theirs.example.com", "192.0.2.1"),
        txt("a-theirs.example.com", TEAM_B),
        zone_a("manual.example.com", "192.0.2.2"),
    ];
    let (provider, registry) = zone_with(zone.clone(), OwnershipConfig::default())?;
    let before = provider.snapshot();
    assert_eq!(before.len(), zone.len());
    // We want other targets at both names, and an AAAA beside them: nothing may change.
    let desired = [
        a("theirs.example.com", "10.0.0.1", "service/default/x"),
        a("manual.example.com", "10.0.0.2", "service/default/y"),
        Endpoint::new("manual.example.com", RecordType::Aaaa, ["2001:db8::1"]),
    ];
    sync(&registry, &desired).await?;
    sync(&registry, &[]).await?;
    assert_eq!(provider.snapshot(), before);
    Ok(())
}

#[tokio::test]
async fn an_old_format_zone_is_migrated_to_the_new_format() -> Result<(), RegistryError> {
    let zone = vec![zone_a("web.example.com", "10.0.0.1"), txt("web.example.com", WEB)];
    let (provider, registry) = zone_with(zone, OwnershipConfig::default())?;
    let desired = [a("web.example.com", "10.0.0.1", "service/default/web")];
    let first = sync(&registry, &desired).await?;
    assert_eq!(
        first.update_new.len(),
        1,
        "a forced update writes the new-format TXT record"
    );
    assert!(provider.snapshot().iter().any(|e| e.dns_name == "a-web.example.com"));
    assert!(sync(&registry, &desired).await?.is_empty());
    Ok(())
}

#[tokio::test]
async fn an_encrypted_zone_written_elsewhere_is_taken_over_without_changes() -> Result<(), RegistryError> {
    // Encrypted outside Rust the way external-dns does it (gzip, AES-256-GCM, base64; nonce 0x07 x 12).
    let sealed = "BwcHBwcHBwcHBwcHYslmUunnEcXTI8wFqBUSGa11hQ25URRRJxLg2PYPPuiBAt/Y4zYgiDEOLrs7UjbGcCVHWsClpVQaW/5AS9EXxe3nYfluzHoOmlxB+VUYg3Z3aByIQQ+1RFW4d3bg88429kM=";
    let zone = vec![
        zone_a("shop.example.com", "10.0.0.1"),
        txt("a-shop.example.com", &format!("\"{sealed}\"")),
    ];
    let mut config = OwnershipConfig::default();
    config.owner_id = "team-a".into();
    config.encrypt_enabled = true;
    config.encrypt_aes_key = Some("01234567890123456789012345678901".into());
    let (provider, registry) = zone_with(zone, config)?;
    let before = provider.snapshot();
    let changes = sync(&registry, &[a("shop.example.com", "10.0.0.1", "httproute/web/shop")]).await?;
    assert!(changes.is_empty(), "{changes:?}");
    assert_eq!(provider.snapshot(), before);
    // An update rewrites the TXT record (encrypted under a fresh nonce, as external-dns does for the new
    // side of an update), and the next sync is steady again.
    let moved = [a("shop.example.com", "10.0.0.2", "httproute/web/shop")];
    assert_eq!(sync(&registry, &moved).await?.update_new.len(), 1);
    let value = provider
        .snapshot()
        .into_iter()
        .find(|e| e.record_type == RecordType::Txt)
        .map(|e| e.targets.0[0].clone());
    assert!(value.is_some_and(|v| v.starts_with('"') && !v.contains("heritage") && !v.contains(sealed)));
    assert!(sync(&registry, &moved).await?.is_empty());
    assert_eq!(registry.records().await?.records[0].owner(), Some("team-a"));
    Ok(())
}
