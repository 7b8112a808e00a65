//! The status extdns writes on a provider object: one `Ready` condition with a reason a user can act on,
//! the zones found, the records owned and the last sync.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use crate::DnsProviderStatus;

/// The condition type.
pub const READY: &str = "Ready";

/// The longest condition message written (the API server refuses 32 KiB; a provider's error can be long).
pub const MESSAGE_MAX: usize = 1024;

/// Why a provider is, or is not, ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reason {
    /// The last sync completed (`Ready=True`).
    Synced,
    /// The provider was built and waits for its first sync (the informers' first list, or the lease).
    Pending,
    /// The spec or its config does not parse as the flags would, or names what the deployment does not watch.
    ConfigInvalid,
    /// The Secret is missing, unreadable or lacks a key, or the provider refused the credentials.
    CredentialsInvalid,
    /// The read found none of the zones the domain filter includes.
    ZonesNotFound,
    /// An older provider writes the same owner id over overlapping zones.
    Conflict,
    /// The provider failed (API down, a refused batch...): retried with backoff.
    SyncFailed,
    /// The object is being deleted: its pipeline is stopped and its records are left in place.
    Deleting,
}

impl Reason {
    /// The reason as written in the condition.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Synced => "Synced",
            Reason::Pending => "Pending",
            Reason::ConfigInvalid => "ConfigInvalid",
            Reason::CredentialsInvalid => "CredentialsInvalid",
            Reason::ZonesNotFound => "ZonesNotFound",
            Reason::Conflict => "Conflict",
            Reason::SyncFailed => "SyncFailed",
            Reason::Deleting => "Deleting",
        }
    }

    /// Whether the provider is ready with this reason.
    pub fn is_ready(self) -> bool {
        self == Reason::Synced
    }
}

/// The `Ready` condition for `reason`, keeping `previous`'s transition time when the status did not change
/// (a condition's `lastTransitionTime` is when it last flipped, not when it was last written).
pub fn ready_condition(
    previous: Option<&DnsProviderStatus>,
    reason: Reason,
    message: &str,
    generation: i64,
    now: Time,
) -> Condition {
    let status = if reason.is_ready() { "True" } else { "False" };
    let last_transition_time = previous
        .and_then(|p| p.conditions.iter().find(|c| c.type_ == READY))
        .filter(|c| c.status == status)
        .map(|c| c.last_transition_time.clone())
        .unwrap_or(now);
    Condition {
        type_: READY.to_string(),
        status: status.to_string(),
        reason: reason.as_str().to_string(),
        message: truncate(message, MESSAGE_MAX),
        observed_generation: Some(generation),
        last_transition_time,
    }
}

/// The merge patch of the status subresource that writes `status`.
pub fn patch(status: &DnsProviderStatus) -> serde_json::Value {
    serde_json::json!({ "status": status })
}

/// At most `max` bytes of `s`, cut on a character boundary, with an ellipsis when cut.
fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max.saturating_sub(3);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;

    fn at(s: i64) -> Time {
        Time(Timestamp::from_second(s).unwrap_or(Timestamp::UNIX_EPOCH))
    }

    #[test]
    fn the_transition_time_moves_only_when_the_status_flips() {
        let first = ready_condition(None, Reason::SyncFailed, "down", 1, at(10));
        let status = DnsProviderStatus {
            conditions: vec![first],
            ..DnsProviderStatus::default()
        };
        let still = ready_condition(Some(&status), Reason::CredentialsInvalid, "401", 1, at(20));
        assert_eq!(still.last_transition_time, at(10), "False stays False");
        assert_eq!(still.reason, "CredentialsInvalid");
        let ready = ready_condition(Some(&status), Reason::Synced, "", 2, at(30));
        assert_eq!((ready.status.as_str(), ready.last_transition_time), ("True", at(30)));
        assert_eq!(ready.observed_generation, Some(2));
    }

    #[test]
    fn a_long_message_is_cut_on_a_character_boundary() {
        let long = "é".repeat(1000);
        let c = ready_condition(None, Reason::SyncFailed, &long, 1, at(0));
        assert!(c.message.len() <= MESSAGE_MAX && c.message.ends_with("..."));
        let p = patch(&DnsProviderStatus {
            conditions: vec![c],
            records: Some(3),
            ..DnsProviderStatus::default()
        });
        assert_eq!(p["status"]["records"], 3);
        assert_eq!(p["status"]["conditions"][0]["type"], "Ready");
    }
}
