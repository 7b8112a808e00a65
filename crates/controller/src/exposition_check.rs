//! A strict reader of both exposition formats, for tests: the rules Prometheus's parsers and `promtool
//! check metrics` enforce (text format 0.0.4 as `expfmt.TextParser` reads it, OpenMetrics 1.0.0 as
//! `textparse.OpenMetricsParser` does), so a scrape that passes here is one Prometheus takes whole.
//! Written from the two formats' specifications; it accepts no more than extdns needs to write (no
//! exemplars, no timestamps, no free comments).

use std::collections::{HashMap, HashSet};

use crate::exposition::Format;

/// What a family is declared as.
struct Declared {
    kind: Option<String>,
    help: bool,
    unit: bool,
    /// Whether a sample of it was read (its descriptor must come before).
    sampled: bool,
}

/// A rule of the exposition formats that a text breaks, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Violation {
    #[error("empty exposition")]
    Empty,
    #[error("the last line has no newline")]
    NoFinalNewline,
    #[error("OpenMetrics must end with `# EOF`")]
    NoEof,
    #[error("line {line}: {rule}: {text:?}")]
    Line { line: usize, rule: Rule, text: String },
}

/// The rule one line breaks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Rule {
    #[error("empty line")]
    EmptyLine,
    #[error("`# EOF` other than as OpenMetrics's last line")]
    MisplacedEof,
    #[error("bare comment")]
    BareComment,
    #[error("bad metric name {0:?}")]
    MetricName(String),
    #[error("{keyword} of {name} after its samples")]
    DescriptorAfterSamples { keyword: String, name: String },
    #[error("second {keyword} for {name}")]
    Second { keyword: &'static str, name: String },
    #[error("unknown type {0:?}")]
    UnknownType(String),
    #[error("{name} does not end with its unit {unit}")]
    UnitSuffix { name: String, unit: String },
    #[error("comment {0:?} is not a descriptor")]
    NotDescriptor(String),
    #[error("{0} belongs to no family declared before it")]
    NoFamily(String),
    #[error("a label name twice")]
    LabelTwice,
    #[error("bad value {0:?}")]
    Value(String),
    #[error("a series twice")]
    SeriesTwice,
    #[error("{0} resumes after another family")]
    Resumed(String),
    #[error("a sample without a value")]
    NoValue,
    #[error("labels not closed")]
    LabelsNotClosed,
    #[error("no single space before the value")]
    NoSpace,
    #[error("more than a value after the labels (timestamp or exemplar)")]
    AfterValue,
    #[error("label without =\" in {0:?}")]
    LabelWithoutEquals(String),
    #[error("bad label name {0:?}")]
    LabelName(String),
    #[error("label value not closed")]
    LabelValueNotClosed,
    #[error("a trailing comma in the labels")]
    TrailingComma,
    #[error("{0:?} after a label")]
    AfterLabel(String),
    #[error("unknown escape \\{escape:?} in {text:?}")]
    Escape { escape: Option<char>, text: String },
    #[error("raw newline in {0:?}")]
    RawNewline(String),
    #[error("raw quote in {0:?}")]
    RawQuote(String),
}

