//! A loopback forward proxy that terminates TLS for chosen host names, so an unmodified client (external-dns
//! and Google's or Azure's Go libraries, say) talks to a fake at the real host names: the client is given
//! `HTTPS_PROXY` = [`TlsProxy::url`] and trusts [`TlsProxy::ca_file`] (`SSL_CERT_FILE`). Each
//! `CONNECT host:443` to a host of the table is answered with a certificate for that host, minted by the
//! proxy's own test CA (`openssl`, [`crate::tls::Ca`]), and the decrypted HTTP/1.1 stream (ALPN offers
//! `http/1.1` only) is copied to the host's backend on 127.0.0.1. A host outside the table, or any other
//! request, is refused with 403 and recorded: nothing is ever dialled but the backends.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use anyhow::{Context, Result};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

use crate::background::Background;

/// What the proxy saw.
#[derive(Debug, Default, Clone)]
pub struct ProxyLog {
    /// `host:port` of every CONNECT it served.
    pub connects: Vec<String>,
    /// The first line of every request it refused.
    pub refused: Vec<String>,
}

/// A running proxy on 127.0.0.1; stops when dropped.
pub struct TlsProxy {
    /// `http://127.0.0.1:<port>`, for `HTTPS_PROXY`.
    pub url: String,
    /// The CA that signed the hosts' certificates, for `SSL_CERT_FILE`.
    pub ca_file: PathBuf,
    log: Arc<Mutex<ProxyLog>>,
    /// The proxy, stopped before its directory goes.
    _running: Background,
    _dir: tempfile::TempDir,
}

impl TlsProxy {
    /// A proxy serving each `(host name, backend)` of `routes` on port 443.
    pub fn start(routes: &[(&str, SocketAddr)]) -> Result<TlsProxy> {
        let dir = tempfile::tempdir().context("a directory for the proxy's CA")?;
        let ca = crate::tls::Ca::create(dir.path(), "/CN=extdns test proxy CA")?;
        let mut table: HashMap<String, (TlsAcceptor, SocketAddr)> = HashMap::new();
        for (i, (host, backend)) in routes.iter().enumerate() {
            let name = format!("host{i}");
            ca.leaf(
                &name,
                &format!("/CN={host}"),
                &format!("subjectAltName=DNS:{host}\nextendedKeyUsage=serverAuth"),
            )?;
            let certs = CertificateDer::pem_file_iter(ca.path(&format!("{name}.crt")))
                .and_then(|c| c.collect::<Result<Vec<_>, _>>())
                .with_context(|| format!("the certificate of {host}"))?;
            let key = PrivateKeyDer::from_pem_file(ca.path(&format!("{name}.key")))
                .with_context(|| format!("the key of {host}"))?;
            let mut config =
                rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                    .with_safe_default_protocol_versions()
                    .context("TLS versions")?
                    .with_no_client_auth()
                    .with_single_cert(certs, key)
                    .with_context(|| format!("the TLS configuration of {host}"))?;
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            table.insert(format!("{host}:443"), (TlsAcceptor::from(Arc::new(config)), *backend));
        }
        let listener = std::net::TcpListener::bind("127.0.0.1:0").context("binding the proxy")?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let log = Arc::new(Mutex::new(ProxyLog::default()));
        let (table, served) = (Arc::new(table), log.clone());
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .context("the proxy's runtime")?;
        let running = Background::run(runtime, move |stop| async move {
            let listener = TcpListener::from_std(listener).unwrap_or_else(|e| panic!("{e}"));
            let accept = async {
                loop {
                    let Ok((conn, _)) = listener.accept().await else {
                        continue;
                    };
                    tokio::spawn(serve(conn, table.clone(), served.clone()));
                }
            };
            tokio::select! {
                _ = accept => {}
                _ = stop => {}
            }
        });
        Ok(TlsProxy {
            url: format!("http://127.0.0.1:{port}"),
            ca_file: ca.path("ca.crt"),
            log,
            _running: running,
            _dir: dir,
        })
    }

    /// What the proxy served and refused so far.
    pub fn log(&self) -> MutexGuard<'_, ProxyLog> {
        self.log.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// One client connection: its CONNECT, the TLS handshake for that host, then bytes both ways.
async fn serve(mut conn: TcpStream, table: Arc<HashMap<String, (TlsAcceptor, SocketAddr)>>, log: Arc<Mutex<ProxyLog>>) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    // Byte by byte up to the blank line: the TLS handshake follows right after it on the same stream.
    while !head.ends_with(b"\r\n\r\n") && head.len() < 8192 {
        match conn.read(&mut byte).await {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let text = String::from_utf8_lossy(&head);
    let first = text.lines().next().unwrap_or_default().to_string();
    let target = match first.split(' ').collect::<Vec<_>>()[..] {
        ["CONNECT", target, _] => target.to_ascii_lowercase(),
        _ => String::new(),
    };
    let Some((acceptor, backend)) = table.get(&target) else {
        if let Ok(mut l) = log.lock() {
            l.refused.push(first);
        }
        let _ = conn
            .write_all(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
            .await;
        return;
    };
    if let Ok(mut l) = log.lock() {
        l.connects.push(target.clone());
    }
    if conn
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .await
        .is_err()
    {
        return;
    }
    let Ok(mut tls) = acceptor.accept(conn).await else {
        return;
    };
    let Ok(mut upstream) = TcpStream::connect(backend).await else {
        return;
    };
    // Each piece is passed on at once, as a pipe would: without this, Nagle's algorithm holds a request's body
    // behind its headers until the backend acknowledges them.
    let _ = (tls.get_ref().0.set_nodelay(true), upstream.set_nodelay(true));
    let _ = tokio::io::copy_bidirectional(&mut tls, &mut upstream).await;
}
