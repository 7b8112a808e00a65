//! A hand-over between two owner ids in two phases (issue 47): two extdns instances, `blue` and `green`,
//! each watching its own namespace of one API server (two "clusters"), on one BIND zone. Blue publishes
//! `web` and `api`; green asks for `web` identically and for `api` at another address. Without flags green
//! changes nothing. Phase 1, blue with `--txt-release-to-owner=green`: the records stay, each ownership
//! record says it is released. `extdns plan` for green with `--txt-adopt-from-owner=blue` previews one
//! update (web) and leaves the zone as it was. Phase 2, green with that flag: web's ownership record names
//! green, api (which differs) stays blue's. After each step every record is in the zone once, with one
//! ownership record, and answers as before; then neither changes the other's record, and a Service blue
//! deletes leaves the record green took.

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::dns::{self, DnsServer, Record};
use crate::objects as o;
use crate::proc::tail;

use super::Ctx;
use super::owners::{owner_run, unchanged};

const WEB: &str = "web.example.org";
const API: &str = "api.example.org";
const WEB_IP: &str = "203.0.113.70";
const API_IP: &str = "203.0.113.71";
const GREEN_API_IP: &str = "203.0.113.72";

pub fn run(ctx: &mut Ctx) -> Result<()> {
    let blue_ns = ctx.namespace("handover-blue")?;
    let green_ns = ctx.namespace("handover-green")?;
    let server = dns::bind();
    let kube = &ctx.cp.kube;
    kube.apply(&o::lb_at(&blue_ns, "web", WEB, WEB_IP))?;
    kube.apply(&o::lb_at(&blue_ns, "api", API, API_IP))?;
    kube.apply(&o::lb_at(&green_ns, "web", WEB, WEB_IP))?;
    kube.apply(&o::lb_at(&green_ns, "api", API, GREEN_API_IP))?;
    let blue = |flags: &[String]| owner_run(&blue_ns, "blue", flags);
    let green = |flags: &[String]| owner_run(&green_ns, "green", flags);

    blue(&[]).once(&ctx.cp, &server)?;
    expect(
        &server,
        "blue's first sync",
        &[(WEB, "blue", false), (API, "blue", false)],
    )?;
    let settled = dns::zone(&server)?;
    green(&[]).once(&ctx.cp, &server)?;
    unchanged(&server, &settled, "green without a hand-over flag")?;

    let release = ["--txt-release-to-owner=green".to_string()];
    blue(&release).once(&ctx.cp, &server)?;
    expect(
        &server,
        "phase 1 (blue releases)",
        &[(WEB, "blue", true), (API, "blue", true)],
    )?;
    eprintln!("  phase 1: blue's records released to green, unchanged");

    let adopt = ["--txt-adopt-from-owner=blue".to_string()];
    let released = dns::zone(&server)?;
    preview(ctx, &green_ns, &adopt, &server)?;
    unchanged(&server, &released, "extdns plan")?;
    green(&adopt).once(&ctx.cp, &server)?;
    expect(
        &server,
        "phase 2 (green adopts)",
        &[(WEB, "green", false), (API, "blue", true)],
    )?;
    eprintln!("  phase 2: green adopted web (identical); api (differs) stays blue's");

    let handed_over = dns::zone(&server)?;
    blue(&release).once(&ctx.cp, &server)?;
    green(&adopt).once(&ctx.cp, &server)?;
    green(&[]).once(&ctx.cp, &server)?;
    unchanged(&server, &handed_over, "a further sync of either")?;
    kube.delete("v1", "Service", Some(&blue_ns), "web")?;
    blue(&release).once(&ctx.cp, &server)?;
    expect(
        &server,
        "blue's web Service deleted",
        &[(WEB, "green", false), (API, "blue", true)],
    )?;
    Ok(())
}

/// Each of `want` (name, owner, released to the other) answers its address once and has exactly one
/// ownership record, naming its owner and (or not) the release.
fn expect(server: &DnsServer, when: &str, want: &[(&str, &str, bool)]) -> Result<()> {
    let zone = dns::zone(server)?;
    for &(name, owner, released) in want {
        let ip = if name == WEB { WEB_IP } else { API_IP };
        let a = dns::answers(server, name, "A");
        if a != [ip] {
            bail!("{when}: {name} A answers {a:?}, want [{ip}]");
        }
        let ownership: Vec<&Record> = dns::records_of(&zone, &format!("a-{name}"))
            .into_iter()
            .filter(|r| r.rtype == "TXT")
            .collect();
        let [record] = ownership.as_slice() else {
            bail!(
                "{when}: a-{name} holds {} ownership records: {ownership:?}",
                ownership.len()
            );
        };
        let says_owner = record.rdata.contains(&format!("external-dns/owner={owner}"));
        let says_released = record.rdata.contains("external-dns/released-to=");
        if !says_owner || says_released != released {
            bail!(
                "{when}: a-{name} is {:?}, want owner {owner}, released {released}",
                record.rdata
            );
        }
    }
    Ok(())
}

/// `extdns plan` for green adopting from blue: exactly one change, the update of web.
fn preview(ctx: &Ctx, green_ns: &str, adopt: &[String], server: &DnsServer) -> Result<()> {
    let mut run = owner_run(green_ns, "green", adopt);
    run.subcommand = Some("plan");
    let mut cmd = run.command(&ctx.cp, server)?;
    cmd.arg("--output=json");
    let out = cmd.output().context("running extdns plan")?;
    let report = || {
        format!(
            "exit {:?}\nstdout:\n{}\nstderr:\n{}",
            out.status.code(),
            tail(&String::from_utf8_lossy(&out.stdout), 30),
            tail(&String::from_utf8_lossy(&out.stderr), 30)
        )
    };
    if out.status.code() != Some(2) {
        bail!("extdns plan of the adoption: want exit 2, {}", report());
    }
    let doc: Value = serde_json::from_slice(&out.stdout).with_context(report)?;
    let changes: Vec<String> = doc["changes"]
        .as_array()
        .with_context(report)?
        .iter()
        .map(|c| {
            format!(
                "{} {}",
                c["action"].as_str().unwrap_or("?"),
                c["name"].as_str().unwrap_or("?")
            )
        })
        .collect();
    if changes != [format!("update {WEB}")] {
        bail!("extdns plan of the adoption listed {changes:?}, want one update of {WEB}");
    }
    eprintln!("  extdns plan previews the adoption: update {WEB}, the zone untouched");
    Ok(())
}
