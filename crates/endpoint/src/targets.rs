use std::cmp::Ordering;
use std::net::IpAddr;
use std::ops::{Deref, DerefMut};

use serde::{Deserialize, Serialize};

use crate::endpoint::parse_ip;

/// The targets of one record: IP addresses, hostnames or record data (`"0 50 30192 host."` for SRV).
///
/// The comparison helpers follow external-dns exactly, because the plan's update decisions and the conflict
/// resolver's choices depend on them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Targets(pub Vec<String>);

impl Targets {
    /// Deduplicated and sorted in plain string order, as external-dns's `NewTargets`.
    pub fn new<I, S>(targets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut t: Vec<String> = targets.into_iter().map(Into::into).collect();
        t.sort_unstable();
        t.dedup();
        Targets(t)
    }

    /// Sort and drop duplicates in place (plain string order).
    pub fn normalize(&mut self) {
        self.0.sort_unstable();
        self.0.dedup();
    }

    /// Whether two target lists mean the same thing: same length, element-wise equal ignoring ASCII case
    /// once both are sorted, with IPs compared as addresses. As in external-dns, the first differing pair
    /// decides: if both are IPs the answer is whether they are the same address.
    pub fn same(&self, other: &Targets) -> bool {
        if self.len() != other.len() {
            return false;
        }
        let mut a: Vec<&String> = self.iter().collect();
        let mut b: Vec<&String> = other.iter().collect();
        a.sort_by(|x, y| target_order(x, y));
        b.sort_by(|x, y| target_order(x, y));
        for (x, y) in a.iter().zip(b.iter()) {
            if !x.eq_ignore_ascii_case(y) {
                return match (parse_ip(x), parse_ip(y)) {
                    (Some(ix), Some(iy)) => ix == iy,
                    _ => false,
                };
            }
        }
        true
    }

    /// The conflict resolver's order: fewer targets first; for equal lengths the sorted lists compare at the
    /// first difference, an IP before a hostname, IPs by address, hostnames by string.
    pub fn is_less(&self, other: &Targets) -> bool {
        match self.len().cmp(&other.len()) {
            Ordering::Less => return true,
            Ordering::Greater => return false,
            Ordering::Equal => {}
        }
        let mut a: Vec<&String> = self.iter().collect();
        let mut b: Vec<&String> = other.iter().collect();
        a.sort_unstable();
        b.sort_unstable();
        for (x, y) in a.iter().zip(b.iter()) {
            if x == y {
                continue;
            }
            return match (parse_ip(x), parse_ip(y)) {
                (Some(ix), Some(iy)) => ix < iy,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => x < y,
            };
        }
        false
    }
}

/// external-dns's `Targets.Less`: canonical address strings when both are IPs, else plain strings.
fn target_order(a: &str, b: &str) -> Ordering {
    match (parse_ip(a), parse_ip(b)) {
        (Some(x), Some(y)) => canonical(x).cmp(&canonical(y)),
        _ => a.cmp(b),
    }
}

fn canonical(ip: IpAddr) -> String {
    ip.to_string()
}

impl Deref for Targets {
    type Target = Vec<String>;
    fn deref(&self) -> &Vec<String> {
        &self.0
    }
}

impl DerefMut for Targets {
    fn deref_mut(&mut self) -> &mut Vec<String> {
        &mut self.0
    }
}

impl<S: Into<String>> FromIterator<S> for Targets {
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> Self {
        Targets(iter.into_iter().map(Into::into).collect())
    }
}

impl From<Vec<String>> for Targets {
    fn from(v: Vec<String>) -> Self {
        Targets(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(v: &[&str]) -> Targets {
        v.iter().copied().collect()
    }

    #[test]
    fn new_targets_are_sorted_and_deduplicated() {
        assert_eq!(Targets::new(["b", "a", "b"]), t(&["a", "b"]));
    }

    #[test]
    fn same_ignores_order_and_case() {
        assert!(t(&["B.example.com", "1.2.3.4"]).same(&t(&["1.2.3.4", "b.example.com"])));
    }

    #[test]
    fn same_compares_ip_addresses_not_spellings() {
        assert!(t(&["2001:db8::1"]).same(&t(&["2001:0db8:0:0:0:0:0:1"])));
        assert!(!t(&["1.2.3.4"]).same(&t(&["1.2.3.5"])));
    }

    #[test]
    fn same_needs_equal_lengths() {
        assert!(!t(&["1.2.3.4"]).same(&t(&["1.2.3.4", "1.2.3.4"])));
    }

    #[test]
    fn is_less_prefers_fewer_targets() {
        assert!(t(&["z"]).is_less(&t(&["a", "b"])));
        assert!(!t(&["a", "b"]).is_less(&t(&["z"])));
    }

    #[test]
    fn is_less_prefers_ips_over_hostnames_and_orders_ips_numerically() {
        assert!(t(&["9.9.9.9"]).is_less(&t(&["a.example.com"])));
        assert!(!t(&["a.example.com"]).is_less(&t(&["9.9.9.9"])));
        assert!(t(&["9.0.0.1"]).is_less(&t(&["10.0.0.1"])));
        assert!(t(&["a.example.com"]).is_less(&t(&["b.example.com"])));
        assert!(!t(&["a"]).is_less(&t(&["a"])));
    }
}
