//! Where access tokens come from: the identity `azure.json` names ([`CredentialSource`], chosen in
//! external-dns's order by `CredentialSource::select` in `config.rs`), as the one source of the toolkit's
//! credential chain, its token kept until five minutes (at most half its life) before it expires and
//! dropped when Resource Manager answers 401:
//!
//! 1. a client secret: the client-credentials grant at `<authority>/<tenant>/oauth2/v2.0/token`;
//! 2. workload identity: the same grant with the Kubernetes token in `AZURE_FEDERATED_TOKEN_FILE` as the
//!    client assertion, re-read on every fetch since the kubelet rotates it;
//! 3. managed identity: IMDS, asked with `Metadata: true`, system-assigned or the user-assigned identity's
//!    client id.

use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;
use extdns_provider::HttpClient;
use extdns_provider::credentials::endpoint::{self, EndpointError, Grant};
use extdns_provider::credentials::{
    AccessToken, Chain, CredentialCache, FetchError, Margin, Miss, NoCredentials, Source,
};
use extdns_provider::http::{HttpError, Observer};

/// The environment variables the chain reads; the binary captures them once at startup.
pub const VARIABLES: &[&str] = &["AZURE_FEDERATED_TOKEN_FILE", "AZURE_TENANT_ID", "AZURE_CLIENT_ID"];
const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
/// IMDS's api-version for tokens.
pub const IMDS_API_VERSION: &str = "2018-02-01";
/// How the chain's error begins (external-dns's words).
pub(crate) const HEADLINE: &str = "no credentials provided for Azure API";
/// azcore's margin: five minutes before expiry, at most half a token's life.
const MARGIN: Margin = Margin::fixed(Duration::from_secs(300)).at_most_half_life();

/// Why no token came: the identities considered, and why each gave nothing.
pub type CredentialsError = NoCredentials<SourceError>;

/// Where tokens come from.
#[derive(Clone)]
#[non_exhaustive]
pub enum CredentialSource {
    /// A fixed access token (tests, or a caller that has one).
    Token(String),
    /// A client secret.
    ClientSecret {
        /// The identity platform's host.
        authority: String,
        /// The tenant.
        tenant: String,
        /// The application (client) id.
        client_id: String,
        /// Its secret.
        secret: String,
    },
    /// A federated Kubernetes token (Azure Workload Identity).
    Workload {
        /// The identity platform's host.
        authority: String,
        /// The tenant.
        tenant: String,
        /// The application or user-assigned identity's client id.
        client_id: String,
        /// `AZURE_FEDERATED_TOKEN_FILE`.
        token_file: PathBuf,
    },
    /// The managed identity endpoint.
    Managed {
        /// IMDS's base URL ([`crate::IMDS_URL`]).
        imds: String,
        /// A user-assigned identity's client id; `None` for the system-assigned one.
        client_id: Option<String>,
    },
}

impl std::fmt::Debug for CredentialSource {
    /// Names the source, never a secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CredentialSource::Token(_) => f.write_str("Token(..)"),
            CredentialSource::ClientSecret { tenant, client_id, .. } => {
                write!(f, "ClientSecret {{ tenant: {tenant:?}, client_id: {client_id:?} }}")
            }
            CredentialSource::Workload {
                tenant,
                client_id,
                token_file,
                ..
            } => write!(
                f,
                "Workload {{ tenant: {tenant:?}, client_id: {client_id:?}, token_file: {token_file:?} }}"
            ),
            CredentialSource::Managed { imds, client_id } => {
                write!(f, "Managed {{ imds: {imds:?}, client_id: {client_id:?} }}")
            }
        }
    }
}

