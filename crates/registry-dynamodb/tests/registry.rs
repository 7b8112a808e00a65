//! The DynamoDB registry against the strict DynamoDB fake (moto's PartiQL cannot run external-dns's
//! statements) and the in-memory provider: the items it writes, as external-dns lays them out; claims,
//! labels and releases; the migration of TXT ownership records; refusals; the hand-over between owners.
//!
//! external-dns's hand-over bugs (issue 47) each have a test here: #6617 (no record created where another
//! owner holds the item), #5457 (two owners' TXT claims on one record, read while migrating them into
//! items), #6671 (`--migrate-from-txt-owner` takes identical records over too, their items and their TXT
//! records alike; the hand-over's adoption of identical records is tested beside it).

use std::sync::Arc;

use extdns_aws::{CredentialSource, Credentials};
use extdns_endpoint::{Change, DomainFilter, Endpoint, RecordType, label};
use extdns_plan::{PlanConfig, calculate};
use extdns_provider::{InMemoryProvider, Provider, ProviderError};
use extdns_registry::{Ownership, OwnershipConfig, Registry, RegistryError};
use extdns_registry_dynamodb::{DynamoDbConfig, DynamoDbRegistry, NEEDS_MIGRATION};
use extdns_test_support::apex::owner;
use extdns_test_support::dynamodb_fake::Fake;
use extdns_test_support::logs::Logs;
use serde_json::{Value, json};

const TABLE: &str = "external-dns";

fn ownership(owner: &str) -> OwnershipConfig {
    let mut c = OwnershipConfig::default();
    c.owner_id = owner.to_string();
    c
}

fn registry(fake: &Fake, provider: Arc<InMemoryProvider>, owner: &str) -> DynamoDbRegistry {
    registry_with(fake, provider, ownership(owner))
}

fn registry_with(fake: &Fake, provider: Arc<InMemoryProvider>, ownership: OwnershipConfig) -> DynamoDbRegistry {
    registry_at(&fake.url, "eu-west-1", provider, ownership)
}

/// A registry of `ownership` over the DynamoDB at `url` in `region` (the strict fake, or moto, which keeps
/// each region's tables apart).
fn registry_at(
    url: &str,
    region: &str,
    provider: Arc<InMemoryProvider>,
    ownership: OwnershipConfig,
) -> DynamoDbRegistry {
    let env = |k: &str| match k {
        "AWS_ENDPOINT_URL_DYNAMODB" => Some(url.to_string()),
        _ => None,
    };
    let ownership = Ownership::new(ownership).expect("valid ownership");
    let mut config = DynamoDbConfig::from_env(TABLE, region, ownership, None, &env).expect("a configuration");
    // Were the variable's name wrong, the endpoint would be DynamoDB's own: fail before any request.
    assert!(
        extdns_test_support::is_loopback(&config.client.endpoint),
        "{}",
        config.client.endpoint
    );
    config.client.credentials = CredentialSource::Static(Credentials::new("AKIDTEST", "secret"));
    config.client.backoff.initial = std::time::Duration::from_millis(5);
    DynamoDbRegistry::new(provider, config).expect("a registry")
}

fn a(name: &str, target: &str) -> Endpoint {
    Endpoint::new(name, RecordType::A, [target])
}

/// `e` as a source asks for it: named by the object `resource` names, whose label the registry renders.
fn with_resource(mut e: Endpoint, resource: &str) -> Endpoint {
    e.ref_objects
        .extend(extdns_endpoint::ObjectKey::from_resource_label(resource));
    assert!(!e.ref_objects.is_empty(), "{resource} names an object");
    e
}

/// `web.example.org` at `target`, for `resource`, labelled as owned by `me`: what the plan asks an update
/// to write.
fn my_web(target: &str, resource: &str) -> Endpoint {
    let mut e = with_resource(a("web.example.org", target), resource);
    e.labels.insert(label::OWNER.to_string(), "me".to_string());
    e
}

fn item(key: &str, owner: &str, resource: &str) -> Value {
    json!({"k": {"S": key}, "o": {"S": owner}, "l": {"M": {"resource": {"S": resource}}}})
}

