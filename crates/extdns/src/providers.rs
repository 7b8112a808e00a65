//! From provider settings to a [`Provider`]. One arm per provider extdns implements; every other
//! external-dns name is a clear startup error rather than a silent no-op.

use std::sync::Arc;

use extdns_provider::{InMemoryProvider, Provider};
use extdns_provider_rfc2136::Rfc2136Provider;

use crate::settings::{ProviderSettings, ValidationError};

/// The provider the settings name.
pub fn build_provider(settings: &ProviderSettings) -> Result<Arc<dyn Provider>, ValidationError> {
    match settings {
        ProviderSettings::InMemory { zones } => Ok(Arc::new(InMemoryProvider::new(zones.clone()))),
        ProviderSettings::Rfc2136 {
            config,
            deprecated_tsig_axfr,
        } => {
            if *deprecated_tsig_axfr {
                tracing::warn!("--rfc2136-tsig-axfr is deprecated: use --rfc2136-axfr");
            }
            let provider = Rfc2136Provider::new(config).map_err(|e| ValidationError(e.to_string()))?;
            Ok(Arc::new(provider))
        }
        ProviderSettings::Unsupported(name) => Err(ValidationError(format!(
            "provider {} is not supported by extdns yet",
            name.as_str()
        ))),
    }
}
