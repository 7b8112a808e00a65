//! The whole sync, as the default command wires it (manifests → sources → TXT registry → in-memory
//! provider), checked on the provider's records: what is created, kept, deleted, and never touched.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use extdns::flags::try_parse_from;
use extdns::providers::build_provider;
use extdns::run::{build_cluster, controller_with_cluster, controller_with_pipeline, run_once_with, watched_kinds};
use extdns::settings::{self, Settings};
use extdns::wiring::{build_sources, default_resolver};
use extdns_controller::{Metrics, SyncError};
use extdns_endpoint::{Change, Changes, Endpoint, RecordType};
use extdns_informer::{ClusterStore, ResourceKind};
use extdns_informer::{LiveCluster, LiveOptions};
use extdns_provider::{InMemoryProvider, Provider};
use extdns_source::{Evaluation, Objects, Pipeline, Source, SourceError};

type Error = Box<dyn std::error::Error>;

/// The controller's settings from these arguments.
fn controller_settings(args: &[&str]) -> Result<Settings, Error> {
    let cli = try_parse_from(std::iter::once("extdns").chain(args.iter().copied()))?;
    Ok(settings::controller(&cli.flags)?)
}

/// The controller settings over the manifests in `dir`, plus `extra`.
fn settings_over(dir: &Path, extra: &[&str]) -> Result<Settings, Error> {
    let dir = dir.to_str().ok_or("path")?;
    let mut args = vec![
        "--source=service",
        "--provider=inmemory",
        "--policy=sync",
        "--manifests",
        dir,
    ];
    args.extend_from_slice(extra);
    controller_settings(&args)
}

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// A LoadBalancer Service publishing `host` at `ip`.
fn service(name: &str, host: &str, ip: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: {name}\n  namespace: default\n  annotations:\n    \
         external-dns.kubernetes.io/hostname: {host}\nspec:\n  type: LoadBalancer\n  clusterIP: 10.96.0.1\n  \
         ports:\n    - port: 80\nstatus:\n  loadBalancer:\n    ingress:\n      - ip: {ip}\n"
    )
}

/// Writes `docs` as the only manifests of `dir`.
fn write_manifests(dir: &Path, docs: &[String]) -> Result<(), Error> {
    for entry in std::fs::read_dir(dir)? {
        std::fs::remove_file(entry?.path())?;
    }
    std::fs::write(dir.join("objects.yaml"), docs.join("---\n"))?;
    Ok(())
}

/// `name type targets` of every record the provider holds, TXT ownership records included.
fn records(p: &InMemoryProvider) -> BTreeSet<String> {
    p.snapshot().iter().map(describe).collect()
}

fn describe(e: &Endpoint) -> String {
    format!("{} {} {}", e.dns_name, e.record_type, e.targets.join(","))
}

fn names_of(p: &InMemoryProvider, record_type: RecordType) -> BTreeSet<String> {
    p.snapshot()
        .into_iter()
        .filter(|e| e.record_type == record_type)
        .map(|e| e.dns_name)
        .collect()
}

/// An in-memory provider holding no records, as every test starts.
fn empty_provider() -> Arc<InMemoryProvider> {
    Arc::new(InMemoryProvider::new(vec![]))
}

/// Services `web` (web.example.com at 203.0.113.10) and `api` (api.example.com at 203.0.113.11).
fn web_and_api() -> [String; 2] {
    [
        service("web", "web.example.com", "203.0.113.10"),
        service("api", "api.example.com", "203.0.113.11"),
    ]
}

/// [`web_and_api`] synced into an [`empty_provider`] with `extra` flags: the manifests' directory, the
/// provider and the settings.
async fn web_and_api_synced(extra: &[&str]) -> Result<(tempfile::TempDir, Arc<InMemoryProvider>, Settings), Error> {
    let dir = tempfile::tempdir()?;
    let provider = empty_provider();
    let f = settings_over(dir.path(), extra)?;
    write_manifests(dir.path(), &web_and_api())?;
    run_once_with(&f, as_provider(&provider)).await?;
    Ok((dir, provider, f))
}

/// The examples synced into an [`empty_provider`] with `extra` flags: the provider, the settings, and the
/// records and write count a sync that must change nothing has to leave as they are.
async fn examples_synced(extra: &[&str]) -> Result<(Arc<InMemoryProvider>, Settings, BTreeSet<String>, usize), Error> {
    let provider = empty_provider();
    let f = settings_over(&examples(), extra)?;
    run_once_with(&f, as_provider(&provider)).await?;
    let records = records(&provider);
    assert!(!records.is_empty());
    let writes = provider.apply_calls();
    Ok((provider, f, records, writes))
}

