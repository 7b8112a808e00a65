//! The whole controller against the strict Azure fake: `extdns --once --provider=azure` (and
//! `azure-private-dns`) over manifests (manifests → sources → plan → TXT registry → record-set PUTs and
//! DELETEs), with an azure.json of `cloud: AzureStackCloud` naming the fake as authority and Resource
//! Manager, as an Azure Stack user writes it; every result read from the fake's state. Every address the
//! binary is given is the fake's on 127.0.0.1, the managed identity endpoint's included.

use std::path::Path;
use std::process::Output;

use extdns_test_support::azure_fake::{self, FakeAzure, Service};
use extdns_test_support::cli::{self, ok, tempdir, text};
use extdns_test_support::differential::{self, CloudPair, Objects, TwoFakes};
use extdns_test_support::lines::ZoneLines;
use extdns_test_support::manifests::{self, alias, lb_service, web};
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
        alias(),
    ];
    cli::write_manifests(dir.path(), &docs.join("---\n"));
    ok(
        &extdns(&fake, "azure", home.path(), dir.path(), &["--dry-run"]),
        "dry run",
    );
    assert_eq!(fake.state().requests.writes(), 0, "a dry run writes nothing");

    ok(&extdns(&fake, "azure", home.path(), dir.path(), &[]), "first sync");
    let got = fake.records();
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
    assert_eq!(fake.owned_by(OWNER), 3, "{:?}", fake.lines());
    assert_eq!(
        fake.state().grants,
        ["client_secret", "client_secret"],
        "one token a run"
    );

    let writes = fake.state().requests.writes();
    ok(&extdns(&fake, "azure", home.path(), dir.path(), &[]), "second sync");
    assert_eq!(
        fake.state().requests.writes(),
        writes,
        "a second run (tags read back as written) changes nothing"
    );

    let docs = [web(&["192.0.2.20", "2001:db8::10"])];
    cli::write_manifests(dir.path(), &docs.join("---\n"));
    ok(&extdns(&fake, "azure", home.path(), dir.path(), &[]), "update sync");
    let got = fake.records();
    assert_eq!(got.len(), 3, "{got:?}");
    assert!(got[1].contains("192.0.2.20") && !got[1].contains("metadata"), "{got:?}");
    assert_eq!(fake.owned_by(OWNER), 2);

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
    for (what, record, cause) in [
        ("the refused record", "s6.internal.example", "BadRequest"),
        ("the conflict", "s7.internal.example", "ETag"),
    ] {
        assert!(log.contains(record) && log.contains(cause), "{what} is named: {log}");
    }
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
    cli::assert_mentions(&log, &["client secret", "workload identity", "managed identity"]);
}

// ------------------------------------------------------------------------------------- external-dns

/// external-dns v0.23.0 with its Azure provider, unmodified: azidentity, MSAL and armdns/armprivatedns
/// reach the fake behind `proxy` at login.microsoftonline.com and management.azure.com, with a client
/// secret in an azure.json of the public cloud, as an AKS user writes it.
fn run_external_dns(proxy: &TlsProxy, provider: &str, home: &Path, source: u16) -> Output {
    azure_fake::external_dns(proxy, provider, OWNER, home, source)
}

/// The fake's record sets as both controllers must leave them.
fn compared(fake: &FakeAzure) -> Vec<String> {
    differential::without_resource_label(fake.lines(), "\\\"")
}

