//! external-dns's DNSEndpoint (`externaldns.k8s.io/v1alpha1` by default): the API type the `crd` source
//! reads, and its conversion to [`view::DnsEndpoint`].
//!
//! The CRD validates nothing (no required field, no enum), so every field is optional here and the source
//! judges each entry; an entry that is `null` is skipped, as external-dns skips nil endpoints. The group,
//! version, kind and plural the objects are watched at can come from configuration (`--crd-source-apiversion`,
//! `--crd-source-kind`): the watch addresses them through the [`kube::core::ApiResource`] it is given, and
//! the schema is the same whatever the group.

use std::borrow::Cow;
use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::core::NamespaceResourceScope;
use serde::{Deserialize, Serialize};

use crate::ResourceKind;
use crate::convert::meta;
use crate::view;
use crate::watched::{Convert, sealed::Sealed};

/// A DNSEndpoint as the API serves it. Every type here takes its default for what the object leaves out
/// (`#[serde(default)]` on each): the CRD requires no field.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct DnsEndpoint {
    /// Identity; `generation` is what the status's `observedGeneration` echoes.
    pub metadata: ObjectMeta,
    /// `None` when the object has no spec (it publishes nothing).
    pub spec: Option<DnsEndpointSpec>,
    /// What extdns last wrote back.
    pub status: Option<DnsEndpointStatus>,
}

/// The records a DNSEndpoint asks for.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct DnsEndpointSpec {
    /// The entries as written; a `null` entry stays so later indexes keep their place.
    pub endpoints: Option<Vec<Option<EndpointEntry>>>,
}

/// What extdns writes back after each sync.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, rename_all = "camelCase")]
pub struct DnsEndpointStatus {
    /// The `metadata.generation` the status describes.
    pub observed_generation: Option<i64>,
    /// external-dns's open PR #6609; absent under v0.22's CRD, whose schema prunes them.
    pub conditions: Option<Vec<StatusCondition>>,
}

/// One `status.conditions[]` entry, as far as extdns compares it.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, rename_all = "camelCase")]
pub struct StatusCondition {
    /// `Accepted` or `Ready`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// A CamelCase word for machines.
    pub reason: String,
    /// A sentence for people.
    pub message: String,
}

/// One `spec.endpoints[]` entry, external-dns's `endpoint.Endpoint` JSON.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, rename_all = "camelCase")]
pub struct EndpointEntry {
    /// The record's name.
    pub dns_name: Option<String>,
    /// The record's values.
    pub targets: Option<Vec<String>>,
    /// `A`, `CNAME`, `TXT`, ...
    pub record_type: Option<String>,
    /// Tells apart records of one name and type for routing policies.
    pub set_identifier: Option<String>,
    /// Seconds; absent or 0 leaves the provider's default.
    #[serde(rename = "recordTTL")]
    pub record_ttl: Option<i64>,
    /// Copied into the record's labels (the TXT registry keeps them).
    pub labels: Option<BTreeMap<String, String>>,
    /// Provider options (`aws/evaluate-target-health`, ...).
    pub provider_specific: Option<Vec<ProviderSpecificEntry>>,
}

/// One provider option of an entry.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct ProviderSpecificEntry {
    /// The option's name, as the provider reads it.
    pub name: String,
    /// Its value, as written.
    pub value: String,
}

/// The default identity; a watch may address another group and kind through its `ApiResource`.
impl Resource for DnsEndpoint {
    type DynamicType = ();
    type Scope = NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(DEFAULT_KIND)
    }
    fn group(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(DEFAULT_GROUP)
    }
    fn version(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(DEFAULT_VERSION)
    }
    fn plural(_: &()) -> Cow<'_, str> {
        Cow::Borrowed("dnsendpoints")
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// external-dns's default group, version and kind (`--crd-source-apiversion`, `--crd-source-kind`).
pub const DEFAULT_GROUP: &str = "externaldns.k8s.io";
/// The version external-dns's CRD serves.
pub const DEFAULT_VERSION: &str = "v1alpha1";
/// The kind `--crd-source-kind` defaults to.
pub const DEFAULT_KIND: &str = "DNSEndpoint";

