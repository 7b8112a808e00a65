use extdns_object::ObjectKey;
use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::Arc;

use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize, Serializer};

use crate::{Labels, ObjectRefs, RecordType, Target, TargetKind, Targets, label};

/// A record TTL in seconds. Zero (or negative) means "not configured": the provider's default applies and the
/// plan never updates a record just to clear its TTL.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Ttl(pub i64);

impl Ttl {
    /// Whether a TTL was asked for; an unset TTL is left to the provider's default.
    pub fn is_configured(self) -> bool {
        self.0 > 0
    }
    fn is_unset(&self) -> bool {
        !self.is_configured()
    }
}

/// One provider-specific property (`alias`, `aws/weight`, `webhook/...`): hints for one provider, not persisted.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ProviderSpecificProperty {
    /// Property name, namespaced by provider (`aws/weight`, `webhook/...`) except the shared `alias`.
    #[serde(
        default,
        deserialize_with = "crate::null::or_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub name: String,
    /// Property value, always a string on the wire (`"true"`, `"10"`).
    #[serde(
        default,
        deserialize_with = "crate::null::or_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub value: String,
}

/// The provider-specific properties of an endpoint, in the order they were set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ProviderSpecific(pub Vec<ProviderSpecificProperty>);

impl ProviderSpecific {
    /// The value of the first property named `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|p| p.name == name).map(|p| p.value.as_str())
    }

    /// Set a property, replacing an existing one of the same name.
    pub fn set(&mut self, name: impl Into<String>, value: impl Into<String>) {
        let (name, value) = (name.into(), value.into());
        match self.0.iter_mut().find(|p| p.name == name) {
            Some(p) => p.value = value,
            None => self.0.push(ProviderSpecificProperty { name, value }),
        }
    }

    /// Removes the first property named `name` and returns its value.
    pub fn remove(&mut self, name: &str) -> Option<String> {
        let i = self.0.iter().position(|p| p.name == name)?;
        Some(self.0.remove(i).value)
    }

    /// True when no property is set (the JSON field is then omitted).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// In the order they were set.
    pub fn iter(&self) -> impl Iterator<Item = &ProviderSpecificProperty> {
        self.0.iter()
    }

    /// Sorts by name (stable), for output that must not depend on the order sources set properties in.
    pub fn sort_by_name(&mut self) {
        self.0.sort_by(|a, b| a.name.cmp(&b.name));
    }

    /// Same properties regardless of order (the plan's provider-specific diff).
    pub fn same_set(&self, other: &ProviderSpecific) -> bool {
        let a: BTreeSet<(&str, &str)> = self.iter().map(|p| (p.name.as_str(), p.value.as_str())).collect();
        let b: BTreeSet<(&str, &str)> = other.iter().map(|p| (p.name.as_str(), p.value.as_str())).collect();
        a == b
    }
}

/// One DNS name of one record type, with its targets and metadata. The JSON form is external-dns's
/// (`dnsName`, `targets`, `recordType`, `setIdentifier`, `recordTTL`, `labels`, `providerSpecific`, each
/// omitted when empty), which is also the webhook protocol's wire format; its `labels` carry the `resource`
/// label rendered from the objects ([`Endpoint::labels_as_written`]), as external-dns sends them.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    /// The record's name without a trailing dot (`web.example.org`); `dnsName` in JSON.
    #[serde(default, deserialize_with = "crate::null::or_default")]
    pub dns_name: String,
    /// The record data, one value per entry, in the order given.
    #[serde(default, deserialize_with = "crate::null::or_default")]
    pub targets: Targets,
    /// The record type; empty (`Other("")`) when the JSON omits `recordType`.
    #[serde(default = "empty_record_type", deserialize_with = "crate::null::or_default")]
    pub record_type: RecordType,
    /// Distinguishes records of the same name and type in routing policies (weighted, geo...); empty for plain records.
    #[serde(default, deserialize_with = "crate::null::or_default")]
    pub set_identifier: String,
    /// TTL in seconds; `recordTTL` in JSON, omitted when unset.
    #[serde(default, deserialize_with = "crate::null::or_default", rename = "recordTTL")]
    pub record_ttl: Ttl,
    /// Ownership labels the registry persists (`owner`, `resource`, ...); not DNS data. An endpoint a source
    /// made has no `resource` label here: it is rendered from the object `ref_objects` names where the
    /// record is written ([`Endpoint::labels_as_written`]), or left out where it names none. Records read
    /// back keep the one they were written with.
    #[serde(default, deserialize_with = "crate::null::or_default")]
    pub labels: Labels,
    /// Per-provider hints (`alias`, `aws/weight`, ...), compared by the plan but not stored in DNS as such.
    #[serde(default, deserialize_with = "crate::null::or_default")]
    pub provider_specific: ProviderSpecific,
    /// The objects this endpoint was built from, the one the record names (if any) first; in memory only.
    #[serde(skip)]
    pub ref_objects: ObjectRefs,
}

