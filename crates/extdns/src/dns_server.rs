//! `--provider=dns-server` in a command that runs a provider (the controller, the webhook server, a provider
//! object): extdns-dns-server's zones, provider and listeners, bound into the process's metrics before the
//! first sync, and run on a runtime of their own (`Serving`).

use std::sync::Arc;

use anyhow::Context as _;
use extdns_controller::{CancellationToken, Metrics};
use extdns_dns_server::DnsServer;
use extdns_dns_server::serving::{METRICS_PREFIX, bind_serving};
use extdns_provider::Provider;

use crate::flags::{Cli, ProviderName};
use crate::providers::build_observed_provider;
use crate::settings::ProviderSettings;

/// Worker threads of the server's own runtime: TCP and DoT answers, NOTIFY and zone transfers are a small
/// share of the traffic (UDP has threads of its own), and two keep one long transfer from holding them.
const SERVING_THREADS: usize = 2;

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

/// Whether the command line runs a built-in DNS server whose answers go before the controller's work
/// ([`crate::priority`]): the controller and the webhook server with `--provider=dns-server` (both start it
/// with [`Serving`]). The providers of `--dns-provider-crds` start their servers later, from the runtime's
/// own threads, which therefore keep the process's priority there.
pub fn answers_first(cli: &Cli) -> bool {
    cli.command.is_none()
        && cli.flags.provider.provider == Some(ProviderName::DnsServer)
        && !cli.flags.provider.dns_provider_crds
}

/// The DNS server running on a runtime of its own, whose threads (and the UDP workers they start) keep the
/// priority of the thread that started it, while the controller's runtime runs lower ([`crate::priority`]).
pub struct Serving {
    /// Always there until dropped; taken then, to be let go without blocking (a runtime dropped on another
    /// runtime's thread would panic).
    runtime: Option<tokio::runtime::Runtime>,
    task: tokio::task::JoinHandle<()>,
}

impl Serving {
    /// Starts `server` on [`SERVING_THREADS`] threads of a new runtime until `shutdown`, then lowers the
    /// calling thread, which runs the controller's loop: started before, the server's threads are not.
    pub fn start(server: DnsServer, shutdown: CancellationToken) -> anyhow::Result<Serving> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(SERVING_THREADS)
            .thread_name("dns-serve")
            .enable_all()
            .build()
            .context("cannot start the DNS server's runtime")?;
        let task = runtime.spawn(server.run(shutdown));
        crate::priority::lower_this_thread();
        Ok(Serving {
            runtime: Some(runtime),
            task,
        })
    }

    /// Waits for the server to stop (its shutdown token cancelled).
    pub async fn stopped(mut self) {
        if (&mut self.task).await.is_err() {
            tracing::warn!("the DNS server's task panicked");
        }
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
