//! The ingress source (`--source=ingress`): DNS records for `networking.k8s.io/v1` Ingresses.
//!
//! An Ingress publishes the hosts of its rules and TLS entries (unless `--ignore-ingress-rules-spec` /
//! `--ignore-ingress-tls-spec`) and its hostname annotation, as the `ingress-hostname-source` annotation
//! selects, or the FQDN template's names; it points them at the `target` annotation or else at its
//! `status.loadBalancer.ingress` (IPs and hostnames). `--ingress-class` admits only Ingresses of those
//! classes (`spec.ingressClassName`, or the `kubernetes.io/ingress.class` annotation when that is unset).
//! See docs/sources/ingress.md.
//!
//! ```
//! use std::path::Path;
//!
//! use extdns_informer::LoadOptions;
//! use extdns_informer::manifests::{Format, Loader};
//! use extdns_source::SourceExt;
//! use extdns_source_ingress::{IngressSource, IngressSourceConfig};
//!
//! let yaml = "
//! apiVersion: networking.k8s.io/v1
//! kind: Ingress
//! metadata: {name: shop, namespace: default}
//! spec:
//!   rules: [{host: shop.example.org}]
//! status: {loadBalancer: {ingress: [{ip: 192.0.2.8}]}}
//! ";
//! let mut loader = Loader::new(LoadOptions::default());
//! loader.add_str(yaml, Path::new("example.yaml"), Format::Yaml)?;
//! let store = loader.finish().store;
//!
//! let source = IngressSource::new(IngressSourceConfig::default());
//! let endpoints = futures::executor::block_on(source.evaluate_all(&store))?.endpoints;
//! assert_eq!(endpoints.len(), 1);
//! assert_eq!(endpoints[0].dns_name, "shop.example.org");
//! assert_eq!(endpoints[0].targets[0].as_str(), "192.0.2.8");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::sync::Arc;

use extdns_endpoint::Endpoint;
use extdns_informer::view::Ingress;
use extdns_informer::{ClusterStore, ObjectKey, ResourceKind};
use extdns_source::annotations::{HostnameSource, key};
use extdns_source::own_hosts::{OwnKind, OwnKindSource};
use extdns_source::{Evaluation, ObjectEndpoints, Objects, SourceConfig, TemplateError};

/// The `--source` name.
pub const SOURCE_NAME: &str = "ingress";

/// How the source reads Ingresses from the store.
const INGRESSES: OwnKind<Ingress> = extdns_source::own_kind!(ResourceKind::Ingress);

/// The legacy annotation naming an Ingress's class, read when `spec.ingressClassName` is unset.
pub const INGRESS_CLASS_ANNOTATION: &str = "kubernetes.io/ingress.class";

/// The configuration of the ingress source.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct IngressSourceConfig {
    /// `--namespace`, `--label-filter`, `--annotation-filter`, annotation prefixes, `--fqdn-template`,
    /// `--combine-fqdn-annotation`, `--ignore-hostname-annotation`.
    pub common: SourceConfig,
    /// `--ingress-class` (repeatable); empty admits every class.
    pub ingress_class_names: Vec<String>,
    /// `--ignore-ingress-tls-spec`.
    pub ignore_tls_spec: bool,
    /// `--ignore-ingress-rules-spec`.
    pub ignore_rules_spec: bool,
}

impl IngressSourceConfig {
    /// The configuration from what every source shares and the `--ingress-*` flags.
    pub fn new(
        common: SourceConfig,
        ingress_class_names: Vec<String>,
        ignore_tls_spec: bool,
        ignore_rules_spec: bool,
    ) -> Self {
        IngressSourceConfig {
            common,
            ingress_class_names,
            ignore_tls_spec,
            ignore_rules_spec,
        }
    }
}

/// The ingress source.
#[derive(Clone, Debug)]
pub struct IngressSource {
    config: IngressSourceConfig,
}

impl IngressSource {
    /// The source over Ingresses in `config`'s scope.
    pub fn new(config: IngressSourceConfig) -> Self {
        IngressSource { config }
    }

    /// Its configuration.
    pub fn config(&self) -> &IngressSourceConfig {
        &self.config
    }

    /// Whether an Ingress is looked at: the shared filters, then `--ingress-class`. A non-empty
    /// `spec.ingressClassName` decides alone; only without it does the legacy annotation count.
    fn admits(&self, ing: &Ingress) -> bool {
        self.config.common.admits(ResourceKind::Ingress, &ing.meta) && self.class_admits(ing)
    }

    fn class_admits(&self, ing: &Ingress) -> bool {
        let names = &self.config.ingress_class_names;
        if names.is_empty() {
            return true;
        }
        let class = match ing.ingress_class_name.as_deref().filter(|c| !c.is_empty()) {
            Some(c) => Some(c),
            None => ing.meta.annotations.get(INGRESS_CLASS_ANNOTATION),
        };
        class.is_some_and(|c| names.iter().any(|n| n == c))
    }

