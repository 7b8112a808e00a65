//! What a provider reads, as one sorted text line a record: an assertion then shows the whole zone at once;
//! and the records a partial failure refused, one line each.

use extdns_endpoint::Endpoint;
use extdns_provider::{ChangeFailure, Provider};

/// Every record `provider` reads, as sorted `name TYPE ttl target,target…` lines, each ending with what
/// `extra` says of its record (a provider-specific property, say; empty for nothing).
pub async fn read_lines(provider: &dyn Provider, extra: impl Fn(&Endpoint) -> String) -> Vec<String> {
    let records = provider.records().await.unwrap_or_else(|e| panic!("read failed: {e}"));
    let mut lines: Vec<String> = records
        .endpoints
        .iter()
        .map(|e| {
            let targets: Vec<&str> = e.targets.iter().map(|t| t.as_str()).collect();
            let (name, rtype, ttl) = (&e.dns_name, &e.record_type, e.record_ttl.0);
            format!("{name} {rtype} {ttl} {}{}", targets.join(","), extra(e))
        })
        .collect();
    lines.sort();
    lines
}

/// The records a partial failure refused, as `name TYPE` lines in the order it names them.
pub fn refused_lines(failures: &[ChangeFailure]) -> Vec<String> {
    failures
        .iter()
        .map(|f| format!("{} {}", f.key.dns_name, f.key.record_type))
        .collect()
}
