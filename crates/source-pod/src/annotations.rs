//! What a Pod's annotations and `--pod-source-domain` publish (external-dns v0.23's
//! `endpointsFromPodAnnotations`): the names, and the addresses each kind of name points at.
//!
//! | names | at, without a `target` annotation |
//! |---|---|
//! | `internal-hostname` | the Pod's IP |
//! | `hostname` | its Node's `ExternalIP`s and IPv6 `InternalIP`s (nothing while the Node is unknown) |
//! | kOps `dns.alpha.kubernetes.io/internal` | the Pod's IP (the `target` annotation is not read) |
//! | kOps `dns.alpha.kubernetes.io/external` | as `hostname` (the `target` annotation is not read) |
//! | `<pod>.<--pod-source-domain>` | the Pod's IP |
//!
//! The `target` annotation replaces the addresses of the other three. A Pod not yet given an IP publishes
//! nothing at it.

use extdns_endpoint::{Endpoint, RecordType, Target, suitable_type};
use extdns_informer::view::{EXTERNAL_IP, INTERNAL_IP, Pod};
use extdns_informer::{ClusterStore, ObjectKey, ResourceKind};
use extdns_source::annotations::{kops, split_list};

use crate::records::Records;
use crate::{PodError, PodSourceConfig};

/// The records one Pod's annotations ask for; `Err` with why when a name is invalid.
pub fn endpoints(
    config: &PodSourceConfig,
    cluster: &ClusterStore,
    pod: &Pod,
    object: &ObjectKey,
) -> Result<Vec<Endpoint>, PodError> {
    if config.ignore_non_host_network_pods && !pod.host_network {
        tracing::debug!(%object, "skipped: hostNetwork is false (--ignore-non-host-network-pods)");
        return Ok(Vec::new());
    }
    let prefixes = &config.common.annotations;
    let a = &pod.annotations;
    let targets = prefixes.targets(a);
    let mut records = Records::new(prefixes.ttl(a, object));

    for name in prefixes.internal_hostnames(a) {
        at_pod_or_targets(&mut records, &name, pod, &targets)?;
    }
    let hostnames = prefixes.hostnames(a);
    if targets.is_empty() {
        at_node(&mut records, cluster, pod, object, &hostnames)?;
    } else {
        for name in &hostnames {
            at_targets(&mut records, name, &targets)?;
        }
    }
    if config.kops_dns_controller {
        for name in a.get(kops::INTERNAL).map(split_list).unwrap_or_default() {
            at_pod_or_targets(&mut records, &name, pod, &[])?;
        }
        let external = a.get(kops::EXTERNAL).map(split_list).unwrap_or_default();
        at_node(&mut records, cluster, pod, object, &external)?;
    }
    if let Some(domain) = config.pod_source_domain.as_deref().filter(|d| !d.is_empty()) {
        at_pod_or_targets(&mut records, &format!("{}.{domain}", pod.name), pod, &targets)?;
    }
    Ok(records.into_endpoints())
}

/// `name` at the Pod's IP, or at `targets` when there are any.
fn at_pod_or_targets(records: &mut Records, name: &str, pod: &Pod, targets: &[Target]) -> Result<(), PodError> {
    if !targets.is_empty() {
        return at_targets(records, name, targets);
    }
    match pod.pod_ips.first().filter(|ip| !ip.is_empty()) {
        Some(ip) => records.add(name, Target::from(&**ip)),
        None => Ok(()),
    }
}

fn at_targets(records: &mut Records, name: &str, targets: &[Target]) -> Result<(), PodError> {
    for t in targets {
        records.add(name, t.clone())?;
    }
    Ok(())
}

/// Each of `names` at the public addresses of the Node the Pod runs on: its `ExternalIP`s and its IPv6
/// `InternalIP`s, whatever `--expose-internal-ipv6` says (as external-dns). Nothing while the Pod has no
/// Node or its Node is not known.
fn at_node(
    records: &mut Records,
    cluster: &ClusterStore,
    pod: &Pod,
    object: &ObjectKey,
    names: &[String],
) -> Result<(), PodError> {
    if names.is_empty() {
        return Ok(());
    }
    if let Some(why) = cluster.unavailable(ResourceKind::Node) {
        return Err(PodError::NodesUnavailable(why));
    }
    let Some(node) = pod.node_name.as_deref().and_then(|n| cluster.node(n)) else {
        tracing::debug!(%object, node = pod.node_name.as_deref().unwrap_or_default(), "its Node is not known; its hostname names wait for it");
        return Ok(());
    };
    // Public addresses, and the IPv6 internal ones (usable from outside too).
    let public = node.addresses.iter().filter(|a| {
        a.address_type == EXTERNAL_IP
            || (a.address_type == INTERNAL_IP && suitable_type(&a.address) == RecordType::Aaaa)
    });
    let public: Vec<Target> = public.map(|a| Target::from(a.address.as_str())).collect();
    for name in names {
        at_targets(records, name, &public)?;
    }
    Ok(())
}
