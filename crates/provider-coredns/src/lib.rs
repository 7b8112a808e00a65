//! The CoreDNS provider: records live in etcd in the SkyDNS format CoreDNS's `etcd` plugin serves, written
//! key for key as external-dns's `coredns` provider writes them, so either can take over from the other.
//!
//! What it does differently from external-dns: each target has a key of its own and a change touches exactly
//! the keys it read (external-dns deletes by prefix); the writes of a batch go in one etcd transaction, so a
//! record and its ownership record land together; a record CoreDNS cannot serve (an SRV, an A record whose
//! target is not an IPv4 address) is refused by name without blocking the others; a value that is not
//! SkyDNS JSON is skipped with a warning instead of failing the whole read.
//!
//! ```
//! use extdns_provider_coredns::{key_for, name_of};
//!
//! // SkyDNS keys are the name's labels reversed under the prefix, plus an id per record.
//! let key = key_for("/skydns/", "web.example.org", "1a2b3c4d");
//! assert_eq!(key, "/skydns/org/example/web/1a2b3c4d");
//! assert_eq!(name_of("/skydns/", &key, 1).as_deref(), Some("web.example.org"));
//! ```

mod config;
mod etcd;
mod skydns;

use std::collections::{BTreeMap, HashMap};

use async_trait::async_trait;
use extdns_endpoint::{Change, DomainFilter, Endpoint, RecordType, TargetKind, Ttl};
use extdns_provider::batch::{self, Failures, Limits, Size, Unit};
use extdns_provider::gather::{ByRecord, Gather};
use extdns_provider::{IndexedProvider, ProviderError};

pub use config::{ConfigError, CorednsConfig, EtcdTls};
pub use etcd::EtcdError;
pub use skydns::{Service, key_for, name_of};

use etcd::{EtcdClient, Op};

/// The provider-specific property that sets the SkyDNS `group` of a record (`<prefix>coredns-group`).
pub const GROUP_PROPERTY: &str = "coredns/group";

/// What a read learnt: every value by key, and the keys that hold each record (several when a name was
/// written twice with the same target).
/// Opaque outside this crate: the provider's [`IndexedProvider::Index`], kept in the read's state.
#[derive(Debug, Default)]
pub struct Index {
    services: HashMap<String, Service>,
    keys: ByRecord<String>,
}

/// The provider. Cheap to share: `Arc<CorednsProvider>` as `Arc<dyn Provider>`.
#[derive(Debug)]
pub struct CorednsProvider {
    client: EtcdClient,
    config: CorednsConfig,
}

impl CorednsProvider {
    /// Check the configuration and prepare the HTTP client; no network access (an unreachable etcd shows
    /// at the first sync, where it is retried).
    pub fn new(config: CorednsConfig) -> Result<CorednsProvider, ConfigError> {
        if config.prefix.is_empty() {
            return Err(ConfigError::EmptyPrefix);
        }
        Ok(CorednsProvider {
            client: EtcdClient::new(&config)?,
            config,
        })
    }

    /// The value written for one target of `ep`.
    fn service_for(&self, ep: &Endpoint, target: &str) -> Service {
        let mut s = Service {
            ttl: write_ttl(ep.record_ttl),
            targetstrip: 1,
            group: ep.provider_specific.get(GROUP_PROPERTY).unwrap_or_default().to_string(),
            ownedby: self.config.owned_by.clone().unwrap_or_default(),
            ..Service::default()
        };
        match ep.record_type {
            RecordType::Txt => s.text = target.to_string(),
            RecordType::Mx => {
                if let Some((preference, host)) = parse_mx(target) {
                    s.mail = true;
                    s.priority = preference;
                    s.host = host.to_string();
                }
            }
            _ => s.host = target.to_string(),
        }
        s
    }

