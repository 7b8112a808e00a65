//! How the informer reads each kind of [`KINDS`], the table the leaf crate `extdns-object` holds as data.
//!
//! Each kind's row says where its objects live and how its changes count. `dispatch` is the one place a kind
//! meets its API type, whose [`Watched`] implementation (in [`crate::convert`]) ties it to its view; it runs
//! a `KindVisitor` with that type. The store (making its indexes), the manifest loader, the live watchers and
//! the on-demand lists each implement a visitor where they live, so this module imports none of them, and
//! all go through the one ingest path (`watched.rs`: decode, convert, intern), the same whichever backs the
//! cluster. Adding a kind is a [`ResourceKind`] variant and a row in `extdns-object`, a view, its
//! conversion and its arm in `dispatch`.

use std::collections::BTreeMap;

use gateway_api::experimental::{tcproutes::TcpRoute, udproutes::UdpRoute};
use gateway_api::{gateways, grpcroutes, httproutes, listenersets, tlsroutes};
use k8s_openapi::api::{core::v1 as core, discovery::v1 as discovery, networking::v1 as networking};
use kube::core::ApiResource;

pub use extdns_object::{ChangeKey, KINDS, KindSpec, ResourceKind, Scope, WatchIn, readable};
use extdns_object::{RouteKind, TraefikKind};

pub use crate::watched::Watched;

use crate::dnsendpoint::DnsEndpoint;
use crate::f5;
use crate::istio;

/// The API resource of a row's version, what a watch or list of the kind addresses.
pub trait ApiResourceOf {
    /// The API resource of `version`.
    fn api_resource(&self, version: &str) -> ApiResource;
}

impl ApiResourceOf for KindSpec {
    fn api_resource(&self, version: &str) -> ApiResource {
        ApiResource {
            group: self.group.to_string(),
            version: version.to_string(),
            api_version: self.api_version_of(version),
            kind: self.name.to_string(),
            plural: self.plural.to_string(),
        }
    }
}

/// Something done with a kind's API type: what the generic paths implement, each where it lives, and
/// [`dispatch`] runs with the type of a kind.
pub(crate) trait KindVisitor {
    /// What it makes of the type.
    type Output;
    /// Runs with `K`, the API type of the kind dispatched on.
    fn visit<K: Watched>(self) -> Self::Output;
}

/// Runs `v` with the API type of `kind`: the one place a kind meets its type.
pub(crate) fn dispatch<V: KindVisitor>(kind: ResourceKind, v: V) -> V::Output {
    match kind {
        ResourceKind::Service => v.visit::<core::Service>(),
        ResourceKind::EndpointSlice => v.visit::<discovery::EndpointSlice>(),
        ResourceKind::Pod => v.visit::<core::Pod>(),
        ResourceKind::Node => v.visit::<core::Node>(),
        ResourceKind::Namespace => v.visit::<core::Namespace>(),
        ResourceKind::Gateway => v.visit::<gateways::Gateway>(),
        ResourceKind::ListenerSet => v.visit::<listenersets::ListenerSet>(),
        ResourceKind::Route(RouteKind::Http) => v.visit::<httproutes::HttpRoute>(),
        ResourceKind::Route(RouteKind::Grpc) => v.visit::<grpcroutes::GrpcRoute>(),
        ResourceKind::Route(RouteKind::Tls) => v.visit::<tlsroutes::TlsRoute>(),
        ResourceKind::Route(RouteKind::Tcp) => v.visit::<TcpRoute>(),
        ResourceKind::Route(RouteKind::Udp) => v.visit::<UdpRoute>(),
        ResourceKind::Ingress => v.visit::<networking::Ingress>(),
        ResourceKind::DnsEndpoint => v.visit::<DnsEndpoint>(),
        ResourceKind::F5VirtualServer => v.visit::<f5::VirtualServer>(),
        ResourceKind::F5TransportServer => v.visit::<f5::TransportServer>(),
        // --- contour-httpproxy and openshift-route sources ---
        ResourceKind::HttpProxy => v.visit::<crate::contour::HttpProxy>(),
        ResourceKind::OpenShiftRoute => v.visit::<crate::openshift::Route>(),
        ResourceKind::IstioGateway => v.visit::<istio::IstioGateway>(),
        ResourceKind::VirtualService => v.visit::<istio::VirtualService>(),
        ResourceKind::Traefik(t) => dispatch_traefik(t, v),
        // --- ambassador-host source ---
        ResourceKind::AmbassadorHost => v.visit::<crate::ambassador::Host>(),
    }
}

