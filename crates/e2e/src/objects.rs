//! The Kubernetes objects the tests create, as JSON. Annotations use external-dns's GA prefix
//! (`external-dns.kubernetes.io/`), the only one external-dns v0.22 reads by default, so the same objects
//! serve the differential test.

use serde_json::{Map, Value, json};

pub const PREFIX: &str = "external-dns.kubernetes.io/";
pub const GATEWAY_CLASS: &str = "extdns-e2e";
const CONTROLLER: &str = "example.org/extdns-e2e";

/// Annotations under [`PREFIX`]: `annotations(&[("hostname", "a.example.org")])`.
pub fn annotations(pairs: &[(&str, &str)]) -> Value {
    let mut m = Map::new();
    for (k, v) in pairs {
        m.insert(format!("{PREFIX}{k}"), Value::String((*v).to_string()));
    }
    Value::Object(m)
}

fn meta(ns: &str, name: &str, annotations: Value) -> Value {
    json!({ "name": name, "namespace": ns, "annotations": annotations })
}

/// A Service of `type` with one HTTP port, selecting Pods labelled `app: <name>`.
fn http_service(ns: &str, name: &str, annotations: Value, service_type: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": meta(ns, name, annotations),
        "spec": {
            "type": service_type,
            "ports": [{ "name": "http", "port": 80, "protocol": "TCP" }],
            "selector": { "app": name },
        },
    })
}

/// A LoadBalancer Service whose load balancer reports `ingress` (e.g. `[{"ip": "203.0.113.10"}]`).
pub fn lb_service(ns: &str, name: &str, annotations: Value, ingress: Value) -> Value {
    let mut svc = http_service(ns, name, annotations, "LoadBalancer");
    svc["status"] = json!({ "loadBalancer": { "ingress": ingress } });
    svc
}

/// The most common Service of the scenarios: a LoadBalancer at one IP, published under the hostname
/// annotation.
pub fn lb_at(ns: &str, name: &str, hostname: &str, ip: &str) -> Value {
    lb_service(ns, name, annotations(&[("hostname", hostname)]), json!([{ "ip": ip }]))
}

/// An Ingress with one rule for `host`, at `ip`: the ingress form of [`lb_at`].
pub fn ingress_at(ns: &str, name: &str, host: &str, ip: &str) -> Value {
    ingress(ns, name, json!({}), &[host], json!([{ "ip": ip }]))
}

/// A `networking.k8s.io/v1` Ingress with one rule per host (each to Service `backend`), and `lb` as its
/// `status.loadBalancer.ingress`.
pub fn ingress(ns: &str, name: &str, annotations: Value, hosts: &[&str], lb: Value) -> Value {
    let rules: Vec<Value> = hosts
        .iter()
        .map(|h| {
            json!({
                "host": h,
                "http": { "paths": [{ "path": "/", "pathType": "Prefix",
                    "backend": { "service": { "name": "backend", "port": { "number": 80 } } } }] },
            })
        })
        .collect();
    json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": meta(ns, name, annotations),
        // The API server wants a default backend or a rule.
        "spec": { "defaultBackend": { "service": { "name": "backend", "port": { "number": 80 } } }, "rules": rules },
        "status": { "loadBalancer": { "ingress": lb } },
    })
}

/// `ingress` with one `spec.tls` entry of `hosts`.
pub fn ingress_tls(mut ingress: Value, hosts: &[&str]) -> Value {
    ingress["spec"]["tls"] = json!([{ "hosts": hosts, "secretName": "tls" }]);
    ingress
}

/// A dual-stack LoadBalancer Service (both cluster IP families, like on a dual-stack cluster).
pub fn dual_stack_lb_service(ns: &str, name: &str, annotations: Value, ingress: Value) -> Value {
    let mut svc = lb_service(ns, name, annotations, ingress);
    svc["spec"]["ipFamilyPolicy"] = json!("RequireDualStack");
    svc["spec"]["ipFamilies"] = json!(["IPv4", "IPv6"]);
    svc
}

pub fn cluster_ip_service(ns: &str, name: &str, annotations: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": meta(ns, name, annotations),
        "spec": { "type": "ClusterIP", "ports": [{ "name": "http", "port": 80 }], "selector": { "app": name } },
    })
}

/// A headless Service selecting Pods labelled `app: <app>`.
pub fn headless_service(ns: &str, name: &str, app: &str, annotations: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": meta(ns, name, annotations),
        "spec": { "clusterIP": "None", "ports": [{ "name": "db", "port": 5432 }], "selector": { "app": app } },
    })
}

/// A headless Service named after the Pods it selects, published under the hostname annotation.
pub fn headless_at(ns: &str, app: &str, hostname: &str) -> Value {
    headless_service(ns, app, app, annotations(&[("hostname", hostname)]))
}

