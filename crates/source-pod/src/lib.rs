//! The pod source (`--source=pod`): DNS records for Pods, from their annotations, `--pod-source-domain`
//! and the FQDN templates.
//!
//! A Pod publishes ([`annotations`]) its `internal-hostname` names at its IP, its `hostname` names at its
//! Node's public addresses (the `ExternalIP`s and the IPv6 `InternalIP`s), and `<pod>.<domain>` at its IP
//! with `--pod-source-domain`; its `target` annotation replaces those addresses. With
//! `--compatibility=kops-dns-controller` kOps's `dns.alpha.kubernetes.io/internal` and `/external` do the
//! same as the two hostname annotations. `--ignore-non-host-network-pods` publishes these only for
//! `hostNetwork` Pods. Then, as in external-dns v0.23, `--fqdn-target-template` pairs and `--fqdn-template`
//! names (at every Pod IP, whatever its network) are published when nothing else was, or beside it with
//! `--combine-fqdn-annotation`. The records carry the `ttl` annotation's TTL and, as external-dns writes
//! them, no `resource` label. `--namespace`, `--label-filter`, `--annotation-filter` and the `controller`
//! annotation admit Pods as they admit any object. See docs/sources/pod.md.
//!
//! The source reads every Pod in scope ([`Source::reads_whole`]), where the service source reads only the
//! Pods its Services select, and the Nodes its Pods run on.
//!
//! ```
//! use std::path::Path;
//!
//! use extdns_informer::LoadOptions;
//! use extdns_informer::manifests::{Format, Loader};
//! use extdns_source::{SourceConfig, SourceExt};
//! use extdns_source_pod::{PodSource, PodSourceConfig};
//!
//! let yaml = "
//! apiVersion: v1
//! kind: Pod
//! metadata:
//!   name: agent
//!   namespace: kube-system
//!   annotations: {external-dns.alpha.kubernetes.io/internal-hostname: agent.internal.example.org}
//! spec: {hostNetwork: true, nodeName: worker-1}
//! status: {podIP: 10.0.0.7}
//! ";
//! let mut loader = Loader::new(LoadOptions::default());
//! loader.add_str(yaml, Path::new("example.yaml"), Format::Yaml)?;
//! let store = loader.finish().store;
//!
//! let source = PodSource::new(PodSourceConfig::new(SourceConfig::default()));
//! let endpoints = futures::executor::block_on(source.evaluate_all(&store))?.endpoints;
//! assert_eq!(endpoints.len(), 1);
//! assert_eq!(endpoints[0].dns_name, "agent.internal.example.org");
//! assert_eq!(endpoints[0].targets[0].as_str(), "10.0.0.7");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod annotations;
mod records;

use std::collections::BTreeSet;
use std::sync::Arc;

use async_trait::async_trait;
use extdns_endpoint::{Endpoint, InvalidEndpoint, Target, merge_endpoints};
use extdns_informer::view::Pod;
use extdns_informer::{ChangeSet, ClusterStore, ObjectKey, ResourceKind, Unavailable};
use extdns_source::TemplateError;
use extdns_source::template::{FqdnTemplate, combine_step, target_endpoints};
use extdns_source::{Evaluation, Failures, ObjectEndpoints, Objects, Source, SourceConfig, SourceError};

use crate::records::Records;

/// The `--source` name.
pub const SOURCE_NAME: &str = "pod";

/// The configuration of the pod source.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct PodSourceConfig {
    /// `--namespace`, `--label-filter`, `--annotation-filter`, annotation prefixes, `--fqdn-template`,
    /// `--combine-fqdn-annotation` (`--ignore-hostname-annotation` is not read, as in external-dns).
    pub common: SourceConfig,
    /// `--fqdn-target-template`: `host:target` pairs made of each Pod.
    pub fqdn_target_template: Option<Arc<FqdnTemplate>>,
    /// `--ignore-non-host-network-pods`: only `hostNetwork` Pods publish their annotations' names.
    pub ignore_non_host_network_pods: bool,
    /// `--pod-source-domain`: each Pod also publishes `<name>.<domain>` at its IP.
    pub pod_source_domain: Option<String>,
    /// `--compatibility=kops-dns-controller`: kOps's annotations count too.
    pub kops_dns_controller: bool,
}

