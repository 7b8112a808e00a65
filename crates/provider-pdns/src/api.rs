//! The three calls of the PowerDNS HTTP API extdns makes (list zones, get a zone, patch a zone's rrsets),
//! with retries of what is worth retrying at once: rate limits, 5xx answers and network errors.

use std::time::Duration;

use extdns_provider::failure::{self, FailureKind, HttpAnswer};
use extdns_provider::http::{Request, answer_of, error_chain};
use extdns_provider::pace::Pacer;
use extdns_provider::{Backoff, CallError, HttpClient};
use reqwest::header::{HeaderMap, HeaderValue};
use reqwest::{Response, StatusCode, Url};

use crate::config::{ConfigError, PdnsConfig};
use crate::wire::{Patch, ZoneData, ZoneInfo};

/// Longest part of an unexpected answer body kept in an error message.
const BODY_IN_MESSAGE: usize = 300;

/// Why an API call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApiError {
    /// No answer, after the retries. `detail` is the error with its causes (reqwest's own text leaves out
    /// the cause, e.g. which certificate check failed).
    #[error("{what}: {detail}")]
    Network {
        /// The call, as `METHOD path` of the API.
        what: String,
        /// The error and its causes, as one line.
        detail: String,
        /// The HTTP client's error.
        #[source]
        source: reqwest::Error,
    },
    /// An answer other than success (after the retries, for 429 and 5xx).
    #[error("{what}: PowerDNS answered {status}: {message}")]
    Status {
        /// The call, as `METHOD path` of the API.
        what: String,
        /// The HTTP status.
        status: StatusCode,
        /// PowerDNS's `error` text, or the start of the body when it sent none.
        message: String,
        /// The failure's kind ([`kind_of`]).
        kind: FailureKind,
    },
    /// A success whose body is not the JSON PowerDNS sends.
    #[error("{what}: the answer is not PowerDNS's JSON: {source}")]
    Decode {
        /// The call, as `METHOD path` of the API.
        what: String,
        /// The JSON decoder's reason.
        #[source]
        source: serde_json::Error,
    },
}

/// The kind of an unsuccessful answer: PowerDNS's statuses say it all, except that a zone that is not
/// found vanished since it was read, which the next read sees (transient); 400 and 422 refuse the content
/// of a PATCH, which one change may cause.
pub fn kind_of(answer: &HttpAnswer) -> FailureKind {
    failure::classify(answer, |a| {
        (a.status == StatusCode::NOT_FOUND).then_some(FailureKind::Transient)
    })
}

impl CallError for ApiError {
    fn kind(&self) -> FailureKind {
        match self {
            ApiError::Network { source, .. } => failure::unanswered(source),
            ApiError::Status { kind, .. } => *kind,
            ApiError::Decode { .. } => FailureKind::Fatal,
        }
    }
}

/// A client of one PowerDNS server's API.
#[derive(Debug)]
pub struct Api {
    http: HttpClient,
    /// `…/api/v1/servers/{server_id}/zones`.
    zones: Url,
    retry: Backoff,
    /// `--provider-write-rate`: every PATCH (each attempt) waits for its slot.
    pacer: Pacer,
}

impl Api {
    pub fn new(config: &PdnsConfig) -> Result<Api, ConfigError> {
        if config.api_key.trim().is_empty() {
            return Err(ConfigError::NoApiKey);
        }
        if config.server_id.trim().is_empty() {
            return Err(ConfigError::NoServerId);
        }
        let server = config.server.trim().trim_end_matches('/');
        let mut zones = Url::parse(server).map_err(|source| ConfigError::Url {
            url: server.to_string(),
            source,
        })?;
        if !matches!(zones.scheme(), "http" | "https") || zones.cannot_be_a_base() {
            return Err(ConfigError::Scheme(server.to_string()));
        }
        zones
            .path_segments_mut()
            .map_err(|()| ConfigError::Scheme(server.to_string()))?
            .pop_if_empty()
            .extend(["api", "v1", "servers", config.server_id.trim(), "zones"]);

        let mut key = HeaderValue::from_str(config.api_key.trim()).map_err(|_| ConfigError::ApiKeyChars)?;
        key.set_sensitive(true);
        let mut headers = HeaderMap::new();
        headers.insert("X-API-Key", key);
        let http = HttpClient::builder()
            .observed_by(&config.observer)
            .default_headers(headers)
            .timeout(config.calls.timeout)
            .connect_timeout(config.calls.timeout.min(Duration::from_secs(10)))
            .tls(&config.tls)
            .build()
            .map_err(ConfigError::Client)?;
        Ok(Api {
            http,
            zones,
            retry: config.calls.backoff.clone(),
            pacer: Pacer::new(None, config.calls.write_rate),
        })
    }

