//! Signatures renewed before they expire: a task of the server wakes every [`RENEW_EVERY`], finds the
//! sets whose signatures have less than half their validity left under the read lock, and signs them
//! again under the write lock a batch at a time, so no moment re-signs a whole zone and queries wait at
//! most for one batch.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use crate::zones::Zones;

/// How often the server looks for signatures to renew: a minute, small beside days of validity.
pub const RENEW_EVERY: Duration = Duration::from_secs(60);

/// Sets re-signed per zone in one pass of [`renew`], so a pass holds the write lock briefly.
pub const RENEW_BATCH: usize = 512;

/// Re-signs, in every signed zone, up to [`RENEW_BATCH`] sets whose signatures are due at `now`; returns
/// how many. The due sets are found under the read lock, and signed under the write lock a batch at a
/// time, so queries wait at most for one batch.
pub fn renew(zones: &Zones, now: u32) -> usize {
    let due: Vec<_> = {
        let set = zones.read();
        set.zones()
            .iter()
            .enumerate()
            .filter_map(|(i, z)| z.signing().map(|s| (i, s.due(now, RENEW_BATCH))))
            .filter(|(_, d)| !d.is_empty())
            .collect()
    };
    let mut renewed = 0;
    if due.is_empty() {
        return 0;
    }
    let mut set = zones.write();
    for (index, sets) in due {
        let Some(zone) = set.zones_mut().get_mut(index) else {
            continue;
        };
        for (owner, record_type) in sets {
            match zone.resign(&owner, record_type, now) {
                Ok(true) => renewed += 1,
                Ok(false) => {}
                Err(e) => warn!(zone = %zone.origin(), %owner, ?record_type, error = %e, "cannot renew a signature"),
            }
        }
    }
    debug!(renewed, "signatures renewed");
    renewed
}

/// Renews signatures every `every` until `shutdown`.
pub async fn renew_until(zones: Arc<Zones>, every: Duration, shutdown: CancellationToken) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            _ = tick.tick() => {
                let now = crate::dnssec::now();
                renew(&zones, now);
            }
        }
    }
}
