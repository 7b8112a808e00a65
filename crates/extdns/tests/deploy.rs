//! deploy/ stays in step with the code: the RBAC grants read access to exactly the kinds extdns can watch,
//! and the example Deployment's arguments are flags extdns accepts.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use extdns_informer::ResourceKind;
use extdns_informer::view::RouteKind;
use serde_json::Value;

type Error = Box<dyn std::error::Error>;

fn deploy(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy").join(file)
}

fn yaml(file: &str) -> Result<Value, Error> {
    Ok(serde_saphyr::from_str(&std::fs::read_to_string(deploy(file))?)?)
}

/// The API group and resource of a kind. The match is exhaustive, so a new kind fails to compile here until
/// the RBAC is updated with it.
fn api_resource(kind: ResourceKind) -> (&'static str, &'static str) {
    match kind {
        ResourceKind::Service => ("", "services"),
        ResourceKind::EndpointSlice => ("discovery.k8s.io", "endpointslices"),
        ResourceKind::Pod => ("", "pods"),
        ResourceKind::Node => ("", "nodes"),
        ResourceKind::Namespace => ("", "namespaces"),
        ResourceKind::Gateway => ("gateway.networking.k8s.io", "gateways"),
        ResourceKind::ListenerSet => ("gateway.networking.k8s.io", "listenersets"),
        ResourceKind::Route(RouteKind::Http) => ("gateway.networking.k8s.io", "httproutes"),
        ResourceKind::Route(RouteKind::Grpc) => ("gateway.networking.k8s.io", "grpcroutes"),
        ResourceKind::Route(RouteKind::Tls) => ("gateway.networking.k8s.io", "tlsroutes"),
        ResourceKind::Route(RouteKind::Tcp) => ("gateway.networking.k8s.io", "tcproutes"),
        ResourceKind::Route(RouteKind::Udp) => ("gateway.networking.k8s.io", "udproutes"),
    }
}

const ALL_KINDS: [ResourceKind; 12] = [
    ResourceKind::Service,
    ResourceKind::EndpointSlice,
    ResourceKind::Pod,
    ResourceKind::Node,
    ResourceKind::Namespace,
    ResourceKind::Gateway,
    ResourceKind::ListenerSet,
    ResourceKind::Route(RouteKind::Http),
    ResourceKind::Route(RouteKind::Grpc),
    ResourceKind::Route(RouteKind::Tls),
    ResourceKind::Route(RouteKind::Tcp),
    ResourceKind::Route(RouteKind::Udp),
];

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().filter_map(|s| s.as_str().map(String::from)).collect())
        .unwrap_or_default()
}

#[test]
fn cluster_role_grants_read_on_exactly_the_kinds_extdns_watches_and_events_only_to_write() -> Result<(), Error> {
    let role = yaml("clusterrole.yaml")?;
    let mut granted = BTreeSet::new();
    let mut event_rules = 0;
    for rule in role["rules"].as_array().ok_or("no rules")? {
        if strings(&rule["apiGroups"]).contains(&"events.k8s.io".to_string()) {
            // `--events-emit`: new events and a repeat's series count, nothing else.
            assert_eq!(strings(&rule["apiGroups"]), ["events.k8s.io"], "{rule}");
            assert_eq!(strings(&rule["resources"]), ["events"], "{rule}");
            let verbs: BTreeSet<String> = strings(&rule["verbs"]).into_iter().collect();
            assert_eq!(verbs, BTreeSet::from(["create".into(), "patch".into()]), "{rule}");
            event_rules += 1;
            continue;
        }
        let verbs: BTreeSet<String> = strings(&rule["verbs"]).into_iter().collect();
        assert_eq!(
            verbs,
            BTreeSet::from(["get".into(), "list".into(), "watch".into()]),
            "{rule}"
        );
        for group in strings(&rule["apiGroups"]) {
            for resource in strings(&rule["resources"]) {
                granted.insert((group.clone(), resource));
            }
        }
    }
    let needed: BTreeSet<(String, String)> = ALL_KINDS
        .iter()
        .map(|k| api_resource(*k))
        .map(|(g, r)| (g.to_string(), r.to_string()))
        .collect();
    assert_eq!(granted, needed);
    assert_eq!(event_rules, 1);
    Ok(())
}

