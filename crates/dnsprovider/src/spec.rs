//! The two kinds' spec and status as the API server stores them, and one object read from it.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::{ApiResource, DynamicObject};
use serde::{Deserialize, Serialize};

use crate::{GROUP, ProviderId, SpecError, VERSION};

/// Which of the two kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderKind {
    /// `ClusterDNSProvider`, cluster-scoped.
    Cluster,
    /// `DNSProvider`, namespaced.
    Namespaced,
}

impl ProviderKind {
    /// Both kinds.
    pub const ALL: [ProviderKind; 2] = [ProviderKind::Cluster, ProviderKind::Namespaced];

    /// The API kind.
    pub fn kind(self) -> &'static str {
        match self {
            ProviderKind::Cluster => "ClusterDNSProvider",
            ProviderKind::Namespaced => "DNSProvider",
        }
    }

    /// The resource's plural, as the CRDs name it.
    pub fn plural(self) -> &'static str {
        match self {
            ProviderKind::Cluster => "clusterdnsproviders",
            ProviderKind::Namespaced => "dnsproviders",
        }
    }

    /// What kube's dynamic API needs to list, watch and patch the kind.
    pub fn api_resource(self) -> ApiResource {
        ApiResource {
            group: GROUP.to_string(),
            version: VERSION.to_string(),
            api_version: format!("{GROUP}/{VERSION}"),
            kind: self.kind().to_string(),
            plural: self.plural().to_string(),
        }
    }

    /// The kind whose API name is `kind`.
    pub fn from_kind(kind: &str) -> Option<ProviderKind> {
        ProviderKind::ALL.into_iter().find(|k| k.kind() == kind)
    }
}

/// `spec` of both kinds (they differ only in scope, and in `credentialsRef.namespace`, which a `DNSProvider`
/// may not set).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DnsProviderSpec {
    /// Any `--provider` value extdns accepts, `dns-server` included.
    #[serde(rename = "type")]
    pub type_: String,
    /// The zones: `--domain-filter` and `--exclude-domains`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain_filter: Option<DomainFilterSpec>,
    /// Ownership: the registry and its TXT owner id, prefix and suffix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry: Option<RegistrySpec>,
    /// Flag names (without `--`) to values: a string, number or boolean, or a list of them for a flag given
    /// several times. Each replaces the deployment's values of that flag for this provider.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub config: BTreeMap<String, serde_json::Value>,
    /// The Secret holding this provider's credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_ref: Option<CredentialsRef>,
}

/// `spec.domainFilter`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DomainFilterSpec {
    /// `--domain-filter`: the zones (and names under them) this provider manages; empty means every zone
    /// its credentials reach.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<String>,
    /// `--exclude-domains`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
}

/// `spec.registry`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RegistrySpec {
    /// `--registry` (txt, noop, dynamodb, crd); the flag's default for the provider type when absent.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// `--txt-owner-id`; the object's name when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txt_owner_id: Option<String>,
    /// `--txt-prefix`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txt_prefix: Option<String>,
    /// `--txt-suffix`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txt_suffix: Option<String>,
}

/// `spec.credentialsRef`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CredentialsRef {
    /// The Secret's name.
    pub name: String,
    /// A `ClusterDNSProvider`'s Secret namespace; the controller's own when absent. A `DNSProvider`'s Secret
    /// is always in its own namespace and may not name another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// `status` of both kinds, as extdns writes it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DnsProviderStatus {
    /// The generation the status speaks of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// One condition, `Ready`.
    #[serde(default)]
    pub conditions: Vec<Condition>,
    /// The zones the provider found.
    #[serde(default)]
    pub zones: Vec<String>,
    /// The records this provider owns after its last sync.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub records: Option<u64>,
    /// When the last sync completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_sync_time: Option<Time>,
}

