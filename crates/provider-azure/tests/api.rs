//! The Azure providers against the Azure fake: both APIs and casings, paging, each credential path alone,
//! ETags (a record someone changed since the read is named and left alone), a refused PUT named while the
//! others land, 429 storms, and the order a record and its ownership record are written in.

use std::time::Duration;

use extdns_endpoint::{Change, Endpoint, RecordType, Ttl};
use extdns_provider::{Backoff, Provider, ProviderError, ReadState, Unit};
use extdns_provider_azure::{AzureConfig, AzureFile, AzureProvider, CredentialSource, Kind};
use extdns_test_support::apex;
use extdns_test_support::azure_fake::{self, FakeAzure, Service};
use serde_json::json;

fn fast() -> Backoff {
    Backoff {
        initial: Duration::from_millis(5),
        max: Duration::from_millis(200),
        max_attempts: 8,
        throttled_for: Duration::from_millis(500),
        ..Backoff::default()
    }
}

/// A provider configured as the binary configures it: from azure.json (AzureStackCloud at the fake).
fn provider_from_file(fake: &FakeAzure, kind: Kind, extra: serde_json::Value, env: &[(&str, &str)]) -> AzureProvider {
    let file = AzureFile::parse(&fake.azure_json(extra)).unwrap_or_else(|e| panic!("{e}"));
    let cloud = file.cloud().unwrap_or_else(|e| panic!("{e}"));
    let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let imds = fake.url.clone();
    let source = CredentialSource::select(&file, &cloud, "", &imds, &|k| {
        env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        !format!("{source:?}").contains("169.254.169.254"),
        "the managed identity endpoint must be the fake's: {source:?}"
    );
    let mut config = AzureConfig::new(kind, &file.subscription_id, &file.resource_group, source);
    config.cloud = cloud;
    config.api.calls.backoff = fast();
    AzureProvider::new(config).unwrap_or_else(|e| panic!("{e}"))
}

fn provider(fake: &FakeAzure, kind: Kind) -> AzureProvider {
    provider_from_file(
        fake,
        kind,
        json!({ "aadClientId": azure_fake::CLIENT_ID, "aadClientSecret": azure_fake::CLIENT_SECRET }),
        &[],
    )
}

fn sorted(mut eps: Vec<Endpoint>) -> Vec<(String, String, Vec<String>)> {
    let mut out: Vec<_> = eps
        .drain(..)
        .map(|e| {
            let mut t: Vec<String> = e.targets.iter().map(|t| t.as_str().to_string()).collect();
            t.sort();
            (e.dns_name.to_string(), e.record_type.as_str().to_string(), t)
        })
        .collect();
    out.sort();
    out
}

fn units(changes: &[Change]) -> Vec<Unit<'_>> {
    changes.iter().map(Unit::new).collect()
}

async fn records(p: &AzureProvider) -> Vec<Endpoint> {
    p.records().await.unwrap_or_else(|e| panic!("{e}")).endpoints
}

