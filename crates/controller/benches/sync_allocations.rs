//! Heap traffic of one full reconcile of 100,000 A records (issue 9: what the borrowed `Change`s and the
//! registry `Snapshot` save over owned change lists cloned at every layer).
//!
//! The path is the controller's own: `Controller::run_once` over the TXT registry over the in-memory provider,
//! with a source that hands over endpoints built before the measurement (a `mem::take`, no copy), so what is
//! counted is the controller's share of a sync (registry read and ownership decoding, adjust, plan, apply,
//! metrics), the provider's read and write included, the sources' work excluded.
//!
//! * `first`: an empty zone; every record and its ownership TXT record are created.
//! * `steady`: every record already there and owned; nothing to do.
//!
//! Memory is counted, not estimated: a counting global allocator (`cap`, wrapping the system allocator)
//! gives the bytes requested during the sync (`total_allocated`, freed blocks included) and the peak of live
//! bytes above what was live when the sync started. `cap` keeps its maximum for the life of the process and
//! cannot reset it, so before each sync the bench reserves (and never touches, so the pages are never made
//! resident) a block that raises the live bytes to the maximum so far; the sync's own peak is then exactly
//! the growth of that maximum. The figures are requested bytes: the allocator's per-block overhead comes on
//! top.
//!
//! Each sync is also timed, as wall time and as time on a CPU (the machine is shared with parallel builds).
//!
//! `cargo bench -p extdns-controller --bench sync_allocations` runs 100,000 records, 5 syncs of each kind
//! (the table gives the medians); under `cargo test` the same code runs 1,000 records once as a check.
//! `SYNC_BENCH_RECORDS=10000` sets another number of records.

mod support;

use std::alloc::System;
use std::error::Error;
use std::hint::black_box;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use cap::Cap;
use extdns_controller::{Controller, ControllerConfig, DesiredEndpoints, Metrics, SyncReport};
use extdns_endpoint::{Change, Endpoint, RecordType};
use extdns_informer::{Cluster, ClusterStore, LiveCluster};
use extdns_provider::{InMemoryProvider, Provider};
use extdns_registry::{Ownership, OwnershipConfig, Registry, TxtRegistry, TxtRegistryConfig};
use extdns_source::{DesiredIndex, PipelineOutput, SourceError};
use tokio::runtime::Runtime;

#[global_allocator]
static ALLOC: Cap<System> = Cap::new(System, usize::MAX);

/// A source whose endpoints are loaded before each sync and handed over without a copy.
#[derive(Default)]
struct Handover(Mutex<Vec<Endpoint>>);

impl Handover {
    fn load(&self, endpoints: Vec<Endpoint>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = endpoints;
    }
}

#[async_trait]
impl DesiredEndpoints for Handover {
    async fn desired(&self, _: &ClusterStore, _: Option<&mut DesiredIndex>) -> Result<PipelineOutput, SourceError> {
        let endpoints = std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner));
        Ok(PipelineOutput {
            endpoints,
            ..PipelineOutput::default()
        })
    }
}

struct Setup {
    controller: Controller,
    provider: Arc<InMemoryProvider>,
    source: Arc<Handover>,
}

/// The wiring of `crates/extdns`: one ownership value shared by the plan and the TXT registry.
fn setup() -> Result<Setup, Box<dyn Error>> {
    let provider = Arc::new(InMemoryProvider::new(vec!["example.com".into()]));
    let source = Arc::new(Handover::default());
    let ownership = Ownership::new(OwnershipConfig::default())?;
    let mut config = ControllerConfig::default();
    config.plan.owner_id = ownership.owner_id().to_string();
    let as_provider: Arc<dyn Provider> = provider.clone();
    let registry: Arc<dyn Registry> = Arc::new(TxtRegistry::new(as_provider, TxtRegistryConfig::new(ownership)));
    let cluster: Arc<dyn Cluster> = Arc::new(LiveCluster::from_store(ClusterStore::new()));
    let metrics = Arc::new(Metrics::new("bench", "bench"));
    let controller = Controller::new(cluster, source.clone(), registry, config, metrics);
    Ok(Setup {
        controller,
        provider,
        source,
    })
}

