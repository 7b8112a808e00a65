//! A zone's signatures: one RRSIG per record set, made when the set is written (under the write lock
//! that writes it, never per query), kept beside the zone's nodes and renewed a batch at a time well
//! before it expires.
//!
//! Every replica makes the same validity windows, so a secondary may take the zone from any of them and
//! the serial can name the signatures' round as well as the records (issue 49). A set is re-signed at
//! fixed instants: every renewal period (half the validity), at a phase the set's owner and type pick
//! (a fixed-key hash, a whole number of slots into the period), counted from the epoch. A signature made
//! at any moment is dated from the set's last such instant: valid from an hour before it (a validator's
//! clock may lag) for the validity, so it always has at least half its validity left, and two replicas
//! signing the same set in the same period make the same window (ECDSA's signatures themselves differ,
//! and each validates). The phases spread the renewal of a first sync's sets, signed within one second,
//! over the period rather than all at once; and the zone's *round*, the last instant any of its sets
//! reached, is a function of its content and the clock, so every replica enters it alike
//! ([`ZoneSigning::round`]).
//!
//! During a rollover the DNSKEY set is signed by both keys ([`super::rollover`]); every other set by the
//! signing key alone. When the keys change, the signatures made before stay served (both keys are in the
//! DNSKEY set) and count as due, so the renewal re-signs them a batch at a time.
//!
//! The zone's NSEC chain is kept here too, signed as the writes change it ([`ZoneSigning::relink`]): a
//! name added or removed re-signs its own NSEC and its predecessor's, so a denial is a lookup and a copy.
//! Signatures and chain live in shards and chunks shared between the snapshots a write makes
//! ([`ShardedMap`], [`OrderedNames`]), so a write to a zone of any size copies a few of them, never the
//! zone's every signature.

use std::fmt;

use hickory_proto::ProtoError;
use hickory_proto::dnssec::rdata::sig::SigInput;
use hickory_proto::dnssec::rdata::{DNSSECRData, NSEC, RRSIG};
use hickory_proto::dnssec::{PublicKey, SigningKey, TBS};
use hickory_proto::rr::{DNSClass, LowerName, Name, RData, Record, RecordType, SerialNumber};
use hickory_proto::serialize::binary::{BinDecoder, BinEncodable, Restrict};

use super::chain::{OrderedNames, ZoneNames};
use super::{DnssecConfig, DnssecError, ZoneKey, ZoneKeys};
use crate::keyed_shards::Keyed;
use crate::name_key::WireName;
use crate::shards::ShardedMap;

/// How far back a signature's inception is put, for validators whose clocks lag ours.
pub(crate) const INCEPTION_SKEW: u32 = 3_600;

/// The slots a renewal period is cut into: the phases a set may have, so at most this many rounds (and
/// serials moved for renewal) a period, each renewing about this fraction of the zone.
const SLOTS: u32 = 128;

/// The shortest slot, in seconds: longer than the renewal task's pass (a minute), so a pass enters one
/// round at a time on every replica.
const MIN_SLOT: u32 = 120;

/// The key of the phase hash: fixed, so every replica (every process, every version) gives a set the
/// same phase. Not a secret: a phase only spreads renewals.
const PHASE_KEY: (u64, u64) = (0x6578_7464_6e73_2d72, 0x656e_6577_616c_2d31);

/// The signer of one zone and the signatures of its record sets. Cloned (the key shared) when a write
/// changes the signatures of a zone's next snapshot.
#[derive(Clone)]
pub struct ZoneSigning {
    key: Signer,
    /// The other key of a rollover, which signs the DNSKEY set beside `key`.
    standby: Option<Signer>,
    signer_name: Name,
    /// The apex.
    origin: LowerName,
    /// The apex, as the chain's names are kept.
    apex: WireName,
    /// Seconds a new signature is valid for, from the set's last renewal instant.
    validity: u32,
    /// Seconds between a set's renewal instants: half the validity, cut to whole slots.
    period: u32,
    /// Seconds a slot lasts: phases, and so renewal instants, are whole slots since the epoch.
    slot: u32,
    /// The last round entered: the latest renewal instant of any set at the last renewal that moved the
    /// serial (or the slot the signer started in).
    round: u32,
    /// Counts key changes (wrapping): a signature made under an earlier generation is due for renewal.
    generation: u16,
    /// Each set's signature by owner and type. Names here and in the chain are kept as the zone's nodes
    /// keep theirs ([`WireName`]: 40 bytes, where hickory's names are 80), since a signed zone holds each
    /// name three times (issue 49: memory per record).
    signatures: ShardedMap<(WireName, RecordType), Signature>,
    /// During a rollover, the standby key's signature of the apex DNSKEY set, served beside the signing
    /// key's (kept apart so that every other set's signature holds one RRSIG, inline).
    standby_dnskey: Option<Signature>,
    /// The names of the NSEC chain (every name holding sets, but the ones below a delegation), each
    /// with its signed NSEC once [`ZoneSigning::sign_chain`] made it. The NSEC is held with its name in
    /// the chain rather than in a map by name beside it, which held each name a second time.
    chain: OrderedNames<Link>,
    /// The delegations below the apex (names with an NS set, not themselves below one).
    cuts: OrderedNames,
    /// The type bitmaps the chain's NSECs name.
    bitmaps: Bitmaps,
    /// Names whose NSEC the writes since the last [`ZoneSigning::sign_chain`] may have changed, each with
    /// whether its next name may have (it, or the name after it, joined or left the chain) rather than
    /// only its types.
    stale: Vec<(WireName, bool)>,
}

