//! `extdns explain --dns-provider-crds`: which provider object takes each name, and why the others do not.
//!
//! Each DNSProvider and ClusterDNSProvider object's pipeline is built as the manager builds it (its command
//! line, its Secret, its route) and explained as `extdns explain` explains one provider (a dry run of one
//! sync). A provider takes a name when an object routed to it asks for the name and the name falls in one of
//! its zones; the answer names that provider with its zone and owner id, and says so when none would, or when
//! more than one would (each writes it in its own zone, which is right for a split horizon and a surprise
//! otherwise). The provider objects and their Secrets come from the API server, or from `--manifests`.

use std::collections::BTreeSet;
use std::io::Write;

use extdns_controller::{NameState, Reason};
use extdns_dnsprovider::ProviderObject;
use extdns_endpoint::name::name_key;
use extdns_provider_manager::Secrets;
use serde::Serialize;

use super::plan::{LeftOut, load, settings_of};
use crate::EXIT_FAILURE;
use crate::explain::{
    EXIT_NOT_PUBLISHED, ExplainError, Explanation, NameReport, Target, explain_as, render_blocks, will_publish,
};
use crate::flags::OutputFormat;
use crate::providers::build_provider;
use crate::settings::fleet::FleetSettings;

/// The whole answer over every provider object.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FleetExplanation {
    /// What was asked, as given.
    pub query: String,
    /// The object asked about (`service/shop/web`); absent for a name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    /// Each name asked about, with the providers that take it and why the others do not.
    pub names: Vec<Route>,
    /// Each provider object's own explanation, as `extdns explain` gives it for one provider.
    pub providers: Vec<ProviderAnswer>,
    /// The provider objects left out (a Secret that cannot be read, settings refused, a zone that cannot be
    /// read), each with why: what they would take is not known.
    pub left_out: Vec<String>,
    /// What could not be said, when nothing else is (no provider object; no provider saw a name of the object).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Every name is taken by a provider, and published there or will be at the next sync.
    pub published: bool,
}

/// One name and the providers it goes to.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Route {
    /// The name.
    pub name: String,
    /// The providers that take it: an object routed to each asks for it and it falls in one of its zones.
    pub taken_by: Vec<Taker>,
    /// The providers that do not, each with why.
    pub not_taken_by: Vec<NotTaken>,
    /// Said when no provider, or more than one, takes the name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// A provider taking a name.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Taker {
    /// The provider object (`team-a/zone`, or a ClusterDNSProvider's name).
    pub provider: String,
    /// Its zone the name falls in.
    pub zone: String,
    /// The owner id its records are written with.
    pub owner: String,
    /// The worst reason among the objects asking (the ones asked about) in that provider.
    pub reason: Reason,
    /// Every object asking has the name published there, or will at the next sync.
    pub published: bool,
}

/// A provider not taking a name, and why.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NotTaken {
    /// The provider object.
    pub provider: String,
    /// Why, in words.
    pub why: String,
}

/// One provider object's explanation.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderAnswer {
    /// The provider object.
    pub provider: String,
    /// Its owner id.
    pub owner: String,
    /// What `extdns explain` says with this provider alone.
    pub explanation: Explanation,
}

/// Explains `query` with every provider object's pipeline; prints the answer on `out` and each provider left
/// out on `err`. Exits 0 when every name is taken by a provider and published there or will be, 3 when one
/// is not, 1 when a provider could not be explained (what it would take is unknown) or on error.
pub async fn run(
    fleet: &FleetSettings,
    manifests: &[std::path::PathBuf],
    query: &str,
    output: OutputFormat,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    let target = Target::parse(query)?;
    let (objects, refused, secrets) = load(fleet, manifests).await?;
    let mut left_out = refused;
    let mut answers = Vec::new();
    for object in objects.iter().filter(|o| !o.deleting) {
        match explain_one(fleet, &secrets, object, query).await {
            Ok(answer) => answers.push(answer),
            Err(why) => left_out.push(format!("{}: {why}", object.id)),
        }
    }
    for why in &left_out {
        writeln!(err, "provider left out: {why}")?;
    }
    let answer = combine(query, &target, answers, left_out);
    let text = match output {
        OutputFormat::Table => render_table(&answer),
        OutputFormat::Json => serde_json::to_string_pretty(&answer).map_err(ExplainError::Json)? + "\n",
    };
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(exit_code(&answer))
}

