//! Where access tokens come from: Application Default Credentials, in the order Google's client libraries
//! (golang.org/x/oauth2/google, which external-dns uses) look for them, kept until shortly before they
//! expire.
//!
//! 1. `GOOGLE_APPLICATION_CREDENTIALS`: a JSON file of type `service_account` (an RS256-signed JWT
//!    exchanged at the file's `token_uri`, RFC 7523), `authorized_user` (a refresh token) or
//!    `external_account` (Workload Identity Federation: a subject token from a file or URL exchanged at
//!    STS, then a service account impersonated when the file names one).
//! 2. gcloud's well-known file, `$CLOUDSDK_CONFIG/application_default_credentials.json` or
//!    `~/.config/gcloud/application_default_credentials.json`, of the same types.
//! 3. The metadata server (a GCE VM, or GKE Workload Identity): `GCE_METADATA_HOST`, else 169.254.169.254,
//!    asked with `Metadata-Flavor: Google` and, as Google's metadata client does, never through a proxy.
//!
//! A file that is named or present but unusable is an error, as in Google's libraries; only sources that
//! are absent are passed over, and when nothing resolves the error names every source tried.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use extdns_provider::HttpClient;
use extdns_provider::http::Observer;
use serde::Deserialize;
use tokio::sync::Mutex;

use crate::config::SCOPE;

/// The environment variables the chain reads; the binary captures them once at startup.
pub const VARIABLES: &[&str] = &[
    "GOOGLE_APPLICATION_CREDENTIALS",
    "CLOUDSDK_CONFIG",
    "HOME",
    "GCE_METADATA_HOST",
];

/// The metadata server of every GCE VM and GKE node.
pub const METADATA_HOST: &str = "169.254.169.254";
/// Google's token endpoint, when a credentials file names none.
pub const DEFAULT_TOKEN_URI: &str = "https://oauth2.googleapis.com/token";
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";
const FORM: &str = "application/x-www-form-urlencoded";

/// Where the tokens come from.
#[derive(Clone)]
#[non_exhaustive]
pub enum CredentialSource {
    /// A fixed access token (tests, or a caller that has one).
    Token(String),
    /// Application Default Credentials over these environment variables ([`VARIABLES`]).
    Adc {
        /// The environment the chain reads (the process's, or a test's).
        env: BTreeMap<String, String>,
    },
}

impl std::fmt::Debug for CredentialSource {
    /// Names the variables, never a token.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CredentialSource::Token(_) => f.write_str("Token(..)"),
            CredentialSource::Adc { env } => f
                .debug_struct("Adc")
                .field("variables", &env.keys().collect::<Vec<_>>())
                .finish(),
        }
    }
}

impl CredentialSource {
    /// Application Default Credentials over the [`VARIABLES`] `var` gives.
    pub fn adc(var: &dyn Fn(&str) -> Option<String>) -> CredentialSource {
        let env = VARIABLES
            .iter()
            .filter_map(|k| {
                var(k)
                    .filter(|v| !v.trim().is_empty())
                    .map(|v| (k.to_string(), v.trim().to_string()))
            })
            .collect();
        CredentialSource::Adc { env }
    }

    /// The metadata server's address this source would ask (`GCE_METADATA_HOST`, else 169.254.169.254).
    pub fn metadata_host(&self) -> String {
        match self {
            CredentialSource::Adc { env } => env.get("GCE_METADATA_HOST").cloned(),
            CredentialSource::Token(_) => None,
        }
        .unwrap_or_else(|| METADATA_HOST.to_string())
    }
}

/// Why no token came.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CredentialsError {
    /// Every source was tried; each says why it gave nothing.
    #[error("no Google credentials; tried {}", join(.0))]
    NotFound(Vec<Tried>),
    /// A source had credentials but could not use them.
    #[error("Google credentials from {from}: {source}")]
    Failed {
        /// The source (`GOOGLE_APPLICATION_CREDENTIALS /path`, `the metadata server at host`, ...).
        from: String,
        /// Why.
        #[source]
        source: SourceError,
    },
}

