//! Record sets as a read returned them, kept until extdns writes them: the providers whose deletes must
//! match what the zone holds byte for byte (Route53, Cloud DNS) send a set back as read, and a set extdns
//! has written since as extdns wrote it (built from its endpoint), so one read serves every write until
//! the next (`Provider::read_state_outlives_writes`).

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Mutex, PoisonError};

/// The sets of a read by key, forgotten one by one as extdns writes them.
#[derive(Debug)]
pub struct AsRead<K, V> {
    sets: Mutex<HashMap<K, V>>,
}

impl<K: Eq + Hash, V: Clone> AsRead<K, V> {
    /// The sets a read returned.
    pub fn new(sets: HashMap<K, V>) -> Self {
        AsRead { sets: Mutex::new(sets) }
    }

    /// The set of `key` as read, unless extdns has written it since.
    pub fn get(&self, key: &K) -> Option<V> {
        self.sets
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .cloned()
    }

    /// Forgets the set of `key`: extdns is writing it, and what it holds from then on is what extdns wrote.
    pub fn forget(&self, key: &K) {
        self.sets.lock().unwrap_or_else(PoisonError::into_inner).remove(key);
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
}
