//! The TXT registry (`--registry=txt`): ownership kept in a TXT record next to every record extdns manages,
//! in external-dns's format, so extdns can take over a zone external-dns manages (and back) without either
//! losing or stealing records.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use extdns_endpoint::{Change, DomainFilter, Endpoint, Labels, RecordType, label};
use extdns_provider::{Provider, Unit};

use crate::crypto::AesKey;
use crate::labels::{self, InvalidHeritage};
use crate::mapper::NameMapper;
use crate::{Registry, RegistryError, Snapshot};

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
        Ok(Ownership {
            mapper: NameMapper::new(&config.prefix, &config.suffix, &config.wildcard_replacement),
            owner_id: config.owner_id,
            wildcard_replacement: config.wildcard_replacement,
            key,
            encrypt: config.encrypt_enabled,
            migrate_from: config.migrate_from_owner.filter(|o| !o.is_empty()),
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

    /// The name mapper, e.g. to show users which TXT name a record gets.
    pub fn mapper(&self) -> &NameMapper {
        &self.mapper
    }

    /// The labels a record's ownership record states: the record's own labels, owned by us. With encryption
    /// a fresh nonce is added where the labels have none, as external-dns does, so the value can be written
    /// again byte for byte later.
    fn record_labels(&self, r: &Endpoint) -> Labels {
        let mut labels = r.labels.clone();
        labels.insert(label::OWNER.to_string(), self.owner_id.clone());
        labels
    }

    /// The ownership TXT record of `r` stating `labels` (which may gain an encryption nonce).
    fn txt_record(&self, r: &Endpoint, labels: &mut Labels) -> Result<Endpoint, RegistryError> {
        let key = if self.encrypt { self.key.as_ref() } else { None };
        let value = labels::serialize(labels, true, key).map_err(|source| RegistryError::Encrypt {
            record: r.to_string(),
            source,
        })?;
        let mut txt =
            Endpoint::new(&self.txt_name(r), RecordType::Txt, [value]).with_set_identifier(r.set_identifier.clone());
        txt.provider_specific = r.provider_specific.clone();
        txt.labels.insert(label::OWNED_RECORD.to_string(), r.dns_name.clone());
        Ok(txt)
    }

    /// The name of `r`'s ownership TXT record, as that record holds it.
    fn txt_name(&self, r: &Endpoint) -> String {
        let mut name = self.mapper.to_txt_name(&r.dns_name, &r.record_type);
        // As `Endpoint::new` has it: one trailing dot trimmed.
        if name.ends_with('.') {
            name.pop();
        }
        name
    }

    /// The labels `r` carries once written with its ownership record `labels`: with encryption, the nonce
    /// the value is sealed under is one of them.
    fn written_labels(&self, r: &Endpoint, mut labels: Labels) -> Result<Labels, RegistryError> {
        if self.encrypt {
            self.txt_record(r, &mut labels)?;
        }
        Ok(labels)
    }

    /// `--migrate-from-txt-owner`: a record of the old owner is ours now.
    fn migrate_owner(&self, ep: &mut Endpoint) {
        if let Some(old) = self.migrate_from()
            && ep.owner() == Some(old)
        {
            ep.labels.insert(label::OWNER.to_string(), self.owner_id.clone());
        }
    }
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
}

impl TxtRegistryConfig {
    /// external-dns's defaults (A, AAAA and CNAME managed) for these ownership settings.
    pub fn new(ownership: Ownership) -> Self {
        TxtRegistryConfig {
            ownership,
            managed_types: vec![RecordType::A, RecordType::Aaaa, RecordType::Cname],
            excluded_types: Vec::new(),
        }
    }

    fn is_managed(&self, t: &RecordType) -> bool {
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
        }
    }

    /// The ownership rules, for callers that render or parse ownership records.
    pub fn ownership(&self) -> &Ownership {
        &self.config.ownership
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Turn the provider's records into records with ownership labels, hiding the registry's TXT records.
    /// Also returns the ownership records read.
    fn read(&self, mut endpoints: Vec<Endpoint>) -> (Vec<Endpoint>, OwnershipRecords) {
        let own = &self.config.ownership;
        // The ownership records are taken out in place, each beside its labels: the other records stay in
        // the provider's vector, not copied into a second one at a full sync's peak.
        let mut labels_of: Vec<Option<Labels>> = Vec::new();
        // Of an ownership record only its name and set identifier are kept, in a vector of the right size.
        let mut taken: Vec<(String, String)> =
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
                    Ok(l) => {
                        labels_of.push(Some(l));
                        true
                    }
                }
            })
            .map(|r| (r.dns_name, r.set_identifier));
        taken.extend(ownership_records);
        // The read kept until the next full sync: without the room its ownership records took.
        endpoints.shrink_to_fit();
        // Which of the records taken out are ownership records (the others had no value).
        let ours: Vec<bool> = labels_of.iter().map(Option::is_some).collect();
        let txts: Vec<(&str, &str, usize)> = taken
            .iter()
            .zip(&ours)
            .enumerate()
            .filter_map(|(at, ((name, set), &ours))| ours.then_some((name.as_str(), set.as_str(), at)))
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
            owned.insert((name.as_str(), rt, set), at);
            txt_names.insert(txt_name);
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
        for ((name, set), ours) in taken.into_iter().zip(ours) {
            if ours {
                present.insert(name, &set);
            }
        }
        (endpoints, present)
    }
}

