//! deploy/ stays in step with the code: the base's RBAC grants read access to exactly the kinds extdns can watch;
//! every overlay (built with a real `kubectl kustomize`, `EXTDNS_TEST_KUBECTL`) gives arguments extdns accepts and
//! reads credentials only from its own Secret, whose example names every key it reads; the leader-election
//! component's Lease is the one the replicas use.

mod support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use support::kinds::{ALL_KINDS, api_resource, strings};

type Error = Box<dyn std::error::Error>;

const OVERLAYS: [&str; 8] = [
    "rfc2136",
    "pdns",
    "aws",
    "cloudflare",
    "coredns",
    "pihole",
    "webhook",
    "dns-server",
];

fn deploy(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy").join(file)
}

fn yaml(file: &str) -> Result<Value, Error> {
    Ok(serde_saphyr::from_str(&std::fs::read_to_string(deploy(file))?)?)
}

/// `kubectl kustomize DIR`, one JSON value per document.
fn kustomize(dir: &Path) -> Result<Vec<Value>, Error> {
    let kubectl = extdns_test_support::env_program("EXTDNS_TEST_KUBECTL")?;
    let out = Command::new(kubectl).arg("kustomize").arg(dir).output()?;
    if !out.status.success() {
        return Err(format!(
            "kubectl kustomize {}: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    let text = String::from_utf8(out.stdout)?;
    let mut docs = Vec::new();
    for doc in text.split("\n---\n") {
        let v: Value = serde_saphyr::from_str(doc)?;
        if !v.is_null() {
            docs.push(v);
        }
    }
    Ok(docs)
}

/// The elements of `v` when it is an array; none when it is missing (a Pod without `env`, say).
fn items(v: &Value) -> impl Iterator<Item = &Value> {
    v.as_array().into_iter().flatten()
}

fn of_kind<'a>(docs: &'a [Value], kind: &str) -> Vec<&'a Value> {
    docs.iter().filter(|d| d["kind"] == kind).collect()
}

/// `resources` (a directory of deploy/) with the component `component` added, in namespace extdns, as a
/// kustomization of one's own would write it.
fn with_component(resources: &str, component: &str) -> Result<Vec<Value>, Error> {
    let dir = tempfile::tempdir_in(deploy(""))?;
    std::fs::write(
        dir.path().join("kustomization.yaml"),
        format!(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: extdns\n\
             resources: [../{resources}]\ncomponents: [../{component}]\n"
        ),
    )?;
    kustomize(dir.path())
}

/// A workload-identity overlay's documents: no Secret anywhere (`why`: what gives the credentials instead),
/// its one ServiceAccount, and the Deployment's Pod template, which that ServiceAccount runs.
fn without_secret(overlay: &str, why: &str) -> Result<(Vec<Value>, Value, Value), Error> {
    let docs = kustomize(&deploy(overlay))?;
    assert!(docs.iter().all(|d| d["kind"] != "Secret"), "no Secret: {why}");
    let accounts = of_kind(&docs, "ServiceAccount");
    assert_eq!(accounts.len(), 1, "{overlay}: one ServiceAccount");
    let account = accounts[0].clone();
    let deployment = of_kind(&docs, "Deployment").into_iter().next().ok_or("no Deployment")?;
    let pod = deployment["spec"]["template"].clone();
    assert_eq!(
        pod["spec"]["serviceAccountName"], "extdns",
        "{overlay}: the annotated ServiceAccount runs the Pod"
    );
    Ok((docs, account, pod))
}

fn extdns_container(docs: &[Value]) -> Result<&Value, Error> {
    let d = of_kind(docs, "Deployment").into_iter().next().ok_or("no Deployment")?;
    d["spec"]["template"]["spec"]["containers"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == "extdns"))
        .ok_or_else(|| "no extdns container".into())
}

