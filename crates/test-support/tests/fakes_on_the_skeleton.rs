//! Each cloud fake's answers to the skeleton's faults, over HTTP as a client sees them: a refused record
//! refused the way its API refuses one record (the others land), a throttled call answered the way its API
//! throttles, and its token endpoints never faulted.

use extdns_test_support::azure_fake::{FakeAzure, Service};
use extdns_test_support::cloudflare_fake::{FakeCloudflare, TOKEN};
use extdns_test_support::dynamodb_fake::Fake as FakeDynamo;
use extdns_test_support::fake::answer;
use extdns_test_support::google_fake::{self, FakeGoogle};
use extdns_test_support::pihole_fake::FakePihole;
use extdns_test_support::route53_fake::Fake as FakeRoute53;
use serde_json::{Value, json};

/// A client for the fakes: on loopback, never through a proxy of the environment.
fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap_or_default()
}

/// Sends `r` and asserts that the answer has `expected` as its status and a body containing each of `words`.
async fn expect(r: reqwest::RequestBuilder, expected: u16, words: &[&str]) {
    let (status, _, body) = answer(r, "retry-after").await;
    assert_eq!(status, expected, "{body}");
    for word in words {
        assert!(body.contains(word), "{word:?} not in {body}");
    }
}

#[tokio::test]
async fn route53_refuses_the_whole_batch_and_throttles_with_a_400() {
    let fake = FakeRoute53::start().await;
    let zone = fake.zone("example.com", false, &[]);
    fake.lock().faults.refuse("bad.example.com");
    let change = |name: &str| {
        format!(
            "<ChangeResourceRecordSetsRequest><ChangeBatch><Changes><Change><Action>CREATE</Action>\
             <ResourceRecordSet><Name>{name}</Name><Type>A</Type><TTL>60</TTL><ResourceRecords>\
             <ResourceRecord><Value>192.0.2.1</Value></ResourceRecord></ResourceRecords></ResourceRecordSet>\
             </Change></Changes></ChangeBatch></ChangeResourceRecordSetsRequest>"
        )
    };
    let client = client();
    let post = |name: &str| {
        client
            .post(format!("{}/2013-04-01/hostedzone/{zone}/rrset/", fake.url))
            .header("authorization", "AWS4-HMAC-SHA256 Credential=test")
            .body(change(name))
    };
    expect(
        post("bad.example.com."),
        400,
        &["InvalidChangeBatch", "bad.example.com"],
    )
    .await;
    expect(post("good.example.com."), 200, &[]).await;
    assert!(fake.find(&zone, "good.example.com", "A").is_some());

    fake.lock().faults.throttle_next = 1;
    expect(post("other.example.com."), 400, &["<Code>Throttling</Code>"]).await;
    let s = fake.lock();
    assert_eq!(
        (s.requests.count("ChangeResourceRecordSets"), s.requests.throttled()),
        (3, 1)
    );
    assert_eq!(s.refused_batches, 1);
}

#[tokio::test]
async fn cloudflare_refuses_one_record_with_error_1004_and_throttles_with_971() {
    let cf = FakeCloudflare::start(&[("z1", "example.org")]);
    cf.state().faults.refuse("bad.example.org");
    let client = client();
    let create = |name: &str| {
        client
            .post(format!("{}/zones/z1/dns_records", cf.url))
            .bearer_auth(TOKEN)
            .json(&json!({"name": name, "type": "A", "content": "192.0.2.1"}))
    };
    let (status, _, body) = answer(create("bad.example.org"), "retry-after").await;
    assert_eq!(status, 400);
    assert_eq!(
        serde_json::from_str::<Value>(&body)
            .ok()
            .map(|v| v["errors"][0]["code"].clone()),
        Some(json!(1004))
    );
    expect(create("good.example.org"), 200, &[]).await;
    assert_eq!(cf.lines(), ["good.example.org A 192.0.2.1 proxied=false ttl=1"]);

    cf.state().faults.throttle_next = 1;
    let (status, retry, body) = answer(create("other.example.org"), "retry-after").await;
    assert_eq!((status, retry.as_deref()), (429, Some("0")));
    assert!(body.contains("971"), "{body}");
}

#[tokio::test]
async fn cloud_dns_refuses_the_change_naming_the_entry_and_throttles_with_rate_limit_exceeded() {
    let fake = FakeGoogle::start(&[("example-org", "example.org")]);
    fake.state().faults.refuse("bad.example.org.");
    let token = fake.issue_token();
    let client = client();
    let change = |name: &str| {
        client
            .post(format!(
                "{}/projects/{}/managedZones/example-org/changes",
                fake.dns_url(),
                google_fake::PROJECT
            ))
            .bearer_auth(&token)
            .json(&json!({"additions": [{"name": name, "type": "A", "ttl": 60, "rrdatas": ["192.0.2.1"]}]}))
    };
    expect(change("bad.example.org."), 400, &["entity.change.additions[0].name"]).await;
    expect(change("good.example.org."), 200, &[]).await;
    assert_eq!(fake.lines(), ["good.example.org. A 60 192.0.2.1"]);

    fake.state().faults.throttle_next = 1;
    let token_call = client
        .get(format!(
            "{}/computeMetadata/v1/instance/service-accounts/default/token",
            fake.url
        ))
        .header("metadata-flavor", "Google");
    assert_eq!(
        answer(token_call, "retry-after").await.0,
        200,
        "the metadata server is never faulted"
    );
    expect(change("other.example.org."), 429, &["rateLimitExceeded"]).await;
    assert_eq!(fake.state().requests.count("changes.create"), 3);
}

