//! The provider's configuration: what external-dns reads from `--coredns-*` and the `ETCD_*` environment.
//! The environment is read here ([`CorednsConfig::from_env`]), beside the fields it fills, so its rules
//! (external-dns's defaults, Go's boolean spellings) are the provider's.

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

    /// The configuration external-dns makes from the `ETCD_*` variables `var` reads (blank ones unset):
    /// `ETCD_URLS` comma-separated (`http://localhost:2379` when unset), TLS, basic authentication.
    pub fn from_env(prefix: impl Into<String>, var: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let set = |k: &str| var(k).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let urls: Vec<String> = match set("ETCD_URLS") {
            Some(v) => v
                .split(',')
                .map(str::trim)
                .filter(|u| !u.is_empty())
                .map(String::from)
                .collect(),
            None => vec![DEFAULT_ETCD_URL.to_string()],
        };
        if let Some(bad) = urls
            .iter()
            .find(|u| !(u.starts_with("http://") || u.starts_with("https://")))
        {
            return Err(ConfigError::UrlsVariable { url: bad.clone() });
        }
        let insecure = match set("ETCD_TLS_INSECURE").as_deref() {
            None => false,
            // Go's strconv.ParseBool spellings, as external-dns reads the variable.
            Some("1" | "t" | "T" | "true" | "TRUE" | "True") => true,
            Some("0" | "f" | "F" | "false" | "FALSE" | "False") => false,
            Some(other) => {
                return Err(ConfigError::Insecure {
                    value: other.to_string(),
                });
            }
        };
        let tls = EtcdTls {
            ca_file: set("ETCD_CA_FILE").map(PathBuf::from),
            cert_file: set("ETCD_CERT_FILE").map(PathBuf::from),
            key_file: set("ETCD_KEY_FILE").map(PathBuf::from),
            server_name: set("ETCD_TLS_SERVER_NAME"),
            insecure,
        };
        if tls.cert_file.is_some() != tls.key_file.is_some() {
            return Err(ConfigError::CertWithoutKey);
        }
        let mut config = CorednsConfig::new(urls, prefix);
        config.tls = tls;
        config.username = set("ETCD_USERNAME");
        // A password is taken as given: blanks may be part of it.
        config.password = var("ETCD_PASSWORD");
        Ok(config)
    }
}

/// external-dns's endpoint when `ETCD_URLS` is unset.
const DEFAULT_ETCD_URL: &str = "http://localhost:2379";

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
    /// `ETCD_URLS` names something that is not an `http://` or `https://` URL.
    #[error("ETCD_URLS: {url} is not an http:// or https:// URL")]
    UrlsVariable {
        /// The endpoint as given.
        url: String,
    },
    /// `ETCD_TLS_INSECURE` is not one of Go's boolean spellings.
    #[error("ETCD_TLS_INSECURE must be true or false (got {value:?})")]
    Insecure {
        /// The value as given.
        value: String,
    },
    /// Only one of `ETCD_CERT_FILE` and `ETCD_KEY_FILE` is set.
    #[error("ETCD_CERT_FILE and ETCD_KEY_FILE go together: set both or neither")]
    CertWithoutKey,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn from(vars: &[(&str, &str)]) -> Result<CorednsConfig, ConfigError> {
        CorednsConfig::from_env("/skydns/", |k| {
            vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn the_environment_fills_urls_tls_and_authentication() {
        let c = from(&[]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.urls, ["http://localhost:2379"]);
        assert!(!c.tls.insecure && c.username.is_none());
        let c = from(&[
            ("ETCD_URLS", " https://a:2379, ,http://b:2379 "),
            ("ETCD_TLS_INSECURE", "T"),
            ("ETCD_CERT_FILE", "/c.pem"),
            ("ETCD_KEY_FILE", "/k.pem"),
            ("ETCD_USERNAME", " root "),
            ("ETCD_PASSWORD", " secret "),
        ])
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.urls, ["https://a:2379", "http://b:2379"]);
        assert!(c.tls.insecure && c.tls.cert_file.is_some());
        assert_eq!(
            (c.username.as_deref(), c.password.as_deref()),
            (Some("root"), Some(" secret "))
        );
    }

    #[test]
    fn bad_values_are_named() {
        let e = |vars: &[(&str, &str)]| from(vars).err().map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(
            e(&[("ETCD_URLS", "etcd:2379")]),
            "ETCD_URLS: etcd:2379 is not an http:// or https:// URL"
        );
        assert_eq!(
            e(&[("ETCD_TLS_INSECURE", "yes")]),
            "ETCD_TLS_INSECURE must be true or false (got \"yes\")"
        );
        assert!(e(&[("ETCD_KEY_FILE", "/k.pem")]).starts_with("ETCD_CERT_FILE and ETCD_KEY_FILE go together"));
    }
}
