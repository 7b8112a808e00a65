//! What every extdns source shares.
//!
//! A [`Source`] turns a read-only [`ClusterStore`] view into desired [`Endpoint`]s. Sources are pure: they never
//! call the API server, a provider or the clock. The only network access a source may need, resolving a load
//! balancer hostname, goes through the injected [`resolver::Resolver`].
//!
//! ```
//! use extdns_informer::StrMap;
//! use extdns_source::Selector;
//!
//! // `--label-filter` and friends use Kubernetes label selector syntax.
//! let selector = Selector::parse("app=web,tier notin (db)")?;
//! let frontend: StrMap = [("app", "web"), ("tier", "frontend")].into_iter().collect();
//! let database: StrMap = [("app", "web"), ("tier", "db")].into_iter().collect();
//! assert!(selector.matches(&frontend));
//! assert!(!selector.matches(&database));
//! # Ok::<(), extdns_source::SelectorError>(())
//! ```

pub mod annotations;
pub mod config;
pub mod pipeline;
pub mod resolver;
pub mod route;
pub mod selector;
pub mod template;
pub mod tie;
// --- contour-httpproxy and openshift-route sources ---
pub mod own_hosts;

pub use annotations::{AnnotationError, Annotations, DurationError, PREFIX_ALPHA, PREFIX_GA, PrefixConflict, TtlError};
pub use config::SourceConfig;
pub use pipeline::{ChangedOutput, DesiredIndex, Pipeline, PipelineConfig, PipelineOutput, wrappers};
pub use resolver::{ResolveError, Resolver, StaticResolver, SystemResolver};
pub use route::ProviderRoute;
pub use selector::{Selector, SelectorError};
pub use template::{FqdnTemplate, TemplateError, TemplateObject, TemplateParts};

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use extdns_endpoint::name::normalize_dns_name;
use extdns_endpoint::{Endpoint, RecordType};
use extdns_informer::{ChangeSet, ClusterStore, ObjectKey, ResourceKind};

/// A producer of desired endpoints, object by object.
///
/// A source writes two things: what each of its objects asks for ([`evaluate`](Source::evaluate)), and
/// what it does to the endpoints of several objects that share a name ([`merge`](Source::merge)). The
/// evaluation of the whole cluster is derived from those two ([`SourceExt::evaluate_all`], and the
/// pipeline's full and incremental evaluations), so an incremental sync equals a full one by construction.
#[async_trait]
pub trait Source: Send + Sync {
    /// The `--source` name (`service`, `gateway-httproute`, ...).
    fn name(&self) -> &str;

    /// The kinds of objects this source reads, so the live cluster watches only those.
    fn watched_kinds(&self) -> Vec<ResourceKind>;

    /// The kinds among [`watched_kinds`](Source::watched_kinds) this source reads every object of (in
    /// its scope) although the kind table keeps them only while selected (`kept_while_selected_by`: Pods,
    /// kept for the Services that select them). The pod source reads every Pod, so declaring it here has
    /// the live view watch and keep them all; the default, nothing, leaves the table's demand alone.
    fn reads_whole(&self) -> Vec<ResourceKind> {
        Vec::new()
    }

    /// Whether this source tells by itself which of its objects a kind that cannot be listed fails
    /// ([`ClusterStore::unavailable`]; the Service source: only Services reading Nodes need Nodes). When
    /// not, the pipeline evaluates it to nothing while any kind it reads is unavailable, and fails every
    /// kind it reads, so none of its records is touched.
    fn degrades_per_object(&self) -> bool {
        false
    }

