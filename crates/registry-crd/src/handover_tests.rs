//! The hand-over of docs/migration.md on the CRD registry, against an API server that keeps DNSRecords in
//! a table (no server process): the releaser's plan writes the release into its objects, the adopter reads
//! the objects released to it and takes over those identical to what it would write, the object changing
//! owner in one write; the record is never deleted, never claimed by two objects, never unclaimed.
//!
//! external-dns's hand-over bugs (issue 47) on this registry: #6617 is `claim_tests`; #6671 and #5457 are
//! here. #6671 is tested through the hand-over (`--txt-adopt-from-owner`): the CRD registry has no
//! `--migrate-from-txt-owner` migration, as in external-dns (it reads only its own owner's DNSRecords, so
//! an old owner's objects are never read, let alone migrated), and the hand-over is how records change
//! owner here. #5457 applies where two DNSRecords claim one record: a record has one object name, so only
//! an object made under another name (by hand) or the adopted owner's beside ours can.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use extdns_endpoint::{DomainFilter, Endpoint, RecordType, label};
use extdns_plan::{PlanConfig, calculate};
use extdns_provider::InMemoryProvider;
use extdns_registry::Registry;
use extdns_test_support::kube_api::{self, status};
use serde_json::{Value, json};

use crate::{CrdRegistry, CrdRegistryConfig, CrdRegistryError, object};

type Res = Result<(), Box<dyn std::error::Error>>;
type Objects = Arc<Mutex<BTreeMap<String, Value>>>;

/// The label selector's owner in a LIST's query (`labelSelector=externaldns.k8s.io%2Fowner%3D<id>`).
fn selected_owner(query: &str) -> Option<String> {
    query.split('&').find_map(|kv| {
        let value = kv.strip_prefix("labelSelector=")?;
        let decoded = value.replace("%2F", "/").replace("%3D", "=");
        decoded
            .strip_prefix(&format!("{}=", object::OWNER_LABEL))
            .map(str::to_string)
    })
}

/// An API server holding DNSRecords in `objects`: LIST by owner label, GET, POST, PUT (and PUT status,
/// which keeps the stored spec), DELETE.
fn api(objects: Objects) -> kube::Client {
    kube_api::client("dns", move |request| {
        let mut store = objects.lock().unwrap_or_else(PoisonError::into_inner);
        let tail: Vec<&str> = request.path.rsplit('/').take(2).collect();
        let bad_request = || (400, status(400, "BadRequest"));
        match (request.method.as_str(), tail.as_slice()) {
            ("GET", ["dnsrecords", ..]) => {
                let owner = selected_owner(&request.query);
                let items: Vec<Value> = store
                    .values()
                    .filter(|o| {
                        owner
                            .as_deref()
                            .is_none_or(|w| o["metadata"]["labels"][object::OWNER_LABEL].as_str() == Some(w))
                    })
                    .cloned()
                    .collect();
                (
                    200,
                    json!({ "kind": "DNSRecordList", "apiVersion": "externaldns.k8s.io/v1alpha1",
                            "metadata": {}, "items": items }),
                )
            }
            ("POST", ["dnsrecords", ..]) => {
                let Ok(new) = request.json() else { return bad_request() };
                let name = new["metadata"]["name"].as_str().unwrap_or_default().to_string();
                match store.entry(name) {
                    std::collections::btree_map::Entry::Occupied(_) => (409, status(409, "AlreadyExists")),
                    std::collections::btree_map::Entry::Vacant(slot) => {
                        slot.insert(new.clone());
                        (201, new)
                    }
                }
            }
            ("PUT", ["status", name, ..]) => match (store.get_mut(*name), request.json()) {
                (Some(stored), Ok(new)) => {
                    stored["status"] = new["status"].clone();
                    (200, stored.clone())
                }
                (None, _) => (404, status(404, "NotFound")),
                (_, Err(_)) => bad_request(),
            },
            ("PUT", [name, "dnsrecords"]) => {
                let Ok(new) = request.json() else { return bad_request() };
                store.insert(name.to_string(), new.clone());
                (200, new)
            }
            ("GET", [name, "dnsrecords"]) => match store.get(*name) {
                Some(o) => (200, o.clone()),
                None => (404, status(404, "NotFound")),
            },
            ("DELETE", [name, "dnsrecords"]) => match store.remove(*name) {
                Some(_) => (200, status(200, "Deleted")),
                None => (404, status(404, "NotFound")),
            },
            _ => (500, status(500, "Unexpected")),
        }
    })
}

/// One sync of `registry` as the controller runs it, its plan configured by `plan`; returns the changes.
async fn sync(
    registry: &CrdRegistry,
    plan: &PlanConfig,
    desired: &[Endpoint],
) -> Result<Vec<extdns_endpoint::Change>, Box<dyn std::error::Error>> {
    let snapshot = registry.records().await?;
    let outcome = calculate(plan, &snapshot.records, desired, &DomainFilter::default());
    if !outcome.changes.is_empty() {
        registry.apply(&snapshot, &outcome.changes).await?;
    }
    Ok(outcome.changes)
}

