//! The node source (`--source=node`): DNS records for the cluster's Nodes.
//!
//! A Node publishes its own name, or the names `--fqdn-template` makes of it (both with
//! `--combine-fqdn-annotation`), pointed at its `target` annotation or else at its addresses: the
//! `ExternalIP`s, with the IPv6 `InternalIP`s added by `--expose-internal-ipv6`, or the `InternalIP`s when it
//! has no `ExternalIP` ([`addresses`]). `--exclude-unschedulable` (on by default) skips cordoned Nodes;
//! `--label-filter`, `--annotation-filter` and the `controller` annotation admit Nodes as they admit any
//! object, and `--namespace` does not apply (Nodes have none). As in external-dns v0.23 the `hostname`
//! annotation is not read on Nodes (kubernetes-sigs/external-dns#6069 asks for it). See docs/sources/node.md.
//!
//! ```
//! use std::path::Path;
//!
//! use extdns_informer::LoadOptions;
//! use extdns_informer::manifests::{Format, Loader};
//! use extdns_source::{SourceConfig, SourceExt};
//! use extdns_source_node::{NodeSource, NodeSourceConfig};
//!
//! let yaml = "
//! apiVersion: v1
//! kind: Node
//! metadata: {name: worker-1.example.org}
//! status: {addresses: [{type: InternalIP, address: 10.0.0.1}, {type: ExternalIP, address: 192.0.2.1}]}
//! ";
//! let mut loader = Loader::new(LoadOptions::default());
//! loader.add_str(yaml, Path::new("example.yaml"), Format::Yaml)?;
//! let store = loader.finish().store;
//!
//! let source = NodeSource::new(NodeSourceConfig::new(SourceConfig::default()));
//! let endpoints = futures::executor::block_on(source.evaluate_all(&store))?.endpoints;
//! assert_eq!(endpoints.len(), 1);
//! assert_eq!(endpoints[0].dns_name, "worker-1.example.org");
//! assert_eq!(endpoints[0].targets[0].as_str(), "192.0.2.1");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod addresses;

use std::collections::BTreeSet;
use std::sync::Arc;

use async_trait::async_trait;
use extdns_endpoint::{Endpoint, InvalidEndpoint, Target, Ttl, merge_endpoints, validate_dns_name};
use extdns_informer::view::Node;
use extdns_informer::{ChangeSet, ClusterStore, ObjectKey, ResourceKind};
use extdns_source::TemplateError;
use extdns_source::template::{FqdnTemplate, combine_step, target_endpoints};
use extdns_source::{Evaluation, ObjectEndpoints, Objects, Source, SourceConfig, SourceError};

/// The `--source` name.
pub const SOURCE_NAME: &str = "node";

/// The configuration of the node source.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct NodeSourceConfig {
    /// `--label-filter`, `--annotation-filter`, annotation prefixes, `--fqdn-template`,
    /// `--combine-fqdn-annotation`. Its namespace is not read: Nodes have none.
    pub common: SourceConfig,
    /// `--fqdn-target-template`: `host:target` pairs made of each Node.
    pub fqdn_target_template: Option<Arc<FqdnTemplate>>,
    /// `--exclude-unschedulable` (default on): cordoned Nodes publish nothing.
    pub exclude_unschedulable: bool,
    /// `--expose-internal-ipv6`: a Node with `ExternalIP`s also publishes its IPv6 `InternalIP`s.
    pub expose_internal_ipv6: bool,
}

impl NodeSourceConfig {
    /// What every source shares, with external-dns's defaults for the rest (unschedulable Nodes excluded).
    pub fn new(common: SourceConfig) -> Self {
        NodeSourceConfig {
            common,
            fqdn_target_template: None,
            exclude_unschedulable: true,
            expose_internal_ipv6: false,
        }
    }
}

/// The node source.
#[derive(Clone, Debug)]
pub struct NodeSource {
    config: NodeSourceConfig,
}