/// One name of the chain (lower-cased) and its NSEC: the owner's types, as the NSEC's type bitmap (an
/// index into the zone's [`Bitmaps`]), and its signature, none from when a write puts the name in the chain
/// until that write's NSECs are signed. The NSEC's next name is the chain's next entry, read from there
/// rather than held: an NSEC costs its entry's 128 bytes and no allocation (issue 49: its RDATA in a box
/// of its own took 48 bytes more).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Link {
    owner: WireName,
    signature: Option<Signature>,
    types: u16,
}

/// A signed NSEC of the chain, as an answer or a transfer reads it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Nsec<'z> {
    owner: &'z WireName,
    /// The next name of the chain: the first entry after the owner's, or the apex after the last.
    next: &'z WireName,
    /// The type bitmap.
    types: &'z [u8],
    signature: &'z Signature,
    /// The zone's apex: the signature's signer.
    apex: &'z WireName,
}

impl Link {
    /// A name just put in the chain, its NSEC not made yet.
    fn unsigned(owner: WireName) -> Link {
        Link {
            owner,
            signature: None,
            types: 0,
        }
    }
}

/// The distinct NSEC type bitmaps of a zone's chain, each held once: a zone has a few kinds of names (an
/// address, an alias, a mail name...), and each NSEC names its kind by index. It only grows, by the kinds a
/// zone ever held (at most one per combination of the types it serves), and is shared between snapshots.
#[derive(Debug, Clone, Default)]
struct Bitmaps(std::sync::Arc<Vec<Box<[u8]>>>);

impl Bitmaps {
    /// The index of `bitmap`, added if new.
    fn intern(&mut self, bitmap: &[u8]) -> Result<u16, DnssecError> {
        let at = self.0.iter().position(|b| **b == *bitmap).unwrap_or(self.0.len());
        let index = u16::try_from(at)
            .map_err(|_| DnssecError::Proto(ProtoError::Message("more than 65,536 kinds of names in one zone")))?;
        if at == self.0.len() {
            std::sync::Arc::make_mut(&mut self.0).push(bitmap.into());
        }
        Ok(index)
    }

    fn get(&self, index: u16) -> &[u8] {
        self.0.get(usize::from(index)).map_or(&[], |b| b)
    }
}

impl Keyed for Link {
    type Key = WireName;

    fn key(&self) -> &WireName {
        &self.owner
    }
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
            .field("period", &self.period)
            .field("round", &self.round)
            .field("signatures", &self.signatures.len())
            .field("chain", &self.chain.len())
            .finish_non_exhaustive()
    }
}

/// The bytes of every signature a zone's keys make: ECDSA P-256's two 32-byte integers (RFC 6605 §4)
/// and Ed25519's signature (RFC 8080 §3) alike.
const SIGNATURE_LEN: usize = 64;

/// The RRSIG RDATA's fields before the signer's name (RFC 4034 §3.1): type covered, algorithm, labels,
/// original TTL, expiration, inception and key tag.
const HEAD_LEN: usize = 18;

/// One set's signature by one key: an RRSIG's RDATA but for the signer's name, which is the zone's apex
/// for every set a zone signs and so is written from there (`crate::wire`) rather than held by each
/// signature. Held inline, with no allocation of its own: 84 bytes, where the RDATA boxed beside its
/// window and TTL took 128 (issue 49: a signed zone holds two signatures a name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Signature {
    /// The fixed fields, as sent: the TTL served with it and the window it is dated from are read here.
    head: [u8; HEAD_LEN],
    signature: [u8; SIGNATURE_LEN],
    /// The key generation that made it.
    generation: u16,
}

/// A set's signatures as an answer serves them: the signing key's, and during a rollover, for the apex
/// DNSKEY set, the standby key's beside it; with the zone that signed them, whose apex every RRSIG names
/// as its signer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Signed<'z> {
    signature: &'z Signature,
    standby: Option<&'z Signature>,
    signer: &'z WireName,
}

impl<'z> Signed<'z> {
    /// Each signature, the signing key's first.
    pub(crate) fn iter(self) -> impl Iterator<Item = &'z Signature> {
        std::iter::once(self.signature).chain(self.standby)
    }

    /// The signer's name, in wire form (uncompressed, RFC 4034 §3.1.7).
    pub(crate) fn signer(self) -> &'z [u8] {
        self.signer.wire()
    }
}

