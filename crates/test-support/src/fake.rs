//! The one skeleton every cloud fake stands on, so that a fake is its API's shapes and rules only: an axum
//! app served on a free port of 127.0.0.1 from its own thread and runtime (async tests and tests that run a
//! binary can both use it; it stops when the last handle is dropped), the fake's state, its request log and
//! its faults behind one lock ([`Locked`]), and a gate in front of every route that logs each request and
//! injects the faults a test asked for:
//!
//! - the next N requests (or the next N of one purpose) throttled as the API throttles, with a
//!   `Retry-After` ([`Faults::throttle_next`], [`Faults::retry_after`], [`Faults::only`]);
//! - the next N answered with a 5xx ([`Faults::fail_next`], [`Faults::fail_with`]);
//! - the API's documented rate limits ([`Api::limits`], on from the start: [`Faults::limits`]), each
//!   counted per account as the vendor keys it ([`Api::account`]) and as the vendor counts ([`Meter`]),
//!   past it throttled as the API throttles; a test lowers them to stay short ([`Faults::limit`]), and
//!   so does a run without a change of code, by a variable read where the fake starts
//!   ([`limits`]: `EXTDNS_FAKE_<CLOUD>_LIMITS`);
//! - latency added to every request ([`Faults::latency`]);
//! - named records refused ([`Faults::refused`]): only the fake knows where a record's name is in a
//!   request, so each fake asks [`Faults::refuses`] and refuses it its API's own way.
//!
//! Faults apply to the calls of the API under test only ([`Purpose::api`](Purpose#structfield.api)), never
//! to the token endpoints and metadata servers that some fakes serve beside it.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::net::SocketAddr;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::Response;

use crate::background::Background;

pub mod limits;

/// What a fake's API is, for the skeleton: its routes, what each request is for, and how the API says
/// "slow down" and "unavailable". The type is the fake's state.
pub trait Api: Sized + Send + 'static {
    /// The API's routes, given the fake's base URL (`http://127.0.0.1:<port>`) for APIs that link to
    /// themselves; their handlers take the [`Shared`] state.
    fn routes(url: &str) -> Router<Shared<Self>>;

    /// What a request is for: the name it is counted by, and whether it is a call of the API under test.
    fn purpose(method: &Method, uri: &Uri, headers: &HeaderMap) -> Purpose;

    /// The API's answer to a request past its rate limit or throttled by a test: its status, error body
    /// and `Retry-After` (`retry_after`, rounded up to whole seconds where the API counts in seconds).
    fn throttled(retry_after: Duration) -> Response;

    /// The API's answer when it is down (`status`, a 5xx).
    fn unavailable(status: StatusCode) -> Response;

    /// The API's documented rate limits, each with its figure and its source beside it; every fake
    /// enforces them from the start. None by default (an API that documents none).
    fn limits() -> Vec<RateLimit> {
        Vec::new()
    }

    /// The cloud's name in the variable that lowers [`Api::limits`] where the fake starts
    /// (`EXTDNS_FAKE_<CLOUD>_LIMITS`, [`limits`]); `None` for an API with no limits.
    const CLOUD: Option<&'static str> = None;

    /// Whom a request's limits are counted for, as the vendor keys them (the account of an access key, a
    /// token, a subscription, a project); one account for all by default.
    fn account(_method: &Method, _uri: &Uri, _headers: &HeaderMap) -> String {
        String::new()
    }

    /// Whether a request so answered changed the API's state (what [`RequestLog::writes`] counts): by
    /// default a write or delete answered with a 2xx.
    fn changed(purpose: &Purpose, status: StatusCode) -> bool {
        purpose.op != Op::Read && status.is_success()
    }
}

/// What a request does, as the vendors' limits tell requests apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Reads (and calls that change no record, like a login).
    Read,
    /// Creates or changes something.
    Write,
    /// Deletes something.
    Delete,
}

/// What a request is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Purpose {
    /// The name it is counted by in the log (`changes.create`, `Scan`, `token`).
    pub name: &'static str,
    /// A call of the API under test, which faults apply to; `false` for token endpoints and metadata
    /// servers.
    pub api: bool,
    /// What it does, for the limits that count reads and writes apart and for [`RequestLog::writes`].
    pub op: Op,
}

impl Purpose {
    /// A read of the API under test.
    pub fn read(name: &'static str) -> Purpose {
        Purpose {
            name,
            api: true,
            op: Op::Read,
        }
    }

    /// A write of the API under test.
    pub fn write(name: &'static str) -> Purpose {
        Purpose {
            name,
            api: true,
            op: Op::Write,
        }
    }

