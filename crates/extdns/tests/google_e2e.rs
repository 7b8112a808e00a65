//! The whole controller against the strict Cloud DNS fake: `extdns --once --provider=google` over
//! manifests (manifests → sources → plan → TXT registry → Cloud DNS changes), with a service account key
//! whose JWT the fake's token endpoint verifies; every result read from the fake's state. Every address the
//! binary is given is the fake's on 127.0.0.1, the metadata server's included.

use std::path::Path;
use std::process::Output;
use std::sync::{Arc, Mutex};

use extdns_test_support::cli::{self, ok, tempdir, text};
use extdns_test_support::connector;
use extdns_test_support::google_fake::{FakeGoogle, GOOGLE_HOSTS};
use extdns_test_support::manifests::{self, lb_service};
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

/// The records that are not ownership TXT records.
fn records(fake: &FakeGoogle) -> Vec<String> {
    fake.lines().into_iter().filter(|l| !l.contains("heritage=")).collect()
}

fn owned(fake: &FakeGoogle) -> usize {
    fake.lines()
        .iter()
        .filter(|l| l.contains(&format!("external-dns/owner={OWNER}")))
        .count()
}

#[test]
fn google_full_controller_create_update_delete_idempotent() {
    let fake = FakeGoogle::start(&[("example-org", "example.org"), ("other", "example.net")]);
    fake.seed("example-org", "legacy.example.org.", "A", 300, &["198.51.100.1"]);
    let (home, dir) = (tempdir(), tempdir());
    let docs = [
        lb_service(
            "web",
            "web.example.org",
            &["192.0.2.10", "2001:db8::10"],
            &[("external-dns.kubernetes.io/ttl", "120")],
        ),
        lb_service("alias", "alias.example.org", &["lb.example.net"], &[]),
    ];
    cli::write_manifests(dir.path(), &docs.join("---\n"));
    ok(&extdns(&fake, home.path(), dir.path(), &["--dry-run"]), "dry run");
    assert_eq!(
        fake.state().requests.count("changes.create"),
        0,
        "a dry run sends no change"
    );

    ok(&extdns(&fake, home.path(), dir.path(), &[]), "first sync");
    assert_eq!(
        records(&fake),
        [
            "alias.example.org. CNAME 300 lb.example.net.",
            "legacy.example.org. A 300 198.51.100.1",
            "web.example.org. A 120 192.0.2.10",
            "web.example.org. AAAA 120 2001:db8::10",
        ]
    );
    assert_eq!(owned(&fake), 3, "{:?}", fake.lines());
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

    let docs = [lb_service(
        "web",
        "web.example.org",
        &["192.0.2.20", "2001:db8::10"],
        &[("external-dns.kubernetes.io/ttl", "120")],
    )];
    cli::write_manifests(dir.path(), &docs.join("---\n"));
    ok(&extdns(&fake, home.path(), dir.path(), &[]), "update sync");
    assert_eq!(
        records(&fake),
        [
            "legacy.example.org. A 300 198.51.100.1",
            "web.example.org. A 120 192.0.2.20",
            "web.example.org. AAAA 120 2001:db8::10",
        ]
    );
    assert_eq!(owned(&fake), 2);

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
    fake.state().max_additions = 4;
    fake.seed("example-org", "a-s3.example.org.", "TXT", 300, &["\"v=spf1 -all\""]);
    let (home, dir) = (tempdir(), tempdir());
    services(dir.path(), 8);
    let out = extdns(&fake, home.path(), dir.path(), &["--google-batch-change-size=0"]);
    let log = text(&out);
    assert!(
        log.contains("s3.example.org") && log.contains("alreadyExists"),
        "the taken name is named: {log}"
    );
    let got = records(&fake);
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
    assert_eq!(owned(&fake), 7, "no ownership record without its record");
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

    // Two more Services; a storm of 429s longer than one call's retries: the sync fails, nothing is
    // deleted, and the next sync lands everything.
    services(dir.path(), 8);
    fake.state().faults.throttle_next = 12;
    let out = extdns(&fake, home.path(), dir.path(), &[]);
    assert_ne!(
        out.status.code(),
        Some(0),
        "the sync reports the failure\n{}",
        text(&out)
    );
    let storm = fake.state().requests.throttled();
    assert!(storm >= 5, "every attempt a call may make was answered 429 ({storm})");
    let now = fake.lines();
    assert!(before.iter().all(|l| now.contains(l)), "nothing deleted: {now:?}");

    // A storm within the retries is waited out.
    fake.state().faults.throttle_next = 3;
    ok(&extdns(&fake, home.path(), dir.path(), &[]), "sync after the storm");
    assert_eq!(records(&fake).len(), 8, "{:?}", fake.lines());
    assert_eq!(owned(&fake), 8);
    assert_eq!(fake.state().requests.throttled(), storm + 3);
}

