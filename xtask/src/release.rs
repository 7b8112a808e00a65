//! Release artefacts: `cargo xtask dist` (a static, stripped, LTO-optimised `extdns` with its checksum and an
//! SBOM) and `cargo xtask image` (the container build context, validated without a container engine).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::shipped::{ARCHES, Arch, Pgo, build_binary, git_revision, host_target};
use crate::{cargo, root, run, target_dir};

/// The platform the SBOM of `cargo metadata` defaults to (the crates linked are the same on both
/// architectures; each SBOM is made for its own target).
pub const DIST_TARGET: &str = "x86_64-unknown-linux-gnu";
/// Where the image runs the binary, and as whom (distroless's `nonroot`).
const IMAGE_BINARY: &str = "/extdns";
const IMAGE_USER: &str = "65532:65532";

/// What `dist` is asked for: the architectures (`--arch NAME`, repeatable; `all`; every one by default), and
/// whether to train a profile first (`--pgo`).
fn dist_args(args: &[String]) -> Result<(Vec<Arch>, bool)> {
    let mut names = Vec::new();
    let mut train = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let value = match a.strip_prefix("--arch=") {
            Some(v) => v.to_string(),
            None if a == "--arch" => it.next().context("--arch needs a value")?.clone(),
            None if a == "--pgo" => {
                train = true;
                continue;
            }
            None => bail!("dist: unknown argument {a} (usage: cargo xtask dist [--arch amd64|arm64|all]... [--pgo])"),
        };
        names.push(value);
    }
    if names.is_empty() || names.iter().any(|n| n == "all") {
        return Ok((ARCHES.to_vec(), train));
    }
    let arches = names
        .iter()
        .map(|n| {
            ARCHES
                .iter()
                .copied()
                .find(|a| a.name == n.as_str())
                .with_context(|| format!("no architecture {n}: amd64 or arm64"))
        })
        .collect::<Result<_>>()?;
    Ok((arches, train))
}

/// `cargo xtask dist [--arch NAME]... [--pgo]`: for each architecture, `dist/linux-<arch>/extdns` with its
/// `extdns.sha256` and `extdns.cdx.json`; refuses a version CHANGELOG.md does not name. Each is built with the
/// profile `--pgo` trains (for this machine's architecture) or an earlier one made by the same rustc
/// (crate::pgo).
pub fn dist(args: &[String]) -> Result<()> {
    let (arches, train) = dist_args(args)?;
    let version = workspace_version()?;
    require_changelog_entry(&version)?;
    let revision = git_revision();
    let host = host_target()?;
    for arch in arches {
        if train && arch.target == host {
            crate::pgo::train(arch, &host)?;
        } else if train {
            // Training runs the binary, which cannot run here.
            println!("linux/{} is cross-built: not trained", arch.name);
        }
        dist_one(arch, &host, &version, &revision)?;
    }
    Ok(())
}

/// The shipped binary of `arch`, stamped with `revision`, with the profile it has, if any
/// (crate::pgo::usable).
pub(crate) fn build_shipped(arch: Arch, host: &str, revision: &str) -> Result<PathBuf> {
    let profile = crate::pgo::usable(arch)?;
    let pgo = profile.as_deref().map_or(Pgo::Off, Pgo::Use);
    build_binary(arch, host, pgo, &target_dir(), revision)
}

fn dist_one(arch: Arch, host: &str, version: &str, revision: &str) -> Result<()> {
    let native = arch.target == host;
    let binary = build_shipped(arch, host, revision)?;

    let dist = root().join("dist").join(format!("linux-{}", arch.name));
    std::fs::create_dir_all(&dist).with_context(|| format!("creating {}", dist.display()))?;
    let shipped = dist.join("extdns");
    std::fs::copy(&binary, &shipped).with_context(|| format!("copying {}", binary.display()))?;
    check_static_elf(&shipped, arch)?;
    if native {
        check_version(&shipped, version, revision)?;
    }

    let mut sum = Command::new("sha256sum");
    sum.arg("extdns").current_dir(&dist);
    let out = sum
        .output()
        .context("sha256sum is needed to write the checksum (coreutils)")?;
    if !out.status.success() {
        bail!("sha256sum failed");
    }
    std::fs::write(dist.join("extdns.sha256"), &out.stdout)?;

    let sbom = sbom(version, arch.target)?;
    let sbom_path = dist.join("extdns.cdx.json");
    std::fs::write(&sbom_path, serde_json::to_string_pretty(&sbom)?)?;

    print!("{}", String::from_utf8_lossy(&out.stdout));
    println!(
        "wrote {} (linux/{}, static, {} bytes), its checksum and {}",
        shipped.display(),
        arch.name,
        std::fs::metadata(&shipped)?.len(),
        sbom_path.display()
    );
    Ok(())
}

