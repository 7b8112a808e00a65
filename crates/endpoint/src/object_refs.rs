//! The objects an endpoint was made from ([`ObjectRefs`]), and whether its record names one of them.

use std::sync::Arc;

use extdns_object::ObjectKey;

/// The objects an endpoint was built from, by their one identity ([`ObjectKey`]), without repeats;
/// usually one. Events are written on them and the hold of failing objects' records looks for them.
///
/// Most records also *name* one of them: their `resource` label (`service/<ns>/<name>`) is rendered from
/// the first object added ([`ObjectRefs::named`], [`crate::Endpoint::resource`]) where the record is
/// written, and nowhere else. Some only *reference* their objects ([`ObjectRefs::reference_only`]):
/// external-dns writes the records of `--fqdn-target-template` and `--compatibility` without a `resource`
/// label while still attaching their Service for its Events, and a drop-in replacement has to write the
/// same ownership TXT values and resolve the same conflicts (such a record sorts first in the service
/// source's merge and keeps its missing label; `ResolveUpdate` compares a missing label as empty).
///
/// Merging follows external-dns's "the first endpoint keeps its labels" ([`ObjectRefs::append`]): the
/// first keeps naming what it named, or nothing, and the later one's objects are added after its own. The
/// service source's merge runs in `resource` order, the dedup in source order, so the object named is
/// theirs. Past the first, objects follow in key order, so two lists of the same objects naming the same
/// one compare equal.
///
/// The keys are shared: a source makes its object's key once and every endpoint of the object holds the
/// same `Arc`, so a Service with 20 names costs one key and 20 pointers, not 20 copies of its namespace and
/// name (a copy is three allocations: the key and its two strings). A boxed slice rather than a
/// `BTreeSet`: a `BTreeSet` allocates a node for eleven for the one object nearly every endpoint has, and
/// the desired index keeps every endpoint between syncs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ObjectRefs {
    keys: Box<[Arc<ObjectKey>]>,
    /// The record names none of the objects (external-dns writes it without a `resource` label). A flag
    /// rather than a label string: what is written follows from the objects, and costs nothing to keep.
    referenced_only: bool,
}

impl ObjectRefs {
    /// No objects; does not allocate. Objects added are named by the record (the first of them).
    pub fn new() -> Self {
        ObjectRefs::default()
    }

    /// Adds an object unless it is there already; says whether it was added. The first one added is the
    /// one a record naming its object names. Pass the `Arc` the source shares between its endpoints; a
    /// plain key is put in an `Arc` of its own.
    pub fn insert(&mut self, r: impl Into<Arc<ObjectKey>>) -> bool {
        let r = r.into();
        let at = match self.keys.split_first() {
            None => 0,
            Some((first, _)) if *first == r => return false,
            Some((_, others)) => match others.binary_search(&r) {
                Ok(_) => return false,
                Err(i) => i + 1,
            },
        };
        let mut keys = std::mem::take(&mut self.keys).into_vec();
        keys.reserve_exact(1);
        keys.insert(at, r);
        self.keys = keys.into_boxed_slice();
        true
    }

    /// Keeps the objects, those here and those added later, out of the record: it is written without a
    /// `resource` label, as external-dns writes the records of `--fqdn-target-template` and
    /// `--compatibility`, while the objects still get its Events.
    pub fn reference_only(&mut self) {
        self.referenced_only = true;
    }

    /// The object the record names, its `resource` label this key rendered: the first one added, unless
    /// the objects are only referenced ([`ObjectRefs::reference_only`]).
    pub fn named(&self) -> Option<&Arc<ObjectKey>> {
        if self.referenced_only { None } else { self.keys.first() }
    }

    /// Merges the objects of `other`, a later endpoint of the same record, in, leaving it empty. As
    /// external-dns's merges keep the first endpoint's labels, the record keeps naming what it named: its
    /// first object, or nothing when it only referenced its objects or had none (so had no `resource`).
    pub fn append(&mut self, other: &mut ObjectRefs) {
        if self.keys.is_empty() && !other.is_empty() {
            self.referenced_only = true;
        }
        self.extend(std::mem::take(other));
    }

