//! `extdns plan` before a switch: external-dns v0.23.0 manages the zone (every source kind, `--once` into
//! BIND), then `extdns plan` with external-dns's flags must find nothing to change. After a new Service, a
//! changed load balancer address and a deleted Service it must list exactly those three changes, each with
//! the object responsible, and leave the zone as it was (same serial); the sync that follows makes them.
//! Last, a `kubectl get ... -A -o yaml` dump of the same cluster previews the same records through
//! `extdns endpoints`, the kinds extdns does not read counted on stderr.

use std::collections::BTreeSet;
use std::process::{Command, Output};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::controllers::{OWNER, Run, Which};
use crate::dns::{self, DnsServer};
use crate::objects as o;
use crate::proc::tail;

use super::{Ctx, sources};

pub fn run(ctx: &mut Ctx) -> Result<()> {
    let ns = ctx.namespace("plan")?;
    check(ctx, &ns)
}

fn check(ctx: &Ctx, ns: &str) -> Result<()> {
    let kube = &ctx.cp.kube;
    sources::create_every_kind(kube, ns)?;
    let server = dns::bind();
    super::differential::settle_external_dns(ctx, &Run::new(Which::ExternalDns, ns), &server, |_| true)?;

    let plan = plan_run(ns);
    let (out, unchanged) = planned(ctx, &plan, &server, &[])?;
    if out.status.code() != Some(0) || !String::from_utf8_lossy(&out.stdout).starts_with("no changes") {
        bail!("extdns plan on external-dns's zone: {}", report(&out));
    }
    unchanged?;
    eprintln!("  extdns plan on external-dns's zone: no changes, exit 0");

    kube.apply(&o::lb_at(ns, "added", "added.example.org", "203.0.113.60"))?;
    kube.apply(&sources::lb_ip(ns, "203.0.113.61"))?;
    kube.delete("v1", "Service", Some(ns), "lb-host")?;

    let (out, unchanged) = planned(ctx, &plan, &server, &["--output=json"])?;
    if out.status.code() != Some(2) {
        bail!("extdns plan after three changes: want exit 2, {}", report(&out));
    }
    unchanged?;
    let doc: Value = serde_json::from_slice(&out.stdout).context("extdns plan --output=json")?;
    let changes: Vec<String> = doc["changes"]
        .as_array()
        .context("no changes list")?
        .iter()
        .map(|c| {
            let targets = |side: &str| c[side]["targets"].as_array().map(|t| json!(t).to_string());
            format!(
                "{} {} {} {} {} {} -> {}",
                c["action"].as_str().unwrap_or("?"),
                c["name"].as_str().unwrap_or("?"),
                c["recordType"].as_str().unwrap_or("?"),
                c["owner"].as_str().unwrap_or("-"),
                c["resource"].as_str().unwrap_or("-"),
                targets("old").unwrap_or_else(|| "-".into()),
                targets("new").unwrap_or_else(|| "-".into()),
            )
        })
        .collect();
    let want = [
        format!("delete lb-host.example.org CNAME {OWNER} service/{ns}/lb-host [\"lb-1.elb.example.net\"] -> -"),
        format!("update lb-ip.example.org A {OWNER} service/{ns}/lb-ip [\"203.0.113.10\"] -> [\"203.0.113.61\"]"),
        format!("create added.example.org A {OWNER} service/{ns}/added - -> [\"203.0.113.60\"]"),
    ];
    if changes != want {
        bail!(
            "extdns plan listed:\n  {}\nwant:\n  {}",
            changes.join("\n  "),
            want.join("\n  ")
        );
    }
    // The zone's own records (the name server's address) are nobody's, and no name the cluster asks for.
    if doc["held"] != json!([]) || doc["notOwnedWanted"] != json!(0) {
        bail!("extdns plan held records, or found names the cluster asks for taken: {doc:#}");
    }
    eprintln!("  extdns plan after a create, an update and a delete: exactly those, exit 2, zone unchanged");

    // The sync does what the plan said, and then there is nothing left to plan.
    Run::new(Which::Extdns, ns).once(&ctx.cp, &server)?;
    for (name, t, answers) in [
        ("added.example.org", "A", vec!["203.0.113.60"]),
        ("lb-ip.example.org", "A", vec!["203.0.113.61"]),
        ("lb-host.example.org", "CNAME", vec![]),
    ] {
        let got = dns::answers(&server, name, t);
        if got != answers {
            bail!("after the sync, {name} {t}: want {answers:?}, got {got:?}");
        }
    }
    let (out, unchanged) = planned(ctx, &plan, &server, &[])?;
    if out.status.code() != Some(0) {
        bail!("extdns plan after the sync: {}", report(&out));
    }
    unchanged?;

    preview_of_a_dump(ctx, ns, &server)
}

/// `extdns plan` with the flags external-dns ran with.
fn plan_run(ns: &str) -> Run<'_> {
    Run {
        subcommand: Some("plan"),
        ..Run::new(Which::Extdns, ns)
    }
}

