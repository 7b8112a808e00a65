//! A DNSEndpoint's `spec.endpoints`, packed.
//!
//! The manifest and live stores keep every entry between syncs: with the built-in DNS server reading
//! DNSEndpoints, one entry per served record (issue 49: the whole process's memory per record). So an
//! object's entries are kept together, not one struct each: every name and target in one string, where
//! each ends in one list, and a 16-byte row per entry indexing the few distinct record types and TTLs
//! the object uses and, for the few entries that set any, their rare fields. An entry is about its
//! text and 24 bytes (`tests/dnsendpoint_memory.rs`), where a struct per entry was 64 bytes and its text.
//! Readers borrow an entry ([`DnsEndpointEntry`]); [`EntriesBuilder`] is how a conversion makes them.

use std::collections::HashMap;

use crate::Sym;

/// `spec.endpoints`, in order, `null` entries included (skipped by the source, but they keep the indexes
/// its warnings name). Built with [`EntriesBuilder`], read with [`iter`](Self::iter) and
/// [`get`](Self::get). Two lists of the same entries built in the same order are equal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DnsEndpointEntries {
    /// Every entry's name, then each of its targets, entry after entry.
    text: Box<str>,
    /// Where each name and each target ends in `text`, in the same order.
    ends: Box<[u32]>,
    /// One per entry.
    rows: Box<[Row]>,
    /// The distinct record types of the entries, interned; rows index them.
    record_types: Box<[Sym]>,
    /// The distinct TTLs of the entries; rows index them.
    ttls: Box<[i64]>,
    /// The rare fields of the entries that set any.
    rare: Box<[RareFields]>,
}

/// One entry: indexes into its list's parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Row {
    /// Where the entry's ends start in `ends`; they stop where the next row's start.
    ends_from: u32,
    /// Index in `record_types`; [`NULL`] for a `null` entry.
    record_type: u32,
    /// Index in `ttls`.
    ttl: u32,
    /// Index in `rare`, plus one; zero when the entry sets none.
    rare: u32,
}

/// A row's type for a `null` entry.
const NULL: u32 = u32::MAX;

/// The fields of a DNSEndpoint entry most entries leave empty.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RareFields {
    /// `setIdentifier`.
    pub set_identifier: Box<str>,
    /// `labels`.
    pub labels: Box<[(String, String)]>,
    /// `providerSpecific`, as (name, value) pairs.
    pub provider_specific: Box<[(String, String)]>,
}

impl RareFields {
    fn is_empty(&self) -> bool {
        self.set_identifier.is_empty() && self.labels.is_empty() && self.provider_specific.is_empty()
    }
}

impl DnsEndpointEntries {
    /// How many entries, `null` ones included.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Entry `index`: `None` past the end, `Some(None)` for a `null` entry.
    pub fn get(&self, index: usize) -> Option<Option<DnsEndpointEntry<'_>>> {
        self.rows.get(index).map(|row| self.entry(index, row))
    }

    /// Every entry in order, `None` for a `null` one.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Option<DnsEndpointEntry<'_>>> + '_ {
        self.rows.iter().enumerate().map(|(index, row)| self.entry(index, row))
    }

    fn entry(&self, index: usize, row: &Row) -> Option<DnsEndpointEntry<'_>> {
        if row.record_type == NULL {
            return None;
        }
        let from = row.ends_from as usize;
        let to = self
            .rows
            .get(index + 1)
            .map_or(self.ends.len(), |next| next.ends_from as usize);
        let start = from
            .checked_sub(1)
            .and_then(|last| self.ends.get(last))
            .map_or(0, |&end| end as usize);
        Some(DnsEndpointEntry {
            entries: self,
            row: *row,
            start,
            ends: self.ends.get(from..to).unwrap_or_default(),
        })
    }
}

/// One entry of a [`DnsEndpointEntries`], borrowed; absent fields are empty (zero for the TTL).
#[derive(Debug, Clone, Copy)]
pub struct DnsEndpointEntry<'a> {
    entries: &'a DnsEndpointEntries,
    row: Row,
    /// Where the entry's text starts.
    start: usize,
    /// Where its name and each of its targets end.
    ends: &'a [u32],
}

