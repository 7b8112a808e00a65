use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Labels of an endpoint: ownership information the registry persists (`owner`, `resource`, ...), sorted by
/// key, which is the order external-dns serialises them in TXT records.
///
/// A sorted boxed slice rather than a `BTreeMap`: an endpoint has two or three labels, and a `BTreeMap`
/// allocates a node for eleven entries on its first insert (about 550 bytes), which at 10,000 names held in
/// the incremental cache, the records read and the plan was the largest single share of extdns's heap
/// (docs/performance.md, "Where the heap goes at scale"). Lookups on three entries are as fast either way;
/// labels are set a few times and read many, so an insert may copy.
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Labels(Box<[(String, String)]>);

impl Labels {
    /// No labels; does not allocate.
    pub fn new() -> Self {
        Labels(Box::default())
    }

    fn position(&self, key: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| k.as_str().cmp(key))
    }

    /// The value of one label.
    pub fn get(&self, key: &str) -> Option<&String> {
        self.position(key).ok().map(|i| &self.0[i].1)
    }

    /// Whether the label is set (even to an empty value).
    pub fn contains_key(&self, key: &str) -> bool {
        self.position(key).is_ok()
    }

    /// Sets a label; returns the value it replaced.
    pub fn insert(&mut self, key: impl Into<String>, value: impl Into<String>) -> Option<String> {
        let key = key.into();
        match self.position(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, value.into())),
            Err(i) => {
                let mut entries = std::mem::take(&mut self.0).into_vec();
                entries.reserve_exact(1);
                entries.insert(i, (key, value.into()));
                self.0 = entries.into_boxed_slice();
                None
            }
        }
    }

    /// Removes a label; returns its value.
    pub fn remove(&mut self, key: &str) -> Option<String> {
        let i = self.position(key).ok()?;
        let mut entries = std::mem::take(&mut self.0).into_vec();
        let (_, value) = entries.remove(i);
        self.0 = entries.into_boxed_slice();
        Some(value)
    }

    /// True when no label is set.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// How many labels are set.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// In key order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&String, &String)> + ExactSizeIterator {
        self.0.iter().map(|(k, v)| (k, v))
    }

    /// Label keys in sorted order.
    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.0.iter().map(|(k, _)| k)
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for Labels {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut labels = Labels::new();
        labels.extend(iter);
        labels
    }
}

impl<K: Into<String>, V: Into<String>> Extend<(K, V)> for Labels {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

impl<K: Into<String>, V: Into<String>, const N: usize> From<[(K, V); N]> for Labels {
    fn from(pairs: [(K, V); N]) -> Self {
        pairs.into_iter().collect()
    }
}

impl IntoIterator for Labels {
    type Item = (String, String);
    type IntoIter = std::vec::IntoIter<(String, String)>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_vec().into_iter()
    }
}

impl<'a> IntoIterator for &'a Labels {
    type Item = (&'a String, &'a String);
    type IntoIter = std::iter::Map<std::slice::Iter<'a, (String, String)>, fn(&'a (String, String)) -> Self::Item>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(k, v)| (k, v))
    }
}

impl fmt::Debug for Labels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// A JSON object, as external-dns writes `labels`.
impl Serialize for Labels {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
}

impl<'de> Deserialize<'de> for Labels {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = BTreeMap::<String, String>::deserialize(d)?;
        Ok(Labels(map.into_iter().collect()))
    }
}

/// Label keys with a meaning in extdns, spelled as external-dns spells them.
pub mod label {
    /// The owner id (`--txt-owner-id`) of the controller that manages the record.
    pub const OWNER: &str = "owner";
    /// The object the record comes from: `service/<namespace>/<name>`, `httproute/<namespace>/<name>`, ...
    pub const RESOURCE: &str = "resource";
    /// On a registry TXT endpoint: the DNS name of the record it owns.
    pub const OWNED_RECORD: &str = "ownedRecord";
    /// The AES-GCM nonce of an encrypted TXT record; never serialised into the TXT value.
    pub const TXT_ENCRYPTION_NONCE: &str = "txt-encryption-nonce";
    /// Used by the AWS Cloud Map registry.
    pub const AWS_SD_DESCRIPTION: &str = "aws-sd-description";

    /// The owner id a record's owner hands it over to (`--txt-release-to-owner`): written in its ownership
    /// record so the adopting owner (`--txt-adopt-from-owner`) knows the release was declared.
    pub const RELEASED_TO: &str = "released-to";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_sorted_by_key_whatever_the_insert_order() {
        let mut l = Labels::new();
        assert_eq!(l.insert("resource", "service/a/b"), None);
        assert_eq!(l.insert("owner", "x"), None);
        assert_eq!(l.insert("ownedRecord", "web"), None);
        assert_eq!(l.insert("owner", "y"), Some("x".into()));
        let keys: Vec<&str> = l.keys().map(String::as_str).collect();
        assert_eq!(keys, ["ownedRecord", "owner", "resource"]);
        assert_eq!(l.get("owner").map(String::as_str), Some("y"));
        assert_eq!(l.remove("ownedRecord").as_deref(), Some("web"));
        assert!(!l.contains_key("ownedRecord") && l.len() == 2);
    }

    #[test]
    fn json_is_an_object_and_duplicate_keys_keep_the_last() {
        let l: Labels = serde_json::from_str(r#"{"b":"2","a":"1","b":"3"}"#).unwrap_or_default();
        assert_eq!(serde_json::to_string(&l).ok().as_deref(), Some(r#"{"a":"1","b":"3"}"#));
        assert_eq!(format!("{l:?}"), r#"{"a": "1", "b": "3"}"#);
    }
}
