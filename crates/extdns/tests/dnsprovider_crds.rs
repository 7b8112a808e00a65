//! The DNSProvider and ClusterDNSProvider CRDs the chart and deploy/ ship against the types extdns reads them
//! with (`extdns-dnsprovider`): the schema names exactly the types' fields, requires what they require, and
//! offers the registries extdns builds; and every provider object the docs show is accepted by the schema, read
//! by the types, and built into a pipeline's settings as the controller builds it (its `config` through the
//! flag parser, its Secret as its credentials). A doc example that the API server or the controller would
//! refuse fails here. And the provider manager against a real kube-apiserver (`EXTDNS_TEST_ETCD`,
//! `EXTDNS_TEST_KUBE_APISERVER`, `EXTDNS_TEST_KUBECTL`), as a user RBAC lets read provider objects but not
//! patch them.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use extdns::dns_providers::args::provider_settings;
use extdns::flags::RegistryName;
use extdns_dnsprovider::{Credentials, DnsProviderSpec, DnsProviderStatus, ProviderKind, ProviderObject};
use serde_json::{Value, json};

type Error = Box<dyn std::error::Error>;

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path)
}

fn crd(kind: ProviderKind) -> Result<Value, Error> {
    let file = repo(&format!("charts/extdns/crds/{}.externaldns.k8s.io.yaml", kind.plural()));
    Ok(serde_saphyr::from_str(&std::fs::read_to_string(file)?)?)
}

/// The openAPIV3Schema of the kind's one version.
fn schema(kind: ProviderKind) -> Result<Value, Error> {
    let crd = crd(kind)?;
    let versions = crd["spec"]["versions"].as_array().ok_or("no versions")?;
    assert_eq!(versions.len(), 1, "{}: one version", kind.kind());
    assert_eq!(versions[0]["name"], "v1alpha1");
    Ok(versions[0]["schema"]["openAPIV3Schema"].clone())
}

/// Every property path a schema declares (`a.b.c`), not descending into preserved-unknown objects or arrays'
/// items (a list's elements are checked as values, not as fields).
fn schema_paths(schema: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    if let Some(props) = schema["properties"].as_object() {
        for (name, sub) in props {
            let path = format!("{prefix}{name}");
            out.insert(path.clone());
            if sub["x-kubernetes-preserve-unknown-fields"] != true {
                schema_paths(sub, &format!("{path}."), out);
            }
        }
    }
}

/// Every object key path of a value (`a.b.c`), not descending into `skip` paths or arrays.
fn value_paths(value: &Value, prefix: &str, skip: &[&str], out: &mut BTreeSet<String>) {
    if let Some(map) = value.as_object() {
        for (name, sub) in map {
            let path = format!("{prefix}{name}");
            out.insert(path.clone());
            if !skip.contains(&path.as_str()) {
                value_paths(sub, &format!("{path}."), skip, out);
            }
        }
    }
}

/// A spec with every field set, as the types write it.
fn full_spec() -> Result<Value, Error> {
    Ok(json!({
        "type": "aws",
        "domainFilter": { "include": ["a.example"], "exclude": ["b.a.example"] },
        "registry": { "type": "txt", "txtOwnerId": "o", "txtPrefix": "p-", "txtSuffix": "-s" },
        "config": { "aws-zone-type": "public" },
        "credentialsRef": { "name": "s", "namespace": "n" },
    }))
    .and_then(|v| {
        // Round-trip through the types, so a field they do not have (or do not write) shows up as a difference.
        let spec: DnsProviderSpec = serde_json::from_value(v)?;
        serde_json::to_value(spec)
    })
    .map_err(Into::into)
}

