//! The two exposition formats a Prometheus scrape may ask for, and the families prometheus-client cannot
//! express (the `process_*` gauges and counters read at scrape time, the request-duration summary).
//!
//! prometheus-client writes OpenMetrics only. Prometheus client libraries answer the older text format
//! (`text/plain; version=0.0.4`) unless the scraper asks for OpenMetrics, and some scrapers (and people
//! with curl) only read the text format, so the OpenMetrics text is rewritten where the two differ: a
//! counter's family is named with its `_total` in the text format, and `# UNIT` and `# EOF` do not exist.

use std::fmt::Write as _;

/// `Content-Type` of the text format.
pub const TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";
/// `Content-Type` of OpenMetrics.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Which exposition format a scrape gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Prometheus's text format 0.0.4, the answer when the scraper does not ask for OpenMetrics.
    Text,
    /// OpenMetrics 1.0.0, for scrapers that ask for it (exemplars, `_created`).
    OpenMetrics,
}

impl Format {
    /// The format an `Accept` header asks for, as Prometheus client libraries choose: the acceptable media
    /// types by falling quality (the header's order breaks ties); the first that is OpenMetrics or the text
    /// format wins; nothing acceptable, or no header, means the text format.
    pub fn negotiate(accept: Option<&str>) -> Format {
        let Some(accept) = accept else {
            return Format::Text;
        };
        let mut offers: Vec<(f32, &str)> = accept
            .split(',')
            .filter_map(|part| {
                let mut params = part.split(';');
                let media = params.next()?.trim();
                let mut q = 1.0_f32;
                for p in params {
                    if let Some((k, v)) = p.split_once('=')
                        && k.trim().eq_ignore_ascii_case("q")
                    {
                        q = v.trim().parse().unwrap_or(0.0);
                    }
                }
                (q > 0.0).then_some((q, media))
            })
            .collect();
        // Stable: equal qualities keep the header's order.
        offers.sort_by(|a, b| b.0.total_cmp(&a.0));
        for (_, media) in offers {
            if media.eq_ignore_ascii_case("application/openmetrics-text") {
                return Format::OpenMetrics;
            }
            if media.eq_ignore_ascii_case("text/plain") || media == "*/*" || media.eq_ignore_ascii_case("text/*") {
                return Format::Text;
            }
        }
        Format::Text
    }

    /// The `Content-Type` of an answer in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Text => TEXT,
            Format::OpenMetrics => OPENMETRICS,
        }
    }
}

/// prometheus-client's OpenMetrics text without its `# EOF`, in `format`.
pub(crate) fn from_openmetrics(openmetrics: &str, format: Format) -> String {
    let body = openmetrics.strip_suffix("# EOF\n").unwrap_or(openmetrics);
    if format == Format::OpenMetrics {
        return body.to_string();
    }
    let mut out = String::with_capacity(body.len());
    let lines: Vec<&str> = body.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        if !lines[i].starts_with('#') {
            out.push_str(lines[i]);
            out.push('\n');
            i += 1;
            continue;
        }
        // One family's descriptor: its `# HELP`, `# TYPE` and `# UNIT` lines, in any order.
        let start = i;
        while i < lines.len() && lines[i].starts_with('#') {
            i += 1;
        }
        let block = &lines[start..i];
        let kind = block
            .iter()
            .find_map(|l| l.strip_prefix("# TYPE "))
            .and_then(|t| t.rsplit_once(' '));
        for line in block {
            if line.starts_with("# UNIT ") || line.starts_with("# EOF") {
                continue;
            }
            match kind {
                Some((name, kind @ ("counter" | "unknown" | "info"))) => {
                    let (renamed, text_kind) = match kind {
                        "counter" => (format!("{name}_total"), "counter"),
                        "info" => (format!("{name}_info"), "gauge"),
                        _ => (name.to_string(), "untyped"),
                    };
                    if line.starts_with("# TYPE ") {
                        let _ = writeln!(out, "# TYPE {renamed} {text_kind}");
                    } else if let Some(help) = line.strip_prefix(&format!("# HELP {name} ")) {
                        let _ = writeln!(out, "# HELP {renamed} {help}");
                    } else {
                        out.push_str(line);
                        out.push('\n');
                    }
                }
                _ => {
                    out.push_str(line);
                    out.push('\n');
                }
            }
        }
    }
    out
}

/// The name a descriptor line (`# HELP`, `# TYPE`, `# UNIT`) is about.
fn described(line: &str) -> Option<&str> {
    let rest = ["# HELP ", "# TYPE ", "# UNIT "]
        .iter()
        .find_map(|p| line.strip_prefix(p))?;
    Some(rest.split_once(' ').map_or(rest, |(name, _)| name))
}

