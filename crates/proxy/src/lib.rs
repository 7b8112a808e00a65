//! The proxy of the environment, read as Go's `http.ProxyFromEnvironment` reads it
//! (golang.org/x/net/http/httpproxy), so extdns goes through a proxy exactly where external-dns does.
//!
//! external-dns's Kubernetes client and its providers' clients all take their proxy from Go's rules; the Rust
//! clients extdns uses read other rules or none (kube reads `HTTPS_PROXY` for every URL and ignores `NO_PROXY`;
//! reqwest follows curl: `ALL_PROXY`, no `host:port` entries, loopback proxied). One reading, here, serves
//! them all:
//!
//! - an `https` URL goes through `HTTPS_PROXY` (else `https_proxy`), an `http` URL through `HTTP_PROXY` (else
//!   `http_proxy`); a variable set but empty counts as unset; a value without a scheme is an `http://` proxy;
//! - never for `localhost` or a loopback address, whatever the variables say;
//! - never for a host `NO_PROXY` (else `no_proxy`) names: a comma-separated list of `*` (every host), IP
//!   addresses, CIDR ranges and domain names, each with an optional `:port`; `example.com` matches that
//!   name and its subdomains, `.example.com` and `*.example.com` its subdomains only.
//!
//! ```
//! use extdns_proxy::ProxyEnv;
//!
//! let vars = [("HTTPS_PROXY", "proxy.corp:3128"), ("NO_PROXY", ".svc,10.0.0.0/8")];
//! let env = ProxyEnv::from_vars(|name| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string()));
//! assert_eq!(env.proxy_for("https", "dns.googleapis.com", None), Some("http://proxy.corp:3128"));
//! assert_eq!(env.proxy_for("https", "kubernetes.default.svc", Some(443)), None);
//! assert_eq!(env.proxy_for("https", "10.96.0.1", Some(443)), None);
//! assert_eq!(env.proxy_for("https", "127.0.0.1", Some(6443)), None);
//! assert_eq!(env.proxy_for("http", "pdns.corp", Some(8081)), None, "HTTP_PROXY is not set");
//! ```

mod no_proxy;

use std::net::IpAddr;

use no_proxy::NoProxy;

/// The proxy variables of one environment, read once (Go reads them once per process too).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxyEnv {
    http: Option<String>,
    https: Option<String>,
    no_proxy: NoProxy,
}

impl ProxyEnv {
    /// The variables of this process.
    pub fn from_process() -> ProxyEnv {
        ProxyEnv::from_vars(|name| std::env::var(name).ok())
    }

    /// The variables `var` reads (a test's, or a provider object's Secret).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> ProxyEnv {
        let first = |names: [&str; 2]| names.iter().find_map(|n| var(n).filter(|v| !v.trim().is_empty()));
        ProxyEnv {
            http: first(["HTTP_PROXY", "http_proxy"]).map(|p| with_scheme(&p)),
            https: first(["HTTPS_PROXY", "https_proxy"]).map(|p| with_scheme(&p)),
            no_proxy: NoProxy::parse(&first(["NO_PROXY", "no_proxy"]).unwrap_or_default()),
        }
    }

    /// Whether any proxy is configured at all.
    pub fn is_empty(&self) -> bool {
        self.http.is_none() && self.https.is_none()
    }

    /// The proxy URL a request with this scheme to `host` (a name, or an IP address, IPv6 in brackets or
    /// not) and `port` (the scheme's default when `None`) goes through; `None` to connect directly.
    pub fn proxy_for(&self, scheme: &str, host: &str, port: Option<u16>) -> Option<&str> {
        let proxy = match scheme {
            "https" => self.https.as_deref(),
            "http" => self.http.as_deref(),
            _ => None,
        }?;
        let host = host.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
        let host = host.as_str();
        let ip = host.parse::<IpAddr>().ok();
        if host == "localhost" || ip.is_some_and(|ip| ip.is_loopback()) {
            return None;
        }
        let port = port.unwrap_or(if scheme == "https" { 443 } else { 80 });
        (!self.no_proxy.matches(host, ip, port)).then_some(proxy)
    }
}

/// Go's reading of a proxy value: one without a scheme (`proxy.corp:3128`) is an `http://` proxy.
fn with_scheme(value: &str) -> String {
    let value = value.trim();
    if value.contains("://") {
        value.to_string()
    } else {
        format!("http://{value}")
    }
}

#[cfg(test)]
mod tests;
