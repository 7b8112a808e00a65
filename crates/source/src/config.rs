//! The configuration every source shares, and the admission check (namespace, annotation and label
//! filters, the `controller` annotation) that decides whether an object is looked at at all.

use std::sync::Arc;

use extdns_informer::ResourceKind;
use extdns_informer::view::{Meta, MetaRef};

use crate::annotations::Annotations;
use crate::route::ProviderRoute;
use crate::selector::Selector;
use crate::template::FqdnTemplate;

/// Flags that mean the same thing to every source.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct SourceConfig {
    /// `--namespace`: only objects in this namespace (`None` or empty = all).
    pub namespace: Option<String>,
    /// `--annotation-filter`: label-selector semantics applied to the annotation map.
    pub annotation_filter: Selector,
    /// `--label-filter`.
    pub label_filter: Selector,
    /// The annotation prefixes read (`--annotation-prefix`).
    pub annotations: Annotations,
    /// `--fqdn-template`, parsed once at startup.
    pub fqdn_template: Option<Arc<FqdnTemplate>>,
    /// `--combine-fqdn-annotation`: use the template even when annotations produced names.
    pub combine_fqdn_annotation: bool,
    /// `--ignore-hostname-annotation`.
    pub ignore_hostname_annotation: bool,
    /// The provider object this pipeline publishes to (`--dns-provider-crds`); `None` with the flags'
    /// provider, where the routing annotations mean nothing.
    pub route: Option<ProviderRoute>,
}

impl SourceConfig {
    /// Whether an object is in scope: in the watched namespace, matching the annotation and label filters,
    /// and not claimed by another controller through the `controller` annotation.
    ///
    /// The live informer already scopes by namespace and label selector on the server; checking again here
    /// keeps manifest-loaded clusters (and tests) behaving the same. The annotation filter sees a key of the
    /// configured prefix that is set only under the legacy one (external-dns v0.23 copies it before its
    /// filters run). An object of `kind` whose annotations set one key under two read prefixes with
    /// different values is warned about here, where every source looks at every object it reads.
    pub fn admits(&self, kind: ResourceKind, meta: &Meta) -> bool {
        self.admits_meta(kind, MetaRef::from(meta))
    }

    /// [`admits`](Self::admits) for views that keep their metadata apart (Nodes, Pods).
    pub fn admits_meta(&self, kind: ResourceKind, meta: MetaRef<'_>) -> bool {
        self.admits_with(kind, meta, true)
    }

    /// [`admits_meta`](Self::admits_meta) without the `controller` annotation's check, for a source that
    /// never reads it (external-dns's ambassador-host); `--annotation-filter` still sees every annotation.
    pub fn admits_meta_any_controller(&self, kind: ResourceKind, meta: MetaRef<'_>) -> bool {
        self.admits_with(kind, meta, false)
    }

