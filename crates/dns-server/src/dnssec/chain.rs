//! The names of a signed zone's NSEC chain in canonical order (RFC 4034 §6.1), each with what it holds
//! (its signed NSEC), kept as each write changes them, so a denial is a lookup of the name at or before
//! the one asked for rather than a signature made per query.
//!
//! The set is copied with each snapshot a write makes, so it is kept in sorted chunks shared between
//! copies (as the zone's nodes are kept in shared shards, `crate::shards`): a copy costs a pointer per
//! [`CHUNK`] names, and a change copies the one chunk it touches.

use std::cmp::Ordering;
use std::sync::Arc;

use hickory_proto::rr::{LowerName, RecordType};

use crate::keyed_shards::Keyed;
use crate::name_key::WireName;

/// Names per chunk once split: a copy of a zone of N names costs N / 256 reference counts, a change
/// copies at most twice that many names.
const CHUNK: usize = 256;

/// What the chain is made from: the zone's names and the types of their sets.
pub(crate) trait ZoneNames {
    /// The types of the sets at `name`; empty when the name holds none (an empty non-terminal, or no
    /// node at all).
    fn types(&self, name: &LowerName) -> Vec<RecordType>;

    /// Whether `name` holds a set of `record_type`.
    fn has(&self, name: &LowerName, record_type: RecordType) -> bool;

    /// The names strictly below `name` that hold sets, in no order.
    fn below(&self, name: &LowerName) -> Vec<LowerName>;
}

/// A set of entries (names, or what a name holds) in the canonical order of their names, in chunks
/// shared between copies.
#[derive(Debug, Clone)]
pub(crate) struct OrderedNames<T = WireName> {
    /// Each chunk sorted and never empty; every name of a chunk sorts before every name of the next.
    chunks: Vec<Arc<Vec<T>>>,
    len: usize,
}

impl<T> Default for OrderedNames<T> {
    fn default() -> Self {
        OrderedNames {
            chunks: Vec::new(),
            len: 0,
        }
    }
}

impl<T: Keyed<Key = WireName> + Clone> OrderedNames<T> {
    /// The chunk where `name` is or would go, and its place there: the first chunk whose last name is
    /// not before `name`, or one past the last chunk when every name is before it.
    fn locate(&self, name: &WireName) -> (usize, Result<usize, usize>) {
        let chunk = self
            .chunks
            .partition_point(|c| c.last().is_some_and(|last| last.key() < name));
        match self.chunks.get(chunk) {
            Some(c) => (chunk, c.binary_search_by(|entry| entry.key().cmp(name))),
            None => (chunk, Err(0)),
        }
    }

    /// The entry at (`chunk`, `at`), reading on into the next chunks when `at` is past the end.
    fn at(&self, mut chunk: usize, mut at: usize) -> Option<&T> {
        loop {
            let c = self.chunks.get(chunk)?;
            if let Some(name) = c.get(at) {
                return Some(name);
            }
            at -= c.len();
            chunk += 1;
        }
    }

    /// Adds `entry`; whether its name was not there (an entry there already is kept).
    pub(crate) fn insert(&mut self, entry: T) -> bool {
        let (mut chunk, place) = self.locate(entry.key());
        let at = match place {
            Ok(_) => return false,
            Err(at) => at,
        };
        if chunk == self.chunks.len() {
            match self.chunks.last() {
                // Past every name: at the end of the last chunk.
                Some(last) => {
                    let at = last.len();
                    chunk -= 1;
                    self.insert_at(chunk, at, entry);
                }
                None => self.chunks.push(Arc::new(vec![entry])),
            }
        } else {
            self.insert_at(chunk, at, entry);
        }
        self.len += 1;
        true
    }

    fn insert_at(&mut self, chunk: usize, at: usize, entry: T) {
        let Some(c) = self.chunks.get_mut(chunk) else {
            return;
        };
        let c = Arc::make_mut(c);
        c.insert(at, entry);
        if c.len() >= 2 * CHUNK {
            let tail = c.split_off(CHUNK);
            self.chunks.insert(chunk + 1, Arc::new(tail));
        }
    }

