//! Which objects of a kind the live view keeps when the kind table says it is kept only while selected
//! ([`crate::kinds::KindSpec::kept_while_selected_by`]): Pods, selected by Services.
//!
//! Sources read a Pod for two kinds of Service only: a headless Service (the Pods its EndpointSlices name,
//! which must also match its selector) and a NodePort Service with `externalTrafficPolicy: Local` (the Pods
//! its selector matches, for their nodes); the selecting view says which of its objects read the kept kind
//! ([`crate::store::Item::selects`]). Every other Pod is never read, and in most clusters that is
//! nearly all of them: at 50,000 Pods the store spent 10 MiB on Pods nothing looked at. So the live view
//! keeps a Pod only while one of those Services in its namespace selects it (an empty selector selects the
//! whole namespace, as Kubernetes reads it), and drops the others as they arrive.
//!
//! The demand is known once the Services are listed; until then the live view keeps every Pod, so that both
//! lists run at once, and drops the unselected ones when the Services are in. The cost is that a Pod dropped
//! earlier may be needed later, when such a Service appears or changes its selector. [`PodDemand::upsert`]
//! says when: then the live view lists the Pods of that selector once (`Inner::fetch_selected`, below), and
//! holds the view unsynced until it has them, so nothing is planned without them.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use kube::Api;
use kube::Resource;
use kube::api::ListParams;
use tokio::task::AbortHandle;

use crate::kinds::{self, Demand, Watched};
use crate::live::{ApiAccess, Decoded, Inner, warn_undecodable};
use crate::store::Item;
use crate::{ObjectKey, ResourceKind, StrMap, Sym};

/// The selectors of the selecting objects that read the kept kind, by namespace.
#[derive(Debug, Default)]
pub(crate) struct PodDemand {
    by_ns: HashMap<Sym, BTreeMap<Box<str>, StrMap>>,
}

