//! The scenarios, run one after another on one shared control plane, each in a namespace of its own with
//! a BIND server of its own.

use std::path::PathBuf;

use anyhow::{Context, Result};
use k8s_openapi::api::core::v1::Node;
use kube::api::{DeleteParams, ListParams};

use crate::control_plane::ControlPlane;

pub mod churn;
pub mod crash;
pub mod crd;
pub mod crd_registry;
pub mod degraded;
pub mod differential;
pub mod dns_providers;
pub mod dns_server;
pub mod drift;
pub mod dynamodb;
pub mod encryption;
pub mod events;
pub mod gateway_versions;
pub mod install;
pub mod istio;
pub mod latency;
pub mod leader;
pub mod lifecycle;
pub mod outage;
pub mod plan;
pub mod providers;
pub mod record_types;
pub mod sources;
pub mod streaming;
pub mod templates;
pub mod traefik;
pub mod undecodable;
pub mod wait;
// The remaining v0.23 sources.
pub mod f5;
// The node and pod sources.
pub mod node_pod;
// --- contour-httpproxy and openshift-route sources ---
pub mod contour_openshift;
// --- hand-over between owners (issue 47) ---
pub mod handover;
// --- ambassador-host source ---
pub mod ambassador;
// --- status on the objects (--status-updates) ---
pub mod status;
// --- shared names across two clusters (issue 47) ---
pub mod owners;
pub mod shared_names;
// --- status on every kind users write (issue 48) ---
pub mod status_kinds;

/// What every scenario gets.
pub struct Ctx {
    pub cp: ControlPlane,
    /// Controller logs, kept after the run for failure analysis.
    pub logs: PathBuf,
    namespaces: u32,
}

impl Ctx {
    pub fn new(cp: ControlPlane, logs: PathBuf) -> Result<Ctx> {
        std::fs::create_dir_all(&logs)?;
        Ok(Ctx {
            cp,
            logs,
            namespaces: 0,
        })
    }

    /// A fresh namespace (namespaces never finish deleting without a controller-manager).
    pub fn namespace(&mut self, prefix: &str) -> Result<String> {
        self.namespaces += 1;
        let name = format!("{prefix}-{}", self.namespaces);
        self.cp
            .kube
            .namespace(&name, serde_json::json!({ "extdns-e2e": prefix }))?;
        Ok(name)
    }

    /// Deletes the cluster-scoped objects a scenario made, whether it passed or not: Nodes outlive
    /// namespaces, and a Node's address would join every later NodePort Service's records.
    pub fn delete_cluster_scoped(&self) -> Result<()> {
        let nodes: kube::Api<Node> = kube::Api::all(self.cp.kube.client());
        let made_here = ListParams::default().labels(&format!("{}=true", crate::objects::NODE_LABEL));
        self.cp
            .kube
            .block_on(nodes.delete_collection(&DeleteParams::default(), &made_here))
            .context("deleting the scenario's Nodes")?;
        Ok(())
    }

    /// A log file for a controller of this scenario.
    pub fn log(&self, name: &str) -> PathBuf {
        self.logs.join(format!("{name}.log"))
    }
}

pub struct Scenario {
    pub name: &'static str,
    pub about: &'static str,
    /// Run when no names are given. A scenario outside the default set says why in `about`.
    pub default: bool,
    pub run: fn(&mut Ctx) -> Result<()>,
}

