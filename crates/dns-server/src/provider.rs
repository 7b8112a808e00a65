//! `--provider=dns-server`: the controller's writes go into the served zones, through the same
//! [`Provider`] path as every other backend, so a change is on the wire as soon as the plan is applied.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use extdns_dns_wire::codec;
use extdns_endpoint::{Change, DomainFilter, Endpoint, Ttl};
use extdns_provider::batch::{self, Unit};
use extdns_provider::zone::Placement;
use extdns_provider::{Failures, Provider, ProviderError, ReadState, Records};
use hickory_proto::rr::{LowerName, Name, Record, RecordType};

use crate::set_data::SetData;
use crate::zones::{ChangeError, RrSet, SetOrigin, ZoneSet, Zones};

/// The provider side of the built-in server: reads and writes the [`Zones`] the listeners answer from.
#[derive(Debug, Clone)]
pub struct DnsServerProvider {
    zones: Arc<Zones>,
    default_ttl: u32,
    filter: DomainFilter,
    /// The (name, type, TTL) whose cap was warned of: the plan adjusts at every sync, and a warning
    /// repeated each interval buries the others. A log's memory only: nothing decided depends on it.
    capped_told: Arc<Mutex<HashSet<(String, String, u32)>>>,
}

impl DnsServerProvider {
    /// A provider writing into `zones`; records whose endpoint sets no TTL get `default_ttl`.
    pub fn new(zones: Arc<Zones>, default_ttl: u32) -> DnsServerProvider {
        let origins: Vec<String> = zones
            .read()
            .zones()
            .iter()
            .map(|z| codec::name_text(z.origin()))
            .collect();
        DnsServerProvider {
            filter: DomainFilter::new(&origins, &[]),
            zones,
            default_ttl,
            capped_told: Arc::default(),
        }
    }
}

