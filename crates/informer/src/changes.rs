//! Which objects changed since the controller last looked, for incremental reconcile.

use std::collections::BTreeSet;

use crate::ResourceKind;
use crate::index::Ref;
use crate::store::ObjectKey;

/// The objects that changed in a view since it was last asked ([`crate::Cluster::take_changes`]).
///
/// How a kind's changes are recorded is its table entry's [`ChangeKey`](crate::kinds::ChangeKey): an
/// EndpointSlice under the Service it belongs to (its `kubernetes.io/service-name` label, both the old and
/// the new one when the label changed), because that is all a source can do with it; every other kind as
/// itself. `everything` stands for changes that cannot be listed: a re-list after a watch desync, files read
/// again, or a view that does not track its changes. Beside the objects, what the changed objects
/// announced before and after the change ([`announced`](Self::announced)): a Service's selector labels,
/// through which the objects selecting it by content (Istio Gateways) are found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChangeSet {
    everything: bool,
    objects: BTreeSet<ObjectKey>,
    announced: BTreeSet<Ref>,
}

impl ChangeSet {
    /// Nothing changed.
    pub fn new() -> Self {
        ChangeSet::default()
    }

    /// One object changed.
    pub fn of(object: ObjectKey) -> Self {
        let mut changes = ChangeSet::new();
        changes.insert(object);
        changes
    }

    /// Anything may have changed.
    pub fn everything() -> Self {
        ChangeSet {
            everything: true,
            objects: BTreeSet::new(),
            announced: BTreeSet::new(),
        }
    }

    /// Whether the change set lost track (a relist) and every object must be looked at.
    pub fn is_everything(&self) -> bool {
        self.everything
    }

    /// Nothing changed (and not everything).
    pub fn is_empty(&self) -> bool {
        !self.everything && self.objects.is_empty()
    }

    /// Records one changed object. Once everything changed, single objects add nothing.
    pub fn insert(&mut self, object: ObjectKey) {
        if self.everything {
            return;
        }
        self.objects.insert(object);
    }

    /// Records what a changed object announced ([`crate::item::Item::announces`]), as it was or as it is.
    pub fn announce(&mut self, refs: impl IntoIterator<Item = Ref>) {
        if !self.everything {
            self.announced.extend(refs);
        }
    }

    /// What changed objects announced, before and after their changes (none when everything changed).
    pub fn announced(&self) -> impl Iterator<Item = &Ref> {
        self.announced.iter()
    }

    /// Everything changed: the object list is dropped, it no longer says anything.
    pub fn mark_everything(&mut self) {
        self.everything = true;
        self.objects.clear();
        self.announced.clear();
    }

    /// Adds what `other` says changed: everything absorbs it, or its objects join these.
    pub fn extend(&mut self, other: &ChangeSet) {
        if other.everything {
            self.mark_everything();
        } else if !self.everything {
            self.objects.extend(other.objects.iter().cloned());
            self.announced.extend(other.announced.iter().cloned());
        }
    }

    /// The changed objects (none when everything changed: ask [`is_everything`](Self::is_everything) first).
    pub fn objects(&self) -> impl Iterator<Item = &ObjectKey> {
        self.objects.iter()
    }

    /// The changed objects of one kind.
    pub fn of_kind(&self, kind: ResourceKind) -> impl Iterator<Item = &ObjectKey> {
        self.objects.iter().filter(move |k| k.kind == kind)
    }

    /// Whether an object of `kind` changed (true for any kind when everything changed).
    pub fn touches(&self, kind: ResourceKind) -> bool {
        self.everything || self.of_kind(kind).next().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_object_is_recorded_once_and_everything_absorbs_them() {
        let mut c = ChangeSet::new();
        assert!(c.is_empty());
        c.insert(ObjectKey::new(ResourceKind::Service, "default", "web"));
        c.insert(ObjectKey::new(ResourceKind::Service, "default", "web"));
        assert_eq!(c.of_kind(ResourceKind::Service).count(), 1, "each object once");
        assert!(c.touches(ResourceKind::Service));
        assert!(!c.touches(ResourceKind::Pod));
        let label = Ref::Selects(ResourceKind::Service, "app".into(), "web".into());
        c.announce([label.clone()]);
        let mut other = ChangeSet::new();
        other.extend(&c);
        assert_eq!(
            other.announced().collect::<Vec<_>>(),
            [&label],
            "announcements travel with the objects"
        );
        c.mark_everything();
        assert!(c.is_everything() && c.objects().next().is_none());
        assert!(c.announced().next().is_none());
        c.announce([label]);
        assert!(c.announced().next().is_none(), "everything absorbs announcements too");
        c.insert(ObjectKey::new(ResourceKind::Pod, "default", "p"));
        assert!(c.objects().next().is_none());
        assert!(c.touches(ResourceKind::Pod));
    }
}