#[test]
fn cluster_role_grants_read_on_exactly_the_kinds_extdns_watches_and_events_only_to_write() -> Result<(), Error> {
    let role = yaml("base/clusterrole.yaml")?;
    let mut granted = BTreeSet::new();
    let mut event_rules = 0;
    let mut status_rules = 0;
    let mut status_update_rules = BTreeSet::new();
    for rule in role["rules"].as_array().ok_or("no rules")? {
        if strings(&rule["verbs"]) == ["patch"] {
            // `--status-updates`: a patch (server-side apply) of Services' status, Ingresses and routes.
            for group in strings(&rule["apiGroups"]) {
                for resource in strings(&rule["resources"]) {
                    status_update_rules.insert((group.clone(), resource));
                }
            }
            continue;
        }
        if strings(&rule["apiGroups"]).contains(&"events.k8s.io".to_string()) {
            // `--events-emit`: new events and a repeat's series count, nothing else.
            assert_eq!(strings(&rule["apiGroups"]), ["events.k8s.io"], "{rule}");
            assert_eq!(strings(&rule["resources"]), ["events"], "{rule}");
            let verbs: BTreeSet<String> = strings(&rule["verbs"]).into_iter().collect();
            assert_eq!(verbs, BTreeSet::from(["create".into(), "patch".into()]), "{rule}");
            event_rules += 1;
            continue;
        }
        if strings(&rule["resources"]).iter().any(|r| r.ends_with("/status")) {
            // `--source=crd`: DNSEndpoints' status, updated and nothing else.
            assert_eq!(strings(&rule["apiGroups"]), ["externaldns.k8s.io"], "{rule}");
            assert_eq!(strings(&rule["resources"]), ["dnsendpoints/status"], "{rule}");
            assert_eq!(strings(&rule["verbs"]), ["update"], "{rule}");
            status_rules += 1;
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
        .map(|(g, r, _)| (g.to_string(), r.to_string()))
        .collect();
    assert_eq!(granted, needed);
    assert_eq!((event_rules, status_rules), (1, 1));
    let patched: BTreeSet<(String, String)> = [
        ("", "services/status"),
        ("networking.k8s.io", "ingresses"),
        ("gateway.networking.k8s.io", "httproutes"),
        ("gateway.networking.k8s.io", "grpcroutes"),
        ("gateway.networking.k8s.io", "tlsroutes"),
        ("gateway.networking.k8s.io", "tcproutes"),
        ("gateway.networking.k8s.io", "udproutes"),
    ]
    .into_iter()
    .map(|(g, r)| (g.to_string(), r.to_string()))
    .collect();
    assert_eq!(status_update_rules, patched);
    Ok(())
}

#[test]
fn base_is_one_non_root_replica_with_health_probes_and_no_provider_credentials() -> Result<(), Error> {
    let d = yaml("base/deployment.yaml")?;
    assert_eq!(d["spec"]["replicas"], 1, "one replica until external-dns is gone");
    assert_eq!(d["spec"]["strategy"]["type"], "Recreate");
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
    let env: Vec<&str> = items(&c["env"]).filter_map(|e| e["name"].as_str()).collect();
    assert_eq!(
        env,
        ["POD_NAME", "POD_NAMESPACE"],
        "no provider credentials in the base"
    );
    let args = strings(&c["args"]);
    assert!(args.iter().all(|a| !a.starts_with("--provider")), "{args:?}");
    assert!(
        args.contains(&"--txt-owner-id=default".to_string()),
        "the chart's default owner"
    );
    Ok(())
}

#[test]
fn base_kustomization_lists_every_manifest_and_names_a_versioned_image() -> Result<(), Error> {
    let k = yaml("base/kustomization.yaml")?;
    let listed: BTreeSet<String> = strings(&k["resources"]).into_iter().collect();
    let present: BTreeSet<String> = std::fs::read_dir(deploy("base"))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".yaml") && n != "kustomization.yaml")
        .collect();
    assert_eq!(listed, present);
    let image = &k["images"][0];
    assert_eq!(image["name"], "extdns");
    assert!(
        image["newName"].as_str().is_some_and(|n| n.contains('/')),
        "a registry path: {image}"
    );
    assert_eq!(
        image["newTag"].as_str(),
        Some(format!("v{}", env!("CARGO_PKG_VERSION")).as_str()),
        "the version's tag"
    );
    Ok(())
}