/// The exit code of an answer (see [`run`]).
pub fn exit_code(answer: &FleetExplanation) -> u8 {
    if !answer.left_out.is_empty() {
        EXIT_FAILURE
    } else if answer.published {
        0
    } else {
        EXIT_NOT_PUBLISHED
    }
}

/// One provider object's explanation.
async fn explain_one(
    fleet: &FleetSettings,
    secrets: &Secrets,
    object: &ProviderObject,
    query: &str,
) -> Result<ProviderAnswer, LeftOut> {
    let settings = settings_of(fleet, secrets, object).await?;
    let label = object.id.label();
    let sync = |e: anyhow::Error| LeftOut::Sync {
        message: crate::error_text(&e),
        source: e.into(),
    };
    let provider = build_provider(&settings.provider).await?;
    let explanation = explain_as(&settings, provider, query, &label).await.map_err(sync)?;
    Ok(ProviderAnswer {
        provider: label,
        owner: settings.controller.plan.owner_id.clone(),
        explanation,
    })
}

/// The providers' explanations as one answer: each name with the providers taking it.
pub fn combine(
    query: &str,
    target: &Target,
    providers: Vec<ProviderAnswer>,
    left_out: Vec<String>,
) -> FleetExplanation {
    let object = match target {
        Target::Object(key) => Some(key.resource_label()),
        Target::Name(_) => None,
    };
    let mut names: Vec<String> = Vec::new();
    match target {
        Target::Name(name) => names.push(name_key(name).into_owned()),
        Target::Object(_) => {
            let mut seen = BTreeSet::new();
            for n in providers.iter().flat_map(|p| &p.explanation.names) {
                if seen.insert(n.name.clone()) {
                    names.push(n.name.clone());
                }
            }
        }
    }
    let routes: Vec<Route> = names
        .iter()
        .map(|name| route(name, object.as_deref(), &providers))
        .collect();
    let dropped = providers.iter().any(|p| !p.explanation.dropped.is_empty());
    let note = if providers.is_empty() && left_out.is_empty() {
        Some("no DNSProvider or ClusterDNSProvider object: nothing takes any name".to_string())
    } else if object.is_some() && names.is_empty() && !dropped {
        Some(
            "no provider's sync saw a name of this object: it is not in the cluster (or the manifests), no \
             provider's route or sources take it, or it sets no hostname"
                .to_string(),
        )
    } else {
        None
    };
    let published = !routes.is_empty()
        && !dropped
        && routes
            .iter()
            .all(|r| !r.taken_by.is_empty() && r.taken_by.iter().all(|t| t.published));
    FleetExplanation {
        query: query.to_string(),
        object,
        names: routes,
        providers,
        left_out,
        note,
        published,
    }
}

