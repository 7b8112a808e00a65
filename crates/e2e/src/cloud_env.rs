//! What the benchmarks against cloud DNS fakes share (`cloud-first-sync`, `provider-budget`): the
//! loopback-only network namespace they run in, the N records both controllers are given (DNSEndpoint
//! manifests for extdns, external-dns's connector source), each controller's command with only the
//! environment that reaches its fake, and the TLS proxy at the clouds' real host names.
//!
//! external-dns has no manifest source and extdns no connector source, so each reads the same records from
//! the source it has; both reach the fake the way they reach the cloud (`HTTPS_PROXY`, `SSL_CERT_FILE`).

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result, bail};
use extdns_test_support::connector::{self, GobEndpoint};
use extdns_test_support::tls_proxy::TlsProxy;

/// The clouds the cloud benchmarks know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cloud {
    /// Route53.
    Aws,
    /// Cloudflare.
    Cloudflare,
    /// Cloud DNS.
    Google,
    /// Azure DNS, public zones.
    Azure,
}

impl Cloud {
    /// Every cloud, in the order `all` runs them.
    pub const ALL: [Cloud; 4] = [Cloud::Aws, Cloud::Cloudflare, Cloud::Google, Cloud::Azure];

    /// Its `--provider` name.
    pub fn name(self) -> &'static str {
        match self {
            Cloud::Aws => "aws",
            Cloud::Cloudflare => "cloudflare",
            Cloud::Google => "google",
            Cloud::Azure => "azure",
        }
    }

    /// Its name in a report.
    pub fn title(self) -> &'static str {
        match self {
            Cloud::Aws => "Route53",
            Cloud::Cloudflare => "Cloudflare",
            Cloud::Google => "Cloud DNS",
            Cloud::Azure => "Azure DNS",
        }
    }

    /// A benchmark's `--provider` value: one cloud by name, or `all`.
    pub fn list(bench: &str, value: &str) -> Result<Vec<Cloud>> {
        if value == "all" {
            return Ok(Cloud::ALL.to_vec());
        }
        let one = Cloud::ALL.iter().find(|c| c.name() == value);
        Ok(vec![*one.with_context(|| {
            format!("{bench}: --provider {value}: aws, cloudflare, google, azure or all")
        })?])
    }
}

/// Set in the copy of this program that runs inside the network namespace.
const INSIDE: &str = "EXTDNS_BENCH_NETNS";
/// The zone every benchmark writes.
pub const ZONE: &str = "example.org";
/// Both controllers' `--txt-owner-id`.
pub const OWNER: &str = "bench";
/// Endpoints per DNSEndpoint object in extdns's manifests.
const PER_OBJECT: usize = 100;

/// Whether this process runs inside the loopback-only network namespace: `Ok(true)` there (after checking
/// the namespace holds nothing but `lo`); outside, it runs this program again inside one, waits for it and
/// gives `Ok(false)`: the benchmark has then run.
pub fn enter_netns() -> Result<bool> {
    if std::env::var_os(INSIDE).is_none() {
        let exe = std::env::current_exe().context("this program's path")?;
        let status = Command::new("unshare")
            .args(["--net", "--map-root-user", "--", "sh", "-c"])
            .arg("ip link set lo up || exit 97; exec \"$0\" \"$@\"")
            .arg(exe)
            .args(std::env::args_os().skip(1))
            .env(INSIDE, "1")
            .status()
            .context("cannot run unshare (util-linux) for a loopback-only network namespace")?;
        if !status.success() {
            bail!("the benchmark inside its network namespace failed with {status}");
        }
        return Ok(false);
    }
    // /proc/net is the namespace's own.
    let links: Vec<String> = std::fs::read_to_string("/proc/net/dev")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once(':').map(|(name, _)| name.trim().to_string()))
        .collect();
    if links != ["lo"] {
        bail!("the network namespace has more than loopback: {links:?}");
    }
    Ok(true)
}

