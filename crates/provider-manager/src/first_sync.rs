//! A pipeline that has not synced yet: how long the manager waits before looking at it again, and what its
//! status says meanwhile. Looked at once a second at first (readiness comes soon after a first sync), then
//! less and less often, so a pipeline that never syncs (its API down for good) costs a look every five
//! minutes, not every second.

use std::time::Duration;

/// The status message of a pipeline waiting for its first sync.
pub const PENDING: &str = "waiting for the first sync";

/// The first wait before a pipeline that has not synced is looked at again.
pub const FIRST_SYNC_LOOK: Duration = Duration::from_secs(1);
/// The longest wait between two looks at a pipeline that has not synced.
pub const FIRST_SYNC_LOOK_MAX: Duration = Duration::from_secs(300);

/// The wait before the next look at a pipeline that has not synced in the `waited` since it started: as
/// long as it has waited, so the looks double (1 s, 2 s, 4 s, ...), between [`FIRST_SYNC_LOOK`] and
/// [`FIRST_SYNC_LOOK_MAX`].
pub fn first_sync_wait(waited: Duration) -> Duration {
    waited.clamp(FIRST_SYNC_LOOK, FIRST_SYNC_LOOK_MAX)
}

/// What the status says of a pipeline none of whose syncs reported in `waited` (nothing at the first look,
/// when `waited` is under [`FIRST_SYNC_LOOK`]: the status says it is waiting already).
pub(crate) fn waiting(waited: Duration, look: Duration) -> Option<String> {
    (waited >= FIRST_SYNC_LOOK).then(|| {
        format!(
            "{}: none completed in {}s; looked at again in {}s",
            PENDING,
            waited.as_secs(),
            look.as_secs()
        )
    })
}
