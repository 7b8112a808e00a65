//! The status extdns writes on a provider object: what the manager found (a bad spec, a missing Secret, a
//! conflict) and what each sync of its pipeline did, written by the leader only, when it changed, and the
//! last sync time at most every [`REFRESH`].

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use extdns_controller::{ProviderSync, SyncError, SyncObserver};
use extdns_dnsprovider::status::{Reason, patch, ready_condition};
use extdns_dnsprovider::{DnsProviderStatus, ProviderId};
use extdns_leader::Leadership;
use extdns_registry::RegistryError;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use tokio::time::Instant;
use tracing::{debug, warn};

use crate::forbidden::{Forbidden, Write, is_forbidden};

/// How long a sync that changed nothing may go without its `lastSyncTime` being written.
pub const REFRESH: Duration = Duration::from_secs(30);

/// What the status should say, before it is written.
#[derive(Debug, Clone, PartialEq)]
struct Wanted {
    reason: Reason,
    message: String,
    zones: Option<Vec<String>>,
    records: Option<u64>,
}

#[derive(Debug, Default)]
struct State {
    /// What was last written (or read from the object), to keep transition times and compare.
    written: Option<DnsProviderStatus>,
    /// What was last wanted, with the generation it speaks of.
    wanted: Option<(Wanted, i64)>,
    /// When the status was last written, and whether the last sync since then is not written yet.
    written_at: Option<Instant>,
    synced_since: bool,
    /// Whether a sync's outcome was said since the manager last said something (a pipeline started).
    reported: bool,
}

/// One provider object's status.
pub struct StatusWriter {
    api: Api<DynamicObject>,
    id: ProviderId,
    /// The uid of the object it writes on.
    uid: Option<String>,
    leadership: Leadership,
    forbidden: Arc<Forbidden>,
    state: Mutex<State>,
}

impl StatusWriter {
    /// A writer for the object `id` of uid `uid` in `api`, starting from the status it has; a write the
    /// API server forbids is told to `forbidden`.
    pub fn new(
        api: Api<DynamicObject>,
        (id, uid): (ProviderId, Option<String>),
        status: Option<DnsProviderStatus>,
        leadership: Leadership,
        forbidden: Arc<Forbidden>,
    ) -> StatusWriter {
        StatusWriter {
            api,
            id,
            uid,
            leadership,
            forbidden,
            state: Mutex::new(State {
                written: status,
                ..State::default()
            }),
        }
    }

