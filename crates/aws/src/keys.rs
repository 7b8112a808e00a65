//! One set of AWS credentials, what every request is signed with.

use std::time::SystemTime;

/// One set of credentials: static keys, or temporary ones with a session token and an expiry.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Credentials {
    /// The key id requests are signed as.
    pub access_key_id: String,
    /// The secret that signs them.
    pub secret_access_key: String,
    /// Set for temporary credentials (a role, a session).
    pub session_token: Option<String>,
    /// When temporary credentials stop working; `None` for keys that do not expire.
    pub expires: Option<SystemTime>,
}

impl Credentials {
    /// Long-lived keys, without a session token.
    pub fn new(access_key_id: impl Into<String>, secret_access_key: impl Into<String>) -> Self {
        Credentials {
            access_key_id: access_key_id.into(),
            secret_access_key: secret_access_key.into(),
            session_token: None,
            expires: None,
        }
    }

    /// Keys as the environment or a profile gives them, with a session token when there is one.
    pub(crate) fn with_token(access_key_id: &str, secret_access_key: &str, session_token: Option<&str>) -> Self {
        Credentials {
            session_token: session_token.map(str::to_string),
            ..Credentials::new(access_key_id, secret_access_key)
        }
    }
}

impl extdns_provider::credentials::Credential for Credentials {
    fn expires(&self) -> Option<SystemTime> {
        self.expires
    }
}

impl std::fmt::Debug for Credentials {
    /// Never prints the secret or the token, so a config can be logged.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key_id", &self.access_key_id)
            .finish_non_exhaustive()
    }
}
