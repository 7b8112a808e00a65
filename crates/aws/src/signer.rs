//! Requests to an AWS API, signed with the credential chain's credentials: what the Route53 provider and the
//! DynamoDB registry both send.

use std::time::Duration;

use extdns_provider::HttpClient;
use extdns_provider::credentials::CredentialCache;
use extdns_provider::failure::{self, FailureKind};
use extdns_provider::http::{HttpError, Observer, Reply, Request};
use extdns_provider::pace::Pacer;
use reqwest::Method;

use crate::credentials::{AssumeRole, CredentialSource, CredentialsError, cache};
use crate::error::CredentialSourceError;
use crate::keys::Credentials;
use crate::sign::{self, SignError};

/// Why a request could not be signed: the two steps of signing, so a caller can tell them apart.
#[derive(Debug, thiserror::Error)]
pub enum SignerError {
    /// The credential chain gave no credentials.
    #[error("{0}")]
    Credentials(#[source] CredentialsError),
    /// The request could not be signed with them.
    #[error("cannot sign the request: {0}")]
    Sign(#[source] SignError),
    /// The signed request got no whole answer.
    #[error("no answer: {}", extdns_provider::http::error_chain(.0))]
    Unanswered(#[source] reqwest::Error),
}

impl SignerError {
    /// Transient when the credential source that failed did so transiently (a metadata service or STS
    /// that did not answer, a 5xx) or the request got no answer; otherwise authentication (no credentials,
    /// or none that sign).
    pub fn kind(&self) -> FailureKind {
        match self {
            SignerError::Credentials(e) if e.is_transient() => FailureKind::Transient,
            SignerError::Credentials(_) | SignerError::Sign(_) => FailureKind::Auth,
            SignerError::Unanswered(e) => failure::unanswered(e),
        }
    }
}

/// One request of an AWS API, as [`Signer::send`] signs and sends it.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// The method.
    pub method: &'a Method,
    /// The whole URL, query included.
    pub url: &'a str,
    /// Headers that are signed with it (`content-type`, `x-amz-target`).
    pub headers: &'a [(&'a str, &'a str)],
    /// The body; `None` is empty.
    pub body: Option<&'a str>,
    /// Whether it waits for a write slot of the pacer (`--provider-write-rate`) or a request slot.
    pub write: bool,
}

/// SigV4 for one AWS API: the credential chain and `--aws-assume-role`, credentials kept until shortly
/// before they expire, requests signed for one service in one region. Its `Debug` never shows a credential
/// (the cache's does not).
#[derive(Debug)]
pub struct Signer {
    credentials: CredentialCache<Credentials, CredentialSourceError>,
    region: String,
    service: String,
}

/// What a [`Signer`] signs with and for.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SignerConfig {
    /// Where the credentials come from.
    pub credentials: CredentialSource,
    /// A role assumed with them (`--aws-assume-role`).
    pub assume_role: Option<AssumeRole>,
    /// The region requests are signed for.
    pub region: String,
    /// The credential scope's service name (`route53`, `dynamodb`).
    pub service: String,
    /// Temporary credentials are replaced this long before they expire (the SDKs' five minutes).
    pub refresh_before: Duration,
    /// Timeout of one credential request.
    pub timeout: Duration,
}

impl SignerConfig {
    /// Signing for `service` in `region` with credentials from `credentials`, refreshed five minutes before
    /// they expire, credential requests timing out after 30 s.
    pub fn new(credentials: CredentialSource, region: impl Into<String>, service: impl Into<String>) -> SignerConfig {
        SignerConfig {
            credentials,
            assume_role: None,
            region: region.into(),
            service: service.into(),
            refresh_before: Duration::from_secs(300),
            timeout: Duration::from_secs(30),
        }
    }
}

impl Signer {
    /// A signer for `config`; credential requests are reported to `observer`.
    pub fn new(config: SignerConfig, observer: &Observer) -> Result<Signer, HttpError> {
        Ok(Signer {
            credentials: cache(
                config.credentials,
                config.assume_role,
                config.refresh_before,
                config.timeout,
                observer,
            )?,
            region: config.region,
            service: config.service,
        })
    }

    /// The region requests are signed for.
    pub fn region(&self) -> &str {
        &self.region
    }