/// Which providers take `name` (the objects asking limited to `object` when one was asked about).
fn route(name: &str, object: Option<&str>, providers: &[ProviderAnswer]) -> Route {
    let mut taken_by = Vec::new();
    let mut not_taken_by = Vec::new();
    for p in providers {
        let report = p.explanation.names.iter().find(|n| n.name == name);
        match report.map(|r| (r, taking(r, object))) {
            Some((report, Taking::Takes(states))) => taken_by.push(Taker {
                provider: p.provider.clone(),
                zone: report.zone.clone().unwrap_or_default(),
                owner: p.owner.clone(),
                reason: states.iter().map(|s| s.reason()).max().unwrap_or(Reason::Pending),
                published: states.iter().all(|s| will_publish(s)),
            }),
            Some((_, Taking::Not(why))) => not_taken_by.push(NotTaken {
                provider: p.provider.clone(),
                why,
            }),
            None => not_taken_by.push(NotTaken {
                provider: p.provider.clone(),
                why: NOT_ROUTED.to_string(),
            }),
        }
    }
    let warning = match taken_by.len() {
        0 => Some("no provider takes this name".to_string()),
        1 => None,
        _ => Some(format!(
            "{} providers take this name, each in its own zone: {}",
            taken_by.len(),
            taken_by
                .iter()
                .map(|t| t.provider.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    };
    Route {
        name: name.to_string(),
        taken_by,
        not_taken_by,
        warning,
    }
}

/// Why a provider whose sync saw no object ask for a name does not take it.
const NOT_ROUTED: &str = "no object its route and sources admit asks for the name";

/// Whether a provider takes a name.
enum Taking<'a> {
    /// It does: the states of the objects asking there.
    Takes(Vec<&'a NameState>),
    /// It does not, and why, in words.
    Not(String),
}

/// Whether the provider whose answer for the name is `report` takes it (the objects asking limited to
/// `object` when one was asked about).
fn taking<'a>(report: &'a NameReport, object: Option<&str>) -> Taking<'a> {
    let asking: Vec<&NameState> = report
        .asked_by
        .iter()
        .filter(|a| object.is_none_or(|o| a.object == o))
        .map(|a| &a.state)
        .collect();
    if asking.is_empty() {
        return Taking::Not(NOT_ROUTED.to_string());
    }
    if let Some(filter) = &report.no_zone {
        return Taking::Not(format!("in none of its zones: kept out by {filter}"));
    }
    let kept: Vec<&NameState> = asking
        .iter()
        .copied()
        .filter(|s| !matches!(s, NameState::Filtered { .. }))
        .collect();
    match kept.is_empty() {
        true => Taking::Not(asking[0].to_string()),
        false => Taking::Takes(kept),
    }
}

/// The text output: per name, the providers taking it and why the others do not; then each provider that
/// takes a name, as `extdns explain` explains it with that provider alone.
pub fn render_table(answer: &FleetExplanation) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    if let Some(object) = &answer.object {
        let _ = writeln!(out, "{object}");
    }
    for r in &answer.names {
        let _ = writeln!(out, "{}", r.name);
        for t in &r.taken_by {
            let _ = writeln!(
                out,
                "  taken by:  {} (zone {}, owner {})  {}",
                t.provider,
                t.zone,
                t.owner,
                t.reason.as_str()
            );
        }
        for n in &r.not_taken_by {
            let _ = writeln!(out, "  not by:    {}: {}", n.provider, n.why);
        }
        if let Some(warning) = &r.warning {
            let _ = writeln!(out, "  note:      {warning}");
        }
    }
    let shown: BTreeSet<&str> = answer
        .names
        .iter()
        .flat_map(|r| r.taken_by.iter().map(|t| t.provider.as_str()))
        .collect();
    for p in &answer.providers {
        if shown.contains(p.provider.as_str()) || !p.explanation.dropped.is_empty() {
            let _ = writeln!(out, "--- provider {} (owner {})", p.provider, p.owner);
            let blocks = render_blocks(&p.explanation);
            // The object's line is printed once, above.
            let blocks = match &answer.object {
                Some(object) => blocks
                    .strip_prefix(&format!("{object}\n"))
                    .unwrap_or(&blocks)
                    .to_string(),
                None => blocks,
            };
            out.push_str(&blocks);
        }
    }
    for why in &answer.left_out {
        let _ = writeln!(out, "provider left out: {why}");
    }
    if let Some(note) = &answer.note {
        let _ = writeln!(out, "note: {note}");
    }
    out.push_str(crate::explain::render::result_line(answer.published));
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::{INTERNAL_PROVIDER, SHOP_SERVICE, WEB_SERVICE};
    use super::*;

    /// Besides [`INTERNAL_PROVIDER`]: a second ClusterDNSProvider taking only what names it, a team's
    /// DNSProvider, and a Service no provider's zone holds.
    const OBJECTS: &str = r#"
apiVersion: externaldns.k8s.io/v1alpha1
kind: ClusterDNSProvider
metadata: { name: public }
spec:
  type: inmemory
  domainFilter: { include: [example.org] }
  config: { inmemory-zone: [example.org], annotation-filter: external-dns.kubernetes.io/cluster-provider }
---
apiVersion: externaldns.k8s.io/v1alpha1
kind: DNSProvider
metadata: { name: zone, namespace: team-a }
spec:
  type: inmemory
  domainFilter: { include: [team-a.example.com] }
  config: { inmemory-zone: [team-a.example.com] }
---
apiVersion: v1
kind: Service
metadata:
  name: lost
  namespace: team-b
  annotations: { external-dns.alpha.kubernetes.io/hostname: lost.example.net }
spec: { type: LoadBalancer }
status: { loadBalancer: { ingress: [ { ip: 10.0.0.4 } ] } }
---
"#;

    /// `extdns explain QUERY --dns-provider-crds --manifests=...` over [`OBJECTS`]: its exit code, JSON and text.
    async fn explain(query: &str) -> anyhow::Result<(u8, serde_json::Value, String)> {
        let dir = tempfile::tempdir()?;
        let mut line = super::super::tests::manifests_line(
            "explain",
            dir.path(),
            &[INTERNAL_PROVIDER, OBJECTS, SHOP_SERVICE, WEB_SERVICE].concat(),
        )?;
        line.insert(2, query.into());
        let cli = crate::flags::try_parse_from(&line)?;
        let flags = super::super::args::command_flags(cli);
        let fleet = crate::settings::fleet::for_plan(&flags, &line)?;
        let manifests = &flags.offline.manifests;
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run(&fleet, manifests, query, OutputFormat::Json, &mut out, &mut err).await?;
        assert!(err.is_empty(), "{}", String::from_utf8_lossy(&err));
        let json: serde_json::Value = serde_json::from_slice(&out)?;
        let mut text = Vec::new();
        run(
            &fleet,
            manifests,
            query,
            OutputFormat::Table,
            &mut text,
            &mut Vec::new(),
        )
        .await?;
        Ok((code, json, String::from_utf8(text)?))
    }

    fn takers(json: &serde_json::Value) -> Vec<(String, String, String)> {
        json["names"][0]["takenBy"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| {
                let s = |k: &str| t[k].as_str().unwrap_or_default().to_string();
                (s("provider"), s("zone"), s("owner"))
            })
            .collect()
    }

    #[tokio::test]
    async fn a_name_is_mapped_to_the_provider_that_takes_it_with_its_zone_and_owner() -> anyhow::Result<()> {
        let (code, json, text) = explain("web.example.org").await?;
        assert_eq!(code, 0, "{json:#}");
        assert_eq!(
            takers(&json),
            [("internal".into(), "example.org".into(), "internal".into())],
            "{json:#}"
        );
        let not: Vec<&str> = json["names"][0]["notTakenBy"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|n| n["provider"].as_str())
            .collect();
        assert_eq!(not, ["public", "team-a/zone"], "{json:#}");
        assert_eq!(json["names"][0]["warning"], serde_json::Value::Null);
        // Each provider's own answer, as `extdns explain` gives it: internal's names the provider object.
        assert_eq!(json["providers"][0]["provider"], "internal");
        assert_eq!(json["providers"][0]["explanation"]["provider"], "internal");
        assert_eq!(
            json["providers"][0]["explanation"]["names"][0]["askedBy"][0]["reason"],
            "Pending"
        );
        assert!(
            text.contains("taken by:  internal (zone example.org, owner internal)  Pending"),
            "{text}"
        );
        assert!(text.contains("--- provider internal (owner internal)"), "{text}");
        assert!(!text.contains("--- provider public"), "{text}");
        Ok(())
    }

    #[tokio::test]
    async fn a_name_two_providers_take_says_so() -> anyhow::Result<()> {
        let (code, json, text) = explain("service/team-b/shop").await?;
        assert_eq!(code, 0, "{json:#}");
        assert_eq!(json["object"], "service/team-b/shop");
        let providers: Vec<String> = takers(&json).into_iter().map(|(p, _, _)| p).collect();
        assert_eq!(providers, ["internal", "public"], "{json:#}");
        let warning = json["names"][0]["warning"].as_str().unwrap_or_default();
        assert!(
            warning.contains("2 providers take this name") && warning.contains("internal, public"),
            "{warning}"
        );
        assert!(text.contains("note:      2 providers take this name"), "{text}");
        Ok(())
    }

    #[tokio::test]
    async fn a_name_no_provider_takes_says_why_for_each() -> anyhow::Result<()> {
        let (code, json, text) = explain("lost.example.net").await?;
        assert_eq!(code, EXIT_NOT_PUBLISHED, "{json:#}");
        assert_eq!(json["names"][0]["takenBy"], serde_json::json!([]));
        assert_eq!(json["names"][0]["warning"], "no provider takes this name");
        let why: Vec<(String, String)> = json["names"][0]["notTakenBy"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|n| {
                let s = |k: &str| n[k].as_str().unwrap_or_default().to_string();
                (s("provider"), s("why"))
            })
            .collect();
        assert_eq!(why.len(), 3, "{json:#}");
        assert!(why[0].1.starts_with("in none of its zones"), "{why:?}");
        assert_eq!(why[1].1, NOT_ROUTED, "public takes only what asks for it: {why:?}");
        assert!(text.contains("not by:    internal: in none of its zones"), "{text}");
        assert!(text.contains("result: NOT published"), "{text}");
        Ok(())
    }
}
