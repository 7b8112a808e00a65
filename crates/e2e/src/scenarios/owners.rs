//! What the scenarios with several owners on one zone share (the hand-over between owners, shared names):
//! an extdns run under an owner id of its own, and the check that a zone did not change.

use anyhow::{Result, bail};

use crate::controllers::{Run, Which};
use crate::dns::{self, DnsServer, Record};

/// `owner`'s extdns watching `ns`, with `flags`.
pub fn owner_run<'a>(ns: &'a str, owner: &'a str, flags: &[String]) -> Run<'a> {
    let mut run = Run::new(Which::Extdns, ns);
    run.owner = owner;
    flags.iter().fold(run, |run, f| run.flag(f.clone()))
}

/// Fails if the zone differs from `before`.
pub fn unchanged(server: &DnsServer, before: &[Record], after_what: &str) -> Result<()> {
    let differences = dns::differences(before, &dns::zone(server)?);
    if !differences.is_empty() {
        bail!("{after_what} changed the zone:\n{}", differences.join("\n"));
    }
    Ok(())
}
