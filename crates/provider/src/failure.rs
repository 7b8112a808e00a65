//! One classification of a failed provider call, read by everything that decides what happens next: the
//! retry loop ([`Backoff::retry`](crate::Backoff::retry)), the pacer ([`Pacer::hold_off`](crate::pace::Pacer::hold_off))
//! and the per-record isolation ([`apply_split`](crate::batch::apply_split)).
//!
//! A provider classifies an HTTP answer once, with [`classify`]: the status and `Retry-After` give a first
//! kind, and the provider may refine it from its API's own error body (Route53 answers a throttled call
//! with a 400 and the code `Throttling`). A call that got no answer (a refused connection, a timeout) is
//! [`FailureKind::Transient`] ([`unanswered`]). Nothing downstream looks at a status or a message again.

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::HeaderMap;

/// What a failed attempt calls for, as its [`FailureKind`] says ([`FailureKind::retry`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// The error is final: trying again cannot help.
    No,
    /// Try again after the backoff's next delay.
    Backoff,
    /// Try again after this long, as the server asked (`Retry-After`), at most the backoff's `max`.
    After(Duration),
}

/// What a failed call says about what to do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureKind {
    /// The backend asked us to slow down (a 429, a throttling code); `retry_after` is how long it asked us
    /// to wait, when it said.
    Throttled {
        /// The server's `Retry-After`, when it gave one.
        retry_after: Option<Duration>,
    },
    /// The same call may succeed later: no answer, a timeout, a 5xx.
    Transient,
    /// The backend refused what was sent (a 400 to a batch, an RFC 2136 rcode) without it being anyone's
    /// configuration: one record of the batch may be at fault, so [`apply_split`](crate::batch::apply_split)
    /// splits the batch to name it. The only kind that is split on.
    Refused,
    /// The backend refused our credentials; retrying will not help until the configuration changes.
    Auth,
    /// Nothing will mend it by retrying or splitting: an answer we cannot use, a missing zone.
    Fatal,
}

impl FailureKind {
    /// The kind of an HTTP status, with the answer's `Retry-After`: 429 (and a 503 that says when to come
    /// back) is throttled, 408 and other 5xx transient, 401 and 403 authentication, 400, 409, 413 and 422 a
    /// refusal of what was sent, anything else fatal. A 413 (payload too large) is the batch's size, not the
    /// backend's health: splitting it ([`apply_split`](crate::batch::apply_split)) sends smaller ones.
    pub fn of_status(status: StatusCode, retry_after: Option<Duration>) -> FailureKind {
        match status.as_u16() {
            429 => FailureKind::Throttled { retry_after },
            503 if retry_after.is_some() => FailureKind::Throttled { retry_after },
            408 | 500..=599 => FailureKind::Transient,
            401 | 403 => FailureKind::Auth,
            400 | 409 | 413 | 422 => FailureKind::Refused,
            _ => FailureKind::Fatal,
        }
    }

    /// Whether the same call may succeed later without any change of configuration.
    pub fn is_transient(self) -> bool {
        matches!(self, FailureKind::Throttled { .. } | FailureKind::Transient)
    }

    /// What the retry loop does about it: wait as long as a throttling server asked, back off on any other
    /// transient failure, stop on the rest.
    pub fn retry(self) -> Retry {
        match self {
            FailureKind::Throttled {
                retry_after: Some(asked),
            } => Retry::After(asked),
            FailureKind::Throttled { retry_after: None } | FailureKind::Transient => Retry::Backoff,
            FailureKind::Refused | FailureKind::Auth | FailureKind::Fatal => Retry::No,
        }
    }

    /// How messages name the kind.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Throttled { .. } => "throttled",
            FailureKind::Transient => "transient",
            FailureKind::Refused => "refused",
            FailureKind::Auth => "authentication",
            FailureKind::Fatal => "fatal",
        }
    }
}

impl std::fmt::Display for FailureKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the HTTP layer knows of an answer that was not a success: its status and how long it asked us to
/// wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpAnswer {
    /// The answer's status.
    pub status: StatusCode,
    /// `Retry-After` (or Azure's `retry-after-ms`), when the answer carried one.
    pub retry_after: Option<Duration>,
}

