//! `extdns explain` over the live cluster and zone: Services on a real kube-apiserver (`EXTDNS_TEST_ETCD`,
//! `EXTDNS_TEST_KUBE_APISERVER`, `EXTDNS_TEST_KUBECTL`) and a BIND zone written by a real sync, explained
//! by the binary as a user runs it: published with its owner, in no zone, conflicting with another
//! object, and the refusal a dry run cannot know (BIND's update policy answers only a write).

use std::path::PathBuf;
use std::process::{Command, Output};

use extdns_test_support::cli;
use extdns_test_support::control_plane::{Binaries, ControlPlane};
use extdns_test_support::dns_server::{DnsServer, KEY_NAME, Kind, SECRET, Zone};
use extdns_test_support::require;
use serde_json::{Value, json};

type Error = Box<dyn std::error::Error>;

const OWNER: &str = "explain-live";

/// A LoadBalancer Service publishing `host`, its load balancer at `ingress` (`{"ip": ...}` or
/// `{"hostname": ...}`).
fn service(name: &str, host: &str, ingress: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {
            "name": name, "namespace": "default",
            "annotations": { "external-dns.kubernetes.io/hostname": host },
        },
        "spec": { "type": "LoadBalancer", "ports": [{ "port": 80 }] },
        "status": { "loadBalancer": { "ingress": [ingress] } },
    })
}

/// extdns with the flags of a Deployment against `cp` and `server`, then `args`.
fn extdns(cp: &ControlPlane, server: &DnsServer, args: &[&str]) -> Output {
    let mut cmd: Command = cli::command(env!("CARGO_BIN_EXE_extdns"), &[]);
    cmd.args(args)
        .arg(format!("--kubeconfig={}", cp.admin_kubeconfig.display()))
        .args(["--source=service", "--provider=rfc2136", "--registry=txt"])
        .arg(format!("--txt-owner-id={OWNER}"))
        .args([
            "--rfc2136-host=127.0.0.1",
            "--rfc2136-zone=example.org",
            "--rfc2136-axfr",
        ])
        .arg(format!("--rfc2136-port={}", server.port))
        .args(["--rfc2136-tsig-keyname", KEY_NAME, "--rfc2136-tsig-secret", SECRET])
        .arg("--rfc2136-tsig-secret-alg=hmac-sha256");
    cli::run(&mut cmd)
}

/// `extdns explain QUERY --output=json`: its exit code and JSON.
fn explain(cp: &ControlPlane, server: &DnsServer, query: &str) -> Result<(Option<i32>, Value), Error> {
    let out = extdns(cp, server, &["explain", query, "--output=json"]);
    let json = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("{query}: {e}: {}", String::from_utf8_lossy(&out.stderr)))?;
    Ok((out.status.code(), json))
}

/// The `askedBy` entry of `object` in the first name of `json`.
fn asked_by<'a>(json: &'a Value, object: &str) -> Option<&'a Value> {
    json["names"][0]["askedBy"]
        .as_array()?
        .iter()
        .find(|a| a["object"] == object)
}

#[test]
fn explain_on_a_real_api_server_and_bind_names_each_reason() -> Result<(), Error> {
    require!(Etcd, KubeApiserver, Kubectl, Bind);
    let bins = Binaries::control_plane_from_env(PathBuf::from(env!("CARGO_BIN_EXE_extdns")))?;
    let cp = ControlPlane::start(&bins)?;
    let server = DnsServer::start(Kind::Bind, &[Zone::new("example.org").refusing("refused.example.org")]);
    for s in [
        service("web", "web.example.org", json!({ "ip": "192.0.2.10" })),
        service("outside", "web.example.net", json!({ "ip": "192.0.2.11" })),
        service("refused", "refused.example.org", json!({ "ip": "192.0.2.12" })),
    ] {
        cp.kube.apply(&s)?;
    }
    // The sync writes `web` and fails on `refused`, which BIND's update policy refuses.
    let once = extdns(&cp, &server, &["--once"]);
    assert!(cli::text(&once).contains("REFUSED"), "{}", cli::text(&once));
    assert_eq!(server.dig("web.example.org", "A"), ["192.0.2.10"]);

    // Published: in the zone, ours, written for the Service; nothing left to do.
    let (code, json) = explain(&cp, &server, "web.example.org")?;
    assert_eq!(code, Some(0), "{json:#}");
    let name = &json["names"][0];
    assert_eq!(name["zone"], "example.org");
    assert_eq!(name["records"][0]["owner"], OWNER);
    assert_eq!(name["records"][0]["resource"], "service/default/web");
    assert_eq!(
        asked_by(&json, "service/default/web").map(|a| &a["reason"]),
        Some(&json!("Published"))
    );
    assert_eq!(name["nextSync"], json!([]));

    // Another object asks for a CNAME there: a conflict naming the Service that holds the name.
    cp.kube.apply(&service(
        "alias",
        "web.example.org",
        json!({ "hostname": "lb.example.net" }),
    ))?;
    let (code, json) = explain(&cp, &server, "service/default/alias")?;
    assert_eq!(code, Some(3), "{json:#}");
    let alias = asked_by(&json, "service/default/alias").ok_or("alias does not ask")?;
    assert_eq!(alias["reason"], "Conflict", "{json:#}");
    assert_eq!(alias["with"], json!({ "object": "service/default/web" }));

    // A name in none of the provider's zones.
    let (code, json) = explain(&cp, &server, "service/default/outside")?;
    assert_eq!(code, Some(3), "{json:#}");
    assert_eq!(json["names"][0]["noZone"], extdns_controller::PROVIDER_ZONES);
    assert_eq!(json["names"][0]["zones"], json!(["example.org"]));

    // BIND refused the write; a dry run cannot know that (only a write does), so explain says the next
    // sync would try again, and the name is still not in the zone.
    let (code, json) = explain(&cp, &server, "refused.example.org")?;
    assert_eq!(code, Some(0), "{json:#}");
    assert_eq!(json["names"][0]["records"], json!([]));
    assert_eq!(json["names"][0]["nextSync"][0]["action"], "create");
    assert_eq!(server.dig("refused.example.org", "A"), Vec::<String>::new());

    // Nothing explain did wrote anything: the zone is as the sync left it.
    assert_eq!(server.dig("web.example.org", "CNAME"), Vec::<String>::new());
    Ok(())
}
