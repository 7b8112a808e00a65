//! The part of Cloudflare's v4 API the provider calls: zones and DNS records (list, batch, and the single
//! calls a failed batch falls back to), every answer in Cloudflare's `{success, errors, result, result_info}`
//! envelope, 429s retried with backoff.

use std::time::Duration;

use extdns_provider::failure::{self, FailureKind, HttpAnswer, Unreachable};
use extdns_provider::{ApiClient, Call, CallError};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::config::{Auth, CloudflareConfig, ConfigError};

/// One entry of an answer's `errors`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ApiMessage {
    /// Cloudflare's numeric error code (`81057`: the record exists).
    pub code: i64,
    /// Cloudflare's text for it.
    pub message: String,
}

impl std::fmt::Display for ApiMessage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApiError {
    /// No answer: connection refused, timeout, TLS failure.
    #[error(transparent)]
    Unreachable(#[from] Unreachable),
    /// Answered 429 for as long as the backoff waits out throttles.
    #[error("Cloudflare API rate limit exceeded ({url}; throttles waited out for {waited:?} at most)")]
    RateLimited {
        /// The URL called.
        url: String,
        /// The longest a call waits out 429s ([`Backoff::throttled_for`](extdns_provider::Backoff)).
        waited: Duration,
        /// The wait the last answer asked for, when it said.
        retry_after: Option<Duration>,
    },
    /// Any other unsuccessful answer (`success: false` or a non-2xx status).
    #[error("Cloudflare API answered HTTP {status} to {method} {url}: {}", join(errors))]
    Api {
        /// The request's method.
        method: &'static str,
        /// The URL called.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The answer's `errors`, possibly empty.
        errors: Vec<ApiMessage>,
        /// The failure's kind, from the status and the error codes ([`kind_of`]).
        kind: FailureKind,
    },
    /// A success whose body is not the JSON Cloudflare documents.
    #[error("Cloudflare API answered {url} with something that cannot be read: {detail}")]
    BadAnswer {
        /// The URL called.
        url: String,
        /// The decoder's reason.
        detail: String,
    },
}

fn join(errors: &[ApiMessage]) -> String {
    if errors.is_empty() {
        return "no error detail".into();
    }
    errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
}

/// Cloudflare's codes for a missing, malformed or refused credential.
const AUTH_CODES: [i64; 6] = [10000, 9103, 9106, 9107, 9109, 6003];

/// Cloudflare's codes for "slow down" (971: "Please wait and consider throttling your request speed";
/// 10429: the API's rate limit).
const THROTTLE_CODES: [i64; 2] = [971, 10429];

/// The kind of an unsuccessful answer: a credential or throttling code says more than the status; a
/// `success: false` under a 2xx status is Cloudflare refusing what was sent.
pub fn kind_of(answer: &HttpAnswer, errors: &[ApiMessage]) -> FailureKind {
    failure::classify(answer, |a| {
        let has = |codes: &[i64]| errors.iter().any(|e| codes.contains(&e.code));
        if has(&AUTH_CODES) {
            Some(FailureKind::Auth)
        } else if has(&THROTTLE_CODES) {
            Some(a.throttled())
        } else {
            a.status.is_success().then_some(FailureKind::Refused)
        }
    })
}

impl CallError for ApiError {
    fn kind(&self) -> FailureKind {
        match self {
            ApiError::Unreachable(e) => e.kind(),
            ApiError::RateLimited { retry_after, .. } => FailureKind::Throttled {
                retry_after: *retry_after,
            },
            ApiError::Api { kind, .. } => *kind,
            ApiError::BadAnswer { .. } => FailureKind::Fatal,
        }
    }
}

#[derive(Deserialize)]
struct Envelope<T> {
    #[serde(default)]
    success: bool,
    #[serde(default)]
    errors: Vec<ApiMessage>,
    result: Option<T>,
    result_info: Option<ResultInfo>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
struct ResultInfo {
    #[serde(default)]
    page: u32,
    #[serde(default)]
    total_pages: u32,
}

/// A zone.
#[derive(Debug, Clone, Deserialize)]
pub struct Zone {
    pub id: String,
    pub name: String,
    /// The zone's plan, which sizes its batches; absent in an answer that leaves it out.
    #[serde(default)]
    pub plan: Option<crate::plan::ZonePlan>,
}

/// A DNS record as Cloudflare returns it (the fields extdns reads).
#[derive(Debug, Clone, Deserialize)]
pub struct DnsRecord {
    pub id: String,
    pub name: String,
    #[serde(rename = "type")]
    pub record_type: String,
    #[serde(default)]
    pub content: String,
    #[serde(default)]
    pub ttl: u32,
    #[serde(default)]
    pub proxied: bool,
    #[serde(default)]
    pub comment: Option<String>,
    #[serde(default)]
    pub priority: Option<u16>,
}

/// The fields of a record extdns writes: `content`, or `data` for the types Cloudflare sets through it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecordBody {
    pub name: String,
    #[serde(rename = "type")]
    pub record_type: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<RecordData>,
    pub ttl: u32,
    pub proxied: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<u16>,
}

/// The `data` object of the types whose `content` Cloudflare renders and will not take (its API reference:
/// "content: Formatted TLSA content. See 'data' to set TLSA properties.", likewise HTTPS and SVCB).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum RecordData {
    /// TLSA: the certificate association's three numbers and its data as hex.
    Tlsa {
        usage: u8,
        selector: u8,
        matching_type: u8,
        certificate: String,
    },
    /// HTTPS and SVCB: priority, target name, and the SvcParams in presentation format as `value`.
    Svcb {
        priority: u16,
        target: String,
        value: String,
    },
}