    /// Cuts every chunk this copy alone holds to its length. A chunk grows by doubling as names come in,
    /// and a split leaves its first half the whole capacity, so without this a chain held about twice the
    /// bytes of its names (issue 49: 159 B a name for a name of 80). Called once a write's names are in
    /// ([`super::signer::ZoneSigning::sign_chain`]), so a chunk is cut at most once a write; a chunk
    /// shared with another copy is left as it is, as cutting it would copy it.
    pub(crate) fn shrink_unshared(&mut self) {
        for chunk in &mut self.chunks {
            if let Some(chunk) = Arc::get_mut(chunk) {
                chunk.shrink_to_fit();
            }
        }
    }

    /// Removes `name`; whether it was there.
    pub(crate) fn remove(&mut self, name: &WireName) -> bool {
        let (chunk, Ok(at)) = self.locate(name) else {
            return false;
        };
        let Some(c) = self.chunks.get_mut(chunk) else {
            return false;
        };
        let c = Arc::make_mut(c);
        c.remove(at);
        if c.is_empty() {
            self.chunks.remove(chunk);
        }
        self.len -= 1;
        true
    }

    pub(crate) fn contains(&self, name: &WireName) -> bool {
        self.locate(name).1.is_ok()
    }

    /// The entry of `name`.
    pub(crate) fn get(&self, name: &WireName) -> Option<&T> {
        let (chunk, Ok(at)) = self.locate(name) else {
            return None;
        };
        self.chunks.get(chunk)?.get(at)
    }

    /// The entry of `name`, to change in place: its chunk is copied first if another copy shares it.
    pub(crate) fn get_mut(&mut self, name: &WireName) -> Option<&mut T> {
        let (chunk, Ok(at)) = self.locate(name) else {
            return None;
        };
        Arc::make_mut(self.chunks.get_mut(chunk)?).get_mut(at)
    }

    /// The entry of the greatest name before `name`.
    pub(crate) fn before(&self, name: &WireName) -> Option<&T> {
        let (chunk, place) = self.locate(name);
        let at = match place {
            Ok(at) | Err(at) => at,
        };
        if at > 0 {
            return self.chunks.get(chunk)?.get(at - 1);
        }
        self.chunks.get(chunk.checked_sub(1)?)?.last()
    }

    /// The entry of `name` if held, else of the greatest name before it: the NSEC at or covering `name`.
    #[cfg(test)]
    pub(crate) fn at_or_before(&self, name: &WireName) -> Option<&T> {
        let (chunk, place) = self.locate(name);
        match place {
            Ok(at) => self.at(chunk, at),
            Err(_) => self.before(name),
        }
    }

    /// The entry of `name` (with `exact`) or of the greatest name at or before it (without), and the entry
    /// after that one: an NSEC and the name it links to, found by one search.
    pub(crate) fn with_next(&self, name: &WireName, exact: bool) -> Option<(&T, Option<&T>)> {
        let (chunk, place) = self.locate(name);
        let (chunk, at) = match place {
            Ok(at) => (chunk, at),
            Err(_) if exact => return None,
            Err(0) => {
                let before = chunk.checked_sub(1)?;
                (before, self.chunks.get(before)?.len().checked_sub(1)?)
            }
            Err(at) => (chunk, at - 1),
        };
        Some((self.at(chunk, at)?, self.at(chunk, at + 1)))
    }

    /// The entry of the least name after `name`.
    pub(crate) fn after(&self, name: &WireName) -> Option<&T> {
        let (chunk, place) = self.locate(name);
        match place {
            Ok(at) => self.at(chunk, at + 1),
            Err(at) => self.at(chunk, at),
        }
    }

    /// The names strictly below `name`: in canonical order they follow it directly.
    pub(crate) fn below(&self, name: &WireName) -> Vec<WireName> {
        let mut out = Vec::new();
        let mut current = name;
        while let Some(next) = self.after(current).map(Keyed::key) {
            if !next.is_within(name) {
                break;
            }
            out.push(next.clone());
            current = next;
        }
        out
    }

