//! The book's index from a name to the objects with an outcome at it, kept small: it has an entry per
//! name of the zone (10,000 and more), beside the outcomes, which already hold each name.
//!
//! A name is found by a 64-bit hash of its name key rather than by the key itself (a second copy of every
//! name), and an object by a shared key rather than a copy of its kind, namespace and name. Two names with
//! one hash only make a lookup return an object more (the fold then finds no outcome of it at the planned
//! names and leaves it as it was); an object leaves every entry of its names at once, so a shared entry
//! never loses an object another of its names still needs.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hasher};
use std::sync::Arc;

use extdns_endpoint::name::name_key;
use extdns_informer::ObjectKey;

/// Name hash → the objects with an outcome at a name of that hash.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct ByName(BTreeMap<u64, Holders>);

/// The objects of one entry, sorted and unique; almost always one, held without a list. 16 bytes: a
/// boxed slice, not a vector, as a name shared by several objects is rare and its list is made again
/// when one comes or goes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Holders {
    One(Arc<ObjectKey>),
    Many(Box<[Arc<ObjectKey>]>),
}

/// The index's key of `name`: its name key's hash (a fixed-key hash, the same in every process).
fn slot(name: &str) -> u64 {
    let mut h = DefaultHasher::new();
    h.write(name_key(name).as_bytes());
    h.finish()
}

impl ByName {
    /// Records that `object` has an outcome at `name`.
    pub(super) fn insert(&mut self, name: &str, object: &Arc<ObjectKey>) {
        let holders = match self.0.entry(slot(name)) {
            std::collections::btree_map::Entry::Vacant(v) => {
                v.insert(Holders::One(Arc::clone(object)));
                return;
            }
            std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
        };
        match holders {
            Holders::One(first) if **first == **object => {}
            Holders::One(first) => {
                let mut list = vec![Arc::clone(first), Arc::clone(object)];
                list.sort();
                *holders = Holders::Many(list.into());
            }
            Holders::Many(list) => {
                if let Err(at) = list.binary_search(object) {
                    let mut longer = list.to_vec();
                    longer.insert(at, Arc::clone(object));
                    *list = longer.into();
                }
            }
        }
    }

    /// Forgets that `object` has an outcome at `name`.
    pub(super) fn remove(&mut self, name: &str, object: &ObjectKey) {
        let slot = slot(name);
        let Some(holders) = self.0.get_mut(&slot) else { return };
        let empty = match holders {
            Holders::One(only) => **only == *object,
            Holders::Many(list) => {
                if let Ok(at) = list.binary_search_by(|k| (**k).cmp(object)) {
                    let mut shorter = list.to_vec();
                    shorter.remove(at);
                    *holders = match <[_; 1]>::try_from(shorter) {
                        Ok([last]) => Holders::One(last),
                        Err(rest) => Holders::Many(rest.into()),
                    };
                }
                false
            }
        };
        if empty {
            self.0.remove(&slot);
        }
    }

    /// The objects with an outcome at `name` (and, rarely, at a name of the same hash).
    pub(super) fn get(&self, name: &str) -> impl Iterator<Item = &ObjectKey> {
        let (one, many) = match self.0.get(&slot(name)) {
            Some(Holders::One(k)) => (Some(&**k), &[][..]),
            Some(Holders::Many(list)) => (None, &list[..]),
            None => (None, &[][..]),
        };
        one.into_iter().chain(many.iter().map(|k| &**k))
    }
}

#[cfg(test)]
mod tests {
    use extdns_informer::ResourceKind;

    use super::*;

    fn key(name: &str) -> Arc<ObjectKey> {
        Arc::new(ObjectKey::new(ResourceKind::Service, "shop", name))
    }

    fn names(index: &ByName, name: &str) -> Vec<String> {
        index.get(name).map(|k| k.name.clone()).collect()
    }

    #[test]
    fn objects_are_found_by_any_spelling_of_the_name_and_leave_it_one_by_one() {
        let mut index = ByName::default();
        index.insert("www.example.org", &key("b"));
        index.insert("WWW.example.org.", &key("a"));
        index.insert("www.example.org", &key("b"));
        assert_eq!(names(&index, "www.Example.org"), ["a", "b"]);
        assert!(names(&index, "api.example.org").is_empty());
        index.remove("www.example.org", &key("b"));
        assert_eq!(names(&index, "www.example.org"), ["a"]);
        assert_eq!(index, {
            let mut only_a = ByName::default();
            only_a.insert("www.example.org", &key("a"));
            only_a
        });
        index.remove("www.example.org", &key("a"));
        assert_eq!(index, ByName::default(), "no empty entry is left behind");
        assert_eq!(
            size_of::<Holders>(),
            16,
            "an entry's objects are a pointer and a tag's niche"
        );
    }

    #[test]
    fn a_name_of_three_objects_keeps_them_sorted_as_they_come_and_go() {
        let mut index = ByName::default();
        for name in ["c", "a", "b"] {
            index.insert("www.example.org", &key(name));
        }
        assert_eq!(names(&index, "www.example.org"), ["a", "b", "c"]);
        index.remove("www.example.org", &key("b"));
        assert_eq!(names(&index, "www.example.org"), ["a", "c"]);
        index.remove("www.example.org", &key("a"));
        index.remove("www.example.org", &key("c"));
        assert_eq!(index, ByName::default());
    }
}
