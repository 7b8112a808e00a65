//! One reconcile of one provider object: the map the decision reads, the decision (its Secret read first
//! when it asks), and the decision carried out: a pipeline started, rebuilt, stopped or refused, and the
//! status written once.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use extdns_controller::CancellationToken;
use extdns_dnsprovider::status::Reason;
use extdns_dnsprovider::{Credentials, ProviderId, ProviderObject};
use futures::FutureExt as _;
use kube::api::DynamicObject;
use kube::runtime::controller::Action;
use tracing::{Instrument as _, info, warn};

use super::Manager;
use crate::decide::{self, Act, Decision, Pipeline, PipelineState, Row, SecretRead, Seen};
use crate::factory::{BuildError, PipelineRequest};
use crate::held::{Held, Running};
use crate::secret::read_secret;
use crate::status::{Observer, StatusWriter};

/// What this reconcile knows of its object.
struct Looked<'a> {
    id: &'a ProviderId,
    seen: Seen,
    decoded: Option<ProviderObject>,
    secret: SecretRead,
    credentials: Credentials,
    writer: Arc<StatusWriter>,
}

impl Looked<'_> {
    /// The Secret version the pipeline would be built with.
    fn secret_version(&self) -> Option<String> {
        match &self.secret {
            SecretRead::Read(v) => v.clone(),
            _ => None,
        }
    }

    /// The pipeline view of this object for `state`, `failures` in a row.
    fn pipeline(&self, state: PipelineState, failures: u32) -> Pipeline {
        Pipeline {
            uid: self.seen.uid.clone(),
            generation: self.seen.generation,
            secret_version: self.secret_version(),
            secret_read: Instant::now(),
            failures,
            started: Instant::now(),
            synced: false,
            state,
        }
    }
}

impl Manager {
    /// Whether the store still holds the object `seen` was read from (its uid and generation, not being
    /// deleted): what a pipeline is held for must be.
    fn current(&self, id: &ProviderId, seen: &Seen) -> bool {
        self.stored(id).is_some_and(|o| {
            o.metadata.uid == seen.uid
                && o.metadata.generation.unwrap_or(0) == seen.generation
                && o.metadata.deletion_timestamp.is_none()
        })
    }

    /// The map the decision reads: every object of both watches (`id`'s as `looked` has it), every pipeline
    /// held, and `looked`'s Secret for `id`.
    fn rows(&self, looked: &Looked<'_>) -> BTreeMap<ProviderId, Row> {
        let id = looked.id;
        let mut pipelines = self.held.views();
        let mut rows = BTreeMap::new();
        let objects = self.stores.iter().flat_map(|(_, s)| s.state());
        for o in objects {
            let Some(other) = ProviderId::of(&o).filter(|other| other != id) else {
                continue;
            };
            let (seen, object) = self.decoded.seen(&other, &o);
            let row = Row {
                seen: Some(seen),
                object,
                secret: SecretRead::NotRead,
                pipeline: pipelines.remove(&other),
            };
            rows.insert(other, row);
        }
        let row = Row {
            seen: Some(looked.seen.clone()),
            object: looked.decoded.clone(),
            secret: looked.secret.clone(),
            pipeline: pipelines.remove(id),
        };
        rows.insert(id.clone(), row);
        for (other, pipeline) in pipelines {
            let row = Row {
                seen: None,
                object: None,
                secret: SecretRead::NotRead,
                pipeline: Some(pipeline),
            };
            rows.insert(other, row);
        }
        rows
    }

    /// Decides `object`'s row (reading its Secret when the decision asks) and carries the decision out.
    pub(super) async fn reconcile_one(&self, id: &ProviderId, object: &DynamicObject) -> Action {
        // Until both kinds are listed (or known unavailable), a conflict with an object of the other kind
        // cannot be seen: a newer provider over an older one's zones would run its first sync and delete what
        // it does not ask for. The other kind's first list (or its being found unavailable) triggers every
        // object again.
        if self.a_kind_is_unlisted() {
            return Action::await_change();
        }
        let (seen, decoded) = self.decoded.seen(id, object);
        let writer = self.writer(id, seen.uid.as_deref(), decoded.as_ref());
        let mut looked = Looked {
            id,
            seen,
            decoded,
            secret: SecretRead::NotRead,
            credentials: Credentials::default(),
            writer,
        };
        let decision = loop {
            let mut decisions = decide::decide_all(&self.rows(&looked), self.now());
            let decision = decisions.remove(id).unwrap_or_default();
            // This object's change made another conflict (its owner id or zones moved onto a running one's):
            // that one is looked at now, not at its next requeue.
            if decisions.values().any(|d| {
                matches!(
                    d.pipeline,
                    Act::Refuse {
                        reason: Reason::Conflict,
                        ..
                    }
                )
            }) {
                self.trigger_everything();
            }
            match (&decision.pipeline, &looked.decoded) {
                (Act::ReadSecret, Some(p)) if looked.secret == SecretRead::NotRead => {
                    match read_secret(&self.client, p, &self.config.namespace).await {
                        Ok((read, version)) => {
                            looked.credentials = read;
                            looked.secret = SecretRead::Read(version);
                        }
                        Err(e) => {
                            warn!(provider = %id, error = %e, "cannot use the provider's Secret");
                            looked.secret = e.read();
                        }
                    }
                }
                _ => break decision,
            }
        };
        let requeue = self.act(&looked, decision).await;
        self.check_ready();
        requeue.map_or_else(Action::await_change, Action::requeue)
    }

