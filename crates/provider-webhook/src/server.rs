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
//! - JSON bodies end with a newline and errors have no body, as Go's encoder and `WriteHeader` produce;
//!   request keys match fields whatever their case, as Go's decoder matches them (`Create`, `DNSName`);
//! - connections time out as Go's `http.Server` times them out under external-dns's four
//!   `--webhook-provider-*-timeout` flags ([`ServerTimeouts`], external-dns v0.23, #6484): a body not read
//!   within the read timeout → 400 and `Connection: close`; a late head, a late response or an idle
//!   kept-alive connection → closed without an answer;
//! - changes are applied to the end once decoded, whatever happens to the connection meanwhile (Go's
//!   handler runs to its end too): a client that hangs up, or a write timeout, never cuts an apply short.
//!
//! `/healthz` and `/metrics` are not here: the binary serves them on the metrics address, as for the
//! controller.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::{Extension, Router, middleware};
use extdns_endpoint::{Changes, Endpoint};
use extdns_provider::{Provider, apply_changes};
use serde::Serialize;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::{error, info};

use crate::deadline::{BodyDeadline, Conn, DeadlineListener, track};
use crate::fold;
use crate::{MEDIA_TYPE, ServerTimeouts, WebhookError};

/// How the server treats requests: the body bound and the connection timeouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerOptions {
    /// The largest request body read (`--webhook-provider-max-body-size`); `None` reads any size.
    pub max_body_size: Option<u64>,
    /// The connection timeouts (`--webhook-provider-{read-header,read,write,idle}-timeout`).
    pub timeouts: ServerTimeouts,
}

impl Default for ServerOptions {
    /// external-dns's defaults: 32 MiB bodies, the timeouts of [`ServerTimeouts::default`].
    fn default() -> Self {
        ServerOptions {
            max_body_size: Some(32 << 20),
            timeouts: ServerTimeouts::default(),
        }
    }
}

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
/// as `--webhook-provider-max-body-size=0` asks). The connection timeouts need [`serve`]'s listener.
pub fn router(provider: Arc<dyn Provider>, max_body_size: Option<u64>) -> Router {
    let max_body_size = max_body_size.map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
    Router::new()
        .route("/records", any(records))
        .route("/adjustendpoints", any(adjust_endpoints))
        .fallback(negotiate)
        // The handlers bound what they read themselves, answering as external-dns does (413, no body).
        .layer(DefaultBodyLimit::disable())
        .layer(middleware::from_fn(track))
        .with_state(Shared {
            provider,
            max_body_size,
        })
}

/// A request body read up to the bound, as Go's `http.MaxBytesReader` under external-dns's decoder: 413 once
/// it passes the bound (whether announced by Content-Length or found while streaming), 400 when it cannot
/// be read at all. Not read by the deadline (the read timeout): 400 and the connection closed, as Go's
/// server answers when its read deadline fails external-dns's decoder.
async fn read_body(
    body: Body,
    limit: usize,
    deadline: Option<Extension<BodyDeadline>>,
    what: &str,
) -> Result<Bytes, Response> {
    let read = axum::body::to_bytes(body, limit);
    let read = match deadline.and_then(|Extension(BodyDeadline(d))| d) {
        Some(deadline) => match tokio::time::timeout_at(deadline, read).await {
            Ok(read) => read,
            Err(_) => {
                error!("failed to read {what}: not sent within --webhook-provider-read-timeout");
                let mut refused = status(StatusCode::BAD_REQUEST);
                refused
                    .headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
                return Err(refused);
            }
        },
        None => read.await,
    };
    match read {
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
    options: ServerOptions,
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
    let handle = tokio::spawn(serve(listener, provider, options, shutdown));
    info!(address = %local_addr, "serving the webhook provider protocol");
    Ok(WebhookServer { local_addr, handle })
}

/// Serve on an already bound listener until `shutdown`, HTTP/1.1 only, as Go's server without TLS.
pub async fn serve(
    listener: TcpListener,
    provider: Arc<dyn Provider>,
    options: ServerOptions,
    shutdown: CancellationToken,
) {
    let app = router(provider, options.max_body_size).into_make_service_with_connect_info::<Conn>();
    let listener = DeadlineListener {
        listener,
        timeouts: options.timeouts,
    };
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

async fn records(
    State(shared): State<Shared>,
    deadline: Option<Extension<BodyDeadline>>,
    method: Method,
    body: Body,
) -> Response {
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
            let body = match read_body(body, shared.max_body_size, deadline, "the changes").await {
                Ok(body) => body,
                Err(refused) => return refused,
            };
            let changes = match decode::<Changes>(&body, fold::changes).map(Changes::into_changes) {
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
            let provider = Arc::clone(provider);
            let applied = tokio::spawn(async move { apply_changes(provider.as_ref(), &changes).await });
            match applied.await {
                Ok(Ok(())) => status(StatusCode::NO_CONTENT),
                Ok(Err(e)) => {
                    error!(error = %e, "failed to apply the changes");
                    status(StatusCode::INTERNAL_SERVER_ERROR)
                }
                Err(e) => {
                    error!(error = %e, "applying the changes failed");
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

async fn adjust_endpoints(
    State(shared): State<Shared>,
    deadline: Option<Extension<BodyDeadline>>,
    method: Method,
    body: Body,
) -> Response {
    if method != Method::POST {
        error!(method = %method, "unsupported method on /adjustendpoints");
        return status(StatusCode::BAD_REQUEST);
    }
    let body = match read_body(body, shared.max_body_size, deadline, "the endpoints to adjust").await {
        Ok(body) => body,
        Err(refused) => return refused,
    };
    let mut endpoints = match decode::<Option<Vec<Endpoint>>>(&body, |v| fold::endpoints(Some(v))) {
        Ok(endpoints) => endpoints.unwrap_or_default(),
        Err(e) => {
            error!(error = %e, "failed to decode the endpoints to adjust");
            return status(StatusCode::BAD_REQUEST);
        }
    };
    // The client plans with what this returns against what the provider reads back, which is canonical:
    // a TLSA, SVCB or HTTPS target spelled otherwise would be rewritten every sync.
    endpoints.iter_mut().for_each(extdns_endpoint::canonicalize_targets);
    match shared.provider.adjust_endpoints(endpoints).await {
        Ok(adjusted) => json(&adjusted),
        Err(e) => {
            error!(error = %e, "failed to adjust the endpoints");
            status(StatusCode::INTERNAL_SERVER_ERROR)
        }
    }
}

/// A request body decoded as Go decodes it: keys matched to fields whatever their case ([`fold`]).
fn decode<T: serde::de::DeserializeOwned>(
    body: &[u8],
    fold: impl FnOnce(&mut serde_json::Value),
) -> serde_json::Result<T> {
    if !fold::needed(body) {
        return serde_json::from_slice(body);
    }
    let mut value: serde_json::Value = serde_json::from_slice(body)?;
    fold(&mut value);
    serde_json::from_value(value)
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