    /// Which of an Ingress's names count, by its `ingress-hostname-source` annotation; `None` for a value
    /// external-dns does not know: it publishes neither the rules nor the annotation, and neither does extdns
    /// (only the template may still give names).
    fn hostname_source(&self, ing: &Ingress, object: &ObjectKey) -> Option<HostnameSource> {
        let annotations = &self.config.common.annotations;
        let source = annotations.hostname_source(&ing.meta.annotations, key::INGRESS_HOSTNAME_SOURCE);
        source
            .inspect_err(|v| {
                tracing::warn!(
                    %object,
                    annotation = key::INGRESS_HOSTNAME_SOURCE,
                    value = %extdns_source::shorten(v),
                    "unknown value (expected annotation-only or defined-hosts-only); as external-dns, \
                     neither the rules nor the hostname annotation are published"
                );
            })
            .ok()
    }

    /// The endpoints of one admitted Ingress, appended to `out`; `Err` with why when it could not be
    /// evaluated (its records are then held).
    fn ingress_endpoints(
        &self,
        ing: &Ingress,
        object: &ObjectKey,
        out: &mut Vec<Endpoint>,
    ) -> Result<(), TemplateError> {
        let common = &self.config.common;
        let annotations = &common.annotations;
        let a = &ing.meta.annotations;
        let ttl = annotations.ttl(a, object);
        let mut targets = annotations.targets(a);
        if targets.is_empty() {
            targets = extdns_source::own_hosts::load_balancer_targets(&ing.load_balancer_ingress);
        }
        let (provider_specific, set_identifier) = annotations.provider_specific(a);
        let for_host = |host: &str| Endpoint::for_hostname(host, &targets, ttl, &provider_specific, &set_identifier);

        let mut defined = Vec::new();
        if !self.config.ignore_rules_spec {
            for host in ing.rule_hosts.iter().filter(|h| !h.is_empty()) {
                defined.extend(for_host(host));
            }
        }
        if !self.config.ignore_tls_spec {
            for host in ing.tls_hosts.iter().filter(|h| !h.is_empty()) {
                defined.extend(for_host(host));
            }
        }
        let mut annotated = Vec::new();
        if !common.ignore_hostname_annotation {
            for host in annotations.hostnames(a) {
                annotated.extend(for_host(&host));
            }
        }
        let mut endpoints = match self.hostname_source(ing, object) {
            Some(HostnameSource::All) => {
                defined.extend(annotated);
                defined
            }
            Some(HostnameSource::DefinedHostsOnly) => defined,
            Some(HostnameSource::AnnotationOnly) => annotated,
            None => Vec::new(),
        };

        // The template gives the names when nothing else did, or adds to them with
        // `--combine-fqdn-annotation`; decided on endpoints, as external-dns does (names without targets
        // count as nothing).
        if let Some(template) = &common.fqdn_template
            && (common.combine_fqdn_annotation || endpoints.is_empty())
        {
            let hosts = template
                .execute(ing, SOURCE_NAME, &common.annotations)
                .inspect_err(|e| {
                    tracing::warn!(
                        %object,
                        field = "FQDN template",
                        "template failed, Ingress skipped; its records are kept as they are: {e}"
                    );
                })?;
            for host in &hosts {
                endpoints.extend(for_host(host));
            }
        }

        // One key shared by every endpoint of the Ingress.
        let shared = Arc::new(object.clone());
        out.extend(endpoints.into_iter().map(|e| e.with_ref_object(Arc::clone(&shared))));
        Ok(())
    }
}

/// An Ingress reads nothing but itself, so the source is of the [`OwnKindSource`] pattern: its name, kind,
/// `affected` (the changed Ingresses only) and `merge` (targets joined, then a configured TTL first) are
/// the pattern's. Its hosts and filters are its own, so it evaluates each Ingress itself.
impl OwnKindSource for IngressSource {
    type View = Ingress;
    const NAME: &'static str = SOURCE_NAME;
    const KIND: OwnKind<Ingress> = INGRESSES;

    fn evaluate_now(&self, cluster: &ClusterStore, objects: Objects<'_>) -> Evaluation {
        let ingresses = INGRESSES.views(cluster, objects);
        let mut failed = extdns_source::undecodable(cluster, INGRESSES.kind, objects);
        let mut out = Vec::with_capacity(ingresses.len());
        for (object, ing) in ingresses {
            if !self.admits(&ing) {
                tracing::debug!(%object, "not admitted by the filters or --ingress-class");
                continue;
            }
            let mut endpoints = Vec::new();
            if let Err(why) = self.ingress_endpoints(&ing, &object, &mut endpoints) {
                failed.insert(object.clone(), Some(why.to_string()));
                continue;
            }
            if !endpoints.is_empty() {
                out.push(ObjectEndpoints::new(object, endpoints));
            }
        }
        Evaluation::new(out, failed)
    }
}

#[cfg(test)]
mod tests;
