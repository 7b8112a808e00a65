//! The provider's configuration: external-dns's `--cloudflare-*` flags and `CF_*` credentials, typed.

use std::num::NonZeroU32;
use std::time::Duration;

use extdns_provider::budget::AccountKey;
use extdns_provider::pace::Rate;
use extdns_provider::{ApiSettings, Batching, ZoneSelection};

/// Cloudflare's API.
pub const DEFAULT_BASE_URL: &str = "https://api.cloudflare.com/client/v4";

/// How requests authenticate.
#[derive(Clone)]
#[non_exhaustive]
pub enum Auth {
    /// An API token (`CF_API_TOKEN`): `Authorization: Bearer`.
    Token(String),
    /// The global API key and the account's email (`CF_API_KEY`, `CF_API_EMAIL`).
    Key {
        /// `CF_API_KEY`, sent as `X-Auth-Key`.
        key: String,
        /// `CF_API_EMAIL`, sent as `X-Auth-Email`.
        email: String,
    },
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Auth::Token(_) => f.write_str("Token(..)"),
            Auth::Key { email, .. } => write!(f, "Key {{ email: {email:?}, .. }}"),
        }
    }
}

impl Auth {
    /// The credentials external-dns reads from the `CF_*` variables `var` reads (blank ones unset): a token
    /// (`CF_API_TOKEN`, or `file:/path` to a file holding it) before a key and its email.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Result<Auth, ConfigError> {
        let set = |k: &str| var(k).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        match (set("CF_API_TOKEN"), set("CF_API_KEY"), set("CF_API_EMAIL")) {
            (Some(token), _, _) => match token.strip_prefix("file:") {
                Some(path) => match std::fs::read_to_string(path) {
                    Ok(t) if !t.trim().is_empty() => Ok(Auth::Token(t.trim().to_string())),
                    Ok(_) => Err(ConfigError::EmptyTokenFile { path: path.to_string() }),
                    Err(source) => Err(ConfigError::TokenFile {
                        path: path.to_string(),
                        source,
                    }),
                },
                None => Ok(Auth::Token(token)),
            },
            (None, Some(key), Some(email)) => Ok(Auth::Key { key, email }),
            _ => Err(ConfigError::NoCredentials),
        }
    }
}

/// Cloudflare's API limit, 1,200 requests per 5 minutes per user or account token
/// (<https://developers.cloudflare.com/fundamentals/api/reference/limits/>), counted over a window a second
/// longer so that requests arriving late at Cloudflare cannot put 1,201 into one of its windows. Every
/// pipeline with the same token (or global key's user) shares it ([`CloudflareConfig::account`]).
pub const API_LIMIT: Rate = Rate::new(
    match NonZeroU32::new(1200) {
        Some(n) => n,
        None => NonZeroU32::MIN,
    },
    Duration::from_secs(5 * 60 + 1),
);

/// The provider's settings, from external-dns's `--cloudflare-*` flags and `CF_*` environment variables.
/// Built with [`CloudflareConfig::new`], then adjusted field by field; `Debug` hides the credentials.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CloudflareConfig {
    /// The credentials.
    pub auth: Auth,
    /// Where the API is; a test points it at a fake.
    pub base_url: String,
    /// Proxy records by default (`--cloudflare-proxied`); a record's `cloudflare-proxied` property wins.
    pub proxied_by_default: bool,
    /// Page size of record lists (`--cloudflare-dns-records-per-page`, 1..=5000).
    pub records_per_page: u32,
    /// Comment written on records without their own (`--cloudflare-record-comment`).
    pub record_comment: Option<String>,
    /// The longest comment the zones' plan takes, in characters (`--cloudflare-record-comment-limit`):
    /// 100 on Free (the default, which fits every plan), 500 on Pro, Business and Enterprise. Ownership on
    /// the records (`--txt-ownership=metadata`) shares it with the user's comment.
    pub comment_limit: usize,
    /// Records written per batch call (`--batch-change-size`; Cloudflare's free plan takes 200), and the
    /// pause between batch calls (`--batch-change-interval`), to stay under 1,200 requests per 5 minutes.
    /// While [`batch_size_by_plan`](Self::batch_size_by_plan) holds, the size serves only zones of a plan
    /// the provider does not know.
    pub batch: Batching,
    /// Size each zone's batches by its plan (200 on Free, 3,500 on Pro, Business and Enterprise;
    /// [`crate::plan`]), so a paid zone is written in a seventeenth of the calls; the default. The binary
    /// turns it off when `--batch-change-size` is given, which then holds for every zone.
    pub batch_size_by_plan: bool,
    /// Zones to manage: those the filter names or that contain a name it names (`--domain-filter`), and
    /// the zone ids (`--zone-id-filter`, whole ids); empty for all.
    pub zones: ZoneSelection,
    /// Time limit, retries (of 429 answers) and rates: every request at most [`API_LIMIT`] by default
    /// (Cloudflare allows 1,200 per 5 minutes per user, reads included), batch calls at most
    /// `--provider-write-rate`.
    pub api: ApiSettings,
    /// Told about every HTTP request (the binary's request-duration metric).
    pub observer: extdns_provider::http::Observer,
}

