//! The one store of cluster objects, whoever fills it: the live watchers ([`crate::LiveCluster`]) or the
//! manifest loader ([`crate::manifests`]), and tests through the `add_*` builders.
//!
//! Every kind is held by the same generic [`Index`]: objects by namespace (empty for cluster-scoped kinds)
//! and name, plus an optional secondary key within the namespace (EndpointSlices by Service). Ordered maps
//! throughout, so every list a lookup returns is sorted by namespace, then name, however and in whatever
//! order the objects arrived; sources that keep the first of two equal endpoints therefore decide the same
//! way on every run and on both paths.

use std::any::Any;
use std::borrow::Borrow;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use kube::core::ApiResource;

use crate::StrMap;
use crate::availability::Unavailable;
use crate::index::{Ref, Refs};
use crate::intern::Interner;
use crate::item::{Item, UidSlot};
use crate::kinds::{self, KINDS, KindVisitor};
use crate::watched::Watched;
use crate::{ResourceKind, Sym, Uid};

pub use extdns_object::ObjectKey;

/// The objects sources read, indexed the way they look them up, one index per kind of the table
/// ([`crate::kinds`]). Lists are sorted by namespace and name.
///
/// Lookups take `&self` and hand out shared handles, never copies of the objects. The live cluster updates
/// the store in place while sources read it (each kind has its own lock, held only for the lookup); a
/// store filled once (manifests, tests) is built through [`add`](ClusterStore::add). The typed lookups
/// sources use sit beside their views ([`crate::view`]).
pub struct ClusterStore {
    /// Shared with the stores a manifest file is read into before its objects move here
    /// ([`ClusterStore::sharing_interner`]), so their strings are shared with this store's.
    interner: Arc<Interner>,
    /// In table order.
    indexes: Vec<Box<dyn AnyIndex>>,
    /// The kinds the API server does not let extdns list ([`crate::availability`]); their indexes hold
    /// nothing or what was listed before they became unavailable, and sources needing them hold their
    /// records instead of publishing from them.
    unavailable: RwLock<BTreeMap<ResourceKind, Unavailable>>,
    /// The API resource each kind is watched at, as discovery chose it (live views only).
    watched_at: RwLock<BTreeMap<ResourceKind, ApiResource>>,
}

impl fmt::Debug for ClusterStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClusterStore").finish_non_exhaustive()
    }
}

impl Default for ClusterStore {
    fn default() -> Self {
        ClusterStore {
            interner: Arc::default(),
            indexes: KINDS.iter().map(|s| kinds::dispatch(s.kind, NewIndex)).collect(),
            unavailable: RwLock::default(),
            watched_at: RwLock::default(),
        }
    }
}

/// An empty index for the views of a kind's API type.
struct NewIndex;

impl KindVisitor for NewIndex {
    type Output = Box<dyn AnyIndex>;
    fn visit<K: Watched>(self) -> Box<dyn AnyIndex> {
        Box::new(Index::<K::View>::new(K::KIND))
    }
}

/// Adds each view as [`ClusterStore::add`] does.
impl<V: Item> Extend<V> for ClusterStore {
    fn extend<I: IntoIterator<Item = V>>(&mut self, views: I) {
        for v in views {
            self.add(v);
        }
    }
}

impl ClusterStore {
    /// An empty store; every kind reads unsynced until its first list.
    pub fn new() -> Self {
        Self::default()
    }

    /// The index of `kind`, if its views are `V`.
    pub(crate) fn index<V: Item>(&self, kind: ResourceKind) -> Option<&Index<V>> {
        self.indexes.get(kind.slot())?.as_any().downcast_ref()
    }

    /// The index of `kind`, whatever its views.
    pub(crate) fn any_index(&self, kind: ResourceKind) -> Option<&dyn AnyIndex> {
        self.indexes.get(kind.slot()).map(|i| &**i)
    }

    fn index_mut<V: Item>(&mut self, kind: ResourceKind) -> Option<&mut Index<V>> {
        self.indexes.get_mut(kind.slot())?.as_any_mut().downcast_mut()
    }

    /// Every object of `kind` with views `V`, sorted by namespace and name (the lookup the sources of one
    /// pattern share, `extdns_source::own_hosts::OwnKind`, whatever their kind).
    pub fn all<V: Item>(&self, kind: ResourceKind) -> Vec<Arc<V>> {
        self.index(kind).map(Index::all).unwrap_or_default()
    }

