//! The TXT registry (`--registry=txt`): ownership kept in a TXT record next to every record extdns manages,
//! in external-dns's format, so extdns can take over a zone external-dns manages (and back) without either
//! losing or stealing records.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use extdns_endpoint::{Change, DomainFilter, Endpoint, Labels, RecordType, Targets, label};
use extdns_provider::failure::FailureKind;
use extdns_provider::{ChangeFailure, Provider, Unit};

use crate::claims;
use crate::crypto::AesKey;
use crate::labels::{self, InvalidHeritage};
use crate::mapper::NameMapper;
use crate::placement::{self, Once, Pairing};
use crate::{OwnershipStore, Registry, RegistryError, Snapshot, Written};

/// Provider-specific property the registry sets on an owned record whose new-format TXT record is missing, so
/// the plan updates it and the TXT record gets written.
pub const FORCE_UPDATE: &str = "txt/force-update";

/// The ownership settings as given (the `--txt-*` and `--migrate-from-txt-owner` flags), before validation.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct OwnershipConfig {
    /// Default `default`; must not be empty.
    pub owner_id: String,
    /// May contain `%{record_type}`.
    pub prefix: String,
    /// May contain `%{record_type}`; exclusive with the prefix.
    pub suffix: String,
    /// Replaces a leading `*` label in TXT names.
    pub wildcard_replacement: String,
    /// Write encrypted values (needs the key).
    pub encrypt_enabled: bool,
    /// 32 bytes, raw or standard base64. Without `encrypt_enabled` it is still used to read encrypted records.
    pub encrypt_aes_key: Option<String>,
    /// Records owned by this id are taken over.
    pub migrate_from_owner: Option<String>,
    /// `--txt-adopt-from-owner`: the records this owner id released to us (and the plan found identical
    /// to ours) are taken over.
    pub adopt_from_owner: Option<String>,
}

impl Default for OwnershipConfig {
    fn default() -> Self {
        OwnershipConfig {
            owner_id: "default".to_string(),
            prefix: String::new(),
            suffix: String::new(),
            wildcard_replacement: String::new(),
            encrypt_enabled: false,
            encrypt_aes_key: None,
            migrate_from_owner: None,
            adopt_from_owner: None,
        }
    }
}

/// How extdns marks the records it owns: owner id, the names of ownership records, their encryption.
/// Validated once; the plan's owner id and the TXT registry both come from one value.
#[derive(Debug, Clone)]
pub struct Ownership {
    owner_id: String,
    wildcard_replacement: String,
    mapper: NameMapper,
    /// The key to read encrypted records with, and to write with when `encrypt` is set.
    key: Option<AesKey>,
    encrypt: bool,
    migrate_from: Option<String>,
    adopt_from: Option<String>,
}

impl Ownership {
    /// Validate the settings: an owner id, not both prefix and suffix, a usable key, and a key when
    /// encryption is enabled.
    pub fn new(config: OwnershipConfig) -> Result<Ownership, RegistryError> {
        if config.owner_id.is_empty() {
            return Err(RegistryError::EmptyOwnerId);
        }
        if !config.prefix.is_empty() && !config.suffix.is_empty() {
            return Err(RegistryError::PrefixAndSuffix);
        }
        let key = match config.encrypt_aes_key.as_deref() {
            None | Some("") => None,
            Some(k) => Some(AesKey::parse(k).map_err(RegistryError::InvalidKey)?),
        };
        if config.encrypt_enabled && key.is_none() {
            return Err(RegistryError::EncryptionWithoutKey);
        }
        let adopt_from = config.adopt_from_owner.filter(|o| !o.is_empty());
        if adopt_from.as_deref() == Some(config.owner_id.as_str()) {
            return Err(RegistryError::AdoptFromSelf(config.owner_id));
        }
        Ok(Ownership {
            mapper: NameMapper::new(&config.prefix, &config.suffix, &config.wildcard_replacement),
            owner_id: config.owner_id,
            wildcard_replacement: config.wildcard_replacement,
            key,
            encrypt: config.encrypt_enabled,
            migrate_from: config.migrate_from_owner.filter(|o| !o.is_empty()),
            adopt_from,
        })
    }

    /// The `--txt-owner-id` this instance writes and recognises.
    pub fn owner_id(&self) -> &str {
        &self.owner_id
    }

    /// The previous owner id whose records are being taken over, if any.
    pub fn migrate_from(&self) -> Option<&str> {
        self.migrate_from.as_deref()
    }

