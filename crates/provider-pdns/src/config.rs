//! Typed configuration of the provider, filled by the binary from external-dns's `--pdns-*` flags (and the
//! shared `--tls-*` and `--domain-filter` ones), and its startup validation. Every rejection is a
//! [`ConfigError`] naming the setting at fault ([`ConfigError::setting`]), which the binary turns into a flag.

use std::time::Duration;

use extdns_endpoint::DomainFilter;
use extdns_provider::http::HttpError;
use extdns_provider::tls::{TlsError, TlsFile};
use extdns_provider::{Backoff, CallSettings};

/// TLS settings for an `https://` API URL: `--pdns-skip-tls-verify` and the shared `--tls-ca`,
/// `--tls-client-cert`, `--tls-client-cert-key`. The system roots are trusted beside the CA file.
pub use extdns_provider::TlsOptions;

/// The provider's configuration. Built with [`PdnsConfig::new`], then adjusted field by field. Its `Debug`
/// form hides the API key, so settings can be logged.
#[derive(Clone)]
#[non_exhaustive]
pub struct PdnsConfig {
    /// Base URL of the API (`--pdns-server`), without `/api/v1`.
    pub server: String,
    /// `--pdns-server-id`: which server of the API (always `localhost` unless behind a proxy of several).
    pub server_id: String,
    /// `--pdns-api-key`, sent as `X-API-Key`.
    pub api_key: String,
    /// Which zones to manage: a zone is used when the filter matches its name or one of its sub-domains.
    pub domain_filter: DomainFilter,
    /// TLS towards an `https://` server (see [`TlsOptions`]); ignored for `http://`.
    pub tls: TlsOptions,
    /// Time limit of a request; retries of one that met a rate limit, a 5xx or a network error, before the
    /// sync gives up with a transient error (which the controller backs off from); `--provider-write-rate`:
    /// PATCHes at most this often (none by default).
    pub calls: CallSettings,
    /// Most record changes (a record and its ownership record count two) in one PATCH. A PATCH is one
    /// database transaction in PowerDNS; large ones are fast, but a refused one is split and sent again.
    pub batch_change_size: usize,
    /// Told about every HTTP request (the binary's request-duration metric).
    pub observer: extdns_provider::http::Observer,
}

impl std::fmt::Debug for PdnsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PdnsConfig")
            .field("server", &self.server)
            .field("server_id", &self.server_id)
            .field("api_key", &"<redacted>")
            .field("domain_filter", &self.domain_filter)
            .field("tls", &self.tls)
            .field("calls", &self.calls)
            .field("batch_change_size", &self.batch_change_size)
            .finish()
    }
}

impl PdnsConfig {
    /// external-dns's defaults for everything but the URL and key.
    pub fn new(server: impl Into<String>, api_key: impl Into<String>) -> Self {
        PdnsConfig {
            observer: Default::default(),
            server: server.into(),
            server_id: "localhost".into(),
            api_key: api_key.into(),
            domain_filter: DomainFilter::default(),
            tls: TlsOptions::default(),
            calls: CallSettings {
                backoff: Backoff {
                    initial: Duration::from_millis(250),
                    max: Duration::from_secs(5),
                    multiplier: 2.0,
                    jitter: 0.5,
                    max_attempts: 3,
                    throttled_for: extdns_provider::backoff::DEFAULT_THROTTLED_FOR,
                },
                ..CallSettings::default()
            },
            batch_change_size: 1000,
        }
    }
}

/// A configuration the provider refuses to start with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `--pdns-api-key` is empty.
    #[error("the PowerDNS API key is empty: the API refuses requests without one")]
    NoApiKey,
    /// `--pdns-server` does not parse as a URL.
    #[error("the PowerDNS server URL {url:?} is not a URL: {source}")]
    Url {
        /// The URL as given.
        url: String,
        /// The URL parser's reason.
        #[source]
        source: url::ParseError,
    },
    /// `--pdns-server` has a scheme other than `http` or `https`, or cannot be a base URL.
    #[error("the PowerDNS server URL {0:?} is neither http:// nor https://")]
    Scheme(String),
    /// `--pdns-api-key` holds control or non-ASCII characters.
    #[error("the PowerDNS API key holds characters an HTTP header cannot carry")]
    ApiKeyChars,
    /// `--pdns-server-id` is empty.
    #[error("the PowerDNS server id is empty")]
    NoServerId,
    /// [`PdnsConfig::batch_change_size`] is 0.
    #[error("the batch change size must be at least 1")]
    BatchSize,
    /// A TLS file cannot be used, or the HTTP client cannot be built.
    #[error("{0}")]
    Client(#[source] HttpError),
}

/// The settings of [`PdnsConfig`] a [`ConfigError`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Setting {
    /// [`PdnsConfig::api_key`] (`--pdns-api-key`).
    ApiKey,
    /// [`PdnsConfig::server`] (`--pdns-server`).
    Server,
    /// [`PdnsConfig::server_id`] (`--pdns-server-id`).
    ServerId,
    /// [`PdnsConfig::batch_change_size`].
    BatchChangeSize,
    /// The CA file (`--tls-ca`).
    TlsCa,
    /// The client certificate or its key (`--tls-client-cert`, `--tls-client-cert-key`).
    TlsClientCert,
    /// Not one setting: the HTTP client could not be built.
    Client,
}

impl ConfigError {
    /// The setting to change.
    pub fn setting(&self) -> Setting {
        match self {
            ConfigError::NoApiKey | ConfigError::ApiKeyChars => Setting::ApiKey,
            ConfigError::Url { .. } | ConfigError::Scheme(_) => Setting::Server,
            ConfigError::NoServerId => Setting::ServerId,
            ConfigError::BatchSize => Setting::BatchChangeSize,
            ConfigError::Client(HttpError::Tls(e)) => match e {
                TlsError::Read { file: TlsFile::Ca, .. }
                | TlsError::Pem { file: TlsFile::Ca, .. }
                | TlsError::Empty { file: TlsFile::Ca, .. } => Setting::TlsCa,
                _ => Setting::TlsClientCert,
            },
            ConfigError::Client(_) => Setting::Client,
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_api_key_never_shows_in_debug_output() {
        let c = super::PdnsConfig::new("http://127.0.0.1:8081", "very-secret-key");
        let text = format!("{c:?}");
        assert!(
            !text.contains("very-secret-key") && text.contains("<redacted>"),
            "{text}"
        );
    }
}
