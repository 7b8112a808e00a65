//! The endpoints of one object hold its key once: what attaching the key to 20 endpoints allocates, shared
//! against copied (the layout before keys were shared: a copy of the key and its two strings per endpoint).
//!
//! One test in its own binary, so nothing else allocates while it counts.

use std::alloc::System;
use std::sync::Arc;

use cap::Cap;
use extdns_endpoint::{Endpoint, RecordType};
use extdns_object::{ObjectKey, ResourceKind};

#[global_allocator]
static ALLOC: Cap<System> = Cap::new(System, usize::MAX);

/// Bytes `f` allocates (freed blocks included).
fn allocated_by(f: impl FnOnce()) -> usize {
    let before = ALLOC.total_allocated();
    f();
    ALLOC.total_allocated() - before
}

#[test]
fn twenty_endpoints_of_one_service_hold_its_key_once() {
    let key = ObjectKey::new(ResourceKind::Service, "team-a", "web");
    let endpoints: Vec<Endpoint> = (0..20)
        .map(|i| Endpoint::new(&format!("web-{i}.example.org"), RecordType::A, ["192.0.2.1"]))
        .collect();
    let (mut shared, mut copied) = (endpoints.clone(), endpoints);

    let shared_key = Arc::new(key.clone());
    let shared_bytes = allocated_by(|| {
        for e in &mut shared {
            e.ref_objects.insert(Arc::clone(&shared_key));
        }
    });
    let copied_bytes = allocated_by(|| {
        for e in &mut copied {
            e.ref_objects.insert(key.clone());
        }
    });

    // One pointer per endpoint, the key itself once.
    assert_eq!(Arc::strong_count(&shared_key), 21);
    assert!(
        shared
            .iter()
            .all(|e| e.ref_objects.iter().all(|k| Arc::ptr_eq(k, &shared_key)))
    );
    assert_eq!(shared_bytes, 20 * size_of::<Arc<ObjectKey>>());
    // A copy each: the key (in its own allocation) and its namespace and name, 20 times.
    let one_copy = 2 * size_of::<usize>() + size_of::<ObjectKey>() + "team-a".len() + "web".len();
    assert_eq!(copied_bytes, shared_bytes + 20 * one_copy);
    println!("attaching the key to 20 endpoints: {shared_bytes} bytes shared, {copied_bytes} bytes copied");
}
