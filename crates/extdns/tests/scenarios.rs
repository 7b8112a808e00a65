//! Scenario tests: every YAML file under `tests/scenarios/` is one scenario (objects, flags, expected
//! endpoints), run through the same code path as `extdns endpoints`: the objects are written to a manifest file,
//! the arguments are parsed by the real flag parser with `--manifests` added, and the endpoints are collected
//! by `extdns::endpoints::collect_counting_skipped`.
//!
//! Comparison: order-insensitive; targets as sets; `recordTTL` and `setIdentifier` always (0 and "" when not
//! given); `labels` and `providerSpecific` only when the scenario gives them. Load balancer hostnames resolve
//! only through the scenario's `resolve` map (host → addresses). `SCENARIO=<substring>` runs only
//! the scenarios whose file path or name contains it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use extdns::flags::{self, Command};
use extdns_endpoint::Endpoint;
use extdns_source::StaticResolver;
use serde::Deserialize;

type Error = Box<dyn std::error::Error>;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Scenario {
    name: String,
    #[serde(default)]
    #[allow(dead_code)]
    description: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    objects: Vec<serde_json::Value>,
    #[serde(default)]
    expected: Vec<Expected>,
    /// Answers for `--resolve-service-load-balancer-hostname` (host → addresses); other names do not
    /// resolve. Scenarios never touch the network.
    #[serde(default)]
    resolve: BTreeMap<String, Vec<std::net::IpAddr>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Expected {
    dns_name: String,
    record_type: String,
    #[serde(default)]
    targets: Vec<String>,
    #[serde(default)]
    set_identifier: String,
    #[serde(default, rename = "recordTTL")]
    record_ttl: i64,
    #[serde(default)]
    labels: Option<BTreeMap<String, String>>,
    #[serde(default)]
    provider_specific: Option<Vec<Property>>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(deny_unknown_fields)]
struct Property {
    name: String,
    #[serde(default)]
    value: String,
}

impl Expected {
    fn target_set(&self) -> BTreeSet<&str> {
        self.targets.iter().map(String::as_str).collect()
    }

    fn same_record(&self, e: &Endpoint) -> bool {
        self.dns_name == e.dns_name
            && self.record_type == e.record_type.as_str()
            && self.set_identifier == e.set_identifier
    }

    /// Every field the scenario compares, as a list of differences (empty = match).
    fn differences(&self, e: &Endpoint) -> Vec<String> {
        let mut d = Vec::new();
        let got: BTreeSet<&str> = e.targets.iter().map(extdns_endpoint::Target::as_str).collect();
        if self.target_set() != got {
            d.push(format!("targets: expected {:?}, got {:?}", self.target_set(), got));
        }
        if self.record_ttl != e.record_ttl.0 {
            d.push(format!(
                "recordTTL: expected {}, got {}",
                self.record_ttl, e.record_ttl.0
            ));
        }
        if let Some(labels) = &self.labels {
            // As `extdns endpoints` prints them: the `resource` label rendered from the record's object.
            let got: BTreeMap<String, String> = e.labels_as_written().into_iter().collect();
            if *labels != got {
                d.push(format!("labels: expected {labels:?}, got {got:?}"));
            }
        }
        if let Some(ps) = &self.provider_specific {
            let mut want = ps.clone();
            want.sort();
            let mut got: Vec<Property> = e
                .provider_specific
                .iter()
                .map(|p| Property {
                    name: p.name.clone(),
                    value: p.value.clone(),
                })
                .collect();
            got.sort();
            if want != got {
                d.push(format!("providerSpecific: expected {want:?}, got {got:?}"));
            }
        }
        d
    }
}

impl std::fmt::Display for Expected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} {:?}", self.dns_name, self.record_type, self.targets)?;
        if self.record_ttl != 0 {
            write!(f, " recordTTL={}", self.record_ttl)?;
        }
        if !self.set_identifier.is_empty() {
            write!(f, " setIdentifier={}", self.set_identifier)?;
        }
        Ok(())
    }
}

fn show(e: &Endpoint) -> String {
    serde_json::to_string(e).unwrap_or_else(|_| e.to_string())
}

/// Every `*.yaml`/`*.yml` file below `dir`, sorted.
fn scenario_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), Error> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    entries.sort();
    for path in entries {
        if path.is_dir() {
            scenario_files(&path, out)?;
        } else if path.extension().is_some_and(|x| x == "yaml" || x == "yml") {
            out.push(path);
        }
    }
    Ok(())
}

