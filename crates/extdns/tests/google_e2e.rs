//! The whole controller against the strict Cloud DNS fake: `extdns --once --provider=google` over
//! manifests (manifests → sources → plan → TXT registry → Cloud DNS changes), with a service account key
//! whose JWT the fake's token endpoint verifies; every result read from the fake's state. Every address the
//! binary is given is the fake's on 127.0.0.1, the metadata server's included.

use std::path::Path;
use std::process::Output;

use extdns_test_support::cli::{self, ok, tempdir, text};
use extdns_test_support::differential::{self, CloudPair, Objects, TwoFakes};
use extdns_test_support::google_fake::{FakeGoogle, GOOGLE_HOSTS};
use extdns_test_support::lines::ZoneLines;
use extdns_test_support::manifests::{self, alias, web};
use extdns_test_support::tls_proxy::TlsProxy;

const OWNER: &str = "e2e";

fn extdns(fake: &FakeGoogle, home: &Path, manifests: &Path, extra: &[&str]) -> Output {
    let key = fake.service_account_file(home);
    let mut cmd = cli::command(env!("CARGO_BIN_EXE_extdns"), &["GOOGLE_", "GCE_", "CLOUDSDK_"]);
    cmd.env("GOOGLE_APPLICATION_CREDENTIALS", &key)
        .env("GCE_METADATA_HOST", &fake.host)
        .env("HOME", home)
        .env("EXTDNS_GOOGLE_API_URL", fake.dns_url())
        .args(["--once", "--source=service", "--provider=google", "--registry=txt"])
        .args([
            "--google-project",
            extdns_test_support::google_fake::PROJECT,
            "--txt-owner-id",
            OWNER,
            "--domain-filter=example.org",
            "--google-batch-change-interval=0s",
        ])
        .args(["--manifests", &manifests.display().to_string()])
        .args(extra);
    cli::run(&mut cmd)
}

fn services(dir: &Path, n: usize) {
    cli::write_manifests(dir, &manifests::numbered_lb_services("example.org", n));
}

#[test]
fn google_full_controller_create_update_delete_idempotent() {
    let fake = FakeGoogle::start(&[("example-org", "example.org"), ("other", "example.net")]);
    fake.seed("example-org", "legacy.example.org.", "A", 300, &["198.51.100.1"]);
    let (home, dir) = (tempdir(), tempdir());
    let docs = [web(&["192.0.2.10", "2001:db8::10"]), alias()];
    cli::write_manifests(dir.path(), &docs.join("---\n"));
    ok(&extdns(&fake, home.path(), dir.path(), &["--dry-run"]), "dry run");
    assert_eq!(
        fake.state().requests.count("changes.create"),
        0,
        "a dry run sends no change"
    );

    ok(&extdns(&fake, home.path(), dir.path(), &[]), "first sync");
    assert_eq!(
        fake.records(),
        [
            "alias.example.org. CNAME 300 lb.example.net.",
            "legacy.example.org. A 300 198.51.100.1",
            "web.example.org. A 120 192.0.2.10",
            "web.example.org. AAAA 120 2001:db8::10",
        ]
    );
    assert_eq!(fake.owned_by(OWNER), 3, "{:?}", fake.lines());
    assert!(
        fake.state().requests.count("changes.get") > 0,
        "changes.get polled until done"
    );
    assert_eq!(
        fake.state().grants,
        ["jwt", "jwt"],
        "one token a run (the dry run and this one)"
    );

    let applied = fake.state().changes_applied;
    ok(&extdns(&fake, home.path(), dir.path(), &[]), "second sync");
    assert_eq!(fake.state().changes_applied, applied, "a second run changes nothing");

    let docs = [web(&["192.0.2.20", "2001:db8::10"])];
    cli::write_manifests(dir.path(), &docs.join("---\n"));
    ok(&extdns(&fake, home.path(), dir.path(), &[]), "update sync");
    assert_eq!(
        fake.records(),
        [
            "legacy.example.org. A 300 198.51.100.1",
            "web.example.org. A 120 192.0.2.20",
            "web.example.org. AAAA 120 2001:db8::10",
        ]
    );
    assert_eq!(fake.owned_by(OWNER), 2);

    cli::write_manifests(dir.path(), "");
    ok(&extdns(&fake, home.path(), dir.path(), &[]), "delete sync");
    assert_eq!(
        fake.lines(),
        ["legacy.example.org. A 300 198.51.100.1"],
        "someone else's record stays"
    );
}

