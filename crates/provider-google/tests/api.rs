//! The provider against the strict Cloud DNS fake (crates/test-support): listing, writes, refusals split
//! down to the record at fault, quota, 429s, and every credential source of Application Default
//! Credentials. Nothing leaves 127.0.0.1: every URL, the metadata server's included, is the fake's.

use std::collections::BTreeMap;
use std::time::Duration;

use extdns_endpoint::{Change, Endpoint, RecordType, Ttl, label};
use extdns_provider::batch::Unit;
use extdns_provider::{Backoff, Provider, ProviderError, ReadState, apply_changes};
use extdns_provider_google::{CredentialSource, GoogleConfig, GoogleProvider, Visibility};
use extdns_test_support::apex;
use extdns_test_support::google_fake::{self, FakeGoogle, FakeZone};
use extdns_test_support::lines::refused_lines;

fn fast(mut config: GoogleConfig, fake: &FakeGoogle) -> GoogleConfig {
    config.base_url = fake.dns_url();
    config.batch.interval = Duration::ZERO;
    config.change_poll = Duration::from_millis(5);
    config.api.requests = None;
    config.api.calls.backoff = Backoff {
        initial: Duration::from_millis(5),
        max: Duration::from_millis(20),
        multiplier: 2.0,
        jitter: 0.5,
        max_attempts: 5,
        throttled_for: Duration::from_millis(500),
    };
    config
}

/// A provider for project `extdns-test` with credentials from the environment `env` gives (plus the
/// metadata server pointed at the fake unless `env` names one).
fn provider_with(fake: &FakeGoogle, env: &[(&str, String)], edit: impl FnOnce(&mut GoogleConfig)) -> GoogleProvider {
    let mut vars: BTreeMap<String, String> = env.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    vars.entry("GCE_METADATA_HOST".into())
        .or_insert_with(|| fake.host.clone());
    let credentials = CredentialSource::adc(&|k| vars.get(k).cloned());
    assert!(
        credentials.metadata_host().starts_with("127.0.0.1:"),
        "the metadata server must be on loopback"
    );
    let mut config = fast(GoogleConfig::new(credentials), fake);
    config.project = Some(google_fake::PROJECT.to_string());
    edit(&mut config);
    GoogleProvider::new(config).unwrap_or_else(|e| panic!("{e}"))
}

fn provider(fake: &FakeGoogle) -> GoogleProvider {
    provider_edited(fake, |_| {})
}

/// [`provider`] with a token the fake issued, its configuration edited.
fn provider_edited(fake: &FakeGoogle, edit: impl FnOnce(&mut GoogleConfig)) -> GoogleProvider {
    let mut config = fast(GoogleConfig::new(CredentialSource::Token(fake.issue_token())), fake);
    config.project = Some(google_fake::PROJECT.to_string());
    edit(&mut config);
    GoogleProvider::new(config).unwrap_or_else(|e| panic!("{e}"))
}

/// The A records `h<i>.example.org` for `hosts` and their ownership records, to be applied as units.
fn owned_records(hosts: std::ops::Range<usize>) -> (Vec<Change>, Vec<Change>) {
    let records = hosts
        .clone()
        .map(|i| Change::Create(a(&format!("h{i}.example.org"), "192.0.2.1")))
        .collect();
    let owners = hosts
        .map(|i| Change::Create(txt(&format!("h{i}.example.org"))))
        .collect();
    (records, owners)
}

/// The names of the zones the provider reads (none when it fails).
async fn zone_names(p: &GoogleProvider) -> Vec<String> {
    p.zones()
        .await
        .unwrap_or_default()
        .into_iter()
        .map(|z| z.name)
        .collect()
}

/// Each record with its ownership record, one unit.
fn units_of<'a>(records: &'a [Change], owners: &'a [Change]) -> Vec<Unit<'a>> {
    records
        .iter()
        .zip(owners)
        .map(|(r, o)| Unit::with_ownership(r, o))
        .collect()
}

fn a(name: &str, ip: &str) -> Endpoint {
    Endpoint::new(name, RecordType::A, [ip])
}

