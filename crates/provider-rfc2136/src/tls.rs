//! DNS over TLS (RFC 7858, zone transfers per RFC 9103): the client configuration, built once at startup
//! from the TLS files the toolkit reads, so a bad file stops extdns with a message naming it.

use std::sync::Arc;

use extdns_provider::TlsOptions;
use extdns_provider::tls::TlsError;
use rustls::pki_types::{CertificateDer, ServerName};

use crate::config::TlsSetupError;

/// A prepared TLS client configuration.
#[derive(Clone)]
pub struct TlsConnector(tokio_rustls::TlsConnector);

impl TlsConnector {
    /// The server's certificate is checked against the CA file, or the system roots without one (unless
    /// `skip_verify`); the client certificate is presented when given. TLS 1.3 only, ALPN `dot`.
    pub fn new(opts: &TlsOptions) -> Result<TlsConnector, TlsSetupError> {
        // With verification off the CA file is not needed, and not read.
        let files = TlsOptions {
            ca_file: opts.ca_file.clone().filter(|_| !opts.skip_verify),
            ..opts.clone()
        }
        .load()?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(TlsSetupError::Rustls)?;
        let builder = if opts.skip_verify {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
        } else {
            let mut roots = rustls::RootCertStore::empty();
            if files.roots.is_empty() {
                for cert in rustls_native_certs::load_native_certs().certs {
                    let _ = roots.add(cert);
                }
            } else {
                for cert in files.roots {
                    roots.add(cert).map_err(|source| TlsSetupError::Root {
                        path: opts.ca_file.clone().unwrap_or_default(),
                        source,
                    })?;
                }
            }
            builder.with_root_certificates(roots)
        };
        let mut config = match files.identity {
            Some(identity) => builder
                .with_client_auth_cert(identity.chain, identity.key)
                .map_err(|e| TlsError::Identity {
                    cert: identity.cert_path,
                    key: identity.key_path,
                    source: e.into(),
                })?,
            None => builder.with_no_client_auth(),
        };
        // RFC 9103: zone transfers over TLS negotiate the "dot" protocol.
        config.alpn_protocols = vec![b"dot".to_vec()];
        Ok(TlsConnector(tokio_rustls::TlsConnector::from(Arc::new(config))))
    }

    pub(crate) fn connector(&self) -> &tokio_rustls::TlsConnector {
        &self.0
    }
}

/// Skip verification: accept any certificate (signatures are still checked for well-formedness).
#[derive(Debug)]
struct NoVerify(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use extdns_provider::tls::TlsFile;

    fn options(ca: &str, skip_verify: bool) -> TlsOptions {
        TlsOptions {
            skip_verify,
            ca_file: Some(ca.into()),
            client_cert: None,
            client_key: None,
        }
    }

    #[test]
    fn a_missing_ca_file_is_named_without_a_flag() {
        let Err(e) = TlsConnector::new(&options("/nonexistent/ca.pem", false)) else {
            panic!("a missing CA file was accepted")
        };
        assert_eq!(e.file(), Some(TlsFile::Ca));
        let text = e.to_string();
        assert!(
            text.contains("CA file") && text.contains("/nonexistent/ca.pem"),
            "{text}"
        );
        assert!(!text.contains("--"), "library errors name no flag: {text}");
    }

    #[test]
    fn without_verification_the_ca_file_is_not_read() {
        assert!(TlsConnector::new(&options("/nonexistent/ca.pem", true)).is_ok());
    }

    #[test]
    fn a_certificate_without_its_key_is_refused() {
        let o = TlsOptions {
            client_cert: Some("/nonexistent/cert.pem".into()),
            ..TlsOptions::default()
        };
        let Err(e) = TlsConnector::new(&o) else {
            panic!("half an identity was accepted")
        };
        assert!(matches!(e, TlsSetupError::Files(TlsError::HalfIdentity)), "{e:?}");
    }
}