    fn admits_with(&self, kind: ResourceKind, meta: MetaRef<'_>, check_controller: bool) -> bool {
        if let Some(ns) = self.namespace.as_deref()
            && !ns.is_empty()
            && meta.namespace != ns
        {
            return false;
        }
        let a = meta.annotations;
        if let Some(route) = &self.route
            && !route.admits(&self.annotations, meta.namespace, a)
        {
            // It belongs to another provider: not a warning.
            tracing::debug!(%kind, namespace = %meta.namespace, name = %meta.name, "routed to another provider");
            return false;
        }
        let admitted = self
            .annotation_filter
            .matches_by(|key| self.annotations.filter_value(a, key))
            && self.label_filter.matches(meta.labels)
            && (!check_controller || self.annotations.controller_allows(a));
        if admitted {
            self.annotations.warn_conflicts(kind, meta);
        }
        admitted
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::annotations::{PREFIX_ALPHA, PREFIX_GA};
    use crate::selector::SelectorError;

    fn meta(ns: &str, labels: &[(&str, &str)], annotations: &[(&str, &str)]) -> Meta {
        Meta {
            name: "web".into(),
            namespace: ns.into(),
            labels: labels.iter().copied().collect(),
            annotations: annotations.iter().copied().collect(),
        }
    }

    #[test]
    fn default_config_admits_everything_without_a_foreign_controller() {
        let c = SourceConfig::default();
        assert!(c.admits(ResourceKind::Service, &meta("default", &[], &[])));
        assert!(c.admits(ResourceKind::Service, &meta("other", &[("a", "b")], &[("x", "y")])));
    }

    #[test]
    fn namespace_scope_admits_only_that_namespace() {
        let c = SourceConfig {
            namespace: Some("team-a".into()),
            ..SourceConfig::default()
        };
        assert!(c.admits(ResourceKind::Service, &meta("team-a", &[], &[])));
        assert!(!c.admits(ResourceKind::Service, &meta("team-b", &[], &[])));
        let all = SourceConfig {
            namespace: Some(String::new()),
            ..SourceConfig::default()
        };
        assert!(all.admits(ResourceKind::Service, &meta("team-b", &[], &[])));
    }

    #[test]
    fn annotation_filter_uses_selector_semantics_on_annotations() -> Result<(), SelectorError> {
        let c = SourceConfig {
            annotation_filter: Selector::parse("kubernetes.io/ingress.class in (public, external)")?,
            ..SourceConfig::default()
        };
        assert!(c.admits(
            ResourceKind::Service,
            &meta("d", &[], &[("kubernetes.io/ingress.class", "public")])
        ));
        assert!(!c.admits(
            ResourceKind::Service,
            &meta("d", &[], &[("kubernetes.io/ingress.class", "internal")])
        ));
        // Labels do not satisfy an annotation filter.
        assert!(!c.admits(
            ResourceKind::Service,
            &meta("d", &[("kubernetes.io/ingress.class", "public")], &[])
        ));
        Ok(())
    }

    #[test]
    fn label_filter_applies_to_labels_only() -> Result<(), SelectorError> {
        let c = SourceConfig {
            label_filter: Selector::parse("dns=public")?,
            ..SourceConfig::default()
        };
        assert!(c.admits(ResourceKind::Service, &meta("d", &[("dns", "public")], &[])));
        assert!(!c.admits(ResourceKind::Service, &meta("d", &[], &[("dns", "public")])));
        Ok(())
    }

    #[test]
    fn foreign_controller_annotation_is_not_admitted_under_either_prefix() {
        let c = SourceConfig::default();
        let ga = format!("{PREFIX_GA}controller");
        let alpha = format!("{PREFIX_ALPHA}controller");
        assert!(!c.admits(ResourceKind::Service, &meta("d", &[], &[(&ga, "other")])));
        assert!(!c.admits(ResourceKind::Service, &meta("d", &[], &[(&alpha, "other")])));
        assert!(c.admits(ResourceKind::Service, &meta("d", &[], &[(&alpha, "dns-controller")])));
    }

    fn routed(route: Option<ProviderRoute>) -> SourceConfig {
        SourceConfig {
            route,
            ..SourceConfig::default()
        }
    }

    const PROVIDER: &str = "external-dns.kubernetes.io/provider";
    const CLUSTER_PROVIDER: &str = "external-dns.kubernetes.io/cluster-provider";

    #[test]
    fn flag_mode_ignores_both_routing_annotations() {
        let flags = routed(None);
        let named = [(PROVIDER, "zone"), (CLUSTER_PROVIDER, "public")];
        assert!(flags.admits(ResourceKind::Service, &meta("a", &[], &named)));
        assert!(flags.admits(ResourceKind::Ingress, &meta("b", &[], &[(CLUSTER_PROVIDER, "other")])));
    }

    #[test]
    fn a_route_refuses_what_the_object_routes_elsewhere_before_any_filter() -> Result<(), SelectorError> {
        let internal = routed(Some(ProviderRoute::cluster("internal")));
        let public = [(CLUSTER_PROVIDER, "public")];
        assert!(!internal.admits(ResourceKind::Service, &meta("a", &[], &public)));
        assert!(internal.admits(ResourceKind::Service, &meta("a", &[], &[])));
        // Routed here, the filters still select as usual.
        let filtered = SourceConfig {
            label_filter: Selector::parse("dns=public")?,
            ..routed(Some(ProviderRoute::cluster("public")))
        };
        assert!(filtered.admits(ResourceKind::Service, &meta("a", &[("dns", "public")], &public)));
        assert!(!filtered.admits(ResourceKind::Service, &meta("a", &[], &public)));
        Ok(())
    }

    #[test]
    fn a_dns_provider_never_admits_another_namespace_even_when_named() {
        let tenant = SourceConfig {
            namespace: Some("a".into()),
            ..routed(Some(ProviderRoute::namespaced("a", "zone")))
        };
        assert!(tenant.admits(ResourceKind::Service, &meta("a", &[], &[(PROVIDER, "zone")])));
        assert!(!tenant.admits(ResourceKind::Service, &meta("b", &[], &[(PROVIDER, "zone")])));
        // Even without the namespace scope the route itself refuses another namespace.
        let unscoped = routed(Some(ProviderRoute::namespaced("a", "zone")));
        assert!(!unscoped.admits(ResourceKind::Service, &meta("b", &[], &[(PROVIDER, "zone")])));
        assert!(!unscoped.admits(ResourceKind::Service, &meta("b", &[], &[])));
    }

    /// external-dns #6703: filters run after legacy keys are copied to the configured prefix, so a filter
    /// on the configured key admits an object that sets it only under the legacy prefix.
    #[test]
    fn legacy_annotation_prefix_6703_the_annotation_filter_reads_a_legacy_key_under_the_configured_one()
    -> Result<(), SelectorError> {
        let ga = format!("{PREFIX_GA}team");
        let alpha = format!("{PREFIX_ALPHA}team");
        let c = SourceConfig {
            annotation_filter: Selector::parse(&format!("{ga}=dns"))?,
            ..SourceConfig::default()
        };
        assert!(c.admits(ResourceKind::Service, &meta("d", &[], &[(&alpha, "dns")])));
        assert!(!c.admits(ResourceKind::Service, &meta("d", &[], &[(&ga, "web"), (&alpha, "dns")])));
        Ok(())
    }
}