    /// The owner id whose released records are taken over (`--txt-adopt-from-owner`), if any.
    pub fn adopt_from(&self) -> Option<&str> {
        self.adopt_from.as_deref()
    }

    /// Whether `r` (another owner's record) is one we take over: its owner is the one we adopt from, and
    /// its ownership record says it was released to us. The plan asks for it only where the record is
    /// identical to ours.
    pub fn adopts(&self, r: &Endpoint) -> bool {
        crate::claims::adopts(self.adopt_from(), &self.owner_id, r)
    }

    /// The name mapper, e.g. to show users which TXT name a record gets.
    pub fn mapper(&self) -> &NameMapper {
        &self.mapper
    }

    /// `--txt-wildcard-replacement` as given (the DynamoDB registry's migration finds TXT records by it).
    pub fn wildcard_replacement(&self) -> &str {
        &self.wildcard_replacement
    }

    /// Whether ownership records are written encrypted (`--txt-encrypt-enabled`).
    pub fn encrypts(&self) -> bool {
        self.encrypt
    }

    /// The key ownership records are read with, if one was given.
    pub fn key(&self) -> Option<&AesKey> {
        self.key.as_ref()
    }

    /// The labels a record's ownership record states: the record's own labels as written (the `resource`
    /// label rendered from the object that asked for it), owned by us. With encryption a fresh nonce is added
    /// where the labels have none, as external-dns does, so the value can be written again byte for byte later.
    pub(crate) fn record_labels(&self, r: &Endpoint) -> Labels {
        let mut labels = r.labels_as_written();
        labels.insert(label::OWNER.to_string(), self.owner_id.clone());
        labels
    }

    /// The value of `r`'s ownership TXT record stating `labels`. With encryption a fresh nonce is added to
    /// `labels` where they have none: the caller keeps it, as the record's labels must name the nonce its
    /// ownership record was sealed under.
    fn txt_value(&self, r: &Endpoint, labels: &mut Labels) -> Result<String, RegistryError> {
        let key = if self.encrypt { self.key.as_ref() } else { None };
        labels::serialize(labels, true, key).map_err(|source| RegistryError::Encrypt {
            record: r.to_string(),
            source,
        })
    }

    /// `r`'s ownership TXT record holding `values`.
    fn txt_endpoint(&self, r: &Endpoint, values: Targets) -> Endpoint {
        let mut txt = Endpoint::new(&self.txt_name(r), RecordType::Txt, std::iter::empty::<&str>())
            .with_set_identifier(r.set_identifier.clone());
        txt.targets = values;
        txt.provider_specific = r.provider_specific.clone();
        txt.labels.insert(label::OWNED_RECORD.to_string(), r.dns_name.clone());
        txt
    }

    /// The ownership TXT record of `r` stating `labels` (which may gain an encryption nonce).
    fn txt_record(&self, r: &Endpoint, labels: &mut Labels) -> Result<Endpoint, RegistryError> {
        let value = self.txt_value(r, labels)?;
        Ok(self.txt_endpoint(r, Targets::new([value])))
    }

    /// The ownership TXT record of `r` as the zone holds it: the values read or written, where `present`
    /// knows them; otherwise (a snapshot read without bookkeeping) as `r`'s labels state it. An update or
    /// delete names exactly these values: one serialised again may differ (another nonce, another
    /// encoding, an older writer) and would leave the stored one behind.
    pub(crate) fn stored_txt_record(
        &self,
        r: &Endpoint,
        present: Option<&OwnershipRecords>,
    ) -> Result<Endpoint, RegistryError> {
        match present.and_then(|p| p.values(&self.txt_name(r), &r.set_identifier)) {
            Some(values) => Ok(self.txt_endpoint(r, values.clone())),
            None => self.txt_record(r, &mut r.labels.clone()),
        }
    }

    /// The name of `r`'s ownership TXT record, as that record holds it.
    pub(crate) fn txt_name(&self, r: &Endpoint) -> String {
        let mut name = self.mapper.to_txt_name(&r.dns_name, &r.record_type);
        // As `Endpoint::new` has it: one trailing dot trimmed.
        if name.ends_with('.') {
            name.pop();
        }
        name
    }