fn txt(name: &str) -> Endpoint {
    Endpoint::new(
        &format!("a-{name}"),
        RecordType::Txt,
        ["\"heritage=external-dns,external-dns/owner=default\""],
    )
    .with_label(label::OWNED_RECORD, name)
}

fn lines(records: &[Endpoint]) -> Vec<String> {
    let mut v: Vec<String> = records
        .iter()
        .filter(|e| e.record_type != RecordType::Ns)
        .map(|e| {
            let targets: Vec<&str> = e.targets.iter().map(|t| t.as_str()).collect();
            format!(
                "{} {} {} {}",
                e.dns_name,
                e.record_type,
                e.record_ttl.0,
                targets.join(" ")
            )
        })
        .collect();
    v.sort();
    v
}

#[tokio::test]
async fn zones_and_records_are_listed_across_pages_with_external_dns_s_filters() {
    let zone = |name: &str, dns: &str, id: &str, visibility: &str, peering: bool| FakeZone {
        name: name.into(),
        dns_name: format!("{dns}."),
        id: id.into(),
        visibility: visibility.into(),
        peering,
    };
    let fake = FakeGoogle::with_zones(vec![
        zone("example-org", "example.org", "1001", "public", false),
        zone("internal", "internal.example.org", "1002", "private", false),
        zone("peered", "peer.example.org", "1003", "private", true),
        zone("other", "other.net", "2001", "public", false),
    ]);
    fake.state().page_limit = 2;
    for i in 0..7 {
        fake.seed("example-org", &format!("r{i}.example.org."), "A", 60, &["192.0.2.1"]);
    }
    fake.seed("example-org", "mail.example.org.", "MX", 300, &["10 mx.example.org."]);
    fake.seed("example-org", "t.example.org.", "TXT", 300, &["\"v=spf1 -all\""]);
    fake.seed(
        "example-org",
        "c.example.org.",
        "CAA",
        300,
        &["0 issue \"letsencrypt.org\""],
    );
    fake.seed("internal", "db.internal.example.org.", "A", 300, &["10.0.0.1"]);
    fake.seed("peered", "x.peer.example.org.", "A", 300, &["10.0.0.2"]);
    let p = provider(&fake);
    let names = zone_names(&p).await;
    assert_eq!(names, ["example-org", "internal", "other"], "peering zone dropped");

    let read = p.records().await.unwrap_or_else(|e| panic!("{e}"));
    let got = lines(&read.endpoints);
    assert_eq!(
        got.len(),
        10,
        "7 A, MX, TXT, the private A; no SOA, no CAA, nothing peered: {got:?}"
    );
    for (line, why) in [
        ("mail.example.org MX 300 10 mx.example.org", "an MX"),
        ("t.example.org TXT 300 \"v=spf1 -all\"", "a TXT"),
        ("r6.example.org A 60 192.0.2.1", "the last page read"),
    ] {
        assert!(got.iter().any(|l| l == line), "{why}: {line} not in {got:?}");
    }

    let only = |edit: fn(&mut GoogleConfig)| provider_with(&fake, &[], edit);
    let private = only(|c| c.zone_visibility = Some(Visibility::Private));
    let names = zone_names(&private).await;
    assert_eq!(names, ["internal"]);
    let by_id = only(|c| c.zones.zone_ids = vec!["01".into(), "ther".into()]);
    let names = zone_names(&by_id).await;
    assert_eq!(
        names,
        ["example-org", "other"],
        "a suffix of id 1001, or of the name other"
    );
    let by_domain =
        only(|c| c.zones.domain_filter = extdns_endpoint::DomainFilter::new(&["other.net".to_string()], &[]));
    let names = zone_names(&by_domain).await;
    assert_eq!(names, ["other"]);
}

