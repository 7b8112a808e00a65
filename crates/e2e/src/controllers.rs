//! extdns and external-dns as users run them: the same flags, a kubeconfig with the deploy/ ServiceAccount
//! token, RFC2136 to a BIND server. Both get identical arguments, so a difference in the zones is a
//! difference in behaviour.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::control_plane::ControlPlane;
use crate::dns::{DnsServer, KEY_NAME, SECRET, ZONE};
use crate::proc::{Proc, eventually, tail};
use extdns_test_support::try_free_port;

pub const OWNER: &str = "e2e";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    Extdns,
    /// external-dns v0.23.0, the reference.
    ExternalDns,
    /// external-dns v0.22.0, the release users upgrading from it hand their zones over from.
    ExternalDnsPrevious,
}

impl Which {
    pub fn name(self) -> &'static str {
        match self {
            Which::Extdns => "extdns",
            Which::ExternalDns => "external-dns",
            Which::ExternalDnsPrevious => "external-dns v0.22.0",
        }
    }
}

/// How one controller run is configured.
#[derive(Debug, Clone)]
pub struct Run<'a> {
    pub which: Which,
    /// `--namespace`: each test keeps to its own namespace.
    pub namespace: &'a str,
    pub owner: &'a str,
    /// Flags beyond the common set (e.g. `--events`, `--interval=2s`).
    pub extra: Vec<String>,
    /// Every namespace and the service source only ([`cluster_flags`]) instead of [`common_flags`]: the
    /// scale benchmark, whose objects fill many namespaces.
    pub cluster_wide: bool,
    /// Another identity than the deploy/ ServiceAccount (a kubeconfig with a token of its own).
    pub kubeconfig: Option<std::path::PathBuf>,
    /// Only the `--source` flags of `extra`, not the common set's.
    pub only_sources: bool,
    /// An extdns subcommand (`plan`, `endpoints`) given the same flags.
    pub subcommand: Option<&'static str>,
    /// The metrics port, for a run that reads the metrics; a free one when unset.
    pub metrics_port: Option<u16>,
    /// Provider and registry flags instead of RFC2136 to the run's BIND server (another provider).
    pub provider: Option<Vec<String>>,
    /// Variables the controller gets beyond the e2e run's own (the provider's endpoint and credentials).
    pub env: Vec<(&'static str, String)>,
}

impl<'a> Run<'a> {
    pub fn new(which: Which, namespace: &'a str) -> Self {
        Run {
            which,
            namespace,
            owner: OWNER,
            extra: Vec::new(),
            cluster_wide: false,
            kubeconfig: None,
            only_sources: false,
            subcommand: None,
            metrics_port: None,
            provider: None,
            env: Vec::new(),
        }
    }

    /// A run of `sources` alone (`--source=` each), the common flags otherwise: what a source's
    /// differential runs both controllers with.
    pub fn of_sources(which: Which, namespace: &'a str, sources: &[&str]) -> Self {
        let mut run = Run::new(which, namespace);
        run.extra = sources.iter().map(|s| format!("--source={s}")).collect();
        run.only_sources = true;
        run
    }

    pub fn flag(mut self, flag: impl Into<String>) -> Self {
        self.extra.push(flag.into());
        self
    }

    /// The command line, against `dns` and the control plane, with metrics on a free port.
    pub fn command(&self, cp: &ControlPlane, dns: &DnsServer) -> Result<Command> {
        self.command_to(cp, Some(dns.port))
    }

    /// A long-running controller writing only where [`Run::provider`] says (the built-in DNS server, a
    /// cloud fake): no BIND server behind it.
    pub fn start_own_provider(&self, cp: &ControlPlane, log: &Path) -> Result<Proc> {
        let cmd = self.command_to(cp, None)?;
        Proc::spawn(self.which.name(), cmd, log)
    }

    /// [`Run::command`], with RFC2136 to BIND on `dns_port` unless the run names its provider.
    fn command_to(&self, cp: &ControlPlane, dns_port: Option<u16>) -> Result<Command> {
        let program = match self.which {
            Which::Extdns => &cp.binaries().extdns,
            Which::ExternalDns => &cp.binaries().external_dns,
            Which::ExternalDnsPrevious => &cp.binaries().external_dns_previous,
        };
        // Only what the run names: an inherited `AWS_*` (a profile, a role, an endpoint) could send a Route53
        // run's credential chain or calls off the machine.
        let mut cmd = extdns_test_support::cli::command(program, &["AWS_", "KUBECONFIG"]);
        cmd.args(self.subcommand);
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        let kubeconfig = self.kubeconfig.as_deref().unwrap_or(&cp.sa_kubeconfig);
        let flags = if self.cluster_wide {
            cluster_flags(kubeconfig)
        } else {
            common_flags(kubeconfig, self.namespace)
        };
        let flags = flags
            .into_iter()
            .filter(|f| !self.only_sources || !(f.starts_with("--source=") || f == "--gateway-listener-sets"));
        let provider = match (&self.provider, dns_port) {
            (Some(flags), _) => flags.clone(),
            (None, Some(port)) => provider_flags(self.owner, port),
            (None, None) => bail!("a run without a BIND server must name its provider's flags"),
        };
        cmd.args(flags)
            .args(provider)
            .arg(format!(
                "--metrics-address=127.0.0.1:{}",
                self.metrics_port.map_or_else(try_free_port, Ok)?
            ))
            .args(&self.extra);
        Ok(cmd)
    }

