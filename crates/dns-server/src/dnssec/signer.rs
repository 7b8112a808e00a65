//! A zone's signatures: one RRSIG per record set, made when the set is written (under the write lock
//! that writes it, never per query), kept beside the zone's nodes and renewed a batch at a time well
//! before it expires.
//!
//! A signature is valid from an hour before it is made (a validator's clock may lag) to the configured
//! validity plus a random quarter of it, so the sets of a first sync, signed within one second, fall due
//! for renewal spread over days rather than all at once; a set is re-signed once less than half its
//! validity remains, which leaves a resolver days to notice a server that stopped renewing.

use std::collections::HashMap;
use std::fmt;

use hickory_proto::dnssec::rdata::sig::SigInput;
use hickory_proto::dnssec::rdata::{DNSSECRData, RRSIG};
use hickory_proto::dnssec::{SigningKey, TBS};
use hickory_proto::rr::{DNSClass, LowerName, Name, RData, Record, RecordType, SerialNumber};

use super::{DnssecConfig, DnssecError};

/// How far back a signature's inception is put, for validators whose clocks lag ours.
const INCEPTION_SKEW: u32 = 3_600;

/// The signer of one zone and the signatures of its record sets. Cloned (the key shared) when a write
/// changes the signatures of a zone's next snapshot.
#[derive(Clone)]
pub struct ZoneSigning {
    key: std::sync::Arc<dyn SigningKey>,
    key_tag: u16,
    signer_name: Name,
    /// Seconds a new signature is valid for (before the jitter).
    validity: u32,
    signatures: HashMap<(LowerName, RecordType), Signature>,
}

impl fmt::Debug for ZoneSigning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ZoneSigning")
            .field("key_tag", &self.key_tag)
            .field("signer_name", &self.signer_name)
            .field("validity", &self.validity)
            .field("signatures", &self.signatures.len())
            .finish_non_exhaustive()
    }
}

/// One record set's signature.
#[derive(Debug, Clone)]
struct Signature {
    rrsig: RRSIG,
    /// The expiration, in seconds since the epoch.
    expires: u32,
    /// The TTL the RRSIG is served with: the set's own.
    ttl: u32,
}

impl ZoneSigning {
    /// The signer of the zone at `origin` with `config`'s key.
    pub fn new(origin: &Name, config: &DnssecConfig) -> Result<ZoneSigning, DnssecError> {
        let dnskey = config.key.dnskey()?;
        Ok(ZoneSigning {
            key: config.key.signing_key()?.into(),
            key_tag: dnskey.calculate_key_tag().map_err(DnssecError::Proto)?,
            signer_name: origin.to_lowercase(),
            validity: config.validity_secs.max(2 * INCEPTION_SKEW),
            signatures: HashMap::new(),
        })
    }

    /// The key tag of the zone's key.
    pub fn key_tag(&self) -> u16 {
        self.key_tag
    }

    /// Signs the set (`owner`, `record_type`) of `data` at `now`, keeping the signature until the set
    /// changes or is removed.
    pub(crate) fn sign_set(&mut self, owner: &Name, ttl: u32, data: &[RData], now: u32) -> Result<(), DnssecError> {
        let Some(first) = data.first() else {
            return Ok(());
        };
        let record_type = first.record_type();
        let expires = now.wrapping_add(self.validity).wrapping_add(jitter(self.validity / 4));
        let rrsig = self.rrsig(owner, ttl, data, now, expires)?;
        self.signatures
            .insert((LowerName::new(owner), record_type), Signature { rrsig, expires, ttl });
        Ok(())
    }

    /// Drops the signature of a set that is gone.
    pub(crate) fn forget(&mut self, owner: &LowerName, record_type: RecordType) {
        self.signatures.remove(&(owner.clone(), record_type));
    }

    /// A signature made now for records that live only in one answer (the NSEC records of authenticated
    /// denial), valid for the same time as the zone's others.
    pub(crate) fn sign_now(&self, owner: &Name, ttl: u32, data: &[RData], now: u32) -> Option<Record> {
        let rrsig = self
            .rrsig(owner, ttl, data, now, now.wrapping_add(self.validity))
            .ok()?;
        Some(Record::from_rdata(
            owner.clone(),
            ttl,
            RData::DNSSEC(DNSSECRData::RRSIG(rrsig)),
        ))
    }

    /// The RRSIG record of the set (`signed_as`, `record_type`) served under `owner` (the name asked,
    /// for a wildcard's set; the labels field says which wildcard signed it).
    pub(crate) fn rrsig_record(&self, signed_as: &LowerName, record_type: RecordType, owner: &Name) -> Option<Record> {
        let signature = self.signatures.get(&(signed_as.clone(), record_type))?;
        Some(Record::from_rdata(
            owner.clone(),
            signature.ttl,
            RData::DNSSEC(DNSSECRData::RRSIG(signature.rrsig.clone())),
        ))
    }

    /// The sets whose signatures have less than half their validity left at `now`, at most `limit` of them.
    pub(crate) fn due(&self, now: u32, limit: usize) -> Vec<(LowerName, RecordType)> {
        let half = self.validity / 2;
        self.signatures
            .iter()
            // Serial-number arithmetic: an expiry already past also counts as due.
            .filter(|(_, s)| s.expires.wrapping_sub(now) < half || s.expires.wrapping_sub(now) >= 1 << 31)
            .take(limit)
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Signatures held.
    pub fn len(&self) -> usize {
        self.signatures.len()
    }

    /// Whether no set is signed yet.
    pub fn is_empty(&self) -> bool {
        self.signatures.is_empty()
    }

    fn rrsig(&self, owner: &Name, ttl: u32, data: &[RData], now: u32, expires: u32) -> Result<RRSIG, DnssecError> {
        let Some(first) = data.first() else {
            return Err(DnssecError::Empty);
        };
        let input = SigInput {
            type_covered: first.record_type(),
            algorithm: self.key.algorithm(),
            // A wildcard's labels leave out the `*` (RFC 4034 §3.1.3): hickory's count already does.
            num_labels: owner.num_labels(),
            original_ttl: ttl,
            sig_expiration: SerialNumber::new(expires),
            sig_inception: SerialNumber::new(now.wrapping_sub(INCEPTION_SKEW)),
            key_tag: self.key_tag,
            signer_name: self.signer_name.clone(),
        };
        let records: Vec<Record> = data
            .iter()
            .map(|d| Record::from_rdata(owner.clone(), ttl, d.clone()))
            .collect();
        let tbs = TBS::from_input(owner, DNSClass::IN, &input, records.iter()).map_err(DnssecError::Proto)?;
        let signature = self.key.sign(&tbs).map_err(DnssecError::Dnssec)?;
        Ok(RRSIG::from_sig(input, signature))
    }
}

/// A random number of seconds below `max` (0 when the system's random source fails: the jitter only
/// spreads renewals).
fn jitter(max: u32) -> u32 {
    if max == 0 {
        return 0;
    }
    getrandom::u32().map_or(0, |r| r % max)
}
