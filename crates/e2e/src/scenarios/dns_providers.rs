//! `dns-providers`: one provider object's life with `--dns-provider-crds` on the real API server, beside a
//! provider whose spec is refused. Added: it publishes and its status says `Synced` with its records, its
//! zone and extdns's finalizer. Changed: its pipeline is rebuilt from the new spec. Its Secret changed: the
//! pipeline is rebuilt with the new credentials (a wrong TSIG secret fails, the right one again syncs what
//! changed meanwhile). Deleted: its status says `Deleting` before extdns's finalizer goes, and its records
//! stay. The refused one says `ConfigInvalid` all along and never holds the other back. A third, of type
//! `dns-server`, binds its own listener from its config and answers for its zone.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use extdns_dnsprovider::{FINALIZER, ProviderKind};
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

use extdns_test_support::{dig, try_free_port};

use crate::dns::{self, DnsServer};
use crate::objects::{self as o, annotations};
use crate::proc::Proc;

use super::Ctx;
use super::providers::{SECRET_NAME, api, delete_providers, extdns, rfc2136, tsig_secret, wait_reason};
use super::wait::{answers, until_answers, while_alive};

/// A finalizer of the scenario's own, so that the object outlives extdns's and its last status can be read.
const HOLD: &str = "e2e.extdns.io/hold";

pub fn run(ctx: &mut Ctx) -> Result<()> {
    let ns = ctx.namespace("dns-providers")?;
    let server = dns::bind();
    let good = format!("{ns}-good");
    let bad = format!("{ns}-bad");
    let served = format!("{ns}-served");
    let port = try_free_port()?;
    let kube = &ctx.cp.kube;
    kube.apply(&tsig_secret(&ns, SECRET_NAME))?;
    let mut object = rfc2136(ProviderKind::Cluster, &ns, &good, server.port, json!({}), Some(&ns));
    object["metadata"]["finalizers"] = json!([HOLD]);
    kube.apply(&object)?;
    kube.apply(&rfc2136(
        ProviderKind::Cluster,
        &ns,
        &bad,
        server.port,
        json!({ "policy": "nonsense" }),
        Some(&ns),
    ))?;
    let web = |ip: &str| {
        o::lb_service(
            &ns,
            "web",
            annotations(&[("hostname", "web.example.org"), ("target", "198.51.100.1")]),
            json!([{ "ip": ip }]),
        )
    };
    kube.apply(&web("10.0.0.1"))?;
    kube.apply(&json!({
        "apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "ClusterDNSProvider",
        "metadata": { "name": served },
        "spec": {
            "type": "dns-server",
            "domainFilter": { "include": ["example.net"] },
            "config": { "dns-server-zone": "example.net", "dns-server-listen": format!("127.0.0.1:{port}") },
        },
    }))?;
    kube.apply(&o::lb_at(&ns, "www", "www.example.net", "10.0.0.9"))?;

    // The Secret is read again every --interval.
    let mut extdns = extdns(&ns)
        .flag("--interval=2s")
        .start_own_provider(&ctx.cp, &ctx.log("dns-providers"))?;
    let result = served_answers(ctx, &ns, &mut extdns, &served, port)
        .and_then(|()| steps(ctx, &ns, &mut extdns, &server, &good, &bad, &web));
    let cleanup = release(ctx, &good)
        .and_then(|()| delete_providers(ctx, &mut extdns, ProviderKind::Cluster, &ns, &[&bad, &served]));
    extdns.terminate(Duration::from_secs(5));
    result?;
    cleanup
}

