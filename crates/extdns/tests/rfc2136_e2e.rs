//! The whole controller against real DNS servers: `extdns --once --provider=rfc2136` over manifests
//! (manifests → sources → plan → TXT registry → RFC2136) on BIND 9 and on Knot, with every answer read back
//! with DNS queries (`dig`), never from zone files.

#[path = "support/services.rs"]
mod services;

use std::path::Path;
use std::process::{Command, Output};

use extdns_test_support::cli::{self, ok, tempdir, text, write_manifests};
use extdns_test_support::dns_server::{DnsServer, KEY_NAME, Kind, SECRET, WRONG_SECRET, Zone};
use extdns_test_support::manifests::lb_service;
use extdns_test_support::{dig, require};
use services::{OWNED, services};

const OWNER: &str = "e2e";

fn extdns(server: &DnsServer, manifests: &Path, secret: &str) -> Output {
    extdns_with(server, manifests, secret, &[])
}

fn extdns_with(server: &DnsServer, manifests: &Path, secret: &str, extra: &[&str]) -> Output {
    let mut cmd = cli::command(env!("CARGO_BIN_EXE_extdns"), &[]);
    let port = server.port.to_string();
    cmd.args([
        "--once",
        "--source=service",
        "--provider=rfc2136",
        "--registry=txt",
        "--txt-owner-id",
        OWNER,
    ])
    .args(["--manifests", &manifests.display().to_string()])
    .args([
        "--rfc2136-host=127.0.0.1",
        "--rfc2136-port",
        &port,
        "--rfc2136-zone=example.org",
    ])
    .args(["--rfc2136-tsig-keyname", KEY_NAME, "--rfc2136-tsig-secret", secret])
    .args(["--rfc2136-tsig-secret-alg=hmac-sha256", "--rfc2136-axfr"])
    .args([
        "--managed-record-types=A",
        "--managed-record-types=AAAA",
        "--managed-record-types=CNAME",
    ])
    .args(["--managed-record-types=SRV", "--managed-record-types=TXT"])
    .args(extra);
    cli::run(&mut cmd)
}

/// The TXT ownership records of the zone that name our owner id, as `name` → value, read with AXFR.
fn ownership_records(server: &DnsServer) -> Vec<String> {
    match server.axfr("example.org") {
        Ok(zone) => dig::owned_names(&zone, OWNER),
        Err(e) => panic!("{e:#}"),
    }
}

fn full_controller(kind: Kind) {
    let server = DnsServer::start(kind, &[Zone::new("example.org").with_record("legacy IN A 192.0.2.99")]);
    let dir = tempdir();

    // 1. Create.
    write_manifests(dir.path(), &services("192.0.2.10", true, true));
    ok(&extdns(&server, dir.path(), SECRET), "first sync");
    assert_eq!(server.dig("web.example.org", "A"), vec!["192.0.2.10"]);
    assert_eq!(server.ttl("web.example.org", "A"), Some(120));
    assert_eq!(server.dig("web.example.org", "AAAA"), vec!["2001:db8::10"]);
    assert_eq!(server.dig("alias.example.org", "CNAME"), vec!["lb.example.net."]);
    assert_eq!(server.dig("np.example.org", "A"), vec!["198.51.100.1"]);
    assert_eq!(
        server.dig("_np._tcp.np.example.org", "SRV"),
        vec!["0 50 30080 np.example.org."]
    );
    assert_eq!(ownership_records(&server), OWNED);

    // 2. The same objects again: nothing to do, the SOA serial stays.
    let serial = server.serial("example.org");
    ok(&extdns(&server, dir.path(), SECRET), "second sync");
    assert_eq!(server.serial("example.org"), serial, "a second run changes nothing");

    // 3. Update web's address, remove the alias Service.
    write_manifests(dir.path(), &services("192.0.2.20", false, true));
    ok(&extdns(&server, dir.path(), SECRET), "update sync");
    assert_eq!(server.dig("web.example.org", "A"), vec!["192.0.2.20"]);
    assert_eq!(server.dig("alias.example.org", "CNAME"), Vec::<String>::new());
    let without_alias: Vec<&str> = OWNED.into_iter().filter(|n| !n.contains("alias")).collect();
    assert_eq!(
        ownership_records(&server),
        without_alias,
        "the alias's ownership TXT went with it"
    );
    assert_eq!(
        server.dig("legacy.example.org", "A"),
        vec!["192.0.2.99"],
        "a record extdns does not own survives"
    );

    // 4. A wrong key changes nothing and says why.
    let serial = server.serial("example.org");
    write_manifests(dir.path(), &services("192.0.2.30", false, false));
    let out = extdns(&server, dir.path(), WRONG_SECRET);
    let all = text(&out);
    assert_ne!(out.status.code(), Some(0), "a rejected key fails the run: {all}");
    assert!(all.contains("authentication failed") && all.contains("BADSIG"), "{all}");
    assert_eq!(server.serial("example.org"), serial, "the wrong key changed nothing");
    assert_eq!(server.dig("web.example.org", "A"), vec!["192.0.2.20"]);

    // 5. Everything removed: extdns deletes what it owns (records and their TXT), and only that.
    write_manifests(dir.path(), "");
    ok(&extdns(&server, dir.path(), SECRET), "delete sync");
    for (name, t) in [
        ("web.example.org", "A"),
        ("web.example.org", "AAAA"),
        ("np.example.org", "A"),
        ("_np._tcp.np.example.org", "SRV"),
    ] {
        assert_eq!(server.dig(name, t), Vec::<String>::new(), "{name} {t} deleted");
    }
    assert_eq!(
        ownership_records(&server),
        Vec::<String>::new(),
        "no ownership records left"
    );
    assert_eq!(
        server.dig("legacy.example.org", "A"),
        vec!["192.0.2.99"],
        "a record extdns does not own survives"
    );
}

