//! The TXT registry (`--registry=txt`): ownership kept in a TXT record next to every record extdns manages,
//! in external-dns's format, so extdns can take over a zone external-dns manages (and back) without either
//! losing or stealing records.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use extdns_endpoint::{Changes, DomainFilter, Endpoint, Labels, RecordType, label};
use extdns_provider::Provider;

use crate::crypto::AesKey;
use crate::labels::{self, InvalidHeritage};
use crate::mapper::NameMapper;
use crate::{Registry, RegistryError};

/// Provider-specific property the registry sets on an owned record whose new-format TXT record is missing, so
/// the plan updates it and the TXT record gets written.
pub const FORCE_UPDATE: &str = "txt/force-update";

/// The TXT registry's settings (the `--txt-*` flags).
#[derive(Debug, Clone, PartialEq)]
pub struct TxtRegistryConfig {
    /// `--txt-owner-id` (default `default`); must not be empty.
    pub owner_id: String,
    /// `--txt-prefix`, may contain `%{record_type}`.
    pub prefix: String,
    /// `--txt-suffix`, may contain `%{record_type}`; exclusive with the prefix.
    pub suffix: String,
    /// `--txt-wildcard-replacement`: replaces a leading `*` label in TXT names.
    pub wildcard_replacement: String,
    /// `--txt-encrypt-enabled`: write encrypted values (needs the key).
    pub encrypt_enabled: bool,
    /// `--txt-encrypt-aes-key`: 32 bytes, raw or standard base64. Without `encrypt_enabled` it is still used
    /// to read encrypted records.
    pub encrypt_aes_key: Option<String>,
    /// `--migrate-from-txt-owner`: records owned by this id are taken over.
    pub migrate_from_owner: Option<String>,
    /// `--txt-cache-interval`: reuse the records read for this long (zero: read every time).
    pub cache_interval: Duration,
    /// The plan's managed and excluded types: only records of managed types get their TXT record migrated.
    pub managed_types: Vec<RecordType>,
    pub excluded_types: Vec<RecordType>,
}

impl Default for TxtRegistryConfig {
    fn default() -> Self {
        TxtRegistryConfig {
            owner_id: "default".to_string(),
            prefix: String::new(),
            suffix: String::new(),
            wildcard_replacement: String::new(),
            encrypt_enabled: false,
            encrypt_aes_key: None,
            migrate_from_owner: None,
            cache_interval: Duration::ZERO,
            managed_types: vec![RecordType::A, RecordType::Aaaa, RecordType::Cname],
            excluded_types: Vec::new(),
        }
    }
}

impl TxtRegistryConfig {
    /// The startup checks: an owner id, not both prefix and suffix, a usable key, and a key when encryption
    /// is enabled. Returns the parsed key.
    pub fn validate(&self) -> Result<Option<AesKey>, RegistryError> {
        if self.owner_id.is_empty() {
            return Err(RegistryError::Config("--txt-owner-id must not be empty".to_string()));
        }
        if !self.prefix.is_empty() && !self.suffix.is_empty() {
            return Err(RegistryError::Config(
                "--txt-prefix and --txt-suffix are mutually exclusive; set only one".to_string(),
            ));
        }
        let key = match self.encrypt_aes_key.as_deref() {
            None | Some("") => None,
            Some(k) => {
                Some(AesKey::parse(k).map_err(|e| RegistryError::Config(format!("--txt-encrypt-aes-key: {e}")))?)
            }
        };
        if self.encrypt_enabled && key.is_none() {
            return Err(RegistryError::Config(
                "--txt-encrypt-enabled needs --txt-encrypt-aes-key (32 bytes, raw or standard base64)".to_string(),
            ));
        }
        Ok(key)
    }

    fn is_managed(&self, t: &RecordType) -> bool {
        self.managed_types.contains(t) && !self.excluded_types.contains(t)
    }
}

/// What one `records()` learnt about the registry's TXT records, used by the following `apply_changes`.
#[derive(Default)]
struct State {
    /// (TXT name, set identifier) of every valid registry TXT record seen.
    existing: HashSet<(String, String)>,
    /// Whether `existing` comes from reading the provider (false when the records came from the cache, or
    /// before the first read): only then may its absence of a TXT record be trusted.
    existing_known: bool,
    cache: Option<(Instant, Vec<Endpoint>)>,
    /// Names already warned about for an obsolete `cname-` TXT record of an alias A record.
    warned_legacy: HashSet<String>,
}

