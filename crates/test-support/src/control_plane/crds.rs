//! The Gateway API CRDs, generated from the `gateway-api` crate's types (the same types extdns decodes),
//! so the API server validates the test objects against exactly the schema extdns was built for.

use std::path::Path;

use anyhow::{Context, Result};
use gateway_api::experimental::{
    gatewayclasses::GatewayClass, gateways::Gateway, grpcroutes::GrpcRoute, httproutes::HttpRoute,
    listenersets::ListenerSet, referencegrants::ReferenceGrant, tcproutes::TcpRoute, tlsroutes::TlsRoute,
    udproutes::UdpRoute,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;
use serde_json::json;

/// The API server refuses CRDs in a `*.k8s.io` group that do not point at their API review; Gateway API's
/// own CRDs carry this one.
const API_APPROVED: (&str, &str) = (
    "api-approved.kubernetes.io",
    "https://github.com/kubernetes-sigs/gateway-api/pull/3328",
);

/// One served version per kind: v1, and v1alpha2 for TCPRoute and UDPRoute (what extdns and external-dns
/// v0.22 read). The experimental channel is a superset of the standard one (e.g. Gateway
/// `spec.allowedListeners`, which ListenerSets need).
pub fn gateway_api() -> Vec<CustomResourceDefinition> {
    let mut crds = vec![
        GatewayClass::crd(),
        Gateway::crd(),
        HttpRoute::crd(),
        GrpcRoute::crd(),
        TlsRoute::crd(),
        TcpRoute::crd(),
        UdpRoute::crd(),
        ListenerSet::crd(),
        ReferenceGrant::crd(),
    ];
    for crd in &mut crds {
        crd.metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(API_APPROVED.0.into(), API_APPROVED.1.into());
    }
    crds
}

/// The Gateway API kinds extdns reads, and GatewayClass and ReferenceGrant, as a Gateway API release ships
/// them: `config/crd/<channel>` of the module `sigs.k8s.io/gateway-api`, which xtask copies out of the Go
/// module cache (`EXTDNS_TEST_GATEWAY_API_CRDS`), `dir` being one channel's directory. Every version with
/// its `served` flag, as a cluster that installed the release has it.
pub fn gateway_api_release(dir: &Path) -> Result<Vec<CustomResourceDefinition>> {
    const PLURALS: [&str; 9] = [
        "gatewayclasses",
        "gateways",
        "httproutes",
        "grpcroutes",
        "tlsroutes",
        "tcproutes",
        "udproutes",
        "listenersets",
        "referencegrants",
    ];
    PLURALS
        .iter()
        .map(|plural| {
            let file = dir.join(format!("gateway.networking.k8s.io_{plural}.yaml"));
            let mut documents = yaml_documents(&file)?;
            let value = match (documents.pop(), documents.is_empty()) {
                (Some(value), true) => value,
                _ => anyhow::bail!("{} is not one YAML document", file.display()),
            };
            serde_json::from_value(value).with_context(|| format!("{} is not a CRD", file.display()))
        })
        .collect()
}

/// Every CRD a project publishes, as its Go module ships them: each `*.yaml` and `*.yml` file of `dir`
/// (one of `EXTDNS_TEST_PROJECT_CRDS`'s subdirectories, `f5`, `emissary`, ...), in name order, each file one
/// or more YAML documents; documents of other kinds (and empty ones) are left out.
pub fn project(dir: &Path) -> Result<Vec<CustomResourceDefinition>> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    files.retain(|f| f.extension().is_some_and(|e| e == "yaml" || e == "yml"));
    files.sort();
    let mut crds = Vec::new();
    for file in &files {
        for value in yaml_documents(file)? {
            if value.get("kind").and_then(|k| k.as_str()) != Some("CustomResourceDefinition") {
                continue;
            }
            crds.push(
                serde_json::from_value(value)
                    .with_context(|| format!("a CRD of {} does not decode", file.display()))?,
            );
        }
    }
    if crds.is_empty() {
        anyhow::bail!("no CustomResourceDefinition in {}", dir.display());
    }
    Ok(crds)
}

