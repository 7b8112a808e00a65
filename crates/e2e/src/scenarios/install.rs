//! Scenarios: extdns installed the ways users install it, then run as the installed pod would run, against BIND.
//!
//! - `chart`: our chart (`charts/extdns`) rendered by a real helm (`helm template`) with values of external-dns's
//!   shape plus our additions (two replicas → leader election, `events.enabled`), applied to the API server.
//! - `upstream-chart`: external-dns v0.23.0's own chart with the extdns image ("keep your chart, change the
//!   image", docs/migration.md).
//! - `kustomize`: every deploy/ overlay (with both components) built by `kubectl kustomize` and applied; the
//!   rfc2136 overlay then runs end to end.
//!
//! "Run as the pod would": no kubelet runs here, so the harness plays it. It reads the Deployment back from the
//! API server, mints a token of the rendered ServiceAccount (so only the rendered RBAC applies), resolves the
//! container's environment as a kubelet would (values, the pod's name and namespace, Secret keys read from the
//! API server), and starts extdns with the container's arguments. The only arguments it adds are where to
//! reach the API server and a free metrics port (and, for the kustomize overlay, `--namespace` to keep to the
//! scenario's objects); where an overlay names an example DNS server, zone and key, BIND's replace them.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use base64::Engine;
use serde_json::{Value, json};

use crate::dns::{self, DnsServer, KEY_NAME, SECRET, ZONE};
use crate::objects as o;
use crate::proc::{Proc, eventually, output};
use extdns_test_support::try_free_port as free_port;

use super::Ctx;
use super::wait::{self, alive, answers};

pub(crate) fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub(crate) fn from_env(var: &str) -> Result<PathBuf> {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .with_context(|| format!("{var} is not set: run the scenario with `cargo xtask e2e`, which exports it"))
}

/// `helm template RELEASE CHART --namespace NS -f VALUES` (helm's own directories kept in a scratch dir).
pub(crate) fn helm_template(
    chart: &Path,
    release: &str,
    namespace: &str,
    values: &Value,
    dir: &Path,
) -> Result<PathBuf> {
    let values_file = dir.join(format!("{release}-values.json"));
    std::fs::write(&values_file, serde_json::to_string_pretty(values)?)?;
    let mut cmd = Command::new(from_env("EXTDNS_TEST_HELM")?);
    cmd.args(["template", release])
        .arg(chart)
        .args(["--namespace", namespace, "--values"])
        .arg(&values_file)
        .env("HELM_CACHE_HOME", dir.join("helm-cache"))
        .env("HELM_CONFIG_HOME", dir.join("helm-config"))
        .env("HELM_DATA_HOME", dir.join("helm-data"));
    let manifests = output(cmd).context("helm template")?;
    let file = dir.join(format!("{release}.yaml"));
    std::fs::write(&file, manifests)?;
    Ok(file)
}

/// `kubectl apply --server-side -f FILE` as the cluster admin.
pub(crate) fn apply_file(ctx: &Ctx, file: &Path) -> Result<()> {
    let mut apply = ctx.cp.kubectl();
    apply
        .args(["apply", "--server-side", "--force-conflicts", "-f"])
        .arg(file);
    output(apply).with_context(|| format!("applying {}", file.display()))?;
    Ok(())
}

/// `kubectl apply --server-side` of one object given as JSON (kinds the e2e client does not model: Secrets, CRDs).
pub(crate) fn apply_json(ctx: &Ctx, obj: &Value) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("object.json");
    std::fs::write(&file, obj.to_string())?;
    apply_file(ctx, &file)
}

/// An object from the API server, as JSON.
pub(crate) fn get(ctx: &Ctx, kind: &str, namespace: &str, name: &str) -> Result<Value> {
    let mut cmd = ctx.cp.kubectl();
    cmd.args(["get", kind, name, "--namespace", namespace, "--output=json"]);
    Ok(serde_json::from_str(&output(cmd)?)?)
}

