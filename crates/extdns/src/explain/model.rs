//! What `extdns explain` says about a name or an object, computed from one dry-run sync
//! ([`crate::dry_run::DryRun`]): the names' outcomes come from the controller's own model
//! ([`extdns_controller::NameStatuses`]), so explain, the objects' status and `/summary` agree; the zone's
//! records and the next sync's changes come from the same sync. The field names are the JSON output's
//! (docs/explain.md) and are kept stable.

use std::collections::BTreeSet;

use extdns_controller::{NameState, ObjectNames, Reason, outside_zones, zone_of};
use extdns_endpoint::name::name_key;
use extdns_endpoint::{Change, Endpoint};
use extdns_informer::ObjectKey;
use extdns_plan::PlanConfig;
use serde::Serialize;

use crate::dry_run::DryRun;

/// What was asked: a DNS name, or an object by its `resource` label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `www.example.org`.
    Name(String),
    /// `service/shop/web`.
    Object(ObjectKey),
}

/// The whole answer.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    /// What was asked, as given.
    pub query: String,
    /// The object asked about (`service/shop/web`); absent for a name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    /// The provider (`--provider`).
    pub provider: String,
    /// Each name asked about: the one name, or every name the object asks for.
    pub names: Vec<NameReport>,
    /// What the object asked for that never became a record, so no name is known (an invalid annotation,
    /// a field the source could not read): each with its reason. Empty for a name.
    pub dropped: Vec<Dropped>,
    /// What the sync could not say, when it has nothing else to say (no object asks for the name; the sync
    /// saw no name of the object).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Whether everything asked is published or will be at the next sync (the exit code says the same).
    pub published: bool,
}

/// One name.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NameReport {
    /// The name.
    pub name: String,
    /// The provider's zone the name falls in; absent when it falls in none, or the provider names none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    /// Why the name has no zone: the filter that keeps it out (`--domain-filter/--exclude-domains`, or the
    /// provider's zones); absent when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_zone: Option<String>,
    /// The provider's zones, as its domain filter names them (to go with `noZone`).
    pub zones: Vec<String>,
    /// What the zone holds at the name now, every type, with the owner the registry read.
    pub records: Vec<ZoneRecord>,
    /// The objects asking for the name, each with where it stands.
    pub asked_by: Vec<Asker>,
    /// What the next sync would do at the name.
    pub next_sync: Vec<NextChange>,
    /// Said when the dry run could not work out whether the registry would withhold (refuse before sending)
    /// the next sync's changes at the name, with the registry's error: they show as pending, and may not be.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub withheld_unknown: Option<String>,
    /// Whether every object asking for the name has it published or will have at the next sync (false
    /// when none asks).
    pub published: bool,
}

/// A record in the zone.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ZoneRecord {
    /// Its type.
    pub record_type: String,
    /// Its set identifier, when it has one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub set_identifier: String,
    /// Its targets.
    pub targets: Vec<String>,
    /// The owner id its ownership record names; absent when it has none (nobody's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The object it was written for (`resource` label), when it names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
}

/// An object asking for a name, and where that stands.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Asker {
    /// The object (`service/shop/web`).
    pub object: String,
    /// The record type asked.
    pub record_type: String,
    /// The set identifier, when it has one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub set_identifier: String,
    /// The reason and its detail (`reason` and its fields, as `/summary` spells them).
    #[serde(flatten)]
    pub state: NameState,
    /// The same in words.
    pub message: String,
}

/// What the object asked for that became no record.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Dropped {
    /// The reason and its detail.
    #[serde(flatten)]
    pub state: NameState,
    /// The same in words.
    pub message: String,
}

/// One change the next sync would make at a name.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NextChange {
    /// `create`, `update` or `delete`.
    pub action: &'static str,
    /// The record type.
    pub record_type: String,
    /// The set identifier, when it has one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub set_identifier: String,
    /// The targets after the change (before it, for a delete).
    pub targets: Vec<String>,
    /// The object the record is written for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// Why the change would not be made after all: `deletion-guard` (too many deletes in the zone) or
    /// `failed-object` (its object could not be evaluated, so its records are kept as they are).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held: Option<&'static str>,
}

