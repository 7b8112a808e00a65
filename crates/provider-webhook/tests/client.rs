//! The client against small in-test servers that answer what a test wants: status codes, soft errors,
//! the media type check, the body limit and the negotiated domain filter.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use extdns_endpoint::{Change, DomainFilter, Endpoint, ObjectKey, RecordType, label};
use extdns_provider::{Backoff, Provider, ProviderError, ReadState, Unit};
use extdns_provider_webhook::{
    Call, CallCounter, CountCalls, MEDIA_TYPE, WebhookConfig, WebhookError, WebhookProvider,
};

/// What a fake server saw: method, path, Accept and Content-Type headers, body.
#[derive(Debug, Clone)]
struct Seen {
    method: Method,
    path: String,
    accept: Option<String>,
    content_type: Option<String>,
    body: String,
}

type Handler = Arc<dyn Fn(&Seen) -> Response + Send + Sync>;

/// A server that records every request and answers with `handler`.
async fn fake(handler: Handler) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let app = Router::new().fallback(any(move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
        let (handler, log) = (handler.clone(), log.clone());
        async move {
            let header = |name| {
                headers
                    .get(name)
                    .and_then(|v: &header::HeaderValue| v.to_str().ok())
                    .map(String::from)
            };
            let s = Seen {
                method,
                path: uri.path().to_string(),
                accept: header(header::ACCEPT),
                content_type: header(header::CONTENT_TYPE),
                body: String::from_utf8_lossy(&body).into_owned(),
            };
            let response = handler(&s);
            if let Ok(mut log) = log.lock() {
                log.push(s);
            }
            response
        }
    }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("bind: {e}"));
    let addr = listener.local_addr().map(|a| a.to_string()).unwrap_or_default();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}"), seen)
}

fn webhook_json(body: &str) -> Response {
    ([(header::CONTENT_TYPE, MEDIA_TYPE)], body.to_string()).into_response()
}

/// A well-behaved server: negotiation with `filter`, `records` on GET /records, 204 on POST /records.
fn protocol(filter: &'static str, records: &'static str, apply: StatusCode) -> Handler {
    Arc::new(move |s: &Seen| match (s.method.as_str(), s.path.as_str()) {
        ("GET", "/") => webhook_json(filter),
        ("GET", "/records") => webhook_json(records),
        ("POST", "/records") => apply.into_response(),
        ("POST", "/adjustendpoints") => webhook_json(&s.body),
        _ => StatusCode::NOT_FOUND.into_response(),
    })
}

fn config(url: &str) -> WebhookConfig {
    let url = WebhookConfig::parse_url(url).unwrap_or_else(|e| panic!("{e}"));
    let mut c = WebhookConfig::new(url);
    c.negotiate_backoff = Backoff {
        initial: Duration::from_millis(10),
        max: Duration::from_millis(20),
        ..Backoff::default()
    };
    c
}

async fn connect(url: &str) -> WebhookProvider {
    WebhookProvider::connect(&config(url))
        .await
        .unwrap_or_else(|e| panic!("negotiation failed: {e}"))
}

fn a(name: &str, ip: &str) -> Endpoint {
    Endpoint::new(name, RecordType::A, [ip])
}

#[tokio::test]
async fn negotiation_sends_the_exact_accept_header_and_reads_the_domain_filter() {
    let (url, seen) = fake(protocol(
        r#"{"include":["example.org"],"exclude":["internal.example.org"]}"#,
        "[]",
        StatusCode::NO_CONTENT,
    ))
    .await;
    let p = connect(&url).await;
    let f = p.domain_filter();
    assert!(f.matches("www.example.org"));
    assert!(!f.matches("db.internal.example.org"));
    assert!(!f.matches("www.example.com"));
    let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
    assert_eq!(seen.len(), 1);
    assert_eq!((seen[0].method.as_str(), seen[0].path.as_str()), ("GET", "/"));
    assert_eq!(seen[0].accept.as_deref(), Some(MEDIA_TYPE));
}

