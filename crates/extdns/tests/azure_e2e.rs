//! The whole controller against the strict Azure fake: `extdns --once --provider=azure` (and
//! `azure-private-dns`) over manifests (manifests → sources → plan → TXT registry → record-set PUTs and
//! DELETEs), with an azure.json of `cloud: AzureStackCloud` naming the fake as authority and Resource
//! Manager, as an Azure Stack user writes it; every result read from the fake's state. Every address the
//! binary is given is the fake's on 127.0.0.1, the managed identity endpoint's included.

use std::path::Path;
use std::process::Output;
use std::sync::{Arc, Mutex};

use extdns_test_support::azure_fake::{self, FakeAzure, Service};
use extdns_test_support::cli::{self, ok, tempdir, text};
use extdns_test_support::connector;
use extdns_test_support::manifests::{self, lb_service};
use extdns_test_support::tls_proxy::TlsProxy;
use serde_json::json;

const OWNER: &str = "e2e";

fn extdns(fake: &FakeAzure, provider: &str, home: &Path, manifests: &Path, extra: &[&str]) -> Output {
    let file = home.join("azure.json");
    let creds = json!({ "aadClientId": azure_fake::CLIENT_ID, "aadClientSecret": azure_fake::CLIENT_SECRET });
    std::fs::write(&file, fake.azure_json(creds)).unwrap_or_else(|e| panic!("{e}"));
    let mut cmd = cli::command(env!("CARGO_BIN_EXE_extdns"), &["AZURE_", "EXTDNS_AZURE_"]);
    cmd.env("EXTDNS_AZURE_IMDS_URL", &fake.url)
        .args(["--once", "--source=service", "--registry=txt"])
        .arg(format!("--provider={provider}"))
        .arg(format!("--azure-config-file={}", file.display()))
        .args(["--txt-owner-id", OWNER, "--azure-maxretries-count=3"])
        .args(["--manifests", &manifests.display().to_string()])
        .args(extra);
    cli::run(&mut cmd)
}

fn services(dir: &Path, zone: &str, n: usize) {
    cli::write_manifests(dir, &manifests::numbered_lb_services(zone, n));
}

/// The record sets that are not ownership TXT records.
fn records(fake: &FakeAzure) -> Vec<String> {
    fake.lines().into_iter().filter(|l| !l.contains("heritage=")).collect()
}

fn owned(fake: &FakeAzure) -> usize {
    fake.lines()
        .iter()
        .filter(|l| l.contains(&format!("external-dns/owner={OWNER}")))
        .count()
}