/// Checks `text` against `format`'s rules; the error names the line and the rule it breaks.
pub(crate) fn check(text: &str, format: Format) -> Result<(), Violation> {
    let om = format == Format::OpenMetrics;
    if text.is_empty() {
        return Err(Violation::Empty);
    }
    if !text.ends_with('\n') {
        return Err(Violation::NoFinalNewline);
    }
    let lines: Vec<&str> = text.lines().collect();
    if om && lines.last() != Some(&"# EOF") {
        return Err(Violation::NoEof);
    }
    let mut declared: HashMap<String, Declared> = HashMap::new();
    // Families left behind: a family's lines must be contiguous.
    let mut closed: HashSet<String> = HashSet::new();
    let mut current: Option<String> = None;
    let mut series: HashSet<String> = HashSet::new();
    for (n, line) in lines.iter().enumerate() {
        let at = |rule: Rule| Violation::Line {
            line: n + 1,
            rule,
            text: line.to_string(),
        };
        if line.is_empty() {
            return Err(at(Rule::EmptyLine));
        }
        if *line == "# EOF" {
            if !om || n + 1 != lines.len() {
                return Err(at(Rule::MisplacedEof));
            }
            continue;
        }
        let family = if let Some(rest) = line.strip_prefix("# ") {
            let (keyword, rest) = rest.split_once(' ').ok_or_else(|| at(Rule::BareComment))?;
            let (name, value) = rest.split_once(' ').unwrap_or((rest, ""));
            if !is_metric_name(name) {
                return Err(at(Rule::MetricName(name.to_string())));
            }
            let d = declared.entry(name.to_string()).or_insert(Declared {
                kind: None,
                help: false,
                unit: false,
                sampled: false,
            });
            if d.sampled {
                return Err(at(Rule::DescriptorAfterSamples {
                    keyword: keyword.to_string(),
                    name: name.to_string(),
                }));
            }
            match keyword {
                "HELP" => {
                    if std::mem::replace(&mut d.help, true) {
                        return Err(at(Rule::Second {
                            keyword: "HELP",
                            name: name.to_string(),
                        }));
                    }
                    check_escapes(value, om, false).map_err(at)?;
                }
                "TYPE" => {
                    let kinds: &[&str] = if om {
                        &[
                            "counter",
                            "gauge",
                            "histogram",
                            "gaugehistogram",
                            "stateset",
                            "info",
                            "summary",
                            "unknown",
                        ]
                    } else {
                        &["counter", "gauge", "histogram", "summary", "untyped"]
                    };
                    if !kinds.contains(&value) {
                        return Err(at(Rule::UnknownType(value.to_string())));
                    }
                    if d.kind.replace(value.to_string()).is_some() {
                        return Err(at(Rule::Second {
                            keyword: "TYPE",
                            name: name.to_string(),
                        }));
                    }
                }
                "UNIT" if om => {
                    if std::mem::replace(&mut d.unit, true) {
                        return Err(at(Rule::Second {
                            keyword: "UNIT",
                            name: name.to_string(),
                        }));
                    }
                    if !value.is_empty() && !name.ends_with(&format!("_{value}")) {
                        return Err(at(Rule::UnitSuffix {
                            name: name.to_string(),
                            unit: value.to_string(),
                        }));
                    }
                }
                _ => return Err(at(Rule::NotDescriptor(keyword.to_string()))),
            }
            name.to_string()
        } else {
            let (name, labels, value) = split_sample(line).map_err(at)?;
            let family = family_of(name, &declared, om).ok_or_else(|| at(Rule::NoFamily(name.to_string())))?;
            if let Some(d) = declared.get_mut(&family) {
                d.sampled = true;
            }
            let labels = parse_labels(labels, om).map_err(at)?;
            let mut names: Vec<&str> = labels.iter().map(|(k, _)| k.as_str()).collect();
            names.sort_unstable();
            if names.windows(2).any(|w| w[0] == w[1]) {
                return Err(at(Rule::LabelTwice));
            }
            if !is_value(value) {
                return Err(at(Rule::Value(value.to_string())));
            }
            let mut key: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
            key.sort_unstable();
            if !series.insert(format!("{name}{{{}}}", key.join(","))) {
                return Err(at(Rule::SeriesTwice));
            }
            family
        };
        if current.as_deref() != Some(family.as_str()) {
            if closed.contains(&family) {
                return Err(at(Rule::Resumed(family)));
            }
            if let Some(previous) = current.replace(family) {
                closed.insert(previous);
            }
        }
    }
    Ok(())
}

