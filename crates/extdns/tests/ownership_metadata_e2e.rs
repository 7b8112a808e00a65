//! `--txt-ownership=metadata` (issue 50) through the whole binary against the Cloudflare and Azure fakes,
//! which hold comments and metadata to the clouds' documented limits: ownership moves from TXT records to
//! the records themselves and back, each record owned at every step (TXT record, payload, or both), the
//! migration shown by `extdns plan` first; and external-dns v0.23.0 on the same zone never touches what
//! extdns owns there, nor extdns what external-dns owns.

use std::path::Path;
use std::process::Output;

use extdns_test_support::azure_fake::{self, FakeAzure, Service};
use extdns_test_support::cli::{self, ok, tempdir};
use extdns_test_support::cloudflare_fake::{FakeCloudflare, TOKEN};
use extdns_test_support::differential::{self, Objects};
use extdns_test_support::manifests::lb_service;
use serde_json::json;

const OWNER: &str = "e2e";
const ZONE_ID: &str = "023e105f4ecef8ad9ca31a8372d0c353";
/// How every payload extdns writes for [`OWNER`] starts.
const PAYLOAD: &str = "extdns:v1;o=e2e;";
const COMMENT: (&str, &str) = ("external-dns.alpha.kubernetes.io/cloudflare-record-comment", "team web");

/// The A records (name, ownership payload if any, the rest of what is stored), and the names of the
/// ownership TXT records of [`OWNER`].
type Zone = (Vec<(String, Option<String>, String)>, Vec<String>);

/// One cloud under test: how extdns is pointed at its fake, and what the fake holds.
trait Cloud {
    /// extdns with `args` (a subcommand first, or the controller's `--once`) against the fake.
    fn extdns(&self, home: &Path, args: &[&str]) -> Output;
    /// Write requests the fake answered.
    fn writes(&self) -> usize;
    /// The A records (name, ownership payload if any, the rest of what is stored) and the owner ids of the
    /// ownership TXT records by the name they own.
    fn zone(&self) -> Zone;
}

struct Cf(FakeCloudflare);

impl Cloud for Cf {
    fn extdns(&self, _home: &Path, args: &[&str]) -> Output {
        let mut cmd = cli::command(env!("CARGO_BIN_EXE_extdns"), &["CF_"]);
        cmd.env("CF_API_TOKEN", TOKEN)
            .env("EXTDNS_CLOUDFLARE_API_URL", &self.0.url)
            .args(args)
            .args(["--source=service", "--provider=cloudflare", "--txt-owner-id", OWNER])
            .args(["--domain-filter=example.org", "--batch-change-interval=0s"]);
        cli::run(&mut cmd)
    }

    fn writes(&self) -> usize {
        self.0.state().requests.writes()
    }

    fn zone(&self) -> Zone {
        let s = self.0.state();
        let mut records = Vec::new();
        let mut txts = Vec::new();
        for r in s.records.values() {
            match r.rtype.as_str() {
                "A" => {
                    let comment = r.comment.clone().unwrap_or_default();
                    let (user, payload) = match comment.find("extdns:v") {
                        Some(at) => (comment[..at].trim_end().to_string(), Some(comment[at..].to_string())),
                        None => (comment.clone(), None),
                    };
                    records.push((r.name.clone(), payload, format!("{} comment={user:?}", r.content)));
                }
                "TXT" if r.content.contains(&format!("external-dns/owner={OWNER}")) => txts.push(r.name.clone()),
                _ => {}
            }
        }
        records.sort();
        txts.sort();
        (records, txts)
    }
}

struct Az {
    fake: FakeAzure,
    provider: &'static str,
}

impl Cloud for Az {
    fn extdns(&self, home: &Path, args: &[&str]) -> Output {
        let file = home.join("azure.json");
        let creds = json!({ "aadClientId": azure_fake::CLIENT_ID, "aadClientSecret": azure_fake::CLIENT_SECRET });
        std::fs::write(&file, self.fake.azure_json(creds)).unwrap_or_else(|e| panic!("{e}"));
        let mut cmd = cli::command(env!("CARGO_BIN_EXE_extdns"), &["AZURE_", "EXTDNS_AZURE_"]);
        cmd.env("EXTDNS_AZURE_IMDS_URL", &self.fake.url)
            .args(args)
            .args([
                "--source=service",
                "--txt-owner-id",
                OWNER,
                "--azure-maxretries-count=3",
            ])
            .arg(format!("--provider={}", self.provider))
            .arg(format!("--azure-config-file={}", file.display()));
        cli::run(&mut cmd)
    }

