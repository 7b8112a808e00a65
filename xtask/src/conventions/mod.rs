//! The workspace's conventions, checked on every commit: `cargo xtask conventions`, and the test
//! [`tests::the_workspace_follows_its_conventions`] that `cargo test --workspace` (so `cargo xtask test`, so
//! CI) runs in a second or two. Each was cleaned up once by hand and came back; a check does not forget.
//!
//! - **No error made of a string in library code** ([`string_errors`]): the `src/` of every published crate,
//!   without its `#[cfg(test)]` items and module files. `tests/`, `benches/` and `examples/` are tests, and the
//!   unpublished crates (`publish = false`: xtask, the e2e harness, test-support) are tooling and tests that
//!   report to a person with anyhow, not library code.
//! - **Crate dependencies follow DESIGN.md's layer table** ([`layers`]), read from DESIGN.md: normal
//!   dependencies of every crate (dev-dependencies are tests).
//! - **No import circle between the modules of one crate** ([`modules`]), in every crate, tooling included.
//! - **The source crates' tests use the one test kit** ([`test_kit`]): no test of a `crates/source-*` crate
//!   defines its own function of a name `extdns_source::pipeline::testing` exports.
//! - **Tests take test-support's helpers** ([`test_support`]): no test defines its own `command`,
//!   `warnings` or `secure` (test-support's `cli::command`, `logs::warnings`, `validator::secure`), no
//!   code outside test-support scrubs the `EXTERNAL_DNS_*` variables by hand, and none kills a child
//!   process in an `impl Drop` of its own (test-support's `proc::OwnedChild` does).
//! - **Zone-file escapes are decoded in one place** ([`escapes`]): no library code outside
//!   `extdns_endpoint::escape` slices the three digits of a `\DDD` escape by hand.
//!
//! A violation names the file and line: the source line, or the Cargo.toml line declaring the dependency.

mod code;
mod escapes;
mod layers;
mod manifest;
mod modules;
mod string_errors;
mod test_kit;
mod test_support;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use code::Code;
use modules::{ModuleFile, ModulePath};

/// A broken convention: where, and what.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Violation {
    /// Relative to the workspace root.
    pub file: PathBuf,
    pub line: usize,
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file.display(), self.line, self.message)
    }
}

/// `cargo xtask conventions [DIR]`: every violation in this workspace (or the checkout at `DIR`, to see a
/// branch before it is merged), one a line; an error when there is any.
pub fn run(args: &[String]) -> Result<()> {
    let root = match args {
        [] => crate::root(),
        [dir] => PathBuf::from(dir),
        _ => bail!("usage: cargo xtask conventions [DIR]"),
    };
    let violations = check(&root)?;
    if !violations.is_empty() {
        for v in &violations {
            eprintln!("{v}");
        }
        bail!(
            "{} violations of the workspace's conventions (xtask/src/conventions)",
            violations.len()
        );
    }
    println!(
        "conventions: no string errors in library code, layers as DESIGN.md says, no module circles, source tests on the one kit, tests on test-support's helpers, zone-file escapes decoded in one place"
    );
    Ok(())
}

/// A crate of the workspace: its name in DESIGN.md (its directory's name), where it is and its manifest.
struct Crate {
    name: String,
    dir: PathBuf,
    manifest: manifest::Manifest,
}

/// Every violation in the workspace at `root`, sorted by file and line.
pub fn check(root: &Path) -> Result<Vec<Violation>> {
    let crates = crates(root)?;
    let mut violations = layer_violations(root, &crates)?;
    let kit = test_kit_names(root)?;
    for krate in &crates {
        let trees = module_trees(root, &krate.dir)?;
        if krate.name.starts_with("source-") {
            violations.extend(test_kit_violations(root, &krate.dir, &trees, &kit)?);
        }
        if krate.name != test_support::HOME {
            violations.extend(test_support_violations(root, &krate.dir, &trees)?);
        }
        for tree in trees {
            if !krate.manifest.unpublished {
                violations.extend(string_error_violations(&tree));
            }
            violations.extend(circle_violations(&krate.name, &tree));
            violations.extend(escape_violations(&tree));
        }
    }
    violations.sort();
    violations.dedup();
    Ok(violations)
}

