//! The Services the full-controller tests against a DNS server (PowerDNS, BIND, Knot) publish, and the
//! ownership records external-dns names for them: one fixture, so every server is held to the same records.

use extdns_test_support::manifests::{alias, node, node_port_service, web};

/// `web` at `web_ip` and 2001:db8::10; `alias` (a CNAME) with `with_alias`; the NodePort Service `np` with
/// its node with `with_nodeport`.
pub fn services(web_ip: &str, with_alias: bool, with_nodeport: bool) -> String {
    let mut docs = vec![web(&[web_ip, "2001:db8::10"])];
    if with_alias {
        docs.push(alias());
    }
    if with_nodeport {
        docs.push(node_port_service("np", "np.example.org"));
        docs.push(node(
            "node-1",
            &[("InternalIP", "10.0.0.1"), ("ExternalIP", "198.51.100.1")],
        ));
    }
    docs.join("---\n")
}

/// The names of the ownership records of everything [`services`] publishes with the alias and the NodePort
/// Service: external-dns's TXT names, the record type before the first label.
pub const OWNED: [&str; 5] = [
    "a-np.example.org",
    "a-web.example.org",
    "aaaa-web.example.org",
    "cname-alias.example.org",
    "srv-_np._tcp.np.example.org",
];
