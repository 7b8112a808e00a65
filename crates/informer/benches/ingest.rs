//! The first list's ingest path, from the API server's text to the store (docs/performance.md, "Decoding
//! without the field path"): 10,000 LoadBalancer Services as a streaming list sends them, one watch event a line,
//! each with the managed fields the API server adds (1.4 KB of JSON), fed to a live view as its Service
//! watcher feeds it. The figure is the whole list: decoding, conversion and storing.
//!
//! `cargo bench -p extdns-informer --bench ingest`.
#![allow(missing_docs, reason = "criterion_group! defines public functions of its own")]

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use extdns_informer::{LiveCluster, LiveOptions, ResourceKind};
use k8s_openapi::api::core::v1::Service;
use serde_json::json;

const SERVICES: usize = 10_000;

/// One `ADDED` event of a LoadBalancer Service with a hostname annotation, as the API server writes it:
/// `type` first (a JSON map of `json!` sorts its keys, and an object before its type is buffered whole).
fn added_line(i: usize) -> String {
    let name = format!("svc-{i}");
    let object = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {
            "name": name, "namespace": format!("load-{}", i % 10),
            "uid": format!("6b1f5c0e-8f1a-4c55-9d7a-{i:012x}"), "resourceVersion": (100_000 + i).to_string(),
            "creationTimestamp": "2026-11-25T10:00:00Z",
            "annotations": {"external-dns.kubernetes.io/hostname": format!("{name}.example.com")},
            "managedFields": [
                {"manager": "python-requests", "operation": "Update", "apiVersion": "v1",
                 "time": "2026-11-25T10:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {
                    "f:metadata": {"f:annotations": {".": {}, "f:external-dns.kubernetes.io/hostname": {}}},
                    "f:spec": {"f:allocateLoadBalancerNodePorts": {}, "f:externalTrafficPolicy": {},
                        "f:internalTrafficPolicy": {},
                        "f:ports": {".": {}, "k:{\"port\":80,\"protocol\":\"TCP\"}": {
                            ".": {}, "f:port": {}, "f:protocol": {}, "f:targetPort": {}}},
                        "f:sessionAffinity": {}, "f:type": {}}}},
                {"manager": "python-requests", "operation": "Update", "apiVersion": "v1",
                 "time": "2026-11-25T10:00:01Z", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:status": {"f:loadBalancer": {"f:ingress": {}}}}, "subresource": "status"}
            ]
        },
        "spec": {
            "ports": [{"protocol": "TCP", "port": 80, "targetPort": 80, "nodePort": 30_000 + i % 2_000}],
            "clusterIP": format!("10.96.{}.{}", i / 250, i % 250), "clusterIPs": [format!("10.96.{}.{}", i / 250, i % 250)],
            "type": "LoadBalancer", "sessionAffinity": "None", "externalTrafficPolicy": "Cluster",
            "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack", "allocateLoadBalancerNodePorts": true,
            "internalTrafficPolicy": "Cluster"
        },
        "status": {"loadBalancer": {"ingress": [{"ip": format!("203.0.{}.{}", i / 250, i % 250), "ipMode": "VIP"}]}}
    });
    format!(r#"{{"type":"ADDED","object":{object}}}"#)
}

fn ingest(c: &mut Criterion) {
    let lines: Vec<String> = (0..SERVICES).map(added_line).collect();
    let view = || LiveCluster::detached(&[ResourceKind::Service], LiveOptions::default());

    // Every line decodes and is stored: a bench of the failure path would measure nothing.
    let check = view();
    for line in &lines {
        if let Err(e) = check.apply_watch_line::<Service>(line) {
            panic!("the bench's own event does not decode: {e}");
        }
    }
    let stored = extdns_informer::Cluster::store(&check).services().len();
    assert_eq!(stored, SERVICES, "every Service is stored");

    let mut group = c.benchmark_group("ingest");
    group.sample_size(10);
    group.bench_function("10000_services", |b| {
        b.iter_batched(
            view,
            |view| {
                for line in &lines {
                    let _ = view.apply_watch_line::<Service>(line);
                }
                view
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

criterion_group!(benches, ingest);
criterion_main!(benches);