/// The members of the workspace: every directory of `crates/` with a Cargo.toml, and xtask.
fn crates(root: &Path) -> Result<Vec<Crate>> {
    let listing = root.join("crates");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&listing)
        .with_context(|| format!("reading {}", listing.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .collect();
    dirs.push(root.join("xtask"));
    dirs.sort();
    dirs.into_iter()
        .map(|dir| {
            let path = dir.join("Cargo.toml");
            let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
            let name = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            Ok(Crate {
                name,
                dir,
                manifest: manifest::parse(&text),
            })
        })
        .collect()
}

fn relative(root: &Path, path: &Path) -> PathBuf {
    path.strip_prefix(root).unwrap_or(path).to_path_buf()
}

fn layer_violations(root: &Path, crates: &[Crate]) -> Result<Vec<Violation>> {
    let design_path = root.join("DESIGN.md");
    let design = std::fs::read_to_string(&design_path).with_context(|| format!("reading {}", design_path.display()))?;
    let rows = layers::table(&design).context("DESIGN.md's layer table")?;
    let ours: BTreeMap<String, String> = crates
        .iter()
        .filter_map(|c| Some((c.manifest.name.clone()?, c.name.clone())))
        .collect();
    let mut out = Vec::new();
    for krate in crates {
        let file = relative(root, &krate.dir.join("Cargo.toml"));
        let Some(row) = layers::row_of(&rows, &krate.name) else {
            out.push(Violation {
                file,
                line: 1,
                message: format!("`{}` has no row in DESIGN.md's layer table (Boundaries)", krate.name),
            });
            continue;
        };
        for dep in &krate.manifest.dependencies {
            if let Some(why) = layers::refusal(row, &dep.package, &ours) {
                out.push(Violation {
                    file: file.clone(),
                    line: dep.line,
                    message: format!("`{}` depends on `{}`: {why}", krate.name, dep.package),
                });
            }
        }
    }
    Ok(out)
}

/// The module files of each crate target (`src/lib.rs`, `src/main.rs`, `src/bin/*.rs`), from the root through
/// its `mod` declarations; test module files are not in them.
fn module_trees(root: &Path, dir: &Path) -> Result<Vec<Vec<ModuleFile>>> {
    let src = dir.join("src");
    let mut roots: Vec<PathBuf> = ["lib.rs", "main.rs"].iter().map(|f| src.join(f)).collect();
    if let Ok(bins) = std::fs::read_dir(src.join("bin")) {
        roots.extend(
            bins.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "rs")),
        );
    }
    let mut trees = Vec::new();
    for path in roots.into_iter().filter(|p| p.is_file()) {
        let mut files = Vec::new();
        let mut pending = vec![(path, ModulePath::new())];
        while let Some((path, module)) = pending.pop() {
            let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
            let code = Code::new(&text);
            if code.test_only {
                continue;
            }
            let file = ModuleFile {
                file: relative(root, &path).display().to_string(),
                path: module,
                code,
            };
            for child in modules::declared(&file) {
                if let Some(found) = module_file(&path, &file.path, &child) {
                    pending.push((found, child));
                }
            }
            files.push(file);
        }
        trees.push(files);
    }
    Ok(trees)
}

/// The file of module `child`, declared by `mod name;` in the file `parent` (module `parent_module`; inline
/// modules in between name directories): `name.rs` or `name/mod.rs`.
fn module_file(parent: &Path, parent_module: &[String], child: &[String]) -> Option<PathBuf> {
    let mut dir = parent.parent()?.to_path_buf();
    let stem = parent.file_stem()?.to_string_lossy();
    let owns_dir = parent_module.is_empty() || stem == "mod";
    if !owns_dir {
        dir.push(stem.as_ref());
    }
    let (name, inline) = child[parent_module.len()..].split_last()?;
    for segment in inline {
        dir.push(segment);
    }
    [dir.join(format!("{name}.rs")), dir.join(name).join("mod.rs")]
        .into_iter()
        .find(|p| p.is_file())
}

