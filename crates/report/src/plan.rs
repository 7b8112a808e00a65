//! `extdns plan`'s output: each change with its old and new record, owner and responsible object, the held
//! changes with why, and the records left alone; as an aligned table or as JSON, for one provider or one
//! document per provider object.

use std::borrow::Cow;

use extdns_controller::SyncReport;
use extdns_endpoint::{Change, Endpoint};
use serde::Serialize;

use crate::table::aligned;

/// The exit code when the zone would change (and 0 when it would not; errors exit 1).
pub const EXIT_CHANGES: u8 = 2;

/// 0 when the sync would change nothing (held records and records left alone change nothing), else
/// [`EXIT_CHANGES`].
pub fn exit_code(report: &SyncReport) -> u8 {
    if report.changes.is_empty() { 0 } else { EXIT_CHANGES }
}

/// Why a change the plan wanted is not made.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "kebab-case")]
enum Held {
    /// The object the record belongs to could not be evaluated this sync; its records are kept.
    ObjectNotEvaluated,
    /// The deletion guard holds back this delete.
    DeletionGuard,
}

/// One change as printed: what happens to which record, the record before and after, who owns it and
/// which object asks for it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Entry<'a> {
    action: &'static str,
    name: &'a str,
    record_type: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    set_identifier: &'a str,
    /// The owner id of the record's ownership TXT (the one it will get, for a create).
    owner: Option<&'a str>,
    /// The object responsible (the ownership TXT's `resource`): the one asking for the record now, else
    /// the one that asked for it when it was written.
    resource: Option<Cow<'a, str>>,
    /// For an update: which parts of the record change.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    changed: Vec<&'static str>,
    old: Option<&'a Endpoint>,
    new: Option<&'a Endpoint>,
    #[serde(skip_serializing_if = "Option::is_none")]
    held: Option<Held>,
}

impl<'a> Entry<'a> {
    fn of(change: &'a Change, owner_id: &'a str, held: Option<Held>) -> Self {
        let (old, new) = match change {
            Change::Create(e) => (None, Some(e)),
            Change::Update { old, new } => (Some(&**old), Some(&**new)),
            Change::Delete(e) => (Some(e), None),
        };
        let e = change.endpoint();
        // The registry writes our owner id with every create; without one (noop registry) nothing owns it.
        let owner = match change {
            Change::Create(_) => (!owner_id.is_empty()).then_some(owner_id),
            _ => new.and_then(Endpoint::owner).or_else(|| old.and_then(Endpoint::owner)),
        };
        Entry {
            action: change.action(),
            name: &e.dns_name,
            record_type: e.record_type.as_str(),
            set_identifier: &e.set_identifier,
            owner,
            resource: new
                .and_then(Endpoint::resource)
                .or_else(|| old.and_then(Endpoint::resource)),
            changed: match (old, new) {
                (Some(old), Some(new)) => changed(old, new),
                _ => Vec::new(),
            },
            old,
            new,
            held,
        }
    }
}

/// The parts of a record an update changes (its key, name, type and set identifier, never does). The new
/// side's labels as they will be written: with the `resource` label its object renders.
fn changed(old: &Endpoint, new: &Endpoint) -> Vec<&'static str> {
    [
        (old.targets != new.targets, "targets"),
        (old.record_ttl != new.record_ttl, "ttl"),
        (old.labels != new.labels_as_written(), "labels"),
        (old.provider_specific != new.provider_specific, "providerSpecific"),
    ]
    .into_iter()
    .filter_map(|(differs, what)| differs.then_some(what))
    .collect()
}

/// The JSON document of `--output json`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Document<'a> {
    /// With `--dns-provider-crds`: the provider (its label) this document is about.
    #[serde(skip_serializing_if = "Option::is_none")]
    provider: Option<&'a str>,
    /// What the sync would change, in apply order.
    changes: Vec<Entry<'a>>,
    /// What the plan wanted but the sync would not change, and why.
    held: Vec<Entry<'a>>,
    /// Records the plan looked at that another owner id (or nobody) owns: left alone.
    not_owned: usize,
    /// Of those, the ones at a name (and set identifier) the cluster asks for: what it asks there is not
    /// published while they stand.
    not_owned_wanted: usize,
    /// The shared names' section (issue 47), built by the binary, which reads them; absent without any.
    #[serde(skip_serializing_if = "Option::is_none")]
    shared: Option<serde_json::Value>,
    /// Said when the dry run could not work out what the registry would withhold; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    withheld_unknown: Option<WithheldUnknown<'a>>,
}

