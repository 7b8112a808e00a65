//! `--provider`: from flags to a [`Provider`]. One arm per provider extdns implements; every other
//! external-dns name is a clear startup error rather than a silent no-op.

use std::sync::Arc;

use extdns_provider::{InMemoryProvider, Provider};

use crate::flags::{Flags, ProviderName};
use crate::validate::ValidationError;

/// The provider `--provider` names, configured from its flags.
pub fn build_provider(flags: &Flags) -> Result<Arc<dyn Provider>, ValidationError> {
    let Some(name) = flags.provider.provider else {
        return Err(ValidationError("--provider is required".to_string()));
    };
    match name {
        ProviderName::Inmemory => Ok(Arc::new(InMemoryProvider::new(flags.inmemory.inmemory_zone.clone()))),
        other => Err(ValidationError(format!(
            "provider {} is not supported by extdns yet",
            other.as_str()
        ))),
    }
}
