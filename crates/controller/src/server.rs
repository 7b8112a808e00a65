//! The `--metrics-address` listener: `/metrics` for Prometheus, `/healthz` and `/readyz` for the kubelet's
//! probes, `/summary` for the names that are not published and why ([`crate::summary`]).
//!
//! `/healthz` answers 200 `OK` as long as the process serves HTTP, as external-dns does: a sync that fails
//! (a provider down) is not a reason for the kubelet to restart extdns, it would only lose the informer
//! caches and come back to the same failure.
//!
//! `/readyz` answers 503 until this replica completed its first full sync, then 200 for good: a Service in
//! front of the replicas (the built-in DNS server's) must not send a query to one that would answer from
//! empty zones. A replica that follows the leader of a shared provider never syncs; it is ready once its
//! informers have listed everything, when it could take over at once. A later failing sync does not make a
//! replica unready: what it serves or would write is still its last complete view.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::Metrics;
use crate::exposition::Format;
use crate::summary::{Summary, SummaryQuery};

/// Why the metrics server could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// The address is taken or not ours to bind.
    #[error("cannot listen on metrics address {address:?}: {source}")]
    Bind {
        /// The `--metrics-address` value.
        address: String,
        /// The operating system's reason.
        source: std::io::Error,
    },
}

/// A running metrics server.
#[derive(Debug)]
pub struct MetricsServer {
    /// The bound address (useful when the port was 0).
    pub local_addr: SocketAddr,
    /// The serving task; it ends at shutdown.
    pub handle: JoinHandle<()>,
}

/// Binds `address` (Go syntax: `:7979` means every interface) and serves until `shutdown`. Binding happens
/// before this returns, so a busy port is a startup error rather than a silent missing endpoint.
pub async fn start_metrics_server(
    address: &str,
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
) -> Result<MetricsServer, ServerError> {
    let bind_to = listen_address(address);
    let bind_err = |source| ServerError::Bind {
        address: address.to_string(),
        source,
    };
    let listener = TcpListener::bind(&bind_to).await.map_err(bind_err)?;
    let local_addr = listener.local_addr().map_err(bind_err)?;
    let app = router(metrics);
    let handle = tokio::spawn(async move {
        let served = axum::serve(listener, app)
            .with_graceful_shutdown(shutdown.cancelled_owned())
            .await;
        if let Err(e) = served {
            tracing::error!(error = %e, "metrics server stopped");
        }
    });
    tracing::info!(address = %local_addr, "serving /metrics, /healthz, /readyz and /summary");
    Ok(MetricsServer { local_addr, handle })
}

pub(crate) fn router(metrics: Arc<Metrics>) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics_handler))
        .route("/summary", get(summary_handler))
        .with_state(metrics)
}

async fn healthz() -> &'static str {
    "OK"
}

async fn readyz(State(metrics): State<Arc<Metrics>>) -> (StatusCode, &'static str) {
    if metrics.is_ready() {
        (StatusCode::OK, "OK")
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: the first full sync has not completed",
        )
    }
}

/// The text format unless the scraper's `Accept` prefers OpenMetrics, as Prometheus client libraries answer.
async fn metrics_handler(State(metrics): State<Arc<Metrics>>, headers: HeaderMap) -> impl IntoResponse {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let format = Format::negotiate(accept);
    (
        [(header::CONTENT_TYPE, format.content_type())],
        metrics.encode_as(format),
    )
}

/// `/summary`: the names' outcomes by kind and reason, and a page of the unpublished ones
/// ([`crate::summary`]).
async fn summary_handler(State(metrics): State<Arc<Metrics>>, RawQuery(query): RawQuery) -> impl IntoResponse {
    let query = SummaryQuery::parse(query.as_deref().unwrap_or_default());
    let summary = match Summary::page(&metrics.names().latest(), &query) {
        Ok(summary) => summary,
        Err(bad) => {
            return (
                StatusCode::BAD_REQUEST,
                [(header::CONTENT_TYPE, "text/plain")],
                bad.to_string(),
            );
        }
    };
    match serde_json::to_string(&summary) {
        Ok(body) => (StatusCode::OK, [(header::CONTENT_TYPE, "application/json")], body),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::CONTENT_TYPE, "text/plain")],
            format!("cannot encode the summary: {e}"),
        ),
    }
}

