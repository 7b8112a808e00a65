//! `extdns plan`'s section on shared names (issue 47, docs/shared-names.md): each owner's contribution to
//! each shared record in the zones, its heartbeat's age, and which owners this owner's next upkeep would
//! prune. Previewed from the read the plan's dry-run sync made (`crate::dry_run`); nothing is written.

use std::fmt::Write as _;
use std::sync::Arc;

use extdns_provider::Provider;
use extdns_registry::OwnershipStore;
use extdns_registry::shared::{SharedName, SharedRegistry};
use extdns_wiring::RegistrySettings;
use serde::Serialize;

/// The shared layer that previews a read's shared names for `extdns plan` (over the same provider and
/// settings as the registry the sync reads through, so it understands that registry's snapshots); `None`
/// when the registry keeps none (a registry other than `txt`, or `--txt-ownership=metadata`). It reads
/// nothing itself: [`SharedRegistry::preview`] works from the sync's own read.
pub fn previewer(settings: &RegistrySettings, provider: Arc<dyn Provider>) -> anyhow::Result<Option<SharedRegistry>> {
    let RegistrySettings::Txt(config) = settings else {
        return Ok(None);
    };
    if config.store != OwnershipStore::Txt {
        return Ok(None);
    }
    Ok(Some(extdns_wiring::shared_registry(config, provider)?))
}

/// The section as text: one block per shared record, one line per owner; empty without shared records.
pub fn render(names: &[SharedName], owner_id: &str) -> String {
    if names.is_empty() {
        return String::new();
    }
    let mut out = String::from("\nShared names (each owner's targets; the record holds their union):\n");
    for n in names {
        let published = if n.published.is_empty() {
            "(missing)".to_string()
        } else {
            n.published.join(" ")
        };
        let _ = writeln!(out, "  {} {}  published: {published}", n.name, n.record_type);
        if let Some(plain) = &n.plain_owner {
            let _ = writeln!(
                out,
                "    CONFLICT: a plain ownership record (owner {plain}) beside the shared owners; nothing is written"
            );
        }
        for o in &n.owners {
            let age = o
                .heartbeat_age
                .map_or("no heartbeat".to_string(), |s| format!("heartbeat {s}s ago"));
            let me = if o.owner == owner_id { " (this owner)" } else { "" };
            let prune = if o.pruned { "  -> would be pruned" } else { "" };
            let unhealthy = if o.unhealthy.is_empty() {
                String::new()
            } else {
                format!(" (unhealthy: {})", o.unhealthy.join(" "))
            };
            let _ = writeln!(
                out,
                "    {}{me}: {}{unhealthy}  [{age}]{prune}",
                o.owner,
                o.targets.join(" ")
            );
        }
    }
    out
}

/// One shared record in `--output json`: the section of the table as data, with external-dns's casing.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct NameJson<'a> {
    dns_name: &'a str,
    record_type: &'a str,
    /// The targets the record holds now; empty when it is missing.
    published: &'a [String],
    /// A plain ownership record's owner beside the shared ones: nothing is written for the name.
    #[serde(skip_serializing_if = "Option::is_none")]
    conflict_plain_owner: Option<&'a str>,
    owners: Vec<OwnerJson<'a>>,
}

/// One owner's contribution to a shared record.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct OwnerJson<'a> {
    owner: &'a str,
    /// Whether it is the owner running the plan.
    this_owner: bool,
    targets: &'a [String],
    /// Those of `targets` its health checks find unhealthy; left out when none is.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    unhealthy: &'a [String],
    /// Seconds since its heartbeat in the record's domain; `null` without one.
    heartbeat_age_seconds: Option<u64>,
    /// Whether this owner's next upkeep would prune it.
    would_be_pruned: bool,
}

