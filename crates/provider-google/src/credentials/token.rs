//! What the Google sources give and why they give nothing.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use extdns_provider::credentials::endpoint::{EndpointError, Grant};
use extdns_provider::credentials::{Credential, FetchError, NoCredentials};

/// Why no token came: every source tried, and why each gave nothing.
pub type CredentialsError = NoCredentials<SourceError>;

/// One source that gave nothing, and why.
pub type Tried = extdns_provider::credentials::Tried<SourceError>;

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
    /// A token endpoint, STS or the metadata server gave no token (no answer, a refusal, an unreadable one).
    #[error(transparent)]
    Endpoint(#[from] EndpointError),
}

impl FetchError for SourceError {
    fn is_transient(&self) -> bool {
        matches!(self, SourceError::Endpoint(e) if e.is_transient())
    }
}

/// An access token and when it expires.
#[derive(Clone, PartialEq, Eq)]
pub struct AccessToken {
    /// The bearer token.
    pub token: String,
    /// When it expires, if known.
    pub expires: Option<SystemTime>,
}

impl std::fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccessToken")
            .field("expires", &self.expires)
            .finish_non_exhaustive()
    }
}

impl AccessToken {
    /// A token valid for `lifetime` from now (for good when unknown).
    pub(crate) fn lasting(token: String, lifetime: Option<Duration>) -> AccessToken {
        AccessToken {
            token,
            expires: lifetime.map(|l| SystemTime::now() + l),
        }
    }
}

impl From<Grant> for AccessToken {
    fn from(grant: Grant) -> AccessToken {
        AccessToken::lasting(grant.access_token, grant.expires_in)
    }
}

impl Credential for AccessToken {
    fn expires(&self) -> Option<SystemTime> {
        self.expires
    }
}
