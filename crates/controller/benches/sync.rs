//! One reconcile through the real registry and provider: TXT registry over the in-memory provider, with a
//! source that hands over precomputed endpoints. What is measured is the controller's own share of a sync
//! (registry read with ownership labels, adjust, plan, apply, metrics), not the sources'.
//!
//! `steady`: every record already exists and is owned (the common case: a sync that changes nothing).
//! `first`: an empty zone, every record and its ownership TXT record created.
#![allow(missing_docs, reason = "criterion_group! defines public functions of its own")]

mod support;

use std::sync::Arc;

use async_trait::async_trait;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use extdns_controller::{Controller, ControllerConfig, DesiredEndpoints, Metrics};
use extdns_endpoint::Endpoint;
use extdns_informer::{Cluster, ClusterStore, LiveCluster};
use extdns_provider::{InMemoryProvider, Provider};
use extdns_registry::{Ownership, OwnershipConfig, Registry, TxtRegistry, TxtRegistryConfig};
use extdns_source::{DesiredIndex, PipelineOutput, SourceError};

struct Fixed(Vec<Endpoint>);

#[async_trait]
impl DesiredEndpoints for Fixed {
    async fn desired(&self, _: &ClusterStore, _: Option<&mut DesiredIndex>) -> Result<PipelineOutput, SourceError> {
        Ok(PipelineOutput {
            endpoints: self.0.clone(),
            ..PipelineOutput::default()
        })
    }
}

fn controller(provider: Arc<InMemoryProvider>, endpoints: Vec<Endpoint>) -> Option<Controller> {
    let provider: Arc<dyn Provider> = provider;
    let ownership = Ownership::new(OwnershipConfig::default()).ok()?;
    let mut config = ControllerConfig::default();
    config.plan.owner_id = ownership.owner_id().to_string();
    let registry: Arc<dyn Registry> = Arc::new(TxtRegistry::new(provider, TxtRegistryConfig::new(ownership)));
    let cluster: Arc<dyn Cluster> = Arc::new(LiveCluster::from_store(ClusterStore::new()));
    let metrics = Arc::new(Metrics::new("bench", "bench"));
    Some(Controller::new(
        cluster,
        Arc::new(Fixed(endpoints)),
        registry,
        config,
        metrics,
    ))
}

fn bench(c: &mut Criterion) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
        return;
    };
    let mut group = c.benchmark_group("controller_sync");
    group.sample_size(20);
    for n in [1_000usize, 10_000] {
        group.throughput(Throughput::Elements(n as u64));

        // Steady state: populate once, then measure syncs that find nothing to do.
        let provider = Arc::new(InMemoryProvider::new(vec!["example.com".into()]));
        let Some(steady) = controller(provider, support::desired(n)) else {
            return;
        };
        if rt.block_on(steady.run_once()).is_err() {
            return;
        }
        group.bench_with_input(BenchmarkId::new("steady", n), &n, |b, _| {
            b.iter(|| rt.block_on(steady.run_once()).map(|r| r.applied))
        });

        // First sync: a fresh provider each time (built outside the measurement).
        group.bench_with_input(BenchmarkId::new("first", n), &n, |b, &n| {
            b.iter_batched(
                || {
                    controller(
                        Arc::new(InMemoryProvider::new(vec!["example.com".into()])),
                        support::desired(n),
                    )
                },
                |c| c.map(|c| rt.block_on(c.run_once()).map(|r| r.applied)),
                criterion::BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