impl ZoneSigning {
    /// The signer of the zone at `origin` with `config`'s key.
    pub fn new(origin: &Name, config: &DnssecConfig) -> Result<ZoneSigning, DnssecError> {
        let validity = config.validity_secs.max(2 * INCEPTION_SKEW);
        let half = validity / 2;
        let slot = (half / SLOTS).max(MIN_SLOT).min(half);
        let period = half / slot * slot;
        Ok(ZoneSigning {
            key: Signer::new(&config.key)?,
            standby: config.standby.as_ref().map(Signer::new).transpose()?,
            signer_name: origin.to_lowercase(),
            origin: LowerName::new(origin),
            apex: WireName::of(origin),
            validity,
            period,
            slot,
            round: super::now() / slot * slot,
            generation: 0,
            signatures: ShardedMap::new(),
            standby_dnskey: None,
            chain: OrderedNames::default(),
            cuts: OrderedNames::default(),
            bitmaps: Bitmaps::default(),
            stale: Vec::new(),
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

    /// The apex, as the signatures are keyed.
    pub(crate) fn apex(&self) -> &WireName {
        &self.apex
    }

    /// The key tag of the zone's signing key.
    pub fn key_tag(&self) -> u16 {
        self.key.key_tag
    }

    /// Signs the set (`owner`, `record_type`) of `data` at `now`, keeping the signature until the set
    /// changes or is removed. During a rollover the apex DNSKEY set is signed by the standby key too.
    pub(crate) fn sign_set(&mut self, owner: &Name, ttl: u32, data: &[RData], now: u32) -> Result<(), DnssecError> {
        let Some(first) = data.first() else {
            return Ok(());
        };
        let record_type = first.record_type();
        let key = WireName::of(owner);
        let signature = self.signature(&self.key, owner, ttl, data, now)?;
        if record_type == RecordType::DNSKEY && key == self.apex {
            self.standby_dnskey = match &self.standby {
                Some(standby) => Some(self.signature(standby, owner, ttl, data, now)?),
                None => None,
            };
        }
        self.signatures.insert((key, record_type), signature);
        Ok(())
    }

    /// A signature of `data` at `owner` by `signer`, made at `now`: dated from the set's renewal
    /// instant at or before `now`.
    fn signature(
        &self,
        signer: &Signer,
        owner: &Name,
        ttl: u32,
        data: &[RData],
        now: u32,
    ) -> Result<Signature, DnssecError> {
        let record_type = data.first().ok_or(DnssecError::Empty)?.record_type();
        let anchor = self.anchor(&LowerName::new(owner), record_type, now);
        let rrsig = self.rrsig(signer, owner, ttl, data, anchor)?;
        Signature::from_rdata(&rrsig, &self.apex, self.generation)
    }

    /// Drops the signature of a set that is gone.
    pub(crate) fn forget(&mut self, owner: &LowerName, record_type: RecordType) {
        let owner = WireName::of(owner);
        if record_type == RecordType::DNSKEY && owner == self.apex {
            self.standby_dnskey = None;
        }
        self.signatures.remove(&(owner, record_type));
    }

    /// The RRSIG records of the set (`signed_as`, `record_type`) served under `owner` (the name asked,
    /// for a wildcard's set; the labels field says which wildcard signed it): one, or one per key for
    /// the DNSKEY set during a rollover.
    pub(crate) fn rrsig_records(&self, signed_as: &WireName, record_type: RecordType, owner: &Name) -> Vec<Record> {
        self.stored_signature(signed_as, record_type)
            .into_iter()
            .flat_map(Signed::iter)
            .filter_map(|signature| signature.record(owner, &self.apex))
            .collect()
    }

    /// The signatures of the set (`signed_as`, `record_type`), as an answer writes them.
    pub(crate) fn stored_signature(&self, signed_as: &WireName, record_type: RecordType) -> Option<Signed<'_>> {
        let signature = self.signatures.find(&(signed_as, record_type))?;
        let standby = self
            .standby_dnskey
            .as_ref()
            .filter(|_| record_type == RecordType::DNSKEY && *signed_as == self.apex);
        Some(Signed {
            signature,
            standby,
            signer: &self.apex,
        })
    }

    /// The renewal instant of the set (`owner`, `record_type`) at or before `now`: its phase (a whole
    /// number of slots the hash of its owner and type picks) plus whole periods since the epoch.
    fn anchor(&self, owner: &LowerName, record_type: RecordType, now: u32) -> u32 {
        use std::hash::Hasher;

        let mut hasher = siphasher::sip::SipHasher24::new_with_keys(PHASE_KEY.0, PHASE_KEY.1);
        hasher.write(owner.to_string().as_bytes());
        hasher.write_u16(u16::from(record_type));
        let slots = u64::from(self.period / self.slot);
        let phase = u32::try_from(hasher.finish() % slots).unwrap_or(0) * self.slot;
        now.wrapping_sub(now.wrapping_sub(phase) % self.period)
    }

    /// Whether a signature is due at `now`: made by keys since changed, or its set's next renewal
    /// instant (a period after the one it is dated from) has come. Serial-number arithmetic: a signature
    /// made long ago (expired) is due too.
    fn is_due(&self, signature: &Signature, now: u32) -> bool {
        signature.generation != self.generation
            || now.wrapping_sub(signature.anchor().wrapping_add(self.period)) < 1 << 31
    }

    /// The sets whose renewal instant has come at `now` (so less than half their validity is left), or
    /// whose signatures were made with keys since changed, at most `limit` of them; the chain's NSECs
    /// among them, as (name, NSEC).
    pub(crate) fn due(&self, now: u32, limit: usize) -> Vec<(LowerName, RecordType)> {
        let sets = self
            .signatures
            .iter()
            .filter(|(_, s)| self.is_due(s, now))
            .map(|((owner, record_type), _)| (owner.to_lower_name(), *record_type));
        let links = self
            .chain
            .iter()
            .filter(|l| l.signature.as_ref().is_some_and(|s| self.is_due(s, now)))
            .map(|l| (l.owner.to_lower_name(), RecordType::NSEC));
        sets.chain(links).take(limit).collect()
    }

    /// The round the zone is in at `now`, when it is one not entered yet: the latest renewal instant at
    /// or before `now` of any set or NSEC. It depends on the zone's content (which sets it holds) and the
    /// clock alone, not on when this replica signed them, so every replica holding the same records
    /// reaches it at the same instant, whether or not it had a signature of its own to renew then.
    pub(crate) fn round(&self, now: u32) -> Option<u32> {
        let latest = |anchor: u32| {
            let since = now.wrapping_sub(anchor);
            // A signature dated after `now` (made by a clock ahead) has no instant before it here.
            (since < 1 << 31).then(|| anchor.wrapping_add(since / self.period * self.period))
        };
        let anchors = self.signatures.iter().map(|(_, s)| s.anchor());
        let links = self
            .chain
            .iter()
            .filter_map(|l| l.signature.as_ref())
            .map(Signature::anchor);
        anchors
            .chain(links)
            .filter_map(latest)
            // Serial-number arithmetic: the instants after the round entered, the latest of them.
            .map(|instant| instant.wrapping_sub(self.round))
            .filter(|&ahead| ahead != 0 && ahead < 1 << 31)
            .max()
            .map(|ahead| self.round.wrapping_add(ahead))
    }

    /// Notes the round `round` entered (its renewals done and its serial moved).
    pub(crate) fn enter_round(&mut self, round: u32) {
        self.round = round;
    }

    /// Whether `round` is after the last round entered: a renewal listed before another pass entered
    /// it must not enter it (and move the serial) a second time.
    pub(crate) fn is_new_round(&self, round: u32) -> bool {
        crate::serial::after(round, self.round)
    }

    /// Whether the set (`name`, `record_type`), or the NSEC at `name`, is still due at `now`: a listing
    /// made before another pass re-signed it must not re-sign it again. A set without a signature is
    /// left to the re-signing to find gone.
    pub(crate) fn still_due(&self, name: &LowerName, record_type: RecordType, now: u32) -> bool {
        let name = WireName::of(name);
        let signature = if record_type == RecordType::NSEC {
            self.chain.get(&name).and_then(|l| l.signature.as_ref())
        } else {
            self.signatures.find(&(&name, record_type))
        };
        signature.is_none_or(|s| self.is_due(s, now))
    }

    /// Seconds between two renewals of a set: half the validity, cut to whole slots.
    pub fn renewal_period(&self) -> u32 {
        self.period
    }

    /// Seconds a slot lasts: every renewal instant is a whole number of slots since the epoch.
    pub fn renewal_slot(&self) -> u32 {
        self.slot
    }

    /// Re-links the NSEC chain around `name` after its sets changed (`names` reads the zone as it is
    /// now): the name joins or leaves the chain, and when it became or stopped being a delegation, the
    /// names below it leave or join it too. The NSECs this changes (the name's own, for its types, and
    /// when the chain changed, its predecessor's and those of the names that joined) are noted, and signed
    /// once per write by [`ZoneSigning::sign_chain`]: a write of many names signs each NSEC once, not once
    /// per neighbour written.
    pub(crate) fn relink(&mut self, names: &impl ZoneNames, name: &LowerName) {
        let holds = !names.types(name).is_empty();
        let in_chain = holds && !self.occluded(names, name);
        let is_cut = in_chain && name != &self.origin && names.has(name, RecordType::NS);
        let wire = WireName::of(name);
        let was_cut = self.cuts.contains(&wire);
        if is_cut && !was_cut {
            // Below a delegation nothing is ours to deny: glue leaves the chain.
            self.cuts.insert(wire.clone());
            for below in self.chain.below(&wire) {
                self.chain.remove(&below);
            }
        } else if was_cut && !is_cut {
            self.cuts.remove(&wire);
            for below in names.below(name) {
                if !self.occluded(names, &below) {
                    let below = WireName::of(&below);
                    self.chain.insert(Link::unsigned(below.clone()));
                    self.stale.push((below, true));
                }
            }
        }
        let was_in = self.chain.contains(&wire);
        if in_chain {
            self.chain.insert(Link::unsigned(wire.clone()));
        } else {
            self.chain.remove(&wire);
        }
        let moved = in_chain != was_in || is_cut != was_cut;
        if moved {
            self.stale
                .extend(self.chain.before(&wire).map(|l| (l.owner.clone(), true)));
        }
        self.stale.push((wire, moved));
    }

    /// Signs at `now`, with `ttl` (the negative TTL, RFC 9077), the NSECs the writes since the last call
    /// changed (`names` reads the zone as it is now); an NSEC whose data did not change keeps its
    /// signature. Before a write is published, so no snapshot serves a stale link.
    pub(crate) fn sign_chain(&mut self, names: &impl ZoneNames, ttl: u32, now: u32) -> Result<(), DnssecError> {
        if self.stale.is_empty() {
            return Ok(());
        }
        let mut stale = std::mem::take(&mut self.stale);
        stale.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        stale.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            kept.1 |= same && later.1;
            same
        });
        // Each link is made from the chain as it is now. A name's next name changes only when it or
        // the name after it joins or leaves the chain, and each such change noted the name before it
        // then, so every name whose next name moved is here, marked. A link that cannot be signed
        // stays noted, with every one after it, so the next write or renewal tries them again rather
        // than serving the old links for good.
        for at in 0..stale.len() {
            let (name, moved) = &stale[at];
            if let Err(e) = self.refresh_link(names, name, *moved, ttl, now) {
                self.stale.extend(stale.drain(at..));
                return Err(e);
            }
        }
        self.chain.shrink_unshared();
        self.cuts.shrink_unshared();
        Ok(())
    }

