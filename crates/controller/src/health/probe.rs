//! One probe of one target: a TCP connection, or an HTTP(S) GET sent to the target's address with the
//! record's name as host (and SNI), under a short timeout. Only the controller dials out: sources never do.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use tokio::net::TcpStream;

use super::check::Probe;

/// Why a probe failed, for the log line of a transition.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeFailure {
    /// The connection was refused or broke.
    #[error("connecting to {addr} failed")]
    Connect {
        /// Where it connected.
        addr: SocketAddr,
        /// The socket's error.
        #[source]
        cause: std::io::Error,
    },
    /// Nothing answered in time.
    #[error("no answer from {addr} within {timeout:?}")]
    Timeout {
        /// Where it connected.
        addr: SocketAddr,
        /// The probe's time limit.
        timeout: Duration,
    },
    /// The GET failed below HTTP (connection, TLS, a broken answer).
    #[error("GET {url} failed")]
    Request {
        /// What was asked.
        url: String,
        /// reqwest's error.
        #[source]
        cause: reqwest::Error,
    },
    /// The GET answered with a status outside 2xx.
    #[error("GET {url} answered {status}")]
    Status {
        /// What was asked.
        url: String,
        /// The status.
        status: u16,
    },
    /// The HTTP client could not be built (its TLS roots): the target is never probed.
    #[error("the HTTP client for the health check could not be built")]
    Client(#[source] reqwest::Error),
}

/// Probes one target of one record, again and again.
pub struct Prober {
    addr: SocketAddr,
    timeout: Duration,
    http: Option<(reqwest::Client, String)>,
}

impl Prober {
    /// A prober of `target` for the record `name` (the HTTP host; a wildcard name sends the address as
    /// host instead), each probe limited to `timeout`.
    pub fn new(name: &str, target: IpAddr, probe: &Probe, timeout: Duration) -> Result<Prober, ProbeFailure> {
        let (port, http) = match probe {
            Probe::Tcp { port } => (*port, None),
            Probe::Http { tls, port, path } => (*port, Some((*tls, path.as_str()))),
        };
        let addr = SocketAddr::new(target, port);
        let http = match http {
            None => None,
            Some((tls, path)) => {
                let scheme = if tls { "https" } else { "http" };
                let mut client = reqwest::Client::builder()
                    .redirect(reqwest::redirect::Policy::none())
                    .timeout(timeout)
                    // The target is probed, never a proxy on the way to it.
                    .no_proxy();
                let host = name.trim_end_matches('.');
                let url = if host.is_empty() || host.starts_with("*.") {
                    format!("{scheme}://{addr}{path}")
                } else {
                    // The record's name as host and SNI, sent to this target only.
                    client = client.resolve(host, addr);
                    format!("{scheme}://{host}:{port}{path}")
                };
                Some((client.build().map_err(ProbeFailure::Client)?, url))
            }
        };
        Ok(Prober { addr, timeout, http })
    }

    /// One probe: `Ok` when the target is healthy.
    pub async fn probe(&self) -> Result<(), ProbeFailure> {
        let timeout = || ProbeFailure::Timeout {
            addr: self.addr,
            timeout: self.timeout,
        };
        match &self.http {
            None => tokio::time::timeout(self.timeout, TcpStream::connect(self.addr))
                .await
                .map_err(|_| timeout())?
                .map(drop)
                .map_err(|cause| ProbeFailure::Connect { addr: self.addr, cause }),
            Some((client, url)) => {
                let answer = client.get(url).send().await.map_err(|cause| {
                    if cause.is_timeout() {
                        timeout()
                    } else {
                        ProbeFailure::Request {
                            url: url.clone(),
                            cause,
                        }
                    }
                })?;
                let status = answer.status();
                if status.is_success() {
                    Ok(())
                } else {
                    Err(ProbeFailure::Status {
                        url: url.clone(),
                        status: status.as_u16(),
                    })
                }
            }
        }
    }
}