fn as_provider(p: &Arc<InMemoryProvider>) -> Arc<dyn Provider> {
    p.clone()
}

#[tokio::test]
async fn first_sync_creates_records_with_their_txt_and_second_changes_nothing() -> Result<(), Error> {
    let provider = empty_provider();
    let f = settings_over(&examples(), &[])?;

    let first = run_once_with(&f, as_provider(&provider)).await?;
    assert!(first.applied);
    assert!(!four(&first.changes).create.is_empty());
    let a_names = names_of(&provider, RecordType::A);
    assert!(a_names.contains("web.example.com"), "{a_names:?}");
    assert!(records(&provider).contains("web.example.com A 203.0.113.10"));
    // Every record the plan created has its ownership TXT record, naming our owner id.
    let txt: Vec<Endpoint> = provider
        .snapshot()
        .into_iter()
        .filter(|e| e.record_type == RecordType::Txt)
        .collect();
    for created in &four(&first.changes).create {
        let owner_record = txt.iter().find(|t| {
            t.dns_name.contains(&created.dns_name) && t.targets.iter().any(|v| v.contains("external-dns/owner=default"))
        });
        assert!(owner_record.is_some(), "no ownership TXT for {created}: {txt:?}");
    }
    let writes = provider.apply_calls();

    let second = run_once_with(&f, as_provider(&provider)).await?;
    assert!(second.changes.is_empty(), "{:?}", second.changes);
    assert!(!second.applied);
    assert_eq!(provider.apply_calls(), writes, "the second sync wrote to the provider");
    Ok(())
}

