//! The Cloudflare provider: zones and records through Cloudflare's v4 API, changes written with the batch
//! endpoint (`POST /zones/{id}/dns_records/batch`, one database transaction per call), as external-dns's
//! `cloudflare` provider does.
//!
//! Differences from external-dns: a batch Cloudflare refuses is split in halves down to single units (a
//! record with its ownership record) instead of replaying every change alone, so a refused record is named
//! with Cloudflare's error code while the others land and a record never lands without its ownership record;
//! the proxied and record-comment properties are named `cloudflare/proxied` and `cloudflare/record-comment`
//! as in external-dns v0.23 (#6731; the sources give those names, and the pipeline renames a DNSEndpoint's
//! v0.22 names), and a property still under a v0.22 name (the annotation key, any prefix) is read too.
//!
//! ```
//! use extdns_provider_cloudflare::{Auth, CloudflareConfig, CloudflareProvider};
//!
//! // Building the provider checks its settings; the API is first called by the first sync.
//! let config = CloudflareConfig::new(Auth::Token("api-token".to_string()));
//! let provider = CloudflareProvider::new(config)?;
//! # drop(provider);
//! # Ok::<(), extdns_provider_cloudflare::ConfigError>(())
//! ```

mod api;
pub mod comment;
mod config;
mod data;
pub mod plan;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;
use extdns_endpoint::{Change, DomainFilter, Endpoint, RecordType, Ttl, txt};
use extdns_provider::batch::{self, Failures, Limits, Size, Unit};
use extdns_provider::gather::Gather;
use extdns_provider::metadata::OWNERSHIP_PROPERTY;
use extdns_provider::{CallError, FailureKind, IndexedProvider, ProviderError, zone};

pub use api::{ApiError, ApiMessage};
pub use config::{API_LIMIT, Auth, CloudflareConfig, ConfigError, DEFAULT_BASE_URL};

use api::{Api, Batch, BatchResult, DnsRecord, IdOnly, Patch, RecordBody, Zone};

/// The name of the proxied property of the records extdns reads and of the endpoints it adjusts, as
/// external-dns v0.23 names it (#6731).
pub const PROXIED_PROPERTY: &str = "cloudflare/proxied";
/// The name of the comment property, likewise.
pub const COMMENT_PROPERTY: &str = "cloudflare/record-comment";
const PROXIED_KEY: &str = "cloudflare-proxied";
const COMMENT_KEY: &str = "cloudflare-record-comment";

/// What a read learnt about one Cloudflare record.
#[derive(Debug, Clone)]
struct RecordInfo {
    id: String,
    ttl: u32,
    proxied: bool,
    comment: Option<String>,
}

type RecordId = (String, RecordType, String);

/// What a read learnt: the zones, and each record's Cloudflare id and settings. It serves every write
/// until the next read: each batch's answer (the records as it left them, new ids included) is folded in.
/// Opaque outside this crate: the provider's [`IndexedProvider::Index`], kept in the read's state.
#[derive(Debug, Default)]
pub struct Index {
    zones: Vec<Zone>,
    records: Mutex<HashMap<RecordId, Vec<RecordInfo>>>,
    /// A batch landed whose answer did not say what it wrote: the ids are no longer known.
    lost: AtomicBool,
}

impl Index {
    /// The zone of a name: the longest zone name it ends with, on a label boundary.
    fn zone_for(&self, name: &str) -> Option<usize> {
        zone::closest(&self.zones, name, |z| &z.name)
    }

    fn find(&self, ep: &Endpoint, target: &str) -> Vec<RecordInfo> {
        let records = self.records.lock().unwrap_or_else(|p| p.into_inner());
        records
            .get(&(
                ep.dns_name.to_ascii_lowercase(),
                ep.record_type.clone(),
                target.to_string(),
            ))
            .cloned()
            .unwrap_or_default()
    }

