//! Reverse indexes: from what a change names (a Pod, a Node, a Gateway, a ListenerSet) to the objects that
//! read it, kept up to date as objects are stored, so that a source asks for the few objects a change
//! affects instead of walking every object of a kind. Each view says what it refers to ([`Item::refs`]);
//! the store's index of its kind keeps `reference → objects` beside its lists. Sources stay stateless:
//! the index belongs to the view of the cluster, and sources only query it.

use std::collections::{BTreeSet, HashMap};

use crate::{ResourceKind, Sym};

/// What an object refers to, as the reverse index keys it. Kind-neutral: each view says what it refers to
/// (crate::view), so a kind stays named only in its table row, its view and its conversion.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Ref {
    /// An object (kind, namespace, name): the Pod an EndpointSlice endpoint's `targetRef` names, the
    /// Gateway or ListenerSet a route's `spec.parentRefs` or a ListenerSet's `spec.parentRef` names.
    Object(ResourceKind, Box<str>, Box<str>),
    /// A set of objects a view files itself under, by a name of the view's choosing.
    Group(&'static str),
    /// The same, within one namespace.
    GroupIn(&'static str, Box<str>),
    /// A label (key, value) that objects of a kind must carry for the referring object to select them:
    /// an Istio Gateway's `spec.selector` entry, matched against Services' selectors. A change of such an
    /// object announces its labels before and after ([`crate::item::Item::announces`]), so what selected
    /// it by either is found.
    Selects(ResourceKind, Box<str>, Box<str>),
}

/// `reference → (namespace, name)` of the objects of one kind that refer to it.
#[derive(Debug, Default)]
pub(crate) struct Refs(HashMap<Ref, Referrers>);

/// One referring object: its namespace and name.
type Referrer = (Sym, Box<str>);

/// The objects referring to one reference, sorted. Nearly always one (the EndpointSlice naming a Pod), so
/// one is kept inline: a `BTreeSet` allocates a node for eleven entries (384 bytes) on its first insert,
/// 1.1 MB of the live heap for the 3,000 Pods the slices of 10,000 Services name (docs/performance.md,
/// "Where the live heap goes in the running binary"). Groups (every headless Service) are sets.
#[derive(Debug)]
enum Referrers {
    One(Referrer),
    Many(BTreeSet<Referrer>),
}

impl Referrers {
    fn insert(&mut self, referrer: Referrer) {
        match self {
            Referrers::One(one) if *one == referrer => {}
            Referrers::One(one) => {
                *self = Referrers::Many(BTreeSet::from([std::mem::take(one), referrer]));
            }
            Referrers::Many(set) => {
                set.insert(referrer);
            }
        }
    }

    /// Removes `referrer`; whether none is left.
    fn remove(&mut self, referrer: &Referrer) -> bool {
        match self {
            Referrers::One(one) => one == referrer,
            Referrers::Many(set) => {
                set.remove(referrer);
                set.is_empty()
            }
        }
    }

    fn iter(&self) -> impl Iterator<Item = &Referrer> {
        let (one, many) = match self {
            Referrers::One(one) => (Some(one), None),
            Referrers::Many(set) => (None, Some(set)),
        };
        one.into_iter().chain(many.into_iter().flatten())
    }
}

impl Refs {
    pub(crate) fn add(&mut self, ns: &Sym, name: &str, refs: Vec<Ref>) {
        for r in refs {
            let referrer = (ns.clone(), Box::from(name));
            match self.0.get_mut(&r) {
                Some(referrers) => referrers.insert(referrer),
                None => {
                    self.0.insert(r, Referrers::One(referrer));
                }
            }
        }
    }

    pub(crate) fn remove(&mut self, ns: &str, name: &str, refs: Vec<Ref>) {
        let referrer = (Sym::new(ns), Box::from(name));
        for r in refs {
            if self.0.get_mut(&r).is_some_and(|referrers| referrers.remove(&referrer)) {
                self.0.remove(&r);
            }
        }
    }

    /// The objects referring to `r`, sorted by namespace and name.
    pub(crate) fn get(&self, r: &Ref) -> impl Iterator<Item = (&Sym, &str)> {
        self.0
            .get(r)
            .into_iter()
            .flat_map(Referrers::iter)
            .map(|(ns, name)| (ns, name.as_ref()))
    }

    pub(crate) fn clear(&mut self) {
        self.0.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str) -> Ref {
        Ref::Object(ResourceKind::Pod, "ns".into(), name.into())
    }

    fn referring<'r>(refs: &'r Refs, r: &Ref) -> Vec<(&'r str, &'r str)> {
        refs.get(r).map(|(ns, name)| (ns.as_str(), name)).collect()
    }

    #[test]
    fn referrers_stay_sorted_and_unique_from_one_to_many_and_back() {
        let mut refs = Refs::default();
        let ns = Sym::new("ns");
        refs.add(&ns, "slice-b", vec![pod("p")]);
        refs.add(&ns, "slice-b", vec![pod("p")]);
        assert_eq!(referring(&refs, &pod("p")), [("ns", "slice-b")]);

        refs.add(&ns, "slice-a", vec![pod("p"), pod("q")]);
        assert_eq!(referring(&refs, &pod("p")), [("ns", "slice-a"), ("ns", "slice-b")]);
        assert_eq!(referring(&refs, &pod("q")), [("ns", "slice-a")]);

        refs.remove("ns", "slice-b", vec![pod("p")]);
        assert_eq!(referring(&refs, &pod("p")), [("ns", "slice-a")]);
        // Removing an object that does not refer leaves the one that does.
        refs.remove("ns", "slice-c", vec![pod("q")]);
        assert_eq!(referring(&refs, &pod("q")), [("ns", "slice-a")]);

        refs.remove("ns", "slice-a", vec![pod("p"), pod("q")]);
        assert!(refs.0.is_empty(), "a reference nothing refers to is forgotten");
    }
}