/// The image extdns is published as, named one way everywhere: the chart's default, deploy/base, the
/// Dockerfile's labels and the docs all say this repository and `v` + the workspace's version.
#[test]
fn the_image_has_one_name_and_the_version_tag_everywhere() -> Result<(), Error> {
    const REPOSITORY: &str = "ghcr.io/extdns/extdns";
    let version = env!("CARGO_PKG_VERSION");
    let tag = format!("v{version}");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let read = |file: &str| std::fs::read_to_string(root.join(file));

    let k = yaml("base/kustomization.yaml")?;
    assert_eq!(
        (k["images"][0]["newName"].as_str(), k["images"][0]["newTag"].as_str()),
        (Some(REPOSITORY), Some(tag.as_str()))
    );
    let values: Value = serde_saphyr::from_str(&read("charts/extdns/values.yaml")?)?;
    assert_eq!(values["image"]["repository"], REPOSITORY);
    assert_eq!(values["image"]["tag"], Value::Null, "the tag follows appVersion");
    let chart: Value = serde_saphyr::from_str(&read("charts/extdns/Chart.yaml")?)?;
    assert_eq!(chart["appVersion"], version, "the chart's image tag is v + appVersion");

    let dockerfile = read("Dockerfile")?;
    assert!(
        dockerfile.contains(&format!("\nARG EXTDNS_VERSION={version}\n")),
        "the Dockerfile's version"
    );
    for label in [
        "org.opencontainers.image.version=\"${EXTDNS_VERSION}\"",
        &format!("org.opencontainers.image.ref.name=\"{REPOSITORY}:v${{EXTDNS_VERSION}}\""),
    ] {
        assert!(dockerfile.contains(label), "the Dockerfile lacks the label {label}");
    }

    // Every image reference in the docs is the one name, with the version's tag.
    let full = format!("{REPOSITORY}:{tag}");
    for doc in [
        "README.md",
        "docs/migration.md",
        "docs/release.md",
        "charts/extdns/README.md",
    ] {
        let Ok(text) = read(doc) else { continue };
        for (at, _) in text.match_indices("extdns/extdns") {
            let rest = &text[at..];
            let end = rest
                .find(|c: char| c.is_whitespace() || "`\"'),".contains(c))
                .unwrap_or(rest.len());
            let reference = &rest[..end];
            assert!(
                ["extdns/extdns", "extdns/extdns:dev", "extdns/extdns:v<version>"].contains(&reference)
                    || full.ends_with(reference),
                "{doc} names the image {reference}, not {full}"
            );
        }
        for (at, _) in text.match_indices("tag: ") {
            let value = text[at + 5..].split_whitespace().next().unwrap_or_default();
            if value.starts_with('v') && value.contains('.') {
                assert_eq!(value, tag, "{doc}: an image tag other than the version's");
            }
        }
    }
    Ok(())
}

/// The values of a Secret example (`stringData`).
fn secret_example(overlay: &str) -> Result<(String, serde_json::Map<String, Value>), Error> {
    let s = yaml(&format!("overlays/{overlay}/secret.example.yaml"))?;
    assert_eq!(s["kind"], "Secret");
    let name = s["metadata"]["name"].as_str().ok_or("unnamed Secret")?.to_string();
    let data = s["stringData"].as_object().ok_or("no stringData")?.clone();
    Ok((name, data))
}

