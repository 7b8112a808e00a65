//! The source pipeline's wrappers: default targets, the target network filter, NAT64, PTR records and the
//! minimum TTL.

use extdns_endpoint::{NetworkList, Target, TargetNetFilter, Ttl};
use extdns_source::wrappers::{PipelineConfig, nat64_prefix};

use super::{ValidationError, invalid};
use crate::flags::Flags;

/// The wrappers' configuration. `manage_ptr` is whether PTR is a managed record type, which
/// `--create-ptr` needs (checked by the caller, which reads the flag first).
pub(crate) fn config(flags: &Flags, manage_ptr: bool) -> Result<PipelineConfig, ValidationError> {
    let s = &flags.sources;
    let target_net_filter = TargetNetFilter::new(&s.target_net_filter, &s.exclude_target_net).map_err(|e| {
        let flag = match e.list() {
            NetworkList::Exclude => "--exclude-target-net",
            _ => "--target-net-filter",
        };
        invalid(format!("{flag}: {e}"))
    })?;
    let nat64_networks = s
        .nat64_networks
        .iter()
        .map(|n| nat64_prefix(n).map_err(|e| invalid(format!("--nat64-networks {n:?} {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    let mut pipeline = PipelineConfig::default();
    pipeline.default_targets = s.default_targets.iter().map(Target::from).collect();
    pipeline.force_default_targets = s.force_default_targets;
    pipeline.target_net_filter = target_net_filter;
    pipeline.nat64_networks = nat64_networks;
    pipeline.manage_ptr = manage_ptr;
    pipeline.create_ptr = s.create_ptr;
    pipeline.min_ttl = Ttl(i64::try_from(s.min_ttl.as_secs()).unwrap_or(i64::MAX));
    pipeline.provider = flags
        .provider
        .provider
        .map(|p| p.as_str().to_string())
        .unwrap_or_default();
    pipeline.prefer_alias = s.prefer_alias;
    Ok(pipeline)
}
