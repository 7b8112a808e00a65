//! What the tests of `--dns-provider-crds`'s commands share: a command line over a manifest file.

/// A LoadBalancer Service of namespace team-b asking for web.example.org (the tests' manifests).
pub(crate) const WEB_SERVICE: &str = r#"
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: team-b
  annotations: { external-dns.alpha.kubernetes.io/hostname: web.example.org }
spec: { type: LoadBalancer }
status: { loadBalancer: { ingress: [ { ip: 10.0.0.1 } ] } }
"#;

/// `extdns COMMAND --source=service --dns-provider-crds --manifests=FILE`, FILE written in `dir` with `yaml`.
pub(crate) fn manifests_line(
    command: &str,
    dir: &std::path::Path,
    yaml: &str,
) -> std::io::Result<Vec<std::ffi::OsString>> {
    let path = dir.join("all.yaml");
    std::fs::write(&path, yaml)?;
    let manifests = format!("--manifests={}", path.display());
    Ok(
        ["extdns", command, "--source=service", "--dns-provider-crds", &manifests]
            .iter()
            .map(std::ffi::OsString::from)
            .collect(),
    )
}

/// ClusterDNSProvider `internal`: an in-memory zone example.org.
pub(crate) const INTERNAL_PROVIDER: &str = r#"
apiVersion: externaldns.k8s.io/v1alpha1
kind: ClusterDNSProvider
metadata: { name: internal }
spec: { type: inmemory, domainFilter: { include: [example.org] }, config: { inmemory-zone: [example.org] } }
---
"#;

/// A LoadBalancer Service of namespace team-b asking for shop.example.org from the ClusterDNSProviders
/// internal and public (a split horizon).
pub(crate) const SHOP_SERVICE: &str = r#"
apiVersion: v1
kind: Service
metadata:
  name: shop
  namespace: team-b
  annotations:
    external-dns.alpha.kubernetes.io/hostname: shop.example.org
    external-dns.kubernetes.io/cluster-provider: internal,public
spec: { type: LoadBalancer }
status: { loadBalancer: { ingress: [ { ip: 10.0.0.2 } ] } }
---
"#;
