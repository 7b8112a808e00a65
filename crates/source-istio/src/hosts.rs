//! The names Istio objects ask for, and whether a VirtualService's name binds to a Gateway.

use extdns_informer::view::{IstioGateway, VirtualService};

/// A host as a Gateway server or a VirtualService lists it, without its `namespace/` prefix; `None` for
/// what is not a name to publish (empty, or the bare `*`). A host with more than one `/` stays as written.
pub(crate) fn published_host(host: &str) -> Option<&str> {
    let mut parts = host.split('/');
    let host = match (parts.next(), parts.next(), parts.next()) {
        (Some(_), Some(name), None) => name,
        _ => host,
    };
    (!host.is_empty() && host != "*").then_some(host)
}

/// Whether `vs` binds to `gw` for the name `vs_host`, as Istio admits a VirtualService on a Gateway: the
/// VirtualService is exported to the Gateway's namespace (`exportTo` empty, `*`, that namespace, or `.`
/// when both share one), and a server host of the Gateway admits the VirtualService's namespace (its
/// `namespace/` part: `*`, that namespace, or `.` for the Gateway's own) and the name (`*`, the name
/// itself, or a `*.suffix` the name ends with).
pub(crate) fn binds(vs: &VirtualService, gw: &IstioGateway, vs_host: &str) -> bool {
    let (vs_ns, gw_ns) = (vs.meta.namespace.as_str(), gw.meta.namespace.as_str());
    let exported = vs.export_to.is_empty()
        || vs
            .export_to
            .iter()
            .any(|ns| ns == "*" || ns == gw_ns || (ns == "." && gw_ns == vs_ns));
    if !exported {
        return false;
    }
    gw.hosts.iter().any(|host| {
        let mut parts = host.split('/');
        let (namespace, host) = match (parts.next(), parts.next(), parts.next()) {
            (Some(host), None, None) => ("*", host),
            (Some(ns), Some(host), None) => (ns, host),
            _ => {
                tracing::debug!(gateway = %format_args!("{gw_ns}/{}", gw.meta.name), host, "invalid server host");
                return false;
            }
        };
        let namespace_admits = namespace == "*" || namespace == vs_ns || (namespace == "." && vs_ns == gw_ns);
        namespace_admits
            && (host == "*"
                || host == vs_host
                || host
                    .strip_prefix('*')
                    .is_some_and(|suffix| suffix.starts_with('.') && vs_host.ends_with(suffix)))
    })
}
