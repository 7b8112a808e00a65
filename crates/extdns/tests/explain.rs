//! `extdns explain` over manifests and an in-memory zone, one test per reason a name is or is not in DNS:
//! published, pending, conflicting with another object, held by another owner, filtered by a flag, in no
//! zone, invalid (and dropped before becoming a record), held because its object failed, refused where that
//! is known without writing; and the command's
//! exit codes and JSON as the binary prints them.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use extdns::explain::{EXIT_NOT_PUBLISHED, Explanation, exit_code, explain_with, render_table};
use extdns::flags::try_parse_from;
use extdns::run::run_once_with;
use extdns::settings::{self, Settings};
use extdns_controller::{NameState, PROVIDER_ZONES, Party, Reason};
use extdns_endpoint::{DomainFilter, Endpoint, RecordType};
use extdns_provider::zone::Placement;
use extdns_provider::{InMemoryProvider, Provider, ProviderError, ReadState, Records, Unit};

type Error = Box<dyn std::error::Error>;

const OWNER: &str = "explain-test";

/// The controller settings over the manifests in `dir` (the service and crd sources), plus `extra`.
fn settings_over(dir: &Path, extra: &[&str]) -> Result<Settings, Error> {
    let dir = dir.to_str().ok_or("path")?;
    let owner = format!("--txt-owner-id={OWNER}");
    let mut args = vec![
        "extdns",
        "--source=service",
        "--source=crd",
        "--provider=inmemory",
        "--policy=sync",
        owner.as_str(),
        "--manifests",
        dir,
    ];
    args.extend_from_slice(extra);
    let cli = try_parse_from(args)?;
    Ok(settings::controller(&cli.flags)?)
}

/// A LoadBalancer Service publishing `hosts` (the annotation's value) at `ip`.
fn service(name: &str, hosts: &str, ip: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: {name}\n  namespace: default\n  annotations:\n    \
         external-dns.kubernetes.io/hostname: \"{hosts}\"\nspec:\n  type: LoadBalancer\n  clusterIP: 10.96.0.1\n  \
         ports:\n    - port: 80\nstatus:\n  loadBalancer:\n    ingress:\n      - ip: {ip}\n"
    )
}

/// A DNSEndpoint with one A record per `(name, target)`.
fn dnsendpoint(name: &str, entries: &[(&str, &str)]) -> String {
    let entries: String = entries
        .iter()
        .map(|(n, t)| format!("    - dnsName: {n}\n      recordType: A\n      targets: [\"{t}\"]\n"))
        .collect();
    format!(
        "apiVersion: externaldns.k8s.io/v1alpha1\nkind: DNSEndpoint\nmetadata:\n  name: {name}\n  namespace: \
         default\nspec:\n  endpoints:\n{entries}"
    )
}

/// Writes `docs` as the only manifests of `dir`.
fn write_manifests(dir: &Path, docs: &[String]) -> Result<(), Error> {
    std::fs::write(dir.join("objects.yaml"), docs.join("---\n"))?;
    Ok(())
}

/// An in-memory zone `example.com` holding `records`.
fn zone(records: Vec<Endpoint>) -> Arc<InMemoryProvider> {
    Arc::new(InMemoryProvider::with_records(vec!["example.com".into()], records))
}

fn dyn_provider(p: &Arc<InMemoryProvider>) -> Arc<dyn Provider> {
    p.clone()
}

/// The one outcome `object` has in the explanation's first name.
fn asker<'a>(e: &'a Explanation, object: &str) -> &'a NameState {
    let found: Vec<_> = e.names[0].asked_by.iter().filter(|a| a.object == object).collect();
    assert_eq!(found.len(), 1, "{}", render_table(e));
    &found[0].state
}

