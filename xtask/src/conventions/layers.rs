//! Crate dependencies against DESIGN.md's layer table (section "Boundaries"): the table is read from
//! DESIGN.md, so the rule and its check cannot drift apart. Each row names crates (by their directory under
//! `crates/`, or a pattern such as `source-*`), their layer, the crates of ours they may depend on and the
//! outside crates they never depend on (`kube`: sources and the controller hold no API client). A crate of
//! ours not in its row's list, an outside crate in its row's list, and a crate of ours without a row are
//! violations.

use std::collections::BTreeMap;

use anyhow::{Result, anyhow, bail};

/// One row of the table.
#[derive(Debug, PartialEq, Eq)]
pub struct Row {
    pub crates: Vec<String>,
    pub layer: String,
    pub may_depend_on: Vec<String>,
    pub never_on: Vec<String>,
}

/// The heading the table stands under, and the header cells that tell it from other tables.
const SECTION: &str = "## Boundaries";
const HEADER: [&str; 4] = ["crates", "layer", "may depend on (ours)", "never depends on"];

/// The layer table of DESIGN.md's Boundaries section.
pub fn table(design: &str) -> Result<Vec<Row>> {
    let section = design
        .split_once(SECTION)
        .map(|(_, rest)| rest)
        .ok_or_else(|| anyhow!("no `{SECTION}` section"))?;
    let section = section.split("\n## ").next().unwrap_or(section);
    let mut lines = section.lines().map(str::trim).skip_while(|l| {
        let cells = cells(l);
        cells.len() != HEADER.len() || !cells.iter().zip(HEADER).all(|(c, h)| c.eq_ignore_ascii_case(h))
    });
    lines
        .next()
        .ok_or_else(|| anyhow!("no table headed | {} | in `{SECTION}`", HEADER.join(" | ")))?;
    let rows: Vec<Row> = lines
        .skip(1) // |---|---|
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let c = cells(l);
            Row {
                crates: names(c.first().copied().unwrap_or_default()),
                layer: c.get(1).copied().unwrap_or_default().to_string(),
                may_depend_on: names(c.get(2).copied().unwrap_or_default()),
                never_on: names(c.get(3).copied().unwrap_or_default()),
            }
        })
        .collect();
    if rows.is_empty() {
        bail!("the layer table in `{SECTION}` has no rows");
    }
    Ok(rows)
}

fn cells(line: &str) -> Vec<&str> {
    let Some(inner) = line.strip_prefix('|').and_then(|l| l.strip_suffix('|')) else {
        return Vec::new();
    };
    inner.split('|').map(str::trim).collect()
}

/// The `code` spans of a cell: `source`, `source-*`.
fn names(cell: &str) -> Vec<String> {
    cell.split('`').skip(1).step_by(2).map(str::to_string).collect()
}

/// `*` matches any run of characters.
pub fn matches(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((head, tail)) => {
            let Some(rest) = name.strip_prefix(head) else {
                return false;
            };
            (0..=rest.len()).any(|i| rest.is_char_boundary(i) && matches(tail, &rest[i..]))
        }
    }
}

/// The row of a crate: the one naming it exactly, else the first pattern matching it.
pub fn row_of<'a>(rows: &'a [Row], krate: &str) -> Option<&'a Row> {
    rows.iter()
        .find(|r| r.crates.iter().any(|c| c == krate))
        .or_else(|| rows.iter().find(|r| r.crates.iter().any(|c| matches(c, krate))))
}

/// Why a crate may not depend on `dependency`, if it may not. `ours` maps the workspace's package names to
/// crate names (their directory): a dependency found there is ours, any other an outside crate.
pub fn refusal(row: &Row, dependency: &str, ours: &BTreeMap<String, String>) -> Option<String> {
    match ours.get(dependency) {
        Some(krate) => (!row.may_depend_on.iter().any(|p| matches(p, krate))).then(|| {
            format!(
                "the {} layer may not depend on `{krate}` (DESIGN.md, Boundaries: may depend on {})",
                row.layer,
                list(&row.may_depend_on)
            )
        }),
        None => row.never_on.iter().any(|p| matches(p, dependency)).then(|| {
            format!(
                "the {} layer never depends on `{dependency}` (DESIGN.md, Boundaries)",
                row.layer
            )
        }),
    }
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "nothing of ours".to_string()
    } else {
        names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DESIGN: &str = "# x\n## Boundaries\n\n- prose\n\n| crates | layer | may depend on (ours) | never depends on |\n\
        |---|---|---|---|\n| `endpoint` | model | — | `kube*` |\n| `source`, `source-*` | sources | `endpoint`, `source` | `kube*` |\n\
        | `registry-*` | registries | `endpoint`, `registry` | |\n\nafter\n## Next\n| a | b |\n";

    fn ours() -> BTreeMap<String, String> {
        ["endpoint", "source", "source-crd", "registry", "provider-aws", "extdns"]
            .map(|c| (format!("extdns-{c}"), c.to_string()))
            .into_iter()
            .collect()
    }

    #[test]
    fn the_table_is_read_from_its_section() {
        let rows = table(DESIGN).unwrap_or_default();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[1].crates, ["source", "source-*"]);
        assert_eq!(rows[1].may_depend_on, ["endpoint", "source"]);
        assert_eq!(rows[0].never_on, ["kube*"]);
        assert!(rows[0].may_depend_on.is_empty());
        assert!(table("## Boundaries\nno table\n").is_err());
    }

    #[test]
    fn dependencies_outside_the_row_are_refused() {
        let rows = table(DESIGN).unwrap_or_default();
        let ours = ours();
        let source = row_of(&rows, "source-crd").map(|r| r.layer.as_str());
        assert_eq!(source, Some("sources"));
        let registry = row_of(&rows, "registry-dynamodb");
        let refused = registry.and_then(|r| refusal(r, "extdns-provider-aws", &ours));
        assert!(refused.is_some_and(|r| r.contains("`provider-aws`")));
        assert_eq!(registry.and_then(|r| refusal(r, "extdns-registry", &ours)), None);
        let kube = row_of(&rows, "source").and_then(|r| refusal(r, "kube-runtime", &ours));
        assert!(kube.is_some_and(|r| r.contains("never depends on `kube-runtime`")));
        assert_eq!(row_of(&rows, "source").and_then(|r| refusal(r, "serde", &ours)), None);
        assert!(row_of(&rows, "controller").is_none());
    }

    #[test]
    fn patterns_match_any_run() {
        assert!(matches("provider-*", "provider-aws"));
        assert!(!matches("provider-*", "provider"));
        assert!(matches("*", "extdns"));
        assert!(matches("kube*", "kube"));
        assert!(!matches("source", "source-crd"));
    }
}
