//! The desired endpoints kept per object between syncs, so a change re-evaluates only the objects it
//! affects and plans only the names they publish (incremental reconcile).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use extdns_endpoint::Endpoint;
use extdns_endpoint::name::name_key;
use extdns_informer::ObjectKey;

use crate::{Failures, ObjectEndpoints};

/// Every source's endpoints by object, as the last evaluation left them; filled by
/// [`Pipeline::evaluate`](crate::Pipeline::evaluate), updated by
/// [`Pipeline::evaluate_changes`](crate::Pipeline::evaluate_changes).
#[derive(Debug, Default)]
pub struct DesiredIndex {
    /// One per source, in the pipeline's order.
    sources: Vec<ObjectIndex>,
}

impl DesiredIndex {
    pub(super) fn new(sources: Vec<ObjectIndex>) -> Self {
        DesiredIndex { sources }
    }

    pub(super) fn len(&self) -> usize {
        self.sources.len()
    }

    pub(super) fn sources(&self) -> &[ObjectIndex] {
        &self.sources
    }

    pub(super) fn sources_mut(&mut self) -> &mut [ObjectIndex] {
        &mut self.sources
    }
}

/// One source's objects. Every object's key is stored once and shared (`Arc`) between the maps that find
/// it, as the index lives between syncs and holds every object of the cluster that publishes something
/// (docs/performance.md, "Where the heap goes at scale").
#[derive(Debug, Default)]
pub(super) struct ObjectIndex {
    /// An object's endpoints, in object order (the order the source's merge sees them in).
    objects: BTreeMap<Arc<ObjectKey>, Kept>,
    /// Name key ([`name_key`]) → the objects that publish it; nearly always one.
    by_name: HashMap<Box<str>, Vec<Arc<ObjectKey>>>,
    pub(super) failed: Failures,
}

/// One object's endpoints as the index keeps them. An endpoint a source makes names exactly its own object
/// in `ref_objects`: a slice holding a pointer to a key the index already holds. Such endpoints are kept without it and given it back when gathered
/// (docs/performance.md, "A smaller Service view and desired index"); endpoints naming anything else are
/// kept as they are.
#[derive(Debug)]
struct Kept {
    endpoints: Box<[Endpoint]>,
    /// Every endpoint named exactly its own object, and was kept without it.
    own_ref_dropped: bool,
}

impl ObjectIndex {
    /// Keeps an object's endpoints, adding the names it publishes to `names` when given.
    pub(super) fn insert(&mut self, object: ObjectEndpoints, mut names: Option<&mut BTreeSet<String>>) {
        let key = Arc::new(object.object);
        let mut endpoints = object.endpoints;
        for e in &endpoints {
            let name = name_key(&e.dns_name);
            let keys = match self.by_name.get_mut(name.as_ref()) {
                Some(keys) => keys,
                None => self.by_name.entry(name.as_ref().into()).or_default(),
            };
            if !keys.contains(&key) {
                keys.reserve_exact(1);
                keys.push(Arc::clone(&key));
            }
            if let Some(names) = names.as_deref_mut() {
                names.insert(name.into_owned());
            }
        }
        let own_ref_dropped = Self::names_only_itself(&key, &endpoints);
        if own_ref_dropped {
            endpoints.iter_mut().for_each(|e| e.ref_objects.clear());
        }
        let kept = Kept {
            endpoints: endpoints.into_boxed_slice(),
            own_ref_dropped,
        };
        self.objects.insert(key, kept);
    }

    /// Whether every endpoint's object references are exactly `key`'s object (and there is an endpoint).
    fn names_only_itself(key: &ObjectKey, endpoints: &[Endpoint]) -> bool {
        !endpoints.is_empty()
            && endpoints.iter().all(|e| {
                let mut refs = e.ref_objects.iter();
                matches!((refs.next(), refs.next()), (Some(r), None) if **r == *key)
            })
    }

