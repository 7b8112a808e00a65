//! Typed configuration of the provider, filled by the binary from external-dns's `--rfc2136-*` flags, and
//! its startup validation. Every rejection is a [`ConfigError`] naming the setting at fault
//! ([`ConfigError::setting`]), which the binary turns into the flag to change.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use base64::Engine as _;

use extdns_dns_wire::tsig::{Algorithm, Key, TsigError};

/// How updates and transfers pick one of several `--rfc2136-host`s (`--rfc2136-load-balancing-strategy`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LoadBalancing {
    /// Always the first host; after a failure the next one becomes the current host.
    #[default]
    Disabled,
    /// Each request goes to the next host in turn.
    RoundRobin,
    /// Each request goes to a random host.
    Random,
}

impl FromStr for LoadBalancing {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        match s {
            "" | "disabled" => Ok(LoadBalancing::Disabled),
            "round-robin" => Ok(LoadBalancing::RoundRobin),
            "random" => Ok(LoadBalancing::Random),
            other => Err(ConfigError::LoadBalancing(other.to_string())),
        }
    }
}

impl fmt::Display for LoadBalancing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LoadBalancing::Disabled => "disabled",
            LoadBalancing::RoundRobin => "round-robin",
            LoadBalancing::Random => "random",
        })
    }
}

/// DNS over TLS (RFC 7858 / RFC 9103) settings: `--rfc2136-use-tls`, `--rfc2136-skip-tls-verify` and the
/// shared `--tls-ca`, `--tls-client-cert`, `--tls-client-cert-key`. Without a CA file the system roots
/// are trusted.
pub use extdns_provider::TlsOptions;

/// The flags as given. Building the provider validates them into the settings it runs with, or a
/// [`ConfigError`] naming the setting at fault; external-dns's defaults are the `Default` values except
/// `batch_change_size` (50).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rfc2136Config {
    /// `--rfc2136-host` (repeatable).
    pub hosts: Vec<String>,
    /// `--rfc2136-port`; 0 means 53 (853 with TLS).
    pub port: u16,
    /// `--rfc2136-zone` (repeatable).
    pub zones: Vec<String>,
    /// `--rfc2136-insecure`: send unsigned updates and transfers; the TSIG settings are then ignored.
    pub insecure: bool,
    /// `--rfc2136-tsig-keyname`: the TSIG key's name, as the server's key statement spells it.
    pub tsig_keyname: String,
    /// `--rfc2136-tsig-secret`: the TSIG key, base64 as `tsig-keygen` prints it.
    pub tsig_secret: String,
    /// `--rfc2136-tsig-secret-alg`: `hmac-sha1` to `hmac-sha512` (a trailing dot and case are ignored);
    /// `hmac-md5` is refused as insecure.
    pub tsig_secret_alg: String,
    /// `--rfc2136-axfr`, OR-ed with the deprecated `--rfc2136-tsig-axfr` by the binary.
    pub axfr: bool,
    /// `--rfc2136-min-ttl`: written TTLs are raised to at least this.
    pub min_ttl: Duration,
    /// `--rfc2136-batch-change-size`: most changes (record and ownership changes each count) in one
    /// UPDATE message; at least 1.
    pub batch_change_size: usize,
    /// `--rfc2136-gss-tsig`: Kerberos-signed updates, which extdns refuses at startup.
    pub gss_tsig: bool,
    /// `--rfc2136-load-balancing-strategy`.
    pub load_balancing: LoadBalancing,
    /// `Some` when `--rfc2136-use-tls` is set.
    pub tls: Option<TlsOptions>,
    /// Per-request timeout (connect, send, answer).
    pub timeout: Duration,
    /// `--provider-write-rate`: UPDATE messages at most this often (none by default).
    pub write_rate: Option<extdns_provider::pace::Rate>,
}

impl Default for Rfc2136Config {
    fn default() -> Self {
        Rfc2136Config {
            hosts: Vec::new(),
            port: 0,
            zones: Vec::new(),
            insecure: false,
            tsig_keyname: String::new(),
            tsig_secret: String::new(),
            tsig_secret_alg: String::new(),
            axfr: false,
            min_ttl: Duration::ZERO,
            batch_change_size: 50,
            gss_tsig: false,
            load_balancing: LoadBalancing::Disabled,
            tls: None,
            timeout: Duration::from_secs(10),
            write_rate: None,
        }
    }
}