/// A kubeconfig for the API server with a fresh token of `namespace/service_account`: the admin kubeconfig
/// with its credentials replaced.
pub(crate) fn service_account_kubeconfig(
    ctx: &Ctx,
    namespace: &str,
    service_account: &str,
    dir: &Path,
) -> Result<PathBuf> {
    let mut token = ctx.cp.kubectl();
    token.args([
        "create",
        "token",
        service_account,
        "--namespace",
        namespace,
        "--duration=1h",
    ]);
    let token = output(token)?.trim().to_string();
    if token.is_empty() {
        bail!("kubectl create token {namespace}/{service_account} printed nothing");
    }
    let mut config: Value = serde_json::from_str(&std::fs::read_to_string(&ctx.cp.admin_kubeconfig)?)?;
    config["users"][0]["user"] = json!({ "token": token });
    let file = dir.join(format!("{namespace}-{service_account}.kubeconfig"));
    std::fs::write(&file, serde_json::to_string_pretty(&config)?)?;
    Ok(file)
}

/// The container of an applied Deployment, its arguments and its environment as a kubelet would resolve it.
pub(crate) struct Container {
    pub(crate) args: Vec<String>,
    env: Vec<(String, String)>,
    pub(crate) service_account: String,
}

pub(crate) fn container(ctx: &Ctx, namespace: &str, deployment: &str, name: &str) -> Result<Container> {
    let d = get(ctx, "deployment", namespace, deployment)?;
    let pod = &d["spec"]["template"]["spec"];
    let c = pod["containers"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["name"] == name))
        .with_context(|| format!("Deployment {namespace}/{deployment} has no container {name}"))?;
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| a.iter().filter_map(|s| s.as_str().map(String::from)).collect())
            .unwrap_or_default()
    };
    let mut env = Vec::new();
    for e in c["env"].as_array().into_iter().flatten() {
        let var = e["name"].as_str().context("env without a name")?.to_string();
        let value = if let Some(v) = e["value"].as_str() {
            v.to_string()
        } else if let Some(path) = e.pointer("/valueFrom/fieldRef/fieldPath").and_then(Value::as_str) {
            match path {
                "metadata.name" => format!("{deployment}-0"),
                "metadata.namespace" => namespace.to_string(),
                other => bail!("{var}: fieldRef {other} is not one the harness resolves"),
            }
        } else if let Some(r) = e.pointer("/valueFrom/secretKeyRef") {
            let secret_name = r["name"].as_str().context("secretKeyRef without a name")?;
            let key = r["key"].as_str().context("secretKeyRef without a key")?;
            let secret = get(ctx, "secret", namespace, secret_name)?;
            let data = secret["data"][key]
                .as_str()
                .with_context(|| format!("{var}: Secret {namespace}/{secret_name} has no key {key}"))?;
            String::from_utf8(base64::engine::general_purpose::STANDARD.decode(data)?)?
        } else {
            bail!("{var}: an env source the harness does not resolve: {e}");
        };
        env.push((var, value));
    }
    Ok(Container {
        args: strings(&c["args"]),
        env,
        service_account: pod["serviceAccountName"].as_str().unwrap_or("default").to_string(),
    })
}

/// `program` as the container would run it: only the container's environment (none of the harness's own
/// settings), `args`, the ServiceAccount's token, a metrics port of its own.
pub(crate) fn container_command(program: &Path, c: &Container, args: &[String], kubeconfig: &Path) -> Result<Command> {
    let mut cmd = extdns_test_support::cli::command(program, &["KUBECONFIG", "POD_"]);
    cmd.envs(c.env.iter().map(|(k, v)| (k, v)))
        .args(args)
        .arg(format!("--kubeconfig={}", kubeconfig.display()))
        .arg(format!("--metrics-address=127.0.0.1:{}", free_port()?));
    Ok(cmd)
}

