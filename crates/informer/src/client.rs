//! The Kubernetes client every part of extdns that talks to the API server is given (the live view, leader
//! election, Events, DNSEndpoint status, the CRD registry, the provider manager), built from a typed
//! [`ClientConfig`] the binary fills from its flags.
//!
//! kube's own stack, assembled from kube's layers with one setting changed: hyper's read buffer bounded at
//! [`READ_BUFFER`] (docs/performance.md, "Where the live heap goes in the running binary"). The proxy is
//! chosen as client-go chooses it: the kubeconfig's `proxy-url` when it names one, else the environment as
//! Go's `http.ProxyFromEnvironment` reads it (`extdns-proxy`: `HTTPS_PROXY` for an https server,
//! `NO_PROXY` honoured, loopback never proxied), where kube alone would send every request to `HTTPS_PROXY`
//! and ignore `NO_PROXY`. A proxied client is kube's stack unchanged, which tunnels through the proxy.

use std::path::PathBuf;
use std::time::Duration;

use extdns_proxy::ProxyEnv;
use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};

/// How to reach the API server.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientConfig {
    /// The kubeconfig file; `None` tries `KUBECONFIG`, `~/.kube/config`, then the in-cluster service account.
    pub kubeconfig: Option<PathBuf>,
    /// The API server's URL, overriding the configuration's; alone, it is the whole configuration when
    /// no other is found. Kept as given: a URL that does not parse fails when the client is built.
    pub server: Option<String>,
    /// Bounds connecting and sending a request; reads are never cut, because watches are long-lived
    /// streams that may stay quiet for minutes.
    pub request_timeout: Option<Duration>,
    /// What every request says it is (`User-Agent`): API server audit logs and request metrics name the
    /// client by it, as client-go names external-dns.
    pub user_agent: String,
}

impl ClientConfig {
    /// A configuration found where kubectl finds it, sending `user_agent`.
    pub fn new(user_agent: impl Into<String>) -> ClientConfig {
        ClientConfig {
            user_agent: user_agent.into(),
            ..ClientConfig::default()
        }
    }
}

/// Why no client could be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// No kubeconfig, no in-cluster configuration and no server URL.
    #[error("cannot find a Kubernetes configuration (use --kubeconfig or --server): {0}")]
    NotFound(#[source] kube::config::InferConfigError),
    /// The kubeconfig file cannot be read or parsed.
    #[error("cannot read --kubeconfig {}: {source}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        source: KubeconfigError,
    },
    /// The kubeconfig file was read but does not describe a usable cluster and user.
    #[error("invalid --kubeconfig {}: {source}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Why.
        source: KubeconfigError,
    },
    /// The server URL does not parse.
    #[error("--server {server:?} is not a URL: {source}")]
    Server {
        /// The URL as given.
        server: String,
        /// Why.
        source: http::uri::InvalidUri,
    },
    /// The proxy the environment names for the server does not parse.
    #[error("the proxy {proxy:?} the environment names for the Kubernetes API server is not a URL: {source}")]
    Proxy {
        /// The proxy as the environment names it.
        proxy: String,
        /// Why.
        source: http::uri::InvalidUri,
    },
    /// The user agent is not a header value.
    #[error("the user agent {0:?} is not a valid header value")]
    UserAgent(String),
    /// kube refused the configuration (TLS files, credentials, proxy).
    #[error("cannot build the Kubernetes client: {0}")]
    Build(#[source] kube::Error),
}

/// The largest read buffer of one API server connection. hyper grows a connection's buffer while reads
/// fill it, up to 408 KiB by default, and keeps it: a streaming list of 10,000 Services left each watch
/// connection holding its maximum, 1.9 MB of extdns's 27 MB of live heap at that size (docs/performance.md,
/// "Where the live heap goes in the running binary"). A list still arrives at this many bytes a read.
pub const READ_BUFFER: usize = 64 * 1024;

/// A client as `config` says, through the proxy this process's environment names for the server, if any.
pub async fn connect(config: &ClientConfig) -> Result<kube::Client, ClientError> {
    let mut kube_config = kube_config(config).await?;
    if let Some(server) = &config.server {
        kube_config.cluster_url = parse_uri(server).map_err(|source| ClientError::Server {
            server: server.clone(),
            source,
        })?;
    }
    kube_config.connect_timeout = config.request_timeout;
    kube_config.write_timeout = config.request_timeout;
    let agent = http::HeaderValue::from_str(&config.user_agent)
        .map_err(|_| ClientError::UserAgent(config.user_agent.clone()))?;
    kube_config.headers.push((http::header::USER_AGENT, agent));
    kube_config.proxy_url = proxy_url(&kube_config, &ProxyEnv::from_process())?;
    if kube_config.proxy_url.is_some() {
        return kube::Client::try_from(kube_config).map_err(ClientError::Build);
    }
    bounded_stack(kube_config).map_err(ClientError::Build)
}

