//! `--source=ingress`: the `--ingress-*` flags on top of what every source shares.

use extdns_source::SourceConfig;
use extdns_source_ingress::{INGRESS_CLASS_ANNOTATION, IngressSourceConfig};

use super::{ValidationError, fail};
use crate::flags::Flags;

/// The ingress source's configuration on top of `common`. As external-dns, `--ingress-class` and an
/// `--annotation-filter` on `kubernetes.io/ingress.class` are refused together.
pub(crate) fn config(flags: &Flags, common: SourceConfig) -> Result<IngressSourceConfig, ValidationError> {
    let i = &flags.ingress;
    if !i.ingress_class.is_empty() && common.annotation_filter.has_key(INGRESS_CLASS_ANNOTATION) {
        return fail("--ingress-class is mutually exclusive with the kubernetes.io/ingress.class annotation filter");
    }
    Ok(IngressSourceConfig::new(
        common,
        i.ingress_class.clone(),
        i.ignore_ingress_tls_spec,
        i.ignore_ingress_rules_spec,
    ))
}