// ------------------------------------------------------------------------------------- external-dns

/// Set inside the network namespace the differential re-runs itself in.
const INSIDE: &str = "EXTDNS_TEST_GOOGLE_NETNS";
/// What the run inside prints last, so the outside knows the scenario ran (and was not filtered out).
const DONE: &str = "google differential: done inside a loopback-only network namespace";

fn web_and_api(web: &str) -> String {
    [
        lb_service(
            "web",
            "web.example.org",
            &[web, "2001:db8::10"],
            &[("external-dns.kubernetes.io/ttl", "120")],
        ),
        lb_service("api", "api.example.org", &["192.0.2.20"], &[]),
    ]
    .join("---\n")
}

/// What [`web_and_api`] publishes, as external-dns's connector source hands it over.
fn web_and_api_endpoints(web: &str) -> Vec<connector::GobEndpoint> {
    let e = |dns_name, record_type, target: &str, ttl| connector::GobEndpoint {
        dns_name,
        targets: vec![target.to_string()],
        record_type,
        ttl,
    };
    vec![
        e("web.example.org", "A", web, 120),
        e("web.example.org", "AAAA", "2001:db8::10", 120),
        e("api.example.org", "A", "192.0.2.20", 0),
    ]
}

/// external-dns v0.23.0 with its Google provider, unmodified: Google's Go libraries reach `fake` at
/// dns.googleapis.com and oauth2.googleapis.com through `proxy`, with a key file as Google hands it out.
fn run_external_dns(fake: &FakeGoogle, proxy: &TlsProxy, home: &Path, source: u16) -> Output {
    let program = extdns_test_support::env_program("EXTDNS_TEST_EXTERNAL_DNS")
        .unwrap_or_else(|e| panic!("{e}: run `cargo xtask test`"));
    let mut cmd = cli::command(
        program,
        &["GOOGLE_", "GCE_", "CLOUDSDK_", "HTTP", "NO_PROXY", "SSL_CERT"],
    );
    cmd.env("GOOGLE_APPLICATION_CREDENTIALS", fake.google_service_account_file(home))
        .env("HTTPS_PROXY", &proxy.url)
        .env("HTTP_PROXY", &proxy.url)
        .env("SSL_CERT_FILE", &proxy.ca_file)
        .env("GCE_METADATA_HOST", &fake.host)
        .env("HOME", home)
        .args(["--once", "--source=connector", "--provider=google", "--registry=txt"])
        .args(["--google-project", extdns_test_support::google_fake::PROJECT])
        .args(["--txt-owner-id", OWNER, "--domain-filter=example.org", "--policy=sync"])
        .arg("--google-batch-change-interval=0s")
        .arg(format!("--connector-source-server=127.0.0.1:{source}"))
        .arg(format!(
            "--metrics-address=127.0.0.1:{}",
            extdns_test_support::free_port()
        ));
    cli::run(&mut cmd)
}

/// The fake's rrsets with the ownership records' `resource` label dropped: external-dns's connector source
/// names no object, extdns's Services do; everything else must be the same.
fn compared(fake: &FakeGoogle) -> Vec<String> {
    fake.lines()
        .into_iter()
        .map(|l| match l.find(",external-dns/resource=") {
            Some(at) => {
                let end = l[at..].find('"').map_or(l.len(), |e| at + e);
                format!("{}{}", &l[..at], &l[end..])
            }
            None => l,
        })
        .collect()
}

