//! `--source=crd` on the real API server: external-dns v0.22's DNSEndpoint CRD (read from its chart, which
//! the harness copies out of the external-dns module) installed, DNSEndpoints published to BIND with
//! external-dns's target rules, a bad entry skipped while the rest of its object publishes,
//! `status.observedGeneration` written as external-dns writes it, and a published entry edited invalid
//! keeping its record (the entry-level hold) until it is fixed.

use std::time::Duration;

use anyhow::{Result, bail};
use serde_json::{Value, json};

use crate::controllers::{Run, Which};
use crate::dns::{self, DnsServer};
use crate::proc::Proc;
use crate::proc::eventually;

use super::Ctx;
use super::install::{
    apply_file, apply_json, from_env, get, helm_template, rendered_pod, repo, rfc2136_values, start_extdns, tsig_secret,
};
use super::wait::{self, alive, answers};

/// One A entry of a DNSEndpoint.
fn a_entry(name: &str, target: &str, ttl: i64) -> serde_json::Value {
    json!({"dnsName": name, "recordType": "A", "targets": [target], "recordTTL": ttl})
}

/// Edits the DNSEndpoint `web` (as `endpoint` builds one) down to the one A entry `name` at `ip`, and waits
/// until the server answers it: the step that shows a change of the object flows through the watch.
fn set_web(
    ctx: &Ctx,
    (server, extdns): (&DnsServer, &mut Proc),
    endpoint: impl Fn(&str, Value) -> Value,
    name: &str,
    ip: &str,
    ttl: i64,
) -> Result<()> {
    apply_json(ctx, &endpoint("web", json!([a_entry(name, ip, ttl)])))?;
    answers(server, extdns, name, "A", &[ip])
}

/// Applies `obj` as soon as the API server serves its kind (a CRD just installed takes a moment).
fn apply_once_served(ctx: &Ctx, crd: &str, obj: &serde_json::Value) -> Result<()> {
    eventually(
        &format!("{crd} serves"),
        Duration::from_secs(30),
        Duration::from_millis(200),
        || Ok(apply_json(ctx, obj).ok()),
    )
}