impl CloudflareConfig {
    /// Whom Cloudflare counts this configuration's requests for: its token, or its global key's user.
    pub fn account(&self) -> AccountKey {
        match &self.auth {
            Auth::Token(token) => AccountKey::secret("cloudflare", &self.base_url, token),
            Auth::Key { email, .. } => AccountKey::named("cloudflare", &self.base_url, email),
        }
    }

    /// external-dns's defaults with these credentials.
    pub fn new(auth: Auth) -> CloudflareConfig {
        CloudflareConfig {
            observer: Default::default(),
            auth,
            base_url: DEFAULT_BASE_URL.to_string(),
            proxied_by_default: false,
            records_per_page: 100,
            record_comment: None,
            comment_limit: crate::comment::FREE_PLAN_COMMENT_LIMIT,
            batch: Batching::new(crate::plan::FREE_PLAN_BATCH_LIMIT, Duration::from_secs(1)),
            batch_size_by_plan: true,
            zones: ZoneSelection::default(),
            api: ApiSettings::new(Some(API_LIMIT)),
        }
    }
}

/// A configuration the provider refuses to start with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// Neither `CF_API_TOKEN` nor both `CF_API_KEY` and `CF_API_EMAIL` are set.
    #[error("Cloudflare credentials are missing: set CF_API_TOKEN (or file:/path), or CF_API_KEY and CF_API_EMAIL")]
    NoCredentials,
    /// `CF_API_TOKEN=file:PATH` names an empty file.
    #[error("CF_API_TOKEN: the file {path} is empty")]
    EmptyTokenFile {
        /// The file.
        path: String,
    },
    /// `CF_API_TOKEN=file:PATH` names a file that cannot be read.
    #[error("CF_API_TOKEN: cannot read {path}: {source}")]
    TokenFile {
        /// The file.
        path: String,
        /// The read's error.
        #[source]
        source: std::io::Error,
    },
    /// `--cloudflare-dns-records-per-page` is outside Cloudflare's 1..=5000.
    #[error("records per page must be between 1 and 5000 (got {0})")]
    RecordsPerPage(u32),
    /// The HTTP client cannot be built (its TLS backend, say).
    #[error("{0}")]
    Client(#[source] extdns_provider::http::HttpError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_account_is_the_token_or_the_global_key_s_user() {
        let token = |t: &str| CloudflareConfig::new(Auth::Token(t.into())).account();
        let key = |k: &str, email: &str| {
            CloudflareConfig::new(Auth::Key {
                key: k.into(),
                email: email.into(),
            })
            .account()
        };
        assert_eq!(token("a"), token("a"));
        assert_ne!(token("a"), token("b"));
        assert_eq!(key("k1", "u@example.org"), key("k2", "u@example.org"), "one user");
        assert!(!token("secret-token").to_string().contains("secret-token"));
    }

    fn auth(vars: &[(&str, &str)]) -> Result<Auth, ConfigError> {
        Auth::from_env(|k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string()))
    }

    #[test]
    fn a_token_comes_before_a_key_and_blank_variables_are_unset() {
        let both = [
            ("CF_API_TOKEN", " t "),
            ("CF_API_KEY", "k"),
            ("CF_API_EMAIL", "e@example.org"),
        ];
        assert!(matches!(auth(&both), Ok(Auth::Token(t)) if t == "t"));
        let key = [
            ("CF_API_TOKEN", " "),
            ("CF_API_KEY", "k"),
            ("CF_API_EMAIL", "e@example.org"),
        ];
        assert!(matches!(auth(&key), Ok(Auth::Key { key, .. }) if key == "k"));
        assert!(matches!(auth(&[("CF_API_KEY", "k")]), Err(ConfigError::NoCredentials)));
    }

    #[test]
    fn a_token_file_must_exist_and_hold_a_token() {
        let e = auth(&[("CF_API_TOKEN", "file:/nonexistent/extdns-token")])
            .err()
            .map(|e| e.to_string());
        assert!(e.is_some_and(|e| e.starts_with("CF_API_TOKEN: cannot read /nonexistent/extdns-token: ")));
    }
}
