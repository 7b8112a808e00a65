//! Shared names (docs/shared-names.md) through the whole binary on every provider whose record sets hold
//! several values: two owners each publish their own target of one shared A name, the provider holds their
//! union, and an owner that stops publishing the name takes only its own target (and its contribution record)
//! away. Each provider is the server or fake its own whole-controller test drives; every answer is read from
//! that server or fake, never from extdns.
//!
//! The built-in DNS server (`--provider=dns-server`) has no test here: its zones live in the process that
//! serves them and are built from that process's own cluster (it refuses RFC 2136 UPDATE), so a second owner
//! has no way to write into them.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use extdns_endpoint::RecordType;
use extdns_provider::InMemoryProvider;
use extdns_provider_webhook::{ServerOptions, start_server};
use extdns_test_support::azure_fake::{self, FakeAzure, Service};
use extdns_test_support::cli::{self, ok, tempdir, write_manifests};
use extdns_test_support::cloudflare_fake::{FakeCloudflare, TOKEN};
use extdns_test_support::dns_server::{DnsServer, KEY_NAME, Kind, SECRET, Zone};
use extdns_test_support::etcd::Etcd;
use extdns_test_support::google_fake::{FakeGoogle, PROJECT};
use extdns_test_support::pdns::{self, PowerDns};
use extdns_test_support::proc::{Proc, eventually};
use extdns_test_support::route53_fake::Fake;
use extdns_test_support::{free_port, require};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_extdns");
const NAME: &str = "web.example.org";

/// The DNSEndpoint `web` publishing `web.example.org A <target>`, marked shared one way or the other: the
/// object's annotation (every entry) or the entry's own `extdns/shared` property. The two owners use one
/// each, so both marks are proven on every provider.
fn shared_web(target: &str, by_annotation: bool) -> String {
    let (annotations, property) = if by_annotation {
        ("  annotations:\n    external-dns.kubernetes.io/shared: \"true\"\n", "")
    } else {
        ("", "      providerSpecific: [{name: extdns/shared, value: \"true\"}]\n")
    };
    format!(
        "apiVersion: externaldns.k8s.io/v1alpha1\nkind: DNSEndpoint\nmetadata:\n  name: web\n  namespace: default\n\
         {annotations}spec:\n  endpoints:\n    - dnsName: {NAME}\n      recordType: A\n      targets: [\"{target}\"]\n\
         {property}"
    )
}

/// The values an owner's contribution record to `web.example.org A` holds.
fn contribution(read: &impl Fn(&str, &str) -> Vec<String>, owner: &str) -> Vec<String> {
    read(&format!("{owner}._extdns-shared.a-{NAME}"), "TXT")
}

/// The whole check for one provider. `provider` gives the command with that provider's flags and
/// environment; `read` gives the values the provider holds at a name and type, sorted.
///
/// cluster-a's second run is a running process, not `--once`: a new process under an owner id whose
/// heartbeat another process wrote (here: cluster-a's own first run) takes the heartbeat over and writes
/// shared names only once it stayed its own for three heartbeat writes (docs/shared-names.md, Conflicts), which
/// a `--once` run never reaches.
fn two_owners_share_web_and_each_removes_only_its_own(
    provider: impl Fn() -> Command,
    read: impl Fn(&str, &str) -> Vec<String>,
) {
    let (a, b) = (tempdir(), tempdir());
    let extdns = |owner: &str, manifests: &Path| {
        let mut cmd = provider();
        cmd.args(["--source=crd", "--registry=txt", "--policy=sync"])
            .args(["--domain-filter=example.org", "--txt-owner-id", owner])
            .arg("--manifests")
            .arg(manifests);
        cmd
    };
    let once = |owner: &str, manifests: &Path| {
        ok(
            &cli::run(extdns(owner, manifests).arg("--once")),
            &format!("{owner}'s sync"),
        );
    };
    write_manifests(a.path(), &shared_web("192.0.2.1", true));
    write_manifests(b.path(), &shared_web("192.0.2.2", false));
    once("cluster-a", a.path());
    once("cluster-b", b.path());
    assert_eq!(
        read(NAME, "A"),
        ["192.0.2.1", "192.0.2.2"],
        "the union of both owners' targets"
    );
    for (owner, target) in [("cluster-a", "192.0.2.1"), ("cluster-b", "192.0.2.2")] {
        let held = contribution(&read, owner);
        assert!(
            held.iter()
                .any(|v| v.contains(&format!("owner={owner},")) && v.contains(&format!("targets={target}"))),
            "{owner}'s contribution: {held:?}"
        );
    }

    write_manifests(a.path(), "");
    let mut cmd = extdns("cluster-a", a.path());
    cmd.args(["--interval=1s", &format!("--metrics-address=127.0.0.1:{}", free_port())]);
    let mut running =
        Proc::spawn("extdns cluster-a", cmd, &a.path().join("extdns.log")).unwrap_or_else(|e| panic!("{e:#}"));
    let left = eventually(
        "cluster-a's target to leave",
        Duration::from_secs(60),
        Duration::from_millis(200),
        || Ok(Some(read(NAME, "A")).filter(|v| v.len() < 2)),
    );
    assert!(running.terminate(Duration::from_secs(10)), "SIGTERM stops it");
    let log = running.log_tail(30);
    assert_eq!(
        left.ok(),
        Some(vec!["192.0.2.2".to_string()]),
        "cluster-a took only its own target: {log}"
    );
    assert_eq!(
        contribution(&read, "cluster-a"),
        Vec::<String>::new(),
        "cluster-a's contribution went"
    );
    let held = contribution(&read, "cluster-b");
    assert!(
        held.len() == 1 && held[0].contains("owner=cluster-b,") && held[0].contains("targets=192.0.2.2"),
        "cluster-b's contribution is intact: {held:?}"
    );
}