/// The ownership records a read found, by name and set identifier, for `apply` to know which ones exist.
/// It lives as long as a sync's snapshot, one entry per record in the zone, so it is kept to one table slot
/// per name: names are moved in from the records read, and the usual record without a set identifier
/// allocates nothing more (a hash set per name would cost about 150 bytes per record).
#[derive(Debug, Default)]
pub(crate) struct OwnershipRecords(HashMap<String, SetIdentifiers>);

#[derive(Debug, Default)]
struct SetIdentifiers {
    /// There is a record without a set identifier.
    unset: bool,
    /// The set identifiers (routing policies) of the others; few per name, so searched in order.
    named: Vec<String>,
}

impl OwnershipRecords {
    fn with_capacity(capacity: usize) -> Self {
        OwnershipRecords(HashMap::with_capacity(capacity))
    }

    /// Records the ownership record `name` with `set_identifier` (it was read or written); once only.
    fn insert(&mut self, name: String, set_identifier: &str) {
        let ids = self.0.entry(name).or_default();
        if set_identifier.is_empty() {
            ids.unset = true;
        } else if !ids.named.iter().any(|id| id == set_identifier) {
            ids.named.push(set_identifier.to_owned());
        }
    }

    /// Forgets the ownership record `name` with `set_identifier` (it was deleted).
    fn remove(&mut self, name: &str, set_identifier: &str) {
        let Some(ids) = self.0.get_mut(name) else {
            return;
        };
        if set_identifier.is_empty() {
            ids.unset = false;
        } else {
            ids.named.retain(|id| id != set_identifier);
        }
        if !ids.unset && ids.named.is_empty() {
            self.0.remove(name);
        }
    }

    /// Whether the ownership record `name` with `set_identifier` is there (read or written since).
    fn holds(&self, name: &str, set_identifier: &str) -> bool {
        self.0.get(name).is_some_and(|ids| {
            if set_identifier.is_empty() {
                ids.unset
            } else {
                ids.named.iter().any(|id| id == set_identifier)
            }
        })
    }
}

/// A change as it goes out: the change and the ownership change that must land with it.
type Planned<'c> = (&'c Change, Option<Change>);

impl TxtRegistry {
    /// Whether a change is written at all: updates and deletes of records that are not ours are dropped,
    /// whatever the plan said.
    fn writes(&self, change: &Change) -> bool {
        let is_ours = |e: &Endpoint| e.owner() == Some(self.config.ownership.owner_id.as_str());
        match change {
            Change::Create(_) => true,
            Change::Delete(r) => is_ours(r),
            Change::Update { old, new } => is_ours(old) && is_ours(new),
        }
    }

