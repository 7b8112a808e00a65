//! What the manager does about each provider object, decided without I/O: one map from each provider id to
//! what is known of it (the object as the watch last delivered it, its Secret's version when read this pass,
//! the pipeline running for it), and the time, in; per id the pipeline action, the status to write and when
//! to look again, out. The runner ([`crate::manager`]) only carries decisions out,
//! so every rule of the manager is a case of [`decide`] and tested as one.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use extdns_dnsprovider::status::Reason;
use extdns_dnsprovider::{FINALIZER, ProviderId, ProviderObject, SpecError, conflicts};
use kube::api::DynamicObject;

pub use crate::first_sync::{FIRST_SYNC_LOOK, FIRST_SYNC_LOOK_MAX, PENDING, first_sync_wait};

/// How long a pipeline that failed (to build, or by a panic) first waits before it is built again with an
/// unchanged spec; doubled at each failure in a row, up to [`REBUILD_AFTER_MAX`].
pub const REBUILD_AFTER: Duration = Duration::from_secs(5);
/// The longest wait before a failed pipeline is built again.
pub const REBUILD_AFTER_MAX: Duration = Duration::from_secs(300);

/// The wait before the rebuild after `failures` failures in a row.
pub fn rebuild_after(failures: u32) -> Duration {
    REBUILD_AFTER
        .saturating_mul(1 << failures.saturating_sub(1).min(16))
        .min(REBUILD_AFTER_MAX)
}

/// A provider object as the decision reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Seen {
    /// `metadata.uid`: an object deleted and made again under its name is another object, whose pipeline
    /// is not the old one's.
    pub uid: Option<String>,
    /// `metadata.generation`: a new one means a changed spec.
    pub generation: i64,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    /// It carries extdns's finalizer ([`FINALIZER`]).
    pub finalized: bool,
    /// The records its status last counted (what the deletion leaves in place).
    pub records: Option<u64>,
    /// Why its spec does not decode, if it does not (`ConfigInvalid`).
    pub invalid: Option<String>,
}

impl Seen {
    /// What `object` says, and the decoded provider object when its spec decodes (decoded here: the runner
    /// decodes each generation once, [`crate::decoded::Decoded`]).
    pub fn of(object: &DynamicObject) -> (Seen, Option<ProviderObject>) {
        Seen::with(object, ProviderObject::from_dynamic(object).map_err(Arc::new))
    }

    /// What `object` says, its spec decoded as `decoded` (the provider object, or why it does not decode).
    pub fn with(
        object: &DynamicObject,
        decoded: Result<ProviderObject, Arc<SpecError>>,
    ) -> (Seen, Option<ProviderObject>) {
        let meta = &object.metadata;
        let finalizers = meta.finalizers.as_deref().unwrap_or_default();
        let mut seen = Seen {
            uid: meta.uid.clone(),
            generation: meta.generation.unwrap_or(0),
            deleting: meta.deletion_timestamp.is_some(),
            finalized: finalizers.iter().any(|f| f == FINALIZER),
            records: None,
            invalid: None,
        };
        match decoded {
            Ok(p) => {
                seen.records = p.status.as_ref().and_then(|s| s.records);
                (seen, Some(p))
            }
            Err(why) => {
                seen.invalid = Some(why.to_string());
                (seen, None)
            }
        }
    }
}

/// What this pass learnt of the object's Secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretRead {
    /// Not read in this pass: the decision says when it must be ([`Act::ReadSecret`]).
    NotRead,
    /// Read: its resourceVersion (`None` without a `credentialsRef`).
    Read(Option<String>),
    /// Missing, forbidden or unusable: the provider cannot run (`CredentialsInvalid`).
    Invalid(String),
    /// The API server did not answer: what runs keeps running.
    Unreachable(String),
}

/// A pipeline the manager holds for an object: running, ended, or refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pipeline {
    /// The uid of the object it was built (or refused) for.
    pub uid: Option<String>,
    /// The generation it was built (or refused) from.
    pub generation: i64,
    /// The Secret's resourceVersion it was built with.
    pub secret_version: Option<String>,
    /// When the Secret was last read for it.
    pub secret_read: Instant,
    /// Failures in a row with this generation and Secret (the rebuild's backoff); a change starts again.
    pub failures: u32,
    /// When it was started (or refused).
    pub started: Instant,
    /// Whether it completed a sync since (its metrics say ready).
    pub synced: bool,
    /// Where it is.
    pub state: PipelineState,
}

/// Where a pipeline is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PipelineState {
    /// Its task runs.
    Running,
    /// Its task ended while it should run: the controller's loop returns only when cancelled, so a panic
    /// (with its text when it has one).
    Ended {
        /// The panic's message.
        panic: Option<String>,
    },
    /// Not built, for `reason`, at `at`; built again when the object or its Secret changes, or, when
    /// `retry`, after [`rebuild_after`] its failures.
    Refused {
        /// What the status says.
        reason: Reason,
        /// When.
        at: Instant,
        /// Whether the same spec may succeed later (an API down, a panic).
        retry: bool,
    },
}

