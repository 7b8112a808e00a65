//! Answers to ordinary queries from the zones (owned by the query-path work; this is the agreed
//! signature, answering REFUSED until it lands).

use hickory_proto::op::{Message, ResponseCode};

use crate::metrics::Transport;
use crate::zones::ZoneSet;

/// The answer to `request` (opcode QUERY, one question, not a transfer), at most `max_size` bytes on the
/// wire once encoded for UDP (the caller truncates and sets TC beyond it); TCP passes `u16::MAX`.
pub(crate) fn respond(_zones: &ZoneSet, request: &Message, _transport: Transport, _max_size: u16) -> Message {
    let mut response = Message::response(request.metadata.id, request.metadata.op_code);
    response.metadata.response_code = ResponseCode::Refused;
    response
}
