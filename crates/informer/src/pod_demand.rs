//! Which objects of a kind the live view keeps when the kind table says it is kept only while selected
//! ([`crate::kinds::KindSpec::kept_while_selected_by`]): Pods, selected by Services.
//!
//! Sources read a Pod for two kinds of Service only: a headless Service (the Pods its EndpointSlices name,
//! which must also match its selector) and a NodePort Service with `externalTrafficPolicy: Local` (the Pods
//! its selector matches, for their nodes); the selecting view says which of its objects read the kept kind
//! (`Item::selects`). Every other Pod is never read, and in most clusters that is
//! nearly all of them: at 50,000 Pods the store spent 10 MiB on Pods nothing looked at. So the live view
//! keeps a Pod only while one of those Services in its namespace selects it (an empty selector selects the
//! whole namespace, as Kubernetes reads it), and drops the others as they arrive.
//!
//! The API server is not asked for the others either. The kept kind's watcher starts once the selecting kind
//! is listed, when the demand is known, with a label selector that covers the demand ([`Cover`]): one label
//! key every selector names, and the values they ask of it (`app in (db,web)`). With no demand there is no
//! watcher at all; only when the selectors share no key (or one is empty) does it watch every object, as it
//! did before. Streaming 50,000 Pods to keep 3,000 was most of the first sync's time and its memory peak; the
//! price is that in the worst case the two lists run one after the other instead of at once.
//!
//! A selecting object that appears or changes later may select objects that were dropped, or never sent.
//! [`PodDemand::upsert`] says when. If the cover already covers its selector, the live view lists the objects
//! of that selector once; otherwise the watcher starts over with a cover of the whole new demand. Either way
//! the view reads unsynced until the objects are in, so nothing is planned without them. A detached view (no
//! API server) keeps every object until the selecting kind is listed and then drops the unselected ones.
//!
//! Here is the demand's bookkeeping: what is selected ([`PodDemand`]), what the watch covers ([`Cover`]),
//! the lists and the watcher in flight ([`Fetches`]). The live view ([`crate::live`]) holds it and does what
//! it says (lists, starts the watcher over, drops objects), so this module imports nothing of the live view,
//! whose state stays private to it.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use tokio::task::AbortHandle;

use crate::{StrMap, Sym};

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

/// A label selector the API server can filter the kept kind's watch by, covering every selector of the
/// demand: an object some selector selects always matches it (the store then keeps only those the demand
/// wants).
///
/// Label selectors cannot say "this or that", so the cover is one key every selector of the demand names,
/// with every value they ask of it; a superset of the demand, exact when the selectors are one key each,
/// as a Service's usually is.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) enum Cover {
    /// Nothing is selected: no watcher.
    #[default]
    Nothing,
    /// The objects whose label `key` has one of `values`.
    In { key: Box<str>, values: BTreeSet<Box<str>> },
    /// Every object: a selector is empty, the selectors share no key, or the values would not fit a request.
    Everything,
}

/// The longest `key in (...)` selector sent; beyond it the watcher takes every object. kube-apiserver reads
/// request lines up to 1 MiB; the watch is sent again on every reconnect, so this stays well below.
const MAX_COVER_LEN: usize = 128 * 1024;

impl Cover {
    /// The narrowest single-key cover of `demand`: of the keys every selector names, the one with the
    /// fewest distinct values.
    pub(crate) fn of(demand: &PodDemand) -> Cover {
        let mut selectors = demand.by_ns.values().flat_map(BTreeMap::values).peekable();
        let Some(first) = selectors.peek().copied() else {
            return Cover::Nothing;
        };
        let mut by_key: Vec<(&str, BTreeSet<&str>)> = first.iter().map(|(k, _)| (k, BTreeSet::new())).collect();
        for selector in selectors {
            by_key.retain_mut(|(key, values)| match selector.get(key) {
                Some(value) => {
                    values.insert(value);
                    true
                }
                None => false,
            });
        }
        let Some((key, values)) = by_key.into_iter().min_by_key(|(_, values)| values.len()) else {
            return Cover::Everything;
        };
        let len: usize = key.len() + values.iter().map(|v| v.len() + 1).sum::<usize>();
        // An empty value cannot be written in a set (`app in (,x)` does not parse).
        if len > MAX_COVER_LEN || values.contains("") {
            return Cover::Everything;
        }
        Cover::In {
            key: key.into(),
            values: values.into_iter().map(Box::from).collect(),
        }
    }

    /// Whether every object `selector` selects matches this cover.
    pub(crate) fn covers(&self, selector: &StrMap) -> bool {
        match self {
            Cover::Nothing => false,
            Cover::In { key, values } => selector.get(key).is_some_and(|v| values.contains(v)),
            Cover::Everything => true,
        }
    }

