//! Where the live heap goes at the scale of `cargo xtask bench scale` (issue 14's resident-memory target):
//! the objects of that harness (10,000 Services, nine in ten LoadBalancers and one in ten headless with an
//! EndpointSlice naming three Pods, and 50,000 Pods in all) in a live view, a full sync through the service
//! source, the TXT registry and the in-memory provider, then the figures by owner:
//!
//! * the live view, kind by kind (what the informers keep between syncs);
//! * the incremental cache (`SyncState`: the records read, the desired endpoints by object);
//! * the in-memory zone (in production the DNS server holds it, not extdns);
//! * the Services' initial list: the most it holds at once, and what it leaves (the store);
//! * the peak of a first and of a later full sync above what was live before it.
//!
//! Counted by a counting global allocator (`cap`, wrapping the system allocator): requested bytes, so the
//! allocator's per-block overhead comes on top. `cap` keeps its maximum for the life of the process, so
//! before each sync a block is reserved (and never touched) that raises the live bytes to the maximum so far;
//! the sync's own peak is then the growth of that maximum.
//!
//! `cargo bench -p extdns-controller --bench memory_at_scale`; `MEMORY_BENCH_SCALE=10` divides the object
//! counts by ten. Under `cargo test` it runs at a hundredth of the scale as a check.

mod support;

use std::alloc::System;
use std::sync::Arc;

use cap::Cap;
use extdns_controller::SyncState;
use extdns_informer::{LiveCluster, LiveOptions};
use extdns_registry::Registry;
use extdns_source::Source;
use extdns_source::resolver::StaticResolver;
use extdns_source_service::{ServiceSource, ServiceSourceConfig};
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1 as discovery;
use serde_json::json;

use extdns_test_support::kube_objects::{ZONE, listed, listed_copies, object};

#[global_allocator]
static ALLOC: Cap<System> = Cap::new(System, usize::MAX);

const NAMESPACES: usize = 10;
const HEADLESS_EVERY: usize = 10;
const PODS_PER_HEADLESS: usize = 3;