    /// The object `key` names, if it is stored and its views are `V`.
    pub fn get<V: Item>(&self, key: &ObjectKey) -> Option<Arc<V>> {
        self.index::<V>(key.kind)?.get(&key.namespace, &key.name)
    }

    /// The uid of the object `key` names, as it was when the watcher last stored it: what an Event or a
    /// status names the object by, with no read from the API server. `None` when the object is not stored
    /// (gone, or undecodable), is of a kind whose views keep no metadata, or has no canonical uid.
    pub fn uid(&self, key: &ObjectKey) -> Option<Uid> {
        self.any_index(key.kind)?.uid_of(&key.namespace, &key.name)
    }

    /// The objects that exist but could not be decoded, sorted by kind, namespace and name. None of them is
    /// in the lists above.
    pub fn undecodable(&self) -> Vec<ObjectKey> {
        let mut out = Vec::new();
        for index in &self.indexes {
            index.undecodable_into(&mut out);
        }
        out.sort();
        out
    }

    /// Whether the object `key` names exists but could not be decoded.
    pub fn is_undecodable(&self, key: &ObjectKey) -> bool {
        self.indexes
            .get(key.kind.slot())
            .is_some_and(|i| i.is_undecodable(&key.namespace, &key.name))
    }

    /// Why `kind` cannot be listed, if it cannot: its index is then not the cluster's objects of that kind.
    pub fn unavailable(&self, kind: ResourceKind) -> Option<Unavailable> {
        self.unavailable
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&kind)
            .cloned()
    }

    /// Every kind that cannot be listed, and why.
    pub fn unavailable_kinds(&self) -> BTreeMap<ResourceKind, Unavailable> {
        self.unavailable.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Records that `kind` cannot be listed (`Some`) or can again (`None`); returns what was recorded
    /// before.
    pub fn set_unavailable(&self, kind: ResourceKind, why: Option<Unavailable>) -> Option<Unavailable> {
        let mut map = self.unavailable.write().unwrap_or_else(|e| e.into_inner());
        match why {
            Some(why) => map.insert(kind, why),
            None => map.remove(&kind),
        }
    }

    /// The API resource `kind` is watched at: the version discovery chose, and for a configured kind
    /// ([`crate::KindOverrides`]) the plural the server serves it at. `None` for a kind not watched (yet),
    /// and in views not backed by the API server. What writes back to the objects (DNSEndpoint status)
    /// addresses them here.
    pub fn watched_at(&self, kind: ResourceKind) -> Option<ApiResource> {
        self.watched_at
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&kind)
            .cloned()
    }

    pub(crate) fn set_watched_at(&self, kind: ResourceKind, resource: ApiResource) {
        self.watched_at
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(kind, resource);
    }

    /// The shared strings of stored objects, for memory accounting.
    pub fn interner(&self) -> &Interner {
        &self.interner
    }

    // ------------------------------------------------------------------------- moving objects between stores

    /// An empty store whose strings are shared through this store's interner: one manifest file is read
    /// into it, then its objects move here ([`absorb`](Self::absorb)) without being interned again.
    pub(crate) fn sharing_interner(&self) -> ClusterStore {
        ClusterStore {
            interner: Arc::clone(&self.interner),
            ..ClusterStore::default()
        }
    }

    /// Every object the store knows, stored or recorded undecodable, sorted.
    pub(crate) fn keys(&self) -> Vec<ObjectKey> {
        let mut out = Vec::new();
        for index in &self.indexes {
            index.keys_into(&mut out);
        }
        out.sort();
        out.dedup();
        out
    }

    /// Whether the object `key` names is stored or recorded undecodable.
    pub(crate) fn knows(&self, key: &ObjectKey) -> bool {
        self.indexes
            .get(key.kind.slot())
            .is_some_and(|i| i.knows(&key.namespace, &key.name))
    }

    /// Forgets the object `key` names, stored or recorded undecodable; false when it was neither.
    pub(crate) fn forget(&self, key: &ObjectKey) -> bool {
        self.indexes
            .get(key.kind.slot())
            .is_some_and(|i| i.forget(&key.namespace, &key.name))
    }

    /// Moves every object of `other` here, in place while readers hold this store: each replaces the object
    /// of its kind and name (a view an undecodable record, and the other way round), as a later file's
    /// object replaces an earlier one's. The views move as they are (shared, not copied).
    pub(crate) fn absorb(&self, mut other: ClusterStore) {
        for (into, from) in self.indexes.iter().zip(other.indexes.iter_mut()) {
            from.move_into(&**into);
        }
    }

    // ----------------------------------------------------------------------------------------- builders

    /// Adds a view (a later object with the same kind, namespace and name replaces an earlier one), its
    /// strings shared through the store's interner as the ingest path shares them.
    pub fn add<V: Item>(&mut self, v: V) -> &mut Self {
        let kind = v.kind();
        self.add_as(kind, v)
    }

    pub(crate) fn add_as<V: Item>(&mut self, kind: ResourceKind, v: V) -> &mut Self {
        self.add_with_uid(kind, v, None)
    }

    /// Adds a view of `kind` with the uid of its object (the manifest loader's path; tests).
    pub fn add_with_uid<V: Item>(&mut self, kind: ResourceKind, mut v: V, uid: Option<Uid>) -> &mut Self {
        v.intern(&self.interner);
        let ns = self.interner.intern(v.namespace());
        if let Some(index) = self.index_mut::<V>(kind) {
            index.insert_mut(ns, v, uid);
        }
        self
    }

    /// Records an object that exists but could not be decoded; an object of that kind and name added
    /// earlier is dropped (a later one replaces the record again).
    pub fn add_undecodable(&mut self, kind: ResourceKind, namespace: &str, name: &str) -> &mut Self {
        let ns = self.interner.intern(namespace);
        if let Some(index) = self.indexes.get_mut(kind.slot()) {
            index.mark_mut(ns, name);
        }
        self
    }
}

