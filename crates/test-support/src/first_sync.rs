//! The least a first sync into an empty zone can cost under a cloud's documented rules (issue 50): how many
//! write requests its batches need when each is filled to the API's maximum, and the least time the
//! account's rate limit lets those and the reads take. The benchmark reports it beside what each
//! controller took, and the functional tests hold extdns's request count to it; one computation for both,
//! so the figure a table shows is the one a test asserts.
//!
//! The time is the limit's alone: the requests leave as early as the meter admits them, each taking no
//! time of its own. A window meter of `r` per `w` admits request `k` (from 0) at `floor(k / r) * w`; a
//! token bucket of `c` refilled at `p` a second admits the first `c` at once and one each `1 / p` after.

use std::time::Duration;

use crate::fake::{Meter, RateLimit};

/// What one request may carry at most, as the API counts it; `usize::MAX` where the API has no such limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PerRequest {
    /// Changes (Route53), operations (Cloudflare's batch), additions plus deletions (Cloud DNS).
    pub changes: usize,
    /// Characters of record values (Route53's 32,000), bytes of record data (Cloud DNS).
    pub bytes: usize,
}

impl PerRequest {
    /// At most `changes` a request, no size limit.
    pub const fn changes(changes: usize) -> PerRequest {
        PerRequest {
            changes,
            bytes: usize::MAX,
        }
    }
}

/// Route53's ChangeResourceRecordSets: 1,000 changes and 32,000 characters of values a request
/// (<https://docs.aws.amazon.com/Route53/latest/DeveloperGuide/DNSLimitations.html#limits-api-requests-changeresourcerecordsets>).
pub const ROUTE53: PerRequest = PerRequest {
    changes: 1000,
    bytes: 32_000,
};
/// Cloudflare's `POST /zones/{zone_id}/dns_records/batch`: 200 records an action on a Free zone, 3,500 on
/// Pro, Business and Enterprise (<https://developers.cloudflare.com/dns/manage-dns-records/how-to/batch-record-changes/>).
pub const CLOUDFLARE_FREE: PerRequest = PerRequest::changes(200);
/// Cloud DNS's changes.create: 1,000 additions and 1,000 deletions a change (the fake's
/// `change_limits`), 100,000 bytes of record data (`extdns_provider_google::MAX_CHANGE_BYTES`).
pub const GOOGLE: PerRequest = PerRequest {
    changes: 1000,
    bytes: 100_000,
};

/// One unit of a first sync: a record and its ownership record, which travel in one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unit {
    /// Changes (or operations) it takes.
    pub changes: usize,
    /// Characters or bytes of its values, as the API counts them.
    pub bytes: usize,
}

/// The write requests `units` need, each filled to `limit` in order (a unit never split): what a
/// controller batching to the maximum sends.
pub fn write_requests(units: impl IntoIterator<Item = Unit>, limit: PerRequest) -> usize {
    let mut requests = 0;
    let (mut changes, mut bytes) = (0usize, 0usize);
    for u in units {
        let fits = changes > 0
            && changes.saturating_add(u.changes) <= limit.changes
            && bytes.saturating_add(u.bytes) <= limit.bytes;
        if fits {
            changes += u.changes;
            bytes += u.bytes;
        } else {
            requests += 1;
            (changes, bytes) = (u.changes, u.bytes);
        }
    }
    requests
}

/// The least time `requests` requests take under `limit`, all of them counted by it.
pub fn least_time(requests: usize, limit: RateLimit) -> Duration {
    let Some(last) = requests.checked_sub(1) else {
        return Duration::ZERO;
    };
    match limit.meter {
        Meter::Window { requests: per, window } => {
            let windows = u32::try_from(last / per.max(1)).unwrap_or(u32::MAX);
            window.saturating_mul(windows)
        }
        Meter::Bucket { capacity, per_second } => {
            let beyond = requests.saturating_sub(capacity as usize);
            Duration::from_secs_f64(beyond as f64 / per_second.max(f64::MIN_POSITIVE))
        }
    }
}

/// The most requests `limit` admits in any span of `span`: the figure a request log's busiest span is
/// held to ([`crate::fake::RequestLog::most_in_window`]).
pub fn most_admitted(limit: RateLimit, span: Duration) -> usize {
    match limit.meter {
        Meter::Window { requests, window } => {
            let windows = span.as_secs_f64() / window.as_secs_f64().max(f64::MIN_POSITIVE);
            requests * (windows.ceil().max(1.0) as usize)
        }
        Meter::Bucket { capacity, per_second } => capacity as usize + (span.as_secs_f64() * per_second).ceil() as usize,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A_AND_TXT: Unit = Unit { changes: 2, bytes: 100 };

    #[test]
    fn batches_fill_to_the_first_limit_reached() {
        // 10,000 records with their ownership records: Route53 is held by its 32,000 characters (320 units
        // a request), Cloudflare's Free plan by its 200 operations, Cloud DNS by its 1,000 additions.
        let units = || std::iter::repeat_n(A_AND_TXT, 10_000);
        assert_eq!(write_requests(units(), ROUTE53), 32);
        assert_eq!(write_requests(units(), CLOUDFLARE_FREE), 100);
        assert_eq!(write_requests(units(), GOOGLE), 20);
        assert_eq!(
            write_requests(units(), PerRequest::changes(1)),
            10_000,
            "a unit alone passes"
        );
        assert_eq!(write_requests(std::iter::empty(), ROUTE53), 0);
    }

    #[test]
    fn a_window_admits_its_requests_a_window_and_a_bucket_its_burst_then_its_rate() {
        let window = RateLimit::window(1200, Duration::from_secs(300));
        assert_eq!(least_time(1200, window), Duration::ZERO);
        assert_eq!(least_time(1201, window), Duration::from_secs(300));
        let bucket = RateLimit::bucket(5, 5.0);
        assert_eq!(least_time(5, bucket), Duration::ZERO);
        assert_eq!(least_time(35, bucket), Duration::from_secs(6));
        assert_eq!(least_time(0, bucket), Duration::ZERO);
        assert_eq!(most_admitted(bucket, Duration::from_secs(1)), 10);
        assert_eq!(most_admitted(window, Duration::from_secs(300)), 1200);
    }
}
