//! The Azure DNS (`--provider=azure`, `azure-dns`) and Azure Private DNS (`--provider=azure-private-dns`)
//! providers: the zones of one resource group and their record sets through Azure Resource Manager's REST
//! API (2018-05-01 and 2024-06-01), as external-dns's `azure` providers manage them, with `azure.json`
//! credentials.
//!
//! What they add over external-dns: a PUT or DELETE Azure refuses is reported for its record (external-dns
//! logs it and reports success); every write carries the ETag of the read (`If-Match`, or `If-None-Match: *`
//! to create), so a record set someone changed since the read is left alone and planned again from a new
//! read, never overwritten; a record is written before its ownership TXT (so a refused record never leaves
//! an ownership claim on someone else's record set) and a created record whose ownership record fails is
//! undone, so the two land together; an update that would write a record set as it holds already (as read, or as extdns wrote it) is not sent
//! (Azure takes one record set a request: the ownership record of a record whose address changed stays as
//! it is, so a change costs one request, not two); every string of every TXT record is read (external-dns reads the first) and long values are
//! split at 255 characters as Azure stores them; SRV and PTR records are managed; a name Azure refuses
//! (a `*` inside a label: a wildcard's default ownership name `a-*.x`) is known before anything is sent
//! ([`IndexedProvider::zone_of`]), so the registry writes neither the record nor its ownership record.
//!
//! ```
//! use extdns_provider_azure::{AzureConfig, AzureProvider, CredentialSource, Kind};
//!
//! let config = AzureConfig::new(Kind::Public, "sub", "rg", CredentialSource::Token("t".into()));
//! let provider = AzureProvider::new(config)?;
//! # drop(provider);
//! # Ok::<(), extdns_provider_azure::ConfigError>(())
//! ```

mod api;
mod config;
mod credentials;
mod records;

use std::collections::{HashMap, HashSet};
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use async_trait::async_trait;
use extdns_endpoint::{Change, DomainFilter, Endpoint, RecordType, Ttl};
use extdns_provider::batch::{self, Failures, Unit};
use extdns_provider::{CallError, ChangeFailure, FailureKind, IndexedProvider, ProviderError, zone};
use futures::stream::{FuturesUnordered, StreamExt};
use tokio::sync::Mutex;

pub use api::ApiError;
pub use config::{
    AzureConfig, AzureFile, Cloud, ConfigError, IMDS_URL, Kind, PRIVATE_API_VERSION, PUBLIC_API_VERSION, READ_LIMIT,
    WRITE_LIMIT,
};
pub use credentials::{
    CredentialSource, CredentialsError, IMDS_API_VERSION, SourceError, VARIABLES as CREDENTIAL_VARIABLES,
};
pub use records::{DEFAULT_TTL, METADATA_KEYS, METADATA_PREFIX, TAGS, TXT_CHUNK, split_txt};

use api::{Api, Precondition};

/// Record sets written at once ([`IndexedProvider::write`]). Azure takes one record set a request, so a
/// first sync of thousands lasts as many round trips when they are sent one by one; eight overlapping
/// ones take what latency would leave unused of the subscription's budget, and the shared pacer still
/// holds every request to the subscription's rate.
const IN_FLIGHT: usize = 8;

/// Why a name Azure refused once is refused again without asking.
const REFUSED_BEFORE: &str = "Azure refused this name when extdns wrote it before";

/// A zone extdns manages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Zone {
    /// Its name (the DNS name, lower-case, without the trailing dot).
    pub name: String,
    /// Its ARM id.
    pub id: String,
}

/// Record sets as read, by zone, relative name (lower-case, `@` for the apex) and type.
type SetKey = (String, String, String);

/// What extdns knows of one record set: its ETag, and a hash of the properties it holds as extdns writes
/// them ([`records::properties`] of the record as read, or of what extdns wrote since).
#[derive(Debug, Clone)]
struct Known {
    etag: Option<String>,
    holds: u64,
}