/// external-dns v0.23.0 (its own Google client, unmodified) and extdns, each against a Cloud DNS fake of its
/// own, from the same objects: the same records after each step, and each takes over the other's zone
/// without a change. Run in a network namespace with only loopback, so no request can leave the machine
/// even if a variable were missing.
#[test]
fn google_differential_with_external_dns() {
    extdns_test_support::require!(ExternalDns, NetNamespace, OpenSsl);
    if std::env::var_os(INSIDE).is_none() {
        let exe = std::env::current_exe().unwrap_or_else(|e| panic!("{e}"));
        let out = std::process::Command::new("unshare")
            .args(["--net", "--map-root-user", "--", "sh", "-c"])
            .arg("ip link set lo up || exit 97; exec \"$0\" \"$@\"")
            .arg(exe)
            .args(["--exact", "google_differential_with_external_dns", "--nocapture"])
            .env(INSIDE, "1")
            .output()
            .unwrap_or_else(|e| panic!("cannot run unshare (util-linux): {e}"));
        let all = text(&out);
        assert_eq!(out.status.code(), Some(0), "inside the namespace:\n{all}");
        assert!(all.contains(DONE), "the scenario ran inside:\n{all}");
        return;
    }
    // /proc/net is the namespace's own (sysfs still shows the host's).
    let links: Vec<String> = std::fs::read_to_string("/proc/net/dev")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once(':').map(|(name, _)| name.trim().to_string()))
        .collect();
    assert_eq!(links, ["lo"], "only loopback in the namespace");

    let ours = FakeGoogle::start(&[("example-org", "example.org")]);
    let theirs = FakeGoogle::start(&[("example-org", "example.org")]);
    let route = |fake: &FakeGoogle| {
        let routes: Vec<(&str, std::net::SocketAddr)> = GOOGLE_HOSTS.iter().map(|h| (*h, fake.addr())).collect();
        TlsProxy::start(&routes).unwrap_or_else(|e| panic!("the TLS proxy: {e:#}"))
    };
    let (to_ours, to_theirs) = (route(&ours), route(&theirs));
    let (home, dir) = (tempdir(), tempdir());
    let endpoints = Arc::new(Mutex::new(Vec::new()));
    let source = connector::serve(endpoints.clone());
    let step = |manifests: String, published: Vec<connector::GobEndpoint>, what: &str| {
        cli::write_manifests(dir.path(), &manifests);
        if let Ok(mut e) = endpoints.lock() {
            *e = published;
        }
        ok(&extdns(&ours, home.path(), dir.path(), &[]), &format!("extdns: {what}"));
        ok(
            &run_external_dns(&theirs, &to_theirs, home.path(), source),
            &format!("external-dns: {what}"),
        );
        assert_eq!(compared(&ours), compared(&theirs), "{what}: the same records");
    };
    step(web_and_api("192.0.2.10"), web_and_api_endpoints("192.0.2.10"), "create");
    assert_eq!(records(&ours).len(), 3, "{:?}", ours.lines());
    assert!(to_theirs.log().connects.iter().any(|c| c == "dns.googleapis.com:443"));
    assert!(
        to_theirs
            .log()
            .connects
            .iter()
            .any(|c| c == "oauth2.googleapis.com:443")
    );
    assert_eq!(
        theirs.state().grants,
        ["jwt"],
        "external-dns's JWT verified by the fake"
    );
    step(web_and_api("192.0.2.11"), web_and_api_endpoints("192.0.2.11"), "update");
    step(String::new(), Vec::new(), "delete");
    assert_eq!(ours.lines(), Vec::<String>::new());

    // Take-over both ways: what one wrote, the other finds as it wants it.
    step(
        web_and_api("192.0.2.10"),
        web_and_api_endpoints("192.0.2.10"),
        "create again",
    );
    let applied = theirs.state().changes_applied;
    ok(
        &extdns(&theirs, home.path(), dir.path(), &[]),
        "extdns on external-dns's zone",
    );
    assert_eq!(
        theirs.state().changes_applied,
        applied,
        "extdns finds nothing to change"
    );
    let applied = ours.state().changes_applied;
    ok(
        &run_external_dns(&ours, &to_ours, home.path(), source),
        "external-dns on extdns's zone",
    );
    assert_eq!(
        ours.state().changes_applied,
        applied,
        "external-dns finds nothing to change"
    );
    assert!(to_ours.log().refused.is_empty() && to_theirs.log().refused.is_empty());
    println!("{DONE}");
}
