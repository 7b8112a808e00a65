//! Record sets as a read returned them, kept until extdns writes them: the providers whose deletes must
//! match what the zone holds byte for byte (Route53, Cloud DNS) send a set back as read, and a set extdns
//! has written since as extdns wrote it (built from its endpoint), so one read serves every write until
//! the next (`Provider::read_state_outlives_writes`).

use std::collections::{HashMap, HashSet};
use std::hash::Hash;
use std::sync::{Mutex, PoisonError};

/// The sets of a read by key, forgotten one by one as extdns writes them.
#[derive(Debug)]
pub struct AsRead<K, V> {
    sets: Mutex<Sets<K, V>>,
}

/// What a read returned, and the keys forgotten since (extdns wrote them).
#[derive(Debug)]
struct Sets<K, V> {
    read: HashMap<K, V>,
    written: HashSet<K>,
}

impl<K: Eq + Hash, V: Clone> AsRead<K, V> {
    /// The sets a read returned.
    pub fn new(sets: HashMap<K, V>) -> Self {
        AsRead {
            sets: Mutex::new(Sets {
                read: sets,
                written: HashSet::new(),
            }),
        }
    }

    /// The set of `key` as read, unless extdns has written it since.
    pub fn get(&self, key: &K) -> Option<V> {
        self.sets
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .read
            .get(key)
            .cloned()
    }

    /// Whether the zone held `key` when read, or extdns has written it since: an update of a key it does
    /// not know is one the zone never held (a name split across zones, each written alike).
    pub fn knows(&self, key: &K) -> bool {
        let sets = self.sets.lock().unwrap_or_else(PoisonError::into_inner);
        sets.read.contains_key(key) || sets.written.contains(key)
    }

    /// Forgets the set of `key`: extdns is writing it, and what it holds from then on is what extdns wrote.
    pub fn forget(&self, key: &K)
    where
        K: Clone,
    {
        let mut sets = self.sets.lock().unwrap_or_else(PoisonError::into_inner);
        sets.read.remove(key);
        sets.written.insert(key.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_is_served_as_read_until_it_is_forgotten() {
        let read = AsRead::new(HashMap::from([("a", 1), ("b", 2)]));
        assert_eq!((read.get(&"a"), read.get(&"c")), (Some(1), None));
        read.forget(&"a");
        assert_eq!((read.get(&"a"), read.get(&"b")), (None, Some(2)));
    }

    #[test]
    fn a_key_is_known_when_read_or_written_since() {
        let read = AsRead::new(HashMap::from([("a", 1)]));
        read.forget(&"b");
        assert!(read.knows(&"a") && read.knows(&"b"));
        assert!(!read.knows(&"c"));
    }
}