    /// A delete of the API under test.
    pub fn delete(name: &'static str) -> Purpose {
        Purpose {
            name,
            api: true,
            op: Op::Delete,
        }
    }

    /// A call beside it (a token endpoint), logged but never faulted.
    pub fn beside(name: &'static str) -> Purpose {
        Purpose {
            name,
            api: false,
            op: Op::Read,
        }
    }
}

/// `Retry-After` in whole seconds, rounded up, as HTTP spells it.
pub fn retry_after_seconds(retry_after: Duration) -> String {
    let whole = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
    whole.to_string()
}

/// A query string's pairs, percent- and `+`-decoded.
pub fn query(uri: &Uri) -> BTreeMap<String, String> {
    query_pairs(uri.query())
}

/// [`query`] of a raw query string (axum's `RawQuery`).
pub fn query_pairs(raw: Option<&str>) -> BTreeMap<String, String> {
    url::form_urlencoded::parse(raw.unwrap_or_default().as_bytes())
        .into_owned()
        .collect()
}

/// How a documented limit counts requests, which differs by vendor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Meter {
    /// At most `requests` in any sliding `window`, counting every request that arrives, refused ones
    /// included: a client that keeps calling past the limit stays blocked (Cloudflare: "all API calls for
    /// the next five minutes will be blocked").
    Window {
        /// Requests counted in one window before the next is refused.
        requests: usize,
        /// The sliding window.
        window: Duration,
    },
    /// A token bucket (Route53, Azure Resource Manager): `capacity` tokens, refilled at `per_second` up to
    /// the capacity; an admitted request takes one, a refused one none (the bucket was empty).
    Bucket {
        /// The burst: tokens of a full bucket.
        capacity: u32,
        /// Tokens added a second.
        per_second: f64,
    },
}

/// One documented rate limit: how it counts, and which requests (every call of the API, or only its
/// reads, writes or deletes, which Azure counts apart).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    /// How it counts.
    pub meter: Meter,
    /// The requests it counts: `None` for every call of the API.
    pub counts: Option<Op>,
}

impl RateLimit {
    /// At most `requests` in any `window`, every call counted.
    pub const fn window(requests: usize, window: Duration) -> RateLimit {
        RateLimit {
            meter: Meter::Window { requests, window },
            counts: None,
        }
    }

    /// A token bucket of `capacity` refilled at `per_second`, every call counted.
    pub const fn bucket(capacity: u32, per_second: f64) -> RateLimit {
        RateLimit {
            meter: Meter::Bucket { capacity, per_second },
            counts: None,
        }
    }

    /// The same limit over one kind of request only.
    pub const fn of(self, op: Op) -> RateLimit {
        RateLimit {
            meter: self.meter,
            counts: Some(op),
        }
    }

    /// Whether it counts a request doing `op`.
    fn counts(&self, op: Op) -> bool {
        self.counts.is_none_or(|counted| counted == op)
    }
}

/// One account's use of one limit.
#[derive(Debug)]
enum Use {
    /// The arrivals of the last window, oldest first.
    Window(VecDeque<Instant>),
    /// The tokens left when last looked at, and when that was.
    Bucket { tokens: f64, at: Instant },
}

impl Use {
    fn new(meter: Meter, now: Instant) -> Use {
        match meter {
            Meter::Window { .. } => Use::Window(VecDeque::new()),
            Meter::Bucket { capacity, .. } => Use::Bucket {
                tokens: f64::from(capacity),
                at: now,
            },
        }
    }

    /// How long until the limit admits a request arriving `now`, or `None` if it admits it now. Only an
    /// admitted request takes a token; a window counts every arrival.
    fn check(&mut self, meter: Meter, now: Instant) -> Option<Duration> {
        match (self, meter) {
            (Use::Window(arrived), Meter::Window { requests, window }) => {
                while arrived.front().is_some_and(|at| now.duration_since(*at) >= window) {
                    arrived.pop_front();
                }
                let full = arrived.len() >= requests;
                arrived.push_back(now);
                // Refused arrivals count too, this one included: the window admits again once only
                // `requests - 1` of the arrivals it holds (this one among them) are left in it.
                full.then(|| {
                    let nth_newest = arrived.len().checked_sub(requests).and_then(|i| arrived.get(i));
                    let at = nth_newest.copied().unwrap_or(now);
                    window.saturating_sub(now.duration_since(at))
                })
            }
            (Use::Bucket { tokens, at }, Meter::Bucket { capacity, per_second }) => {
                let refill = now.duration_since(*at).as_secs_f64() * per_second;
                *tokens = (*tokens + refill).min(f64::from(capacity));
                *at = now;
                if *tokens >= 1.0 {
                    *tokens -= 1.0;
                    return None;
                }
                let missing = 1.0 - *tokens;
                Some(Duration::from_secs_f64(
                    (missing / per_second.max(f64::MIN_POSITIVE)).min(3600.0),
                ))
            }
            // A limit's use is made from its own meter, so the two always match.
            (usage, meter) => {
                *usage = Use::new(meter, now);
                None
            }
        }
    }
}