pub fn nodeport_service(ns: &str, name: &str, annotations: Value) -> Value {
    http_service(ns, name, annotations, "NodePort")
}

pub fn external_name_service(ns: &str, name: &str, target: &str, annotations: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": meta(ns, name, annotations),
        "spec": { "type": "ExternalName", "externalName": target },
    })
}

/// The label every Node made here carries, so that the run deletes them after each scenario
/// ([`crate::scenarios::Ctx::delete_cluster_scoped`]).
pub const NODE_LABEL: &str = "extdns-e2e/scenario-node";

/// A Node with these `(type, address)` pairs in its status.
pub fn node(name: &str, addresses: &[(&str, &str)]) -> Value {
    let addresses: Vec<Value> = addresses
        .iter()
        .map(|(t, a)| json!({ "type": t, "address": a }))
        .collect();
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": { "name": name, "labels": { "kubernetes.io/hostname": name, NODE_LABEL: "true" } },
        "spec": {},
        "status": { "addresses": addresses },
    })
}

/// A running, ready Pod with `spec.hostname` (per-pod DNS names under a headless Service).
pub fn pod(ns: &str, name: &str, app: &str, ip: &str, node: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": { "name": name, "namespace": ns, "labels": { "app": app } },
        "spec": {
            "hostname": name,
            "nodeName": node,
            "containers": [{ "name": "app", "image": "example.invalid/app:1" }],
        },
        "status": {
            "phase": "Running",
            "podIP": ip,
            "podIPs": [{ "ip": ip }],
            "hostIP": "10.2.0.1",
            "conditions": [{ "type": "Ready", "status": "True" }],
        },
    })
}

/// An EndpointSlice of `service` with one ready endpoint per `(ip, pod)`.
pub fn endpoint_slice(ns: &str, name: &str, service: &str, endpoints: &[(&str, &str)]) -> Value {
    let endpoints: Vec<Value> = endpoints
        .iter()
        .map(|(ip, pod)| {
            json!({
                "addresses": [ip],
                "conditions": { "ready": true, "serving": true, "terminating": false },
                "hostname": pod,
                "targetRef": { "kind": "Pod", "name": pod, "namespace": ns },
            })
        })
        .collect();
    json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {
            "name": name, "namespace": ns,
            "labels": { "kubernetes.io/service-name": service, "endpointslice.kubernetes.io/managed-by": "extdns-e2e" },
        },
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": [{ "name": "db", "port": 5432, "protocol": "TCP" }],
    })
}

pub fn condition(kind: &str, status: &str) -> Value {
    json!({
        "type": kind,
        "status": status,
        "reason": if status == "True" { kind } else { "Pending" },
        "message": "set by the extdns e2e test",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
        "observedGeneration": 1,
    })
}

pub fn gateway_class() -> Value {
    json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
        "metadata": { "name": GATEWAY_CLASS },
        "spec": { "controllerName": CONTROLLER },
    })
}

/// A Gateway with one listener per route protocol, accepting ListenerSets of its namespace, and the
/// address its (absent) controller would report.
pub fn gateway(ns: &str, name: &str, address: &str) -> Value {
    json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
        "metadata": { "name": name, "namespace": ns },
        "spec": {
            "gatewayClassName": GATEWAY_CLASS,
            "allowedListeners": { "namespaces": { "from": "Same" } },
            "listeners": [
                { "name": "http", "protocol": "HTTP", "port": 80, "hostname": "*.apps.example.org" },
                { "name": "https", "protocol": "HTTPS", "port": 443, "hostname": "*.apps.example.org",
                  "tls": { "mode": "Terminate", "certificateRefs": [{ "name": "apps-cert" }] } },
                { "name": "tls", "protocol": "TLS", "port": 8443, "hostname": "*.tls.example.org",
                  "tls": { "mode": "Passthrough" } },
                { "name": "tcp", "protocol": "TCP", "port": 5432 },
                { "name": "udp", "protocol": "UDP", "port": 5353 },
            ],
        },
        "status": {
            "addresses": [{ "type": "IPAddress", "value": address }],
            "conditions": [condition("Accepted", "True"), condition("Programmed", "True")],
        },
    })
}

/// A ListenerSet attached to Gateway `gateway` with one HTTP listener for `hostname`, accepted.
pub fn listener_set(ns: &str, name: &str, gateway: &str, hostname: &str) -> Value {
    json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "ListenerSet",
        "metadata": { "name": name, "namespace": ns },
        "spec": {
            "parentRef": { "group": "gateway.networking.k8s.io", "kind": "Gateway", "name": gateway },
            "listeners": [{ "name": "extra", "protocol": "HTTP", "port": 8080, "hostname": hostname }],
        },
        "status": {
            "conditions": [condition("Accepted", "True"), condition("Programmed", "True")],
            "listeners": [{
                "name": "extra", "attachedRoutes": 1,
                "supportedKinds": [{ "group": "gateway.networking.k8s.io", "kind": "HTTPRoute" }],
                "conditions": [condition("Accepted", "True"), condition("Programmed", "True")],
            }],
        },
    })
}