    fn writes(&self) -> usize {
        self.fake.state().requests.writes()
    }

    fn zone(&self) -> Zone {
        let s = self.fake.state();
        let mut records = Vec::new();
        let mut txts = Vec::new();
        for ((_, zone, name, t), set) in &s.sets {
            let fqdn = format!("{name}.{zone}");
            let mut props = set.properties.clone();
            let payload = props
                .get_mut("metadata")
                .and_then(|m| m.as_object_mut())
                .and_then(|m| m.remove("extdns_ownership"))
                .and_then(|p| p.as_str().map(str::to_string));
            // Metadata left empty once the payload is taken off is no metadata.
            if let Some(m) = props.as_object_mut()
                && m.get("metadata")
                    .and_then(|m| m.as_object())
                    .is_some_and(|m| m.is_empty())
            {
                m.remove("metadata");
            }
            match t.as_str() {
                "A" => records.push((fqdn, payload, props.to_string())),
                "TXT" if props.to_string().contains(&format!("external-dns/owner={OWNER}")) => txts.push(fqdn),
                _ => {}
            }
        }
        records.sort();
        txts.sort();
        (records, txts)
    }
}

/// Every A record of the zone is owned by [`OWNER`]: its payload or its TXT record (`a-<name>`) says so.
fn all_owned(cloud: &dyn Cloud, what: &str) {
    let (records, txts) = cloud.zone();
    for (name, payload, _) in &records {
        let by_payload = payload.as_deref().is_some_and(|p| p.starts_with(PAYLOAD));
        let by_txt = txts.contains(&format!("a-{name}"));
        assert!(
            by_payload || by_txt,
            "{what}: {name} is owned by nobody: {records:?} {txts:?}"
        );
    }
}

/// The ownership of the zone's A records: how many carry a payload, and how many TXT records there are.
fn ownership(cloud: &dyn Cloud) -> (usize, usize) {
    let (records, txts) = cloud.zone();
    (records.iter().filter(|(_, p, _)| p.is_some()).count(), txts.len())
}

/// The records as they are apart from ownership: what a migration must leave as it found it.
fn content(cloud: &dyn Cloud) -> Vec<(String, String)> {
    cloud.zone().0.into_iter().map(|(n, _, rest)| (n, rest)).collect()
}

/// A sync with `flags` that must succeed.
fn sync(cloud: &dyn Cloud, home: &Path, manifests: &Path, flags: &[&str], what: &str) {
    let dir = manifests.display().to_string();
    let mut args = vec!["--once", "--manifests", &dir];
    args.extend_from_slice(flags);
    ok(&cloud.extdns(home, &args), what);
    all_owned(cloud, what);
}

/// TXT records → metadata → TXT records, two syncs each way, `extdns plan` previewing the first step.
fn migrates_both_ways(cloud: &dyn Cloud, zone: &str) {
    let (home, dir) = (tempdir(), tempdir());
    let services = [
        lb_service("web", &format!("web.{zone}"), &["192.0.2.10"], &[COMMENT]),
        lb_service("api", &format!("api.{zone}"), &["192.0.2.20"], &[]),
    ];
    cli::write_manifests(dir.path(), &services.join("---\n"));
    let (to_meta, to_txt) = (["--txt-ownership=metadata"], ["--txt-ownership=txt"]);
    sync(cloud, home.path(), dir.path(), &to_txt, "TXT ownership");
    assert_eq!(ownership(cloud), (0, 2));
    let records = content(cloud);

    // The preview: both records would be updated, nothing is written.
    let writes = cloud.writes();
    let d = dir.path().display().to_string();
    let out = cloud.extdns(home.path(), &["plan", "--manifests", &d, "--txt-ownership=metadata"]);
    assert_eq!(out.status.code(), Some(2), "{}", cli::text(&out));
    let table = String::from_utf8_lossy(&out.stdout).to_string();
    let updates = table.lines().filter(|l| l.starts_with("update")).count();
    assert_eq!(updates, 2, "the migration previewed as two updates:\n{table}");
    assert_eq!(cloud.writes(), writes, "the preview writes nothing");

    sync(
        cloud,
        home.path(),
        dir.path(),
        &to_meta,
        "to metadata: the payload first",
    );
    assert_eq!(
        ownership(cloud),
        (2, 2),
        "the TXT records stay until the payload is read back"
    );
    sync(
        cloud,
        home.path(),
        dir.path(),
        &to_meta,
        "to metadata: the TXT records go",
    );
    assert_eq!(ownership(cloud), (2, 0), "one record per record");
    let writes = cloud.writes();
    sync(cloud, home.path(), dir.path(), &to_meta, "metadata, at rest");
    assert_eq!(cloud.writes(), writes, "nothing left to do");
    assert_eq!(
        content(cloud),
        records,
        "the records and their own comment or metadata kept"
    );

    sync(
        cloud,
        home.path(),
        dir.path(),
        &to_txt,
        "back to TXT: the TXT records first",
    );
    assert_eq!(
        ownership(cloud),
        (2, 2),
        "the payload stays until the TXT records are there"
    );
    sync(cloud, home.path(), dir.path(), &to_txt, "back to TXT: the payload goes");
    assert_eq!(ownership(cloud), (0, 2));
    let writes = cloud.writes();
    sync(cloud, home.path(), dir.path(), &to_txt, "TXT, at rest");
    assert_eq!(cloud.writes(), writes);
    assert_eq!(content(cloud), records);
}

