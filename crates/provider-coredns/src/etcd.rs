//! A small etcd v3 client over etcd's JSON gateway (`POST /v3/kv/range`, `/v3/kv/txn`, `/v3/auth/authenticate`),
//! the one that ships inside every etcd since 3.3. It needs only reqwest and serde: the gRPC client would add
//! tonic, prost and a `protoc` build step for the four calls a DNS provider makes.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use extdns_provider::failure::{self, FailureKind, HttpAnswer, Unreachable};
use extdns_provider::pace::Pacer;
use extdns_provider::{CallError, HttpClient};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::sync::Mutex;

use crate::config::{ConfigError, CorednsConfig};

/// How messages name the backend.
const API: &str = "etcd";

/// The one write call: what `--provider-write-rate` counts.
const TXN: &str = "/v3/kv/txn";

/// How many keys one range request returns; the rest follow page by page, so a large zone never needs one
/// huge response.
const PAGE: u64 = 1000;

/// Why an etcd call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EtcdError {
    /// No endpoint answered (connection refused, timeout, TLS failure).
    #[error(transparent)]
    Unreachable(#[from] Unreachable),
    /// etcd answered with an error; `code` is the gRPC status code it carries.
    #[error("etcd at {url} answered HTTP {status}: {message} (grpc code {code})")]
    Status {
        /// The endpoint called.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The gRPC status code in the body.
        code: i64,
        /// etcd's message.
        message: String,
        /// The failure's kind, from the status, the code and the message ([`kind_of`]).
        kind: FailureKind,
    },
    /// etcd answered something that is not the JSON it documents.
    #[error("etcd at {url} answered {what} that cannot be read: {detail}")]
    BadAnswer {
        /// The endpoint called.
        url: String,
        /// Which part of the answer (`a key`, `a value`, ...).
        what: &'static str,
        /// The decoder's reason.
        detail: String,
    },
}

/// etcd's texts for credentials it refuses: it answers a wrong password and a missing user with
/// INVALID_ARGUMENT, so only the text tells.
const AUTH_MESSAGES: [&str; 4] = [
    "authentication failed",
    "user name is empty",
    "permission denied",
    "invalid auth token",
];

/// The kind of an error answer by its gRPC code: RESOURCE_EXHAUSTED is throttling; UNAVAILABLE,
/// DEADLINE_EXCEEDED and ABORTED transient; PERMISSION_DENIED, UNAUTHENTICATED (or a text that says the
/// credentials are wrong) authentication; any other code a refusal of the transaction (too many
/// operations, a request too large), which one unit may cause. Without a code the status decides.
pub fn kind_of(answer: &HttpAnswer, code: i64, message: &str) -> FailureKind {
    failure::classify(answer, |a| match code {
        8 => Some(a.throttled()),
        4 | 10 | 14 => Some(FailureKind::Transient),
        7 | 16 => Some(FailureKind::Auth),
        _ if AUTH_MESSAGES.iter().any(|m| message.contains(m)) => Some(FailureKind::Auth),
        0 => None,
        _ => Some(FailureKind::Refused),
    })
}

impl CallError for EtcdError {
    fn kind(&self) -> FailureKind {
        match self {
            EtcdError::Unreachable(e) => e.kind(),
            EtcdError::Status { kind, .. } => *kind,
            EtcdError::BadAnswer { .. } => FailureKind::Fatal,
        }
    }
}

impl EtcdError {
    /// An error answer, of the kind its status, code and message name.
    fn status(url: String, answer: &HttpAnswer, code: i64, message: String) -> EtcdError {
        EtcdError::Status {
            url,
            status: answer.status.as_u16(),
            code,
            kind: kind_of(answer, code, &message),
            message,
        }
    }
}

/// One key and its value.
#[derive(Debug, Clone)]
pub struct Kv {
    pub key: String,
    pub value: Vec<u8>,
}

/// One write of a transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Put { key: String, value: String },
    Delete { key: String },
}

impl Op {
    fn json(&self) -> serde_json::Value {
        match self {
            Op::Put { key, value } => json!({"request_put": {"key": B64.encode(key), "value": B64.encode(value)}}),
            Op::Delete { key } => json!({"request_delete_range": {"key": B64.encode(key)}}),
        }
    }
}

#[derive(Deserialize)]
struct RangeAnswer {
    #[serde(default)]
    kvs: Vec<RawKv>,
    #[serde(default)]
    more: bool,
}

#[derive(Deserialize)]
struct RawKv {
    key: String,
    #[serde(default)]
    value: String,
}

#[derive(Deserialize)]
struct ErrorAnswer {
    #[serde(default)]
    code: i64,
    #[serde(default)]
    message: String,
    /// Older gateways put the text here instead (newer ones send both).
    #[serde(default)]
    error: String,
}

impl ErrorAnswer {
    /// The error etcd sent, or the body as the message when it is not etcd's JSON.
    fn parse(bytes: &[u8]) -> ErrorAnswer {
        serde_json::from_slice(bytes).unwrap_or_else(|_| ErrorAnswer {
            code: 0,
            message: String::from_utf8_lossy(bytes).into_owned(),
            error: String::new(),
        })
    }