/// `logs/name`, emptied.
pub fn fresh_dir(logs: &Path, name: &str) -> Result<PathBuf> {
    let dir = logs.join(name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("clearing {}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// Writes `report` to `path` (its directory made) and to standard output.
pub fn write_report(path: &Path, report: &str) -> Result<()> {
    print!("{report}");
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(path, report).with_context(|| format!("writing {}", path.display()))
}

/// Record `i`: `r<i>.example.org A 100.64.x.y`.
pub fn record(i: usize) -> (String, Ipv4Addr) {
    (format!("r{i}.{ZONE}"), address(i))
}

/// The `i`-th address from 100.64.0.0.
pub fn address(i: usize) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(Ipv4Addr::new(100, 64, 0, 0)).wrapping_add(i as u32))
}

/// The records as external-dns's connector source sends them. The connector's endpoint holds `&'static str`
/// names (the tests write literals); this process runs once, so the names are leaked for its lifetime.
pub fn connector_endpoints(n: usize) -> Vec<GobEndpoint> {
    (0..n)
        .map(|i| {
            let (name, ip) = record(i);
            GobEndpoint::new(name.leak(), "A", &[&ip.to_string()], 0)
        })
        .collect()
}

/// The records as DNSEndpoint objects of [`PER_OBJECT`] endpoints each: record `i` at `targets[i]`.
pub fn dns_endpoints(targets: &[Ipv4Addr]) -> String {
    let mut out = String::new();
    for (object, start) in (0..targets.len()).step_by(PER_OBJECT).enumerate() {
        let _ = writeln!(
            out,
            "---\napiVersion: externaldns.k8s.io/v1alpha1\nkind: DNSEndpoint\nmetadata: {{name: records-{object}, namespace: bench}}\nspec:\n  endpoints:"
        );
        for (i, ip) in targets.iter().enumerate().take(start + PER_OBJECT).skip(start) {
            let _ = writeln!(
                out,
                "  - {{dnsName: {}, recordType: A, targets: [\"{ip}\"]}}",
                record(i).0
            );
        }
    }
    out
}

/// The records both controllers are given: DNSEndpoint manifests for extdns, the connector source for
/// external-dns.
pub struct Sources {
    /// The controllers' `HOME`.
    pub home: tempfile::TempDir,
    /// The directory of extdns's manifests.
    pub manifests: PathBuf,
    /// The connector source's port.
    pub connector: u16,
    /// What the connector source serves, sync after sync.
    served: Arc<Mutex<Vec<GobEndpoint>>>,
    /// Each record's address as both sources give it now.
    targets: Vec<Ipv4Addr>,
}

impl Sources {
    /// `n` records, record `i` at [`address`]`(i)`.
    pub fn new(n: usize) -> Result<Sources> {
        let home = tempfile::tempdir().context("a home directory")?;
        let manifests = home.path().join("manifests");
        std::fs::create_dir_all(&manifests)?;
        let targets: Vec<Ipv4Addr> = (0..n).map(address).collect();
        std::fs::write(manifests.join("records.yaml"), dns_endpoints(&targets)).context("writing the DNSEndpoints")?;
        let served = Arc::new(Mutex::new(connector_endpoints(n)));
        let connector = connector::serve(Arc::clone(&served));
        Ok(Sources {
            home,
            manifests,
            connector,
            served,
            targets,
        })
    }

    /// Points record `i` at `ip` in both sources: the connector serves it from its next answer, and the
    /// manifests are replaced whole (written aside, then renamed), so extdns never reads half a file.
    pub fn retarget(&mut self, i: usize, ip: Ipv4Addr) -> Result<()> {
        let Some(slot) = self.targets.get_mut(i) else {
            bail!("no record {i}");
        };
        *slot = ip;
        if let Some(e) = self
            .served
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get_mut(i)
        {
            e.targets = vec![ip.to_string()];
        }
        let aside = self.home.path().join("records.yaml.new");
        std::fs::write(&aside, dns_endpoints(&self.targets)).context("writing the DNSEndpoints")?;
        std::fs::rename(&aside, self.manifests.join("records.yaml")).context("replacing the DNSEndpoints")
    }
}

/// `who`'s command with `flags`, its source, and only the environment that reaches the fake: `HOME`, the
/// proxy, and the proxy's CA.
pub fn controller(who: &str, program: &Path, src: &Sources, proxy: &TlsProxy, flags: &[String]) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", src.home.path())
        .env("HTTPS_PROXY", &proxy.url)
        .env("HTTP_PROXY", &proxy.url)
        .env("SSL_CERT_FILE", &proxy.ca_file)
        .args(flags);
    if who == "extdns" {
        cmd.args(["--source=crd", "--manifests"]).arg(&src.manifests);
    } else {
        cmd.arg("--source=connector")
            .arg(format!("--connector-source-server=127.0.0.1:{}", src.connector))
            .arg(format!(
                "--metrics-address=127.0.0.1:{}",
                extdns_test_support::free_port()
            ));
    }
    cmd
}

