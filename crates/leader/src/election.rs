//! The election against the API server: read the Lease, let [`Elector`] decide, write with the
//! `resourceVersion` read (so two replicas racing for an expired lease cannot both win: the second gets
//! 409 Conflict), and publish whether this replica may act.

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Api;
use kube::api::PostParams;
use kube::api::{WatchEvent, WatchParams};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::state::{Decision, Elector, LeaseTiming};
use crate::{LeaderError, Leadership};

/// How long one lease watch lasts before the API server ends it and it is started again (below the API
/// server's own limit, as client-go's reflectors do).
const WATCH_TIMEOUT_SECS: u32 = 290;

/// Which Lease, and who this replica is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ElectionConfig {
    /// Namespace of the Lease object.
    pub namespace: String,
    /// Name of the Lease object; every replica of one deployment must use the same.
    pub name: String,
    /// Unique per replica (a pod name plus a random suffix).
    pub identity: String,
    /// Lease duration, renew deadline and retry period, already checked.
    pub timing: LeaseTiming,
}

impl ElectionConfig {
    /// The four settings; nothing is checked here beyond what [`LeaseTiming`] checked when built.
    pub fn new(
        namespace: impl Into<String>,
        name: impl Into<String>,
        identity: impl Into<String>,
        timing: LeaseTiming,
    ) -> Self {
        ElectionConfig {
            namespace: namespace.into(),
            name: name.into(),
            identity: identity.into(),
            timing,
        }
    }
}

/// One replica's side of the election; [`LeaderElection::run`] drives it.
pub struct LeaderElection {
    api: Api<Lease>,
    name: String,
    elector: Elector,
    tx: watch::Sender<Option<Instant>>,
    /// Whether the last attempt left this replica leading, so only transitions are logged.
    was_leading: bool,
}

impl LeaderElection {
    /// The election and the handle the writers check. Nothing is sent until [`LeaderElection::run`].
    pub fn new(client: kube::Client, config: ElectionConfig) -> (LeaderElection, Leadership) {
        let (tx, rx) = watch::channel(None);
        let election = LeaderElection {
            api: Api::namespaced(client, &config.namespace),
            name: config.name,
            elector: Elector::new(config.identity, config.timing),
            tx,
            was_leading: false,
        };
        (election, Leadership::elected(rx))
    }

    /// Tries to acquire or renew until `shutdown`, then releases the lease if this replica holds it. Call
    /// it only once the writers have stopped (or give it a token cancelled after them), or the next leader
    /// could start while this one still writes.
    ///
    /// The lease is watched meanwhile, so a follower sees each renewal within milliseconds of it and tries
    /// to take over exactly when the lease runs out by its own clock, not at its next poll; a leader renews
    /// every retry period. While the watch is down (an API server restart, no `watch` permission) followers
    /// read the lease every retry period instead.
    pub async fn run(mut self, shutdown: CancellationToken) {
        let (tx, mut events) = mpsc::channel(16);
        let watching = watch_lease(
            self.api.clone(),
            self.name.clone(),
            self.elector.timing().retry_period,
            tx,
        );
        tokio::select! {
            () = watching => {}
            () = self.elect(&mut events, &shutdown) => {}
        }
        self.release().await;
    }