/// One provider object, read and checked: what the engine runs a pipeline for.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderObject {
    /// Which object.
    pub id: ProviderId,
    /// `metadata.generation`: a new one means a changed spec.
    pub generation: i64,
    /// `metadata.creationTimestamp`: the older of two conflicting providers keeps running.
    pub created: Option<Time>,
    /// `metadata.deletionTimestamp` is set: the object is going.
    pub deleting: bool,
    /// `metadata.finalizers`.
    pub finalizers: Vec<String>,
    /// The spec.
    pub spec: DnsProviderSpec,
    /// The status as last written.
    pub status: Option<DnsProviderStatus>,
}

impl ProviderObject {
    /// Reads an object of either kind (its `kind` says which). Refused: no name, a `DNSProvider` without a
    /// namespace or naming a Secret in another namespace, a spec that does not decode, an empty `type`.
    pub fn from_dynamic(object: &DynamicObject) -> Result<ProviderObject, SpecError> {
        let (id, spec) = ProviderObject::decode_spec(object)?;
        Ok(ProviderObject::with_spec(object, id, spec))
    }

    /// What of [`ProviderObject::from_dynamic`] depends on the object's spec alone (and its kind, name and
    /// namespace, which never change): its id and its spec, decoded and checked. A generation's spec never
    /// changes, so a caller that looks at an object often decodes it once per generation and builds the
    /// rest, which does change (status, finalizers, deletion), with [`ProviderObject::with_spec`].
    pub fn decode_spec(object: &DynamicObject) -> Result<(ProviderId, DnsProviderSpec), SpecError> {
        let kind_name = object.types.as_ref().map(|t| t.kind.as_str()).unwrap_or_default();
        let meta = &object.metadata;
        let name = meta.name.clone().unwrap_or_default();
        let shown = format!(
            "{kind_name}/{}{name}",
            meta.namespace.as_deref().map(|n| format!("{n}/")).unwrap_or_default()
        );
        let invalid = |field: &str, why: String| SpecError::Invalid {
            object: shown.clone(),
            field: field.to_string(),
            why,
        };
        let Some(kind) = ProviderKind::from_kind(kind_name) else {
            return Err(invalid("kind", "not DNSProvider or ClusterDNSProvider".to_string()));
        };
        if name.is_empty() {
            return Err(invalid("metadata.name", "missing".to_string()));
        }
        let id = match kind {
            ProviderKind::Cluster => ProviderId::Cluster { name },
            ProviderKind::Namespaced => match meta.namespace.as_deref() {
                Some(ns) if !ns.is_empty() => ProviderId::Namespaced {
                    namespace: ns.to_string(),
                    name,
                },
                _ => return Err(invalid("metadata.namespace", "a DNSProvider is namespaced".to_string())),
            },
        };
        let spec = object
            .data
            .get("spec")
            .ok_or_else(|| invalid("spec", "missing".to_string()))
            .and_then(|v| DnsProviderSpec::deserialize(v).map_err(|e| invalid("spec", e.to_string())))?;
        if spec.type_.trim().is_empty() {
            return Err(invalid(
                "spec.type",
                "empty: name a provider (aws, cloudflare, dns-server, ...)".to_string(),
            ));
        }
        if let (ProviderKind::Namespaced, Some(r)) = (kind, &spec.credentials_ref)
            && r.namespace.as_deref().is_some_and(|ns| Some(ns) != id.namespace())
        {
            return Err(invalid(
                "spec.credentialsRef.namespace",
                "a DNSProvider reads Secrets of its own namespace only".to_string(),
            ));
        }
        if spec.credentials_ref.as_ref().is_some_and(|r| r.name.is_empty()) {
            return Err(invalid("spec.credentialsRef.name", "empty".to_string()));
        }
        Ok((id, spec))
    }

    /// `object` as the provider `id` with `spec` (what [`ProviderObject::decode_spec`] made of it): its
    /// metadata and status read now.
    pub fn with_spec(object: &DynamicObject, id: ProviderId, spec: DnsProviderSpec) -> ProviderObject {
        let meta = &object.metadata;
        // A status that does not decode is only ours, from an older version: it is written anew.
        let status = object
            .data
            .get("status")
            .and_then(|v| DnsProviderStatus::deserialize(v).ok());
        ProviderObject {
            id,
            generation: meta.generation.unwrap_or(0),
            created: meta.creation_timestamp.clone(),
            deleting: meta.deletion_timestamp.is_some(),
            finalizers: meta.finalizers.clone().unwrap_or_default(),
            spec,
            status,
        }
    }