    /// Whether writes since the last [`ZoneSigning::sign_chain`] left links to sign.
    pub(crate) fn has_stale(&self) -> bool {
        !self.stale.is_empty()
    }

    /// Whether `name` is below a delegation (its data is glue, not the zone's).
    fn occluded(&self, names: &impl ZoneNames, name: &LowerName) -> bool {
        let apex_labels = self.origin.num_labels();
        let mut current = name.base_name();
        while current.num_labels() > apex_labels {
            if names.has(&current, RecordType::NS) {
                return true;
            }
            current = current.base_name();
        }
        false
    }

    /// Makes the NSEC at `name` what the chain and the zone say (nothing when `name` is not in the
    /// chain), signing it only when its data may have changed: its next name (`moved`), its types or
    /// its TTL.
    fn refresh_link(
        &mut self,
        names: &impl ZoneNames,
        name: &WireName,
        moved: bool,
        ttl: u32,
        now: u32,
    ) -> Result<(), DnssecError> {
        let Some(link) = self.chain.get(name) else {
            return Ok(());
        };
        let (was_types, was_ttl) = (link.types, link.signature.as_ref().map(Signature::ttl));
        // The last name links back to the apex (RFC 4034 §4.1.1).
        let next = self.chain.after(name).map_or(&self.apex, |l| &l.owner);
        let nsec = NSEC::new_cover_self(next.to_name(), names.types(&name.to_lower_name()));
        let data = RData::DNSSEC(DNSSECRData::NSEC(nsec));
        let wire = data.to_bytes().map_err(DnssecError::Proto)?;
        // The next name is written in canonical form (RFC 4034 §6.2), as the chain holds it.
        let bitmap = wire
            .strip_prefix(next.wire())
            .ok_or(DnssecError::Proto(ProtoError::Message(
                "an NSEC's next name not as the chain holds it",
            )))?;
        let types = self.bitmaps.intern(bitmap)?;
        if !moved && types == was_types && was_ttl == Some(ttl) {
            return Ok(());
        }
        let signature = self.signature(&self.key, &name.to_name(), ttl, std::slice::from_ref(&data), now)?;
        if let Some(link) = self.chain.get_mut(name) {
            link.types = types;
            link.signature = Some(signature);
        }
        Ok(())
    }

