//! Endpoints as compact lines, for tests to compare.

use extdns_endpoint::Endpoint;
use extdns_informer::ClusterStore;

use crate::SourceExt;

/// `name TYPE target,target` lines, sorted: endpoints in a form compact to compare.
pub fn lines(eps: &[Endpoint]) -> Vec<String> {
    let mut v: Vec<String> = eps
        .iter()
        .map(|e| format!("{} {} {}", e.dns_name, e.record_type, e.targets.join(",")))
        .collect();
    v.sort();
    v
}

/// One endpoint as a line sources' table tests compare: `name TYPE targets` (targets sorted), then
/// `ttl=N` when configured, the provider-specific properties and `set=<id>` when set.
pub fn render(e: &Endpoint) -> String {
    let mut targets: Vec<&str> = e.targets.iter().map(|t| t.as_str()).collect();
    targets.sort_unstable();
    let mut s = format!("{} {} {}", e.dns_name, e.record_type, targets.join(","));
    if e.record_ttl.is_configured() {
        s.push_str(&format!(" ttl={}", e.record_ttl.0));
    }
    for p in e.provider_specific.iter() {
        s.push_str(&format!(" {}={}", p.name, p.value));
    }
    if !e.set_identifier.is_empty() {
        s.push_str(&format!(" set={}", e.set_identifier));
    }
    s
}

/// [`render`], then ` resource=` the `resource` label when the endpoint has one.
pub fn render_labelled(e: &Endpoint) -> String {
    let mut s = render(e);
    if let Some(r) = e.resource() {
        s.push_str(&format!(" resource={r}"));
    }
    s
}

/// The endpoints [`render`]ed and sorted.
pub fn rendered(endpoints: &[Endpoint]) -> Vec<String> {
    sorted(endpoints.iter().map(render))
}

/// The endpoints [`render_labelled`] and sorted.
pub fn rendered_labelled(endpoints: &[Endpoint]) -> Vec<String> {
    sorted(endpoints.iter().map(render_labelled))
}

fn sorted(lines: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = lines.collect();
    out.sort();
    out
}

/// `source`'s endpoints over `cluster`, merged; panics when the evaluation fails or any object fails.
pub fn evaluate_ok<S: SourceExt + ?Sized>(source: &S, cluster: &ClusterStore) -> Vec<Endpoint> {
    let out = match futures::executor::block_on(source.evaluate_all(cluster)) {
        Ok(out) => out,
        Err(e) => panic!("{}: {e}", source.name()),
    };
    assert!(out.failed.is_empty(), "{}: {:?}", source.name(), out.failed);
    out.endpoints
}

/// Panics, naming `context`, unless `got` holds the lines of `expected` in any order.
pub fn assert_records(context: &str, got: Vec<String>, expected: &[&str]) {
    let got = sorted(got.into_iter());
    let want = sorted(expected.iter().map(|s| s.to_string()));
    assert_eq!(got, want, "{context}");
}
