//! The served data: each zone's record sets by owner name, its serial, and the journal of changes IXFR
//! answers from.
//!
//! Queries never wait for a write: they read a snapshot ([`Zones::read`], an `Arc` taken under a lock held
//! only to copy the pointer), while a write ([`Zones::write`], one at a time) changes a copy of it and
//! publishes the copy whole when it is done, so a query sees a write whole or not at all, and a serial
//! always names exactly one zone content. The copy is cheap: the nodes are in shards shared between
//! snapshots ([`ShardedSet`]), so a write copies the shards it changes, about 1/1024 of the zone per name,
//! and the journal's diffs are shared too. Each write bumps the serial of the zones it touched once and
//! journals what it removed and added; [`Zones::subscribe`] wakes whoever sends NOTIFY.
//!
//! Serials are the same on every replica once a zone is still, so a secondary can follow any replica
//! (the Service). A write moves the serial on at once (to the clock's seconds, or one past the serial
//! if the clock is behind it: a *provisional* serial, which depends on how the writes were batched, so
//! another replica may give the same number to other records: it is not sent in NOTIFY, and an IXFR
//! from it is answered with the whole zone). Once the span of clock ([`Limits::serial_cell`], 10 s) in
//! which the content last changed is over, [`Zones::settle`] moves it on once more, to a serial that
//! depends on that span and the content only: `(span + 1) × cell + cell / 2 + digest mod cell / 2`
//! seconds, past every provisional serial of the span, in RFC 1982 arithmetic. The digest is a sum of a fixed-key SipHash of each record (owner, type,
//! TTL, data; not the SOA, not the signatures), kept up to date by each write, so two replicas holding
//! the same records have the same digest whatever order they were written in. Replicas whose last change
//! fell in different spans (a change applied across a span's turn) settle a span apart, until the next
//! change; a secondary still follows, since each replica's serials only grow.

use crate::serial::{after, at_or_after};
use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use extdns_endpoint::{RecordType as EndpointType, Targets};
use hickory_proto::rr::rdata::{A, AAAA, NS, SOA};
use hickory_proto::rr::{LowerName, Name, RData, Record, RecordType};
use tokio::sync::watch;

