use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// A shared, immutable string. Cheap to clone; the live informer interns the values many objects repeat
/// (namespaces, node names, label keys and values) so each is stored once.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sym(Arc<str>);

impl Sym {
    /// The shared text of `s`.
    pub fn new(s: &str) -> Self {
        Sym(Arc::from(s))
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The shared allocation, for interners.
    pub fn as_arc(&self) -> &Arc<str> {
        &self.0
    }
}

impl Default for Sym {
    fn default() -> Self {
        Sym::new("")
    }
}

impl From<Arc<str>> for Sym {
    fn from(a: Arc<str>) -> Self {
        Sym(a)
    }
}

impl From<&str> for Sym {
    fn from(s: &str) -> Self {
        Sym::new(s)
    }
}

impl From<String> for Sym {
    fn from(s: String) -> Self {
        Sym(Arc::from(s))
    }
}

impl Deref for Sym {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Sym {
    fn borrow(&self) -> &str {
        &self.0
    }
}

/// Compared with plain strings either way round, as the `String`s it replaces were.
macro_rules! eq_text {
    ($($text:ty),+) => {$(
        impl PartialEq<$text> for Sym {
            fn eq(&self, other: &$text) -> bool {
                self.as_str() == AsRef::<str>::as_ref(other)
            }
        }
        impl PartialEq<Sym> for $text {
            fn eq(&self, other: &Sym) -> bool {
                AsRef::<str>::as_ref(self) == other.as_str()
            }
        }
    )+};
}
eq_text!(str, &str, String);

impl fmt::Debug for Sym {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for Sym {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A small immutable string map (labels, annotations), sorted by key. A boxed slice costs 16 bytes when
/// empty and 32 bytes per entry, far less than a `BTreeMap<String, String>`, and lookups on the few entries
/// an object carries are a binary search.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct StrMap(Box<[(Sym, Sym)]>);

impl StrMap {
    /// The value of `key`; a lookup by binary search, as the map is sorted.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .binary_search_by(|(k, _)| k.as_str().cmp(key))
            .ok()
            .map(|i| self.0[i].1.as_str())
    }

    /// Whether `key` is present (a selector's `exists`).
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Pairs in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// How many pairs.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Build from symbols (e.g. interned ones). Later duplicates of a key win.
    pub fn from_syms(mut entries: Vec<(Sym, Sym)>) -> Self {
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        entries.reverse();
        entries.dedup_by(|a, b| a.0 == b.0);
        entries.reverse();
        StrMap(entries.into_boxed_slice())
    }

    /// The same map with each key replaced by `share(key)`: the store's interner shares them, as every
    /// object repeats the same few label and annotation keys (`external-dns.alpha.kubernetes.io/hostname`
    /// is 57 bytes a Service otherwise). A function rather than the interner, so this map stays below it.
    pub fn with_keys(&self, share: impl Fn(&str) -> Sym) -> StrMap {
        StrMap(self.0.iter().map(|(k, v)| (share(k), v.clone())).collect())
    }

    /// The heap bytes this map owns, not counting shared symbol contents.
    pub fn heap_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.0)
    }
}

impl<K: AsRef<str>, V: AsRef<str>> FromIterator<(K, V)> for StrMap {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        StrMap::from_syms(
            iter.into_iter()
                .map(|(k, v)| (Sym::new(k.as_ref()), Sym::new(v.as_ref())))
                .collect(),
        )
    }
}

impl fmt::Debug for StrMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strmap_looks_up_keys_and_keeps_the_last_duplicate() {
        let m: StrMap = [("b", "2"), ("a", "1"), ("b", "3")].into_iter().collect();
        assert_eq!(m.get("a"), Some("1"));
        assert_eq!(m.get("b"), Some("3"));
        assert_eq!(m.get("c"), None);
        assert_eq!(m.iter().map(|(k, _)| k).collect::<Vec<_>>(), vec!["a", "b"]);
    }
}
