//! What a sync does with the health checks its desired endpoints carry: takes the properties off every
//! endpoint (the plan and the provider never see them), has the table probe each shared name's own
//! targets, and names the unhealthy ones on the endpoint ([`health::UNHEALTHY`]). The registry writes
//! them into this owner's contribution and publishes what every owner's contributions say together: the
//! healthy targets of all owners, or all of them when none is healthy (fail open, decided from the zone
//! alike by every owner, so two owners failing at once never both withdraw).

use std::collections::HashSet;

use extdns_endpoint::{Endpoint, shared};
use extdns_registry::shared::health;
use tracing::{debug, warn};

use super::check::HealthProperties;
use super::{HealthTable, ProbeKey};

/// The desired endpoints with the health properties taken off and, with a table, each shared name's
/// unhealthy targets named on it. After a full sync (`full`) the probes no endpoint asks for any more stop.
pub(crate) fn apply(desired: Vec<Endpoint>, table: Option<&HealthTable>, full: bool) -> Vec<Endpoint> {
    let mut wanted = HashSet::new();
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
        let name = e.dns_name.to_ascii_lowercase();
        let unhealthy: Vec<String> = e
            .targets
            .iter()
            .filter(|t| {
                // Only addresses are probed; anything else (refused for shared names anyway) stays.
                t.ip().is_some_and(|target| {
                    let key = ProbeKey {
                        name: name.clone(),
                        target,
                        check: check.clone(),
                    };
                    let healthy = table.watch(&key);
                    wanted.insert(key);
                    !healthy
                })
            })
            .map(|t| t.to_string())
            .collect();
        health::set_unhealthy(&mut e, unhealthy);
        out.push(e);
    }
    if full && let Some(table) = table {
        table.retain(&wanted);
    }
    out
}