#[tokio::test]
async fn the_negotiated_filter_is_anded_with_the_local_one() {
    let (url, _) = fake(protocol(r#"{"include":["example.org"]}"#, "[]", StatusCode::NO_CONTENT)).await;
    let p = connect(&url).await;
    let provider_filter = p.domain_filter();
    let local = DomainFilter::new(&["a.example.org", "b.example.com"], &[]);
    let both = [&local, &provider_filter];
    assert!(DomainFilter::matches_all(&both, "x.a.example.org"));
    assert!(
        !DomainFilter::matches_all(&both, "x.b.example.com"),
        "outside the server's filter"
    );
    assert!(
        !DomainFilter::matches_all(&both, "x.c.example.org"),
        "outside the local filter"
    );
}

#[tokio::test]
async fn a_regex_domain_filter_is_understood() {
    let (url, _) = fake(protocol(
        r#"{"regexInclude":"\\.org$","regexExclude":"^internal"}"#,
        "[]",
        StatusCode::NO_CONTENT,
    ))
    .await;
    let f = connect(&url).await.domain_filter();
    assert!(f.matches("a.example.org") && !f.matches("a.example.com") && !f.matches("internal.example.org"));
}

#[tokio::test]
async fn a_content_type_that_differs_even_by_a_space_fails_negotiation() {
    let handler: Handler = Arc::new(|_: &Seen| {
        (
            [(header::CONTENT_TYPE, "application/external.dns.webhook+json; version=1")],
            "{}",
        )
            .into_response()
    });
    let (url, seen) = fake(handler).await;
    let err = WebhookProvider::connect(&config(&url)).await.err();
    assert!(
        matches!(&err, Some(WebhookError::MediaType { content_type, .. }) if content_type.contains("; version")),
        "{err:?}"
    );
    let msg = err.map(|e| e.to_string()).unwrap_or_default();
    assert!(msg.contains(&url), "{msg}");
    assert_eq!(
        seen.lock().map(|s| s.len()).unwrap_or(0),
        5,
        "negotiation is tried 5 times"
    );
}

#[tokio::test]
async fn negotiation_retries_until_the_server_answers() {
    let calls = Arc::new(Mutex::new(0));
    let counter = calls.clone();
    let handler: Handler = Arc::new(move |_: &Seen| {
        let n = counter.lock().map(|mut c| {
            *c += 1;
            *c
        });
        if n.unwrap_or(0) < 3 {
            StatusCode::SERVICE_UNAVAILABLE.into_response()
        } else {
            webhook_json("{}")
        }
    });
    let (url, _) = fake(handler).await;
    let p = connect(&url).await;
    assert!(!p.domain_filter().is_configured());
    assert_eq!(calls.lock().map(|c| *c).unwrap_or(0), 3);
}

#[tokio::test]
async fn negotiation_against_nothing_fails_naming_the_url() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(1);
    let url = format!("http://127.0.0.1:{port}");
    let err = WebhookProvider::connect(&config(&url)).await.err();
    let msg = err.as_ref().map(ToString::to_string).unwrap_or_default();
    assert!(matches!(err, Some(WebhookError::Request { .. })), "{msg}");
    assert!(msg.contains(&format!("GET {url}/")), "{msg}");
}

#[tokio::test]
async fn records_are_read_with_null_fields_and_provider_specific_kept() {
    let body = r#"[{"dnsName":"a.example.org","targets":["1.2.3.4"],"recordType":"A","setIdentifier":"blue",
        "recordTTL":300,"labels":null,"providerSpecific":[{"name":"webhook/x","value":"1"}]},
        {"dnsName":"t.example.org","targets":null,"recordType":"TXT"}]"#;
    let (url, seen) = fake(protocol("{}", body, StatusCode::NO_CONTENT)).await;
    let p = connect(&url).await;
    let records = match p.records().await {
        Ok(r) => r.endpoints,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(records.len(), 2);
    assert_eq!(records[0].set_identifier, "blue");
    assert_eq!(records[0].record_ttl.0, 300);
    assert_eq!(records[0].provider_specific.get("webhook/x"), Some("1"));
    assert!(records[1].targets.is_empty());
    let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
    assert_eq!(seen[1].path, "/records");
    assert_eq!(seen[1].accept.as_deref(), Some(MEDIA_TYPE));
}

#[tokio::test]
async fn a_null_record_list_is_no_records() {
    let (url, _) = fake(protocol("{}", "null", StatusCode::NO_CONTENT)).await;
    let records = connect(&url).await.records().await.map(|r| r.endpoints.len());
    assert_eq!(records.ok(), Some(0));
}

/// A server that negotiates, then answers every other call with `code`.
fn failing(code: StatusCode) -> Handler {
    Arc::new(move |s: &Seen| {
        if s.path == "/" {
            webhook_json("{}")
        } else {
            code.into_response()
        }
    })
}

