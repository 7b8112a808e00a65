//! The provider's configuration: external-dns's `--google-*` flags, the generic zone filters and where
//! Application Default Credentials are looked for, typed.

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::time::Duration;

use extdns_provider::budget::AccountKey;
use extdns_provider::credentials::capture_env;
use extdns_provider::pace::Rate;
use extdns_provider::{ApiSettings, Batching, ZoneSelection};

/// Cloud DNS's v1 API (the discovery document's `rootUrl` + `servicePath`).
pub const DEFAULT_BASE_URL: &str = "https://dns.googleapis.com/dns/v1";
/// The OAuth scope external-dns asks for (`dns.NdevClouddnsReadwriteScope`).
pub const SCOPE: &str = "https://www.googleapis.com/auth/ndev.clouddns.readwrite";
/// Cloud DNS's limit on the record data of one change (additions and deletions together), in bytes.
pub const MAX_CHANGE_BYTES: usize = 100_000;

/// Every request at most this often: 600 a minute. Cloud DNS's API quota is per project and per user and
/// shown only in the project's console (its quota page, <https://cloud.google.com/dns/quotas>, names the
/// per-minute read and write quotas without a number), so extdns keeps well under the smallest defaults
/// seen in practice; a 429 is still retried with backoff. Every pipeline of one project shares it
/// ([`GoogleConfig::account`]); `--provider-request-rate` sets another.
pub const API_LIMIT: Rate = Rate::new(
    match NonZeroU32::new(600) {
        Some(n) => n,
        None => NonZeroU32::MIN,
    },
    Duration::from_secs(61),
);

/// The environment variables the chain reads; the binary captures them once at startup.
pub const VARIABLES: &[&str] = &[
    "GOOGLE_APPLICATION_CREDENTIALS",
    "CLOUDSDK_CONFIG",
    "HOME",
    "GCE_METADATA_HOST",
];

/// The metadata server of every GCE VM and GKE node.
pub const METADATA_HOST: &str = "169.254.169.254";
/// Where the tokens come from.
#[derive(Clone)]
#[non_exhaustive]
pub enum CredentialSource {
    /// A fixed access token (tests, or a caller that has one).
    Token(String),
    /// Application Default Credentials over these environment variables ([`VARIABLES`]).
    Adc {
        /// The environment the chain reads (the process's, or a test's).
        env: BTreeMap<String, String>,
    },
}

impl std::fmt::Debug for CredentialSource {
    /// Names the variables, never a token.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CredentialSource::Token(_) => f.write_str("Token(..)"),
            CredentialSource::Adc { env } => f
                .debug_struct("Adc")
                .field("variables", &env.keys().collect::<Vec<_>>())
                .finish(),
        }
    }
}

impl CredentialSource {
    /// Application Default Credentials over the [`VARIABLES`] `var` gives.
    pub fn adc(var: &dyn Fn(&str) -> Option<String>) -> CredentialSource {
        CredentialSource::Adc {
            env: capture_env(VARIABLES, var),
        }
    }

    /// The metadata server's address this source would ask (`GCE_METADATA_HOST`, else 169.254.169.254).
    pub fn metadata_host(&self) -> String {
        match self {
            CredentialSource::Adc { env } => env.get("GCE_METADATA_HOST").cloned(),
            CredentialSource::Token(_) => None,
        }
        .unwrap_or_else(|| METADATA_HOST.to_string())
    }
}

/// `--google-zone-visibility`: which zones to manage by `ManagedZone.visibility`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Visibility {
    /// Public zones only.
    Public,
    /// Private zones only.
    Private,
}

impl Visibility {
    /// The value Cloud DNS writes in `ManagedZone.visibility`.
    pub fn as_str(self) -> &'static str {
        match self {
            Visibility::Public => "public",
            Visibility::Private => "private",
        }
    }
}

