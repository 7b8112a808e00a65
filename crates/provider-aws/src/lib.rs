//! The Route53 provider (`--provider=aws`): hosted zones and their record sets through Route53's REST/XML
//! API, requests signed with SigV4, as external-dns's `aws` provider does.
//!
//! What it adds over external-dns: a refused batch is split in halves until every good change has landed
//! and every bad one is named with Route53's message (fewer calls than one change at a time under Route53's
//! 5 requests a second); a delete sends the record set exactly as it was read, so it matches, and an
//! update planned from a read is that DELETE and a CREATE in one batch, so a set another owner changed
//! since the read is refused rather than overwritten.
//!
//! ```
//! use extdns_provider_aws::{AssumeRole, AwsConfig, AwsProvider, CredentialSource};
//!
//! // Settings come from the standard AWS variables; `from_env` takes a lookup so nothing global is read here.
//! // Credentials are resolved through the AWS credential chain (environment keys, web identity, shared
//! // files, container, instance metadata) when the provider first calls Route53, and again before they expire.
//! let vars = |name: &str| match name {
//!     "AWS_ROLE_ARN" => Some("arn:aws:iam::123456789012:role/external-dns".to_string()),
//!     "AWS_WEB_IDENTITY_TOKEN_FILE" => Some("/var/run/secrets/eks.amazonaws.com/serviceaccount/token".to_string()),
//!     _ => None,
//! };
//! let mut config = AwsConfig::from_env(vars)?;
//! assert!(matches!(config.credentials, CredentialSource::Chain { .. }));
//! config.assume_role = Some(AssumeRole {
//!     role_arn: "arn:aws:iam::210987654321:role/dns".to_string(),
//!     external_id: None,
//! });
//! let provider = AwsProvider::new(config)?;
//! # drop(provider);
//! # Ok::<(), extdns_provider_aws::ConfigError>(())
//! ```

mod client;
mod config;
mod records;
mod xml;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_trait::async_trait;
use extdns_endpoint::{Change, DomainFilter, Endpoint};
use extdns_provider::as_read::AsRead;
use extdns_provider::batch::{self, AsUnit, Failures, Limits, Size, Unit};
use extdns_provider::{CallError, FailureKind, Provider, ProviderError, ReadState, Records, zone};

pub use client::ApiError;
pub use config::{AwsConfig, ConfigError, DEFAULT_ENDPOINT, Setting, ZoneType};
pub use extdns_aws::{
    AssumeRole, CredentialSource, CredentialSourceError, Credentials, CredentialsError, SignError,
    VARIABLES as CREDENTIAL_VARIABLES,
};
pub use records::canonical_hosted_zone;

use client::Client;
use xml::{Action, ResourceRecordSet};

/// A hosted zone extdns manages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Zone {
    /// The id without `/hostedzone/`.
    pub id: String,
    /// Lower-case, without the trailing dot.
    pub name: String,
    /// Private zones may share a name with a public one; records go to the one the filters select.
    pub private: bool,
}

/// Record sets as read, by zone id, name (absolute, lower-case), type and set identifier: deletes and the
/// old side of updates send them back unchanged, so they match what Route53 holds byte for byte.
type SetKey = (String, String, String, String);

/// What a read learnt: the zones and the record sets as Route53 returned them. It serves every write
/// until the next read: a set extdns writes is forgotten, so later changes of it are built from the
/// endpoint, which is what extdns wrote.
struct ReadZones {
    zones: Arc<Vec<Zone>>,
    sets: AsRead<SetKey, ResourceRecordSet>,
}

/// The provider. Cheap to share: `Arc<AwsProvider>` as `Arc<dyn Provider>`.
pub struct AwsProvider {
    config: AwsConfig,
    client: Client,
    /// The zone list and when it was read, for `zones_cache_duration` and for [`Provider::domain_filter`],
    /// which cannot call Route53 itself.
    zones: Mutex<Option<(Instant, Arc<Vec<Zone>>)>>,
}

impl std::fmt::Debug for AwsProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AwsProvider")
            .field("endpoint", &self.config.endpoint.as_str())
            .finish_non_exhaustive()
    }
}

impl AwsProvider {
    /// Check the configuration and build the HTTP client. No network access: an unreachable Route53 shows
    /// at the first sync, where it is retried.
    pub fn new(config: AwsConfig) -> Result<AwsProvider, ConfigError> {
        config.validate()?;
        let client = Client::new(&config)?;
        Ok(AwsProvider {
            config,
            client,
            zones: Mutex::new(None),
        })
    }

