//! Release artefacts: `cargo xtask dist` (a static, stripped, LTO-optimised `extdns` with its checksum and an
//! SBOM) and `cargo xtask image` (the container build context, validated without a container engine).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::{cargo, root, run, target_dir};

/// The target release binaries are built for: glibc, statically linked (`+crt-static`), so the binary runs on
/// any x86-64 Linux, in a `scratch` or distroless image included. The resolver is hickory's (pure Rust), so
/// glibc's NSS, which static glibc cannot load, is never called.
pub const DIST_TARGET: &str = "x86_64-unknown-linux-gnu";
/// Cargo profile of release binaries: `release` plus fat LTO, one codegen unit and stripped symbols.
pub(crate) const DIST_PROFILE: &str = "dist";
/// Where the image runs the binary, and as whom (distroless's `nonroot`).
const IMAGE_BINARY: &str = "/extdns";
const IMAGE_USER: &str = "65532:65532";

/// `cargo xtask dist`: `dist/extdns`, `dist/extdns.sha256` and `dist/extdns.cdx.json`.
pub fn dist() -> Result<()> {
    let version = workspace_version()?;
    require_changelog_entry(&version)?;
    let revision = git_revision();
    let mut build = cargo();
    build
        .args([
            "build",
            "--locked",
            "-p",
            "extdns",
            "--features",
            "jemalloc",
            "--profile",
            DIST_PROFILE,
            "--target",
            DIST_TARGET,
        ])
        // Only the target's code is linked statically; build scripts and proc macros stay ordinary.
        .env(
            "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS",
            "-C target-feature=+crt-static",
        )
        .env("EXTDNS_REVISION", &revision);
    run(build)?;

    let dist = root().join("dist");
    std::fs::create_dir_all(&dist).with_context(|| format!("creating {}", dist.display()))?;
    let binary = target_dir().join(DIST_TARGET).join(DIST_PROFILE).join("extdns");
    let shipped = dist.join("extdns");
    std::fs::copy(&binary, &shipped).with_context(|| format!("copying {}", binary.display()))?;
    check_static(&shipped)?;
    check_version(&shipped, &version, &revision)?;

    let mut sum = Command::new("sha256sum");
    sum.arg("extdns").current_dir(&dist);
    let out = sum
        .output()
        .context("sha256sum is needed to write the checksum (coreutils)")?;
    if !out.status.success() {
        bail!("sha256sum failed");
    }
    std::fs::write(dist.join("extdns.sha256"), &out.stdout)?;

    let sbom = sbom(&version)?;
    let sbom_path = dist.join("extdns.cdx.json");
    std::fs::write(&sbom_path, serde_json::to_string_pretty(&sbom)?)?;

    print!("{}", String::from_utf8_lossy(&out.stdout));
    println!(
        "wrote {} (static, {} bytes), its checksum and {}",
        shipped.display(),
        std::fs::metadata(&shipped)?.len(),
        sbom_path.display()
    );
    Ok(())
}

/// A release names its version in CHANGELOG.md: the build refuses to ship one the changelog does not mention.
fn require_changelog_entry(version: &str) -> Result<()> {
    let path = root().join("CHANGELOG.md");
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let heading = format!("## [{version}]");
    if !text.lines().any(|l| l.starts_with(&heading)) {
        bail!(
            "{} has no entry for {version}: add a `{heading}` section before releasing",
            path.display()
        );
    }
    Ok(())
}

/// The commit being built: `EXTDNS_REVISION` when the caller knows it (a container build has no `.git`),
/// else git's, marked `-dirty` when tracked files changed.
fn git_revision() -> String {
    if let Ok(rev) = std::env::var("EXTDNS_REVISION")
        && !rev.is_empty()
    {
        return rev;
    }
    let out = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(root())
        .output();
    match out {
        Ok(o) if o.status.success() => {
            let mut rev = String::from_utf8_lossy(&o.stdout).trim().to_string();
            let dirty = Command::new("git")
                .args(["status", "--porcelain", "--untracked-files=no"])
                .current_dir(root())
                .output()
                .is_ok_and(|o| !o.stdout.is_empty());
            if dirty {
                rev.push_str("-dirty");
            }
            rev
        }
        _ => "unknown".to_string(),
    }
}

