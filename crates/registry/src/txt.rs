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
        let name = self.mapper.to_txt_name(&r.dns_name, &r.record_type);
        let mut txt = Endpoint::new(&name, RecordType::Txt, [value]).with_set_identifier(r.set_identifier.clone());
        txt.provider_specific = r.provider_specific.clone();
        txt.labels.insert(label::OWNED_RECORD.to_string(), r.dns_name.clone());
        Ok(txt)
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
    fn read(&self, records: Vec<Endpoint>) -> (Vec<Endpoint>, OwnershipRecords) {
        let own = &self.config.ownership;
        let mut endpoints = Vec::with_capacity(records.len());
        let mut txts: Vec<(Endpoint, Labels)> = Vec::new();
        for r in records {
            if r.record_type != RecordType::Txt {
                endpoints.push(r);
                continue;
            }
            let Some(value) = r.targets.first() else {
                tracing::error!(name = %r.dns_name, "TXT record has no targets; ignoring it");
                continue;
            };
            match labels::parse(value, own.key.as_ref()) {
                Err(InvalidHeritage) => endpoints.push(r),
                Ok(l) => txts.push((r, l)),
            }
        }
        if txts.is_empty() {
            for ep in &mut endpoints {
                own.migrate_owner(ep);
            }
            return (endpoints, OwnershipRecords::default());
        }

        // Everything below borrows from `txts` and `mapped`: no per-record copies of names or labels.
        let mapped: Vec<(String, RecordType)> = txts
            .iter()
            .map(|(t, _)| own.mapper.to_endpoint_name(&t.dns_name))
            .collect();
        let mut owned: HashMap<(&str, &RecordType, &str), &Labels> = HashMap::with_capacity(txts.len());
        let mut txt_names: HashSet<&str> = HashSet::with_capacity(txts.len());
        for ((t, l), (name, rt)) in txts.iter().zip(&mapped) {
            owned.insert((name.as_str(), rt, t.set_identifier.as_str()), l);
            txt_names.insert(t.dns_name.as_str());
        }
        let raw_wildcard = own.wildcard_replacement.as_str();
        let old_format = RecordType::default();
        for ep in &mut endpoints {
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
            if let Some(l) = found {
                if ep.labels.is_empty() {
                    ep.labels = l.clone();
                } else {
                    ep.labels.extend(l.iter().map(|(k, v)| (k.clone(), v.clone())));
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
        drop((owned, txt_names));
        let mut present = OwnershipRecords::with_capacity(txts.len());
        for (t, _) in txts {
            present.insert(t.dns_name, t.set_identifier);
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

    fn insert(&mut self, name: String, set_identifier: String) {
        let ids = self.0.entry(name).or_default();
        if set_identifier.is_empty() {
            ids.unset = true;
        } else {
            ids.named.push(set_identifier);
        }
    }

    /// Forgets the ownership record `txt` (it was deleted).
    fn remove(&mut self, txt: &Endpoint) {
        let Some(ids) = self.0.get_mut(&txt.dns_name) else {
            return;
        };
        if txt.set_identifier.is_empty() {
            ids.unset = false;
        } else {
            ids.named.retain(|id| *id != txt.set_identifier);
        }
        if !ids.unset && ids.named.is_empty() {
            self.0.remove(&txt.dns_name);
        }
    }

    /// Whether the ownership record `txt` was read.
    fn holds(&self, txt: &Endpoint) -> bool {
        self.0.get(&txt.dns_name).is_some_and(|ids| {
            if txt.set_identifier.is_empty() {
                ids.unset
            } else {
                ids.named.contains(&txt.set_identifier)
            }
        })
    }
}

/// A change as it goes out: the change, the ownership change that must land with it, and the labels the
/// record carries once written.
type Planned<'c> = (&'c Change, Option<Change>, Labels);

impl TxtRegistry {
    /// Each change that goes out, with the ownership change that must land with it and the labels the
    /// record carries once written. Updates and deletes of records that are not ours are dropped here,
    /// whatever the plan said.
    fn with_ownership<'c>(
        &self,
        snapshot: &Snapshot,
        changes: &'c [Change],
    ) -> Result<Vec<Planned<'c>>, RegistryError> {
        let own = &self.config.ownership;
        let is_ours = |e: &Endpoint| e.owner() == Some(own.owner_id.as_str());
        let present = snapshot.ownership_records.as_ref();
        let txt_exists = |t: &Endpoint| present.is_some_and(|p| p.holds(t));
        let txt_absent = |t: &Endpoint| present.is_some_and(|p| !p.holds(t));

        let mut planned: Vec<Planned<'_>> = Vec::with_capacity(changes.len());
        for change in changes {
            let (ownership, labels) = match change {
                Change::Create(r) => {
                    let mut labels = own.record_labels(r);
                    let txt = own.txt_record(r, &mut labels)?;
                    ((!txt_exists(&txt)).then_some(Change::Create(txt)), labels)
                }
                Change::Delete(r) if is_ours(r) => {
                    let mut labels = r.labels.clone();
                    let txt = own.txt_record(r, &mut labels)?;
                    // A TXT record known to be absent is not deleted: strict providers refuse deleting what is
                    // not there.
                    ((!txt_absent(&txt)).then_some(Change::Delete(txt)), labels)
                }
                Change::Update { old, new } if is_ours(old) && is_ours(new) => {
                    let mut old_labels = old.labels.clone();
                    let old_txt = own.txt_record(old, &mut old_labels)?;
                    let mut labels = new.labels.clone();
                    let new_txt = own.txt_record(new, &mut labels)?;
                    let txt = if txt_absent(&old_txt) {
                        // The TXT record is missing (a forced update writing the new format): create it rather
                        // than update a record that does not exist.
                        (!txt_exists(&new_txt)).then_some(Change::Create(new_txt))
                    } else {
                        Some(Change::update(old_txt, new_txt))
                    };
                    (txt, labels)
                }
                Change::Delete(_) | Change::Update { .. } => continue,
            };
            planned.push((change, ownership, labels));
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
            .map(|(change, ownership, _)| Unit {
                change,
                ownership: ownership.as_ref(),
            })
            .collect();

        Ok(self.provider.apply(&snapshot.provider, &units).await?)
    }

    fn fold_applied(&self, snapshot: &mut Snapshot, changes: &[Change]) -> bool {
        let Ok(planned) = self.with_ownership(snapshot, changes) else {
            // `apply` could not have written these changes either.
            return false;
        };
        if let Some(present) = snapshot.ownership_records.as_mut() {
            for (_, ownership, _) in &planned {
                match ownership {
                    Some(Change::Create(txt)) => present.insert(txt.dns_name.clone(), txt.set_identifier.clone()),
                    Some(Change::Delete(txt)) => present.remove(txt),
                    Some(Change::Update { old, new }) => {
                        present.remove(old);
                        present.insert(new.dns_name.clone(), new.set_identifier.clone());
                    }
                    None => {}
                }
            }
        }
        snapshot
            .records
            .fold(planned.into_iter().map(|(change, _, labels)| (change, Some(labels))));
        self.provider.read_state_outlives_writes()
    }

    async fn adjust_endpoints(&self, endpoints: Vec<Endpoint>) -> Result<Vec<Endpoint>, RegistryError> {
        Ok(self.provider.adjust_endpoints(endpoints).await?)
    }

    fn domain_filter(&self) -> DomainFilter {
        self.provider.domain_filter()
    }
}
