//! The part of Cloud DNS's v1 REST API the provider calls (managedZones.list, resourceRecordSets.list,
//! changes.create, changes.get), with Google's error envelope, paging, pacing, and 429/5xx retried with
//! backoff and jitter.

use std::sync::Arc;
use std::time::Duration;

use extdns_provider::credentials::Unsent;
use extdns_provider::failure::{self, FailureKind, HttpAnswer, Unreachable};
use extdns_provider::{ApiClient, Call, CallError};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::config::{ConfigError, GoogleConfig};
use crate::credentials::{SourceError, TokenCache};

/// One entry of an error's `errors`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
pub struct ErrorItem {
    /// `global`, `usageLimits`, ...
    #[serde(default)]
    pub domain: String,
    /// `alreadyExists`, `conditionNotMet`, `notFound`, `quotaExceeded`, `rateLimitExceeded`, ...
    #[serde(default)]
    pub reason: String,
    /// Google's text.
    #[serde(default)]
    pub message: String,
}

#[derive(Debug, Deserialize)]
struct Envelope {
    error: ErrorBody,
}

#[derive(Debug, Deserialize)]
struct ErrorBody {
    #[serde(default)]
    message: String,
    #[serde(default)]
    errors: Vec<ErrorItem>,
}

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApiError {
    /// No answer: no access token to send, or no connection (refused, timeout, TLS failure).
    #[error(transparent)]
    Unsent(#[from] Unsent<SourceError>),
    /// An answer other than success, in Google's error envelope when it has one.
    #[error("Cloud DNS answered HTTP {status} to {method} {url}: {message}{}", reason_text(.reason))]
    Api {
        /// The request's method.
        method: &'static str,
        /// The URL called.
        url: String,
        /// The HTTP status.
        status: u16,
        /// `error.message`, or the body's first characters.
        message: String,
        /// `error.errors[0].reason`, when given.
        reason: Option<String>,
        /// The failure's kind, from the status and the reason ([`kind_of`]).
        kind: FailureKind,
    },
    /// A success whose body is not the JSON Google documents.
    #[error("Cloud DNS answered {url} with something that cannot be read: {detail}")]
    BadAnswer {
        /// The URL called.
        url: String,
        /// The decoder's reason.
        detail: String,
    },
    /// A page token came back twice.
    #[error("Cloud DNS returned the same page twice for {url}")]
    PageLoop {
        /// The URL called.
        url: String,
    },
    /// A change stayed pending longer than allowed.
    #[error("change {id} in zone {zone} is still pending after {waited:?}")]
    NotDone {
        /// The change's id.
        id: String,
        /// The zone.
        zone: String,
        /// How long it was polled.
        waited: Duration,
    },
}

fn reason_text(reason: &Option<String>) -> String {
    reason.as_ref().map(|r| format!(" ({r})")).unwrap_or_default()
}

/// Reasons Google gives for going too fast (some with 403).
const RATE_REASONS: [&str; 2] = ["rateLimitExceeded", "userRateLimitExceeded"];

/// The kind of an unsuccessful answer. A rate-limit reason is throttled whatever the status (Google
/// answers some with 403), `backendError` transient; Cloud DNS refuses a change as a whole for what one of
/// its rrsets may cause (an rrset that exists, a deletion that does not match: 400, 404, 409, 412, or a
/// 403 `quotaExceeded`), so those are refusals that splitting the change names.
pub fn kind_of(answer: &HttpAnswer, reason: Option<&str>) -> FailureKind {
    failure::classify(answer, |a| match reason {
        Some(r) if RATE_REASONS.contains(&r) => Some(a.throttled()),
        Some("backendError") => Some(FailureKind::Transient),
        Some("quotaExceeded") => Some(FailureKind::Refused),
        _ => matches!(a.status.as_u16(), 404 | 412).then_some(FailureKind::Refused),
    })
}

impl CallError for ApiError {
    fn kind(&self) -> FailureKind {
        match self {
            ApiError::Unsent(e) => e.kind(),
            ApiError::NotDone { .. } => FailureKind::Transient,
            ApiError::Api { kind, .. } => *kind,
            ApiError::BadAnswer { .. } | ApiError::PageLoop { .. } => FailureKind::Fatal,
        }
    }
}

/// A managed zone (the fields extdns reads).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManagedZone {
    pub name: String,
    pub dns_name: String,
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub visibility: Option<String>,
    #[serde(default)]
    pub peering_config: Option<serde_json::Value>,
}

