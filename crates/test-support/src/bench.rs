//! What the providers' throughput benchmarks share: the record count, the runtime, the records, the timed
//! steps of a create / read / delete round, and the whole round of the providers that read before they write.

use std::time::Instant;

use extdns_endpoint::{Change, Endpoint, RecordType, Ttl};
use extdns_provider::{Provider, ReadState, Records, Unit};

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

/// A runtime of two worker threads, for a bench whose fake serves on the same runtime as the client: the two
/// run side by side, as a client and a remote server would.
pub fn multi_thread_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("tokio runtime: {e}"))
}

/// Record `i` of a run: `r<i>.<zone>` A `10.x.y.z` (a distinct address per record), TTL 300.
pub fn a_record(i: usize, zone: &str) -> Endpoint {
    let ip = format!("10.{}.{}.{}", (i >> 16) & 255, (i >> 8) & 255, i & 255);
    Endpoint::new(&format!("r{i}.{zone}"), RecordType::A, [ip]).with_ttl(Ttl(300))
}

/// Prints a bench's title, then the heads of its columns: `own` (the bench's parameter and counts, already
/// right-aligned to their widths), then those of a [`Round`]'s rates.
pub fn print_header(title: &str, own: &str) {
    println!("{title}");
    println!("{own} {:>14} {:>10} {:>14}", "create rec/s", "read s", "delete rec/s");
}

/// One round's rates.
#[derive(Debug, Clone, Copy)]
pub struct Round {
    /// Records created a second (for a provider that reads before it writes, that read included).
    pub create: f64,
    /// Seconds to read them all back.
    pub read: f64,
    /// Records deleted a second.
    pub delete: f64,
}

/// The three rates under [`print_header`]'s heads; the formatter's precision (2 without one) is the read's.
impl std::fmt::Display for Round {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let digits = f.precision().unwrap_or(2);
        write!(
            f,
            "{:>14.0} {:>10.digits$} {:>14.0}",
            self.create, self.read, self.delete
        )
    }
}

/// Applies `units` on `state` and returns the units applied a second (a record with its ownership record
/// counts once); a provider's error panics, naming `what`.
pub async fn timed_apply(provider: &dyn Provider, state: &ReadState, units: &[Unit<'_>], what: &str) -> f64 {
    let t = Instant::now();
    if let Err(e) = provider.apply(state, units).await {
        panic!("{what}: {e}");
    }
    units.len() as f64 / t.elapsed().as_secs_f64()
}

/// Reads every record back: what the provider returned, and the seconds the read took.
pub async fn timed_read(provider: &dyn Provider) -> (Records, f64) {
    let t = Instant::now();
    let records = provider.records().await.unwrap_or_else(|e| panic!("read: {e}"));
    (records, t.elapsed().as_secs_f64())
}

/// Creates `n` [`a_record`]s in `zone` on `state` (what the provider read before, if it needs that): the
/// records created a second.
pub async fn create(provider: &dyn Provider, state: &ReadState, n: usize, zone: &str) -> f64 {
    let changes: Vec<Change> = (0..n).map(|i| Change::Create(a_record(i, zone))).collect();
    let units: Vec<Unit<'_>> = changes.iter().map(Unit::new).collect();
    timed_apply(provider, state, &units, "create").await
}

/// Reads every record back and deletes the `n` that `ours` picks from what was read, each with the ownership
/// change `owner` gives it: the read's seconds and the deletes a second.
pub async fn read_then_delete(
    provider: &dyn Provider,
    n: usize,
    ours: impl Fn(&Endpoint) -> bool,
    owner: impl Fn(&Endpoint) -> Option<Change>,
) -> (f64, f64) {
    let (records, read) = timed_read(provider).await;
    let deletes: Vec<(Change, Option<Change>)> = records
        .endpoints
        .iter()
        .filter(|e| ours(e))
        .map(|e| (Change::Delete(e.clone()), owner(e)))
        .collect();
    assert_eq!(deletes.len(), n, "every record was read back");
    let units: Vec<Unit<'_>> = deletes
        .iter()
        .map(|(change, ownership)| Unit {
            change,
            ownership: ownership.as_ref(),
        })
        .collect();
    (read, timed_apply(provider, &records.state, &units, "delete").await)
}

/// Creates `n` [`a_record`]s in `zone` (reading the zone first, as a sync does), reads them back and
/// deletes them; the zone must hold nothing else.
pub async fn create_read_delete(provider: &dyn Provider, n: usize, zone: &str) -> Round {
    let t = Instant::now();
    let (before, _) = timed_read(provider).await;
    create(provider, &before.state, n, zone).await;
    let create = n as f64 / t.elapsed().as_secs_f64();
    let (read, delete) = read_then_delete(provider, n, |_| true, |_| None).await;
    Round { create, read, delete }
}
