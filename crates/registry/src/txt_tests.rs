//! The TXT registry against the in-memory provider: external-dns's records are read as owned, and what
//! extdns writes is what external-dns would write (names, `heritage`/`owner`/`resource` labels, encryption).

use std::sync::Arc;

use extdns_endpoint::{Change, Changes, Endpoint, ProviderSpecific, RecordType, label};
use extdns_provider::{InMemoryProvider, Provider, ProviderError};

use crate::{FORCE_UPDATE, Ownership, OwnershipConfig, Registry, RegistryError, TxtRegistry, TxtRegistryConfig};

/// Every TXT registry setting in one flat value, as the tests state them.
#[derive(Debug, Clone)]
struct TestConfig {
    owner_id: String,
    prefix: String,
    suffix: String,
    wildcard_replacement: String,
    encrypt_enabled: bool,
    encrypt_aes_key: Option<String>,
    migrate_from_owner: Option<String>,
    adopt_from_owner: Option<String>,
    managed_types: Vec<RecordType>,
    excluded_types: Vec<RecordType>,
}

impl Default for TestConfig {
    fn default() -> Self {
        let o = OwnershipConfig::default();
        TestConfig {
            owner_id: o.owner_id,
            prefix: o.prefix,
            suffix: o.suffix,
            wildcard_replacement: o.wildcard_replacement,
            encrypt_enabled: o.encrypt_enabled,
            encrypt_aes_key: o.encrypt_aes_key,
            migrate_from_owner: o.migrate_from_owner,
            adopt_from_owner: o.adopt_from_owner,
            managed_types: vec![RecordType::A, RecordType::Aaaa, RecordType::Cname],
            excluded_types: Vec::new(),
        }
    }
}

impl TestConfig {
    /// The defaults with the TXT records' names under `prefix`.
    fn prefixed(prefix: &str) -> Self {
        TestConfig {
            prefix: prefix.into(),
            ..Default::default()
        }
    }

    fn build(self) -> Result<TxtRegistryConfig, RegistryError> {
        let ownership = OwnershipConfig {
            owner_id: self.owner_id,
            prefix: self.prefix,
            suffix: self.suffix,
            wildcard_replacement: self.wildcard_replacement,
            encrypt_enabled: self.encrypt_enabled,
            encrypt_aes_key: self.encrypt_aes_key,
            migrate_from_owner: self.migrate_from_owner,
            adopt_from_owner: self.adopt_from_owner,
        };
        let mut config = TxtRegistryConfig::new(Ownership::new(ownership)?);
        config.managed_types = self.managed_types;
        config.excluded_types = self.excluded_types;
        Ok(config)
    }

    fn registry(self, provider: Arc<dyn Provider>) -> Result<TxtRegistry, RegistryError> {
        Ok(TxtRegistry::new(provider, self.build()?))
    }
}

/// One sync's write: read a snapshot, then apply the changes against it.
async fn apply(registry: &TxtRegistry, changes: Changes) -> Result<(), RegistryError> {
    let snapshot = registry.records().await?;
    let changes = changes
        .into_changes()
        .map_err(|e| RegistryError::Provider(ProviderError::fatal(e.to_string())))?;
    registry.apply(&snapshot, &changes).await.map(drop)
}

/// One sync that creates `records`.
async fn create(registry: &TxtRegistry, records: Vec<Endpoint>) -> Result<(), RegistryError> {
    apply(registry, records.into_iter().map(Change::Create).collect()).await
}

/// An empty zone with `record` created in it through the registry.
async fn created(record: Endpoint) -> Result<Arc<InMemoryProvider>, RegistryError> {
    let (provider, registry) = zone(vec![]);
    create(&registry, vec![record]).await?;
    Ok(provider)
}

/// One sync that updates each of `old` to its partner in `new`.
async fn update(registry: &TxtRegistry, old: Vec<Endpoint>, new: Vec<Endpoint>) -> Result<(), RegistryError> {
    let (update_old, update_new) = (old, new);
    apply(
        registry,
        Changes {
            update_old,
            update_new,
            ..Changes::default()
        },
    )
    .await
}

/// One sync that deletes `records`.
async fn delete(registry: &TxtRegistry, records: Vec<Endpoint>) -> Result<(), RegistryError> {
    apply(registry, records.into_iter().map(Change::Delete).collect()).await
}

const NGINX_VALUE: &str =
    "\"heritage=external-dns,external-dns/owner=default,external-dns/resource=service/default/nginx\"";
const KEY: &str = "01234567890123456789012345678901";

/// A Service's key, as a source names the object of the records it asks for: their `resource` label is
/// rendered from it where they are written.
fn service(namespace: &str, name: &str) -> extdns_endpoint::ObjectKey {
    extdns_endpoint::ObjectKey::new(extdns_object::ResourceKind::Service, namespace, name)
}

fn a(name: &str, ip: &str) -> Endpoint {
    Endpoint::new(name, RecordType::A, [ip])
}

fn txt(name: &str, value: &str) -> Endpoint {
    Endpoint::new(name, RecordType::Txt, [value])
}

fn setup(records: Vec<Endpoint>, config: TestConfig) -> (Arc<InMemoryProvider>, TxtRegistry) {
    let provider = Arc::new(InMemoryProvider::with_records(vec!["example.com".into()], records));
    let registry = config
        .registry(provider.clone())
        .unwrap_or_else(|e| panic!("config: {e}"));
    (provider, registry)
}

/// `foo.example.com` A and its ownership record, named `txt_name`, as external-dns writes it for the Service
/// default/nginx.
fn nginx_at(txt_name: &str) -> Vec<Endpoint> {
    vec![a("foo.example.com", "1.2.3.4"), txt(txt_name, NGINX_VALUE)]
}

/// [`setup`] with the default configuration.
fn zone(records: Vec<Endpoint>) -> (Arc<InMemoryProvider>, TxtRegistry) {
    setup(records, TestConfig::default())
}

fn find<'a>(eps: &'a [Endpoint], name: &str, t: RecordType) -> Option<&'a Endpoint> {
    eps.iter().find(|e| e.dns_name == name && e.record_type == t)
}

