//! The Helm chart (`charts/extdns`), rendered by a real helm (`EXTDNS_TEST_HELM`, built by `cargo xtask test`):
//! `helm lint`; the cases of `charts/extdns/tests/*.yaml` (shaped like external-dns's chart tests: argument
//! lists, RBAC per source, schema rejections), each rendering also compared with its golden file
//! (`charts/extdns/tests/golden/`, rewritten with `EXTDNS_UPDATE_GOLDEN=1`); and for every rendering, extdns
//! itself parses the arguments and, when it has every configured source, the RBAC must grant exactly what those
//! sources watch, each in the namespace extdns watches it in. external-dns's own chart
//! (`EXTDNS_TEST_EXTERNAL_DNS_CHART`) is held to the same checks with the extdns image, and our CRDs to its.
//! external-dns's own helm-unittest suites run on this chart in `cargo xtask chart-tests`.

// Shared with tests/deploy.rs, which also uses the kind list.
#[allow(dead_code)]
mod support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use extdns::settings::EnabledSource;
use extdns_informer::ResourceKind;
use support::kinds::{Scope, api_resource, strings};

type Error = Box<dyn std::error::Error>;

fn chart() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../charts/extdns")
}

/// A program or directory `cargo xtask test` exports; tests check for it first with `require!`.
fn program(var: &str) -> PathBuf {
    std::env::var_os(var).map(PathBuf::from).unwrap_or_default()
}

fn helm() -> PathBuf {
    program("EXTDNS_TEST_HELM")
}

/// external-dns's own chart, unpacked (`require!(ExternalDnsChart)` first).
fn external_dns_chart() -> PathBuf {
    program("EXTDNS_TEST_EXTERNAL_DNS_CHART")
}

/// `helm template`: the manifests, or helm's error text when it refuses the values.
fn render(chart: &Path, release: &str, namespace: &str, values: &Value) -> Result<Result<String, String>, Error> {
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("values.yaml");
    std::fs::write(&file, serde_json::to_string_pretty(values)?)?;
    let out = Command::new(helm())
        .args(["template", release])
        .arg(chart)
        .args(["--namespace", namespace, "--values"])
        .arg(&file)
        .env("HELM_CACHE_HOME", dir.path().join("cache"))
        .env("HELM_CONFIG_HOME", dir.path().join("config"))
        .env("HELM_DATA_HOME", dir.path().join("data"))
        .output()?;
    Ok(if out.status.success() {
        Ok(String::from_utf8(out.stdout)?)
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    })
}

/// The documents of a multi-document YAML stream (empty ones dropped).
fn documents(yaml: &str) -> Result<Vec<Value>, Error> {
    let mut docs = Vec::new();
    let mut current = String::new();
    for line in yaml.lines().chain(std::iter::once("---")) {
        if line == "---" {
            if !current.trim().is_empty() {
                let v: Value = serde_saphyr::from_str(&current)?;
                if !v.is_null() {
                    docs.push(v);
                }
            }
            current.clear();
        } else {
            current.push_str(line);
            current.push('\n');
        }
    }
    Ok(docs)
}

fn key(doc: &Value) -> String {
    format!(
        "{}/{}",
        doc["kind"].as_str().unwrap_or_default(),
        doc["metadata"]["name"].as_str().unwrap_or_default()
    )
}

fn find<'a>(docs: &'a [Value], key_: &str) -> Option<&'a Value> {
    docs.iter().find(|d| key(d) == key_)
}

/// The arguments of the controller container, `external-dns` in both charts (post-renderers, policies and
/// patches name it).
fn controller_args(docs: &[Value]) -> Option<Vec<String>> {
    let deployment = docs.iter().find(|d| d["kind"] == "Deployment")?;
    let containers = deployment["spec"]["template"]["spec"]["containers"].as_array()?;
    let c = containers.iter().find(|c| c["name"] == "external-dns")?;
    Some(strings(&c["args"]))
}

/// `base` with `over` laid on top (objects merged key by key, anything else replaced), as helm merges a values
/// file over the chart's defaults.
fn merge(base: &Value, over: &Value) -> Value {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            let mut m = b.clone();
            for (k, v) in o {
                let merged = match m.get(k) {
                    Some(existing) => merge(existing, v),
                    None => v.clone(),
                };
                m.insert(k.clone(), merged);
            }
            Value::Object(m)
        }
        _ => over.clone(),
    }
}

