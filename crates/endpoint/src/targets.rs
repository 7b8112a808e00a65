use std::borrow::Cow;
use std::cmp::Ordering;
use std::ops::{Deref, DerefMut};

use serde::{Deserialize, Serialize};

use crate::Target;

/// The targets of one record: IP addresses, hostnames or record data (`"0 50 30192 host."` for SRV).
///
/// The comparison helpers follow external-dns exactly, because the plan's update decisions and the conflict
/// resolver's choices depend on them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Targets(pub Vec<Target>);

impl Targets {
    /// Deduplicated and sorted in plain string order, as external-dns's `NewTargets`.
    pub fn new<I, S>(targets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<Target>,
    {
        let mut t: Vec<Target> = targets.into_iter().map(Into::into).collect();
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
        let (a, b) = (sorted_for_same(self), sorted_for_same(other));
        for ((x, _), (y, _)) in a.iter().zip(b.iter()) {
            if !x.eq_ignore_ascii_case(y) {
                return match (x.ip(), y.ip()) {
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
        let mut a: Vec<&Target> = self.iter().collect();
        let mut b: Vec<&Target> = other.iter().collect();
        a.sort_unstable();
        b.sort_unstable();
        for (x, y) in a.iter().zip(b.iter()) {
            if x == y {
                continue;
            }
            return match (x.ip(), y.ip()) {
                (Some(ix), Some(iy)) => ix < iy,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => x < y,
            };
        }
        false
    }
}

/// The targets in external-dns's `Targets.Less` order: canonical address strings when both are IPs, else
/// the plain strings. Each target's canonical spelling is made once, not at every comparison; the order
/// is not total (an address compares to another by its canonical form, to a name by its text), so the
/// comparisons and the stable sort are kept exactly as they were.
fn sorted_for_same(t: &Targets) -> Vec<(&Target, Option<Cow<'_, str>>)> {
    let mut v: Vec<(&Target, Option<Cow<'_, str>>)> = t.iter().map(|x| (x, canonical(x))).collect();
    v.sort_by(|(x, cx), (y, cy)| match (cx, cy) {
        (Some(cx), Some(cy)) => cx.cmp(cy),
        _ => x.as_str().cmp(y.as_str()),
    });
    v
}

/// An address's canonical spelling: an IPv4 target's text is already canonical (the parser takes no
/// other form); an IPv6 one is spelled out again without its zone.
fn canonical(t: &Target) -> Option<Cow<'_, str>> {
    match t.kind() {
        crate::TargetKind::Ipv4(_) => Some(Cow::Borrowed(t.as_str())),
        crate::TargetKind::Ipv6(a) => Some(Cow::Owned(a.to_string())),
        _ => None,
    }
}

impl Deref for Targets {
    type Target = Vec<Target>;
    fn deref(&self) -> &Vec<Target> {
        &self.0
    }
}

impl DerefMut for Targets {
    fn deref_mut(&mut self) -> &mut Vec<Target> {
        &mut self.0
    }
}

impl<S: Into<Target>> FromIterator<S> for Targets {
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> Self {
        Targets(iter.into_iter().map(Into::into).collect())
    }
}

impl From<Vec<Target>> for Targets {
    fn from(v: Vec<Target>) -> Self {
        Targets(v)
    }
}

impl From<Vec<String>> for Targets {
    fn from(v: Vec<String>) -> Self {
        v.into_iter().collect()
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
