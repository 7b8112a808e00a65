//! [`ProviderSettings`]: the provider extdns writes to, as one typed configuration, and the provider built
//! from it. One arm per provider extdns implements; every other external-dns name is a clear error rather
//! than a silent no-op.

use std::sync::Arc;
use std::time::Duration;

use extdns_dns_server::zones_and_provider;
use extdns_provider::budget::PacerPool;
use extdns_provider::http::Observer;
use extdns_provider::pace::Rate;
use extdns_provider::{InMemoryProvider, Provider};
use extdns_provider_aws::{AwsConfig, AwsProvider};
use extdns_provider_azure::{AzureConfig, AzureProvider};
use extdns_provider_cloudflare::{CloudflareConfig, CloudflareProvider};
use extdns_provider_coredns::{CorednsConfig, CorednsProvider};
use extdns_provider_google::{GoogleConfig, GoogleProvider};
use extdns_provider_pdns::{PdnsConfig, PdnsProvider};
use extdns_provider_pihole::{PiholeConfig, PiholeProvider};
use extdns_provider_rfc2136::{Rfc2136Config, Rfc2136Provider};
use extdns_provider_webhook::{CallCounter, WebhookConfig, WebhookProvider};

/// [`ProviderSettings::default_reread_interval`] of the clouds rate-limited per account.
pub const CLOUD_REREAD_INTERVAL: Duration = Duration::from_secs(3600);

/// The provider and its configuration. Providers extdns does not implement are refused when the provider
/// is built, as before any check of the settings existed (a run-time failure, not a usage error).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ProviderSettings {
    /// `inmemory`: records kept in the process (tests, demos).
    InMemory {
        /// The zones that exist.
        zones: Vec<String>,
        /// Writes a second at most; `None` for no limit of extdns's own.
        write_rate: Option<Rate>,
    },
    /// `rfc2136`: DNS UPDATE to an authoritative server (the servers, zones, TSIG key and transport).
    Rfc2136(Box<Rfc2136Config>),
    /// `aws`: Route53.
    Aws(Box<AwsConfig>),
    /// `pdns`: PowerDNS's HTTP API (the server, key and TLS settings).
    Pdns(Box<PdnsConfig>),
    /// `coredns`: CoreDNS's etcd backend.
    Coredns(Box<CorednsConfig>),
    /// `cloudflare`.
    Cloudflare(Box<CloudflareConfig>),
    /// `google`: Cloud DNS.
    Google(Box<GoogleConfig>),
    /// `azure` (`azure-dns`) and `azure-private-dns`.
    Azure(Box<AzureConfig>),
    /// `pihole`: Pi-hole's v6 REST API (the server, password and TLS setting).
    Pihole(Box<PiholeConfig>),
    /// `webhook`: the records live behind a webhook server.
    Webhook(Box<WebhookConfig>),
    /// `dns-server`: extdns answers for the zones itself (extdns only).
    DnsServer(Arc<extdns_dns_server::ServerConfig>),
    /// An external-dns provider extdns does not implement, by its name; refused when built.
    Unsupported(&'static str),
}

impl ProviderSettings {
    /// The rate extdns writes at (`None`: no limit of its own), for whichever provider this is.
    pub fn set_write_rate(&mut self, rate: Option<Rate>) {
        match self {
            ProviderSettings::InMemory { write_rate, .. } => *write_rate = rate,
            ProviderSettings::Rfc2136(config) => config.write_rate = rate,
            ProviderSettings::Aws(config) => config.api.calls.write_rate = rate,
            ProviderSettings::Pdns(config) => config.calls.write_rate = rate,
            ProviderSettings::Coredns(config) => config.write_rate = rate,
            ProviderSettings::Cloudflare(config) => config.api.calls.write_rate = rate,
            ProviderSettings::Google(config) => config.api.calls.write_rate = rate,
            ProviderSettings::Azure(config) => config.api.calls.write_rate = rate,
            ProviderSettings::Pihole(config) => config.calls.write_rate = rate,
            ProviderSettings::Webhook(config) => config.write_rate = rate,
            // Writes go to memory: nothing to pace.
            ProviderSettings::DnsServer(_) | ProviderSettings::Unsupported(_) => {}
        }
    }

    /// The request budget of the cloud account in requests a second, which every provider of the account
    /// shares (`extdns_provider::budget`), in place of the cloud's documented limit; a rate that is not
    /// positive and finite leaves the documented limit. The other providers have no account limit and
    /// ignore it.
    pub fn set_request_rate(&mut self, per_second: f64) {
        let Some(rate) = Rate::per_second(per_second) else {
            return;
        };
        match self {
            ProviderSettings::Aws(config) => config.api.requests = AwsConfig::account_rate(per_second),
            ProviderSettings::Cloudflare(config) => config.api.requests = Some(rate),
            ProviderSettings::Google(config) => config.api.requests = Some(rate),
            // Resource Manager counts writes in a bucket of their own; a budget given for the account
            // bounds every request, writes too, so it replaces both documented limits.
            ProviderSettings::Azure(config) => {
                config.api.requests = Some(rate);
                config.api.account_writes = Some(rate);
            }
            _ => {}
        }
    }

    /// How long the records read may be planned from before the zones are read whole again, unless
    /// `--provider-reread-interval` says: an hour for the clouds whose API is rate-limited per account
    /// (a full read an hour, where reading every sync spends the account's budget on reads that find
    /// nothing new; extdns's own writes are folded in between), zero (every sync) for the others, whose
    /// servers have no such budget.
    pub fn default_reread_interval(&self) -> Duration {
        match self {
            ProviderSettings::Aws(_)
            | ProviderSettings::Cloudflare(_)
            | ProviderSettings::Google(_)
            | ProviderSettings::Azure(_) => CLOUD_REREAD_INTERVAL,
            _ => Duration::ZERO,
        }
    }

