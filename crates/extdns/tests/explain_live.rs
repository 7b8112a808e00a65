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

/// `extdns explain QUERY --dns-provider-crds` against `cp`, the providers from its DNSProvider and
/// ClusterDNSProvider objects; `extra` after.
fn explain_providers(cp: &ControlPlane, query: &str, extra: &[&str]) -> Output {
    let mut cmd: Command = cli::command(env!("CARGO_BIN_EXE_extdns"), &[]);
    cmd.args(["explain", query, "--dns-provider-crds", "--source=service"])
        .arg(format!("--kubeconfig={}", cp.admin_kubeconfig.display()))
        .args(extra);
    cli::run(&mut cmd)
}

/// An in-memory provider object: a ClusterDNSProvider when `namespace` is `None`, over `zone`.
fn provider_object(name: &str, namespace: Option<&str>, zone: &str) -> Value {
    let kind = if namespace.is_some() {
        "DNSProvider"
    } else {
        "ClusterDNSProvider"
    };
    json!({
        "apiVersion": "externaldns.k8s.io/v1alpha1", "kind": kind,
        "metadata": { "name": name, "namespace": namespace },
        "spec": { "type": "inmemory", "domainFilter": { "include": [zone] }, "config": { "inmemory-zone": [zone] } },
    })
}

#[test]
fn explain_with_provider_objects_on_a_real_api_server_names_the_provider_that_takes_each_name() -> Result<(), Error> {
    require!(Etcd, KubeApiserver, Kubectl);
    let bins = Binaries::control_plane_from_env(PathBuf::from(env!("CARGO_BIN_EXE_extdns")))?;
    let cp = ControlPlane::start(&bins)?;
    cp.kube
        .apply(&json!({ "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": "team-a" } }))?;
    cp.kube.apply(&provider_object("internal", None, "example.org"))?;
    cp.kube
        .apply(&provider_object("zone", Some("team-a"), "team-a.example.org"))?;
    let mut app = service("app", "app.team-a.example.org", json!({ "ip": "192.0.2.20" }));
    app["metadata"]["namespace"] = json!("team-a");
    for s in [
        service("web", "web.example.org", json!({ "ip": "192.0.2.10" })),
        service("lost", "lost.example.net", json!({ "ip": "192.0.2.11" })),
        app,
    ] {
        cp.kube.apply(&s)?;
    }

    // A name one provider takes: that provider, its zone and owner id (its name, by default).
    let out = explain_providers(&cp, "web.example.org", &["--output=json"]);
    assert_eq!(out.status.code(), Some(0), "{}", cli::text(&out));
    let json: Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(
        json["names"][0]["takenBy"],
        json!([{ "provider": "internal", "zone": "example.org", "owner": "internal", "reason": "Pending",
                 "published": true }]),
        "{json:#}"
    );
    assert_eq!(json["names"][0]["notTakenBy"][0]["provider"], "team-a/zone");

    // An object, in text: an object naming no provider goes to every ClusterDNSProvider and to its
    // namespace's DNSProviders, and both zones hold its name: two providers take it, and that is said.
    let out = explain_providers(&cp, "service/team-a/app", &[]);
    let text = cli::text(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("taken by:  internal (zone example.org, owner internal)  Pending")
            && text.contains("taken by:  team-a/zone (zone team-a.example.org, owner zone)  Pending"),
        "{text}"
    );
    assert!(
        text.contains("note:      2 providers take this name, each in its own zone: internal, team-a/zone"),
        "{text}"
    );
    assert!(text.contains("--- provider team-a/zone (owner zone)"), "{text}");

    // A name no provider takes: said, and why for each.
    let out = explain_providers(&cp, "lost.example.net", &["--output=json"]);
    assert_eq!(out.status.code(), Some(3), "{}", cli::text(&out));
    let json: Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(json["names"][0]["warning"], "no provider takes this name");
    assert_eq!(json["names"][0]["takenBy"], json!([]));
    Ok(())
}

