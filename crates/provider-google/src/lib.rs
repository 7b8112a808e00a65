//! The Google Cloud DNS provider (`--provider=google`): managed zones and their record sets through Cloud
//! DNS's v1 REST API, as external-dns's `google` provider does, with Application Default Credentials.
//!
//! What it adds over external-dns: a change Cloud DNS refuses as a whole (409 `alreadyExists`, 412
//! `conditionNotMet`, 404 `notFound`, 403 `quotaExceeded`, 400) is split until each refused record is
//! isolated and named with Google's reason while the others land (external-dns stops at the first refused
//! batch); a write counts only once `changes.get` says `done`, yet changes that only add are submitted
//! without waiting for the previous one's `done` (a first sync is not the sum of its changes' propagation
//! times); 429, 5xx and rate-limit answers are retried
//! with backoff and jitter; requests are paced; a name with more changes than the batch size travels alone
//! instead of being skipped; rrsets with a routing policy are left alone instead of read as records with
//! no targets; a TXT value over 255 octets (a long ownership value) is cut into strings Cloud DNS takes
//! and read back whole.
//!
//! ```
//! use extdns_provider_google::{CredentialSource, GoogleConfig, GoogleProvider};
//!
//! // Building the provider checks its settings; credentials and the API are first used by the first sync.
//! let mut config = GoogleConfig::new(CredentialSource::adc(&|_| None));
//! config.project = Some("my-project".to_string());
//! let provider = GoogleProvider::new(config)?;
//! # drop(provider);
//! # Ok::<(), extdns_provider_google::ConfigError>(())
//! ```

mod api;
mod config;
mod credentials;

use std::collections::{BTreeMap, HashMap};
use std::str::FromStr;
use std::sync::Arc;

use async_trait::async_trait;
use extdns_endpoint::{Change, DomainFilter, Endpoint, RecordType, Ttl, canonical_target, canonicalize_targets, txt};
use extdns_provider::as_read::AsRead;
use extdns_provider::batch::{self, AsUnit, Failures, Limits, Size, Unit};
use extdns_provider::{CallError, FailureKind, IndexedProvider, ProviderError, zone};
use tokio::sync::OnceCell;

pub use api::{ApiError, ErrorItem};
pub use config::{
    API_LIMIT, ConfigError, CredentialSource, DEFAULT_BASE_URL, GoogleConfig, MAX_CHANGE_BYTES, METADATA_HOST, SCOPE,
    VARIABLES as CREDENTIAL_VARIABLES, Visibility,
};
pub use credentials::{CredentialsError, DEFAULT_TOKEN_URI, MetadataServer, SourceError, Tried, jwt};
pub use extdns_provider::credentials::AccessToken;

use api::{Api, ResourceRecordSet};

/// The TTL Cloud DNS records get when an endpoint has none, as external-dns writes them.
pub const DEFAULT_TTL: i64 = 300;

/// A managed zone extdns manages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Zone {
    /// The zone's resource name (what the API's paths take).
    pub name: String,
    /// Its DNS name, lower-case, without the trailing dot.
    pub dns_name: String,
    /// Its numeric id.
    pub id: String,
}

/// Rrsets as read, by zone name, rrset name (absolute with the dot, lower-case) and type: deletions send
/// them back unchanged, so they match what Cloud DNS holds exactly.
type SetKey = (String, String, String);

/// What a read learnt: the zones and the rrsets as Cloud DNS returned them. It serves every write until
/// the next read: an rrset extdns writes is forgotten, so later deletions of it are built from the
/// endpoint, which is what extdns wrote.
/// Opaque outside this crate: the provider's [`IndexedProvider::Index`], kept in the read's state.
pub struct ReadZones {
    zones: Arc<Vec<Zone>>,
    sets: AsRead<SetKey, ResourceRecordSet>,
}

/// The provider. Cheap to share: `Arc<GoogleProvider>` as `Arc<dyn Provider>`.
pub struct GoogleProvider {
    config: GoogleConfig,
    api: Api,
    /// Asked for the project when `--google-project` is empty.
    metadata: Arc<MetadataServer>,
    /// `--google-project`, or the metadata server's answer, asked once.
    project: OnceCell<String>,
}

impl std::fmt::Debug for GoogleProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GoogleProvider")
            .field("project", &self.config.project)
            .finish_non_exhaustive()
    }
}

