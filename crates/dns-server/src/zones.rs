//! The served data: each zone's record sets by owner name, its serial, and the journal of changes IXFR
//! answers from.
//!
//! Queries never wait for a write: they read a snapshot ([`Zones::read`], an `Arc` taken under a lock held
//! only to copy the pointer), while a write ([`Zones::write`], one at a time) changes a copy of it and
//! publishes the copy whole when it is done, so a query sees a write whole or not at all, and a serial
//! always names exactly one zone content. The copy is cheap: the nodes are in shards shared between
//! snapshots ([`ShardedMap`]), so a write copies the shards it changes, about 1/1024 of the zone per name,
//! and the journal's diffs are shared too. Each write bumps the serial of the zones it touched once and
//! journals what it removed and added; [`Zones::subscribe`] wakes whoever sends NOTIFY.

use std::collections::{HashMap, VecDeque};
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use extdns_endpoint::{RecordType as EndpointType, Targets};
use hickory_proto::rr::rdata::{A, AAAA, NS, SOA};
use hickory_proto::rr::{LowerName, Name, RData, Record, RecordType};
use tokio::sync::watch;

use crate::config::{Limits, ZoneConfig};
use crate::dnssec::ZoneSigning;
use crate::shards::ShardedMap;

/// Every zone the server answers for, shared by the provider (which writes) and the listeners (which read).
#[derive(Debug)]
pub struct Zones {
    /// The published snapshot; the lock is held only to copy or replace the pointer.
    current: RwLock<Arc<ZoneSet>>,
    /// Held by the one write in progress.
    writer: Mutex<()>,
    changed: watch::Sender<u64>,
}

impl Zones {
    /// The configured zones, empty but for their SOA, apex NS and glue; serials start at `serial`, which the
    /// binary takes from the clock so that a restarted server never offers a serial older than before.
    pub fn new(configs: &[ZoneConfig], serial: u32, limits: Limits) -> Zones {
        let mut zones: Vec<Zone> = configs.iter().map(|c| Zone::new(c.clone(), serial, limits)).collect();
        // Deepest first, so the first zone that contains a name is its closest one.
        zones.sort_by_key(|z| std::cmp::Reverse(z.origin.num_labels()));
        Zones {
            current: RwLock::new(Arc::new(ZoneSet { zones })),
            writer: Mutex::new(()),
            changed: watch::Sender::new(0),
        }
    }

    /// The zones as last published: a snapshot no write changes, so it may be held as long as an answer
    /// or a transfer takes (it keeps the memory of what a later write replaced until it is dropped).
    pub fn read(&self) -> Arc<ZoneSet> {
        self.current.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Woken after every write that changed a zone; the value counts writes.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// A copy of the zones for writing, published when the guard is dropped; one write at a time (a
    /// second waits for the first), queries meanwhile answered from the snapshot before it.
    pub(crate) fn write(&self) -> ZonesWrite<'_> {
        let turn = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let next = ZoneSet::clone(&self.read());
        ZonesWrite {
            zones: self,
            next,
            _turn: turn,
        }
    }

    /// Tells subscribers a write changed at least one zone.
    pub(crate) fn changed(&self) {
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Puts `set` at `name` without signing it: what a server whose data changed behind its signer, or a
    /// forger on the path, would serve under the old signature. For the tests that validators call it
    /// bogus; never used by the server.
    #[doc(hidden)]
    pub fn put_behind_signer(&self, name: &Name, set: RrSet) {
        let mut all = self.write();
        let Some(zone) = all.zone_for_mut(&LowerName::new(name)) else {
            return;
        };
        let signing = zone.signing.take();
        zone.put(name, set);
        zone.signing = signing;
    }
}

/// A write in progress: a copy of the zones, published whole when dropped.
#[derive(Debug)]
pub(crate) struct ZonesWrite<'a> {
    zones: &'a Zones,
    next: ZoneSet,
    _turn: MutexGuard<'a, ()>,
}

impl Deref for ZonesWrite<'_> {
    type Target = ZoneSet;

    fn deref(&self) -> &ZoneSet {
        &self.next
    }
}