#[tokio::test]
async fn a_name_not_written_yet_is_pending_then_published_with_its_owner() -> Result<(), Error> {
    let dir = tempfile::tempdir()?;
    write_manifests(dir.path(), &[service("web", "web.example.com", "203.0.113.10")])?;
    let f = settings_over(dir.path(), &[])?;
    let provider = zone(Vec::new());

    let e = explain_with(&f, dyn_provider(&provider), "WEB.example.com.").await?;
    let name = &e.names[0];
    assert_eq!(name.name, "web.example.com");
    assert_eq!(name.zone.as_deref(), Some("example.com"));
    assert_eq!(*asker(&e, "service/default/web"), NameState::Pending);
    assert!(name.records.is_empty());
    let next: Vec<_> = name.next_sync.iter().map(|c| (c.action, c.targets.clone())).collect();
    assert_eq!(next, [("create", vec!["203.0.113.10".to_string()])]);
    assert!(e.published);
    assert_eq!(exit_code(&e), 0);
    assert!(provider.snapshot().is_empty(), "explain wrote to the zone");

    run_once_with(&f, dyn_provider(&provider)).await?;
    let e = explain_with(&f, dyn_provider(&provider), "service/default/web").await?;
    assert_eq!(e.object.as_deref(), Some("service/default/web"));
    assert_eq!(e.names.len(), 1);
    let name = &e.names[0];
    assert_eq!(
        *asker(&e, "service/default/web"),
        NameState::published("inmemory", Some("example.com"))
    );
    let owners: Vec<_> = name
        .records
        .iter()
        .map(|r| (r.owner.clone(), r.resource.clone()))
        .collect();
    assert_eq!(
        owners,
        [(Some(OWNER.to_string()), Some("service/default/web".to_string()))]
    );
    assert!(name.next_sync.is_empty(), "{:?}", name.next_sync);
    assert_eq!(exit_code(&e), 0);
    Ok(())
}

#[tokio::test]
async fn a_name_another_object_holds_is_a_conflict_naming_that_object() -> Result<(), Error> {
    let dir = tempfile::tempdir()?;
    // `b`'s load balancer has a hostname: it asks for a CNAME, which cannot stand beside `a`'s address.
    let b = service("b", "shop.example.com", "203.0.113.2").replace("- ip: 203.0.113.2", "- hostname: lb.example.net");
    write_manifests(dir.path(), &[service("a", "shop.example.com", "203.0.113.1"), b])?;
    let f = settings_over(dir.path(), &[])?;
    let provider = zone(Vec::new());
    // Before anything is written (the dry run's own choice), and after a sync wrote it: the same answer.
    for synced in [false, true] {
        if synced {
            run_once_with(&f, dyn_provider(&provider)).await?;
        }
        let e = explain_with(&f, dyn_provider(&provider), "shop.example.com").await?;
        let holder = if synced { Reason::Published } else { Reason::Pending };
        assert_eq!(asker(&e, "service/default/a").reason(), holder, "{}", render_table(&e));
        assert_eq!(
            *asker(&e, "service/default/b"),
            NameState::conflict(Party::Object("service/default/a".into())),
            "synced: {synced}"
        );
        assert!(!e.published);
        assert_eq!(exit_code(&e), EXIT_NOT_PUBLISHED);
        // Asked about by object: the one that loses says whom to talk to, the one that holds it is fine.
        let e = explain_with(&f, dyn_provider(&provider), "service/default/b").await?;
        assert_eq!(exit_code(&e), EXIT_NOT_PUBLISHED);
        assert!(
            render_table(&e).contains("held by object service/default/a"),
            "{}",
            render_table(&e)
        );
        let e = explain_with(&f, dyn_provider(&provider), "service/default/a").await?;
        assert_eq!(exit_code(&e), 0, "{}", render_table(&e));
    }
    Ok(())
}

