//! Health of shared names (issue 47 item 5, docs/shared-names.md "Health"): opt-in per name by its
//! `shared-health-check` annotation, each cluster probes its own targets of the name and withdraws a
//! target while it is unhealthy.
//!
//! The prober lives in the controller, not in a source: sources are pure and never dial out (DESIGN.md's
//! layer rules). Each sync hands the table the checks its desired endpoints ask for ([`filter::apply`]);
//! the table runs one task per (name, target, check), and the sync reads the verdicts from it. A target
//! changing state wakes the loop for a full sync at once (`--min-event-sync-interval` apart, as any
//! event), not at the next `--interval`. The verdicts travel in this owner's contribution record
//! (`extdns_registry::shared::health`): fail open, every target published when none of any owner is
//! healthy, is decided there, from the zone, by every owner alike.

mod check;
pub(crate) mod filter;
mod probe;
#[cfg(test)]
mod tests;
mod verdict;

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use tokio::sync::watch;
use tokio::task::AbortHandle;
use tracing::{info, warn};

pub use check::{HealthCheck, HealthCheckError, PROBE_TIMEOUT, Probe};
pub use probe::ProbeFailure;

use crate::Metrics;
use probe::Prober;
use verdict::Verdict;

/// One probed target: the record's name (lower-cased), one of this cluster's targets, and the check.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ProbeKey {
    pub(crate) name: String,
    pub(crate) target: IpAddr,
    pub(crate) check: HealthCheck,
}

/// The verdicts of every probed target, and the probes themselves. Cloning shares the table; dropping
/// the last clone stops every probe.
#[derive(Clone)]
pub struct HealthTable {
    state: Arc<State>,
}

struct State {
    inner: Mutex<Inner>,
    /// Bumped at each transition: the loop's wake-up.
    transitions: watch::Sender<u64>,
    metrics: Option<Arc<Metrics>>,
    /// Whether probes run; tests of the verdicts set them by hand and dial nothing.
    probing: bool,
}

#[derive(Default)]
struct Inner {
    probes: HashMap<ProbeKey, Slot>,
    /// How many of `probes` are unhealthy, kept at each insertion, removal and transition so the gauge
    /// costs nothing per probe (a recount per result was quadratic in the targets at the first sync).
    unhealthy: usize,
}

impl Inner {
    /// The targets by state: (healthy, unhealthy).
    fn counts(&self) -> (usize, usize) {
        (self.probes.len().saturating_sub(self.unhealthy), self.unhealthy)
    }
}

struct Slot {
    verdict: Verdict,
    task: Option<AbortHandle>,
}

impl Drop for State {
    fn drop(&mut self) {
        let inner = self.inner.get_mut().unwrap_or_else(PoisonError::into_inner);
        for slot in inner.probes.values() {
            if let Some(task) = &slot.task {
                task.abort();
            }
        }
    }
}

impl std::fmt::Debug for HealthTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HealthTable")
            .field("probes", &self.state.lock().probes.len())
            .finish()
    }
}

impl HealthTable {
    /// An empty table; `metrics` counts the probes (`extdns_shared_health_probes_total{result}`) and the
    /// targets by state (`extdns_shared_health_targets{state}`).
    pub fn new(metrics: Option<Arc<Metrics>>) -> Self {
        HealthTable {
            state: Arc::new(State {
                inner: Mutex::new(Inner::default()),
                transitions: watch::Sender::new(0),
                metrics,
                probing: true,
            }),
        }
    }

    /// A table that starts no probe: verdicts change only as a test sets them.
    #[cfg(test)]
    pub(crate) fn idle() -> Self {
        Self::idle_counting(None)
    }

    /// [`HealthTable::idle`], counting into `metrics`.
    #[cfg(test)]
    pub(crate) fn idle_counting(metrics: Option<Arc<Metrics>>) -> Self {
        HealthTable {
            state: Arc::new(State {
                inner: Mutex::new(Inner::default()),
                transitions: watch::Sender::new(0),
                metrics,
                probing: false,
            }),
        }
    }