/// One source that gave nothing, and why.
#[derive(Debug, thiserror::Error)]
#[error("{from}: {source}")]
#[non_exhaustive]
pub struct Tried {
    /// The source.
    pub from: String,
    /// Why it gave nothing.
    #[source]
    pub source: SourceError,
}

fn join(tried: &[Tried]) -> String {
    tried.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
}

/// Why one source gave no token.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// The source is not there (a variable unset, no file); the message says what is missing.
    #[error("{0}")]
    Absent(String),
    /// A file cannot be read.
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The system's reason.
        #[source]
        source: std::io::Error,
    },
    /// A credentials file is not the JSON Google documents.
    #[error("{}: {detail}", .path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        detail: String,
    },
    /// The service account's private key cannot sign.
    #[error("the private key of {email} cannot be used: {detail}")]
    Key {
        /// The service account.
        email: String,
        /// Why (not PEM, not PKCS#8, not RSA).
        detail: String,
    },
    /// No answer.
    #[error("{url}: {}", extdns_provider::http::error_chain(.source))]
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
        /// The answer's `error`/`error_description`, or its first characters.
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

/// An access token and when to get a new one.
#[derive(Clone)]
pub struct AccessToken {
    /// The bearer token.
    pub token: String,
    /// When it expires, if known.
    pub expires: Option<SystemTime>,
    refresh_at: Option<SystemTime>,
}

impl std::fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccessToken")
            .field("expires", &self.expires)
            .finish_non_exhaustive()
    }
}

impl AccessToken {
    /// A token valid for `lifetime` from now, refreshed when a quarter of it or five minutes remain,
    /// whichever comes first.
    fn lasting(token: String, lifetime: Option<Duration>) -> AccessToken {
        let now = SystemTime::now();
        let expires = lifetime.map(|l| now + l);
        let refresh_at = lifetime.map(|l| now + l.saturating_sub((l / 4).max(Duration::from_secs(300)).min(l / 2)));
        AccessToken {
            token,
            expires,
            refresh_at,
        }
    }
}

/// Resolves tokens and keeps one until it is due for refresh; the one place the API client asks.
pub(crate) struct TokenCache {
    source: CredentialSource,
    http: HttpClient,
    metadata: HttpClient,
    current: Mutex<Option<AccessToken>>,
}

impl TokenCache {
    pub fn new(
        source: CredentialSource,
        timeout: Duration,
        observer: &Observer,
    ) -> Result<TokenCache, extdns_provider::http::HttpError> {
        let http = HttpClient::builder().timeout(timeout).observed_by(observer).build()?;
        // Google's metadata client: no proxy, and little patience off GCE, where its address answers nothing.
        let metadata = HttpClient::builder()
            .no_proxy()
            .connect_timeout(Duration::from_secs(1))
            .timeout(Duration::from_secs(5))
            .observed_by(observer)
            .build()?;
        Ok(TokenCache {
            source,
            http,
            metadata,
            current: Mutex::new(None),
        })
    }

    /// A valid token: the kept one, or a new one when it is due. A failed refresh keeps using a token
    /// that has not expired yet.
    pub async fn token(&self) -> Result<AccessToken, CredentialsError> {
        let mut current = self.current.lock().await;
        let now = SystemTime::now();
        if let Some(t) = current.as_ref()
            && t.refresh_at.is_none_or(|at| at > now)
        {
            return Ok(t.clone());
        }
        match self.resolve().await {
            Ok(fresh) => {
                tracing::debug!(expires = ?fresh.expires, "Google access token obtained");
                *current = Some(fresh.clone());
                Ok(fresh)
            }
            Err(e) => match current.as_ref() {
                Some(t) if t.expires.is_some_and(|at| at > now) => {
                    tracing::warn!(error = %e, "cannot refresh the Google access token; using the current one until it expires");
                    Ok(t.clone())
                }
                _ => Err(e),
            },
        }
    }

    /// Forget the kept token (the API refused it).
    pub async fn invalidate(&self) {
        *self.current.lock().await = None;
    }