impl DerefMut for ZonesWrite<'_> {
    fn deref_mut(&mut self) -> &mut ZoneSet {
        &mut self.next
    }
}

impl Drop for ZonesWrite<'_> {
    fn drop(&mut self) {
        let next = std::mem::replace(&mut self.next, ZoneSet { zones: Vec::new() });
        let replaced = {
            let mut current = self.zones.current.write().unwrap_or_else(|p| p.into_inner());
            std::mem::replace(&mut *current, Arc::new(next))
        };
        // Freed (when no query holds it any more) outside the pointer's lock.
        drop(replaced);
    }
}

/// The zones at one instant.
#[derive(Debug, Clone)]
pub struct ZoneSet {
    /// Deepest origin first.
    zones: Vec<Zone>,
}

impl ZoneSet {
    /// The closest zone containing `name` (on label boundaries), if any.
    pub fn zone_for(&self, name: &LowerName) -> Option<&Zone> {
        self.zones.iter().find(|z| z.origin.zone_of(name))
    }

    /// The position in [`ZoneSet::zones`] of the closest zone containing `name`, if any.
    pub fn position_for(&self, name: &LowerName) -> Option<usize> {
        self.zones.iter().position(|z| z.origin.zone_of(name))
    }

    /// Mutable [`ZoneSet::zone_for`].
    pub(crate) fn zone_for_mut(&mut self, name: &LowerName) -> Option<&mut Zone> {
        self.zones.iter_mut().find(|z| z.origin.zone_of(name))
    }

    /// The zone whose apex is exactly `origin`.
    pub fn zone(&self, origin: &LowerName) -> Option<&Zone> {
        self.zones.iter().find(|z| &z.origin == origin)
    }

    /// Every zone, deepest origin first.
    pub fn zones(&self) -> &[Zone] {
        &self.zones
    }

    pub(crate) fn zones_mut(&mut self) -> &mut [Zone] {
        &mut self.zones
    }
}

/// One zone: its nodes by owner name, its serial and journal. A copy shares all but its serial with the
/// original until either changes (see the module's documentation).
#[derive(Debug, Clone)]
pub struct Zone {
    config: Arc<ZoneConfig>,
    origin: LowerName,
    serial: u32,
    nodes: ShardedMap<LowerName, Node>,
    journal: Journal,
    /// Records served, SOA and configured ones included.
    records: usize,
    /// The signer and signatures of a signed zone (`--dns-server-dnssec-zone`), copied by the first
    /// write of a snapshot that signs.
    signing: Option<Arc<ZoneSigning>>,
}

/// The names and data at one owner name. A node with no record sets is an empty non-terminal: a name
/// that exists because names below it do (RFC 4592 §2.2.2), answered NODATA, never NXDOMAIN.
#[derive(Debug, Clone)]
pub struct Node {
    name: Name,
    rrsets: Vec<RrSet>,
    /// Nodes one label below this one.
    children: u32,
}

impl Node {
    /// The owner name, spelt as it was written.
    pub fn name(&self) -> &Name {
        &self.name
    }

    /// The record set of this type, if any.
    pub fn rrset(&self, record_type: RecordType) -> Option<&RrSet> {
        self.rrsets.iter().find(|r| r.record_type == record_type)
    }

    /// Every record set at this name.
    pub fn rrsets(&self) -> &[RrSet] {
        &self.rrsets
    }

    /// True when the name holds no data and exists only because names below it do.
    pub fn is_empty_non_terminal(&self) -> bool {
        self.rrsets.is_empty()
    }

    /// Whether names exist below this one.
    pub fn has_children(&self) -> bool {
        self.children > 0
    }
}

/// The records of one name and type: one TTL, the data in the order written.
#[derive(Debug, Clone)]
pub struct RrSet {
    /// The wire type.
    pub record_type: RecordType,
    /// The TTL every record of the set is served with.
    pub ttl: u32,
    /// The record data, one per record.
    pub data: Vec<RData>,
    /// Where the set comes from.
    pub origin: SetOrigin,
}