#[test]
fn the_crds_name_exactly_the_types_fields() -> Result<(), Error> {
    let status: DnsProviderStatus = serde_json::from_value(json!({
        "observedGeneration": 3,
        "conditions": [{ "type": "Ready", "status": "True", "reason": "Synced", "message": "m",
                         "lastTransitionTime": "2026-11-28T10:00:00Z", "observedGeneration": 3 }],
        "zones": ["a.example"],
        "records": 42,
        "lastSyncTime": "2026-11-28T10:00:00Z",
    }))?;
    let object = json!({
        "apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "x", "metadata": {},
        "spec": full_spec()?, "status": serde_json::to_value(status)?,
    });
    let mut typed = BTreeSet::new();
    value_paths(&object, "", &["metadata", "spec.config"], &mut typed);
    for kind in ProviderKind::ALL {
        let schema = schema(kind)?;
        let mut declared = BTreeSet::new();
        schema_paths(&schema, "", &mut declared);
        let mut expected = typed.clone();
        if kind == ProviderKind::Namespaced {
            // A DNSProvider's Secret is always in its own namespace: the schema refuses the field.
            expected.remove("spec.credentialsRef.namespace");
        }
        assert_eq!(
            declared,
            expected,
            "{}: the schema's fields against the types'",
            kind.kind()
        );
        assert_eq!(
            schema["properties"]["spec"]["properties"]["config"]["x-kubernetes-preserve-unknown-fields"],
            true
        );
        let crd = crd(kind)?;
        assert_eq!(crd["spec"]["names"]["kind"], kind.kind());
        assert_eq!(crd["spec"]["names"]["plural"], kind.plural());
        assert_eq!(crd["spec"]["group"], extdns_dnsprovider::GROUP);
        assert_eq!(crd["spec"]["versions"][0]["subresources"]["status"], json!({}));
    }
    Ok(())
}

/// A field the schema requires is one the types cannot do without, and the other way round.
#[test]
fn the_crds_require_what_the_types_require() -> Result<(), Error> {
    let full = full_spec()?;
    let spec_schema = &schema(ProviderKind::Cluster)?["properties"]["spec"];
    let required = |s: &Value| -> BTreeSet<String> {
        s["required"]
            .as_array()
            .map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect())
            .unwrap_or_default()
    };
    // (the object the field is in, in the spec; its schema)
    let levels = [
        (vec![], spec_schema.clone()),
        (vec!["domainFilter"], spec_schema["properties"]["domainFilter"].clone()),
        (vec!["registry"], spec_schema["properties"]["registry"].clone()),
        (
            vec!["credentialsRef"],
            spec_schema["properties"]["credentialsRef"].clone(),
        ),
    ];
    for (at, level) in levels {
        let required = required(&level);
        let fields = level["properties"].as_object().ok_or("no properties")?;
        for field in fields.keys() {
            let mut spec = full.clone();
            let mut parent = &mut spec;
            for step in &at {
                parent = &mut parent[*step];
            }
            parent.as_object_mut().ok_or("not an object")?.remove(field);
            let decodes = serde_json::from_value::<DnsProviderSpec>(spec).is_ok();
            let path = at
                .iter()
                .chain(std::iter::once(&field.as_str()))
                .copied()
                .collect::<Vec<_>>()
                .join(".");
            assert_eq!(
                decodes,
                !required.contains(field),
                "spec.{path}: required by the schema exactly when the types need it"
            );
        }
    }
    assert_eq!(spec_schema["properties"]["type"]["minLength"], 1);
    assert_eq!(
        spec_schema["properties"]["credentialsRef"]["properties"]["name"]["minLength"],
        1
    );
    Ok(())
}

/// `registry.type` offers the registries extdns builds: every `--registry` value but `aws-sd` (external-dns's,
/// for its AWS Cloud Map provider, which extdns does not have).
#[test]
fn the_registry_enum_is_the_registries_extdns_builds() -> Result<(), Error> {
    let expected: BTreeSet<&str> = RegistryName::ALL
        .iter()
        .map(|r| r.as_str())
        .filter(|r| *r != "aws-sd")
        .collect();
    for kind in ProviderKind::ALL {
        let schema = schema(kind)?;
        let offered: BTreeSet<&str> =
            schema["properties"]["spec"]["properties"]["registry"]["properties"]["type"]["enum"]
                .as_array()
                .ok_or("no enum")?
                .iter()
                .filter_map(Value::as_str)
                .collect();
        assert_eq!(offered, expected, "{}", kind.kind());
    }
    Ok(())
}

