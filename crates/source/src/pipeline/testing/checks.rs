//! Checks of [`Source::affected`] and the incremental path against full evaluations, and of what one
//! evaluation reads and fails.

use std::collections::{BTreeMap, BTreeSet};

use extdns_endpoint::Endpoint;
use extdns_endpoint::name::name_key;
use extdns_informer::{ChangeSet, ClusterStore, ObjectKey};

use crate::{ChangedOutput, DesiredIndex, Objects, Pipeline, Source, SourceExt};

/// For sources' tests (feature `test-support`): takes `changes` from `before` to `after` through `pipeline`'s
/// incremental path and checks it against full evaluations: every name whose endpoints changed is planned, and
/// the planned names' endpoints and the objects that failed are exactly what a full evaluation makes. Panics
/// with `context` in the message; returns what the incremental path produced.
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
    let mut index = DesiredIndex::default();
    let full_before = match pipeline.evaluate(before, Some(&mut index)).await {
        Ok(x) => x,
        Err(e) => panic!("{context}: {e}"),
    };
    let incremental = match pipeline.evaluate_changes(after, &mut index, changes).await {
        Ok(Some(c)) => c,
        Ok(None) => panic!("{context}: a single change must not need a full evaluation"),
        Err(e) => panic!("{context}: {e}"),
    };
    let full_after = match pipeline.evaluate(after, None).await {
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

/// For sources' tests (feature `test-support`): checks `source`'s answer to which objects `changes` from
/// `before` to `after` affect. Every object in `must_change` changed (so a test cannot pass by changing
/// nothing), every object whose endpoints changed is named, and none of `unrelated` is. Objects are named as
/// [`endpoints_by_object`] names them. Panics with `context` in the message.
pub async fn check_affected(
    source: &dyn Source,
    before: &ClusterStore,
    after: &ClusterStore,
    changes: &ChangeSet,
    must_change: &[impl AsRef<str>],
    unrelated: &[impl AsRef<str>],
    context: &str,
) {
    let old = endpoints_by_object(source, before).await;
    let new = endpoints_by_object(source, after).await;
    let moved: BTreeSet<&String> = old
        .keys()
        .chain(new.keys())
        .filter(|r| old.get(*r) != new.get(*r))
        .collect();
    for r in must_change.iter().map(AsRef::as_ref) {
        assert!(
            moved.iter().any(|m| m.as_str() == r),
            "{context}: {r} should have changed: {moved:?}"
        );
    }
    let Some(affected) = source.affected(after, changes) else {
        panic!("{context}: the source must name the affected objects");
    };
    let affected: BTreeSet<String> = affected.iter().map(ToString::to_string).collect();
    for r in &moved {
        assert!(
            affected.contains(r.as_str()),
            "{context}: {r} changed but is not affected: {affected:?}"
        );
    }
    for r in unrelated.iter().map(AsRef::as_ref) {
        assert!(
            !affected.contains(r),
            "{context}: {r} is unrelated but affected: {affected:?}"
        );
    }
}

/// Each object's endpoints (object references included), and " failed" for the objects that failed, by
/// object: what to compare before and after a change.
pub async fn endpoints_by_object(source: &dyn Source, cluster: &ClusterStore) -> BTreeMap<String, String> {
    let evaluation = match source.evaluate(cluster, Objects::All).await {
        Ok(e) => e,
        Err(e) => panic!("{}: {e}", source.name()),
    };
    let mut out: BTreeMap<String, String> = evaluation
        .objects
        .into_iter()
        .map(|o| (o.object.to_string(), format!("{:?}", o.endpoints)))
        .collect();
    for (f, _) in evaluation.failed.iter() {
        out.entry(f.to_string()).or_default().push_str(" failed");
    }
    out
}

/// For sources' tests (feature `test-support`): the objects `source` evaluates when asked for `only` these
/// (an incremental sync's question), in the order it gives them. Blocks on the evaluation, so call it from a
/// plain `#[test]`; panics when the evaluation fails.
pub fn evaluated_objects(source: &dyn Source, cluster: &ClusterStore, only: &[&ObjectKey]) -> Vec<ObjectKey> {
    let only: BTreeSet<ObjectKey> = only.iter().map(|k| (*k).clone()).collect();
    match futures::executor::block_on(source.evaluate(cluster, Objects::Only(&only))) {
        Ok(evaluation) => evaluation.objects.into_iter().map(|o| o.object).collect(),
        Err(e) => panic!("{}: {e}", source.name()),
    }
}

/// For the tests of a source whose objects read nothing but themselves (feature `test-support`): a change
/// of `changed` affects `changed` alone, a change of `other` (an object of a kind the source does not read
/// this way) affects nothing, and an evaluation of `changed` alone reads `changed` alone. Panics naming the
/// step that failed.
pub fn check_reads_only_itself(source: &dyn Source, cluster: &ClusterStore, changed: &ObjectKey, other: &ObjectKey) {
    assert_eq!(
        source.affected(cluster, &ChangeSet::of(changed.clone())),
        Some(BTreeSet::from([changed.clone()])),
        "a change of {changed} re-evaluates it alone"
    );
    assert_eq!(
        source.affected(cluster, &ChangeSet::of(other.clone())),
        Some(BTreeSet::new()),
        "a change of {other} re-evaluates nothing of {}",
        source.name()
    );
    assert_eq!(
        evaluated_objects(source, cluster, &[changed]),
        std::slice::from_ref(changed)
    );
}

/// For sources' tests (feature `test-support`): a full evaluation of `cluster` fails `bad` and nothing else,
/// and the other objects publish exactly the names `published`, in the order the source gives them. Blocks
/// on the evaluation.
pub fn check_fails_alone(source: &dyn Source, cluster: &ClusterStore, bad: &ObjectKey, published: &[&str]) {
    let out = match futures::executor::block_on(source.evaluate_all(cluster)) {
        Ok(out) => out,
        Err(e) => panic!("{}: {e}", source.name()),
    };
    assert!(out.failed.contains(bad), "{bad} fails: {:?}", out.failed);
    assert_eq!(out.failed.len(), 1, "{bad} alone fails: {:?}", out.failed);
    let names: Vec<&str> = out.endpoints.iter().map(|e| e.dns_name.as_str()).collect();
    assert_eq!(names, published, "what the other objects publish");
}