    /// The writes of a batch: every change of every unit folded into one value (or deletion) per key, so a
    /// key two changes touch is written once with both applied.
    fn encode(&self, index: &Index, units: &[Unit<'_>]) -> Vec<Op> {
        let mut pending: BTreeMap<String, Option<Service>> = BTreeMap::new();
        for unit in units {
            for change in unit.changes() {
                self.encode_change(index, change, &mut pending);
            }
        }
        pending
            .into_iter()
            .map(|(key, value)| match value {
                Some(s) => Op::Put {
                    // A struct of strings, integers and booleans always serialises.
                    value: serde_json::to_string(&s).unwrap_or_default(),
                    key,
                },
                None => Op::Delete { key },
            })
            .collect()
    }

    fn encode_change(&self, index: &Index, change: &Change, pending: &mut BTreeMap<String, Option<Service>>) {
        let current = |pending: &BTreeMap<String, Option<Service>>, key: &str| match pending.get(key) {
            Some(v) => v.clone(),
            None => index.services.get(key).cloned(),
        };
        let keys_of = |ep: &Endpoint, target: &str| index.keys.get(ep, target);
        let create = |pending: &mut BTreeMap<String, Option<Service>>, ep: &Endpoint, target: &str| {
            let key = key_for(&self.config.prefix, &ep.dns_name, &skydns::random_id());
            pending.insert(key, Some(self.service_for(ep, target)));
        };
        let remove = |pending: &mut BTreeMap<String, Option<Service>>, ep: &Endpoint, target: &str| {
            for key in keys_of(ep, target) {
                let Some(mut s) = current(pending, key) else { continue };
                if ep.record_type == RecordType::Txt {
                    s.text.clear();
                } else {
                    s.host.clear();
                    s.mail = false;
                    s.priority = 0;
                }
                pending.insert(key.clone(), (!s.is_empty()).then_some(s));
            }
        };
        match change {
            Change::Create(ep) => {
                for t in ep.targets.iter() {
                    create(pending, ep, t.as_str());
                }
            }
            Change::Delete(ep) => {
                for t in ep.targets.iter() {
                    remove(pending, ep, t.as_str());
                }
            }
            Change::Update { old, new } => {
                for t in old.targets.iter() {
                    if !new.targets.iter().any(|n| n.as_str() == t.as_str()) {
                        remove(pending, old, t.as_str());
                    }
                }
                for t in new.targets.iter() {
                    if !old.targets.iter().any(|o| o.as_str() == t.as_str()) {
                        create(pending, new, t.as_str());
                        continue;
                    }
                    // A kept target: its keys take the new TTL and group in place.
                    let want = self.service_for(new, t.as_str());
                    for key in keys_of(old, t.as_str()) {
                        let Some(mut s) = current(pending, key) else { continue };
                        let before = s.clone();
                        s.ttl = want.ttl;
                        s.group.clone_from(&want.group);
                        s.ownedby.clone_from(&want.ownedby);
                        if s != before {
                            pending.insert(key.clone(), Some(s));
                        }
                    }
                }
            }
        }
    }

    async fn send(&self, index: &Index, batch: &[Unit<'_>]) -> Result<(), ProviderError> {
        let ops = self.encode(index, batch);
        if ops.is_empty() {
            return Ok(());
        }
        match self.client.txn(&ops).await {
            Ok(()) => {
                tracing::debug!(units = batch.len(), writes = ops.len(), "etcd transaction applied");
                Ok(())
            }
            // A refusal of the transaction (too many operations, a request too large) may be one unit's
            // fault: the batch helper splits it.
            Err(e) => Err(ProviderError::from_call("writing records", e)),
        }
    }
}

/// Why a change cannot be stored as a SkyDNS record, if it cannot.
fn refusal(ep: &Endpoint) -> Option<String> {
    let name = ep.dns_name.trim_end_matches('.');
    if name.is_empty() || name.split('.').any(|l| l.is_empty() || l.contains('/')) {
        return Some(format!("{name:?} cannot be an etcd key (an empty label or a '/')"));
    }
    for t in ep.targets.iter() {
        let ok = match ep.record_type {
            RecordType::A => matches!(t.kind(), TargetKind::Ipv4(_)),
            RecordType::Aaaa => matches!(t.kind(), TargetKind::Ipv6(_)),
            // CoreDNS serves a host that is an address as A/AAAA, never as a CNAME.
            RecordType::Cname => !t.is_ip() && !t.as_str().is_empty(),
            RecordType::Mx => parse_mx(t.as_str()).is_some(),
            RecordType::Txt => true,
            _ => {
                return Some(format!(
                    "CoreDNS serves no {} records from etcd (A, AAAA, CNAME, MX and TXT only)",
                    ep.record_type
                ));
            }
        };
        if !ok {
            return Some(format!(
                "target {:?} is not valid for a {} record CoreDNS would serve",
                t.as_str(),
                ep.record_type
            ));
        }
    }
    None
}

/// `<preference> <host>` of an MX target.
fn parse_mx(target: &str) -> Option<(i64, &str)> {
    let (preference, host) = target.trim().split_once(' ')?;
    let preference: u16 = preference.parse().ok()?;
    let host = host.trim().trim_end_matches('.');
    (!host.is_empty() && !host.contains(' ')).then_some((i64::from(preference), host))
}

/// The TTL stored: the endpoint's when it has one, else 0 (left out, so CoreDNS uses its default).
fn write_ttl(ttl: Ttl) -> u32 {
    if ttl.is_configured() {
        u32::try_from(ttl.0).unwrap_or(u32::MAX)
    } else {
        0
    }
}

#[async_trait]
impl IndexedProvider for CorednsProvider {
    type Index = Index;

    async fn read(&self) -> Result<(Vec<Endpoint>, Self::Index), ProviderError> {
        let kvs = self
            .client
            .get_prefix(&self.config.prefix)
            .await
            .map_err(|e| ProviderError::from_call(format!("reading {}", self.config.prefix), e))?;
        let mut index = Index::default();
        let mut gathered = Gather::default();
        for kv in kvs {
            let service: Service = match serde_json::from_slice(&kv.value) {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(key = %kv.key, error = %e, "skipping an etcd value that is not a SkyDNS record");
                    continue;
                }
            };
            if let Some(owner) = &self.config.owned_by
                && service.ownedby != *owner
            {
                continue;
            }
            let Some(name) = name_of(&self.config.prefix, &kv.key, service.targetstrip) else {
                tracing::warn!(key = %kv.key, targetstrip = service.targetstrip, "skipping a key with no record name");
                continue;
            };
            if !self.config.domain_filter.matches(&name) {
                continue;
            }
            let ttl = Ttl(i64::from(service.ttl));
            let parts = [
                service.host_type().map(|t| (t, service.host_target())),
                (!service.text.is_empty()).then(|| (RecordType::Txt, service.text.clone())),
            ];
            for (rtype, target) in parts.into_iter().flatten() {
                gathered.add(&name, &rtype, &target, || {
                    let mut ep = Endpoint::new(&name, rtype.clone(), [target.as_str()]).with_ttl(ttl);
                    if !service.group.is_empty() {
                        ep.provider_specific.set(GROUP_PROPERTY, service.group.clone());
                    }
                    ep
                });
                index.keys.push(&name, rtype, target, kv.key.clone());
            }
            index.services.insert(kv.key, service);
        }
        Ok((gathered.into_endpoints(), index))
    }

    async fn write(&self, index: &Index, units: &[Unit<'_>]) -> Result<(), ProviderError> {
        let mut failures = Failures::default();
        let mut valid: Vec<Unit<'_>> = Vec::with_capacity(units.len());
        for unit in units {
            match unit.changes().find_map(|c| refusal(c.endpoint())) {
                Some(reason) => failures.refuse(unit, reason),
                None => valid.push(*unit),
            }
        }
        batch::sort_for_apply(&mut valid);
        // Transactions of at most `max_txn_ops` writes; a unit that alone needs more travels alone.
        let writes = |u: &Unit<'_>| Size::changes(self.encode(index, std::slice::from_ref(u)).len());
        for chunk in batch::split_by(&valid, Limits::changes(self.config.max_txn_ops), writes) {
            failures.absorb(batch::apply_split(chunk, |b| self.send(index, b)).await)?;
        }
        failures.into_result()
    }

    fn domains(&self) -> DomainFilter {
        self.config.domain_filter.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mx_targets_are_preference_and_host() {
        assert_eq!(parse_mx("10 mail.example.org"), Some((10, "mail.example.org")));
        assert_eq!(parse_mx("10 mail.example.org."), Some((10, "mail.example.org")));
        assert_eq!(parse_mx("mail.example.org"), None);
        assert_eq!(parse_mx("70000 mail.example.org"), None);
    }

    #[test]
    fn records_coredns_cannot_serve_are_refused() {
        let ok = Endpoint::new("web.example.org", RecordType::A, ["192.0.2.1"]);
        assert_eq!(refusal(&ok), None);
        let srv = Endpoint::new("_x._tcp.example.org", RecordType::Srv, ["0 50 80 web.example.org"]);
        assert!(refusal(&srv).is_some_and(|r| r.contains("SRV")));
        let wrong = Endpoint::new("web.example.org", RecordType::A, ["2001:db8::1"]);
        assert!(refusal(&wrong).is_some_and(|r| r.contains("2001:db8::1")));
        let cname_ip = Endpoint::new("web.example.org", RecordType::Cname, ["192.0.2.1"]);
        assert!(refusal(&cname_ip).is_some());
        let slash = Endpoint::new("a/b.example.org", RecordType::A, ["192.0.2.1"]);
        assert!(refusal(&slash).is_some());
    }

    /// SkyDNS values have no field for TLSA or SVCB/HTTPS data, so CoreDNS's etcd plugin serves none: each is
    /// refused naming its type, not written as something else.
    #[test]
    fn tlsa_svcb_and_https_are_refused_by_name() {
        for (rt, target) in extdns_test_support::rdata::structured_samples() {
            let ep = Endpoint::new("_443._tcp.web.example.org", rt.clone(), [target]);
            let why = refusal(&ep).unwrap_or_default();
            assert!(why.contains(&format!("no {rt} records")), "{rt}: {why}");
        }
    }

    #[test]
    fn ttls_are_kept_or_left_out() {
        assert_eq!(write_ttl(Ttl(300)), 300);
        assert_eq!(write_ttl(Ttl(0)), 0);
    }
}