/// Every label the selector asks for is on the object; an empty selector selects every object.
fn selects(selector: &StrMap, labels: &StrMap) -> bool {
    selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

impl PodDemand {
    /// Whether some selecting object of `namespace` selects an object with these labels.
    pub(crate) fn wants(&self, namespace: &str, labels: &StrMap) -> bool {
        self.by_ns
            .get(namespace)
            .is_some_and(|selectors| selectors.values().any(|s| selects(s, labels)))
    }

    /// Records a stored selecting object (new or changed) and its selector (`None`: it reads none). Returns
    /// the selector when it now selects objects no other selector covered, so the caller must fetch them.
    pub(crate) fn upsert(&mut self, namespace: &Sym, name: &str, selector: Option<&StrMap>) -> Option<StrMap> {
        let Some(selector) = selector else {
            self.remove(namespace, name);
            return None;
        };
        let selectors = self.by_ns.entry(namespace.clone()).or_default();
        if selectors.get(name) == Some(selector) {
            return None;
        }
        // An object this selector selects is already kept when another selector asks for a subset of its
        // labels (the empty selector included).
        let covered = selectors
            .iter()
            .any(|(other, s)| &**other != name && s.iter().all(|(k, v)| selector.get(k) == Some(v)));
        selectors.insert(name.into(), selector.clone());
        (!covered).then(|| selector.clone())
    }

    /// Forgets a selecting object. Objects kept for it stay until their next event: keeping one too many is
    /// safe.
    pub(crate) fn remove(&mut self, namespace: &str, name: &str) {
        if let Some(selectors) = self.by_ns.get_mut(namespace) {
            selectors.remove(name);
            if selectors.is_empty() {
                self.by_ns.remove(namespace);
            }
        }
    }

    /// Rebuilds from every stored selecting object's (namespace, name, selector) (after a re-list of them).
    /// Returns the selectors to fetch: those the demand before did not cover.
    pub(crate) fn rebuild(&mut self, selecting: impl Iterator<Item = (Sym, Box<str>, StrMap)>) -> Vec<(Sym, StrMap)> {
        let before = std::mem::take(&mut self.by_ns);
        for (ns, name, selector) in selecting {
            self.by_ns.entry(ns).or_default().insert(name, selector);
        }
        let mut fetch = Vec::new();
        for (ns, selectors) in &self.by_ns {
            for selector in selectors.values() {
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

/// The lists of new demand.
#[derive(Debug, Default)]
pub(crate) struct Fetches {
    pub(crate) next: u64,
    /// The lists in flight, each with the objects (namespace, name) a watch event touched since it began:
    /// the event's state is at least as new as the list's, so the list leaves those alone.
    pub(crate) active: HashMap<u64, HashSet<(Sym, Box<str>)>>,
    /// Asked for while the kept kind was (re-)listing; started once that list completes, since an object the
    /// list carried before the demand grew was dropped.
    pub(crate) deferred: Vec<(Sym, StrMap)>,
    pub(crate) tasks: Vec<AbortHandle>,
}

impl Inner {
    /// The demand of the kind table, when the view keeps on demand.
    fn on_demand(&self) -> Option<Demand> {
        kinds::demand().filter(|_| self.opts.pods_on_demand)
    }

    /// Whether the store keeps this view: every one, except objects of the kept kind nothing selects. Until
    /// the selecting kind is listed the demand is unknown and every object is kept, so that both lists run
    /// at once; the ones nothing selects are dropped when the selecting kind is in ([`Inner::selecting_listed`]).
    pub(crate) fn keeps<V: Item>(&self, view: &V, ns: &str) -> bool {
        match (self.on_demand(), view.labels()) {
            (Some(d), Some(labels)) if view.kind() == d.kept && self.is_synced(d.selected_by) => {
                self.demand().wants(ns, labels)
            }
            _ => true,
        }
    }

    /// Drops the stored objects of the kept kind the demand does not select.
    fn prune(&self, d: Demand) {
        let Some(index) = self.store.any_index(d.kept) else {
            return;
        };
        let demand = self.demand();
        let dropped = index.retain_labelled(&|ns, labels| demand.wants(ns, labels));
        tracing::debug!(dropped, kind = %d.kept, "dropped the objects nothing selects");
    }

    /// After an event of a selecting object: brings the demand up to date and lists what it newly selects.
    fn selector_changed(self: &Arc<Self>, d: Demand, ns: &Sym, name: &str) {
        let selector = self
            .store
            .any_index(d.selected_by)
            .and_then(|i| i.selector_of(ns, name));
        let fetch = match selector {
            Some(selector) => self.demand().upsert(ns, name, selector.as_ref()),
            None => {
                self.demand().remove(ns, name);
                None
            }
        };
        if let Some(selector) = fetch {
            self.fetch_selected(d, ns.clone(), selector);
        }
    }

    /// After a list of the selecting kind: the demand from scratch, and what it newly selects. The first
    /// list fetches nothing: every object was kept until then, so the store drops the ones not selected
    /// instead.
    fn selectors_relisted(self: &Arc<Self>, d: Demand, first: bool) {
        let selecting = self
            .store
            .any_index(d.selected_by)
            .map(|i| i.selectors())
            .unwrap_or_default();
        let fetch = self.demand().rebuild(selecting.into_iter());
        if first {
            self.prune(d);
            return;
        }
        for (ns, selector) in fetch {
            self.fetch_selected(d, ns, selector);
        }
    }

    /// Lists the objects of the kept kind in `namespace` that `selector` selects into the store, holding the
    /// view unsynced until they are in; deferred while the kept kind is (re-)listing.
    fn fetch_selected(self: &Arc<Self>, d: Demand, namespace: Sym, selector: StrMap) {
        let Some(api) = self.api.clone() else {
            // Detached: events are fed by hand, there is nothing to list from.
            return;
        };
        let relisting = self.store.any_index(d.kept).is_some_and(|i| i.is_relisting());
        if !self.is_synced(d.kept) || relisting {
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
        if let Some(configured) = self.opts.label_selectors.get(&d.kept).filter(|s| !s.is_empty()) {
            labels = if labels.is_empty() {
                configured.clone()
            } else {
                format!("{labels},{configured}")
            };
        }
        let task = d
            .kept
            .spec()
            .ops
            .list_selected(Arc::clone(self), api, namespace, labels, id);
        let mut fetches = self.fetches();
        fetches.tasks.retain(|t| !t.is_finished());
        fetches.tasks.push(task);
    }

    /// Stores the objects a fetch listed, except those a watch event touched meanwhile, and lets the view
    /// sync.
    fn apply_fetched<K: Watched>(&self, id: u64, objects: Vec<Decoded<K>>) {
        let touched = self.fetches().active.remove(&id).unwrap_or_default();
        let store = &*self.store;
        let Some(index) = store.index::<K::View>(K::KIND) else {
            return;
        };
        let mut stored = 0usize;
        for object in objects {
            let meta = object.meta();
            let ns = store.interner().intern(meta.namespace.as_deref().unwrap_or_default());
            let name: Box<str> = meta.name.as_deref().unwrap_or_default().into();
            if touched.contains(&(ns.clone(), name.clone())) {
                continue;
            }
            let changed = match object {
                Decoded::Object(o) => {
                    let view = kinds::convert(&o, &self.convert());
                    self.keeps(&view, &ns) && index.upsert(ns.clone(), view)
                }
                Decoded::Undecodable { meta, error } => {
                    warn_undecodable(K::KIND, &meta, &error);
                    index.mark_undecodable(ns.clone(), &name)
                }
            };
            if changed {
                stored += 1;
                self.pending_changes().insert(ObjectKey::new(K::KIND, &ns, &name));
            }
        }
        tracing::debug!(stored, kind = %K::KIND, "listed the objects of a new selector");
        self.bump();
    }

    /// The kind a list of new demand is in flight for, if any: it reads unsynced meanwhile.
    pub(crate) fn demand_listing(&self) -> Option<ResourceKind> {
        let d = kinds::demand()?;
        (!self.fetches().active.is_empty()).then_some(d.kept)
    }

    /// A list of `kind` starts: a list of the kept kind keeps the objects of the demand so far, so the
    /// fetches asked for meanwhile wait for it.
    pub(crate) fn demand_relisting(&self, kind: ResourceKind) {
        if kinds::demand().is_some_and(|d| d.kept == kind) {
            self.fetches().deferred.clear();
        }
    }

    /// An event touched the object `ns/name` of `kind` (`changed`: its view changed): an object of the kept
    /// kind is then at least as new as any list in flight, and a selecting object's demand may have changed.
    pub(crate) fn demand_touched(self: &Arc<Self>, kind: ResourceKind, ns: &Sym, name: &str, changed: bool) {
        let Some(d) = kinds::demand() else {
            return;
        };
        if kind == d.kept {
            let mut fetches = self.fetches();
            for seen in fetches.active.values_mut() {
                seen.insert((ns.clone(), name.into()));
            }
        }
        if changed && kind == d.selected_by && self.opts.pods_on_demand {
            self.selector_changed(d, ns, name);
        }
    }

    /// A complete list of the selecting kind (`first`: its first one), before that kind counts as listed:
    /// the demand follows it. Were the kind marked listed first, an object of the kept kind ingested in
    /// between (its list runs at once, on another task) would meet the old, possibly empty, demand and be
    /// dropped for good: the first list fetches nothing, as every object was kept until then.
    pub(crate) fn selecting_listed(self: &Arc<Self>, kind: ResourceKind, first: bool) {
        if let Some(d) = self.on_demand().filter(|d| d.selected_by == kind) {
            self.selectors_relisted(d, first);
        }
    }

    /// A complete list of the kept kind, once it counts as listed: drops what the demand does not select
    /// (objects listed before the selecting kind was in were all kept) and starts the fetches deferred
    /// during it.
    pub(crate) fn kept_listed(self: &Arc<Self>, kind: ResourceKind) {
        let Some(d) = self.on_demand().filter(|d| d.kept == kind) else {
            return;
        };
        if self.is_synced(d.selected_by) {
            self.prune(d);
        }
        let deferred = std::mem::take(&mut self.fetches().deferred);
        for (ns, selector) in deferred {
            self.fetch_selected(d, ns, selector);
        }
    }
}

/// Lists the objects of `K` in `namespace` that `labels` selects, then stores them ([`Inner::apply_fetched`]);
/// what [`crate::kinds::KindOps::list_selected`] runs for the kept kind.
pub(crate) fn spawn_list_selected<K: Watched>(
    inner: Arc<Inner>,
    ApiAccess { client, runtime }: ApiAccess,
    namespace: Sym,
    labels: String,
    id: u64,
) -> AbortHandle {
    let task = runtime.spawn(async move {
        let spec = K::KIND.spec();
        let api: Api<Decoded<K>> =
            Api::namespaced_with(client, &namespace, &spec.api_resource(spec.preferred_version()));
        let objects = list_all(&api, &labels).await;
        inner.apply_fetched(id, objects);
    });
    task.abort_handle()
}

/// Every object `labels` selects (pages of 500, as the watchers list), retried with backoff until the list
/// succeeds: the view stays unsynced meanwhile, which is the safe side.
async fn list_all<K: Watched>(api: &Api<Decoded<K>>, labels: &str) -> Vec<Decoded<K>> {
    let mut delay = Duration::from_secs(1);
    loop {
        match list_pages(api, labels).await {
            Ok(items) => return items,
            Err(e) => {
                tracing::warn!(error = %e, selector = labels, retry_in = ?delay, kind = %K::KIND,
                    "listing the objects a new selector selects failed");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(30));
            }
        }
    }
}

async fn list_pages<K: Watched>(api: &Api<Decoded<K>>, labels: &str) -> Result<Vec<Decoded<K>>, kube::Error> {
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

    fn map(pairs: &[(&str, &str)]) -> StrMap {
        pairs.iter().copied().collect()
    }

    #[test]
    fn an_object_is_wanted_when_a_selector_of_its_namespace_selects_it() {
        let mut d = PodDemand::default();
        let ns = Sym::new("ns");
        assert_eq!(d.upsert(&ns, "lb", None), None);
        assert!(
            !d.wants("ns", &map(&[("app", "x")])),
            "an object that reads none selects none"
        );
        assert_eq!(
            d.upsert(&ns, "db", Some(&map(&[("app", "db")]))),
            Some(map(&[("app", "db")]))
        );
        assert!(d.wants("ns", &map(&[("app", "db"), ("tier", "x")])));
        assert!(!d.wants("ns", &map(&[("app", "web")])));
        assert!(!d.wants("other", &map(&[("app", "db")])), "namespaces are apart");
        d.remove("ns", "db");
        assert!(!d.wants("ns", &map(&[("app", "db")])));
    }

    #[test]
    fn a_fetch_is_needed_only_for_objects_no_other_selector_covers() {
        let mut d = PodDemand::default();
        let ns = Sym::new("ns");
        let db = map(&[("app", "db")]);
        assert!(d.upsert(&ns, "db", Some(&db)).is_some());
        assert_eq!(d.upsert(&ns, "db", Some(&db)), None, "unchanged");
        assert_eq!(
            d.upsert(&ns, "db-0", Some(&map(&[("app", "db"), ("index", "0")]))),
            None,
            "a narrower selector's objects are kept already"
        );
        assert!(
            d.upsert(&ns, "web", Some(&map(&[("app", "web")]))).is_some(),
            "a selector of its own"
        );
        assert_eq!(
            d.upsert(&ns, "db", Some(&map(&[("app", "db2")]))),
            Some(map(&[("app", "db2")])),
            "a changed selector"
        );
        assert!(
            d.upsert(&ns, "all", Some(&map(&[]))).is_some(),
            "the empty selector selects the namespace"
        );
        assert!(d.wants("ns", &map(&[])));
        assert_eq!(d.upsert(&ns, "any", Some(&map(&[("x", "y")]))), None);
    }

    #[test]
    fn an_object_that_stops_selecting_is_forgotten() {
        let mut d = PodDemand::default();
        let ns = Sym::new("ns");
        d.upsert(&ns, "db", Some(&map(&[("app", "db")])));
        assert_eq!(d.upsert(&ns, "db", None), None);
        assert!(!d.wants("ns", &map(&[("app", "db")])));
    }

    #[test]
    fn a_rebuild_fetches_what_the_demand_before_did_not_cover() {
        let mut d = PodDemand::default();
        let ns = Sym::new("ns");
        d.upsert(&ns, "db", Some(&map(&[("app", "db")])));
        let selecting = [
            (ns.clone(), Box::from("db"), map(&[("app", "db")])),
            (ns.clone(), Box::from("web"), map(&[("app", "web")])),
        ];
        let fetch = d.rebuild(selecting.into_iter());
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

    #[test]
    fn the_table_keeps_one_kind_on_demand() {
        let d = kinds::demand().expect("the table keeps a kind on demand");
        assert_ne!(d.kept, d.selected_by);
        assert_eq!(d.kept.spec().kept_while_selected_by, Some(d.selected_by));
    }
}