    /// The project the metadata server names (`--google-project` left empty).
    pub async fn metadata_project(&self) -> Result<String, CredentialsError> {
        let host = self.source.metadata_host();
        let url = format!("http://{host}/computeMetadata/v1/project/project-id");
        let text = self
            .metadata_get(&url)
            .await
            .map_err(|source| failed(format!("the metadata server at {host}"), source))?;
        let project = text.trim().to_string();
        if project.is_empty() {
            return Err(failed(
                format!("the metadata server at {host}"),
                SourceError::Answer {
                    url,
                    detail: "empty project id".into(),
                },
            ));
        }
        Ok(project)
    }

    async fn resolve(&self) -> Result<AccessToken, CredentialsError> {
        let env = match &self.source {
            CredentialSource::Token(t) => return Ok(AccessToken::lasting(t.clone(), None)),
            CredentialSource::Adc { env } => env,
        };
        let mut tried = Vec::new();
        match env.get("GOOGLE_APPLICATION_CREDENTIALS") {
            Some(path) => {
                let from = format!("GOOGLE_APPLICATION_CREDENTIALS {path}");
                return self.file_token(Path::new(path)).await.map_err(|s| failed(from, s));
            }
            None => tried.push(Tried {
                from: "GOOGLE_APPLICATION_CREDENTIALS".into(),
                source: SourceError::Absent("not set".into()),
            }),
        }
        match well_known_file(env) {
            Some(path) if path.exists() => {
                let from = format!("gcloud's file {}", path.display());
                return self.file_token(&path).await.map_err(|s| failed(from, s));
            }
            Some(path) => tried.push(Tried {
                from: "gcloud's application default credentials".into(),
                source: SourceError::Absent(format!("no file {}", path.display())),
            }),
            None => tried.push(Tried {
                from: "gcloud's application default credentials".into(),
                source: SourceError::Absent("neither CLOUDSDK_CONFIG nor HOME is set".into()),
            }),
        }
        let host = self.source.metadata_host();
        let url = format!("http://{host}/computeMetadata/v1/instance/service-accounts/default/token?scopes={SCOPE}");
        match self.metadata_get(&url).await {
            Ok(body) => {
                token_answer(&url, body.as_bytes()).map_err(|s| failed(format!("the metadata server at {host}"), s))
            }
            Err(source @ SourceError::Request { .. }) if !env.contains_key("GCE_METADATA_HOST") => {
                // Off GCE the address answers nothing: a source absent, not one failing.
                tried.push(Tried {
                    from: format!("the metadata server at {host} (not on GCE or GKE?)"),
                    source,
                });
                Err(CredentialsError::NotFound(tried))
            }
            Err(source) => {
                tried.push(Tried {
                    from: format!("the metadata server at {host}"),
                    source,
                });
                Err(CredentialsError::NotFound(tried))
            }
        }
    }

    async fn metadata_get(&self, url: &str) -> Result<String, SourceError> {
        let request = |source| SourceError::Request {
            url: url.to_string(),
            source,
        };
        let resp = self
            .metadata
            .get(url)
            .header("Metadata-Flavor", "Google")
            .send()
            .await
            .map_err(request)?;
        let status = resp.status().as_u16();
        let text = resp.text().await.map_err(request)?;
        if !(200..300).contains(&status) {
            return Err(SourceError::Status {
                url: url.to_string(),
                status,
                detail: text.chars().take(200).collect(),
            });
        }
        Ok(text)
    }

