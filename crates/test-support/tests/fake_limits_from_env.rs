//! The variables that lower the cloud fakes' documented limits (`EXTDNS_FAKE_<CLOUD>_LIMITS`), as a run
//! sets them: read where each fake starts, so the tests run this binary again with them set (a process's
//! environment is not for a test to change under the others), and the lowered limits are seen on the
//! wire, each throttled as its API throttles.

use extdns_test_support::azure_fake::{self, FakeAzure, Service};
use extdns_test_support::cli;
use extdns_test_support::cloudflare_fake::{FakeCloudflare, TOKEN};
use extdns_test_support::fake::answer;
use extdns_test_support::google_fake::{self, FakeGoogle};
use extdns_test_support::route53_fake::Fake as FakeRoute53;
use std::process::Output;

/// The test this binary runs again with the variables set.
const CHILD: &str = "lowered_limits_seen_on_the_wire";

/// This test binary, running [`CHILD`] alone with `env` and none of the caller's fake variables.
fn run_child(env: &[(&str, &str)]) -> Output {
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("no test binary: {e}"));
    let mut cmd = cli::command(exe, &["EXTDNS_FAKE_"]);
    cmd.args([CHILD, "--exact", "--ignored", "--nocapture", "--test-threads=1"]);
    cmd.envs(env.iter().copied());
    cli::run(&mut cmd)
}

#[test]
fn each_cloud_fake_starts_with_the_limits_its_variable_lowers() {
    let out = run_child(&[
        ("EXTDNS_FAKE_ROUTE53_LIMITS", "1/10s"),
        ("EXTDNS_FAKE_CLOUDFLARE_LIMITS", "2/5m"),
        ("EXTDNS_FAKE_GOOGLE_LIMITS", "1/1m"),
        ("EXTDNS_FAKE_AZURE_LIMITS", "read=1/10s"),
    ]);
    cli::ok(&out, "the fakes with lowered limits");
    cli::assert_mentions(&cli::text(&out), &["1 passed"]);
}

#[test]
fn a_refused_value_stops_the_fake_naming_the_variable() {
    let out = run_child(&[("EXTDNS_FAKE_ROUTE53_LIMITS", "10/1s")]);
    let text = cli::text(&out);
    assert!(!out.status.success(), "started with a raised limit:\n{text}");
    cli::assert_mentions(
        &text,
        &[
            "cannot start the fake: EXTDNS_FAKE_ROUTE53_LIMITS=\"10/1s\"",
            "above the documented limit 5/1s",
        ],
    );
    let out = run_child(&[("EXTDNS_FAKE_AZURE_LIMITS", "reads=1/s")]);
    cli::assert_mentions(
        &cli::text(&out),
        &[
            "EXTDNS_FAKE_AZURE_LIMITS=\"reads=1/s\"",
            "names a kind other than read, write or delete",
        ],
    );
}

/// Whether a `Retry-After` is a whole number of seconds within `1..=most`.
fn retry_within(retry: Option<&str>, most: u64) -> bool {
    retry
        .and_then(|r| r.parse::<u64>().ok())
        .is_some_and(|s| (1..=most).contains(&s))
}

/// Whether the run sets `cloud`'s variable: each cloud's part of [`CHILD`] runs only then, so a run that
/// sets one variable meets that fake alone.
fn set(cloud: &str) -> bool {
    std::env::var_os(extdns_test_support::fake::limits::variable(cloud)).is_some()
}

#[tokio::test]
#[ignore = "run by each_cloud_fake_starts_with_the_limits_its_variable_lowers with the variables set"]
async fn lowered_limits_seen_on_the_wire() {
    let client = reqwest::Client::builder().no_proxy().build().unwrap_or_default();
    if set("ROUTE53") {
        route53(&client).await;
    }
    if set("CLOUDFLARE") {
        cloudflare(&client).await;
    }
    if set("GOOGLE") {
        google(&client).await;
    }
    if set("AZURE") {
        azure(&client).await;
    }
}

/// Route53 at 1/10s: one request, then `Throttling` (a 400, no Retry-After, as Route53 answers).
async fn route53(client: &reqwest::Client) {
    let route53 = FakeRoute53::start().await;
    let list = || {
        client.get(format!("{}/2013-04-01/hostedzone", route53.url)).header(
            "authorization",
            "AWS4-HMAC-SHA256 Credential=AKIDA/20260101/us-east-1/route53/aws4_request, Signature=0",
        )
    };
    assert_eq!(answer(list(), "retry-after").await.0, 200);
    let (status, retry, body) = answer(list(), "retry-after").await;
    assert_eq!((status, retry), (400, None), "{body}");
    assert!(body.contains("<Code>Throttling</Code>"), "{body}");
}

/// Cloudflare at 2/5m: two, then 429 code 971 with a Retry-After within the window.
async fn cloudflare(client: &reqwest::Client) {
    let cf = FakeCloudflare::start(&[]);
    let zones = || client.get(format!("{}/zones", cf.url)).bearer_auth(TOKEN);
    for _ in 0..2 {
        assert_eq!(answer(zones(), "retry-after").await.0, 200);
    }
    let (status, retry, body) = answer(zones(), "retry-after").await;
    assert_eq!(status, 429, "{body}");
    assert!(body.contains("971"), "{body}");
    assert!(retry_within(retry.as_deref(), 300), "{retry:?}");
}

/// Cloud DNS at 1/1m: one, then 429 `rateLimitExceeded`.
async fn google(client: &reqwest::Client) {
    let google = FakeGoogle::start(&[("example-org", "example.org")]);
    let token = google.issue_token();
    let managed = || {
        client
            .get(format!(
                "{}/projects/{}/managedZones",
                google.dns_url(),
                google_fake::PROJECT
            ))
            .bearer_auth(&token)
    };
    assert_eq!(answer(managed(), "retry-after").await.0, 200);
    let (status, _, body) = answer(managed(), "retry-after").await;
    assert_eq!(status, 429, "{body}");
    assert!(body.contains("rateLimitExceeded"), "{body}");
}

/// Resource Manager with its reads at 1/10s: one read, then 429 with Retry-After; writes keep their
/// documented bucket.
async fn azure(client: &reqwest::Client) {
    let azure = FakeAzure::start(&[(Service::Public, "example.org")]);
    assert_eq!(azure.state().faults.limits[1], azure_fake::WRITE_LIMIT);
    let token = azure.issue_token();
    let zone = format!(
        "{}/subscriptions/{}/resourceGroups/{}/providers/Microsoft.Network/dnsZones",
        azure.url,
        azure_fake::SUBSCRIPTION,
        azure_fake::RESOURCE_GROUP
    );
    let list = || client.get(format!("{zone}?api-version=2018-05-01")).bearer_auth(&token);
    assert_eq!(answer(list(), "retry-after").await.0, 200);
    let (status, retry, body) = answer(list(), "retry-after").await;
    assert_eq!(status, 429, "{body}");
    assert!(retry_within(retry.as_deref(), 10), "{retry:?}");
    let put = client
        .put(format!("{zone}/example.org/A/www?api-version=2018-05-01"))
        .bearer_auth(&token)
        .json(&serde_json::json!({"properties": {"TTL": 60, "ARecords": [{"ipv4Address": "192.0.2.1"}]}}));
    assert_eq!(answer(put, "retry-after").await.0, 201, "writes are not lowered");
}
