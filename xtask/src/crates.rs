//! `cargo xtask check-crates`: every library crate of the workspace can be used on its own. For each one:
//! complete crates.io metadata, a crate-level doc with a runnable example, tests that pass, and a package
//! holding every file git tracks in the crate, with every dependency declared with a version.
//!
//! In one build, not one per crate. CI packages every library crate in one `cargo package --no-verify`
//! (the file lists read from the packages it wrote) and checks metadata and crate docs from the sources;
//! their unit tests, integration tests and doctests run in `cargo xtask test`'s one workspace build, which CI
//! runs first. Building and testing each crate alone, and each package from its packaged sources, is
//! `--verify` (a release): the tests of each crate with only its own dependencies' features, and every crate
//! and its dependencies compiled once more from the packages, cost one dependency tree per crate, which was
//! most of CI's time in this stage, to learn what the workspace build and the file lists tell for crates
//! that read no file outside their sources (no `include_*!`; extdns's build script reads only environment
//! variables) and take the features they use from their own manifests.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::release::metadata;
use crate::{TestServers, cargo, output, run};

/// Fields crates.io shows and searches; a crate without them is hard to find or to trust.
const REQUIRED_FIELDS: [&str; 5] = ["description", "license", "repository", "keywords", "categories"];

struct Library {
    name: String,
    version: String,
    manifest: String,
    lib_root: String,
    /// Required crates.io fields the manifest leaves empty.
    missing_fields: Vec<&'static str>,
}

pub fn check_crates(args: &[String]) -> Result<()> {
    let verify = match args {
        [] => false,
        [flag] if flag == "--verify" => true,
        _ => bail!("usage: cargo xtask check-crates [--verify]"),
    };
    let libraries = libraries()?;
    let mut problems = Vec::new();
    for lib in &libraries {
        problems.extend(
            lib.missing_fields
                .iter()
                .map(|field| format!("{}: no `{field}` in {}", lib.name, lib.manifest)),
        );
        if let Some(p) = doc_problem(lib)? {
            problems.push(p);
        }
    }
    if !problems.is_empty() {
        bail!("crates that do not stand alone:\n  {}", problems.join("\n  "));
    }
    println!("metadata and crate docs: {} library crates complete", libraries.len());
    if verify {
        test_each_alone(&libraries)?;
    }
    package(&libraries, verify)?;
    if !verify {
        let missing: Vec<String> = libraries
            .iter()
            .map(missing_from_package)
            .collect::<Result<Vec<_>>>()?
            .into_iter()
            .flatten()
            .collect();
        if !missing.is_empty() {
            bail!(
                "files git tracks that the packages leave out:\n  {}",
                missing.join("\n  ")
            );
        }
    }
    let how = if verify {
        ", each tested alone and built from its package"
    } else {
        " in one build; their tests run in `cargo xtask test`'s workspace build (`--verify`: each alone)"
    };
    println!("check-crates: {} library crates package{how}", libraries.len());
    Ok(())
}

/// Every library crate alone (`--verify`): every test target builds, and the unit tests and doctests pass,
/// with only the features its own manifest asks of its dependencies. The integration tests (which drive real
/// DNS servers, etcd, moto and external-dns) are built alone but run once, by the workspace suite.
fn test_each_alone(libraries: &[Library]) -> Result<()> {
    let servers = TestServers::ensure()?;
    for lib in libraries {
        let mut build = cargo();
        build.args(["test", "--locked", "-p", &lib.name, "--no-run"]);
        run(build).with_context(|| format!("{}'s tests do not build on their own", lib.name))?;
        // cargo runs doctests only in a run of their own.
        for targets in [&["--lib", "--bins"][..], &["--doc"]] {
            let mut test = cargo();
            test.args(["test", "--locked", "-p", &lib.name])
                .args(targets)
                .args(["--", "--test-threads=2"]);
            servers.export_to(&mut test);
            run(test).with_context(|| format!("{} does not pass its unit tests and doctests on its own", lib.name))?;
        }
    }
    Ok(())
}

/// Every library crate packaged in one `cargo package`: cargo packages sibling crates into a local registry so
/// each verifies against the others' packaged sources, as crates.io would serve them. Without `verify`, the
/// packages are written (every path dependency needs a version) and not built, from the local index first:
/// online, cargo updates the crates.io index once per crate, which took 170 of this step's 172 s; the
/// workspace build before it (CI's tests) has the index entries of every dependency.
fn package(libraries: &[Library], verify: bool) -> Result<()> {
    let command = |offline: bool| {
        let mut package = cargo();
        package.args(["package", "--locked", "--allow-dirty"]);
        if !verify {
            package.arg("--no-verify");
        }
        if offline {
            package.arg("--offline");
        }
        for lib in libraries {
            package.args(["-p", &lib.name]);
        }
        package
    };
    if verify {
        forget_packaged_sources(libraries)?;
        return run(command(false)).context("cargo package failed");
    }
    if let Err(e) = run(command(true)) {
        println!("packaging from the local index failed ({e:#}); again with the registry");
        run(command(false)).context("cargo package failed")?;
    }
    Ok(())
}