/// A sync from a fresh read that creates `refused` (192.0.2.1) and `accepted` (192.0.2.2), and the error it
/// must end with, for `refused`.
async fn create_one_refused(
    registry: &DynamoDbRegistry,
    refused: &str,
    accepted: &str,
) -> Result<RegistryError, RegistryError> {
    let snapshot = registry.records().await?;
    let changes = [
        Change::Create(a(refused, "192.0.2.1")),
        Change::Create(a(accepted, "192.0.2.2")),
    ];
    let applied = registry.apply(&snapshot, &changes).await;
    Ok(applied.expect_err("one record is refused"))
}

async fn setup(owner: &str) -> (Fake, Arc<InMemoryProvider>, DynamoDbRegistry) {
    let fake = Fake::start().await;
    fake.table(TABLE);
    let provider = Arc::new(InMemoryProvider::new(vec!["example.org".into()]));
    let registry = registry(&fake, provider.clone(), owner);
    (fake, provider, registry)
}

#[tokio::test]
async fn records_are_claimed_labelled_and_released_as_external_dns_lays_items_out() -> Result<(), RegistryError> {
    let (fake, provider, registry) = setup("me").await;
    let web = with_resource(a("web.example.org", "192.0.2.1"), "service/default/web");
    let snapshot = registry.records().await?;
    registry.apply(&snapshot, &[Change::Create(web.clone())]).await?;
    assert_eq!(
        fake.items(TABLE),
        vec![item("web.example.org#A#", "me", "service/default/web")]
    );
    assert_eq!(
        fake.lock().last_scope.split('/').nth(1),
        Some("eu-west-1"),
        "signed for the region given"
    );

    let snapshot = registry.records().await?;
    assert_eq!(snapshot.records.len(), 1);
    let current = snapshot.records[0].clone();
    assert_eq!(current.owner(), Some("me"));
    assert_eq!(
        current.labels.get(label::RESOURCE).map(String::as_str),
        Some("service/default/web")
    );

    // An update that changes the resource label rewrites `l`; the record moves too.
    let new = my_web("192.0.2.2", "ingress/default/web");
    registry.apply(&snapshot, &[Change::update(current, new)]).await?;
    assert_eq!(
        fake.items(TABLE),
        vec![item("web.example.org#A#", "me", "ingress/default/web")]
    );
    assert_eq!(provider.snapshot()[0].targets.join(","), "192.0.2.2");

    let snapshot = registry.records().await?;
    registry
        .apply(&snapshot, &[Change::Delete(snapshot.records[0].clone())])
        .await?;
    assert!(fake.items(TABLE).is_empty());
    assert!(provider.snapshot().is_empty());
    Ok(())
}

#[tokio::test]
async fn other_owners_items_are_neither_read_nor_taken() -> Result<(), RegistryError> {
    let (fake, provider, registry) = setup("me").await;
    fake.put(TABLE, item("theirs.example.org#A#", "them", "service/x/theirs"));
    provider.insert([a("theirs.example.org", "192.0.2.9")]);
    let snapshot = registry.records().await?;
    assert_eq!(
        snapshot.records[0].owner(),
        None,
        "another owner's record reads as nobody's"
    );

    // A create at a key another owner holds (its record gone) is refused per record, and not written.
    provider
        .apply(
            &Default::default(),
            &[extdns_provider::Unit::new(&Change::Delete(a(
                "theirs.example.org",
                "192.0.2.9",
            )))],
        )
        .await?;
    let err = create_one_refused(&registry, "theirs.example.org", "mine.example.org").await?;
    match err {
        RegistryError::Provider(ProviderError::Partial { failures }) => {
            assert_eq!(failures.len(), 1);
            assert_eq!(failures[0].key.dns_name, "theirs.example.org");
            assert!(
                failures[0].reason.message.contains("another owner"),
                "{}",
                failures[0].reason
            );
        }
        other => panic!("not a per-record failure: {other}"),
    }
    let names: Vec<String> = provider.snapshot().into_iter().map(|e| e.dns_name).collect();
    assert_eq!(
        names,
        vec!["mine.example.org"],
        "the refused record is not created, the other one is"
    );
    assert_eq!(
        fake.items(TABLE),
        vec![
            json!({"k": {"S": "mine.example.org#A#"}, "o": {"S": "me"}, "l": {"M": {}}}),
            item("theirs.example.org#A#", "them", "service/x/theirs")
        ]
    );
    Ok(())
}