/// Explains `target` from what the dry run `run` saw, with the plan's filters of `plan` and the
/// provider named `provider`.
pub fn explain(query: &str, target: &Target, run: &DryRun, plan: &PlanConfig, provider: &str) -> Explanation {
    let mut out = Explanation {
        query: query.to_string(),
        object: None,
        provider: provider.to_string(),
        names: Vec::new(),
        dropped: Vec::new(),
        note: None,
        published: false,
    };
    match target {
        Target::Name(name) => {
            let report = name_report(name, run, plan);
            if report.asked_by.is_empty() {
                out.note = Some("no object asks for this name".to_string());
            }
            out.published = report.published;
            out.names.push(report);
        }
        Target::Object(key) => {
            out.object = Some(key.resource_label());
            let Some(own) = run.names.get(key) else {
                out.note = Some(NO_NAMES.to_string());
                return out;
            };
            let mut seen = BTreeSet::new();
            for n in &own.names {
                if n.name.is_empty() {
                    out.dropped.push(Dropped {
                        message: n.state.to_string(),
                        state: n.state.clone(),
                    });
                } else if seen.insert(name_key(n.name).into_owned()) {
                    out.names.push(name_report(n.name, run, plan));
                }
            }
            out.published = out.dropped.is_empty() && all_published(own);
        }
    }
    out
}

/// What an object the sync saw no name of may be.
const NO_NAMES: &str = "the sync saw no name of this object: it is not in the cluster (or the manifests), or no \
    enabled source publishes a name for it (its kind is not a --source; --namespace, --label-filter, \
    --annotation-filter, --ingress-class or its controller annotation leaves it out; or it sets no hostname)";

/// Whether every name of `own` is published or will be.
fn all_published(own: &ObjectNames) -> bool {
    own.names.iter().all(|n| will_publish(n.state))
}

/// Published, or pending: the dry run found nothing in its way, so the next sync writes it.
pub fn will_publish(state: &NameState) -> bool {
    matches!(state.reason(), Reason::Published | Reason::Pending)
}

/// Everything about one name.
fn name_report(name: &str, run: &DryRun, plan: &PlanConfig) -> NameReport {
    let key = name_key(name).into_owned();
    let at = |e: &Endpoint| name_key(&e.dns_name) == key.as_str();
    let no_zone = outside_zones(plan, &run.zones, &key).map(str::to_string);
    let zone = match no_zone {
        Some(_) => None,
        None => zone_of(&run.zones, &key),
    };
    let records = run.records.iter().filter(|e| at(e)).map(zone_record).collect();
    let mut asked_by = Vec::new();
    for (object, names) in run.names.iter() {
        for n in names.names.iter().filter(|n| name_key(n.name) == key.as_str()) {
            asked_by.push(Asker {
                object: object.resource_label(),
                record_type: n.record_type.to_string(),
                set_identifier: n.set_identifier.to_string(),
                message: n.state.to_string(),
                state: n.state.clone(),
            });
        }
    }
    let report = &run.report;
    let next_sync: Vec<NextChange> = report
        .changes
        .iter()
        .map(|c| (c, None))
        .chain(report.held_back.iter().map(|c| (c, Some("deletion-guard"))))
        .chain(report.kept.iter().map(|c| (c, Some("failed-object"))))
        .filter(|(c, _)| at(c.endpoint()))
        .map(|(c, held)| next_change(c, held))
        .collect();
    // Every change the sync would send is concerned: the registry could say nothing of any of them.
    let withheld_unknown = match &report.withheld_unknown {
        Some(error) if next_sync.iter().any(|c| c.held.is_none()) => Some(withheld_unknown(&key, error)),
        _ => None,
    };
    let published = !asked_by.is_empty() && asked_by.iter().all(|a| will_publish(&a.state));
    NameReport {
        name: key.clone(),
        zone,
        no_zone,
        zones: run.zones.includes().to_vec(),
        records,
        asked_by,
        next_sync,
        withheld_unknown,
        published,
    }
}

/// What a dry run says of the changes at `name` when the registry could not work out what it would withhold.
pub fn withheld_unknown(name: &str, error: &str) -> String {
    format!("could not work out whether the registry withholds the changes at {name}: {error}")
}

fn zone_record(e: &Endpoint) -> ZoneRecord {
    ZoneRecord {
        record_type: e.record_type.to_string(),
        set_identifier: e.set_identifier.clone(),
        targets: e.targets.iter().map(|t| t.to_string()).collect(),
        owner: e.owner().filter(|o| !o.is_empty()).map(str::to_string),
        resource: e.resource().map(|r| r.into_owned()),
    }
}

fn next_change(c: &Change, held: Option<&'static str>) -> NextChange {
    let e = c.endpoint();
    NextChange {
        action: c.action(),
        record_type: e.record_type.to_string(),
        set_identifier: e.set_identifier.clone(),
        targets: e.targets.iter().map(|t| t.to_string()).collect(),
        resource: e
            .resource()
            .or_else(|| c.previous().and_then(Endpoint::resource))
            .map(|r| r.into_owned()),
        held,
    }
}
