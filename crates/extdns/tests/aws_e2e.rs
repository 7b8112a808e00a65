//! The whole controller against Route53: `extdns --once --provider=aws` over manifests (manifests →
//! sources → plan → TXT registry → Route53), against our strict Route53 fake (real Route53 semantics:
//! refused duplicates, atomic batches, exact deletes) and against moto's Route53.

use std::path::Path;
use std::process::Output;

use extdns_test_support::cli::{self, ok, tempdir, text, write_manifests};
use extdns_test_support::manifests::{self, alias, lb_service, node, node_port_service, web};
use extdns_test_support::route53_fake::{self as fake, Fake, Set, Value, Values};
use extdns_test_support::{moto, require};

const OWNER: &str = "e2e";

/// web (A + AAAA, TTL 120), alias (a CNAME to a load balancer outside AWS), elb (a CNAME to an AWS load
/// balancer: A and AAAA alias records), a NodePort Service (A from the node, SRV) and optionally `more`.
fn objects(web_ip: &str, with_alias: bool, more: &[String]) -> String {
    let mut docs = vec![web(&[web_ip, "2001:db8::10"])];
    if with_alias {
        docs.push(alias());
        docs.push(lb_service(
            "elb",
            "elb.example.org",
            &["my-lb-1.us-east-1.elb.amazonaws.com"],
            &[],
        ));
    }
    docs.push(node_port_service("np", "np.example.org"));
    docs.push(node("node-1", &[("ExternalIP", "198.51.100.1")]));
    docs.extend(more.iter().cloned());
    docs.join("---\n")
}

fn extdns(endpoint: &str, manifests: &Path, extra: &[&str]) -> Output {
    let keys = [("AWS_ACCESS_KEY_ID", "AKIDE2E"), ("AWS_SECRET_ACCESS_KEY", "secret")];
    extdns_env(endpoint, manifests, extra, &keys)
}

/// extdns with only these `AWS_*` variables (and Route53 at `endpoint`).
fn extdns_env(endpoint: &str, manifests: &Path, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = cli::command(env!("CARGO_BIN_EXE_extdns"), &["AWS_"]);
    cmd.envs(env.iter().copied())
        .env("AWS_ENDPOINT_URL_ROUTE_53", endpoint)
        .args(["--once", "--source=service", "--provider=aws", "--registry=txt"])
        .args(["--txt-owner-id", OWNER, "--domain-filter=example.org"])
        .args(["--manifests", &manifests.display().to_string()])
        .args(["--aws-batch-change-interval=0s"])
        .args([
            "--managed-record-types=A",
            "--managed-record-types=AAAA",
            "--managed-record-types=CNAME",
            "--managed-record-types=SRV",
        ])
        .args(extra);
    cli::run(&mut cmd)
}

fn values(set: &Option<Set>) -> Vec<String> {
    let mut v: Vec<String> = set
        .iter()
        .flat_map(|s| s.resource_records.iter().flat_map(|r| &r.items))
        .map(|v| v.value.clone())
        .collect();
    v.sort();
    v
}

/// The names of the ownership TXT records of our owner id.
fn owned(fake: &Fake, zone: &str) -> Vec<String> {
    let mut names: Vec<String> = fake
        .sets(zone)
        .into_iter()
        .filter(|s| {
            s.kind == "TXT"
                && values(&Some(s.clone()))
                    .iter()
                    .any(|v| v.contains("external-dns/owner=e2e"))
        })
        .map(|s| s.name.trim_end_matches('.').to_string())
        .collect();
    names.sort();
    names
}

/// A record set of one value, with a TTL of 300 s.
fn one_value(name: &str, kind: &str, value: &str) -> Set {
    let only = Value { value: value.into() };
    Set {
        name: name.into(),
        kind: kind.into(),
        ttl: Some(300),
        resource_records: Some(Values { items: vec![only] }),
        ..Set::default()
    }
}

fn foreign() -> Set {
    one_value("legacy.example.org.", "A", "192.0.2.99")
}

