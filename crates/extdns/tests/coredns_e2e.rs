//! The whole controller against a real etcd: `extdns --once --provider=coredns` over manifests (manifests →
//! sources → plan → TXT registry → SkyDNS records in etcd), every result read back from etcd by the test's
//! own HTTP calls.

use std::path::Path;
use std::process::Output;

use extdns_test_support::cli::{self, ok, tempdir, text};
use extdns_test_support::etcd::Etcd;
use extdns_test_support::lines::owned_txt_names;
use extdns_test_support::{manifests, require};

const OWNER: &str = "e2e";
const PREFIX: &str = "/skydns/";

fn lb_service(name: &str, host: &str, ingress: &[&str]) -> String {
    manifests::lb_service(name, host, ingress, &[("external-dns.kubernetes.io/ttl", "120")])
}

fn write_manifests(dir: &Path, docs: &[String]) {
    cli::write_manifests(dir, &docs.join("---\n"));
}

fn extdns(etcd: &Etcd, manifests: &Path, extra: &[&str]) -> Output {
    let mut cmd = cli::command(env!("CARGO_BIN_EXE_extdns"), &["ETCD_"]);
    cmd.env("ETCD_URLS", &etcd.url)
        .args(["--once", "--source=service", "--provider=coredns", "--registry=txt"])
        .args(["--txt-owner-id", OWNER, "--domain-filter=example.org"])
        .args(["--manifests", &manifests.display().to_string()])
        .args(["--managed-record-types=A", "--managed-record-types=AAAA"])
        .args(["--managed-record-types=CNAME", "--managed-record-types=TXT"])
        .args(extra);
    cli::run(&mut cmd)
}

/// `name type target` of every record under the prefix, from the keys and values in etcd.
fn records(etcd: &Etcd) -> Vec<String> {
    let mut out: Vec<String> = etcd
        .dump(PREFIX)
        .into_iter()
        .map(|(key, value)| {
            let v: serde_json::Value = serde_json::from_str(&value).unwrap_or_default();
            let strip = v["targetstrip"].as_u64().unwrap_or(0) as usize;
            let mut labels: Vec<&str> = key.trim_start_matches(PREFIX).split('/').collect();
            labels.truncate(labels.len().saturating_sub(strip));
            labels.reverse();
            let name = labels.join(".");
            let ttl = v["ttl"].as_u64().unwrap_or(0);
            match (v["host"].as_str(), v["text"].as_str()) {
                (Some(host), _) => format!("{name} {ttl} {host}"),
                (None, Some(text)) => format!("{name} TXT {text}"),
                _ => format!("{name} ?"),
            }
        })
        .collect();
    out.sort();
    out
}

fn owned_txt(etcd: &Etcd) -> Vec<String> {
    owned_txt_names(records(etcd), OWNER)
}

#[test]
fn coredns_full_controller_create_update_delete_idempotent() {
    require!(Etcd);
    let etcd = Etcd::start();
    etcd.put(
        "/skydns/org/example/legacy/x1",
        r#"{"host":"192.0.2.99","targetstrip":1}"#,
    );
    let dir = tempdir();

    // 1. Create A + AAAA, CNAME; each with its ownership TXT.
    write_manifests(
        dir.path(),
        &[
            lb_service("web", "web.example.org", &["192.0.2.10", "2001:db8::10"]),
            lb_service("alias", "alias.example.org", &["lb.example.net"]),
        ],
    );
    // A dry run first: nothing is written.
    let rev = etcd.revision();
    ok(&extdns(&etcd, dir.path(), &["--dry-run"]), "dry run");
    assert_eq!(etcd.revision(), rev, "a dry run writes nothing");
    ok(&extdns(&etcd, dir.path(), &[]), "first sync");
    let all = records(&etcd);
    for want in [
        "web.example.org 120 192.0.2.10",
        "web.example.org 120 2001:db8::10",
        "alias.example.org 120 lb.example.net",
        "legacy.example.org 0 192.0.2.99",
    ] {
        assert!(all.iter().any(|r| r == want), "{want} missing from {all:?}");
    }
    assert_eq!(
        owned_txt(&etcd),
        ["a-web.example.org", "aaaa-web.example.org", "cname-alias.example.org"]
    );

    // 2. The same objects again: no write at all.
    let rev = etcd.revision();
    ok(&extdns(&etcd, dir.path(), &[]), "second sync");
    assert_eq!(etcd.revision(), rev, "a second run changes nothing");

    // 3. Update web's address, remove the alias Service.
    write_manifests(
        dir.path(),
        &[lb_service("web", "web.example.org", &["192.0.2.20", "2001:db8::10"])],
    );
    ok(&extdns(&etcd, dir.path(), &[]), "update sync");
    let all = records(&etcd);
    assert!(all.iter().any(|r| r == "web.example.org 120 192.0.2.20"), "{all:?}");
    assert!(
        !all.iter().any(|r| r.contains("192.0.2.10") || r.starts_with("alias.")),
        "{all:?}"
    );
    assert_eq!(
        owned_txt(&etcd),
        ["a-web.example.org", "aaaa-web.example.org"],
        "the alias's TXT went with it"
    );
    assert!(
        all.iter().any(|r| r == "legacy.example.org 0 192.0.2.99"),
        "a foreign record survives"
    );

    // 4. Everything removed: only the foreign record is left.
    write_manifests(dir.path(), &[]);
    ok(&extdns(&etcd, dir.path(), &[]), "delete sync");
    assert_eq!(records(&etcd), ["legacy.example.org 0 192.0.2.99"]);
}

#[test]
fn coredns_a_refused_record_fails_alone_and_the_others_land() {
    require!(Etcd);
    let etcd = Etcd::start();
    let dir = tempdir();
    // A NodePort Service asks for an SRV record, which CoreDNS does not serve from etcd; its A record and
    // the other Service still land.
    let np = "apiVersion: v1\nkind: Service\nmetadata:\n  name: np\n  namespace: default\n  annotations:\n    \
              external-dns.kubernetes.io/hostname: np.example.org\nspec:\n  type: NodePort\n  clusterIP: 10.96.0.12\n  \
              ports:\n    - name: http\n      port: 80\n      nodePort: 30080\n      protocol: TCP\n---\n\
              apiVersion: v1\nkind: Node\nmetadata:\n  name: node-1\nstatus:\n  addresses:\n    - type: ExternalIP\n      \
              address: 198.51.100.1\n";
    write_manifests(
        dir.path(),
        &[lb_service("web", "web.example.org", &["192.0.2.10"]), np.to_string()],
    );
    let out = extdns(&etcd, dir.path(), &["--managed-record-types=SRV"]);
    let text = text(&out);
    assert!(
        text.contains("_np._tcp.np.example.org SRV"),
        "the failure is named: {text}"
    );
    let all = records(&etcd);
    assert!(all.iter().any(|r| r == "web.example.org 120 192.0.2.10"), "{all:?}");
    assert!(all.iter().any(|r| r == "np.example.org 0 198.51.100.1"), "{all:?}");
    assert_eq!(
        owned_txt(&etcd),
        ["a-np.example.org", "a-web.example.org"],
        "no ownership record for the SRV"
    );
}
