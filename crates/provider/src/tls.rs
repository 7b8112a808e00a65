//! TLS files a provider is given (a CA bundle, a client certificate and its key), read and parsed once at
//! startup, so a wrong path or a file that is not PEM stops extdns with a message naming the file rather
//! than failing every sync. The HTTP providers hand them to [`HttpClient`](crate::http::HttpClient); the
//! RFC 2136 provider builds its DNS-over-TLS configuration from them.
//!
//! Errors name the file by its role ([`TlsFile`]) and path, never by a command-line flag: which flag set
//! the file is the binary's business.

use std::fmt;
use std::path::{Path, PathBuf};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// TLS settings of a provider's connections. Exhaustive on purpose: the binary fills every field from its
/// flags, and a new field should break that code rather than default silently.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// Accept any server certificate.
    pub skip_verify: bool,
    /// PEM file of the CA (or CAs) that signed the server's certificate.
    pub ca_file: Option<PathBuf>,
    /// PEM files of a client certificate (chain) and its key, for servers that require mutual TLS.
    pub client_cert: Option<PathBuf>,
    /// The key of [`TlsOptions::client_cert`]; both or neither.
    pub client_key: Option<PathBuf>,
}

/// Which of the TLS files an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TlsFile {
    /// [`TlsOptions::ca_file`].
    Ca,
    /// [`TlsOptions::client_cert`].
    ClientCert,
    /// [`TlsOptions::client_key`].
    ClientKey,
}

impl fmt::Display for TlsFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TlsFile::Ca => "CA file",
            TlsFile::ClientCert => "client certificate",
            TlsFile::ClientKey => "client key",
        })
    }
}

/// Why the TLS files cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// The file cannot be opened or read (missing, no permission).
    #[error("cannot read the TLS {file} {}: {source}", path.display())]
    Read {
        /// Which setting named the file.
        file: TlsFile,
        /// The path as given.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not PEM, or a PEM block in it is corrupt.
    #[error("the TLS {file} {} is not valid PEM: {source}", path.display())]
    Pem {
        /// Which setting named the file.
        file: TlsFile,
        /// The path as given.
        path: PathBuf,
        /// The PEM parser's reason.
        #[source]
        source: rustls::pki_types::pem::Error,
    },
    /// The file is valid PEM but holds no certificate (or, for the key file, no private key).
    #[error("the TLS {file} {} holds no {}", path.display(), if *file == TlsFile::ClientKey { "private key" } else { "certificate" })]
    Empty {
        /// Which setting named the file.
        file: TlsFile,
        /// The path as given.
        path: PathBuf,
    },
    /// Only one of the client certificate and key was given.
    #[error("a TLS client certificate and its key must be given together")]
    HalfIdentity,
    /// The HTTP client's TLS library refused the certificate and key as a pair.
    #[error("the TLS client certificate {} and key {} do not make a client identity: {source}", cert.display(), key.display())]
    Identity {
        /// The client certificate's path.
        cert: PathBuf,
        /// The client key's path.
        key: PathBuf,
        /// The TLS library's reason (a key that does not match the certificate, say).
        #[source]
        source: crate::BoxError,
    },
}

impl TlsError {
    /// The file at fault, when it is one file.
    pub fn file(&self) -> Option<TlsFile> {
        match self {
            TlsError::Read { file, .. } | TlsError::Pem { file, .. } | TlsError::Empty { file, .. } => Some(*file),
            TlsError::HalfIdentity | TlsError::Identity { .. } => None,
        }
    }
}

/// The parsed contents of the files of a [`TlsOptions`].
#[derive(Debug)]
#[non_exhaustive]
pub struct TlsFiles {
    /// The certificates of the CA file; empty without one.
    pub roots: Vec<CertificateDer<'static>>,
    /// The client certificate and key, when both were given.
    pub identity: Option<Identity>,
}

/// A client certificate chain and its key.
#[derive(Debug)]
#[non_exhaustive]
pub struct Identity {
    /// The client certificate first, then any intermediates, as the file lists them.
    pub chain: Vec<CertificateDer<'static>>,
    /// The first private key of the key file (PKCS#1, PKCS#8 or SEC1).
    pub key: PrivateKeyDer<'static>,
    /// Where the certificate came from, for errors.
    pub cert_path: PathBuf,
    /// Where the key came from, for errors.
    pub key_path: PathBuf,
    /// Both files as read, the chain first: what HTTP clients take.
    pub pem: Vec<u8>,
}

