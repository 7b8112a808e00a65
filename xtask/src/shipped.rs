//! How the shipped binary is built, for `dist`, the image, the benchmarks that measure it and the profile
//! training alike: the architectures a release ships for, the build of one (static, the `dist` profile,
//! cross-compiled with Debian's gcc), the flags of a profile-guided build and the revision stamped in.
//! Below both `release` (which packages it) and `pgo` (which trains the profile it is built with), so
//! neither needs the other's build.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::{cargo, root, run};

/// One architecture a release ships for: glibc, statically linked (`+crt-static`), so the binary runs on any
/// Linux of that architecture, in a `scratch` or distroless image included. The resolver is hickory's (pure
/// Rust), so glibc's NSS, which static glibc cannot load, is never called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arch {
    /// The name container platforms use (`TARGETARCH`), and the `dist/linux-<name>/` directory.
    pub name: &'static str,
    pub target: &'static str,
    /// Debian's cross compiler, which also links, for builds on another architecture, and the packages of it
    /// and of the target's C library (headers and the static libc; apt's `--no-install-recommends` leaves that
    /// one out).
    pub(crate) cross_gcc: &'static str,
    pub(crate) cross_packages: &'static [&'static str],
    /// ELF `e_machine`, to check a binary that cannot run here.
    pub(crate) elf_machine: u16,
}

pub const ARCHES: [Arch; 2] = [
    Arch {
        name: "amd64",
        target: "x86_64-unknown-linux-gnu",
        cross_gcc: "x86_64-linux-gnu-gcc",
        cross_packages: &["gcc-x86-64-linux-gnu", "libc6-dev-amd64-cross"],
        elf_machine: 62,
    },
    Arch {
        name: "arm64",
        target: "aarch64-unknown-linux-gnu",
        cross_gcc: "aarch64-linux-gnu-gcc",
        cross_packages: &["gcc-aarch64-linux-gnu", "libc6-dev-arm64-cross"],
        elf_machine: 183,
    },
];

/// Cargo profile of release binaries: `release` plus fat LTO, one codegen unit and stripped symbols.
pub(crate) const DIST_PROFILE: &str = "dist";
/// The host's target triple (`rustc -vV`).
pub(crate) fn host_target() -> Result<String> {
    let out = crate::rustc().arg("-vV").output().context("running rustc -vV")?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(str::to_string)
        .context("rustc -vV names no host")
}

/// What a cross build needs: the Rust standard library for the target (rustup) and Debian's cross compiler
/// (installed with apt-get when xtask runs as root, otherwise named in the error).
fn ensure_cross(arch: Arch) -> Result<()> {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .any(|l| l.trim() == arch.target)
        })
        .unwrap_or(false);
    if !installed {
        let mut add = Command::new("rustup");
        add.args(["target", "add", arch.target]);
        run(add).with_context(|| format!("the {} standard library is needed for linux/{}", arch.target, arch.name))?;
    }
    let libc = format!("/usr/{}/lib/libc.a", arch.cross_gcc.trim_end_matches("-gcc"));
    if crate::find_program(arch.cross_gcc).is_none() || !Path::new(&libc).is_file() {
        crate::deps::apt_install(arch.cross_packages)
            .with_context(|| format!("{} is needed to build linux/{}", arch.cross_gcc, arch.name))?;
    }
    Ok(())
}

/// How a build of the shipped binary uses profile-guided optimisation (crate::pgo).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Pgo<'a> {
    Off,
    /// Instrumented, writing what it runs into this directory.
    Record(&'a Path),
    /// Laid out and optimised by this profile.
    Use(&'a Path),
}

/// Builds the shipped binary of `arch` (the `dist` profile, static) into `target_dir`; returns its path.
pub(crate) fn build_binary(arch: Arch, host: &str, pgo: Pgo<'_>, target_dir: &Path, revision: &str) -> Result<PathBuf> {
    let native = arch.target == host;
    if !native {
        ensure_cross(arch)?;
    }
    let env_target = arch.target.to_ascii_uppercase().replace('-', "_");
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
            arch.target,
        ])
        .arg("--target-dir")
        .arg(target_dir)
        // Only the target's code is linked statically (and instrumented); build scripts and proc macros
        // stay ordinary.
        .env(
            format!("CARGO_TARGET_{env_target}_RUSTFLAGS"),
            format!("-C target-feature=+crt-static{}", rustflags(pgo)?),
        )
        .env("EXTDNS_REVISION", revision);
    if !native {
        // The cross gcc links, and compiles jemalloc's and ring's C (the cc crate reads CC_<target>).
        build
            .env(format!("CARGO_TARGET_{env_target}_LINKER"), arch.cross_gcc)
            .env(format!("CC_{}", arch.target.replace('-', "_")), arch.cross_gcc);
    }
    run(build)?;
    Ok(target_dir.join(arch.target).join(DIST_PROFILE).join("extdns"))
}

/// The flags of a build that records (`-Cprofile-generate`, one file per binary, merged across its runs) or
/// uses a profile. Paths are absolute: rustc runs in each crate's directory.
pub(crate) fn rustflags(pgo: Pgo<'_>) -> Result<String> {
    let absolute = |p: &Path| -> Result<String> {
        let p = std::path::absolute(p).with_context(|| format!("resolving {}", p.display()))?;
        let text = p.to_str().with_context(|| format!("{} is not UTF-8", p.display()))?;
        if text.contains(char::is_whitespace) {
            bail!("{text}: a path with spaces cannot be passed in RUSTFLAGS");
        }
        Ok(text.to_string())
    };
    Ok(match pgo {
        Pgo::Off => String::new(),
        Pgo::Record(dir) => format!(" -C profile-generate={}", absolute(dir)?),
        Pgo::Use(profile) => format!(
            " -C profile-use={} -C link-arg=-Wl,-z,keep-text-section-prefix",
            absolute(profile)?
        ),
    })
}

/// The commit being built: `EXTDNS_REVISION` when the caller knows it (a container build has no `.git`),
/// else git's, marked `-dirty` when tracked files changed.
pub(crate) fn git_revision() -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_records_into_a_directory_and_uses_a_profile_with_its_sections_kept_apart() -> Result<()> {
        assert_eq!(rustflags(Pgo::Off)?, "");
        let record = rustflags(Pgo::Record(Path::new("/tmp/raw")))?;
        assert_eq!(record, " -C profile-generate=/tmp/raw");
        let used = rustflags(Pgo::Use(Path::new("/tmp/extdns-amd64.profdata")))?;
        assert!(used.contains("-C profile-use=/tmp/extdns-amd64.profdata"), "{used}");
        assert!(used.contains("keep-text-section-prefix"), "{used}");
        assert!(rustflags(Pgo::Use(Path::new("/tmp/a b.profdata"))).is_err());
        Ok(())
    }
}
