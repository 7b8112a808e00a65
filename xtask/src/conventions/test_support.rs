//! Helpers the test suites once each wrote for themselves and now take from `extdns-test-support`: running
//! a program with the caller's `EXTERNAL_DNS_*` and `RUST_LOG` variables removed (`cli::command`), and
//! capturing what the code under test logged (`logs`). Both were copied into a dozen test files before they
//! were folded; a new test starts by copying its neighbour, so a copy is named here rather than found by
//! the next clean-up.
//!
//! A copy is a free function of test code named as one of [`FOLDED`], or the variable scrubbing itself: a
//! `starts_with("EXTERNAL_DNS_")` outside test-support (and outside comments).
//!
//! A test that starts the control plane (`Binaries::control_plane_from_env`) without `require!` first fails
//! under plain `cargo test`, where it must skip with a line naming `cargo xtask test`: one did.
//!
//! A child process killed by hand when its holder drops (an `impl Drop` calling `.kill()`) is a copy too:
//! every launcher and test once wrote its own, and `extdns_test_support::proc::OwnedChild` is the one.

/// The helpers test-support holds, by the name a copy takes, with where to take them from.
pub const FOLDED: &[(&str, &str)] = &[
    ("command", "extdns_test_support::cli::command"),
    ("warnings", "extdns_test_support::logs::warnings"),
    ("secure", "extdns_test_support::validator::secure"),
];

/// The crate that holds them, by its directory's name.
pub const HOME: &str = "test-support";

/// Where test-support is told to scrub the environment.
const SCRUBBING: &str = "starts_with(\"EXTERNAL_DNS_\")";

/// Where [`FOLDED`] says `name` is taken from.
pub fn home_of(name: &str) -> &'static str {
    FOLDED
        .iter()
        .find(|(n, _)| *n == name)
        .map_or("extdns_test_support", |(_, path)| *path)
}

/// The byte offsets in `source` where the environment is scrubbed by hand (comments passed over).
pub fn scrubbing(source: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut offset = 0;
    for line in source.split_inclusive('\n') {
        let code = line.split("//").next().unwrap_or_default();
        if let Some(at) = code.find(SCRUBBING) {
            out.push(offset + at);
        }
        offset += line.len();
    }
    out
}

/// The byte offsets in `stripped` (comments and literals blanked) of each `impl Drop` whose body kills a
/// child process (`.kill()`): a holder of a bare child that should hold an `OwnedChild`.
pub fn killing_drops(stripped: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = stripped[from..].find("impl Drop for").map(|i| from + i) {
        let body = body_of(&stripped[at..]);
        if body.contains(".kill()") {
            out.push(at);
        }
        from = at + "impl Drop for".len();
    }
    out
}

/// The text of an item from its start to the brace that closes its first block (all of it when unclosed).
fn body_of(item: &str) -> &str {
    let mut depth = 0usize;
    for (i, c) in item.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 1 => return &item[..=i],
            '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    item
}

/// The byte offsets in `stripped` of each call that reads the control plane's programs from the
/// environment in a test function with no `require!` before it: a test that fails, not skips, under
/// plain `cargo test`. A helper's call is its callers' to guard.
pub fn unguarded_control_planes(stripped: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = stripped[from..].find("::control_plane_from_env(").map(|i| from + i) {
        let function = stripped[..at].rfind("fn ").unwrap_or(0);
        let item_start = stripped[..function].rfind("\n}").unwrap_or(0);
        let attributes = &stripped[item_start..function];
        let a_test = attributes.contains("#[test]") || attributes.contains("test(") || attributes.contains("::test]");
        if a_test && !stripped[function..at].contains("require!(") {
            out.push(at);
        }
        from = at + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrubbing_by_hand_is_found_outside_comments() {
        let source = "fn f() {\n    // k.starts_with(\"EXTERNAL_DNS_\") was here\n    \
                      if k.starts_with(\"EXTERNAL_DNS_\") {}\n}\n";
        let found = scrubbing(source);
        assert_eq!(found.len(), 1);
        assert!(source[found[0]..].starts_with("starts_with"));
    }

    #[test]
    fn a_drop_that_kills_a_child_is_found_and_other_drops_are_not() {
        let source = "struct A(Child);\nimpl Drop for A {\n    fn drop(&mut self) {\n        let _ = self.0.kill();\n    \
                      }\n}\nimpl Drop for B {\n    fn drop(&mut self) {\n        self.flush();\n    }\n}\n\
                      fn f(c: &mut Child) { let _ = c.kill(); }\n";
        let found = killing_drops(source);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(source[found[0]..].starts_with("impl Drop for A"));
    }

    #[test]
    fn a_control_plane_started_without_require_is_found() {
        let source = "#[test]\nfn a() {\n    require!(Etcd);\n    let b = Binaries::control_plane_from_env(x)?;\n}\n\
                      #[test]\nfn b() {\n    let b = Binaries::control_plane_from_env(x)?;\n}\n\
                      fn helper() {\n    let b = Binaries::control_plane_from_env(x)?;\n}\n\
                      #[tokio::test]\nasync fn c() {\n    require!(Etcd);\n    helper();\n}\n\
                      pub fn control_plane_from_env(x: PathBuf) {}\n";
        let found = unguarded_control_planes(source);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(source[..found[0]].ends_with("fn b() {\n    let b = Binaries"));
    }

    #[test]
    fn each_folded_helper_names_its_home() {
        assert_eq!(home_of("command"), "extdns_test_support::cli::command");
        assert_eq!(home_of("warnings"), "extdns_test_support::logs::warnings");
        assert_eq!(home_of("secure"), "extdns_test_support::validator::secure");
    }
}