#[test]
fn strict_route53_full_controller_create_update_delete_idempotent() {
    let fake = Fake::start_in_background();
    let zone = fake.zone("example.org", false, &[]);
    let other = fake.zone("example.net", false, &[]);
    fake.put(&zone, foreign());
    let dir = tempdir();

    // 1. Create.
    write_manifests(dir.path(), &objects("192.0.2.10", true, &[]));
    ok(&extdns(&fake.url, dir.path(), &[]), "first sync");
    assert_eq!(values(&fake.find(&zone, "web.example.org", "A")), ["192.0.2.10"]);
    assert_eq!(fake.find(&zone, "web.example.org", "A").and_then(|s| s.ttl), Some(120));
    assert_eq!(values(&fake.find(&zone, "web.example.org", "AAAA")), ["2001:db8::10"]);
    assert_eq!(
        values(&fake.find(&zone, "alias.example.org", "CNAME")),
        ["lb.example.net"]
    );
    assert_eq!(values(&fake.find(&zone, "np.example.org", "A")), ["198.51.100.1"]);
    assert_eq!(
        values(&fake.find(&zone, "_np._tcp.np.example.org", "SRV")),
        ["0 50 30080 np.example.org."]
    );
    for kind in ["A", "AAAA"] {
        let alias = fake
            .find(&zone, "elb.example.org", kind)
            .and_then(|s| s.alias_target)
            .unwrap_or_else(|| panic!("elb.example.org {kind} is an alias: {:?}", fake.sets(&zone)));
        assert_eq!(alias.hosted_zone_id, "Z35SXDOTRQ7X7K");
        assert_eq!(alias.dns_name, "my-lb-1.us-east-1.elb.amazonaws.com");
        assert!(alias.evaluate_target_health);
    }
    assert!(fake.find(&zone, "elb.example.org", "CNAME").is_none());
    let all_owned = [
        "a-elb.example.org",
        "a-np.example.org",
        "a-web.example.org",
        "aaaa-elb.example.org",
        "aaaa-web.example.org",
        "cname-alias.example.org",
        "srv-_np._tcp.np.example.org",
    ];
    assert_eq!(owned(&fake, &zone), all_owned);
    assert!(fake.sets(&other).is_empty(), "nothing outside the domain filter");

    // 2. The same objects again: nothing to do.
    let batches = fake.lock().applied_batches.len();
    let out = extdns(&fake.url, dir.path(), &[]);
    ok(&out, "second sync");
    assert_eq!(
        fake.lock().applied_batches.len(),
        batches,
        "a second run changes nothing: {}",
        text(&out)
    );

    // 3. Update web's address, remove the alias and elb Services: an UPSERT and exact deletes.
    write_manifests(dir.path(), &objects("192.0.2.20", false, &[]));
    ok(&extdns(&fake.url, dir.path(), &[]), "update sync");
    assert_eq!(values(&fake.find(&zone, "web.example.org", "A")), ["192.0.2.20"]);
    assert!(fake.find(&zone, "alias.example.org", "CNAME").is_none());
    assert!(fake.find(&zone, "elb.example.org", "A").is_none());
    assert!(fake.find(&zone, "elb.example.org", "AAAA").is_none());
    let removed = |n: &&str| n.contains("alias") || n.contains("elb");
    let left: Vec<&str> = all_owned.into_iter().filter(|n| !removed(n)).collect();
    assert_eq!(
        owned(&fake, &zone),
        left,
        "the ownership records went with their records"
    );
    assert_eq!(
        fake.find(&zone, "legacy.example.org", "A"),
        Some(foreign()),
        "a foreign record survives"
    );
    assert_eq!(fake.lock().refused_batches, 0, "every delete matched exactly");

    // 4. Everything removed: extdns deletes what it owns, and only that.
    write_manifests(dir.path(), "");
    ok(&extdns(&fake.url, dir.path(), &[]), "delete sync");
    let left: Vec<String> = fake
        .sets(&zone)
        .iter()
        .map(|s| format!("{} {}", s.name, s.kind))
        .collect();
    assert_eq!(left, ["legacy.example.org. A"]);
}

#[test]
fn strict_route53_a_refused_record_fails_alone_and_the_others_land() {
    let fake = Fake::start_in_background();
    let zone = fake.zone("example.org", false, &[]);
    // Someone else's TXT record where our ownership record for taken.example.org would go.
    fake.put(&zone, one_value("a-taken.example.org.", "TXT", "\"someone else\""));
    let dir = tempdir();
    let taken = lb_service("taken", "taken.example.org", &["192.0.2.66"], &[]);
    write_manifests(dir.path(), &objects("192.0.2.10", true, &[taken]));
    let out = extdns(&fake.url, dir.path(), &[]);
    let all = text(&out);
    assert!(
        all.contains("taken.example.org A") && all.contains("already exists"),
        "the failure is named: {all}"
    );
    assert_eq!(values(&fake.find(&zone, "web.example.org", "A")), ["192.0.2.10"]);
    assert_eq!(
        values(&fake.find(&zone, "alias.example.org", "CNAME")),
        ["lb.example.net"]
    );
    assert!(
        fake.find(&zone, "taken.example.org", "A").is_none(),
        "no record without its ownership record"
    );
}

