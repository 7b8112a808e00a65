//! Which kinds the API server lets extdns list, and at which version.
//!
//! A cluster is taken as it is: a Gateway API release may serve a route kind at `v1` only, a CRD may be
//! absent, a namespaced Role may not grant Nodes. The served version of each kind is found by API
//! discovery (one aggregated request for every group, at start and again when a list gets 404), and a
//! kind that cannot be listed is *unavailable* rather than unsynced: the other kinds sync, the sources that
//! do not need it publish, and the records of what needs it are held (the controller's hold of failed
//! objects). Its watcher keeps retrying with backoff, so a CRD installed or a Role granted later is picked
//! up without a restart.

use std::collections::BTreeMap;
use std::fmt;

use kube::Client;

use crate::kinds::KindSpec;

/// Why a kind cannot be listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum UnavailableReason {
    /// No version of its resource is served: its CRD (or API group) is not installed.
    CrdAbsent,
    /// Its resource is served, but at none of the versions extdns reads.
    NotServed,
    /// The API server answered 403: the ServiceAccount may not list it.
    Forbidden,
}

impl UnavailableReason {
    /// The `reason` label of `extdns_informer_unavailable`.
    pub fn as_str(self) -> &'static str {
        match self {
            UnavailableReason::CrdAbsent => "crd_absent",
            UnavailableReason::NotServed => "not_served",
            UnavailableReason::Forbidden => "forbidden",
        }
    }
}

impl fmt::Display for UnavailableReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A kind that cannot be listed: why, the version tried, the status the API server answered and what is
/// missing (the RBAC rule or the CRD), complete enough for one warning to say how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable {
    /// Why the kind cannot be listed; decides how soon it is checked again.
    pub reason: UnavailableReason,
    /// `group/version` tried.
    pub api_version: String,
    /// The HTTP status of the list (404, 403).
    pub status: u16,
    /// What would make it available: `CRD tcproutes.gateway.networking.k8s.io`, an RBAC rule.
    pub missing: String,
}

impl Unavailable {
    /// The kind of `spec` answered `status` to a list at `version`, in `namespace` (all for `None`); `served`
    /// is what discovery found (`None` when it could not be asked).
    pub(crate) fn of(
        spec: &KindSpec,
        version: &str,
        status: u16,
        namespace: Option<&str>,
        served: Option<&Served>,
    ) -> Self {
        let api_version = spec.api_version_of(version);
        if status == 403 {
            let group = if spec.group.is_empty() { "\"\"" } else { spec.group };
            let where_ = match namespace {
                Some(ns) => format!("a Role in namespace {ns}"),
                None => "a ClusterRole".to_string(),
            };
            return Unavailable {
                reason: UnavailableReason::Forbidden,
                api_version,
                status,
                missing: format!(
                    "RBAC rule in {where_}: apiGroups [{group}], resources [{}], verbs [get, list, watch]",
                    spec.plural
                ),
            };
        }
        let others = served.map(|s| s.versions(spec)).unwrap_or_default();
        if others.is_empty() {
            let crd = if spec.group.is_empty() {
                format!("resource {}", spec.plural)
            } else {
                format!("CRD {}.{}", spec.plural, spec.group)
            };
            Unavailable {
                reason: UnavailableReason::CrdAbsent,
                api_version,
                status,
                missing: crd,
            }
        } else {
            Unavailable {
                reason: UnavailableReason::NotServed,
                api_version,
                status,
                missing: format!(
                    "a served version extdns reads ({}); the server serves {}",
                    spec.versions.join(", "),
                    others.join(", ")
                ),
            }
        }
    }
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({} answered {}; missing {})",
            self.reason, self.api_version, self.status, self.missing
        )
    }
}

/// The versions each resource of the API groups is served at, as discovery found them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Served {
    /// (group, plural) → served versions, in the server's order of preference.
    resources: BTreeMap<(String, String), Vec<String>>,
}

/// The version a kind is to be watched at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Choice {
    /// The first of the versions extdns reads that the server serves.
    Version(&'static str),
    /// The server serves none of them (or no version at all).
    None,
}