    /// Takes in a record as Cloudflare returned it; its type, and its target as extdns spells it.
    fn add(records: &mut HashMap<RecordId, Vec<RecordInfo>>, r: DnsRecord) -> (RecordType, String) {
        let Ok(rtype) = RecordType::from_str(&r.record_type);
        let target = match (&rtype, r.priority) {
            (RecordType::Mx, Some(p)) => format!("{p} {}", r.content),
            // The content Cloudflare renders from `data`, in the form sources give.
            (t, _) if t.has_typed_rdata() => data::read(t, &r.content),
            // A long value comes back in the 255-octet strings it was stored in: joined.
            (RecordType::Txt, _) => txt::unfitted(&r.content).into_owned(),
            _ => r.content.clone(),
        };
        records
            .entry((r.name.to_ascii_lowercase(), rtype.clone(), target.clone()))
            .or_default()
            .push(RecordInfo {
                id: r.id,
                ttl: r.ttl,
                proxied: r.proxied,
                comment: r.comment.filter(|c| !c.is_empty()),
            });
        (rtype, target)
    }

    /// Folds in what a batch wrote: deleted and patched ids out, the records it left in.
    fn fold(&self, result: Option<BatchResult>) {
        let Some(result) = result else {
            tracing::warn!(
                "Cloudflare's answer to a batch did not say what it wrote; the zones are read again next sync"
            );
            self.lost.store(true, Ordering::Relaxed);
            return;
        };
        let mut records = self.records.lock().unwrap_or_else(|p| p.into_inner());
        let gone: HashSet<&str> = result
            .deletes
            .iter()
            .map(|d| d.id.as_str())
            .chain(result.patches.iter().map(|p| p.id.as_str()))
            .collect();
        if !gone.is_empty() {
            for infos in records.values_mut() {
                infos.retain(|i| !gone.contains(i.id.as_str()));
            }
            records.retain(|_, infos| !infos.is_empty());
        }
        for r in result.patches.into_iter().chain(result.posts) {
            Self::add(&mut records, r);
        }
    }
}

/// The first record (`name TYPE target`) that `unit` deletes or changes and `index` has no id for.
fn unknown_id(index: &Index, unit: &Unit<'_>) -> Option<String> {
    unit.changes().find_map(|change| {
        let ep: &Endpoint = match change {
            Change::Create(_) => return None,
            Change::Delete(ep) => ep,
            Change::Update { old, .. } => old,
        };
        ep.targets
            .iter()
            .find(|t| index.find(ep, t.as_str()).is_empty())
            .map(|t| format!("{} {} {}", ep.dns_name, ep.record_type, t.as_str()))
    })
}

/// The provider. Cheap to share: `Arc<CloudflareProvider>` as `Arc<dyn Provider>`.
#[derive(Debug)]
pub struct CloudflareProvider {
    api: Api,
    config: CloudflareConfig,
}

impl CloudflareProvider {
    /// Checks the settings and builds the HTTP client; makes no request, so a wrong token shows on the first
    /// sync as an authentication error.
    pub fn new(config: CloudflareConfig) -> Result<CloudflareProvider, ConfigError> {
        if !(1..=5000).contains(&config.records_per_page) {
            return Err(ConfigError::RecordsPerPage(config.records_per_page));
        }
        Ok(CloudflareProvider {
            api: Api::new(&config)?,
            config,
        })
    }

    /// Records per batch call on `zone`: its plan's limit ([`plan`]) unless `--batch-change-size` was
    /// given, and `batch.size` (the Free plan's 200 by default) for a plan the table does not know.
    fn batch_size(&self, zone: &Zone) -> usize {
        let by_plan = self.config.batch_size_by_plan;
        by_plan
            .then(|| zone.plan.as_ref().and_then(plan::ZonePlan::batch_limit))
            .flatten()
            .unwrap_or(self.config.batch.size)
    }