use crate::config::{Limits, ZoneConfig};
use crate::dnssec::ZoneSigning;
use crate::keyed_shards::{Keyed, ShardedSet};
use crate::name_key::{Labels, NameKey, WireName};
use crate::packed_records::PackedRecords;
use crate::set_data::SetData;

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

    /// Settles the serial of every zone whose last change's span is over at `now` (seconds since the
    /// epoch; [`Zone::settle`]), and tells subscribers when one moved; whether one did.
    pub fn settle(&self, now: u32) -> bool {
        let due = self
            .read()
            .zones()
            .iter()
            .any(|z| z.settles_at().is_some_and(|at| at_or_after(now, at)));
        if !due {
            return false;
        }
        let moved = self
            .write()
            .zones_mut()
            .iter_mut()
            .fold(false, |moved, z| z.settle(now) | moved);
        if moved {
            self.changed();
        }
        moved
    }

    /// The earliest time (seconds since the epoch) [`Zones::settle`] has work, if any.
    pub fn settles_at(&self) -> Option<u32> {
        self.read().zones().iter().filter_map(Zone::settles_at).min()
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

    /// Signs the set (`name`, `record_type`) again as if the clock read `now`: with a `now` long past, a
    /// signature that has expired, which a server that stopped renewing would serve. For the tests that
    /// validators call it bogus; never used by the server.
    #[doc(hidden)]
    pub fn sign_again_at(&self, name: &Name, record_type: RecordType, now: u32) {
        let mut all = self.write();
        let owner = LowerName::new(name);
        if let Some(zone) = all.zone_for_mut(&owner)
            && let Err(e) = zone.resign(&owner, record_type, now)
        {
            tracing::warn!(%name, error = %e, "cannot sign the set again");
        }
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
        for zone in &mut self.next.zones {
            zone.sign_chain();
            zone.publish();
        }
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

    /// [`ZoneSet::zone_for`] for a name held as a query's name is.
    pub(crate) fn zone_holding(&self, name: &NameKey) -> Option<&Zone> {
        self.zones.iter().find(|z| name.is_within(&z.origin))
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
    nodes: ShardedSet<Node>,
    journal: Journal,
    /// Records served, SOA and configured ones included.
    records: usize,
    /// The signer and signatures of a signed zone (`--dns-server-dnssec-zone`), copied by the first
    /// write of a snapshot that signs.
    signing: Option<Arc<ZoneSigning>>,
    /// How the serial settles: the content's digest and the span of its last change.
    settling: Settling,
    /// A signed zone's signing as last published, with the serial it was published under: the state
    /// the next diff starts from, which a signed IXFR compares the current one with. `None` beside the
    /// serial when signatures changed under it (a rekey's batch, a renewal pass that moved no serial):
    /// a secondary holding that serial may hold either signing, so no diff can start from it.
    published: Option<(u32, Option<Arc<ZoneSigning>>)>,
    /// Sets re-signed since the serial last moved (renewal, rekey batches): the next diff's weight in
    /// the journal, which pins the signing state they replaced.
    resigned: usize,
}

/// The names and data at one owner name. A node with no record sets is an empty non-terminal: a name
/// that exists because names below it do (RFC 4592 §2.2.2), answered NODATA, never NXDOMAIN.
///
/// The owner name is held once, lower-cased in wire form, as the key the zone finds the node by
/// ([`WireName`]: inside the node for most names); the spelling it was written in is kept beside it only
/// when that differs (a name with capitals). The key is 40 bytes where hickory's name was 80, and the
/// node's one set is kept inside it ([`Sets`]): a node is 104 bytes, with no list beside it, for every
/// name a zone serves.
#[derive(Debug, Clone)]
pub struct Node {
    key: WireName,
    /// The owner name as written, when it is not the key's spelling.
    spelt: Option<Box<Name>>,
    rrsets: Sets,
    /// Nodes one label below this one.
    children: u32,
}

impl Keyed for Node {
    type Key = WireName;

    fn key(&self) -> &WireName {
        &self.key
    }
}

impl Node {
    /// An empty node at `name`.
    fn new(name: &Name) -> Node {
        let key = WireName::of(name);
        let spelt_alike = name.is_fqdn() && name.iter().flatten().all(|b| !b.is_ascii_uppercase());
        Node {
            key,
            spelt: (!spelt_alike).then(|| Box::new(name.clone())),
            rrsets: Sets::default(),
            children: 0,
        }
    }

    /// The owner name, spelt as it was written: made from the key for a name written in lower case
    /// (no heap for a name of up to 32 letters, as hickory keeps those inline).
    pub fn name(&self) -> Cow<'_, Name> {
        match &self.spelt {
            Some(name) => Cow::Borrowed(name),
            None => Cow::Owned(self.key.to_name()),
        }
    }

    /// The owner name lower-cased.
    pub fn lower_name(&self) -> LowerName {
        self.key.to_lower_name()
    }

    /// The owner name as the zone keeps it, and the signatures of its sets are keyed.
    pub(crate) fn wire_name(&self) -> &WireName {
        &self.key
    }

    /// The record set of this type, if any.
    pub fn rrset(&self, record_type: RecordType) -> Option<&RrSet> {
        self.rrsets().iter().find(|r| r.record_type == record_type)
    }

    /// Every record set at this name.
    pub fn rrsets(&self) -> &[RrSet] {
        self.rrsets.as_slice()
    }

    /// True when the name holds no data and exists only because names below it do.
    pub fn is_empty_non_terminal(&self) -> bool {
        self.rrsets().is_empty()
    }

    /// Whether names exist below this one.
    pub fn has_children(&self) -> bool {
        self.children > 0
    }
}

/// A node's record sets. Most names hold one: it is kept inside the node, which saves the allocation of
/// a list (48 bytes) and, for an answer, the load of a second cache line after the node's own (issue 49:
/// memory per record and the tail). Two or more are a list cut to its length; none (an empty
/// non-terminal) is an empty list, which allocates nothing.
#[derive(Debug, Clone)]
enum Sets {
    One(RrSet),
    Many(Vec<RrSet>),
}

impl Default for Sets {
    fn default() -> Self {
        Sets::Many(Vec::new())
    }
}

impl Sets {
    fn as_slice(&self) -> &[RrSet] {
        match self {
            Sets::One(set) => std::slice::from_ref(set),
            Sets::Many(sets) => sets,
        }
    }

    fn as_mut_slice(&mut self) -> &mut [RrSet] {
        match self {
            Sets::One(set) => std::slice::from_mut(set),
            Sets::Many(sets) => sets,
        }
    }

    fn push(&mut self, set: RrSet) {
        match std::mem::take(self) {
            Sets::Many(sets) if sets.is_empty() => *self = Sets::One(set),
            Sets::One(first) => *self = Sets::Many(vec![first, set]),
            Sets::Many(mut sets) => {
                sets.reserve_exact(1);
                sets.push(set);
                *self = Sets::Many(sets);
            }
        }
    }

    /// Takes out the set at `at` (a position in [`Sets::as_slice`]), if there is one.
    fn remove(&mut self, at: usize) -> Option<RrSet> {
        let (taken, left) = match std::mem::take(self) {
            Sets::One(set) if at == 0 => (Some(set), Sets::default()),
            Sets::Many(mut sets) if at < sets.len() => {
                let taken = sets.remove(at);
                let left = match <[RrSet; 1]>::try_from(sets) {
                    Ok([one]) => Sets::One(one),
                    Err(mut sets) => {
                        sets.shrink_to_fit();
                        Sets::Many(sets)
                    }
                };
                (Some(taken), left)
            }
            unchanged => (None, unchanged),
        };
        *self = left;
        taken
    }
}

/// The records of one name and type: one TTL, the data in the order written.
#[derive(Debug, Clone)]
pub struct RrSet {
    /// The wire type.
    pub record_type: RecordType,
    /// The TTL every record of the set is served with.
    pub ttl: u32,
    /// The record data, one per record (addresses held as their bytes: [`SetData`]).
    pub data: SetData,
    /// Where the set comes from.
    pub origin: SetOrigin,
}

/// Who wrote a record set: the configuration (SOA, apex NS, glue: never changed by a sync) or the
/// controller (what [`Provider::records`](extdns_provider::Provider::records) reads back).
#[derive(Debug, Clone)]
pub enum SetOrigin {
    /// From the zone's configuration.
    Config,
    /// Written by the controller from an endpoint, so the read gives back exactly what was applied.
    Managed {
        /// The endpoint as written when the set does not spell it back alike ([`Spelt`]); `None`, the
        /// usual case, reads the endpoint's type and targets from the set's own, so most records are held
        /// once, not twice. Boxed: the rare case costs a pointer in every set (the set is 48 bytes, where
        /// the type and a vector of targets inline made it 64), and every node holds its sets for as long
        /// as it serves them.
        spelt: Option<Box<Spelt>>,
    },
}

/// An endpoint the record set does not spell back alike: its targets differ from the data's text (an
/// IPv6 address in upper case, a TXT value in zone-file quotes) or its type is not named as the wire
/// type is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spelt {
    /// The endpoint's record type.
    pub record_type: EndpointType,
    /// The endpoint's targets.
    pub targets: Targets,
}

impl SetOrigin {
    /// The origin of a set written from an endpoint of `record_type` and `targets` as `data` of
    /// `wire_type`: the endpoint kept only when the set alone would read back otherwise.
    pub(crate) fn managed(
        record_type: &EndpointType,
        targets: &Targets,
        wire_type: RecordType,
        data: &SetData,
    ) -> SetOrigin {
        let alike = endpoint_type(wire_type) == *record_type && targets_of(data) == *targets;
        SetOrigin::Managed {
            spelt: (!alike).then(|| {
                Box::new(Spelt {
                    record_type: record_type.clone(),
                    targets: targets.clone(),
                })
            }),
        }
    }
}

