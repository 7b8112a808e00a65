//! The source pipeline: every configured source, then the wrappers ([`wrappers`]) over their
//! endpoints, in two ways that give the same endpoints for every name they plan.
//!
//! A full evaluation ([`Pipeline::evaluate`]) evaluates every object of every source, merges each source's
//! objects and runs the wrappers; given a [`DesiredIndex`], it also keeps each object's endpoints (before the
//! merge) and which objects publish which name. A change then goes through [`Pipeline::evaluate_changes`]:
//! each source names the objects the changed ones affect ([`Source::affected`]), only those are evaluated
//! again, and the names they published before or publish now are the affected names. Every object that
//! publishes one of those names is gathered, merged and run through the wrappers exactly as a full
//! evaluation would; merges and wrappers treat each name on its own, so the endpoints of the affected names
//! come out as a full evaluation would make them.

mod index;
#[cfg(feature = "test-support")]
pub mod testing;

use std::collections::{BTreeMap, BTreeSet};

use extdns_endpoint::Endpoint;
use extdns_endpoint::name::name_key;
use extdns_informer::{ChangeSet, ClusterStore, ResourceKind};

pub mod wrappers;

pub use index::DesiredIndex;
use index::ObjectIndex;

use crate::{Failures, Objects, Source, SourceError};
pub use wrappers::PipelineConfig;
use wrappers::Tagged;

/// The desired endpoints and what the pipeline dropped, for the `source_invalid_endpoints` and
/// `source_deduplicated_endpoints` metrics. Both maps are keyed by (record type, source name).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PipelineOutput {
    /// The endpoints to plan from.
    pub endpoints: Vec<Endpoint>,
    /// Endpoints dropped as invalid, counted by (name, type), for one warning each.
    pub invalid: BTreeMap<(String, String), usize>,
    /// Endpoints merged into others, counted by (name, type), for the debug log.
    pub deduplicated: BTreeMap<(String, String), usize>,
    /// The objects that could not be evaluated (a source said so, or one of their endpoints was invalid),
    /// with why when known: the controller keeps their records as they are.
    pub failed: Failures,
    /// How many objects each source could not evaluate, every source named (0 included), for the
    /// `extdns_source_objects_failed` gauge.
    pub failed_by_source: BTreeMap<String, usize>,
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

/// All configured sources and the wrappers around them.
pub struct Pipeline {
    sources: Vec<Box<dyn Source>>,
    config: PipelineConfig,
}

impl std::fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.sources.iter().map(|s| s.name()).collect();
        f.debug_struct("Pipeline")
            .field("sources", &names)
            .field("config", &self.config)
            .finish()
    }
}

impl Pipeline {
    /// A pipeline over `sources` with `config`'s wrappers.
    pub fn new(sources: Vec<Box<dyn Source>>, mut config: PipelineConfig) -> Self {
        config.nat64_networks.retain(|net| {
            let ok = net.prefix_len() == 96;
            if !ok {
                tracing::warn!(network = %net, "ignoring NAT64 network: it must be a /96");
            }
            ok
        });
        Pipeline { sources, config }
    }

    /// Its wrappers' configuration.
    pub fn config(&self) -> &PipelineConfig {
        &self.config
    }

    /// The kinds any source reads, each once.
    pub fn watched_kinds(&self) -> Vec<ResourceKind> {
        let kinds: BTreeSet<ResourceKind> = self.sources.iter().flat_map(|s| s.watched_kinds()).collect();
        kinds.into_iter().collect()
    }

    /// The kinds some source reads whole though the kind table keeps them on demand ([`Source::reads_whole`]):
    /// what the live view must keep every object of.
    pub fn reads_whole(&self) -> BTreeSet<ResourceKind> {
        self.sources.iter().flat_map(|s| s.reads_whole()).collect()
    }

