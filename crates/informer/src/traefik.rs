//! Traefik's routers, IngressRoute, IngressRouteTCP and IngressRouteUDP, in both API groups (`traefik.io`
//! and the legacy `traefik.containo.us`, which Traefik v2 published with the same schema): the API types
//! the `traefik-proxy` source reads, and their conversion to [`view::TraefikRoute`].
//!
//! Only the fields the source reads are modelled (written here, not generated from Traefik's CRDs, whose
//! schema is hundreds of fields of middleware and TLS options): the metadata and each route's `match` rule.
//! One generic type serves the six kinds; a marker type names the kind, so each is its own [`Watched`]
//! type as the kind table requires.
//!
//! [`Watched`]: crate::Watched

use std::fmt;
use std::marker::PhantomData;

use extdns_object::TraefikKind;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

use crate::ResourceKind;
use crate::convert::meta;
use crate::crd_type::namespaced_crd;
use crate::view;
use crate::watched::{Convert, sealed::Sealed};

/// Names which of the six kinds a [`Router`] is.
pub trait RouterKind: Clone + fmt::Debug + Default + Send + Sync + 'static {
    /// The kind.
    const KIND: TraefikKind;
}

/// A Traefik router object of the kind `K` names, as the API serves it. Every field takes its default when
/// the object leaves it out.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, bound = "")]
pub struct Router<K: RouterKind> {
    /// Identity, labels and annotations.
    pub metadata: ObjectMeta,
    /// `None` when the object has no spec.
    pub spec: Option<RouterSpec>,
    #[serde(skip)]
    kind: PhantomData<K>,
}

/// `spec`: the routes, whose rules name the hosts.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct RouterSpec {
    /// `spec.routes`.
    pub routes: Option<Vec<RouterRoute>>,
}

/// One `spec.routes[]` entry.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct RouterRoute {
    /// The router's rule (`Host(\`a.example.org\`) && PathPrefix(\`/\`)`); IngressRouteUDP has none.
    #[serde(rename = "match")]
    pub match_: Option<String>,
}

macro_rules! router_kinds {
    ($($(#[$doc:meta])* $marker:ident => $kind:ident;)*) => {
        /// The marker types of the six kinds.
        pub mod kinds {
            use super::*;
            $(
                $(#[$doc])*
                #[derive(Debug, Clone, Copy, Default)]
                pub struct $marker;
                impl RouterKind for $marker {
                    const KIND: TraefikKind = TraefikKind::$kind;
                }
            )*
        }
        $(
            $(#[$doc])*
            pub type $marker = Router<kinds::$marker>;
        )*
    };
}

router_kinds! {
    /// traefik.io IngressRoute.
    IngressRoute => IngressRoute;
    /// traefik.io IngressRouteTCP.
    IngressRouteTcp => IngressRouteTcp;
    /// traefik.io IngressRouteUDP.
    IngressRouteUdp => IngressRouteUdp;
    /// traefik.containo.us IngressRoute.
    LegacyIngressRoute => LegacyIngressRoute;
    /// traefik.containo.us IngressRouteTCP.
    LegacyIngressRouteTcp => LegacyIngressRouteTcp;
    /// traefik.containo.us IngressRouteUDP.
    LegacyIngressRouteUdp => LegacyIngressRouteUdp;
}

// The kind's identity comes from its row of the kind table.
namespaced_crd!([K: RouterKind] Router<K>, ResourceKind::Traefik(K::KIND));

impl<K: RouterKind> Sealed for Router<K> {
    type View = view::TraefikRoute;
    const KIND: ResourceKind = ResourceKind::Traefik(K::KIND);
    /// The rules of UDP routers are not kept: they have none (external-dns reads only their annotations).
    fn view(&self, _: &Convert<'_>) -> view::TraefikRoute {
        let rules = if K::KIND.is_udp() {
            Box::default()
        } else {
            self.spec
                .iter()
                .flat_map(|s| s.routes.iter().flatten())
                .map(|r| r.match_.as_deref().unwrap_or_default().into())
                .collect()
        };
        view::TraefikRoute {
            meta: meta(&self.metadata),
            kind: K::KIND,
            rules,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::Resource;

    fn convert<K: RouterKind>(value: serde_json::Value) -> view::TraefikRoute {
        crate::watched::view_of::<Router<K>>(value)
    }

    #[test]
    fn the_rules_reach_the_view_in_order_and_udp_routers_keep_none() {
        let v = convert::<kinds::LegacyIngressRouteTcp>(serde_json::json!({
            "apiVersion": "traefik.containo.us/v1alpha1", "kind": "IngressRouteTCP",
            "metadata": {"name": "a", "namespace": "ns", "annotations": {"k": "v"}},
            "spec": {"routes": [{"match": "HostSNI(`a.example.org`)", "services": [{"name": "s", "port": 1}]},
                                {"services": []}]}
        }));
        assert_eq!(v.kind, TraefikKind::LegacyIngressRouteTcp);
        assert_eq!(&*v.rules, [Box::from("HostSNI(`a.example.org`)"), Box::from("")]);
        assert_eq!(v.meta.annotations.get("k"), Some("v"));
        let udp = convert::<kinds::IngressRouteUdp>(serde_json::json!({
            "metadata": {"name": "u", "namespace": "ns"},
            "spec": {"routes": [{"match": "ignored", "services": [{"name": "s", "port": 53}]}]}
        }));
        assert!(udp.rules.is_empty());
        let bare = convert::<kinds::IngressRoute>(serde_json::json!({"metadata": {"name": "b", "namespace": "ns"}}));
        assert!(bare.rules.is_empty());
    }

    #[test]
    fn each_kind_addresses_its_own_group_and_plural() {
        assert_eq!(IngressRoute::group(&()), "traefik.io");
        assert_eq!(LegacyIngressRouteUdp::group(&()), "traefik.containo.us");
        assert_eq!(IngressRouteTcp::plural(&()), "ingressroutetcps");
        assert_eq!(LegacyIngressRoute::kind(&()), "IngressRoute");
        assert_eq!(IngressRouteUdp::version(&()), "v1alpha1");
    }
}