#[tokio::test]
async fn a_record_of_another_owner_is_a_conflict_naming_that_owner() -> Result<(), Error> {
    let dir = tempfile::tempdir()?;
    write_manifests(dir.path(), &[service("web", "taken.example.com", "203.0.113.10")])?;
    let f = settings_over(dir.path(), &[])?;
    let provider = zone(vec![
        Endpoint::new("taken.example.com", RecordType::A, ["192.0.2.1"]),
        Endpoint::new(
            "taken.example.com",
            RecordType::Txt,
            ["\"heritage=external-dns,external-dns/owner=cluster-b,external-dns/resource=service/x/y\""],
        ),
    ]);
    let e = explain_with(&f, dyn_provider(&provider), "taken.example.com").await?;
    assert_eq!(
        *asker(&e, "service/default/web"),
        NameState::conflict(Party::Owner("cluster-b".into()))
    );
    let owners: Vec<_> = e.names[0].records.iter().map(|r| r.owner.clone()).collect();
    assert_eq!(owners, [Some("cluster-b".to_string())]);
    assert!(e.names[0].next_sync.is_empty(), "{:?}", e.names[0].next_sync);
    assert_eq!(exit_code(&e), EXIT_NOT_PUBLISHED);
    Ok(())
}

#[tokio::test]
async fn a_name_a_flag_keeps_out_is_filtered_naming_the_flag() -> Result<(), Error> {
    let dir = tempfile::tempdir()?;
    write_manifests(dir.path(), &[service("web", "web.example.net", "203.0.113.10")])?;
    let f = settings_over(dir.path(), &["--domain-filter=example.com"])?;
    let e = explain_with(&f, dyn_provider(&zone(Vec::new())), "web.example.net").await?;
    let flag = "--domain-filter/--exclude-domains";
    assert_eq!(*asker(&e, "service/default/web"), NameState::Filtered { flag });
    assert_eq!(e.names[0].no_zone.as_deref(), Some(flag));
    assert_eq!(e.names[0].zone, None);
    assert_eq!(exit_code(&e), EXIT_NOT_PUBLISHED);
    Ok(())
}

#[tokio::test]
async fn a_name_in_none_of_the_providers_zones_has_no_zone() -> Result<(), Error> {
    let dir = tempfile::tempdir()?;
    write_manifests(dir.path(), &[service("web", "web.example.net", "203.0.113.10")])?;
    let f = settings_over(dir.path(), &[])?;
    let e = explain_with(&f, dyn_provider(&zone(Vec::new())), "web.example.net").await?;
    assert_eq!(
        *asker(&e, "service/default/web"),
        NameState::Filtered { flag: PROVIDER_ZONES }
    );
    let name = &e.names[0];
    assert_eq!(
        (name.zone.as_deref(), name.no_zone.as_deref()),
        (None, Some(PROVIDER_ZONES))
    );
    assert_eq!(name.zones, ["example.com"]);
    assert!(
        render_table(&e).contains("no zone: kept out by"),
        "{}",
        render_table(&e)
    );
    assert_eq!(exit_code(&e), EXIT_NOT_PUBLISHED);

    // A name nobody asks for: its zone all the same, and not published.
    let e = explain_with(&f, dyn_provider(&zone(Vec::new())), "nobody.example.com").await?;
    assert_eq!(e.names[0].zone.as_deref(), Some("example.com"));
    assert_eq!(e.note.as_deref(), Some("no object asks for this name"));
    assert_eq!(exit_code(&e), EXIT_NOT_PUBLISHED);
    Ok(())
}