#[test]
fn every_overlay_builds_with_arguments_extdns_accepts_and_reads_only_its_own_secret() -> Result<(), Error> {
    extdns_test_support::require!(Kubectl);
    for overlay in OVERLAYS {
        let docs = kustomize(&deploy(&format!("overlays/{overlay}")))?;
        assert!(
            docs.iter().all(|d| d["kind"] != "Secret"),
            "{overlay}: the overlay creates no Secret (the example is applied by hand)"
        );
        let (secret, keys) = secret_example(overlay)?;
        let deployment = of_kind(&docs, "Deployment")[0];
        let containers = deployment["spec"]["template"]["spec"]["containers"]
            .as_array()
            .ok_or("no containers")?;
        let mut args = strings(&extdns_container(&docs)?["args"]);
        assert!(args.contains(&format!("--provider={overlay}")), "{overlay}: {args:?}");
        let mut refs = 0;
        let mut from_flags = true;
        for c in containers {
            for e in items(&c["env"]) {
                let Some(r) = e["valueFrom"].get("secretKeyRef") else {
                    continue;
                };
                refs += 1;
                assert_eq!(r["name"], secret.as_str(), "{overlay}: {e} reads another Secret");
                let key = r["key"].as_str().ok_or("no key")?;
                let value = keys
                    .get(key)
                    .ok_or_else(|| format!("{overlay}: the example lacks {key}"))?;
                // A flag from the environment: hand it to the parser as the flag it stands for.
                let flag = e["name"].as_str().and_then(|n| n.strip_prefix("EXTERNAL_DNS_"));
                from_flags &= flag.is_some();
                if let Some(flag) = flag {
                    args.push(format!(
                        "--{}={}",
                        flag.to_ascii_lowercase().replace('_', "-"),
                        value.as_str().unwrap_or_default()
                    ));
                }
            }
        }
        assert!(refs >= 1, "{overlay}: no credentials from the Secret");
        assert_eq!(refs, keys.len(), "{overlay}: the example has keys nothing reads");
        assert!(
            args.iter().all(|a| a != "--rfc2136-tsig-axfr"),
            "{overlay}: the deprecated --rfc2136-tsig-axfr"
        );
        let cli = extdns::flags::try_parse_from(std::iter::once("extdns".to_string()).chain(args))?;
        // Providers whose credentials are not flags (AWS_*, CF_API_TOKEN, ETCD_*) read the process environment
        // when their settings are made; their flags are checked by the parse above.
        if from_flags {
            extdns::settings::controller(&cli.flags).map_err(|e| format!("{overlay}: {e}"))?;
        }
    }
    Ok(())
}

#[test]
fn the_dns_server_overlay_answers_on_53_through_its_service_once_ready() -> Result<(), Error> {
    extdns_test_support::require!(Kubectl);
    let docs = kustomize(&deploy("overlays/dns-server"))?;
    let c = extdns_container(&docs)?;
    assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/healthz");
    let ports: Vec<(String, String, i64)> = items(&c["ports"])
        .map(|p| {
            (
                p["name"].as_str().unwrap_or_default().to_string(),
                p["protocol"].as_str().unwrap_or_default().to_string(),
                p["containerPort"].as_i64().unwrap_or_default(),
            )
        })
        .collect();
    assert!(ports.contains(&("dns-udp".into(), "UDP".into(), 1053)), "{ports:?}");
    assert!(ports.contains(&("dns-tcp".into(), "TCP".into(), 1053)), "{ports:?}");
    let args = strings(&c["args"]);
    let cli = extdns::flags::try_parse_from(std::iter::once("extdns".to_string()).chain(args.clone()))?;
    let settings = extdns::settings::controller(&cli.flags)?;
    // The overlay's flags win over the base's: the zones are extdns's alone.
    assert_eq!(settings.registry.name(), "noop", "{args:?}");
    assert_eq!(settings.controller.plan.policy.as_str(), "sync", "{args:?}");
    let listen = cli.flags.dns_server.dns_server_listen;
    assert_eq!(
        listen,
        ["0.0.0.0:1053"],
        "the container ports are the default listen address"
    );
    let services: Vec<&Value> = of_kind(&docs, "Service");
    let service = services
        .iter()
        .find(|s| s["metadata"]["name"] == "extdns-dns")
        .ok_or("no extdns-dns Service")?;
    assert_eq!(service["metadata"]["namespace"], "extdns");
    assert_eq!(service["spec"]["selector"]["app.kubernetes.io/name"], "extdns");
    let mut ports: Vec<String> = items(&service["spec"]["ports"])
        .map(|p| {
            format!(
                "{} {} -> {}",
                p["protocol"].as_str().unwrap_or_default(),
                p["port"],
                p["targetPort"]
            )
        })
        .collect();
    ports.sort();
    assert_eq!(ports, ["TCP 53 -> \"dns-tcp\"", "UDP 53 -> \"dns-udp\""]);
    Ok(())
}

