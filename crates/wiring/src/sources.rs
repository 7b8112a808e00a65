//! [`SourceSettings`]: what the sources and the source pipeline read, and the pipeline built from it. Every
//! command builds its pipeline here from the same settings, so the preview runs exactly what the controller
//! runs.

use std::sync::Arc;

use extdns_informer::manifests::LoadOptions;
use extdns_informer::view::F5Kind;
use extdns_informer::view::RouteKind;
use extdns_source::resolver::{ResolveError, Resolver, StaticResolver, SystemResolver};
use extdns_source::wrappers::PipelineConfig;
use extdns_source::{Pipeline, ProviderRoute, Source, SourceConfig};
use extdns_source_crd::{CrdSource, CrdSourceConfig};
use extdns_source_f5::{F5Source, F5SourceConfig};
use extdns_source_gateway::{GatewayRouteSource, GatewaySourceConfig};
use extdns_source_ingress::{IngressSource, IngressSourceConfig};
use extdns_source_istio::{IstioGatewaySource, IstioSourceConfig, VirtualServiceSource};
use extdns_source_node::{NodeSource, NodeSourceConfig};
use extdns_source_pod::{PodSource, PodSourceConfig};
use extdns_source_service::{ServiceSource, ServiceSourceConfig};
// --- contour-httpproxy and openshift-route sources ---
use extdns_source_contour::HttpProxySource;
use extdns_source_openshift::{RouteSource, RouteSourceConfig};
use extdns_source_traefik::{TraefikSource, TraefikSourceConfig};
// --- ambassador-host source ---
use extdns_source_ambassador::AmbassadorHostSource;

/// A source extdns implements, as the pipeline builds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnabledSource {
    /// `service`.
    Service,
    /// `gateway-<kind>route`, one per route kind.
    Route(RouteKind),
    /// `ingress`.
    Ingress,
    /// `crd` (DNSEndpoint objects).
    Crd,
    /// `node`.
    Node,
    /// `pod`.
    Pod,
    /// `f5-virtualserver` or `f5-transportserver`.
    F5(F5Kind),
    // --- contour-httpproxy and openshift-route sources ---
    /// `contour-httpproxy`.
    ContourHttpProxy,
    /// `openshift-route`.
    OpenShiftRoute,
    /// `istio-gateway`.
    IstioGateway,
    /// `istio-virtualservice`.
    IstioVirtualService,
    /// `traefik-proxy` (Traefik's IngressRoute, IngressRouteTCP, IngressRouteUDP).
    Traefik,
    // --- ambassador-host source ---
    /// `ambassador-host` (Emissary-ingress's Host).
    AmbassadorHost,
}

/// What the sources and the source pipeline read; every command builds its pipeline from it.
#[derive(Debug, Clone)]
pub struct SourceSettings {
    /// The sources in the order given, each once (external-dns would run a repeated name twice and
    /// deduplicate).
    pub enabled: Vec<EnabledSource>,
    /// The service source's configuration; its `common` part is shared with `gateway` (same template).
    pub service: ServiceSourceConfig,
    /// The route sources' configuration (one for every route kind).
    pub gateway: GatewaySourceConfig,
    /// The ingress source's configuration.
    pub ingress: IngressSourceConfig,
    /// The crd source's configuration.
    pub crd: CrdSourceConfig,
    /// The F5 sources' configuration (both kinds).
    pub f5: F5SourceConfig,
    // --- contour-httpproxy and openshift-route sources ---
    /// The contour-httpproxy source's configuration (what every source shares: it has no flag of its own).
    pub contour: SourceConfig,
    /// The openshift-route source's configuration.
    pub openshift: RouteSourceConfig,
    /// The Istio sources' configuration (both share it).
    pub istio: IstioSourceConfig,
    /// The wrappers every source's endpoints go through.
    pub pipeline: PipelineConfig,
    /// The traefik-proxy source's configuration.
    pub traefik: TraefikSourceConfig,
    /// How manifest files are read: Pods keep the annotations under the prefixes the sources read.
    pub load_options: LoadOptions,
    /// The node source's configuration.
    pub node: NodeSourceConfig,
    /// The pod source's configuration.
    pub pod: PodSourceConfig,
    // --- ambassador-host source ---
    /// The ambassador-host source's configuration (what every source shares: it has no flag of its own).
    pub ambassador: SourceConfig,
}

