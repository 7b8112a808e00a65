//! Linux's UDP workers: a thread and an `SO_REUSEPORT` socket each, blocking in `recvmmsg`.
//!
//! A thread rather than a task because the tail of the answers was the runtime's: a worker task waited for
//! whatever else held the runtime's thread (a sync of the controller parsing manifests, a metrics scrape)
//! and for the runtime to poll its reactor, a few milliseconds now and then (issue 49); a thread blocked in
//! the kernel is woken by the scheduler as soon as a datagram lands, ahead of the controller's busy
//! threads, and preempts them. A socket per worker rather than one shared: the kernel hands each datagram to
//! one socket by the client's address, so no two workers are woken for one datagram nor take turns on one
//! receive queue.
//!
//! Stopping: a flag, then `shutdown(SHUT_RD)` on each socket, which Linux takes on an unconnected UDP
//! socket too (it answers `ENOTCONN` but wakes the receivers, whose receives then return at once), and a
//! receive timeout of [`WAKE_EVERY`] as a second way out, so a worker never outlives its server by more.

use std::io::{ErrorKind, IoSlice, IoSliceMut};
use std::net::{SocketAddr, SocketAddrV4, SocketAddrV6, UdpSocket as StdUdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use nix::sys::socket::{
    self as sys, AddressFamily, MsgFlags, MultiHeaders, Shutdown, SockFlag, SockProtocol, SockType, SockaddrStorage,
    recvmmsg, sendmmsg, setsockopt, shutdown, socket, sockopt,
};
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use super::{BATCH, Datagrams, ERROR_PAUSE, MAX_DATAGRAM};

/// The longest a worker blocks in a receive before it looks at its stop flag again, should the socket's
/// shutdown not wake it.
const WAKE_EVERY: Duration = Duration::from_secs(1);

/// `workers` UDP sockets on `address`, all with `SO_REUSEPORT`, the first binding the port when `address`
/// asks for 0. Only sockets of the same user with the option set can join them: an address another program
/// holds still fails here, and TCP's listener, bound without the option on the same port, fails a second
/// extdns.
pub(super) fn bind(address: SocketAddr, workers: usize) -> std::io::Result<Vec<StdUdpSocket>> {
    let first = reuse_port_socket(address)?;
    let address = SocketAddr::new(address.ip(), first.local_addr()?.port());
    let mut sockets = vec![first];
    for _ in 1..workers {
        sockets.push(reuse_port_socket(address)?);
    }
    Ok(sockets)
}

/// One UDP socket bound to `address` with `SO_REUSEPORT` (and close-on-exec, as the standard library's).
fn reuse_port_socket(address: SocketAddr) -> std::io::Result<StdUdpSocket> {
    let family = match address {
        SocketAddr::V4(_) => AddressFamily::Inet,
        SocketAddr::V6(_) => AddressFamily::Inet6,
    };
    let fd = socket(family, SockType::Datagram, SockFlag::SOCK_CLOEXEC, SockProtocol::Udp)?;
    setsockopt(&fd, sockopt::ReusePort, &true)?;
    sys::bind(fd.as_raw_fd(), &SockaddrStorage::from(address))?;
    Ok(StdUdpSocket::from(fd))
}

/// A worker thread per socket, each with an answerer of `answerer`'s making, until `shutdown`.
pub(super) async fn serve<A: Datagrams>(
    sockets: Vec<StdUdpSocket>,
    mut answerer: impl FnMut() -> A,
    shutdown: CancellationToken,
) {
    let mut workers = Workers::default();
    for socket in sockets {
        workers.start(socket, answerer());
    }
    shutdown.cancelled().await;
    // Joining blocks (a moment: every worker is woken); not on the runtime's own thread.
    if tokio::task::spawn_blocking(move || drop(workers)).await.is_err() {
        warn!("a DNS UDP worker panicked while stopping");
    }
}

/// The running workers; dropping it stops and joins them, so a server whose task is dropped with its
/// runtime leaves no thread nor socket behind.
#[derive(Default)]
struct Workers {
    stop: Arc<AtomicBool>,
    /// Each worker's socket, held strongly by its thread alone: a worker that panics closes its socket,
    /// and the kernel spreads that socket's clients over the sockets left, rather than keep sending them
    /// where nobody reads.
    running: Vec<(Weak<StdUdpSocket>, JoinHandle<()>)>,
}

impl Workers {
    /// A worker on `socket`; logged and skipped when the socket or the thread cannot be set up.
    fn start(&mut self, socket: StdUdpSocket, answerer: impl Datagrams) {
        if let Err(e) = socket
            .set_nonblocking(false)
            .and_then(|()| socket.set_read_timeout(Some(WAKE_EVERY)))
        {
            warn!(error = %e, "cannot serve a bound DNS UDP socket");
            return;
        }
        let socket = Arc::new(socket);
        if let Ok(address) = socket.local_addr()
            && self.running.is_empty()
        {
            tracing::info!(%address, "serving DNS over UDP");
        }
        let (ours, stop) = (Arc::downgrade(&socket), self.stop.clone());
        let spawned = std::thread::Builder::new()
            .name("dns-udp".to_string())
            .spawn(move || work(&socket, answerer, &stop));
        match spawned {
            Ok(thread) => self.running.push((ours, thread)),
            Err(e) => warn!(error = %e, "cannot start a DNS UDP worker"),
        }
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        for socket in self.running.iter().filter_map(|(s, _)| s.upgrade()) {
            // ENOTCONN on an unconnected socket, and the receivers woken all the same.
            let _ = shutdown(socket.as_raw_fd(), Shutdown::Read);
        }
        for (_, thread) in self.running.drain(..) {
            if thread.join().is_err() {
                warn!("a DNS UDP worker panicked");
            }
        }
    }
}

/// One worker's loop: receive a batch, answer it, send it, until `stop`.
fn work(socket: &StdUdpSocket, mut answerer: impl Datagrams, stop: &AtomicBool) {
    answerer.thread_started();
    let fd = socket.as_raw_fd();
    let mut batch = Batch::new();
    while !stop.load(Ordering::Acquire) {
        match batch.receive(fd) {
            Ok(_) => {}
            // The receive timeout, or a signal: look at the flag and wait again.
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) =>
            {
                continue;
            }
            Err(e) => {
                debug!(error = %e, "DNS UDP receive failed");
                std::thread::sleep(ERROR_PAUSE);
                continue;
            }
        }
        if stop.load(Ordering::Acquire) {
            return;
        }
        batch.answer(&mut answerer);
        batch.send(fd);
    }
}