/// Go's `:port` (every interface) as a socket address Rust can bind.
fn listen_address(address: &str) -> String {
    match address.strip_prefix(':') {
        Some(port) => format!("0.0.0.0:{port}"),
        None => address.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A metrics server of `metrics` on a free loopback port, running until [`Running::stop`].
    struct Running {
        server: MetricsServer,
        shutdown: CancellationToken,
    }

    impl Running {
        async fn start(metrics: Arc<Metrics>) -> Result<Self, ServerError> {
            let shutdown = CancellationToken::new();
            let server = start_metrics_server("127.0.0.1:0", metrics, shutdown.clone()).await?;
            Ok(Running { server, shutdown })
        }

        fn addr(&self) -> SocketAddr {
            self.server.local_addr
        }

        /// Shuts the server down; it must end cleanly.
        async fn stop(self) -> Result<(), Box<dyn std::error::Error>> {
            self.shutdown.cancel();
            Ok(self.server.handle.await?)
        }
    }

    async fn get_path(addr: SocketAddr, path: &str) -> std::io::Result<String> {
        get_accepting(addr, path, None).await
    }

    async fn get_accepting(addr: SocketAddr, path: &str, accept: Option<&str>) -> std::io::Result<String> {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        let accept = accept.map(|a| format!("Accept: {a}\r\n")).unwrap_or_default();
        stream
            .write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n{accept}Connection: close\r\n\r\n").as_bytes())
            .await?;
        let mut out = String::new();
        stream.read_to_string(&mut out).await?;
        Ok(out)
    }

    #[tokio::test]
    async fn summary_serves_the_book_as_json_a_page_at_a_time() -> Result<(), Box<dyn std::error::Error>> {
        use std::collections::BTreeMap;

        use extdns_informer::{ObjectKey, ResourceKind};

        use crate::name_status::{NameOutcome, NameState, ObjectNames};

        let metrics = Arc::new(Metrics::new("1.2.3", "r"));
        let names = |name: &str| ObjectNames {
            uid: None,
            names: vec![NameOutcome {
                name: name.into(),
                record_type: "A".into(),
                set_identifier: Box::default(),
                state: NameState::Pending,
            }]
            .into(),
        };
        let update = BTreeMap::from([
            (
                ObjectKey::new(ResourceKind::Service, "shop", "a"),
                names("a.example.org"),
            ),
            (
                ObjectKey::new(ResourceKind::Service, "shop", "b"),
                names("b.example.org"),
            ),
        ]);
        metrics.names().fold(update, None);
        let server = Running::start(metrics).await?;
        let page = get_path(server.addr(), "/summary?limit=1").await?;
        assert!(page.starts_with("HTTP/1.1 200"), "{page}");
        assert!(page.contains("content-type: application/json"), "{page}");
        let body: serde_json::Value = serde_json::from_str(page.split("\r\n\r\n").nth(1).unwrap_or_default())?;
        assert_eq!(body["names"]["Service"]["Pending"], 2);
        assert_eq!(body["notPublished"].as_array().map(Vec::len), Some(1));
        let token = body["continue"]
            .as_str()
            .unwrap_or_default()
            .replace('/', "%2F")
            .replace('|', "%7C");
        let next = get_path(server.addr(), &format!("/summary?limit=1&continue={token}")).await?;
        let next: serde_json::Value = serde_json::from_str(next.split("\r\n\r\n").nth(1).unwrap_or_default())?;
        assert_eq!(next["notPublished"][0]["object"], "b");
        assert!(next.get("continue").is_none(), "{next}");
        // A token no page gave: refused, not the first page again.
        let bad = get_path(server.addr(), "/summary?limit=1&continue=garbage").await?;
        assert!(bad.starts_with("HTTP/1.1 400"), "{bad}");
        assert!(bad.contains("is not a token a /summary page gave"), "{bad}");
        server.stop().await
    }

    #[test]
    fn go_style_port_only_address_listens_everywhere() {
        assert_eq!(listen_address(":7979"), "0.0.0.0:7979");
        assert_eq!(listen_address("127.0.0.1:9090"), "127.0.0.1:9090");
        assert_eq!(listen_address("[::1]:9090"), "[::1]:9090");
    }

    #[tokio::test]
    async fn healthz_answers_ok_and_metrics_are_served() -> Result<(), Box<dyn std::error::Error>> {
        let metrics = Arc::new(Metrics::new("1.2.3", "r"));
        metrics.no_op_runs.inc();
        let server = Running::start(metrics).await?;

        let health = get_path(server.addr(), "/healthz").await?;
        assert!(health.starts_with("HTTP/1.1 200"), "{health}");
        assert!(health.ends_with("\r\n\r\nOK"), "{health}");

        let scrape = get_path(server.addr(), "/metrics").await?;
        assert!(scrape.starts_with("HTTP/1.1 200"), "{scrape}");
        assert!(
            scrape.contains("external_dns_controller_no_op_runs_total 1"),
            "{scrape}"
        );
        assert!(scrape.contains("external_dns_build_info{version=\"1.2.3\""), "{scrape}");

        // A Prometheus scrape asking for the text format gets it, the process series included.
        let text = get_accepting(server.addr(), "/metrics", Some("text/plain")).await?;
        let lower = text.to_ascii_lowercase();
        assert!(
            lower.contains("\r\ncontent-type: text/plain; version=0.0.4; charset=utf-8\r\n"),
            "{text}"
        );
        assert!(
            text.contains("# TYPE external_dns_controller_no_op_runs_total counter\n"),
            "{text}"
        );
        assert!(text.contains("\nprocess_resident_memory_bytes "), "{text}");
        assert!(!text.contains("# EOF"), "{text}");
        let om = get_accepting(
            server.addr(),
            "/metrics",
            Some("application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"),
        )
        .await?;
        assert!(
            om.to_ascii_lowercase()
                .contains("\r\ncontent-type: application/openmetrics-text; version=1.0.0; charset=utf-8\r\n"),
            "{om}"
        );
        assert!(
            om.contains("# TYPE external_dns_controller_no_op_runs counter\n"),
            "{om}"
        );
        assert!(om.ends_with("# EOF\n"), "{om}");

        let missing = get_path(server.addr(), "/nope").await?;
        assert!(missing.starts_with("HTTP/1.1 404"), "{missing}");

        server.stop().await
    }

    #[tokio::test]
    async fn readyz_is_503_until_the_first_full_sync_then_200() -> Result<(), Box<dyn std::error::Error>> {
        let metrics = Arc::new(Metrics::new("0", "0"));
        let server = Running::start(metrics.clone()).await?;
        let before = get_path(server.addr(), "/readyz").await?;
        assert!(before.starts_with("HTTP/1.1 503"), "{before}");
        assert!(before.ends_with("the first full sync has not completed"), "{before}");
        metrics.mark_ready();
        let after = get_path(server.addr(), "/readyz").await?;
        assert!(after.starts_with("HTTP/1.1 200"), "{after}");
        assert!(after.ends_with("\r\n\r\nOK"), "{after}");
        server.stop().await
    }

    /// With `--dns-provider-crds`: one listener for every provider object's controller, each scrape one
    /// valid exposition; ready when the binary says so, whatever its children are.
    #[tokio::test]
    async fn a_providers_root_serves_its_children_and_is_ready_when_told() -> Result<(), Box<dyn std::error::Error>> {
        let root = Arc::new(Metrics::for_providers("1.2.3", "r"));
        let child = Arc::new(root.child());
        child.no_op_runs.inc();
        child.mark_ready();
        root.attach("team-a/public", child);
        let server = Running::start(root.clone()).await?;
        for (accept, format) in [
            (None, Format::Text),
            (Some("application/openmetrics-text;version=1.0.0"), Format::OpenMetrics),
        ] {
            let answer = get_accepting(server.addr(), "/metrics", accept).await?;
            let body = answer.split_once("\r\n\r\n").map_or("", |(_, body)| body);
            assert_eq!(crate::exposition_check::check(body, format), Ok(()), "{body}");
            assert!(
                body.contains("\nexternal_dns_controller_no_op_runs_total{provider=\"team-a/public\"} 1\n"),
                "{body}"
            );
        }
        let before = get_path(server.addr(), "/readyz").await?;
        assert!(
            before.starts_with("HTTP/1.1 503"),
            "a ready child does not make the root ready: {before}"
        );
        root.mark_ready();
        let after = get_path(server.addr(), "/readyz").await?;
        assert!(after.starts_with("HTTP/1.1 200"), "{after}");
        server.stop().await
    }

    #[tokio::test]
    async fn busy_port_is_a_startup_error() -> Result<(), Box<dyn std::error::Error>> {
        let taken = TcpListener::bind("127.0.0.1:0").await?;
        let addr = taken.local_addr()?.to_string();
        let err = start_metrics_server(&addr, Arc::new(Metrics::new("0", "0")), CancellationToken::new()).await;
        assert!(matches!(err, Err(ServerError::Bind { .. })));
        Ok(())
    }
}
