//! Builders for the tests: compact views of Services, Pods, Nodes and EndpointSlices, and a way to run
//! the source over a [`ClusterStore`] and read its output as one line per record.

use std::sync::Arc;

use extdns_endpoint::Endpoint;
use extdns_informer::view::{
    EndpointSlice, LoadBalancerIngress, Meta, ObjectReference, Pod, PodPhase, Service, ServicePort, SliceEndpoint,
};
use extdns_informer::{ClusterStore, StrMap, Sym};
use extdns_source::resolver::StaticResolver;
use extdns_source::{SourceConfig, SourceExt};

use crate::{ServiceSource, ServiceSourceConfig};

pub const ALPHA: &str = "external-dns.alpha.kubernetes.io/";
pub const GA: &str = "external-dns.kubernetes.io/";

fn with(m: &StrMap, k: &str, v: &str) -> StrMap {
    m.iter().chain(std::iter::once((k, v))).collect()
}

pub fn source(cfg: ServiceSourceConfig) -> ServiceSource {
    ServiceSource::new(cfg, Arc::new(StaticResolver::new()))
}

/// The endpoints and the `resource` labels of the Services that could not be evaluated.
pub fn evaluate(cfg: ServiceSourceConfig, cluster: &ClusterStore) -> (Vec<Endpoint>, Vec<String>) {
    match futures::executor::block_on(source(cfg).evaluate_all(cluster)) {
        Ok(out) => (
            out.endpoints,
            out.failed.iter().map(|(k, _)| k.resource_label()).collect(),
        ),
        Err(e) => panic!("the service source failed: {e}"),
    }
}

pub fn run_with(src: &ServiceSource, cluster: &ClusterStore) -> Vec<Endpoint> {
    match futures::executor::block_on(src.evaluate_all(cluster)) {
        Ok(out) => out.endpoints,
        Err(e) => panic!("the service source failed: {e}"),
    }
}

pub fn run(cfg: ServiceSourceConfig, cluster: &ClusterStore) -> Vec<Endpoint> {
    run_with(&source(cfg), cluster)
}

/// The default configuration changed by `f`.
pub fn configured(f: impl FnOnce(&mut ServiceSourceConfig)) -> ServiceSourceConfig {
    let mut cfg = ServiceSourceConfig::default();
    f(&mut cfg);
    cfg
}

/// The default configuration with what every source shares changed by `f`.
pub fn sharing(f: impl FnOnce(&mut SourceConfig)) -> ServiceSourceConfig {
    let mut cfg = ServiceSourceConfig::default();
    f(&mut cfg.common);
    cfg
}

/// One line per record: `name TYPE target,target` (plus ` ttl=N` and ` id=X` when set), sorted.
pub fn show(eps: &[Endpoint]) -> Vec<String> {
    let mut out: Vec<String> = eps
        .iter()
        .map(|e| {
            let mut s = format!("{} {} {}", e.dns_name, e.record_type, e.targets.join(","));
            if e.record_ttl.0 != 0 {
                s.push_str(&format!(" ttl={}", e.record_ttl.0));
            }
            if !e.set_identifier.is_empty() {
                s.push_str(&format!(" id={}", e.set_identifier));
            }
            s
        })
        .collect();
    out.sort();
    out
}

