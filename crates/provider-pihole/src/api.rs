//! The part of Pi-hole's v6 REST API the provider calls: the session (`POST /api/auth`), the two lists of
//! local DNS records (`GET /api/config/dns/{hosts,cnameRecords}`) and one item added or removed
//! (`PUT`/`DELETE /api/config/dns/<list>/<item>`), every error in Pi-hole's `{"error": {key, message, hint}}`
//! envelope. 429s, 5xx and unreachable servers are retried with backoff.

use extdns_provider::failure::{self, FailureKind, HttpAnswer, Unreachable};
use extdns_provider::http::{Reply, percent_encode};
use extdns_provider::pace::Pacer;
use extdns_provider::{Backoff, CallError, HttpClient, TlsOptions};
use reqwest::{Method, StatusCode};
use serde::Deserialize;

use crate::config::{ConfigError, PiholeConfig};

/// The header Pi-hole reads the session id from.
const SID_HEADER: &str = "X-FTL-SID";

/// One of the two lists of local DNS records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum List {
    /// `dns.hosts`: `"IP HOSTNAME [HOSTNAME...]"`, A and AAAA records.
    Hosts,
    /// `dns.cnameRecords`: `"CNAME[,CNAME...],TARGET[,TTL]"`.
    Cnames,
}

impl List {
    fn path(self) -> &'static str {
        match self {
            List::Hosts => "hosts",
            List::Cnames => "cnameRecords",
        }
    }
}

/// What a write found: it changed the list, or the list already was as asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The item was added or removed.
    Changed,
    /// `PUT` of an item already present, `DELETE` of an item not there: nothing to do.
    AlreadyDone,
}

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApiError {
    /// No answer: connection refused, timeout, TLS failure.
    #[error(transparent)]
    Unreachable(#[from] Unreachable),
    /// `POST /api/auth` refused the password.
    #[error("Pi-hole at {url} refused the password (--pihole-password): {message}")]
    PasswordRefused {
        /// The login URL.
        url: String,
        /// Pi-hole's `session.message` (`password incorrect`).
        message: String,
    },
    /// The server wants a session and no password is configured.
    #[error("Pi-hole answered 401 to {method} {url}: it is protected by a password; set --pihole-password")]
    PasswordNeeded {
        /// The request's method.
        method: Method,
        /// The URL called.
        url: String,
    },
    /// Any other unsuccessful answer, with Pi-hole's error envelope when it sent one.
    #[error("Pi-hole answered HTTP {status} to {method} {url}: {}", describe(key, message, hint))]
    Api {
        /// The request's method.
        method: Method,
        /// The URL called.
        url: String,
        /// The HTTP status.
        status: u16,
        /// `error.key` (`bad_request`, `unauthorized`, ...), empty without an envelope.
        key: String,
        /// `error.message`.
        message: String,
        /// `error.hint`, which names the item at fault (`dns.hosts[3]: invalid hostname ("a*b")`).
        hint: Option<String>,
        /// The failure's kind, from the status and the key ([`kind_of`]).
        kind: FailureKind,
    },
    /// A success whose body is not the JSON Pi-hole documents.
    #[error("Pi-hole answered {url} with something that cannot be read: {detail}")]
    BadAnswer {
        /// The URL called.
        url: String,
        /// The decoder's reason.
        detail: String,
    },
}

fn describe(key: &str, message: &str, hint: &Option<String>) -> String {
    let mut s = match (key.is_empty(), message.is_empty()) {
        (true, true) => "no error detail".to_string(),
        (true, false) => message.to_string(),
        (false, true) => format!("[{key}]"),
        (false, false) => format!("[{key}] {message}"),
    };
    if let Some(h) = hint.as_deref().filter(|h| !h.is_empty()) {
        s.push_str(&format!(" ({h})"));
    }
    s
}

/// The kind of an unsuccessful answer: Pi-hole's `api_seats_exceeded` (every session seat taken) and
/// `rate_limiting` are throttling, `unauthorized` refused credentials, `bad_request` (an item Pi-hole will
/// not take) a refusal of that item; otherwise the status decides.
pub fn kind_of(answer: &HttpAnswer, key: &str) -> FailureKind {
    failure::classify(answer, |a| match key {
        "api_seats_exceeded" | "rate_limiting" => Some(a.throttled()),
        "unauthorized" => Some(FailureKind::Auth),
        "bad_request" => Some(FailureKind::Refused),
        _ => None,
    })
}

impl CallError for ApiError {
    fn kind(&self) -> FailureKind {
        match self {
            ApiError::Unreachable(e) => e.kind(),
            ApiError::PasswordRefused { .. } | ApiError::PasswordNeeded { .. } => FailureKind::Auth,
            ApiError::Api { kind, .. } => *kind,
            ApiError::BadAnswer { .. } => FailureKind::Fatal,
        }
    }
}

#[derive(Deserialize, Default)]
struct ErrorEnvelope {
    #[serde(default)]
    error: ErrorBody,
}

#[derive(Deserialize, Default)]
struct ErrorBody {
    #[serde(default)]
    key: String,
    #[serde(default)]
    message: String,
    #[serde(default)]
    hint: Option<String>,
}

#[derive(Deserialize)]
struct AuthAnswer {
    session: SessionBody,
}

#[derive(Deserialize)]
struct SessionBody {
    #[serde(default)]
    valid: bool,
    #[serde(default)]
    sid: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

#[derive(Deserialize)]
struct ConfigAnswer {
    config: ConfigBody,
}

#[derive(Deserialize)]
struct ConfigBody {
    dns: DnsBody,
}

#[derive(Deserialize)]
struct DnsBody {
    #[serde(default)]
    hosts: Option<Vec<String>>,
    #[serde(default, rename = "cnameRecords")]
    cname_records: Option<Vec<String>>,
}

/// The session as the client knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Session {
    /// Not logged in yet, or the last session was refused.
    None,
    /// Logged in: send this id.
    Sid(String),
    /// The server asks for no password (`session.sid` is null): send nothing.
    Open,
}

/// The client: one session, logged in on first use and again when Pi-hole answers 401.
pub struct Api {
    http: HttpClient,
    base: String,
    password: Option<String>,
    backoff: Backoff,
    pacer: Pacer,
    /// Held while logging in, so concurrent calls that all met a 401 log in once.
    session: tokio::sync::Mutex<Session>,
}

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api").field("base", &self.base).finish_non_exhaustive()
    }
}