    /// external-dns's name of the provider.
    pub fn name(&self) -> &'static str {
        match self {
            ProviderSettings::InMemory { .. } => "inmemory",
            ProviderSettings::Rfc2136(_) => "rfc2136",
            ProviderSettings::Aws(_) => "aws",
            ProviderSettings::Pdns(_) => "pdns",
            ProviderSettings::Coredns(_) => "coredns",
            ProviderSettings::Cloudflare(_) => "cloudflare",
            ProviderSettings::Google(_) => "google",
            ProviderSettings::Azure(config) => config.kind.flag(),
            ProviderSettings::Pihole(_) => "pihole",
            ProviderSettings::Webhook(_) => "webhook",
            ProviderSettings::DnsServer(_) => "dns-server",
            ProviderSettings::Unsupported(name) => name,
        }
    }
}

/// What a provider reports to and draws from beyond its configuration: the process's metrics and the
/// request budgets of the cloud accounts. The default observes nothing and gives the provider a budget of
/// its own.
#[derive(Debug, Clone, Default)]
pub struct Instruments {
    /// Every HTTP request's duration (`external_dns_http_request_duration_seconds`).
    pub observer: Observer,
    /// The webhook provider's calls (`external_dns_webhook_provider_*`).
    pub calls: CallCounter,
    /// The cloud accounts' budgets: the providers given one pool whose credentials name one account share
    /// its budget.
    pub pool: Arc<PacerPool>,
}

/// Why a provider could not be built: its crate's own error, kept whole so the caller can tell which
/// setting it is about.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The RFC 2136 configuration is refused.
    #[error(transparent)]
    Rfc2136(#[from] extdns_provider_rfc2136::ConfigError),
    /// The Route53 configuration is refused.
    #[error(transparent)]
    Aws(#[from] extdns_provider_aws::ConfigError),
    /// The PowerDNS configuration is refused.
    #[error(transparent)]
    Pdns(#[from] extdns_provider_pdns::ConfigError),
    /// Another provider refused its configuration or could not be reached: its crate's own error.
    #[error("{provider}: {source}")]
    Refused {
        /// external-dns's name of the provider.
        provider: &'static str,
        /// The provider crate's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// external-dns has this provider; extdns does not.
    #[error("provider {0} is not supported by extdns yet")]
    Unsupported(&'static str),
}

/// The provider the settings name, reporting to and drawing from `instruments`. Async because some
/// providers must talk to their backend before the first sync (the webhook negotiates its domain filter).
pub async fn build_provider(
    settings: &ProviderSettings,
    instruments: &Instruments,
) -> Result<Arc<dyn Provider>, BuildError> {
    let observer = instruments.observer.clone();
    let pool = instruments.pool.clone();
    Ok(match settings {
        ProviderSettings::Webhook(config) => {
            let mut config = (**config).clone();
            config.observer = observer;
            config.calls = instruments.calls.clone();
            Arc::new(WebhookProvider::connect(&config).await.map_err(refused(settings))?)
        }
        ProviderSettings::InMemory { zones, write_rate } => {
            Arc::new(InMemoryProvider::new(zones.clone()).with_write_rate(*write_rate))
        }
        ProviderSettings::Rfc2136(config) => Arc::new(Rfc2136Provider::new(config)?),
        ProviderSettings::Aws(config) => {
            let mut config = (**config).clone();
            config.observer = observer;
            config.api.pool = pool;
            Arc::new(AwsProvider::new(config)?)
        }
        ProviderSettings::Pdns(config) => {
            let mut config = (**config).clone();
            config.observer = observer;
            Arc::new(PdnsProvider::new(&config)?)
        }
        ProviderSettings::Coredns(config) => {
            let mut config = (**config).clone();
            config.observer = observer;
            Arc::new(CorednsProvider::new(config).map_err(refused(settings))?)
        }
        ProviderSettings::Cloudflare(config) => {
            let mut config = (**config).clone();
            config.observer = observer;
            config.api.pool = pool;
            Arc::new(CloudflareProvider::new(config).map_err(refused(settings))?)
        }
        ProviderSettings::Google(config) => {
            let mut config = (**config).clone();
            config.observer = observer;
            config.api.pool = pool;
            Arc::new(GoogleProvider::new(config).map_err(refused(settings))?)
        }
        ProviderSettings::Azure(config) => {
            let mut config = (**config).clone();
            config.observer = observer;
            config.api.pool = pool;
            Arc::new(AzureProvider::new(config).map_err(refused(settings))?)
        }
        ProviderSettings::Pihole(config) => {
            let mut config = (**config).clone();
            config.observer = observer;
            Arc::new(PiholeProvider::new(config).map_err(refused(settings))?)
        }
        ProviderSettings::DnsServer(config) => Arc::new(zones_and_provider(config).0),
        ProviderSettings::Unsupported(name) => return Err(BuildError::Unsupported(name)),
    })
}

/// A provider's refusal, kept whole, with the provider's name.
fn refused<E>(settings: &ProviderSettings) -> impl FnOnce(E) -> BuildError
where
    E: std::error::Error + Send + Sync + 'static,
{
    let provider = settings.name();
    move |e| BuildError::Refused {
        provider,
        source: Box::new(e),
    }
}