impl Served {
    /// Every version of `group`/`plural` the server serves, one entry per group version of `versions`.
    pub(crate) fn from_entries<'a>(entries: impl IntoIterator<Item = (&'a str, &'a str, &'a str)>) -> Self {
        let mut resources: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
        for (group, version, plural) in entries {
            resources
                .entry((group.to_string(), plural.to_string()))
                .or_default()
                .push(version.to_string());
        }
        Served { resources }
    }

    /// The versions the server serves `spec`'s resource at.
    pub(crate) fn versions(&self, spec: &KindSpec) -> Vec<String> {
        self.resources
            .get(&(spec.group.to_string(), spec.plural.to_string()))
            .cloned()
            .unwrap_or_default()
    }

    /// The version to watch `spec` at: extdns's order of preference, not the server's (a server preferring
    /// `v1alpha2` while serving `v1` is still read at `v1`).
    pub(crate) fn choose(&self, spec: &KindSpec) -> Choice {
        let served = self.versions(spec);
        spec.versions
            .iter()
            .find(|v| served.iter().any(|s| s == *v))
            .map_or(Choice::None, |v| Choice::Version(v))
    }
}

/// Asks the API server which versions of every API group's resources it serves, in one request (aggregated
/// discovery, `GET /apis`). The core group is not asked: its kinds are always served at `v1`. `None` when
/// the server cannot answer (older than 1.26, or unreachable): the table's first version is then watched.
pub(crate) async fn discover(client: &Client) -> Option<Served> {
    match client.list_api_groups_aggregated().await {
        Ok(list) => {
            let mut entries = Vec::new();
            for group in &list.items {
                let name = group
                    .metadata
                    .as_ref()
                    .and_then(|m| m.name.as_deref())
                    .unwrap_or_default();
                for version in &group.versions {
                    let Some(v) = version.version.as_deref() else { continue };
                    for resource in &version.resources {
                        if let Some(plural) = resource.resource.as_deref() {
                            entries.push((name, v, plural));
                        }
                    }
                }
            }
            Some(Served::from_entries(entries))
        }
        Err(e) => {
            tracing::debug!(error = %e, "API discovery failed; watching each kind at its first version");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ResourceKind;
    use crate::view::RouteKind;

    const GW: &str = "gateway.networking.k8s.io";

    #[test]
    fn the_first_version_extdns_reads_that_is_served_is_chosen() {
        let tls = ResourceKind::Route(RouteKind::Tls).spec();
        let tcp = ResourceKind::Route(RouteKind::Tcp).spec();
        let udp = ResourceKind::Route(RouteKind::Udp).spec();
        let experimental = Served::from_entries([
            (GW, "v1alpha2", "tcproutes"),
            (GW, "v1alpha2", "tlsroutes"),
            (GW, "v1alpha3", "tlsroutes"),
        ]);
        assert_eq!(experimental.choose(tcp), Choice::Version("v1alpha2"));
        assert_eq!(experimental.choose(tls), Choice::Version("v1alpha3"));
        assert_eq!(experimental.choose(udp), Choice::None, "no UDPRoute CRD");
        let standard = Served::from_entries([(GW, "v1alpha2", "tcproutes"), (GW, "v1", "tcproutes")]);
        assert_eq!(
            standard.choose(tcp),
            Choice::Version("v1"),
            "extdns's order, not the server's"
        );
    }

    #[test]
    fn an_unavailable_kind_names_what_is_missing() {
        let tcp = ResourceKind::Route(RouteKind::Tcp).spec();
        let absent = Unavailable::of(tcp, "v1", 404, None, Some(&Served::default()));
        assert_eq!(absent.reason, UnavailableReason::CrdAbsent);
        assert_eq!(absent.missing, "CRD tcproutes.gateway.networking.k8s.io");
        let alpha3 = Served::from_entries([(GW, "v1alpha3", "tcproutes")]);
        let not_served = Unavailable::of(tcp, "v1", 404, None, Some(&alpha3));
        assert_eq!(not_served.reason, UnavailableReason::NotServed);
        assert!(not_served.missing.contains("serves v1alpha3"), "{}", not_served.missing);
        let nodes = Unavailable::of(ResourceKind::Node.spec(), "v1", 403, None, None);
        assert_eq!(nodes.reason, UnavailableReason::Forbidden);
        assert_eq!(
            nodes.to_string(),
            "forbidden (v1 answered 403; missing RBAC rule in a ClusterRole: apiGroups [\"\"], resources [nodes], \
             verbs [get, list, watch])"
        );
    }
}
