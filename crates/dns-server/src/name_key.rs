//! A name asked about, lower-cased once into its wire form on the stack, and looked up by its suffixes
//! without making a name per label removed (issue 49: CPU per query).
//!
//! An answer walks from the name asked up to the apex, looking up each name on the way. With hickory's
//! names that walk lower-cased the name into a new one, made another per label removed, and compared the
//! zone's keys label by label through an iterator; a profile gave it a tenth of the answering thread.
//! Here a suffix is a slice of one buffer, and it hashes and compares as the zone's keys do
//! (`ShardKey` for [`LowerName`]), so it finds them where they are.

use std::hash::Hasher;

use hickory_proto::rr::{LowerName, Name, RecordType};

use crate::keyed_shards::{Keyed, Probe, ShardKey, hash_wire};

/// The longest name on the wire (RFC 1035 §2.3.4), its root byte included.
const MAX_WIRE: usize = 255;

/// A name's labels, lower-cased (ASCII, as DNS compares names), as they are on the wire without
/// compression: each label's length and then its bytes, ending with the root's zero.
#[derive(Clone, Copy)]
pub(crate) struct NameKey {
    wire: [u8; MAX_WIRE],
    len: u8,
    /// Where each label starts in `wire`; the root has none.
    starts: [u8; MAX_WIRE / 2],
    labels: u8,
}

impl std::fmt::Debug for NameKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("NameKey").field(&self.suffix(0)).finish()
    }
}

impl PartialEq for NameKey {
    fn eq(&self, other: &Self) -> bool {
        self.wire() == other.wire()
    }
}

impl Eq for NameKey {}

impl NameKey {
    /// No label and no root byte yet: what [`NameKey::push`] fills and [`NameKey::finish`] ends.
    fn empty() -> NameKey {
        NameKey {
            wire: [0; MAX_WIRE],
            len: 0,
            starts: [0; MAX_WIRE / 2],
            labels: 0,
        }
    }

    /// `name` lower-cased; `None` for a name too long for the wire, which hickory never makes.
    pub(crate) fn new(name: &Name) -> Option<NameKey> {
        NameKey::from_labels(name.iter())
    }

    /// The name of these labels (the root's left out), lower-cased; `None` when one is empty or longer
    /// than 63 bytes, or all are longer than a name on the wire.
    pub(crate) fn from_labels<'l>(labels: impl Iterator<Item = &'l [u8]>) -> Option<NameKey> {
        let mut key = NameKey::empty();
        for label in labels {
            key.push(label)?;
        }
        key.finish()
    }

    /// The name at the start of `wire` when it is spelt plainly: labels of letters, digits, `-` and `_`,
    /// at least one, no compression pointer; with the bytes it takes, its root's included. `None` for any
    /// other name (the general path reads those).
    pub(crate) fn read_plain(wire: &[u8]) -> Option<(NameKey, usize)> {
        let mut key = NameKey::empty();
        let mut at = 0;
        loop {
            let length = usize::from(*wire.get(at)?);
            if length == 0 {
                break;
            }
            // A length over 63 is a pointer or a reserved form: not plain.
            let label = wire.get(at + 1..at + 1 + length).filter(|_| length <= 63)?;
            if !label
                .iter()
                .all(|&b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            {
                return None;
            }
            key.push(label)?;
            at += 1 + length;
        }
        if key.labels == 0 {
            return None;
        }
        Some((key.finish()?, at + 1))
    }

    /// `*` followed by the labels of `suffix`: the wildcard that could stand for a name below it.
    pub(crate) fn wildcard_above(suffix: Labels<'_>) -> Option<NameKey> {
        NameKey::from_labels(std::iter::once(&b"*"[..]).chain(suffix.iter()))
    }

    /// Appends one label, lower-cased.
    fn push(&mut self, label: &[u8]) -> Option<()> {
        let at = usize::from(self.len);
        let length = u8::try_from(label.len()).ok().filter(|&l| (1..=63).contains(&l))?;
        let end = at + 1 + label.len();
        // The root byte must still fit after it.
        if end >= MAX_WIRE {
            return None;
        }
        *self.starts.get_mut(usize::from(self.labels))? = u8::try_from(at).ok()?;
        self.wire[at] = length;
        for (to, from) in self.wire.get_mut(at + 1..end)?.iter_mut().zip(label) {
            *to = from.to_ascii_lowercase();
        }
        self.len = u8::try_from(end).ok()?;
        self.labels += 1;
        Some(())
    }

    /// Ends the name with the root's zero byte.
    fn finish(mut self) -> Option<NameKey> {
        *self.wire.get_mut(usize::from(self.len))? = 0;
        self.len += 1;
        Some(self)
    }

    /// The name as it is on the wire, lower-cased, its root byte last.
    pub(crate) fn wire(&self) -> &[u8] {
        self.wire.get(..usize::from(self.len)).unwrap_or_default()
    }

    /// Labels, the root not counted (a leading `*` counted, unlike hickory's `num_labels`).
    pub(crate) fn labels(&self) -> usize {
        usize::from(self.labels)
    }

    /// The name without its first `skip` labels (the root once they are all skipped).
    pub(crate) fn suffix(&self, skip: usize) -> Labels<'_> {
        let wire = self.wire();
        let from = match self.starts.get(..self.labels()).and_then(|s| s.get(skip)) {
            Some(&start) => usize::from(start),
            None => wire.len().saturating_sub(1),
        };
        Labels {
            wire: wire.get(from..).unwrap_or_default(),
            labels: self.labels().saturating_sub(skip),
        }
    }

    /// Whether this name is `origin` or below it.
    pub(crate) fn is_within(&self, origin: &LowerName) -> bool {
        let count = origin.iter().len();
        count <= self.labels() && origin.is_fqdn() && self.suffix(self.labels() - count).iter().eq(origin.iter())
    }
}

