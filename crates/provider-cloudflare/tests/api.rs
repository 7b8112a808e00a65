//! The provider against the stateful Cloudflare fake: what lands is read from the fake's state, not through
//! the provider.

use std::time::Duration;

use extdns_endpoint::{Change, Endpoint, RecordType, Ttl};
use extdns_provider::{Backoff, Provider, ProviderError, Unit, apply_changes};
use extdns_provider_cloudflare::{Auth, CloudflareConfig, CloudflareProvider, PROXIED_PROPERTY};
use extdns_test_support::apex;
use extdns_test_support::cloudflare_fake::{
    API_EMAIL, API_KEY, FakeCloudflare, MAX_BATCH, PAID_MAX_BATCH, Plan, TOKEN,
};
use extdns_test_support::lines::{is_auth_failure, read_lines};

const ZONE: &str = "023e105f4ecef8ad9ca31a8372d0c353";

fn fake() -> FakeCloudflare {
    FakeCloudflare::start(&[
        (ZONE, "example.org"),
        ("9a7806061c88ada191ed06f989cc3dac", "example.net"),
    ])
}

fn provider_with(fake: &FakeCloudflare, f: impl FnOnce(&mut CloudflareConfig)) -> CloudflareProvider {
    let mut c = CloudflareConfig::new(Auth::Token(TOKEN.into()));
    c.base_url = fake.url.clone();
    c.batch.interval = Duration::ZERO;
    c.api.calls.backoff = Backoff {
        initial: Duration::from_millis(1),
        max: Duration::from_millis(5),
        throttled_for: Duration::from_millis(500),
        ..Backoff::default()
    };
    f(&mut c);
    CloudflareProvider::new(c).unwrap_or_else(|e| panic!("{e}"))
}

fn provider(fake: &FakeCloudflare) -> CloudflareProvider {
    provider_with(fake, |_| {})
}

fn ep(name: &str, t: RecordType, targets: &[&str]) -> Endpoint {
    Endpoint::new(name, t, targets.iter().copied())
}

async fn apply(p: &CloudflareProvider, changes: &[Change]) {
    if let Err(e) = apply_changes(p, changes).await {
        panic!("apply failed: {e}");
    }
}

#[tokio::test]
async fn records_are_created_read_back_and_proxied_only_where_cloudflare_can() {
    let cf = fake();
    let p = provider(&cf);
    let mut web = ep("web.example.org", RecordType::A, &["192.0.2.1", "192.0.2.2"]);
    // The alpha prefix still proxies (external-dns v0.22 silently ignores it).
    web.provider_specific
        .set("external-dns.alpha.kubernetes.io/cloudflare-proxied", "true");
    let mut txt = ep("a-web.example.org", RecordType::Txt, &["\"heritage=external-dns\""]);
    txt.provider_specific.set(PROXIED_PROPERTY, "true");
    let mut wild = ep("*.example.org", RecordType::A, &["192.0.2.9"]);
    wild.provider_specific.set(PROXIED_PROPERTY, "true");
    apply(
        &p,
        &[
            Change::Create(web),
            Change::Create(ep("web.example.org", RecordType::Aaaa, &["2001:db8::1"]).with_ttl(Ttl(120))),
            Change::Create(ep("alias.example.net", RecordType::Cname, &["lb.example.com"])),
            Change::Create(txt),
            Change::Create(wild),
            Change::Create(ep("example.org", RecordType::Mx, &["10 mail.example.org"])),
        ],
    )
    .await;
    assert_eq!(
        cf.lines(),
        vec![
            "*.example.org A 192.0.2.9 proxied=false ttl=1",
            "a-web.example.org TXT \"heritage=external-dns\" proxied=false ttl=1",
            "alias.example.net CNAME lb.example.com proxied=false ttl=1",
            "example.org MX 10 mail.example.org proxied=false ttl=1",
            "web.example.org A 192.0.2.1 proxied=true ttl=1",
            "web.example.org A 192.0.2.2 proxied=true ttl=1",
            "web.example.org AAAA 2001:db8::1 proxied=false ttl=120",
        ]
    );
    assert_eq!(cf.state().requests.count("batch"), 2, "one batch per zone");
    let proxied = |e: &Endpoint| format!(" proxied={}", e.provider_specific.get(PROXIED_PROPERTY).unwrap_or("-"));
    assert_eq!(
        read_lines(&p, proxied).await,
        vec![
            "*.example.org A 1 192.0.2.9 proxied=false",
            "a-web.example.org TXT 1 \"heritage=external-dns\" proxied=false",
            "alias.example.net CNAME 1 lb.example.com proxied=false",
            "example.org MX 1 10 mail.example.org proxied=false",
            "web.example.org A 1 192.0.2.1,192.0.2.2 proxied=true",
            "web.example.org AAAA 120 2001:db8::1 proxied=false",
        ]
    );
}

