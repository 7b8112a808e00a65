//! DNS wire pieces shared by the RFC 2136 client (`extdns-provider-rfc2136`) and the built-in DNS server
//! (`extdns-dns-server`): both turn endpoints into record data and back ([`codec`]) and sign and check
//! messages with TSIG keys ([`tsig`]), and a record must read back from either exactly as the other wrote it.
//!
//! ```
//! use extdns_dns_wire::codec;
//! use extdns_endpoint::{RecordType, Target};
//!
//! let data = codec::rdata(&RecordType::Mx, &Target::from("10 mail.example.org")).unwrap();
//! let (record_type, target) = codec::target(&data).unwrap();
//! assert_eq!(record_type, RecordType::Mx);
//! assert_eq!(target.as_str(), "10 mail.example.org");
//! ```

pub mod codec;
pub mod key_spec;
mod names;
pub mod tsig;
pub mod typed;

pub use codec::CodecError;
pub use key_spec::KeySpecError;
pub use tsig::{
    Algorithm as TsigAlgorithm, Key as TsigKey, Refusal, RequestError, ResponseSigner, SignedRequest, TsigError,
    TsigFailure, Verifier, unix_now, verify_request,
};
