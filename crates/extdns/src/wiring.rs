//! From flags to typed configurations and trait objects. Library crates never see argv: this is the one
//! place that knows which flag feeds which field, so both commands build exactly the same pipeline.

use std::sync::Arc;

use extdns_endpoint::{TargetNetFilter, Ttl};
use extdns_informer::PodAnnotationPrefixes;
use extdns_informer::manifests::LoadOptions;
use extdns_informer::view::RouteKind;
use extdns_source::resolver::{Resolver, StaticResolver, SystemResolver};
use extdns_source::wrappers::{Pipeline, PipelineConfig};
use extdns_source::{Annotations, FqdnTemplate, Selector, Source, SourceConfig};
use extdns_source_gateway::{GatewayRouteSource, GatewaySourceConfig};
use extdns_source_service::{ServiceSource, ServiceSourceConfig};
use ipnet::Ipv6Net;

use crate::flags::{Compatibility, Flags, SourceName};
use crate::validate::ValidationError;

fn invalid(message: impl Into<String>) -> ValidationError {
    ValidationError(message.into())
}

/// What every source shares: `--namespace`, the filters, the annotation prefixes and the FQDN template.
pub fn source_config(flags: &Flags) -> Result<SourceConfig, ValidationError> {
    let s = &flags.sources;
    let annotations = match &s.annotation_prefix {
        Some(prefix) => Annotations::with_prefix(prefix).map_err(|e| invalid(e.to_string()))?,
        None => Annotations::default(),
    };
    let fqdn_template = FqdnTemplate::parse(&s.fqdn_template)
        .map_err(|e| invalid(format!("--fqdn-template is not a valid template: {e}")))?
        .map(Arc::new);
    Ok(SourceConfig {
        namespace: non_empty(&s.namespace),
        annotation_filter: selector("--annotation-filter", &s.annotation_filter)?,
        label_filter: selector("--label-filter", &s.label_filter)?,
        annotations,
        fqdn_template,
        combine_fqdn_annotation: s.combine_fqdn_annotation,
        ignore_hostname_annotation: s.ignore_hostname_annotation,
    })
}

/// The service source's configuration on top of `common`.
pub fn service_source_config(flags: &Flags, common: SourceConfig) -> Result<ServiceSourceConfig, ValidationError> {
    let sv = &flags.service;
    let fqdn_target_template = FqdnTemplate::parse(std::slice::from_ref(&flags.sources.fqdn_target_template))
        .map_err(|e| invalid(format!("--fqdn-target-template is not a valid template: {e}")))?
        .map(Arc::new);
    let config = ServiceSourceConfig {
        common,
        service_type_filter: sv.service_type_filter.clone(),
        publish_internal_services: sv.publish_internal_services,
        publish_host_ip: sv.publish_host_ip,
        always_publish_not_ready_addresses: sv.always_publish_not_ready_addresses,
        resolve_load_balancer_hostname: sv.resolve_service_load_balancer_hostname,
        expose_internal_ipv6: sv.expose_internal_ipv6,
        exclude_unschedulable: sv.exclude_unschedulable,
        compatibility: flags.sources.compatibility().map(|c| match c {
            Compatibility::Mate => extdns_source_service::Compatibility::Mate,
            Compatibility::Molecule => extdns_source_service::Compatibility::Molecule,
            Compatibility::KopsDnsController => extdns_source_service::Compatibility::KopsDnsController,
        }),
        fqdn_target_template,
    };
    config.validate().map_err(|e| invalid(e.to_string()))?;
    Ok(config)
}

/// The Gateway route sources' configuration on top of `common`.
pub fn gateway_source_config(flags: &Flags, common: SourceConfig) -> Result<GatewaySourceConfig, ValidationError> {
    let g = &flags.gateway;
    Ok(GatewaySourceConfig {
        common,
        gateway_name: non_empty(&g.gateway_name),
        gateway_namespace: non_empty(&g.gateway_namespace),
        gateway_label_filter: selector("--gateway-label-filter", &g.gateway_label_filter)?,
        listener_sets: g.gateway_listener_sets,
    })
}

/// The wrappers every source's output goes through (§1.3).
pub fn pipeline_config(flags: &Flags) -> Result<PipelineConfig, ValidationError> {
    let s = &flags.sources;
    let target_net_filter =
        TargetNetFilter::new(&s.target_net_filter, &s.exclude_target_net).map_err(|e| invalid(e.to_string()))?;
    let nat64_networks = s
        .nat64_networks
        .iter()
        .map(|n| parse_nat64(n))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(PipelineConfig {
        default_targets: s.default_targets.clone(),
        force_default_targets: s.force_default_targets,
        target_net_filter,
        nat64_networks,
        manage_ptr: flags.provider.managed_record_types.iter().any(|t| t == "PTR"),
        create_ptr: s.create_ptr,
        min_ttl: Ttl(i64::try_from(s.min_ttl.as_secs()).unwrap_or(i64::MAX)),
        provider: flags
            .provider
            .provider
            .map(|p| p.as_str().to_string())
            .unwrap_or_default(),
        prefer_alias: s.prefer_alias,
    })
}

