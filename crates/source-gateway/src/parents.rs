//! The parents routes attach to: Gateways (and ListenerSets), admitted, with their listeners and targets
//! prepared once per sync so each route only does lookups.

use std::collections::HashMap;
use std::sync::Arc;

use extdns_endpoint::Target;
use extdns_informer::ResourceKind;
use extdns_informer::view::{Gateway, Listener, ListenerSet, ParentReference, Route, RouteKind};

use crate::GatewaySourceConfig;
use crate::hostname::{Hostname, valid_target};
use crate::listener::{GATEWAY_GROUP, NamespaceCache, NamespaceRule, kind_allowed, protocol_matches};

pub const GATEWAY_KIND: &str = "Gateway";
pub const LISTENER_SET_KIND: &str = "ListenerSet";

/// A parent reference with its defaults filled in: group `gateway.networking.k8s.io`, kind `Gateway`,
/// namespace the route's own. An empty string counts as unset, as it does for the API server's defaulting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParentKey<'a> {
    pub group: &'a str,
    pub kind: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
}

impl<'a> ParentKey<'a> {
    pub fn of(r: &'a ParentReference, route_namespace: &'a str) -> ParentKey<'a> {
        fn or<'x>(v: &'x Option<String>, default: &'x str) -> &'x str {
            v.as_deref().filter(|s| !s.is_empty()).unwrap_or(default)
        }
        ParentKey {
            group: or(&r.group, GATEWAY_GROUP),
            kind: or(&r.kind, GATEWAY_KIND),
            namespace: or(&r.namespace, route_namespace),
            name: &r.name,
        }
    }
}

/// Whether a `status.parents[]` reference names one of the route's `spec.parentRefs`: a status entry the
/// route never asked for (left over by a controller, or written by hand) must not publish anything. Only
/// group, kind, namespace and name are compared; `sectionName` and `port` may legitimately differ.
pub fn in_spec(route: &Route, status_ref: &ParentReference) -> bool {
    let ns = route.meta.namespace.as_str();
    let wanted = ParentKey::of(status_ref, ns);
    route.parent_refs.iter().any(|r| ParentKey::of(r, ns) == wanted)
}

/// What a route learns from a listener once its namespace and kind are known to fit.
#[derive(Debug, Clone)]
pub enum ListenerHost {
    /// No hostname: any route name is served.
    Any,
    Name(Hostname),
    /// A hostname that is not valid: nothing matches it.
    Invalid,
}

/// A listener, prepared for one route kind.
#[derive(Debug)]
pub struct PreparedListener<'c> {
    pub name: &'c str,
    pub port: i32,
    pub host: ListenerHost,
    /// The protocol and `allowedRoutes.kinds` let this source's kind attach.
    pub usable: bool,
    pub namespaces: NamespaceRule,
    /// The namespace `allowedRoutes.namespaces.from: Same` compares with: the Gateway's, or the ListenerSet's.
    pub owner_namespace: &'c str,
}

impl<'c> PreparedListener<'c> {
    fn new(l: &'c Listener, kind: RouteKind, owner: &str, owner_namespace: &'c str, field: &str) -> Self {
        let field = format!("{field}[{}]", l.name);
        let usable = protocol_matches(kind, &l.protocol) && kind_allowed(l.allowed_routes.as_ref(), kind);
        let host = match l.hostname.as_deref().filter(|h| !h.is_empty()) {
            None => ListenerHost::Any,
            Some(h) => match Hostname::parse(h) {
                Ok(h) => ListenerHost::Name(h),
                Err(e) => {
                    tracing::warn!(object = owner, field = %format_args!("{field}.hostname"), value = h, "ignoring listener: hostname {e}");
                    ListenerHost::Invalid
                }
            },
        };
        // Only listeners a route could use need their namespace rule (and its warnings).
        let namespaces = if usable {
            NamespaceRule::for_routes(
                l.allowed_routes.as_ref(),
                owner,
                &format!("{field}.allowedRoutes.namespaces"),
            )
        } else {
            NamespaceRule::Nothing
        };
        PreparedListener {
            name: &l.name,
            port: l.port,
            host,
            usable,
            namespaces,
            owner_namespace,
        }
    }
}

/// An admitted parent: its listeners and the targets routes attached to it publish.
#[derive(Debug)]
pub struct Parent<'c> {
    pub listeners: Vec<PreparedListener<'c>>,
    /// Sorted and deduplicated, so a route on one parent can use the list as it is.
    pub targets: Arc<[Target]>,
}

/// The admitted Gateways and attached ListenerSets of one sync, by namespace and name.
#[derive(Debug, Default)]
pub struct Parents<'c> {
    gateways: HashMap<(&'c str, &'c str), Parent<'c>>,
    listener_sets: HashMap<(&'c str, &'c str), Parent<'c>>,
}