/// A name held as [`NameKey`] holds it, borrowed: one of its suffixes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Labels<'a> {
    wire: &'a [u8],
    labels: usize,
}

impl std::fmt::Debug for Labels<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut text = String::new();
        for label in self.iter() {
            text.push_str(&String::from_utf8_lossy(label));
            text.push('.');
        }
        if text.is_empty() {
            text.push('.');
        }
        f.write_str(&text)
    }
}

impl<'a> Labels<'a> {
    /// Each label's bytes, the root left out.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &'a [u8]> + use<'a> {
        let mut rest = self.wire;
        std::iter::from_fn(move || {
            let (&length, tail) = rest.split_first()?;
            let label = tail.get(..usize::from(length)).filter(|_| length > 0)?;
            rest = tail.get(usize::from(length)..).unwrap_or_default();
            Some(label)
        })
    }

    /// The labels as they are on the wire, lower-cased, the root's zero byte last.
    pub(crate) fn bytes(&self) -> &'a [u8] {
        self.wire
    }

    /// Labels, the root not counted (a leading `*` counted).
    pub(crate) fn count(&self) -> usize {
        self.labels
    }

    /// Labels as hickory's `num_labels` counts them: a leading `*` not counted (RFC 4034 §3.1.3).
    pub(crate) fn hickory_count(&self) -> usize {
        match self.wire {
            [1, b'*', ..] => self.labels - 1,
            _ => self.labels,
        }
    }
}

/// The wire bytes a zone node keeps inside itself: a name of up to 38 bytes on the wire (about 33
/// letters and dots), which most names in a zone are. Longer ones go to the heap.
const INLINE: usize = 38;

/// A zone node's owner name as the zone finds it (issue 49: memory per record): lower-cased, in wire form,
/// kept inside the node when it is short. hickory's `LowerName` took 80 bytes per node and kept its labels
/// and their ends apart; this takes 40, and a lookup compares the bytes a query's [`Labels`] hold with one
/// comparison.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum WireName {
    /// `bytes[..len]`.
    Inline { len: u8, bytes: [u8; INLINE] },
    /// A name longer than [`INLINE`] bytes.
    Long(Box<[u8]>),
}

impl std::fmt::Debug for WireName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.labels(), f)
    }
}