/// One family of the merged exposition: its descriptor lines, then its samples, as they will be written.
struct Merged<'t> {
    name: &'t str,
    descriptor: String,
    samples: String,
}

/// Several registries' OpenMetrics texts as one exposition (`--dns-provider-crds`): every family once, its
/// descriptor the first part's that has it, followed by every part's samples in order, a labelled part's
/// each with `provider="<label>"` as its first label. One pass over each text, no parsing beyond finding
/// where a family begins and where a sample's name ends. Families without samples are left out (no part
/// produced a sample of them). The result ends with `# EOF`, as prometheus-client's own text does.
pub(crate) fn merge(parts: &[(Option<&str>, &str)]) -> String {
    let mut families: Vec<Merged<'_>> = Vec::new();
    let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (label, text) in parts {
        let value = label.map(escape_label);
        // The family the lines being read belong to, and whether its descriptor is the one kept.
        let mut current: Option<(usize, bool)> = None;
        for line in text.lines() {
            if line.starts_with("# EOF") {
                continue;
            }
            if let Some(name) = described(line) {
                current = match current {
                    Some((i, _)) if families[i].name == name => current,
                    _ => Some(match index.get(name) {
                        Some(&i) => (i, false),
                        None => {
                            index.insert(name, families.len());
                            families.push(Merged {
                                name,
                                descriptor: String::new(),
                                samples: String::new(),
                            });
                            (families.len() - 1, true)
                        }
                    }),
                };
                if let Some((i, true)) = current {
                    families[i].descriptor.push_str(line);
                    families[i].descriptor.push('\n');
                }
            } else if let Some((i, _)) = current {
                let samples = &mut families[i].samples;
                match &value {
                    Some(v) => push_labelled(samples, line, v),
                    None => samples.push_str(line),
                }
                samples.push('\n');
            }
        }
    }
    let mut out = String::with_capacity(
        families
            .iter()
            .map(|f| f.descriptor.len() + f.samples.len())
            .sum::<usize>()
            + 6,
    );
    for f in families.iter().filter(|f| !f.samples.is_empty()) {
        out.push_str(&f.descriptor);
        out.push_str(&f.samples);
    }
    out.push_str("# EOF\n");
    out
}

/// `sample` with `provider="<value>"` (`value` escaped already) as its first label.
fn push_labelled(out: &mut String, sample: &str, value: &str) {
    // A metric name holds neither `{` nor a space: the first of them ends it.
    let Some(end) = sample.find(['{', ' ']) else {
        out.push_str(sample);
        return;
    };
    let (name, rest) = sample.split_at(end);
    out.push_str(name);
    out.push_str("{provider=\"");
    out.push_str(value);
    out.push('"');
    match rest.strip_prefix('{') {
        Some(labels) if labels.starts_with('}') => out.push_str(labels),
        Some(labels) => {
            out.push(',');
            out.push_str(labels);
        }
        None => {
            out.push('}');
            out.push_str(rest);
        }
    }
}

/// The kind of a family written by hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Gauge,
    Counter,
    Summary,
}

/// Writes families in either format. Counters are named without `_total`; [`Writer::sample`] takes the
/// sample's full name.
pub(crate) struct Writer<'o> {
    pub out: &'o mut String,
    pub format: Format,
}

impl Writer<'_> {
    pub fn family(&mut self, name: &str, help: &str, kind: Kind) {
        let (name, kind) = match (kind, self.format) {
            (Kind::Counter, Format::Text) => (format!("{name}_total"), "counter"),
            (Kind::Counter, Format::OpenMetrics) => (name.to_string(), "counter"),
            (Kind::Gauge, _) => (name.to_string(), "gauge"),
            (Kind::Summary, _) => (name.to_string(), "summary"),
        };
        let _ = writeln!(self.out, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(self.out, "# TYPE {name} {kind}");
    }

    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                let _ = write!(self.out, "{k}=\"{}\"", escape_label(v));
            }
            self.out.push('}');
        }
        self.out.push(' ');
        self.out.push_str(&number(value));
        self.out.push('\n');
    }
}

/// A sample value as both formats spell it (`NaN`, `+Inf`, `-Inf`, else the shortest exact decimal).
pub(crate) fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v == f64::INFINITY {
        "+Inf".into()
    } else if v == f64::NEG_INFINITY {
        "-Inf".into()
    } else {
        format!("{v}")
    }
}

