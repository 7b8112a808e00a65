//! A set of keyed entries split into shards shared between copies, as [`crate::shards`]' map is, laid out
//! for memory: what holds a zone's nodes ([`crate::zones`]), which live as long as they are served.
//!
//! An entry carries its own key ([`Keyed`]): a zone's node holds its lower-cased name once, as the key,
//! not once in the map and again in the node. A key's hash picks its shard and orders the shard: each
//! shard is two vectors cut to their length, the entries' hash fragments in ascending order and the
//! entries beside them, so an entry costs its own size and four bytes, where a hash table per shard
//! cost about 1.6 times its size (its load factor and control bytes, over shards of a dozen entries). A
//! lookup hashes the key once (the shard and the fragment come from the same hash), binary-searches the
//! fragments and compares the key only where they are equal. The hash is seeded per map at random
//! (foldhash's, shared by the map's copies), so names cannot be chosen to crowd one shard. Keys are hashed
//! and compared by [`ShardKey`], which for a name reads each label as bytes: hickory's own `Hash` writes
//! a label at a time and its equality compares byte by byte through a comparator: the lookups were a
//! tenth of an unsigned answer's CPU with them (issue 49's profile).
//!
//! A shard shared with another copy is copied on its first change ([`Arc::make_mut`]); a shard changed
//! again in the same copy is not.

use std::borrow::Borrow;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;

use foldhash::fast::RandomState;

/// Shards per map: a change to a zone of N names copies about N / 1024 of them, and an empty map costs
/// the pointers alone (an empty shard allocates nothing).
const SHARDS: usize = 1024;

/// How a key is hashed and compared in a [`ShardedSet`]: as its bytes, in one pass. What a key is
/// borrowed as must hash and compare as the key itself does.
pub(crate) trait ShardKey {
    /// Feeds the key to `state`.
    fn hash_into(&self, state: &mut impl Hasher);
    /// Whether `self` and `other` are the same key.
    fn same(&self, other: &Self) -> bool;
}

/// How a name is hashed: its wire form, lower-cased already (each label's length before its bytes, so
/// labels cannot run together). One function for the key and for what stands in for it ([`Probe`]), so
/// the two cannot drift apart and miss each other.
pub(crate) fn hash_wire(wire: &[u8], state: &mut impl Hasher) {
    state.write(wire);
}

/// Strings: the keys of this module's and `shards`' tests.
#[cfg(test)]
impl ShardKey for str {
    fn hash_into(&self, state: &mut impl Hasher) {
        state.write(self.as_bytes());
    }

    fn same(&self, other: &Self) -> bool {
        self == other
    }
}

#[cfg(test)]
impl ShardKey for String {
    fn hash_into(&self, state: &mut impl Hasher) {
        self.as_str().hash_into(state);
    }

    fn same(&self, other: &Self) -> bool {
        self == other
    }
}

/// A stand-in for a key `K` in a lookup ([`ShardedSet::find`]): it hashes as the key it stands for does
/// and says whether a key is that one, so a name being answered is looked up without being made into a
/// key first ([`crate::name_key`]).
pub(crate) trait Probe<K: ?Sized> {
    /// Feeds `state` exactly what the key's [`ShardKey::hash_into`] would.
    fn hash_into(&self, state: &mut impl Hasher);
    /// Whether `key` is the key this stands for.
    fn is(&self, key: &K) -> bool;
}

/// An entry that carries the key it is found by.
pub(crate) trait Keyed {
    /// The key type.
    type Key: ShardKey;
    /// The entry's key; it must not change while the entry is in a map.
    fn key(&self) -> &Self::Key;
}

impl<K: ShardKey, V> Keyed for (K, V) {
    type Key = K;

    fn key(&self) -> &K {
        &self.0
    }
}

/// One shard: entries ordered by the fragment of their key's hash (equal fragments in no order).
#[derive(Debug, Clone)]
struct Shard<V> {
    /// The high 32 bits of each entry's key hash, ascending.
    fragments: Vec<u32>,
    /// `entries[i]` is the entry whose fragment is `fragments[i]`.
    entries: Vec<V>,
}

