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
use kube::core::ApiResource;

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
    /// A list of `resource` (the table's row at a version, or the resource configuration put in its place)
    /// answered `status` in `namespace` (all for `None`); `reads` are the versions extdns reads of it and
    /// `served` what discovery found (`None` when it could not be asked). Everything named is the
    /// resource's, so an overridden kind's warning names the configured group and kind.
    pub(crate) fn of(
        resource: &ApiResource,
        reads: &[&str],
        status: u16,
        namespace: Option<&str>,
        served: Option<&Served>,
    ) -> Self {
        let api_version = resource.api_version.clone();
        let (group, plural) = (resource.group.as_str(), resource.plural.as_str());
        if status == 403 {
            let group = if group.is_empty() { "\"\"" } else { group };
            let where_ = match namespace {
                Some(ns) => format!("a Role in namespace {ns}"),
                None => "a ClusterRole".to_string(),
            };
            return Unavailable {
                reason: UnavailableReason::Forbidden,
                api_version,
                status,
                missing: format!(
                    "RBAC rule in {where_}: apiGroups [{group}], resources [{plural}], verbs [get, list, watch]"
                ),
            };
        }
        let others = served.map(|s| s.versions(group, plural)).unwrap_or_default();
        if others.is_empty() {
            let crd = if group.is_empty() {
                format!("resource {plural}")
            } else {
                format!("CRD {plural}.{group}")
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
                    reads.join(", "),
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
    /// (group, version, kind) → plural: where a configured kind is served ([`crate::KindOverrides`]).
    plurals: BTreeMap<(String, String, String), String>,
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
    /// What the server serves: one `(group, version, plural, kind)` entry per resource and version.
    pub(crate) fn from_entries<'a>(entries: impl IntoIterator<Item = (&'a str, &'a str, &'a str, &'a str)>) -> Self {
        let mut served = Served::default();
        for (group, version, plural, kind) in entries {
            served
                .resources
                .entry((group.to_string(), plural.to_string()))
                .or_default()
                .push(version.to_string());
            served.plurals.insert(
                (group.to_string(), version.to_string(), kind.to_string()),
                plural.to_string(),
            );
        }
        served
    }

    /// The versions the server serves `group`/`plural` at.
    pub(crate) fn versions(&self, group: &str, plural: &str) -> Vec<String> {
        self.resources
            .get(&(group.to_string(), plural.to_string()))
            .cloned()
            .unwrap_or_default()
    }

    /// `resource` with the plural the server serves its kind at in its group version (external-dns up to
    /// v0.20 found a configured DNSEndpoint kind this way); `None` when it serves no such kind there.
    pub(crate) fn resolve(&self, resource: &ApiResource) -> Option<ApiResource> {
        let key = (resource.group.clone(), resource.version.clone(), resource.kind.clone());
        self.plurals.get(&key).map(|plural| ApiResource {
            plural: plural.clone(),
            ..resource.clone()
        })
    }

    /// The version to watch `spec` at: extdns's order of preference, not the server's (a server preferring
    /// `v1alpha2` while serving `v1` is still read at `v1`).
    pub(crate) fn choose(&self, spec: &KindSpec) -> Choice {
        let served = self.versions(spec.group, spec.plural);
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
                        let kind = resource.response_kind.as_ref().and_then(|k| k.kind.as_deref());
                        if let Some(plural) = resource.resource.as_deref() {
                            entries.push((name, v, plural, kind.unwrap_or_default()));
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
    use crate::kinds::ApiResourceOf;
    use crate::view::RouteKind;

    const GW: &str = "gateway.networking.k8s.io";

    #[test]
    fn the_first_version_extdns_reads_that_is_served_is_chosen() {
        let tls = ResourceKind::Route(RouteKind::Tls).spec();
        let tcp = ResourceKind::Route(RouteKind::Tcp).spec();
        let udp = ResourceKind::Route(RouteKind::Udp).spec();
        let experimental = Served::from_entries([
            (GW, "v1alpha2", "tcproutes", "TCPRoute"),
            (GW, "v1alpha2", "tlsroutes", "TLSRoute"),
            (GW, "v1alpha3", "tlsroutes", "TLSRoute"),
        ]);
        assert_eq!(experimental.choose(tcp), Choice::Version("v1alpha2"));
        assert_eq!(experimental.choose(tls), Choice::Version("v1alpha3"));
        assert_eq!(experimental.choose(udp), Choice::None, "no UDPRoute CRD");
        let standard = Served::from_entries([
            (GW, "v1alpha2", "tcproutes", "TCPRoute"),
            (GW, "v1", "tcproutes", "TCPRoute"),
        ]);
        assert_eq!(
            standard.choose(tcp),
            Choice::Version("v1"),
            "extdns's order, not the server's"
        );
    }

    #[test]
    fn an_unavailable_kind_names_what_is_missing() {
        let tcp = ResourceKind::Route(RouteKind::Tcp).spec();
        let v1 = tcp.api_resource("v1");
        let absent = Unavailable::of(&v1, tcp.versions, 404, None, Some(&Served::default()));
        assert_eq!(absent.reason, UnavailableReason::CrdAbsent);
        assert_eq!(absent.missing, "CRD tcproutes.gateway.networking.k8s.io");
        let alpha3 = Served::from_entries([(GW, "v1alpha3", "tcproutes", "TCPRoute")]);
        let not_served = Unavailable::of(&v1, tcp.versions, 404, None, Some(&alpha3));
        assert_eq!(not_served.reason, UnavailableReason::NotServed);
        assert!(not_served.missing.contains("serves v1alpha3"), "{}", not_served.missing);
        let node = ResourceKind::Node.spec();
        let nodes = Unavailable::of(&node.api_resource("v1"), node.versions, 403, None, None);
        assert_eq!(nodes.reason, UnavailableReason::Forbidden);
        assert_eq!(
            nodes.to_string(),
            "forbidden (v1 answered 403; missing RBAC rule in a ClusterRole: apiGroups [\"\"], resources [nodes], \
             verbs [get, list, watch])"
        );
    }

    #[test]
    fn a_configured_kind_is_named_as_configured_and_found_by_its_kind() {
        let mut overrides = crate::KindOverrides::new();
        overrides.set_resource(
            ResourceKind::DnsEndpoint,
            "externaldns.nginx.org/v1",
            "DNSRecord",
            "dnsrecords",
        );
        let configured = overrides.api_resource(ResourceKind::DnsEndpoint);
        let absent = Unavailable::of(&configured, &["v1"], 404, Some("team"), Some(&Served::default()));
        assert_eq!(absent.api_version, "externaldns.nginx.org/v1");
        assert_eq!(
            absent.missing, "CRD dnsrecords.externaldns.nginx.org",
            "not the table's dnsendpoints"
        );
        let forbidden = Unavailable::of(&configured, &["v1"], 403, Some("team"), None);
        assert!(
            forbidden
                .missing
                .contains("apiGroups [externaldns.nginx.org], resources [dnsrecords]"),
            "{}",
            forbidden.missing
        );
        // The server's plural is not the kind in lower case plus `s`.
        let served = Served::from_entries([("externaldns.nginx.org", "v1", "dnsrecordz", "DNSRecord")]);
        let resolved = served.resolve(&configured).map(|r| r.plural);
        assert_eq!(resolved.as_deref(), Some("dnsrecordz"));
        let other_version = Served::from_entries([("externaldns.nginx.org", "v2", "dnsrecordz", "DNSRecord")]);
        assert_eq!(other_version.resolve(&configured), None);
    }
}
