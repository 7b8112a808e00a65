use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::Sym;

/// Shares the strings thousands of Pods repeat (namespaces, node names, label keys and values) so each is
/// stored once.
///
/// Entries nobody else holds any more (the Pods that used them were deleted or changed) are purged whenever
/// the set has doubled since the last purge, so the interner stays within twice the live distinct strings
/// instead of growing with every value ever seen (Pod churn brings a stream of new `pod-template-hash`es).
#[derive(Debug, Default)]
pub struct Interner {
    inner: Mutex<Set>,
}

#[derive(Debug, Default)]
struct Set {
    strings: HashSet<Arc<str>>,
    purge_at: usize,
}

/// Below this size a purge is not worth the scan.
const MIN_PURGE_AT: usize = 1024;

impl Interner {
    /// An empty interner; the store holds one for its lifetime.
    pub fn new() -> Self {
        Self::default()
    }

    /// The shared symbol for `s`, creating it on first use.
    pub fn intern(&self, s: &str) -> Sym {
        let mut set = self.lock();
        if let Some(a) = set.strings.get(s) {
            return Sym::from(Arc::clone(a));
        }
        if set.strings.len() >= set.purge_at.max(MIN_PURGE_AT) {
            Self::purge_locked(&mut set);
            set.purge_at = set.strings.len() * 2;
        }
        let a: Arc<str> = Arc::from(s);
        set.strings.insert(Arc::clone(&a));
        Sym::from(a)
    }

    /// Drops the strings only the interner still holds; returns how many were dropped.
    pub fn purge(&self) -> usize {
        let mut set = self.lock();
        let dropped = Self::purge_locked(&mut set);
        set.purge_at = set.strings.len() * 2;
        dropped
    }

    /// The number of distinct strings held.
    pub fn len(&self) -> usize {
        self.lock().strings.len()
    }

    /// Whether nothing is interned yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The heap bytes the interner owns: the set's table and every string it holds (shared strings are
    /// counted here once, not in the objects that use them).
    pub fn heap_bytes(&self) -> usize {
        let set = self.lock();
        let table = set.strings.capacity() * (std::mem::size_of::<Arc<str>>() + 1);
        // An `Arc<str>` allocation is the two reference counts followed by the bytes.
        let strings: usize = set
            .strings
            .iter()
            .map(|s| 2 * std::mem::size_of::<usize>() + s.len())
            .sum();
        table + strings
    }

    fn purge_locked(set: &mut Set) -> usize {
        let before = set.strings.len();
        set.strings.retain(|s| Arc::strong_count(s) > 1);
        before - set.strings.len()
    }

    /// A poisoned lock only means another thread panicked while interning; the set itself is still
    /// consistent (every operation on it is a single insert or retain), so keep using it.
    fn lock(&self) -> MutexGuard<'_, Set> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_the_same_string_shares_one_allocation() {
        let i = Interner::new();
        let a = i.intern("kube-system");
        let b = i.intern("kube-system");
        assert!(Arc::ptr_eq(a.as_arc(), b.as_arc()));
        assert_eq!(i.len(), 1);
    }

    #[test]
    fn purge_drops_strings_no_object_holds() {
        let i = Interner::new();
        let kept = i.intern("kept");
        drop(i.intern("gone"));
        assert_eq!(i.purge(), 1);
        assert_eq!(i.len(), 1);
        assert_eq!(&*kept, "kept");
    }

    #[test]
    fn interner_does_not_grow_without_bound_under_churn() {
        let i = Interner::new();
        for n in 0..100_000 {
            // Every value is used once and dropped, like the hash label of a replaced Pod.
            drop(i.intern(&format!("hash-{n}")));
        }
        assert!(i.len() <= 2 * MIN_PURGE_AT, "interner holds {} strings", i.len());
    }
}