fn value_of(eps: &[Endpoint], name: &str) -> Option<String> {
    find(eps, name, RecordType::Txt).and_then(|e| e.targets.first().map(ToString::to_string))
}

/// The value of `foo.example.com`'s ownership record in `provider`.
fn foo_ownership(provider: &InMemoryProvider) -> Option<String> {
    value_of(&provider.snapshot(), "a-foo.example.com")
}

// --- reading ---

#[tokio::test]
async fn records_external_dns_wrote_are_read_as_owned() -> Result<(), RegistryError> {
    let (_, registry) = zone(nginx_at("a-foo.example.com"));
    let records = registry.records().await?.records;
    assert_eq!(records.len(), 1, "the registry's TXT record is hidden: {records:?}");
    assert_eq!(records[0].owner(), Some("default"));
    assert_eq!(records[0].resource().as_deref(), Some("service/default/nginx"));
    assert!(records[0].provider_specific.get(FORCE_UPDATE).is_none());
    Ok(())
}

#[tokio::test]
async fn records_without_a_txt_record_have_no_owner() -> Result<(), RegistryError> {
    let (_, registry) = zone(vec![a("foo.example.com", "1.2.3.4")]);
    let records = registry.records().await?.records;
    assert_eq!(records[0].owner(), None);
    Ok(())
}

#[tokio::test]
async fn old_format_txt_records_are_read_and_the_new_one_is_forced() -> Result<(), RegistryError> {
    let (_, registry) = zone(nginx_at("foo.example.com"));
    let records = registry.records().await?.records;
    let r = find(&records, "foo.example.com", RecordType::A)
        .ok_or(RegistryError::Provider(ProviderError::fatal("missing")))?;
    assert_eq!(r.owner(), Some("default"));
    assert_eq!(r.provider_specific.get(FORCE_UPDATE), Some("true"));
    Ok(())
}

#[tokio::test]
async fn old_format_txt_records_are_not_read_for_aaaa_records() -> Result<(), RegistryError> {
    let aaaa = Endpoint::new("foo.example.com", RecordType::Aaaa, ["2001:db8::1"]);
    let (_, registry) = zone(vec![aaaa, txt("foo.example.com", NGINX_VALUE)]);
    let records = registry.records().await?.records;
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].owner(), None);
    Ok(())
}

#[tokio::test]
async fn legacy_cname_txt_records_own_alias_a_records() -> Result<(), RegistryError> {
    let mut ps = ProviderSpecific::default();
    ps.set("alias", "true");
    let alias = a("foo.example.com", "1.2.3.4").with_provider_specific(ps);
    let (_, registry) = zone(vec![alias, txt("cname-foo.example.com", NGINX_VALUE)]);
    let records = registry.records().await?.records;
    assert_eq!(records[0].owner(), Some("default"));
    // The a- record it should have is missing, so it is written by a forced update.
    assert_eq!(records[0].provider_specific.get(FORCE_UPDATE), Some("true"));
    Ok(())
}

#[tokio::test]
async fn cname_txt_records_do_not_own_plain_a_records() -> Result<(), RegistryError> {
    let (_, registry) = zone(nginx_at("cname-foo.example.com"));
    assert_eq!(registry.records().await?.records[0].owner(), None);
    Ok(())
}

#[tokio::test]
async fn txt_records_without_heritage_are_ordinary_records() -> Result<(), RegistryError> {
    let spf = txt("example.com", "\"v=spf1 -all\"");
    let (_, registry) = zone(vec![spf.clone()]);
    assert_eq!(registry.records().await?.records.into_vec(), vec![spf]);
    Ok(())
}

#[tokio::test]
async fn txt_records_without_targets_are_dropped() -> Result<(), RegistryError> {
    let empty = Endpoint::new("empty.example.com", RecordType::Txt, Vec::<String>::new());
    let (_, registry) = zone(vec![empty, a("x.example.com", "1.1.1.1")]);
    let records = registry.records().await?.records;
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].record_type, RecordType::A);
    Ok(())
}

#[tokio::test]
async fn txt_records_of_another_owner_make_records_foreign() -> Result<(), RegistryError> {
    let value = "\"heritage=external-dns,external-dns/owner=team-b,external-dns/resource=service/b/web\"";
    let (_, registry) = zone(vec![a("foo.example.com", "1.2.3.4"), txt("a-foo.example.com", value)]);
    let r = &registry.records().await?.records[0];
    assert_eq!(r.owner(), Some("team-b"));
    assert!(
        r.provider_specific.get(FORCE_UPDATE).is_none(),
        "only our records are migrated"
    );
    Ok(())
}

#[tokio::test]
async fn set_identifiers_must_match_between_record_and_txt() -> Result<(), RegistryError> {
    let (_, registry) = zone(vec![
        a("foo.example.com", "1.2.3.4").with_set_identifier("blue"),
        a("foo.example.com", "5.6.7.8").with_set_identifier("green"),
        txt("a-foo.example.com", NGINX_VALUE).with_set_identifier("blue"),
    ]);
    let records = registry.records().await?.records;
    let owner_of = |set: &str| {
        records
            .iter()
            .find(|e| e.set_identifier == set)
            .and_then(|e| e.owner().map(str::to_string))
    };
    assert_eq!(owner_of("blue").as_deref(), Some("default"));
    assert_eq!(owner_of("green"), None);
    Ok(())
}

#[tokio::test]
async fn prefixed_txt_records_are_read() -> Result<(), RegistryError> {
    let (_, registry) = setup(nginx_at("txt.a-foo.example.com"), TestConfig::prefixed("txt."));
    assert_eq!(registry.records().await?.records[0].owner(), Some("default"));
    Ok(())
}