/// Starts extdns as the container would run, with the ServiceAccount's token.
pub(crate) fn start_extdns(ctx: &Ctx, c: &Container, kubeconfig: &Path, extra: &[String], log: &str) -> Result<Proc> {
    let mut cmd = container_command(&ctx.cp.binaries().extdns, c, &c.args, kubeconfig)?;
    cmd.args(extra);
    Proc::spawn("extdns", cmd, &ctx.log(log))
}

/// A TSIG Secret holding BIND's key, as users create it.
pub(crate) fn tsig_secret(ns: &str, name: &str, key: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": { "name": name, "namespace": ns },
        "stringData": { key: SECRET },
    })
}

/// Values of the shape external-dns's chart takes: RFC2136 to BIND through `extraArgs`, the TSIG secret from
/// a Secret through `env`, only the Services labelled for this test.
pub(crate) fn rfc2136_values(server: &DnsServer, label: &str) -> Value {
    json!({
        "policy": "sync",
        "sources": ["service"],
        "provider": { "name": "rfc2136" },
        "txtOwnerId": "chart-e2e",
        "domainFilters": [ZONE],
        "labelFilter": format!("e2e-install={label}"),
        "triggerLoopOnEvent": true,
        "interval": "1h",
        "env": [{
            "name": "EXTERNAL_DNS_RFC2136_TSIG_SECRET",
            "valueFrom": { "secretKeyRef": { "name": "tsig", "key": "secret" } },
        }],
        "extraArgs": {
            "rfc2136-host": "127.0.0.1",
            "rfc2136-port": server.port.to_string(),
            "rfc2136-zone": ZONE,
            "rfc2136-tsig-keyname": KEY_NAME,
            "rfc2136-tsig-secret-alg": "hmac-sha256",
            "rfc2136-axfr": true,
        },
    })
}

fn labelled_service(ns: &str, name: &str, label: &str, ip: &str) -> Value {
    let mut svc = o::lb_at(ns, name, &format!("{name}.{ZONE}"), ip);
    svc["metadata"]["labels"] = json!({ "e2e-install": label });
    svc
}

/// The rendered Deployment's container `name`, which must have every argument of `want`, and a kubeconfig
/// with its ServiceAccount's token.
pub(crate) fn rendered_pod(
    ctx: &Ctx,
    ns: &str,
    release: &str,
    name: &str,
    want: &[&str],
    dir: &Path,
) -> Result<(Container, PathBuf)> {
    let c = container(ctx, ns, release, name)?;
    for want in want {
        if !c.args.iter().any(|a| a == want) {
            bail!("the rendered arguments lack {want}: {:?}", c.args);
        }
    }
    let kubeconfig = service_account_kubeconfig(ctx, ns, &c.service_account, dir)?;
    Ok((c, kubeconfig))
}

