//! `extdns --webhook-server`: any extdns provider served over the webhook protocol, answering as
//! external-dns's own server does, so a client cannot tell the two apart:
//!
//! - `GET /records` → 200 and the records; `POST /records` → 204 once the changes are applied;
//!   `POST /adjustendpoints` → 200 and the adjusted endpoints;
//! - every other path, whatever the method, is negotiation: 200 and the provider's domain filter (Go's
//!   mux sends every unmatched path to `/`);
//! - another method on `/records` or `/adjustendpoints`, or a body that is not the expected JSON → 400;
//!   a POST body over `--webhook-provider-max-body-size` → 413 (external-dns v0.23, #6484: the bodies Go's
//!   server decodes, not a GET's, whatever the path);
//!   a provider failure → 500 (which clients retry on their next loop);
//! - JSON bodies end with a newline and errors have no body, as Go's encoder and `WriteHeader` produce.
//!
//! `/healthz` and `/metrics` are not here: the binary serves them on the metrics address, as for the
//! controller.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use extdns_endpoint::{Changes, Endpoint};
use extdns_provider::{Provider, apply_changes};
use serde::Serialize;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::{error, info};

use crate::{MEDIA_TYPE, WebhookError};

/// A running webhook server.
#[derive(Debug)]
pub struct WebhookServer {
    /// The bound address (useful when the port was 0).
    pub local_addr: SocketAddr,
    /// The serving task; it ends at shutdown.
    pub handle: JoinHandle<()>,
}

/// What the handlers share: the provider, and the largest request body they read.
#[derive(Clone)]
struct Shared {
    provider: Arc<dyn Provider>,
    /// `--webhook-provider-max-body-size`; `usize::MAX` when 0 disables the bound.
    max_body_size: usize,
}

/// The protocol's routes over `provider`. `max_body_size` bounds the request bodies read (`None`: no bound,
/// as `--webhook-provider-max-body-size=0` asks).
pub fn router(provider: Arc<dyn Provider>, max_body_size: Option<u64>) -> Router {
    let max_body_size = max_body_size.map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
    Router::new()
        .route("/records", any(records))
        .route("/adjustendpoints", any(adjust_endpoints))
        .fallback(negotiate)
        // The handlers bound what they read themselves, answering as external-dns does (413, no body).
        .layer(DefaultBodyLimit::disable())
        .with_state(Shared {
            provider,
            max_body_size,
        })
}

/// A request body read up to the bound, as Go's `http.MaxBytesReader` under external-dns's decoder: 413 once
/// it passes the bound (whether announced by Content-Length or found while streaming), 400 when it cannot
/// be read at all.
async fn read_body(body: Body, limit: usize, what: &str) -> Result<Bytes, Response> {
    match axum::body::to_bytes(body, limit).await {
        Ok(bytes) => Ok(bytes),
        Err(e) => {
            let e = e.into_inner();
            if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() {
                error!(
                    limit,
                    "refused {what}: the request body exceeds --webhook-provider-max-body-size"
                );
                Err(status(StatusCode::PAYLOAD_TOO_LARGE))
            } else {
                error!(error = %e, "failed to read {what}");
                Err(status(StatusCode::BAD_REQUEST))
            }
        }
    }
}

/// Binds `address` (Go syntax: `:8888` means every interface) and serves until `shutdown`. Binding happens
/// before this returns, so a busy port is a startup error.
pub async fn start_server(
    address: &str,
    provider: Arc<dyn Provider>,
    max_body_size: Option<u64>,
    shutdown: CancellationToken,
) -> Result<WebhookServer, WebhookError> {
    let bind_to = match address.strip_prefix(':') {
        Some(port) => format!("0.0.0.0:{port}"),
        None => address.to_string(),
    };
    let bind_err = |source| WebhookError::Bind {
        address: address.to_string(),
        source,
    };
    let listener = TcpListener::bind(&bind_to).await.map_err(bind_err)?;
    let local_addr = listener.local_addr().map_err(bind_err)?;
    let handle = tokio::spawn(serve(listener, provider, max_body_size, shutdown));
    info!(address = %local_addr, "serving the webhook provider protocol");
    Ok(WebhookServer { local_addr, handle })
}

