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
//! says when: then the live view lists the Pods of that selector once (`Inner::fetch_pods`, below), and holds the view
//! unsynced until it has them, so nothing is planned without them.

use std::any::Any;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use kube::Api;
use kube::Resource;
use kube::api::ListParams;
use tokio::task::AbortHandle;

use crate::kinds;
use crate::live::{ApiAccess, Decoded, Inner, warn_undecodable};
use crate::view::{Pod, Service};
use crate::{ObjectKey, ResourceKind, StrMap, Sym};

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

/// The Pod lists of new demand.
#[derive(Debug, Default)]
pub(crate) struct Fetches {
    pub(crate) next: u64,
    /// The lists in flight, each with the Pods (namespace, name) a watch event touched since it began: the
    /// event's state is at least as new as the list's, so the list leaves those alone.
    pub(crate) active: HashMap<u64, HashSet<(Sym, Box<str>)>>,
    /// Asked for while the Pods were (re-)listing; started once that list completes, since a Pod the list
    /// carried before the demand grew was dropped.
    pub(crate) deferred: Vec<(Sym, StrMap)>,
    pub(crate) tasks: Vec<AbortHandle>,
}

impl Inner {
    /// Whether the store keeps this view: every one, except Pods no Service reads when on demand. Until the
    /// Services are listed the demand is unknown and every Pod is kept, so that both lists run at once; the
    /// Pods nothing selects are dropped when the Services are in ([`Inner::listed`]).
    pub(crate) fn keeps(&self, view: &dyn Any, ns: &str) -> bool {
        match view.downcast_ref::<Pod>() {
            Some(pod) if self.opts.pods_on_demand && self.is_synced(ResourceKind::Service) => {
                self.demand().wants(ns, &pod.labels)
            }
            _ => true,
        }
    }

    /// Drops the stored Pods the demand does not select.
    fn prune_pods(&self) {
        let Some(pods) = self.store.index::<Pod>(ResourceKind::Pod) else {
            return;
        };
        let demand = self.demand();
        let dropped = pods.retain(|ns, pod| demand.wants(ns, &pod.labels));
        tracing::debug!(dropped, "dropped the Pods no Service reads");
    }

    /// After a Service event: brings the demand up to date and lists the Pods it newly selects.
    fn service_changed(self: &Arc<Self>, ns: &Sym, name: &str) {
        let svc = self.store.service(ns, name);
        let fetch = match svc {
            Some(svc) => self.demand().upsert(ns, &svc),
            None => {
                self.demand().remove(ns, name);
                None
            }
        };
        if let Some(selector) = fetch {
            self.fetch_pods(ns.clone(), selector);
        }
    }

    /// After a list of Services: the demand from scratch, and the Pods it newly selects. The first list
    /// fetches nothing: every Pod was kept until then, so the store drops the ones not selected instead.
    fn services_relisted(self: &Arc<Self>, first: bool) {
        let services = self.store.services();
        let interner = self.store.interner();
        let fetch = self
            .demand()
            .rebuild(services.iter().map(|s| (interner.intern(&s.meta.namespace), &**s)));
        if first {
            self.prune_pods();
            return;
        }
        for (ns, selector) in fetch {
            self.fetch_pods(ns, selector);
        }
    }

    /// Lists the Pods of `namespace` that `selector` selects into the store, holding the view unsynced until
    /// they are in; deferred while the Pods are (re-)listing.
    fn fetch_pods(self: &Arc<Self>, namespace: Sym, selector: StrMap) {
        let Some(ApiAccess { client, runtime }) = self.api.clone() else {
            // Detached: events are fed by hand, there is nothing to list from.
            return;
        };
        let relisting = self
            .store
            .index::<Pod>(ResourceKind::Pod)
            .is_some_and(|pods| pods.is_relisting());
        if !self.is_synced(ResourceKind::Pod) || relisting {
            self.fetches().deferred.push((namespace, selector));
            return;
        }
        let id = {
            let mut fetches = self.fetches();
            fetches.next += 1;
            let id = fetches.next;
            fetches.active.insert(id, HashSet::new());
            id
        };
        let mut labels = selector_string(&selector);
        if let Some(configured) = self
            .opts
            .label_selectors
            .get(&ResourceKind::Pod)
            .filter(|s| !s.is_empty())
        {
            labels = if labels.is_empty() {
                configured.clone()
            } else {
                format!("{labels},{configured}")
            };
        }
        let inner = Arc::clone(self);
        let task = runtime.spawn(async move {
            let spec = ResourceKind::Pod.spec();
            let api: Api<Decoded<k8s_openapi::api::core::v1::Pod>> =
                Api::namespaced_with(client, &namespace, &spec.api_resource(spec.preferred_version()));
            let pods = list_all(&api, &labels).await;
            inner.apply_fetched(id, pods);
        });
        let mut fetches = self.fetches();
        fetches.tasks.retain(|t| !t.is_finished());
        fetches.tasks.push(task.abort_handle());
    }

