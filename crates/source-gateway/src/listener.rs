//! Which listeners a route may use: the protocol table, `allowedRoutes` (namespaces and kinds) and, for
//! ListenerSets, the Gateway's `allowedListeners`.

use std::collections::HashMap;

use extdns_informer::view::{AllowedListeners, AllowedRoutes, LabelSelector, Namespace, RouteKind};
use extdns_informer::{ClusterStore, StrMap};
use extdns_source::Selector;

/// The API group of every Gateway API kind extdns reads; also the default of an unset `group`.
pub const GATEWAY_GROUP: &str = "gateway.networking.k8s.io";

/// Whether a route of `kind` can attach to a listener speaking `protocol` (the Gateway API's protocol table, plus TCPRoute on
/// TLS listeners: a TLS listener in passthrough mode forwards plain TCP streams).
pub fn protocol_matches(kind: RouteKind, protocol: &str) -> bool {
    match kind {
        RouteKind::Http | RouteKind::Grpc => matches!(protocol, "HTTP" | "HTTPS"),
        RouteKind::Tls => protocol == "TLS",
        RouteKind::Tcp => matches!(protocol, "TCP" | "TLS"),
        RouteKind::Udp => protocol == "UDP",
    }
}

/// Whether `allowedRoutes.kinds` admits `kind`: an empty list admits every kind the protocol allows; else
/// one entry must name the kind, in the Gateway API group (an unset or empty group means that group).
pub fn kind_allowed(allowed: Option<&AllowedRoutes>, kind: RouteKind) -> bool {
    let Some(allowed) = allowed else { return true };
    allowed.kinds.is_empty()
        || allowed.kinds.iter().any(|k| {
            k.kind == kind.kind()
                && k.group.as_deref().filter(|g| !g.is_empty()).unwrap_or(GATEWAY_GROUP) == GATEWAY_GROUP
        })
}

/// Which namespaces may attach: `allowedRoutes.namespaces` of a listener, or `allowedListeners.namespaces` of
/// a Gateway, compiled once per sync.
#[derive(Debug, Clone)]
pub enum NamespaceRule {
    All,
    Same,
    Selector(Selector),
    /// `None`, an unknown `from`, or a selector that is missing or malformed: nothing may attach.
    Nothing,
}

impl NamespaceRule {
    /// `allowedRoutes.namespaces` of a listener; `from` defaults to `Same`. `object` and `field` name the
    /// listener in the warning a malformed rule gives.
    pub fn for_routes(allowed: Option<&AllowedRoutes>, object: &str, field: &str) -> NamespaceRule {
        let (from, selector) = match allowed {
            Some(a) => (a.namespaces_from.as_deref(), a.namespaces_selector.as_ref()),
            None => (None, None),
        };
        Self::compile(from.unwrap_or("Same"), selector, object, field, false)
    }

    /// `allowedListeners.namespaces` of a Gateway; `from` defaults to `None` (no ListenerSet may attach).
    pub fn for_listener_sets(allowed: Option<&AllowedListeners>, object: &str) -> NamespaceRule {
        let (from, selector) = match allowed {
            Some(a) => (a.namespaces_from.as_deref(), a.namespaces_selector.as_ref()),
            None => (None, None),
        };
        Self::compile(
            from.unwrap_or("None"),
            selector,
            object,
            "spec.allowedListeners.namespaces",
            true,
        )
    }

    fn compile(
        from: &str,
        selector: Option<&LabelSelector>,
        object: &str,
        field: &str,
        none_allowed: bool,
    ) -> NamespaceRule {
        match from {
            "All" => NamespaceRule::All,
            "Same" => NamespaceRule::Same,
            "None" if none_allowed => NamespaceRule::Nothing,
            "Selector" => match selector.map(Selector::from_label_selector) {
                Some(Ok(s)) => NamespaceRule::Selector(s),
                Some(Err(e)) => {
                    tracing::warn!(object, field = %format_args!("{field}.selector"), "ignoring malformed selector: {e}; nothing can attach");
                    NamespaceRule::Nothing
                }
                None => {
                    tracing::warn!(object, field = %format_args!("{field}.selector"), "from is Selector but no selector is set; nothing can attach");
                    NamespaceRule::Nothing
                }
            },
            other => {
                tracing::warn!(object, field = %format_args!("{field}.from"), value = other, "unknown value; nothing can attach");
                NamespaceRule::Nothing
            }
        }
    }

