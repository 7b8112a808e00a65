//! The whole controller against a real PowerDNS: `extdns --once --provider=pdns` over manifests
//! (manifests → sources → plan → TXT registry → PowerDNS HTTP API), with every answer read back with DNS
//! queries (`dig`, AXFR) against PowerDNS's DNS port, never from its database.

#[path = "support/services.rs"]
mod services;

use std::path::Path;
use std::process::Output;

use extdns_test_support::cli::{self, ok, tempdir, text, write_manifests};
use extdns_test_support::manifests::lb_service;
use extdns_test_support::pdns::{API_KEY, PowerDns, Zone};
use extdns_test_support::require;
use services::{OWNED, services};

const OWNER: &str = "e2e";

fn extdns(pdns: &PowerDns, manifests: &Path, key: &str, extra: &[&str]) -> Output {
    let mut cmd = cli::command(env!("CARGO_BIN_EXE_extdns"), &[]);
    cmd.args([
        "--once",
        "--source=service",
        "--provider=pdns",
        "--registry=txt",
        "--txt-owner-id",
        OWNER,
    ])
    .args(["--manifests", &manifests.display().to_string()])
    .args(["--pdns-server", &pdns.url(), "--pdns-api-key", key])
    .arg("--domain-filter=example.org")
    .args([
        "--managed-record-types=A",
        "--managed-record-types=AAAA",
        "--managed-record-types=CNAME",
        "--managed-record-types=SRV",
        "--managed-record-types=TXT",
    ])
    .args(extra);
    cli::run(&mut cmd)
}

/// The names of the zone's TXT ownership records that name our owner id, read with AXFR.
fn ownership_records(pdns: &PowerDns) -> Vec<String> {
    let mut owned: Vec<String> = pdns
        .axfr("example.org")
        .into_iter()
        .filter(|l| l.contains(" TXT ") && l.contains(&format!("external-dns/owner={OWNER}")))
        .filter_map(|l| l.split_whitespace().next().map(|n| n.trim_end_matches('.').to_string()))
        .collect();
    owned.dedup();
    owned
}

#[test]
fn pdns_full_controller_create_update_delete_idempotent_wrong_key() {
    require!(PowerDns);
    let pdns = PowerDns::start(&[Zone::new("example.org").with_record("legacy", "A", "192.0.2.99")]);
    let dir = tempdir();

    // 1. Create.
    write_manifests(dir.path(), &services("192.0.2.10", true, true));
    ok(&extdns(&pdns, dir.path(), API_KEY, &[]), "first sync");
    assert_eq!(pdns.dig("web.example.org", "A"), ["192.0.2.10"]);
    assert_eq!(pdns.ttl("web.example.org", "A"), Some(120));
    assert_eq!(pdns.dig("web.example.org", "AAAA"), ["2001:db8::10"]);
    assert_eq!(pdns.dig("alias.example.org", "CNAME"), ["lb.example.net."]);
    assert_eq!(pdns.dig("np.example.org", "A"), ["198.51.100.1"]);
    assert_eq!(
        pdns.dig("_np._tcp.np.example.org", "SRV"),
        ["0 50 30080 np.example.org."]
    );
    assert_eq!(ownership_records(&pdns), OWNED);
    // PowerDNS stores TXT data quoted; the ownership value is external-dns's.
    assert_eq!(
        pdns.dig("a-web.example.org", "TXT"),
        [format!(
            "\"heritage=external-dns,external-dns/owner={OWNER},external-dns/resource=service/default/web\""
        )]
    );

    // 2. The same objects again: nothing to do, the SOA serial (bumped by every PATCH) stays.
    let serial = pdns.serial("example.org");
    ok(&extdns(&pdns, dir.path(), API_KEY, &[]), "second sync");
    assert_eq!(pdns.serial("example.org"), serial, "a second run changes nothing");

    // 3. Update web's address, remove the alias Service.
    write_manifests(dir.path(), &services("192.0.2.20", false, true));
    ok(&extdns(&pdns, dir.path(), API_KEY, &[]), "update sync");
    assert_eq!(pdns.dig("web.example.org", "A"), ["192.0.2.20"]);
    assert_eq!(pdns.dig("web.example.org", "AAAA"), ["2001:db8::10"]);
    assert!(pdns.dig("alias.example.org", "CNAME").is_empty());
    let without_alias: Vec<&str> = OWNED.into_iter().filter(|n| !n.contains("alias")).collect();
    assert_eq!(
        ownership_records(&pdns),
        without_alias,
        "the alias's ownership TXT went with it"
    );
    assert_eq!(
        pdns.dig("legacy.example.org", "A"),
        ["192.0.2.99"],
        "a foreign record survives"
    );

    // 4. A wrong API key changes nothing and says why.
    let serial = pdns.serial("example.org");
    write_manifests(dir.path(), &services("192.0.2.30", false, true));
    let out = extdns(&pdns, dir.path(), "wrong-key", &[]);
    assert_ne!(
        out.status.code(),
        Some(0),
        "a rejected key fails the run: {}",
        text(&out)
    );
    assert!(
        text(&out).contains("authentication failed") && text(&out).contains("401"),
        "{}",
        text(&out)
    );
    assert_eq!(pdns.serial("example.org"), serial, "the wrong key changed nothing");
    assert_eq!(pdns.dig("web.example.org", "A"), ["192.0.2.20"]);

    // 5. Everything removed: extdns deletes what it owns (records and their TXT), and only that.
    write_manifests(dir.path(), "");
    ok(&extdns(&pdns, dir.path(), API_KEY, &[]), "delete sync");
    for (name, t) in [
        ("web.example.org", "A"),
        ("web.example.org", "AAAA"),
        ("np.example.org", "A"),
        ("_np._tcp.np.example.org", "SRV"),
    ] {
        assert!(pdns.dig(name, t).is_empty(), "{name} {t} deleted");
    }
    assert!(ownership_records(&pdns).is_empty(), "no ownership records left");
    assert_eq!(
        pdns.dig("legacy.example.org", "A"),
        ["192.0.2.99"],
        "a foreign record survives"
    );
}