/// The configuration from the kubeconfig, the in-cluster environment, or `--server` alone.
async fn kube_config(config: &ClientConfig) -> Result<kube::Config, ClientError> {
    let Some(path) = &config.kubeconfig else {
        return match kube::Config::infer().await {
            Ok(found) => Ok(found),
            Err(e) => match &config.server {
                Some(server) => {
                    tracing::debug!(error = %e, "no kubeconfig or in-cluster configuration; using --server alone");
                    let url = parse_uri(server).map_err(|source| ClientError::Server {
                        server: server.clone(),
                        source,
                    })?;
                    Ok(kube::Config::new(url))
                }
                None => Err(ClientError::NotFound(e)),
            },
        };
    };
    let kubeconfig = Kubeconfig::read_from(path).map_err(|source| ClientError::Unreadable {
        path: path.clone(),
        source,
    })?;
    kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|source| ClientError::Invalid {
            path: path.clone(),
            source,
        })
}

/// The proxy to the API server as client-go picks it. kube has already put either the kubeconfig's
/// `proxy-url` or, failing that, `HTTPS_PROXY` whatever the server's scheme and `NO_PROXY`, into
/// `proxy_url`; a value other than what kube read from this process's `HTTPS_PROXY` is the kubeconfig's
/// and stands, as in client-go. Otherwise `proxies` decide, by Go's rules.
fn proxy_url(config: &kube::Config, proxies: &ProxyEnv) -> Result<Option<http::Uri>, ClientError> {
    let from_env = ["HTTPS_PROXY", "https_proxy"]
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|v| !v.is_empty()))
        .and_then(|v| parse_uri(&v).ok());
    if config.proxy_url.is_some() && config.proxy_url != from_env {
        return Ok(config.proxy_url.clone());
    }
    let url = &config.cluster_url;
    let (Some(scheme), Some(host)) = (url.scheme_str(), url.host()) else {
        return Ok(None);
    };
    let Some(proxy) = proxies.proxy_for(scheme, host, url.port_u16()) else {
        return Ok(None);
    };
    tracing::debug!(%proxy, server = %url, "reaching the Kubernetes API server through the proxy of the environment");
    parse_uri(proxy).map(Some).map_err(|source| ClientError::Proxy {
        proxy: proxy.to_string(),
        source,
    })
}

fn parse_uri(text: &str) -> Result<http::Uri, http::uri::InvalidUri> {
    text.parse()
}

/// kube's default client stack (TLS, timeouts, base URI, retry of 429/503/504, credentials, headers), with
/// hyper's read buffer bounded by [`READ_BUFFER`]. What kube's stack has beyond it: a debug span per
/// request, and the expiry of client certificates from an exec plugin, which extdns never reads.
fn bounded_stack(config: kube::Config) -> Result<kube::Client, kube::Error> {
    use kube::client::ConfigExt;
    use tower::ServiceBuilder;

    let mut http = hyper_util::client::legacy::connect::HttpConnector::new();
    http.enforce_http(false);
    let mut connector = hyper_timeout::TimeoutConnector::new(config.rustls_https_connector_with_connector(http)?);
    connector.set_connect_timeout(config.connect_timeout);
    connector.set_read_timeout(config.read_timeout);
    connector.set_write_timeout(config.write_timeout);
    let client = hyper_util::client::legacy::Builder::new(hyper_util::rt::TokioExecutor::new())
        .http1_max_buf_size(READ_BUFFER)
        .build(connector);
    let retry = config
        .default_retry
        .then(|| tower::retry::RetryLayer::new(kube::client::retry::RetryPolicy::server_retry()));
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(retry)
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .map_err(tower::BoxError::from)
        .service(client);
    Ok(kube::Client::new(service, config.default_namespace))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proxies(vars: &[(&str, &str)]) -> ProxyEnv {
        ProxyEnv::from_vars(|n| vars.iter().find(|(k, _)| *k == n).map(|(_, v)| v.to_string()))
    }

    fn proxy_of(server: &str, vars: &[(&str, &str)]) -> Option<String> {
        let config = kube::Config::new(server.parse().unwrap_or_else(|e| panic!("{e}")));
        let proxy = proxy_url(&config, &proxies(vars)).unwrap_or_else(|e| panic!("{e}"));
        proxy.map(|p| p.to_string())
    }

    #[test]
    fn the_server_goes_through_the_proxy_its_scheme_names_unless_no_proxy_names_it() {
        let https = [("HTTPS_PROXY", "proxy.corp:3128"), ("NO_PROXY", ".svc,10.0.0.0/8")];
        let through = proxy_of("https://api.corp:6443", &https);
        assert_eq!(through.as_deref(), Some("http://proxy.corp:3128/"));
        assert_eq!(proxy_of("https://kubernetes.default.svc", &https), None);
        assert_eq!(proxy_of("https://10.96.0.1:443", &https), None);
        assert_eq!(proxy_of("https://127.0.0.1:6443", &https), None, "loopback");
        assert_eq!(proxy_of("https://api.corp:6443", &[("HTTP_PROXY", "http://p:1")]), None);
        assert_eq!(
            proxy_of("http://api.corp:8080", &[("HTTP_PROXY", "http://p:1")]).as_deref(),
            Some("http://p:1/")
        );
    }

    #[test]
    fn a_proxy_that_is_not_a_url_is_an_error_naming_it() {
        let config = kube::Config::new("https://api.corp".parse().unwrap_or_else(|e| panic!("{e}")));
        let e = proxy_url(&config, &proxies(&[("HTTPS_PROXY", "http://bad host:1")])).err();
        assert!(e.is_some_and(|e| e.to_string().contains("\"http://bad host:1\"")));
    }
}