#[tokio::test]
async fn updates_patch_in_place_and_deletes_leave_foreign_records() {
    let cf = fake();
    let foreign = cf.seed(ZONE, "web.example.org", "TXT", "someone else's");
    let p = provider(&cf);
    let old = ep("web.example.org", RecordType::A, &["192.0.2.1", "192.0.2.2"]).with_ttl(Ttl(300));
    apply(&p, &[Change::Create(old.clone())]).await;
    let ids_before: Vec<String> = cf.state().records.keys().cloned().collect();
    let records = p.records().await.unwrap_or_else(|e| panic!("{e}"));
    let new = ep("web.example.org", RecordType::A, &["192.0.2.1", "192.0.2.3"]).with_ttl(Ttl(600));
    let update = Change::update(old, new.clone());
    if let Err(e) = p.apply(&records.state, &[Unit::new(&update)]).await {
        panic!("{e}");
    }
    assert_eq!(
        cf.lines(),
        vec![
            "web.example.org A 192.0.2.1 proxied=false ttl=600",
            "web.example.org A 192.0.2.3 proxied=false ttl=600",
            "web.example.org TXT someone else's proxied=false ttl=1",
        ]
    );
    let ids_after: Vec<String> = cf.state().records.keys().cloned().collect();
    assert_eq!(
        ids_before, ids_after,
        "the replaced target reused the freed record's id"
    );

    let records = p.records().await.unwrap_or_else(|e| panic!("{e}"));
    let delete = Change::Delete(new);
    if let Err(e) = p.apply(&records.state, &[Unit::new(&delete)]).await {
        panic!("{e}");
    }
    assert_eq!(
        cf.lines(),
        vec!["web.example.org TXT someone else's proxied=false ttl=1"]
    );
    assert!(cf.state().records.contains_key(&foreign));
}

#[tokio::test]
async fn a_refused_record_is_named_with_cloudflares_code_and_the_others_land() {
    let cf = fake();
    let p = provider(&cf);
    let changes: Vec<Change> = vec![
        Change::Create(ep("ok1.example.org", RecordType::A, &["192.0.2.1"])),
        Change::Create(ep("short.example.org", RecordType::A, &["192.0.2.2"]).with_ttl(Ttl(30))),
        Change::Create(ep("ok2.example.org", RecordType::A, &["192.0.2.3"])),
        Change::Create(ep("outside.example.com", RecordType::A, &["192.0.2.4"])),
        Change::Create(ep("ok3.example.org", RecordType::Txt, &["x"])),
    ];
    let err = apply_changes(&p, &changes).await;
    let Err(ProviderError::Partial { failures }) = err else {
        panic!("expected a partial failure, got {err:?}")
    };
    let mut named: Vec<String> = failures.iter().map(|f| f.to_string()).collect();
    named.sort();
    assert_eq!(named.len(), 2, "{named:?}");
    assert!(
        named[0].starts_with("outside.example.com A: no Cloudflare zone"),
        "{named:?}"
    );
    assert!(
        named[1].starts_with("short.example.org A") && named[1].contains("9021"),
        "{named:?}"
    );
    assert_eq!(
        cf.lines(),
        vec![
            "ok1.example.org A 192.0.2.1 proxied=false ttl=1",
            "ok2.example.org A 192.0.2.3 proxied=false ttl=1",
            "ok3.example.org TXT x proxied=false ttl=1",
        ]
    );
}

