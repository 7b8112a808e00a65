//! Heap bytes per Pod held by the live informer, against the k8s-openapi object it replaces.
//!
//! Memory is measured, not estimated: a counting global allocator (`cap`, wrapping the system allocator)
//! reports the bytes live on the heap before and after the Pods are stored. The figures are requested
//! bytes (the allocator's own per-block overhead, typically 8-16 bytes with glibc, is not included; the
//! allocation counts printed let you add it).
//!
//! `cargo bench -p extdns-informer --bench pod_memory` runs 10,000 Pods; under `cargo test` the same code
//! runs on 1,000 Pods as a quick check. Either way it fails when a stored Pod costs more than 1 KiB.

use std::alloc::System;
use std::time::Instant;

use cap::Cap;
use extdns_informer::convert::{self, PodAnnotationPrefixes};
use extdns_informer::{Cluster, Interner, LiveCluster, LiveOptions, ResourceKind};
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::watcher::Event;
use serde_json::{Value, json};

#[global_allocator]
static ALLOC: Cap<System> = Cap::new(System, usize::MAX);

const NAMESPACES: usize = 20;
const NODES: usize = 100;
const DEPLOYMENTS_PER_NAMESPACE: usize = 3;
const TARGET_BYTES_PER_POD: usize = 1024;

/// `len` pseudo-random hex digits derived from `n` (hashes, uids, container ids).
fn hex(n: usize, len: usize) -> String {
    let mut out = String::with_capacity(len + 16);
    let mut x = (n as u64).wrapping_add(1);
    while out.len() < len {
        x = x.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29) ^ 0xbf58_476d_1ce4_e5b9;
        out.push_str(&format!("{x:016x}"));
    }
    out.truncate(len);
    out
}