    /// Changes at each transition of a target: a full sync should follow.
    pub fn transitions(&self) -> watch::Receiver<u64> {
        self.state.transitions.subscribe()
    }

    /// Whether `key`'s target is healthy, starting its probe when it has none (a new target is healthy
    /// until its probes say otherwise). Outside a runtime nothing is probed.
    pub(crate) fn watch(&self, key: &ProbeKey) -> bool {
        let mut inner = self.state.lock();
        if let Some(slot) = inner.probes.get(key) {
            return slot.verdict.healthy();
        }
        let task = tokio::runtime::Handle::try_current()
            .ok()
            .filter(|_| self.state.probing)
            .and_then(|rt| start(&rt, Arc::downgrade(&self.state), key.clone()));
        inner.probes.insert(
            key.clone(),
            Slot {
                verdict: Verdict::default(),
                task,
            },
        );
        // Set under the lock, so two updates never land in the other order.
        self.state.observe_targets(inner.counts());
        drop(inner);
        true
    }

    /// Stops the probes not in `wanted` (after a full sync: what no desired endpoint asks for any more).
    pub(crate) fn retain(&self, wanted: &HashSet<ProbeKey>) {
        let mut inner = self.state.lock();
        let mut unhealthy_gone = 0;
        inner.probes.retain(|key, slot| {
            let keep = wanted.contains(key);
            if !keep {
                if let Some(task) = &slot.task {
                    task.abort();
                }
                unhealthy_gone += usize::from(!slot.verdict.healthy());
            }
            keep
        });
        inner.unhealthy = inner.unhealthy.saturating_sub(unhealthy_gone);
        // Set under the lock, so two updates never land in the other order.
        self.state.observe_targets(inner.counts());
        drop(inner);
    }
}

impl State {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A poisoned lock only means a panic while holding it; the verdicts are still usable.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// One probe's result; a transition is logged, counted and wakes the loop.
    fn record(&self, key: &ProbeKey, result: Result<(), ProbeFailure>) {
        if let Some(m) = &self.metrics {
            m.count_health_probe(result.is_ok());
        }
        let mut inner = self.lock();
        let Some(slot) = inner.probes.get_mut(key) else {
            return;
        };
        let Some(healthy) = slot.verdict.observe(result.is_ok(), key.check.threshold) else {
            return;
        };
        if healthy {
            inner.unhealthy = inner.unhealthy.saturating_sub(1);
        } else {
            inner.unhealthy += 1;
        }
        self.observe_targets(inner.counts());
        drop(inner);
        match result {
            Ok(()) => info!(name = %key.name, target = %key.target, "shared name's target healthy again: published"),
            Err(failure) => warn!(
                name = %key.name,
                target = %key.target,
                failures = key.check.threshold,
                error = %failure,
                cause = ?std::error::Error::source(&failure),
                "shared name's target unhealthy: withdrawn while it stays so, unless no target of the name is healthy (fail open)"
            ),
        }
        self.transitions.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Sets the gauge of targets by state to `(healthy, unhealthy)`, as the table counts them.
    fn observe_targets(&self, (healthy, unhealthy): (usize, usize)) {
        if let Some(m) = &self.metrics {
            m.set_health_targets(healthy, unhealthy);
        }
    }
}

/// Starts `key`'s probe task: a probe at once, then one every interval, until the table drops it.
fn start(rt: &tokio::runtime::Handle, state: Weak<State>, key: ProbeKey) -> Option<AbortHandle> {
    let timeout = PROBE_TIMEOUT.min(key.check.interval);
    let prober = match Prober::new(&key.name, key.target, &key.check.probe, timeout) {
        Ok(p) => p,
        Err(error) => {
            warn!(name = %key.name, target = %key.target, %error, "the target cannot be probed; it stays published");
            return None;
        }
    };
    let task = rt.spawn(async move {
        let mut ticks = tokio::time::interval(key.check.interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            let result = prober.probe().await;
            let Some(state) = state.upgrade() else {
                return;
            };
            state.record(&key, result);
        }
    });
    Some(task.abort_handle())
}
