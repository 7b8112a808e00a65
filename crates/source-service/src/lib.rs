//! The service source (`--source=service`): DNS records for Kubernetes Services.
//!
//! Names come from the `hostname`/`internal-hostname` annotations, the `--compatibility` modes and the FQDN
//! templates; targets from the `target` annotation or from what the Service's type exposes (load balancer
//! ingress, cluster IP, the Pods behind a headless Service, the nodes of a NodePort, an external name).
//! docs/sources/service.md is the user's view of the rules; each rule has a test named after it.
//!
//! The source is pure: it reads a [`ClusterStore`] view and returns endpoints. Only the optional resolution of
//! load balancer hostnames reaches the network, through the injected [`Resolver`], and it happens before
//! any endpoint is built so the rest of the work is plain synchronous code over an in-memory view.
//!
//! ```
//! use std::path::Path;
//! use std::sync::Arc;
//!
//! use extdns_informer::LoadOptions;
//! use extdns_informer::manifests::{Format, Loader};
//! use extdns_source::{SourceExt, StaticResolver};
//! use extdns_source_service::{ServiceSource, ServiceSourceConfig};
//!
//! let yaml = "
//! apiVersion: v1
//! kind: Service
//! metadata:
//!   name: web
//!   namespace: default
//!   annotations: {external-dns.kubernetes.io/hostname: web.example.org}
//! spec: {type: LoadBalancer, clusterIP: 10.96.0.10}
//! status: {loadBalancer: {ingress: [{ip: 192.0.2.10}]}}
//! ";
//! let mut loader = Loader::new(LoadOptions::default());
//! loader.add_str(yaml, Path::new("example.yaml"), Format::Yaml)?;
//! let store = loader.finish().store;
//!
//! let source = ServiceSource::new(ServiceSourceConfig::default(), Arc::new(StaticResolver::new()));
//! let endpoints = futures::executor::block_on(source.evaluate_all(&store))?.endpoints;
//! assert_eq!(endpoints.len(), 1);
//! assert_eq!(endpoints[0].dns_name, "web.example.org");
//! assert_eq!(endpoints[0].targets[0].as_str(), "192.0.2.10");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod config;
mod context;
#[cfg(test)]
mod incremental_tests;
mod merge;
mod service;
#[cfg(test)]
mod testutil;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use async_trait::async_trait;
use extdns_endpoint::{Endpoint, Target};
use extdns_informer::view::Service;
use extdns_informer::{ChangeSet, ClusterStore, ObjectKey, ResourceKind};
use extdns_source::annotations::key;
use extdns_source::resolver::Resolver;
use extdns_source::{Evaluation, ObjectEndpoints, Objects, Source, SourceError};

pub use config::{Compatibility, ConfigError, SERVICE_TYPES, ServiceSourceConfig};

use context::{Ctx, Resolved};

/// The `--source` name.
pub const SOURCE_NAME: &str = "service";

/// The service source.
pub struct ServiceSource {
    config: ServiceSourceConfig,
    resolver: Arc<dyn Resolver>,
}

impl ServiceSource {
    /// `resolver` is only used with `--resolve-service-load-balancer-hostname`.
    pub fn new(config: ServiceSourceConfig, resolver: Arc<dyn Resolver>) -> Self {
        ServiceSource { config, resolver }
    }

    /// Its configuration.
    pub fn config(&self) -> &ServiceSourceConfig {
        &self.config
    }

    /// Whether a Service is looked at: namespace, annotation and label filters, the controller annotation,
    /// and `--service-type-filter`.
    fn admits(&self, svc: &Service) -> bool {
        self.config.allows_type(&svc.service_type) && self.config.common.admits(ResourceKind::Service, &svc.meta)
    }

    /// The load balancer hostnames that will be published as addresses, resolved once per call (a name
    /// shared by several Services is looked up once), concurrently.
    async fn resolve_load_balancer_hostnames(&self, services: impl Iterator<Item = &Arc<Service>>) -> Resolved {
        let annotations = &self.config.common.annotations;
        let mut hosts: HashSet<&str> = HashSet::new();
        for svc in services {
            if svc.service_type != "LoadBalancer"
                || !svc.external_ips.is_empty()
                || !annotations.targets(&svc.meta.annotations).is_empty()
            {
                continue;
            }
            for ingress in &svc.load_balancer_ingress {
                if let Some(h) = ingress.hostname.as_deref().filter(|h| !h.is_empty()) {
                    hosts.insert(h);
                }
            }
        }
        let lookups = hosts.into_iter().map(|host| async move {
            let answer = self
                .resolver
                .lookup_ip(host)
                .await
                .map(|ips| ips.into_iter().map(Target::from).collect());
            (host.to_string(), answer)
        });
        futures::future::join_all(lookups)
            .await
            .into_iter()
            .collect::<HashMap<_, _>>()
    }

