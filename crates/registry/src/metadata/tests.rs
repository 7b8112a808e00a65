//! The registry of ownership on the records, against the in-memory provider made to keep metadata: one
//! record per record, migrations both ways through states that are each owned, foreign records untouched.

use std::sync::Arc;

use async_trait::async_trait;
use extdns_endpoint::{Change, DomainFilter, Endpoint, RecordType};
use extdns_plan::PlanConfig;
use extdns_provider::metadata::OWNERSHIP_PROPERTY;
use extdns_provider::{InMemoryProvider, Provider, ProviderError, ReadState, Records, Unit};

use super::MetadataRegistry;
use crate::{Ownership, OwnershipConfig, OwnershipStore, Registry, RegistryError, TxtRegistryConfig};

/// The in-memory provider with room for `room` characters of payload on every record (it keeps the
/// property as it keeps every property).
struct Keeping {
    inner: InMemoryProvider,
    room: Option<usize>,
}

#[async_trait]
impl Provider for Keeping {
    async fn records(&self) -> Result<Records, ProviderError> {
        self.inner.records().await
    }
    async fn apply(&self, read: &ReadState, units: &[Unit<'_>]) -> Result<(), ProviderError> {
        self.inner.apply(read, units).await
    }
    fn domain_filter(&self) -> DomainFilter {
        self.inner.domain_filter()
    }
    fn ownership_room(&self, _endpoint: &Endpoint) -> Option<usize> {
        self.room
    }
}

fn zone(records: Vec<Endpoint>, room: Option<usize>) -> Arc<Keeping> {
    let inner = InMemoryProvider::with_records(vec!["example.org".to_string()], records);
    Arc::new(Keeping { inner, room })
}

fn config(owner: &str, store: OwnershipStore) -> Result<TxtRegistryConfig, RegistryError> {
    let o = OwnershipConfig {
        owner_id: owner.to_string(),
        ..OwnershipConfig::default()
    };
    let mut c = TxtRegistryConfig::new(Ownership::new(o)?);
    c.store = store;
    Ok(c)
}

fn registry(p: &Arc<Keeping>, store: OwnershipStore) -> Result<MetadataRegistry, RegistryError> {
    MetadataRegistry::new(p.clone(), config("me", store)?)
}

fn a(name: &str, ip: &str) -> Endpoint {
    Endpoint::new(name, RecordType::A, [ip])
}

/// One sync towards `desired`: read, plan as the controller does, write. Returns the changes.
async fn sync(r: &MetadataRegistry, desired: &[Endpoint]) -> Result<Vec<Change>, RegistryError> {
    let snapshot = r.records().await?;
    let plan = PlanConfig {
        owner_id: "me".to_string(),
        ..PlanConfig::default()
    };
    let desired = r.adjust_endpoints(desired.to_vec()).await?;
    let changes = extdns_plan::calculate(&plan, &snapshot.records, &desired, &r.domain_filter()).changes;
    r.apply(&snapshot, &changes).await?;
    Ok(changes)
}

async fn zone_records(p: &Keeping) -> Result<Vec<Endpoint>, ProviderError> {
    Ok(p.records().await?.endpoints)
}

fn txts(eps: &[Endpoint]) -> usize {
    eps.iter().filter(|e| e.record_type == RecordType::Txt).count()
}

fn payload(eps: &[Endpoint], name: &str) -> Option<String> {
    eps.iter()
        .find(|e| e.dns_name == name && e.record_type == RecordType::A)
        .and_then(|e| e.provider_specific.get(OWNERSHIP_PROPERTY))
        .map(str::to_string)
}

/// A zone with room for the payload, holding `web.example.org` as a registry of `store` wrote it: where
/// the migrations start.
async fn web_written_by(store: OwnershipStore) -> Result<(Arc<Keeping>, Endpoint), RegistryError> {
    let p = zone(vec![], Some(100));
    let web = a("web.example.org", "192.0.2.1");
    sync(&registry(&p, store)?, std::slice::from_ref(&web)).await?;
    Ok((p, web))
}

#[tokio::test]
async fn a_created_record_carries_its_ownership_and_no_txt_record_is_written() -> Result<(), RegistryError> {
    let p = zone(vec![], Some(100));
    let r = registry(&p, OwnershipStore::Metadata)?;
    let web = a("web.example.org", "192.0.2.1");
    assert_eq!(sync(&r, std::slice::from_ref(&web)).await?.len(), 1);
    let eps = zone_records(&p).await?;
    assert_eq!((eps.len(), txts(&eps)), (1, 0), "{eps:?}");
    assert_eq!(payload(&eps, "web.example.org").as_deref(), Some("extdns:v1;o=me"));
    let read = r.records().await?;
    assert_eq!(read.records[0].owner(), Some("me"));
    assert!(
        read.records[0].provider_specific.is_empty(),
        "the payload is the registry's, never the plan's"
    );
    assert!(sync(&r, &[web]).await?.is_empty(), "nothing to do once written");
    Ok(())
}

#[tokio::test]
async fn txt_to_metadata_writes_the_payload_first_and_deletes_the_txt_record_once_read_back()
-> Result<(), RegistryError> {
    let (p, web) = web_written_by(OwnershipStore::Txt).await?;
    assert_eq!(txts(&zone_records(&p).await?), 1);

    let meta = registry(&p, OwnershipStore::Metadata)?;
    let first = sync(&meta, std::slice::from_ref(&web)).await?;
    assert!(
        matches!(first.as_slice(), [Change::Update { .. }]),
        "previewed as an update: {first:?}"
    );
    let eps = zone_records(&p).await?;
    assert_eq!(txts(&eps), 1, "the TXT record stays until the payload is read back");
    assert!(payload(&eps, "web.example.org").is_some());
    assert_eq!(
        meta.records().await?.records[0].owner(),
        Some("me"),
        "owned through both"
    );

    assert_eq!(sync(&meta, std::slice::from_ref(&web)).await?.len(), 1);
    let eps = zone_records(&p).await?;
    assert_eq!((eps.len(), txts(&eps)), (1, 0), "{eps:?}");
    assert!(sync(&meta, &[web]).await?.is_empty());
    assert_eq!(meta.records().await?.records[0].owner(), Some("me"));
    Ok(())
}

#[tokio::test]
async fn metadata_to_txt_writes_the_txt_record_first_and_clears_the_payload_after() -> Result<(), RegistryError> {
    let (p, web) = web_written_by(OwnershipStore::Metadata).await?;

    let txt = registry(&p, OwnershipStore::Txt)?;
    assert_eq!(sync(&txt, std::slice::from_ref(&web)).await?.len(), 1);
    let eps = zone_records(&p).await?;
    assert_eq!(txts(&eps), 1);
    assert!(
        payload(&eps, "web.example.org").is_some(),
        "the payload stays until the TXT record is there"
    );

    assert_eq!(sync(&txt, std::slice::from_ref(&web)).await?.len(), 1);
    let eps = zone_records(&p).await?;
    assert_eq!((eps.len(), txts(&eps)), (2, 1));
    assert_eq!(payload(&eps, "web.example.org"), None);
    assert!(sync(&txt, &[web]).await?.is_empty());
    Ok(())
}

#[tokio::test]
async fn records_of_another_owner_or_of_nobody_are_never_written() -> Result<(), RegistryError> {
    let mut theirs = a("theirs.example.org", "192.0.2.2");
    theirs
        .provider_specific
        .set(OWNERSHIP_PROPERTY, "extdns:v1;o=someone-else");
    let external = a("ext.example.org", "192.0.2.3");
    let external_txt = Endpoint::new(
        "a-ext.example.org",
        RecordType::Txt,
        ["\"heritage=external-dns,external-dns/owner=ext\""],
    );
    let nobody = a("nobody.example.org", "192.0.2.4");
    let p = zone(vec![theirs, external, external_txt, nobody], Some(100));
    let r = registry(&p, OwnershipStore::Metadata)?;
    let before = zone_records(&p).await?;
    let desired = [
        a("theirs.example.org", "198.51.100.1"),
        a("ext.example.org", "198.51.100.2"),
        a("nobody.example.org", "198.51.100.3"),
    ];
    sync(&r, &desired).await?;
    sync(&r, &[]).await?;
    let mut after = zone_records(&p).await?;
    let mut before = before;
    let key = |e: &Endpoint| (e.dns_name.clone(), e.record_type.clone());
    before.sort_by_key(key);
    after.sort_by_key(key);
    assert_eq!(before, after);
    let read = r.records().await?;
    assert!(read.records.iter().any(|e| e.owner() == Some("someone-else")));
    Ok(())
}

#[tokio::test]
async fn a_payload_that_does_not_fit_is_refused_and_nothing_is_cut() -> Result<(), RegistryError> {
    let p = zone(vec![], Some(10));
    let r = registry(&p, OwnershipStore::Metadata)?;
    let snapshot = r.records().await?;
    let web = a("web.example.org", "192.0.2.1");
    let written = r.apply(&snapshot, &[Change::Create(web)]).await?;
    let failures = written.withheld();
    assert_eq!(failures.len(), 1, "reported refused, not written");
    assert!(
        failures[0].reason.message.contains("does not fit"),
        "{}",
        failures[0].reason.message
    );
    assert!(zone_records(&p).await?.is_empty());
    Ok(())
}

#[tokio::test]
async fn a_provider_without_metadata_is_refused_for_metadata_but_serves_txt() -> Result<(), RegistryError> {
    let p = zone(vec![], None);
    assert!(matches!(
        registry(&p, OwnershipStore::Metadata),
        Err(RegistryError::NoRecordMetadata)
    ));
    assert!(registry(&p, OwnershipStore::Txt).is_ok());
    Ok(())
}

#[tokio::test]
async fn deleting_a_record_owned_both_ways_deletes_its_txt_record_too() -> Result<(), RegistryError> {
    let (p, web) = web_written_by(OwnershipStore::Txt).await?;
    let meta = registry(&p, OwnershipStore::Metadata)?;
    sync(&meta, std::slice::from_ref(&web)).await?;
    assert_eq!(zone_records(&p).await?.len(), 2, "both ways");
    sync(&meta, &[]).await?;
    assert!(zone_records(&p).await?.is_empty());
    Ok(())
}