/// The YAML documents of `file`. A CRD is one large document: the parser's node budget grows with the file
/// (no anchors in these files).
fn yaml_documents(file: &Path) -> Result<Vec<serde_json::Value>> {
    let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let defaults = serde_saphyr::Budget::default();
    let options = serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_nodes: defaults.max_nodes.saturating_add(text.len()),
            max_events: defaults.max_events.saturating_add(text.len().saturating_mul(2)),
            max_total_scalar_bytes: defaults.max_total_scalar_bytes.max(text.len()),
        },
    };
    let documents: Vec<serde_json::Value> = serde_saphyr::from_multiple_with_options(&text, options)
        .with_context(|| format!("parsing {}", file.display()))?;
    Ok(documents.into_iter().filter(|d| !d.is_null()).collect())
}

/// The HTTPRoute CRD with `spec.hostnames` accepting any JSON value: a CRD whose schema lets through an
/// object the typed model cannot decode (e.g. a string where a list belongs).
pub fn httproute_with_loose_hostnames() -> Result<CustomResourceDefinition> {
    let mut crd = HttpRoute::crd();
    crd.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(API_APPROVED.0.into(), API_APPROVED.1.into());
    let mut value = serde_json::to_value(&crd)?;
    let hostnames = value
        .pointer_mut("/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/hostnames")
        .context("the HTTPRoute schema has no spec.hostnames")?;
    *hostnames = json!({ "x-kubernetes-preserve-unknown-fields": true });
    Ok(serde_json::from_value::<CustomResourceDefinition>(value)?)
}

/// The schema of `spec.hostnames` in an HTTPRoute CRD, for checks.
#[cfg(test)]
fn httproute_hostnames_schema(crd: &CustomResourceDefinition) -> Option<serde_json::Value> {
    serde_json::to_value(crd)
        .ok()?
        .pointer("/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/hostnames")
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_crd_is_approved_and_serves_one_version() -> Result<()> {
        let crds = gateway_api();
        let names: Vec<&str> = crds.iter().filter_map(|c| c.metadata.name.as_deref()).collect();
        assert!(names.contains(&"httproutes.gateway.networking.k8s.io"), "{names:?}");
        assert!(names.contains(&"listenersets.gateway.networking.k8s.io"), "{names:?}");
        for crd in &crds {
            let annotations = crd.metadata.annotations.as_ref().context("no annotations")?;
            assert_eq!(
                annotations.get(API_APPROVED.0).map(String::as_str),
                Some(API_APPROVED.1)
            );
            assert_eq!(crd.spec.versions.len(), 1, "{:?}", crd.metadata.name);
            assert!(crd.spec.versions[0].served && crd.spec.versions[0].storage);
        }
        let tcp = crds
            .iter()
            .find(|c| c.spec.names.kind == "TCPRoute")
            .context("no TCPRoute CRD")?;
        assert_eq!(tcp.spec.versions[0].name, "v1alpha2");
        Ok(())
    }

    #[test]
    fn a_projects_crds_are_read_from_every_document_of_every_file() -> Result<()> {
        let dir = tempfile::tempdir()?;
        let crd = |kind: &str, plural: &str| {
            format!(
                "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: {plural}.example.org}}\n\
                 spec:\n  group: example.org\n  names: {{kind: {kind}, plural: {plural}}}\n  scope: Namespaced\n  \
                 versions: [{{name: v1, served: true, storage: true}}]\n"
            )
        };
        let two = format!("---\n{}---\n# a comment only\n---\n{}", crd("A", "as"), crd("B", "bs"));
        std::fs::write(dir.path().join("crds.yml"), two)?;
        std::fs::write(
            dir.path().join("other.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
        )?;
        std::fs::write(dir.path().join("README.md"), "not yaml: [")?;
        let kinds: Vec<String> = project(dir.path())?.into_iter().map(|c| c.spec.names.kind).collect();
        assert_eq!(kinds, vec!["A", "B"]);
        assert!(
            project(tempfile::tempdir()?.path()).is_err(),
            "a directory without CRDs is an error"
        );
        Ok(())
    }

    #[test]
    fn the_loose_httproute_schema_accepts_anything_as_hostnames() -> Result<()> {
        let strict = httproute_hostnames_schema(&HttpRoute::crd()).context("no strict schema")?;
        assert_eq!(strict["type"], "array", "{strict}");
        let loose = httproute_hostnames_schema(&httproute_with_loose_hostnames()?).context("no loose schema")?;
        assert_eq!(loose, json!({ "x-kubernetes-preserve-unknown-fields": true }));
        Ok(())
    }
}
