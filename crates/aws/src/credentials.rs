//! Where AWS credentials come from: the AWS credential chain, in the order external-dns's SDK (the Go SDK v2)
//! resolves it ([`crate::sources`]), then `--aws-assume-role`; kept until shortly before they expire.
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
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use extdns_provider::HttpClient;
use extdns_provider::credentials::{CredentialCache, Fetch, Margin, NoCredentials, Tried, capture_env};
use extdns_provider::http::{HttpError, Observer};

use crate::calls::{Calls, Env};
use crate::error::CredentialSourceError;
use crate::keys::Credentials;
use crate::profile::ProfileFiles;
use crate::sources::{self, HEADLINE};

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

/// Why no credentials came: every source tried, and why each gave nothing.
pub type CredentialsError = NoCredentials<CredentialSourceError>;

/// A role to assume with whatever the chain resolved (`--aws-assume-role`, `--aws-assume-role-external-id`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssumeRole {
    /// The role to assume (`--aws-assume-role`).
    pub role_arn: String,
    /// `--aws-assume-role-external-id`, when the role's trust policy asks for one.
    pub external_id: Option<String>,
}

impl AssumeRole {
    /// The role as its two flags give it: none when the role is blank, an external id only when one is given.
    pub fn from_flags(role_arn: &str, external_id: &str) -> Option<AssumeRole> {
        let (role, external_id) = (role_arn.trim(), external_id.trim());
        (!role.is_empty()).then(|| AssumeRole {
            role_arn: role.to_string(),
            external_id: (!external_id.is_empty()).then(|| external_id.to_string()),
        })
    }
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
        CredentialSource::Chain {
            env: capture_env(VARIABLES, var),
            profile,
        }
    }
}

/// The credentials of `source`, then `assume_role`, kept until `refresh_before` their expiry; requests time
/// out after `timeout` and are reported to `observer`.
pub(crate) fn cache(
    source: CredentialSource,
    assume_role: Option<AssumeRole>,
    refresh_before: Duration,
    timeout: Duration,
    observer: &Observer,
) -> Result<CredentialCache<Credentials, CredentialSourceError>, HttpError> {
    let http = HttpClient::builder().timeout(timeout).observed_by(observer).build()?;
    let metadata = HttpClient::metadata_builder(observer, Duration::from_secs(2)).build()?;
    let (env, fixed, profile) = match source {
        CredentialSource::Static(c) => (BTreeMap::new(), Some(c), None),
        CredentialSource::Chain { env, profile } => (env, None, profile),
    };
    let resolver = Resolver {
        calls: Arc::new(Calls {
            env: Env(env),
            http,
            metadata,
        }),
        fixed,
        profile,
        assume_role,
    };
    Ok(CredentialCache::new(resolver, Margin::fixed(refresh_before)))
}

/// The chain (or fixed keys), then the role to assume with what it gave.
struct Resolver {
    calls: Arc<Calls>,
    /// [`CredentialSource::Static`]'s keys, used instead of the chain.
    fixed: Option<Credentials>,
    profile: Option<String>,
    assume_role: Option<AssumeRole>,
}

impl Resolver {
    async fn base(&self) -> Result<Credentials, CredentialsError> {
        if let Some(c) = &self.fixed {
            return Ok(c.clone());
        }
        // Read at every refresh, as the SDKs do; a file that exists but cannot be read stops the chain.
        let files = ProfileFiles::load(&|k| self.calls.env.get(k).map(str::to_string)).map_err(|(path, source)| {
            failed(
                "the shared files",
                CredentialSourceError::Read {
                    what: "the shared file",
                    path,
                    source,
                },
            )
        })?;
        sources::chain(&self.calls, files, self.profile.as_deref())
            .first()
            .await
    }
}