impl<'a> DnsEndpointEntry<'a> {
    /// `dnsName`.
    pub fn dns_name(&self) -> &'a str {
        let end = self.ends.first().map_or(self.start, |&e| e as usize);
        self.entries.text.get(self.start..end).unwrap_or_default()
    }

    /// `targets`, in order.
    pub fn targets(&self) -> EntryTargets<'a> {
        let (name, targets) = self.ends.split_first().unwrap_or((&0, &[]));
        EntryTargets {
            text: &self.entries.text,
            from: *name as usize,
            ends: targets.iter(),
        }
    }

    /// `recordType`, as written.
    pub fn record_type(&self) -> &'a str {
        self.entries
            .record_types
            .get(self.row.record_type as usize)
            .map_or("", Sym::as_str)
    }

    /// `recordTTL` (zero when absent).
    pub fn record_ttl(&self) -> i64 {
        self.entries
            .ttls
            .get(self.row.ttl as usize)
            .copied()
            .unwrap_or_default()
    }

    /// `setIdentifier` (empty when absent).
    pub fn set_identifier(&self) -> &'a str {
        self.rare().map_or("", |r| &r.set_identifier)
    }

    /// `labels`.
    pub fn labels(&self) -> &'a [(String, String)] {
        self.rare().map_or(&[], |r| &r.labels)
    }

    /// `providerSpecific`, as (name, value) pairs.
    pub fn provider_specific(&self) -> &'a [(String, String)] {
        self.rare().map_or(&[], |r| &r.provider_specific)
    }

    fn rare(&self) -> Option<&'a RareFields> {
        let index = self.row.rare.checked_sub(1)?;
        self.entries.rare.get(index as usize)
    }
}

/// A [`DnsEndpointEntry`]'s targets, in order.
#[derive(Debug, Clone)]
pub struct EntryTargets<'a> {
    text: &'a str,
    /// Where the next target starts.
    from: usize,
    ends: std::slice::Iter<'a, u32>,
}

impl<'a> Iterator for EntryTargets<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let end = *self.ends.next()? as usize;
        let target = self.text.get(self.from..end).unwrap_or_default();
        self.from = end;
        Some(target)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.ends.size_hint()
    }
}

impl ExactSizeIterator for EntryTargets<'_> {}

/// Makes a [`DnsEndpointEntries`] one entry at a time.
#[derive(Debug, Default)]
pub struct EntriesBuilder {
    text: String,
    ends: Vec<u32>,
    rows: Vec<Row>,
    record_types: Vec<Sym>,
    ttls: Vec<i64>,
    rare: Vec<RareFields>,
    /// Each palette value's index, so an object of many entries finds it without a scan.
    type_index: HashMap<Sym, u32>,
    ttl_index: HashMap<i64, u32>,
}

impl EntriesBuilder {
    /// A builder with room for `entries` entries.
    pub fn with_capacity(entries: usize) -> Self {
        EntriesBuilder {
            rows: Vec::with_capacity(entries),
            ends: Vec::with_capacity(entries * 2),
            ..EntriesBuilder::default()
        }
    }

    /// Adds a `null` entry.
    pub fn push_null(&mut self) {
        let ends_from = self.ends_len();
        self.rows.push(Row {
            ends_from,
            record_type: NULL,
            ttl: 0,
            rare: 0,
        });
    }

    /// Adds the entry of `dns_name`, `targets`, `record_type` and `record_ttl`, with its rare fields (none
    /// kept when all are empty).
    ///
    /// An object's names and targets are addressed with 32 bits: an entry that would take them past 4 GiB
    /// (no API server or manifest file holds such an object) is kept as a `null` entry, with a warning.
    pub fn push<'t>(
        &mut self,
        dns_name: &str,
        targets: impl IntoIterator<Item = &'t str>,
        record_type: Sym,
        record_ttl: i64,
        rare: RareFields,
    ) {
        let (text_len, ends_len, index) = (self.text.len(), self.ends.len(), self.rows.len());
        let ends_from = self.ends_len();
        let mut fits = self.push_part(dns_name);
        for target in targets {
            fits &= self.push_part(target);
        }
        if !fits || u32::try_from(self.ends.len()).is_err() {
            self.text.truncate(text_len);
            self.ends.truncate(ends_len);
            tracing::warn!("spec.endpoints[{index}] is kept as null: its object's names and targets pass 4 GiB");
            self.push_null();
            return;
        }
        let record_type = palette(&mut self.record_types, &mut self.type_index, record_type);
        let ttl = palette(&mut self.ttls, &mut self.ttl_index, record_ttl);
        let rare = if rare.is_empty() {
            0
        } else {
            self.rare.push(rare);
            u32::try_from(self.rare.len()).unwrap_or(0)
        };
        self.rows.push(Row {
            ends_from,
            record_type,
            ttl,
            rare,
        });
    }

    /// The entries, each part cut to its length.
    pub fn finish(self) -> DnsEndpointEntries {
        DnsEndpointEntries {
            text: self.text.into_boxed_str(),
            ends: self.ends.into_boxed_slice(),
            rows: self.rows.into_boxed_slice(),
            record_types: self.record_types.into_boxed_slice(),
            ttls: self.ttls.into_boxed_slice(),
            rare: self.rare.into_boxed_slice(),
        }
    }

    /// Appends `part` and its end; whether its end fits in 32 bits.
    fn push_part(&mut self, part: &str) -> bool {
        self.text.push_str(part);
        match u32::try_from(self.text.len()) {
            Ok(end) => {
                self.ends.push(end);
                true
            }
            Err(_) => false,
        }
    }

    /// Where the next entry's ends start; ends past 32 bits are never kept ([`push`](Self::push)).
    fn ends_len(&self) -> u32 {
        u32::try_from(self.ends.len()).unwrap_or(u32::MAX)
    }
}