    async fn file_token(&self, path: &Path) -> Result<AccessToken, SourceError> {
        let text = std::fs::read_to_string(path).map_err(|source| SourceError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let bad = |detail: String| SourceError::File {
            path: path.to_path_buf(),
            detail,
        };
        let file: CredentialsFile = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
        let need = |v: &Option<String>, field: &str| {
            v.clone()
                .filter(|s| !s.is_empty())
                .ok_or_else(|| bad(format!("{} credentials without {field}", file.kind)))
        };
        match file.kind.as_str() {
            "service_account" => {
                let email = need(&file.client_email, "client_email")?;
                let key = need(&file.private_key, "private_key")?;
                let token_uri = file.token_uri.clone().unwrap_or_else(|| DEFAULT_TOKEN_URI.to_string());
                let assertion = jwt(
                    &email,
                    &key,
                    file.private_key_id.as_deref(),
                    &token_uri,
                    SystemTime::now(),
                )?;
                let form = [("grant_type", JWT_BEARER), ("assertion", assertion.as_str())];
                self.post_form(&token_uri, &form).await
            }
            "authorized_user" => {
                let form = [
                    ("grant_type", "refresh_token".to_string()),
                    ("client_id", need(&file.client_id, "client_id")?),
                    ("client_secret", need(&file.client_secret, "client_secret")?),
                    ("refresh_token", need(&file.refresh_token, "refresh_token")?),
                ];
                let token_uri = file.token_uri.clone().unwrap_or_else(|| DEFAULT_TOKEN_URI.to_string());
                let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
                self.post_form(&token_uri, &form).await
            }
            "external_account" => self.external_account(&file, path).await,
            other => Err(bad(format!(
                "credentials of type {other:?} are not supported by extdns (service_account, authorized_user and \
                 external_account are)"
            ))),
        }
    }

    /// Workload Identity Federation: the subject token exchanged at STS, then the service account the
    /// file names impersonated with the STS token.
    async fn external_account(&self, file: &CredentialsFile, path: &Path) -> Result<AccessToken, SourceError> {
        let bad = |detail: &str| SourceError::File {
            path: path.to_path_buf(),
            detail: detail.to_string(),
        };
        let audience = file
            .audience
            .as_deref()
            .ok_or_else(|| bad("external_account without audience"))?;
        let subject_type = file
            .subject_token_type
            .as_deref()
            .ok_or_else(|| bad("external_account without subject_token_type"))?;
        let token_url = file
            .token_url
            .as_deref()
            .ok_or_else(|| bad("external_account without token_url"))?;
        let source = file
            .credential_source
            .as_ref()
            .ok_or_else(|| bad("external_account without credential_source"))?;
        let raw = match (&source.file, &source.url) {
            (Some(f), _) => std::fs::read_to_string(f).map_err(|e| SourceError::Read {
                path: PathBuf::from(f),
                source: e,
            })?,
            (None, Some(u)) => {
                let mut req = self.http.get(u.as_str());
                for (k, v) in &source.headers {
                    req = req.header(k.as_str(), v.as_str());
                }
                let err = |source| SourceError::Request { url: u.clone(), source };
                let resp = req.send().await.map_err(err)?;
                let status = resp.status().as_u16();
                let text = resp.text().await.map_err(err)?;
                if !(200..300).contains(&status) {
                    return Err(SourceError::Status {
                        url: u.clone(),
                        status,
                        detail: text.chars().take(200).collect(),
                    });
                }
                text
            }
            (None, None) => {
                return Err(bad(
                    "credential_source has neither file nor url (executable, environment and certificate sources \
                     are not supported by extdns)",
                ));
            }
        };
        let subject = match &source.format {
            Some(Format { kind, field }) if kind == "json" => {
                let field = field
                    .as_deref()
                    .ok_or_else(|| bad("json format without subject_token_field_name"))?;
                let v: serde_json::Value =
                    serde_json::from_str(&raw).map_err(|e| bad(&format!("the subject token is not JSON: {e}")))?;
                v.get(field)
                    .and_then(|t| t.as_str())
                    .ok_or_else(|| bad(&format!("the subject token has no {field}")))?
                    .to_string()
            }
            _ => raw.trim().to_string(),
        };
        let form = [
            ("audience", audience),
            ("grant_type", TOKEN_EXCHANGE),
            ("requested_token_type", ACCESS_TOKEN_TYPE),
            ("subject_token_type", subject_type),
            ("subject_token", subject.as_str()),
            ("scope", "https://www.googleapis.com/auth/cloud-platform"),
        ];
        let sts = self.post_form(token_url, &form).await?;
        let Some(url) = &file.service_account_impersonation_url else {
            return Ok(sts);
        };
        let err = |source| SourceError::Request {
            url: url.clone(),
            source,
        };
        let body = serde_json::json!({"scope": [SCOPE], "lifetime": "3600s"});
        let resp = self
            .http
            .post(url.as_str())
            .bearer_auth(&sts.token)
            .json(&body)
            .send()
            .await
            .map_err(err)?;
        let status = resp.status().as_u16();
        let bytes = resp.bytes().await.map_err(err)?;
        if !(200..300).contains(&status) {
            return Err(status_error(url, status, &bytes));
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Impersonated {
            access_token: String,
            expire_time: String,
        }
        let answer = |detail: String| SourceError::Answer {
            url: url.clone(),
            detail,
        };
        let got: Impersonated = serde_json::from_slice(&bytes).map_err(|e| answer(e.to_string()))?;
        let expires =
            parse_rfc3339(&got.expire_time).ok_or_else(|| answer(format!("expireTime {:?}", got.expire_time)))?;
        let lifetime = expires.duration_since(SystemTime::now()).unwrap_or_default();
        Ok(AccessToken::lasting(got.access_token, Some(lifetime)))
    }

    async fn post_form(&self, url: &str, form: &[(&str, &str)]) -> Result<AccessToken, SourceError> {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        let err = |source| SourceError::Request {
            url: url.to_string(),
            source,
        };
        let resp = self
            .http
            .post(url)
            .header("Content-Type", FORM)
            .body(body)
            .send()
            .await
            .map_err(err)?;
        let status = resp.status().as_u16();
        let bytes = resp.bytes().await.map_err(err)?;
        if !(200..300).contains(&status) {
            return Err(status_error(url, status, &bytes));
        }
        token_answer(url, &bytes)
    }
}

fn failed(from: impl Into<String>, source: SourceError) -> CredentialsError {
    CredentialsError::Failed {
        from: from.into(),
        source,
    }
}

fn status_error(url: &str, status: u16, body: &[u8]) -> SourceError {
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
            match e.error_description {
                Some(d) => format!("{code}: {d}"),
                None => code,
            }
        }
        Err(_) => String::from_utf8_lossy(body).chars().take(200).collect(),
    };
    SourceError::Status {
        url: url.to_string(),
        status,
        detail,
    }
}