#[tokio::test]
async fn a_record_the_provider_refuses_leaves_no_item() -> Result<(), RegistryError> {
    let (fake, provider, registry) = setup("me").await;
    provider.set_fail_on(Some(Arc::new(|e: &Endpoint| {
        (e.dns_name == "bad.example.org").then(|| "refused by the test".to_string())
    })));
    let err = create_one_refused(&registry, "bad.example.org", "good.example.org").await?;
    assert!(err.to_string().contains("bad.example.org"), "{err}");
    let keys: Vec<Value> = fake.items(TABLE).into_iter().map(|i| i["k"].clone()).collect();
    assert_eq!(
        keys,
        vec![json!({"S": "good.example.org#A#"})],
        "the refused record's claim is taken back"
    );
    Ok(())
}

#[tokio::test]
async fn txt_ownership_records_are_migrated_into_items() -> Result<(), RegistryError> {
    let (fake, provider, registry) = setup("me").await;
    provider.insert([
        a("web.example.org", "192.0.2.1"),
        Endpoint::new(
            "a-web.example.org",
            RecordType::Txt,
            ["\"heritage=external-dns,external-dns/owner=me,external-dns/resource=service/default/web\""],
        ),
        a("other.example.org", "192.0.2.3"),
        Endpoint::new(
            "a-other.example.org",
            RecordType::Txt,
            ["\"heritage=external-dns,external-dns/owner=them,external-dns/resource=service/x/other\""],
        ),
    ]);
    let snapshot = registry.records().await?;
    assert_eq!(
        snapshot.records.len(),
        2,
        "ownership TXT records are hidden: {:?}",
        snapshot.records
    );
    let web = snapshot
        .records
        .iter()
        .find(|e| e.dns_name == "web.example.org")
        .cloned()
        .expect("web");
    assert_eq!(web.owner(), Some("me"));
    assert_eq!(web.provider_specific.get(NEEDS_MIGRATION), Some("true"));
    let other = snapshot
        .records
        .iter()
        .find(|e| e.dns_name == "other.example.org")
        .expect("other");
    assert_eq!(other.owner(), Some("them"));

    // The plan updates the marked record (the desired one has no such property): the item is inserted.
    let new = my_web("192.0.2.1", "service/default/web");
    registry.apply(&snapshot, &[Change::update(web, new)]).await?;
    assert_eq!(
        fake.items(TABLE),
        vec![item("web.example.org#A#", "me", "service/default/web")]
    );

    // Then the record reads from its item, and its old TXT record shows as ours (the plan deletes it where
    // TXT is managed); the other owner's TXT record stays hidden.
    let snapshot = registry.records().await?;
    let web = snapshot
        .records
        .iter()
        .find(|e| e.dns_name == "web.example.org")
        .expect("web");
    assert_eq!(web.provider_specific.get(NEEDS_MIGRATION), None);
    let txts: Vec<(&str, Option<&str>)> = snapshot
        .records
        .iter()
        .filter(|e| e.record_type == RecordType::Txt)
        .map(|e| (e.dns_name.as_str(), e.owner()))
        .collect();
    assert_eq!(txts, vec![("a-web.example.org", Some("me"))]);
    Ok(())
}