#[async_trait]
impl Fetch<Credentials, CredentialSourceError> for Resolver {
    async fn fetch(&self) -> Result<Credentials, CredentialsError> {
        let base = self.base().await?;
        let Some(role) = &self.assume_role else {
            return Ok(base);
        };
        self.calls
            .assume_role(&base, &role.role_arn, role.external_id.as_deref(), None)
            .await
            .map_err(|source| failed(format!("--aws-assume-role {}", role.role_arn), source))
    }
}

/// The chain's error when one step failed outside the sources (the shared files, the role to assume).
fn failed(from: impl Into<String>, source: CredentialSourceError) -> CredentialsError {
    NoCredentials::new(HEADLINE, vec![Tried::failed(from, source)])
}

#[cfg(test)]
mod tests {
    use extdns_provider::credentials::Outcome;

    use super::*;

    async fn resolve(pairs: &[(&str, &str)], profile: Option<&str>) -> Result<Credentials, CredentialsError> {
        let env: BTreeMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let source = CredentialSource::chain(&|k| env.get(k).cloned(), profile.map(str::to_string));
        let cache = cache(
            source,
            None,
            Duration::from_secs(300),
            Duration::from_secs(1),
            &Observer::default(),
        )
        .expect("HTTP clients");
        cache.get().await
    }

    #[tokio::test]
    async fn an_empty_chain_lists_each_source_with_its_typed_reason() {
        let Err(e) = resolve(&[("HOME", "/nonexistent"), ("AWS_EC2_METADATA_DISABLED", "true")], None).await else {
            panic!("nothing is configured");
        };
        assert_eq!(
            e.to_string(),
            "no AWS credentials; tried environment: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set; \
             web identity: AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN are not set; \
             shared files: no such profile default in no shared config or credentials file; \
             container: AWS_CONTAINER_CREDENTIALS_FULL_URI and AWS_CONTAINER_CREDENTIALS_RELATIVE_URI are not set; \
             instance metadata: disabled by AWS_EC2_METADATA_DISABLED"
        );
        assert!(e.tried.iter().all(|t| t.outcome == Outcome::NotConfigured), "{e:?}");
        assert!(matches!(
            e.tried.first().map(|t| &t.source),
            Some(CredentialSourceError::NotConfigured(_))
        ));
    }

    #[tokio::test]
    async fn environment_keys_come_first_and_a_named_profile_replaces_them() {
        let keys = [
            ("HOME", "/nonexistent"),
            ("AWS_EC2_METADATA_DISABLED", "true"),
            ("AWS_ACCESS_KEY_ID", "AKID"),
            ("AWS_SECRET_ACCESS_KEY", "s"),
        ];
        let c = resolve(&keys, None).await.expect("the environment's keys");
        assert_eq!(c.access_key_id, "AKID");
        let Err(e) = resolve(&keys, Some("dev")).await else {
            panic!("the named profile does not exist");
        };
        assert_eq!(
            e.to_string(),
            "no AWS credentials; tried profile dev: no such profile dev in no shared config or credentials file"
        );
        assert_eq!(
            e.failure().map(ToString::to_string).as_deref(),
            Some("no such profile dev in no shared config or credentials file")
        );
    }

    #[tokio::test]
    async fn a_configured_web_identity_that_fails_stops_the_chain_naming_the_role() {
        let Err(e) = resolve(
            &[
                ("HOME", "/nonexistent"),
                ("AWS_ROLE_ARN", "arn:aws:iam::1:role/r"),
                ("AWS_WEB_IDENTITY_TOKEN_FILE", "/nonexistent/token"),
                // Nothing may reach 169.254.169.254 should the chain go on after the failure.
                ("AWS_EC2_METADATA_DISABLED", "true"),
            ],
            None,
        )
        .await
        else {
            panic!("no token file");
        };
        let text = e.to_string();
        assert!(
            text.starts_with("no AWS credentials; tried environment: ")
                && text.contains("; web identity (AWS_ROLE_ARN arn:aws:iam::1:role/r): cannot read the token file /nonexistent/token: "),
            "{text}"
        );
        assert_eq!(e.tried.len(), 2, "nothing is tried after the failure: {text}");
        assert!(!e.is_transient());
    }
}
