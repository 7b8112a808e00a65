//! The API over HTTPS: a TLS server on 127.0.0.1 (tokio-rustls, a certificate for 127.0.0.1 signed by a CA
//! made with openssl for the test) answering every request with an empty zone list, the way PowerDNS
//! behind a TLS proxy would. Checks `--tls-ca`, `--pdns-skip-tls-verify` and that an unknown CA is refused.

use std::path::Path;
use std::sync::Arc;

use extdns_provider::Provider;
use extdns_provider_pdns::{PdnsConfig, PdnsProvider};
use extdns_test_support::require;
use extdns_test_support::tls::Ca;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A CA (`ca.crt`) and a certificate for 127.0.0.1 it signed (`server.crt`, `server.key`) in `dir`.
fn certificates(dir: &Path) {
    if let Err(e) = Ca::for_localhost(dir) {
        panic!("{e:#}");
    }
}

async fn https_server(dir: &Path) -> String {
    let certs: Vec<CertificateDer<'static>> = match CertificateDer::pem_file_iter(dir.join("server.crt")) {
        Ok(it) => it.filter_map(Result::ok).collect(),
        Err(e) => panic!("{e}"),
    };
    let key = PrivateKeyDer::from_pem_file(dir.join("server.key")).unwrap_or_else(|e| panic!("{e}"));
    let config = match rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key)
    {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut buf = vec![0u8; 8192];
                let _ = tls.read(&mut buf).await;
                let _ = tls
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n[]")
                    .await;
                let _ = tls.shutdown().await;
            });
        }
    });
    format!("https://127.0.0.1:{port}")
}

fn provider(config: &PdnsConfig) -> PdnsProvider {
    PdnsProvider::new(config).unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test]
async fn https_with_the_tls_ca_with_skip_verify_and_refused_without_either() {
    require!(OpenSsl);
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    certificates(dir.path());
    let url = https_server(dir.path()).await;

    let mut with_ca = PdnsConfig::new(&url, "k");
    with_ca.tls.ca_file = Some(dir.path().join("ca.crt"));
    let r = provider(&with_ca).records().await;
    assert!(r.is_ok(), "the CA of --tls-ca is trusted: {r:?}");

    let mut skip = PdnsConfig::new(&url, "k");
    skip.tls.skip_verify = true;
    let r = provider(&skip).records().await;
    assert!(r.is_ok(), "--pdns-skip-tls-verify accepts any certificate: {r:?}");

    let mut plain = PdnsConfig::new(&url, "k");
    plain.calls.backoff.max_attempts = 1;
    let r = provider(&plain).records().await;
    let Err(e) = r else {
        panic!("an unknown CA must be refused")
    };
    assert!(
        e.to_string().to_lowercase().contains("certificate"),
        "the message says why: {e}"
    );
}

#[test]
fn unusable_tls_files_are_configuration_errors_naming_the_file() {
    require!(OpenSsl);
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    certificates(dir.path());
    // A valid client certificate and key load.
    let mut c = PdnsConfig::new("https://127.0.0.1:1", "k");
    c.tls.client_cert = Some(dir.path().join("server.crt"));
    c.tls.client_key = Some(dir.path().join("server.key"));
    assert!(PdnsProvider::new(&c).is_ok());
    // A key file that holds no key does not.
    let garbage = dir.path().join("garbage.pem");
    if let Err(e) = std::fs::write(&garbage, "not a pem file\n") {
        panic!("{e}");
    }
    c.tls.client_key = Some(garbage.clone());
    let e = PdnsProvider::new(&c).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("garbage.pem") && e.contains("client key"), "{e}");
}
