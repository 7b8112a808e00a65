//! Where access tokens come from, chosen from `azure.json` in external-dns's order, and kept until shortly
//! before they expire:
//!
//! 1. a client secret (`aadClientId` and `aadClientSecret`, neither the `msi` placeholder of pure managed
//!    identity clusters): the client-credentials grant at `<authority>/<tenant>/oauth2/v2.0/token`;
//! 2. workload identity (`useWorkloadIdentityExtension`): the same grant with the Kubernetes token in
//!    `AZURE_FEDERATED_TOKEN_FILE` as the client assertion, re-read on every fetch since the kubelet rotates
//!    it; tenant and client from the file, else `AZURE_TENANT_ID`/`AZURE_CLIENT_ID`;
//! 3. managed identity (`useManagedIdentityExtension`): IMDS, asked with `Metadata: true`, system-assigned
//!    or the user-assigned identity's client id.
//!
//! When none applies the error names every source and why it was passed over.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use extdns_provider::HttpClient;
use extdns_provider::http::Observer;
use serde::Deserialize;
use tokio::sync::Mutex;

use crate::config::{AzureFile, Cloud};

/// The environment variables the chain reads; the binary captures them once at startup.
pub const VARIABLES: &[&str] = &["AZURE_FEDERATED_TOKEN_FILE", "AZURE_TENANT_ID", "AZURE_CLIENT_ID"];
const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
/// IMDS's api-version for tokens.
pub const IMDS_API_VERSION: &str = "2018-02-01";

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

impl CredentialSource {
    /// The source external-dns would pick for this file, environment (`env` reads [`VARIABLES`]) and
    /// `--azure-user-assigned-identity-client-id` (`user_assigned`, overriding the file's).
    pub fn select(
        file: &AzureFile,
        cloud: &Cloud,
        user_assigned: &str,
        imds: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<CredentialSource, CredentialsError> {
        let var = |k: &str| env(k).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let mut tried = Vec::new();
        let (id, secret) = (file.aad_client_id.trim(), file.aad_client_secret.trim());
        let msi = |v: &str| v.eq_ignore_ascii_case("msi");
        if !id.is_empty() && !secret.is_empty() && !msi(id) && !msi(secret) {
            return Ok(CredentialSource::ClientSecret {
                authority: cloud.authority_host.clone(),
                tenant: file.tenant_id.trim().to_string(),
                client_id: id.to_string(),
                secret: secret.to_string(),
            });
        }
        tried.push(if msi(id) || msi(secret) {
            "client secret: aadClientId/aadClientSecret is the \"msi\" placeholder"
        } else {
            "client secret: aadClientId or aadClientSecret is empty"
        });
        if file.use_workload_identity_extension {
            let tenant = Some(file.tenant_id.trim().to_string())
                .filter(|t| !t.is_empty())
                .or_else(|| var("AZURE_TENANT_ID"));
            let client = Some(id.to_string())
                .filter(|c| !c.is_empty() && !msi(c))
                .or_else(|| var("AZURE_CLIENT_ID"));
            let file_var = var("AZURE_FEDERATED_TOKEN_FILE");
            return match (tenant, client, file_var) {
                (Some(tenant), Some(client_id), Some(f)) => Ok(CredentialSource::Workload {
                    authority: cloud.authority_host.clone(),
                    tenant,
                    client_id,
                    token_file: PathBuf::from(f),
                }),
                (t, c, f) => {
                    let missing: Vec<&str> = [
                        (t.is_none(), "a tenant (tenantId or AZURE_TENANT_ID)"),
                        (c.is_none(), "a client id (aadClientId or AZURE_CLIENT_ID)"),
                        (f.is_none(), "AZURE_FEDERATED_TOKEN_FILE"),
                    ]
                    .into_iter()
                    .filter_map(|(m, s)| m.then_some(s))
                    .collect();
                    Err(CredentialsError::Workload(missing.join(", ")))
                }
            };
        }
        tried.push("workload identity: useWorkloadIdentityExtension is not true");
        if file.use_managed_identity_extension {
            let uai = Some(user_assigned.trim())
                .filter(|u| !u.is_empty())
                .or(Some(file.user_assigned_identity_id.trim()).filter(|u| !u.is_empty()));
            return Ok(CredentialSource::Managed {
                imds: imds.trim_end_matches('/').to_string(),
                client_id: uai.map(str::to_string),
            });
        }
        tried.push("managed identity: useManagedIdentityExtension is not true");
        Err(CredentialsError::NotFound(tried.join("; ")))
    }
}

/// Why no token came.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CredentialsError {
    /// No source applies; names each one and why.
    #[error("no credentials provided for Azure API; tried {0}")]
    NotFound(String),
    /// Workload identity is asked for but not set up.
    #[error("workload identity (useWorkloadIdentityExtension) lacks {0}")]
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
    /// No answer from the token endpoint.
    #[error("token request to {url}: {}", extdns_provider::http::error_chain(.source))]
    Request {
        /// The URL asked.
        url: String,
        /// The HTTP client's reason.
        #[source]
        source: reqwest::Error,
    },
    /// A refusal.
    #[error("token request to {url}: HTTP {status}: {detail}")]
    Status {
        /// The URL asked.
        url: String,
        /// The status.
        status: u16,
        /// `error`/`error_description`, or the body's first characters.
        detail: String,
    },
    /// A success that is not the JSON documented.
    #[error("token answer from {url} cannot be read: {detail}")]
    Answer {
        /// The URL asked.
        url: String,
        /// The decoder's reason.
        detail: String,
    },
}