impl WireName {
    /// `name`'s labels, lower-cased (ASCII), its root's zero byte last; names not ending at the root are
    /// taken as if they did, as the zone's names all do.
    pub(crate) fn of(name: &Name) -> WireName {
        match NameKey::new(name) {
            // Lower-cased on the stack: nothing allocated for a name kept inline.
            Some(key) => WireName::from_wire(key.wire()),
            // Longer than a name on the wire, which hickory never makes: kept whole all the same.
            None => {
                let mut wire = Vec::with_capacity(name.len() + 2);
                for label in name.iter() {
                    wire.push(u8::try_from(label.len()).unwrap_or(u8::MAX));
                    wire.extend(label.iter().map(u8::to_ascii_lowercase));
                }
                wire.push(0);
                WireName::from_wire(&wire)
            }
        }
    }

    fn from_wire(wire: &[u8]) -> WireName {
        match u8::try_from(wire.len()) {
            Ok(len) if wire.len() <= INLINE => {
                let mut bytes = [0; INLINE];
                bytes[..wire.len()].copy_from_slice(wire);
                WireName::Inline { len, bytes }
            }
            _ => WireName::Long(wire.into()),
        }
    }

    /// The name as it is on the wire, lower-cased, the root's zero byte last.
    pub(crate) fn wire(&self) -> &[u8] {
        match self {
            WireName::Inline { len, bytes } => bytes.get(..usize::from(*len)).unwrap_or_default(),
            WireName::Long(wire) => wire,
        }
    }

    /// The name's labels, as a query's suffixes hold them.
    pub(crate) fn labels(&self) -> Labels<'_> {
        let wire = self.wire();
        let mut labels = Labels { wire, labels: 0 };
        labels.labels = labels.iter().count();
        labels
    }

    /// The name as hickory holds it, lower-cased: what signatures are keyed by and records are owned by.
    pub(crate) fn to_lower_name(&self) -> LowerName {
        LowerName::new(&self.to_name())
    }

    /// The name as hickory holds it (lower-cased, ending at the root).
    pub(crate) fn to_name(&self) -> Name {
        // Each label came from a name, so hickory takes it back; the root stands in for one it would not.
        Name::from_labels(self.labels().iter()).unwrap_or_else(|_| Name::root())
    }

    /// The names above this one, nearest first, the root last.
    pub(crate) fn ancestors(&self) -> impl Iterator<Item = WireName> + '_ {
        let wire = self.wire();
        label_starts(wire)
            .skip(1)
            .map(move |start| WireName::from_wire(wire.get(start..).unwrap_or_default()))
    }

    /// `*` followed by this name: the wildcard that could stand for a name below it; `None` when that
    /// would be longer than a name on the wire.
    pub(crate) fn wildcard_child(&self) -> Option<WireName> {
        NameKey::wildcard_above(self.labels()).map(|key| WireName::from_wire(key.wire()))
    }

    /// Whether this name is `ancestor` or below it (on label boundaries).
    pub(crate) fn is_within(&self, ancestor: &WireName) -> bool {
        let (wire, tail) = (self.wire(), ancestor.wire());
        let Some(from) = wire.len().checked_sub(tail.len()) else {
            return false;
        };
        wire.get(from..) == Some(tail) && label_starts(wire).any(|start| start == from)
    }
}

/// Where each label of `wire` starts, the root's zero byte last.
fn label_starts(wire: &[u8]) -> impl Iterator<Item = usize> + '_ {
    let mut at = Some(0);
    std::iter::from_fn(move || {
        let start = at?;
        let length = usize::from(*wire.get(start)?);
        at = (length > 0).then_some(start + 1 + length);
        Some(start)
    })
}

/// DNSSEC's canonical order (RFC 4034 §6.1): label by label from the root, each label's bytes (lower-cased
/// already) compared as unsigned octets, a label that is another's prefix first, and a name before the
/// names below it. The order of a signed zone's NSEC chain.
impl Ord for WireName {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        let (a, b) = (self.wire(), other.wire());
        let ((starts_a, count_a), (starts_b, count_b)) = (starts_of(a), starts_of(b));
        let from_root_a = starts_a.get(..count_a).unwrap_or_default().iter().rev();
        let from_root_b = starts_b.get(..count_b).unwrap_or_default().iter().rev();
        for (&x, &y) in from_root_a.zip(from_root_b) {
            match label_at(a, x).cmp(label_at(b, y)) {
                std::cmp::Ordering::Equal => {}
                unequal => return unequal,
            }
        }
        count_a.cmp(&count_b)
    }
}

