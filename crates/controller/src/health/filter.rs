//! What a sync does with the health checks its desired endpoints carry: takes the properties off every
//! endpoint (the plan and the provider never see them), has the table probe each shared name's own
//! targets, and withdraws the unhealthy ones, failing open.

use std::collections::HashSet;

use extdns_endpoint::{Endpoint, RecordType, shared};
use extdns_registry::Snapshot;
use extdns_registry::shared::others_contribute;
use tracing::{debug, warn};

use super::check::HealthProperties;
use super::{HealthTable, ProbeKey};

/// The desired endpoints with the health properties taken off and, with a table, each shared name's
/// unhealthy targets withdrawn. `snapshot` is the read the plan works from (whether another owner
/// publishes targets at the name); `owner` this process's owner id. After a full sync (`full`) the probes
/// no endpoint asks for any more stop.
pub(crate) fn apply(
    desired: Vec<Endpoint>,
    table: Option<&HealthTable>,
    snapshot: &Snapshot,
    owner: &str,
    full: bool,
) -> Vec<Endpoint> {
    let mut wanted = HashSet::new();
    let mut names = HashSet::new();
    let mut out = Vec::with_capacity(desired.len());
    for mut e in desired {
        let Some(props) = HealthProperties::take(&mut e) else {
            out.push(e);
            continue;
        };
        let Some(table) = table else {
            out.push(e);
            continue;
        };
        if !shared::is_shared(&e) {
            debug!(name = %e.dns_name, "a health check on a name not shared is not probed");
            out.push(e);
            continue;
        }
        let check = match props.check() {
            Ok(Some(check)) => check,
            Ok(None) => {
                out.push(e);
                continue;
            }
            Err(error) => {
                warn!(name = %e.dns_name, %error, "the shared name's health check is ignored; its targets stay published");
                out.push(e);
                continue;
            }
        };
        let record = (e.dns_name.to_ascii_lowercase(), e.record_type.clone());
        let healthy: Vec<bool> = e
            .targets
            .iter()
            .map(|t| {
                // Only addresses are probed; anything else (refused for shared names anyway) stays.
                t.ip().is_none_or(|target| {
                    let key = ProbeKey {
                        name: record.0.clone(),
                        target,
                        check: check.clone(),
                    };
                    let healthy = table.watch(&key);
                    wanted.insert(key);
                    healthy
                })
            })
            .collect();
        names.insert(record.clone());
        if let Some(e) = withdraw(e, &healthy, table, &record, || {
            others_contribute(snapshot, &record.0, &record.1, owner)
        }) {
            out.push(e);
        }
    }
    if full && let Some(table) = table {
        table.retain(&wanted, &names);
    }
    out
}

/// `e` without its unhealthy targets (`healthy[i]` for `e.targets[i]`), or `None` when all are: unless
/// no other owner publishes a target at the name (`others`), or the record already fails open, when all
/// of them stay (fail open).
fn withdraw(
    mut e: Endpoint,
    healthy: &[bool],
    table: &HealthTable,
    record: &(String, RecordType),
    others: impl FnOnce() -> bool,
) -> Option<Endpoint> {
    let live = healthy.iter().filter(|h| **h).count();
    if live > 0 {
        table.set_fail_open(record, false);
        if live < healthy.len() {
            let mut flags = healthy.iter();
            e.targets.retain(|_| flags.next().copied().unwrap_or(true));
        }
        return Some(e);
    }
    if healthy.is_empty() || table.fail_open(record) || !others() {
        table.set_fail_open(record, !healthy.is_empty());
        return Some(e);
    }
    debug!(name = %e.dns_name, record_type = %e.record_type, "every own target of the shared name is unhealthy and another owner publishes targets: all withdrawn");
    None
}
