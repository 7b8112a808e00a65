//! The desired endpoints kept per object between syncs, so a change re-evaluates only the objects it
//! affects and plans only the names they publish (incremental reconcile).
//!
//! A full evaluation builds the [`DesiredIndex`]: every source's endpoints object by object, before the
//! source's merge, and which objects publish which name. A change then goes through
//! [`Pipeline::evaluate_changes`]: each source names the objects the changed ones affect
//! ([`Source::affected`]), only those are evaluated again, and the names they published before or publish
//! now are the affected names. Every object that publishes one of those names is gathered, merged and run
//! through the wrappers exactly as a full evaluation would; merges and wrappers treat each name on its own,
//! so the endpoints of the affected names come out as a full evaluation would make them.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use extdns_endpoint::Endpoint;
use extdns_endpoint::name::name_key;
use extdns_informer::{ChangeSet, ClusterStore};

use crate::wrappers::{Pipeline, PipelineOutput};
use crate::{ObjectEndpoints, SourceError};

/// Every source's endpoints by object, as the last evaluation left them.
#[derive(Debug, Default)]
pub struct DesiredIndex {
    /// One per source, in the pipeline's order; `None` for a source that cannot split its result by object.
    sources: Vec<Option<ObjectIndex>>,
}

/// One source's objects. Every object is stored once and its order key shared (`Arc`) between the maps
/// that find it, as the index lives between syncs and holds every object of the cluster
/// that publishes something (docs/performance.md, "Where the heap goes at scale").
#[derive(Debug, Default)]
struct ObjectIndex {
    /// An object's endpoints by its [`ObjectEndpoints::order`].
    objects: BTreeMap<Arc<str>, Box<[Endpoint]>>,
    /// `resource` key → order key.
    order_of: HashMap<Box<str>, Arc<str>>,
    /// Name key ([`name_key`]) → the order keys of the objects that publish it, sorted; nearly always one.
    by_name: HashMap<Box<str>, Vec<Arc<str>>>,
    failed: BTreeSet<String>,
    why: BTreeMap<String, String>,
}

impl ObjectIndex {
    fn insert(&mut self, object: ObjectEndpoints, names: &mut BTreeSet<String>) {
        let order: Arc<str> = object.order.into();
        for e in &object.endpoints {
            let key = name_key(&e.dns_name);
            let orders = match self.by_name.get_mut(key.as_ref()) {
                Some(orders) => orders,
                None => self.by_name.entry(key.as_ref().into()).or_default(),
            };
            if let Err(at) = orders.binary_search(&order) {
                orders.reserve_exact(1);
                orders.insert(at, order.clone());
            }
            names.insert(key.into_owned());
        }
        self.order_of.insert(object.resource.into(), order.clone());
        self.objects.insert(order, object.endpoints.into_boxed_slice());
    }

    fn remove(&mut self, resource: &str, names: &mut BTreeSet<String>) {
        let Some(order) = self.order_of.remove(resource) else {
            return;
        };
        let Some(endpoints) = self.objects.remove(&order) else {
            return;
        };
        for e in &endpoints {
            let key = name_key(&e.dns_name);
            if let Some(orders) = self.by_name.get_mut(key.as_ref()) {
                orders.retain(|o| *o != order);
                if orders.is_empty() {
                    self.by_name.remove(key.as_ref());
                }
            }
            names.insert(key.into_owned());
        }
    }

    /// The endpoints of every object that publishes one of `names`, in object order: whole objects, so the
    /// wrappers' validation sees everything an object asks for (and can hold all its records back).
    fn gather(&self, names: &BTreeSet<String>) -> Vec<Endpoint> {
        let orders: BTreeSet<&Arc<str>> = names
            .iter()
            .filter_map(|n| self.by_name.get(n.as_str()))
            .flatten()
            .collect();
        orders
            .into_iter()
            .filter_map(|o| self.objects.get(o))
            .flat_map(|endpoints| endpoints.iter().cloned())
            .collect()
    }
}

/// The desired endpoints of the names a change affected, and those names.
#[derive(Debug, Default)]
pub struct ChangedOutput {
    /// The name keys ([`name_key`]) to plan: names the affected objects published before or publish now.
    pub names: BTreeSet<String>,
    /// The desired endpoints of exactly those names, after the wrappers. `failed` holds every object that
    /// could not be evaluated (also the ones this change did not touch), `failed_by_source` the counts.
    pub output: PipelineOutput,
}