    fn wanted_zone(&self, zone: &Zone) -> bool {
        let zones = &self.config.zones;
        let ids_ok = zones.zone_ids.is_empty() || zones.zone_ids.contains(&zone.id);
        ids_ok && zone::selected(&zones.domain_filter, &zone.name, true)
    }

    /// Whether a record of `ep` is proxied: never for a type Cloudflare cannot proxy or a wildcard name,
    /// else its property (under any annotation prefix), else `--cloudflare-proxied`.
    fn proxied(&self, ep: &Endpoint) -> bool {
        if !proxiable(&ep.record_type) || ep.dns_name.contains('*') {
            return false;
        }
        match property(ep, PROXIED_PROPERTY, PROXIED_KEY) {
            Some(v) => match v.trim() {
                "true" | "TRUE" | "True" | "1" | "t" | "T" => true,
                "false" | "FALSE" | "False" | "0" | "f" | "F" => false,
                other => {
                    tracing::warn!(record = %ep.dns_name, value = other, "cloudflare-proxied is not a boolean; using the default");
                    self.config.proxied_by_default
                }
            },
            None => self.config.proxied_by_default,
        }
    }

    fn comment(&self, ep: &Endpoint) -> Option<String> {
        property(ep, COMMENT_PROPERTY, COMMENT_KEY)
            .map(str::to_string)
            .or_else(|| self.config.record_comment.clone())
            .filter(|c| !c.is_empty())
    }

    /// The record written for one target of `ep`. A TLSA, HTTPS or SVCB target goes as `data`
    /// ([`data::of`]); one that is not valid record data never reaches here ([`invalid_data`]).
    fn body(&self, ep: &Endpoint, target: &str) -> RecordBody {
        let proxied = self.proxied(ep);
        let ttl = if proxied || !ep.record_ttl.is_configured() {
            1
        } else {
            u32::try_from(ep.record_ttl.0).unwrap_or(u32::MAX)
        };
        let (content, priority) = match (&ep.record_type, parse_mx(target)) {
            (RecordType::Mx, Some((p, host))) => (host.to_string(), Some(p)),
            // Cloudflare holds TXT content as character-strings of at most 255 octets and splits a longer
            // one itself; cut here as every such backend is cut, so what it stores is known.
            (RecordType::Txt, _) => (txt::fitted(target).into_owned(), None),
            _ => (target.to_string(), None),
        };
        let data = data::of(&ep.record_type, target).ok().flatten();
        RecordBody {
            name: ep.dns_name.trim_end_matches('.').to_string(),
            record_type: ep.record_type.as_str().to_string(),
            content: data.is_none().then_some(content),
            data,
            ttl,
            proxied,
            comment: comment::join(
                self.comment(ep).as_deref(),
                ep.provider_specific.get(OWNERSHIP_PROPERTY),
            ),
            priority,
        }
    }