/// One worker's buffers, allocated once: [`BATCH`] input slots, the answers and their addresses.
struct Batch {
    input: Vec<u8>,
    /// Length and sender of each datagram of the last receive.
    received: Vec<(usize, Option<SocketAddr>)>,
    /// One output buffer per slot, reused; `outgoing` says which hold an answer to send, and where.
    out: Vec<Vec<u8>>,
    outgoing: Vec<(usize, SockaddrStorage)>,
    /// nix's message headers, kept: the thread never hands them on (they hold raw pointers, not `Send`).
    receive_headers: MultiHeaders<SockaddrStorage>,
    send_headers: MultiHeaders<SockaddrStorage>,
}

impl Batch {
    fn new() -> Batch {
        Batch {
            // Zeroed memory from the allocator is mapped lazily: only the pages datagrams touch count.
            input: vec![0u8; MAX_DATAGRAM * BATCH],
            received: Vec::with_capacity(BATCH),
            out: (0..BATCH).map(|_| Vec::with_capacity(512)).collect(),
            outgoing: Vec::with_capacity(BATCH),
            receive_headers: MultiHeaders::preallocate(BATCH, None),
            send_headers: MultiHeaders::preallocate(BATCH, None),
        }
    }

    /// Waits for a datagram on the socket `fd`, then takes it and whatever else is queued, up to [`BATCH`]
    /// (`MSG_WAITFORONE`: a batch never waits to fill); how many.
    fn receive(&mut self, fd: RawFd) -> std::io::Result<usize> {
        self.received.clear();
        let mut chunks = self.input.chunks_mut(MAX_DATAGRAM);
        let mut slices: [[IoSliceMut<'_>; 1]; BATCH] =
            std::array::from_fn(|_| [IoSliceMut::new(chunks.next().unwrap_or_default())]);
        let results = recvmmsg(
            fd,
            &mut self.receive_headers,
            slices.iter_mut(),
            MsgFlags::MSG_WAITFORONE,
            None,
        )?;
        self.received
            .extend(results.map(|m| (m.bytes, m.address.and_then(|a| socket_addr(&a)))));
        Ok(self.received.len())
    }

    /// Answers every datagram of the last receive, queueing the answers to send.
    fn answer(&mut self, answerer: &mut impl Datagrams) {
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

    /// Sends the queued answers on the socket `fd`, blocking while its buffer is full; an answer the
    /// system refuses (an unreachable address) is skipped, the others still go.
    fn send(&mut self, fd: RawFd) {
        let mut sent = 0;
        while sent < self.outgoing.len() {
            match self.send_from(fd, sent) {
                Ok(n) => sent += n.max(1),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    debug!(error = %e, "DNS UDP send failed");
                    sent += 1;
                }
            }
        }
    }

    /// One `sendmmsg` of the queued answers from the `sent`-th on; how many were handed over.
    fn send_from(&mut self, fd: RawFd, sent: usize) -> std::io::Result<usize> {
        let pending = self.outgoing.get(sent..).unwrap_or_default();
        let mut slices = [[IoSlice::new(&[])]; BATCH];
        let mut addresses = [None; BATCH];
        for ((slice, address), &(slot, to)) in slices.iter_mut().zip(&mut addresses).zip(pending) {
            *slice = [IoSlice::new(self.out.get(slot).map_or(&[][..], Vec::as_slice))];
            *address = Some(to);
        }
        // nix sends as many messages as the shortest of the slices, the addresses and the headers.
        let count = pending.len().min(BATCH);
        let results = sendmmsg(
            fd,
            &mut self.send_headers,
            slices.get(..count).unwrap_or_default(),
            addresses.get(..count).unwrap_or_default(),
            [],
            MsgFlags::empty(),
        )?;
        Ok(results.count())
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

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// Echoes each datagram back with the number of its worker, and counts what the worker answered.
    struct Echo {
        worker: u8,
        answered: Arc<AtomicUsize>,
    }

    impl Datagrams for Echo {
        fn answer(&mut self, wire: &[u8], _peer: SocketAddr, out: &mut Vec<u8>) -> bool {
            out.clear();
            out.push(self.worker);
            out.extend_from_slice(wire);
            self.answered.fetch_add(1, Ordering::Relaxed);
            true
        }
    }

    /// `n` workers on a free port of loopback, each with its counter.
    fn workers(n: usize) -> (Workers, SocketAddr, Vec<Arc<AtomicUsize>>) {
        let sockets = bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)), n).expect("binds");
        let address = sockets[0].local_addr().expect("bound");
        let mut workers = Workers::default();
        let mut counts = Vec::new();
        for (i, socket) in sockets.into_iter().enumerate() {
            let answered = Arc::new(AtomicUsize::new(0));
            counts.push(answered.clone());
            workers.start(
                socket,
                Echo {
                    worker: i as u8,
                    answered,
                },
            );
        }
        (workers, address, counts)
    }