impl Pipeline {
    /// Evaluates every source, as [`Pipeline::endpoints`] does, and keeps the index incremental syncs update.
    pub async fn evaluate_indexed(
        &self,
        cluster: &ClusterStore,
    ) -> Result<(PipelineOutput, DesiredIndex), SourceError> {
        let mut index = DesiredIndex::default();
        let mut tagged: Vec<(usize, Endpoint)> = Vec::new();
        let mut failed: Vec<BTreeSet<String>> = Vec::with_capacity(self.sources.len());
        let mut why = BTreeMap::new();
        for (i, source) in self.sources.iter().enumerate() {
            match source.evaluate_objects(cluster, None).await? {
                Some(per) => {
                    let mut objects = ObjectIndex::default();
                    let mut all = Vec::new();
                    let mut names = BTreeSet::new();
                    for object in per.objects {
                        all.extend(object.endpoints.iter().cloned());
                        objects.insert(object, &mut names);
                    }
                    tagged.extend(source.merge(all).into_iter().map(|e| (i, e)));
                    objects.failed.clone_from(&per.failed);
                    objects.why.clone_from(&per.why);
                    failed.push(per.failed);
                    why.extend(per.why);
                    index.sources.push(Some(objects));
                }
                None => {
                    let out = source.evaluate(cluster).await?;
                    tagged.extend(out.endpoints.into_iter().map(|e| (i, e)));
                    failed.push(out.failed);
                    why.extend(out.why);
                    index.sources.push(None);
                }
            }
        }
        Ok((self.finish(tagged, failed, why), index))
    }