#[tokio::test]
async fn public_zones_round_trip_in_public_casing_across_pages() {
    let fake = FakeAzure::start(&[(Service::Public, "example.org"), (Service::Public, "other.org")]);
    fake.state().page_limit = 2;
    let p = provider(&fake, Kind::Public);
    let long = "v".repeat(600);
    let changes = vec![
        Change::Create(Endpoint::new(
            "www.example.org",
            RecordType::A,
            ["192.0.2.1", "192.0.2.2"],
        )),
        Change::Create(Endpoint::new("example.org", RecordType::Mx, ["10 mail.example.org"]).with_ttl(Ttl(60))),
        Change::Create(Endpoint::new(
            "t.example.org",
            RecordType::Txt,
            [long.as_str(), "second"],
        )),
        Change::Create(Endpoint::new(
            "_sip._tcp.other.org",
            RecordType::Srv,
            ["0 5 5060 sip.other.org"],
        )),
        Change::Create(Endpoint::new("web.other.org", RecordType::Cname, ["www.example.org"])),
    ];
    p.apply(&ReadState::default(), &units(&changes))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let a = fake
        .get(Service::Public, "example.org", "www", "A")
        .map(|s| s.properties);
    assert_eq!(
        a,
        Some(json!({ "TTL": 300, "ARecords": [{ "ipv4Address": "192.0.2.1" }, { "ipv4Address": "192.0.2.2" }] }))
    );
    let apex = fake
        .get(Service::Public, "example.org", "@", "MX")
        .map(|s| s.properties);
    assert_eq!(
        apex,
        Some(json!({ "TTL": 60, "MXRecords": [{ "preference": 10, "exchange": "mail.example.org" }] }))
    );
    let read = sorted(records(&p).await);
    for want in [
        ("www.example.org", "A", vec!["192.0.2.1", "192.0.2.2"]),
        ("example.org", "MX", vec!["10 mail.example.org"]),
        ("t.example.org", "TXT", vec![long.as_str(), "second"]),
        ("_sip._tcp.other.org", "SRV", vec!["0 5 5060 sip.other.org"]),
        ("web.other.org", "CNAME", vec!["www.example.org"]),
    ] {
        let mut targets: Vec<String> = want.2.iter().map(|s| s.to_string()).collect();
        targets.sort();
        let want = (want.0.to_string(), want.1.to_string(), targets);
        assert!(read.contains(&want), "{want:?} in {read:?}");
    }
    assert!(
        read.iter().any(|r| r.1 == "NS"),
        "the zone's NS records are read: {read:?}"
    );
    assert!(!read.iter().any(|r| r.1 == "SOA"), "SOA is not managed");
    let paged = fake
        .state()
        .requests
        .iter()
        .filter(|r| r.query.as_deref().is_some_and(|q| q.contains("$skipToken")))
        .count();
    assert!(paged >= 2, "lists are paged by nextLink");
    // Update and delete, each under the ETag of the read.
    let old = Endpoint::new("www.example.org", RecordType::A, ["192.0.2.1", "192.0.2.2"]);
    let new = Endpoint::new("www.example.org", RecordType::A, ["192.0.2.9"]);
    let changes = vec![
        Change::Update {
            old: Box::new(old),
            new: Box::new(new),
        },
        Change::Delete(Endpoint::new("web.other.org", RecordType::Cname, ["www.example.org"])),
    ];
    let read = p.records().await.unwrap_or_else(|e| panic!("{e}"));
    p.apply(&read.state, &units(&changes))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(fake.get(Service::Public, "other.org", "web", "CNAME").is_none());
    let a = fake
        .get(Service::Public, "example.org", "www", "A")
        .map(|s| s.properties["ARecords"].clone());
    assert_eq!(a, Some(json!([{ "ipv4Address": "192.0.2.9" }])));
    assert_eq!(fake.state().grants, ["client_secret"], "one token for every call");
}

#[tokio::test]
async fn private_zones_speak_camel_case_with_workload_identity_and_have_no_ns() {
    let fake = FakeAzure::start(&[(Service::Private, "internal.example")]);
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let token_file = dir.path().join("azure-identity-token");
    std::fs::write(&token_file, azure_fake::FEDERATED_TOKEN).unwrap_or_else(|e| panic!("{e}"));
    let tf = token_file.display().to_string();
    let p = provider_from_file(
        &fake,
        Kind::Private,
        json!({ "useWorkloadIdentityExtension": true, "tenantId": "" }),
        &[
            ("AZURE_TENANT_ID", azure_fake::TENANT),
            ("AZURE_CLIENT_ID", azure_fake::CLIENT_ID),
            ("AZURE_FEDERATED_TOKEN_FILE", &tf),
        ],
    );
    let changes = vec![
        Change::Create(Endpoint::new("db.internal.example", RecordType::Aaaa, ["2001:db8::1"])),
        Change::Create(Endpoint::new(
            "ns.internal.example",
            RecordType::Ns,
            ["ns1.internal.example"],
        )),
        Change::Create(Endpoint::new("t.internal.example", RecordType::Txt, ["\"hello\""])),
    ];
    let e = p.apply(&ReadState::default(), &units(&changes)).await.err();
    match e {
        Some(ProviderError::Partial { failures }) => {
            assert_eq!(failures.len(), 1, "{failures:?}");
            assert!(
                failures[0].key.dns_name.contains("ns.internal.example") && failures[0].reason.message.contains("NS")
            );
        }
        other => panic!("NS in a private zone must be named: {other:?}"),
    }
    let db = fake
        .get(Service::Private, "internal.example", "db", "AAAA")
        .map(|s| s.properties);
    assert_eq!(
        db,
        Some(json!({ "ttl": 300, "aaaaRecords": [{ "ipv6Address": "2001:db8::1" }] }))
    );
    let read = sorted(records(&p).await);
    assert_eq!(
        read,
        [
            (
                "db.internal.example".to_string(),
                "AAAA".to_string(),
                vec!["2001:db8::1".to_string()]
            ),
            (
                "t.internal.example".to_string(),
                "TXT".to_string(),
                vec!["\"hello\"".to_string()]
            ),
        ]
    );
    assert_eq!(fake.state().grants, ["client_assertion"]);
}

