//! What the binary's allocator is told per thread (feature `jemalloc`).
//!
//! The process runs jemalloc without thread caches (`tcache:false` in `.cargo/config.toml`): the controller
//! allocates in bursts from a few threads and is idle most of the time, and per-thread caches held freed
//! memory the purge could not return. A UDP worker of the built-in DNS server is the opposite: it allocates
//! and frees a few small blocks for every answer, tens of thousands of times a second, and without a cache
//! each of them takes the one arena's lock (malloc and free were a tenth of an answer's CPU in issue 49's
//! profile, a third of that the lock), the lock a sync's thread, at a lower priority ([`crate::priority`]),
//! may hold while it waits for the CPU.
//! So each worker turns its own cache back on as it starts, and allocates from an arena the workers share
//! and the controller's threads do not. What a cache holds is bounded by jemalloc's per-size limits, for at
//! most [`extdns_dns_server::MAX_UDP_WORKERS`] threads; the arena, like the first, returns freed pages at
//! once (`dirty_decay_ms:0`).

/// What each UDP worker of the built-in server runs as it starts
/// ([`extdns_dns_server::ServerConfig::on_udp_worker_start`]).
pub const ANSWERING_THREAD_START: Option<fn()> = answering_thread_start();

const fn answering_thread_start() -> Option<fn()> {
    #[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
    return Some(answering_thread);
    #[cfg(not(all(feature = "jemalloc", not(target_env = "msvc"))))]
    None
}

/// Moves the calling thread to the answering threads' arena (made by the first of them) and turns its
/// jemalloc cache on; a failure is logged and changes nothing else (the thread allocates as before).
#[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
fn answering_thread() {
    use std::sync::OnceLock;

    use tikv_jemalloc_ctl::{Access, AsName};

    static ANSWERING_ARENA: OnceLock<Option<u32>> = OnceLock::new();
    let arena = ANSWERING_ARENA.get_or_init(|| {
        Access::<u32>::read(b"arenas.create\0".name())
            .inspect_err(|e| tracing::debug!(error = %e, "cannot make an allocator arena for the DNS workers"))
            .ok()
    });
    if let Some(arena) = *arena
        && let Err(e) = b"thread.arena\0".name().write(arena)
    {
        tracing::debug!(error = %e, "cannot move a DNS worker to its allocator arena");
    }
    if let Err(e) = b"thread.tcache.enabled\0".name().write(true) {
        tracing::debug!(error = %e, "cannot turn a DNS worker's allocator cache on");
    }
}

#[cfg(all(test, feature = "jemalloc", not(target_env = "msvc")))]
mod tests {
    use tikv_jemalloc_ctl::{Access, AsName};

    /// The calling thread's cache setting and arena, as jemalloc reports them.
    fn this_thread() -> (bool, u32) {
        let cache: bool = b"thread.tcache.enabled\0".name().read().expect("thread.tcache.enabled");
        let arena: u32 = b"thread.arena\0".name().read().expect("thread.arena");
        (cache, arena)
    }

    /// Run with `cargo test -p extdns --features jemalloc allocator`: the process's own threads keep the
    /// configured setting (no cache, the first arena); an answering thread has its cache and an arena of
    /// its own, the same for every answering thread.
    #[test]
    fn an_answering_thread_allocates_from_its_own_arena_with_its_cache_on() {
        let answering = || {
            std::thread::spawn(|| {
                super::answering_thread();
                this_thread()
            })
            .join()
            .expect("the thread ends")
        };
        let (first, second) = (answering(), answering());
        let plain = std::thread::spawn(this_thread).join().expect("the thread ends");
        assert!(first.0 && second.0, "the answering threads cache: {first:?} {second:?}");
        assert_eq!(first.1, second.1, "one arena for every answering thread");
        assert_ne!(first.1, plain.1, "not the arena of the other threads: {plain:?}");
        assert!(!plain.0, "the other threads run without a cache, as configured");
    }
}
