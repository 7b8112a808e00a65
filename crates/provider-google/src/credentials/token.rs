//! Why the Google sources give no token.

use std::path::PathBuf;

use extdns_provider::credentials::endpoint::EndpointError;
use extdns_provider::credentials::{FetchError, NoCredentials};

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