    fn zone_url(&self, id: &str) -> Url {
        let mut url = self.zones.clone();
        if let Ok(mut segments) = url.path_segments_mut() {
            segments.push(id);
        }
        url
    }

    pub async fn list_zones(&self) -> Result<Vec<ZoneInfo>, ApiError> {
        let what = "listing the zones";
        let response = self
            .send(what, Kind::Read, || self.http.get(self.zones.clone()))
            .await?;
        decode(what, response).await
    }

    pub async fn zone(&self, id: &str) -> Result<ZoneData, ApiError> {
        let what = || format!("reading zone {id}");
        let url = self.zone_url(id);
        let response = self.send(&what(), Kind::Read, || self.http.get(url.clone())).await?;
        decode(&what(), response).await
    }

    pub async fn patch(&self, id: &str, patch: &Patch<'_>) -> Result<(), ApiError> {
        let what = format!("updating zone {id}");
        let body = serde_json::to_vec(patch).map_err(|source| ApiError::Decode {
            what: what.clone(),
            source,
        })?;
        let url = self.zone_url(id);
        self.send(&what, Kind::Write, || {
            self.http
                .patch(url.clone())
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.clone())
        })
        .await?;
        Ok(())
    }

    /// Send a request built by `build`, again after a rate limit, a 5xx or a network error (every call
    /// extdns makes is idempotent: reads, and PATCHes that replace or delete whole rrsets), waiting as the
    /// server asks (`Retry-After`) or by the backoff. Any other non-success is an [`ApiError::Status`].
    async fn send<'c>(&self, what: &str, kind: Kind, build: impl Fn() -> Request<'c>) -> Result<Response, ApiError> {
        let attempt = || async {
            if kind == Kind::Write {
                self.pacer.write().await;
            }
            let response = match build().send().await {
                Ok(response) if response.status().is_success() => return Ok(response),
                Ok(response) => response,
                Err(source) => return Err(network(what, source)),
            };
            let answer = answer_of(&response);
            let kind = kind_of(&answer);
            self.pacer.hold_off(kind).await;
            Err(ApiError::Status {
                what: what.to_string(),
                status: answer.status,
                message: message(response).await,
                kind,
            })
        };
        // A zone not found is not asked again: only a new read cures it.
        let retry = |e: &ApiError| match e {
            ApiError::Status { status, .. } if *status == StatusCode::NOT_FOUND => FailureKind::Fatal,
            e => e.kind(),
        };
        self.retry.retry(what, attempt, retry).await
    }
}

/// Whether a request changes the server (what `--provider-write-rate` paces).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Read,
    Write,
}

/// PowerDNS's error text (`{"error": "..."}`), or the start of whatever else the body holds.
async fn message(response: Response) -> String {
    #[derive(serde::Deserialize)]
    struct Error {
        error: String,
    }
    let body = response.bytes().await.unwrap_or_default();
    if let Ok(e) = serde_json::from_slice::<Error>(&body) {
        return e.error;
    }
    let text = String::from_utf8_lossy(&body);
    let text = text.trim();
    if text.is_empty() {
        return "(empty body)".into();
    }
    let mut end = text.len().min(BODY_IN_MESSAGE);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

async fn decode<T: serde::de::DeserializeOwned>(what: &str, response: Response) -> Result<T, ApiError> {
    let body = response.bytes().await.map_err(|source| network(what, source))?;
    serde_json::from_slice(&body).map_err(|source| ApiError::Decode {
        what: what.to_string(),
        source,
    })
}

fn network(what: &str, source: reqwest::Error) -> ApiError {
    ApiError::Network {
        what: what.to_string(),
        detail: error_chain(&source),
        source,
    }
}
