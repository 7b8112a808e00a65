//! Both kinds' provider objects read once, from the API server or from manifest files, with where their
//! Secrets are (`extdns plan --dns-provider-crds`, which plans each provider's next sync without running the
//! manager).

use std::path::PathBuf;

use extdns_dnsprovider::{ProviderKind, ProviderObject, decode_all, manifest_kinds};
use extdns_informer::{LoadOptions, ManifestError, load_keeping};
use kube::api::{Api, DynamicObject, ListParams, TypeMeta};

use crate::secret::Secrets;

/// The provider objects and their Secrets among the manifest files at `paths` (read with `options`, which
/// this keeps those kinds in), and a line for each object left out.
pub fn manifest_objects(
    paths: &[PathBuf],
    options: &LoadOptions,
) -> Result<(Vec<ProviderObject>, Vec<String>, Secrets), ManifestError> {
    let mut options = options.clone();
    options.skip_unknown_kinds = true;
    options.keep_kinds = manifest_kinds();
    options.keep_kinds.push(("v1".into(), "Secret".into()));
    let (loaded, _) = load_keeping(paths, &options)?;
    let secrets = Secrets::from_manifests(&loaded.kept);
    let (objects, refused) = decode_all(loaded.kept);
    Ok((objects, refused, secrets))
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifests_give_the_provider_objects_and_the_secrets_and_nothing_else() -> Result<(), Box<dyn std::error::Error>>
    {
        let dir = tempfile::tempdir()?;
        std::fs::write(
            dir.path().join("all.yaml"),
            r#"
apiVersion: externaldns.k8s.io/v1alpha1
kind: ClusterDNSProvider
metadata: { name: internal }
spec: { type: inmemory, config: { inmemory-zone: [example.org] } }
---
apiVersion: v1
kind: Secret
metadata: { name: creds, namespace: team-a }
stringData: { CF_API_TOKEN: t }
---
apiVersion: v1
kind: ConfigMap
metadata: { name: other, namespace: team-a }
"#,
        )?;
        let (objects, refused, secrets) = manifest_objects(&[dir.path().to_path_buf()], &LoadOptions::default())?;
        assert_eq!(objects.iter().map(|o| o.id.label()).collect::<Vec<_>>(), ["internal"]);
        assert!(refused.is_empty(), "{refused:?}");
        assert!(matches!(secrets, Secrets::Manifests(m) if m.len() == 1));
        Ok(())
    }
}
