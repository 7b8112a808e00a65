//! What every hand-written API type of a project's CRD repeats: its `kube::Resource` identity, read from
//! the kind table's row, so the group, version, kind and plural are written once (in `extdns-object`).

/// Implements `kube::Resource` for a namespaced CRD type with a `metadata: ObjectMeta` field, its identity
/// the row of `$kind` in the kind table at the row's preferred version; `[K: Bound] Type<K>` for a generic type.
macro_rules! namespaced_crd {
    // `[K: Bound]` for a generic type whose kind depends on its parameter.
    ([$($generics:tt)*] $ty:ty, $kind:expr) => {
        impl<$($generics)*> kube::Resource for $ty {
            type DynamicType = ();
            type Scope = kube::core::NamespaceResourceScope;

            fn kind(_: &()) -> std::borrow::Cow<'_, str> {
                std::borrow::Cow::Borrowed($kind.spec().name)
            }
            fn group(_: &()) -> std::borrow::Cow<'_, str> {
                std::borrow::Cow::Borrowed($kind.spec().group)
            }
            fn version(_: &()) -> std::borrow::Cow<'_, str> {
                std::borrow::Cow::Borrowed($kind.spec().preferred_version())
            }
            fn plural(_: &()) -> std::borrow::Cow<'_, str> {
                std::borrow::Cow::Borrowed($kind.spec().plural)
            }
            fn meta(&self) -> &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                &self.metadata
            }
            fn meta_mut(&mut self) -> &mut k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                &mut self.metadata
            }
        }
    };
    ($ty:ty, $kind:expr) => {
        namespaced_crd!([] $ty, $kind);
    };
}

pub(crate) use namespaced_crd;
