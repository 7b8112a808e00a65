//! external-dns's own chart tests, run against our chart: the helm-unittest suites of `charts/external-dns/tests`
//! of both releases extdns answers for ([`EXTERNAL_DNS_PREVIOUS`] and [`EXTERNAL_DNS`]), copied into a scratch
//! copy of `charts/extdns` (under `target/chart-tests/<version>/`) with the rewrites of [`REWRITES`] and nothing
//! else, and run by helm-unittest. Every case must pass except the deliberate differences of [`DELIBERATE`]
//! (the same list is in docs/migration.md); a listed case that passes fails the step too, so the list stays true.
//!
//! Our own `charts/extdns/tests/*.yaml` are not helm-unittest suites (their format is read by
//! `crates/extdns/tests/chart.rs`, which also has extdns parse every rendered argument list) and are left out of
//! the scratch copy.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::gobuild::{EXTERNAL_DNS, EXTERNAL_DNS_PREVIOUS, GoBinaries, copy_dir_except};

/// One textual rewrite of external-dns's suites, applied to every suite file, exactly once in each (a suite
/// where it does not apply once fails the step: upstream changed, and the rewrite must be looked at again).
struct Rewrite {
    find: &'static str,
    replace: &'static str,
    why: &'static str,
}

/// Every rewrite of external-dns's suites. Our templates carry external-dns's file names (`clusterrole.yaml`,
/// `clusterrolebinding.yaml`, ...), so no `template:` needs renaming.
const REWRITES: &[Rewrite] = &[Rewrite {
    find: "\nset:\n",
    replace: "\nset:\n  nameOverride: external-dns\n",
    why: "our chart is named extdns, so its objects are `<release>-extdns` and its name label `extdns`; \
          `nameOverride: external-dns` is the documented value that keeps external-dns's object names \
          (docs/migration.md), and the suites check those names",
}];

/// A case of external-dns's suites our chart fails on purpose.
struct Deliberate {
    suite: &'static str,
    case: &'static str,
    why: &'static str,
}

/// The deliberate differences, each with its reason (docs/migration.md lists them too).
const DELIBERATE: &[Deliberate] = &[
    Deliberate {
        suite: "All resources contains metadata",
        case: "should contain labels metadata in each template",
        why: "the `helm.sh/chart` label names the chart, `extdns-<version>`; and poddisruptionbudget.yaml \
              (extdns only) renders nothing with one replica",
    },
    Deliberate {
        suite: "Deployment configuration",
        case: "should reject replicaCount greater than 1",
        why: "extdns has leader election: `replicaCount` above 1 runs several replicas, one leader writing",
    },
    Deliberate {
        suite: "Test NOTES.txt deprecations",
        case: "should output a deprecation message when legacy provider configuration is in use",
        why: "NOTES.txt is extdns's own text: it announces the deprecated `provider: <name>` in its own words",
    },
    Deliberate {
        suite: "NOTES.txt output",
        case: "should display message",
        why: "NOTES.txt is extdns's own text, naming the extdns image",
    },
    Deliberate {
        suite: "RBAC configuration",
        case: "should create only namespaced RBAC when namespaced=true and gatewayNamespace is specified",
        why: "the Gateway sources list Namespaces cluster-wide whatever `gatewayNamespace` says (external-dns's \
              too); without the ClusterRole `<fullname>-namespaces` they could not run at all",
    },
    // --- ambassador-host source ---
    Deliberate {
        suite: "RBAC configuration",
        case: "should create default RBAC rules for 'ambassador-host'",
        why: "the ambassador-host source reads the Service a Host's `external-dns.ambassador-service` annotation \
              names: our chart grants Services for it too, which external-dns's chart forgets (its source then \
              fails to read the Service unless the service source is selected as well)",
    },
];