    async fn elect(&mut self, events: &mut mpsc::Receiver<LeaseEvent>, shutdown: &CancellationToken) {
        let mut watching = false;
        loop {
            self.attempt().await;
            let mut next = self.elector.next_attempt(Instant::now(), watching);
            loop {
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep_until(next) => break,
                    event = events.recv() => {
                        match event {
                            Some(LeaseEvent::Seen { at, lease }) => {
                                let spec = lease.spec.unwrap_or_default();
                                let rv = lease.metadata.resource_version.unwrap_or_default();
                                self.elector.observe(at, Some((&rv, &spec)));
                                self.publish();
                            }
                            Some(LeaseEvent::Deleted { at }) => {
                                self.elector.observe(at, None);
                                self.publish();
                            }
                            Some(LeaseEvent::Watching(up)) => watching = up,
                            // The watch never ends on its own; if it did, polling carries on.
                            None => watching = false,
                        }
                        next = self.elector.next_attempt(Instant::now(), watching);
                    }
                }
            }
        }
    }

    /// One read and, if the decision says so, one write. Errors are logged and end leadership only at its
    /// deadline.
    pub async fn attempt(&mut self) {
        let now = Instant::now();
        match self.try_attempt(now).await {
            Ok(()) => {}
            Err(LeaderError::Kube { source, .. }) if matches!(&*source, kube::Error::Api(s) if s.code == 409) => {
                debug!(lease = %self.name, "another replica wrote the lease first");
                self.elector.conflicted();
            }
            Err(e) => {
                warn!(error = %e, "leader election: cannot read or write the lease");
                self.elector.failed(Instant::now());
            }
        }
        self.publish();
    }

    async fn try_attempt(&mut self, now: Instant) -> Result<(), LeaderError> {
        let timeout = self.request_timeout();
        let current = self.with_timeout(timeout, self.api.get_opt(&self.name)).await?;
        let wall = MicroTime(k8s_openapi::jiff::Timestamp::now());
        let read = current.as_ref().map(|l| {
            (
                l.metadata.resource_version.as_deref().unwrap_or_default(),
                l.spec.clone().unwrap_or_default(),
            )
        });
        let decision = self
            .elector
            .decide(now, wall, read.as_ref().map(|(rv, spec)| (*rv, spec)));
        let written = match decision {
            Decision::Follow { holder, expires_in } => {
                debug!(lease = %self.name, %holder, ?expires_in, "following");
                return Ok(());
            }
            Decision::Create(spec) => {
                let lease = self.lease(None, spec);
                self.with_timeout(timeout, self.api.create(&PostParams::default(), &lease))
                    .await?
            }
            Decision::Replace(spec) => {
                let rv = current.and_then(|l| l.metadata.resource_version);
                let lease = self.lease(rv, spec);
                self.with_timeout(timeout, self.api.replace(&self.name, &PostParams::default(), &lease))
                    .await?
            }
        };
        // The term counts from when the read started, which is before the write was sent.
        self.elector
            .written(now, written.metadata.resource_version.as_deref().unwrap_or_default());
        Ok(())
    }

    /// Gives the lease up so the next leader need not wait for it to expire.
    async fn release(&mut self) {
        let wall = MicroTime(k8s_openapi::jiff::Timestamp::now());
        let timeout = self.request_timeout();
        let result = async {
            let Some(current) = self.with_timeout(timeout, self.api.get_opt(&self.name)).await? else {
                return Ok(false);
            };
            let spec = current.spec.clone().unwrap_or_default();
            let Some(released) = self.elector.release(wall, &spec) else {
                return Ok(false);
            };
            let lease = self.lease(current.metadata.resource_version, released);
            self.with_timeout(timeout, self.api.replace(&self.name, &PostParams::default(), &lease))
                .await?;
            Ok::<bool, LeaderError>(true)
        }
        .await;
        self.publish();
        match result {
            Ok(true) => info!(lease = %self.name, "released the leader lease"),
            Ok(false) => {}
            Err(e) => warn!(error = %e, "could not release the leader lease; the next leader waits for it to expire"),
        }
    }

    fn publish(&mut self) {
        let until = self.elector.leading_until().filter(|&t| Instant::now() < t);
        let leading = until.is_some();
        if leading != self.was_leading {
            if leading {
                info!(lease = %self.name, identity = %self.elector.identity(), "became the leader");
            } else {
                warn!(lease = %self.name, identity = %self.elector.identity(), "stopped being the leader");
            }
            self.was_leading = leading;
        }
        self.tx.send_replace(until);
    }

    /// A request may not outlive half the renew deadline, so a hung API server cannot keep this loop from
    /// noticing that leadership ran out.
    fn request_timeout(&self) -> Duration {
        self.elector.timing().renew_deadline / 2
    }

    async fn with_timeout<T>(
        &self,
        timeout: Duration,
        request: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, LeaderError> {
        match tokio::time::timeout(timeout, request).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(source)) => Err(LeaderError::Kube {
                lease: self.name.clone(),
                source: Box::new(source),
            }),
            Err(_) => Err(LeaderError::Timeout {
                lease: self.name.clone(),
                timeout,
            }),
        }
    }

    fn lease(&self, resource_version: Option<String>, spec: LeaseSpec) -> Lease {
        Lease {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                resource_version,
                ..ObjectMeta::default()
            },
            spec: Some(spec),
        }
    }
}

