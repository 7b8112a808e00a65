//! TXT registry `records()` over 100,000 records and their 100,000 ownership TXT records: parsing every
//! TXT value, mapping TXT names back to records and labelling the records.
#![allow(missing_docs, reason = "criterion_group! defines public functions of its own")]

use std::hint::black_box;
use std::sync::Arc;

use async_trait::async_trait;
use criterion::{Criterion, criterion_group, criterion_main};
use extdns_endpoint::{Endpoint, RecordType, Ttl};
use extdns_provider::{Provider, ProviderError, ReadState, Records, Unit};
use extdns_registry::{Ownership, OwnershipConfig, Registry, TxtRegistry, TxtRegistryConfig};

const N: usize = 100_000;

/// A provider that hands out a fixed zone (a clone of it, as a real provider builds fresh records).
struct Fixed(Vec<Endpoint>);

#[async_trait]
impl Provider for Fixed {
    async fn records(&self) -> Result<Records, ProviderError> {
        Ok(self.0.clone().into())
    }
    async fn apply(&self, _: &ReadState, _: &[Unit<'_>]) -> Result<(), ProviderError> {
        Ok(())
    }
}

fn zone() -> Vec<Endpoint> {
    let mut z = Vec::with_capacity(2 * N);
    for i in 0..N {
        let name = format!("svc-{i}.team-{}.example.com", i % 100);
        let ip = format!("10.{}.{}.{}", (i >> 16) & 255, (i >> 8) & 255, i & 255);
        z.push(Endpoint::new(&name, RecordType::A, [ip]).with_ttl(Ttl(300)));
        let value = format!(
            "\"heritage=external-dns,external-dns/owner=default,external-dns/resource=service/team-{}/svc-{i}\"",
            i % 100
        );
        z.push(Endpoint::new(&format!("a-{name}"), RecordType::Txt, [value]));
    }
    z
}

fn bench_records(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap_or_else(|e| panic!("tokio runtime: {e}"));
    let zone = zone();
    let provider = Arc::new(Fixed(zone.clone()));
    let registry = match Ownership::new(OwnershipConfig::default()) {
        Ok(o) => TxtRegistry::new(provider, TxtRegistryConfig::new(o)),
        Err(e) => panic!("registry: {e}"),
    };
    let records = rt.block_on(registry.records()).map(|s| s.records).unwrap_or_default();
    assert_eq!(records.len(), N);
    assert!(records.iter().all(|e| e.owner() == Some("default")));

    let mut g = c.benchmark_group("registry");
    g.sample_size(20);
    g.bench_function("txt_records_100k_owned", |b| {
        b.iter(|| black_box(rt.block_on(registry.records())))
    });
    g.bench_function("provider_clone_200k_baseline", |b| b.iter(|| black_box(zone.clone())));
    g.finish();
}

criterion_group!(benches, bench_records);
criterion_main!(benches);