#[tokio::test]
async fn an_invalid_entry_is_invalid_naming_the_field_or_dropped_when_it_owns_no_record() -> Result<(), Error> {
    let dir = tempfile::tempdir()?;
    let f = settings_over(dir.path(), &[])?;
    let provider = zone(Vec::new());
    let ok = ("ok.example.com", "192.0.2.1");
    write_manifests(
        dir.path(),
        &[dnsendpoint("recs", &[ok, ("bad.example.com", "192.0.2.2")])],
    )?;
    run_once_with(&f, dyn_provider(&provider)).await?;

    // The entry turns invalid: its record is kept as it is, and the name says which field.
    write_manifests(
        dir.path(),
        &[dnsendpoint("recs", &[ok, ("bad.example.com", "not-an-address")])],
    )?;
    let e = explain_with(&f, dyn_provider(&provider), "dnsendpoint/default/recs").await?;
    assert_eq!(e.object.as_deref(), Some("crd/default/recs"));
    let states: Vec<_> = e
        .names
        .iter()
        .map(|n| (n.name.as_str(), n.asked_by[0].state.clone()))
        .collect();
    assert_eq!(states.len(), 2, "{}", render_table(&e));
    let bad = states.iter().find(|(n, _)| *n == "bad.example.com").map(|(_, s)| s);
    assert!(
        matches!(bad, Some(NameState::Invalid { field }) if field.contains("spec.endpoints[1]")),
        "{}",
        render_table(&e)
    );
    assert_eq!(exit_code(&e), EXIT_NOT_PUBLISHED);

    // A new invalid entry owns no record: no name is known, and the object says what was dropped.
    write_manifests(
        dir.path(),
        &[dnsendpoint("new", &[("new.example.com", "not-an-address")])],
    )?;
    let e = explain_with(&f, dyn_provider(&provider), "dnsendpoint/default/new").await?;
    assert!(e.names.is_empty(), "{}", render_table(&e));
    assert_eq!(e.dropped.len(), 1);
    assert_eq!(e.dropped[0].state.reason(), Reason::Invalid);
    assert!(
        e.dropped[0].message.contains("spec.endpoints[0]"),
        "{}",
        e.dropped[0].message
    );
    assert_eq!(exit_code(&e), EXIT_NOT_PUBLISHED);
    Ok(())
}

#[tokio::test]
async fn an_object_that_fails_holds_its_records_naming_why() -> Result<(), Error> {
    let dir = tempfile::tempdir()?;
    let f = settings_over(dir.path(), &[])?;
    let provider = zone(Vec::new());
    write_manifests(dir.path(), &[service("web", "web.example.com", "203.0.113.10")])?;
    run_once_with(&f, dyn_provider(&provider)).await?;
    // A second hostname that is no DNS name fails the whole Service: its record stays as it is.
    let bad = format!("web.example.com,{}.example.com", "x".repeat(64));
    write_manifests(dir.path(), &[service("web", &bad, "203.0.113.20")])?;
    let e = explain_with(&f, dyn_provider(&provider), "service/default/web").await?;
    let web = e
        .names
        .iter()
        .find(|n| n.name == "web.example.com")
        .ok_or("no web.example.com")?;
    assert_eq!(web.asked_by[0].state.reason(), Reason::Held, "{}", render_table(&e));
    assert!(web.next_sync.iter().all(|c| c.held.is_some()), "{:?}", web.next_sync);
    assert_eq!(exit_code(&e), EXIT_NOT_PUBLISHED);
    assert!(render_table(&e).contains("Held"), "{}", render_table(&e));
    Ok(())
}

#[tokio::test]
async fn an_object_the_sync_saw_no_name_of_says_so() -> Result<(), Error> {
    let dir = tempfile::tempdir()?;
    write_manifests(dir.path(), &[service("web", "web.example.com", "203.0.113.10")])?;
    let f = settings_over(dir.path(), &[])?;
    let e = explain_with(&f, dyn_provider(&zone(Vec::new())), "service/default/absent").await?;
    assert!(e.names.is_empty());
    assert!(
        e.note.as_deref().is_some_and(|n| n.contains("no name of this object")),
        "{e:?}"
    );
    assert_eq!(exit_code(&e), EXIT_NOT_PUBLISHED);
    assert!(
        explain_with(&f, dyn_provider(&zone(Vec::new())), "widget/default/web")
            .await
            .is_err()
    );
    Ok(())
}

/// The in-memory zone, refusing a name with a `*` that is not its whole first label (Azure's documented rule):
/// a refusal known before writing, as the registry asks before it sends a wildcard's ownership record.
struct RefusesInnerWildcards(Arc<InMemoryProvider>);

#[async_trait::async_trait]
impl Provider for RefusesInnerWildcards {
    async fn records(&self) -> Result<Records, ProviderError> {
        self.0.records().await
    }

