//! The pipelines the manager holds, by provider id: the decision's view of each ([`Pipeline`]) and, while one
//! runs, the handles to stop it and to learn that it ended.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use extdns_controller::{CancellationToken, Metrics};
use extdns_dnsprovider::ProviderId;
use futures::FutureExt as _;
use futures::future::BoxFuture;
use tokio::sync::watch;
use tracing::error;

use crate::decide::{Pipeline, PipelineState};

/// A pipeline's task, started.
pub(crate) struct Running {
    /// Stops it after its sync in progress.
    pub cancel: CancellationToken,
    /// `Some` once its task ended: with the panic's text if it panicked.
    pub ended: watch::Receiver<Option<Option<String>>>,
    /// Its metrics (attached to the root's under its label while it runs).
    pub metrics: Arc<Metrics>,
}

impl Running {
    /// Runs `run` as a task of its own, stopped by `cancel`; `ended` is called if it ends while not
    /// cancelled (a panic: a pipeline's loop returns only when cancelled).
    pub fn spawn(
        run: BoxFuture<'static, ()>,
        cancel: CancellationToken,
        metrics: Arc<Metrics>,
        ended: impl FnOnce() + Send + 'static,
    ) -> Running {
        let task = tokio::spawn(run);
        let (tx, rx) = watch::channel(None);
        let token = cancel.clone();
        tokio::spawn(task.map(move |result| {
            let panic = match result {
                Err(e) if e.is_panic() => Some(panic_text(e.into_panic())),
                _ => None,
            };
            let _ = tx.send(Some(panic));
            if !token.is_cancelled() {
                ended();
            }
        }));
        Running {
            cancel,
            ended: rx,
            metrics,
        }
    }
}

/// One id's pipeline.
pub(crate) struct Held {
    pub pipeline: Pipeline,
    pub running: Option<Running>,
}

/// Every id's pipeline, behind one lock never held across an await.
#[derive(Default)]
pub(crate) struct HeldPipelines(Mutex<BTreeMap<ProviderId, Held>>);

impl HeldPipelines {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<ProviderId, Held>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Each id's pipeline as the decision sees it: a task that ended is `Ended`, one whose metrics say
    /// ready has synced.
    pub fn views(&self) -> BTreeMap<ProviderId, Pipeline> {
        self.lock()
            .iter()
            .map(|(id, held)| {
                let mut view = held.pipeline.clone();
                if let Some(running) = &held.running {
                    view.synced = running.metrics.is_ready();
                    if let Some(panic) = running.ended.borrow().clone() {
                        view.state = PipelineState::Ended { panic };
                    }
                }
                (id.clone(), view)
            })
            .collect()
    }

    /// Holds `held` for `id` (what was held is stopped before by the caller).
    #[cfg(test)]
    pub fn insert(&self, id: ProviderId, held: Held) {
        self.lock().insert(id, held);
    }

    /// Holds what `held` makes (a pipeline's task is spawned there) for `id` if `current` says, under the
    /// lock, that its object is still the one it was built for; else nothing is started; whether it was. Whoever
    /// forgets an object takes the same lock after the object left the watch's store, so either this sees
    /// it gone, or the forgetting sees what this held and stops it: a build that returns after the object
    /// was deleted never leaves a pipeline running for it.
    pub fn insert_if(&self, id: ProviderId, current: impl FnOnce() -> bool, held: impl FnOnce() -> Held) -> bool {
        let mut pipelines = self.lock();
        if !current() {
            return false;
        }
        pipelines.insert(id, held());
        true
    }

    /// Updates the pipeline view held for `id`.
    pub fn update(&self, id: &ProviderId, change: impl FnOnce(&mut Pipeline)) {
        if let Some(held) = self.lock().get_mut(id) {
            change(&mut held.pipeline);
        }
    }

    /// The ids held.
    pub fn ids(&self) -> Vec<ProviderId> {
        self.lock().keys().cloned().collect()
    }

    /// Whether every running pipeline synced once (its metrics say ready).
    pub fn synced(&self) -> Vec<bool> {
        self.lock()
            .values()
            .filter_map(|h| h.running.as_ref())
            .map(|r| r.metrics.is_ready())
            .collect()
    }

    /// Takes `id`'s pipeline out and stops it: cancelled, then awaited (its sync in progress finishes, so a
    /// record is never left half written). `root` forgets its metrics.
    pub async fn stop(&self, id: &ProviderId, root: &Metrics) {
        self.stop_if(id, |_| true, root).await;
    }