#[tokio::test]
async fn writes_land_with_their_ownership_record_in_one_change_polled_until_done() {
    let fake = FakeGoogle::start(&[("example-org", "example.org")]);
    fake.state().pending_polls = 3;
    let p = provider(&fake);
    let (rec, own) = (
        Change::Create(a("web.example.org", "192.0.2.10")),
        Change::Create(txt("web.example.org")),
    );
    let units = [Unit::with_ownership(&rec, &own)];
    p.apply(&ReadState::default(), &units)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    {
        let s = fake.state();
        assert_eq!(
            (s.requests.count("changes.create"), s.changes_applied),
            (1, 1),
            "one change for the record and its TXT"
        );
        assert_eq!(s.requests.count("changes.get"), 3, "polled until done");
    }
    assert_eq!(
        fake.lines(),
        [
            "a-web.example.org. TXT 300 \"heritage=external-dns,external-dns/owner=default\"",
            "web.example.org. A 300 192.0.2.10",
        ]
    );

    // An update deletes exactly the rrset read (TTL 60, set by someone else) and adds the new one.
    fake.seed("example-org", "api.example.org.", "A", 60, &["192.0.2.1", "192.0.2.2"]);
    let read = p.records().await.unwrap_or_else(|e| panic!("{e}"));
    let old = read
        .endpoints
        .iter()
        .find(|e| e.dns_name == "api.example.org")
        .cloned()
        .unwrap_or_else(|| panic!("api not read"));
    let mut new = a("api.example.org", "192.0.2.3");
    new.record_ttl = Ttl(120);
    let changes = [Change::Update {
        old: Box::new(old),
        new: Box::new(new),
    }];
    let units: Vec<Unit<'_>> = changes.iter().map(Unit::new).collect();
    p.apply(&read.state, &units).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(
        fake.lines().contains(&"api.example.org. A 120 192.0.2.3".to_string()),
        "{:?}",
        fake.lines()
    );

    apply_changes(
        &p,
        &[
            Change::Delete(a("web.example.org", "192.0.2.10")),
            Change::Delete(txt("web.example.org")),
        ],
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(fake.lines(), ["api.example.org. A 120 192.0.2.3"]);
}

#[tokio::test]
async fn a_refused_change_is_split_until_each_refused_record_is_named_and_the_others_land() {
    let fake = FakeGoogle::start(&[("example-org", "example.org")]);
    fake.seed("example-org", "taken.example.org.", "A", 300, &["198.51.100.1"]);
    fake.seed("example-org", "stale.example.org.", "A", 300, &["198.51.100.2"]);
    let p = provider(&fake);
    let read = p.records().await.unwrap_or_else(|e| panic!("{e}"));
    // Changed behind the read's back: the deletion of the rrset as read no longer matches (412).
    fake.seed("example-org", "stale.example.org.", "A", 60, &["198.51.100.2"]);
    let mut changes: Vec<Change> = (0..6)
        .map(|i| Change::Create(a(&format!("ok{i}.example.org"), "192.0.2.1")))
        .collect();
    changes.insert(2, Change::Create(a("taken.example.org", "192.0.2.9")));
    changes.push(Change::Delete(a("gone.example.org", "192.0.2.8")));
    changes.push(Change::Delete(a("stale.example.org", "198.51.100.2")));
    let units: Vec<Unit<'_>> = changes.iter().map(Unit::new).collect();
    let err = p.apply(&read.state, &units).await;
    let Err(ProviderError::Partial { failures }) = err else {
        panic!("expected the refused records named, got {err:?}")
    };
    let mut named = refused_lines(&failures);
    named.sort();
    assert_eq!(
        named,
        ["gone.example.org A", "stale.example.org A", "taken.example.org A"]
    );
    let reason = |r: &str| {
        failures
            .iter()
            .find(|f| f.key.dns_name.starts_with(r))
            .map(|f| f.reason.message.clone())
            .unwrap_or_default()
    };
    assert!(reason("taken").contains("alreadyExists"), "{}", reason("taken"));
    assert!(reason("gone").contains("notFound"), "{}", reason("gone"));
    assert!(reason("stale").contains("conditionNotMet"), "{}", reason("stale"));
    let got = fake.lines();
    for i in 0..6 {
        assert!(got.contains(&format!("ok{i}.example.org. A 300 192.0.2.1")), "{got:?}");
    }
    for (line, why) in [
        (
            "taken.example.org. A 300 198.51.100.1",
            "someone else's record untouched",
        ),
        (
            "stale.example.org. A 60 198.51.100.2",
            "nothing deleted that was not read",
        ),
    ] {
        assert!(got.iter().any(|l| l == line), "{why}: {line} not in {got:?}");
    }
}

#[tokio::test]
async fn a_change_over_cloud_dns_s_quota_is_split_until_it_fits() {
    let fake = FakeGoogle::start(&[("example-org", "example.org")]);
    fake.state().change_limits.additions = 5;
    let p = provider(&fake);
    let (records, owners) = owned_records(0..8);
    let units = units_of(&records, &owners);
    // The default batch size (1,000) would send all 16 additions at once; Cloud DNS here takes 5.
    p.apply(&ReadState::default(), &units)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(fake.lines().len(), 16, "{:?}", fake.lines());
    let s = fake.state();
    assert!(s.refusals.iter().any(|r| r == "403 quotaExceeded"), "{:?}", s.refusals);
    assert!(s.refusals.iter().all(|r| r == "403 quotaExceeded"), "{:?}", s.refusals);
}

#[tokio::test]
async fn the_batch_size_cuts_changes_and_keeps_units_whole() {
    let fake = FakeGoogle::start(&[("example-org", "example.org")]);
    let p = provider_edited(&fake, |c| c.batch.size = 3);
    let (records, owners) = owned_records(0..4);
    let units = units_of(&records, &owners);
    p.apply(&ReadState::default(), &units)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let s = fake.state();
    assert_eq!(s.changes_applied, 4, "two changes a batch of 3 cannot hold two units");
    assert!(s.refusals.is_empty(), "{:?}", s.refusals);
}

/// `--google-batch-change-interval` counts from the previous change's submission: the poll for `done` falls
/// inside it, and a change that only adds does not wait for the previous one's `done` at all (the write
/// still returns only once every change is done).
#[tokio::test]
async fn the_batch_interval_spaces_submissions_and_holds_the_wait_for_done() {
    const INTERVAL: Duration = Duration::from_millis(600);
    const POLL: Duration = Duration::from_millis(300);
    // Loopback transit may make a gap look this much shorter at the fake than at the client.
    const TRANSIT: Duration = Duration::from_millis(25);
    let fake = FakeGoogle::start(&[("example-org", "example.org")]);
    let p = provider_edited(&fake, |c| {
        c.batch.size = 2;
        c.batch.interval = INTERVAL;
        c.change_poll = POLL;
    });
    let write = |from: usize, to: usize, pending_polls: u32| {
        fake.state().pending_polls = pending_polls;
        let since = std::time::Instant::now();
        let (records, owners) = owned_records(from..to);
        let p = &p;
        let fake = &fake;
        async move {
            let units = units_of(&records, &owners);
            p.apply(&ReadState::default(), &units)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            let times: Vec<std::time::Instant> = fake.state().requests.times("changes.create");
            let times: Vec<std::time::Instant> = times.into_iter().filter(|t| *t >= since).collect();
            assert_eq!(times.len(), to - from, "one change per unit");
            times.windows(2).map(|w| w[1] - w[0]).collect::<Vec<Duration>>()
        }
    };

    // Changes that only add: the next follows the interval after the previous submission, not after that
    // change's `done` (which would be 900 ms); they are waited for together at the end.
    let gaps = write(0, 3, 1).await;
    for gap in &gaps {
        assert!(
            *gap + TRANSIT >= INTERVAL && *gap < INTERVAL + POLL / 2,
            "changes {INTERVAL:?} apart: {gaps:?}"
        );
    }

    // Done at the third poll (900 ms), after the interval: the next change, which only adds, is sent the
    // interval after the first, not held until the first is done.
    let gaps = write(3, 5, 3).await;
    assert!(
        gaps[0] + TRANSIT >= INTERVAL && gaps[0] < POLL * 3,
        "the next change before a slow one is done: {gaps:?}"
    );
    let s = fake.state();
    assert_eq!((s.changes_applied, s.requests.count("changes.get")), (5, 3 + 2 * 3));
    assert!(s.refusals.is_empty(), "{:?}", s.refusals);
}

#[tokio::test]
async fn rate_limits_are_retried_with_backoff() {
    let fake = FakeGoogle::start(&[("example-org", "example.org")]);
    fake.seed("example-org", "web.example.org.", "A", 300, &["192.0.2.1"]);
    let p = provider(&fake);
    fake.state().faults.throttle_next = 3;
    let read = p.records().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(lines(&read.endpoints), ["web.example.org A 300 192.0.2.1"]);
    assert_eq!(fake.state().requests.throttled(), 3);
    // More 429s than the five attempts: no attempts, so waited out too.
    fake.state().faults.throttle_next = 8;
    let read = p.records().await;
    assert!(read.is_ok(), "{read:?}");
    assert_eq!(fake.state().requests.throttled(), 11);
    // Throttled for longer than the 500 ms the call waits out throttles: a transient error.
    fake.state().faults.throttle_next = 100_000;
    let err = p.records().await;
    assert!(
        matches!(&err, Err(e) if e.is_transient()),
        "throttled past throttled_for: transient, {err:?}"
    );
}

#[tokio::test]
async fn a_wrong_project_and_a_bad_token_are_named() {
    let fake = FakeGoogle::start(&[("example-org", "example.org")]);
    let mut config = fast(GoogleConfig::new(CredentialSource::Token("ya29.wrong".into())), &fake);
    config.project = Some(google_fake::PROJECT.into());
    let p = GoogleProvider::new(config).unwrap_or_else(|e| panic!("{e}"));
    let err = p.records().await.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        err.starts_with("authentication failed") && err.contains("HTTP 401"),
        "{err}"
    );
    let bad = GoogleConfig::new(CredentialSource::Token("t".into()));
    let mut bad = fast(bad, &fake);
    bad.project = Some("no such/project".into());
    assert!(
        GoogleProvider::new(bad).is_err(),
        "a project id with a slash is refused at startup"
    );
}