#[tokio::test]
async fn only_500_to_510_are_soft_errors() {
    for (code, transient) in [
        (500, true),
        (503, true),
        (510, true),
        (511, false),
        (429, false),
        (408, false),
        (413, false),
        (404, false),
        (201, false),
    ] {
        let code = StatusCode::from_u16(code).unwrap_or(StatusCode::IM_A_TEAPOT);
        let (url, _) = fake(failing(code)).await;
        let p = connect(&url).await;
        let err = p.records().await.err();
        assert_eq!(
            err.as_ref().map(ProviderError::is_transient),
            Some(transient),
            "GET /records {code}: {err:?}"
        );
        let msg = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(
            msg.contains(&format!("{url}/records")) && msg.contains(&code.as_u16().to_string()),
            "{msg}"
        );

        let change = Change::Create(a("a.example.org", "1.1.1.1"));
        let err = p.apply(&ReadState::default(), &[Unit::new(&change)]).await.err();
        assert_eq!(
            err.as_ref().map(ProviderError::is_transient),
            Some(transient),
            "POST /records {code}"
        );
        let err = p.adjust_endpoints(vec![a("a.example.org", "1.1.1.1")]).await.err();
        assert_eq!(
            err.as_ref().map(ProviderError::is_transient),
            Some(transient),
            "POST /adjustendpoints {code}"
        );
    }
}

#[tokio::test]
async fn apply_wants_exactly_204() {
    let (url, _) = fake(protocol("{}", "[]", StatusCode::OK)).await;
    let p = connect(&url).await;
    let change = Change::Delete(a("a.example.org", "1.1.1.1"));
    let err = p.apply(&ReadState::default(), &[Unit::new(&change)]).await.err();
    let msg = err.map(|e| e.to_string()).unwrap_or_default();
    assert!(msg.contains("status 200, expected 204"), "{msg}");
}

#[tokio::test]
async fn apply_sends_the_four_lists_with_the_media_type_and_ownership_records() {
    let (url, seen) = fake(protocol("{}", "[]", StatusCode::NO_CONTENT)).await;
    let p = connect(&url).await;
    let create = Change::Create(of_web(a("new.example.org", "1.1.1.1")));
    let owner = Change::Create(Endpoint::new(
        "a-new.example.org",
        RecordType::Txt,
        ["\"heritage=external-dns\""],
    ));
    let update = Change::update(
        a("upd.example.org", "1.1.1.1")
            .with_set_identifier("s1")
            .with_label(label::RESOURCE, "service/shop/old"),
        of_web(a("upd.example.org", "2.2.2.2").with_set_identifier("s1")),
    );
    let delete = Change::Delete(a("old.example.org", "3.3.3.3"));
    let units = [
        Unit::with_ownership(&create, &owner),
        Unit::new(&update),
        Unit::new(&delete),
    ];
    if let Err(e) = p.apply(&ReadState::default(), &units).await {
        panic!("{e}");
    }
    let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
    let post = &seen[1];
    assert_eq!((post.method.as_str(), post.path.as_str()), ("POST", "/records"));
    assert_eq!(post.content_type.as_deref(), Some(MEDIA_TYPE));
    let body: serde_json::Value = serde_json::from_str(&post.body).unwrap_or_default();
    let names = |key: &str| -> Vec<String> {
        body[key]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| e["dnsName"].as_str().map(String::from))
            .collect()
    };
    assert_eq!(names("create"), ["new.example.org", "a-new.example.org"]);
    assert_eq!(names("updateOld"), ["upd.example.org"]);
    assert_eq!(body["updateNew"][0]["targets"][0], "2.2.2.2");
    assert_eq!(body["updateNew"][0]["setIdentifier"], "s1");
    assert_eq!(names("delete"), ["old.example.org"]);
    // external-dns sends the `resource` label of the records it asks for: rendered from their object here;
    // a record read back keeps the one it was written with.
    assert_eq!(
        body["create"][0]["labels"],
        serde_json::json!({"resource": "service/shop/web"})
    );
    assert_eq!(body["updateNew"][0]["labels"]["resource"], "service/shop/web");
    assert_eq!(body["updateOld"][0]["labels"]["resource"], "service/shop/old");
    assert_eq!(
        body["create"][1].get("labels"),
        None,
        "an ownership record names no object"
    );
}

/// `e` as a source makes it for the Service `shop/web`: the object, no `resource` label of its own.
fn of_web(mut e: Endpoint) -> Endpoint {
    e.ref_objects.extend(ObjectKey::from_resource_label("service/shop/web"));
    e
}