#[test]
fn azure_full_controller_create_update_delete_idempotent() {
    let fake = FakeAzure::start(&[(Service::Public, "example.org")]);
    fake.seed(
        Service::Public,
        "example.org",
        "legacy",
        "A",
        json!({ "TTL": 300, "ARecords": [{ "ipv4Address": "198.51.100.1" }] }),
    );
    let (home, dir) = (tempdir(), tempdir());
    let docs = [
        lb_service(
            "web",
            "web.example.org",
            &["192.0.2.10", "2001:db8::10"],
            &[
                ("external-dns.kubernetes.io/ttl", "120"),
                ("external-dns.kubernetes.io/azure-tags", "team=dns"),
            ],
        ),
        lb_service("alias", "alias.example.org", &["lb.example.net"], &[]),
    ];
    cli::write_manifests(dir.path(), &docs.join("---\n"));
    ok(
        &extdns(&fake, "azure", home.path(), dir.path(), &["--dry-run"]),
        "dry run",
    );
    assert_eq!(fake.state().writes, 0, "a dry run writes nothing");

    ok(&extdns(&fake, "azure", home.path(), dir.path(), &[]), "first sync");
    let got = records(&fake);
    assert_eq!(got.len(), 4, "{got:?}");
    assert!(got[0].starts_with("alias.example.org CNAME") && got[0].contains(r#""cname":"lb.example.net""#));
    assert!(got[1].starts_with("legacy.example.org A"));
    assert!(
        got[2].starts_with("web.example.org A")
            && got[2].contains(r#""TTL":120"#)
            && got[2].contains(r#""metadata":{"team":"dns"}"#),
        "{got:?}"
    );
    assert!(got[3].starts_with("web.example.org AAAA") && got[3].contains("2001:db8::10"));
    assert_eq!(owned(&fake), 3, "{:?}", fake.lines());
    assert_eq!(
        fake.state().grants,
        ["client_secret", "client_secret"],
        "one token a run"
    );

    let writes = fake.state().writes;
    ok(&extdns(&fake, "azure", home.path(), dir.path(), &[]), "second sync");
    assert_eq!(
        fake.state().writes,
        writes,
        "a second run (tags read back as written) changes nothing"
    );

    let docs = [lb_service(
        "web",
        "web.example.org",
        &["192.0.2.20", "2001:db8::10"],
        &[("external-dns.kubernetes.io/ttl", "120")],
    )];
    cli::write_manifests(dir.path(), &docs.join("---\n"));
    ok(&extdns(&fake, "azure", home.path(), dir.path(), &[]), "update sync");
    let got = records(&fake);
    assert_eq!(got.len(), 3, "{got:?}");
    assert!(got[1].contains("192.0.2.20") && !got[1].contains("metadata"), "{got:?}");
    assert_eq!(owned(&fake), 2);

    cli::write_manifests(dir.path(), "");
    ok(&extdns(&fake, "azure", home.path(), dir.path(), &[]), "delete sync");
    let got = fake.lines();
    assert_eq!(got.len(), 1, "someone else's record stays: {got:?}");
    assert!(got[0].starts_with("legacy.example.org A"));
}

#[test]
fn azure_a_refused_put_a_429_storm_and_a_conflict_lose_nothing() {
    let fake = FakeAzure::start(&[(Service::Private, "internal.example")]);
    let (home, dir) = (tempdir(), tempdir());
    services(dir.path(), "internal.example", 6);
    ok(
        &extdns(&fake, "azure-private-dns", home.path(), dir.path(), &[]),
        "first sync",
    );
    let before = fake.lines();
    assert_eq!(before.len(), 12, "{before:?}");
    assert!(
        before.iter().all(|l| l.contains(r#""ttl":"#)),
        "private casing: {before:?}"
    );

    // Three more Services: Azure refuses s6, someone else writes s7 between extdns's read and its write,
    // and a storm of 429s shorter than a call's retries.
    services(dir.path(), "internal.example", 9);
    let theirs = json!({ "ttl": 60, "aRecords": [{ "ipv4Address": "203.0.113.7" }] });
    {
        let mut s = fake.state();
        s.faults.refuse("s6");
        s.interfere.insert("s7".into(), ("A".into(), theirs.clone()));
        s.faults.throttle_next = 3;
    }
    let out = extdns(&fake, "azure-private-dns", home.path(), dir.path(), &[]);
    let log = text(&out);
    assert_ne!(out.status.code(), Some(0), "the sync reports the failures\n{log}");
    assert!(
        log.contains("s6.internal.example") && log.contains("BadRequest"),
        "the refused record is named: {log}"
    );
    assert!(
        log.contains("s7.internal.example") && log.contains("ETag"),
        "the conflict is named: {log}"
    );
    assert_eq!(fake.state().requests.throttled(), 3, "every 429 was waited out");
    let now = fake.lines();
    assert!(before.iter().all(|l| now.contains(l)), "nothing deleted: {now:?}");
    assert!(
        now.iter().any(|l| l.starts_with("s8.internal.example A")),
        "the good record lands: {now:?}"
    );
    assert!(
        !now.iter().any(|l| l.starts_with("s6.internal.example A")),
        "the refused record is not there: {now:?}"
    );
    let s7 = fake
        .get(Service::Private, "internal.example", "s7", "A")
        .map(|s| s.properties);
    assert_eq!(s7, Some(theirs), "someone else's write is not overwritten");

    // Refusal lifted: the next sync lands s6; s7 stays someone else's (it has no owner extdns knows).
    fake.state().faults.refused.clear();
    let out = extdns(&fake, "azure-private-dns", home.path(), dir.path(), &[]);
    assert!(
        fake.lines().iter().any(|l| l.starts_with("s6.internal.example A")),
        "{}",
        text(&out)
    );
    let s7 = fake
        .get(Service::Private, "internal.example", "s7", "A")
        .map(|s| s.properties["aRecords"].clone());
    assert_eq!(s7, Some(json!([{ "ipv4Address": "203.0.113.7" }])));
}

#[test]
fn azure_without_credentials_names_every_source_tried() {
    let fake = FakeAzure::start(&[(Service::Public, "example.org")]);
    let (home, dir) = (tempdir(), tempdir());
    let file = home.path().join("azure.json");
    std::fs::write(&file, fake.azure_json(json!({}))).unwrap_or_else(|e| panic!("{e}"));
    let mut cmd = cli::command(env!("CARGO_BIN_EXE_extdns"), &["AZURE_", "EXTDNS_AZURE_"]);
    cmd.args(["--once", "--source=service", "--provider=azure", "--txt-owner-id=x"])
        .arg(format!("--azure-config-file={}", file.display()))
        .args(["--manifests", &dir.path().display().to_string()]);
    let out = cli::run(&mut cmd);
    let log = text(&out);
    assert_eq!(out.status.code(), Some(2), "{log}");
    for s in ["client secret", "workload identity", "managed identity"] {
        assert!(log.contains(s), "{s}: {log}");
    }
}

// ------------------------------------------------------------------------------------- external-dns

/// Set inside the network namespace a differential re-runs itself in.
const INSIDE: &str = "EXTDNS_TEST_AZURE_NETNS";
/// What a run inside prints last, so the outside knows the scenario ran (and was not filtered out).
const DONE: &str = "azure differential: done inside a loopback-only network namespace";

fn web_and_api(zone: &str, web: &str) -> String {
    [
        lb_service(
            "web",
            &format!("web.{zone}"),
            &[web, "2001:db8::10"],
            &[("external-dns.kubernetes.io/ttl", "120")],
        ),
        lb_service("api", &format!("api.{zone}"), &["192.0.2.20"], &[]),
    ]
    .join("---\n")
}

/// What [`web_and_api`] publishes, as external-dns's connector source hands it over.
fn web_and_api_endpoints(names: [&'static str; 2], web: &str) -> Vec<connector::GobEndpoint> {
    let e = |dns_name, record_type, target: &str, ttl| connector::GobEndpoint {
        dns_name,
        targets: vec![target.to_string()],
        record_type,
        ttl,
    };
    vec![
        e(names[0], "A", web, 120),
        e(names[0], "AAAA", "2001:db8::10", 120),
        e(names[1], "A", "192.0.2.20", 0),
    ]
}

/// external-dns v0.23.0 with its Azure provider, unmodified: azidentity, MSAL and armdns/armprivatedns
/// reach the fake behind `proxy` at login.microsoftonline.com and management.azure.com through `proxy`, with a client secret
/// in an azure.json of the public cloud, as an AKS user writes it.
fn run_external_dns(proxy: &TlsProxy, provider: &str, home: &Path, source: u16) -> Output {
    let program = extdns_test_support::env_program("EXTDNS_TEST_EXTERNAL_DNS")
        .unwrap_or_else(|e| panic!("{e}: run `cargo xtask test`"));
    let file = home.join("azure-public-cloud.json");
    let config = json!({ "tenantId": azure_fake::TENANT, "subscriptionId": azure_fake::SUBSCRIPTION,
                         "resourceGroup": azure_fake::RESOURCE_GROUP, "aadClientId": azure_fake::CLIENT_ID,
                         "aadClientSecret": azure_fake::CLIENT_SECRET });
    std::fs::write(&file, config.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let mut cmd = cli::command(
        program,
        &["AZURE_", "HTTP", "NO_PROXY", "SSL_CERT", "MSI_", "IDENTITY_", "IMDS_"],
    );
    cmd.env("HTTPS_PROXY", &proxy.url)
        .env("HTTP_PROXY", &proxy.url)
        .env("SSL_CERT_FILE", &proxy.ca_file)
        .env("HOME", home)
        .args(["--once", "--source=connector", "--registry=txt"])
        .arg(format!("--provider={provider}"))
        .arg(format!("--azure-config-file={}", file.display()))
        .args(["--txt-owner-id", OWNER, "--policy=sync"])
        .arg(format!("--connector-source-server=127.0.0.1:{source}"))
        .arg(format!(
            "--metrics-address=127.0.0.1:{}",
            extdns_test_support::free_port()
        ));
    cli::run(&mut cmd)
}

/// The fake's record sets with the ownership records' `resource` label dropped: external-dns's connector
/// source names no object, extdns's Services do; everything else must be the same.
fn compared(fake: &FakeAzure) -> Vec<String> {
    fake.lines()
        .into_iter()
        .map(|l| match l.find(",external-dns/resource=") {
            Some(at) => {
                let end = l[at..].find("\\\"").map_or(l.len(), |e| at + e);
                format!("{}{}", &l[..at], &l[end..])
            }
            None => l,
        })
        .collect()
}

/// Re-run `test` inside a network namespace with only loopback; true when this is the run inside.
fn inside_loopback_namespace(test: &str) -> bool {
    if std::env::var_os(INSIDE).is_some() {
        // /proc/net is the namespace's own (sysfs still shows the host's).
        let links: Vec<String> = std::fs::read_to_string("/proc/net/dev")
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split_once(':').map(|(name, _)| name.trim().to_string()))
            .collect();
        assert_eq!(links, ["lo"], "only loopback in the namespace");
        return true;
    }
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("{e}"));
    let out = std::process::Command::new("unshare")
        .args(["--net", "--map-root-user", "--", "sh", "-c"])
        .arg("ip link set lo up || exit 97; exec \"$0\" \"$@\"")
        .arg(exe)
        .args(["--exact", test, "--nocapture"])
        .env(INSIDE, "1")
        .output()
        .unwrap_or_else(|e| panic!("cannot run unshare (util-linux): {e}"));
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "inside the namespace:\n{all}");
    assert!(all.contains(DONE), "the scenario ran inside:\n{all}");
    false
}

/// external-dns v0.23.0 (its own Azure SDK, unmodified) and extdns, each against an Azure fake of its own,
/// from the same objects: the same record sets after each step, and each takes over the other's zone
/// without a write. In a network namespace with only loopback, so nothing can reach Azure or the metadata
/// address even if a variable were missing.
fn differential(service: Service, provider: &str, zone: &str, names: [&'static str; 2]) {
    let ours = FakeAzure::start(&[(service, zone)]);
    let theirs = FakeAzure::start(&[(service, zone)]);
    let route = |fake: &FakeAzure| {
        let routes: Vec<(&str, std::net::SocketAddr)> =
            azure_fake::AZURE_HOSTS.iter().map(|h| (*h, fake.addr())).collect();
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
        ok(
            &extdns(&ours, provider, home.path(), dir.path(), &[]),
            &format!("extdns: {what}"),
        );
        ok(
            &run_external_dns(&to_theirs, provider, home.path(), source),
            &format!("external-dns: {what}"),
        );
        assert_eq!(compared(&ours), compared(&theirs), "{what}: the same record sets");
    };
    step(
        web_and_api(zone, "192.0.2.10"),
        web_and_api_endpoints(names, "192.0.2.10"),
        "create",
    );
    assert_eq!(records(&ours).len(), 3, "{:?}", ours.lines());
    for host in azure_fake::AZURE_HOSTS {
        assert!(
            to_theirs.log().connects.iter().any(|c| *c == format!("{host}:443")),
            "external-dns reached {host}"
        );
    }
    assert_eq!(
        theirs.state().grants,
        ["client_secret"],
        "external-dns's secret checked by the fake"
    );
    step(
        web_and_api(zone, "192.0.2.11"),
        web_and_api_endpoints(names, "192.0.2.11"),
        "update",
    );
    step(String::new(), Vec::new(), "delete");
    assert_eq!(ours.lines(), Vec::<String>::new());

    // Take-over both ways: what one wrote, the other finds as it wants it.
    step(
        web_and_api(zone, "192.0.2.10"),
        web_and_api_endpoints(names, "192.0.2.10"),
        "create again",
    );
    let writes = theirs.state().writes;
    ok(
        &extdns(&theirs, provider, home.path(), dir.path(), &[]),
        "extdns on external-dns's zone",
    );
    assert_eq!(theirs.state().writes, writes, "extdns finds nothing to change");
    let writes = ours.state().writes;
    ok(
        &run_external_dns(&to_ours, provider, home.path(), source),
        "external-dns on extdns's zone",
    );
    assert_eq!(ours.state().writes, writes, "external-dns finds nothing to change");
    assert!(to_ours.log().refused.is_empty() && to_theirs.log().refused.is_empty());
    println!("{DONE}");
}

#[test]
fn azure_differential_with_external_dns() {
    extdns_test_support::require!(ExternalDns, NetNamespace, OpenSsl);
    if inside_loopback_namespace("azure_differential_with_external_dns") {
        differential(
            Service::Public,
            "azure",
            "example.org",
            ["web.example.org", "api.example.org"],
        );
    }
}

#[test]
fn azure_private_dns_differential_with_external_dns() {
    extdns_test_support::require!(ExternalDns, NetNamespace, OpenSsl);
    if inside_loopback_namespace("azure_private_dns_differential_with_external_dns") {
        differential(
            Service::Private,
            "azure-private-dns",
            "internal.example",
            ["web.internal.example", "api.internal.example"],
        );
    }
}