/// The API type of each Traefik kind.
fn dispatch_traefik<V: KindVisitor>(kind: TraefikKind, v: V) -> V::Output {
    use crate::traefik;
    match kind {
        TraefikKind::IngressRoute => v.visit::<traefik::IngressRoute>(),
        TraefikKind::IngressRouteTcp => v.visit::<traefik::IngressRouteTcp>(),
        TraefikKind::IngressRouteUdp => v.visit::<traefik::IngressRouteUdp>(),
        TraefikKind::LegacyIngressRoute => v.visit::<traefik::LegacyIngressRoute>(),
        TraefikKind::LegacyIngressRouteTcp => v.visit::<traefik::LegacyIngressRouteTcp>(),
        TraefikKind::LegacyIngressRouteUdp => v.visit::<traefik::LegacyIngressRouteUdp>(),
    }
}

/// The one kind the table keeps on demand, and the kind whose objects select it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Demand {
    /// The kind kept only while selected.
    pub(crate) kept: ResourceKind,
    /// The kind whose objects' selectors say which are kept.
    pub(crate) selected_by: ResourceKind,
}

/// The table's kind kept on demand, if any.
pub(crate) fn demand() -> Option<Demand> {
    KINDS.iter().find_map(|s| {
        s.kept_while_selected_by.map(|selected_by| Demand {
            kept: s.kind,
            selected_by,
        })
    })
}

/// An API version and kind that cannot name a resource: the version is empty or has more than one `/`,
/// or the kind is empty.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{api_version:?} and {kind:?} do not name a group/version and a kind")]
pub struct OverrideError {
    /// The API version as given.
    pub api_version: String,
    /// The kind as given.
    pub kind: String,
}

/// The API resources configuration puts in place of the table's for some kinds: DNSEndpoints of another
/// group, version or kind (`--crd-source-apiversion`, `--crd-source-kind`), as external-dns read them up to
/// v0.20. The schema (and so the API type and view) stays the table's; only the address changes. Watches
/// use the override's resource, and manifests are recognised by its apiVersion and kind instead of the
/// table's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KindOverrides(BTreeMap<ResourceKind, ApiResource>);

impl KindOverrides {
    /// No override: every kind is read as the table declares it.
    pub fn new() -> Self {
        Self::default()
    }

    /// `kind` is addressed at `resource` instead of its table row.
    pub fn set(&mut self, kind: ResourceKind, resource: ApiResource) {
        self.0.insert(kind, resource);
    }

    /// `kind` is addressed as `kind_name` of `api_version` (`group/version`, or `version` for the core
    /// group), at resource `plural`.
    pub fn set_resource(&mut self, kind: ResourceKind, api_version: &str, kind_name: &str, plural: &str) {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        self.set(
            kind,
            ApiResource {
                group: group.to_string(),
                version: version.to_string(),
                api_version: api_version.to_string(),
                kind: kind_name.to_string(),
                plural: plural.to_string(),
            },
        );
    }

    /// `kind` read as `kind_name` of `api_version` (`group/version`, or `version` for the core group) where
    /// that is not what the table reads, at external-dns's plural (the kind lower-cased, then `s`).
    pub fn read_as(&mut self, kind: ResourceKind, api_version: &str, kind_name: &str) -> Result<(), OverrideError> {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        if version.is_empty() || version.contains('/') || kind_name.is_empty() {
            return Err(OverrideError {
                api_version: api_version.to_string(),
                kind: kind_name.to_string(),
            });
        }
        let spec = kind.spec();
        if group != spec.group || !spec.versions.contains(&version) || kind_name != spec.name {
            let plural = format!("{}s", kind_name.to_ascii_lowercase());
            self.set_resource(kind, api_version, kind_name, &plural);
        }
        Ok(())
    }