/// A stored object ordered and found by its name: the set holds the `Arc` (and the uid, for the kinds that
/// keep one: [`UidSlot`]), so names are not stored twice (Pods are by far the most numerous objects; see
/// docs/performance.md).
struct ByName<V: Item>(Arc<V>, V::Uid);

impl<V: Item> Borrow<str> for ByName<V> {
    fn borrow(&self) -> &str {
        self.0.name()
    }
}
impl<V: Item> PartialEq for ByName<V> {
    fn eq(&self, other: &Self) -> bool {
        self.0.name() == other.0.name()
    }
}
impl<V: Item> Eq for ByName<V> {}
impl<V: Item> PartialOrd for ByName<V> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<V: Item> Ord for ByName<V> {
    // Must agree with `str`'s order, which `Borrow<str>` lookups rely on.
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.name().cmp(other.0.name())
    }
}

/// One entry of a list in progress: the shared view and its uid, or the name of an object that could not be
/// decoded.
pub type Listed<V> = (Sym, Result<(Arc<V>, Option<Uid>), Box<str>>);

/// The objects of one kind, by namespace and name.
pub struct Index<V: Item> {
    kind: ResourceKind,
    state: RwLock<IndexState<V>>,
}

struct IndexState<V: Item> {
    by_ns: BTreeMap<Sym, BTreeSet<ByName<V>>>,
    /// namespace → group (e.g. Service name) → objects, sorted by name.
    groups: BTreeMap<Sym, BTreeMap<Box<str>, Vec<Arc<V>>>>,
    /// Objects that exist but could not be decoded: namespace, name.
    undecodable: BTreeSet<(Sym, Box<str>)>,
    /// What the objects refer to → the objects.
    refs: Refs,
    /// Entries of a (re-)list in progress; they replace the index when it completes.
    relist: Option<Vec<Listed<V>>>,
}

impl<V: Item> fmt::Debug for Index<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Index")
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

impl<V: Item> Index<V> {
    pub(crate) fn new(kind: ResourceKind) -> Self {
        Index {
            kind,
            state: RwLock::new(IndexState {
                by_ns: BTreeMap::new(),
                groups: BTreeMap::new(),
                undecodable: BTreeSet::new(),
                refs: Refs::default(),
                relist: None,
            }),
        }
    }