#[derive(Debug, Clone, Serialize)]
pub struct Patch {
    pub id: String,
    #[serde(flatten)]
    pub body: RecordBody,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IdOnly {
    pub id: String,
}

/// What Cloudflare answers a batch with: the records as each operation left them (a delete only its id).
#[derive(Debug, Default, Deserialize)]
pub struct BatchResult {
    #[serde(default)]
    pub deletes: Vec<IdOnly>,
    #[serde(default)]
    pub patches: Vec<DnsRecord>,
    #[serde(default)]
    pub posts: Vec<DnsRecord>,
}

/// One `POST /zones/{id}/dns_records/batch`. Cloudflare runs it in one database transaction, in the order
/// deletes, patches, puts, posts.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Batch {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deletes: Vec<IdOnly>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub patches: Vec<Patch>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub posts: Vec<RecordBody>,
}

impl Batch {
    pub fn is_empty(&self) -> bool {
        self.deletes.is_empty() && self.patches.is_empty() && self.posts.is_empty()
    }

    pub fn len(&self) -> usize {
        self.deletes.len() + self.patches.len() + self.posts.len()
    }
}

/// The client: the shared API skeleton (pacing Cloudflare's request limit and `--provider-write-rate`
/// across every call) and Cloudflare's credentials.
#[derive(Debug)]
pub struct Api {
    client: ApiClient,
    auth: Auth,
}

/// How the API's errors name the backend.
const API: &str = "Cloudflare API";

impl Api {
    pub fn new(config: &CloudflareConfig) -> Result<Api, ConfigError> {
        let client = ApiClient::new(&config.observer, &config.api, &config.base_url, &config.account())
            .map_err(ConfigError::Client)?;
        Ok(Api {
            client,
            auth: config.auth.clone(),
        })
    }

    /// Every zone the credentials can see.
    pub async fn zones(&self) -> Result<Vec<Zone>, ApiError> {
        self.all_pages("/zones", 50).await
    }

    /// Every DNS record of a zone, `per_page` at a time.
    pub async fn records(&self, zone_id: &str, per_page: u32) -> Result<Vec<DnsRecord>, ApiError> {
        self.all_pages(&format!("/zones/{zone_id}/dns_records"), per_page).await
    }

    /// Runs the batch; what it wrote (the new records' ids), so a read's index can take it in, or `None`
    /// when the answer does not say (the batch landed all the same).
    pub async fn batch(&self, zone_id: &str, batch: &Batch) -> Result<Option<BatchResult>, ApiError> {
        let path = format!("/zones/{zone_id}/dns_records/batch");
        let call = self.client.call(reqwest::Method::POST, &path).json(batch);
        let (answer, _) = self.send::<serde_json::Value, _>(&call).await?;
        Ok(serde_json::from_value(answer).ok())
    }

    async fn all_pages<T: DeserializeOwned>(&self, path: &str, per_page: u32) -> Result<Vec<T>, ApiError> {
        let mut out = Vec::new();
        let mut page = 1u32;
        loop {
            let query = [("page", page.to_string()), ("per_page", per_page.to_string())];
            let call = self.client.call(reqwest::Method::GET, path).query(&query);
            let (items, info) = self.send::<Vec<T>, ()>(&call).await?;
            let got = items.len();
            out.extend(items);
            match info {
                Some(i) if i.page < i.total_pages && got > 0 => page = i.page + 1,
                _ => return Ok(out),
            }
        }
    }

    /// One call, retried while Cloudflare throttles it (after its `Retry-After` when it sends one); a read
    /// also on a transient failure. A write that got no answer, or a 5xx, is not sent again: the batch may
    /// have landed, and posting it twice would create duplicates or name ids already gone. The error keeps
    /// its own kind, so the next sync still treats it as transient.
    async fn send<T: DeserializeOwned, B: Serialize + ?Sized>(
        &self,
        call: &Call<'_, B>,
    ) -> Result<(T, Option<ResultInfo>), ApiError> {
        let attempt = || self.send_once(call);
        let read = call.method == reqwest::Method::GET;
        let retry_as = |e: &ApiError| match e.kind() {
            throttled @ FailureKind::Throttled { .. } => throttled,
            kind if read => kind,
            _ => FailureKind::Fatal,
        };
        self.client.backoff().retry(&call.url, attempt, retry_as).await
    }