fn empty_record_type() -> RecordType {
    RecordType::Other("".into())
}

fn is_empty_record_type(t: &RecordType) -> bool {
    t.as_str().is_empty()
}

impl Default for RecordType {
    fn default() -> Self {
        empty_record_type()
    }
}

/// external-dns's JSON, field by field in its order, each omitted when empty; `labels` as written
/// ([`Endpoint::labels_as_written`]): the webhook protocol sends the `resource` label.
impl Serialize for Endpoint {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let labels: Cow<'_, Labels> = if self.ref_objects.named().is_none() {
            Cow::Borrowed(&self.labels)
        } else {
            Cow::Owned(self.labels_as_written())
        };
        let mut out = s.serialize_struct("Endpoint", 7)?;
        field(&mut out, "dnsName", &self.dns_name, self.dns_name.is_empty())?;
        field(&mut out, "targets", &self.targets, self.targets.is_empty())?;
        let record_type = &self.record_type;
        field(&mut out, "recordType", record_type, is_empty_record_type(record_type))?;
        let set_identifier = &self.set_identifier;
        field(&mut out, "setIdentifier", set_identifier, set_identifier.is_empty())?;
        field(&mut out, "recordTTL", &self.record_ttl, self.record_ttl.is_unset())?;
        field(&mut out, "labels", &*labels, labels.is_empty())?;
        let ps = &self.provider_specific;
        field(&mut out, "providerSpecific", ps, ps.is_empty())?;
        out.end()
    }
}

/// One field of a struct, or its omission.
fn field<S: SerializeStruct, T: Serialize + ?Sized>(
    out: &mut S,
    key: &'static str,
    value: &T,
    omit: bool,
) -> Result<(), S::Error> {
    if omit {
        out.skip_field(key)
    } else {
        out.serialize_field(key, value)
    }
}

/// Equality of what is stored in DNS; the in-memory object references do not count.
impl PartialEq for Endpoint {
    fn eq(&self, o: &Self) -> bool {
        self.dns_name == o.dns_name
            && self.targets == o.targets
            && self.record_type == o.record_type
            && self.set_identifier == o.set_identifier
            && self.record_ttl == o.record_ttl
            && self.labels == o.labels
            && self.provider_specific == o.provider_specific
    }
}
impl Eq for Endpoint {}

/// What identifies a record: name, type and set identifier (TTL and targets are its content).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EndpointKey {
    /// As in [`Endpoint::dns_name`].
    pub dns_name: String,
    /// As in [`Endpoint::record_type`].
    pub record_type: RecordType,
    /// As in [`Endpoint::set_identifier`]; empty for plain records.
    pub set_identifier: String,
}

