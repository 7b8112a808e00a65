//! The election against the API server: read the Lease, let [`Elector`] decide, write with the
//! `resourceVersion` read (so two replicas racing for an expired lease cannot both win: the second gets
//! 409 Conflict), and publish whether this replica may act.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Api;
use kube::api::PostParams;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::state::{Decision, Elector, LeaseTiming};
use crate::{LeaderError, Leadership};

/// Which Lease, and who this replica is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ElectionConfig {
    pub namespace: String,
    pub name: String,
    /// Unique per replica (a pod name plus a random suffix).
    pub identity: String,
    pub timing: LeaseTiming,
}

impl ElectionConfig {
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

    /// Tries to acquire or renew every retry period until `shutdown`, then releases the lease if this
    /// replica holds it. Call it only once the writers have stopped (or give it a token cancelled after
    /// them), or the next leader could start while this one still writes.
    pub async fn run(mut self, shutdown: CancellationToken) {
        let retry = self.elector.timing().retry_period;
        loop {
            self.attempt().await;
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tokio::time::sleep(retry) => {}
            }
        }
        self.release().await;
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