/// The faults a test asks for; every field is read on each request.
#[derive(Debug)]
pub struct Faults {
    /// Throttle the next this many requests (of [`Faults::only`]'s purpose, when set).
    pub throttle_next: usize,
    /// The `Retry-After` of those throttled answers.
    pub retry_after: Duration,
    /// Answer the next this many requests (of [`Faults::only`]'s purpose, when set) with
    /// [`Faults::fail_with`].
    pub fail_next: usize,
    /// The 5xx of [`Faults::fail_next`] (503 unless set).
    pub fail_with: StatusCode,
    /// When set, [`Faults::throttle_next`] and [`Faults::fail_next`] count only requests of this purpose;
    /// cleared once both have run out, so a fault a test sets later counts every purpose again.
    pub only: Option<&'static str>,
    /// Added before every request is answered.
    pub latency: Duration,
    /// Record names refused, lower-case without the final dot; each fake refuses them its API's way.
    pub refused: BTreeSet<String>,
    /// The API's documented rate limits ([`Api::limits`] from the start); a test lowers, raises or
    /// clears them ([`Faults::limit`]).
    pub limits: Vec<RateLimit>,
    /// Each account's use of each limit, by the limit's place in `limits` and the account.
    usage: BTreeMap<(usize, String), Use>,
}

impl Default for Faults {
    fn default() -> Faults {
        Faults {
            throttle_next: 0,
            retry_after: Duration::ZERO,
            fail_next: 0,
            fail_with: StatusCode::SERVICE_UNAVAILABLE,
            only: None,
            latency: Duration::ZERO,
            refused: BTreeSet::new(),
            limits: Vec::new(),
            usage: BTreeMap::new(),
        }
    }
}

/// How a name is compared: lower-case, without the final dot.
fn name_key(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

impl Faults {
    /// Refuse every change of this record name (absolute or relative, as the fake's API names records).
    pub fn refuse(&mut self, name: &str) {
        self.refused.insert(name_key(name));
    }

    /// Whether a change of this record name is refused.
    pub fn refuses(&self, name: &str) -> bool {
        !self.refused.is_empty() && self.refused.contains(&name_key(name))
    }

    /// Replaces the limits (a test's lower figure, or none: `limit(Vec::new())`), forgetting what
    /// the old ones counted.
    pub fn limit(&mut self, limits: Vec<RateLimit>) {
        self.limits = limits;
        self.usage.clear();
    }

    /// The fault a request of `purpose` for `account` arriving `now` meets, if any.
    fn decide(&mut self, purpose: &Purpose, account: &str, now: Instant) -> Option<Fault> {
        let counted = self.only.is_none_or(|only| only == purpose.name);
        let injected = if counted && self.throttle_next > 0 {
            self.throttle_next -= 1;
            Some(Fault::Throttled(self.retry_after))
        } else if counted && self.fail_next > 0 {
            self.fail_next -= 1;
            Some(Fault::Failed(self.fail_with))
        } else {
            None
        };
        if self.throttle_next == 0 && self.fail_next == 0 {
            self.only = None;
        }
        // Every limit sees every request it counts, an injected fault's too: the vendor counts what
        // arrives, whatever the answer.
        let mut wait: Option<Duration> = None;
        for (i, limit) in self.limits.iter().enumerate() {
            if !limit.counts(purpose.op) {
                continue;
            }
            let usage = self
                .usage
                .entry((i, account.to_string()))
                .or_insert_with(|| Use::new(limit.meter, now));
            if let Some(w) = usage.check(limit.meter, now) {
                wait = Some(wait.map_or(w, |longest| longest.max(w)));
            }
        }
        injected.or(wait.map(Fault::RateLimited))
    }
}

/// A fault injected into one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Throttled by [`Faults::throttle_next`], with this `Retry-After`.
    Throttled(Duration),
    /// Past one of [`Faults::limits`], with the time until it admits another.
    RateLimited(Duration),
    /// Answered with this 5xx by [`Faults::fail_next`].
    Failed(StatusCode),
}

