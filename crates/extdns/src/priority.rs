//! Answers before syncing (issue 49): with `--provider=dns-server`, the threads that answer DNS keep the
//! priority the process started with, and the threads that do the controller's work (the main runtime's
//! workers and blocking pool, and the main thread, which runs the loop) run on `SCHED_IDLE`, at a nice
//! 10 higher besides.
//!
//! Why: the UDP workers are threads blocked in the kernel, but on a busy CPU a woken worker still waits for
//! the scheduler to take the CPU from whatever runs there. A lower priority alone (nice 10) was not enough:
//! the kernel's scheduler (EEVDF, `RUN_TO_PARITY`) lets a thread it picked run out its slice, a few
//! milliseconds, before a woken one of any weight gets the CPU, so the queries that arrived while a sync
//! held it waited that long (`bench serve`: p99 under 100 changes a second 2.6-3.6 times the still zone's
//! at nice 10). A `SCHED_IDLE` thread is preempted the moment a normal one wakes, so an answer waits for
//! no slice of the controller's; the controller runs in the time the answers leave. Measured: p99 under
//! the changes 0.96-1.12 times the still zone's, and the changes still written every second with the UDP worker
//! answering flat out (docs/performance.md).
//!
//! What it costs: under a flood that keeps every UDP worker busy all the time, the controller gets only
//! what little CPU the scheduler gives `SCHED_IDLE` threads (a weight of 3 against a normal thread's
//! 1,024), so syncs slow down while the flood lasts; the answers, which the flood is about, do not.
//! `SCHED_IDLE` yields only within the CPU group the thread is scheduled in: in a pod (its own cgroup)
//! that is the pod's own threads; a process outside any CPU group yields to every other one on the host.
//!
//! Only lowering is used: any thread may lower its own priority and move itself to `SCHED_IDLE`, while
//! raising one back needs a privilege a pod does not have. So the order matters: the answering threads
//! are started first, at the process's priority (they inherit their creator's), and the other threads
//! lower themselves after ([`lower_this_thread`] in the runtime's `on_thread_start` and on the main
//! thread once the server runs).
//!
//! Linux only: there a nice value and a policy belong to one thread; elsewhere `setpriority` would lower the
//! whole process, answers included, so nothing is changed.

/// How much lower (in nice steps) the controller's threads run than the answering ones: what is left when
/// `SCHED_IDLE` cannot be had, and what orders the controller's threads among themselves. 10 steps make a
/// thread weigh about a tenth of a normal one (the kernel's weights fall by about 1.25x a step).
pub const LOWER_BY: i32 = 10;

/// The highest nice value Linux has: the lowest priority.
#[cfg(target_os = "linux")]
const LOWEST: i32 = 19;

/// Moves the calling thread to `SCHED_IDLE` and lowers its nice by [`LOWER_BY`] (capped at the lowest
/// there is); a failure is logged and changes nothing else: the thread then merely competes with the
/// answers as before.
pub fn lower_this_thread() {
    #[cfg(target_os = "linux")]
    {
        let thread = Some(rustix::thread::gettid());
        // Read before the policy call, which sets the thread's nice to 0 on its way.
        let nice = rustix::process::getpriority_process(thread);
        if let Err(e) = idle_linux_thread() {
            tracing::debug!(error = %e, "cannot move a thread to SCHED_IDLE behind the DNS answers");
        }
        let lowered = nice.and_then(|nice| rustix::process::setpriority_process(thread, (nice + LOWER_BY).min(LOWEST)));
        if let Err(e) = lowered {
            tracing::debug!(error = %e, "cannot lower a thread's priority below the DNS answers'");
        }
    }
}

/// The calling thread on `SCHED_IDLE` (thread-priority's safe call of `pthread_setschedparam`).
#[cfg(target_os = "linux")]
fn idle_linux_thread() -> Result<(), thread_priority::Error> {
    use thread_priority::{NormalThreadSchedulePolicy, ThreadPriority, ThreadSchedulePolicy};
    thread_priority::set_thread_priority_and_policy(
        thread_priority::thread_native_id(),
        ThreadPriority::Min,
        ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Idle),
    )
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// This thread's nice value, as the kernel reports it for the thread.
    fn nice() -> i32 {
        rustix::process::getpriority_process(Some(rustix::thread::gettid())).expect("getpriority")
    }

    /// Whether this thread runs on `SCHED_IDLE`.
    fn idle() -> bool {
        use thread_priority::{NormalThreadSchedulePolicy, ThreadSchedulePolicy};
        thread_priority::thread_schedule_policy().expect("the thread's policy")
            == ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Idle)
    }

    #[test]
    fn lowering_a_thread_leaves_the_others_as_they_were() {
        let before = nice();
        let (lowered, lowered_idle) = std::thread::spawn(|| {
            lower_this_thread();
            (nice(), idle())
        })
        .join()
        .expect("the thread ran");
        assert_eq!(
            lowered,
            (before + LOWER_BY).min(LOWEST),
            "the thread that asked is lowered"
        );
        assert!(lowered_idle, "and runs on SCHED_IDLE");
        assert_eq!((nice(), idle()), (before, false), "the spawning thread is not");
    }
}