#[test]
fn google_a_change_over_quota_and_a_taken_name_do_not_stop_the_others() {
    let fake = FakeGoogle::start(&[("example-org", "example.org")]);
    // Cloud DNS takes 4 additions a change here, and the name of s3's ownership record holds someone
    // else's TXT record (external-dns #3307: the whole change fails on it).
    fake.state().change_limits.additions = 4;
    fake.seed("example-org", "a-s3.example.org.", "TXT", 300, &["\"v=spf1 -all\""]);
    let (home, dir) = (tempdir(), tempdir());
    services(dir.path(), 8);
    let out = extdns(&fake, home.path(), dir.path(), &["--google-batch-change-size=0"]);
    let log = text(&out);
    assert!(
        log.contains("s3.example.org") && log.contains("alreadyExists"),
        "the taken name is named: {log}"
    );
    let got = fake.records();
    for i in (0..8).filter(|i| *i != 3) {
        assert!(
            got.contains(&format!("s{i}.example.org. A 300 192.0.2.{}", i + 1)),
            "{got:?}"
        );
    }
    assert!(
        !got.iter().any(|l| l.starts_with("s3.")),
        "no record without its ownership record: {got:?}"
    );
    assert!(
        got.contains(&"a-s3.example.org. TXT 300 \"v=spf1 -all\"".to_string()),
        "someone else's record untouched: {got:?}"
    );
    assert_eq!(fake.owned_by(OWNER), 7, "no ownership record without its record");
    let refusals = fake.state().refusals.clone();
    assert!(refusals.iter().any(|r| r == "403 quotaExceeded"), "{refusals:?}");
}

#[test]
fn google_a_429_storm_loses_nothing() {
    let fake = FakeGoogle::start(&[("example-org", "example.org")]);
    let (home, dir) = (tempdir(), tempdir());
    services(dir.path(), 6);
    ok(&extdns(&fake, home.path(), dir.path(), &[]), "first sync");
    let before = fake.lines();
    assert_eq!(before.len(), 12);

    // Two more Services; a storm of as many 429s as a call has attempts (five): a throttle is no
    // attempt, so the sync waits it out and lands everything, deleting nothing and writing nothing twice.
    services(dir.path(), 8);
    fake.state().faults.throttle_next = 5;
    ok(&extdns(&fake, home.path(), dir.path(), &[]), "sync through the storm");
    assert_eq!(fake.state().requests.throttled(), 5, "every 429 was waited out");
    let now = fake.lines();
    assert!(before.iter().all(|l| now.contains(l)), "nothing deleted: {now:?}");
    assert_eq!(fake.records().len(), 8, "{now:?}");
    assert_eq!(fake.owned_by(OWNER), 8);
    let refused = fake
        .state()
        .requests
        .iter()
        .filter(|r| r.status.as_u16() == 409)
        .count();
    assert_eq!(refused, 0, "no change sent twice");
}

// ------------------------------------------------------------------------------------- external-dns

const NAMES: [&str; 2] = ["web.example.org", "api.example.org"];