/// Who wrote a record set: the configuration (SOA, apex NS, glue: never changed by a sync) or the
/// controller (what [`Provider::records`](extdns_provider::Provider::records) reads back).
#[derive(Debug, Clone)]
pub enum SetOrigin {
    /// From the zone's configuration.
    Config,
    /// Written by the controller from an endpoint of this type, so the read gives back exactly what was
    /// applied.
    Managed {
        /// The endpoint's record type.
        record_type: EndpointType,
        /// The endpoint's targets when the record data does not spell them back alike (an IPv6 address in
        /// upper case, a TXT value in zone-file quotes); `None`, the usual case, reads them from the data,
        /// so most records are held once, not twice.
        spelt: Option<Targets>,
    },
}

impl RrSet {
    /// Whether the controller wrote this set.
    pub fn is_managed(&self) -> bool {
        matches!(self.origin, SetOrigin::Managed { .. })
    }

    /// The endpoint type and targets the controller wrote this set from; `None` for configured sets.
    pub fn endpoint_targets(&self) -> Option<(&EndpointType, Targets)> {
        let SetOrigin::Managed { record_type, spelt } = &self.origin else {
            return None;
        };
        let targets = match spelt {
            Some(t) => t.clone(),
            None => targets_of(&self.data),
        };
        Some((record_type, targets))
    }

    /// The set as records owned by `name`.
    pub fn records<'a>(&'a self, name: &'a Name) -> impl Iterator<Item = Record> + 'a {
        self.data
            .iter()
            .map(move |d| Record::from_rdata(name.clone(), self.ttl, d.clone()))
    }
}

/// The targets record data spells, as the codec reads a zone.
pub(crate) fn targets_of(data: &[RData]) -> Targets {
    Targets::new(
        data.iter()
            .filter_map(|d| extdns_dns_wire::codec::target(d).map(|(_, t)| t)),
    )
}

/// Why a change cannot be applied to a zone. The text is what the failure reports.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChangeError {
    /// A create of a name and type that holds data.
    #[error("the record already exists")]
    Exists,
    /// An update or delete of a name and type that holds none.
    #[error("the record does not exist")]
    Missing,
    /// SOA, apex NS or glue: the zone's configuration, not the controller's.
    #[error("the record is part of the zone's configuration (--dns-server-* flags) and is not changed by a sync")]
    Configured,
    /// A CNAME beside other data, or other data beside a CNAME (RFC 1034 §3.6.2), or a CNAME at the apex.
    #[error("a CNAME cannot share its name with other records or sit at the zone apex")]
    CnameConflict,
}

impl Zone {
    fn new(config: ZoneConfig, serial: u32, limits: Limits) -> Zone {
        let origin = LowerName::new(&config.origin);
        let mut zone = Zone {
            origin,
            serial,
            nodes: ShardedMap::new(),
            journal: Journal::new(limits.journal_changes),
            records: 0,
            signing: None,
            config: Arc::new(config),
        };
        let apex = zone.config.origin.clone();
        zone.signing = crate::dnssec::signing_of(&zone.config.origin, zone.config.dnssec.as_ref()).map(Arc::from);
        let soa = RrSet {
            record_type: RecordType::SOA,
            ttl: zone.config.ttl,
            data: vec![RData::SOA(zone.soa_data())],
            origin: SetOrigin::Config,
        };
        let ns = RrSet {
            record_type: RecordType::NS,
            ttl: zone.config.ttl,
            data: zone
                .config
                .name_servers
                .iter()
                .map(|n| RData::NS(NS(n.clone())))
                .collect(),
            origin: SetOrigin::Config,
        };
        zone.put(&apex, soa);
        zone.put(&apex, ns);
        for data in crate::dnssec::apex_data(&apex, zone.config.dnssec.as_ref()) {
            let set = RrSet {
                record_type: data.record_type(),
                ttl: zone.config.ttl,
                data: vec![data],
                origin: SetOrigin::Config,
            };
            zone.put(&apex, set);
        }
        let mut glue: HashMap<(Name, RecordType), Vec<RData>> = HashMap::new();
        for (name, ip) in zone.config.glue.clone() {
            if !zone.origin.zone_of(&LowerName::new(&name)) {
                continue;
            }
            let (rt, data) = match ip {
                std::net::IpAddr::V4(a) => (RecordType::A, RData::A(A(a))),
                std::net::IpAddr::V6(a) => (RecordType::AAAA, RData::AAAA(AAAA(a))),
            };
            glue.entry((name, rt)).or_default().push(data);
        }
        for ((name, record_type), data) in glue {
            let ttl = zone.config.ttl;
            zone.put(
                &name,
                RrSet {
                    record_type,
                    ttl,
                    data,
                    origin: SetOrigin::Config,
                },
            );
        }
        zone
    }