#[tokio::test]
async fn resource_manager_throttles_with_retry_after_in_seconds_and_milliseconds() {
    let fake = FakeAzure::start(&[(Service::Public, "example.org")]);
    let token = fake.issue_token();
    fake.state().faults.throttle_next = 1;
    let url = format!(
        "{}/subscriptions/{}/resourceGroups/{}/providers/Microsoft.Network/dnsZones?api-version=2018-05-01",
        fake.url,
        extdns_test_support::azure_fake::SUBSCRIPTION,
        extdns_test_support::azure_fake::RESOURCE_GROUP
    );
    let client = client();
    let (status, retry, _) = answer(client.get(&url).bearer_auth(&token), "retry-after").await;
    assert_eq!((status, retry.as_deref()), (429, Some("1")));
    fake.state().faults.throttle_next = 1;
    let (_, ms, _) = answer(client.get(&url).bearer_auth(&token), "retry-after-ms").await;
    assert_eq!(ms.as_deref(), Some("20"));
    expect(client.get(&url).bearer_auth(&token), 200, &[]).await;
    assert_eq!(fake.state().requests.count("zones.list"), 3);
}

#[tokio::test]
async fn pihole_refuses_an_item_naming_a_refused_host_as_an_invalid_value() {
    let pi = FakePihole::start(None);
    pi.state().faults.refuse("bad.example.org");
    let client = client();
    let put = |item: &str| client.put(format!("{}/api/config/dns/hosts/{item}", pi.url));
    expect(
        put("192.0.2.1 bad.example.org"),
        400,
        &["Invalid value", "bad.example.org"],
    )
    .await;
    expect(put("192.0.2.1 good.example.org"), 201, &[]).await;
    assert_eq!(pi.lines(), ["hosts: 192.0.2.1 good.example.org"]);
    assert_eq!(pi.state().requests.count("item.put"), 2);
}

#[tokio::test]
async fn dynamodb_fails_the_refused_statement_alone_and_throttles_with_throttling_exception() {
    let fake = FakeDynamo::start().await;
    fake.table("t");
    fake.lock().faults.refuse("bad");
    let client = client();
    let call = |op: &str, body: Value| {
        client
            .post(&fake.url)
            .header("x-amz-target", format!("DynamoDB_20120810.{op}"))
            .header("content-type", "application/x-amz-json-1.0")
            .header(
                "authorization",
                "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0",
            )
            .body(body.to_string())
    };
    let insert = |key: &str| json!({"Statement": "INSERT INTO \"t\" VALUE {'k':?}", "Parameters": [{"S": key}]});
    let (status, _, body) = answer(
        call(
            "BatchExecuteStatement",
            json!({"Statements": [insert("bad"), insert("good")]}),
        ),
        "retry-after",
    )
    .await;
    assert_eq!(status, 200);
    let responses = serde_json::from_str::<Value>(&body)
        .map(|v| v["Responses"].clone())
        .unwrap_or_default();
    assert_eq!(responses[0]["Error"]["Code"], "ValidationError", "{body}");
    assert!(responses[1].get("Error").is_none(), "{body}");
    assert_eq!(fake.items("t").len(), 1);

    fake.lock().faults.throttle_next = 1;
    expect(call("Scan", json!({"TableName": "t"})), 400, &["ThrottlingException"]).await;
    assert_eq!(fake.lock().requests.count("Scan"), 1);
}

/// Every fake enforces its API's documented limits from the start, keyed as its vendor keys them.
#[test]
fn each_cloud_fake_enforces_its_documented_limits_from_the_start() {
    use extdns_test_support::fake::{Meter, Op};
    use extdns_test_support::{azure_fake, cloudflare_fake, route53_fake};
    let route53 = FakeRoute53::start_in_background();
    assert_eq!(route53.lock().faults.limits, [route53_fake::RATE_LIMIT]);
    assert_eq!(
        route53_fake::RATE_LIMIT.meter,
        Meter::Bucket {
            capacity: 5,
            per_second: 5.0
        }
    );
    let cf = FakeCloudflare::start(&[]);
    assert_eq!(cf.state().faults.limits, [cloudflare_fake::RATE_LIMIT]);
    let azure = FakeAzure::start(&[]);
    let limits = azure.state().faults.limits.clone();
    assert_eq!(
        limits.iter().map(|l| l.counts).collect::<Vec<_>>(),
        [Some(Op::Read), Some(Op::Write), Some(Op::Delete)]
    );
    assert_eq!(limits[0], azure_fake::READ_LIMIT);
    let google = FakeGoogle::start(&[]);
    assert_eq!(google.state().faults.limits, [google_fake::RATE_LIMIT]);
}

