//! Several Services may publish the same name. external-dns merges their targets into one record, owned
//! (labels, TTL, provider-specific properties) by the Service whose `resource` label sorts first, so the
//! owner recorded by the TXT registry does not change from one sync to the next. Records written without
//! a `resource` label (`--fqdn-target-template`, `--compatibility`) sort first, as an empty label does, and
//! own what they share: the merged record keeps no label. Here the first record keeps naming what it named
//! ([`extdns_endpoint::ObjectRefs::append`]): that Service's key, which its `resource` label is rendered
//! from where it is written, or none. CNAMEs are never merged this way: a name has one alias, and the plan's conflict resolution picks among competing ones; only
//! identical aliases (same first target and TTL) collapse into one record.
//!
//! external-dns sorts every endpoint by its `resource` label, merges, re-sorts and merges again. Here the
//! source's `merge` sorts them by that label once ([`by_resource`], compared without rendering it; a stable
//! sort over Services that arrive in object order, nearly that order already; records naming no object
//! first, as an empty label sorts first), and both merges happen in one pass keyed by borrowed strings, so 20,000
//! records cost no key allocation.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::collections::hash_map::Entry;

use extdns_endpoint::{Endpoint, RecordType, Ttl};
// Seeded per process, so names chosen by cluster users cannot be crafted to collide.
use foldhash::fast::RandomState;

