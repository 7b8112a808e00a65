//! The webhook server's connection timeouts (external-dns v0.23, #6484), each met by a real TCP client that
//! stalls where the timeout bounds it, and answered as Go's `http.Server` under external-dns answers (what
//! each probe gets was observed against external-dns v0.23.0's server; `crates/extdns/tests/webhook_interop.rs`
//! runs the same probes against both servers side by side).

use std::sync::Arc;
use std::time::{Duration, Instant};

use extdns_provider::{InMemoryProvider, Provider};
use extdns_provider_webhook::{ServerOptions, ServerTimeouts, start_server};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::{CancellationToken, DropGuard};

fn ms(millis: u64) -> Duration {
    Duration::from_millis(millis)
}

struct Server {
    backend: Arc<InMemoryProvider>,
    addr: std::net::SocketAddr,
    _shutdown: DropGuard,
}

async fn server(read_header: u64, read: u64, write: u64, idle: u64) -> Server {
    let backend = Arc::new(InMemoryProvider::new(vec!["example.org".to_string()]));
    let shutdown = CancellationToken::new();
    let options = ServerOptions {
        timeouts: ServerTimeouts {
            read_header: ms(read_header),
            read: ms(read),
            write: ms(write),
            idle: ms(idle),
        },
        ..ServerOptions::default()
    };
    let started = start_server("127.0.0.1:0", backend.clone(), options, shutdown.clone()).await;
    let started = started.unwrap_or_else(|e| panic!("{e}"));
    Server {
        backend,
        addr: started.local_addr,
        _shutdown: shutdown.drop_guard(),
    }
}

async fn connect(s: &Server) -> TcpStream {
    TcpStream::connect(s.addr).await.unwrap_or_else(|e| panic!("{e}"))
}

async fn send(c: &mut TcpStream, bytes: &[u8]) {
    c.write_all(bytes).await.unwrap_or_else(|e| panic!("{e}"));
}

/// Everything the server sends until it closes the connection (or 10 s pass), and when it closed.
async fn until_closed(c: &mut TcpStream) -> (String, Instant) {
    let mut out = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), c.read_to_end(&mut out)).await;
    assert!(
        read.is_ok(),
        "the connection stayed open 10 s; got {:?}",
        String::from_utf8_lossy(&out)
    );
    (String::from_utf8_lossy(&out).into_owned(), Instant::now())
}

/// One whole response on a connection kept alive (read up to its Content-Length).
async fn response(c: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&out).into_owned();
        if let Some(head_end) = text.find("\r\n\r\n") {
            let length = text[..head_end]
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length: ")
                        .map(str::to_string)
                })
                .and_then(|l| l.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if out.len() >= head_end + 4 + length {
                return text;
            }
        }
        let n = tokio::time::timeout(Duration::from_secs(5), c.read(&mut buf)).await;
        match n {
            Ok(Ok(0)) => panic!("closed before a whole response: {text:?}"),
            Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
            other => panic!("no response: {other:?} after {text:?}"),
        }
    }
}

fn within(elapsed: Duration, from_ms: u64, to_ms: u64) -> bool {
    elapsed >= ms(from_ms) && elapsed < ms(to_ms)
}

const GET_RECORDS: &[u8] = b"GET /records HTTP/1.1\r\nHost: webhook\r\n\r\n";

/// A change that creates one record, `web.example.org`.
const CREATE_WEB: &[u8] = br#"{"create":[{"dnsName":"web.example.org","targets":["192.0.2.1"],"recordType":"A"}]}"#;

/// A connection kept alive after one request answered 200.
async fn kept_alive(s: &Server) -> TcpStream {
    let mut c = connect(s).await;
    send(&mut c, GET_RECORDS).await;
    assert!(response(&mut c).await.starts_with("HTTP/1.1 200 OK\r\n"));
    c
}

