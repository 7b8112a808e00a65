//! A zone's signatures: one RRSIG per record set, made when the set is written (under the write lock
//! that writes it, never per query), kept beside the zone's nodes and renewed a batch at a time well
//! before it expires.
//!
//! A signature is valid from an hour before it is made (a validator's clock may lag) to the configured
//! validity plus a random quarter of it, so the sets of a first sync, signed within one second, fall due
//! for renewal spread over days rather than all at once; a set is re-signed once less than half its
//! validity remains, which leaves a resolver days to notice a server that stopped renewing.
//!
//! During a rollover the DNSKEY set is signed by both keys ([`super::rollover`]); every other set by the
//! signing key alone. When the keys change, the signatures made before stay served (both keys are in the
//! DNSKEY set) and count as due, so the renewal re-signs them a batch at a time.

use std::collections::HashMap;
use std::fmt;

use hickory_proto::dnssec::rdata::sig::SigInput;
use hickory_proto::dnssec::rdata::{DNSSECRData, RRSIG};
use hickory_proto::dnssec::{PublicKey, SigningKey, TBS};
use hickory_proto::rr::{DNSClass, LowerName, Name, RData, Record, RecordType, SerialNumber};

use super::{DnssecConfig, DnssecError, ZoneKey, ZoneKeys};

/// How far back a signature's inception is put, for validators whose clocks lag ours.
const INCEPTION_SKEW: u32 = 3_600;

/// The signer of one zone and the signatures of its record sets. Cloned (the key shared) when a write
/// changes the signatures of a zone's next snapshot.
#[derive(Clone)]
pub struct ZoneSigning {
    key: Signer,
    /// The other key of a rollover, which signs the DNSKEY set beside `key`.
    standby: Option<Signer>,
    signer_name: Name,
    /// Seconds a new signature is valid for (before the jitter).
    validity: u32,
    /// Counts key changes: a signature made under an earlier generation is due for renewal.
    generation: u32,
    signatures: HashMap<(LowerName, RecordType), Signature>,
}

/// One key as it signs: hickory's key, its tag, and its public key (what tells two keys apart: tags may
/// collide).
#[derive(Clone)]
struct Signer {
    key: std::sync::Arc<dyn SigningKey>,
    key_tag: u16,
    public: Vec<u8>,
}

impl Signer {
    fn new(key: &ZoneKey) -> Result<Signer, DnssecError> {
        let dnskey = key.dnskey()?;
        Ok(Signer {
            key: key.signing_key()?.into(),
            key_tag: dnskey.calculate_key_tag().map_err(DnssecError::Proto)?,
            public: dnskey.public_key().public_bytes().to_vec(),
        })
    }
}

impl fmt::Debug for ZoneSigning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ZoneSigning")
            .field("key_tag", &self.key.key_tag)
            .field("standby_key_tag", &self.standby.as_ref().map(|s| s.key_tag))
            .field("signer_name", &self.signer_name)
            .field("validity", &self.validity)
            .field("signatures", &self.signatures.len())
            .finish_non_exhaustive()
    }
}

/// One record set's signatures: one per key that signs it.
#[derive(Debug, Clone)]
struct Signature {
    rrsigs: Vec<RRSIG>,
    /// The expiration, in seconds since the epoch.
    expires: u32,
    /// The TTL the RRSIG is served with: the set's own.
    ttl: u32,
    /// The key generation that made it.
    generation: u32,
}

impl ZoneSigning {
    /// The signer of the zone at `origin` with `config`'s key.
    pub fn new(origin: &Name, config: &DnssecConfig) -> Result<ZoneSigning, DnssecError> {
        Ok(ZoneSigning {
            key: Signer::new(&config.key)?,
            standby: config.standby.as_ref().map(Signer::new).transpose()?,
            signer_name: origin.to_lowercase(),
            validity: config.validity_secs.max(2 * INCEPTION_SKEW),
            generation: 0,
            signatures: HashMap::new(),
        })
    }

    /// Signs with `keys` from now on. When the signing key changed, the signatures made before are kept
    /// (still served: both keys are published) and due for renewal; when only the standby key came or went,
    /// they stand (the caller re-signs the DNSKEY set, the one set the standby key signs).
    pub(crate) fn set_keys(&mut self, keys: &ZoneKeys) -> Result<(), DnssecError> {
        let key = Signer::new(&keys.signer)?;
        let standby = keys.standby.as_ref().map(Signer::new).transpose()?;
        if key.public != self.key.public {
            self.generation = self.generation.wrapping_add(1);
        }
        self.key = key;
        self.standby = standby;
        Ok(())
    }

