//! What the health prober's fail-open rule asks of a read (docs/shared-names.md, "Health"): whether any
//! other owner publishes targets at a shared record. An owner withdraws all of its own targets only while
//! another owner's keep the name answering.

use extdns_endpoint::RecordType;

use super::view::SharedView;
use crate::Snapshot;

/// Whether an owner other than `owner` contributes targets to the shared record `name` of `record_type`
/// in `snapshot` (a read of the shared registry); false for a snapshot of another registry.
pub fn others_contribute(snapshot: &Snapshot, name: &str, record_type: &RecordType, owner: &str) -> bool {
    let Some(view) = snapshot.registry_state::<SharedView>() else {
        return false;
    };
    view.contributions
        .get(&(name.to_ascii_lowercase(), record_type.clone()))
        .is_some_and(|by_owner| {
            by_owner
                .values()
                .any(|s| s.value.owner != owner && !s.value.targets.is_empty())
        })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use extdns_endpoint::{Endpoint, RecordType};
    use extdns_provider::InMemoryProvider;

    use super::*;
    use crate::shared::{SharedConfig, SharedRegistry};
    use crate::{Ownership, OwnershipConfig, Registry, TxtRegistry, TxtRegistryConfig};

    fn contribution(owner: &str, targets: &str) -> Endpoint {
        let value = format!(
            "\"heritage=extdns-shared,kind=targets,owner={owner},record=web.example.org,type=A,targets={targets}\""
        );
        Endpoint::new(
            &format!("{owner}._extdns-shared.a-web.example.org"),
            RecordType::Txt,
            [value],
        )
    }

    #[tokio::test]
    async fn only_another_owners_targets_count() -> Result<(), Box<dyn std::error::Error>> {
        let records = vec![
            Endpoint::new("web.example.org", RecordType::A, ["192.0.2.1", "192.0.2.2"]),
            contribution("cluster-a", "192.0.2.1"),
            contribution("cluster-b", "192.0.2.2"),
        ];
        let provider = Arc::new(InMemoryProvider::with_records(vec!["example.org".into()], records));
        let ownership = Ownership::new(OwnershipConfig {
            owner_id: "cluster-a".into(),
            ..OwnershipConfig::default()
        })?;
        let txt = Arc::new(TxtRegistry::new(
            provider.clone(),
            TxtRegistryConfig::new(ownership.clone()),
        ));
        let registry = SharedRegistry::new(txt.clone(), provider, &ownership, SharedConfig::default())?;
        let snapshot = registry.records().await?;
        assert!(others_contribute(
            &snapshot,
            "Web.example.org",
            &RecordType::A,
            "cluster-a"
        ));
        assert!(!others_contribute(
            &snapshot,
            "web.example.org",
            &RecordType::Aaaa,
            "cluster-a"
        ));
        assert!(!others_contribute(
            &snapshot,
            "other.example.org",
            &RecordType::A,
            "cluster-a"
        ));
        // cluster-b's view: cluster-a's target counts for it.
        assert!(others_contribute(
            &snapshot,
            "web.example.org",
            &RecordType::A,
            "cluster-b"
        ));
        // A read of the plain TXT registry knows no shared names.
        assert!(!others_contribute(
            &txt.records().await?,
            "web.example.org",
            &RecordType::A,
            "cluster-b"
        ));
        Ok(())
    }
}
