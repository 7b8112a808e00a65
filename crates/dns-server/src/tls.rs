//! DNS over TLS (RFC 7858): TCP's framing and query path inside a TLS session, on its own port (853 by
//! default), with a certificate and key read from PEM files and read again whenever either file changes,
//! so a cert-manager renewal (a Secret mounted as files) is served without a restart.
//!
//! rustls with the ring provider, as the rest of the tree; TLS 1.2 and 1.3; ALPN `dot` offered (RFC
//! 7858 names none, but clients that send it get it). The certificate is chosen per handshake from the
//! last good pair ([`CertStore`]): a pair that fails to load (a file half written, a key not matching)
//! is logged and counted, and the previous one goes on being served until a good pair appears.

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, SystemTime};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::metrics::ServerMetrics;

/// Where DoT is served and with what certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsConfig {
    /// Addresses to answer DoT on (`--dns-server-tls-listen`, `0.0.0.0:853` by default).
    pub listen: Vec<SocketAddr>,
    /// The certificate chain, PEM, leaf first (`--dns-server-tls-cert-file`).
    pub cert_file: PathBuf,
    /// Its private key, PEM: PKCS#8, PKCS#1 or SEC1 (`--dns-server-tls-key-file`).
    pub key_file: PathBuf,
    /// How often the files' modification times and sizes are looked at.
    pub reload_every: Duration,
}

impl TlsConfig {
    /// DoT on `listen` with the pair of files, looked at for changes every 10 seconds.
    pub fn new(listen: Vec<SocketAddr>, cert_file: PathBuf, key_file: PathBuf) -> TlsConfig {
        TlsConfig {
            listen,
            cert_file,
            key_file,
            reload_every: Duration::from_secs(10),
        }
    }
}

/// Why a certificate and key cannot be served.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// A file cannot be read.
    #[error("cannot read the DNS-over-TLS {what} {path}: {source}")]
    Read {
        /// `certificate` or `key`.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// A file holds no PEM block of the kind wanted, or a broken one.
    #[error("the DNS-over-TLS {what} file {path} holds no usable PEM {what}: {source}")]
    Pem {
        /// `certificate` or `key`.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// What the PEM reader said.
        #[source]
        source: rustls::pki_types::pem::Error,
    },
    /// The certificate file holds no certificate.
    #[error("the DNS-over-TLS certificate file {0} holds no CERTIFICATE block")]
    NoCertificate(PathBuf),
    /// The key is not one rustls signs with, or is not the certificate's.
    #[error("the DNS-over-TLS key {key} cannot serve the certificate {cert}: {source}")]
    Key {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
        /// What rustls said.
        #[source]
        source: rustls::Error,
    },
    /// rustls refused the protocol versions (not expected with its own defaults).
    #[error("cannot set up TLS for DNS: {0}")]
    Config(#[source] rustls::Error),
}

/// What the files looked like when last read: a change of either is a reason to read them again.
type Stamp = [Option<(SystemTime, u64)>; 2];

/// The certificate and key being served, and the files they came from.
pub(crate) struct CertStore {
    cert_file: PathBuf,
    key_file: PathBuf,
    provider: Arc<CryptoProvider>,
    current: RwLock<Arc<CertifiedKey>>,
    stamp: Mutex<Stamp>,
}

impl fmt::Debug for CertStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CertStore")
            .field("cert_file", &self.cert_file)
            .field("key_file", &self.key_file)
            .finish_non_exhaustive()
    }
}

impl CertStore {
    /// The pair read now: a start with files that do not serve fails.
    pub(crate) fn load(config: &TlsConfig) -> Result<CertStore, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let stamp = stamp(&config.cert_file, &config.key_file);
        let current = read_pair(&config.cert_file, &config.key_file, &provider)?;
        Ok(CertStore {
            cert_file: config.cert_file.clone(),
            key_file: config.key_file.clone(),
            provider,
            current: RwLock::new(Arc::new(current)),
            stamp: Mutex::new(stamp),
        })
    }

    /// Reads the pair again if either file changed since it was last read well; `Some` says what became of
    /// it (`Ok`: the new pair is served from the next handshake on).
    pub(crate) fn reload_if_changed(&self) -> Option<Result<(), TlsError>> {
        let now = stamp(&self.cert_file, &self.key_file);
        let mut last = self.stamp.lock().unwrap_or_else(PoisonError::into_inner);
        if *last == now {
            return None;
        }
        // On failure the stamp stays: the next look tries again (the writer may be half way).
        let pair = match read_pair(&self.cert_file, &self.key_file, &self.provider) {
            Ok(pair) => pair,
            Err(e) => return Some(Err(e)),
        };
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(pair);
        *last = now;
        Some(Ok(()))
    }

    /// The rustls server configuration that picks the current pair at every handshake.
    pub(crate) fn server_config(self: &Arc<Self>) -> Result<Arc<rustls::ServerConfig>, TlsError> {
        let mut config = rustls::ServerConfig::builder_with_provider(self.provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(TlsError::Config)?
            .with_no_client_auth()
            .with_cert_resolver(self.clone());
        config.alpn_protocols = vec![b"dot".to_vec()];
        Ok(Arc::new(config))
    }

    /// Looks at the files every `every` until `shutdown`, logging and counting each reload.
    pub(crate) async fn watch(self: Arc<Self>, every: Duration, metrics: ServerMetrics, shutdown: CancellationToken) {
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(every) => {}
            }
            let store = self.clone();
            // File reads and key parsing are blocking work: off the runtime's workers.
            let Ok(Some(outcome)) = tokio::task::spawn_blocking(move || store.reload_if_changed()).await else {
                continue;
            };
            match outcome {
                Ok(()) => {
                    info!(cert = %self.cert_file.display(), "DNS-over-TLS certificate reloaded");
                    metrics.tls_reloads.get_or_create(&result("reloaded")).inc();
                }
                Err(e) => {
                    warn!(error = %e, "DNS-over-TLS certificate not reloaded; serving the previous one");
                    metrics.tls_reloads.get_or_create(&result("failed")).inc();
                }
            }
        }
    }
}