/// What a sync reported, reduced to what the checks need (so the report can be dropped before the live
/// bytes are read).
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    applied: bool,
    creates: usize,
    updates: usize,
    deletes: usize,
}

impl Outcome {
    /// A sync with nothing to write.
    const NOTHING: Outcome = Outcome {
        applied: false,
        creates: 0,
        updates: 0,
        deletes: 0,
    };

    /// A sync that wrote these changes.
    fn wrote(creates: usize, updates: usize, deletes: usize) -> Outcome {
        Outcome {
            applied: true,
            creates,
            updates,
            deletes,
        }
    }
}

fn outcome(report: &SyncReport) -> Outcome {
    let count = |f: fn(&Change) -> bool| report.changes.iter().filter(|c| f(c)).count();
    Outcome {
        applied: report.applied,
        creates: count(|c| matches!(c, Change::Create(_))),
        updates: count(|c| matches!(c, Change::Update { .. })),
        deletes: count(|c| matches!(c, Change::Delete(_))),
    }
}

/// Time this thread has spent on a CPU (`/proc/thread-self/schedstat`), zero where that is not available.
/// The machine is shared with parallel builds: wall time includes waiting for a core, this does not.
fn on_cpu() -> Duration {
    let ns = std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|n| n.parse().ok()))
        .unwrap_or(0);
    Duration::from_nanos(ns)
}

#[derive(Debug, Clone, Copy)]
struct Measure {
    time: Duration,
    on_cpu: Duration,
    /// Bytes requested during the sync, whether freed before it ended or not.
    allocated: usize,
    /// Most bytes live at once during the sync, above what was live when it started.
    peak: usize,
    /// Bytes still live once the sync and its report are gone, beyond what was live before the source's
    /// endpoints were loaded: the zone's growth after a first sync, nothing after a steady one.
    retained: isize,
}

/// One sync of `records`, measured; building the source's copy of them is not.
fn run(rt: &Runtime, s: &Setup, records: &[Endpoint]) -> Result<(Outcome, Measure), Box<dyn Error>> {
    let unloaded = ALLOC.allocated();
    s.source.load(records.to_vec());
    // Raise the live bytes to the process's maximum so far, so that the maximum grows by the sync's peak.
    let gap = ALLOC.max_allocated().saturating_sub(ALLOC.allocated());
    let balloon = black_box(Vec::<u8>::with_capacity(gap));
    // Read before the counters: reading the clock allocates.
    let cpu = on_cpu();
    let live = ALLOC.allocated();
    let max = ALLOC.max_allocated();
    let total = ALLOC.total_allocated();
    let start = Instant::now();

    let report = rt.block_on(s.controller.run_once());

    let time = start.elapsed();
    let allocated = ALLOC.total_allocated() - total;
    let peak = ALLOC.max_allocated().saturating_sub(max.max(live));
    let on_cpu = on_cpu().saturating_sub(cpu);
    let report = report?;
    let outcome = outcome(&report);
    drop(report);
    drop(balloon);
    let retained = ALLOC.allocated() as isize - unloaded as isize;
    Ok((
        outcome,
        Measure {
            time,
            on_cpu,
            allocated,
            peak,
            retained,
        },
    ))
}

fn count_types(provider: &InMemoryProvider) -> (usize, usize) {
    let zone = provider.snapshot();
    let a = zone.iter().filter(|e| e.record_type == RecordType::A).count();
    let txt = zone.iter().filter(|e| e.record_type == RecordType::Txt).count();
    (a, txt)
}

/// First syncs, each on a fresh empty zone (built outside the measurement).
fn first(rt: &Runtime, records: &[Endpoint], runs: usize) -> Result<Vec<Measure>, Box<dyn Error>> {
    let n = records.len();
    let mut out = Vec::with_capacity(runs);
    for _ in 0..runs {
        let s = setup()?;
        let (outcome, m) = run(rt, &s, records)?;
        assert_eq!(outcome, Outcome::wrote(n, 0, 0), "a first sync creates every record");
        assert_eq!(
            count_types(&s.provider),
            (n, n),
            "every record lands with its ownership record"
        );
        assert!(m.retained > 0, "the zone grew by the created records");
        out.push(m);
    }
    Ok(out)
}

