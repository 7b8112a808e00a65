//! The first sync at the account's limit (issue 50): `extdns --once` publishes a few hundred records into an
//! empty zone of each cloud fake whose documented limit is lowered (so the test stays short) and the
//! account's pacer set just under it with `--provider-request-rate`. From the fake's request log: no request
//! was throttled, the busiest span never held more than the fake's meter admits, and the writes are
//! exactly the fewest the API's batch rules allow (`extdns_test_support::first_sync`), the rest being the
//! reads a sync needs. Nothing here is timed: the fake refuses what passes its limit, so a controller
//! outrunning it fails on the 429s, however fast or slow the machine is.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use extdns_test_support::azure_fake::{self, FakeAzure, Service};
use extdns_test_support::cli::{self, ok, tempdir};
use extdns_test_support::cloudflare_fake::{FakeCloudflare, TOKEN};
use extdns_test_support::fake::{Meter, Op, RateLimit, RequestLog};
use extdns_test_support::first_sync::{self, PerRequest, Unit};
use extdns_test_support::google_fake::{self, FakeGoogle};
use extdns_test_support::manifests::lb_service;
use extdns_test_support::route53_fake::{self, Fake};

const OWNER: &str = "limit";
const ACCESS_KEY: &str = "AKIDFIRSTSYNC";
const CF_ZONE: &str = "023e105f4ecef8ad9ca31a8372d0c353";

/// `n` LoadBalancer Services `s<i>.example.org`, each with one address of 198.18.0.0/15.
fn services(dir: &Path, n: usize) {
    let docs: Vec<String> = (0..n)
        .map(|i| {
            let ip = format!("198.18.{}.{}", i / 256, i % 256);
            lb_service(&format!("s{i}"), &format!("s{i}.example.org"), &[&ip], &[])
        })
        .collect();
    cli::write_manifests(dir, &docs.join("---\n"));
}

/// `extdns --once` over `n` Services with the provider's `args` and `env`.
fn first_sync(n: usize, prefixes: &[&str], env: &[(&str, String)], args: &[&str]) -> Output {
    let dir = tempdir();
    services(dir.path(), n);
    let mut cmd = cli::command(env!("CARGO_BIN_EXE_extdns"), prefixes);
    cmd.envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .args(["--once", "--source=service", "--registry=txt", "--policy=sync"])
        .args(["--domain-filter=example.org", "--txt-owner-id", OWNER])
        .args(["--manifests", &dir.path().display().to_string()])
        .args(args);
    cli::run(&mut cmd)
}

/// The lowered meter of the Cloudflare and Cloud DNS tests, as both count (a window counting every call):
/// 20 per 2 s. extdns runs at 6 a second there (`--provider-request-rate=6`), so 20 requests leave over
/// more than 3 s and cannot arrive within 2.
const WINDOW: RateLimit = RateLimit::window(20, Duration::from_secs(2));

/// What the log shows of a first sync under `limit` (the fake's only limit on `account`): no 429, never
/// more in a span of the limit's window (a bucket's: one second) than it admits, `writes` requests of purpose `write` exactly
/// `least_writes`, and every other request one of the `reads` (by purpose), at most as many as each allows.
struct Expect<'a> {
    limit: RateLimit,
    account: &'a str,
    write: &'a str,
    least_writes: usize,
    /// Every other request's purpose, with the most of it the sync may send.
    reads: &'a [(&'a str, usize)],
}

fn check(log: &RequestLog, e: &Expect<'_>) {
    assert_eq!(log.throttled(), 0, "no request throttled:\n{}", log.lines().join("\n"));
    let span = match e.limit.meter {
        Meter::Window { window, .. } => window,
        Meter::Bucket { .. } => Duration::from_secs(1),
    };
    let busiest = log.most_in_window(e.account, span);
    let admitted = first_sync::most_admitted(e.limit, span);
    assert!(
        busiest <= admitted,
        "{busiest} requests in {span:?}, the limit admits {admitted}"
    );
    assert_eq!(log.count(e.write), e.least_writes, "writes filled to the API's maximum");
    let reads: usize = e.reads.iter().map(|(purpose, _)| log.count(purpose)).sum();
    assert_eq!(
        log.api_calls(),
        e.least_writes + reads,
        "nothing but the writes and the reads:\n{}",
        log.lines().join("\n")
    );
    for (purpose, most) in e.reads {
        assert!(
            log.count(purpose) <= *most,
            "{} {purpose} requests, at most {most}",
            log.count(purpose)
        );
    }
}

/// The fewest write requests for `n` records, each with its ownership record, 40 changes a request: 20
/// for 400.
fn owned_records_in_batches_of_40(n: usize) -> usize {
    let unit = Unit { changes: 2, bytes: 0 };
    let least_writes = first_sync::write_requests(vec![unit; n], PerRequest::changes(40));
    assert_eq!(least_writes, n.div_ceil(20));
    least_writes
}