    /// `--once`: one sync, to completion.
    pub fn once(&self, cp: &ControlPlane, dns: &DnsServer) -> Result<Output> {
        let mut cmd = self.command(cp, dns)?;
        cmd.arg("--once");
        let out = cmd.output().with_context(|| format!("running {}", self.which.name()))?;
        if !out.status.success() {
            bail!(
                "{} --once failed with {}:\n{}",
                self.which.name(),
                out.status,
                tail(
                    &format!(
                        "{}{}",
                        String::from_utf8_lossy(&out.stdout),
                        String::from_utf8_lossy(&out.stderr)
                    ),
                    40
                )
            );
        }
        Ok(out)
    }

    /// A long-running controller (with whatever `--events`/`--interval` the run asks for).
    pub fn start(&self, cp: &ControlPlane, dns: &DnsServer, log: &Path) -> Result<Proc> {
        let cmd = self.command(cp, dns)?;
        Proc::spawn(self.which.name(), cmd, log)
    }
}

/// The flags both controllers get besides the provider's ([`provider_flags`] unless the run names others):
/// every source kind the tests create (Services, Ingresses, routes), SRV managed besides the defaults.
pub fn common_flags(kubeconfig: &Path, namespace: &str) -> Vec<String> {
    let mut flags = vec![
        format!("--kubeconfig={}", kubeconfig.display()),
        format!("--namespace={namespace}"),
        format!("--gateway-namespace={namespace}"),
    ];
    for source in [
        "service",
        "ingress",
        "gateway-httproute",
        "gateway-grpcroute",
        "gateway-tlsroute",
        "gateway-tcproute",
        "gateway-udproute",
    ] {
        flags.push(format!("--source={source}"));
    }
    flags.push("--gateway-listener-sets".to_string());
    flags.extend(
        [
            "--managed-record-types=A",
            "--managed-record-types=AAAA",
            "--managed-record-types=CNAME",
            "--managed-record-types=SRV",
        ]
        .map(String::from),
    );
    flags
}

/// Every namespace, the service source only, defaults otherwise: what a cluster-wide deployment runs (with
/// the provider's flags beside).
pub fn cluster_flags(kubeconfig: &Path) -> Vec<String> {
    vec![
        format!("--kubeconfig={}", kubeconfig.display()),
        "--source=service".to_string(),
    ]
}

/// RFC2136 with TSIG to BIND on `dns_port`, the TXT registry as `owner`, `sync` policy (so deletions are
/// published too).
fn provider_flags(owner: &str, dns_port: u16) -> Vec<String> {
    zone_flags(owner, dns_port, ZONE)
}

/// [`provider_flags`] for the zone `zone` (its domain filter too).
pub fn zone_flags(owner: &str, dns_port: u16, zone: &str) -> Vec<String> {
    [
        "--provider=rfc2136",
        "--rfc2136-host=127.0.0.1",
        &format!("--rfc2136-port={dns_port}"),
        &format!("--rfc2136-zone={zone}"),
        &format!("--rfc2136-tsig-keyname={KEY_NAME}"),
        &format!("--rfc2136-tsig-secret={SECRET}"),
        "--rfc2136-tsig-secret-alg=hmac-sha256",
        "--rfc2136-axfr",
        &format!("--domain-filter={zone}"),
        "--registry=txt",
        &format!("--txt-owner-id={owner}"),
        "--policy=sync",
    ]
    .map(String::from)
    .to_vec()
}

/// Waits until the controller's log shows `needle` (e.g. its first sync), failing early if it exits.
pub fn wait_for_log(proc: &mut Proc, needle: &str, timeout: Duration) -> Result<()> {
    eventually(
        &format!("{} logs {needle:?}", proc.name),
        timeout,
        Duration::from_millis(100),
        || {
            if let Some(status) = proc.exited() {
                bail!("{} exited with {status}:\n{}", proc.name, proc.log_tail(30));
            }
            Ok(proc.log_text().contains(needle).then_some(()))
        },
    )
}