/// What the API server's structural validation checks of an object, enough for the docs' examples: known
/// fields (unless preserved), required fields, enums, types, minLength.
fn validate(schema: &Value, value: &Value, path: &str, errors: &mut Vec<String>) {
    let ty = schema["type"].as_str().unwrap_or("");
    let type_ok = match ty {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "boolean" => value.is_boolean(),
        _ => true,
    };
    if !type_ok {
        errors.push(format!("{path}: not {ty}: {value}"));
        return;
    }
    if let Some(allowed) = schema["enum"].as_array()
        && !allowed.contains(value)
    {
        errors.push(format!("{path}: {value} not among {allowed:?}"));
    }
    if let (Some(min), Some(s)) = (schema["minLength"].as_u64(), value.as_str())
        && (s.len() as u64) < min
    {
        errors.push(format!("{path}: shorter than {min}"));
    }
    if let Some(items) = value.as_array() {
        for (i, item) in items.iter().enumerate() {
            validate(&schema["items"], item, &format!("{path}[{i}]"), errors);
        }
    }
    let Some(map) = value.as_object() else { return };
    for field in schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !map.contains_key(field) {
            errors.push(format!("{path}.{field}: required"));
        }
    }
    if schema["x-kubernetes-preserve-unknown-fields"] == true || path == "metadata" {
        return;
    }
    for (field, sub) in map {
        let at = if path.is_empty() {
            field.clone()
        } else {
            format!("{path}.{field}")
        };
        match schema["properties"].get(field) {
            Some(sub_schema) => validate(sub_schema, sub, &at, errors),
            None => errors.push(format!("{at}: unknown field")),
        }
    }
}

/// The documents of the `yaml` fenced blocks of a Markdown file (indented blocks too).
fn yaml_blocks(markdown: &str) -> Result<Vec<Value>, Error> {
    let mut docs = Vec::new();
    let mut block: Option<(usize, String)> = None;
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        match &mut block {
            None if trimmed == "```yaml" => block = Some((indent, String::new())),
            Some((_, text)) if trimmed == "```" => {
                for doc in text.split("\n---\n") {
                    let v: Value = serde_saphyr::from_str(doc)?;
                    if !v.is_null() {
                        docs.push(v);
                    }
                }
                block = None;
            }
            Some((indent, text)) => {
                text.push_str(line.get(*indent..).unwrap_or(""));
                text.push('\n');
            }
            None => {}
        }
    }
    Ok(docs)
}