impl GoogleProvider {
    /// Check the configuration and build the HTTP clients. No network access: credentials and the API are
    /// first used by the first sync, where failures are retried.
    pub fn new(config: GoogleConfig) -> Result<GoogleProvider, ConfigError> {
        if let Some(p) = &config.project
            && (p.is_empty()
                || !p
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | ':' | '.')))
        {
            return Err(ConfigError::Project(p.clone()));
        }
        if !(1..=1000).contains(&config.page_size) {
            return Err(ConfigError::PageSize(config.page_size));
        }
        extdns_provider::http::parse_url("the Cloud DNS API URL", &config.base_url).map_err(ConfigError::Client)?;
        let (tokens, metadata) = credentials::tokens(&config.credentials, config.api.calls.timeout, &config.observer)
            .map_err(ConfigError::Client)?;
        let api = Api::new(&config, Arc::new(tokens))?;
        let project = match &config.project {
            Some(p) => OnceCell::new_with(Some(p.clone())),
            None => OnceCell::new(),
        };
        Ok(GoogleProvider {
            config,
            api,
            metadata,
            project,
        })
    }

    /// The project: `--google-project`, else the metadata server's (asked once, as external-dns does at
    /// startup).
    pub async fn project(&self) -> Result<&str, ProviderError> {
        self.project
            .get_or_try_init(|| async {
                let p = self.metadata.project().await.map_err(|e| {
                    ProviderError::fatal_from("--google-project is empty and the project cannot be found", e)
                })?;
                tracing::info!(project = %p, "Google project found on the metadata server");
                Ok(p)
            })
            .await
            .map(String::as_str)
    }

    /// The managed zones the filters select (peering zones dropped, as external-dns does).
    pub async fn zones(&self) -> Result<Vec<Zone>, ProviderError> {
        let c = &self.config;
        let project = self.project().await?;
        let all = self
            .api
            .zones(project)
            .await
            .map_err(|e| ProviderError::from_call(format!("listing the managed zones of project {project}"), e))?;
        let mut zones: Vec<Zone> = all
            .into_iter()
            .filter(|z| z.peering_config.is_none())
            .filter(|z| {
                c.zone_visibility
                    .is_none_or(|v| z.visibility.as_deref().unwrap_or("public") == v.as_str())
            })
            .filter(|z| {
                c.zones.id_ends_with_one(&z.id) || c.zones.zone_ids.iter().any(|f| z.name.ends_with(f.as_str()))
            })
            .filter(|z| zone::selected(&c.zones.domain_filter, &z.dns_name, false))
            .map(|z| Zone {
                dns_name: z.dns_name.trim_end_matches('.').to_ascii_lowercase(),
                name: z.name,
                id: z.id,
            })
            .collect();
        zones.sort_by(|a, b| a.dns_name.cmp(&b.dns_name).then(a.name.cmp(&b.name)));
        tracing::debug!(zones = zones.len(), "managed zones selected");
        Ok(zones)
    }

    /// Submit one change (a batch of units in one zone), its wait for `done` left in `pending` (see
    /// [`Pending`]). A refusal of several units is split by the batch helper; a refusal of one names it
    /// with Google's reason.
    async fn send(
        &self,
        project: &str,
        zone: &Zone,
        part: &[ZoneUnit<'_>],
        pending: &Pending,
    ) -> Result<(), ProviderError> {
        let mut change = api::Change::default();
        for w in part {
            change.deletions.extend(w.deletions.iter().cloned());
            change.additions.extend(w.additions.iter().cloned());
        }
        match self.api.submit(project, &zone.name, &change).await {
            Ok(got) => {
                tracing::debug!(zone = %zone.name, additions = change.additions.len(), deletions = change.deletions.len(), status = %got.status, "change submitted");
                pending.push(zone, got);
                Ok(())
            }
            Err(e) if e.kind() == FailureKind::Refused && part.len() > 1 => {
                tracing::info!(zone = %zone.name, units = part.len(), error = %e, "change refused; splitting it");
                Err(ProviderError::from_call(format!("zone {}", zone.name), e))
            }
            Err(e) if e.kind() == FailureKind::Refused => {
                let u = &part[0].unit;
                tracing::warn!(record = %u.record_name(), zone = %zone.name, error = %e, "change refused");
                let message = format!("{} in zone {}: {e}", u.change.action(), zone.name);
                Err(ProviderError::Partial {
                    failures: vec![u.refused(message)],
                })
            }
            Err(e) => Err(ProviderError::from_call(format!("change in zone {}", zone.name), e)),
        }
    }

    /// Wait until every change in `pending` is done; a write counts only then.
    async fn settle(&self, project: &str, pending: &Pending) -> Result<(), ProviderError> {
        self.api
            .wait_done(project, pending.take())
            .await
            .map_err(|e| ProviderError::from_call("waiting for changes to be done", e))
    }
}