#[test]
fn pdns_a_refused_record_fails_alone_and_the_others_land() {
    require!(PowerDns);
    let pdns = PowerDns::start(&[Zone::new("example.org")]);
    let dir = tempdir();
    // A load balancer name with a 70-byte label is no DNS name: PowerDNS refuses the CNAME (422).
    let bad = lb_service(
        "bad",
        "bad.example.org",
        &[&format!("{}.example.net", "x".repeat(70))],
        &[],
    );
    write_manifests(dir.path(), &format!("{}---\n{bad}", services("192.0.2.10", true, true)));
    let out = extdns(&pdns, dir.path(), API_KEY, &[]);
    let all = text(&out);
    assert!(
        all.contains("bad.example.org CNAME") && all.contains("422"),
        "the failure is named with PowerDNS's reason: {all}"
    );
    assert_eq!(pdns.dig("web.example.org", "A"), ["192.0.2.10"]);
    assert_eq!(pdns.dig("alias.example.org", "CNAME"), ["lb.example.net."]);
    assert_eq!(pdns.dig("np.example.org", "A"), ["198.51.100.1"]);
    assert!(pdns.dig("bad.example.org", "CNAME").is_empty());
    // A record and its ownership record land together or not at all.
    assert!(
        !ownership_records(&pdns).contains(&"cname-bad.example.org".to_string()),
        "no ownership record without its record: {:?}",
        ownership_records(&pdns)
    );
    assert_eq!(ownership_records(&pdns).len(), 5, "{:?}", ownership_records(&pdns));
}

/// An empty example.org on a fresh PowerDNS, and [`services`] (with the alias) as the manifests.
fn with_services() -> (PowerDns, tempfile::TempDir) {
    let pdns = PowerDns::start(&[Zone::new("example.org")]);
    let dir = tempdir();
    write_manifests(dir.path(), &services("192.0.2.10", true, true));
    (pdns, dir)
}

#[test]
fn pdns_dry_run_writes_nothing() {
    require!(PowerDns);
    let (pdns, dir) = with_services();
    let serial = pdns.serial("example.org");
    let out = extdns(&pdns, dir.path(), API_KEY, &["--dry-run"]);
    ok(&out, "dry run");
    assert!(
        text(&out).contains("web.example.org"),
        "the dry run shows its plan: {}",
        text(&out)
    );
    assert_eq!(pdns.serial("example.org"), serial, "a dry run writes nothing");
    assert!(pdns.dig("web.example.org", "A").is_empty());
    assert!(ownership_records(&pdns).is_empty());
}

#[test]
fn pdns_prefer_alias_writes_alias_rrsets_and_stays_idempotent() {
    require!(PowerDns);
    let (pdns, dir) = with_services();
    ok(&extdns(&pdns, dir.path(), API_KEY, &["--prefer-alias"]), "first sync");
    let axfr = pdns.axfr("example.org");
    assert!(
        axfr.iter()
            .any(|l| l == "alias.example.org. ALIAS lb.example.net." || l.starts_with("alias.example.org. TYPE65401")),
        "an ALIAS rrset: {axfr:?}"
    );
    assert!(pdns.dig("alias.example.org", "CNAME").is_empty(), "no CNAME: {axfr:?}");
    assert!(ownership_records(&pdns).contains(&"cname-alias.example.org".to_string()));
    let serial = pdns.serial("example.org");
    ok(&extdns(&pdns, dir.path(), API_KEY, &["--prefer-alias"]), "second sync");
    assert_eq!(
        pdns.serial("example.org"),
        serial,
        "the ALIAS reads back as what was desired"
    );
    // Without the flag the record goes back to a CNAME.
    ok(&extdns(&pdns, dir.path(), API_KEY, &[]), "sync without --prefer-alias");
    assert_eq!(pdns.dig("alias.example.org", "CNAME"), ["lb.example.net."]);
}