fn plan(owner: &str, release_to: Option<&str>, adopt_from: Option<&str>) -> PlanConfig {
    PlanConfig {
        owner_id: owner.into(),
        release_to: release_to.map(str::to_string),
        adopt_from: adopt_from.map(str::to_string),
        ..PlanConfig::default()
    }
}

/// The owner labels of the objects held, by object name.
fn owners(objects: &Objects) -> Vec<String> {
    let held = objects.lock().unwrap_or_else(PoisonError::into_inner);
    held.values()
        .map(|o| {
            let spec_owner = o["spec"]["endpoint"]["labels"][label::OWNER]
                .as_str()
                .unwrap_or_default();
            let label_owner = o["metadata"]["labels"][object::OWNER_LABEL]
                .as_str()
                .unwrap_or_default();
            format!("{label_owner}/{spec_owner}")
        })
        .collect()
}

#[tokio::test]
async fn a_released_identical_record_is_adopted_by_rewriting_its_dnsrecord_in_place() -> Res {
    let objects: Objects = Arc::default();
    let provider = Arc::new(InMemoryProvider::new(vec!["example.org".into()]));
    let web = Endpoint::new("web.example.org", RecordType::A, ["192.0.2.1"]);
    let api_server = || api(objects.clone());
    let old = CrdRegistry::new(api_server(), provider.clone(), CrdRegistryConfig::new("old", "dns")?);
    let new = CrdRegistry::new(
        api_server(),
        provider.clone(),
        CrdRegistryConfig::new("new", "dns")?.adopting_from("old")?,
    );

    sync(&old, &plan("old", None, None), std::slice::from_ref(&web)).await?;
    assert_eq!(owners(&objects), ["old/old"]);
    // Not released yet: the adopter does not even read the record.
    assert!(new.records().await?.records.is_empty());

    // Phase 1: the release goes into the object's record, the record unchanged.
    let released = sync(&old, &plan("old", Some("new"), None), std::slice::from_ref(&web)).await?;
    assert_eq!(released.len(), 1, "{released:?}");
    let read = old.records().await?;
    assert_eq!(read.records[0].label(label::RELEASED_TO), Some("new"));
    assert!(
        sync(&old, &plan("old", Some("new"), None), std::slice::from_ref(&web))
            .await?
            .is_empty()
    );

    // A record that differs from what the adopter would write is not taken.
    let other = Endpoint::new("web.example.org", RecordType::A, ["192.0.2.2"]);
    let changes = sync(&new, &plan("new", None, Some("old")), std::slice::from_ref(&other)).await?;
    assert!(changes.is_empty(), "{changes:?}");
    assert_eq!(owners(&objects), ["old/old"]);

    // Phase 2: identical, it is taken over; the one object changes owner, the record stays.
    let adopted = sync(&new, &plan("new", None, Some("old")), std::slice::from_ref(&web)).await?;
    assert_eq!(adopted.len(), 1, "{adopted:?}");
    assert_eq!(owners(&objects), ["new/new"]);
    assert!(
        old.records().await?.records.is_empty(),
        "the old owner reads nothing of it any more"
    );
    let read = new.records().await?;
    assert_eq!(read.records.len(), 1);
    assert_eq!(read.records[0].owner(), Some("new"));
    assert_eq!(read.records[0].label(label::RELEASED_TO), None);
    assert_eq!(provider.snapshot().len(), 1);
    assert!(
        sync(&new, &plan("new", None, Some("old")), std::slice::from_ref(&web))
            .await?
            .is_empty()
    );
    Ok(())
}

#[tokio::test]
async fn without_adopting_a_released_record_stays_the_releasers() -> Res {
    let objects: Objects = Arc::default();
    let provider = Arc::new(InMemoryProvider::new(vec!["example.org".into()]));
    let web = Endpoint::new("web.example.org", RecordType::A, ["192.0.2.1"]);
    let old = CrdRegistry::new(
        api(objects.clone()),
        provider.clone(),
        CrdRegistryConfig::new("old", "dns")?,
    );
    sync(&old, &plan("old", Some("new"), None), std::slice::from_ref(&web)).await?;
    sync(&old, &plan("old", Some("new"), None), std::slice::from_ref(&web)).await?;
    // Adopting from another owner than the releaser takes nothing.
    let third = CrdRegistry::new(
        api(objects.clone()),
        provider.clone(),
        CrdRegistryConfig::new("new", "dns")?.adopting_from("someone-else")?,
    );
    assert!(third.records().await?.records.is_empty());
    let err = third
        .apply(&third.records().await?, &[extdns_endpoint::Change::Create(web.clone())])
        .await;
    assert!(err.is_err(), "the old owner's object refuses the create");
    assert_eq!(owners(&objects), ["old/old"]);
    Ok(())
}