/// One request as the fake saw and answered it.
#[derive(Debug, Clone)]
pub struct Logged {
    /// When it arrived.
    pub at: Instant,
    /// When its answer was ready (after any added latency): with [`Logged::at`], whether two requests
    /// were in flight at once.
    pub answered: Instant,
    /// Its method.
    pub method: Method,
    /// Its path as sent (still percent-encoded).
    pub path: String,
    /// Its query as sent, if any.
    pub query: Option<String>,
    /// What it was for.
    pub purpose: Purpose,
    /// Whom the API's limits counted it for ([`Api::account`]).
    pub account: String,
    /// The status it was answered with.
    pub status: StatusCode,
    /// Whether it changed the API's state ([`Api::changed`]).
    pub changed: bool,
    /// The fault injected into it, if any.
    pub fault: Option<Fault>,
}

impl Logged {
    /// `METHOD path[?query]`, how tests of the wire format compare.
    pub fn line(&self) -> String {
        match &self.query {
            Some(q) => format!("{} {}?{q}", self.method, self.path),
            None => format!("{} {}", self.method, self.path),
        }
    }

    /// Whether a throttle (injected or the rate limit) answered it.
    pub fn throttled(&self) -> bool {
        matches!(self.fault, Some(Fault::Throttled(_) | Fault::RateLimited(_)))
    }
}

/// Every request the fake answered, in the order their answers were sent, and the counts tests and
/// benchmarks read.
#[derive(Debug, Default)]
pub struct RequestLog {
    entries: Vec<Logged>,
}

impl RequestLog {
    /// Every request.
    pub fn iter(&self) -> std::slice::Iter<'_, Logged> {
        self.entries.iter()
    }

    /// How many requests.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether none arrived.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Forgets every request (a test's phase starts).
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Requests of this purpose.
    pub fn count(&self, purpose: &str) -> usize {
        self.iter().filter(|r| r.purpose.name == purpose).count()
    }

    /// Calls of the API under test (not its token endpoints).
    pub fn api_calls(&self) -> usize {
        self.iter().filter(|r| r.purpose.api).count()
    }

    /// Requests answered with this status.
    pub fn with_status(&self, status: StatusCode) -> usize {
        self.iter().filter(|r| r.status == status).count()
    }

    /// Requests a throttle answered (injected or the rate limit).
    pub fn throttled(&self) -> usize {
        self.iter().filter(|r| r.throttled()).count()
    }

    /// Requests that changed the API's state ([`Api::changed`]): derived from the log, so no fake keeps
    /// a count of its own.
    pub fn writes(&self) -> usize {
        self.iter().filter(|r| r.changed).count()
    }

    /// The most calls of the API under test `account` made in any `window` (by arrival): what a test
    /// compares with the account's limit.
    pub fn most_in_window(&self, account: &str, window: Duration) -> usize {
        let mut at: Vec<Instant> = self
            .iter()
            .filter(|r| r.purpose.api && r.account == account)
            .map(|r| r.at)
            .collect();
        at.sort();
        let mut most = 0;
        let mut first = 0;
        for (last, t) in at.iter().enumerate() {
            while t.duration_since(at[first]) >= window {
                first += 1;
            }
            most = most.max(last + 1 - first);
        }
        most
    }

    /// Whether every request of this purpose arrived before any of them was answered: they were sent at
    /// once, not one after another (true of fewer than two).
    pub fn all_in_flight_at_once(&self, purpose: &str) -> bool {
        let of = || self.iter().filter(|r| r.purpose.name == purpose);
        match (of().map(|r| r.at).max(), of().map(|r| r.answered).min()) {
            (Some(last_sent), Some(first_answered)) => of().count() < 2 || last_sent < first_answered,
            _ => true,
        }
    }

    /// When each request of this purpose arrived, in order.
    pub fn times(&self, purpose: &str) -> Vec<Instant> {
        let mut at: Vec<Instant> = self
            .iter()
            .filter(|r| r.purpose.name == purpose)
            .map(|r| r.at)
            .collect();
        at.sort();
        at
    }

    /// Every request as [`Logged::line`].
    pub fn lines(&self) -> Vec<String> {
        self.iter().map(Logged::line).collect()
    }

    fn push(&mut self, entry: Logged) {
        self.entries.push(entry);
    }
}

impl<'a> IntoIterator for &'a RequestLog {
    type Item = &'a Logged;
    type IntoIter = std::slice::Iter<'a, Logged>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// Everything behind the fake's one lock: its API's state (what the guard derefs to), the request log
/// and the faults.
#[derive(Debug, Default)]
pub struct Locked<S> {
    /// The API's own state.
    pub api: S,
    /// Every request answered.
    pub requests: RequestLog,
    /// The faults injected.
    pub faults: Faults,
}

impl<S> Deref for Locked<S> {
    type Target = S;