#[tokio::test]
async fn items_of_records_gone_are_released_and_throttling_is_retried() -> Result<(), RegistryError> {
    let (fake, provider, registry) = setup("me").await;
    fake.put(TABLE, item("gone.example.org#A#", "me", "service/default/gone"));
    fake.put(TABLE, item("elsewhere.example.com#A#", "me", "service/default/x"));
    fake.lock().scan_page = 1;
    fake.lock().faults.throttle_next = 2;
    let snapshot = registry.records().await?;
    registry
        .apply(&snapshot, &[Change::Create(a("new.example.org", "192.0.2.1"))])
        .await?;
    let keys: Vec<Value> = fake.items(TABLE).into_iter().map(|i| i["k"]["S"].clone()).collect();
    assert_eq!(
        keys,
        vec![json!("elsewhere.example.com#A#"), json!("new.example.org#A#")],
        "the orphan in the provider's zones is released, the one outside them kept"
    );
    let s = fake.lock();
    assert_eq!(s.requests.count("Scan"), 2, "both pages are read");
    assert_eq!(s.requests.count("DescribeTable"), 3, "throttled twice, then answered");
    drop(s);
    assert_eq!(provider.snapshot().len(), 1);
    Ok(())
}

#[tokio::test]
async fn a_table_not_as_external_dns_needs_it_is_refused_by_name() {
    let fake = Fake::start().await;
    fake.create_table(TABLE, &[("k", "S"), ("r", "S")], &[("k", "HASH"), ("r", "RANGE")]);
    let provider = Arc::new(InMemoryProvider::new(vec!["example.org".into()]));
    let err = registry(&fake, provider.clone(), "me")
        .records()
        .await
        .expect_err("a range key is refused");
    assert!(
        err.to_string().contains("range key") && err.to_string().contains(TABLE),
        "{err}"
    );

    let fake = Fake::start().await;
    let err = registry(&fake, provider, "me").records().await.expect_err("no table");
    assert!(err.to_string().contains("ResourceNotFoundException"), "{err}");
}

#[tokio::test]
async fn writes_folded_into_a_snapshot_plan_like_a_fresh_read() -> Result<(), RegistryError> {
    let (fake, _provider, registry) = setup("me").await;
    let web = with_resource(a("web.example.org", "192.0.2.1"), "service/default/web");
    let mut snapshot = registry.records().await?;
    for round in 0..2 {
        // Create, then delete, each against the snapshot the previous write was folded into (the
        // incremental sync's cache): the second create must insert again, not update an item it deleted.
        let create = [Change::Create(web.clone())];
        let written = registry.apply(&snapshot, &create).await?;
        assert!(registry.fold_applied(&mut snapshot, &create, written), "round {round}");
        assert_eq!(snapshot.records.len(), 1);
        assert_eq!(snapshot.records[0].owner(), Some("me"));
        assert_eq!(fake.items(TABLE).len(), 1, "round {round}");

        let delete = [Change::Delete(snapshot.records[0].clone())];
        let written = registry.apply(&snapshot, &delete).await?;
        assert!(registry.fold_applied(&mut snapshot, &delete, written));
        assert!(snapshot.records.is_empty());
        assert!(fake.items(TABLE).is_empty(), "round {round}");
    }
    let sent = fake.lock().statements.clone();
    assert_eq!(sent.iter().filter(|s| s.starts_with("INSERT")).count(), 2, "{sent:#?}");
    assert_eq!(sent.iter().filter(|s| s.starts_with("DELETE")).count(), 2, "{sent:#?}");
    Ok(())
}

#[tokio::test]
async fn statements_dynamodb_throttles_are_sent_again_alone() -> Result<(), RegistryError> {
    let (fake, provider, registry) = setup("me").await;
    fake.lock().throttle_statements_next = 1;
    let snapshot = registry.records().await?;
    let changes = [
        Change::Create(a("one.example.org", "192.0.2.1")),
        Change::Create(a("two.example.org", "192.0.2.2")),
    ];
    registry.apply(&snapshot, &changes).await?;
    assert_eq!(fake.items(TABLE).len(), 2);
    assert_eq!(provider.snapshot().len(), 2);
    let s = fake.lock();
    let inserts: Vec<&String> = s.statements.iter().filter(|t| t.starts_with("INSERT")).collect();
    assert_eq!(
        inserts.len(),
        3,
        "the throttled statement once more, the other not again"
    );
    assert_eq!(s.requests.count("BatchExecuteStatement"), 2);
    Ok(())
}

