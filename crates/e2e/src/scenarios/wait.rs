//! Waiting for BIND to show what a long-running controller should have written.

use std::time::Duration;

use anyhow::{Result, bail};
use serde_json::Value;

use crate::controllers::OWNER;
use crate::dns::{self, DnsServer};
use crate::kube::Kube;
use crate::proc::{Proc, eventually};

/// How long a change may take to reach BIND with `--events` (debounce, relist backoff and a sync).
pub const CONVERGE: Duration = Duration::from_secs(60);

fn sorted(answers: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = answers.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}

/// Polls `check` every `every` until it finds what it looks for, for up to [`CONVERGE`]; fails at once if
/// `controller` exits meanwhile, rather than waiting out the time for a process that is gone.
pub fn while_alive<T>(
    controller: &mut Proc,
    what: &str,
    every: Duration,
    mut check: impl FnMut() -> Result<Option<T>>,
) -> Result<T> {
    eventually(what, CONVERGE, every, || {
        if let Some(status) = controller.exited() {
            bail!("{} exited with {status}", controller.name);
        }
        check()
    })
}

/// Waits until `found` finds what it looks for among the Events of `ns`.
pub fn events<T>(kube: &Kube, ns: &str, what: &str, mut found: impl FnMut(&[Value]) -> Option<T>) -> Result<T> {
    eventually(what, CONVERGE, Duration::from_millis(200), || {
        Ok(found(&kube.events(ns)?))
    })
}

/// Waits until `name TYPE` answers exactly `want` (empty: no answer), failing early if `controller` exits.
pub fn answers(server: &DnsServer, controller: &mut Proc, name: &str, t: &str, want: &[&str]) -> Result<()> {
    let want = sorted(want);
    let what = format!("{name} {t} = {want:?}");
    until_answers(controller, &what, Duration::from_millis(100), &want, || {
        dns::answers(server, name, t)
    })
}

/// Polls `query` every `every` until it answers exactly `want`, failing early if `controller` exits; the
/// error says the last answer and shows the controller's log tail.
pub fn until_answers(
    controller: &mut Proc,
    what: &str,
    every: Duration,
    want: &[String],
    mut query: impl FnMut() -> Vec<String>,
) -> Result<()> {
    let mut last = Vec::new();
    let r = while_alive(controller, what, every, || {
        last = query();
        Ok((last == want).then_some(()))
    });
    r.map_err(|e| {
        anyhow::anyhow!(
            "{e:#}; last answer {last:?}\n{} log:\n{}",
            controller.name,
            controller.log_tail(25)
        )
    })
}

/// Waits until the ownership record of `name` for type `t` is gone (or there, when `present`).
pub fn ownership(server: &DnsServer, controller: &mut Proc, t: &str, name: &str, present: bool) -> Result<()> {
    let txt_name = format!("{}-{name}.", t.to_ascii_lowercase());
    while_alive(
        controller,
        &format!(
            "ownership record {txt_name} {}",
            if present { "present" } else { "gone" }
        ),
        Duration::from_millis(100),
        || {
            let zone = dns::zone(server)?;
            let there = dns::owned_txt(&zone, OWNER).iter().any(|r| r.name == txt_name);
            Ok((there == present).then_some(()))
        },
    )
}

/// The controller is still running; its log tail otherwise.
pub fn alive(controller: &mut Proc) -> Result<()> {
    match controller.exited() {
        None => Ok(()),
        Some(status) => bail!("{} exited with {status}:\n{}", controller.name, controller.log_tail(30)),
    }
}

/// The record writes a controller logged: one line per record it created, updated or deleted.
pub fn record_writes(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| l.contains("create record") || l.contains("update record") || l.contains("delete record"))
        .collect()
}