    /// The zone's apex.
    pub fn origin(&self) -> &Name {
        &self.config.origin
    }

    /// The zone's apex, lower-cased for comparisons.
    pub fn lower_origin(&self) -> &LowerName {
        &self.origin
    }

    /// The zone's configuration.
    pub fn config(&self) -> &ZoneConfig {
        &self.config
    }

    /// The current serial.
    pub fn serial(&self) -> u32 {
        self.serial
    }

    /// Records served, SOA, NS and glue included.
    pub fn record_count(&self) -> usize {
        self.records
    }

    /// The SOA record at the current serial.
    pub fn soa(&self) -> Record {
        Record::from_rdata(self.config.origin.clone(), self.config.ttl, RData::SOA(self.soa_data()))
    }

    /// The SOA record for negative answers: TTL the lesser of the SOA's TTL and its minimum (RFC 2308 §3).
    pub fn negative_soa(&self) -> Record {
        let ttl = self.config.ttl.min(self.config.minimum);
        Record::from_rdata(self.config.origin.clone(), ttl, RData::SOA(self.soa_data()))
    }

    fn soa_data(&self) -> SOA {
        // The timers are configured as u32 and checked by the binary to fit the signed fields.
        let signed = |v: u32| i32::try_from(v).unwrap_or(i32::MAX);
        SOA::new(
            self.config.mname.clone(),
            self.config.rname.clone(),
            self.serial,
            signed(self.config.refresh),
            signed(self.config.retry),
            signed(self.config.expire),
            self.config.minimum,
        )
    }

    /// The node at exactly this name.
    pub fn node(&self, name: &LowerName) -> Option<&Node> {
        self.nodes.get(name)
    }

    /// Every node, in no order.
    pub fn nodes(&self) -> impl Iterator<Item = &Node> {
        self.nodes.values()
    }