/// A Route53 fake under `limit` alone, its zone `example.org`, and the environment that points extdns at
/// it with the test's access key.
fn route53(limit: RateLimit) -> (Fake, String, [(&'static str, String); 3]) {
    let fake = Fake::start_in_background().with_limits(vec![limit]);
    let zone = fake.zone("example.org", false, &[]);
    let env = [
        ("AWS_ACCESS_KEY_ID", ACCESS_KEY.to_string()),
        ("AWS_SECRET_ACCESS_KEY", "secret".to_string()),
        ("AWS_ENDPOINT_URL_ROUTE_53", fake.url.clone()),
    ];
    (fake, zone, env)
}

#[test]
fn route53_first_sync_at_the_account_s_limit_sends_the_fewest_batches_and_no_429() {
    let n = 400;
    // Route53's meter, a bucket, at 4 a second; extdns paced at 4 a second without burst, so the bucket's
    // 4 tokens absorb requests arriving closer together than they left.
    let limit = route53_fake::per_second(4);
    let (fake, zone, env) = route53(limit);
    let args = [
        "--provider=aws",
        "--aws-batch-change-size=40",
        "--aws-batch-change-interval=0s",
        "--provider-request-rate=4",
    ];
    ok(&first_sync(n, &["AWS_"], &env, &args), "first sync");
    // Each unit: its A record and its ownership TXT, their values' characters as Route53 counts them.
    let sets = fake.sets(&zone);
    let chars = |name: &str, kind: &str| -> Option<usize> {
        let set = sets.iter().find(|s| s.name == name && s.kind == kind)?;
        Some(set.resource_records.as_ref()?.items.iter().map(|v| v.value.len()).sum())
    };
    let units: Vec<Unit> = (0..n)
        .map(|i| {
            let a = chars(&format!("s{i}.example.org."), "A").unwrap_or_else(|| panic!("s{i} published"));
            let txt = chars(&format!("a-s{i}.example.org."), "TXT").unwrap_or_else(|| panic!("s{i} owned"));
            Unit {
                changes: 2,
                bytes: a + txt,
            }
        })
        .collect();
    let per_request = PerRequest {
        changes: 40,
        ..first_sync::ROUTE53
    };
    let least_writes = first_sync::write_requests(units, per_request);
    assert_eq!(least_writes, 20);
    check(
        &fake.lock().requests,
        &Expect {
            limit,
            account: ACCESS_KEY,
            write: "ChangeResourceRecordSets",
            least_writes,
            reads: &[("ListHostedZones", 1), ("ListResourceRecordSets", 1)],
        },
    );
}

#[test]
fn route53_under_a_hard_throttle_waits_it_out_and_writes_each_batch_once() {
    let n = 20;
    // Another client (or a lowered quota) leaves extdns one request every 4 s, while extdns paces itself
    // at Route53's documented 5 a second: nearly every request is throttled. A throttled call is no
    // attempt, so each call waits until the bucket admits it instead of spending its 3 retries in 3.5 s
    // and failing the sync.
    let limit = RateLimit::bucket(1, 0.25);
    let (fake, zone, env) = route53(limit);
    let args = [
        "--provider=aws",
        "--aws-batch-change-size=20",
        "--aws-batch-change-interval=0s",
    ];
    ok(
        &first_sync(n, &["AWS_"], &env, &args),
        "first sync under a hard throttle",
    );
    let sets = fake.sets(&zone);
    for i in 0..n {
        let has = |name: String, kind: &str| sets.iter().any(|s| s.name == name && s.kind == kind);
        assert!(has(format!("s{i}.example.org."), "A"), "s{i} published");
        assert!(has(format!("a-s{i}.example.org."), "TXT"), "s{i} owned");
    }
    let s = fake.lock();
    let log = &s.requests;
    assert!(
        log.throttled() > 0,
        "the fake throttled extdns:\n{}",
        log.lines().join("\n")
    );
    // Ten units of two changes a batch: two batches, each landed once; nothing else refused.
    let landed = log
        .iter()
        .filter(|r| r.purpose.name == "ChangeResourceRecordSets" && r.changed);
    assert_eq!(
        landed.count(),
        2,
        "each batch written once:\n{}",
        log.lines().join("\n")
    );
    let refused: Vec<String> = log
        .iter()
        .filter(|r| !r.status.is_success() && !r.throttled())
        .map(|r| format!("{} {}", r.status, r.line()))
        .collect();
    assert!(refused.is_empty(), "only throttles refused: {refused:?}");
}

#[test]
fn cloudflare_first_sync_at_the_token_s_limit_sends_the_fewest_batches_and_no_429() {
    let n = 400;
    let limit = WINDOW;
    let cf = FakeCloudflare::start(&[(CF_ZONE, "example.org")]);
    cf.state().faults.limit(vec![limit]);
    let env = [
        ("CF_API_TOKEN", TOKEN.to_string()),
        ("EXTDNS_CLOUDFLARE_API_URL", cf.url.clone()),
    ];
    let args = [
        "--provider=cloudflare",
        "--batch-change-size=40",
        "--batch-change-interval=0s",
        "--provider-request-rate=6",
    ];
    ok(&first_sync(n, &["CF_"], &env, &args), "first sync");
    let lines = cf.lines();
    assert_eq!(lines.len(), 2 * n, "every record and its ownership record:\n{lines:?}");
    let least_writes = owned_records_in_batches_of_40(n);
    check(
        &cf.state().requests,
        &Expect {
            limit,
            account: TOKEN,
            write: "batch",
            least_writes,
            reads: &[("zones.list", 1), ("records.list", 1)],
        },
    );
}

#[test]
fn google_first_sync_at_the_project_s_limit_sends_the_fewest_changes_and_no_429() {
    let n = 400;
    let limit = WINDOW;
    let fake = FakeGoogle::start(&[("example-org", "example.org")]);
    fake.state().faults.limit(vec![limit]);
    let home = tempdir();
    let env = [
        (
            "GOOGLE_APPLICATION_CREDENTIALS",
            fake.service_account_file(home.path()).display().to_string(),
        ),
        ("GCE_METADATA_HOST", fake.host.clone()),
        ("HOME", home.path().display().to_string()),
        ("EXTDNS_GOOGLE_API_URL", fake.dns_url()),
    ];
    let project = format!("--google-project={}", google_fake::PROJECT);
    let args = [
        "--provider=google",
        &project,
        "--google-batch-change-size=40",
        "--google-batch-change-interval=0s",
        "--provider-request-rate=6",
    ];
    ok(
        &first_sync(n, &["GOOGLE_", "GCE_", "CLOUDSDK_"], &env, &args),
        "first sync",
    );
    let lines = fake.lines();
    assert_eq!(
        lines.iter().filter(|l| l.contains(" A ")).count(),
        n,
        "every record:\n{lines:?}"
    );
    let least_writes = owned_records_in_batches_of_40(n);
    let pending_polls = fake.state().pending_polls as usize;
    check(
        &fake.state().requests,
        &Expect {
            limit,
            account: google_fake::PROJECT,
            write: "changes.create",
            least_writes,
            // The zone list, the record sets' page, and each change polled until `done`.
            reads: &[
                ("managedZones.list", 1),
                ("resourceRecordSets.list", 1),
                ("changes.get", least_writes * (pending_polls + 1)),
            ],
        },
    );
}

#[test]
fn azure_first_sync_at_the_subscription_s_limits_puts_each_record_set_once_and_no_429() {
    let n = 100;
    // Resource Manager's buckets of reads and of writes at 10 tokens refilled 50 a second; extdns's
    // requests at 40 a second, its writes too.
    let reads = RateLimit::bucket(10, 50.0).of(Op::Read);
    let writes = RateLimit::bucket(10, 50.0).of(Op::Write);
    let fake = FakeAzure::start(&[(Service::Public, "example.org")]);
    fake.state().faults.limit(vec![reads, writes]);
    let home = tempdir();
    let file = home.path().join("azure.json");
    let creds =
        serde_json::json!({ "aadClientId": azure_fake::CLIENT_ID, "aadClientSecret": azure_fake::CLIENT_SECRET });
    std::fs::write(&file, fake.azure_json(creds)).unwrap_or_else(|e| panic!("{e}"));
    let env = [("EXTDNS_AZURE_IMDS_URL", fake.url.clone())];
    let config = format!("--azure-config-file={}", file.display());
    let args = [
        "--provider=azure",
        &config,
        "--provider-request-rate=40",
        "--provider-write-rate=40",
    ];
    ok(&first_sync(n, &["AZURE_", "EXTDNS_AZURE_"], &env, &args), "first sync");
    let lines = fake.lines();
    assert_eq!(
        lines.len(),
        2 * n,
        "every record set and its ownership record set:\n{lines:?}"
    );
    let account = azure_fake::SUBSCRIPTION.to_ascii_lowercase();
    // One record set a request: the writes are the record sets.
    let least_writes = first_sync::write_requests(vec![Unit { changes: 1, bytes: 0 }; 2 * n], PerRequest::changes(1));
    check(
        &fake.state().requests,
        &Expect {
            // Both buckets together admit their sum.
            limit: RateLimit::bucket(20, 100.0),
            account: &account,
            write: "recordSets.put",
            least_writes,
            reads: &[("zones.list", 1), ("recordSets.list", 1)],
        },
    );
}