/// `POST /records` with `body`: the head, then the body's first ten bytes, and the rest after `pause`.
async fn post_records_in_two_parts(c: &mut TcpStream, body: &[u8], pause: Duration) {
    let head = format!(
        "POST /records HTTP/1.1\r\nHost: webhook\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    send(c, head.as_bytes()).await;
    let (first, rest) = body.split_at(10);
    send(c, first).await;
    tokio::time::sleep(pause).await;
    send(c, rest).await;
}

/// The names of the backend's records.
async fn names(backend: &InMemoryProvider) -> Result<Vec<String>, extdns_provider::ProviderError> {
    let records = backend.records().await?;
    Ok(records.endpoints.iter().map(|e| e.dns_name.clone()).collect())
}

#[tokio::test]
async fn read_header_timeout_6484_closes_a_connection_whose_head_is_late_without_an_answer() {
    let s = server(300, 5_000, 10_000, 30_000).await;
    // Nothing sent, or half a head: closed at the header timeout, counted from the connection's start.
    let mut silent = connect(&s).await;
    let mut half = connect(&s).await;
    let start = Instant::now();
    send(&mut half, b"GET /records HTTP/1.1\r\nHost: web").await;
    let (silent_got, silent_closed) = until_closed(&mut silent).await;
    let (half_got, half_closed) = until_closed(&mut half).await;
    assert_eq!((silent_got.as_str(), half_got.as_str()), ("", ""));
    for closed in [silent_closed, half_closed] {
        assert!(within(closed - start, 250, 2_000), "{:?}", closed - start);
    }
}

#[tokio::test]
async fn idle_timeout_6484_closes_a_kept_alive_connection_waiting_for_its_next_request() {
    let s = server(200, 5_000, 10_000, 900).await;
    let mut c = kept_alive(&s).await;
    // Idle past the header timeout: still open, the next request is served.
    tokio::time::sleep(Duration::from_millis(500)).await;
    send(&mut c, GET_RECORDS).await;
    assert!(response(&mut c).await.starts_with("HTTP/1.1 200 OK\r\n"));
    let idle_from = Instant::now();
    let (got, closed) = until_closed(&mut c).await;
    assert_eq!(got, "");
    assert!(within(closed - idle_from, 850, 3_000), "{:?}", closed - idle_from);
}

#[tokio::test]
async fn read_timeout_6484_answers_400_and_closes_when_the_body_is_late() {
    let s = server(300, 800, 10_000, 30_000).await;
    let mut c = connect(&s).await;
    let start = Instant::now();
    send(
        &mut c,
        b"POST /records HTTP/1.1\r\nHost: webhook\r\nContent-Length: 100\r\n\r\n{",
    )
    .await;
    let (got, closed) = until_closed(&mut c).await;
    assert!(got.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{got:?}");
    assert!(
        got.to_ascii_lowercase().contains("\r\nconnection: close\r\n"),
        "{got:?}"
    );
    // The read timeout counts from the connection's start, not from the end of the head.
    assert!(within(closed - start, 750, 2_500), "{:?}", closed - start);
    assert!(s.backend.records().await.is_ok_and(|r| r.endpoints.is_empty()));
}

/// The write timeout counts from the end of the head: a body that takes longer leaves the response
/// unwritten (the connection closes without an answer, as Go's server does), but changes once decoded are
/// applied, as external-dns's handler applies them.
#[tokio::test]
async fn write_timeout_6484_drops_a_late_response_but_applies_the_changes() {
    let s = server(300, 5_000, 400, 30_000).await;
    let mut c = connect(&s).await;
    post_records_in_two_parts(&mut c, CREATE_WEB, ms(700)).await;
    let (got, _) = until_closed(&mut c).await;
    assert_eq!(got, "");
    let names = names(&s.backend).await;
    assert!(matches!(&names, Ok(n) if n == &["web.example.org"]), "{names:?}");
}

/// Within the timeouts nothing changes: the same body sent in two parts inside the write timeout is
/// answered 204 and the connection kept.
#[tokio::test]
async fn within_the_timeouts_6484_requests_are_answered_and_connections_kept() {
    let s = server(300, 5_000, 2_000, 30_000).await;
    let mut c = connect(&s).await;
    post_records_in_two_parts(&mut c, CREATE_WEB, ms(400)).await;
    assert!(response(&mut c).await.starts_with("HTTP/1.1 204 No Content\r\n"));
    send(&mut c, GET_RECORDS).await;
    assert!(response(&mut c).await.contains("web.example.org"));
}

/// Zero header and idle timeouts fall back to the read timeout, as in Go; all zero is no timeout.
#[tokio::test]
async fn zero_timeouts_6484_fall_back_to_the_read_timeout_or_are_none() {
    let s = server(0, 600, 0, 0).await;
    let mut c = kept_alive(&s).await;
    let idle_from = Instant::now();
    let mut half = connect(&s).await;
    send(&mut half, b"GET /records HTTP/1.1\r\n").await;
    let (_, closed) = until_closed(&mut c).await;
    assert!(within(closed - idle_from, 550, 2_500), "{:?}", closed - idle_from);
    let (_, closed) = until_closed(&mut half).await;
    assert!(within(closed - idle_from, 550, 2_500), "{:?}", closed - idle_from);

    let none = server(0, 0, 0, 0).await;
    let mut c = connect(&none).await;
    send(&mut c, b"GET /records HTTP/1.1\r\n").await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    send(&mut c, b"Host: webhook\r\n\r\n").await;
    assert!(response(&mut c).await.starts_with("HTTP/1.1 200 OK\r\n"));
}

/// A backend whose writes take a while.
struct Slow(Arc<InMemoryProvider>);

#[async_trait::async_trait]
impl Provider for Slow {
    async fn records(&self) -> Result<extdns_provider::Records, extdns_provider::ProviderError> {
        self.0.records().await
    }

    async fn apply(
        &self,
        read: &extdns_provider::ReadState,
        units: &[extdns_provider::Unit<'_>],
    ) -> Result<(), extdns_provider::ProviderError> {
        tokio::time::sleep(Duration::from_millis(500)).await;
        self.0.apply(read, units).await
    }
}

/// Changes once decoded are applied to the end, as external-dns's handler applies them: a client that
/// hangs up while the provider writes does not cut the write short.
#[tokio::test]
async fn an_apply_outlives_a_client_that_hangs_up() {
    let backend = Arc::new(InMemoryProvider::new(vec!["example.org".to_string()]));
    let shutdown = CancellationToken::new();
    let started = start_server(
        "127.0.0.1:0",
        Arc::new(Slow(backend.clone())),
        ServerOptions::default(),
        shutdown.clone(),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let _shutdown = shutdown.drop_guard();
    let mut c = TcpStream::connect(started.local_addr)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    post_records_in_two_parts(&mut c, CREATE_WEB, Duration::ZERO).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    drop(c);
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    let names = names(&backend).await;
    assert!(matches!(&names, Ok(n) if n == &["web.example.org"]), "{names:?}");
}