/// Our chart: two replicas (leader election: the rendered Lease Role is the one used), Events (the rendered
/// RBAC lets extdns write them), the service source's rendered RBAC, records in BIND.
pub fn chart(ctx: &mut Ctx) -> Result<()> {
    let ns = ctx.namespace("chart")?;
    let server = dns::bind();
    let dir = tempfile::tempdir()?;
    let mut values = rfc2136_values(&server, "chart");
    values["replicaCount"] = json!(2);
    values["events"] = json!({ "enabled": true, "types": ["RecordReady"] });
    values["fullnameOverride"] = json!(format!("extdns-{ns}"));
    let file = helm_template(&repo().join("charts/extdns"), "e2e", &ns, &values, dir.path())?;
    apply_file(ctx, &file)?;
    apply_json(ctx, &tsig_secret(&ns, "tsig", "secret"))?;
    let release = format!("extdns-{ns}");
    let (c, kubeconfig) = rendered_pod(
        ctx,
        &ns,
        &release,
        "external-dns",
        &["--leader-elect", "--events-emit=RecordReady", "--source=service"],
        dir.path(),
    )?;
    ctx.cp
        .kube
        .apply(&labelled_service(&ns, "web", "chart", "203.0.113.70"))?;
    ctx.cp.kube.apply(&o::lb_at(
        &ns,
        "unlabelled",
        &format!("unlabelled.{ZONE}"),
        "203.0.113.71",
    ))?;
    let mut extdns = start_extdns(ctx, &c, &kubeconfig, &[], "chart-extdns")?;
    answers(&server, &mut extdns, &format!("web.{ZONE}"), "A", &["203.0.113.70"])?;
    // The Lease the rendered Role allows, held by this "pod".
    let lease = get(ctx, "lease", &ns, &release)?;
    if lease["spec"]["holderIdentity"]
        .as_str()
        .is_none_or(|h| !h.starts_with(&format!("{release}-0")))
    {
        bail!("the Lease {ns}/{release} is not held by the replica: {lease}");
    }
    // The Event the rendered RBAC lets it write.
    wait::events(&ctx.cp.kube, &ns, "a RecordReady Event on the Service", |events| {
        events
            .iter()
            .any(|e| e["regarding"]["name"] == "web" && e["reason"] == "RecordReady")
            .then_some(())
    })?;
    // labelFilter: the unlabelled Service is not published.
    if !dns::answers(&server, &format!("unlabelled.{ZONE}"), "A").is_empty() {
        bail!("labelFilter: the unlabelled Service was published");
    }
    // A change reaches BIND through the watch the rendered RBAC allows (triggerLoopOnEvent → --events).
    ctx.cp
        .kube
        .apply(&labelled_service(&ns, "api", "chart", "203.0.113.72"))?;
    answers(&server, &mut extdns, &format!("api.{ZONE}"), "A", &["203.0.113.72"])?;
    alive(&mut extdns)
}

/// external-dns v0.23.0's chart, unmodified, with the extdns image: its args and RBAC run extdns. The chart's
/// default sources (`service` and `ingress`) are kept, so an Ingress publishes beside the Services.
pub fn upstream_chart(ctx: &mut Ctx) -> Result<()> {
    let ns = ctx.namespace("upstream-chart")?;
    let server = dns::bind();
    let dir = tempfile::tempdir()?;
    let mut values = rfc2136_values(&server, "upstream");
    if let Some(v) = values.as_object_mut() {
        v.remove("sources");
    }
    values["image"] = json!({ "repository": "ghcr.io/extdns/extdns", "tag": "v0.1.0" });
    values["fullnameOverride"] = json!(format!("external-dns-{ns}"));
    let chart = from_env("EXTDNS_TEST_EXTERNAL_DNS_CHART")?;
    let file = helm_template(&chart, "e2e", &ns, &values, dir.path())?;
    apply_file(ctx, &file)?;
    apply_json(ctx, &tsig_secret(&ns, "tsig", "secret"))?;
    let release = format!("external-dns-{ns}");
    let d = get(ctx, "deployment", &ns, &release)?;
    let image = &d["spec"]["template"]["spec"]["containers"][0]["image"];
    if image != "ghcr.io/extdns/extdns:v0.1.0" {
        bail!("the chart did not take the extdns image: {image}");
    }
    // The chart's default sources.
    let (c, kubeconfig) = rendered_pod(
        ctx,
        &ns,
        &release,
        "external-dns",
        &["--source=service", "--source=ingress"],
        dir.path(),
    )?;
    ctx.cp
        .kube
        .apply(&labelled_service(&ns, "shop", "upstream", "203.0.113.80"))?;
    let mut web = o::ingress(
        &ns,
        "web",
        json!({}),
        &[&format!("web.{ZONE}")],
        json!([{ "ip": "203.0.113.82" }]),
    );
    web["metadata"]["labels"] = json!({ "e2e-install": "upstream" });
    ctx.cp.kube.apply(&web)?;
    let mut extdns = start_extdns(ctx, &c, &kubeconfig, &[], "upstream-chart-extdns")?;
    answers(&server, &mut extdns, &format!("shop.{ZONE}"), "A", &["203.0.113.80"])?;
    answers(&server, &mut extdns, &format!("web.{ZONE}"), "A", &["203.0.113.82"])?;
    same_zone_as_external_dns(ctx, &c, &kubeconfig, &server)?;
    ctx.cp
        .kube
        .apply(&labelled_service(&ns, "cart", "upstream", "203.0.113.81"))?;
    answers(&server, &mut extdns, &format!("cart.{ZONE}"), "A", &["203.0.113.81"])?;
    ctx.cp.kube.delete("v1", "Service", Some(&ns), "shop")?;
    answers(&server, &mut extdns, &format!("shop.{ZONE}"), "A", &[])?;
    alive(&mut extdns)
}