#[tokio::test]
async fn large_change_sets_are_cut_into_batches_and_lists_are_paged() {
    let cf = fake();
    let p = provider_with(&cf, |c| c.records_per_page = 7);
    let changes: Vec<Change> = (0..450)
        .map(|i| Change::Create(ep(&format!("h{i}.example.org"), RecordType::A, &["192.0.2.1"])))
        .collect();
    apply(&p, &changes).await;
    assert_eq!(cf.state().records.len(), 450);
    assert_eq!(cf.state().requests.count("batch"), 3, "batches of at most 200 records");
    let before = cf.state().requests.len();
    let records = p.records().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(records.endpoints.len(), 450);
    // One zones list, then 65 pages of example.org's records and one of example.net's.
    assert_eq!(cf.state().requests.len() - before, 1 + 65 + 1);
}

/// Each zone's batches are as large as its plan takes (issue 50): 450 records are three calls on a Free
/// zone and one on an Enterprise zone of the same account.
#[tokio::test]
async fn batches_are_sized_by_each_zones_plan() {
    let cf = fake();
    cf.set_plan("9a7806061c88ada191ed06f989cc3dac", Plan::Enterprise);
    let p = provider(&cf);
    let creates = |zone: &str| -> Vec<Change> {
        (0..450)
            .map(|i| Change::Create(ep(&format!("h{i}.{zone}"), RecordType::A, &["192.0.2.1"])))
            .collect()
    };
    apply(&p, &creates("example.org")).await;
    assert_eq!(cf.state().requests.count("batch"), 3, "Free: batches of at most 200");
    apply(&p, &creates("example.net")).await;
    assert_eq!(cf.state().requests.count("batch"), 4, "Enterprise: one batch of 450");
    assert_eq!(cf.state().records.len(), 900);
}

/// `--batch-change-size` overrides the plan; the fake refuses a batch past the zone's plan as Cloudflare
/// does (error 1004), and the provider's halving still lands every record.
#[tokio::test]
async fn an_override_past_the_plan_is_refused_by_the_fake_and_split() {
    let cf = fake();
    cf.set_plan("9a7806061c88ada191ed06f989cc3dac", Plan::Enterprise);
    let p = provider_with(&cf, |c| {
        c.batch_size_by_plan = false;
        c.batch.size = PAID_MAX_BATCH + 1;
    });
    let creates = |zone: &str, n: usize| -> Vec<Change> {
        (0..n)
            .map(|i| Change::Create(ep(&format!("h{i}.{zone}"), RecordType::A, &["192.0.2.1"])))
            .collect()
    };
    apply(&p, &creates("example.org", MAX_BATCH + 1)).await;
    assert_eq!(
        cf.state().requests.count("batch"),
        3,
        "201 on Free: refused, then two halves"
    );
    apply(&p, &creates("example.net", PAID_MAX_BATCH)).await;
    assert_eq!(cf.state().requests.count("batch"), 4, "3,500 on Enterprise: one call");
    let more: Vec<Change> = (0..=PAID_MAX_BATCH)
        .map(|i| Change::Create(ep(&format!("m{i}.example.net"), RecordType::A, &["192.0.2.1"])))
        .collect();
    let before = cf.state().requests.count("batch");
    apply(&p, &more).await;
    assert_eq!(
        cf.state().requests.count("batch") - before,
        3,
        "3,501 on Enterprise: refused, then two halves"
    );
    assert_eq!(
        cf.state().records.len(),
        MAX_BATCH + 1 + PAID_MAX_BATCH + PAID_MAX_BATCH + 1
    );
}

#[tokio::test]
async fn rate_limits_are_waited_out() {
    let cf = fake();
    let p = provider(&cf);
    cf.state().faults.throttle_next = 3;
    apply(
        &p,
        &[Change::Create(ep("web.example.org", RecordType::A, &["192.0.2.1"]))],
    )
    .await;
    assert_eq!(cf.state().requests.throttled(), 3);
    assert_eq!(cf.lines(), vec!["web.example.org A 192.0.2.1 proxied=false ttl=1"]);
    // More 429s than attempts are waited out too: a throttle is no attempt.
    cf.state().faults.throttle_next = 10;
    let read = p.records().await;
    assert!(read.is_ok(), "{read:?}");
    assert_eq!(cf.state().requests.throttled(), 13);
    // A 429 asking for longer than the call waits out throttles (500 ms here): a transient error, so
    // the next sync retries.
    cf.state().faults.throttle_next = 100;
    cf.state().faults.retry_after = Duration::from_secs(1);
    let err = p.records().await;
    assert!(err.as_ref().is_err_and(ProviderError::is_transient), "{err:?}");
}

