//! DNS over TCP (or TLS) with the two-byte length framing of RFC 1035 §4.2.2. Updates go over TCP as
//! external-dns sends them: batches of fifty changes do not fit in a UDP datagram, and zone transfers need
//! TCP anyway. One connection carries every message of a sync, which is what makes small batches fast.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

use crate::config::LoadBalancing;
use crate::tls::TlsConnector;

/// Failures below the DNS level: worth trying another server or a later sync.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The TCP connection could not be opened (refused, unreachable, unresolvable host).
    #[error("cannot connect to {server}: {source}")]
    Connect {
        /// The server as `host:port`.
        server: String,
        /// The system's reason.
        #[source]
        source: std::io::Error,
    },
    /// Connecting, sending or reading the answer took longer than the per-request timeout.
    #[error("{server} did not answer within {secs}s")]
    Timeout {
        /// The server as `host:port`.
        server: String,
        /// The timeout, in whole seconds.
        secs: u64,
    },
    /// The connection broke while sending or reading (reset, closed mid-message).
    #[error("connection to {server} failed: {source}")]
    Io {
        /// The server as `host:port`.
        server: String,
        /// The system's or the TLS library's reason.
        #[source]
        source: std::io::Error,
    },
    /// The TLS handshake failed (an untrusted certificate, a name mismatch, a bad client identity).
    #[error("cannot connect to {server}: TLS: {source}")]
    Tls {
        /// The server as `host:port`.
        server: String,
        /// The TLS library's reason (a `rustls::Error` inside the `io::Error`, when it is one).
        #[source]
        source: std::io::Error,
    },
    /// The server's host cannot be a TLS server name.
    #[error("{server}: {host} is not a valid TLS server name: {source}")]
    ServerName {
        /// The server as `host:port`.
        server: String,
        /// The host part.
        host: String,
        /// Why it is not a name.
        #[source]
        source: rustls::pki_types::InvalidDnsNameError,
    },
    /// A message larger than the two-byte length framing carries.
    #[error("connection to {server} failed: message of {bytes} bytes is larger than DNS allows (65535)")]
    TooLarge {
        /// The server as `host:port`.
        server: String,
        /// The message's size.
        bytes: usize,
    },
    /// There is no server to ask.
    #[error("no --rfc2136-host configured")]
    NoServer,
}

trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// One open connection to one server.
pub struct Connection {
    server: String,
    stream: Box<dyn Stream>,
    timeout: Duration,
}

impl Connection {
    pub async fn open(server: &str, tls: Option<&TlsConnector>, limit: Duration) -> Result<Connection, TransportError> {
        let connect = |source| TransportError::Connect {
            server: server.into(),
            source,
        };
        let tcp = bounded(server, limit, TcpStream::connect(server), connect).await?;
        let _ = tcp.set_nodelay(true);
        let stream: Box<dyn Stream> = match tls {
            None => Box::new(tcp),
            Some(tls) => {
                let host = server.rsplit_once(':').map(|(h, _)| h).unwrap_or(server);
                let host = host.trim_start_matches('[').trim_end_matches(']');
                let name = ServerName::try_from(host.to_string()).map_err(|source| TransportError::ServerName {
                    server: server.into(),
                    host: host.into(),
                    source,
                })?;
                let handshake = |source| TransportError::Tls {
                    server: server.into(),
                    source,
                };
                Box::new(bounded(server, limit, tls.connector().connect(name, tcp), handshake).await?)
            }
        };
        Ok(Connection {
            server: server.into(),
            stream,
            timeout: limit,
        })
    }

    pub async fn send(&mut self, wire: &[u8]) -> Result<(), TransportError> {
        let len = u16::try_from(wire.len()).map_err(|_| TransportError::TooLarge {
            server: self.server.clone(),
            bytes: wire.len(),
        })?;
        let mut framed = Vec::with_capacity(wire.len() + 2);
        framed.extend_from_slice(&len.to_be_bytes());
        framed.extend_from_slice(wire);
        let stream = &mut self.stream;
        let write = async {
            stream.write_all(&framed).await?;
            stream.flush().await
        };
        bounded(&self.server, self.timeout, write, io_error(&self.server)).await
    }

    pub async fn receive(&mut self) -> Result<Vec<u8>, TransportError> {
        let stream = &mut self.stream;
        let read = async {
            let mut len = [0u8; 2];
            stream.read_exact(&mut len).await?;
            let mut buf = vec![0u8; usize::from(u16::from_be_bytes(len))];
            stream.read_exact(&mut buf).await?;
            Ok::<_, std::io::Error>(buf)
        };
        bounded(&self.server, self.timeout, read, io_error(&self.server)).await
    }
}

/// One step on a connection to `server` (connecting, the TLS handshake, a read or a write), bounded by
/// the request timeout; `failed` names a failure of the step itself.
async fn bounded<T, E>(
    server: &str,
    limit: Duration,
    step: impl std::future::Future<Output = Result<T, E>>,
    failed: impl FnOnce(E) -> TransportError,
) -> Result<T, TransportError> {
    match timeout(limit, step).await {
        Err(_) => Err(TransportError::Timeout {
            server: server.into(),
            secs: limit.as_secs(),
        }),
        Ok(Err(e)) => Err(failed(e)),
        Ok(Ok(v)) => Ok(v),
    }
}