/// `{"access_token", "expires_in", "token_type"}`, the answer of every OAuth token endpoint here.
fn token_answer(url: &str, body: &[u8]) -> Result<AccessToken, SourceError> {
    #[derive(Deserialize)]
    struct Answer {
        access_token: String,
        #[serde(default)]
        expires_in: Option<u64>,
    }
    let a: Answer = serde_json::from_slice(body).map_err(|e| SourceError::Answer {
        url: url.to_string(),
        detail: e.to_string(),
    })?;
    Ok(AccessToken::lasting(
        a.access_token,
        a.expires_in.map(Duration::from_secs),
    ))
}

fn well_known_file(env: &BTreeMap<String, String>) -> Option<PathBuf> {
    let dir = match (env.get("CLOUDSDK_CONFIG"), env.get("HOME")) {
        (Some(dir), _) => PathBuf::from(dir),
        (None, Some(home)) => Path::new(home).join(".config").join("gcloud"),
        (None, None) => return None,
    };
    Some(dir.join("application_default_credentials.json"))
}

/// The fields of the credential file types extdns reads.
#[derive(Debug, Deserialize)]
struct CredentialsFile {
    #[serde(rename = "type")]
    kind: String,
    client_email: Option<String>,
    private_key: Option<String>,
    private_key_id: Option<String>,
    token_uri: Option<String>,
    client_id: Option<String>,
    client_secret: Option<String>,
    refresh_token: Option<String>,
    audience: Option<String>,
    subject_token_type: Option<String>,
    token_url: Option<String>,
    service_account_impersonation_url: Option<String>,
    credential_source: Option<CredentialFileSource>,
}

#[derive(Debug, Deserialize)]
struct CredentialFileSource {
    file: Option<String>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    format: Option<Format>,
}

#[derive(Debug, Deserialize)]
struct Format {
    #[serde(rename = "type")]
    kind: String,
    #[serde(rename = "subject_token_field_name")]
    field: Option<String>,
}