    /// Whose claim the ownership values `values` (of a name we are about to create a record at) are. A
    /// value that names no owner (it does not parse, or states none) is nobody's we know: kept as it is, it
    /// would leave the record without an ownership record, so it counts as a foreign claim.
    pub(crate) fn claim_on(&self, values: &Targets) -> Claim {
        let mut claim = Claim::Ours;
        for value in values.iter() {
            let parsed = labels::parse(value, self.key.as_ref()).ok();
            let Some(owner) = parsed.as_ref().and_then(|l| l.get(label::OWNER)) else {
                return Claim::Unknown;
            };
            if *owner == self.owner_id {
                continue;
            }
            if self.migrate_from() == Some(owner.as_str()) {
                claim = Claim::Replaceable;
            } else {
                return Claim::Foreign(owner.clone());
            }
        }
        claim
    }

    /// `--migrate-from-txt-owner`: a record of the old owner is ours now.
    pub(crate) fn migrate_owner(&self, ep: &mut Endpoint) {
        if let Some(old) = self.migrate_from()
            && ep.owner() == Some(old)
        {
            ep.labels.insert(label::OWNER.to_string(), self.owner_id.clone());
        }
    }
}

/// Whose claim an ownership record found at a name without its record is.
#[derive(Debug, PartialEq)]
pub(crate) enum Claim {
    /// Ours (left from an earlier write): kept as it is.
    Ours,
    /// The owner we take over from (`--migrate-from-txt-owner`): replaced by ours.
    Replaceable,
    /// Another owner's: the record is not created.
    Foreign(String),
    /// A TXT value naming no owner stands at the ownership record's name: nobody's we know, so the record
    /// is not created either (it could get no ownership record of its own there).
    Unknown,
}

/// The TXT registry's settings: who owns what, and how records are read.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TxtRegistryConfig {
    /// Who owns what, and how ownership records are named and encrypted.
    pub ownership: Ownership,
    /// The plan's managed and excluded types: only records of managed types get their TXT record migrated.
    pub managed_types: Vec<RecordType>,
    /// `--exclude-record-types`: never managed, even if listed as managed.
    pub excluded_types: Vec<RecordType>,
    /// `--txt-ownership`: where ownership is written (TXT records, or the records' own metadata where
    /// the provider keeps some: [`crate::MetadataRegistry`]).
    pub store: OwnershipStore,
    /// Shared names (`--shared-owner-ttl`, the heartbeat period): the [`crate::SharedRegistry`] built over
    /// this registry.
    pub shared: crate::SharedConfig,
}

impl TxtRegistryConfig {
    /// external-dns's defaults (A, AAAA and CNAME managed) for these ownership settings.
    pub fn new(ownership: Ownership) -> Self {
        TxtRegistryConfig {
            ownership,
            managed_types: vec![RecordType::A, RecordType::Aaaa, RecordType::Cname],
            excluded_types: Vec::new(),
            store: OwnershipStore::Txt,
            shared: crate::SharedConfig::default(),
        }
    }

    pub(crate) fn is_managed(&self, t: &RecordType) -> bool {
        self.managed_types.contains(t) && !self.excluded_types.contains(t)
    }
}

#[derive(Default)]
struct State {
    /// Names already warned about for an obsolete `cname-` TXT record of an alias A record.
    warned_legacy: HashSet<String>,
}

/// The TXT registry over a provider.
pub struct TxtRegistry {
    provider: Arc<dyn Provider>,
    config: TxtRegistryConfig,
    state: Mutex<State>,
    /// Records already said to be written without an ownership record, or not written because of its name.
    warned: Once,
    /// Ownership records already said to claim one record for several owners.
    contested: Once,
}

impl std::fmt::Debug for TxtRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TxtRegistry")
            .field("owner_id", &self.config.ownership.owner_id)
            .finish_non_exhaustive()
    }
}

impl TxtRegistry {
    /// A TXT registry over `provider`.
    pub fn new(provider: Arc<dyn Provider>, config: TxtRegistryConfig) -> TxtRegistry {
        TxtRegistry {
            provider,
            config,
            state: Mutex::new(State::default()),
            warned: Once::default(),
            contested: Once::default(),
        }
    }

    /// The ownership rules, for callers that render or parse ownership records.
    pub fn ownership(&self) -> &Ownership {
        &self.config.ownership
    }