    fn text(self) -> String {
        if self.message.is_empty() {
            self.error
        } else {
            self.message
        }
    }
}

#[derive(Serialize)]
struct Credentials<'a> {
    name: &'a str,
    password: &'a str,
}

#[derive(Deserialize)]
struct Token {
    token: String,
}

/// The client: the endpoints in order (the first that answers is used), and the auth token once there is one.
pub struct EtcdClient {
    http: HttpClient,
    urls: Vec<String>,
    credentials: Option<(String, String)>,
    token: Mutex<Option<String>>,
    /// `--provider-write-rate`: every transaction request waits for its slot.
    pacer: Pacer,
}

impl std::fmt::Debug for EtcdClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdClient")
            .field("urls", &self.urls)
            .field("user", &self.credentials.as_ref().map(|c| &c.0))
            .finish_non_exhaustive()
    }
}

impl EtcdClient {
    pub fn new(config: &CorednsConfig) -> Result<EtcdClient, ConfigError> {
        let mut urls: Vec<String> = config
            .urls
            .iter()
            .map(|u| u.trim().trim_end_matches('/').to_string())
            .filter(|u| !u.is_empty())
            .collect();
        if urls.is_empty() {
            return Err(ConfigError::NoEndpoint);
        }
        for u in &urls {
            if !(u.starts_with("http://") || u.starts_with("https://")) {
                return Err(ConfigError::BadUrl { url: u.clone() });
            }
        }
        let tls = &config.tls;
        let mut builder = HttpClient::builder()
            .observed_by(&config.observer)
            .timeout(config.timeout)
            .connect_timeout(Duration::from_secs(5))
            .pool_max_idle_per_host(4)
            .tls(&tls.options());
        if let Some(server_name) = tls.server_name.as_deref().filter(|s| !s.is_empty()) {
            // The certificate names `server_name`, not the address we dial: ask for that name and pin it to
            // the address, so the TLS handshake checks the name the certificate carries.
            let mut rewritten = Vec::with_capacity(urls.len());
            for u in &urls {
                let Ok(parsed) = reqwest::Url::parse(u) else {
                    return Err(ConfigError::BadUrl { url: u.clone() });
                };
                let (Some(host), Some(port)) = (parsed.host_str(), parsed.port_or_known_default()) else {
                    return Err(ConfigError::BadUrl { url: u.clone() });
                };
                let host = host.trim_start_matches('[').trim_end_matches(']');
                let addrs: Vec<std::net::SocketAddr> = std::net::ToSocketAddrs::to_socket_addrs(&(host, port))
                    .map_err(|source| ConfigError::Resolve { url: u.clone(), source })?
                    .collect();
                builder = builder.resolve_to_addrs(server_name, &addrs);
                let mut changed = parsed.clone();
                if changed.set_host(Some(server_name)).is_err() {
                    return Err(ConfigError::BadUrl { url: u.clone() });
                }
                rewritten.push(changed.as_str().trim_end_matches('/').to_string());
            }
            urls = rewritten;
        }
        let http = builder.build().map_err(ConfigError::Client)?;
        let credentials = match (&config.username, &config.password) {
            (Some(user), password) if !user.is_empty() => Some((user.clone(), password.clone().unwrap_or_default())),
            _ => None,
        };
        Ok(EtcdClient {
            http,
            urls,
            credentials,
            token: Mutex::new(None),
            pacer: Pacer::new(None, config.write_rate),
        })
    }