/// A Pod as the API server sends it: managed fields, owner reference, two containers with env, resources
/// and probes, the service account volume, and a full status.
fn realistic_pod(i: usize, total: usize) -> Value {
    let per_ns = total.div_ceil(NAMESPACES);
    let ns_idx = i / per_ns;
    let in_ns = i % per_ns;
    let ns = format!("team-{ns_idx:02}");
    // 90% of a namespace's Pods belong to its Deployments, the rest to one StatefulSet.
    let deploy_pods = per_ns * 9 / 10;
    let (owner_kind, owner, name, mut labels) = if in_ns < deploy_pods {
        let d = in_ns % DEPLOYMENTS_PER_NAMESPACE;
        let app = format!("svc-{d}");
        let hash = hex(ns_idx * 10 + d, 10);
        let rs = format!("{app}-{hash}");
        let name = format!("{rs}-{}", hex(i, 5));
        let labels = json!({"app": app, "pod-template-hash": hash});
        ("ReplicaSet", rs, name, labels)
    } else {
        let app = "db".to_string();
        let ordinal = in_ns - deploy_pods;
        let name = format!("{app}-{ordinal}");
        let labels = json!({"app": app, "controller-revision-hash": format!("{app}-{}", hex(ns_idx, 10)),
            "statefulset.kubernetes.io/pod-name": name});
        ("StatefulSet", app, name, labels)
    };
    let app = labels["app"].as_str().unwrap_or_default().to_string();
    for (k, v) in [
        ("app.kubernetes.io/name", app.clone()),
        ("app.kubernetes.io/instance", format!("{app}-{ns}")),
        ("app.kubernetes.io/version", "1.27.3".to_string()),
        ("app.kubernetes.io/component", "backend".to_string()),
        ("app.kubernetes.io/part-of", "shop".to_string()),
        ("app.kubernetes.io/managed-by", "Helm".to_string()),
        ("team", ns.clone()),
    ] {
        labels[k] = Value::String(v);
    }
    if owner_kind == "ReplicaSet" {
        labels["environment"] = json!("production");
    }
    let node = format!("ip-10-0-{}-{}.eu-west-1.compute.internal", (i % NODES) / 10, i % NODES);
    let pod_ip = format!("10.{}.{}.{}", 100 + ns_idx, (in_ns / 250) % 256, in_ns % 250 + 2);
    let host_ip = format!("10.0.{}.{}", (i % NODES) / 10, i % NODES);
    let container = |n: &str, image: &str, port: i32| {
        json!({
            "name": n, "image": image, "imagePullPolicy": "IfNotPresent",
            "ports": [{"name": "http", "containerPort": port, "protocol": "TCP"}],
            "env": [
                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}},
                {"name": "LOG_LEVEL", "value": "info"},
                {"name": "DATABASE_URL", "value": format!("postgres://db.{ns}.svc.cluster.local:5432/app")},
                {"name": "JAVA_OPTS", "value": "-XX:MaxRAMPercentage=75 -XX:+UseG1GC"}
            ],
            "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}},
            "readinessProbe": {"httpGet": {"path": "/ready", "port": port, "scheme": "HTTP"}, "periodSeconds": 10,
                "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3},
            "volumeMounts": [{"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}],
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"
        })
    };
    let status_of = |n: &str, image: &str| {
        json!({"name": n, "image": image, "imageID": format!("docker.io/library/{image}@sha256:{}", hex(i, 64)),
            "containerID": format!("containerd://{}", hex(i + 7, 64)), "ready": true, "restartCount": 0, "started": true,
            "state": {"running": {"startedAt": "2026-11-20T10:00:00Z"}}})
    };
    let cond = |t: &str| json!({"type": t, "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-11-20T10:00:00Z"});
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name, "generateName": format!("{owner}-"), "namespace": ns,
            "uid": format!("{}-{}-{}-{}-{}", hex(i, 8), hex(i + 1, 4), hex(i + 2, 4), hex(i + 3, 4), hex(i + 4, 12)),
            "resourceVersion": format!("{}", 1_000_000 + i), "creationTimestamp": "2026-11-20T10:00:00Z",
            "labels": labels,
            "annotations": {
                "external-dns.alpha.kubernetes.io/target": pod_ip,
                "kubectl.kubernetes.io/restartedAt": "2026-11-19T08:00:00Z",
                "prometheus.io/scrape": "true",
                "prometheus.io/port": "9090",
                "cluster-autoscaler.kubernetes.io/safe-to-evict": "true"
            },
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": owner_kind, "name": owner,
                "uid": hex(i + 9, 32), "controller": true, "blockOwnerDeletion": true}],
            "managedFields": [
                {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
                 "time": "2026-11-20T10:00:00Z", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:metadata": {"f:annotations": {".": {}, "f:external-dns.alpha.kubernetes.io/target": {},
                    "f:kubectl.kubernetes.io/restartedAt": {}, "f:prometheus.io/port": {}, "f:prometheus.io/scrape": {}},
                    "f:generateName": {}, "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}},
                    "f:ownerReferences": {".": {}, "k:{\"uid\":\"x\"}": {}}},
                  "f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {".": {}, "f:env": {}, "f:image": {}, "f:name": {},
                    "f:ports": {}, "f:readinessProbe": {}, "f:resources": {}}, "k:{\"name\":\"sidecar\"}": {".": {}}},
                    "f:dnsPolicy": {}, "f:restartPolicy": {}, "f:schedulerName": {}, "f:securityContext": {}}}},
                {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": "2026-11-20T10:00:05Z",
                 "fieldsType": "FieldsV1", "subresource": "status",
                 "fieldsV1": {"f:status": {"f:conditions": {"k:{\"type\":\"Ready\"}": {".": {}, "f:status": {}}},
                    "f:containerStatuses": {}, "f:hostIP": {}, "f:hostIPs": {}, "f:phase": {}, "f:podIP": {},
                    "f:podIPs": {".": {}, "k:{\"ip\":\"x\"}": {}}, "f:startTime": {}}}}
            ]
        },
        "spec": {
            "containers": [container("app", "registry.example.com/shop/app:1.27.3", 8080),
                           container("sidecar", "registry.example.com/mesh/proxy:2.4.1", 15090)],
            "volumes": [{"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}],
            "nodeName": node, "serviceAccountName": "default", "serviceAccount": "default",
            "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler",
            "terminationGracePeriodSeconds": 30, "securityContext": {}, "priority": 0, "enableServiceLinks": true,
            "preemptionPolicy": "PreemptLowerPriority",
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]
        },
        "status": {
            "phase": "Running",
            "conditions": [cond("PodReadyToStartContainers"), cond("Initialized"), cond("Ready"), cond("ContainersReady"), cond("PodScheduled")],
            "hostIP": host_ip, "hostIPs": [{"ip": host_ip}], "podIP": pod_ip, "podIPs": [{"ip": pod_ip}],
            "startTime": "2026-11-20T10:00:00Z", "qosClass": "Burstable",
            "containerStatuses": [status_of("app", "registry.example.com/shop/app:1.27.3"),
                                  status_of("sidecar", "registry.example.com/mesh/proxy:2.4.1")]
        }
    })
}