    /// Names held.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Whether `self` and `other` hold the same names: chunks they share are not walked.
    pub(crate) fn same_names(&self, other: &OrderedNames<T>) -> bool {
        if self.len != other.len {
            return false;
        }
        let shared = self.chunks.len() == other.chunks.len()
            && self.chunks.iter().zip(&other.chunks).all(|(a, b)| Arc::ptr_eq(a, b));
        shared || self.iter().map(Keyed::key).eq(other.iter().map(Keyed::key))
    }

    /// Every entry, in canonical order of their names.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        self.chunks.iter().flat_map(|c| c.iter())
    }

    /// The entries that differ between `old` (an earlier copy) and `self`, each as it is in `old` and in
    /// `self` (`None` where its name is absent), in canonical order. The two are walked side by side,
    /// and where both stand at the start of the same chunk it is passed whole: a write costs the chunks
    /// it copied, however large the chain.
    pub(crate) fn changes_since<'a>(&'a self, old: &'a OrderedNames<T>) -> Vec<(Option<&'a T>, Option<&'a T>)>
    where
        T: PartialEq,
    {
        let mut changes = Vec::new();
        let (mut new, mut was) = (Cursor::new(&self.chunks), Cursor::new(&old.chunks));
        loop {
            if new.at == 0
                && was.at == 0
                && let (Some(a), Some(b)) = (new.chunk(), was.chunk())
                && Arc::ptr_eq(a, b)
            {
                new.next_chunk();
                was.next_chunk();
                continue;
            }
            let order = match (new.entry(), was.entry()) {
                (None, None) => break,
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (Some(a), Some(b)) => a.key().cmp(b.key()),
            };
            match order {
                Ordering::Less => changes.push((None, new.take())),
                Ordering::Greater => changes.push((was.take(), None)),
                Ordering::Equal => {
                    let (a, b) = (new.take(), was.take());
                    if a != b {
                        changes.push((b, a));
                    }
                }
            }
        }
        changes
    }

    /// How many chunks `self` and `other` hold at the same address, and how many `self` holds.
    #[cfg(test)]
    pub(crate) fn shared_chunks(&self, other: &OrderedNames<T>) -> (usize, usize) {
        let shared = self
            .chunks
            .iter()
            .filter(|c| other.chunks.iter().any(|d| Arc::ptr_eq(c, d)))
            .count();
        (shared, self.chunks.len())
    }
}

/// A place in a chain's chunks: the chunk, and the entry in it.
struct Cursor<'a, T> {
    chunks: &'a [Arc<Vec<T>>],
    chunk: usize,
    at: usize,
}

impl<'a, T> Cursor<'a, T> {
    fn new(chunks: &'a [Arc<Vec<T>>]) -> Self {
        Cursor {
            chunks,
            chunk: 0,
            at: 0,
        }
    }

