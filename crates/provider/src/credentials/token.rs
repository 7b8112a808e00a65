//! A bearer token and when it expires: what the OAuth-speaking clouds (Google, Azure) authenticate with.

use std::time::{Duration, SystemTime};

use super::cache::Credential;
use super::endpoint::Grant;

/// A bearer token and when it expires.
#[derive(Clone, PartialEq, Eq)]
pub struct AccessToken {
    /// The bearer token.
    pub token: String,
    /// When it expires; `None` if never (a fixed token) or unknown.
    pub expires: Option<SystemTime>,
}

impl std::fmt::Debug for AccessToken {
    /// Never prints the token.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccessToken")
            .field("expires", &self.expires)
            .finish_non_exhaustive()
    }
}

impl AccessToken {
    /// `token`, valid for `lifetime` from now (for good when `None`).
    pub fn lasting(token: String, lifetime: Option<Duration>) -> AccessToken {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_lasts_from_now_and_the_token_is_never_printed() {
        let before = SystemTime::now();
        let t: AccessToken = Grant {
            access_token: "secret-token".into(),
            expires_in: Some(Duration::from_secs(60)),
        }
        .into();
        assert!(t.expires.is_some_and(|e| e >= before + Duration::from_secs(60)));
        assert!(!format!("{t:?}").contains("secret-token"));
        assert_eq!(AccessToken::lasting("t".into(), None).expires(), None);
    }
}