const MY_CLAIM: &str = "\"heritage=external-dns,external-dns/owner=me,external-dns/resource=service/default/web\"";
const THEIR_CLAIM: &str = "\"heritage=external-dns,external-dns/owner=them,external-dns/resource=service/x/web\"";

/// external-dns #5457 in the migration of TXT ownership records: of two claims on one record external-dns
/// keeps the one read last. Here a record two owners claim is never migrated as ours, whatever the order.
#[tokio::test]
async fn issue_5457_a_record_two_owners_claim_is_not_migrated_as_ours() -> Result<(), RegistryError> {
    for values in [[MY_CLAIM, THEIR_CLAIM], [THEIR_CLAIM, MY_CLAIM]] {
        let (fake, provider, registry) = setup("me").await;
        provider.insert([
            a("web.example.org", "192.0.2.1"),
            Endpoint::new("a-web.example.org", RecordType::Txt, values),
        ]);
        let snapshot = registry.records().await?;
        let [web] = &snapshot.records[..] else {
            panic!("one record, its ownership record hidden: {:?}", snapshot.records);
        };
        assert_eq!(
            (web.dns_name.as_str(), web.owner()),
            ("web.example.org", Some("them")),
            "{values:?}"
        );
        // The registry writes nothing for a record that is not ours, whatever it is asked.
        let update = Change::update(web.clone(), my_web("192.0.2.2", "service/default/web"));
        registry.apply(&snapshot, &[update]).await?;
        assert!(fake.items(TABLE).is_empty(), "{:?}", fake.items(TABLE));
        let held = provider.snapshot();
        let web = held.iter().find(|e| e.record_type == RecordType::A).expect("web");
        assert_eq!(web.targets.join(","), "192.0.2.1", "not updated");
    }
    Ok(())
}

/// external-dns #6617: a record created beside another owner's ownership. Here a create at a key another
/// owner's item holds is refused before anything is written: no record without its ownership.
#[tokio::test]
async fn issue_6617_no_record_is_created_where_another_owner_holds_the_item() -> Result<(), RegistryError> {
    let (fake, provider, registry) = setup("me").await;
    fake.put(TABLE, item("web.example.org#A#", "them", "service/x/web"));
    let err = create_one_refused(&registry, "web.example.org", "mine.example.org").await?;
    assert!(err.to_string().contains("web.example.org"), "{err}");
    let names: Vec<String> = provider.snapshot().into_iter().map(|e| e.dns_name).collect();
    assert_eq!(names, vec!["mine.example.org"]);
    assert!(
        fake.items(TABLE)
            .contains(&item("web.example.org#A#", "them", "service/x/web"))
    );
    Ok(())
}

/// Two ownership TXT records of ours read under one key (the new format and an older writer's `cname-`
/// name, no record left): both are shown as ours, so the plan deletes both; showing only the first left
/// the other's claim behind.
#[tokio::test]
async fn every_ownership_record_of_one_key_is_shown_so_none_is_left_behind() -> Result<(), RegistryError> {
    let (_fake, provider, registry) = setup("me").await;
    provider.insert([
        Endpoint::new("a-web.example.org", RecordType::Txt, [MY_CLAIM]),
        Endpoint::new("cname-web.example.org", RecordType::Txt, [MY_CLAIM]),
    ]);
    let snapshot = registry.records().await?;
    let mut shown: Vec<(&str, Option<&str>)> = snapshot
        .records
        .iter()
        .map(|e| (e.dns_name.as_str(), e.owner()))
        .collect();
    shown.sort();
    assert_eq!(
        shown,
        vec![("a-web.example.org", Some("me")), ("cname-web.example.org", Some("me"))]
    );
    let deletes: Vec<Change> = snapshot.records.iter().cloned().map(Change::Delete).collect();
    registry.apply(&snapshot, &deletes).await?;
    assert!(provider.snapshot().is_empty(), "{:?}", provider.snapshot());
    Ok(())
}