// ------------------------------------------------------------------------------------------- credentials

/// A provider whose credentials come from the file `GOOGLE_APPLICATION_CREDENTIALS` names.
fn from_file(fake: &FakeGoogle, file: &std::path::Path) -> GoogleProvider {
    let env = [("GOOGLE_APPLICATION_CREDENTIALS", file.display().to_string())];
    provider_with(fake, &env, |_| {})
}

#[tokio::test]
async fn a_service_account_key_signs_a_jwt_the_token_endpoint_accepts() {
    let fake = FakeGoogle::start(&[("example-org", "example.org")]);
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let key = fake.service_account_file(dir.path());
    let p = from_file(&fake, &key);
    p.records().await.unwrap_or_else(|e| panic!("{e}"));
    p.records().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(fake.state().grants, ["jwt"], "one grant, the token kept");

    // A key id the token endpoint does not know: refused, and the error names the file.
    let text = std::fs::read_to_string(&key)
        .unwrap_or_default()
        .replace(google_fake::KEY_ID, "ffff");
    std::fs::write(&key, text).unwrap_or_else(|e| panic!("{e}"));
    let p = from_file(&fake, &key);
    let err = p.records().await.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        err.contains("GOOGLE_APPLICATION_CREDENTIALS") && err.contains("invalid_grant") && err.contains("kid"),
        "{err}"
    );
}

