//! The groups of settings that mean the same thing for every provider that has them, so each provider's
//! configuration holds them as one field each (`calls` or, for a cloud API, [`ApiSettings`]'s `api`,
//! `zones`, `batch`) and the binary fills them from the shared flags once, whichever provider runs: how
//! each call is made, which zones the provider manages, and how its writes are cut into calls and spaced.

use std::time::Duration;

use extdns_endpoint::DomainFilter;

use crate::backoff::Backoff;
use crate::pace::Rate;

#[cfg(doc)]
use crate::ApiSettings;

/// How a provider makes each call to its backend: the time limit, the retries, and its own write rate.
/// A server of the provider's own (PowerDNS, Pi-hole) takes this alone; a cloud API's [`ApiSettings`]
/// adds the account's limits around it.
#[derive(Debug, Clone)]
pub struct CallSettings {
    /// Per-request time limit (connect, send, answer).
    pub timeout: Duration,
    /// Retries of the calls the provider's classification names transient or throttled.
    pub backoff: Backoff,
    /// `--provider-write-rate`: this client's write requests at most this often (none by default).
    pub write_rate: Option<Rate>,
}

impl Default for CallSettings {
    /// 30 s a request, the default backoff, no write rate.
    fn default() -> CallSettings {
        CallSettings {
            timeout: Duration::from_secs(30),
            backoff: Backoff::default(),
            write_rate: None,
        }
    }
}

/// Which of the account's zones a provider manages: `--domain-filter` and its relatives, and
/// `--zone-id-filter`. A provider with more ways of choosing zones (tags, visibility, names) keeps them
/// beside this group, as they mean something of its own.
#[derive(Debug, Clone, Default)]
pub struct ZoneSelection {
    /// Zones whose name the filter accepts (or, where the provider says so, that contain a name it
    /// accepts); the default accepts every zone.
    pub domain_filter: DomainFilter,
    /// Only zones whose id matches one of these (each provider says how an id matches: whole, or a
    /// suffix); empty for all.
    pub zone_ids: Vec<String>,
}

impl ZoneSelection {
    /// Whether `id` is selected by `zone_ids`, read as suffixes of the id (Route53, Azure and Cloud DNS
    /// ids carry a prefix the flag may leave out): every id when none is set.
    pub fn id_ends_with_one(&self, id: &str) -> bool {
        self.zone_ids.is_empty() || self.zone_ids.iter().any(|f| id.ends_with(f.as_str()))
    }
}

/// How a provider's writes are cut into calls and spaced: at most `size` changes a call (the provider
/// says what one change counts and whether 0 means its API's own limit), and `interval` between two
/// calls, to stay under the API's write limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batching {
    /// Most changes in one write call.
    pub size: usize,
    /// Pause between two write calls; zero for none.
    pub interval: Duration,
}

impl Batching {
    /// `size` changes a call, `interval` apart.
    pub fn new(size: usize, interval: Duration) -> Batching {
        Batching { size, interval }
    }

    /// Waits out the interval before the call numbered `index` (from 0): the first call goes at once.
    pub async fn pause_before(&self, index: usize) {
        if index > 0 && !self.interval.is_zero() {
            tokio::time::sleep(self.interval).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zone_ids_select_by_suffix_and_none_selects_all() {
        let mut zones = ZoneSelection::default();
        assert!(zones.id_ends_with_one("/hostedzone/Z1"));
        zones.zone_ids = vec!["Z1".into()];
        assert!(zones.id_ends_with_one("/hostedzone/Z1"));
        assert!(!zones.id_ends_with_one("/hostedzone/Z2"));
    }

    #[tokio::test(start_paused = true)]
    async fn only_calls_after_the_first_wait_for_the_interval() {
        let batch = Batching::new(10, Duration::from_secs(3));
        let start = tokio::time::Instant::now();
        batch.pause_before(0).await;
        assert_eq!(start.elapsed(), Duration::ZERO);
        batch.pause_before(1).await;
        assert_eq!(start.elapsed(), Duration::from_secs(3));
    }
}