/// The TXT registry over a provider.
pub struct TxtRegistry {
    provider: Arc<dyn Provider>,
    config: TxtRegistryConfig,
    mapper: NameMapper,
    key: Option<AesKey>,
    state: Mutex<State>,
}

impl std::fmt::Debug for TxtRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TxtRegistry")
            .field("owner_id", &self.config.owner_id)
            .finish_non_exhaustive()
    }
}

impl TxtRegistry {
    /// Validate the configuration ([`TxtRegistryConfig::validate`]) and build the registry.
    pub fn new(provider: Arc<dyn Provider>, config: TxtRegistryConfig) -> Result<TxtRegistry, RegistryError> {
        let key = config.validate()?;
        let mapper = NameMapper::new(&config.prefix, &config.suffix, &config.wildcard_replacement);
        Ok(TxtRegistry {
            provider,
            config,
            mapper,
            key,
            state: Mutex::new(State::default()),
        })
    }

    /// The name mapper, e.g. to show users which TXT name a record gets.
    pub fn mapper(&self) -> &NameMapper {
        &self.mapper
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn old_owner(&self) -> Option<&str> {
        self.config.migrate_from_owner.as_deref().filter(|o| !o.is_empty())
    }

    /// The ownership TXT record of `r` (new format), from `r`'s own labels. With encryption a fresh nonce is
    /// stored in `r`'s labels, as external-dns does, so the value is reproducible afterwards.
    fn txt_record(&self, r: &mut Endpoint) -> Result<Endpoint, RegistryError> {
        if let Some(old) = self.old_owner()
            && r.owner() == Some(old)
        {
            r.labels.insert(label::OWNER.to_string(), self.config.owner_id.clone());
        }
        let key = if self.config.encrypt_enabled {
            self.key.as_ref()
        } else {
            None
        };
        let value = labels::serialize(&mut r.labels, true, key)
            .map_err(|e| RegistryError::Config(format!("cannot encrypt the TXT record of {r}: {e}")))?;
        let name = self.mapper.to_txt_name(&r.dns_name, &r.record_type);
        let mut txt = Endpoint::new(&name, RecordType::Txt, [value]).with_set_identifier(r.set_identifier.clone());
        txt.provider_specific = r.provider_specific.clone();
        txt.labels.insert(label::OWNED_RECORD.to_string(), r.dns_name.clone());
        Ok(txt)
    }

    /// Turn the provider's records into records with ownership labels, hiding the registry's TXT records.
    /// Also returns (TXT name, set identifier) of every registry TXT record.
    fn read(&self, records: Vec<Endpoint>) -> (Vec<Endpoint>, HashSet<(String, String)>) {
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
            match labels::parse(value, self.key.as_ref()) {
                Err(InvalidHeritage) => endpoints.push(r),
                Ok(l) => txts.push((r, l)),
            }
        }
        if txts.is_empty() {
            for ep in &mut endpoints {
                self.migrate_owner(ep);
            }
            return (endpoints, HashSet::new());
        }

        // Everything below borrows from `txts` and `mapped`: no per-record copies of names or labels.
        let mapped: Vec<(String, RecordType)> = txts
            .iter()
            .map(|(t, _)| self.mapper.to_endpoint_name(&t.dns_name))
            .collect();
        let mut owned: HashMap<(&str, &RecordType, &str), &Labels> = HashMap::with_capacity(txts.len());
        let mut txt_names: HashSet<&str> = HashSet::with_capacity(txts.len());
        for ((t, l), (name, rt)) in txts.iter().zip(&mapped) {
            owned.insert((name.as_str(), rt, t.set_identifier.as_str()), l);
            txt_names.insert(t.dns_name.as_str());
        }
        let raw_wildcard = self.config.wildcard_replacement.as_str();
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
            self.migrate_owner(ep);
            if ep.owner() == Some(self.config.owner_id.as_str()) && self.config.is_managed(&ep.record_type) {
                let want = self.mapper.to_txt_name(&ep.dns_name, &ep.record_type);
                if !txt_names.contains(want.as_str()) {
                    ep.provider_specific.set(FORCE_UPDATE, "true");
                }
            }
        }
        drop((owned, txt_names));
        let existing = txts.into_iter().map(|(t, _)| (t.dns_name, t.set_identifier)).collect();
        (endpoints, existing)
    }

    /// `--migrate-from-txt-owner`: a record of the old owner is ours now.
    fn migrate_owner(&self, ep: &mut Endpoint) {
        if let Some(old) = self.old_owner()
            && ep.owner() == Some(old)
        {
            ep.labels.insert(label::OWNER.to_string(), self.config.owner_id.clone());
        }
    }
}