#[tokio::test]
async fn gcloud_s_well_known_file_is_read_from_home() {
    let fake = FakeGoogle::start(&[("example-org", "example.org")]);
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let gcloud = home.path().join(".config/gcloud");
    std::fs::create_dir_all(&gcloud).unwrap_or_else(|e| panic!("{e}"));
    fake.authorized_user_file(&gcloud, "application_default_credentials.json");
    let p = provider_with(&fake, &[("HOME", home.path().display().to_string())], |_| {});
    p.records().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(fake.state().grants, ["refresh"]);
}

#[tokio::test]
async fn workload_identity_federation_exchanges_at_sts_then_impersonates() {
    let fake = FakeGoogle::start(&[("example-org", "example.org")]);
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let file = fake.external_account_file(dir.path(), true);
    let p = from_file(&fake, &file);
    p.records().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(fake.state().grants, ["sts", "impersonation"]);

    let file = fake.external_account_file(dir.path(), false);
    let p = from_file(&fake, &file);
    p.records().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        fake.state().grants,
        ["sts", "impersonation", "sts"],
        "the STS token itself without impersonation"
    );
}

#[tokio::test]
async fn the_metadata_server_gives_the_token_and_the_project() {
    let fake = FakeGoogle::start(&[("example-org", "example.org")]);
    let p = provider_with(&fake, &[("HOME", "/nonexistent".into())], |c| c.project = None);
    assert_eq!(p.project().await.ok(), Some(google_fake::PROJECT));
    p.records().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(fake.state().grants, ["metadata"]);
    // The fake holds the metadata server's rule: no Metadata-Flavor header, no answer.
    let plain = reqwest::get(format!("{}/computeMetadata/v1/project/project-id", fake.url)).await;
    assert_eq!(plain.map(|r| r.status().as_u16()).ok(), Some(403));
}