/// external-dns v0.23.0 itself, run once with the chart's rendered environment and arguments (only the
/// BIND port changed, to a server of its own), publishes the zone extdns published: the chart's defaults
/// mean the same records whichever image runs them.
fn same_zone_as_external_dns(ctx: &Ctx, c: &Container, kubeconfig: &Path, ours: &DnsServer) -> Result<()> {
    let theirs = dns::bind();
    let port = format!("--rfc2136-port={}", ours.port);
    let args: Vec<String> = c
        .args
        .iter()
        .map(|a| {
            if *a == port {
                format!("--rfc2136-port={}", theirs.port)
            } else {
                a.clone()
            }
        })
        .collect();
    let mut cmd = container_command(&ctx.cp.binaries().external_dns, c, &args, kubeconfig)?;
    let out = cmd.arg("--once").output().context("running external-dns --once")?;
    if !out.status.success() {
        bail!(
            "external-dns --once with the chart's arguments failed with {}:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    dns::same_zones(&theirs, ours, "from the chart's arguments")?;
    eprintln!("  external-dns v0.23.0 with the same chart publishes the same zone");
    Ok(())
}

const OVERLAYS: [&str; 6] = ["rfc2136", "pdns", "aws", "cloudflare", "coredns", "webhook"];

/// A minimal ServiceMonitor CRD (the metrics component's kind), so the API server accepts the component.
fn service_monitor_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": { "name": "servicemonitors.monitoring.coreos.com" },
        "spec": {
            "group": "monitoring.coreos.com", "scope": "Namespaced",
            "names": { "plural": "servicemonitors", "singular": "servicemonitor", "kind": "ServiceMonitor" },
            "versions": [{ "name": "v1", "served": true, "storage": true,
                "schema": { "openAPIV3Schema": { "type": "object", "x-kubernetes-preserve-unknown-fields": true } } }],
        },
    })
}

