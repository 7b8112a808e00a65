//! `--source=pod`: the pod source's flags, `--compatibility` and `--fqdn-target-template` on top of what
//! every source shares, and which Pod annotations the informer keeps for it.

use extdns_informer::PodAnnotationPrefixes;
use extdns_source::SourceConfig;
use extdns_source::annotations::kops;
use extdns_source_pod::PodSourceConfig;
use extdns_source_service::{Compatibility, ServiceSourceConfig};

use crate::flags::Flags;

/// The pod source's configuration on top of `common`; `--compatibility` and `--fqdn-target-template` as the
/// service source's settings parsed them.
pub(crate) fn config(flags: &Flags, common: SourceConfig, service: &ServiceSourceConfig) -> PodSourceConfig {
    let p = &flags.pod;
    let mut config = PodSourceConfig::new(common);
    config.fqdn_target_template = service.fqdn_target_template.clone();
    config.ignore_non_host_network_pods = p.ignore_non_host_network_pods;
    config.pod_source_domain = super::non_empty(&p.pod_source_domain);
    config.kops_dns_controller = service.compatibility == Some(Compatibility::KopsDnsController);
    config
}

/// The annotations a Pod keeps when the pod source reads Pods: those under the read prefixes (all the service
/// source needs), kOps's with `--compatibility=kops-dns-controller`, and the keys `--annotation-filter`
/// matches, which the pod source checks on every Pod.
pub(crate) fn kept_annotations(pod: &PodSourceConfig) -> PodAnnotationPrefixes {
    let common = &pod.common;
    let mut keep: Vec<String> = common.annotations.prefixes().to_vec();
    if pod.kops_dns_controller {
        keep.extend([kops::EXTERNAL.to_string(), kops::INTERNAL.to_string()]);
    }
    keep.extend(common.annotation_filter.keys().map(str::to_string));
    PodAnnotationPrefixes::new(keep)
}