    /// The writes of a batch of units (all in one zone).
    fn encode(&self, index: &Index, units: &[Unit<'_>]) -> Batch {
        let mut b = Batch::default();
        for unit in units {
            for change in unit.changes() {
                match change {
                    Change::Create(ep) => {
                        b.posts.extend(ep.targets.iter().map(|t| self.body(ep, t.as_str())));
                    }
                    Change::Delete(ep) => {
                        for t in ep.targets.iter() {
                            b.deletes
                                .extend(index.find(ep, t.as_str()).iter().map(|r| IdOnly { id: r.id.clone() }));
                        }
                    }
                    Change::Update { old, new } => self.encode_update(index, old, new, &mut b),
                }
            }
        }
        b
    }

    fn encode_update(&self, index: &Index, old: &Endpoint, new: &Endpoint, b: &mut Batch) {
        let has = |ep: &Endpoint, t: &str| ep.targets.iter().any(|x| x.as_str() == t);
        let mut freed: Vec<RecordInfo> = Vec::new();
        for t in old.targets.iter().filter(|t| !has(new, t.as_str())) {
            freed.extend(index.find(old, t.as_str()));
        }
        let mut freed = freed.into_iter();
        for t in new.targets.iter() {
            let body = self.body(new, t.as_str());
            if has(old, t.as_str()) {
                // A kept target: patched in place when its settings changed.
                for r in index.find(old, t.as_str()) {
                    if r.ttl != body.ttl || r.proxied != body.proxied || r.comment != body.comment {
                        let mut body = body.clone();
                        // A PATCH without the field keeps the comment: an empty one clears it (the last
                        // annotation gone, or the ownership payload taken off).
                        if body.comment.is_none() && r.comment.is_some() {
                            body.comment = Some(String::new());
                        }
                        b.patches.push(Patch { id: r.id.clone(), body });
                    }
                }
            } else if let Some(r) = freed.next() {
                // A replaced target reuses the id of one that goes, as external-dns does.
                b.patches.push(Patch { id: r.id.clone(), body });
            } else {
                b.posts.push(body);
            }
        }
        b.deletes.extend(freed.map(|r| IdOnly { id: r.id.clone() }));
    }

    async fn send(&self, zone: &Zone, index: &Index, units: &[Unit<'_>]) -> Result<(), ProviderError> {
        let b = self.encode(index, units);
        if b.is_empty() {
            return Ok(());
        }
        match self.api.batch(&zone.id, &b).await {
            Ok(result) => {
                tracing::debug!(zone = %zone.name, units = units.len(), records = b.len(), "batch applied");
                index.fold(result);
                Ok(())
            }
            Err(e) => {
                if e.kind() == FailureKind::Refused && units.len() > 1 {
                    tracing::info!(zone = %zone.name, units = units.len(), error = %e, "batch refused; splitting it");
                }
                Err(ProviderError::from_call(format!("batch on zone {}", zone.name), e))
            }
        }
    }
}

fn proxiable(t: &RecordType) -> bool {
    matches!(t, RecordType::A | RecordType::Aaaa | RecordType::Cname)
}

/// A Cloudflare property of `ep` under its canonical name, else under any annotation prefix.
fn property<'a>(ep: &'a Endpoint, canonical: &str, key: &str) -> Option<&'a str> {
    ep.provider_specific.get(canonical).or_else(|| {
        ep.provider_specific
            .iter()
            .find(|p| p.name.rsplit_once('/').is_some_and(|(_, k)| k == key))
            .map(|p| p.value.as_str())
    })
}

fn is_property(name: &str, key: &str) -> bool {
    name == key || name.rsplit_once('/').is_some_and(|(_, k)| k == key)
}

fn parse_mx(target: &str) -> Option<(u16, &str)> {
    let (p, host) = target.trim().split_once(' ')?;
    Some((p.parse().ok()?, host.trim().trim_end_matches('.')))
}

/// The types extdns writes to Cloudflare: external-dns's (A, AAAA, CNAME, TXT, MX, NS; TLSA since v0.23), and
/// HTTPS and SVCB, which Cloudflare holds through the same `data` object as TLSA.
fn supported(t: &RecordType) -> bool {
    matches!(
        t,
        RecordType::A
            | RecordType::Aaaa
            | RecordType::Cname
            | RecordType::Txt
            | RecordType::Mx
            | RecordType::Ns
            | RecordType::Tlsa
            | RecordType::Https
            | RecordType::Svcb
    )
}

/// The first target of `unit` that must go as `data` and is not valid record data: the unit is refused
/// by name before anything is sent (a source refuses such a target already; an endpoint from elsewhere, a
/// webhook's, may still carry one).
fn invalid_data(unit: &Unit<'_>) -> Option<extdns_endpoint::InvalidRdata> {
    // A delete goes by record id: what it held, readable or not, is never sent.
    unit.changes()
        .filter(|c| !matches!(c, Change::Delete(_)))
        .map(Change::endpoint)
        .flat_map(|ep| ep.targets.iter().map(move |t| data::of(&ep.record_type, t.as_str())))
        .find_map(Result::err)
}