    /// The admitted Services among `objects`, in object order: looked up by key when only some are asked
    /// for.
    fn selected(&self, cluster: &ClusterStore, objects: Objects<'_>) -> Vec<(ObjectKey, Arc<Service>)> {
        match objects.of_kind(ResourceKind::Service) {
            None => cluster
                .services()
                .into_iter()
                .filter(|s| self.admits(s))
                .map(|s| {
                    (
                        ObjectKey::new(ResourceKind::Service, &s.meta.namespace, &s.meta.name),
                        s,
                    )
                })
                .collect(),
            Some(keys) => keys
                .filter_map(|k| Some((k.clone(), cluster.service(&k.namespace, &k.name)?)))
                .filter(|(_, s)| self.admits(s))
                .collect(),
        }
    }

    /// The endpoints of the admitted Services among `objects`, Service by Service; load balancer hostnames
    /// are resolved for those Services only.
    async fn per_object(&self, cluster: &ClusterStore, objects: Objects<'_>) -> Evaluation {
        let services = self.selected(cluster, objects);
        let resolved = if self.config.resolve_load_balancer_hostname {
            self.resolve_load_balancer_hostnames(services.iter().map(|(_, s)| s))
                .await
        } else {
            Resolved::new()
        };
        let ctx = Ctx::new(&self.config, cluster, resolved);
        let mut failed = extdns_source::undecodable(cluster, ResourceKind::Service, objects);
        if let Some(why) = extdns_source::unavailable_need(cluster, &[ResourceKind::Service]) {
            failed.insert_kind(ResourceKind::Service, why);
            return Evaluation::new(Vec::new(), failed);
        }
        let mut out = Vec::with_capacity(services.len());
        for (object, svc) in services {
            if let Some(why) = self.unavailable_need(cluster, &svc) {
                failed.insert(object, Some(why));
                continue;
            }
            let mut endpoints = Vec::new();
            if let Err(why) = service::endpoints(&ctx, &svc, &object, &mut endpoints) {
                failed.insert(object.clone(), why);
            }
            if !endpoints.is_empty() {
                out.push(ObjectEndpoints::new(object, endpoints));
            }
        }
        Evaluation::new(out, failed)
    }

    /// Why `svc` cannot be evaluated, if a kind it needs cannot be listed: Nodes for those that
    /// [read nodes](Self::reads_nodes), EndpointSlices and Pods for headless and `Local` NodePort ones.
    /// LoadBalancer, ExternalName and plain ClusterIP Services need neither.
    fn unavailable_need(&self, cluster: &ClusterStore, svc: &Service) -> Option<String> {
        let mut needs = Vec::new();
        if self.reads_nodes(svc) {
            needs.push(ResourceKind::Node);
        }
        if headless(svc) || local_node_port(svc) {
            needs.extend([ResourceKind::EndpointSlice, ResourceKind::Pod]);
        }
        extdns_source::unavailable_need(cluster, &needs)
    }

    /// Whether a Service's endpoints depend on Nodes: NodePort Services (node addresses, also in the kOps
    /// compatibility mode) and headless ones publishing their Pods' node addresses (`NodeExternalIP`).
    /// `HostIP` reads the Pod's `status.hostIP`, not the Node.
    fn reads_nodes(&self, svc: &Service) -> bool {
        svc.service_type == "NodePort"
            || (headless(svc)
                && self
                    .config
                    .common
                    .annotations
                    .get(&svc.meta.annotations, key::ENDPOINTS_TYPE)
                    == Some("NodeExternalIP"))
    }
}

/// A headless ClusterIP Service: its targets are its Pods.
fn headless(svc: &Service) -> bool {
    svc.service_type == "ClusterIP" && svc.is_headless()
}

/// A NodePort Service with the Local traffic policy: published on the nodes running its Pods.
fn local_node_port(svc: &Service) -> bool {
    svc.service_type == "NodePort" && svc.external_traffic_policy.as_deref() == Some("Local")
}

#[async_trait]
impl Source for ServiceSource {
    fn name(&self) -> &str {
        SOURCE_NAME
    }

