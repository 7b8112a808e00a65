//! `--source=service`: the Service flags and `--fqdn-target-template` on top of what every source shares.

use std::sync::Arc;

use extdns_source::{FqdnTemplate, SourceConfig};
use extdns_source_service::{ConfigError as ServiceConfigError, ServiceSourceConfig};

use super::{ValidationError, invalid};
use crate::flags::Flags;

/// The service source's configuration on top of `common`.
pub(crate) fn config(flags: &Flags, common: SourceConfig) -> Result<ServiceSourceConfig, ValidationError> {
    let sv = &flags.service;
    let fqdn_target_template = FqdnTemplate::parse(std::slice::from_ref(&flags.sources.fqdn_target_template))
        .map_err(|e| invalid(format!("--fqdn-target-template is not a valid template: {e}")))?
        .map(Arc::new);
    let mut config = ServiceSourceConfig::default();
    config.common = common;
    config.service_type_filter = sv.service_type_filter.clone();
    config.publish_internal_services = sv.publish_internal_services;
    config.publish_host_ip = sv.publish_host_ip;
    config.always_publish_not_ready_addresses = sv.always_publish_not_ready_addresses;
    config.resolve_load_balancer_hostname = sv.resolve_service_load_balancer_hostname;
    config.expose_internal_ipv6 = sv.expose_internal_ipv6;
    config.exclude_unschedulable = sv.exclude_unschedulable;
    config.compatibility = match flags.sources.compatibility.as_str() {
        "" => None,
        mode => Some(mode.parse().map_err(|e| invalid(format!("--compatibility: {e}")))?),
    };
    config.fqdn_target_template = fqdn_target_template;
    config.validate().map_err(|e| match e {
        ServiceConfigError::UnknownServiceType(_) => invalid(format!("--service-type-filter: {e}")),
        ServiceConfigError::UnknownCompatibility(_) => invalid(format!("--compatibility: {e}")),
        _ => invalid(e.to_string()),
    })?;
    Ok(config)
}