/// A record two owners claim is read at every sync; the warning naming them is given once.
#[tokio::test]
async fn a_contested_record_is_warned_about_once() -> Result<(), RegistryError> {
    let (_fake, provider, registry) = setup("me").await;
    provider.insert([
        a("web.example.org", "192.0.2.1"),
        Endpoint::new("a-web.example.org", RecordType::Txt, [MY_CLAIM, THEIR_CLAIM]),
    ]);
    let logs = Logs::at(tracing::Level::WARN);
    {
        let _guard = logs.capture();
        for _ in 0..3 {
            registry.records().await?;
        }
    }
    let warned = logs.text().matches("ownership records of several owners").count();
    assert_eq!(warned, 1, "{}", logs.text());
    Ok(())
}

// --- owners changing: the hand-over and --migrate-from-txt-owner (issue 47) ---

/// One sync as the controller runs it, planned with `plan`; returns the changes.
async fn sync(
    registry: &DynamoDbRegistry,
    plan: &PlanConfig,
    desired: &[Endpoint],
) -> Result<Vec<Change>, RegistryError> {
    let snapshot = registry.records().await?;
    let outcome = calculate(plan, &snapshot.records, desired, &DomainFilter::default());
    if !outcome.changes.is_empty() {
        registry.apply(&snapshot, &outcome.changes).await?;
    }
    Ok(outcome.changes)
}

fn plan(owner: &str) -> PlanConfig {
    PlanConfig {
        owner_id: owner.into(),
        ..PlanConfig::default()
    }
}

/// The items as (key, owner, labels but the owner).
fn items_held(fake: &Fake) -> Vec<(String, String, Value)> {
    fake.items(TABLE)
        .into_iter()
        .map(|i| {
            let text = |v: &Value| v["S"].as_str().unwrap_or_default().to_string();
            (text(&i["k"]), text(&i["o"]), i["l"].clone())
        })
        .collect()
}

#[tokio::test]
async fn a_released_identical_record_is_adopted_by_rewriting_its_item_in_place() -> Result<(), RegistryError> {
    let (fake, provider, old) = setup("old").await;
    let web = a("web.example.org", "192.0.2.1");
    let mut adopting = ownership("new");
    adopting.adopt_from_owner = Some("old".into());
    let new = registry_with(&fake, provider.clone(), adopting);
    let adopt = PlanConfig {
        adopt_from: Some("old".into()),
        ..plan("new")
    };
    sync(&old, &plan("old"), std::slice::from_ref(&web)).await?;
    // Not released yet: the adopter reads the record as nobody's and asks for nothing.
    assert!(sync(&new, &adopt, std::slice::from_ref(&web)).await?.is_empty());

    // Phase 1: the release goes into the item's labels, the record unchanged.
    let release = PlanConfig {
        release_to: Some("new".into()),
        ..plan("old")
    };
    assert_eq!(sync(&old, &release, std::slice::from_ref(&web)).await?.len(), 1);
    assert_eq!(
        items_held(&fake),
        [(
            "web.example.org#A#".to_string(),
            "old".to_string(),
            json!({"M": {"released-to": {"S": "new"}}})
        )]
    );
    assert!(sync(&old, &release, std::slice::from_ref(&web)).await?.is_empty());

    // A record that differs from what the adopter would write is not taken.
    let other = a("web.example.org", "192.0.2.2");
    assert!(sync(&new, &adopt, std::slice::from_ref(&other)).await?.is_empty());
    assert_eq!(items_held(&fake)[0].1, "old");

    // Phase 2: identical, it is taken over; the one item changes owner and labels in one statement.
    let adopted = sync(&new, &adopt, std::slice::from_ref(&web)).await?;
    assert_eq!(adopted.len(), 1, "{adopted:?}");
    assert_eq!(
        items_held(&fake),
        [("web.example.org#A#".to_string(), "new".to_string(), json!({"M": {}}))]
    );
    let taken: Vec<String> = fake
        .lock()
        .statements
        .iter()
        .filter(|s| s.contains("SET \"o\""))
        .cloned()
        .collect();
    assert_eq!(
        taken,
        ["UPDATE \"external-dns\" SET \"o\"=? SET \"l\"=? WHERE \"k\"=? AND \"o\"=?"]
    );
    let read = new.records().await?;
    assert_eq!(read.records[0].owner(), Some("new"));
    assert_eq!(
        old.records().await?.records[0].owner(),
        None,
        "the old owner reads it as nobody's"
    );
    let zone: Vec<String> = provider.snapshot().iter().map(|e| e.targets.join(",")).collect();
    assert_eq!(zone, ["192.0.2.1"], "never deleted nor duplicated");
    assert!(sync(&new, &adopt, std::slice::from_ref(&web)).await?.is_empty());
    Ok(())
}

