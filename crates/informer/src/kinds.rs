//! The one table of the kinds extdns can watch.
//!
//! Each kind is declared once, in [`KINDS`]: its API group, the versions extdns can read (the one it
//! watches first), its plural, where it is watched, how its changes enter the [`crate::ChangeSet`], and
//! the API type its objects decode into. That type's [`Watched`] implementation (in [`crate::convert`])
//! ties it to its view. Everything else is generic over the table: the live watchers
//! ([`crate::live`]), the manifest loader ([`crate::manifests`]) and the store ([`crate::ClusterStore`])
//! go through the same ingest path ([`decode`], then [`convert`]), so an object is decoded, converted and interned the same
//! way whichever backs the cluster. Adding a kind is a [`ResourceKind`] variant, a table entry, a view and
//! its conversion.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use gateway_api::experimental::{tcproutes::TcpRoute, udproutes::UdpRoute};
use gateway_api::{gateways, grpcroutes, httproutes, listenersets, tlsroutes};
use k8s_openapi::api::{core::v1 as core, discovery::v1 as discovery, networking::v1 as networking};
use kube::Resource;
use kube::core::ApiResource;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::task::{AbortHandle, JoinHandle};

use crate::decode::{self, DecodeError};
use crate::dnsendpoint::DnsEndpoint;
use crate::live::{ApiAccess, Inner};
use crate::store::{AnyIndex, Index, Item};
use crate::view::RouteKind;
use crate::{ClusterStore, Interner, LoadOptions, PodAnnotationPrefixes, Sym, TemplateFields};

/// The kinds of Kubernetes objects extdns can watch. A source lists the kinds it reads, and the live
/// cluster starts watchers for those kinds only. The order is the order of [`KINDS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ResourceKind {
    /// core/v1 Service.
    Service,
    /// discovery.k8s.io/v1 EndpointSlice.
    EndpointSlice,
    /// core/v1 Pod.
    Pod,
    /// core/v1 Node.
    Node,
    /// core/v1 Namespace.
    Namespace,
    /// gateway.networking.k8s.io Gateway.
    Gateway,
    /// gateway.networking.k8s.io ListenerSet.
    ListenerSet,
    /// A Gateway API route; one index per route kind.
    Route(RouteKind),
    /// networking.k8s.io/v1 Ingress.
    Ingress,
    /// external-dns's DNSEndpoint; its group, version and kind may be configured ([`KindOverrides`]).
    DnsEndpoint,
}

/// Where the objects of a kind live and are watched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Cluster-scoped: no namespace, watched cluster-wide.
    Cluster,
    /// Namespaced, watched in the namespace this names.
    Namespaced(WatchIn),
}

/// The namespace a namespaced kind is watched in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchIn {
    /// `--namespace` (all when not set): the objects sources publish from.
    Sources,
    /// `--gateway-namespace` (all when not set).
    Gateways,
    /// Every namespace, whatever is configured (ListenerSets attach to Gateways across namespaces).
    All,
}

/// How a change of an object enters the [`crate::ChangeSet`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKey {
    /// The object itself.
    Own,
    /// The group it is stored in (an EndpointSlice's Service), both the one it left and the one it joined:
    /// that is all a source can do with it.
    Group,
}

/// One kind extdns can watch.
pub struct KindSpec {
    /// Which kind this row declares.
    pub kind: ResourceKind,
    /// The API kind: `Service`, `HTTPRoute`, ...
    pub name: &'static str,
    /// The API group; empty for the core group.
    pub group: &'static str,
    /// The versions extdns can read, the one it watches first. Versions of one kind share one schema as
    /// far as the views read, so an object of any of them decodes into the same type.
    pub versions: &'static [&'static str],
    /// The resource name in URLs: `services`, `httproutes`, ...
    pub plural: &'static str,
    /// Namespaced or cluster-wide; decides how watches and keys are scoped.
    pub scope: Scope,
    /// Which objects a change of this kind marks changed.
    pub changes: ChangeKey,
    /// Kept by the live view only while an object of this kind selects it (by labels, in its namespace):
    /// sources read no other object of the kind ([`crate::LiveOptions::pods_on_demand`]).
    pub kept_while_selected_by: Option<ResourceKind>,
    /// The API type, type-erased: what the generic paths call.
    pub(crate) ops: &'static dyn KindOps,
}

impl fmt::Debug for KindSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KindSpec")
            .field("kind", &self.kind)
            .field("group", &self.group)
            .field("versions", &self.versions)
            .finish_non_exhaustive()
    }
}

const GATEWAY_API: &str = "gateway.networking.k8s.io";