#[test]
fn every_provider_object_of_the_docs_is_accepted_and_builds() -> Result<(), Error> {
    // The deployment the docs' examples run under: the recipes' sources and policy, with deploy/base's
    // `--registry=txt` (every provider inherits it, so the examples must hold with it).
    let line: Vec<OsString> = [
        "extdns",
        "--dns-provider-crds",
        "--source=ingress",
        "--source=service",
        "--source=gateway-httproute",
        "--policy=sync",
        "--registry=txt",
    ]
    .iter()
    .map(OsString::from)
    .collect();
    let cli = extdns::flags::try_parse_from(&line)?;
    let fleet = extdns::settings::fleet::fleet(&cli.flags, &line)?;
    let mut checked = BTreeMap::<String, usize>::new();
    for doc in ["docs/multi-provider.md", "docs/migration.md"] {
        let objects = yaml_blocks(&std::fs::read_to_string(repo(doc))?)?;
        let secrets: BTreeMap<String, &Value> = objects
            .iter()
            .filter(|o| o["kind"] == "Secret")
            .filter_map(|o| Some((o["metadata"]["name"].as_str()?.to_string(), &o["stringData"])))
            .collect();
        for object in &objects {
            let Some(kind) = object["kind"].as_str().and_then(ProviderKind::from_kind) else {
                continue;
            };
            let name = format!("{doc}: {}/{}", kind.kind(), object["metadata"]["name"]);
            assert_eq!(object["apiVersion"], "externaldns.k8s.io/v1alpha1", "{name}");
            let mut errors = Vec::new();
            validate(&schema(kind)?, object, "", &mut errors);
            assert!(errors.is_empty(), "{name}: the CRD refuses it: {errors:?}");
            let mut with_meta = object.clone();
            with_meta["metadata"]["generation"] = json!(1);
            if kind == ProviderKind::Namespaced && with_meta["metadata"]["namespace"].is_null() {
                with_meta["metadata"]["namespace"] = json!("team-a");
            }
            let read = ProviderObject::from_dynamic(&serde_json::from_value(with_meta)?)
                .map_err(|e| format!("{name}: the types refuse it: {e}"))?;
            let credentials = match read.spec.credentials_ref.as_ref() {
                None => Credentials::default(),
                Some(r) => {
                    let data = secrets
                        .get(&r.name)
                        .and_then(|d| d.as_object())
                        .ok_or_else(|| format!("{name}: its Secret {} is not shown", r.name))?;
                    Credentials::from_secret(
                        &r.name,
                        data.iter()
                            .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or_default().as_bytes())),
                    )
                    .map_err(|e| format!("{name}: its Secret: {e}"))?
                }
            };
            provider_settings(&fleet, &read, &credentials)
                .map_err(|e| format!("{name}: the controller would refuse it: {e}"))?;
            *checked.entry(kind.kind().to_string()).or_default() += 1;
        }
    }
    // The kinds section, the tenancy example, both recipes (the webhook variant too) and the migration example.
    assert!(
        checked.get("ClusterDNSProvider").copied().unwrap_or(0) >= 9
            && checked.get("DNSProvider").copied().unwrap_or(0) >= 1,
        "fewer examples than the docs have: {checked:?}"
    );
    Ok(())
}

/// What the manager asked a fake factory to build: each pipeline's include filter and its stop token.
#[derive(Default)]
struct Built(std::sync::Mutex<Vec<(Vec<String>, extdns_controller::CancellationToken)>>);

impl Built {
    fn seen(&self) -> Vec<(Vec<String>, bool)> {
        let built = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        built
            .iter()
            .map(|(include, c)| (include.clone(), c.is_cancelled()))
            .collect()
    }
}

#[async_trait::async_trait]
impl extdns_provider_manager::PipelineFactory for Built {
    async fn build(
        &self,
        request: extdns_provider_manager::PipelineRequest<'_>,
    ) -> Result<extdns_provider_manager::Built, extdns_provider_manager::BuildError> {
        use futures::FutureExt as _;
        let include = request.object.spec.domain_filter.clone().unwrap_or_default().include;
        let cancel = request.cancel.clone();
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((include, cancel.clone()));
        let metrics = std::sync::Arc::new(extdns_controller::Metrics::for_providers("test", "test").child());
        let run = async move { cancel.cancelled().await }.boxed();
        Ok(extdns_provider_manager::Built { run, metrics })
    }
}

/// ClusterDNSProvider `p` over `zone`.
fn cluster_provider(zone: &str) -> Result<kube::api::DynamicObject, Error> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "ClusterDNSProvider",
        "metadata": { "name": "p" },
        "spec": { "type": "inmemory", "domainFilter": { "include": [zone] } },
    }))?)
}

