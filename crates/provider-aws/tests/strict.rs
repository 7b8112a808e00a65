//! The provider against our strict Route53 fake, for what moto does not enforce: refused changes do not
//! block the others, deletes match exactly, NextRecordIdentifier paging, batch limits, throttling and pacing.

use std::time::Duration;

use extdns_endpoint::{Change, Endpoint, ProviderSpecific, RecordType, Ttl, label};
use extdns_provider::{Provider, ProviderError, ReadState, Unit, apply_changes};
use extdns_provider_aws::{AwsConfig, AwsProvider, CredentialSource, Credentials};
use extdns_test_support::apex;
use extdns_test_support::route53_fake::{self, Fake, Set, Value, Values};

fn config(url: &str) -> AwsConfig {
    let mut c = AwsConfig::new(url.parse().expect("the fake's URL"), Credentials::new("AKID", "secret"));
    c.batch.interval = Duration::ZERO;
    c.api.requests = AwsConfig::account_rate(1000.0);
    c.api.calls.backoff.initial = Duration::from_millis(10);
    c.api.calls.backoff.max = Duration::from_millis(50);
    c.api.calls.backoff.throttled_for = Duration::from_millis(500);
    c
}

/// A fake whose account limit is the tests' pace, 1,000 a second ([`config`]).
fn fast_fake() -> Fake {
    Fake::start_in_background().with_limits(vec![route53_fake::per_second(1000)])
}

fn provider(c: AwsConfig) -> AwsProvider {
    AwsProvider::new(c).expect("a valid configuration")
}

fn a(name: &str, ip: &str) -> Endpoint {
    Endpoint::new(name, RecordType::A, [ip]).with_ttl(Ttl(60))
}

fn set(name: &str, kind: &str, ttl: i64, values: &[&str]) -> Set {
    Set {
        name: format!("{name}."),
        kind: kind.into(),
        ttl: Some(ttl),
        resource_records: Some(Values {
            items: values.iter().map(|v| Value { value: v.to_string() }).collect(),
        }),
        ..Set::default()
    }
}

/// The fake holding one public zone, example.com, with `sets` in it: the fake, the zone's id, and a provider
/// against it.
async fn example_com<const N: usize>(sets: [Set; N]) -> (Fake, String, AwsProvider) {
    let fake = fast_fake();
    let zone = fake.zone("example.com", false, &[]);
    for set in sets {
        fake.put(&zone, set);
    }
    let p = provider(config(&fake.url));
    (fake, zone, p)
}

fn failures(r: Result<(), ProviderError>) -> Vec<String> {
    match r {
        Err(ProviderError::Partial { failures }) => failures.iter().map(ToString::to_string).collect(),
        other => panic!("expected a partial failure, got {other:?}"),
    }
}

#[tokio::test]
async fn refused_changes_are_named_and_do_not_block_the_others() {
    let taken = set("taken.example.com", "A", 300, &["192.0.2.1"]);
    let (fake, zone, p) = example_com([taken.clone(), set("web.example.com", "A", 300, &["192.0.2.2"])]).await;
    let changes = vec![
        Change::Create(a("ok1.example.com", "10.0.0.1")),
        Change::Create(a("taken.example.com", "10.0.0.2")),
        Change::Create(a("ok2.example.com", "10.0.0.3")),
        // A CNAME cannot share its name with other records.
        Change::Create(Endpoint::new("web.example.com", RecordType::Cname, ["x.example.org"])),
        Change::Create(a("ok3.example.com", "10.0.0.4")),
    ];
    let named = failures(apply_changes(&p, &changes).await);
    assert_eq!(named.len(), 2, "{named:?}");
    assert!(
        named[0].starts_with("taken.example.com A: create") && named[0].contains("already exists"),
        "{named:?}"
    );
    assert!(
        named[1].starts_with("web.example.com CNAME") && named[1].contains("conflicts"),
        "{named:?}"
    );
    for ok in ["ok1.example.com", "ok2.example.com", "ok3.example.com"] {
        assert!(fake.find(&zone, ok, "A").is_some(), "{ok} landed");
    }
    // The foreign record is untouched, and batches were atomic: nothing half-applied.
    assert_eq!(fake.find(&zone, "taken.example.com", "A"), Some(taken));
    assert!(fake.find(&zone, "web.example.com", "CNAME").is_none());
    assert!(fake.lock().refused_batches >= 2);
}