/// What the rendered RBAC lets the ServiceAccount list and watch: (namespace or "*", group, resource). Namespaced
/// objects without a namespace go into the release's, `namespace`.
fn read_grants(docs: &[Value], namespace: &str) -> BTreeSet<(String, String, String)> {
    let ns_of = |d: &Value| d["metadata"]["namespace"].as_str().unwrap_or(namespace).to_string();
    let mut grants = BTreeSet::new();
    for binding in docs
        .iter()
        .filter(|d| d["kind"] == "ClusterRoleBinding" || d["kind"] == "RoleBinding")
    {
        let scope = if binding["kind"] == "RoleBinding" {
            ns_of(binding)
        } else {
            "*".to_string()
        };
        let role_kind = binding["roleRef"]["kind"].as_str().unwrap_or_default();
        let role_name = binding["roleRef"]["name"].as_str().unwrap_or_default();
        let Some(role) = docs.iter().find(|d| {
            d["kind"] == role_kind
                && d["metadata"]["name"] == role_name
                && (role_kind == "ClusterRole" || ns_of(d) == scope)
        }) else {
            continue;
        };
        for rule in role["rules"].as_array().into_iter().flatten() {
            let verbs = strings(&rule["verbs"]);
            if !(verbs.iter().any(|v| v == "list") && verbs.iter().any(|v| v == "watch")) {
                continue;
            }
            for group in strings(&rule["apiGroups"]) {
                for resource in strings(&rule["resources"]) {
                    grants.insert((scope.clone(), group.clone(), resource));
                }
            }
        }
    }
    grants
}

/// When extdns has every configured source: the RBAC grants list and watch on exactly the kinds those sources
/// watch, each where extdns watches it (`--namespace`, `--gateway-namespace` or everywhere). `exact` is false
/// when the values add permissions of their own. Namespaced (`--namespace`), Nodes may be left out, as
/// external-dns's chart leaves them out: extdns then holds the records of NodePort Services alone.
fn check_rbac_against_extdns(
    what: &str,
    args: &[String],
    docs: &[Value],
    namespace: &str,
    exact: bool,
) -> Result<(), Error> {
    let cli = extdns::flags::try_parse_from(std::iter::once("extdns".to_string()).chain(args.iter().cloned()))?;
    let Ok(sources) = extdns::settings::sources(&cli.flags) else {
        return Ok(()); // a source extdns does not have yet: it refuses to start, naming it
    };
    let kinds = extdns::build_pipeline(&sources)?.watched_kinds();
    let within = |ns: &str| if ns.is_empty() { "*".to_string() } else { ns.to_string() };
    let grants = read_grants(docs, namespace);
    let mut needed = BTreeSet::new();
    for kind in kinds {
        let (group, resource, scope) = api_resource(kind);
        // A kind configuration moves (a DNSEndpoint of another group) is granted where it moved.
        let moved = sources.load_options.overrides.get(kind);
        let group = moved.map_or(group, |r| r.group.as_str());
        let resource = moved.map_or(resource, |r| r.plural.as_str());
        let scope = match scope {
            Scope::Source => within(&cli.flags.sources.namespace),
            Scope::Gateway => within(&cli.flags.gateway.gateway_namespace),
            Scope::Cluster => "*".to_string(),
        };
        let granted = grants.contains(&("*".to_string(), group.to_string(), resource.to_string()))
            || grants.contains(&(scope.clone(), group.to_string(), resource.to_string()));
        if !granted && kind == ResourceKind::Node && !cli.flags.sources.namespace.is_empty() {
            continue;
        }
        assert!(
            granted,
            "{what}: no grant to list and watch {resource} in {scope}; grants: {grants:?}"
        );
        needed.insert((group.to_string(), resource.to_string()));
    }
    if cli.flags.provider.dns_provider_crds {
        // The provider objects, watched cluster-wide (--dns-provider-crds).
        for resource in ["dnsproviders", "clusterdnsproviders"] {
            let granted = grants.contains(&("*".to_string(), "externaldns.k8s.io".to_string(), resource.to_string()));
            assert!(
                granted,
                "{what}: no grant to list and watch {resource} in every namespace; grants: {grants:?}"
            );
            needed.insert(("externaldns.k8s.io".to_string(), resource.to_string()));
        }
    }
    // --- contour-httpproxy and openshift-route sources ---
    // external-dns's chart grants these two sources Nodes, Pods, Services and Ingresses beside their own kind
    // (its rules for them predate their current code); our chart keeps its rules, which extdns never uses.
    if sources
        .enabled
        .iter()
        .any(|s| matches!(s, EnabledSource::ContourHttpProxy | EnabledSource::OpenShiftRoute))
    {
        for (group, resource) in [
            ("", "nodes"),
            ("", "pods"),
            ("", "services"),
            ("networking.k8s.io", "ingresses"),
        ] {
            needed.insert((group.to_string(), resource.to_string()));
        }
    }
    // --- ambassador-host source ---
    // external-dns's chart grants `getambassador.io` ingresses beside hosts (Ambassador 1's kind); our chart
    // keeps its rule, which extdns never uses.
    if sources.enabled.contains(&EnabledSource::AmbassadorHost) {
        needed.insert(("getambassador.io".to_string(), "ingresses".to_string()));
    }
    if exact {
        // The legacy `extensions` group is granted beside `networking.k8s.io` for Ingresses, as external-dns's
        // chart does (both charts render the same rules); no API server since 1.22 serves Ingresses there.
        // So is Traefik's legacy group beside traefik.io, which extdns watches only with
        // --traefik-enable-legacy.
        let granted: BTreeSet<(String, String)> = grants
            .into_iter()
            .filter(|(_, g, _)| g != "extensions")
            .filter(|(_, g, _)| g != "traefik.containo.us" || needed.iter().any(|(n, _)| n == "traefik.containo.us"))
            .map(|(_, g, r)| (g, r))
            .collect();
        assert_eq!(granted, needed, "{what}: the RBAC grants more than the sources watch");
    }
    Ok(())
}

