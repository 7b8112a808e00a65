//! `extdns explain NAME|OBJECT`: why a name is (or is not) in DNS (docs/explain.md).
//!
//! For a DNS name: the objects asking for it, the provider's zone it falls in (or the filter that keeps it
//! out), what the zone holds there and whose it is, where each object's request stands (published,
//! pending, filtered by which flag, conflicting with which object or owner, invalid, held), and what the
//! next sync would do there. For an object (`service/shop/web`), the same for each of its names, and what
//! it asked for that never became a record.
//!
//! Not a second planner: one dry-run sync ([`crate::dry_run`], which `extdns plan` shares) over the live
//! cluster and zone, or over `--manifests`, and the names' outcomes the controller itself computes. What
//! a dry run cannot know is what only a write finds out: a provider refusing a record (a DNS server's
//! update policy, an API's validation) shows as pending here, and as refused on the object's status and
//! in `/summary` once the running controller has tried.
//!
//! Exit codes, for a CI job to gate on: 0 when everything asked is published or will be at the next sync,
//! [`EXIT_NOT_PUBLISHED`] otherwise, 1 on error.

mod model;
pub(crate) mod render;

use std::io::Write;

use extdns_informer::{ObjectKey, ResourceKind};

use crate::dry_run::dry_run_as;
use crate::flags::OutputFormat;
use crate::providers::build_provider;
use crate::settings::Settings;
pub use model::{Asker, Dropped, Explanation, NameReport, NextChange, Target, ZoneRecord, explain, will_publish};
pub use render::{blocks as render_blocks, json as render_json, table as render_table};

/// The exit code when something asked is not published and will not be at the next sync (filtered,
/// conflicting, invalid, held, refused, no zone, or nothing asks for the name).
pub const EXIT_NOT_PUBLISHED: u8 = 3;

/// What `extdns explain` refuses to look up.
#[derive(Debug, thiserror::Error)]
pub enum ExplainError {
    /// `kind/namespace/name` with a kind no source reads.
    #[error(
        "{query:?}: unknown kind {kind:?} (service, ingress, httproute, dnsendpoint, or another kind as the \
         `resource` label spells it)"
    )]
    UnknownKind {
        /// What was asked.
        query: String,
        /// The kind part.
        kind: String,
    },
    /// An object not spelled `kind/namespace/name` (`kind/name` for a cluster-scoped kind).
    #[error("{0:?}: an object is kind/namespace/name (kind/name for a cluster-scoped kind, e.g. node/worker-1)")]
    BadObject(String),
    /// Neither a name nor an object.
    #[error("{0:?}: not a DNS name nor an object (kind/namespace/name)")]
    Empty(String),
    /// The JSON could not be written.
    #[error("cannot render the explanation as JSON: {0}")]
    Json(#[source] serde_json::Error),
}

impl Target {
    /// A DNS name (no `/`), or an object as its `resource` label spells it, `dnsendpoint/…` also accepted
    /// for `crd/…`.
    pub fn parse(query: &str) -> Result<Target, ExplainError> {
        let query = query.trim();
        if query.is_empty() || query == "." {
            return Err(ExplainError::Empty(query.to_string()));
        }
        let Some((kind, rest)) = query.split_once('/') else {
            return Ok(Target::Name(query.to_string()));
        };
        let lower = kind.to_ascii_lowercase();
        let kind = match lower.as_str() {
            "dnsendpoint" | "dnsendpoints" => Some(ResourceKind::DnsEndpoint),
            other => ResourceKind::from_lowercase(other),
        }
        .ok_or_else(|| ExplainError::UnknownKind {
            query: query.to_string(),
            kind: kind.to_string(),
        })?;
        let (namespace, name) = if kind.cluster_scoped() {
            ("", rest)
        } else {
            rest.split_once('/')
                .ok_or_else(|| ExplainError::BadObject(query.to_string()))?
        };
        if name.is_empty() || name.contains('/') || (!kind.cluster_scoped() && namespace.is_empty()) {
            return Err(ExplainError::BadObject(query.to_string()));
        }
        Ok(Target::Object(ObjectKey::new(kind, namespace, name)))
    }
}

/// The exit code of an explanation.
pub fn exit_code(e: &Explanation) -> u8 {
    if e.published { 0 } else { EXIT_NOT_PUBLISHED }
}

/// One dry-run sync with `provider`, explained for `query`.
pub async fn explain_with(
    settings: &Settings,
    provider: std::sync::Arc<dyn extdns_provider::Provider>,
    query: &str,
) -> anyhow::Result<Explanation> {
    explain_as(settings, provider, query, settings.provider.name()).await
}

/// [`explain_with`], the provider named `label` (a provider object's, with `--dns-provider-crds`).
pub async fn explain_as(
    settings: &Settings,
    provider: std::sync::Arc<dyn extdns_provider::Provider>,
    query: &str,
    label: &str,
) -> anyhow::Result<Explanation> {
    let target = Target::parse(query)?;
    let run = dry_run_as(settings, provider, label).await?;
    Ok(explain(query, &target, &run, &settings.controller.plan, label))
}

