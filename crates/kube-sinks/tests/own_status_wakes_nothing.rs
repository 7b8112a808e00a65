//! extdns's own status writes, on a real kube-apiserver (`EXTDNS_TEST_ETCD`, `EXTDNS_TEST_KUBE_APISERVER`,
//! `EXTDNS_TEST_KUBECTL`), wake no sync: each comes back as a watch event, and the live view must record no
//! change for it, or every status write would start an evaluation that finds nothing to do (issue 48: with
//! status on, the change → DNS latency moved). A real change of another object of each kind, made after
//! the writes, is recorded: a watch delivers one kind's events in order, so once the view has that change,
//! it has seen the status write before it too.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use extdns_controller::{Reason, StatusSink, SyncStatus};
use extdns_informer::view::RouteKind;
use extdns_informer::{Cluster, KindOverrides, LiveCluster, LiveOptions, ObjectKey, ResourceKind};
use extdns_kube_sinks::CrdStatus;
use extdns_kube_sinks::object_status::{KubeStatusApi, Mechanism, ObjectStatus, StatusApi};
use extdns_plan::PlanConfig;
use extdns_source_crd::CrdSourceConfig;
use extdns_test_support::control_plane::{Binaries, ControlPlane};
use extdns_test_support::require;
use serde_json::{Value, json};

type Error = Box<dyn std::error::Error>;

const NS: &str = "default";
const HTTP_ROUTE: ResourceKind = ResourceKind::Route(RouteKind::Http);
const KINDS: [ResourceKind; 4] = [
    ResourceKind::Service,
    ResourceKind::Ingress,
    HTTP_ROUTE,
    ResourceKind::DnsEndpoint,
];

/// Object `name` of `kind`, asking for `name.example.org`, with the label `step`.
fn object(kind: ResourceKind, name: &str, step: &str) -> Value {
    let host = format!("{name}.example.org");
    let metadata = json!({"name": name, "namespace": NS, "labels": {"step": step},
        "annotations": {"external-dns.kubernetes.io/hostname": host}});
    match kind {
        ResourceKind::Service => json!({"apiVersion": "v1", "kind": "Service", "metadata": metadata,
            "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]},
            "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}}}),
        ResourceKind::Ingress => json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": metadata,
            "spec": {"rules": [{"host": host}]}}),
        ResourceKind::Route(_) => json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
            "metadata": metadata, "spec": {"hostnames": [host], "parentRefs": [{"name": "gw"}]}}),
        _ => json!({"apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "DNSEndpoint", "metadata": metadata,
            "spec": {"endpoints": [{"dnsName": host, "recordType": "A", "targets": ["192.0.2.2"]}]}}),
    }
}

fn status() -> ObjectStatus {
    ObjectStatus {
        published: false,
        reason: Reason::Pending,
        message: "written.example.org A: pending".into(),
    }
}

/// Every change the view records until it has recorded each of `fences`, or the timeout.
fn changes_until(cluster: &LiveCluster, fences: &[ObjectKey]) -> Result<BTreeSet<ObjectKey>, Error> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = BTreeSet::new();
    loop {
        let changes = cluster.take_changes();
        if changes.is_everything() {
            return Err("the view lost track of its changes (a re-list)".into());
        }
        seen.extend(changes.objects().cloned());
        if fences.iter().all(|f| seen.contains(f)) {
            return Ok(seen);
        }
        if Instant::now() > deadline {
            return Err(format!("the real changes never reached the view; it recorded {seen:?}").into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn extdns_status_writes_record_no_change_and_a_real_change_does() -> Result<(), Error> {
    require!(Etcd, KubeApiserver, Kubectl);
    let bins = Binaries::control_plane_from_env(PathBuf::new())?;
    let cp = ControlPlane::start(&bins)?;
    let crd =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../charts/extdns/crds/dnsendpoints.externaldns.k8s.io.yaml");
    let out = cp.kubectl().args(["apply", "--server-side", "-f"]).arg(&crd).output()?;
    if !out.status.success() {
        return Err(format!("applying the DNSEndpoint CRD: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    let applied = |name: &str, step: &str| -> Result<(), Error> {
        for kind in KINDS {
            // A CRD just made may not be served for a moment.
            let deadline = Instant::now() + Duration::from_secs(30);
            while let Err(e) = cp.kube.apply(&object(kind, name, step)) {
                if Instant::now() > deadline {
                    return Err(format!("applying {kind:?} {name}: {e:#}").into());
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        }
        Ok(())
    };
    applied("written", "1")?;
    applied("fence", "1")?;

    let client = cp.kube.client();
    let cluster = Arc::new(
        cp.kube
            .block_on(async { LiveCluster::start(client.clone(), &KINDS, LiveOptions::default()) })?,
    );
    cp.kube.block_on(cluster.wait_until_synced(Duration::from_secs(60)))?;
    let _ = cluster.take_changes();

    // The sinks' own writes: the condition on the Service, the annotation on the Ingress and the route,
    // observedGeneration on the DNSEndpoints (both: neither has one yet).
    let api = KubeStatusApi::new(
        client.clone(),
        KindOverrides::default(),
        cluster.clone() as Arc<dyn Cluster>,
    );
    let store = cluster.store();
    for (kind, mechanism) in [
        (ResourceKind::Service, Mechanism::Condition),
        (ResourceKind::Ingress, Mechanism::Annotation),
        (HTTP_ROUTE, Mechanism::Annotation),
    ] {
        let key = ObjectKey::new(kind, NS, "written");
        let uid = store.uid(&key);
        cp.kube
            .block_on(api.write(&key, uid, mechanism, &status(), "2026-01-01T00:00:00Z"))?;
    }
    let crd_status = CrdStatus::new(
        client,
        &KindOverrides::default(),
        CrdSourceConfig::default(),
        PlanConfig::default(),
    );
    cp.kube.block_on(crd_status.report(store, SyncStatus::default()));

    // Then a real change of another object of each kind.
    applied("fence", "2")?;
    let fences: Vec<ObjectKey> = KINDS.iter().map(|k| ObjectKey::new(*k, NS, "fence")).collect();
    let seen = changes_until(&cluster, &fences)?;
    let extra: Vec<&ObjectKey> = seen.iter().filter(|k| !fences.contains(k)).collect();
    assert!(
        extra.is_empty(),
        "extdns's own status writes were recorded as changes, each a sync to run: {extra:?}"
    );

    // The writes did land, and the view keeps what the DNSEndpoint writer reads back: its observedGeneration.
    let endpoints = cluster.store().dns_endpoints();
    let written = endpoints
        .iter()
        .find(|o| o.meta.name == "written")
        .ok_or("the DNSEndpoint is gone from the view")?;
    assert_eq!(
        (written.observed_generation, written.generation),
        (Some(1), Some(1)),
        "the store holds the status written, so it is not written again"
    );
    let service = cp
        .kube
        .block_on(kube::Api::<k8s_openapi::api::core::v1::Service>::namespaced(cp.kube.client(), NS).get("written"))?;
    let conditions = service.status.and_then(|s| s.conditions).unwrap_or_default();
    assert!(
        conditions
            .iter()
            .any(|c| c.type_ == extdns_kube_sinks::object_status::CONDITION_TYPE),
        "the Service's condition was written: {conditions:?}"
    );
    Ok(())
}