fn escape_help(help: &str) -> String {
    help.replace('\\', "\\\\").replace('\n', "\\n")
}

fn escape_label(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrapers_get_openmetrics_only_when_they_ask_for_it() {
        assert_eq!(Format::negotiate(None), Format::Text);
        assert_eq!(Format::negotiate(Some("text/plain")), Format::Text);
        assert_eq!(Format::negotiate(Some("*/*")), Format::Text);
        assert_eq!(Format::negotiate(Some("application/json")), Format::Text);
        // What Prometheus 2.x sends.
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,\
                          text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(Format::negotiate(Some(prometheus)), Format::OpenMetrics);
        assert_eq!(
            Format::negotiate(Some("text/plain;q=0.9, application/openmetrics-text;q=0.5")),
            Format::Text
        );
        assert_eq!(
            Format::negotiate(Some("text/plain;q=0.2, application/openmetrics-text; version=1.0.0")),
            Format::OpenMetrics
        );
        assert_eq!(
            Format::negotiate(Some("application/openmetrics-text;q=0")),
            Format::Text
        );
    }

    #[test]
    fn the_text_format_names_counter_families_with_their_total() {
        let om = "# HELP a_runs Runs.\n# TYPE a_runs counter\na_runs_total 3\n\
                  # HELP a_gauge_total Gauge.\n# TYPE a_gauge_total gauge\na_gauge_total 1\n\
                  # HELP b Seconds.\n# TYPE b gauge\n# UNIT b seconds\nb 2.5\n# EOF\n";
        let text = from_openmetrics(om, Format::Text);
        assert_eq!(
            text,
            "# HELP a_runs_total Runs.\n# TYPE a_runs_total counter\na_runs_total 3\n\
             # HELP a_gauge_total Gauge.\n# TYPE a_gauge_total gauge\na_gauge_total 1\n\
             # HELP b Seconds.\n# TYPE b gauge\nb 2.5\n"
        );
        assert_eq!(
            from_openmetrics(om, Format::OpenMetrics),
            om.trim_end_matches("# EOF\n")
        );
    }

    #[test]
    fn merged_families_keep_one_descriptor_and_label_every_child_sample() {
        let root = "# HELP up Up.\n# TYPE up gauge\nup 1\n# HELP empty Never sampled.\n# TYPE empty gauge\n\
                    # HELP q Queries.\n# TYPE q counter\nq_total 2\n# EOF\n";
        let child = "# HELP empty Never sampled.\n# TYPE empty gauge\n# HELP q Queries.\n# TYPE q counter\n\
                     q_total{zone=\"a{b} c\"} 3 # {trace=\"x\"} 1\n# HELP r R.\n# TYPE r gauge\nr{} 4\n# EOF\n";
        let merged = merge(&[(None, root), (Some("ns/a\"b"), child), (Some("c"), child)]);
        assert_eq!(
            merged,
            "# HELP up Up.\n# TYPE up gauge\nup 1\n\
             # HELP q Queries.\n# TYPE q counter\nq_total 2\n\
             q_total{provider=\"ns/a\\\"b\",zone=\"a{b} c\"} 3 # {trace=\"x\"} 1\n\
             q_total{provider=\"c\",zone=\"a{b} c\"} 3 # {trace=\"x\"} 1\n\
             # HELP r R.\n# TYPE r gauge\nr{provider=\"ns/a\\\"b\"} 4\nr{provider=\"c\"} 4\n# EOF\n"
        );
    }

    #[test]
    fn hand_written_families_follow_the_format() {
        let mut out = String::new();
        let mut w = Writer {
            out: &mut out,
            format: Format::Text,
        };
        w.family("cpu_seconds", "CPU.", Kind::Counter);
        w.sample("cpu_seconds_total", &[], 1.5);
        w.family("lat", "Latency.", Kind::Summary);
        w.sample("lat", &[("path", "a\"b"), ("quantile", "0.5")], f64::NAN);
        assert_eq!(
            out,
            "# HELP cpu_seconds_total CPU.\n# TYPE cpu_seconds_total counter\ncpu_seconds_total 1.5\n\
             # HELP lat Latency.\n# TYPE lat summary\nlat{path=\"a\\\"b\",quantile=\"0.5\"} NaN\n"
        );
        let mut om = String::new();
        Writer {
            out: &mut om,
            format: Format::OpenMetrics,
        }
        .family("cpu_seconds", "CPU.", Kind::Counter);
        assert!(om.contains("# TYPE cpu_seconds counter"), "{om}");
    }
}
