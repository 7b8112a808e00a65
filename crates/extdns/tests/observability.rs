//! The chart's Grafana dashboard and Prometheus alerts (`charts/extdns/files/`, issue 48): every alert passes
//! `promtool test rules` on recorded series and links its runbook in docs/operations.md; the chart ships both
//! files unchanged; and every metric and label their queries name is exported by a running extdns, read from
//! a live scrape of `/metrics`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use extdns_test_support::cli::{self, write_manifests};
use extdns_test_support::cloudflare_fake::{FakeCloudflare, TOKEN};
use extdns_test_support::dig::short;
use extdns_test_support::manifests::{dns_endpoint, lb_service, node, node_port_service};
use extdns_test_support::proc::Proc;
use extdns_test_support::{free_port, http_get, require};
use serde_json::{Value, json};

type Error = Box<dyn std::error::Error>;

// Shared with tests/dns_server.rs: extdns with its DNS server over the examples.
#[allow(dead_code)]
mod support;

use support::dns_server::{served_port, start, wait_ready};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rules_file() -> PathBuf {
    root().join("charts/extdns/files/prometheus/rules.yaml")
}

fn dashboard_file() -> PathBuf {
    root().join("charts/extdns/files/grafana/extdns.json")
}

fn rules() -> Result<Value, Error> {
    Ok(serde_saphyr::from_str(&std::fs::read_to_string(rules_file())?)?)
}

fn dashboard() -> Result<Value, Error> {
    Ok(serde_json::from_str(&std::fs::read_to_string(dashboard_file())?)?)
}

/// Every alerting rule of the rules file.
fn alerts(rules: &Value) -> Vec<&Value> {
    rules["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| g["rules"].as_array().into_iter().flatten())
        .filter(|r| r["alert"].is_string())
        .collect()
}

/// Every PromQL expression of the dashboard's panels and of the rules.
fn queries() -> Result<Vec<String>, Error> {
    fn targets(panel: &Value, out: &mut Vec<String>) {
        for t in panel["targets"].as_array().into_iter().flatten() {
            if let Some(e) = t["expr"].as_str() {
                out.push(e.to_string());
            }
        }
        for p in panel["panels"].as_array().into_iter().flatten() {
            targets(p, out);
        }
    }
    let mut out = Vec::new();
    for p in dashboard()?["panels"].as_array().into_iter().flatten() {
        targets(p, &mut out);
    }
    let rules = rules()?;
    out.extend(
        rules["groups"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|g| g["rules"].as_array().into_iter().flatten())
            .filter_map(|r| r["expr"].as_str().map(str::to_string)),
    );
    Ok(out)
}

/// The metric names (`extdns_*`, `external_dns_*`) a query names, and the labels it names beside each: in the
/// metric's `{...}` matchers and in the `by (...)` of the aggregation around it.
fn names_and_labels(query: &str) -> BTreeMap<String, BTreeSet<String>> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    let mut found: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    // The labels of the innermost `by (...)` still open, by the depth of parentheses it applies within.
    let mut by: Vec<(usize, BTreeSet<String>)> = Vec::new();
    let chars: Vec<char> = query.chars().collect();
    let (mut i, mut depth) = (0, 0usize);
    while i < chars.len() {
        let c = chars[i];
        if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            continue;
        }
        if c == '(' {
            depth += 1;
        } else if c == ')' {
            depth = depth.saturating_sub(1);
            by.retain(|(d, _)| *d <= depth);
        }
        if !(c.is_ascii_alphabetic() || c == '_') || (i > 0 && ident(chars[i - 1])) {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && ident(chars[i]) {
            i += 1;
        }
        let word: String = chars[start..i].iter().collect();
        let rest: String = chars[i..].iter().collect();
        if word == "by" && rest.trim_start().starts_with('(') {
            let open = i + rest.find('(').unwrap_or(0);
            let close = chars[open..]
                .iter()
                .position(|&c| c == ')')
                .map_or(chars.len(), |p| open + p);
            let labels = chars[open + 1..close]
                .iter()
                .collect::<String>()
                .split(',')
                .map(|l| l.trim().to_string())
                .filter(|l| !l.is_empty())
                .collect();
            // The aggregation's argument is the parenthesis after the label list, one level deeper.
            by.push((depth + 1, labels));
            i = close + 1;
            continue;
        }
        if !(word.starts_with("extdns_") || word.starts_with("external_dns_")) {
            continue;
        }
        let entry = found.entry(word).or_default();
        for (_, labels) in &by {
            entry.extend(labels.iter().cloned());
        }
        if let Some(selector) = rest.strip_prefix('{') {
            entry.extend(matcher_labels(selector));
        }
    }
    found
}

