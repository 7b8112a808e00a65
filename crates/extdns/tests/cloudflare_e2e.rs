//! The whole controller against the stateful Cloudflare fake: `extdns --once --provider=cloudflare` over
//! manifests (manifests → sources → plan → TXT registry → Cloudflare batch API), every result read from the
//! fake's state.

use std::path::Path;
use std::process::Output;

use extdns_test_support::cli::{self, ok, tempdir, text};
use extdns_test_support::cloudflare_fake::{FakeCloudflare, TOKEN};
use extdns_test_support::connector::GobEndpoint;
use extdns_test_support::differential::{self, Objects, TwoFakes};
use extdns_test_support::lines::owned_txt_names;
use extdns_test_support::manifests::{self, TLSA_DIGEST, TYPED_RECORD_FLAGS, lb_service, web};
use extdns_test_support::tls_proxy::TlsProxy;

const OWNER: &str = "e2e";
const ZONE: &str = "023e105f4ecef8ad9ca31a8372d0c353";

fn write_manifests(dir: &Path, docs: &[String]) {
    cli::write_manifests(dir, &docs.join("---\n"));
}

fn extdns(cf: &FakeCloudflare, manifests: &Path, extra: &[&str]) -> Output {
    let mut cmd = cli::command(env!("CARGO_BIN_EXE_extdns"), &["CF_"]);
    cmd.env("CF_API_TOKEN", TOKEN)
        .env("EXTDNS_CLOUDFLARE_API_URL", &cf.url)
        .args(["--once", "--source=service", "--provider=cloudflare", "--registry=txt"])
        .args([
            "--txt-owner-id",
            OWNER,
            "--domain-filter=example.org",
            "--batch-change-interval=0s",
        ])
        .args(["--manifests", &manifests.display().to_string()])
        .args(["--managed-record-types=A", "--managed-record-types=AAAA"])
        .args(["--managed-record-types=CNAME", "--managed-record-types=TXT"])
        .args(extra);
    cli::run(&mut cmd)
}

/// A fake Cloudflare account holding the zone example.org, and a directory for the manifests.
fn example_org() -> (FakeCloudflare, tempfile::TempDir) {
    (FakeCloudflare::start(&[(ZONE, "example.org")]), tempdir())
}

/// The records that are not ownership TXT records.
fn records(cf: &FakeCloudflare) -> Vec<String> {
    cf.lines()
        .into_iter()
        .filter(|l| !l.contains(" TXT \"heritage="))
        .collect()
}

fn owned_txt(cf: &FakeCloudflare) -> Vec<String> {
    owned_txt_names(cf.lines(), OWNER)
}

#[test]
fn cloudflare_full_controller_create_update_delete_idempotent() {
    let (cf, dir) = example_org();
    cf.seed(ZONE, "legacy.example.org", "A", "192.0.2.99");
    let alpha_proxied = [("external-dns.alpha.kubernetes.io/cloudflare-proxied", "true")];
    write_manifests(
        dir.path(),
        &[
            web(&["192.0.2.10", "2001:db8::10"]),
            lb_service("alias", "alias.example.org", &["lb.example.net"], &alpha_proxied),
        ],
    );
    // A dry run writes nothing.
    ok(&extdns(&cf, dir.path(), &["--dry-run"]), "dry run");
    assert_eq!(cf.state().requests.count("batch"), 0, "a dry run sends no batch");
    assert_eq!(cf.lines(), ["legacy.example.org A 192.0.2.99 proxied=false ttl=1"]);

    // 1. Create.
    ok(&extdns(&cf, dir.path(), &[]), "first sync");
    assert_eq!(
        records(&cf),
        [
            "alias.example.org CNAME lb.example.net proxied=true ttl=1",
            "legacy.example.org A 192.0.2.99 proxied=false ttl=1",
            "web.example.org A 192.0.2.10 proxied=false ttl=120",
            "web.example.org AAAA 2001:db8::10 proxied=false ttl=120",
        ]
    );
    assert_eq!(
        owned_txt(&cf),
        ["a-web.example.org", "aaaa-web.example.org", "cname-alias.example.org"]
    );

    // 2. The same objects again: nothing is written (proxied and TTL 1 are not seen as differences).
    let writes = cf.state().requests.writes();
    ok(&extdns(&cf, dir.path(), &[]), "second sync");
    assert_eq!(cf.state().requests.writes(), writes, "a second run changes nothing");

    // 3. Update web's address, un-proxy nothing, remove the alias.
    write_manifests(dir.path(), &[web(&["192.0.2.20", "2001:db8::10"])]);
    ok(&extdns(&cf, dir.path(), &[]), "update sync");
    assert_eq!(
        records(&cf),
        [
            "legacy.example.org A 192.0.2.99 proxied=false ttl=1",
            "web.example.org A 192.0.2.20 proxied=false ttl=120",
            "web.example.org AAAA 2001:db8::10 proxied=false ttl=120",
        ]
    );
    assert_eq!(owned_txt(&cf), ["a-web.example.org", "aaaa-web.example.org"]);

    // 4. Everything removed: only the foreign record stays.
    write_manifests(dir.path(), &[]);
    ok(&extdns(&cf, dir.path(), &[]), "delete sync");
    assert_eq!(cf.lines(), ["legacy.example.org A 192.0.2.99 proxied=false ttl=1"]);
}

