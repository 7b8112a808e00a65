//! The book's index from a name to the objects with an outcome at it, kept small: it has an entry per
//! name of the zone (10,000 and more), beside the outcomes, which already hold each name.
//!
//! A name is found by a 64-bit hash of its name key rather than by the key itself (a second copy of every
//! name), and an object by a shared key rather than a copy of its kind, namespace and name: an entry is
//! those two, 16 bytes, in one sorted list (a tree spent about 39 B an entry on its nodes' room and
//! their holders). Two names with one hash only make a lookup return an object more (the fold then finds
//! no outcome of it at the planned names and leaves it as it was); an object leaves every entry of its
//! names at once, so a shared entry never loses an object another of its names still needs.
//!
//! The list changes once per fold ([`ByName::apply`]): the entries of the objects that left or changed,
//! out, theirs as they are now, in, in one pass over the list, however many names the fold touched.

use std::hash::{DefaultHasher, Hasher};
use std::sync::Arc;

use extdns_endpoint::name::name_key;
use extdns_informer::ObjectKey;

/// (Name hash, an object with an outcome at a name of that hash), sorted and unique.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct ByName(Box<[Entry]>);

type Entry = (u64, Arc<ObjectKey>);

/// What one fold changes in the index: gathered while the fold replaces objects' names, applied at its
/// end.
#[derive(Debug, Default)]
pub(super) struct IndexEdits {
    /// The objects that left or changed: every entry of theirs goes.
    leave: Vec<Arc<ObjectKey>>,
    /// The entries of the objects as they are now.
    enter: Vec<Entry>,
}

impl IndexEdits {
    /// `object` has an outcome at `name`.
    pub(super) fn enter(&mut self, name: &str, object: &Arc<ObjectKey>) {
        self.enter.push((slot(name), Arc::clone(object)));
    }

    /// `object` leaves every name it had an outcome at.
    pub(super) fn leave(&mut self, object: Arc<ObjectKey>) {
        self.leave.push(object);
    }
}

/// The index's key of `name`: its name key's hash (a fixed-key hash, the same in every process).
fn slot(name: &str) -> u64 {
    let mut h = DefaultHasher::new();
    h.write(name_key(name).as_bytes());
    h.finish()
}

impl ByName {
    /// Applies one fold's edits: the leaving objects' entries out, then the entering ones in.
    pub(super) fn apply(&mut self, edits: IndexEdits) {
        let IndexEdits { mut leave, mut enter } = edits;
        if leave.is_empty() && enter.is_empty() {
            return;
        }
        leave.sort();
        enter.sort();
        enter.dedup();
        let kept = std::mem::take(&mut self.0)
            .into_vec()
            .into_iter()
            .filter(|(_, object)| leave.binary_search(object).is_err());
        let mut merged = Vec::with_capacity(kept.size_hint().1.unwrap_or_default() + enter.len());
        let (mut kept, mut enter) = (kept.peekable(), enter.into_iter().peekable());
        loop {
            let next = match (kept.peek(), enter.peek()) {
                (Some(k), Some(e)) if k < e => kept.next(),
                (Some(k), Some(e)) if k == e => {
                    kept.next();
                    enter.next()
                }
                (_, Some(_)) => enter.next(),
                (Some(_), None) => kept.next(),
                (None, None) => break,
            };
            merged.extend(next);
        }
        self.0 = merged.into_boxed_slice();
    }

    /// The objects with an outcome at `name` (and, rarely, at a name of the same hash).
    pub(super) fn get(&self, name: &str) -> impl Iterator<Item = &ObjectKey> {
        let slot = slot(name);
        let from = self.0.partition_point(|(s, _)| *s < slot);
        self.0[from..]
            .iter()
            .take_while(move |(s, _)| *s == slot)
            .map(|(_, object)| object.as_ref())
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

    /// Applies one fold's worth: `leave` out, then `enter` (name, object) in.
    fn fold(index: &mut ByName, leave: &[&str], enter: &[(&str, &str)]) {
        let mut edits = IndexEdits::default();
        for object in leave {
            edits.leave(key(object));
        }
        for (name, object) in enter {
            edits.enter(name, &key(object));
        }
        index.apply(edits);
    }

    #[test]
    fn objects_are_found_by_any_spelling_of_the_name_and_leave_it_one_by_one() {
        let mut index = ByName::default();
        fold(
            &mut index,
            &[],
            &[
                ("www.example.org", "b"),
                ("WWW.example.org.", "a"),
                ("www.example.org", "b"),
            ],
        );
        assert_eq!(names(&index, "www.Example.org"), ["a", "b"]);
        assert!(names(&index, "api.example.org").is_empty());
        fold(&mut index, &["b"], &[]);
        assert_eq!(names(&index, "www.example.org"), ["a"]);
        assert_eq!(index.0.len(), 1, "one entry an object and a name");
        fold(&mut index, &["a"], &[]);
        assert_eq!(index, ByName::default(), "no entry is left behind");
        assert_eq!(size_of::<Entry>(), 16, "an entry is a hash and a pointer");
    }

    #[test]
    fn an_object_that_leaves_and_enters_in_one_fold_keeps_its_new_names_alone() {
        let mut index = ByName::default();
        fold(
            &mut index,
            &[],
            &[("a.example.org", "x"), ("b.example.org", "x"), ("b.example.org", "y")],
        );
        // `x` changed: it asks for b and c now; `y` is untouched.
        fold(&mut index, &["x"], &[("b.example.org", "x"), ("c.example.org", "x")]);
        assert!(names(&index, "a.example.org").is_empty());
        assert_eq!(names(&index, "b.example.org"), ["x", "y"]);
        assert_eq!(names(&index, "c.example.org"), ["x"]);
        let mut fresh = ByName::default();
        fold(
            &mut fresh,
            &[],
            &[("b.example.org", "y"), ("c.example.org", "x"), ("b.example.org", "x")],
        );
        assert_eq!(index, fresh, "the same entries however they came");
    }
}