/// The values of `name TYPE` among a fake's `name TYPE …` lines, `values` picking them from the rest of a
/// line; sorted.
fn from_lines(lines: Vec<String>, name: &str, rtype: &str, values: impl Fn(&str) -> Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = lines
        .iter()
        .filter_map(|l| {
            let (n, rest) = l.split_once(' ')?;
            let (t, rest) = rest.split_once(' ')?;
            (n.trim_end_matches('.') == name && t == rtype).then(|| values(rest))
        })
        .flatten()
        .collect();
    out.sort();
    out
}

#[test]
fn rfc2136_holds_two_owners_targets_and_each_removes_only_its_own() {
    require!(Bind);
    let server = DnsServer::start(Kind::Bind, &[Zone::new("example.org")]);
    let port = format!("--rfc2136-port={}", server.port);
    let provider = || {
        let mut cmd = cli::command(BIN, &[]);
        cmd.args([
            "--provider=rfc2136",
            "--rfc2136-host=127.0.0.1",
            &port,
            "--rfc2136-zone=example.org",
        ])
        .args(["--rfc2136-tsig-keyname", KEY_NAME, "--rfc2136-tsig-secret", SECRET])
        .args(["--rfc2136-tsig-secret-alg=hmac-sha256", "--rfc2136-axfr"]);
        cmd
    };
    two_owners_share_web_and_each_removes_only_its_own(provider, |name, t| server.dig(name, t));
}

#[test]
fn pdns_holds_two_owners_targets_and_each_removes_only_its_own() {
    require!(PowerDns);
    let server = PowerDns::start(&[pdns::Zone::new("example.org")]);
    let url = server.url();
    let provider = || {
        let mut cmd = cli::command(BIN, &[]);
        cmd.args([
            "--provider=pdns",
            "--pdns-server",
            &url,
            "--pdns-api-key",
            pdns::API_KEY,
        ]);
        cmd
    };
    two_owners_share_web_and_each_removes_only_its_own(provider, |name, t| server.dig(name, t));
}

#[test]
fn route53_holds_two_owners_targets_and_each_removes_only_its_own() {
    let fake = Fake::start_in_background();
    let zone = fake.zone("example.org", false, &[]);
    let provider = || {
        let mut cmd = cli::command(BIN, &["AWS_"]);
        cmd.env("AWS_ACCESS_KEY_ID", "AKIDE2E")
            .env("AWS_SECRET_ACCESS_KEY", "secret")
            .env("AWS_ENDPOINT_URL_ROUTE_53", &fake.url)
            .args(["--provider=aws", "--aws-batch-change-interval=0s"]);
        cmd
    };
    let read = |name: &str, t: &str| fake.find(&zone, name, t).map(|s| s.values()).unwrap_or_default();
    two_owners_share_web_and_each_removes_only_its_own(provider, read);
}

#[test]
fn cloudflare_holds_two_owners_targets_and_each_removes_only_its_own() {
    let cf = FakeCloudflare::start(&[("023e105f4ecef8ad9ca31a8372d0c353", "example.org")]);
    let provider = || {
        let mut cmd = cli::command(BIN, &["CF_"]);
        cmd.env("CF_API_TOKEN", TOKEN)
            .env("EXTDNS_CLOUDFLARE_API_URL", &cf.url)
            .args(["--provider=cloudflare", "--batch-change-interval=0s"]);
        cmd
    };
    // `name TYPE content proxied=… ttl=…`, one line a value.
    let content = |rest: &str| rest.split(" proxied=").next().map(str::to_string).into_iter().collect();
    two_owners_share_web_and_each_removes_only_its_own(provider, |name, t| from_lines(cf.lines(), name, t, content));
}