impl<V> Default for Shard<V> {
    fn default() -> Self {
        Shard {
            fragments: Vec::new(),
            entries: Vec::new(),
        }
    }
}

impl<V: Keyed> Shard<V> {
    /// The position of the entry whose key is `key`, if any; else where an entry of `fragment` goes.
    fn find<Q>(&self, fragment: u32, key: &Q) -> Result<usize, usize>
    where
        V::Key: Borrow<Q>,
        Q: ShardKey + ?Sized,
    {
        self.find_where(fragment, |k| k.borrow().same(key))
    }

    /// The position of the entry whose key `is`, if any; else where an entry of `fragment` goes.
    fn find_where(&self, fragment: u32, is: impl Fn(&V::Key) -> bool) -> Result<usize, usize> {
        let start = self.fragments.partition_point(|&f| f < fragment);
        let same = self.fragments.get(start..).unwrap_or_default();
        let run = same.iter().take_while(|&&f| f == fragment).count();
        (start..start + run)
            .find(|&i| self.entries.get(i).is_some_and(|e| is(e.key())))
            .ok_or(start)
    }
}

/// Entries `V` found by their [`Keyed::key`], in [`SHARDS`] shards, each shared between the copies that
/// have not changed it.
#[derive(Debug)]
pub(crate) struct ShardedSet<V> {
    shards: Box<[Arc<Shard<V>>]>,
    hasher: RandomState,
    len: usize,
}

impl<V> Clone for ShardedSet<V> {
    /// A copy sharing every shard: [`SHARDS`] reference counts bumped, nothing else copied.
    fn clone(&self) -> Self {
        ShardedSet {
            shards: self.shards.clone(),
            hasher: self.hasher.clone(),
            len: self.len,
        }
    }
}

impl<V: Keyed + Clone> ShardedSet<V> {
    pub(crate) fn new() -> Self {
        ShardedSet {
            shards: (0..SHARDS).map(|_| Arc::new(Shard::default())).collect(),
            hasher: RandomState::default(),
            len: 0,
        }
    }

    /// The key's shard and its fragment there.
    fn place<Q: ShardKey + ?Sized>(&self, key: &Q) -> (usize, u32) {
        self.place_of(|state| key.hash_into(state))
    }

    /// The shard and fragment of the key `feed` hashes.
    fn place_of(&self, feed: impl FnOnce(&mut <RandomState as BuildHasher>::Hasher)) -> (usize, u32) {
        let mut state = self.hasher.build_hasher();
        feed(&mut state);
        let hash = state.finish();
        ((hash % SHARDS as u64) as usize, (hash >> 32) as u32)
    }

    /// The entry whose key `probe` stands for.
    pub(crate) fn find(&self, probe: &impl Probe<V::Key>) -> Option<&V> {
        let (at, fragment) = self.place_of(|state| probe.hash_into(state));
        let shard = self.shards.get(at)?;
        shard.entries.get(shard.find_where(fragment, |k| probe.is(k)).ok()?)
    }

    pub(crate) fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        V::Key: Borrow<Q>,
        Q: ShardKey + ?Sized,
    {
        let (at, fragment) = self.place(key);
        let shard = self.shards.get(at)?;
        shard.entries.get(shard.find(fragment, key).ok()?)
    }

    pub(crate) fn contains_key<Q>(&self, key: &Q) -> bool
    where
        V::Key: Borrow<Q>,
        Q: ShardKey + ?Sized,
    {
        self.get(key).is_some()
    }

    /// The entry at `key` for changing (not its key); its shard is copied only when the key is there.
    pub(crate) fn get_mut<Q>(&mut self, key: &Q) -> Option<&mut V>
    where
        V::Key: Borrow<Q>,
        Q: ShardKey + ?Sized,
    {
        let (at, fragment) = self.place(key);
        let found = self.shards.get(at)?.find(fragment, key).ok()?;
        Arc::make_mut(self.shards.get_mut(at)?).entries.get_mut(found)
    }

