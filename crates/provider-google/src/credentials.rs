//! Where access tokens come from: Application Default Credentials on the toolkit's one chain and cache,
//! kept until a quarter of their life (at least five minutes, at most half of it) before they expire and
//! dropped when Cloud DNS answers 401.
//!
//! 1. `GOOGLE_APPLICATION_CREDENTIALS`: a JSON file of type `service_account`, `authorized_user` or
//!    `external_account` (`file`).
//! 2. gcloud's well-known file, of the same types.
//! 3. The metadata server (`metadata`): `GCE_METADATA_HOST`, else 169.254.169.254.
//!
//! When nothing resolves, the error names every source tried and why.

mod file;
mod metadata;
mod sources;
mod token;

use std::sync::Arc;
use std::time::Duration;

use extdns_provider::HttpClient;
use extdns_provider::credentials::{AccessToken, Chain, CredentialCache, Margin};
use extdns_provider::http::{HttpError, Observer};

use crate::config::CredentialSource;

pub use file::{DEFAULT_TOKEN_URI, jwt};
pub use metadata::MetadataServer;
pub use token::{CredentialsError, SourceError, Tried};

/// Where the API client asks for its token.
pub(crate) type TokenCache = CredentialCache<AccessToken, SourceError>;

/// Google's client libraries' margin: a quarter of a token's life, at least five minutes, at most half.
const MARGIN: Margin = Margin::fixed(Duration::from_secs(300))
    .at_least_life_over(4)
    .at_most_half_life();

/// The token cache over `source`'s chain, and the metadata server it asks (which also names the project);
/// requests time out after `timeout` and are reported to `observer`.
pub(crate) fn tokens(
    source: &CredentialSource,
    timeout: Duration,
    observer: &Observer,
) -> Result<(TokenCache, Arc<MetadataServer>), HttpError> {
    let named = matches!(source, CredentialSource::Adc { env } if env.contains_key("GCE_METADATA_HOST"));
    let metadata = Arc::new(MetadataServer::new(source.metadata_host(), named, observer)?);
    let chain = match source {
        CredentialSource::Token(t) => Chain::new("no Google credentials").then(sources::Fixed(t.clone())),
        CredentialSource::Adc { env } => {
            let http = Arc::new(HttpClient::builder().timeout(timeout).observed_by(observer).build()?);
            sources::chain(env, &http, &metadata)
        }
    };
    Ok((CredentialCache::new(chain, MARGIN), metadata))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_refreshed_a_quarter_of_their_life_before_they_expire() {
        let secs = |life: u64| MARGIN.of(Duration::from_secs(life)).as_secs();
        assert_eq!(secs(3600), 900, "a quarter of an hour before an hour's token expires");
        assert_eq!(secs(60), 30, "half of a short token's life");
        assert_eq!(secs(1200), 300, "five minutes when a quarter is less");
    }
}
