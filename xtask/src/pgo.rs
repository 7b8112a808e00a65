//! Profile-guided builds of the shipped binary (`cargo xtask dist --pgo`).
//!
//! The kernel maps a program's code in 64 KB windows around each page that runs, so code that runs is resident
//! together with whatever the linker put next to it. Without a profile, the few thousand functions extdns
//! runs are spread over all 18 MB of its code, and most of that code is resident although it never runs. A
//! profile of a real run lets LLVM put the functions that ran apart from those that did not
//! (`.text.hot`, `.text`, `.text.unlikely`; `-z keep-text-section-prefix` keeps the linker from merging them
//! back), and optimise the latter for size (docs/performance.md, "Code laid out by a profile").
//!
//! Training builds extdns instrumented, runs the scale benchmark's scenario on it at a small scale (a real
//! kube-apiserver and BIND: the informers, streaming lists, the sources, the TXT registry and RFC2136), and
//! merges what it recorded with the toolchain's own `llvm-profdata` (rustup's `llvm-tools`, which matches
//! rustc's LLVM). The profile is kept in `target/pgo/` with the `rustc -V` that made it: a build by another
//! rustc names other symbols and cannot use it.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::shipped::{self, Arch, Pgo};
use crate::{output, run, rustc, target_dir};

/// The training run: the scale benchmark's scenario at a fifth of its size, every phase kept short.
const TRAINING: [&str; 11] = [
    "scale",
    "--services",
    "2000",
    "--pods",
    "10000",
    "--changes",
    "3",
    "--idle",
    "5",
    "--stream",
    "10",
];

/// Where the profile of `arch` is kept: `target/pgo/extdns-<arch>.profdata`.
pub(crate) fn profile_path(arch: Arch) -> PathBuf {
    target_dir().join("pgo").join(format!("extdns-{}.profdata", arch.name))
}

/// Beside the profile: the `rustc -V` that built the binary it was recorded from.
fn stamp_path(profile: &Path) -> PathBuf {
    profile.with_extension("rustc")
}

/// `rustc -V`, as the build will run it.
fn rustc_version() -> Result<String> {
    let mut cmd = rustc();
    cmd.arg("-V");
    Ok(output(cmd)?.trim().to_string())
}

/// The release number in `rustc -V`'s line (`rustc 1.95.0 (59807616e 2026-04-14)` → `1.95.0`): the tag of the
/// Rust image that builds the same symbols.
pub(crate) fn release_of(rustc_version: &str) -> Option<&str> {
    rustc_version.strip_prefix("rustc ")?.split_whitespace().next()
}

/// The profile of `arch` and the `rustc -V` that made it, when one was trained.
pub(crate) fn trained(arch: Arch) -> Result<Option<(PathBuf, String)>> {
    let profile = profile_path(arch);
    if !profile.is_file() {
        return Ok(None);
    }
    let stamp = stamp_path(&profile);
    let made_by = std::fs::read_to_string(&stamp).with_context(|| format!("reading {}", stamp.display()))?;
    Ok(Some((profile, made_by.trim().to_string())))
}

/// The profile a build of `arch` uses: the trained one, if this rustc made it. Says which, or why none.
pub(crate) fn usable(arch: Arch) -> Result<Option<PathBuf>> {
    let Some((profile, made_by)) = trained(arch)? else {
        println!(
            "no profile for linux/{} (`cargo xtask dist --pgo` trains one): building without",
            arch.name
        );
        return Ok(None);
    };
    let running = rustc_version()?;
    if made_by != running {
        println!(
            "{} was recorded with {made_by}, this build is {running}: building without (`cargo xtask dist --pgo` trains again)",
            profile.display()
        );
        return Ok(None);
    }
    println!("building with the profile {}", profile.display());
    Ok(Some(profile))
}

