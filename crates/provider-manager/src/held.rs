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

    /// Each id's pipeline as the decision sees it: a task that ended is `Ended`.
    pub fn views(&self) -> BTreeMap<ProviderId, Pipeline> {
        self.lock()
            .iter()
            .map(|(id, held)| {
                let mut view = held.pipeline.clone();
                if let Some(panic) = held.running.as_ref().and_then(|r| r.ended.borrow().clone()) {
                    view.state = PipelineState::Ended { panic };
                }
                (id.clone(), view)
            })
            .collect()
    }

    /// Holds `held` for `id` (what was held is stopped before by the caller).
    pub fn insert(&self, id: ProviderId, held: Held) {
        self.lock().insert(id, held);
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

    /// Whether `id`'s pipeline runs and has not synced once yet.
    pub fn starting(&self, id: &ProviderId) -> bool {
        self.lock()
            .get(id)
            .and_then(|h| h.running.as_ref())
            .is_some_and(|r| !r.metrics.is_ready() && r.ended.borrow().is_none())
    }

    /// Takes `id`'s pipeline out and stops it: cancelled, then awaited (its sync in progress finishes, so a
    /// record is never left half written). `root` forgets its metrics.
    pub async fn stop(&self, id: &ProviderId, root: &Metrics) {
        let held = self.lock().remove(id);
        if let Some(running) = held.and_then(|h| h.running) {
            running.cancel.cancel();
            finish(id, running, root).await;
        }
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
                generation: 1,
                secret_version: None,
                secret_read: Instant::now(),
                failures: 0,
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
