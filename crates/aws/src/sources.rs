//! The AWS credential chain's sources, in the order the Go SDK v2 (external-dns's) tries them, and the
//! chain they make.
//!
//! Without a named profile: environment keys, web identity (IRSA), the `default` profile of the shared
//! files, container credentials (ECS, EKS Pod Identity), the instance profile (IMDSv2). With one
//! (`--aws-profile`, `AWS_PROFILE`): that profile only, then container and instance credentials.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use extdns_provider::credentials::{Chain, Miss, Source};

use crate::calls::{Calls, IMDS, TOKEN_PATH};
use crate::error::{CredentialSourceError, MAX_PROFILE_DEPTH};
use crate::keys::Credentials;
use crate::profile::{Profile, ProfileFiles};

/// How the chain's error begins.
pub(crate) const HEADLINE: &str = "no AWS credentials";

/// The chain over `calls`' environment and the shared `files`, reading `profile` if one is named.
pub(crate) fn chain(
    calls: &Arc<Calls>,
    files: ProfileFiles,
    profile: Option<&str>,
) -> Chain<Credentials, CredentialSourceError> {
    let files = Arc::new(files);
    let named = profile.or_else(|| calls.env.get("AWS_PROFILE"));
    let profile = |name: &str, named| SharedProfile {
        calls: calls.clone(),
        files: files.clone(),
        name: name.to_string(),
        named,
    };
    let chain = Chain::new(HEADLINE);
    let chain = match named {
        Some(name) => chain.then(profile(name, true)),
        None => chain
            .then(Environment(calls.clone()))
            .then(WebIdentity(calls.clone()))
            .then(profile("default", false)),
    };
    chain.then(Container(calls.clone())).then(Instance(calls.clone()))
}

/// `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` (and `AWS_SESSION_TOKEN`).
struct Environment(Arc<Calls>);

#[async_trait]
impl Source<Credentials> for Environment {
    type Error = CredentialSourceError;

    fn name(&self) -> String {
        "environment".into()
    }

    async fn fetch(&self) -> Result<Credentials, Miss<CredentialSourceError>> {
        let env = &self.0.env;
        match (env.get("AWS_ACCESS_KEY_ID"), env.get("AWS_SECRET_ACCESS_KEY")) {
            (Some(id), Some(secret)) => Ok(Credentials::with_token(id, secret, env.get("AWS_SESSION_TOKEN"))),
            (Some(_), None) => Err(not_configured(
                "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not",
            )),
            _ => Err(not_configured(
                "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set",
            )),
        }
    }
}

/// `AWS_ROLE_ARN` and `AWS_WEB_IDENTITY_TOKEN_FILE` → STS `AssumeRoleWithWebIdentity`.
struct WebIdentity(Arc<Calls>);

#[async_trait]
impl Source<Credentials> for WebIdentity {
    type Error = CredentialSourceError;

    fn name(&self) -> String {
        match self.0.env.get("AWS_ROLE_ARN") {
            Some(role) if self.0.env.get("AWS_WEB_IDENTITY_TOKEN_FILE").is_some() => {
                format!("web identity (AWS_ROLE_ARN {role})")
            }
            _ => "web identity".into(),
        }
    }

    async fn fetch(&self) -> Result<Credentials, Miss<CredentialSourceError>> {
        let env = &self.0.env;
        match (env.get("AWS_WEB_IDENTITY_TOKEN_FILE"), env.get("AWS_ROLE_ARN")) {
            (Some(file), Some(role)) => self
                .0
                .web_identity(file, role, env.get("AWS_ROLE_SESSION_NAME"))
                .await
                .map_err(Miss::Failed),
            (Some(_), None) => Err(not_configured(
                "AWS_WEB_IDENTITY_TOKEN_FILE is set but AWS_ROLE_ARN is not",
            )),
            _ => Err(not_configured(
                "AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN are not set",
            )),
        }
    }
}

/// A profile of the shared files: static keys, or a role assumed with its source's credentials.
struct SharedProfile {
    calls: Arc<Calls>,
    files: Arc<ProfileFiles>,
    name: String,
    /// Named by `--aws-profile` or `AWS_PROFILE`: missing, it is an error rather than passed over.
    named: bool,
}

#[async_trait]
impl Source<Credentials> for SharedProfile {
    type Error = CredentialSourceError;