/// external-dns #6671: with `--migrate-from-txt-owner`, a record identical to what is asked for kept the
/// old owner's ownership. Here every record of the old owner is taken over, identical ones too: its item
/// changes owner in place, and a record still owned by its old TXT record gets an item of ours. The
/// DynamoDB registry of external-dns reads neither as ours.
#[tokio::test]
async fn issue_6671_migrating_takes_identical_records_over_their_items_and_txt_records_alike()
-> Result<(), RegistryError> {
    let fake = Fake::start().await;
    fake.table(TABLE);
    let provider = Arc::new(InMemoryProvider::new(vec!["example.org".into()]));
    let (by_item, by_txt) = (a("one.example.org", "192.0.2.1"), a("two.example.org", "192.0.2.2"));
    fake.put(TABLE, item("one.example.org#A#", "old", "service/default/one"));
    provider.insert([
        by_item.clone(),
        by_txt.clone(),
        Endpoint::new(
            "a-two.example.org",
            RecordType::Txt,
            ["\"heritage=external-dns,external-dns/owner=old,external-dns/resource=service/default/two\""],
        ),
    ]);
    let mut migrating = ownership("me");
    migrating.migrate_from_owner = Some("old".into());
    let registry = registry_with(&fake, provider.clone(), migrating);
    let config = PlanConfig {
        old_owner_id: Some("old".into()),
        ..plan("me")
    };
    let desired = [
        with_resource(by_item.clone(), "service/default/one"),
        with_resource(by_txt.clone(), "service/default/two"),
    ];
    let changes = sync(&registry, &config, &desired).await?;
    assert_eq!(changes.len(), 2, "both identical records are updated: {changes:?}");
    assert_eq!(
        fake.items(TABLE),
        vec![
            item("one.example.org#A#", "me", "service/default/one"),
            item("two.example.org#A#", "me", "service/default/two")
        ]
    );
    let read = registry.records().await?;
    let owners: Vec<(&str, Option<&str>)> = read
        .records
        .iter()
        .filter(|e| e.record_type == RecordType::A)
        .map(|e| (e.dns_name.as_str(), e.owner()))
        .collect();
    assert_eq!(
        owners,
        [("one.example.org", Some("me")), ("two.example.org", Some("me"))]
    );
    let zone: Vec<String> = provider
        .snapshot()
        .iter()
        .filter(|e| e.record_type == RecordType::A)
        .map(|e| e.targets.join(","))
        .collect();
    assert_eq!(zone, ["192.0.2.1", "192.0.2.2"], "the records themselves unchanged");
    Ok(())
}

