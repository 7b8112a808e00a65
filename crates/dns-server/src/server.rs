//! The listeners: UDP and TCP on every configured address, answering from the shared [`Zones`].
//!
//! UDP is answered in the receive loop itself ([`crate::udp`]: on Linux a thread and a socket per worker,
//! one per core by default, each reading and sending a batch of datagrams per system call): no task per
//! packet, buffers per worker, reused, so a flood costs CPU but never memory. TCP
//! follows RFC 7766: length-prefixed messages, several per connection answered in order, a connection
//! closed after [`Limits::tcp_idle`](crate::Limits) without a full message, and at most
//! [`Limits::tcp_connections`](crate::Limits) open (more are closed as soon as accepted, and counted).
//! Transfers and signed requests go to [`Transfers`]; everything else to [`answer::respond`], between the
//! cookie check and the rate limiter of [`Guard`]. DNS over TLS ([`crate::tls`]) is TCP's loop inside a
//! TLS session, under the same connection cap.

use std::net::{IpAddr, SocketAddr, UdpSocket as StdUdpSocket};
use std::sync::Arc;
use std::time::Duration;

use hickory_proto::op::{Message, ResponseCode};
use prometheus_client::metrics::counter::Counter;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::answer::{self, Fit, RawHeader};
use crate::config::ServerConfig;
use crate::cookie::{Cookie, CookieSecret, CookieSecretError};
use crate::guard::{Asker, Guard, GuardCounters};
use crate::metrics::{AnswerLabels, DropLabels, ServerMetrics, Transport, TransportLabels};
use crate::plain::PlainQuery;
use crate::rrl::Verdict;
use crate::tls::{CertStore, TlsError};
use crate::transfer::{self, Transfers};
use crate::udp::{self, Datagrams};
use crate::zones::Zones;

