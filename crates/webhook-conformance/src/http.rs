//! The calls, made as external-dns's client makes them, with the answer kept raw: the checks look at the
//! exact status and header bytes, which a typed client would normalise away.

use std::time::Duration;

use extdns_provider::http::Request;
use extdns_provider::{Backoff, FailureKind, HttpClient};
use reqwest::header::{ACCEPT, CONTENT_TYPE};

use crate::{Config, Error, MEDIA_TYPE};

/// How often negotiation is tried when the server cannot be reached, like the client's startup backoff:
/// five tries 0.4, 0.8, 1.6 and 3.2 s apart, so a server that is still starting gets about six seconds.
const NEGOTIATE: Backoff = Backoff {
    initial: Duration::from_millis(400),
    max: Duration::from_secs(60),
    multiplier: 2.0,
    jitter: 0.0,
    max_attempts: 5,
    throttled_for: extdns_provider::backoff::DEFAULT_THROTTLED_FOR,
};

pub(crate) struct Client {
    http: HttpClient,
    negotiate_url: reqwest::Url,
    /// The base URL without a trailing slash; paths are appended as the client's `JoinPath` does.
    base: String,
}

/// A server's answer, as received.
pub(crate) struct Answer {
    pub status: u16,
    /// The `Content-Type` header's raw bytes, if present.
    pub content_type: Option<Vec<u8>>,
    pub body: Vec<u8>,
}

impl Answer {
    /// The `Content-Type` as the client sees it: equal to [`MEDIA_TYPE`] byte for byte, or why not.
    pub fn media_type_problem(&self) -> Option<String> {
        match &self.content_type {
            Some(bytes) if bytes.as_slice() == MEDIA_TYPE.as_bytes() => None,
            Some(bytes) => Some(format!(
                "Content-Type is {:?}, want exactly {MEDIA_TYPE:?}",
                String::from_utf8_lossy(bytes)
            )),
            None => Some(format!("no Content-Type header, want exactly {MEDIA_TYPE:?}")),
        }
    }
}

/// A call that got no answer (connection refused, timeout, a broken body).
#[derive(Debug, thiserror::Error)]
#[error("{method} {url}: no answer: {source}")]
pub(crate) struct CallError {
    method: &'static str,
    url: String,
    #[source]
    source: reqwest::Error,
}

impl Client {
    pub fn new(config: &Config) -> Result<Self, Error> {
        let http = HttpClient::builder()
            .timeout(config.timeout)
            .build()
            .map_err(Error::Client)?;
        Ok(Client {
            http,
            negotiate_url: config.url.clone(),
            base: config.url.as_str().trim_end_matches('/').to_owned(),
        })
    }

    /// `GET /` with the media type in `Accept`, retried while the server cannot be reached.
    pub async fn negotiate(&self) -> Result<Answer, CallError> {
        let attempt = || {
            let request = self.http.get(self.negotiate_url.clone()).header(ACCEPT, MEDIA_TYPE);
            self.send("GET", self.negotiate_url.as_str(), request)
        };
        NEGOTIATE
            .retry("negotiation with the webhook server", attempt, |_| {
                FailureKind::Transient
            })
            .await
    }

    pub async fn get(&self, path: &str) -> Result<Answer, CallError> {
        let url = format!("{}{path}", self.base);
        let request = self.http.get(&url).header(ACCEPT, MEDIA_TYPE);
        self.send("GET", &url, request).await
    }

    pub async fn post(&self, path: &str, body: Vec<u8>) -> Result<Answer, CallError> {
        let url = format!("{}{path}", self.base);
        let request = self
            .http
            .post(&url)
            .header(CONTENT_TYPE, MEDIA_TYPE)
            .header(ACCEPT, MEDIA_TYPE)
            .body(body);
        self.send("POST", &url, request).await
    }

    async fn send(&self, method: &'static str, url: &str, request: Request<'_>) -> Result<Answer, CallError> {
        let call_error = |source| CallError {
            method,
            url: url.to_owned(),
            source,
        };
        let response = request.send().await.map_err(call_error)?;
        let status = response.status().as_u16();
        let content_type = response.headers().get(CONTENT_TYPE).map(|v| v.as_bytes().to_vec());
        let body = response.bytes().await.map_err(call_error)?.to_vec();
        tracing::debug!(method, url, status, bytes = body.len(), "webhook answer");
        Ok(Answer {
            status,
            content_type,
            body,
        })
    }
}
