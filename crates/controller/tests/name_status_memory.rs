//! The name book's heap per name (issue 49, the whole process's memory per record): the outcomes of the
//! serving benchmark's shape (100 DNSEndpoints of 100 names each, every name published), counted by a
//! counting allocator (this test binary's alone). The book keeps, per name, its outcome and one index
//! entry; the index entry must not copy the name or the object's key again.

use std::alloc::System;
use std::collections::BTreeMap;

use cap::Cap;
use extdns_controller::{NameOutcome, NameState, NameStatuses, ObjectNames};
use extdns_endpoint::RecordType;
use extdns_informer::{ObjectKey, ResourceKind};

#[global_allocator]
static ALLOC: Cap<System> = Cap::new(System, usize::MAX);

const OBJECTS: usize = 100;
const NAMES_EACH: usize = 100;

/// The outcomes as a sync makes them: pushed one name at a time (so each object's vector has grown by
/// doubling, as the sync's has), the provider and zone one shared value.
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
            (key, ObjectNames { uid: None, names })
        })
        .collect()
}

#[test]
fn the_book_costs_its_outcomes_and_a_small_index_entry_a_name() {
    let names = OBJECTS * NAMES_EACH;
    let before = ALLOC.allocated();
    let input = outcomes();
    // The outcomes as the book keeps them: their vectors cut to their length, as `put` cuts them, so
    // what is left beyond them is the index's alone.
    let unused: usize = input
        .values()
        .map(|o| (o.names.capacity() - o.names.len()) * size_of::<NameOutcome>())
        .sum();
    let outcomes_alone = ALLOC.allocated() - before - unused;
    let book: NameStatuses = input.into_iter().collect();
    let with_book = ALLOC.allocated() - before;
    assert_eq!(book.len(), OBJECTS);
    let per_name = with_book / names;
    let index_per_name = with_book.saturating_sub(outcomes_alone) / names;
    eprintln!("name book: {per_name} B a name, of which {index_per_name} B beyond the outcomes themselves");
    // The book was about 246 B a name in all, its outcome's type, provider and zone a heap string each;
    // with the type as itself and the provider and zone shared, about 210 B; 241 B with the outcomes
    // pushed one at a time as a sync pushes them (each object's vector up to twice its length). Now
    // the book cuts each object's vector to its length and an outcome's name and set identifier are
    // boxed strings: 175 B; 159 B once a state held one pointer or boxed string at most (an outcome 80 B,
    // not 96). The index entry, a hash and a shared key, about 50 B (it was about 350 B: a
    // copy of the name and of the object's key per name).
    assert!(index_per_name <= 80, "{index_per_name} B a name beyond the outcomes");
    assert!(per_name <= 170, "{per_name} B a name in all");
    assert!(size_of::<NameState>() <= 24, "a state is {} B", size_of::<NameState>());
    drop(book);
}
