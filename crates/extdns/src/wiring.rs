//! From settings to the source pipeline. Both commands build it here from the same [`SourceSettings`], so
//! the preview runs exactly what the controller runs; nothing here parses or checks a flag.

use std::sync::Arc;

use extdns_source::resolver::{Resolver, StaticResolver, SystemResolver};
use extdns_source::{Pipeline, Source};
use extdns_source_crd::CrdSource;
use extdns_source_gateway::GatewayRouteSource;
use extdns_source_ingress::IngressSource;
use extdns_source_service::ServiceSource;

use crate::settings::{EnabledSource, SourceSettings, ValidationError};

/// The enabled sources, in `--source` order.
pub fn build_sources(settings: &SourceSettings, resolver: Arc<dyn Resolver>) -> Vec<Box<dyn Source>> {
    settings
        .enabled
        .iter()
        .map(|&source| -> Box<dyn Source> {
            match source {
                EnabledSource::Service => Box::new(service_source(settings, resolver.clone())),
                EnabledSource::Route(kind) => Box::new(GatewayRouteSource::new(kind, settings.gateway.clone())),
                EnabledSource::Crd => Box::new(CrdSource::new(settings.crd.clone())),
                EnabledSource::Ingress => Box::new(IngressSource::new(settings.ingress.clone())),
            }
        })
        .collect()
}

fn service_source(settings: &SourceSettings, resolver: Arc<dyn Resolver>) -> ServiceSource {
    ServiceSource::new(settings.service.clone(), resolver)
}

/// The full source pipeline the controller and `extdns endpoints` run, resolving load balancer hostnames
/// with the system resolver.
pub fn build_pipeline(settings: &SourceSettings) -> Result<Pipeline, ValidationError> {
    Ok(build_pipeline_with(settings, default_resolver(settings)?))
}

/// [`build_pipeline`] with a given resolver (tests use a [`StaticResolver`]).
pub fn build_pipeline_with(settings: &SourceSettings, resolver: Arc<dyn Resolver>) -> Pipeline {
    Pipeline::new(build_sources(settings, resolver), settings.pipeline.clone())
}

/// The resolver for `--resolve-service-load-balancer-hostname`: the system's (`/etc/resolv.conf`) when the flag
/// is on; otherwise nothing is ever looked up, and an empty map stands in so a host without a resolver
/// configuration still starts.
pub fn default_resolver(settings: &SourceSettings) -> Result<Arc<dyn Resolver>, ValidationError> {
    if !settings.resolve_load_balancer_hostname {
        return Ok(Arc::new(StaticResolver::new()));
    }
    let resolver =
        SystemResolver::new().map_err(|e| ValidationError(format!("--resolve-service-load-balancer-hostname: {e}")))?;
    Ok(Arc::new(resolver))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flags::try_parse_from;
    use crate::settings;

    #[test]
    fn an_fqdn_template_is_parsed_once_and_shared_by_every_source() -> Result<(), Box<dyn std::error::Error>> {
        let cli = try_parse_from([
            "extdns",
            "--source=service",
            "--source=gateway-httproute",
            "--fqdn-template={{.Name}}.example.com",
        ])?;
        let settings = settings::sources(&cli.flags)?;
        let Some(parsed) = settings.common().fqdn_template.as_ref() else {
            return Err("the template was dropped".into());
        };
        let service = service_source(&settings, Arc::new(StaticResolver::new()));
        let gateway = settings.gateway.common.fqdn_template.as_ref();
        assert!(
            service
                .config()
                .common
                .fqdn_template
                .as_ref()
                .is_some_and(|t| Arc::ptr_eq(t, parsed))
        );
        assert!(gateway.is_some_and(|t| Arc::ptr_eq(t, parsed)));
        let again = service_source(&settings, Arc::new(StaticResolver::new()));
        assert!(
            again
                .config()
                .common
                .fqdn_template
                .as_ref()
                .is_some_and(|t| Arc::ptr_eq(t, parsed))
        );
        assert_eq!(build_sources(&settings, Arc::new(StaticResolver::new())).len(), 2);
        Ok(())
    }

    #[test]
    fn a_repeated_source_is_built_once() -> Result<(), Box<dyn std::error::Error>> {
        let cli = try_parse_from(["extdns", "--source=service", "--source=service"])?;
        let settings = settings::sources(&cli.flags)?;
        assert_eq!(build_sources(&settings, Arc::new(StaticResolver::new())).len(), 1);
        Ok(())
    }
}