/// Why one identity gave no token.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// `azure.json` does not ask for this identity; the message says why.
    #[error("{0}")]
    NotConfigured(&'static str),
    /// Workload identity is asked for but not set up: what it lacks.
    #[error("useWorkloadIdentityExtension lacks {0}")]
    Workload(String),
    /// The federated token file cannot be read.
    #[error("cannot read the federated token {}: {source}", .path.display())]
    TokenFile {
        /// The file.
        path: PathBuf,
        /// The system's reason.
        #[source]
        source: std::io::Error,
    },
    /// The token endpoint or IMDS gave no token (no answer, a refusal, an unreadable one).
    #[error("token request to {0}")]
    Endpoint(#[source] EndpointError),
}

impl FetchError for SourceError {
    fn is_transient(&self) -> bool {
        matches!(self, SourceError::Endpoint(e) if e.is_transient())
    }
}

/// Where the API client asks for its token.
pub(crate) type TokenCache = CredentialCache<AccessToken, SourceError>;

/// The token cache over `source`, for Resource Manager's `audience`; requests time out after `timeout` and
/// are reported to `observer`.
pub(crate) fn tokens(
    source: CredentialSource,
    audience: &str,
    timeout: Duration,
    observer: &Observer,
) -> Result<TokenCache, HttpError> {
    let mut http = HttpClient::builder()
        .observed_by(observer)
        .timeout(timeout)
        .connect_timeout(Duration::from_secs(10));
    if matches!(source, CredentialSource::Managed { .. }) {
        // IMDS is the VM's own link-local address: never asked through a proxy of the environment.
        http = http.no_proxy();
    }
    let http = http.build()?;
    let identity = Identity {
        source,
        audience: audience.to_string(),
        http,
    };
    Ok(CredentialCache::new(Chain::new(HEADLINE).then(identity), MARGIN))
}

/// The identity `azure.json` names, asked for tokens of `audience`.
struct Identity {
    source: CredentialSource,
    audience: String,
    http: HttpClient,
}

#[async_trait]
impl Source<AccessToken> for Identity {
    type Error = SourceError;

    fn name(&self) -> String {
        match &self.source {
            CredentialSource::Token(_) => "a fixed token",
            CredentialSource::ClientSecret { .. } => "client secret",
            CredentialSource::Workload { .. } => "workload identity",
            CredentialSource::Managed { .. } => "managed identity",
        }
        .into()
    }

    async fn fetch(&self) -> Result<AccessToken, Miss<SourceError>> {
        let grant = match &self.source {
            CredentialSource::Token(t) => {
                return Ok(AccessToken::lasting(t.clone(), None));
            }
            CredentialSource::ClientSecret {
                authority,
                tenant,
                client_id,
                secret,
            } => {
                self.client_credentials(authority, tenant, client_id, ("client_secret", secret))
                    .await
            }
            CredentialSource::Workload {
                authority,
                tenant,
                client_id,
                token_file,
            } => {
                let assertion = std::fs::read_to_string(token_file).map_err(|source| {
                    Miss::Failed(SourceError::TokenFile {
                        path: token_file.clone(),
                        source,
                    })
                })?;
                let url = token_url(authority, tenant);
                let form = [
                    ("grant_type", "client_credentials"),
                    ("client_id", client_id.as_str()),
                    ("client_assertion_type", ASSERTION_TYPE),
                    ("client_assertion", assertion.trim()),
                    ("scope", &self.scope()),
                ];
                endpoint::post_form(&self.http, &url, &form).await
            }
            CredentialSource::Managed { imds, client_id } => self.managed(imds, client_id.as_deref()).await,
        };
        let grant = grant.map_err(|e| Miss::Failed(SourceError::Endpoint(e)))?;
        // Tokens without a lifetime last an hour, as the identity platform documents.
        let lifetime = grant.expires_in.unwrap_or(Duration::from_secs(3600));
        tracing::debug!(source = %self.name(), expires_in = lifetime.as_secs(), "Azure access token fetched");
        Ok(AccessToken::lasting(grant.access_token, Some(lifetime)))
    }
}

impl Identity {
    /// `<audience>/.default`, as azcore asks.
    fn scope(&self) -> String {
        format!("{}/.default", self.audience)
    }

    /// The client-credentials grant with `secret`.
    async fn client_credentials(
        &self,
        authority: &str,
        tenant: &str,
        client_id: &str,
        secret: (&str, &str),
    ) -> Result<Grant, EndpointError> {
        let form = [
            ("grant_type", "client_credentials"),
            ("client_id", client_id),
            secret,
            ("scope", &self.scope()),
        ];
        endpoint::post_form(&self.http, &token_url(authority, tenant), &form).await
    }

    /// IMDS's token for the system-assigned identity, or the user-assigned `client_id`.
    async fn managed(&self, imds: &str, client_id: Option<&str>) -> Result<Grant, EndpointError> {
        let url = format!("{imds}/metadata/identity/oauth2/token");
        let mut query = vec![("api-version", IMDS_API_VERSION), ("resource", self.audience.as_str())];
        if let Some(c) = client_id {
            query.push(("client_id", c));
        }
        let request = self.http.get(&url).query(&query).header("Metadata", "true");
        endpoint::grant(&url, &endpoint::send(request, &url).await?)
    }
}

fn token_url(authority: &str, tenant: &str) -> String {
    format!("{}/{tenant}/oauth2/v2.0/token", authority.trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_replaced_five_minutes_or_half_their_life_before_they_expire() {
        let secs = |life: u64| MARGIN.of(Duration::from_secs(life)).as_secs();
        assert_eq!(secs(86_400), 300, "a managed identity's day-long token");
        assert_eq!(secs(3600), 300);
        assert_eq!(secs(2), 1, "half of a short token's life");
    }

    #[test]
    fn a_refused_grant_names_the_token_endpoint_and_keeps_its_cause() {
        let e = SourceError::Endpoint(endpoint::status_error(
            "https://login.example/t/oauth2/v2.0/token",
            401,
            br#"{"error":"invalid_client","error_description":"bad secret"}"#,
        ));
        assert_eq!(
            e.to_string(),
            "token request to https://login.example/t/oauth2/v2.0/token: HTTP 401: invalid_client: bad secret"
        );
        assert!(!e.is_transient());
        let cause = std::error::Error::source(&e).and_then(|c| c.downcast_ref::<EndpointError>());
        assert!(
            matches!(cause, Some(EndpointError::Status { status: 401, .. })),
            "{e:?}"
        );
    }
}