pub const ALL: &[Scenario] = &[
    Scenario {
        name: "crd",
        about: "--source=crd: external-dns's DNSEndpoint CRD, entries published by type, a bad entry skipped, observedGeneration written, an entry edited invalid keeps its record until fixed",
        default: true,
        run: crd::run,
    },
    Scenario {
        name: "crd-group",
        about: "--source=crd with --crd-source-apiversion=externaldns.nginx.org/v1 (external-dns #6414) from our chart's extraArgs, with its RBAC: records, status with conditions (Filtered outside the domain filter), Events in that group",
        default: true,
        run: crd::custom_group,
    },
    Scenario {
        name: "crd-registry",
        about: "--registry=crd: the registry crate on the API server (DNSRecords as external-dns writes them, refusals, another owner's object), then external-dns v0.23.0 and extdns each taking over the other's DNSRecords and zone with no change",
        default: true,
        run: crd_registry::run,
    },
    Scenario {
        name: "upstream-chart-crd",
        about: "external-dns v0.23.0's chart with registry: crd and the legacy annotation prefix, the extdns image: a Service publishes with its DNSRecord, external-dns with the same arguments changes nothing, a delete removes both",
        default: true,
        run: crd_registry::upstream_chart,
    },
    Scenario {
        name: "sources",
        about: "every source kind published from objects created through the API server",
        default: true,
        run: sources::run,
    },
    Scenario {
        name: "lifecycle",
        about: "--events: create, update (annotation, status, EndpointSlice churn, Node address), delete",
        default: true,
        run: lifecycle::run,
    },
    Scenario {
        name: "encryption",
        about: "--txt-encrypt-enabled --events on BIND and the strict Route53 fake: three address changes and a delete leave one ownership value per name, then none",
        default: true,
        run: encryption::run,
    },
    Scenario {
        name: "dynamodb",
        about: "--registry=dynamodb with --provider=aws (moto's Route53, the strict DynamoDB fake): external-dns v0.23.0 and extdns write the same items, migrate the same TXT ownership records into the same items, and take over each other's zone and table without a write",
        default: true,
        run: dynamodb::run,
    },
    Scenario {
        name: "drift",
        about: "--events: a change writes only its Service's record, against the cache; the next full sync repairs a hand edit in BIND",
        default: true,
        run: drift::run,
    },
    Scenario {
        name: "crash",
        about: "kill -9 mid-sync and restart: nothing lost, nothing duplicated, a further start changes nothing",
        default: true,
        run: crash::run,
    },
    Scenario {
        name: "outage",
        about: "kube-apiserver stopped for 10 s and restarted (etcd compacted meanwhile): no deletions, 410 relist, convergence",
        default: true,
        run: outage::run,
    },
    Scenario {
        name: "undecodable",
        about: "an HTTPRoute the typed model cannot decode is skipped with a warning naming it; the others publish",
        default: true,
        run: undecodable::run,
    },
    Scenario {
        name: "missing-crd",
        about: "the UDPRoute CRD deleted: the other sources publish, one warning; installed again, its routes publish without a restart",
        default: true,
        run: degraded::missing_crd,
    },
    Scenario {
        name: "namespaced-role",
        about: "external-dns's chart's namespaced Role (no Nodes): LoadBalancer Services publish, a NodePort Service's record is held, one warning",
        default: true,
        run: degraded::namespaced_role,
    },
    Scenario {
        name: "gateway-versions",
        about: "Gateway API v1.6.1's own CRDs: standard channel (routes at v1), experimental (TCP/UDP/TLS routes at v1alpha2/v1alpha3), and v1 unserved: one zone",
        default: true,
        run: gateway_versions::run,
    },
    Scenario {
        name: "streaming-lists",
        about: "initial lists stream (one watch with sendInitialEvents per kind, no LIST); with WatchList off the server refuses them and extdns lists in pages",
        default: true,
        run: streaming::run,
    },
    Scenario {
        name: "differential",
        about: "external-dns v0.23.0 and extdns on the same objects publish identical zones and take over each other's",
        default: true,
        run: differential::run,
    },
    Scenario {
        name: "takeover-previous",
        about: "external-dns v0.22.0 publishes every kind, then extdns takes its zone over and changes nothing (the upgrade its users take)",
        default: true,
        run: differential::takeover_previous,
    },
    Scenario {
        name: "plan",
        about: "extdns plan with external-dns v0.23.0's flags on its zone: no changes (exit 0); a create, an update and a delete listed exactly with their objects (exit 2), the zone untouched; a kubectl dump previewed",
        default: true,
        run: plan::run,
    },
    Scenario {
        name: "differential-crd",
        about: "external-dns v0.23.0 and extdns on DNSEndpoints of every record type and field publish identical zones and take over each other's",
        default: true,
        run: differential::crd,
    },
    Scenario {
        name: "record-types",
        about: "TLSA, HTTPS and SVCB from DNSEndpoints into BIND: TLSA published by external-dns v0.23.0 and extdns alike (identical zones, take-over clean both ways), HTTPS and SVCB by extdns, checked with dig, updated and deleted",
        default: true,
        run: record_types::run,
    },
    Scenario {
        name: "differential-crd-group",
        about: "extdns on DNSEndpoints in externaldns.nginx.org/v1 (--crd-source-apiversion, #6414) and external-dns v0.23.0 on the same entries in its own group publish identical zones and take over each other's",
        default: true,
        run: differential::crd_group,
    },
    Scenario {
        name: "dns-server",
        about: "--provider=dns-server: a Service, an Ingress, an HTTPRoute and a DNSEndpoint answer on the served port (UDP and TCP, AA, NXDOMAIN, REFUSED); 20 single-write changes answer within 10 ms (median; p99 printed); two replicas with --leader-elect both answer, and after kill -9 of either the other answers, changes included (about 3 s)",
        default: true,
        run: dns_server::run,
    },
    Scenario {
        name: "split-horizon",
        about: "--dns-provider-crds: two ClusterDNSProviders (RFC2136 to two BIND servers, TSIG secret from a Secret): every Ingress and HTTPRoute publishes its load balancer address to `internal` (ignore-target-annotation), the ones marked cluster-provider: internal,public their target (an HTTPRoute's: its Gateway's) to `public` too, both zones checked whole by AXFR; changes reach both; deleting the provider objects leaves their records",
        default: true,
        run: providers::split_horizon,
    },
    Scenario {
        name: "tenancy",
        about: "--dns-provider-crds: DNSProviders in two namespaces; an object naming the other tenant's provider goes nowhere; a DNSProvider cannot name another namespace's Secret (schema), and naming a Secret only the other namespace has gets CredentialsInvalid with no request for it in the API server's audit log",
        default: true,
        run: providers::tenancy,
    },
    Scenario {
        name: "provider-isolation",
        about: "--dns-provider-crds: one provider's BIND frozen for EXTDNS_E2E_OUTAGE_SECS (20 s): every change made meanwhile lands in the other's zone before the frozen one comes back (the times printed, never compared), the failing one's status says SyncFailed, and after it answers again the changes made meanwhile land and nothing was deleted",
        default: true,
        run: providers::isolation,
    },
    Scenario {
        name: "dns-providers",
        about: "--dns-provider-crds: one ClusterDNSProvider's life beside a refused one (ConfigInvalid): added (Synced, records, zones, finalizer), changed (rebuilt at generation 2), its Secret changed (a wrong TSIG secret fails, the right one syncs what changed meanwhile), deleted (Deleting, finalizer removed, records kept); a dns-server one answers on the listener its config names",
        default: true,
        run: dns_providers::run,
    },
    Scenario {
        name: "providers-churn",
        about: "--dns-provider-crds under churn (issue 50): Services ten a second over two RFC 2136 providers and a Route53 one its fake throttles (one request a second): the healthy providers' names all answer while the throttled one is still behind, which then catches up",
        default: true,
        run: churn::run,
    },
    Scenario {
        name: "lease",
        about: "the leader election crate on the API server: acquire, renew, an expired lease raced by two, release",
        default: true,
        run: leader::lease,
    },
    Scenario {
        name: "leader",
        about: "two replicas with --leader-elect (6 s lease): only the leader writes; kill -9 it and the other takes over within 15 s",
        default: true,
        run: leader::run,
    },
    Scenario {
        name: "leader-defaults",
        about: "`leader` at kube-scheduler's default timings, five kills across the renew cycle, each figure printed \
                (not default: about two minutes)",
        default: false,
        run: leader::run_defaults,
    },
    Scenario {
        name: "templates",
        about: "a multi-line --fqdn-template reading fields no source reads, and one reading a legacy-prefix key through JSON keys, publish what external-dns v0.23.0 publishes",
        default: true,
        run: templates::run,
    },
    Scenario {
        name: "events",
        about: "--events-emit: RecordReady on a published Service, a Warning naming the bad annotation on another",
        default: true,
        run: events::run,
    },
    Scenario {
        name: "chart",
        about: "charts/extdns rendered by helm (two replicas, Events) and applied: its ServiceAccount, RBAC and args publish into BIND",
        default: true,
        run: install::chart,
    },
    Scenario {
        name: "upstream-chart",
        about: "external-dns v0.23.0's chart with the extdns image: its ServiceAccount, RBAC and args run extdns against BIND",
        default: true,
        run: install::upstream_chart,
    },
    Scenario {
        name: "kustomize",
        about: "every deploy/ overlay with both components built by kubectl kustomize and applied; the rfc2136 one publishes into BIND",
        default: true,
        run: install::kustomize,
    },
    Scenario {
        name: "f5",
        about: "F5 CIS v2.20.2's CRDs: VirtualServers and TransportServers published by external-dns v0.23.0 and by extdns with the same flags: identical zones, take-over both ways changes nothing",
        default: true,
        run: f5::run,
    },
    Scenario {
        name: "node-pod",
        about: "--source=node --source=pod: Nodes of every address shape and hostNetwork Pods published by external-dns v0.23.0 and extdns from the same flags: identical zones, take-over both ways changes nothing",
        default: true,
        run: node_pod::run,
    },
    // --- contour-httpproxy and openshift-route sources ---
    Scenario {
        name: "differential-contour",
        about: "Contour's published CRDs installed, HTTPProxies with Contour's status: external-dns v0.23.0 and extdns (--source=contour-httpproxy) publish identical zones, take-over both ways changes nothing",
        default: true,
        run: contour_openshift::contour,
    },
    Scenario {
        name: "differential-openshift",
        about: "OpenShift's published Route CRD installed, Routes with routers' status: external-dns v0.23.0 and extdns (--source=openshift-route, with and without --openshift-router-name) publish identical zones, take-over both ways changes nothing",
        default: true,
        run: contour_openshift::openshift,
    },
    Scenario {
        name: "differential-istio",
        about: "external-dns v0.23.0 and extdns on Istio Gateways and VirtualServices (Istio's CRDs, every served version) publish identical zones and take over each other's",
        default: true,
        run: istio::differential,
    },
    Scenario {
        name: "traefik",
        about: "Traefik's CRDs in both groups: external-dns v0.23.0 and extdns (--source=traefik-proxy --traefik-enable-legacy) on IngressRoutes, IngressRouteTCPs and IngressRouteUDPs with the target annotation publish identical zones and take over each other's",
        default: true,
        run: traefik::differential,
    },
    Scenario {
        name: "traefik-service",
        about: "--traefik-service: IngressRoutes without a target annotation publish the Traefik Service's load balancer address and follow it when it changes (event-driven)",
        default: true,
        run: traefik::service_target,
    },
    // --- hand-over between owners (issue 47) ---
    Scenario {
        name: "handover",
        about: "two extdns instances (owners blue and green, a namespace each) on one BIND zone: blue releases its records (--txt-release-to-owner), extdns plan previews green's adoption, green adopts (--txt-adopt-from-owner) only the record identical to its own; after each phase every record answers once with one ownership record, and neither then touches the other's",
        default: true,
        run: handover::run,
    },
    // --- ambassador-host source ---
    Scenario {
        name: "differential-ambassador",
        about: "Emissary-ingress's CRDs (Hosts in v3alpha1 and v2): external-dns v0.23.0 and extdns (--source=ambassador-host) on Hosts naming Emissary's Services publish identical zones, take-over both ways changes nothing",
        default: true,
        run: ambassador::differential,
    },
    // --- status on the objects (--status-updates) ---
    Scenario {
        name: "status",
        about: "--status-updates: a Service's condition goes Published, Conflict (naming the holder), Filtered (naming the flag), Held and back; an Ingress's and an HTTPRoute's annotation; no field of another manager touched (managedFields)",
        default: true,
        run: status::run,
    },
    // --- shared names across two clusters (issue 47) ---
    Scenario {
        name: "shared-names",
        about: "two kube-apiservers, an extdns each (owners cluster-one and cluster-two), one BIND zone, 2 s interval, 10 s --shared-owner-ttl: a shared name answers with both clusters' targets; a Service deleted removes only its target; kill -9 of one extdns removes its target after the TTL from its last heartbeat and not before (time printed), a name it alone owns keeps its target, the restarted extdns takes its target back; external-dns v0.23.0 as a third owner keeps its name and leaves the shared ones, and so does v0.22.0; one extdns's writes refused past the TTL (TSIG grant removed, BIND reloaded): pruned, then back without the other losing a target; a second extdns under one owner id writes nothing shared, warns naming both instances, counts extdns_shared_conflicts_total; no plain name touched",
        default: true,
        run: shared_names::run,
    },
    Scenario {
        name: "shared-names-route53",
        about: "shared-names' core on the strict Route53 fake (moto's loses concurrent writes): two kube-apiservers, an extdns each: the union, a Service deleted removes only its target, kill -9 removes the dead cluster's target after the TTL and not before (time printed), the restart takes it back",
        default: true,
        run: shared_names::route53,
    },
    // --- status on every kind users write, through every state (issue 48) ---
    Scenario {
        name: "status-kinds",
        about: "--status-updates on a Service, an Ingress, an HTTPRoute and a DNSEndpoint (externaldns.nginx.org, PR #6609 conditions), each published, filtered, conflicting with another object and refused by BIND's update-policy, each held after its object fails (the Ingress and the route by a failing --fqdn-template), each back to published; kubectl get and /summary show the refusals",
        default: true,
        run: status_kinds::run,
    },
];
