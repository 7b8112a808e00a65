//! Hostname resolution for `--resolve-service-load-balancer-hostname`, the one place a source reaches the
//! network. Behind a trait so sources stay pure in tests (a [`StaticResolver`]) and the binary injects the
//! system resolver.

use std::collections::HashMap;
use std::net::IpAddr;

use async_trait::async_trait;
use hickory_resolver::TokioResolver;
use hickory_resolver::net::NetError;

/// Why a name did not resolve.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ResolveError {
    /// The name exists nowhere or has no address records.
    #[error("{host}: no addresses found")]
    /// The name exists but has no address.
    NotFound {
        /// The name looked up.
        host: String,
    },
    /// The lookup itself failed (no reachable name server, timeout, bad name).
    #[error("cannot resolve {host}: {source}")]
    Failed {
        /// The name looked up.
        host: String,
        /// The resolver's reason.
        #[source]
        source: NetError,
    },
    /// The system resolver configuration could not be read.
    #[error("cannot read the system resolver configuration: {0}")]
    Config(#[source] NetError),
}

/// Looks up the addresses of a hostname.
#[async_trait]
pub trait Resolver: Send + Sync {
    /// IPv4 and IPv6 addresses of `host`, in the order the resolver returned them.
    async fn lookup_ip(&self, host: &str) -> Result<Vec<IpAddr>, ResolveError>;
}

/// The operating system's resolver configuration (`/etc/resolv.conf`, `/etc/hosts`) through hickory,
/// as external-dns uses Go's resolver. Answers are cached for their TTL.
#[derive(Clone)]
pub struct SystemResolver {
    inner: TokioResolver,
}

impl std::fmt::Debug for SystemResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SystemResolver")
    }
}

impl SystemResolver {
    /// The resolver of the system's configuration (`/etc/resolv.conf`).
    pub fn new() -> Result<Self, ResolveError> {
        let builder = TokioResolver::builder_tokio().map_err(ResolveError::Config)?;
        let inner = builder.build().map_err(ResolveError::Config)?;
        Ok(SystemResolver { inner })
    }
}

#[async_trait]
impl Resolver for SystemResolver {
    async fn lookup_ip(&self, host: &str) -> Result<Vec<IpAddr>, ResolveError> {
        match self.inner.lookup_ip(host).await {
            Ok(lookup) => {
                let ips: Vec<IpAddr> = lookup.iter().collect();
                if ips.is_empty() {
                    Err(ResolveError::NotFound { host: host.to_string() })
                } else {
                    Ok(ips)
                }
            }
            Err(e) if e.is_no_records_found() || e.is_nx_domain() => {
                Err(ResolveError::NotFound { host: host.to_string() })
            }
            Err(source) => Err(ResolveError::Failed {
                host: host.to_string(),
                source,
            }),
        }
    }
}

/// A fixed table of answers, for tests and the manifest preview (`extdns endpoints`), which must not
/// depend on the network. Unknown names are [`ResolveError::NotFound`]; names added with
/// [`StaticResolver::fail`] fail as a broken resolver would.
#[derive(Debug, Clone, Default)]
pub struct StaticResolver {
    answers: HashMap<String, Answer>,
}

#[derive(Debug, Clone)]
enum Answer {
    Addresses(Vec<IpAddr>),
    /// The lookup fails with this message.
    Failure(String),
}

impl StaticResolver {
    /// A resolver that knows no name.
    pub fn new() -> Self {
        Self::default()
    }

    /// Answer `host` with `ips`. Names compare case-insensitively and without a trailing dot.
    pub fn with(mut self, host: &str, ips: impl IntoIterator<Item = IpAddr>) -> Self {
        self.insert(host, ips);
        self
    }

    /// Answer `host` with `ips`.
    pub fn insert(&mut self, host: &str, ips: impl IntoIterator<Item = IpAddr>) {
        self.answers
            .insert(normalize(host), Answer::Addresses(ips.into_iter().collect()));
    }

    /// Make lookups of `host` fail with `message`.
    pub fn fail(mut self, host: &str, message: &str) -> Self {
        self.answers
            .insert(normalize(host), Answer::Failure(message.to_string()));
        self
    }
}

fn normalize(host: &str) -> String {
    host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase()
}

#[async_trait]
impl Resolver for StaticResolver {
    async fn lookup_ip(&self, host: &str) -> Result<Vec<IpAddr>, ResolveError> {
        match self.answers.get(&normalize(host)) {
            Some(Answer::Addresses(ips)) if !ips.is_empty() => Ok(ips.clone()),
            Some(Answer::Failure(message)) => Err(ResolveError::Failed {
                host: host.to_string(),
                source: NetError::from(message.clone()),
            }),
            _ => Err(ResolveError::NotFound { host: host.to_string() }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn ip4(a: u8, b: u8, c: u8, d: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(a, b, c, d))
    }

    #[tokio::test]
    async fn static_resolver_answers_known_names_case_insensitively() -> Result<(), ResolveError> {
        let r = StaticResolver::new().with("LB.example.com.", [ip4(1, 2, 3, 4), IpAddr::V6(Ipv6Addr::LOCALHOST)]);
        assert_eq!(
            r.lookup_ip("lb.example.com").await?,
            vec![ip4(1, 2, 3, 4), IpAddr::V6(Ipv6Addr::LOCALHOST)]
        );
        assert_eq!(r.lookup_ip("lb.EXAMPLE.com.").await?.len(), 2);
        Ok(())
    }

    #[tokio::test]
    async fn static_resolver_unknown_names_are_not_found_and_failures_fail() {
        let r = StaticResolver::new()
            .fail("broken.example.com", "timeout")
            .with("empty.example.com", []);
        for name in ["nope.example.com", "empty.example.com"] {
            let got = r.lookup_ip(name).await;
            assert!(
                matches!(&got, Err(ResolveError::NotFound { host }) if host == name),
                "{got:?}"
            );
        }
        let err = r.lookup_ip("broken.example.com").await.err();
        assert!(
            matches!(&err, Some(ResolveError::Failed { host, .. }) if host == "broken.example.com"),
            "{err:?}"
        );
        let source = err
            .as_ref()
            .and_then(std::error::Error::source)
            .map(ToString::to_string);
        assert_eq!(source.as_deref(), Some("timeout"));
        assert_eq!(
            err.map(|e| e.to_string()).unwrap_or_default(),
            "cannot resolve broken.example.com: timeout"
        );
    }

    #[tokio::test]
    async fn system_resolver_returns_ip_literals_without_querying() -> Result<(), ResolveError> {
        let r = SystemResolver::new()?;
        assert_eq!(r.lookup_ip("192.0.2.7").await?, vec![ip4(192, 0, 2, 7)]);
        Ok(())
    }

    #[tokio::test]
    async fn system_resolver_reads_the_hosts_file() -> Result<(), ResolveError> {
        let r = SystemResolver::new()?;
        let ips = r.lookup_ip("localhost").await?;
        assert!(ips.iter().all(|ip| ip.is_loopback()) && !ips.is_empty(), "{ips:?}");
        Ok(())
    }
}