    /// The endpoints each of `objects` asks for, before [`merge`](Source::merge), in [`ObjectKey`] order;
    /// objects that publish nothing may be left out. Objects that are gone, or no longer admitted by the
    /// filters, are simply absent. Bad input on one object (a template that cannot run on it, an invalid name
    /// or target) is a warning naming the object and the field, and the object is reported in
    /// [`Evaluation::failed`]: the controller then keeps the records it published before, so a template or
    /// annotation that starts failing on one object cannot take its names offline. An error here means the
    /// whole result is unusable, and the controller then plans nothing that sync.
    async fn evaluate(&self, cluster: &ClusterStore, objects: Objects<'_>) -> Result<Evaluation, SourceError>;

    /// What this source does to the endpoints of several objects that share a name (concatenated in
    /// [`ObjectKey`] order). It must treat each name on its own: an incremental sync merges only the names a
    /// change touched.
    fn merge(&self, endpoints: Vec<Endpoint>) -> Vec<Endpoint> {
        endpoints
    }

    /// This source's objects whose endpoints `changes` may have changed, or `None` when the source cannot
    /// tell (it is then evaluated whole). Over-approximating is safe (an object evaluated again for nothing
    /// plans nothing); missing one is not. The default only knows that changes to kinds the source does not
    /// read affect none of its objects.
    fn affected(&self, _cluster: &ClusterStore, changes: &ChangeSet) -> Option<BTreeSet<ObjectKey>> {
        if self.watched_kinds().into_iter().any(|k| changes.touches(k)) {
            None
        } else {
            Some(BTreeSet::new())
        }
    }
}

/// The evaluation of a whole cluster, derived from [`Source::evaluate`] and [`Source::merge`]; no source
/// can write it differently.
pub trait SourceExt: Source {
    /// Every object evaluated, merged.
    fn evaluate_all<'a>(
        &'a self,
        cluster: &'a ClusterStore,
    ) -> impl Future<Output = Result<SourceOutput, SourceError>> + Send + 'a;
}

impl<S: Source + ?Sized> SourceExt for S {
    async fn evaluate_all(&self, cluster: &ClusterStore) -> Result<SourceOutput, SourceError> {
        let evaluation = self.evaluate(cluster, Objects::All).await?;
        let mut endpoints = Vec::with_capacity(evaluation.objects.iter().map(|o| o.endpoints.len()).sum());
        for o in evaluation.objects {
            endpoints.extend(o.endpoints);
        }
        Ok(SourceOutput {
            endpoints: self.merge(endpoints),
            failed: evaluation.failed,
        })
    }
}

/// Which of its objects a source evaluates.
#[derive(Debug, Clone, Copy)]
pub enum Objects<'a> {
    /// Every object in scope (a full evaluation).
    All,
    /// Only these (of any kind; a source looks for its own).
    Only(&'a BTreeSet<ObjectKey>),
}

impl Objects<'_> {
    /// Whether `key` is to be evaluated.
    pub fn includes(&self, key: &ObjectKey) -> bool {
        match self {
            Objects::All => true,
            Objects::Only(keys) => keys.contains(key),
        }
    }

    /// The objects of `kind` to evaluate; `None` for all of them.
    pub fn of_kind(&self, kind: ResourceKind) -> Option<impl Iterator<Item = &ObjectKey>> {
        match self {
            Objects::All => None,
            Objects::Only(keys) => Some(keys.iter().filter(move |k| k.kind == kind)),
        }
    }
}

/// The endpoints one object asks for, before its source merges names several objects share.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectEndpoints {
    /// The object.
    pub object: ObjectKey,
    /// What it publishes, before the merge by name.
    pub endpoints: Vec<Endpoint>,
}

impl ObjectEndpoints {
    /// What `object` publishes, without the room a vector grown by pushes keeps: a whole cluster's
    /// evaluations are alive at once during a full sync, and most objects publish one record in a vector
    /// with room for four.
    pub fn new(object: ObjectKey, mut endpoints: Vec<Endpoint>) -> Self {
        endpoints.shrink_to_fit();
        ObjectEndpoints { object, endpoints }
    }
}

/// What a source made of (some of) its objects, object by object; see [`Source::evaluate`].
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Evaluation {
    /// In [`ObjectKey`] order.
    pub objects: Vec<ObjectEndpoints>,
    /// The objects that could not be evaluated, whose records are held.
    pub failed: Failures,
}

impl Evaluation {
    /// An evaluation of these objects.
    pub fn new(objects: Vec<ObjectEndpoints>, failed: Failures) -> Self {
        Evaluation { objects, failed }
    }
}

/// What one source made of the whole cluster.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct SourceOutput {
    /// Every endpoint, merged by name.
    pub endpoints: Vec<Endpoint>,
    /// The objects that could not be evaluated, whose records are held.
    pub failed: Failures,
}

