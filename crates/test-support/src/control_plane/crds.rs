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
            let text = std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
            let value = parse_large_yaml(&text).with_context(|| format!("parsing {}", file.display()))?;
            serde_json::from_value(value).with_context(|| format!("{} is not a CRD", file.display()))
        })
        .collect()
}

/// One YAML document as JSON. A CRD is one large document: the parser's node budget grows with it (no
/// anchors in these files).
fn parse_large_yaml(text: &str) -> Result<serde_json::Value> {
    let defaults = serde_saphyr::Budget::default();
    let options = serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_nodes: defaults.max_nodes.saturating_add(text.len()),
            max_events: defaults.max_events.saturating_add(text.len().saturating_mul(2)),
            max_total_scalar_bytes: defaults.max_total_scalar_bytes.max(text.len()),
        },
    };
    Ok(serde_saphyr::from_str_with_options(text, options)?)
}

/// The directory `EXTDNS_TEST_PROJECT_CRDS` names: one subdirectory per project (`istio`, `traefik`,
/// `contour`, `openshift`, `emissary`, `f5`), each holding the CRD files xtask copied out of the project's Go
/// module.
pub fn projects_dir() -> Result<std::path::PathBuf> {
    let dir = std::env::var_os("EXTDNS_TEST_PROJECT_CRDS")
        .context("EXTDNS_TEST_PROJECT_CRDS is not set (cargo xtask sets it; or source int-env.sh)")?;
    Ok(dir.into())
}

/// Every CustomResourceDefinition a project publishes, as a cluster that installed the project has them:
/// each document of each `*.yaml`/`*.yml` file of `<EXTDNS_TEST_PROJECT_CRDS>/<project>/` whose kind is
/// CustomResourceDefinition (the files also hold other objects), every version with its `served` flag.
pub fn project(project: &str) -> Result<Vec<CustomResourceDefinition>> {
    project_in(&projects_dir()?.join(project))
}

/// [`project`] from the project's directory.
pub fn project_in(dir: &Path) -> Result<Vec<CustomResourceDefinition>> {
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()?;
    files.retain(|f| f.extension().is_some_and(|e| e == "yaml" || e == "yml"));
    files.sort();
    let mut crds = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
        for doc in yaml_documents(&text) {
            let value = parse_large_yaml(doc).with_context(|| format!("parsing {}", file.display()))?;
            if value.get("kind").and_then(|k| k.as_str()) != Some("CustomResourceDefinition") {
                continue;
            }
            crds.push(serde_json::from_value(value).with_context(|| format!("a CRD of {}", file.display()))?);
        }
    }
    if crds.is_empty() {
        anyhow::bail!("no CustomResourceDefinition in {}", dir.display());
    }
    Ok(crds)
}

/// The documents of a YAML stream, split at `---` lines; empty ones (comments only) left out.
fn yaml_documents(text: &str) -> Vec<&str> {
    let mut docs = Vec::new();
    let mut start = 0;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.trim_end() == "---" || line.starts_with("--- ") {
            docs.push(&text[start..offset]);
            start = offset + line.len();
        }
        offset += line.len();
    }
    docs.push(&text[start..]);
    docs.retain(|d| {
        d.lines()
            .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
    });
    docs
}

/// `crds` moved from their group to `group` (`spec.group` and the `<plural>.<group>` name), the schema
/// unchanged: a project that renamed its group keeps publishing one schema under the new name only (Traefik
/// v3 serves `traefik.io`; v2 served the same routers under `traefik.containo.us`).
pub fn in_group(crds: &[CustomResourceDefinition], group: &str) -> Vec<CustomResourceDefinition> {
    crds.iter()
        .map(|crd| {
            let mut crd = crd.clone();
            crd.metadata.name = Some(format!("{}.{group}", crd.spec.names.plural));
            crd.spec.group = group.to_string();
            crd
        })
        .collect()
}