    /// Every record but the SOA, in no order (a transfer puts the SOA first and last itself).
    pub fn records_without_soa(&self) -> impl Iterator<Item = Record> + '_ {
        self.nodes.values().flat_map(|n| {
            n.rrsets
                .iter()
                .filter(|r| r.record_type != RecordType::SOA)
                .flat_map(move |r| r.records(&n.name))
        })
    }

    /// The journal of changes, for IXFR.
    pub fn journal(&self) -> &Journal {
        &self.journal
    }

    /// The signer and signatures, when the zone is signed.
    pub fn signing(&self) -> Option<&ZoneSigning> {
        self.signing.as_deref()
    }

    /// Signs `set` at `name` when the zone is signed (a delegation's NS set is the child's: unsigned).
    fn sign(&mut self, name: &Name, set: &RrSet) {
        let Some(signing) = self.signing.as_mut().map(Arc::make_mut) else {
            return;
        };
        if set.record_type == RecordType::NS && LowerName::new(name) != self.origin {
            return;
        }
        let now = crate::dnssec::now();
        if let Err(e) = signing.sign_set(name, set.ttl, &set.data, now) {
            tracing::warn!(zone = %self.config.origin, %name, record_type = ?set.record_type, error = %e, "cannot sign a record set");
        }
    }

    /// Signs the set (`name`, `record_type`) again at `now`; `false` when the set is gone.
    pub(crate) fn resign(
        &mut self,
        name: &LowerName,
        record_type: RecordType,
        now: u32,
    ) -> Result<bool, crate::dnssec::DnssecError> {
        let (Some(node), Some(signing)) = (self.nodes.get(name), self.signing.as_mut().map(Arc::make_mut)) else {
            return Ok(false);
        };
        let Some(set) = node.rrset(record_type) else {
            signing.forget(name, record_type);
            return Ok(false);
        };
        signing.sign_set(&node.name, set.ttl, &set.data, now)?;
        Ok(true)
    }

    /// Checks that a change of the set (`name`, `record_type`) may be made: `exists` says what the change
    /// expects (`Some(true)`: an update or delete, `Some(false)`: a create).
    pub(crate) fn check(&self, name: &LowerName, record_type: RecordType, create: bool) -> Result<(), ChangeError> {
        let node = self.nodes.get(name);
        let current = node.and_then(|n| n.rrset(record_type));
        if current.is_some_and(|s| !s.is_managed()) {
            return Err(ChangeError::Configured);
        }
        if name == &self.origin && matches!(record_type, RecordType::SOA | RecordType::NS) {
            return Err(ChangeError::Configured);
        }
        match (create, current.is_some()) {
            (true, true) => return Err(ChangeError::Exists),
            (false, false) => return Err(ChangeError::Missing),
            _ => {}
        }
        if create {
            if record_type == RecordType::CNAME && name == &self.origin {
                return Err(ChangeError::CnameConflict);
            }
            let others = node
                .map(|n| n.rrsets.iter().map(|r| r.record_type))
                .into_iter()
                .flatten();
            for other in others {
                if (record_type == RecordType::CNAME) != (other == RecordType::CNAME) {
                    return Err(ChangeError::CnameConflict);
                }
            }
        }
        Ok(())
    }

    /// Puts a record set in place of the one of its name and type (creating the node and the empty
    /// non-terminals above it); returns the set it replaced.
    ///
    /// The zone holds what it serves for as long as it serves it, so every vector is cut to its length
    /// here: a set's data collected through a `Result` comes with room for four (184 B each), and a
    /// node's list of sets grows by four; together that was half of the zone's memory.
    pub(crate) fn put(&mut self, name: &Name, mut set: RrSet) -> Option<RrSet> {
        set.data.shrink_to_fit();
        let key = LowerName::new(name);
        if !self.nodes.contains_key(&key) {
            self.add_node(name);
        }
        self.records += set.data.len();
        self.sign(name, &set);
        let node = self.nodes.get_mut(&key)?;
        let old = match node.rrsets.iter_mut().find(|r| r.record_type == set.record_type) {
            Some(slot) => Some(std::mem::replace(slot, set)),
            None => {
                node.rrsets.reserve_exact(1);
                node.rrsets.push(set);
                None
            }
        };
        if let Some(old) = &old {
            self.records -= old.data.len();
        }
        old
    }

    /// Removes the record set of this name and type (and the nodes left empty with nothing below them).
    pub(crate) fn remove(&mut self, name: &LowerName, record_type: RecordType) -> Option<RrSet> {
        let node = self.nodes.get_mut(name)?;
        let at = node.rrsets.iter().position(|r| r.record_type == record_type)?;
        let old = node.rrsets.remove(at);
        self.records -= old.data.len();
        if let Some(signing) = self.signing.as_mut().map(Arc::make_mut) {
            signing.forget(name, record_type);
        }
        self.prune(name.clone());
        Some(old)
    }

    /// Bumps the serial past the current one and at least to `now` (seconds since the epoch, as serial
    /// numbers in RFC 1982 arithmetic), and journals the change it names.
    pub(crate) fn commit(&mut self, now: u32, removed: Vec<Record>, added: Vec<Record>) {
        let from = self.serial;
        let next = from.wrapping_add(1);
        // `now` is ahead of `from` in serial arithmetic when the difference is below 2^31.
        let ahead = now.wrapping_sub(next) < (1 << 31);
        self.serial = if ahead { now } else { next };
        let soa = RData::SOA(self.soa_data());
        if let Some(set) = self
            .nodes
            .get_mut(&self.origin)
            .and_then(|n| n.rrsets.iter_mut().find(|r| r.record_type == RecordType::SOA))
        {
            set.data = vec![soa];
        }
        if let Some(set) = self
            .nodes
            .get(&self.origin)
            .and_then(|n| n.rrset(RecordType::SOA))
            .cloned()
        {
            let apex = self.config.origin.clone();
            self.sign(&apex, &set);
        }
        // A diff as large as half the zone is no cheaper to send than the zone itself (RFC 1995 lets a
        // server answer any IXFR with the whole zone), so the journal never holds more than that: a first
        // sync does not keep a second copy of every record.
        let max_records = (self.records / 2).max(MIN_JOURNAL_RECORDS);
        self.journal.push(
            Diff {
                from,
                to: self.serial,
                removed,
                added,
            },
            max_records,
        );
    }

    fn add_node(&mut self, name: &Name) {
        let key = LowerName::new(name);
        self.nodes.insert(
            key.clone(),
            Node {
                name: name.clone(),
                rrsets: Vec::new(),
                children: 0,
            },
        );
        if key == self.origin {
            return;
        }
        let parent = name.base_name();
        let parent_key = LowerName::new(&parent);
        if !self.nodes.contains_key(&parent_key) {
            self.add_node(&parent);
        }
        if let Some(p) = self.nodes.get_mut(&parent_key) {
            p.children += 1;
        }
    }

    fn prune(&mut self, mut key: LowerName) {
        while key != self.origin {
            let Some(node) = self.nodes.get(&key) else { return };
            if !node.rrsets.is_empty() || node.children > 0 {
                return;
            }
            self.nodes.remove(&key);
            key = key.base_name();
            if let Some(p) = self.nodes.get_mut(&key) {
                p.children = p.children.saturating_sub(1);
            }
        }
    }
}

