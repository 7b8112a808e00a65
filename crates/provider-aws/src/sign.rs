//! SigV4 headers for one request, shared by the Route53 client and STS's AssumeRole; [`Signer`] signs for other
//! AWS APIs (the DynamoDB registry) with the same credential chain.

use std::time::SystemTime;

use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;

use crate::config::Credentials;

/// Why a request could not be signed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SignError {
    /// The signing parameters are incomplete (no identity, region or service name).
    #[error("invalid signing parameters: {0}")]
    Params(#[source] v4::signing_params::BuildError),
    /// The request cannot be signed (an unparsable URL or header, credentials of the wrong kind).
    #[error("{0}")]
    Request(#[source] aws_sigv4::http_request::SigningError),
}

/// The identity aws-sigv4 signs with.
pub(crate) fn identity(c: &Credentials) -> Identity {
    aws_credential_types::Credentials::new(
        c.access_key_id.clone(),
        c.secret_access_key.clone(),
        c.session_token.clone(),
        c.expires,
        "extdns",
    )
    .into()
}

/// The headers that sign `method url` with `headers` and `body` for `service` in `region`.
pub(crate) fn headers(
    identity: &Identity,
    region: &str,
    service: &str,
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<Vec<(String, String)>, SignError> {
    let params = v4::SigningParams::builder()
        .identity(identity)
        .region(region)
        .name(service)
        .time(SystemTime::now())
        .settings(SigningSettings::default())
        .build()
        .map_err(SignError::Params)?
        .into();
    let signable = SignableRequest::new(method, url, headers.iter().copied(), SignableBody::Bytes(body))
        .map_err(SignError::Request)?;
    let (instructions, _) = sign(signable, &params).map_err(SignError::Request)?.into_parts();
    Ok(instructions
        .headers()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect())
}

/// Why [`Signer::headers`] could not sign a request.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SignerError {
    /// The credential chain gave no credentials.
    #[error("{0}")]
    Credentials(#[source] crate::credentials::CredentialsError),
    /// The request could not be signed with them.
    #[error("cannot sign the request: {0}")]
    Sign(#[source] SignError),
}

/// SigV4 for another AWS API than Route53 (the DynamoDB registry speaks DynamoDB's JSON API with it): the
/// same credential chain and `--aws-assume-role` as the provider, credentials kept until shortly before they
/// expire, requests signed for one service in one region.
pub struct Signer {
    credentials: crate::credentials::CredentialCache,
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

impl Signer {
    /// A signer for `service` (the credential scope's name, e.g. `dynamodb`) in `region`; credentials from
    /// `source`, then `assume_role`; credential requests time out after `timeout` and are reported to
    /// `observer`.
    pub fn new(
        source: crate::credentials::CredentialSource,
        assume_role: Option<crate::credentials::AssumeRole>,
        region: impl Into<String>,
        service: impl Into<String>,
        timeout: std::time::Duration,
        observer: &extdns_provider::http::Observer,
    ) -> Result<Signer, extdns_provider::http::HttpError> {
        Ok(Signer {
            credentials: crate::credentials::CredentialCache::new(
                source,
                assume_role,
                std::time::Duration::from_secs(300),
                timeout,
                observer,
            )?,
            region: region.into(),
            service: service.into(),
        })
    }

    /// The region requests are signed for.
    pub fn region(&self) -> &str {
        &self.region
    }

    /// The headers that sign `method url` with `headers` and `body` (to be sent beside `headers`).
    pub async fn headers(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<Vec<(String, String)>, SignerError> {
        let credentials = self.credentials.get().await.map_err(SignerError::Credentials)?;
        self::headers(
            &identity(&credentials),
            &self.region,
            &self.service,
            method,
            url,
            headers,
            body,
        )
        .map_err(SignerError::Sign)
    }
}