    /// Services always; EndpointSlices and Pods when headless ClusterIP or NodePort Services may be
    /// considered (headless targets, Local traffic policy); Nodes when NodePort or ClusterIP Services may be
    /// (NodePort targets, the `NodeExternalIP` endpoints type of headless Services).
    fn watched_kinds(&self) -> Vec<ResourceKind> {
        let mut kinds = vec![ResourceKind::Service];
        let node_port = self.config.allows_type("NodePort");
        let cluster_ip = self.config.allows_type("ClusterIP");
        if node_port || cluster_ip {
            kinds.extend([ResourceKind::EndpointSlice, ResourceKind::Pod, ResourceKind::Node]);
        }
        kinds
    }

    /// Only the Services that need an unavailable kind fail ([`ServiceSource::unavailable_need`]).
    fn degrades_per_object(&self) -> bool {
        true
    }

    async fn evaluate(&self, cluster: &ClusterStore, objects: Objects<'_>) -> Result<Evaluation, SourceError> {
        Ok(self.per_object(cluster, objects).await)
    }

    /// A Service depends on itself, its EndpointSlices, the Pods of its namespace (headless, and NodePort
    /// with the Local traffic policy) and the Nodes (NodePort, headless `NodeExternalIP`); nothing else the
    /// source reads crosses objects. Load balancer hostnames are resolved again by the full syncs only.
    fn affected(&self, cluster: &ClusterStore, changes: &ChangeSet) -> Option<BTreeSet<ObjectKey>> {
        if changes.is_everything() {
            return None;
        }
        let key = |ns: &str, name: &str| ObjectKey::new(ResourceKind::Service, ns, name);
        let mut out: BTreeSet<ObjectKey> = changes
            .of_kind(ResourceKind::Service)
            .chain(changes.of_kind(ResourceKind::EndpointSlice))
            .map(|k| key(&k.namespace, &k.name))
            .collect();
        // The store's reverse indexes name the candidates, so a Pod or Node change costs the Services it
        // may touch, not every Service. A Pod counts for the headless Services whose EndpointSlices name
        // it (a Pod its slices do not name is not looked at; a slice that starts or stops naming it is a
        // change of its own), and for every Local NodePort Service of its namespace (its labels may have
        // matched before the change). A Node counts for the Services that read Nodes.
        let mut candidates: Vec<Arc<Service>> = Vec::new();
        let mut namespaces: HashSet<&str> = HashSet::new();
        for k in changes.of_kind(ResourceKind::Pod) {
            for slice in cluster.endpoint_slices_naming_pod(&k.namespace, &k.name) {
                let svc = slice
                    .service_name
                    .as_deref()
                    .and_then(|s| cluster.service(&k.namespace, s));
                candidates.extend(svc.filter(|svc| headless(svc)));
            }
            if namespaces.insert(k.namespace.as_str()) {
                candidates.extend(cluster.local_node_port_services(&k.namespace));
            }
        }
        if changes.touches(ResourceKind::Node) {
            let reading = cluster
                .node_port_services()
                .into_iter()
                .chain(cluster.headless_services());
            candidates.extend(reading.filter(|svc| self.reads_nodes(svc)));
        }
        out.extend(
            candidates
                .iter()
                .filter(|svc| self.admits(svc))
                .map(|svc| key(&svc.meta.namespace, &svc.meta.name)),
        );
        Some(out)
    }