impl HttpAnswer {
    /// The status and the wait the headers ask for.
    pub fn new(status: StatusCode, headers: &HeaderMap) -> HttpAnswer {
        HttpAnswer {
            status,
            retry_after: retry_after(headers),
        }
    }

    /// An answer with only a status (no `Retry-After`).
    pub fn with_status(status: StatusCode) -> HttpAnswer {
        HttpAnswer {
            status,
            retry_after: None,
        }
    }

    /// The answer's kind when its API names a throttling code: throttled, keeping the server's wait.
    pub fn throttled(&self) -> FailureKind {
        FailureKind::Throttled {
            retry_after: self.retry_after,
        }
    }
}

/// The kind of a failed HTTP answer: `refine` reads the provider's own error body (its code) and names a
/// kind when the code says more than the status; otherwise the status and `Retry-After` decide
/// ([`FailureKind::of_status`]).
pub fn classify(answer: &HttpAnswer, refine: impl FnOnce(&HttpAnswer) -> Option<FailureKind>) -> FailureKind {
    refine(answer).unwrap_or_else(|| FailureKind::of_status(answer.status, answer.retry_after))
}

/// The kind of a call that got no usable answer: a request that could not be built or was redirected
/// away is fatal (it will fail the same way again); a refused connection, a timeout, a broken or
/// undecodable body is transient.
pub fn unanswered(error: &reqwest::Error) -> FailureKind {
    if error.is_builder() || error.is_redirect() {
        FailureKind::Fatal
    } else {
        FailureKind::Transient
    }
}

/// A call that got no whole answer (a refused connection, a timeout, a TLS failure, a body broken off),
/// the same for every HTTP backend: each API's error holds one (`#[error(transparent)]`), so the message
/// and the kind ([`unanswered`]) are written once. `api` names the backend in the message.
#[derive(Debug, thiserror::Error)]
#[error("{api} at {url} is unreachable: {}", error_chain(.source))]
pub struct Unreachable {
    /// The backend, as messages name it (`Cloud DNS`, `etcd`).
    pub api: &'static str,
    /// The URL called.
    pub url: String,
    /// The HTTP client's error.
    #[source]
    pub source: reqwest::Error,
}

impl Unreachable {
    /// The error of a call of `url` on `api` that got no answer, for `map_err`.
    pub fn at<'u>(api: &'static str, url: &'u str) -> impl Fn(reqwest::Error) -> Unreachable + 'u {
        move |source| Unreachable {
            api,
            url: url.to_string(),
            source,
        }
    }

    /// Fatal when the request could not be built or was redirected away, else transient ([`unanswered`]).
    pub fn kind(&self) -> FailureKind {
        unanswered(&self.source)
    }
}

/// How long an answer asks to wait: `retry-after-ms` or `x-ms-retry-after-ms` (Azure's, in
/// milliseconds) first, else `Retry-After` in seconds (the HTTP-date form is not honoured: the caller's
/// backoff applies instead).
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    let millis = ["retry-after-ms", "x-ms-retry-after-ms"]
        .into_iter()
        .find_map(|name| text(name)?.parse::<u64>().ok());
    if let Some(ms) = millis {
        return Some(Duration::from_millis(ms));
    }
    text("retry-after")?.parse::<u64>().ok().map(Duration::from_secs)
}

