//! The provider against a real PowerDNS (Debian's `pdns-server` with the sqlite3 backend), every answer
//! read back with `dig`; and against a small fake API for the rate-limit and 5xx paths a real server does
//! not produce on demand.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use extdns_endpoint::{Change, DomainFilter, Endpoint, ProviderSpecific, RecordType, Ttl};
use extdns_provider::{Provider, ProviderError, Unit, apply_changes};
use extdns_provider_pdns::{PdnsConfig, PdnsProvider};
use extdns_test_support::apex;
use extdns_test_support::lines::is_auth_failure;
use extdns_test_support::pdns::{API_KEY, PowerDns, Zone};
use extdns_test_support::require;

fn provider_with(url: &str, key: &str, filter: &[&str]) -> PdnsProvider {
    let mut config = PdnsConfig::new(url, key);
    config.domain_filter = DomainFilter::new(filter, &[] as &[&str]);
    config.calls.backoff.initial = Duration::from_millis(20);
    PdnsProvider::new(&config).unwrap_or_else(|e| panic!("{e}"))
}

fn provider(pdns: &PowerDns) -> PdnsProvider {
    provider_with(&pdns.url(), API_KEY, &[])
}

/// PowerDNS serving `example.org`, and a provider for it.
fn example_org() -> (PowerDns, PdnsProvider) {
    let pdns = PowerDns::start(&[Zone::new("example.org")]);
    let p = provider(&pdns);
    (pdns, p)
}

fn ep(name: &str, rtype: RecordType, targets: &[&str]) -> Endpoint {
    Endpoint::new(name, rtype, targets.iter().copied())
}

fn alias(e: Endpoint) -> Endpoint {
    let mut ps = ProviderSpecific::default();
    ps.set("alias", "true");
    e.with_provider_specific(ps)
}

async fn apply(p: &PdnsProvider, changes: &[Change]) -> Result<(), ProviderError> {
    apply_changes(p, changes).await
}

async fn must(p: &PdnsProvider, changes: &[Change]) {
    if let Err(e) = apply(p, changes).await {
        panic!("apply failed: {e}");
    }
}

async fn read(p: &PdnsProvider) -> Vec<Endpoint> {
    match p.records().await {
        Ok(r) => {
            let mut eps = r.endpoints;
            eps.sort_by_key(Endpoint::key);
            eps
        }
        Err(e) => panic!("read failed: {e}"),
    }
}

fn find<'a>(eps: &'a [Endpoint], name: &str, rtype: &RecordType) -> Option<&'a Endpoint> {
    eps.iter().find(|e| e.dns_name == name && &e.record_type == rtype)
}