#[test]
fn the_google_overlay_runs_with_workload_identity_and_no_secret() -> Result<(), Error> {
    extdns_test_support::require!(Kubectl);
    let (docs, sa, pod) = without_secret("overlays/google", "GKE's metadata server gives the tokens")?;
    assert_eq!(
        sa["metadata"]["annotations"]["iam.gke.io/gcp-service-account"],
        "external-dns@my-project.iam.gserviceaccount.com"
    );
    assert_eq!(
        pod["spec"]["nodeSelector"]["iam.gke.io/gke-metadata-server-enabled"],
        "true"
    );
    let container = extdns_container(&docs)?;
    assert!(
        items(&container["env"]).all(|e| e["valueFrom"].get("secretKeyRef").is_none()),
        "no credentials from a Secret: {container}"
    );
    let args = strings(&container["args"]);
    assert!(args.contains(&"--provider=google".to_string()), "{args:?}");
    let cli = extdns::flags::try_parse_from(std::iter::once("extdns".to_string()).chain(args))?;
    extdns::settings::controller(&cli.flags).map_err(|e| format!("google: {e}"))?;
    Ok(())
}

#[test]
fn the_azure_overlay_runs_with_workload_identity_and_no_secret() -> Result<(), Error> {
    extdns_test_support::require!(Kubectl);
    let (docs, sa, pod) = without_secret("overlays/azure", "the federated token is the credential")?;
    assert!(
        sa["metadata"]["annotations"]["azure.workload.identity/client-id"].is_string(),
        "{sa}"
    );
    assert_eq!(pod["metadata"]["labels"]["azure.workload.identity/use"], "true");
    let container = extdns_container(&docs)?;
    let mount = &container["volumeMounts"][0];
    assert_eq!(mount["mountPath"], "/etc/kubernetes");
    let config_map = of_kind(&docs, "ConfigMap")
        .into_iter()
        .find(|c| pod["spec"]["volumes"][0]["configMap"]["name"] == c["metadata"]["name"])
        .ok_or("the mounted ConfigMap is in the overlay")?;
    let json = config_map["data"]["azure.json"]
        .as_str()
        .ok_or("azure.json in the ConfigMap")?;
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("azure.json");
    std::fs::write(&file, json)?;
    let mut args = strings(&container["args"]);
    assert!(args.contains(&"--provider=azure".to_string()), "{args:?}");
    assert!(
        args.contains(&"--azure-config-file=/etc/kubernetes/azure.json".to_string()),
        "{args:?}"
    );
    args.push(format!("--azure-config-file={}", file.display()));
    let cli = extdns::flags::try_parse_from(std::iter::once("extdns".to_string()).chain(args))?;
    // What the workload identity webhook injects into the Pod.
    let env = |k: &str| match k {
        "AZURE_CLIENT_ID" | "AZURE_TENANT_ID" => Some("00000000-0000-0000-0000-000000000001".to_string()),
        "AZURE_FEDERATED_TOKEN_FILE" => Some("/var/run/secrets/azure/tokens/azure-identity-token".to_string()),
        _ => None,
    };
    let config = extdns::settings::azure::config(
        &cli.flags,
        extdns_provider_azure::Kind::Public,
        &Default::default(),
        &env,
    )
    .map_err(|e| format!("azure: {e}"))?;
    assert!(
        matches!(
            config.credentials,
            extdns_provider_azure::CredentialSource::Workload { .. }
        ),
        "{:?}",
        config.credentials
    );
    Ok(())
}

