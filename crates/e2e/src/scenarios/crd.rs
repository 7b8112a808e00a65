//! `--source=crd` on the real API server: external-dns v0.22's DNSEndpoint CRD (read from its chart, which
//! the harness copies out of the external-dns module) installed, DNSEndpoints published to BIND with
//! external-dns's target rules, a bad entry skipped while the rest of its object publishes, and
//! `status.observedGeneration` written as external-dns writes it.

use std::time::Duration;

use anyhow::{Result, bail};
use serde_json::json;

use crate::controllers::{Run, Which};
use crate::dns;
use crate::proc::eventually;

use super::Ctx;
use super::install::{apply_file, apply_json, from_env, get};
use super::wait::{alive, answers};

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
    eventually(
        "the DNSEndpoint CRD serves",
        Duration::from_secs(30),
        Duration::from_millis(200),
        || {
            Ok(apply_json(ctx, &endpoint("web", json!([
            {"dnsName": "web.crd.example.org", "recordType": "A", "targets": ["203.0.113.10", "203.0.113.11"], "recordTTL": 120},
            {"dnsName": "bad.crd.example.org", "recordType": "A", "targets": ["203.0.113.12."]},
            {"dnsName": "_http._tcp.crd.example.org", "recordType": "SRV", "targets": ["0 5 80 web.crd.example.org."]},
            {"dnsName": "alias.crd.example.org", "recordType": "CNAME", "targets": ["web.crd.example.org."]}
        ]))).ok())
        },
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
    apply_json(
        ctx,
        &endpoint(
            "web",
            json!([
                {"dnsName": "web.crd.example.org", "recordType": "A", "targets": ["203.0.113.20"], "recordTTL": 120}
            ]),
        ),
    )?;
    answers(&server, &mut extdns, "web.crd.example.org", "A", &["203.0.113.20"])?;
    answers(&server, &mut extdns, "alias.crd.example.org", "CNAME", &[])?;
    alive(&mut extdns)
}