#[tokio::test]
async fn every_record_type_is_created_read_updated_and_deleted() {
    require!(PowerDns);
    let pdns = PowerDns::start(&[Zone::new("example.org").with_record("legacy", "A", "192.0.2.99")]);
    let p = provider(&pdns);
    let created = vec![
        ep("web.example.org", RecordType::A, &["192.0.2.10", "192.0.2.11"]).with_ttl(Ttl(120)),
        ep("web.example.org", RecordType::Aaaa, &["2001:db8::10"]),
        ep("www.example.org", RecordType::Cname, &["web.example.org"]),
        ep(
            "txt.example.org",
            RecordType::Txt,
            &["hello world", "\"already quoted\""],
        ),
        ep("example.org", RecordType::Mx, &["10 mail.example.org"]),
        ep(
            "_sip._udp.example.org",
            RecordType::Srv,
            &["0 50 5060 sip.example.org."],
        ),
        alias(ep("apex.example.org", RecordType::Cname, &["lb.example.net"])),
    ];
    must(&p, &created.iter().cloned().map(Change::Create).collect::<Vec<_>>()).await;

    assert_eq!(pdns.dig("web.example.org", "A"), ["192.0.2.10", "192.0.2.11"]);
    assert_eq!(pdns.ttl("web.example.org", "A"), Some(120));
    assert_eq!(
        pdns.ttl("web.example.org", "AAAA"),
        Some(300),
        "external-dns's default TTL"
    );
    assert_eq!(pdns.dig("web.example.org", "AAAA"), ["2001:db8::10"]);
    assert_eq!(pdns.dig("www.example.org", "CNAME"), ["web.example.org."]);
    assert_eq!(
        pdns.dig("txt.example.org", "TXT"),
        ["\"already quoted\"", "\"hello world\""]
    );
    assert_eq!(pdns.dig("example.org", "MX"), ["10 mail.example.org."]);
    assert_eq!(pdns.dig("_sip._udp.example.org", "SRV"), ["0 50 5060 sip.example.org."]);
    assert!(
        pdns.axfr("example.org")
            .contains(&"apex.example.org. ALIAS lb.example.net.".to_string())
            || pdns
                .axfr("example.org")
                .iter()
                .any(|l| l.starts_with("apex.example.org. TYPE65401")),
        "the alias is an ALIAS rrset: {:?}",
        pdns.axfr("example.org")
    );

    // Read back: what was written, in the form the desired endpoints are adjusted to.
    let eps = read(&p).await;
    let desired = p.adjust_endpoints(created.clone()).await.unwrap_or_default();
    for d in &desired {
        let Some(got) = find(&eps, &d.dns_name, &d.record_type) else {
            panic!("{} {} not read back: {eps:?}", d.dns_name, d.record_type)
        };
        assert!(got.targets.same(&d.targets), "{d} read back as {got}");
        assert_eq!(got.provider_specific, d.provider_specific, "{d}");
    }
    assert!(find(&eps, "legacy.example.org", &RecordType::A).is_some());
    assert!(
        !eps.iter().any(|e| e.record_type == RecordType::Other("SOA".into())),
        "the SOA is not a record extdns manages"
    );
    assert!(
        !eps.iter()
            .any(|e| e.record_type == RecordType::Ns && e.dns_name == "example.org"),
        "nor the apex NS"
    );

    // Update: new addresses, new text, new mail host, the alias back to a plain CNAME.
    let updated = [
        ep("web.example.org", RecordType::A, &["192.0.2.20"]).with_ttl(Ttl(60)),
        ep("txt.example.org", RecordType::Txt, &["bye"]),
        ep("example.org", RecordType::Mx, &["20 mx2.example.org"]),
        ep("apex.example.org", RecordType::Cname, &["lb2.example.net"]),
    ];
    let updates: Vec<Change> = updated
        .iter()
        .map(|new| {
            let old = find(&eps, &new.dns_name, &new.record_type).cloned().unwrap_or_default();
            Change::update(old, new.clone())
        })
        .collect();
    must(&p, &updates).await;
    for (name, rtype, answer) in [
        ("web.example.org", "A", "192.0.2.20"),
        ("txt.example.org", "TXT", "\"bye\""),
        ("example.org", "MX", "20 mx2.example.org."),
        ("apex.example.org", "CNAME", "lb2.example.net."),
    ] {
        assert_eq!(pdns.dig(name, rtype), [answer], "{name} {rtype}");
    }
    assert_eq!(pdns.ttl("web.example.org", "A"), Some(60));
    assert!(
        !pdns
            .axfr("example.org")
            .iter()
            .any(|l| l.starts_with("apex.example.org. ALIAS") || l.starts_with("apex.example.org. TYPE65401")),
        "the ALIAS rrset was replaced: {:?}",
        pdns.axfr("example.org")
    );

    // Delete everything extdns wrote; the record it did not write stays.
    let eps = read(&p).await;
    let deletes: Vec<Change> = eps
        .iter()
        .filter(|e| e.dns_name != "legacy.example.org")
        .cloned()
        .map(Change::Delete)
        .collect();
    must(&p, &deletes).await;
    assert_eq!(
        read(&p).await.iter().map(|e| e.dns_name.as_str()).collect::<Vec<_>>(),
        ["legacy.example.org"]
    );
    assert_eq!(pdns.dig("legacy.example.org", "A"), ["192.0.2.99"]);
    assert!(pdns.dig("web.example.org", "A").is_empty());
}

