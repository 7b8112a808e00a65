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

use async_trait::async_trait;
use extdns_endpoint::{Endpoint, Target, merge_endpoints};
use extdns_informer::view::Meta;
use extdns_informer::{ChangeSet, ClusterStore, ObjectKey, ResourceKind};

use crate::template::{TemplateError, TemplateObject};
use crate::{Evaluation, ObjectEndpoints, Objects, Source, SourceConfig, SourceError};

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

/// How a source of this pattern reads its kind's views `V` from the store: `ClusterStore::all` and
/// `ClusterStore::get` for `V`, so that a source reading several kinds of one view (the F5 kinds, Traefik's
/// routers) builds one per kind.
pub struct OwnKind<V> {
    /// The kind the source reads.
    pub kind: ResourceKind,
    /// Every object of a kind in scope.
    pub all: fn(&ClusterStore, ResourceKind) -> Vec<Arc<V>>,
    /// One object by its key.
    pub one: fn(&ClusterStore, &ObjectKey) -> Option<Arc<V>>,
    /// The view's metadata.
    pub meta: fn(&V) -> &Meta,
}

/// The [`OwnKind`] of a kind whose view keeps its metadata in a field `meta` (every view of the store's):
/// `ClusterStore::all` and `ClusterStore::get` for the view, so that a source names only its kind and
/// not the lookups every source of the pattern shares. The view comes from where it is used
/// (`const HOSTS: OwnKind<AmbassadorHost> = own_kind!(ResourceKind::AmbassadorHost);`); the caller
/// depends on `extdns_informer`, as every source crate does.
#[macro_export]
macro_rules! own_kind {
    ($kind:expr) => {
        $crate::own_hosts::OwnKind {
            kind: $kind,
            all: ::extdns_informer::ClusterStore::all,
            one: ::extdns_informer::ClusterStore::get,
            meta: |v| &v.meta,
        }
    };
}

impl<V> OwnKind<V> {
    /// The views of `objects` (all of this kind in scope, or only those of this kind among them) with
    /// their keys: what a source of one kind evaluates, whatever it makes of each.
    pub fn views(&self, cluster: &ClusterStore, objects: Objects<'_>) -> Vec<(ObjectKey, Arc<V>)> {
        let kind = self.kind;
        match objects.of_kind(kind) {
            None => (self.all)(cluster, kind)
                .into_iter()
                .map(|v| {
                    let m = (self.meta)(&v);
                    (ObjectKey::new(kind, &m.namespace, &m.name), v)
                })
                .collect(),
            Some(keys) => keys
                .filter_map(|k| Some((k.clone(), (self.one)(cluster, k)?)))
                .collect(),
        }
    }

    /// The evaluation of `objects` (all, or only those of this kind among them): each object the shared
    /// filters admit evaluated by `endpoints`, the undecodable and those it fails on reported as failed
    /// (with why; `endpoints` logs it where the source has more to say).
    pub fn evaluate<E: std::fmt::Display>(
        &self,
        cluster: &ClusterStore,
        objects: Objects<'_>,
        common: &SourceConfig,
        mut endpoints: impl FnMut(&V, &ObjectKey) -> Result<Vec<Endpoint>, E>,
    ) -> Evaluation {
        let kind = self.kind;
        let views = self.views(cluster, objects);
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
        crate::changed_of_kind(changes, self.kind)
    }
}

/// A source of this pattern over one kind. Its [`Source`] follows from its name, its kind and how it
/// evaluates (implementing this trait implements [`Source`]), so two such sources differ only where their
/// objects do.
pub trait OwnKindSource: Send + Sync {
    /// The view of the kind read.
    type View: 'static;
    /// The `--source` name.
    const NAME: &'static str;
    /// How the source reads its kind from the store.
    const KIND: OwnKind<Self::View>;

    /// What [`Source::evaluate`] returns, without the async wrapper (nothing here waits).
    fn evaluate_now(&self, cluster: &ClusterStore, objects: Objects<'_>) -> Evaluation;
}

#[async_trait]
impl<S: OwnKindSource> Source for S {
    fn name(&self) -> &str {
        S::NAME
    }

    fn watched_kinds(&self) -> Vec<ResourceKind> {
        vec![S::KIND.kind]
    }

    async fn evaluate(&self, cluster: &ClusterStore, objects: Objects<'_>) -> Result<Evaluation, SourceError> {
        Ok(self.evaluate_now(cluster, objects))
    }

    /// An object of the pattern reads nothing but itself: a change re-evaluates the changed objects only.
    fn affected(&self, _cluster: &ClusterStore, changes: &ChangeSet) -> Option<BTreeSet<ObjectKey>> {
        S::KIND.affected(changes)
    }

    /// Targets of one record joined across objects (external-dns's `MergeEndpoints`); then, among equal
    /// records that differ only in TTL, the one with a configured TTL first ([`crate::tie`]).
    fn merge(&self, endpoints: Vec<Endpoint>) -> Vec<Endpoint> {
        crate::tie::configured_ttl_first(merge_endpoints(endpoints))
    }
}
