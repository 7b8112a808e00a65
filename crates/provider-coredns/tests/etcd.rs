//! The provider against a real etcd (the Go build `cargo xtask test` caches): what lands in etcd is read back
//! over etcd's gateway by the test's own plain HTTP, and compared byte for byte with what external-dns writes.

use extdns_endpoint::{Change, Endpoint, RecordType, Ttl};
use extdns_provider::{Provider, ProviderError, Unit, apply_changes};
use extdns_provider_coredns::{CorednsConfig, CorednsProvider, GROUP_PROPERTY};
use extdns_test_support::etcd::{Etcd, Pki};
use extdns_test_support::lines::{is_auth_failure, read_lines, refused_lines};
use extdns_test_support::require;

const PREFIX: &str = "/skydns/";

fn provider(etcd: &Etcd) -> CorednsProvider {
    provider_with(etcd, |_| {})
}

fn provider_with(etcd: &Etcd, f: impl FnOnce(&mut CorednsConfig)) -> CorednsProvider {
    let mut config = CorednsConfig::new(vec![etcd.url.clone()], PREFIX);
    f(&mut config);
    CorednsProvider::new(config).unwrap_or_else(|e| panic!("{e}"))
}

fn ep(name: &str, rtype: RecordType, targets: &[&str]) -> Endpoint {
    Endpoint::new(name, rtype, targets.iter().copied())
}

/// Applies `changes`, failing the test on an error.
async fn must(p: &CorednsProvider, changes: &[Change]) {
    if let Err(e) = apply_changes(p, changes).await {
        panic!("apply failed: {e}");
    }
}

/// Writes one record through `p` and reads it back: the connection to etcd works.
async fn writes_and_reads_one(p: &CorednsProvider) {
    must(
        p,
        &[Change::Create(ep("web.example.org", RecordType::A, &["192.0.2.1"]))],
    )
    .await;
    assert_eq!(read(p).await, vec!["web.example.org A 0 192.0.2.1"]);
}

/// What `p` reads, a line a record, with the group when a record has one.
async fn read(p: &CorednsProvider) -> Vec<String> {
    read_lines(p, |e| {
        let group = e.provider_specific.get(GROUP_PROPERTY);
        group.map(|g| format!(" group={g}")).unwrap_or_default()
    })
    .await
}

#[tokio::test]
async fn records_are_written_as_external_dns_writes_them_and_read_back() {
    require!(Etcd);
    let etcd = Etcd::start();
    let p = provider(&etcd);
    let mut grouped = ep("grp.example.org", RecordType::A, &["192.0.2.7"]);
    grouped.provider_specific.set(GROUP_PROPERTY, "g1");
    let changes = vec![
        Change::Create(ep("web.example.org", RecordType::A, &["192.0.2.1", "192.0.2.2"]).with_ttl(Ttl(120))),
        Change::Create(ep("web.example.org", RecordType::Aaaa, &["2001:db8::1"])),
        Change::Create(ep("alias.example.org", RecordType::Cname, &["lb.example.net"]).with_ttl(Ttl(60))),
        Change::Create(ep(
            "a-web.example.org",
            RecordType::Txt,
            &["\"heritage=external-dns,external-dns/owner=t\""],
        )),
        Change::Create(ep("example.org", RecordType::Mx, &["10 mail.example.org"])),
        Change::Create(grouped),
    ];
    must(&p, &changes).await;
    assert_eq!(
        etcd.records(PREFIX),
        vec![
            (
                "/skydns/org/example".into(),
                r#"{"host":"mail.example.org","priority":10,"mail":true,"targetstrip":1}"#.into()
            ),
            (
                "/skydns/org/example/a-web".into(),
                r#"{"text":"\"heritage=external-dns,external-dns/owner=t\"","targetstrip":1}"#.into()
            ),
            (
                "/skydns/org/example/alias".into(),
                r#"{"host":"lb.example.net","ttl":60,"targetstrip":1}"#.into()
            ),
            (
                "/skydns/org/example/grp".into(),
                r#"{"host":"192.0.2.7","targetstrip":1,"group":"g1"}"#.into()
            ),
            (
                "/skydns/org/example/web".into(),
                r#"{"host":"192.0.2.1","ttl":120,"targetstrip":1}"#.into()
            ),
            (
                "/skydns/org/example/web".into(),
                r#"{"host":"192.0.2.2","ttl":120,"targetstrip":1}"#.into()
            ),
            (
                "/skydns/org/example/web".into(),
                r#"{"host":"2001:db8::1","targetstrip":1}"#.into()
            ),
        ]
    );
    // Every key has its own eight-hex-digit id label.
    for (key, _) in etcd.dump(PREFIX) {
        let id = key.rsplit('/').next().unwrap_or_default();
        assert!(id.len() == 8 && id.bytes().all(|b| b.is_ascii_hexdigit()), "{key}");
    }
    assert_eq!(
        read(&p).await,
        vec![
            "a-web.example.org TXT 0 \"heritage=external-dns,external-dns/owner=t\"",
            "alias.example.org CNAME 60 lb.example.net",
            "example.org MX 0 10 mail.example.org",
            "grp.example.org A 0 192.0.2.7 group=g1",
            "web.example.org A 120 192.0.2.1,192.0.2.2",
            "web.example.org AAAA 0 2001:db8::1",
        ]
    );
}

