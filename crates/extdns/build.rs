//! Stamps the source revision into `extdns --version`. `cargo xtask dist` sets `EXTDNS_REVISION` to the git
//! commit; other builds say "unknown" rather than run git, so a plain `cargo build` stays hermetic.

fn main() {
    println!("cargo:rerun-if-env-changed=EXTDNS_REVISION");
    let revision = std::env::var("EXTDNS_REVISION").unwrap_or_else(|_| "unknown".to_string());
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    println!("cargo:rustc-env=EXTDNS_LONG_VERSION={version} (commit {revision})");
}