#[test]
fn deployment_is_two_leader_elected_non_root_replicas_with_health_probes() -> Result<(), Error> {
    let d = yaml("deployment.yaml")?;
    assert_eq!(d["spec"]["replicas"], 2);
    assert_eq!(d["spec"]["strategy"]["type"], "RollingUpdate");
    assert_eq!(d["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"], 0);
    let args = strings(&d["spec"]["template"]["spec"]["containers"][0]["args"]);
    let cli = extdns::flags::try_parse_from(std::iter::once("extdns".to_string()).chain(args))?;
    let settings = extdns::settings::controller(&cli.flags)?;
    let leader = settings.leader.ok_or("two replicas need --leader-elect")?;
    // The Lease the Role grants is the one the replicas use (in the pod's namespace: the Role's).
    let role = yaml("role.yaml")?;
    assert_eq!(leader.name, "extdns");
    assert_eq!(leader.namespace, None, "the pod's own namespace, where the Role is");
    assert_eq!(
        role["metadata"].get("namespace"),
        None,
        "kustomize puts the Role in extdns's namespace"
    );
    let pod = &d["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    let c = &pod["containers"][0];
    assert_eq!(c["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(c["securityContext"]["allowPrivilegeEscalation"], false);
    assert_eq!(c["ports"][0]["containerPort"], 7979);
    for probe in ["livenessProbe", "readinessProbe"] {
        assert_eq!(c[probe]["httpGet"]["path"], "/healthz", "{probe}");
        assert_eq!(c[probe]["httpGet"]["port"], c["ports"][0]["name"], "{probe}");
    }
    Ok(())
}

#[test]
fn deployment_args_are_flags_extdns_accepts() -> Result<(), Error> {
    let d = yaml("deployment.yaml")?;
    let args = strings(&d["spec"]["template"]["spec"]["containers"][0]["args"]);
    assert!(!args.is_empty());
    let cli = extdns::flags::try_parse_from(std::iter::once("extdns".to_string()).chain(args))?;
    extdns::settings::controller(&cli.flags)?;
    Ok(())
}

#[test]
fn kustomization_lists_every_manifest() -> Result<(), Error> {
    let k = yaml("kustomization.yaml")?;
    let listed: BTreeSet<String> = strings(&k["resources"]).into_iter().collect();
    let present: BTreeSet<String> = std::fs::read_dir(deploy(""))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".yaml") && n != "kustomization.yaml")
        .collect();
    assert_eq!(listed, present);
    Ok(())
}

#[test]
fn the_lease_role_grants_get_watch_create_update_on_leases_only() -> Result<(), Error> {
    let role = yaml("role.yaml")?;
    assert_eq!(role["kind"], "Role", "namespaced, not cluster-wide");
    let rules = role["rules"].as_array().ok_or("no rules")?;
    assert_eq!(rules.len(), 1);
    assert_eq!(strings(&rules[0]["apiGroups"]), ["coordination.k8s.io"]);
    assert_eq!(strings(&rules[0]["resources"]), ["leases"]);
    let verbs: BTreeSet<String> = strings(&rules[0]["verbs"]).into_iter().collect();
    assert_eq!(
        verbs,
        BTreeSet::from(["get".into(), "watch".into(), "create".into(), "update".into()])
    );
    let binding = yaml("rolebinding.yaml")?;
    assert_eq!(binding["roleRef"]["kind"], "Role");
    assert_eq!(binding["roleRef"]["name"], role["metadata"]["name"]);
    assert_eq!(binding["subjects"][0]["name"], "extdns");
    assert_eq!(binding["subjects"][0]["namespace"], "extdns");
    Ok(())
}

#[test]
fn the_disruption_budget_keeps_one_replica_of_the_deployment() -> Result<(), Error> {
    let pdb = yaml("poddisruptionbudget.yaml")?;
    let d = yaml("deployment.yaml")?;
    assert_eq!(pdb["apiVersion"], "policy/v1");
    assert_eq!(pdb["spec"]["minAvailable"], 1);
    assert_eq!(
        pdb["spec"]["selector"]["matchLabels"],
        d["spec"]["selector"]["matchLabels"]
    );
    Ok(())
}
