//! A map of keys to values on the zone's sharded store ([`ShardedSet`] of `(key, value)` pairs), so copying
//! it is cheap and changing a copy costs the shards it touches: what the signer's maps (signatures, NSEC
//! links) need to be shared between the snapshots queries read, as the zone's nodes are.

use crate::keyed_shards::{Probe, ShardKey, ShardedSet};
use std::borrow::Borrow;

/// A map of `K` to `V` whose copies share every shard neither changed.
#[derive(Debug)]
pub(crate) struct ShardedMap<K, V>(ShardedSet<(K, V)>);

impl<K, V> Clone for ShardedMap<K, V> {
    /// A copy sharing every shard.
    fn clone(&self) -> Self {
        ShardedMap(self.0.clone())
    }
}

impl<K: ShardKey + Clone, V: Clone> ShardedMap<K, V> {
    pub(crate) fn new() -> Self {
        ShardedMap(ShardedSet::new())
    }

    #[cfg(test)]
    pub(crate) fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: ShardKey + ?Sized,
    {
        self.0.get(key).map(|(_, v)| v)
    }

    /// The value at the key `probe` stands for.
    pub(crate) fn find(&self, probe: &impl Probe<K>) -> Option<&V> {
        self.0.find(probe).map(|(_, v)| v)
    }

    pub(crate) fn insert(&mut self, key: K, value: V) -> Option<V> {
        self.0.insert((key, value)).map(|(_, v)| v)
    }

    pub(crate) fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: ShardKey + ?Sized,
    {
        self.0.remove(key).map(|(_, v)| v)
    }

    /// Every key and value, in no order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.0.values().map(|(k, v)| (k, v))
    }

    /// Entries held.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// The keys whose values differ between `old` and `self` (copies of one map): each with its value
    /// in `old` and in `self` (`None` where it is absent), as [`ShardedSet::changes_since`] finds them.
    pub(crate) fn changes_since<'a>(&'a self, old: &'a Self) -> Vec<(&'a K, Option<&'a V>, Option<&'a V>)> {
        self.0
            .changes_since(&old.0)
            .into_iter()
            .filter_map(|(before, after)| {
                let key = &before.or(after)?.0;
                Some((key, before.map(|(_, v)| v), after.map(|(_, v)| v)))
            })
            .collect()
    }

    /// How many shards `self` and `other` hold at the same address: what a copy did not change.
    #[cfg(test)]
    pub(crate) fn shared_shards(&self, other: &Self) -> usize {
        self.0.shared_shards(&other.0)
    }

    /// How many shards it has.
    #[cfg(test)]
    pub(crate) fn shard_count(&self) -> usize {
        self.0.shard_count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_changes_its_own_values_and_shares_the_rest() {
        let mut map: ShardedMap<String, u32> = ShardedMap::new();
        for i in 0..5_000 {
            map.insert(format!("k{i}"), i);
        }
        let mut copy = map.clone();
        assert_eq!(copy.insert("k1".into(), 100), Some(1));
        assert_eq!(copy.insert("new".into(), 7), None);
        assert_eq!(copy.remove("k2"), Some(2));
        assert_eq!(copy.remove("absent"), None);
        assert_eq!((map.len(), copy.len()), (5_000, 5_000));
        assert_eq!((map.get("k1"), copy.get("k1")), (Some(&1), Some(&100)));
        assert!(map.get("k2").is_some() && copy.get("k2").is_none());
        assert!(map.get("new").is_none(), "the original is untouched");
        assert!(
            map.shared_shards(&copy) > 1_000,
            "all but the changed shards are shared"
        );
        let mut values: Vec<u32> = copy.iter().map(|(_, v)| *v).collect();
        values.sort_unstable();
        assert_eq!(values.len(), 5_000);
        assert_eq!(values.last(), Some(&4_999));
    }

    #[test]
    fn a_set_key_is_found_by_its_borrowed_name_and_type() {
        use crate::name_key::WireName;
        use hickory_proto::rr::{Name, RecordType};
        let name = |s: &str| WireName::of(&Name::from_ascii(s).expect("test name"));
        let mut map: ShardedMap<(WireName, RecordType), u32> = ShardedMap::new();
        for i in 0..2_000 {
            map.insert((name(&format!("n{i}.example.org.")), RecordType::A), i);
            map.insert((name(&format!("n{i}.example.org.")), RecordType::TXT), i + 10_000);
        }
        for i in [0, 7, 1_999] {
            let owner = name(&format!("N{i}.Example.org."));
            assert_eq!(map.find(&(&owner, RecordType::A)), Some(&i));
            assert_eq!(map.find(&(&owner, RecordType::TXT)), Some(&(i + 10_000)));
            assert_eq!(map.find(&(&owner, RecordType::AAAA)), None);
        }
        assert_eq!(map.find(&(&name("n2000.example.org."), RecordType::A)), None);
    }

    #[test]
    fn the_changes_since_a_copy_are_each_changed_added_and_removed_key_once() {
        // Dense shards (a hundred entries each), as a large zone's are.
        let mut map: ShardedMap<String, u32> = ShardedMap::new();
        for i in 0..100_000 {
            map.insert(format!("k{i}"), i);
        }
        let mut copy = map.clone();
        copy.insert("k1".into(), 100);
        copy.insert("new".into(), 7);
        copy.remove("k2");
        let mut changed: Vec<(String, Option<u32>, Option<u32>)> = copy
            .changes_since(&map)
            .into_iter()
            .filter(|(_, before, after)| before != after)
            .map(|(k, before, after)| (k.clone(), before.copied(), after.copied()))
            .collect();
        changed.sort();
        assert_eq!(
            changed,
            vec![
                ("k1".to_string(), Some(1), Some(100)),
                ("k2".to_string(), Some(2), None),
                ("new".to_string(), None, Some(7)),
            ]
        );
    }
}