    async fn apply(&self, read: &ReadState, units: &[Unit<'_>]) -> Result<(), ProviderError> {
        self.0.apply(read, units).await
    }

    fn domain_filter(&self) -> DomainFilter {
        self.0.domain_filter()
    }

    fn placement(&self, read: &ReadState, name: &str) -> Placement {
        if name.contains('*') && !name.starts_with("*.") {
            return Placement::Refused("a '*' that is not a whole label");
        }
        self.0.placement(read, name)
    }
}

#[tokio::test]
async fn a_refusal_known_without_writing_is_refused_with_the_providers_rule() -> Result<(), Error> {
    let dir = tempfile::tempdir()?;
    write_manifests(dir.path(), &[service("web", "*.example.com", "203.0.113.10")])?;
    let f = settings_over(dir.path(), &[])?;
    let inner = zone(Vec::new());
    let provider: Arc<dyn Provider> = Arc::new(RefusesInnerWildcards(inner.clone()));
    // The wildcard's ownership record (`a-*.example.com`) is a name the provider refuses: nothing is sent.
    let e = explain_with(&f, provider.clone(), "*.example.com").await?;
    let state = asker(&e, "service/default/web");
    assert!(
        matches!(state, NameState::Refused { error } if error.contains("a '*' that is not a whole label")),
        "{}",
        render_table(&e)
    );
    assert_eq!(exit_code(&e), EXIT_NOT_PUBLISHED);
    // The sync agrees: nothing written.
    let _ = run_once_with(&f, provider).await;
    assert!(inner.snapshot().is_empty(), "{:?}", inner.snapshot());
    Ok(())
}

/// The binary: text by default, JSON on request, and the exit codes a CI job gates on.
#[test]
fn the_command_prints_text_or_json_and_exits_3_when_not_published() -> Result<(), Error> {
    let dir = tempfile::tempdir()?;
    write_manifests(
        dir.path(),
        &[
            service("web", "web.example.com", "203.0.113.10"),
            service("other", "web.example.org", "203.0.113.11"),
        ],
    )?;
    let manifests = dir.path().to_str().ok_or("path")?;
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_extdns"))
            .args([
                "explain",
                "--source=service",
                "--provider=inmemory",
                "--inmemory-zone=example.com",
            ])
            .args(["--txt-owner-id=cli", "--manifests", manifests])
            .args(args)
            .env_remove("RUST_LOG")
            .output()
    };
    let out = run(&["web.example.com"])?;
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("service/default/web A  Pending"), "{text}");

    let out = run(&["web.example.org", "--output=json"])?;
    assert_eq!(out.status.code(), Some(i32::from(EXIT_NOT_PUBLISHED)));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(json["published"], false);
    assert_eq!(json["names"][0]["noZone"], PROVIDER_ZONES);
    assert_eq!(json["names"][0]["askedBy"][0]["reason"], "Filtered");
    assert_eq!(json["names"][0]["askedBy"][0]["object"], "service/default/other");

    // A usage error exits 1 (like `extdns plan`'s), never a code a gate would read as an answer.
    let out = run(&["widget/default/web"])?;
    assert_eq!(out.status.code(), Some(1));
    Ok(())
}

/// One reason, as the table below checks it: the objects (`before`, written by a sync first, then `after`,
/// what the dry run sees), the zone's records beforehand, the flags, and what explain must say of `object`'s
/// record at `name`.
struct ReasonCase {
    what: &'static str,
    before: Vec<String>,
    after: Vec<String>,
    zone: Vec<Endpoint>,
    flags: &'static [&'static str],
    /// Wraps the zone, for a provider that refuses what the in-memory one takes.
    refusing: bool,
    name: &'static str,
    object: &'static str,
    reason: Reason,
    /// What JSON's `askedBy` entry holds besides `reason` (each key, exactly).
    detail: serde_json::Value,
    /// What the text's line for the object says after the reason.
    said: &'static str,
}