    /// Whether an object in `namespace` may attach to something owned by an object in `owner_namespace`.
    pub fn allows(&self, namespace: &str, owner_namespace: &str, namespaces: &mut NamespaceCache<'_>) -> bool {
        match self {
            NamespaceRule::All => true,
            NamespaceRule::Same => namespace == owner_namespace,
            NamespaceRule::Selector(s) => namespaces.labels(namespace).is_some_and(|l| s.matches(l)),
            NamespaceRule::Nothing => false,
        }
    }
}

/// The label the API server puts on every Namespace (Kubernetes 1.21 and later), naming it. Selectors often
/// use it to pick namespaces by name.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// The labels of Namespace objects, looked up once per sync: selectors of many listeners ask about the same
/// few namespaces.
pub struct NamespaceCache<'c> {
    cluster: &'c ClusterStore,
    seen: HashMap<String, Option<StrMap>>,
}

impl<'c> NamespaceCache<'c> {
    pub fn new(cluster: &'c ClusterStore) -> Self {
        NamespaceCache {
            cluster,
            seen: HashMap::new(),
        }
    }

    /// The labels of the Namespace `name`, with `kubernetes.io/metadata.name` filled in when the object (say,
    /// one from a manifest file) lacks it; `None` when there is no such Namespace.
    pub fn labels(&mut self, name: &str) -> Option<&StrMap> {
        if !self.seen.contains_key(name) {
            let labels = self.cluster.namespace(name).map(|ns| with_name_label(&ns));
            if labels.is_none() {
                tracing::warn!(
                    namespace = name,
                    "Namespace not found: namespace selectors (allowedRoutes, allowedListeners) cannot match objects in it"
                );
            }
            self.seen.insert(name.to_string(), labels);
        }
        self.seen.get(name).and_then(Option::as_ref)
    }
}