#[async_trait]
impl IndexedProvider for CloudflareProvider {
    type Index = Index;

    async fn read(&self) -> Result<(Vec<Endpoint>, Self::Index), ProviderError> {
        let zones: Vec<Zone> = self
            .api
            .zones()
            .await
            .map_err(|e| ProviderError::from_call("listing zones", e))?
            .into_iter()
            .filter(|z| self.wanted_zone(z))
            .collect();
        let mut index = Index::default();
        let mut gathered = Gather::default();
        for zone in &zones {
            let records = self
                .api
                .records(&zone.id, self.config.records_per_page)
                .await
                .map_err(|e| ProviderError::from_call(format!("listing the records of zone {}", zone.name), e))?;
            let known = index.records.get_mut().unwrap_or_else(PoisonError::into_inner);
            for r in records {
                let (rtype, target) = Index::add(known, r.clone());
                let comment = r.comment.filter(|c| !c.is_empty());
                // The user's comment and extdns's ownership payload, each under its own property.
                let (user, payload) = comment.as_deref().map_or((None, None), comment::split);
                gathered.add(&r.name, &rtype, &target, || {
                    let mut ep =
                        Endpoint::new(&r.name, rtype.clone(), [target.as_str()]).with_ttl(Ttl(i64::from(r.ttl)));
                    ep.provider_specific.set(PROXIED_PROPERTY, r.proxied.to_string());
                    if let Some(c) = user {
                        ep.provider_specific.set(COMMENT_PROPERTY, c);
                    }
                    if let Some(p) = payload {
                        ep.provider_specific.set(OWNERSHIP_PROPERTY, p);
                    }
                    ep.provider_specific.sort_by_name();
                    ep
                });
            }
        }
        let endpoints = gathered.into_endpoints();
        index.zones = zones;
        Ok((endpoints, index))
    }