    /// Evaluates every source and runs the wrappers; with `index`, also keeps what incremental syncs update
    /// (each object's endpoints and which objects publish which name). An error from any source is returned
    /// as is: the controller then plans nothing this round.
    pub async fn evaluate(
        &self,
        cluster: &ClusterStore,
        index: Option<&mut DesiredIndex>,
    ) -> Result<PipelineOutput, SourceError> {
        let mut tagged = Tagged::default();
        let mut failed = Vec::with_capacity(self.sources.len());
        let mut objects_by_source = Vec::with_capacity(self.sources.len());
        for (i, source) in self.sources.iter().enumerate() {
            let evaluation = evaluate_one(source.as_ref(), cluster, Objects::All).await?;
            let mut all = Vec::with_capacity(evaluation.objects.iter().map(|o| o.endpoints.len()).sum());
            let mut objects = index.is_some().then(ObjectIndex::default);
            for object in evaluation.objects {
                match objects.as_mut() {
                    Some(objects) => {
                        all.extend(object.endpoints.iter().cloned());
                        objects.insert(object, None);
                    }
                    None => all.extend(object.endpoints),
                }
            }
            tagged.extend(i, source.merge(all));
            if let Some(objects) = objects.as_mut() {
                objects.failed.clone_from(&evaluation.failed);
            }
            objects_by_source.extend(objects);
            failed.push(evaluation.failed);
        }
        if let Some(index) = index {
            *index = DesiredIndex::new(objects_by_source);
        }
        Ok(self.finish(tagged, failed))
    }

    /// Brings `index` up to date with `changes` and returns the endpoints of the names they affect, as a full
    /// evaluation would make them; `None` when only a full evaluation can tell (everything changed, or a
    /// source cannot say what a change affects).
    pub async fn evaluate_changes(
        &self,
        cluster: &ClusterStore,
        index: &mut DesiredIndex,
        changes: &ChangeSet,
    ) -> Result<Option<ChangedOutput>, SourceError> {
        if changes.is_everything() || index.len() != self.sources.len() {
            return Ok(None);
        }
        let mut names = BTreeSet::new();
        for (source, objects) in self.sources.iter().zip(index.sources_mut()) {
            let Some(affected) = source.affected(cluster, changes) else {
                return Ok(None);
            };
            if affected.is_empty() {
                continue;
            }
            let evaluation = evaluate_one(source.as_ref(), cluster, Objects::Only(&affected)).await?;
            for object in &affected {
                objects.remove(object, &mut names);
                objects.failed.remove(object);
            }
            for object in evaluation.objects {
                objects.insert(object, Some(&mut names));
            }
            let mut failed = evaluation.failed;
            failed.retain(|k| affected.contains(k));
            objects.failed.extend(failed);
        }

        let mut tagged = Tagged::default();
        let mut failed = Vec::with_capacity(self.sources.len());
        for (i, (source, objects)) in self.sources.iter().zip(index.sources()).enumerate() {
            if !names.is_empty() {
                tagged.extend(i, source.merge(objects.gather(&names)));
            }
            failed.push(objects.failed.clone());
        }
        let mut output = self.finish(tagged, failed);
        output
            .endpoints
            .retain(|e| names.contains(name_key(&e.dns_name).as_ref()));
        Ok(Some(ChangedOutput { names, output }))
    }

    /// The wrappers over every source's endpoints (tagged with the source's index), and the objects each
    /// source could not evaluate (one set per source, in order).
    /// The sources' failures go in first, so the wrappers' validation sees which objects already fail
    /// (and in part: an invalid record of such an object adds its name to what is held).
    fn finish(&self, tagged: Tagged, failed: Vec<Failures>) -> PipelineOutput {
        let names: Vec<&str> = self.sources.iter().map(|s| s.name()).collect();
        let mut out = PipelineOutput::default();
        for (name, set) in names.iter().zip(failed) {
            *out.failed_by_source.entry((*name).to_string()).or_default() += set.len();
            out.failed.extend(set);
        }
        wrappers::process(&self.config, tagged, &names, &mut out);
        out
    }

    /// The wrappers (steps 1 to 6 of [`wrappers`]) on endpoints already collected, each tagged with
    /// the index of its source in `names`.
    pub fn process(&self, tagged: Vec<(usize, Endpoint)>, names: &[&str]) -> PipelineOutput {
        let mut out = PipelineOutput::default();
        wrappers::process(&self.config, tagged.into_iter().collect(), names, &mut out);
        out
    }
}