#[tokio::test]
async fn managed_identity_asks_the_fake_s_imds_with_the_user_assigned_identity() {
    let fake = FakeAzure::start(&[(Service::Public, "example.org")]);
    let p = provider_from_file(
        &fake,
        Kind::Public,
        json!({ "aadClientId": "msi", "aadClientSecret": "msi", "useManagedIdentityExtension": true,
                "userAssignedIdentityID": azure_fake::USER_ASSIGNED_CLIENT_ID }),
        &[],
    );
    assert!(records(&p).await.iter().any(|e| e.record_type == RecordType::Ns));
    assert_eq!(
        fake.state().grants,
        [format!("imds {}", azure_fake::USER_ASSIGNED_CLIENT_ID)]
    );
}

#[tokio::test]
async fn a_record_changed_since_the_read_is_named_and_never_overwritten() {
    let fake = FakeAzure::start(&[(Service::Public, "example.org")]);
    let p = provider(&fake, Kind::Public);
    fake.seed(
        Service::Public,
        "example.org",
        "www",
        "A",
        json!({ "TTL": 300, "ARecords": [{ "ipv4Address": "192.0.2.1" }] }),
    );
    let read = p.records().await.unwrap_or_else(|e| panic!("{e}"));
    // Someone else changes www and creates new after the read.
    let theirs = json!({ "TTL": 300, "ARecords": [{ "ipv4Address": "198.51.100.7" }] });
    fake.seed(Service::Public, "example.org", "www", "A", theirs.clone());
    fake.seed(Service::Public, "example.org", "new", "A", theirs.clone());
    let changes = vec![
        Change::Update {
            old: Box::new(Endpoint::new("www.example.org", RecordType::A, ["192.0.2.1"])),
            new: Box::new(Endpoint::new("www.example.org", RecordType::A, ["192.0.2.2"])),
        },
        Change::Create(Endpoint::new("new.example.org", RecordType::A, ["192.0.2.3"])),
        Change::Create(Endpoint::new("fine.example.org", RecordType::A, ["192.0.2.4"])),
    ];
    let e = p.apply(&read.state, &units(&changes)).await.err();
    let Some(ProviderError::Partial { failures }) = e else {
        panic!("conflicts must be reported: {e:?}")
    };
    let names: Vec<&str> = failures.iter().map(|f| f.key.dns_name.as_str()).collect();
    assert_eq!(failures.len(), 2, "{failures:?}");
    assert!(names.iter().any(|n| n.contains("www.example.org")) && names.iter().any(|n| n.contains("new.example.org")));
    assert!(
        failures.iter().all(|f| f.reason.message.contains("ETag")),
        "{failures:?}"
    );
    for name in ["www", "new"] {
        let got = fake
            .get(Service::Public, "example.org", name, "A")
            .map(|s| s.properties);
        assert_eq!(got, Some(theirs.clone()), "{name} is left as someone else wrote it");
    }
    assert!(
        fake.get(Service::Public, "example.org", "fine", "A").is_some(),
        "the good record lands"
    );
}

