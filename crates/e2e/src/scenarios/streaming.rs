//! `streaming-lists`: extdns's initial lists on the real API server, read from its audit log.
//!
//! With WatchList (kube-apiserver v1.36's default) every kind is listed by one streaming watch
//! (`sendInitialEvents=true`) and never by a LIST. On an API server started with `--feature-gates=WatchList=false`
//! that watch is refused (422); extdns says so once and lists every kind in pages instead, and publishes
//! the same record. Pods are asked for only by a selector covering what the headless Service selects.

use std::collections::BTreeSet;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::control_plane::ControlPlane;
use crate::controllers::{Run, Which};
use crate::dns;
use crate::objects as o;

use super::Ctx;

const NS: &str = "streaming";
const HOST: &str = "web.streaming.example.org";
const ADDRESS: &str = "203.0.113.150";
/// The resources `--source=service` watches.
const RESOURCES: [&str; 4] = ["services", "endpointslices", "pods", "nodes"];
/// The label selector of every Pod request: what the headless Service `db` selects.
const POD_SELECTOR: &str = "labelSelector=app+in+%28db%29";

pub fn run(ctx: &mut Ctx) -> Result<()> {
    let bins = ctx.cp.binaries().clone();
    for watch_list in [true, false] {
        let gates: &[&str] = if watch_list { &[] } else { &["WatchList=false"] };
        eprintln!("  WatchList {}", if watch_list { "on" } else { "off" });
        let cp = ControlPlane::start_audited_with_feature_gates(&bins, gates)?;
        cp.kube.namespace(NS, json!({ "extdns-e2e": NS }))?;
        cp.kube.apply(&o::lb_at(NS, "web", HOST, ADDRESS))?;
        cp.kube
            .apply(&o::headless_service(NS, "db", "db", o::annotations(&[])))?;
        cp.kube.apply(&o::pod(NS, "db-0", "db", "10.0.0.5", "node-1"))?;
        let server = dns::bind();
        let mut run = Run::new(Which::Extdns, NS).flag("--source=service");
        run.only_sources = true;
        let out = run.once(&cp, &server)?;
        let log = String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
        let label = if watch_list { "on" } else { "off" };
        std::fs::write(ctx.log(&format!("streaming-lists-{label}-extdns")), &log)?;
        let answers = dns::answers(&server, HOST, "A");
        if answers != [ADDRESS] {
            bail!("WatchList {label}: {HOST} answers {answers:?}, want {ADDRESS}");
        }
        let audit = cp.audit_log.as_ref().context("the control plane is audited")?;
        let events = audit_events(audit)?;
        std::fs::write(
            ctx.log(&format!("streaming-lists-{label}-audit")),
            events.iter().map(|e| e.to_string() + "\n").collect::<String>(),
        )?;
        let fallbacks = log.matches("does not serve streaming lists").count();
        for resource in RESOURCES {
            let of = |verb: &str, streaming: bool, code: Option<u64>| {
                events
                    .iter()
                    .filter(|e| {
                        let uri = e["requestURI"].as_str().unwrap_or_default();
                        e["verb"] == verb
                            && uri
                                .split('?')
                                .next()
                                .is_some_and(|p| p.ends_with(&format!("/{resource}")))
                            && uri.contains("sendInitialEvents=true") == streaming
                            && code.is_none_or(|c| e["responseStatus"]["code"].as_u64() == Some(c))
                    })
                    .count()
            };
            let (lists, streamed, refused) = (
                of("list", false, None),
                of("watch", true, Some(200)),
                of("watch", true, Some(422)),
            );
            if watch_list && (lists != 0 || streamed != 1) {
                bail!("WatchList on, {resource}: want one streaming watch and no LIST, got {streamed} and {lists}");
            }
            if !watch_list && (lists == 0 || streamed != 0) {
                bail!(
                    "WatchList off, {resource}: want paged LISTs, got {lists} (and {streamed} streaming watches, {refused} refused)"
                );
            }
            if resource == "pods" {
                let unselected: Vec<&str> = events
                    .iter()
                    .filter_map(|e| e["requestURI"].as_str())
                    .filter(|uri| uri.split('?').next().is_some_and(|p| p.ends_with("/pods")))
                    .filter(|uri| !uri.contains(POD_SELECTOR))
                    .collect();
                if !unselected.is_empty() {
                    bail!("WatchList {label}: Pods asked for without the headless Service's selector: {unselected:?}");
                }
            }
        }
        let refused_total: BTreeSet<&str> = events
            .iter()
            .filter(|e| e["responseStatus"]["code"].as_u64() == Some(422))
            .filter_map(|e| e["requestURI"].as_str())
            .collect();
        match (watch_list, fallbacks, refused_total.len()) {
            (true, 0, 0) => {}
            (false, 1, 1..=4) => {}
            _ => bail!(
                "WatchList {label}: {fallbacks} fallback messages and refused requests {refused_total:#?}:\n{}",
                crate::proc::tail(&log, 20)
            ),
        }
    }
    Ok(())
}

/// One audit event per request: the last stage logged with a response status (a watch held open has only
/// `ResponseStarted` until it ends).
fn audit_events(path: &std::path::Path) -> Result<Vec<Value>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut by_id: std::collections::BTreeMap<String, Value> = std::collections::BTreeMap::new();
    for event in text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()) {
        if event["responseStatus"].is_null() {
            continue;
        }
        if let Some(id) = event["auditID"].as_str() {
            by_id.insert(id.to_string(), event);
        }
    }
    Ok(by_id.into_values().collect())
}