impl CredentialsError {
    /// Whether asking again later may help (no answer, or the endpoint's 429/5xx).
    pub fn is_transient(&self) -> bool {
        match self {
            CredentialsError::Request { .. } => true,
            CredentialsError::Status { status, .. } => *status == 429 || *status >= 500,
            _ => false,
        }
    }
}

/// A token and when to fetch the next.
#[derive(Clone)]
struct Cached {
    token: String,
    refresh_at: Instant,
}

/// `expires_in` arrives as a number from the identity platform and as a string from IMDS.
#[derive(Deserialize)]
#[serde(untagged)]
enum Seconds {
    Number(u64),
    Text(String),
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    expires_in: Option<Seconds>,
}

/// Fetches tokens and keeps the current one.
pub struct TokenCache {
    source: CredentialSource,
    scope_audience: String,
    http: HttpClient,
    current: Mutex<Option<Cached>>,
}

impl std::fmt::Debug for TokenCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenCache")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl TokenCache {
    /// A cache over `source` for Resource Manager's `audience`.
    pub fn new(
        source: CredentialSource,
        audience: &str,
        timeout: Duration,
        observer: &Observer,
    ) -> Result<TokenCache, extdns_provider::http::HttpError> {
        let http = HttpClient::builder()
            .observed_by(observer)
            .timeout(timeout)
            .connect_timeout(Duration::from_secs(10))
            .build()?;
        Ok(TokenCache {
            source,
            scope_audience: audience.to_string(),
            http,
            current: Mutex::new(None),
        })
    }

    /// The current token, fetched again once it is within five minutes (or half its life) of expiring.
    pub async fn token(&self) -> Result<String, CredentialsError> {
        let mut current = self.current.lock().await;
        if let Some(c) = current.as_ref()
            && Instant::now() < c.refresh_at
        {
            return Ok(c.token.clone());
        }
        let (token, lifetime) = self.fetch().await?;
        let margin = (lifetime / 2).min(Duration::from_secs(300));
        *current = Some(Cached {
            token: token.clone(),
            refresh_at: Instant::now() + lifetime.saturating_sub(margin),
        });
        Ok(token)
    }

    /// Forget the current token (Resource Manager answered 401).
    pub async fn invalidate(&self) {
        *self.current.lock().await = None;
    }

    async fn fetch(&self) -> Result<(String, Duration), CredentialsError> {
        let scope = format!("{}/.default", self.scope_audience);
        let (url, request) = match &self.source {
            CredentialSource::Token(t) => return Ok((t.clone(), Duration::from_secs(3600))),
            CredentialSource::ClientSecret {
                authority,
                tenant,
                client_id,
                secret,
            } => {
                let url = token_url(authority, tenant);
                let form = [
                    ("grant_type", "client_credentials"),
                    ("client_id", client_id),
                    ("client_secret", secret),
                    ("scope", &scope),
                ];
                let req = self
                    .http
                    .post(&url)
                    .body(encode(&form))
                    .header(reqwest::header::CONTENT_TYPE, "application/x-www-form-urlencoded");
                (url, req)
            }
            CredentialSource::Workload {
                authority,
                tenant,
                client_id,
                token_file,
            } => {
                let assertion = std::fs::read_to_string(token_file).map_err(|source| CredentialsError::TokenFile {
                    path: token_file.clone(),
                    source,
                })?;
                let url = token_url(authority, tenant);
                let form = [
                    ("grant_type", "client_credentials"),
                    ("client_id", client_id),
                    ("client_assertion_type", ASSERTION_TYPE),
                    ("client_assertion", assertion.trim()),
                    ("scope", &scope),
                ];
                let req = self
                    .http
                    .post(&url)
                    .body(encode(&form))
                    .header(reqwest::header::CONTENT_TYPE, "application/x-www-form-urlencoded");
                (url, req)
            }
            CredentialSource::Managed { imds, client_id } => {
                let url = format!("{imds}/metadata/identity/oauth2/token");
                let mut query = vec![
                    ("api-version", IMDS_API_VERSION.to_string()),
                    ("resource", self.scope_audience.clone()),
                ];
                if let Some(c) = client_id {
                    query.push(("client_id", c.clone()));
                }
                let req = self.http.get(&url).query(&query).header("Metadata", "true");
                (url, req)
            }
        };
        let resp = request.send().await.map_err(|source| CredentialsError::Request {
            url: url.clone(),
            source,
        })?;
        let status = resp.status().as_u16();
        let bytes = resp.bytes().await.map_err(|source| CredentialsError::Request {
            url: url.clone(),
            source,
        })?;
        if !(200..300).contains(&status) {
            let detail = serde_json::from_slice::<serde_json::Value>(&bytes)
                .ok()
                .and_then(|v| {
                    let e = v.get("error")?.as_str()?.to_string();
                    let d = v.get("error_description").and_then(|d| d.as_str()).unwrap_or("");
                    Some(format!("{e}: {d}"))
                })
                .unwrap_or_else(|| String::from_utf8_lossy(&bytes).chars().take(200).collect());
            return Err(CredentialsError::Status { url, status, detail });
        }
        let answer: TokenAnswer = serde_json::from_slice(&bytes).map_err(|e| CredentialsError::Answer {
            url: url.clone(),
            detail: e.to_string(),
        })?;
        let secs = match answer.expires_in {
            Some(Seconds::Number(n)) => n,
            Some(Seconds::Text(t)) => t.trim().parse().map_err(|_| CredentialsError::Answer {
                url: url.clone(),
                detail: format!("expires_in {t:?} is not a number"),
            })?,
            None => 3600,
        };
        tracing::debug!(%url, expires_in = secs, "Azure access token fetched");
        Ok((answer.access_token, Duration::from_secs(secs)))
    }
}

