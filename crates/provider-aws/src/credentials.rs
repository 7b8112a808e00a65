//! Where Route53 credentials come from: the AWS credential chain, in the order external-dns's SDK (the Go
//! SDK v2) resolves it, then `--aws-assume-role`; kept until shortly before they expire.
//!
//! 1. A profile named by `--aws-profile` or `AWS_PROFILE`: that profile only (below).
//! 2. `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` (and `AWS_SESSION_TOKEN`).
//! 3. Web identity (IRSA): `AWS_ROLE_ARN` and `AWS_WEB_IDENTITY_TOKEN_FILE` → STS `AssumeRoleWithWebIdentity`.
//! 4. The `default` profile of the shared files.
//!
//! A profile gives static keys, or a role (`role_arn`) assumed with the credentials of `source_profile`,
//! of a `credential_source` (`Environment`, `EcsContainer`, `Ec2InstanceMetadata`) or of a
//! `web_identity_token_file`. A profile without credentials falls through to the container credentials
//! (`AWS_CONTAINER_CREDENTIALS_FULL_URI` or `_RELATIVE_URI`, with `AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE` or
//! `_TOKEN`: ECS and EKS Pod Identity), then to the instance profile (IMDSv2).
//!
//! Written on the toolkit's HTTP client rather than with `aws-config`: that crate brings the SDK's own
//! runtime and STS client (a second HTTP stack, or one we would have to adapt to, and aws-lc-rs with its
//! default client) for five small documented calls, and its requests would bypass the toolkit's proxy,
//! user agent and request metric (DESIGN.md).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use extdns_provider::HttpClient;
use extdns_provider::http::Observer;
use reqwest::Method;
use serde::Deserialize;
use tokio::sync::Mutex;
use url::Url;

use crate::config::Credentials;
use crate::profile::{Profile, ProfileFiles};
use crate::sign::{self, SignError};

/// The environment variables the chain reads; the binary captures them once at startup.
pub const VARIABLES: &[&str] = &[
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ROLE_ARN",
    "AWS_ROLE_SESSION_NAME",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_EC2_METADATA_DISABLED",
    "AWS_EC2_METADATA_SERVICE_ENDPOINT",
    "AWS_ENDPOINT_URL_STS",
    "AWS_ENDPOINT_URL",
    "HOME",
];

/// The instance metadata service of every EC2 instance.
const IMDS: &str = "http://169.254.169.254";
/// The ECS agent's endpoint for `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI`.
const ECS: &str = "http://169.254.170.2";
/// Profiles naming a `source_profile` that names another: how deep a chain may go.
const MAX_PROFILE_DEPTH: u8 = 5;

/// A role to assume with whatever the chain resolved (`--aws-assume-role`, `--aws-assume-role-external-id`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssumeRole {
    /// The role to assume (`--aws-assume-role`).
    pub role_arn: String,
    /// `--aws-assume-role-external-id`, when the role's trust policy asks for one.
    pub external_id: Option<String>,
}

/// Where the credentials come from.
#[derive(Clone)]
#[non_exhaustive]
pub enum CredentialSource {
    /// Fixed keys (tests, or a caller that resolved them itself).
    Static(Credentials),
    /// The chain over these environment variables and this profile (`--aws-profile`).
    Chain {
        /// The environment the chain reads (the process's, or a test's).
        env: BTreeMap<String, String>,
        /// `--aws-profile`; `None` reads `AWS_PROFILE`, then `default`.
        profile: Option<String>,
    },
}

impl std::fmt::Debug for CredentialSource {
    /// Names the variables, never their values (keys and tokens are among them).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CredentialSource::Static(c) => f.debug_tuple("Static").field(c).finish(),
            CredentialSource::Chain { env, profile } => f
                .debug_struct("Chain")
                .field("variables", &env.keys().collect::<Vec<_>>())
                .field("profile", profile)
                .finish(),
        }
    }
}

impl CredentialSource {
    /// The chain over the [`VARIABLES`] `var` gives.
    pub fn chain(var: &dyn Fn(&str) -> Option<String>, profile: Option<String>) -> CredentialSource {
        let env = VARIABLES
            .iter()
            .filter_map(|k| {
                var(k)
                    .filter(|v| !v.trim().is_empty())
                    .map(|v| (k.to_string(), v.trim().to_string()))
            })
            .collect();
        CredentialSource::Chain { env, profile }
    }
}

/// Why no credentials came.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CredentialsError {
    /// Every source of the chain was tried; each says why it gave nothing.
    #[error("no AWS credentials; tried {}", join(.0))]
    NotFound(Vec<Tried>),
    /// A step of the chain had credentials but could not use them.
    #[error("AWS credentials from {from}: {source}")]
    Failed {
        /// The step (environment, profile, IMDS, ...).
        from: String,
        /// Why.
        #[source]
        source: CredentialSourceError,
    },
}

