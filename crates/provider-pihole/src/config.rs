//! The provider's configuration: external-dns's `--pihole-*` flags, typed.

use extdns_endpoint::DomainFilter;
use extdns_provider::CallSettings;

/// The provider's settings, from `--pihole-server`, `--pihole-password` (or `EXTERNAL_DNS_PIHOLE_PASSWORD`)
/// and `--pihole-tls-skip-verify`. Built with [`PiholeConfig::new`], then adjusted field by field; `Debug`
/// hides the password.
#[derive(Clone)]
#[non_exhaustive]
pub struct PiholeConfig {
    /// The base URL of Pi-hole's web server (`http://pi.hole`); the API is under `/api`.
    pub server: String,
    /// The web interface's password or an app password; `None` for a Pi-hole without one.
    pub password: Option<String>,
    /// Accept any TLS certificate.
    pub tls_skip_verify: bool,
    /// Names to manage (`--domain-filter`); Pi-hole has no zones.
    pub domain_filter: DomainFilter,
    /// Time limit of a request, retries of unreachable servers, 429s and 5xx, and `--provider-write-rate`:
    /// write requests at most this often.
    pub calls: CallSettings,
    /// Told about every HTTP request (the binary's request-duration metric).
    pub observer: extdns_provider::http::Observer,
}

impl std::fmt::Debug for PiholeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PiholeConfig")
            .field("server", &self.server)
            .field("password", &self.password.as_ref().map(|_| ".."))
            .field("tls_skip_verify", &self.tls_skip_verify)
            .field("domain_filter", &self.domain_filter)
            .field("calls", &self.calls)
            .finish_non_exhaustive()
    }
}

impl PiholeConfig {
    /// external-dns's defaults for the Pi-hole at `server`.
    pub fn new(server: impl Into<String>) -> PiholeConfig {
        PiholeConfig {
            server: server.into(),
            password: None,
            tls_skip_verify: false,
            domain_filter: DomainFilter::default(),
            calls: CallSettings::default(),
            observer: Default::default(),
        }
    }
}

/// A configuration the provider refuses to start with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `--pihole-server` is empty.
    #[error("--pihole-server is required: the base URL of the Pi-hole web server (http://pi.hole)")]
    NoServer,
    /// `--pihole-server` is not an http(s) URL.
    #[error("--pihole-server must be an http:// or https:// URL (got {0:?})")]
    BadServer(String),
    /// The HTTP client cannot be built (its TLS backend, say).
    #[error("{0}")]
    Client(#[source] extdns_provider::http::HttpError),
}
