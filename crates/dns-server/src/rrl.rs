//! Response rate limiting over UDP, as BIND and Knot define it: a forged source address gets at most
//! [`RrlConfig::responses_per_second`] identical answers a second, so the server is no amplifier.
//!
//! Answers are counted per key: the client's prefix (/24 for IPv4, /56 for IPv6, where one network's
//! resolvers live), the answer's class ([`Class`]: positive, NODATA, NXDOMAIN, referral, error), and what
//! the answer is about (BIND's choice: the name and type for a positive answer, the name for NODATA, the
//! zone for NXDOMAIN and for RFC 9824's compact NODATA that stands for one, the delegation for a
//! referral, nothing for an error). Each key holds a balance: it is credited the rate every second, up
//! to the rate, and debited one per answer, down to `-rate × window`; an answer sent at a negative
//! balance is limited, so a flood keeps its key limited until it has been quiet for the window. Of the limited answers every [`RrlConfig::slip`]-th is *slipped* (sent empty with
//! TC set, or as BADCOOKIE with a fresh cookie when the client sent one, so a real client asks again over
//! TCP or with the cookie, neither of which is limited) and the rest dropped.
//!
//! The table is fixed at [`RrlConfig::table_size`] slots, allocated once: a flood from a million prefixes
//! costs no more memory than one. Keys hash (with a per-process random key, so nobody can aim at a slot)
//! into a slot; a slot idle for longer than the window is taken over, and two busy keys meeting in one slot
//! share its balance, as in Knot (an honest key sharing with a flood is slipped, and comes back over TCP).
//!
//! Time is whole seconds from a clock the caller passes in, so the tests drive it by hand.

use std::hash::BuildHasher;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use hickory_proto::dnssec::rdata::DNSSECRData;
use hickory_proto::op::{Message, ResponseCode};
use hickory_proto::rr::{RData, RecordType};

use crate::dnssec::denial::NXNAME;
use crate::name_key::{Labels, NameKey};

/// How the built-in server limits its UDP answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RrlConfig {
    /// Answers of one key allowed a second (`--dns-server-rrl-responses-per-second`).
    pub responses_per_second: u32,
    /// How long a key that went over stays limited once quiet: its debt is capped at `rate × window`
    /// (`--dns-server-rrl-window`).
    pub window: Duration,
    /// Every `slip`-th limited answer is sent truncated; 0 drops them all, 1 truncates them all
    /// (`--dns-server-rrl-slip`).
    pub slip: u32,
    /// The IPv4 prefix length clients are grouped by.
    pub ipv4_prefix: u8,
    /// The IPv6 prefix length clients are grouped by.
    pub ipv6_prefix: u8,
    /// Slots in the table: its memory, fixed at start (about 40 bytes each).
    pub table_size: usize,
}

impl Default for RrlConfig {
    /// Knot's rate (20 a second) with BIND's window (15 s) and slip (2), /24 and /56.
    fn default() -> Self {
        RrlConfig {
            responses_per_second: 20,
            window: Duration::from_secs(15),
            slip: 2,
            ipv4_prefix: 24,
            ipv6_prefix: 56,
            table_size: 16_384,
        }
    }
}

/// What an answer is, for counting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    /// Data for the name and type asked.
    Positive,
    /// The name exists, the type does not (BIND counts it apart from positive answers).
    NoData,
    /// The name does not exist.
    NxDomain,
    /// A delegation to another server.
    Referral,
    /// Any other response code (REFUSED, FORMERR, SERVFAIL, ...).
    Error,
}

impl Class {
    /// The class as metrics and logs spell it.
    pub fn label(self) -> &'static str {
        match self {
            Class::Positive => "positive",
            Class::NoData => "nodata",
            Class::NxDomain => "nxdomain",
            Class::Referral => "referral",
            Class::Error => "error",
        }
    }

    /// What `response` is, and the name and type its key counts it under.
    pub(crate) fn of(response: &Message) -> (Class, Option<NameKey>, RecordType) {
        let question = response.queries.first();
        let qname = question.and_then(|q| NameKey::new(q.name()));
        let qtype = question.map_or(RecordType::NULL, |q| q.query_type());
        // The owner of the first authority record: the SOA (the zone) of a negative answer, the NS set
        // (the delegation) of a referral.
        let authority = response.authorities.first().and_then(|r| NameKey::new(&r.name));
        match response.metadata.response_code {
            ResponseCode::NoError if !response.answers.is_empty() => (Class::Positive, qname, qtype),
            // RFC 9824's compact answer: a name that does not exist answered NODATA with NXNAME in its
            // NSEC. Counted by the zone, as NXDOMAIN is: keyed by the name, a random-subdomain flood
            // would be a new key each query and never limited.
            ResponseCode::NoError if denies_name(response) => (Class::NxDomain, authority, RecordType::NULL),
            ResponseCode::NoError if !response.metadata.authoritative && authority.is_some() => {
                (Class::Referral, authority, RecordType::NS)
            }
            ResponseCode::NoError => (Class::NoData, qname, RecordType::NULL),
            ResponseCode::NXDomain => (Class::NxDomain, authority.or(qname), RecordType::NULL),
            _ => (Class::Error, None, RecordType::NULL),
        }
    }
}

