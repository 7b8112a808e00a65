//! Answers before syncing (issue 49): with `--provider=dns-server`, the threads that answer DNS keep the
//! priority the process started with, and the threads that do the controller's work (the main runtime's
//! workers and blocking pool, and the main thread, which runs the loop) run at a lower one.
//!
//! Why: the UDP workers are threads blocked in the kernel, but on a busy CPU a woken worker still waits for
//! the scheduler to take the CPU from whatever runs there; a sync evaluating thousands of records held it
//! for milliseconds at a time, and the queries that arrived meanwhile waited behind it (the bench's p99 under
//! 100 changes a second was 5× the still zone's). At a positive nice those threads weigh about a tenth of a
//! worker when both want the CPU, and the scheduler favours a woken worker over them, so the sync still runs
//! (it is the next answers' data) but mostly in the gaps the answers leave. Nice does not shorten the slice a
//! sync gets once it runs, so it cuts how often a query waits more than how long (docs/performance.md: not
//! yet measured with `bench serve`).
//!
//! Only lowering is used: any thread may lower its own priority, while raising one back needs a privilege a
//! pod does not have. So the order matters: the answering threads are started first, at the process's
//! priority (they inherit their creator's), and the other threads lower themselves after
//! ([`lower_this_thread`] in the runtime's `on_thread_start` and on the main thread once the server runs).
//!
//! Linux only: there a nice value belongs to one thread; elsewhere `setpriority` would lower the whole
//! process, answers included, so nothing is changed.

/// How much lower (in nice steps) the controller's threads run than the answering ones. 10 steps make a
/// thread weigh about a tenth of a normal one (the kernel's weights fall by about 1.25× a step), while a
/// sync still gets a tenth of a saturated CPU rather than none (`SCHED_IDLE` would starve the controller
/// under a flood of queries, and with it the next changes).
pub const LOWER_BY: i32 = 10;

/// The highest nice value Linux has: the lowest priority.
#[cfg(target_os = "linux")]
const LOWEST: i32 = 19;

/// Lowers the calling thread's priority by [`LOWER_BY`] (capped at the lowest there is); a failure is
/// logged and changes nothing else: the thread then merely competes with the answers as before.
pub fn lower_this_thread() {
    #[cfg(target_os = "linux")]
    if let Err(e) = lower_linux_thread() {
        tracing::debug!(error = %e, "cannot lower a thread's priority below the DNS answers'");
    }
}

#[cfg(target_os = "linux")]
fn lower_linux_thread() -> std::io::Result<()> {
    let thread = Some(rustix::thread::gettid());
    let now = rustix::process::getpriority_process(thread)?;
    rustix::process::setpriority_process(thread, (now + LOWER_BY).min(LOWEST))?;
    Ok(())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// This thread's nice value, as the kernel reports it for the thread.
    fn nice() -> i32 {
        rustix::process::getpriority_process(Some(rustix::thread::gettid())).expect("getpriority")
    }

    #[test]
    fn lowering_a_thread_leaves_the_others_as_they_were() {
        let before = nice();
        let lowered = std::thread::spawn(|| {
            lower_this_thread();
            nice()
        })
        .join()
        .expect("the thread ran");
        assert_eq!(
            lowered,
            (before + LOWER_BY).min(LOWEST),
            "the thread that asked is lowered"
        );
        assert_eq!(nice(), before, "the spawning thread is not");
    }
}
