//! The registry against an API server that answers from a table (no server process): a create at a name
//! whose DNSRecord another owner holds.

use std::sync::{Arc, Mutex, PoisonError};

use extdns_endpoint::{Change, Endpoint, RecordType};
use extdns_provider::{InMemoryProvider, ProviderError};
use extdns_registry::Registry;
use extdns_test_support::kube_api;
use serde_json::{Value, json};

use crate::{CrdRegistry, CrdRegistryConfig, object};

/// An API server holding one DNSRecord, `theirs`: a LIST finds none of ours, a POST of that name is a
/// conflict, a GET returns it. Every request is logged as `METHOD path`.
fn api_holding(theirs: Value) -> (kube::Client, Arc<Mutex<Vec<String>>>) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let seen = log.clone();
    let client = kube_api::client("dns", move |request| {
        let (method, path) = (request.method, request.path);
        let answer = match method.as_str() {
            "GET" if path.ends_with("/dnsrecords") => (
                200,
                json!({ "kind": "DNSRecordList",
                "apiVersion": "externaldns.k8s.io/v1alpha1", "metadata": {}, "items": [] }),
            ),
            "GET" => (200, theirs.clone()),
            "POST" => (409, kube_api::status(409, "AlreadyExists")),
            _ => (500, kube_api::status(500, "InternalError")),
        };
        seen.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(format!("{method} {path}"));
        answer
    });
    (client, log)
}

/// external-dns #6617: a record created without ownership beside another owner's. Here the create is
/// refused before the provider is called, naming the other owner; their object is neither written nor
/// deleted.
#[tokio::test]
async fn issue_6617_no_record_is_created_where_another_owners_dnsrecord_is() -> Result<(), Box<dyn std::error::Error>> {
    let web = Endpoint::new("web.example.org", RecordType::A, ["192.0.2.1"]);
    let name = crate::object_name(&web);
    let theirs = serde_json::to_value(object::new_object(&name, "dns", "them", &web))?;
    let (client, log) = api_holding(theirs);
    let provider = Arc::new(InMemoryProvider::new(vec!["example.org".into()]));
    let registry = CrdRegistry::new(client, provider.clone(), CrdRegistryConfig::new("me", "dns")?);
    let snapshot = registry.records().await?;
    let err = registry
        .apply(&snapshot, &[Change::Create(web)])
        .await
        .expect_err("refused");
    let extdns_registry::RegistryError::Provider(ProviderError::Partial { failures }) = &err else {
        panic!("not a per-record failure: {err}");
    };
    assert_eq!(failures.len(), 1);
    assert!(
        failures[0].reason.message.contains("\"them\""),
        "{}",
        failures[0].reason
    );
    assert!(provider.snapshot().is_empty(), "no record without its ownership");
    let log = log.lock().unwrap_or_else(PoisonError::into_inner).clone();
    assert!(
        log.iter().all(|r| r.starts_with("GET ") || r.starts_with("POST ")),
        "their object is only read: {log:?}"
    );
    Ok(())
}
