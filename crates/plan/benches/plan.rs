//! A plan over 100,000 current and 100,000 desired records with 1% changed (target: under 100 ms).
//!
//! The changed 1%: 500 records with new targets (updates), 250 names gone (deletes) and 250 new names
//! (creates). Every current record is owned, as after a sync with the TXT registry.
#![allow(missing_docs, reason = "criterion_group! defines public functions of its own")]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use extdns_endpoint::{DomainFilter, Endpoint, RecordType, Ttl, label};
use extdns_plan::{PlanConfig, calculate};

const N: usize = 100_000;

fn ip(i: usize) -> String {
    format!("10.{}.{}.{}", (i >> 16) & 255, (i >> 8) & 255, i & 255)
}

fn record(i: usize, target: String) -> Endpoint {
    let name = format!("svc-{i}.team-{}.example.com", i % 100);
    let t = if i.is_multiple_of(10) {
        RecordType::Cname
    } else {
        RecordType::A
    };
    let target = if t == RecordType::Cname {
        format!("lb-{i}.elb.example.net")
    } else {
        target
    };
    Endpoint::new(&name, t, [target])
        .with_ttl(Ttl(300))
        .with_label(label::RESOURCE, format!("service/team-{}/svc-{i}", i % 100))
}

fn inputs() -> (Vec<Endpoint>, Vec<Endpoint>) {
    let current: Vec<Endpoint> = (0..N)
        .map(|i| record(i, ip(i)).with_label(label::OWNER, "default"))
        .collect();
    let mut desired: Vec<Endpoint> = (250..N).map(|i| record(i, ip(i))).collect();
    for i in (0..500).map(|k| 1_001 + k * 197) {
        // Keep CNAME rows' targets as they are; move A records to another address.
        let idx = i - 250;
        if desired[idx].record_type == RecordType::A {
            desired[idx].targets.0 = vec![ip(i + 7).into()];
        } else {
            desired[idx].targets.0 = vec![format!("moved-{i}.elb.example.net").into()];
        }
    }
    desired.extend((N..N + 250).map(|i| record(i, ip(i))));
    (current, desired)
}

fn bench_plan(c: &mut Criterion) {
    let (current, desired) = inputs();
    let config = PlanConfig {
        owner_id: "default".into(),
        ..PlanConfig::default()
    };
    let provider = DomainFilter::default();
    let outcome = calculate(&config, &current, &desired, &provider);
    let count = |action: &str| outcome.changes.iter().filter(|c| c.action() == action).count();
    assert_eq!((count("create"), count("delete"), count("update")), (250, 250, 500));

    let mut g = c.benchmark_group("plan");
    g.sample_size(20);
    g.bench_function("100k_current_100k_desired_1pct_changed", |b| {
        b.iter(|| calculate(black_box(&config), black_box(&current), black_box(&desired), &provider))
    });
    let filtered = PlanConfig {
        domain_filter: DomainFilter::new(&["example.com"], &["internal.example.com"]),
        ..config
    };
    g.bench_function("100k_1pct_changed_with_domain_filter", |b| {
        b.iter(|| {
            calculate(
                black_box(&filtered),
                black_box(&current),
                black_box(&desired),
                &provider,
            )
        })
    });
    g.finish();
}

criterion_group!(benches, bench_plan);
criterion_main!(benches);
