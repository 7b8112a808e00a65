//! Which Pods the live view keeps.
//!
//! Sources read a Pod for two kinds of Service only: a headless Service (the Pods its EndpointSlices name,
//! which must also match its selector) and a NodePort Service with `externalTrafficPolicy: Local` (the Pods
//! its selector matches, for their nodes). Every other Pod is never read, and in most clusters that is
//! nearly all of them: at 50,000 Pods the store spent 10 MiB on Pods nothing looked at. So the live view
//! keeps a Pod only while one of those Services in its namespace selects it (an empty selector selects the
//! whole namespace, as Kubernetes reads it), and drops the others as they arrive.
//!
//! The demand is known once the Services are listed; until then the live view keeps every Pod, so that both
//! lists run at once, and drops the unselected ones when the Services are in. The cost is that a Pod dropped
//! earlier may be needed later, when such a Service appears or changes its selector. [`PodDemand::upsert`]
//! says when: then the live view lists the Pods of that selector once (`crate::live`), and holds the view
//! unsynced until it has them, so nothing is planned without them.

use std::collections::{BTreeMap, HashMap};

use crate::view::Service;
use crate::{StrMap, Sym};

/// The selectors of the Services that read Pods, by namespace.
#[derive(Debug, Default)]
pub(crate) struct PodDemand {
    by_ns: HashMap<Sym, BTreeMap<Box<str>, StrMap>>,
}

/// Whether sources read the Pods of this Service (see the module documentation).
pub(crate) fn reads_pods(svc: &Service) -> bool {
    match svc.service_type.as_str() {
        "ClusterIP" => svc.is_headless(),
        "NodePort" => svc.external_traffic_policy.as_deref() == Some("Local"),
        _ => false,
    }
}

/// Every label the selector asks for is on the Pod; an empty selector selects every Pod.
fn selects(selector: &StrMap, labels: &StrMap) -> bool {
    selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

impl PodDemand {
    /// Whether some Service that reads Pods selects a Pod with these labels in `namespace`.
    pub(crate) fn wants(&self, namespace: &str, labels: &StrMap) -> bool {
        self.by_ns
            .get(namespace)
            .is_some_and(|services| services.values().any(|s| selects(s, labels)))
    }

    /// Records a stored Service (new or changed). Returns its selector when it now selects Pods no other
    /// Service's demand covered, so the caller must fetch them.
    pub(crate) fn upsert(&mut self, namespace: &Sym, svc: &Service) -> Option<StrMap> {
        let name = svc.meta.name.as_str();
        if !reads_pods(svc) {
            self.remove(namespace, name);
            return None;
        }
        let services = self.by_ns.entry(namespace.clone()).or_default();
        if services.get(name) == Some(&svc.selector) {
            return None;
        }
        // A Pod that this selector selects is already kept when another selector asks for a subset of its
        // labels (the empty selector included).
        let covered = services
            .iter()
            .any(|(other, s)| &**other != name && s.iter().all(|(k, v)| svc.selector.get(k) == Some(v)));
        services.insert(name.into(), svc.selector.clone());
        (!covered).then(|| svc.selector.clone())
    }

    /// Forgets a Service. Pods kept for it stay until their next event: keeping a Pod too many is safe.
    pub(crate) fn remove(&mut self, namespace: &str, name: &str) {
        if let Some(services) = self.by_ns.get_mut(namespace) {
            services.remove(name);
            if services.is_empty() {
                self.by_ns.remove(namespace);
            }
        }
    }

    /// Rebuilds from every stored Service (after a re-list of Services). Returns the selectors to fetch:
    /// those the demand before did not cover.
    pub(crate) fn rebuild<'a>(&mut self, services: impl Iterator<Item = (Sym, &'a Service)>) -> Vec<(Sym, StrMap)> {
        let before = std::mem::take(&mut self.by_ns);
        for (ns, svc) in services.filter(|(_, s)| reads_pods(s)) {
            self.by_ns
                .entry(ns)
                .or_default()
                .insert(svc.meta.name.as_str().into(), svc.selector.clone());
        }
        let mut fetch = Vec::new();
        for (ns, services) in &self.by_ns {
            for selector in services.values() {
                let covered = before
                    .get(ns)
                    .is_some_and(|old| old.values().any(|s| s.iter().all(|(k, v)| selector.get(k) == Some(v))));
                if !covered && !fetch.iter().any(|(n, s)| n == ns && s == selector) {
                    fetch.push((ns.clone(), selector.clone()));
                }
            }
        }
        fetch
    }
}

