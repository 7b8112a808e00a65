//! What the server counts, under `extdns_dns_server_*`: answers by transport and response code, and the
//! requests it refused or could not parse, so an operator sees abuse and misconfigured secondaries.

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

/// The transport a request came over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, EncodeLabelValue)]
pub enum Transport {
    /// UDP.
    Udp,
    /// TCP.
    Tcp,
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
}

impl ServerMetrics {
    /// Registers every metric under `registry` (the binary passes a sub-registry prefixed `extdns_dns_server`).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "answers",
            "DNS answers sent, by transport and response code",
            self.answers.clone(),
        );
    }
}
