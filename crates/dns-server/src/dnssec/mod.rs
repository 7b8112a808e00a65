//! DNSSEC online signing, opt-in per zone (docs/dnssec.md).
//!
//! A signed zone has one key, a CSK ([`ZoneKey`]), handed in as a value by whoever keeps it (the binary
//! keeps it in a Kubernetes Secret so every replica signs with the same key). The zone publishes its
//! DNSKEY, CDS and CDNSKEY at the apex; every record set is signed when it is written and its RRSIG kept
//! beside it ([`ZoneSigning`]), renewed before it expires (`crate::dnssec_renew`), a batch at a time; an
//! answer to a client that set DO gets the stored signatures (`crate::dnssec_answer`), and its denial, if
//! any, from the zone's NSEC chain, signed as it is written: nothing is signed on the query path, and the
//! stored RRSIGs and NSECs are written into an answer as the bytes they are kept as (`crate::wire`).
//! Nothing here reads the zones: they call in.
//!
//! hickory-proto gives the primitives: the record types (DNSKEY, DS, CDS, CDNSKEY, RRSIG, NSEC), the
//! signed data of an RRset (`TBS`), and the signing keys over `ring`; the rest is here.

mod chain;
pub(crate) mod denial;
mod key;
pub mod rollover;
mod signer;

use std::time::Duration;

use hickory_proto::dnssec::rdata::DNSSECRData;
use hickory_proto::rr::{Name, RData, RecordType};

pub(crate) use chain::ZoneNames;
pub use key::{KeyAlgorithm, ZoneKey};
pub use rollover::ZoneKeys;
#[cfg(test)]
pub(crate) use signer::INCEPTION_SKEW;
pub use signer::ZoneSigning;
#[cfg(test)]
pub(crate) use signer::tests::signed as signatures_made;
pub(crate) use signer::{Nsec, Signed};
use tokio::sync::watch;
use tracing::warn;

/// A signed zone's settings.
#[derive(Debug, Clone)]
pub struct DnssecConfig {
    /// The zone's key: it signs every set, and CDS and CDNSKEY name it.
    pub key: ZoneKey,
    /// During a rollover, the other key: published beside `key` and signing the DNSKEY set too
    /// ([`rollover`]).
    pub standby: Option<ZoneKey>,
    /// How long a new signature is valid, in seconds (before the jitter of up to a quarter more).
    pub validity_secs: u32,
    /// The keys as they change while the server runs (a rollover's steps): the server re-publishes the
    /// key sets and re-signs the zone, a batch at a time, on each change. `None`: the keys never change.
    pub updates: Option<watch::Receiver<ZoneKeys>>,
    /// The largest TTL a record of the zone is served with (`--dns-server-dnssec-max-zone-ttl`): a
    /// rollover retires the old key that long after the new one signs, so a set cached longer would
    /// outlive the key that signed it. A larger TTL asked for is capped to it. `None`: no bound.
    pub max_ttl: Option<u32>,
}

impl DnssecConfig {
    /// The default validity: 14 days, as BIND's `signatures-validity`, so a replica that stops renewing
    /// still serves valid signatures for a week.
    pub const DEFAULT_VALIDITY: Duration = Duration::from_secs(14 * 86_400);

    /// `key` with the default validity.
    pub fn new(key: ZoneKey) -> DnssecConfig {
        DnssecConfig {
            key,
            standby: None,
            validity_secs: u32::try_from(Self::DEFAULT_VALIDITY.as_secs()).unwrap_or(u32::MAX),
            updates: None,
            max_ttl: None,
        }
    }

    /// The keys signing now, as configured.
    pub fn keys(&self) -> ZoneKeys {
        ZoneKeys {
            signer: self.key.clone(),
            standby: self.standby.clone(),
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
    /// A rollover state that is not `requested` or `published=T[ active=T[ ds-swapped=T]]`.
    #[error(
        "{0:?} is not a rollover state: want `requested` or `published=SECONDS [active=SECONDS [ds-swapped=SECONDS]]`"
    )]
    RollState(String),
    /// The parent's DS was said swapped before the new key signs.
    #[error("the new key does not sign yet: its DS goes to the parent once CDS names it (the rollover logs it)")]
    NotActive,
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

/// The record sets a signed zone publishes at its apex, one per type: DNSKEY (the signer, and the standby
/// key during a rollover), CDS and CDNSKEY (the signer only, so a parent that scans for them (RFC 7344)
/// takes the DS of the key that signs); none for an unsigned zone.
pub(crate) fn apex_data(origin: &Name, keys: Option<&ZoneKeys>) -> Vec<(RecordType, Vec<RData>)> {
    let Some(keys) = keys else {
        return Vec::new();
    };
    let mut dnskeys = vec![keys.signer.dnskey()];
    dnskeys.extend(keys.standby.as_ref().map(ZoneKey::dnskey));
    let sets: [(RecordType, Vec<Result<DNSSECRData, DnssecError>>); 3] = [
        (
            RecordType::DNSKEY,
            dnskeys.into_iter().map(|d| d.map(DNSSECRData::DNSKEY)).collect(),
        ),
        (RecordType::CDS, vec![keys.signer.cds(origin).map(DNSSECRData::CDS)]),
        (
            RecordType::CDNSKEY,
            vec![keys.signer.cdnskey().map(DNSSECRData::CDNSKEY)],
        ),
    ];
    sets.into_iter()
        .map(|(record_type, data)| {
            let data = data
                .into_iter()
                .filter_map(|d| match d {
                    Ok(d) => Some(RData::DNSSEC(d)),
                    Err(e) => {
                        warn!(zone = %origin, error = %e, "cannot publish a key record");
                        None
                    }
                })
                .collect();
            (record_type, data)
        })
        .filter(|(_, data): &(RecordType, Vec<RData>)| !data.is_empty())
        .collect()
}