/// The TXT record of owner `owner` for `name`.
fn foreign_txt(name: &str, owner: &str) -> Endpoint {
    Endpoint::new(
        name,
        RecordType::Txt,
        [format!(
            "\"heritage=external-dns,external-dns/owner={owner},external-dns/resource=service/x/y\""
        )],
    )
}

fn reason_cases() -> Vec<ReasonCase> {
    use serde_json::json;
    let case = |what, name, object, reason, detail, said| ReasonCase {
        what,
        before: Vec::new(),
        after: Vec::new(),
        zone: Vec::new(),
        flags: &[],
        refusing: false,
        name,
        object,
        reason,
        detail,
        said,
    };
    let svc = |n: &str, host: &str| service(n, host, "203.0.113.10");
    let lb_at =
        |n: &str, host: &str, lb: &str| svc(n, host).replace("- ip: 203.0.113.10", &format!("- hostname: {lb}"));
    let lb_name = |n: &str, host: &str| lb_at(n, host, "lb.example.net");
    let broken = format!("held.example.com,{}.example.com", "x".repeat(64));
    vec![
        ReasonCase {
            before: vec![svc("web", "pub.example.com")],
            after: vec![svc("web", "pub.example.com")],
            ..case(
                "published",
                "pub.example.com",
                "service/default/web",
                Reason::Published,
                json!({ "provider": "inmemory", "zone": "example.com" }),
                "published by inmemory in zone example.com",
            )
        },
        ReasonCase {
            after: vec![svc("web", "new.example.com")],
            ..case(
                "pending",
                "new.example.com",
                "service/default/web",
                Reason::Pending,
                json!({}),
                "",
            )
        },
        ReasonCase {
            // Two objects ask for the same CNAME with other targets: a duplicate across objects (addresses
            // would be merged into one record, as external-dns merges them; a CNAME has one target), the one
            // the sync does not write for naming the one it does.
            after: vec![
                lb_at("dup-a", "dup.example.com", "lb-a.example.net"),
                lb_at("dup-b", "dup.example.com", "lb-b.example.net"),
            ],
            ..case(
                "duplicate across objects",
                "dup.example.com",
                "service/default/dup-b",
                Reason::Conflict,
                json!({ "with": { "object": "service/default/dup-a" } }),
                "held by object service/default/dup-a",
            )
        },
        ReasonCase {
            after: vec![svc("web", "shop.example.com"), lb_name("alias", "shop.example.com")],
            ..case(
                "conflicting with another object",
                "shop.example.com",
                "service/default/alias",
                Reason::Conflict,
                json!({ "with": { "object": "service/default/web" } }),
                "held by object service/default/web",
            )
        },
        ReasonCase {
            after: vec![svc("web", "taken.example.com")],
            zone: vec![
                Endpoint::new("taken.example.com", RecordType::A, ["192.0.2.1"]),
                foreign_txt("taken.example.com", "cluster-b"),
            ],
            ..case(
                "owned by someone else",
                "taken.example.com",
                "service/default/web",
                Reason::Conflict,
                json!({ "with": { "owner": "cluster-b" } }),
                "held by owner id \"cluster-b\"",
            )
        },
        ReasonCase {
            after: vec![svc("web", "skip.example.com")],
            flags: &["--exclude-domains=skip.example.com"],
            ..case(
                "filtered by the domain filter",
                "skip.example.com",
                "service/default/web",
                Reason::Filtered,
                json!({ "flag": "--domain-filter/--exclude-domains" }),
                "--domain-filter/--exclude-domains",
            )
        },
        ReasonCase {
            after: vec![lb_name("web", "alias.example.com")],
            flags: &["--managed-record-types=A"],
            ..case(
                "filtered by the managed record types",
                "alias.example.com",
                "service/default/web",
                Reason::Filtered,
                json!({ "flag": "--managed-record-types" }),
                "--managed-record-types",
            )
        },
        ReasonCase {
            after: vec![lb_name("web", "excluded.example.com")],
            flags: &["--exclude-record-types=CNAME"],
            ..case(
                "filtered by the excluded record types",
                "excluded.example.com",
                "service/default/web",
                Reason::Filtered,
                json!({ "flag": "--exclude-record-types" }),
                "--exclude-record-types",
            )
        },
        ReasonCase {
            after: vec![svc("web", "web.example.net")],
            ..case(
                "in none of the provider's zones",
                "web.example.net",
                "service/default/web",
                Reason::Filtered,
                json!({ "flag": PROVIDER_ZONES }),
                PROVIDER_ZONES,
            )
        },
        ReasonCase {
            before: vec![dnsendpoint(
                "recs",
                &[("ok.example.com", "192.0.2.1"), ("bad.example.com", "192.0.2.2")],
            )],
            after: vec![dnsendpoint(
                "recs",
                &[("ok.example.com", "192.0.2.1"), ("bad.example.com", "not-an-address")],
            )],
            ..case(
                "an invalid value",
                "bad.example.com",
                "crd/default/recs",
                Reason::Invalid,
                json!({}),
                "spec.endpoints[1]",
            )
        },
        ReasonCase {
            before: vec![svc("web", "held.example.com")],
            after: vec![svc("web", &broken)],
            ..case(
                "held because its object failed",
                "held.example.com",
                "service/default/web",
                Reason::Held,
                json!({}),
                "the object could not be evaluated",
            )
        },
        ReasonCase {
            after: vec![svc("web", "*.example.com")],
            refusing: true,
            ..case(
                "refused by the provider",
                "*.example.com",
                "service/default/web",
                Reason::Refused,
                json!({}),
                "a '*' that is not a whole label",
            )
        },
    ]
}

