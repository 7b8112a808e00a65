//! Both kinds' provider objects listed once from the API server (`extdns plan --dns-provider-crds`, which
//! plans each provider's next sync without running the manager).

use extdns_dnsprovider::{ProviderKind, ProviderObject, decode_all};
use kube::api::{Api, DynamicObject, ListParams, TypeMeta};

/// Both kinds' objects on the API server, and a line for each that is left out: a kind that cannot be
/// listed (its CRD absent, or not allowed), an object that does not decode.
pub async fn list_objects(client: &kube::Client) -> (Vec<ProviderObject>, Vec<String>) {
    let mut kept = Vec::new();
    let mut refused = Vec::new();
    for kind in ProviderKind::ALL {
        let resource = kind.api_resource();
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        match api.list(&ListParams::default()).await {
            Ok(list) => {
                for mut o in list.items {
                    // A list's items may leave their kind out.
                    o.types.get_or_insert_with(|| TypeMeta {
                        api_version: resource.api_version.clone(),
                        kind: resource.kind.clone(),
                    });
                    match serde_json::to_value(o) {
                        Ok(value) => kept.push(value),
                        Err(e) => refused.push(format!("a {} object: {e}", kind.kind())),
                    }
                }
            }
            Err(e) => refused.push(format!("cannot list the {} objects: {e}", kind.kind())),
        }
    }
    let (objects, mut undecodable) = decode_all(kept);
    refused.append(&mut undecodable);
    (objects, refused)
}