    async fn write(&self, index: &Index, units: &[Unit<'_>]) -> Result<(), ProviderError> {
        if index.lost.load(Ordering::Relaxed) {
            return Err(ProviderError::Failed {
                kind: FailureKind::Transient,
                message:
                    "the record ids of an earlier write are unknown: the zones are read again before the next write"
                        .into(),
                source: None,
            });
        }
        let mut failures = Failures::default();
        let mut by_zone: BTreeMap<usize, Vec<Unit<'_>>> = BTreeMap::new();
        for unit in units {
            if let Some(missing) = unknown_id(index, unit) {
                // A record this change must delete or patch has no id the index knows (read under another
                // spelling, or changed since by someone else): nothing of the unit is sent, and the zones are
                // read again before the next write, rather than reporting a delete that was never made.
                index.lost.store(true, Ordering::Relaxed);
                failures.push(unit.failure(
                    FailureKind::Transient,
                    format!("the Cloudflare id of {missing} is unknown: the zones are read again first"),
                ));
                continue;
            }
            if let Some(invalid) = invalid_data(unit) {
                failures.refuse(unit, invalid);
                continue;
            }
            match zone::of_unit(unit, "Cloudflare", supported, |name| index.zone_for(name)) {
                Ok(z) => by_zone.entry(z).or_default().push(*unit),
                Err(refusal) => failures.refuse(unit, refusal),
            }
        }
        let mut calls = 0;
        for (z, mut zone_units) in by_zone {
            let zone = &index.zones[z];
            batch::sort_for_apply(&mut zone_units);
            // Batches of at most the zone's limit; a unit that alone needs more travels alone.
            let records = |u: &Unit<'_>| Size::changes(self.encode(index, std::slice::from_ref(u)).len());
            for chunk in batch::split_by(&zone_units, Limits::changes(self.batch_size(zone)), records) {
                self.config.batch.pause_before(calls).await;
                calls += 1;
                failures.absorb(batch::apply_split(chunk, |b| self.send(zone, index, b)).await)?;
            }
        }
        failures.into_result()
    }

    fn canonicalise(&self, ep: &mut Endpoint) {
        let proxied = self.proxied(ep);
        let comment = self.comment(ep);
        ep.provider_specific.0.retain(|p| {
            ![PROXIED_PROPERTY, COMMENT_PROPERTY].contains(&p.name.as_str())
                && !is_property(&p.name, PROXIED_KEY)
                && !is_property(&p.name, COMMENT_KEY)
        });
        ep.provider_specific.set(PROXIED_PROPERTY, proxied.to_string());
        if let Some(c) = comment {
            ep.provider_specific.set(COMMENT_PROPERTY, c);
        }
        ep.provider_specific.sort_by_name();
        // A TXT value is compared as it reads back from its 255-octet strings.
        txt::adjust_to_read_back(ep);
        // Cloudflare keeps proxied records at TTL 1 (automatic) whatever is asked.
        if proxied {
            ep.record_ttl = Ttl(0);
        }
    }

    fn domains(&self) -> DomainFilter {
        self.config.zones.domain_filter.clone()
    }

    /// The comment's room beside the user's own comment (`--cloudflare-record-comment-limit`).
    fn ownership_room(&self, ep: &Endpoint) -> Option<usize> {
        Some(comment::room(self.comment(ep).as_deref(), self.config.comment_limit))
    }

    /// The zone `write` sends a name to: the closest of the read's.
    fn zone_of(&self, index: &Index, name: &str) -> zone::Placement {
        index
            .zone_for(name)
            .map_or(zone::Placement::Outside, zone::Placement::Zone)
    }

    /// Each batch's answer is folded into the index (see [`Index`]), so it serves until the next read.
    fn index_outlives_writes(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_go_to_the_longest_zone_on_a_label_boundary() {
        let index = Index {
            zones: vec![
                Zone {
                    id: "1".into(),
                    name: "example.org".into(),
                    plan: None,
                },
                Zone {
                    id: "2".into(),
                    name: "sub.example.org".into(),
                    plan: None,
                },
            ],
            ..Index::default()
        };
        assert_eq!(index.zone_for("a.sub.example.org"), Some(1));
        assert_eq!(index.zone_for("a.example.org."), Some(0));
        assert_eq!(index.zone_for("example.org"), Some(0));
        assert_eq!(index.zone_for("badexample.org"), None);
    }

    #[test]
    fn properties_are_found_under_any_prefix() {
        assert_eq!(
            (PROXIED_PROPERTY, COMMENT_PROPERTY),
            ("cloudflare/proxied", "cloudflare/record-comment")
        );
        let mut ep = Endpoint::new("a.example.org", RecordType::A, ["192.0.2.1"]);
        assert_eq!(property(&ep, PROXIED_PROPERTY, PROXIED_KEY), None);
        ep.provider_specific.set("dns.example.com/cloudflare-proxied", "true");
        assert_eq!(property(&ep, PROXIED_PROPERTY, PROXIED_KEY), Some("true"));
        ep.provider_specific.set(PROXIED_PROPERTY, "false");
        assert_eq!(
            property(&ep, PROXIED_PROPERTY, PROXIED_KEY),
            Some("false"),
            "the canonical name wins"
        );
        assert!(!is_property(
            "external-dns.kubernetes.io/cloudflare-proxied-x",
            PROXIED_KEY
        ));
    }

    #[test]
    fn only_a_aaaa_and_cname_are_proxiable() {
        assert!(proxiable(&RecordType::A) && proxiable(&RecordType::Aaaa) && proxiable(&RecordType::Cname));
        assert!(!proxiable(&RecordType::Txt) && !proxiable(&RecordType::Mx) && !proxiable(&RecordType::Ns));
        assert_eq!(parse_mx("10 mail.example.org."), Some((10, "mail.example.org")));
        assert_eq!(parse_mx("mail.example.org"), None);
    }
}