    /// Each change that is written ([`TxtRegistry::writes`]), with the ownership change that must land with
    /// it.
    fn with_ownership<'c>(
        &self,
        snapshot: &Snapshot,
        changes: &'c [Change],
    ) -> Result<Vec<Planned<'c>>, RegistryError> {
        let own = &self.config.ownership;
        let present = snapshot.ownership_records.as_ref();
        let txt_exists = |t: &Endpoint| present.is_some_and(|p| p.holds(&t.dns_name, &t.set_identifier));
        let txt_absent = |t: &Endpoint| present.is_some_and(|p| !p.holds(&t.dns_name, &t.set_identifier));

        let mut planned: Vec<Planned<'_>> = Vec::with_capacity(changes.len());
        for change in changes.iter().filter(|c| self.writes(c)) {
            let ownership = match change {
                Change::Create(r) => {
                    let txt = own.txt_record(r, &mut own.record_labels(r))?;
                    (!txt_exists(&txt)).then_some(Change::Create(txt))
                }
                Change::Delete(r) => {
                    let txt = own.txt_record(r, &mut r.labels.clone())?;
                    // A TXT record known to be absent is not deleted: strict providers refuse deleting what is
                    // not there.
                    (!txt_absent(&txt)).then_some(Change::Delete(txt))
                }
                Change::Update { old, new } => {
                    let old_txt = own.txt_record(old, &mut old.labels.clone())?;
                    let new_txt = own.txt_record(new, &mut new.labels.clone())?;
                    if txt_absent(&old_txt) {
                        // The TXT record is missing (a forced update writing the new format): create it rather
                        // than update a record that does not exist.
                        (!txt_exists(&new_txt)).then_some(Change::Create(new_txt))
                    } else {
                        Some(Change::update(old_txt, new_txt))
                    }
                }
            };
            planned.push((change, ownership));
        }
        Ok(planned)
    }
}

#[async_trait]
impl Registry for TxtRegistry {
    async fn records(&self) -> Result<Snapshot, RegistryError> {
        let read = self.provider.records().await?;
        let (records, present) = self.read(read.endpoints);
        Ok(Snapshot {
            records: records.into(),
            provider: read.state,
            ownership_records: Some(present),
        })
    }

    async fn apply(&self, snapshot: &Snapshot, changes: &[Change]) -> Result<(), RegistryError> {
        let planned = self.with_ownership(snapshot, changes)?;
        let units: Vec<Unit<'_>> = planned
            .iter()
            .map(|(change, ownership)| Unit {
                change,
                ownership: ownership.as_ref(),
            })
            .collect();

        Ok(self.provider.apply(&snapshot.provider, &units).await?)
    }

    /// Folds each written change in as `apply` wrote it, one at a time: building every ownership record
    /// again here, as `apply` needed them, would hold a second record per change at a first sync's peak.
    fn fold_applied(&self, snapshot: &mut Snapshot, changes: &[Change]) -> bool {
        let own = &self.config.ownership;
        let written = changes.iter().filter(|c| self.writes(c));
        if let Some(present) = snapshot.ownership_records.as_mut() {
            // Whether an ownership record was there or not, it is after a create or update and is not after
            // a delete.
            for change in written.clone() {
                if let Some(old) = change.previous() {
                    present.remove(&own.txt_name(old), &old.set_identifier);
                }
                if !matches!(change, Change::Delete(_)) {
                    let r = change.endpoint();
                    present.insert(own.txt_name(r), &r.set_identifier);
                }
            }
        }
        let mut failed = false;
        snapshot.records.fold(written, |change| {
            let labels = match change {
                Change::Create(r) => own.written_labels(r, own.record_labels(r)),
                Change::Update { new, .. } => own.written_labels(new, new.labels.clone()),
                Change::Delete(_) => return None,
            };
            // `apply` sealed the same labels, so this does not fail; if it did, what the cache holds is not
            // known and the caller reads again.
            labels.inspect_err(|_| failed = true).ok()
        });
        !failed && self.provider.read_state_outlives_writes()
    }

    async fn adjust_endpoints(&self, endpoints: Vec<Endpoint>) -> Result<Vec<Endpoint>, RegistryError> {
        Ok(self.provider.adjust_endpoints(endpoints).await?)
    }

    fn domain_filter(&self) -> DomainFilter {
        self.provider.domain_filter()
    }
}
