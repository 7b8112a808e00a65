use std::fmt;
use std::str::FromStr;

use extdns_endpoint::Change;

/// Which kinds of change a sync may make (`--policy`).
///
/// external-dns v0.22 made the flag mandatory; before that it defaulted to `sync`, which is our default too
/// so that library users and tests get the behaviour most deployments had.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Policy {
    /// Create, update and delete.
    #[default]
    Sync,
    /// Create and update, never delete.
    UpsertOnly,
    /// Only create.
    CreateOnly,
}

impl Policy {
    /// The flag spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Sync => "sync",
            Policy::UpsertOnly => "upsert-only",
            Policy::CreateOnly => "create-only",
        }
    }

    /// Drop the changes this policy forbids.
    pub fn apply(self, changes: &mut Vec<Change>) {
        match self {
            Policy::Sync => {}
            Policy::UpsertOnly => changes.retain(|c| !matches!(c, Change::Delete(_))),
            Policy::CreateOnly => changes.retain(|c| matches!(c, Change::Create(_))),
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `--policy` had a value that is not one of the three policies.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown policy {0:?} (one of: sync, upsert-only, create-only)")]
pub struct UnknownPolicy(pub String);

impl FromStr for Policy {
    type Err = UnknownPolicy;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "sync" => Ok(Policy::Sync),
            "upsert-only" => Ok(Policy::UpsertOnly),
            "create-only" => Ok(Policy::CreateOnly),
            other => Err(UnknownPolicy(other.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use extdns_endpoint::{Endpoint, RecordType};

    fn all_kinds() -> Vec<Change> {
        let e = |n: &str| Endpoint::new(n, RecordType::A, ["1.2.3.4"]);
        vec![
            Change::Delete(e("d.example.com")),
            Change::update(
                e("u.example.com"),
                e("u.example.com").with_ttl(extdns_endpoint::Ttl(60)),
            ),
            Change::Create(e("c.example.com")),
        ]
    }

    fn actions(policy: Policy) -> Vec<&'static str> {
        let mut c = all_kinds();
        policy.apply(&mut c);
        c.iter().map(Change::action).collect()
    }

    #[test]
    fn sync_policy_keeps_every_change() {
        assert_eq!(actions(Policy::Sync), ["delete", "update", "create"]);
    }

    #[test]
    fn upsert_only_policy_drops_deletes() {
        assert_eq!(actions(Policy::UpsertOnly), ["update", "create"]);
    }

    #[test]
    fn create_only_policy_keeps_only_creates() {
        assert_eq!(actions(Policy::CreateOnly), ["create"]);
    }

    #[test]
    fn policies_parse_from_their_flag_names_and_reject_others() {
        for p in [Policy::Sync, Policy::UpsertOnly, Policy::CreateOnly] {
            assert_eq!(p.as_str().parse::<Policy>(), Ok(p));
        }
        assert!("Sync".parse::<Policy>().is_err());
        assert!("upsert".parse::<Policy>().is_err());
        assert_eq!(Policy::default(), Policy::Sync);
    }
}