fn steps(
    ctx: &Ctx,
    ns: &str,
    extdns: &mut Proc,
    server: &DnsServer,
    good: &str,
    bad: &str,
    web: &dyn Fn(&str) -> Value,
) -> Result<()> {
    let kube = &ctx.cp.kube;
    // Added: published, Synced, the finalizer on; the refused one beside it says why.
    answers(server, extdns, "web.example.org", "A", &["198.51.100.1"])?;
    let status = wait_object(
        ctx,
        extdns,
        good,
        "Synced with one record and extdns's finalizer",
        |o| {
            reason(o) == "Synced"
                && o["status"]["observedGeneration"] == 1
                && o["status"]["records"].as_u64().is_some_and(|n| n >= 1)
                && o["status"]["zones"] == json!([dns::ZONE])
                && o["status"]["lastSyncTime"].is_string()
                && finalizers(o).contains(&FINALIZER.to_string())
        },
    )?;
    println!("dns-providers: added: {}", status["status"]);
    let message = wait_reason(ctx, extdns, ProviderKind::Cluster, ns, bad, "ConfigInvalid")?;
    if !message.contains("--policy") {
        bail!("the refused provider's status does not name the flag: {message}");
    }
    println!("dns-providers: the refused one: ConfigInvalid: {message}");

    // Changed: the pipeline is rebuilt from generation 2.
    patch(
        ctx,
        good,
        json!({ "spec": { "config": { "ignore-target-annotation": true } } }),
    )?;
    answers(server, extdns, "web.example.org", "A", &["10.0.0.1"])?;
    wait_object(ctx, extdns, good, "Synced at generation 2", |o| {
        reason(o) == "Synced" && o["status"]["observedGeneration"] == 2
    })?;
    println!("dns-providers: changed: rebuilt at generation 2");

    // The Secret changed to a key BIND does not know: the sync fails, and a change waits.
    let mut wrong = tsig_secret(ns, SECRET_NAME);
    wrong["stringData"]["rfc2136-tsig-secret"] = json!("c2VjcmV0LXRoYXQtYmluZC1kb2VzLW5vdC1rbm93Cg==");
    kube.apply(&wrong)?;
    let failed = wait_object(ctx, extdns, good, "failing with the wrong TSIG secret", |o| {
        matches!(reason(o).as_str(), "SyncFailed" | "CredentialsInvalid")
    })?;
    println!(
        "dns-providers: Secret changed: {}: {}",
        reason(&failed),
        failed["status"]["conditions"][0]["message"]
    );
    kube.apply(&web("10.0.0.2"))?;
    std::thread::sleep(Duration::from_secs(3));
    if dns::answers(server, "web.example.org", "A") != ["10.0.0.1"] {
        bail!("a write went through with the wrong TSIG secret");
    }
    // The right one again: rebuilt, the change lands.
    kube.apply(&tsig_secret(ns, SECRET_NAME))?;
    answers(server, extdns, "web.example.org", "A", &["10.0.0.2"])?;
    wait_reason(ctx, extdns, ProviderKind::Cluster, ns, good, "Synced")?;
    println!("dns-providers: Secret restored: Synced, the change made meanwhile published");

    // Deleted: Deleting, then extdns's finalizer gone; the records stay.
    kube.delete("externaldns.k8s.io/v1alpha1", ProviderKind::Cluster.kind(), None, good)?;
    let deleting = wait_object(ctx, extdns, good, "Deleting, extdns's finalizer removed", |o| {
        reason(o) == "Deleting" && finalizers(o) == [HOLD]
    })?;
    let message = deleting["status"]["conditions"][0]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    if !message.contains("left in place") {
        bail!("the Deleting status does not say the records stay: {message}");
    }
    println!("dns-providers: deleted: Deleting: {message}");
    release(ctx, good)?;
    // Two intervals later the records are still there, with their ownership.
    std::thread::sleep(Duration::from_secs(5));
    if dns::answers(server, "web.example.org", "A") != ["10.0.0.2"] {
        bail!("the deleted provider's record is gone");
    }
    let zone = dns::zone(server)?;
    if !zone
        .iter()
        .any(|r| r.rtype == "TXT" && r.name.contains("web.example.org") && r.rdata.contains(good))
    {
        bail!("the deleted provider's ownership record is gone: {zone:?}");
    }
    // The refused one was never held back, nor freed by the other's going.
    wait_reason(ctx, extdns, ProviderKind::Cluster, ns, bad, "ConfigInvalid")?;
    Ok(())
}

/// The `dns-server` provider answers for its zone on the listener its config names.
fn served_answers(ctx: &Ctx, ns: &str, extdns: &mut Proc, name: &str, port: u16) -> Result<()> {
    let want = ["10.0.0.9".to_string()];
    let what = "www.example.net A answered by the dns-server provider";
    until_answers(extdns, what, Duration::from_millis(100), &want, || {
        dig::short_udp(port, "www.example.net", "A")
    })?;
    wait_reason(ctx, extdns, ProviderKind::Cluster, ns, name, "Synced")?;
    println!("dns-providers: the dns-server provider answers on its own listener");
    Ok(())
}

/// The Ready condition's reason.
fn reason(o: &Value) -> String {
    o["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Ready"))
        .and_then(|c| c["reason"].as_str())
        .unwrap_or_default()
        .to_string()
}

fn finalizers(o: &Value) -> Vec<String> {
    o["metadata"]["finalizers"]
        .as_array()
        .map(|f| f.iter().filter_map(|s| s.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// A merge patch to the ClusterDNSProvider `name`.
fn patch(ctx: &Ctx, name: &str, patch: Value) -> Result<()> {
    let api = api(ctx, ProviderKind::Cluster, "");
    ctx.cp
        .kube
        .block_on(api.patch(name, &PatchParams::default(), &Patch::Merge(&patch)))
        .with_context(|| format!("patching ClusterDNSProvider {name}"))?;
    Ok(())
}

/// Takes the scenario's finalizer off `name` (whatever extdns did), so that it can go.
fn release(ctx: &Ctx, name: &str) -> Result<()> {
    let api = api(ctx, ProviderKind::Cluster, "");
    let Some(object) = ctx.cp.kube.block_on(api.get_opt(name))? else {
        return Ok(());
    };
    let value = serde_json::to_value(&object)?;
    let kept: Vec<String> = finalizers(&value).into_iter().filter(|f| f != HOLD).collect();
    patch(ctx, name, json!({ "metadata": { "finalizers": kept } }))
}

/// Waits until the ClusterDNSProvider `name`, as JSON, satisfies `ok`; returns it.
fn wait_object(ctx: &Ctx, extdns: &mut Proc, name: &str, what: &str, ok: impl Fn(&Value) -> bool) -> Result<Value> {
    let api = api(ctx, ProviderKind::Cluster, "");
    let mut last = Value::Null;
    let r = while_alive(
        extdns,
        &format!("ClusterDNSProvider {name} {what}"),
        Duration::from_millis(200),
        || {
            let Some(object) = ctx.cp.kube.block_on(api.get_opt(name))? else {
                return Ok(None);
            };
            last = serde_json::to_value(&object)?;
            Ok(ok(&last).then(|| last.clone()))
        },
    );
    r.map_err(|e| {
        anyhow::anyhow!(
            "{e:#}; last {}\nextdns log:\n{}",
            json!({ "metadata": { "finalizers": last["metadata"]["finalizers"] }, "status": last["status"] }),
            extdns.log_tail(30)
        )
    })
}