/// The objects that could not be evaluated, each with why when one field says it all (for the Warning
/// events `--events-emit` sends): their published records stay as they are until they evaluate again.
/// Whole kinds fail when a kind a source needs cannot be listed ([`extdns_informer::Unavailable`]): every
/// object of a failed kind counts as failed, those listed before and those never seen, so no record one of
/// them owns is touched. An object can also fail in part ([`insert_part`](Self::insert_part)): it still
/// publishes what it asks for validly, and only the records of its failing parts stay.
///
/// Cloned in O(1) and copied on the first write: the desired index keeps each source's set between syncs
/// and every incremental sync hands it on, and a sync that costs what it touches cannot copy every
/// failure the cluster has.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Failures {
    objects: Arc<BTreeMap<ObjectKey, Failure>>,
    kinds: Arc<BTreeMap<ResourceKind, String>>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Failure {
    why: Option<String>,
    /// `None`: every record the object owns stays.
    part: Option<HeldRecords>,
}

/// The records an object failing in part keeps (a DNSEndpoint whose entry 2 became invalid keeps that
/// entry's record while entries 0 and 1 publish): records at the failing parts' names, and, when a part's
/// name itself is unknown, every record the object no longer publishes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeldRecords {
    /// Names in [`normalize_dns_name`](extdns_endpoint::name::normalize_dns_name) form, with the record
    /// type, `None` for every type at the name.
    names: BTreeSet<(String, Option<RecordType>)>,
    uncovered: bool,
}

impl HeldRecords {
    /// Nothing held yet; the source adds each failing part.
    pub fn new() -> Self {
        HeldRecords::default()
    }

    /// Keeps the object's records at `name` of `record_type` (`None`: of every type).
    pub fn name(&mut self, name: &str, record_type: Option<RecordType>) {
        self.names.insert((normalize_dns_name(name), record_type));
    }

    /// Keeps every record of the object that it no longer publishes: a failing part's name is unknown.
    pub fn uncovered(&mut self) {
        self.uncovered = true;
    }

    /// Whether no part failed, so the object does not fail at all.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty() && !self.uncovered
    }

    /// Whether the object's record `name`/`record_type` stays as it is; `published` says whether the object
    /// still asks for a record of that name, type and set identifier.
    pub fn keeps(&self, name: &str, record_type: &RecordType, published: bool) -> bool {
        if self.uncovered && !published {
            return true;
        }
        let name = normalize_dns_name(name);
        self.names.contains(&(name.clone(), Some(record_type.clone()))) || self.names.contains(&(name, None))
    }

    fn extend(&mut self, other: HeldRecords) {
        self.names.extend(other.names);
        self.uncovered |= other.uncovered;
    }
}

/// What of a failed object's records stays, see [`Failures::held`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Held<'a> {
    /// Every record it owns.
    All,
    /// Those its failing parts name.
    Part(&'a HeldRecords),
}

impl Failures {
    /// No failures.
    pub fn new() -> Self {
        Failures::default()
    }

    /// Records a failed object, all of whose records stay; a reason already known is kept when `why` has
    /// none.
    pub fn insert(&mut self, object: ObjectKey, why: Option<String>) {
        let slot = Arc::make_mut(&mut self.objects).entry(object).or_default();
        slot.part = None;
        if slot.why.is_none() {
            slot.why = why;
        }
    }

    /// Records an object that fails in part: it publishes the rest, and the records `held` names stay.
    /// An object already failing whole stays so; parts add up.
    pub fn insert_part(&mut self, object: ObjectKey, why: Option<String>, held: HeldRecords) {
        match Arc::make_mut(&mut self.objects).entry(object) {
            std::collections::btree_map::Entry::Vacant(slot) => {
                slot.insert(Failure { why, part: Some(held) });
            }
            std::collections::btree_map::Entry::Occupied(mut slot) => {
                let slot = slot.get_mut();
                if let Some(part) = slot.part.as_mut() {
                    part.extend(held);
                }
                if slot.why.is_none() {
                    slot.why = why;
                }
            }
        }
    }

    /// Records that every object of `kind` failed, and why; the first reason is kept.
    pub fn insert_kind(&mut self, kind: ResourceKind, why: String) {
        Arc::make_mut(&mut self.kinds).entry(kind).or_insert(why);
    }

