//! A change at cluster scale: 10,000 LoadBalancer Services and 50,000 Pods (and 50,000 and 250,000) in a
//! live view, the service source, the TXT registry and the in-memory provider (so what is measured is
//! extdns, not a DNS server).
//!
//! `full`: a full sync that finds nothing to do (the zone read, every object evaluated, every name planned);
//! what every change costs without incremental reconcile.
//! `one_change`: one Service's load balancer address changes and an incremental sync writes its record.
#![allow(missing_docs, reason = "criterion_group! defines public functions of its own")]

mod support;

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use extdns_controller::{Controller, SyncState};
use extdns_informer::{LiveCluster, LiveOptions};
use extdns_source::Source;
use extdns_source::resolver::StaticResolver;
use extdns_source_service::{ServiceSource, ServiceSourceConfig};
use kube::runtime::watcher::Event;

use extdns_test_support::kube_objects::{lb_service_in, listed, pod_in};

/// (Services, Pods) of each size measured.
const SIZES: [(usize, usize); 2] = [(10_000, 50_000), (50_000, 250_000)];
const NAMESPACES: usize = 10;

fn ip(i: usize) -> String {
    format!("10.{}.{}.{}", (i >> 16) & 255, (i >> 8) & 255, i & 255)
}

fn setup(services: usize, pods: usize) -> Option<(Arc<LiveCluster>, Controller)> {
    let source = ServiceSource::new(ServiceSourceConfig::default(), Arc::new(StaticResolver::new()));
    let cluster = Arc::new(LiveCluster::detached(&source.watched_kinds(), LiveOptions::default()));
    listed(
        &cluster,
        (0..services)
            .map(|i| lb_service_in(&format!("ns-{}", i % NAMESPACES), &format!("svc-{i}"), &ip(i)))
            .collect(),
    );
    listed(
        &cluster,
        (0..pods)
            .map(|i| pod_in(&format!("ns-{}", i % NAMESPACES), &format!("pod-{i}"), &ip(i)))
            .collect(),
    );
    listed::<k8s_openapi::api::discovery::v1::EndpointSlice>(&cluster, Vec::new());
    listed::<k8s_openapi::api::core::v1::Node>(&cluster, Vec::new());

    let (controller, _) = support::events_controller(&cluster, Box::new(source));
    Some((cluster, controller))
}

fn bench(c: &mut Criterion) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
        return;
    };
    for (services, pods) in SIZES {
        bench_size(c, &rt, services, pods);
    }
}

fn bench_size(c: &mut Criterion, rt: &tokio::runtime::Runtime, services: usize, pods: usize) {
    let Some((cluster, controller)) = setup(services, pods) else {
        return;
    };
    let mut state = SyncState::default();
    match rt.block_on(controller.sync(&mut state, true)) {
        Ok(r) if r.changes.len() == services => {}
        other => panic!("the first sync must create every record: {other:?}"),
    }
    let mut group = c.benchmark_group(format!(
        "incremental_{}k_services_{}k_pods",
        services / 1000,
        pods / 1000
    ));
    group.sample_size(10);
    group.bench_function("full", |b| {
        b.iter(|| rt.block_on(controller.sync(&mut state, true)).map(|r| r.changes.len()))
    });
    let mut flip = 0usize;
    group.bench_function("one_change", |b| {
        b.iter(|| {
            flip += 1;
            cluster.apply_event(Event::Apply(lb_service_in("ns-0", "svc-0", &ip(services + flip))));
            match rt.block_on(controller.sync(&mut state, false)) {
                Ok(r) if r.changes.len() == 1 => r.full,
                other => panic!("one change, one record: {other:?}"),
            }
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