/// One `--nat64-networks` value: an IPv6 /96 prefix.
pub fn parse_nat64(value: &str) -> Result<Ipv6Net, ValidationError> {
    let net: ipnet::IpNet = value.trim().parse().map_err(|_| {
        invalid(format!(
            "--nat64-networks {value:?} is not a CIDR (expected an IPv6 /96 such as 64:ff9b::/96)"
        ))
    })?;
    match net {
        ipnet::IpNet::V6(v6) if v6.prefix_len() == 96 => Ok(v6),
        _ => Err(invalid(format!(
            "--nat64-networks {value:?} must be an IPv6 /96 prefix such as 64:ff9b::/96"
        ))),
    }
}

/// The sources named by `--source`, in flag order. A name repeated is built once (external-dns would run it
/// twice and deduplicate the output).
pub fn build_sources(flags: &Flags, resolver: Arc<dyn Resolver>) -> Result<Vec<Box<dyn Source>>, ValidationError> {
    let common = source_config(flags)?;
    let mut seen = Vec::new();
    let mut sources: Vec<Box<dyn Source>> = Vec::new();
    for &name in &flags.sources.source {
        if seen.contains(&name) {
            continue;
        }
        seen.push(name);
        let source: Box<dyn Source> = match name {
            SourceName::Service => Box::new(ServiceSource::new(
                service_source_config(flags, common.clone())?,
                resolver.clone(),
            )),
            SourceName::GatewayHttpRoute
            | SourceName::GatewayGrpcRoute
            | SourceName::GatewayTlsRoute
            | SourceName::GatewayTcpRoute
            | SourceName::GatewayUdpRoute => {
                let kind = route_kind(name).unwrap_or(RouteKind::Http);
                Box::new(GatewayRouteSource::new(
                    kind,
                    gateway_source_config(flags, common.clone())?,
                ))
            }
            other => return Err(invalid(format!("source {other} is not supported by extdns yet"))),
        };
        sources.push(source);
    }
    Ok(sources)
}

/// The route kind a `gateway-*` source reads.
pub fn route_kind(name: SourceName) -> Option<RouteKind> {
    match name {
        SourceName::GatewayHttpRoute => Some(RouteKind::Http),
        SourceName::GatewayGrpcRoute => Some(RouteKind::Grpc),
        SourceName::GatewayTlsRoute => Some(RouteKind::Tls),
        SourceName::GatewayTcpRoute => Some(RouteKind::Tcp),
        SourceName::GatewayUdpRoute => Some(RouteKind::Udp),
        _ => None,
    }
}

/// The full source pipeline the controller and `extdns endpoints` run, resolving load balancer hostnames
/// with the system resolver.
pub fn build_pipeline(flags: &Flags) -> Result<Pipeline, ValidationError> {
    build_pipeline_with(flags, default_resolver(flags)?)
}

/// [`build_pipeline`] with a given resolver (tests use a [`StaticResolver`]).
pub fn build_pipeline_with(flags: &Flags, resolver: Arc<dyn Resolver>) -> Result<Pipeline, ValidationError> {
    Ok(Pipeline::new(build_sources(flags, resolver)?, pipeline_config(flags)?))
}

/// The resolver for `--resolve-service-load-balancer-hostname`: the system's (`/etc/resolv.conf`) when the flag
/// is on; otherwise nothing is ever looked up, and an empty map stands in so a host without a resolver
/// configuration still starts.
pub fn default_resolver(flags: &Flags) -> Result<Arc<dyn Resolver>, ValidationError> {
    if !flags.service.resolve_service_load_balancer_hostname {
        return Ok(Arc::new(StaticResolver::new()));
    }
    let resolver =
        SystemResolver::new().map_err(|e| invalid(format!("--resolve-service-load-balancer-hostname: {e}")))?;
    Ok(Arc::new(resolver))
}

/// How manifest files are read: Pods keep the annotations under the prefixes the sources read.
pub fn load_options(flags: &Flags) -> LoadOptions {
    let prefixes = match &flags.sources.annotation_prefix {
        Some(p) => vec![p.clone()],
        None => Annotations::default().prefixes().to_vec(),
    };
    let mut options = LoadOptions::default();
    options.pod_annotation_prefixes = PodAnnotationPrefixes::new(prefixes);
    options
}

fn selector(flag: &str, value: &str) -> Result<Selector, ValidationError> {
    Selector::parse(value).map_err(|e| invalid(format!("{flag} {value:?} is not a valid selector: {e}")))
}

fn non_empty(s: &str) -> Option<String> {
    if s.is_empty() { None } else { Some(s.to_string()) }
}
