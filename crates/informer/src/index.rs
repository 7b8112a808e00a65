//! Reverse indexes: from what a change names (a Pod, a Node, a Gateway, a ListenerSet) to the objects that
//! read it, kept up to date as objects are stored, so that a source asks for the few objects a change
//! affects instead of walking every object of a kind. Each view says what it refers to ([`Item::refs`]);
//! the store's index of its kind keeps `reference → objects` beside its lists. Sources stay stateless:
//! the index belongs to the view of the cluster, and sources only query it.

use std::collections::{BTreeSet, HashMap};

use crate::{ResourceKind, Sym};

/// What an object refers to, as the reverse index keys it. Kind-neutral: each view says what it refers to
/// (crate::view), so a kind stays named only in its table row, its view and its conversion.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Ref {
    /// An object (kind, namespace, name): the Pod an EndpointSlice endpoint's `targetRef` names, the
    /// Gateway or ListenerSet a route's `spec.parentRefs` or a ListenerSet's `spec.parentRef` names.
    Object(ResourceKind, Box<str>, Box<str>),
    /// A set of objects a view files itself under, by a name of the view's choosing.
    Group(&'static str),
    /// The same, within one namespace.
    GroupIn(&'static str, Box<str>),
}

/// `reference → (namespace, name)` of the objects of one kind that refer to it.
#[derive(Debug, Default)]
pub(crate) struct Refs(HashMap<Ref, BTreeSet<(Sym, Box<str>)>>);

impl Refs {
    pub(crate) fn add(&mut self, ns: &Sym, name: &str, refs: Vec<Ref>) {
        for r in refs {
            self.0.entry(r).or_default().insert((ns.clone(), Box::from(name)));
        }
    }

    pub(crate) fn remove(&mut self, ns: &str, name: &str, refs: Vec<Ref>) {
        for r in refs {
            if let Some(set) = self.0.get_mut(&r) {
                set.remove(&(Sym::new(ns), Box::from(name)));
                if set.is_empty() {
                    self.0.remove(&r);
                }
            }
        }
    }

    pub(crate) fn get(&self, r: &Ref) -> impl Iterator<Item = (&Sym, &str)> {
        self.0
            .get(r)
            .into_iter()
            .flatten()
            .map(|(ns, name)| (ns, name.as_ref()))
    }

    pub(crate) fn clear(&mut self) {
        self.0.clear();
    }
}
