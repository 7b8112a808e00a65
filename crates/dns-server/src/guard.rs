//! What stands between a parsed query and its answer on a server open to the internet: the client's DNS
//! cookie read before the answer is made ([`Guard::admit`]), and the answer stamped with our cookie and
//! rate limited after ([`Guard::release`]). The listeners call both around [`answer::respond`](crate::answer);
//! with cookies and RRL off, both are a branch each.
//!
//! The rules: a malformed COOKIE option gets FORMERR (RFC 7873 §5.2.2); a server cookie we cannot accept
//! gets BADCOOKIE with a fresh one over UDP (§5.2.3: the client retries with it) and an ordinary answer
//! over TCP, where the connection already proves the address; every answer to a client cookie carries our
//! server cookie. Rate limiting ([`crate::rrl`]) counts UDP answers only, and never those to a client whose
//! server cookie is valid; a slipped answer to a client that sent a cookie is BADCOOKIE with a fresh one
//! (as BIND does), so the client's retry carries a valid cookie and passes.

use std::net::SocketAddr;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use hickory_proto::op::{Message, ResponseCode};
use prometheus_client::metrics::counter::Counter;
use tracing::info;

use crate::cookie::{self, Cookie, CookieSecret, Cookies};
use crate::metrics::{ClassLabels, ResultLabels, ServerMetrics, Transport};
use crate::rrl::{Class, Limiter, RrlConfig, Verdict};

/// The cookie checker and the rate limiter, each when configured.
#[derive(Debug)]
pub(crate) struct Guard {
    cookies: Option<Cookies>,
    rrl: Option<Limiter>,
    /// The rate limiter's clock starts here.
    start: Instant,
}

/// The two clocks the guard reads: Unix seconds for cookies (shared by replicas, RFC 9018), seconds since
/// start for the limiter (monotonic). Passed in, so tests set them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Now {
    pub(crate) unix: u32,
    pub(crate) mono: u64,
}

/// Who asked, over what, and when.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Asker {
    pub(crate) transport: Transport,
    pub(crate) peer: SocketAddr,
    pub(crate) now: Now,
}

impl Guard {
    pub(crate) fn new(cookies: Option<CookieSecret>, rrl: Option<RrlConfig>) -> Guard {
        Guard {
            cookies: cookies.map(Cookies::new),
            rrl: rrl.map(Limiter::new),
            start: Instant::now(),
        }
    }

    /// The time now, on both clocks.
    pub(crate) fn now(&self) -> Now {
        let unix = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        Now {
            // RFC 9018's timestamps wrap in 2106 by design (serial-number arithmetic).
            unix: (unix & 0xffff_ffff) as u32,
            mono: self.start.elapsed().as_secs(),
        }
    }

    /// What `request`'s cookie says; `Err` holds the refusal to send instead of an answer.
    pub(crate) fn admit(
        &self,
        request: &Message,
        asker: &Asker,
        counters: &GuardCounters,
    ) -> Result<Cookie, (Cookie, Message)> {
        let Asker { transport, peer, now } = *asker;
        let Some(cookies) = &self.cookies else {
            return Ok(Cookie::Absent);
        };
        let cookie = cookies.read(request, peer.ip(), now.unix);
        counters.cookie(cookie);
        match cookie {
            Cookie::Malformed => Err((cookie, cookie::refusal(request, ResponseCode::FormErr, None))),
            Cookie::Invalid { .. } if transport == Transport::Udp => {
                Err((cookie, cookie::refusal(request, ResponseCode::BADCOOKIE, None)))
            }
            _ => Ok(cookie),
        }
    }

    /// `response` as it is to be sent to `peer` (with our cookie, or slipped), or `None`: send nothing.
    pub(crate) fn release(
        &self,
        request: &Message,
        mut response: Message,
        cookie: Cookie,
        asker: &Asker,
        counters: &GuardCounters,
    ) -> Option<Message> {
        let Asker { transport, peer, now } = *asker;
        if let Some(limiter) = &self.rrl
            && transport == Transport::Udp
            && !cookie.is_valid()
        {
            let (class, name, record_type) = Class::of(&response);
            let (verdict, newly) = limiter.check(peer.ip(), class, name.as_ref(), record_type, now.mono);
            if let Some(limited) = newly {
                info!(
                    prefix = %limited.prefix,
                    length = limited.length,
                    class = limited.class.label(),
                    rate = limiter.config().responses_per_second,
                    "rate limiting DNS answers to {}/{} (RRL): over the rate; slipping or dropping until quiet",
                    limited.prefix,
                    limited.length,
                );
            }
            match verdict {
                Verdict::Send => {}
                Verdict::Drop => {
                    counters.limited(class);
                    return None;
                }
                Verdict::Slip => {
                    counters.slipped(class);
                    response = slip(request, response, cookie, self.cookies.is_some());
                }
            }
        }
        if let Some(cookies) = &self.cookies
            && let Some(option) = cookies.answer_option(cookie, peer.ip(), now.unix)
        {
            cookie::attach(&mut response, option);
        }
        Some(response)
    }
}

/// A slipped answer: BADCOOKIE (a fresh cookie follows) to a client that sent a cookie, else the answer
/// emptied with TC set, both small and both sending a real client back by a path RRL does not limit.
fn slip(request: &Message, mut response: Message, cookie: Cookie, cookies: bool) -> Message {
    if cookies && cookie.client().is_some() {
        return cookie::refusal(request, ResponseCode::BADCOOKIE, None);
    }
    response.answers.clear();
    response.authorities.clear();
    response.additionals.clear();
    response.metadata.truncation = true;
    response
}

/// One worker's handles on the guard's counters, looked up once.
#[derive(Debug)]
pub(crate) struct GuardCounters {
    cookies: [Counter; 4],
    limited: [Counter; 5],
    slipped: [Counter; 5],
}

const CLASSES: [Class; 5] = [
    Class::Positive,
    Class::NoData,
    Class::NxDomain,
    Class::Referral,
    Class::Error,
];

const COOKIE_RESULTS: [&str; 4] = ["valid", "invalid", "client_only", "malformed"];

impl GuardCounters {
    pub(crate) fn new(metrics: &ServerMetrics) -> GuardCounters {
        let by_class = |family: &prometheus_client::metrics::family::Family<ClassLabels, Counter>| {
            CLASSES.map(|class| family.get_or_create(&ClassLabels { class: class.label() }).clone())
        };
        GuardCounters {
            cookies: COOKIE_RESULTS.map(|result| metrics.cookies.get_or_create(&ResultLabels { result }).clone()),
            limited: by_class(&metrics.rrl_limited),
            slipped: by_class(&metrics.rrl_slipped),
        }
    }

    fn cookie(&self, cookie: Cookie) {
        if let Some(i) = COOKIE_RESULTS.iter().position(|r| *r == cookie.label()) {
            self.cookies[i].inc();
        }
    }

    fn limited(&self, class: Class) {
        if let Some(i) = CLASSES.iter().position(|c| *c == class) {
            self.limited[i].inc();
        }
    }

    fn slipped(&self, class: Class) {
        if let Some(i) = CLASSES.iter().position(|c| *c == class) {
            self.slipped[i].inc();
        }
    }
}