impl<'c> Parents<'c> {
    pub fn build(
        config: &GatewaySourceConfig,
        kind: RouteKind,
        gateways: &'c [Arc<Gateway>],
        listener_sets: &'c [Arc<ListenerSet>],
        namespaces: &mut NamespaceCache<'_>,
    ) -> Parents<'c> {
        let mut out = Parents::default();
        let mut admitted: HashMap<(&'c str, &'c str), &'c Gateway> = HashMap::new();
        for gw in gateways.iter().map(Arc::as_ref) {
            if !admits_gateway(config, gw) {
                continue;
            }
            let object = format!("Gateway {}/{}", gw.meta.namespace, gw.meta.name);
            let targets = gateway_targets(config, gw, &object);
            let listeners = gw
                .listeners
                .iter()
                .map(|l| PreparedListener::new(l, kind, &object, &gw.meta.namespace, "spec.listeners"))
                .collect();
            let key = (gw.meta.namespace.as_str(), gw.meta.name.as_str());
            admitted.insert(key, gw);
            out.gateways.insert(key, Parent { listeners, targets });
        }
        if !config.listener_sets {
            return out;
        }
        for ls in listener_sets.iter().map(Arc::as_ref) {
            let object = format!("ListenerSet {}/{}", ls.meta.namespace, ls.meta.name);
            let Some((gw, gw_parent)) = attached_gateway(config, ls, &admitted, &out.gateways, namespaces) else {
                continue;
            };
            // Its own target annotation, else whatever its Gateway publishes.
            let own = config.common.annotations.targets(&ls.meta.annotations);
            let targets = if own.is_empty() {
                gw_parent.targets.clone()
            } else {
                checked_targets(own, &object, Field::TargetAnnotation).into()
            };
            let listeners = ls
                .listeners
                .iter()
                .filter(|l| ls.accepted_listeners.contains(&l.name))
                .map(|l| PreparedListener::new(l, kind, &object, &ls.meta.namespace, "spec.listeners"))
                .collect();
            tracing::trace!(listener_set = %object, gateway = %gw.meta.name, "ListenerSet attached");
            out.listener_sets.insert(
                (ls.meta.namespace.as_str(), ls.meta.name.as_str()),
                Parent { listeners, targets },
            );
        }
        out
    }

    /// The admitted parent a (defaulted) reference names, if any.
    pub fn get<'a>(&'a self, key: &ParentKey<'a>) -> Option<&'a Parent<'a>> {
        if key.group != GATEWAY_GROUP {
            return None;
        }
        // Both maps are covariant: narrowing their lifetime lets a key borrowed from the route look them up.
        let map: &'a HashMap<(&'a str, &'a str), Parent<'a>> = match key.kind {
            GATEWAY_KIND => &self.gateways,
            LISTENER_SET_KIND => &self.listener_sets,
            _ => return None,
        };
        map.get(&(key.namespace, key.name))
    }
}

/// The Gateway-level filters: `--gateway-namespace`, `--gateway-name`, `--gateway-label-filter` and the
/// controller annotation. Route filters (`--label-filter`, `--annotation-filter`, `--namespace`) do not apply.
fn admits_gateway(config: &GatewaySourceConfig, gw: &Gateway) -> bool {
    let nonempty = |o: &Option<String>| o.as_deref().filter(|s| !s.is_empty()).map(str::to_string);
    if nonempty(&config.gateway_namespace).is_some_and(|ns| ns != gw.meta.namespace) {
        return false;
    }
    if nonempty(&config.gateway_name).is_some_and(|n| n != gw.meta.name) {
        return false;
    }
    // external-dns v0.23 (#6545) leaves such a Gateway out of its index: routes attached through it alone
    // publish nothing, so under `--policy=sync` their records are deleted.
    let admitted = config.gateway_label_filter.matches(&gw.meta.labels)
        && config.common.annotations.controller_allows(&gw.meta.annotations);
    if admitted {
        config
            .common
            .annotations
            .warn_conflicts(ResourceKind::Gateway, &gw.meta);
    }
    admitted
}