#[tokio::test]
async fn a_refused_put_is_named_and_the_others_land_through_a_429_storm() {
    let fake = FakeAzure::start(&[(Service::Public, "example.org")]);
    let p = provider(&fake, Kind::Public);
    {
        let mut s = fake.state();
        s.faults.refuse("bad");
        s.faults.throttle_next = 5;
    }
    let changes: Vec<Change> = ["a", "bad", "c"]
        .iter()
        .map(|n| Change::Create(Endpoint::new(&format!("{n}.example.org"), RecordType::A, ["192.0.2.1"])))
        .collect();
    let e = p.apply(&ReadState::default(), &units(&changes)).await.err();
    let Some(ProviderError::Partial { failures }) = e else {
        panic!("the refused record must be named: {e:?}")
    };
    assert_eq!(failures.len(), 1);
    assert!(failures[0].key.dns_name.contains("bad.example.org") && failures[0].reason.message.contains("BadRequest"));
    assert!(fake.get(Service::Public, "example.org", "a", "A").is_some());
    assert!(fake.get(Service::Public, "example.org", "c", "A").is_some());
    assert_eq!(fake.state().requests.throttled(), 5, "every 429 was waited out");
}

#[tokio::test]
async fn an_endless_429_is_a_transient_error_and_nothing_is_reported_written() {
    let fake = FakeAzure::start(&[(Service::Public, "example.org")]);
    let p = provider(&fake, Kind::Public);
    // Each 429 asks for 100 ms: the call waits them out for its 500 ms, then gives up.
    fake.state().faults.throttle_next = 1000;
    fake.state().faults.retry_after = Duration::from_millis(100);
    let changes = vec![Change::Create(Endpoint::new(
        "a.example.org",
        RecordType::A,
        ["192.0.2.1"],
    ))];
    let e = p.apply(&ReadState::default(), &units(&changes)).await.err();
    assert!(e.as_ref().is_some_and(ProviderError::is_transient), "{e:?}");
    assert_eq!(fake.state().requests.writes(), 0);
}

/// The requests of `method` the fake answered, in order (`METHOD path` lines).
fn sent(fake: &FakeAzure, method: &str) -> Vec<String> {
    let lines = fake.state().requests.lines();
    lines.into_iter().filter(|r| r.starts_with(method)).collect()
}

#[tokio::test]
async fn a_record_goes_before_its_ownership_record_and_is_undone_when_that_fails() {
    let fake = FakeAzure::start(&[(Service::Public, "example.org")]);
    let p = provider(&fake, Kind::Public);
    let owner_of = |name: &str| {
        Change::Create(Endpoint::new(
            &format!("a-{name}.example.org"),
            RecordType::Txt,
            ["\"heritage=external-dns\""],
        ))
    };
    let record = Change::Create(Endpoint::new("www.example.org", RecordType::A, ["192.0.2.1"]));
    let owner = owner_of("www");
    p.apply(&ReadState::default(), &[Unit::with_ownership(&record, &owner)])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let puts = sent(&fake, "PUT");
    assert!(
        puts.len() == 2 && puts[0].contains("/A/www") && puts[1].contains("/TXT/a-www"),
        "{puts:?}"
    );

    // The ownership record of api is refused: api's record is undone, nothing lands alone.
    fake.state().faults.refuse("a-api");
    let record = Change::Create(Endpoint::new("api.example.org", RecordType::A, ["192.0.2.2"]));
    let owner = owner_of("api");
    let e = p
        .apply(&ReadState::default(), &[Unit::with_ownership(&record, &owner)])
        .await
        .err();
    assert!(
        matches!(e, Some(ProviderError::Partial { ref failures }) if failures[0].key.dns_name.contains("api.example.org")),
        "{e:?}"
    );
    assert!(
        fake.get(Service::Public, "example.org", "api", "A").is_none(),
        "the record is undone"
    );
    assert!(fake.get(Service::Public, "example.org", "a-api", "TXT").is_none());

    let read = p.records().await.unwrap_or_else(|e| panic!("{e}"));
    let record = Change::Delete(Endpoint::new("www.example.org", RecordType::A, ["192.0.2.1"]));
    let owner = Change::Delete(Endpoint::new(
        "a-www.example.org",
        RecordType::Txt,
        ["\"heritage=external-dns\""],
    ));
    p.apply(&read.state, &[Unit::with_ownership(&record, &owner)])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let deletes = sent(&fake, "DELETE");
    assert_eq!(deletes.len(), 3, "{deletes:?}");
    assert!(deletes[0].contains("/A/api"), "the undo: {deletes:?}");
    assert!(
        deletes[1].contains("/A/www") && deletes[2].contains("/TXT/a-www"),
        "{deletes:?}"
    );
    assert!(deletes.iter().all(|d| d.contains("api-version=2018-05-01")));
}