/// external-dns v0.23.0 with its Google provider, unmodified: Google's Go libraries reach `fake` at
/// dns.googleapis.com and oauth2.googleapis.com through `proxy`, with a key file as Google hands it out.
fn run_external_dns(fake: &FakeGoogle, proxy: &TlsProxy, home: &Path, source: u16) -> Output {
    let mut cmd = differential::external_dns(Some(proxy), home, source, &["GOOGLE_", "GCE_", "CLOUDSDK_"]);
    cmd.env("GOOGLE_APPLICATION_CREDENTIALS", fake.google_service_account_file(home))
        .env("GCE_METADATA_HOST", &fake.host)
        .args(["--provider=google", "--registry=txt"])
        .args(["--google-project", extdns_test_support::google_fake::PROJECT])
        .args(["--txt-owner-id", OWNER, "--domain-filter=example.org", "--policy=sync"])
        .arg("--google-batch-change-interval=0s");
    cli::run(&mut cmd)
}

/// The fake's rrsets as both controllers must leave them.
fn compared(fake: &FakeGoogle) -> Vec<String> {
    differential::without_resource_label(fake.lines(), "\"")
}

/// external-dns v0.23.0 (its own Google client, unmodified) and extdns, each against a Cloud DNS fake of its
/// own, from the same objects: the same records after each step, and each takes over the other's zone
/// without a change. Run in a network namespace with only loopback, so no request can leave the machine
/// even if a variable were missing.
#[test]
fn google_differential_with_external_dns() {
    differential::in_loopback_namespace("google_differential_with_external_dns", against_external_dns);
}

fn against_external_dns() {
    let fakes = TwoFakes::start(
        || FakeGoogle::start(&[("example-org", "example.org")]),
        FakeGoogle::addr,
        &GOOGLE_HOSTS,
    );
    let home = tempdir();
    let objects = Objects::serve();
    let pair = CloudPair {
        fakes: &fakes,
        objects: &objects,
        zone: "example.org",
        names: NAMES,
        extdns: &|fake| extdns(fake, home.path(), objects.dir.path(), &[]),
        external_dns: &|fake, proxy| run_external_dns(fake, proxy, home.path(), objects.source),
        compared,
        writes: |fake| fake.state().changes_applied,
    };
    pair.step(Some("192.0.2.10"), "create");
    assert_eq!(fakes.ours.records().len(), 3, "{:?}", fakes.ours.lines());
    let connects = fakes.to_theirs.log().connects.clone();
    assert!(connects.iter().any(|c| c == "dns.googleapis.com:443"), "{connects:?}");
    assert!(
        connects.iter().any(|c| c == "oauth2.googleapis.com:443"),
        "{connects:?}"
    );
    assert_eq!(
        fakes.theirs.state().grants,
        ["jwt"],
        "external-dns's JWT verified by the fake"
    );
    pair.update_delete_and_take_over();
}

// ------------------------------------------------------------------------------------- apex records

/// A Service at the top zone's apex and one at a delegated child zone's apex.
fn publish_apexes(objects: &Objects) {
    objects.publish_a_records(&[
        ("top", "example.org", "192.0.2.30"),
        ("child", "sub.example.org", "192.0.2.31"),
    ]);
}

/// The fake's rrsets with the managed zone each is in (`zone name type ttl data`), SOA and NS left out,
/// the `resource` label dropped.
fn zoned(fake: &FakeGoogle) -> Vec<String> {
    differential::without_resource_label(fake.zoned_lines(), "\"")
}

/// The apex of the top zone and of a delegated child zone (both managed): extdns publishes the same zones
/// as external-dns v0.23.0 (the child's apex owned through `a-sub.example.org` in the parent zone, the top
/// apex without an ownership record), its syncs do not fail, and the second finds nothing to write.
#[test]
fn google_apex_records_are_published_as_external_dns_publishes_them() {
    differential::in_loopback_namespace(
        "google_apex_records_are_published_as_external_dns_publishes_them",
        apexes_against_external_dns,
    );
}

