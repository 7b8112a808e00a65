//! The records of one read, found by name.
//!
//! With `--events` a read lives until the next full sync, every write folded into it, and each incremental
//! sync plans a few names against it. A pass over every record per sync made one change cost what the zone
//! holds (49 ms at 50,000 Services, docs/performance.md); with the positions of each name's records at hand,
//! picking a name's records and folding a write in cost what the change touches.

use std::hash::BuildHasher;
use std::ops::Deref;

use extdns_endpoint::name::name_key;
use extdns_endpoint::{Change, Endpoint, Labels};
use hashbrown::HashTable;

/// Records as read, with the positions of each name's records.
///
/// The order is the read's, except that a removed record's place goes to the last record (no shift of
/// everything after it); the records of one name always keep their order among themselves (where the plan
/// looks at order: the last current record of a type wins), exactly as removing in place and appending
/// would leave them.
#[derive(Default)]
pub struct RecordsByName {
    records: Vec<Endpoint>,
    /// Positions in `records`, hashed by their record's name key ([`name_key`]): a word and a control byte
    /// per record, no copy of any name.
    by_name: HashTable<usize>,
    hasher: foldhash::fast::RandomState,
}

impl RecordsByName {
    /// `records` with their names indexed.
    pub fn new(records: Vec<Endpoint>) -> Self {
        let hasher = foldhash::fast::RandomState::default();
        let mut by_name = HashTable::with_capacity(records.len());
        for (i, e) in records.iter().enumerate() {
            let h = hash_name(&hasher, &e.dns_name);
            by_name.insert_unique(h, i, |&p| hash_name(&hasher, &records[p].dns_name));
        }
        RecordsByName {
            records,
            by_name,
            hasher,
        }
    }

    /// The records, in their order.
    pub fn into_vec(self) -> Vec<Endpoint> {
        self.records
    }

    /// The records of the names with these keys ([`name_key`]), in their order here.
    pub fn of_names<'a>(&self, keys: impl IntoIterator<Item = &'a str>) -> Vec<&Endpoint> {
        let mut at: Vec<usize> = keys.into_iter().flat_map(|k| self.positions(k)).collect();
        at.sort_unstable();
        at.dedup();
        at.into_iter().map(|p| &self.records[p]).collect()
    }

    /// How many records there is room for without growing.
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.records.capacity()
    }

    /// Gives back what the read over-reserved: the records live until the next full sync.
    pub fn shrink_to_fit(&mut self) {
        self.records.shrink_to_fit();
        let (records, hasher) = (&self.records, &self.hasher);
        self.by_name.shrink_to_fit(|&p| hash_name(hasher, &records[p].dns_name));
    }

    /// The positions of the records whose name key is `key`.
    fn positions<'s>(&'s self, key: &'s str) -> impl Iterator<Item = usize> + 's {
        self.by_name
            .iter_hash(self.hasher.hash_one(key))
            .copied()
            .filter(move |&p| name_key(&self.records[p].dns_name) == key)
    }

    /// Folds applied changes in: the records a change replaced or deleted go (matched by name, type, set
    /// identifier and targets, every copy of one), the ones it created or updated to come in, with the
    /// labels `labels` gives (`None`: as planned) and the `resource` label their object renders, as a read
    /// would give them back. Costs what the changes touch, not what the read holds.
    ///
    /// Two passes over `applied` (every removal, then every addition) rather than the additions gathered
    /// on the side: on a first sync that would be a second copy of every record at the sync's peak.
    pub fn fold<'a, I>(&mut self, applied: I, mut labels: impl FnMut(usize, &Change) -> Option<Labels>)
    where
        I: Iterator<Item = &'a Change> + Clone,
    {
        let mut additions = 0;
        for change in applied.clone() {
            if let Some(old) = change.previous() {
                while let Some(p) = self.position_of(old) {
                    self.remove_at(p);
                }
            }
            additions += usize::from(!matches!(change, Change::Delete(_)));
        }
        // The records live until the next full sync: grow by a sixteenth, not by doubling, yet not by one
        // record per write either (each growth may copy them all).
        let (len, spare) = (self.records.len(), self.records.capacity() - self.records.len());
        if spare < additions {
            self.records.reserve_exact(additions.max(len / 16));
        }
        for (at, change) in applied.enumerate().filter(|(_, c)| !matches!(c, Change::Delete(_))) {
            let mut now = change.endpoint().clone();
            if let Some(labels) = labels(at, change) {
                now.labels = labels;
            }
            // As a read gives it back: the objects it came from belong to the desired side (and would
            // stay in the cache until the next full sync); the `resource` label they render stays.
            now.detach_objects();
            self.push(now);
        }
    }

    /// Where a record with `old`'s name (spelt alike), type, set identifier and targets is.
    fn position_of(&self, old: &Endpoint) -> Option<usize> {
        let key = name_key(&old.dns_name);
        self.positions(&key).find(|&p| {
            let x = &self.records[p];
            x.dns_name == old.dns_name
                && x.record_type == old.record_type
                && x.set_identifier == old.set_identifier
                && x.targets.same(&old.targets)
        })
    }

    fn push(&mut self, e: Endpoint) {
        let (records, hasher) = (&self.records, &self.hasher);
        let h = hash_name(hasher, &e.dns_name);
        self.by_name
            .insert_unique(h, records.len(), |&p| hash_name(hasher, &records[p].dns_name));
        self.records.push(e);
    }

    /// Removes the record at `at`: the last record takes its place, then moves up behind the records of its
    /// name that now come after it, so that every name's records keep their order.
    fn remove_at(&mut self, at: usize) {
        let last = self.records.len() - 1;
        let h = hash_name(&self.hasher, &self.records[at].dns_name);
        if let Ok(entry) = self.by_name.find_entry(h, |&p| p == at) {
            entry.remove();
        }
        self.records.swap_remove(at);
        if at == last {
            return;
        }
        let h = hash_name(&self.hasher, &self.records[at].dns_name);
        if let Some(p) = self.by_name.find_mut(h, |&p| p == last) {
            *p = at;
        }
        let key = name_key(&self.records[at].dns_name).into_owned();
        let mut later: Vec<usize> = self.positions(&key).filter(|&p| p > at).collect();
        later.sort_unstable();
        // The positions of the name stay the same set; only its records move along them.
        let mut moved = at;
        for p in later {
            self.records.swap(moved, p);
            moved = p;
        }
    }
}