/// `ldd` says "not a dynamic executable" for a static binary (and exits non-zero).
fn check_static(binary: &Path) -> Result<()> {
    let out = Command::new("ldd")
        .arg(binary)
        .output()
        .context("ldd is needed to check the binary is static")?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !(text.contains("not a dynamic executable") || text.contains("statically linked")) {
        bail!("{} is not static; ldd says:\n{text}", binary.display());
    }
    Ok(())
}

fn check_version(binary: &Path, version: &str, revision: &str) -> Result<()> {
    let out = Command::new(binary)
        .arg("--version")
        .output()
        .with_context(|| format!("running {}", binary.display()))?;
    let printed = String::from_utf8_lossy(&out.stdout);
    let expected = format!("extdns {version} (commit {revision})");
    if printed.trim() != expected {
        bail!(
            "{} --version printed {printed:?}, expected {expected:?}",
            binary.display()
        );
    }
    Ok(())
}

fn workspace_version() -> Result<String> {
    let meta = metadata(true)?;
    let extdns = meta["packages"]
        .as_array()
        .and_then(|p| p.iter().find(|p| p["name"] == "extdns"))
        .context("cargo metadata lists no `extdns` package")?;
    Ok(extdns["version"].as_str().unwrap_or_default().to_string())
}

/// `cargo metadata`: the workspace's own packages (`no_deps`) or the whole resolved graph.
pub fn metadata(no_deps: bool) -> Result<Value> {
    let mut cmd = cargo();
    cmd.args(["metadata", "--format-version", "1", "--locked"]);
    if no_deps {
        cmd.arg("--no-deps");
    } else {
        cmd.args(["--filter-platform", DIST_TARGET]);
    }
    let out = cmd.output().context("running cargo metadata")?;
    if !out.status.success() {
        bail!("cargo metadata failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    serde_json::from_slice(&out.stdout).context("reading cargo metadata's output")
}

/// A CycloneDX 1.5 SBOM of what the `extdns` binary links: the crates reachable from `extdns` through normal
/// (not dev or build) dependencies, each with its version, licence and package URL.
fn sbom(version: &str) -> Result<Value> {
    let meta = metadata(false)?;
    let packages = meta["packages"].as_array().context("cargo metadata: no packages")?;
    let nodes = meta["resolve"]["nodes"]
        .as_array()
        .context("cargo metadata: no resolve graph")?;
    let root_id = packages
        .iter()
        .find(|p| p["name"] == "extdns" && p["source"].is_null())
        .and_then(|p| p["id"].as_str())
        .context("no extdns package")?;

    let mut linked = BTreeSet::new();
    let mut todo = vec![root_id.to_string()];
    while let Some(id) = todo.pop() {
        if !linked.insert(id.clone()) {
            continue;
        }
        let Some(node) = nodes.iter().find(|n| n["id"] == id.as_str()) else {
            continue;
        };
        for dep in node["deps"].as_array().into_iter().flatten() {
            let normal = dep["dep_kinds"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|k| k["kind"].is_null());
            if normal && let Some(pkg) = dep["pkg"].as_str() {
                todo.push(pkg.to_string());
            }
        }
    }

    let components: Vec<Value> = packages
        .iter()
        .filter(|p| p["id"].as_str().is_some_and(|id| id != root_id && linked.contains(id)))
        .map(|p| {
            let name = p["name"].as_str().unwrap_or_default();
            let version = p["version"].as_str().unwrap_or_default();
            let mut c = json!({
                "type": "library",
                "bom-ref": format!("pkg:cargo/{name}@{version}"),
                "name": name,
                "version": version,
                "purl": format!("pkg:cargo/{name}@{version}"),
            });
            if let Some(license) = p["license"].as_str() {
                c["licenses"] = json!([{ "expression": license }]);
            }
            c
        })
        .collect();
    Ok(json!({
        "bomFormat": "CycloneDX",
        "specVersion": "1.5",
        "version": 1,
        "metadata": {
            "component": {
                "type": "application",
                "bom-ref": format!("pkg:cargo/extdns@{version}"),
                "name": "extdns",
                "version": version,
                "purl": format!("pkg:cargo/extdns@{version}"),
            }
        },
        "components": components,
    }))
}

/// `cargo xtask image`: writes the build context a container engine would get (`target/image/`: the files git
/// tracks, the Dockerfile, no `target/`), and checks the Dockerfile against what `dist` builds, so the image
/// stays right on machines where no engine runs. With a working `docker`, it also builds the image.
pub fn image() -> Result<()> {
    let dockerfile_path = root().join("Dockerfile");
    let dockerfile =
        std::fs::read_to_string(&dockerfile_path).with_context(|| format!("reading {}", dockerfile_path.display()))?;
    let problems = check_dockerfile(&dockerfile, &rust_version()?);
    if !problems.is_empty() {
        bail!("{}:\n  {}", dockerfile_path.display(), problems.join("\n  "));
    }

    let context = target_dir().join("image");
    if context.exists() {
        std::fs::remove_dir_all(&context).with_context(|| format!("clearing {}", context.display()))?;
    }
    let files = tracked_files()?;
    for file in &files {
        let to = context.join(file);
        if let Some(dir) = to.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::copy(root().join(file), &to).with_context(|| format!("copying {}", file.display()))?;
    }
    for needed in [
        "Cargo.toml",
        "Cargo.lock",
        "Dockerfile",
        "crates/extdns/Cargo.toml",
        "xtask/Cargo.toml",
    ] {
        if !context.join(needed).is_file() {
            bail!("the build context lacks {needed}");
        }
    }
    println!("wrote the build context {} ({} files)", context.display(), files.len());

    let engine = Command::new("docker")
        .args(["info"])
        .output()
        .is_ok_and(|o| o.status.success());
    if engine {
        let mut build = Command::new("docker");
        build.args(["build", "-t", "extdns:dev", "."]).current_dir(&context);
        run(build)?;
    } else {
        println!("no container engine answers `docker info`: context written and checked, image not built");
    }
    Ok(())
}

fn tracked_files() -> Result<Vec<PathBuf>> {
    let out = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root())
        .output()
        .context("running git ls-files")?;
    if !out.status.success() {
        bail!("git ls-files failed");
    }
    Ok(out
        .stdout
        .split(|b| *b == 0)
        .filter(|f| !f.is_empty())
        .map(|f| PathBuf::from(String::from_utf8_lossy(f).into_owned()))
        .filter(|f| root().join(f).is_file())
        .collect())
}

/// The toolchain the workspace asks for (`rust-version`), which the builder stage must use.
fn rust_version() -> Result<String> {
    let text = std::fs::read_to_string(root().join("Cargo.toml"))?;
    text.lines()
        .find_map(|l| l.strip_prefix("rust-version = \"").and_then(|v| v.strip_suffix('"')))
        .map(str::to_string)
        .context("the workspace Cargo.toml has no rust-version")
}

/// What the Dockerfile must say for the image to be the `dist` binary, run safely. Returns the problems.
pub fn check_dockerfile(text: &str, rust_version: &str) -> Vec<String> {
    let mut problems = Vec::new();
    // Join continuation lines, drop comments and blanks.
    let mut instructions: Vec<(String, String)> = Vec::new();
    let mut pending = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if pending.is_empty() && (trimmed.is_empty() || trimmed.starts_with('#')) {
            continue;
        }
        if let Some(part) = trimmed.strip_suffix('\\') {
            pending.push_str(part);
            pending.push(' ');
            continue;
        }
        pending.push_str(trimmed);
        let (word, rest) = pending
            .split_once(char::is_whitespace)
            .unwrap_or((pending.as_str(), ""));
        instructions.push((word.to_ascii_uppercase(), rest.trim().to_string()));
        pending.clear();
    }
    const KNOWN: [&str; 18] = [
        "FROM",
        "RUN",
        "CMD",
        "LABEL",
        "EXPOSE",
        "ENV",
        "ADD",
        "COPY",
        "ENTRYPOINT",
        "VOLUME",
        "USER",
        "WORKDIR",
        "ARG",
        "ONBUILD",
        "STOPSIGNAL",
        "HEALTHCHECK",
        "SHELL",
        "MAINTAINER",
    ];
    for (word, _) in &instructions {
        if !KNOWN.contains(&word.as_str()) {
            problems.push(format!("unknown instruction {word}"));
        }
    }
    let stages: Vec<usize> = instructions
        .iter()
        .enumerate()
        .filter(|(_, (w, _))| w == "FROM")
        .map(|(i, _)| i)
        .collect();
    if stages.len() < 2 {
        problems.push("expected a multi-stage build: a builder stage and a runtime stage".to_string());
        return problems;
    }
    let builder = &instructions[stages[0]].1;
    let args: Vec<&str> = instructions
        .iter()
        .filter(|(w, _)| w == "ARG")
        .map(|(_, a)| a.as_str())
        .collect();
    let pinned_rust = args.iter().any(|a| *a == format!("RUST_VERSION={rust_version}"));
    if !(builder.contains(&format!("rust:{rust_version}")) || (pinned_rust && builder.contains("rust:${RUST_VERSION}")))
    {
        problems.push(format!(
            "the builder stage must use the workspace's toolchain, rust:{rust_version}"
        ));
    }
    let build_stage = &instructions[stages[0]..stages[stages.len() - 1]];
    if !build_stage
        .iter()
        .any(|(w, a)| w == "RUN" && a.contains("cargo xtask dist"))
    {
        problems.push("the builder stage must build with `cargo xtask dist` (static, LTO, checked)".to_string());
    }
    let runtime = &instructions[stages[stages.len() - 1]..];
    let base = &runtime[0].1;
    if !(base.starts_with("gcr.io/distroless/static") || base.starts_with("scratch")) {
        problems.push(format!(
            "the runtime stage must be distroless static or scratch, not {base}"
        ));
    }
    let copies_binary = runtime
        .iter()
        .any(|(w, a)| w == "COPY" && a.contains("--from=") && a.contains("dist/extdns") && a.ends_with(IMAGE_BINARY));
    if !copies_binary {
        problems.push(format!(
            "the runtime stage must COPY the builder's dist/extdns to {IMAGE_BINARY}"
        ));
    }
    if base.starts_with("scratch")
        && !runtime
            .iter()
            .any(|(w, a)| w == "COPY" && a.contains("ca-certificates"))
    {
        problems.push("a scratch image needs CA certificates copied in".to_string());
    }
    match runtime.iter().rev().find(|(w, _)| w == "USER") {
        Some((_, user)) if user == IMAGE_USER => {}
        Some((_, user)) => problems.push(format!("the image must run as {IMAGE_USER}, not {user}")),
        None => problems.push(format!("the runtime stage sets no USER (must be {IMAGE_USER})")),
    }
    let entrypoint = runtime
        .iter()
        .rev()
        .find(|(w, _)| w == "ENTRYPOINT")
        .map(|(_, a)| a.as_str());
    if entrypoint != Some(&format!("[\"{IMAGE_BINARY}\"]")) {
        problems.push(format!("ENTRYPOINT must be [\"{IMAGE_BINARY}\"] (exec form)"));
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_project_dockerfile_passes() {
        let text = std::fs::read_to_string(root().join("Dockerfile")).expect("Dockerfile");
        let version = rust_version().expect("rust-version");
        assert_eq!(check_dockerfile(&text, &version), Vec::<String>::new());
    }

    #[test]
    fn a_root_image_an_old_toolchain_and_a_dynamic_base_are_refused() {
        let text = "FROM rust:1.80 AS build\nRUN cargo build --release\nFROM debian:12\n\
                    COPY --from=build /src/target/release/extdns /extdns\nENTRYPOINT /extdns\n";
        let problems = check_dockerfile(text, "1.94");
        for expected in [
            "rust:1.94",
            "cargo xtask dist",
            "distroless",
            "COPY the builder",
            "no USER",
            "ENTRYPOINT",
        ] {
            assert!(
                problems.iter().any(|p| p.contains(expected)),
                "{expected} not in {problems:?}"
            );
        }
    }

    #[test]
    fn a_single_stage_build_is_refused() {
        let problems = check_dockerfile("FROM rust:1.94\nRUN cargo xtask dist\n", "1.94");
        assert!(problems[0].contains("multi-stage"), "{problems:?}");
    }
}