    /// Signs the NSEC at `name` again at `now`; `false` when the name has no NSEC.
    pub(crate) fn resign_link(&mut self, name: &LowerName, now: u32) -> Result<bool, DnssecError> {
        let name = WireName::of(name);
        let Some(nsec) = self.link_at(&name) else {
            return Ok(false);
        };
        let data = read_rdata(RecordType::NSEC, &nsec.rdata())?;
        let ttl = nsec.signature.ttl();
        let signature = self.signature(&self.key, &nsec.owner(), ttl, std::slice::from_ref(&data), now)?;
        if let Some(link) = self.chain.get_mut(&name) {
            link.signature = Some(signature);
        }
        Ok(true)
    }

    /// The NSEC of `link`, whose successor in the chain is `next` (none after the last), once signed.
    fn nsec<'a>(&'a self, link: &'a Link, next: Option<&'a Link>) -> Option<Nsec<'a>> {
        Some(Nsec {
            owner: &link.owner,
            next: next.map_or(&self.apex, |n| &n.owner),
            types: self.bitmaps.get(link.types),
            signature: link.signature.as_ref()?,
            apex: &self.apex,
        })
    }

    /// The NSEC at exactly `name` with its signature, as an answer writes it.
    pub(crate) fn link_at(&self, name: &WireName) -> Option<Nsec<'_>> {
        let (link, next) = self.chain.with_next(name, true)?;
        self.nsec(link, next)
    }

    /// The NSEC at or covering `name` (the chain's name at or before it) with its signature: the proof
    /// that `name` does not exist, or that an empty non-terminal holds nothing.
    pub(crate) fn link_covering(&self, name: &WireName) -> Option<Nsec<'_>> {
        let (link, next) = self.chain.with_next(name, false)?;
        self.nsec(link, next)
    }

    /// The chain's NSEC records and their RRSIGs at every name, in canonical order: what a transfer
    /// gives a secondary, which has no key to deny with.
    pub(crate) fn chain_records(&self) -> impl Iterator<Item = Record> + '_ {
        let nexts = self.chain.iter().skip(1).map(Some).chain([None]);
        self.chain
            .iter()
            .zip(nexts)
            .filter_map(|(link, next)| self.nsec(link, next))
            .flat_map(|nsec| nsec.records())
    }

    /// The RRSIG and NSEC records that differ between `old` (this zone's signing as an earlier serial
    /// published it) and `self`, as (removed, added): what an IXFR from that serial sends beside the
    /// data's own changes. Only the shards the two do not share are walked, so a renewal round or a
    /// write costs what it changed.
    ///
    /// `None` when a delegation came or went between them: the names below it became glue (their
    /// signatures no longer transferred) or stopped being glue (their signatures transferred again),
    /// though their signature shards did not change, so the walk would miss them; the answer is then
    /// the whole zone, as rare as such a change is.
    pub(crate) fn changes_since(&self, old: &ZoneSigning) -> Option<(Vec<Record>, Vec<Record>)> {
        if !self.cuts.same_names(&old.cuts) {
            return None;
        }
        let (mut removed, mut added) = (Vec::new(), Vec::new());
        for ((owner, _), before, after) in self.signatures.changes_since(&old.signatures) {
            // Glue's signatures are kept but never transferred (as the AXFR leaves them out).
            let before = before.filter(|_| !old.below_cut(owner));
            let after = after.filter(|_| !self.below_cut(owner));
            if before == after {
                continue;
            }
            let owner = owner.to_name();
            removed.extend(before.and_then(|s| s.record(&owner, &old.apex)));
            added.extend(after.and_then(|s| s.record(&owner, &self.apex)));
        }
        if self.standby_dnskey != old.standby_dnskey {
            let apex = self.apex.to_name();
            removed.extend(old.standby_dnskey.as_ref().and_then(|s| s.record(&apex, &old.apex)));
            added.extend(self.standby_dnskey.as_ref().and_then(|s| s.record(&apex, &self.apex)));
        }
        for (before, after) in self.chain.changes_since(&old.chain) {
            let before = before.and_then(|l| old.nsec(l, old.chain.after(&l.owner)));
            let after = after.and_then(|l| self.nsec(l, self.chain.after(&l.owner)));
            match (before, after) {
                (Some(b), Some(a)) if b.same_data(&a) => {
                    if b.signature != a.signature {
                        removed.extend(b.signature.record(&b.owner(), &old.apex));
                        added.extend(a.signature.record(&a.owner(), &self.apex));
                    }
                }
                (before, after) => {
                    removed.extend(before.into_iter().flat_map(|n| n.records()));
                    added.extend(after.into_iter().flat_map(|n| n.records()));
                }
            }
        }
        Some((removed, added))
    }

    /// Whether `name` is below one of the zone's delegations: glue, which a transfer sends without
    /// RRSIG or NSEC.
    fn below_cut(&self, name: &WireName) -> bool {
        // Most zones delegate nothing: no walk up the name for them.
        self.cuts.len() > 0
            && name
                .ancestors()
                .take_while(|above| *above != self.apex && above.is_within(&self.apex))
                .any(|above| self.cuts.contains(&above))
    }

    /// Whether every replica makes the same signature bytes as this one: Ed25519 signs deterministically
    /// (RFC 8032), and the windows are the same on every replica; ECDSA draws a random nonce per
    /// signature, so another replica's RRSIG of the same set differs.
    pub fn signs_alike_everywhere(&self) -> bool {
        std::iter::once(&self.key)
            .chain(self.standby.as_ref())
            .all(|s| s.key.algorithm() == hickory_proto::dnssec::Algorithm::ED25519)
    }

    /// Signatures held.
    pub fn len(&self) -> usize {
        self.signatures.len()
    }

    /// Names in the NSEC chain: each an NSEC and its signature in a transfer.
    pub fn chain_len(&self) -> usize {
        self.chain.len()
    }

    /// Whether no set is signed yet.
    pub fn is_empty(&self) -> bool {
        self.signatures.len() == 0
    }

    fn rrsig(
        &self,
        signer: &Signer,
        owner: &Name,
        ttl: u32,
        data: &[RData],
        anchor: u32,
    ) -> Result<Vec<u8>, DnssecError> {
        let Some(first) = data.first() else {
            return Err(DnssecError::Empty);
        };
        let input = SigInput {
            type_covered: first.record_type(),
            algorithm: signer.key.algorithm(),
            // A wildcard's labels leave out the `*` (RFC 4034 §3.1.3): hickory's count already does.
            num_labels: owner.num_labels(),
            original_ttl: ttl,
            sig_expiration: SerialNumber::new(anchor.wrapping_add(self.validity)),
            sig_inception: SerialNumber::new(anchor.wrapping_sub(INCEPTION_SKEW)),
            key_tag: signer.key_tag,
            signer_name: self.signer_name.clone(),
        };
        let records: Vec<Record> = data
            .iter()
            .map(|d| Record::from_rdata(owner.clone(), ttl, d.clone()))
            .collect();
        let tbs = TBS::from_input(owner, DNSClass::IN, &input, records.iter()).map_err(DnssecError::Proto)?;
        #[cfg(test)]
        tests::SIGNED.with(|n| n.set(n.get() + 1));
        let signature = signer.key.sign(&tbs).map_err(DnssecError::Dnssec)?;
        let rrsig = RRSIG::from_sig(input, signature);
        rrsig.to_bytes().map_err(DnssecError::Proto)
    }
}