#[test]
fn strict_route53_dry_run_writes_nothing() {
    let fake = Fake::start_in_background();
    let zone = fake.zone("example.org", false, &[]);
    let dir = tempdir();
    write_manifests(dir.path(), &objects("192.0.2.10", true, &[]));
    ok(&extdns(&fake.url, dir.path(), &["--dry-run"]), "dry run");
    assert!(fake.sets(&zone).is_empty());
    let s = fake.lock();
    assert!(s.applied_batches.is_empty() && s.refused_batches == 0);
    assert!(
        s.requests.iter().all(|r| r.method == "GET"),
        "only reads: {:?}",
        s.requests.lines()
    );
}

/// Runs `sync` twice: the first must succeed (`what`), and the second finds nothing left to do.
fn synced_then_up_to_date(what: &str, sync: impl Fn() -> Output) {
    ok(&sync(), what);
    let out = sync();
    ok(&out, &format!("{what}, run again"));
    assert!(
        text(&out).contains("All records are already up to date"),
        "a second run changes nothing: {}",
        text(&out)
    );
}

/// moto with the public zone example.org, and a directory whose manifests are [`objects`] with web at
/// 192.0.2.10 (and the alias Service when `with_alias`).
fn moto_with_zone(with_alias: bool) -> (moto::Moto, tempfile::TempDir) {
    let moto = moto::Moto::start();
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => panic!("{e}"),
    };
    rt.block_on(moto.zone("example.org", false, &[]));
    let dir = tempdir();
    write_manifests(dir.path(), &objects("192.0.2.10", with_alias, &[]));
    (moto, dir)
}

/// The credential chain from the binary: web identity with no static keys, then static keys and
/// `--aws-assume-role`; both against moto's STS and Route53. A second run finding nothing to do shows the first
/// one wrote.
#[test]
fn moto_through_web_identity_and_through_an_assumed_role() {
    require!(Moto);
    let (moto, dir) = moto_with_zone(false);
    let token = dir.path().join("token");
    if let Err(e) = std::fs::write(&token, "eyJhbGciOiJSUzI1NiJ9.e30.c2ln") {
        panic!("{e}");
    }
    let home = dir.path().display().to_string();
    let token = token.display().to_string();
    let irsa = [
        ("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/extdns"),
        ("AWS_WEB_IDENTITY_TOKEN_FILE", token.as_str()),
        ("AWS_ENDPOINT_URL_STS", moto.url.as_str()),
        ("AWS_EC2_METADATA_DISABLED", "true"),
        ("HOME", home.as_str()),
    ];
    synced_then_up_to_date("web identity sync", || extdns_env(&moto.url, dir.path(), &[], &irsa));

    let keys = [
        ("AWS_ACCESS_KEY_ID", "AKIDE2E"),
        ("AWS_SECRET_ACCESS_KEY", "secret"),
        ("AWS_ENDPOINT_URL_STS", moto.url.as_str()),
        ("HOME", home.as_str()),
    ];
    let role = [
        "--aws-assume-role=arn:aws:iam::123456789012:role/dns",
        "--aws-assume-role-external-id=x",
    ];
    write_manifests(dir.path(), "");
    synced_then_up_to_date("delete through the role", || {
        extdns_env(&moto.url, dir.path(), &role, &keys)
    });

    // Nothing anywhere: the error names every source tried.
    let none = [("AWS_EC2_METADATA_DISABLED", "true"), ("HOME", home.as_str())];
    let out = extdns_env(&moto.url, dir.path(), &[], &none);
    assert!(!out.status.success());
    let text = text(&out);
    for source in [
        "environment",
        "web identity",
        "shared files",
        "container",
        "instance metadata",
    ] {
        assert!(text.contains(source), "{source} missing from: {text}");
    }
}

#[test]
fn moto_full_controller_create_then_nothing_then_delete() {
    require!(Moto);
    let (moto, dir) = moto_with_zone(true);
    synced_then_up_to_date("first sync", || extdns(&moto.url, dir.path(), &[]));
    write_manifests(dir.path(), "");
    synced_then_up_to_date("delete sync", || extdns(&moto.url, dir.path(), &[]));
}

