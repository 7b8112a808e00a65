//! The manifest store's heap per DNSEndpoint entry (issue 49, the whole process's memory per record): the
//! serving benchmark's shape (100 DNSEndpoints of 100 single-target entries each), loaded as the
//! controller's manifest view loads them and counted by a counting allocator (this test binary's alone).
//! The store keeps every entry between syncs, so with the built-in DNS server it is one of the costs of
//! each served record.

use std::alloc::System;
use std::fmt::Write as _;
use std::path::Path;

use cap::Cap;
use extdns_informer::manifests::{Format, LoadOptions, Loader};

#[global_allocator]
static ALLOC: Cap<System> = Cap::new(System, usize::MAX);

const OBJECTS: usize = 100;
const ENTRIES_EACH: usize = 100;

/// DNSEndpoints as the serving benchmark writes them: mostly A records, some AAAA, CNAME and TXT.
fn manifests() -> String {
    let mut out = String::new();
    for o in 0..OBJECTS {
        let _ = writeln!(
            out,
            "---\napiVersion: externaldns.k8s.io/v1alpha1\nkind: DNSEndpoint\nmetadata: {{name: zone-{o}, namespace: bench}}\nspec:\n  endpoints:"
        );
        for e in 0..ENTRIES_EACH {
            let i = o * ENTRIES_EACH + e;
            let (name, rtype, target) = match i % 4 {
                0 | 1 => (format!("web-{i}"), "A", format!("10.0.{}.{}", i / 250, i % 250)),
                2 => (format!("v6-{i}"), "AAAA", format!("2001:db8::{i:x}")),
                _ => (format!("www-{i}"), "CNAME", format!("web-{}.example.org", i - 2)),
            };
            let _ = writeln!(
                out,
                "  - {{dnsName: \"{name}.example.org\", recordType: {rtype}, recordTTL: 300, targets: [\"{target}\"]}}"
            );
        }
    }
    out
}

#[test]
fn a_dnsendpoint_entry_costs_its_strings_and_a_small_fixed_part() {
    let text = manifests();
    let before = ALLOC.allocated();
    let mut loader = Loader::lenient(LoadOptions::default());
    loader
        .add_str(&text, Path::new("records.yaml"), Format::Yaml)
        .expect("the manifests load");
    let loaded = loader.finish();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let entries = OBJECTS * ENTRIES_EACH;
    let per_entry = (ALLOC.allocated() - before) / entries;
    eprintln!("manifest store: {per_entry} B a DNSEndpoint entry");
    // The entries' own strings are about 35 B (name and target); an entry was 152 B inline, its type a
    // heap string and its targets a vector of strings (about 210 B in all), and is 104 B inline with the
    // type shared (about 150 B in all), and 56 B inline with the fields most entries leave empty boxed
    // together (117 B in all); with the name and targets in one string, not a string, a list and a
    // string, about 100 B in all and one allocation where there were three; about 62 B once an object's
    // entries were packed together (every name and target in one string, a 16-byte row and two 4-byte
    // ends an entry, the types and TTLs each kept once), where each entry was a 64-byte struct.
    assert!(per_entry <= 70, "{per_entry} B a DNSEndpoint entry");
    drop(loaded);
}
