//! What every query-path target asserts of a UDP answer, whatever zone and request made it.

use hickory_proto::op::{Message, MessageType};

/// The answer to `request`, decoded, after the checks every UDP answer passes: it decodes, answers a
/// query (never a response) with the request's ID, has QR set and RA clear, and fits the client's payload
/// size: 512 octets without EDNS, else the lesser of the client's size and ours (RFC 6891 §6.2.5).
pub fn checked(request: &[u8], answer: &[u8]) -> Message {
    let message = match Message::from_vec(answer) {
        Ok(m) => m,
        Err(e) => panic!("the answer to {request:02x?} does not decode: {e}\n{answer:02x?}"),
    };
    assert!(request.len() >= 12, "an answer to fewer bytes than a header");
    assert_eq!(
        message.metadata.id,
        u16::from_be_bytes([request[0], request[1]]),
        "the ID is echoed"
    );
    assert_eq!(message.message_type, MessageType::Response);
    assert_eq!(request[2] & 0x80, 0, "a response was answered");
    let limit = match Message::from_vec(request).ok().and_then(|r| r.edns) {
        Some(edns) => usize::from(edns.max_payload().clamp(512, 1232)),
        None => 512,
    };
    assert!(
        answer.len() <= limit,
        "{} bytes over UDP, more than the {limit} the client takes",
        answer.len()
    );
    assert!(!message.metadata.recursion_available, "RA is never set");
    message
}