#[tokio::test]
async fn record_sets_are_written_eight_at_a_time_each_record_before_its_ownership_record() {
    let fake = FakeAzure::start(&[(Service::Public, "example.org")]);
    let p = provider(&fake, Kind::Public);
    let read = p.records().await.unwrap_or_else(|e| panic!("{e}"));
    // Every answer takes at least this long, so requests sent one after another arrive at least this far
    // apart, and more of them within it can only be overlapping ones.
    let latency = Duration::from_millis(100);
    fake.state().faults.latency = latency;
    fake.state().requests.clear();
    let n = 24;
    let changes: Vec<Change> = (0..n)
        .flat_map(|i| {
            let record = Endpoint::new(&format!("s{i}.example.org"), RecordType::A, ["192.0.2.1"]);
            let owner = Endpoint::new(&format!("a-s{i}.example.org"), RecordType::Txt, ["\"owned\""]);
            [Change::Create(record), Change::Create(owner)]
        })
        .collect();
    let units: Vec<Unit<'_>> = changes
        .chunks(2)
        .map(|pair| Unit::with_ownership(&pair[0], &pair[1]))
        .collect();
    p.apply(&read.state, &units).await.unwrap_or_else(|e| panic!("{e}"));

    let s = fake.state();
    assert_eq!(s.requests.writes(), 2 * n, "each record set written once");
    let account = azure_fake::SUBSCRIPTION.to_ascii_lowercase();
    let overlapping = s.requests.most_in_window(&account, latency);
    assert!(
        (2..=8).contains(&overlapping),
        "{overlapping} requests in flight at once, 2 to 8 expected"
    );
    // A unit's ownership record is sent once its record is answered: it arrived a latency later at least.
    let put_at = |name: &str| {
        let found = s.requests.iter().find(|r| r.method == "PUT" && r.path.ends_with(name));
        found.map(|r| r.at).unwrap_or_else(|| panic!("{name} written"))
    };
    for i in 0..n {
        let (record, owner) = (put_at(&format!("/A/s{i}")), put_at(&format!("/TXT/a-s{i}")));
        assert!(
            owner >= record + latency,
            "s{i}'s ownership record went before its record was answered"
        );
    }
}

#[tokio::test]
async fn the_zone_list_is_cached_for_the_configured_time_and_filters_apply() {
    let fake = FakeAzure::start(&[(Service::Public, "example.org"), (Service::Public, "other.org")]);
    let file = AzureFile::parse(&fake.azure_json(json!({}))).unwrap_or_else(|e| panic!("{e}"));
    let token = fake.issue_token();
    let mut config = AzureConfig::new(
        Kind::Public,
        &file.subscription_id,
        &file.resource_group,
        CredentialSource::Token(token),
    );
    config.cloud = file.cloud().unwrap_or_else(|e| panic!("{e}"));
    config.zones_cache_duration = Duration::from_secs(3600);
    config.zones.zone_ids = vec!["/dnszones/other.org".into()];
    let p = AzureProvider::new(config).unwrap_or_else(|e| panic!("{e}"));
    let zones = p.zones().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(zones.iter().map(|z| z.name.as_str()).collect::<Vec<_>>(), ["other.org"]);
    records(&p).await;
    records(&p).await;
    let lists = fake.state().requests.count("zones.list");
    assert_eq!(lists, 1, "the zone list is read once per --azure-zones-cache-duration");
}