/// extdns over `cp` and `server` as owner `owner`, with the service and crd sources and `skip.example.org`
/// excluded, then `args`.
fn extdns_as(cp: &ControlPlane, server: &DnsServer, owner: &str, args: &[&str]) -> Output {
    let mut cmd: Command = cli::command(env!("CARGO_BIN_EXE_extdns"), &[]);
    cmd.args(args)
        .arg(format!("--kubeconfig={}", cp.admin_kubeconfig.display()))
        .args([
            "--source=service",
            "--source=crd",
            "--provider=rfc2136",
            "--registry=txt",
        ])
        .arg(format!("--txt-owner-id={owner}"))
        .args(["--exclude-domains=skip.example.org", "--rfc2136-host=127.0.0.1"])
        .args(["--rfc2136-zone=example.org", "--rfc2136-axfr"])
        .arg(format!("--rfc2136-port={}", server.port))
        .args(["--rfc2136-tsig-keyname", KEY_NAME, "--rfc2136-tsig-secret", SECRET])
        .arg("--rfc2136-tsig-secret-alg=hmac-sha256");
    cli::run(&mut cmd)
}

/// A DNSEndpoint `recs` with one A record per `(name, target)`.
fn dnsendpoint(entries: &[(&str, &str)]) -> Value {
    let endpoints: Vec<Value> = entries
        .iter()
        .map(|(n, t)| json!({ "dnsName": n, "recordType": "A", "targets": [t] }))
        .collect();
    json!({
        "apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "DNSEndpoint",
        "metadata": { "name": "recs", "namespace": "default" },
        "spec": { "endpoints": endpoints },
    })
}