    /// The hosted zones the filters select, from the cache while it is fresh.
    pub async fn zones(&self) -> Result<Arc<Vec<Zone>>, ProviderError> {
        if !self.config.zones_cache_duration.is_zero()
            && let Some((at, zones)) = self.cached_zones()
            && at.elapsed() < self.config.zones_cache_duration
        {
            return Ok(zones);
        }
        let zones = Arc::new(self.read_zones().await?);
        if let Ok(mut cache) = self.zones.lock() {
            *cache = Some((Instant::now(), zones.clone()));
        }
        Ok(zones)
    }

    fn cached_zones(&self) -> Option<(Instant, Arc<Vec<Zone>>)> {
        self.zones.lock().ok().and_then(|c| c.clone())
    }

    async fn read_zones(&self) -> Result<Vec<Zone>, ProviderError> {
        let c = &self.config;
        let all = self.client.list_hosted_zones().await.map_err(api_error)?;
        let mut zones: Vec<Zone> = all
            .into_iter()
            .map(|z| Zone {
                id: z.id.strip_prefix("/hostedzone/").unwrap_or(&z.id).to_string(),
                name: z.name.trim_end_matches('.').to_ascii_lowercase(),
                private: z.config.is_some_and(|c| c.private_zone),
            })
            .filter(|z| c.zones.id_ends_with_one(&z.id))
            .filter(|z| match c.zone_type {
                Some(ZoneType::Public) => !z.private,
                Some(ZoneType::Private) => z.private,
                None => true,
            })
            .filter(|z| zone::selected(&c.zones.domain_filter, &z.name, c.zone_match_parent))
            .collect();
        if !c.zone_tags.is_empty() {
            let mut tagged: HashMap<String, Vec<(String, String)>> = HashMap::new();
            for chunk in zones.chunks(client::TAG_BATCH) {
                let ids: Vec<&str> = chunk.iter().map(|z| z.id.as_str()).collect();
                for set in self.client.list_tags(&ids).await.map_err(api_error)? {
                    let id = set.resource_id.strip_prefix("/hostedzone/").unwrap_or(&set.resource_id);
                    tagged
                        .entry(id.to_string())
                        .or_default()
                        .extend(set.tags.items.into_iter().map(|t| (t.key, t.value)));
                }
            }
            zones.retain(|z| {
                let tags = tagged.get(&z.id).map(Vec::as_slice).unwrap_or_default();
                c.zone_tags.iter().all(|want| tags.contains(want))
            });
        }
        zones.sort_by(|a, b| a.name.cmp(&b.name).then(a.id.cmp(&b.id)));
        tracing::debug!(zones = zones.len(), "hosted zones selected");
        Ok(zones)
    }

    /// Every record set of a zone, all pages.
    async fn read_sets(&self, zone: &Zone) -> Result<Vec<ResourceRecordSet>, ProviderError> {
        let mut sets = Vec::new();
        let mut start = None;
        loop {
            let page = self
                .client
                .list_record_sets(&zone.id, start.as_ref())
                .await
                .map_err(api_error)?;
            sets.extend(page.sets);
            match page.next {
                Some(next) if Some(&next) != start.as_ref() => start = Some(next),
                Some(_) => {
                    return Err(ProviderError::fatal(format!(
                        "Route53 returned the same page twice for zone {} ({})",
                        zone.name, zone.id
                    )));
                }
                None => return Ok(sets),
            }
        }
    }

