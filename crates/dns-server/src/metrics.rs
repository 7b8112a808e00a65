//! What the server counts, under `extdns_dns_server_*`: answers by transport and response code, and the
//! requests it refused or could not parse, so an operator sees abuse and misconfigured secondaries.

use std::fmt::Write as _;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

/// The transport a request came over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transport {
    /// UDP.
    Udp,
    /// TCP.
    Tcp,
}

/// Spelt `udp` and `tcp` in labels, as DNS servers' own metrics spell them (the derive would write `Udp`).
impl EncodeLabelValue for Transport {
    fn encode(&self, encoder: &mut LabelValueEncoder<'_>) -> Result<(), std::fmt::Error> {
        encoder.write_str(match self {
            Transport::Udp => "udp",
            Transport::Tcp => "tcp",
        })
    }
}

/// Labels of the answer counter.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct AnswerLabels {
    /// `udp` or `tcp`.
    pub transport: Transport,
    /// The response code sent (`NOERROR`, `NXDOMAIN`, `REFUSED`, ...).
    pub rcode: String,
}

/// The server's metrics; cheap to clone (each counter is shared).
#[derive(Debug, Clone, Default)]
pub struct ServerMetrics {
    /// Answers sent, by transport and response code.
    pub answers: Family<AnswerLabels, Counter>,
    /// Zone transfers served, by kind (`axfr`, `ixfr`, `ixfr_full` when the journal did not reach back,
    /// `ixfr_current` when the secondary was up to date).
    pub transfers: Family<KindLabels, Counter>,
    /// Transfers and signed requests refused, by reason (`address`, `key`, `badkey`, `badsig`, `badtime`,
    /// `badtrunc`, `malformed`, `udp`, `zone`).
    pub refused: Family<ReasonLabels, Counter>,
    /// NOTIFY messages to secondaries, by outcome (`acknowledged`, `refused`, `unanswered`, `failed`).
    pub notifies: Family<ResultLabels, Counter>,
    /// Requests whose header was readable but whose body was not: answered FORMERR.
    pub malformed: Family<TransportLabels, Counter>,
    /// Packets dropped without an answer, by reason (`short`: no full header; `response`: QR set, never
    /// answered so two servers cannot ping-pong).
    pub dropped: Family<DropLabels, Counter>,
    /// UDP answers sent header and question only, with TC set, for the client to ask over TCP.
    pub truncated: Counter,
    /// TCP connections closed as soon as accepted because `Limits::tcp_connections` were open.
    pub tcp_refused: Counter,
    /// Requests with a COOKIE option, by what it held (`valid`, `invalid`, `client_only`, `malformed`).
    pub cookies: Family<ResultLabels, Counter>,
    /// UDP answers rate limited and dropped (RRL), by answer class.
    pub rrl_limited: Family<ClassLabels, Counter>,
    /// UDP answers rate limited and slipped (sent truncated or as BADCOOKIE), by answer class.
    pub rrl_slipped: Family<ClassLabels, Counter>,
    /// DNS-over-TLS connections whose handshake failed or timed out.
    pub tls_handshake_failures: Counter,
    /// Reloads of the DNS-over-TLS certificate after its files changed, by result (`reloaded`, `failed`).
    pub tls_reloads: Family<ResultLabels, Counter>,
}

/// Labels of the rate limiter's counters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ClassLabels {
    /// The answer class (`positive`, `nodata`, `nxdomain`, `referral`, `error`).
    pub class: &'static str,
}

/// Labels of counters by transport only.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct TransportLabels {
    /// `udp` or `tcp`.
    pub transport: Transport,
}

/// Labels of the dropped-packet counter.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct DropLabels {
    /// `udp` or `tcp`.
    pub transport: Transport,
    /// Why nothing was answered.
    pub reason: &'static str,
}

/// Labels of the transfer counter.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct KindLabels {
    /// What was sent.
    pub kind: &'static str,
}

/// Labels of the refusal counter.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ReasonLabels {
    /// Why the request was refused.
    pub reason: &'static str,
}

/// Labels of the NOTIFY counter.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ResultLabels {
    /// How the NOTIFY ended.
    pub result: &'static str,
}

impl ServerMetrics {
    /// Registers every metric under `registry` (the binary passes a sub-registry prefixed `extdns_dns_server`).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "answers",
            "DNS answers sent, by transport and response code",
            self.answers.clone(),
        );
        registry.register(
            "transfers",
            "Zone transfers sent to secondaries, by kind (axfr, ixfr, ixfr_full, ixfr_current)",
            self.transfers.clone(),
        );
        registry.register(
            "refused",
            "Transfers and signed requests refused, by reason (address, key, badkey, badsig, badtime, badtrunc, malformed, udp, zone)",
            self.refused.clone(),
        );
        registry.register(
            "notifies",
            "NOTIFY messages sent to secondaries, by result (acknowledged, refused, unanswered, failed)",
            self.notifies.clone(),
        );
        registry.register(
            "malformed",
            "Requests that did not parse past the header, answered FORMERR, by transport",
            self.malformed.clone(),
        );
        registry.register(
            "dropped",
            "Packets dropped unanswered, by transport and reason (short, response)",
            self.dropped.clone(),
        );
        registry.register(
            "truncated",
            "UDP answers too large for the client, sent with TC set for a retry over TCP",
            self.truncated.clone(),
        );
        registry.register(
            "tcp_refused",
            "TCP connections closed at once because the connection cap was reached",
            self.tcp_refused.clone(),
        );
        registry.register(
            "cookies",
            "Requests with a DNS COOKIE option, by result (valid, invalid, client_only, malformed)",
            self.cookies.clone(),
        );
        registry.register(
            "rrl_limited",
            "UDP answers dropped by response rate limiting, by class (positive, nodata, nxdomain, referral, error)",
            self.rrl_limited.clone(),
        );
        registry.register(
            "rrl_slipped",
            "UDP answers slipped (truncated or BADCOOKIE) by response rate limiting, by class",
            self.rrl_slipped.clone(),
        );
        registry.register(
            "tls_handshake_failures",
            "DNS-over-TLS connections whose TLS handshake failed or timed out",
            self.tls_handshake_failures.clone(),
        );
        registry.register(
            "tls_reloads",
            "Reloads of the DNS-over-TLS certificate after its files changed, by result (reloaded, failed)",
            self.tls_reloads.clone(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transports_are_spelt_in_lower_case() {
        let metrics = ServerMetrics::default();
        let mut registry = Registry::with_prefix("extdns_dns_server");
        metrics.register(&mut registry);
        metrics
            .answers
            .get_or_create(&AnswerLabels {
                transport: Transport::Udp,
                rcode: "NOERROR".into(),
            })
            .inc();
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).expect("encodes");
        assert!(
            text.contains(r#"extdns_dns_server_answers_total{transport="udp",rcode="NOERROR"} 1"#),
            "{text}"
        );
    }
}