#[test]
fn the_leader_election_component_runs_two_replicas_on_the_lease_its_role_grants() -> Result<(), Error> {
    extdns_test_support::require!(Kubectl);
    // kustomize takes only relative paths to other kustomizations.
    let dir = tempfile::tempdir_in(deploy(""))?;
    let base = "../overlays/rfc2136";
    let component = "../components/leader-election";
    std::fs::write(
        dir.path().join("kustomization.yaml"),
        format!(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: extdns\nresources: [{}]\ncomponents: [{}]\n",
            base, component
        ),
    )?;
    let docs = kustomize(dir.path())?;
    let d = of_kind(&docs, "Deployment")[0];
    assert_eq!(d["spec"]["replicas"], 2);
    assert_eq!(d["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"], 0);
    let mut args = strings(&extdns_container(&docs)?["args"]);
    args.push("--rfc2136-tsig-secret=c2VjcmV0".to_string());
    let cli = extdns::flags::try_parse_from(std::iter::once("extdns".to_string()).chain(args))?;
    let leader = extdns::settings::controller(&cli.flags)?
        .leader
        .ok_or("two replicas need --leader-elect")?;
    assert_eq!(leader.name, "extdns");
    assert_eq!(leader.namespace, None, "the pod's own namespace, where the Role is");
    let role = of_kind(&docs, "Role")[0];
    assert_eq!(role["metadata"]["namespace"], "extdns");
    let rules = role["rules"].as_array().ok_or("no rules")?;
    assert_eq!(rules.len(), 1);
    assert_eq!(strings(&rules[0]["apiGroups"]), ["coordination.k8s.io"]);
    assert_eq!(strings(&rules[0]["resources"]), ["leases"]);
    let verbs: BTreeSet<String> = strings(&rules[0]["verbs"]).into_iter().collect();
    assert_eq!(
        verbs,
        BTreeSet::from(["get".into(), "watch".into(), "create".into(), "update".into()])
    );
    let binding = of_kind(&docs, "RoleBinding")[0];
    assert_eq!(binding["roleRef"]["name"], role["metadata"]["name"]);
    assert_eq!(binding["subjects"][0]["name"], "extdns");
    assert_eq!(binding["subjects"][0]["namespace"], "extdns");
    let pdb = of_kind(&docs, "PodDisruptionBudget")[0];
    assert_eq!(pdb["spec"]["minAvailable"], 1);
    assert_eq!(
        pdb["spec"]["selector"]["matchLabels"],
        d["spec"]["selector"]["matchLabels"]
    );
    Ok(())
}

