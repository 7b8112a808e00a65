//! `--source=node`: `--exclude-unschedulable`, `--expose-internal-ipv6` and `--fqdn-target-template` on top of
//! what every source shares.

use extdns_source::SourceConfig;
use extdns_source_node::NodeSourceConfig;
use extdns_source_service::ServiceSourceConfig;

use crate::flags::Flags;

/// The node source's configuration on top of `common`; the `--fqdn-target-template` parsed for the service
/// source is the one it runs.
pub(crate) fn config(flags: &Flags, common: SourceConfig, service: &ServiceSourceConfig) -> NodeSourceConfig {
    let mut config = NodeSourceConfig::new(common);
    config.fqdn_target_template = service.fqdn_target_template.clone();
    config.exclude_unschedulable = flags.service.exclude_unschedulable;
    config.expose_internal_ipv6 = flags.service.expose_internal_ipv6;
    config
}