/// What is known of one provider id.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The object as last delivered; `None` once it is gone from the watch.
    pub seen: Option<Seen>,
    /// The decoded object (conflicts are found among these).
    pub object: Option<ProviderObject>,
    /// The Secret, when read in this pass.
    pub secret: SecretRead,
    /// The pipeline held for it.
    pub pipeline: Option<Pipeline>,
}

/// What the decision reads besides the map.
#[derive(Debug, Clone, Copy)]
pub struct Now {
    /// This instant.
    pub at: Instant,
    /// Whether this replica leads (only the leader writes status and finalizers).
    pub leader: bool,
    /// `--interval`: how often the Secret is read again.
    pub interval: Duration,
}

/// What to do with an object's pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Act {
    /// Nothing.
    #[default]
    Leave,
    /// Read the object's Secret, then decide again with what was read.
    ReadSecret,
    /// The Secret was read and nothing changed: note when.
    SecretChecked,
    /// Build and start a pipeline (none runs); `failures` in a row so far.
    Start {
        /// Failures in a row carried over.
        failures: u32,
    },
    /// Stop the pipeline that runs, then build and start it again.
    Rebuild {
        /// Failures in a row carried over.
        failures: u32,
    },
    /// Stop the pipeline and forget it.
    Stop,
    /// Stop what runs and hold the object refused for `reason`.
    Refuse {
        /// Why.
        reason: Reason,
        /// Whether to build it again after the backoff with nothing changed.
        retry: bool,
        /// Failures in a row, this one included.
        failures: u32,
    },
}

/// The decision for one provider id. extdns's finalizer is not in it: kube-runtime's `finalizer` helper adds
/// it before the leader decides, and removes it once a deletion's decision is carried out.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Decision {
    /// The pipeline.
    pub pipeline: Act,
    /// The status to say, when it changes (written by the leader; a follower keeps it for when it leads).
    pub status: Option<(Reason, String)>,
    /// What the status says of a running pipeline none of whose syncs has reported yet (written only while
    /// none has: a sync's own outcome says more).
    pub first_sync: Option<String>,
    /// When to look at the object again with nothing changed (the Secret's next read, a backoff's end).
    pub requeue: Option<Duration>,
}

/// Every id's decision: conflicts are found among the map's objects (the newer of two refused), then each
/// row is decided alone.
pub fn decide_all(rows: &BTreeMap<ProviderId, Row>, now: Now) -> BTreeMap<ProviderId, Decision> {
    let objects: Vec<&ProviderObject> = rows.values().filter_map(|r| r.object.as_ref()).collect();
    let refused: BTreeMap<ProviderId, String> = conflicts(&objects).into_iter().map(|c| (c.refused, c.why)).collect();
    rows.iter()
        .map(|(id, row)| (id.clone(), decide(row, refused.get(id).map(String::as_str), now)))
        .collect()
}

