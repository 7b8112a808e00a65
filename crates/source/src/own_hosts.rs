//! What the sources share whose objects read nothing but themselves and name their own hosts and targets
//! (Contour's HTTPProxy, OpenShift's Route): external-dns's sources for them are one pattern, so extdns
//! writes it once.
//!
//! An object publishes each of its own hosts, then (unless `--ignore-hostname-annotation`) each name of its
//! hostname annotation, at its targets; the FQDN template adds its names at the same targets when nothing
//! else gave a record, or always with `--combine-fqdn-annotation` (external-dns's `CombineWithEndpoints`,
//! decided on records: names without targets count as nothing). Every endpoint refers to its object, whose
//! kind spells the `resource` label.

use std::collections::BTreeSet;
use std::sync::Arc;

use extdns_endpoint::{Endpoint, Target};
use extdns_informer::view::Meta;
use extdns_informer::{ChangeSet, ClusterStore, ObjectKey, ResourceKind};

use crate::template::{TemplateError, TemplateObject};
use crate::{Evaluation, ObjectEndpoints, Objects, SourceConfig};

/// What one object asks for before the annotations and the template: its own hosts (empty ones are
/// skipped) and the targets its status gives, used when no target annotation is set.
#[derive(Debug, Clone, Default)]
pub struct OwnHosts<'a> {
    /// The hosts the object names itself (`spec.virtualhost.fqdn`, the admitted host of a Route).
    pub hosts: Vec<&'a str>,
    /// The targets the object's status gives.
    pub status_targets: Vec<Target>,
}

pub use crate::load_balancer_targets;

/// The endpoints of one admitted object of source `source_name`, each referring to `object`; `Err` when
/// the FQDN template fails on it (its records are then held).
pub fn object_endpoints(
    common: &SourceConfig,
    source_name: &str,
    obj: &dyn TemplateObject,
    object: &ObjectKey,
    own: OwnHosts<'_>,
) -> Result<Vec<Endpoint>, TemplateError> {
    let annotations = &common.annotations;
    let a = obj.annotations();
    let ttl = annotations.ttl(a, object);
    let mut targets = annotations.targets(a);
    if targets.is_empty() {
        targets = own.status_targets;
    }
    let (provider_specific, set_identifier) = annotations.provider_specific(a);
    let for_host = |host: &str| Endpoint::for_hostname(host, &targets, ttl, &provider_specific, &set_identifier);

    let mut endpoints: Vec<Endpoint> = own
        .hosts
        .iter()
        .filter(|h| !h.is_empty())
        .flat_map(|h| for_host(h))
        .collect();
    if !common.ignore_hostname_annotation {
        for host in annotations.hostnames(a) {
            endpoints.extend(for_host(&host));
        }
    }
    if let Some(template) = &common.fqdn_template
        && (common.combine_fqdn_annotation || endpoints.is_empty())
    {
        let hosts = template.execute(obj, source_name, annotations).inspect_err(|e| {
            tracing::warn!(
                %object,
                field = "FQDN template",
                "template failed, object skipped; its records are kept as they are: {e}"
            );
        })?;
        for host in &hosts {
            endpoints.extend(for_host(host));
        }
    }
    let shared = Arc::new(object.clone());
    Ok(endpoints
        .into_iter()
        .map(|e| e.with_ref_object(Arc::clone(&shared)))
        .collect())
}

/// How a source of this pattern reads its kind's views `V` from the store.
pub struct OwnKind<V> {
    /// The kind the source reads.
    pub kind: ResourceKind,
    /// Every object of the kind in scope.
    pub all: fn(&ClusterStore) -> Vec<Arc<V>>,
    /// One object by namespace and name.
    pub one: fn(&ClusterStore, &str, &str) -> Option<Arc<V>>,
    /// The view's metadata.
    pub meta: fn(&V) -> &Meta,
}

impl<V> OwnKind<V> {
    /// The evaluation of `objects` (all, or only those of this kind among them): each object the shared
    /// filters admit evaluated by `endpoints`, the undecodable and those it fails on reported as failed.
    pub fn evaluate(
        &self,
        cluster: &ClusterStore,
        objects: Objects<'_>,
        common: &SourceConfig,
        endpoints: impl Fn(&V, &ObjectKey) -> Result<Vec<Endpoint>, TemplateError>,
    ) -> Evaluation {
        let kind = self.kind;
        let views: Vec<(ObjectKey, Arc<V>)> = match objects.of_kind(kind) {
            None => (self.all)(cluster)
                .into_iter()
                .map(|v| {
                    let m = (self.meta)(&v);
                    (ObjectKey::new(kind, &m.namespace, &m.name), v)
                })
                .collect(),
            Some(keys) => keys
                .filter_map(|k| Some((k.clone(), (self.one)(cluster, &k.namespace, &k.name)?)))
                .collect(),
        };
        let mut failed = crate::undecodable(cluster, kind, objects);
        let mut out = Vec::with_capacity(views.len());
        for (object, view) in views {
            if !common.admits(kind, (self.meta)(&view)) {
                tracing::debug!(%object, "not admitted by the filters");
                continue;
            }
            match endpoints(&view, &object) {
                Err(why) => failed.insert(object, Some(why.to_string())),
                Ok(e) if e.is_empty() => tracing::debug!(%object, "no endpoints"),
                Ok(e) => out.push(ObjectEndpoints::new(object, e)),
            }
        }
        Evaluation::new(out, failed)
    }

