//! Kubernetes objects as YAML documents for `--manifests`, the ones the end-to-end tests of every provider
//! publish; join several with `---\n`.

/// A LoadBalancer Service `name` in `default` publishing `host`, with `annotations` besides the hostname and
/// the load balancer's `ingress` entries (an address becomes `ip:`, anything else `hostname:`).
pub fn lb_service(name: &str, host: &str, ingress: &[&str], annotations: &[(&str, &str)]) -> String {
    let ingress: String = ingress
        .iter()
        .map(|i| {
            if i.parse::<std::net::IpAddr>().is_ok() {
                format!("      - ip: {i}\n")
            } else {
                format!("      - hostname: {i}\n")
            }
        })
        .collect();
    let extra: String = annotations.iter().map(|(k, v)| format!("    {k}: \"{v}\"\n")).collect();
    format!(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: {name}\n  namespace: default\n  annotations:\n    \
         external-dns.kubernetes.io/hostname: \"{host}\"\n{extra}spec:\n  type: LoadBalancer\n  clusterIP: 10.96.0.10\n  \
         ports:\n    - name: http\n      port: 80\nstatus:\n  loadBalancer:\n    ingress:\n{ingress}"
    )
}

/// `web` publishing `web.example.org` at `addresses` with TTL 120 (A and AAAA records).
pub fn web(addresses: &[&str]) -> String {
    lb_service(
        "web",
        "web.example.org",
        addresses,
        &[("external-dns.kubernetes.io/ttl", "120")],
    )
}

/// `alias` publishing `alias.example.org` at the load balancer name `lb.example.net` (a CNAME).
pub fn alias() -> String {
    lb_service("alias", "alias.example.org", &["lb.example.net"], &[])
}

/// A NodePort Service `name` in `default` publishing `host` (A records of the nodes, and an SRV record for
/// its port `http`, 80 → 30080).
pub fn node_port_service(name: &str, host: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: {name}\n  namespace: default\n  annotations:\n    \
         external-dns.kubernetes.io/hostname: \"{host}\"\nspec:\n  type: NodePort\n  clusterIP: 10.96.0.12\n  \
         ports:\n    - name: http\n      port: 80\n      nodePort: 30080\n      protocol: TCP\n"
    )
}

/// A Node with `addresses` as `(type, address)`, such as `("ExternalIP", "198.51.100.1")`.
pub fn node(name: &str, addresses: &[(&str, &str)]) -> String {
    let addresses: String = addresses
        .iter()
        .map(|(kind, address)| format!("    - type: {kind}\n      address: {address}\n"))
        .collect();
    format!("apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\nstatus:\n  addresses:\n{addresses}")
}

/// `n` LoadBalancer Services `s0`..`s{n-1}`, each naming `s<i>.<zone>` and holding `192.0.2.<i+1>`, as one
/// manifest file's text: the cloud providers' binary tests publish the same set into each fake.
pub fn numbered_lb_services(zone: &str, n: usize) -> String {
    let docs: Vec<String> = (0..n)
        .map(|i| {
            lb_service(
                &format!("s{i}"),
                &format!("s{i}.{zone}"),
                &[&format!("192.0.2.{}", i + 1)],
                &[],
            )
        })
        .collect();
    docs.join("---\n")
}

/// A DNSEndpoint `name` in `default` holding one entry per (dnsName, recordType, target): how a test asks
/// for record types no other source makes (TLSA, HTTPS, SVCB, MX, ...).
pub fn dns_endpoint(name: &str, entries: &[(&str, &str, &str)]) -> String {
    let entries: Vec<String> = entries
        .iter()
        .map(|(n, t, target)| format!("    - dnsName: {n}\n      recordType: {t}\n      targets: ['{target}']\n"))
        .collect();
    format!(
        "apiVersion: externaldns.k8s.io/v1alpha1\nkind: DNSEndpoint\nmetadata:\n  name: {name}\n  namespace: default\n\
         spec:\n  endpoints:\n{}",
        entries.concat()
    )
}

/// A SHA-256 digest in upper case, as users paste it from `openssl`: every provider writes it lower-case.
pub const TLSA_DIGEST: &str = "3F6D8A7D4E5C2B1A09F8E7D6C5B4A3928170F6E5D4C3B2A1908F7E6D5C4B3A29";

/// The flags that add the DNSEndpoint source and manage TLSA, HTTPS and SVCB records.
pub const TYPED_RECORD_FLAGS: [&str; 4] = [
    "--source=crd",
    "--managed-record-types=TLSA",
    "--managed-record-types=HTTPS",
    "--managed-record-types=SVCB",
];

/// The DNSEndpoint `web` the typed-record round trips publish in example.org: `web` HTTPS `https`,
/// `_dns` SVCB in alias mode to `svc.example.net` (written without its dot), and with `with_tlsa`
/// `_443._tcp.web` TLSA `3 1 1` [`TLSA_DIGEST`].
pub fn typed_records(https: &str, with_tlsa: bool) -> String {
    let tlsa = format!("3 1 1 {TLSA_DIGEST}");
    let mut entries = vec![
        ("web.example.org", "HTTPS", https),
        ("_dns.example.org", "SVCB", "0 svc.example.net"),
    ];
    if with_tlsa {
        entries.push(("_443._tcp.web.example.org", "TLSA", tlsa.as_str()));
    }
    dns_endpoint("web", &entries)
}
