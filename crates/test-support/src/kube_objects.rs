//! Kubernetes objects for the controller's incremental reconcile tests and benchmarks, as the API server
//! would send them, and feeding them to a live view as its watchers would (feature `kube-objects`).

use extdns_informer::LiveCluster;
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1 as discovery;
use kube::runtime::watcher::Event;
use serde_json::json;

/// The zone every object's hostname is in.
pub const ZONE: &str = "example.org";

/// An API object from its JSON; a fixture that does not decode is a bug of the test.
pub fn object<K: serde::de::DeserializeOwned>(value: serde_json::Value) -> K {
    serde_json::from_value(value).unwrap_or_else(|e| panic!("test object: {e}"))
}

/// A LoadBalancer Service in `default` whose load balancer answers on `ip`.
pub fn lb_service(name: &str, ip: &str) -> core::Service {
    lb_service_in("default", name, ip)
}

/// A LoadBalancer Service in `namespace` whose load balancer answers on `ip`.
pub fn lb_service_in(namespace: &str, name: &str, ip: &str) -> core::Service {
    object(json!({
        "metadata": {"name": name, "namespace": namespace,
            "annotations": {"external-dns.alpha.kubernetes.io/hostname": format!("{name}.{ZONE}")}},
        "spec": {"type": "LoadBalancer", "clusterIP": "10.96.0.10"},
        "status": {"loadBalancer": {"ingress": [{"ip": ip}]}}
    }))
}

/// A headless Service selecting the Pods labelled `app=<name>`.
pub fn headless_service(name: &str) -> core::Service {
    object(json!({
        "metadata": {"name": name, "namespace": "default",
            "annotations": {"external-dns.alpha.kubernetes.io/hostname": format!("{name}.{ZONE}")}},
        "spec": {"type": "ClusterIP", "clusterIP": "None", "selector": {"app": name}}
    }))
}

/// A NodePort Service (`Cluster` traffic policy), published with every node's address.
pub fn node_port_service(name: &str) -> core::Service {
    object(json!({
        "metadata": {"name": name, "namespace": "default",
            "annotations": {"external-dns.alpha.kubernetes.io/hostname": format!("{name}.{ZONE}")}},
        "spec": {"type": "NodePort", "clusterIP": "10.96.0.11", "externalTrafficPolicy": "Cluster",
            "ports": [{"name": "http", "port": 80, "nodePort": 30080, "protocol": "TCP"}]}
    }))
}

/// The EndpointSlice of `service`: one ready endpoint per address, each naming a Pod `<service>-<i>`.
pub fn slice(service: &str, ips: &[&str]) -> discovery::EndpointSlice {
    let endpoints: Vec<serde_json::Value> = ips
        .iter()
        .enumerate()
        .map(|(i, ip)| {
            json!({"addresses": [ip], "conditions": {"ready": true},
            "targetRef": {"kind": "Pod", "namespace": "default", "name": format!("{service}-{i}")}})
        })
        .collect();
    object(json!({
        "metadata": {"name": format!("{service}-abc"), "namespace": "default",
            "labels": {"kubernetes.io/service-name": service}},
        "addressType": "IPv4", "endpoints": endpoints
    }))
}

/// A running Pod in `default` on node `n1`, labelled `app=headless`.
pub fn pod(name: &str, ip: &str) -> core::Pod {
    pod_in("default", name, ip)
}

/// A running Pod in `namespace` on node `n1`, labelled `app=headless`.
pub fn pod_in(namespace: &str, name: &str, ip: &str) -> core::Pod {
    object(json!({
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "headless"}},
        "spec": {"nodeName": "n1", "containers": []},
        "status": {"phase": "Running", "podIP": ip, "hostIP": "192.0.2.200"}
    }))
}

/// A Node with one external and one internal address.
pub fn node(name: &str, external: &str) -> core::Node {
    object(json!({
        "metadata": {"name": name},
        "status": {"addresses": [{"type": "ExternalIP", "address": external}, {"type": "InternalIP", "address": "10.0.0.5"}]}
    }))
}

/// Feeds `objects` to the live view as one complete list, as a watcher's first list would.
pub fn listed<K: extdns_informer::Watched>(cluster: &LiveCluster, objects: Vec<K>) {
    cluster.apply_event(Event::<K>::Init);
    for o in objects {
        cluster.apply_event(Event::InitApply(o));
    }
    cluster.apply_event(Event::<K>::InitDone);
}

/// As [`listed`], with a copy of each object made as it arrives, so that what the list itself holds can be
/// measured apart from the objects, which stay.
pub fn listed_copies<K: extdns_informer::Watched + Clone>(cluster: &LiveCluster, objects: &[K]) {
    cluster.apply_event(Event::<K>::Init);
    for o in objects {
        cluster.apply_event(Event::InitApply(o.clone()));
    }
    cluster.apply_event(Event::<K>::InitDone);
}