    // A poisoned lock means a panic elsewhere mid-update; every update leaves the maps consistent before
    // anything that could panic, so reading on is safe and better than taking the controller down.
    fn read(&self) -> RwLockReadGuard<'_, IndexState<V>> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, IndexState<V>> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    fn state_mut(&mut self) -> &mut IndexState<V> {
        self.state.get_mut().unwrap_or_else(|e| e.into_inner())
    }

    fn insert_mut(&mut self, ns: Sym, v: V, uid: Option<Uid>) {
        self.state_mut().upsert(ns, v, uid);
    }

    /// Inserts or replaces, keeping `uid` beside the view (for the kinds that keep one); false when the
    /// view and uid are unchanged (a status heartbeat or a field no source reads), or when only the status
    /// extdns writes itself changed ([`Item::differs_only_in_own_status`]: stored, but no change), so such
    /// updates wake nobody.
    pub(crate) fn upsert(&self, ns: Sym, v: V, uid: Option<Uid>) -> bool {
        self.write().upsert(ns, v, uid)
    }

    /// Records the object as undecodable, dropping its earlier view; false when it was already recorded.
    pub(crate) fn mark_undecodable(&self, ns: Sym, name: &str) -> bool {
        self.write().mark_undecodable(ns, name)
    }

    /// Forgets the object, whether stored or recorded undecodable; false when it was neither.
    pub(crate) fn remove(&self, ns: &str, name: &str) -> bool {
        let mut st = self.write();
        let recorded = !st.undecodable.is_empty() && st.undecodable.remove(&(Sym::new(ns), Box::from(name)));
        st.remove(ns, name).is_some() || recorded
    }

    /// Starts a list that will replace the index; until [`finish_relist`](Self::finish_relist) the old
    /// content keeps serving lookups.
    pub(crate) fn begin_relist(&self) {
        self.write().relist = Some(Vec::new());
    }

    pub(crate) fn relist_add(&self, ns: Sym, entry: Result<(V, Option<Uid>), Box<str>>) {
        let mut st = self.write();
        match st.relist.as_mut() {
            // Shared at once: the buffer holds a pointer per object, not the view (a list of 10,000
            // Services held 2.5 MB more at its end, moved again when it completed), and completing the list
            // moves the pointers into the index without copying a view.
            Some(buf) => buf.push((ns, entry.map(|(v, uid)| (Arc::new(v), uid)))),
            None => {
                // A list item with no list started: apply it as a plain update.
                match entry {
                    Ok((v, uid)) => st.upsert(ns, v, uid),
                    Err(name) => st.mark_undecodable(ns, &name),
                };
            }
        }
    }

    /// Forgets every stored object `keep` rejects (given its namespace); returns how many went. Objects of a
    /// list in progress are not looked at.
    pub(crate) fn retain(&self, keep: impl Fn(&str, &V) -> bool) -> usize {
        let mut st = self.write();
        let gone: Vec<(Sym, Box<str>)> = st
            .by_ns
            .iter()
            .flat_map(|(ns, set)| set.iter().map(move |o| (ns, &o.0)))
            .filter(|(ns, v)| !keep(ns, v))
            .map(|(ns, v)| (ns.clone(), Box::from(v.name())))
            .collect();
        for (ns, name) in &gone {
            st.remove(ns, name);
        }
        gone.len()
    }

    /// A list that will replace the index is in progress.
    pub(crate) fn is_relisting(&self) -> bool {
        self.read().relist.is_some()
    }

    pub(crate) fn finish_relist(&self) {
        let mut st = self.write();
        let Some(buf) = st.relist.take() else { return };
        st.by_ns.clear();
        st.groups.clear();
        st.refs.clear();
        st.undecodable.clear();
        for (ns, entry) in buf {
            match entry {
                Ok((v, uid)) => st.put(ns, v, V::Uid::keep(uid)),
                Err(name) => {
                    st.mark_undecodable(ns, &name);
                }
            }
        }
    }

    /// The group (the Service of an EndpointSlice) the stored object is in, if any.
    pub(crate) fn group_of(&self, ns: &str, name: &str) -> Option<Box<str>> {
        self.get(ns, name).and_then(|v| v.group().map(Box::from))
    }

    /// What the stored object announces when it changes ([`Item::announces`]); nothing when it is not stored.
    pub(crate) fn announced_of(&self, ns: &str, name: &str) -> Vec<Ref> {
        self.get(ns, name).map(|v| v.announces()).unwrap_or_default()
    }

    pub(crate) fn get(&self, ns: &str, name: &str) -> Option<Arc<V>> {
        self.read().by_ns.get(ns)?.get(name).map(|b| Arc::clone(&b.0))
    }

    pub(crate) fn in_namespace(&self, ns: &str) -> Vec<Arc<V>> {
        self.read()
            .by_ns
            .get(ns)
            .map(|s| s.iter().map(|b| Arc::clone(&b.0)).collect())
            .unwrap_or_default()
    }

    /// Every object, sorted by namespace and name.
    pub(crate) fn all(&self) -> Vec<Arc<V>> {
        let st = self.read();
        let mut out = Vec::with_capacity(st.by_ns.values().map(BTreeSet::len).sum());
        out.extend(st.by_ns.values().flatten().map(|b| Arc::clone(&b.0)));
        out
    }

    pub(crate) fn group(&self, ns: &str, group: &str) -> Vec<Arc<V>> {
        self.read()
            .groups
            .get(ns)
            .and_then(|g| g.get(group))
            .cloned()
            .unwrap_or_default()
    }

    /// The objects that refer to `r`, sorted by namespace and name.
    pub(crate) fn referring(&self, r: &Ref) -> Vec<Arc<V>> {
        let st = self.read();
        st.refs
            .get(r)
            .filter_map(|(ns, name)| st.by_ns.get(ns)?.get(name).map(|b| Arc::clone(&b.0)))
            .collect()
    }

    pub(crate) fn len(&self) -> usize {
        self.read().by_ns.values().map(BTreeSet::len).sum()
    }

    #[cfg(test)]
    pub(crate) fn namespace_count(&self) -> usize {
        self.read().by_ns.len()
    }
}