#[tokio::test]
async fn a_wrong_token_is_an_authentication_error() {
    let cf = fake();
    let p = provider_with(&cf, |c| c.auth = Auth::Token("wrong".into()));
    let err = p.records().await;
    assert!(is_auth_failure(&err, "9109"), "{err:?}");
}

#[tokio::test]
async fn desired_endpoints_are_adjusted_to_what_cloudflare_stores() {
    let cf = fake();
    let p = provider_with(&cf, |c| c.proxied_by_default = true);
    let mut off = ep("off.example.org", RecordType::A, &["192.0.2.1"]);
    off.provider_specific
        .set("external-dns.alpha.kubernetes.io/cloudflare-proxied", "false");
    let adjusted = match p
        .adjust_endpoints(vec![
            ep("on.example.org", RecordType::A, &["192.0.2.1"]).with_ttl(Ttl(300)),
            off,
            ep("t.example.org", RecordType::Txt, &["x"]),
        ])
        .await
    {
        Ok(a) => a,
        Err(e) => panic!("{e}"),
    };
    let props: Vec<(String, Option<&str>, i64)> = adjusted
        .iter()
        .map(|e| {
            (
                e.dns_name.clone(),
                e.provider_specific.get(PROXIED_PROPERTY),
                e.record_ttl.0,
            )
        })
        .collect();
    assert_eq!(
        props,
        vec![
            ("on.example.org".into(), Some("true"), 0),
            ("off.example.org".into(), Some("false"), 0),
            ("t.example.org".into(), Some("false"), 0),
        ]
    );
    assert!(
        adjusted[1].provider_specific.iter().count() == 1,
        "the alpha spelling is replaced"
    );
}

#[tokio::test]
async fn the_global_api_key_and_email_authenticate_too() {
    let cf = fake();
    let p = provider_with(&cf, |c| {
        c.auth = Auth::Key {
            key: API_KEY.into(),
            email: API_EMAIL.into(),
        }
    });
    apply(
        &p,
        &[Change::Create(ep("web.example.org", RecordType::A, &["192.0.2.1"]))],
    )
    .await;
    assert_eq!(cf.lines(), vec!["web.example.org A 192.0.2.1 proxied=false ttl=1"]);
    let wrong = provider_with(&cf, |c| {
        c.auth = Auth::Key {
            key: "nope".into(),
            email: API_EMAIL.into(),
        }
    });
    assert!(matches!(
        wrong.records().await,
        Err(ProviderError::Failed {
            kind: extdns_provider::FailureKind::Auth,
            ..
        })
    ));
}

#[tokio::test]
async fn zone_filters_limit_the_zones_managed() {
    let cf = fake();
    cf.seed(ZONE, "a.example.org", "A", "192.0.2.1");
    cf.seed("9a7806061c88ada191ed06f989cc3dac", "b.example.net", "A", "192.0.2.2");
    let names = |p: CloudflareProvider| async move {
        let mut v: Vec<String> = match p.records().await {
            Ok(r) => r.endpoints.into_iter().map(|e| e.dns_name).collect(),
            Err(e) => panic!("{e}"),
        };
        v.sort();
        v
    };
    assert_eq!(names(provider(&cf)).await, ["a.example.org", "b.example.net"]);
    let by_id = provider_with(&cf, |c| c.zones.zone_ids = vec![ZONE.into()]);
    assert_eq!(names(by_id).await, ["a.example.org"]);
    let by_name = provider_with(&cf, |c| {
        c.zones.domain_filter = extdns_endpoint::DomainFilter::new(&["example.net"], &[])
    });
    assert_eq!(names(by_name).await, ["b.example.net"]);
    // A name under a zone that is not managed has no zone to go to.
    let p = provider_with(&cf, |c| c.zones.zone_ids = vec![ZONE.into()]);
    let err = apply_changes(
        &p,
        &[Change::Create(ep("c.example.net", RecordType::A, &["192.0.2.3"]))],
    )
    .await;
    assert!(matches!(err, Err(ProviderError::Partial { .. })), "{err:?}");
}