/// One source of the chain that gave nothing, and why.
#[derive(Debug, thiserror::Error)]
#[error("{from}: {source}")]
#[non_exhaustive]
pub struct Tried {
    /// The source (`environment`, `web identity`, `shared files`, `container`, `instance metadata (...)`).
    pub from: String,
    /// Why it gave nothing.
    #[source]
    pub source: CredentialSourceError,
}

fn join(tried: &[Tried]) -> String {
    tried.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
}

/// Why one source of the credential chain gave no credentials, or a configured one failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CredentialSourceError {
    /// The source is not configured: the variables it needs are not set (the message names them).
    #[error("{0}")]
    NotConfigured(&'static str),
    /// The profile is in none of the shared files.
    #[error("no such profile {name} in {files}")]
    NoSuchProfile {
        /// The profile.
        name: String,
        /// The shared files read.
        files: String,
    },
    /// The profile has neither keys nor a role.
    #[error("profile {name} in {files} has no credentials")]
    NoProfileCredentials {
        /// The profile.
        name: String,
        /// The shared files read.
        files: String,
    },
    /// A `credential_process` or SSO profile.
    #[error("credential_process and SSO profiles are not supported by extdns: use static keys, a role or web identity")]
    UnsupportedProfile,
    /// A profile without a role lacks one of its keys.
    #[error("profile {0} has no aws_access_key_id and aws_secret_access_key")]
    NoKeys(String),
    /// `source_profile` names profiles that name others, deeper than the chain may go.
    #[error("source_profile chain longer than {MAX_PROFILE_DEPTH} from profile {0}")]
    ProfileChainTooLong(String),
    /// A profile with a `role_arn` says nothing of the credentials to assume it with.
    #[error("profile {0} has role_arn but no source_profile, credential_source or web_identity_token_file")]
    NoRoleSource(String),
    /// A `credential_source` other than `Environment`, `EcsContainer` and `Ec2InstanceMetadata`.
    #[error("unknown credential_source {0:?}")]
    UnknownCredentialSource(String),
    /// A file the source names cannot be read (a shared file, a token file).
    #[error("cannot read {what} {}: {source}", .path.display())]
    Read {
        /// What the file is (`the token file`, `AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE`, ...).
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The system's reason.
        #[source]
        source: std::io::Error,
    },
    /// `AWS_CONTAINER_CREDENTIALS_FULL_URI` is not a URL.
    #[error("AWS_CONTAINER_CREDENTIALS_FULL_URI {uri:?}: {source}")]
    InvalidUri {
        /// The variable's value.
        uri: String,
        /// The parser's reason.
        #[source]
        source: url::ParseError,
    },
    /// `AWS_CONTAINER_CREDENTIALS_FULL_URI` would send the token off the host to something other than
    /// the ECS or EKS agent.
    #[error(
        "AWS_CONTAINER_CREDENTIALS_FULL_URI {uri:?} must be https, or http to a loopback address or the ECS/EKS agent"
    )]
    UnsafeUri {
        /// The variable's value.
        uri: String,
    },
    /// The STS request could not be signed.
    #[error("cannot sign the STS request: {0}")]
    Sign(#[source] SignError),
    /// No answer (refused, timed out, unreadable body).
    #[error("{endpoint}: {}", extdns_provider::http::error_chain(.source))]
    Request {
        /// What was asked: `STS at <url>`, or the URL.
        endpoint: String,
        /// The HTTP client's reason.
        #[source]
        source: reqwest::Error,
    },
    /// An answer other than success.
    #[error("{endpoint}: HTTP {status}{}", if .detail.is_empty() { String::new() } else { format!(": {}", .detail) })]
    Status {
        /// What was asked: `STS at <url>`, or the URL.
        endpoint: String,
        /// The HTTP status.
        status: u16,
        /// What the answer says (STS's error code and message, the agent's text), or nothing.
        detail: String,
    },
    /// The instance has no instance profile.
    #[error("{url}: no instance profile is attached (HTTP 404)")]
    NoInstanceProfile {
        /// The metadata URL asked.
        url: String,
    },
    /// The instance metadata names no role.
    #[error("{url}: no role")]
    NoRole {
        /// The metadata URL asked.
        url: String,
    },
    /// STS's answer lacks a field.
    #[error("{endpoint}: no {field} in the answer")]
    MissingField {
        /// What was asked: `STS at <url>`.
        endpoint: String,
        /// The missing element.
        field: &'static str,
    },
    /// The container or instance credentials document is not the JSON expected.
    #[error("{url}: unreadable credentials: {source}")]
    Json {
        /// The URL asked.
        url: String,
        /// The JSON decoder's reason.
        #[source]
        source: serde_json::Error,
    },
    /// The credentials document says they are not available.
    #[error("{url}: credentials not available: {code}")]
    NotAvailable {
        /// The URL asked.
        url: String,
        /// The document's `Code`.
        code: String,
    },
    /// An expiration that is not an RFC 3339 UTC time.
    #[error("{endpoint}: unreadable Expiration {value:?}")]
    Expiration {
        /// What was asked: `STS at <url>`, or the URL.
        endpoint: String,
        /// The expiration as written.
        value: String,
    },
}