    /// Every key and value under `prefix`, page by page, in key order.
    pub async fn get_prefix(&self, prefix: &str) -> Result<Vec<Kv>, EtcdError> {
        let end = prefix_end(prefix.as_bytes());
        let mut from = prefix.as_bytes().to_vec();
        let mut out = Vec::new();
        loop {
            let body = json!({
                "key": B64.encode(&from),
                "range_end": B64.encode(&end),
                "limit": PAGE.to_string(),
                "sort_order": "ASCEND",
                "sort_target": "KEY",
            });
            let (url, bytes) = self.call("/v3/kv/range", &body).await?;
            let answer: RangeAnswer = serde_json::from_slice(&bytes).map_err(|e| EtcdError::BadAnswer {
                url: url.clone(),
                what: "a range answer",
                detail: e.to_string(),
            })?;
            let page_len = answer.kvs.len();
            for raw in answer.kvs {
                let decode = |what: &'static str, s: &str| {
                    B64.decode(s).map_err(|e| EtcdError::BadAnswer {
                        url: url.clone(),
                        what,
                        detail: e.to_string(),
                    })
                };
                let key = decode("a key", &raw.key)?;
                let value = decode("a value", &raw.value)?;
                from = key.clone();
                from.push(0);
                match String::from_utf8(key) {
                    Ok(key) => out.push(Kv { key, value }),
                    Err(e) => {
                        tracing::warn!(key = %String::from_utf8_lossy(e.as_bytes()), "skipping a key that is not UTF-8")
                    }
                }
            }
            if !answer.more || page_len == 0 {
                return Ok(out);
            }
        }
    }

    /// Apply `ops` in one transaction: all of them or none.
    pub async fn txn(&self, ops: &[Op]) -> Result<(), EtcdError> {
        let body = json!({ "success": ops.iter().map(Op::json).collect::<Vec<_>>() });
        self.call(TXN, &body).await.map(|_| ())
    }

    /// POST `body` to `path` on the first endpoint that answers, authenticating first when credentials are
    /// set and again once when etcd says the token expired.
    async fn call(&self, path: &str, body: &serde_json::Value) -> Result<(String, Vec<u8>), EtcdError> {
        let mut last = None;
        for base in &self.urls {
            match self.call_one(base, path, body).await {
                Err(e @ EtcdError::Unreachable(_)) => {
                    tracing::debug!(error = %e, "etcd endpoint unreachable; trying the next one");
                    last = Some(e);
                }
                other => return other,
            }
        }
        Err(last.unwrap_or_else(|| EtcdError::BadAnswer {
            url: String::new(),
            what: "nothing",
            detail: "no endpoint configured".into(),
        }))
    }

    async fn call_one(&self, base: &str, path: &str, body: &serde_json::Value) -> Result<(String, Vec<u8>), EtcdError> {
        let url = format!("{base}{path}");
        for attempt in 0..2 {
            let token = match &self.credentials {
                Some(c) => Some(self.token(base, c, attempt > 0).await?),
                None => None,
            };
            if path == TXN {
                self.pacer.write().await;
            }
            let mut req = self.http.post(&url).json(body);
            if let Some(t) = token {
                req = req.header(reqwest::header::AUTHORIZATION, t);
            }
            let reply = req.exchange().await.map_err(Unreachable::at(API, &url))?;
            if reply.is_success() {
                return Ok((url, reply.body));
            }
            let err = ErrorAnswer::parse(&reply.body);
            // An expired or revoked token: authenticate again, once.
            if err.code == 16 && attempt == 0 && self.credentials.is_some() {
                continue;
            }
            let error = EtcdError::status(url, &reply.answer, err.code, err.text());
            self.pacer.hold_off(error.kind()).await;
            return Err(error);
        }
        Err(EtcdError::BadAnswer {
            url,
            what: "no token",
            detail: "authentication did not last one request".into(),
        })
    }

    async fn token(&self, base: &str, (user, password): &(String, String), renew: bool) -> Result<String, EtcdError> {
        let mut token = self.token.lock().await;
        if let (Some(t), false) = (token.as_ref(), renew) {
            return Ok(t.clone());
        }
        let url = format!("{base}/v3/auth/authenticate");
        let request = self.http.post(&url).json(&Credentials { name: user, password });
        let reply = request.exchange().await.map_err(Unreachable::at(API, &url))?;
        if !reply.is_success() {
            let err = ErrorAnswer::parse(&reply.body);
            let code = if err.code == 0 { 16 } else { err.code };
            let message = format!("authenticating user {user}: {}", err.text());
            return Err(EtcdError::status(url, &reply.answer, code, message));
        }
        let t: Token = serde_json::from_slice(&reply.body).map_err(|e| EtcdError::BadAnswer {
            url,
            what: "an authentication answer",
            detail: e.to_string(),
        })?;
        *token = Some(t.token.clone());
        Ok(t.token)
    }
}

/// The end of the key range of a prefix: the prefix with its last byte that is not 0xff increased by one.
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    // Every byte was 0xff (or the prefix was empty): the range goes to the end of the keyspace.
    vec![0]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_ranges_end_after_the_prefix() {
        assert_eq!(prefix_end(b"/skydns/"), b"/skydns0");
        assert_eq!(prefix_end(b"a\xff"), b"b");
        assert_eq!(prefix_end(b""), b"\0");
    }

    #[test]
    fn ops_are_encoded_as_the_gateway_expects() {
        let put = Op::Put {
            key: "/k".into(),
            value: "v".into(),
        };
        assert_eq!(put.json(), json!({"request_put": {"key": "L2s=", "value": "dg=="}}));
        assert_eq!(
            Op::Delete { key: "/k".into() }.json(),
            json!({"request_delete_range": {"key": "L2s="}})
        );
    }

    #[test]
    fn grpc_codes_refine_the_status() {
        let kind = |status: u16, code, message: &str| {
            let status = reqwest::StatusCode::from_u16(status).unwrap_or(reqwest::StatusCode::IM_A_TEAPOT);
            kind_of(&HttpAnswer::with_status(status), code, message)
        };
        assert_eq!(kind(503, 14, ""), FailureKind::Transient);
        assert_eq!(kind(429, 8, ""), FailureKind::Throttled { retry_after: None });
        assert_eq!(kind(503, 0, ""), FailureKind::Transient, "no code: the status decides");
        assert_eq!(kind(401, 16, ""), FailureKind::Auth);
        assert_eq!(kind(403, 7, ""), FailureKind::Auth);
        assert_eq!(kind(400, 3, "etcdserver: authentication failed"), FailureKind::Auth);
        assert_eq!(
            kind(400, 3, "etcdserver: too many operations in txn request"),
            FailureKind::Refused
        );
        assert_eq!(kind(404, 0, ""), FailureKind::Fatal);
    }
}