/// external-dns v0.23.0 (its own Azure SDK, unmodified) and extdns, each against an Azure fake of its own,
/// from the same objects: the same record sets after each step, and each takes over the other's zone
/// without a write. In a network namespace with only loopback, so nothing can reach Azure or the metadata
/// address even if a variable were missing.
fn against_external_dns(service: Service, provider: &str, zone: &str, names: [&'static str; 2]) {
    let fakes = TwoFakes::start(
        || FakeAzure::start(&[(service, zone)]),
        FakeAzure::addr,
        &azure_fake::AZURE_HOSTS,
    );
    let home = tempdir();
    let objects = Objects::serve();
    let pair = CloudPair {
        fakes: &fakes,
        objects: &objects,
        zone,
        names,
        extdns: &|fake| extdns(fake, provider, home.path(), objects.dir.path(), &[]),
        external_dns: &|_, proxy| run_external_dns(proxy, provider, home.path(), objects.source),
        compared,
        writes: |fake| fake.state().requests.writes(),
    };
    pair.step(Some("192.0.2.10"), "create");
    assert_eq!(fakes.ours.records().len(), 3, "{:?}", fakes.ours.lines());
    let connects = fakes.to_theirs.log().connects.clone();
    for host in azure_fake::AZURE_HOSTS {
        assert!(
            connects.iter().any(|c| *c == format!("{host}:443")),
            "external-dns reached {host}"
        );
    }
    assert_eq!(
        fakes.theirs.state().grants,
        ["client_secret"],
        "external-dns's secret checked by the fake"
    );
    pair.update_delete_and_take_over();
}

#[test]
fn azure_differential_with_external_dns() {
    differential::in_loopback_namespace("azure_differential_with_external_dns", || {
        for (service, provider, zone, names) in azure_fake::PROVIDERS {
            against_external_dns(service, provider, zone, names);
        }
    });
}

// ------------------------------------------------------------------------------------- apex and wildcards

/// Services at the top zone's apex, at a delegated child zone's apex and (with `wildcard`) at
/// `*.apps.example.org`.
fn publish_apexes(objects: &Objects, wildcard: bool) {
    let mut records = vec![
        ("top", "example.org", "192.0.2.30"),
        ("child", "sub.example.org", "192.0.2.31"),
    ];
    if wildcard {
        records.push(("apps", "*.apps.example.org", "192.0.2.32"));
    }
    objects.publish_a_records(&records);
}

/// The fake's record sets with their zone (`zone name TYPE properties`), the `resource` label dropped.
fn zoned(fake: &FakeAzure) -> Vec<String> {
    let lines = fake
        .state()
        .sets
        .iter()
        .filter(|((_, _, _, t), _)| t != "SOA" && t != "NS")
        .map(|((_, zone, name, t), set)| format!("{zone} {name} {t} {}", set.properties))
        .collect();
    differential::without_resource_label(lines, "\\\"")
}

/// PUTs and DELETEs a fake answered (refused ones included).
fn writes_sent(fake: &FakeAzure) -> usize {
    let s = fake.state();
    s.requests.count("recordSets.put") + s.requests.count("recordSets.delete")
}

/// The apexes of the top zone and of a delegated child zone: the same zones as external-dns v0.23.0, no
/// failing sync, nothing written by the second. Then a wildcard with default flags, whose ownership name
/// `a-*.apps` Azure refuses: external-dns creates the record, is refused its ownership record and leaves
/// the record nobody's; extdns sends neither, on any sync, and says once which flag avoids it.
fn apexes_against_external_dns(service: Service, provider: &str) {
    let zones = [(service, "example.org"), (service, "sub.example.org")];
    let (ours, theirs) = (FakeAzure::start(&zones), FakeAzure::start(&zones));
    let to_theirs = differential::proxy(&azure_fake::AZURE_HOSTS, theirs.addr());
    let home = tempdir();
    let objects = Objects::serve();
    publish_apexes(&objects, false);
    ok(
        &extdns(&ours, provider, home.path(), objects.dir.path(), &[]),
        "extdns: the first sync",
    );
    let written = ours.state().requests.writes();
    ok(
        &extdns(&ours, provider, home.path(), objects.dir.path(), &[]),
        "extdns: the second sync",
    );
    assert_eq!(
        ours.state().requests.writes(),
        written,
        "the second sync writes nothing"
    );
    ok(
        &run_external_dns(&to_theirs, provider, home.path(), objects.source),
        "external-dns",
    );
    assert_eq!(zoned(&ours), zoned(&theirs), "the same zones");
    assert!(
        zoned(&ours).iter().any(|l| l.starts_with("example.org a-sub TXT")),
        "{:?}",
        zoned(&ours)
    );

    publish_apexes(&objects, true);
    let before = writes_sent(&ours);
    for sync in ["first", "second"] {
        let out = extdns(&ours, provider, home.path(), objects.dir.path(), &[]);
        ok(&out, &format!("extdns: the wildcard's {sync} sync"));
        if sync == "first" {
            assert!(
                text(&out).contains("--txt-wildcard-replacement"),
                "said once, with the flag"
            );
        }
    }
    assert_eq!(
        writes_sent(&ours),
        before,
        "extdns never sends the wildcard it cannot own"
    );
    let before = writes_sent(&theirs);
    let _ = run_external_dns(&to_theirs, provider, home.path(), objects.source);
    let theirs_sent = writes_sent(&theirs) - before;
    let wildcard = zoned(&theirs)
        .into_iter()
        .filter(|l| l.contains("*.apps"))
        .collect::<Vec<_>>();
    println!("external-dns v0.23.0 on a wildcard with default flags: {theirs_sent} writes sent, left {wildcard:?}");
    assert!(theirs_sent >= 2, "external-dns tries the record and a-*.apps");
    assert_eq!(
        wildcard.len(),
        1,
        "external-dns leaves the wildcard record, nobody's: {wildcard:?}"
    );
}

#[test]
fn azure_apex_and_wildcard_records_against_external_dns() {
    differential::in_loopback_namespace("azure_apex_and_wildcard_records_against_external_dns", || {
        for (service, provider, ..) in azure_fake::PROVIDERS {
            apexes_against_external_dns(service, provider);
        }
    });
}

/// A DNSEndpoint with TLSA, HTTPS and SVCB entries beside an A record, on both Azure services: the three
/// are refused by name (record, type and service in the log, the sync failing), none reaches Azure, and
/// the A record lands with its ownership record.
#[test]
fn azure_tlsa_https_and_svcb_are_refused_by_name_and_the_rest_lands() {
    for (service, provider, zone, label) in [
        (Service::Public, "azure", "example.org", "Azure DNS"),
        (
            Service::Private,
            "azure-private-dns",
            "internal.example",
            "Azure Private DNS",
        ),
    ] {
        let fake = FakeAzure::start(&[(service, zone)]);
        let (home, dir) = (tempdir(), tempdir());
        let (web, tlsa, dns) = (
            format!("web.{zone}"),
            format!("_443._tcp.web.{zone}"),
            format!("_dns.{zone}"),
        );
        let digest = "3f".repeat(32);
        let tlsa_target = format!("3 1 1 {digest}");
        let entries = [
            (web.as_str(), "A", "192.0.2.10"),
            (web.as_str(), "HTTPS", "1 . alpn=h2"),
            (tlsa.as_str(), "TLSA", tlsa_target.as_str()),
            (dns.as_str(), "SVCB", "0 svc.example.net."),
        ];
        cli::write_manifests(dir.path(), &manifests::dns_endpoint("web", &entries));
        let types = [
            "--source=crd",
            "--managed-record-types=A",
            "--managed-record-types=TLSA",
            "--managed-record-types=HTTPS",
            "--managed-record-types=SVCB",
        ];
        let out = extdns(&fake, provider, home.path(), dir.path(), &types);
        let log = text(&out);
        assert_ne!(
            out.status.code(),
            Some(0),
            "{provider}: the sync reports the refusals\n{log}"
        );
        for (name, t) in [(&web, "HTTPS"), (&tlsa, "TLSA"), (&dns, "SVCB")] {
            let named = log
                .lines()
                .any(|l| l.contains(name.as_str()) && l.contains(t) && l.contains(label));
            assert!(named, "{provider}: {name} {t} refused by name\n{log}");
        }
        let lines = fake.lines();
        assert!(lines.iter().any(|l| l.starts_with(&format!("{web} A"))), "{lines:?}");
        assert!(
            lines.iter().any(|l| l.starts_with(&format!("a-{web} TXT"))),
            "{lines:?}"
        );
        let typed = ["TLSA", "HTTPS", "SVCB"];
        assert!(
            !fake
                .state()
                .requests
                .lines()
                .iter()
                .any(|r| typed.iter().any(|t| r.contains(&format!("/{t}/")))),
            "{provider}: nothing of the three reached Azure"
        );
    }
}
