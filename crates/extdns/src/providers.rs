//! From provider settings to a [`Provider`]. One arm per provider extdns implements; every other
//! external-dns name is a clear startup error rather than a silent no-op.

use std::sync::Arc;

use extdns_provider::{InMemoryProvider, Provider};
use extdns_provider_rfc2136::Rfc2136Provider;
use extdns_provider_webhook::WebhookProvider;

use crate::settings::{ProviderSettings, ValidationError};

/// The provider the settings name. Async because some providers must talk to their backend before the first
/// sync (the webhook negotiates its domain filter).
pub async fn build_provider(settings: &ProviderSettings) -> Result<Arc<dyn Provider>, ValidationError> {
    match settings {
        ProviderSettings::Webhook(config) => {
            let provider = WebhookProvider::connect(config)
                .await
                .map_err(|e| ValidationError(format!("--provider=webhook: {e}")))?;
            Ok(Arc::new(provider))
        }
        ProviderSettings::InMemory { zones } => Ok(Arc::new(InMemoryProvider::new(zones.clone()))),
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
        ProviderSettings::Unsupported(name) => Err(ValidationError(format!(
            "provider {} is not supported by extdns yet",
            name.as_str()
        ))),
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
        Setting::Tls => "--tls-ca/--tls-client-cert/--tls-client-cert-key",
        _ => "--rfc2136-*",
    }
}
