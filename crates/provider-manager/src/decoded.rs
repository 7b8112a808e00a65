//! Each provider object's spec, decoded once per generation. A reconcile reads every object of both kinds
//! (conflicts are found over all of them), so decoding each spec at each look would cost every object a
//! decode per reconcile of any one; a generation's spec never changes, so it is decoded when a new
//! generation (or a new object of the name: another uid) is first seen, and kept until then.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use extdns_dnsprovider::{DnsProviderSpec, ProviderId, ProviderObject, SpecError};
use kube::api::DynamicObject;

use crate::decide::Seen;

/// One object's decoded spec, with the uid and generation it was decoded from.
struct Entry {
    uid: Option<String>,
    generation: Option<i64>,
    /// The spec, or why it does not decode (shared: every look at this generation answers the same).
    spec: Result<DnsProviderSpec, Arc<SpecError>>,
}

/// The specs decoded so far, by provider id.
#[derive(Default)]
pub(crate) struct Decoded {
    entries: Mutex<BTreeMap<ProviderId, Entry>>,
    decodes: Mutex<u64>,
}

impl Decoded {
    /// What `object` says, its spec decoded only if this generation of this object was not decoded yet.
    pub fn seen(&self, id: &ProviderId, object: &DynamicObject) -> (Seen, Option<ProviderObject>) {
        let meta = &object.metadata;
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let fresh = entries
            .get(id)
            .is_some_and(|e| e.uid == meta.uid && e.generation == meta.generation);
        if !fresh {
            *self.decodes.lock().unwrap_or_else(PoisonError::into_inner) += 1;
            let spec = ProviderObject::decode_spec(object)
                .map(|(_, spec)| spec)
                .map_err(Arc::new);
            let entry = Entry {
                uid: meta.uid.clone(),
                generation: meta.generation,
                spec,
            };
            entries.insert(id.clone(), entry);
        }
        let decoded = match entries.get(id).map(|e| &e.spec) {
            Some(Ok(spec)) => Ok(ProviderObject::with_spec(object, id.clone(), spec.clone())),
            Some(Err(why)) => Err(why.clone()),
            // Inserted above when it was not fresh: decoding again is the honest answer all the same.
            None => ProviderObject::from_dynamic(object).map_err(Arc::new),
        };
        Seen::with(object, decoded)
    }

    /// Forgets `id`'s spec (its object is gone).
    pub fn forget(&self, id: &ProviderId) {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner).remove(id);
    }

    /// How many specs were decoded so far.
    #[cfg(test)]
    pub fn decodes(&self) -> u64 {
        *self.decodes.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(uid: &str, generation: i64, records: u64) -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "ClusterDNSProvider",
            "metadata": { "name": "p", "uid": uid, "generation": generation },
            "spec": { "type": "inmemory" },
            "status": { "records": records },
        }))
        .unwrap_or_else(|e| panic!("test object: {e}"))
    }

    #[test]
    fn a_spec_is_decoded_once_per_generation_of_one_object() {
        let decoded = Decoded::default();
        let id = ProviderId::Cluster { name: "p".into() };
        let (seen, provider) = decoded.seen(&id, &object("a", 1, 3));
        assert_eq!(
            (seen.records, provider.map(|o| o.spec.type_)),
            (Some(3), Some("inmemory".into()))
        );
        // Looked at again (a status written, another object reconciled): not decoded, and what is not the
        // spec read as it is now.
        let (seen, _) = decoded.seen(&id, &object("a", 1, 5));
        assert_eq!(seen.records, Some(5));
        assert_eq!(decoded.decodes(), 1);
        decoded.seen(&id, &object("a", 2, 5));
        assert_eq!(decoded.decodes(), 2, "a new generation is decoded");
        decoded.seen(&id, &object("b", 2, 5));
        assert_eq!(
            decoded.decodes(),
            3,
            "an object made again under the name is another object"
        );
        decoded.forget(&id);
        decoded.seen(&id, &object("b", 2, 5));
        assert_eq!(decoded.decodes(), 4);
    }
}
