//! A blocking client for the test control plane: objects are JSON (`serde_json::json!`), applied with
//! server-side apply, their status set through the status subresource, exactly as controllers would.
//! The tests are sequential scripts, so each call blocks on a runtime of its own.

use std::future::Future;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Api, Client, Config};
use serde_json::{Value, json};

use crate::proc::eventually;

const MANAGER: &str = "extdns-e2e";

/// A blocking Kubernetes client for tests: its own one-thread runtime, untyped objects as JSON.
pub struct Kube {
    rt: tokio::runtime::Runtime,
    client: Client,
}

/// The REST resource of a kind the tests use, and whether it is namespaced.
fn resource(api_version: &str, kind: &str) -> Result<(ApiResource, bool)> {
    let (plural, namespaced) = match (api_version, kind) {
        ("v1", "Service") => ("services", true),
        ("v1", "Pod") => ("pods", true),
        ("v1", "Node") => ("nodes", false),
        ("v1", "Namespace") => ("namespaces", false),
        ("discovery.k8s.io/v1", "EndpointSlice") => ("endpointslices", true),
        ("gateway.networking.k8s.io/v1", "GatewayClass") => ("gatewayclasses", false),
        ("gateway.networking.k8s.io/v1", "Gateway") => ("gateways", true),
        ("gateway.networking.k8s.io/v1", "ListenerSet") => ("listenersets", true),
        ("gateway.networking.k8s.io/v1", "HTTPRoute") => ("httproutes", true),
        ("gateway.networking.k8s.io/v1", "GRPCRoute") => ("grpcroutes", true),
        ("gateway.networking.k8s.io/v1", "TLSRoute") => ("tlsroutes", true),
        ("gateway.networking.k8s.io/v1alpha2", "TLSRoute") => ("tlsroutes", true),
        ("gateway.networking.k8s.io/v1alpha3", "TLSRoute") => ("tlsroutes", true),
        ("gateway.networking.k8s.io/v1alpha2", "TCPRoute") => ("tcproutes", true),
        ("gateway.networking.k8s.io/v1alpha2", "UDPRoute") => ("udproutes", true),
        ("gateway.networking.k8s.io/v1", "TCPRoute") => ("tcproutes", true),
        ("gateway.networking.k8s.io/v1", "UDPRoute") => ("udproutes", true),
        ("v1", "ServiceAccount") => ("serviceaccounts", true),
        ("rbac.authorization.k8s.io/v1", "Role") => ("roles", true),
        ("rbac.authorization.k8s.io/v1", "RoleBinding") => ("rolebindings", true),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => ("customresourcedefinitions", false),
        ("networking.k8s.io/v1", "Ingress") => ("ingresses", true),
        ("externaldns.k8s.io/v1alpha1", "DNSEndpoint") => ("dnsendpoints", true),
        ("externaldns.k8s.io/v1alpha1", "DNSProvider") => ("dnsproviders", true),
        ("externaldns.k8s.io/v1alpha1", "ClusterDNSProvider") => ("clusterdnsproviders", false),
        ("v1", "Secret") => ("secrets", true),
        // F5 Container Ingress Services.
        ("cis.f5.com/v1", "VirtualServer") => ("virtualservers", true),
        ("cis.f5.com/v1", "TransportServer") => ("transportservers", true),
        // --- contour-httpproxy and openshift-route sources ---
        ("projectcontour.io/v1", "HTTPProxy") => ("httpproxies", true),
        ("route.openshift.io/v1", "Route") => ("routes", true),
        // Istio, in every version it serves.
        ("networking.istio.io/v1" | "networking.istio.io/v1beta1" | "networking.istio.io/v1alpha3", "Gateway") => {
            ("gateways", true)
        }
        (
            "networking.istio.io/v1" | "networking.istio.io/v1beta1" | "networking.istio.io/v1alpha3",
            "VirtualService",
        ) => ("virtualservices", true),
        // --- ambassador-host source ---
        ("getambassador.io/v3alpha1" | "getambassador.io/v2", "Host") => ("hosts", true),
        _ => bail!("the e2e client does not know {api_version} {kind}"),
    };
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, kind);
    Ok((ApiResource::from_gvk_with_plural(&gvk, plural), namespaced))
}

fn str_at<'a>(obj: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter().try_fold(obj, |v, k| v.get(k)).and_then(Value::as_str)
}

fn api(client: &Client, api_version: &str, kind: &str, namespace: Option<&str>) -> Result<Api<DynamicObject>> {
    let (ar, namespaced) = resource(api_version, kind)?;
    Ok(match (namespaced, namespace) {
        (true, Some(ns)) => Api::namespaced_with(client.clone(), ns, &ar),
        (true, None) => bail!("{kind} is namespaced: the object needs metadata.namespace"),
        (false, _) => Api::all_with(client.clone(), &ar),
    })
}

/// See [`Kube::apply`].
async fn apply(client: Client, obj: &Value) -> Result<Value> {
    let api_version = str_at(obj, &["apiVersion"]).context("object without apiVersion")?;
    let kind = str_at(obj, &["kind"]).context("object without kind")?;
    let name = str_at(obj, &["metadata", "name"]).context("object without metadata.name")?;
    let api = api(&client, api_version, kind, str_at(obj, &["metadata", "namespace"]))?;
    let mut spec = obj.clone();
    let status = spec.as_object_mut().and_then(|o| o.remove("status"));
    let stored = api
        .patch(name, &PatchParams::apply(MANAGER).force(), &Patch::Apply(&spec))
        .await
        .with_context(|| format!("applying {kind} {name}"))?;
    let stored = match status {
        Some(status) => api
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": status })),
            )
            .await
            .with_context(|| format!("setting the status of {kind} {name}"))?,
        None => stored,
    };
    Ok(serde_json::to_value(stored)?)
}

