//! `extdns explain`'s two outputs: a block of text per name (the default), and JSON with the field names
//! docs/explain.md documents.

use std::fmt::Write as _;

use super::model::{Explanation, NameReport, NextChange, ZoneRecord};

/// The JSON output, pretty-printed and ending in a newline.
pub fn json(e: &Explanation) -> Result<String, serde_json::Error> {
    Ok(serde_json::to_string_pretty(e)? + "\n")
}

/// The text output.
pub fn table(e: &Explanation) -> String {
    let mut out = blocks(e);
    out.push_str(result_line(e.published));
    out
}

/// The last line of the text output, for one explanation or for several providers' together.
pub fn result_line(published: bool) -> &'static str {
    if published {
        "result: published, or will be at the next sync\n"
    } else {
        "result: NOT published (see above)\n"
    }
}

/// The text output without its result line: the object, a block per name, what was dropped, the note (one
/// provider's part of `--dns-provider-crds`'s answer).
pub fn blocks(e: &Explanation) -> String {
    let mut out = String::new();
    if let Some(object) = &e.object {
        let _ = writeln!(out, "{object}");
    }
    for n in &e.names {
        name_block(&mut out, n, &e.provider);
    }
    if !e.dropped.is_empty() {
        out.push_str("asked for, but no record (no name known):\n");
        for d in &e.dropped {
            let _ = writeln!(out, "  {:<9} {}", d.state.reason().as_str(), d.message);
        }
    }
    if let Some(note) = &e.note {
        let _ = writeln!(out, "note: {note}");
    }
    out
}

fn name_block(out: &mut String, n: &NameReport, provider: &str) {
    let _ = writeln!(out, "{}", n.name);
    let zone = match (&n.zone, &n.no_zone) {
        (Some(z), _) => format!("{z} (provider {provider})"),
        (None, Some(filter)) => format!(
            "no zone: kept out by {filter}; provider {provider}'s zones: {}",
            list_or_none(&n.zones)
        ),
        (None, None) => format!("provider {provider} (it names no zones)"),
    };
    let _ = writeln!(out, "  zone:      {zone}");
    let records: Vec<String> = n.records.iter().map(record).collect();
    lines(out, "in zone:", &records, "no record");
    let asked: Vec<String> = n
        .asked_by
        .iter()
        .map(|a| {
            format!(
                "{} {}{}  {}: {}",
                a.object,
                a.record_type,
                set_id(&a.set_identifier),
                a.state.reason().as_str(),
                a.message
            )
        })
        .collect();
    lines(out, "asked by:", &asked, "no object");
    let next: Vec<String> = n.next_sync.iter().map(change).collect();
    lines(out, "next sync:", &next, "nothing to change");
    if let Some(unknown) = &n.withheld_unknown {
        let _ = writeln!(out, "  {:<10} {unknown}", "registry:");
    }
}

/// `label` and the first item on one line, the others under it; `empty` when there is none.
fn lines(out: &mut String, label: &str, items: &[String], empty: &str) {
    if items.is_empty() {
        let _ = writeln!(out, "  {label:<10} {empty}");
        return;
    }
    for (i, item) in items.iter().enumerate() {
        let label = if i == 0 { label } else { "" };
        let _ = writeln!(out, "  {label:<10} {item}");
    }
}

fn record(r: &ZoneRecord) -> String {
    let owner = r
        .owner
        .as_deref()
        .map_or("owner: none".to_string(), |o| format!("owner: {o}"));
    let resource = r.resource.as_deref().map_or(String::new(), |o| format!(", for {o}"));
    format!(
        "{}{} {}  ({owner}{resource})",
        r.record_type,
        set_id(&r.set_identifier),
        r.targets.join(" ")
    )
}

fn change(c: &NextChange) -> String {
    let resource = c.resource.as_deref().map_or(String::new(), |r| format!(" for {r}"));
    let held = match c.held {
        Some("deletion-guard") => " (held back by the deletion guard)",
        Some(_) => " (not made: its object could not be evaluated, the record is kept as it is)",
        None => "",
    };
    format!(
        "{} {}{} {}{resource}{held}",
        c.action,
        c.record_type,
        set_id(&c.set_identifier),
        c.targets.join(" ")
    )
}

fn set_id(set_identifier: &str) -> String {
    if set_identifier.is_empty() {
        String::new()
    } else {
        format!(" [{set_identifier}]")
    }
}

fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_string()
    } else {
        items.join(", ")
    }
}
