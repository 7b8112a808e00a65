//! Running a program under test (the `extdns` binary, external-dns) the way the end-to-end tests do: with
//! none of the caller's variables that would change its flags, its manifests in a temporary directory, and
//! a failure message that shows everything it printed.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output};

/// The proxy variables Go's and reqwest's clients honour: a caller's proxy must not carry the program's
/// calls to a loopback fake off the machine (a test that wants one sets it on the command).
const PROXY_VARIABLES: &[&str] = &["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"];

/// `program` without the caller's `EXTERNAL_DNS_*`, `RUST_LOG` and proxy variables, nor any starting with
/// one of `prefixes` (a provider's own, such as `AWS_`): a developer's environment must not change the flags.
pub fn command(program: impl AsRef<OsStr>, prefixes: &[&str]) -> Command {
    let mut cmd = Command::new(program);
    for (key, _) in std::env::vars_os() {
        let k = key.to_string_lossy();
        let proxy = PROXY_VARIABLES.iter().any(|p| k.eq_ignore_ascii_case(p));
        if proxy || k.starts_with("EXTERNAL_DNS_") || k == "RUST_LOG" || prefixes.iter().any(|p| k.starts_with(p)) {
            cmd.env_remove(&key);
        }
    }
    cmd
}

/// Runs `cmd` to its end; a panic when it cannot start.
pub fn run(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {:?}: {e}", cmd.get_program()))
}

/// What it printed: stdout, then stderr.
pub fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Asserts that the run exited 0; `what` names the step, and the message holds everything it printed.
pub fn ok(out: &Output, what: &str) {
    assert_eq!(out.status.code(), Some(0), "{what} failed\n{}", text(out));
}

/// Asserts that `text` (a log, a scrape, an error) holds every one of `parts`; the message names the
/// first missing one and shows the whole text.
pub fn assert_mentions(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(text.contains(part), "{part:?} missing:\n{text}");
    }
}

/// A temporary directory, removed when dropped.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap_or_else(|e| panic!("cannot make a temporary directory: {e}"))
}

/// Writes the manifests `--manifests DIR` reads (`objects.yaml` in `dir`), replacing the last ones.
pub fn write_manifests(dir: &Path, content: &str) {
    if let Err(e) = std::fs::write(dir.join("objects.yaml"), content) {
        panic!("cannot write manifests: {e}");
    }
}
