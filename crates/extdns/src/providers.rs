//! From provider settings to a [`Provider`]. One arm per provider extdns implements; every other
//! external-dns name is a clear startup error rather than a silent no-op.

use std::sync::Arc;

use extdns_controller::{Metrics, WebhookCall};
use extdns_dns_server::zones_and_provider;
use extdns_provider::budget::PacerPool;
use extdns_provider::http::Observer;
use extdns_provider::{InMemoryProvider, Provider};
use extdns_provider_cloudflare::CloudflareProvider;
use extdns_provider_coredns::CorednsProvider;
use extdns_provider_pihole::PiholeProvider;
use extdns_provider_rfc2136::Rfc2136Provider;
use extdns_provider_webhook::{Call, CallCounter, CountCalls, WebhookProvider};

use crate::settings::{ProviderSettings, ValidationError};

/// The provider the settings name. Async because some providers must talk to their backend before the first
/// sync (the webhook negotiates its domain filter).
pub async fn build_provider(settings: &ProviderSettings) -> Result<Arc<dyn Provider>, ValidationError> {
    build_observed_provider(settings, None).await
}

/// [`build_provider`] whose HTTP requests and webhook calls feed `metrics`
/// (`external_dns_http_request_duration_seconds`, `external_dns_webhook_provider_*`). Its cloud account's
/// budget is its own: the one provider of the process.
pub async fn build_observed_provider(
    settings: &ProviderSettings,
    metrics: Option<&Arc<Metrics>>,
) -> Result<Arc<dyn Provider>, ValidationError> {
    build_pooled_provider(settings, metrics, &Arc::new(PacerPool::new())).await
}

/// [`build_observed_provider`] drawing its cloud account's requests from `pool`, which every provider
/// of the process is given, so the providers of one account share its budget (`--dns-provider-crds`).
pub async fn build_pooled_provider(
    settings: &ProviderSettings,
    metrics: Option<&Arc<Metrics>>,
    pool: &Arc<PacerPool>,
) -> Result<Arc<dyn Provider>, ValidationError> {
    let observer = Observer(metrics.map(|m| m.request_durations() as Arc<dyn extdns_provider::http::Observe>));
    match settings {
        ProviderSettings::Webhook(config) => {
            let mut config = config.clone();
            config.observer = observer;
            if let Some(m) = metrics {
                config.calls = CallCounter(Some(Arc::new(WebhookMetrics(m.clone()))));
            }
            let provider = WebhookProvider::connect(&config)
                .await
                .map_err(|e| ValidationError(format!("--provider=webhook: {e}")))?;
            Ok(Arc::new(provider))
        }
        ProviderSettings::InMemory { zones, write_rate } => Ok(Arc::new(
            InMemoryProvider::new(zones.clone()).with_write_rate(*write_rate),
        )),
        ProviderSettings::Rfc2136 {
            config,
            deprecated_tsig_axfr,
        } => {
            if *deprecated_tsig_axfr {
                tracing::warn!("--rfc2136-tsig-axfr is deprecated: use --rfc2136-axfr");
            }
            let provider =
                Rfc2136Provider::new(config).map_err(|e| ValidationError(format!("{}: {e}", rfc2136_flag(&e))))?;
            Ok(Arc::new(provider))
        }
        ProviderSettings::Aws(config) => {
            let mut config = config.as_ref().clone();
            config.observer = observer;
            config.pool = pool.clone();
            let provider = extdns_provider_aws::AwsProvider::new(config)
                .map_err(|e| ValidationError(format!("--provider=aws: {}", aws_error(&e))))?;
            Ok(Arc::new(provider))
        }
        ProviderSettings::Pdns { config } => {
            let mut config = config.clone();
            config.observer = observer;
            let provider = extdns_provider_pdns::PdnsProvider::new(&config)
                .map_err(|e| ValidationError(format!("{}: {e}", crate::settings::pdns::flag(&e))))?;
            Ok(Arc::new(provider))
        }
        ProviderSettings::Coredns(config) => {
            let mut config = (**config).clone();
            config.observer = observer;
            started("--provider=coredns", CorednsProvider::new(config))
        }
        ProviderSettings::Cloudflare(config) => {
            let mut config = (**config).clone();
            config.observer = observer;
            config.api.pool = pool.clone();
            started("--provider=cloudflare", CloudflareProvider::new(config))
        }
        ProviderSettings::Google(config) => {
            let mut config = (**config).clone();
            config.observer = observer;
            config.api.pool = pool.clone();
            started("--provider=google", extdns_provider_google::GoogleProvider::new(config))
        }
        ProviderSettings::Azure(config) => {
            let mut config = (**config).clone();
            config.observer = observer;
            config.api.pool = pool.clone();
            let flag = format!("--provider={}", config.kind.flag());
            started(&flag, extdns_provider_azure::AzureProvider::new(config))
        }
        ProviderSettings::Pihole { config, txt_registry } => {
            if *txt_registry {
                tracing::warn!(
                    "--registry=txt with --provider=pihole: Pi-hole stores no TXT records, so every change that \
                     needs an ownership record is refused; run --registry=noop as external-dns's Pi-hole \
                     tutorial says"
                );
            }
            let mut config = (**config).clone();
            config.observer = observer;
            started("--provider=pihole", PiholeProvider::new(config))
        }
        ProviderSettings::DnsServer(config) => Ok(Arc::new(zones_and_provider(config).0)),
        ProviderSettings::Unsupported(name) => Err(ValidationError(format!(
            "provider {} is not supported by extdns yet",
            name.as_str()
        ))),
    }
}

