//! The provider against the stateful Pi-hole fake, whose lists a real dnsmasq serves: what lands is read
//! from the fake's state and asked of dnsmasq with `dig`, not read back through the provider alone.

use std::time::Duration;

use extdns_endpoint::{Change, Endpoint, RecordType, Ttl};
use extdns_provider::{Backoff, Provider, ProviderError, Unit, apply_changes};
use extdns_provider_pihole::{PiholeConfig, PiholeProvider};
use extdns_test_support::lines::{is_auth_failure, read_lines, refused_lines};
use extdns_test_support::pihole_fake::{FakePihole, PASSWORD};
use extdns_test_support::require;

fn provider_with(fake: &FakePihole, password: Option<&str>) -> PiholeProvider {
    let mut c = PiholeConfig::new(fake.url.clone());
    c.password = password.map(str::to_string);
    c.calls.backoff = Backoff {
        initial: Duration::from_millis(1),
        max: Duration::from_millis(5),
        ..Backoff::default()
    };
    PiholeProvider::new(c).unwrap_or_else(|e| panic!("{e}"))
}

fn provider(fake: &FakePihole) -> PiholeProvider {
    provider_with(fake, Some(PASSWORD))
}

fn ep(name: &str, t: RecordType, targets: &[&str]) -> Endpoint {
    Endpoint::new(name, t, targets.iter().copied())
}

async fn apply(p: &PiholeProvider, changes: &[Change]) {
    if let Err(e) = apply_changes(p, changes).await {
        panic!("apply failed: {e}");
    }
}

async fn lines(p: &PiholeProvider) -> Vec<String> {
    read_lines(p, |_| String::new()).await
}

#[tokio::test]
async fn records_land_in_pihole_and_dnsmasq_answers_them() {
    require!(Dnsmasq);
    let pi = FakePihole::with_dnsmasq(Some(PASSWORD));
    let p = provider(&pi);
    apply(
        &p,
        &[
            Change::Create(ep("web.example.org", RecordType::A, &["192.0.2.1", "192.0.2.2"])),
            Change::Create(ep("web.example.org", RecordType::Aaaa, &["2001:db8::1"])),
            Change::Create(ep("alias.example.org", RecordType::Cname, &["web.example.org"])),
            Change::Create(ep("timed.example.org", RecordType::Cname, &["web.example.org"]).with_ttl(Ttl(60))),
        ],
    )
    .await;
    assert_eq!(
        pi.lines(),
        [
            "cname: alias.example.org,web.example.org",
            "cname: timed.example.org,web.example.org,60",
            "hosts: 192.0.2.1 web.example.org",
            "hosts: 192.0.2.2 web.example.org",
            "hosts: 2001:db8::1 web.example.org",
        ]
    );
    assert_eq!(pi.dig("web.example.org", "A"), ["192.0.2.1", "192.0.2.2"]);
    assert_eq!(pi.dig("web.example.org", "AAAA"), ["2001:db8::1"]);
    assert_eq!(pi.dig("alias.example.org", "CNAME"), ["web.example.org."]);
    assert_eq!(
        lines(&p).await,
        [
            "alias.example.org CNAME 0 web.example.org",
            "timed.example.org CNAME 60 web.example.org",
            "web.example.org A 0 192.0.2.1,192.0.2.2",
            "web.example.org AAAA 0 2001:db8::1",
        ]
    );
    let s = pi.state();
    assert_eq!(s.logins, 1, "one session serves every call");
    let log = s.requests.lines();
    assert!(
        log.contains(&"PUT /api/config/dns/hosts/192.0.2.1%20web.example.org".to_string())
            && log.contains(&"PUT /api/config/dns/cnameRecords/timed.example.org%2Cweb.example.org%2C60".to_string()),
        "{log:?}"
    );
}

