//! Checks of [`Source::affected`] and the incremental path against full evaluations.

use std::collections::{BTreeMap, BTreeSet};

use extdns_endpoint::Endpoint;
use extdns_endpoint::name::name_key;
use extdns_informer::{ChangeSet, ClusterStore};

use crate::{ChangedOutput, DesiredIndex, Objects, Pipeline, Source};

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
