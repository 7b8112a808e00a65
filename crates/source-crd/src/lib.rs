//! The DNSEndpoint source (`--source=crd`): the records external-dns's DNSEndpoint objects spell out.
//!
//! Each `spec.endpoints[]` entry is one record as written: name, targets, type, set identifier, TTL,
//! labels and provider-specific properties. The source names the object on each (its `resource` label,
//! `crd/<ns>/<name>`, is rendered from it where the record is written; an entry's own goes) and
//! checks targets as external-dns v0.22 does: a trailing dot is allowed for CNAME and DNAME (either form)
//! and SRV (RFC 2782 wants it), required for NAPTR, and rejected for the other types except TXT and MX,
//! whose text is free. TLSA (as external-dns v0.23), SVCB and HTTPS (RFC 9460, beyond external-dns) targets
//! are parsed and stored in their canonical text (`extdns_endpoint::canonical_target`); one that does not
//! parse is a broken rule naming its field. An entry that breaks a rule (those, or any rule every record follows) is skipped
//! with a warning naming the object and the entry's index; the object's other entries publish, and it is
//! reported as failing in part ([`held_records`]): the records the skipped entry published before stay.
//! A, AAAA and CNAME entries without targets pass through for `--default-targets` (a CNAME without targets
//! is then dropped by the merge, as external-dns drops it). Objects are scoped by `--namespace`,
//! `--label-filter` and `--annotation-filter`. The object's shared-name annotations or labels
//! (`external-dns.kubernetes.io/shared: "true"`, docs/shared-names.md) mark every
//! entry, as an entry's `providerSpecific` `extdns/shared` marks itself.
//!
//! The group, version and kind the objects come from (`--crd-source-apiversion`, `--crd-source-kind`) are
//! the informer's business ([`extdns_informer::KindOverrides`]); the source reads the one DNSEndpoint index.
//!
//! ```
//! use std::path::Path;
//!
//! use extdns_informer::LoadOptions;
//! use extdns_informer::manifests::{Format, Loader};
//! use extdns_source::SourceExt;
//! use extdns_source_crd::{CrdSource, CrdSourceConfig};
//!
//! let yaml = "
//! apiVersion: externaldns.k8s.io/v1alpha1
//! kind: DNSEndpoint
//! metadata: {name: web, namespace: default}
//! spec:
//!   endpoints:
//!   - {dnsName: web.example.org, recordType: A, targets: [192.0.2.10], recordTTL: 60}
//! ";
//! let mut loader = Loader::new(LoadOptions::default());
//! loader.add_str(yaml, Path::new("example.yaml"), Format::Yaml)?;
//! let store = loader.finish().store;
//!
//! let source = CrdSource::new(CrdSourceConfig::default());
//! let endpoints = futures::executor::block_on(source.evaluate_all(&store))?.endpoints;
//! assert_eq!(endpoints.len(), 1);
//! assert_eq!(endpoints[0].dns_name, "web.example.org");
//! // The object names the record; its `resource` label is rendered from it where the record is written.
//! assert_eq!(endpoints[0].resource().as_deref(), Some("crd/default/web"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod entry;
mod shared;
#[cfg(test)]
mod tests;

use std::collections::BTreeSet;
use std::sync::Arc;

use async_trait::async_trait;
use extdns_endpoint::{Endpoint, RecordType, merge_endpoints};
use extdns_informer::view::DnsEndpoint;
use extdns_informer::{ChangeSet, ClusterStore, ObjectKey, ResourceKind};
use extdns_source::annotations::Annotations;
use extdns_source::{Evaluation, HeldRecords, ObjectEndpoints, Objects, Selector, Source, SourceError};

pub use entry::{Invalid, InvalidEntry};

/// The `--source` name, also the `resource` label's kind and the object references' source.
pub const SOURCE_NAME: &str = "crd";

/// What the crd source is told by the flags.
#[derive(Debug, Clone, Default)]
pub struct CrdSourceConfig {
    /// `--namespace`; `None` or empty for all.
    pub namespace: Option<String>,
    /// `--annotation-filter`.
    pub annotation_filter: Selector,
    /// `--label-filter`.
    pub label_filter: Selector,
    /// The annotation prefixes read: the annotation filter sees a key set only under the legacy prefix
    /// under the configured one too, as external-dns v0.23 copies it (#6703) on every object it caches,
    /// DNSEndpoints included.
    pub annotations: Annotations,
    /// The provider object this pipeline publishes to (`--dns-provider-crds`); `None` with the flags'
    /// provider.
    pub route: Option<extdns_source::ProviderRoute>,
}

impl CrdSourceConfig {
    /// Whether an object is in scope. Unlike the other sources, external-dns's crd source does not read
    /// the `controller` annotation, so neither does this one.
    pub fn admits(&self, o: &DnsEndpoint) -> bool {
        if let Some(ns) = self.namespace.as_deref()
            && !ns.is_empty()
            && ns != o.meta.namespace
        {
            return false;
        }
        let a = &o.meta.annotations;
        if let Some(route) = &self.route
            && !route.admits(&self.annotations, &o.meta.namespace, a)
        {
            return false;
        }
        self.annotation_filter
            .matches_by(|key| self.annotations.filter_value(a, key))
            && self.label_filter.matches(&o.meta.labels)
    }
}

/// The DNSEndpoint source.
pub struct CrdSource {
    config: CrdSourceConfig,
}

impl CrdSource {
    /// A source over DNSEndpoints in `config`'s scope.
    pub fn new(config: CrdSourceConfig) -> Self {
        CrdSource { config }
    }