/// The section as JSON, for `"shared"` in the plan's document: an array of one object per shared record;
/// `None` without shared records, so a plan without them keeps its document as it was.
pub fn to_json(names: &[SharedName], owner_id: &str) -> Option<serde_json::Value> {
    if names.is_empty() {
        return None;
    }
    let names: Vec<NameJson<'_>> = names
        .iter()
        .map(|n| NameJson {
            dns_name: &n.name,
            record_type: n.record_type.as_str(),
            published: &n.published,
            conflict_plain_owner: n.plain_owner.as_deref(),
            owners: n
                .owners
                .iter()
                .map(|o| OwnerJson {
                    owner: &o.owner,
                    this_owner: o.owner == owner_id,
                    targets: &o.targets,
                    unhealthy: &o.unhealthy,
                    heartbeat_age_seconds: o.heartbeat_age,
                    would_be_pruned: o.pruned,
                })
                .collect(),
        })
        .collect();
    // Plain data of strings, numbers and booleans: serialising it cannot fail.
    serde_json::to_value(names).ok()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use extdns_endpoint::{Endpoint, RecordType};
    use extdns_provider::InMemoryProvider;
    use extdns_registry::{Ownership, OwnershipConfig, Registry, TxtRegistryConfig};

    use super::*;

    fn txt(name: &str, value: &str) -> Endpoint {
        Endpoint::new(name, RecordType::Txt, [value])
    }

    /// The shared names of a zone where `cluster-a` and `cluster-b` each contribute one target, neither
    /// with a heartbeat, as `cluster-a` reads them.
    async fn two_owners() -> anyhow::Result<Vec<SharedName>> {
        let records = vec![
            Endpoint::new("web.example.org", RecordType::A, ["192.0.2.1", "192.0.2.2"]),
            txt(
                "cluster-a._extdns-shared.a-web.example.org",
                "\"heritage=extdns-shared,kind=targets,owner=cluster-a,record=web.example.org,type=A,targets=192.0.2.1\"",
            ),
            txt(
                "cluster-b._extdns-shared.a-web.example.org",
                "\"heritage=extdns-shared,kind=targets,owner=cluster-b,record=web.example.org,type=A,targets=192.0.2.2\"",
            ),
        ];
        previewed(Arc::new(InMemoryProvider::with_records(
            vec!["example.org".into()],
            records,
        )))
        .await
    }

    /// What `cluster-a` previews of the shared names `provider` holds.
    async fn previewed(provider: Arc<dyn Provider>) -> anyhow::Result<Vec<SharedName>> {
        let mut config = OwnershipConfig::default();
        config.owner_id = "cluster-a".into();
        let ownership = Ownership::new(config)?;
        let settings = RegistrySettings::Txt(Box::new(TxtRegistryConfig::new(ownership)));
        let previewer = previewer(&settings, provider)?.ok_or_else(|| anyhow::anyhow!("no shared layer"))?;
        Ok(previewer.preview(&previewer.records().await?))
    }

    #[tokio::test]
    async fn the_section_names_each_owners_targets_and_the_union() -> anyhow::Result<()> {
        let names = two_owners().await?;
        let text = render(&names, "cluster-a");
        assert!(
            text.contains("web.example.org A  published: 192.0.2.1 192.0.2.2"),
            "{text}"
        );
        // Neither owner has a heartbeat: a missing heartbeat is no evidence of death, so neither would be
        // pruned (fail open).
        assert!(
            text.contains("cluster-a (this owner): 192.0.2.1  [no heartbeat]\n"),
            "{text}"
        );
        assert!(text.contains("cluster-b: 192.0.2.2  [no heartbeat]\n"), "{text}");
        assert!(!text.contains("would be pruned"), "{text}");
        assert_eq!(render(&[], "cluster-a"), "");
        Ok(())
    }

    #[tokio::test]
    async fn the_json_section_carries_what_the_table_shows() -> anyhow::Result<()> {
        // As in the table: no heartbeat read is no evidence of death, so nobody would be pruned.
        let names = two_owners().await?;
        let json = to_json(&names, "cluster-a");
        assert_eq!(
            json,
            Some(serde_json::json!([{
                "dnsName": "web.example.org",
                "recordType": "A",
                "published": ["192.0.2.1", "192.0.2.2"],
                "owners": [
                    {"owner": "cluster-a", "thisOwner": true, "targets": ["192.0.2.1"],
                     "heartbeatAgeSeconds": null, "wouldBePruned": false},
                    {"owner": "cluster-b", "thisOwner": false, "targets": ["192.0.2.2"],
                     "heartbeatAgeSeconds": null, "wouldBePruned": false},
                ],
            }]))
        );
        assert_eq!(to_json(&[], "cluster-a"), None);
        // In the plan's document, after what it had: the section under "shared", absent without one.
        let report = extdns_controller::SyncReport::default();
        let doc: serde_json::Value = serde_json::from_str(&crate::plan::render_json_with_shared(
            &report,
            "cluster-a",
            json.clone(),
        ))?;
        assert_eq!(doc.get("shared"), json.as_ref());
        let doc: serde_json::Value =
            serde_json::from_str(&crate::plan::render_json_with_shared(&report, "cluster-a", None))?;
        assert_eq!(doc.get("shared"), None);
        Ok(())
    }

    /// The in-memory zone, counting its reads.
    struct CountingReads {
        inner: InMemoryProvider,
        reads: std::sync::atomic::AtomicUsize,
    }

    #[async_trait::async_trait]
    impl Provider for CountingReads {
        async fn records(&self) -> Result<extdns_provider::Records, extdns_provider::ProviderError> {
            self.reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.inner.records().await
        }
        async fn apply(
            &self,
            read: &extdns_provider::ReadState,
            units: &[extdns_provider::Unit<'_>],
        ) -> Result<(), extdns_provider::ProviderError> {
            self.inner.apply(read, units).await
        }
        fn domain_filter(&self) -> extdns_endpoint::DomainFilter {
            self.inner.domain_filter()
        }
        fn placement(&self, read: &extdns_provider::ReadState, name: &str) -> extdns_provider::zone::Placement {
            self.inner.placement(read, name)
        }
    }

    #[tokio::test]
    async fn a_plan_with_shared_names_reads_the_zone_once() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        std::fs::write(
            dir.path().join("web.yaml"),
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: default\n  annotations:\n    \
             external-dns.kubernetes.io/hostname: web.example.org\n    external-dns.kubernetes.io/shared: \"true\"\n\
             spec:\n  type: LoadBalancer\n  clusterIP: 10.96.0.1\n  ports:\n    - port: 80\nstatus:\n  \
             loadBalancer:\n    ingress:\n      - ip: 192.0.2.1\n",
        )?;
        let records = vec![
            Endpoint::new("web.example.org", RecordType::A, ["192.0.2.1", "192.0.2.2"]),
            txt(
                "cluster-a._extdns-shared.a-web.example.org",
                "\"heritage=extdns-shared,kind=targets,owner=cluster-a,record=web.example.org,type=A,resource=service/default/web,targets=192.0.2.1\"",
            ),
            txt(
                "cluster-b._extdns-shared.a-web.example.org",
                "\"heritage=extdns-shared,kind=targets,owner=cluster-b,record=web.example.org,type=A,targets=192.0.2.2 192.0.2.3,unhealthy=192.0.2.3\"",
            ),
        ];
        let provider = Arc::new(CountingReads {
            inner: InMemoryProvider::with_records(vec!["example.org".into()], records),
            reads: std::sync::atomic::AtomicUsize::new(0),
        });
        let manifests = dir.path().to_str().ok_or_else(|| anyhow::anyhow!("path"))?;
        let cli = crate::flags::try_parse_from([
            "extdns",
            "--source=service",
            "--provider=inmemory",
            "--policy=sync",
            "--txt-owner-id=cluster-a",
            "--manifests",
            manifests,
        ])?;
        let settings = crate::settings::controller(&cli.flags)?;
        let mut out = Vec::new();
        let code =
            crate::plan::run_with(&settings, provider.clone(), crate::flags::OutputFormat::Json, &mut out).await?;
        // One read serves the sync and the shared section: the provider was read once, for its one zone.
        assert_eq!(provider.reads.load(std::sync::atomic::Ordering::Relaxed), 1);
        let doc: serde_json::Value = serde_json::from_slice(&out)?;
        assert_eq!(code, 0, "{doc}");
        assert_eq!(doc["shared"][0]["dnsName"], "web.example.org", "{doc}");
        assert_eq!(
            doc["shared"][0]["published"],
            serde_json::json!(["192.0.2.1", "192.0.2.2"])
        );
        let owners: Vec<&str> = doc["shared"][0]["owners"]
            .as_array()
            .ok_or_else(|| anyhow::anyhow!("owners: {doc}"))?
            .iter()
            .filter_map(|o| o["owner"].as_str())
            .collect();
        assert_eq!(owners, ["cluster-a", "cluster-b"]);
        // Each owner's health verdict, where it has one.
        assert_eq!(doc["shared"][0]["owners"][0].get("unhealthy"), None, "{doc}");
        assert_eq!(
            doc["shared"][0]["owners"][1]["unhealthy"],
            serde_json::json!(["192.0.2.3"])
        );
        let text = render(&previewed(provider).await?, "cluster-a");
        assert!(
            text.contains("cluster-b: 192.0.2.2 192.0.2.3 (unhealthy: 192.0.2.3)  [no heartbeat]\n"),
            "{text}"
        );
        Ok(())
    }
}