    /// Puts `entry` in place of the one with its key, if any, and returns that one.
    pub(crate) fn insert(&mut self, entry: V) -> Option<V> {
        let (at, fragment) = self.place(entry.key());
        let found = self.shards.get(at)?.find(fragment, entry.key().borrow());
        let shard = Arc::make_mut(self.shards.get_mut(at)?);
        match found {
            Ok(i) => shard.entries.get_mut(i).map(|slot| std::mem::replace(slot, entry)),
            Err(i) => {
                // Exactly one more: a shard keeps no spare room (the zone holds what it serves for long).
                shard.fragments.reserve_exact(1);
                shard.entries.reserve_exact(1);
                shard.fragments.insert(i, fragment);
                shard.entries.insert(i, entry);
                self.len += 1;
                None
            }
        }
    }

    pub(crate) fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        V::Key: Borrow<Q>,
        Q: ShardKey + ?Sized,
    {
        let (at, fragment) = self.place(key);
        let found = self.shards.get(at)?.find(fragment, key).ok()?;
        let shard = Arc::make_mut(self.shards.get_mut(at)?);
        shard.fragments.remove(found);
        let old = shard.entries.remove(found);
        shard.fragments.shrink_to_fit();
        shard.entries.shrink_to_fit();
        self.len -= 1;
        Some(old)
    }