    /// Brings `index` up to date with `changes` and returns the desired endpoints of the names they
    /// affect, or `None` when only a full evaluation can tell ([`Pipeline::evaluate_indexed`]): everything
    /// changed, a source cannot name the affected objects or cannot split by object, or PTR records are
    /// managed (a PTR name gathers the addresses of many objects). `index` must come from this pipeline.
    pub async fn evaluate_changes(
        &self,
        cluster: &ClusterStore,
        index: &mut DesiredIndex,
        changes: &ChangeSet,
    ) -> Result<Option<ChangedOutput>, SourceError> {
        if changes.is_everything() || self.config().manage_ptr || index.sources.len() != self.sources.len() {
            return Ok(None);
        }
        let mut names = BTreeSet::new();
        for (source, slot) in self.sources.iter().zip(index.sources.iter_mut()) {
            let Some(affected) = source.affected(cluster, changes) else {
                return Ok(None);
            };
            if affected.is_empty() {
                continue;
            }
            let Some(objects) = slot.as_mut() else {
                return Ok(None);
            };
            let Some(per) = source.evaluate_objects(cluster, Some(&affected)).await? else {
                return Ok(None);
            };
            for resource in &affected {
                objects.remove(resource, &mut names);
                objects.failed.remove(resource);
                objects.why.remove(resource);
            }
            for object in per.objects {
                objects.insert(object, &mut names);
            }
            objects
                .failed
                .extend(per.failed.into_iter().filter(|r| affected.contains(r)));
            objects
                .why
                .extend(per.why.into_iter().filter(|(r, _)| affected.contains(r)));
        }

        let mut tagged: Vec<(usize, Endpoint)> = Vec::new();
        let mut failed = Vec::with_capacity(self.sources.len());
        let mut why = BTreeMap::new();
        for (i, (source, slot)) in self.sources.iter().zip(&index.sources).enumerate() {
            let Some(objects) = slot else {
                failed.push(BTreeSet::new());
                continue;
            };
            if !names.is_empty() {
                tagged.extend(source.merge(objects.gather(&names)).into_iter().map(|e| (i, e)));
            }
            failed.push(objects.failed.clone());
            why.extend(objects.why.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        let mut output = self.finish(tagged, failed, why);
        output
            .endpoints
            .retain(|e| names.contains(name_key(&e.dns_name).as_ref()));
        Ok(Some(ChangedOutput { names, output }))
    }
}

/// For sources' tests (feature `test-support`): takes `changes` from `before` to `after` through `pipeline`'s
/// incremental path and checks it against full evaluations: every name whose endpoints changed is planned, and
/// the planned names' endpoints and the objects that failed are exactly what a full evaluation makes. Panics
/// with `context` in the message; returns what the incremental path produced.
#[cfg(feature = "test-support")]
pub async fn check_against_full(
    pipeline: &Pipeline,
    before: &ClusterStore,
    after: &ClusterStore,
    changes: &ChangeSet,
    context: &str,
) -> ChangedOutput {
    fn by_name(endpoints: &[Endpoint]) -> BTreeMap<String, BTreeSet<String>> {
        let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for e in endpoints {
            out.entry(name_key(&e.dns_name).into_owned())
                .or_default()
                .insert(format!("{e:?}"));
        }
        out
    }
    let (full_before, mut index) = match pipeline.evaluate_indexed(before).await {
        Ok(x) => x,
        Err(e) => panic!("{context}: {e}"),
    };
    let incremental = match pipeline.evaluate_changes(after, &mut index, changes).await {
        Ok(Some(c)) => c,
        Ok(None) => panic!("{context}: a single change must not need a full evaluation"),
        Err(e) => panic!("{context}: {e}"),
    };
    let full_after = match pipeline.endpoints(after).await {
        Ok(x) => x,
        Err(e) => panic!("{context}: {e}"),
    };
    let (old_names, new_names) = (by_name(&full_before.endpoints), by_name(&full_after.endpoints));
    for name in old_names.keys().chain(new_names.keys()) {
        if old_names.get(name) != new_names.get(name) {
            assert!(
                incremental.names.contains(name),
                "{context}: {name} changed but is not planned: {:?}",
                incremental.names
            );
        }
    }
    let expected: Vec<Endpoint> = full_after
        .endpoints
        .iter()
        .filter(|e| incremental.names.contains(name_key(&e.dns_name).as_ref()))
        .cloned()
        .collect();
    assert_eq!(
        by_name(&incremental.output.endpoints),
        by_name(&expected),
        "{context}: the affected names' endpoints"
    );
    assert_eq!(
        incremental.output.failed, full_after.failed,
        "{context}: the objects that failed"
    );
    incremental
}

/// For sources' tests (feature `test-support`): the contract of [`Source::evaluate_objects`], checked on one
/// cluster. Objects come in strictly increasing order, merging their endpoints gives what
/// [`Source::evaluate`] gives (object references, failures and reasons included), and each object evaluated
/// alone gives what it gave among all of them.
#[cfg(feature = "test-support")]
pub async fn check_per_object_contract(source: &dyn crate::Source, cluster: &ClusterStore) {
    let per = |only: Option<BTreeSet<String>>| async move {
        match source.evaluate_objects(cluster, only.as_ref()).await {
            Ok(Some(per)) => per,
            Ok(None) => panic!("{}: no per-object evaluation", source.name()),
            Err(e) => panic!("{}: {e}", source.name()),
        }
    };
    let full = match source.evaluate(cluster).await {
        Ok(out) => out,
        Err(e) => panic!("{}: {e}", source.name()),
    };
    let all = per(None).await;
    assert!(
        all.objects.windows(2).all(|w| w[0].order < w[1].order),
        "objects out of order"
    );
    let endpoints: Vec<Endpoint> = all.objects.iter().flat_map(|o| o.endpoints.iter().cloned()).collect();
    assert_eq!(
        format!("{:?}", source.merge(endpoints)),
        format!("{:?}", full.endpoints),
        "merge over the objects differs from evaluate"
    );
    assert_eq!(all.failed, full.failed);
    assert_eq!(all.why, full.why);
    let resources: BTreeSet<&String> = all.objects.iter().map(|o| &o.resource).chain(&all.failed).collect();
    for r in resources {
        let alone = per(Some([r.clone()].into())).await;
        let among: Vec<&ObjectEndpoints> = all.objects.iter().filter(|o| &o.resource == r).collect();
        assert_eq!(
            format!("{:?}", alone.objects.iter().collect::<Vec<_>>()),
            format!("{among:?}"),
            "{r} evaluated alone"
        );
        let failed: BTreeSet<String> = all.failed.iter().filter(|f| *f == r).cloned().collect();
        assert_eq!(alone.failed, failed, "{r} evaluated alone");
    }
}

/// For sources' tests (feature `test-support`): each object's endpoints (object references included), and
/// " failed" for the objects that failed, by `resource` key: what to compare before and after a change.
#[cfg(feature = "test-support")]
pub async fn endpoints_by_object(source: &dyn crate::Source, cluster: &ClusterStore) -> BTreeMap<String, String> {
    let per = match source.evaluate_objects(cluster, None).await {
        Ok(Some(per)) => per,
        other => panic!("{}: no per-object result: {other:?}", source.name()),
    };
    let mut out: BTreeMap<String, String> = per
        .objects
        .into_iter()
        .map(|o| (o.resource, format!("{:?}", o.endpoints)))
        .collect();
    for f in per.failed {
        out.entry(f).or_default().push_str(" failed");
    }
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use async_trait::async_trait;
    use extdns_endpoint::{RecordType, label};
    use extdns_informer::ResourceKind;

    use super::*;
    use crate::wrappers::PipelineConfig;
    use crate::{PerObject, Source};

    /// Objects named `service/default/<name>`, each asking for the given (name, address) records; the
    /// merge joins the targets of one name, first object's labels winning, as the real sources do.
    #[derive(Default)]
    struct Objects(Mutex<BTreeMap<String, Vec<(String, String)>>>);

    impl Objects {
        fn set(&self, object: &str, records: &[(&str, &str)]) -> ChangeSet {
            let records = records.iter().map(|(n, t)| (n.to_string(), t.to_string())).collect();
            let mut m = self.0.lock().unwrap_or_else(|e| e.into_inner());
            if records == Vec::<(String, String)>::new() {
                m.remove(object);
            } else {
                m.insert(object.to_string(), records);
            }
            ChangeSet::of(ResourceKind::Service, "default", object)
        }

        fn per_object(&self, only: Option<&BTreeSet<String>>) -> PerObject {
            let m = self.0.lock().unwrap_or_else(|e| e.into_inner());
            let objects = m
                .iter()
                .map(|(name, records)| (format!("service/default/{name}"), records))
                .filter(|(r, _)| only.is_none_or(|o| o.contains(r)))
                .map(|(resource, records)| ObjectEndpoints {
                    order: resource.clone(),
                    endpoints: records
                        .iter()
                        .map(|(n, t)| {
                            Endpoint::new(n, RecordType::A, [t.as_str()]).with_label(label::RESOURCE, &resource)
                        })
                        .collect(),
                    resource,
                })
                .collect();
            PerObject::new(objects, BTreeSet::new(), BTreeMap::new())
        }
    }

    #[async_trait]
    impl Source for Objects {
        fn name(&self) -> &str {
            "service"
        }
        fn watched_kinds(&self) -> Vec<ResourceKind> {
            vec![ResourceKind::Service]
        }
        async fn endpoints(&self, _: &ClusterStore) -> Result<Vec<Endpoint>, SourceError> {
            let all = self
                .per_object(None)
                .objects
                .into_iter()
                .flat_map(|o| o.endpoints)
                .collect();
            Ok(self.merge(all))
        }
        fn affected(&self, _: &ClusterStore, changes: &ChangeSet) -> Option<BTreeSet<String>> {
            Some(
                changes
                    .of_kind(ResourceKind::Service)
                    .map(|k| format!("service/default/{}", k.name))
                    .collect(),
            )
        }
        async fn evaluate_objects(
            &self,
            _: &ClusterStore,
            only: Option<&BTreeSet<String>>,
        ) -> Result<Option<PerObject>, SourceError> {
            Ok(Some(self.per_object(only)))
        }
        fn merge(&self, endpoints: Vec<Endpoint>) -> Vec<Endpoint> {
            let mut out: Vec<Endpoint> = Vec::new();
            for e in endpoints {
                match out.iter_mut().find(|o| o.dns_name == e.dns_name) {
                    Some(first) => first.targets.0.extend(e.targets.0),
                    None => out.push(e),
                }
            }
            out
        }
    }

    struct Shared(std::sync::Arc<Objects>);

    #[async_trait]
    impl Source for Shared {
        fn name(&self) -> &str {
            self.0.name()
        }
        fn watched_kinds(&self) -> Vec<ResourceKind> {
            self.0.watched_kinds()
        }
        async fn endpoints(&self, c: &ClusterStore) -> Result<Vec<Endpoint>, SourceError> {
            self.0.endpoints(c).await
        }
        fn affected(&self, c: &ClusterStore, changes: &ChangeSet) -> Option<BTreeSet<String>> {
            self.0.affected(c, changes)
        }
        async fn evaluate_objects(
            &self,
            c: &ClusterStore,
            only: Option<&BTreeSet<String>>,
        ) -> Result<Option<PerObject>, SourceError> {
            self.0.evaluate_objects(c, only).await
        }
        fn merge(&self, endpoints: Vec<Endpoint>) -> Vec<Endpoint> {
            self.0.merge(endpoints)
        }
    }

    fn texts(eps: &[Endpoint]) -> Vec<String> {
        let mut v: Vec<String> = eps
            .iter()
            .map(|e| format!("{} {} {}", e.dns_name, e.targets.join(","), e.resource().unwrap_or("")))
            .collect();
        v.sort();
        v
    }

    #[tokio::test]
    async fn a_change_yields_the_names_it_touched_as_a_full_evaluation_would() -> Result<(), SourceError> {
        let objects = std::sync::Arc::new(Objects::default());
        objects.set(
            "a",
            &[("a.example.org", "192.0.2.1"), ("shared.example.org", "192.0.2.1")],
        );
        objects.set(
            "b",
            &[("b.example.org", "192.0.2.2"), ("shared.example.org", "192.0.2.2")],
        );
        objects.set("c", &[("c.example.org", "192.0.2.3")]);
        let pipeline = Pipeline::new(vec![Box::new(Shared(objects.clone()))], PipelineConfig::default());
        let cluster = ClusterStore::new();
        let (full, mut index) = pipeline.evaluate_indexed(&cluster).await?;
        assert_eq!(
            texts(&full.endpoints),
            texts(&pipeline.endpoints(&cluster).await?.endpoints)
        );

        // b moves from b.example.org to b2.example.org and changes its address.
        let changes = objects.set(
            "b",
            &[("b2.example.org", "192.0.2.20"), ("shared.example.org", "192.0.2.20")],
        );
        let Some(changed) = pipeline.evaluate_changes(&cluster, &mut index, &changes).await? else {
            panic!("a change to one object must not need a full evaluation");
        };
        let names: Vec<&str> = changed.names.iter().map(String::as_str).collect();
        assert_eq!(names, ["b.example.org", "b2.example.org", "shared.example.org"]);
        let full = pipeline.endpoints(&cluster).await?;
        let expected: Vec<Endpoint> = full
            .endpoints
            .into_iter()
            .filter(|e| changed.names.contains(e.dns_name.as_str()))
            .collect();
        assert_eq!(texts(&changed.output.endpoints), texts(&expected));
        assert!(
            texts(&changed.output.endpoints)
                .contains(&"shared.example.org 192.0.2.1,192.0.2.20 service/default/a".to_string()),
            "the shared name gathers the untouched object too, which stays first: {:?}",
            texts(&changed.output.endpoints)
        );

        // Deleting c: its name is affected and nobody asks for it any more.
        let changes = objects.set("c", &[]);
        let changed = pipeline.evaluate_changes(&cluster, &mut index, &changes).await?;
        let changed = changed.map(|c| (c.names.into_iter().collect::<Vec<_>>(), c.output.endpoints.len()));
        assert_eq!(changed, Some((vec!["c.example.org".to_string()], 0)));

        // Nothing of ours changed: nothing to plan.
        let other = ChangeSet::of(ResourceKind::Node, "", "n1");
        let changed = pipeline.evaluate_changes(&cluster, &mut index, &other).await?;
        assert!(changed.is_some_and(|c| c.names.is_empty() && c.output.endpoints.is_empty()));

        assert!(
            pipeline
                .evaluate_changes(&cluster, &mut index, &ChangeSet::everything())
                .await?
                .is_none()
        );
        Ok(())
    }
}
