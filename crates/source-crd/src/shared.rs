//! The object-level shared-name mark of a DNSEndpoint (docs/shared-names.md): the annotations the other
//! sources read (`external-dns.kubernetes.io/shared: "true"` and the health check's `shared-health-check`,
//! `-interval`, `-threshold`, under every prefix read), set as an annotation or a label on the object,
//! apply to every entry. A DNSEndpoint often carries one name per object, and marking each entry's `providerSpecific`
//! repeats the mark; the object-level form is what users of the other sources already write. An entry's
//! own property wins over the object's.

use extdns_endpoint::Endpoint;
use extdns_endpoint::shared::{ANNOTATIONS, annotation_property};
use extdns_informer::view::DnsEndpoint;
use extdns_source::annotations::Annotations;

/// The properties the object's annotations and labels set for every entry, the annotation winning over a
/// label of the same key.
pub(crate) fn object_properties(annotations: &Annotations, o: &DnsEndpoint) -> Vec<(&'static str, String)> {
    ANNOTATIONS
        .iter()
        .filter_map(|(key, _)| {
            let value = annotations
                .get(&o.meta.annotations, key)
                .or_else(|| annotations.get(&o.meta.labels, key))?;
            annotation_property(key, value).map(|property| (property, value.to_string()))
        })
        .collect()
}

/// Sets `properties` on each endpoint that does not set them itself.
pub(crate) fn apply(properties: &[(&'static str, String)], endpoints: &mut [Endpoint]) {
    for e in endpoints {
        for (name, value) in properties {
            if e.provider_specific.get(name).is_none() {
                e.provider_specific.set(*name, value.as_str());
            }
        }
    }
}
