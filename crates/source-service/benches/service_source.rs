//! The service source over a synthetic cluster of 10,000 Services (docs/performance.md, "Service source"):
//! 2,000 headless Services with 5 Pods each, 500 NodePort Services over 1,000 nodes (50 of them with the
//! Local traffic policy), 5,000 LoadBalancer, 1,500 ClusterIP and 1,000 ExternalName Services, in 100
//! namespaces. The figure is one `endpoints()` call on the in-memory view.
#![allow(missing_docs, reason = "criterion_group! defines public functions of its own")]

use std::hint::black_box;
use std::sync::Arc;

use std::time::Duration;

use criterion::measurement::{Measurement, ValueFormatter, WallTime};
use criterion::{Criterion, criterion_group, criterion_main};
use extdns_informer::view::{
    EndpointSlice, LoadBalancerIngress, Meta, Node, NodeAddress, ObjectReference, Pod, PodPhase, Service, ServicePort,
    SliceEndpoint,
};
use extdns_informer::{ClusterStore, StrMap};
use extdns_source::SourceExt;
use extdns_source::resolver::StaticResolver;
use extdns_source_service::{ServiceSource, ServiceSourceConfig};

const NAMESPACES: usize = 100;

/// Time this thread spent on a CPU (`/proc/thread-self/schedstat`, nanoseconds). The build machine is shared
/// with parallel compiles, so wall time includes waiting for a core; on-CPU time does not.
struct OnCpu;

fn on_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|n| n.parse().ok()))
        .unwrap_or(0)
}

static WALL: WallTime = WallTime;

impl Measurement for OnCpu {
    type Intermediate = u64;
    type Value = Duration;
    fn start(&self) -> u64 {
        on_cpu_ns()
    }
    fn end(&self, start: u64) -> Duration {
        Duration::from_nanos(on_cpu_ns().saturating_sub(start))
    }
    fn add(&self, a: &Duration, b: &Duration) -> Duration {
        *a + *b
    }
    fn zero(&self) -> Duration {
        Duration::ZERO
    }
    fn to_f64(&self, v: &Duration) -> f64 {
        v.as_nanos() as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        WALL.formatter()
    }
}
const NODES: usize = 1_000;

fn map(pairs: &[(&str, &str)]) -> StrMap {
    pairs.iter().copied().collect()
}

fn service(i: usize, service_type: &str, annotations: StrMap) -> Service {
    Service {
        meta: Meta {
            name: format!("svc-{i}"),
            namespace: format!("ns-{}", i % NAMESPACES).into(),
            labels: map(&[("app", &format!("app-{i}"))]),
            annotations,
        },
        service_type: service_type.into(),
        cluster_ip: Some(format!("10.96.{}.{}", i / 250, i % 250).into()),
        selector: map(&[("app", &format!("app-{i}"))]),
        ports: [ServicePort {
            port: 80,
            protocol: Some("TCP".into()),
            ..ServicePort::default()
        }]
        .into(),
        ..Service::default()
    }
}

fn hostname(i: usize) -> StrMap {
    map(&[(
        "external-dns.alpha.kubernetes.io/hostname",
        &format!("svc-{i}.example.com"),
    )])
}