    /// Forgets an object's endpoints, adding the names it published to `names`.
    pub(super) fn remove(&mut self, object: &ObjectKey, names: &mut BTreeSet<String>) {
        let Some((key, kept)) = self.objects.remove_entry(object) else {
            return;
        };
        for e in &kept.endpoints {
            let name = name_key(&e.dns_name);
            if let Some(keys) = self.by_name.get_mut(name.as_ref()) {
                keys.retain(|k| !Arc::ptr_eq(k, &key));
                if keys.is_empty() {
                    self.by_name.remove(name.as_ref());
                }
            }
            names.insert(name.into_owned());
        }
    }

    /// The endpoints of every object that publishes one of `names`, in object order: whole objects, so the
    /// wrappers' validation sees everything an object asks for (and can hold all its records back).
    pub(super) fn gather(&self, names: &BTreeSet<String>) -> Vec<Endpoint> {
        let objects: BTreeSet<&Arc<ObjectKey>> = names
            .iter()
            .filter_map(|n| self.by_name.get(n.as_str()))
            .flatten()
            .collect();
        let mut out = Vec::new();
        for key in objects {
            let Some(kept) = self.objects.get(key) else { continue };
            let start = out.len();
            out.extend(kept.endpoints.iter().cloned());
            if kept.own_ref_dropped {
                for e in &mut out[start..] {
                    e.ref_objects.insert(Arc::clone(key));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use extdns_endpoint::RecordType;
    use extdns_informer::ResourceKind;

    use super::*;

    fn endpoint(name: &str, refs: &[ObjectKey]) -> Endpoint {
        let mut e = Endpoint::new(name, RecordType::A, ["192.0.2.1"]);
        e.ref_objects.extend(refs.iter().cloned());
        e
    }

    fn object_ref(kind: ResourceKind, namespace: &str, name: &str) -> ObjectKey {
        ObjectKey::new(kind, namespace, name)
    }

    fn refs(endpoints: &[Endpoint]) -> Vec<Vec<ObjectKey>> {
        endpoints
            .iter()
            .map(|e| e.ref_objects.iter().map(|k| ObjectKey::clone(k)).collect())
            .collect()
    }

    /// Whatever the index drops to save memory, gathering gives every endpoint back with the object
    /// references it was inserted with: its own object, another one, several, or none.
    #[test]
    fn gathered_endpoints_keep_the_object_references_they_were_inserted_with() {
        let own = object_ref(ResourceKind::Service, "prod", "web");
        let objects = [
            (
                "web",
                vec![
                    endpoint("web.example.org", std::slice::from_ref(&own)),
                    endpoint("_http._tcp.web.example.org", &[own]),
                ],
            ),
            (
                "api",
                vec![endpoint(
                    "api.example.org",
                    &[object_ref(ResourceKind::Service, "prod", "other")],
                )],
            ),
            (
                "db",
                vec![endpoint(
                    "db.example.org",
                    &[
                        object_ref(ResourceKind::Service, "prod", "db"),
                        object_ref(ResourceKind::Service, "prod", "x"),
                    ],
                )],
            ),
            ("bare", vec![endpoint("bare.example.org", &[])]),
            (
                "mixed",
                vec![
                    endpoint("m1.example.org", &[object_ref(ResourceKind::Service, "prod", "mixed")]),
                    endpoint("m2.example.org", &[]),
                ],
            ),
            (
                "renamed",
                vec![endpoint(
                    "r.example.org",
                    &[object_ref(ResourceKind::Ingress, "prod", "renamed")],
                )],
            ),
        ];
        let mut index = ObjectIndex::default();
        let mut names = BTreeSet::new();
        for (name, endpoints) in &objects {
            let object = ObjectKey::new(ResourceKind::Service, "prod", name);
            index.insert(
                ObjectEndpoints {
                    object,
                    endpoints: endpoints.clone(),
                },
                Some(&mut names),
            );
        }
        for (name, endpoints) in &objects {
            let wanted: BTreeSet<String> = endpoints.iter().map(|e| e.dns_name.clone()).collect();
            let gathered = index.gather(&wanted);
            assert_eq!(refs(&gathered), refs(endpoints), "object {name}");
        }
        let web = &index.objects[&ObjectKey::new(ResourceKind::Service, "prod", "web")];
        assert!(web.own_ref_dropped && web.endpoints.iter().all(|e| e.ref_objects.is_empty()));
    }
}