/// Polls `check` every 100 ms for up to 60 s.
async fn until(what: &str, check: impl Fn() -> bool) -> Result<(), Error> {
    for _ in 0..600 {
        if check() {
            return Ok(());
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    Err(format!("{what}: not after 60 s").into())
}

#[test]
fn on_a_real_api_server_a_provider_runs_without_rbac_to_patch_it_and_one_made_again_gets_its_own_pipeline()
-> Result<(), Error> {
    use extdns_test_support::control_plane::{Binaries, ControlPlane};
    use kube::api::{Api, DeleteParams, DynamicObject, PostParams};

    extdns_test_support::require!(Etcd, KubeApiserver);
    let bins = Binaries::control_plane_from_env(PathBuf::new())?;
    let cp = ControlPlane::start(&bins)?;
    let admin = cp.kube.client();
    let kubeconfig = kube::config::Kubeconfig::read_from(&cp.admin_kubeconfig)?;
    cp.kube.block_on(async move {
        let mut config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default()).await?;
        config.auth_info.impersonate = Some("reader".into());
        let reader = kube::Client::try_from(config)?;
        // A user who may read provider objects, and patch neither them nor their status.
        let rbac = |kind: &str, plural: &str| {
            let gvk = kube::api::GroupVersionKind::gvk("rbac.authorization.k8s.io", "v1", kind);
            Api::<DynamicObject>::all_with(
                admin.clone(),
                &kube::api::ApiResource::from_gvk_with_plural(&gvk, plural),
            )
        };
        let role = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": { "name": "provider-reader" },
            "rules": [{ "apiGroups": ["externaldns.k8s.io"], "resources": ["clusterdnsproviders", "dnsproviders"],
                        "verbs": ["get", "list", "watch"] }],
        });
        let binding = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": { "name": "provider-reader" },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "provider-reader" },
            "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "reader" }],
        });
        let post = PostParams::default();
        rbac("ClusterRole", "clusterroles")
            .create(&post, &serde_json::from_value(role)?)
            .await?;
        rbac("ClusterRoleBinding", "clusterrolebindings")
            .create(&post, &serde_json::from_value(binding)?)
            .await?;
        let providers: Api<DynamicObject> = Api::all_with(admin, &ProviderKind::Cluster.api_resource());
        providers
            .create(&PostParams::default(), &cluster_provider("a.example.org")?)
            .await?;

        let mut root = extdns_controller::Metrics::for_providers("test", "test");
        let forbidden = extdns_provider_manager::Forbidden::register(&mut root);
        let built = std::sync::Arc::new(Built::default());
        let shutdown = extdns_controller::CancellationToken::new();
        let config = extdns_provider_manager::ManagerConfig {
            interval: std::time::Duration::from_secs(3600),
            namespace: "extdns".into(),
            forbidden: forbidden.clone(),
        };
        let manager = tokio::spawn(extdns_provider_manager::run(
            reader,
            built.clone(),
            std::sync::Arc::new(root),
            extdns_leader::Leadership::always(),
            config,
            shutdown.clone(),
        ));
        let p = extdns_dnsprovider::ProviderId::Cluster { name: "p".into() };
        until("the provider runs though its finalizer is refused", || {
            built.seen() == [(vec!["a.example.org".to_string()], false)]
                && forbidden.is_refused(&p, extdns_provider_manager::Write::Finalizer)
        })
        .await?;
        until("its status refused too", || {
            forbidden.is_refused(&p, extdns_provider_manager::Write::Status)
        })
        .await?;

        // Deleted (no finalizer holds it) and made again under its name at once, with another zone.
        providers.delete("p", &DeleteParams::default()).await?;
        providers
            .create(&PostParams::default(), &cluster_provider("b.example.org")?)
            .await?;
        until("the old pipeline stopped and the new object's runs", || {
            let seen = built.seen();
            seen.first().is_some_and(|(_, stopped)| *stopped)
                && seen
                    .iter()
                    .filter(|(_, stopped)| !stopped)
                    .map(|(i, _)| i.clone())
                    .collect::<Vec<_>>()
                    == [vec!["b.example.org".to_string()]]
        })
        .await?;
        shutdown.cancel();
        manager.await?;
        assert!(
            built.seen().iter().all(|(_, stopped)| *stopped),
            "every pipeline stopped at shutdown"
        );
        Ok::<_, Error>(())
    })?;
    Ok(())
}