/// The JWT-bearer assertion of a service account (RFC 7523, Google's "server to server" flow): RS256 over
/// `{alg, typ, kid}` and `{iss, scope, aud, iat, exp}`, valid for an hour.
pub fn jwt(
    email: &str,
    pem: &str,
    key_id: Option<&str>,
    audience: &str,
    now: SystemTime,
) -> Result<String, SourceError> {
    let key_error = |detail: String| SourceError::Key {
        email: email.to_string(),
        detail,
    };
    let der = pem_body(pem).ok_or_else(|| key_error("private_key is not a PEM PRIVATE KEY".into()))?;
    let key =
        ring::signature::RsaKeyPair::from_pkcs8(&der).map_err(|e| key_error(format!("not an RSA PKCS#8 key: {e}")))?;
    let iat = now.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
    let mut header = serde_json::json!({"alg": "RS256", "typ": "JWT"});
    if let Some(kid) = key_id {
        header["kid"] = kid.into();
    }
    let claims = serde_json::json!({"iss": email, "scope": SCOPE, "aud": audience, "iat": iat, "exp": iat + 3600});
    let signed = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let mut signature = vec![0; key.public().modulus_len()];
    key.sign(
        &ring::signature::RSA_PKCS1_SHA256,
        &ring::rand::SystemRandom::new(),
        signed.as_bytes(),
        &mut signature,
    )
    .map_err(|_| key_error("signing failed".into()))?;
    Ok(format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature)))
}

/// The DER of a `-----BEGIN PRIVATE KEY-----` block.
fn pem_body(pem: &str) -> Option<Vec<u8>> {
    let start = pem.find("-----BEGIN PRIVATE KEY-----")? + "-----BEGIN PRIVATE KEY-----".len();
    let end = pem[start..].find("-----END PRIVATE KEY-----")? + start;
    let b64: String = pem[start..end].chars().filter(|c| !c.is_whitespace()).collect();
    STANDARD.decode(b64).ok()
}

/// `YYYY-MM-DDTHH:MM:SS[.fff]Z`, as Google's APIs write times.
fn parse_rfc3339(text: &str) -> Option<SystemTime> {
    let t = text.trim().strip_suffix('Z')?;
    let (date, time) = t.split_once('T')?;
    let mut d = date.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let time = time.split_once('.').map_or(time, |(whole, _)| whole);
    let mut h = time.splitn(3, ':').map(|p| p.parse::<i64>().ok());
    let (hh, mm, ss) = (h.next()??, h.next()??, h.next()??);
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = u64::try_from(days * 86_400 + hh * 3600 + mm * 60 + ss).ok()?;
    Some(UNIX_EPOCH + Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_times_are_read() {
        let t = parse_rfc3339("2026-11-28T01:02:03.456Z").and_then(|t| t.duration_since(UNIX_EPOCH).ok());
        assert_eq!(t.map(|d| d.as_secs()), Some(1_795_827_723));
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(UNIX_EPOCH));
        assert!(parse_rfc3339("2026-13-01T00:00:00Z").is_none());
        assert!(parse_rfc3339("yesterday").is_none());
    }

    #[test]
    fn tokens_are_refreshed_before_they_expire() {
        let t = AccessToken::lasting("x".into(), Some(Duration::from_secs(3600)));
        let (Some(exp), Some(at)) = (t.expires, t.refresh_at) else {
            panic!("a lifetime gives both times")
        };
        let margin = exp.duration_since(at).unwrap_or_default().as_secs();
        assert_eq!(margin, 900, "a quarter of an hour before an hour's token expires");
        let short = AccessToken::lasting("x".into(), Some(Duration::from_secs(60)));
        let margin = short
            .expires
            .zip(short.refresh_at)
            .and_then(|(e, a)| e.duration_since(a).ok());
        assert_eq!(margin.map(|d| d.as_secs()), Some(30), "half of a short token's life");
    }

    #[test]
    fn the_well_known_file_follows_cloudsdk_config_then_home() {
        let env = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        assert_eq!(
            well_known_file(&env(&[("HOME", "/h")])),
            Some(PathBuf::from("/h/.config/gcloud/application_default_credentials.json"))
        );
        assert_eq!(
            well_known_file(&env(&[("HOME", "/h"), ("CLOUDSDK_CONFIG", "/c")])),
            Some(PathBuf::from("/c/application_default_credentials.json"))
        );
        assert_eq!(well_known_file(&env(&[])), None);
    }
}