/// `extdns plan` over a zone a real sync wrote: nothing to change; then each kind of change, with the object
/// responsible, and the zone untouched (the provider is never written).
#[tokio::test]
async fn plan_shows_what_the_next_sync_would_change_without_writing() -> Result<(), Error> {
    let (dir, provider, f) = web_and_api_synced(&["--txt-owner-id=plan-test"]).await?;
    // A record somebody else wrote, at a name the cluster will ask for.
    provider.insert([Endpoint::new("taken.example.com", RecordType::A, ["192.0.2.1"])]);
    let before = records(&provider);
    let writes = provider.apply_calls();

    let none = extdns::plan::plan_with(&f, as_provider(&provider)).await?;
    assert!(none.changes.is_empty(), "{:?}", none.changes);
    assert_eq!(extdns::plan::exit_code(&none), 0);
    assert_eq!((none.not_owned.records, none.not_owned.wanted), (1, 0));

    write_manifests(
        dir.path(),
        &[
            service("web", "web.example.com", "203.0.113.20"),
            service("new", "new.example.com", "203.0.113.12"),
            service("taker", "taken.example.com", "203.0.113.13"),
        ],
    )?;
    let report = extdns::plan::plan_with(&f, as_provider(&provider)).await?;
    assert_eq!(extdns::plan::exit_code(&report), 2);
    let json: serde_json::Value = serde_json::from_str(&extdns::plan::render_json(&report, "plan-test"))?;
    let summary: Vec<String> = json["changes"]
        .as_array()
        .ok_or("changes is not a list")?
        .iter()
        .map(|c| format!("{} {} {} {}", c["action"], c["name"], c["owner"], c["resource"]))
        .collect();
    assert_eq!(
        summary,
        [
            r#""delete" "api.example.com" "plan-test" "service/default/api""#,
            r#""update" "web.example.com" "plan-test" "service/default/web""#,
            r#""create" "new.example.com" "plan-test" "service/default/new""#,
        ]
    );
    assert_eq!(
        json["changes"][1]["old"]["targets"],
        serde_json::json!(["203.0.113.10"])
    );
    assert_eq!(
        json["changes"][1]["new"]["targets"],
        serde_json::json!(["203.0.113.20"])
    );
    assert_eq!(
        (json["notOwned"].as_u64(), json["notOwnedWanted"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(records(&provider), before, "plan changed the zone");
    assert_eq!(provider.apply_calls(), writes, "plan wrote to the provider");
    Ok(())
}

#[tokio::test]
async fn removing_a_service_deletes_exactly_its_records() -> Result<(), Error> {
    let (dir, provider, f) = web_and_api_synced(&[]).await?;
    let before = records(&provider);
    assert!(before.contains("api.example.com A 203.0.113.11"), "{before:?}");

    write_manifests(dir.path(), &[service("web", "web.example.com", "203.0.113.10")])?;
    let report = run_once_with(&f, as_provider(&provider)).await?;
    let deleted: Vec<String> = four(&report.changes).delete.iter().map(describe).collect();
    assert_eq!(deleted, ["api.example.com A 203.0.113.11"]);
    assert!(four(&report.changes).create.is_empty() && four(&report.changes).update_new.is_empty());

    let after = records(&provider);
    let gone: BTreeSet<&String> = before.difference(&after).collect();
    // The A record and its ownership TXT record, nothing else.
    assert!(gone.iter().all(|r| r.contains("api.example.com")), "{gone:?}");
    assert!(
        gone.iter().any(|r| r.contains(" TXT ")),
        "the ownership record stayed: {after:?}"
    );
    assert!(after.contains("web.example.com A 203.0.113.10"));
    assert!(after.is_subset(&before));
    Ok(())
}

#[tokio::test]
async fn records_owned_by_another_owner_id_are_never_touched() -> Result<(), Error> {
    let dir = tempfile::tempdir()?;
    let provider = empty_provider();

    // Another extdns (owner "other-cluster") publishes two names.
    write_manifests(
        dir.path(),
        &[
            service("shared", "shared.example.com", "192.0.2.1"),
            service("theirs", "theirs.example.com", "192.0.2.2"),
        ],
    )?;
    run_once_with(
        &settings_over(dir.path(), &["--txt-owner-id=other-cluster"])?,
        as_provider(&provider),
    )
    .await?;
    let theirs = records(&provider);

    // We want another address at one of their names, and do not want their other name at all.
    write_manifests(
        dir.path(),
        &[
            service("shared", "shared.example.com", "198.51.100.9"),
            service("ours", "ours.example.com", "198.51.100.10"),
        ],
    )?;
    let report = run_once_with(
        &settings_over(dir.path(), &["--txt-owner-id=default"])?,
        as_provider(&provider),
    )
    .await?;
    assert!(
        four(&report.changes).delete.is_empty(),
        "{:?}",
        four(&report.changes).delete
    );
    assert!(
        four(&report.changes).update_new.is_empty(),
        "{:?}",
        four(&report.changes).update_new
    );

    let after = records(&provider);
    assert!(
        theirs.is_subset(&after),
        "a foreign record changed: before {theirs:?}, after {after:?}"
    );
    assert!(after.contains("ours.example.com A 198.51.100.10"));
    assert!(!after.contains("shared.example.com A 198.51.100.9"));
    Ok(())
}

/// A source that cannot produce a usable result (as a source whose view of its objects is broken would).
struct FailingSource;

#[async_trait::async_trait]
impl Source for FailingSource {
    fn name(&self) -> &str {
        "failing"
    }
    fn watched_kinds(&self) -> Vec<ResourceKind> {
        Vec::new()
    }
    async fn evaluate(&self, _: &ClusterStore, _: Objects<'_>) -> Result<Evaluation, SourceError> {
        Err(SourceError::Other {
            source_name: "failing".into(),
            message: "view unavailable".into(),
        })
    }
}

#[tokio::test]
async fn a_source_error_deletes_nothing() -> Result<(), Error> {
    let (provider, f, before, writes) = examples_synced(&["--source=gateway-httproute"]).await?;

    // The real sources succeed, one more fails and so yields no endpoint at all: the sync must stop before
    // planning, or every record the failed source owns would look unwanted.
    let mut sources = build_sources(&f.sources, default_resolver(&f.sources)?);
    sources.push(Box::new(FailingSource));
    let pipeline = Pipeline::new(sources, f.sources.pipeline.clone());
    let cluster = build_cluster(&f, &pipeline).await?;
    let metrics = Arc::new(Metrics::new("test", "test"));
    let controller = controller_with_pipeline(&f, pipeline, cluster, as_provider(&provider), metrics)?;
    let result = controller.run_once().await;
    assert!(
        matches!(result, Err(SyncError::Source(_))),
        "expected a source error, got {result:?}"
    );
    assert_eq!(records(&provider), before);
    assert_eq!(provider.apply_calls(), writes);
    Ok(())
}

#[tokio::test]
async fn an_unsynced_informer_deletes_nothing() -> Result<(), Error> {
    let (provider, _, before, writes) = examples_synced(&[]).await?;

    // A live view whose watchers have not finished their first list: it holds no object yet, which must
    // not read as "every Service is gone".
    let live = controller_settings(&["--source=service", "--provider=inmemory", "--policy=sync"])?;
    let cluster = Arc::new(LiveCluster::detached(&watched_kinds(&live)?, LiveOptions::default()));
    let metrics = Arc::new(Metrics::new("test", "test"));
    let controller = controller_with_cluster(&live, cluster, as_provider(&provider), metrics)?;
    let result = controller.run_once().await;
    assert!(matches!(result, Err(SyncError::NotSynced)), "{result:?}");
    assert_eq!(records(&provider), before);
    assert_eq!(provider.apply_calls(), writes);
    Ok(())
}

#[tokio::test]
async fn dry_run_with_a_provider_that_fails_every_write_succeeds_and_writes_nothing() -> Result<(), Error> {
    let provider = empty_provider();
    provider.fail_all_writes();
    let f = settings_over(&examples(), &["--dry-run"])?;

    let report = run_once_with(&f, as_provider(&provider)).await?;
    assert!(!four(&report.changes).create.is_empty(), "the dry run planned nothing");
    assert!(!report.applied);
    assert_eq!(provider.apply_calls(), 0);
    assert!(provider.snapshot().is_empty());

    // The same provider does fail a real run, so the dry run's success is not an accident.
    let real = run_once_with(&settings_over(&examples(), &[])?, as_provider(&provider)).await;
    assert!(real.is_err());
    Ok(())
}

#[tokio::test]
async fn noop_registry_writes_no_ownership_records() -> Result<(), Error> {
    let provider = empty_provider();
    let f = settings_over(&examples(), &["--registry=noop"])?;
    let report = run_once_with(&f, as_provider(&provider)).await?;
    assert!(report.applied);
    assert!(
        names_of(&provider, RecordType::Txt).is_empty(),
        "{:?}",
        records(&provider)
    );
    assert!(names_of(&provider, RecordType::A).contains("web.example.com"));
    Ok(())
}

#[tokio::test]
async fn inmemory_zones_limit_what_is_managed() -> Result<(), Error> {
    let dir = tempfile::tempdir()?;
    write_manifests(
        dir.path(),
        &[
            service("in", "in.example.com", "203.0.113.10"),
            service("out", "out.example.org", "203.0.113.11"),
        ],
    )?;
    let f = settings_over(dir.path(), &["--inmemory-zone=example.com"])?;
    let report = run_once_with(&f, build_provider(&f.provider).await?).await?;
    let created: Vec<String> = four(&report.changes).create.iter().map(describe).collect();
    assert_eq!(created, ["in.example.com A 203.0.113.10"]);
    Ok(())
}

#[tokio::test]
async fn providers_extdns_does_not_implement_are_a_clear_error() -> Result<(), Error> {
    let f = controller_settings(&["--source=service", "--provider=linode"])?;
    let err = build_provider(&f.provider).await.err().map(|e| e.to_string());
    assert_eq!(err.as_deref(), Some("provider linode is not supported by extdns yet"));
    Ok(())
}

/// A sync's changes in external-dns's four-list shape, which these assertions read best in.
fn four(changes: &[Change]) -> Changes {
    changes.iter().cloned().collect()
}

/// `--manifests` in the controller is a file-based source: one running controller reads the files again at
/// every sync, and a bad document is skipped (the others still sync) instead of stopping it.
#[tokio::test]
async fn manifests_are_read_again_each_sync_and_a_bad_document_is_skipped() -> Result<(), Error> {
    let dir = tempfile::tempdir()?;
    let provider = empty_provider();
    let f = settings_over(dir.path(), &[])?;
    write_manifests(
        dir.path(),
        &[
            service("web", "web.example.com", "203.0.113.10"),
            "apiVersion: v1\nkind: Service\nmetadata: [not, a, mapping]\n".to_string(),
            service("api", "api.example.com", "203.0.113.11"),
        ],
    )?;
    let metrics = Arc::new(Metrics::new("test", "test"));
    let controller = extdns::run::build_controller(&f, as_provider(&provider), metrics).await?;
    controller.run_once().await?;
    let first = records(&provider);
    assert!(first.contains("web.example.com A 203.0.113.10"), "{first:?}");
    assert!(first.contains("api.example.com A 203.0.113.11"), "{first:?}");

    // The same controller, the file edited: the next sync follows it.
    write_manifests(dir.path(), &[service("web", "web.example.com", "203.0.113.20")])?;
    controller.run_once().await?;
    let second = records(&provider);
    assert!(second.contains("web.example.com A 203.0.113.20"), "{second:?}");
    assert!(!second.iter().any(|r| r.starts_with("api.example.com")), "{second:?}");
    Ok(())
}