#[tokio::test]
async fn tokens_are_refreshed_before_they_expire() {
    let fake = FakeGoogle::start(&[("example-org", "example.org")]);
    fake.state().token_lifetime = 2;
    let p = provider_with(&fake, &[("HOME", "/nonexistent".into())], |_| {});
    p.records().await.unwrap_or_else(|e| panic!("{e}"));
    p.records().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(fake.state().grants.len(), 1, "kept while fresh");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    p.records().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        fake.state().grants,
        ["metadata", "metadata"],
        "a new one at half of a short token's life"
    );
}

#[tokio::test]
async fn when_nothing_resolves_the_error_names_every_source_tried() {
    let fake = FakeGoogle::start(&[("example-org", "example.org")]);
    // A loopback port nothing listens on stands in for the metadata server's address: asserted, so no
    // request can go to 169.254.169.254. Port 1 rather than a free port released: no test is handed a
    // privileged port, so none can bind it meanwhile and change the answer.
    let host = "127.0.0.1:1".to_string();
    let p = provider_with(
        &fake,
        &[("HOME", "/nonexistent".into()), ("GCE_METADATA_HOST", host.clone())],
        |_| {},
    );
    let err = p.records().await.err().map(|e| e.to_string()).unwrap_or_default();
    for source in [
        "no Google credentials",
        "GOOGLE_APPLICATION_CREDENTIALS: not set",
        "gcloud's application default credentials: no file /nonexistent/.config/gcloud/application_default_credentials.json",
        &format!("the metadata server at {host}"),
    ] {
        assert!(err.contains(source), "{source:?} missing from: {err}");
    }
    // The metadata server was named (GCE_METADATA_HOST) and did not answer: asking again later may help, so the
    // call is transient (retried with backoff), not an authentication failure.
    assert!(err.starts_with("transient provider error"), "{err}");
}

#[tokio::test]
async fn changes_are_cut_under_cloud_dns_s_record_data_limit() {
    let fake = FakeGoogle::start(&[("example-org", "example.org")]);
    let p = provider(&fake);
    let big = format!("\"{}\"", "x".repeat(40_000));
    let changes: Vec<Change> = (0..3)
        .map(|i| {
            Change::Create(Endpoint::new(
                &format!("t{i}.example.org"),
                RecordType::Txt,
                [big.as_str()],
            ))
        })
        .collect();
    apply_changes(&p, &changes).await.unwrap_or_else(|e| panic!("{e}"));
    let s = fake.state();
    assert_eq!(
        s.changes_applied, 2,
        "80,000 bytes, then 40,000: each change under 100,000"
    );
    assert!(s.refusals.is_empty(), "never refused for quota: {:?}", s.refusals);
}

/// The zone (resource name) each rrset of the fake is in, as `zone name type`, SOA and NS left out.
fn placed(fake: &FakeGoogle) -> Vec<String> {
    let s = fake.state();
    let sets = s.rrsets.keys().filter(|(_, _, t)| t != "SOA" && t != "NS");
    sets.map(|(z, n, t)| format!("{z} {n} {t}")).collect()
}

#[tokio::test]
async fn apex_records_are_published_as_external_dns_publishes_them_and_no_sync_fails() {
    let fake = FakeGoogle::start(&[("example-org", "example.org"), ("sub-example-org", "sub.example.org")]);
    let published = apex::publish(std::sync::Arc::new(provider(&fake)), "example.org", "sub.example.org").await;
    assert_eq!(
        placed(&fake),
        [
            "example-org a-sub.example.org. TXT",
            "example-org example.org. A",
            "sub-example-org sub.example.org. A",
        ],
        "the child zone's apex owned through the parent zone, the top apex without an ownership record"
    );
    published.assert_as_external_dns();
}