#[tokio::test]
async fn an_unknown_api_version_and_a_foreign_token_are_refused_by_the_fake() {
    let fake = FakeAzure::start(&[(Service::Public, "example.org")]);
    let client = reqwest::Client::new();
    let base = format!(
        "{}/subscriptions/{}/resourceGroups/{}/providers/Microsoft.Network/dnsZones",
        fake.url,
        azure_fake::SUBSCRIPTION,
        azure_fake::RESOURCE_GROUP
    );
    let token = fake.issue_token();
    let status = |r: Result<reqwest::Response, reqwest::Error>| r.map(|r| r.status().as_u16()).unwrap_or(0);
    let old = client
        .get(format!("{base}?api-version=2017-09-01"))
        .bearer_auth(&token)
        .send()
        .await;
    assert_eq!(status(old), 400);
    let foreign = client
        .get(format!("{base}?api-version=2018-05-01"))
        .bearer_auth("forged")
        .send()
        .await;
    assert_eq!(status(foreign), 401);
    let imds = client
        .get(format!(
            "{}/metadata/identity/oauth2/token?api-version=2018-02-01&resource=x",
            fake.url
        ))
        .send()
        .await;
    assert_eq!(status(imds), 400, "IMDS needs Metadata: true");
}

#[tokio::test]
async fn tokens_are_fetched_again_before_they_expire() {
    let fake = FakeAzure::start(&[(Service::Public, "example.org")]);
    fake.state().token_lifetime = 2;
    let p = provider(&fake, Kind::Public);
    records(&p).await;
    records(&p).await;
    assert_eq!(
        fake.state().grants,
        ["client_secret"],
        "a token is reused while it is fresh"
    );
    // Within half its life of expiring (at most five minutes), a token is replaced before it is used.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    records(&p).await;
    assert_eq!(fake.state().grants, ["client_secret", "client_secret"]);
    let requests = fake.state().requests.api_calls();
    assert_eq!(
        requests, 6,
        "three reads of two calls each, none refused for an expired token"
    );
}

#[tokio::test]
async fn apex_records_are_published_as_external_dns_publishes_them_on_both_apis() {
    for (service, kind) in [(Service::Public, Kind::Public), (Service::Private, Kind::Private)] {
        let fake = FakeAzure::start(&[(service, "example.org"), (service, "sub.example.org")]);
        let p = std::sync::Arc::new(provider(&fake, kind));
        let published = apex::publish(p, "example.org", "sub.example.org").await;
        let sets: Vec<String> = fake
            .state()
            .sets
            .keys()
            .filter(|(_, _, _, t)| t != "SOA" && t != "NS")
            .map(|(_, zone, name, t)| format!("{zone} {name} {t}"))
            .collect();
        assert_eq!(
            sets,
            ["example.org @ A", "example.org a-sub TXT", "sub.example.org @ A"],
            "{kind:?}: the child zone's apex owned through the parent zone, the top apex without an ownership record"
        );
        published.assert_as_external_dns();
    }
}

#[tokio::test]
async fn a_wildcard_whose_ownership_name_azure_refuses_is_never_written_and_never_flaps() {
    let fake = FakeAzure::start(&[(Service::Public, "example.org")]);
    let registry = apex::txt_registry(std::sync::Arc::new(provider(&fake, Kind::Public)));
    let wildcard = [Change::Create(Endpoint::new(
        "*.apps.example.org",
        RecordType::A,
        ["192.0.2.1"],
    ))];
    for _ in 0..3 {
        apex::sync(&registry, &wildcard)
            .await
            .unwrap_or_else(|e| panic!("no failing sync: {e}"));
    }
    let sent = {
        let s = fake.state();
        (
            s.requests.count("recordSets.put"),
            s.requests.count("recordSets.delete"),
        )
    };
    assert_eq!(
        sent,
        (0, 0),
        "neither the wildcard nor a-*.apps was ever sent, so nothing is created and deleted again"
    );
    assert!(fake.lines().is_empty(), "{:?}", fake.lines());

    // With --txt-wildcard-replacement the ownership name is one Azure takes, and both land.
    use extdns_registry::{Ownership, OwnershipConfig, TxtRegistry, TxtRegistryConfig};
    let mut flags = OwnershipConfig::default();
    flags.wildcard_replacement = "wildcard".to_string();
    let ownership = Ownership::new(flags).unwrap_or_else(|e| panic!("{e}"));
    let p = std::sync::Arc::new(provider(&fake, Kind::Public));
    let replaced = TxtRegistry::new(p, TxtRegistryConfig::new(ownership));
    apex::sync(&replaced, &wildcard).await.unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<String> = fake
        .lines()
        .iter()
        .map(|l| l.split(' ').take(2).collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(names, ["*.apps.example.org A", "a-wildcard.apps.example.org TXT"]);
}

#[test]
fn the_fake_refuses_a_star_inside_a_label_as_azure_documents() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    rt.block_on(async {
        let fake = FakeAzure::start(&[(Service::Public, "example.org")]);
        let p = provider(&fake, Kind::Public);
        let bad = [Change::Create(Endpoint::new(
            "a-*.example.org",
            RecordType::Txt,
            ["\"x\""],
        ))];
        let refused = p.apply(&ReadState::default(), &units(&bad)).await;
        assert!(matches!(refused, Err(ProviderError::Partial { .. })), "{refused:?}");
    });
}