    /// The zones a name goes to: every private zone that contains it and the closest public one (a
    /// split-horizon name is written to both sides, as external-dns does).
    fn zones_for<'z>(zones: &'z [Zone], name: &str) -> Vec<&'z Zone> {
        let mut out: Vec<&Zone> = zones
            .iter()
            .filter(|z| z.private && zone::in_zone(name, &z.name))
            .collect();
        let public: Vec<&Zone> = zones.iter().filter(|z| !z.private).collect();
        if let Some(i) = zone::closest(&public, name, |z| &z.name) {
            out.push(public[i]);
        }
        out
    }

    /// The Route53 changes of one extdns change in `zone`. An update planned from a read (`read` is
    /// `Some`) is a DELETE of the set as read, or as extdns wrote it since, and a CREATE, in one batch,
    /// never an UPSERT: the read may be an hour old (`--provider-reread-interval`), and if another owner
    /// took the name over meanwhile Route53 refuses the DELETE, which no longer matches, instead of an
    /// UPSERT handing the name back to us. The refused unit fails the sync, and the controller reads the
    /// zones again before it plans next. Without a read (the webhook server's apply), the old set is not
    /// known byte for byte, so the update is an UPSERT, as external-dns sends it.
    fn changes_for(&self, read: Option<&ReadZones>, zone: &Zone, change: &Change, out: &mut Vec<xml::Change>) {
        let cx = records::WriteContext {
            evaluate_target_health: self.config.evaluate_target_health,
            zone_id: &zone.id,
        };
        let key_of = |ep: &Endpoint| -> SetKey {
            (
                zone.id.clone(),
                records::absolute(&ep.dns_name).replace('*', "\\052"),
                ep.record_type.as_str().to_string(),
                ep.set_identifier.clone(),
            )
        };
        let as_read = |ep: &Endpoint| {
            read.and_then(|r| r.sets.get(&key_of(ep)))
                .unwrap_or_else(|| records::record_set(ep, &cx))
        };
        let mut push = |action, set| {
            out.push(xml::Change {
                action,
                resource_record_set: set,
            })
        };
        match change {
            Change::Create(ep) => push(Action::Create, records::record_set(ep, &cx)),
            Change::Delete(ep) => push(Action::Delete, as_read(ep)),
            // An update planned from a read (possibly an hour old) deletes exactly what was read, so Route53
            // refuses it if someone changed the set since; a zone that never held it (one side of a name
            // split across zones) gets it upserted.
            Change::Update { old, new }
                if read.is_some_and(|r| r.sets.knows(&key_of(old))) || records::needs_delete_create(old, new) =>
            {
                let (was, will) = (as_read(old), records::record_set(new, &cx));
                if was == will && !records::needs_delete_create(old, new) {
                    // Only the ownership changed (a migration, a label): the set stays as Route53 holds it.
                    push(Action::Upsert, will);
                } else {
                    push(Action::Delete, was);
                    push(Action::Create, will);
                }
            }
            Change::Update { new, .. } => push(Action::Upsert, records::record_set(new, &cx)),
        }
        if let Some(r) = read {
            for ep in std::iter::once(change.endpoint()).chain(change.previous()) {
                r.sets.forget(&key_of(ep));
            }
        }
    }

    /// Send the units of one zone in batches within the configured limits, splitting refused batches.
    async fn apply_zone(&self, zone: &Zone, work: &[ZoneUnit<'_>]) -> Result<(), ProviderError> {
        let c = &self.config;
        let limits = Limits {
            changes: c.batch.size,
            bytes: c.batch_change_size_bytes,
            values: c.batch_change_size_values,
        };
        let mut failures = Failures::default();
        for (i, part) in batch::split_by(work, limits, |w| w.size).into_iter().enumerate() {
            c.batch.pause_before(i).await;
            failures.absorb(batch::apply_split(part, |b| self.send(zone, b)).await)?;
        }
        failures.into_result()
    }

    /// Apply one batch atomically. A refusal of several units is split by the batch helper; a refusal of
    /// one names it with Route53's message.
    async fn send(&self, zone: &Zone, part: &[ZoneUnit<'_>]) -> Result<(), ProviderError> {
        let changes: Vec<xml::Change> = part.iter().flat_map(|w| w.changes.iter().cloned()).collect();
        match self.client.change(&zone.id, &changes).await {
            Ok(()) => {
                tracing::debug!(zone = %zone.name, changes = changes.len(), "change batch applied");
                Ok(())
            }
            Err(e) if e.kind() == FailureKind::Refused && part.len() > 1 => {
                Err(ProviderError::from_call(format!("zone {}", zone.name), e))
            }
            Err(e) if e.kind() == FailureKind::Refused => {
                let u = &part[0].unit;
                tracing::warn!(record = %u.record_name(), zone = %zone.name, error = %e, "change refused");
                let message = format!("{} in zone {} ({}): {e}", u.change.action(), zone.name, zone.id);
                Err(ProviderError::Partial {
                    failures: vec![u.refused(message)],
                })
            }
            Err(e) => Err(api_error(e)),
        }
    }
}

/// Route53's accounting of a change: its values and their characters, an UPSERT counting twice (it is a
/// delete and a create).
fn size_of(change: &xml::Change) -> Size {
    let set = &change.resource_record_set;
    let (mut bytes, mut values) = match (&set.resource_records, &set.alias_target) {
        (Some(r), _) => (r.items.iter().map(|v| v.value.len()).sum(), r.items.len()),
        (None, Some(a)) => (a.dns_name.len(), 1),
        (None, None) => (0, 0),
    };
    if change.action == Action::Upsert {
        bytes *= 2;
        values *= 2;
    }
    Size {
        changes: 1,
        bytes,
        values,
    }
}

/// A unit's Route53 changes in one zone.
struct ZoneUnit<'a> {
    unit: Unit<'a>,
    changes: Vec<xml::Change>,
    size: Size,
}