    fn deref(&self) -> &S {
        &self.api
    }
}

impl<S> DerefMut for Locked<S> {
    fn deref_mut(&mut self) -> &mut S {
        &mut self.api
    }
}

/// The state handlers share (axum's `State`).
pub type Shared<S> = Arc<Mutex<Locked<S>>>;

/// The fake's state, locked (a poisoned lock is taken anyway: a test that panicked holding it has failed
/// already).
pub fn lock<S>(shared: &Shared<S>) -> MutexGuard<'_, Locked<S>> {
    shared.lock().unwrap_or_else(|p| p.into_inner())
}

/// The gate in front of every route: logs the request and injects the faults.
async fn gate<S: Api>(State(shared): State<Shared<S>>, request: Request, next: Next) -> Response {
    let at = Instant::now();
    let method = request.method().clone();
    let uri = request.uri().clone();
    let purpose = S::purpose(&method, &uri, request.headers());
    let account = S::account(&method, &uri, request.headers());
    let (fault, latency) = if purpose.api {
        let mut s = lock(&shared);
        (s.faults.decide(&purpose, &account, at), s.faults.latency)
    } else {
        (None, Duration::ZERO)
    };
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    let response = match fault {
        Some(Fault::Throttled(after) | Fault::RateLimited(after)) => S::throttled(after),
        Some(Fault::Failed(status)) => S::unavailable(status),
        None => next.run(request).await,
    };
    lock(&shared).requests.push(Logged {
        at,
        answered: Instant::now(),
        method,
        path: uri.path().to_string(),
        query: uri.query().map(str::to_string),
        purpose,
        account,
        status: response.status(),
        changed: S::changed(&purpose, response.status()),
        fault,
    });
    response
}

/// A running fake on 127.0.0.1; clones share it, and it stops when the last is dropped.
#[derive(Debug)]
pub struct FakeServer<S> {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    addr: SocketAddr,
    shared: Shared<S>,
    /// The server, stopped when the last handle of the fake is dropped.
    _running: Arc<Background>,
}

impl<S> Clone for FakeServer<S> {
    fn clone(&self) -> Self {
        FakeServer {
            url: self.url.clone(),
            addr: self.addr,
            shared: self.shared.clone(),
            _running: self._running.clone(),
        }
    }
}

impl<S: Api> FakeServer<S> {
    /// Serves the API's routes over `api`, its state, behind the gate, its documented limits on (lowered
    /// by `EXTDNS_FAKE_<CLOUD>_LIMITS` when set; a panic naming the variable when its value is refused,
    /// as a fake that cannot start fails its test).
    pub fn serve(api: S) -> FakeServer<S> {
        let starting = limits::starting::<S>(|name| std::env::var(name).ok())
            .unwrap_or_else(|e| panic!("cannot start the fake: {e}"));
        let shared: Shared<S> = Arc::new(Mutex::new(Locked {
            api,
            requests: RequestLog::default(),
            faults: Faults {
                limits: starting,
                ..Faults::default()
            },
        }));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("cannot bind: {e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
        if let Err(e) = listener.set_nonblocking(true) {
            panic!("{e}");
        }
        let url = format!("http://{addr}");
        let app = S::routes(&url)
            .layer(axum::middleware::from_fn_with_state(shared.clone(), gate::<S>))
            .with_state(shared.clone());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let running = Background::run(runtime, move |stop| async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap_or_else(|e| panic!("{e}"));
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stop.await;
                })
                .await;
        });
        FakeServer {
            url,
            addr,
            shared,
            _running: Arc::new(running),
        }
    }
}

impl<S: Api + Default> FakeServer<S> {
    /// Starts a fake in its API's default state (on its own thread and runtime: async tests and tests that
    /// run a child process can both use it).
    pub async fn start() -> FakeServer<S> {
        FakeServer::serve(S::default())
    }

    /// [`FakeServer::start`] from synchronous code.
    pub fn start_in_background() -> FakeServer<S> {
        FakeServer::serve(S::default())
    }
}

impl<S> FakeServer<S> {
    /// The fake with these limits instead of its API's documented ones: a test that runs its client
    /// faster than the documented figure raises them to its pace, one about the limit lowers them to stay
    /// short.
    pub fn with_limits(self, limits: Vec<RateLimit>) -> Self {
        self.lock().faults.limit(limits);
        self
    }

    /// Where it listens (for [`crate::tls_proxy::TlsProxy::start`]).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The state, log and faults, locked.
    pub fn lock(&self) -> MutexGuard<'_, Locked<S>> {
        lock(&self.shared)
    }
}

