//! Scenario: `--events-emit` on a real API server, through the deploy/ ServiceAccount (so its RBAC is what
//! is checked). A published Service gets a Normal `RecordReady` event naming its record; a Service whose
//! target annotation is neither an address nor a host name gets a Warning naming the annotation, and no
//! record.

use anyhow::{Result, bail};
use serde_json::{Value, json};

use crate::controllers::{Run, Which};
use crate::dns;
use crate::objects as o;

use super::Ctx;
use super::wait::{self, alive, answers};

pub fn run(ctx: &mut Ctx) -> Result<()> {
    let ns = ctx.namespace("events")?;
    let kube = &ctx.cp.kube;
    let server = dns::bind();
    kube.apply(&o::lb_at(&ns, "good", "good.events.example.org", "203.0.113.30"))?;
    kube.apply(&o::lb_service(
        &ns,
        "bad",
        o::annotations(&[("hostname", "bad.events.example.org"), ("target", "not a target!")]),
        json!([{ "ip": "203.0.113.31" }]),
    ))?;

    let run = Run::new(Which::Extdns, &ns)
        .flag("--events")
        .flag("--interval=1h")
        .flag("--events-emit=RecordReady")
        .flag("--events-emit=RecordError");
    let mut extdns = run.start(&ctx.cp, &server, &ctx.log("events-extdns"))?;
    answers(&server, &mut extdns, "good.events.example.org", "A", &["203.0.113.30"])?;

    let on = |events: &[Value], name: &str, reason: &str| -> Option<Value> {
        events
            .iter()
            .find(|e| e["regarding"]["name"] == name && e["reason"] == reason)
            .cloned()
    };
    let (ready, warning) = wait::events(kube, &ns, "the events of both Services", |events| {
        on(events, "good", "RecordReady").zip(on(events, "bad", "InvalidInput"))
    })
    .map_err(|e| anyhow::anyhow!("{e:#}\nextdns log:\n{}", extdns.log_tail(30)))?;

    let check = |e: &Value, kind: &str, note_has: &str| -> Result<()> {
        let ok = e["type"] == kind
            && e["regarding"]["kind"] == "Service"
            && e["regarding"]["apiVersion"] == "v1"
            && e["regarding"]["uid"].as_str().is_some_and(|u| !u.is_empty())
            && e["reportingController"] == "external-dns"
            && e["note"].as_str().is_some_and(|n| n.contains(note_has));
        if !ok {
            bail!("unexpected event (want {kind}, note with {note_has:?}):\n{e:#}");
        }
        Ok(())
    };
    check(&ready, "Normal", "record:good.events.example.org,")?;
    check(&warning, "Warning", "target annotation")?;
    if !dns::answers(&server, "bad.events.example.org", "A").is_empty() {
        bail!("the Service with the bad target annotation published a record");
    }
    alive(&mut extdns)
}
