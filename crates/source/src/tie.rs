//! Which of several objects' equal endpoints publishes a record, when they differ only in TTL (and so in the
//! `resource` label the ownership TXT records).
//!
//! external-dns: the plan's conflict resolver (`plan/conflict.go`) never sees such a tie. Its deduplication
//! (`source/wrappers/dedupsource.go`) keeps the first endpoint of each name, type, set identifier and targets,
//! and the order endpoints reach it is random per sync: sources list objects from the informer's index (a
//! set of keys, Go map order), and `endpoint.MergeEndpoints` returns its Go map's values. Only a configured
//! TTL makes its plan update an existing record, so with one configured TTL its zone settles on that object;
//! with two different configured TTLs it is not stable (each sync may switch the record). When a record is
//! being updated and several candidates survive, its `ResolveUpdate` keeps the one of the resource that
//! holds the record, and `ResolveCreate` takes the first of equal targets.
//!
//! extdns: objects arrive in object order (namespace, then name) and [`configured_ttl_first`] picks the
//! endpoint external-dns settles on; so the choice is the same every sync.

use extdns_endpoint::{Endpoint, RecordType, Target};

/// Puts the endpoint with a configured TTL first among endpoints that differ only in TTL, so it is the one
/// the pipeline's deduplication keeps (with its TTL and its route's resource label). That happens when two
/// objects of one source publish the same name, type and targets and only one has a `ttl` annotation, e.g. a
/// route naming `*.apps.example.org` and an annotated one inheriting that listener hostname.
///
/// external-dns keeps whichever comes first in Go map order, i.e. a random one each sync; but only a
/// configured TTL makes it update an existing record, so its zone settles on the endpoint with the TTL. extdns
/// picks that one at once. Among several with a TTL, the first object (by namespace and name) wins.
pub fn configured_ttl_first(mut endpoints: Vec<Endpoint>) -> Vec<Endpoint> {
    // The identity the deduplication uses: everything but TTL, labels and provider-specific properties.
    fn key(e: &Endpoint) -> (&str, &RecordType, &str, &[Target]) {
        (&e.dns_name, &e.record_type, &e.set_identifier, &e.targets[..])
    }
    // Positions grouped by key; the stable sort keeps each group in output order.
    let mut order: Vec<usize> = (0..endpoints.len()).collect();
    order.sort_by(|&a, &b| key(&endpoints[a]).cmp(&key(&endpoints[b])));
    let mut swaps = Vec::new();
    for group in order.chunk_by(|&a, &b| key(&endpoints[a]) == key(&endpoints[b])) {
        let [first, rest @ ..] = group else { continue };
        if endpoints[*first].record_ttl.is_configured() {
            continue;
        }
        if let Some(winner) = rest.iter().find(|&&i| endpoints[i].record_ttl.is_configured()) {
            swaps.push((*first, *winner));
        }
    }
    for (a, b) in swaps {
        endpoints.swap(a, b);
    }
    endpoints
}