/// The route kinds, with the API version both controllers read them at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteKind {
    Http,
    Grpc,
    Tls,
    Tcp,
    Udp,
}

impl RouteKind {
    pub fn api_version(self) -> &'static str {
        match self {
            RouteKind::Tcp | RouteKind::Udp => "gateway.networking.k8s.io/v1alpha2",
            _ => "gateway.networking.k8s.io/v1",
        }
    }
    pub fn kind(self) -> &'static str {
        match self {
            RouteKind::Http => "HTTPRoute",
            RouteKind::Grpc => "GRPCRoute",
            RouteKind::Tls => "TLSRoute",
            RouteKind::Tcp => "TCPRoute",
            RouteKind::Udp => "UDPRoute",
        }
    }
}

/// Where a route attaches: a Gateway listener (`section`) or a ListenerSet.
#[derive(Debug, Clone)]
pub struct Parent<'a> {
    pub kind: &'a str,
    pub name: &'a str,
    pub section: Option<&'a str>,
}

impl<'a> Parent<'a> {
    pub fn gateway(name: &'a str, section: &'a str) -> Self {
        Parent {
            kind: "Gateway",
            name,
            section: Some(section),
        }
    }
    pub fn listener_set(name: &'a str) -> Self {
        Parent {
            kind: "ListenerSet",
            name,
            section: None,
        }
    }
    fn json(&self) -> Value {
        let mut r = json!({ "group": "gateway.networking.k8s.io", "kind": self.kind, "name": self.name });
        if let Some(s) = self.section {
            r["sectionName"] = json!(s);
        }
        r
    }
}

/// A route of `kind` attached to `parent`, with status `Accepted: <accepted>` from that parent.
/// `hostnames: None` leaves `spec.hostnames` out (TCP and UDP routes have none).
pub fn route(
    kind: RouteKind,
    ns: &str,
    name: &str,
    annotations: Value,
    hostnames: Option<&[&str]>,
    parent: &Parent<'_>,
    accepted: bool,
) -> Value {
    let mut spec = json!({ "parentRefs": [parent.json()] });
    if let Some(h) = hostnames {
        spec["hostnames"] = json!(h);
    }
    if kind == RouteKind::Tcp || kind == RouteKind::Udp || kind == RouteKind::Tls {
        spec["rules"] = json!([{ "backendRefs": [{ "name": "backend", "port": 80 }] }]);
    }
    json!({
        "apiVersion": kind.api_version(), "kind": kind.kind(),
        "metadata": meta(ns, name, annotations),
        "spec": spec,
        "status": { "parents": [{
            "parentRef": parent.json(),
            "controllerName": CONTROLLER,
            "conditions": [condition("Accepted", if accepted { "True" } else { "False" })],
        }]},
    })
}

/// An accepted route without `spec.hostnames`, published under the hostname annotation, on listener
/// `section` of Gateway `gw` (how the TCP and UDP routes get their names).
pub fn annotated_route(kind: RouteKind, ns: &str, name: &str, hostname: &str, section: &str) -> Value {
    route(
        kind,
        ns,
        name,
        annotations(&[("hostname", hostname)]),
        None,
        &Parent::gateway("gw", section),
        true,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotations_carry_the_ga_prefix() {
        let a = annotations(&[("hostname", "a.example.org"), ("ttl", "60")]);
        assert_eq!(a["external-dns.kubernetes.io/hostname"], "a.example.org");
        assert_eq!(a["external-dns.kubernetes.io/ttl"], "60");
    }

    #[test]
    fn typed_models_accept_the_route_and_gateway_objects() -> Result<(), serde_json::Error> {
        let p = Parent::gateway("gw", "http");
        let r = route(
            RouteKind::Http,
            "ns",
            "web",
            json!({}),
            Some(&["web.apps.example.org"]),
            &p,
            true,
        );
        let typed: gateway_api::httproutes::HttpRoute = serde_json::from_value(r)?;
        assert_eq!(typed.spec.hostnames, Some(vec!["web.apps.example.org".to_string()]));
        let tcp = route(RouteKind::Tcp, "ns", "db", json!({}), None, &p, true);
        let _: gateway_api::experimental::tcproutes::TcpRoute = serde_json::from_value(tcp)?;
        let _: gateway_api::experimental::gateways::Gateway =
            serde_json::from_value(gateway("ns", "gw", "203.0.113.1"))?;
        let _: gateway_api::experimental::listenersets::ListenerSet =
            serde_json::from_value(listener_set("ns", "ls", "gw", "*.ls.example.org"))?;
        Ok(())
    }
}