    /// The settings, for the registry that writes ownership on the records themselves over this one.
    pub(crate) fn config(&self) -> &TxtRegistryConfig {
        &self.config
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Turn the provider's records into records with ownership labels, hiding the registry's TXT records.
    /// Also returns the ownership records read.
    pub(crate) fn read(&self, mut endpoints: Vec<Endpoint>) -> (Vec<Endpoint>, OwnershipRecords) {
        let own = &self.config.ownership;
        // The ownership records are taken out in place, each beside its labels: the other records stay in
        // the provider's vector, not copied into a second one at a full sync's peak.
        let mut labels_of: Vec<Option<Labels>> = Vec::new();
        // Of an ownership record its name, set identifier and values are kept, in a vector of the right size.
        let mut taken: Vec<(String, String, Targets)> =
            Vec::with_capacity(endpoints.iter().filter(|r| r.record_type == RecordType::Txt).count());
        let ownership_records = endpoints
            .extract_if(.., |r| {
                if r.record_type != RecordType::Txt {
                    return false;
                }
                let Some(value) = r.targets.first() else {
                    tracing::error!(name = %r.dns_name, "TXT record has no targets; ignoring it");
                    labels_of.push(None);
                    return true;
                };
                match labels::parse(value, own.key.as_ref()) {
                    Err(InvalidHeritage) => false,
                    Ok(mut l) => {
                        // The values an update or delete of this ownership record names: every ownership
                        // value the name holds (orphans of an earlier writer go with it), never someone's
                        // other TXT value beside them. Each is a claim on the record (#5457).
                        if r.targets.len() > 1 {
                            r.targets.0.retain(|t| labels::parse(t, own.key.as_ref()).is_ok());
                            let others = r.targets.iter().skip(1);
                            let others = others.filter_map(|v| labels::parse(v, own.key.as_ref()).ok());
                            l = claims::of_values(&own.owner_id, l, others, &r.dns_name, |n| self.contested.first(n));
                        }
                        labels_of.push(Some(l));
                        true
                    }
                }
            })
            .map(|r| (r.dns_name, r.set_identifier, r.targets));
        taken.extend(ownership_records);
        // The read kept until the next full sync: without the room its ownership records took.
        endpoints.shrink_to_fit();
        // Which of the records taken out are ownership records (the others had no value).
        let ours: Vec<bool> = labels_of.iter().map(Option::is_some).collect();
        let txts: Vec<(&str, &str, usize)> = taken
            .iter()
            .zip(&ours)
            .enumerate()
            .filter_map(|(at, ((name, set, _), &ours))| ours.then_some((name.as_str(), set.as_str(), at)))
            .collect();
        if txts.is_empty() {
            for ep in &mut endpoints {
                own.migrate_owner(ep);
            }
            return (endpoints, OwnershipRecords::default());
        }

        // Everything below borrows from `txts` and `mapped`: no per-record copies of names.
        let mapped: Vec<(String, RecordType)> = txts
            .iter()
            .map(|(name, _, _)| own.mapper.to_endpoint_name(name))
            .collect();
        let mut owned: HashMap<(&str, &RecordType, &str), usize> = HashMap::with_capacity(txts.len());
        let mut txt_names: HashSet<&str> = HashSet::with_capacity(txts.len());
        for (&(txt_name, set, at), (name, rt)) in txts.iter().zip(&mapped) {
            txt_names.insert(txt_name);
            // Two ownership records of one record (#5457): the first keeps it, the claims settled.
            let Some(&kept) = owned.get(&(name.as_str(), rt, set)) else {
                owned.insert((name.as_str(), rt, set), at);
                continue;
            };
            if let (Some(first), Some(other)) = (labels_of[kept].take(), labels_of[at].clone()) {
                labels_of[kept] =
                    Some(claims::settle(&own.owner_id, first, other).labels(txt_name, |n| self.contested.first(n)));
            }
        }
        // First which ownership record each record has, then the labels: those of an ownership record only
        // one record has (nearly all) move to it rather than being copied.
        let raw_wildcard = own.wildcard_replacement.as_str();
        let old_format = RecordType::default();
        let mut uses = vec![0u32; labels_of.len()];
        let mut found_at: Vec<Option<usize>> = Vec::with_capacity(endpoints.len());
        for ep in &endpoints {
            let lookup_name: Cow<'_, str> = match ep.dns_name.strip_prefix("*.") {
                // As in external-dns the configured spelling is used here while the TXT side is lower-cased,
                // so an upper-case replacement never matches.
                Some(rest) if !raw_wildcard.is_empty() => Cow::Owned(format!("{raw_wildcard}.{rest}")),
                _ if ep.dns_name == "*" && !raw_wildcard.is_empty() => Cow::Borrowed(raw_wildcard),
                _ => Cow::Borrowed(ep.dns_name.as_str()),
            };
            let (name, set) = (lookup_name.as_ref(), ep.set_identifier.as_str());
            let mut found = owned.get(&(name, &ep.record_type, set)).copied();
            let alias_a = ep.record_type == RecordType::A
                && matches!(ep.provider_specific.get("alias"), Some("true") | Some("A"));
            if alias_a && let Some(legacy) = owned.get(&(name, &RecordType::Cname, set)).copied() {
                if self.lock().warned_legacy.insert(ep.dns_name.clone()) {
                    tracing::warn!(
                        name = %ep.dns_name,
                        "the cname- ownership TXT record of this alias A record is obsolete; an a- record is written instead"
                    );
                }
                found = found.or(Some(legacy));
            }
            if found.is_none() && ep.record_type != RecordType::Aaaa {
                found = owned.get(&(name, &old_format, set)).copied();
            }
            if let Some(at) = found {
                uses[at] += 1;
            }
            found_at.push(found);
        }
        drop(owned);
        for (ep, found) in endpoints.iter_mut().zip(found_at) {
            if let Some(at) = found {
                uses[at] -= 1;
                let labels = if uses[at] == 0 {
                    labels_of[at].take()
                } else {
                    labels_of[at].clone()
                };
                if let Some(l) = labels {
                    if ep.labels.is_empty() {
                        ep.labels = l;
                    } else {
                        ep.labels.extend(l.iter().map(|(k, v)| (k.clone(), v.clone())));
                    }
                }
            }
            own.migrate_owner(ep);
            if ep.owner() == Some(own.owner_id.as_str()) && self.config.is_managed(&ep.record_type) {
                let want = own.mapper.to_txt_name(&ep.dns_name, &ep.record_type);
                if !txt_names.contains(want.as_str()) {
                    ep.provider_specific.set(FORCE_UPDATE, "true");
                }
            }
        }
        let mut present = OwnershipRecords::with_capacity(txts.len());
        drop((txt_names, txts, mapped, labels_of));
        for ((name, set, values), ours) in taken.into_iter().zip(ours) {
            if ours {
                present.add(name, &set, values);
            }
        }
        (endpoints, present)
    }
}

