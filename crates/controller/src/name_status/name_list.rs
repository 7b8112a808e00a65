//! One object's outcomes as the book keeps them: the names' text in one string, a 16-byte row per name,
//! and each distinct state, type and set identifier once.
//!
//! The book keeps an outcome for every name asked for, for as long as it is asked for, and almost every
//! name of an object is in the same state (published in the same zone), of one of a few types, with no
//! set identifier: so a name costs its text and a row, not a 80-byte outcome with its name in an
//! allocation of its own (issue 49, the whole process's memory per record; `tests/name_status_memory.rs`).

use std::collections::HashMap;
use std::hash::Hash;

use extdns_endpoint::RecordType;
use serde::{Serialize, Serializer};

use super::{NameOutcome, NameState};

/// An object's outcomes, in the order they were given (the book gives them sorted by name, type and set
/// identifier). Made from outcomes ([`NameList::from`]), read as [`NameRef`]s.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NameList {
    /// Every name's text, one after the other.
    text: Box<str>,
    /// One a name: where its text ends, and its state, type and set identifier as indexes.
    rows: Box<[Row]>,
    states: Box<[NameState]>,
    types: Box<[RecordType]>,
    set_identifiers: Box<[Box<str>]>,
}

/// A name's place in its [`NameList`]. Indexes are `u32`: an object holds far fewer names, and far less
/// text, than four billion (a Kubernetes object is at most 1.5 MB).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Row {
    end: u32,
    state: u32,
    set_identifier: u32,
    record_type: u8,
}

/// One outcome of a [`NameList`], borrowed: what [`NameOutcome`] holds, in the same shape when serialized.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NameRef<'a> {
    /// See [`NameOutcome::name`].
    pub name: &'a str,
    /// See [`NameOutcome::record_type`].
    pub record_type: &'a RecordType,
    /// See [`NameOutcome::set_identifier`].
    #[serde(skip_serializing_if = "str::is_empty")]
    pub set_identifier: &'a str,
    /// See [`NameOutcome::state`].
    #[serde(flatten)]
    pub state: &'a NameState,
}

impl NameOutcome {
    /// The outcome, borrowed: what a list is made from.
    pub fn borrowed(&self) -> NameRef<'_> {
        NameRef {
            name: &self.name,
            record_type: &self.record_type,
            set_identifier: &self.set_identifier,
            state: &self.state,
        }
    }
}

impl NameRef<'_> {
    /// The outcome, owned.
    pub fn to_outcome(&self) -> NameOutcome {
        NameOutcome {
            name: self.name.into(),
            record_type: self.record_type.clone(),
            set_identifier: self.set_identifier.into(),
            state: self.state.clone(),
        }
    }
}

impl NameList {
    /// How many names.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The `i`th outcome.
    pub fn get(&self, i: usize) -> Option<NameRef<'_>> {
        let row = self.rows.get(i)?;
        let start = match i.checked_sub(1) {
            Some(before) => self.rows.get(before).map_or(0, |r| r.end as usize),
            None => 0,
        };
        Some(NameRef {
            name: self.text.get(start..row.end as usize).unwrap_or_default(),
            record_type: self.types.get(usize::from(row.record_type))?,
            set_identifier: self.set_identifiers.get(row.set_identifier as usize)?,
            state: self.states.get(row.state as usize)?,
        })
    }

    /// Each outcome, in order.
    pub fn iter(&self) -> Iter<'_> {
        Iter { list: self, next: 0 }
    }

    /// Each distinct state, each once: an object's worst reason is among them.
    pub fn states(&self) -> &[NameState] {
        &self.states
    }

    /// The outcomes, owned: what a fold edits before making a list again.
    pub fn to_vec(&self) -> Vec<NameOutcome> {
        self.iter().map(|n| n.to_outcome()).collect()
    }
}