#[tokio::test]
async fn a_refused_change_fails_alone_with_its_ownership_record_and_the_others_land() {
    require!(PowerDns);
    let (pdns, p) = example_org();
    let owner = |name: &str| {
        Change::Create(ep(
            name,
            RecordType::Txt,
            &["\"heritage=external-dns,external-dns/owner=test\""],
        ))
    };
    // A target with a label longer than 63 bytes is no DNS name: PowerDNS refuses the whole PATCH (422).
    let bad_target = format!("{}.example.net", "x".repeat(70));
    let records = [
        Change::Create(ep("a.example.org", RecordType::A, &["192.0.2.1"])),
        Change::Create(ep("b.example.org", RecordType::A, &["192.0.2.2"])),
        Change::Create(ep("bad.example.org", RecordType::Cname, &[&bad_target])),
        Change::Create(ep("c.example.org", RecordType::A, &["192.0.2.3"])),
        Change::Create(ep("d.example.org", RecordType::A, &["192.0.2.4"])),
    ];
    let owners = [
        owner("a-a.example.org"),
        owner("a-b.example.org"),
        owner("cname-bad.example.org"),
        owner("a-c.example.org"),
        owner("a-d.example.org"),
    ];
    let units: Vec<Unit<'_>> = records
        .iter()
        .zip(&owners)
        .map(|(r, o)| Unit::with_ownership(r, o))
        .collect();
    let serial = pdns.serial("example.org");
    let result = p.apply(&Default::default(), &units).await;
    let Err(ProviderError::Partial { failures }) = result else {
        panic!("expected a partial failure, got {result:?}")
    };
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert_eq!(failures[0].key.dns_name, "bad.example.org");
    assert!(
        failures[0].reason.message.contains("422") && failures[0].reason.message.contains("bad.example.org"),
        "PowerDNS's reason is kept: {}",
        failures[0].reason
    );
    for (name, ip) in [
        ("a", "192.0.2.1"),
        ("b", "192.0.2.2"),
        ("c", "192.0.2.3"),
        ("d", "192.0.2.4"),
    ] {
        assert_eq!(pdns.dig(&format!("{name}.example.org"), "A"), [ip]);
        assert_eq!(pdns.dig(&format!("a-{name}.example.org"), "TXT").len(), 1);
    }
    assert!(
        pdns.dig("cname-bad.example.org", "TXT").is_empty(),
        "no ownership record without its record"
    );
    assert!(pdns.serial("example.org") > serial);
}

#[tokio::test]
async fn a_wrong_api_key_is_an_authentication_failure_and_writes_nothing() {
    require!(PowerDns);
    let pdns = PowerDns::start(&[Zone::new("example.org")]);
    let p = provider_with(&pdns.url(), "not-the-key", &[]);
    let read = p.records().await;
    assert!(is_auth_failure(&read, "401"), "{read:?}");
    let write = apply(
        &p,
        &[Change::Create(ep("a.example.org", RecordType::A, &["192.0.2.1"]))],
    )
    .await;
    assert!(
        matches!(
            &write,
            Err(ProviderError::Failed {
                kind: extdns_provider::FailureKind::Auth,
                ..
            })
        ),
        "{write:?}"
    );
    assert!(pdns.dig("a.example.org", "A").is_empty());
}

