//! `--provider=dns-server` in a command that runs a provider (the controller, the webhook server, a provider
//! object): extdns-dns-server's zones, provider and listeners, bound into the process's metrics before the
//! first sync.

use std::sync::Arc;

use anyhow::Context as _;
use extdns_controller::Metrics;
use extdns_dns_server::DnsServer;
use extdns_dns_server::serving::{METRICS_PREFIX, bind_serving};
use extdns_provider::Provider;

use crate::providers::build_observed_provider;
use crate::settings::ProviderSettings;

/// The provider the settings name with, for `--provider=dns-server`, the server answering from it, bound
/// but not serving yet, its metrics in `metrics`; any other provider's requests report to `metrics`.
pub async fn provider_and_server(
    provider: &ProviderSettings,
    mut metrics: Metrics,
) -> anyhow::Result<(Arc<Metrics>, Arc<dyn Provider>, Option<DnsServer>)> {
    let bound = bind_if_serving(provider, &mut metrics)?;
    let metrics = Arc::new(metrics);
    Ok(match bound {
        Some((provider, server)) => (metrics, provider, Some(server)),
        None => {
            let provider = build_observed_provider(provider, Some(&metrics)).await?;
            (metrics, provider, None)
        }
    })
}

/// The provider the controller writes and the server answering from it, bound but not serving yet, when
/// the settings name `--provider=dns-server`; `None` for every other provider.
pub fn bind_if_serving(
    provider: &ProviderSettings,
    metrics: &mut Metrics,
) -> anyhow::Result<Option<(Arc<dyn Provider>, DnsServer)>> {
    let ProviderSettings::DnsServer(config) = provider else {
        return Ok(None);
    };
    let mut bound = None;
    metrics.register_with_prefix(METRICS_PREFIX, |registry| bound = Some(bind_serving(config, registry)));
    let (provider, server) = bound
        .context("the metrics registry was not handed over")?
        .context("--dns-server-listen: cannot answer DNS there")?;
    Ok(Some((Arc::new(provider), server)))
}