/// Serve on an already bound listener until `shutdown`.
pub async fn serve(
    listener: TcpListener,
    provider: Arc<dyn Provider>,
    max_body_size: Option<u64>,
    shutdown: CancellationToken,
) {
    let app = router(provider, max_body_size);
    if let Err(e) = axum::serve(listener, app)
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
    {
        error!(error = %e, "webhook server stopped");
    }
}

async fn negotiate(State(shared): State<Shared>) -> Response {
    json(&shared.provider.domain_filter())
}

async fn records(State(shared): State<Shared>, method: Method, body: Body) -> Response {
    let provider = &shared.provider;
    match method {
        Method::GET => match provider.records().await {
            Ok(records) => json(&records.endpoints),
            Err(e) => {
                error!(error = %e, "failed to read the records");
                status(StatusCode::INTERNAL_SERVER_ERROR)
            }
        },
        Method::POST => {
            let body = match read_body(body, shared.max_body_size, "the changes").await {
                Ok(body) => body,
                Err(refused) => return refused,
            };
            let changes = match serde_json::from_slice::<Changes>(&body).map(Changes::into_changes) {
                Ok(Ok(changes)) => changes,
                Ok(Err(e)) => {
                    error!(error = %e, "refused the changes");
                    return status(StatusCode::BAD_REQUEST);
                }
                Err(e) => {
                    error!(error = %e, "failed to decode the changes");
                    return status(StatusCode::BAD_REQUEST);
                }
            };
            match apply_changes(provider.as_ref(), &changes).await {
                Ok(()) => status(StatusCode::NO_CONTENT),
                Err(e) => {
                    error!(error = %e, "failed to apply the changes");
                    status(StatusCode::INTERNAL_SERVER_ERROR)
                }
            }
        }
        other => {
            error!(method = %other, "unsupported method on /records");
            status(StatusCode::BAD_REQUEST)
        }
    }
}

async fn adjust_endpoints(State(shared): State<Shared>, method: Method, body: Body) -> Response {
    if method != Method::POST {
        error!(method = %method, "unsupported method on /adjustendpoints");
        return status(StatusCode::BAD_REQUEST);
    }
    let body = match read_body(body, shared.max_body_size, "the endpoints to adjust").await {
        Ok(body) => body,
        Err(refused) => return refused,
    };
    let endpoints = match serde_json::from_slice::<Option<Vec<Endpoint>>>(&body) {
        Ok(endpoints) => endpoints.unwrap_or_default(),
        Err(e) => {
            error!(error = %e, "failed to decode the endpoints to adjust");
            return status(StatusCode::BAD_REQUEST);
        }
    };
    match shared.provider.adjust_endpoints(endpoints).await {
        Ok(adjusted) => json(&adjusted),
        Err(e) => {
            error!(error = %e, "failed to adjust the endpoints");
            status(StatusCode::INTERNAL_SERVER_ERROR)
        }
    }
}

/// 200 with the media type and the value as JSON plus a newline (Go's `json.Encoder` output).
fn json<T: Serialize + ?Sized>(value: &T) -> Response {
    let mut body = match serde_json::to_vec(value) {
        Ok(body) => body,
        Err(e) => {
            error!(error = %e, "failed to encode a response");
            return status(StatusCode::INTERNAL_SERVER_ERROR);
        }
    };
    body.push(b'\n');
    ([(header::CONTENT_TYPE, MEDIA_TYPE)], Body::from(body)).into_response()
}

/// A status with an empty body, as Go's `WriteHeader` alone sends.
fn status(code: StatusCode) -> Response {
    code.into_response()
}