/// The arguments are flags extdns accepts (a parse error is exit code 2 for a user).
fn check_args_parse(what: &str, args: &[String]) {
    if let Err(e) = extdns::flags::try_parse_from(std::iter::once("extdns".to_string()).chain(args.iter().cloned())) {
        panic!("{what}: extdns refuses the rendered arguments {args:?}: {e}");
    }
}

fn run_case(suite: &Value, case: &Value, golden: &mut String) -> Result<(), Error> {
    let it = case["it"].as_str().unwrap_or("?");
    let what = format!("{} / {it}", suite["suite"].as_str().unwrap_or("?"));
    let release = suite["release"]["name"].as_str().unwrap_or("extdns");
    let namespace = suite["release"]["namespace"].as_str().unwrap_or("default");
    let values = merge(&suite["values"], case.get("values").unwrap_or(&json!({})));
    let rendered = render(&chart(), release, namespace, &values)?;
    if let Some(expected) = case["fails"].as_str() {
        match rendered {
            Ok(_) => panic!("{what}: rendered, expected a failure naming {expected:?}"),
            Err(e) => assert!(e.contains(expected), "{what}: the error lacks {expected:?}: {e}"),
        }
        return Ok(());
    }
    let text = rendered.map_err(|e| format!("{what}: helm failed: {e}"))?;
    golden.push_str(&format!("# ==== {it}\n{text}"));
    let docs = documents(&text)?;
    let args = controller_args(&docs).ok_or_else(|| format!("{what}: no controller container"))?;
    if case["args"].is_array() {
        assert_eq!(args, strings(&case["args"]), "{what}: arguments");
    }
    for a in strings(&case["contains_args"]) {
        assert!(args.contains(&a), "{what}: {a} not in {args:?}");
    }
    for a in strings(&case["absent_args"]) {
        assert!(!args.iter().any(|x| x == &a), "{what}: {a} in {args:?}");
    }
    if case["objects"].is_array() {
        let mut got: Vec<String> = docs.iter().map(key).collect();
        got.sort();
        let mut want = strings(&case["objects"]);
        want.sort();
        assert_eq!(got, want, "{what}: objects");
    }
    for (k, rules) in case["rules"].as_object().into_iter().flatten() {
        let doc = find(&docs, k).ok_or_else(|| format!("{what}: no {k}"))?;
        assert_eq!(&doc["rules"], rules, "{what}: rules of {k}");
    }
    for (k, paths) in case["equal"].as_object().into_iter().flatten() {
        let doc = find(&docs, k).ok_or_else(|| format!("{what}: no {k}"))?;
        for (pointer, want) in paths.as_object().into_iter().flatten() {
            assert_eq!(doc.pointer(pointer), Some(want), "{what}: {k} {pointer}");
        }
    }
    for (k, pointers) in case["absent_paths"].as_object().into_iter().flatten() {
        let doc = find(&docs, k).ok_or_else(|| format!("{what}: no {k}"))?;
        for pointer in strings(pointers) {
            assert_eq!(doc.pointer(&pointer), None, "{what}: {k} has {pointer}");
        }
    }
    if case["parses"] == false {
        // Values that render but cannot run (no sources: extdns, like external-dns, requires one).
        let parsed = extdns::flags::try_parse_from(std::iter::once("extdns".to_string()).chain(args.iter().cloned()));
        assert!(parsed.is_err(), "{what}: expected extdns to refuse {args:?}");
        return Ok(());
    }
    check_args_parse(&what, &args);
    if docs.iter().any(|d| d["kind"] == "ClusterRole" || d["kind"] == "Role") {
        let exact = values["rbac"]["additionalPermissions"]
            .as_array()
            .is_none_or(|a| a.is_empty());
        check_rbac_against_extdns(&what, &args, &docs, namespace, exact)?;
    }
    Ok(())
}