/// A record read as ours through `--migrate-from-txt-owner` whose object is gone is deleted with its item: the
/// item's condition names the old owner it still holds, so the delete is neither reported failed nor leaves an
/// item that would block the name later.
#[tokio::test]
async fn a_migrated_record_no_longer_wanted_is_deleted_with_its_old_owners_item() -> Result<(), RegistryError> {
    let fake = Fake::start().await;
    fake.table(TABLE);
    let provider = Arc::new(InMemoryProvider::new(vec!["example.org".into()]));
    let gone = a("one.example.org", "192.0.2.1");
    fake.put(TABLE, item("one.example.org#A#", "old", "service/default/one"));
    provider.insert([gone]);
    let mut migrating = ownership("me");
    migrating.migrate_from_owner = Some("old".into());
    let registry = registry_with(&fake, provider.clone(), migrating);
    let config = PlanConfig {
        old_owner_id: Some("old".into()),
        ..plan("me")
    };
    let changes = sync(&registry, &config, &[]).await?;
    assert_eq!(changes.len(), 1, "the record is deleted: {changes:?}");
    assert!(fake.items(TABLE).is_empty(), "its item goes with it");
    assert!(
        provider.snapshot().iter().all(|e| e.record_type != RecordType::A),
        "the record is gone from the zone"
    );
    Ok(())
}

/// While migrating (`--migrate-from-txt-owner`) and adopting (`--adopt-from-owner`), a read scans three
/// owners' items, ours, the old owner's and the releaser's: sent at once (each arrives before any is
/// answered, the fake answering each a second late), and read as one after another would read them.
#[tokio::test]
async fn a_read_while_migrating_and_adopting_sends_its_three_scans_at_once() -> Result<(), RegistryError> {
    let fake = Fake::start().await;
    fake.table(TABLE);
    let provider = Arc::new(InMemoryProvider::new(vec!["example.org".into()]));
    provider.insert([a("mine.example.org", "192.0.2.1"), a("old.example.org", "192.0.2.2")]);
    fake.put(TABLE, item("mine.example.org#A#", "me", "service/default/mine"));
    fake.put(TABLE, item("old.example.org#A#", "old", "service/default/old"));
    let mut both = ownership("me");
    both.migrate_from_owner = Some("old".into());
    both.adopt_from_owner = Some("releaser".into());
    let registry = registry_with(&fake, provider, both);
    fake.lock().faults.latency = std::time::Duration::from_secs(1);
    let read = registry.records().await?;
    {
        let log = &fake.lock().requests;
        assert_eq!(log.count("Scan"), 3, "{:?}", log.lines());
        assert!(
            log.all_in_flight_at_once("Scan"),
            "the scans were sent one after another"
        );
    }
    assert_eq!(owner(&read, "mine.example.org").as_deref(), Some("me"));
    assert_eq!(
        owner(&read, "old.example.org").as_deref(),
        Some("me"),
        "the old owner's, migrated"
    );
    Ok(())
}

/// The same read against moto, a second implementation of DynamoDB's API (its `DescribeTable` and
/// filtered, projected `Scan`): our items, and the old owner's migrated as ours, with the releaser's scan
/// beside them.
#[tokio::test]
async fn a_read_while_migrating_and_adopting_reads_moto_as_the_strict_fake() -> Result<(), RegistryError> {
    extdns_test_support::require!(Moto);
    let moto = extdns_test_support::moto::Moto::start();
    moto.dynamodb_table(TABLE).await;
    for i in [
        item("mine.example.org#A#", "me", "service/default/mine"),
        item("old.example.org#A#", "old", "service/default/old"),
        item("theirs.example.org#A#", "someone", "service/default/theirs"),
    ] {
        moto.dynamodb("PutItem", json!({"TableName": TABLE, "Item": i})).await;
    }
    let provider = Arc::new(InMemoryProvider::new(vec!["example.org".into()]));
    provider.insert([
        a("mine.example.org", "192.0.2.1"),
        a("old.example.org", "192.0.2.2"),
        a("theirs.example.org", "192.0.2.3"),
    ]);
    let mut both = ownership("me");
    both.migrate_from_owner = Some("old".into());
    both.adopt_from_owner = Some("releaser".into());
    let read = registry_at(&moto.url, extdns_test_support::moto::REGION, provider, both)
        .records()
        .await?;
    assert_eq!(owner(&read, "mine.example.org").as_deref(), Some("me"));
    assert_eq!(
        owner(&read, "old.example.org").as_deref(),
        Some("me"),
        "the old owner's, migrated"
    );
    assert_eq!(
        owner(&read, "theirs.example.org"),
        None,
        "another owner's item is not read"
    );
    Ok(())
}