/// Whether `response`'s authority section holds an NSEC whose types include NXNAME: a compact answer
/// saying the name asked does not exist.
fn denies_name(response: &Message) -> bool {
    response.authorities.iter().any(|r| match &r.data {
        RData::DNSSEC(DNSSECRData::NSEC(nsec)) => nsec.type_bit_maps().any(|t| t == NXNAME),
        _ => false,
    })
}

/// What to do with one answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Send it.
    Send,
    /// Send it empty and truncated (or as BADCOOKIE).
    Slip,
    /// Send nothing.
    Drop,
}

/// A limited prefix worth a log line: the first answer limited after its key was last under the rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limited {
    /// The client's prefix, its host bits zero.
    pub prefix: IpAddr,
    /// Its length.
    pub length: u8,
    /// The class of answers limited.
    pub class: Class,
}

/// One key's account. Small and fixed: the table is a flat array of these.
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    /// The key's hash; 0: never used.
    key: u64,
    /// Answers still allowed; negative: the debt of a flood.
    balance: i64,
    /// When `balance` was last credited, in the limiter's seconds.
    updated: u64,
    /// Limited answers since the key went over, for the slip.
    limited: u32,
}

/// The limiter: the table and the per-process key of its hash.
#[derive(Debug)]
pub struct Limiter {
    config: RrlConfig,
    slots: Box<[Mutex<Slot>]>,
    hasher: std::collections::hash_map::RandomState,
    log: LogGate,
}

