//! The webhook protocol's cost on extdns's side of both ends: 10,000 records read and 10,000 changes applied
//! through the client, against extdns's own server with the in-memory provider behind it, over loopback
//! HTTP. Time is criterion's; peak memory is measured with a counting global allocator (`cap`): the most
//! heap bytes live at once during one call (sampled every 100 µs), client, server and backend together, above what was live
//! before it (requested bytes, without the allocator's per-block overhead).
//!
//! `cargo bench -p extdns-provider-webhook --bench webhook` (set `WEBHOOK_BENCH_RECORDS` for another size).
#![allow(missing_docs, reason = "criterion_group! defines public functions of its own")]

use std::alloc::System;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cap::Cap;
use criterion::{Criterion, criterion_group, criterion_main};
use extdns_endpoint::{Change, Endpoint, ProviderSpecific, RecordType, Ttl};
use extdns_provider::{InMemoryProvider, Provider, ReadState, Unit};
use extdns_provider_webhook::{ServerOptions, WebhookConfig, WebhookProvider, start_server};
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;

#[global_allocator]
static ALLOC: Cap<System> = Cap::new(System, usize::MAX);

fn records() -> usize {
    std::env::var("WEBHOOK_BENCH_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
}

/// A record as a controller writes one: a name, an address, a TTL, its ownership label in the backend's
/// eyes being a separate TXT record (not modelled here), one provider-specific property.
fn record(i: usize, generation: u8) -> Endpoint {
    let mut ps = ProviderSpecific::default();
    ps.set("webhook/weight", "10");
    Endpoint::new(
        &format!("svc-{i:05}.team-{:02}.example.org", i % 50),
        RecordType::A,
        [format!("10.{generation}.{}.{}", (i / 256) % 256, i % 256)],
    )
    .with_ttl(Ttl(300))
    .with_provider_specific(ps)
}

struct Setup {
    runtime: Runtime,
    backend: Arc<InMemoryProvider>,
    client: WebhookProvider,
    _shutdown: tokio_util::sync::DropGuard,
}

fn setup() -> Setup {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => panic!("{e}"),
    };
    let backend = Arc::new(InMemoryProvider::new(vec!["example.org".to_string()]));
    let shutdown = CancellationToken::new();
    let client = runtime.block_on(async {
        let server = start_server(
            "127.0.0.1:0",
            backend.clone(),
            ServerOptions {
                max_body_size: None,
                ..ServerOptions::default()
            },
            shutdown.clone(),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
        let url = WebhookConfig::parse_url(&format!("http://{}", server.local_addr)).unwrap_or_else(|e| panic!("{e}"));
        WebhookProvider::connect(&WebhookConfig::new(url))
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    });
    Setup {
        runtime,
        backend,
        client,
        _shutdown: shutdown.drop_guard(),
    }
}

/// Runs `f` once and returns (time, peak heap bytes above the start). `cap` without its `stats` feature
/// only knows the bytes live now, so a thread samples that every 100 µs while `f` runs.
fn measure<T>(f: impl FnOnce() -> T) -> (Duration, usize, T) {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let before = ALLOC.allocated();
    let done = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicUsize::new(before));
    let sampler = {
        let (done, peak) = (done.clone(), peak.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                peak.fetch_max(ALLOC.allocated(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_micros(100));
            }
        })
    };
    let start = Instant::now();
    let out = f();
    let took = start.elapsed();
    done.store(true, Ordering::Relaxed);
    let _ = sampler.join();
    (took, peak.load(Ordering::Relaxed).saturating_sub(before), out)
}

fn apply(s: &Setup, changes: &[Change]) {
    let units: Vec<Unit<'_>> = changes.iter().map(Unit::new).collect();
    if let Err(e) = s.runtime.block_on(s.client.apply(&ReadState::default(), &units)) {
        panic!("apply: {e}");
    }
}

fn bench(c: &mut Criterion) {
    let n = records();
    let s = setup();
    let creates: Vec<Change> = (0..n).map(|i| Change::Create(record(i, 1))).collect();

    // One measured pass of each call, for the memory figures and a check that the data went through.
    let (t_create, m_create, ()) = measure(|| apply(&s, &creates));
    assert_eq!(s.backend.snapshot().len(), n);
    let (t_read, m_read, read) = measure(|| s.runtime.block_on(s.client.records()).map(|r| r.endpoints.len()));
    assert_eq!(read.ok(), Some(n));
    let updates: Vec<Change> = (0..n).map(|i| Change::update(record(i, 1), record(i, 2))).collect();
    let (t_update, m_update, ()) = measure(|| apply(&s, &updates));
    eprintln!(
        "webhook, {n} records: create {t_create:?} peak {} KiB; read {t_read:?} peak {} KiB; update {t_update:?} peak {} KiB",
        m_create / 1024,
        m_read / 1024,
        m_update / 1024
    );

    let mut group = c.benchmark_group("webhook");
    group.sample_size(10);
    group.bench_function(format!("read {n} records"), |b| {
        b.iter(|| s.runtime.block_on(s.client.records()).map(|r| r.endpoints.len()))
    });
    // Updates back and forth between two generations, so every iteration applies n real changes.
    let back: Vec<Change> = (0..n).map(|i| Change::update(record(i, 2), record(i, 1))).collect();
    let mut forward = false;
    group.bench_function(format!("apply {n} updates"), |b| {
        b.iter(|| {
            apply(&s, if forward { &updates } else { &back });
            forward = !forward;
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