impl PodSourceConfig {
    /// What every source shares, with external-dns's defaults for the rest.
    pub fn new(common: SourceConfig) -> Self {
        PodSourceConfig {
            common,
            ..PodSourceConfig::default()
        }
    }
}

/// The pod source.
#[derive(Clone, Debug)]
pub struct PodSource {
    config: PodSourceConfig,
}

/// Why a Pod could not be evaluated; the message names the field.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PodError {
    /// A name (from an annotation, `--pod-source-domain` or a template) is not a valid DNS name.
    #[error("invalid hostname {name:?}: {source}")]
    InvalidName {
        /// The name, shortened for the message.
        name: String,
        /// Why it is invalid.
        source: InvalidEndpoint,
    },
    /// Its `hostname` names point at its Node's addresses, and Nodes cannot be listed.
    #[error("its hostname names need its Node's addresses; Nodes unavailable: {0}")]
    NodesUnavailable(Unavailable),
    /// `--fqdn-template` cannot run on the Pod.
    #[error("FQDN template failed: {0}")]
    Template(#[source] TemplateError),
    /// `--fqdn-target-template` cannot run on the Pod.
    #[error("FQDN target template failed: {0}")]
    TargetTemplate(#[source] TemplateError),
}

impl PodSource {
    /// The source over the Pods `config` admits.
    pub fn new(config: PodSourceConfig) -> Self {
        PodSource { config }
    }

    /// Its configuration.
    pub fn config(&self) -> &PodSourceConfig {
        &self.config
    }

    /// The endpoints of one admitted Pod, in external-dns's order of steps: its annotations and
    /// `--pod-source-domain`, then the `--fqdn-target-template` pairs, then the `--fqdn-template` names; a
    /// template step adds to what came before with `--combine-fqdn-annotation`, and otherwise runs only when
    /// nothing did.
    fn pod_endpoints(&self, cluster: &ClusterStore, pod: &Pod, object: &ObjectKey) -> Result<Vec<Endpoint>, PodError> {
        let common = &self.config.common;
        let combine = common.combine_fqdn_annotation;
        let mut endpoints = annotations::endpoints(&self.config, cluster, pod, object)?;
        if let Some(template) = &self.config.fqdn_target_template {
            combine_step(&mut endpoints, combine, || {
                target_endpoints(template, pod, object, SOURCE_NAME, &common.annotations)
                    .map_err(PodError::TargetTemplate)
            })?;
        }
        if let Some(template) = &common.fqdn_template {
            combine_step(&mut endpoints, combine, || {
                let names = template
                    .execute(pod, SOURCE_NAME, &common.annotations)
                    .map_err(PodError::Template)?;
                template_endpoints(&self.config, pod, object, &names)
            })?;
        }
        Ok(endpoints)
    }

    /// What [`Source::evaluate`] returns, without the async wrapper (nothing here waits).
    pub fn evaluate_now(&self, cluster: &ClusterStore, objects: Objects<'_>) -> Evaluation {
        let kind = ResourceKind::Pod;
        if let Some(why) = cluster.unavailable(kind) {
            let mut failed = Failures::new();
            failed.insert_kind(kind, format!("{kind} unavailable: {why}"));
            return Evaluation::new(Vec::new(), failed);
        }
        let pods: Vec<Arc<Pod>> = match objects.of_kind(kind) {
            None => cluster.all_pods(),
            Some(keys) => keys.filter_map(|k| cluster.pod(&k.namespace, &k.name)).collect(),
        };
        let mut failed = extdns_source::undecodable(cluster, kind, objects);
        let mut out = Vec::new();
        for pod in pods {
            let object = ObjectKey::new(kind, &pod.namespace, &pod.name);
            if !self.config.common.admits_meta(kind, pod.meta()) {
                tracing::debug!(%object, "not admitted by the filters");
                continue;
            }
            match self.pod_endpoints(cluster, &pod, &object) {
                Ok(endpoints) if endpoints.is_empty() => {}
                Ok(endpoints) => {
                    // One key shared by every endpoint of the Pod. The records name no object: external-dns
                    // writes no `resource` label for Pods.
                    let shared = Arc::new(object.clone());
                    let endpoints = endpoints
                        .into_iter()
                        .map(|e| {
                            let mut e = e.with_ref_object(Arc::clone(&shared));
                            e.ref_objects.reference_only();
                            e
                        })
                        .collect();
                    out.push(ObjectEndpoints::new(object, endpoints));
                }
                Err(why) => {
                    tracing::warn!(%object, "{why}; the Pod is skipped");
                    failed.insert(object, Some(why.to_string()));
                }
            }
        }
        Evaluation::new(out, failed)
    }
}

/// `--fqdn-template` on one Pod: each name at every Pod IP, with the TTL annotation's TTL.
fn template_endpoints(
    config: &PodSourceConfig,
    pod: &Pod,
    object: &ObjectKey,
    names: &[String],
) -> Result<Vec<Endpoint>, PodError> {
    let ttl = config.common.annotations.ttl(&pod.annotations, object);
    let mut records = Records::new(ttl);
    for name in names {
        for ip in pod.pod_ips.iter().filter(|ip| !ip.is_empty()) {
            records.add(name, Target::from(&**ip))?;
        }
    }
    Ok(records.into_endpoints())
}

#[async_trait]
impl Source for PodSource {
    fn name(&self) -> &str {
        SOURCE_NAME
    }

    /// Pods, and the Nodes a `hostname` annotation publishes the addresses of.
    fn watched_kinds(&self) -> Vec<ResourceKind> {
        vec![ResourceKind::Pod, ResourceKind::Node]
    }

    /// Every Pod in scope, not only those Services select.
    fn reads_whole(&self) -> Vec<ResourceKind> {
        vec![ResourceKind::Pod]
    }

    /// Nodes that cannot be listed (a namespaced install without access to them) fail only the Pods whose
    /// names point at their Node's addresses; Pods that cannot be listed fail the kind.
    fn degrades_per_object(&self) -> bool {
        true
    }

    /// Pod records name no object (external-dns writes no `resource` for them), so the controller cannot
    /// hold the records of Pods it could not read: when Pods cannot be listed, or Nodes cannot while some
    /// Pod's records need them, the whole source fails and the sync plans nothing, rather than deleting
    /// records whose Pods still exist.
    async fn evaluate(&self, cluster: &ClusterStore, objects: Objects<'_>) -> Result<Evaluation, SourceError> {
        let unreadable = |kind: ResourceKind, why: String| SourceError::Other {
            source_name: SOURCE_NAME.to_string(),
            message: format!("{kind} unavailable: {why}; nothing is planned until they can be read"),
        };
        if let Some(why) = cluster.unavailable(ResourceKind::Pod) {
            return Err(unreadable(ResourceKind::Pod, why.to_string()));
        }
        let evaluation = self.evaluate_now(cluster, objects);
        if let Some(why) = cluster.unavailable(ResourceKind::Node)
            && !evaluation.failed.is_empty()
        {
            return Err(unreadable(ResourceKind::Node, why.to_string()));
        }
        Ok(evaluation)
    }

    /// A changed Pod re-evaluates itself; a changed Node the Pods that run on it (their `hostname` records
    /// point at its addresses).
    fn affected(&self, cluster: &ClusterStore, changes: &ChangeSet) -> Option<BTreeSet<ObjectKey>> {
        if changes.is_everything() {
            return None;
        }
        let mut out: BTreeSet<ObjectKey> = changes.of_kind(ResourceKind::Pod).cloned().collect();
        let nodes: BTreeSet<&str> = changes.of_kind(ResourceKind::Node).map(|k| k.name.as_str()).collect();
        if !nodes.is_empty() {
            out.extend(
                cluster
                    .all_pods()
                    .iter()
                    .filter(|p| p.node_name.as_deref().is_some_and(|n| nodes.contains(n)))
                    .map(|p| ObjectKey::new(ResourceKind::Pod, &p.namespace, &p.name)),
            );
        }
        Some(out)
    }

    /// Targets of one record joined across Pods (external-dns's `MergeEndpoints`).
    fn merge(&self, endpoints: Vec<Endpoint>) -> Vec<Endpoint> {
        merge_endpoints(endpoints)
    }
}

#[cfg(test)]
mod tests;