fn result(result: &'static str) -> crate::metrics::ResultLabels {
    crate::metrics::ResultLabels { result }
}

impl ResolvesServerCert for CertStore {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current.read().unwrap_or_else(PoisonError::into_inner).clone())
    }
}

/// Modification time and size of both files (`None` for one that cannot be read).
fn stamp(cert: &Path, key: &Path) -> Stamp {
    [cert, key].map(|p| {
        std::fs::metadata(p)
            .ok()
            .and_then(|m| Some((m.modified().ok()?, m.len())))
    })
}

/// The chain and key of the two files, checked to belong together.
fn read_pair(cert: &Path, key: &Path, provider: &CryptoProvider) -> Result<CertifiedKey, TlsError> {
    let read = |what, path: &Path| {
        std::fs::read(path).map_err(|source| TlsError::Read {
            what,
            path: path.to_path_buf(),
            source,
        })
    };
    let pem = |what, path: &Path| {
        let path = path.to_path_buf();
        move |source| TlsError::Pem { what, path, source }
    };
    let chain = CertificateDer::pem_slice_iter(&read("certificate", cert)?)
        .collect::<Result<Vec<_>, _>>()
        .map_err(pem("certificate", cert))?;
    if chain.is_empty() {
        return Err(TlsError::NoCertificate(cert.to_path_buf()));
    }
    let private = PrivateKeyDer::from_pem_slice(&read("key", key)?).map_err(pem("key", key))?;
    CertifiedKey::from_der(chain, private, provider).map_err(|source| TlsError::Key {
        cert: cert.to_path_buf(),
        key: key.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use extdns_test_support::tls::Ca;

    /// A CA and a serving certificate for localhost in `dir`/`name`: the certificate and key files.
    pub(crate) fn pair(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
        let ca = Ca::for_localhost(&dir.join(name)).expect("the openssl command makes a CA and a certificate");
        (ca.path("server.crt"), ca.path("server.key"))
    }

    #[test]
    fn a_pair_loads_and_a_change_is_read_again_but_a_bad_one_keeps_the_last() {
        extdns_test_support::require!(OpenSsl);
        let dir = tempfile::tempdir().expect("temp dir");
        let (cert, key) = pair(dir.path(), "a");
        let config = TlsConfig::new(Vec::new(), cert.clone(), key.clone());
        let store = CertStore::load(&config).expect("the pair loads");
        assert!(store.reload_if_changed().is_none(), "nothing changed");
        let first = store.current.read().expect("lock").cert[0].clone();
        let (cert_b, key_b) = pair(dir.path(), "b");
        std::fs::copy(&cert_b, &cert).expect("copy");
        // The new certificate with the old key: refused, and the old pair stays.
        assert!(matches!(store.reload_if_changed(), Some(Err(TlsError::Key { .. }))));
        assert_eq!(store.current.read().expect("lock").cert[0], first);
        std::fs::copy(&key_b, &key).expect("copy");
        assert!(matches!(store.reload_if_changed(), Some(Ok(()))));
        assert_ne!(store.current.read().expect("lock").cert[0], first);
        assert!(store.reload_if_changed().is_none());
    }

    #[test]
    fn files_that_do_not_serve_are_named_in_the_error() {
        extdns_test_support::require!(OpenSsl);
        let dir = tempfile::tempdir().expect("temp dir");
        let (cert, key) = pair(dir.path(), "a");
        let missing = dir.path().join("missing.crt");
        let e = CertStore::load(&TlsConfig::new(Vec::new(), missing, key.clone())).expect_err("missing");
        assert!(e.to_string().contains("missing.crt"), "{e}");
        let e = CertStore::load(&TlsConfig::new(Vec::new(), key.clone(), key.clone())).expect_err("a key");
        assert!(matches!(e, TlsError::NoCertificate(_)), "{e}");
        let e = CertStore::load(&TlsConfig::new(Vec::new(), cert.clone(), cert)).expect_err("no key");
        assert!(matches!(e, TlsError::Pem { what: "key", .. }), "{e}");
    }
}