/// The lines, owned, to compare with [`show`]'s.
pub fn owned(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

pub fn cluster_of(services: Vec<Service>) -> ClusterStore {
    let mut c = ClusterStore::new();
    c.extend(services);
    c
}

/// A Service builder.
#[derive(Clone)]
pub struct Sv(pub Service);

impl Sv {
    pub fn new(ns: &str, name: &str, service_type: &str) -> Sv {
        Sv(Service {
            meta: Meta {
                name: name.into(),
                namespace: ns.into(),
                ..Meta::default()
            },
            service_type: service_type.into(),
            ..Service::default()
        })
    }
    pub fn lb(ns: &str, name: &str) -> Sv {
        Sv::new(ns, name, "LoadBalancer").cluster_ip("10.96.0.10")
    }
    /// A full annotation key.
    pub fn ann(mut self, k: &str, v: &str) -> Sv {
        self.0.meta.annotations = with(&self.0.meta.annotations, k, v);
        self
    }
    /// An annotation under the alpha prefix.
    pub fn a(self, k: &str, v: &str) -> Sv {
        self.ann(&format!("{ALPHA}{k}"), v)
    }
    /// An annotation under the GA prefix.
    pub fn g(self, k: &str, v: &str) -> Sv {
        self.ann(&format!("{GA}{k}"), v)
    }
    pub fn label(mut self, k: &str, v: &str) -> Sv {
        self.0.meta.labels = with(&self.0.meta.labels, k, v);
        self
    }
    pub fn cluster_ip(mut self, ip: &str) -> Sv {
        self.0.cluster_ip = Some(ip.into());
        self
    }
    pub fn cluster_ips(mut self, ips: &[&str]) -> Sv {
        self.0.cluster_ips = ips.iter().map(|&s| Box::from(s)).collect();
        self
    }
    pub fn headless(self) -> Sv {
        self.cluster_ip("None")
    }
    pub fn external_ips(mut self, ips: &[&str]) -> Sv {
        self.0.external_ips = ips.iter().map(|&s| Box::from(s)).collect();
        self
    }
    pub fn external_name(mut self, n: &str) -> Sv {
        self.0.external_name = Some(n.into());
        self
    }
    pub fn ingress_ip(self, ip: &str) -> Sv {
        self.ingress(LoadBalancerIngress {
            ip: Some(ip.into()),
            hostname: None,
        })
    }
    pub fn ingress_host(self, h: &str) -> Sv {
        self.ingress(LoadBalancerIngress {
            ip: None,
            hostname: Some(h.into()),
        })
    }
    fn ingress(mut self, entry: LoadBalancerIngress) -> Sv {
        let mut all = std::mem::take(&mut self.0.load_balancer_ingress).into_vec();
        all.push(entry);
        self.0.load_balancer_ingress = all.into();
        self
    }
    pub fn selector(mut self, k: &str, v: &str) -> Sv {
        self.0.selector = with(&self.0.selector, k, v);
        self
    }
    pub fn port(mut self, protocol: Option<&str>, node_port: Option<i32>) -> Sv {
        let mut ports = std::mem::take(&mut self.0.ports).into_vec();
        ports.push(ServicePort {
            name: None,
            protocol: protocol.map(Sym::from),
            port: 80,
            node_port,
            target_port: None,
        });
        self.0.ports = ports.into();
        self
    }
    pub fn local(mut self) -> Sv {
        self.0.external_traffic_policy = Some("Local".into());
        self
    }
    pub fn publish_not_ready(mut self) -> Sv {
        self.0.publish_not_ready_addresses = true;
        self
    }
    pub fn build(self) -> Service {
        self.0
    }
}

pub fn pod(name: &str, ns: &str, labels: &[(&str, &str)]) -> Pod {
    Pod {
        name: name.into(),
        namespace: ns.into(),
        labels: labels.iter().copied().collect(),
        phase: PodPhase::Running,
        ready: true,
        ..Pod::default()
    }
}

pub fn pod_with(name: &str, ns: &str, labels: &[(&str, &str)], f: impl FnOnce(&mut Pod)) -> Pod {
    let mut p = pod(name, ns, labels);
    f(&mut p);
    p
}

/// A Node's view, from the sources' kit.
pub use extdns_source::pipeline::testing::node_view as node;

/// An EndpointSlice endpoint pointing at a Pod.
pub fn endpoint(addresses: &[&str], pod: &str, ready: Option<bool>) -> SliceEndpoint {
    SliceEndpoint {
        addresses: addresses.iter().map(|s| s.to_string()).collect(),
        ready,
        target_ref: Some(ObjectReference {
            kind: Some("Pod".into()),
            api_version: None,
            namespace: None,
            name: Some(pod.into()),
        }),
        node_name: None,
    }
}

/// An IPv4 EndpointSlice of Service `ns/service`: one endpoint per `(address, pod, ready)`.
pub fn ipv4_slice(ns: &str, service: &str, endpoints: &[(&str, &str, Option<bool>)]) -> EndpointSlice {
    let endpoints = endpoints
        .iter()
        .map(|(address, pod, ready)| endpoint(&[address], pod, *ready))
        .collect();
    slice(ns, service, "IPv4", endpoints)
}

pub fn slice(ns: &str, service: &str, address_type: &str, endpoints: Vec<SliceEndpoint>) -> EndpointSlice {
    EndpointSlice {
        meta: Meta {
            name: format!("{service}-abc"),
            namespace: ns.into(),
            ..Meta::default()
        },
        service_name: Some(service.into()),
        address_type: address_type.into(),
        endpoints,
    }
}