    /// `call` on `http`, signed with `credentials`, ready to send.
    fn request<'c>(
        &self,
        http: &'c HttpClient,
        call: &Call<'_>,
        credentials: &Credentials,
    ) -> Result<Request<'c>, SignerError> {
        let body = call.body.unwrap_or_default();
        let signed = sign::headers(
            &sign::identity(credentials),
            &self.region,
            &self.service,
            call.method.as_str(),
            call.url,
            call.headers,
            body.as_bytes(),
        )
        .map_err(SignerError::Sign)?;
        let mut request = http.request(call.method.clone(), call.url);
        for (k, v) in call.headers {
            request = request.header(*k, *v);
        }
        for (k, v) in signed {
            request = request.header(k, v);
        }
        if let Some(body) = call.body {
            request = request.body(body.to_string());
        }
        Ok(request)
    }

    /// `call` on `http`, once `pacer` lets it go, signed with the current credentials, and its whole answer.
    /// When the answer refuses the credentials themselves (`code` reads the API's error code from it;
    /// [`refuses_credentials`]) they are dropped and the call is signed with fresh ones and sent once more:
    /// a session token revoked or expired early is mended at once, rather than failing the call as an
    /// authentication error until the next sync. A second refusal is returned as the answer (the
    /// configuration is at fault). Any other answer, success or not, is the caller's to classify.
    pub async fn send(
        &self,
        http: &HttpClient,
        pacing: Pacing<'_>,
        call: Call<'_>,
        code: impl Fn(&Reply) -> String,
    ) -> Result<Reply, SignerError> {
        let refuses = |outcome: &Result<Reply, SignerError>| match outcome {
            Ok(r) => !r.is_success() && refuses_credentials(r.status(), &code(r)),
            Err(_) => false,
        };
        self.credentials
            .call(
                |credentials| self.sign_and_send(http, pacing, call, credentials),
                refuses,
            )
            .await
            .map_err(SignerError::Credentials)?
    }

    async fn sign_and_send(
        &self,
        http: &HttpClient,
        pacing: Pacing<'_>,
        call: Call<'_>,
        credentials: Credentials,
    ) -> Result<Reply, SignerError> {
        // Paced first, signed after: a wait in the account's queue (a throttle may hold it for minutes) must
        // not age the signature's `x-amz-date` past what AWS accepts.
        match (call.write, pacing.own) {
            (true, Some(own)) => own.write_within(pacing.account).await,
            (true, None) => pacing.account.write().await,
            (false, _) => pacing.account.request().await,
        }
        let request = self.request(http, &call, &credentials)?;
        request.exchange().await.map_err(SignerError::Unanswered)
    }
}

/// The pacers a signed call waits for: its account's (every request, shared by every pipeline of the
/// account) and, for a write, the caller's own write rate within it.
#[derive(Debug, Clone, Copy)]
pub struct Pacing<'a> {
    /// The account's pacer.
    pub account: &'a Pacer,
    /// The caller's `--provider-write-rate`, if it has one.
    pub own: Option<&'a Pacer>,
}

impl<'a> Pacing<'a> {
    /// Only the account's pacer.
    pub fn account(account: &'a Pacer) -> Pacing<'a> {
        Pacing { account, own: None }
    }
}

/// Whether an AWS API's answer refuses the credentials that signed the request (HTTP 401, or an expired
/// session token: Route53's `ExpiredToken`, DynamoDB's `ExpiredTokenException`), rather than what they
/// may do.
pub fn refuses_credentials(status: u16, code: &str) -> bool {
    status == 401 || matches!(code, "ExpiredToken" | "ExpiredTokenException")
}

#[cfg(test)]
mod tests {
    use super::*;

    use extdns_test_support::canned::{self, Answer};
    use reqwest::StatusCode;

    fn signer() -> Signer {
        let keys = CredentialSource::Static(Credentials::new("AKIDEXAMPLE", "secret"));
        Signer::new(SignerConfig::new(keys, "us-east-1", "route53"), &Observer::default())
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// The requests `answer` gets for one call, and the status the call ends with.
    async fn sent(answer: Answer) -> (usize, u16) {
        let server = canned::serve(answer);
        let http = HttpClient::builder().build().unwrap_or_else(|e| panic!("{e}"));
        let call = Call {
            method: &Method::GET,
            url: &server.url,
            headers: &[],
            body: None,
            write: false,
        };
        let code = |r: &Reply| String::from_utf8_lossy(&r.body).into_owned();
        let unlimited = Pacer::unlimited();
        let reply = signer().send(&http, Pacing::account(&unlimited), call, code).await;
        let status = reply.map(|r| r.status()).unwrap_or_else(|e| panic!("{e}"));
        let requests = server.lock().requests.len();
        (requests, status)
    }

    fn answer(status: StatusCode, code: &str) -> Answer {
        Answer {
            status,
            body: code.into(),
            ..Answer::default()
        }
    }

    #[tokio::test]
    async fn refused_credentials_are_replaced_and_the_call_sent_once_more() {
        assert_eq!(sent(answer(StatusCode::FORBIDDEN, "ExpiredToken")).await, (2, 403));
        assert_eq!(sent(answer(StatusCode::UNAUTHORIZED, "")).await, (2, 401));
        assert_eq!(
            sent(answer(StatusCode::FORBIDDEN, "AccessDenied")).await,
            (1, 403),
            "a denied action is not the credentials' fault"
        );
        assert_eq!(sent(answer(StatusCode::OK, "")).await, (1, 200));
    }

    #[test]
    fn an_expired_token_or_a_401_refuses_the_credentials_a_denied_action_does_not() {
        assert!(refuses_credentials(401, ""));
        assert!(refuses_credentials(403, "ExpiredToken"));
        assert!(refuses_credentials(400, "ExpiredTokenException"));
        assert!(!refuses_credentials(403, "AccessDenied"));
        assert!(!refuses_credentials(400, "ThrottlingException"));
    }
}
