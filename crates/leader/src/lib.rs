//! Leader election over a `coordination.k8s.io/v1` Lease, so several extdns replicas can run and only one
//! writes DNS.
//!
//! The rules are client-go's (kube-scheduler's flags and defaults), and the fencing is the point: a leader
//! that cannot renew stops acting at its renew deadline, which is shorter than the lease duration a
//! follower waits before taking over, so two replicas never write at once even when the old leader is cut
//! off from the API server. Writers ask [`Leadership::is_leader`] right before each write; the answer is
//! computed from the monotonic clock at that moment, not from the last message the election sent.
//!
//! [`state::Elector`] is the state machine (no IO, tested with made-up instants); [`LeaderElection`] runs
//! it against the API server.
//!
//! ```no_run
//! # async fn demo(client: kube::Client) {
//! use extdns_leader::{ElectionConfig, LeaderElection, LeaseTiming};
//! let config = ElectionConfig::new("extdns", "extdns", "pod-a_1234", LeaseTiming::default());
//! let (election, leadership) = LeaderElection::new(client, config);
//! let shutdown = tokio_util::sync::CancellationToken::new();
//! tokio::spawn(election.run(shutdown.clone()));
//! if leadership.is_leader() { /* write */ }
//! # }
//! ```
//!
//! The timings are checked when they are built, because the fencing depends on their order:
//!
//! ```
//! use std::time::Duration;
//!
//! use extdns_leader::LeaseTiming;
//!
//! let s = Duration::from_secs;
//! assert!(LeaseTiming::new(s(15), s(10), s(2)).is_ok());
//! // A renew deadline as long as the lease would let a cut-off leader write after another took over.
//! assert!(LeaseTiming::new(s(15), s(15), s(2)).is_err());
//! ```

mod election;
mod pod;
pub mod state;

use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

pub use election::{ElectionConfig, LeaderElection};
pub use state::LeaseTiming;

/// Why the election could not be configured or could not reach the lease.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LeaderError {
    /// The timings break the order fencing needs: 0 < retry period < renew deadline < lease duration, and a
    /// lease of at least one second.
    #[error("leader election timing {timing:?} is invalid: {why}")]
    InvalidTiming {
        /// The timings as given.
        timing: LeaseTiming,
        /// Which ordering rule they break.
        why: &'static str,
    },
    /// The API server refused or failed a read, create, replace or watch of the Lease.
    #[error("lease {lease}: {source}")]
    Kube {
        /// The Lease's name.
        lease: String,
        /// Boxed: a `kube::Error` is large and this error travels in every `Result` of the election.
        #[source]
        source: Box<kube::Error>,
    },
    /// A Lease request got no answer within its time budget (bounded so leadership is never assumed late).
    #[error("lease {lease}: no answer from the API server within {timeout:?}")]
    Timeout {
        /// The Lease's name.
        lease: String,
        /// How long the request was given.
        timeout: Duration,
    },
}

/// Whether this replica may write now. Cheap to clone and to ask; every writer holds one.
#[derive(Debug, Clone)]
pub struct Leadership {
    /// `None` without an election (a single replica always leads); else until when this replica leads.
    until: Option<watch::Receiver<Option<Instant>>>,
}

impl Leadership {
    /// No election: this replica is the only one and always leads.
    pub fn always() -> Leadership {
        Leadership { until: None }
    }

    /// Leadership decided elsewhere: the channel carries until when this replica leads (tests hand one to
    /// a controller to play the election).
    pub fn from_watch(rx: watch::Receiver<Option<Instant>>) -> Leadership {
        Leadership { until: Some(rx) }
    }

    fn elected(rx: watch::Receiver<Option<Instant>>) -> Leadership {
        Self::from_watch(rx)
    }

    /// Whether this replica leads at this instant (its last renewal is younger than the renew deadline).
    pub fn is_leader(&self) -> bool {
        match &self.until {
            None => true,
            Some(rx) => rx.borrow().is_some_and(|until| Instant::now() < until),
        }
    }

    /// Whether leader election is on at all.
    pub fn is_elected(&self) -> bool {
        self.until.is_some()
    }

    /// Waits until the election has news (an acquisition, a renewal or a loss), or until its term would run
    /// out unrenewed. Never returns without an election, or once the election has stopped.
    pub async fn changed(&mut self) {
        let Some(rx) = &mut self.until else {
            return std::future::pending().await;
        };
        if rx.has_changed().unwrap_or(false) {
            rx.borrow_and_update();
            return;
        }
        let expiry = *rx.borrow();
        let term_ends = async {
            match expiry {
                Some(until) if Instant::now() < until => tokio::time::sleep_until(until).await,
                _ => std::future::pending().await,
            }
        };
        tokio::select! {
            changed = rx.changed() => {
                if changed.is_err() {
                    std::future::pending::<()>().await;
                }
            }
            _ = term_ends => {}
        }
    }
}

/// This replica's identity in the lease: the host (pod) name and a random suffix, as client-go does, so a
/// pod restarted under the same name is a new holder and does not inherit the old lease.
pub fn identity(hostname: &str, random: u64) -> String {
    format!("{hostname}_{random:016x}")
}

/// The service-account namespace file of a pod.
pub const NAMESPACE_FILE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/// The pod's namespace, from the service-account file's content or else `POD_NAMESPACE`, else
/// `default`; empty values do not count.
pub fn pod_namespace(file: Option<&str>, env: Option<&str>) -> String {
    [file, env]
        .into_iter()
        .flatten()
        .map(str::trim)
        .find(|s| !s.is_empty())
        .unwrap_or("default")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_namespace_comes_from_the_file_then_the_environment_then_default() {
        assert_eq!(pod_namespace(Some("dns\n"), Some("other")), "dns");
        assert_eq!(pod_namespace(Some(" "), Some("other")), "other");
        assert_eq!(pod_namespace(None, Some("other")), "other");
        assert_eq!(pod_namespace(None, Some("")), "default");
        assert_eq!(pod_namespace(None, None), "default");
    }

    #[test]
    fn identities_differ_by_their_random_part() {
        assert_eq!(identity("extdns-abc", 0xff), "extdns-abc_00000000000000ff");
        assert_ne!(identity("p", 1), identity("p", 2));
    }

    #[tokio::test(start_paused = true)]
    async fn leadership_ends_at_its_deadline_without_news() {
        let (tx, rx) = watch::channel(None);
        let mut l = Leadership::elected(rx);
        assert!(!l.is_leader());
        let until = Instant::now() + Duration::from_secs(10);
        tx.send_replace(Some(until));
        assert!(l.is_leader());
        // The news of the acquisition, then the deadline passing, each wake a waiter.
        let start = Instant::now();
        l.changed().await;
        assert_eq!(Instant::now(), start, "news already sent is reported at once");
        assert!(l.is_leader());
        l.changed().await;
        assert!(Instant::now() >= until);
        assert!(!l.is_leader());
        // A renewal wakes a waiter before the old deadline.
        tx.send_replace(Some(Instant::now() + Duration::from_secs(10)));
        l.changed().await;
        assert!(l.is_leader());
        assert!(Leadership::always().is_leader());
        assert!(!Leadership::always().is_elected());
    }
}
