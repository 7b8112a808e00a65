//! `NO_PROXY` as Go's httpproxy parses and matches it.

use std::net::IpAddr;

/// The hosts that never go through the proxy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct NoProxy {
    /// `*`: no host goes through the proxy.
    all: bool,
    entries: Vec<Entry>,
}

/// One entry of the list, with its port when it names one (it then matches that port only).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    /// `10.0.0.0/8`: any address in the range, any port (Go reads no port on a range).
    Range { network: IpAddr, prefix: u8 },
    /// `192.0.2.1` or `[2001:db8::1]:8443`.
    Ip { ip: IpAddr, port: Option<u16> },
    /// `example.com` (`exact`: the name itself too) or `.example.com` / `*.example.com` (subdomains only);
    /// `suffix` keeps the leading dot.
    Domain {
        suffix: String,
        exact: bool,
        port: Option<u16>,
    },
}

impl NoProxy {
    /// The comma-separated list; entries that cannot be read (a port without a host) are left out, as Go
    /// leaves them out.
    pub(crate) fn parse(list: &str) -> NoProxy {
        let mut no_proxy = NoProxy::default();
        for entry in list.split(',').map(|e| e.trim().to_ascii_lowercase()) {
            if entry.is_empty() {
                continue;
            }
            if entry == "*" {
                no_proxy.all = true;
                continue;
            }
            if let Some(range) = range(&entry) {
                no_proxy.entries.push(range);
                continue;
            }
            let (host, port) = split_port(&entry);
            if let Ok(ip) = host.parse::<IpAddr>() {
                no_proxy.entries.push(Entry::Ip { ip, port });
                continue;
            }
            let host = host.strip_prefix('*').filter(|h| h.starts_with('.')).unwrap_or(host);
            if host.is_empty() || host == "." {
                continue;
            }
            let exact = !host.starts_with('.');
            let suffix = if exact { format!(".{host}") } else { host.to_string() };
            no_proxy.entries.push(Entry::Domain { suffix, exact, port });
        }
        no_proxy
    }

    /// Whether a request to `host` (lower case; `ip` when it is an address) on `port` bypasses the proxy.
    pub(crate) fn matches(&self, host: &str, ip: Option<IpAddr>, port: u16) -> bool {
        let port_ok = |p: &Option<u16>| p.is_none_or(|p| p == port);
        self.all
            || self.entries.iter().any(|entry| match (entry, ip) {
                (Entry::Range { network, prefix }, Some(ip)) => in_range(ip, *network, *prefix),
                (Entry::Ip { ip: named, port: p }, Some(ip)) => *named == ip && port_ok(p),
                (Entry::Domain { suffix, exact, port: p }, None) => {
                    (host.ends_with(suffix.as_str()) || (*exact && host == &suffix[1..])) && port_ok(p)
                }
                _ => false,
            })
    }
}

/// `ADDRESS/PREFIX`, an IPv4 or IPv6 range.
fn range(entry: &str) -> Option<Entry> {
    let (address, prefix) = entry.split_once('/')?;
    let network: IpAddr = address.parse().ok()?;
    let prefix: u8 = prefix.parse().ok()?;
    let bits = if network.is_ipv4() { 32 } else { 128 };
    (prefix <= bits).then_some(Entry::Range { network, prefix })
}

/// `host:port`, `[v6]:port` or a bare host (an IPv6 address without brackets has no port).
fn split_port(entry: &str) -> (&str, Option<u16>) {
    if let Some(rest) = entry.strip_prefix('[') {
        return match rest.split_once(']') {
            Some((ip, port)) => (ip, port.strip_prefix(':').and_then(|p| p.parse().ok())),
            None => (entry, None),
        };
    }
    match entry.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => match port.parse() {
            Ok(port) => (host, Some(port)),
            Err(_) => (entry, None),
        },
        _ => (entry, None),
    }
}

/// Whether `ip` is in `network/prefix` (an address of the other family never is).
fn in_range(ip: IpAddr, network: IpAddr, prefix: u8) -> bool {
    let (ip, network, bits) = match (ip, network) {
        (IpAddr::V4(ip), IpAddr::V4(net)) => (u128::from(u32::from(ip)), u128::from(u32::from(net)), 32),
        (IpAddr::V6(ip), IpAddr::V6(net)) => (u128::from(ip), u128::from(net), 128),
        _ => return false,
    };
    let host_bits = bits - u32::from(prefix);
    if host_bits >= 128 {
        return true;
    }
    (ip >> host_bits) == (network >> host_bits)
}
