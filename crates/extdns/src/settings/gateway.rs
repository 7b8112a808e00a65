//! The Gateway API route sources: the `--gateway-*` flags on top of what every source shares.

use extdns_source::SourceConfig;
use extdns_source_gateway::GatewaySourceConfig;

use super::{ValidationError, non_empty, selector};
use crate::flags::Flags;

/// The route sources' configuration; `--gateway-label-filter` is parsed here, once.
pub(crate) fn config(flags: &Flags, common: SourceConfig) -> Result<GatewaySourceConfig, ValidationError> {
    let g = &flags.gateway;
    let mut gateway = GatewaySourceConfig::default();
    gateway.common = common;
    gateway.gateway_name = non_empty(&g.gateway_name);
    gateway.gateway_namespace = non_empty(&g.gateway_namespace);
    gateway.gateway_label_filter = selector("--gateway-label-filter", &g.gateway_label_filter)?;
    gateway.listener_sets = g.gateway_listener_sets;
    Ok(gateway)
}