impl SourceSettings {
    /// What every source shares.
    pub fn common(&self) -> &SourceConfig {
        &self.service.common
    }

    /// Publish only what routes to `route` (one provider object's pipeline).
    pub fn set_route(&mut self, route: ProviderRoute) {
        self.service.common.route = Some(route.clone());
        self.gateway.common.route = Some(route.clone());
        self.ingress.common.route = Some(route.clone());
        self.node.common.route = Some(route.clone());
        self.pod.common.route = Some(route.clone());
        self.f5.common.route = Some(route.clone());
        self.contour.route = Some(route.clone());
        self.openshift.common.route = Some(route.clone());
        self.istio.common.route = Some(route.clone());
        self.traefik.common.route = Some(route.clone());
        // --- ambassador-host source ---
        self.ambassador.route = Some(route.clone());
        self.crd.route = Some(route);
    }
}

/// The enabled sources, in the order given.
pub fn build_sources(settings: &SourceSettings, resolver: Arc<dyn Resolver>) -> Vec<Box<dyn Source>> {
    settings
        .enabled
        .iter()
        .map(|&source| -> Box<dyn Source> {
            match source {
                EnabledSource::Service => Box::new(ServiceSource::new(settings.service.clone(), resolver.clone())),
                EnabledSource::Route(kind) => Box::new(GatewayRouteSource::new(kind, settings.gateway.clone())),
                EnabledSource::Crd => Box::new(CrdSource::new(settings.crd.clone())),
                EnabledSource::Ingress => Box::new(IngressSource::new(settings.ingress.clone())),
                EnabledSource::Node => Box::new(NodeSource::new(settings.node.clone())),
                EnabledSource::Pod => Box::new(PodSource::new(settings.pod.clone())),
                EnabledSource::F5(kind) => Box::new(F5Source::new(kind, settings.f5.clone())),
                // --- contour-httpproxy and openshift-route sources ---
                EnabledSource::ContourHttpProxy => Box::new(HttpProxySource::new(settings.contour.clone())),
                EnabledSource::OpenShiftRoute => Box::new(RouteSource::new(settings.openshift.clone())),
                EnabledSource::IstioGateway => Box::new(IstioGatewaySource::new(settings.istio.clone())),
                EnabledSource::IstioVirtualService => Box::new(VirtualServiceSource::new(settings.istio.clone())),
                EnabledSource::Traefik => Box::new(TraefikSource::new(settings.traefik.clone())),
                // --- ambassador-host source ---
                EnabledSource::AmbassadorHost => Box::new(AmbassadorHostSource::new(settings.ambassador.clone())),
            }
        })
        .collect()
}

/// The full source pipeline, load balancer hostnames looked up with `resolver`.
pub fn build_pipeline(settings: &SourceSettings, resolver: Arc<dyn Resolver>) -> Pipeline {
    Pipeline::new(build_sources(settings, resolver), settings.pipeline.clone())
}

/// The resolver load balancer hostnames are looked up with: the system's (`/etc/resolv.conf`) when the
/// service source looks them up; otherwise nothing is ever looked up, and an empty map stands in so a host without
/// a resolver configuration still starts.
pub fn default_resolver(settings: &SourceSettings) -> Result<Arc<dyn Resolver>, ResolveError> {
    if !settings.service.resolve_load_balancer_hostname {
        return Ok(Arc::new(StaticResolver::new()));
    }
    Ok(Arc::new(SystemResolver::new()?))
}