fn failed(from: impl Into<String>, source: CredentialSourceError) -> CredentialsError {
    CredentialsError::Failed {
        from: from.into(),
        source,
    }
}

fn tried(from: impl Into<String>, source: CredentialSourceError) -> Tried {
    Tried {
        from: from.into(),
        source,
    }
}

/// Resolves credentials and keeps them until `refresh_before` their expiry; the one place the client asks.
pub(crate) struct CredentialCache {
    resolver: Resolver,
    refresh_before: Duration,
    current: Mutex<Option<Credentials>>,
}

impl CredentialCache {
    pub fn new(
        source: CredentialSource,
        assume_role: Option<AssumeRole>,
        refresh_before: Duration,
        timeout: Duration,
        observer: &Observer,
    ) -> Result<CredentialCache, extdns_provider::http::HttpError> {
        let http = HttpClient::builder().timeout(timeout).observed_by(observer).build()?;
        // The SDKs give the metadata service a second: off EC2 its address does not answer at all.
        let metadata = HttpClient::builder()
            .connect_timeout(Duration::from_secs(1))
            .timeout(Duration::from_secs(2))
            .observed_by(observer)
            .build()?;
        Ok(CredentialCache {
            resolver: Resolver {
                source,
                assume_role,
                http,
                metadata,
            },
            refresh_before,
            current: Mutex::new(None),
        })
    }

    /// Valid credentials: the kept ones, or new ones when those expire within `refresh_before`. A failed
    /// refresh keeps using credentials that have not expired yet.
    pub async fn get(&self) -> Result<Credentials, CredentialsError> {
        let mut current = self.current.lock().await;
        let now = SystemTime::now();
        if let Some(c) = current.as_ref() {
            match c.expires {
                None => return Ok(c.clone()),
                Some(at) if at > now + self.refresh_before => return Ok(c.clone()),
                _ => {}
            }
        }
        match self.resolver.resolve().await {
            Ok(fresh) => {
                tracing::debug!(access_key_id = %fresh.access_key_id, expires = ?fresh.expires, "AWS credentials resolved");
                *current = Some(fresh.clone());
                Ok(fresh)
            }
            Err(e) => match current.as_ref() {
                Some(c) if c.expires.is_some_and(|at| at > now) => {
                    tracing::warn!(error = %e, "cannot refresh the AWS credentials; using the current ones until they expire");
                    Ok(c.clone())
                }
                _ => Err(e),
            },
        }
    }
}

struct Resolver {
    source: CredentialSource,
    assume_role: Option<AssumeRole>,
    http: HttpClient,
    metadata: HttpClient,
}

/// The environment the chain reads.
struct Env<'a>(&'a BTreeMap<String, String>);

impl Env<'_> {
    fn get(&self, k: &str) -> Option<&str> {
        self.0.get(k).map(String::as_str)
    }

    fn region(&self) -> &str {
        self.get("AWS_REGION")
            .or_else(|| self.get("AWS_DEFAULT_REGION"))
            .unwrap_or("us-east-1")
    }

    /// `AWS_ENDPOINT_URL_STS`, `AWS_ENDPOINT_URL`, else STS's regional endpoint, as the Go SDK v2 uses.
    fn sts_endpoint(&self) -> String {
        if let Some(e) = self
            .get("AWS_ENDPOINT_URL_STS")
            .or_else(|| self.get("AWS_ENDPOINT_URL"))
        {
            return e.trim_end_matches('/').to_string();
        }
        let region = self.region();
        let suffix = if region.starts_with("cn-") {
            "amazonaws.com.cn"
        } else {
            "amazonaws.com"
        };
        format!("https://sts.{region}.{suffix}")
    }
}

impl Resolver {
    async fn resolve(&self) -> Result<Credentials, CredentialsError> {
        let empty = BTreeMap::new();
        let (base, env) = match &self.source {
            CredentialSource::Static(c) => (c.clone(), Env(&empty)),
            CredentialSource::Chain { env, profile } => {
                let env = Env(env);
                (self.chain(&env, profile.as_deref()).await?, env)
            }
        };
        let Some(role) = &self.assume_role else {
            return Ok(base);
        };
        self.assume_role(&env, &base, &role.role_arn, role.external_id.as_deref(), None)
            .await
            .map_err(|source| failed(format!("--aws-assume-role {}", role.role_arn), source))
    }