/// Every reason the issue names, on a real API server and BIND, asked by name and by object, in text and
/// JSON: the object's entry has the reason and its detail (the other party named), and the text says both.
#[test]
fn explain_on_a_real_api_server_and_bind_gives_each_reason_by_name_and_by_object_in_text_and_json() -> Result<(), Error>
{
    require!(Etcd, KubeApiserver, Kubectl, Bind);
    let bins = Binaries::control_plane_from_env(PathBuf::from(env!("CARGO_BIN_EXE_extdns")))?;
    let cp = ControlPlane::start(&bins)?;
    // The DNSEndpoint CRD as the chart ships it.
    let crd = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../charts/extdns/crds/dnsendpoints.externaldns.k8s.io.yaml");
    let crd: Value = serde_saphyr::from_str(&std::fs::read_to_string(crd)?)?;
    cp.kube.install_crds(&[serde_json::from_value(crd)?])?;
    let server = DnsServer::start(Kind::Bind, &[Zone::new("example.org")]);
    let ip = |ip: &str| json!({ "ip": ip });
    // Another owner's record: written by its own sync, of the objects labelled for it only.
    let mut theirs = service("theirs", "theirs.example.org", ip("192.0.2.30"));
    theirs["metadata"]["labels"] = json!({ "team": "other" });
    cp.kube.apply(&theirs)?;
    let other = extdns_as(&cp, &server, "other", &["--once", "--label-filter=team=other"]);
    cli::ok(&other, "the other owner's sync");
    // What our first sync writes: what is then published, held, or invalid.
    for s in [
        service("web", "web.example.org", ip("192.0.2.10")),
        service("held", "held.example.org", ip("192.0.2.11")),
    ] {
        cp.kube.apply(&s)?;
    }
    cp.kube.apply(&dnsendpoint(&[
        ("ok.example.org", "192.0.2.1"),
        ("bad.example.org", "192.0.2.2"),
    ]))?;
    cli::ok(&extdns_as(&cp, &server, OWNER, &["--once"]), "the first sync");
    assert_eq!(server.dig("web.example.org", "A"), ["192.0.2.10"]);
    assert_eq!(server.dig("theirs.example.org", "A"), ["192.0.2.30"]);

    // Then what the dry run sees.
    let broken = format!("held.example.org,{}.example.org", "x".repeat(64));
    for s in [
        service("held", &broken, ip("192.0.2.11")),
        service("fresh", "fresh.example.org", ip("192.0.2.12")),
        // A duplicate across objects: two CNAMEs at one name (addresses would be merged into one record).
        service("dup-a", "dup.example.org", json!({ "hostname": "lb-a.example.net" })),
        service("dup-b", "dup.example.org", json!({ "hostname": "lb-b.example.net" })),
        service("alias", "web.example.org", json!({ "hostname": "lb.example.net" })),
        service("skip", "skip.example.org", ip("192.0.2.15")),
        service("outside", "web.example.net", ip("192.0.2.16")),
    ] {
        cp.kube.apply(&s)?;
    }
    cp.kube.apply(&dnsendpoint(&[
        ("ok.example.org", "192.0.2.1"),
        ("bad.example.org", "not-an-address"),
    ]))?;

    // (what, name, object, reason, JSON detail, what the text line says)
    let cases: [(&str, &str, &str, &str, Value, &str); 9] = [
        (
            "published",
            "web.example.org",
            "service/default/web",
            "Published",
            json!({ "provider": "rfc2136", "zone": "example.org" }),
            "published by rfc2136 in zone example.org",
        ),
        (
            "pending",
            "fresh.example.org",
            "service/default/fresh",
            "Pending",
            json!({}),
            "",
        ),
        (
            "duplicate across objects",
            "dup.example.org",
            "service/default/dup-b",
            "Conflict",
            json!({ "with": { "object": "service/default/dup-a" } }),
            "held by object service/default/dup-a",
        ),
        (
            "conflicting with another object",
            "web.example.org",
            "service/default/alias",
            "Conflict",
            json!({ "with": { "object": "service/default/web" } }),
            "held by object service/default/web",
        ),
        (
            "owned by someone else",
            "theirs.example.org",
            "service/default/theirs",
            "Conflict",
            json!({ "with": { "owner": "other" } }),
            "held by owner id \"other\"",
        ),
        (
            "filtered by a flag",
            "skip.example.org",
            "service/default/skip",
            "Filtered",
            json!({ "flag": "--domain-filter/--exclude-domains" }),
            "--domain-filter/--exclude-domains",
        ),
        (
            "in none of the provider's zones",
            "web.example.net",
            "service/default/outside",
            "Filtered",
            json!({ "flag": extdns_controller::PROVIDER_ZONES }),
            extdns_controller::PROVIDER_ZONES,
        ),
        (
            "an invalid value",
            "bad.example.org",
            "crd/default/recs",
            "Invalid",
            json!({}),
            "spec.endpoints[1]",
        ),
        (
            "held because its object failed",
            "held.example.org",
            "service/default/held",
            "Held",
            json!({}),
            "the object could not be evaluated",
        ),
    ];
    for (what, name, object, reason, detail, said) in cases {
        let object_query = object.replace("crd/", "dnsendpoint/");
        for query in [name, object_query.as_str()] {
            let at = format!("{what}: asked as {query}");
            let out = extdns_as(&cp, &server, OWNER, &["explain", query, "--output=json"]);
            let json: Value =
                serde_json::from_slice(&out.stdout).map_err(|e| format!("{at}: {e}: {}", cli::text(&out)))?;
            let entry = json["names"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|n| n["name"] == name)
                .flat_map(|n| n["askedBy"].as_array().into_iter().flatten())
                .find(|a| a["object"] == object)
                .ok_or_else(|| format!("{at}: no entry for {object}\n{json:#}"))?;
            assert_eq!(entry["reason"], reason, "{at}\n{json:#}");
            for (key, value) in detail.as_object().into_iter().flatten() {
                assert_eq!(&entry[key], value, "{at}: {key}\n{json:#}");
            }
            // The exit code is the object's (a name may have other objects asking, as web.example.org has).
            if query != name {
                let published = matches!(reason, "Published" | "Pending");
                assert_eq!(out.status.code(), Some(if published { 0 } else { 3 }), "{at}\n{json:#}");
            }

            let out = extdns_as(&cp, &server, OWNER, &["explain", query]);
            let text = String::from_utf8_lossy(&out.stdout);
            let line = text
                .lines()
                .find(|l| l.contains(&format!("{object} ")) && l.contains(&format!("  {reason}")))
                .ok_or_else(|| format!("{at}: no line for {object}\n{}", cli::text(&out)))?;
            assert!(line.contains(said), "{at}: {line:?} says {said:?}\n{text}");
        }
    }
    // Nothing explain did wrote anything.
    assert_eq!(server.dig("fresh.example.org", "A"), Vec::<String>::new());
    Ok(())
}
