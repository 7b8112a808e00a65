//! The name book's heap per name (issue 49, the whole process's memory per record): the outcomes of the
//! serving benchmark's shape (100 DNSEndpoints of 100 names each, every name published), counted by a
//! counting allocator (this test binary's alone). The book keeps, per name, its text and a row of its
//! object's outcome list, and one index entry, which must not copy the name or the object's key again.

use std::alloc::System;
use std::collections::BTreeMap;

use cap::Cap;
use extdns_controller::{NameList, NameOutcome, NameState, NameStatuses, ObjectNames};
use extdns_endpoint::RecordType;
use extdns_informer::{ObjectKey, ResourceKind};

#[global_allocator]
static ALLOC: Cap<System> = Cap::new(System, usize::MAX);

const OBJECTS: usize = 100;
const NAMES_EACH: usize = 100;

/// The outcomes as a sync makes them: pushed one name at a time, the provider and zone one shared value,
/// then made into the lists the book keeps.
fn outcomes() -> BTreeMap<ObjectKey, ObjectNames> {
    let published = NameState::published("dns-server", Some("bench.example.org"));
    (0..OBJECTS)
        .map(|o| {
            let key = ObjectKey::new(ResourceKind::DnsEndpoint, "bench", &format!("records-{o}"));
            let mut names: Vec<NameOutcome> = Vec::new();
            for i in 0..NAMES_EACH {
                names.push(NameOutcome {
                    name: format!("name-{}.bench.example.org", o * NAMES_EACH + i).into(),
                    record_type: RecordType::A,
                    set_identifier: Box::default(),
                    state: published.clone(),
                });
            }
            names.sort_by(|a, b| a.name.cmp(&b.name));
            let names = NameList::from(names);
            (key, ObjectNames { uid: None, names })
        })
        .collect()
}

#[test]
fn the_book_costs_its_names_text_a_row_and_a_small_index_entry_a_name() {
    let names = OBJECTS * NAMES_EACH;
    let before = ALLOC.allocated();
    let input = outcomes();
    let lists = ALLOC.allocated() - before;
    let book: NameStatuses = input.into_iter().collect();
    let with_book = ALLOC.allocated() - before;
    assert_eq!(book.len(), OBJECTS);
    assert_eq!(book.iter().map(|(_, n)| n.names.len()).sum::<usize>(), names);
    let per_name = with_book / names;
    let lists_per_name = lists / names;
    let index_per_name = with_book.saturating_sub(lists) / names;
    eprintln!("name book: {per_name} B a name: {lists_per_name} B its outcome, {index_per_name} B its index entry");
    // The book was about 246 B a name in all, its outcome's type, provider and zone a heap string each;
    // 175 B with the type as itself, the provider and zone shared, the vectors cut to their length and
    // the names boxed; 159 B once a state held one pointer or boxed string at most (an outcome 80 B and
    // its name's allocation). Now an object's outcomes are one string of their names and a 16-byte row
    // each (`NameList`): the name's 25 bytes and its row (45 B). The index entry, a hash and a shared key,
    // is 39 B since the key is held without a vector's room (about 50 B before; about 350 B with a copy of
    // the name and of the object's key per name). 84 B a name in all; 61 B once the index was one sorted
    // list of 16-byte entries (a hash and the shared key) rather than a tree.
    assert!(lists_per_name <= 50, "{lists_per_name} B a name's outcome");
    assert!(index_per_name <= 20, "{index_per_name} B a name's index entry");
    assert!(per_name <= 70, "{per_name} B a name in all");
    assert!(size_of::<NameState>() <= 24, "a state is {} B", size_of::<NameState>());
    drop(book);
}