impl Kube {
    /// A client for the cluster of a kubeconfig file.
    pub fn from_kubeconfig(path: &Path) -> Result<Kube> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()?;
        let client = rt.block_on(async {
            let kubeconfig =
                Kubeconfig::read_from(path).with_context(|| format!("reading kubeconfig {}", path.display()))?;
            let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
            anyhow::Ok(Client::try_from(config)?)
        })?;
        Ok(Kube { rt, client })
    }

    /// The admin client, for tests that drive a library crate against the API server directly.
    pub fn client(&self) -> Client {
        self.client.clone()
    }

    /// Runs a future on the client's runtime.
    pub fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }

    fn api(&self, obj_api_version: &str, kind: &str, namespace: Option<&str>) -> Result<Api<DynamicObject>> {
        api(&self.client, obj_api_version, kind, namespace)
    }

    /// Creates or updates `obj` (server-side apply) and sets its `status`, if it has one, through the
    /// status subresource. Returns the object as stored (e.g. with the ClusterIP the API server allocated).
    pub fn apply(&self, obj: &Value) -> Result<Value> {
        self.block_on(apply(self.client.clone(), obj))
    }

    /// [`Kube::apply`] for every object, `concurrency` at a time (as fast as the API server takes them);
    /// the first failure ends it.
    pub fn apply_all(&self, objs: &[Value], concurrency: usize) -> Result<()> {
        use futures::{StreamExt, TryStreamExt};
        self.block_on(
            futures::stream::iter(objs)
                .map(|obj| apply(self.client.clone(), obj))
                .buffer_unordered(concurrency.max(1))
                .try_for_each(|_| async { Ok(()) }),
        )
    }

    /// The events.k8s.io/v1 Events of a namespace, as JSON.
    pub fn events(&self, namespace: &str) -> Result<Vec<Value>> {
        let api: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(self.client.clone(), namespace);
        let list = self
            .block_on(api.list(&Default::default()))
            .with_context(|| format!("listing the events of {namespace}"))?;
        list.items.into_iter().map(|e| Ok(serde_json::to_value(e)?)).collect()
    }

    /// Deletes one object (namespaced when `namespace` is given).
    pub fn delete(&self, api_version: &str, kind: &str, namespace: Option<&str>, name: &str) -> Result<()> {
        let api = self.api(api_version, kind, namespace)?;
        self.block_on(api.delete(name, &DeleteParams::default()))
            .with_context(|| format!("deleting {kind} {name}"))?;
        Ok(())
    }

    /// A namespace with these labels (namespaces never finish deleting without a controller-manager, so
    /// every test makes a fresh one).
    pub fn namespace(&self, name: &str, labels: Value) -> Result<()> {
        self.apply(&json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": { "name": name, "labels": labels },
        }))
        .map(|_| ())
    }

    /// `GET /readyz` answers `ok`.
    pub fn ready(&self) -> bool {
        let req = match http_get("/readyz") {
            Ok(r) => r,
            Err(_) => return false,
        };
        let client = self.client.clone();
        self.block_on(async move {
            tokio::time::timeout(Duration::from_secs(3), client.request_text(req))
                .await
                .is_ok_and(|r| r.is_ok_and(|t| t.trim() == "ok"))
        })
    }

    /// Applies the CRDs and waits until the API server serves them.
    pub fn install_crds(&self, crds: &[CustomResourceDefinition]) -> Result<()> {
        let api: Api<CustomResourceDefinition> = Api::all(self.client.clone());
        for crd in crds {
            let name = crd.metadata.name.clone().context("CRD without a name")?;
            self.block_on(api.patch(&name, &PatchParams::apply(MANAGER).force(), &Patch::Apply(crd)))
                .with_context(|| format!("applying CRD {name}"))?;
        }
        for crd in crds {
            let name = crd.metadata.name.clone().unwrap_or_default();
            eventually(
                &format!("CRD {name} established"),
                Duration::from_secs(30),
                Duration::from_millis(100),
                || {
                    let got = self.block_on(api.get(&name))?;
                    let established = got
                        .status
                        .and_then(|s| s.conditions)
                        .unwrap_or_default()
                        .iter()
                        .any(|c| c.type_ == "Established" && c.status == "True");
                    Ok(established.then_some(()))
                },
            )?;
        }
        // Established CRDs can still take a moment to appear in discovery and the REST mapping.
        for crd in crds {
            let group = &crd.spec.group;
            let plural = &crd.spec.names.plural;
            let Some(version) = crd.spec.versions.iter().find(|v| v.served) else {
                continue;
            };
            let path = format!("/apis/{group}/{}/{plural}", version.name);
            eventually(
                &format!("{path} served"),
                Duration::from_secs(30),
                Duration::from_millis(100),
                || {
                    let req = http_get(&path)?;
                    Ok(self.block_on(self.client.request_text(req)).ok().map(|_| ()))
                },
            )?;
        }
        Ok(())
    }
}

fn http_get(path: &str) -> Result<http::Request<Vec<u8>>> {
    Ok(http::Request::get(path).body(Vec::new())?)
}
