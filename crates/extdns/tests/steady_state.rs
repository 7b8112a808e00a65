//! Steady state within a rate-limited cloud's budget (issue 50): the controller plans from the records it
//! read, its own writes folded in, until `--provider-reread-interval` has passed. Read from the fakes'
//! request logs: syncs with nothing changed send nothing, one change sends only its write (also a change of
//! a record created since the read, which Cloudflare addresses by an id only the write's answer gave), and
//! a record deleted behind extdns's back comes back at the first sync after the re-read interval. On Azure,
//! which takes one record set a request, a changed address is one request: its ownership record, unchanged,
//! is not written again.

use std::sync::Arc;
use std::time::Duration;

use extdns::providers::build_pooled_provider;
use extdns::run::build_controller;
use extdns::settings::{Settings, controller_with_env};
use extdns_controller::{Controller, Metrics, SyncState};
use extdns_provider::budget::PacerPool;
use extdns_test_support::azure_fake::{self, FakeAzure, Service};
use extdns_test_support::cli::{tempdir, write_manifests};
use extdns_test_support::cloudflare_fake::{FakeCloudflare, TOKEN};
use extdns_test_support::fake::RequestLog;
use extdns_test_support::manifests::lb_service;
use extdns_test_support::route53_fake::{self, Fake};
use tempfile::TempDir;

const CF_ZONE: &str = "023e105f4ecef8ad9ca31a8372d0c353";
/// Long enough that the syncs meant to fall within it do, on a busy machine too; the repair waits it out.
const REREAD: Duration = Duration::from_secs(8);

/// Services `s0..s2` at `s<i>.example.org`, `s0` at `first_ip`.
fn manifests(dir: &TempDir, first_ip: &str) {
    let docs: Vec<String> = (0..3)
        .map(|i| {
            let ip = if i == 0 {
                first_ip.to_string()
            } else {
                format!("192.0.2.{}", i + 1)
            };
            lb_service(&format!("s{i}"), &format!("s{i}.example.org"), &[&ip], &[])
        })
        .collect();
    write_manifests(dir.path(), &docs.join("---\n"));
}