/// Why a Node could not be evaluated: its records are then held, and the message names the field.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NodeError {
    /// Neither the `target` annotation nor an `ExternalIP` or `InternalIP` address gives a target.
    #[error("no ExternalIP or InternalIP address to publish")]
    NoAddress,
    /// A name (the Node's own, or one a template made) is not a valid DNS name.
    #[error("invalid hostname {name:?}: {source}")]
    InvalidName {
        /// The name, shortened for the message.
        name: String,
        /// Why it is invalid.
        source: InvalidEndpoint,
    },
    /// `--fqdn-template` cannot run on the Node.
    #[error("FQDN template failed: {0}")]
    Template(#[source] TemplateError),
    /// `--fqdn-target-template` cannot run on the Node.
    #[error("FQDN target template failed: {0}")]
    TargetTemplate(#[source] TemplateError),
}

impl NodeSource {
    /// The source over every Node `config` admits. `--namespace` is dropped from the shared filters, as
    /// external-dns watches Nodes cluster-wide whatever it says.
    pub fn new(mut config: NodeSourceConfig) -> Self {
        config.common.namespace = None;
        NodeSource { config }
    }

    /// Its configuration.
    pub fn config(&self) -> &NodeSourceConfig {
        &self.config
    }

    /// Whether any template gives names (external-dns's `HasDNSNameTemplate`): then the Node's own name is
    /// published only with `--combine-fqdn-annotation`.
    fn has_name_template(&self) -> bool {
        self.config.common.fqdn_template.is_some() || self.config.fqdn_target_template.is_some()
    }

    /// The endpoints of one admitted Node, in external-dns's order of steps: its own name (unless a template
    /// gives the names), then the `--fqdn-target-template` pairs, then the `--fqdn-template` names; a template
    /// step adds to what came before with `--combine-fqdn-annotation` and otherwise runs only when nothing did.
    fn node_endpoints(&self, node: &Node, object: &Arc<ObjectKey>) -> Result<Vec<Endpoint>, NodeError> {
        let common = &self.config.common;
        let combine = common.combine_fqdn_annotation;
        let mut endpoints = Vec::new();
        if !self.has_name_template() || combine {
            endpoints = self.endpoints_for_names(node, object, std::slice::from_ref(&node.name))?;
        }
        if let Some(template) = &self.config.fqdn_target_template {
            combine_step(&mut endpoints, combine, || {
                target_template_endpoints(node, object, template, common)
            })?;
        }
        if let Some(template) = &common.fqdn_template {
            combine_step(&mut endpoints, combine, || {
                let names = template
                    .execute(node, SOURCE_NAME, &common.annotations)
                    .map_err(NodeError::Template)?;
                self.endpoints_for_names(node, object, &names)
            })?;
        }
        Ok(endpoints)
    }

    /// One record per name and address family, pointed at the `target` annotation or the Node's addresses,
    /// with the TTL annotation's TTL; each names the Node (`resource: node/<name>`).
    fn endpoints_for_names(
        &self,
        node: &Node,
        object: &Arc<ObjectKey>,
        names: &[String],
    ) -> Result<Vec<Endpoint>, NodeError> {
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let annotations = &self.config.common.annotations;
        let ttl: Ttl = annotations.ttl(&node.annotations, object);
        let mut targets = annotations.targets(&node.annotations);
        if targets.is_empty() {
            targets = addresses::of(node, self.config.expose_internal_ipv6)
                .ok_or(NodeError::NoAddress)?
                .into_iter()
                .map(Target::from)
                .collect();
        }
        let mut out = Vec::with_capacity(names.len() * targets.len());
        for name in names {
            let name = valid_name(name)?;
            for target in &targets {
                let endpoint = Endpoint::new(name, target.suitable_type(), [target.clone()])
                    .with_ttl(ttl)
                    .with_ref_object(Arc::clone(object));
                out.push(endpoint);
            }
        }
        Ok(merge_endpoints(out))
    }

    /// What [`Source::evaluate`] returns, without the async wrapper (nothing here waits).
    pub fn evaluate_now(&self, cluster: &ClusterStore, objects: Objects<'_>) -> Evaluation {
        let kind = ResourceKind::Node;
        let nodes: Vec<Arc<Node>> = match objects.of_kind(kind) {
            None => cluster.nodes(),
            Some(keys) => keys.filter_map(|k| cluster.node(&k.name)).collect(),
        };
        let mut failed = extdns_source::undecodable(cluster, kind, objects);
        let mut out = Vec::with_capacity(nodes.len());
        for node in nodes {
            let object = Arc::new(ObjectKey::new(kind, "", &node.name));
            if !self.config.common.admits_meta(kind, node.meta()) {
                tracing::debug!(%object, "not admitted by the filters");
                continue;
            }
            if node.unschedulable && self.config.exclude_unschedulable {
                tracing::debug!(%object, "skipped: unschedulable (--exclude-unschedulable)");
                continue;
            }
            match self.node_endpoints(&node, &object) {
                Ok(endpoints) if endpoints.is_empty() => {
                    tracing::debug!(%object, "no endpoints could be generated");
                }
                Ok(endpoints) => out.push(ObjectEndpoints::new((*object).clone(), endpoints)),
                Err(why) => {
                    tracing::warn!(%object, "{why}; the Node's records are kept as they are");
                    failed.insert((*object).clone(), Some(why.to_string()));
                }
            }
        }
        Evaluation::new(out, failed)
    }
}

/// A name as a record takes it (one trailing dot dropped), or why not.
fn valid_name(name: &str) -> Result<&str, NodeError> {
    let name = name.strip_suffix('.').unwrap_or(name);
    validate_dns_name(name).map_err(|source| NodeError::InvalidName {
        name: extdns_source::shorten(name).into_owned(),
        source,
    })?;
    Ok(name)
}

/// `--fqdn-target-template` on one Node ([`target_endpoints`]): its records name no `resource` (as
/// external-dns writes them; the Node is still theirs for Events).
fn target_template_endpoints(
    node: &Node,
    object: &Arc<ObjectKey>,
    template: &FqdnTemplate,
    common: &SourceConfig,
) -> Result<Vec<Endpoint>, NodeError> {
    let endpoints = target_endpoints(template, node, object, SOURCE_NAME, &common.annotations)
        .map_err(NodeError::TargetTemplate)?;
    Ok(endpoints
        .into_iter()
        .map(|e| {
            let mut e = e.with_ref_object(Arc::clone(object));
            e.ref_objects.reference_only();
            e
        })
        .collect())
}

#[async_trait]
impl Source for NodeSource {
    fn name(&self) -> &str {
        SOURCE_NAME
    }

    fn watched_kinds(&self) -> Vec<ResourceKind> {
        vec![ResourceKind::Node]
    }

    async fn evaluate(&self, cluster: &ClusterStore, objects: Objects<'_>) -> Result<Evaluation, SourceError> {
        Ok(self.evaluate_now(cluster, objects))
    }

    /// A Node reads nothing but itself: a change re-evaluates the changed Nodes only.
    fn affected(&self, _cluster: &ClusterStore, changes: &ChangeSet) -> Option<BTreeSet<ObjectKey>> {
        extdns_source::changed_of_kind(changes, ResourceKind::Node)
    }

    /// Targets of one record joined across Nodes (external-dns's `MergeEndpoints`): two Nodes given one
    /// name by a template publish both addresses.
    fn merge(&self, endpoints: Vec<Endpoint>) -> Vec<Endpoint> {
        merge_endpoints(endpoints)
    }
}

#[cfg(test)]
mod tests;