impl Sealed for DnsEndpoint {
    type View = view::DnsEndpoint;
    const KIND: ResourceKind = ResourceKind::DnsEndpoint;
    fn view(&self, c: &Convert<'_>) -> view::DnsEndpoint {
        let entries = self
            .spec
            .as_ref()
            .and_then(|s| s.endpoints.as_deref())
            .unwrap_or_default();
        view::DnsEndpoint {
            meta: meta(&self.metadata),
            generation: self.metadata.generation,
            observed_generation: self.status.as_ref().and_then(|s| s.observed_generation),
            conditions: self.status.as_ref().and_then(|s| s.conditions.as_ref()).map(|cs| {
                cs.iter()
                    .map(|c| view::DnsEndpointCondition {
                        type_: c.type_.clone(),
                        status: c.status.clone(),
                        reason: c.reason.clone(),
                        message: c.message.clone(),
                    })
                    .collect()
            }),
            endpoints: {
                let mut list = view::EntriesBuilder::with_capacity(entries.len());
                for e in entries {
                    let Some(e) = e else {
                        list.push_null();
                        continue;
                    };
                    list.push(
                        e.dns_name.as_deref().unwrap_or_default(),
                        e.targets.iter().flatten().map(String::as_str),
                        c.interner.intern(e.record_type.as_deref().unwrap_or_default()),
                        e.record_ttl.unwrap_or_default(),
                        view::RareFields {
                            set_identifier: e.set_identifier.as_deref().unwrap_or_default().into(),
                            labels: e.labels.clone().unwrap_or_default().into_iter().collect(),
                            provider_specific: e
                                .provider_specific
                                .iter()
                                .flatten()
                                .map(|p| (p.name.clone(), p.value.clone()))
                                .collect(),
                        },
                    );
                }
                list.finish()
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The view of a DNSEndpoint given as JSON.
    fn view_of(mut value: serde_json::Value) -> view::DnsEndpoint {
        let obj: DnsEndpoint = crate::watched::decode(&mut value).expect("decodes");
        let interner = crate::Interner::default();
        let c = Convert {
            interner: &interner,
            pod_annotation_prefixes: &Default::default(),
            template_fields: &Default::default(),
        };
        obj.view(&c)
    }

    #[test]
    fn every_field_reaches_the_view_and_null_entries_stay_in_place() {
        let value = serde_json::json!({
            "apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "DNSEndpoint",
            "metadata": {"name": "a", "namespace": "ns", "generation": 3},
            "spec": {"endpoints": [null, {
                "dnsName": "x.example.org", "targets": ["1.2.3.4"], "recordType": "A",
                "setIdentifier": "s", "recordTTL": 60, "labels": {"k": "v"},
                "providerSpecific": [{"name": "n", "value": "v"}]
            }]},
            "status": {"observedGeneration": 2}
        });
        let v = view_of(value);
        assert_eq!((v.generation, v.observed_generation), (Some(3), Some(2)));
        assert_eq!(v.endpoints.len(), 2);
        assert!(v.endpoints.get(0).is_some_and(|e| e.is_none()));
        let e = v.endpoints.get(1).flatten().expect("entry");
        assert_eq!(e.dns_name(), "x.example.org");
        assert_eq!(e.targets().collect::<Vec<_>>(), ["1.2.3.4"]);
        assert_eq!((e.record_type(), e.record_ttl()), ("A", 60));
        assert_eq!(e.set_identifier(), "s");
        assert_eq!(e.labels(), [("k".to_string(), "v".to_string())]);
        assert_eq!(e.provider_specific(), [("n".to_string(), "v".to_string())]);
    }

    /// An entry that sets none of the rare fields holds nothing for them, so it equals an entry read
    /// without them whatever their empty spelling (absent, empty string, empty list or map).
    #[test]
    fn an_entry_without_rare_fields_holds_none() {
        let value = serde_json::json!({
            "apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "DNSEndpoint",
            "metadata": {"name": "a", "namespace": "ns"},
            "spec": {"endpoints": [
                {"dnsName": "x.example.org", "targets": ["1.2.3.4"], "recordType": "A"},
                {"dnsName": "x.example.org", "targets": ["1.2.3.4"], "recordType": "A",
                 "setIdentifier": "", "labels": {}, "providerSpecific": []}
            ]}
        });
        let v = view_of(value);
        let mut both = view::EntriesBuilder::default();
        for _ in 0..2 {
            both.push("x.example.org", ["1.2.3.4"], "A".into(), 0, view::RareFields::default());
        }
        assert_eq!(v.endpoints, both.finish(), "the empty spellings hold nothing");
        let bare = v.endpoints.get(0).flatten().expect("entry");
        assert_eq!(
            (bare.set_identifier(), bare.labels(), bare.provider_specific()),
            ("", &[][..], &[][..])
        );
    }
}
