//! `--source=crd`: the DNSEndpoint source's scope and where its objects are read (`--crd-source-*`).

use extdns_informer::{KindOverrides, ResourceKind};
use extdns_source::SourceConfig;
use extdns_source_crd::CrdSourceConfig;

use super::ValidationError;
use crate::flags::Flags;

/// The crd source's scope, and the group, version and kind its objects are read as when not external-dns's
/// default (`--crd-source-apiversion`, `--crd-source-kind`). The resource is the kind in lower case plus
/// `s`, as external-dns up to v0.20 addressed it; the live view corrects it by discovery.
pub(crate) fn config(
    flags: &Flags,
    common: &SourceConfig,
    overrides: &mut KindOverrides,
) -> Result<CrdSourceConfig, ValidationError> {
    let c = &flags.crd;
    let api_version = c.crd_source_apiversion.as_str();
    overrides.read_as(ResourceKind::DnsEndpoint, api_version, &c.crd_source_kind).map_err(|_| {
        ValidationError(format!(
            "--crd-source-apiversion {api_version:?} and --crd-source-kind {:?} must name a group/version and a kind",
            c.crd_source_kind
        ))
    })?;
    Ok(CrdSourceConfig {
        namespace: common.namespace.clone(),
        annotation_filter: common.annotation_filter.clone(),
        label_filter: common.label_filter.clone(),
        annotations: common.annotations.clone(),
        route: common.route.clone(),
    })
}
