//! Which of a Node's addresses it publishes, as external-dns v0.23 chooses them (Kubernetes's
//! `GetPreferredNodeAddress`, with external-dns's IPv6 rule of kubernetes-sigs/external-dns#5192): the
//! `ExternalIP`s, and with `--expose-internal-ipv6` the IPv6 `InternalIP`s after them; without any
//! `ExternalIP`, every `InternalIP`, IPv4 and IPv6 alike. Other address types (`Hostname`, `InternalDNS`,
//! `ExternalDNS`) are never published.

use extdns_endpoint::{RecordType, suitable_type};
use extdns_informer::view::Node;
pub use extdns_informer::view::{EXTERNAL_IP, INTERNAL_IP};

/// The addresses `node` publishes, in its `status.addresses` order; `None` when it has neither an
/// `ExternalIP` nor an `InternalIP`.
pub fn of(node: &Node, expose_internal_ipv6: bool) -> Option<Vec<&str>> {
    let of_type = |t: &str| -> Vec<&str> {
        node.addresses
            .iter()
            .filter(|a| a.address_type == t)
            .map(|a| a.address.as_str())
            .collect()
    };
    let internal = of_type(INTERNAL_IP);
    let mut external = of_type(EXTERNAL_IP);
    if !external.is_empty() {
        if expose_internal_ipv6 {
            external.extend(internal.into_iter().filter(|a| suitable_type(a) == RecordType::Aaaa));
        }
        return Some(external);
    }
    (!internal.is_empty()).then_some(internal)
}

#[cfg(test)]
mod tests {
    use extdns_source::pipeline::testing::node_view;

    use super::*;

    /// A Node `n1` with these addresses.
    fn node(addresses: &[(&str, &str)]) -> Node {
        node_view("n1", addresses)
    }

    #[test]
    fn external_addresses_win_over_internal_ones() {
        let n = node(&[
            (INTERNAL_IP, "10.0.0.1"),
            (EXTERNAL_IP, "192.0.2.1"),
            (EXTERNAL_IP, "2001:db8::1"),
        ]);
        assert_eq!(of(&n, false), Some(vec!["192.0.2.1", "2001:db8::1"]));
    }

    #[test]
    fn internal_ipv6_addresses_join_external_ones_only_when_exposed() {
        let n = node(&[
            (EXTERNAL_IP, "192.0.2.1"),
            (INTERNAL_IP, "10.0.0.1"),
            (INTERNAL_IP, "fd00::1"),
        ]);
        assert_eq!(of(&n, false), Some(vec!["192.0.2.1"]));
        assert_eq!(of(&n, true), Some(vec!["192.0.2.1", "fd00::1"]));
    }

    #[test]
    fn without_an_external_address_every_internal_one_is_published_ipv6_included() {
        let n = node(&[(INTERNAL_IP, "10.0.0.1"), (INTERNAL_IP, "fd00::1"), ("Hostname", "n1")]);
        assert_eq!(of(&n, false), Some(vec!["10.0.0.1", "fd00::1"]));
        assert_eq!(of(&n, true), Some(vec!["10.0.0.1", "fd00::1"]));
    }

    #[test]
    fn a_node_with_only_other_address_types_has_none_to_publish() {
        assert_eq!(
            of(&node(&[("Hostname", "n1"), ("InternalDNS", "n1.local")]), false),
            None
        );
        assert_eq!(of(&node(&[]), false), None);
    }
}
