//! The extdns binary; everything lives in the library so tests run the same code.

use std::process::ExitCode;

fn main() -> ExitCode {
    // Only ring is compiled in, but a dependency enabling another provider would leave rustls unable to
    // choose; installing ours first settles it. An error means one is already installed, which is fine.
    let _ = rustls::crypto::ring::default_provider().install_default();
    extdns::main(std::env::args_os())
}