/// `value`'s index in `values`, added when new.
fn palette<T: Clone + Eq + std::hash::Hash>(values: &mut Vec<T>, index: &mut HashMap<T, u32>, value: T) -> u32 {
    *index.entry(value).or_insert_with_key(|value| {
        values.push(value.clone());
        u32::try_from(values.len() - 1).unwrap_or(0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets(e: DnsEndpointEntry<'_>) -> Vec<&str> {
        e.targets().collect()
    }

    #[test]
    fn each_entry_gives_back_its_fields_whatever_its_targets_and_null_entries_keep_their_place() {
        let mut b = EntriesBuilder::with_capacity(5);
        b.push("web.example.org", ["192.0.2.1"], "A".into(), 300, RareFields::default());
        b.push_null();
        b.push(
            "multi.example.org",
            ["192.0.2.1", "", "192.0.2.3"],
            "A".into(),
            60,
            RareFields {
                set_identifier: "eu".into(),
                ..RareFields::default()
            },
        );
        b.push("none.example.org", [], "TXT".into(), 300, RareFields::default());
        b.push("", [""], "".into(), 0, RareFields::default());
        let entries = b.finish();
        assert_eq!(entries.len(), 5);
        let all: Vec<_> = entries.iter().collect();
        let web = all[0].expect("an entry");
        assert_eq!(
            (web.dns_name(), targets(web), web.record_type(), web.record_ttl()),
            ("web.example.org", vec!["192.0.2.1"], "A", 300)
        );
        assert!(all[1].is_none(), "a null entry stays in its place");
        let multi = all[2].expect("an entry");
        assert_eq!(
            (
                multi.dns_name(),
                targets(multi),
                multi.record_ttl(),
                multi.set_identifier()
            ),
            ("multi.example.org", vec!["192.0.2.1", "", "192.0.2.3"], 60, "eu")
        );
        assert_eq!(multi.targets().len(), 3);
        let none = all[3].expect("an entry");
        assert_eq!(
            (none.dns_name(), none.targets().len(), none.record_type()),
            ("none.example.org", 0, "TXT")
        );
        let empty = all[4].expect("an entry");
        assert_eq!(
            (empty.dns_name(), targets(empty)),
            ("", vec![""]),
            "one empty target is not none"
        );
        assert_eq!(
            (web.set_identifier(), web.labels(), web.provider_specific()),
            ("", &[][..], &[][..])
        );
        assert!(entries.get(1).is_some_and(|e| e.is_none()) && entries.get(5).is_none());
        assert_eq!(
            &*entries.record_types,
            &[Sym::from("A"), "TXT".into(), "".into()],
            "each type once"
        );
        assert_eq!(&*entries.ttls, &[300, 60, 0], "each TTL once");
    }

    #[test]
    fn the_same_entries_make_equal_lists_and_an_empty_rare_field_is_none() {
        let build = |set_identifier: &str| {
            let mut b = EntriesBuilder::default();
            b.push(
                "web.example.org",
                ["192.0.2.1"],
                "A".into(),
                0,
                RareFields {
                    set_identifier: set_identifier.into(),
                    ..RareFields::default()
                },
            );
            b.finish()
        };
        assert_eq!(build(""), build(""));
        assert!(build("").rare.is_empty(), "nothing kept for empty rare fields");
        assert_ne!(build(""), build("eu"));
        assert_eq!(EntriesBuilder::default().finish(), DnsEndpointEntries::default());
    }
}