/// The toolchain's `llvm-profdata`, from rustup's `llvm-tools` (added when missing).
fn llvm_profdata(host: &str) -> Result<PathBuf> {
    let mut cmd = rustc();
    cmd.args(["--print", "sysroot"]);
    let sysroot = PathBuf::from(output(cmd)?.trim());
    let tool = sysroot.join("lib/rustlib").join(host).join("bin/llvm-profdata");
    if !tool.is_file() {
        let mut add = Command::new("rustup");
        add.args(["component", "add", "llvm-tools"]);
        run(add).context("a profile is merged with the toolchain's llvm-profdata: rustup component add llvm-tools")?;
    }
    if !tool.is_file() {
        bail!("{} is missing after `rustup component add llvm-tools`", tool.display());
    }
    Ok(tool)
}

/// Trains the profile of `arch`, which must be this machine's: builds extdns instrumented, runs the
/// training on it, merges what it wrote. Returns the profile's path.
pub(crate) fn train(arch: Arch, host: &str) -> Result<PathBuf> {
    if arch.target != host {
        bail!(
            "--pgo records a profile by running the binary, so only for this machine's architecture ({host}), not linux/{}",
            arch.name
        );
    }
    let profdata = llvm_profdata(host)?;
    let go = crate::go_binaries()?;
    let pgo = target_dir().join("pgo");
    let raw = pgo.join(format!("raw-{}", arch.name));
    if raw.exists() {
        std::fs::remove_dir_all(&raw).with_context(|| format!("clearing {}", raw.display()))?;
    }
    std::fs::create_dir_all(&raw)?;
    // A target directory of its own: the instrumented build's flags differ from the shipped build's, and
    // sharing one would rebuild every crate at each switch.
    let instrumented = shipped::build_binary(
        arch,
        host,
        Pgo::Record(&raw),
        &pgo.join("build"),
        &shipped::git_revision(),
    )?;
    let harness = crate::build_harness()?;
    let logs = pgo.join("training-logs");
    let mut args: Vec<String> = TRAINING.map(String::from).to_vec();
    args.extend([
        format!("--logs={}", logs.display()),
        "--report".to_string(),
        logs.join("bench-scale.md").display().to_string(),
    ]);
    crate::run_e2e(&go, &harness, &instrumented, &args)?;

    let recorded: Vec<PathBuf> = std::fs::read_dir(&raw)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "profraw"))
        .collect();
    if recorded.is_empty() {
        bail!("the training left no profile in {}", raw.display());
    }
    let profile = profile_path(arch);
    let mut merge = Command::new(profdata);
    merge.arg("merge").arg("-o").arg(&profile).args(&recorded);
    run(merge)?;
    std::fs::write(stamp_path(&profile), format!("{}\n", rustc_version()?))?;
    println!("trained {} ({} run(s) recorded)", profile.display(), recorded.len());
    Ok(profile)
}

/// Copies the trained profiles into the container build context (its `target/pgo/`, where `dist` looks).
/// Returns the Rust release they were recorded with, which the image must be built with to use them.
pub(crate) fn copy_into(context: &Path) -> Result<Option<String>> {
    let mut release = None;
    for arch in shipped::ARCHES {
        let Some((profile, made_by)) = trained(arch)? else {
            continue;
        };
        let to = context.join("target/pgo");
        std::fs::create_dir_all(&to)?;
        for file in [profile.clone(), stamp_path(&profile)] {
            let name = file.file_name().context("a profile has a file name")?;
            std::fs::copy(&file, to.join(name)).with_context(|| format!("copying {}", file.display()))?;
        }
        release = release_of(&made_by).map(str::to_string);
    }
    Ok(release)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_image_tag_is_the_release_of_the_rustc_that_recorded_the_profile() {
        assert_eq!(release_of("rustc 1.95.0 (59807616e 2026-04-14)"), Some("1.95.0"));
        assert_eq!(
            release_of("rustc 1.96.0-nightly (abc 2026-05-01)"),
            Some("1.96.0-nightly")
        );
        assert_eq!(release_of("cargo 1.95.0"), None);
    }

    #[test]
    fn the_stamp_sits_beside_the_profile() {
        assert_eq!(
            stamp_path(Path::new("/t/pgo/extdns-amd64.profdata")),
            Path::new("/t/pgo/extdns-amd64.rustc")
        );
    }
}
