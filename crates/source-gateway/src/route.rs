//! The domain names a route asks for, before listeners narrow them.

use extdns_informer::view::{Route, RouteKind};
use extdns_source::TemplateError;
use extdns_source::annotations::{HostnameSource, key};

use crate::hostname::Hostname;
use extdns_informer::ObjectKey;

use crate::GatewaySourceConfig;

/// The `gateway-hostname-source` annotation: which of the route's names count. `All` adds the listener
/// hostnames for a route without spec hostnames; `DefinedHostsOnly` takes `spec.hostnames` (and the
/// template), neither the annotation nor listener hostnames; an unknown value counts as `All`.
fn hostname_source_of(config: &GatewaySourceConfig, route: &Route, object: &ObjectKey) -> HostnameSource {
    let annotations = &config.common.annotations;
    annotations
        .hostname_source(&route.meta.annotations, key::GATEWAY_HOSTNAME_SOURCE)
        .unwrap_or_else(|v| {
            tracing::warn!(
                object = %object,
                annotation = key::GATEWAY_HOSTNAME_SOURCE,
                value = v,
                "unknown value (expected annotation-only or defined-hosts-only); using every hostname source"
            );
            HostnameSource::All
        })
}

/// The names of one route.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RouteNames {
    /// Valid names, lower-cased, deduplicated, in the order they were found.
    pub names: Vec<Hostname>,
    /// The route has no spec hostnames: each matching listener's own hostname is published too.
    pub listener_fallback: bool,
    /// A name the route asks for is malformed (the first, with why): the route is not fully evaluated, so
    /// its records are kept, and its status says why.
    pub invalid: Option<String>,
}

/// Collect the route's names as external-dns v0.23 orders them: `spec.hostnames` (HTTP, GRPC, TLS
/// routes), the hostname annotation (unless `--ignore-hostname-annotation`; empty items skipped), the
/// `--fqdn-template` output when those gave nothing or with `--combine-fqdn-annotation`, and, for a route
/// without spec hostnames, the listener fallback, whatever the annotation or the template gave (external-dns
/// adds the listeners' hostnames for every such route; a TCP or UDP route always has it).
///
/// "Gave a name" counts what the user wrote, valid or not: a malformed spec hostname is skipped with a
/// warning and keeps the template out, as a valid one would.
pub fn route_names(
    config: &GatewaySourceConfig,
    route: &Route,
    object: &ObjectKey,
    source_name: &str,
) -> Result<RouteNames, TemplateError> {
    let common = &config.common;
    let mode = hostname_source_of(config, route, object);
    let spec: &[String] = match route.kind {
        RouteKind::Http | RouteKind::Grpc | RouteKind::Tls => &route.hostnames,
        RouteKind::Tcp | RouteKind::Udp => &[],
    };
    let annotation = if common.ignore_hostname_annotation || mode == HostnameSource::DefinedHostsOnly {
        Vec::new()
    } else {
        common.annotations.hostnames(&route.meta.annotations)
    };

    // (raw name, where it came from) in the order found.
    let mut raw: Vec<(&str, &str)> = Vec::new();
    if mode != HostnameSource::AnnotationOnly {
        raw.extend(
            spec.iter()
                .filter(|h| !h.is_empty())
                .map(|h| (h.as_str(), "spec.hostnames")),
        );
    }
    raw.extend(
        annotation
            .iter()
            .filter(|h| !h.is_empty())
            .map(|h| (h.as_str(), "hostname annotation")),
    );

    let templated = match &common.fqdn_template {
        Some(t) if mode != HostnameSource::AnnotationOnly && (raw.is_empty() || common.combine_fqdn_annotation) => {
            t.execute(route, source_name, &common.annotations)?
        }
        _ => Vec::new(),
    };
    raw.extend(
        templated
            .iter()
            .filter(|h| !h.is_empty())
            .map(|h| (h.as_str(), "FQDN template output")),
    );

    let listener_fallback = spec.is_empty() && mode == HostnameSource::All;
    let mut names: Vec<Hostname> = Vec::with_capacity(raw.len());
    let mut invalid = None;
    for (h, field) in raw {
        match Hostname::parse(h) {
            Ok(h) => {
                if !names.contains(&h) {
                    names.push(h);
                }
            }
            Err(e) => {
                let value = extdns_source::shorten(h);
                tracing::warn!(
                    object = %object,
                    field,
                    value = %value,
                    "ignoring hostname: it {e}; the route's records are kept as they are"
                );
                invalid.get_or_insert_with(|| format!("{field} {value:?}: it {e}"));
            }
        }
    }
    Ok(RouteNames {
        names,
        listener_fallback,
        invalid,
    })
}
