//! What a sync tells the objects themselves: the outcome, object by object, for a sink that writes it back
//! onto them (DNSEndpoint status, `--source=crd`). The controller never holds an API client: the binary's
//! sink does, as for Events.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use async_trait::async_trait;
use extdns_informer::{ClusterStore, ObjectKey, Uid};

use crate::events::{Outcome, Uids, objects_of};
use crate::{SyncError, SyncReport};

/// One sync's outcome, by object.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SyncStatus {
    /// Objects with a change the provider refused this sync.
    pub errored: BTreeSet<ObjectKey>,
    /// Objects the sources could not evaluate.
    pub failed: BTreeSet<ObjectKey>,
    /// The uid each object of the outcome had when the sync computed it, where the store kept one: a sink
    /// writes nothing of this outcome on an object whose uid is another now (deleted and made again since).
    pub uids: BTreeMap<ObjectKey, Uid>,
}

impl SyncStatus {
    pub(crate) fn of(outcome: &Outcome<'_>, uids: &Uids) -> SyncStatus {
        SyncStatus {
            uids: uids.clone().into_map(),
            errored: outcome
                .errored
                .iter()
                .flat_map(|(c, _)| objects_of(c).into_iter().map(|k| ObjectKey::clone(&k)))
                .collect(),
            failed: outcome.failed.iter().map(|(k, _)| (*k).clone()).collect(),
        }
    }
}

/// Where each planned sync's outcome goes, with the objects it was computed from. Called only after a sync
/// that reached the provider or found nothing to do (never while the view is incomplete, in a dry run or
/// while another replica leads). Failing to write never fails a sync, so the sink reports its own errors.
#[async_trait]
pub trait StatusSink: Send + Sync {
    /// Writes one sync's outcome onto the objects it concerns.
    async fn report(&self, cluster: Arc<ClusterStore>, status: SyncStatus);
}

/// One sync attempt, as the provider it was for sees it.
#[derive(Debug)]
#[non_exhaustive]
pub struct ProviderSync<'a> {
    /// What the sync did, or why it did not complete.
    pub result: Result<&'a SyncReport, &'a SyncError>,
    /// The zones the provider manages (its domain filter's includes, as found by its read).
    pub zones: Vec<String>,
}

/// Told every sync attempt's outcome (`--dns-provider-crds` writes it onto the provider object's status).
/// Called by the replica that reports (the leader), never for a sync dropped because another replica leads.
/// Like [`StatusSink`], it reports its own errors: observing never fails a sync.
#[async_trait]
pub trait SyncObserver: Send + Sync {
    /// One sync attempt's outcome.
    async fn observe(&self, sync: ProviderSync<'_>);
}