    /// In the order of the `resource` labels their records are written with, which [`merge`] needs
    /// ([`merge::by_resource`]: the label of the Service that names each, compared without rendering it).
    /// The sort is stable and Services come in object order, which is the labels' order but where one
    /// namespace is a prefix of another (`a` and `a-b`), so it costs one pass over sorted runs. It keeps each
    /// name's records in their relative order, so the merge treats every name on its own.
    fn merge(&self, mut endpoints: Vec<Endpoint>) -> Vec<Endpoint> {
        // Objects come in key order, which is nearly always resource order already: the stable sort's buffer,
        // a copy of every endpoint at a full sync's peak, is only taken when it is not.
        if !endpoints.is_sorted_by(|a, b| merge::by_resource(a, b).is_le()) {
            endpoints.sort_by(merge::by_resource);
        }
        merge::merge_services(endpoints)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::*;
    use extdns_source::{Annotations, PREFIX_GA, Selector};

    #[test]
    fn source_name_is_service() {
        assert_eq!(source(ServiceSourceConfig::default()).name(), "service");
    }

    #[test]
    fn watched_kinds_follow_the_service_type_filter() {
        let kinds = |types: &[&str]| {
            let cfg = ServiceSourceConfig {
                service_type_filter: types.iter().map(|t| t.to_string()).collect(),
                ..ServiceSourceConfig::default()
            };
            source(cfg).watched_kinds()
        };
        assert_eq!(kinds(&["LoadBalancer"]), vec![ResourceKind::Service]);
        assert_eq!(kinds(&["ExternalName", "LoadBalancer"]), vec![ResourceKind::Service]);
        let full = vec![
            ResourceKind::Service,
            ResourceKind::EndpointSlice,
            ResourceKind::Pod,
            ResourceKind::Node,
        ];
        assert_eq!(kinds(&["NodePort"]), full);
        assert_eq!(kinds(&["ClusterIP"]), full);
        assert_eq!(kinds(&[]), full);
    }

    fn lb(ns: &str, name: &str, host: &str) -> Sv {
        Sv::lb(ns, name).a("hostname", host).ingress_ip("1.2.3.4")
    }

    #[test]
    fn service_type_filter_keeps_only_the_listed_types() {
        let c = cluster_of(vec![
            lb("default", "lb", "lb.example.com").build(),
            Sv::new("default", "db", "ExternalName")
                .external_name("x.rds")
                .a("hostname", "db.example.com")
                .build(),
        ]);
        let cfg = ServiceSourceConfig {
            service_type_filter: vec!["ExternalName".into()],
            ..Default::default()
        };
        assert_eq!(show(&run(cfg, &c)), owned(&["db.example.com CNAME x.rds"]));
        let cfg = ServiceSourceConfig {
            service_type_filter: vec!["ExternalName".into(), "LoadBalancer".into()],
            ..Default::default()
        };
        assert_eq!(run(cfg, &c).len(), 2);
    }

    #[test]
    fn label_and_annotation_filters_select_services() -> Result<(), extdns_source::SelectorError> {
        let c = cluster_of(vec![
            lb("default", "a", "a.example.com").label("dns", "public").build(),
            lb("default", "b", "b.example.com").label("dns", "private").build(),
            lb("default", "c", "c.example.com").ann("team", "blue").build(),
            lb("default", "d", "d.example.com").ann("team", "red").build(),
        ]);
        let label_filter = Selector::parse("dns=public")?;
        let by_label = run(sharing(|c| c.label_filter = label_filter), &c);
        assert_eq!(show(&by_label), owned(&["a.example.com A 1.2.3.4"]));
        let annotation_filter = Selector::parse("team in (blue)")?;
        let by_annotation = run(sharing(|c| c.annotation_filter = annotation_filter), &c);
        assert_eq!(show(&by_annotation), owned(&["c.example.com A 1.2.3.4"]));
        Ok(())
    }

    #[test]
    fn namespace_limits_services_to_one_namespace() {
        let c = cluster_of(vec![
            lb("a", "web", "a.example.com").build(),
            lb("b", "web", "b.example.com").build(),
        ]);
        let cfg = sharing(|c| c.namespace = Some("b".into()));
        assert_eq!(show(&run(cfg, &c)), owned(&["b.example.com A 1.2.3.4"]));
    }

    #[test]
    fn controller_annotation_of_another_controller_skips_the_service() {
        let c = cluster_of(vec![
            lb("default", "a", "a.example.com").a("controller", "other").build(),
            lb("default", "b", "b.example.com")
                .g("controller", "dns-controller")
                .build(),
            lb("default", "c", "c.example.com")
                .g("controller", "someone-else")
                .build(),
        ]);
        assert_eq!(
            show(&run(ServiceSourceConfig::default(), &c)),
            owned(&["b.example.com A 1.2.3.4"])
        );
    }

    #[test]
    fn annotation_prefix_restricts_annotations_to_that_prefix() -> Result<(), extdns_source::AnnotationError> {
        let c = cluster_of(vec![
            lb("default", "a", "a.example.com").build(),
            Sv::lb("default", "b")
                .g("hostname", "b.example.com")
                .ingress_ip("1.2.3.4")
                .build(),
        ]);
        let annotations = Annotations::with_prefix(PREFIX_GA)?;
        let cfg = sharing(|c| c.annotations = annotations);
        assert_eq!(show(&run(cfg, &c)), owned(&["b.example.com A 1.2.3.4"]));
        Ok(())
    }
}