    /// The key tag of the zone's signing key.
    pub fn key_tag(&self) -> u16 {
        self.key.key_tag
    }

    /// The keys a set of `record_type` at `owner` is signed with: the standby key too for the apex DNSKEY
    /// set during a rollover.
    fn signers(&self, owner: &Name, record_type: RecordType) -> impl Iterator<Item = &Signer> {
        let both = record_type == RecordType::DNSKEY && owner.to_lowercase() == self.signer_name;
        std::iter::once(&self.key).chain(self.standby.as_ref().filter(|_| both))
    }

    /// Signs the set (`owner`, `record_type`) of `data` at `now`, keeping the signature until the set
    /// changes or is removed.
    pub(crate) fn sign_set(&mut self, owner: &Name, ttl: u32, data: &[RData], now: u32) -> Result<(), DnssecError> {
        let Some(first) = data.first() else {
            return Ok(());
        };
        let record_type = first.record_type();
        let expires = now.wrapping_add(self.validity).wrapping_add(jitter(self.validity / 4));
        let rrsigs = self
            .signers(owner, record_type)
            .map(|signer| self.rrsig(signer, owner, ttl, data, now, expires))
            .collect::<Result<Vec<_>, _>>()?;
        self.signatures.insert(
            (LowerName::new(owner), record_type),
            Signature {
                rrsigs,
                expires,
                ttl,
                generation: self.generation,
            },
        );
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
            .rrsig(&self.key, owner, ttl, data, now, now.wrapping_add(self.validity))
            .ok()?;
        Some(Record::from_rdata(
            owner.clone(),
            ttl,
            RData::DNSSEC(DNSSECRData::RRSIG(rrsig)),
        ))
    }

    /// The RRSIG records of the set (`signed_as`, `record_type`) served under `owner` (the name asked,
    /// for a wildcard's set; the labels field says which wildcard signed it): one, or one per key for
    /// the DNSKEY set during a rollover.
    pub(crate) fn rrsig_records(&self, signed_as: &LowerName, record_type: RecordType, owner: &Name) -> Vec<Record> {
        let Some(signature) = self.signatures.get(&(signed_as.clone(), record_type)) else {
            return Vec::new();
        };
        signature
            .rrsigs
            .iter()
            .map(|rrsig| {
                Record::from_rdata(
                    owner.clone(),
                    signature.ttl,
                    RData::DNSSEC(DNSSECRData::RRSIG(rrsig.clone())),
                )
            })
            .collect()
    }

    /// The sets whose signatures have less than half their validity left at `now`, or were made with
    /// keys since changed, at most `limit` of them.
    pub(crate) fn due(&self, now: u32, limit: usize) -> Vec<(LowerName, RecordType)> {
        let half = self.validity / 2;
        self.signatures
            .iter()
            // Serial-number arithmetic: an expiry already past also counts as due.
            .filter(|(_, s)| {
                s.generation != self.generation
                    || s.expires.wrapping_sub(now) < half
                    || s.expires.wrapping_sub(now) >= 1 << 31
            })
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

    fn rrsig(
        &self,
        signer: &Signer,
        owner: &Name,
        ttl: u32,
        data: &[RData],
        now: u32,
        expires: u32,
    ) -> Result<RRSIG, DnssecError> {
        let Some(first) = data.first() else {
            return Err(DnssecError::Empty);
        };
        let input = SigInput {
            type_covered: first.record_type(),
            algorithm: signer.key.algorithm(),
            // A wildcard's labels leave out the `*` (RFC 4034 §3.1.3): hickory's count already does.
            num_labels: owner.num_labels(),
            original_ttl: ttl,
            sig_expiration: SerialNumber::new(expires),
            sig_inception: SerialNumber::new(now.wrapping_sub(INCEPTION_SKEW)),
            key_tag: signer.key_tag,
            signer_name: self.signer_name.clone(),
        };
        let records: Vec<Record> = data
            .iter()
            .map(|d| Record::from_rdata(owner.clone(), ttl, d.clone()))
            .collect();
        let tbs = TBS::from_input(owner, DNSClass::IN, &input, records.iter()).map_err(DnssecError::Proto)?;
        let signature = signer.key.sign(&tbs).map_err(DnssecError::Dnssec)?;
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
