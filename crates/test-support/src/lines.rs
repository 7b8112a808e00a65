//! What a provider reads, as one sorted text line a record: an assertion then shows the whole zone at once.

use extdns_endpoint::Endpoint;
use extdns_provider::Provider;

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
