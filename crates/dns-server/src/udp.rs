//! The UDP receive loop: datagrams read, answered and sent by a worker that owns its socket and buffers.
//!
//! On Linux each worker is a thread of its own with a socket of its own (`SO_REUSEPORT`, the kernel spreads
//! clients over them), blocked in `recvmmsg` until a datagram comes, taking up to [`BATCH`] queued ones,
//! answering them and sending the answers with one `sendmmsg` before it reads again (nix's safe wrappers).
//! No async runtime on the way: a query never waits for a task of the controller to yield the runtime's
//! thread, and the scheduler wakes the worker the moment a datagram lands (issue 49: the tail). Elsewhere
//! a task per worker on the runtime, sharing one socket, a datagram at a time. Either way no allocation per
//! packet once the buffers have grown: a flood costs CPU, never memory. What a datagram is answered with is
//! the [`Datagrams`] implementation's business.

use std::net::{SocketAddr, UdpSocket as StdUdpSocket};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// What a UDP worker answers with.
pub(crate) trait Datagrams: Send + 'static {
    /// The answer to `wire` from `peer` in `out` (cleared or overwritten by the implementation); `false`:
    /// send nothing.
    fn answer(&mut self, wire: &[u8], peer: SocketAddr, out: &mut Vec<u8>) -> bool;

    /// Run once on a worker's own thread before its first datagram (Linux workers only).
    fn thread_started(&mut self) {}
}

/// The largest datagram UDP carries; a bigger one is cut by the kernel and then fails to parse.
const MAX_DATAGRAM: usize = 65_535;

/// Datagrams read and answered per system call: 10, as Knot's `RECVMMSG_BATCHLEN`. A batch's answers
/// leave together, so the first waits for the last to be built: a larger batch saves a few more calls but
/// lengthens the tail it is here to shorten.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) const BATCH: usize = 10;

/// How long a worker waits after a socket error, so a socket failing again and again does not spin it;
/// nothing a client sends makes a receive fail repeatedly.
const ERROR_PAUSE: Duration = Duration::from_millis(10);

/// The workers per address when the configuration leaves it to the server: one per CPU the process may
/// run on (its affinity or cgroup quota, as the standard library reads them), at most 8.
pub(crate) fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, 8)
}

/// The sockets of `workers` workers on `address` (the first decides the port when `address` asks for 0).
/// On Linux one socket per worker, all with `SO_REUSEPORT`; elsewhere one socket the workers share.
pub(crate) fn bind(address: SocketAddr, workers: usize) -> std::io::Result<Vec<StdUdpSocket>> {
    #[cfg(target_os = "linux")]
    return threads::bind(address, workers.clamp(1, crate::config::MAX_UDP_WORKERS));
    #[cfg(not(target_os = "linux"))]
    {
        let _ = workers;
        StdUdpSocket::bind(address).map(|s| vec![s])
    }
}

/// Answers datagrams on `sockets` (one address's, from [`bind`]) with `workers` workers, each with an
/// answerer of `answerer`'s making, until `shutdown`; every worker has stopped when this returns.
pub(crate) async fn serve<A: Datagrams>(
    sockets: Vec<StdUdpSocket>,
    workers: usize,
    answerer: impl FnMut() -> A,
    shutdown: CancellationToken,
) {
    #[cfg(target_os = "linux")]
    {
        let _ = workers;
        threads::serve(sockets, answerer, shutdown).await;
    }
    #[cfg(not(target_os = "linux"))]
    portable::serve(sockets, workers, answerer, shutdown).await;
}

/// The portable loop: tasks on the runtime sharing one socket, one `recv_from` and one `send_to` per
/// datagram.
#[cfg_attr(target_os = "linux", allow(dead_code))]
mod portable {
    use std::net::UdpSocket as StdUdpSocket;
    use std::sync::Arc;

    use tokio::net::UdpSocket;
    use tokio::task::JoinSet;
    use tokio_util::sync::CancellationToken;
    use tracing::{debug, warn};

    use super::{Datagrams, ERROR_PAUSE, MAX_DATAGRAM};

    pub(super) async fn serve<A: Datagrams>(
        sockets: Vec<StdUdpSocket>,
        workers: usize,
        mut answerer: impl FnMut() -> A,
        shutdown: CancellationToken,
    ) {
        let mut tasks = JoinSet::new();
        for socket in sockets {
            let socket = match socket.set_nonblocking(true).and_then(|()| UdpSocket::from_std(socket)) {
                Ok(s) => Arc::new(s),
                Err(e) => {
                    warn!(error = %e, "cannot serve a bound DNS UDP socket");
                    continue;
                }
            };
            for _ in 0..workers.max(1) {
                tasks.spawn(one_at_a_time(socket.clone(), answerer(), shutdown.clone()));
            }
        }
        while tasks.join_next().await.is_some() {}
    }

    async fn one_at_a_time(socket: Arc<UdpSocket>, mut answerer: impl Datagrams, shutdown: CancellationToken) {
        let mut input = vec![0u8; MAX_DATAGRAM];
        let mut out = Vec::with_capacity(4096);
        let cancelled = shutdown.cancelled();
        tokio::pin!(cancelled);
        loop {
            let received = tokio::select! {
                biased;
                () = &mut cancelled => return,
                r = socket.recv_from(&mut input) => r,
            };
            let (len, peer) = match received {
                Ok(r) => r,
                Err(e) => {
                    debug!(error = %e, "DNS UDP receive failed");
                    tokio::time::sleep(ERROR_PAUSE).await;
                    continue;
                }
            };
            let Some(wire) = input.get(..len) else { continue };
            if answerer.answer(wire, peer, &mut out)
                && let Err(e) = socket.send_to(&out, peer).await
            {
                debug!(%peer, error = %e, "DNS UDP send failed");
            }
        }
    }
}

#[cfg(target_os = "linux")]
mod threads;