    /// The named object first, then the others in key order.
    pub fn iter(&self) -> std::slice::Iter<'_, Arc<ObjectKey>> {
        self.keys.iter()
    }

    /// Whether `key` is one of the objects.
    pub fn contains(&self, key: &ObjectKey) -> bool {
        match self.keys.split_first() {
            None => false,
            Some((first, others)) => **first == *key || others.binary_search_by(|r| (**r).cmp(key)).is_ok(),
        }
    }

    /// How many distinct objects.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// True when the endpoint came from no known object (e.g. read back from a provider).
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Forgets every object and frees the storage. Whether the record names its object stays, so an
    /// object's key dropped and added back (the pipeline's index keeps an object's endpoints without their
    /// own key between syncs) leaves the record as it was.
    pub fn clear(&mut self) {
        self.keys = Box::default();
    }
}

impl<K: Into<Arc<ObjectKey>>> Extend<K> for ObjectRefs {
    fn extend<I: IntoIterator<Item = K>>(&mut self, iter: I) {
        for r in iter {
            self.insert(r);
        }
    }
}

impl<K: Into<Arc<ObjectKey>>> FromIterator<K> for ObjectRefs {
    fn from_iter<I: IntoIterator<Item = K>>(iter: I) -> Self {
        let mut refs = ObjectRefs::default();
        refs.extend(iter);
        refs
    }
}

impl IntoIterator for ObjectRefs {
    type Item = Arc<ObjectKey>;
    type IntoIter = std::vec::IntoIter<Arc<ObjectKey>>;

    fn into_iter(self) -> Self::IntoIter {
        self.keys.into_vec().into_iter()
    }
}

impl<'a> IntoIterator for &'a ObjectRefs {
    type Item = &'a Arc<ObjectKey>;
    type IntoIter = std::slice::Iter<'a, Arc<ObjectKey>>;

    fn into_iter(self) -> Self::IntoIter {
        self.keys.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(name: &str) -> Arc<ObjectKey> {
        Arc::new(ObjectKey::new(extdns_object::ResourceKind::Service, "default", name))
    }

    fn named(refs: &ObjectRefs) -> Option<&str> {
        refs.named().map(|k| k.name.as_str())
    }

    #[test]
    fn the_first_object_added_is_named_whatever_the_others_are() {
        let mut refs = ObjectRefs::new();
        for name in ["web", "api", "zzz", "api", "web"] {
            refs.insert(service(name));
        }
        let names: Vec<&str> = refs.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(
            names,
            ["web", "api", "zzz"],
            "the first, then the others in key order, once each"
        );
        assert_eq!(named(&refs), Some("web"));
        assert!(refs.contains(&service("web")) && refs.contains(&service("zzz")) && !refs.contains(&service("x")));
        let mut other: ObjectRefs = [service("api"), service("web")].into_iter().collect();
        refs.append(&mut other);
        assert_eq!(named(&refs), Some("web"), "a merge keeps the first");
        assert!(other.is_empty());
    }

    /// external-dns's merges keep the first endpoint's labels: a record written without a `resource` stays
    /// without one whatever it takes in, and one naming its object keeps naming it after taking in an
    /// unlabelled one.
    #[test]
    fn a_merge_keeps_what_the_first_names_or_that_it_names_nothing() {
        let mut template = ObjectRefs::new();
        template.reference_only();
        template.insert(service("z"));
        assert_eq!(named(&template), None);
        assert!(template.contains(&service("z")), "still referenced, for Events");
        let mut annotated: ObjectRefs = [service("a")].into_iter().collect();
        template.append(&mut annotated.clone());
        assert_eq!(named(&template), None);
        assert_eq!(template.len(), 2);

        let mut unlabelled = template.clone();
        annotated.append(&mut unlabelled);
        assert_eq!(named(&annotated), Some("a"));

        let mut of_no_object = ObjectRefs::new();
        of_no_object.append(&mut [service("a")].into_iter().collect());
        assert_eq!(named(&of_no_object), None, "it had no `resource` label either");
        assert_eq!(of_no_object.len(), 1);
    }

    #[test]
    fn a_key_dropped_and_added_back_leaves_the_record_naming_as_before() {
        let mut refs = ObjectRefs::new();
        refs.reference_only();
        refs.insert(service("web"));
        refs.clear();
        assert!(refs.is_empty());
        refs.insert(service("web"));
        assert_eq!(named(&refs), None);
    }
}