/// `--txt-ownership=metadata`: the payload shares the comment with the user's text, both read back apart.
#[tokio::test]
async fn the_ownership_payload_shares_the_comment_and_both_read_back_apart() {
    use extdns_provider::metadata::OWNERSHIP_PROPERTY;
    use extdns_provider_cloudflare::COMMENT_PROPERTY;
    let cf = fake();
    let p = provider(&cf);
    let mut web = ep("web.example.org", RecordType::A, &["192.0.2.1"]);
    web.provider_specific.set(COMMENT_PROPERTY, "team web");
    web.provider_specific.set(OWNERSHIP_PROPERTY, "extdns:v1;o=me");
    assert_eq!(p.ownership_room(&web), Some(100 - "team web ".len()));
    apply(&p, &[Change::Create(web)]).await;
    let comments: Vec<Option<String>> = cf.state().records.values().map(|r| r.comment.clone()).collect();
    assert_eq!(comments, [Some("team web extdns:v1;o=me".to_string())]);
    let read = p.records().await.unwrap_or_else(|e| panic!("{e}"));
    let ps = &read.endpoints[0].provider_specific;
    assert_eq!(
        (ps.get(COMMENT_PROPERTY), ps.get(OWNERSHIP_PROPERTY)),
        (Some("team web"), Some("extdns:v1;o=me"))
    );
}

/// The fake refuses a comment past the plan's limit as Cloudflare does; a paid plan's limit takes more.
#[tokio::test]
async fn a_comment_past_the_plans_limit_is_refused_and_a_paid_plan_takes_500() {
    use extdns_provider::metadata::OWNERSHIP_PROPERTY;
    use extdns_test_support::cloudflare_fake::PAID_COMMENT_LIMIT;
    let cf = fake();
    let mut long = ep("long.example.org", RecordType::A, &["192.0.2.1"]);
    long.provider_specific
        .set(OWNERSHIP_PROPERTY, format!("extdns:v1;o={}", "x".repeat(100)));
    let err = apply_changes(&provider(&cf), &[Change::Create(long.clone())]).await;
    let Err(ProviderError::Partial { failures }) = err else {
        panic!("expected the record refused, got {err:?}")
    };
    assert!(failures[0].to_string().contains("9102"), "{failures:?}");
    assert!(cf.lines().is_empty());

    cf.state().comment_limit = Some(PAID_COMMENT_LIMIT);
    let paid = provider_with(&cf, |c| c.comment_limit = PAID_COMMENT_LIMIT);
    assert_eq!(paid.ownership_room(&long), Some(500));
    apply(&paid, &[Change::Create(long)]).await;
    assert_eq!(cf.lines().len(), 1);
}

/// A comment no longer asked for is cleared: a PATCH without the field would keep it, so an empty one is sent.
#[tokio::test]
async fn a_comment_no_longer_asked_for_is_cleared() {
    use extdns_provider_cloudflare::COMMENT_PROPERTY;
    let cf = fake();
    let p = provider(&cf);
    let plain = ep("web.example.org", RecordType::A, &["192.0.2.1"]);
    let mut commented = plain.clone();
    commented.provider_specific.set(COMMENT_PROPERTY, "team web");
    apply(&p, &[Change::Create(commented.clone())]).await;
    let read = p.records().await.unwrap_or_else(|e| panic!("{e}"));
    let units = [Change::update(commented, plain)];
    let batch = units.iter().map(Unit::new).collect::<Vec<_>>();
    p.apply(&read.state, &batch).await.unwrap_or_else(|e| panic!("{e}"));
    let comments: Vec<Option<String>> = cf.state().records.values().map(|r| r.comment.clone()).collect();
    assert!(
        comments.iter().all(|c| c.as_deref().unwrap_or_default().is_empty()),
        "{comments:?}"
    );
}

