//! How the informer reads each kind of [`KINDS`], the table the leaf crate `extdns-object` holds as data.
//!
//! Each kind's row says where its objects live and how its changes count; its API type (tied to its view
//! by the [`Watched`] implementation in [`crate::convert`]) is found by [`ops`]. Everything else is generic
//! over the table: the live watchers ([`crate::live`]), the manifest loader ([`crate::manifests`]) and the
//! store ([`crate::ClusterStore`]) go through the same ingest path ([`decode`], then [`convert`]), so an
//! object is decoded, converted and interned the same way whichever backs the cluster. Adding a kind is a
//! [`ResourceKind`] variant and a row in `extdns-object`, a view, its conversion and its arm in [`ops`].

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

pub use extdns_object::{ChangeKey, KINDS, KindSpec, ResourceKind, Scope, WatchIn, readable};

use crate::decode::{self, DecodeError};
use crate::dnsendpoint::DnsEndpoint;
use crate::live::{ApiAccess, Inner};
use crate::store::{AnyIndex, Index, Item};
use crate::view::RouteKind;
use crate::{ClusterStore, Interner, LoadOptions, PodAnnotationPrefixes, Sym, TemplateFields};

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

/// The API type of `kind`, type-erased: what the generic paths call.
pub(crate) fn ops(kind: ResourceKind) -> &'static dyn KindOps {
    match kind {
        ResourceKind::Service => &Typed::<core::Service>(PhantomData),
        ResourceKind::EndpointSlice => &Typed::<discovery::EndpointSlice>(PhantomData),
        ResourceKind::Pod => &Typed::<core::Pod>(PhantomData),
        ResourceKind::Node => &Typed::<core::Node>(PhantomData),
        ResourceKind::Namespace => &Typed::<core::Namespace>(PhantomData),
        ResourceKind::Gateway => &Typed::<gateways::Gateway>(PhantomData),
        ResourceKind::ListenerSet => &Typed::<listenersets::ListenerSet>(PhantomData),
        ResourceKind::Route(RouteKind::Http) => &Typed::<httproutes::HttpRoute>(PhantomData),
        ResourceKind::Route(RouteKind::Grpc) => &Typed::<grpcroutes::GrpcRoute>(PhantomData),
        ResourceKind::Route(RouteKind::Tls) => &Typed::<tlsroutes::TlsRoute>(PhantomData),
        ResourceKind::Route(RouteKind::Tcp) => &Typed::<TcpRoute>(PhantomData),
        ResourceKind::Route(RouteKind::Udp) => &Typed::<UdpRoute>(PhantomData),
        ResourceKind::Ingress => &Typed::<networking::Ingress>(PhantomData),
        ResourceKind::DnsEndpoint => &Typed::<DnsEndpoint>(PhantomData),
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
