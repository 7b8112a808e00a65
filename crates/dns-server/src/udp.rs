//! The UDP receive loop: datagrams read, answered and sent by a worker that owns its buffers.
//!
//! On Linux a worker takes up to [`BATCH`] datagrams with one `recvmmsg` and sends their answers with one
//! `sendmmsg` (nix's safe wrappers): the per-packet `recvfrom` and `sendto` were most of the server's CPU
//! under load (issue 49) and the queueing behind them its tail latency. Elsewhere a datagram at a time.
//! Either way no task per packet and no allocation per packet once the buffers have grown: a flood costs
//! CPU, never memory. What a datagram is answered with is the [`Datagrams`] implementation's business.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::UdpSocket;
use tokio_util::sync::CancellationToken;
use tracing::debug;

/// What a UDP worker answers with.
pub(crate) trait Datagrams: Send + 'static {
    /// The answer to `wire` from `peer` in `out` (cleared or overwritten by the implementation); `false`:
    /// send nothing.
    fn answer(&mut self, wire: &[u8], peer: SocketAddr, out: &mut Vec<u8>) -> bool;
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

/// Answers datagrams from `socket` (several workers may share it) until `shutdown`.
pub(crate) async fn serve(socket: Arc<UdpSocket>, answerer: impl Datagrams, shutdown: CancellationToken) {
    #[cfg(target_os = "linux")]
    batched::serve(socket, answerer, shutdown).await;
    #[cfg(not(target_os = "linux"))]
    one_at_a_time(socket, answerer, shutdown).await;
}

/// The portable loop: one `recv_from` and one `send_to` per datagram.
#[cfg_attr(target_os = "linux", allow(dead_code))]
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

#[cfg(target_os = "linux")]
mod batched {
    use std::io::{ErrorKind, IoSlice, IoSliceMut};
    use std::net::{SocketAddr, SocketAddrV4, SocketAddrV6};
    use std::os::fd::{AsRawFd, RawFd};
    use std::sync::Arc;

    use nix::sys::socket::{MsgFlags, MultiHeaders, SockaddrStorage, recvmmsg, sendmmsg};
    use tokio::io::Interest;
    use tokio::net::UdpSocket;
    use tokio_util::sync::CancellationToken;
    use tracing::debug;

    use super::{BATCH, Datagrams, ERROR_PAUSE, MAX_DATAGRAM};

    /// One worker's buffers, allocated once: [`BATCH`] input slots, the answers and their addresses. (nix's
    /// message headers hold raw pointers, so they cannot wait across an `.await` in a task that may move
    /// between threads: they are made per system call, two small allocations per batch.)
    pub(super) struct Batch {
        input: Vec<u8>,
        /// Length and sender of each datagram of the last receive.
        received: Vec<(usize, Option<SocketAddr>)>,
        /// One output buffer per slot, reused; `outgoing` says which hold an answer to send, and where.
        out: Vec<Vec<u8>>,
        outgoing: Vec<(usize, SockaddrStorage)>,
    }

    impl Batch {
        pub(super) fn new() -> Batch {
            Batch {
                // Zeroed memory from the allocator is mapped lazily: only the pages datagrams touch count.
                input: vec![0u8; MAX_DATAGRAM * BATCH],
                received: Vec::with_capacity(BATCH),
                out: (0..BATCH).map(|_| Vec::with_capacity(512)).collect(),
                outgoing: Vec::with_capacity(BATCH),
            }
        }

