//! DNSSEC online signing, opt-in per zone (docs/dnssec.md).
//!
//! A signed zone has one key, a CSK ([`ZoneKey`]), handed in as a value by whoever keeps it (the binary
//! keeps it in a Kubernetes Secret so every replica signs with the same key). The zone publishes its
//! DNSKEY, CDS and CDNSKEY at the apex; every record set is signed when it is written and its RRSIG kept
//! beside it ([`ZoneSigning`]), renewed before it expires (`crate::dnssec_renew`), a batch at a time; an
//! answer to a client that set DO gets the stored signatures (`crate::dnssec_answer`), and its denial, if
//! any, made on the spot with the fewest names possible ([`denial`]: RFC 9824's compact answers), the only
//! signing on the query path. Nothing here reads the zones: they call in.
//!
//! hickory-proto gives the primitives: the record types (DNSKEY, DS, CDS, CDNSKEY, RRSIG, NSEC), the
//! signed data of an RRset (`TBS`), and the signing keys over `ring`; the rest is here.

pub(crate) mod denial;
mod key;
mod signer;

use std::time::Duration;

use hickory_proto::dnssec::rdata::DNSSECRData;
use hickory_proto::rr::{Name, RData};

pub use key::{KeyAlgorithm, ZoneKey};
pub use signer::ZoneSigning;
use tracing::warn;

/// A signed zone's settings.
#[derive(Debug, Clone)]
pub struct DnssecConfig {
    /// The zone's key.
    pub key: ZoneKey,
    /// How long a new signature is valid, in seconds (before the jitter of up to a quarter more).
    pub validity_secs: u32,
}

impl DnssecConfig {
    /// The default validity: 14 days, as BIND's `signatures-validity`, so a replica that stops renewing
    /// still serves valid signatures for a week.
    pub const DEFAULT_VALIDITY: Duration = Duration::from_secs(14 * 86_400);

    /// `key` with the default validity.
    pub fn new(key: ZoneKey) -> DnssecConfig {
        DnssecConfig {
            key,
            validity_secs: u32::try_from(Self::DEFAULT_VALIDITY.as_secs()).unwrap_or(u32::MAX),
        }
    }
}

/// Why a key could not be made, read or used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DnssecError {
    /// An algorithm not offered.
    #[error("unknown DNSSEC algorithm {0:?}: use ECDSAP256SHA256 (13) or ED25519 (15)")]
    Algorithm(String),
    /// The random source failed while making a key.
    #[error("cannot generate a {0} key")]
    Generate(KeyAlgorithm),
    /// The bytes are not a PKCS #8 key of the algorithm.
    #[error("the key is not a PKCS #8 {0} private key")]
    Key(KeyAlgorithm),
    /// hickory could not sign or derive.
    #[error("DNSSEC operation failed")]
    Dnssec(#[source] hickory_proto::dnssec::DnsSecError),
    /// hickory could not encode.
    #[error("cannot encode DNSSEC data")]
    Proto(#[source] hickory_proto::ProtoError),
    /// A record set with no records has nothing to sign.
    #[error("an empty record set has no signature")]
    Empty,
}

/// The clock as signatures count it: seconds since the epoch, in serial-number arithmetic.
pub(crate) fn now() -> u32 {
    // RFC 4034 §3.1.5: the fields are the low 32 bits of the time; they wrap in 2106.
    (extdns_dns_wire::unix_now() & u64::from(u32::MAX)) as u32
}

/// The signer of a zone its configuration signs; `None` for an unsigned zone, or (logged) when the key
/// cannot sign, which a [`ZoneKey`] made by [`ZoneKey::generate`] or [`ZoneKey::from_pkcs8`] always can.
pub(crate) fn signing_of(origin: &Name, dnssec: Option<&DnssecConfig>) -> Option<Box<ZoneSigning>> {
    match ZoneSigning::new(origin, dnssec?) {
        Ok(signing) => Some(Box::new(signing)),
        Err(e) => {
            tracing::error!(zone = %origin, error = %e, "the zone's DNSSEC key cannot sign: serving it unsigned");
            None
        }
    }
}

/// The records a signed zone publishes at its apex, one set each: DNSKEY, CDS and CDNSKEY (RFC 7344, so a
/// parent that scans for them can take the DS itself); none for an unsigned zone.
pub(crate) fn apex_data(origin: &Name, dnssec: Option<&DnssecConfig>) -> Vec<RData> {
    let Some(dnssec) = dnssec else {
        return Vec::new();
    };
    let key = &dnssec.key;
    let data = [
        key.dnskey().map(DNSSECRData::DNSKEY),
        key.cds(origin).map(DNSSECRData::CDS),
        key.cdnskey().map(DNSSECRData::CDNSKEY),
    ];
    data.into_iter()
        .filter_map(|d| match d {
            Ok(d) => Some(RData::DNSSEC(d)),
            Err(e) => {
                warn!(zone = %origin, error = %e, "cannot publish a key record");
                None
            }
        })
        .collect()
}
