//! The kit against webhook servers written here: one that follows the protocol, and the same server with one
//! known defect each. The correct one must pass every check (so the kit does not cry wolf); each defect
//! must fail the check named after it.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use extdns_webhook_conformance::{CHECKS, Config, MEDIA_TYPE, Outcome, Report};
use serde_json::{Map, Value, json};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Defect {
    None,
    /// The media type re-serialised with a space after `;`.
    SpacedMediaType,
    /// `POST /records` answers 200 instead of 204.
    ApplyAnswers200,
    /// `providerSpecific` returned as a `{name: value}` map.
    ProviderSpecificMap,
    /// No NAPTR support: a batch holding one fails as a whole with 500.
    NoNaptr,
    /// TXT values listed without their quotes, but deleted only when spelled as stored (quoted).
    TxtUnquotedOnRead,
}

struct Fake {
    defect: Defect,
    records: Mutex<Vec<Map<String, Value>>>,
}

type Shared = Arc<Fake>;

fn key(e: &Map<String, Value>) -> (String, String, String) {
    let s = |f: &str| e.get(f).and_then(Value::as_str).unwrap_or_default().to_owned();
    (s("dnsName").to_ascii_lowercase(), s("recordType"), s("setIdentifier"))
}

fn json_answer(fake: &Fake, status: StatusCode, body: Value) -> Response {
    let media = if fake.defect == Defect::SpacedMediaType {
        "application/external.dns.webhook+json; version=1"
    } else {
        MEDIA_TYPE
    };
    (status, [(header::CONTENT_TYPE, media)], body.to_string()).into_response()
}

async fn negotiate(State(fake): State<Shared>) -> Response {
    json_answer(&fake, StatusCode::OK, json!({ "include": ["conformance.test"] }))
}

async fn records(State(fake): State<Shared>) -> Response {
    let Ok(records) = fake.records.lock() else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let out: Vec<Value> = records
        .iter()
        .map(|r| {
            let mut r = r.clone();
            if fake.defect == Defect::TxtUnquotedOnRead
                && key(&r).1 == "TXT"
                && let Some(Value::Array(targets)) = r.get_mut("targets")
            {
                for t in targets.iter_mut() {
                    if let Some(text) = t.as_str() {
                        *t = Value::from(text.trim_matches('"'));
                    }
                }
            }
            if fake.defect == Defect::ProviderSpecificMap
                && let Some(Value::Array(list)) = r.remove("providerSpecific")
            {
                let map: Map<String, Value> = list
                    .iter()
                    .filter_map(|p| Some((p.get("name")?.as_str()?.to_owned(), p.get("value")?.clone())))
                    .collect();
                r.insert("providerSpecific".into(), Value::Object(map));
            }
            Value::Object(r)
        })
        .collect();
    json_answer(&fake, StatusCode::OK, Value::Array(out))
}

/// An endpoint as a server keeps it: Go's nulls dropped.
fn endpoint(v: &Value) -> Option<Map<String, Value>> {
    let Value::Object(m) = v else { return None };
    Some(
        m.iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    )
}

fn endpoints(v: Option<&Value>) -> Option<Vec<Map<String, Value>>> {
    match v {
        None | Some(Value::Null) => Some(Vec::new()),
        Some(Value::Array(items)) => items.iter().map(endpoint).collect(),
        Some(_) => None,
    }
}

async fn adjust(State(fake): State<Shared>, body: Bytes) -> Response {
    match serde_json::from_slice::<Value>(&body) {
        Ok(Value::Array(items)) => json_answer(&fake, StatusCode::OK, Value::Array(items)),
        _ => StatusCode::BAD_REQUEST.into_response(),
    }
}