#[test]
fn adopting_from_ourselves_or_a_non_label_is_refused() -> Res {
    let config = CrdRegistryConfig::new("me", "dns")?;
    assert!(matches!(
        config.clone().adopting_from("me"),
        Err(CrdRegistryError::InvalidAdoptFrom(o)) if o == "me"
    ));
    assert!(config.clone().adopting_from("not a label").is_err());
    assert_eq!(config.clone().adopting_from("")?.adopt_from, None);
    assert_eq!(config.adopting_from("old")?.adopt_from.as_deref(), Some("old"));
    Ok(())
}

/// `web`'s DNSRecord named `name`, owned by `owner`, `Ready`, its record released to `released_to`.
fn held(objects: &Objects, name: &str, owner: &str, web: &Endpoint, released_to: Option<&str>) -> Res {
    let mut e = web.clone().with_label(label::OWNER, owner);
    if let Some(to) = released_to {
        e = e.with_label(label::RELEASED_TO, to);
    }
    let mut o = object::new_object(name, "dns", owner, &e);
    object::set_ready(&mut o, object::Stage::Programmed, "written", "2026-11-28T00:00:00Z");
    objects
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(name.to_string(), serde_json::to_value(o)?);
    Ok(())
}

/// external-dns #6671: with `--migrate-from-txt-owner`, records identical to what is asked for kept the
/// old owner's ownership (the update changing nothing was skipped). Here every released record identical
/// to ours is adopted, however many, none skipped for being identical, and the plan asks for nothing more
/// once they are ours.
#[tokio::test]
async fn issue_6671_every_identical_released_record_is_adopted_none_skipped() -> Res {
    let objects: Objects = Arc::default();
    let provider = Arc::new(InMemoryProvider::new(vec!["example.org".into()]));
    let records: Vec<Endpoint> = (1..=3)
        .map(|i| Endpoint::new(&format!("app-{i}.example.org"), RecordType::A, [format!("192.0.2.{i}")]))
        .collect();
    let old = CrdRegistry::new(
        api(objects.clone()),
        provider.clone(),
        CrdRegistryConfig::new("old", "dns")?,
    );
    sync(&old, &plan("old", None, None), &records).await?;
    sync(&old, &plan("old", Some("new"), None), &records).await?;
    let new = CrdRegistry::new(
        api(objects.clone()),
        provider.clone(),
        CrdRegistryConfig::new("new", "dns")?.adopting_from("old")?,
    );
    let adopted = sync(&new, &plan("new", None, Some("old")), &records).await?;
    assert_eq!(adopted.len(), 3, "{adopted:?}");
    assert_eq!(owners(&objects), ["new/new", "new/new", "new/new"]);
    assert_eq!(provider.snapshot().len(), 3, "no record deleted or duplicated");
    assert!(sync(&new, &plan("new", None, Some("old")), &records).await?.is_empty());
    Ok(())
}

/// external-dns #5457: of two ownership records of one record, external-dns keeps the one read last, so
/// an owner may take a record another claims. Here a record two owners' DNSRecords claim (ours, and the
/// adopted owner's under another object name, released to us) reads as the other owner's and released to
/// no one, whichever object is ours: neither updated, deleted nor adopted, both objects left as they are.
#[tokio::test]
async fn issue_5457_a_record_two_owners_dnsrecords_claim_is_never_read_as_ours() -> Res {
    let web = Endpoint::new("web.example.org", RecordType::A, ["192.0.2.1"]);
    let canonical = crate::object_name(&web);
    for (at_canonical, at_copy) in [("new", "old"), ("old", "new")] {
        let objects: Objects = Arc::default();
        let provider = Arc::new(InMemoryProvider::new(vec!["example.org".into()]));
        provider.insert([web.clone()]);
        let released = |owner: &str| (owner == "old").then_some("new");
        held(&objects, &canonical, at_canonical, &web, released(at_canonical))?;
        held(&objects, "web-by-hand", at_copy, &web, released(at_copy))?;
        let new = CrdRegistry::new(
            api(objects.clone()),
            provider.clone(),
            CrdRegistryConfig::new("new", "dns")?.adopting_from("old")?,
        );
        let read = new.records().await?;
        let [record] = &read.records[..] else {
            panic!("one record, whatever claims it: {:?}", read.records);
        };
        assert_eq!(record.owner(), Some("old"), "{at_canonical} holds the canonical object");
        assert_eq!(record.label(label::RELEASED_TO), None);
        let before = objects.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let moved = Endpoint::new("web.example.org", RecordType::A, ["192.0.2.9"]);
        for desired in [web.clone(), moved] {
            let changes = sync(&new, &plan("new", None, Some("old")), std::slice::from_ref(&desired)).await?;
            assert!(changes.is_empty(), "{changes:?}");
        }
        assert_eq!(*objects.lock().unwrap_or_else(PoisonError::into_inner), before);
        let zone: Vec<String> = provider.snapshot().iter().map(|e| e.targets.join(",")).collect();
        assert_eq!(zone, ["192.0.2.1"]);
    }
    Ok(())
}
