//! What a provider reads, as one sorted text line a record: an assertion then shows the whole zone at once;
//! the records a partial failure refused, one line each; which lines are ownership records, and whose; and
//! whether a failure is the authentication failure a user is meant to see.

use extdns_endpoint::Endpoint;
use extdns_provider::{ChangeFailure, FailureKind, Provider, ProviderError};

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

/// A fake whose zone reads as sorted text lines, one a record (`name TYPE …`): what the whole-controller
/// tests assert on, whichever cloud the fake is.
pub trait ZoneLines {
    /// Every record but SOA and NS, one line each, sorted.
    fn zone_lines(&self) -> Vec<String>;

    /// The records that are not ownership TXT records (those hold `heritage=`).
    fn records(&self) -> Vec<String> {
        let lines = self.zone_lines();
        lines.into_iter().filter(|l| !l.contains("heritage=")).collect()
    }

    /// How many of the records are `owner`'s ownership records.
    fn owned_by(&self, owner: &str) -> usize {
        let label = format!("external-dns/owner={owner}");
        self.zone_lines().iter().filter(|l| l.contains(&label)).count()
    }
}

/// The names of `owner`'s ownership TXT records among `name TYPE …` lines, in their order.
pub fn owned_txt_names(lines: Vec<String>, owner: &str) -> Vec<String> {
    let label = format!("external-dns/owner={owner}");
    lines
        .into_iter()
        .filter(|l| l.contains(" TXT ") && l.contains(&label))
        .filter_map(|l| l.split(' ').next().map(str::to_string))
        .collect()
}

/// Whether `result` is an authentication failure whose message says `says` (the API's own code or words:
/// what tells a user which credential to fix).
pub fn is_auth_failure<T>(result: &Result<T, ProviderError>, says: &str) -> bool {
    matches!(result, Err(ProviderError::Failed { kind: FailureKind::Auth, message, .. }) if message.contains(says))
}
