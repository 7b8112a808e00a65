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
    objects: BTreeMap<Arc<ObjectKey>, Box<[Endpoint]>>,
    /// Name key ([`name_key`]) → the objects that publish it; nearly always one.
    by_name: HashMap<Box<str>, Vec<Arc<ObjectKey>>>,
    pub(super) failed: Failures,
}

impl ObjectIndex {
    /// Keeps an object's endpoints, adding the names it publishes to `names` when given.
    pub(super) fn insert(&mut self, object: ObjectEndpoints, mut names: Option<&mut BTreeSet<String>>) {
        let key = Arc::new(object.object);
        for e in &object.endpoints {
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
        self.objects.insert(key, object.endpoints.into_boxed_slice());
    }

    /// Forgets an object's endpoints, adding the names it published to `names`.
    pub(super) fn remove(&mut self, object: &ObjectKey, names: &mut BTreeSet<String>) {
        let Some((key, endpoints)) = self.objects.remove_entry(object) else {
            return;
        };
        for e in &endpoints {
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
        objects
            .into_iter()
            .filter_map(|o| self.objects.get(o))
            .flat_map(|endpoints| endpoints.iter().cloned())
            .collect()
    }
}