/// The family a sample named `name` belongs to: a declared family whose type allows that sample name.
fn family_of(name: &str, declared: &HashMap<String, Declared>, om: bool) -> Option<String> {
    let suffixes: &[(&str, &[&str])] = if om {
        &[
            ("", &["gauge", "unknown", "summary", "stateset"]),
            ("_total", &["counter"]),
            ("_created", &["counter", "summary", "histogram"]),
            ("_info", &["info"]),
            ("_sum", &["summary", "histogram"]),
            ("_count", &["summary", "histogram"]),
            ("_bucket", &["histogram"]),
        ]
    } else {
        &[
            ("", &["counter", "gauge", "untyped", "summary"]),
            ("_sum", &["summary", "histogram"]),
            ("_count", &["summary", "histogram"]),
            ("_bucket", &["histogram"]),
        ]
    };
    suffixes.iter().find_map(|(suffix, kinds)| {
        let family = name.strip_suffix(suffix)?;
        let kind = declared.get(family)?.kind.as_deref()?;
        kinds.contains(&kind).then(|| family.to_string())
    })
}

/// A sample line's name, label text (inside the braces) and value; no timestamp, no exemplar.
fn split_sample(line: &str) -> Result<(&str, &str, &str), Rule> {
    let end = line.find(['{', ' ']).ok_or(Rule::NoValue)?;
    let name = &line[..end];
    if !is_metric_name(name) {
        return Err(Rule::MetricName(name.to_string()));
    }
    let rest = &line[end..];
    let (labels, rest) = match rest.strip_prefix('{') {
        Some(inner) => {
            let close = closing_brace(inner).ok_or(Rule::LabelsNotClosed)?;
            (&inner[..close], &inner[close + 1..])
        }
        None => ("", rest),
    };
    let value = rest.strip_prefix(' ').ok_or(Rule::NoSpace)?;
    if value.contains(' ') {
        return Err(Rule::AfterValue);
    }
    Ok((name, labels, value))
}

/// Where the label set's `}` is, quoted values skipped.
fn closing_brace(s: &str) -> Option<usize> {
    let mut quoted = false;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            '}' if !quoted => return Some(i),
            _ => {}
        }
    }
    None
}

/// `k="v",…` into pairs (values still escaped); OpenMetrics allows no trailing comma.
fn parse_labels(mut s: &str, om: bool) -> Result<Vec<(String, String)>, Rule> {
    let mut out = Vec::new();
    while !s.is_empty() {
        let (name, rest) = s
            .split_once("=\"")
            .ok_or_else(|| Rule::LabelWithoutEquals(s.to_string()))?;
        if !is_label_name(name) {
            return Err(Rule::LabelName(name.to_string()));
        }
        let mut end = None;
        let mut escaped = false;
        for (i, c) in rest.char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => {
                    end = Some(i);
                    break;
                }
                _ => {}
            }
        }
        let end = end.ok_or(Rule::LabelValueNotClosed)?;
        let value = &rest[..end];
        check_escapes(value, om, true)?;
        out.push((name.to_string(), value.to_string()));
        s = &rest[end + 1..];
        if let Some(next) = s.strip_prefix(',') {
            if next.is_empty() && om {
                return Err(Rule::TrailingComma);
            }
            s = next;
        } else if !s.is_empty() {
            return Err(Rule::AfterLabel(s.to_string()));
        }
    }
    Ok(out)
}

/// Only the escapes the formats know: `\\`, `\n`, and in a label value `\"`; a label value has no raw `"`
/// or newline.
fn check_escapes(s: &str, om: bool, label: bool) -> Result<(), Rule> {
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\\' | 'n') => {}
                Some('"') if label || om => {}
                escape => {
                    let text = s.to_string();
                    return Err(Rule::Escape { escape, text });
                }
            },
            '\n' => return Err(Rule::RawNewline(s.to_string())),
            '"' if label => return Err(Rule::RawQuote(s.to_string())),
            _ => {}
        }
    }
    Ok(())
}

