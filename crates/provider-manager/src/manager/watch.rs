//! What the watches tell the manager besides the objects: a kind listed (or one that cannot be), an object
//! gone, and when the manager is ready; and what a change of leader asks of it.

use std::sync::{Arc, PoisonError};

use extdns_controller::CancellationToken;
use extdns_dnsprovider::{ProviderId, ProviderKind};
use extdns_informer::status_of;
use kube::api::DynamicObject;
use kube::runtime::watcher::{self, Event};
use tracing::{info, warn};

use super::{Manager, index};
use crate::decide::{self, Act, KindState, Row, SecretRead};
use crate::status::StatusWriter;

impl Manager {
    /// Sets `kind`'s state; the one it had.
    fn set_kind(&self, kind: ProviderKind, state: KindState) -> KindState {
        let mut kinds = self.kinds.lock().unwrap_or_else(PoisonError::into_inner);
        kinds.insert(index(kind), state).unwrap_or(KindState::Waiting)
    }

    /// Marks `kind` unavailable if it still waits for its first list; whether it did.
    fn unavailable_if_waiting(&self, kind: ProviderKind) -> bool {
        let mut kinds = self.kinds.lock().unwrap_or_else(PoisonError::into_inner);
        let state = kinds.entry(index(kind)).or_insert(KindState::Waiting);
        let waiting = *state == KindState::Waiting;
        if waiting {
            *state = KindState::Unavailable;
        }
        waiting
    }

    /// Whether a kind has neither been listed nor found unavailable yet.
    pub(super) fn a_kind_is_unlisted(&self) -> bool {
        let kinds = self.kinds.lock().unwrap_or_else(PoisonError::into_inner);
        kinds.values().any(|k| *k == KindState::Waiting)
    }

    /// What a kind's watch delivered, after its store took it in: a first list marks the kind listed and
    /// drops the pipelines of objects gone meanwhile; a deletion stops its pipeline; a list refused for
    /// good (404, 403: [`decide::unavailable`]) before any list marks the kind unavailable, so readiness
    /// and the other kind's providers do not wait for it. Any other error is the watch's to retry: nothing
    /// is stopped for a view that is only incomplete.
    pub(super) fn watched(self: &Arc<Self>, kind: ProviderKind, event: &Result<Event<DynamicObject>, watcher::Error>) {
        match event {
            Ok(Event::InitDone) => {
                if self.set_kind(kind, KindState::Listed) != KindState::Listed {
                    // The other kind's objects are judged for conflicts against this list now: those that
                    // waited for it, and those that ran while this kind could not be listed.
                    self.trigger_everything();
                }
                // An object deleted while the watch was down, or deleted and made again under its name.
                for (id, pipeline) in self.held.views().into_iter().filter(|(id, _)| id.kind() == kind) {
                    let same = self.stored(&id).is_some_and(|o| o.metadata.uid == pipeline.uid);
                    if !same {
                        tokio::spawn(self.clone().forget(id, pipeline.uid));
                    }
                }
                self.check_ready();
            }
            Ok(Event::Delete(o)) => {
                if let Some(id) = ProviderId::of(o) {
                    tokio::spawn(self.clone().forget(id, o.metadata.uid.clone()));
                }
            }
            Err(e) if decide::unavailable(status_of(e)) => {
                if self.unavailable_if_waiting(kind) {
                    warn!(kind = kind.kind(), error = %e, "cannot list the provider objects of this kind (is its CRD \
                          installed and may extdns list it?); the other kind's providers run; trying again with backoff");
                    self.trigger_everything();
                    self.check_ready();
                }
            }
            Err(e) => {
                warn!(kind = kind.kind(), error = %e, "listing or watching the provider objects failed; trying again \
                      with backoff, every pipeline running as it was");
            }
            Ok(_) => {}
        }
    }

    /// The object of uid `uid` gone from the watch: decided as gone (its pipeline stops, its records
    /// stay), unless what is held for its name is another object's (made again since); and every object
    /// looked at again (a provider it refused in a conflict may run now). Takes the pipelines' lock only
    /// after the store lost the object, so a build that returns meanwhile either sees it gone or is
    /// stopped here.
    pub(super) async fn forget(self: Arc<Self>, id: ProviderId, uid: Option<String>) {
        let pipeline = self.held.views().remove(&id).filter(|p| uid.is_none() || p.uid == uid);
        let row = Row {
            seen: None,
            object: None,
            secret: SecretRead::NotRead,
            pipeline,
        };
        if decide::decide(&row, None, self.now()).pipeline == Act::Stop
            && self.held.stop_uid(&id, uid.as_deref(), &self.root).await
        {
            info!(provider = %id, "provider object deleted: its pipeline stops; its records are left in place");
        }
        {
            let mut writers = self.writers.lock().unwrap_or_else(PoisonError::into_inner);
            if writers
                .get(&id)
                .is_some_and(|w| uid.is_none() || w.uid() == uid.as_deref())
            {
                writers.remove(&id);
            }
        }
        self.decoded.forget(&id);
        self.trigger_everything();
    }

    /// `/readyz` turns 200 once both kinds are listed (or known unavailable), every object listed has been
    /// decided, and every pipeline that runs synced once.
    pub(super) fn check_ready(&self) {
        if self.root.is_ready() {
            return;
        }
        let kinds: Vec<KindState> = self
            .kinds
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .copied()
            .collect();
        let held = self.held.ids();
        let undecided = self
            .stores
            .iter()
            .flat_map(|(_, s)| s.state())
            .filter(|o| o.metadata.deletion_timestamp.is_none())
            .filter_map(|o| ProviderId::of(&o))
            .filter(|id| !held.contains(id))
            .map(|_| false);
        let synced: Vec<bool> = self.held.synced().into_iter().chain(undecided).collect();
        if decide::ready(&kinds, synced.iter().copied()) {
            info!(providers = synced.len(), "every provider synced once: ready");
            self.root.mark_ready();
        }
    }

    /// Follows the election: the leader gauge, and on becoming the leader, what was wanted meanwhile
    /// written and every object looked at again (the finalizers are the leader's).
    pub(super) async fn follow_leadership(self: Arc<Self>, shutdown: CancellationToken) {
        let mut leadership = self.leadership.clone();
        let mut was = leadership.is_leader();
        self.root.set_leader(was);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = leadership.changed() => {}
            }
            let leads = leadership.is_leader();
            self.root.set_leader(leads);
            if leads && !was {
                let writers: Vec<Arc<StatusWriter>> = self
                    .writers
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .values()
                    .cloned()
                    .collect();
                for w in writers {
                    w.flush().await;
                }
                self.trigger_everything();
            }
            was = leads;
        }
    }
}