#[tokio::test]
async fn an_ownership_name_azure_refused_once_is_not_tried_again() {
    let fake = FakeAzure::start(&[(Service::Public, "example.org")]);
    fake.state().faults.refuse("a-web");
    let registry = apex::txt_registry(std::sync::Arc::new(provider(&fake, Kind::Public)));
    let web = [Change::Create(Endpoint::new(
        "web.example.org",
        RecordType::A,
        ["192.0.2.1"],
    ))];
    let first = apex::sync(&registry, &web).await;
    assert!(first.is_err(), "the first sync reports the refusal");
    let sent = || {
        let s = fake.state();
        s.requests.count("recordSets.put") + s.requests.count("recordSets.delete")
    };
    let after_first = sent();
    assert_eq!(
        after_first, 3,
        "the record, its refused ownership record, the record undone"
    );
    for _ in 0..2 {
        apex::sync(&registry, &web)
            .await
            .unwrap_or_else(|e| panic!("no failing sync after: {e}"));
    }
    assert_eq!(sent(), after_first, "nothing created and deleted again");
    assert!(fake.lines().is_empty(), "{:?}", fake.lines());
}

/// `--txt-ownership=metadata`: the payload is a metadata entry of the record set, public and private alike,
/// and the fake refuses a value past Azure's 256 characters.
#[tokio::test]
async fn the_ownership_payload_is_record_set_metadata_and_a_value_past_256_characters_is_refused() {
    use extdns_provider::metadata::OWNERSHIP_PROPERTY;
    for (service, kind) in [(Service::Public, Kind::Public), (Service::Private, Kind::Private)] {
        let fake = FakeAzure::start(&[(service, "example.org")]);
        let p = provider(&fake, kind);
        let mut web = Endpoint::new("web.example.org", RecordType::A, ["192.0.2.1"]);
        web.provider_specific.set(OWNERSHIP_PROPERTY, "extdns:v1;o=me");
        assert_eq!(p.ownership_room(&web), Some(256));
        let mut long = Endpoint::new("long.example.org", RecordType::A, ["192.0.2.2"]);
        long.provider_specific
            .set(OWNERSHIP_PROPERTY, format!("extdns:v1;o={}", "x".repeat(250)));
        let changes = [Change::Create(web), Change::Create(long)];
        let e = p.apply(&ReadState::default(), &units(&changes)).await.err();
        let Some(ProviderError::Partial { failures }) = e else {
            panic!("the long value must be refused: {e:?}")
        };
        assert_eq!(failures.len(), 1, "{failures:?}");
        assert!(failures[0].key.dns_name.starts_with("long.") && failures[0].reason.message.contains("256"));
        let read: Vec<Endpoint> = records(&p)
            .await
            .into_iter()
            .filter(|e| e.record_type == RecordType::A)
            .collect();
        assert_eq!(read.len(), 1, "{kind:?}");
        assert_eq!(
            read[0].provider_specific.get(OWNERSHIP_PROPERTY),
            Some("extdns:v1;o=me"),
            "{kind:?}"
        );
    }
}