/// The settings of a controller over `dir`'s manifests with `args` for its provider and `env` as its
/// environment, reading its zones again every [`REREAD`].
fn settings(dir: &TempDir, args: &[&str], env: Vec<(String, String)>) -> Settings {
    let manifests = dir.path().display().to_string();
    let reread = format!("--provider-reread-interval={}s", REREAD.as_secs());
    let mut argv = vec![
        "extdns",
        "--source=service",
        "--registry=txt",
        "--domain-filter=example.org",
        "--txt-owner-id=steady",
        "--manifests",
        &manifests,
        &reread,
    ];
    argv.extend_from_slice(args);
    let cli = extdns::flags::try_parse_from(&argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
    let var = move |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    controller_with_env(&cli.flags, &var).unwrap_or_else(|e| panic!("{argv:?}: {e}"))
}

async fn controller(settings: &Settings) -> Controller {
    let provider = build_pooled_provider(&settings.provider, None, &Arc::new(PacerPool::new()))
        .await
        .unwrap_or_else(|e| panic!("provider: {e}"));
    build_controller(settings, provider, Arc::new(Metrics::new("test", "test")))
        .await
        .unwrap_or_else(|e| panic!("controller: {e}"))
}

/// One full sync as the loop runs it on its interval; the number of changes it applied.
async fn sync(c: &Controller, state: &mut SyncState) -> usize {
    let report = c.sync(state, true).await.unwrap_or_else(|e| panic!("sync: {e}"));
    report.changes.len()
}

/// Five syncs with nothing changed: none writes, and the fake was sent nothing at all (`sent` drains its log).
async fn five_syncs_send_nothing(c: &Controller, state: &mut SyncState, sent: impl Fn() -> Vec<String>) {
    for _ in 0..5 {
        assert_eq!(sync(c, state).await, 0);
    }
    assert_eq!(sent(), Vec::<String>::new(), "nothing changed: nothing sent");
}

/// `sent` (Route53 requests as [`drain`] gives them) lists the zone's record sets: a full read.
fn assert_read_whole(sent: &[String]) {
    assert!(sent.iter().any(|l| l.starts_with("ListResourceRecordSets")), "{sent:?}");
}

/// The log's requests as `purpose status` lines, and the log emptied.
fn drain(log: &mut RequestLog) -> Vec<String> {
    let lines = log
        .iter()
        .map(|r| format!("{} {}", r.purpose.name, r.status.as_u16()))
        .collect();
    log.clear();
    lines
}

/// A Route53 fake holding `example.org`, the Services' manifests (`s0` at 192.0.2.1), and a controller
/// signing with `access_key` against it.
async fn route53(access_key: &str) -> (Fake, String, TempDir, Controller) {
    let fake = Fake::start_in_background();
    let zone = fake.zone("example.org", false, &[]);
    let dir = tempdir();
    manifests(&dir, "192.0.2.1");
    let env = vec![
        ("AWS_ACCESS_KEY_ID".to_string(), access_key.to_string()),
        ("AWS_SECRET_ACCESS_KEY".to_string(), "secret".to_string()),
        ("AWS_REGION".to_string(), "us-east-1".to_string()),
        ("AWS_ENDPOINT_URL_ROUTE_53".to_string(), fake.url.clone()),
    ];
    let c = controller(&settings(&dir, &["--provider=aws"], env)).await;
    (fake, zone, dir, c)
}

#[tokio::test(flavor = "multi_thread")]
async fn route53_steady_state_sends_only_writes_and_repairs_an_outside_delete_after_the_reread_interval() {
    let (fake, zone, dir, c) = route53("AKIDSTEADY").await;
    let mut state = SyncState::default();
    assert_eq!(
        sync(&c, &mut state).await,
        3,
        "the first sync creates the three records"
    );
    let first = drain(&mut fake.lock().requests);
    assert_read_whole(&first);

    five_syncs_send_nothing(&c, &mut state, || drain(&mut fake.lock().requests)).await;

    manifests(&dir, "192.0.2.99");
    assert_eq!(sync(&c, &mut state).await, 1);
    assert_eq!(
        drain(&mut fake.lock().requests),
        ["ChangeResourceRecordSets 200"],
        "one change: only its write"
    );
    // A record created since the read, changed again: built from what extdns wrote, so Route53 takes it.
    manifests(&dir, "192.0.2.100");
    assert_eq!(sync(&c, &mut state).await, 1);
    assert_eq!(drain(&mut fake.lock().requests), ["ChangeResourceRecordSets 200"]);
    let read_since = tokio::time::Instant::now();

    // Someone deletes s1 in the console: not seen until the zone is read again.
    let key = (route53_fake::absolute("s1.example.org"), "A".to_string(), String::new());
    let removed = fake
        .lock()
        .zones
        .iter_mut()
        .find(|z| z.id == zone)
        .and_then(|z| z.sets.remove(&key));
    assert!(removed.is_some(), "s1 was there");
    assert_eq!(sync(&c, &mut state).await, 0);
    assert!(fake.find(&zone, "s1.example.org", "A").is_none());
    // The interval is jittered by a tenth at most.
    tokio::time::sleep_until(read_since + REREAD.mul_f64(1.1) + Duration::from_millis(200)).await;
    assert_eq!(
        sync(&c, &mut state).await,
        1,
        "the re-read finds s1 missing and creates it"
    );
    let repair = drain(&mut fake.lock().requests);
    assert_read_whole(&repair);
    assert!(fake.find(&zone, "s1.example.org", "A").is_some(), "s1 repaired");
    assert_eq!(
        fake.find(&zone, "s0.example.org", "A")
            .and_then(|s| s.resource_records)
            .map(|v| v.items.iter().map(|i| i.value.clone()).collect::<Vec<_>>()),
        Some(vec!["192.0.2.100".to_string()])
    );
}

/// The first value of `name`'s `kind` record set in the fake's `zone`.
fn route53_value(fake: &Fake, zone: &str, name: &str, kind: &str) -> Option<String> {
    let set = fake.find(zone, name, kind)?;
    Some(set.resource_records?.items.first()?.value.clone())
}

#[tokio::test(flavor = "multi_thread")]
async fn route53_a_name_another_owner_took_over_since_the_read_is_not_taken_back() {
    let (fake, zone, dir, c) = route53("AKIDTAKEOVER").await;
    let mut state = SyncState::default();
    assert_eq!(sync(&c, &mut state).await, 3);

    // Within the re-read interval another owner takes s0 over: its address and its ownership record.
    for (name, kind, value) in [
        ("s0.example.org", "A", "203.0.113.9".to_string()),
        ("a-s0.example.org", "TXT", {
            let ours = route53_value(&fake, &zone, "a-s0.example.org", "TXT").expect("s0 owned by us");
            assert!(ours.contains("owner=steady"), "{ours}");
            ours.replace("owner=steady", "owner=other")
        }),
    ] {
        let mut set = fake.find(&zone, name, kind).unwrap_or_else(|| panic!("{name} {kind}"));
        set.resource_records = Some(route53_fake::Values {
            items: vec![route53_fake::Value { value }],
        });
        fake.put(&zone, set);
    }
    // Our Service changes: planned from the cached read, the update's DELETE no longer matches what the
    // zone holds, so Route53 refuses it rather than the update taking the name back.
    manifests(&dir, "192.0.2.99");
    let refused = c.sync(&mut state, true).await;
    assert!(refused.is_err(), "the stale update is refused: {refused:?}");
    assert_eq!(
        route53_value(&fake, &zone, "s0.example.org", "A").as_deref(),
        Some("203.0.113.9")
    );
    fake.lock().requests.clear();
    // The failed sync dropped the cache: the next one reads the zone again, sees the other owner, and
    // leaves s0 alone, this sync and the next.
    for _ in 0..2 {
        assert_eq!(sync(&c, &mut state).await, 0, "s0 is not ours any more");
    }
    assert_read_whole(&drain(&mut fake.lock().requests));
    assert_eq!(
        route53_value(&fake, &zone, "s0.example.org", "A").as_deref(),
        Some("203.0.113.9")
    );
    let owner = route53_value(&fake, &zone, "a-s0.example.org", "TXT").unwrap_or_default();
    assert!(owner.contains("owner=other"), "{owner}");
}

#[tokio::test(flavor = "multi_thread")]
async fn cloudflare_steady_state_changes_a_record_created_since_the_read_by_its_new_id() {
    let fake = FakeCloudflare::start(&[(CF_ZONE, "example.org")]);
    let dir = tempdir();
    manifests(&dir, "192.0.2.1");
    let env = vec![
        ("CF_API_TOKEN".to_string(), TOKEN.to_string()),
        ("EXTDNS_CLOUDFLARE_API_URL".to_string(), fake.url.clone()),
    ];
    let c = controller(&settings(&dir, &["--provider=cloudflare"], env)).await;
    let mut state = SyncState::default();
    assert_eq!(sync(&c, &mut state).await, 3);
    fake.state().requests.clear();

    five_syncs_send_nothing(&c, &mut state, || drain(&mut fake.state().requests)).await;

    // s0 was created after the read: its update names the id the create's answer gave.
    manifests(&dir, "192.0.2.99");
    assert_eq!(sync(&c, &mut state).await, 1);
    let write = drain(&mut fake.state().requests);
    assert_eq!(write.len(), 1, "one change: only its write: {write:?}");
    assert!(write[0].ends_with(" 200"), "{write:?}");
    let lines = fake.lines();
    let s0: Vec<&String> = lines.iter().filter(|l| l.starts_with("s0.example.org A ")).collect();
    assert_eq!(s0.len(), 1, "{lines:?}");
    assert!(s0[0].contains("192.0.2.99"), "{lines:?}");
}

/// Resource Manager's calls in `log` as `METHOD path status` lines (the token grants left out), and the log
/// emptied.
fn drain_api(log: &mut RequestLog) -> Vec<String> {
    let lines = log
        .iter()
        .filter(|r| r.purpose.api)
        .map(|r| format!("{} {} {}", r.method, r.path, r.status.as_u16()))
        .collect();
    log.clear();
    lines
}

#[tokio::test(flavor = "multi_thread")]
async fn azure_steady_state_sends_nothing_at_rest_and_one_put_a_changed_address() {
    let fake = FakeAzure::start(&[(Service::Public, "example.org")]);
    let (dir, home) = (tempdir(), tempdir());
    manifests(&dir, "192.0.2.1");
    let file = home.path().join("azure.json");
    let creds =
        serde_json::json!({ "aadClientId": azure_fake::CLIENT_ID, "aadClientSecret": azure_fake::CLIENT_SECRET });
    std::fs::write(&file, fake.azure_json(creds)).unwrap_or_else(|e| panic!("{e}"));
    let config = format!("--azure-config-file={}", file.display());
    let c = controller(&settings(&dir, &["--provider=azure", &config], Vec::new())).await;
    let mut state = SyncState::default();
    assert_eq!(sync(&c, &mut state).await, 3);
    let first = drain_api(&mut fake.state().requests);
    let puts = first.iter().filter(|l| l.starts_with("PUT")).count();
    assert_eq!(puts, 6, "three records and their ownership records: {first:?}");

    five_syncs_send_nothing(&c, &mut state, || drain_api(&mut fake.state().requests)).await;

    // s0's address changes twice (the second time from the ETag its first write answered): each change is
    // the record's PUT alone, its ownership record saying what it said.
    for ip in ["192.0.2.99", "192.0.2.100"] {
        manifests(&dir, ip);
        assert_eq!(sync(&c, &mut state).await, 1);
        let sent = drain_api(&mut fake.state().requests);
        assert_eq!(sent.len(), 1, "one change: one request: {sent:?}");
        assert!(
            sent[0].starts_with("PUT ") && sent[0].ends_with("/A/s0 200"),
            "{sent:?}"
        );
        let a = fake
            .get(Service::Public, "example.org", "s0", "A")
            .map(|s| s.properties);
        assert_eq!(
            a,
            Some(serde_json::json!({ "TTL": 300, "ARecords": [{ "ipv4Address": ip }] }))
        );
    }
    assert!(fake.get(Service::Public, "example.org", "a-s0", "TXT").is_some());
}

// ------------------------------------------------------------------------------------------- Cloud DNS

/// The Cloud DNS calls in `log` as `purpose status` lines (the token grants left out), and the log emptied.
fn drain_google(log: &mut RequestLog) -> Vec<String> {
    let lines = log
        .iter()
        .filter(|r| r.purpose.api)
        .map(|r| format!("{} {}", r.purpose.name, r.status.as_u16()))
        .collect();
    log.clear();
    lines
}

/// Cloud DNS at rest and under one change (issue 50): in sync, five syncs send nothing at all (no write,
/// no read: the zone is read again only on the slow re-read schedule); one changed address is one batched
/// write (one `changes.create`, and the poll of its status) and no read; once the re-read interval has
/// passed, one sync reads the zone whole again and writes nothing.
#[tokio::test(flavor = "multi_thread")]
async fn google_steady_state_sends_nothing_at_rest_and_one_change_is_one_batched_write() {
    use extdns_test_support::google_fake::{self, FakeGoogle};
    let fake = FakeGoogle::start(&[("example-org", "example.org")]);
    let (dir, home) = (tempdir(), tempdir());
    manifests(&dir, "192.0.2.1");
    let key = fake.service_account_file(home.path());
    let env = vec![
        ("GOOGLE_APPLICATION_CREDENTIALS".to_string(), key.display().to_string()),
        ("EXTDNS_GOOGLE_API_URL".to_string(), fake.dns_url()),
    ];
    let project = format!("--google-project={}", google_fake::PROJECT);
    let args = ["--provider=google", &project, "--google-batch-change-interval=0s"];
    let c = controller(&settings(&dir, &args, env)).await;
    let mut state = SyncState::default();
    assert_eq!(sync(&c, &mut state).await, 3);
    let first = drain_google(&mut fake.state().requests);
    assert_eq!(
        first.iter().filter(|l| l.starts_with("changes.create")).count(),
        1,
        "three records and their ownership records in one change: {first:?}"
    );
    assert!(
        first.iter().any(|l| l.starts_with("resourceRecordSets.list")),
        "{first:?}"
    );

    five_syncs_send_nothing(&c, &mut state, || drain_google(&mut fake.state().requests)).await;

    manifests(&dir, "192.0.2.99");
    let read_before = tokio::time::Instant::now();
    assert_eq!(sync(&c, &mut state).await, 1);
    let sent = drain_google(&mut fake.state().requests);
    // Cloud DNS keeps a change pending a while (the fake, one poll): a write counts once it is done, so
    // its status is asked for, which reads no record.
    let (polls, others): (Vec<&String>, Vec<&String>) = sent.iter().partition(|l| l.starts_with("changes.get"));
    assert_eq!(
        others,
        ["changes.create 200"],
        "one change: one batched write, no read: {sent:?}"
    );
    assert!(polls.len() <= 2, "its status asked for, not polled on: {sent:?}");
    let s0 = fake.lines();
    assert!(s0.contains(&"s0.example.org. A 300 192.0.2.99".to_string()), "{s0:?}");

    // The slow re-read: once its interval (jittered by a tenth at most) has passed, one full read, and
    // nothing to write.
    tokio::time::sleep_until(read_before + REREAD.mul_f64(1.1) + Duration::from_millis(200)).await;
    assert_eq!(sync(&c, &mut state).await, 0);
    let reread = drain_google(&mut fake.state().requests);
    assert!(
        reread.iter().any(|l| l.starts_with("resourceRecordSets.list")),
        "the zone read again: {reread:?}"
    );
    assert!(
        !reread.iter().any(|l| l.starts_with("changes.create")),
        "nothing written: {reread:?}"
    );
}