/// How the API's errors name the backend.
const API: &str = "Pi-hole";

impl Api {
    pub fn new(config: &PiholeConfig) -> Result<Api, ConfigError> {
        let tls = TlsOptions {
            skip_verify: config.tls_skip_verify,
            ..TlsOptions::default()
        };
        let http = HttpClient::api_builder(&config.observer, config.calls.timeout)
            .tls(&tls)
            .build()
            .map_err(ConfigError::Client)?;
        Ok(Api {
            http,
            base: config.server.trim_end_matches('/').to_string(),
            password: config.password.clone().filter(|p| !p.is_empty()),
            backoff: config.calls.backoff.clone(),
            pacer: Pacer::new(None, config.calls.write_rate),
            session: tokio::sync::Mutex::new(Session::None),
        })
    }

    /// Every item of a list, as Pi-hole stores it.
    pub async fn list(&self, list: List) -> Result<Vec<String>, ApiError> {
        let url = format!("{}/api/config/dns/{}", self.base, list.path());
        let reply = self.call(Method::GET, &url).await?;
        if !reply.answer.status.is_success() {
            return Err(self.refusal(Method::GET, &url, &reply));
        }
        let parsed: ConfigAnswer = serde_json::from_slice(&reply.body).map_err(|e| ApiError::BadAnswer {
            url: url.clone(),
            detail: e.to_string(),
        })?;
        let items = match list {
            List::Hosts => parsed.config.dns.hosts,
            List::Cnames => parsed.config.dns.cname_records,
        };
        items.ok_or_else(|| ApiError::BadAnswer {
            url,
            detail: format!("no config.dns.{} array", list.path()),
        })
    }