#[tokio::test]
async fn nothing_to_apply_sends_nothing() {
    let (url, seen) = fake(protocol("{}", "[]", StatusCode::NO_CONTENT)).await;
    let p = connect(&url).await;
    assert!(p.apply(&ReadState::default(), &[]).await.is_ok());
    assert_eq!(seen.lock().map(|s| s.len()).unwrap_or(0), 1);
}

#[tokio::test]
async fn adjust_endpoints_round_trips_through_the_server() {
    let (url, seen) = fake(protocol("{}", "[]", StatusCode::NO_CONTENT)).await;
    let p = connect(&url).await;
    let adjusted = p
        .adjust_endpoints(vec![of_web(a("a.example.org", "1.1.1.1").with_set_identifier("x"))])
        .await
        .unwrap_or_default();
    // The server echoes what it was sent: the label comes back, naming the same object.
    assert_eq!(
        adjusted,
        vec![
            a("a.example.org", "1.1.1.1")
                .with_set_identifier("x")
                .with_label(label::RESOURCE, "service/shop/web")
        ]
    );
    assert_eq!(adjusted[0].resource().as_deref(), Some("service/shop/web"));
    let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
    assert_eq!(seen[1].path, "/adjustendpoints");
    assert_eq!(seen[1].accept.as_deref(), Some(MEDIA_TYPE));
    assert_eq!(seen[1].content_type.as_deref(), Some(MEDIA_TYPE));
}

