//! The extdns binary; everything lives in the library so tests run the same code.

use std::process::ExitCode;

/// jemalloc with its background purging thread instead of glibc malloc: glibc kept the peak of the initial
/// list resident for good (a heap per worker thread, freed pages never returned), jemalloc hands freed
/// pages back within seconds, so the process stays near the size of what it actually holds
/// (docs/performance.md, "Resident memory"). Feature `jemalloc`, on in shipped builds.
#[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    // Only ring is compiled in, but a dependency enabling another provider would leave rustls unable to
    // choose; installing ours first settles it. An error means one is already installed, which is fine.
    let _ = rustls::crypto::ring::default_provider().install_default();
    extdns::main(std::env::args_os())
}