/// An index whatever its views: what the store does with every kind alike.
pub(crate) trait AnyIndex: Send + Sync {
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
    fn mark_mut(&mut self, ns: Sym, name: &str);
    fn undecodable_into(&self, out: &mut Vec<ObjectKey>);
    fn is_undecodable(&self, ns: &str, name: &str) -> bool;
    /// A list that will replace the index is in progress.
    fn is_relisting(&self) -> bool;
    /// Forgets every stored object with labels that `keep` rejects (given its namespace); returns how many
    /// went.
    fn retain_labelled(&self, keep: &dyn Fn(&str, &StrMap) -> bool) -> usize;
    /// The selector of the stored object `ns/name` ([`Item::selects`]); `None` when it is not stored.
    fn selector_of(&self, ns: &str, name: &str) -> Option<Option<StrMap>>;
    /// The uid of the stored object `ns/name` ([`Item::uid`]).
    fn uid_of(&self, ns: &str, name: &str) -> Option<Uid>;
    /// Every stored object that selects, with its namespace, name and selector ([`Item::selects`]).
    fn selectors(&self) -> Vec<(Sym, Box<str>, StrMap)>;
    /// Every object, stored or recorded undecodable, added to `out`.
    fn keys_into(&self, out: &mut Vec<ObjectKey>);
    /// Whether `ns/name` is stored or recorded undecodable.
    fn knows(&self, ns: &str, name: &str) -> bool;
    /// Forgets `ns/name`, stored or recorded undecodable; false when it was neither.
    fn forget(&self, ns: &str, name: &str) -> bool;
    /// Moves every object (views and undecodable records) into `into`, an index of the same kind, each
    /// replacing the object of its name there; leaves this index empty.
    fn move_into(&mut self, into: &dyn AnyIndex);
}

impl<V: Item> AnyIndex for Index<V> {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
    fn mark_mut(&mut self, ns: Sym, name: &str) {
        self.state_mut().mark_undecodable(ns, name);
    }
    fn undecodable_into(&self, out: &mut Vec<ObjectKey>) {
        out.extend(
            self.read()
                .undecodable
                .iter()
                .map(|(ns, name)| ObjectKey::new(self.kind, ns, name)),
        );
    }
    fn is_undecodable(&self, ns: &str, name: &str) -> bool {
        let st = self.read();
        !st.undecodable.is_empty() && st.undecodable.contains(&(Sym::new(ns), Box::from(name)))
    }
    fn is_relisting(&self) -> bool {
        Index::is_relisting(self)
    }
    fn retain_labelled(&self, keep: &dyn Fn(&str, &StrMap) -> bool) -> usize {
        self.retain(|ns, v| v.labels().is_none_or(|labels| keep(ns, labels)))
    }
    fn selector_of(&self, ns: &str, name: &str) -> Option<Option<StrMap>> {
        self.get(ns, name).map(|v| v.selects().cloned())
    }
    fn uid_of(&self, ns: &str, name: &str) -> Option<Uid> {
        self.read().by_ns.get(ns)?.get(name)?.1.uid()
    }
    fn selectors(&self) -> Vec<(Sym, Box<str>, StrMap)> {
        let st = self.read();
        st.by_ns
            .iter()
            .flat_map(|(ns, set)| {
                set.iter()
                    .filter_map(move |o| Some((ns.clone(), Box::from(o.0.name()), o.0.selects()?.clone())))
            })
            .collect()
    }
    fn keys_into(&self, out: &mut Vec<ObjectKey>) {
        let st = self.read();
        out.extend(
            st.by_ns
                .iter()
                .flat_map(|(ns, set)| set.iter().map(move |o| ObjectKey::new(self.kind, ns, o.0.name()))),
        );
        out.extend(
            st.undecodable
                .iter()
                .map(|(ns, name)| ObjectKey::new(self.kind, ns, name)),
        );
    }
    fn knows(&self, ns: &str, name: &str) -> bool {
        self.get(ns, name).is_some() || self.is_undecodable(ns, name)
    }
    fn forget(&self, ns: &str, name: &str) -> bool {
        self.remove(ns, name)
    }
    fn move_into(&mut self, into: &dyn AnyIndex) {
        // Both indexes are the table's for one kind, so their views are the same type.
        let Some(into) = into.as_any().downcast_ref::<Index<V>>() else {
            return;
        };
        let from = self.state_mut();
        let by_ns = std::mem::take(&mut from.by_ns);
        let undecodable = std::mem::take(&mut from.undecodable);
        from.groups.clear();
        from.refs.clear();
        let mut st = into.write();
        for (ns, set) in by_ns {
            for ByName(v, uid) in set {
                st.put(ns.clone(), v, uid);
            }
        }
        for (ns, name) in undecodable {
            st.mark_undecodable(ns, &name);
        }
    }
}