fn io_error(server: &str) -> impl FnOnce(std::io::Error) -> TransportError + '_ {
    move |source| TransportError::Io {
        server: server.into(),
        source,
    }
}

/// Chooses the server for each request according to `--rfc2136-load-balancing-strategy`; transfers and
/// updates keep separate rotations so one does not skew the other.
#[derive(Debug)]
pub struct ServerPicker {
    servers: Vec<String>,
    strategy: LoadBalancing,
    /// Disabled: the current host (moves on after a failure). Round-robin: the next host.
    cursor: AtomicUsize,
}

impl ServerPicker {
    pub fn new(servers: Vec<String>, strategy: LoadBalancing) -> Self {
        ServerPicker {
            servers,
            strategy,
            cursor: AtomicUsize::new(0),
        }
    }

    pub fn len(&self) -> usize {
        self.servers.len()
    }

    /// The order in which to try the servers for one request: the chosen one first, then the others.
    pub fn order(&self) -> Vec<usize> {
        let n = self.servers.len();
        if n == 0 {
            return Vec::new();
        }
        let start = match self.strategy {
            LoadBalancing::Disabled => self.cursor.load(Ordering::Relaxed) % n,
            LoadBalancing::RoundRobin => self.cursor.fetch_add(1, Ordering::Relaxed) % n,
            LoadBalancing::Random => {
                let r = getrandom::u64().unwrap_or_else(|_| self.cursor.fetch_add(1, Ordering::Relaxed) as u64);
                (r % n as u64) as usize
            }
        };
        (0..n).map(|i| (start + i) % n).collect()
    }

    /// A request to `index` failed below the DNS level: with the disabled strategy the next server becomes
    /// the current one, as external-dns fails over.
    pub fn failed(&self, index: usize) {
        if self.strategy == LoadBalancing::Disabled && self.servers.len() > 1 {
            let _ = self.cursor.compare_exchange(
                index,
                (index + 1) % self.servers.len(),
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
    }

    pub fn server(&self, index: usize) -> &str {
        &self.servers[index]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn picker(strategy: LoadBalancing) -> ServerPicker {
        ServerPicker::new(vec!["a:53".into(), "b:53".into(), "c:53".into()], strategy)
    }

    #[test]
    fn disabled_strategy_sticks_to_the_first_host_until_it_fails() {
        let p = picker(LoadBalancing::Disabled);
        assert_eq!(p.order(), vec![0, 1, 2]);
        assert_eq!(p.order(), vec![0, 1, 2]);
        p.failed(0);
        assert_eq!(p.order(), vec![1, 2, 0]);
    }

    #[test]
    fn round_robin_strategy_rotates_the_first_host() {
        let p = picker(LoadBalancing::RoundRobin);
        let firsts: Vec<usize> = (0..4).map(|_| p.order()[0]).collect();
        assert_eq!(firsts, vec![0, 1, 2, 0]);
    }

    /// The `io::Error` an error keeps as its source.
    fn io_cause(e: &TransportError) -> Option<std::io::ErrorKind> {
        std::error::Error::source(e)
            .and_then(|c| c.downcast_ref::<std::io::Error>())
            .map(std::io::Error::kind)
    }

    #[tokio::test]
    async fn a_refused_connection_keeps_the_system_error_and_names_the_server() -> std::io::Result<()> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let server = listener.local_addr()?.to_string();
        drop(listener);
        let Err(e) = Connection::open(&server, None, Duration::from_secs(5)).await else {
            return Ok(()); // something else took the port in the meantime
        };
        assert!(
            matches!(&e, TransportError::Connect { server: s, .. } if *s == server),
            "{e:?}"
        );
        assert!(
            e.to_string().starts_with(&format!("cannot connect to {server}: ")),
            "{e}"
        );
        assert_eq!(io_cause(&e), Some(std::io::ErrorKind::ConnectionRefused), "{e:?}");
        Ok(())
    }

    #[tokio::test]
    async fn a_connection_closed_mid_answer_keeps_the_io_error() -> std::io::Result<()> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let server = listener.local_addr()?.to_string();
        let closing = tokio::spawn(async move {
            // Half a length prefix, then the connection closes.
            let (mut socket, _) = listener.accept().await?;
            socket.write_all(&[0]).await?;
            socket.shutdown().await
        });
        let mut conn = Connection::open(&server, None, Duration::from_secs(5))
            .await
            .map_err(std::io::Error::other)?;
        let Err(e) = conn.receive().await else {
            panic!("one byte is not an answer");
        };
        closing.await.map_err(std::io::Error::other)??;
        assert!(
            e.to_string().starts_with(&format!("connection to {server} failed: ")),
            "{e}"
        );
        assert_eq!(io_cause(&e), Some(std::io::ErrorKind::UnexpectedEof), "{e:?}");
        Ok(())
    }

    #[test]
    fn random_strategy_still_tries_every_host_once() {
        let p = picker(LoadBalancing::Random);
        for _ in 0..20 {
            let mut o = p.order();
            o.sort_unstable();
            assert_eq!(o, vec![0, 1, 2]);
        }
    }
}