    async fn chain(&self, env: &Env<'_>, profile: Option<&str>) -> Result<Credentials, CredentialsError> {
        let files = ProfileFiles::load(&|k| env.get(k).map(str::to_string)).map_err(|(path, source)| {
            failed(
                "the shared files",
                CredentialSourceError::Read {
                    what: "the shared file",
                    path,
                    source,
                },
            )
        })?;
        let mut tried_sources = Vec::new();
        if let Some(name) = profile.or_else(|| env.get("AWS_PROFILE")) {
            return self.profile_or_instance(env, &files, name, true, tried_sources).await;
        }
        let not_configured = |from: &str, why| tried(from, CredentialSourceError::NotConfigured(why));
        match (env.get("AWS_ACCESS_KEY_ID"), env.get("AWS_SECRET_ACCESS_KEY")) {
            (Some(id), Some(secret)) => return Ok(Credentials::from_env(id, secret, env.get("AWS_SESSION_TOKEN"))),
            (Some(_), None) => tried_sources.push(not_configured(
                "environment",
                "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not",
            )),
            _ => tried_sources.push(not_configured(
                "environment",
                "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set",
            )),
        }
        match (env.get("AWS_WEB_IDENTITY_TOKEN_FILE"), env.get("AWS_ROLE_ARN")) {
            (Some(file), Some(role)) => {
                let session = env.get("AWS_ROLE_SESSION_NAME");
                return self
                    .web_identity(env, file, role, session)
                    .await
                    .map_err(|source| failed(format!("web identity (AWS_ROLE_ARN {role})"), source));
            }
            (Some(_), None) => tried_sources.push(not_configured(
                "web identity",
                "AWS_WEB_IDENTITY_TOKEN_FILE is set but AWS_ROLE_ARN is not",
            )),
            _ => tried_sources.push(not_configured(
                "web identity",
                "AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN are not set",
            )),
        }
        self.profile_or_instance(env, &files, "default", false, tried_sources)
            .await
    }

    /// A profile's credentials; without any, the container's, then the instance's.
    async fn profile_or_instance(
        &self,
        env: &Env<'_>,
        files: &ProfileFiles,
        name: &str,
        named: bool,
        mut tried_sources: Vec<Tried>,
    ) -> Result<Credentials, CredentialsError> {
        match files.get(name) {
            Some(p) if has_credentials(p) => {
                return self
                    .profile(env, files, name, 0)
                    .await
                    .map_err(|source| failed(format!("profile {name} ({})", files.describe()), source));
            }
            Some(p) if p.contains_key("credential_process") || p.keys().any(|k| k.starts_with("sso_")) => {
                return Err(failed(
                    format!("profile {name} ({})", files.describe()),
                    CredentialSourceError::UnsupportedProfile,
                ));
            }
            Some(_) => tried_sources.push(tried(
                "shared files",
                CredentialSourceError::NoProfileCredentials {
                    name: name.to_string(),
                    files: files.describe(),
                },
            )),
            None => {
                let missing = CredentialSourceError::NoSuchProfile {
                    name: name.to_string(),
                    files: files.describe(),
                };
                if named {
                    return Err(failed(format!("profile {name}"), missing));
                }
                tried_sources.push(tried("shared files", missing));
            }
        }
        if env.get("AWS_CONTAINER_CREDENTIALS_FULL_URI").is_some()
            || env.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI").is_some()
        {
            return self
                .container(env)
                .await
                .map_err(|source| failed("container credentials", source));
        }
        tried_sources.push(tried(
            "container",
            CredentialSourceError::NotConfigured(
                "AWS_CONTAINER_CREDENTIALS_FULL_URI and AWS_CONTAINER_CREDENTIALS_RELATIVE_URI are not set",
            ),
        ));
        let endpoint = env.get("AWS_EC2_METADATA_SERVICE_ENDPOINT").unwrap_or(IMDS);
        if env
            .get("AWS_EC2_METADATA_DISABLED")
            .is_some_and(|v| v.eq_ignore_ascii_case("true"))
        {
            tried_sources.push(tried(
                "instance metadata",
                CredentialSourceError::NotConfigured("disabled by AWS_EC2_METADATA_DISABLED"),
            ));
            return Err(CredentialsError::NotFound(tried_sources));
        }
        match self.instance(endpoint).await {
            Ok(c) => Ok(c),
            Err(source) => {
                tried_sources.push(tried(format!("instance metadata ({endpoint})"), source));
                Err(CredentialsError::NotFound(tried_sources))
            }
        }
    }