#[tokio::test]
async fn route53_counts_per_access_key_and_throttles_past_its_bucket() {
    use extdns_test_support::route53_fake;
    let fake = FakeRoute53::start_in_background().with_limits(vec![route53_fake::per_second(2)]);
    let client = client();
    let list = |key: &str| {
        client.get(format!("{}/2013-04-01/hostedzone", fake.url)).header(
            "authorization",
            format!("AWS4-HMAC-SHA256 Credential={key}/20260101/us-east-1/route53/aws4_request, Signature=0"),
        )
    };
    expect(list("AKIDA"), 200, &[]).await;
    expect(list("AKIDA"), 200, &[]).await;
    let (status, _, body) = answer(list("AKIDA"), "retry-after").await;
    assert_eq!(status, 400, "past the account's bucket");
    assert!(body.contains("<Code>Throttling</Code>"), "{body}");
    assert_eq!(answer(list("AKIDB"), "retry-after").await.0, 200, "another account");
    let s = fake.lock();
    assert_eq!(
        s.requests.iter().map(|r| r.account.as_str()).collect::<Vec<_>>(),
        ["AKIDA", "AKIDA", "AKIDA", "AKIDB"]
    );
}

#[tokio::test]
async fn resource_manager_counts_reads_and_writes_of_each_subscription_apart() {
    use extdns_test_support::azure_fake::{RESOURCE_GROUP, SUBSCRIPTION};
    use extdns_test_support::fake::{Op, RateLimit};
    let fake = FakeAzure::start(&[(Service::Public, "example.org")]);
    fake.state().faults.limit(vec![
        RateLimit::bucket(1, 0.001).of(Op::Read),
        RateLimit::bucket(1, 0.001).of(Op::Write),
    ]);
    let token = fake.issue_token();
    let client = client();
    let zone = format!(
        "{}/subscriptions/{SUBSCRIPTION}/resourceGroups/{RESOURCE_GROUP}/providers/Microsoft.Network/dnsZones",
        fake.url
    );
    let list = || client.get(format!("{zone}?api-version=2018-05-01")).bearer_auth(&token);
    let put = || {
        client
            .put(format!("{zone}/example.org/A/www?api-version=2018-05-01"))
            .bearer_auth(&token)
            .json(&json!({"properties": {"TTL": 60, "ARecords": [{"ipv4Address": "192.0.2.1"}]}}))
    };
    expect(list(), 200, &[]).await;
    assert_eq!(
        answer(put(), "retry-after").await.0,
        201,
        "writes have their own bucket"
    );
    let (status, retry, _) = answer(list(), "retry-after").await;
    assert_eq!(status, 429);
    assert!(retry.is_some_and(|r| r.parse::<u64>().is_ok_and(|s| s >= 1)));
    expect(put(), 429, &[]).await;
    let s = fake.state();
    assert!(s.requests.iter().all(|r| !r.purpose.api || r.account == SUBSCRIPTION));
    assert_eq!(s.requests.writes(), 1, "the one PUT that landed");
}

#[tokio::test]
async fn cloud_dns_counts_per_project_and_cloudflare_per_token() {
    use extdns_test_support::fake::RateLimit;
    use std::time::Duration;
    let google = FakeGoogle::start(&[("example-org", "example.org")]);
    google
        .state()
        .faults
        .limit(vec![RateLimit::window(1, Duration::from_secs(3600))]);
    let token = google.issue_token();
    let client = client();
    let zones = |project: &str| {
        client
            .get(format!("{}/projects/{project}/managedZones", google.dns_url()))
            .bearer_auth(&token)
    };
    expect(zones(google_fake::PROJECT), 200, &[]).await;
    expect(zones(google_fake::PROJECT), 429, &[]).await;
    assert_ne!(
        answer(zones("another-project"), "retry-after").await.0,
        429,
        "its own quota"
    );

    let cf = FakeCloudflare::start(&[]);
    cf.state()
        .faults
        .limit(vec![RateLimit::window(1, Duration::from_secs(3600))]);
    let zones = |token: &str| client.get(format!("{}/zones", cf.url)).bearer_auth(token);
    expect(zones(TOKEN), 200, &[]).await;
    let (status, retry, _) = answer(zones(TOKEN), "retry-after").await;
    assert_eq!((status, retry.is_some()), (429, true));
    assert_ne!(
        answer(zones("another-token"), "retry-after").await.0,
        429,
        "its own limit"
    );
}