fn allocated() -> usize {
    ALLOC.allocated()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let full = std::env::args().any(|a| a == "--bench");
    let n = if full { 10_000 } else { 1_000 };

    let json: Vec<Value> = (0..n).map(|i| realistic_pod(i, n)).collect();
    let before = allocated();
    let pods: Vec<Pod> = json
        .iter()
        .map(|v| serde_json::from_value(v.clone()))
        .collect::<Result<_, _>>()?;
    let k8s_bytes = allocated() - before;
    drop(json);

    // The usual kube-runtime memory transform, for comparison: a reflector store of these objects.
    let before = allocated();
    let trimmed: Vec<Pod> = pods
        .iter()
        .map(|p| {
            let mut p = p.clone();
            p.metadata.managed_fields = None;
            if let Some(a) = p.metadata.annotations.as_mut() {
                a.remove("kubectl.kubernetes.io/last-applied-configuration");
            }
            p
        })
        .collect();
    let trimmed_bytes = allocated() - before;
    drop(trimmed);

    // The live store, fed as the watcher feeds it on the initial list.
    let before = allocated();
    let cluster = LiveCluster::detached(&[ResourceKind::Pod], LiveOptions::default());
    cluster.apply_event(Event::<Pod>::Init);
    for p in &pods {
        cluster.apply_event(Event::InitApply(p.clone()));
    }
    cluster.apply_event(Event::<Pod>::InitDone);
    let live_bytes = allocated() - before;
    let stored: usize = (0..NAMESPACES)
        .map(|ns| cluster.store().pods(&format!("team-{ns:02}")).len())
        .sum();
    assert_eq!(stored, n, "every Pod is stored");
    let interned = cluster.interner().len();

    // The same Pods arriving one by one as watch events (the steady state after startup).
    let before = allocated();
    let applied = LiveCluster::detached(&[ResourceKind::Pod], LiveOptions::default());
    for p in &pods {
        applied.apply_event(Event::Apply(p.clone()));
    }
    let applied_bytes = allocated() - before;
    drop(applied);

    // Conversion speed, the per-event cost of the transform. The watcher converts an object right after
    // decoding it, so it is measured on a few Pods that stay in cache, not on the whole cold set.
    let interner = Interner::new();
    let prefixes = PodAnnotationPrefixes::default();
    let hot = &pods[..pods.len().min(100)];
    let rounds = 200;
    let start = Instant::now();
    let mut labels = 0usize;
    for _ in 0..rounds {
        for p in hot {
            labels += convert::pod(p, &prefixes, &interner).labels.len();
        }
    }
    let convert_ns = start.elapsed().as_nanos() as f64 / (rounds * hot.len()) as f64;
    assert_eq!(labels, rounds * hot.len() * 10, "every Pod keeps its 10 labels");

    let per_pod = live_bytes as f64 / n as f64;
    println!(
        "pods: {n} ({NAMESPACES} namespaces, {NODES} nodes, {DEPLOYMENTS_PER_NAMESPACE} Deployments + 1 StatefulSet per namespace)"
    );
    println!(
        "k8s-openapi Pod, untrimmed:                         {:>8.0} B/pod",
        k8s_bytes as f64 / n as f64
    );
    println!(
        "k8s-openapi Pod, managedFields + last-applied dropped: {:>5.0} B/pod",
        trimmed_bytes as f64 / n as f64
    );
    println!("extdns live store (view + index + interned strings):  {per_pod:>5.0} B/pod");
    println!(
        "  same, fed by watch events instead of a list:          {:>5.0} B/pod",
        applied_bytes as f64 / n as f64
    );
    println!(
        "  of which the view struct itself: {} B (+16 B Arc header)",
        std::mem::size_of::<extdns_informer::view::Pod>()
    );
    println!("distinct interned strings: {interned}");
    println!("convert::pod: {convert_ns:.0} ns/pod");
    if per_pod > TARGET_BYTES_PER_POD as f64 {
        return Err(
            format!("a stored Pod costs {per_pod:.0} bytes, over the {TARGET_BYTES_PER_POD}-byte target").into(),
        );
    }
    drop(cluster);
    Ok(())
}
