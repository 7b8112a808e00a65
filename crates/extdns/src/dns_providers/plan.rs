//! `extdns plan --dns-provider-crds`: what the next sync of each provider object's pipeline would change,
//! each pipeline built as the manager builds it (its command line, its Secret, its route) and planned as
//! `extdns plan` plans one provider (a dry run of one sync). The provider objects and their Secrets come
//! from the API server, or from `--manifests` with the cluster's other objects.

use std::io::Write;

use extdns_controller::SyncReport;
use extdns_dnsprovider::ProviderObject;
use extdns_provider_manager::{SecretError, Secrets, list_objects, manifest_objects};

use super::args::provider_settings;
use crate::flags::OutputFormat;
use crate::settings::fleet::FleetSettings;
use crate::settings::{Settings, ValidationError};
use crate::{EXIT_FAILURE, plan};

/// Why one provider is left out of the plan (or of the explanation).
#[derive(Debug, thiserror::Error)]
pub(super) enum LeftOut {
    /// Its Secret cannot be read, found or used.
    #[error(transparent)]
    Secret(#[from] SecretError),
    /// Its settings are refused.
    #[error(transparent)]
    Settings(#[from] ValidationError),
    /// Its dry-run sync failed.
    #[error("{message}")]
    Sync {
        /// The error and its causes on one line.
        message: String,
        /// The error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// Plans every provider object's pipeline; prints the changes with their provider on `out`, each provider
/// left out (and why) on `err`. The exit code is `extdns plan`'s: 1 when a provider could not be planned,
/// else 2 when one would change its zone, else 0.
pub async fn run(
    fleet: &FleetSettings,
    manifests: &[std::path::PathBuf],
    output: OutputFormat,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    let (objects, refused, secrets) = load(fleet, manifests).await?;
    let mut failed = !refused.is_empty();
    for why in &refused {
        writeln!(err, "provider left out: {why}")?;
    }
    let mut reports: Vec<(String, SyncReport, String)> = Vec::new();
    for object in objects.iter().filter(|o| !o.deleting) {
        match plan_one(fleet, &secrets, object).await {
            Ok((report, owner)) => reports.push((object.id.label(), report, owner)),
            Err(why) => {
                failed = true;
                writeln!(err, "provider left out: {}: {why}", object.id)?;
            }
        }
    }
    let text = match output {
        OutputFormat::Table => plan::render_table_by_provider(&reports),
        OutputFormat::Json => plan::render_json_by_provider(&reports),
    };
    out.write_all(text.as_bytes())?;
    out.flush()?;
    if failed {
        return Ok(EXIT_FAILURE);
    }
    Ok(reports.iter().map(|(_, r, _)| plan::exit_code(r)).max().unwrap_or(0))
}

/// The provider objects (and their Secrets) from the API server, or from `manifests` when there are any; with
/// each object refused as it was read, and why.
pub(super) async fn load(
    fleet: &FleetSettings,
    manifests: &[std::path::PathBuf],
) -> anyhow::Result<(Vec<ProviderObject>, Vec<String>, Secrets)> {
    Ok(if manifests.is_empty() {
        let client = crate::run::kube_client(&fleet.kube).await?;
        let namespace = crate::run::pod_namespace(&client);
        let (objects, refused) = list_objects(&client).await;
        (objects, refused, Secrets::Api { client, namespace })
    } else {
        manifest_objects(manifests, &fleet.sources.load_options)?
    })
}

/// One provider object's settings, as the manager would build its pipeline: its Secret read, its flags applied.
pub(super) async fn settings_of(
    fleet: &FleetSettings,
    secrets: &Secrets,
    object: &ProviderObject,
) -> Result<Settings, LeftOut> {
    let credentials = secrets.credentials(object).await?;
    Ok(provider_settings(fleet, object, &credentials)?)
}

/// One provider's dry-run sync and its owner id.
async fn plan_one(
    fleet: &FleetSettings,
    secrets: &Secrets,
    object: &ProviderObject,
) -> Result<(SyncReport, String), LeftOut> {
    let settings = settings_of(fleet, secrets, object).await?;
    let report = plan::plan(&settings).await.map_err(|e| LeftOut::Sync {
        message: crate::error_text(&e),
        source: e.into(),
    })?;
    Ok((report, settings.controller.plan.owner_id.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use extdns_endpoint::{Endpoint, RecordType};

    #[tokio::test]
    async fn each_provider_is_planned_over_its_own_records_and_one_left_out_says_why() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let line = super::super::tests::manifests_line(
            "plan",
            dir.path(),
            &[
                super::super::tests::INTERNAL_PROVIDER,
                r#"
apiVersion: externaldns.k8s.io/v1alpha1
kind: DNSProvider
metadata: { name: zone, namespace: team-a }
spec:
  type: cloudflare
  domainFilter: { include: [team-a.example.com] }
  credentialsRef: { name: missing }
---
"#,
                super::super::tests::WEB_SERVICE,
            ]
            .concat(),
        )?;
        let cli = crate::flags::try_parse_from(&line)?;
        let flags = super::super::args::command_flags(cli);
        let fleet = crate::settings::fleet::for_plan(&flags, &line)?;
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run(&fleet, &flags.offline.manifests, OutputFormat::Json, &mut out, &mut err).await?;
        let err = String::from_utf8(err)?;
        assert_eq!(code, EXIT_FAILURE, "a provider left out fails the command");
        assert!(
            err.contains("DNSProvider/team-a/zone") && err.contains("team-a/missing"),
            "{err}"
        );
        let docs: serde_json::Value = serde_json::from_slice(&out)?;
        assert_eq!(docs.as_array().map(Vec::len), Some(1), "{docs}");
        assert_eq!(docs[0]["provider"], "internal");
        let created: Vec<(&str, &str)> = docs[0]["changes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| (c["name"].as_str().unwrap_or(""), c["owner"].as_str().unwrap_or("")))
            .filter(|(n, _)| *n == "web.example.org")
            .collect();
        assert_eq!(created, [("web.example.org", "internal")], "{docs}");
        let table = plan::render_table_by_provider(&[(
            "internal".into(),
            SyncReport {
                changes: vec![extdns_endpoint::Change::Create(Endpoint::new(
                    "web.example.org",
                    RecordType::A,
                    ["10.0.0.1"],
                ))],
                ..SyncReport::default()
            },
            "internal".into(),
        )]);
        assert!(table.starts_with("PROVIDER   ACTION"), "{table}");
        assert!(table.contains("internal: 1 change: 1 to create"), "{table}");
        Ok(())
    }
}
