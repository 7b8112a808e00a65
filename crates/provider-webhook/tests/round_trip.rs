//! extdns's client against extdns's server with the in-memory provider behind it, and the server's answers
//! checked byte for byte against what external-dns's server answers.

use std::sync::Arc;

use extdns_endpoint::{Change, Endpoint, ProviderSpecific, RecordType, Ttl};
use extdns_provider::{InMemoryProvider, Provider, ReadState, Unit};
use extdns_provider_webhook::{MEDIA_TYPE, ServerOptions, WebhookConfig, WebhookProvider, start_server};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

struct Pair {
    backend: Arc<InMemoryProvider>,
    client: WebhookProvider,
    addr: std::net::SocketAddr,
    _shutdown: tokio_util::sync::DropGuard,
}

async fn pair(zones: &[&str]) -> Pair {
    let backend = Arc::new(InMemoryProvider::new(zones.iter().map(|z| z.to_string()).collect()));
    let shutdown = CancellationToken::new();
    let server = start_server(
        "127.0.0.1:0",
        backend.clone(),
        ServerOptions {
            max_body_size: Some(1 << 20),
            ..ServerOptions::default()
        },
        shutdown.clone(),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let url = WebhookConfig::parse_url(&format!("http://{}", server.local_addr));
    let client = match url {
        Ok(url) => WebhookProvider::connect(&WebhookConfig::new(url)).await,
        Err(e) => panic!("{e}"),
    };
    let client = client.unwrap_or_else(|e| panic!("{e}"));
    Pair {
        backend,
        client,
        addr: server.local_addr,
        _shutdown: shutdown.drop_guard(),
    }
}

fn weighted(name: &str, ip: &str, id: &str) -> Endpoint {
    let mut ps = ProviderSpecific::default();
    ps.set("webhook/weight", "10");
    ps.set("alias", "false");
    Endpoint::new(name, RecordType::A, [ip])
        .with_set_identifier(id)
        .with_ttl(Ttl(300))
        .with_provider_specific(ps)
}

async fn apply(p: &dyn Provider, changes: &[Change]) {
    let units: Vec<Unit<'_>> = changes.iter().map(Unit::new).collect();
    if let Err(e) = p.apply(&ReadState::default(), &units).await {
        panic!("apply failed: {e}");
    }
}

async fn read(p: &dyn Provider) -> Vec<Endpoint> {
    match p.records().await {
        Ok(r) => r.endpoints,
        Err(e) => panic!("records failed: {e}"),
    }
}

#[tokio::test]
async fn create_update_delete_round_trip_keeps_set_identifier_and_provider_specific() {
    let p = pair(&["example.org"]).await;
    let blue = weighted("www.example.org", "192.0.2.1", "blue");
    let green = weighted("www.example.org", "192.0.2.2", "green");
    let cname = Endpoint::new("alias.example.org", RecordType::Cname, ["www.example.org"]);
    apply(
        &p.client,
        &[
            Change::Create(blue.clone()),
            Change::Create(green.clone()),
            Change::Create(cname.clone()),
        ],
    )
    .await;

    let through_webhook = read(&p.client).await;
    let direct = p.backend.snapshot();
    assert_eq!(through_webhook.len(), 3);
    assert_eq!(through_webhook, direct, "the client reads what the backend holds");
    let got_blue = through_webhook.iter().find(|e| e.set_identifier == "blue");
    assert_eq!(
        got_blue,
        Some(&blue),
        "set identifier, TTL and provider-specific survive both hops"
    );
    assert_eq!(
        got_blue.map(|e| e.provider_specific.iter().map(|p| p.name.as_str()).collect::<Vec<_>>()),
        Some(vec!["webhook/weight", "alias"])
    );

    let green2 = weighted("www.example.org", "192.0.2.22", "green");
    apply(&p.client, &[Change::update(green.clone(), green2.clone())]).await;
    let after_update = read(&p.client).await;
    assert!(after_update.contains(&green2) && !after_update.contains(&green));
    assert!(after_update.contains(&blue), "the other set identifier is untouched");

    apply(&p.client, &[Change::Delete(blue.clone()), Change::Delete(cname)]).await;
    assert_eq!(read(&p.client).await, vec![green2]);
}

/// TLSA, SVCB and HTTPS pass through the protocol as their type names and text, both ways; what a server
/// holds in its own spelling reads back in the canonical text a source writes.
#[tokio::test]
async fn tlsa_svcb_and_https_pass_through_and_read_back_in_canonical_text() {
    let p = pair(&["example.org"]).await;
    let tlsa = Endpoint::new("_443._tcp.www.example.org", RecordType::Tlsa, ["3 1 0 abcdef"]);
    let svcb = Endpoint::new("_dns.example.org", RecordType::Svcb, ["1 dns.example.org. alpn=dot"]);
    apply(&p.client, &[Change::Create(tlsa.clone()), Change::Create(svcb.clone())]).await;
    let held = p.backend.snapshot();
    assert!(held.contains(&tlsa) && held.contains(&svcb), "{held:?}");
    // A server that prints its own spelling.
    let https = Endpoint::new("www.example.org", RecordType::Https, ["1 . port=443 alpn=\"h2,h3\""]);
    apply(p.backend.as_ref(), &[Change::Create(https)]).await;
    let read = read(&p.client).await;
    let got = read
        .iter()
        .find(|e| e.record_type == RecordType::Https)
        .map(|e| e.targets[0].to_string());
    assert_eq!(got.as_deref(), Some("1 . alpn=h2,h3 port=443"));
    let (status, _, body) = raw(p.addr, "GET", "/records", "").await;
    assert_eq!(status, 200);
    assert!(
        body.contains(r#""recordType":"TLSA""#) && body.contains(r#""recordType":"SVCB""#),
        "{body}"
    );
}

#[tokio::test]
async fn the_servers_domain_filter_is_the_backends_zones() {
    let p = pair(&["example.org"]).await;
    let f = p.client.domain_filter();
    assert!(f.matches("a.example.org") && !f.matches("a.example.com"));
    assert_eq!(
        f.matches("a.example.com"),
        p.backend.domain_filter().matches("a.example.com")
    );
}

#[tokio::test]
async fn a_backend_failure_is_a_soft_error_for_the_client() {
    let p = pair(&["example.org"]).await;
    p.backend.set_unavailable(true);
    let err = p.client.records().await.err();
    assert_eq!(err.as_ref().map(|e| e.is_transient()), Some(true), "{err:?}");
    p.backend.set_unavailable(false);
    // A delete of a record that does not exist fails in the backend: 500, retried next loop.
    let change = Change::Delete(Endpoint::new("none.example.org", RecordType::A, ["192.0.2.9"]));
    let err = p.client.apply(&ReadState::default(), &[Unit::new(&change)]).await.err();
    assert_eq!(err.as_ref().map(|e| e.is_transient()), Some(true), "{err:?}");
}

#[tokio::test]
async fn adjust_endpoints_goes_through_the_backend() {
    let p = pair(&["example.org"]).await;
    let e = weighted("a.example.org", "192.0.2.1", "x");
    let adjusted = p.client.adjust_endpoints(vec![e.clone()]).await.ok();
    let direct = p.backend.adjust_endpoints(vec![e]).await.ok();
    assert_eq!(adjusted, direct);
}

/// One raw HTTP/1.1 exchange, so the test sees exactly the bytes on the wire.
async fn raw(addr: std::net::SocketAddr, method: &str, path: &str, body: &str) -> (u16, String, String) {
    let mut s = tokio::net::TcpStream::connect(addr)
        .await
        .unwrap_or_else(|e| panic!("connect: {e}"));
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut out = String::new();
    if s.write_all(req.as_bytes()).await.is_err() || s.read_to_string(&mut out).await.is_err() {
        panic!("exchange failed");
    }
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    let status = head.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let content_type = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .starts_with("content-type:")
                .then(|| l[13..].trim().to_string())
        })
        .unwrap_or_default();
    (status, content_type, body.to_string())
}