fn mib(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// The objects of crates/e2e/src/scale.rs, as the API server returns them.
struct Objects {
    services: Vec<core::Service>,
    pods: Vec<core::Pod>,
    slices: Vec<discovery::EndpointSlice>,
}

fn objects(services: usize, pods: usize) -> Objects {
    let mut out = Objects {
        services: Vec::new(),
        pods: Vec::new(),
        slices: Vec::new(),
    };
    let mut pod_n = 0u32;
    for i in 0..services {
        let ns = format!("scale-{}", i % NAMESPACES);
        let name = format!("svc-{i}");
        let meta = json!({"name": name, "namespace": ns,
            "annotations": {"external-dns.alpha.kubernetes.io/hostname": format!("{name}.{ZONE}")}});
        if !(i / NAMESPACES).is_multiple_of(HEADLESS_EVERY) {
            let ip = std::net::Ipv4Addr::from(0x6440_0000 + i as u32);
            out.services.push(object(json!({"metadata": meta,
                "spec": {"type": "LoadBalancer", "clusterIP": "10.96.0.10", "allocateLoadBalancerNodePorts": false,
                    "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]},
                "status": {"loadBalancer": {"ingress": [{"ip": ip.to_string()}]}}})));
            continue;
        }
        out.services.push(object(json!({"metadata": meta,
            "spec": {"type": "ClusterIP", "clusterIP": "None", "selector": {"app": name}}})));
        let mut endpoints = Vec::new();
        for p in 0..PODS_PER_HEADLESS {
            let pod = format!("{name}-{p}");
            let ip = std::net::Ipv4Addr::from(0x0a80_0000 + pod_n);
            pod_n += 1;
            endpoints.push(json!({"addresses": [ip.to_string()], "conditions": {"ready": true},
                "targetRef": {"kind": "Pod", "namespace": ns, "name": pod}}));
            out.pods.push(pod_object(&ns, &pod, &name));
        }
        out.slices.push(object(json!({
            "metadata": {"name": format!("{name}-1"), "namespace": ns,
                "labels": {"kubernetes.io/service-name": name}},
            "addressType": "IPv4", "endpoints": endpoints})));
    }
    for k in pod_n as usize..pods {
        out.pods.push(pod_object(
            &format!("scale-{}", k % NAMESPACES),
            &format!("pod-{k}"),
            "filler",
        ));
    }
    // Exact capacities, so that a copy holds what the original does (see `heap_of`).
    out.services.shrink_to_fit();
    out.pods.shrink_to_fit();
    out.slices.shrink_to_fit();
    out
}

fn pod_object(ns: &str, name: &str, app: &str) -> core::Pod {
    object(
        json!({"metadata": {"name": name, "namespace": ns, "labels": {"app": app}},
        "spec": {"containers": [{"name": "app", "image": "example.invalid/app:1"}]}}),
    )
}

/// Runs `f` and returns its result with the most bytes live at once during it, above what was live before
/// (the reserved block: see the module documentation).
fn with_peak<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let guard: Vec<u8> = Vec::with_capacity(ALLOC.max_allocated().saturating_sub(ALLOC.allocated()).max(1));
    let base = ALLOC.max_allocated();
    let out = f();
    let peak = ALLOC.max_allocated() - base;
    drop(guard);
    (out, peak)
}

/// The heap bytes a value holds (measured by dropping a copy of it).
fn heap_of<T: Clone>(value: &T) -> usize {
    let copy = value.clone();
    let live = ALLOC.allocated();
    drop(copy);
    live - ALLOC.allocated()
}

fn main() {
    let divisor = if std::env::args().any(|a| a == "--bench") {
        std::env::var("MEMORY_BENCH_SCALE")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(1)
    } else {
        100
    };
    let (services, pods) = (10_000 / divisor, 50_000 / divisor);
    let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
        panic!("a Tokio runtime");
    };
    let source = ServiceSource::new(ServiceSourceConfig::default(), Arc::new(StaticResolver::new()));
    // As the binary watches: only the Pods a headless or `Local` NodePort Service selects are kept.
    let mut live = LiveOptions::default();
    live.pods_on_demand = true;
    let cluster = Arc::new(LiveCluster::detached(&source.watched_kinds(), live.clone()));
    let Objects {
        services: svc_objects,
        pods: pod_objects,
        slices,
    } = objects(services, pods);
    let slice_count = slices.len();

    // The Services' initial list on its own, in a view of its own: the most it holds at once, and what it
    // leaves behind (the store).
    let (list_peak, list_kept) = {
        let probe = LiveCluster::detached(&source.watched_kinds(), live);
        let before = ALLOC.allocated();
        let ((), peak) = with_peak(|| listed_copies(&probe, &svc_objects));
        let kept = ALLOC.allocated() - before;
        drop(probe);
        (peak, kept)
    };

    // Each kind's store: the live bytes it adds, plus the input objects it consumed and freed.
    let stored = |objects_heap: usize, list: &dyn Fn()| {
        let before = ALLOC.allocated();
        list();
        ALLOC.allocated() + objects_heap - before
    };
    let (svc_heap, pod_heap, slice_heap) = (heap_of(&svc_objects), heap_of(&pod_objects), heap_of(&slices));
    let svc_objects = std::cell::Cell::new(svc_objects);
    let pod_objects = std::cell::Cell::new(pod_objects);
    let slices = std::cell::Cell::new(slices);
    let services_bytes = stored(svc_heap, &|| listed(&cluster, svc_objects.take()));
    let pods_bytes = stored(pod_heap, &|| listed(&cluster, pod_objects.take()));
    let slices_bytes = stored(slice_heap, &|| listed(&cluster, slices.take()));
    listed::<core::Node>(&cluster, Vec::new());

    let (controller, registry) = support::events_controller(&cluster, Box::new(source));

    let mut state = SyncState::default();
    let live_before_first = ALLOC.allocated();
    let (first, first_peak) = with_peak(|| rt.block_on(controller.sync(&mut state, true)));
    let created = match first {
        Ok(r) => r.changes.len(),
        Err(e) => panic!("first sync: {e}"),
    };
    assert_eq!(created, services, "the first sync creates one name per Service");
    let after_first = ALLOC.allocated();

    let (second, second_peak) = with_peak(|| rt.block_on(controller.sync(&mut state, true)));
    assert!(
        matches!(second, Ok(ref r) if r.changes.is_empty()),
        "a second full sync has nothing to do"
    );
    drop(second);

    let with_cache = ALLOC.allocated();
    drop(state);
    let cache = with_cache - ALLOC.allocated();
    let before_read = ALLOC.allocated();
    let snapshot = match rt.block_on(registry.records()) {
        Ok(s) => s,
        Err(e) => panic!("read the zone: {e}"),
    };
    let records_read = ALLOC.allocated() - before_read;
    assert_eq!(snapshot.records.len(), services, "one record per Service");
    drop(snapshot);
    let zone_and_rest = after_first.saturating_sub(live_before_first).saturating_sub(cache);

    println!("memory_at_scale: {services} Services, {pods} Pods, {slice_count} EndpointSlices");
    println!(
        "  live view: Services {} ({} B each), Pods {} ({} B each), EndpointSlices {}",
        mib(services_bytes),
        services_bytes / services.max(1),
        mib(pods_bytes),
        pods_bytes / pods.max(1),
        mib(slices_bytes),
    );
    println!(
        "  incremental cache: {} (records read {}, {} B a record; desired index {})",
        mib(cache),
        mib(records_read),
        records_read / services.max(1),
        mib(cache.saturating_sub(records_read))
    );
    println!(
        "  the Services' initial list: {} at its peak, {} kept",
        mib(list_peak),
        mib(list_kept)
    );
    println!("  in-memory zone and metrics: {}", mib(zone_and_rest));
    println!("  peak of the first full sync: {}", mib(first_peak));
    println!("  peak of a full sync with the cache kept: {}", mib(second_peak));
}
