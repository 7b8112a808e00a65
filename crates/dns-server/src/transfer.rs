//! Zone transfers (AXFR, IXFR), TSIG-signed requests and NOTIFY (owned by the transfer work; this is the
//! agreed interface, refusing everything until it lands).

use std::net::SocketAddr;
use std::sync::Arc;

use hickory_proto::op::{Message, ResponseCode};
use hickory_proto::rr::RecordType;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use crate::config::ServerConfig;
use crate::metrics::ServerMetrics;
use crate::zones::Zones;

/// Whether `request` is handled here rather than by [`crate::answer`]: a transfer, or any signed request.
pub(crate) fn handles(request: &Message) -> bool {
    request.signature.is_some()
        || request
            .queries
            .first()
            .is_some_and(|q| matches!(q.query_type(), RecordType::AXFR | RecordType::IXFR))
}

/// Transfers, signed requests and NOTIFY, over the served zones.
#[derive(Debug)]
pub(crate) struct Transfers {
    #[allow(dead_code)]
    zones: Arc<Zones>,
    #[allow(dead_code)]
    config: Arc<ServerConfig>,
    #[allow(dead_code)]
    metrics: ServerMetrics,
}

impl Transfers {
    pub(crate) fn new(zones: Arc<Zones>, config: Arc<ServerConfig>, metrics: ServerMetrics) -> Transfers {
        Transfers { zones, config, metrics }
    }

    /// Answers a request [`handles`] accepts over TCP: writes each message of the answer, prefixed by its
    /// length (RFC 7766).
    pub(crate) async fn serve_tcp<W: AsyncWrite + Unpin + Send>(
        &self,
        _wire: &[u8],
        request: &Message,
        _peer: SocketAddr,
        out: &mut W,
    ) -> std::io::Result<()> {
        let bytes = refused(request);
        let len = u16::try_from(bytes.len()).unwrap_or(u16::MAX);
        out.write_all(&len.to_be_bytes()).await?;
        out.write_all(&bytes).await
    }

    /// Answers a request [`handles`] accepts over UDP: the one message to send, if any.
    pub(crate) fn respond_udp(
        &self,
        _wire: &[u8],
        request: &Message,
        _peer: SocketAddr,
        _max_size: u16,
    ) -> Option<Vec<u8>> {
        Some(refused(request))
    }

    /// Sends NOTIFY to the secondaries after every change, until `shutdown`.
    pub(crate) async fn notify(self: Arc<Self>, shutdown: CancellationToken) {
        shutdown.cancelled().await;
    }
}

fn refused(request: &Message) -> Vec<u8> {
    let mut response = Message::response(request.metadata.id, request.metadata.op_code);
    response.metadata.response_code = ResponseCode::Refused;
    response.add_queries(request.queries.iter().cloned());
    response.to_vec().unwrap_or_default()
}
