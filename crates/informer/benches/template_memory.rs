//! Heap bytes per Service held by the live informer, with and without fields kept for templates.
//!
//! Templates may read any field of a Service; the informer keeps only the paths they read
//! ([`TemplateFields`]). This measures that promise with a counting allocator (`cap`): without templates
//! (or with templates that read only name, namespace, labels and annotations) a stored Service costs what
//! the compact view costs; a template reading `.Spec.IPFamilies` and `.Spec.TrafficDistribution` adds
//! those two fields only; a template printing the whole object (`{{.}}`) keeps all of it.
//!
//! `cargo bench -p extdns-informer --bench template_memory` runs 10,000 Services; under `cargo test` the
//! same code runs on 1,000 as a check, and fails when a bound below is broken.

use std::alloc::System;

use cap::Cap;
use extdns_informer::{Cluster, FieldTree, LiveCluster, LiveOptions, PathStep, ResourceKind, TemplateFields};
use k8s_openapi::api::core::v1::Service;
use kube::runtime::watcher::Event;
use serde_json::{Value, json};

#[global_allocator]
static ALLOC: Cap<System> = Cap::new(System, usize::MAX);

const NAMESPACES: usize = 20;

/// A LoadBalancer Service as the API server sends it, managed fields and last-applied annotation included.
fn realistic_service(i: usize) -> Value {
    let ns = format!("team-{:02}", i % NAMESPACES);
    let name = format!("svc-{i}");
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {
            "name": name, "namespace": ns, "uid": format!("6f1c2d3e-0000-4000-8000-{i:012}"),
            "resourceVersion": format!("{}", 100_000 + i), "creationTimestamp": "2026-11-20T10:00:00Z",
            "labels": {"app": name, "app.kubernetes.io/part-of": "shop", "team": ns},
            "annotations": {
                "external-dns.kubernetes.io/hostname": format!("{name}.example.org"),
                "kubectl.kubernetes.io/last-applied-configuration": "x".repeat(600)
            },
            "managedFields": [{"manager": "kubectl", "operation": "Apply", "apiVersion": "v1",
                               "time": "2026-11-20T10:00:00Z", "fieldsType": "FieldsV1",
                               "fieldsV1": {"f:spec": {"f:ports": {}, "f:selector": {}, "f:type": {}}}}]
        },
        "spec": {
            "type": "LoadBalancer", "clusterIP": format!("10.0.{}.{}", i / 250, i % 250),
            "clusterIPs": [format!("10.0.{}.{}", i / 250, i % 250)],
            "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack", "trafficDistribution": "PreferClose",
            "internalTrafficPolicy": "Cluster", "externalTrafficPolicy": "Cluster", "sessionAffinity": "None",
            "allocateLoadBalancerNodePorts": true,
            "selector": {"app": name},
            "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080, "nodePort": 30000 + (i % 2000)},
                      {"name": "https", "port": 443, "protocol": "TCP", "targetPort": 8443, "nodePort": 32000 + (i % 700)}]
        },
        "status": {"loadBalancer": {"ingress": [{"ip": format!("34.1.{}.{}", i / 250, i % 250), "ipMode": "VIP"}]}}
    })
}

fn member(k: &str) -> PathStep {
    PathStep::Member(k.to_string())
}

/// Bytes held by a live store of `services` kept with `fields`.
fn stored_bytes(services: &[Service], fields: TemplateFields) -> usize {
    let mut opts = LiveOptions::default();
    opts.template_fields = fields;
    let before = ALLOC.allocated();
    let cluster = LiveCluster::detached(&[ResourceKind::Service], opts);
    cluster.apply_event(Event::<Service>::Init);
    for s in services {
        cluster.apply_event(Event::InitApply(s.clone()));
    }
    cluster.apply_event(Event::<Service>::InitDone);
    let bytes = ALLOC.allocated() - before;
    assert_eq!(
        cluster.store().services().len(),
        services.len(),
        "every Service is stored"
    );
    drop(cluster);
    bytes
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n = if std::env::args().any(|a| a == "--bench") {
        10_000
    } else {
        1_000
    };
    let services: Vec<Service> = (0..n)
        .map(|i| serde_json::from_value(realistic_service(i)))
        .collect::<Result<_, _>>()?;

    let plain = stored_bytes(&services, TemplateFields::default());
    // A template reading only what the view holds (`{{.Name}}.{{.Namespace}}`) yields an empty tree.
    let mut fields = TemplateFields::default();
    fields.set(ResourceKind::Service, FieldTree::default());
    let name_only = stored_bytes(&services, fields);

    let mut two = FieldTree::default();
    two.insert(&[member("spec"), member("ipFamilies")], true);
    two.insert(&[member("spec"), member("trafficDistribution")], true);
    let mut fields = TemplateFields::default();
    fields.set(ResourceKind::Service, two);
    let two_fields = stored_bytes(&services, fields);

    let mut whole = FieldTree::default();
    whole.insert(&[], true);
    let mut fields = TemplateFields::default();
    fields.set(ResourceKind::Service, whole);
    let whole_object = stored_bytes(&services, fields);

    let per = |b: usize| b as f64 / n as f64;
    println!("services: {n}");
    println!(
        "no template fields (the compact view):        {:>6.0} B/service",
        per(plain)
    );
    println!(
        "template reads .Spec.IPFamilies + .Spec.TrafficDistribution: {:>6.0} B/service",
        per(two_fields)
    );
    println!(
        "template prints the whole object ({{{{.}}}}):     {:>6.0} B/service",
        per(whole_object)
    );

    if name_only != plain {
        return Err(format!("a template-less store grew: {name_only} B against {plain} B").into());
    }
    // Two small fields: the kept JSON (a map, two entries, a list of one string) is a few hundred bytes.
    let extra = per(two_fields) - per(plain);
    if !(0.0..=600.0).contains(&extra) {
        return Err(format!("keeping two fields costs {extra:.0} B/service, expected 0..600").into());
    }
    // Keeping everything costs several times more: what is kept follows what templates read.
    if per(whole_object) < per(two_fields) + 4.0 * extra {
        return Err("keeping the whole object should cost far more than two fields".into());
    }
    Ok(())
}