/// A delete whose record the read's index has no id for (written since by someone else, or read under another
/// spelling) is not reported as made: its unit fails, nothing of it is sent, and the next write through the same
/// read asks for a new read first. A delete through the same read of a record it knows, and one written through
/// it since (its id folded in from the batch's answer), both land.
#[tokio::test]
async fn a_delete_the_index_has_no_id_for_fails_and_asks_for_a_new_read() {
    let cf = fake();
    let p = provider(&cf);
    let kept = ep("kept.example.org", RecordType::A, &["192.0.2.1"]);
    apply(&p, &[Change::Create(kept.clone())]).await;
    let records = p.records().await.unwrap_or_else(|e| panic!("{e}"));

    let added = ep("added.example.org", RecordType::A, &["192.0.2.5"]);
    let create = Change::Create(added.clone());
    if let Err(e) = p.apply(&records.state, &[Unit::new(&create)]).await {
        panic!("{e}");
    }
    let delete_added = Change::Delete(added);
    if let Err(e) = p.apply(&records.state, &[Unit::new(&delete_added)]).await {
        panic!("a record written through this read is known to it: {e}");
    }
    assert_eq!(cf.lines(), vec!["kept.example.org A 192.0.2.1 proxied=false ttl=1"]);

    let unknown = Change::Delete(ep("kept.example.org", RecordType::A, &["192.0.2.9"]));
    let sent_before = cf.state().requests.api_calls();
    match p.apply(&records.state, &[Unit::new(&unknown)]).await {
        Err(ProviderError::Partial { failures }) => {
            assert_eq!(failures.len(), 1, "{failures:?}");
            assert!(failures[0].to_string().contains("192.0.2.9"), "{}", failures[0]);
        }
        other => panic!("expected the unit to fail, got {other:?}"),
    }
    assert_eq!(cf.state().requests.api_calls(), sent_before, "nothing of it was sent");
    let delete_kept = Change::Delete(kept);
    assert!(
        p.apply(&records.state, &[Unit::new(&delete_kept)]).await.is_err(),
        "the next write through the same read asks for a new read"
    );
    let fresh = p.records().await.unwrap_or_else(|e| panic!("{e}"));
    if let Err(e) = p.apply(&fresh.state, &[Unit::new(&delete_kept)]).await {
        panic!("{e}");
    }
    assert_eq!(cf.lines(), Vec::<String>::new());
}

/// TLSA, HTTPS and SVCB go as Cloudflare's `data` object (the fake refuses them as `content`), read back
/// from the `content` Cloudflare renders (the TLSA digest in upper case) equal to what was written, are
/// patched in place and deleted; a target that is not valid record data is refused by name, the others land.
#[tokio::test]
async fn tlsa_https_and_svcb_are_written_as_data_read_back_equal_updated_and_deleted() {
    let cf = fake();
    let p = provider(&cf);
    let digest = "0a".repeat(32);
    let tlsa_target = format!("3 1 1 {digest}");
    let tlsa = ep("_443._tcp.web.example.org", RecordType::Tlsa, &[tlsa_target.as_str()]);
    let https = ep("web.example.org", RecordType::Https, &["1 . alpn=h2,h3 port=8443"]);
    let svcb = ep("_dns.example.org", RecordType::Svcb, &["0 svc.example.net."]);
    let bad = ep("_25._tcp.mail.example.org", RecordType::Tlsa, &["3 1 1 abc"]);
    let err = apply_changes(
        &p,
        &[tlsa.clone(), https.clone(), svcb.clone(), bad].map(Change::Create),
    )
    .await;
    let Err(ProviderError::Partial { failures }) = err else {
        panic!("the bad TLSA record must be named: {err:?}")
    };
    let named: Vec<String> = failures.iter().map(|f| f.to_string()).collect();
    assert_eq!(named.len(), 1, "{named:?}");
    assert!(
        named[0].starts_with("_25._tcp.mail.example.org TLSA") && named[0].contains("certificate"),
        "{named:?}"
    );
    assert_eq!(
        cf.lines(),
        vec![
            format!(
                "_443._tcp.web.example.org TLSA 3 1 1 {} proxied=false ttl=1",
                digest.to_uppercase()
            ),
            "_dns.example.org SVCB 0 svc.example.net. proxied=false ttl=1".to_string(),
            "web.example.org HTTPS 1 . alpn=h2,h3 port=8443 proxied=false ttl=1".to_string(),
        ]
    );
    let data: Vec<serde_json::Value> = cf.state().records.values().filter_map(|r| r.data.clone()).collect();
    assert!(
        data.contains(&serde_json::json!({"usage": 3, "selector": 1, "matching_type": 1, "certificate": digest})),
        "{data:?}"
    );
    assert_eq!(
        read_lines(&p, |_| String::new()).await,
        vec![
            format!("_443._tcp.web.example.org TLSA 1 {tlsa_target}"),
            "_dns.example.org SVCB 1 0 svc.example.net.".to_string(),
            "web.example.org HTTPS 1 1 . alpn=h2,h3 port=8443".to_string(),
        ],
        "read back as written, the digest's case aside"
    );

    let records = p.records().await.unwrap_or_else(|e| panic!("{e}"));
    let ids_before: Vec<String> = cf.state().records.keys().cloned().collect();
    let https2 = ep("web.example.org", RecordType::Https, &["1 . alpn=h3"]);
    let changes = [
        Change::update(https, https2),
        Change::Delete(tlsa),
        Change::Delete(svcb),
    ];
    let units: Vec<Unit<'_>> = changes.iter().map(Unit::new).collect();
    if let Err(e) = p.apply(&records.state, &units).await {
        panic!("{e}");
    }
    assert_eq!(
        cf.lines(),
        vec!["web.example.org HTTPS 1 . alpn=h3 proxied=false ttl=1"]
    );
    let ids_after: Vec<String> = cf.state().records.keys().cloned().collect();
    assert!(ids_before.contains(&ids_after[0]), "the HTTPS record patched in place");
}