#[tokio::test]
async fn a_record_and_its_ownership_record_land_together_or_not_at_all() {
    let (fake, zone, p) = example_com([set("a-taken.example.com", "TXT", 300, &["\"someone else\""])]).await;
    let owned = |name: &str| {
        Endpoint::new(
            &format!("a-{name}"),
            RecordType::Txt,
            ["\"heritage=external-dns,external-dns/owner=me\""],
        )
        .with_label(label::OWNED_RECORD, name)
    };
    let changes = [
        Change::Create(a("free.example.com", "10.0.0.1")),
        Change::Create(owned("free.example.com")),
        Change::Create(a("taken.example.com", "10.0.0.2")),
        Change::Create(owned("taken.example.com")),
    ];
    let units = [
        Unit::with_ownership(&changes[0], &changes[1]),
        Unit::with_ownership(&changes[2], &changes[3]),
    ];
    let named = failures(p.apply(&ReadState::default(), &units).await);
    assert_eq!(named.len(), 1);
    assert!(named[0].starts_with("taken.example.com A"), "{named:?}");
    assert!(fake.find(&zone, "free.example.com", "A").is_some());
    assert!(fake.find(&zone, "a-free.example.com", "TXT").is_some());
    assert!(
        fake.find(&zone, "taken.example.com", "A").is_none(),
        "the record did not land without its TXT"
    );
}

#[tokio::test]
async fn deletes_send_the_record_set_exactly_as_it_was_read() {
    // Values as someone else wrote them: an odd TTL, a CNAME target with its final dot, TXT strings split.
    let (fake, zone, p) = example_com([
        set("old.example.com", "CNAME", 1234, &["target.example.org."]),
        set("t.example.com", "TXT", 77, &["\"a\" \"b\""]),
    ])
    .await;
    let read = p.records().await.expect("records");
    let deletes: Vec<Change> = read
        .endpoints
        .iter()
        .filter(|e| e.dns_name != "example.com")
        .cloned()
        .map(Change::Delete)
        .collect();
    assert_eq!(deletes.len(), 2);

    // Without what the read learnt, Route53 refuses a delete whose TTL or values differ.
    let wrong = Change::Delete(Endpoint::new(
        "old.example.com",
        RecordType::Cname,
        ["target.example.org"],
    ));
    let named = failures(apply_changes(&p, std::slice::from_ref(&wrong)).await);
    assert!(named[0].contains("do not match"), "{named:?}");

    let units: Vec<Unit<'_>> = deletes.iter().map(Unit::new).collect();
    p.apply(&read.state, &units).await.expect("the deletes match");
    assert!(fake.sets(&zone).is_empty(), "{:?}", fake.sets(&zone));
}

/// The values of `name`'s A record set in the fake.
fn a_values(fake: &Fake, zone: &str, name: &str) -> Vec<String> {
    let set = fake.find(zone, name, "A");
    let values = set
        .and_then(|s| s.resource_records)
        .map(|r| r.items)
        .unwrap_or_default();
    values.into_iter().map(|v| v.value).collect()
}

#[tokio::test]
async fn an_update_planned_from_a_read_never_overwrites_a_set_changed_since() {
    let (fake, zone, p) = example_com([set("web.example.com", "A", 60, &["192.0.2.1"])]).await;
    let web = |read: &extdns_provider::Records| {
        let found = read
            .endpoints
            .iter()
            .find(|e| e.dns_name == "web.example.com" && e.record_type == RecordType::A);
        found.cloned().expect("web.example.com read")
    };
    let read = p.records().await.expect("read");
    let old = web(&read);
    let new = a("web.example.com", "192.0.2.2");

    // Another owner takes the name over after the read (an hour-old cache, or a race within a sync).
    fake.put(&zone, set("web.example.com", "A", 60, &["198.51.100.7"]));
    let update = [Change::update(old, new.clone())];
    let units: Vec<Unit<'_>> = update.iter().map(Unit::new).collect();
    let named = failures(p.apply(&read.state, &units).await);
    assert!(named[0].contains("do not match"), "{named:?}");
    assert_eq!(
        a_values(&fake, &zone, "web.example.com"),
        ["198.51.100.7"],
        "the other owner's set stands"
    );

    // Planned again from a new read, the update lands: a DELETE of the set read and a CREATE, one batch.
    fake.lock().applied_batches.clear();
    let read = p.records().await.expect("read again");
    let update = [Change::update(web(&read), new)];
    let units: Vec<Unit<'_>> = update.iter().map(Unit::new).collect();
    p.apply(&read.state, &units).await.expect("the update matches the read");
    assert_eq!(a_values(&fake, &zone, "web.example.com"), ["192.0.2.2"]);
    assert_eq!(fake.lock().applied_batches, [2]);
}

