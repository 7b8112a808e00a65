//! Our owner id's heartbeat in a domain, and what it says about another process writing under our owner id
//! (two extdns with one `--txt-owner-id`), judged without comparing clocks and without remembering anything
//! between calls: everything the verdict needs is in the heartbeat as the zone holds it.
//!
//! A heartbeat names the process that wrote it (`instance`), how many times in a row that process wrote it
//! (`seq`, 1 when it wrote the record first or took it over), the process it took the record over from
//! (`from`) and whether that process had taken it from us first (`contested`). Each upkeep writes our
//! heartbeat when it is due, and takes over one another process wrote. So:
//! - a heartbeat of another process whose `from` names us was taken from us after our last write: that
//!   process is alive, a conflict (both then take the heartbeat back at every upkeep, each seeing the other's
//!   `from` name it, and both write nothing shared while the other runs);
//! - one of another process that does not name us proves nothing yet (a process that stopped, say ours
//!   before a restart, or a live one that has not met us): we take it over and wait;
//! - our own, taken over fewer than [`SETTLE_WRITES`] writes ago, is still waiting for the process we took it
//!   from to take it back; a live one would have (it takes over at each of its upkeeps), so after that many
//!   of our writes untouched, the other process stopped and we write shared names again.
//!
//! The writer's clock (`at`) is only for the other owners' pruning (docs/safety.md), never for this verdict.

use super::format::Heartbeat;
use super::{SharedCount, SharedRegistry};
use crate::RegistryError;
use extdns_endpoint::{Endpoint, RecordType};

/// How many of our own heartbeat writes in a row, after we took the heartbeat over from another process,
/// prove that process stopped: one that runs takes the heartbeat back at its next upkeep, within one of its
/// intervals; three of ours leave room for its interval to be twice ours, or a sync to run long.
pub(crate) const SETTLE_WRITES: u64 = 3;

/// Another process under our owner id in one domain, as the zone shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SecondInstance {
    /// The other process's instance id.
    pub(crate) instance: String,
    /// Proven alive (it took our heartbeat over after we wrote it): a conflict. Otherwise it is only not
    /// proven stopped yet, and we wait.
    pub(crate) conflict: bool,
}

/// What `h`, our owner id's heartbeat as read, says to the process `instance` about another one.
pub(crate) fn judge(h: &Heartbeat, instance: &str) -> Option<SecondInstance> {
    if h.instance != instance {
        return Some(SecondInstance {
            instance: h.instance.clone(),
            conflict: h.from.as_deref() == Some(instance),
        });
    }
    let from = h.from.as_ref()?;
    (h.seq < SETTLE_WRITES).then(|| SecondInstance {
        instance: from.clone(),
        conflict: h.contested,
    })
}

/// The heartbeat `instance` of `owner` writes at `now` over `held`, our owner id's heartbeat as read (none:
/// the first in the domain).
pub(crate) fn next(owner: &str, instance: &str, held: Option<&Heartbeat>, now: u64) -> Heartbeat {
    let (seq, from, contested) = match held {
        None => (1, None, false),
        Some(h) if h.instance == instance => (h.seq.saturating_add(1), h.from.clone(), h.contested),
        Some(h) => (1, Some(h.instance.clone()), h.from.as_deref() == Some(instance)),
    };
    Heartbeat {
        owner: owner.to_string(),
        instance: instance.to_string(),
        seq,
        from,
        contested,
        at: now,
    }
}

impl SharedRegistry {
    /// Our first heartbeat record in `domain`, written now.
    pub(super) fn heartbeat_record(&self, domain: &str) -> Result<Endpoint, RegistryError> {
        self.heartbeat_over(domain, None)
    }

    /// Our heartbeat record in `domain`, written now over `held` (our owner id's as read): counted on when
    /// ours, taken over when another process's.
    pub(super) fn heartbeat_over(&self, domain: &str, held: Option<&Heartbeat>) -> Result<Endpoint, RegistryError> {
        let value = self
            .format
            .heartbeat_value(&next(&self.owner, &self.instance, held, (self.clock)()))
            .map_err(RegistryError::Shared)?;
        Ok(Endpoint::new(
            &super::Format::heartbeat_name(&self.owner, domain),
            RecordType::Txt,
            [value],
        ))
    }

    /// Says what the upkeep found about another process in `domain`: a conflict is a warning naming both
    /// processes and counted; a wait after taking the heartbeat over is an info line.
    pub(super) fn report_second_instance(&self, domain: &str, other: &SecondInstance) {
        if other.conflict {
            self.count(SharedCount::Conflicts, "instance", 1);
            tracing::warn!(
                domain = %domain, owner = %self.owner, theirs = %other.instance, ours = %self.instance,
                "shared name conflict: another live process writes heartbeats under our owner id; \
                 nothing shared is written in this domain"
            );
        } else {
            tracing::info!(
                domain = %domain, owner = %self.owner, theirs = %other.instance, ours = %self.instance,
                writes = SETTLE_WRITES,
                "our owner id's heartbeat was another process's: taken over; shared names are written again once \
                 it stays ours this many writes in a row (a live process would take it back)"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn beat(instance: &str, seq: u64, from: Option<&str>, contested: bool) -> Heartbeat {
        Heartbeat {
            owner: "cluster-a".into(),
            instance: instance.into(),
            seq,
            from: from.map(str::to_string),
            contested,
            at: 0,
        }
    }

    #[test]
    fn another_process_is_a_conflict_only_once_it_took_the_heartbeat_from_us() {
        assert_eq!(judge(&beat("us", 7, None, false), "us"), None);
        let waiting = judge(&beat("them", 4, Some("someone"), false), "us");
        assert_eq!(waiting.map(|s| (s.instance, s.conflict)), Some(("them".into(), false)));
        let proven = judge(&beat("them", 1, Some("us"), false), "us");
        assert_eq!(proven.map(|s| (s.instance, s.conflict)), Some(("them".into(), true)));
    }

    #[test]
    fn a_heartbeat_taken_over_waits_its_writes_then_is_ours() {
        let them = beat("them", 9, None, false);
        let mut held = next("cluster-a", "us", Some(&them), 5);
        assert_eq!(
            (held.seq, held.from.as_deref(), held.contested),
            (1, Some("them"), false)
        );
        for _ in 1..SETTLE_WRITES {
            assert_eq!(
                judge(&held, "us").map(|s| (s.instance, s.conflict)),
                Some(("them".into(), false))
            );
            held = next("cluster-a", "us", Some(&held), 5);
        }
        assert_eq!(judge(&held, "us"), None, "{held:?}");
    }

    #[test]
    fn taking_back_a_heartbeat_taken_from_us_is_a_conflict_on_both_sides() {
        let ours = next("cluster-a", "us", None, 1);
        let theirs = next("cluster-a", "them", Some(&ours), 1);
        assert!(!theirs.contested, "they had no proof of us");
        assert_eq!(judge(&theirs, "us").map(|s| s.conflict), Some(true));
        let back = next("cluster-a", "us", Some(&theirs), 1);
        assert!(back.contested);
        assert_eq!(judge(&back, "us").map(|s| s.conflict), Some(true), "while it settles");
        assert_eq!(judge(&back, "them").map(|s| s.conflict), Some(true));
    }
}