fn with_name_label(ns: &Namespace) -> StrMap {
    if ns.labels.contains_key(NAMESPACE_NAME_LABEL) {
        return ns.labels.clone();
    }
    ns.labels
        .iter()
        .chain([(NAMESPACE_NAME_LABEL, ns.name.as_str())])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use extdns_informer::ClusterStore;
    use extdns_informer::view::{LabelSelectorRequirement, RouteGroupKind};

    fn routes(from: Option<&str>, selector: Option<LabelSelector>, kinds: Vec<RouteGroupKind>) -> AllowedRoutes {
        AllowedRoutes {
            namespaces_from: from.map(str::to_string),
            namespaces_selector: selector,
            kinds,
        }
    }

    fn cluster() -> ClusterStore {
        let mut c = ClusterStore::new();
        c.add(Namespace {
            name: "team-a".into(),
            labels: [("team", "a")].into_iter().collect(),
        });
        c.add(Namespace {
            name: "team-b".into(),
            labels: [("team", "b")].into_iter().collect(),
        });
        c
    }

    fn team(value: &str) -> LabelSelector {
        LabelSelector {
            match_labels: vec![("team".into(), value.into())],
            match_expressions: vec![],
        }
    }

    #[test]
    fn protocol_table_http_and_grpc_routes_use_http_and_https_listeners() {
        for kind in [RouteKind::Http, RouteKind::Grpc] {
            assert!(protocol_matches(kind, "HTTP"));
            assert!(protocol_matches(kind, "HTTPS"));
            for p in ["TLS", "TCP", "UDP", "http", ""] {
                assert!(!protocol_matches(kind, p), "{kind:?} {p}");
            }
        }
    }

    #[test]
    fn protocol_table_tls_route_uses_tls_listeners_only() {
        assert!(protocol_matches(RouteKind::Tls, "TLS"));
        for p in ["HTTP", "HTTPS", "TCP", "UDP"] {
            assert!(!protocol_matches(RouteKind::Tls, p), "{p}");
        }
    }

    #[test]
    fn protocol_table_tcp_route_uses_tcp_and_tls_listeners() {
        assert!(protocol_matches(RouteKind::Tcp, "TCP"));
        assert!(protocol_matches(RouteKind::Tcp, "TLS"));
        for p in ["HTTP", "HTTPS", "UDP"] {
            assert!(!protocol_matches(RouteKind::Tcp, p), "{p}");
        }
    }

    #[test]
    fn protocol_table_udp_route_uses_udp_listeners_only() {
        assert!(protocol_matches(RouteKind::Udp, "UDP"));
        for p in ["HTTP", "HTTPS", "TCP", "TLS"] {
            assert!(!protocol_matches(RouteKind::Udp, p), "{p}");
        }
    }

    #[test]
    fn allowed_routes_namespaces_default_to_same() {
        let c = cluster();
        let mut nss = NamespaceCache::new(&c);
        for allowed in [None, Some(routes(None, None, vec![]))] {
            let rule =
                NamespaceRule::for_routes(allowed.as_ref(), "Gateway gw/gw", "spec.listeners[http].allowedRoutes");
            assert!(rule.allows("team-a", "team-a", &mut nss));
            assert!(!rule.allows("team-b", "team-a", &mut nss));
        }
    }

    #[test]
    fn allowed_routes_namespaces_from_all_admits_every_namespace() {
        let c = cluster();
        let mut nss = NamespaceCache::new(&c);
        let rule = NamespaceRule::for_routes(Some(&routes(Some("All"), None, vec![])), "g", "f");
        assert!(rule.allows("team-b", "infra", &mut nss));
        assert!(rule.allows("no-such-namespace", "infra", &mut nss));
    }

    #[test]
    fn allowed_routes_namespaces_from_selector_uses_namespace_labels() {
        let c = cluster();
        let mut nss = NamespaceCache::new(&c);
        let rule = NamespaceRule::for_routes(Some(&routes(Some("Selector"), Some(team("a")), vec![])), "g", "f");
        assert!(rule.allows("team-a", "infra", &mut nss));
        assert!(!rule.allows("team-b", "infra", &mut nss));
        // The Namespace object is unknown: its labels cannot match.
        assert!(!rule.allows("ghost", "infra", &mut nss));
    }

    #[test]
    fn allowed_routes_selector_sees_the_namespace_name_label() {
        let c = cluster();
        let mut nss = NamespaceCache::new(&c);
        let sel = LabelSelector {
            match_labels: vec![(NAMESPACE_NAME_LABEL.into(), "team-b".into())],
            match_expressions: vec![],
        };
        let rule = NamespaceRule::for_routes(Some(&routes(Some("Selector"), Some(sel), vec![])), "g", "f");
        assert!(rule.allows("team-b", "infra", &mut nss));
        assert!(!rule.allows("team-a", "infra", &mut nss));
    }

    #[test]
    fn allowed_routes_selector_with_expressions() {
        let c = cluster();
        let mut nss = NamespaceCache::new(&c);
        let sel = LabelSelector {
            match_labels: vec![],
            match_expressions: vec![LabelSelectorRequirement {
                key: "team".into(),
                operator: "NotIn".into(),
                values: vec!["a".into()],
            }],
        };
        let rule = NamespaceRule::for_routes(Some(&routes(Some("Selector"), Some(sel), vec![])), "g", "f");
        assert!(!rule.allows("team-a", "infra", &mut nss));
        assert!(rule.allows("team-b", "infra", &mut nss));
    }

    #[test]
    fn allowed_routes_empty_selector_matches_every_existing_namespace() {
        let c = cluster();
        let mut nss = NamespaceCache::new(&c);
        let rule = NamespaceRule::for_routes(
            Some(&routes(Some("Selector"), Some(LabelSelector::default()), vec![])),
            "g",
            "f",
        );
        assert!(rule.allows("team-a", "infra", &mut nss));
        assert!(!rule.allows("ghost", "infra", &mut nss));
    }

    #[test]
    fn allowed_routes_malformed_or_missing_selector_admits_nothing() {
        let c = cluster();
        let mut nss = NamespaceCache::new(&c);
        let bad = LabelSelector {
            match_labels: vec![],
            match_expressions: vec![LabelSelectorRequirement {
                key: "team".into(),
                operator: "Like".into(),
                values: vec!["a".into()],
            }],
        };
        let malformed = NamespaceRule::for_routes(Some(&routes(Some("Selector"), Some(bad), vec![])), "g", "f");
        assert!(!malformed.allows("team-a", "team-a", &mut nss));
        let missing = NamespaceRule::for_routes(Some(&routes(Some("Selector"), None, vec![])), "g", "f");
        assert!(!missing.allows("team-a", "team-a", &mut nss));
    }

    #[test]
    fn allowed_routes_unknown_from_admits_nothing() {
        let c = cluster();
        let mut nss = NamespaceCache::new(&c);
        for from in ["Elsewhere", "None", "all"] {
            let rule = NamespaceRule::for_routes(Some(&routes(Some(from), None, vec![])), "g", "f");
            assert!(!rule.allows("team-a", "team-a", &mut nss), "{from}");
        }
    }

    #[test]
    fn allowed_routes_kinds_must_name_the_route_kind() {
        let k = |group: Option<&str>, kind: &str| RouteGroupKind {
            group: group.map(str::to_string),
            kind: kind.into(),
        };
        assert!(kind_allowed(None, RouteKind::Http));
        assert!(kind_allowed(Some(&routes(None, None, vec![])), RouteKind::Tcp));
        let grpc_only = routes(None, None, vec![k(None, "GRPCRoute")]);
        assert!(kind_allowed(Some(&grpc_only), RouteKind::Grpc));
        assert!(!kind_allowed(Some(&grpc_only), RouteKind::Http));
        let explicit = routes(
            None,
            None,
            vec![k(Some(GATEWAY_GROUP), "HTTPRoute"), k(Some(""), "TLSRoute")],
        );
        assert!(kind_allowed(Some(&explicit), RouteKind::Http));
        assert!(kind_allowed(Some(&explicit), RouteKind::Tls));
        let other_group = routes(None, None, vec![k(Some("example.com"), "HTTPRoute")]);
        assert!(!kind_allowed(Some(&other_group), RouteKind::Http));
    }

    #[test]
    fn allowed_listeners_default_to_none() {
        let c = cluster();
        let mut nss = NamespaceCache::new(&c);
        let rule = NamespaceRule::for_listener_sets(None, "Gateway team-a/gw");
        assert!(!rule.allows("team-a", "team-a", &mut nss));
        let none = AllowedListeners {
            namespaces_from: Some("None".into()),
            namespaces_selector: None,
        };
        assert!(!NamespaceRule::for_listener_sets(Some(&none), "g").allows("team-a", "team-a", &mut nss));
    }

    #[test]
    fn allowed_listeners_from_all_same_and_selector() {
        let c = cluster();
        let mut nss = NamespaceCache::new(&c);
        let rule = |from: &str, sel: Option<LabelSelector>| {
            NamespaceRule::for_listener_sets(
                Some(&AllowedListeners {
                    namespaces_from: Some(from.into()),
                    namespaces_selector: sel,
                }),
                "g",
            )
        };
        assert!(rule("All", None).allows("team-b", "team-a", &mut nss));
        assert!(rule("Same", None).allows("team-a", "team-a", &mut nss));
        assert!(!rule("Same", None).allows("team-b", "team-a", &mut nss));
        assert!(rule("Selector", Some(team("b"))).allows("team-b", "team-a", &mut nss));
        assert!(!rule("Selector", Some(team("b"))).allows("team-a", "team-a", &mut nss));
    }
}
