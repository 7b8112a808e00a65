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
        ProviderName::Rfc2136 => rfc2136(flags),
        other => Err(ValidationError(format!(
            "provider {} is not supported by extdns yet",
            other.as_str()
        ))),
    }
}

/// `--provider=rfc2136` from external-dns's `--rfc2136-*` flags (and the shared `--tls-*` ones).
fn rfc2136(flags: &Flags) -> Result<Arc<dyn Provider>, ValidationError> {
    use extdns_provider_rfc2136::{LoadBalancing, Rfc2136Config, Rfc2136Provider, TlsOptions};

    use crate::flags::LoadBalancingStrategy;

    let f = &flags.rfc2136;
    let path = |s: &str| (!s.trim().is_empty()).then(|| std::path::PathBuf::from(s.trim()));
    let config = Rfc2136Config {
        hosts: f.host.clone(),
        port: f.port,
        zones: f.zone.clone(),
        insecure: f.insecure,
        tsig_keyname: f.tsig_keyname.clone(),
        tsig_secret: f.tsig_secret.clone(),
        tsig_secret_alg: f.tsig_secret_alg.clone(),
        axfr: f.effective_axfr(),
        min_ttl: f.min_ttl,
        batch_change_size: usize::try_from(f.batch_change_size).unwrap_or(0),
        gss_tsig: f.gss_tsig,
        load_balancing: match f.load_balancing_strategy {
            LoadBalancingStrategy::Random => LoadBalancing::Random,
            LoadBalancingStrategy::RoundRobin => LoadBalancing::RoundRobin,
            LoadBalancingStrategy::Disabled => LoadBalancing::Disabled,
        },
        tls: f.use_tls.then(|| TlsOptions {
            skip_verify: f.skip_tls_verify,
            ca_file: path(&flags.provider.tls_ca),
            client_cert: path(&flags.provider.tls_client_cert),
            client_key: path(&flags.provider.tls_client_cert_key),
        }),
        ..Rfc2136Config::default()
    };
    if f.tsig_axfr {
        tracing::warn!("--rfc2136-tsig-axfr is deprecated: use --rfc2136-axfr");
    }
    let provider = Rfc2136Provider::new(&config).map_err(|e| ValidationError(format!("{}: {e}", rfc2136_flag(&e))))?;
    Ok(Arc::new(provider))
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