#[test]
fn cloudflare_a_refused_record_fails_alone_and_the_others_land() {
    let (cf, dir) = example_org();
    // Cloudflare refuses a TTL under 60 seconds (9021); the other Service still lands, and the refused
    // record's ownership record does not land without it.
    write_manifests(
        dir.path(),
        &[
            lb_service("web", "web.example.org", &["192.0.2.10"], &[]),
            lb_service(
                "short",
                "short.example.org",
                &["192.0.2.11"],
                &[("external-dns.kubernetes.io/ttl", "30")],
            ),
        ],
    );
    // 429s on the way are waited out.
    cf.state().faults.throttle_next = 2;
    let out = extdns(&cf, dir.path(), &[]);
    let text = text(&out);
    assert!(
        text.contains("short.example.org A") && text.contains("9021"),
        "the failure is named: {text}"
    );
    assert_eq!(records(&cf), ["web.example.org A 192.0.2.10 proxied=false ttl=1"]);
    assert_eq!(owned_txt(&cf), ["a-web.example.org"]);
    assert_eq!(cf.state().requests.throttled(), 2);
}

/// A DNSEndpoint entry with its Cloudflare property under the canonical name, under a v0.22 name (the
/// annotation key), and under both.
fn dns_endpoint(name: &str, properties: &[(&str, &str)]) -> String {
    let properties: Vec<String> = properties
        .iter()
        .map(|(n, v)| format!("        - {{name: \"{n}\", value: \"{v}\"}}\n"))
        .collect();
    format!(
        "apiVersion: externaldns.k8s.io/v1alpha1\nkind: DNSEndpoint\nmetadata:\n  name: {name}\n  namespace: default\n\
         spec:\n  endpoints:\n    - dnsName: {name}.example.org\n      recordType: A\n      targets: [\"192.0.2.30\"]\n\
         \x20     providerSpecific:\n{}",
        properties.concat()
    )
}

/// external-dns v0.23 (#6731): DNSEndpoints name the property `cloudflare/proxied`; one written for v0.22
/// (`external-dns.kubernetes.io/cloudflare-proxied`) still proxies, and where both are set the canonical one
/// wins. A second run changes nothing.
#[test]
fn cloudflare_provider_specific_6731_dnsendpoint_names_canonical_and_legacy() {
    let (cf, dir) = example_org();
    write_manifests(
        dir.path(),
        &[
            dns_endpoint("canonical", &[("cloudflare/proxied", "true")]),
            dns_endpoint("legacy", &[("external-dns.kubernetes.io/cloudflare-proxied", "true")]),
            dns_endpoint(
                "both",
                &[
                    ("external-dns.kubernetes.io/cloudflare-proxied", "true"),
                    ("cloudflare/proxied", "false"),
                ],
            ),
        ],
    );
    let crd = ["--source=crd"];
    ok(&extdns(&cf, dir.path(), &crd), "first sync");
    assert_eq!(
        records(&cf),
        [
            "both.example.org A 192.0.2.30 proxied=false ttl=1",
            "canonical.example.org A 192.0.2.30 proxied=true ttl=1",
            "legacy.example.org A 192.0.2.30 proxied=true ttl=1",
        ]
    );
    let writes = cf.state().requests.writes();
    ok(&extdns(&cf, dir.path(), &crd), "second sync");
    assert_eq!(cf.state().requests.writes(), writes, "a second run changes nothing");
}

/// TLSA, HTTPS and SVCB from a DNSEndpoint through the whole controller: written as Cloudflare's `data`, each
/// with its ownership record (`tlsa-`, `https-`, `svcb-`), a second sync changes nothing (what is read back
/// compares equal to what the DNSEndpoint asks, the digest's case and the SvcParams' order aside), an update
/// and a delete land.
#[test]
fn cloudflare_tlsa_https_and_svcb_from_a_dns_endpoint_round_trip() {
    let (cf, dir) = example_org();
    let publish =
        |https: &str, with_tlsa: bool| write_manifests(dir.path(), &[manifests::typed_records(https, with_tlsa)]);
    publish("1 . port=8443 alpn=\"h2,h3\"", true);
    ok(&extdns(&cf, dir.path(), &TYPED_RECORD_FLAGS), "first sync");
    assert_eq!(
        records(&cf),
        [
            format!("_443._tcp.web.example.org TLSA 3 1 1 {TLSA_DIGEST} proxied=false ttl=1"),
            "_dns.example.org SVCB 0 svc.example.net. proxied=false ttl=1".to_string(),
            "web.example.org HTTPS 1 . alpn=h2,h3 port=8443 proxied=false ttl=1".to_string(),
        ]
    );
    assert_eq!(
        owned_txt(&cf),
        [
            "https-web.example.org",
            "svcb-_dns.example.org",
            "tlsa-_443._tcp.web.example.org"
        ]
    );
    let writes = cf.state().requests.writes();
    ok(&extdns(&cf, dir.path(), &TYPED_RECORD_FLAGS), "second sync");
    assert_eq!(cf.state().requests.writes(), writes, "a second sync changes nothing");

    publish("1 . alpn=h3", false);
    ok(&extdns(&cf, dir.path(), &TYPED_RECORD_FLAGS), "update and delete");
    assert_eq!(
        records(&cf),
        [
            "_dns.example.org SVCB 0 svc.example.net. proxied=false ttl=1",
            "web.example.org HTTPS 1 . alpn=h3 proxied=false ttl=1",
        ]
    );
    assert!(
        !owned_txt(&cf).iter().any(|n| n.starts_with("tlsa-")),
        "{:?}",
        owned_txt(&cf)
    );
}

