//! What stands between a parsed query and its answer on a server open to the internet: the client's DNS
//! cookie read before the answer is made ([`Guard::admit`]), and the answer stamped with our cookie and
//! rate limited after ([`Guard::release`]), then signed if it is sent. The listeners call both around
//! [`answer::prepare`](crate::answer);
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

use hickory_proto::op::{Edns, Message, Metadata, ResponseCode};
use hickory_proto::rr::RecordType;
use hickory_proto::rr::rdata::opt::EdnsOption;
use prometheus_client::metrics::counter::Counter;
use tracing::info;

use crate::answer::{Answer, OUR_PAYLOAD, Response};
use crate::cookie::{Cookie, CookieSecret, Cookies};
use crate::metrics::{ClassLabels, ResultLabels, ServerMetrics, Transport};
use crate::name_key::NameKey;
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

    /// The time now, on the clocks something here reads: Unix time when cookies are on, the limiter's
    /// when it is; a clock no part uses is left at 0 and not read (each read was a fiftieth of an answer's
    /// CPU in issue 49's profile).
    pub(crate) fn now(&self) -> Now {
        let unix = match self.cookies {
            Some(_) => SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
            None => 0,
        };
        Now {
            // RFC 9018's timestamps wrap in 2106 by design (serial-number arithmetic).
            unix: (unix & 0xffff_ffff) as u32,
            ..self.now_without_cookie()
        }
    }

    /// [`Guard::now`] for a request without a cookie, which nothing here reads the wall clock for: the
    /// limiter's clock alone.
    pub(crate) fn now_without_cookie(&self) -> Now {
        Now {
            unix: 0,
            mono: self.rrl.as_ref().map_or(0, |_| self.start.elapsed().as_secs()),
        }
    }

    /// What `request`'s cookie says; `Err` holds the refusal to send instead of an answer.
    pub(crate) fn admit(
        &self,
        request: &Message,
        asker: &Asker,
        counters: &GuardCounters,
    ) -> Result<Cookie, (Cookie, Box<Message>)> {
        let Asker { transport, peer, now } = *asker;
        let Some(cookies) = &self.cookies else {
            return Ok(Cookie::Absent);
        };
        let cookie = cookies.read(request, peer.ip(), now.unix);
        counters.cookie(cookie);
        match cookie {
            Cookie::Malformed => Err((cookie, Box::new(refusal(request, ResponseCode::FormErr, None)))),
            Cookie::Invalid { .. } if transport == Transport::Udp => {
                Err((cookie, Box::new(refusal(request, ResponseCode::BADCOOKIE, None))))
            }
            _ => Ok(cookie),
        }
    }

    /// `answer` as it is to be sent to `peer` (signed, with our cookie, or slipped), or `None`: send
    /// nothing. The answer is classified unsigned and signed only once the limiter lets it out, so a
    /// dropped or slipped answer costs no signature, and a signed zone's missing name is counted as
    /// NXDOMAIN by its zone even though a DO client is then answered RFC 9824's NODATA.
    pub(crate) fn release<'z>(
        &self,
        request: &Message,
        answer: Answer<'z>,
        cookie: Cookie,
        asker: &Asker,
        counters: &GuardCounters,
    ) -> Option<Response<'z>> {
        let Asker { peer, now, .. } = *asker;
        let verdict = self.limit(cookie, asker, counters, || Class::of(answer.message()));
        let mut response = match verdict {
            Verdict::Send => answer.signed(),
            Verdict::Drop => return None,
            Verdict::Slip => slip(request, answer.unsigned(), cookie, self.cookies.is_some()).into(),
        };
        if let Some(cookies) = &self.cookies
            && let Some(option) = cookies.answer_option(cookie, peer.ip(), now.unix)
        {
            attach(&mut response.message, option);
        }
        Some(response)
    }

    /// What the rate limiter says of an answer to `asker` with `cookie`, classified by `classify` (only
    /// when the limiter counts it: it is off, or spares TCP and valid cookies, most of the time). Logs a
    /// prefix newly limited and counts what is dropped or slipped.
    pub(crate) fn limit(
        &self,
        cookie: Cookie,
        asker: &Asker,
        counters: &GuardCounters,
        classify: impl FnOnce() -> (Class, Option<NameKey>, RecordType),
    ) -> Verdict {
        let Some(limiter) = &self.rrl else {
            return Verdict::Send;
        };
        if asker.transport != Transport::Udp || cookie.is_valid() {
            return Verdict::Send;
        }
        let (class, name, record_type) = classify();
        let (verdict, newly) = limiter.check(
            asker.peer.ip(),
            class,
            name.as_ref().map(|n| n.suffix(0)),
            record_type,
            asker.now.mono,
        );
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
            Verdict::Drop => counters.limited(class),
            Verdict::Slip => counters.slipped(class),
        }
        verdict
    }
}