/// Runs both releases' suites against `charts/extdns`.
pub fn run(go: &GoBinaries) -> Result<()> {
    let releases = [
        (EXTERNAL_DNS_PREVIOUS.version, &go.external_dns_previous_chart),
        (EXTERNAL_DNS.version, &go.external_dns_chart),
    ];
    let mut seen_deliberate = vec![false; DELIBERATE.len()];
    let mut problems = Vec::new();
    for (version, upstream) in releases {
        let (results, printed) = run_release(&go.helm_unittest, version, &upstream.join("tests"))?;
        let before = problems.len();
        let (mut passed, mut deliberate) = (0, 0);
        for ((suite, case), failed) in &results {
            let listed = DELIBERATE.iter().position(|d| d.suite == suite && d.case == case);
            if let Some(i) = listed {
                seen_deliberate[i] = true;
            }
            match (*failed, listed) {
                (false, None) => passed += 1,
                (true, Some(_)) => deliberate += 1,
                (true, None) => problems.push(format!("{version}: {suite} / {case}: fails")),
                (false, Some(i)) => problems.push(format!(
                    "{version}: {suite} / {case}: passes, but is listed as a deliberate difference ({}); \
                     take it out of chart_tests::DELIBERATE and docs/migration.md",
                    DELIBERATE[i].why
                )),
            }
        }
        if problems.len() > before {
            // helm-unittest's own report says what failed and why.
            eprint!("{printed}");
        }
        eprintln!(
            "xtask: external-dns {version}'s chart tests on charts/extdns: {} cases, {passed} pass, {deliberate} \
             deliberate differences",
            results.len()
        );
    }
    for (d, seen) in DELIBERATE.iter().zip(seen_deliberate) {
        if !seen {
            problems.push(format!(
                "{} / {}: listed as a deliberate difference, but no suite has this case",
                d.suite, d.case
            ));
        }
    }
    if !problems.is_empty() {
        bail!(
            "external-dns's chart tests on charts/extdns (helm-unittest's report above):\n  {}",
            problems.join("\n  ")
        );
    }
    Ok(())
}

/// The outcome of each case: (suite, case) → whether it failed.
type Results = BTreeMap<(String, String), bool>;