#[tokio::test]
async fn wildcard_records_are_owned_through_the_replacement() -> Result<(), RegistryError> {
    let config = TestConfig {
        wildcard_replacement: "wild".into(),
        ..Default::default()
    };
    let (provider, registry) = setup(vec![], config);
    let star = Endpoint::new("*.example.com", RecordType::Cname, ["lb.example.com"]);
    create(&registry, vec![star]).await?;
    assert!(find(&provider.snapshot(), "cname-wild.example.com", RecordType::Txt).is_some());
    let records = registry.records().await?.records;
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].owner(), Some("default"));
    Ok(())
}

// --- writing ---

#[tokio::test]
async fn created_records_get_the_txt_record_external_dns_would_write() -> Result<(), RegistryError> {
    let (provider, registry) = zone(vec![]);
    let e = a("foo.example.com", "1.2.3.4").with_ref_object(service("default", "nginx"));
    create(&registry, vec![e]).await?;
    let snapshot = provider.snapshot();
    assert_eq!(snapshot.len(), 2);
    assert_eq!(value_of(&snapshot, "a-foo.example.com").as_deref(), Some(NGINX_VALUE));
    let t = find(&snapshot, "a-foo.example.com", RecordType::Txt)
        .ok_or(RegistryError::Provider(ProviderError::fatal("no txt")))?;
    assert_eq!(t.record_ttl.0, 0);
    // Read back: owned, and nothing to migrate.
    let records = registry.records().await?.records;
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].owner(), Some("default"));
    assert!(records[0].provider_specific.get(FORCE_UPDATE).is_none());
    Ok(())
}

/// What external-dns writes for the records of `--fqdn-target-template` and `--compatibility`: an ownership
/// record without `resource` (behaviour reference §6.2 step 3, §6.8), though the Service is theirs for
/// Events. Both as the service source makes them: the Service referenced, not named.
#[tokio::test]
async fn records_naming_no_object_get_an_ownership_record_without_resource() -> Result<(), RegistryError> {
    let referencing_nginx = |mut e: Endpoint| {
        e.ref_objects.insert(service("default", "nginx"));
        e.ref_objects.reference_only();
        e
    };
    let templated = referencing_nginx(a("foo.example.com", "1.2.3.4"));
    let compat = referencing_nginx(Endpoint::new("bar.example.com", RecordType::Cname, ["lb.example.net"]));
    let (provider, registry) = zone(vec![]);
    let mut snapshot = registry.records().await?;
    let changes = [Change::Create(templated), Change::Create(compat)];
    let written = registry.apply(&snapshot, &changes).await?;
    assert!(registry.fold_applied(&mut snapshot, &changes, written));
    let zone = provider.snapshot();
    for name in ["a-foo.example.com", "cname-bar.example.com"] {
        assert_eq!(
            value_of(&zone, name).as_deref(),
            Some("\"heritage=external-dns,external-dns/owner=default\""),
            "{name}"
        );
    }
    assert_eq!(cached(&snapshot, "foo.example.com").resource(), None);
    assert_eq!(snapshot_text(&snapshot), snapshot_text(&registry.records().await?));
    Ok(())
}

/// Two Services asking for one name: the record is named by the first (the one the merges keep first),
/// though the other sorts before it; the TXT record, the cache after the write and the record read back
/// agree.
#[tokio::test]
async fn a_record_of_two_objects_is_named_by_the_first_everywhere() -> Result<(), RegistryError> {
    let (provider, registry) = zone(vec![]);
    let e = a("foo.example.com", "1.2.3.4")
        .with_ref_object(service("default", "nginx"))
        .with_ref_object(service("default", "api"));
    let mut snapshot = registry.records().await?;
    let changes = [Change::Create(e.clone())];
    let written = registry.apply(&snapshot, &changes).await?;
    assert!(registry.fold_applied(&mut snapshot, &changes, written));
    assert_eq!(
        value_of(&provider.snapshot(), "a-foo.example.com").as_deref(),
        Some(NGINX_VALUE)
    );
    let cached = cached(&snapshot, "foo.example.com");
    assert_eq!(cached.resource().as_deref(), Some("service/default/nginx"));
    assert!(
        cached.ref_objects.is_empty(),
        "the cache keeps the label, not the objects"
    );
    assert_eq!(snapshot_text(&snapshot), snapshot_text(&registry.records().await?));
    assert_eq!(e.resource(), cached.resource(), "as the plan compares them next time");
    Ok(())
}

#[tokio::test]
async fn txt_records_carry_the_set_identifier_and_provider_specific_properties() -> Result<(), RegistryError> {
    let mut ps = ProviderSpecific::default();
    ps.set("aws/weight", "10");
    let e = a("foo.example.com", "1.2.3.4")
        .with_set_identifier("blue")
        .with_provider_specific(ps.clone());
    let snapshot = created(e).await?.snapshot();
    let t = find(&snapshot, "a-foo.example.com", RecordType::Txt)
        .ok_or(RegistryError::Provider(ProviderError::fatal("no txt")))?;
    assert_eq!(t.set_identifier, "blue");
    assert_eq!(t.provider_specific, ps);
    Ok(())
}

#[tokio::test]
async fn a_txt_record_that_exists_is_not_created_again() -> Result<(), RegistryError> {
    let (provider, registry) = zone(vec![txt("a-foo.example.com", NGINX_VALUE)]);
    registry.records().await?;
    let e = a("foo.example.com", "1.2.3.4").with_ref_object(service("default", "nginx"));
    create(&registry, vec![e]).await?;
    assert_eq!(provider.snapshot().len(), 2);
    Ok(())
}