/// Changes submitted and not yet seen `done`, by zone. Changes that only add record sets are submitted
/// one after another and waited for together, so a first sync's changes are not each held up by the
/// previous one's propagation (Cloud DNS keeps a change `pending` for seconds); a change that deletes
/// is waited for before anything else is submitted, and after it, since what comes next may depend on
/// it (a name freed and taken again). A plain lock, never held across a wait.
#[derive(Default)]
struct Pending(std::sync::Mutex<Vec<(String, api::Change)>>);

impl Pending {
    fn push(&self, zone: &Zone, got: api::Change) {
        if got.status != "done" {
            self.lock().push((zone.name.clone(), got));
        }
    }

    fn take(&self) -> Vec<(String, api::Change)> {
        std::mem::take(&mut *self.lock())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(String, api::Change)>> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The types read, as external-dns reads them (A, AAAA, CNAME, DNAME, SRV, TXT, NS, MX), and PTR, NAPTR,
/// TLSA, HTTPS and SVCB, which extdns manages and Cloud DNS has ("Supported DNS record types",
/// cloud.google.com/dns/docs/records-overview; their rrdatas are presentation format, the canonical text
/// sources give: an SVCB target name already ends with its dot, as Cloud DNS wants every name in data).
fn read_type(t: &RecordType) -> bool {
    matches!(
        t,
        RecordType::A
            | RecordType::Aaaa
            | RecordType::Cname
            | RecordType::Dname
            | RecordType::Srv
            | RecordType::Txt
            | RecordType::Ns
            | RecordType::Mx
            | RecordType::Ptr
            | RecordType::Naptr
            | RecordType::Tlsa
            | RecordType::Https
            | RecordType::Svcb
    )
}

/// The name with its trailing dot.
fn absolute(name: &str) -> String {
    if name.ends_with('.') {
        name.to_string()
    } else {
        format!("{name}.")
    }
}

/// The rrset an endpoint is written as: absolute name, TTL 300 when none is set (external-dns's default),
/// host names in the record data absolute.
fn record_set(ep: &Endpoint) -> ResourceRecordSet {
    let dotted = matches!(
        ep.record_type,
        RecordType::Mx | RecordType::Srv | RecordType::Ns | RecordType::Ptr | RecordType::Dname
    );
    let rrdatas = ep
        .targets
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let cname_host = ep.record_type == RecordType::Cname && i == 0;
            if dotted || cname_host {
                absolute(t.as_str())
            } else if ep.record_type == RecordType::Txt {
                txt::fitted(t.as_str()).into_owned()
            } else if ep.record_type.has_typed_rdata() {
                // The canonical text: an SVCB target name absolute, whoever built the endpoint.
                match canonical_target(&ep.record_type, t.as_str()) {
                    Ok(Some(canonical)) => canonical,
                    _ => t.as_str().to_string(),
                }
            } else {
                t.as_str().to_string()
            }
        })
        .collect();
    ResourceRecordSet {
        name: absolute(&ep.dns_name),
        kind: ep.record_type.as_str().to_string(),
        ttl: if ep.record_ttl.is_configured() {
            ep.record_ttl.0
        } else {
            DEFAULT_TTL
        },
        rrdatas,
        signature_rrdatas: Vec::new(),
        routing_policy: None,
    }
}

/// A unit's deletions and additions in one zone.
struct ZoneUnit<'a> {
    unit: Unit<'a>,
    deletions: Vec<ResourceRecordSet>,
    additions: Vec<ResourceRecordSet>,
}

impl<'a> AsUnit<'a> for ZoneUnit<'a> {
    fn unit(&self) -> Unit<'a> {
        self.unit
    }
}

impl ZoneUnit<'_> {
    /// What a change's limits count: rrsets added and deleted (`--google-batch-change-size`), bytes of record
    /// data (Cloud DNS's 100,000 a change, kept so a large change is cut before Cloud DNS refuses it).
    fn size(&self) -> Size {
        let sets = self.deletions.iter().chain(&self.additions);
        Size {
            changes: self.deletions.len() + self.additions.len(),
            bytes: sets.clone().flat_map(|s| &s.rrdatas).map(String::len).sum(),
            values: sets.map(|s| s.rrdatas.len()).sum(),
        }
    }
}