/// The ownership records in the zone, by name and set identifier, with their values as read or written:
/// `apply` learns from it which ones exist, and the values an update or delete must name. It lives as long
/// as a sync's snapshot, one entry per record in the zone, so it is kept to one table slot per name: names
/// and values are moved in from the records read, and the usual record without a set identifier allocates
/// nothing more than its value (a hash set per name would cost about 150 bytes per record).
#[derive(Debug, Default)]
pub(crate) struct OwnershipRecords(HashMap<String, SetIdentifiers>);

#[derive(Debug, Default)]
struct SetIdentifiers {
    /// The values of the record without a set identifier, if there is one.
    unset: Option<Targets>,
    /// The set identifiers (routing policies) of the others with their values; few per name, so searched
    /// in order.
    named: Vec<(String, Targets)>,
}

impl OwnershipRecords {
    fn with_capacity(capacity: usize) -> Self {
        OwnershipRecords(HashMap::with_capacity(capacity))
    }

    /// Records the ownership record `name` with `set_identifier` holding `values` (it was read or written).
    fn insert(&mut self, name: String, set_identifier: &str, values: Targets) {
        let ids = self.0.entry(name).or_default();
        if set_identifier.is_empty() {
            ids.unset = Some(values);
        } else if let Some((_, held)) = ids.named.iter_mut().find(|(id, _)| id == set_identifier) {
            *held = values;
        } else {
            ids.named.push((set_identifier.to_owned(), values));
        }
    }

    /// Records the ownership record `name` with `set_identifier` read holding `values`, beside the values
    /// read under that name before (a provider returning each value as a record of its own): an update or
    /// delete names them all, so no claim is left behind.
    fn add(&mut self, name: String, set_identifier: &str, values: Targets) {
        match self.values_mut(&name, set_identifier) {
            Some(held) => held.0.extend(values.0),
            None => self.insert(name, set_identifier, values),
        }
    }

    fn values_mut(&mut self, name: &str, set_identifier: &str) -> Option<&mut Targets> {
        let ids = self.0.get_mut(name)?;
        if set_identifier.is_empty() {
            ids.unset.as_mut()
        } else {
            ids.named
                .iter_mut()
                .find(|(id, _)| id == set_identifier)
                .map(|(_, v)| v)
        }
    }