#[test]
fn strict_route53_an_alias_owned_through_an_old_cname_txt_gets_its_a_and_aaaa_ownership_records() {
    let fake = Fake::start_in_background();
    let zone = fake.zone("example.org", false, &[]);
    // What an older external-dns left: an A alias record owned through a `cname-` TXT record.
    fake.put(
        &zone,
        Set {
            name: "old.example.org.".into(),
            kind: "A".into(),
            alias_target: Some(fake::Alias {
                hosted_zone_id: "Z35SXDOTRQ7X7K".into(),
                dns_name: "my-lb-1.us-east-1.elb.amazonaws.com".into(),
                evaluate_target_health: true,
            }),
            ..Set::default()
        },
    );
    fake.put(
        &zone,
        one_value(
            "cname-old.example.org.",
            "TXT",
            "\"heritage=external-dns,external-dns/owner=e2e,external-dns/resource=service/default/old\"",
        ),
    );
    let dir = tempdir();
    write_manifests(
        dir.path(),
        &lb_service("old", "old.example.org", &["my-lb-1.us-east-1.elb.amazonaws.com"], &[]),
    );
    let out = extdns(&fake.url, dir.path(), &[]);
    ok(&out, "sync");
    assert_eq!(fake.lock().refused_batches, 0, "{}", text(&out));
    assert!(
        fake.find(&zone, "old.example.org", "A")
            .and_then(|s| s.alias_target)
            .is_some()
    );
    assert!(
        fake.find(&zone, "old.example.org", "AAAA")
            .and_then(|s| s.alias_target)
            .is_some()
    );
    let owners = owned(&fake, &zone);
    assert!(
        owners.contains(&"a-old.example.org".to_string()) && owners.contains(&"aaaa-old.example.org".to_string()),
        "{owners:?}"
    );
    // A second run has nothing left to do.
    let batches = fake.lock().applied_batches.len();
    ok(&extdns(&fake.url, dir.path(), &[]), "second sync");
    assert_eq!(fake.lock().applied_batches.len(), batches);
}

/// TLSA, HTTPS and SVCB from a DNSEndpoint through the whole controller into the strict Route53 fake:
/// values in presentation format, each with its `tlsa-`/`https-`/`svcb-` ownership record; a second sync
/// writes nothing (what is read back compares equal to what the DNSEndpoint asks, the digest's case and the
/// SvcParams' order aside), an update and a delete land.
#[test]
fn strict_route53_tlsa_https_and_svcb_from_a_dns_endpoint_round_trip() {
    let fake = Fake::start_in_background();
    let zone = fake.zone("example.org", false, &[]);
    let dir = tempdir();
    let digest = manifests::TLSA_DIGEST;
    let publish =
        |https: &str, with_tlsa: bool| write_manifests(dir.path(), &manifests::typed_records(https, with_tlsa));
    let types = manifests::TYPED_RECORD_FLAGS;
    publish("1 . port=8443 alpn=\"h2,h3\"", true);
    ok(&extdns(&fake.url, dir.path(), &types), "first sync");
    assert_eq!(
        values(&fake.find(&zone, "_443._tcp.web.example.org", "TLSA")),
        [format!("3 1 1 {}", digest.to_lowercase())]
    );
    assert_eq!(
        values(&fake.find(&zone, "web.example.org", "HTTPS")),
        ["1 . alpn=h2,h3 port=8443"]
    );
    assert_eq!(
        values(&fake.find(&zone, "_dns.example.org", "SVCB")),
        ["0 svc.example.net."]
    );
    assert_eq!(
        owned(&fake, &zone),
        [
            "https-web.example.org",
            "svcb-_dns.example.org",
            "tlsa-_443._tcp.web.example.org"
        ]
    );
    let batches = fake.lock().applied_batches.len();
    ok(&extdns(&fake.url, dir.path(), &types), "second sync");
    assert_eq!(
        fake.lock().applied_batches.len(),
        batches,
        "a second sync changes nothing"
    );
    publish("1 . alpn=h3", false);
    ok(&extdns(&fake.url, dir.path(), &types), "update and delete");
    assert_eq!(values(&fake.find(&zone, "web.example.org", "HTTPS")), ["1 . alpn=h3"]);
    assert!(fake.find(&zone, "_443._tcp.web.example.org", "TLSA").is_none());
    assert!(!owned(&fake, &zone).iter().any(|n| n.starts_with("tlsa-")));
}