#[tokio::test]
async fn existing_txt_records_are_told_apart_by_set_identifier() -> Result<(), RegistryError> {
    let (provider, registry) = zone(vec![
        txt("a-foo.example.com", NGINX_VALUE).with_set_identifier("blue"),
        txt("a-bar.example.com", NGINX_VALUE).with_set_identifier("blue"),
    ]);
    let record = |name: &str, set: &str| {
        a(name, "1.2.3.4")
            .with_set_identifier(set)
            .with_ref_object(service("default", "nginx"))
    };
    // foo's blue TXT record exists, its green one does not; bar has a blue TXT record but none without a
    // set identifier. The in-memory provider refuses to create a record that exists, so writing the blue one
    // again would fail the apply; a TXT record taken for present by mistake shows in the list.
    let create = vec![
        record("foo.example.com", "blue"),
        record("foo.example.com", "green"),
        record("bar.example.com", ""),
    ];
    apply(
        &registry,
        Changes {
            create,
            ..Changes::default()
        },
    )
    .await?;
    let snapshot = provider.snapshot();
    let txts: Vec<(&str, &str)> = snapshot
        .iter()
        .filter(|e| e.record_type == RecordType::Txt)
        .map(|e| (e.dns_name.as_str(), e.set_identifier.as_str()))
        .collect();
    assert_eq!(
        txts,
        [
            ("a-bar.example.com", ""),
            ("a-bar.example.com", "blue"),
            ("a-foo.example.com", "blue"),
            ("a-foo.example.com", "green"),
        ]
    );
    assert_eq!(snapshot.len(), 7, "three A records and four TXT records");
    Ok(())
}

#[tokio::test]
async fn prefix_and_suffix_shape_written_names() -> Result<(), RegistryError> {
    for (config, want) in [
        (TestConfig::prefixed("TXT."), "txt.a-foo.example.com"),
        (TestConfig::prefixed("%{record_type}-own."), "a-own.foo.example.com"),
        (
            TestConfig {
                suffix: "-txt".into(),
                ..Default::default()
            },
            "a-foo-txt.example.com",
        ),
    ] {
        let (provider, registry) = setup(vec![], config);
        create(&registry, vec![a("foo.example.com", "1.2.3.4")]).await?;
        assert!(
            find(&provider.snapshot(), want, RecordType::Txt).is_some(),
            "{want}: {:?}",
            provider.snapshot()
        );
        assert_eq!(registry.records().await?.records[0].owner(), Some("default"), "{want}");
    }
    Ok(())
}

#[tokio::test]
async fn deletes_remove_the_txt_record_too() -> Result<(), RegistryError> {
    let (provider, registry) = zone(nginx_at("a-foo.example.com"));
    let current = registry.records().await?.records.into_vec();
    delete(&registry, current).await?;
    assert!(provider.snapshot().is_empty());
    Ok(())
}

#[tokio::test]
async fn updates_rewrite_the_txt_record_from_the_new_labels() -> Result<(), RegistryError> {
    let (provider, registry) = zone(nginx_at("a-foo.example.com"));
    let old = registry.records().await?.records.into_vec().remove(0);
    let new = a("foo.example.com", "5.6.7.8")
        .with_label(label::OWNER, "default")
        .with_ref_object(service("default", "other"));
    update(&registry, vec![old], vec![new]).await?;
    let snapshot = provider.snapshot();
    assert_eq!(
        find(&snapshot, "foo.example.com", RecordType::A).map(|e| e
            .targets
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()),
        Some(vec!["5.6.7.8".to_string()])
    );
    assert_eq!(
        value_of(&snapshot, "a-foo.example.com").as_deref(),
        Some("\"heritage=external-dns,external-dns/owner=default,external-dns/resource=service/default/other\"")
    );
    Ok(())
}

#[tokio::test]
async fn foreign_records_are_never_updated_or_deleted() -> Result<(), RegistryError> {
    let value = "\"heritage=external-dns,external-dns/owner=team-b\"";
    let (provider, registry) = zone(vec![a("foo.example.com", "1.2.3.4"), txt("a-foo.example.com", value)]);
    let before = provider.snapshot();
    let current = registry.records().await?.records.into_vec();
    let new = a("foo.example.com", "9.9.9.9").with_label(label::OWNER, "team-b");
    apply(
        &registry,
        Changes {
            update_old: current.clone(),
            update_new: vec![new],
            delete: current,
            ..Changes::default()
        },
    )
    .await?;
    assert_eq!(provider.snapshot(), before);
    Ok(())
}

#[tokio::test]
async fn a_forced_update_writes_the_missing_new_format_txt_record() -> Result<(), RegistryError> {
    let (provider, registry) = zone(nginx_at("foo.example.com"));
    let current = registry.records().await?.records.into_vec();
    let mut new = current[0].clone();
    new.provider_specific.remove(FORCE_UPDATE);
    update(&registry, current, vec![new]).await?;
    let snapshot = provider.snapshot();
    assert_eq!(value_of(&snapshot, "a-foo.example.com").as_deref(), Some(NGINX_VALUE));
    // The old-format record stays (external-dns leaves it too) and the record is no longer forced.
    assert!(find(&snapshot, "foo.example.com", RecordType::Txt).is_some());
    let again = registry.records().await?.records;
    assert!(again[0].provider_specific.get(FORCE_UPDATE).is_none());
    Ok(())
}

/// external-dns #6671: with `--migrate-from-txt-owner`, a record identical to what is asked for kept the
/// old owner's ownership record on Route53 (the update changing nothing in the record was dropped). Here
/// the update of an identical record (the plan asks for it: the plan's `issue_6671` test) rewrites its
/// ownership record.
#[tokio::test]
async fn issue_6671_an_identical_record_migrated_gets_its_ownership_record_rewritten() -> Result<(), RegistryError> {
    let old_value = "\"heritage=external-dns,external-dns/owner=old,external-dns/resource=service/default/nginx\"";
    let config = TestConfig {
        migrate_from_owner: Some("old".into()),
        ..Default::default()
    };
    let (provider, registry) = setup(
        vec![a("foo.example.com", "1.2.3.4"), txt("a-foo.example.com", old_value)],
        config,
    );
    let current = registry.records().await?.records.into_vec();
    assert_eq!(current[0].owner(), Some("default"));
    update(&registry, current.clone(), current).await?;
    assert_eq!(foo_ownership(&provider).as_deref(), Some(NGINX_VALUE));
    Ok(())
}

#[tokio::test]
async fn creates_are_owned_by_us_whatever_labels_they_carry() -> Result<(), RegistryError> {
    let provider = created(a("foo.example.com", "1.2.3.4").with_label(label::OWNER, "someone")).await?;
    assert_eq!(
        foo_ownership(&provider).as_deref(),
        Some("\"heritage=external-dns,external-dns/owner=default\"")
    );
    Ok(())
}