#[async_trait]
impl Registry for TxtRegistry {
    async fn records(&self) -> Result<Vec<Endpoint>, RegistryError> {
        {
            let mut state = self.lock();
            state.existing.clear();
            state.existing_known = false;
            if !self.config.cache_interval.is_zero()
                && let Some((at, cached)) = &state.cache
                && at.elapsed() < self.config.cache_interval
            {
                tracing::debug!("using cached records");
                return Ok(cached.clone());
            }
        }
        let records = self.provider.records().await?;
        let (endpoints, existing) = self.read(records);
        let mut state = self.lock();
        state.existing = existing;
        state.existing_known = true;
        if !self.config.cache_interval.is_zero() {
            state.cache = Some((Instant::now(), endpoints.clone()));
        }
        Ok(endpoints)
    }

    async fn apply_changes(&self, changes: Changes) -> Result<(), RegistryError> {
        let owner = self.config.owner_id.as_str();
        let is_ours = |e: &Endpoint| e.owner() == Some(owner);
        let (existing, known) = {
            let s = self.lock();
            (s.existing.clone(), s.existing_known)
        };
        let txt_exists = |t: &Endpoint| existing.contains(&(t.dns_name.clone(), t.set_identifier.clone()));

        let mut out = Changes::default();
        let mut txt_creates = Vec::new();
        for mut r in changes.create {
            r.labels.insert(label::OWNER.to_string(), owner.to_string());
            let txt = self.txt_record(&mut r)?;
            if !txt_exists(&txt) {
                txt_creates.push(txt);
            }
            out.create.push(r);
        }
        let mut txt_deletes = Vec::new();
        for mut r in changes.delete.into_iter().filter(|e| is_ours(e)) {
            let txt = self.txt_record(&mut r)?;
            // A TXT record known to be absent is not deleted: strict providers refuse deleting what is not there.
            if !known || txt_exists(&txt) {
                txt_deletes.push(txt);
            }
            out.delete.push(r);
        }
        let (mut txt_old, mut txt_new) = (Vec::new(), Vec::new());
        for (mut old, mut new) in changes.update_old.into_iter().zip(changes.update_new) {
            if !is_ours(&old) || !is_ours(&new) {
                continue;
            }
            let old_txt = self.txt_record(&mut old)?;
            let new_txt = self.txt_record(&mut new)?;
            if known && !txt_exists(&old_txt) {
                // The TXT record is missing (a forced update writing the new format): create it rather than
                // update a record that does not exist.
                if !txt_exists(&new_txt) {
                    txt_creates.push(new_txt);
                }
            } else {
                txt_old.push(old_txt);
                txt_new.push(new_txt);
            }
            out.update_old.push(old);
            out.update_new.push(new);
        }
        let cache_changes = (!self.config.cache_interval.is_zero()).then(|| out.clone());
        out.create.extend(txt_creates);
        out.delete.extend(txt_deletes);
        out.update_old.extend(txt_old);
        out.update_new.extend(txt_new);

        let result = self.provider.apply_changes(&out).await;
        if let Some(c) = cache_changes {
            let mut state = self.lock();
            match (&result, state.cache.as_mut()) {
                (Ok(()), Some((_, cache))) => {
                    for e in c.delete.iter().chain(&c.update_old) {
                        if let Some(i) = cache.iter().position(|x| {
                            x.dns_name == e.dns_name
                                && x.record_type == e.record_type
                                && x.set_identifier == e.set_identifier
                                && x.targets.same(&e.targets)
                        }) {
                            cache.remove(i);
                        }
                    }
                    cache.extend(c.create.into_iter().chain(c.update_new));
                }
                // After a failure the cache no longer knows what the zone holds; read it again next time.
                _ => state.cache = None,
            }
        }
        result.map_err(RegistryError::from)
    }

    async fn adjust_endpoints(&self, endpoints: Vec<Endpoint>) -> Result<Vec<Endpoint>, RegistryError> {
        Ok(self.provider.adjust_endpoints(endpoints).await?)
    }

    fn domain_filter(&self) -> DomainFilter {
        self.provider.domain_filter()
    }

    fn owner_id(&self) -> &str {
        &self.config.owner_id
    }
}