/// Runs one scenario; `Ok(None)` when it passes, `Ok(Some(report))` when the endpoints differ.
async fn run(path: &Path, scenario: &Scenario) -> Result<Option<String>, Error> {
    let dir = tempfile::tempdir()?;
    let manifest = dir.path().join("objects.yaml");
    // JSON is YAML: one JSON document per object keeps every value exactly as the scenario wrote it.
    let mut text = String::new();
    for object in &scenario.objects {
        text.push_str("---\n");
        text.push_str(&serde_json::to_string(object)?);
        text.push('\n');
    }
    std::fs::write(&manifest, text)?;

    let mut argv: Vec<String> = vec!["extdns".into(), "endpoints".into()];
    argv.extend(scenario.args.iter().cloned());
    argv.push("--manifests".into());
    argv.push(manifest.display().to_string());
    let cli = flags::try_parse_from(&argv).map_err(|e| format!("arguments {:?}: {e}", scenario.args))?;
    let Some(Command::Endpoints(args)) = cli.command else {
        return Err("not the endpoints command".into());
    };
    let mut resolver = StaticResolver::new();
    for (host, ips) in &scenario.resolve {
        resolver.insert(host, ips.iter().copied());
    }
    let settings = extdns::settings::endpoints(&args.flags)?;
    let (actual, _) = extdns::endpoints::collect_counting_skipped(&settings, Some(Arc::new(resolver))).await?;

    let mut unmatched: Vec<&Endpoint> = actual.iter().collect();
    let mut missing: Vec<&Expected> = Vec::new();
    for want in &scenario.expected {
        match unmatched
            .iter()
            .position(|e| want.same_record(e) && want.differences(e).is_empty())
        {
            Some(i) => {
                unmatched.remove(i);
            }
            None => missing.push(want),
        }
    }
    if missing.is_empty() && unmatched.is_empty() {
        return Ok(None);
    }
    let mut report = format!("scenario {:?} ({}):\n", scenario.name, path.display());
    for want in &missing {
        match unmatched.iter().position(|e| want.same_record(e)) {
            Some(i) => {
                let got = unmatched.remove(i);
                let _ = writeln!(report, "  differs: {want}");
                for d in want.differences(got) {
                    let _ = writeln!(report, "      {d}");
                }
            }
            None => {
                let _ = writeln!(report, "  missing: {want}");
            }
        }
    }
    for got in unmatched {
        let _ = writeln!(report, "  unexpected: {}", show(got));
    }
    let _ = writeln!(report, "  all produced endpoints:");
    for e in &actual {
        let _ = writeln!(report, "    {}", show(e));
    }
    Ok(Some(report))
}

#[tokio::test]
async fn scenarios() -> Result<(), Error> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios");
    let mut files = Vec::new();
    scenario_files(&root, &mut files)?;
    let only = std::env::var("SCENARIO").ok();
    let mut names = BTreeMap::new();
    let (mut ran, mut failures) = (0, Vec::new());
    for path in &files {
        let text = std::fs::read_to_string(path)?;
        let scenario: Scenario = match serde_saphyr::from_str(&text) {
            Ok(s) => s,
            Err(e) => {
                failures.push(format!("{}: not a valid scenario: {e}\n", path.display()));
                continue;
            }
        };
        if let Some(previous) = names.insert(scenario.name.clone(), path.clone()) {
            failures.push(format!(
                "{}: scenario name {:?} also used by {}\n",
                path.display(),
                scenario.name,
                previous.display()
            ));
        }
        if only
            .as_ref()
            .is_some_and(|o| !path.display().to_string().contains(o.as_str()) && !scenario.name.contains(o.as_str()))
        {
            continue;
        }
        ran += 1;
        match run(path, &scenario).await {
            Ok(None) => {}
            Ok(Some(report)) => failures.push(report),
            Err(e) => failures.push(format!(
                "scenario {:?} ({}): error: {e}\n",
                scenario.name,
                path.display()
            )),
        }
    }
    assert!(
        ran > 0,
        "no scenario found under {} (SCENARIO={only:?})",
        root.display()
    );
    assert!(
        failures.is_empty(),
        "{} of {ran} scenarios failed:\n\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!("{ran} scenarios passed");
    Ok(())
}