#[tokio::test]
async fn a_rejected_record_is_named_and_the_others_land() -> Result<(), RegistryError> {
    let (provider, registry) = zone(vec![]);
    provider.set_fail_on(Some(Arc::new(|e: &Endpoint| {
        (e.dns_name == "bad.example.com").then(|| "REFUSED".to_string())
    })));
    let r = create(
        &registry,
        vec![a("bad.example.com", "1.1.1.1"), a("ok.example.com", "1.1.1.1")],
    )
    .await;
    let Err(RegistryError::Provider(extdns_provider::ProviderError::Partial { failures })) = r else {
        panic!("expected a partial failure, got {r:?}")
    };
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].key.dns_name, "bad.example.com");
    let snapshot = provider.snapshot();
    assert!(find(&snapshot, "ok.example.com", RecordType::A).is_some());
    assert!(find(&snapshot, "a-ok.example.com", RecordType::Txt).is_some());
    // The record and its ownership record land together or not at all: an ownership record alone would
    // make a later sync treat someone else's record of that name as ours.
    assert!(
        find(&snapshot, "a-bad.example.com", RecordType::Txt).is_none(),
        "the refused record's ownership record must not land: {snapshot:?}"
    );
    Ok(())
}

// --- encryption ---

fn encrypted() -> TestConfig {
    TestConfig {
        encrypt_enabled: true,
        encrypt_aes_key: Some(KEY.into()),
        ..Default::default()
    }
}

#[tokio::test]
async fn encrypted_txt_records_round_trip() -> Result<(), RegistryError> {
    let (provider, registry) = setup(vec![], encrypted());
    let e = a("foo.example.com", "1.2.3.4").with_ref_object(service("default", "nginx"));
    create(&registry, vec![e]).await?;
    let value = value_of(&provider.snapshot(), "a-foo.example.com")
        .ok_or(RegistryError::Provider(ProviderError::fatal("no txt")))?;
    assert!(
        value.starts_with('"') && value.ends_with('"') && !value.contains("heritage"),
        "{value}"
    );
    let records = registry.records().await?.records;
    assert_eq!(records[0].owner(), Some("default"));
    assert_eq!(records[0].resource().as_deref(), Some("service/default/nginx"));
    // Unchanged labels re-encrypt to the same value (the nonce is reused), so updates do not churn.
    let mut labels = records[0].labels.clone();
    let again = crate::labels::serialize(&mut labels, true, crate::AesKey::parse(KEY).ok().as_ref())
        .map_err(|e| RegistryError::Provider(ProviderError::fatal(e.to_string())))?;
    assert_eq!(again, value);
    Ok(())
}

#[tokio::test]
async fn a_key_without_encryption_still_reads_encrypted_records() -> Result<(), RegistryError> {
    let (provider, writer) = setup(vec![], encrypted());
    apply(
        &writer,
        Changes {
            create: vec![a("foo.example.com", "1.2.3.4")],
            ..Changes::default()
        },
    )
    .await?;
    let reader_config = TestConfig {
        encrypt_aes_key: Some(KEY.into()),
        ..Default::default()
    };
    let reader = reader_config.registry(provider.clone())?;
    assert_eq!(reader.records().await?.records[0].owner(), Some("default"));
    let blind = TestConfig::default().registry(provider)?;
    let records = blind.records().await?.records;
    assert_eq!(records.len(), 2, "without the key the TXT record is an ordinary record");
    assert!(records.iter().all(|e| e.owner().is_none()));
    Ok(())
}

#[tokio::test]
async fn plain_records_are_still_read_with_encryption_on() -> Result<(), RegistryError> {
    let (_, registry) = setup(
        vec![a("foo.example.com", "1.2.3.4"), txt("a-foo.example.com", NGINX_VALUE)],
        encrypted(),
    );
    assert_eq!(registry.records().await?.records[0].owner(), Some("default"));
    Ok(())
}

// --- configuration ---

fn config_error(config: TestConfig) -> RegistryError {
    match config.build() {
        Err(e) => e,
        Ok(c) => panic!("expected a configuration error, got {c:?}"),
    }
}

#[test]
fn an_empty_owner_id_is_a_startup_error() {
    let e = config_error(TestConfig {
        owner_id: String::new(),
        ..Default::default()
    });
    assert!(matches!(e, RegistryError::EmptyOwnerId), "{e}");
}

#[test]
fn prefix_and_suffix_together_are_a_startup_error() {
    let e = config_error(TestConfig {
        prefix: "p.".into(),
        suffix: "-s".into(),
        ..Default::default()
    });
    assert!(matches!(e, RegistryError::PrefixAndSuffix), "{e}");
}

#[test]
fn an_invalid_aes_key_is_a_startup_error() {
    let e = config_error(TestConfig {
        encrypt_aes_key: Some("too-short".into()),
        ..Default::default()
    });
    assert!(
        matches!(e, RegistryError::InvalidKey(_)) && e.to_string().contains("32 bytes"),
        "{e}"
    );
}

#[test]
fn encryption_without_a_key_is_a_startup_error() {
    let e = config_error(TestConfig {
        encrypt_enabled: true,
        ..Default::default()
    });
    assert!(matches!(e, RegistryError::EncryptionWithoutKey), "{e}");
}

#[test]
fn a_base64_key_is_accepted() {
    let config = TestConfig {
        encrypt_enabled: true,
        encrypt_aes_key: Some("MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE=".into()),
        ..Default::default()
    };
    assert!(config.build().is_ok());
}

#[test]
fn the_registry_reports_its_owner_and_the_providers_filter() -> Result<(), RegistryError> {
    let provider: Arc<dyn Provider> = Arc::new(InMemoryProvider::new(vec!["example.com".into()]));
    let registry = TestConfig {
        owner_id: "team-a".into(),
        ..Default::default()
    }
    .registry(provider)?;
    assert_eq!(registry.ownership().owner_id(), "team-a");
    assert!(registry.domain_filter().matches("x.example.com") && !registry.domain_filter().matches("x.example.org"));
    Ok(())
}