impl Limiter {
    /// An empty table of `config.table_size` slots (at least one).
    pub fn new(config: RrlConfig) -> Limiter {
        let slots = (0..config.table_size.max(1))
            .map(|_| Mutex::new(Slot::default()))
            .collect();
        Limiter {
            config,
            slots,
            hasher: std::collections::hash_map::RandomState::new(),
            log: LogGate::new(LOG_LINES_PER_SECOND),
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> &RrlConfig {
        &self.config
    }

    /// The client's prefix: its address with the host bits cleared (an IPv4-mapped IPv6 client as IPv4).
    pub fn prefix(&self, client: IpAddr) -> (IpAddr, u8) {
        let client = match client {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(client, IpAddr::V4),
            v4 => v4,
        };
        match client {
            IpAddr::V4(v4) => {
                let length = self.config.ipv4_prefix.min(32);
                let mask = u32::MAX.checked_shl(32 - u32::from(length)).unwrap_or(0);
                (IpAddr::V4((u32::from(v4) & mask).into()), length)
            }
            IpAddr::V6(v6) => {
                let length = self.config.ipv6_prefix.min(128);
                let mask = u128::MAX.checked_shl(128 - u32::from(length)).unwrap_or(0);
                (IpAddr::V6((u128::from(v6) & mask).into()), length)
            }
        }
    }

    /// Counts one answer of `class` about `name`/`record_type` to `client` at second `now` (of any clock
    /// that does not go back), and says what to do with it; with the prefix to log when the key has just
    /// gone over (at most a few such a second, whatever the flood).
    pub(crate) fn check(
        &self,
        client: IpAddr,
        class: Class,
        name: Option<Labels<'_>>,
        record_type: RecordType,
        now: u64,
    ) -> (Verdict, Option<Limited>) {
        let (prefix, length) = self.prefix(client);
        // 0 marks an unused slot.
        let key = self
            .hasher
            .hash_one((prefix, class, name.map(|n| n.bytes()), record_type))
            .max(1);
        let index = usize::try_from(key % self.slots.len() as u64).unwrap_or(0);
        let Some(slot) = self.slots.get(index) else {
            return (Verdict::Send, None);
        };
        let mut slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
        let rate = i64::from(self.config.responses_per_second);
        let window = self.config.window.as_secs().max(1);
        let idle = now.saturating_sub(slot.updated);
        if slot.key != key && (slot.key == 0 || idle > window) {
            *slot = Slot {
                key,
                balance: rate,
                updated: now,
                limited: 0,
            };
        }
        if idle > 0 {
            let credit = i64::try_from(idle).unwrap_or(i64::MAX).saturating_mul(rate);
            slot.balance = slot.balance.saturating_add(credit).min(rate);
            slot.updated = slot.updated.max(now);
        }
        let floor = rate
            .saturating_mul(i64::try_from(window).unwrap_or(i64::MAX))
            .saturating_neg();
        slot.balance = (slot.balance - 1).max(floor);
        if slot.balance >= 0 {
            slot.limited = 0;
            return (Verdict::Send, None);
        }
        slot.limited = slot.limited.saturating_add(1);
        let first = slot.limited == 1;
        let verdict = match self.config.slip {
            0 => Verdict::Drop,
            slip if slot.limited % slip == 0 => Verdict::Slip,
            _ => Verdict::Drop,
        };
        drop(slot);
        let log = (first && self.log.admit(now)).then_some(Limited { prefix, length, class });
        (verdict, log)
    }

    /// The slots in the table: fixed, whatever was counted.
    pub fn table_size(&self) -> usize {
        self.slots.len()
    }
}

/// Log lines about newly limited prefixes allowed a second: a flood from many prefixes must not turn
/// into a flood of logs.
const LOG_LINES_PER_SECOND: u64 = 5;

/// A counter of lines per second, shared by the workers without a lock: the second in the high half of
/// one word, the lines logged in it in the low.
#[derive(Debug)]
struct LogGate {
    state: AtomicU64,
    per_second: u64,
}

impl LogGate {
    fn new(per_second: u64) -> LogGate {
        LogGate {
            state: AtomicU64::new(0),
            per_second,
        }
    }

    /// Whether one more line may be logged in second `now`.
    fn admit(&self, now: u64) -> bool {
        let second = now & 0xffff_ffff;
        let mut admitted = false;
        let _ = self.state.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |state| {
            let (at, lines) = (state >> 32, state & 0xffff_ffff);
            let lines = if at == second { lines } else { 0 };
            admitted = lines < self.per_second;
            admitted.then_some((second << 32) | (lines + 1))
        });
        admitted
    }
}

#[cfg(test)]
mod tests {
    use hickory_proto::op::{MessageType, OpCode, Query};
    use hickory_proto::rr::rdata::{A, NS, SOA};
    use hickory_proto::rr::{Name, RData, Record};

    use super::*;

    fn name(s: &str) -> NameKey {
        key(&Name::from_ascii(s).expect("test name"))
    }

    fn key(name: &Name) -> NameKey {
        NameKey::new(name).expect("fits")
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("test address")
    }

    fn limiter(rate: u32, window: u64, slip: u32) -> Limiter {
        Limiter::new(RrlConfig {
            responses_per_second: rate,
            window: Duration::from_secs(window),
            slip,
            ..RrlConfig::default()
        })
    }

    /// The verdicts of `n` answers of one key from `client` at second `now`.
    fn burst(l: &Limiter, client: &str, n: usize, now: u64) -> Vec<Verdict> {
        let web = name("web.example.org.");
        (0..n)
            .map(|_| {
                l.check(ip(client), Class::Positive, Some(web.suffix(0)), RecordType::A, now)
                    .0
            })
            .collect()
    }

    fn count(verdicts: &[Verdict], which: Verdict) -> usize {
        verdicts.iter().filter(|v| **v == which).count()
    }

    #[test]
    fn a_key_gets_the_rate_each_second_and_the_rest_is_limited() {
        let l = limiter(5, 1, 0);
        let first = burst(&l, "192.0.2.1", 50, 100);
        assert_eq!(count(&first, Verdict::Send), 5);
        assert_eq!(first[..5], [Verdict::Send; 5]);
        // The debt is capped at rate × window = 5: after one quiet-ish second the balance is back at 0,
        // so the next second allows nothing yet, and the one after the full rate.
        assert_eq!(count(&burst(&l, "192.0.2.1", 50, 101), Verdict::Send), 0);
        assert_eq!(count(&burst(&l, "192.0.2.1", 50, 103), Verdict::Send), 5);
    }

