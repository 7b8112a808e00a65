//! Two providers that would fight over records: the same TXT owner id over zones that overlap. Each would
//! take the other's records for its own and delete what it does not ask for.

use crate::{ProviderId, ProviderObject};

/// A provider that may not run, and why (naming the older provider it collides with).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The refused provider (the newer of the two).
    pub refused: ProviderId,
    /// Why, naming the provider that keeps running.
    pub why: String,
}

/// Among `objects` (deleting ones left out), the providers refused because an older one has the same owner id
/// and zones that overlap (one include filter equal to or under another's; an empty filter covers every
/// zone). Registries without owner ids (`noop`, a dns-server's default) never conflict. Of two, the older
/// (creation time, then id) keeps running, so adding a provider never stops one that works.
pub fn conflicts(objects: &[&ProviderObject]) -> Vec<Conflict> {
    let mut live: Vec<&ProviderObject> = objects.iter().copied().filter(|o| !o.deleting && owns(o)).collect();
    live.sort_by(|a, b| {
        let at = a.created.as_ref().map(|t| t.0);
        let bt = b.created.as_ref().map(|t| t.0);
        at.cmp(&bt).then_with(|| a.id.cmp(&b.id))
    });
    let mut running: Vec<&ProviderObject> = Vec::new();
    let mut refused = Vec::new();
    for o in live {
        match running.iter().find(|r| r.owner_id() == o.owner_id() && overlap(r, o)) {
            Some(older) => refused.push(Conflict {
                refused: o.id.clone(),
                why: format!(
                    "{} already writes owner id {:?} over zones that overlap this provider's: give one of them \
                     another spec.registry.txtOwnerId or disjoint spec.domainFilter.include",
                    older.id,
                    o.owner_id()
                ),
            }),
            None => running.push(o),
        }
    }
    refused
}

/// Whether the provider's registry writes owner ids.
fn owns(o: &ProviderObject) -> bool {
    let registry = o.spec.registry.as_ref().and_then(|r| r.type_.as_deref());
    match registry {
        Some(r) => r != "noop",
        None => o.spec.type_.trim() != "dns-server",
    }
}

fn includes(o: &ProviderObject) -> Vec<String> {
    o.spec
        .domain_filter
        .as_ref()
        .map(|f| {
            f.include
                .iter()
                .map(|d| d.trim().trim_end_matches('.').to_ascii_lowercase())
                .collect()
        })
        .unwrap_or_default()
}

fn overlap(a: &ProviderObject, b: &ProviderObject) -> bool {
    let (a, b) = (includes(a), includes(b));
    if a.is_empty() || b.is_empty() {
        return true;
    }
    let under = |x: &str, y: &str| x == y || x.strip_suffix(y).is_some_and(|rest| rest.ends_with('.'));
    a.iter().any(|x| b.iter().any(|y| under(x, y) || under(y, x)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DnsProviderSpec, DomainFilterSpec, RegistrySpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;

    fn provider(name: &str, created: i64, owner: &str, include: &[&str]) -> ProviderObject {
        ProviderObject {
            id: ProviderId::Cluster { name: name.into() },
            generation: 1,
            created: Timestamp::from_second(created).ok().map(Time),
            deleting: false,
            finalizers: Vec::new(),
            spec: DnsProviderSpec {
                type_: "aws".into(),
                domain_filter: Some(DomainFilterSpec {
                    include: include.iter().map(|s| s.to_string()).collect(),
                    exclude: Vec::new(),
                }),
                registry: Some(RegistrySpec {
                    txt_owner_id: Some(owner.into()),
                    ..RegistrySpec::default()
                }),
                ..DnsProviderSpec::default()
            },
            status: None,
        }
    }

    #[test]
    fn the_newer_of_two_providers_with_one_owner_over_overlapping_zones_is_refused() {
        let old = provider("old", 10, "me", &["example.com"]);
        let new = provider("new", 20, "me", &["a.example.com."]);
        let found = conflicts(&[&new, &old]);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].refused, new.id);
        assert!(found[0].why.contains("ClusterDNSProvider/old"), "{}", found[0].why);
    }

    #[test]
    fn distinct_owners_disjoint_zones_or_label_boundaries_do_not_conflict() {
        let a = provider("a", 10, "me", &["example.com"]);
        assert!(conflicts(&[&a, &provider("b", 20, "other", &["example.com"])]).is_empty());
        assert!(conflicts(&[&a, &provider("c", 20, "me", &["example.org"])]).is_empty());
        assert!(conflicts(&[&a, &provider("d", 20, "me", &["badexample.com"])]).is_empty());
        let everything = provider("e", 20, "me", &[]);
        assert_eq!(conflicts(&[&a, &everything]).len(), 1, "no filter covers every zone");
        let mut deleting = provider("f", 5, "me", &["example.com"]);
        deleting.deleting = true;
        assert!(
            conflicts(&[&a, &deleting]).is_empty(),
            "a provider going away is not in the way"
        );
    }
}