/// Records, labels and bookkeeping as text, in a fixed order, to compare two snapshots.
fn snapshot_text(s: &crate::Snapshot) -> Vec<String> {
    let mut v: Vec<String> = s
        .records
        .iter()
        .map(|e| {
            format!(
                "{} {} {} {:?} {:?}",
                e.dns_name,
                e.record_type,
                e.targets.join(","),
                e.labels,
                e.provider_specific
            )
        })
        .collect();
    v.sort();
    v
}

#[tokio::test]
async fn a_snapshot_with_the_applied_changes_folded_in_reads_as_the_provider_then_does() -> Result<(), RegistryError> {
    use extdns_endpoint::Change;
    let provider = Arc::new(InMemoryProvider::new(vec!["example.org".into()]));
    let registry = TestConfig {
        owner_id: "me".into(),
        ..TestConfig::default()
    }
    .registry(provider.clone())?;
    let web = Endpoint::new("web.example.org", RecordType::A, ["192.0.2.1"]).with_ref_object(service("a", "web"));
    let api = Endpoint::new("api.example.org", RecordType::A, ["192.0.2.2"]).with_ref_object(service("a", "api"));
    let mut snapshot = registry.records().await?;
    let first = [Change::Create(web.clone()), Change::Create(api.clone())];
    let written = registry.apply(&snapshot, &first).await?;
    assert!(
        registry.fold_applied(&mut snapshot, &first, written),
        "the in-memory provider's read state outlives writes"
    );
    assert_eq!(snapshot_text(&snapshot), snapshot_text(&registry.records().await?));
    // Kept until the next full sync, so as lean as a read: no object references, no room to spare.
    assert!(snapshot.records.iter().all(|e| e.ref_objects.is_empty()));
    assert_eq!(snapshot.records.capacity(), snapshot.records.len());

    // Update one, delete the other, against the folded snapshot: the ownership records it holds now must
    // be the ones written, or the TXT records would be created twice or left behind.
    let owned = |name: &str| snapshot.records.iter().find(|e| e.dns_name == name).cloned();
    let (Some(web_now), Some(api_now)) = (owned("web.example.org"), owned("api.example.org")) else {
        panic!("both records are in the folded snapshot");
    };
    let mut web_new = web_now.clone();
    web_new.targets = ["192.0.2.10"].into_iter().collect();
    let second = [Change::update(web_now, web_new), Change::Delete(api_now)];
    let written = registry.apply(&snapshot, &second).await?;
    assert!(registry.fold_applied(&mut snapshot, &second, written));
    assert_eq!(snapshot_text(&snapshot), snapshot_text(&registry.records().await?));
    let everything: Vec<String> = provider
        .records()
        .await?
        .endpoints
        .iter()
        .map(|e| e.dns_name.clone())
        .collect();
    assert_eq!(
        everything.len(),
        2,
        "web and its TXT record, nothing of api: {everything:?}"
    );
    Ok(())
}

/// The TXT values at `name`, as the provider holds them.
async fn txt_values(provider: &InMemoryProvider, name: &str) -> Result<Vec<String>, RegistryError> {
    Ok(provider
        .records()
        .await?
        .endpoints
        .iter()
        .filter(|e| e.dns_name == name && e.record_type == RecordType::Txt)
        .flat_map(|e| e.targets.iter().map(|t| t.to_string()))
        .collect())
}

/// The record at `name` in a snapshot kept since the last write; a test failure if there is none.
fn cached(snapshot: &crate::Snapshot, name: &str) -> Endpoint {
    match snapshot.records.iter().find(|e| e.dns_name == name) {
        Some(e) => e.clone(),
        None => panic!("{name} is in the cache"),
    }
}

/// Plans against the snapshot kept since the last write (as the controller's incremental syncs do), writes
/// and folds the write in.
async fn apply_and_fold(
    registry: &TxtRegistry,
    snapshot: &mut crate::Snapshot,
    changes: &[extdns_endpoint::Change],
) -> Result<(), RegistryError> {
    let written = registry.apply(snapshot, changes).await?;
    assert!(registry.fold_applied(snapshot, changes, written));
    Ok(())
}

#[tokio::test]
async fn an_encrypted_ownership_record_is_cached_as_written_and_updates_and_deletes_name_it()
-> Result<(), RegistryError> {
    use extdns_endpoint::Change;
    let provider = Arc::new(InMemoryProvider::new(vec!["example.com".into()]));
    let registry = encrypted().registry(provider.clone())?;
    let mut snapshot = registry.records().await?;
    let web = a("web.example.com", "192.0.2.1").with_ref_object(service("default", "web"));
    apply_and_fold(&registry, &mut snapshot, &[Change::Create(web)]).await?;
    // The cache names the nonce the zone's value was sealed under, as a read would.
    assert_eq!(snapshot_text(&snapshot), snapshot_text(&registry.records().await?));
    for ip in ["192.0.2.2", "192.0.2.3", "192.0.2.4"] {
        let now = cached(&snapshot, "web.example.com");
        let mut next = now.clone();
        next.targets = [ip].into_iter().collect();
        next.labels.remove(label::TXT_ENCRYPTION_NONCE);
        apply_and_fold(&registry, &mut snapshot, &[Change::update(now, next)]).await?;
        assert_eq!(
            txt_values(&provider, "a-web.example.com").await?.len(),
            1,
            "one ownership value after the update to {ip}"
        );
        assert_eq!(snapshot_text(&snapshot), snapshot_text(&registry.records().await?));
    }
    let now = cached(&snapshot, "web.example.com");
    apply_and_fold(&registry, &mut snapshot, &[Change::Delete(now)]).await?;
    assert_eq!(txt_values(&provider, "a-web.example.com").await?, Vec::<String>::new());
    assert!(provider.records().await?.endpoints.is_empty());
    Ok(())
}