#[test]
fn helm_lint_passes() {
    extdns_test_support::require!(Helm);
    let out = Command::new(helm())
        .args(["lint", "--strict", "--set", "policy=sync"])
        .arg(chart())
        .output()
        .expect("helm runs");
    assert!(
        out.status.success(),
        "helm lint: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn chart_cases_render_as_expected_and_match_their_golden_files() -> Result<(), Error> {
    extdns_test_support::require!(Helm);
    let dir = chart().join("tests");
    let update = std::env::var_os("EXTDNS_UPDATE_GOLDEN").is_some();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(files.len() >= 5, "the case files are missing from {}", dir.display());
    let mut cases = 0;
    for file in files {
        let suite: Value = serde_saphyr::from_str(&std::fs::read_to_string(&file)?)?;
        let name = suite["suite"]
            .as_str()
            .ok_or("a case file without `suite`")?
            .to_string();
        let mut golden = String::new();
        for case in suite["cases"].as_array().ok_or("a case file without `cases`")? {
            run_case(&suite, case, &mut golden)?;
            cases += 1;
        }
        let golden_file = dir.join("golden").join(format!("{name}.yaml"));
        if update {
            std::fs::create_dir_all(dir.join("golden"))?;
            std::fs::write(&golden_file, &golden)?;
        } else {
            let want = std::fs::read_to_string(&golden_file)
                .map_err(|e| format!("{}: {e} (EXTDNS_UPDATE_GOLDEN=1 writes it)", golden_file.display()))?;
            assert!(
                want == golden,
                "{} differs from the rendering (EXTDNS_UPDATE_GOLDEN=1 rewrites it after review)",
                golden_file.display()
            );
        }
    }
    assert!(cases >= 40, "only {cases} cases ran");
    Ok(())
}

/// The values external-dns's chart is installed with in the migration guide: the extdns image, sources extdns
/// has, RFC2136 credentials from a Secret.
fn upstream_values(namespaced: bool) -> Value {
    json!({
        "image": { "repository": "ghcr.io/extdns/extdns", "tag": "v0.1.0" },
        "policy": "sync",
        "sources": ["service", "gateway-httproute"],
        "provider": { "name": "rfc2136" },
        "txtOwnerId": "cluster-a",
        "domainFilters": ["example.org"],
        "namespaced": namespaced,
        "triggerLoopOnEvent": true,
        "extraArgs": {
            "rfc2136-host": "dns.example.org",
            "rfc2136-port": "53",
            "rfc2136-zone": "example.org",
            "rfc2136-tsig-keyname": "extdns",
            "rfc2136-tsig-secret-alg": "hmac-sha256",
            "rfc2136-axfr": true,
        },
    })
}

#[test]
fn external_dns_chart_with_the_extdns_image_renders_arguments_extdns_accepts_and_the_rbac_it_needs() -> Result<(), Error>
{
    extdns_test_support::require!(Helm, ExternalDnsChart);
    let upstream = external_dns_chart();
    let text = render(&upstream, "dns", "dns", &upstream_values(false))?.map_err(|e| format!("helm: {e}"))?;
    let docs = documents(&text)?;
    let args = controller_args(&docs).ok_or("no external-dns container")?;
    check_args_parse("external-dns chart", &args);
    let cli = extdns::flags::try_parse_from(std::iter::once("extdns".to_string()).chain(args.iter().cloned()))?;
    extdns::settings::controller(&cli.flags)?;
    check_rbac_against_extdns("external-dns chart", &args, &docs, "dns", true)?;
    let deployment = docs.iter().find(|d| d["kind"] == "Deployment").ok_or("no Deployment")?;
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][0]["image"],
        "ghcr.io/extdns/extdns:v0.1.0"
    );
    Ok(())
}