/// Where each label of `wire` starts (the root's zero byte among them, last), on the stack, and how many.
fn starts_of(wire: &[u8]) -> ([u8; MAX_WIRE / 2 + 1], usize) {
    let mut starts = [0u8; MAX_WIRE / 2 + 1];
    let mut count = 0;
    for (slot, start) in starts.iter_mut().zip(label_starts(wire)) {
        *slot = u8::try_from(start).unwrap_or(u8::MAX);
        count += 1;
    }
    (starts, count)
}

/// The bytes of the label starting at `start` of `wire` (empty for the root).
fn label_at(wire: &[u8], start: u8) -> &[u8] {
    let start = usize::from(start);
    let length = wire.get(start).map_or(0, |&l| usize::from(l));
    wire.get(start + 1..start + 1 + length).unwrap_or_default()
}

impl PartialOrd for WireName {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl ShardKey for WireName {
    fn hash_into(&self, state: &mut impl Hasher) {
        hash_wire(self.wire(), state);
    }

    fn same(&self, other: &Self) -> bool {
        self.wire() == other.wire()
    }
}

/// A name is its own key: a plain set of names (a signed zone's delegations).
impl Keyed for WireName {
    type Key = WireName;

    fn key(&self) -> &WireName {
        self
    }
}

impl Probe<WireName> for Labels<'_> {
    fn hash_into(&self, state: &mut impl Hasher) {
        hash_wire(self.wire, state);
    }

    fn is(&self, key: &WireName) -> bool {
        self.wire == key.wire()
    }
}

impl ShardKey for (WireName, RecordType) {
    fn hash_into(&self, state: &mut impl Hasher) {
        self.0.hash_into(state);
        state.write_u16(u16::from(self.1));
    }

    fn same(&self, other: &Self) -> bool {
        self.1 == other.1 && self.0.same(&other.0)
    }
}

/// A signature's key borrowed, owner and type: looked up without copying the owner.
impl Probe<(WireName, RecordType)> for (&WireName, RecordType) {
    fn hash_into(&self, state: &mut impl Hasher) {
        ShardKey::hash_into(self.0, state);
        state.write_u16(u16::from(self.1));
    }

    fn is(&self, key: &(WireName, RecordType)) -> bool {
        self.1 == key.1 && self.0.same(&key.0)
    }
}

#[cfg(test)]
mod tests {
    use std::hash::BuildHasher;

    use super::*;
    use crate::keyed_shards::ShardedSet;

    fn lower(s: &str) -> LowerName {
        LowerName::new(&Name::from_ascii(s).expect("test name"))
    }

    fn wire(s: &str) -> WireName {
        WireName::of(&Name::from_ascii(s).expect("test name"))
    }

    fn key(s: &str) -> NameKey {
        NameKey::new(&Name::from_ascii(s).expect("test name")).expect("fits")
    }