/// Applies changes as external-dns's in-memory provider does: all or nothing, a create of an existing
/// record or a change of a missing one is an error.
async fn apply(State(fake): State<Shared>, body: Bytes) -> Response {
    let Ok(Value::Object(changes)) = serde_json::from_slice::<Value>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let (Some(create), Some(old), Some(new), Some(delete)) = (
        endpoints(changes.get("create")),
        endpoints(changes.get("updateOld")),
        endpoints(changes.get("updateNew")),
        endpoints(changes.get("delete")),
    ) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    if fake.defect == Defect::NoNaptr && create.iter().chain(&new).any(|e| key(e).1 == "NAPTR") {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    let Ok(mut records) = fake.records.lock() else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let mut next = records.clone();
    let position = |list: &[Map<String, Value>], e: &Map<String, Value>| list.iter().position(|r| key(r) == key(e));
    for e in create {
        if position(&next, &e).is_some() {
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
        next.push(e);
    }
    for (o, n) in old.iter().zip(new) {
        let Some(i) = position(&next, o) else {
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        };
        if next[i] != *o {
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
        next[i] = n;
    }
    for e in delete {
        let Some(i) = position(&next, &e) else {
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        };
        if fake.defect == Defect::TxtUnquotedOnRead && key(&e).1 == "TXT" && next[i].get("targets") != e.get("targets")
        {
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
        next.remove(i);
    }
    *records = next;
    if fake.defect == Defect::ApplyAnswers200 {
        StatusCode::OK.into_response()
    } else {
        StatusCode::NO_CONTENT.into_response()
    }
}

/// Starts the fake on a free port; returns its URL and its state.
async fn start(defect: Defect) -> (String, Shared) {
    let fake = Arc::new(Fake {
        defect,
        records: Mutex::new(Vec::new()),
    });
    let app = Router::new()
        .route("/", get(negotiate))
        .route("/records", get(records).post(apply))
        .route("/adjustendpoints", axum::routing::post(adjust))
        .with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a free port");
    let addr = listener.local_addr().expect("local address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), fake)
}

async fn run(defect: Defect) -> (Report, Shared) {
    let (url, fake) = start(defect).await;
    let report = extdns_webhook_conformance::check_url(&url).await.expect("the kit runs");
    println!("{report}");
    (report, fake)
}

fn failure<'r>(report: &'r Report, name: &str) -> &'r str {
    match report.check(name).map(|c| &c.outcome) {
        Some(Outcome::Fail(why)) => why,
        other => panic!("{name} should fail, got {other:?}\n{report}"),
    }
}

/// Check `name` failed, and its reason says `text`.
fn fails_with(report: &Report, name: &str, text: &str) {
    let why = failure(report, name);
    assert!(why.contains(text), "{name}: {why}");
}

fn passes(report: &Report, name: &str) {
    assert!(
        report.check(name).is_some_and(|c| c.passed()),
        "{name} should pass\n{report}"
    );
}

fn leftovers(fake: &Fake) -> usize {
    fake.records.lock().map(|r| r.len()).unwrap_or(usize::MAX)
}

#[tokio::test]
async fn a_correct_server_passes_every_check_and_is_left_clean() {
    let (report, fake) = run(Defect::None).await;
    assert!(report.passed(), "{report}");
    let names: Vec<&str> = report.checks.iter().map(|c| c.name).collect();
    assert_eq!(names, CHECKS);
    assert_eq!(
        report.zone, "conformance.test",
        "the zone comes from the negotiated filter"
    );
    assert_eq!(leftovers(&fake), 0);
}

#[tokio::test]
async fn a_spaced_media_type_fails_the_content_type_checks() {
    let (report, fake) = run(Defect::SpacedMediaType).await;
    fails_with(&report, "negotiate.content-type", "; version=1");
    failure(&report, "records.content-type");
    failure(&report, "adjust.content-type");
    // Only the defect fails: everything else still works.
    assert_eq!(report.failures().count(), 3, "{report}");
    assert_eq!(leftovers(&fake), 0);
}

#[tokio::test]
async fn answering_200_to_apply_fails_apply_status_204() {
    let (report, fake) = run(Defect::ApplyAnswers200).await;
    fails_with(&report, "apply.status-204", "answered 200, want 204");
    for name in ["apply.empty", "apply.update", "apply.delete"] {
        failure(&report, name);
    }
    passes(&report, "cleanup");
    passes(&report, "roundtrip.a");
    // The deletes landed even though the status was wrong.
    assert_eq!(leftovers(&fake), 0);
}

#[tokio::test]
async fn provider_specific_as_a_map_fails_roundtrip_provider_specific() {
    let (report, fake) = run(Defect::ProviderSpecificMap).await;
    fails_with(
        &report,
        "roundtrip.provider-specific",
        "providerSpecific is a JSON object",
    );
    passes(&report, "roundtrip.a");
    passes(&report, "cleanup");
    assert_eq!(
        leftovers(&fake),
        0,
        "the undecodable record is deleted as it was written"
    );
}

#[tokio::test]
async fn a_missing_record_type_fails_only_its_round_trip() {
    let (report, fake) = run(Defect::NoNaptr).await;
    fails_with(&report, "roundtrip.naptr", "does not return NAPTR");
    assert!(report.to_string().contains("UNSUPPORTED roundtrip.naptr: "), "{report}");
    // A capability the provider lacks is not a protocol failure.
    assert!(report.passed(), "{report}");
    assert_eq!(report.failures().count(), 0, "{report}");
    assert_eq!(report.unsupported().count(), 1, "{report}");
    assert_eq!(leftovers(&fake), 0);
}

#[tokio::test]
async fn cleanup_removes_a_txt_record_whose_quoting_the_server_changed() {
    let (report, fake) = run(Defect::TxtUnquotedOnRead).await;
    // The text survived: the record is stored, only its quoting differs.
    passes(&report, "roundtrip.txt");
    passes(&report, "cleanup");
    assert!(report.passed(), "{report}");
    assert_eq!(leftovers(&fake), 0);
}

#[tokio::test]
async fn the_zone_can_be_chosen() {
    let (url, fake) = start(Defect::None).await;
    let config = Config::new(&url)
        .and_then(|c| c.with_zone("Other.Test."))
        .expect("valid config");
    let report = extdns_webhook_conformance::run(&config).await.expect("the kit runs");
    assert!(report.passed(), "{report}");
    assert_eq!(report.zone, "other.test");
    assert_eq!(leftovers(&fake), 0);
}

#[tokio::test]
async fn an_unreachable_server_fails_negotiation_only() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    let url = format!("http://{}", listener.local_addr().expect("local address"));
    drop(listener);
    let report = extdns_webhook_conformance::check_url(&url).await.expect("the kit runs");
    assert_eq!(report.checks.len(), 1, "{report}");
    fails_with(&report, "negotiate.status-200", "no answer");
}