    /// Whether `object` failed, whole or in part, on its own or with its kind.
    pub fn contains(&self, object: &ObjectKey) -> bool {
        self.kinds.contains_key(&object.kind) || self.objects.contains_key(object)
    }

    /// Which records of `object` stay, `None` when it did not fail.
    pub fn held(&self, object: &ObjectKey) -> Option<Held<'_>> {
        if self.kinds.contains_key(&object.kind) {
            return Some(Held::All);
        }
        self.objects.get(object).map(|f| match &f.part {
            None => Held::All,
            Some(part) => Held::Part(part),
        })
    }

    /// Forget `object`'s failure (it evaluated again).
    pub fn remove(&mut self, object: &ObjectKey) {
        if self.objects.contains_key(object) {
            Arc::make_mut(&mut self.objects).remove(object);
        }
    }

    /// Why `object` failed, when known.
    pub fn why(&self, object: &ObjectKey) -> Option<&str> {
        match self.objects.get(object) {
            Some(f) => f.why.as_deref(),
            None => self.kinds.get(&object.kind).map(String::as_str),
        }
    }

    /// Failed objects and failed kinds, each counted once.
    pub fn len(&self) -> usize {
        self.objects.len() + self.kinds.len()
    }

    /// Whether every object evaluated.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty() && self.kinds.is_empty()
    }

    /// The failed objects, sorted, with why when known (failed kinds are in [`kinds`](Self::kinds)).
    pub fn iter(&self) -> impl Iterator<Item = (&ObjectKey, Option<&str>)> {
        self.objects.iter().map(|(k, f)| (k, f.why.as_deref()))
    }

    /// The kinds whose every object failed, and why.
    pub fn kinds(&self) -> impl Iterator<Item = (ResourceKind, &str)> {
        self.kinds.iter().map(|(k, w)| (*k, w.as_str()))
    }

    /// Adds every failure of `other` (reasons known here are kept).
    pub fn extend(&mut self, other: Failures) {
        if self.is_empty() {
            // Shared, not copied.
            *self = other;
            return;
        }
        let objects = Arc::try_unwrap(other.objects).unwrap_or_else(|shared| (*shared).clone());
        for (k, f) in objects {
            match f.part {
                None => self.insert(k, f.why),
                Some(part) => self.insert_part(k, f.why, part),
            }
        }
        for (k, w) in other.kinds.iter() {
            if !self.kinds.contains_key(k) {
                self.insert_kind(*k, w.clone());
            }
        }
    }

    /// Keeps only the object failures `keep` admits; failed kinds stay.
    pub fn retain(&mut self, mut keep: impl FnMut(&ObjectKey) -> bool) {
        if self.objects.keys().any(|k| !keep(k)) {
            Arc::make_mut(&mut self.objects).retain(|k, _| keep(k));
        }
    }
}

impl FromIterator<ObjectKey> for Failures {
    fn from_iter<I: IntoIterator<Item = ObjectKey>>(iter: I) -> Self {
        Failures {
            objects: Arc::new(iter.into_iter().map(|k| (k, Failure::default())).collect()),
            kinds: Arc::default(),
        }
    }
}

/// Why a source reading `kinds` cannot publish from `cluster`: the first of them that cannot be listed.
pub fn unavailable_need(cluster: &ClusterStore, kinds: &[ResourceKind]) -> Option<String> {
    kinds
        .iter()
        .find_map(|k| cluster.unavailable(*k).map(|why| format!("{k} unavailable: {why}")))
}

/// The longest value a warning repeats in full; longer ones are cut (a whole object or a megabyte of
/// annotation in a log line helps nobody and can flood the log).
pub const WARN_VALUE_MAX: usize = 200;

/// `value` for a warning: as is up to [`WARN_VALUE_MAX`] characters, else its start and an ellipsis.
pub fn shorten(value: &str) -> std::borrow::Cow<'_, str> {
    match value.char_indices().nth(WARN_VALUE_MAX) {
        None => std::borrow::Cow::Borrowed(value),
        Some((cut, _)) => std::borrow::Cow::Owned(format!("{}…", &value[..cut])),
    }
}