/// What the watch saw of the lease, and when (the instant it arrived, never before the write it shows).
#[derive(Debug)]
enum LeaseEvent {
    Seen {
        at: Instant,
        lease: Box<Lease>,
    },
    Deleted {
        at: Instant,
    },
    /// The watch is established (`true`) or broken (`false`, followers poll until it is back).
    Watching(bool),
}

/// Watches the one lease by name for ever, starting again after every error or timeout; while it cannot,
/// it says so and retries every `retry` (errors are logged once per outage).
async fn watch_lease(api: Api<Lease>, name: String, retry: Duration, tx: mpsc::Sender<LeaseEvent>) {
    let params = WatchParams::default()
        .fields(&format!("metadata.name={name}"))
        .timeout(WATCH_TIMEOUT_SECS);
    // "0": start from whatever the API server has (its current object comes first as an ADDED event).
    let mut version = "0".to_string();
    let mut failing = false;
    loop {
        let stream = match api.watch(&params, &version).await {
            Ok(stream) => stream,
            Err(e) => {
                if !failing {
                    warn!(lease = %name, error = %e, "cannot watch the lease; followers read it every retry period");
                    failing = true;
                }
                if tx.send(LeaseEvent::Watching(false)).await.is_err() {
                    return;
                }
                version = "0".to_string();
                tokio::time::sleep(retry).await;
                continue;
            }
        };
        if failing {
            info!(lease = %name, "watching the lease again");
            failing = false;
        }
        if tx.send(LeaseEvent::Watching(true)).await.is_err() {
            return;
        }
        let mut stream = std::pin::pin!(stream);
        // Whether the stream broke on an error other than an expired version: then wait before watching
        // again, so a persistent error is not a busy loop.
        let mut broke = false;
        while let Some(event) = stream.next().await {
            let at = Instant::now();
            let event = match event {
                Ok(WatchEvent::Added(lease) | WatchEvent::Modified(lease)) => {
                    if let Some(rv) = &lease.metadata.resource_version {
                        version.clone_from(rv);
                    }
                    LeaseEvent::Seen {
                        at,
                        lease: Box::new(lease),
                    }
                }
                Ok(WatchEvent::Deleted(lease)) => {
                    if let Some(rv) = &lease.metadata.resource_version {
                        version.clone_from(rv);
                    }
                    LeaseEvent::Deleted { at }
                }
                Ok(WatchEvent::Bookmark(bookmark)) => {
                    version = bookmark.metadata.resource_version;
                    continue;
                }
                Ok(WatchEvent::Error(status)) => {
                    // 410 Gone: the version is too old to resume from; start again from the current state.
                    debug!(lease = %name, code = status.code, message = %status.message, "the lease watch ended");
                    version = "0".to_string();
                    broke = status.code != 410;
                    break;
                }
                Err(e) => {
                    debug!(lease = %name, error = %e, "the lease watch broke");
                    broke = true;
                    break;
                }
            };
            if tx.send(event).await.is_err() {
                return;
            }
        }
        // The stream ended (its timeout, or an error above): say so until it is back, so followers poll.
        if tx.send(LeaseEvent::Watching(false)).await.is_err() {
            return;
        }
        if broke {
            tokio::time::sleep(retry).await;
        }
    }
}