/// The table: every kind extdns can watch, in [`ResourceKind`] order. Each row: the kind, its API kind and
/// group, the versions extdns reads (the one it watches first), its plural, where it is watched, how its
/// changes enter the change set, and its API type.
#[rustfmt::skip]
pub static KINDS: [KindSpec; 14] = {
    use ChangeKey::{Group, Own};
    use ResourceKind as K;
    use Scope::{Cluster, Namespaced};
    use WatchIn::{All, Gateways, Sources};
    const GW: &str = GATEWAY_API;
    [
        row(K::Service, "Service", "", &["v1"], "services", Namespaced(Sources), Own, &Typed::<core::Service>(PhantomData)),
        row(K::EndpointSlice, "EndpointSlice", "discovery.k8s.io", &["v1"], "endpointslices", Namespaced(Sources), Group, &Typed::<discovery::EndpointSlice>(PhantomData)),
        row(K::Pod, "Pod", "", &["v1"], "pods", Namespaced(Sources), Own, &Typed::<core::Pod>(PhantomData)).kept_while_selected_by(K::Service),
        row(K::Node, "Node", "", &["v1"], "nodes", Cluster, Own, &Typed::<core::Node>(PhantomData)),
        row(K::Namespace, "Namespace", "", &["v1"], "namespaces", Cluster, Own, &Typed::<core::Namespace>(PhantomData)),
        row(K::Gateway, "Gateway", GW, &["v1", "v1beta1"], "gateways", Namespaced(Gateways), Own, &Typed::<gateways::Gateway>(PhantomData)),
        row(K::ListenerSet, "ListenerSet", GW, &["v1"], "listenersets", Namespaced(All), Own, &Typed::<listenersets::ListenerSet>(PhantomData)),
        row(K::Route(RouteKind::Http), "HTTPRoute", GW, &["v1", "v1beta1"], "httproutes", Namespaced(Sources), Own, &Typed::<httproutes::HttpRoute>(PhantomData)),
        row(K::Route(RouteKind::Grpc), "GRPCRoute", GW, &["v1"], "grpcroutes", Namespaced(Sources), Own, &Typed::<grpcroutes::GrpcRoute>(PhantomData)),
        row(K::Route(RouteKind::Tls), "TLSRoute", GW, &["v1", "v1alpha3", "v1alpha2"], "tlsroutes", Namespaced(Sources), Own, &Typed::<tlsroutes::TlsRoute>(PhantomData)),
        row(K::Route(RouteKind::Tcp), "TCPRoute", GW, &["v1", "v1alpha2"], "tcproutes", Namespaced(Sources), Own, &Typed::<TcpRoute>(PhantomData)),
        row(K::Route(RouteKind::Udp), "UDPRoute", GW, &["v1", "v1alpha2"], "udproutes", Namespaced(Sources), Own, &Typed::<UdpRoute>(PhantomData)),
        row(K::Ingress, "Ingress", "networking.k8s.io", &["v1"], "ingresses", Namespaced(Sources), Own, &Typed::<networking::Ingress>(PhantomData)),
        row(K::DnsEndpoint, "DNSEndpoint", "externaldns.k8s.io", &["v1alpha1"], "dnsendpoints", Namespaced(Sources), Own, &Typed::<DnsEndpoint>(PhantomData)),
    ]
};

/// One row of [`KINDS`].
#[allow(clippy::too_many_arguments)]
const fn row(
    kind: ResourceKind,
    name: &'static str,
    group: &'static str,
    versions: &'static [&'static str],
    plural: &'static str,
    scope: Scope,
    changes: ChangeKey,
    ops: &'static dyn KindOps,
) -> KindSpec {
    KindSpec {
        kind,
        name,
        group,
        versions,
        plural,
        scope,
        changes,
        kept_while_selected_by: None,
        ops,
    }
}

impl KindSpec {
    /// This row, its objects kept only while an object of `kind` selects them.
    const fn kept_while_selected_by(mut self, kind: ResourceKind) -> KindSpec {
        self.kept_while_selected_by = Some(kind);
        self
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

impl ResourceKind {
    /// Every kind, in table order.
    pub fn all() -> impl Iterator<Item = ResourceKind> {
        KINDS.iter().map(|s| s.kind)
    }

    /// This kind's entry in [`KINDS`].
    pub fn spec(self) -> &'static KindSpec {
        &KINDS[self.slot()]
    }

    /// This kind's position in [`KINDS`] (and of its index in the store).
    pub(crate) fn slot(self) -> usize {
        match self {
            ResourceKind::Service => 0,
            ResourceKind::EndpointSlice => 1,
            ResourceKind::Pod => 2,
            ResourceKind::Node => 3,
            ResourceKind::Namespace => 4,
            ResourceKind::Gateway => 5,
            ResourceKind::ListenerSet => 6,
            ResourceKind::Route(r) => 7 + r as usize,
            ResourceKind::Ingress => 12,
            ResourceKind::DnsEndpoint => 13,
        }
    }

    /// The API kind: `Service`, `HTTPRoute`, ...
    pub fn kind(self) -> &'static str {
        self.spec().name
    }