    /// Forgets the ownership record `name` with `set_identifier` (it was deleted).
    pub(crate) fn remove(&mut self, name: &str, set_identifier: &str) {
        let Some(ids) = self.0.get_mut(name) else {
            return;
        };
        if set_identifier.is_empty() {
            ids.unset = None;
        } else {
            ids.named.retain(|(id, _)| id != set_identifier);
        }
        if ids.unset.is_none() && ids.named.is_empty() {
            self.0.remove(name);
        }
    }

    /// The values of the ownership record `name` with `set_identifier`, if it is there (read or written
    /// since).
    fn values(&self, name: &str, set_identifier: &str) -> Option<&Targets> {
        let ids = self.0.get(name)?;
        if set_identifier.is_empty() {
            ids.unset.as_ref()
        } else {
            ids.named.iter().find(|(id, _)| id == set_identifier).map(|(_, v)| v)
        }
    }

    /// Whether the ownership record `name` with `set_identifier` is there (read or written since).
    pub(crate) fn holds(&self, name: &str, set_identifier: &str) -> bool {
        self.values(name, set_identifier).is_some()
    }

    /// Folds in one ownership change as it was sent.
    fn fold(&mut self, sent: SentOwnership) {
        if let Some((name, set)) = sent.removed {
            self.remove(&name, &set);
        }
        if let Some((name, set, values)) = sent.added {
            self.insert(name, &set, values);
        }
    }
}

/// An ownership change as [`Registry::apply`] sent it, kept for the fold: what it removed and wrote, and the
/// nonce the written values were sealed under.
#[derive(Debug)]
pub(crate) struct SentOwnership {
    /// The ownership record deleted or replaced: name and set identifier.
    removed: Option<(String, String)>,
    /// The ownership record written: name, set identifier and values.
    added: Option<(String, String, Targets)>,
    /// With encryption, the nonce of the written values, which the record's labels name from now on.
    nonce: Option<String>,
}

impl SentOwnership {
    /// What `change` (an ownership change) sent, moved out of it.
    fn new(change: Change, nonce: Option<String>) -> Self {
        let key = |e: Endpoint| (e.dns_name, e.set_identifier);
        let (removed, added) = match change {
            Change::Create(t) => (None, Some(t)),
            Change::Delete(t) => (Some(key(t)), None),
            Change::Update { old, new } => (Some(key(*old)), Some(*new)),
        };
        SentOwnership {
            removed,
            added: added.map(|t| (t.dns_name, t.set_identifier, t.targets)),
            nonce,
        }
    }
}

/// A change as it goes out: the change, the ownership change that must land with it, and (with encryption)
/// the nonce that ownership change's values are sealed under.
struct Planned<'c> {
    change: &'c Change,
    ownership: Option<Change>,
    nonce: Option<String>,
    /// How the change and its ownership change are written ([`Pairing::Together`] without one).
    pairing: Pairing,
    /// Why neither is written, when another owner's ownership record holds the name (#6617).
    claimed: Option<String>,
}

impl Planned<'_> {
    /// Why the change is not sent, if it is not: another owner claims the name, or the provider refuses
    /// its ownership record's name. Known before writing, so a dry run says it too.
    fn withheld(&self) -> Option<ChangeFailure> {
        let why = match (&self.claimed, self.pairing) {
            (Some(why), _) => why.clone(),
            (None, Pairing::Refused(why)) => {
                format!("not written: the provider refuses its ownership record's name ({why})")
            }
            _ => return None,
        };
        Some(ChangeFailure::new(self.change.endpoint(), FailureKind::Refused, why))
    }
}

/// What [`Registry::apply`] did with one change it writes, for the fold.
#[derive(Debug)]
pub(crate) enum Sent {
    /// Written, with the ownership change sent beside it (if any).
    Owned(Option<SentOwnership>),
    /// Written without an ownership record (no zone holds one): the record is not ours.
    Unowned,
    /// Not written: the provider refuses its ownership record's name.
    Withheld,
}

impl TxtRegistry {
    /// Whether a change is written at all: updates and deletes of records that are not ours are dropped,
    /// whatever the plan said, but for the update adopting a record released to us.
    fn writes(&self, change: &Change) -> bool {
        let own = &self.config.ownership;
        let is_ours = |e: &Endpoint| e.owner() == Some(own.owner_id.as_str());
        match change {
            Change::Create(_) => true,
            Change::Delete(r) => is_ours(r),
            Change::Update { old, new } => (is_ours(old) || own.adopts(old)) && is_ours(new),
        }
    }