#[test]
fn bind_full_controller_create_update_delete_idempotent_wrong_key() {
    require!(Bind);
    full_controller(Kind::Bind);
}

#[test]
fn knot_full_controller_create_update_delete_idempotent_wrong_key() {
    require!(Knot);
    full_controller(Kind::Knot);
}

#[test]
fn bind_a_refused_record_fails_alone_and_the_others_land() {
    require!(Bind);
    let server = DnsServer::start(Kind::Bind, &[Zone::new("example.org").refusing("refused.example.org")]);
    let dir = tempdir();
    let refused = "apiVersion: v1\nkind: Service\nmetadata:\n  name: refused\n  namespace: default\n  annotations:\n    \
                   external-dns.kubernetes.io/hostname: refused.example.org\nspec:\n  type: LoadBalancer\n  \
                   clusterIP: 10.96.0.13\n  ports:\n    - name: http\n      port: 80\nstatus:\n  loadBalancer:\n    \
                   ingress:\n      - ip: 192.0.2.66\n";
    write_manifests(
        dir.path(),
        &format!("{}---\n{refused}", services("192.0.2.10", true, false)),
    );
    let out = extdns(&server, dir.path(), SECRET);
    let all = text(&out);
    assert!(
        all.contains("refused.example.org A") && all.contains("REFUSED"),
        "the failure is named: {all}"
    );
    assert_eq!(server.dig("web.example.org", "A"), vec!["192.0.2.10"]);
    assert_eq!(server.dig("alias.example.org", "CNAME"), vec!["lb.example.net."]);
    assert_eq!(server.dig("refused.example.org", "A"), Vec::<String>::new());
    // A record and its ownership record land together or not at all: an ownership record left alone would
    // make a later sync delete a record of that name that someone else created.
    assert!(
        !ownership_records(&server).iter().any(|n| n.contains("refused")),
        "no ownership record without its record: {:?}",
        ownership_records(&server)
    );
}

#[test]
fn bind_an_update_to_an_unwritable_target_keeps_the_old_record() {
    require!(Bind);
    let server = DnsServer::start(Kind::Bind, &[Zone::new("example.org")]);
    let dir = tempdir();
    write_manifests(
        dir.path(),
        &lb_service("cdn", "cdn.example.org", &["lb.example.net"], &[]),
    );
    ok(&extdns(&server, dir.path(), SECRET), "create");
    assert_eq!(server.dig("cdn.example.org", "CNAME"), vec!["lb.example.net."]);

    // The new target cannot be written as a DNS name: the update is one change, old and new together, so
    // the old record stays rather than the name going offline.
    write_manifests(dir.path(), &lb_service("cdn", "cdn.example.org", &["1.2.3.4/24"], &[]));
    let _ = extdns(&server, dir.path(), SECRET);
    assert_eq!(server.dig("cdn.example.org", "CNAME"), vec!["lb.example.net."]);
    assert_eq!(ownership_records(&server), vec!["cname-cdn.example.org"]);
}