#[tokio::test]
async fn record_pages_continue_at_the_next_set_identifier() {
    let (fake, zone, p) = example_com([]).await;
    fake.lock().record_page = 2;
    for i in 0..7 {
        let mut s = set("w.example.com", "A", 60, &[&format!("10.0.0.{i}")]);
        s.set_identifier = Some(format!("id-{i}"));
        s.weight = Some(i);
        fake.put(&zone, s);
    }
    fake.put(&zone, set("x.example.com", "A", 60, &["10.1.0.1"]));
    let eps = p.records().await.expect("records").endpoints;
    let mut ids: Vec<&str> = eps
        .iter()
        .filter(|e| e.dns_name == "w.example.com")
        .map(|e| e.set_identifier.as_str())
        .collect();
    ids.sort();
    assert_eq!(ids, ["id-0", "id-1", "id-2", "id-3", "id-4", "id-5", "id-6"]);
    assert!(eps.iter().any(|e| e.dns_name == "x.example.com"));
    let w3 = eps.iter().find(|e| e.set_identifier == "id-3").expect("id-3");
    assert_eq!(w3.provider_specific.get("aws/weight"), Some("3"));
    let pages = fake.lock().requests.count("ListResourceRecordSets");
    assert_eq!(pages, 5, "10 record sets (SOA and NS included) in pages of 2");
}

#[tokio::test]
async fn hosted_zones_are_read_across_pages_and_tags_ten_at_a_time() {
    let fake = fast_fake();
    fake.lock().zone_page = 2;
    for i in 0..12 {
        fake.zone(
            &format!("z{i:02}.example.com"),
            false,
            if i % 3 == 0 { &[("team", "a")] } else { &[] },
        );
    }
    let mut c = config(&fake.url);
    c.zone_tags = vec![("team".into(), "a".into())];
    let zones = provider(c).zones().await.expect("zones");
    let names: Vec<&str> = zones.iter().map(|z| z.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "z00.example.com",
            "z03.example.com",
            "z06.example.com",
            "z09.example.com"
        ]
    );
    let s = fake.lock();
    assert_eq!(s.requests.count("ListHostedZones"), 6);
    assert_eq!(s.requests.count("ListTagsForResources"), 2);
}

#[tokio::test]
async fn batches_respect_the_change_byte_and_value_limits() {
    let (fake, _, _) = example_com([]).await;
    let changes: Vec<Change> = (0..25)
        .map(|i| Change::Create(a(&format!("r{i:02}.example.com"), "10.0.0.1")))
        .collect();

    let mut c = config(&fake.url);
    c.batch.size = 10;
    apply_changes(&provider(c), &changes).await.expect("applied");
    assert_eq!(std::mem::take(&mut fake.lock().applied_batches), [10, 10, 5]);

    // "10.0.0.1" is 8 characters: 40 bytes hold 5 records.
    let deletes: Vec<Change> = changes.iter().map(|c| Change::Delete(c.endpoint().clone())).collect();
    let mut c = config(&fake.url);
    c.batch_change_size_bytes = 40;
    apply_changes(&provider(c), &deletes).await.expect("applied");
    assert_eq!(std::mem::take(&mut fake.lock().applied_batches), [5; 5]);

    let mut c = config(&fake.url);
    c.batch_change_size_values = 7;
    apply_changes(&provider(c), &changes).await.expect("applied");
    assert_eq!(std::mem::take(&mut fake.lock().applied_batches), [7, 7, 7, 4]);
}