/// A resource record set, as read and as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceRecordSet {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub ttl: i64,
    #[serde(default)]
    pub rrdatas: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signature_rrdatas: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routing_policy: Option<serde_json::Value>,
}

/// A change: rrsets removed and added in one atomic step.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additions: Vec<ResourceRecordSet>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deletions: Vec<ResourceRecordSet>,
    #[serde(default, skip_serializing)]
    pub id: String,
    #[serde(default, skip_serializing)]
    pub status: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ZonePage {
    #[serde(default)]
    managed_zones: Vec<ManagedZone>,
    next_page_token: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RrsetPage {
    #[serde(default)]
    rrsets: Vec<ResourceRecordSet>,
    next_page_token: Option<String>,
}

/// The client: the shared API skeleton, the token cache, and how Cloud DNS is paged and polled.
#[derive(Debug)]
pub struct Api {
    client: ApiClient,
    tokens: Arc<TokenCache>,
    page_size: u32,
    change_poll: Duration,
    change_wait: Duration,
}

/// How the API's errors name the backend.
const API: &str = "Cloud DNS";

impl Api {
    pub fn new(config: &GoogleConfig, tokens: Arc<TokenCache>) -> Result<Api, ConfigError> {
        let client = ApiClient::new(&config.observer, &config.api, &config.base_url, &config.account())
            .map_err(ConfigError::Client)?;
        Ok(Api {
            client,
            tokens,
            page_size: config.page_size,
            change_poll: config.change_poll,
            change_wait: config.change_wait,
        })
    }

    /// Every managed zone of the project, all pages.
    pub async fn zones(&self, project: &str) -> Result<Vec<ManagedZone>, ApiError> {
        let path = format!("/projects/{project}/managedZones");
        self.all_pages(&path, |p: ZonePage| (p.managed_zones, p.next_page_token))
            .await
    }

    /// Every rrset of a zone, all pages.
    pub async fn rrsets(&self, project: &str, zone: &str) -> Result<Vec<ResourceRecordSet>, ApiError> {
        let path = format!("/projects/{project}/managedZones/{zone}/rrsets");
        self.all_pages(&path, |p: RrsetPage| (p.rrsets, p.next_page_token))
            .await
    }

    /// Every item of the listing at `path`, page after page while Cloud DNS gives a next page token;
    /// `parts` splits a page into its items and that token.
    async fn all_pages<P: DeserializeOwned, T>(
        &self,
        path: &str,
        parts: fn(P) -> (Vec<T>, Option<String>),
    ) -> Result<Vec<T>, ApiError> {
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let (items, next_token) = parts(self.get(path, token.as_deref()).await?);
            out.extend(items);
            match next(next_token, &token, path)? {
                Some(t) => token = Some(t),
                None => return Ok(out),
            }
        }
    }

    /// Submit a change: Cloud DNS's answer, its id and status (`pending` or `done`). A refusal comes here,
    /// at submission; [`Api::wait_done`] waits for it to be applied.
    pub async fn submit(&self, project: &str, zone: &str, change: &Change) -> Result<Change, ApiError> {
        let path = format!("/projects/{project}/managedZones/{zone}/changes");
        self.call(&self.client.call(reqwest::Method::POST, &path).json(change))
            .await
    }

    /// Wait until Cloud DNS says every submitted change of `submitted` (by zone) is done: one pause of
    /// the poll interval, then `changes.get` of each still pending, in rounds, so changes submitted
    /// together are waited for together rather than one poll interval each.
    pub async fn wait_done(&self, project: &str, submitted: Vec<(String, Change)>) -> Result<(), ApiError> {
        let start = std::time::Instant::now();
        let mut left: Vec<(String, Change)> = submitted.into_iter().filter(|(_, c)| c.status != "done").collect();
        while let Some((zone, first)) = left.first() {
            if start.elapsed() >= self.change_wait {
                return Err(ApiError::NotDone {
                    id: first.id.clone(),
                    zone: zone.clone(),
                    waited: start.elapsed(),
                });
            }
            tokio::time::sleep(self.change_poll).await;
            let mut still = Vec::new();
            for (zone, change) in left {
                let path = format!("/projects/{project}/managedZones/{zone}/changes/{}", change.id);
                let got: Change = self.call(&self.client.call(reqwest::Method::GET, &path)).await?;
                if got.status != "done" {
                    still.push((zone, got));
                }
            }
            left = still;
        }
        Ok(())
    }

    async fn get<T: DeserializeOwned>(&self, path: &str, page_token: Option<&str>) -> Result<T, ApiError> {
        let mut query = vec![("maxResults", self.page_size.to_string())];
        if let Some(t) = page_token {
            query.push(("pageToken", t.to_string()));
        }
        self.call(&self.client.call(reqwest::Method::GET, path).query(&query))
            .await
    }

    /// One call, retried while Cloud DNS answers 429, 5xx or a rate-limit reason.
    async fn call<T: DeserializeOwned, B: Serialize + ?Sized>(&self, call: &Call<'_, B>) -> Result<T, ApiError> {
        let attempt = || self.call_once(call);
        self.client.backoff().retry(&call.url, attempt, ApiError::kind).await
    }

    async fn call_once<T: DeserializeOwned, B: Serialize + ?Sized>(&self, call: &Call<'_, B>) -> Result<T, ApiError> {
        let token = self.tokens.get().await.map_err(Unsent::from)?;
        let method_name = if call.method == reqwest::Method::GET {
            "GET"
        } else {
            "POST"
        };
        let url = call.url.as_str();
        let req = self.client.paced(call).await.bearer_auth(&token.token);
        let reply = req
            .exchange()
            .await
            .map_err(Unreachable::at(API, url))
            .map_err(Unsent::from)?;
        let (answer, status, bytes) = (reply.answer, reply.status(), reply.body);
        if answer.status.is_success() {
            return serde_json::from_slice(&bytes).map_err(|e| ApiError::BadAnswer {
                url: url.to_string(),
                detail: e.to_string(),
            });
        }
        let (message, reason) = match serde_json::from_slice::<Envelope>(&bytes) {
            Ok(e) => {
                let reason = e
                    .error
                    .errors
                    .first()
                    .map(|i| i.reason.clone())
                    .filter(|r| !r.is_empty());
                (e.error.message, reason)
            }
            Err(_) => (String::from_utf8_lossy(&bytes).chars().take(200).collect(), None),
        };
        let kind = kind_of(&answer, reason.as_deref());
        if status == 401 {
            // An expired or revoked token: the next attempt gets a new one.
            self.tokens.refused(&token).await;
        }
        self.client.pacer().hold_off(kind).await;
        Err(ApiError::Api {
            method: method_name,
            url: url.to_string(),
            status,
            message,
            reason,
            kind,
        })
    }
}