/// What a read learnt: the zones and each record set's ETag and content. It serves every write until the
/// next read: each write extdns makes puts in the ETag Azure answers it with and what it wrote (or takes
/// out the deleted set), so the next change of that set is conditional on what extdns wrote, and a write
/// of what the set holds already is known to change nothing.
/// Opaque outside this crate: the provider's [`IndexedProvider::Index`], kept in the read's state.
pub struct ReadZones {
    zones: Arc<Vec<Zone>>,
    sets: std::sync::Mutex<HashMap<SetKey, Known>>,
}

impl ReadZones {
    fn key(zone: &Zone, ep: &Endpoint) -> SetKey {
        (
            zone.name.clone(),
            relative(&ep.dns_name, &zone.name),
            ep.record_type.as_str().to_string(),
        )
    }

    /// The ETag of `ep`'s record set: `None` when the set was not read (nor written since).
    fn etag(&self, zone: &Zone, ep: &Endpoint) -> Option<Option<String>> {
        let sets = self.sets.lock().unwrap_or_else(|p| p.into_inner());
        sets.get(&Self::key(zone, ep)).map(|k| k.etag.clone())
    }

    /// Whether `ep`'s record set holds `properties` already, as read or as extdns wrote it since.
    fn holds(&self, zone: &Zone, ep: &Endpoint, properties: &serde_json::Value) -> bool {
        let sets = self.sets.lock().unwrap_or_else(|p| p.into_inner());
        sets.get(&Self::key(zone, ep))
            .is_some_and(|k| k.holds == fingerprint(properties))
    }

    /// Folds in a write Azure accepted (`properties` sent): the record set's new ETag and content, or no
    /// set after a delete.
    fn wrote(&self, zone: &Zone, change: &Change, etag: Option<String>, properties: Option<&serde_json::Value>) {
        let mut sets = self.sets.lock().unwrap_or_else(|p| p.into_inner());
        let key = Self::key(zone, change.endpoint());
        match (change, properties) {
            (Change::Create(_) | Change::Update { .. }, Some(p)) => {
                sets.insert(
                    key,
                    Known {
                        etag,
                        holds: fingerprint(p),
                    },
                );
            }
            _ => {
                sets.remove(&key);
            }
        }
    }

    /// Forgets a record set extdns deleted again (an undone create).
    fn forget(&self, zone: &Zone, ep: &Endpoint) {
        let mut sets = self.sets.lock().unwrap_or_else(|p| p.into_inner());
        sets.remove(&Self::key(zone, ep));
    }
}

/// The provider. Cheap to share: `Arc<AzureProvider>` as `Arc<dyn Provider>`.
pub struct AzureProvider {
    config: AzureConfig,
    api: Api,
    /// `--azure-zones-cache-duration`: the zone list and when it was read.
    zone_cache: Mutex<Option<(Instant, Arc<Vec<Zone>>)>>,
    /// Ownership record names Azure refused as a bad request (400: a name it will not take; the data of an
    /// ownership record is always valid, and a conflict, 409, may clear, so it is not kept): answered
    /// refused from then on ([`IndexedProvider::zone_of`]), so the registry stops writing a record, being
    /// refused its ownership record and undoing the record at every sync. Kept while the process runs:
    /// the flags that name ownership records (`--txt-prefix`, `--txt-wildcard-replacement`) change only
    /// with a restart.
    refused_names: std::sync::Mutex<HashSet<String>>,
}

impl std::fmt::Debug for AzureProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AzureProvider")
            .field("kind", &self.config.kind)
            .field("resource_group", &self.config.resource_group)
            .finish_non_exhaustive()
    }
}

impl AzureProvider {
    /// Check the configuration and build the HTTP clients. No network access: credentials and the API are
    /// first used by the first sync, where failures are retried.
    pub fn new(config: AzureConfig) -> Result<AzureProvider, ConfigError> {
        if config.subscription_id.trim().is_empty() {
            return Err(ConfigError::Subscription);
        }
        if config.resource_group.trim().is_empty() {
            return Err(ConfigError::ResourceGroup);
        }
        for (what, url) in [
            ("the Resource Manager endpoint", &config.cloud.resource_manager),
            ("the authority host", &config.cloud.authority_host),
        ] {
            extdns_provider::http::parse_url(what, url).map_err(ConfigError::Client)?;
        }
        let tokens = Arc::new(
            credentials::tokens(
                config.credentials.clone(),
                &config.cloud.audience,
                config.api.calls.timeout,
                &config.observer,
            )
            .map_err(ConfigError::Client)?,
        );
        let api = Api::new(&config, tokens)?;
        Ok(AzureProvider {
            config,
            api,
            zone_cache: Mutex::new(None),
            refused_names: std::sync::Mutex::new(HashSet::new()),
        })
    }