impl TlsOptions {
    /// Read and parse every file these options name.
    pub fn load(&self) -> Result<TlsFiles, TlsError> {
        let roots = match &self.ca_file {
            Some(path) => certificates(TlsFile::Ca, path)?.1,
            None => Vec::new(),
        };
        let identity = match (&self.client_cert, &self.client_key) {
            (Some(cert), Some(key)) => {
                let (mut pem, chain) = certificates(TlsFile::ClientCert, cert)?;
                let key_pem = read(TlsFile::ClientKey, key)?;
                let parsed = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|source| match source {
                    rustls::pki_types::pem::Error::NoItemsFound => TlsError::Empty {
                        file: TlsFile::ClientKey,
                        path: key.clone(),
                    },
                    source => TlsError::Pem {
                        file: TlsFile::ClientKey,
                        path: key.clone(),
                        source,
                    },
                })?;
                pem.push(b'\n');
                pem.extend(key_pem);
                Some(Identity {
                    chain,
                    key: parsed,
                    cert_path: cert.clone(),
                    key_path: key.clone(),
                    pem,
                })
            }
            (None, None) => None,
            _ => return Err(TlsError::HalfIdentity),
        };
        Ok(TlsFiles { roots, identity })
    }
}

fn read(file: TlsFile, path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        file,
        path: path.to_path_buf(),
        source,
    })
}

/// The file's bytes and the certificates in it (at least one).
fn certificates(file: TlsFile, path: &Path) -> Result<(Vec<u8>, Vec<CertificateDer<'static>>), TlsError> {
    let pem = read(file, path)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| TlsError::Pem {
            file,
            path: path.to_path_buf(),
            source,
        })?;
    if certs.is_empty() {
        return Err(TlsError::Empty {
            file,
            path: path.to_path_buf(),
        });
    }
    Ok((pem, certs))
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn testdata(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata").join(name)
    }

    fn options(ca: Option<&Path>, cert: Option<&Path>, key: Option<&Path>) -> TlsOptions {
        TlsOptions {
            ca_file: ca.map(Path::to_path_buf),
            client_cert: cert.map(Path::to_path_buf),
            client_key: key.map(Path::to_path_buf),
            ..TlsOptions::default()
        }
    }

    #[test]
    fn the_files_are_read_and_parsed() {
        let (cert, key) = (testdata("cert.pem"), testdata("key.pem"));
        let files = options(Some(&cert), Some(&cert), Some(&key)).load();
        let files = files.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(files.roots.len(), 1);
        let identity = files.identity.unwrap_or_else(|| panic!("no identity"));
        assert_eq!(identity.chain.len(), 1);
        assert!(matches!(identity.key, PrivateKeyDer::Pkcs8(_)));
        assert!(identity.pem.starts_with(b"-----BEGIN CERTIFICATE-----"));
        let none = TlsOptions::default().load().unwrap_or_else(|e| panic!("{e}"));
        assert!(none.roots.is_empty() && none.identity.is_none());
    }

    #[test]
    fn bad_files_are_named_with_their_role_and_path() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let garbage = dir.path().join("garbage.pem");
        let broken = dir.path().join("broken.pem");
        let write = |p: &Path, text: &str| std::fs::write(p, text).unwrap_or_else(|e| panic!("{e}"));
        write(&garbage, "not a certificate at all\n");
        write(
            &broken,
            "-----BEGIN CERTIFICATE-----\n!!!not base64!!!\n-----END CERTIFICATE-----\n",
        );
        let missing = dir.path().join("missing.pem");
        let err = |o: TlsOptions| o.load().err().unwrap_or_else(|| panic!("accepted"));

        let e = err(options(Some(&missing), None, None));
        assert!(matches!(e, TlsError::Read { file: TlsFile::Ca, .. }), "{e:?}");
        assert!(
            e.to_string().contains("CA file") && e.to_string().contains("missing.pem"),
            "{e}"
        );

        let e = err(options(Some(&garbage), None, None));
        assert!(matches!(e, TlsError::Empty { file: TlsFile::Ca, .. }), "{e:?}");
        assert!(e.to_string().contains("holds no certificate"), "{e}");

        let e = err(options(Some(&broken), None, None));
        assert!(matches!(e, TlsError::Pem { file: TlsFile::Ca, .. }), "{e:?}");
        assert!(e.to_string().contains("broken.pem"), "{e}");

        let cert = testdata("cert.pem");
        let e = err(options(None, Some(&cert), Some(&cert)));
        assert_eq!(e.file(), Some(TlsFile::ClientKey), "{e}");
        assert!(e.to_string().contains("holds no private key"), "{e}");

        let e = err(options(None, Some(&cert), None));
        assert!(matches!(e, TlsError::HalfIdentity), "{e:?}");
        assert!(!e.to_string().contains("--"), "no flag names in a library error: {e}");
    }
}