#[test]
fn google_holds_two_owners_targets_and_each_removes_only_its_own() {
    let fake = FakeGoogle::start(&[("example-org", "example.org")]);
    let home = tempdir();
    let key = fake.service_account_file(home.path());
    let dns_url = fake.dns_url();
    let provider = || {
        let mut cmd = cli::command(BIN, &["GOOGLE_", "GCE_", "CLOUDSDK_"]);
        cmd.env("GOOGLE_APPLICATION_CREDENTIALS", &key)
            .env("GCE_METADATA_HOST", &fake.host)
            .env("HOME", home.path())
            .env("EXTDNS_GOOGLE_API_URL", &dns_url)
            .args(["--provider=google", "--google-project", PROJECT])
            .arg("--google-batch-change-interval=0s");
        cmd
    };
    // `name type ttl data…`, one line an rrset.
    let rrdatas = |rest: &str| rest.split(' ').skip(1).map(str::to_string).collect();
    two_owners_share_web_and_each_removes_only_its_own(provider, |name, t| from_lines(fake.lines(), name, t, rrdatas));
}

#[test]
fn azure_holds_two_owners_targets_and_each_removes_only_its_own() {
    let fake = FakeAzure::start(&[(Service::Public, "example.org")]);
    let home = tempdir();
    let config = home.path().join("azure.json");
    let creds = json!({ "aadClientId": azure_fake::CLIENT_ID, "aadClientSecret": azure_fake::CLIENT_SECRET });
    std::fs::write(&config, fake.azure_json(creds)).unwrap_or_else(|e| panic!("{e}"));
    let provider = || {
        let mut cmd = cli::command(BIN, &["AZURE_", "EXTDNS_AZURE_"]);
        cmd.env("EXTDNS_AZURE_IMDS_URL", &fake.url)
            .args(["--provider=azure", "--azure-maxretries-count=3"])
            .arg(format!("--azure-config-file={}", config.display()));
        cmd
    };
    // `name TYPE properties`: every string under the set's `<TYPE>Records` (`ipv4Address`, a TXT's `value`).
    let read = |name: &str, t: &str| {
        let records = |rest: &str| {
            let properties: Value = serde_json::from_str(rest).unwrap_or_default();
            strings(&properties[format!("{t}Records")])
        };
        from_lines(fake.lines(), name, t, records)
    };
    two_owners_share_web_and_each_removes_only_its_own(provider, read);
}

/// Every string in a JSON value, depth first.
fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items.iter().flat_map(strings).collect(),
        Value::Object(fields) => fields.values().flat_map(strings).collect(),
        _ => Vec::new(),
    }
}

#[test]
fn coredns_holds_two_owners_targets_and_each_removes_only_its_own() {
    require!(Etcd);
    let etcd = Etcd::start();
    let provider = || {
        let mut cmd = cli::command(BIN, &["ETCD_"]);
        cmd.env("ETCD_URLS", &etcd.url).arg("--provider=coredns");
        cmd
    };
    // A name's records are the keys one label (a random id) below its reversed labels: `host` or `text`.
    let read = |name: &str, t: &str| {
        let labels: Vec<&str> = name.split('.').rev().collect();
        let prefix = format!("/skydns/{}/", labels.join("/"));
        let mut out: Vec<String> = etcd
            .dump(&prefix)
            .into_iter()
            .filter(|(key, _)| !key[prefix.len()..].contains('/'))
            .filter_map(|(_, value)| {
                let v: Value = serde_json::from_str(&value).unwrap_or_default();
                let field = if t == "TXT" { &v["text"] } else { &v["host"] };
                field.as_str().map(str::to_string)
            })
            .filter(|s| t != "A" || s.parse::<std::net::Ipv4Addr>().is_ok())
            .collect();
        out.sort();
        out
    };
    two_owners_share_web_and_each_removes_only_its_own(provider, read);
}

#[test]
fn webhook_holds_two_owners_targets_and_each_removes_only_its_own() -> Result<(), Box<dyn std::error::Error>> {
    // extdns's own webhook server over an in-memory backend, served by this test's runtime while the binary
    // (another process) talks to it.
    let runtime = tokio::runtime::Runtime::new()?;
    let shutdown = extdns_controller::CancellationToken::new();
    let _stop = shutdown.clone().drop_guard();
    let backend = Arc::new(InMemoryProvider::new(vec!["example.org".to_string()]));
    let server = runtime.block_on(start_server(
        "127.0.0.1:0",
        backend.clone(),
        ServerOptions::default(),
        shutdown.clone(),
    ))?;
    let url = format!("--webhook-provider-url=http://{}", server.local_addr);
    let provider = || {
        let mut cmd = cli::command(BIN, &[]);
        cmd.args(["--provider=webhook", &url]);
        cmd
    };
    let read = |name: &str, t: &str| {
        let mut out: Vec<String> = backend
            .snapshot()
            .into_iter()
            .filter(|e| e.dns_name == name && t.parse::<RecordType>().is_ok_and(|t| e.record_type == t))
            .flat_map(|e| e.targets.iter().map(|t| t.to_string()).collect::<Vec<_>>())
            .collect();
        out.sort();
        out
    };
    two_owners_share_web_and_each_removes_only_its_own(provider, read);
    Ok(())
}