#[test]
fn the_crd_registry_component_keeps_dnsrecords_where_its_role_grants_them() -> Result<(), Error> {
    extdns_test_support::require!(Kubectl);
    let docs = with_component("overlays/rfc2136", "components/crd-registry")?;
    let mut args = strings(&extdns_container(&docs)?["args"]);
    args.push("--rfc2136-tsig-secret=c2VjcmV0".to_string());
    let cli = extdns::flags::try_parse_from(std::iter::once("extdns".to_string()).chain(args))?;
    let settings = extdns::settings::controller(&cli.flags)?;
    let extdns::settings::RegistrySettings::Crd(config) = &settings.registry else {
        return Err(format!(
            "expected --registry=crd to win over the base's txt, got {:?}",
            settings.registry
        )
        .into());
    };
    assert_eq!(config.namespace, "", "the pod's own namespace, where the Role is");
    assert_eq!(config.owner_id, "default");
    let role = of_kind(&docs, "Role")[0];
    assert_eq!(role["metadata"]["namespace"], "extdns");
    let rules = role["rules"].as_array().ok_or("no rules")?;
    let grants = |resource: &str| -> BTreeSet<String> {
        rules
            .iter()
            .filter(|r| strings(&r["apiGroups"]) == ["externaldns.k8s.io"] && strings(&r["resources"]) == [resource])
            .flat_map(|r| strings(&r["verbs"]))
            .collect()
    };
    let verbs = ["get", "list", "watch", "create", "update", "delete"];
    assert_eq!(grants("dnsrecords"), verbs.map(String::from).into());
    assert_eq!(grants("dnsrecords/status"), BTreeSet::from(["update".to_string()]));
    let binding = of_kind(&docs, "RoleBinding")[0];
    assert_eq!(binding["roleRef"]["name"], role["metadata"]["name"]);
    assert_eq!(binding["subjects"][0]["name"], "extdns");
    Ok(())
}

#[test]
fn no_manifest_uses_the_deprecated_tsig_axfr_flag() -> Result<(), Error> {
    fn walk(dir: &Path, found: &mut Vec<PathBuf>) -> std::io::Result<()> {
        for e in std::fs::read_dir(dir)? {
            let p = e?.path();
            if p.is_dir() {
                walk(&p, found)?;
            } else if std::fs::read_to_string(&p)?.contains("--rfc2136-tsig-axfr") {
                found.push(p);
            }
        }
        Ok(())
    }
    let mut found = Vec::new();
    walk(&deploy(""), &mut found)?;
    assert!(found.is_empty(), "{found:?}");
    Ok(())
}

#[test]
fn the_dns_providers_component_ships_the_chart_crds_the_flag_and_its_rbac() -> Result<(), Error> {
    extdns_test_support::require!(Kubectl);
    let docs = with_component("base", "components/dns-providers")?;
    let line: Vec<String> = std::iter::once("extdns".to_string())
        .chain(strings(&extdns_container(&docs)?["args"]))
        .collect();
    let cli = extdns::flags::try_parse_from(&line)?;
    assert!(cli.flags.provider.dns_provider_crds);
    let fleet = extdns::settings::fleet::fleet(&cli.flags, &line.iter().map(Into::into).collect::<Vec<_>>())?;
    assert!(!fleet.sources.enabled.is_empty());
    // The CRDs are the chart's, byte for byte.
    for name in ["dnsproviders", "clusterdnsproviders"] {
        let file = format!("{name}.externaldns.k8s.io.yaml");
        let chart = std::fs::read_to_string(deploy("").join("../charts/extdns/crds").join(&file))?;
        let here = std::fs::read_to_string(deploy("components/dns-providers/crds").join(&file))?;
        assert_eq!(chart, here, "{file}: deploy/ and the chart must ship one CRD");
    }
    let crds = of_kind(&docs, "CustomResourceDefinition");
    assert_eq!(crds.len(), 2);
    let role = of_kind(&docs, "ClusterRole")
        .into_iter()
        .find(|r| r["metadata"]["name"] == "extdns-dns-providers")
        .ok_or("no extdns-dns-providers ClusterRole")?;
    let rules = role["rules"].as_array().ok_or("no rules")?;
    let secrets = rules
        .iter()
        .find(|r| strings(&r["resources"]) == ["secrets"])
        .ok_or("no Secret rule")?;
    assert_eq!(
        strings(&secrets["verbs"]),
        ["get"],
        "Secrets by name only, never listed"
    );
    let binding = of_kind(&docs, "ClusterRoleBinding")
        .into_iter()
        .find(|b| b["roleRef"]["name"] == "extdns-dns-providers")
        .ok_or("no binding")?;
    assert_eq!(binding["subjects"][0]["namespace"], "extdns");
    Ok(())
}