    #[test]
    fn a_flood_stays_limited_until_quiet_for_the_window() {
        let l = limiter(10, 15, 0);
        for second in 0..30 {
            let sent = count(&burst(&l, "192.0.2.1", 100, second), Verdict::Send);
            assert_eq!(sent, if second == 0 { 10 } else { 0 }, "second {second}");
        }
        // Quiet for 15 s: the debt of 150 is paid back.
        assert_eq!(count(&burst(&l, "192.0.2.1", 100, 44), Verdict::Send), 0);
        assert_eq!(count(&burst(&l, "192.0.2.1", 100, 60), Verdict::Send), 10);
    }

    #[test]
    fn every_slip_th_limited_answer_is_slipped() {
        let l = limiter(2, 1, 3);
        let v = burst(&l, "192.0.2.1", 11, 0);
        assert_eq!(
            v,
            [
                Verdict::Send,
                Verdict::Send,
                Verdict::Drop,
                Verdict::Drop,
                Verdict::Slip,
                Verdict::Drop,
                Verdict::Drop,
                Verdict::Slip,
                Verdict::Drop,
                Verdict::Drop,
                Verdict::Slip,
            ]
        );
        assert_eq!(count(&burst(&limiter(1, 1, 1), "192.0.2.1", 10, 0), Verdict::Slip), 9);
        assert_eq!(count(&burst(&limiter(1, 1, 0), "192.0.2.1", 10, 0), Verdict::Drop), 9);
    }

    #[test]
    fn clients_of_one_prefix_share_a_key_and_other_prefixes_do_not() {
        let l = limiter(4, 1, 0);
        for host in 1..=4 {
            assert_eq!(burst(&l, &format!("192.0.2.{host}"), 1, 0), [Verdict::Send]);
        }
        assert_eq!(burst(&l, "192.0.2.200", 1, 0), [Verdict::Drop], "same /24");
        assert_eq!(burst(&l, "192.0.3.1", 1, 0), [Verdict::Send], "another /24");
        // IPv6 by /56; an IPv4-mapped client is its IPv4 address.
        assert_eq!(l.prefix(ip("2001:db8:0:12ff::1")), (ip("2001:db8:0:1200::"), 56));
        assert_eq!(l.prefix(ip("::ffff:192.0.2.9")), (ip("192.0.2.0"), 24));
        assert_eq!(burst(&l, "::ffff:192.0.2.9", 1, 0), [Verdict::Drop]);
    }

    #[test]
    fn classes_and_names_are_counted_apart() {
        let l = limiter(1, 1, 0);
        let web = name("web.example.org.");
        let zone = name("example.org.");
        let client = ip("192.0.2.1");
        assert_eq!(
            l.check(client, Class::Positive, Some(web.suffix(0)), RecordType::A, 0)
                .0,
            Verdict::Send
        );
        assert_eq!(
            l.check(client, Class::Positive, Some(web.suffix(0)), RecordType::A, 0)
                .0,
            Verdict::Drop
        );
        assert_eq!(
            l.check(client, Class::Positive, Some(web.suffix(0)), RecordType::AAAA, 0)
                .0,
            Verdict::Send
        );
        assert_eq!(
            l.check(client, Class::NxDomain, Some(zone.suffix(0)), RecordType::NULL, 0)
                .0,
            Verdict::Send
        );
        assert_eq!(
            l.check(client, Class::NxDomain, Some(zone.suffix(0)), RecordType::NULL, 0)
                .0,
            Verdict::Drop
        );
        assert_eq!(
            l.check(client, Class::Error, None, RecordType::NULL, 0).0,
            Verdict::Send
        );
        assert_eq!(
            l.check(client, Class::Error, None, RecordType::NULL, 0).0,
            Verdict::Drop
        );
        assert_eq!(
            l.check(client, Class::Referral, Some(zone.suffix(0)), RecordType::NS, 0)
                .0,
            Verdict::Send
        );
        assert_eq!(
            l.check(client, Class::NoData, Some(web.suffix(0)), RecordType::NULL, 0)
                .0,
            Verdict::Send
        );
    }