    /// A profile that has credentials: static keys, or a role assumed with its source's.
    async fn profile(
        &self,
        env: &Env<'_>,
        files: &ProfileFiles,
        name: &str,
        depth: u8,
    ) -> Result<Credentials, CredentialSourceError> {
        let p = files.get(name).ok_or_else(|| CredentialSourceError::NoSuchProfile {
            name: name.to_string(),
            files: files.describe(),
        })?;
        let Some(role) = p.get("role_arn") else {
            return match (p.get("aws_access_key_id"), p.get("aws_secret_access_key")) {
                (Some(id), Some(secret)) => Ok(Credentials::from_env(
                    id,
                    secret,
                    p.get("aws_session_token").map(String::as_str),
                )),
                _ => Err(CredentialSourceError::NoKeys(name.to_string())),
            };
        };
        let session = p.get("role_session_name").map(String::as_str);
        if let Some(file) = p.get("web_identity_token_file") {
            return self.web_identity(env, file, role, session).await;
        }
        let source = if let Some(source) = p.get("source_profile") {
            if depth >= MAX_PROFILE_DEPTH {
                return Err(CredentialSourceError::ProfileChainTooLong(name.to_string()));
            }
            // A profile that is its own source uses its own static keys.
            if source == name {
                let mut keys_only = files.get(name).cloned().unwrap_or_default();
                keys_only.remove("role_arn");
                let single = ProfileFiles {
                    profiles: BTreeMap::from([(name.to_string(), keys_only)]),
                    paths: files.paths.clone(),
                };
                Box::pin(self.profile(env, &single, name, depth + 1)).await?
            } else {
                Box::pin(self.profile(env, files, source, depth + 1)).await?
            }
        } else {
            match p.get("credential_source").map(String::as_str) {
                Some("Environment") => match (env.get("AWS_ACCESS_KEY_ID"), env.get("AWS_SECRET_ACCESS_KEY")) {
                    (Some(id), Some(secret)) => Credentials::from_env(id, secret, env.get("AWS_SESSION_TOKEN")),
                    _ => {
                        return Err(CredentialSourceError::NotConfigured(
                            "credential_source Environment: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set",
                        ));
                    }
                },
                Some("EcsContainer") => self.container(env).await?,
                Some("Ec2InstanceMetadata") => {
                    self.instance(env.get("AWS_EC2_METADATA_SERVICE_ENDPOINT").unwrap_or(IMDS))
                        .await?
                }
                Some(other) => return Err(CredentialSourceError::UnknownCredentialSource(other.to_string())),
                None => return Err(CredentialSourceError::NoRoleSource(name.to_string())),
            }
        };
        self.assume_role(env, &source, role, p.get("external_id").map(String::as_str), session)
            .await
    }

    /// STS `AssumeRole`, signed with `base`.
    async fn assume_role(
        &self,
        env: &Env<'_>,
        base: &Credentials,
        role_arn: &str,
        external_id: Option<&str>,
        session: Option<&str>,
    ) -> Result<Credentials, CredentialSourceError> {
        let session = session.map_or_else(session_name, str::to_string);
        let mut form = vec![
            ("Action", "AssumeRole"),
            ("Version", "2011-06-15"),
            ("RoleArn", role_arn),
            ("RoleSessionName", session.as_str()),
        ];
        if let Some(id) = external_id {
            form.push(("ExternalId", id));
        }
        self.sts(env, &form, Some(base)).await
    }

    /// STS `AssumeRoleWithWebIdentity` with the token in `file` (read again at each refresh: the kubelet
    /// rotates it). The call is not signed.
    async fn web_identity(
        &self,
        env: &Env<'_>,
        file: &str,
        role_arn: &str,
        session: Option<&str>,
    ) -> Result<Credentials, CredentialSourceError> {
        let token = read_file("the token file", file)?;
        let session = session.map_or_else(session_name, str::to_string);
        let form = [
            ("Action", "AssumeRoleWithWebIdentity"),
            ("Version", "2011-06-15"),
            ("RoleArn", role_arn),
            ("RoleSessionName", session.as_str()),
            ("WebIdentityToken", token.trim()),
        ];
        self.sts(env, &form, None).await
    }

