//! Which Istio objects a change may alter, found through the store's reverse indexes: a change costs the
//! objects it touches, never a walk over every Gateway or VirtualService.

use std::collections::BTreeSet;

use extdns_informer::index::Ref;
use extdns_informer::{ChangeSet, ClusterStore, ObjectKey, ResourceKind};

/// The Gateways whose targets or names `changes` may alter: the changed Gateways (gone ones included),
/// those selecting a changed Service by a label it had before or has after the change (or by none: an
/// empty selector selects every Service), and those whose Ingress annotation names a changed Ingress.
pub(crate) fn affected_gateways(cluster: &ClusterStore, changes: &ChangeSet) -> BTreeSet<ObjectKey> {
    let kind = ResourceKind::IstioGateway;
    let mut out: BTreeSet<ObjectKey> = changes.of_kind(kind).cloned().collect();
    let key = |gw: &extdns_informer::view::IstioGateway| ObjectKey::new(kind, &gw.meta.namespace, &gw.meta.name);
    if changes.touches(ResourceKind::Service) {
        out.extend(cluster.istio_gateways_selecting_every_service().iter().map(|g| key(g)));
        for announced in changes.announced() {
            if let Ref::Selects(ResourceKind::Service, k, v) = announced {
                out.extend(cluster.istio_gateways_selecting(k, v).iter().map(|g| key(g)));
            }
        }
    }
    for ingress in changes.of_kind(ResourceKind::Ingress) {
        let naming = cluster.istio_gateways_of_ingress(&ingress.namespace, &ingress.name);
        out.extend(naming.iter().map(|g| key(g)));
    }
    out
}

/// The VirtualServices `changes` may alter: the changed ones, and those naming a Gateway
/// [`affected_gateways`] finds.
pub(crate) fn affected_virtual_services(cluster: &ClusterStore, changes: &ChangeSet) -> BTreeSet<ObjectKey> {
    let kind = ResourceKind::VirtualService;
    let mut out: BTreeSet<ObjectKey> = changes.of_kind(kind).cloned().collect();
    for gw in affected_gateways(cluster, changes) {
        let naming = cluster.virtual_services_of_gateway(&gw.namespace, &gw.name);
        out.extend(
            naming
                .iter()
                .map(|vs| ObjectKey::new(kind, &vs.meta.namespace, &vs.meta.name)),
        );
    }
    out
}