    /// [`HeldPipelines::stop`], if what is held for `id` is the pipeline of the object of uid `uid` (a
    /// deletion seen late stops nothing of an object made again under its name since); whether it did.
    pub async fn stop_uid(&self, id: &ProviderId, uid: Option<&str>, root: &Metrics) -> bool {
        self.stop_if(id, |p| uid.is_none() || p.uid.as_deref() == uid, root)
            .await
    }

    async fn stop_if(&self, id: &ProviderId, whose: impl FnOnce(&Pipeline) -> bool, root: &Metrics) -> bool {
        let held = {
            let mut pipelines = self.lock();
            match pipelines.get(id) {
                Some(h) if whose(&h.pipeline) => pipelines.remove(id),
                _ => None,
            }
        };
        let Some(held) = held else {
            return false;
        };
        if let Some(running) = held.running {
            running.cancel.cancel();
            finish(id, running, root).await;
        }
        true
    }

    /// SIGTERM: every pipeline told at once, then each awaited, so the shutdown waits for the longest sync in
    /// progress, not their sum.
    pub async fn stop_all(&self, root: &Metrics) {
        let all = std::mem::take(&mut *self.lock());
        for running in all.values().filter_map(|h| h.running.as_ref()) {
            running.cancel.cancel();
        }
        for (id, held) in all {
            if let Some(running) = held.running {
                finish(&id, running, root).await;
            }
        }
    }
}

async fn finish(id: &ProviderId, mut running: Running, root: &Metrics) {
    let ended = running
        .ended
        .wait_for(Option::is_some)
        .await
        .ok()
        .and_then(|e| (*e).clone());
    root.detach(&id.label());
    if let Some(Some(text)) = ended {
        error!(provider = %id, panic = %text, "the provider's pipeline panicked");
    }
}

/// A panic's message, when it has one.
fn panic_text(payload: Box<dyn std::any::Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(s) => *s,
        Err(payload) => payload
            .downcast_ref::<&str>()
            .map_or_else(|| "(no message)".to_string(), |s| s.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use extdns_dnsprovider::status::Reason;

    use super::*;

    fn held(running: Option<Running>, state: PipelineState) -> Held {
        Held {
            pipeline: Pipeline {
                uid: None,
                generation: 1,
                secret_version: None,
                secret_read: Instant::now(),
                failures: 0,
                started: Instant::now(),
                synced: false,
                state,
            },
            running,
        }
    }

    #[tokio::test]
    async fn a_pipeline_that_panics_is_seen_ended_with_its_message_and_its_object_told() {
        let root = Metrics::for_providers("test", "test");
        let pipelines = HeldPipelines::default();
        let id = ProviderId::Cluster { name: "p".into() };
        let (told, mut heard) = tokio::sync::mpsc::unbounded_channel();
        let run = async { panic!("a bug in one provider") }.boxed();
        let running = Running::spawn(run, CancellationToken::new(), Arc::new(root.child()), move || {
            let _ = told.send(());
        });
        pipelines.insert(id.clone(), held(Some(running), PipelineState::Running));
        assert_eq!(heard.recv().await, Some(()), "the object is told its pipeline ended");
        assert_eq!(
            pipelines.views()[&id].state,
            PipelineState::Ended {
                panic: Some("a bug in one provider".into())
            }
        );
        pipelines.stop(&id, &root).await;
        assert!(pipelines.ids().is_empty());
    }

    #[tokio::test]
    async fn a_stopped_pipeline_finishes_first_and_its_object_is_not_told() {
        let root = Metrics::for_providers("test", "test");
        let pipelines = HeldPipelines::default();
        let id = ProviderId::Cluster { name: "p".into() };
        let cancel = CancellationToken::new();
        let token = cancel.clone();
        let (finished, mut done) = tokio::sync::oneshot::channel();
        let run = async move {
            token.cancelled().await;
            let _ = finished.send(());
        }
        .boxed();
        let (told, mut heard) = tokio::sync::mpsc::unbounded_channel::<()>();
        let running = Running::spawn(run, cancel, Arc::new(root.child()), move || {
            let _ = told.send(());
        });
        pipelines.insert(id.clone(), held(Some(running), PipelineState::Running));
        assert_eq!(pipelines.views()[&id].state, PipelineState::Running);
        assert_eq!(pipelines.synced(), [false], "running, not synced yet");
        pipelines.stop(&id, &root).await;
        assert_eq!(done.try_recv(), Ok(()), "stop returns once the pipeline finished");
        assert_eq!(
            heard.recv().await,
            None,
            "a pipeline the manager stops did not end by itself"
        );
        let refused = PipelineState::Refused {
            reason: Reason::Conflict,
            at: Instant::now(),
            retry: false,
        };
        pipelines.insert(id, held(None, refused));
        assert!(
            pipelines.synced().is_empty(),
            "a refused pipeline waits for nobody's readiness"
        );
    }
}