impl<V: Item> IndexState<V> {
    fn upsert(&mut self, ns: Sym, v: V, uid: Option<Uid>) -> bool {
        let uid = V::Uid::keep(uid);
        // Compared before it is shared: an unchanged object costs no allocation. An object deleted and
        // made again under its name has another uid: stored again, so its Events name the new one.
        let (unchanged, own_status) = match self.by_ns.get(&ns).and_then(|set| set.get(v.name())) {
            Some(old) if old.1 == uid => (*old.0 == v, v.differs_only_in_own_status(&old.0)),
            _ => (false, false),
        };
        if !unchanged {
            self.put(ns, Arc::new(v), uid);
        }
        // extdns's own status write: stored, so its writer sees it, but no change a sync must look at.
        !unchanged && !own_status
    }

    /// Stores `new` (with `uid`) in place of any object of its name.
    fn put(&mut self, ns: Sym, new: Arc<V>, uid: V::Uid) {
        let set = self.by_ns.entry(ns.clone()).or_default();
        let old = set.replace(ByName(Arc::clone(&new), uid));
        if let Some(old) = old {
            self.unindex(&ns, &old.0);
        } else if !self.undecodable.is_empty() {
            // It decodes now: no longer a record of an unreadable object.
            self.undecodable.remove(&(ns.clone(), Box::from(new.name())));
        }
        self.index(&ns, new);
    }

    fn mark_undecodable(&mut self, ns: Sym, name: &str) -> bool {
        let dropped = self.remove(&ns, name).is_some();
        self.undecodable.insert((ns, Box::from(name))) || dropped
    }

    fn remove(&mut self, ns: &str, name: &str) -> Option<Arc<V>> {
        let set = self.by_ns.get_mut(ns)?;
        let old = set.take(name)?;
        if set.is_empty() {
            self.by_ns.remove(ns);
        }
        self.unindex(ns, &old.0);
        Some(old.0)
    }

    fn index(&mut self, ns: &Sym, v: Arc<V>) {
        let refs = v.refs();
        if !refs.is_empty() {
            self.refs.add(ns, v.name(), refs);
        }
        if let Some(g) = v.group() {
            let list = self.groups.entry(ns.clone()).or_default().entry(g.into()).or_default();
            let at = list.partition_point(|x| x.name() < v.name());
            list.insert(at, v);
        }
    }

