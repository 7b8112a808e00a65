//! The DNS model extdns works in, with external-dns's semantics so records, TXT ownership and the webhook
//! wire format stay compatible: an [`Endpoint`] is one DNS name of one record type with its targets.
//!
//! Everything here is pure data: no IO, no Kubernetes. Sources produce endpoints, the plan compares them,
//! registries and providers store them.
//!
//! ```
//! use extdns_endpoint::{Endpoint, RecordType, Ttl, label};
//!
//! let web = Endpoint::new("web.example.org", RecordType::A, ["192.0.2.10", "192.0.2.11"])
//!     .with_ttl(Ttl(300))
//!     .with_label(label::OWNER, "my-cluster");
//! assert_eq!(web.targets.len(), 2);
//! assert_eq!(web.labels.get(label::OWNER).map(String::as_str), Some("my-cluster"));
//!
//! // The JSON is external-dns's (the webhook protocol's) endpoint.
//! let json = serde_json::to_string(&web)?;
//! assert!(json.contains(r#""dnsName":"web.example.org""#));
//! assert!(json.contains(r#""recordTTL":300"#));
//! # Ok::<(), serde_json::Error>(())
//! ```

mod changes;
mod domain_filter;
mod endpoint;
/// The `\DDD` and `\X` escapes of zone-file text, decoded by one rule.
pub mod escape;
pub mod go_duration;
mod labels;
/// Helpers on DNS names: normal form, comparison and zone matching.
pub mod name;
mod null;
mod object_refs;
mod rdata;
mod record_type;
/// Shared names: one record several owners publish together (docs/shared-names.md).
pub mod shared;
mod target;
mod target_filter;
mod targets;
/// TXT data as character-strings of at most 255 octets: cut, quoted, read back joined.
pub mod txt;
mod validation;

pub use changes::{Change, Changes, RecordName, UnpairedUpdates};
pub use domain_filter::{DomainFilter, DomainFilterError};
pub use endpoint::{
    Endpoint, EndpointKey, ProviderSpecific, ProviderSpecificProperty, Ttl, merge_endpoints, suitable_type,
};
pub use extdns_object::ObjectKey;
pub use labels::{Labels, label};
pub use object_refs::ObjectRefs;
pub use rdata::{
    InvalidRdata, RdataProblem, SvcParamKey, SvcParamValue, SvcParams, Svcb, Tlsa, canonical_target,
    canonicalize_targets,
};
pub use record_type::RecordType;
pub use target::{Target, TargetKind};
pub use target_filter::{NetworkList, TargetNetFilter, TargetNetFilterError};
pub use targets::Targets;
pub use validation::{AddressFamily, InvalidEndpoint, validate_dns_name, validate_endpoint};