impl<'a> AsUnit<'a> for ZoneUnit<'a> {
    fn unit(&self) -> Unit<'a> {
        self.unit
    }
}

/// A call error as the provider layer sees it, of the kind the call named.
fn api_error(e: ApiError) -> ProviderError {
    let kind = e.kind();
    match (&e, kind) {
        // Already names every source it tried, or the one that failed.
        (ApiError::Credentials { .. }, _) => ProviderError::Failed {
            kind,
            message: e.to_string(),
            source: Some(Box::new(e)),
        },
        (_, FailureKind::Auth) => ProviderError::Failed {
            kind,
            message: format!("{e}; check the credentials and the IAM policy"),
            source: Some(Box::new(e)),
        },
        _ => ProviderError::from_call("Route53", e),
    }
}

#[async_trait]
impl Provider for AwsProvider {
    async fn records(&self) -> Result<Records, ProviderError> {
        let zones = self.zones().await?;
        let mut endpoints = Vec::new();
        let mut sets = HashMap::new();
        for zone in zones.iter() {
            for set in self.read_sets(zone).await? {
                let Some(ep) = records::endpoint_of(&set) else {
                    continue;
                };
                endpoints.push(ep);
                let key: SetKey = (
                    zone.id.clone(),
                    set.name.to_ascii_lowercase(),
                    set.kind.clone(),
                    set.set_identifier.clone().unwrap_or_default(),
                );
                sets.insert(key, set);
            }
        }
        tracing::debug!(zones = zones.len(), records = endpoints.len(), "Route53 records read");
        Ok(Records::with_state(
            endpoints,
            ReadZones {
                zones,
                sets: AsRead::new(sets),
            },
        ))
    }

    async fn apply(&self, read: &ReadState, units: &[Unit<'_>]) -> Result<(), ProviderError> {
        let read = read.get::<ReadZones>();
        let zones = match read {
            Some(r) => r.zones.clone(),
            None => self.zones().await?,
        };
        let mut ordered = units.to_vec();
        batch::sort_for_apply(&mut ordered);
        let mut by_zone: Vec<Vec<ZoneUnit<'_>>> = zones.iter().map(|_| Vec::new()).collect();
        for unit in ordered {
            let mut per_zone: BTreeMap<usize, Vec<xml::Change>> = BTreeMap::new();
            for change in unit.changes() {
                let targets = Self::zones_for(&zones, &change.endpoint().dns_name);
                if targets.is_empty() {
                    tracing::debug!(record = %change.record_name(), "no hosted zone contains this record; skipped");
                }
                for zone in targets {
                    let index = zones.iter().position(|z| std::ptr::eq(z, zone)).unwrap_or_default();
                    self.changes_for(read, zone, change, per_zone.entry(index).or_default());
                }
            }
            for (index, changes) in per_zone {
                let size = changes.iter().map(size_of).fold(Size::default(), |a, b| a + b);
                by_zone[index].push(ZoneUnit { unit, changes, size });
            }
        }
        let mut failures = Failures::default();
        for (zone, work) in zones.iter().zip(&by_zone) {
            if !work.is_empty() {
                failures.absorb(self.apply_zone(zone, work).await)?;
            }
        }
        failures.into_result()
    }

    /// The closest hosted zone of the read holding the name (a record also goes to every private zone
    /// of its name, which `apply` handles); outside every zone, the change would be skipped.
    fn placement(&self, read: &ReadState, name: &str) -> zone::Placement {
        match read.get::<ReadZones>() {
            Some(r) => zone::Placement::closest(&r.zones, name, |z| &z.name),
            None => zone::Placement::Unknown,
        }
    }

    /// The read's zones and sets serve until the next read: a set extdns writes is forgotten and built
    /// from its endpoint from then on (see [`ReadZones`]).
    fn read_state_outlives_writes(&self) -> bool {
        true
    }

    async fn adjust_endpoints(&self, endpoints: Vec<Endpoint>) -> Result<Vec<Endpoint>, ProviderError> {
        Ok(records::adjust(
            endpoints,
            self.config.prefer_cname,
            self.config.evaluate_target_health,
        ))
    }

    /// The zones of the last read (each name and every name under it); before any read, the configured
    /// domain filter.
    fn domain_filter(&self) -> DomainFilter {
        match self.cached_zones() {
            Some((_, zones)) => {
                let names: Vec<String> = zones.iter().map(|z| z.name.clone()).collect();
                DomainFilter::new(&names, &[])
            }
            None => self.config.zones.domain_filter.clone(),
        }
    }
}
