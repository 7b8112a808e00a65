//! SigV4 headers for one request with given credentials (STS's AssumeRole signs with the credentials it
//! assumes a role with); [`crate::Signer`] signs with the credential chain's.

use std::time::SystemTime;

use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;

use crate::keys::Credentials;

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
