//! The webhook server's connection timeouts, as Go's `http.Server` applies external-dns's four flags
//! (external-dns v0.23, #6484), so a client stalling on extdns's server sees what it sees on external-dns's:
//!
//! - a connection's first request head, and every later one from its first bytes on, must arrive within
//!   the header timeout; past it the connection is closed without an answer;
//! - the body must be read within the read timeout, counted from the same start; past it the handler
//!   answers 400 and the connection is closed (Go's decoder fails, external-dns answers 400,
//!   `Connection: close`);
//! - the response must be written within the write timeout counted from the end of the head, so it also
//!   bounds the handler: a response ready later is not written and the connection is closed;
//! - a kept-alive connection waiting for its next request is closed after the idle timeout.
//!
//! A zero timeout is none; a zero header or idle timeout falls back to the read timeout, as in Go.
//!
//! Go sets deadlines on the connection; hyper has no such hooks (its `header_read_timeout` also runs
//! while a kept-alive connection idles, which Go's does not), so each accepted connection carries a
//! [`Conn`]: the IO wrapper [`DeadlineIo`] fails reads and writes past the deadlines it holds, and the
//! router's [`track`] layer moves it through Go's cycle (head read → request → response written → idle).
//! The body's deadline is handed to the handlers ([`BodyDeadline`]), which read the body whole.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::extract::connect_info::{ConnectInfo, Connected};
use axum::middleware::Next;
use axum::response::Response;
use axum::serve::{IncomingStream, Listener};
use http_body_util::BodyExt;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{Instant, Sleep, sleep_until};

/// The four timeouts of `--webhook-server`, with the meanings Go's `http.Server` gives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerTimeouts {
    /// `--webhook-provider-read-header-timeout` (Go's `ReadHeaderTimeout`): from a connection's start, or
    /// from the first bytes of a later request on it, until the request's head is read.
    pub read_header: Duration,
    /// `--webhook-provider-read-timeout` (`ReadTimeout`): from the same start until the body is read.
    pub read: Duration,
    /// `--webhook-provider-write-timeout` (`WriteTimeout`): from the end of the head until the response
    /// is written, the handler's time included.
    pub write: Duration,
    /// `--webhook-provider-idle-timeout` (`IdleTimeout`): how long a kept-alive connection waits for
    /// the first bytes of its next request.
    pub idle: Duration,
}

impl Default for ServerTimeouts {
    /// external-dns's defaults: 5s, 5s, 10s, 30s.
    fn default() -> Self {
        ServerTimeouts {
            read_header: Duration::from_secs(5),
            read: Duration::from_secs(5),
            write: Duration::from_secs(10),
            idle: Duration::from_secs(30),
        }
    }
}

impl ServerTimeouts {
    fn header(&self) -> Option<Duration> {
        some(if self.read_header.is_zero() {
            self.read
        } else {
            self.read_header
        })
    }

    fn idle(&self) -> Option<Duration> {
        some(if self.idle.is_zero() { self.read } else { self.idle })
    }
}

/// Zero is no timeout.
fn some(timeout: Duration) -> Option<Duration> {
    (!timeout.is_zero()).then_some(timeout)
}

/// The deadline of the request body being read, from the connection's [`Conn`] (`None`: no deadline).
#[derive(Debug, Clone, Copy)]
pub(crate) struct BodyDeadline(pub(crate) Option<Instant>);

/// One connection's place in Go's request cycle and the deadlines that follow from it, shared by its IO
/// (which enforces them) and the router's [`track`] layer (which moves it on).
#[derive(Debug, Clone)]
pub(crate) struct Conn {
    timeouts: ServerTimeouts,
    state: Arc<Mutex<State>>,
}

#[derive(Debug)]
struct State {
    /// Waiting for the first bytes of the next request (after a response).
    idle: bool,
    /// When the current request's reading started: the connection's start, or its first bytes.
    request_start: Instant,
    read_deadline: Option<Instant>,
    write_deadline: Option<Instant>,
    /// The task reading the connection, woken when the read deadline changes (the idle deadline starts
    /// while hyper waits for the next request).
    reader: Option<Waker>,
}

impl Conn {
    fn new(timeouts: ServerTimeouts) -> Self {
        let now = Instant::now();
        Conn {
            timeouts,
            state: Arc::new(Mutex::new(State {
                idle: false,
                request_start: now,
                read_deadline: timeouts.header().map(|d| now + d),
                write_deadline: None,
                reader: None,
            })),
        }
    }

    /// The state, whatever a panicking holder left (each field is valid on its own).
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Bytes arrived: on an idle connection they start a request, whose head has the header timeout.
    fn bytes_read(&self) {
        let mut state = self.state();
        if state.idle {
            let now = Instant::now();
            state.idle = false;
            state.request_start = now;
            state.read_deadline = self.timeouts.header().map(|d| now + d);
        }
    }

    /// The head is read: the IO has no read deadline while the request is handled (the body's is handed
    /// to the handler, a read past it must answer 400, not close), and the response's write deadline
    /// starts. Returns the body's deadline.
    fn request_started(&self) -> BodyDeadline {
        let mut state = self.state();
        state.idle = false;
        state.read_deadline = None;
        state.write_deadline = some(self.timeouts.write).map(|d| Instant::now() + d);
        BodyDeadline(some(self.timeouts.read).map(|d| state.request_start + d))
    }

