//! Which provider object an object's records go to (`--dns-provider-crds`, docs/multi-provider.md).
//!
//! Each provider object runs its own pipeline over the one set of informers; its sources admit an object only
//! if this route does. The object chooses with two annotations, read under every prefix like the others:
//! `provider: NAME[,NAME]` names DNSProviders of the object's own namespace, `cluster-provider: A[,B]`
//! names ClusterDNSProviders (a list publishes to each: split-horizon). Named, it goes to those only; unnamed,
//! it goes to every ClusterDNSProvider and to the DNSProviders of its namespace, whose filters then select
//! as usual. A DNSProvider never admits an object of another namespace, whatever the object says.

use extdns_informer::StrMap;

use crate::annotations::Annotations;

/// The annotation (without prefix) naming DNSProviders of the object's namespace.
pub const PROVIDER_ANNOTATION: &str = "provider";
/// The annotation (without prefix) naming ClusterDNSProviders.
pub const CLUSTER_PROVIDER_ANNOTATION: &str = "cluster-provider";

/// The provider object a pipeline publishes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProviderRoute {
    /// A ClusterDNSProvider.
    Cluster {
        /// Its name.
        name: String,
    },
    /// A DNSProvider.
    Namespaced {
        /// Its namespace: the only one whose objects it admits.
        namespace: String,
        /// Its name.
        name: String,
    },
}

impl ProviderRoute {
    /// The route of the ClusterDNSProvider `name`.
    pub fn cluster(name: &str) -> ProviderRoute {
        ProviderRoute::Cluster { name: name.to_string() }
    }

    /// The route of the DNSProvider `namespace/name`.
    pub fn namespaced(namespace: &str, name: &str) -> ProviderRoute {
        ProviderRoute::Namespaced {
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }

    /// Whether an object of `namespace` with `annotations` publishes to this provider.
    pub fn admits(&self, annotations: &Annotations, namespace: &str, a: &StrMap) -> bool {
        let named = |key: &str| {
            annotations
                .get(a, key)
                .filter(|v| v.split(',').any(|n| !n.trim().is_empty()))
        };
        let provider = named(PROVIDER_ANNOTATION);
        let cluster = named(CLUSTER_PROVIDER_ANNOTATION);
        let lists = |list: Option<&str>, name: &str| list.is_some_and(|l| l.split(',').any(|n| n.trim() == name));
        match self {
            ProviderRoute::Cluster { name } => {
                if provider.is_none() && cluster.is_none() {
                    return true;
                }
                lists(cluster, name)
            }
            ProviderRoute::Namespaced { namespace: own, name } => {
                if namespace != own {
                    return false;
                }
                if provider.is_none() && cluster.is_none() {
                    return true;
                }
                lists(provider, name)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::annotations::{PREFIX_ALPHA, PREFIX_GA};

    fn annotations(pairs: &[(&str, &str)]) -> StrMap {
        pairs.iter().copied().collect()
    }

    fn admits(route: &ProviderRoute, ns: &str, pairs: &[(&str, &str)]) -> bool {
        route.admits(&Annotations::default(), ns, &annotations(pairs))
    }

    const P: &str = "external-dns.kubernetes.io/provider";
    const C: &str = "external-dns.kubernetes.io/cluster-provider";

    #[test]
    fn no_annotation_goes_to_every_cluster_provider_and_the_dns_providers_of_its_namespace() {
        assert!(admits(&ProviderRoute::cluster("public"), "a", &[]));
        assert!(admits(&ProviderRoute::namespaced("a", "zone"), "a", &[]));
        assert!(!admits(&ProviderRoute::namespaced("b", "zone"), "a", &[]));
    }

    #[test]
    fn cluster_provider_names_cluster_providers_only_and_a_list_publishes_to_each() {
        let split = [(C, "internal, public")];
        assert!(admits(&ProviderRoute::cluster("internal"), "a", &split));
        assert!(admits(&ProviderRoute::cluster("public"), "a", &split));
        assert!(!admits(&ProviderRoute::cluster("other"), "a", &split));
        assert!(
            !admits(&ProviderRoute::namespaced("a", "internal"), "a", &split),
            "no DNSProvider"
        );
    }

    #[test]
    fn provider_names_a_dns_provider_of_the_objects_own_namespace_only() {
        let named = [(P, "zone")];
        assert!(admits(&ProviderRoute::namespaced("a", "zone"), "a", &named));
        assert!(
            !admits(&ProviderRoute::namespaced("a", "zone"), "b", &named),
            "another tenant's provider"
        );
        assert!(!admits(&ProviderRoute::namespaced("a", "other"), "a", &named));
        assert!(
            !admits(&ProviderRoute::cluster("zone"), "a", &named),
            "no ClusterDNSProvider"
        );
        assert!(
            !admits(&ProviderRoute::namespaced("b", "zone"), "a", &named),
            "the same name in another namespace"
        );
    }

    #[test]
    fn names_are_compared_exactly() {
        let named = [(C, "Public,pub")];
        assert!(!admits(&ProviderRoute::cluster("public"), "a", &named));
        assert!(admits(&ProviderRoute::cluster("Public"), "a", &named));
        assert!(!admits(&ProviderRoute::cluster("publ"), "a", &named));
    }

    #[test]
    fn both_annotations_are_the_union_and_an_empty_value_is_absent() {
        let both = [(P, "zone"), (C, "public")];
        assert!(admits(&ProviderRoute::namespaced("a", "zone"), "a", &both));
        assert!(admits(&ProviderRoute::cluster("public"), "a", &both));
        assert!(!admits(&ProviderRoute::cluster("internal"), "a", &both));
        let empty = [(C, " , ")];
        assert!(admits(&ProviderRoute::cluster("internal"), "a", &empty));
        assert!(admits(&ProviderRoute::namespaced("a", "zone"), "a", &empty));
    }

    #[test]
    fn the_legacy_prefix_routes_too() {
        let key = format!("{PREFIX_ALPHA}cluster-provider");
        assert!(PREFIX_GA != PREFIX_ALPHA);
        let legacy = [(key.as_str(), "public")];
        assert!(admits(&ProviderRoute::cluster("public"), "a", &legacy));
        assert!(!admits(&ProviderRoute::cluster("internal"), "a", &legacy));
        // Set under both prefixes, the configured one wins (and the conflict is warned about with the others).
        let both = [(C, "internal"), (key.as_str(), "public")];
        assert!(admits(&ProviderRoute::cluster("internal"), "a", &both));
        assert!(!admits(&ProviderRoute::cluster("public"), "a", &both));
        assert_eq!(Annotations::default().conflicts(&annotations(&both)).len(), 1);
    }
}