/// A provider just made, or its configuration error named after `flag`.
fn started<P: Provider + 'static>(
    flag: &str,
    made: Result<P, impl std::fmt::Display>,
) -> Result<Arc<dyn Provider>, ValidationError> {
    match made {
        Ok(p) => Ok(Arc::new(p)),
        Err(e) => Err(ValidationError(format!("{flag}: {e}"))),
    }
}

/// external-dns's webhook counters, fed by the webhook provider's calls.
struct WebhookMetrics(Arc<Metrics>);

impl CountCalls for WebhookMetrics {
    fn count(&self, call: Call, failed: bool) {
        let call = match call {
            Call::Records => WebhookCall::Records,
            Call::ApplyChanges => WebhookCall::ApplyChanges,
            _ => WebhookCall::AdjustEndpoints,
        };
        self.0.count_webhook_call(call, failed);
    }
}

/// The flag behind the RFC2136 setting a configuration error is about.
fn rfc2136_flag(e: &extdns_provider_rfc2136::ConfigError) -> &'static str {
    use extdns_provider_rfc2136::Setting;
    match e.setting() {
        Setting::GssTsig => "--rfc2136-gss-tsig",
        Setting::BatchChangeSize => "--rfc2136-batch-change-size",
        Setting::Hosts => "--rfc2136-host",
        Setting::Zones => "--rfc2136-zone",
        Setting::TsigSecretAlg => "--rfc2136-tsig-secret-alg",
        Setting::TsigKeyname => "--rfc2136-tsig-keyname",
        Setting::TsigSecret => "--rfc2136-tsig-secret",
        Setting::MinTtl => "--rfc2136-min-ttl",
        Setting::LoadBalancing => "--rfc2136-load-balancing-strategy",
        Setting::TlsCa => "--tls-ca",
        Setting::TlsClientCert => "--tls-client-cert/--tls-client-cert-key",
        Setting::Tls => "--rfc2136-use-tls",
        _ => "--rfc2136-*",
    }
}

/// A Route53 configuration error with the flag behind the setting it is about.
fn aws_error(e: &extdns_provider_aws::ConfigError) -> String {
    use extdns_provider_aws::{ConfigError, Setting};
    match e {
        ConfigError::Zero(Setting::BatchChangeSize) => format!("--aws-batch-change-size: {e}"),
        ConfigError::Zero(Setting::BatchChangeSizeBytes) => format!("--aws-batch-change-size-bytes: {e}"),
        ConfigError::Zero(Setting::BatchChangeSizeValues) => format!("--aws-batch-change-size-values: {e}"),
        _ => e.to_string(),
    }
}