    #[test]
    fn answers_are_classified_as_bind_does() {
        let q = Name::from_ascii("www.example.org.").expect("name");
        let zone = Name::from_ascii("example.org.").expect("name");
        let base = || {
            let mut m = Message::new(1, MessageType::Response, OpCode::Query);
            m.add_query(Query::query(q.clone(), RecordType::A));
            m.metadata.authoritative = true;
            m
        };
        let soa = Record::from_rdata(
            zone.clone(),
            30,
            RData::SOA(SOA::new(zone.clone(), zone.clone(), 1, 1, 1, 1, 1)),
        );
        let mut positive = base();
        positive
            .answers
            .push(Record::from_rdata(q.clone(), 60, RData::A(A::new(192, 0, 2, 1))));
        assert_eq!(Class::of(&positive), (Class::Positive, Some(key(&q)), RecordType::A));
        let mut nodata = base();
        nodata.authorities.push(soa.clone());
        assert_eq!(Class::of(&nodata).0, Class::NoData);
        let mut nx = base();
        nx.metadata.response_code = ResponseCode::NXDomain;
        nx.authorities.push(soa.clone());
        assert_eq!(Class::of(&nx), (Class::NxDomain, Some(key(&zone)), RecordType::NULL));
        // RFC 9824's compact answer to a DO client: NOERROR, no answers, NXNAME in the NSEC. Counted as
        // the NXDOMAIN it stands for, by the zone, so names drawn at random share one key.
        for random in ["a1.example.org.", "b2.example.org."] {
            let owner = Name::from_ascii(random).expect("name");
            let mut compact = base();
            compact.queries[0] = Query::query(owner.clone(), RecordType::A);
            compact.authorities.push(soa.clone());
            let nsec = crate::dnssec::denial::nxname(&owner).expect("an NSEC");
            compact.authorities.push(Record::from_rdata(owner, 30, nsec));
            assert_eq!(
                Class::of(&compact),
                (Class::NxDomain, Some(key(&zone)), RecordType::NULL)
            );
        }
        let mut typed_nodata = base();
        typed_nodata.authorities.push(soa.clone());
        let nsec = crate::dnssec::denial::at_name(&q, [RecordType::AAAA]).expect("an NSEC");
        typed_nodata.authorities.push(Record::from_rdata(q.clone(), 30, nsec));
        assert_eq!(
            Class::of(&typed_nodata).0,
            Class::NoData,
            "an NSEC without NXNAME is NODATA"
        );
        let mut referral = base();
        referral.metadata.authoritative = false;
        let cut = Name::from_ascii("sub.example.org.").expect("name");
        referral
            .authorities
            .push(Record::from_rdata(cut.clone(), 60, RData::NS(NS(zone.clone()))));
        assert_eq!(Class::of(&referral), (Class::Referral, Some(key(&cut)), RecordType::NS));
        let mut refused = base();
        refused.metadata.authoritative = false;
        refused.metadata.response_code = ResponseCode::Refused;
        assert_eq!(Class::of(&refused).0, Class::Error);
    }

    #[test]
    fn the_table_stays_its_size_under_a_flood_from_many_prefixes() {
        let l = Limiter::new(RrlConfig {
            responses_per_second: 1,
            table_size: 64,
            ..RrlConfig::default()
        });
        let web = name("web.example.org.");
        for n in 0u32..100_000 {
            let client = IpAddr::from((n << 8).to_be_bytes());
            let _ = l.check(client, Class::Positive, Some(web.suffix(0)), RecordType::A, 0);
        }
        assert_eq!(l.table_size(), 64);
        // Once the flood's slots have been idle past the window, a new client owns a slot of its own again.
        let later = 16;
        assert_eq!(burst(&l, "198.51.100.7", 1, later), [Verdict::Send]);
        assert_eq!(burst(&l, "198.51.100.7", 1, later), [Verdict::Drop]);
    }

    #[test]
    fn a_newly_limited_prefix_is_logged_once_and_logs_are_capped_a_second() {
        let l = limiter(1, 1, 2);
        let web = name("web.example.org.");
        let logs: Vec<Limited> = (0..10)
            .filter_map(|_| {
                l.check(ip("192.0.2.1"), Class::Positive, Some(web.suffix(0)), RecordType::A, 0)
                    .1
            })
            .collect();
        assert_eq!(
            logs,
            [Limited {
                prefix: ip("192.0.2.0"),
                length: 24,
                class: Class::Positive
            }]
        );
        let many = (0u32..100)
            .filter_map(|n| {
                let client = IpAddr::from(((10 << 24) | (n << 8)).to_be_bytes());
                l.check(client, Class::Positive, Some(web.suffix(0)), RecordType::A, 5);
                l.check(client, Class::Positive, Some(web.suffix(0)), RecordType::A, 5)
                    .1
            })
            .count();
        assert_eq!(many, LOG_LINES_PER_SECOND as usize);
        assert!(l.log.admit(6), "a new second, a new allowance");
    }
}