    /// The response is written: the connection idles until the next request's first bytes.
    fn response_done(&self) {
        let mut state = self.state();
        state.idle = true;
        state.read_deadline = self.timeouts.idle().map(|d| Instant::now() + d);
        if let Some(reader) = state.reader.take() {
            reader.wake();
        }
    }

    fn read_deadline(&self, reader: &Waker) -> Option<Instant> {
        let mut state = self.state();
        state.reader = Some(reader.clone());
        state.read_deadline
    }

    fn write_deadline(&self) -> Option<Instant> {
        self.state().write_deadline
    }
}

impl Connected<IncomingStream<'_, DeadlineListener>> for Conn {
    fn connect_info(stream: IncomingStream<'_, DeadlineListener>) -> Self {
        stream.io().conn.clone()
    }
}

/// Moves the connection through Go's cycle around each request: started when the router is called (hyper
/// calls it once the head is read), done when the response body has been sent (dropped by hyper). The
/// handlers find the body's deadline in the request's extensions. A router served without
/// [`DeadlineListener`] (no [`Conn`]) is left as it is.
pub(crate) async fn track(mut request: Request, next: Next) -> Response {
    let Some(ConnectInfo(conn)) = request.extensions().get::<ConnectInfo<Conn>>().cloned() else {
        return next.run(request).await;
    };
    let deadline = conn.request_started();
    request.extensions_mut().insert(deadline);
    let response = next.run(request).await;
    let done = ResponseDone(conn);
    // The guard goes with the body; `map_err` is the adapter that keeps the body's length (so the
    // response keeps its Content-Length) and changes nothing else.
    response.map(|body| {
        Body::new(body.map_err(move |e| {
            let _until_dropped = &done;
            e
        }))
    })
}

/// Marks the response done when dropped with its body.
struct ResponseDone(Conn);

impl Drop for ResponseDone {
    fn drop(&mut self) {
        self.0.response_done();
    }
}

/// A TCP listener whose connections carry the timeouts.
pub(crate) struct DeadlineListener {
    pub(crate) listener: TcpListener,
    pub(crate) timeouts: ServerTimeouts,
}

impl Listener for DeadlineListener {
    type Io = DeadlineIo;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (DeadlineIo, SocketAddr) {
        // axum's own accept loop, which logs and waits out errors such as too many open files.
        let (io, addr) = Listener::accept(&mut self.listener).await;
        let io = DeadlineIo {
            io,
            conn: Conn::new(self.timeouts),
            read_timer: Timer::default(),
            write_timer: Timer::default(),
        };
        (io, addr)
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }
}

/// A connection whose reads and writes fail past its [`Conn`]'s deadlines, as a Go `net.Conn`'s do.
pub(crate) struct DeadlineIo {
    io: TcpStream,
    conn: Conn,
    read_timer: Timer,
    write_timer: Timer,
}

fn timed_out(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, format!("the {what} deadline passed"))
}

impl AsyncRead for DeadlineIo {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let deadline = this.conn.read_deadline(cx.waker());
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Poll::Ready(Err(timed_out("read")));
        }
        let before = buf.filled().len();
        match Pin::new(&mut this.io).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    this.conn.bytes_read();
                }
                Poll::Ready(Ok(()))
            }
            Poll::Pending if this.read_timer.expired(deadline, cx) => Poll::Ready(Err(timed_out("read"))),
            other => other,
        }
    }
}

impl DeadlineIo {
    fn poll_deadline_write<T>(
        &mut self,
        cx: &mut Context<'_>,
        write: impl FnOnce(Pin<&mut TcpStream>, &mut Context<'_>) -> Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        let deadline = self.conn.write_deadline();
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Poll::Ready(Err(timed_out("write")));
        }
        match write(Pin::new(&mut self.io), cx) {
            Poll::Pending if self.write_timer.expired(deadline, cx) => Poll::Ready(Err(timed_out("write"))),
            other => other,
        }
    }
}

impl AsyncWrite for DeadlineIo {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.poll_deadline_write(cx, |io, cx| io.poll_write(cx, buf))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.poll_deadline_write(cx, |io, cx| io.poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    /// A TCP flush sends nothing (hyper flushes an empty buffer while idle too), so only writes have a
    /// deadline.
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// A sleep until a deadline, re-armed only when the deadline changes.
#[derive(Default)]
struct Timer {
    sleep: Option<(Instant, Pin<Box<Sleep>>)>,
}

impl Timer {
    /// Whether `deadline` has passed; if not, the task is woken when it does.
    fn expired(&mut self, deadline: Option<Instant>, cx: &mut Context<'_>) -> bool {
        let Some(deadline) = deadline else {
            return false;
        };
        match &mut self.sleep {
            Some((armed, _)) if *armed == deadline => {}
            Some((armed, sleep)) => {
                sleep.as_mut().reset(deadline);
                *armed = deadline;
            }
            None => self.sleep = Some((deadline, Box::pin(sleep_until(deadline)))),
        }
        self.sleep
            .as_mut()
            .is_some_and(|(_, sleep)| sleep.as_mut().poll(cx).is_ready())
    }
}
