//! The three calls of the PowerDNS HTTP API extdns makes (list zones, get a zone, patch a zone's rrsets),
//! with retries of what is worth retrying at once: rate limits, 5xx answers and network errors.

use std::time::Duration;

use extdns_provider::Backoff;
use reqwest::header::{HeaderMap, HeaderValue};
use reqwest::{Certificate, Identity, RequestBuilder, Response, StatusCode, Url};

use crate::config::{ConfigError, PdnsConfig, Setting};
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
        what: String,
        detail: String,
        #[source]
        source: reqwest::Error,
    },
    /// An answer other than success (after the retries, for 429 and 5xx).
    #[error("{what}: PowerDNS answered {status}: {message}")]
    Status {
        what: String,
        status: StatusCode,
        message: String,
    },
    /// A success whose body is not the JSON PowerDNS sends.
    #[error("{what}: the answer is not PowerDNS's JSON: {source}")]
    Decode {
        what: String,
        #[source]
        source: serde_json::Error,
    },
}

/// A client of one PowerDNS server's API.
#[derive(Debug)]
pub struct Api {
    http: reqwest::Client,
    /// `…/api/v1/servers/{server_id}/zones`.
    zones: Url,
    retry: Backoff,
}

fn read(setting: Setting, path: &std::path::Path) -> Result<Vec<u8>, ConfigError> {
    std::fs::read(path).map_err(|source| ConfigError::ReadFile {
        setting,
        path: path.to_path_buf(),
        source,
    })
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
        let mut builder = reqwest::Client::builder()
            .default_headers(headers)
            .timeout(config.timeout)
            .connect_timeout(config.timeout.min(Duration::from_secs(10)))
            .user_agent(concat!("extdns/", env!("CARGO_PKG_VERSION")))
            .danger_accept_invalid_certs(config.tls.skip_verify);
        if let Some(ca) = &config.tls.ca_file {
            let pem = read(Setting::TlsCa, ca)?;
            for cert in Certificate::from_pem_bundle(&pem).map_err(|source| ConfigError::Pem {
                setting: Setting::TlsCa,
                what: "the CA certificate",
                path: ca.clone(),
                source,
            })? {
                builder = builder.add_root_certificate(cert);
            }
        }
        match (&config.tls.client_cert, &config.tls.client_key) {
            (Some(cert), Some(key)) => {
                let mut pem = read(Setting::TlsClientCert, cert)?;
                pem.push(b'\n');
                pem.extend(read(Setting::TlsClientCert, key)?);
                let identity = Identity::from_pem(&pem).map_err(|source| ConfigError::Pem {
                    setting: Setting::TlsClientCert,
                    what: "the client certificate and key",
                    path: cert.clone(),
                    source,
                })?;
                builder = builder.identity(identity);
            }
            (None, None) => {}
            _ => return Err(ConfigError::ClientCertWithoutKey),
        }
        Ok(Api {
            http: builder.build().map_err(ConfigError::Client)?,
            zones,
            retry: config.retry.clone(),
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
        let response = self.send(what, || self.http.get(self.zones.clone())).await?;
        decode(what, response).await
    }

    pub async fn zone(&self, id: &str) -> Result<ZoneData, ApiError> {
        let what = || format!("reading zone {id}");
        let url = self.zone_url(id);
        let response = self.send(&what(), || self.http.get(url.clone())).await?;
        decode(&what(), response).await
    }

    pub async fn patch(&self, id: &str, patch: &Patch<'_>) -> Result<(), ApiError> {
        let what = format!("updating zone {id}");
        let body = serde_json::to_vec(patch).map_err(|source| ApiError::Decode {
            what: what.clone(),
            source,
        })?;
        let url = self.zone_url(id);
        self.send(&what, || {
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
    async fn send(&self, what: &str, build: impl Fn() -> RequestBuilder) -> Result<Response, ApiError> {
        let attempts = self.retry.max_attempts.max(1);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let last = attempt >= attempts;
            let (wait, error) = match build().send().await {
                Ok(response) if response.status().is_success() => return Ok(response),
                Ok(response) => {
                    let status = response.status();
                    let retry_after = retry_after(&response);
                    let message = message(response).await;
                    let error = ApiError::Status {
                        what: what.to_string(),
                        status,
                        message,
                    };
                    if !is_transient(status) {
                        return Err(error);
                    }
                    (retry_after, error)
                }
                Err(source) => (None, network(what, source)),
            };
            if last {
                return Err(error);
            }
            let wait = wait
                .unwrap_or_else(|| self.retry.delay(attempt - 1))
                .min(self.retry.max);
            tracing::debug!(%error, attempt, wait_ms = wait.as_millis() as u64, "PowerDNS request failed; retrying");
            tokio::time::sleep(wait).await;
        }
    }
}

/// Statuses worth asking again: rate limited, or the server failing.
pub fn is_transient(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error()
}

fn retry_after(response: &Response) -> Option<Duration> {
    let value = response.headers().get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    value.trim().parse::<u64>().ok().map(Duration::from_secs)
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
    let mut detail = source.to_string();
    let mut cause = std::error::Error::source(&source);
    while let Some(c) = cause {
        let text = c.to_string();
        if !detail.contains(&text) {
            detail.push_str(": ");
            detail.push_str(&text);
        }
        cause = c.source();
    }
    ApiError::Network {
        what: what.to_string(),
        detail,
        source,
    }
}