/// One committed write: the serial before and after, and the records it removed and added (SOA excluded:
/// an IXFR answer frames each diff with the two SOAs itself).
#[derive(Debug, Clone)]
pub struct Diff {
    /// Serial before the write.
    pub from: u32,
    /// Serial after it.
    pub to: u32,
    /// Records removed.
    pub removed: Vec<Record>,
    /// Records added.
    pub added: Vec<Record>,
}

/// Records a journal may always hold, however small its zone.
const MIN_JOURNAL_RECORDS: usize = 1_024;

/// The last writes of a zone, oldest first, bounded in count and in records so a busy cluster cannot grow it.
/// Its diffs are shared by the snapshots that hold them.
#[derive(Debug, Clone)]
pub struct Journal {
    diffs: VecDeque<Arc<Diff>>,
    cap: usize,
    /// Records held by the diffs.
    records: usize,
}

impl Diff {
    fn len(&self) -> usize {
        self.removed.len() + self.added.len()
    }
}

impl Journal {
    fn new(cap: usize) -> Journal {
        Journal {
            diffs: VecDeque::new(),
            cap,
            records: 0,
        }
    }

    /// Appends `diff`, dropping the oldest diffs beyond the count cap or `max_records`. A diff larger
    /// than `max_records` empties the journal: the secondaries then take the whole zone.
    fn push(&mut self, diff: Diff, max_records: usize) {
        if self.cap == 0 || diff.len() > max_records {
            self.diffs.clear();
            self.records = 0;
            return;
        }
        self.records += diff.len();
        self.diffs.push_back(Arc::new(diff));
        while self.diffs.len() > self.cap || self.records > max_records {
            if let Some(old) = self.diffs.pop_front() {
                self.records -= old.len();
            }
        }
    }