fn token_url(authority: &str, tenant: &str) -> String {
    format!("{}/{tenant}/oauth2/v2.0/token", authority.trim_end_matches('/'))
}

fn encode(form: &[(&str, &str)]) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form)
        .finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(json: &str) -> AzureFile {
        AzureFile::parse(json).unwrap_or_else(|e| panic!("{e}"))
    }

    fn select(json: &str, env: &[(&str, &str)]) -> Result<CredentialSource, CredentialsError> {
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        CredentialSource::select(&file(json), &Cloud::public(), "", crate::IMDS_URL, &|k| {
            env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn a_client_secret_comes_first_even_with_managed_identity() {
        let s = select(
            r#"{"tenantId":"t","aadClientId":"c","aadClientSecret":"s","useManagedIdentityExtension":true}"#,
            &[],
        );
        assert!(matches!(s, Ok(CredentialSource::ClientSecret { ref client_id, .. }) if client_id == "c"));
    }

    #[test]
    fn the_msi_placeholder_means_no_secret() {
        let s = select(
            r#"{"aadClientId":"msi","aadClientSecret":"MSI","useManagedIdentityExtension":true,"userAssignedIdentityID":"u"}"#,
            &[],
        );
        assert!(
            matches!(s, Ok(CredentialSource::Managed { ref client_id, ref imds }) if client_id.as_deref() == Some("u") && imds == crate::IMDS_URL)
        );
    }

    #[test]
    fn workload_identity_falls_back_to_the_webhook_s_variables() {
        let s = select(
            r#"{"useWorkloadIdentityExtension":true}"#,
            &[
                ("AZURE_TENANT_ID", "tenant"),
                ("AZURE_CLIENT_ID", "client"),
                (
                    "AZURE_FEDERATED_TOKEN_FILE",
                    "/var/run/secrets/azure/tokens/azure-identity-token",
                ),
            ],
        );
        assert!(
            matches!(s, Ok(CredentialSource::Workload { ref tenant, ref client_id, .. }) if tenant == "tenant" && client_id == "client")
        );
        let e = select(r#"{"useWorkloadIdentityExtension":true,"tenantId":"t"}"#, &[])
            .err()
            .map(|e| e.to_string());
        assert!(e.is_some_and(|e| e.contains("AZURE_FEDERATED_TOKEN_FILE") && e.contains("client id")));
    }

    #[test]
    fn nothing_resolving_names_every_source_tried() {
        let e = select(r#"{"tenantId":"t"}"#, &[]).err().map(|e| e.to_string());
        let e = e.unwrap_or_default();
        for s in [
            "client secret",
            "workload identity",
            "managed identity",
            "no credentials provided",
        ] {
            assert!(e.contains(s), "{s} in {e}");
        }
    }
}