/// The label names of a selector's matchers, `rest` starting after its `{`: each name before its operator,
/// the quoted values (which may hold `,` and `}`) skipped.
fn matcher_labels(rest: &str) -> Vec<String> {
    let mut labels = Vec::new();
    let mut chars = rest.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace() || *c == ',').is_some() {}
        let name: String = std::iter::from_fn(|| chars.next_if(|c| c.is_ascii_alphanumeric() || *c == '_')).collect();
        if name.is_empty() {
            return labels;
        }
        labels.push(name);
        while chars.next_if(|c| *c != '"' && *c != '}').is_some() {}
        if chars.next() != Some('"') {
            return labels;
        }
        while let Some(c) = chars.next() {
            match c {
                '\\' => {
                    chars.next();
                }
                '"' => break,
                _ => {}
            }
        }
    }
}

/// Labels Prometheus adds to every series of a target (the ServiceMonitor's namespace and pod, the job
/// and instance), never the binary's.
const TARGET_LABELS: [&str; 4] = ["namespace", "pod", "job", "instance"];

#[test]
fn the_query_reader_finds_names_in_matchers_and_aggregations() {
    let found = names_and_labels(
        r#"sum by (namespace, pod) (rate(extdns_dns_server_answers_total{rcode="SERVFAIL", x=~"a,b}"}[5m])) / time() > 0"#,
    );
    let labels: Vec<&str> = found["extdns_dns_server_answers_total"]
        .iter()
        .map(String::as_str)
        .collect();
    assert_eq!(labels, ["namespace", "pod", "rcode", "x"]);
    let found = names_and_labels("max by (host) (external_dns_a{q=\"1\"}) or external_dns_b");
    assert!(found["external_dns_b"].is_empty(), "{found:?}");
}

#[test]
fn every_alert_has_a_runbook_in_docs_operations() -> Result<(), Error> {
    let rules = rules()?;
    let doc = std::fs::read_to_string(root().join("docs/operations.md"))?;
    let section = doc
        .split("\n## Alerts and runbooks\n")
        .nth(1)
        .ok_or("docs/operations.md has no \"Alerts and runbooks\" section")?;
    let section = section.split("\n## ").next().unwrap_or(section);
    let alerts = alerts(&rules);
    assert!(alerts.len() >= 6, "{} alerts", alerts.len());
    for alert in alerts {
        let name = alert["alert"].as_str().unwrap_or_default();
        let url = alert["annotations"]["runbook_url"].as_str().unwrap_or_default();
        let anchor = format!("docs/operations.md#{}", name.to_ascii_lowercase());
        assert!(
            url.ends_with(&anchor),
            "{name}: runbook_url {url:?}, expected …{anchor}"
        );
        assert!(
            section.contains(&format!("\n### {name}\n")),
            "{name}: no runbook heading in docs/operations.md"
        );
        assert!(alert["annotations"]["summary"].is_string(), "{name}: no summary");
        assert!(alert["labels"]["severity"].is_string(), "{name}: no severity");
    }
    Ok(())
}

