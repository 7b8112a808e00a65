//! The part of Azure Resource Manager the providers call: zones of a resource group, every record set of a
//! zone (both paged by `nextLink`), and a record set's PUT and DELETE with its ETag. 408, 429 and 5xx are
//! retried with backoff and jitter, waiting as long as `retry-after-ms`, `x-ms-retry-after-ms` or
//! `Retry-After` asks, as azcore does.

use std::sync::Arc;

use extdns_provider::credentials::Unsent;
use extdns_provider::failure::{self, FailureKind, HttpAnswer, Unreachable};
use extdns_provider::{ApiClient, Call, CallError};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::{AzureConfig, ConfigError, Kind};
use crate::credentials::{SourceError, TokenCache};

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApiError {
    /// No answer: no access token to send, or no connection (refused, timeout, TLS failure).
    #[error(transparent)]
    Unsent(#[from] Unsent<SourceError>),
    /// An answer other than success, with ARM's error code and message when it gave them.
    #[error("Azure answered HTTP {status} to {method} {url}: {code}: {message}")]
    Api {
        /// The request's method.
        method: String,
        /// The URL called.
        url: String,
        /// The HTTP status.
        status: u16,
        /// `error.code` (or `code`, or `x-ms-error-code`).
        code: String,
        /// `error.message`, or the body's first characters.
        message: String,
        /// The failure's kind, from the status and the code ([`kind_of`]).
        kind: FailureKind,
    },
    /// A success whose body is not the JSON documented.
    #[error("Azure answered {url} with something that cannot be read: {detail}")]
    BadAnswer {
        /// The URL called.
        url: String,
        /// The decoder's reason.
        detail: String,
    },
    /// A `nextLink` came back twice.
    #[error("Azure returned the same page twice for {url}")]
    PageLoop {
        /// The URL called.
        url: String,
    },
}

impl ApiError {
    /// The HTTP status of an answer.
    pub fn status(&self) -> Option<u16> {
        match self {
            ApiError::Api { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// ARM's codes for going too fast, whatever the status they come with.
const THROTTLE_CODES: [&str; 3] = ["TooManyRequests", "Throttled", "SubscriptionRequestsThrottled"];

/// The kind of an unsuccessful answer: a throttling code is throttled; `PreconditionFailed` (a record
/// set changed since it was read, or one that exists where none was expected) refuses that one record.
pub fn kind_of(answer: &HttpAnswer, code: &str) -> FailureKind {
    failure::classify(answer, |a| {
        if THROTTLE_CODES.contains(&code) {
            Some(a.throttled())
        } else if code == "PreconditionFailed" || a.status.as_u16() == 412 {
            Some(FailureKind::Refused)
        } else {
            None
        }
    })
}

impl CallError for ApiError {
    fn kind(&self) -> FailureKind {
        match self {
            ApiError::Unsent(e) => e.kind(),
            ApiError::Api { kind, .. } => *kind,
            ApiError::BadAnswer { .. } | ApiError::PageLoop { .. } => FailureKind::Fatal,
        }
    }
}

/// A record set as ARM returns it: the envelope typed, the properties kept as JSON (their casing differs
/// between the two APIs; [`crate::records`] reads them).
#[derive(Debug, Clone, Deserialize)]
pub struct RecordSet {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub etag: Option<String>,
    #[serde(default)]
    pub properties: Value,
}

/// A zone (the fields read).
#[derive(Debug, Clone, Deserialize)]
pub struct ArmZone {
    pub id: String,
    pub name: String,
}

#[derive(Deserialize)]
#[serde(bound = "T: serde::de::DeserializeOwned")]
struct Page<T> {
    #[serde(default)]
    value: Vec<T>,
    #[serde(default, rename = "nextLink")]
    next_link: Option<String>,
}

/// What a write asks of the record set's current state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Precondition {
    /// Only if the record set does not exist (`If-None-Match: *`).
    Absent,
    /// Only if it is still as read (`If-Match: <etag>`).
    Etag(String),
}

/// The client: the shared API skeleton (its base the resource group's DNS provider), the kind of zones,
/// and the token cache.
#[derive(Debug)]
pub struct Api {
    client: ApiClient,
    kind: Kind,
    tokens: Arc<TokenCache>,
}

/// How the API's errors name the backend.
const API: &str = "Azure";

impl Api {
    pub fn new(config: &AzureConfig, tokens: Arc<TokenCache>) -> Result<Api, ConfigError> {
        let base = format!(
            "{}/subscriptions/{}/resourceGroups/{}/providers/Microsoft.Network/{}",
            config.cloud.resource_manager.trim_end_matches('/'),
            config.subscription_id,
            config.resource_group,
            config.kind.resource()
        );
        let client =
            ApiClient::new(&config.observer, &config.api, &base, &config.account()).map_err(ConfigError::Client)?;
        Ok(Api {
            client,
            kind: config.kind,
            tokens,
        })
    }

    /// Every zone of the resource group, all pages.
    pub async fn zones(&self) -> Result<Vec<ArmZone>, ApiError> {
        self.list(self.client.base()).await
    }

    /// Every record set of a zone, all pages.
    pub async fn record_sets(&self, zone: &str) -> Result<Vec<RecordSet>, ApiError> {
        self.list(&self.client.url(&format!("/{zone}/{}", self.kind.all())))
            .await
    }

    /// PUT a record set under a precondition; the new ETag when Azure returns one.
    pub async fn put(
        &self,
        zone: &str,
        rtype: &str,
        name: &str,
        properties: &Value,
        when: &Precondition,
    ) -> Result<Option<String>, ApiError> {
        let url = self.set_url(zone, rtype, name);
        let body = serde_json::json!({ "properties": properties });
        let answer = self
            .call(&Call::new(reqwest::Method::PUT, url).json(&body), Some(when))
            .await?;
        // The record set as written, whose ETag lets a write be undone without touching a later one.
        Ok(serde_json::from_slice::<RecordSet>(&answer).ok().and_then(|s| s.etag))
    }

    /// DELETE a record set if it is still as read. A 204 (not there) counts as done.
    pub async fn delete(&self, zone: &str, rtype: &str, name: &str, etag: Option<&str>) -> Result<(), ApiError> {
        let url = self.set_url(zone, rtype, name);
        let when = etag.map(|e| Precondition::Etag(e.to_string()));
        let call = Call::new(reqwest::Method::DELETE, url);
        self.call(&call, when.as_ref()).await.map(drop)
    }

    fn set_url(&self, zone: &str, rtype: &str, name: &str) -> String {
        // As the SDK: the relative name goes into the path as it is (`@`, `*.foo`).
        format!(
            "{}/{zone}/{rtype}/{name}?api-version={}",
            self.client.base(),
            self.kind.api_version()
        )
    }

    async fn list<T: serde::de::DeserializeOwned>(&self, first: &str) -> Result<Vec<T>, ApiError> {
        let mut out = Vec::new();
        let mut url = format!("{first}?api-version={}", self.kind.api_version());
        let mut seen = std::collections::HashSet::new();
        loop {
            let body = self.call(&Call::new(reqwest::Method::GET, url.clone()), None).await?;
            let page: Page<T> = serde_json::from_slice(&body).map_err(|e| ApiError::BadAnswer {
                url: url.clone(),
                detail: e.to_string(),
            })?;
            out.extend(page.value);
            match page.next_link.filter(|l| !l.is_empty()) {
                None => return Ok(out),
                Some(next) if !seen.insert(next.clone()) => return Err(ApiError::PageLoop { url: next }),
                Some(next) => url = next,
            }
        }
    }

    /// One call, retried while Azure answers 408, 429 or 5xx or cannot be reached.
    async fn call<B: Serialize + ?Sized>(
        &self,
        call: &Call<'_, B>,
        when: Option<&Precondition>,
    ) -> Result<Vec<u8>, ApiError> {
        let attempt = || self.call_once(call, when);
        self.client.backoff().retry(&call.url, attempt, ApiError::kind).await
    }

    async fn call_once<B: Serialize + ?Sized>(
        &self,
        call: &Call<'_, B>,
        when: Option<&Precondition>,
    ) -> Result<Vec<u8>, ApiError> {
        let token = self.tokens.get().await.map_err(Unsent::from)?;
        let url = call.url.as_str();
        let mut req = self.client.paced(call).await.bearer_auth(&token.token);
        req = match when {
            Some(Precondition::Absent) => req.header(reqwest::header::IF_NONE_MATCH, "*"),
            Some(Precondition::Etag(e)) => req.header(reqwest::header::IF_MATCH, e.as_str()),
            None => req,
        };
        let reply = req
            .exchange()
            .await
            .map_err(Unreachable::at(API, url))
            .map_err(Unsent::from)?;
        let (answer, status) = (reply.answer, reply.status());
        if reply.is_success() {
            return Ok(reply.body);
        }
        let header_code = reply
            .headers
            .get("x-ms-error-code")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let (code, message) = error_of(&reply.body, header_code);
        let kind = kind_of(&answer, &code);
        if status == 401 {
            // An expired or revoked token: the next attempt gets a new one.
            self.tokens.refused(&token).await;
        }
        self.client.pacer().hold_off(kind).await;
        Err(ApiError::Api {
            method: call.method.to_string(),
            url: url.to_string(),
            status,
            code,
            message,
            kind,
        })
    }
}

/// ARM's `{"error":{"code","message"}}`, the bare `{"code","message"}` of throttling answers, or the
/// `x-ms-error-code` header.
fn error_of(body: &[u8], header_code: Option<String>) -> (String, String) {
    let v: Option<Value> = serde_json::from_slice(body).ok();
    let inner = v.as_ref().map(|v| v.get("error").unwrap_or(v));
    let field = |k: &str| inner.and_then(|i| i.get(k)).and_then(Value::as_str).map(str::to_string);
    let code = field("code").or(header_code).unwrap_or_else(|| "Unknown".into());
    let message = field("message").unwrap_or_else(|| String::from_utf8_lossy(body).chars().take(200).collect());
    (code, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn errors_are_read_in_both_envelopes() {
        let (c, m) = error_of(br#"{"error":{"code":"PreconditionFailed","message":"etag"}}"#, None);
        assert_eq!((c.as_str(), m.as_str()), ("PreconditionFailed", "etag"));
        let (c, _) = error_of(br#"{"code":"Throttled","message":"Too many"}"#, None);
        assert_eq!(c, "Throttled");
        let (c, m) = error_of(b"oops", Some("BadRequest".into()));
        assert_eq!((c.as_str(), m.as_str()), ("BadRequest", "oops"));
    }

    #[test]
    fn arm_codes_refine_the_status() {
        let answer = |status: u16, after: Option<u64>| HttpAnswer {
            status: reqwest::StatusCode::from_u16(status).unwrap_or(reqwest::StatusCode::IM_A_TEAPOT),
            retry_after: after.map(Duration::from_millis),
        };
        assert_eq!(
            kind_of(&answer(429, Some(250)), "TooManyRequests"),
            FailureKind::Throttled {
                retry_after: Some(Duration::from_millis(250))
            }
        );
        assert_eq!(
            kind_of(&answer(400, None), "SubscriptionRequestsThrottled"),
            FailureKind::Throttled { retry_after: None }
        );
        assert_eq!(kind_of(&answer(412, None), "PreconditionFailed"), FailureKind::Refused);
        assert_eq!(
            kind_of(&answer(503, None), "ServiceUnavailable"),
            FailureKind::Transient
        );
        assert_eq!(kind_of(&answer(403, None), "AuthorizationFailed"), FailureKind::Auth);
        assert_eq!(kind_of(&answer(400, None), "BadRequest"), FailureKind::Refused);
        assert_eq!(kind_of(&answer(404, None), "ResourceNotFound"), FailureKind::Fatal);
    }
}
