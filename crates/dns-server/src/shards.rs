//! A map split into shards shared between copies, so that copying it is cheap and changing a copy costs
//! the shards it touches: what lets a write build the next zone content beside the one queries read
//! ([`crate::zones`]) without copying the whole zone.
//!
//! A key's shard is fixed by a hash with fixed keys (the shard only spreads the keys; each shard is an
//! ordinary `HashMap` with the standard library's randomly keyed hasher). A shard shared with another copy
//! is copied on its first change ([`Arc::make_mut`]); a shard changed again in the same copy is not.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher, Hash};
use std::sync::Arc;

/// Shards per map: a change to a zone of N names copies about N / 1024 of them, and an empty map costs
/// the pointers alone (an empty `HashMap` allocates nothing).
const SHARDS: usize = 1024;

/// A map of `K` to `V` in [`SHARDS`] shards, each shared between the copies that have not changed it.
#[derive(Debug)]
pub(crate) struct ShardedMap<K, V> {
    shards: Box<[Arc<HashMap<K, V>>]>,
    len: usize,
}

impl<K, V> Clone for ShardedMap<K, V> {
    /// A copy sharing every shard: [`SHARDS`] reference counts bumped, nothing else copied.
    fn clone(&self) -> Self {
        ShardedMap {
            shards: self.shards.clone(),
            len: self.len,
        }
    }
}

impl<K: Hash + Eq + Clone, V: Clone> ShardedMap<K, V> {
    pub(crate) fn new() -> Self {
        ShardedMap {
            shards: (0..SHARDS).map(|_| Arc::new(HashMap::new())).collect(),
            len: 0,
        }
    }

    fn shard_of<Q: Hash + ?Sized>(key: &Q) -> usize {
        let hash = BuildHasherDefault::<DefaultHasher>::default().hash_one(key);
        (hash % SHARDS as u64) as usize
    }

    fn shard<Q: Hash + ?Sized>(&self, key: &Q) -> Option<&HashMap<K, V>> {
        self.shards.get(Self::shard_of(key)).map(|s| &**s)
    }

    /// The shard of `key`, copied first if another copy of the map shares it.
    fn shard_mut<Q: Hash + ?Sized>(&mut self, key: &Q) -> Option<&mut HashMap<K, V>> {
        self.shards.get_mut(Self::shard_of(key)).map(Arc::make_mut)
    }

    pub(crate) fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.shard(key)?.get(key)
    }

    pub(crate) fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.get(key).is_some()
    }

    /// The value at `key` for changing; its shard is copied only when the key is there.
    pub(crate) fn get_mut<Q>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        if !self.contains_key(key) {
            return None;
        }
        self.shard_mut(key)?.get_mut(key)
    }

    pub(crate) fn insert(&mut self, key: K, value: V) -> Option<V> {
        let old = self.shard_mut(&key)?.insert(key, value);
        if old.is_none() {
            self.len += 1;
        }
        old
    }

    pub(crate) fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        if !self.contains_key(key) {
            return None;
        }
        let old = self.shard_mut(key)?.remove(key);
        if old.is_some() {
            self.len -= 1;
        }
        old
    }

    /// Every key and value, in no order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.shards.iter().flat_map(|s| s.iter())
    }

    /// Entries held.
    pub(crate) fn len(&self) -> usize {
        self.len
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

    /// Whether `self` and `other` hold the shard of `key` at the same address: neither changed it since
    /// one was copied from the other.
    #[cfg(test)]
    fn shares_shard_of<Q: Hash + ?Sized>(&self, other: &Self, key: &Q) -> bool {
        let at = Self::shard_of(key);
        matches!((self.shards.get(at), other.shards.get(at)), (Some(a), Some(b)) if Arc::ptr_eq(a, b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_shares_what_it_did_not_change() {
        let mut map: ShardedMap<String, u32> = ShardedMap::new();
        for i in 0..5_000 {
            map.insert(format!("k{i}"), i);
        }
        let mut copy = map.clone();
        copy.insert("k1".into(), 100);
        copy.insert("new".into(), 7);
        assert_eq!(copy.remove("k2"), Some(2));
        assert_eq!(copy.remove("absent"), None);
        assert_eq!((map.len(), copy.len()), (5_000, 5_000));
        assert_eq!((map.get("k1"), copy.get("k1")), (Some(&1), Some(&100)));
        assert_eq!((map.get("k2"), copy.get("k2")), (Some(&2), None));
        assert!(map.get("new").is_none(), "the original is untouched");
        assert!(!map.shares_shard_of(&copy, "k1"), "a changed shard is the copy's own");
        let untouched = (0..5_000)
            .map(|i| format!("k{i}"))
            .filter(|k| map.shares_shard_of(&copy, k.as_str()))
            .count();
        assert!(untouched > 4_900, "all but the changed shards are shared: {untouched}");
        let mut values: Vec<u32> = copy.iter().map(|(_, v)| *v).collect();
        values.sort_unstable();
        assert_eq!(values.len(), 5_000);
        assert_eq!(values.last(), Some(&4_999));
    }

    #[test]
    fn get_mut_changes_the_copy_alone() {
        let mut map: ShardedMap<String, u32> = ShardedMap::new();
        map.insert("a".into(), 1);
        let mut copy = map.clone();
        if let Some(v) = copy.get_mut("a") {
            *v = 2;
        }
        assert!(copy.get_mut("b").is_none());
        assert_eq!((map.get("a"), copy.get("a")), (Some(&1), Some(&2)));
    }
}