#[test]
fn cloudflare_ownership_moves_to_the_comment_and_back_never_unowned() {
    let cf = Cf(FakeCloudflare::start(&[(ZONE_ID, "example.org")]));
    migrates_both_ways(&cf, "example.org");
    let (records, _) = cf.zone();
    assert!(
        records.iter().any(|(_, _, rest)| rest.contains("comment=\"team web\"")),
        "the user's comment kept: {records:?}"
    );
}

#[test]
fn azure_ownership_moves_to_record_set_metadata_and_back_never_unowned() {
    let fake = FakeAzure::start(&[(Service::Public, "example.org")]);
    migrates_both_ways(
        &Az {
            fake,
            provider: "azure",
        },
        "example.org",
    );
}

#[test]
fn azure_private_dns_ownership_moves_to_record_set_metadata_and_back_never_unowned() {
    let fake = FakeAzure::start(&[(Service::Private, "internal.example")]);
    migrates_both_ways(
        &Az {
            fake,
            provider: "azure-private-dns",
        },
        "internal.example",
    );
}

#[test]
fn metadata_ownership_is_refused_at_startup_by_a_provider_without_metadata() {
    let dir = tempdir();
    let mut cmd = cli::command(env!("CARGO_BIN_EXE_extdns"), &[]);
    cmd.args([
        "--once",
        "--source=service",
        "--provider=inmemory",
        "--txt-ownership=metadata",
    ])
    .args(["--manifests", &dir.path().display().to_string()]);
    let out = cli::run(&mut cmd);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        cli::text(&out).contains("--txt-ownership=metadata: provider inmemory keeps no metadata"),
        "{}",
        cli::text(&out)
    );
}

// ------------------------------------------------------------------------------------- external-dns

/// The owner id external-dns runs with on the same zone.
const THEIRS: &str = "theirs";

/// One A record's state: its payload and the rest, `None` while the zone has none of that name.
fn record(cloud: &dyn Cloud, name: &str) -> Option<(Option<String>, String)> {
    cloud
        .zone()
        .0
        .into_iter()
        .find(|(n, _, _)| n == name)
        .map(|(_, p, rest)| (p, rest))
}