/// Every overlay with both components, built by `kubectl kustomize` into its own namespace (a kustomization
/// on top setting `namespace` and a name suffix, so the overlays do not overwrite each other or the harness's
/// deploy/), applied with its Secret example; each Deployment's credentials resolve from that Secret on the
/// API server. The rfc2136 one then publishes a Service into BIND with its ServiceAccount's RBAC.
pub fn kustomize(ctx: &mut Ctx) -> Result<()> {
    apply_json(ctx, &service_monitor_crd())?;
    eventually(
        "the ServiceMonitor CRD served",
        Duration::from_secs(30),
        Duration::from_millis(200),
        || {
            let mut cmd = ctx.cp.kubectl();
            cmd.args(["get", "servicemonitors", "--all-namespaces"]);
            Ok(cmd.output()?.status.success().then_some(()))
        },
    )?;
    let server = dns::bind();
    let dir = tempfile::tempdir()?;
    for overlay in OVERLAYS {
        let ns = ctx.namespace(&format!("kustomize-{overlay}"))?;
        // kustomize takes only relative paths to other kustomizations: the layer sits inside deploy/.
        let layer = tempfile::tempdir_in(repo().join("deploy"))?;
        std::fs::write(
            layer.path().join("kustomization.yaml"),
            format!(
                "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: {ns}\nnameSuffix: -{overlay}\n\
                 resources: [../overlays/{overlay}, secret.yaml]\ncomponents: [../components/leader-election, ../components/metrics]\n"
            ),
        )?;
        std::fs::copy(
            repo().join(format!("deploy/overlays/{overlay}/secret.example.yaml")),
            layer.path().join("secret.yaml"),
        )?;
        let mut build = ctx.cp.kubectl();
        build.arg("kustomize").arg(layer.path());
        let manifests = output(build).with_context(|| format!("kubectl kustomize overlays/{overlay}"))?;
        let file = dir.path().join(format!("{overlay}.yaml"));
        std::fs::write(&file, &manifests)?;
        apply_file(ctx, &file)?;
        let deployment = format!("extdns-{overlay}");
        // Every Secret key the containers read resolves (env of every container, sidecars included).
        let d = get(ctx, "deployment", &ns, &deployment)?;
        let containers: Vec<String> = d["spec"]["template"]["spec"]["containers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["name"].as_str().map(String::from))
            .collect();
        for name in &containers {
            container(ctx, &ns, &deployment, name).with_context(|| format!("overlay {overlay}, container {name}"))?;
        }
        get(ctx, "servicemonitor", &ns, &format!("extdns-{overlay}"))?;
        get(ctx, "role", &ns, &format!("extdns-leader-election-{overlay}"))?;
        if overlay == "rfc2136" {
            run_rfc2136_overlay(ctx, &server, &ns, &deployment, dir.path())?;
        }
    }
    Ok(())
}

/// The rfc2136 overlay's pod, run: its Secret set to BIND's key, its example host and zone replaced by BIND's.
fn run_rfc2136_overlay(ctx: &Ctx, server: &DnsServer, ns: &str, deployment: &str, dir: &Path) -> Result<()> {
    apply_json(ctx, &tsig_secret(ns, "extdns-rfc2136-rfc2136", "tsig-secret"))?;
    let mut c = container(ctx, ns, deployment, "extdns")?;
    // The example's DNS server, zone and key name become BIND's (repeatable flags such as the zone cannot be
    // overridden by appending, so the values are replaced where they stand).
    let mut replaced = 0;
    for arg in &mut c.args {
        let new = match arg.split_once('=') {
            Some(("--rfc2136-host", _)) => "--rfc2136-host=127.0.0.1".to_string(),
            Some(("--rfc2136-port", _)) => format!("--rfc2136-port={}", server.port),
            Some(("--rfc2136-zone", _)) => format!("--rfc2136-zone={ZONE}"),
            Some(("--domain-filter", _)) => format!("--domain-filter={ZONE}"),
            Some(("--rfc2136-tsig-keyname", _)) => format!("--rfc2136-tsig-keyname={KEY_NAME}"),
            _ => continue,
        };
        *arg = new;
        replaced += 1;
    }
    if replaced != 5 {
        bail!("the rfc2136 overlay's arguments changed shape: {:?}", c.args);
    }
    let kubeconfig = service_account_kubeconfig(ctx, ns, &c.service_account, dir)?;
    ctx.cp.kube.apply(&o::lb_at(
        ns,
        "kustomized",
        &format!("kustomized.{ZONE}"),
        "203.0.113.90",
    ))?;
    let extra = [format!("--namespace={ns}")];
    let mut extdns = start_extdns(ctx, &c, &kubeconfig, &extra, "kustomize-rfc2136-extdns")?;
    answers(
        server,
        &mut extdns,
        &format!("kustomized.{ZONE}"),
        "A",
        &["203.0.113.90"],
    )?;
    alive(&mut extdns)
}