    /// What `feed` hashes, with a fixed seed.
    fn hash(feed: impl FnOnce(&mut foldhash::fast::FoldHasher<'static>)) -> u64 {
        let mut hasher = foldhash::fast::FixedState::with_seed(7).build_hasher();
        feed(&mut hasher);
        hasher.finish()
    }

    #[test]
    fn every_suffix_hashes_and_compares_as_the_lower_cased_name() {
        let asked = key("Web.Sub.EXAMPLE.org.");
        assert_eq!(asked.labels(), 4);
        for (skip, name) in ["web.sub.example.org.", "sub.example.org.", "example.org.", "org.", "."]
            .into_iter()
            .enumerate()
        {
            let suffix = asked.suffix(skip);
            let zone_key = wire(name);
            assert!(suffix.is(&zone_key), "{suffix:?} is {name}");
            assert_eq!(
                hash(|h| suffix.hash_into(h)),
                hash(|h| ShardKey::hash_into(&zone_key, h)),
                "{name} hashes alike"
            );
            assert_eq!(suffix.count(), 4 - skip);
            assert_eq!(format!("{suffix:?}"), name);
        }
        assert!(!asked.suffix(1).is(&wire("web.sub.example.org.")));
        assert!(
            !asked.suffix(0).is(&wire("websub.example.org.")),
            "labels split differently"
        );
    }

    #[test]
    fn a_wildcard_is_counted_as_hickory_counts_it_and_made_above_a_suffix() {
        let asked = key("a.b.example.org.");
        let wildcard = NameKey::wildcard_above(asked.suffix(2)).expect("fits");
        assert!(wildcard.suffix(0).is(&wire("*.example.org.")));
        assert_eq!(wildcard.suffix(0).count(), 3);
        assert_eq!(wildcard.suffix(0).hickory_count(), 2);
        assert_eq!(
            usize::from(Name::from_ascii("*.example.org.").expect("name").num_labels()),
            2
        );
        assert_eq!(
            key("*x.example.org.").suffix(0).hickory_count(),
            3,
            "only a label that is `*`"
        );
    }

    #[test]
    fn within_a_zone_on_label_boundaries_only() {
        let origin = lower("example.org.");
        assert!(key("www.Example.org.").is_within(&origin));
        assert!(key("example.org.").is_within(&origin));
        assert!(!key("badexample.org.").is_within(&origin));
        assert!(!key("org.").is_within(&origin));
        assert_eq!(key("WWW.example.org."), key("www.EXAMPLE.org."));
    }

    #[test]
    fn a_plain_name_is_read_from_the_wire_and_anything_else_is_not() {
        let (read, used) = NameKey::read_plain(b"\x03Web\x07example\x03org\x00\x00\x01").expect("plain");
        assert_eq!((read, used), (key("web.example.org."), 17));
        for odd in [
            &b"\x00"[..],                     // the root alone
            b"\x03web\xc0\x0c",               // a pointer
            b"\x03w*b\x07example\x03org\x00", // not a letter, digit, `-` or `_`
            b"\x03we b\x00",
            b"\x03web\x07exam", // cut short
            b"\x03web",
        ] {
            assert!(NameKey::read_plain(odd).is_none(), "{odd:?}");
        }
    }

    #[test]
    fn a_node_name_is_kept_as_a_query_spells_it_and_found_by_its_labels() {
        let long = format!("{}.example.org.", "a".repeat(60));
        for (spelt, inline) in [
            ("Web.EXAMPLE.org.", true),
            (".", true),
            ("*.example.org.", true),
            (long.as_str(), false),
        ] {
            let name = Name::from_ascii(spelt).expect("test name");
            let kept = WireName::of(&name);
            assert_eq!(matches!(kept, WireName::Inline { .. }), inline, "{spelt}");
            let asked = NameKey::new(&name).expect("fits");
            assert_eq!(kept.wire(), asked.wire(), "{spelt}: the query's bytes");
            assert_eq!(kept.labels().count(), asked.labels(), "{spelt}");
            assert!(asked.suffix(0).is(&kept), "{spelt}: found by the query's labels");
            assert_eq!(
                hash(|h| Probe::<WireName>::hash_into(&asked.suffix(0), h)),
                hash(|h| ShardKey::hash_into(&kept, h)),
                "{spelt}: hashed alike"
            );
            assert_eq!(kept.to_lower_name(), LowerName::new(&name), "{spelt}");
            assert!(kept.to_name().eq_case(&LowerName::new(&name)), "{spelt}: lower-cased");
        }
        let web = WireName::of(&Name::from_ascii("web.example.org.").expect("name"));
        assert!(!key("www.example.org.").suffix(0).is(&web));
        assert!(!key("web.example.org.").suffix(1).is(&web));
        assert_eq!(std::mem::size_of::<WireName>(), 40, "a node's key stays small");
    }

    /// RFC 4034 §6.1's example, shuffled: sorted as hickory sorts names (canonically), and into the
    /// RFC's own order.
    #[test]
    fn node_names_sort_in_canonical_order() {
        let canonical = [
            "example.",
            "a.example.",
            "yljkjljk.a.example.",
            "Z.a.example.",
            "zABC.a.EXAMPLE.",
            "z.example.",
            "\\001.z.example.",
            "*.z.example.",
            "\\200.z.example.",
        ];
        // Labels of any bytes: `\\DDD` is one byte.
        let name = |s: &str| {
            let labels: Vec<Vec<u8>> = s
                .trim_end_matches('.')
                .split('.')
                .map(|l| match l.strip_prefix('\\') {
                    Some(code) => vec![code.parse::<u8>().expect("a byte")],
                    None => l.as_bytes().to_vec(),
                })
                .collect();
            Name::from_labels(labels).expect("test name")
        };
        let mut shuffled: Vec<&str> = canonical.iter().rev().copied().collect();
        shuffled.swap(0, 4);
        let mut ours = shuffled.clone();
        ours.sort_by_key(|s| WireName::of(&name(s)));
        assert_eq!(ours, canonical);
        let mut hickory = shuffled;
        hickory.sort_by_key(|s| LowerName::new(&name(s)));
        assert_eq!(hickory, canonical);
    }

    #[test]
    fn a_node_name_lists_its_ancestors_and_makes_the_wildcard_below_it() {
        let above: Vec<WireName> = wire("a.B.example.org.").ancestors().collect();
        assert_eq!(
            above,
            [wire("b.example.org."), wire("example.org."), wire("org."), wire(".")]
        );
        assert_eq!(wire(".").ancestors().count(), 0);
        assert_eq!(wire("example.org.").wildcard_child(), Some(wire("*.example.org.")));
        let label = "a".repeat(63);
        let longest = wire(&format!("{label}.{label}.{label}.{}.", "b".repeat(61)));
        assert_eq!(longest.wildcard_child(), None, "no room for another label");
    }

    #[test]
    fn a_node_name_is_within_its_ancestors_on_label_boundaries() {
        let name = wire("www.Example.org.");
        assert!(name.is_within(&wire("example.org.")));
        assert!(name.is_within(&wire("www.example.org.")));
        assert!(name.is_within(&wire(".")));
        assert!(!name.is_within(&wire("ample.org.")), "not a label boundary");
        assert!(!name.is_within(&wire("a.www.example.org.")));
        assert!(!wire("example.org.").is_within(&name));
    }

    #[test]
    fn the_longest_name_fits_and_a_longer_one_is_refused() {
        let label = "a".repeat(63);
        let longest = format!("{label}.{label}.{label}.{}.", "b".repeat(61));
        let name = Name::from_ascii(&longest).expect("255 bytes on the wire");
        let fitted = NameKey::new(&name).expect("fits");
        assert_eq!(fitted.wire().len(), 255);
        assert!(NameKey::wildcard_above(fitted.suffix(0)).is_none());
    }

    /// A name key is its labels: the same labels are one key, whatever the spelling they were made from
    /// (a relative name taken as the absolute one, as the zone's names all are); labels that split the
    /// same letters differently are not.
    #[test]
    fn names_are_found_by_their_labels() {
        let name = |s: &str| WireName::of(&s.parse().expect("a name"));
        let mut map: ShardedSet<(WireName, u32)> = ShardedSet::new();
        for (i, n) in ["ab.c.", "a.bc.", "abc."].into_iter().enumerate() {
            assert_eq!(map.insert((name(n), i as u32)), None, "{n} is a key of its own");
        }
        assert_eq!(map.get(&name("AB.c.")).map(|(_, i)| *i), Some(0));
        assert_eq!(map.get(&name("a.BC.")).map(|(_, i)| *i), Some(1));
        assert_eq!(map.get(&name("abc.")).map(|(_, i)| *i), Some(2));
        assert_eq!(map.get(&name("ab.c")).map(|(_, i)| *i), Some(0));
        assert!(map.get(&name("a.b.c.")).is_none());
        let typed = (name("ab.c."), RecordType::A);
        assert!(typed.same(&(name("AB.C."), RecordType::A)));
        assert!(!typed.same(&(name("ab.c."), RecordType::AAAA)));
    }
}