    async fn sts(
        &self,
        env: &Env<'_>,
        form: &[(&str, &str)],
        signer: Option<&Credentials>,
    ) -> Result<Credentials, CredentialSourceError> {
        let url = format!("{}/", env.sts_endpoint());
        let endpoint = format!("STS at {url}");
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        const FORM: &str = "application/x-www-form-urlencoded; charset=utf-8";
        let mut request = self.http.request(Method::POST, &url).header("content-type", FORM);
        if let Some(c) = signer {
            let region = env.region();
            let headers = sign::headers(
                &sign::identity(c),
                region,
                "sts",
                "POST",
                &url,
                &[("content-type", FORM)],
                body.as_bytes(),
            )
            .map_err(CredentialSourceError::Sign)?;
            for (k, v) in headers {
                request = request.header(k, v);
            }
        }
        let failed_request = |source| CredentialSourceError::Request {
            endpoint: endpoint.clone(),
            source,
        };
        let response = request.body(body).send().await.map_err(failed_request)?;
        let status = response.status();
        let text = response.text().await.map_err(failed_request)?;
        if !status.is_success() {
            let code = element(&text, "Code").unwrap_or_default();
            let message = element(&text, "Message").unwrap_or_default();
            return Err(CredentialSourceError::Status {
                endpoint,
                status: status.as_u16(),
                detail: format!("{code}: {message}"),
            });
        }
        let get = |field: &'static str| {
            element(&text, field).ok_or_else(|| CredentialSourceError::MissingField {
                endpoint: endpoint.clone(),
                field,
            })
        };
        let expiration = get("Expiration")?;
        Ok(Credentials {
            access_key_id: get("AccessKeyId")?,
            secret_access_key: get("SecretAccessKey")?,
            session_token: Some(get("SessionToken")?),
            expires: Some(
                parse_time(&expiration).ok_or_else(|| CredentialSourceError::Expiration {
                    endpoint: endpoint.clone(),
                    value: expiration.clone(),
                })?,
            ),
        })
    }

    /// ECS and EKS Pod Identity: GET the agent's URI with the authorization token.
    async fn container(&self, env: &Env<'_>) -> Result<Credentials, CredentialSourceError> {
        let uri = match (
            env.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"),
            env.get("AWS_CONTAINER_CREDENTIALS_FULL_URI"),
        ) {
            (Some(relative), _) => format!("{ECS}{relative}"),
            (None, Some(full)) => {
                check_container_uri(full)?;
                full.to_string()
            }
            (None, None) => {
                return Err(CredentialSourceError::NotConfigured(
                    "AWS_CONTAINER_CREDENTIALS_FULL_URI and _RELATIVE_URI are not set",
                ));
            }
        };
        let token = match (
            env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"),
            env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN"),
        ) {
            (Some(file), _) => Some(
                read_file("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", file)?
                    .trim()
                    .to_string(),
            ),
            (None, token) => token.map(str::to_string),
        };
        let mut request = self.http.get(&uri);
        if let Some(t) = token {
            request = request.header("authorization", t);
        }
        let failed_request = |source| CredentialSourceError::Request {
            endpoint: uri.clone(),
            source,
        };
        let response = request.send().await.map_err(failed_request)?;
        let status = response.status();
        let text = response.text().await.map_err(failed_request)?;
        if !status.is_success() {
            return Err(CredentialSourceError::Status {
                endpoint: uri,
                status: status.as_u16(),
                detail: text.trim().to_string(),
            });
        }
        json_credentials(&uri, &text)
    }

    /// IMDSv2: a session token (PUT), the instance profile's role name, then its credentials.
    async fn instance(&self, endpoint: &str) -> Result<Credentials, CredentialSourceError> {
        let base = endpoint.trim_end_matches('/');
        let token_url = format!("{base}/latest/api/token");
        let failed_request = |url: &str| {
            let endpoint = url.to_string();
            move |source| CredentialSourceError::Request { endpoint, source }
        };
        let response = self
            .metadata
            .request(Method::PUT, &token_url)
            .header("x-aws-ec2-metadata-token-ttl-seconds", "21600")
            .send()
            .await
            .map_err(failed_request(&token_url))?;
        if !response.status().is_success() {
            return Err(CredentialSourceError::Status {
                endpoint: token_url,
                status: response.status().as_u16(),
                detail: String::new(),
            });
        }
        let token = response.text().await.map_err(failed_request(&token_url))?;
        let roles_url = format!("{base}/latest/meta-data/iam/security-credentials/");
        let get = |url: String| {
            let token = token.trim().to_string();
            async move {
                let response = self
                    .metadata
                    .get(&url)
                    .header("x-aws-ec2-metadata-token", token)
                    .send()
                    .await
                    .map_err(failed_request(&url))?;
                let status = response.status();
                let text = response.text().await.map_err(failed_request(&url))?;
                match status.as_u16() {
                    200 => Ok((url, text)),
                    404 => Err(CredentialSourceError::NoInstanceProfile { url }),
                    s => Err(CredentialSourceError::Status {
                        endpoint: url,
                        status: s,
                        detail: String::new(),
                    }),
                }
            }
        };
        let (roles_url, roles) = get(roles_url).await?;
        let role = roles
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .ok_or_else(|| CredentialSourceError::NoRole { url: roles_url.clone() })?;
        let (url, text) = get(format!("{roles_url}{role}")).await?;
        json_credentials(&url, &text)
    }
}

fn has_credentials(p: &Profile) -> bool {
    p.contains_key("aws_access_key_id") || p.contains_key("role_arn")
}

/// The text of a file the chain names (`what` says which).
fn read_file(what: &'static str, path: &str) -> Result<String, CredentialSourceError> {
    std::fs::read_to_string(path).map_err(|source| CredentialSourceError::Read {
        what,
        path: PathBuf::from(path),
        source,
    })
}