    /// The zones the filters select, from the cache while it is fresh. A zone is kept when the domain
    /// filter accepts its name and the zone-id filter its id, or when `--zone-name-filter` names it.
    pub async fn zones(&self) -> Result<Arc<Vec<Zone>>, ProviderError> {
        let c = &self.config;
        let mut cache = self.zone_cache.lock().await;
        if let Some((at, zones)) = cache.as_ref()
            && at.elapsed() < c.zones_cache_duration
        {
            return Ok(zones.clone());
        }
        let all = self.api.zones().await.map_err(|e| {
            ProviderError::from_call(format!("listing the zones of resource group {}", c.resource_group), e)
        })?;
        let mut zones: Vec<Zone> = all
            .into_iter()
            .map(|z| Zone {
                name: z.name.trim_end_matches('.').to_ascii_lowercase(),
                id: z.id,
            })
            .filter(|z| {
                let by_domain =
                    zone::selected(&c.zones.domain_filter, &z.name, false) && c.zones.id_ends_with_one(&z.id);
                by_domain || c.zone_names.iter().any(|f| zone::in_zone(&z.name, f))
            })
            .collect();
        zones.sort_by(|a, b| a.name.cmp(&b.name).then(a.id.cmp(&b.id)));
        tracing::debug!(zones = zones.len(), "Azure zones selected");
        let zones = Arc::new(zones);
        if !c.zones_cache_duration.is_zero() {
            *cache = Some((Instant::now(), zones.clone()));
        }
        Ok(zones)
    }