/// TLSA, HTTPS and SVCB: neither Azure DNS at api-version 2018-05-01 nor Azure Private DNS holds them (TLSA
/// arrives only in 2023-07-01-preview; HTTPS and SVCB in no version), so each is refused by name, naming
/// its type and the service, before anything is sent, while the other records land.
#[tokio::test]
async fn tlsa_https_and_svcb_are_refused_by_name_and_the_others_land() {
    for (service, kind, provider_name) in [
        (Service::Public, Kind::Public, "Azure DNS"),
        (Service::Private, Kind::Private, "Azure Private DNS"),
    ] {
        let fake = FakeAzure::start(&[(service, "example.org")]);
        let p = provider(&fake, kind);
        let changes = [
            Change::Create(Endpoint::new(
                "_443._tcp.web.example.org",
                RecordType::from("TLSA"),
                ["3 1 1 0a0b0c0d"],
            )),
            Change::Create(Endpoint::new(
                "web.example.org",
                RecordType::from("HTTPS"),
                ["1 . alpn=h2"],
            )),
            Change::Create(Endpoint::new(
                "_dns.example.org",
                RecordType::from("SVCB"),
                ["0 svc.example.net."],
            )),
            Change::Create(Endpoint::new("web.example.org", RecordType::A, ["192.0.2.1"])),
        ];
        let e = p.apply(&ReadState::default(), &units(&changes)).await.err();
        let Some(ProviderError::Partial { failures }) = e else {
            panic!("the three records must be named: {e:?}")
        };
        let named: Vec<String> = failures.iter().map(ToString::to_string).collect();
        assert_eq!(named.len(), 3, "{named:?}");
        for t in ["TLSA", "HTTPS", "SVCB"] {
            let f = failures.iter().find(|f| f.key.record_type.as_str() == t);
            let m = f.map(|f| f.reason.message.as_str()).unwrap_or_default();
            assert!(m.contains(t) && m.contains(provider_name), "{t}: {named:?}");
        }
        assert!(
            fake.get(service, "example.org", "web", "A").is_some(),
            "the A record lands"
        );
        let puts = sent(&fake, "PUT");
        assert_eq!(puts.len(), 1, "only the A record is sent: {puts:?}");
    }
}

/// Azure takes one record set a request (issue 50, one change a second): a record's new address is one PUT,
/// its ownership record, which the registry pairs with the update but which says the same as before, is not
/// sent; an ownership record whose value does change is still written.
#[tokio::test]
async fn an_address_change_is_one_put_and_the_unchanged_ownership_record_is_not_sent() {
    use extdns_registry::Registry;
    let fake = FakeAzure::start(&[(Service::Public, "example.org")]);
    let registry = apex::txt_registry(std::sync::Arc::new(provider(&fake, Kind::Public)));
    let www = Endpoint::new("www.example.org", RecordType::A, ["192.0.2.1"]);
    apex::sync(&registry, &[Change::Create(www)])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let ownership = || fake.get(Service::Public, "example.org", "a-www", "TXT");
    let before = ownership().unwrap_or_else(|| panic!("the ownership record is written"));

    let snapshot = registry.records().await.unwrap_or_else(|e| panic!("{e}"));
    let old = snapshot
        .records
        .iter()
        .find(|r| r.dns_name == "www.example.org" && r.record_type == RecordType::A)
        .cloned()
        .unwrap_or_else(|| panic!("www read back: {:?}", snapshot.records));
    let mut moved = old.clone();
    moved.targets = ["192.0.2.9"].into_iter().collect();
    fake.state().requests.clear();
    registry
        .apply(&snapshot, &[Change::update(old.clone(), moved.clone())])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let puts = sent(&fake, "PUT");
    assert!(puts.len() == 1 && puts[0].contains("/A/www"), "{puts:?}");
    let a = fake
        .get(Service::Public, "example.org", "www", "A")
        .map(|s| s.properties);
    assert_eq!(
        a,
        Some(json!({ "TTL": 300, "ARecords": [{ "ipv4Address": "192.0.2.9" }] }))
    );
    let after = ownership().unwrap_or_else(|| panic!("the ownership record stays"));
    assert_eq!((after.etag, after.properties), (before.etag, before.properties));

    // A new owner's label changes the ownership record's value: that update is written.
    let snapshot = registry.records().await.unwrap_or_else(|e| panic!("{e}"));
    let mut relabelled = moved.clone();
    relabelled.labels.insert("resource", "service/default/www");
    fake.state().requests.clear();
    registry
        .apply(&snapshot, &[Change::update(moved, relabelled)])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let puts = sent(&fake, "PUT");
    assert!(puts.iter().any(|p| p.contains("/TXT/a-www")), "{puts:?}");
}