    /// Adds `item` to a list (`add`) or removes it. Pi-hole's "Item already present" to a PUT and 404 to a
    /// DELETE leave the list as asked: [`Outcome::AlreadyDone`].
    pub async fn write(&self, list: List, item: &str, add: bool) -> Result<Outcome, ApiError> {
        let url = format!("{}/api/config/dns/{}/{}", self.base, list.path(), path_escape(item));
        let method = if add { Method::PUT } else { Method::DELETE };
        let reply = self.call(method.clone(), &url).await?;
        if reply.answer.status.is_success() {
            return Ok(Outcome::Changed);
        }
        let envelope: ErrorEnvelope = serde_json::from_slice(&reply.body).unwrap_or_default();
        if add && reply.answer.status == StatusCode::BAD_REQUEST && envelope.error.message == "Item already present" {
            return Ok(Outcome::AlreadyDone);
        }
        if !add && reply.answer.status == StatusCode::NOT_FOUND {
            return Ok(Outcome::AlreadyDone);
        }
        Err(self.refusal(method, &url, &reply))
    }

    /// One call with the current session, logged in first when there is none and again once on a 401;
    /// retried with backoff while it fails transiently.
    async fn call(&self, method: Method, url: &str) -> Result<Reply, ApiError> {
        let attempt = || self.call_once(method.clone(), url);
        self.backoff.retry(url, attempt, ApiError::kind).await
    }

    async fn call_once(&self, method: Method, url: &str) -> Result<Reply, ApiError> {
        let session = self.session().await?;
        let reply = self.send(method.clone(), url, &session).await?;
        if reply.answer.status != StatusCode::UNAUTHORIZED {
            return Ok(reply);
        }
        if self.password.is_none() {
            return Err(ApiError::PasswordNeeded {
                method,
                url: url.to_string(),
            });
        }
        // The session expired (or Pi-hole restarted, or someone logged it out): log in again, once.
        tracing::debug!(url, "Pi-hole answered 401; logging in again");
        let renewed = self.renew(&session).await?;
        let reply = self.send(method.clone(), url, &renewed).await?;
        if reply.answer.status == StatusCode::UNAUTHORIZED {
            return Err(self.refusal(method, url, &reply));
        }
        Ok(reply)
    }

    /// The current session, logging in when there is none.
    async fn session(&self) -> Result<Session, ApiError> {
        let mut held = self.session.lock().await;
        if *held == Session::None {
            *held = self.login().await?;
        }
        Ok(held.clone())
    }

    /// A new session in place of `refused`, unless another call already replaced it.
    async fn renew(&self, refused: &Session) -> Result<Session, ApiError> {
        let mut held = self.session.lock().await;
        if *held == *refused || *held == Session::None {
            *held = Session::None;
            *held = self.login().await?;
        }
        Ok(held.clone())
    }

    /// `POST /api/auth`. Without a password nothing is sent: an open Pi-hole needs no session, and a
    /// protected one says so with a 401 on the first call.
    async fn login(&self) -> Result<Session, ApiError> {
        let Some(password) = &self.password else {
            return Ok(Session::Open);
        };
        let url = format!("{}/api/auth", self.base);
        self.pacer.request().await;
        let body = serde_json::json!({ "password": password });
        let reply = self
            .http
            .post(&url)
            .json(&body)
            .exchange()
            .await
            .map_err(Unreachable::at(API, &url))?;
        let session: Option<AuthAnswer> = serde_json::from_slice(&reply.body).ok();
        match (reply.answer.status, session) {
            (StatusCode::OK, Some(a)) if a.session.valid => {
                tracing::debug!(url, "logged in to Pi-hole");
                Ok(a.session
                    .sid
                    .filter(|s| !s.is_empty())
                    .map_or(Session::Open, Session::Sid))
            }
            (StatusCode::UNAUTHORIZED, Some(a)) => Err(ApiError::PasswordRefused {
                url,
                message: a.session.message.unwrap_or_else(|| "no reason given".into()),
            }),
            (StatusCode::OK, _) => Err(ApiError::BadAnswer {
                url,
                detail: "the login answer holds no valid session".into(),
            }),
            _ => Err(self.refusal(Method::POST, &url, &reply)),
        }
    }