/// `POST /adjustendpoints` with `endpoints`: the status and the body.
async fn adjust(addr: std::net::SocketAddr, endpoints: &str) -> (u16, String) {
    let (status, _, body) = raw(addr, "POST", "/adjustendpoints", endpoints).await;
    (status, body)
}

#[tokio::test]
async fn the_server_answers_as_external_dns_does() {
    let p = pair(&["example.org"]).await;
    // Every unmatched path and method is negotiation, with the media type and a newline after the JSON.
    for (method, path) in [("GET", "/"), ("GET", "/healthz"), ("POST", "/"), ("GET", "/anything")] {
        let (status, ct, body) = raw(p.addr, method, path, "").await;
        assert_eq!(
            (status, ct.as_str(), body.as_str()),
            (200, MEDIA_TYPE, "{\"include\":[\"example.org\"]}\n"),
            "{method} {path}"
        );
    }
    let (status, ct, body) = raw(p.addr, "GET", "/records", "").await;
    assert_eq!((status, ct.as_str(), body.as_str()), (200, MEDIA_TYPE, "[]\n"));

    let create = r#"{"create":[{"dnsName":"a.example.org","targets":["1.2.3.4"],"recordType":"A","setIdentifier":"s","providerSpecific":[{"name":"x","value":"y"}]}],"updateOld":null}"#;
    let (status, ct, body) = raw(p.addr, "POST", "/records", create).await;
    assert_eq!((status, ct.as_str(), body.as_str()), (204, "", ""));
    let (_, _, body) = raw(p.addr, "GET", "/records", "").await;
    assert_eq!(
        body,
        "[{\"dnsName\":\"a.example.org\",\"targets\":[\"1.2.3.4\"],\"recordType\":\"A\",\"setIdentifier\":\"s\",\"providerSpecific\":[{\"name\":\"x\",\"value\":\"y\"}]}]\n"
    );

    let (status, body) = adjust(p.addr, r#"[{"dnsName":"b.example.org","targets":null,"labels":null}]"#).await;
    assert_eq!((status, body.as_str()), (200, "[{\"dnsName\":\"b.example.org\"}]\n"));

    // Errors have no body: 400 for a bad body or method, 500 for a backend failure.
    for (method, path, body, code) in [
        ("POST", "/records", "xx", 400),
        ("PUT", "/records", "", 400),
        ("DELETE", "/records", "", 400),
        ("GET", "/adjustendpoints", "", 400),
        ("POST", "/adjustendpoints", "zz", 400),
        (
            "POST",
            "/records",
            r#"{"delete":[{"dnsName":"zz.example.org","targets":["1.2.3.4"],"recordType":"A"}]}"#,
            500,
        ),
    ] {
        let (status, ct, text) = raw(p.addr, method, path, body).await;
        assert_eq!(
            (status, ct.as_str(), text.as_str()),
            (code, "", ""),
            "{method} {path} {body}"
        );
    }
}

/// external-dns #6484: a request body the server decodes (POST `/records`, POST `/adjustendpoints`) over
/// `--webhook-provider-max-body-size` is answered 413 with no body, whether its length is announced or found
/// while it streams; nothing of it is applied. A body of exactly the limit is read; a GET's body is not.
#[tokio::test]
async fn webhook_body_limits_6484_an_oversized_request_is_answered_413() {
    const LIMIT: usize = 64;
    let backend = Arc::new(InMemoryProvider::new(vec!["example.org".into()]));
    let shutdown = CancellationToken::new();
    let _guard = shutdown.clone().drop_guard();
    let server = start_server(
        "127.0.0.1:0",
        backend.clone(),
        ServerOptions {
            max_body_size: Some(LIMIT as u64),
            ..ServerOptions::default()
        },
        shutdown,
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let create = r#"{"create":[{"dnsName":"a.example.org","targets":["1.2.3.4"],"recordType":"A"}]}"#;
    assert!(create.len() > LIMIT);
    for path in ["/records", "/adjustendpoints"] {
        let (status, ct, body) = raw(server.local_addr, "POST", path, create).await;
        assert_eq!((status, ct.as_str(), body.as_str()), (413, "", ""), "{path}");
    }
    // Chunked, no Content-Length: found while reading.
    let mut s = tokio::net::TcpStream::connect(server.local_addr)
        .await
        .unwrap_or_else(|e| panic!("connect: {e}"));
    let head = "POST /records HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n";
    let chunk = format!("{:x}\r\n{}\r\n", 40, "x".repeat(40));
    let req = format!("{head}{chunk}{chunk}0\r\n\r\n");
    let mut out = String::new();
    if s.write_all(req.as_bytes()).await.is_err() || s.read_to_string(&mut out).await.is_err() {
        panic!("exchange failed");
    }
    assert!(out.starts_with("HTTP/1.1 413 "), "{out}");
    assert!(read(backend.as_ref()).await.is_empty(), "nothing was applied");

    // Exactly the limit is accepted.
    let fits = format!("{:<LIMIT$}", r#"{"create":null}"#);
    assert_eq!(raw(server.local_addr, "POST", "/records", &fits).await.0, 204);
    // A GET's body is never read (external-dns's server ignores it too).
    let (status, _, body) = raw(server.local_addr, "GET", "/records", create).await;
    assert_eq!((status, body.as_str()), (200, "[]\n"));
}

/// Go's decoder matches keys to fields whatever their case, so external-dns's server applies a body written
/// `{"Create":[{"DNSName":...}]}`; extdns's applies it too instead of answering 204 with nothing written.
#[tokio::test]
async fn request_keys_in_any_case_are_applied_as_go_decodes_them() {
    let p = pair(&["example.org"]).await;
    let body = r#"{"Create":[{"DNSName":"any-case.example.org","Targets":["192.0.2.7"],"RecordType":"A","ProviderSpecific":[{"Name":"alias","Value":"false"}]}]}"#;
    let (status, _, _) = raw(p.addr, "POST", "/records", body).await;
    assert_eq!(status, 204);
    let records = p.backend.records().await.map(|r| r.endpoints);
    assert!(
        matches!(&records, Ok(e) if e.len() == 1 && e[0].dns_name == "any-case.example.org" && e[0].targets.len() == 1),
        "{records:?}"
    );
    let (status, adjusted) = adjust(p.addr, r#"[{"dnsname":"b.example.org","RECORDTYPE":"A"}]"#).await;
    assert_eq!(status, 200);
    assert!(adjusted.contains(r#""dnsName":"b.example.org""#), "{adjusted}");
}