/// external-dns v0.23.0 (owner [`THEIRS`], TXT registry) and extdns (`--txt-ownership=metadata`) on one
/// zone, from the same objects: external-dns publishes `web` first and extdns `api`; then both change, then
/// both go. Each controller changes only its own record: extdns's, which has no TXT record, is nobody's to
/// external-dns, and external-dns's is another owner's to extdns.
fn side_by_side(cloud: &dyn Cloud, names: [&'static str; 2], external_dns: &dyn Fn(u16) -> Output) {
    let [web, api] = names;
    let home = tempdir();
    let objects = Objects::serve();
    let extdns = || {
        let dir = objects.dir.path().display().to_string();
        let args = ["--once", "--manifests", &dir, "--txt-ownership=metadata"];
        ok(&cloud.extdns(home.path(), &args), "extdns");
    };
    objects.publish_a_records(&[("web", web, "192.0.2.10")]);
    ok(&external_dns(objects.source), "external-dns: web");
    let theirs = record(cloud, web);
    assert!(theirs.is_some(), "external-dns wrote web: {:?}", cloud.zone());

    objects.publish_a_records(&[("web", web, "192.0.2.10"), ("api", api, "192.0.2.20")]);
    extdns();
    let ours = record(cloud, api);
    assert!(
        ours.as_ref()
            .is_some_and(|(p, _)| p.as_deref().is_some_and(|p| p.starts_with(PAYLOAD))),
        "extdns wrote api with its payload: {:?}",
        cloud.zone()
    );
    assert_eq!(record(cloud, web), theirs, "extdns leaves external-dns's record");
    assert_eq!(ownership(cloud), (1, 0), "and writes no TXT record");
    differential::assert_writes_nothing(
        "external-dns beside extdns's record",
        || cloud.writes(),
        || external_dns(objects.source),
    );

    objects.publish_a_records(&[("web", web, "192.0.2.11"), ("api", api, "192.0.2.21")]);
    extdns();
    let ours = record(cloud, api);
    assert!(
        ours.as_ref().is_some_and(|(_, rest)| rest.contains("192.0.2.21")),
        "{ours:?}"
    );
    assert_eq!(record(cloud, web), theirs, "extdns leaves external-dns's record");
    ok(&external_dns(objects.source), "external-dns: web changed");
    assert!(record(cloud, web).is_some_and(|(_, rest)| rest.contains("192.0.2.11")));
    assert_eq!(
        record(cloud, api),
        ours,
        "external-dns leaves extdns's record, payload and all"
    );

    objects.publish_a_records(&[]);
    ok(&external_dns(objects.source), "external-dns: everything gone");
    assert_eq!(record(cloud, web), None);
    assert_eq!(record(cloud, api), ours, "external-dns never deletes extdns's record");
    extdns();
    assert_eq!(record(cloud, api), None);
}

/// [`side_by_side`] on `provider`'s zone (one of [`azure_fake::PROVIDERS`]), run as the test `test` inside a
/// network namespace with only loopback.
fn azure_side_by_side(test: &str, provider: &str) {
    differential::in_loopback_namespace(test, || azure_beside(provider));
}

/// [`side_by_side`] on `provider`'s zone.
fn azure_beside(provider: &str) {
    let Some((service, provider, zone, names)) = azure_fake::PROVIDERS.into_iter().find(|p| p.1 == provider) else {
        panic!("{provider} is not one of {:?}", azure_fake::PROVIDERS)
    };
    let fake = FakeAzure::start(&[(service, zone)]);
    let proxy = differential::proxy(&azure_fake::AZURE_HOSTS, fake.addr());
    let home = tempdir();
    let cloud = Az { fake, provider };
    side_by_side(&cloud, names, &|source| {
        azure_fake::external_dns(&proxy, provider, THEIRS, home.path(), source)
    });
}

#[test]
fn azure_metadata_ownership_beside_external_dns() {
    azure_side_by_side("azure_metadata_ownership_beside_external_dns", "azure");
}

#[test]
fn azure_private_dns_metadata_ownership_beside_external_dns() {
    azure_side_by_side(
        "azure_private_dns_metadata_ownership_beside_external_dns",
        "azure-private-dns",
    );
}

#[test]
fn cloudflare_metadata_ownership_beside_external_dns() {
    differential::in_loopback_namespace("cloudflare_metadata_ownership_beside_external_dns", || {
        let fake = FakeCloudflare::start(&[(ZONE_ID, "example.org")]);
        let proxy = differential::proxy(&["api.cloudflare.com"], fake.addr());
        let home = tempdir();
        let cloud = Cf(fake);
        side_by_side(&cloud, ["web.example.org", "api.example.org"], &|source| {
            let mut cmd = differential::external_dns(Some(&proxy), home.path(), source, &["CF_"]);
            cmd.env("CF_API_TOKEN", TOKEN)
                .args(["--registry=txt", "--txt-owner-id", THEIRS, "--policy=sync"])
                .args(["--provider=cloudflare", "--domain-filter=example.org"]);
            cli::run(&mut cmd)
        });
    });
}