#[tokio::test]
async fn throttling_is_waited_out_without_spending_the_retries_then_reported_as_transient() {
    let (fake, _, p) = example_com([]).await;
    // More throttled answers than the call's four attempts: they are no attempts, so all are waited out.
    fake.lock().faults.throttle_next = 8;
    let eps = p.records().await.expect("records after eight throttled calls");
    assert!(eps.endpoints.iter().any(|e| e.record_type == RecordType::Ns));
    assert_eq!(fake.lock().requests.throttled(), 8);

    // Throttled for longer than the configuration's 500 ms: given up, as a transient error.
    fake.lock().faults.throttle_next = 100_000;
    let err = p.records().await.expect_err("still throttled after throttled_for");
    assert!(err.is_transient(), "{err}");
    assert!(err.to_string().contains("Throttling"), "{err}");
    let sent = 100_000 - fake.lock().faults.throttle_next;
    assert!(sent > 4, "more than the attempts, at the backoff's 50 ms cap: {sent}");
}

#[tokio::test]
async fn requests_are_paced_under_the_rate_limit() {
    // Route53's documented limit, which the fake enforces: paced at it, nothing is throttled.
    let fake = Fake::start().await;
    let zone = fake.zone("example.com", false, &[]);
    fake.lock().record_page = 1;
    for i in 0..4 {
        fake.put(&zone, set(&format!("r{i}.example.com"), "A", 60, &["10.0.0.1"]));
    }
    let mut c = config(&fake.url);
    c.api.requests = AwsConfig::account_rate(5.0);
    provider(c).records().await.expect("records");
    let s = fake.lock();
    assert_eq!(s.requests.len(), 7, "1 zone page and 6 record pages");
    assert_eq!(s.requests.throttled(), 0, "never past the account's limit");
    // Five requests in any second, as Route53's bucket admits them: the sixth and seventh leave a second
    // after the first; arrivals jitter a little around that, never ahead of the pace.
    let arrivals: Vec<std::time::Instant> = s.requests.iter().map(|r| r.at).collect();
    let first = arrivals[0];
    for (i, at) in arrivals.iter().enumerate() {
        let earliest = Duration::from_secs(i as u64 / 5).saturating_sub(Duration::from_millis(50));
        assert!(
            at.duration_since(first) >= earliest,
            "request {i} came {:?} after the first",
            at.duration_since(first)
        );
    }
}

#[tokio::test]
async fn a_change_outside_every_zone_is_skipped_and_a_split_horizon_name_goes_to_both_sides() {
    let fake = fast_fake();
    let public = fake.zone("example.com", false, &[]);
    let private = fake.zone("example.com", true, &[]);
    let p = provider(config(&fake.url));
    let mut ps = ProviderSpecific::default();
    ps.set("aws/health-check-id", "hc-1");
    let changes = [
        Change::Create(a("both.example.com", "10.0.0.1").with_provider_specific(ps)),
        Change::Create(a("x.example.net", "10.0.0.2")),
    ];
    apply_changes(&p, &changes).await.expect("applied");
    for zone in [&public, &private] {
        let s = fake.find(zone, "both.example.com", "A").expect("in both zones");
        assert_eq!(s.health_check_id.as_deref(), Some("hc-1"));
        assert!(fake.find(zone, "x.example.net", "A").is_none());
    }
}

#[tokio::test]
async fn the_zone_list_is_cached_for_its_duration_and_becomes_the_domain_filter() {
    let (fake, _, _) = example_com([]).await;
    let mut c = config(&fake.url);
    c.zones_cache_duration = Duration::from_secs(3600);
    let p = provider(c);
    assert!(
        !p.domain_filter().is_configured(),
        "before any read: the configured filter (none)"
    );
    p.records().await.expect("records");
    fake.zone("example.net", false, &[]);
    p.records().await.expect("records");
    let zone_lists = fake.lock().requests.count("ListHostedZones");
    assert_eq!(zone_lists, 1, "the second sync used the cached zone list");
    let f = p.domain_filter();
    assert!(f.matches("www.example.com") && !f.matches("www.example.net"));

    // Without a cache every sync lists the zones again.
    let p = provider(config(&fake.url));
    p.records().await.expect("records");
    assert!(p.domain_filter().matches("www.example.net"));
}