        /// Reads what is queued on the socket `fd`, up to [`BATCH`] datagrams, without blocking.
        pub(super) fn receive(&mut self, fd: RawFd) -> std::io::Result<usize> {
            self.received.clear();
            let mut slices: Vec<[IoSliceMut<'_>; 1]> = self
                .input
                .chunks_mut(MAX_DATAGRAM)
                .map(|c| [IoSliceMut::new(c)])
                .collect();
            let mut headers = MultiHeaders::<SockaddrStorage>::preallocate(BATCH, None);
            let results = recvmmsg(fd, &mut headers, slices.iter_mut(), MsgFlags::MSG_DONTWAIT, None)?;
            self.received
                .extend(results.map(|m| (m.bytes, m.address.and_then(|a| socket_addr(&a)))));
            Ok(self.received.len())
        }

        /// Answers every datagram of the last receive, queueing the answers to send.
        pub(super) fn answer(&mut self, answerer: &mut impl Datagrams) {
            self.outgoing.clear();
            for (slot, &(len, peer)) in self.received.iter().enumerate() {
                let (Some(peer), Some(wire), Some(out)) = (
                    peer,
                    self.input
                        .get(slot * MAX_DATAGRAM..slot * MAX_DATAGRAM + len.min(MAX_DATAGRAM)),
                    self.out.get_mut(slot),
                ) else {
                    continue;
                };
                if answerer.answer(wire, peer, out) {
                    self.outgoing.push((slot, SockaddrStorage::from(peer)));
                }
            }
        }

        /// Sends the queued answers from the `sent`-th on, as many as the socket `fd` takes now; how many
        /// were handed over. An answer the system refuses outright (an unreachable address) is skipped.
        pub(super) fn send(&mut self, fd: RawFd, sent: usize) -> std::io::Result<usize> {
            let pending = self.outgoing.get(sent..).unwrap_or_default();
            if pending.is_empty() {
                return Ok(0);
            }
            let slices: Vec<[IoSlice<'_>; 1]> = pending
                .iter()
                .map(|&(slot, _)| [IoSlice::new(self.out.get(slot).map_or(&[][..], Vec::as_slice))])
                .collect();
            let addresses: Vec<Option<SockaddrStorage>> = pending.iter().map(|&(_, a)| Some(a)).collect();
            let mut headers = MultiHeaders::<SockaddrStorage>::preallocate(pending.len(), None);
            let results = sendmmsg(fd, &mut headers, slices.iter(), addresses, [], MsgFlags::MSG_DONTWAIT);
            match results {
                Ok(results) => Ok(results.count()),
                Err(e) => {
                    let e = std::io::Error::from(e);
                    if e.kind() == ErrorKind::WouldBlock {
                        return Err(e);
                    }
                    // The first answer failed alone: the others may still go.
                    debug!(error = %e, "DNS UDP send failed");
                    Ok(1)
                }
            }
        }

        /// Answers queued by the last [`Batch::answer`].
        pub(super) fn queued(&self) -> usize {
            self.outgoing.len()
        }
    }

    /// A received address as the standard library spells it; `None` for a family UDP does not carry.
    fn socket_addr(address: &SockaddrStorage) -> Option<SocketAddr> {
        if let Some(v4) = address.as_sockaddr_in() {
            return Some(SocketAddr::V4(SocketAddrV4::from(*v4)));
        }
        address
            .as_sockaddr_in6()
            .map(|v6| SocketAddr::V6(SocketAddrV6::from(*v6)))
    }

    pub(super) async fn serve(socket: Arc<UdpSocket>, mut answerer: impl Datagrams, shutdown: CancellationToken) {
        let mut batch = Batch::new();
        let fd = socket.as_raw_fd();
        let cancelled = shutdown.cancelled();
        tokio::pin!(cancelled);
        loop {
            let ready = tokio::select! {
                biased;
                () = &mut cancelled => return,
                r = socket.readable() => r,
            };
            let received = ready.and_then(|()| socket.try_io(Interest::READABLE, || batch.receive(fd)));
            match received {
                Ok(_) => {}
                // Another worker of the socket took what woke this one.
                Err(e) if e.kind() == ErrorKind::WouldBlock => continue,
                Err(e) => {
                    debug!(error = %e, "DNS UDP receive failed");
                    tokio::time::sleep(ERROR_PAUSE).await;
                    continue;
                }
            }
            batch.answer(&mut answerer);
            let mut sent = 0;
            while sent < batch.queued() {
                match socket.try_io(Interest::WRITABLE, || batch.send(fd, sent)) {
                    Ok(n) => sent += n.max(1),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {
                        if let Err(e) = socket.writable().await {
                            debug!(error = %e, "DNS UDP send failed");
                            break;
                        }
                    }
                    Err(e) => {
                        debug!(error = %e, "DNS UDP send failed");
                        break;
                    }
                }
            }
        }
    }
}