/// What makes two records one: name, type and set identifier; for a CNAME also its TTL and first target.
type Key<'a> = (&'a str, &'a RecordType, &'a str, Option<(Ttl, &'a str)>);

/// The order of the `resource` labels two records will be written with: of the objects they name (records
/// naming none first, as external-dns sorts a missing label as empty), without rendering either.
pub(crate) fn by_resource(a: &Endpoint, b: &Endpoint) -> Ordering {
    match (a.ref_objects.named(), b.ref_objects.named()) {
        (Some(a), Some(b)) => a.cmp_resource_label(b),
        (a, b) => a.is_some().cmp(&b.is_some()),
    }
}

/// Merge `endpoints`, which must come in [`by_resource`] order, each with sorted, deduplicated targets.
/// The record a later one merges into keeps naming what it named (its first object, or none); the other's
/// objects follow.
pub(crate) fn merge_services(endpoints: Vec<Endpoint>) -> Vec<Endpoint> {
    debug_assert!(endpoints.is_sorted_by(|a, b| by_resource(a, b).is_le()));
    debug_assert!(endpoints.iter().all(|e| e.targets.windows(2).all(|t| t[0] < t[1])));
    // Where each record goes: its own index, or the index of the earlier record it merges into.
    let mut into: Vec<Option<usize>> = Vec::with_capacity(endpoints.len());
    {
        let mut first: HashMap<Key<'_>, usize, RandomState> =
            HashMap::with_capacity_and_hasher(endpoints.len(), RandomState::default());
        for (i, e) in endpoints.iter().enumerate() {
            let alias = if e.record_type == RecordType::Cname {
                // The smallest target, which is the first once targets are sorted: the same alias is
                // recognised whatever order its targets were listed in.
                match e.targets.iter().min() {
                    Some(t) => Some((e.record_ttl, t.as_str())),
                    None => {
                        into.push(None);
                        continue;
                    }
                }
            } else {
                None
            };
            let key = (e.dns_name.as_str(), &e.record_type, e.set_identifier.as_str(), alias);
            into.push(Some(match first.entry(key) {
                Entry::Occupied(o) => *o.get(),
                Entry::Vacant(v) => *v.insert(i),
            }));
        }
    }
    // Fold merged records into their owner (always an earlier one), then drop them in one compaction.
    // Records arrive with sorted, deduplicated targets; only owners that took in others need sorting again.
    let mut endpoints = endpoints;
    let mut grown: Vec<usize> = Vec::new();
    for (i, dest) in into.iter_mut().enumerate() {
        match *dest {
            Some(d) if d != i => {
                let (head, tail) = endpoints.split_at_mut(i);
                let (owner, merged) = (&mut head[d], &mut tail[0]);
                owner.targets.append(&mut merged.targets.0);
                owner.ref_objects.append(&mut merged.ref_objects);
                grown.push(d);
                *dest = None;
            }
            _ => {}
        }
    }
    for d in grown {
        endpoints[d].targets.normalize();
    }
    let mut keep = into.iter().map(Option::is_some);
    endpoints.retain(|_| keep.next().unwrap_or(false));
    endpoints
}

#[cfg(test)]
mod tests {
    use super::*;
    use extdns_informer::ObjectKey;

    /// A record at `x.example.com` of the Service `resource` names (of no object when empty).
    /// `resource` may be prefixed with `~`: the record only references that Service, naming no object, as
    /// `--fqdn-target-template` and `--compatibility` records do.
    fn x(rt: RecordType, targets: &[&str], resource: &str, ttl: i64) -> Endpoint {
        let mut e = Endpoint::new("x.example.com", rt, targets.iter().copied()).with_ttl(Ttl(ttl));
        e.targets.normalize();
        let (referenced_only, resource) = match resource.strip_prefix('~') {
            Some(r) => (true, r),
            None => (false, resource),
        };
        if referenced_only {
            e.ref_objects.reference_only();
        }
        match ObjectKey::from_resource_label(resource) {
            Some(object) => e.with_ref_object(object),
            None => e,
        }
    }

    /// Merges `eps` and checks that one record is left.
    fn merged_into_one(eps: Vec<Endpoint>) -> Endpoint {
        let mut out = merge_services(eps);
        assert_eq!(out.len(), 1, "{out:?}");
        out.remove(0)
    }

    #[test]
    fn shared_name_is_merged_and_owned_by_the_first_resource() {
        let e = merged_into_one(vec![
            x(RecordType::A, &["2.2.2.2"], "service/default/a", 60),
            x(RecordType::A, &["1.1.1.1"], "service/default/b", 300),
        ]);
        assert_eq!(e.targets.0, vec!["1.1.1.1", "2.2.2.2"]);
        assert_eq!(e.resource().as_deref(), Some("service/default/a"));
        assert_eq!(e.ref_objects.len(), 2);
        assert_eq!(e.record_ttl, Ttl(60));
    }

    #[test]
    fn shared_cname_names_are_not_merged() {
        let out = merge_services(vec![
            x(RecordType::Cname, &["b.lb.com"], "service/default/a", 0),
            x(RecordType::Cname, &["a.lb.com"], "service/default/b", 0),
        ]);
        assert_eq!(out.len(), 2);
        assert!(out.iter().all(|e| e.targets.len() == 1));
    }

    #[test]
    fn identical_cnames_of_two_services_collapse_into_the_first() {
        let out = merge_services(vec![
            x(RecordType::Cname, &["lb.com", "z.com"], "service/default/a", 0),
            x(RecordType::Cname, &["lb.com"], "service/default/b", 0),
            x(RecordType::Cname, &["lb.com"], "service/default/c", 30),
        ]);
        assert_eq!(out.len(), 2, "a different TTL keeps the alias apart");
        assert_eq!(out[0].resource().as_deref(), Some("service/default/a"));
        assert_eq!(out[0].targets.0, vec!["lb.com", "z.com"]);
    }

    #[test]
    fn records_with_different_set_identifiers_stay_apart() {
        let a = x(RecordType::A, &["1.1.1.1"], "service/default/a", 0).with_set_identifier("eu");
        let b = x(RecordType::A, &["2.2.2.2"], "service/default/b", 0).with_set_identifier("us");
        assert_eq!(merge_services(vec![a, b]).len(), 2);
    }

    #[test]
    fn records_of_no_object_come_first_and_own_what_they_share() {
        let e = merged_into_one(vec![
            x(RecordType::A, &["9.9.9.9"], "", 0),
            x(RecordType::A, &["1.1.1.1"], "service/default/a", 60),
        ]);
        assert_eq!(e.record_ttl, Ttl(0), "the first record's");
        assert_eq!(e.resource(), None, "the first record's: none");
        assert_eq!(e.targets.0, vec!["1.1.1.1", "9.9.9.9"]);
    }

    /// external-dns (`service.go`, §6.2 steps 3 and 6 of the behaviour reference): a target-template record
    /// has no `resource` label, so it sorts before every Service's, and the first keeps its labels and TTL.
    /// Its Service `z` sorting after `a` makes no difference; both Services are still referenced.
    #[test]
    fn a_record_naming_no_object_comes_first_and_owns_what_it_shares() {
        let mut eps = vec![
            x(RecordType::A, &["1.1.1.1"], "service/default/a", 60),
            x(RecordType::A, &["9.9.9.9"], "~service/default/z", 0),
        ];
        eps.sort_by(by_resource);
        let e = merged_into_one(eps);
        assert_eq!(e.resource(), None);
        assert_eq!(e.record_ttl, Ttl(0));
        assert_eq!(e.targets.0, vec!["1.1.1.1", "9.9.9.9"]);
        assert_eq!(e.ref_objects.len(), 2);
    }

    #[test]
    fn merged_targets_are_sorted_and_deduplicated() {
        let e = merged_into_one(vec![
            x(RecordType::A, &["10.0.0.2", "10.0.0.10"], "service/a/a", 0),
            x(RecordType::A, &["10.0.0.2"], "service/a/a", 0),
        ]);
        assert_eq!(e.targets.0, vec!["10.0.0.10", "10.0.0.2"]);
    }

    #[test]
    fn cname_without_targets_is_dropped() {
        assert!(merge_services(vec![x(RecordType::Cname, &[], "service/a/a", 0)]).is_empty());
    }
}