#[tokio::test]
async fn requests_are_signed_for_route53_with_the_session_token() {
    let (fake, _, _) = example_com([]).await;
    let mut c = config(&fake.url);
    let mut credentials = Credentials::new("AKIDSIGNED", "secret");
    credentials.session_token = Some("token-1".into());
    c.credentials = CredentialSource::Static(credentials);
    provider(c).records().await.expect("records");
    let signature = fake.lock().last_signature.clone();
    let get = |h: &str| {
        signature
            .iter()
            .find(|(k, _)| k == h)
            .map(|(_, v)| v.as_str())
            .unwrap_or("")
    };
    let auth = get("authorization");
    assert!(auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDSIGNED/"), "{auth}");
    assert!(auth.contains("/us-east-1/route53/aws4_request"), "{auth}");
    assert!(
        auth.contains("SignedHeaders=host;x-amz-date;x-amz-security-token") && auth.contains("Signature="),
        "{auth}"
    );
    assert_eq!(get("x-amz-date").len(), "20260101T000000Z".len());
    assert_eq!(get("x-amz-security-token"), "token-1");
}

/// Starts `tasks` applies 20 ms apart (a stream of 50 a second, faster than Route53 takes), each of three
/// creates in batches of two: two ChangeResourceRecordSets calls each, all in flight together.
async fn stream_of_applies(p: std::sync::Arc<AwsProvider>, tasks: usize) {
    let mut running = Vec::new();
    for t in 0..tasks {
        let p = p.clone();
        running.push(tokio::spawn(async move {
            let changes: Vec<Change> = (0..3)
                .map(|i| Change::Create(a(&format!("s{t}-{i}.example.com"), "10.0.0.1")))
                .collect();
            apply_changes(p.as_ref(), &changes).await
        }));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for r in running {
        r.await.expect("the apply task").expect("applied");
    }
}

/// Whether any 6 of `instants` (sorted) fall within a second, less `slack` for the loopback's jitter
/// between a request leaving and arriving.
fn six_within_a_second(instants: &[std::time::Instant], slack: Duration) -> Option<(usize, Duration)> {
    instants.windows(6).enumerate().find_map(|(i, w)| {
        let span = w[5].duration_since(w[0]);
        (span < Duration::from_secs(1) - slack).then_some((i, span))
    })
}

#[tokio::test]
async fn a_stream_of_applies_never_makes_more_than_five_requests_a_second() {
    let (fake, _, _) = example_com([]).await;
    let mut c = config(&fake.url);
    c.api.requests = AwsConfig::new(c.endpoint.clone(), Credentials::new("a", "b"))
        .api
        .requests;
    assert_eq!(
        c.api.requests,
        AwsConfig::account_rate(5.0),
        "Route53's limit is the default"
    );
    c.batch.size = 2;
    c.zones_cache_duration = Duration::from_secs(3600);
    let p = std::sync::Arc::new(provider(c));
    stream_of_applies(p, 12).await;

    let s = fake.lock();
    let changes = s.requests.times("ChangeResourceRecordSets");
    assert_eq!(
        changes.len(),
        24,
        "each apply split into two change requests: {:?}",
        s.requests.lines()
    );
    assert_eq!(
        six_within_a_second(&changes, Duration::from_millis(50)),
        None,
        "six change requests arrived within a second"
    );
    let mut every: Vec<std::time::Instant> = s.requests.iter().map(|r| r.at).collect();
    every.sort();
    assert_eq!(
        six_within_a_second(&every, Duration::from_millis(50)),
        None,
        "six requests arrived within a second"
    );
}

/// The values of `kind` at `name` in the fake, as Route53 holds them.
fn values_at(fake: &Fake, zone: &str, name: &str, kind: &str) -> Vec<String> {
    let set = fake.find(zone, name, kind);
    let items = set
        .and_then(|s| s.resource_records)
        .map(|r| r.items)
        .unwrap_or_default();
    items.into_iter().map(|v| v.value).collect()
}

#[tokio::test]
async fn tlsa_https_and_svcb_are_written_read_back_updated_and_deleted() {
    let (fake, zone, p) = example_com([]).await;
    let digest = "c0ffee".repeat(10) + "c0ff";
    let tlsa = Endpoint::new(
        "_443._tcp.www.example.com",
        RecordType::Tlsa,
        [format!("3 1 1 {digest}").as_str()],
    )
    .with_ttl(Ttl(300));
    let https = Endpoint::new("www.example.com", RecordType::Https, ["1 . alpn=h2,h3 port=8443"]).with_ttl(Ttl(300));
    let svcb = Endpoint::new("_dns.example.com", RecordType::Svcb, ["0 svc.example.net."]).with_ttl(Ttl(300));
    let created = [tlsa.clone(), https.clone(), svcb.clone()].map(Change::Create);
    apply_changes(&p, &created).await.expect("created");
    assert_eq!(
        values_at(&fake, &zone, "_443._tcp.www.example.com", "TLSA"),
        [format!("3 1 1 {digest}")]
    );
    assert_eq!(
        values_at(&fake, &zone, "www.example.com", "HTTPS"),
        ["1 . alpn=h2,h3 port=8443"]
    );
    assert_eq!(
        values_at(&fake, &zone, "_dns.example.com", "SVCB"),
        ["0 svc.example.net."]
    );

    let read = p.records().await.expect("read").endpoints;
    for want in [&tlsa, &https, &svcb] {
        let got = read
            .iter()
            .find(|e| e.dns_name == want.dns_name && e.record_type == want.record_type);
        assert!(
            got.is_some_and(|g| g.targets.same(&want.targets) && g.record_ttl == want.record_ttl),
            "{} {} read back as written: {got:?}",
            want.dns_name,
            want.record_type
        );
    }

    let https2 = Endpoint::new(
        "www.example.com",
        RecordType::Https,
        ["1 . alpn=h2,h3 port=8443", "2 backup.example.net. alpn=h2"],
    )
    .with_ttl(Ttl(300));
    apply_changes(&p, &[Change::update(https, https2)])
        .await
        .expect("updated");
    assert_eq!(
        values_at(&fake, &zone, "www.example.com", "HTTPS"),
        ["1 . alpn=h2,h3 port=8443", "2 backup.example.net. alpn=h2"]
    );
    let read = p.records().await.expect("read").endpoints;
    let gone: Vec<Change> = read
        .into_iter()
        .filter(|e| e.record_type.has_typed_rdata())
        .map(Change::Delete)
        .collect();
    assert_eq!(gone.len(), 3);
    apply_changes(&p, &gone)
        .await
        .expect("deleted: each matches what Route53 holds");
    assert!(fake.sets(&zone).is_empty(), "{:?}", fake.sets(&zone));
}

/// The apex records of issue 50 on Route53, which refuses a name outside the zone it is sent to: a child
/// zone's apex (`sub.example.com`) is owned through `a-sub.example.com` in the parent zone, the top zone's
/// apex (`example.com`, whose ownership name `a-example.com` no zone holds) is written without an ownership
/// record, as external-dns v0.23.0 writes them; the sync does not fail.
#[tokio::test]
async fn apex_records_are_published_as_external_dns_publishes_them_and_no_sync_fails() {
    let fake = fast_fake();
    let (top, sub) = (
        fake.zone("example.com", false, &[]),
        fake.zone("sub.example.com", false, &[]),
    );
    let p = std::sync::Arc::new(provider(config(&fake.url)));
    let published = apex::publish(p, "example.com", "sub.example.com").await;
    let placed = |zone: &str| -> Vec<String> {
        let mut sets: Vec<String> = fake
            .sets(zone)
            .into_iter()
            .filter(|s| s.kind != "SOA" && s.kind != "NS")
            .map(|s| format!("{} {}", s.name, s.kind))
            .collect();
        sets.sort();
        sets
    };
    assert_eq!(placed(&top), ["a-sub.example.com. TXT", "example.com. A"]);
    assert_eq!(placed(&sub), ["sub.example.com. A"]);
    published.assert_as_external_dns();
}