fn hash_name(hasher: &foldhash::fast::RandomState, name: &str) -> u64 {
    hasher.hash_one(name_key(name).as_ref())
}

impl Deref for RecordsByName {
    type Target = [Endpoint];

    fn deref(&self) -> &[Endpoint] {
        &self.records
    }
}

impl From<Vec<Endpoint>> for RecordsByName {
    fn from(records: Vec<Endpoint>) -> Self {
        RecordsByName::new(records)
    }
}

impl std::fmt::Debug for RecordsByName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(&self.records).finish()
    }
}

#[cfg(test)]
mod tests {
    use extdns_endpoint::RecordType;

    use super::*;

    fn a(name: &str, target: &str) -> Endpoint {
        Endpoint::new(name, RecordType::A, [target])
    }

    fn texts<'a>(records: impl IntoIterator<Item = &'a Endpoint>) -> Vec<String> {
        records
            .into_iter()
            .map(|e| format!("{} {} {}", e.dns_name, e.record_type, e.targets.join(",")))
            .collect()
    }

    /// What the fold did before the index: one pass removing every matching record in place, then the new
    /// ones appended.
    fn fold_by_scan(records: &mut Vec<Endpoint>, changes: &[Change]) {
        let gone: Vec<&Endpoint> = changes.iter().filter_map(Change::previous).collect();
        records.retain(|x| {
            !gone.iter().any(|o| {
                o.dns_name == x.dns_name
                    && o.record_type == x.record_type
                    && o.set_identifier == x.set_identifier
                    && o.targets.same(&x.targets)
            })
        });
        for c in changes.iter().filter(|c| !matches!(c, Change::Delete(_))) {
            let mut e = c.endpoint().clone();
            e.detach_objects();
            records.push(e);
        }
    }

    /// Every name's records in their order, as the scan over all of them gives them.
    fn by_name(records: &[Endpoint]) -> std::collections::BTreeMap<String, Vec<String>> {
        let mut m: std::collections::BTreeMap<String, Vec<String>> = std::collections::BTreeMap::new();
        for e in records {
            m.entry(name_key(&e.dns_name).into_owned())
                .or_default()
                .extend(texts([e]));
        }
        m
    }

    #[test]
    fn a_names_records_are_found_in_their_order() {
        let records = RecordsByName::new(vec![
            a("x.example.org", "192.0.2.1"),
            a("y.example.org", "192.0.2.2"),
            Endpoint::new("X.example.org.", RecordType::Aaaa, ["2001:db8::1"]),
            a("z.example.org", "192.0.2.3"),
        ]);
        assert_eq!(
            texts(records.of_names(["x.example.org", "z.example.org", "nowhere.example.org"])),
            [
                "x.example.org A 192.0.2.1",
                "X.example.org AAAA 2001:db8::1",
                "z.example.org A 192.0.2.3"
            ]
        );
        assert!(records.of_names(["example.org"]).is_empty());
    }

    #[test]
    fn folding_keeps_each_names_records_as_a_scan_would() {
        // Names with several records (one of them duplicated, as some providers return), so removals
        // move records of a name past each other unless the order is kept.
        let mut scan: Vec<Endpoint> = (0..40)
            .map(|i| a(&format!("n{}.example.org", i % 7), &format!("192.0.2.{i}")))
            .collect();
        scan.push(a("n3.example.org", "192.0.2.3"));
        let mut records = RecordsByName::new(scan.clone());
        let rounds: Vec<Vec<Change>> = vec![
            vec![Change::Delete(a("n3.example.org", "192.0.2.3"))],
            vec![
                Change::Delete(a("n0.example.org", "192.0.2.0")),
                Change::update(a("n1.example.org", "192.0.2.8"), a("n1.example.org", "198.51.100.8")),
                Change::Create(a("new.example.org", "198.51.100.1")),
            ],
            vec![Change::Delete(a("n6.example.org", "192.0.2.39"))],
            (0..40)
                .step_by(3)
                .map(|i| Change::Delete(a(&format!("n{}.example.org", i % 7), &format!("192.0.2.{i}"))))
                .collect(),
            vec![Change::Delete(a("absent.example.org", "192.0.2.1"))],
        ];
        for changes in rounds {
            records.fold(changes.iter(), |_, _| None);
            fold_by_scan(&mut scan, &changes);
            assert_eq!(by_name(&records), by_name(&scan));
            let mut all: Vec<String> = texts(records.iter());
            let mut want = texts(scan.iter());
            all.sort();
            want.sort();
            assert_eq!(all, want);
            for key in by_name(&scan).keys() {
                assert_eq!(texts(records.of_names([key.as_str()])), by_name(&scan)[key], "{key}");
            }
        }
        assert_eq!(records.by_name.len(), records.len(), "one position per record");
    }
}