fn apexes_against_external_dns() {
    let zones = [("example-org", "example.org"), ("sub-example-org", "sub.example.org")];
    let (ours, theirs) = (FakeGoogle::start(&zones), FakeGoogle::start(&zones));
    let to_theirs = differential::proxy(&GOOGLE_HOSTS, theirs.addr());
    let home = tempdir();
    let objects = Objects::serve();
    publish_apexes(&objects);
    let first = extdns(&ours, home.path(), objects.dir.path(), &[]);
    ok(&first, "extdns: the first sync");
    assert!(
        text(&first).contains("--txt-prefix"),
        "the top apex cannot be owned: said, with the flag that fixes it"
    );
    let written = ours.state().changes_applied;
    ok(
        &extdns(&ours, home.path(), objects.dir.path(), &[]),
        "extdns: the second sync",
    );
    assert_eq!(ours.state().changes_applied, written, "the second sync writes nothing");
    ok(
        &run_external_dns(&theirs, &to_theirs, home.path(), objects.source),
        "external-dns",
    );
    assert_eq!(zoned(&ours), zoned(&theirs), "the same zones");
    assert!(
        zoned(&ours)
            .iter()
            .any(|l| l.starts_with("example-org a-sub.example.org. TXT")),
        "{:?}",
        zoned(&ours)
    );
}

/// TLSA, HTTPS and SVCB from a DNSEndpoint through the whole controller into Cloud DNS: rrdatas in
/// presentation format (the SVCB target made absolute), each with its `tlsa-`/`https-`/`svcb-` ownership
/// record; a second sync writes nothing (what is read back compares equal to what the DNSEndpoint asks,
/// the digest's case and the SvcParams' order aside), an update and a delete land.
#[test]
fn google_tlsa_https_and_svcb_from_a_dns_endpoint_round_trip() {
    let fake = FakeGoogle::start(&[("example-org", "example.org")]);
    let (home, dir) = (tempdir(), tempdir());
    let digest = manifests::TLSA_DIGEST;
    let publish =
        |https: &str, with_tlsa: bool| cli::write_manifests(dir.path(), &manifests::typed_records(https, with_tlsa));
    let types = manifests::TYPED_RECORD_FLAGS;
    let typed = |fake: &FakeGoogle| -> Vec<String> {
        let lines = fake.lines();
        lines.into_iter().filter(|l| !l.contains(" TXT ")).collect()
    };
    publish("1 . port=8443 alpn=\"h2,h3\"", true);
    ok(&extdns(&fake, home.path(), dir.path(), &types), "first sync");
    assert_eq!(
        typed(&fake),
        [
            format!("_443._tcp.web.example.org. TLSA 300 3 1 1 {}", digest.to_lowercase()),
            "_dns.example.org. SVCB 300 0 svc.example.net.".to_string(),
            "web.example.org. HTTPS 300 1 . alpn=h2,h3 port=8443".to_string(),
        ]
    );
    let owned: Vec<String> = fake
        .lines()
        .into_iter()
        .filter(|l| l.contains(" TXT ") && l.contains("external-dns/owner=e2e"))
        .filter_map(|l| l.split(' ').next().map(str::to_string))
        .collect();
    assert_eq!(
        owned,
        [
            "https-web.example.org.",
            "svcb-_dns.example.org.",
            "tlsa-_443._tcp.web.example.org."
        ]
    );
    let changes = fake.state().requests.count("changes.create");
    ok(&extdns(&fake, home.path(), dir.path(), &types), "second sync");
    assert_eq!(
        fake.state().requests.count("changes.create"),
        changes,
        "a second sync changes nothing"
    );
    publish("1 . alpn=h3", false);
    ok(&extdns(&fake, home.path(), dir.path(), &types), "update and delete");
    assert_eq!(
        typed(&fake),
        [
            "_dns.example.org. SVCB 300 0 svc.example.net.",
            "web.example.org. HTTPS 300 1 . alpn=h3",
        ]
    );
}
