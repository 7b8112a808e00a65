//! Provider objects and their Secrets as manifests hold them (`extdns endpoints` and `extdns plan` with
//! `--dns-provider-crds --manifests`, and the plan's list from the API server): which kinds to keep, the
//! objects decoded, and a Secret's keys as a provider's credentials.

use k8s_openapi::api::core::v1::Secret;
use kube::api::DynamicObject;

use crate::{Credentials, GROUP, ProviderKind, ProviderObject, SpecError, VERSION};

/// The (apiVersion, kind) of both kinds, as a manifest loader is told what to keep.
pub fn manifest_kinds() -> Vec<(String, String)> {
    ProviderKind::ALL
        .iter()
        .map(|k| (format!("{GROUP}/{VERSION}"), k.kind().to_string()))
        .collect()
}

/// The provider objects among `values` (other kinds are skipped), sorted by id, and why each provider
/// object of the others does not decode.
pub fn decode_all(values: impl IntoIterator<Item = serde_json::Value>) -> (Vec<ProviderObject>, Vec<String>) {
    let mut objects = Vec::new();
    let mut refused = Vec::new();
    for value in values {
        if !ProviderKind::ALL.iter().any(|k| value["kind"] == k.kind()) {
            continue;
        }
        match serde_json::from_value::<DynamicObject>(value)
            .map_err(|e| e.to_string())
            .and_then(|o| ProviderObject::from_dynamic(&o).map_err(|e| e.to_string()))
        {
            Ok(o) => objects.push(o),
            Err(why) => refused.push(why),
        }
    }
    objects.sort_by(|a, b| a.id.cmp(&b.id));
    (objects, refused)
}

impl Credentials {
    /// A Secret's `data` and `stringData` (a manifest may use either) as a provider's credentials, named
    /// `namespace/name` in errors.
    pub fn of_secret(secret: &Secret) -> Result<Credentials, SpecError> {
        let meta = &secret.metadata;
        let shown = format!(
            "{}/{}",
            meta.namespace.as_deref().unwrap_or_default(),
            meta.name.as_deref().unwrap_or_default()
        );
        let data = secret.data.iter().flatten().map(|(k, v)| (k.as_str(), v.0.as_slice()));
        let strings = secret.string_data.iter().flatten();
        Credentials::from_secret(&shown, data.chain(strings.map(|(k, v)| (k.as_str(), v.as_bytes()))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_objects_are_picked_from_manifests_sorted_and_a_bad_one_says_why() {
        let values = vec![
            serde_json::json!({ "apiVersion": "v1", "kind": "Service", "metadata": { "name": "web" } }),
            serde_json::json!({ "apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "ClusterDNSProvider",
                                "metadata": { "name": "b" }, "spec": { "type": "aws" } }),
            serde_json::json!({ "apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "ClusterDNSProvider",
                                "metadata": { "name": "a" }, "spec": { "type": "aws" } }),
            serde_json::json!({ "apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "DNSProvider",
                                "metadata": { "name": "c" }, "spec": { "type": "aws" } }),
        ];
        let (objects, refused) = decode_all(values);
        let names: Vec<&str> = objects.iter().map(|o| o.id.name()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(refused.len(), 1);
        assert!(refused[0].contains("metadata.namespace"), "{}", refused[0]);
        assert_eq!(
            manifest_kinds()[1],
            ("externaldns.k8s.io/v1alpha1".into(), "DNSProvider".into())
        );
    }

    #[test]
    fn a_secret_gives_its_data_and_string_data() -> Result<(), Box<dyn std::error::Error>> {
        let secret: Secret = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Secret", "metadata": { "name": "cf", "namespace": "team-a" },
            "data": { "CF_API_TOKEN": "dG9rZW4=" }, "stringData": { "cloudflare-proxied": "true" },
        }))?;
        let c = Credentials::of_secret(&secret)?;
        assert_eq!(c.env.get("CF_API_TOKEN").map(String::as_str), Some("token"));
        assert_eq!(c.flags[0].flag, "cloudflare-proxied");
        let mut bad = secret;
        bad.string_data = Some([("Odd.Key".to_string(), "x".to_string())].into());
        let e = Credentials::of_secret(&bad).err().map(|e| e.to_string());
        assert!(e.is_some_and(|e| e.contains("team-a/cf") && e.contains("Odd.Key")));
        Ok(())
    }
}