impl Signature {
    /// The signature an RRSIG's RDATA (`rdata`, signed by `signer`) holds, made by key generation
    /// `generation`.
    fn from_rdata(rdata: &[u8], signer: &WireName, generation: u16) -> Result<Signature, DnssecError> {
        let unlike = |what| DnssecError::Proto(ProtoError::Message(what));
        let (head, rest) = rdata
            .split_first_chunk::<HEAD_LEN>()
            .ok_or(unlike("an RRSIG shorter than its head"))?;
        let signature = rest
            .strip_prefix(signer.wire())
            .ok_or(unlike("an RRSIG whose signer is not the zone"))?;
        let signature =
            <[u8; SIGNATURE_LEN]>::try_from(signature).map_err(|_| unlike("a signature not of 64 bytes"))?;
        Ok(Signature {
            head: *head,
            signature,
            generation,
        })
    }

    /// The big-endian `u32` at `at` of the head.
    fn field(&self, at: usize) -> u32 {
        let mut bytes = [0; 4];
        if let Some(field) = self.head.get(at..at + 4) {
            bytes.copy_from_slice(field);
        }
        u32::from_be_bytes(bytes)
    }

    /// The TTL it is served with: the set's own (the RRSIG's original TTL).
    pub(crate) fn ttl(&self) -> u32 {
        self.field(4)
    }