impl Endpoint {
    /// A new endpoint, normalised as external-dns's constructor does: one trailing dot trimmed from the name,
    /// and from each target unless the type keeps its dots (TXT, SRV, NAPTR). Target order is kept.
    pub fn new<I, S>(dns_name: &str, record_type: RecordType, targets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<Target>,
    {
        let mut targets: Vec<Target> = targets.into_iter().map(Into::into).collect();
        if !record_type.keeps_target_dots() {
            for t in &mut targets {
                t.trim_trailing_dot();
            }
        }
        Endpoint {
            dns_name: dns_name.strip_suffix('.').unwrap_or(dns_name).to_string(),
            targets: Targets(targets),
            record_type,
            ..Endpoint::default()
        }
    }

    /// Sets the TTL in seconds.
    pub fn with_ttl(mut self, ttl: Ttl) -> Self {
        self.record_ttl = ttl;
        self
    }

    /// Sets the routing-policy set identifier.
    pub fn with_set_identifier(mut self, set_identifier: impl Into<String>) -> Self {
        self.set_identifier = set_identifier.into();
        self
    }

    /// Sets one label, replacing an existing value.
    pub fn with_label(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.labels.insert(key.into(), value.into());
        self
    }

    /// Replaces all provider-specific properties.
    pub fn with_provider_specific(mut self, ps: ProviderSpecific) -> Self {
        self.provider_specific = ps;
        self
    }

    /// Records one more source object (no repeats; the first one added is the one the record names); a
    /// shared key stays shared.
    pub fn with_ref_object(mut self, r: impl Into<Arc<ObjectKey>>) -> Self {
        self.ref_objects.insert(r);
        self
    }

    /// The record's identity; clones the three strings, so index by it rather than calling it in a loop.
    pub fn key(&self) -> EndpointKey {
        EndpointKey {
            dns_name: self.dns_name.clone(),
            record_type: self.record_type.clone(),
            set_identifier: self.set_identifier.clone(),
        }
    }

    /// One label's value.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.get(key).map(String::as_str)
    }

    /// The `owner` label: the `--txt-owner-id` of the extdns instance that manages the record.
    pub fn owner(&self) -> Option<&str> {
        self.label(label::OWNER)
    }

    /// Whether `owner` takes this record, another owner's, over in phase 2 of a hand-over
    /// (docs/migration.md): its owner is `adopt_from` (`--txt-adopt-from-owner`) and its ownership record
    /// says it was released to `owner` ([`label::RELEASED_TO`], written by the releaser's plan). The one
    /// rule of the plan and of every registry with a hand-over (TXT, crd, dynamodb), here below both so a
    /// registry never writes an adoption the plan would not ask for, nor refuses one it asks for.
    pub fn adoptable_by(&self, owner: &str, adopt_from: Option<&str>) -> bool {
        adopt_from.is_some_and(|from| {
            !from.is_empty() && self.owner() == Some(from) && self.label(label::RELEASED_TO) == Some(owner)
        })
    }

    /// The `resource` label the record is written with, naming the object that asked for it
    /// (`service/default/web`): rendered from the object it names ([`ObjectRefs::named`]), else its label
    /// as read back (from DNS, a registry, a webhook). `None` when neither names one, as for the records
    /// external-dns writes without a label (`--fqdn-target-template`, `--compatibility`); an empty label
    /// counts as none, as external-dns compares a missing label as empty. Renders a string for an endpoint
    /// naming its object: for the edges, not for loops over every endpoint.
    pub fn resource(&self) -> Option<Cow<'_, str>> {
        match self.ref_objects.named() {
            Some(object) => Some(Cow::Owned(object.resource_label())),
            None => self.label(label::RESOURCE).filter(|r| !r.is_empty()).map(Cow::Borrowed),
        }
    }

    /// The labels the record is written with (by a registry, in the webhook's and the reports' JSON): its
    /// own, with the `resource` label rendered from the object it names, if it names one.
    pub fn labels_as_written(&self) -> Labels {
        let mut labels = self.labels.clone();
        if let Some(object) = self.ref_objects.named() {
            labels.insert(label::RESOURCE, object.resource_label());
        }
        labels
    }

    /// Drops the objects, the `resource` label they render written into the labels first: the record as a
    /// store that keeps labels but no objects holds it (a registry's records, folded in after a write).
    pub fn detach_objects(&mut self) {
        if let Some(object) = self.ref_objects.named() {
            self.labels.insert(label::RESOURCE, object.resource_label());
        }
        self.ref_objects.clear();
    }

    /// Endpoints for one hostname from a mixed list of targets: the IPv4 ones become an A record, the IPv6
    /// ones an AAAA record and the rest a CNAME, in that order (external-dns's `EndpointsForHostname`, the
    /// dual-stack split). Targets keep their order. external-dns also passes the `resource` label here; the
    /// caller adds the object instead ([`Endpoint::with_ref_object`]), which the label is rendered from.
    pub fn for_hostname(
        hostname: &str,
        targets: &[Target],
        ttl: Ttl,
        provider_specific: &ProviderSpecific,
        set_identifier: &str,
    ) -> Vec<Endpoint> {
        let mut by_type: [(RecordType, Vec<&Target>); 3] = [
            (RecordType::A, vec![]),
            (RecordType::Aaaa, vec![]),
            (RecordType::Cname, vec![]),
        ];
        for t in targets {
            let slot = match t.kind() {
                TargetKind::Ipv4(_) => 0,
                TargetKind::Ipv6(_) => 1,
                _ => 2,
            };
            by_type[slot].1.push(t);
        }
        by_type
            .into_iter()
            .filter(|(_, ts)| !ts.is_empty())
            .map(|(rt, ts)| {
                Endpoint::new(hostname, rt, ts)
                    .with_ttl(ttl)
                    .with_set_identifier(set_identifier)
                    .with_provider_specific(provider_specific.clone())
            })
            .collect()
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {} [{}]",
            self.dns_name,
            self.record_ttl.0,
            self.record_type,
            self.targets.join(", ")
        )?;
        if !self.set_identifier.is_empty() {
            write!(f, " set-identifier={}", self.set_identifier)?;
        }
        Ok(())
    }
}

