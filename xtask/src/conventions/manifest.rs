//! What the layer check reads from a crate's Cargo.toml: its package name and its normal dependencies, each
//! with its line. A line reader for the shapes the workspace writes (`name.workspace = true`,
//! `name = { … }`, `name = "1"`, `[dependencies.name]`, `package = "…"` renames), not a TOML parser: xtask
//! stays at std + anyhow + serde_json.

/// A normal dependency (`[dependencies]` or `[target.….dependencies]`; dev- and build-dependencies are not
/// the crate's code): the package it names and the manifest line that declares it.
#[derive(Debug, PartialEq, Eq)]
pub struct Dependency {
    pub package: String,
    pub line: usize,
}

#[derive(Debug, Default)]
pub struct Manifest {
    pub name: Option<String>,
    /// `publish = false`: tooling and tests (xtask, the e2e harness, test-support), not library code.
    pub unpublished: bool,
    pub dependencies: Vec<Dependency>,
}

pub fn parse(text: &str) -> Manifest {
    let mut manifest = Manifest::default();
    let mut section = String::new();
    for (index, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or_default().trim();
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = header.trim().to_string();
            if let Some(name) = table_dependency(&section) {
                manifest.dependencies.push(Dependency {
                    package: name.to_string(),
                    line: index + 1,
                });
            }
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim().trim_matches('"');
        if section == "package" && key == "name" {
            manifest.name = Some(unquote(value).to_string());
        } else if section == "package" && key == "publish" {
            manifest.unpublished = unquote(value) == "false" || unquote(value) == "[]";
        } else if is_dependency_section(&section) {
            let name = key.split('.').next().unwrap_or(key);
            let package = inline_field(value, "package").unwrap_or(name);
            manifest.dependencies.push(Dependency {
                package: package.to_string(),
                line: index + 1,
            });
        } else if table_dependency(&section).is_some() && key == "package" {
            // `[dependencies.alias]` with `package = "real"`: the table line names the alias; use the package.
            if let Some(last) = manifest.dependencies.last_mut() {
                last.package = unquote(value).to_string();
            }
        }
    }
    manifest
}

fn is_dependency_section(section: &str) -> bool {
    section == "dependencies" || (section.starts_with("target.") && section.ends_with(".dependencies"))
}

/// `dependencies.name` or `target.….dependencies.name`: `name`.
fn table_dependency(section: &str) -> Option<&str> {
    let (table, name) = section.rsplit_once('.')?;
    is_dependency_section(table).then_some(name.trim_matches('"'))
}

fn unquote(value: &str) -> &str {
    value.trim().trim_matches('"')
}

/// `field = "value"` inside an inline table `{ … }`.
fn inline_field<'a>(value: &'a str, field: &str) -> Option<&'a str> {
    let inner = value.trim().strip_prefix('{')?.strip_suffix('}')?;
    inner.split(',').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k.trim() == field).then(|| unquote(v))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_dependencies_are_read_with_their_lines() {
        let m = parse(
            "[package]\nname = \"extdns-a\"\n\n[dependencies]\nextdns-b.workspace = true\nkube = { workspace = true } # client\n\
             x = { package = \"extdns-c\", path = \"../c\" }\n\n[dev-dependencies]\nextdns-d.workspace = true\n\n\
             [target.'cfg(unix)'.dependencies]\nlibc = \"0.2\"\n[dependencies.e]\npackage = \"extdns-e\"\n[build-dependencies]\ncc = \"1\"\n",
        );
        assert_eq!(m.name.as_deref(), Some("extdns-a"));
        assert!(!m.unpublished);
        assert!(parse("[package]\npublish = false\n").unpublished);
        let deps: Vec<(&str, usize)> = m.dependencies.iter().map(|d| (d.package.as_str(), d.line)).collect();
        assert_eq!(
            deps,
            [
                ("extdns-b", 5),
                ("kube", 6),
                ("extdns-c", 7),
                ("libc", 13),
                ("extdns-e", 14)
            ]
        );
    }
}