    /// The set's renewal instant it is dated from: valid from [`INCEPTION_SKEW`] before it.
    fn anchor(&self) -> u32 {
        self.field(12).wrapping_add(INCEPTION_SKEW)
    }

    /// The fields written before the signer's name.
    pub(crate) fn head(&self) -> &[u8] {
        &self.head
    }

    /// The signature itself, written after the signer's name.
    pub(crate) fn signature(&self) -> &[u8] {
        &self.signature
    }

    /// The RRSIG record, owned by `owner`, signed by the zone `signer`, with the set's TTL (for a
    /// transfer and the tests; an answer writes the bytes).
    fn record(&self, owner: &Name, signer: &WireName) -> Option<Record> {
        let rdata = [&self.head[..], signer.wire(), &self.signature].concat();
        stored_record(owner, self.ttl(), RecordType::RRSIG, &rdata)
    }
}

impl<'z> Nsec<'z> {
    /// The NSEC record and its RRSIG.
    fn records(&self) -> Vec<Record> {
        let owner = self.owner();
        let nsec = stored_record(&owner, self.ttl(), RecordType::NSEC, &self.rdata());
        nsec.into_iter()
            .chain(self.signature.record(&owner, self.apex))
            .collect()
    }

    /// The NSEC's owner (no heap for a short name).
    pub(crate) fn owner(&self) -> Name {
        self.owner.to_name()
    }