    async fn send_once<T: DeserializeOwned, B: Serialize + ?Sized>(
        &self,
        call: &Call<'_, B>,
    ) -> Result<(T, Option<ResultInfo>), ApiError> {
        let (method_name, url) = (method_name(&call.method), call.url.as_str());
        let mut req = self.client.paced(call).await;
        req = match &self.auth {
            Auth::Token(t) => req.bearer_auth(t),
            Auth::Key { key, email } => req.header("X-Auth-Key", key).header("X-Auth-Email", email),
        };
        let reply = req.exchange().await.map_err(Unreachable::at(API, url))?;
        let (answer, status) = (reply.answer, reply.status());
        if status == 429 {
            return Err(self
                .held(ApiError::RateLimited {
                    url: url.to_string(),
                    waited: self.client.backoff().throttled_for,
                    retry_after: answer.retry_after,
                })
                .await);
        }
        let bad_answer = |detail: String| ApiError::BadAnswer {
            url: url.to_string(),
            detail,
        };
        let refused = |errors: Vec<ApiMessage>| ApiError::Api {
            method: method_name,
            url: url.to_string(),
            status,
            kind: kind_of(&answer, &errors),
            errors,
        };
        let envelope: Envelope<T> = match serde_json::from_slice(&reply.body) {
            Ok(e) => e,
            Err(e) if (200..300).contains(&status) => return Err(bad_answer(e.to_string())),
            Err(_) => {
                let message = String::from_utf8_lossy(&reply.body).chars().take(200).collect();
                return Err(self.held(refused(vec![ApiMessage { code: 0, message }])).await);
            }
        };
        if !(200..300).contains(&status) || !envelope.success {
            return Err(self.held(refused(envelope.errors)).await);
        }
        let Some(result) = envelope.result else {
            return Err(bad_answer("no result".into()));
        };
        Ok((result, envelope.result_info))
    }
}

impl Api {
    /// `error`, once a throttling one (a 429, or the codes 971 and 10429 under any status) has held every
    /// request of the provider as long as the answer asked: the other callers' requests would only be
    /// throttled too.
    async fn held(&self, error: ApiError) -> ApiError {
        self.client.pacer().hold_off(error.kind()).await;
        error
    }
}

fn method_name(m: &reqwest::Method) -> &'static str {
    match *m {
        reqwest::Method::GET => "GET",
        reqwest::Method::POST => "POST",
        reqwest::Method::PATCH => "PATCH",
        reqwest::Method::PUT => "PUT",
        reqwest::Method::DELETE => "DELETE",
        _ => "request",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::StatusCode;

    fn kind(status: u16, retry_after: Option<u64>, codes: &[i64]) -> FailureKind {
        let answer = HttpAnswer {
            status: StatusCode::from_u16(status).unwrap_or(StatusCode::IM_A_TEAPOT),
            retry_after: retry_after.map(Duration::from_secs),
        };
        let errors: Vec<ApiMessage> = codes
            .iter()
            .map(|&code| ApiMessage {
                code,
                message: "m".into(),
            })
            .collect();
        kind_of(&answer, &errors)
    }

    #[test]
    fn cloudflare_codes_refine_the_status() {
        assert_eq!(kind(400, None, &[10000]), FailureKind::Auth, "a credential code");
        assert_eq!(kind(200, None, &[9109]), FailureKind::Auth);
        assert_eq!(
            kind(400, Some(4), &[971]),
            FailureKind::Throttled {
                retry_after: Some(Duration::from_secs(4))
            }
        );
        assert_eq!(
            kind(200, None, &[81057]),
            FailureKind::Refused,
            "success: false under a 200"
        );
        assert_eq!(kind(400, None, &[81057]), FailureKind::Refused);
        assert_eq!(kind(502, None, &[]), FailureKind::Transient);
        assert_eq!(kind(404, None, &[7003]), FailureKind::Fatal);
    }

    /// A rate-limit code under a status other than 429 holds the pacer as a 429 does: the provider's next
    /// request waits out the answer's `Retry-After`.
    #[tokio::test]
    async fn a_rate_limit_code_holds_every_request_like_a_429() {
        use extdns_test_support::canned::{self, Answer};
        let server = canned::serve(Answer {
            status: StatusCode::BAD_REQUEST,
            headers: vec![("retry-after", "30".into())],
            body: r#"{"success":false,"errors":[{"code":10429,"message":"rate limited"}]}"#.into(),
        });
        let mut config = CloudflareConfig::new(Auth::Token("t".into()));
        config.base_url = server.url.clone();
        // A throttle is no attempt: waiting out the 30 s asked would pass the 10 s it may, so it gives up.
        config.api.calls.backoff.throttled_for = Duration::from_secs(10);
        let api = Api::new(&config).unwrap_or_else(|e| panic!("{e}"));
        let err = api.zones().await.err();
        assert!(
            err.as_ref()
                .is_some_and(|e| matches!(e.kind(), FailureKind::Throttled { .. })),
            "{err:?}"
        );
        // Held for 30 s: the next request cannot leave within a second.
        let next = tokio::time::timeout(Duration::from_secs(1), api.client.pacer().request()).await;
        assert!(next.is_err(), "the pacer let the next request go at once");
        assert_eq!(server.lock().requests.len(), 1);
    }
}