/// An error's text followed by each of its causes' that it does not already include: reqwest's own text
/// leaves out why a connection failed (which certificate check, which refusal).
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(c) = cause {
        let more = c.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        cause = c.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (name, value) in pairs {
            h.insert(*name, HeaderValue::from_static(value));
        }
        h
    }

    fn kind(status: u16, pairs: &[(&'static str, &'static str)]) -> FailureKind {
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::IM_A_TEAPOT);
        classify(&HttpAnswer::new(status, &headers(pairs)), |_| None)
    }

    const SEVEN: Option<Duration> = Some(Duration::from_secs(7));

    #[test]
    fn statuses_map_with_the_retry_after_they_carry() {
        let after = [("retry-after", "7")];
        assert_eq!(kind(429, &after), FailureKind::Throttled { retry_after: SEVEN });
        assert_eq!(kind(429, &[]), FailureKind::Throttled { retry_after: None });
        assert_eq!(kind(503, &after), FailureKind::Throttled { retry_after: SEVEN });
        assert_eq!(kind(503, &[]), FailureKind::Transient);
        assert_eq!(kind(500, &after), FailureKind::Transient);
        assert_eq!(kind(408, &[]), FailureKind::Transient);
        assert_eq!(kind(401, &[]), FailureKind::Auth);
        assert_eq!(kind(403, &after), FailureKind::Auth);
        assert_eq!(kind(400, &[]), FailureKind::Refused);
        assert_eq!(kind(409, &[]), FailureKind::Refused);
        assert_eq!(kind(422, &[]), FailureKind::Refused);
        assert_eq!(
            kind(413, &[]),
            FailureKind::Refused,
            "a payload too large is split, not fatal"
        );
        assert_eq!(kind(404, &[]), FailureKind::Fatal);
        assert_eq!(kind(301, &[]), FailureKind::Fatal);
    }

    #[test]
    fn a_body_code_refines_the_status() {
        let answer = HttpAnswer::new(StatusCode::BAD_REQUEST, &headers(&[("retry-after", "7")]));
        let throttling = |a: &HttpAnswer| Some(a.throttled());
        assert_eq!(
            classify(&answer, throttling),
            FailureKind::Throttled { retry_after: SEVEN }
        );
        let fatal = HttpAnswer::new(StatusCode::NOT_FOUND, &HeaderMap::new());
        assert_eq!(
            classify(&fatal, |_| Some(FailureKind::Transient)),
            FailureKind::Transient
        );
        assert_eq!(classify(&fatal, |_| None), FailureKind::Fatal);
    }

    #[test]
    fn milliseconds_are_preferred_and_a_date_is_ignored() {
        let h = headers(&[("retry-after", "10"), ("retry-after-ms", "250")]);
        assert_eq!(retry_after(&h), Some(Duration::from_millis(250)));
        let h = headers(&[("x-ms-retry-after-ms", "40")]);
        assert_eq!(retry_after(&h), Some(Duration::from_millis(40)));
        assert_eq!(
            retry_after(&headers(&[("retry-after", " 3 ")])),
            Some(Duration::from_secs(3))
        );
        let date = headers(&[("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT")]);
        assert_eq!(retry_after(&date), None);
    }

    #[test]
    fn only_transient_kinds_are_retried() {
        assert_eq!(
            FailureKind::Throttled { retry_after: SEVEN }.retry(),
            Retry::After(Duration::from_secs(7))
        );
        assert_eq!(FailureKind::Throttled { retry_after: None }.retry(), Retry::Backoff);
        assert_eq!(FailureKind::Transient.retry(), Retry::Backoff);
        for k in [FailureKind::Refused, FailureKind::Auth, FailureKind::Fatal] {
            assert_eq!(k.retry(), Retry::No, "{k}");
            assert!(!k.is_transient());
        }
    }

    #[tokio::test]
    async fn a_call_without_an_answer_is_transient() {
        let client = reqwest::Client::new();
        let refused = client.get("http://127.0.0.1:1/").send().await.err();
        assert_eq!(refused.as_ref().map(unanswered), Some(FailureKind::Transient));
        let bad = client.get("not a url").send().await.err();
        assert_eq!(bad.as_ref().map(unanswered), Some(FailureKind::Fatal));
    }

    #[tokio::test]
    async fn an_unreachable_backend_is_named_with_its_url_and_cause() {
        let url = "http://127.0.0.1:1/zones";
        let error = reqwest::Client::new()
            .get(url)
            .send()
            .await
            .map_err(Unreachable::at("Example DNS", url))
            .err();
        let text = error.as_ref().map(ToString::to_string).unwrap_or_default();
        assert!(
            text.starts_with("Example DNS at http://127.0.0.1:1/zones is unreachable: "),
            "{text}"
        );
        assert_eq!(error.as_ref().map(Unreachable::kind), Some(FailureKind::Transient));
        let cause = error.as_ref().and_then(|e| std::error::Error::source(e));
        assert!(
            cause.is_some_and(|c| c.is::<reqwest::Error>()),
            "the client's error is the source"
        );
    }
}
