//! `--dns-provider-crds`: the deployment's own settings when the providers come from DNSProvider and
//! ClusterDNSProvider objects. What is the deployment's as a whole (the cluster view, the metrics server,
//! leader election, Events) is read here once; each provider's settings are its command line, the
//! deployment's with the provider's flags applied, checked by [`super::controller_with_env`] like any other
//! (crates/extdns/src/dns_providers).

use std::ffi::OsString;
use std::time::Duration;

use super::{KubeSettings, LeaderSettings, SourceSettings, ValidationError, events, fail, kube, leader, sources};
use crate::flags::Flags;

/// The deployment's settings in `--dns-provider-crds` mode.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FleetSettings {
    /// The deployment's command line (program name first), every provider's defaults.
    pub args: Vec<OsString>,
    /// The deployment's sources: what the one set of informers watches, and the only sources a provider
    /// may enable.
    pub sources: SourceSettings,
    /// The Kubernetes client and the live view.
    pub kube: KubeSettings,
    /// `--metrics-address`: one server for every provider.
    pub metrics_address: String,
    /// `--leader-elect`: one lease for every provider.
    pub leader: Option<LeaderSettings>,
    /// `--events-emit`.
    pub events: extdns_controller::EventsConfig,
    /// `--interval`: how often each provider's Secret is read again.
    pub interval: Duration,
    /// `--status-updates`: one writer for every provider's names, each naming the provider that took it.
    pub status_updates: bool,
}

/// The deployment's settings; `args` is its command line as given (program name first).
pub fn fleet(flags: &Flags, args: &[OsString]) -> Result<FleetSettings, ValidationError> {
    if !flags.offline.manifests.is_empty() {
        return fail(
            "--dns-provider-crds watches provider objects on the API server; it cannot be used with --manifests",
        );
    }
    if flags.control.once {
        return fail(
            "--dns-provider-crds runs until stopped, following its provider objects; --once cannot be used with it",
        );
    }
    for_plan(flags, args)
}

/// The deployment's settings for `extdns plan --dns-provider-crds`, which may read the provider objects and
/// their Secrets from `--manifests` and plans each provider once.
pub fn for_plan(flags: &Flags, args: &[OsString]) -> Result<FleetSettings, ValidationError> {
    if let Some(p) = flags.provider.provider {
        return fail(format!(
            "--dns-provider-crds takes the providers from DNSProvider and ClusterDNSProvider objects; --provider={} \
             cannot be given with it (configure that provider as a ClusterDNSProvider)",
            p.as_str()
        ));
    }
    if flags.webhook.webhook_server {
        return fail("--webhook-server serves one provider; it cannot be used with --dns-provider-crds");
    }
    let sources = sources(flags)?;
    let leader = leader::config(&flags.leader)?;
    let c = &flags.control;
    let events = events(flags);
    Ok(FleetSettings {
        args: args.to_vec(),
        kube: kube::config(flags, &sources),
        sources,
        metrics_address: c.metrics_address.clone(),
        leader,
        events,
        interval: c.interval,
        status_updates: c.status_updates,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::tests::test_flags;

    #[test]
    fn the_mode_refuses_a_provider_manifests_once_and_the_webhook_server() {
        for (extra, refused) in [
            ("--provider=aws", "--provider=aws"),
            ("--manifests=x.yaml", "--manifests"),
            ("--once", "--once"),
            ("--webhook-server", "--webhook-server"),
        ] {
            let flags = test_flags(["--source=service", "--dns-provider-crds", extra]);
            let e = fleet(&flags, &[]).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(e.contains(refused), "{extra}: {e}");
        }
        let flags = test_flags(["--source=service", "--dns-provider-crds", "--interval=30s"]);
        let fleet = fleet(&flags, &[]).map_err(|e| e.to_string());
        assert!(fleet.is_ok_and(|f| f.interval == Duration::from_secs(30)));
    }
}