/// The stored objects of `kind` that could not be decoded, among `objects`: what a source reading that kind
/// knows about them is that they exist, so their records must be kept.
pub fn undecodable(cluster: &ClusterStore, kind: ResourceKind, objects: Objects<'_>) -> Failures {
    match objects.of_kind(kind) {
        None => cluster.undecodable().into_iter().filter(|k| k.kind == kind).collect(),
        Some(keys) => keys.filter(|k| cluster.is_undecodable(k)).cloned().collect(),
    }
}

/// The objects of `kind` that `changes` touched: what [`Source::affected`] answers for a source whose
/// objects read nothing but themselves (Ingresses, Nodes, DNSEndpoints, the [`own_hosts`] pattern). `None`
/// when `changes` are everything: the source evaluates everything then.
pub fn changed_of_kind(changes: &ChangeSet, kind: ResourceKind) -> Option<BTreeSet<ObjectKey>> {
    if changes.is_everything() {
        return None;
    }
    Some(changes.of_kind(kind).cloned().collect())
}

/// Why a source produced no usable result.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// A template failed.
    #[error("{source_name}: {source}")]
    Template {
        /// The source, for the message.
        source_name: String,
        /// The template's reason.
        #[source]
        source: TemplateError,
    },
    /// Anything else a source reports.
    #[error("{source_name}: {message}")]
    Other {
        /// The source.
        source_name: String,
        /// What went wrong.
        message: String,
    },
}

/// The targets of a load balancer status (`status.loadBalancer.ingress`: a Service's, an Ingress's, or the
/// Envoy Service's an HTTPProxy copies): each entry's IP, then its hostname, empty ones skipped.
pub fn load_balancer_targets(entries: &[extdns_informer::view::LoadBalancerIngress]) -> Vec<extdns_endpoint::Target> {
    entries
        .iter()
        .flat_map(|lb| [lb.ip.as_deref(), lb.hostname.as_deref()])
        .flatten()
        .filter(|t| !t.is_empty())
        .map(extdns_endpoint::Target::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_reason_is_kept() {
        let web = ObjectKey::new(ResourceKind::Service, "default", "web");
        let mut f = Failures::new();
        f.insert(web.clone(), Some("bad target".into()));
        f.insert(web.clone(), None);
        assert_eq!(f.why(&web), Some("bad target"));
        assert_eq!(f.len(), 1);
    }

    #[test]
    fn a_failure_in_part_adds_up_and_a_whole_failure_wins() {
        let web = ObjectKey::new(ResourceKind::DnsEndpoint, "ns", "web");
        let part = |name: &str| {
            let mut held = HeldRecords::new();
            held.name(name, Some(RecordType::A));
            held
        };
        let mut f = Failures::new();
        f.insert_part(web.clone(), Some("entry 1".into()), part("one.example.org"));
        f.insert_part(web.clone(), None, part("Two.Example.org."));
        let Some(Held::Part(held)) = f.held(&web) else {
            panic!("a failure in part: {:?}", f.held(&web));
        };
        assert!(held.keeps("one.example.org.", &RecordType::A, true));
        assert!(held.keeps("two.example.org", &RecordType::A, false));
        assert!(!held.keeps("two.example.org", &RecordType::Aaaa, false));
        assert!(!held.keeps("three.example.org", &RecordType::A, false));
        assert_eq!(f.why(&web), Some("entry 1"));
        assert_eq!(f.len(), 1);

        f.insert(web.clone(), Some("undecodable".into()));
        assert_eq!(f.held(&web), Some(Held::All));
        f.insert_part(web.clone(), None, part("four.example.org"));
        assert_eq!(f.held(&web), Some(Held::All), "a whole failure stays whole");

        let mut other = Failures::new();
        other.insert_part(web.clone(), None, part("five.example.org"));
        let mut merged = other.clone();
        merged.extend(other);
        assert!(
            matches!(merged.held(&web), Some(Held::Part(_))),
            "extend keeps a failure in part"
        );
    }

    #[test]
    fn a_part_without_a_name_keeps_what_the_object_no_longer_publishes() {
        let mut held = HeldRecords::new();
        assert!(held.is_empty());
        held.uncovered();
        assert!(!held.is_empty());
        assert!(held.keeps("any.example.org", &RecordType::Cname, false));
        assert!(!held.keeps("any.example.org", &RecordType::Cname, true));
    }
}
