//! NOTIFY (RFC 1996): after a write moves a zone's serial, each secondary is told over UDP, so it asks for
//! the change (IXFR) within moments instead of at its next SOA refresh.
//!
//! The loop only reads the zones briefly, never blocks a write, and coalesces a burst of writes into one
//! NOTIFY per zone and secondary. It also settles the zones' serials (`crate::zones`: the same on every
//! replica once the span of the last change is over), which a secondary is then told of like a change. Each NOTIFY is retried with backoff until the secondary answers, a bounded
//! number of times; a newer change of the same zone replaces a NOTIFY still being retried.

use std::collections::HashMap;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use extdns_dns_wire::{TsigError, TsigFailure, TsigKey, Verifier, unix_now};
use extdns_provider::backoff::Backoff;
use hickory_proto::op::{Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::{DNSClass, LowerName, Name, Record, RecordType};
use tokio::net::UdpSocket;
use tokio::task::{AbortHandle, JoinSet};
use tokio_util::sync::CancellationToken;

use crate::config::ServerConfig;
use crate::metrics::{ResultLabels, ServerMetrics};
use crate::zones::Zones;

/// How long after a change the loop waits for more before notifying: one sync writes its changes in a few
/// calls, and one NOTIFY covers them all.
const COALESCE: Duration = Duration::from_millis(20);

/// How long to wait for each answer: 250 ms, doubling, capped at 4 s, 5 tries (about 8 s in all, as BIND
/// gives up after a handful of retries too).
fn backoff() -> Backoff {
    Backoff {
        initial: Duration::from_millis(250),
        max: Duration::from_secs(4),
        multiplier: 2.0,
        jitter: 0.2,
        max_attempts: 5,
        throttled_for: extdns_provider::backoff::DEFAULT_THROTTLED_FOR,
    }
}

/// One secondary to notify: where, and the key to sign with.
#[derive(Debug, Clone)]
struct Target {
    address: SocketAddr,
    key: Option<TsigKey>,
}

/// Runs until `shutdown`: settles each zone's serial when the span of its last change is over
/// ([`Zones::settle`]), and sends NOTIFY for every zone whose serial moved since the last one sent.
pub(crate) async fn run(
    zones: Arc<Zones>,
    config: Arc<ServerConfig>,
    metrics: ServerMetrics,
    shutdown: CancellationToken,
) {
    let targets = targets(&config);
    let refusals: Arc<[AtomicBool]> = targets.iter().map(|_| AtomicBool::new(false)).collect();
    let mut changes = zones.subscribe();
    let serials = |zones: &Zones| -> HashMap<LowerName, (u32, Record)> {
        zones
            .read()
            .zones()
            .iter()
            // Only serials every replica gives the same content (settled ones, when serials settle): a
            // secondary told of a provisional one could take this replica's content under a number
            // another replica gives other content.
            .filter(|z| z.serial_is_shared())
            .map(|z| (z.lower_origin().clone(), (z.serial(), z.soa())))
            .collect()
    };
    // Secondaries read the zones at startup by themselves (their refresh); NOTIFY is for changes.
    let mut notified: HashMap<LowerName, u32> = serials(&zones).into_iter().map(|(k, (s, _))| (k, s)).collect();
    let mut tasks = JoinSet::new();
    let mut running: HashMap<(LowerName, usize), AbortHandle> = HashMap::new();
    loop {
        let settle = until_settled(&zones);
        tokio::select! {
            _ = shutdown.cancelled() => break,
            changed = changes.changed() => if changed.is_err() { break },
            () = tokio::time::sleep(settle.unwrap_or(Duration::MAX)), if settle.is_some() => {
                // A settled serial wakes `changes`, and is notified on the next turn. Signatures whose
                // renewal instant came are renewed first, so no settled serial (the same number on
                // every replica) is published with the ones they replace.
                let now = crate::dnssec::now();
                crate::dnssec_renew::renew(&zones, now);
                zones.settle(now);
                continue;
            }
        }
        if targets.is_empty() {
            changes.borrow_and_update();
            continue;
        }
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = tokio::time::sleep(COALESCE) => {}
        }
        changes.borrow_and_update();
        for (origin, (serial, soa)) in serials(&zones) {
            if notified.get(&origin) == Some(&serial) {
                continue;
            }
            notified.insert(origin.clone(), serial);
            for (i, target) in targets.iter().enumerate() {
                if let Some(previous) = running.remove(&(origin.clone(), i)) {
                    previous.abort();
                }
                let refused = Refusals {
                    flags: refusals.clone(),
                    index: i,
                };
                let handle = tasks.spawn(notify(target.clone(), soa.clone(), metrics.clone(), refused));
                running.insert((origin.clone(), i), handle);
            }
        }
        while tasks.try_join_next().is_some() {}
        running.retain(|_, handle| !handle.is_finished());
    }
    tasks.abort_all();
}