fn synthetic_cluster() -> ClusterStore {
    let mut c = ClusterStore::new();
    for n in 0..NODES {
        c.add(Node {
            name: format!("node-{n}"),
            addresses: vec![
                NodeAddress {
                    address_type: "InternalIP".into(),
                    address: format!("10.1.{}.{}", n / 250, n % 250),
                },
                NodeAddress {
                    address_type: "ExternalIP".into(),
                    address: format!("34.1.{}.{}", n / 250, n % 250),
                },
            ],
            unschedulable: n % 100 == 0,
            ..Node::default()
        });
    }
    let mut i = 0;
    // 2,000 headless Services, 5 Pods each, one EndpointSlice each.
    for _ in 0..2_000 {
        let mut svc = service(i, "ClusterIP", hostname(i));
        svc.cluster_ip = Some("None".into());
        let ns = svc.meta.namespace.clone();
        let mut endpoints = Vec::new();
        for p in 0..5 {
            let name = format!("svc-{i}-{p}");
            let ip = format!("10.2.{}.{}", (i * 5 + p) / 250, (i * 5 + p) % 250);
            c.add(Pod {
                name: name.as_str().into(),
                namespace: ns.as_str().into(),
                labels: map(&[("app", &format!("app-{i}"))]),
                hostname: Some(name.as_str().into()),
                node_name: Some(format!("node-{}", (i + p) % NODES).into()),
                pod_ips: vec![ip.clone().into_boxed_str()].into_boxed_slice(),
                phase: PodPhase::Running,
                ready: true,
                ..Pod::default()
            });
            endpoints.push(SliceEndpoint {
                addresses: vec![ip],
                ready: Some(true),
                target_ref: Some(ObjectReference {
                    kind: Some("Pod".into()),
                    name: Some(name),
                    ..ObjectReference::default()
                }),
                node_name: None,
            });
        }
        c.add(EndpointSlice {
            meta: Meta {
                name: format!("svc-{i}-abc"),
                namespace: ns,
                ..Meta::default()
            },
            service_name: Some(svc.meta.name.clone()),
            address_type: "IPv4".into(),
            endpoints,
        });
        c.add(svc);
        i += 1;
    }
    // 500 NodePort Services over all nodes; one in ten with the Local policy and 3 Pods.
    for k in 0..500_i32 {
        let mut svc = service(i, "NodePort", hostname(i));
        svc.ports[0].node_port = Some(30_000 + k);
        if k % 10 == 0 {
            svc.external_traffic_policy = Some("Local".into());
            for p in 0..3 {
                c.add(Pod {
                    name: format!("svc-{i}-{p}").as_str().into(),
                    namespace: svc.meta.namespace.as_str().into(),
                    labels: map(&[("app", &format!("app-{i}"))]),
                    node_name: Some(format!("node-{}", (i * 3 + p) % NODES).into()),
                    phase: PodPhase::Running,
                    ready: true,
                    ..Pod::default()
                });
            }
        }
        c.add(svc);
        i += 1;
    }
    // 5,000 LoadBalancer Services: IPs, hostnames, and a few names shared by two Services.
    for k in 0..5_000 {
        let host = if k % 50 == 0 {
            format!("shared-{}.example.com", k / 100)
        } else {
            format!("svc-{i}.example.com")
        };
        let annotations = map(&[
            ("external-dns.kubernetes.io/hostname", &host),
            ("external-dns.kubernetes.io/ttl", "300"),
        ]);
        let mut svc = service(i, "LoadBalancer", annotations);
        svc.load_balancer_ingress = if k % 3 == 0 {
            [LoadBalancerIngress {
                ip: None,
                hostname: Some(format!("lb-{i}.elb.example.net").into()),
            }]
            .into()
        } else {
            [LoadBalancerIngress {
                ip: Some(format!("20.{}.{}.1", k / 250, k % 250).into()),
                hostname: None,
            }]
            .into()
        };
        c.add(svc);
        i += 1;
    }
    // 1,500 ClusterIP Services, a third with an internal hostname.
    for k in 0..1_500 {
        let annotations = if k % 3 == 0 {
            map(&[(
                "external-dns.alpha.kubernetes.io/internal-hostname",
                &format!("svc-{i}.internal.example.com"),
            )])
        } else {
            hostname(i)
        };
        c.add(service(i, "ClusterIP", annotations));
        i += 1;
    }
    // 1,000 ExternalName Services.
    for _ in 0..1_000 {
        let mut svc = service(i, "ExternalName", hostname(i));
        svc.external_name = Some(format!("db-{i}.rds.example.net").into());
        c.add(svc);
        i += 1;
    }
    c
}

fn setup() -> (ClusterStore, ServiceSource) {
    let cluster = synthetic_cluster();
    let source = ServiceSource::new(ServiceSourceConfig::default(), Arc::new(StaticResolver::new()));
    (cluster, source)
}

fn bench(c: &mut Criterion) {
    let (cluster, source) = setup();
    let count = futures::executor::block_on(source.evaluate_all(&cluster))
        .map(|o| o.endpoints.len())
        .unwrap_or(0);
    eprintln!("service source: {count} endpoints from 10,000 Services");
    // The call alone (what a sync waits for), and the call plus freeing its result.
    c.bench_function("service_source_10k_services", |b| {
        b.iter_with_large_drop(|| futures::executor::block_on(source.evaluate_all(black_box(&cluster))))
    });
    c.bench_function("service_source_10k_services_incl_drop", |b| {
        b.iter(|| black_box(futures::executor::block_on(source.evaluate_all(black_box(&cluster)))))
    });
}

fn bench_on_cpu(c: &mut Criterion<OnCpu>) {
    let (cluster, source) = setup();
    c.bench_function("service_source_10k_services_on_cpu", |b| {
        b.iter_with_large_drop(|| futures::executor::block_on(source.evaluate_all(black_box(&cluster))))
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_group! {
    name = on_cpu;
    config = Criterion::default().with_measurement(OnCpu).sample_size(20);
    targets = bench_on_cpu
}
criterion_main!(benches, on_cpu);