/// A configuration the provider refuses to start with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `--rfc2136-gss-tsig` is set; Kerberos signing is not implemented.
    #[error("GSS-TSIG (Kerberos, RFC 3645) is not supported by extdns; use a TSIG key or insecure updates")]
    GssTsig,
    /// `--rfc2136-batch-change-size` is 0.
    #[error("the batch change size must be at least 1")]
    BatchSize,
    /// No `--rfc2136-host`, or only empty ones.
    #[error("no server host is configured")]
    NoHost,
    /// A `--rfc2136-zone` is empty (or only a dot).
    #[error("a zone name is empty")]
    EmptyZone,
    /// No `--rfc2136-zone`: extdns never guesses which zones it may update.
    #[error("no zone is configured: name every zone extdns may update")]
    NoZone,
    /// A `--rfc2136-zone` is not a valid DNS name (a label too long, say).
    #[error("zone {zone:?} is not a DNS name: {source}")]
    InvalidZone {
        /// The zone as given.
        zone: String,
        /// Why it cannot be encoded.
        #[source]
        source: extdns_dns_wire::codec::CodecError,
    },
    /// `--rfc2136-tsig-secret-alg` names no supported algorithm (or the insecure `hmac-md5`).
    #[error("{0}, or use insecure updates")]
    Algorithm(#[source] TsigError),
    /// Signed updates without `--rfc2136-tsig-keyname`.
    #[error("a TSIG key name is required unless updates are insecure")]
    NoKeyName,
    /// `--rfc2136-tsig-secret` does not decode as standard base64.
    #[error("the TSIG secret is not valid base64: {0}")]
    SecretBase64(#[source] base64::DecodeError),
    /// Signed updates without `--rfc2136-tsig-secret`.
    #[error("a TSIG secret is required unless updates are insecure")]
    NoSecret,
    /// The key name is not a DNS name, or the key cannot be built from the secret.
    #[error("{0}")]
    Key(#[source] TsigError),
    /// `--rfc2136-min-ttl` does not fit a DNS TTL (31 bits of seconds).
    #[error("the minimum TTL is larger than the largest DNS TTL (2147483647s)")]
    MinTtl,
    /// Only one of `--tls-client-cert` and `--tls-client-cert-key` is given.
    #[error("a TLS client certificate and its key must be given together")]
    ClientCertWithoutKey,
    /// `--rfc2136-load-balancing-strategy` is not `disabled`, `round-robin` or `random`.
    #[error("{0:?} is not a load balancing strategy (one of random, round-robin, disabled)")]
    LoadBalancing(String),
    /// With `--rfc2136-use-tls`: the TLS files or settings cannot be used.
    #[error("{0}")]
    Tls(#[source] TlsSetupError),
}

/// Why the TLS configuration cannot be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsSetupError {
    /// A TLS file is missing, not PEM, or only one of the client certificate and key is given.
    #[error(transparent)]
    Files(#[from] extdns_provider::tls::TlsError),
    /// A certificate of the CA file cannot be a trust anchor.
    #[error("the TLS CA file {} holds a certificate that cannot be trusted: {source}", path.display())]
    Root {
        /// The CA file's path.
        path: std::path::PathBuf,
        /// rustls's reason.
        #[source]
        source: rustls::Error,
    },
    /// rustls refused the configuration (TLS 1.3 with ring is always available; kept rather than unwrapped).
    #[error("TLS configuration: {0}")]
    Rustls(#[source] rustls::Error),
}

impl TlsSetupError {
    /// The TLS file at fault, when it is one file.
    pub fn file(&self) -> Option<extdns_provider::tls::TlsFile> {
        match self {
            TlsSetupError::Files(e) => e.file(),
            TlsSetupError::Root { .. } => Some(extdns_provider::tls::TlsFile::Ca),
            TlsSetupError::Rustls(_) => None,
        }
    }
}

/// The settings of [`Rfc2136Config`] a [`ConfigError`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Setting {
    /// [`Rfc2136Config::gss_tsig`] (`--rfc2136-gss-tsig`).
    GssTsig,
    /// [`Rfc2136Config::batch_change_size`] (`--rfc2136-batch-change-size`).
    BatchChangeSize,
    /// [`Rfc2136Config::hosts`] (`--rfc2136-host`).
    Hosts,
    /// [`Rfc2136Config::zones`] (`--rfc2136-zone`).
    Zones,
    /// [`Rfc2136Config::tsig_secret_alg`] (`--rfc2136-tsig-secret-alg`).
    TsigSecretAlg,
    /// [`Rfc2136Config::tsig_keyname`] (`--rfc2136-tsig-keyname`).
    TsigKeyname,
    /// [`Rfc2136Config::tsig_secret`] (`--rfc2136-tsig-secret`).
    TsigSecret,
    /// [`Rfc2136Config::min_ttl`] (`--rfc2136-min-ttl`).
    MinTtl,
    /// TLS as a whole (the protocol setup).
    Tls,
    /// The CA file.
    TlsCa,
    /// The client certificate or its key.
    TlsClientCert,
    /// [`Rfc2136Config::load_balancing`] (`--rfc2136-load-balancing-strategy`).
    LoadBalancing,
}

impl ConfigError {
    /// The setting to change.
    pub fn setting(&self) -> Setting {
        match self {
            ConfigError::GssTsig => Setting::GssTsig,
            ConfigError::BatchSize => Setting::BatchChangeSize,
            ConfigError::NoHost => Setting::Hosts,
            ConfigError::EmptyZone | ConfigError::NoZone | ConfigError::InvalidZone { .. } => Setting::Zones,
            ConfigError::Algorithm(_) => Setting::TsigSecretAlg,
            ConfigError::NoKeyName | ConfigError::Key(_) => Setting::TsigKeyname,
            ConfigError::SecretBase64(_) | ConfigError::NoSecret => Setting::TsigSecret,
            ConfigError::MinTtl => Setting::MinTtl,
            ConfigError::ClientCertWithoutKey => Setting::TlsClientCert,
            ConfigError::Tls(e) => match e.file() {
                Some(extdns_provider::tls::TlsFile::Ca) => Setting::TlsCa,
                Some(_) => Setting::TlsClientCert,
                None => Setting::Tls,
            },
            ConfigError::LoadBalancing(_) => Setting::LoadBalancing,
        }
    }
}

/// Validated settings the provider runs with.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// `host:port` strings, in flag order.
    pub servers: Vec<String>,
    /// Zones, lower-case, without the trailing dot, longest first.
    pub zones: Vec<String>,
    pub key: Option<Key>,
    pub axfr: bool,
    pub min_ttl: u32,
    pub batch_change_size: usize,
    pub load_balancing: LoadBalancing,
    pub tls: Option<TlsOptions>,
    pub timeout: Duration,
}

impl Rfc2136Config {
    pub(crate) fn validate(&self) -> Result<Settings, ConfigError> {
        if self.gss_tsig {
            return Err(ConfigError::GssTsig);
        }
        if self.batch_change_size < 1 {
            return Err(ConfigError::BatchSize);
        }
        let hosts: Vec<&str> = self.hosts.iter().map(|h| h.trim()).filter(|h| !h.is_empty()).collect();
        if hosts.is_empty() {
            return Err(ConfigError::NoHost);
        }
        let port = match (self.port, self.tls.is_some()) {
            (0, false) => 53,
            (0, true) => 853,
            (p, _) => p,
        };
        let servers = hosts
            .iter()
            .map(|h| {
                let h = h.trim_start_matches('[').trim_end_matches(']');
                if h.contains(':') {
                    format!("[{h}]:{port}")
                } else {
                    format!("{h}:{port}")
                }
            })
            .collect();

        let mut zones: Vec<String> = Vec::new();
        for z in &self.zones {
            let z = z.trim().trim_end_matches('.').to_ascii_lowercase();
            if z.is_empty() {
                return Err(ConfigError::EmptyZone);
            }
            if !zones.contains(&z) {
                zones.push(z);
            }
        }
        if zones.is_empty() {
            return Err(ConfigError::NoZone);
        }
        zones.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));

        let key = if self.insecure {
            None
        } else {
            let alg: Algorithm = self.tsig_secret_alg.parse().map_err(ConfigError::Algorithm)?;
            if self.tsig_keyname.trim().is_empty() {
                return Err(ConfigError::NoKeyName);
            }
            let secret = base64::engine::general_purpose::STANDARD
                .decode(self.tsig_secret.trim())
                .map_err(ConfigError::SecretBase64)?;
            if secret.is_empty() {
                return Err(ConfigError::NoSecret);
            }
            Some(Key::new(self.tsig_keyname.trim(), alg, &secret).map_err(ConfigError::Key)?)
        };

        let min_ttl = u32::try_from(self.min_ttl.as_secs())
            .ok()
            .filter(|t| *t <= i32::MAX as u32)
            .ok_or(ConfigError::MinTtl)?;

        if let Some(tls) = &self.tls
            && tls.client_cert.is_some() != tls.client_key.is_some()
        {
            return Err(ConfigError::ClientCertWithoutKey);
        }

        Ok(Settings {
            servers,
            zones,
            key,
            axfr: self.axfr,
            min_ttl,
            batch_change_size: self.batch_change_size,
            load_balancing: self.load_balancing,
            tls: self.tls.clone(),
            timeout: if self.timeout.is_zero() {
                Duration::from_secs(10)
            } else {
                self.timeout
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Rfc2136Config {
        Rfc2136Config {
            hosts: vec!["127.0.0.1".into()],
            port: 5353,
            zones: vec!["example.org".into()],
            tsig_keyname: "externaldns-key".into(),
            tsig_secret: "c2VjcmV0".into(),
            tsig_secret_alg: "hmac-sha256".into(),
            ..Rfc2136Config::default()
        }
    }

    /// [`base`] changed by `f`.
    fn with(f: impl FnOnce(&mut Rfc2136Config)) -> Rfc2136Config {
        let mut c = base();
        f(&mut c);
        c
    }

    /// The message `c` is refused with, which must name `setting`.
    fn refused(c: Rfc2136Config, setting: Setting) -> String {
        let e = err(c);
        assert_eq!(e.0, Some(setting), "{e:?}");
        e.1
    }

    /// The setting a configuration is refused for, and the message.
    fn err(c: Rfc2136Config) -> (Option<Setting>, String) {
        match c.validate() {
            Ok(_) => (None, String::from("<accepted>")),
            Err(e) => (Some(e.setting()), e.to_string()),
        }
    }

    #[test]
    fn gss_tsig_is_rejected_at_startup_naming_kerberos() {
        let why = refused(with(|c| c.gss_tsig = true), Setting::GssTsig);
        assert!(why.contains("Kerberos"), "{why}");
    }

    #[test]
    fn an_unknown_tsig_algorithm_is_rejected_unless_insecure() {
        let why = refused(with(|c| c.tsig_secret_alg = "hmac-md5".into()), Setting::TsigSecretAlg);
        assert!(why.contains("hmac-md5"), "{why}");
        assert!(
            Rfc2136Config {
                tsig_secret_alg: "".into(),
                insecure: true,
                ..base()
            }
            .validate()
            .is_ok()
        );
    }

    #[test]
    fn all_five_external_dns_algorithms_are_accepted() {
        for alg in ["hmac-sha1", "hmac-sha224", "hmac-sha256", "hmac-sha384", "hmac-sha512"] {
            assert!(
                Rfc2136Config {
                    tsig_secret_alg: alg.into(),
                    ..base()
                }
                .validate()
                .is_ok(),
                "{alg}"
            );
        }
    }

    #[test]
    fn batch_change_size_must_be_positive() {
        refused(with(|c| c.batch_change_size = 0), Setting::BatchChangeSize);
    }

    #[test]
    fn a_secret_that_is_not_base64_names_the_setting() {
        let why = refused(with(|c| c.tsig_secret = "not base64!".into()), Setting::TsigSecret);
        assert!(why.contains("base64"), "{why}");
    }

    #[test]
    fn zones_are_required_normalised_and_sorted_longest_first() {
        refused(with(|c| c.zones = vec![]), Setting::Zones);
        let s = Rfc2136Config {
            zones: vec!["Example.org.".into(), "k8s.example.org".into()],
            ..base()
        }
        .validate();
        let zones = s.map(|s| s.zones).unwrap_or_default();
        assert_eq!(zones, vec!["k8s.example.org".to_string(), "example.org".to_string()]);
    }

    #[test]
    fn hosts_get_the_port_and_ipv6_brackets() {
        let s = Rfc2136Config {
            hosts: vec!["ns1".into(), "::1".into(), "".into()],
            ..base()
        }
        .validate();
        assert_eq!(
            s.map(|s| s.servers).unwrap_or_default(),
            vec!["ns1:5353".to_string(), "[::1]:5353".to_string()]
        );
        let tls = Rfc2136Config {
            port: 0,
            tls: Some(TlsOptions::default()),
            ..base()
        }
        .validate();
        assert_eq!(
            tls.map(|s| s.servers).unwrap_or_default(),
            vec!["127.0.0.1:853".to_string()]
        );
        refused(with(|c| c.hosts = vec![String::new()]), Setting::Hosts);
    }

    #[test]
    fn load_balancing_strategies_parse_like_external_dns() {
        assert!(matches!(
            "round-robin".parse::<LoadBalancing>(),
            Ok(LoadBalancing::RoundRobin)
        ));
        assert!(matches!(
            "disabled".parse::<LoadBalancing>(),
            Ok(LoadBalancing::Disabled)
        ));
        assert!(matches!("sticky".parse::<LoadBalancing>(), Err(ConfigError::LoadBalancing(s)) if s == "sticky"));
    }
}
