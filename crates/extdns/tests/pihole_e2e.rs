//! The whole controller against the Pi-hole fake, whose lists a real dnsmasq serves: `extdns --once
//! --provider=pihole --registry=noop` over manifests, as external-dns's Pi-hole tutorial runs it, every
//! result read from the fake's lists and asked of dnsmasq with `dig`; and external-dns v0.23 against the same
//! fake (its own Pi-hole client, fed the same records through its connector source): both leave the same
//! lists, and each takes over from the other with nothing to write.

use std::path::Path;
use std::process::Output;

use extdns_test_support::cli::{self, ok, tempdir, text};
use extdns_test_support::connector::GobEndpoint;
use extdns_test_support::differential::{self, Objects};
use extdns_test_support::manifests::{alias, lb_service, web};
use extdns_test_support::pihole_fake::{FakePihole, PASSWORD};
use extdns_test_support::require;

fn extdns(pi: &FakePihole, manifests: &Path, extra: &[&str]) -> Output {
    let mut cmd = cli::command(env!("CARGO_BIN_EXE_extdns"), &[]);
    // The password as external-dns's tutorial passes it: from a Secret, as an environment variable.
    cmd.env("EXTERNAL_DNS_PIHOLE_PASSWORD", PASSWORD)
        .args(["--once", "--source=service", "--provider=pihole", "--registry=noop"])
        .arg(format!("--pihole-server={}", pi.url))
        .args([
            "--domain-filter=example.org",
            "--manifests",
            &manifests.display().to_string(),
        ])
        .args(extra);
    cli::run(&mut cmd)
}

/// `alias` published as a CNAME to `web.example.org` (dnsmasq answers CNAMEs to names it knows).
fn local_alias() -> String {
    alias().replace("lb.example.net", "web.example.org")
}

#[test]
fn pihole_full_controller_create_update_delete() {
    require!(Dnsmasq);
    let pi = FakePihole::with_dnsmasq(Some(PASSWORD));
    pi.seed(&["192.0.2.99 legacy.example.org"], &[]);
    let dir = tempdir();
    cli::write_manifests(
        dir.path(),
        &[web(&["192.0.2.10", "2001:db8::10"]), local_alias()].join("---\n"),
    );
    // A dry run writes nothing.
    ok(&extdns(&pi, dir.path(), &["--dry-run"]), "dry run");
    assert_eq!(pi.state().requests.writes(), 0, "a dry run writes nothing");

    // 1. Create, with the tutorial's --policy=upsert-only: the entry made by hand stays.
    let upsert = ["--policy=upsert-only"];
    ok(&extdns(&pi, dir.path(), &upsert), "first sync");
    assert_eq!(
        pi.lines(),
        [
            "cname: alias.example.org,web.example.org",
            "hosts: 192.0.2.10 web.example.org",
            "hosts: 192.0.2.99 legacy.example.org",
            "hosts: 2001:db8::10 web.example.org",
        ]
    );
    assert_eq!(pi.dig("web.example.org", "A"), ["192.0.2.10"]);
    assert_eq!(pi.dig("web.example.org", "AAAA"), ["2001:db8::10"]);
    assert_eq!(pi.dig("alias.example.org", "CNAME"), ["web.example.org."]);

    // 2. The same objects again: nothing is written (the TTL of 120 an address cannot keep is no difference).
    let writes = pi.state().requests.writes();
    ok(&extdns(&pi, dir.path(), &upsert), "second sync");
    assert_eq!(pi.state().requests.writes(), writes, "a second run changes nothing");

    // 3. web's address changes, the alias goes (--policy=sync); the session expired meanwhile. With
    // --registry=noop every record is extdns's, as external-dns's: the entry made by hand goes too.
    pi.state().expire_sessions();
    cli::write_manifests(dir.path(), &web(&["192.0.2.20", "2001:db8::10"]));
    ok(&extdns(&pi, dir.path(), &[]), "update sync");
    assert_eq!(pi.dig("web.example.org", "A"), ["192.0.2.20"]);
    assert_eq!(pi.dig("alias.example.org", "CNAME"), Vec::<String>::new());
    assert_eq!(pi.dig("legacy.example.org", "A"), Vec::<String>::new());
    assert_eq!(pi.state().logins, 4, "one login a run, and one more after the expiry");

    // 4. With upsert-only nothing is deleted; with sync everything goes.
    cli::write_manifests(dir.path(), "");
    ok(&extdns(&pi, dir.path(), &upsert), "upsert-only sync");
    assert_eq!(pi.dig("web.example.org", "A"), ["192.0.2.20"]);
    ok(&extdns(&pi, dir.path(), &[]), "delete sync");
    assert_eq!(pi.lines(), Vec::<String>::new());
}