/// The endpoint type named as `wire_type` is (hickory's static name: nothing allocated per set).
fn endpoint_type(wire_type: RecordType) -> EndpointType {
    EndpointType::from(<&'static str>::from(wire_type))
}

impl RrSet {
    /// Whether the controller wrote this set.
    pub fn is_managed(&self) -> bool {
        matches!(self.origin, SetOrigin::Managed { .. })
    }

    /// The endpoint type and targets the controller wrote this set from; `None` for configured sets.
    pub fn endpoint_targets(&self) -> Option<(EndpointType, Targets)> {
        let SetOrigin::Managed { spelt } = &self.origin else {
            return None;
        };
        Some(match spelt {
            Some(s) => (s.record_type.clone(), s.targets.clone()),
            None => (endpoint_type(self.record_type), targets_of(&self.data)),
        })
    }

    /// The set as records owned by `name`.
    pub fn records(&self, name: Name) -> impl Iterator<Item = Record> + '_ {
        self.data
            .iter()
            .map(move |d| Record::from_rdata(name.clone(), self.ttl, d.into_owned()))
    }
}

/// The targets record data spells, as the codec reads a zone.
pub(crate) fn targets_of(data: &SetData) -> Targets {
    Targets::new(
        data.iter()
            .filter_map(|d| extdns_dns_wire::codec::target(&d).map(|(_, t)| t)),
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
            nodes: ShardedSet::new(),
            journal: Journal::new(limits.journal_changes),
            records: 0,
            signing: None,
            settling: Settling::new(limits.serial_cell),
            published: None,
            resigned: 0,
            config: Arc::new(config),
        };
        let apex = zone.config.origin.clone();
        zone.signing = crate::dnssec::signing_of(&zone.config.origin, zone.config.dnssec.as_ref()).map(Arc::from);
        let soa = RrSet {
            record_type: RecordType::SOA,
            ttl: zone.config.ttl,
            data: vec![RData::SOA(zone.soa_data())].into(),
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
                .collect::<Vec<_>>()
                .into(),
            origin: SetOrigin::Config,
        };
        zone.put(&apex, soa);
        zone.put(&apex, ns);
        for set in zone.key_sets() {
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
                    data: data.into(),
                    origin: SetOrigin::Config,
                },
            );
        }
        zone.sign_chain();
        zone.publish();
        zone
    }

    /// Notes the signing state as it is published now, under the current serial. A serial already
    /// published with other signatures loses its starting point for good: a secondary may have taken
    /// it before the change or after, so an IXFR from it is answered whole rather than leave the
    /// secondary the signatures it holds but the diff does not remove.
    fn publish(&mut self) {
        let Some(signing) = &self.signing else {
            self.published = None;
            return;
        };
        let same_serial = self
            .published
            .as_ref()
            .and_then(|(serial, old)| (*serial == self.serial).then_some(old));
        self.published = match same_serial {
            // Re-published unchanged: the starting point stays.
            Some(Some(old)) if Arc::ptr_eq(old, signing) => return,
            // Changed (or changed before) under the same serial: no starting point.
            Some(_) => Some((self.serial, None)),
            None => Some((self.serial, Some(signing.clone()))),
        };
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
        Record::from_rdata(
            self.config.origin.clone(),
            self.negative_ttl(),
            RData::SOA(self.soa_data()),
        )
    }

    /// The TTL of negative answers: the lesser of the SOA's TTL and its minimum (RFC 2308 §3), also an
    /// NSEC's (RFC 9077).
    pub fn negative_ttl(&self) -> u32 {
        self.config.ttl.min(self.config.minimum)
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
        self.nodes.get(&WireName::of(name))
    }

    /// [`Zone::node`] for a name held as a query's name is ([`Labels`]).
    pub(crate) fn node_at(&self, name: Labels<'_>) -> Option<&Node> {
        self.nodes.find(&name)
    }

    /// Every node, in no order.
    pub fn nodes(&self) -> impl Iterator<Item = &Node> {
        self.nodes.values()
    }

    /// Every record but the SOA, in no order (a transfer puts the SOA first and last itself).
    pub fn records_without_soa(&self) -> impl Iterator<Item = Record> + '_ {
        self.nodes.values().flat_map(|n| {
            n.rrsets()
                .iter()
                .filter(|r| r.record_type != RecordType::SOA)
                .flat_map(move |r| r.records(n.name().into_owned()))
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

    /// The DNSKEY, CDS and CDNSKEY sets of the zone's keys (none when unsigned), served with its TTL.
    fn key_sets(&self) -> Vec<RrSet> {
        let keys = self.config.dnssec.as_ref().map(crate::dnssec::DnssecConfig::keys);
        crate::dnssec::apex_data(&self.config.origin, keys.as_ref())
            .into_iter()
            .map(|(record_type, data)| RrSet {
                record_type,
                ttl: self.config.ttl,
                data: data.into(),
                origin: SetOrigin::Config,
            })
            .collect()
    }

    /// Signs with `keys` from now on (a rollover's step): the key sets are published anew and signed, and
    /// the change committed at `now` (a new serial, journaled, so secondaries follow); the other sets
    /// keep their signatures until the renewal re-signs them. Nothing happens to an unsigned zone.
    pub(crate) fn set_keys(
        &mut self,
        keys: &crate::dnssec::ZoneKeys,
        now: u32,
    ) -> Result<(), crate::dnssec::DnssecError> {
        let (Some(signing), Some(dnssec)) = (
            self.signing.as_mut().map(Arc::make_mut),
            Arc::make_mut(&mut self.config).dnssec.as_mut(),
        ) else {
            return Ok(());
        };
        signing.set_keys(keys)?;
        dnssec.key = keys.signer.clone();
        dnssec.standby = keys.standby.clone();
        let apex = self.config.origin.clone();
        let mut removed = Vec::new();
        for record_type in [RecordType::DNSKEY, RecordType::CDS, RecordType::CDNSKEY] {
            if let Some(old) = self.remove(&self.origin.clone(), record_type) {
                removed.extend(old.records(apex.clone()));
            }
        }
        let mut added = Vec::new();
        for set in self.key_sets() {
            added.extend(set.records(apex.clone()));
            self.put(&apex, set);
        }
        self.commit(now, removed, added);
        Ok(())
    }

    /// Signs `set` at `name` when the zone is signed (a delegation's NS set is the child's: unsigned).
    fn sign(&mut self, name: &Name, set: &RrSet) {
        self.sign_at(name, set, crate::dnssec::now());
    }

    /// [`Zone::sign`] as if the clock read `now`: a new serial's SOA is signed at the time its commit,
    /// settling or renewal was given.
    fn sign_at(&mut self, name: &Name, set: &RrSet, now: u32) {
        let Some(signing) = self.signing.as_mut().map(Arc::make_mut) else {
            return;
        };
        if set.record_type == RecordType::NS && LowerName::new(name) != self.origin {
            return;
        }
        if let Err(e) = signing.sign_set(name, set.ttl, &set.data.to_vec(), now) {
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
        if record_type == RecordType::NSEC {
            let resigned = match self.signing.as_mut().map(Arc::make_mut) {
                Some(signing) => signing.resign_link(name, now)?,
                None => false,
            };
            self.resigned += usize::from(resigned);
            return Ok(resigned);
        }
        let (Some(node), Some(signing)) = (
            self.nodes.get(&WireName::of(name)),
            self.signing.as_mut().map(Arc::make_mut),
        ) else {
            return Ok(false);
        };
        let Some(set) = node.rrset(record_type) else {
            signing.forget(name, record_type);
            return Ok(false);
        };
        signing.sign_set(&node.name(), set.ttl, &set.data.to_vec(), now)?;
        self.resigned += 1;
        Ok(true)
    }

    /// Checks that a change of the set (`name`, `record_type`) may be made: `exists` says what the change
    /// expects (`Some(true)`: an update or delete, `Some(false)`: a create).
    pub(crate) fn check(&self, name: &LowerName, record_type: RecordType, create: bool) -> Result<(), ChangeError> {
        let node = self.nodes.get(&WireName::of(name));
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
                .map(|n| n.rrsets().iter().map(|r| r.record_type))
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
    /// The zone holds what it serves for as long as it serves it, so a node's sets take no spare room
    /// ([`Sets`]: its list grew by four), as a set's data is by [`SetData`] (a vector collected through a
    /// `Result` came with room for four 184-byte `RData`s); together that was half of the zone's memory.
    pub(crate) fn put(&mut self, name: &Name, set: RrSet) -> Option<RrSet> {
        let key = WireName::of(name);
        if !self.nodes.contains_key(&key) {
            self.add_node(name);
        }
        self.records += set.data.len();
        self.settling.add(name, &set);
        self.sign(name, &set);
        let node = self.nodes.get_mut(&key)?;
        let old = match node
            .rrsets
            .as_mut_slice()
            .iter_mut()
            .find(|r| r.record_type == set.record_type)
        {
            Some(slot) => Some(std::mem::replace(slot, set)),
            None => {
                node.rrsets.push(set);
                None
            }
        };
        if let Some(old) = &old {
            self.records -= old.data.len();
            self.settling.subtract(name, old);
        }
        self.relink(&LowerName::new(name));
        old
    }

    /// Re-links a signed zone's NSEC chain around `name`, whose sets just changed; signed by
    /// [`Zone::sign_chain`] before the write is published.
    fn relink(&mut self, name: &LowerName) {
        if let Some(signing) = self.signing.as_mut().map(Arc::make_mut) {
            signing.relink(&ChainView(&self.nodes), name);
        }
    }

    /// Signs the NSECs of a signed zone's chain that this write changed.
    fn sign_chain(&mut self) {
        let ttl = self.negative_ttl();
        // A zone this write did not touch keeps sharing its signing state with the published snapshot.
        if !self.signing.as_ref().is_some_and(|s| s.has_stale()) {
            return;
        }
        let Some(signing) = self.signing.as_mut().map(Arc::make_mut) else {
            return;
        };
        if let Err(e) = signing.sign_chain(&ChainView(&self.nodes), ttl, crate::dnssec::now()) {
            tracing::warn!(zone = %self.config.origin, error = %e, "cannot sign the NSEC chain");
        }
    }

    /// Removes the record set of this name and type (and the nodes left empty with nothing below them).
    pub(crate) fn remove(&mut self, name: &LowerName, record_type: RecordType) -> Option<RrSet> {
        let key = WireName::of(name);
        let node = self.nodes.get_mut(&key)?;
        let at = node.rrsets().iter().position(|r| r.record_type == record_type)?;
        let old = node.rrsets.remove(at)?;
        self.records -= old.data.len();
        let owner = node.name().into_owned();
        self.settling.subtract(&owner, &old);
        if let Some(signing) = self.signing.as_mut().map(Arc::make_mut) {
            signing.forget(name, record_type);
        }
        self.prune(name.clone());
        self.relink(name);
        Some(old)
    }

    /// Bumps the serial past the current one and at least to `now` (seconds since the epoch, as serial
    /// numbers in RFC 1982 arithmetic), and journals the change it names.
    /// The serial is provisional until [`Zone::settle`].
    pub(crate) fn commit(&mut self, now: u32, removed: Vec<Record>, added: Vec<Record>) {
        let next = self.serial.wrapping_add(1);
        let serial = if at_or_after(now, next) { now } else { next };
        let from_shared = self.settling.shared;
        self.settling.changed(now);
        self.advance(serial, removed, added, from_shared, now);
    }

    /// Whether the current serial names the same content on every replica (settled, or settling is off):
    /// only such a serial is sent in NOTIFY, and only from such a serial is IXFR answered with diffs.
    pub fn serial_is_shared(&self) -> bool {
        self.settling.shared
    }

    /// Whether serials settle (replicas share them); `false` for one replica, whose every serial is final.
    pub fn serials_settle(&self) -> bool {
        self.settling.cell.is_some()
    }

    /// When [`Zone::settle`] has work, in seconds since the epoch: the end of the span of the last
    /// unsettled change.
    pub fn settles_at(&self) -> Option<u32> {
        self.settling.due()
    }

    /// Moves a provisional serial to the settled one once the span of the last change is over at `now`;
    /// whether it moved. A settled serial already behind the provisional one (more writes in one span
    /// than half a span has seconds) is passed by one instead, and logged: that replica then differs
    /// until the next change.
    pub(crate) fn settle(&mut self, now: u32) -> bool {
        let Some(settled) = self.settling.settle(now) else {
            return false;
        };
        let serial = if after(settled, self.serial) {
            settled
        } else {
            tracing::warn!(zone = %self.config.origin, serial = self.serial, settled, "the settled serial is behind the provisional one; this replica's serial differs from the others' until the zone next changes");
            self.serial.wrapping_add(1)
        };
        // From a provisional serial, which only this replica gives this content.
        self.advance(serial, Vec::new(), Vec::new(), false, now);
        true
    }

    /// Enters the renewal round at `round` ([`ZoneSigning::round`]) once the sets due in it are re-signed
    /// (at `now`): the serial moves on, so the secondaries are told and transfer the renewed signatures,
    /// before theirs expire. With settling on, it moves to the serial every replica holding the same
    /// records gives that round (whether or not it had signatures of its own to renew: a set written
    /// across an instant may be due on one replica only), or stays when a change settled after the round
    /// already passed it (alike on every replica; the signatures go with the next serial), or is left to
    /// the change settling now. Whether the serial moved; nothing happens to an unsigned zone.
    pub(crate) fn renewed(&mut self, round: u32, now: u32) -> bool {
        // Two passes may list the same round (the renewal task's and a settling's, see notify.rs): the
        // second finds it entered, and moves nothing.
        if !self.signing.as_ref().is_some_and(|s| s.is_new_round(round)) {
            return false;
        }
        let Some(signing) = self.signing.as_mut().map(Arc::make_mut) else {
            return false;
        };
        signing.enter_round(round);
        match self.settling.renewal(round) {
            RoundSerial::Next => {
                self.commit(now, Vec::new(), Vec::new());
                true
            }
            RoundSerial::Settling => false,
            // Entered within the round's own span: a change may still come in it, and a replica that
            // takes that change before entering the round settles on the serial of the content the
            // span ends with. So this one waits for the span's end too (a provisional serial now,
            // settled as for a change in that span), rather than take the round's serial at once and
            // pass the change's settled serial by one, a serial no other replica gives that content.
            RoundSerial::Shared(serial)
                if after(serial, self.serial) && self.settling.cell.is_some_and(|cell| now / cell == round / cell) =>
            {
                self.commit(now, Vec::new(), Vec::new());
                true
            }
            RoundSerial::Shared(serial) if after(serial, self.serial) => {
                let from_shared = self.settling.shared;
                self.settling.shared = true;
                self.advance(serial, Vec::new(), Vec::new(), from_shared, now);
                true
            }
            RoundSerial::Shared(_) => false,
        }
    }

    /// Sets the serial to `serial`, re-signs the SOA at `now`, and journals the change it names.
    fn advance(&mut self, serial: u32, removed: Vec<Record>, added: Vec<Record>, from_shared: bool, now: u32) {
        let from = self.serial;
        self.serial = serial;
        let soa = RData::SOA(self.soa_data());
        let apex_key = WireName::of(&self.origin);
        if let Some(set) = self.nodes.get_mut(&apex_key).and_then(|n| {
            n.rrsets
                .as_mut_slice()
                .iter_mut()
                .find(|r| r.record_type == RecordType::SOA)
        }) {
            set.data = vec![soa].into();
        }
        if let Some(set) = self
            .nodes
            .get(&apex_key)
            .and_then(|n| n.rrset(RecordType::SOA))
            .cloned()
        {
            let apex = self.config.origin.clone();
            self.sign_at(&apex, &set, now);
        }
        // A diff as large as half the zone is no cheaper to send than the zone itself (RFC 1995 lets a
        // server answer any IXFR with the whole zone), so the journal never holds more than that: a first
        // sync does not keep a second copy of every record.
        let max_records = (self.records / 2).max(MIN_JOURNAL_RECORDS);
        let signed_from = self
            .published
            .as_ref()
            .filter(|(serial, _)| *serial == from)
            .and_then(|(_, signing)| signing.clone());
        let resigned = std::mem::take(&mut self.resigned);
        // A diff the journal would drop is not packed: a first sync's is the whole zone.
        if !self.journal.takes(removed.len() + added.len() + resigned, max_records) {
            self.journal.clear();
            return;
        }
        match (PackedRecords::pack(&removed), PackedRecords::pack(&added)) {
            (Ok(removed), Ok(added)) => self.journal.push(
                Diff {
                    from,
                    to: self.serial,
                    removed,
                    added,
                    from_shared,
                    signed_from,
                    resigned,
                },
                max_records,
            ),
            (Err(e), _) | (_, Err(e)) => {
                // Records the zone holds always encode; should one not, a secondary takes the whole zone.
                tracing::warn!(zone = %self.config.origin, error = %e, "cannot journal a write");
                self.journal.clear();
            }
        }
    }

    fn add_node(&mut self, name: &Name) {
        self.nodes.insert(Node::new(name));
        if LowerName::new(name) == self.origin {
            return;
        }
        let parent = name.base_name();
        let parent_key = WireName::of(&parent);
        if !self.nodes.contains_key(&parent_key) {
            self.add_node(&parent);
        }
        if let Some(p) = self.nodes.get_mut(&parent_key) {
            p.children += 1;
        }
    }

    fn prune(&mut self, mut key: LowerName) {
        while key != self.origin {
            let wire = WireName::of(&key);
            let Some(node) = self.nodes.get(&wire) else { return };
            if !node.is_empty_non_terminal() || node.children > 0 {
                return;
            }
            self.nodes.remove(&wire);
            key = key.base_name();
            if let Some(p) = self.nodes.get_mut(&WireName::of(&key)) {
                p.children = p.children.saturating_sub(1);
            }
        }
    }
}

/// The zone's nodes as the NSEC chain reads them.
struct ChainView<'a>(&'a ShardedSet<Node>);

impl crate::dnssec::ZoneNames for ChainView<'_> {
    fn types(&self, name: &LowerName) -> Vec<RecordType> {
        self.0
            .get(&WireName::of(name))
            .map(|n| n.rrsets().iter().map(|s| s.record_type).collect())
            .unwrap_or_default()
    }

    fn has(&self, name: &LowerName, record_type: RecordType) -> bool {
        self.0
            .get(&WireName::of(name))
            .is_some_and(|n| n.rrset(record_type).is_some())
    }

    fn below(&self, name: &LowerName) -> Vec<LowerName> {
        // Only when a delegation goes: a walk of the zone, as rare as that.
        self.0
            .values()
            .filter(|node| !node.is_empty_non_terminal())
            .map(Node::lower_name)
            .filter(|key| key != name && name.zone_of(key))
            .collect()
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
    /// Records removed, in their wire form until an IXFR reads them.
    pub removed: PackedRecords,
    /// Records added, likewise.
    pub added: PackedRecords,
    /// Whether `from` names the same content on every replica; an IXFR is answered with diffs only from
    /// such a serial (a secondary may hold another replica's provisional serial of the same number).
    pub from_shared: bool,
    /// A signed zone's signatures and NSEC chain as published at `from`: a signed IXFR sends what
    /// changed between them and the current ones beside the data's diffs. It shares every shard the
    /// writes since did not change, so it holds what they replaced.
    pub signed_from: Option<Arc<ZoneSigning>>,
    /// Sets re-signed under `from` or by this change: records in all but name, as the signing state
    /// `signed_from` pins holds what they replaced, so the journal's bound counts them.
    pub resigned: usize,
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
    /// The diff's weight in the journal: its records and the sets it re-signed.
    fn len(&self) -> usize {
        self.removed.len() + self.added.len() + self.resigned
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
        if !self.takes(diff.len(), max_records) {
            self.clear();
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

    /// Whether a diff of `weight` (its [`Diff::len`]) may be kept under `max_records`.
    fn takes(&self, weight: usize, max_records: usize) -> bool {
        self.cap != 0 && weight <= max_records
    }

    /// Drops every diff: the secondaries take the whole zone.
    fn clear(&mut self) {
        self.diffs.clear();
        self.records = 0;
    }

    /// The diffs that take a secondary from `serial` to the current one, oldest first; `None` when the
    /// journal does not reach back to `serial` (the secondary then gets the whole zone).
    pub fn since(&self, serial: u32) -> Option<impl Iterator<Item = &Diff>> {
        let start = self.diffs.iter().position(|d| d.from == serial && d.from_shared)?;
        Some(self.diffs.iter().skip(start).map(|d| &**d))
    }
}

/// The key of the content digest: fixed, so every replica (every process, every version) digests the
/// same records alike. Not a secret: the digest only numbers serials.
const DIGEST_KEY: (u64, u64) = (0x6578_7464_6e73_2d73, 0x6572_6961_6c2d_7631);

/// What a zone's serial settles on: the digest of its content and the span of its last change.
#[derive(Debug, Clone)]
struct Settling {
    /// Seconds a span lasts (at least 2); `None`: serials do not settle.
    cell: Option<u32>,
    /// The sum of every record's hash (but the SOA's), wrapping: the same records give the same digest
    /// in whatever order they were written.
    digest: u64,
    /// The span (seconds since the epoch / `cell`) of the last change not settled yet.
    unsettled: Option<u32>,
    /// Whether the current serial means the same content on every replica: settled, or settling off
    /// (one replica).
    shared: bool,
}

/// The serial a renewal round of a signed zone moves to ([`Settling::renewal`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RoundSerial {
    /// Serials do not settle (one replica): the next one, as for any write.
    Next,
    /// A change is settling: its settled serial, coming within a span, carries the renewed signatures.
    Settling,
    /// The serial every replica holding the same records gives this round.
    Shared(u32),
}

impl Settling {
    /// Settling in spans of `cell` (`None`: off).
    fn new(cell: Option<std::time::Duration>) -> Settling {
        let cell = cell.map(|c| u32::try_from(c.as_secs()).unwrap_or(u32::MAX).max(2));
        Settling {
            cell,
            digest: 0,
            unsettled: None,
            shared: cell.is_none(),
        }
    }

    fn add(&mut self, owner: &Name, set: &RrSet) {
        self.digest = self.digest.wrapping_add(set_digest(owner, set));
    }

    fn subtract(&mut self, owner: &Name, set: &RrSet) {
        self.digest = self.digest.wrapping_sub(set_digest(owner, set));
    }

    /// Notes a change of the content at `now`: the serial it gets is provisional.
    fn changed(&mut self, now: u32) {
        if let Some(cell) = self.cell {
            self.unsettled = Some(now / cell);
            self.shared = false;
        }
    }

    /// The end of the span of the last unsettled change.
    fn due(&self) -> Option<u32> {
        let cell = self.cell?;
        self.unsettled.map(|span| span.saturating_add(1).saturating_mul(cell))
    }

    /// The settled serial, once the span of the last change is over at `now`.
    fn settle(&mut self, now: u32) -> Option<u32> {
        let cell = self.cell?;
        let span = self.unsettled?;
        if now / cell <= span {
            return None;
        }
        self.unsettled = None;
        self.shared = true;
        Some(self.settled_after(span, cell))
    }

    /// The serial of a signed zone entering the renewal round at `round` (seconds since the epoch, an
    /// instant every replica holding the same records shares): settled as if the content had changed in
    /// the round's span, so it depends on the round and the content only.
    fn renewal(&self, round: u32) -> RoundSerial {
        let Some(cell) = self.cell else {
            return RoundSerial::Next;
        };
        if self.unsettled.is_some() {
            return RoundSerial::Settling;
        }
        RoundSerial::Shared(self.settled_after(round / cell, cell))
    }

    /// The serial settled for a change in `span`: the second half of the next span, at an offset the
    /// digest picks, so two contents settled in one span differ.
    fn settled_after(&self, span: u32, cell: u32) -> u32 {
        let half = cell / 2;
        let offset = u32::try_from(self.digest % u64::from(half)).unwrap_or(0);
        span.wrapping_add(1)
            .wrapping_mul(cell)
            .wrapping_add(half)
            .wrapping_add(offset)
    }
}

/// The digest of one record set at `owner`: the sum of its records' hashes; 0 for the SOA, whose serial
/// is not content.
fn set_digest(owner: &Name, set: &RrSet) -> u64 {
    use std::hash::Hasher;

    use hickory_proto::serialize::binary::{BinEncodable, BinEncoder};

    if set.record_type == RecordType::SOA {
        return 0;
    }
    let owner = owner.to_lowercase().to_ascii();
    let mut wire = Vec::new();
    set.data.iter().fold(0u64, |sum, data| {
        wire.clear();
        // A record that cannot be encoded is not served either; its type and owner still count.
        let _ = data.emit(&mut BinEncoder::new(&mut wire));
        let mut hasher = siphasher::sip::SipHasher24::new_with_keys(DIGEST_KEY.0, DIGEST_KEY.1);
        hasher.write(owner.as_bytes());
        hasher.write_u16(u16::from(set.record_type));
        hasher.write_u32(set.ttl);
        hasher.write(&wire);
        sum.wrapping_add(hasher.finish())
    })
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
            data: vec![RData::A(A(ip.parse().expect("test address")))].into(),
            origin: SetOrigin::Managed { spelt: None },
        }
    }

    fn lower(s: &str) -> LowerName {
        LowerName::new(&Name::from_str(s).expect("test name"))
    }

    /// A node's sets: one inside the node, more in a list cut to its length, none allocating nothing; each
    /// step of a name gaining and losing sets keeps them in the order written.
    #[test]
    fn a_node_keeps_one_set_inside_itself_and_more_in_a_list() {
        let with_ttl = |ttl| RrSet { ttl, ..a("192.0.2.1") };
        let ttls = |sets: &Sets| sets.as_slice().iter().map(|s| s.ttl).collect::<Vec<_>>();
        let mut sets = Sets::default();
        assert!(matches!(&sets, Sets::Many(v) if v.capacity() == 0));
        sets.push(with_ttl(1));
        assert!(matches!(sets, Sets::One(_)));
        sets.push(with_ttl(2));
        sets.push(with_ttl(3));
        assert!(matches!(&sets, Sets::Many(v) if v.capacity() == 3));
        assert_eq!(ttls(&sets), [1, 2, 3]);
        assert!(sets.remove(3).is_none());
        assert_eq!(sets.remove(0).map(|s| s.ttl), Some(1));
        assert!(matches!(&sets, Sets::Many(v) if v.capacity() == 2));
        assert_eq!(sets.remove(0).map(|s| s.ttl), Some(2));
        assert!(matches!(sets, Sets::One(_)), "back inside the node");
        assert_eq!(ttls(&sets), [3]);
        assert!(sets.remove(1).is_none());
        assert_eq!(sets.remove(0).map(|s| s.ttl), Some(3));
        assert!(sets.as_slice().is_empty());
        assert!(sets.remove(0).is_none());
        assert!(size_of::<Node>() <= 104, "a node is {} bytes", size_of::<Node>());
    }

    /// A set reads back the endpoint it was written from: from its own type and data when they spell it
    /// alike (nothing kept beside them), from what was kept when its targets or its type's name differ.
    #[test]
    fn a_set_keeps_its_endpoint_only_where_it_does_not_spell_it_back() {
        let read_back = |record_type: &EndpointType, targets: &[&str]| {
            let set = a("192.0.2.1");
            let targets = Targets::new(targets.iter().copied());
            let set = RrSet {
                origin: SetOrigin::managed(record_type, &targets, set.record_type, &set.data),
                ..set
            };
            let SetOrigin::Managed { spelt } = &set.origin else {
                panic!("a managed set");
            };
            (
                spelt.is_some(),
                set.endpoint_targets().expect("a managed set's endpoint"),
                targets,
            )
        };
        let (kept, (record_type, read), written) = read_back(&EndpointType::A, &["192.0.2.1"]);
        assert!(!kept, "an endpoint the set spells alike is not kept beside it");
        assert_eq!((record_type, read), (EndpointType::A, written));
        // Targets in another spelling than the data's text.
        let (kept, (record_type, read), written) = read_back(&EndpointType::A, &["192.0.2.001"]);
        assert!(kept);
        assert_eq!((record_type, read), (EndpointType::A, written));
        // A type not named as the wire type is.
        let other = EndpointType::from("a");
        assert_ne!(other, EndpointType::A, "the test needs a type named otherwise");
        let (kept, (record_type, read), written) = read_back(&other, &["192.0.2.1"]);
        assert!(kept);
        assert_eq!((record_type, read), (other, written));
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
    fn a_node_keeps_the_spelling_it_was_written_in_and_only_when_it_differs() {
        let zones = Zones::new(&[zone_config("example.org.")], 1, Limits::default());
        let mut set = zones.write();
        let zone = set.zone_for_mut(&lower("example.org.")).expect("zone");
        let spelt = Name::from_ascii("Web.Sub.example.org.").expect("name");
        zone.put(&spelt, a("192.0.2.1"));
        zone.put(&Name::from_str("plain.example.org.").expect("name"), a("192.0.2.2"));
        let node = zone
            .node(&lower("web.sub.example.org."))
            .expect("found by its lower-cased name");
        assert_eq!(node.lower_name(), lower("web.sub.example.org."));
        assert_eq!(node.key.wire(), b"\x03web\x03sub\x07example\x03org\x00");
        assert_eq!(node.name().to_ascii(), "Web.Sub.example.org.", "served as written");
        assert!(node.spelt.is_some());
        let parent = zone
            .node(&lower("sub.example.org."))
            .expect("the empty non-terminal above");
        assert_eq!(parent.name().to_ascii(), "Sub.example.org.");
        let plain = zone.node(&lower("plain.example.org.")).expect("node");
        assert_eq!(plain.name().to_ascii(), "plain.example.org.");
        assert!(plain.spelt.is_none(), "a lower-case name is held once, as the key");
        let records: Vec<String> = zone.records_without_soa().map(|r| r.name.to_ascii()).collect();
        assert!(records.contains(&"Web.Sub.example.org.".to_string()), "{records:?}");
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

    /// One replica's limits: serials do not settle, every serial is final.
    fn one_replica() -> Limits {
        Limits {
            serial_cell: None,
            ..Limits::default()
        }
    }

    #[test]
    fn serials_follow_the_clock_and_always_grow() {
        let zones = Zones::new(&[zone_config("example.org.")], 100, one_replica());
        let mut set = zones.write();
        let zone = &mut set.zones_mut()[0];
        zone.commit(50, vec![], vec![]);
        assert_eq!(zone.serial(), 101, "a clock behind the serial still moves it on");
        zone.commit(500, vec![], vec![]);
        assert_eq!(zone.serial(), 500);
        assert_eq!(zone.journal().since(100).map(Iterator::count), Some(2));
        assert!(zone.journal().since(7).is_none());
    }

    /// The serial of the one zone of `zones`.
    fn serial_of(zones: &Zones) -> u32 {
        zones.read().zones()[0].serial()
    }

    #[test]
    fn the_same_records_settle_on_the_same_serial_however_they_were_batched() {
        // A span's start: 1,800,000,000 is a multiple of 60.
        let t0: u32 = 1_800_000_000;
        let limits = Limits {
            serial_cell: Some(std::time::Duration::from_secs(60)),
            ..Limits::default()
        };
        let replica = |start| Zones::new(&[zone_config("example.org.")], start, limits);
        let (one, two) = (replica(t0 - 500), replica(t0 - 7));
        let write = |zones: &Zones, now: u32, names: &[&str], gone: &[&str]| {
            let mut set = zones.write();
            let zone = &mut set.zones_mut()[0];
            for n in names {
                zone.put(&Name::from_str(n).expect("name"), a(&format!("192.0.2.{}", n.len())));
            }
            for n in gone {
                zone.remove(&lower(n), RecordType::A);
            }
            zone.commit(now, vec![], vec![]);
        };
        // Replica one: three writes, one undone; replica two: one write of the same end state, another order.
        write(&one, t0 + 1, &["x.example.org.", "Web.example.org."], &[]);
        write(&one, t0 + 2, &["tmp.example.org."], &[]);
        write(&one, t0 + 3, &["deep.x.example.org."], &["tmp.example.org."]);
        write(
            &two,
            t0 + 40,
            &["deep.x.example.org.", "web.example.org.", "x.example.org."],
            &[],
        );
        let provisional = (serial_of(&one), serial_of(&two));
        assert_eq!(provisional, (t0 + 3, t0 + 40), "provisional: the clock at each write");
        assert!(!one.settle(t0 + 59), "the span of the last change is not over");
        assert_eq!(one.settles_at(), Some(t0 + 60));
        assert!(one.settle(t0 + 61));
        assert!(two.settle(t0 + 95));
        let settled = serial_of(&one);
        assert_eq!(settled, serial_of(&two), "the same records, the same serial");
        assert!(
            (t0 + 90..t0 + 120).contains(&settled),
            "{settled}: the next span's second half"
        );
        assert!(after(settled, provisional.1));
        assert!(!one.settle(t0 + 200), "settled once");
        // A provisional serial means this replica's content only: an IXFR from it is answered whole.
        // From the settled one, which means the same on every replica, it is answered with diffs.
        assert!(one.read().zones()[0].journal().since(t0 + 3).is_none());
        assert!(one.read().zones()[0].serial_is_shared());
        // Other records settle elsewhere; a later write is ahead of the settled serial at once.
        write(&two, t0 + 100, &["other.example.org."], &[]);
        assert!(after(serial_of(&two), settled));
        assert!(!two.read().zones()[0].serial_is_shared(), "provisional");
        assert_eq!(
            two.read().zones()[0].journal().since(settled).map(Iterator::count),
            Some(1)
        );
        assert!(two.settle(t0 + 120));
        assert_ne!(serial_of(&two) - 60, settled, "another content, another offset");
    }

    #[test]
    fn a_diff_as_large_as_half_the_zone_is_not_journalled() {
        let zones = Zones::new(&[zone_config("example.org.")], 1, one_replica());
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
        // Under half the zone, but more bytes than one DNS message holds: journalled all the same.
        let serial = zone.serial();
        let moved: Vec<Record> = (0..980)
            .map(|i| {
                let text = hickory_proto::rr::rdata::TXT::new(vec![format!(
                    "{i}: a text that makes the diff pass a message's 64 KiB"
                )]);
                Record::from_rdata(record(i).name, 60, RData::TXT(text))
            })
            .collect();
        zone.commit(0, moved.clone(), moved.clone());
        let diffs: Vec<&Diff> = zone.journal().since(serial).expect("journalled").collect();
        assert_eq!(diffs.len(), 1);
        assert_eq!(diffs[0].added.unpack().expect("reads back"), moved);
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
        // One replica: its serials are settled at once, so the journal answers from them.
        let zones = Zones::new(&[zone_config("example.org.")], 1, one_replica());
        zones.write().zones_mut()[0].put(&Name::from_str("web.example.org.").expect("test name"), a("192.0.2.1"));
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
    fn re_signed_sets_weigh_in_the_journals_bound() {
        let diff = |from: u32| Diff {
            from,
            to: from + 1,
            removed: PackedRecords::default(),
            added: PackedRecords::default(),
            from_shared: true,
            signed_from: None,
            resigned: 600,
        };
        let mut journal = Journal::new(100);
        journal.push(diff(1), 1_000);
        journal.push(diff(2), 1_000);
        // Two renewal passes of 600 sets each pin more signatures than 1,000 records: the older goes.
        assert!(journal.since(1).is_none(), "the first renewal is evicted");
        assert_eq!(journal.since(2).map(Iterator::count), Some(1));
        journal.push(diff(3), 500);
        assert!(
            journal.since(3).is_none(),
            "a renewal larger than the bound empties the journal"
        );
    }

    #[test]
    fn the_journal_keeps_only_its_last_changes() {
        let limits = Limits {
            journal_changes: 2,
            ..one_replica()
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