    /// Whether every object `other` matches matches this cover too.
    pub(crate) fn contains(&self, other: &Cover) -> bool {
        match (self, other) {
            (_, Cover::Nothing) | (Cover::Everything, _) => true,
            (Cover::In { key, values }, Cover::In { key: k, values: v }) => key == k && v.is_subset(values),
            _ => false,
        }
    }

    /// The label selector to watch with; `None` for every object (and for nothing, which is not watched).
    pub(crate) fn label_selector(&self) -> Option<String> {
        match self {
            Cover::In { key, values } => {
                let values: Vec<&str> = values.iter().map(|v| &**v).collect();
                Some(format!("{key} in ({})", values.join(",")))
            }
            Cover::Nothing | Cover::Everything => None,
        }
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
    /// The kept kind's watcher, when it follows the demand.
    pub(crate) watch: KeptWatch,
}

/// The kept kind's watcher and the cover it was started with.
#[derive(Debug, Default)]
pub(crate) struct KeptWatch {
    pub(crate) cover: Cover,
    pub(crate) task: Option<AbortHandle>,
    /// Started (over) after the kind was first listed: the view reads unsynced until its list is in.
    pub(crate) listing: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds;

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

    /// A selecting object: namespace, name, selector.
    type Selecting<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);

    fn demand_of(selectors: &[Selecting<'_>]) -> PodDemand {
        let mut d = PodDemand::default();
        for (ns, name, selector) in selectors {
            d.upsert(&Sym::new(ns), name, Some(&map(selector)));
        }
        d
    }

    fn cover_in(key: &str, values: &[&str]) -> Cover {
        Cover::In {
            key: key.into(),
            values: values.iter().map(|&v| Box::from(v)).collect(),
        }
    }

    #[test]
    fn the_cover_is_the_shared_key_with_the_fewest_values() {
        assert_eq!(Cover::of(&PodDemand::default()), Cover::Nothing, "no demand, no watch");
        let one_key = demand_of(&[("a", "db", &[("app", "db")]), ("b", "web", &[("app", "web")])]);
        let cover = Cover::of(&one_key);
        assert_eq!(cover, cover_in("app", &["db", "web"]));
        assert_eq!(cover.label_selector().as_deref(), Some("app in (db,web)"));
        let two_keys = demand_of(&[
            ("a", "db", &[("app", "db"), ("tier", "data")]),
            ("a", "cache", &[("app", "cache"), ("tier", "data")]),
            ("a", "web", &[("app", "web"), ("component", "x"), ("tier", "front")]),
        ]);
        assert_eq!(Cover::of(&two_keys), cover_in("tier", &["data", "front"]));
        for (what, demand) in [
            (
                "no shared key",
                demand_of(&[("a", "x", &[("app", "x")]), ("a", "y", &[("name", "y")])]),
            ),
            (
                "an empty selector",
                demand_of(&[("a", "x", &[("app", "x")]), ("b", "all", &[])]),
            ),
            ("an empty value", demand_of(&[("a", "x", &[("app", "")])])),
        ] {
            assert_eq!(Cover::of(&demand), Cover::Everything, "{what}");
            assert_eq!(Cover::of(&demand).label_selector(), None, "{what}");
        }
        let huge = (0..20_000).map(|i| {
            let selector = map(&[("app", &format!("app-number-{i}"))]);
            (Sym::new("ns"), Box::from(format!("svc-{i}")), selector)
        });
        let mut d = PodDemand::default();
        d.rebuild(huge);
        assert_eq!(Cover::of(&d), Cover::Everything, "too long for a request line");
    }

    #[test]
    fn a_cover_covers_the_selectors_with_one_of_its_values() {
        let cover = cover_in("app", &["db", "web"]);
        assert!(cover.covers(&map(&[("app", "db"), ("tier", "x")])));
        assert!(!cover.covers(&map(&[("app", "batch")])));
        assert!(!cover.covers(&map(&[("name", "db")])));
        assert!(!cover.covers(&map(&[])), "the empty selector selects more");
        assert!(!Cover::Nothing.covers(&map(&[("app", "db")])));
        assert!(Cover::Everything.covers(&map(&[])));

        assert!(cover.contains(&cover_in("app", &["db"])));
        assert!(cover.contains(&Cover::Nothing));
        assert!(!cover.contains(&cover_in("app", &["db", "batch"])));
        assert!(!cover.contains(&cover_in("name", &["db"])));
        assert!(!cover.contains(&Cover::Everything));
        assert!(Cover::Everything.contains(&cover));
        assert!(!Cover::Nothing.contains(&cover));
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