#[tokio::test]
async fn an_ownership_value_longer_than_255_octets_is_written_in_strings_cloud_dns_takes() {
    let fake = FakeGoogle::start(&[("example-org", "example.org")]);
    let p = provider(&fake);
    let value = format!("\"heritage=external-dns,external-dns/owner={}\"", "o".repeat(280));
    let long = Endpoint::new("a-web.example.org", RecordType::Txt, [value.as_str()]);
    apply_changes(&p, &[Change::Create(long)])
        .await
        .unwrap_or_else(|e| panic!("Cloud DNS refuses a string over 255 octets, not several: {e}"));
    let stored = fake.lines();
    assert!(stored[0].contains("\" \""), "stored as several strings: {stored:?}");
    let read = p.records().await.unwrap_or_else(|e| panic!("{e}"));
    let txt = read.endpoints.iter().find(|e| e.record_type == RecordType::Txt);
    assert_eq!(
        txt.map(|t| t.targets[0].as_str()),
        Some(value.as_str()),
        "read back as one value"
    );
}

/// TLSA, HTTPS and SVCB are rrdatas in presentation format, the SVCB target absolute as the fake holds
/// Cloud DNS to: written, read back equal (another spelling of the same data included), updated and deleted.
#[tokio::test]
async fn tlsa_https_and_svcb_are_written_read_back_updated_and_deleted() {
    let fake = FakeGoogle::start(&[("example-org", "example.org")]);
    let p = provider(&fake);
    let digest = "0a".repeat(32);
    let tlsa_data = format!("3 1 1 {digest}");
    let tlsa = Endpoint::new("_443._tcp.web.example.org", RecordType::Tlsa, [tlsa_data.as_str()]);
    let https = Endpoint::new("web.example.org", RecordType::Https, ["1 . alpn=h2,h3 port=8443"]);
    let svcb = Endpoint::new("_dns.example.org", RecordType::Svcb, ["0 svc.example.net."]);
    let created = [tlsa.clone(), https.clone(), svcb.clone()].map(|e| Change::Create(e.with_ttl(Ttl(300))));
    apply_changes(&p, &created).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        fake.lines(),
        [
            format!("_443._tcp.web.example.org. TLSA 300 {tlsa_data}"),
            "_dns.example.org. SVCB 300 0 svc.example.net.".to_string(),
            "web.example.org. HTTPS 300 1 . alpn=h2,h3 port=8443".to_string(),
        ]
    );
    // Someone else's record, spelled another way: read back in the form a source gives.
    fake.seed(
        "example-org",
        "other.example.org.",
        "HTTPS",
        300,
        &["2 Pool.Example.NET. port=\"443\" alpn=\"h2\""],
    );
    let read = p.records().await.unwrap_or_else(|e| panic!("{e}")).endpoints;
    assert_eq!(
        lines(&read),
        [
            format!("_443._tcp.web.example.org TLSA 300 {tlsa_data}"),
            "_dns.example.org SVCB 300 0 svc.example.net.".to_string(),
            "other.example.org HTTPS 300 2 pool.example.net. alpn=h2 port=443".to_string(),
            "web.example.org HTTPS 300 1 . alpn=h2,h3 port=8443".to_string(),
        ]
    );
    let find = |name: &str| read.iter().find(|e| e.dns_name == name).cloned();
    let (Some(old), Some(tlsa_read), Some(svcb_read)) = (
        find("web.example.org"),
        find("_443._tcp.web.example.org"),
        find("_dns.example.org"),
    ) else {
        panic!("{read:?}")
    };
    let new = Endpoint::new("web.example.org", RecordType::Https, ["1 . alpn=h3"]).with_ttl(Ttl(300));
    let changes = [
        Change::update(old, new),
        Change::Delete(tlsa_read),
        Change::Delete(svcb_read),
    ];
    apply_changes(&p, &changes).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        fake.lines(),
        [
            "other.example.org. HTTPS 300 2 Pool.Example.NET. port=\"443\" alpn=\"h2\"",
            "web.example.org. HTTPS 300 1 . alpn=h3",
        ]
    );
}
