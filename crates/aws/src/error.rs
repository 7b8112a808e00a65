//! Why one source of the AWS credential chain gave no credentials.

use std::path::PathBuf;

use extdns_provider::credentials::FetchError;

use crate::sign::SignError;

/// Profiles naming a `source_profile` that names another: how deep a chain may go.
pub(crate) const MAX_PROFILE_DEPTH: u8 = 5;

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

impl FetchError for CredentialSourceError {
    /// No answer, or STS's or an agent's 429 or 5xx.
    fn is_transient(&self) -> bool {
        match self {
            CredentialSourceError::Request { .. } => true,
            CredentialSourceError::Status { status, .. } => *status == 429 || *status >= 500,
            _ => false,
        }
    }
}