/// Why the server cannot listen. The text names the address.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// A listen address cannot be bound (in use, not local, or a privileged port).
    #[error("cannot listen for DNS on {transport} {address}: {source}")]
    Bind {
        /// `UDP`, `TCP` or `TLS` (DNS over TLS).
        transport: &'static str,
        /// The address as configured (`--dns-server-listen`, `--dns-server-tls-listen`).
        address: SocketAddr,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// No cookie secret could be drawn.
    #[error("cannot answer DNS cookies: {0}")]
    Cookie(#[source] CookieSecretError),
    /// The DNS-over-TLS certificate or key cannot be served.
    #[error("cannot serve DNS over TLS: {0}")]
    Tls(#[source] TlsError),
}

/// The built-in DNS server: bound, not yet serving.
#[derive(Debug)]
pub struct DnsServer {
    /// Each address's UDP sockets, one per worker on Linux ([`udp::bind`]).
    udp: Vec<Vec<StdUdpSocket>>,
    tcp: Vec<std::net::TcpListener>,
    handler: Arc<Handler>,
    config: Arc<ServerConfig>,
    /// DoT listeners and the certificate they serve, when `config.tls` asks for them.
    tls: Vec<std::net::TcpListener>,
    certs: Option<Arc<CertStore>>,
}

impl DnsServer {
    /// Binds UDP and TCP on every address of `config.listen` (without a runtime: the sockets join one in
    /// [`DnsServer::run`]). With port 0, UDP is bound first and TCP on the port the system gave it.
    pub fn bind(
        config: Arc<ServerConfig>,
        zones: Arc<Zones>,
        metrics: ServerMetrics,
    ) -> Result<DnsServer, ServerError> {
        let mut udp = Vec::new();
        let mut tcp = Vec::new();
        let workers = udp_workers(&config);
        for &address in &config.listen {
            let (u, t) = bind_pair(address, workers)?;
            udp.push(u);
            tcp.push(t);
        }
        let (tls, certs) = bind_tls(&config)?;
        let transfers = Arc::new(Transfers::new(zones.clone(), config.clone(), metrics.clone()));
        Ok(DnsServer {
            udp,
            tcp,
            handler: Arc::new(Handler {
                zones,
                transfers,
                metrics,
                guard: guard(&config)?,
            }),
            config,
            tls,
            certs,
        })
    }

    /// The DNS-over-TLS addresses bound (ports resolved when 0 was asked); empty without DoT.
    pub fn local_tls_addrs(&self) -> Vec<SocketAddr> {
        self.tls.iter().filter_map(|s| s.local_addr().ok()).collect()
    }

    /// The addresses bound, UDP and TCP alike, in the order configured (ports resolved when 0 was asked).
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.udp
            .iter()
            .filter_map(|group| group.first()?.local_addr().ok())
            .collect()
    }

    /// Serves until `shutdown` is cancelled, and sends NOTIFY to the secondaries on every change meanwhile.
    /// Needs a Tokio runtime with I/O and time enabled.
    pub async fn run(self, shutdown: CancellationToken) {
        let mut tasks = JoinSet::new();
        let workers = udp_workers(&self.config);
        for sockets in self.udp {
            let (handler, started) = (self.handler.clone(), self.config.on_udp_worker_start);
            let answers = move || UdpAnswers::new(handler.clone(), started);
            tasks.spawn(udp::serve(sockets, workers, answers, shutdown.clone()));
        }
        let slots = Arc::new(Semaphore::new(self.config.limits.tcp_connections));
        for listener in self.tcp {
            let Some(listener) = serving(listener, "TCP") else {
                continue;
            };
            tasks.spawn(tcp_acceptor(
                listener,
                self.handler.clone(),
                slots.clone(),
                self.config.limits.tcp_idle,
                shutdown.clone(),
                None,
            ));
        }
        if let Some(certs) = &self.certs {
            serve_tls(
                &mut tasks,
                self.tls,
                certs,
                &self.handler,
                &slots,
                &self.config,
                &shutdown,
            );
        }
        tasks.spawn(self.handler.transfers.clone().notify(shutdown.clone()));
        if self.handler.zones.read().zones().iter().any(|z| z.signing().is_some()) {
            let every = crate::dnssec_renew::RENEW_EVERY;
            tasks.spawn(crate::dnssec_renew::renew_until(
                self.handler.zones.clone(),
                every,
                shutdown.clone(),
            ));
        }
        shutdown.cancelled().await;
        while tasks.join_next().await.is_some() {}
    }
}

/// UDP workers per address: as configured, or one per CPU the process may use.
fn udp_workers(config: &ServerConfig) -> usize {
    match config.udp_workers {
        0 => udp::default_workers(),
        n => n.min(crate::config::MAX_UDP_WORKERS),
    }
}

/// UDP (`workers` sockets on Linux) and TCP bound on one address; with port 0, on the same port (retried
/// when TCP finds it taken).
fn bind_pair(address: SocketAddr, workers: usize) -> Result<(Vec<StdUdpSocket>, std::net::TcpListener), ServerError> {
    let udp_error = |source| ServerError::Bind {
        transport: "UDP",
        address,
        source,
    };
    let tcp_error = |source| ServerError::Bind {
        transport: "TCP",
        address,
        source,
    };
    let attempts = if address.port() == 0 { 16 } else { 1 };
    let mut last = None;
    for _ in 0..attempts {
        let udp = udp::bind(address, workers).map_err(udp_error)?;
        let port = match udp.first() {
            Some(socket) => socket.local_addr().map_err(udp_error)?.port(),
            None => address.port(),
        };
        match std::net::TcpListener::bind(SocketAddr::new(address.ip(), port)) {
            Ok(tcp) => return Ok((udp, tcp)),
            Err(e) => last = Some(e),
        }
    }
    Err(tcp_error(last.unwrap_or_else(|| std::io::ErrorKind::AddrInUse.into())))
}

/// The cookie checker and the rate limiter `config` asks for.
fn guard(config: &ServerConfig) -> Result<Guard, ServerError> {
    let secret = match (config.cookies, &config.cookie_secret) {
        (false, _) => None,
        (true, Some(secret)) => Some(secret.clone()),
        (true, None) => Some(CookieSecret::generate().map_err(ServerError::Cookie)?),
    };
    Ok(Guard::new(secret, config.rrl))
}

/// The DoT listeners and their certificate, read now so that files that do not serve fail the start.
fn bind_tls(config: &ServerConfig) -> Result<(Vec<std::net::TcpListener>, Option<Arc<CertStore>>), ServerError> {
    let Some(tls) = &config.tls else {
        return Ok((Vec::new(), None));
    };
    let certs = CertStore::load(tls).map_err(ServerError::Tls)?;
    let listeners = tls
        .listen
        .iter()
        .map(|&address| {
            std::net::TcpListener::bind(address).map_err(|source| ServerError::Bind {
                transport: "TLS",
                address,
                source,
            })
        })
        .collect::<Result<_, _>>()?;
    Ok((listeners, Some(Arc::new(certs))))
}

/// What every listener shares: the zones, the transfer side, the guard and the counters.
#[derive(Debug)]
struct Handler {
    zones: Arc<Zones>,
    transfers: Arc<Transfers>,
    metrics: ServerMetrics,
    guard: Guard,
}

/// What became of one request.
enum Handled {
    /// Nothing to send (no header, or a response).
    Silent,
    /// The answer is in the output buffer.
    Answered,
    /// A transfer or a signed request, for [`Transfers`].
    Transfer(Box<Message>),
}

impl Handler {
    /// Parses `wire` from `peer` and, unless it is for [`Transfers`], writes the answer into `out`, fitted to
    /// what the client takes over the transport `counters` count for.
    fn handle(&self, wire: &[u8], peer: SocketAddr, out: &mut Vec<u8>, counters: &mut Counters) -> Handled {
        let Some(header) = RawHeader::read(wire) else {
            counters.dropped_short.inc();
            return Handled::Silent;
        };
        if header.is_response {
            counters.dropped_response.inc();
            return Handled::Silent;
        }
        if let Some(query) = PlainQuery::read(wire)
            && let Some(handled) = self.plain(&query, peer, out, counters)
        {
            return handled;
        }
        let request = match Message::from_vec(wire) {
            Ok(m) => m,
            Err(e) => {
                debug!(error = %e, "malformed DNS request, answered FORMERR");
                counters.malformed.inc();
                header.format_error(out);
                counters.answer(ResponseCode::FormErr);
                return Handled::Answered;
            }
        };
        if transfer::handles(&request) {
            return Handled::Transfer(Box::new(request));
        }
        let transport = counters.transport;
        let limit = match transport {
            Transport::Udp => answer::udp_limit(&request),
            Transport::Tcp => u16::MAX,
        };
        let asker = Asker {
            transport,
            peer,
            now: self.guard.now(),
        };
        // The snapshot is held until the answer is written: it is signed only once RRL lets it out, and
        // its signatures are written from where the snapshot keeps them.
        let zones = self.zones.read();
        let (cookie, response) = match self.guard.admit(&request, &asker, &counters.guard) {
            Ok(cookie) => (cookie, answer::prepare(&zones, &request, transport, limit)),
            Err((cookie, refusal)) => (cookie, (*refusal).into()),
        };
        let Some(mut response) = self.guard.release(&request, response, cookie, &asker, &counters.guard) else {
            return Handled::Silent;
        };
        match answer::encode(&mut response, limit, out) {
            Ok(Fit::Truncated) => {
                counters.truncated.inc();
            }
            Ok(Fit::Whole | Fit::Trimmed) => {}
            Err(e) => {
                let name = request.queries.first().map(|q| q.name().to_string());
                warn!(error = %e, ?name, "cannot encode a DNS answer, sending SERVFAIL");
                server_failure(&request, out);
                counters.answer(ResponseCode::ServFail);
                return Handled::Answered;
            }
        }
        counters.answer(response.message.response_code);
        Handled::Answered
    }

    /// The answer to a plain query ([`crate::plain`]) in `out`, when the zones hold it plainly and it fits
    /// what the client takes; `None` leaves the request to the general path, nothing counted yet.
    fn plain(
        &self,
        query: &PlainQuery<'_>,
        peer: SocketAddr,
        out: &mut Vec<u8>,
        counters: &mut Counters,
    ) -> Option<Handled> {
        let limit = match counters.transport {
            Transport::Udp => query.udp_limit(),
            Transport::Tcp => u16::MAX,
        };
        let zones = self.zones.read();
        let set = query.own_set(&zones)?;
        query.write(Some(set), out).ok()?;
        if out.len() > usize::from(limit) {
            return None;
        }
        let asker = Asker {
            transport: counters.transport,
            peer,
            // No cookie: a request with one is not plain.
            now: self.guard.now_without_cookie(),
        };
        match self
            .guard
            .limit(Cookie::Absent, &asker, &counters.guard, || query.class())
        {
            Verdict::Send => {}
            Verdict::Drop => return Some(Handled::Silent),
            Verdict::Slip => {
                if query.write(None, out).is_err() {
                    return Some(Handled::Silent);
                }
            }
        }
        counters.answer(ResponseCode::NoError);
        Some(Handled::Answered)
    }

    /// The answer to one UDP datagram from `peer` in `out`; `false`: send nothing.
    fn udp(&self, wire: &[u8], peer: SocketAddr, out: &mut Vec<u8>, counters: &mut Counters) -> bool {
        match self.handle(wire, peer, out, counters) {
            Handled::Silent => false,
            Handled::Answered => true,
            Handled::Transfer(request) => {
                let limit = answer::udp_limit(&request);
                match self.transfers.respond_udp(wire, &request, peer, limit) {
                    Some(bytes) => {
                        *out = bytes;
                        true
                    }
                    None => false,
                }
            }
        }
    }
}

/// SERVFAIL with the request's ID, opcode, RD and question: what is sent when an answer cannot be encoded.
fn server_failure(request: &Message, out: &mut Vec<u8>) {
    let mut failure = Message::response(request.metadata.id, request.op_code);
    failure.metadata.recursion_desired = request.metadata.recursion_desired;
    failure.metadata.response_code = ResponseCode::ServFail;
    failure.queries = request.queries.clone();
    let mut failure = answer::Response::from(failure);
    if answer::encode(&mut failure, u16::MAX, out).is_err() {
        failure.message.queries.clear();
        let _ = answer::encode(&mut failure, u16::MAX, out);
    }
}

/// One worker's handles on the counters it bumps, looked up once (a label lookup per packet would cost a
/// lock and an allocation).
struct Counters {
    transport: Transport,
    answers: Vec<(u16, Counter)>,
    family: ServerMetrics,
    dropped_short: Counter,
    dropped_response: Counter,
    malformed: Counter,
    truncated: Counter,
    guard: GuardCounters,
}

impl Counters {
    fn new(transport: Transport, metrics: &ServerMetrics) -> Counters {
        let dropped = |reason| metrics.dropped.get_or_create(&DropLabels { transport, reason }).clone();
        Counters {
            transport,
            answers: Vec::new(),
            dropped_short: dropped("short"),
            dropped_response: dropped("response"),
            malformed: metrics.malformed.get_or_create(&TransportLabels { transport }).clone(),
            truncated: metrics.truncated.clone(),
            family: metrics.clone(),
            guard: GuardCounters::new(metrics),
        }
    }

    fn answer(&mut self, rcode: ResponseCode) {
        let code = u16::from(rcode);
        if let Some((_, c)) = self.answers.iter().find(|(k, _)| *k == code) {
            c.inc();
            return;
        }
        let counter = self
            .family
            .answers
            .get_or_create(&AnswerLabels {
                transport: self.transport,
                rcode: rcode_name(code),
            })
            .clone();
        counter.inc();
        self.answers.push((code, counter));
    }
}

/// The response code as DNS tools spell it (`NOERROR`, `NXDOMAIN`, ...).
pub(crate) fn rcode_name(code: u16) -> String {
    let name = match code {
        0 => "NOERROR",
        1 => "FORMERR",
        2 => "SERVFAIL",
        3 => "NXDOMAIN",
        4 => "NOTIMP",
        5 => "REFUSED",
        6 => "YXDOMAIN",
        7 => "YXRRSET",
        8 => "NXRRSET",
        9 => "NOTAUTH",
        10 => "NOTZONE",
        16 => "BADVERS",
        17 => "BADKEY",
        18 => "BADTIME",
        22 => "BADTRUNC",
        other => return format!("RCODE{other}"),
    };
    name.to_string()
}

/// `received`'s value; or, its error logged by `log`, `None` once `pause` has passed, so that a socket
/// failing again and again does not spin the loop that reads it.
async fn or_pause<T>(received: std::io::Result<T>, pause: Duration, log: impl FnOnce(&std::io::Error)) -> Option<T> {
    match received {
        Ok(value) => Some(value),
        Err(e) => {
            log(&e);
            tokio::time::sleep(pause).await;
            None
        }
    }
}

/// A UDP worker's way to the handler, with its own handles on the counters.
struct UdpAnswers {
    handler: Arc<Handler>,
    counters: Counters,
    /// [`ServerConfig::on_udp_worker_start`].
    started: Option<fn()>,
}

impl UdpAnswers {
    fn new(handler: Arc<Handler>, started: Option<fn()>) -> UdpAnswers {
        let counters = Counters::new(Transport::Udp, &handler.metrics);
        UdpAnswers {
            handler,
            counters,
            started,
        }
    }
}

impl Datagrams for UdpAnswers {
    fn answer(&mut self, wire: &[u8], peer: SocketAddr, out: &mut Vec<u8>) -> bool {
        self.handler.udp(wire, peer, out, &mut self.counters)
    }

    fn thread_started(&mut self) {
        if let Some(started) = self.started {
            started();
        }
    }
}

/// Accepts TCP connections until `shutdown`, each served by a task of its own while a slot is free.
/// With `tls`, each connection's TLS handshake comes first (DoT).
async fn tcp_acceptor(
    listener: TcpListener,
    handler: Arc<Handler>,
    slots: Arc<Semaphore>,
    idle: Duration,
    shutdown: CancellationToken,
    tls: Option<TlsAcceptor>,
) {
    loop {
        let accepted = tokio::select! {
            biased;
            () = shutdown.cancelled() => return,
            r = listener.accept() => r,
        };
        // Out of file descriptors, most often: the pause waits for connections to close.
        let pause = Duration::from_millis(100);
        let Some((stream, peer)) = or_pause(
            accepted,
            pause,
            |e| warn!(error = %e, "cannot accept a DNS TCP connection"),
        )
        .await
        else {
            continue;
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            handler.metrics.tcp_refused.inc();
            debug!(%peer, "DNS TCP connection closed: the connection cap is reached");
            continue;
        };
        let _ = stream.set_nodelay(true);
        if let Some(tls) = &tls {
            let handshake = tls_connection(tls.clone(), stream, peer, handler.clone(), idle, shutdown.clone(), slot);
            tokio::spawn(handshake);
            continue;
        }
        let (reader, writer) = stream.into_split();
        tokio::spawn(tcp_connection(
            reader,
            writer,
            peer,
            handler.clone(),
            idle,
            shutdown.clone(),
            slot,
        ));
    }
}

/// DoT's listeners (each with TCP's acceptor, the TLS handshake first) and the watcher that reloads the
/// certificate when its files change.
fn serve_tls(
    tasks: &mut JoinSet<()>,
    listeners: Vec<std::net::TcpListener>,
    certs: &Arc<CertStore>,
    handler: &Arc<Handler>,
    slots: &Arc<Semaphore>,
    config: &ServerConfig,
    shutdown: &CancellationToken,
) {
    let acceptor = match certs.server_config() {
        Ok(c) => TlsAcceptor::from(c),
        Err(e) => {
            warn!(error = %e, "cannot serve DNS over TLS");
            return;
        }
    };
    for listener in listeners {
        let Some(listener) = serving(listener, "TLS") else {
            continue;
        };
        tasks.spawn(tcp_acceptor(
            listener,
            handler.clone(),
            slots.clone(),
            config.limits.tcp_idle,
            shutdown.clone(),
            Some(acceptor.clone()),
        ));
    }
    if let Some(tls) = &config.tls {
        tasks.spawn(
            certs
                .clone()
                .watch(tls.reload_every, handler.metrics.clone(), shutdown.clone()),
        );
    }
}

/// A bound listener handed to the runtime, its address logged as served over `transport`; `None` (logged)
/// when the runtime cannot take it.
fn serving(listener: std::net::TcpListener, transport: &'static str) -> Option<TcpListener> {
    match listener
        .set_nonblocking(true)
        .and_then(|()| TcpListener::from_std(listener))
    {
        Ok(listener) => {
            if let Ok(address) = listener.local_addr() {
                info!(%address, "serving DNS over {transport}");
            }
            Some(listener)
        }
        Err(e) => {
            warn!(error = %e, "cannot serve a bound DNS {transport} socket");
            None
        }
    }
}

/// One DoT connection: the handshake within `idle`, then TCP's loop inside the session.
async fn tls_connection(
    acceptor: TlsAcceptor,
    stream: TcpStream,
    peer: SocketAddr,
    handler: Arc<Handler>,
    idle: Duration,
    shutdown: CancellationToken,
    slot: OwnedSemaphorePermit,
) {
    let session = match tokio::time::timeout(idle, acceptor.accept(stream)).await {
        Ok(Ok(session)) => session,
        Ok(Err(e)) => {
            handler.metrics.tls_handshake_failures.inc();
            debug!(%peer, error = %e, "DNS-over-TLS handshake failed");
            return;
        }
        Err(_) => {
            handler.metrics.tls_handshake_failures.inc();
            debug!(%peer, "DNS-over-TLS handshake timed out");
            return;
        }
    };
    let (reader, writer) = tokio::io::split(session);
    tcp_connection(reader, writer, peer, handler, idle, shutdown, slot).await;
}

/// Serves one TCP connection (RFC 7766 §6.2.1: queries in a row, answered in order) until the client
/// closes it, stays idle past `idle`, sends something unreadable, or `shutdown`. DoT's sessions too
/// (RFC 7858 §3.3: the same framing), as the two halves of a TLS stream.
async fn tcp_connection<R, W>(
    mut reader: R,
    mut writer: W,
    peer: SocketAddr,
    handler: Arc<Handler>,
    idle: Duration,
    shutdown: CancellationToken,
    _slot: OwnedSemaphorePermit,
) where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send,
{
    let mut input = Vec::new();
    let mut out = Vec::new();
    let mut framed = Vec::new();
    let mut counters = Counters::new(Transport::Tcp, &handler.metrics);
    loop {
        let mut prefix = [0u8; 2];
        let read = tokio::select! {
            biased;
            () = shutdown.cancelled() => return,
            r = tokio::time::timeout(idle, reader.read_exact(&mut prefix)) => r,
        };
        if !matches!(read, Ok(Ok(_))) {
            return;
        }
        // At most 64 KiB, the most a length prefix can say.
        input.resize(usize::from(u16::from_be_bytes(prefix)), 0);
        if !matches!(
            tokio::time::timeout(idle, reader.read_exact(&mut input)).await,
            Ok(Ok(_))
        ) {
            return;
        }
        match handler.handle(&input, peer, &mut out, &mut counters) {
            // A stream that carries no header cannot be trusted to be framed right either.
            Handled::Silent if RawHeader::read(&input).is_none() => return,
            Handled::Silent => continue,
            Handled::Answered => {}
            Handled::Transfer(request) => {
                if let Err(e) = handler.transfers.serve_tcp(&input, &request, peer, &mut writer).await {
                    debug!(%peer, error = %e, "DNS TCP transfer ended");
                    return;
                }
                continue;
            }
        }
        let Ok(len) = u16::try_from(out.len()) else { return };
        framed.clear();
        framed.extend_from_slice(&len.to_be_bytes());
        framed.extend_from_slice(&out);
        if !matches!(tokio::time::timeout(idle, writer.write_all(&framed)).await, Ok(Ok(()))) {
            return;
        }
    }
}

/// The query path without sockets, for the fuzz target: what the UDP listener sends for a datagram.
#[doc(hidden)]
pub mod fuzzing {
    use extdns_endpoint::{Change, Endpoint};

    use super::*;
    use crate::DnsServerProvider;

    /// A listener's request handling over `zones`, with transfers as `config` allows them.
    #[derive(Debug)]
    pub struct QueryPath {
        handler: Handler,
        counters_metrics: ServerMetrics,
    }

    impl QueryPath {
        /// The path over `zones`.
        pub fn new(zones: Arc<Zones>, config: Arc<ServerConfig>) -> QueryPath {
            let metrics = ServerMetrics::default();
            // A cookie secret that cannot be drawn leaves cookies off: the path is still the server's.
            let guard = guard(&config).unwrap_or_else(|_| Guard::new(None, config.rrl));
            QueryPath {
                handler: Handler {
                    transfers: Arc::new(Transfers::new(zones.clone(), config, metrics.clone())),
                    zones,
                    metrics: metrics.clone(),
                    guard,
                },
                counters_metrics: metrics,
            }
        }

        /// The path over a zone set of `config`, serial 1, filled with `endpoints` as the controller writes
        /// them (through the provider); fails as the provider refuses them, or without a runtime to apply on.
        pub fn with_records(config: Arc<ServerConfig>, endpoints: Vec<Endpoint>) -> std::io::Result<QueryPath> {
            let zones = Arc::new(Zones::new(&config.zones, 1, config.limits));
            let provider = DnsServerProvider::new(zones.clone(), config.default_ttl);
            let changes: Vec<Change> = endpoints.into_iter().map(Change::Create).collect();
            tokio::runtime::Builder::new_current_thread()
                .build()?
                .block_on(extdns_provider::apply_changes(&provider, &changes))
                .map_err(std::io::Error::other)?;
            Ok(QueryPath::new(zones, config))
        }

        /// The datagram the server sends back for `wire` from 127.0.0.1, if any.
        pub fn udp(&self, wire: &[u8]) -> Option<Vec<u8>> {
            self.udp_from(wire, SocketAddr::new(IpAddr::from([127, 0, 0, 1]), 5353))
        }

        /// The datagram the server sends back for `wire` from `peer`, if any (rate limiting counts by it).
        pub fn udp_from(&self, wire: &[u8], peer: SocketAddr) -> Option<Vec<u8>> {
            let mut counters = Counters::new(Transport::Udp, &self.counters_metrics);
            let mut out = Vec::new();
            self.handler.udp(wire, peer, &mut out, &mut counters).then_some(out)
        }
    }
}
