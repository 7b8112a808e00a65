//! external-dns's webhook provider protocol, both ways.
//!
//! - [`WebhookProvider`] is the client: `--provider=webhook` talks to any webhook server (a sidecar, or
//!   external-dns itself run with `--webhook-server`) through the [`Provider`](extdns_provider::Provider)
//!   trait, so the registry and the controller do not know the records live behind HTTP.
//! - [`server`] serves any `Arc<dyn Provider>` over the protocol, answering exactly as external-dns's own
//!   server does (routes, media type, status codes, empty error bodies), so an external-dns controller can
//!   use an extdns provider.
//!
//! The wire format is the endpoint crate's serde of [`Endpoint`](extdns_endpoint::Endpoint) and
//! [`Changes`](extdns_endpoint::Changes); this crate adds only HTTP.
//!
//! Serving the in-memory provider and driving it through the client, as extdns and a webhook server would:
//!
//! ```
//! use std::sync::Arc;
//!
//! use extdns_endpoint::{Change, Endpoint, RecordType};
//! use extdns_provider::{InMemoryProvider, Provider, apply_changes};
//! use extdns_provider_webhook::{ServerOptions, WebhookConfig, WebhookProvider, start_server};
//! use tokio_util::sync::CancellationToken;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let backend = Arc::new(InMemoryProvider::new(vec!["example.org".to_string()]));
//! let shutdown = CancellationToken::new();
//! let server = start_server("127.0.0.1:0", backend.clone(), ServerOptions::default(), shutdown.clone()).await?;
//!
//! let client = WebhookProvider::connect(&WebhookConfig::new(format!("http://{}", server.local_addr).parse()?)).await?;
//! let web = Endpoint::new("web.example.org", RecordType::A, ["192.0.2.10"]);
//! apply_changes(&client, &[Change::Create(web)]).await?;
//!
//! assert_eq!(backend.records().await?.endpoints.len(), 1);
//! assert_eq!(client.records().await?.endpoints[0].dns_name, "web.example.org");
//! shutdown.cancel();
//! # Ok(())
//! # }
//! ```

mod client;
mod deadline;
mod fold;
pub mod server;

pub use client::{Call, CallCounter, CountCalls, WebhookConfig, WebhookProvider};
pub use deadline::ServerTimeouts;
pub use server::{ServerOptions, WebhookServer, serve, start_server};

use extdns_provider::FailureKind;
use extdns_provider::failure;

/// The media type both sides exchange, compared byte for byte: external-dns's client refuses a server
/// whose `Content-Type` differs in any way, even by a space after the `;`.
pub const MEDIA_TYPE: &str = "application/external.dns.webhook+json;version=1";

/// Why talking to, or serving, a webhook failed. Every message names the URL (or address) involved.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WebhookError {
    /// The configured URL cannot be used as a base for the protocol's paths.
    #[error("webhook provider URL {url:?} is not an http(s) URL with a host")]
    InvalidUrl {
        /// The configured URL.
        url: String,
    },
    /// The HTTP client could not be built (TLS roots, ...).
    #[error("webhook provider {url}: {source}")]
    Client {
        /// The configured URL.
        url: String,
        /// The builder's reason.
        #[source]
        source: extdns_provider::http::HttpError,
    },
    /// The request did not complete: refused, reset, timed out.
    #[error("{method} {url} failed: {source}")]
    Request {
        /// The HTTP method.
        method: &'static str,
        /// The URL called.
        url: String,
        /// The HTTP client's reason.
        #[source]
        source: reqwest::Error,
    },
    /// The server answered a status the protocol does not allow for this call.
    #[error("{method} {url} answered status {status}, expected {expected}")]
    Status {
        /// The HTTP method.
        method: &'static str,
        /// The URL called.
        url: String,
        /// The status answered.
        status: u16,
        /// The status the protocol allows.
        expected: u16,
    },
    /// Negotiation answered another media type: the server speaks another version of the protocol.
    #[error("GET {url} answered Content-Type {content_type:?}, expected {MEDIA_TYPE:?}")]
    MediaType {
        /// The negotiation URL.
        url: String,
        /// The media type answered.
        content_type: String,
    },
    /// The answer is larger than the configured limit; it was refused while streaming.
    #[error("{method} {url}: response body exceeds the limit of {limit} bytes")]
    BodyTooLarge {
        /// The HTTP method.
        method: &'static str,
        /// The URL called.
        url: String,
        /// The limit in bytes (`--webhook-provider-max-body-size`).
        limit: u64,
    },
    /// The answer is not the JSON the protocol defines for this call.
    #[error("{method} {url}: cannot decode the response body: {source}")]
    Decode {
        /// The HTTP method.
        method: &'static str,
        /// The URL called.
        url: String,
        /// The decoder's reason.
        #[source]
        source: serde_json::Error,
    },
    /// The change set cannot be encoded (never expected; kept rather than unwrapped).
    #[error("{method} {url}: cannot encode the request body: {source}")]
    Encode {
        /// The HTTP method.
        method: &'static str,
        /// The URL to be called.
        url: String,
        /// The encoder's reason.
        #[source]
        source: serde_json::Error,
    },
    /// The server could not listen on its address.
    #[error("cannot listen on webhook server address {address:?}: {source}")]
    Bind {
        /// The address asked for.
        address: String,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
}

/// The kind of a webhook call's failure, as external-dns's soft errors: only 500–510 (and a request that
/// did not complete) are worth the next loop's retry; 401 and 403 refuse the credentials; any other status,
/// including 408, 413 and 429, means the call itself is wrong (the protocol has no throttling).
impl extdns_provider::CallError for WebhookError {
    fn kind(&self) -> FailureKind {
        match self {
            WebhookError::Status { status, .. } if (500..=510).contains(status) => FailureKind::Transient,
            WebhookError::Status { status: 401 | 403, .. } => FailureKind::Auth,
            WebhookError::Request { source, .. } => failure::unanswered(source),
            _ => FailureKind::Fatal,
        }
    }
}

impl From<WebhookError> for extdns_provider::ProviderError {
    fn from(e: WebhookError) -> Self {
        let kind = extdns_provider::CallError::kind(&e);
        extdns_provider::ProviderError::Failed {
            kind,
            message: e.to_string(),
            source: Some(Box::new(e)),
        }
    }
}