/// The selector in the Kubernetes string syntax (`a=b,c=d`); empty for the empty selector. Label keys and
/// values cannot hold `,` or `=`, so joining needs no quoting.
pub(crate) fn selector_string(selector: &StrMap) -> String {
    selector
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::Meta;

    fn map(pairs: &[(&str, &str)]) -> StrMap {
        pairs.iter().copied().collect()
    }

    fn svc(name: &str, service_type: &str, headless: bool, selector: &[(&str, &str)]) -> Service {
        Service {
            meta: Meta {
                name: name.into(),
                namespace: "ns".into(),
                ..Meta::default()
            },
            service_type: service_type.into(),
            cluster_ip: Some(if headless { "None" } else { "10.0.0.1" }.into()),
            selector: map(selector),
            ..Service::default()
        }
    }

    fn local_node_port(name: &str, selector: &[(&str, &str)]) -> Service {
        Service {
            external_traffic_policy: Some("Local".into()),
            ..svc(name, "NodePort", false, selector)
        }
    }

    #[test]
    fn only_headless_and_local_node_port_services_read_pods() {
        assert!(reads_pods(&svc("a", "ClusterIP", true, &[])));
        assert!(reads_pods(&local_node_port("a", &[])));
        assert!(!reads_pods(&svc("a", "ClusterIP", false, &[])));
        assert!(!reads_pods(&svc("a", "NodePort", false, &[])));
        assert!(!reads_pods(&svc("a", "LoadBalancer", false, &[])));
    }

    #[test]
    fn a_pod_is_wanted_when_a_reading_service_of_its_namespace_selects_it() {
        let mut d = PodDemand::default();
        let ns = Sym::new("ns");
        assert_eq!(d.upsert(&ns, &svc("lb", "LoadBalancer", false, &[("app", "x")])), None);
        assert!(!d.wants("ns", &map(&[("app", "x")])), "a LoadBalancer reads no Pods");
        assert_eq!(
            d.upsert(&ns, &svc("db", "ClusterIP", true, &[("app", "db")])),
            Some(map(&[("app", "db")]))
        );
        assert!(d.wants("ns", &map(&[("app", "db"), ("tier", "x")])));
        assert!(!d.wants("ns", &map(&[("app", "web")])));
        assert!(!d.wants("other", &map(&[("app", "db")])), "namespaces are apart");
        d.remove("ns", "db");
        assert!(!d.wants("ns", &map(&[("app", "db")])));
    }

    #[test]
    fn a_fetch_is_needed_only_for_pods_no_other_selector_covers() {
        let mut d = PodDemand::default();
        let ns = Sym::new("ns");
        let db = svc("db", "ClusterIP", true, &[("app", "db")]);
        assert!(d.upsert(&ns, &db).is_some());
        assert_eq!(d.upsert(&ns, &db), None, "unchanged");
        assert_eq!(
            d.upsert(&ns, &svc("db-0", "ClusterIP", true, &[("app", "db"), ("index", "0")])),
            None,
            "a narrower selector's Pods are kept already"
        );
        assert!(
            d.upsert(&ns, &local_node_port("web", &[("app", "web")])).is_some(),
            "a selector of its own"
        );
        assert_eq!(
            d.upsert(&ns, &svc("db", "ClusterIP", true, &[("app", "db2")])),
            Some(map(&[("app", "db2")])),
            "a changed selector"
        );
        assert!(
            d.upsert(&ns, &svc("all", "ClusterIP", true, &[])).is_some(),
            "the empty selector selects the namespace"
        );
        assert!(d.wants("ns", &map(&[])));
        assert_eq!(d.upsert(&ns, &local_node_port("any", &[("x", "y")])), None);
    }

    #[test]
    fn a_service_that_stops_reading_pods_is_forgotten() {
        let mut d = PodDemand::default();
        let ns = Sym::new("ns");
        d.upsert(&ns, &svc("db", "ClusterIP", true, &[("app", "db")]));
        assert_eq!(d.upsert(&ns, &svc("db", "ClusterIP", false, &[("app", "db")])), None);
        assert!(!d.wants("ns", &map(&[("app", "db")])));
    }

    #[test]
    fn a_rebuild_fetches_what_the_demand_before_did_not_cover() {
        let mut d = PodDemand::default();
        let ns = Sym::new("ns");
        d.upsert(&ns, &svc("db", "ClusterIP", true, &[("app", "db")]));
        let (db, web) = (
            svc("db", "ClusterIP", true, &[("app", "db")]),
            local_node_port("web", &[("app", "web")]),
        );
        let fetch = d.rebuild([(ns.clone(), &db), (ns.clone(), &web)].into_iter());
        assert_eq!(fetch, vec![(ns.clone(), map(&[("app", "web")]))]);
        assert!(d.wants("ns", &map(&[("app", "web")])) && d.wants("ns", &map(&[("app", "db")])));
        assert!(d.rebuild(std::iter::empty()).is_empty());
        assert!(!d.wants("ns", &map(&[("app", "db")])));
    }

    #[test]
    fn selectors_print_in_the_kubernetes_syntax() {
        assert_eq!(selector_string(&map(&[("b", "2"), ("a", "1")])), "a=1,b=2");
        assert_eq!(selector_string(&map(&[])), "");
    }
}