    /// Whether `other` is this very NSEC (not a copy).
    pub(crate) fn is(&self, other: &Nsec<'_>) -> bool {
        std::ptr::eq(self.owner, other.owner)
    }

    /// Whether `other` holds the same RDATA, served with the same TTL.
    fn same_data(&self, other: &Nsec<'_>) -> bool {
        self.next == other.next && self.types == other.types && self.signature.ttl() == other.signature.ttl()
    }

    /// The NSEC's RDATA, as sent: the next name, then the type bitmap.
    pub(crate) fn rdata_parts(&self) -> [&'z [u8]; 2] {
        [self.next.wire(), self.types]
    }

    /// The NSEC's RDATA in one piece.
    fn rdata(&self) -> Vec<u8> {
        self.rdata_parts().concat()
    }

    /// The TTL the NSEC is served with (RFC 9077), its signature's.
    pub(crate) fn ttl(&self) -> u32 {
        self.signature.ttl()
    }

    /// The NSEC's signature, as an answer writes it.
    pub(crate) fn signed(&self) -> Signed<'z> {
        Signed {
            signature: self.signature,
            standby: None,
            signer: self.apex,
        }
    }
}

/// Record data of `record_type` read back from the wire form it is stored as.
fn read_rdata(record_type: RecordType, wire: &[u8]) -> Result<RData, DnssecError> {
    let length =
        u16::try_from(wire.len()).map_err(|_| DnssecError::Proto(ProtoError::Message("stored RDATA too long")))?;
    RData::read(&mut BinDecoder::new(wire), record_type, Restrict::new(length))
        .map_err(|e| DnssecError::Proto(e.into()))
}

/// A stored record as a hickory record; `None` (logged) should its bytes not read back, which only a bug
/// here can make.
fn stored_record(owner: &Name, ttl: u32, record_type: RecordType, wire: &[u8]) -> Option<Record> {
    match read_rdata(record_type, wire) {
        Ok(data) => Some(Record::from_rdata(owner.clone(), ttl, data)),
        Err(e) => {
            tracing::warn!(error = %e, %owner, ?record_type, "a stored DNSSEC record does not read back");
            None
        }
    }
}

impl ZoneSigning {
    /// How many of the signature shards and chain chunks `self` and `other` share (what a write did not
    /// copy), and how many `self` has.
    #[cfg(test)]
    pub(crate) fn shared_signature_shards(&self, other: &ZoneSigning) -> (usize, usize) {
        let (chunks, all_chunks) = self.chain.shared_chunks(&other.chain);
        (
            self.signatures.shared_shards(&other.signatures) + chunks,
            self.signatures.shard_count() + all_chunks,
        )
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::cell::Cell;

    thread_local! {
        /// Signatures made on this thread: what shows a path signs nothing.
        pub(crate) static SIGNED: Cell<u64> = const { Cell::new(0) };
    }

    /// Signatures made so far on this thread.
    pub(crate) fn signed() -> u64 {
        SIGNED.with(Cell::get)
    }

    #[test]
    fn a_signature_is_held_inline_and_reads_back_as_the_rrsig_signed() {
        use hickory_proto::dnssec::rdata::DNSSECRData;
        use hickory_proto::rr::{Name, RData, rdata::A};

        use crate::dnssec::{DnssecConfig, KeyAlgorithm, ZoneKey};

        assert_eq!(
            size_of::<super::Signature>(),
            84,
            "no allocation, no padding past the generation"
        );
        assert_eq!(
            size_of::<super::Link>(),
            128,
            "a name, its NSEC's signature and its kind, no allocation"
        );
        for algorithm in [KeyAlgorithm::EcdsaP256, KeyAlgorithm::Ed25519] {
            let origin = Name::from_ascii("Example.ORG.").expect("origin");
            let key = ZoneKey::generate(algorithm).expect("a key");
            let mut signing = super::ZoneSigning::new(&origin, &DnssecConfig::new(key)).expect("a signer");
            let owner = Name::from_ascii("www.example.org.").expect("owner");
            let data = [RData::A(A::new(192, 0, 2, 1))];
            signing.sign_set(&owner, 300, &data, 1_800_000_000).expect("signs");
            let signed = signing.rrsig_records(&super::WireName::of(&owner), hickory_proto::rr::RecordType::A, &owner);
            let [record] = &signed[..] else {
                panic!("one RRSIG, not {signed:?}");
            };
            let RData::DNSSEC(DNSSECRData::RRSIG(rrsig)) = &record.data else {
                panic!("an RRSIG, not {record:?}");
            };
            assert_eq!(
                rrsig.input().signer_name,
                Name::from_ascii("example.org.").expect("signer")
            );
            assert_eq!(rrsig.input().original_ttl, 300);
            assert_eq!(rrsig.sig().len(), 64, "{algorithm:?}");
            assert_eq!(record.ttl, 300);
        }
    }
}