/// The registry could not work out which changes it would withhold: its error, and the names concerned (every
/// change's): those changes may be refused, though the plan shows them.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WithheldUnknown<'a> {
    error: &'a str,
    names: Vec<&'a str>,
}

/// The names of the changes, each once, in apply order.
fn change_names(report: &SyncReport) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    for c in &report.changes {
        let name = c.endpoint().dns_name.as_str();
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

fn held<'a>(report: &'a SyncReport, owner_id: &'a str) -> impl Iterator<Item = Entry<'a>> {
    let kept = report.kept.iter().map(move |c| (c, Held::ObjectNotEvaluated));
    let guarded = report.held_back.iter().map(move |c| (c, Held::DeletionGuard));
    kept.chain(guarded)
        .map(move |(c, why)| Entry::of(c, owner_id, Some(why)))
}

/// Every change with its old and new record (external-dns's field names), owner and responsible object;
/// the held ones with why; the counts of records left alone. Pretty-printed, newline-terminated.
pub fn render_json(report: &SyncReport, owner_id: &str) -> String {
    pretty(&document(report, owner_id, None))
}

/// [`render_json`] with the shared names' section under `"shared"` (left out when `None`), as the table
/// ends with it.
pub fn render_json_with_shared(report: &SyncReport, owner_id: &str, shared: Option<serde_json::Value>) -> String {
    let mut doc = document(report, owner_id, None);
    doc.shared = shared;
    pretty(&doc)
}

/// `--dns-provider-crds`: an array of [`render_json`]'s documents, one per provider (its label under
/// `"provider"`), given as (label, report, owner id).
pub fn render_json_by_provider(reports: &[(String, SyncReport, String)]) -> String {
    let docs: Vec<Document<'_>> = reports
        .iter()
        .map(|(label, report, owner)| document(report, owner, Some(label)))
        .collect();
    pretty(&docs)
}

fn document<'a>(report: &'a SyncReport, owner_id: &'a str, provider: Option<&'a str>) -> Document<'a> {
    Document {
        provider,
        changes: report.changes.iter().map(|c| Entry::of(c, owner_id, None)).collect(),
        held: held(report, owner_id).collect(),
        not_owned: report.not_owned.records,
        not_owned_wanted: report.not_owned.wanted,
        shared: None,
        withheld_unknown: report.withheld_unknown.as_deref().map(|error| WithheldUnknown {
            error,
            names: change_names(report),
        }),
    }
}

fn pretty(doc: &impl Serialize) -> String {
    let mut s = serde_json::to_string_pretty(doc).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}

/// An aligned table of the changes (ACTION NAME TYPE [SET-ID] TARGETS TTL OWNER OBJECT; an update shows
/// `old → new` where targets or TTL differ), then a summary: the counts by action, the held records and
/// the records left alone. "no changes" when nothing would change.
pub fn render_table(report: &SyncReport, owner_id: &str) -> String {
    let mut out = String::new();
    if report.changes.is_empty() {
        out.push_str("no changes: the zone already matches the cluster\n");
    } else {
        let entries: Vec<Entry<'_>> = report.changes.iter().map(|c| Entry::of(c, owner_id, None)).collect();
        out.push_str(&table(&entries, &[]));
        out.push('\n');
    }
    out.push_str(&summary(report, owner_id));
    out
}

/// `--dns-provider-crds`: one table of every provider's changes with a PROVIDER column first, then each
/// provider's summary, given as (label, report, owner id).
pub fn render_table_by_provider(reports: &[(String, SyncReport, String)]) -> String {
    let mut entries = Vec::new();
    let mut labels = Vec::new();
    for (label, report, owner) in reports {
        for c in &report.changes {
            entries.push(Entry::of(c, owner, None));
            labels.push(label.as_str());
        }
    }
    let mut out = String::new();
    if !entries.is_empty() {
        out.push_str(&table(&entries, &labels));
        out.push('\n');
    }
    for (label, report, owner) in reports {
        let summary = summary(report, owner);
        if summary.is_empty() {
            out.push_str(&format!("{label}: no changes\n"));
        }
        for line in summary.lines() {
            out.push_str(&format!("{label}: {line}\n"));
        }
    }
    if reports.is_empty() {
        out.push_str("no provider objects\n");
    }
    out
}