    async fn send(&self, method: Method, url: &str, session: &Session) -> Result<Reply, ApiError> {
        if method == Method::GET {
            self.pacer.request().await;
        } else {
            self.pacer.write().await;
        }
        let mut request = self.http.request(method.clone(), url);
        if let Session::Sid(sid) = session {
            request = request.header(SID_HEADER, sid.as_str());
        }
        let reply = request.exchange().await.map_err(Unreachable::at(API, url))?;
        if reply.answer.status.is_success() || reply.answer.status == StatusCode::UNAUTHORIZED {
            return Ok(reply);
        }
        let refusal = self.refusal(method, url, &reply);
        if refusal.kind().is_transient() {
            self.pacer.hold_off(refusal.kind()).await;
            return Err(refusal);
        }
        Ok(reply)
    }

    /// An unsuccessful answer as an error, with Pi-hole's envelope when the body is one.
    fn refusal(&self, method: Method, url: &str, reply: &Reply) -> ApiError {
        let envelope: ErrorEnvelope = serde_json::from_slice(&reply.body).unwrap_or_default();
        let mut message = envelope.error.message;
        if message.is_empty() && envelope.error.key.is_empty() {
            message = String::from_utf8_lossy(&reply.body).chars().take(200).collect();
        }
        ApiError::Api {
            method,
            url: url.to_string(),
            status: reply.answer.status.as_u16(),
            kind: kind_of(&reply.answer, &envelope.error.key),
            key: envelope.error.key,
            message,
            hint: envelope.error.hint,
        }
    }
}

/// An item as one URL path segment (the space of `"IP HOST"` and the commas of a CNAME item
/// percent-encoded, as Go's `url.PathEscape` does for them).
pub fn path_escape(item: &str) -> String {
    percent_encode(item)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn items_are_one_path_segment() {
        assert_eq!(path_escape("192.0.2.1 web.example.org"), "192.0.2.1%20web.example.org");
        assert_eq!(
            path_escape("a.example.org,b.example.org,300"),
            "a.example.org%2Cb.example.org%2C300"
        );
        assert_eq!(path_escape("2001:db8::1 x/y"), "2001%3Adb8%3A%3A1%20x%2Fy");
    }

    #[test]
    fn errors_say_what_pihole_said() {
        let e = ApiError::Api {
            method: Method::PUT,
            url: "http://pi.hole/api/config/dns/hosts/x".into(),
            status: 400,
            key: "bad_request".into(),
            message: "Invalid value".into(),
            hint: Some("dns.hosts[0]: invalid hostname (\"a*b\")".into()),
            kind: FailureKind::Refused,
        };
        assert_eq!(
            e.to_string(),
            "Pi-hole answered HTTP 400 to PUT http://pi.hole/api/config/dns/hosts/x: [bad_request] Invalid value \
             (dns.hosts[0]: invalid hostname (\"a*b\"))"
        );
        assert_eq!(e.kind(), FailureKind::Refused);
    }

    #[test]
    fn pihole_keys_refine_the_status() {
        let answer = |status: u16, after: Option<u64>| HttpAnswer {
            status: StatusCode::from_u16(status).unwrap_or(StatusCode::IM_A_TEAPOT),
            retry_after: after.map(Duration::from_secs),
        };
        assert_eq!(
            kind_of(&answer(429, Some(3)), "api_seats_exceeded"),
            FailureKind::Throttled {
                retry_after: Some(Duration::from_secs(3))
            }
        );
        assert_eq!(kind_of(&answer(401, None), "unauthorized"), FailureKind::Auth);
        assert_eq!(kind_of(&answer(400, None), "bad_request"), FailureKind::Refused);
        assert_eq!(kind_of(&answer(503, None), ""), FailureKind::Transient);
        assert_eq!(kind_of(&answer(404, None), "not_found"), FailureKind::Fatal);
    }
}