/// One release's suites run in a fresh scratch copy of our chart: each case's outcome, and what helm-unittest
/// printed.
fn run_release(helm_unittest: &Path, version: &str, suites: &Path) -> Result<(Results, String)> {
    let scratch = crate::target_dir().join("chart-tests").join(version);
    let _ = std::fs::remove_dir_all(&scratch);
    let chart = scratch.join("extdns");
    // The chart without `tests/` (ours are not helm-unittest suites).
    copy_dir_except(&crate::root().join("charts/extdns"), &chart, &["tests"])?;
    let tests = chart.join("tests");
    std::fs::create_dir_all(&tests).with_context(|| format!("creating {}", tests.display()))?;
    let mut cases = 0;
    let mut files: Vec<_> = std::fs::read_dir(suites)
        .with_context(|| format!("reading {}", suites.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with("_test.yaml"))
        .collect();
    files.sort();
    if files.is_empty() {
        bail!("no *_test.yaml suites in {}", suites.display());
    }
    for file in &files {
        let name = file.file_name().context("a suite without a file name")?;
        let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        let text = rewrite(&text).with_context(|| format!("{version} {}", name.to_string_lossy()))?;
        cases += text.lines().filter(|l| l.trim_start().starts_with("- it:")).count();
        std::fs::write(tests.join(name), text)?;
    }
    let report = scratch.join("report.xml");
    let mut cmd = Command::new(helm_unittest);
    cmd.arg("--color=false")
        .arg("--output-type=JUnit")
        .arg("--output-file")
        .arg(&report)
        .arg(&chart);
    let shown = format!("{cmd:?}");
    let out = cmd.output().with_context(|| format!("cannot start {shown}"))?;
    let text = std::fs::read_to_string(&report).with_context(|| {
        format!(
            "{shown} wrote no report ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })?;
    let printed = String::from_utf8_lossy(&out.stdout).into_owned();
    let results = parse_junit(&text);
    if results.len() != cases {
        bail!(
            "{version}: the suites have {cases} cases, helm-unittest reported {} (a suite that does not load?):\n{printed}",
            results.len()
        );
    }
    Ok((results, printed))
}

/// `text` with every rewrite applied once.
fn rewrite(text: &str) -> Result<String> {
    let mut text = text.to_string();
    for r in REWRITES {
        let found = text.matches(r.find).count();
        if found != 1 {
            bail!(
                "the rewrite of {:?} (because {}) matches {found} times, not once",
                r.find,
                r.why
            );
        }
        text = text.replacen(r.find, r.replace, 1);
    }
    Ok(text)
}

/// The cases of helm-unittest's JUnit report: (suite, case) → whether it failed. A case is a `<testcase>`
/// element, its suite the `classname` attribute; it failed when a `<failure` or `<error` element is inside it.
fn parse_junit(xml: &str) -> Results {
    let mut cases = BTreeMap::new();
    let mut rest = xml;
    while let Some(start) = rest.find("<testcase ") {
        rest = &rest[start..];
        let tag_end = rest.find('>').unwrap_or(rest.len());
        let tag = &rest[..tag_end];
        let (body, next) = if tag.ends_with('/') {
            ("", &rest[tag_end..])
        } else {
            match rest.find("</testcase>") {
                Some(end) => (&rest[tag_end..end], &rest[end..]),
                None => (&rest[tag_end..], ""),
            }
        };
        let failed = body.contains("<failure") || body.contains("<error");
        cases.insert((attribute(tag, "classname"), attribute(tag, "name")), failed);
        rest = next;
    }
    cases
}

/// An attribute's value in a start tag, unescaped; empty when absent.
fn attribute(tag: &str, name: &str) -> String {
    let key = format!(" {name}=\"");
    let Some(start) = tag.find(&key).map(|i| i + key.len()) else {
        return String::new();
    };
    let value = &tag[start..];
    unescape(&value[..value.find('"').unwrap_or(value.len())])
}

/// XML's entities and character references.
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let Some(semi) = rest.find(';') else { break };
        let entity = &rest[1..semi];
        let c = match entity {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => entity
                .strip_prefix("#x")
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .or_else(|| entity.strip_prefix('#').and_then(|d| d.parse().ok()))
                .and_then(char::from_u32),
        };
        match c {
            Some(c) => {
                out.push(c);
                rest = &rest[semi + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn junit_cases_are_read_with_their_suite_and_outcome() {
        let xml = "<testsuites>\n<testsuite name=\"RBAC configuration\">\n\
                   <testcase classname=\"RBAC configuration\" name=\"should create &#39;crd&#39; &amp; more\" time=\"0\">\
                   <failure message=\"Failed\"> - asserts[0] </failure></testcase>\n\
                   <testcase classname=\"RBAC configuration\" name=\"passes\" time=\"0\"></testcase>\n\
                   <testcase classname=\"NOTES.txt output\" name=\"empty\"/>\n</testsuite></testsuites>";
        let cases = parse_junit(xml);
        let get = |s: &str, c: &str| cases.get(&(s.to_string(), c.to_string())).copied();
        assert_eq!(cases.len(), 3);
        assert_eq!(get("RBAC configuration", "should create 'crd' & more"), Some(true));
        assert_eq!(get("RBAC configuration", "passes"), Some(false));
        assert_eq!(get("NOTES.txt output", "empty"), Some(false));
    }

    #[test]
    fn a_rewrite_applies_once_or_fails() -> Result<()> {
        let suite = "suite: x\nset:\n  policy: upsert-only\ntests:\n  - it: y\n";
        assert_eq!(
            rewrite(suite)?,
            "suite: x\nset:\n  nameOverride: external-dns\n  policy: upsert-only\ntests:\n  - it: y\n"
        );
        assert!(rewrite("suite: x\ntests: []\n").is_err());
        Ok(())
    }

    #[test]
    fn unescape_keeps_unknown_entities_as_text() {
        assert_eq!(unescape("a &lt;b&gt; &#x41;&#66; &nbsp; &"), "a <b> AB &nbsp; &");
    }
}