/// An http container URI must stay on the host or go to the ECS or EKS agent: the token must not leave.
fn check_container_uri(full: &str) -> Result<(), CredentialSourceError> {
    let url = Url::parse(full).map_err(|source| CredentialSourceError::InvalidUri {
        uri: full.to_string(),
        source,
    })?;
    if url.scheme() == "https" {
        return Ok(());
    }
    let allowed = match url.host() {
        Some(url::Host::Ipv4(ip)) => {
            ip.is_loopback() || ip.octets() == [169, 254, 170, 2] || ip.octets() == [169, 254, 170, 23]
        }
        Some(url::Host::Ipv6(ip)) => ip.is_loopback() || ip.segments() == [0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x23],
        Some(url::Host::Domain(d)) => d == "localhost",
        None => false,
    };
    if url.scheme() == "http" && allowed {
        Ok(())
    } else {
        Err(CredentialSourceError::UnsafeUri { uri: full.to_string() })
    }
}

/// `extdns-<unix seconds>`: a session name CloudTrail shows, unique per refresh.
fn session_name() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!("extdns-{secs}")
}

/// The container and instance endpoints' document.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct JsonCredentials {
    access_key_id: String,
    secret_access_key: String,
    token: Option<String>,
    expiration: Option<String>,
    code: Option<String>,
}

/// The credentials in the document `url` answered.
fn json_credentials(url: &str, text: &str) -> Result<Credentials, CredentialSourceError> {
    let c: JsonCredentials = serde_json::from_str(text).map_err(|source| CredentialSourceError::Json {
        url: url.to_string(),
        source,
    })?;
    if let Some(code) = c.code.filter(|c| c != "Success") {
        return Err(CredentialSourceError::NotAvailable {
            url: url.to_string(),
            code,
        });
    }
    let expires = match c.expiration {
        Some(t) => Some(parse_time(&t).ok_or_else(|| CredentialSourceError::Expiration {
            endpoint: url.to_string(),
            value: t.clone(),
        })?),
        None => None,
    };
    Ok(Credentials {
        access_key_id: c.access_key_id,
        secret_access_key: c.secret_access_key,
        session_token: c.token,
        expires,
    })
}

/// The text of the first `<name>` element, XML entities decoded.
fn element(xml: &str, name: &str) -> Option<String> {
    let open = format!("<{name}>");
    let start = xml.find(&open)? + open.len();
    let end = start + xml[start..].find(&format!("</{name}>"))?;
    quick_xml::escape::unescape(xml[start..end].trim())
        .ok()
        .map(|s| s.into_owned())
}