/// The Service `name` published at `hostname` (stored as `stored`, answering at `queried`) is owned: its
/// ownership record is there, a second sync has nothing to do, and without the Service both go.
fn bind_owns_from_create_to_delete(name: &str, hostname: &str, ip: &str, stored: &str, queried: &str) {
    let server = DnsServer::start(Kind::Bind, &[Zone::new("example.org")]);
    let dir = tempdir();
    write_manifests(dir.path(), &lb_service(name, hostname, &[ip], &[]));
    ok(&extdns(&server, dir.path(), SECRET), "create");
    assert_eq!(server.dig(queried, "A"), vec![ip]);
    assert_eq!(ownership_records(&server), vec![format!("a-{stored}")]);

    let serial = server.serial("example.org");
    ok(&extdns(&server, dir.path(), SECRET), "second sync");
    assert_eq!(server.serial("example.org"), serial, "{stored} is owned: nothing to do");

    write_manifests(dir.path(), "");
    ok(&extdns(&server, dir.path(), SECRET), "delete");
    assert_eq!(server.dig(queried, "A"), Vec::<String>::new());
    assert_eq!(ownership_records(&server), Vec::<String>::new());
}

#[test]
fn bind_wildcard_records_get_ownership_records_and_are_deleted_with_them() {
    require!(Bind);
    bind_owns_from_create_to_delete(
        "apps",
        "*.apps.example.org",
        "192.0.2.50",
        "*.apps.example.org",
        "x.apps.example.org",
    );
}

#[test]
fn bind_unicode_names_are_owned_through_their_ascii_form() {
    require!(Bind);
    let ascii = "xn--bcher-kva.example.org";
    bind_owns_from_create_to_delete("books", "bücher.example.org", "192.0.2.51", ascii, ascii);
}