fn is_metric_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn is_label_name(s: &str) -> bool {
    let mut chars = s.chars();
    !s.starts_with("__")
        && chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A number as Go's `strconv.ParseFloat` (and OpenMetrics) reads it.
fn is_value(s: &str) -> bool {
    matches!(s, "NaN" | "+Inf" | "-Inf")
        || (!s.is_empty() && s.chars().all(|c| c.is_ascii_digit() || "+-.eE".contains(c)) && s.parse::<f64>().is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_prometheus_refuses_is_refused() {
        let good = "# HELP a_runs Runs.\n# TYPE a_runs counter\na_runs_total{x=\"1\"} 3\n\
                    # HELP b_seconds Seconds.\n# TYPE b_seconds gauge\n# UNIT b_seconds seconds\nb_seconds 2.5\n# EOF\n";
        assert_eq!(check(good, Format::OpenMetrics), Ok(()));
        let text = "# HELP a_runs_total Runs.\n# TYPE a_runs_total counter\na_runs_total{x=\"1\",} 3\n";
        assert_eq!(check(text, Format::Text), Ok(()));
        for (bad, format, why) in [
            (good.trim_end_matches("# EOF\n"), Format::OpenMetrics, "no EOF"),
            (&*format!("{good}x 1\n"), Format::OpenMetrics, "after EOF"),
            ("# TYPE a gauge\n# TYPE a gauge\na 1\n", Format::Text, "TYPE twice"),
            ("# HELP a x\n# HELP a y\na 1\n", Format::Text, "HELP twice"),
            (
                "# TYPE a gauge\na 1\n# TYPE b gauge\nb 1\na{x=\"1\"} 2\n",
                Format::Text,
                "split family",
            ),
            (
                "# TYPE a gauge\na 1\n# HELP a late\n",
                Format::Text,
                "descriptor after samples",
            ),
            (
                "# TYPE a gauge\na{provider=\"p\",provider=\"q\"} 1\n",
                Format::Text,
                "label twice",
            ),
            (
                "# TYPE a gauge\na{x=\"1\"} 1\na{x=\"1\"} 2\n",
                Format::Text,
                "series twice",
            ),
            ("# TYPE a gauge\na{1x=\"1\"} 1\n", Format::Text, "label name"),
            ("# TYPE a gauge\na{x=\"a\"b\"} 1\n", Format::Text, "raw quote"),
            ("# TYPE a gauge\na{x=\"1\"}  1\n", Format::Text, "two spaces"),
            ("# TYPE a gauge\na one\n", Format::Text, "value"),
            ("b 1\n", Format::Text, "undeclared"),
            (
                "# TYPE a counter\na 1\n# EOF\n",
                Format::OpenMetrics,
                "OpenMetrics counter without _total",
            ),
            (
                "# TYPE a gauge\n# UNIT a seconds\na 1\n# EOF\n",
                Format::OpenMetrics,
                "unit not a suffix",
            ),
            (
                "# TYPE a gauge\na{x=\"1\",} 1\n# EOF\n",
                Format::OpenMetrics,
                "trailing comma",
            ),
            ("# TYPE a gauge\n\na 1\n", Format::Text, "empty line"),
        ] {
            assert!(check(bad, format).is_err(), "{why} passed:\n{bad}");
        }
        let err = check("# TYPE a gauge\na one\n", Format::Text).map_err(|e| e.to_string());
        assert_eq!(err, Err("line 2: bad value \"one\": \"a one\"".to_string()));
        for (bad, rule) in [
            ("# TYPE a gauge\na one\n", Rule::Value("one".into())),
            ("b 1\n", Rule::NoFamily("b".into())),
            (
                "# TYPE a gauge\na{x=\"\\q\"} 1\n",
                Rule::Escape {
                    escape: Some('q'),
                    text: "\\q".into(),
                },
            ),
        ] {
            let got = check(bad, Format::Text);
            assert!(
                matches!(&got, Err(Violation::Line { rule: r, .. }) if *r == rule),
                "{bad}: {got:?}"
            );
        }
    }
}
