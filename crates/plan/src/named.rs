//! Which object an updated record names: the one its ownership record already names, while that object
//! still publishes the record.
//!
//! Several objects can publish one name with the same targets; their endpoints are merged into one that
//! names the first object listed (`ObjectRefs::append`), and which object comes first depends on the order
//! the sources listed them, which a restart or another controller (external-dns, whose take-over extdns
//! is) need not repeat. Were an update (a TTL, a forced migration of the ownership record, a hand-over)
//! written from that order, the ownership record's `resource` label would move to another object without
//! any cause in the cluster: Events would go elsewhere, and the next controller would move it back.

use std::sync::Arc;

use extdns_endpoint::{Endpoint, ObjectKey, ObjectRefs, label};

/// Makes `new` (an update's new side) name the object `current`'s `resource` label names, when `new` was
/// made from that object too; otherwise leaves it as it is (the object gone, or none named).
pub(crate) fn keep_named_object(new: &mut Endpoint, current: &Endpoint) {
    let Some(held) = current.label(label::RESOURCE).filter(|r| !r.is_empty()) else {
        return;
    };
    let Some(named) = new.ref_objects.named() else {
        return;
    };
    if named.resource_label() == held {
        return;
    }
    let Some(holder) = new.ref_objects.iter().find(|k| k.resource_label() == held).cloned() else {
        return;
    };
    new.ref_objects = named_first(holder, &new.ref_objects);
}

/// `refs` with `holder` (one of them) named: first, the others after it in their order.
fn named_first(holder: Arc<ObjectKey>, refs: &ObjectRefs) -> ObjectRefs {
    let mut named = ObjectRefs::new();
    named.insert(holder);
    named.extend(refs.iter().cloned());
    named
}