#[tokio::test]
async fn updates_and_deletes_touch_only_the_keys_read() {
    require!(Etcd);
    let etcd = Etcd::start();
    // Someone else's records under the same names: by hand, without targetstrip (the id is a name label).
    etcd.put("/skydns/org/example/web/hand", r#"{"host":"198.51.100.9"}"#);
    etcd.put(
        "/skydns/org/example/legacy/x1",
        r#"{"host":"192.0.2.99","ttl":30,"targetstrip":1}"#,
    );
    etcd.put("/skydns/org/example/broken/x1", "not json");
    let p = provider(&etcd);
    let a = ep("web.example.org", RecordType::A, &["192.0.2.1", "192.0.2.2"]).with_ttl(Ttl(120));
    must(&p, &[Change::Create(a.clone())]).await;
    let rev = etcd.revision();
    let records = p.records().await.unwrap_or_else(|e| panic!("{e}"));
    // The malformed value is skipped, not fatal; the hand-written key without targetstrip is its own name.
    assert_eq!(
        read(&p).await,
        vec![
            "hand.web.example.org A 0 198.51.100.9",
            "legacy.example.org A 30 192.0.2.99",
            "web.example.org A 120 192.0.2.1,192.0.2.2",
        ]
    );
    let keys_before: Vec<String> = etcd
        .dump("/skydns/org/example/web/")
        .into_iter()
        .map(|(k, _)| k)
        .collect();

    // Update: one target kept (its key stays, with the new TTL), one replaced.
    let new = ep("web.example.org", RecordType::A, &["192.0.2.1", "192.0.2.3"]).with_ttl(Ttl(300));
    let update = Change::update(a.clone(), new.clone());
    let units = [Unit::new(&update)];
    if let Err(e) = p.apply(&records.state, &units).await {
        panic!("{e}");
    }
    assert!(etcd.revision() > rev);
    let after = etcd.dump("/skydns/org/example/web/");
    let kept = after
        .iter()
        .find(|(_, v)| v.contains("192.0.2.1"))
        .map(|(k, _)| k.clone());
    assert!(
        kept.as_ref().is_some_and(|k| keys_before.contains(k)),
        "the kept target kept its key: {after:?}"
    );
    assert_eq!(
        read(&p).await,
        vec![
            "hand.web.example.org A 0 198.51.100.9",
            "legacy.example.org A 30 192.0.2.99",
            "web.example.org A 300 192.0.2.1,192.0.2.3",
        ]
    );

    // Delete: only our two keys go; the hand-written key under the same name and the others stay.
    let records = p.records().await.unwrap_or_else(|e| panic!("{e}"));
    let delete = Change::Delete(new);
    if let Err(e) = p.apply(&records.state, &[Unit::new(&delete)]).await {
        panic!("{e}");
    }
    assert_eq!(
        etcd.dump(PREFIX).into_iter().map(|(k, _)| k).collect::<Vec<_>>(),
        vec![
            "/skydns/org/example/broken/x1",
            "/skydns/org/example/legacy/x1",
            "/skydns/org/example/web/hand"
        ]
    );
}

#[tokio::test]
async fn a_key_holding_a_host_and_a_text_loses_only_the_part_deleted() {
    require!(Etcd);
    let etcd = Etcd::start();
    // external-dns puts a TXT record of the same name into the host's key.
    etcd.put(
        "/skydns/org/example/web/0badcafe",
        r#"{"host":"192.0.2.1","text":"hello","ttl":60,"targetstrip":1}"#,
    );
    let p = provider(&etcd);
    assert_eq!(
        read(&p).await,
        vec!["web.example.org A 60 192.0.2.1", "web.example.org TXT 60 hello"]
    );
    let records = p.records().await.unwrap_or_else(|e| panic!("{e}"));
    let delete = Change::Delete(ep("web.example.org", RecordType::Txt, &["hello"]));
    if let Err(e) = p.apply(&records.state, &[Unit::new(&delete)]).await {
        panic!("{e}");
    }
    assert_eq!(
        etcd.dump(PREFIX),
        vec![(
            "/skydns/org/example/web/0badcafe".into(),
            r#"{"host":"192.0.2.1","ttl":60,"targetstrip":1}"#.into()
        )]
    );
}

#[tokio::test]
async fn a_refused_record_does_not_block_the_others() {
    require!(Etcd);
    let etcd = Etcd::start();
    let p = provider(&etcd);
    let changes = vec![
        Change::Create(ep("ok1.example.org", RecordType::A, &["192.0.2.1"])),
        Change::Create(ep(
            "_sip._tcp.example.org",
            RecordType::Srv,
            &["0 50 5060 sip.example.org"],
        )),
        Change::Create(ep("v6.example.org", RecordType::A, &["2001:db8::1"])),
        Change::Create(ep("ok2.example.org", RecordType::Txt, &["x"])),
    ];
    let err = apply_changes(&p, &changes).await;
    let Err(ProviderError::Partial { failures }) = err else {
        panic!("expected a partial failure, got {err:?}")
    };
    let mut named = refused_lines(&failures);
    named.sort();
    assert_eq!(named, ["_sip._tcp.example.org SRV", "v6.example.org A"]);
    assert!(failures.iter().any(|f| f.reason.message.contains("SRV")));
    assert_eq!(
        read(&p).await,
        vec!["ok1.example.org A 0 192.0.2.1", "ok2.example.org TXT 0 x"]
    );
}

#[tokio::test]
async fn large_change_sets_go_in_several_transactions_and_all_land() {
    require!(Etcd);
    let etcd = Etcd::start();
    let p = provider_with(&etcd, |c| c.max_txn_ops = 50);
    let changes: Vec<Change> = (0..420)
        .map(|i| Change::Create(ep(&format!("h{i}.bulk.example.org"), RecordType::A, &["192.0.2.1"])))
        .collect();
    must(&p, &changes).await;
    // More than one range page (1000) is read back too.
    let more: Vec<Change> = (0..700)
        .map(|i| Change::Create(ep(&format!("t{i}.bulk.example.org"), RecordType::Txt, &["x"])))
        .collect();
    must(&p, &more).await;
    assert_eq!(etcd.dump(PREFIX).len(), 1120);
    assert_eq!(read(&p).await.len(), 1120);
}

#[tokio::test]
async fn strictly_owned_records_carry_the_owner_and_others_are_invisible() {
    require!(Etcd);
    let etcd = Etcd::start();
    etcd.put(
        "/skydns/org/example/other/x1",
        r#"{"host":"192.0.2.50","targetstrip":1,"ownedby":"someone"}"#,
    );
    let p = provider_with(&etcd, |c| c.owned_by = Some("me".into()));
    must(
        &p,
        &[Change::Create(ep("mine.example.org", RecordType::A, &["192.0.2.1"]))],
    )
    .await;
    assert_eq!(
        etcd.records("/skydns/org/example/mine/"),
        vec![(
            "/skydns/org/example/mine".into(),
            r#"{"host":"192.0.2.1","targetstrip":1,"ownedby":"me"}"#.into()
        )]
    );
    assert_eq!(read(&p).await, vec!["mine.example.org A 0 192.0.2.1"]);
}

#[tokio::test]
async fn a_domain_filter_limits_what_is_read() {
    require!(Etcd);
    let etcd = Etcd::start();
    etcd.put("/skydns/org/example/a/x1", r#"{"host":"192.0.2.1","targetstrip":1}"#);
    etcd.put("/skydns/net/other/b/x1", r#"{"host":"192.0.2.2","targetstrip":1}"#);
    let p = provider_with(&etcd, |c| {
        c.domain_filter = extdns_endpoint::DomainFilter::new(&["example.org"], &[])
    });
    assert_eq!(read(&p).await, vec!["a.example.org A 0 192.0.2.1"]);
}

#[tokio::test]
async fn an_unreachable_etcd_is_a_transient_error() {
    let port = match std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()) {
        Ok(a) => a.port(),
        Err(e) => panic!("{e}"),
    };
    let config = CorednsConfig::new(vec![format!("http://127.0.0.1:{port}")], PREFIX);
    let p = CorednsProvider::new(config).unwrap_or_else(|e| panic!("{e}"));
    let err = p.records().await;
    assert!(err.as_ref().is_err_and(ProviderError::is_transient), "{err:?}");
}

#[tokio::test]
async fn etcd_authentication_is_used_and_a_wrong_password_is_an_auth_error() {
    require!(Etcd);
    let etcd = Etcd::start();
    for (path, body) in [
        ("/v3/auth/role/add", r#"{"name":"root"}"#),
        ("/v3/auth/user/add", r#"{"name":"root","password":"s3cret"}"#),
        ("/v3/auth/user/grant", r#"{"user":"root","role":"root"}"#),
        ("/v3/auth/enable", "{}"),
    ] {
        assert!(etcd.post(path, body).is_some(), "{path} failed");
    }
    let p = provider_with(&etcd, |c| {
        c.username = Some("root".into());
        c.password = Some("s3cret".into());
    });
    writes_and_reads_one(&p).await;
    let anonymous = provider(&etcd);
    assert!(
        matches!(
            anonymous.records().await,
            Err(ProviderError::Failed {
                kind: extdns_provider::FailureKind::Auth,
                ..
            })
        ),
        "no credentials"
    );
    let wrong = provider_with(&etcd, |c| {
        c.username = Some("root".into());
        c.password = Some("wrong".into());
    });
    let err = wrong.records().await;
    assert!(is_auth_failure(&err, "root"), "{err:?}");
}

#[tokio::test]
async fn etcd_over_tls_with_a_client_certificate_and_a_server_name() {
    require!(Etcd, OpenSsl);
    let pki = Pki::create();
    let etcd = Etcd::start_tls(&pki);
    let tls = |c: &mut CorednsConfig, server_name: Option<&str>| {
        c.tls.ca_file = Some(pki.path("ca.crt"));
        c.tls.cert_file = Some(pki.path("client.crt"));
        c.tls.key_file = Some(pki.path("client.key"));
        c.tls.server_name = server_name.map(str::to_string);
    };
    // The certificate names etcd.test, not 127.0.0.1: with ETCD_TLS_SERVER_NAME it verifies.
    let p = provider_with(&etcd, |c| tls(c, Some("etcd.test")));
    writes_and_reads_one(&p).await;
    // Without it the name does not match: refused, and retried later as transient.
    let mismatch = provider_with(&etcd, |c| tls(c, None));
    assert!(mismatch.records().await.is_err_and(|e| e.is_transient()));
    // ETCD_TLS_INSECURE skips the check of the server, but etcd still wants the client certificate.
    let insecure = provider_with(&etcd, |c| {
        tls(c, None);
        c.tls.ca_file = None;
        c.tls.insecure = true;
    });
    assert_eq!(read(&insecure).await, vec!["web.example.org A 0 192.0.2.1"]);
    let anonymous = provider_with(&etcd, |c| c.tls.insecure = true);
    assert!(anonymous.records().await.is_err(), "no client certificate, no access");
}