    /// Stores the Pods a fetch listed, except those a watch event touched meanwhile, and lets the view sync.
    fn apply_fetched(&self, id: u64, pods: Vec<Decoded<k8s_openapi::api::core::v1::Pod>>) {
        let touched = self.fetches().active.remove(&id).unwrap_or_default();
        let store = &*self.store;
        let Some(index) = store.index::<Pod>(ResourceKind::Pod) else {
            return;
        };
        let mut stored = 0usize;
        for pod in pods {
            let meta = pod.meta();
            let ns = store.interner().intern(meta.namespace.as_deref().unwrap_or_default());
            let name: Box<str> = meta.name.as_deref().unwrap_or_default().into();
            if touched.contains(&(ns.clone(), name.clone())) {
                continue;
            }
            let changed = match pod {
                Decoded::Object(o) => {
                    let view = kinds::convert(&o, &self.convert());
                    self.keeps(&view, &ns) && index.upsert(ns.clone(), view)
                }
                Decoded::Undecodable { meta, error } => {
                    warn_undecodable(ResourceKind::Pod, &meta, &error);
                    index.mark_undecodable(ns.clone(), &name)
                }
            };
            if changed {
                stored += 1;
                self.pending_changes()
                    .insert(ObjectKey::new(ResourceKind::Pod, &ns, &name));
            }
        }
        tracing::debug!(stored, "listed the Pods of a new selector");
        self.bump();
    }

    /// The kind a list of new demand is in flight for, if any: it reads unsynced meanwhile.
    pub(crate) fn demand_listing(&self) -> Option<ResourceKind> {
        (!self.fetches().active.is_empty()).then_some(ResourceKind::Pod)
    }

    /// A list of `kind` starts: a list of Pods keeps the Pods of the demand so far, so the fetches asked for
    /// meanwhile wait for it.
    pub(crate) fn demand_relisting(&self, kind: ResourceKind) {
        if kind == ResourceKind::Pod {
            self.fetches().deferred.clear();
        }
    }

    /// An event touched the object `ns/name` of `kind` (`changed`: its view changed): a Pod's state is then
    /// at least as new as any list in flight, and a Service's demand may have changed.
    pub(crate) fn demand_touched(self: &Arc<Self>, kind: ResourceKind, ns: &Sym, name: &str, changed: bool) {
        if kind == ResourceKind::Pod {
            let mut fetches = self.fetches();
            for seen in fetches.active.values_mut() {
                seen.insert((ns.clone(), name.into()));
            }
        }
        if changed && kind == ResourceKind::Service && self.opts.pods_on_demand {
            self.service_changed(ns, name);
        }
    }

    /// After a complete list of `kind` (`first`: its first one): the demand follows a list of Services; a list
    /// of Pods drops what the demand does not select (Pods listed before the Services were all kept) and
    /// starts the fetches deferred during it.
    pub(crate) fn listed(self: &Arc<Self>, kind: ResourceKind, first: bool) {
        if !self.opts.pods_on_demand {
            return;
        }
        match kind {
            ResourceKind::Service => self.services_relisted(first),
            ResourceKind::Pod => {
                if self.is_synced(ResourceKind::Service) {
                    self.prune_pods();
                }
                let deferred = std::mem::take(&mut self.fetches().deferred);
                for (ns, selector) in deferred {
                    self.fetch_pods(ns, selector);
                }
            }
            _ => {}
        }
    }
}

/// Every Pod `labels` selects (pages of 500, as the watchers list), retried with backoff until the list
/// succeeds: the view stays unsynced meanwhile, which is the safe side.
async fn list_all(
    api: &Api<Decoded<k8s_openapi::api::core::v1::Pod>>,
    labels: &str,
) -> Vec<Decoded<k8s_openapi::api::core::v1::Pod>> {
    let mut delay = Duration::from_secs(1);
    loop {
        match list_pages(api, labels).await {
            Ok(items) => return items,
            Err(e) => {
                tracing::warn!(error = %e, selector = labels, retry_in = ?delay,
                    "listing the Pods a Service newly selects failed");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(30));
            }
        }
    }
}

async fn list_pages(
    api: &Api<Decoded<k8s_openapi::api::core::v1::Pod>>,
    labels: &str,
) -> Result<Vec<Decoded<k8s_openapi::api::core::v1::Pod>>, kube::Error> {
    let mut params = ListParams::default().limit(500);
    if !labels.is_empty() {
        params = params.labels(labels);
    }
    let mut items = Vec::new();
    loop {
        let page = api.list(&params).await?;
        items.extend(page.items);
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(items),
        }
    }
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