/// A slipped answer: BADCOOKIE (a fresh cookie follows) to a client that sent a cookie, else the answer
/// emptied with TC set, both small and both sending a real client back by a path RRL does not limit.
fn slip(request: &Message, mut response: Message, cookie: Cookie, cookies: bool) -> Message {
    if cookies && cookie.client().is_some() {
        return refusal(request, ResponseCode::BADCOOKIE, None);
    }
    response.answers.clear();
    response.authorities.clear();
    response.additionals.clear();
    response.metadata.truncation = true;
    response
}

/// Puts `option` into `response`'s OPT record, if it has one (it does whenever the request had EDNS).
fn attach(response: &mut Message, option: EdnsOption) {
    if let Some(edns) = response.edns.as_mut() {
        edns.options_mut().insert(option);
    }
}

/// An answer with no sections but the question and an OPT record, with `rcode`: FORMERR for a malformed
/// COOKIE option, BADCOOKIE (with `option`, a fresh cookie) for one we cannot accept.
fn refusal(request: &Message, rcode: ResponseCode, option: Option<EdnsOption>) -> Message {
    let mut response = Message::response(request.metadata.id, request.op_code);
    response.metadata = Metadata::response_from_request(&request.metadata);
    response.metadata.response_code = rcode;
    if let [query] = request.queries.as_slice() {
        response.queries.push(query.clone());
    }
    let mut edns = Edns::new();
    edns.set_max_payload(OUR_PAYLOAD);
    if let Some(theirs) = &request.edns {
        edns.set_dnssec_ok(theirs.flags().dnssec_ok);
    }
    response.edns = Some(edns);
    if let Some(option) = option {
        attach(&mut response, option);
    }
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use hickory_proto::op::{MessageType, OpCode, Query};
    use hickory_proto::rr::rdata::A;
    use hickory_proto::rr::rdata::opt::EdnsCode;
    use hickory_proto::rr::{Name, RData, Record, RecordType};

    use super::*;
    use crate::cookie::tests::request;

    const SECRET: [u8; 16] = [9; 16];

    /// A positive answer to `request`, with an OPT record as the answer side makes it.
    fn answer(request: &Message) -> Message {
        let mut r = refusal(request, ResponseCode::NoError, None);
        r.metadata.authoritative = true;
        r.answers.push(Record::from_rdata(
            Name::from_ascii("web.example.org.").expect("name"),
            60,
            RData::A(A::new(192, 0, 2, 1)),
        ));
        r
    }

    fn asker(transport: Transport, ip: [u8; 4]) -> Asker {
        Asker {
            transport,
            peer: SocketAddr::from((ip, 5353)),
            now: Now {
                unix: 1_000_000,
                mono: 0,
            },
        }
    }

    fn guard(rate: u32) -> Guard {
        let rrl = RrlConfig {
            responses_per_second: rate,
            window: Duration::from_secs(1),
            slip: 2,
            ..RrlConfig::default()
        };
        Guard::new(Some(CookieSecret::from_bytes(SECRET)), Some(rrl))
    }

    fn counters() -> GuardCounters {
        GuardCounters::new(&ServerMetrics::default())
    }

    /// What the guard sends for `request` from `asker`, as the client reads it: `None` for nothing.
    fn through(g: &Guard, request: &Message, asker: &Asker) -> Option<Message> {
        let c = counters();
        let (cookie, response) = match g.admit(request, asker, &c) {
            Ok(cookie) => (cookie, answer(request)),
            Err((cookie, refusal)) => (cookie, *refusal),
        };
        g.release(request, response.into(), cookie, asker, &c)
            .map(Response::read_back)
    }

    fn cookie_of(m: &Message) -> Option<Vec<u8>> {
        match m.edns.as_ref()?.option(EdnsCode::Cookie)? {
            EdnsOption::Unknown(10, data) => Some(data.clone()),
            _ => None,
        }
    }

    /// A valid client+server cookie for a client at `ip`.
    fn valid_cookie(ip: [u8; 4]) -> Vec<u8> {
        let g = guard(100);
        let r = through(&g, &request(Some(vec![1; 8])), &asker(Transport::Udp, ip)).expect("answered");
        cookie_of(&r).expect("a server cookie")
    }

    #[test]
    fn a_malformed_cookie_is_a_format_error() {
        let r = through(
            &guard(100),
            &request(Some(vec![1; 5])),
            &asker(Transport::Udp, [192, 0, 2, 1]),
        )
        .expect("answered");
        assert_eq!(r.metadata.response_code, ResponseCode::FormErr);
        assert!(r.answers.is_empty());
    }

    #[test]
    fn a_wrong_server_cookie_gets_badcookie_and_a_fresh_one_over_udp_and_an_answer_over_tcp() {
        let mut wrong = valid_cookie([192, 0, 2, 1]);
        wrong[20] ^= 0xff;
        let g = guard(100);
        let r = through(
            &g,
            &request(Some(wrong.clone())),
            &asker(Transport::Udp, [192, 0, 2, 1]),
        )
        .expect("sent");
        assert_eq!(r.metadata.response_code, ResponseCode::BADCOOKIE);
        assert!(r.answers.is_empty());
        let fresh = cookie_of(&r).expect("a fresh cookie");
        assert_eq!(fresh[..8], wrong[..8], "the client cookie echoed");
        assert_ne!(fresh, wrong);
        let again = through(&g, &request(Some(fresh)), &asker(Transport::Udp, [192, 0, 2, 1])).expect("sent");
        assert_eq!(again.metadata.response_code, ResponseCode::NoError);
        let tcp = through(&g, &request(Some(wrong)), &asker(Transport::Tcp, [192, 0, 2, 1])).expect("sent");
        assert_eq!(tcp.metadata.response_code, ResponseCode::NoError);
        assert_eq!(tcp.answers.len(), 1);
    }

    #[test]
    fn a_client_cookie_alone_gets_an_answer_with_a_server_cookie() {
        let r = through(
            &guard(100),
            &request(Some(vec![4; 8])),
            &asker(Transport::Udp, [192, 0, 2, 1]),
        )
        .expect("sent");
        assert_eq!(r.answers.len(), 1);
        assert_eq!(cookie_of(&r).map(|c| c.len()), Some(24));
        let plain = through(&guard(100), &request(None), &asker(Transport::Udp, [192, 0, 2, 1])).expect("sent");
        assert_eq!(cookie_of(&plain), None, "no cookie asked, none sent");
    }

    #[test]
    fn rate_limiting_spares_valid_cookies_and_tcp_and_slips_as_badcookie_or_tc() {
        let g = guard(2);
        let ip = [192, 0, 2, 1];
        let udp = asker(Transport::Udp, ip);
        let plain: Vec<Option<Message>> = (0..6).map(|_| through(&g, &request(None), &udp)).collect();
        assert_eq!(plain.iter().flatten().filter(|m| !m.answers.is_empty()).count(), 2);
        let slipped: Vec<&Message> = plain.iter().flatten().filter(|m| m.answers.is_empty()).collect();
        assert_eq!(slipped.len(), 2, "every 2nd of 4 limited answers");
        assert!(slipped.iter().all(|m| m.metadata.truncation));
        assert_eq!(plain.iter().filter(|m| m.is_none()).count(), 2);
        // A client that sent a cookie is slipped BADCOOKIE with a fresh one, which then passes.
        let sends: Vec<Message> = (0..2)
            .filter_map(|_| through(&g, &request(Some(vec![5; 8])), &udp))
            .collect();
        let badcookie = sends
            .iter()
            .find(|m| m.metadata.response_code == ResponseCode::BADCOOKIE);
        let fresh = cookie_of(badcookie.expect("one slipped as BADCOOKIE")).expect("with a cookie");
        for _ in 0..20 {
            let r = through(&g, &request(Some(fresh.clone())), &udp).expect("never limited");
            assert_eq!(r.answers.len(), 1);
        }
        for _ in 0..20 {
            let r = through(&g, &request(None), &asker(Transport::Tcp, ip)).expect("never limited");
            assert_eq!(r.answers.len(), 1);
        }
    }

    #[test]
    fn a_random_subdomain_flood_on_a_signed_zone_is_limited_by_the_zone_and_only_sent_answers_are_signed() {
        use hickory_proto::dnssec::rdata::DNSSECRData;

        use crate::dnssec::KeyAlgorithm;

        let zones = crate::dnssec_answer::tests::signed(KeyAlgorithm::EcdsaP256);
        let g = guard(3);
        let c = counters();
        let udp = asker(Transport::Udp, [192, 0, 2, 1]);
        let set = zones.read();
        let mut sent = Vec::new();
        for i in 0..30u16 {
            let mut q = Message::new(i, MessageType::Query, OpCode::Query);
            let qname = Name::from_ascii(format!("r{i}.example.org.")).expect("name");
            q.add_query(Query::query(qname, RecordType::A));
            let mut edns = Edns::new();
            edns.set_dnssec_ok(true);
            q.set_edns(edns);
            let answer = crate::answer::prepare(&set, &q, Transport::Udp, OUR_PAYLOAD);
            assert_eq!(
                answer.message().response_code,
                ResponseCode::NXDomain,
                "classified before it is signed"
            );
            assert!(
                answer
                    .message()
                    .authorities
                    .iter()
                    .all(|r| r.record_type() == RecordType::SOA)
            );
            sent.extend(g.release(&q, answer, Cookie::Absent, &udp, &c).map(Response::read_back));
        }
        let is_signature = |r: &Record| r.record_type() == RecordType::RRSIG;
        let (whole, slipped): (Vec<&Message>, Vec<&Message>) = sent.iter().partition(|m| !m.metadata.truncation);
        assert_eq!(whole.len(), 3, "one key for the zone's missing names, not one per name");
        for m in &whole {
            assert_eq!(m.response_code, ResponseCode::NXDomain);
            let nsec = m
                .authorities
                .iter()
                .any(|r| matches!(&r.data, RData::DNSSEC(DNSSECRData::NSEC(_))));
            assert!(nsec && m.authorities.iter().any(is_signature), "{m:?}");
        }
        assert_eq!(
            slipped.len(),
            27 / 2,
            "every second limited answer slipped, the rest dropped"
        );
        for m in &slipped {
            assert!(m.answers.is_empty() && m.authorities.is_empty() && m.additionals.is_empty());
        }
    }

    #[test]
    fn a_refusal_carries_the_question_and_the_fresh_cookie() {
        let c = Cookies::new(CookieSecret::from_bytes(SECRET));
        let ip = std::net::IpAddr::from([192, 0, 2, 1]);
        let req = request(Some(vec![1; 8]));
        let option = c.answer_option(c.read(&req, ip, 9), ip, 9);
        let r = refusal(&req, ResponseCode::BADCOOKIE, option);
        assert_eq!(r.queries.len(), 1);
        let mut wire = Vec::new();
        crate::answer::encode(&mut r.into(), 512, &mut wire).expect("encodes");
        let back = Message::from_vec(&wire).expect("decodes");
        assert_eq!(u16::from(back.response_code), 23);
        let edns = back.edns.expect("OPT");
        assert!(matches!(edns.option(EdnsCode::Cookie), Some(EdnsOption::Unknown(10, d)) if d.len() == 24));
    }
}