#[test]
fn bind_a_zero_interval_syncs_at_most_once_a_second() {
    require!(Bind);
    let server = DnsServer::start(Kind::Bind, &[Zone::new("example.org")]);
    let dir = tempdir();
    write_manifests(dir.path(), &lb_service("web", "web.example.org", &["192.0.2.52"], &[]));
    let port = server.port.to_string();
    let mut child = match Command::new(env!("CARGO_BIN_EXE_extdns"))
        .env_remove("RUST_LOG")
        .args([
            "--source=service",
            "--provider=rfc2136",
            "--registry=txt",
            "--txt-owner-id",
            OWNER,
        ])
        .args(["--manifests", &dir.path().display().to_string(), "--interval=0s"])
        .args([
            "--rfc2136-host=127.0.0.1",
            "--rfc2136-port",
            &port,
            "--rfc2136-zone=example.org",
        ])
        .args(["--rfc2136-tsig-keyname", KEY_NAME, "--rfc2136-tsig-secret", SECRET])
        .args([
            "--rfc2136-tsig-secret-alg=hmac-sha256",
            "--rfc2136-axfr",
            "--metrics-address=127.0.0.1:0",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => panic!("cannot run extdns: {e}"),
    };
    std::thread::sleep(std::time::Duration::from_millis(3500));
    let _ = child.kill();
    let out = match child.wait_with_output() {
        Ok(o) => o,
        Err(e) => panic!("{e}"),
    };
    let log = text(&out);
    let syncs = log.matches("All records are already up to date").count() + log.matches("create record").count();
    assert_eq!(server.dig("web.example.org", "A"), vec!["192.0.2.52"], "{log}");
    assert!(
        (2..=5).contains(&syncs),
        "{syncs} syncs in 3.5 s with --interval=0s:\n{log}"
    );
}

#[test]
fn bind_ptr_records_are_created_and_removed_in_the_reverse_zone() {
    require!(Bind);
    let zones = [Zone::new("example.org"), Zone::new("2.0.192.in-addr.arpa")];
    let server = DnsServer::start(Kind::Bind, &zones);
    let dir = tempdir();
    let ptr = [
        "--rfc2136-zone=2.0.192.in-addr.arpa",
        "--managed-record-types=PTR",
        "--create-ptr",
    ];
    write_manifests(dir.path(), &services("192.0.2.10", false, false));
    ok(&extdns_with(&server, dir.path(), SECRET, &ptr), "sync with PTR");
    assert_eq!(server.dig("web.example.org", "A"), vec!["192.0.2.10"]);
    assert_eq!(server.dig("10.2.0.192.in-addr.arpa", "PTR"), vec!["web.example.org."]);

    let serial = server.serial("2.0.192.in-addr.arpa");
    ok(&extdns_with(&server, dir.path(), SECRET, &ptr), "second sync with PTR");
    assert_eq!(
        server.serial("2.0.192.in-addr.arpa"),
        serial,
        "a second run changes nothing"
    );

    write_manifests(dir.path(), "");
    ok(&extdns_with(&server, dir.path(), SECRET, &ptr), "delete sync with PTR");
    assert_eq!(server.dig("10.2.0.192.in-addr.arpa", "PTR"), Vec::<String>::new());
    assert_eq!(server.dig("web.example.org", "A"), Vec::<String>::new());
}

/// `n` LoadBalancer Services `svc-<i>` publishing `svc-<i>.example.org`.
fn many_services(range: std::ops::Range<usize>) -> String {
    range
        .map(|i| {
            lb_service(
                &format!("svc-{i}"),
                &format!("svc-{i}.example.org"),
                &[&format!("192.0.2.{}", 100 + i)],
                &[],
            )
        })
        .collect::<Vec<_>>()
        .join("---\n")
}

#[test]
fn bind_the_deletion_guard_holds_back_a_mass_deletion_but_not_a_small_one() {
    require!(Bind);
    let server = DnsServer::start(Kind::Bind, &[Zone::new("example.org")]);
    let dir = tempdir();
    write_manifests(dir.path(), &many_services(0..20));
    ok(&extdns(&server, dir.path(), SECRET), "create 20");
    assert_eq!(ownership_records(&server).len(), 20);

    // Every Service gone at once (a wrong flag, an empty view): nothing is deleted, and the log says why.
    write_manifests(dir.path(), "");
    let serial = server.serial("example.org");
    let out = extdns(&server, dir.path(), SECRET);
    let log = text(&out);
    assert!(
        log.contains("deletion guard") && log.contains("example.org") && log.contains("20"),
        "{log}"
    );
    assert_eq!(server.serial("example.org"), serial, "nothing was deleted");
    assert_eq!(server.dig("svc-7.example.org", "A"), vec!["192.0.2.107"]);

    // A dry run shows what is held back, and still sends nothing.
    let out = extdns_with(&server, dir.path(), SECRET, &["--dry-run"]);
    let log = text(&out);
    assert!(
        log.contains("holds it back") && log.contains("svc-7.example.org"),
        "{log}"
    );
    assert_eq!(server.serial("example.org"), serial);

    // Two of twenty removed: an ordinary sync, those two go (records and ownership records).
    write_manifests(dir.path(), &many_services(0..18));
    ok(&extdns(&server, dir.path(), SECRET), "remove 2");
    assert_eq!(server.dig("svc-18.example.org", "A"), Vec::<String>::new());
    assert_eq!(server.dig("svc-19.example.org", "A"), Vec::<String>::new());
    assert_eq!(server.dig("svc-17.example.org", "A"), vec!["192.0.2.117"]);
    assert_eq!(ownership_records(&server).len(), 18);

    // The guard turned off: the operator means it.
    write_manifests(dir.path(), "");
    ok(
        &extdns_with(&server, dir.path(), SECRET, &["--deletion-guard-percent=100"]),
        "delete all, guard off",
    );
    assert_eq!(ownership_records(&server), Vec::<String>::new());
}

/// A LoadBalancer Service `name` with the given cluster IPs, extra annotation lines and ingress address,
/// for the FQDN template `{{if index .Spec.ClusterIPs 1}}{{.Name}}.example.org{{end}}`, which fails on a
/// Service with a single cluster IP (index out of range), as a template does on an object it does not fit.
fn templated_service(name: &str, cluster_ips: &[&str], annotations: &str, ingress_ip: &str) -> String {
    let ips: String = cluster_ips.iter().map(|ip| format!("    - {ip}\n")).collect();
    let annotations = if annotations.is_empty() {
        String::new()
    } else {
        format!("  annotations:\n{annotations}")
    };
    format!(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: {name}\n  namespace: default\n{annotations}\
         spec:\n  type: LoadBalancer\n  clusterIP: {first}\n  clusterIPs:\n{ips}  ports:\n    - name: http\n      \
         port: 80\nstatus:\n  loadBalancer:\n    ingress:\n      - ip: {ingress_ip}\n",
        first = cluster_ips.first().copied().unwrap_or("10.96.0.1"),
    )
}

const FAILING_TEMPLATE: &str = "--fqdn-template={{if index .Spec.ClusterIPs 1}}{{.Name}}.example.org{{end}}";

#[test]
fn bind_a_service_whose_template_starts_failing_keeps_its_record_while_others_change() {
    require!(Bind);
    let server = DnsServer::start(Kind::Bind, &[Zone::new("example.org")]);
    let dir = tempdir();
    let dual = ["10.96.0.10", "fd00::10"];
    write_manifests(
        dir.path(),
        &[
            templated_service("web", &dual, "", "192.0.2.10"),
            templated_service("api", &["10.96.0.11", "fd00::11"], "", "192.0.2.20"),
        ]
        .join("---\n"),
    );
    ok(&extdns_with(&server, dir.path(), SECRET, &[FAILING_TEMPLATE]), "create");
    assert_eq!(server.dig("web.example.org", "A"), vec!["192.0.2.10"]);
    assert_eq!(server.dig("api.example.org", "A"), vec!["192.0.2.20"]);

    // `web` loses its second cluster IP: the template fails on it. `api` moves in the same sync.
    write_manifests(
        dir.path(),
        &[
            templated_service("web", &["10.96.0.10"], "", "192.0.2.10"),
            templated_service("api", &["10.96.0.11", "fd00::11"], "", "192.0.2.21"),
        ]
        .join("---\n"),
    );
    let out = extdns_with(&server, dir.path(), SECRET, &[FAILING_TEMPLATE]);
    ok(&out, "web fails, api moves");
    let log = text(&out);
    assert!(
        log.contains("default/web") && log.contains("FQDN template") && log.contains("kept"),
        "the warning names the object and the field: {log}"
    );
    assert_eq!(
        server.dig("web.example.org", "A"),
        vec!["192.0.2.10"],
        "web's record is kept"
    );
    assert_eq!(
        server.dig("api.example.org", "A"),
        vec!["192.0.2.21"],
        "api's change landed"
    );
    assert_eq!(
        ownership_records(&server),
        vec!["a-api.example.org", "a-web.example.org"]
    );

    // Deleting the object still deletes its records, failing or not.
    write_manifests(
        dir.path(),
        &templated_service("api", &["10.96.0.11", "fd00::11"], "", "192.0.2.21"),
    );
    ok(
        &extdns_with(&server, dir.path(), SECRET, &[FAILING_TEMPLATE]),
        "web deleted",
    );
    assert_eq!(server.dig("web.example.org", "A"), Vec::<String>::new());
    assert_eq!(server.dig("api.example.org", "A"), vec!["192.0.2.21"]);
    assert_eq!(ownership_records(&server), vec!["a-api.example.org"]);
}

#[test]
fn bind_an_invalid_target_annotation_keeps_the_services_records() {
    require!(Bind);
    let server = DnsServer::start(Kind::Bind, &[Zone::new("example.org")]);
    let dir = tempdir();
    let cdn = |target: &str| {
        templated_service(
            "cdn",
            &["10.96.0.30"],
            &format!(
                "    external-dns.kubernetes.io/hostname: cdn.example.org\n    \
                 external-dns.kubernetes.io/target: \"{target}\"\n"
            ),
            "192.0.2.30",
        )
    };
    let other = |ip: &str| lb_service("other", "other.example.org", &[ip], &[]);
    write_manifests(
        dir.path(),
        &[cdn("edge.example.net"), other("192.0.2.40")].join("---\n"),
    );
    ok(&extdns(&server, dir.path(), SECRET), "create");
    assert_eq!(server.dig("cdn.example.org", "CNAME"), vec!["edge.example.net."]);

    // The target becomes something no provider can write; the other Service moves in the same sync.
    write_manifests(dir.path(), &[cdn("1.2.3.4/24"), other("192.0.2.41")].join("---\n"));
    let out = extdns(&server, dir.path(), SECRET);
    ok(&out, "bad target");
    let log = text(&out);
    assert!(
        log.contains("default/cdn") && log.contains("target annotation") && log.contains("1.2.3.4/24"),
        "the warning names the object, the field and the value: {log}"
    );
    assert_eq!(server.dig("cdn.example.org", "CNAME"), vec!["edge.example.net."]);
    assert_eq!(server.dig("other.example.org", "A"), vec!["192.0.2.41"]);
    assert_eq!(
        ownership_records(&server),
        vec!["a-other.example.org", "cname-cdn.example.org"]
    );

    // Fixed: the Service evaluates again and its record follows.
    write_manifests(
        dir.path(),
        &[cdn("edge2.example.net"), other("192.0.2.41")].join("---\n"),
    );
    ok(&extdns(&server, dir.path(), SECRET), "fixed");
    assert_eq!(server.dig("cdn.example.org", "CNAME"), vec!["edge2.example.net."]);
}