/// `promtool check rules` and `promtool test rules` on the recorded series of
/// tests/fixtures/prometheus/rules_test.yaml, which exercises every alert.
#[test]
fn every_alert_passes_promtool_on_recorded_series() -> Result<(), Error> {
    require!(Promtool);
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/prometheus/rules_test.yaml");
    let text = std::fs::read_to_string(&tests)?;
    for alert in alerts(&rules()?) {
        let name = alert["alert"].as_str().unwrap_or_default();
        assert!(
            text.contains(&format!("alertname: {name}\n")),
            "{name} has no promtool test"
        );
    }
    for (verb, file) in [("check", rules_file()), ("test", tests)] {
        let out = Command::new("promtool").args([verb, "rules"]).arg(&file).output()?;
        assert!(
            out.status.success(),
            "promtool {verb} rules {}:\n{}{}",
            file.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// The chart's ConfigMap and PrometheusRule carry the two files unchanged.
#[test]
fn the_chart_ships_the_dashboard_and_the_rules_unchanged() -> Result<(), Error> {
    require!(Helm);
    let helm = std::env::var_os("EXTDNS_TEST_HELM").ok_or("EXTDNS_TEST_HELM")?;
    let dir = tempfile::tempdir()?;
    let values = dir.path().join("values.yaml");
    let v = json!({"policy": "sync", "dashboards": {"enabled": true}, "prometheusRule": {"enabled": true}});
    std::fs::write(&values, serde_json::to_string(&v)?)?;
    let out = Command::new(helm)
        .args(["template", "obs"])
        .arg(root().join("charts/extdns"))
        .args(["--show-only", "templates/grafana-dashboard.yaml"])
        .args(["--show-only", "templates/prometheusrule.yaml", "--values"])
        .arg(&values)
        .env("HELM_CACHE_HOME", dir.path().join("cache"))
        .env("HELM_CONFIG_HOME", dir.path().join("config"))
        .env("HELM_DATA_HOME", dir.path().join("data"))
        .output()?;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout)?;
    let docs: Vec<Value> = text
        .split("\n---\n")
        .filter(|d| d.contains("kind:"))
        .map(serde_saphyr::from_str)
        .collect::<Result<_, _>>()?;
    let of = |kind: &str| docs.iter().find(|d| d["kind"] == kind).ok_or(format!("no {kind}"));
    let shipped: Value = serde_json::from_str(of("ConfigMap")?["data"]["extdns.json"].as_str().unwrap_or_default())?;
    assert_eq!(shipped, dashboard()?);
    assert_eq!(of("PrometheusRule")?["spec"]["groups"], rules()?["groups"]);
    Ok(())
}

/// A scrape's families (from `# TYPE`) and the label names each family's samples carry.
fn exported(scrape: &str) -> (BTreeSet<String>, BTreeMap<String, BTreeSet<String>>) {
    let mut families = BTreeSet::new();
    let mut labels: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in scrape.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            families.extend(rest.split(' ').next().map(str::to_string));
            continue;
        }
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((name, rest)) = line.split_once('{') else {
            if let Some((name, _)) = line.split_once(' ') {
                labels.entry(name.to_string()).or_default();
            }
            continue;
        };
        let set = labels.entry(name.to_string()).or_default();
        let inner = rest.rsplit_once('}').map_or(rest, |(l, _)| l);
        for pair in inner.split("\",") {
            if let Some((k, _)) = pair.split_once("=\"") {
                set.insert(k.trim_start_matches(',').to_string());
            }
        }
    }
    (families, labels)
}

/// The family a sample name belongs to: the name itself, or a summary's without `_count`/`_sum`.
fn family_of<'a>(name: &'a str, families: &BTreeSet<String>) -> Option<&'a str> {
    if families.contains(name) {
        return Some(name);
    }
    ["_count", "_sum", "_total"]
        .iter()
        .filter_map(|s| name.strip_suffix(s))
        .find(|base| families.contains(*base))
}

/// A Cloudflare zone (the fake) for the second run.
const ZONE: &str = "023e105f4ecef8ad9ca31a8372d0c353";

/// The served DNS's families with samples: extdns with its DNS server over the examples, asked for a name it
/// has, one it has not, and a zone transfer it refuses.
fn dns_server_scrape(dir: &Path) -> Result<String, Error> {
    let metrics = free_port();
    let extdns = start(dir, &[&format!("--metrics-address=127.0.0.1:{metrics}")])?;
    let port = served_port(&extdns)?;
    wait_ready(metrics)?;
    assert_eq!(short(port, "web.example.com", "A"), ["203.0.113.10"]);
    assert!(short(port, "absent.example.com", "A").is_empty());
    let axfr = Command::new("dig")
        .args(["@127.0.0.1", "-p", &port.to_string(), "example.com.", "AXFR"])
        .output()?;
    assert!(
        String::from_utf8_lossy(&axfr.stdout).contains("failed"),
        "{}",
        String::from_utf8_lossy(&axfr.stdout)
    );
    Ok(http_get(metrics, "/metrics")?)
}