#[tokio::test]
async fn zones_are_picked_by_the_domain_filter_and_changes_outside_them_fail_by_name() {
    require!(PowerDns);
    let pdns = PowerDns::start(&[
        Zone::new("example.org").with_record("x", "A", "192.0.2.1"),
        Zone::new("k8s.example.org").with_record("y", "A", "192.0.2.2"),
        Zone::new("example.com").with_record("z", "A", "192.0.2.3"),
    ]);
    let p = provider_with(&pdns.url(), API_KEY, &["k8s.example.org"]);
    let names: Vec<String> = read(&p).await.into_iter().map(|e| e.dns_name).collect();
    assert!(names.contains(&"y.k8s.example.org".to_string()), "{names:?}");
    // example.org holds k8s.example.org's parent names, so external-dns picks it too (MatchParent).
    assert!(names.contains(&"x.example.org".to_string()), "{names:?}");
    assert!(!names.contains(&"z.example.com".to_string()), "{names:?}");

    let result = apply(
        &p,
        &[
            Change::Create(ep("new.k8s.example.org", RecordType::A, &["192.0.2.7"])),
            Change::Create(ep("new.example.com", RecordType::A, &["192.0.2.8"])),
        ],
    )
    .await;
    let Err(ProviderError::Partial { failures }) = result else {
        panic!("expected a partial failure, got {result:?}")
    };
    assert_eq!(
        failures.iter().map(|f| f.key.dns_name.as_str()).collect::<Vec<_>>(),
        ["new.example.com"]
    );
    // The record went to the closest zone.
    assert_eq!(pdns.dig("new.k8s.example.org", "A"), ["192.0.2.7"]);
    assert!(pdns.dig("new.example.com", "A").is_empty());
    let body = pdns.api_get("/api/v1/servers/localhost/zones/k8s.example.org.");
    assert!(body.contains("new.k8s.example.org."), "{body}");
}

#[tokio::test]
async fn an_unreachable_server_is_transient() {
    let port = extdns_test_support::free_port();
    let p = provider_with(&format!("http://127.0.0.1:{port}"), "k", &[]);
    let r = p.records().await;
    assert!(matches!(&r, Err(e) if e.is_transient()), "{r:?}");
}