/// `name A ttl ip` for each desired record.
pub fn wanted(n: usize, ttl: u32, trailing_dot: &str) -> BTreeSet<String> {
    (0..n)
        .map(|i| {
            let (name, ip) = record(i);
            format!("{name}{trailing_dot} A {ttl} {ip}")
        })
        .collect()
}

/// The TLS connections `who` opened through the proxy; an error if the proxy refused any request.
pub fn checked_connects(who: &str, proxy: &TlsProxy) -> Result<usize> {
    let log = proxy.log();
    if !log.refused.is_empty() {
        bail!("{who}: the proxy refused {:?}", log.refused);
    }
    Ok(log.connects.len())
}

/// A TLS proxy sending each of `hosts` to the fake at `addr`.
pub fn proxy_to(hosts: &[&str], addr: SocketAddr) -> Result<TlsProxy> {
    let routes: Vec<(&str, SocketAddr)> = hosts.iter().map(|h| (*h, addr)).collect();
    TlsProxy::start(&routes).context("the TLS proxy")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_sources_hold_the_same_records() {
        let targets: Vec<Ipv4Addr> = (0..250).map(address).collect();
        let yaml = dns_endpoints(&targets);
        assert_eq!(yaml.matches("kind: DNSEndpoint").count(), 3);
        assert_eq!(yaml.matches("recordType: A").count(), 250);
        assert!(yaml.contains("{dnsName: r249.example.org, recordType: A, targets: [\"100.64.0.249\"]}"));
        let gob = connector_endpoints(250);
        assert_eq!(gob.len(), 250);
        assert_eq!(
            (gob[249].dns_name, gob[249].targets[0].as_str()),
            ("r249.example.org", "100.64.0.249")
        );
        assert_eq!(record(256).1, Ipv4Addr::new(100, 64, 1, 0));
        assert_eq!(
            wanted(2, 300, ""),
            [
                "r0.example.org A 300 100.64.0.0".to_string(),
                "r1.example.org A 300 100.64.0.1".to_string()
            ]
            .into()
        );
    }

    #[test]
    fn a_retargeted_record_changes_in_both_sources() -> Result<()> {
        let mut src = Sources::new(150)?;
        src.retarget(120, Ipv4Addr::new(198, 51, 100, 7))?;
        let yaml = std::fs::read_to_string(src.manifests.join("records.yaml"))?;
        assert!(yaml.contains("{dnsName: r120.example.org, recordType: A, targets: [\"198.51.100.7\"]}"));
        assert_eq!(yaml.matches("recordType: A").count(), 150);
        let served = src.served.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        assert_eq!(served[120].targets, ["198.51.100.7"]);
        drop(served);
        assert!(src.retarget(150, Ipv4Addr::LOCALHOST).is_err());
        Ok(())
    }
}