/// The counts by action, the held records and the records left alone, one line each.
fn summary(report: &SyncReport, owner_id: &str) -> String {
    let mut out = String::new();
    if !report.changes.is_empty() {
        let count = |action: &str| report.changes.iter().filter(|c| c.action() == action).count();
        out.push_str(&format!(
            "{}: {} to create, {} to update, {} to delete\n",
            plural(report.changes.len(), "change"),
            count("create"),
            count("update"),
            count("delete")
        ));
    }
    if !report.kept.is_empty() {
        out.push_str(&format!(
            "held: {} of objects that could not be evaluated (kept as they are; see the warnings)\n",
            plural(report.kept.len(), "record")
        ));
    }
    if !report.held_back.is_empty() {
        out.push_str(&format!(
            "held: {} held back by the deletion guard (--deletion-guard-percent)\n",
            plural(report.held_back.len(), "delete")
        ));
    }
    if let Some(error) = &report.withheld_unknown {
        out.push_str(&format!(
            "could not work out whether the registry withholds {}: {error}\n",
            change_names(report).join(", ")
        ));
    }
    let not_owned = report.not_owned;
    if !owner_id.is_empty() && not_owned.records > 0 {
        out.push_str(&format!(
            "left alone: {} not owned by owner id {owner_id:?}",
            plural(not_owned.records, "record")
        ));
        if not_owned.wanted > 0 {
            out.push_str(&format!(
                " ({} at names the cluster asks for; check --txt-owner-id)",
                not_owned.wanted
            ));
        }
        out.push('\n');
    }
    out
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// The changes, each row led by its provider when `providers` has one per entry.
fn table(entries: &[Entry<'_>], providers: &[&str]) -> String {
    let set_ids = entries.iter().any(|e| !e.set_identifier.is_empty());
    let by_provider = providers.len() == entries.len() && !providers.is_empty();
    let mut header = if by_provider { vec!["PROVIDER"] } else { Vec::new() };
    header.extend(["ACTION", "NAME", "TYPE"]);
    if set_ids {
        header.push("SET-ID");
    }
    header.extend(["TARGETS", "TTL", "OWNER", "OBJECT"]);
    let mut rows: Vec<Vec<String>> = vec![header.into_iter().map(String::from).collect()];
    for (i, e) in entries.iter().enumerate() {
        let mut row = if by_provider {
            vec![providers[i].to_string()]
        } else {
            Vec::new()
        };
        row.extend([e.action.to_string(), e.name.to_string(), e.record_type.to_string()]);
        if set_ids {
            row.push(dash(e.set_identifier));
        }
        let side = |f: fn(&Endpoint) -> String| {
            let (old, new) = (e.old.map(f), e.new.map(f));
            match (old, new) {
                (Some(old), Some(new)) if old != new => format!("{old} → {new}"),
                (_, Some(v)) | (Some(v), None) => v,
                (None, None) => "-".to_string(),
            }
        };
        let mut targets = side(|r| r.targets.join(","));
        // An update that changes neither: say what it does change.
        if !e.changed.is_empty() && !e.changed.iter().any(|c| *c == "targets" || *c == "ttl") {
            targets.push_str(&format!(" ({} changed)", e.changed.join(", ")));
        }
        row.push(targets);
        row.push(side(|r| {
            if r.record_ttl.is_configured() {
                r.record_ttl.0.to_string()
            } else {
                "-".to_string()
            }
        }));
        row.push(dash(e.owner.unwrap_or_default()));
        row.push(dash(e.resource.as_deref().unwrap_or_default()));
        rows.push(row);
    }
    aligned(rows)
}

fn dash(s: &str) -> String {
    if s.is_empty() { "-".to_string() } else { s.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use extdns_endpoint::{RecordType, Ttl, label};
    use extdns_plan::NotOwned;

    const OWNER: &str = "default";

    /// A record read back, written for the object `resource` names.
    fn a(name: &str, ip: &str, resource: &str) -> Endpoint {
        Endpoint::new(name, RecordType::A, [ip]).with_label(label::RESOURCE, resource)
    }

    /// A record a source asks for: named by its object, no `resource` label of its own.
    fn made(name: &str, ip: &str, resource: &str) -> Endpoint {
        let e = Endpoint::new(name, RecordType::A, [ip]);
        match extdns_endpoint::ObjectKey::from_resource_label(resource) {
            Some(object) => e.with_ref_object(object),
            None => e,
        }
    }

    fn ours(e: Endpoint) -> Endpoint {
        e.with_label(label::OWNER, OWNER)
    }

    fn report(changes: Vec<Change>) -> SyncReport {
        SyncReport {
            changes,
            full: true,
            ..SyncReport::default()
        }
    }

    #[test]
    fn a_dry_run_that_cannot_tell_what_the_registry_withholds_says_so_for_the_names_concerned() {
        let r = SyncReport {
            withheld_unknown: Some("invalid encryption key: too short".into()),
            ..report(vec![
                Change::Create(made("a.example.org", "192.0.2.1", "service/ns/a")),
                Change::Create(Endpoint::new("a.example.org", RecordType::Aaaa, ["2001:db8::1"])),
                Change::Create(made("b.example.org", "192.0.2.2", "service/ns/b")),
            ])
        };
        let table = render_table(&r, OWNER);
        assert!(
            table.contains(
                "could not work out whether the registry withholds a.example.org, b.example.org: invalid \
                 encryption key: too short\n"
            ),
            "{table}"
        );
        let json: serde_json::Value = serde_json::from_str(&render_json(&r, OWNER)).unwrap_or_default();
        assert_eq!(
            json["withheldUnknown"],
            serde_json::json!({"error": "invalid encryption key: too short", "names": ["a.example.org", "b.example.org"]})
        );
        // A registry that could tell: nothing said.
        let json: serde_json::Value =
            serde_json::from_str(&render_json(&report(Vec::new()), OWNER)).unwrap_or_default();
        assert_eq!(json.get("withheldUnknown"), None);
        assert!(!render_table(&report(Vec::new()), OWNER).contains("could not work out"));
    }

    #[test]
    fn nothing_to_change_exits_0_and_says_so() {
        let mut r = report(vec![]);
        // Held records and records left alone change nothing.
        r.kept = vec![Change::Delete(ours(a("x.example.org", "192.0.2.1", "service/ns/x")))];
        r.not_owned.records = 3;
        assert_eq!(exit_code(&r), 0);
        let table = render_table(&r, OWNER);
        assert_eq!(
            table,
            "no changes: the zone already matches the cluster\n\
             held: 1 record of objects that could not be evaluated (kept as they are; see the warnings)\n\
             left alone: 3 records not owned by owner id \"default\"\n"
        );
    }

    #[test]
    fn changes_exit_2_and_the_table_shows_old_and_new() {
        let old = ours(a("web.example.org", "192.0.2.1", "service/ns/web")).with_ttl(Ttl(300));
        let new = ours(made("web.example.org", "192.0.2.2", "service/ns/web")).with_ttl(Ttl(300));
        let r = SyncReport {
            not_owned: NotOwned { records: 2, wanted: 1 },
            held_back: vec![Change::Delete(ours(a(
                "gone.example.org",
                "192.0.2.9",
                "service/ns/gone",
            )))],
            ..report(vec![
                Change::Delete(ours(a("old.example.org", "192.0.2.3", "ingress/ns/old"))),
                Change::update(old, new),
                Change::Create(made("new.example.org", "192.0.2.4", "service/ns/new").with_ttl(Ttl(60))),
            ])
        };
        assert_eq!(exit_code(&r), EXIT_CHANGES);
        let table = render_table(&r, OWNER);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(
            lines,
            [
                "ACTION   NAME              TYPE   TARGETS                 TTL   OWNER     OBJECT",
                "delete   old.example.org   A      192.0.2.3               -     default   ingress/ns/old",
                "update   web.example.org   A      192.0.2.1 → 192.0.2.2   300   default   service/ns/web",
                "create   new.example.org   A      192.0.2.4               60    default   service/ns/new",
                "",
                "3 changes: 1 to create, 1 to update, 1 to delete",
                "held: 1 delete held back by the deletion guard (--deletion-guard-percent)",
                "left alone: 2 records not owned by owner id \"default\" (1 at names the cluster asks for; check \
                 --txt-owner-id)",
            ]
        );
    }

    #[test]
    fn an_update_of_labels_only_says_so_and_set_identifiers_get_a_column() {
        let old = ours(a("w.example.org", "192.0.2.1", "service/ns/a")).with_set_identifier("blue");
        let new = ours(made("w.example.org", "192.0.2.1", "service/ns/b")).with_set_identifier("blue");
        let table = render_table(&report(vec![Change::update(old, new)]), OWNER);
        assert_eq!(
            table.lines().take(2).collect::<Vec<_>>(),
            [
                "ACTION   NAME            TYPE   SET-ID   TARGETS                      TTL   OWNER     OBJECT",
                "update   w.example.org   A      blue     192.0.2.1 (labels changed)   -     default   service/ns/b",
            ]
        );
    }

    #[test]
    fn json_lists_every_change_with_old_new_owner_and_object() -> Result<(), serde_json::Error> {
        let old = ours(a("web.example.org", "192.0.2.1", "service/ns/web"));
        let new = ours(made("web.example.org", "192.0.2.2", "service/ns/web")).with_ttl(Ttl(60));
        let r = SyncReport {
            kept: vec![Change::Delete(ours(a("x.example.org", "192.0.2.5", "service/ns/x")))],
            not_owned: NotOwned { records: 4, wanted: 0 },
            ..report(vec![
                Change::update(old, new),
                Change::Create(made("new.example.org", "192.0.2.4", "service/ns/new")),
            ])
        };
        let v: serde_json::Value = serde_json::from_str(&render_json(&r, OWNER))?;
        let web = serde_json::json!({"dnsName": "web.example.org", "recordType": "A",
            "labels": {"owner": "default", "resource": "service/ns/web"}});
        let mut old = web.clone();
        old["targets"] = serde_json::json!(["192.0.2.1"]);
        let mut new = web;
        new["targets"] = serde_json::json!(["192.0.2.2"]);
        new["recordTTL"] = serde_json::json!(60);
        assert_eq!(
            v,
            serde_json::json!({
                "changes": [
                    {"action": "update", "name": "web.example.org", "recordType": "A", "owner": "default",
                     "resource": "service/ns/web", "changed": ["targets", "ttl"], "old": old, "new": new},
                    {"action": "create", "name": "new.example.org", "recordType": "A", "owner": "default",
                     "resource": "service/ns/new", "old": null,
                     "new": {"dnsName": "new.example.org", "targets": ["192.0.2.4"], "recordType": "A",
                             "labels": {"resource": "service/ns/new"}}},
                ],
                "held": [
                    {"action": "delete", "name": "x.example.org", "recordType": "A", "owner": "default",
                     "resource": "service/ns/x", "held": "object-not-evaluated", "new": null,
                     "old": {"dnsName": "x.example.org", "targets": ["192.0.2.5"], "recordType": "A",
                             "labels": {"owner": "default", "resource": "service/ns/x"}}},
                ],
                "notOwned": 4,
                "notOwnedWanted": 0,
            })
        );
        Ok(())
    }

    #[test]
    fn without_an_owner_id_nothing_is_owned_and_nothing_is_left_alone() -> Result<(), serde_json::Error> {
        let r = SyncReport {
            // The controller counts none without an owner id; the table would not print one either.
            not_owned: NotOwned { records: 2, wanted: 0 },
            ..report(vec![Change::Create(a(
                "new.example.org",
                "192.0.2.4",
                "service/ns/new",
            ))])
        };
        let v: serde_json::Value = serde_json::from_str(&render_json(&r, ""))?;
        assert_eq!(v["changes"][0]["owner"], serde_json::Value::Null);
        assert!(!render_table(&r, "").contains("left alone"));
        Ok(())
    }
}