    /// The diffs that take a secondary from `serial` to the current one, oldest first; `None` when the
    /// journal does not reach back to `serial` (the secondary then gets the whole zone).
    pub fn since(&self, serial: u32) -> Option<impl Iterator<Item = &Diff>> {
        let start = self.diffs.iter().position(|d| d.from == serial)?;
        Some(self.diffs.iter().skip(start).map(|d| &**d))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::str::FromStr;

    use super::*;

    pub(crate) fn zone_config(origin: &str) -> ZoneConfig {
        let name = |s: &str| Name::from_str(s).expect("test name");
        ZoneConfig::new(
            name(origin),
            name(&format!("ns1.{origin}")),
            Some("192.0.2.53".parse().expect("test address")),
        )
        .expect("test zone")
    }

    fn a(ip: &str) -> RrSet {
        RrSet {
            record_type: RecordType::A,
            ttl: 60,
            data: vec![RData::A(A(ip.parse().expect("test address")))],
            origin: SetOrigin::Managed {
                record_type: EndpointType::A,
                spelt: None,
            },
        }
    }

    fn lower(s: &str) -> LowerName {
        LowerName::new(&Name::from_str(s).expect("test name"))
    }

    /// The zone `example.org.` with an A record (192.0.2.1) at `name`.
    fn example_org_with_a(name: &str) -> Zones {
        let zones = Zones::new(&[zone_config("example.org.")], 1, Limits::default());
        if let Some(zone) = zones.write().zone_for_mut(&lower(name)) {
            zone.put(&Name::from_str(name).expect("test name"), a("192.0.2.1"));
        }
        zones
    }

    #[test]
    fn a_deep_name_makes_empty_non_terminals_that_go_when_it_goes() {
        let zones = example_org_with_a("a.b.c.example.org.");
        let mut set = zones.write();
        let zone = set.zone_for_mut(&lower("a.b.c.example.org.")).expect("zone");
        assert!(
            zone.node(&lower("b.c.example.org."))
                .expect("ent")
                .is_empty_non_terminal()
        );
        assert!(zone.node(&lower("c.example.org.")).expect("ent").has_children());
        zone.remove(&lower("a.b.c.example.org."), RecordType::A);
        assert!(zone.node(&lower("a.b.c.example.org.")).is_none());
        assert!(zone.node(&lower("c.example.org.")).is_none());
        assert!(zone.node(&lower("example.org.")).is_some(), "the apex stays");
    }

    #[test]
    fn the_closest_zone_wins_on_label_boundaries() {
        let zones = Zones::new(
            &[zone_config("example.org."), zone_config("sub.example.org.")],
            1,
            Limits::default(),
        );
        let set = zones.read();
        let origin = |n: &str| set.zone_for(&lower(n)).map(|z| z.origin().to_string());
        assert_eq!(origin("x.sub.example.org."), Some("sub.example.org.".into()));
        assert_eq!(origin("xsub.example.org."), Some("example.org.".into()));
        assert_eq!(origin("example.com."), None);
    }

    #[test]
    fn cname_never_shares_a_name_and_configured_sets_are_not_the_controllers() {
        let zones = example_org_with_a("web.example.org.");
        let mut set = zones.write();
        let zone = set.zone_for_mut(&lower("web.example.org.")).expect("zone");
        let web = lower("web.example.org.");
        assert_eq!(
            zone.check(&web, RecordType::CNAME, true),
            Err(ChangeError::CnameConflict)
        );
        assert_eq!(zone.check(&web, RecordType::A, true), Err(ChangeError::Exists));
        assert_eq!(zone.check(&web, RecordType::AAAA, false), Err(ChangeError::Missing));
        assert_eq!(zone.check(&web, RecordType::TXT, true), Ok(()));
        let apex = lower("example.org.");
        assert_eq!(zone.check(&apex, RecordType::NS, false), Err(ChangeError::Configured));
        assert_eq!(
            zone.check(&apex, RecordType::CNAME, true),
            Err(ChangeError::CnameConflict)
        );
        assert_eq!(
            zone.check(&lower("ns1.example.org."), RecordType::A, false),
            Err(ChangeError::Configured)
        );
    }

    #[test]
    fn serials_follow_the_clock_and_always_grow() {
        let zones = Zones::new(&[zone_config("example.org.")], 100, Limits::default());
        let mut set = zones.write();
        let zone = &mut set.zones_mut()[0];
        zone.commit(50, vec![], vec![]);
        assert_eq!(zone.serial(), 101, "a clock behind the serial still moves it on");
        zone.commit(500, vec![], vec![]);
        assert_eq!(zone.serial(), 500);
        assert_eq!(zone.journal().since(100).map(Iterator::count), Some(2));
        assert!(zone.journal().since(7).is_none());
    }

    #[test]
    fn a_diff_as_large_as_half_the_zone_is_not_journalled() {
        let zones = Zones::new(&[zone_config("example.org.")], 1, Limits::default());
        let mut set = zones.write();
        let zone = &mut set.zones_mut()[0];
        let record = |i: usize| {
            let name = Name::from_str(&format!("h{i}.example.org.")).expect("name");
            Record::from_rdata(name, 60, RData::A(A([192, 0, 2, 1].into())))
        };
        for i in 0..4_000 {
            zone.put(&record(i).name, a("192.0.2.1"));
        }
        zone.commit(0, vec![], (0..4_000).map(record).collect());
        assert!(
            zone.journal().since(1).is_none(),
            "the first sync's diff is the zone: not kept"
        );
        let serial = zone.serial();
        zone.commit(0, vec![record(1)], vec![record(1)]);
        assert_eq!(zone.journal().since(serial).map(Iterator::count), Some(1));
    }

    /// What the server answers for `name A` from the zones as published now.
    fn ask(zones: &Zones, name: &str) -> hickory_proto::op::ResponseCode {
        use hickory_proto::op::{Message, MessageType, OpCode, Query};
        let mut m = Message::new(1, MessageType::Query, OpCode::Query);
        m.add_query(Query::query(Name::from_str(name).expect("test name"), RecordType::A));
        crate::answer::respond(&zones.read(), &m, crate::metrics::Transport::Udp, 512).response_code
    }

    #[test]
    fn queries_are_answered_from_the_last_snapshot_while_a_large_write_is_in_progress() {
        use hickory_proto::op::ResponseCode;
        let zones = std::sync::Arc::new(Zones::new(&[zone_config("example.org.")], 1, Limits::default()));
        let mut write = zones.write();
        let zone = write.zone_for_mut(&lower("example.org.")).expect("zone");
        for i in 0..10_000 {
            zone.put(
                &Name::from_str(&format!("h{i}.example.org.")).expect("name"),
                a("192.0.2.1"),
            );
        }
        zone.commit(0, vec![], vec![]);
        // The write still holds its turn: a query on another thread must be answered meanwhile, from the
        // zone as it was. (With one lock for both, it would wait for the write, and the write for it.)
        let reader = {
            let zones = zones.clone();
            std::thread::spawn(move || ask(&zones, "h1.example.org."))
        };
        let (sender, answered) = std::sync::mpsc::channel();
        std::thread::spawn(move || sender.send(reader.join().ok()));
        let before = answered
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the query is answered before the write is published");
        assert_eq!(before, Some(ResponseCode::NXDomain), "the write is not seen half done");
        assert_eq!(zones.read().zones()[0].record_count(), 3, "SOA, NS and glue only");
        drop(write);
        assert_eq!(ask(&zones, "h1.example.org."), ResponseCode::NoError);
        assert_eq!(zones.read().zones()[0].record_count(), 10_003);
    }

    #[test]
    fn a_snapshot_keeps_its_content_and_shares_the_journal_with_the_next() {
        let zones = example_org_with_a("web.example.org.");
        let before = zones.read();
        {
            let mut write = zones.write();
            let zone = &mut write.zones_mut()[0];
            zone.remove(&lower("web.example.org."), RecordType::A);
            zone.commit(0, vec![], vec![]);
        }
        let after = zones.read();
        assert!(before.zones()[0].node(&lower("web.example.org.")).is_some());
        assert!(after.zones()[0].node(&lower("web.example.org.")).is_none());
        assert_eq!(after.zones()[0].serial(), before.zones()[0].serial() + 1);
        assert_eq!(after.zones()[0].journal().since(1).map(Iterator::count), Some(1));
        assert!(
            before.zones()[0].journal().since(1).is_none(),
            "the old snapshot's journal is its own"
        );
    }

    #[test]
    fn the_journal_keeps_only_its_last_changes() {
        let limits = Limits {
            journal_changes: 2,
            ..Limits::default()
        };
        let zones = Zones::new(&[zone_config("example.org.")], 1, limits);
        let mut set = zones.write();
        let zone = &mut set.zones_mut()[0];
        for _ in 0..5 {
            zone.commit(0, vec![], vec![]);
        }
        assert!(zone.journal().since(1).is_none());
        assert_eq!(zone.journal().since(4).map(Iterator::count), Some(2));
    }
}