/// Steady syncs over one zone populated by a first sync (outside the measurement).
fn steady(rt: &Runtime, records: &[Endpoint], runs: usize) -> Result<Vec<Measure>, Box<dyn Error>> {
    let n = records.len();
    let s = setup()?;
    s.source.load(records.to_vec());
    rt.block_on(s.controller.run_once())?;
    let calls = s.provider.apply_calls();
    let mut out = Vec::with_capacity(runs);
    for _ in 0..runs {
        let (outcome, m) = run(rt, &s, records)?;
        assert_eq!(outcome, Outcome::NOTHING, "a steady sync has nothing to do");
        assert_eq!(s.provider.apply_calls(), calls, "a steady sync writes nothing");
        out.push(m);
    }
    assert_eq!(count_types(&s.provider), (n, n), "the zone is unchanged");

    // The steady syncs had nothing to do because the records are owned, not because ownership went
    // unread (unowned records are left alone too): an owned record that is no longer desired is deleted.
    let (outcome, _) = run(rt, &s, &records[1..])?;
    assert_eq!(
        outcome,
        Outcome::wrote(0, 0, 1),
        "the records are owned: a dropped one is deleted"
    );
    assert_eq!(count_types(&s.provider), (n - 1, n - 1), "with its ownership record");
    Ok(out)
}

fn median<T: Copy + Ord>(mut v: Vec<T>) -> T {
    v.sort_unstable();
    v[v.len() / 2]
}

fn row(name: &str, n: usize, runs: &[Measure]) {
    let time = median(runs.iter().map(|m| m.time).collect());
    let on_cpu = median(runs.iter().map(|m| m.on_cpu).collect());
    let allocated = median(runs.iter().map(|m| m.allocated).collect());
    let peak = median(runs.iter().map(|m| m.peak).collect());
    let retained = median(runs.iter().map(|m| m.retained).collect());
    let lo = runs.iter().map(|m| m.allocated).min().unwrap_or_default();
    let hi = runs.iter().map(|m| m.allocated).max().unwrap_or_default();
    let per = |b: f64| b / n as f64;
    println!(
        "{name:<7} {:>9.1} ms {:>9.1} ms {:>10.1} MB {:>8.0} B {:>10.1} MB {:>8.0} B {:>10.1} MB   (allocated {:.1}-{:.1} MB over {} runs)",
        time.as_secs_f64() * 1e3,
        on_cpu.as_secs_f64() * 1e3,
        allocated as f64 / 1e6,
        per(allocated as f64),
        peak as f64 / 1e6,
        per(peak as f64),
        retained as f64 / 1e6,
        lo as f64 / 1e6,
        hi as f64 / 1e6,
        runs.len(),
    );
}

fn main() -> Result<(), Box<dyn Error>> {
    let full = std::env::args().any(|a| a == "--bench");
    let (n, runs) = if full { (100_000, 5) } else { (1_000, 1) };
    let n = match std::env::var("SYNC_BENCH_RECORDS") {
        Ok(v) => v.parse()?,
        Err(_) => n,
    };
    if n < 2 {
        return Err("SYNC_BENCH_RECORDS: at least 2 records (the ownership check drops one)".into());
    }
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let records = support::desired(n);

    // For scale: what one copy of the desired endpoints costs.
    let before = ALLOC.total_allocated();
    let copy = black_box(records.clone());
    let copy_bytes = ALLOC.total_allocated() - before;
    drop(copy);

    let first = first(&rt, &records, runs)?;
    let steady = steady(&rt, &records, runs)?;

    println!("{n} A records, TXT registry over the in-memory provider; medians of {runs} syncs");
    println!(
        "{:<7} {:>12} {:>12} {:>13} {:>10} {:>13} {:>10} {:>13}",
        "sync", "wall time", "on CPU", "allocated", "/record", "peak", "/record", "retained"
    );
    row("first", n, &first);
    row("steady", n, &steady);
    println!(
        "for scale: one clone of the desired endpoints allocates {:.1} MB, {:.0} B per record",
        copy_bytes as f64 / 1e6,
        copy_bytes as f64 / n as f64
    );
    Ok(())
}