/// One source's evaluation of `objects`. A source that does not sort out unavailable kinds itself
/// ([`Source::degrades_per_object`]) and reads a kind that cannot be listed publishes nothing and fails
/// every kind it reads: its records are held, none deleted, until the kind can be listed again (which
/// changes everything, so the next sync is a full one).
async fn evaluate_one(
    source: &dyn Source,
    cluster: &ClusterStore,
    objects: Objects<'_>,
) -> Result<crate::Evaluation, SourceError> {
    if !source.degrades_per_object() {
        let kinds = source.watched_kinds();
        if let Some(why) = crate::unavailable_need(cluster, &kinds) {
            let mut failed = Failures::new();
            for kind in kinds {
                failed.insert_kind(kind, why.clone());
            }
            return Ok(crate::Evaluation::new(Vec::new(), failed));
        }
    }
    source.evaluate(cluster, objects).await
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use async_trait::async_trait;
    use extdns_endpoint::RecordType;
    use extdns_informer::ResourceKind;

    use extdns_informer::ObjectKey;

    use super::*;
    use crate::{Evaluation, ObjectEndpoints};

    /// Services of namespace `default`, each asking for the given (name, address) records; the
    /// merge joins the targets of one name, the first object naming the record, as the real sources do.
    #[derive(Default)]
    struct Fake(Mutex<BTreeMap<String, Vec<(String, String)>>>);

    impl Fake {
        fn set(&self, object: &str, records: &[(&str, &str)]) -> ChangeSet {
            let records = records.iter().map(|(n, t)| (n.to_string(), t.to_string())).collect();
            let mut m = self.0.lock().unwrap_or_else(|e| e.into_inner());
            if records == Vec::<(String, String)>::new() {
                m.remove(object);
            } else {
                m.insert(object.to_string(), records);
            }
            ChangeSet::of(service(object))
        }
    }

    fn service(name: &str) -> ObjectKey {
        ObjectKey::new(ResourceKind::Service, "default", name)
    }

    #[async_trait]
    impl Source for Fake {
        fn name(&self) -> &str {
            "service"
        }
        fn watched_kinds(&self) -> Vec<ResourceKind> {
            vec![ResourceKind::Service]
        }
        async fn evaluate(&self, _: &ClusterStore, only: Objects<'_>) -> Result<Evaluation, SourceError> {
            let m = self.0.lock().unwrap_or_else(|e| e.into_inner());
            let objects = m
                .iter()
                .map(|(name, records)| (service(name), records))
                .filter(|(key, _)| only.includes(key))
                .map(|(object, records)| ObjectEndpoints {
                    endpoints: records
                        .iter()
                        .map(|(n, t)| Endpoint::new(n, RecordType::A, [t.as_str()]).with_ref_object(object.clone()))
                        .collect(),
                    object,
                })
                .collect();
            Ok(Evaluation::new(objects, Failures::new()))
        }
        fn affected(&self, _: &ClusterStore, changes: &ChangeSet) -> Option<BTreeSet<ObjectKey>> {
            Some(changes.of_kind(ResourceKind::Service).cloned().collect())
        }
        fn merge(&self, endpoints: Vec<Endpoint>) -> Vec<Endpoint> {
            let mut out: Vec<Endpoint> = Vec::new();
            for mut e in endpoints {
                match out.iter_mut().find(|o| o.dns_name == e.dns_name) {
                    Some(first) => {
                        first.targets.0.extend(e.targets.0);
                        first.ref_objects.append(&mut e.ref_objects);
                    }
                    None => out.push(e),
                }
            }
            out
        }
    }

    struct Shared(std::sync::Arc<Fake>);

    #[async_trait]
    impl Source for Shared {
        fn name(&self) -> &str {
            self.0.name()
        }
        fn watched_kinds(&self) -> Vec<ResourceKind> {
            self.0.watched_kinds()
        }
        async fn evaluate(&self, c: &ClusterStore, only: Objects<'_>) -> Result<Evaluation, SourceError> {
            self.0.evaluate(c, only).await
        }
        fn affected(&self, c: &ClusterStore, changes: &ChangeSet) -> Option<BTreeSet<ObjectKey>> {
            self.0.affected(c, changes)
        }
        fn merge(&self, endpoints: Vec<Endpoint>) -> Vec<Endpoint> {
            self.0.merge(endpoints)
        }
    }

    fn texts(eps: &[Endpoint]) -> Vec<String> {
        let mut v: Vec<String> = eps
            .iter()
            .map(|e| {
                format!(
                    "{} {} {}",
                    e.dns_name,
                    e.targets.join(","),
                    e.resource().unwrap_or_default()
                )
            })
            .collect();
        v.sort();
        v
    }

    #[tokio::test]
    async fn a_change_yields_the_names_it_touched_as_a_full_evaluation_would() -> Result<(), SourceError> {
        let objects = std::sync::Arc::new(Fake::default());
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
        let mut index = DesiredIndex::default();
        let full = pipeline.evaluate(&cluster, Some(&mut index)).await?;
        assert_eq!(
            texts(&full.endpoints),
            texts(&pipeline.evaluate(&cluster, None).await?.endpoints)
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
        let full = pipeline.evaluate(&cluster, None).await?;
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
        let other = ChangeSet::of(ObjectKey::new(ResourceKind::Node, "", "n1"));
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