    /// Every entry, in no order.
    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.shards.iter().flat_map(|s| s.entries.iter())
    }

    /// Entries held.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The entries of each shard `self` and `other` (copies of one set) do not share, side by side:
    /// what changed between them, found without walking the shards neither changed.
    pub(crate) fn unshared<'a>(&'a self, other: &'a Self) -> impl Iterator<Item = (&'a [V], &'a [V])> {
        self.shards
            .iter()
            .zip(other.shards.iter())
            .filter(|(a, b)| !Arc::ptr_eq(a, b))
            .map(|(a, b)| (a.entries.as_slice(), b.entries.as_slice()))
    }

    /// The entries that differ between `old` and `self` (copies of one set): each as it is in `old` and
    /// in `self` (`None` where its key is absent). Only the shards the two do not share are walked; an
    /// entry of such a shard that the copy left alone comes on both sides, equal.
    pub(crate) fn changes_since<'a>(&'a self, old: &'a Self) -> Vec<(Option<&'a V>, Option<&'a V>)> {
        let mut changes = Vec::new();
        for (new_entries, old_entries) in self.unshared(old) {
            // A shard of a large zone holds a thousand entries or more: each key is found on the other
            // side by its hash (the copies share the hasher) and a binary search, not a scan, which
            // would make a renewal round's IXFR quadratic in the shard's size.
            for entry in old_entries {
                changes.push((Some(entry), self.get(entry.key())));
            }
            for entry in new_entries {
                if old.get(entry.key()).is_none() {
                    changes.push((None, Some(entry)));
                }
            }
        }
        changes
    }

    /// How many shards `self` and `other` hold at the same address: what a copy did not change.
    #[cfg(test)]
    pub(crate) fn shared_shards(&self, other: &Self) -> usize {
        self.shards
            .iter()
            .zip(other.shards.iter())
            .filter(|(a, b)| Arc::ptr_eq(a, b))
            .count()
    }

    /// How many shards it has.
    #[cfg(test)]
    pub(crate) fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// Whether `self` and `other` hold the shard of `key` at the same address: neither changed it since
    /// one was copied from the other.
    #[cfg(test)]
    fn shares_shard_of<Q: ShardKey + ?Sized>(&self, other: &Self, key: &Q) -> bool {
        let (at, _) = self.place(key);
        matches!((self.shards.get(at), other.shards.get(at)), (Some(a), Some(b)) if Arc::ptr_eq(a, b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value<'a>(map: &'a ShardedSet<(String, u32)>, key: &str) -> Option<&'a u32> {
        map.get(key).map(|(_, v)| v)
    }

    #[test]
    fn a_copy_shares_what_it_did_not_change() {
        let mut map: ShardedSet<(String, u32)> = ShardedSet::new();
        for i in 0..5_000 {
            map.insert((format!("k{i}"), i));
        }
        let mut copy = map.clone();
        assert_eq!(copy.insert(("k1".into(), 100)), Some(("k1".into(), 1)));
        assert_eq!(copy.insert(("new".into(), 7)), None);
        assert_eq!(copy.remove("k2"), Some(("k2".into(), 2)));
        assert_eq!(copy.remove("absent"), None);
        assert_eq!((map.len(), copy.len()), (5_000, 5_000));
        assert_eq!((value(&map, "k1"), value(&copy, "k1")), (Some(&1), Some(&100)));
        assert_eq!((value(&map, "k2"), value(&copy, "k2")), (Some(&2), None));
        assert!(map.get("new").is_none(), "the original is untouched");
        assert!(!map.shares_shard_of(&copy, "k1"), "a changed shard is the copy's own");
        let shared = map
            .shards
            .iter()
            .zip(copy.shards.iter())
            .filter(|(a, b)| Arc::ptr_eq(a, b))
            .count();
        assert!(
            shared >= SHARDS - 3,
            "all but the three changed shards are shared: {shared}"
        );
        let mut values: Vec<u32> = copy.values().map(|(_, v)| *v).collect();
        values.sort_unstable();
        assert_eq!(values.len(), 5_000);
        assert_eq!(values.last(), Some(&4_999));
        for i in (0..5_000).filter(|&i| i != 1 && i != 2) {
            assert_eq!(value(&copy, &format!("k{i}")), Some(&i), "every other key is found");
        }
    }

    #[test]
    fn get_mut_changes_the_copy_alone() {
        let mut map: ShardedSet<(String, u32)> = ShardedSet::new();
        map.insert(("a".into(), 1));
        let mut copy = map.clone();
        if let Some((_, v)) = copy.get_mut("a") {
            *v = 2;
        }
        assert!(copy.get_mut("b").is_none());
        assert_eq!((value(&map, "a"), value(&copy, "a")), (Some(&1), Some(&2)));
    }

    #[test]
    fn a_shard_holds_no_spare_room() {
        let mut map: ShardedSet<(String, u32)> = ShardedSet::new();
        for i in 0..3_000 {
            map.insert((format!("k{i}"), i));
        }
        for i in 0..1_000 {
            map.remove(format!("k{i}").as_str());
        }
        for shard in map.shards.iter() {
            assert_eq!(shard.entries.capacity(), shard.entries.len());
            assert_eq!(shard.fragments.capacity(), shard.fragments.len());
            assert!(shard.fragments.is_sorted(), "fragments stay in order");
        }
        assert_eq!(map.values().count(), 2_000);
        assert!(
            map.values()
                .all(|entry| map.get(entry.key()).is_some_and(|found| std::ptr::eq(found, entry))),
            "an entry is listed under its own key"
        );
    }

    /// Keys whose hashes share a fragment sit side by side and are told apart by the key itself.
    #[test]
    fn equal_fragments_are_told_apart_by_the_key() {
        let shard = Shard {
            fragments: vec![1, 5, 5, 5, 9],
            entries: ["a", "b", "c", "d", "e"].map(|k| (k.to_string(), 0_u32)).to_vec(),
        };
        assert_eq!(shard.find(5, "b"), Ok(1));
        assert_eq!(shard.find(5, "d"), Ok(3));
        assert_eq!(
            shard.find(5, "e"),
            Err(1),
            "a key elsewhere is not taken for one of the run"
        );
        assert_eq!(shard.find(9, "e"), Ok(4));
        assert_eq!(shard.find(7, "x"), Err(4));
        assert_eq!(shard.find(0, "x"), Err(0));
        assert_eq!(shard.find(10, "x"), Err(5));
    }
}