    fn chunk(&self) -> Option<&'a Arc<Vec<T>>> {
        self.chunks.get(self.chunk)
    }

    fn entry(&self) -> Option<&'a T> {
        self.chunk()?.get(self.at)
    }

    fn next_chunk(&mut self) {
        self.chunk += 1;
        self.at = 0;
    }

    /// The entry here, and the cursor moved past it.
    fn take(&mut self) -> Option<&'a T> {
        let entry = self.entry()?;
        self.at += 1;
        if self.chunk().is_none_or(|c| self.at >= c.len()) {
            self.next_chunk();
        }
        Some(entry)
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use hickory_proto::rr::Name;

    use super::*;

    fn lower(s: &str) -> WireName {
        WireName::of(&Name::from_str(s).expect("test name"))
    }

    #[test]
    fn names_keep_canonical_order_across_chunks_and_copies_share_what_they_did_not_change() {
        let mut names = OrderedNames::default();
        // Inserted in an order unlike the canonical one, enough for several chunks.
        for i in (0..2_000).rev() {
            assert!(names.insert(lower(&format!("h{}.example.org.", (i * 7_919) % 2_000))));
        }
        assert!(names.insert(lower("example.org.")));
        assert!(
            !names.insert(lower("H1.example.org.")),
            "case does not make another name"
        );
        assert_eq!(names.len(), 2_001);
        assert!(names.chunks.len() >= 4, "chunks of 256 to 511 names");
        let all: Vec<&WireName> = names.iter().collect();
        assert!(all.windows(2).all(|w| w[0] < w[1]), "canonical order");
        assert_eq!(all[0], &lower("example.org."));
        // Across chunk boundaries too, one search finds an entry and the one after it.
        for i in 0..2_000 {
            for asked in [format!("h{i}.example.org."), format!("h{i}-.example.org.")] {
                let asked = lower(&asked);
                let two_searches = names.at_or_before(&asked).map(|at| (at, names.after(at)));
                assert_eq!(names.with_next(&asked, false), two_searches, "{asked:?}");
            }
        }
        let copy = names.clone();
        assert!(names.remove(&lower("h10.example.org.")));
        assert!(!names.remove(&lower("h10.example.org.")));
        assert!(copy.contains(&lower("h10.example.org.")), "the copy keeps its own");
        let shared = names
            .chunks
            .iter()
            .filter(|c| copy.chunks.iter().any(|d| Arc::ptr_eq(c, d)))
            .count();
        assert_eq!(shared, names.chunks.len() - 1, "one chunk copied");
    }

    #[test]
    fn changes_since_an_earlier_copy_are_found_past_the_chunks_both_share() {
        let mut old = OrderedNames::default();
        for i in 0..3_000 {
            old.insert(lower(&format!("h{i}.example.org.")));
        }
        let mut new = old.clone();
        assert!(new.changes_since(&old).is_empty(), "a copy changed nothing");
        // A name added (enough of them to split a chunk), one removed, far apart.
        let added: Vec<WireName> = (0..600).map(|i| lower(&format!("h1500-{i}.example.org."))).collect();
        for name in &added {
            new.insert(name.clone());
        }
        new.remove(&lower("h7.example.org."));
        let changes = new.changes_since(&old);
        let removed: Vec<&WireName> = changes.iter().filter_map(|c| c.0.filter(|_| c.1.is_none())).collect();
        let mut came: Vec<&WireName> = changes.iter().filter_map(|c| c.1.filter(|_| c.0.is_none())).collect();
        assert_eq!(removed, [&lower("h7.example.org.")]);
        came.sort();
        let mut expected: Vec<&WireName> = added.iter().collect();
        expected.sort();
        assert_eq!(came, expected);
        assert_eq!(changes.len(), 601, "nothing else: {changes:?}");
        let (shared, all) = new.shared_chunks(&old);
        assert!(all - shared <= 4, "{shared} of {all} chunks shared");
        // And the other way: what `old` has that `new` has not.
        assert_eq!(old.changes_since(&new).len(), 601);
    }

    #[test]
    fn neighbours_and_descendants_are_found() {
        let mut names = OrderedNames::default();
        for n in [
            "example.org.",
            "a.example.org.",
            "x.b.example.org.",
            "y.b.example.org.",
            "c.example.org.",
        ] {
            names.insert(lower(n));
        }
        assert_eq!(names.before(&lower("b.example.org.")), Some(&lower("a.example.org.")));
        assert_eq!(
            names.at_or_before(&lower("a.example.org.")),
            Some(&lower("a.example.org."))
        );
        assert_eq!(
            names.at_or_before(&lower("zz.a.example.org.")),
            Some(&lower("a.example.org."))
        );
        assert_eq!(names.after(&lower("b.example.org.")), Some(&lower("x.b.example.org.")));
        assert_eq!(names.after(&lower("c.example.org.")), None);
        assert_eq!(names.before(&lower("example.org.")), None);
        assert_eq!(
            names.below(&lower("b.example.org.")),
            [lower("x.b.example.org."), lower("y.b.example.org.")]
        );
        assert!(names.below(&lower("c.example.org.")).is_empty());
        // One search finds what `get`/`at_or_before` and `after` find in two.
        for asked in [
            "example.org.",
            "a.example.org.",
            "b.example.org.",
            "zz.a.example.org.",
            "d.example.org.",
            "a.org.",
        ] {
            let asked = lower(asked);
            assert_eq!(
                names.with_next(&asked, false),
                names.at_or_before(&asked).map(|at| (at, names.after(at))),
                "{asked:?}"
            );
            assert_eq!(
                names.with_next(&asked, true),
                names.get(&asked).map(|at| (at, names.after(at))),
                "{asked:?}"
            );
        }
    }
}