/// The function names of the source crates' test kit.
fn test_kit_names(root: &Path) -> Result<BTreeSet<String>> {
    let path = root.join(test_kit::KIT);
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    Ok(test_kit::names(&text))
}

/// A file of a crate's code that tests may live in, read.
struct TestFile {
    /// Relative to the workspace root.
    file: PathBuf,
    text: String,
    /// A module file of the library: only its `#[cfg(test)]` items are tests.
    in_library: bool,
}

/// Every `.rs` file of the crate at `dir`'s `src/`, `tests/` and `benches/`, each marked whether it is one
/// of the library's module files (`trees`).
fn test_files(root: &Path, dir: &Path, trees: &[Vec<ModuleFile>]) -> Result<Vec<TestFile>> {
    let library: BTreeSet<&str> = trees.iter().flatten().map(|f| f.file.as_str()).collect();
    let mut paths = Vec::new();
    for sub in ["src", "tests", "benches"] {
        rust_files(&dir.join(sub), &mut paths)?;
    }
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
            let file = relative(root, &path);
            let in_library = library.contains(file.display().to_string().as_str());
            Ok(TestFile { file, text, in_library })
        })
        .collect()
}

/// The test functions of `f` named as one of `names`, each a violation saying what to use instead.
fn copied_functions(f: &TestFile, names: &BTreeSet<String>, instead: impl Fn(&str) -> String) -> Vec<Violation> {
    let stripped = code::strip_comments_and_literals(&f.text);
    test_kit::copies(&f.text, f.in_library, names)
        .into_iter()
        .map(|(offset, name)| Violation {
            line: code::line_of(&stripped, offset),
            file: f.file.clone(),
            message: instead(&name),
        })
        .collect()
}

/// The source crate at `dir`'s test functions copying the kit's: in every `.rs` file of `src/`, `tests/` and
/// `benches/`; of the library's module files (`trees`), only their `#[cfg(test)]` items.
fn test_kit_violations(
    root: &Path,
    dir: &Path,
    trees: &[Vec<ModuleFile>],
    kit: &BTreeSet<String>,
) -> Result<Vec<Violation>> {
    let instead = |name: &str| {
        format!(
            "test function `{name}` copies the source test kit's: use `extdns_source::pipeline::testing::{name}` (feature `test-support`)"
        )
    };
    let files = test_files(root, dir, trees)?;
    Ok(files.iter().flat_map(|f| copied_functions(f, kit, instead)).collect())
}

/// The crate at `dir`'s copies of test-support's helpers: test functions named as one (as
/// [`test_kit_violations`] finds them), and the environment scrubbed by hand anywhere.
fn test_support_violations(root: &Path, dir: &Path, trees: &[Vec<ModuleFile>]) -> Result<Vec<Violation>> {
    let names: BTreeSet<String> = test_support::FOLDED.iter().map(|(n, _)| n.to_string()).collect();
    let instead = |name: &str| {
        format!(
            "test function `{name}` copies test-support's: use `{}`",
            test_support::home_of(name)
        )
    };
    let mut out = Vec::new();
    for f in test_files(root, dir, trees)? {
        out.extend(copied_functions(&f, &names, instead));
        let at = |text: &str, offsets: Vec<usize>, message: &str| -> Vec<Violation> {
            offsets
                .into_iter()
                .map(|offset| Violation {
                    line: code::line_of(text, offset),
                    file: f.file.clone(),
                    message: message.to_string(),
                })
                .collect()
        };
        out.extend(at(
            &f.text,
            test_support::scrubbing(&f.text),
            "the EXTERNAL_DNS_* variables scrubbed by hand: use `extdns_test_support::cli::command`",
        ));
        let stripped = code::strip_comments_and_literals(&f.text);
        out.extend(at(
            &stripped,
            test_support::killing_drops(&stripped),
            "a child killed by hand on drop: hold an `extdns_test_support::proc::OwnedChild`",
        ));
        out.extend(at(
            &stripped,
            test_support::unguarded_control_planes(&stripped),
            "the control plane started without `require!(Etcd, KubeApiserver)` first: plain `cargo test` must skip it",
        ));
    }
    Ok(out)
}