#[async_trait]
impl IndexedProvider for GoogleProvider {
    type Index = ReadZones;

    /// A TXT value as a read gives it back (long values cut into 255-octet strings, then joined).
    fn canonicalise(&self, endpoint: &mut Endpoint) {
        txt::adjust_to_read_back(endpoint);
    }

    async fn read(&self) -> Result<(Vec<Endpoint>, Self::Index), ProviderError> {
        let project = self.project().await?;
        let zones = Arc::new(self.zones().await?);
        let mut endpoints = Vec::new();
        let mut sets = HashMap::new();
        for zone in zones.iter() {
            let rrsets =
                self.api.rrsets(project, &zone.name).await.map_err(|e| {
                    ProviderError::from_call(format!("listing the record sets of zone {}", zone.name), e)
                })?;
            for set in rrsets {
                let Ok(rtype) = RecordType::from_str(&set.kind);
                if !read_type(&rtype) {
                    continue;
                }
                if set.routing_policy.is_some() {
                    tracing::info!(record = %set.name, r#type = %set.kind, zone = %zone.name, "record set with a routing policy left alone: extdns does not manage routing policies");
                    continue;
                }
                let data = txt::read_values(&rtype, set.rrdatas.iter().map(String::as_str));
                let mut ep = Endpoint::new(&set.name, rtype, data.iter().map(|d| d.as_ref())).with_ttl(Ttl(set.ttl));
                // TLSA, SVCB and HTTPS rrdatas in the form sources give, whoever wrote them.
                canonicalize_targets(&mut ep);
                endpoints.push(ep);
                let key = (zone.name.clone(), set.name.to_ascii_lowercase(), set.kind.clone());
                sets.insert(key, set);
            }
        }
        tracing::debug!(zones = zones.len(), records = endpoints.len(), "Cloud DNS records read");
        Ok((
            endpoints,
            ReadZones {
                zones,
                sets: AsRead::new(sets),
            },
        ))
    }

    async fn write(&self, read: &ReadZones, units: &[Unit<'_>]) -> Result<(), ProviderError> {
        let project = self.project().await?;
        let mut failures = Failures::default();
        let mut ordered = units.to_vec();
        batch::sort_for_apply(&mut ordered);
        let mut by_zone: BTreeMap<usize, Vec<ZoneUnit<'_>>> = BTreeMap::new();
        for unit in ordered {
            let zone_for = |name: &str| zone::closest(&read.zones, name, |z| &z.dns_name);
            let z = match zone::of_unit(&unit, "Cloud DNS", read_type, zone_for) {
                Ok(z) => z,
                Err(refusal) => {
                    failures.refuse(&unit, refusal);
                    continue;
                }
            };
            let zone_name = &read.zones[z].name;
            let key_of = |ep: &Endpoint| -> SetKey {
                (
                    zone_name.clone(),
                    absolute(&ep.dns_name).to_ascii_lowercase(),
                    ep.record_type.as_str().to_string(),
                )
            };
            let as_read = |ep: &Endpoint| read.sets.get(&key_of(ep)).unwrap_or_else(|| record_set(ep));
            let mut w = ZoneUnit {
                unit,
                deletions: Vec::new(),
                additions: Vec::new(),
            };
            for c in unit.changes() {
                match c {
                    Change::Create(ep) => w.additions.push(record_set(ep)),
                    Change::Delete(ep) => w.deletions.push(as_read(ep)),
                    Change::Update { old, new } => {
                        w.deletions.push(as_read(old));
                        w.additions.push(record_set(new));
                    }
                }
                for ep in std::iter::once(c.endpoint()).chain(c.previous()) {
                    read.sets.forget(&key_of(ep));
                }
            }
            by_zone.entry(z).or_default().push(w);
        }
        let limits = Limits {
            changes: match self.config.batch.size {
                0 => usize::MAX,
                n => n,
            },
            bytes: MAX_CHANGE_BYTES,
            values: usize::MAX,
        };
        // `--google-batch-change-interval` spaces the submissions: it counts from the previous change's
        // submission, so the wait for that change's `done` falls inside it instead of adding to it.
        let interval = self.config.batch.interval;
        let mut submitted: Option<tokio::time::Instant> = None;
        let pending = Pending::default();
        for (z, work) in by_zone {
            let zone = &read.zones[z];
            for part in batch::split_by(&work, limits, ZoneUnit::size) {
                let deletes = part.iter().any(|w| !w.deletions.is_empty());
                if deletes {
                    self.settle(project, &pending).await?;
                }
                if let Some(at) = submitted.filter(|_| !interval.is_zero()) {
                    tokio::time::sleep_until(at + interval).await;
                }
                submitted = Some(tokio::time::Instant::now());
                let sent = failures.absorb(batch::apply_split(part, |b| self.send(project, zone, b, &pending)).await);
                if sent.is_err() {
                    // What was submitted before is waited for all the same: the error leaves a re-read next,
                    // which must see those changes done, not create them again.
                    let _ = self.settle(project, &pending).await;
                }
                sent?;
                if deletes {
                    self.settle(project, &pending).await?;
                }
            }
        }
        self.settle(project, &pending).await?;
        failures.into_result()
    }

    fn domains(&self) -> DomainFilter {
        self.config.zones.domain_filter.clone()
    }

    /// The managed zone `write` sends a name to: the closest of the read's.
    fn zone_of(&self, read: &ReadZones, name: &str) -> zone::Placement {
        zone::Placement::closest(&read.zones, name, |z| &z.dns_name)
    }

    /// The read's zones and rrsets serve until the next read (see [`ReadZones`]).
    fn index_outlives_writes(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_written_as_external_dns_writes_them() {
        let cname = Endpoint::new("www.example.org", RecordType::Cname, ["web.example.org"]);
        let set = record_set(&cname);
        assert_eq!(
            (set.name.as_str(), set.kind.as_str(), set.ttl, set.rrdatas.as_slice()),
            (
                "www.example.org.",
                "CNAME",
                DEFAULT_TTL,
                ["web.example.org.".to_string()].as_slice()
            )
        );
        let mx = Endpoint::new("example.org", RecordType::Mx, ["10 mail.example.org"]).with_ttl(Ttl(60));
        assert_eq!(record_set(&mx).rrdatas, ["10 mail.example.org."]);
        assert_eq!(record_set(&mx).ttl, 60);
        let txt = Endpoint::new("t.example.org", RecordType::Txt, ["\"heritage=external-dns\""]);
        assert_eq!(record_set(&txt).rrdatas, ["\"heritage=external-dns\""], "TXT as given");
        let a = Endpoint::new("a.example.org", RecordType::A, ["192.0.2.1", "192.0.2.2"]);
        assert_eq!(record_set(&a).rrdatas, ["192.0.2.1", "192.0.2.2"]);
        let svcb = Endpoint::new("_dns.example.org", RecordType::Svcb, ["1 svc.example.net port=53"]);
        assert_eq!(
            record_set(&svcb).rrdatas,
            ["1 svc.example.net. port=53"],
            "the target absolute"
        );
    }

    #[test]
    fn a_long_txt_value_is_cut_into_255_octet_strings_and_read_back_whole() {
        let value = format!("\"heritage=external-dns,external-dns/owner={}\"", "o".repeat(300));
        let txt = Endpoint::new("a-web.example.org", RecordType::Txt, [value.as_str()]);
        let written = record_set(&txt).rrdatas;
        assert_eq!(written.len(), 1, "one record of several strings");
        let strings = txt::unquoted_strings(&written[0]).unwrap_or_default();
        assert_eq!(strings.iter().map(String::len).collect::<Vec<_>>(), [255, 86]);
        assert_eq!(
            txt::unfitted(&written[0]),
            value,
            "read back as written by the registry"
        );
    }

    #[test]
    fn read_types_are_external_dns_s_and_the_ones_extdns_manages() {
        let managed = [
            "A", "AAAA", "CNAME", "DNAME", "SRV", "TXT", "NS", "MX", "PTR", "NAPTR", "TLSA", "HTTPS", "SVCB",
        ];
        for t in managed {
            let Ok(rtype) = RecordType::from_str(t);
            assert!(read_type(&rtype), "{t}");
        }
        for t in ["SOA", "CAA", "DS", "SSHFP"] {
            let Ok(rtype) = RecordType::from_str(t);
            assert!(!read_type(&rtype), "{t}");
        }
    }
}