    /// Nodes and Namespaces have no namespace; everything else extdns reads is namespaced.
    pub fn cluster_scoped(self) -> bool {
        self.spec().scope == Scope::Cluster
    }

    /// The kind whose API kind is `name` (`Service`, `HTTPRoute`, ...).
    pub fn from_kind(name: &str) -> Option<ResourceKind> {
        KINDS.iter().find(|s| s.name == name).map(|s| s.kind)
    }

    /// The kind `kind` in `apiVersion` names, if extdns reads that version of it.
    pub fn from_api_version(api_version: &str, kind: &str) -> Option<ResourceKind> {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        KINDS
            .iter()
            .find(|s| s.name == kind && s.group == group && s.versions.contains(&version))
            .map(|s| s.kind)
    }

    /// How the `resource` label external-dns writes names this kind: the API kind in lower case, except
    /// DNSEndpoints, which external-dns labels `crd` whatever their kind.
    pub fn label_name(self) -> Cow<'static, str> {
        match self {
            ResourceKind::DnsEndpoint => Cow::Borrowed("crd"),
            k => Cow::Owned(k.kind().to_ascii_lowercase()),
        }
    }

    /// The kind the `resource` label spells `lower` (`service`, `httproute`, `crd`).
    pub fn from_lowercase(lower: &str) -> Option<ResourceKind> {
        if lower == "crd" {
            return Some(ResourceKind::DnsEndpoint);
        }
        KINDS
            .iter()
            .find(|s| s.name.eq_ignore_ascii_case(lower))
            .map(|s| s.kind)
    }
}

impl KindSpec {
    /// `group/version` of `version` (`version` alone for the core group).
    pub fn api_version_of(&self, version: &str) -> String {
        if self.group.is_empty() {
            version.to_string()
        } else {
            format!("{}/{version}", self.group)
        }
    }

    /// The version extdns watches unless told otherwise: the first it reads.
    pub fn preferred_version(&self) -> &'static str {
        self.versions.first().copied().unwrap_or_default()
    }

    /// The API resource of `version`, what a watch or list of this kind addresses.
    pub fn api_resource(&self, version: &str) -> ApiResource {
        ApiResource {
            group: self.group.to_string(),
            version: version.to_string(),
            api_version: self.api_version_of(version),
            kind: self.name.to_string(),
            plural: self.plural.to_string(),
        }
    }
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

impl fmt::Display for ResourceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind())
    }
}