#[tokio::test]
async fn updates_write_only_what_differs_and_deletes_leave_foreign_entries() {
    require!(Dnsmasq);
    let pi = FakePihole::with_dnsmasq(Some(PASSWORD));
    pi.seed(&["192.0.2.99 legacy.example.org"], &[]);
    let p = provider(&pi);
    let web = ep("web.example.org", RecordType::A, &["192.0.2.1", "192.0.2.2"]);
    let alias = ep("alias.example.org", RecordType::Cname, &["web.example.org"]);
    apply(&p, &[Change::Create(web.clone()), Change::Create(alias.clone())]).await;
    let records = p.records().await.unwrap_or_else(|e| panic!("{e}"));
    pi.state().requests.clear();
    let web2 = ep("web.example.org", RecordType::A, &["192.0.2.2", "192.0.2.3"]);
    let alias2 = ep("alias.example.org", RecordType::Cname, &["legacy.example.org"]).with_ttl(Ttl(120));
    let changes = [
        Change::update(web.clone(), web2.clone()),
        Change::update(alias.clone(), alias2.clone()),
    ];
    let units: Vec<Unit<'_>> = changes.iter().map(Unit::new).collect();
    if let Err(e) = p.apply(&records.state, &units).await {
        panic!("{e}");
    }
    assert_eq!(
        pi.state().requests.lines(),
        [
            "PUT /api/config/dns/hosts/192.0.2.3%20web.example.org",
            "DELETE /api/config/dns/hosts/192.0.2.1%20web.example.org",
            "DELETE /api/config/dns/cnameRecords/alias.example.org%2Cweb.example.org",
            "PUT /api/config/dns/cnameRecords/alias.example.org%2Clegacy.example.org%2C120",
        ],
        "the kept address is not touched; a new address goes in before the old one goes"
    );
    assert_eq!(pi.dig("web.example.org", "A"), ["192.0.2.2", "192.0.2.3"]);
    assert_eq!(pi.dig("alias.example.org", "CNAME"), ["legacy.example.org."]);

    // A change of the CNAME's TTL alone is written (external-dns skips it).
    let alias3 = alias2.clone().with_ttl(Ttl(300));
    apply(&p, &[Change::update(alias2, alias3.clone())]).await;
    assert!(
        pi.lines()
            .contains(&"cname: alias.example.org,legacy.example.org,300".to_string())
    );

    apply(&p, &[Change::Delete(web2), Change::Delete(alias3)]).await;
    assert_eq!(pi.lines(), ["hosts: 192.0.2.99 legacy.example.org"]);
    assert_eq!(pi.dig("web.example.org", "A"), Vec::<String>::new());
    assert_eq!(pi.dig("alias.example.org", "CNAME"), Vec::<String>::new());
    assert_eq!(pi.dig("legacy.example.org", "A"), ["192.0.2.99"]);
}

#[tokio::test]
async fn an_expired_session_is_renewed_and_the_call_repeated() {
    let pi = FakePihole::start(Some(PASSWORD));
    let p = provider(&pi);
    apply(
        &p,
        &[Change::Create(ep("a.example.org", RecordType::A, &["192.0.2.1"]))],
    )
    .await;
    assert_eq!(pi.state().logins, 1);
    // The session runs out between two syncs (or Pi-hole restarts).
    pi.state().expire_sessions();
    apply(
        &p,
        &[Change::Create(ep("b.example.org", RecordType::A, &["192.0.2.2"]))],
    )
    .await;
    assert_eq!(
        lines(&p).await,
        ["a.example.org A 0 192.0.2.1", "b.example.org A 0 192.0.2.2"]
    );
    let logins = pi.state().logins;
    let counts = (logins, pi.state().unauthorized);
    assert_eq!(counts, (2, 1), "one 401, one new login, the call repeated");

    // A session that lapses by time alone: 1 s without use.
    pi.state().validity = Duration::from_secs(1);
    pi.state().expire_sessions();
    assert_eq!(lines(&p).await.len(), 2);
    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(lines(&p).await.len(), 2, "renewed after it lapsed");
    assert_eq!(pi.state().logins, 4);
}

#[tokio::test]
async fn a_wrong_password_is_an_authentication_error_that_says_so() {
    let pi = FakePihole::start(Some(PASSWORD));
    let p = provider_with(&pi, Some("not the password"));
    let read = p.records().await;
    assert!(is_auth_failure(&read, "refused the password"), "{read:?}");
    let text = read.err().map(|e| e.to_string()).unwrap_or_default();
    for says in ["refused the password", "password incorrect"] {
        assert!(text.contains(says), "{says}: {text}");
    }
    assert!(
        !text.contains("not the password"),
        "the password is never printed: {text}"
    );
    assert_eq!(pi.state().refused_logins, 1, "no retry of a refused password");

    // A protected Pi-hole and no password configured: the error names the flag.
    let p = provider_with(&pi, None);
    let text = p.records().await.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(text.contains("set --pihole-password"), "{text}");
}

#[tokio::test]
async fn an_open_pihole_is_called_without_a_session() {
    let pi = FakePihole::start(None);
    let p = provider_with(&pi, None);
    apply(
        &p,
        &[Change::Create(ep("a.example.org", RecordType::A, &["192.0.2.1"]))],
    )
    .await;
    assert_eq!(pi.lines(), ["hosts: 192.0.2.1 a.example.org"]);
    assert!(!pi.state().requests.count("auth") > 0, "no login");
    // A password given to an open Pi-hole logs in and gets no session id: calls go without one.
    let p = provider_with(&pi, Some("anything"));
    assert_eq!(lines(&p).await, ["a.example.org A 0 192.0.2.1"]);
}