/// A [`NameList`]'s outcomes, in order.
#[derive(Debug, Clone)]
pub struct Iter<'a> {
    list: &'a NameList,
    next: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = NameRef<'a>;

    fn next(&mut self) -> Option<NameRef<'a>> {
        let item = self.list.get(self.next)?;
        self.next += 1;
        Some(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.list.len().saturating_sub(self.next);
        (left, Some(left))
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a NameList {
    type Item = NameRef<'a>;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// Each value once, in the order first seen, with its index; found by the borrowed value it was made
/// from, so only a new value is copied.
struct Distinct<'a, T: ?Sized, O> {
    values: Vec<O>,
    index: HashMap<&'a T, u32>,
}

impl<'a, T: ?Sized + Hash + Eq, O> Distinct<'a, T, O> {
    fn new() -> Self {
        Distinct {
            values: Vec::new(),
            index: HashMap::new(),
        }
    }

    /// The index of `value`, kept (as `own` makes it) if new; `None` past `u32` (see [`Row`]).
    fn index_of(&mut self, value: &'a T, own: impl FnOnce(&T) -> O) -> Option<u32> {
        if let Some(i) = self.index.get(value) {
            return Some(*i);
        }
        let i = u32::try_from(self.values.len()).ok()?;
        self.values.push(own(value));
        self.index.insert(value, i);
        Some(i)
    }
}

impl From<Vec<NameOutcome>> for NameList {
    fn from(outcomes: Vec<NameOutcome>) -> Self {
        outcomes.iter().map(NameOutcome::borrowed).collect()
    }
}

impl<'a> FromIterator<NameRef<'a>> for NameList {
    fn from_iter<I: IntoIterator<Item = NameRef<'a>>>(outcomes: I) -> Self {
        let mut text = String::new();
        let mut rows = Vec::new();
        let mut states = Distinct::new();
        let mut types = Distinct::new();
        let mut set_identifiers = Distinct::new();
        for o in outcomes {
            let (Some(end), Some(state), Some(set_identifier), Some(record_type)) = (
                u32::try_from(text.len() + o.name.len()).ok(),
                states.index_of(o.state, NameState::clone),
                set_identifiers.index_of(o.set_identifier, |s| Box::from(s)),
                types
                    .index_of(o.record_type, RecordType::clone)
                    .and_then(|t| u8::try_from(t).ok()),
            ) else {
                // Past what a row indexes (see `Row`): no object comes near it, and the book is a report.
                tracing::warn!(names = rows.len(), "an object's outcomes beyond this many are not kept");
                break;
            };
            text.push_str(o.name);
            rows.push(Row {
                end,
                state,
                set_identifier,
                record_type,
            });
        }
        NameList {
            text: text.into_boxed_str(),
            rows: rows.into_boxed_slice(),
            states: states.values.into_boxed_slice(),
            types: types.values.into_boxed_slice(),
            set_identifiers: set_identifiers.values.into_boxed_slice(),
        }
    }
}

impl Serialize for NameList {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::name_status::PublishedIn;

    fn outcome(name: &str, record_type: RecordType, set_identifier: &str, state: NameState) -> NameOutcome {
        NameOutcome {
            name: name.into(),
            record_type,
            set_identifier: set_identifier.into(),
            state,
        }
    }

    #[test]
    fn a_list_gives_back_every_outcome_in_order_keeping_each_distinct_value_once() {
        let published = NameState::Published {
            at: Arc::new(PublishedIn {
                provider: "dns-server".into(),
                zone: Some("example.org".into()),
            }),
        };
        let outcomes = vec![
            outcome("", RecordType::from(""), "", NameState::Pending),
            outcome("a.example.org", RecordType::A, "", published.clone()),
            outcome("a.example.org", RecordType::Txt, "eu", published.clone()),
            outcome("b.example.org", RecordType::Other("CAA".into()), "", NameState::Pending),
            outcome("c.example.org", RecordType::A, "us", published),
        ];
        let list = NameList::from(outcomes.clone());
        assert_eq!(list.len(), 5);
        assert_eq!(list.to_vec(), outcomes);
        assert_eq!(list.get(5), None);
        assert_eq!(list.states().len(), 2, "one published state, one pending");
        assert_eq!(list.types.len(), 4, "the empty type, A, TXT and CAA");
        assert_eq!(list.set_identifiers.len(), 3, "none, eu and us");
        let names: Vec<&str> = (&list).into_iter().map(|n| n.name).collect();
        assert_eq!(
            names,
            ["", "a.example.org", "a.example.org", "b.example.org", "c.example.org"]
        );
        assert_eq!(
            serde_json::to_value(&list).ok(),
            serde_json::to_value(&outcomes).ok(),
            "serialized as the outcomes are"
        );
        assert_eq!(NameList::from(Vec::new()), NameList::default());
    }
}