/// Every kind extdns reads and the versions it reads them in, for messages (`Service (v1), ...`).
pub fn readable() -> String {
    KINDS
        .iter()
        .map(|s| {
            let versions: Vec<String> = s.versions.iter().map(|v| s.api_version_of(v)).collect();
            format!("{} ({})", s.name, versions.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The API types of the watched kinds, each tied to its view. Implemented in [`crate::convert`], beside the
/// conversions; sealed, as the table lists every one.
pub trait Watched:
    sealed::Sealed + Resource + Clone + DeserializeOwned + Serialize + fmt::Debug + Send + Sync + 'static
{
}

impl<K: sealed::Sealed + Resource + Clone + DeserializeOwned + Serialize + fmt::Debug + Send + Sync + 'static> Watched
    for K
{
}

pub(crate) mod sealed {
    use super::*;

    /// What the generic ingest path needs from an API type.
    pub trait Sealed {
        /// Its compact view.
        #[doc(hidden)]
        type View: Item;
        /// Its kind (several API types may share a view, never a kind).
        #[doc(hidden)]
        const KIND: ResourceKind;
        /// The view of an object, with the shared strings of `c`.
        #[doc(hidden)]
        fn view(&self, c: &Convert<'_>) -> Self::View;
        /// Evens out an object's JSON before it is decoded (fields the typed model requires but the API
        /// lets objects leave out, fields no source reads that the model would check).
        #[doc(hidden)]
        fn prepare(_value: &mut Value) {}
    }
}

/// What a conversion shares with every other: the store's interner and what the options keep.
pub struct Convert<'a> {
    /// Shares repeated strings (namespaces, label keys) between objects.
    pub interner: &'a Interner,
    /// Which Pod annotations are kept.
    pub pod_annotation_prefixes: &'a PodAnnotationPrefixes,
    /// Which fields beyond the view templates read.
    pub template_fields: &'a TemplateFields,
}

/// The one conversion of an object, live or from a file: the view, the fields templates read, and label
/// and annotation keys shared through the interner.
pub(crate) fn convert<K: Watched>(object: &K, c: &Convert<'_>) -> K::View {
    let mut view = object.view(c);
    if let Some(slot) = view.template_fields_slot() {
        *slot = c.template_fields.keep(K::KIND, object);
    }
    // Not `Item::intern`, which Pods override for views made elsewhere: a Pod's conversion shares its
    // strings as it makes the view, and Pods are the most numerous objects.
    if let Some(meta) = view.meta_mut() {
        meta.intern(c.interner);
    }
    view.intern_values(c.interner);
    view
}

/// Decodes one object's JSON into `K` ([`sealed::Sealed::prepare`] first, which may change `value`).
pub(crate) fn decode<K: Watched>(value: &mut Value) -> Result<K, DecodeError> {
    K::prepare(value);
    decode::decode(value)
}

/// A kind's API type, type-erased, so the table can hold every kind.
pub(crate) trait KindOps: Sync {
    /// An empty index for its views.
    fn new_index(&self, kind: ResourceKind) -> Box<dyn AnyIndex>;
    /// Decodes, converts and stores one object from a file.
    fn load(&self, value: &mut Value, store: &mut ClusterStore, opts: &LoadOptions) -> Result<(), DecodeError>;
    /// Starts the watcher of this kind in `namespace` (all for `None`), at the version discovery finds
    /// served ([`crate::availability`]), for the objects `labels` selects (a demand's cover) beyond the
    /// configured selector.
    fn watch(&self, namespace: Option<&str>, labels: Option<String>, inner: Arc<Inner>) -> Option<JoinHandle<()>>;
    /// Lists the objects of `namespace` that `labels` selects into the live view (new demand).
    fn list_selected(&self, inner: Arc<Inner>, api: ApiAccess, namespace: Sym, labels: String, id: u64) -> AbortHandle;
}

struct Typed<K>(PhantomData<fn() -> K>);

impl<K: Watched> KindOps for Typed<K> {
    fn new_index(&self, kind: ResourceKind) -> Box<dyn AnyIndex> {
        Box::new(Index::<K::View>::new(kind))
    }

    fn load(&self, value: &mut Value, store: &mut ClusterStore, opts: &LoadOptions) -> Result<(), DecodeError> {
        let object = decode::<K>(value)?;
        let c = Convert {
            interner: store.interner(),
            pod_annotation_prefixes: &opts.pod_annotation_prefixes,
            template_fields: &opts.template_fields,
        };
        let view = convert(&object, &c);
        store.add_as(K::KIND, view);
        Ok(())
    }

    fn watch(&self, namespace: Option<&str>, labels: Option<String>, inner: Arc<Inner>) -> Option<JoinHandle<()>> {
        crate::live::spawn_watch::<K>(namespace, labels, inner)
    }

    fn list_selected(&self, inner: Arc<Inner>, api: ApiAccess, namespace: Sym, labels: String, id: u64) -> AbortHandle {
        crate::pod_demand::spawn_list_selected::<K>(inner, api, namespace, labels, id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_finds_its_own_entry() {
        for (i, spec) in KINDS.iter().enumerate() {
            assert_eq!(spec.kind.spec().kind, spec.kind, "{}", spec.name);
            assert_eq!(ResourceKind::from_kind(spec.name), Some(spec.kind));
            assert!(
                i == 0 || KINDS[i - 1].kind < spec.kind,
                "table out of order at {}",
                spec.name
            );
        }
        for r in RouteKind::ALL {
            assert_eq!(ResourceKind::Route(r).kind(), r.kind());
        }
    }

    #[test]
    fn versions_are_read_as_the_table_says() {
        let found = |v, k| ResourceKind::from_api_version(v, k);
        assert_eq!(found("v1", "Service"), Some(ResourceKind::Service));
        assert_eq!(found("v2", "Service"), None);
        assert_eq!(
            found("gateway.networking.k8s.io/v1alpha3", "TLSRoute"),
            Some(ResourceKind::Route(RouteKind::Tls))
        );
        assert_eq!(
            found("gateway.networking.k8s.io/v1", "TCPRoute"),
            Some(ResourceKind::Route(RouteKind::Tcp))
        );
        assert_eq!(
            found("gateway.networking.k8s.io/v1alpha2", "UDPRoute"),
            Some(ResourceKind::Route(RouteKind::Udp))
        );
        assert_eq!(found("gateway.networking.k8s.io/v1alpha3", "TCPRoute"), None);
        assert_eq!(found("apps/v1", "Deployment"), None);
        assert_eq!(
            ResourceKind::from_lowercase("httproute"),
            Some(ResourceKind::Route(RouteKind::Http))
        );
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