/// Cloudflare keeps TXT content as character-strings of at most 255 octets and splits a longer one itself
/// (issue 50: a long owner id, namespace or name, or an encrypted ownership value): the value is read back
/// whole, as the plan asked for it, so the next sync sees no difference; and it is deleted by it.
#[tokio::test]
async fn a_txt_value_longer_than_255_octets_reads_back_whole_and_is_deleted_by_it() {
    let cf = fake();
    let p = provider(&cf);
    let value = format!("\"heritage=external-dns,external-dns/owner={}\"", "o".repeat(300));
    let desired = ep("a-www.example.org", RecordType::Txt, &[&value]);
    apply(&p, &[Change::Create(desired.clone())]).await;
    let stored = cf.lines();
    assert!(
        stored.len() == 1 && stored[0].contains("\" \""),
        "Cloudflare holds it as 255-octet strings: {stored:?}"
    );

    let read = p.records().await.unwrap_or_else(|e| panic!("{e}"));
    let txt: Vec<&Endpoint> = read
        .endpoints
        .iter()
        .filter(|e| e.record_type == RecordType::Txt)
        .collect();
    let wanted = p
        .adjust_endpoints(vec![desired])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(txt.len(), 1, "{txt:?}");
    assert_eq!(txt[0].targets, wanted[0].targets, "read back as desired");
    assert_eq!(
        txt[0].targets.iter().map(|t| t.as_str()).collect::<Vec<_>>(),
        [value.as_str()]
    );

    let delete = Change::Delete(txt[0].clone());
    if let Err(e) = p.apply(&read.state, &[Unit::new(&delete)]).await {
        panic!("{e}");
    }
    assert_eq!(cf.lines(), Vec::<String>::new());
}

/// The apex records of issue 50 through the TXT registry: the child zone's apex (`sub.example.org`, a zone
/// of its own) owned through `a-sub.example.org` in the parent zone, the top apex (`example.org`, whose
/// ownership name `a-example.org` no zone holds) written without an ownership record, as external-dns
/// v0.23.0 publishes them; the sync does not fail.
#[tokio::test]
async fn apex_records_are_published_as_external_dns_publishes_them_and_no_sync_fails() {
    const SUB: &str = "5c2c9f0e0a6b4b3c8e1d2f3a4b5c6d7e";
    let fake = FakeCloudflare::start(&[(ZONE, "example.org"), (SUB, "sub.example.org")]);
    let published = apex::publish(std::sync::Arc::new(provider(&fake)), "example.org", "sub.example.org").await;
    let placed: Vec<String> = {
        let s = fake.state();
        let mut placed: Vec<String> = s
            .records
            .values()
            .map(|r| format!("{} {} {}", r.zone_id, r.name, r.rtype))
            .collect();
        placed.sort();
        placed
    };
    assert_eq!(
        placed,
        [
            format!("{ZONE} a-sub.example.org TXT"),
            format!("{ZONE} example.org A"),
            format!("{SUB} sub.example.org A"),
        ],
        "the child zone's apex owned through the parent zone, the top apex without an ownership record"
    );
    published.assert_as_external_dns();
}