    fn name(&self) -> String {
        match (self.files.get(&self.name), self.named) {
            (Some(_), _) => format!("profile {} ({})", self.name, self.files.describe()),
            (None, true) => format!("profile {}", self.name),
            (None, false) => "shared files".into(),
        }
    }

    async fn fetch(&self) -> Result<Credentials, Miss<CredentialSourceError>> {
        let (name, files) = (self.name.as_str(), self.files.as_ref());
        match files.get(name) {
            Some(p) if has_credentials(p) => profile(&self.calls, files, name, 0).await.map_err(Miss::Failed),
            Some(p) if p.contains_key("credential_process") || p.keys().any(|k| k.starts_with("sso_")) => {
                Err(Miss::Failed(CredentialSourceError::UnsupportedProfile))
            }
            Some(_) => Err(Miss::NotConfigured(CredentialSourceError::NoProfileCredentials {
                name: name.to_string(),
                files: files.describe(),
            })),
            None => {
                let missing = CredentialSourceError::NoSuchProfile {
                    name: name.to_string(),
                    files: files.describe(),
                };
                Err(if self.named {
                    Miss::Failed(missing)
                } else {
                    Miss::NotConfigured(missing)
                })
            }
        }
    }
}

/// `AWS_CONTAINER_CREDENTIALS_FULL_URI` or `_RELATIVE_URI`: ECS and EKS Pod Identity.
struct Container(Arc<Calls>);

impl Container {
    fn configured(&self) -> bool {
        let env = &self.0.env;
        env.get("AWS_CONTAINER_CREDENTIALS_FULL_URI").is_some()
            || env.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI").is_some()
    }
}

#[async_trait]
impl Source<Credentials> for Container {
    type Error = CredentialSourceError;

    fn name(&self) -> String {
        if self.configured() {
            "container credentials".into()
        } else {
            "container".into()
        }
    }

    async fn fetch(&self) -> Result<Credentials, Miss<CredentialSourceError>> {
        if !self.configured() {
            return Err(not_configured(
                "AWS_CONTAINER_CREDENTIALS_FULL_URI and AWS_CONTAINER_CREDENTIALS_RELATIVE_URI are not set",
            ));
        }
        self.0.container().await.map_err(Miss::Failed)
    }
}

/// The instance profile, from IMDSv2 (`AWS_EC2_METADATA_SERVICE_ENDPOINT`, else 169.254.169.254).
struct Instance(Arc<Calls>);

impl Instance {
    fn disabled(&self) -> bool {
        self.0
            .env
            .get("AWS_EC2_METADATA_DISABLED")
            .is_some_and(|v| v.eq_ignore_ascii_case("true"))
    }

    fn endpoint(&self) -> &str {
        self.0.env.get("AWS_EC2_METADATA_SERVICE_ENDPOINT").unwrap_or(IMDS)
    }

    /// Whether something asked for the metadata service (its endpoint variable), rather than the chain
    /// trying its default address.
    fn configured(&self) -> bool {
        self.0.env.get("AWS_EC2_METADATA_SERVICE_ENDPOINT").is_some()
    }
}

/// What a failed instance-metadata fetch says to the chain. Off EC2 nothing answers at the default
/// address, as the SDKs expect: when nothing configured the service, no connection for the first call (the
/// token PUT) means no instance profile here (not configured, so the chain reports no credentials), not a
/// failure that would read as transient and be retried for ever. Once the service answered that, it is
/// there: a later call that gets no answer is the source's transient failure, as is any other failure or
/// no answer from a configured endpoint.
fn instance_miss(configured: bool, error: CredentialSourceError) -> Miss<CredentialSourceError> {
    match error {
        CredentialSourceError::Request { endpoint, source }
            if !configured && endpoint.ends_with(TOKEN_PATH) && (source.is_connect() || source.is_timeout()) =>
        {
            Miss::NotConfigured(CredentialSourceError::Request { endpoint, source })
        }
        e => Miss::Failed(e),
    }
}

#[async_trait]
impl Source<Credentials> for Instance {
    type Error = CredentialSourceError;

    fn name(&self) -> String {
        if self.disabled() {
            "instance metadata".into()
        } else {
            format!("instance metadata ({})", self.endpoint())
        }
    }