#[test]
fn pihole_refusals_are_named_and_a_wrong_password_fails_the_sync() {
    let pi = FakePihole::start(Some(PASSWORD));
    let dir = tempdir();
    cli::write_manifests(
        dir.path(),
        &[
            web(&["192.0.2.10"]),
            lb_service("bad", "bad_name!.example.org", &["192.0.2.11"], &[]),
        ]
        .join("---\n"),
    );
    let out = extdns(&pi, dir.path(), &[]);
    let all = text(&out);
    assert!(
        all.contains("bad_name!.example.org A") && all.contains("invalid hostname"),
        "the refused record is named with Pi-hole's reason: {all}"
    );
    assert_eq!(
        pi.lines(),
        ["hosts: 192.0.2.10 web.example.org"],
        "the other record landed"
    );

    let mut cmd = cli::command(env!("CARGO_BIN_EXE_extdns"), &[]);
    cmd.env("EXTERNAL_DNS_PIHOLE_PASSWORD", "wrong")
        .args(["--once", "--source=service", "--provider=pihole", "--registry=noop"])
        .arg(format!("--pihole-server={}", pi.url))
        .args(["--manifests", &dir.path().display().to_string()]);
    let out = cli::run(&mut cmd);
    let all = text(&out);
    assert_ne!(out.status.code(), Some(0), "{all}");
    assert!(
        all.contains("refused the password") && !all.contains("\"wrong\""),
        "{all}"
    );

    // The TXT registry's ownership records cannot be stored: said at startup and per record.
    let out = extdns(&pi, dir.path(), &["--registry=txt"]);
    let all = text(&out);
    assert!(all.contains("run --registry=noop"), "{all}");
}

// ------------------------------------------------------------------------------------- external-dns

/// What the manifests of [`extdns`] publish, as external-dns's connector source hands them over.
fn records(web_addresses: &[&str], with_alias: bool) -> Vec<GobEndpoint> {
    let mut v = Vec::new();
    let v4: Vec<String> = web_addresses
        .iter()
        .filter(|a| !a.contains(':'))
        .map(|a| a.to_string())
        .collect();
    let v6: Vec<String> = web_addresses
        .iter()
        .filter(|a| a.contains(':'))
        .map(|a| a.to_string())
        .collect();
    for (targets, record_type) in [(v4, "A"), (v6, "AAAA")] {
        if !targets.is_empty() {
            v.push(GobEndpoint {
                dns_name: "web.example.org",
                targets,
                record_type,
                ttl: 120,
            });
        }
    }
    if with_alias {
        v.push(GobEndpoint::new("alias.example.org", "CNAME", &["web.example.org"], 0));
    }
    v
}

fn manifests(web_addresses: &[&str], with_alias: bool) -> String {
    let mut docs = Vec::new();
    if !web_addresses.is_empty() {
        docs.push(web(web_addresses));
    }
    if with_alias {
        docs.push(local_alias());
    }
    docs.join("---\n")
}

/// external-dns v0.23 with its Pi-hole provider as its tutorial runs it, fed `endpoints` by its connector
/// source.
fn run_external_dns(pi: &FakePihole, home: &Path, objects: &Objects) -> Output {
    let mut cmd = differential::external_dns(None, home, objects.source, &[]);
    cmd.env("EXTERNAL_DNS_PIHOLE_PASSWORD", PASSWORD)
        .args(["--provider=pihole", "--registry=noop"])
        .args(["--policy=sync", "--domain-filter=example.org"])
        .arg(format!("--pihole-server={}", pi.url));
    cli::run(&mut cmd)
}

#[test]
fn pihole_differential_with_external_dns() {
    require!(ExternalDns, Dnsmasq);
    let ours = FakePihole::with_dnsmasq(Some(PASSWORD));
    let theirs = FakePihole::with_dnsmasq(Some(PASSWORD));
    let home = tempdir();
    let objects = Objects::serve();
    let step = |addresses: &[&str], with_alias: bool, what: &str| {
        objects.publish(&manifests(addresses, with_alias), records(addresses, with_alias));
        ok(&extdns(&ours, objects.dir.path(), &[]), &format!("extdns: {what}"));
        ok(
            &run_external_dns(&theirs, home.path(), &objects),
            &format!("external-dns: {what}"),
        );
        assert_eq!(ours.lines(), theirs.lines(), "{what}: the same lists");
        for (name, rtype) in [
            ("web.example.org", "A"),
            ("web.example.org", "AAAA"),
            ("alias.example.org", "CNAME"),
        ] {
            assert_eq!(ours.dig(name, rtype), theirs.dig(name, rtype), "{what}: {name} {rtype}");
        }
    };
    step(&["192.0.2.10", "192.0.2.11", "2001:db8::10"], true, "create");
    assert_eq!(ours.lines().len(), 4, "{:?}", ours.lines());
    step(&["192.0.2.11", "192.0.2.12", "2001:db8::10"], false, "update");
    step(&[], false, "delete");
    assert_eq!(ours.lines(), Vec::<String>::new());

    // Take-over both ways on one Pi-hole: what one wrote, the other finds as it wants it.
    step(&["192.0.2.10", "2001:db8::10"], true, "create again");
    differential::assert_writes_nothing(
        "extdns on external-dns's lists",
        || theirs.state().requests.writes(),
        || extdns(&theirs, objects.dir.path(), &[]),
    );
    differential::assert_writes_nothing(
        "external-dns on extdns's lists",
        || ours.state().requests.writes(),
        || run_external_dns(&ours, home.path(), &objects),
    );
}
