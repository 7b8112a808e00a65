//! Requests to an AWS API, signed with the credential chain's credentials: what the Route53 provider and the
//! DynamoDB registry both send.

use std::time::Duration;

use extdns_provider::HttpClient;
use extdns_provider::credentials::CredentialCache;
use extdns_provider::http::{HttpError, Observer, Request};
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
}

/// SigV4 for one AWS API: the credential chain and `--aws-assume-role`, credentials kept until shortly
/// before they expire, requests signed for one service in one region.
pub struct Signer {
    credentials: CredentialCache<Credentials, CredentialSourceError>,
    region: String,
    service: String,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer")
            .field("region", &self.region)
            .field("service", &self.service)
            .finish_non_exhaustive()
    }
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

    /// `method url` on `http` with `headers`, the signature and `body` (none: empty): the request as it is
    /// signed, ready to send, and the credentials that signed it.
    pub async fn request<'c>(
        &self,
        http: &'c HttpClient,
        method: Method,
        url: &str,
        headers: &[(&str, &str)],
        body: Option<String>,
    ) -> Result<Signed<'c>, SignerError> {
        let credentials = self.credentials.get().await.map_err(SignerError::Credentials)?;
        let bytes = body.as_deref().unwrap_or_default().as_bytes();
        let signed = sign::headers(
            &sign::identity(&credentials),
            &self.region,
            &self.service,
            method.as_str(),
            url,
            headers,
            bytes,
        )
        .map_err(SignerError::Sign)?;
        let mut request = http.request(method, url);
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        for (k, v) in signed {
            request = request.header(k, v);
        }
        if let Some(body) = body {
            request = request.body(body);
        }
        Ok(Signed {
            request,
            by: SignedBy(credentials),
        })
    }

    /// The API answered `status` with error `code` to a request signed `by` these credentials: when that
    /// refuses the credentials themselves ([`refuses_credentials`]), they are dropped, so the next request
    /// fetches new ones rather than signing with them until the cache thinks they expire.
    pub async fn answered(&self, by: &SignedBy, status: u16, code: &str) {
        if refuses_credentials(status, code) {
            self.credentials.refused(&by.0).await;
        }
    }
}

/// A signed request and the credentials that signed it.
pub struct Signed<'c> {
    /// The request, ready to send.
    pub request: Request<'c>,
    /// Who signed it, for [`Signer::answered`].
    pub by: SignedBy,
}

/// The credentials a request was signed with (opaque: only [`Signer::answered`] reads them).
pub struct SignedBy(Credentials);

/// Whether an AWS API's answer refuses the credentials that signed the request (HTTP 401, or an expired
/// session token: Route53's `ExpiredToken`, DynamoDB's `ExpiredTokenException`), rather than what they
/// may do.
pub fn refuses_credentials(status: u16, code: &str) -> bool {
    status == 401 || matches!(code, "ExpiredToken" | "ExpiredTokenException")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_expired_token_or_a_401_refuses_the_credentials_a_denied_action_does_not() {
        assert!(refuses_credentials(401, ""));
        assert!(refuses_credentials(403, "ExpiredToken"));
        assert!(refuses_credentials(400, "ExpiredTokenException"));
        assert!(!refuses_credentials(403, "AccessDenied"));
        assert!(!refuses_credentials(400, "ThrottlingException"));
    }
}