/// One row's decision, `conflict` saying why it is refused in favour of an older provider.
pub fn decide(row: &Row, conflict: Option<&str>, now: Now) -> Decision {
    let held = row.pipeline.as_ref();
    let stop = if held.is_some() { Act::Stop } else { Act::Leave };
    let Some(seen) = &row.seen else {
        // Gone (deleted without our finalizer, or after it went): its records stay, its pipeline stops.
        return Decision {
            pipeline: stop,
            ..Decision::default()
        };
    };
    if seen.deleting {
        if !(now.leader && seen.finalized) {
            return Decision {
                pipeline: stop,
                ..Decision::default()
            };
        }
        let message = match (&seen.invalid, seen.records) {
            (Some(_), _) => "stopped; its records are left in place".to_string(),
            (None, Some(1)) => "stopped; its 1 record is left in place".to_string(),
            (None, n) => format!("stopped; its {} records are left in place", n.unwrap_or(0)),
        };
        return Decision {
            pipeline: stop,
            status: Some((Reason::Deleting, message)),
            ..Decision::default()
        };
    }
    // A pipeline held for an object of this name deleted and made again is not this object's: it is
    // stopped and this one's started (`Rebuild`), whatever their generations say.
    let current = held.filter(|p| p.uid == seen.uid);
    let refused_as = |reason: Reason| {
        current.is_some_and(|p| {
            p.generation == seen.generation
                && matches!(p.state, PipelineState::Refused { reason: r, .. } if r == reason)
        })
    };
    let refuse = |reason: Reason, why: &str| Decision {
        pipeline: Act::Refuse {
            reason,
            retry: false,
            failures: 0,
        },
        status: Some((reason, why.to_string())),
        ..Decision::default()
    };
    if let Some(why) = &seen.invalid {
        if refused_as(Reason::ConfigInvalid) {
            return Decision::default();
        }
        return refuse(Reason::ConfigInvalid, why);
    }
    if let Some(why) = conflict {
        if refused_as(Reason::Conflict) {
            return Decision::default();
        }
        return refuse(Reason::Conflict, why);
    }
    let same = current.filter(|p| p.generation == seen.generation);
    if let Some(p) = same
        && let PipelineState::Ended { panic } = &p.state
    {
        let failures = p.failures + 1;
        let wait = rebuild_after(failures);
        let why = match panic {
            Some(text) => format!("the provider's pipeline panicked: {text}"),
            None => "the provider's pipeline stopped unexpectedly".to_string(),
        };
        return Decision {
            pipeline: Act::Refuse {
                reason: Reason::SyncFailed,
                retry: true,
                failures,
            },
            status: Some((Reason::SyncFailed, format!("{why}; built again in {}s", wait.as_secs()))),
            requeue: Some(wait),
            ..Decision::default()
        };
    }
    let secret_due = current.map(|p| p.secret_read + now.interval);
    let retry_at = current.and_then(|p| match p.state {
        PipelineState::Refused { retry: true, at, .. } => Some(at + rebuild_after(p.failures)),
        _ => None,
    });
    // A running pipeline that has not synced yet is looked at again (for `/readyz`, and to say so),
    // backing off while it does not.
    let waited = same
        .filter(|p| p.state == PipelineState::Running && !p.synced)
        .map(|p| now.at.saturating_duration_since(p.started));
    let look = waited.map(first_sync_wait);
    let first_sync = waited
        .zip(look)
        .and_then(|(waited, look)| crate::first_sync::waiting(waited, look));
    let healthy = match (same, retry_at) {
        // A conflict that no longer holds frees the newer provider at once.
        (Some(p), _)
            if matches!(
                p.state,
                PipelineState::Refused {
                    reason: Reason::Conflict,
                    ..
                }
            ) =>
        {
            false
        }
        (Some(_), Some(at)) => now.at < at,
        (Some(_), None) => true,
        (None, _) => false,
    };
    let next = [secret_due, retry_at, look.map(|w| now.at + w)]
        .into_iter()
        .flatten()
        .filter(|t| *t > now.at)
        .min()
        .map(|t| t - now.at);
    if healthy && secret_due.is_some_and(|t| now.at < t) {
        return Decision {
            requeue: next,
            first_sync,
            ..Decision::default()
        };
    }
    let failures = same.map_or(0, |p| p.failures);
    match &row.secret {
        SecretRead::NotRead => Decision {
            pipeline: Act::ReadSecret,
            ..Decision::default()
        },
        SecretRead::Invalid(why) => Decision {
            requeue: Some(now.interval),
            ..refuse(Reason::CredentialsInvalid, why)
        },
        // The API server, not the Secret: a running pipeline keeps running with what it has.
        SecretRead::Unreachable(_) => Decision {
            requeue: Some(REBUILD_AFTER),
            ..Decision::default()
        },
        SecretRead::Read(version) => {
            let rotated = current.is_some_and(|p| p.secret_version != *version);
            if healthy && !rotated {
                return Decision {
                    pipeline: Act::SecretChecked,
                    requeue: Some(now.interval.min(next.unwrap_or(now.interval))),
                    first_sync,
                    ..Decision::default()
                };
            }
            let failures = if rotated { 0 } else { failures };
            Decision {
                pipeline: match held {
                    Some(_) => Act::Rebuild { failures },
                    None => Act::Start { failures },
                },
                status: Some((Reason::Pending, PENDING.to_string())),
                requeue: Some(now.interval),
                ..Decision::default()
            }
        }
    }
}

/// The decision after a build that failed with `why` (`failures` in a row before it): refused as
/// `ConfigInvalid`, built again after the backoff when `retry` says the same spec may succeed later.
pub fn build_failed(failures: u32, retry: bool, why: &str) -> Decision {
    let failures = failures + 1;
    Decision {
        pipeline: Act::Refuse {
            reason: Reason::ConfigInvalid,
            retry,
            failures,
        },
        status: Some((Reason::ConfigInvalid, why.to_string())),
        requeue: retry.then(|| rebuild_after(failures)),
        ..Decision::default()
    }
}

/// Whether one kind of provider object has been listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KindState {
    /// Its first list has not come yet.
    Waiting,
    /// Listed: its objects are known.
    Listed,
    /// It cannot be listed (its CRD absent, or extdns may not): its watch tries again with backoff, and
    /// the other kind's providers run meanwhile.
    Unavailable,
}

/// Whether a kind whose list or watch failed with HTTP `status` cannot be listed: only 404 (its CRD is not
/// installed, or not served) and 403 (extdns may not list it). Anything else (a timeout, a 5xx, a dropped
/// connection) is transient: the watch tries again with backoff, the kind still waits for its first list
/// (a conflict with its objects could not be seen), and the pipelines running are kept.
pub fn unavailable(status: Option<u16>) -> bool {
    matches!(status, Some(403 | 404))
}

/// Whether the manager is ready (`/readyz`): every kind listed or known unavailable, and every pipeline
/// that runs synced once (a refused one waits for nobody).
pub fn ready(kinds: &[KindState], running_synced: impl IntoIterator<Item = bool>) -> bool {
    kinds.iter().all(|k| *k != KindState::Waiting) && running_synced.into_iter().all(|s| s)
}

#[cfg(test)]
mod tests;
