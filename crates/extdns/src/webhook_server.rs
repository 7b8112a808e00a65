//! `extdns --webhook-server`: the selected provider served over the webhook protocol, so an external-dns
//! controller (or any webhook client) can use an extdns provider. No sources, no registry, no loop: the
//! client owns all of that.

use anyhow::Context as _;
use extdns_controller::{CancellationToken, Metrics, start_metrics_server};
use extdns_provider_webhook::start_server;
use tracing::info;

use crate::dns_server::{Serving, provider_and_server};
use crate::run::{REVISION, VERSION, spawn_signal_handler};
use crate::settings::WebhookServerSettings;

/// Serves until SIGTERM/SIGINT. `/healthz` and `/metrics` are on the metrics address, as for the
/// controller (external-dns's server has none; a kubelet probe needs one).
pub async fn run(settings: &WebhookServerSettings) -> anyhow::Result<()> {
    let shutdown = CancellationToken::new();
    spawn_signal_handler(shutdown.clone());
    // The built-in DNS server behind the webhook: a webhook client (external-dns) writes the zones, and this
    // process answers for them, as the controller would.
    let (metrics, provider, dns_server) =
        provider_and_server(&settings.provider, Metrics::new(VERSION, REVISION)).await?;
    // The answers on threads of their own, ahead of the webhook's writes (`crate::priority`).
    let serving = dns_server
        .map(|server| Serving::start(server, shutdown.clone()))
        .transpose()?;
    let health = start_metrics_server(&settings.metrics_address, metrics, shutdown.clone()).await?;
    let server = start_server(&settings.address, provider, settings.options, shutdown.clone())
        .await
        .context("--webhook-server-address")?;
    info!(
        version = VERSION,
        provider = settings.provider.name(),
        address = %server.local_addr,
        "extdns webhook server started"
    );
    let _ = server.handle.await;
    shutdown.cancel();
    let _ = health.handle.await;
    if let Some(serving) = serving {
        serving.stopped().await;
    }
    Ok(())
}