    /// Each change that is written ([`TxtRegistry::writes`]), with the ownership change that must land with
    /// it. Ownership records removed or replaced are named by the values the zone holds; new ones are sealed
    /// once, here.
    fn with_ownership<'c>(
        &self,
        snapshot: &Snapshot,
        changes: &'c [Change],
    ) -> Result<Vec<Planned<'c>>, RegistryError> {
        let own = &self.config.ownership;
        let present = snapshot.ownership_records.as_ref();
        let txt_exists = |t: &Endpoint| present.is_some_and(|p| p.holds(&t.dns_name, &t.set_identifier));
        let txt_absent = |t: &Endpoint| present.is_some_and(|p| !p.holds(&t.dns_name, &t.set_identifier));
        // The nonce a new ownership record was sealed under, for the fold to put in its record's labels.
        let nonce = |labels: &Labels| {
            own.encrypt
                .then(|| labels.get(label::TXT_ENCRYPTION_NONCE).cloned())
                .flatten()
        };

        let mut planned: Vec<Planned<'_>> = Vec::with_capacity(changes.len());
        for change in changes.iter().filter(|c| self.writes(c)) {
            let mut claimed = None;
            let (ownership, sealed) = match change {
                Change::Create(r) => {
                    let mut labels = own.record_labels(r);
                    let txt = own.txt_record(r, &mut labels)?;
                    let held = present.and_then(|p| p.values(&txt.dns_name, &txt.set_identifier));
                    match held.map(|values| own.claim_on(values)) {
                        None => (Some(Change::Create(txt)), nonce(&labels)),
                        Some(Claim::Ours) => (None, None),
                        // An ownership record left by the owner we take over from: replaced by ours.
                        Some(Claim::Replaceable) => {
                            let stored = own.stored_txt_record(r, present)?;
                            (Some(Change::update(stored, txt)), nonce(&labels))
                        }
                        // Another owner's ownership record without its record (#6617): external-dns creates
                        // the record without one, and from then on neither owner manages it.
                        Some(Claim::Foreign(owner)) => {
                            claimed = Some(format!(
                                "not created: its ownership record {} belongs to owner {owner:?} (remove it, or \
                                 take the name over with --migrate-from-txt-owner={owner})",
                                txt.dns_name
                            ));
                            (None, None)
                        }
                        Some(Claim::Unknown) => {
                            claimed = Some(format!(
                                "not created: its ownership record's name {} holds a TXT value that names no \
                                 owner (remove it, or set --txt-prefix or --txt-suffix to write ownership \
                                 records elsewhere)",
                                txt.dns_name
                            ));
                            (None, None)
                        }
                    }
                }
                Change::Delete(r) => {
                    let txt = own.stored_txt_record(r, present)?;
                    // A TXT record known to be absent is not deleted: strict providers refuse deleting what is
                    // not there.
                    ((!txt_absent(&txt)).then_some(Change::Delete(txt)), None)
                }
                Change::Update { old, new } => {
                    let old_txt = own.stored_txt_record(old, present)?;
                    let mut labels = new.labels_as_written();
                    let new_txt = own.txt_record(new, &mut labels)?;
                    let ownership = if txt_absent(&old_txt) {
                        // The TXT record is missing (a forced update writing the new format): create it rather
                        // than update a record that does not exist.
                        (!txt_exists(&new_txt)).then_some(Change::Create(new_txt))
                    } else {
                        Some(Change::update(old_txt, new_txt))
                    };
                    (ownership, nonce(&labels))
                }
            };
            let (mut ownership, mut sealed) = (ownership, sealed);
            let pairing = match &ownership {
                Some(o) => placement::pairing(self.provider.as_ref(), &snapshot.provider, change, o),
                None => Pairing::Together,
            };
            if let Some(o) = &ownership {
                let txt = &o.endpoint().dns_name;
                match pairing {
                    Pairing::Unowned => {
                        placement::warn_unowned(&self.warned, change.endpoint(), txt);
                        (ownership, sealed) = (None, None);
                    }
                    Pairing::Refused(why) => placement::warn_refused(&self.warned, change.endpoint(), txt, why),
                    Pairing::Together | Pairing::Apart => {}
                }
            }
            planned.push(Planned {
                change,
                ownership,
                nonce: sealed,
                pairing,
                claimed,
            });
        }
        Ok(planned)
    }
}