/// The status, the value of `header` and the body of the answer to `request`, as a client of a fake sees
/// them (the fakes' tests over HTTP); a panic when it is not answered.
pub async fn answer(request: reqwest::RequestBuilder, header: &str) -> (u16, Option<String>, String) {
    let r = request.send().await.unwrap_or_else(|e| panic!("{e}"));
    let value = r
        .headers()
        .get(header)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    (r.status().as_u16(), value, r.text().await.unwrap_or_default())
}

/// Another client of an account (another cluster on it), for tests of a shared budget: sends `GET url`
/// with `headers` `burst` times at once, then `per_second` times a second, until `stop` is set; returns how
/// many it sent (only the burst when `per_second` is not positive). Its answers are not read beyond their
/// status: it only spends the account's budget.
pub async fn other_client(
    url: String,
    headers: Vec<(&'static str, String)>,
    burst: usize,
    per_second: f64,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> usize {
    let client = crate::loopback_client();
    let send = || {
        let mut request = client.get(&url);
        for (name, value) in &headers {
            request = request.header(*name, value);
        }
        request.send()
    };
    let mut sent = 0;
    for _ in 0..burst {
        let _ = send().await;
        sent += 1;
    }
    if !(per_second.is_finite() && per_second > 0.0) {
        return sent;
    }
    let mut every = tokio::time::interval(Duration::from_secs_f64(1.0 / per_second));
    // A slow send delays the next one rather than bunching the missed ticks into a burst.
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        every.tick().await;
        let _ = send().await;
        sent += 1;
    }
    sent
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::extract::Path;
    use axum::response::IntoResponse;
    use axum::routing::{get, put};

    /// A toy API: `PUT /records/{name}` stores a name (refused with 422), `GET /records` counts them,
    /// `POST /token` stands beside the API.
    #[derive(Debug, Default)]
    struct Toy {
        names: Vec<String>,
    }

    impl Api for Toy {
        fn routes(_: &str) -> Router<Shared<Toy>> {
            Router::new()
                .route("/records", get(list))
                .route("/records/{name}", put(store))
                .route("/token", axum::routing::post(|| async { "t" }))
        }

        fn purpose(method: &Method, uri: &Uri, _: &HeaderMap) -> Purpose {
            match (method.as_str(), uri.path()) {
                ("POST", "/token") => Purpose::beside("token"),
                ("GET", _) => Purpose::read("list"),
                _ => Purpose::write("put"),
            }
        }

        fn throttled(retry_after: Duration) -> Response {
            (
                StatusCode::TOO_MANY_REQUESTS,
                [("retry-after", retry_after_seconds(retry_after))],
                "slow down",
            )
                .into_response()
        }

        fn unavailable(status: StatusCode) -> Response {
            (status, "down").into_response()
        }
    }

    fn toy() -> FakeServer<Toy> {
        FakeServer::serve(Toy::default())
    }

    async fn list(State(s): State<Shared<Toy>>) -> String {
        lock(&s).names.len().to_string()
    }

    async fn store(State(s): State<Shared<Toy>>, Path(name): Path<String>) -> Response {
        let mut s = lock(&s);
        if s.faults.refuses(&name) {
            return (StatusCode::UNPROCESSABLE_ENTITY, format!("{name} refused")).into_response();
        }
        s.names.push(name);
        StatusCode::CREATED.into_response()
    }

    /// Status, `Retry-After` and body of one call.
    async fn call(fake: &FakeServer<Toy>, method: Method, path: &str) -> (u16, Option<String>, String) {
        let r = crate::loopback_client()
            .request(method, format!("{}{path}", fake.url))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        let retry = r
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        (r.status().as_u16(), retry, r.text().await.unwrap_or_default())
    }

    #[tokio::test]
    async fn throttles_the_next_requests_with_retry_after_then_answers() {
        let fake = toy();
        {
            let mut s = fake.lock();
            s.faults.throttle_next = 2;
            s.faults.retry_after = Duration::from_millis(1500);
        }
        assert_eq!(
            call(&fake, Method::GET, "/records").await,
            (429, Some("2".into()), "slow down".into())
        );
        assert_eq!(call(&fake, Method::GET, "/records").await.0, 429);
        assert_eq!(call(&fake, Method::GET, "/records").await, (200, None, "0".into()));
        let s = fake.lock();
        assert_eq!((s.requests.len(), s.requests.throttled()), (3, 2));
        assert_eq!(s.requests.with_status(StatusCode::OK), 1);
    }

    #[tokio::test]
    async fn faults_of_one_purpose_spare_the_others_and_the_token_endpoint() {
        let fake = toy();
        {
            let mut s = fake.lock();
            s.faults.throttle_next = 1;
            s.faults.only = Some("put");
        }
        assert_eq!(call(&fake, Method::POST, "/token").await.0, 200, "never faulted");
        assert_eq!(call(&fake, Method::GET, "/records").await.0, 200, "another purpose");
        assert_eq!(call(&fake, Method::PUT, "/records/a").await.0, 429);
        assert_eq!(call(&fake, Method::PUT, "/records/a").await.0, 201);
        let s = fake.lock();
        assert_eq!((s.requests.count("put"), s.requests.count("token")), (2, 1));
        assert_eq!(s.requests.api_calls(), 3);
    }

    #[tokio::test]
    async fn fails_the_next_requests_with_the_chosen_5xx() {
        let fake = toy();
        {
            let mut s = fake.lock();
            s.faults.fail_next = 1;
            s.faults.fail_with = StatusCode::BAD_GATEWAY;
        }
        assert_eq!(call(&fake, Method::PUT, "/records/a").await, (502, None, "down".into()));
        assert_eq!(call(&fake, Method::PUT, "/records/a").await.0, 201);
        let s = fake.lock();
        assert_eq!(s.names, ["a"], "the failed call never reached the API");
        assert_eq!(
            s.requests.iter().filter_map(|r| r.fault).collect::<Vec<_>>(),
            [Fault::Failed(StatusCode::BAD_GATEWAY)]
        );
    }

    #[tokio::test]
    async fn refuses_a_named_record_the_fakes_way_and_stores_the_others() {
        let fake = toy();
        fake.lock().faults.refuse("Bad.Example.org.");
        assert_eq!(call(&fake, Method::PUT, "/records/bad.example.org").await.0, 422);
        assert_eq!(call(&fake, Method::PUT, "/records/good.example.org").await.0, 201);
        assert_eq!(fake.lock().names, ["good.example.org"]);
    }

    #[tokio::test]
    async fn adds_latency_before_answering() {
        let fake = toy();
        fake.lock().faults.latency = Duration::from_millis(200);
        let started = Instant::now();
        assert_eq!(call(&fake, Method::GET, "/records").await.0, 200);
        assert!(
            started.elapsed() >= Duration::from_millis(200),
            "answered before the latency passed"
        );
    }

    #[tokio::test]
    async fn a_rate_limit_admits_its_requests_a_window_and_throttles_the_rest() {
        let fake = toy();
        fake.lock()
            .faults
            .limit(vec![RateLimit::window(2, Duration::from_secs(3600))]);
        assert_eq!(call(&fake, Method::GET, "/records").await.0, 200);
        assert_eq!(call(&fake, Method::PUT, "/records/a").await.0, 201);
        let (status, retry, _) = call(&fake, Method::GET, "/records").await;
        assert_eq!(status, 429);
        let retry: u64 = retry.and_then(|r| r.parse().ok()).unwrap_or_default();
        assert!((1..=3600).contains(&retry), "retry after the window's end, not {retry}");
        assert_eq!(call(&fake, Method::POST, "/token").await.0, 200, "outside the API");
        let s = fake.lock();
        assert!(s.requests.iter().last().and_then(|r| r.fault).is_none());
        assert_eq!(s.requests.throttled(), 1);
    }

    fn faults(limits: Vec<RateLimit>) -> Faults {
        let mut f = Faults::default();
        f.limit(limits);
        f
    }

    #[test]
    fn a_window_counts_refused_requests_too_so_a_client_calling_on_stays_blocked() {
        let mut f = faults(vec![RateLimit::window(1, Duration::from_secs(10))]);
        let list = Purpose::read("list");
        let t0 = Instant::now();
        assert_eq!(f.decide(&list, "", t0), None);
        assert_eq!(
            f.decide(&list, "", t0 + Duration::from_secs(4)),
            Some(Fault::RateLimited(Duration::from_secs(10))),
            "the refused arrival at 4 s fills the window until 14 s"
        );
        // The first request has left the window, but the refused one at 4 s has not.
        assert!(f.decide(&list, "", t0 + Duration::from_secs(10)).is_some());
        assert_eq!(f.decide(&list, "", t0 + Duration::from_secs(20)), None);
    }

    #[test]
    fn a_bucket_refills_at_its_rate_and_a_refused_request_takes_no_token() {
        let mut f = faults(vec![RateLimit::bucket(2, 1.0)]);
        let list = Purpose::read("list");
        let t0 = Instant::now();
        assert_eq!(f.decide(&list, "", t0), None);
        assert_eq!(f.decide(&list, "", t0), None, "the burst");
        assert_eq!(
            f.decide(&list, "", t0 + Duration::from_millis(500)),
            Some(Fault::RateLimited(Duration::from_millis(500)))
        );
        assert_eq!(
            f.decide(&list, "", t0 + Duration::from_secs(1)),
            None,
            "refilled, nothing taken by the refusal"
        );
        assert!(f.decide(&list, "", t0 + Duration::from_secs(1)).is_some());
    }

    #[test]
    fn limits_count_per_account_and_per_kind_of_request() {
        let mut f = faults(vec![
            RateLimit::window(1, Duration::from_secs(60)).of(Op::Read),
            RateLimit::window(1, Duration::from_secs(60)).of(Op::Write),
        ]);
        let t0 = Instant::now();
        let (read, write) = (Purpose::read("list"), Purpose::write("put"));
        assert_eq!(f.decide(&read, "sub-a", t0), None);
        assert_eq!(f.decide(&write, "sub-a", t0), None, "writes have their own limit");
        assert_eq!(f.decide(&read, "sub-b", t0), None, "another account has its own");
        assert!(f.decide(&read, "sub-a", t0).is_some());
        assert!(f.decide(&write, "sub-a", t0).is_some());
    }

    #[test]
    fn only_ends_with_its_counters() {
        let mut f = Faults {
            throttle_next: 1,
            only: Some("put"),
            ..Faults::default()
        };
        let t0 = Instant::now();
        assert_eq!(f.decide(&Purpose::read("list"), "", t0), None, "another purpose");
        assert!(f.decide(&Purpose::write("put"), "", t0).is_some());
        assert_eq!(f.only, None, "run out, so it no longer filters");
        f.fail_next = 1;
        assert_eq!(
            f.decide(&Purpose::read("list"), "", t0),
            Some(Fault::Failed(StatusCode::SERVICE_UNAVAILABLE)),
            "a later fault counts every purpose"
        );
    }

    #[tokio::test]
    async fn writes_are_derived_from_the_log_and_windows_measured_per_account() {
        let fake = toy();
        assert_eq!(call(&fake, Method::PUT, "/records/a").await.0, 201);
        assert_eq!(call(&fake, Method::GET, "/records").await.0, 200);
        fake.lock().faults.refuse("b");
        assert_eq!(call(&fake, Method::PUT, "/records/b").await.0, 422);
        let s = fake.lock();
        assert_eq!(
            s.requests.writes(),
            1,
            "one write landed; a read and a refusal changed nothing"
        );
        assert_eq!(s.requests.most_in_window("", Duration::from_secs(3600)), 3);
        assert_eq!(s.requests.most_in_window("someone else", Duration::from_secs(3600)), 0);
    }

    #[tokio::test]
    async fn logs_method_path_query_and_status_and_stops_when_dropped() {
        let fake = toy();
        assert_eq!(call(&fake, Method::GET, "/records?page=2&x=a%20b").await.0, 200);
        assert_eq!(call(&fake, Method::DELETE, "/records/a%2Cb").await.0, 405);
        let lines = fake.lock().requests.lines();
        assert_eq!(lines, ["GET /records?page=2&x=a%20b", "DELETE /records/a%2Cb"]);
        let uri: Uri = "/records?page=2&x=a%20b".parse().unwrap_or_default();
        assert_eq!(query(&uri).get("x").map(String::as_str), Some("a b"));
        let url = fake.url.clone();
        let other = fake.clone();
        drop(fake);
        assert!(
            reqwest::get(format!("{url}/records")).await.is_ok(),
            "a clone keeps it running"
        );
        drop(other);
        assert!(
            reqwest::get(format!("{url}/records")).await.is_err(),
            "stopped with its last handle"
        );
    }

    #[tokio::test]
    async fn requests_sent_at_once_are_told_from_requests_sent_one_after_another() {
        let fake = toy();
        fake.lock().faults.latency = Duration::from_secs(1);
        let (a, b) = tokio::join!(
            call(&fake, Method::GET, "/records"),
            call(&fake, Method::GET, "/records")
        );
        assert_eq!((a.0, b.0), (200, 200));
        assert!(fake.lock().requests.all_in_flight_at_once("list"));
        fake.lock().requests.clear();
        for _ in 0..2 {
            assert_eq!(call(&fake, Method::GET, "/records").await.0, 200);
        }
        assert!(
            !fake.lock().requests.all_in_flight_at_once("list"),
            "the second sent after the first's answer"
        );
    }

    #[test]
    fn retry_after_rounds_up_to_whole_seconds() {
        assert_eq!(retry_after_seconds(Duration::ZERO), "0");
        assert_eq!(retry_after_seconds(Duration::from_millis(20)), "1");
        assert_eq!(retry_after_seconds(Duration::from_secs(2)), "2");
    }
}