    fn unindex(&mut self, ns: &str, v: &Arc<V>) {
        let refs = v.refs();
        if !refs.is_empty() {
            self.refs.remove(ns, v.name(), refs);
        }
        let Some(g) = v.group() else { return };
        let Some(groups) = self.groups.get_mut(ns) else { return };
        if let Some(list) = groups.get_mut(g) {
            list.retain(|x| !Arc::ptr_eq(x, v));
            if list.is_empty() {
                groups.remove(g);
            }
        }
        if groups.is_empty() {
            self.groups.remove(ns);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::{EndpointSlice, Meta, Node, Pod, Route, RouteKind, Service};

    fn index<V: Item>(c: &ClusterStore, kind: ResourceKind) -> &Index<V> {
        c.index(kind).expect("every kind has an index of its view")
    }

    fn meta(ns: &str, name: &str) -> Meta {
        Meta {
            name: name.into(),
            namespace: ns.into(),
            ..Meta::default()
        }
    }

    fn slice(ns: &str, name: &str, service: &str) -> EndpointSlice {
        EndpointSlice {
            meta: meta(ns, name),
            service_name: Some(service.into()),
            ..EndpointSlice::default()
        }
    }

    fn names<T: Item>(list: &[Arc<T>]) -> Vec<&str> {
        list.iter().map(|x| x.name()).collect()
    }

    #[test]
    fn lists_are_sorted_by_namespace_then_name_whatever_the_insertion_order() {
        let mut c = ClusterStore::new();
        for (ns, name) in [("b", "x"), ("a", "z"), ("b", "a"), ("a", "b")] {
            c.add(Service {
                meta: meta(ns, name),
                ..Service::default()
            });
        }
        let order: Vec<(String, String)> = c
            .services()
            .iter()
            .map(|s| (s.meta.namespace.to_string(), s.meta.name.clone()))
            .collect();
        let expected = [("a", "b"), ("a", "z"), ("b", "a"), ("b", "x")];
        assert_eq!(order, expected.map(|(n, m)| (n.to_string(), m.to_string())).to_vec());
    }

    #[test]
    fn slices_are_found_by_their_service_sorted_by_name() {
        let mut c = ClusterStore::new();
        c.add(slice("default", "web-b", "web"))
            .add(slice("default", "web-a", "web"))
            .add(slice("other", "web-c", "web"));
        assert_eq!(names(&c.endpoint_slices("default", "web")), vec!["web-a", "web-b"]);
        assert_eq!(names(&c.endpoint_slices("other", "web")), vec!["web-c"]);
        assert!(c.endpoint_slices("default", "api").is_empty());
    }

    #[test]
    fn a_relabelled_slice_moves_to_its_new_service() {
        let c = ClusterStore::new();
        let ns = Sym::new("a");
        index::<EndpointSlice>(&c, ResourceKind::EndpointSlice).upsert(ns.clone(), slice("a", "s1", "web"), None);
        index::<EndpointSlice>(&c, ResourceKind::EndpointSlice).upsert(ns.clone(), slice("a", "s1", "api"), None);
        assert!(c.endpoint_slices("a", "web").is_empty());
        assert_eq!(names(&c.endpoint_slices("a", "api")), vec!["s1"]);
        assert!(index::<EndpointSlice>(&c, ResourceKind::EndpointSlice).remove("a", "s1"));
        assert!(c.endpoint_slices("a", "api").is_empty());
        assert!(
            !index::<EndpointSlice>(&c, ResourceKind::EndpointSlice)
                .read()
                .groups
                .contains_key("a"),
            "no empty group is left behind"
        );
    }

    #[test]
    fn the_same_name_replaces_and_an_unchanged_view_is_no_change() {
        let c = ClusterStore::new();
        let svc = |label: &str| Service {
            meta: Meta {
                labels: [("v", label)].into_iter().collect(),
                ..meta("a", "web")
            },
            ..Service::default()
        };
        assert!(index::<Service>(&c, ResourceKind::Service).upsert(Sym::new("a"), svc("1"), None));
        assert!(!index::<Service>(&c, ResourceKind::Service).upsert(Sym::new("a"), svc("1"), None));
        assert!(index::<Service>(&c, ResourceKind::Service).upsert(Sym::new("a"), svc("2"), None));
        let all = c.services();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].meta.labels.get("v"), Some("2"));
    }

    /// The uid travels with the view into the store: found by key, replaced when an object is made again
    /// under its name (same view, another uid: a change), gone with the object; kinds that keep none
    /// (Pods) answer `None`.
    #[test]
    fn the_uid_is_kept_beside_the_view_and_follows_the_object() {
        let (first, second) = (
            Uid::parse("3f2b7c1e-9a4d-4e0b-8c6f-0123456789ab"),
            Uid::parse("9e1d2c3b-4a59-4687-b5a4-0123456789ab"),
        );
        assert!(first.is_some() && second.is_some());
        let c = ClusterStore::new();
        let services = index::<Service>(&c, ResourceKind::Service);
        let web = || Service {
            meta: meta("a", "web"),
            ..Service::default()
        };
        let key = ObjectKey::new(ResourceKind::Service, "a", "web");
        assert!(services.upsert(Sym::new("a"), web(), first));
        assert_eq!(c.uid(&key), first);
        assert!(!services.upsert(Sym::new("a"), web(), first), "same view, same uid");
        assert!(services.upsert(Sym::new("a"), web(), second), "recreated: another uid");
        assert_eq!(c.uid(&key), second);
        assert!(services.remove("a", "web"));
        assert_eq!(c.uid(&key), None);

        let mut pods = ClusterStore::new();
        pods.add_with_uid(
            ResourceKind::Pod,
            Pod {
                name: "p".into(),
                namespace: "a".into(),
                ..Pod::default()
            },
            first,
        );
        assert!(pods.pod("a", "p").is_some());
        assert_eq!(pods.uid(&ObjectKey::new(ResourceKind::Pod, "a", "p")), None);
    }