#[tokio::test]
async fn webhook_body_limits_6484_a_response_over_the_limit_is_an_error() {
    let big: &'static str =
        Box::leak(format!("[{}]", vec![r#"{"dnsName":"a.example.org"}"#; 1000].join(",")).into_boxed_str());
    let (url, _) = fake(protocol("{}", big, StatusCode::NO_CONTENT)).await;
    let mut c = config(&url);
    c.max_body_size = Some(4096);
    let p = WebhookProvider::connect(&c).await.unwrap_or_else(|e| panic!("{e}"));
    let err = p.records().await.err();
    let msg = err.as_ref().map(ToString::to_string).unwrap_or_default();
    assert!(
        msg.contains("exceeds the limit of 4096 bytes") && msg.contains("/records"),
        "{msg}"
    );
    assert_eq!(err.map(|e| e.is_transient()), Some(false));
    c.max_body_size = Some(big.len() as u64);
    let p = WebhookProvider::connect(&c).await;
    let n = match p {
        Ok(p) => p.records().await.map(|r| r.endpoints.len()).ok(),
        Err(e) => panic!("{e}"),
    };
    assert_eq!(n, Some(1000), "a body of exactly the limit is accepted");
}

#[tokio::test]
async fn webhook_body_limits_6484_a_streamed_response_without_length_is_cut_at_the_limit() {
    use axum::body::Body;
    let handler: Handler = Arc::new(|s: &Seen| {
        if s.path == "/" {
            return webhook_json("{}");
        }
        // Chunked, no Content-Length: the limit must be enforced while reading.
        let chunks = (0..64).map(|_| Ok::<_, std::io::Error>(Bytes::from(vec![b' '; 1024])));
        let body = Body::from_stream(futures::stream::iter(chunks));
        ([(header::CONTENT_TYPE, MEDIA_TYPE)], body).into_response()
    });
    let (url, _) = fake(handler).await;
    let mut c = config(&url);
    c.max_body_size = Some(10_000);
    let p = WebhookProvider::connect(&c).await.unwrap_or_else(|e| panic!("{e}"));
    let msg = p.records().await.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(msg.contains("exceeds the limit of 10000 bytes"), "{msg}");
}

#[tokio::test]
async fn an_invalid_url_is_refused() {
    for url in ["localhost:8888", "ftp://example.org", "not a url"] {
        assert!(
            matches!(WebhookConfig::parse_url(url), Err(WebhookError::InvalidUrl { .. })),
            "{url}"
        );
    }
}

/// `--webhook-provider-read-timeout=0 --webhook-provider-write-timeout=0`: external-dns's client then has no
/// timeout (Go's `http.Client{Timeout: 0}`), so every call still completes, however long the server takes.
#[tokio::test]
async fn zero_read_and_write_timeouts_are_no_timeout() {
    let (url, _) = fake(protocol("{}", "[]", StatusCode::NO_CONTENT)).await;
    let mut c = config(&url);
    c.read_timeout = Duration::ZERO;
    c.write_timeout = Duration::ZERO;
    let p = WebhookProvider::connect(&c).await;
    let p = p.unwrap_or_else(|e| panic!("negotiation failed: {e}"));
    assert!(p.records().await.is_ok_and(|r| r.endpoints.is_empty()));
}

#[tokio::test]
async fn a_base_url_with_a_path_keeps_it() {
    let (url, seen) = fake(Arc::new(|s: &Seen| match s.path.as_str() {
        "/prefix/" | "/prefix" => webhook_json("{}"),
        "/prefix/records" => webhook_json("[]"),
        _ => StatusCode::NOT_FOUND.into_response(),
    }))
    .await;
    let p = connect(&format!("{url}/prefix/")).await;
    assert!(p.records().await.is_ok());
    let paths: Vec<String> = seen
        .lock()
        .map(|s| s.iter().map(|x| x.path.clone()).collect())
        .unwrap_or_default();
    assert_eq!(paths, ["/prefix/", "/prefix/records"]);
}

/// Counts what the provider reports, as the binary's metrics do.
#[derive(Default)]
struct Counted(Mutex<Vec<(Call, bool)>>);

impl CountCalls for Counted {
    fn count(&self, call: Call, failed: bool) {
        if let Ok(mut c) = self.0.lock() {
            c.push((call, failed));
        }
    }
}

#[derive(Default)]
struct Requests(Mutex<Vec<(String, Option<u16>)>>);

impl extdns_provider::http::Observe for Requests {
    fn observe(&self, method: &Method, url: &reqwest::Url, status: Option<reqwest::StatusCode>, _: Duration) {
        if let Ok(mut r) = self.0.lock() {
            r.push((format!("{method} {}", url.path()), status.map(|s| s.as_u16())));
        }
    }
}

#[tokio::test]
async fn every_call_is_counted_with_its_failures_and_every_request_observed() {
    let (url, _) = fake(protocol("{}", "[]", StatusCode::OK)).await;
    let counted = Arc::new(Counted::default());
    let requests = Arc::new(Requests::default());
    let mut c = config(&url);
    c.calls = CallCounter(Some(counted.clone()));
    c.observer = extdns_provider::http::Observer(Some(requests.clone()));
    let p = WebhookProvider::connect(&c).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(p.records().await.is_ok());
    let change = Change::Create(a("a.example.org", "1.1.1.1"));
    // The fake answers 200 where the protocol wants 204: an ApplyChanges error.
    assert!(p.apply(&ReadState::default(), &[Unit::new(&change)]).await.is_err());
    assert!(p.adjust_endpoints(vec![a("a.example.org", "1.1.1.1")]).await.is_ok());
    let counted = counted.0.lock().map(|c| c.clone()).unwrap_or_default();
    assert_eq!(
        counted,
        [
            (Call::Records, false),
            (Call::ApplyChanges, true),
            (Call::AdjustEndpoints, false)
        ]
    );
    let requests = requests.0.lock().map(|r| r.clone()).unwrap_or_default();
    assert_eq!(
        requests,
        [
            ("GET /".to_string(), Some(200)),
            ("GET /records".to_string(), Some(200)),
            ("POST /records".to_string(), Some(200)),
            ("POST /adjustendpoints".to_string(), Some(200)),
        ]
    );
}

/// A `Retry-After` on a 429 holds the provider's next request as long as the server asked, though the
/// protocol retries nothing itself.
#[tokio::test]
async fn a_retry_after_holds_the_next_request() {
    let handler: Handler = Arc::new(|s: &Seen| match (s.method.as_str(), s.path.as_str()) {
        ("GET", "/") => webhook_json("{}"),
        ("GET", "/records") => (StatusCode::TOO_MANY_REQUESTS, [(header::RETRY_AFTER, "30")]).into_response(),
        _ => StatusCode::NOT_FOUND.into_response(),
    });
    let (url, seen) = fake(handler).await;
    let p = connect(&url).await;
    let first = p.records().await;
    assert!(first.is_err(), "{first:?}");
    let next = tokio::time::timeout(Duration::from_secs(1), p.records()).await;
    assert!(next.is_err(), "the next request left at once");
    let reads = seen.lock().map(|s| s.iter().filter(|r| r.path == "/records").count());
    assert_eq!(reads.unwrap_or_default(), 1);
}
