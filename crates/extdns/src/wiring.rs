//! From settings to the source pipeline, built by extdns-wiring from the same [`SourceSettings`] for every
//! command, so the preview runs exactly what the controller runs; here only the flag behind a resolver that
//! cannot be made is named.

use std::sync::Arc;

use extdns_source::Pipeline;
use extdns_source::resolver::Resolver;
pub use extdns_wiring::{build_pipeline as build_pipeline_with, build_sources};

use crate::settings::{SourceSettings, ValidationError};

/// The full source pipeline the controller and `extdns endpoints` run, resolving load balancer hostnames
/// with the system resolver.
pub fn build_pipeline(settings: &SourceSettings) -> Result<Pipeline, ValidationError> {
    Ok(build_pipeline_with(settings, default_resolver(settings)?))
}

/// The resolver for `--resolve-service-load-balancer-hostname` ([`extdns_wiring::default_resolver`]).
pub fn default_resolver(settings: &SourceSettings) -> Result<Arc<dyn Resolver>, ValidationError> {
    extdns_wiring::default_resolver(settings)
        .map_err(|e| ValidationError(format!("--resolve-service-load-balancer-hostname: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flags::try_parse_from;
    use crate::settings;
    use extdns_source::resolver::StaticResolver;

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
        let service = settings.service.common.fqdn_template.as_ref();
        let gateway = settings.gateway.common.fqdn_template.as_ref();
        assert!(service.is_some_and(|t| Arc::ptr_eq(t, parsed)));
        assert!(gateway.is_some_and(|t| Arc::ptr_eq(t, parsed)));
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