#[tokio::test]
async fn a_refused_record_is_named_and_the_others_land() {
    require!(Dnsmasq);
    let pi = FakePihole::with_dnsmasq(Some(PASSWORD));
    pi.seed(&[], &["taken.example.org,web.example.org"]);
    let p = provider(&pi);
    let changes = [
        Change::Create(ep("web.example.org", RecordType::A, &["192.0.2.1"])),
        // FTL's validator refuses the name.
        Change::Create(ep("bad!name.example.org", RecordType::A, &["192.0.2.2"])),
        // dnsmasq refuses a second CNAME for a name.
        Change::Create(ep("taken.example.org", RecordType::Cname, &["other.example.org"])),
        // Pi-hole cannot hold these at all.
        Change::Create(ep("a-web.example.org", RecordType::Txt, &["\"heritage=external-dns\""])),
        Change::Create(ep("*.example.org", RecordType::A, &["192.0.2.3"])),
        Change::Create(ep(
            "two.example.org",
            RecordType::Cname,
            &["a.example.org", "b.example.org"],
        )),
        Change::Create(ep("ok.example.org", RecordType::Aaaa, &["2001:db8::5"])),
    ];
    let result = apply_changes(&p, &changes).await;
    let Err(ProviderError::Partial { failures }) = &result else {
        panic!("expected a partial failure, got {result:?}");
    };
    let named = refused_lines(failures);
    assert_eq!(
        named,
        [
            "bad!name.example.org A",
            "taken.example.org CNAME",
            "a-web.example.org TXT",
            "*.example.org A",
            "two.example.org CNAME"
        ]
    );
    let reasons: Vec<&str> = failures.iter().map(|f| f.reason.message.as_str()).collect();
    assert!(
        reasons[0].contains("Invalid value") && reasons[0].contains("invalid hostname"),
        "{reasons:?}"
    );
    assert!(reasons[1].contains("duplicate CNAME"), "{reasons:?}");
    assert!(reasons[2].contains("--registry=noop"), "{reasons:?}");
    assert_eq!(
        pi.lines(),
        [
            "cname: taken.example.org,web.example.org",
            "hosts: 192.0.2.1 web.example.org",
            "hosts: 2001:db8::5 ok.example.org",
        ]
    );
    assert_eq!(pi.dig("ok.example.org", "AAAA"), ["2001:db8::5"]);
}

#[tokio::test]
async fn a_change_lands_whole_or_not_at_all() {
    let pi = FakePihole::start(Some(PASSWORD));
    let p = provider(&pi);
    // The second address is refused by Pi-hole after the first landed: the first is taken back.
    let result = apply_changes(
        &p,
        &[Change::Create(ep(
            "web.example.org",
            RecordType::A,
            &["192.0.2.1", "192.0.2.300"],
        ))],
    )
    .await;
    assert!(matches!(result, Err(ProviderError::Partial { .. })), "{result:?}");
    assert_eq!(pi.lines(), Vec::<String>::new());
    assert_eq!(pi.state().requests.writes(), 2, "one added, then taken back");
}

#[tokio::test]
async fn entries_with_several_names_are_read_and_never_split() {
    let pi = FakePihole::start(Some(PASSWORD));
    pi.seed(
        &["192.0.2.5 a.example.org b.example.org"],
        &["x.example.org,y.example.org,a.example.org"],
    );
    let p = provider(&pi);
    assert_eq!(
        lines(&p).await,
        [
            "a.example.org A 0 192.0.2.5",
            "b.example.org A 0 192.0.2.5",
            "x.example.org CNAME 0 a.example.org",
            "y.example.org CNAME 0 a.example.org",
        ]
    );
    let records = p.records().await.unwrap_or_else(|e| panic!("{e}"));
    let delete = Change::Delete(ep("a.example.org", RecordType::A, &["192.0.2.5"]));
    let result = p.apply(&records.state, &[Unit::new(&delete)]).await;
    let text = result.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(text.contains("also serves other names"), "{text}");
    assert_eq!(pi.state().requests.writes(), 0, "nothing written");
}

#[tokio::test]
async fn pihole_busy_is_retried_with_backoff() {
    let pi = FakePihole::start(Some(PASSWORD));
    pi.seed(&["192.0.2.1 a.example.org"], &[]);
    {
        let mut s = pi.state();
        s.faults.fail_next = 2;
        s.faults.only = Some("list");
    }
    let p = provider(&pi);
    assert_eq!(lines(&p).await, ["a.example.org A 0 192.0.2.1"]);
    pi.state().faults.fail_next = 100;
    let e = p.records().await.err();
    assert!(e.as_ref().is_some_and(ProviderError::is_transient), "{e:?}");
}

#[tokio::test]
async fn addresses_lose_their_ttl_in_adjustment_and_cnames_keep_it() {
    let pi = FakePihole::start(None);
    let p = provider_with(&pi, None);
    let adjusted = p
        .adjust_endpoints(vec![
            ep("a.example.org", RecordType::A, &["192.0.2.1"]).with_ttl(Ttl(120)),
            ep("c.example.org", RecordType::Cname, &["a.example.org"]).with_ttl(Ttl(120)),
        ])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let ttls: Vec<i64> = adjusted.iter().map(|e| e.record_ttl.0).collect();
    assert_eq!(ttls, [0, 120]);
}