/// The in-memory provider, refusing (as Route53 does) an update or delete that names other values than the
/// zone holds: the in-memory provider itself finds records by name, type and set identifier only.
struct ExactValues(Arc<InMemoryProvider>);

#[async_trait::async_trait]
impl Provider for ExactValues {
    async fn records(&self) -> Result<extdns_provider::Records, ProviderError> {
        self.0.records().await
    }

    async fn apply(
        &self,
        read: &extdns_provider::ReadState,
        units: &[extdns_provider::Unit<'_>],
    ) -> Result<(), ProviderError> {
        let held = self.0.records().await?.endpoints;
        let changes = units.iter().flat_map(|u| std::iter::once(u.change).chain(u.ownership));
        for old in changes.filter_map(Change::previous) {
            let there = held.iter().any(|h| {
                h.dns_name == old.dns_name
                    && h.record_type == old.record_type
                    && h.set_identifier == old.set_identifier
                    && h.targets.same(&old.targets)
            });
            if !there {
                return Err(ProviderError::refused(format!(
                    "{old}: not in the zone with these values"
                )));
            }
        }
        self.0.apply(read, units).await
    }
}

#[tokio::test]
async fn an_ownership_record_stored_in_another_spelling_is_replaced_and_deleted_by_its_value()
-> Result<(), RegistryError> {
    // What another writer left: unquoted, labels in another order, and under encryption another nonce than
    // extdns would pick. Each must be named exactly to be updated or deleted.
    let writer = Arc::new(InMemoryProvider::new(vec!["example.com".into()]));
    encrypted()
        .registry(writer.clone())?
        .apply(
            &crate::Snapshot::default(),
            &[extdns_endpoint::Change::Create(a("sealed.example.com", "192.0.2.9"))],
        )
        .await?;
    let sealed = txt_values(&writer, "a-sealed.example.com").await?;
    assert_eq!(sealed.len(), 1);
    for (config, name, value) in [
        (
            TestConfig::default(),
            "plain.example.com",
            "external-dns/resource=service/default/plain,heritage=external-dns,external-dns/owner=default".to_string(),
        ),
        (encrypted(), "sealed.example.com", sealed[0].clone()),
    ] {
        let (provider, _) = setup(
            vec![a(name, "192.0.2.1"), txt(&format!("a-{name}"), &value)],
            config.clone(),
        );
        let registry = config.registry(Arc::new(ExactValues(provider.clone())))?;
        let records = registry.records().await?.records;
        let Some(now) = records.iter().find(|e| e.dns_name == name).cloned() else {
            panic!("{name} is read");
        };
        assert_eq!(now.owner(), Some("default"), "{name} is ours");
        let mut next = now.clone();
        next.targets = ["192.0.2.2"].into_iter().collect();
        // Sealed again under a nonce of extdns's choosing.
        next.labels.remove(label::TXT_ENCRYPTION_NONCE);
        update(&registry, vec![now], vec![next]).await?;
        let values = txt_values(&provider, &format!("a-{name}")).await?;
        assert_eq!(
            values.len(),
            1,
            "{name}: the stored value was replaced, not joined: {values:?}"
        );
        assert_ne!(values[0], value);
        let records = registry.records().await?.records;
        delete(&registry, records.iter().cloned().collect()).await?;
        assert!(
            provider.records().await?.endpoints.is_empty(),
            "{name}: nothing left behind"
        );
    }
    Ok(())
}

// --- TLSA, SVCB and HTTPS ---

/// The ownership of the new types works as for A: each has its own `<type>-` TXT record (external-dns
/// v0.23's `tlsa-` for TLSA; `svcb-` and `https-` alike), read back as owned, removed with its record.
#[tokio::test]
async fn tlsa_svcb_and_https_records_have_their_own_ownership_records() -> Result<(), RegistryError> {
    let tlsa = Endpoint::new(
        "_443._tcp.foo.example.com",
        RecordType::Tlsa,
        ["3 1 1 ".to_string() + &"ab".repeat(32)],
    );
    let https = Endpoint::new("foo.example.com", RecordType::Https, ["1 . alpn=h2"]);
    assert_eq!(https.targets[0], "1 . alpn=h2", "its dot is kept");
    let svcb = Endpoint::new(
        "_dns.foo.example.com",
        RecordType::Svcb,
        ["1 dns.example.com. alpn=dot"],
    );
    let config = TestConfig {
        managed_types: vec![RecordType::Tlsa, RecordType::Svcb, RecordType::Https],
        ..TestConfig::default()
    };
    let (provider, registry) = setup(vec![], config);
    create(&registry, vec![tlsa.clone(), https.clone(), svcb.clone()]).await?;
    let zone = provider.snapshot();
    for name in [
        "tlsa-_443._tcp.foo.example.com",
        "https-foo.example.com",
        "svcb-_dns.foo.example.com",
    ] {
        let value = value_of(&zone, name).unwrap_or_default();
        assert!(value.contains("external-dns/owner=default"), "{name}: {value:?}");
    }
    let records = registry.records().await?.records;
    assert_eq!(records.len(), 3, "{records:?}");
    assert!(records.iter().all(|r| r.owner() == Some("default")), "{records:?}");
    let owned_https = records
        .iter()
        .filter(|r| r.record_type == RecordType::Https)
        .cloned()
        .collect();
    delete(&registry, owned_https).await?;
    let zone = provider.snapshot();
    assert!(value_of(&zone, "https-foo.example.com").is_none());
    assert!(value_of(&zone, "tlsa-_443._tcp.foo.example.com").is_some());
    Ok(())
}

// --- the hand-over bugs of external-dns (issue 47) ---

const TEAM_B_VALUE: &str = "\"heritage=external-dns,external-dns/owner=team-b,external-dns/resource=service/b/web\"";

/// external-dns #6617: a record is created without an ownership record when another owner's ownership
/// record (its record gone) holds the name, and from then on no owner manages it. Here the record is not
/// created, the failure names the other owner, and its ownership record stays as it was.
#[tokio::test]
async fn issue_6617_no_record_is_created_beside_another_owners_ownership_record() -> Result<(), RegistryError> {
    let (provider, registry) = zone(vec![txt("a-foo.example.com", TEAM_B_VALUE)]);
    let snapshot = registry.records().await?;
    let changes = [
        Change::Create(a("foo.example.com", "1.1.1.1")),
        Change::Create(a("ok.example.com", "1.1.1.1")),
    ];
    let written = registry.apply(&snapshot, &changes).await?;
    let failures = written.withheld();
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert_eq!(failures[0].key.dns_name, "foo.example.com");
    assert!(failures[0].reason.message.contains("team-b"), "{}", failures[0].reason);
    let snapshot = provider.snapshot();
    assert!(
        find(&snapshot, "foo.example.com", RecordType::A).is_none(),
        "{snapshot:?}"
    );
    assert_eq!(value_of(&snapshot, "a-foo.example.com").as_deref(), Some(TEAM_B_VALUE));
    assert!(
        find(&snapshot, "a-ok.example.com", RecordType::Txt).is_some(),
        "the others land"
    );
    Ok(())
}

/// #6617 with a TXT value at the ownership record's name that names no owner (it states no `owner`, or does
/// not parse at all): nobody's we know, so the record is not created, rather than created without an
/// ownership record no owner could ever manage it by.
#[tokio::test]
async fn issue_6617_no_record_is_created_beside_a_txt_value_naming_no_owner() -> Result<(), RegistryError> {
    const OWNERLESS: &str = "\"heritage=external-dns,external-dns/resource=service/b/web\"";
    let (provider, registry) = zone(vec![txt("a-foo.example.com", OWNERLESS)]);
    let snapshot = registry.records().await?;
    let written = registry
        .apply(&snapshot, &[Change::Create(a("foo.example.com", "1.1.1.1"))])
        .await?;
    let failures = written.withheld();
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(
        failures[0].reason.message.contains("names no owner"),
        "{}",
        failures[0].reason
    );
    let snapshot = provider.snapshot();
    assert!(
        find(&snapshot, "foo.example.com", RecordType::A).is_none(),
        "{snapshot:?}"
    );
    assert_eq!(value_of(&snapshot, "a-foo.example.com").as_deref(), Some(OWNERLESS));
    Ok(())
}

/// Values that do not parse as ownership labels at all are no claim of ours either: only values naming us
/// (or the owner we migrate from) let a record be created beside them.
#[test]
fn values_that_do_not_parse_are_no_claim_of_ours() -> Result<(), RegistryError> {
    use crate::txt::Claim;
    use extdns_endpoint::Targets;
    let config = TestConfig {
        migrate_from_owner: Some("team-b".into()),
        ..Default::default()
    }
    .build()?;
    let own = &config.ownership;
    let claim = |values: &[&str]| own.claim_on(&Targets::new(values.iter().copied()));
    assert_eq!(claim(&["v=spf1 -all"]), Claim::Unknown);
    assert_eq!(claim(&["v=spf1 -all", "not labels either"]), Claim::Unknown);
    assert_eq!(claim(&[NGINX_VALUE, "v=spf1 -all"]), Claim::Unknown);
    assert_eq!(claim(&[NGINX_VALUE]), Claim::Ours);
    assert_eq!(claim(&[TEAM_B_VALUE]), Claim::Replaceable);
    Ok(())
}

/// #6617 during a migration: the ownership record the old owner left is replaced by ours, with the record.
#[tokio::test]
async fn issue_6617_the_old_owners_ownership_record_is_replaced_when_migrating() -> Result<(), RegistryError> {
    let config = TestConfig {
        migrate_from_owner: Some("team-b".into()),
        ..Default::default()
    };
    let (provider, registry) = setup(vec![txt("a-foo.example.com", TEAM_B_VALUE)], config);
    let e = a("foo.example.com", "1.1.1.1").with_ref_object(service("default", "nginx"));
    create(&registry, vec![e]).await?;
    let snapshot = provider.snapshot();
    assert!(find(&snapshot, "foo.example.com", RecordType::A).is_some());
    assert_eq!(foo_ownership(&provider).as_deref(), Some(NGINX_VALUE));
    assert_eq!(snapshot.len(), 2, "one ownership record: {snapshot:?}");
    Ok(())
}

/// external-dns #5457: of two ownership records of one record, external-dns keeps the one it parsed last,
/// so an owner may take a record another claims. Here the record reads as the other owner's whatever the
/// order, for either owner, whether the claims are two records or two values of one.
#[tokio::test]
async fn issue_5457_a_record_two_owners_claim_is_never_read_as_ours() -> Result<(), RegistryError> {
    let two_records = |first: &str, second: &str| {
        vec![
            a("foo.example.com", "1.2.3.4"),
            txt("a-foo.example.com", first),
            txt("a-foo.example.com", second),
        ]
    };
    let one_record = |first: &str, second: &str| {
        vec![
            a("foo.example.com", "1.2.3.4"),
            Endpoint::new("a-foo.example.com", RecordType::Txt, [first, second]),
        ]
    };
    for zone_of in [two_records, one_record] {
        for (first, second) in [(NGINX_VALUE, TEAM_B_VALUE), (TEAM_B_VALUE, NGINX_VALUE)] {
            for (reader, other) in [("default", "team-b"), ("team-b", "default")] {
                let config = TestConfig {
                    owner_id: reader.into(),
                    ..Default::default()
                };
                let (_, registry) = setup(vec![], config);
                // Read as the provider returned them (the in-memory provider holds one record set a name).
                let (records, _) = registry.read(zone_of(first, second));
                assert_eq!(records.len(), 1, "{records:?}");
                assert_eq!(records[0].owner(), Some(other), "read by {reader}: {records:?}");
            }
        }
    }
    Ok(())
}

#[test]
fn adopting_from_our_own_owner_id_is_a_startup_error() {
    let config = TestConfig {
        adopt_from_owner: Some("default".into()),
        ..Default::default()
    };
    assert!(matches!(config_error(config), RegistryError::AdoptFromSelf(o) if o == "default"));
}