/// The command: explain, print in the chosen format, and return the exit code.
pub async fn run(settings: &Settings, query: &str, output: OutputFormat, out: &mut dyn Write) -> anyhow::Result<u8> {
    // Refused before anything is read.
    Target::parse(query)?;
    let provider = build_provider(&settings.provider).await?;
    let explanation = explain_with(settings, provider, query).await?;
    let text = match output {
        OutputFormat::Table => render_table(&explanation),
        OutputFormat::Json => render_json(&explanation).map_err(ExplainError::Json)?,
    };
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(exit_code(&explanation))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use extdns_controller::Metrics;
    use extdns_provider::{InMemoryProvider, Provider};
    use extdns_registry::{Registry, RegistryError};

    fn object(query: &str) -> Option<String> {
        match Target::parse(query) {
            Ok(Target::Object(key)) => Some(key.resource_label()),
            _ => None,
        }
    }

    #[test]
    fn a_query_is_a_name_or_an_object_as_its_resource_label_spells_it() {
        assert_eq!(
            Target::parse(" www.example.org ").ok(),
            Some(Target::Name("www.example.org".into()))
        );
        assert_eq!(object("service/shop/web").as_deref(), Some("service/shop/web"));
        assert_eq!(object("Ingress/shop/site").as_deref(), Some("ingress/shop/site"));
        assert_eq!(object("httproute/shop/app").as_deref(), Some("httproute/shop/app"));
        // DNSEndpoint's label is `crd`; both spellings name it.
        assert_eq!(object("dnsendpoint/shop/recs").as_deref(), Some("crd/shop/recs"));
        assert_eq!(object("crd/shop/recs").as_deref(), Some("crd/shop/recs"));
        assert_eq!(object("node/worker-1").as_deref(), Some("node/worker-1"));
    }

    #[test]
    fn a_query_that_names_nothing_is_refused_saying_why() {
        let error = |q: &str| Target::parse(q).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(error("widget/shop/web").contains("unknown kind \"widget\""));
        assert!(error("service/web").contains("kind/namespace/name"));
        assert!(error("service/shop/").contains("kind/namespace/name"));
        assert!(error("service//web").contains("kind/namespace/name"));
        assert!(error("service/a/b/c").contains("kind/namespace/name"));
        assert!(error("  ").contains("not a DNS name"));
    }

    #[tokio::test]
    async fn a_dry_run_that_cannot_tell_what_the_registry_withholds_says_so_for_the_names_concerned()
    -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let manifests = dir.path().join("web.yaml");
        std::fs::write(
            &manifests,
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: default\n  annotations:\n    \
             external-dns.kubernetes.io/hostname: web.example.com\nspec:\n  type: LoadBalancer\nstatus:\n  \
             loadBalancer:\n    ingress:\n      - ip: 192.0.2.1\n",
        )?;
        let manifests = format!("--manifests={}", manifests.display());
        let cli = crate::flags::try_parse_from([
            "extdns",
            "--source=service",
            "--provider=inmemory",
            "--txt-owner-id=explain",
            manifests.as_str(),
        ])?;
        let settings = crate::settings::controller(&cli.flags)?;
        let provider: Arc<dyn Provider> =
            Arc::new(InMemoryProvider::with_records(vec!["example.com".into()], Vec::new()));
        let metrics = Arc::new(Metrics::new("test", "test"));
        let registry = extdns_wiring::registry_for(&settings, provider, &metrics).await?;
        let registry: Arc<dyn Registry> = Arc::new(extdns_test_support::registry::WithheldFails(registry));
        let run = crate::dry_run::dry_run_on(&settings, registry, None, "inmemory", metrics).await?;
        let error = RegistryError::EncryptionWithoutKey.to_string();
        assert_eq!(run.report.withheld_unknown.as_deref(), Some(error.as_str()));

        // explain, by name and by object, in text and JSON.
        let said = format!("could not work out whether the registry withholds the changes at web.example.com: {error}");
        for query in ["web.example.com", "service/default/web"] {
            let target = Target::parse(query)?;
            let e = explain(query, &target, &run, &settings.controller.plan, "inmemory");
            assert_eq!(e.names[0].withheld_unknown.as_deref(), Some(said.as_str()), "{query}");
            assert!(
                render_table(&e).contains(&format!("  registry:  {said}\n")),
                "{}",
                render_table(&e)
            );
            let json: serde_json::Value = serde_json::from_str(&render_json(&e)?)?;
            assert_eq!(json["names"][0]["withheldUnknown"], said.as_str());
        }
        // A name with nothing to send: nothing to say.
        let e = explain(
            "other.example.com",
            &Target::parse("other.example.com")?,
            &run,
            &settings.controller.plan,
            "inmemory",
        );
        assert_eq!(e.names[0].withheld_unknown, None);
        // plan, which prints the same sync's report.
        let table = crate::plan::render_table(&run.report, "explain");
        assert!(
            table.contains(&format!(
                "could not work out whether the registry withholds web.example.com: {error}"
            )),
            "{table}"
        );
        Ok(())
    }
}
