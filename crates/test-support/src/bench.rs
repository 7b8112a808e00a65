//! What the providers' throughput benchmarks share: the record count, the runtime, the records, and the
//! create / read / delete round of the providers that read before they write.

use std::time::Instant;

use extdns_endpoint::{Change, Endpoint, RecordType, Ttl};
use extdns_provider::{Provider, Unit};

/// The number of records from `var` (such as `PDNS_BENCH_RECORDS`), 10,000 when unset or not a number.
pub fn records_from_env(var: &str) -> usize {
    std::env::var(var).ok().and_then(|v| v.parse().ok()).unwrap_or(10_000)
}

/// A runtime on this thread.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("tokio runtime: {e}"))
}

/// Record `i` of a run: `r<i>.<zone>` A `10.x.y.z` (a distinct address per record), TTL 300.
pub fn a_record(i: usize, zone: &str) -> Endpoint {
    let ip = format!("10.{}.{}.{}", (i >> 16) & 255, (i >> 8) & 255, i & 255);
    Endpoint::new(&format!("r{i}.{zone}"), RecordType::A, [ip]).with_ttl(Ttl(300))
}

/// One round's rates.
#[derive(Debug, Clone, Copy)]
pub struct Round {
    /// Records created a second (the read that precedes the write included).
    pub create: f64,
    /// Seconds to read them all back.
    pub read: f64,
    /// Records deleted a second.
    pub delete: f64,
}

/// Creates `n` [`a_record`]s in `zone` (reading the zone first, as a sync does), reads them back and
/// deletes them; the zone must hold nothing else.
pub async fn create_read_delete(provider: &dyn Provider, n: usize, zone: &str) -> Round {
    let changes: Vec<Change> = (0..n).map(|i| Change::Create(a_record(i, zone))).collect();
    let units: Vec<Unit<'_>> = changes.iter().map(Unit::new).collect();
    let t = Instant::now();
    let records = provider.records().await.unwrap_or_else(|e| panic!("{e}"));
    if let Err(e) = provider.apply(&records.state, &units).await {
        panic!("create: {e}");
    }
    let create = n as f64 / t.elapsed().as_secs_f64();
    let t = Instant::now();
    let records = provider.records().await.unwrap_or_else(|e| panic!("{e}"));
    let read = t.elapsed().as_secs_f64();
    assert_eq!(records.endpoints.len(), n, "every record was written");
    let deletes: Vec<Change> = records.endpoints.iter().cloned().map(Change::Delete).collect();
    let units: Vec<Unit<'_>> = deletes.iter().map(Unit::new).collect();
    let t = Instant::now();
    if let Err(e) = provider.apply(&records.state, &units).await {
        panic!("delete: {e}");
    }
    Round {
        create,
        read,
        delete: n as f64 / t.elapsed().as_secs_f64(),
    }
}
