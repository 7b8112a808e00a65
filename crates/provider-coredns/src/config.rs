//! The provider's configuration: what external-dns reads from `--coredns-*` and the `ETCD_*` environment,
//! already split and typed by the binary.

use std::path::PathBuf;
use std::time::Duration;

use extdns_endpoint::DomainFilter;

/// Where etcd is and how to reach it.
#[derive(Clone)]
#[non_exhaustive]
pub struct CorednsConfig {
    /// etcd endpoints (`ETCD_URLS`, comma-separated there), tried in order.
    pub urls: Vec<String>,
    /// Key prefix of the records (`--coredns-prefix`), used verbatim as external-dns does.
    pub prefix: String,
    /// TLS towards `https://` endpoints.
    pub tls: EtcdTls,
    /// `ETCD_USERNAME`: etcd basic authentication, with `password`.
    pub username: Option<String>,
    /// `ETCD_PASSWORD`; never logged.
    pub password: Option<String>,
    /// With `--coredns-strictly-owned`: the owner id written into every record, and the only records read.
    pub owned_by: Option<String>,
    /// The names this provider manages (`--domain-filter`); records outside it are neither read nor written.
    pub domain_filter: DomainFilter,
    /// Time limit of one request to etcd.
    pub timeout: Duration,
    /// Writes per etcd transaction; etcd refuses more than its `--max-txn-ops` (128 by default).
    pub max_txn_ops: usize,
    /// Told about every HTTP request (the binary's request-duration metric).
    pub observer: extdns_provider::http::Observer,
    /// `--provider-write-rate`: transactions at most this often (none by default).
    pub write_rate: Option<extdns_provider::pace::Rate>,
}

/// The password never reaches a log.
impl std::fmt::Debug for CorednsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CorednsConfig")
            .field("urls", &self.urls)
            .field("prefix", &self.prefix)
            .field("tls", &self.tls)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("owned_by", &self.owned_by)
            .field("domain_filter", &self.domain_filter)
            .field("timeout", &self.timeout)
            .field("max_txn_ops", &self.max_txn_ops)
            .field("write_rate", &self.write_rate)
            .finish()
    }
}

impl CorednsConfig {
    /// The defaults external-dns uses: `http://localhost:2379`, prefix `/skydns/`.
    pub fn new(urls: Vec<String>, prefix: impl Into<String>) -> CorednsConfig {
        CorednsConfig {
            observer: Default::default(),
            urls,
            prefix: prefix.into(),
            tls: EtcdTls::default(),
            username: None,
            password: None,
            owned_by: None,
            domain_filter: DomainFilter::default(),
            timeout: Duration::from_secs(30),
            max_txn_ops: 128,
            write_rate: None,
        }
    }
}

/// TLS towards etcd (`ETCD_CA_FILE`, `ETCD_CERT_FILE`, `ETCD_KEY_FILE`, `ETCD_TLS_SERVER_NAME`,
/// `ETCD_TLS_INSECURE`).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct EtcdTls {
    /// `ETCD_CA_FILE`: PEM CA that signed etcd's certificate, trusted beside the system roots.
    pub ca_file: Option<PathBuf>,
    /// `ETCD_CERT_FILE`: PEM client certificate, for etcd's `--client-cert-auth`.
    pub cert_file: Option<PathBuf>,
    /// `ETCD_KEY_FILE`: the client certificate's PEM key.
    pub key_file: Option<PathBuf>,
    /// `ETCD_TLS_SERVER_NAME`: the name etcd's certificate is checked against, when the URLs use another
    /// (an IP address, say).
    pub server_name: Option<String>,
    /// `ETCD_TLS_INSECURE`: accept any server certificate.
    pub insecure: bool,
}

impl EtcdTls {
    /// The toolkit's view of these settings: the files to read and whether to verify.
    pub(crate) fn options(&self) -> extdns_provider::TlsOptions {
        extdns_provider::TlsOptions {
            skip_verify: self.insecure,
            ca_file: self.ca_file.clone(),
            client_cert: self.cert_file.clone(),
            client_key: self.key_file.clone(),
        }
    }
}

/// A configuration the provider cannot start with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `ETCD_URLS` is empty.
    #[error("no etcd endpoint is configured")]
    NoEndpoint,
    /// An endpoint is not an `http://` or `https://` URL with a host.
    #[error("etcd endpoint {url} is not an http:// or https:// URL")]
    BadUrl {
        /// The endpoint as given.
        url: String,
    },
    /// With `ETCD_TLS_SERVER_NAME`: an endpoint's host does not resolve (its addresses are pinned at startup).
    #[error("cannot resolve etcd endpoint {url}: {source}")]
    Resolve {
        /// The endpoint as given.
        url: String,
        /// The resolver's error.
        #[source]
        source: std::io::Error,
    },
    /// `--coredns-prefix` is empty, which would put records at the root of etcd's key space.
    #[error("the etcd key prefix must not be empty")]
    EmptyPrefix,
    /// The HTTP client cannot be built: a TLS file (`ETCD_CA_FILE`, `ETCD_CERT_FILE`, `ETCD_KEY_FILE`) is
    /// missing or not PEM, or only one of the certificate and key is set.
    #[error("etcd client: {0}")]
    Client(#[source] extdns_provider::http::HttpError),
}
