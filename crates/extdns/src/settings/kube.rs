//! The Kubernetes client (`--kubeconfig`, `--server`, `--request-timeout`) and what the live view watches.

use std::collections::BTreeMap;
use std::path::PathBuf;

use extdns_informer::client::ClientConfig;
use extdns_informer::view::RouteKind;
use extdns_informer::{LiveOptions, ResourceKind};
use extdns_wiring::EnabledSource;

use super::{KubeSettings, SourceSettings, non_empty};
use crate::flags::Flags;

/// The client settings and what the live view watches beyond the kinds: the namespaces and the server-side
/// label selectors, so objects the sources would drop anyway are neither sent nor stored.
pub(crate) fn config(flags: &Flags, sources: &SourceSettings) -> KubeSettings {
    let k = &flags.kube;
    let common = sources.common();
    let gateway = &sources.gateway;
    let mut label_selectors = BTreeMap::new();
    if !common.label_filter.is_everything() {
        let selector = common.label_filter.to_string();
        // The Istio sources read the Services a Gateway selects and the Ingress its annotation names whatever
        // their labels (as external-dns does), and `--traefik-service` reads one Service: those kinds are then
        // filtered by the sources that read them through the filter, not by the API server.
        let istio = sources
            .enabled
            .iter()
            .any(|e| matches!(e, EnabledSource::IstioGateway | EnabledSource::IstioVirtualService));
        let traefik_service = sources.enabled.contains(&EnabledSource::Traefik) && sources.traefik.service.is_some();
        // --- ambassador-host source ---
        // A Host's `external-dns.ambassador-service` Service is read whatever its labels too.
        let ambassador = sources.enabled.contains(&EnabledSource::AmbassadorHost);
        if !istio && !traefik_service && !ambassador {
            label_selectors.insert(ResourceKind::Service, selector.clone());
        }
        if !istio {
            label_selectors.insert(ResourceKind::Ingress, selector.clone());
        }
        for kind in RouteKind::ALL {
            label_selectors.insert(ResourceKind::Route(kind), selector.clone());
        }
        for kind in [ResourceKind::F5VirtualServer, ResourceKind::F5TransportServer] {
            label_selectors.insert(kind, selector.clone());
        }
        // --- ambassador-host source ---
        label_selectors.insert(ResourceKind::AmbassadorHost, selector.clone());
    }
    if !gateway.gateway_label_filter.is_everything() {
        label_selectors.insert(ResourceKind::Gateway, gateway.gateway_label_filter.to_string());
    }
    let timeout = k.effective_request_timeout();
    let mut live = LiveOptions::default();
    live.namespace = common.namespace.clone();
    live.gateway_namespace = gateway.gateway_namespace.clone();
    live.label_selectors = label_selectors;
    live.pod_annotation_prefixes = sources.load_options.pod_annotation_prefixes.clone();
    live.template_fields = sources.load_options.template_fields.clone();
    live.pods_on_demand = true;
    live.overrides = sources.load_options.overrides.clone();
    let mut client = ClientConfig::new(concat!("extdns/", env!("CARGO_PKG_VERSION")));
    client.kubeconfig = (!k.kubeconfig.is_empty()).then(|| PathBuf::from(&k.kubeconfig));
    client.server = non_empty(&k.server);
    client.request_timeout = (!timeout.is_zero() && !flags.control.events).then_some(timeout);
    KubeSettings { client, live }
}
