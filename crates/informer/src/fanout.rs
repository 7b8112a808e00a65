//! One view shared by several controllers (one per provider object, `--dns-provider-crds`).
//!
//! A view's [`Cluster::take_changes`] forgets what it hands out, so two controllers taking from one view would
//! each miss what the other took. The fan-out takes from the view on behalf of every subscriber: whatever one
//! subscriber takes is also kept for every other, until each takes it in turn. Everything else (the store,
//! the synced gate, the change notification) is the view's own, shared as it is.

use std::sync::{Arc, Mutex, PoisonError, Weak};

use tokio::sync::watch;

use crate::{ChangeSet, Cluster, ClusterStore};

/// A view shared by subscribers that each see every change once.
pub struct ClusterFanout {
    inner: Arc<dyn Cluster>,
    /// The changes taken from the view and not yet taken by each live subscriber. A dropped subscriber's
    /// entry goes at the next take.
    pending: Mutex<Vec<Weak<Mutex<ChangeSet>>>>,
}

impl ClusterFanout {
    /// Shares `inner` between subscribers.
    pub fn new(inner: Arc<dyn Cluster>) -> Arc<Self> {
        Arc::new(ClusterFanout {
            inner,
            pending: Mutex::new(Vec::new()),
        })
    }

    /// The shared view itself (for what is not per subscriber: the store's readiness at startup).
    pub fn inner(&self) -> &Arc<dyn Cluster> {
        &self.inner
    }

    /// A view of its own for one subscriber. Its first `take_changes` returns what changed since it
    /// subscribed; a subscriber starts with a full sync anyway.
    pub fn subscribe(self: &Arc<Self>) -> Arc<dyn Cluster> {
        let own = Arc::new(Mutex::new(ChangeSet::new()));
        lock(&self.pending).push(Arc::downgrade(&own));
        Arc::new(Subscriber {
            fanout: self.clone(),
            own,
        })
    }

    /// Takes the view's changes into every subscriber's pending set, then hands `own` its set.
    fn take_for(&self, own: &Mutex<ChangeSet>) -> ChangeSet {
        let mut pending = lock(&self.pending);
        let taken = self.inner.take_changes();
        if !taken.is_empty() {
            pending.retain(|w| match w.upgrade() {
                Some(set) => {
                    lock(&set).extend(&taken);
                    true
                }
                None => false,
            });
        }
        std::mem::take(&mut *lock(own))
    }
}

/// One subscriber's view: the shared one, with its own record of what changed.
struct Subscriber {
    fanout: Arc<ClusterFanout>,
    own: Arc<Mutex<ChangeSet>>,
}

impl Cluster for Subscriber {
    fn store(&self) -> Arc<ClusterStore> {
        self.fanout.inner.store()
    }

    fn synced(&self) -> bool {
        self.fanout.inner.synced()
    }

    fn changes(&self) -> watch::Receiver<u64> {
        self.fanout.inner.changes()
    }

    fn take_changes(&self) -> ChangeSet {
        self.fanout.take_for(&self.own)
    }
}

/// A poisoned lock only means another subscriber panicked mid-take; a change set is valid at every step.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ObjectKey, ResourceKind};

    /// A view whose changes a test sets by hand.
    struct Hand {
        changes: Mutex<ChangeSet>,
        tx: watch::Sender<u64>,
    }

    impl Cluster for Hand {
        fn store(&self) -> Arc<ClusterStore> {
            Arc::new(ClusterStore::new())
        }
        fn synced(&self) -> bool {
            true
        }
        fn changes(&self) -> watch::Receiver<u64> {
            self.tx.subscribe()
        }
        fn take_changes(&self) -> ChangeSet {
            std::mem::take(&mut *lock(&self.changes))
        }
    }

    /// A cluster changed by hand, and a fan-out over it.
    fn hand() -> (Arc<Hand>, Arc<ClusterFanout>) {
        let hand = Arc::new(Hand {
            changes: Mutex::new(ChangeSet::new()),
            tx: watch::channel(0).0,
        });
        let fanout = ClusterFanout::new(hand.clone());
        (hand, fanout)
    }

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new(ResourceKind::Service, "default", name)
    }

    fn names(c: &ChangeSet) -> Vec<String> {
        c.objects().map(|k| k.name.to_string()).collect()
    }

    #[test]
    fn each_subscriber_sees_every_change_once_whoever_takes_first() {
        let (hand, fanout) = hand();
        let a = fanout.subscribe();
        let b = fanout.subscribe();
        lock(&hand.changes).insert(key("web"));
        assert_eq!(names(&a.take_changes()), ["web"]);
        assert!(a.take_changes().is_empty(), "taken once");
        lock(&hand.changes).insert(key("db"));
        assert_eq!(names(&b.take_changes()), ["db", "web"], "b still sees what a took");
        assert_eq!(names(&a.take_changes()), ["db"]);
        assert!(b.take_changes().is_empty());
    }

    #[test]
    fn a_relist_reaches_every_subscriber_and_a_dropped_one_is_forgotten() {
        let (hand, fanout) = hand();
        let a = fanout.subscribe();
        let b = fanout.subscribe();
        drop(b);
        lock(&hand.changes).mark_everything();
        assert!(a.take_changes().is_everything());
        assert_eq!(lock(&fanout.pending).len(), 1, "the dropped subscriber's set went");
        let c = fanout.subscribe();
        assert!(c.take_changes().is_empty(), "a new subscriber starts from now");
    }
}