/// The files git tracks in the crate's directory that its package, as `cargo package` wrote it
/// (`target/package/<name>-<version>.crate`), leaves out.
fn missing_from_package(lib: &Library) -> Result<Option<String>> {
    let dir = Path::new(&lib.manifest)
        .parent()
        .context("a manifest path has a directory")?;
    let mut git = Command::new("git");
    git.args(["ls-files", "--", "."]).current_dir(dir);
    let tracked = output(git)?;
    let archive = crate::target_dir()
        .join("package")
        .join(format!("{}-{}.crate", lib.name, lib.version));
    let mut list = Command::new("tar");
    list.arg("-tzf").arg(&archive);
    let listed = output(list)?;
    let root = format!("{}-{}/", lib.name, lib.version);
    let packaged: BTreeSet<&str> = listed.lines().filter_map(|l| l.strip_prefix(&root)).collect();
    let missing: Vec<&str> = tracked.lines().filter(|f| !packaged.contains(f)).collect();
    Ok((!missing.is_empty()).then(|| format!("{}: not packaged: {}", lib.name, missing.join(", "))))
}

/// cargo unpacks the local registry's crates under `$CARGO_HOME/registry/src/` and never unpacks the same
/// name and version again, and it never rebuilds a registry crate it has built, so a second run would verify
/// against the sources of the first. Our crates are not on crates.io: every unpacked copy of them is such a
/// leftover, and their fingerprints go too (the workspace's own builds of them are simply redone).
fn forget_packaged_sources(libraries: &[Library]) -> Result<()> {
    let fingerprints = crate::target_dir().join("debug").join(".fingerprint");
    if let Ok(entries) = std::fs::read_dir(&fingerprints) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if libraries.iter().any(|l| is_versioned_dir_of(&name, &l.name, true)) {
                std::fs::remove_dir_all(entry.path())
                    .with_context(|| format!("removing the fingerprint {}", entry.path().display()))?;
            }
        }
    }
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")))
        .context("neither CARGO_HOME nor HOME is set")?;
    let Ok(registries) = std::fs::read_dir(cargo_home.join("registry").join("src")) else {
        return Ok(());
    };
    for registry in registries.flatten() {
        let Ok(crates) = std::fs::read_dir(registry.path()) else {
            continue;
        };
        for unpacked in crates.flatten() {
            let name = unpacked.file_name().to_string_lossy().into_owned();
            let ours = libraries.iter().any(|l| is_versioned_dir_of(&name, &l.name, false));
            if ours && unpacked.path().is_dir() {
                std::fs::remove_dir_all(unpacked.path())
                    .with_context(|| format!("removing the stale unpacked crate {}", unpacked.path().display()))?;
            }
        }
    }
    Ok(())
}

/// `<crate>-<version>` (an unpacked crate) or, with `hashed`, `<crate>-<hex hash>` (a fingerprint).
fn is_versioned_dir_of(dir: &str, crate_name: &str, hashed: bool) -> bool {
    dir.strip_prefix(crate_name)
        .and_then(|rest| rest.strip_prefix('-'))
        .is_some_and(|rest| {
            if hashed {
                !rest.is_empty() && rest.chars().all(|c| c.is_ascii_hexdigit())
            } else {
                rest.starts_with(|c: char| c.is_ascii_digit())
            }
        })
}

/// The workspace's publishable packages that have a library target.
fn libraries() -> Result<Vec<Library>> {
    let meta = metadata(true)?;
    let packages = meta["packages"].as_array().context("cargo metadata: no packages")?;
    let mut libs = Vec::new();
    for p in packages {
        let publishable = !matches!(&p["publish"], Value::Array(a) if a.is_empty());
        let lib_root = p["targets"].as_array().into_iter().flatten().find_map(|t| {
            let is_lib = t["kind"].as_array().is_some_and(|k| k.iter().any(|k| k == "lib"));
            is_lib.then(|| t["src_path"].as_str().unwrap_or_default().to_string())
        });
        if let (true, Some(lib_root)) = (publishable, lib_root) {
            libs.push(Library {
                name: p["name"].as_str().unwrap_or_default().to_string(),
                version: p["version"].as_str().unwrap_or_default().to_string(),
                manifest: p["manifest_path"].as_str().unwrap_or_default().to_string(),
                lib_root,
                missing_fields: missing_fields(p),
            });
        }
    }
    libs.sort_by(|a, b| a.name.cmp(&b.name));
    if libs.is_empty() {
        bail!("cargo metadata lists no publishable library crates");
    }
    Ok(libs)
}

/// The [`REQUIRED_FIELDS`] a package's metadata leaves empty.
fn missing_fields(package: &Value) -> Vec<&'static str> {
    REQUIRED_FIELDS
        .into_iter()
        .filter(|field| match &package[*field] {
            Value::String(s) => s.trim().is_empty(),
            Value::Array(a) => a.is_empty(),
            _ => true,
        })
        .collect()
}

/// A crate-level doc comment with at least one example that runs as a doctest (not `ignore`, `no_run` or
/// `text`).
fn doc_problem(lib: &Library) -> Result<Option<String>> {
    let text =
        std::fs::read_to_string(Path::new(&lib.lib_root)).with_context(|| format!("reading {}", lib.lib_root))?;
    let doc: Vec<&str> = text.lines().take_while(|l| l.starts_with("//!")).collect();
    if doc.is_empty() {
        return Ok(Some(format!("{}: no crate-level doc in {}", lib.name, lib.lib_root)));
    }
    let runnable = doc.iter().any(|l| {
        let fence = l.trim_start_matches("//!").trim();
        fence == "```" || fence == "```rust"
    });
    Ok((!runnable).then(|| {
        format!(
            "{}: the crate doc of {} has no runnable example",
            lib.name, lib.lib_root
        )
    }))
}