    /// The admitted objects among `objects`, in object order.
    fn selected(&self, cluster: &ClusterStore, objects: Objects<'_>) -> Vec<Arc<DnsEndpoint>> {
        match objects.of_kind(ResourceKind::DnsEndpoint) {
            None => cluster.dns_endpoints(),
            Some(keys) => keys
                .filter_map(|k| cluster.dns_endpoint(&k.namespace, &k.name))
                .collect(),
        }
        .into_iter()
        .filter(|o| self.config.admits(o))
        .collect()
    }
}

/// One object's records, and its invalid entries, left out. Pure: the source warns about them once per
/// evaluation ([`warn_invalid`]); the status writer reads them again without repeating the warning.
pub fn object_endpoints(o: &DnsEndpoint) -> (Vec<Endpoint>, Vec<InvalidEntry>) {
    // One key shared by every endpoint of the object.
    let reference = std::sync::Arc::new(ObjectKey::new(
        ResourceKind::DnsEndpoint,
        &o.meta.namespace,
        &o.meta.name,
    ));
    let mut endpoints = Vec::with_capacity(o.endpoints.len());
    let mut invalid = Vec::new();
    for (index, entry) in o.endpoints.iter().enumerate() {
        let Some(entry) = entry else {
            continue;
        };
        match entry::endpoint(entry) {
            // The object names every record (`crd/<namespace>/<name>`, rendered where it is written), whatever
            // `resource` label the entry itself gives: that one goes, as external-dns overwrites it.
            Ok(mut e) => {
                e.labels.remove(extdns_endpoint::label::RESOURCE);
                endpoints.push(e.with_ref_object(std::sync::Arc::clone(&reference)));
            }
            Err(why) => invalid.push(InvalidEntry { index, why }),
        }
    }
    (endpoints, invalid)
}

/// One warning per skipped entry, naming the object, the entry's index and name, and why.
fn warn_invalid(o: &DnsEndpoint, invalid: &[InvalidEntry]) {
    for i in invalid {
        let name = o
            .endpoints
            .get(i.index)
            .flatten()
            .map(|e| extdns_source::shorten(e.dns_name()))
            .unwrap_or_default();
        tracing::warn!(
            "DNSEndpoint {}/{}: spec.endpoints[{}] ({name}) skipped: {}",
            o.meta.namespace,
            o.meta.name,
            i.index,
            i.why,
        );
    }
}

/// The records a skipped entry may have published, which stay until it is fixed (bad input never takes a
/// record offline): those at its name and type (every type when the type is unknown), or, when its name
/// is unusable too, every record of the object its valid entries no longer ask for.
pub fn held_records(o: &DnsEndpoint, invalid: &[InvalidEntry]) -> HeldRecords {
    let mut held = HeldRecords::new();
    for i in invalid {
        match o.endpoints.get(i.index).flatten() {
            Some(entry) if !i.why.name_unknown() => {
                let record_type = RecordType::KNOWN
                    .into_iter()
                    .find(|t| t.as_str() == entry.record_type());
                held.name(entry.dns_name(), record_type);
            }
            _ => held.uncovered(),
        }
    }
    held
}

/// The skipped entries, for the object's Warning event and its `Accepted` condition.
pub fn describe(invalid: &[InvalidEntry]) -> String {
    invalid
        .iter()
        .map(|i| format!("spec.endpoints[{}] is skipped: {}", i.index, i.why))
        .collect::<Vec<_>>()
        .join("; ")
}

#[async_trait]
impl Source for CrdSource {
    fn name(&self) -> &str {
        SOURCE_NAME
    }

    fn watched_kinds(&self) -> Vec<ResourceKind> {
        vec![ResourceKind::DnsEndpoint]
    }

    async fn evaluate(&self, cluster: &ClusterStore, objects: Objects<'_>) -> Result<Evaluation, SourceError> {
        let mut failed = extdns_source::undecodable(cluster, ResourceKind::DnsEndpoint, objects);
        let mut out = Vec::new();
        for o in self.selected(cluster, objects) {
            let object = ObjectKey::new(ResourceKind::DnsEndpoint, &o.meta.namespace, &o.meta.name);
            let (mut endpoints, invalid) = object_endpoints(&o);
            shared::apply(&shared::object_properties(&self.config.annotations, &o), &mut endpoints);
            if !invalid.is_empty() {
                warn_invalid(&o, &invalid);
                failed.insert_part(object.clone(), Some(describe(&invalid)), held_records(&o, &invalid));
            }
            if !endpoints.is_empty() {
                out.push(ObjectEndpoints::new(object, endpoints));
            }
        }
        Ok(Evaluation::new(out, failed))
    }

    /// A DNSEndpoint reads nothing but itself: a change re-evaluates the changed objects only, so an edited
    /// DNSEndpoint is written at once instead of waiting for the next full sync (`--min-event-sync-interval`
    /// after the last one). The status writes that follow a sync come back as changes of their objects and
    /// cost one re-evaluation of each.
    fn affected(&self, _cluster: &ClusterStore, changes: &ChangeSet) -> Option<BTreeSet<ObjectKey>> {
        extdns_source::changed_of_kind(changes, ResourceKind::DnsEndpoint)
    }

    /// external-dns's `MergeEndpoints` over the whole source: records of one name, type, set identifier
    /// and TTL (and, for CNAME and DNAME, first target) become one, the first one's labels winning; CNAME
    /// and DNAME records without targets are dropped. Names are merged on their own, so an incremental
    /// sync that merges only the touched names agrees.
    fn merge(&self, endpoints: Vec<Endpoint>) -> Vec<Endpoint> {
        merge_endpoints(endpoints)
    }
}