/// Every `.rs` file below `dir` (none when it does not exist).
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            rust_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

fn string_error_violations(tree: &[ModuleFile]) -> Vec<Violation> {
    tree.iter()
        .flat_map(|f| {
            string_errors::find(&f.code)
                .into_iter()
                .map(|(offset, what)| Violation {
                    file: PathBuf::from(&f.file),
                    line: f.code.line_of(offset),
                    message: format!("{what}: library code returns a typed error (a `thiserror` enum of its crate)"),
                })
        })
        .collect()
}

/// Escapes decoded by hand in the library files of `tree` ([`escapes`]), but in the rule's own module.
fn escape_violations(tree: &[ModuleFile]) -> Vec<Violation> {
    tree.iter()
        .filter(|f| f.file != escapes::HOME)
        .flat_map(|f| {
            escapes::find(&f.code).into_iter().map(|offset| Violation {
                file: PathBuf::from(&f.file),
                line: f.code.line_of(offset),
                message: format!(
                    "the digits of a `\\DDD` escape sliced by hand: decode zone-file escapes with `{}`",
                    escapes::INSTEAD
                ),
            })
        })
        .collect()
}

fn circle_violations(krate: &str, tree: &[ModuleFile]) -> Vec<Violation> {
    let mut known: BTreeSet<ModulePath> = tree.iter().map(|f| f.path.clone()).collect();
    known.extend(tree.iter().flat_map(modules::declared));
    let mut edges = BTreeMap::new();
    for file in tree {
        for (from, to, at) in modules::uses(file, &known) {
            if let Some(edge) = modules::edge(&from, &to) {
                edges.entry(edge).or_insert(at);
            }
        }
    }
    modules::circles(&edges)
        .into_iter()
        .filter_map(|circle| {
            let (_, first) = circle.first()?;
            let ring: Vec<String> = circle
                .iter()
                .map(|(module, at)| format!("{} ({}:{})", modules::show(module), at.file, at.line))
                .chain(circle.first().map(|(module, _)| modules::show(module)))
                .collect();
            Some(Violation {
                file: PathBuf::from(&first.file),
                line: first.line,
                message: format!("import circle in `{krate}`: {}", ring.join(" uses ")),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The conventions hold in this workspace; a violation fails with its file and line.
    #[test]
    fn the_workspace_follows_its_conventions() -> Result<()> {
        let violations = check(&crate::root())?;
        let listed: Vec<String> = violations.iter().map(ToString::to_string).collect();
        assert!(
            listed.is_empty(),
            "{} violations of the workspace's conventions:\n{}",
            listed.len(),
            listed.join("\n")
        );
        Ok(())
    }

    #[test]
    fn a_module_file_is_found_beside_its_parent_or_in_its_directory() {
        let dir = std::env::temp_dir().join(format!("xtask-conventions-{}", std::process::id()));
        let made = std::fs::create_dir_all(dir.join("src/a/inline")).and_then(|()| {
            std::fs::write(dir.join("src/a.rs"), "")?;
            std::fs::write(dir.join("src/a/inline/b.rs"), "")?;
            std::fs::create_dir_all(dir.join("src/c"))?;
            std::fs::write(dir.join("src/c/mod.rs"), "")
        });
        assert!(made.is_ok(), "{made:?}");
        let path = |p: &[&str]| p.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let lib = dir.join("src/lib.rs");
        assert_eq!(module_file(&lib, &[], &path(&["a"])), Some(dir.join("src/a.rs")));
        assert_eq!(module_file(&lib, &[], &path(&["c"])), Some(dir.join("src/c/mod.rs")));
        let a = dir.join("src/a.rs");
        assert_eq!(
            module_file(&a, &path(&["a"]), &path(&["a", "inline", "b"])),
            Some(dir.join("src/a/inline/b.rs"))
        );
        assert_eq!(module_file(&lib, &[], &path(&["missing"])), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
