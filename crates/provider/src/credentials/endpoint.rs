//! The HTTP calls credential sources make to token endpoints and metadata servers: the request, the
//! OAuth 2.0 answer (RFC 6749 §5.1: `access_token`, `expires_in`) and the error answer (§5.2: `error`,
//! `error_description`), read once here for Google and Azure alike.

use std::time::Duration;

use serde::Deserialize;

use crate::HttpClient;
use crate::http::{Request, error_chain};

/// A token endpoint's or metadata server's call that gave nothing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EndpointError {
    /// No answer (refused, timed out, unreadable body).
    #[error("{url}: {}", error_chain(.source))]
    Request {
        /// The URL asked.
        url: String,
        /// The HTTP client's reason.
        #[source]
        source: reqwest::Error,
    },
    /// An answer other than success.
    #[error("{url}: HTTP {status}: {detail}")]
    Status {
        /// The URL asked.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The answer's `error` and `error_description`, or its first characters.
        detail: String,
    },
    /// A success that is not the JSON documented.
    #[error("{url}: unreadable answer: {detail}")]
    Answer {
        /// The URL asked.
        url: String,
        /// The decoder's reason.
        detail: String,
    },
}

impl EndpointError {
    /// No answer, or a 429 or 5xx: asking again later may help.
    pub fn is_transient(&self) -> bool {
        match self {
            EndpointError::Request { .. } => true,
            EndpointError::Status { status, .. } => *status == 429 || *status >= 500,
            EndpointError::Answer { .. } => false,
        }
    }
}

/// A token a token endpoint granted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The bearer token.
    pub access_token: String,
    /// How long it lasts from now, when the endpoint says.
    pub expires_in: Option<Duration>,
}

/// Sends `request` to `url`: the body of a success, else the error the answer states.
pub async fn send(request: Request<'_>, url: &str) -> Result<Vec<u8>, EndpointError> {
    let failed = |source| EndpointError::Request {
        url: url.to_string(),
        source,
    };
    let response = request.send().await.map_err(failed)?;
    let status = response.status().as_u16();
    let body = response.bytes().await.map_err(failed)?;
    if !(200..300).contains(&status) {
        return Err(status_error(url, status, &body));
    }
    Ok(body.to_vec())
}

/// POSTs `form` to the token endpoint at `url`: the token granted.
pub async fn post_form(http: &HttpClient, url: &str, form: &[(&str, &str)]) -> Result<Grant, EndpointError> {
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form)
        .finish();
    let request = http
        .post(url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body);
    grant(url, &send(request, url).await?)
}

/// The token in a token endpoint's answer. `expires_in` is a number, or (Azure's IMDS) a string of one.
pub fn grant(url: &str, body: &[u8]) -> Result<Grant, EndpointError> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Seconds {
        Number(u64),
        Text(String),
    }
    #[derive(Deserialize)]
    struct Answer {
        access_token: String,
        #[serde(default)]
        expires_in: Option<Seconds>,
    }
    let unreadable = |detail: String| EndpointError::Answer {
        url: url.to_string(),
        detail,
    };
    let answer: Answer = serde_json::from_slice(body).map_err(|e| unreadable(e.to_string()))?;
    let expires_in = match answer.expires_in {
        None => None,
        Some(Seconds::Number(n)) => Some(n),
        Some(Seconds::Text(t)) => Some(
            t.trim()
                .parse()
                .map_err(|_| unreadable(format!("expires_in {t:?} is not a number")))?,
        ),
    };
    Ok(Grant {
        access_token: answer.access_token,
        expires_in: expires_in.map(Duration::from_secs),
    })
}

/// The error an answer of `status` states: OAuth's `error` (a code, or an object with a `message`) and
/// `error_description`, or the body's first 200 characters.
pub fn status_error(url: &str, status: u16, body: &[u8]) -> EndpointError {
    #[derive(Deserialize)]
    struct OAuthError {
        error: serde_json::Value,
        #[serde(default)]
        error_description: Option<String>,
    }
    let detail = match serde_json::from_slice::<OAuthError>(body) {
        Ok(e) => {
            let code = match &e.error {
                serde_json::Value::String(s) => s.clone(),
                other => other
                    .get("message")
                    .and_then(|m| m.as_str())
                    .unwrap_or_default()
                    .to_string(),
            };
            match e.error_description.filter(|d| !d.is_empty()) {
                Some(d) => format!("{code}: {d}"),
                None => code,
            }
        }
        Err(_) => String::from_utf8_lossy(body).chars().take(200).collect(),
    };
    EndpointError::Status {
        url: url.to_string(),
        status,
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_are_read_with_expires_in_as_a_number_or_a_string() {
        let url = "http://127.0.0.1/token";
        let g = grant(url, br#"{"access_token":"t","expires_in":3599,"token_type":"Bearer"}"#);
        assert_eq!(
            g.ok(),
            Some(Grant {
                access_token: "t".into(),
                expires_in: Some(Duration::from_secs(3599))
            })
        );
        let g = grant(url, br#"{"access_token":"t","expires_in":"86399"}"#);
        assert_eq!(g.ok().and_then(|g| g.expires_in), Some(Duration::from_secs(86_399)));
        assert_eq!(
            grant(url, br#"{"access_token":"t"}"#).ok().and_then(|g| g.expires_in),
            None
        );
        let bad = grant(url, br#"{"access_token":"t","expires_in":"soon"}"#).err();
        assert!(
            bad.is_some_and(|e| matches!(&e, EndpointError::Answer { detail, .. } if detail.contains("soon"))),
            "a non-number is refused"
        );
        assert!(grant(url, b"{}").is_err());
    }

    #[test]
    fn error_answers_name_the_code_and_description() {
        let text = |body: &[u8]| status_error("http://t", 400, body).to_string();
        assert_eq!(
            text(br#"{"error":"invalid_grant","error_description":"bad kid"}"#),
            "http://t: HTTP 400: invalid_grant: bad kid"
        );
        assert_eq!(
            text(br#"{"error":"invalid_client"}"#),
            "http://t: HTTP 400: invalid_client"
        );
        assert_eq!(
            text(br#"{"error":{"code":403,"message":"denied"}}"#),
            "http://t: HTTP 400: denied"
        );
        assert_eq!(text(b"plain"), "http://t: HTTP 400: plain");
        assert!(status_error("u", 503, b"").is_transient());
        assert!(status_error("u", 429, b"").is_transient());
        assert!(!status_error("u", 401, b"").is_transient());
    }
}