fn next(token: Option<String>, previous: &Option<String>, path: &str) -> Result<Option<String>, ApiError> {
    match token.filter(|t| !t.is_empty()) {
        Some(t) if Some(&t) == previous.as_ref() => Err(ApiError::PageLoop { url: path.to_string() }),
        other => Ok(other),
    }
}

#[cfg(test)]
mod kind_tests {
    use super::*;
    use reqwest::StatusCode;

    fn kind(status: u16, retry_after: Option<u64>, reason: Option<&str>) -> FailureKind {
        let answer = HttpAnswer {
            status: StatusCode::from_u16(status).unwrap_or(StatusCode::IM_A_TEAPOT),
            retry_after: retry_after.map(Duration::from_secs),
        };
        kind_of(&answer, reason)
    }

    #[test]
    fn cloud_dns_reasons_refine_the_status() {
        let throttled = |s: Option<u64>| FailureKind::Throttled {
            retry_after: s.map(Duration::from_secs),
        };
        assert_eq!(kind(403, Some(2), Some("rateLimitExceeded")), throttled(Some(2)));
        assert_eq!(kind(403, None, Some("userRateLimitExceeded")), throttled(None));
        assert_eq!(kind(429, None, None), throttled(None));
        assert_eq!(kind(500, None, Some("backendError")), FailureKind::Transient);
        assert_eq!(kind(403, None, Some("quotaExceeded")), FailureKind::Refused);
        assert_eq!(kind(403, None, Some("forbidden")), FailureKind::Auth);
        assert_eq!(kind(401, None, None), FailureKind::Auth);
        for status in [400, 404, 409, 412] {
            assert_eq!(
                kind(status, None, Some("alreadyExists")),
                FailureKind::Refused,
                "{status}"
            );
        }
        assert_eq!(kind(405, None, None), FailureKind::Fatal);
    }
}
