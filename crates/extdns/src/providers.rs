//! From provider settings to a [`Provider`] (built by [`extdns_wiring::build_provider`]), with the process's
//! metrics attached and a refused configuration named after the flag behind it.

use std::sync::Arc;

use extdns_controller::{Metrics, WebhookCall};
use extdns_provider::Provider;
use extdns_provider::budget::PacerPool;
use extdns_provider::http::Observer;
use extdns_provider_webhook::{Call, CallCounter, CountCalls};
use extdns_wiring::{BuildError, Instruments, build_provider as build};

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
    let instruments = Instruments {
        observer: Observer(metrics.map(|m| m.request_durations() as Arc<dyn extdns_provider::http::Observe>)),
        calls: CallCounter(metrics.map(|m| Arc::new(WebhookMetrics(m.clone())) as Arc<dyn CountCalls>)),
        pool: pool.clone(),
    };
    build(settings, &instruments).await.map_err(|e| named(&e))
}

/// A provider's configuration error with the flag behind the setting it is about, else the provider's.
fn named(e: &BuildError) -> ValidationError {
    ValidationError(match e {
        BuildError::Rfc2136(c) => format!("{}: {c}", rfc2136_flag(c)),
        BuildError::Aws(c) => format!("--provider=aws: {}", aws_error(c)),
        BuildError::Pdns(c) => format!("{}: {c}", crate::settings::pdns::flag(c)),
        BuildError::Refused { provider, source } => format!("--provider={provider}: {source}"),
        _ => e.to_string(),
    })
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