    /// The objects of this kind `changes` touched: an object of the pattern reads nothing but itself.
    pub fn affected(&self, changes: &ChangeSet) -> Option<BTreeSet<ObjectKey>> {
        if changes.is_everything() {
            return None;
        }
        Some(changes.of_kind(self.kind).cloned().collect())
    }
}

/// For the tests of the sources of this pattern (feature `test-support`): their flags, a store loaded from
/// objects as the API server holds them (through the manifest loader, the same ingest path as the live
/// informer), and endpoints rendered for comparison.
#[cfg(feature = "test-support")]
pub mod testing {
    use std::path::Path;
    use std::sync::Arc;

    use extdns_endpoint::Endpoint;
    use extdns_informer::manifests::{Format, Loader};
    use extdns_informer::{ClusterStore, LoadOptions};

    use crate::template::{TemplateKind, TemplateUse, template_fields};
    use crate::{FqdnTemplate, Selector, SourceConfig};

    /// The flags every source shares that a case sets.
    #[derive(Debug, Clone, Default)]
    pub struct Flags {
        /// `--namespace`.
        pub namespace: Option<&'static str>,
        /// `--annotation-filter`.
        pub annotation_filter: &'static str,
        /// `--label-filter`.
        pub label_filter: &'static str,
        /// `--fqdn-template`.
        pub fqdn_template: Option<&'static str>,
        /// `--combine-fqdn-annotation`.
        pub combine: bool,
        /// `--ignore-hostname-annotation`.
        pub ignore_hostname_annotation: bool,
    }

    impl Flags {
        /// The configuration these flags make. Panics on a filter or template that does not parse.
        pub fn config(&self) -> SourceConfig {
            SourceConfig {
                namespace: self.namespace.map(String::from),
                annotation_filter: Selector::parse(self.annotation_filter).expect("annotation filter"),
                label_filter: Selector::parse(self.label_filter).expect("label filter"),
                fqdn_template: self.fqdn_template.map(|t| {
                    Arc::new(
                        FqdnTemplate::parse(&[t.to_string()])
                            .expect("template")
                            .expect("non-empty"),
                    )
                }),
                combine_fqdn_annotation: self.combine,
                ignore_hostname_annotation: self.ignore_hostname_annotation,
                ..SourceConfig::default()
            }
        }
    }

    /// A store holding `objects` (JSON as the API server holds them), keeping the fields `config`'s
    /// template reads from objects of `kind`. Panics on an object the loader warns about.
    pub fn store(objects: &[serde_json::Value], config: &SourceConfig, kind: TemplateKind) -> ClusterStore {
        let mut options = LoadOptions::default();
        if let Some(t) = &config.fqdn_template {
            options.template_fields =
                template_fields(&[TemplateUse::new("--fqdn-template", t, &[kind])]).expect("fields");
        }
        let mut loader = Loader::new(options);
        for o in objects {
            loader
                .add_str(&o.to_string(), Path::new("test.json"), Format::Json)
                .expect("loads");
        }
        let loaded = loader.finish();
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        loaded.store
    }

    /// `name TYPE targets` (targets sorted), then `ttl=N` when configured, the provider-specific
    /// properties, `set=` the set identifier and `resource=` the label.
    pub fn render(e: &Endpoint) -> String {
        let mut targets: Vec<&str> = e.targets.iter().map(|t| t.as_str()).collect();
        targets.sort_unstable();
        let mut s = format!("{} {} {}", e.dns_name, e.record_type, targets.join(","));
        if e.record_ttl.is_configured() {
            s.push_str(&format!(" ttl={}", e.record_ttl.0));
        }
        for p in e.provider_specific.iter() {
            s.push_str(&format!(" {}={}", p.name, p.value));
        }
        if !e.set_identifier.is_empty() {
            s.push_str(&format!(" set={}", e.set_identifier));
        }
        if let Some(r) = e.resource() {
            s.push_str(&format!(" resource={r}"));
        }
        s
    }

    /// An annotation under external-dns's default prefix.
    pub fn ga(key: &str) -> String {
        format!("{}{key}", crate::PREFIX_GA)
    }

    /// `metadata` of an object as the API server holds it.
    pub fn metadata(
        name: &str,
        namespace: &str,
        annotations: &[(String, &str)],
        labels: &[(&str, &str)],
    ) -> serde_json::Value {
        let annotations: serde_json::Map<String, serde_json::Value> =
            annotations.iter().map(|(k, v)| (k.clone(), (*v).into())).collect();
        let labels: serde_json::Map<String, serde_json::Value> =
            labels.iter().map(|(k, v)| (k.to_string(), (*v).into())).collect();
        serde_json::json!({"name": name, "namespace": namespace, "annotations": annotations, "labels": labels})
    }

    /// The endpoints rendered and sorted.
    pub fn rendered(endpoints: &[Endpoint]) -> Vec<String> {
        let mut out: Vec<String> = endpoints.iter().map(render).collect();
        out.sort();
        out
    }
}
