//! What the store needs from a view ([`Item`]), in a module of its own below both: the views implement it,
//! the store holds them, and the ingest path's trait ([`crate::watched`]) bounds each API type's view by it.
//! In the store's module, the store (which makes its indexes through the dispatch, [`crate::kinds`]) and
//! that trait would import each other.

use crate::index::Ref;
use crate::intern::Interner;
use crate::{ResourceKind, StrMap, Uid};

/// Where an index keeps an object's uid, beside its view rather than in it: the views are sized to their
/// allocator class (a shared Service fills 256 bytes exactly), and most objects never need one. `Option<Uid>`
/// for the kinds Events and status are written on, `()` (nothing at all) for the others: Pods, Nodes,
/// Namespaces.
pub trait UidSlot: Copy + Default + PartialEq + Send + Sync + 'static {
    /// The slot holding `uid`, or nothing for a kind that keeps none.
    fn keep(uid: Option<Uid>) -> Self;
    /// The uid kept, if any.
    fn uid(self) -> Option<Uid>;
}

impl UidSlot for () {
    fn keep(_: Option<Uid>) -> Self {}
    fn uid(self) -> Option<Uid> {
        None
    }
}

impl UidSlot for Option<Uid> {
    fn keep(uid: Option<Uid>) -> Self {
        uid
    }
    fn uid(self) -> Option<Uid> {
        self
    }
}

/// What an index needs from a view. Implemented beside each view ([`crate::view`]).
pub trait Item: PartialEq + Send + Sync + 'static {
    /// Where the index keeps the object's uid ([`UidSlot`]).
    type Uid: UidSlot;
    /// The kind of the object (a view may serve several kinds: routes).
    fn kind(&self) -> ResourceKind;
    fn name(&self) -> &str;
    /// Empty for cluster-scoped kinds.
    fn namespace(&self) -> &str {
        ""
    }
    /// The secondary key within the namespace, if the kind has one.
    fn group(&self) -> Option<&str> {
        None
    }
    /// What the object refers to, for the reverse index ([`crate::index`]).
    fn refs(&self) -> Vec<Ref> {
        Vec::new()
    }
    /// What a change of this object announces to the objects that select it by its content rather than by
    /// name (a Service's selector labels, which Istio Gateways select by): recorded in the change set for
    /// the object as it was and as it is ([`crate::ChangeSet::announced`]). Nothing by default.
    fn announces(&self) -> Vec<Ref> {
        Vec::new()
    }
    /// Where the fields templates read are kept, for the kinds templates run on.
    fn template_fields_slot(&mut self) -> Option<&mut Option<Box<str>>> {
        None
    }
    /// Shares the metadata's repeated strings (the namespace, label and annotation keys), for the kinds
    /// that keep it whole; nothing by default. Not a `&mut Meta` accessor, so the trait names no view.
    fn intern_meta(&mut self, _interner: &Interner) {}
    /// The labels selectors match, for the kind kept only while selected
    /// ([`crate::kinds::KindSpec::kept_while_selected_by`]).
    fn labels(&self) -> Option<&StrMap> {
        None
    }
    /// For the kind whose objects select a kind kept on demand: the selector of the objects this one
    /// reads; `None` when it reads none.
    fn selects(&self) -> Option<&StrMap> {
        None
    }
    /// Shares the view's repeated strings through `interner`: by default its metadata's (the namespace,
    /// label and annotation keys), then [`Item::intern_values`].
    fn intern(&mut self, interner: &Interner) {
        self.intern_meta(interner);
        self.intern_values(interner);
    }
    /// Shares the strings of the view's own fields that many objects repeat; nothing by default.
    fn intern_values(&mut self, _interner: &Interner) {}
    /// Whether this view differs from `old` only in the status extdns writes on the object itself (a
    /// DNSEndpoint's `observedGeneration` and conditions), which no source reads: the store keeps the new
    /// view, for the writer to see what it wrote, but records no change, so extdns's own status write
    /// does not wake a sync that would find nothing to do. False by default: the views of the other kinds
    /// keep none of extdns's status (a Service's condition, the annotation on Ingresses and routes are left
    /// out of them), so such a write leaves them equal.
    fn differs_only_in_own_status(&self, _old: &Self) -> bool {
        false
    }
}