/// The Gateway a ListenerSet is attached to, if it is: the ListenerSet passes `--annotation-filter` and the
/// controller annotation, its parent Gateway is admitted and allows it (`allowedListeners`), and it is
/// Accepted.
fn attached_gateway<'c, 'p>(
    config: &GatewaySourceConfig,
    ls: &'c ListenerSet,
    admitted: &HashMap<(&'c str, &'c str), &'c Gateway>,
    parents: &'p HashMap<(&'c str, &'c str), Parent<'c>>,
    namespaces: &mut NamespaceCache<'_>,
) -> Option<(&'c Gateway, &'p Parent<'c>)> {
    let ann = &ls.meta.annotations;
    let annotations = &config.common.annotations;
    if !config
        .common
        .annotation_filter
        .matches_by(|key| annotations.filter_value(ann, key))
        || !annotations.controller_allows(ann)
    {
        return None;
    }
    annotations.warn_conflicts(ResourceKind::ListenerSet, &ls.meta);
    let gw_ns = ls
        .parent_ref
        .namespace
        .as_deref()
        .filter(|s| !s.is_empty())
        .unwrap_or(&ls.meta.namespace);
    let key = (gw_ns, ls.parent_ref.name.as_str());
    let gw = *admitted.get(&key)?;
    let parent = parents.get(&key)?;
    let object = format!("Gateway {}/{}", gw.meta.namespace, gw.meta.name);
    let rule = NamespaceRule::for_listener_sets(gw.allowed_listeners.as_ref(), &object);
    if !rule.allows(&ls.meta.namespace, &gw.meta.namespace, namespaces) || !ls.accepted {
        return None;
    }
    Some((gw, parent))
}

/// A Gateway's targets: its target annotation when it has one, else its `status.addresses`.
fn gateway_targets(config: &GatewaySourceConfig, gw: &Gateway, object: &str) -> Arc<[Target]> {
    let overrides = config.common.annotations.targets(&gw.meta.annotations);
    if !overrides.is_empty() {
        return checked_targets(overrides, object, Field::TargetAnnotation).into();
    }
    let addresses = gw.addresses.iter().map(|a| Target::from(a.as_str()));
    checked_targets(addresses, object, Field::StatusAddresses).into()
}

/// Where targets were read from, for the warning that skips a bad one.
#[derive(Clone, Copy)]
enum Field {
    TargetAnnotation,
    StatusAddresses,
}

/// The targets that are IP addresses or hostnames, sorted and deduplicated (the order records list them in);
/// each other one is a warning and is left out.
fn checked_targets(targets: impl IntoIterator<Item = Target>, object: &str, field: Field) -> Vec<Target> {
    let targets = targets.into_iter();
    let mut out = Vec::with_capacity(targets.size_hint().0);
    for (i, t) in targets.enumerate() {
        if valid_target(&t) {
            out.push(t);
        } else {
            let field = match field {
                Field::TargetAnnotation => "target annotation".to_string(),
                Field::StatusAddresses => format!("status.addresses[{i}].value"),
            };
            tracing::warn!(object, field, value = %t, "ignoring target: neither an IP address nor a hostname");
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use extdns_informer::view::Meta;

    fn pref(group: Option<&str>, kind: Option<&str>, ns: Option<&str>, name: &str) -> ParentReference {
        ParentReference {
            group: group.map(str::to_string),
            kind: kind.map(str::to_string),
            namespace: ns.map(str::to_string),
            name: name.into(),
            ..ParentReference::default()
        }
    }

    fn route(ns: &str, refs: Vec<ParentReference>) -> Route {
        Route {
            meta: Meta {
                name: "r".into(),
                namespace: ns.into(),
                ..Meta::default()
            },
            parent_refs: refs,
            ..Route::default()
        }
    }

    #[test]
    fn parent_ref_defaults_group_kind_and_namespace() {
        let r = pref(None, None, None, "gw");
        let k = ParentKey::of(&r, "apps");
        assert_eq!(
            k,
            ParentKey {
                group: GATEWAY_GROUP,
                kind: "Gateway",
                namespace: "apps",
                name: "gw"
            }
        );
        let empty = pref(Some(""), Some(""), Some(""), "gw");
        assert_eq!(ParentKey::of(&empty, "apps"), k);
    }

    #[test]
    fn status_parent_must_appear_in_spec_parent_refs() {
        let r = route("apps", vec![pref(None, None, None, "gw")]);
        assert!(in_spec(
            &r,
            &pref(Some(GATEWAY_GROUP), Some("Gateway"), Some("apps"), "gw")
        ));
        assert!(!in_spec(&r, &pref(None, None, None, "other")));
        assert!(!in_spec(&r, &pref(None, None, Some("infra"), "gw")));
        assert!(!in_spec(&r, &pref(None, Some("ListenerSet"), None, "gw")));
        assert!(!in_spec(&route("apps", vec![]), &pref(None, None, None, "gw")));
    }

    #[test]
    fn status_parent_matches_spec_regardless_of_section_name_and_port() {
        let mut spec = pref(None, None, Some("infra"), "gw");
        spec.section_name = Some("http".into());
        spec.port = Some(80);
        let r = route("apps", vec![spec]);
        let mut status = pref(None, None, Some("infra"), "gw");
        status.section_name = Some("https".into());
        status.port = Some(443);
        assert!(in_spec(&r, &status));
    }
}