/// The one gap of external-dns's chart for extdns, documented in docs/migration.md: namespaced, it grants no
/// access to Nodes, which extdns's service source watches (for NodePort targets); extdns then holds the
/// records of NodePort Services and publishes the rest. Our chart leaves them out the same way by default, and
/// grants them with `rbac.namespacedNodeAccess` (a ClusterRole).
#[test]
fn external_dns_chart_namespaced_lacks_only_the_nodes_extdns_reads() -> Result<(), Error> {
    extdns_test_support::require!(Helm, ExternalDnsChart);
    let upstream = external_dns_chart();
    let text = render(&upstream, "dns", "dns", &upstream_values(true))?.map_err(|e| format!("helm: {e}"))?;
    let docs = documents(&text)?;
    let grants = read_grants(&docs, "dns");
    let resources: BTreeSet<&str> = grants.iter().map(|(_, _, r)| r.as_str()).collect();
    assert!(!resources.contains("nodes"), "{grants:?}");
    assert!(
        [
            "services",
            "endpointslices",
            "pods",
            "httproutes",
            "gateways",
            "namespaces"
        ]
        .iter()
        .all(|r| resources.contains(r)),
        "{grants:?}"
    );
    let ours = render(&chart(), "dns", "dns", &upstream_values(true))?.map_err(|e| format!("helm: {e}"))?;
    let ours = documents(&ours)?;
    // external-dns's grants, and Gateways of every namespace (where both programs watch them).
    let extra: BTreeSet<_> = read_grants(&ours, "dns").difference(&grants).cloned().collect();
    let gateways = (
        "*".to_string(),
        "gateway.networking.k8s.io".to_string(),
        "gateways".to_string(),
    );
    assert_eq!(
        extra,
        BTreeSet::from([gateways]),
        "our chart, namespaced, beyond external-dns's"
    );
    assert!(grants.is_subset(&read_grants(&ours, "dns")));
    let args = controller_args(&ours).ok_or("no controller container")?;
    check_rbac_against_extdns("our chart, namespaced", &args, &ours, "dns", true)?;
    let with_nodes = merge(
        &upstream_values(true),
        &json!({ "rbac": { "namespacedNodeAccess": true } }),
    );
    let ours = render(&chart(), "dns", "dns", &with_nodes)?.map_err(|e| format!("helm: {e}"))?;
    let ours = documents(&ours)?;
    assert!(
        read_grants(&ours, "dns").contains(&("*".to_string(), String::new(), "nodes".to_string())),
        "rbac.namespacedNodeAccess grants Nodes cluster-wide"
    );
    check_rbac_against_extdns("our chart, namespaced, with Nodes", &args, &ours, "dns", true)
}