/// The provider's settings, from external-dns's `--google-*` flags. Built with [`GoogleConfig::new`], then
/// adjusted field by field.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct GoogleConfig {
    /// `--google-project`; `None` asks the metadata server, as external-dns does.
    pub project: Option<String>,
    /// Where access tokens come from (Application Default Credentials, or a fixed token).
    pub credentials: CredentialSource,
    /// Where the API is; a test points it at a fake.
    pub base_url: String,
    /// `--google-batch-change-size`: additions plus deletions per change, 0 for no limit but Cloud DNS's;
    /// `--google-batch-change-interval`: the least time from one change's submission to the next one's
    /// (a change that deletes is waited for until `done` first, and that wait counts towards it; changes that
    /// only add are not waited for one by one).
    pub batch: Batching,
    /// `--google-zone-visibility`; `None` for both.
    pub zone_visibility: Option<Visibility>,
    /// `--domain-filter` and its relatives, matched against a zone's DNS name, and `--zone-id-filter`:
    /// suffixes of a zone's numeric id or of its name; empty for all.
    pub zones: ZoneSelection,
    /// Zones and record sets asked per page (`maxResults`).
    pub page_size: u32,
    /// Time limit, retries (of 429, 5xx and rate-limit answers) and rates: every request at most
    /// [`API_LIMIT`] by default, `changes.create` calls at most `--provider-write-rate`.
    pub api: ApiSettings,
    /// How often `changes.get` asks whether a change is done.
    pub change_poll: Duration,
    /// How long a change may stay pending before the write is reported as not done (and the next sync
    /// reads again).
    pub change_wait: Duration,
    /// Told about every HTTP request (the binary's request-duration metric).
    pub observer: extdns_provider::http::Observer,
}

impl GoogleConfig {
    /// Whom Cloud DNS counts this configuration's requests for: the project, or when the metadata server
    /// or the credentials name it at run time, the credentials it will come from.
    pub fn account(&self) -> AccountKey {
        match (&self.project, &self.credentials) {
            (Some(project), _) => AccountKey::named("google", &self.base_url, project),
            (None, CredentialSource::Token(token)) => AccountKey::secret("google", &self.base_url, token),
            (None, CredentialSource::Adc { env }) => {
                let file = env.get("GOOGLE_APPLICATION_CREDENTIALS").map_or("", String::as_str);
                AccountKey::named("google", &self.base_url, &format!("project of the credentials {file}"))
            }
        }
    }

    /// external-dns's defaults with these credentials.
    pub fn new(credentials: CredentialSource) -> GoogleConfig {
        GoogleConfig {
            project: None,
            credentials,
            base_url: DEFAULT_BASE_URL.to_string(),
            batch: Batching::new(1000, Duration::from_secs(1)),
            zone_visibility: None,
            zones: ZoneSelection::default(),
            page_size: 1000,
            api: ApiSettings::new(Some(API_LIMIT)),
            change_poll: Duration::from_millis(500),
            change_wait: Duration::from_secs(300),
            observer: Default::default(),
        }
    }
}

/// A configuration the provider refuses to start with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `--google-project` is not a project id.
    #[error("--google-project {0:?} is not a project id (letters, digits, '-', ':' and '.')")]
    Project(String),
    /// The page size is outside 1..=1000.
    #[error("page size must be between 1 and 1000 (got {0})")]
    PageSize(u32),
    /// The HTTP client cannot be built (its TLS backend, say), or the API URL is not a URL.
    #[error("{0}")]
    Client(#[source] extdns_provider::http::HttpError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_account_is_the_project_else_the_credentials_it_will_come_from() {
        let config = |project: Option<&str>, file: &str| {
            let env = BTreeMap::from([("GOOGLE_APPLICATION_CREDENTIALS".to_string(), file.to_string())]);
            let mut c = GoogleConfig::new(CredentialSource::Adc { env });
            c.project = project.map(str::to_string);
            c.account()
        };
        assert_eq!(
            config(Some("p"), "/a.json"),
            config(Some("p"), "/b.json"),
            "one project"
        );
        assert_ne!(config(Some("p"), "/a.json"), config(Some("q"), "/a.json"));
        assert_ne!(config(None, "/a.json"), config(None, "/b.json"));
    }
}
