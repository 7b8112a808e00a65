//! What the controller's benchmarks share; each uses a part.
#![allow(dead_code, reason = "each benchmark uses a part")]

use std::sync::Arc;

use extdns_controller::{Controller, ControllerConfig, Metrics};
use extdns_endpoint::{Endpoint, RecordType};
use extdns_informer::LiveCluster;
use extdns_provider::InMemoryProvider;
use extdns_registry::{Ownership, OwnershipConfig, TxtRegistry, TxtRegistryConfig};
use extdns_source::{Pipeline, PipelineConfig, Source};
use extdns_test_support::kube_objects::ZONE;

/// A controller following `cluster` with `--events`: `source` through the default pipeline, and a TXT
/// registry with the default ownership over the in-memory provider holding [`ZONE`], which it also returns.
pub fn events_controller(cluster: &Arc<LiveCluster>, source: Box<dyn Source>) -> (Controller, Arc<TxtRegistry>) {
    let Ok(ownership) = Ownership::new(OwnershipConfig::default()) else {
        panic!("default ownership");
    };
    let mut config = ControllerConfig {
        events: true,
        ..ControllerConfig::default()
    };
    config.plan.owner_id = ownership.owner_id().to_string();
    let provider = Arc::new(InMemoryProvider::new(vec![ZONE.to_string()]));
    let registry = Arc::new(TxtRegistry::new(provider, TxtRegistryConfig::new(ownership)));
    let pipeline = Pipeline::new(vec![source], PipelineConfig::default());
    let metrics = Arc::new(Metrics::new("bench", "bench"));
    let controller = Controller::new(cluster.clone(), Arc::new(pipeline), registry.clone(), config, metrics);
    (controller, registry)
}

/// `n` A records `svc-<i>.apps.example.com`, each with an address of its own.
pub fn desired(n: usize) -> Vec<Endpoint> {
    (0..n)
        .map(|i| {
            let ip = format!("10.{}.{}.{}", (i >> 16) & 255, (i >> 8) & 255, i & 255);
            Endpoint::new(&format!("svc-{i}.apps.example.com"), RecordType::A, [ip])
        })
        .collect()
}