pub fn run(ctx: &mut Ctx) -> Result<()> {
    let ns = ctx.namespace("crd")?;
    let chart = from_env("EXTDNS_TEST_EXTERNAL_DNS_CHART")?;
    apply_file(ctx, &chart.join("crds/dnsendpoints.externaldns.k8s.io.yaml"))?;
    let server = dns::bind();
    let endpoint = |name: &str, entries: serde_json::Value| {
        json!({
            "apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "DNSEndpoint",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"endpoints": entries}
        })
    };
    apply_once_served(
        ctx,
        "the DNSEndpoint CRD",
        &endpoint(
            "web",
            json!([
                {"dnsName": "web.crd.example.org", "recordType": "A", "targets": ["203.0.113.10", "203.0.113.11"], "recordTTL": 120},
                {"dnsName": "bad.crd.example.org", "recordType": "A", "targets": ["203.0.113.12."]},
                {"dnsName": "_http._tcp.crd.example.org", "recordType": "SRV", "targets": ["0 5 80 web.crd.example.org."]},
                {"dnsName": "alias.crd.example.org", "recordType": "CNAME", "targets": ["web.crd.example.org."]}
            ]),
        ),
    )?;
    let run = Run::new(Which::Extdns, &ns)
        .flag("--source=crd")
        .flag("--events")
        .flag("--interval=1h");
    let mut extdns = run.start(&ctx.cp, &server, &ctx.log("crd-extdns"))?;
    answers(
        &server,
        &mut extdns,
        "web.crd.example.org",
        "A",
        &["203.0.113.10", "203.0.113.11"],
    )?;
    answers(
        &server,
        &mut extdns,
        "_http._tcp.crd.example.org",
        "SRV",
        &["0 5 80 web.crd.example.org."],
    )?;
    answers(
        &server,
        &mut extdns,
        "alias.crd.example.org",
        "CNAME",
        &["web.crd.example.org."],
    )?;
    if !dns::answers(&server, "bad.crd.example.org", "A").is_empty() {
        bail!("the entry with an illegal target published a record");
    }
    let warned = extdns
        .log_text()
        .lines()
        .any(|l| l.contains("WARN") && l.contains(&format!("{ns}/web")) && l.contains("spec.endpoints[1]"));
    if !warned {
        bail!(
            "no warning naming {ns}/web and spec.endpoints[1]:\n{}",
            extdns.log_tail(30)
        );
    }
    eventually(
        "status.observedGeneration written",
        Duration::from_secs(30),
        Duration::from_millis(200),
        || {
            let o = get(ctx, "dnsendpoints.externaldns.k8s.io", &ns, "web")?;
            let (generation, observed) = (&o["metadata"]["generation"], &o["status"]["observedGeneration"]);
            Ok((generation.is_number() && generation == observed).then_some(()))
        },
    )?;
    // A change of the object flows (the watch addresses the resource discovery found).
    set_web(
        ctx,
        (&server, &mut extdns),
        endpoint,
        "web.crd.example.org",
        "203.0.113.20",
        120,
    )?;
    answers(&server, &mut extdns, "alias.crd.example.org", "CNAME", &[])?;

    // The published entry edited invalid (a trailing dot on an A target, a negative TTL): skipped with a
    // warning naming the object and the entry, and its record kept, while a new valid entry beside it
    // publishes (so a sync ran after the edit).
    for (n, (bad, why)) in [
        (a_entry("web.crd.example.org", "203.0.113.21.", 120), "illegal target"),
        (
            a_entry("web.crd.example.org", "203.0.113.21", -1),
            "recordTTL -1 is negative",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let probe = format!("probe{n}.crd.example.org");
        let ip = format!("203.0.113.{}", 30 + n);
        apply_json(ctx, &endpoint("web", json!([bad, a_entry(&probe, &ip, 120)])))?;
        answers(&server, &mut extdns, &probe, "A", &[ip.as_str()])?;
        let kept = dns::answers(&server, "web.crd.example.org", "A");
        if kept != ["203.0.113.20"] {
            bail!("the record of the entry edited invalid ({bad}) is not kept: {kept:?}");
        }
        let warned = extdns.log_text().lines().any(|l| {
            l.contains("WARN") && l.contains(&format!("{ns}/web")) && l.contains("spec.endpoints[0]") && l.contains(why)
        });
        if !warned {
            bail!(
                "no warning naming {ns}/web, spec.endpoints[0] and {why:?}:\n{}",
                extdns.log_tail(30)
            );
        }
    }
    // The entry fixed: its record follows it, and the probe of the last round goes with its entry.
    set_web(
        ctx,
        (&server, &mut extdns),
        endpoint,
        "web.crd.example.org",
        "203.0.113.22",
        120,
    )?;
    answers(&server, &mut extdns, "probe1.crd.example.org", "A", &[])?;
    alive(&mut extdns)
}

/// The F5 NGINX case (external-dns issue #6414): DNSEndpoints of `externaldns.nginx.org/v1`, read with
/// `--crd-source-apiversion` and `--crd-source-kind` given to our chart in `extraArgs`, run with the
/// rendered RBAC (a token of the chart's ServiceAccount, so the grants must name that group). Records
/// publish, the status (observedGeneration and the conditions the CRD keeps) is written, Events name the
/// object in its group, and an entry outside the domain filter makes `Ready` `Filtered`.
pub fn custom_group(ctx: &mut Ctx) -> Result<()> {
    const GROUP: &str = "externaldns.nginx.org";
    let ns = ctx.namespace("crd-group")?;
    let server = dns::bind();
    let dir = tempfile::tempdir()?;
    apply_json(ctx, &nginx_crd())?;

    let mut values = rfc2136_values(&server, "crd-group");
    values["sources"] = json!(["crd"]);
    values["fullnameOverride"] = json!(format!("extdns-{ns}"));
    values["events"] = json!({"enabled": true, "types": ["RecordReady", "RecordError"]});
    values["extraArgs"]["crd-source-apiversion"] = json!(format!("{GROUP}/v1"));
    values["extraArgs"]["crd-source-kind"] = json!("DNSEndpoint");
    let file = helm_template(&repo().join("charts/extdns"), "e2e", &ns, &values, dir.path())?;
    apply_file(ctx, &file)?;
    apply_json(ctx, &tsig_secret(&ns, "tsig", "secret"))?;
    let release = format!("extdns-{ns}");
    let (c, kubeconfig) = rendered_pod(ctx, &ns, &release, "external-dns", &[], dir.path())?;

    let endpoint = |name: &str, entries: serde_json::Value| {
        json!({
            "apiVersion": format!("{GROUP}/v1"), "kind": "DNSEndpoint",
            "metadata": {"name": name, "namespace": ns, "labels": {"e2e-install": "crd-group"}},
            "spec": {"endpoints": entries}
        })
    };
    apply_once_served(
        ctx,
        "the externaldns.nginx.org CRD",
        &endpoint("web", json!([a_entry("web.nginx.example.org", "203.0.113.50", 60)])),
    )?;
    apply_json(
        ctx,
        &endpoint(
            "half",
            json!([
                {"dnsName": "half.nginx.example.org", "recordType": "A", "targets": ["203.0.113.51"]},
                {"dnsName": "bad.nginx.example.org", "recordType": "A", "targets": ["203.0.113.52."]}
            ]),
        ),
    )?;
    apply_json(
        ctx,
        &endpoint(
            "outside",
            json!([{"dnsName": "web.example.net", "recordType": "A", "targets": ["203.0.113.53"]}]),
        ),
    )?;
    // The upstream group's kind is not read (it is not even installed here).
    let mut extdns = start_extdns(ctx, &c, &kubeconfig, &[], "crd-group-extdns")?;
    answers(&server, &mut extdns, "web.nginx.example.org", "A", &["203.0.113.50"])?;
    answers(&server, &mut extdns, "half.nginx.example.org", "A", &["203.0.113.51"])?;
    if !dns::answers(&server, "bad.nginx.example.org", "A").is_empty() {
        bail!("the entry with an illegal target published a record");
    }

    let resource = format!("dnsendpoints.{GROUP}");
    let condition = |o: &serde_json::Value, type_: &str| -> Option<(String, String)> {
        o["status"]["conditions"]
            .as_array()?
            .iter()
            .find(|c| c["type"] == type_)
            .map(|c| {
                (
                    c["reason"].as_str().unwrap_or_default().to_string(),
                    c["message"].as_str().unwrap_or_default().to_string(),
                )
            })
    };
    for (name, accepted, ready, message) in [
        ("web", "Accepted", "Programmed", ""),
        ("half", "Invalid", "Programmed", ""),
        (
            "outside",
            "Accepted",
            "Filtered",
            "web.example.net A: outside the domain filter",
        ),
    ] {
        eventually(
            &format!("the status of {ns}/{name}: observedGeneration, Accepted {accepted}, Ready {ready}"),
            Duration::from_secs(30),
            Duration::from_millis(200),
            || {
                let o = get(ctx, &resource, &ns, name)?;
                let (generation, observed) = (&o["metadata"]["generation"], &o["status"]["observedGeneration"]);
                let ok = generation.is_number()
                    && generation == observed
                    && condition(&o, "Accepted").is_some_and(|(r, _)| r == accepted)
                    && condition(&o, "Ready").is_some_and(|(r, m)| r == ready && m.contains(message));
                Ok(ok.then_some(()))
            },
        )?;
    }
    let half = get(ctx, &resource, &ns, "half")?;
    if !condition(&half, "Accepted").is_some_and(|(_, m)| m.contains("spec.endpoints[1]")) {
        bail!(
            "Accepted of {ns}/half does not name spec.endpoints[1]: {}",
            half["status"]
        );
    }

    // Events name the objects in their group: found by uid there, as `kubectl describe` finds them.
    let uid = |name: &str| -> Result<String> {
        Ok(get(ctx, &resource, &ns, name)?["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_string())
    };
    let (web_uid, half_uid) = (uid("web")?, uid("half")?);
    wait::events(
        &ctx.cp.kube,
        &ns,
        "a RecordReady Event on web and an InvalidInput Warning on half, in externaldns.nginx.org/v1",
        |events| {
            let on = |uid: &str, reason: &str| {
                events.iter().any(|e| {
                    e["regarding"]["apiVersion"] == format!("{GROUP}/v1").as_str()
                        && e["regarding"]["kind"] == "DNSEndpoint"
                        && e["regarding"]["uid"] == uid
                        && e["reason"] == reason
                })
            };
            (on(&web_uid, "RecordReady") && on(&half_uid, "InvalidInput")).then_some(())
        },
    )?;

    // A change flows through the watch of the configured group.
    set_web(
        ctx,
        (&server, &mut extdns),
        endpoint,
        "web.nginx.example.org",
        "203.0.113.60",
        60,
    )?;
    alive(&mut extdns)
}

/// A DNSEndpoint CRD in `externaldns.nginx.org/v1`, as F5 NGINX Ingress Controller installs one: the same
/// spec as external-dns's, a status subresource whose schema keeps conditions.
pub(super) fn nginx_crd() -> serde_json::Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "dnsendpoints.externaldns.nginx.org"},
        "spec": {
            "group": "externaldns.nginx.org",
            "names": {"kind": "DNSEndpoint", "listKind": "DNSEndpointList", "plural": "dnsendpoints", "singular": "dnsendpoint"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "properties": {"endpoints": {"type": "array", "items": {
                            "type": "object", "x-kubernetes-preserve-unknown-fields": true
                        }}}},
                        "status": {"type": "object", "properties": {
                            "observedGeneration": {"type": "integer", "format": "int64"},
                            "conditions": {"type": "array", "items": {
                                "type": "object", "x-kubernetes-preserve-unknown-fields": true
                            }}
                        }}
                    }
                }}
            }]
        }
    })
}