/// How long until a zone's serial is due to settle, if one is: a tenth of a second past the second it
/// is due, so the clock read then has reached it.
fn until_settled(zones: &Zones) -> Option<Duration> {
    let at = zones.settles_at()?;
    let now = extdns_dns_wire::unix_now();
    let wait = u64::from(at).saturating_sub(now);
    Some(Duration::from_secs(wait) + Duration::from_millis(100))
}

/// Whether a secondary's last NOTIFY was refused: a secondary that follows the replicas' Service
/// accepts NOTIFY from one address and refuses the others' on every change, which is worth one warning,
/// not one a change. Logged at warn when it starts refusing, at debug while it goes on.
#[derive(Debug, Clone)]
struct Refusals {
    flags: Arc<[AtomicBool]>,
    index: usize,
}

impl Refusals {
    /// Notes a refusal; whether it is the first since the secondary last acknowledged one.
    fn refused(&self) -> bool {
        self.flags
            .get(self.index)
            .is_some_and(|f| !f.swap(true, std::sync::atomic::Ordering::Relaxed))
    }

    /// Notes an acknowledgement.
    fn acknowledged(&self) {
        if let Some(f) = self.flags.get(self.index) {
            f.store(false, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

fn targets(config: &ServerConfig) -> Vec<Target> {
    config
        .secondaries
        .iter()
        .filter_map(|s| {
            let key = match &s.key {
                None => None,
                Some(name) => {
                    let wanted = name.to_ascii().trim_end_matches('.').to_ascii_lowercase();
                    let found = config.keys.iter().find(|k| k.name().eq_ignore_ascii_case(&wanted));
                    if found.is_none() {
                        // The binary checks this when it reads the flags; a library caller may not have.
                        tracing::error!(secondary = %s.address, key = %wanted, "the secondary's TSIG key is not configured; it is not notified");
                        return None;
                    }
                    found.cloned()
                }
            };
            Some(Target {
                address: s.address,
                key,
            })
        })
        .collect()
}

/// How one NOTIFY ended.
#[derive(Debug)]
enum Outcome {
    Acknowledged,
    Refused(ResponseCode),
    Unanswered,
    Failed(NotifyError),
}

impl Outcome {
    /// The `result` label it is counted under.
    fn label(&self) -> &'static str {
        match self {
            Outcome::Acknowledged => "acknowledged",
            Outcome::Refused(_) => "refused",
            Outcome::Unanswered => "unanswered",
            Outcome::Failed(_) => "failed",
        }
    }
}

/// Why a NOTIFY could not be sent, or its answer not be trusted.
#[derive(Debug, thiserror::Error)]
enum NotifyError {
    /// No UDP socket to send from.
    #[error("cannot open a UDP socket: {0}")]
    Socket(#[source] std::io::Error),
    /// The secondary's address cannot be connected to.
    #[error("cannot reach {address}: {source}")]
    Connect {
        /// The secondary.
        address: SocketAddr,
        /// The socket's error.
        #[source]
        source: std::io::Error,
    },
    /// The NOTIFY could not be signed with the secondary's key.
    #[error("cannot sign the NOTIFY: {0}")]
    Sign(#[source] TsigError),
    /// The NOTIFY could not be encoded.
    #[error("cannot encode the NOTIFY: {0}")]
    Encode(#[source] hickory_proto::ProtoError),
    /// The answer's TSIG does not verify.
    #[error("the answer's TSIG: {0:?}")]
    AnswerTsig(TsigFailure),
}

/// Sends one NOTIFY for the zone of `soa` to `target`, retrying until it answers, and counts the outcome.
async fn notify(target: Target, soa: Record, metrics: ServerMetrics, refusals: Refusals) {
    let zone = soa.name.clone();
    let outcome = send(&target, &soa, &backoff()).await;
    let secondary = target.address;
    match &outcome {
        Outcome::Acknowledged => {
            refusals.acknowledged();
            tracing::debug!(%zone, %secondary, "NOTIFY acknowledged")
        }
        Outcome::Refused(rcode) if refusals.refused() => {
            tracing::warn!(%zone, %secondary, %rcode, "the secondary refused NOTIFY; check its configuration names this server as primary (a secondary that follows the replicas' Service accepts NOTIFY from one address only: further refusals are logged at debug until it acknowledges one)")
        }
        Outcome::Refused(rcode) => {
            tracing::debug!(%zone, %secondary, %rcode, "the secondary refused NOTIFY again")
        }
        Outcome::Unanswered => {
            tracing::warn!(%zone, %secondary, "the secondary did not answer NOTIFY; it will see the change at its next SOA refresh")
        }
        Outcome::Failed(error) => tracing::warn!(%zone, %secondary, %error, "NOTIFY failed"),
    }
    let result = outcome.label();
    metrics.notifies.get_or_create(&ResultLabels { result }).inc();
}

async fn send(target: &Target, soa: &Record, backoff: &Backoff) -> Outcome {
    let local: SocketAddr = match target.address {
        SocketAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
        SocketAddr::V6(_) => (Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let socket = match UdpSocket::bind(local).await {
        Ok(s) => s,
        Err(e) => return Outcome::Failed(NotifyError::Socket(e)),
    };
    // Connected: the kernel drops datagrams from anyone but the secondary.
    if let Err(source) = socket.connect(target.address).await {
        let address = target.address;
        return Outcome::Failed(NotifyError::Connect { address, source });
    }
    let mut buf = vec![0u8; 4096];
    for attempt in 0..backoff.max_attempts.max(1) {
        let Notify { id, wire, mac } = match message(&soa.name, soa, target.key.as_ref()) {
            Ok(m) => m,
            Err(e) => return Outcome::Failed(e),
        };
        if let Err(e) = socket.send(&wire).await {
            // ICMP errors (nothing listening yet) surface here on a connected socket: retry like a timeout.
            tracing::debug!(secondary = %target.address, error = %e, "sending NOTIFY failed");
        }
        let deadline = tokio::time::Instant::now() + backoff.delay(attempt);
        loop {
            let received = tokio::time::timeout_at(deadline, socket.recv(&mut buf)).await;
            let Ok(Ok(n)) = received else {
                if let Ok(Err(e)) = received {
                    tracing::debug!(secondary = %target.address, error = %e, "no answer to NOTIFY");
                    tokio::time::sleep_until(deadline).await;
                }
                break;
            };
            let answer = &buf[..n];
            let Ok(reply) = Message::from_vec(answer) else { continue };
            if reply.metadata.id != id || reply.metadata.message_type != MessageType::Response {
                continue;
            }
            if let (Some(key), Some(mac)) = (&target.key, mac.clone()) {
                let mut verifier = Verifier::new(key, mac, unix_now());
                if let Err(failure) = verifier.check(answer) {
                    return Outcome::Failed(NotifyError::AnswerTsig(failure));
                }
            }
            return match reply.metadata.response_code {
                ResponseCode::NoError => Outcome::Acknowledged,
                rcode => Outcome::Refused(rcode),
            };
        }
    }
    Outcome::Unanswered
}

/// A NOTIFY ready to send: its ID, wire form, and the MAC a signed answer chains from.
struct Notify {
    id: u16,
    wire: Vec<u8>,
    mac: Option<Vec<u8>>,
}

/// A NOTIFY for `zone` carrying its current SOA (RFC 1996 §3.7), signed when `key` is given.
fn message(zone: &Name, soa: &Record, key: Option<&TsigKey>) -> Result<Notify, NotifyError> {
    let id = getrandom::u32().map(|r| r as u16).unwrap_or_else(|_| unix_now() as u16);
    let mut message = Message::new(id, MessageType::Query, OpCode::Notify);
    message.metadata.authoritative = true;
    let mut query = Query::query(zone.clone(), RecordType::SOA);
    query.set_query_class(DNSClass::IN);
    message.add_query(query);
    message.add_answer(soa.clone());
    let (wire, mac) = match key {
        Some(key) => key
            .sign(&mut message, unix_now())
            .map(|(wire, mac)| (wire, Some(mac)))
            .map_err(NotifyError::Sign)?,
        None => (message.to_vec().map_err(NotifyError::Encode)?, None),
    };
    Ok(Notify { id, wire, mac })
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use extdns_dns_wire::TsigAlgorithm;
    use hickory_proto::rr::RData;

    use super::*;
    use crate::config::Limits;
    use crate::zones::tests::zone_config;

    fn quick() -> Backoff {
        Backoff {
            initial: Duration::from_millis(50),
            max: Duration::from_millis(50),
            multiplier: 1.0,
            jitter: 0.0,
            max_attempts: 3,
            throttled_for: extdns_provider::backoff::DEFAULT_THROTTLED_FOR,
        }
    }

    fn soa() -> Record {
        let zones = Zones::new(&[zone_config("example.org.")], 42, Limits::default());
        zones.read().zones()[0].soa()
    }

    /// A secondary stand-in that answers the `n`th NOTIFY it gets (counting from 1) with `rcode`, signed
    /// with `key` when given; returns what it received.
    async fn secondary(
        answer_at: usize,
        rcode: ResponseCode,
        key: Option<TsigKey>,
    ) -> (SocketAddr, tokio::task::JoinHandle<Vec<Message>>) {
        let socket = UdpSocket::bind("127.0.0.1:0").await.expect("bind");
        let addr = socket.local_addr().expect("addr");
        let task = tokio::spawn(async move {
            let mut got = Vec::new();
            let mut buf = vec![0u8; 4096];
            while let Ok(Ok((n, from))) = tokio::time::timeout(Duration::from_secs(2), socket.recv_from(&mut buf)).await
            {
                let wire = buf[..n].to_vec();
                let Ok(request) = Message::from_vec(&wire) else {
                    continue;
                };
                got.push(request.clone());
                if got.len() == answer_at {
                    let mut reply = Message::response(request.metadata.id, OpCode::Notify);
                    reply.metadata.response_code = rcode;
                    reply.add_queries(request.queries.iter().cloned());
                    let mut bytes = reply.to_vec().expect("encode");
                    if let Some(key) = &key {
                        let signed = extdns_dns_wire::verify_request(std::slice::from_ref(key), &wire, unix_now())
                            .expect("the NOTIFY verifies with the shared key");
                        signed.signer().sign(&mut bytes, unix_now()).expect("sign");
                    }
                    socket.send_to(&bytes, from).await.expect("send");
                    break;
                }
            }
            got
        });
        (addr, task)
    }

    #[test]
    fn a_secondary_that_keeps_refusing_is_warned_about_once_until_it_acknowledges() {
        let flags: Arc<[AtomicBool]> = (0..2).map(|_| AtomicBool::new(false)).collect();
        let first = Refusals {
            flags: flags.clone(),
            index: 0,
        };
        let second = Refusals { flags, index: 1 };
        assert!(first.refused(), "the first refusal is warned about");
        assert!(!first.refused(), "the next ones are not");
        assert!(second.refused(), "each secondary apart");
        first.acknowledged();
        assert!(first.refused(), "refusing again after an acknowledgement is news");
    }

    #[tokio::test]
    async fn a_zones_serial_settles_once_its_span_is_over() {
        let limits = Limits {
            serial_cell: Some(Duration::from_secs(2)),
            ..Limits::default()
        };
        let zones = Arc::new(Zones::new(&[zone_config("example.org.")], 1, limits));
        assert_eq!(until_settled(&zones), None, "nothing changed");
        {
            let mut set = zones.write();
            set.zones_mut()[0].commit(crate::dnssec::now(), vec![], vec![]);
        }
        let provisional = zones.read().zones()[0].serial();
        let wait = until_settled(&zones).expect("due to settle");
        assert!(wait <= Duration::from_millis(2_100), "{wait:?}");
        let shutdown = CancellationToken::new();
        let config = Arc::new(crate::ServerConfig::new(Vec::new(), Vec::new()));
        let task = tokio::spawn(run(zones.clone(), config, ServerMetrics::default(), shutdown.clone()));
        let mut changes = zones.subscribe();
        tokio::time::timeout(Duration::from_secs(10), changes.changed())
            .await
            .expect("settled within the span and a bit")
            .expect("zones alive");
        let settled = zones.read().zones()[0].serial();
        assert!(
            crate::serial::after(settled, provisional),
            "{settled} after {provisional}"
        );
        assert_eq!(until_settled(&zones), None);
        shutdown.cancel();
        task.await.expect("the loop ends");
    }

    #[tokio::test]
    async fn a_notify_is_retried_until_the_secondary_answers_and_carries_the_soa() {
        let (address, secondary) = secondary(2, ResponseCode::NoError, None).await;
        let outcome = send(&Target { address, key: None }, &soa(), &quick()).await;
        assert!(matches!(outcome, Outcome::Acknowledged), "{outcome:?}");
        let got = secondary.await.expect("secondary");
        assert_eq!(got.len(), 2, "answered on the second try");
        let first = &got[0];
        assert_eq!(first.metadata.op_code, OpCode::Notify);
        assert!(first.metadata.authoritative);
        assert_eq!(first.queries[0].query_type(), RecordType::SOA);
        assert_eq!(first.queries[0].name(), &Name::from_str("example.org.").expect("name"));
        assert!(matches!(&first.answers[0].data, RData::SOA(s) if s.serial == 42));
    }

    #[tokio::test]
    async fn a_signed_notify_verifies_and_a_refusal_or_silence_ends_it() {
        let key = TsigKey::new("notify-key", TsigAlgorithm::HmacSha256, b"shared").expect("key");
        let (address, secondary_task) = secondary(1, ResponseCode::NoError, Some(key.clone())).await;
        let target = Target {
            address,
            key: Some(key.clone()),
        };
        let outcome = send(&target, &soa(), &quick()).await;
        assert!(matches!(outcome, Outcome::Acknowledged), "{outcome:?}");
        assert!(secondary_task.await.expect("secondary")[0].signature.is_some());

        let (address, _secondary) = secondary(1, ResponseCode::Refused, None).await;
        let outcome = send(&Target { address, key: None }, &soa(), &quick()).await;
        assert!(
            matches!(outcome, Outcome::Refused(ResponseCode::Refused)),
            "{outcome:?}"
        );

        let (address, silent) = secondary(usize::MAX, ResponseCode::NoError, None).await;
        let outcome = send(&Target { address, key: None }, &soa(), &quick()).await;
        assert!(matches!(outcome, Outcome::Unanswered), "{outcome:?}");
        drop(silent);
    }
}