/// A 64-bit little-endian ELF executable for `arch` without a program interpreter (`PT_INTERP`): statically
/// linked. Read from the file, so a binary of another architecture is checked too.
fn check_static_elf(binary: &Path, arch: Arch) -> Result<()> {
    let bytes = std::fs::read(binary).with_context(|| format!("reading {}", binary.display()))?;
    if let Some(problem) = elf_problem(&bytes, arch.elf_machine) {
        bail!("{} (linux/{}): {problem}", binary.display(), arch.name);
    }
    Ok(())
}

fn elf_problem(bytes: &[u8], machine: u16) -> Option<String> {
    let u16_at = |o: usize| bytes.get(o..o + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let u32_at = |o: usize| {
        bytes
            .get(o..o + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let u64_at = |o: usize| {
        bytes
            .get(o..o + 8)
            .map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
    };
    if bytes.get(..6) != Some(&[0x7f, b'E', b'L', b'F', 2, 1][..]) {
        return Some("not a 64-bit little-endian ELF file".to_string());
    }
    match u16_at(18) {
        Some(m) if m == machine => {}
        other => return Some(format!("ELF machine {other:?}, expected {machine}")),
    }
    let (Some(phoff), Some(phentsize), Some(phnum)) = (u64_at(32), u16_at(54), u16_at(56)) else {
        return Some("truncated ELF header".to_string());
    };
    let Ok(phoff) = usize::try_from(phoff) else {
        return Some("program headers out of range".to_string());
    };
    for i in 0..usize::from(phnum) {
        match u32_at(phoff + i * usize::from(phentsize)) {
            Some(3) => return Some("dynamically linked (it has a program interpreter)".to_string()),
            Some(_) => {}
            None => return Some("truncated program headers".to_string()),
        }
    }
    None
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
    metadata_for(no_deps, DIST_TARGET)
}

/// [`metadata`] with the dependency graph of `target`.
fn metadata_for(no_deps: bool, target: &str) -> Result<Value> {
    let mut cmd = cargo();
    cmd.args(["metadata", "--format-version", "1", "--locked"]);
    if no_deps {
        cmd.arg("--no-deps");
    } else {
        cmd.args(["--filter-platform", target]);
    }
    let out = cmd.output().context("running cargo metadata")?;
    if !out.status.success() {
        bail!("cargo metadata failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    serde_json::from_slice(&out.stdout).context("reading cargo metadata's output")
}

/// A CycloneDX 1.5 SBOM of what the `extdns` binary links: the crates reachable from `extdns` through normal
/// (not dev or build) dependencies, each with its version, licence and package URL.
fn sbom(version: &str, target: &str) -> Result<Value> {
    let meta = metadata_for(false, target)?;
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
    // A trained profile goes in too; `dist` in the builder uses it only when built by the rustc that recorded it.
    let profiled_with = crate::pgo::copy_into(&context)?;
    println!("wrote the build context {} ({} files)", context.display(), files.len());

    let engine = Command::new("docker")
        .args(["info"])
        .output()
        .is_ok_and(|o| o.status.success());
    if engine {
        let mut build = Command::new("docker");
        build.args(["build", "-t", "ghcr.io/extdns/extdns:dev"]);
        if let Some(release) = profiled_with {
            build.arg("--build-arg").arg(format!("RUST_VERSION={release}"));
        }
        build.arg(".").current_dir(&context);
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
    } else if !build_stage
        .iter()
        .any(|(w, a)| w == "RUN" && a.contains("cargo xtask dist --arch ${TARGETARCH}"))
    {
        problems.push(
            "the builder stage must build the image's architecture: `cargo xtask dist --arch ${TARGETARCH}`"
                .to_string(),
        );
    }
    for (stage, name) in [
        (build_stage, "builder"),
        (&instructions[stages[stages.len() - 1]..], "runtime"),
    ] {
        if !stage.iter().any(|(w, a)| w == "ARG" && a == "TARGETARCH") {
            problems.push(format!(
                "the {name} stage must declare `ARG TARGETARCH` (set per platform by the engine)"
            ));
        }
    }
    let runtime = &instructions[stages[stages.len() - 1]..];
    let base = &runtime[0].1;
    if !(base.starts_with("gcr.io/distroless/static") || base.starts_with("scratch")) {
        problems.push(format!(
            "the runtime stage must be distroless static or scratch, not {base}"
        ));
    }
    let copies_binary = runtime.iter().any(|(w, a)| {
        w == "COPY"
            && a.contains("--from=")
            && a.contains("dist/linux-${TARGETARCH}/extdns")
            && a.ends_with(IMAGE_BINARY)
    });
    if !copies_binary {
        problems.push(format!(
            "the runtime stage must COPY the builder's dist/linux-${{TARGETARCH}}/extdns to {IMAGE_BINARY}"
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

    /// Every one of `expected` is named by one of the problems `check_dockerfile` finds in `text`.
    fn refused_for(text: &str, expected: &[&str]) {
        let problems = check_dockerfile(text, "1.94");
        for expected in expected {
            assert!(
                problems.iter().any(|p| p.contains(expected)),
                "{expected} not in {problems:?}"
            );
        }
    }

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
        refused_for(
            text,
            &[
                "rust:1.94",
                "cargo xtask dist",
                "distroless",
                "COPY the builder",
                "no USER",
                "ENTRYPOINT",
            ],
        );
    }

    #[test]
    fn an_image_that_ignores_the_target_architecture_is_refused() {
        let text = "ARG RUST_VERSION=1.94\nFROM rust:${RUST_VERSION} AS build\nRUN cargo xtask dist\n\
                    FROM gcr.io/distroless/static-debian12:nonroot\nCOPY --from=build /src/dist/linux-amd64/extdns /extdns\n\
                    USER 65532:65532\nENTRYPOINT [\"/extdns\"]\n";
        refused_for(
            text,
            &[
                "--arch ${TARGETARCH}",
                "builder stage must declare",
                "runtime stage must declare",
                "linux-${TARGETARCH}",
            ],
        );
    }

    #[test]
    fn an_elf_is_checked_for_its_machine_and_for_a_program_interpreter() {
        // A minimal ELF64 header with one program header of type `t`, for machine `m`.
        let elf = |m: u16, t: u32| {
            let mut b = vec![0u8; 64 + 56];
            b[..6].copy_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1]);
            b[18..20].copy_from_slice(&m.to_le_bytes());
            b[32..40].copy_from_slice(&64u64.to_le_bytes());
            b[54..56].copy_from_slice(&56u16.to_le_bytes());
            b[56..58].copy_from_slice(&1u16.to_le_bytes());
            b[64..68].copy_from_slice(&t.to_le_bytes());
            b
        };
        assert_eq!(elf_problem(&elf(183, 1), 183), None, "static arm64");
        assert!(elf_problem(&elf(183, 3), 183).is_some_and(|p| p.contains("dynamically linked")));
        assert!(elf_problem(&elf(62, 1), 183).is_some_and(|p| p.contains("machine")));
        assert!(elf_problem(b"#!/bin/sh", 62).is_some());
    }

    #[test]
    fn dist_takes_architectures_by_their_platform_names_and_pgo() -> Result<()> {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(dist_args(&[])?, (ARCHES.to_vec(), false));
        let (arm, train) = dist_args(&args(&["--arch", "arm64"]))?;
        assert_eq!(
            arm.iter().map(|a| a.target).collect::<Vec<_>>(),
            ["aarch64-unknown-linux-gnu"]
        );
        assert!(!train);
        assert_eq!(dist_args(&args(&["--arch=all"]))?.0.len(), 2);
        let (amd, train) = dist_args(&args(&["--pgo", "--arch=amd64"]))?;
        assert_eq!(amd.len(), 1);
        assert!(train);
        assert!(dist_args(&args(&["--arch=riscv64"])).is_err());
        assert!(dist_args(&args(&["--profile"])).is_err());
        Ok(())
    }

    #[test]
    fn a_single_stage_build_is_refused() {
        let problems = check_dockerfile("FROM rust:1.94\nRUN cargo xtask dist\n", "1.94");
        assert!(problems[0].contains("multi-stage"), "{problems:?}");
    }
}