/// external-dns v0.23.0 writes TLSA to Cloudflare (its only provider that does): from the same DNSEndpoint
/// entry, it and extdns leave the same records in their own fake (the record as `data`, its digest rendered
/// the same, the `tlsa-` ownership record), and each takes over the other's zone without a write.
#[test]
fn cloudflare_tlsa_beside_external_dns() {
    differential::in_loopback_namespace("cloudflare_tlsa_beside_external_dns", || {
        let start = || FakeCloudflare::start(&[(ZONE, "example.org")]);
        let fakes = TwoFakes::start(start, FakeCloudflare::addr, &["api.cloudflare.com"]);
        let objects = Objects::serve();
        let home = tempdir();
        let types = ["--managed-record-types=TLSA"];
        let ours = |cf: &FakeCloudflare| {
            let mut cmd = cli::command(env!("CARGO_BIN_EXE_extdns"), &["CF_"]);
            cmd.env("CF_API_TOKEN", TOKEN)
                .env("EXTDNS_CLOUDFLARE_API_URL", &cf.url)
                .args(["--once", "--source=crd", "--provider=cloudflare", "--registry=txt"])
                .args(["--txt-owner-id", OWNER, "--domain-filter=example.org"])
                .args(["--batch-change-interval=0s", "--manifests"])
                .arg(objects.dir.path())
                .args(types);
            cli::run(&mut cmd)
        };
        let theirs = |cf: &FakeCloudflare, proxy: &TlsProxy| {
            // Each fake answers as api.cloudflare.com through its own proxy; the fake is named for the reader.
            let _ = cf;
            let mut cmd = differential::external_dns(Some(proxy), home.path(), objects.source, &["CF_"]);
            cmd.env("CF_API_TOKEN", TOKEN)
                .args(["--registry=txt", "--txt-owner-id", OWNER, "--policy=sync"])
                .args(["--provider=cloudflare", "--domain-filter=example.org"])
                .args(types);
            cli::run(&mut cmd)
        };
        let zone = |cf: &FakeCloudflare| differential::without_resource_label(cf.lines(), "\"");
        let publish = |targets: &[&str]| {
            let tlsa: Vec<(&str, &str, &str)> = targets
                .iter()
                .map(|t| ("_443._tcp.web.example.org", "TLSA", *t))
                .collect();
            let endpoints = match targets {
                [] => Vec::new(),
                _ => vec![GobEndpoint::new("_443._tcp.web.example.org", "TLSA", targets, 0)],
            };
            let manifest = if targets.is_empty() {
                String::new()
            } else {
                manifests::dns_endpoint("web", &tlsa)
            };
            objects.publish(&manifest, endpoints);
        };
        let step = |what: &str| {
            ok(&ours(&fakes.ours), &format!("extdns: {what}"));
            ok(
                &theirs(&fakes.theirs, &fakes.to_theirs),
                &format!("external-dns: {what}"),
            );
            assert_eq!(zone(&fakes.ours), zone(&fakes.theirs), "{what}: the same records");
        };
        let first = format!("3 1 1 {TLSA_DIGEST}");
        publish(&[first.as_str()]);
        step("create");
        assert!(
            zone(&fakes.ours)
                .iter()
                .any(|l| l.starts_with("_443._tcp.web.example.org TLSA 3 1 1 ")),
            "{:?}",
            zone(&fakes.ours)
        );
        assert!(
            zone(&fakes.ours)
                .iter()
                .any(|l| l.starts_with("tlsa-_443._tcp.web.example.org TXT"))
        );
        let second = format!("3 1 1 {}", TLSA_DIGEST.to_lowercase().replace('3', "4"));
        publish(&[second.as_str()]);
        step("update");
        differential::assert_writes_nothing(
            "extdns on external-dns's zone",
            || fakes.theirs.state().requests.writes(),
            || ours(&fakes.theirs),
        );
        differential::assert_writes_nothing(
            "external-dns on extdns's zone",
            || fakes.ours.state().requests.writes(),
            || theirs(&fakes.ours, &fakes.to_ours),
        );
        publish(&[]);
        step("delete");
        assert_eq!(zone(&fakes.ours), Vec::<String>::new(), "delete: nothing left");
    });
}