    /// The resource configuration puts in place of `kind`'s table row, if any.
    pub fn get(&self, kind: ResourceKind) -> Option<&ApiResource> {
        self.0.get(&kind)
    }

    /// The resource `kind` is watched at: the override, else the table's preferred version.
    pub fn api_resource(&self, kind: ResourceKind) -> ApiResource {
        match self.0.get(&kind) {
            Some(r) => r.clone(),
            None => {
                let spec = kind.spec();
                spec.api_resource(spec.preferred_version())
            }
        }
    }

    /// The kind `kind` in `api_version` names: an overridden kind by its configured identity only, the others
    /// by the table ([`ResourceKind::from_api_version`]).
    pub fn kind_of(&self, api_version: &str, kind: &str) -> Option<ResourceKind> {
        if let Some((k, _)) = self
            .0
            .iter()
            .find(|(_, r)| r.api_version == api_version && r.kind == kind)
        {
            return Some(*k);
        }
        ResourceKind::from_api_version(api_version, kind).filter(|k| !self.0.contains_key(k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kind_is_read_elsewhere_only_when_it_is_not_the_tables() {
        let spec = ResourceKind::DnsEndpoint.spec();
        let mut o = KindOverrides::new();
        let table = format!("{}/{}", spec.group, spec.versions[0]);
        assert_eq!(o.read_as(ResourceKind::DnsEndpoint, &table, spec.name), Ok(()));
        assert!(o.get(ResourceKind::DnsEndpoint).is_none());
        assert_eq!(
            o.read_as(ResourceKind::DnsEndpoint, "example.com/v2", "MyRecord"),
            Ok(())
        );
        let r = o.get(ResourceKind::DnsEndpoint).cloned();
        assert_eq!(
            r.map(|r| (r.group, r.version, r.plural)),
            Some(("example.com".into(), "v2".into(), "myrecords".into()))
        );
        assert!(o.read_as(ResourceKind::DnsEndpoint, "a/b/v1", "K").is_err());
        assert!(o.read_as(ResourceKind::DnsEndpoint, "example.com/", "K").is_err());
        assert!(o.read_as(ResourceKind::DnsEndpoint, "v1", "").is_err());
    }

    /// The kind of the API type a kind dispatches to.
    struct KindOf;

    impl KindVisitor for KindOf {
        type Output = ResourceKind;
        fn visit<K: Watched>(self) -> ResourceKind {
            K::KIND
        }
    }

    #[test]
    fn every_kind_dispatches_to_its_own_type() {
        for spec in KINDS.iter() {
            assert_eq!(dispatch(spec.kind, KindOf), spec.kind);
        }
    }

    #[test]
    fn an_override_replaces_the_rows_identity() {
        let mut o = KindOverrides::new();
        assert_eq!(
            o.kind_of("externaldns.k8s.io/v1alpha1", "DNSEndpoint"),
            Some(ResourceKind::DnsEndpoint)
        );
        assert_eq!(o.api_resource(ResourceKind::DnsEndpoint).plural, "dnsendpoints");
        o.set(
            ResourceKind::DnsEndpoint,
            ApiResource {
                group: "externaldns.nginx.org".into(),
                version: "v1".into(),
                api_version: "externaldns.nginx.org/v1".into(),
                kind: "DNSEndpoint".into(),
                plural: "dnsendpoints".into(),
            },
        );
        assert_eq!(
            o.kind_of("externaldns.nginx.org/v1", "DNSEndpoint"),
            Some(ResourceKind::DnsEndpoint)
        );
        assert_eq!(o.kind_of("externaldns.k8s.io/v1alpha1", "DNSEndpoint"), None);
        assert_eq!(o.kind_of("v1", "Service"), Some(ResourceKind::Service));
        assert_eq!(o.api_resource(ResourceKind::DnsEndpoint).group, "externaldns.nginx.org");
        assert_eq!(ResourceKind::DnsEndpoint.label_name(), "crd");
        assert_eq!(ResourceKind::from_lowercase("crd"), Some(ResourceKind::DnsEndpoint));
    }
}