    async fn fetch(&self) -> Result<Credentials, Miss<CredentialSourceError>> {
        if self.disabled() {
            return Err(not_configured("disabled by AWS_EC2_METADATA_DISABLED"));
        }
        let configured = self.configured();
        self.0
            .instance(self.endpoint())
            .await
            .map_err(|e| instance_miss(configured, e))
    }
}

fn not_configured(why: &'static str) -> Miss<CredentialSourceError> {
    Miss::NotConfigured(CredentialSourceError::NotConfigured(why))
}

fn has_credentials(p: &Profile) -> bool {
    p.contains_key("aws_access_key_id") || p.contains_key("role_arn")
}

/// A profile that has credentials: static keys, or a role assumed with its source's (another profile, up
/// to [`MAX_PROFILE_DEPTH`] deep, a `credential_source` or a `web_identity_token_file`).
async fn profile(
    calls: &Calls,
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
            (Some(id), Some(secret)) => Ok(Credentials::with_token(
                id,
                secret,
                p.get("aws_session_token").map(String::as_str),
            )),
            _ => Err(CredentialSourceError::NoKeys(name.to_string())),
        };
    };
    let session = p.get("role_session_name").map(String::as_str);
    if let Some(file) = p.get("web_identity_token_file") {
        return calls.web_identity(file, role, session).await;
    }
    let env = &calls.env;
    let source = if let Some(source) = p.get("source_profile") {
        if depth >= MAX_PROFILE_DEPTH {
            return Err(CredentialSourceError::ProfileChainTooLong(name.to_string()));
        }
        // A profile that is its own source uses its own static keys.
        if source == name {
            let mut keys_only = p.clone();
            keys_only.remove("role_arn");
            let single = ProfileFiles {
                profiles: BTreeMap::from([(name.to_string(), keys_only)]),
                paths: files.paths.clone(),
            };
            Box::pin(profile(calls, &single, name, depth + 1)).await?
        } else {
            Box::pin(profile(calls, files, source, depth + 1)).await?
        }
    } else {
        match p.get("credential_source").map(String::as_str) {
            Some("Environment") => match (env.get("AWS_ACCESS_KEY_ID"), env.get("AWS_SECRET_ACCESS_KEY")) {
                (Some(id), Some(secret)) => Credentials::with_token(id, secret, env.get("AWS_SESSION_TOKEN")),
                _ => {
                    return Err(CredentialSourceError::NotConfigured(
                        "credential_source Environment: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set",
                    ));
                }
            },
            Some("EcsContainer") => calls.container().await?,
            Some("Ec2InstanceMetadata") => {
                calls
                    .instance(env.get("AWS_EC2_METADATA_SERVICE_ENDPOINT").unwrap_or(IMDS))
                    .await?
            }
            Some(other) => return Err(CredentialSourceError::UnknownCredentialSource(other.to_string())),
            None => return Err(CredentialSourceError::NoRoleSource(name.to_string())),
        }
    };
    calls
        .assume_role(&source, role, p.get("external_id").map(String::as_str), session)
        .await
}

#[cfg(test)]
mod tests {
    use extdns_provider::credentials::FetchError;

    use super::*;

    async fn unanswered() -> CredentialSourceError {
        CredentialSourceError::Request {
            endpoint: extdns_test_support::UNANSWERED_URL.into(),
            source: extdns_test_support::unanswered_request().await,
        }
    }

    #[tokio::test]
    async fn no_answer_at_the_default_metadata_address_is_no_instance_profile_not_a_failure() {
        assert!(matches!(
            instance_miss(false, unanswered().await),
            Miss::NotConfigured(_)
        ));
        let later_call = CredentialSourceError::Request {
            endpoint: format!("{IMDS}/latest/meta-data/iam/security-credentials/"),
            source: extdns_test_support::unanswered_request().await,
        };
        assert!(
            matches!(instance_miss(false, later_call), Miss::Failed(e) if e.is_transient()),
            "once the service gave a token it is there: a later call without an answer is transient"
        );
        let configured = instance_miss(true, unanswered().await);
        assert!(
            matches!(&configured, Miss::Failed(e) if e.is_transient()),
            "a configured endpoint that does not answer is a transient failure"
        );
        let refused = CredentialSourceError::Status {
            endpoint: IMDS.into(),
            status: 403,
            detail: String::new(),
        };
        assert!(matches!(instance_miss(false, refused), Miss::Failed(_)));
    }
}