/// The families of a provider over HTTP and of a sync that skips, drops and deduplicates: extdns with the
/// TXT registry on the Cloudflare fake, whose `web.example.org` A record another owner id holds, over a
/// Service asking for an AAAA record there, a record a Service and a DNSEndpoint both ask for, and a NodePort
/// Service marked as an alias, whose SRV record is invalid.
fn cloudflare_scrape(dir: &Path) -> Result<(String, String), Error> {
    let cf = FakeCloudflare::start(&[(ZONE, "example.org")]);
    cf.seed(ZONE, "web.example.org", "A", "192.0.2.99");
    cf.seed(
        ZONE,
        "a-web.example.org",
        "TXT",
        "\"heritage=external-dns,external-dns/owner=other,external-dns/resource=service/default/web\"",
    );
    let manifests = dir.join("manifests");
    std::fs::create_dir_all(&manifests)?;
    let docs = [
        // An AAAA record where another owner holds the A record: not created, the other owner named.
        lb_service("web", "web.example.org", &["2001:db8::10"], &[]),
        // One record asked for by a Service and a DNSEndpoint: the second dropped as a duplicate.
        lb_service("one", "dup.example.org", &["192.0.2.20"], &[]),
        dns_endpoint("dup", &[("dup.example.org", "A", "192.0.2.20")]),
        // A NodePort Service marked as an alias: its SRV record cannot be one, and is dropped as invalid.
        node_port_service("np", "np.example.org").replacen(
            "annotations:\n",
            "annotations:\n    external-dns.kubernetes.io/alias: \"true\"\n",
            1,
        ),
        node("n1", &[("ExternalIP", "198.51.100.1")]),
    ];
    write_manifests(&manifests, &docs.join("---\n"));
    let metrics = free_port();
    let mut cmd = cli::command(env!("CARGO_BIN_EXE_extdns"), &["CF_"]);
    cmd.env("CF_API_TOKEN", TOKEN)
        .env("EXTDNS_CLOUDFLARE_API_URL", &cf.url)
        .args([
            "--source=service",
            "--source=crd",
            "--provider=cloudflare",
            "--registry=txt",
        ])
        .args(["--txt-owner-id=me", "--domain-filter=example.org", "--interval=1h"])
        .arg(format!("--metrics-address=127.0.0.1:{metrics}"))
        .arg("--manifests")
        .arg(&manifests);
    let extdns = Proc::spawn("extdns", cmd, &dir.join("cloudflare.log"))?;
    wait_ready(metrics).map_err(|e| format!("{e}; its log:\n{}", extdns.log_text()))?;
    let scrape = http_get(metrics, "/metrics")?;
    assert!(
        cf.lines().iter().any(|l| l.starts_with("dup.example.org A 192.0.2.20")),
        "{:?}",
        cf.lines()
    );
    Ok((scrape, extdns.log_text()))
}

/// Two running extdns, scraped (see [`dns_server_scrape`] and [`cloudflare_scrape`]): every metric the
/// dashboard and the alerts query is a family of their scrapes, and every label it names is on that family's
/// samples, a target label Prometheus adds, or `provider`, which `--dns-provider-crds` adds to every family
/// (the next test).
#[test]
fn every_metric_and_label_queried_is_exported_by_a_running_extdns() -> Result<(), Error> {
    require!(DnsClients);
    let dir = tempfile::tempdir()?;
    let (cloudflare, log) = cloudflare_scrape(dir.path())?;
    let scrape = format!("{}\n{cloudflare}", dns_server_scrape(dir.path())?);
    let (families, sampled) = exported(&scrape);
    let mut problems = Vec::new();
    let mut checked = 0;
    for query in queries()? {
        for (name, labels) in names_and_labels(&query) {
            checked += 1;
            let Some(family) = family_of(&name, &families) else {
                problems.push(format!("{name}: not exported (query {query:?})"));
                continue;
            };
            let on_samples = sampled.get(&name).or_else(|| sampled.get(family));
            let Some(on_samples) = on_samples else {
                problems.push(format!("{name}: no sample in the scrapes to read its labels from"));
                continue;
            };
            for label in labels {
                if !(TARGET_LABELS.contains(&label.as_str()) || label == "provider" || on_samples.contains(&label)) {
                    problems.push(format!("{name}: no label {label:?} (query {query:?})"));
                }
            }
        }
    }
    assert!(checked >= 20, "only {checked} metric references read from the queries");
    assert!(
        problems.is_empty(),
        "{}\n\nscrapes:\n{scrape}\n\nthe Cloudflare run's log:\n{log}",
        problems.join("\n")
    );
    Ok(())
}

/// `--dns-provider-crds` labels every family's samples `provider` (the label the queries group by).
#[test]
fn the_provider_label_is_on_every_family_of_a_provider_object() {
    let root = std::sync::Arc::new(extdns_controller::Metrics::for_providers("1", "x"));
    let child = std::sync::Arc::new(root.child());
    root.attach("team-a/public", child);
    let text = root.encode();
    for family in [
        "external_dns_controller_consecutive_soft_errors",
        "external_dns_controller_last_sync_timestamp_seconds",
        "external_dns_registry_errors_total",
    ] {
        assert!(
            text.contains(&format!("{family}{{provider=\"team-a/public\"}}")),
            "{family}:\n{text}"
        );
    }
}