    /// Carries out `decision` for `looked`'s object, its status written once; returns when to look again.
    async fn act(&self, looked: &Looked<'_>, decision: Decision) -> Option<Duration> {
        let id = looked.id;
        let mut decision = decision;
        match decision.pipeline {
            Act::Leave | Act::ReadSecret => {}
            Act::SecretChecked => self.held.update(id, |p| p.secret_read = Instant::now()),
            Act::Stop => {
                info!(provider = %id, "provider object being deleted: its pipeline stops; its records are left in place");
                self.held.stop(id, &self.root).await;
            }
            Act::Refuse {
                reason,
                retry,
                failures,
            } => {
                if let Some((_, why)) = &decision.status {
                    warn!(provider = %id, reason = reason.as_str(), error = %why, "the provider cannot run");
                }
                self.held.stop(id, &self.root).await;
                self.hold_refused(looked, reason, retry, failures);
            }
            Act::Start { failures } | Act::Rebuild { failures } => {
                if matches!(decision.pipeline, Act::Rebuild { .. }) {
                    info!(provider = %id, generation = looked.seen.generation, "provider object or its Secret changed: rebuilding its pipeline");
                    self.held.stop(id, &self.root).await;
                }
                let pending = decision.status.take();
                let started = match &looked.decoded {
                    Some(p) => self.start(looked, p, failures, pending).await,
                    None => Ok(()),
                };
                if let Err(e) = started {
                    warn!(provider = %id, error = %e, "cannot start the provider's pipeline");
                    let failed = decide::build_failed(failures, e.may_pass(), &e.to_string());
                    if let Act::Refuse {
                        reason,
                        retry,
                        failures,
                    } = failed.pipeline
                    {
                        self.hold_refused(looked, reason, retry, failures);
                    }
                    decision.status = failed.status;
                    decision.requeue = failed.requeue;
                }
            }
        }
        let generation = looked.seen.generation;
        if let Some((reason, message)) = decision.status {
            looked.writer.set(generation, reason, message).await;
        } else if let Some(message) = decision.first_sync {
            looked.writer.set_unless_reported(generation, message).await;
        }
        decision.requeue
    }

    /// Holds `looked`'s object refused, if the store still holds it.
    fn hold_refused(&self, looked: &Looked<'_>, reason: Reason, retry: bool, failures: u32) {
        let state = PipelineState::Refused {
            reason,
            at: Instant::now(),
            retry,
        };
        let held = || Held {
            pipeline: looked.pipeline(state, failures),
            running: None,
        };
        self.held
            .insert_if(looked.id.clone(), || self.current(looked.id, &looked.seen), held);
    }

    /// Builds `object`'s pipeline and, if its object is still the one it was built for, says `pending`
    /// and runs it as a task of its own. The status is said before the task starts (its first sync may
    /// report at once) and after the build (a build that fails says only why).
    async fn start(
        &self,
        looked: &Looked<'_>,
        object: &ProviderObject,
        failures: u32,
        pending: Option<(Reason, String)>,
    ) -> Result<(), BuildError> {
        let id = &object.id;
        let includes_zones = object
            .spec
            .domain_filter
            .as_ref()
            .is_some_and(|f| !f.include.is_empty());
        let first_sync: Box<dyn FnOnce() + Send> = Box::new(self.trigger(id));
        let observer = Arc::new(Observer {
            writer: looked.writer.clone(),
            generation: object.generation,
            includes_zones,
            first_sync: Mutex::new(Some(first_sync)),
        });
        let cancel = CancellationToken::new();
        let built = self
            .factory
            .build(PipelineRequest {
                object,
                credentials: &looked.credentials,
                observer,
                cancel: cancel.clone(),
            })
            .await?;
        if let Some((reason, message)) = pending {
            looked.writer.set(looked.seen.generation, reason, message).await;
        }
        let span = tracing::info_span!("provider", provider = %id.label());
        // Not stopped by the manager (a panic): the object decides what now (backoff, rebuild).
        let ended = self.trigger(id);
        let metrics = built.metrics.clone();
        let spawn = || {
            let running = Running::spawn(built.run.instrument(span).boxed(), cancel, built.metrics, ended);
            Held {
                pipeline: looked.pipeline(PipelineState::Running, failures),
                running: Some(running),
            }
        };
        // Checked and held under one lock: a deletion seen while the build ran stops what this holds, or
        // this sees it and starts nothing.
        if self
            .held
            .insert_if(id.clone(), || self.current(id, &looked.seen), spawn)
        {
            self.root.attach(&id.label(), metrics);
            info!(provider = %id, r#type = %object.spec.type_, "provider pipeline started");
        } else {
            info!(provider = %id, "provider object deleted or changed while its pipeline was built: not started");
        }
        Ok(())
    }
}