    #[test]
    fn pods_are_found_by_namespace_and_name() {
        let mut c = ClusterStore::new();
        c.add(Pod {
            name: "p".into(),
            namespace: "ns".into(),
            ..Pod::default()
        });
        assert!(c.pod("ns", "p").is_some());
        assert_eq!(c.pods("ns").len(), 1);
        assert!(c.pod("other", "p").is_none());
    }

    #[test]
    fn undecodable_objects_are_recorded_apart_and_cleared_when_they_decode_again() {
        let c = ClusterStore::new();
        let ns = Sym::new("apps");
        let route = Route {
            kind: RouteKind::Tls,
            meta: meta("apps", "r"),
            ..Route::default()
        };
        let tls = index::<Route>(&c, ResourceKind::Route(RouteKind::Tls));
        tls.upsert(ns.clone(), route.clone(), None);
        assert!(tls.mark_undecodable(ns.clone(), "r"));
        assert!(c.routes(RouteKind::Tls).is_empty(), "the stale view is not served");
        assert!(!tls.mark_undecodable(ns.clone(), "r"), "already recorded");
        assert_eq!(
            c.undecodable(),
            vec![ObjectKey::new(ResourceKind::Route(RouteKind::Tls), "apps", "r")]
        );
        assert_eq!(c.undecodable()[0].to_string(), "TLSRoute apps/r");

        tls.upsert(ns.clone(), route, None);
        assert!(c.undecodable().is_empty());
        assert_eq!(c.routes(RouteKind::Tls).len(), 1);

        tls.mark_undecodable(ns, "r");
        assert!(tls.remove("apps", "r"), "a deleted object leaves no record");
        assert!(c.undecodable().is_empty());
    }

    const NEW_UID: &str = "5a6b7c8d-1e2f-4a3b-9c4d-0123456789ab";

    #[test]
    fn a_relist_replaces_views_and_undecodable_records() {
        let c = ClusterStore::new();
        let ns = Sym::new("a");
        index::<Service>(&c, ResourceKind::Service).upsert(
            ns.clone(),
            Service {
                meta: meta("a", "old"),
                ..Service::default()
            },
            None,
        );
        index::<Service>(&c, ResourceKind::Service).mark_undecodable(ns.clone(), "was-bad");
        index::<Service>(&c, ResourceKind::Service).begin_relist();
        index::<Service>(&c, ResourceKind::Service).relist_add(
            ns.clone(),
            Ok((
                Service {
                    meta: meta("a", "new"),
                    ..Service::default()
                },
                Uid::parse(NEW_UID),
            )),
        );
        index::<Service>(&c, ResourceKind::Service).relist_add(ns, Err("bad".into()));
        assert_eq!(
            names(&c.services()),
            vec!["old"],
            "the old content serves until the list completes"
        );
        index::<Service>(&c, ResourceKind::Service).finish_relist();
        assert_eq!(names(&c.services()), vec!["new"]);
        let uid = c.uid(&ObjectKey::new(ResourceKind::Service, "a", "new"));
        assert_eq!(uid.map(|u| u.to_string()).as_deref(), Some(NEW_UID));
        let bad: Vec<String> = c.undecodable().into_iter().map(|k| k.name).collect();
        assert_eq!(bad, vec!["bad"]);
    }

    #[test]
    fn the_builder_records_undecodable_objects_of_any_kind() {
        let mut c = ClusterStore::new();
        c.add(Node {
            name: "n1".into(),
            ..Node::default()
        })
        .add_undecodable(ResourceKind::Node, "", "n1")
        .add_undecodable(ResourceKind::Route(RouteKind::Udp), "x", "u");
        assert!(c.node("n1").is_none());
        let keys: Vec<String> = c.undecodable().iter().map(ToString::to_string).collect();
        assert_eq!(keys, vec!["Node n1", "UDPRoute x/u"]);
    }
}
