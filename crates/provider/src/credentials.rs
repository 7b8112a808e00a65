//! One credential chain for the cloud providers, so each of them declares where its credentials come from
//! and nothing else.
//!
//! A provider lists its [`Source`]s in the order its cloud's SDK tries them and puts them on a [`Chain`]:
//! the first that gives a credential wins; a source that is not configured here is passed over, and one
//! that is configured but fails ends the search (as the SDKs do: a broken credentials file is not silently
//! replaced by the node's identity). When nothing comes, one error, [`NoCredentials`], names every source
//! tried and why each gave nothing. A [`CredentialCache`] keeps the credential until a [`Margin`] before it
//! expires, refreshes it once for all concurrent callers, and drops it when the API answers 401.
//! [`endpoint`] reads the answers of the token endpoints the sources call; [`AccessToken`] is the bearer token
//! they grant; [`rfc3339`] reads the expiry times they write. [`Unsent`] is a call that got no answer,
//! for want of a credential or of a connection.

mod cache;
mod chain;
pub mod endpoint;
pub mod rfc3339;
mod token;
mod unsent;

use std::collections::BTreeMap;

pub use cache::{Clock, Credential, CredentialCache, Margin, SystemClock};
pub use chain::{Chain, Fetch, FetchError, Miss, NoCredentials, Outcome, Source, Tried};
pub use token::AccessToken;
pub use unsent::Unsent;

/// The variables among `names` that `var` gives a non-blank value, trimmed: the environment a chain reads,
/// captured once at startup so a source never reads the process environment itself.
pub fn capture_env(names: &[&str], var: &dyn Fn(&str) -> Option<String>) -> BTreeMap<String, String> {
    names
        .iter()
        .filter_map(|k| {
            var(k)
                .filter(|v| !v.trim().is_empty())
                .map(|v| (k.to_string(), v.trim().to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_is_captured_trimmed_without_blank_or_unlisted_variables() {
        let var = |k: &str| match k {
            "A" => Some(" a ".to_string()),
            "B" => Some("  ".to_string()),
            "C" => Some("c".to_string()),
            _ => None,
        };
        let env = capture_env(&["A", "B", "D"], &var);
        assert_eq!(env, BTreeMap::from([("A".to_string(), "a".to_string())]));
    }
}