/// Why the built-in server cannot serve a record as asked: the change is refused for that record.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum Unservable {
    /// A record with a routing policy.
    #[error(
        "set identifier {0:?}: the built-in DNS server serves one record set per name and type, without \
         routing policies"
    )]
    SetIdentifier(String),
    /// A name or a target that is not valid DNS data.
    #[error(transparent)]
    Encoding(#[from] extdns_dns_wire::CodecError),
    /// A record without targets.
    #[error("a record without targets")]
    NoTargets,
    /// No served zone holds the name.
    #[error("the name is in no served zone")]
    NoZone,
    /// The zone does not take the change (a CNAME beside other data, a create of a set that exists).
    #[error(transparent)]
    Change(#[from] ChangeError),
}

/// One record set change, checked and encoded, ready to apply.
struct Op {
    owner: Name,
    key: LowerName,
    record_type: RecordType,
    create: bool,
    /// The set to put in place; `None` removes the set.
    set: Option<RrSet>,
}

impl DnsServerProvider {
    fn ttl(&self, ttl: Ttl) -> u32 {
        if ttl.is_configured() {
            // RFC 2181 §8: TTLs above 2^31 - 1 are read as 0 by resolvers; cap rather than serve that.
            u32::try_from(ttl.0).unwrap_or(u32::MAX).min(i32::MAX as u32)
        } else {
            self.default_ttl
        }
    }

    fn set_of(&self, ep: &Endpoint) -> Result<(Name, RrSet), Unservable> {
        if !ep.set_identifier.is_empty() {
            return Err(Unservable::SetIdentifier(ep.set_identifier.clone()));
        }
        let owner = codec::name(&ep.dns_name)?;
        let data = ep
            .targets
            .iter()
            .map(|t| codec::rdata(&ep.record_type, t))
            .collect::<Result<Vec<_>, _>>()?;
        let Some(record_type) = data.first().map(|d| d.record_type()) else {
            return Err(Unservable::NoTargets);
        };
        let data = SetData::from(data);
        let origin = SetOrigin::managed(&ep.record_type, &ep.targets, record_type, &data);
        Ok((
            owner,
            RrSet {
                record_type,
                ttl: self.ttl(ep.record_ttl),
                data,
                origin,
            },
        ))
    }

    fn op(&self, change: &Change) -> Result<Op, Unservable> {
        let (ep, create, keep) = match change {
            Change::Create(ep) => (ep, true, true),
            Change::Update { new, .. } => (&**new, false, true),
            Change::Delete(ep) => (ep, false, false),
        };
        let (owner, set) = self.set_of(ep)?;
        Ok(Op {
            key: LowerName::new(&owner),
            owner,
            record_type: set.record_type,
            create,
            set: keep.then_some(set),
        })
    }

    fn ops(&self, unit: &Unit<'_>, zones: &ZoneSet) -> Result<Vec<Op>, Unservable> {
        let mut ops = unit.changes().map(|c| self.op(c)).collect::<Result<Vec<_>, _>>()?;
        // Capped here too for a change the plan did not adjust: a signed zone serves no TTL above its bound.
        for op in &mut ops {
            if let (Some(set), Some(max)) = (op.set.as_mut(), max_ttl(zones, &op.owner)) {
                set.ttl = set.ttl.min(max);
            }
        }
        Ok(ops)
    }
}

/// The largest TTL the signed zone holding `name` serves, if it is signed with a bound.
fn max_ttl(zones: &ZoneSet, name: &Name) -> Option<u32> {
    zones.zone_for(&LowerName::new(name))?.config().dnssec.as_ref()?.max_ttl
}

#[async_trait]
impl Provider for DnsServerProvider {
    async fn records(&self) -> Result<Records, ProviderError> {
        let set = self.zones.read();
        let mut endpoints = Vec::new();
        for zone in set.zones() {
            for node in zone.nodes() {
                for rrset in node.rrsets() {
                    if let Some((record_type, targets)) = rrset.endpoint_targets() {
                        let name = codec::name_text(&node.name());
                        let ep = Endpoint::new(&name, record_type, targets.iter().map(|t| t.as_str()))
                            .with_ttl(Ttl(i64::from(rrset.ttl)));
                        endpoints.push(ep);
                    }
                }
            }
        }
        Ok(Records::from(endpoints))
    }

    async fn apply(&self, _read: &ReadState, units: &[Unit<'_>]) -> Result<(), ProviderError> {
        let mut units = units.to_vec();
        batch::sort_for_apply(&mut units);
        let mut failures = Failures::default();
        let now = u32::try_from(extdns_dns_wire::unix_now()).unwrap_or(u32::MAX);
        // Per touched zone (by origin): the records removed and added, journalled once at the end.
        let mut diffs: HashMap<LowerName, (Vec<Record>, Vec<Record>)> = HashMap::new();
        // Encoded before the lock is taken: queries wait for a write only while it changes the zones,
        // not while a first sync's thousands of targets are parsed.
        let prepared: Vec<Result<Vec<Op>, Unservable>> = {
            let zones = self.zones.read();
            units.iter().map(|u| self.ops(u, &zones)).collect()
        };
        let mut set = self.zones.write();
        for (unit, ops) in units.iter().zip(prepared) {
            let ops = match ops {
                Ok(ops) => ops,
                Err(reason) => {
                    failures.push(unit.refused(reason.to_string()));
                    continue;
                }
            };
            let checked = ops.iter().try_for_each(|op| {
                let zone = set.zone_for(&op.key).ok_or(Unservable::NoZone)?;
                Ok::<_, Unservable>(zone.check(&op.key, op.record_type, op.create)?)
            });
            if let Err(reason) = checked {
                failures.push(unit.refused(reason.to_string()));
                continue;
            }
            for op in ops {
                let Some(zone) = set.zone_for_mut(&op.key) else {
                    continue;
                };
                let (removed, added) = diffs.entry(zone.lower_origin().clone()).or_default();
                let old = match op.set {
                    Some(new) => {
                        added.extend(new.records(op.owner.clone()));
                        zone.put(&op.owner, new)
                    }
                    None => zone.remove(&op.key, op.record_type),
                };
                if let Some(old) = old {
                    removed.extend(old.records(op.owner.clone()));
                }
            }
        }
        let touched = !diffs.is_empty();
        for (origin, (removed, added)) in diffs {
            if let Some(zone) = set.zones_mut().iter_mut().find(|z| z.lower_origin() == &origin) {
                zone.commit(now, removed, added);
            }
        }
        drop(set);
        if touched {
            self.zones.changed();
        }
        failures.into_result()
    }

    /// Each endpoint's TTL as it will be served: the default for none, and a signed zone's
    /// `--dns-server-dnssec-max-zone-ttl` for a larger one (warned of, naming the object), so the plan
    /// compares what is served with what is asked and never updates a capped record again.
    async fn adjust_endpoints(&self, mut endpoints: Vec<Endpoint>) -> Result<Vec<Endpoint>, ProviderError> {
        let zones = self.zones.read();
        let bounded = zones
            .zones()
            .iter()
            .any(|z| z.config().dnssec.as_ref().is_some_and(|d| d.max_ttl.is_some()));
        for ep in &mut endpoints {
            let asked = self.ttl(ep.record_ttl);
            let bound = if bounded {
                codec::name(&ep.dns_name).ok().and_then(|n| max_ttl(&zones, &n))
            } else {
                None
            };
            let ttl = match bound {
                Some(max) if asked > max => {
                    let first = self.capped_told.lock().unwrap_or_else(PoisonError::into_inner).insert((
                        ep.dns_name.clone(),
                        ep.record_type.to_string(),
                        asked,
                    ));
                    if !first {
                        ep.record_ttl = Ttl(i64::from(max));
                        continue;
                    }
                    tracing::warn!(
                        name = %ep.dns_name,
                        record_type = %ep.record_type,
                        object = ep.resource().as_deref().unwrap_or("unknown"),
                        ttl = asked,
                        max,
                        "a TTL above --dns-server-dnssec-max-zone-ttl in a signed zone: served with the largest \
                         (a key rollover retires the old key that long after the new one signs)"
                    );
                    max
                }
                _ => asked,
            };
            ep.record_ttl = Ttl(i64::from(ttl));
        }
        Ok(endpoints)
    }

    fn domain_filter(&self) -> DomainFilter {
        self.filter.clone()
    }

    /// The served zone a name is written to (the closest); a name no DNS name can hold is left to the
    /// write, which names why.
    fn placement(&self, _read: &ReadState, name: &str) -> Placement {
        let Ok(owner) = codec::name(name) else {
            return Placement::Unknown;
        };
        let key = LowerName::new(&owner);
        let position = self.zones.read().position_for(&key);
        position.map_or(Placement::Outside, Placement::Zone)
    }

    fn read_state_outlives_writes(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use extdns_endpoint::RecordType as EndpointType;
    use extdns_provider::apply_changes;

    use super::*;
    use crate::config::Limits;
    use crate::zones::tests::zone_config;

    /// One replica's provider: serials do not settle, so the journal answers from the first one.
    fn provider() -> DnsServerProvider {
        let limits = Limits {
            serial_cell: None,
            ..Limits::default()
        };
        let zones = Arc::new(Zones::new(&[zone_config("example.org.")], 1, limits));
        DnsServerProvider::new(zones, 60)
    }

    #[test]
    fn the_registry_is_told_which_served_zone_holds_a_name() {
        let configs = [zone_config("example.org."), zone_config("sub.example.org.")];
        let p = DnsServerProvider::new(Arc::new(Zones::new(&configs, 1, Limits::default())), 60);
        let at = |name: &str| p.placement(&ReadState::default(), name);
        assert_eq!(at("a-example.org"), Placement::Outside, "a top apex's ownership name");
        assert!(matches!(at("sub.example.org"), Placement::Zone(_)));
        assert!(
            at("sub.example.org") != at("a-sub.example.org"),
            "a child apex's ownership name is in the parent zone"
        );
        assert_eq!(at("web.example.org"), at("a-sub.example.org"));
    }

    #[tokio::test]
    async fn what_is_applied_reads_back_exactly_and_bumps_the_serial() -> Result<(), ProviderError> {
        let p = provider();
        let web = Endpoint::new("web.example.org", EndpointType::A, ["192.0.2.10", "192.0.2.11"]).with_ttl(Ttl(120));
        let txt = Endpoint::new("a-web.example.org", EndpointType::Txt, ["\"heritage=external-dns\""]);
        let mx = Endpoint::new("example.org", EndpointType::Mx, ["10 mail.example.org"]);
        let changes = p.adjust_endpoints(vec![web, txt, mx]).await?;
        apply_changes(&p, &changes.iter().cloned().map(Change::Create).collect::<Vec<_>>()).await?;
        let mut read = p.records().await?.endpoints;
        read.sort_by(|a, b| a.dns_name.cmp(&b.dns_name));
        let mut want = changes;
        want.sort_by(|a, b| a.dns_name.cmp(&b.dns_name));
        assert_eq!(read, want);
        let set = p.zones.read();
        assert!(set.zones()[0].serial() > 1);
        assert_eq!(set.zones()[0].journal().since(1).map(|d| d.count()), Some(1));
        Ok(())
    }

    #[tokio::test]
    async fn a_ttl_above_a_signed_zones_bound_is_served_capped_and_warned_of_naming_the_object()
    -> Result<(), ProviderError> {
        use crate::dnssec::{DnssecConfig, KeyAlgorithm, ZoneKey};

        let mut config = zone_config("example.org.");
        config.dnssec = Some(DnssecConfig {
            max_ttl: Some(3_600),
            ..DnssecConfig::new(ZoneKey::generate(KeyAlgorithm::Ed25519).expect("key"))
        });
        let p = DnsServerProvider::new(Arc::new(Zones::new(&[config], 1, Limits::default())), 60);
        let long = Endpoint::new("web.example.org", EndpointType::A, ["192.0.2.1"])
            .with_ttl(Ttl(86_400))
            .with_label(extdns_endpoint::label::RESOURCE, "ingress/default/web");
        let short = Endpoint::new("api.example.org", EndpointType::A, ["192.0.2.2"]).with_ttl(Ttl(300));
        let (adjusted, warned) = {
            let logs = extdns_test_support::logs::Logs::at(tracing::Level::WARN);
            let guard = logs.capture();
            let adjusted = p.adjust_endpoints(vec![long.clone(), short]).await?;
            drop(guard);
            (adjusted, logs.text())
        };
        assert_eq!(
            adjusted.iter().map(|e| e.record_ttl.0).collect::<Vec<_>>(),
            [3_600, 300]
        );
        for said in ["web.example.org", "ingress/default/web", "86400", "3600"] {
            assert!(warned.contains(said), "the warning names {said}: {warned}");
        }
        // Applied as asked (not adjusted), it is served capped all the same, and read back as served, so
        // the adjusted plan sees no difference.
        apply_changes(&p, &[Change::Create(long)]).await?;
        let read = p.records().await?.endpoints;
        let web = read.iter().find(|e| e.dns_name == "web.example.org").expect("served");
        assert_eq!(web.record_ttl, Ttl(3_600));
        let set = p.zones.read();
        let served = set.zones()[0]
            .node(&LowerName::new(&codec::name("web.example.org").expect("name")))
            .and_then(|n| n.rrset(RecordType::A))
            .map(|s| s.ttl);
        assert_eq!(served, Some(3_600));
        Ok(())
    }

    #[tokio::test]
    async fn targets_are_kept_only_when_the_data_spells_them_otherwise() -> Result<(), ProviderError> {
        let p = provider();
        let plain = Endpoint::new("web.example.org", EndpointType::A, ["192.0.2.1"]).with_ttl(Ttl(60));
        let upper = Endpoint::new("v6.example.org", EndpointType::Aaaa, ["2001:DB8::1"]).with_ttl(Ttl(60));
        let changes = [plain.clone(), upper.clone()].map(Change::Create);
        apply_changes(&p, &changes).await?;
        {
            let set = p.zones.read();
            let zone = &set.zones()[0];
            let spelt = |name: &str, rt| {
                let node = zone
                    .node(&LowerName::new(&codec::name(name).expect("name")))
                    .expect("node");
                match &node.rrset(rt).expect("set").origin {
                    SetOrigin::Managed { spelt } => spelt.as_deref().map(|s| s.targets.clone()),
                    SetOrigin::Config => panic!("a managed set"),
                }
            };
            assert!(spelt("web.example.org", RecordType::A).is_none());
            assert_eq!(spelt("v6.example.org", RecordType::AAAA), Some(upper.targets.clone()));
        }
        let mut read = p.records().await?.endpoints;
        read.sort_by(|a, b| a.dns_name.cmp(&b.dns_name));
        assert_eq!(read, vec![upper, plain], "both read back exactly as applied");
        Ok(())
    }

    #[tokio::test]
    async fn a_bad_unit_fails_alone() -> Result<(), ProviderError> {
        let p = provider();
        let good = Endpoint::new("good.example.org", EndpointType::A, ["192.0.2.1"]);
        let outside = Endpoint::new("web.example.com", EndpointType::A, ["192.0.2.2"]);
        let apex_cname = Endpoint::new("example.org", EndpointType::Cname, ["elsewhere.example.net"]);
        let weighted = Endpoint::new("w.example.org", EndpointType::A, ["192.0.2.3"]).with_set_identifier("eu");
        let changes: Vec<Change> = [good, outside, apex_cname, weighted]
            .into_iter()
            .map(Change::Create)
            .collect();
        let Err(ProviderError::Partial { failures }) = apply_changes(&p, &changes).await else {
            panic!("three changes must fail");
        };
        assert_eq!(failures.len(), 3, "{failures:?}");
        let read = p.records().await?.endpoints;
        assert_eq!(read.len(), 1);
        assert_eq!(read[0].dns_name, "good.example.org");
        Ok(())
    }

    #[tokio::test]
    async fn updates_and_deletes_replace_and_remove_the_set() -> Result<(), ProviderError> {
        let p = provider();
        // Two versions of one record.
        let [v1, v2] = ["192.0.2.1", "192.0.2.2"]
            .map(|ip| Endpoint::new("web.example.org", EndpointType::A, [ip]).with_ttl(Ttl(60)));
        apply_changes(&p, &[Change::Create(v1.clone())]).await?;
        let update = Change::Update {
            old: Box::new(v1),
            new: Box::new(v2.clone()),
        };
        apply_changes(&p, &[update]).await?;
        assert_eq!(p.records().await?.endpoints, vec![v2.clone()]);
        apply_changes(&p, &[Change::Delete(v2)]).await?;
        assert!(p.records().await?.endpoints.is_empty());
        Ok(())
    }
}