    /// Write one change of a unit under the ETag of the read; the record set's new ETag after a PUT.
    async fn write(&self, read: &ReadZones, zone: &Zone, change: &Change) -> Result<Option<String>, Written> {
        let ep = change.endpoint();
        let rel = relative(&ep.dns_name, &zone.name);
        let rtype = ep.record_type.as_str();
        let etag = |ep: &Endpoint| read.etag(zone, ep);
        let result = match change {
            Change::Create(ep) => {
                let props = records::properties(self.config.kind, ep).map_err(Written::Invalid)?;
                self.api
                    .put(&zone.name, rtype, &rel, &props, &Precondition::Absent)
                    .await
            }
            Change::Update { old, new } => {
                let props = records::properties(self.config.kind, new).map_err(Written::Invalid)?;
                let when = match etag(old) {
                    Some(Some(e)) => e,
                    Some(None) => return Err(Written::Invalid("the record set was read without an ETag".into())),
                    None => return Err(Written::Invalid("the record set was not in the read".into())),
                };
                if read.holds(zone, new, &props) {
                    // Azure takes one record set a request, so a PUT of what the set holds is a whole
                    // request for nothing: the ownership record of a record whose address changed is such
                    // a set (the registry pairs every record update with one). Its ETag still holds.
                    tracing::trace!(record = %ep.dns_name, r#type = rtype, "record set unchanged, not sent");
                    return Ok(Some(when));
                }
                self.api
                    .put(&zone.name, rtype, &rel, &props, &Precondition::Etag(when))
                    .await
            }
            Change::Delete(ep) => match etag(ep) {
                Some(e) => self
                    .api
                    .delete(&zone.name, rtype, &rel, e.as_deref())
                    .await
                    .map(|()| None),
                None => return Err(Written::Invalid("the record set was not in the read".into())),
            },
        };
        result.map_err(Written::Api)
    }

    /// Undo a record just created when its ownership record could not be written, so neither lands
    /// alone; only while the record set is still as extdns wrote it (`If-Match`). Whether it is gone.
    async fn undo(&self, zone: &Zone, ep: &Endpoint, etag: Option<&str>) -> bool {
        let rel = relative(&ep.dns_name, &zone.name);
        let Some(etag) = etag else {
            tracing::warn!(record = %ep.dns_name, "record created without its ownership record, and Azure gave no ETag to undo it under; the next sync sees it as not extdns's");
            return false;
        };
        match self
            .api
            .delete(&zone.name, ep.record_type.as_str(), &rel, Some(etag))
            .await
        {
            Ok(()) => {
                tracing::info!(record = %ep.dns_name, r#type = %ep.record_type, "record undone: its ownership record could not be written");
                true
            }
            Err(e) => {
                tracing::warn!(record = %ep.dns_name, error = %e, "record created without its ownership record could not be undone; the next sync sees it as not extdns's");
                false
            }
        }
    }
}

impl AzureProvider {
    /// Write the units of one phase at most [`IN_FLIGHT`] at a time, a new one started as soon as any
    /// finishes; their outcomes in the units' order, so failures are reported alike whatever the timing.
    async fn write_phase(&self, read: &ReadZones, phase: &[Unit<'_>], stop: &AtomicBool) -> Vec<Outcome> {
        let mut waiting = phase.iter().enumerate();
        let mut running = FuturesUnordered::new();
        let mut outcomes = Vec::with_capacity(phase.len());
        loop {
            while running.len() < IN_FLIGHT {
                let Some((i, unit)) = waiting.next() else { break };
                running.push(async move { (i, self.write_unit(read, unit, stop).await) });
            }
            match running.next().await {
                Some(done) => outcomes.push(done),
                None => break,
            }
        }
        outcomes.sort_by_key(|(i, _)| *i);
        outcomes.into_iter().map(|(_, outcome)| outcome).collect()
    }

    /// Write one unit's changes in order (see [`IndexedProvider::write`]), unless `stop` was set by
    /// another unit's transient or authentication failure before it started; sets `stop` on its own.
    async fn write_unit(&self, read: &ReadZones, unit: &Unit<'_>, stop: &AtomicBool) -> Outcome {
        if stop.load(Ordering::Relaxed) {
            return Outcome::NotStarted;
        }
        let kind = self.config.kind;
        let provider = match kind {
            Kind::Public => "Azure DNS",
            Kind::Private => "Azure Private DNS",
        };
        let supported = |t: &RecordType| records::supported(kind, t);
        let zone_for = |name: &str| zone::closest(&read.zones, name, |z| &z.name);
        let zone = match zone::of_unit(unit, provider, supported, zone_for) {
            Ok(z) => &read.zones[z],
            Err(refusal) => {
                tracing::warn!(record = %unit.record_name(), reason = %refusal, "change refused");
                return Outcome::Failed(unit.refused(refusal.to_string()));
            }
        };
        // The record first, then its ownership record: an ownership record written first would claim a
        // record set someone else holds when the record's own write is refused. A created record whose
        // ownership record fails is undone, so the two land together or not at all.
        let mut created: Option<(&Endpoint, Option<String>)> = None;
        for change in unit.changes() {
            let written = self.write(read, zone, change).await;
            if written.is_err()
                && let Some((ep, etag)) = created.take()
            {
                // The read forgets it only once it is gone: a record set left in place keeps its ETag.
                if self.undo(zone, ep, etag.as_deref()).await {
                    read.forget(zone, ep);
                }
            }
            let reason = match written {
                Ok(etag) => {
                    let sent = match change {
                        Change::Delete(_) => None,
                        Change::Create(ep) => records::properties(kind, ep).ok(),
                        Change::Update { new, .. } => records::properties(kind, new).ok(),
                    };
                    read.wrote(zone, change, etag.clone(), sent.as_ref());
                    if std::ptr::eq(change, unit.change)
                        && let Change::Create(ep) = change
                    {
                        created = Some((ep, etag));
                    }
                    continue;
                }
                Err(Written::Invalid(reason)) => unit.refused(reason),
                Err(Written::Api(e)) if e.status() == Some(412) => unit.refused(format!(
                    "{} {}: the record set changed in Azure since it was read (ETag); left alone, read again \
                     and planned again on the next sync",
                    change.action(),
                    change.endpoint().record_type
                )),
                Err(Written::Api(e)) if e.kind().is_transient() || e.kind() == FailureKind::Auth => {
                    // Retrying cannot help within this sync: stop, and plan again from a new read.
                    stop.store(true, Ordering::Relaxed);
                    let what = format!("writing {} in zone {}", unit.record_name(), zone.name);
                    return Outcome::Stopped(ProviderError::from_call(what, e));
                }
                Err(Written::Api(e)) => {
                    if e.status() == Some(400) && !std::ptr::eq(change, unit.change) {
                        self.remember_refused(&change.endpoint().dns_name);
                    }
                    unit.failure(e.kind(), format!("{}: {e}", change.action()))
                }
            };
            tracing::warn!(record = %unit.record_name(), zone = %zone.name, reason = %reason.reason.message, "change not applied");
            return Outcome::Failed(reason);
        }
        tracing::debug!(record = %unit.record_name(), zone = %zone.name, "written");
        Outcome::Written
    }

    /// Remember that Azure refused the ownership record `name`: it will refuse it again.
    fn remember_refused(&self, name: &str) {
        let mut names = self.refused_names.lock().unwrap_or_else(|p| p.into_inner());
        if names.insert(name.to_ascii_lowercase()) {
            tracing::warn!(ownership_record = %name, "Azure refused this ownership record's name; its record is not written again until extdns restarts");
        }
    }

    fn was_refused(&self, name: &str) -> bool {
        let names = self.refused_names.lock().unwrap_or_else(|p| p.into_inner());
        !names.is_empty() && names.contains(&name.to_ascii_lowercase())
    }
}

/// How one unit's writes ended.
enum Outcome {
    /// Every change landed.
    Written,
    /// Not started: another unit's failure stopped the sync first.
    NotStarted,
    /// Refused, or failed for this unit alone: the others go on.
    Failed(ChangeFailure),
    /// A transient or authentication failure: no further unit starts, and the sync fails with it.
    Stopped(ProviderError),
}

/// Why one write did not happen.
enum Written {
    /// extdns cannot express the change.
    Invalid(String),
    /// Azure's answer.
    Api(ApiError),
}

/// A record set's properties as extdns writes them, hashed: what [`ReadZones`] keeps of its content (a word
/// a set, not the JSON).
fn fingerprint(properties: &serde_json::Value) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    properties.to_string().hash(&mut h);
    h.finish()
}

/// The record set's name relative to its zone, `@` for the apex, lower-case.
fn relative(name: &str, zone: &str) -> String {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    if name == zone {
        "@".to_string()
    } else {
        name.strip_suffix(&format!(".{zone}")).unwrap_or(&name).to_string()
    }
}

#[async_trait]
impl IndexedProvider for AzureProvider {
    type Index = ReadZones;

    async fn read(&self) -> Result<(Vec<Endpoint>, Self::Index), ProviderError> {
        let kind = self.config.kind;
        let zones = self.zones().await?;
        let mut endpoints = Vec::new();
        let mut known = HashMap::new();
        for zone in zones.iter() {
            let sets =
                self.api.record_sets(&zone.name).await.map_err(|e| {
                    ProviderError::from_call(format!("listing the record sets of zone {}", zone.name), e)
                })?;
            for set in sets {
                let prefix = kind.type_prefix();
                let Some(t) = set
                    .kind
                    .get(..prefix.len())
                    .filter(|p| p.eq_ignore_ascii_case(prefix))
                    .map(|_| &set.kind[prefix.len()..])
                else {
                    continue;
                };
                let Ok(rtype) = RecordType::from_str(&t.to_ascii_uppercase());
                let Some((ttl, targets, ps)) = records::read(kind, &rtype, &set.properties) else {
                    continue;
                };
                let relative = set.name.to_ascii_lowercase();
                let name = if relative == "@" {
                    zone.name.clone()
                } else {
                    format!("{relative}.{}", zone.name)
                };
                if !self.config.zone_names.is_empty() && !self.config.zones.domain_filter.matches(&name) {
                    continue;
                }
                let endpoint = Endpoint::new(&name, rtype.clone(), targets.iter().map(String::as_str))
                    .with_ttl(Ttl(ttl))
                    .with_provider_specific(ps);
                // What it holds as extdns would write it; a set extdns cannot write never matches a write.
                let holds = records::properties(kind, &endpoint).map_or(0, |p| fingerprint(&p));
                let key = (zone.name.clone(), relative, rtype.as_str().to_string());
                known.insert(key, Known { etag: set.etag, holds });
                endpoints.push(endpoint);
            }
        }
        tracing::debug!(zones = zones.len(), records = endpoints.len(), "Azure records read");
        Ok((
            endpoints,
            ReadZones {
                zones,
                sets: std::sync::Mutex::new(known),
            },
        ))
    }

    /// Units are written [`IN_FLIGHT`] at a time, phase by phase (deletes, which free names, then
    /// updates, then creates), each unit's own writes one after the other in their order. Every request
    /// still waits for the subscription's pacer, so overlapping them shortens a sync's round trips
    /// without passing the rate. A transient or authentication failure starts no further unit: the ones
    /// already in flight finish, and the sync stops to plan again from a new read.
    async fn write(&self, read: &ReadZones, units: &[Unit<'_>]) -> Result<(), ProviderError> {
        let mut ordered = units.to_vec();
        batch::sort_for_apply(&mut ordered);
        let stop = AtomicBool::new(false);
        let mut failures = Failures::default();
        let mut stopped = None;
        for phase in ordered.chunk_by(|a, b| a.change.apply_order() == b.change.apply_order()) {
            for outcome in self.write_phase(read, phase, &stop).await {
                match outcome {
                    Outcome::Written | Outcome::NotStarted => {}
                    Outcome::Failed(failure) => failures.push(failure),
                    Outcome::Stopped(e) => {
                        stopped.get_or_insert(e);
                    }
                }
            }
            if let Some(e) = stopped {
                if let Err(ProviderError::Partial { failures }) = failures.into_result() {
                    tracing::warn!(failed = failures.len(), "changes failed before the provider stopped");
                }
                return Err(e);
            }
        }
        failures.into_result()
    }

    fn canonicalise(&self, ep: &mut Endpoint) {
        if self.config.kind == Kind::Public {
            records::expand_tags(ep);
        }
    }

    fn domains(&self) -> DomainFilter {
        self.config.zones.domain_filter.clone()
    }

    /// A metadata value's length: the payload is an entry of its own beside the user's metadata.
    fn ownership_room(&self, _ep: &Endpoint) -> Option<usize> {
        Some(records::METADATA_VALUE_MAX)
    }

    /// The zone `write` sends a name to (the closest of the read's), unless Azure refuses the name itself
    /// (a `*` anywhere but as a whole first label: `a-*.example.org`, the ownership name of a wildcard
    /// with default flags), or refused it before.
    fn zone_of(&self, read: &ReadZones, name: &str) -> zone::Placement {
        match zone::Placement::closest(&read.zones, name, |z| &z.name) {
            zone::Placement::Zone(_) if !records::valid_wildcard(name) => {
                zone::Placement::Refused(records::WILDCARD_RULE)
            }
            zone::Placement::Zone(_) if self.was_refused(name) => zone::Placement::Refused(REFUSED_BEFORE),
            placed => placed,
        }
    }

    /// The read's zones and ETags serve until the next read (see [`ReadZones`]).
    fn index_outlives_writes(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_relative_to_their_zone() {
        assert_eq!(relative("example.org", "example.org"), "@");
        assert_eq!(relative("WWW.Example.org.", "example.org"), "www");
        assert_eq!(relative("*.a.example.org", "example.org"), "*.a");
    }

    #[test]
    fn a_provider_needs_a_subscription_and_a_resource_group() {
        let c = AzureConfig::new(Kind::Public, "", "rg", CredentialSource::Token("t".into()));
        assert!(matches!(AzureProvider::new(c), Err(ConfigError::Subscription)));
        let c = AzureConfig::new(Kind::Private, "s", " ", CredentialSource::Token("t".into()));
        assert!(matches!(AzureProvider::new(c), Err(ConfigError::ResourceGroup)));
    }
}