    /// The TXT owner id this provider writes: `spec.registry.txtOwnerId`, else the object's name.
    pub fn owner_id(&self) -> &str {
        self.spec
            .registry
            .as_ref()
            .and_then(|r| r.txt_owner_id.as_deref())
            .filter(|o| !o.is_empty())
            .unwrap_or(self.id.name())
    }

    /// The Secret this provider reads, as (namespace, name); `controller_namespace` is where a
    /// `ClusterDNSProvider`'s Secret is when its ref names no namespace.
    pub fn secret(&self, controller_namespace: &str) -> Option<(String, String)> {
        let r = self.spec.credentials_ref.as_ref()?;
        let ns = match &self.id {
            ProviderId::Namespaced { namespace, .. } => namespace.clone(),
            ProviderId::Cluster { .. } => r.namespace.clone().unwrap_or_else(|| controller_namespace.to_string()),
        };
        Some((ns, r.name.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(value: serde_json::Value) -> DynamicObject {
        serde_json::from_value(value).unwrap_or_else(|e| panic!("test object: {e}"))
    }

    #[test]
    fn a_dns_provider_is_namespaced_and_its_secret_is_its_own_namespace() -> Result<(), SpecError> {
        let o = ProviderObject::from_dynamic(&object(serde_json::json!({
            "apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "DNSProvider",
            "metadata": { "name": "zone", "namespace": "team-a", "generation": 4 },
            "spec": { "type": "pdns", "credentialsRef": { "name": "pdns-key" } }
        })))?;
        assert_eq!(o.id.to_string(), "DNSProvider/team-a/zone");
        assert_eq!(o.id.label(), "team-a/zone");
        assert_eq!(o.generation, 4);
        assert_eq!(o.secret("extdns"), Some(("team-a".to_string(), "pdns-key".to_string())));
        assert_eq!(o.owner_id(), "zone");
        Ok(())
    }

    #[test]
    fn a_dns_provider_may_not_name_a_secret_of_another_namespace() {
        let e = ProviderObject::from_dynamic(&object(serde_json::json!({
            "apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "DNSProvider",
            "metadata": { "name": "zone", "namespace": "a" },
            "spec": { "type": "pdns", "credentialsRef": { "name": "key", "namespace": "b" } }
        })));
        assert!(
            matches!(e, Err(SpecError::Invalid { ref field, .. }) if field == "spec.credentialsRef.namespace"),
            "{e:?}"
        );
    }

    #[test]
    fn a_cluster_provider_secret_defaults_to_the_controller_namespace() -> Result<(), SpecError> {
        let o = ProviderObject::from_dynamic(&object(serde_json::json!({
            "apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "ClusterDNSProvider",
            "metadata": { "name": "public" },
            "spec": { "type": "cloudflare", "credentialsRef": { "name": "cf" },
                      "registry": { "txtOwnerId": "cluster-1" } }
        })))?;
        assert_eq!(o.secret("extdns"), Some(("extdns".to_string(), "cf".to_string())));
        assert_eq!(o.owner_id(), "cluster-1");
        Ok(())
    }

    #[test]
    fn an_unknown_spec_field_or_an_empty_type_is_refused_naming_the_field() {
        for (spec, field) in [
            (serde_json::json!({ "type": "aws", "zones": ["x"] }), "spec"),
            (serde_json::json!({ "type": " " }), "spec.type"),
            (
                serde_json::json!({ "type": "aws", "credentialsRef": { "name": "" } }),
                "spec.credentialsRef.name",
            ),
        ] {
            let e = ProviderObject::from_dynamic(&object(serde_json::json!({
                "apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "ClusterDNSProvider",
                "metadata": { "name": "p" }, "spec": spec
            })));
            assert!(
                matches!(&e, Err(SpecError::Invalid { field: f, .. }) if f == field),
                "{e:?}"
            );
        }
    }
}