    /// The uid of the object it writes on.
    pub fn uid(&self) -> Option<&str> {
        self.uid.as_deref()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Says `reason` and `message` about `generation` (zones and records kept from before when `None`), and
    /// writes it if this replica leads and it differs from what is written.
    pub async fn set(&self, generation: i64, reason: Reason, message: impl Into<String>) {
        self.want_as(generation, reason, message.into(), (None, None), false, false)
            .await;
    }

    /// Says `Pending` with `message` about `generation`, unless a sync's outcome was said since the
    /// manager last said something: what a sync said of itself says more than that it is awaited.
    pub async fn set_unless_reported(&self, generation: i64, message: String) {
        if self.lock().reported {
            return;
        }
        self.want_as(generation, Reason::Pending, message, (None, None), false, false)
            .await;
    }

    /// Wants `reason` and `message` said about `generation` (`zones` and `records` kept from before when
    /// `None`), and writes it; `synced` when a sync completed, `reported` when a sync's outcome says it.
    async fn want_as(
        &self,
        generation: i64,
        reason: Reason,
        message: String,
        (zones, records): (Option<Vec<String>>, Option<u64>),
        synced: bool,
        reported: bool,
    ) {
        {
            let mut state = self.lock();
            let previous = state.wanted.as_ref().map(|(w, _)| w.clone());
            let wanted = Wanted {
                reason,
                message,
                zones: zones.or_else(|| previous.as_ref().and_then(|p| p.zones.clone())),
                records: records.or_else(|| previous.as_ref().and_then(|p| p.records)),
            };
            state.wanted = Some((wanted, generation));
            state.synced_since |= synced;
            state.reported = reported;
        }
        self.flush().await;
    }

    /// Writes what is wanted if this replica leads and it is not written yet (or the last sync time is older
    /// than [`REFRESH`]). The manager calls it again when this replica becomes the leader.
    pub async fn flush(&self) {
        if !self.leadership.is_leader() {
            return;
        }
        let (status, reports_sync, previous) = {
            let mut state = self.lock();
            let Some((wanted, generation)) = state.wanted.clone() else {
                return;
            };
            let now = Time(k8s_openapi::jiff::Timestamp::now());
            let previous = state.written.clone();
            let condition = ready_condition(
                previous.as_ref(),
                wanted.reason,
                &wanted.message,
                generation,
                now.clone(),
            );
            let mut status = DnsProviderStatus {
                observed_generation: Some(generation),
                conditions: vec![condition],
                zones: wanted.zones.clone().unwrap_or_default(),
                records: wanted.records,
                last_sync_time: previous.as_ref().and_then(|p| p.last_sync_time.clone()),
            };
            let due = state.written_at.is_none_or(|t| t.elapsed() >= REFRESH);
            if state.synced_since && (due || status.last_sync_time.is_none()) {
                status.last_sync_time = Some(now);
            }
            let same = previous.as_ref().is_some_and(|p| {
                p.observed_generation == status.observed_generation
                    && p.zones == status.zones
                    && p.records == status.records
                    && p.last_sync_time == status.last_sync_time
                    && p.conditions.len() == 1
                    && p.conditions[0].reason == status.conditions[0].reason
                    && p.conditions[0].message == status.conditions[0].message
                    && p.conditions[0].status == status.conditions[0].status
            });
            if same {
                return;
            }
            // The sync it reports is cleared only once written: a failed write keeps it for the next flush.
            let reports_sync = status.last_sync_time.is_some()
                && status.last_sync_time != previous.as_ref().and_then(|p| p.last_sync_time.clone());
            if reports_sync {
                state.synced_since = false;
            }
            state.written = Some(status.clone());
            state.written_at = Some(Instant::now());
            (status, reports_sync, previous)
        };
        let name = self.id.name();
        match self
            .api
            .patch_status(name, &PatchParams::default(), &Patch::Merge(patch(&status)))
            .await
        {
            Ok(_) => {
                self.forbidden.allowed(&self.id, Write::Status);
                debug!(provider = %self.id, reason = %status.conditions[0].reason, "provider status written");
            }
            Err(kube::Error::Api(e)) if e.code == 404 => debug!(provider = %self.id, "provider object gone"),
            Err(e) => {
                if is_forbidden(&e) {
                    self.forbidden.refused(&self.id, Write::Status, &e);
                } else {
                    warn!(provider = %self.id, error = %e, "cannot write the provider's status; trying again later");
                }
                // Written again at the next flush, the sync it reported included. The object still holds
                // what was written before (unless a newer flush wrote since): the next flush compares with
                // that, so an unchanged condition keeps its transition time.
                let mut state = self.lock();
                state.written_at = None;
                if state.written.as_ref() == Some(&status) {
                    state.written = previous;
                }
                state.synced_since |= reports_sync;
            }
        }
    }
}

/// The reason a failed sync gives.
fn reason_of(e: &SyncError) -> Reason {
    match e {
        SyncError::NotSynced | SyncError::SyncTimeout(_) | SyncError::Cancelled | SyncError::NotLeader => {
            Reason::Pending
        }
        SyncError::Registry(RegistryError::Provider(p)) if p.is_auth() => Reason::CredentialsInvalid,
        _ => Reason::SyncFailed,
    }
}

/// What is called after a pipeline's first completed sync.
pub type OnFirstSync = Box<dyn FnOnce() + Send>;

/// Reports each sync of a pipeline on its object.
pub struct Observer {
    /// The object's status.
    pub writer: Arc<StatusWriter>,
    /// The generation the pipeline was built from.
    pub generation: i64,
    /// Whether the spec includes zones (an empty read of them is `ZonesNotFound`).
    pub includes_zones: bool,
    /// Called once, after the first sync that completes: the manager looks at the object then (its
    /// readiness), rather than asking every second.
    pub first_sync: Mutex<Option<OnFirstSync>>,
}

impl Observer {
    fn synced(&self) {
        let first = self
            .first_sync
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(first) = first {
            first();
        }
    }
}

#[async_trait]
impl SyncObserver for Observer {
    async fn observe(&self, sync: ProviderSync<'_>) {
        let w = &self.writer;
        match sync.result {
            Ok(report) => {
                let owned = report.owned.map(|n| n as u64);
                if self.includes_zones && sync.zones.is_empty() && report.owned == Some(0) {
                    let message = "none of spec.domainFilter.include was found with these credentials".to_string();
                    w.want_as(
                        self.generation,
                        Reason::ZonesNotFound,
                        message,
                        (Some(Vec::new()), owned),
                        true,
                        true,
                    )
                    .await;
                    self.synced();
                    return;
                }
                w.want_as(
                    self.generation,
                    Reason::Synced,
                    String::new(),
                    (Some(sync.zones), owned),
                    true,
                    true,
                )
                .await;
                self.synced();
            }
            Err(e) => {
                w.want_as(self.generation, reason_of(e), e.to_string(), (None, None), false, true)
                    .await
            }
        }
    }
}