/// Every reason the issue names, asked by name and by object, in text and in JSON: the object's entry has
/// the reason, its detail (the other party of a conflict by name), and the text says both.
#[tokio::test]
async fn every_reason_is_explained_for_its_name_and_its_object_in_text_and_json() -> Result<(), Error> {
    for c in reason_cases() {
        let dir = tempfile::tempdir()?;
        let f = settings_over(dir.path(), c.flags)?;
        let inner = zone(c.zone.clone());
        let provider: Arc<dyn Provider> = if c.refusing {
            Arc::new(RefusesInnerWildcards(inner.clone()))
        } else {
            inner.clone()
        };
        if !c.before.is_empty() {
            write_manifests(dir.path(), &c.before)?;
            run_once_with(&f, provider.clone()).await?;
        }
        write_manifests(dir.path(), &c.after)?;
        let object_query = c.object.replace("crd/", "dnsendpoint/");
        for query in [c.name, object_query.as_str()] {
            let at = format!("{}: asked as {query}", c.what);
            let e = explain_with(&f, provider.clone(), query).await?;
            let text = render_table(&e);
            let json: serde_json::Value = serde_json::from_str(&extdns::explain::render_json(&e)?)?;
            let entry = json["names"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|n| n["name"] == c.name)
                .flat_map(|n| n["askedBy"].as_array().into_iter().flatten())
                .find(|a| a["object"] == c.object)
                .ok_or_else(|| format!("{at}: no entry for {}\n{json:#}", c.object))?;
            assert_eq!(entry["reason"], c.reason.as_str(), "{at}\n{json:#}");
            for (key, value) in c.detail.as_object().into_iter().flatten() {
                assert_eq!(&entry[key], value, "{at}: {key}\n{json:#}");
            }
            let line = text
                .lines()
                .find(|l| l.contains(&format!("{} ", c.object)) && l.contains(&format!("  {}", c.reason.as_str())))
                .ok_or_else(|| format!("{at}: no line for {}\n{text}", c.object))?;
            assert!(line.contains(c.said), "{at}: {line:?} says {:?}\n{text}", c.said);
            let published = matches!(c.reason, Reason::Published | Reason::Pending);
            assert_eq!(exit_code(&e) == 0, published, "{at}\n{text}");
            assert_eq!(json["published"], published, "{at}");
        }
    }
    Ok(())
}