/// external-dns's chart and ours, given the same values file, render the same arguments and, cluster-wide, the
/// same ClusterRole rules: a values file moves between them unchanged.
#[test]
fn the_same_values_render_the_same_arguments_and_rules_in_both_charts() -> Result<(), Error> {
    extdns_test_support::require!(Helm, ExternalDnsChart);
    let upstream = external_dns_chart();
    let cases = [
        json!({ "policy": "upsert-only" }),
        json!({ "policy": "sync", "registry": "crd", "sources": ["service", "crd"] }),
        upstream_values(false),
        upstream_values(true),
        json!({
            "policy": "sync", "triggerLoopOnEvent": true, "logLevel": "debug", "logFormat": "json", "interval": "30s",
            "sources": ["service", "gateway-httproute", "gateway-grpcroute", "gateway-tlsroute", "gateway-tcproute",
                        "gateway-udproute", "crd", "ingress"],
            "enableGatewayListenerSets": true, "gatewayNamespace": "gateways",
            "txtOwnerId": "a", "txtSuffix": "-%{record_type}", "domainFilters": ["example.org"],
            "excludeDomains": ["x.example.org"], "labelFilter": "a=b", "annotationFilter": "c=d",
            "annotationPrefix": "custom.io/", "managedRecordTypes": ["A", "TXT"],
            "provider": "cloudflare",
            "extraArgs": { "cloudflare-proxied": false, "zone-id-filter": ["z1", "z2"], "dry-run": null },
        }),
        json!({
            "policy": "sync",
            "provider": { "name": "webhook", "webhook": { "image": { "repository": "ghcr.io/x/webhook", "tag": "v1" } } },
            "extraArgs": ["--webhook-provider-url=http://localhost:8888", "--txt-cache-interval=1m"],
        }),
    ];
    for values in cases {
        let theirs = render(&upstream, "dns", "dns", &values)?.map_err(|e| format!("external-dns's chart: {e}"))?;
        let ours = render(&chart(), "dns", "dns", &values)?.map_err(|e| format!("our chart: {e}"))?;
        let (theirs, ours) = (documents(&theirs)?, documents(&ours)?);
        assert_eq!(
            controller_args(&ours),
            controller_args(&theirs),
            "arguments for {values}"
        );
        if values["namespaced"] != true {
            let rules = |docs: &[Value]| {
                docs.iter()
                    .find(|d| d["kind"] == "ClusterRole")
                    .map(|d| d["rules"].clone())
            };
            assert_eq!(rules(&ours), rules(&theirs), "ClusterRole rules for {values}");
        }
    }
    Ok(())
}

/// `v` without its `description` fields (the prose of a CRD's schema, which is ours).
fn without_descriptions(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| k.as_str() != "description")
                .map(|(k, v)| (k.clone(), without_descriptions(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_descriptions).collect()),
        other => other.clone(),
    }
}

/// The CRDs our chart ships (`crds/`, as external-dns's chart ships them) define external-dns's API exactly: the
/// same names, versions, subresources, columns and schema, only the descriptions being ours; so every object
/// one program writes the other's CRD accepts.
#[test]
fn the_crds_define_external_dns_api_exactly() -> Result<(), Error> {
    extdns_test_support::require!(ExternalDnsChart);
    let upstream = external_dns_chart().join("crds");
    let mut names: Vec<String> = std::fs::read_dir(&upstream)?
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "dnsendpoints.externaldns.k8s.io.yaml",
            "dnsrecords.externaldns.k8s.io.yaml"
        ]
    );
    for name in names {
        let read = |dir: &Path| -> Result<Value, Error> {
            Ok(serde_saphyr::from_str(&std::fs::read_to_string(dir.join(&name))?)?)
        };
        let (ours, theirs) = (read(&chart().join("crds"))?, read(&upstream)?);
        assert_eq!(
            without_descriptions(&ours),
            without_descriptions(&theirs),
            "{name}: our CRD differs from external-dns's beyond descriptions"
        );
    }
    Ok(())
}

/// Our schema takes external-dns's chart's own values files (its defaults, every key, and its CI values) as
/// they are: a values file written for that chart is never refused here.
#[test]
fn external_dns_chart_values_files_render_here() -> Result<(), Error> {
    extdns_test_support::require!(Helm, ExternalDnsChart);
    let upstream = external_dns_chart();
    for file in ["values.yaml", "ci/ci-values.yaml"] {
        let values: Value = serde_saphyr::from_str(&std::fs::read_to_string(upstream.join(file))?)?;
        // external-dns's chart requires `policy` as ours does; its defaults leave it empty.
        let values = merge(&values, &json!({ "policy": "sync" }));
        let text = render(&chart(), "dns", "dns", &values)?.map_err(|e| format!("{file}: {e}"))?;
        let args = controller_args(&documents(&text)?).ok_or("no controller container")?;
        check_args_parse(file, &args);
    }
    Ok(())
}
