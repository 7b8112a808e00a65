//! TLSA, HTTPS and SVCB from DNSEndpoints into BIND. TLSA, which external-dns v0.23.0 manages too, is
//! published by both from the same object, flags and owner: identical zones (ownership records
//! `tlsa-...` included), and each takes over the other's without a change. HTTPS and SVCB, which
//! external-dns does not know, are published by extdns alone and checked with `dig`, then updated and
//! deleted through the object.

use std::time::Duration;

use anyhow::{Result, bail};
use serde_json::json;

use crate::controllers::{Run, Which};
use crate::dns::{self, DnsServer};
use crate::proc::eventually;

use super::Ctx;
use super::differential::{apply_once_served, takeover};
use super::install::{apply_file, apply_json, from_env};

/// The TLSA record both controllers publish: a SHA-256 digest of a public key (usage 3, selector 1).
const TLSA_NAME: &str = "_443._tcp.tlsa.example.org";

fn tlsa_target() -> String {
    format!("3 1 1 {}", "0123456789abcdef".repeat(4))
}

/// `--source=crd` alone with these managed types beside the common set's (A, AAAA, CNAME, SRV), as both
/// controllers run.
fn crd_run<'a>(which: Which, ns: &'a str, types: &[&str]) -> Run<'a> {
    let mut run = Run::new(which, ns).flag("--source=crd");
    for t in types {
        run = run.flag(format!("--managed-record-types={t}"));
    }
    run.only_sources = true;
    run
}

fn dns_endpoint(ns: &str, name: &str, entries: serde_json::Value) -> serde_json::Value {
    json!({
        "apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "DNSEndpoint",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"endpoints": entries}
    })
}

pub fn run(ctx: &mut Ctx) -> Result<()> {
    let ns = ctx.namespace("record-types")?;
    let chart = from_env("EXTDNS_TEST_EXTERNAL_DNS_CHART")?;
    apply_file(ctx, &chart.join("crds/dnsendpoints.externaldns.k8s.io.yaml"))?;
    tlsa_like_external_dns(ctx, &ns)?;
    https_and_svcb(ctx, &ns)
}

/// TLSA by external-dns v0.23.0 and by extdns: identical zones, take-over clean both ways.
fn tlsa_like_external_dns(ctx: &Ctx, ns: &str) -> Result<()> {
    let tlsa = tlsa_target();
    apply_once_served(
        ctx,
        &[dns_endpoint(
            ns,
            "tlsa",
            json!([
                {"dnsName": TLSA_NAME, "recordType": "TLSA", "targets": [tlsa], "recordTTL": 300},
                {"dnsName": "tlsa.example.org", "recordType": "A", "targets": ["192.0.2.30"]}
            ]),
        )],
    )?;
    let types = ["TLSA"];
    let external_dns = crd_run(Which::ExternalDns, ns, &types);
    let extdns = crd_run(Which::Extdns, ns, &types);
    let theirs = dns::bind();
    let ours = dns::bind();
    external_dns.once(&ctx.cp, &theirs)?;
    extdns.once(&ctx.cp, &ours)?;
    for (server, who) in [(&theirs, "external-dns v0.23.0"), (&ours, "extdns")] {
        let got = server.dig_typed(TLSA_NAME, "TLSA");
        if got != [tlsa.clone()] {
            bail!("{who} published TLSA {got:?}, not {tlsa:?}");
        }
        if dns::owned_txt(&dns::zone(server)?, crate::controllers::OWNER).is_empty() {
            bail!("{who} wrote no ownership records");
        }
    }
    if !dns::zone(&ours)?
        .iter()
        .any(|r| r.name == format!("tlsa-{TLSA_NAME}.") && r.rtype == "TXT")
    {
        bail!("no tlsa- ownership record: {:?}", dns::zone(&ours)?);
    }
    dns::same_zones(&theirs, &ours, "from the TLSA DNSEndpoint")?;
    eprintln!("  identical zones with TLSA: {} records", dns::zone(&ours)?.len());
    takeover(ctx, &extdns, &theirs, "extdns on external-dns v0.23.0's TLSA zone")?;
    takeover(ctx, &external_dns, &ours, "external-dns v0.23.0 on extdns's TLSA zone")
}

/// HTTPS and SVCB by extdns: written as the entries say (in canonical text, as `dig` reads them back),
/// updated and deleted with the object.
fn https_and_svcb(ctx: &Ctx, ns: &str) -> Result<()> {
    let ours = dns::bind();
    let extdns = crd_run(Which::Extdns, ns, &["HTTPS", "SVCB"]);
    let object = |https: &str| {
        dns_endpoint(
            ns,
            "svcb",
            json!([
                {"dnsName": "web.example.org", "recordType": "HTTPS", "targets": [https]},
                {"dnsName": "_dns.example.org", "recordType": "SVCB",
                 "targets": ["1 dns.example.org. alpn=dot port=853", "0 pool.example.net."]},
                {"dnsName": "pool.example.org", "recordType": "SVCB", "targets": ["0 pool.example.net."]}
            ]),
        )
    };
    apply_json(ctx, &object(r#"1 . port=8443 alpn="h2,h3" ipv4hint=192.0.2.40"#))?;
    extdns.once(&ctx.cp, &ours)?;
    expect(
        &ours,
        "web.example.org",
        "HTTPS",
        &["1 . alpn=h2,h3 port=8443 ipv4hint=192.0.2.40"],
    )?;
    expect(&ours, "pool.example.org", "SVCB", &["0 pool.example.net."])?;
    expect(
        &ours,
        "_dns.example.org",
        "SVCB",
        &["0 pool.example.net.", "1 dns.example.org. alpn=dot port=853"],
    )?;
    takeover(ctx, &extdns, &ours, "extdns again on its HTTPS and SVCB records")?;

    apply_json(ctx, &object("2 svc.example.net. alpn=h3"))?;
    eventually(
        "extdns updates the HTTPS record",
        Duration::from_secs(30),
        Duration::from_millis(500),
        || {
            extdns.once(&ctx.cp, &ours)?;
            Ok((ours.dig_typed("web.example.org", "HTTPS") == ["2 svc.example.net. alpn=h3"]).then_some(()))
        },
    )?;
    let mut delete = ctx.cp.kubectl();
    delete.args(["delete", "dnsendpoints.externaldns.k8s.io", "svcb", "--namespace", ns]);
    crate::proc::output(delete)?;
    eventually(
        "extdns deletes the HTTPS and SVCB records",
        Duration::from_secs(30),
        Duration::from_millis(500),
        || {
            extdns.once(&ctx.cp, &ours)?;
            let left: Vec<String> = dns::zone(&ours)?
                .iter()
                .filter(|r| matches!(r.rtype.as_str(), "HTTPS" | "SVCB") || r.rdata.contains("/svcb\""))
                .map(ToString::to_string)
                .collect();
            if left.is_empty() {
                Ok(Some(()))
            } else {
                bail!("the zone still holds {left:?}")
            }
        },
    )?;
    eprintln!("  HTTPS and SVCB written, read back, updated and deleted");
    Ok(())
}

/// `name TYPE` on `server` holds exactly `want` (in canonical text).
fn expect(server: &DnsServer, name: &str, rtype: &str, want: &[&str]) -> Result<()> {
    let got = server.dig_typed(name, rtype);
    if got != want {
        bail!("{name} {rtype}: dig reads {got:?}, not {want:?}");
    }
    Ok(())
}