/// An RFC 3339 UTC time as AWS writes expirations (`2026-11-25T01:02:03Z`, fractions and `+00:00` too).
fn parse_time(text: &str) -> Option<SystemTime> {
    let t = text.trim();
    let (date, time) = t.split_once(['T', 't', ' '])?;
    let mut d = date.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let time = time
        .strip_suffix(['Z', 'z'])
        .or_else(|| time.strip_suffix("+00:00"))
        .unwrap_or(time);
    let mut parts = time.splitn(3, ':');
    let (h, min) = (parts.next()?.parse::<i64>().ok()?, parts.next()?.parse::<i64>().ok()?);
    let secs: f64 = parts.next()?.parse().ok()?;
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) || h > 23 || min > 59 || !(0.0..61.0).contains(&secs) {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let whole = u64::try_from(days * 86_400 + h * 3600 + min * 60).ok()?;
    Some(UNIX_EPOCH + Duration::from_secs(whole) + Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expirations_are_read_as_aws_writes_them() {
        let at = |s: &str| {
            parse_time(s)
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map(|d| d.as_secs_f64())
        };
        assert_eq!(at("1970-01-01T00:00:00Z"), Some(0.0));
        assert_eq!(at("2026-11-25T01:02:03Z"), Some(1_795_568_523.0));
        assert_eq!(at("2026-11-25T01:02:03.5Z"), Some(1_795_568_523.5));
        assert_eq!(at("2024-02-29T00:00:00+00:00"), Some(1_709_164_800.0));
        assert_eq!(at("2026-13-01T00:00:00Z"), None);
        assert_eq!(at("yesterday"), None);
    }

    #[test]
    fn sts_answers_are_read_and_entities_decoded() {
        let xml = "<AssumeRoleResponse><AssumeRoleResult><Credentials><AccessKeyId>ASIA1</AccessKeyId>\
                   <SecretAccessKey>a&amp;b</SecretAccessKey></Credentials></AssumeRoleResult></AssumeRoleResponse>";
        assert_eq!(element(xml, "AccessKeyId").as_deref(), Some("ASIA1"));
        assert_eq!(element(xml, "SecretAccessKey").as_deref(), Some("a&b"));
        assert_eq!(element(xml, "SessionToken"), None);
    }

    #[test]
    fn container_uris_keep_the_token_on_the_host_or_the_agent() {
        for ok in [
            "http://127.0.0.1:8080/creds",
            "http://localhost/x",
            "http://169.254.170.23/v1/credentials",
            "http://[fd00:ec2::23]/v1/credentials",
            "https://example.com/creds",
        ] {
            assert!(check_container_uri(ok).is_ok(), "{ok}");
        }
        for bad in ["http://example.com/creds", "ftp://127.0.0.1/", "not a url"] {
            assert!(check_container_uri(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_container_document_needs_keys_and_a_success_code() {
        let url = "http://127.0.0.1/creds";
        let c = json_credentials(
            url,
            r#"{"Code":"Success","AccessKeyId":"A","SecretAccessKey":"S","Token":"T","Expiration":"2030-01-01T00:00:00Z"}"#,
        )
        .expect("credentials");
        assert_eq!((c.access_key_id.as_str(), c.session_token.as_deref()), ("A", Some("T")));
        assert!(c.expires.is_some());
        let refused = json_credentials(url, r#"{"Code":"Failure","AccessKeyId":"A","SecretAccessKey":"S"}"#);
        assert!(
            matches!(&refused, Err(CredentialSourceError::NotAvailable { code, .. }) if code == "Failure"),
            "{refused:?}"
        );
        assert!(json_credentials(url, r#"{"AccessKeyId":"A"}"#).is_err());
    }

    #[test]
    fn an_unreadable_document_keeps_the_json_error_as_its_cause() {
        let url = "http://127.0.0.1/creds";
        let Err(e) = json_credentials(url, r#"{"AccessKeyId":"A"}"#) else {
            panic!("a document without SecretAccessKey is refused");
        };
        let text = e.to_string();
        assert!(text.contains(url) && text.contains("SecretAccessKey"), "{text}");
        let cause = std::error::Error::source(&e).and_then(|c| c.downcast_ref::<serde_json::Error>());
        assert!(cause.is_some_and(|c| c.is_data()), "{e:?}");

        // Through the chain's own error, the cause is still there, one level further down.
        let failed = failed("container credentials", e);
        assert!(
            failed
                .to_string()
                .starts_with("AWS credentials from container credentials: "),
            "{failed}"
        );
        let source = std::error::Error::source(&failed).and_then(|s| s.downcast_ref::<CredentialSourceError>());
        assert!(matches!(source, Some(CredentialSourceError::Json { .. })), "{failed:?}");
    }

    #[test]
    fn a_bad_container_uri_keeps_the_parse_error_and_a_missing_file_the_io_error() {
        let Err(e) = check_container_uri("not a url") else {
            panic!("not a URL");
        };
        let cause = std::error::Error::source(&e).and_then(|c| c.downcast_ref::<url::ParseError>());
        assert_eq!(cause, Some(&url::ParseError::RelativeUrlWithoutBase), "{e:?}");
        assert!(matches!(
            check_container_uri("http://example.com/creds"),
            Err(CredentialSourceError::UnsafeUri { .. })
        ));

        let missing = "/nonexistent/extdns/token";
        let Err(e) = read_file("the token file", missing) else {
            panic!("{missing} exists");
        };
        assert!(
            e.to_string()
                .starts_with(&format!("cannot read the token file {missing}: ")),
            "{e}"
        );
        let cause = std::error::Error::source(&e).and_then(|c| c.downcast_ref::<std::io::Error>());
        assert_eq!(
            cause.map(std::io::Error::kind),
            Some(std::io::ErrorKind::NotFound),
            "{e:?}"
        );
    }

    #[test]
    fn an_empty_chain_lists_each_source_with_its_typed_reason() {
        let e = CredentialsError::NotFound(vec![
            tried(
                "environment",
                CredentialSourceError::NotConfigured("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set"),
            ),
            tried(
                "instance metadata (http://127.0.0.1:1)",
                CredentialSourceError::Status {
                    endpoint: "http://127.0.0.1:1/latest/api/token".into(),
                    status: 403,
                    detail: String::new(),
                },
            ),
        ]);
        assert_eq!(
            e.to_string(),
            "no AWS credentials; tried environment: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set; \
             instance metadata (http://127.0.0.1:1): http://127.0.0.1:1/latest/api/token: HTTP 403"
        );
        let CredentialsError::NotFound(sources) = &e else {
            panic!("{e:?}");
        };
        let last = sources.last().and_then(std::error::Error::source);
        assert!(
            last.and_then(|s| s.downcast_ref::<CredentialSourceError>())
                .is_some_and(|s| matches!(s, CredentialSourceError::Status { status: 403, .. })),
            "{e:?}"
        );
    }

    #[test]
    fn the_sts_endpoint_follows_the_variables_and_the_region() {
        let env = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>()
        };
        assert_eq!(Env(&env(&[])).sts_endpoint(), "https://sts.us-east-1.amazonaws.com");
        assert_eq!(
            Env(&env(&[("AWS_REGION", "cn-north-1")])).sts_endpoint(),
            "https://sts.cn-north-1.amazonaws.com.cn"
        );
        assert_eq!(
            Env(&env(&[
                ("AWS_ENDPOINT_URL", "http://a:1/"),
                ("AWS_ENDPOINT_URL_STS", "http://b:2")
            ]))
            .sts_endpoint(),
            "http://b:2"
        );
    }
}