#[async_trait]
impl Registry for TxtRegistry {
    fn withheld(&self, snapshot: &Snapshot, changes: &[Change]) -> Result<Vec<ChangeFailure>, RegistryError> {
        let planned = self.with_ownership(snapshot, changes)?;
        Ok(planned.iter().filter_map(Planned::withheld).collect())
    }

    async fn records(&self) -> Result<Snapshot, RegistryError> {
        let read = self.provider.records().await?;
        let (records, present) = self.read(read.endpoints);
        Ok(Snapshot {
            records: records.into(),
            provider: read.state,
            ownership_records: Some(present),
            registry: Vec::new(),
        })
    }

    async fn apply(&self, snapshot: &Snapshot, changes: &[Change]) -> Result<Written, RegistryError> {
        let planned = self.with_ownership(snapshot, changes)?;
        let mut units: Vec<Unit<'_>> = Vec::with_capacity(planned.len());
        let mut apart: Vec<(&Change, &Change)> = Vec::new();
        // Not sent: reported refused, per record, whether the rest succeeds or fails in part.
        let mut withheld = Vec::new();
        for p in &planned {
            if let Some(refused) = p.withheld() {
                withheld.push(refused);
                continue;
            }
            match (p.pairing, &p.ownership) {
                (Pairing::Apart, Some(o)) => apart.push((p.change, o)),
                (_, ownership) => units.push(Unit {
                    change: p.change,
                    ownership: ownership.as_ref(),
                }),
            }
        }
        placement::write(self.provider.as_ref(), &snapshot.provider, &units, &apart, &withheld).await?;
        drop((units, apart));
        // The ownership records go to the fold as sent: sealing them again would pick another nonce.
        let ownership = planned
            .into_iter()
            .map(|p| match p.pairing {
                _ if p.claimed.is_some() => Sent::Withheld,
                Pairing::Refused(_) => Sent::Withheld,
                Pairing::Unowned => Sent::Unowned,
                Pairing::Together | Pairing::Apart => Sent::Owned(p.ownership.map(|o| SentOwnership::new(o, p.nonce))),
            })
            .collect();
        Ok(Written {
            ownership,
            registry: None,
            withheld,
        })
    }

    /// Folds each written change in as `apply` wrote it, one at a time, its ownership record as `written`
    /// holds it: nothing is sealed or serialised again.
    fn fold_applied(&self, snapshot: &mut Snapshot, changes: &[Change], written: Written) -> bool {
        let own = &self.config.ownership;
        // Per change written, whether it is ours, and the nonce its ownership record was sealed under.
        let mut nonces: Vec<(bool, Option<String>)> = Vec::with_capacity(written.ownership.len());
        let mut landed: Vec<&Change> = Vec::with_capacity(written.ownership.len());
        for (change, sent) in changes.iter().filter(|c| self.writes(c)).zip(written.ownership) {
            let mut sent = match sent {
                Sent::Withheld => continue,
                Sent::Unowned => None,
                Sent::Owned(sent) => Some(sent),
            };
            landed.push(change);
            let nonce = sent.as_mut().and_then(|s| s.as_mut().and_then(|s| s.nonce.take()));
            nonces.push((sent.is_some(), nonce));
            if let (Some(Some(sent)), Some(present)) = (sent, snapshot.ownership_records.as_mut()) {
                present.fold(sent);
            }
        }
        snapshot.records.fold(landed.iter().copied(), |at, change| {
            let ours = nonces.get(at).is_none_or(|(ours, _)| *ours);
            let mut labels = match change {
                // Written without an ownership record: as the plan gave it, not ours.
                Change::Create(_) if !ours => return None,
                Change::Create(r) => own.record_labels(r),
                Change::Update { new, .. } => new.labels_as_written(),
                Change::Delete(_) => return None,
            };
            if let Some(nonce) = nonces.get_mut(at).and_then(|(_, n)| n.take()) {
                labels.insert(label::TXT_ENCRYPTION_NONCE.to_string(), nonce);
            }
            Some(labels)
        });
        self.provider.read_state_outlives_writes()
    }

    async fn adjust_endpoints(&self, endpoints: Vec<Endpoint>) -> Result<Vec<Endpoint>, RegistryError> {
        crate::plain_adjusted(self.provider.as_ref(), endpoints).await
    }

    fn domain_filter(&self) -> DomainFilter {
        self.provider.domain_filter()
    }
}
