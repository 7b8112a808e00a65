//! The one ingest path of an object, live or from a file: [`decode`], then [`convert`]. Every API type the
//! kind table reads is [`Watched`], which ties it to its kind and its view (implemented beside the
//! conversions, [`crate::convert`]); the dispatch of [`crate::kinds`] finds a kind's type.

use std::fmt;

use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::ResourceKind;
use crate::decode::{self, DecodeError};
use crate::fields::TemplateFields;
use crate::intern::Interner;
use crate::item::Item;

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

/// The annotation prefixes whose annotations a Pod keeps. Sources read only extdns annotations from Pods
/// (`target`, ...), and Pods are by far the most numerous objects, so everything else is dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodAnnotationPrefixes(Vec<String>);

impl PodAnnotationPrefixes {
    /// The prefixes whose annotations a Pod keeps; any other annotation is dropped when it is stored.
    pub fn new<I, S>(prefixes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        PodAnnotationPrefixes(prefixes.into_iter().map(Into::into).collect())
    }

    /// Whether an annotation with this key is kept.
    pub fn keeps(&self, key: &str) -> bool {
        self.0.iter().any(|p| key.starts_with(p.as_str()))
    }

    /// The prefixes, in the order given.
    pub fn prefixes(&self) -> &[String] {
        &self.0
    }
}

impl Default for PodAnnotationPrefixes {
    /// Both prefixes extdns reads by default (`--annotation-prefix` not given).
    fn default() -> Self {
        PodAnnotationPrefixes::new(["external-dns.kubernetes.io/", "external-dns.alpha.kubernetes.io/"])
    }
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
    view.intern_meta(c.interner);
    view.intern_values(c.interner);
    view
}

/// The object's `metadata.uid`, which the store keeps beside its view ([`crate::item::UidSlot`]) so whatever
/// reports on the object names it without reading it back.
pub(crate) fn uid<K: Watched>(object: &K) -> Option<crate::Uid> {
    object.meta().uid.as_deref().and_then(crate::Uid::parse)
}

/// For the conversions' tests: the view of the object `value` holds, decoded and converted with default
/// options (a panic names what failed).
#[cfg(test)]
pub(crate) fn view_of<K: Watched>(mut value: Value) -> K::View {
    let object: K = decode(&mut value).expect("decodes");
    let interner = Interner::default();
    let c = Convert {
        interner: &interner,
        pod_annotation_prefixes: &Default::default(),
        template_fields: &Default::default(),
    };
    object.view(&c)
}

/// Decodes one object's JSON into `K` ([`sealed::Sealed::prepare`] first, which may change `value`).
pub(crate) fn decode<K: Watched>(value: &mut Value) -> Result<K, DecodeError> {
    K::prepare(value);
    decode::decode(value)
}