    #[test]
    fn every_worker_of_the_port_answers_its_share_of_clients() {
        let (workers, address, counts) = workers(4);
        assert_eq!(workers.running.len(), 4, "a thread per socket");
        // The kernel picks a socket by the client's address and port: 64 clients reach all four (each
        // misses one with odds of (3/4)^64).
        for client in 0..64u8 {
            let socket = StdUdpSocket::bind("127.0.0.1:0").expect("binds");
            socket.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
            socket.send_to(&[client, 7], address).expect("sends");
            let mut buf = [0u8; 16];
            let (len, from) = socket.recv_from(&mut buf).expect("answered");
            assert_eq!(from, address, "answered from the port asked");
            assert_eq!(
                buf.get(1..len),
                Some(&[client, 7][..]),
                "the echo of this client's datagram"
            );
            assert!(usize::from(buf[0]) < 4, "answered by one of the workers");
        }
        let answered: Vec<usize> = counts.iter().map(|c| c.load(Ordering::Relaxed)).collect();
        assert_eq!(
            answered.iter().sum::<usize>(),
            64,
            "each datagram answered once: {answered:?}"
        );
        assert!(
            answered.iter().all(|&n| n > 0),
            "every worker answered some: {answered:?}"
        );
    }

    #[test]
    fn a_batch_of_queued_datagrams_is_answered_whole() {
        let (_workers, address, counts) = workers(1);
        let socket = StdUdpSocket::bind("127.0.0.1:0").expect("binds");
        socket.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        // More than a batch at once: the worker takes them BATCH at a time and answers all.
        let sent = 3 * BATCH + 1;
        for i in 0..sent {
            socket.send_to(&[i as u8], address).expect("sends");
        }
        let mut got: Vec<u8> = (0..sent)
            .map(|_| {
                let mut buf = [0u8; 4];
                let len = socket.recv(&mut buf).expect("answered");
                assert_eq!(len, 2);
                buf[1]
            })
            .collect();
        got.sort_unstable();
        assert_eq!(got, (0..sent as u8).collect::<Vec<_>>());
        assert_eq!(counts[0].load(Ordering::Relaxed), sent);
    }

    #[test]
    fn stopped_workers_leave_the_port_free() {
        let (workers, address, _) = workers(3);
        assert!(
            StdUdpSocket::bind(address).is_err(),
            "a socket without SO_REUSEPORT cannot join the workers'"
        );
        // Dropping joins the threads, blocked in their receives until the sockets are shut down.
        drop(workers);
        StdUdpSocket::bind(address).expect("every worker's socket is closed");
    }
}