/// The record type a target's text calls for: A for an IPv4 address, AAAA for an IPv6 one (IPv4-mapped
/// included), CNAME for anything else. For text that is not a [`Target`] yet; a target answers
/// [`Target::suitable_type`] without parsing.
pub fn suitable_type(text: &str) -> RecordType {
    TargetKind::of(text).suitable_type()
}

/// Merge endpoints that describe the same record: same name, type, set identifier and TTL (for CNAME and DNAME
/// also the same first target, so different aliases are never merged). Targets are unioned, sorted and
/// deduplicated; the first endpoint's metadata wins, and what its record names ([`ObjectRefs::append`]);
/// object references are unioned. CNAME/DNAME endpoints
/// without targets are dropped. Unlike external-dns the output order is deterministic (first appearance).
pub fn merge_endpoints(endpoints: Vec<Endpoint>) -> Vec<Endpoint> {
    type Key = (String, RecordType, String, Ttl, Option<Target>);
    let mut index: HashMap<Key, usize> = HashMap::with_capacity(endpoints.len());
    let mut out: Vec<Endpoint> = Vec::with_capacity(endpoints.len());
    for mut e in endpoints {
        let alias_like = matches!(e.record_type, RecordType::Cname | RecordType::Dname);
        let first_target = if alias_like {
            match e.targets.first() {
                Some(t) => Some(t.clone()),
                None => continue,
            }
        } else {
            None
        };
        let key = (
            e.dns_name.clone(),
            e.record_type.clone(),
            e.set_identifier.clone(),
            e.record_ttl,
            first_target,
        );
        match index.get(&key) {
            Some(&i) => {
                let merged = &mut out[i];
                merged.targets.extend(e.targets.0);
                merged.ref_objects.append(&mut e.ref_objects);
            }
            None => {
                index.insert(key, out.len());
                out.push(e);
            }
        }
    }
    for e in &mut out {
        e.targets.normalize();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_fields_read_as_empty_as_go_encodes_nil_slices_and_maps() {
        let json = r#"{"dnsName":"a.example.org","targets":null,"recordType":null,"setIdentifier":null,
            "recordTTL":null,"labels":null,"providerSpecific":null}"#;
        let e: Endpoint = match serde_json::from_str(json) {
            Ok(e) => e,
            Err(e) => panic!("null fields refused: {e}"),
        };
        assert_eq!(e.dns_name, "a.example.org");
        assert!(e.targets.is_empty() && e.labels.is_empty() && e.provider_specific.is_empty());
        assert_eq!(e.record_type.as_str(), "");
        assert!(!e.record_ttl.is_configured());
        assert_eq!(
            serde_json::to_string(&e).ok().as_deref(),
            Some(r#"{"dnsName":"a.example.org"}"#)
        );
        let c: Option<crate::Changes> = serde_json::from_str(r#"{"create":null,"updateOld":null,"delete":null}"#).ok();
        assert_eq!(c, Some(crate::Changes::default()));
    }

    #[test]
    fn provider_specific_is_a_list_of_name_value_pairs_in_order() {
        let json = r#"{"dnsName":"a.example.org","setIdentifier":"blue","providerSpecific":[{"name":"z","value":"1"},{"name":"a","value":"2"}]}"#;
        let e: Option<Endpoint> = serde_json::from_str(json).ok();
        let names: Vec<String> = e
            .iter()
            .flat_map(|e| e.provider_specific.iter().map(|p| p.name.clone()))
            .collect();
        assert_eq!(names, ["z", "a"]);
        assert_eq!(e.as_ref().map(|e| e.set_identifier.as_str()), Some("blue"));
        assert_eq!(e.and_then(|e| serde_json::to_string(&e).ok()).as_deref(), Some(json));
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn targets(v: &[&str]) -> Vec<Target> {
        v.iter().copied().map(Target::from).collect()
    }

    #[test]
    fn constructor_trims_one_trailing_dot_from_name_and_targets() {
        let e = Endpoint::new("a.example.com.", RecordType::Cname, ["b.example.com."]);
        assert_eq!(e.dns_name, "a.example.com");
        assert_eq!(e.targets.0, strings(&["b.example.com"]));
    }

    #[test]
    fn constructor_keeps_dots_of_txt_srv_and_naptr_targets() {
        for t in [RecordType::Txt, RecordType::Srv, RecordType::Naptr] {
            let e = Endpoint::new("a.example.com", t, ["0 50 80 b.example.com."]);
            assert_eq!(e.targets.0, strings(&["0 50 80 b.example.com."]));
        }
    }

    #[test]
    fn suitable_type_follows_go_address_parsing() {
        for (target, want) in [
            ("1.2.3.4", RecordType::A),
            ("2001:db8::1", RecordType::Aaaa),
            ("::ffff:1.2.3.4", RecordType::Aaaa),
            ("fe80::1%eth0", RecordType::Aaaa),
            ("01.2.3.4", RecordType::Cname),
            (" 1.2.3.4", RecordType::Cname),
            ("lb.example.com", RecordType::Cname),
        ] {
            assert_eq!(suitable_type(target), want, "{target:?}");
        }
    }

    #[test]
    fn for_hostname_splits_targets_into_a_aaaa_and_cname_in_that_order() {
        let eps = Endpoint::for_hostname(
            "x.example.com",
            &targets(&["lb.example.com", "2001:db8::1", "1.2.3.4", "5.6.7.8"]),
            Ttl(60),
            &ProviderSpecific::default(),
            "blue",
        );
        let types: Vec<_> = eps.iter().map(|e| e.record_type.clone()).collect();
        assert_eq!(types, vec![RecordType::A, RecordType::Aaaa, RecordType::Cname]);
        assert_eq!(eps[0].targets.0, strings(&["1.2.3.4", "5.6.7.8"]));
        assert!(
            eps.iter()
                .all(|e| e.record_ttl == Ttl(60) && e.set_identifier == "blue")
        );
        assert!(eps.iter().all(|e| e.labels.is_empty() && e.resource().is_none()));
    }

    #[test]
    fn merge_unions_targets_of_the_same_record() {
        let a = Endpoint::new("x.example.com", RecordType::A, ["2.2.2.2"]);
        let b = Endpoint::new("x.example.com", RecordType::A, ["1.1.1.1", "2.2.2.2"]);
        let merged = merge_endpoints(vec![a, b]);
        assert_eq!(merged.len(), 1);
        assert_eq!(merged[0].targets.0, strings(&["1.1.1.1", "2.2.2.2"]));
    }

    #[test]
    fn merge_keeps_records_with_different_ttls_apart() {
        let a = Endpoint::new("x.example.com", RecordType::A, ["1.1.1.1"]).with_ttl(Ttl(60));
        let b = Endpoint::new("x.example.com", RecordType::A, ["2.2.2.2"]);
        assert_eq!(merge_endpoints(vec![a, b]).len(), 2);
    }

    #[test]
    fn merge_never_merges_different_cnames_and_drops_empty_ones() {
        let a = Endpoint::new("x.example.com", RecordType::Cname, ["a.example.com"]);
        let b = Endpoint::new("x.example.com", RecordType::Cname, ["b.example.com"]);
        let c = Endpoint::new("x.example.com", RecordType::Cname, ["a.example.com"]);
        let d = Endpoint::new("x.example.com", RecordType::Cname, Vec::<String>::new());
        assert_eq!(merge_endpoints(vec![a, b, c, d]).len(), 2);
    }

    #[test]
    fn json_uses_external_dns_field_names_and_omits_empty_fields() {
        let e = Endpoint::new("a.example.com", RecordType::A, ["1.2.3.4"]).with_ttl(Ttl(300));
        let json = serde_json::to_string(&e).unwrap_or_default();
        assert_eq!(
            json,
            r#"{"dnsName":"a.example.com","targets":["1.2.3.4"],"recordType":"A","recordTTL":300}"#
        );
        let back: Endpoint = serde_json::from_str(&json).unwrap_or_default();
        assert_eq!(back, e);
    }

    fn service(name: &str) -> Arc<ObjectKey> {
        Arc::new(ObjectKey::new(extdns_object::ResourceKind::Service, "default", name))
    }

    #[test]
    fn the_resource_label_is_rendered_from_the_named_object_else_read_from_the_labels() {
        let bare = Endpoint::new("x.example.com", RecordType::A, ["192.0.2.1"]);
        assert_eq!(bare.resource(), None);
        let read = bare.clone().with_label(label::RESOURCE, "service/default/old");
        assert_eq!(read.resource().as_deref(), Some("service/default/old"));
        assert_eq!(bare.clone().with_label(label::RESOURCE, "").resource(), None);
        let made = read.with_ref_object(service("web")).with_ref_object(service("api"));
        assert_eq!(made.resource().as_deref(), Some("service/default/web"));
        let written = made.labels_as_written();
        assert_eq!(
            written.get(label::RESOURCE).map(String::as_str),
            Some("service/default/web")
        );
        let mut detached = made.clone();
        detached.detach_objects();
        assert!(detached.ref_objects.is_empty());
        assert_eq!(detached.labels, written);
        assert_eq!(detached.resource(), made.resource());
    }

    /// external-dns writes the records of `--fqdn-target-template` and `--compatibility` without a
    /// `resource` label, still attaching the Service for Events: every edge leaves it out, and a merge
    /// (`MergeEndpoints`: the first keeps its labels) keeps it out.
    #[test]
    fn a_record_referencing_its_object_only_is_written_without_a_resource() {
        let mut template = Endpoint::new("x.example.com", RecordType::A, ["192.0.2.9"]).with_ref_object(service("z"));
        template.ref_objects.reference_only();
        assert_eq!(template.resource(), None);
        assert!(template.labels_as_written().is_empty());
        assert_eq!(
            serde_json::to_string(&template).unwrap_or_default(),
            r#"{"dnsName":"x.example.com","targets":["192.0.2.9"],"recordType":"A"}"#
        );
        let annotated = Endpoint::new("x.example.com", RecordType::A, ["192.0.2.1"]).with_ref_object(service("a"));
        let merged = merge_endpoints(vec![template.clone(), annotated.clone()]);
        assert_eq!(merged.len(), 1);
        assert_eq!(merged[0].resource(), None, "the first, unlabelled, keeps its labels");
        assert_eq!(merged[0].ref_objects.len(), 2, "both Services get the Events");
        let merged = merge_endpoints(vec![annotated, template.clone()]);
        assert_eq!(merged[0].resource().as_deref(), Some("service/default/a"));
        template.detach_objects();
        assert!(template.labels.is_empty() && template.ref_objects.is_empty());
    }

    #[test]
    fn json_labels_carry_the_rendered_resource_in_key_order() {
        let e = Endpoint::new("a.example.com", RecordType::A, ["1.2.3.4"])
            .with_label(label::OWNER, "me")
            .with_label("zone", "z")
            .with_ref_object(service("web"));
        assert_eq!(
            serde_json::to_string(&e).unwrap_or_default(),
            r#"{"dnsName":"a.example.com","targets":["1.2.3.4"],"recordType":"A","labels":{"owner":"me","resource":"service/default/web","zone":"z"}}"#
        );
        let back: Endpoint = serde_json::from_str(&serde_json::to_string(&e).unwrap_or_default()).unwrap_or_default();
        assert_eq!(
            back.resource(),
            e.resource(),
            "read back, the label names the same object"
        );
    }

    #[test]
    fn provider_specific_set_replaces_and_same_set_ignores_order() {
        let mut a = ProviderSpecific::default();
        a.set("alias", "false");
        a.set("alias", "true");
        a.set("aws/weight", "10");
        assert_eq!(a.get("alias"), Some("true"));
        let mut b = ProviderSpecific::default();
        b.set("aws/weight", "10");
        b.set("alias", "true");
        assert!(a.same_set(&b));
        b.remove("alias");
        assert!(!a.same_set(&b));
    }
}