/// Runs `run` with `extra` flags; the second value fails if the zone changed meanwhile (serial or content).
fn planned(ctx: &Ctx, run: &Run<'_>, server: &DnsServer, extra: &[&str]) -> Result<(Output, Result<()>)> {
    let before = dns::zone(server)?;
    let serial = server.serial(dns::ZONE);
    let mut cmd = run.command(&ctx.cp, server)?;
    cmd.args(extra);
    let out = cmd.output().context("running extdns plan")?;
    let after = dns::zone(server)?;
    let unchanged = if server.serial(dns::ZONE) != serial || before != after {
        Err(anyhow::anyhow!(
            "extdns plan changed the zone (serial {serial} -> {}):\n{}",
            server.serial(dns::ZONE),
            dns::differences(&before, &after).join("\n")
        ))
    } else {
        Ok(())
    };
    Ok((out, unchanged))
}

fn report(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        tail(&String::from_utf8_lossy(&out.stdout), 30),
        tail(&String::from_utf8_lossy(&out.stderr), 30)
    )
}

/// A dump of the whole cluster, as a user would take it, previews the records extdns just wrote: every
/// endpoint of the preview is in the zone, the Services and Ingresses of the scenario are among them, and
/// the kinds extdns does not read are counted in one line.
fn preview_of_a_dump(ctx: &Ctx, ns: &str, server: &DnsServer) -> Result<()> {
    for args in [
        vec!["create", "configmap", "web-config", "--from-literal=listen=80"],
        vec![
            "create",
            "secret",
            "generic",
            "db-credentials",
            "--from-literal=password=secret",
        ],
        vec!["create", "deployment", "web", "--image=registry.example/web:1"],
    ] {
        kubectl(ctx, &[&args[..], &["--namespace", ns]].concat())?;
    }
    let dump = kubectl(
        ctx,
        &[
            "get",
            "all,configmaps,secrets,serviceaccounts,endpointslices,ingresses,nodes",
            "--all-namespaces",
            "--output=yaml",
        ],
    )?;
    let file = ctx.logs.join(format!("{ns}-dump.yaml"));
    std::fs::write(&file, &dump)?;

    let preview = Run {
        subcommand: Some("endpoints"),
        ..Run::new(Which::Extdns, ns)
    };
    let mut cmd = preview.command(&ctx.cp, server)?;
    cmd.arg(format!("--manifests={}", file.display())).arg("--output=json");
    let out = cmd.output().context("running extdns endpoints")?;
    if !out.status.success() {
        bail!("extdns endpoints over a kubectl dump: {}", report(&out));
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let skipped: Vec<&str> = stderr.lines().filter(|l| l.starts_with("skipped ")).collect();
    let [line] = skipped[..] else {
        bail!("want one line counting the skipped kinds:\n{stderr}");
    };
    for kind in ["ConfigMap (", "Secret (", "Deployment ("] {
        if !line.contains(kind) || !line.contains("of kinds extdns does not read: ") {
            bail!("the skipped kinds line does not count {kind}...): {line}");
        }
    }

    let endpoints: Vec<Value> = serde_json::from_slice(&out.stdout).context("extdns endpoints --output=json")?;
    let zone: BTreeSet<(String, String, String)> = dns::zone(server)?
        .into_iter()
        .map(|r| {
            let name = r.name.trim_end_matches('.').to_string();
            (name, r.rtype, r.rdata.trim_end_matches('.').to_string())
        })
        .collect();
    let mut names = BTreeSet::new();
    for e in &endpoints {
        let name = e["dnsName"].as_str().unwrap_or_default();
        let t = e["recordType"].as_str().unwrap_or_default();
        for target in e["targets"].as_array().into_iter().flatten() {
            let target = target.as_str().unwrap_or_default().trim_end_matches('.').to_string();
            if !zone.contains(&(name.to_string(), t.to_string(), target.clone())) {
                let held: Vec<_> = zone.iter().filter(|(n, _, _)| n == name).collect();
                bail!("the preview of the dump publishes {name} {t} {target}, which the zone does not hold: {held:?}");
            }
        }
        names.insert(name.to_string());
    }
    for name in [
        "added.example.org",
        "lb-ip.example.org",
        "db-0.db.example.org",
        "np.example.org",
        "_nodeport._tcp.np.example.org",
        "ing-a.example.org",
    ] {
        if !names.contains(name) {
            bail!("the preview of the dump lacks {name}: {names:?}");
        }
    }
    eprintln!(
        "  extdns endpoints over a kubectl dump ({} KiB): {} endpoints, all in the zone; {line}",
        dump.len() / 1024,
        endpoints.len()
    );
    Ok(())
}

/// kubectl with the admin kubeconfig; its stdout.
fn kubectl(ctx: &Ctx, args: &[&str]) -> Result<String> {
    let mut cmd: Command = ctx.cp.kubectl();
    cmd.args(args);
    let out = cmd.output().with_context(|| format!("kubectl {}", args.join(" ")))?;
    if !out.status.success() {
        bail!("kubectl {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8(out.stdout)?)
}