/// A fake API answering each request with the next status of `statuses` (then 200 with an empty zone list).
async fn fake(statuses: Vec<u16>) -> (String, Arc<AtomicUsize>) {
    use axum::http::{HeaderValue, StatusCode};
    use axum::response::IntoResponse;
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let app = axum::Router::new().fallback(move || {
        let n = counter.fetch_add(1, Ordering::SeqCst);
        let status = statuses.get(n).copied().unwrap_or(200);
        async move {
            let code = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
            let mut response = if code.is_success() {
                (code, "[]").into_response()
            } else {
                (code, r#"{"error": "slow down"}"#).into_response()
            };
            response
                .headers_mut()
                .insert("Retry-After", HeaderValue::from_static("0"));
            response
        }
    });
    (extdns_test_support::serve(app).await, calls)
}

#[tokio::test]
async fn rate_limits_and_server_errors_are_retried_then_reported_as_transient() {
    // A 429 then a 503, then success: the read succeeds on the third request.
    let (url, calls) = fake(vec![429, 503]).await;
    let p = provider_with(&url, "k", &[]);
    let r = p.records().await;
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(calls.load(Ordering::SeqCst), 3);

    // Rate limited ten times: a throttle is no attempt, so all ten are waited out (each asked for 0 s).
    let (url, calls) = fake(vec![429; 10]).await;
    let p = provider_with(&url, "k", &[]);
    let r = p.records().await;
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(calls.load(Ordering::SeqCst), 11);

    // Failing every time: three attempts, then a transient error naming the status and PowerDNS's text.
    let (url, calls) = fake(vec![500; 10]).await;
    let p = provider_with(&url, "k", &[]);
    let r = p.records().await;
    assert!(
        matches!(&r, Err(e) if e.is_transient() && e.to_string().contains("500") && e.to_string().contains("slow down")),
        "{r:?}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 3);

    // A 400 is not retried: PowerDNS refused what was sent.
    let (url, calls) = fake(vec![400; 10]).await;
    let p = provider_with(&url, "k", &[]);
    let kind = p.records().await.err().and_then(|e| e.kind());
    assert_eq!(kind, Some(extdns_provider::FailureKind::Refused));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn an_unknown_server_id_is_a_configuration_error_not_a_transient_one() {
    require!(PowerDns);
    let pdns = PowerDns::start(&[Zone::new("example.org")]);
    let mut config = PdnsConfig::new(pdns.url(), API_KEY);
    config.server_id = "no-such-server".into();
    let p = PdnsProvider::new(&config).unwrap_or_else(|e| panic!("{e}"));
    let r = p.records().await;
    assert!(
        matches!(&r, Err(ProviderError::Failed { kind: extdns_provider::FailureKind::Fatal, message, .. }) if message.contains("404") && message.contains("server id")),
        "{r:?}"
    );
}

#[tokio::test]
async fn a_cname_at_the_apex_is_an_alias_and_reads_back_as_desired() {
    require!(PowerDns);
    let (pdns, p) = example_org();
    let desired = ep("example.org", RecordType::Cname, &["lb.example.net"]);
    must(&p, &[Change::Create(desired.clone())]).await;
    let axfr = pdns.axfr("example.org");
    assert!(
        axfr.iter()
            .any(|l| l == "example.org. ALIAS lb.example.net." || l.starts_with("example.org. TYPE65401")),
        "{axfr:?}"
    );
    let eps = read(&p).await;
    let Some(got) = find(&eps, "example.org", &RecordType::Cname) else {
        panic!("not read back: {eps:?}")
    };
    // The same with or without the alias property on the desired side (`--prefer-alias`).
    for d in [desired.clone(), alias(desired)] {
        let adjusted = p.adjust_endpoints(vec![d]).await.unwrap_or_default();
        let Some(a) = adjusted.first() else {
            panic!("adjust dropped the endpoint")
        };
        assert_eq!(
            (&a.dns_name, &a.record_type, &a.targets, &a.provider_specific),
            (&got.dns_name, &got.record_type, &got.targets, &got.provider_specific),
            "desired and read back agree"
        );
    }
}

#[tokio::test]
async fn a_zone_that_cannot_be_read_fails_the_whole_read() {
    use axum::http::StatusCode;
    use axum::routing::get;
    // Two zones listed; one reads fine, the other keeps failing: no partial view may reach the plan.
    let app = axum::Router::new()
        .route(
            "/api/v1/servers/localhost/zones",
            get(|| async {
                r#"[{"id":"a.example.","name":"a.example."},{"id":"b.example.","name":"b.example."}]"#
            }),
        )
        .route(
            "/api/v1/servers/localhost/zones/a.example.",
            get(|| async { r#"{"rrsets":[{"name":"x.a.example.","type":"A","ttl":60,"records":[{"content":"192.0.2.1","disabled":false}]}]}"# }),
        )
        .route(
            "/api/v1/servers/localhost/zones/b.example.",
            get(|| async { (StatusCode::INTERNAL_SERVER_ERROR, r#"{"error": "backend down"}"#) }),
        );
    let url = extdns_test_support::serve(app).await;
    let p = provider_with(&url, "k", &[]);
    let r = p.records().await;
    assert!(
        matches!(&r, Err(e) if e.is_transient() && e.to_string().contains("b.example.") && e.to_string().contains("backend down")),
        "{r:?}"
    );
}

#[tokio::test]
async fn an_ownership_value_over_255_octets_is_written_in_strings_and_read_back_whole() {
    require!(PowerDns);
    // Held to the end: the server stops when its handle drops.
    let (_pdns, p) = example_org();
    let value = format!("\"heritage=external-dns,external-dns/owner={}\"", "o".repeat(300));
    must(
        &p,
        &[Change::Create(ep(
            "a-web.example.org",
            RecordType::Txt,
            &[value.as_str()],
        ))],
    )
    .await;
    let read = read(&p).await;
    let txt = find(&read, "a-web.example.org", &RecordType::Txt).map(|e| e.targets[0].as_str().to_string());
    assert_eq!(txt, Some(value), "one value, as the registry wrote it");
}

/// TLSA, HTTPS and SVCB written as their canonical text, read back equal to it (PowerDNS prints its own
/// spelling, which the read puts in canonical text), updated and deleted, each step checked with `dig`.
#[tokio::test]
async fn tlsa_https_and_svcb_are_created_read_updated_and_deleted() {
    require!(PowerDns);
    let (pdns, p) = example_org();
    let tlsa = format!("3 1 1 {}", "ab".repeat(32));
    let created = vec![
        ep("_443._tcp.web.example.org", RecordType::Tlsa, &[tlsa.as_str()]).with_ttl(Ttl(120)),
        ep(
            "web.example.org",
            RecordType::Https,
            &[
                "1 . alpn=h2,h3 port=8443 ipv4hint=192.0.2.10 ipv6hint=2001:db8::10",
                "2 alt.example.org. alpn=h2",
            ],
        ),
        ep(
            "_dns.example.org",
            RecordType::Svcb,
            &["1 dns.example.org. mandatory=alpn alpn=dot port=853 ech=AEj+DQBE"],
        ),
        ep("pool.example.org", RecordType::Svcb, &["0 pool.svc.example.net."]),
        ep(
            "opaque.example.org",
            RecordType::Svcb,
            &["3 . key65000=abc key65001=\"x y\" key65002"],
        ),
    ];
    must(&p, &created.iter().cloned().map(Change::Create).collect::<Vec<_>>()).await;
    let eps = read(&p).await;
    for e in &created {
        let mut want: Vec<String> = e
            .targets
            .iter()
            .filter_map(|t| extdns_endpoint::canonical_target(&e.record_type, t).ok().flatten())
            .collect();
        want.sort();
        assert_eq!(want.len(), e.targets.len());
        assert_eq!(pdns.dig_typed(&e.dns_name, e.record_type.as_str()), want, "dig {e}");
        let back = find(&eps, &e.dns_name, &e.record_type).unwrap_or_else(|| panic!("{e} not read: {eps:?}"));
        let mut got: Vec<String> = back.targets.iter().map(ToString::to_string).collect();
        got.sort();
        assert_eq!(got, want, "{e} read back in canonical text");
    }
    assert_eq!(pdns.ttl("_443._tcp.web.example.org", "TLSA"), Some(120));

    let tlsa2 = format!("3 1 1 {}", "cd".repeat(32));
    let new_tlsa = ep("_443._tcp.web.example.org", RecordType::Tlsa, &[tlsa2.as_str()]);
    let new_https = ep("web.example.org", RecordType::Https, &["1 . alpn=h3"]);
    must(
        &p,
        &[
            Change::update(created[0].clone(), new_tlsa.clone()),
            Change::update(created[1].clone(), new_https.clone()),
        ],
    )
    .await;
    assert_eq!(pdns.dig_typed("_443._tcp.web.example.org", "TLSA"), [tlsa2]);
    assert_eq!(pdns.dig_typed("web.example.org", "HTTPS"), ["1 . alpn=h3"]);

    let gone = [
        new_tlsa,
        new_https,
        created[2].clone(),
        created[3].clone(),
        created[4].clone(),
    ];
    must(&p, &gone.clone().map(Change::Delete)).await;
    for e in &gone {
        assert!(pdns.dig(&e.dns_name, e.record_type.as_str()).is_empty(), "{e} left");
    }
    assert!(read(&p).await.iter().all(|e| !e.record_type.has_typed_rdata()));
}

/// The apex records of issue 50 through the TXT registry on a real PowerDNS serving `example.org` and the
/// delegated `sub.example.org`: the child zone's apex owned through `a-sub.example.org` in the parent
/// zone, the top apex (whose ownership name `a-example.org` no zone holds) written without an ownership
/// record, as external-dns v0.23.0 publishes them; the sync does not fail.
#[tokio::test]
async fn apex_records_are_published_as_external_dns_publishes_them_and_no_sync_fails() {
    require!(PowerDns);
    let pdns = PowerDns::start(&[Zone::new("example.org"), Zone::new("sub.example.org")]);
    let published = apex::publish(Arc::new(provider(&pdns)), "example.org", "sub.example.org").await;
    let placed = |zone: &str| -> Vec<String> {
        let lines = pdns.axfr(zone).into_iter();
        let named = lines.map(|l| l.split(' ').take(2).collect::<Vec<_>>().join(" "));
        named.filter(|l| !l.ends_with(" NS")).collect()
    };
    assert_eq!(
        placed("example.org"),
        ["a-sub.example.org. TXT", "example.org. A"],
        "the child zone's apex owned through the parent zone, the top apex without an ownership record"
    );
    assert_eq!(placed("sub.example.org"), ["sub.example.org. A"]);
    published.assert_as_external_dns();
}