// --- ambassador-host source ---
/// `crds` with the API server's own conversion between their versions (`strategy: None`: only
/// `apiVersion` changes) in place of the conversion webhook they name. A project that converts through a
/// webhook of its own (Emissary's `emissary-apiext`) cannot be served without that Deployment; the API
/// server then refuses every read or write in a version other than the stored one. The test plays the
/// project's webhook for the fields the sources read, which are the same in every version.
pub fn with_identity_conversion(crds: &[CustomResourceDefinition]) -> Vec<CustomResourceDefinition> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceConversion;
    crds.iter()
        .map(|crd| {
            let mut crd = crd.clone();
            crd.spec.conversion = Some(CustomResourceConversion {
                strategy: "None".to_string(),
                webhook: None,
            });
            crd
        })
        .collect()
}

/// `crds` made structural, as the API server requires of `apiextensions.k8s.io/v1` CRDs: a schema node
/// that allows several types (`oneOf` of typed alternatives, no `type` of its own: Emissary's
/// `ambassador_id`, a string or a list) becomes a field of any value
/// (`x-kubernetes-preserve-unknown-fields`). Emissary's Go module publishes its CRDs before its release tooling
/// makes them so; the fields it touches are none the sources read.
pub fn made_structural(crds: &[CustomResourceDefinition]) -> Result<Vec<CustomResourceDefinition>> {
    fn fix(node: &mut serde_json::Value) {
        match node {
            serde_json::Value::Object(map) => {
                let untyped_alternatives = map.get("type").is_none()
                    && map
                        .get("oneOf")
                        .and_then(|o| o.as_array())
                        .is_some_and(|alts| alts.iter().any(|a| a.get("type").is_some()));
                if untyped_alternatives {
                    map.retain(|k, _| k == "description");
                    map.insert("x-kubernetes-preserve-unknown-fields".into(), true.into());
                    return;
                }
                map.values_mut().for_each(fix);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(fix),
            _ => {}
        }
    }
    crds.iter()
        .map(|crd| {
            let mut value = serde_json::to_value(crd)?;
            if let Some(versions) = value.pointer_mut("/spec/versions") {
                fix(versions);
            }
            Ok(serde_json::from_value(value)?)
        })
        .collect()
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
    fn a_projects_crds_are_every_crd_document_of_its_files() -> Result<()> {
        let dir = tempfile::tempdir()?;
        let crd = |plural: &str| {
            format!(
                "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: {plural}.example.org\n\
                 spec:\n  group: example.org\n  scope: Namespaced\n  names: {{kind: K, plural: {plural}}}\n  versions: []\n"
            )
        };
        let text = format!(
            "# a comment only\n---\n{}---\napiVersion: v1\nkind: Namespace\nmetadata: {{name: x}}\n---\n{}",
            crd("as"),
            crd("bs")
        );
        std::fs::write(dir.path().join("crds.yaml"), text)?;
        std::fs::write(dir.path().join("README.md"), "not yaml")?;
        let names: Vec<String> = project_in(dir.path())?
            .into_iter()
            .filter_map(|c| c.metadata.name)
            .collect();
        assert_eq!(names, ["as.example.org", "bs.example.org"]);
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

    // --- ambassador-host source ---
    #[test]
    fn identity_conversion_replaces_a_conversion_webhook() -> Result<()> {
        let mut crds = gateway_api();
        crds[0].spec.conversion = Some(serde_json::from_value(
            json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"],
                   "clientConfig": {"service": {"name": "apiext", "namespace": "x"}}}}),
        )?);
        for crd in with_identity_conversion(&crds) {
            let conversion = crd.spec.conversion.context("no conversion")?;
            assert_eq!(conversion.strategy, "None");
            assert!(conversion.webhook.is_none());
        }
        Ok(())
    }

    #[test]
    fn a_field_of_several_types_becomes_a_field_of_any_value() -> Result<()> {
        let mut crds = gateway_api();
        let mut value = serde_json::to_value(&crds[0])?;
        let spec = value
            .pointer_mut("/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties")
            .context("no spec properties")?;
        spec["id"] = json!({"description": "a string or a list", "items": {"type": "string"},
                            "oneOf": [{"type": "string"}, {"type": "array"}]});
        crds[0] = serde_json::from_value(value)?;
        let fixed = serde_json::to_value(&made_structural(&crds)?[0])?;
        assert_eq!(
            fixed.pointer("/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/id"),
            Some(&json!({"description": "a string or a list", "x-kubernetes-preserve-unknown-fields": true}))
        );
        Ok(())
    }
}
