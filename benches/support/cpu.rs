//! CPU time for benchmarks: unlike wall time it does not count the time the scheduler gives
//! to other processes (a 2-core machine shared by several builds preempts for whole ticks).

use std::time::Duration;

/// The CPU time `clock` has counted (`libc::CLOCK_THREAD_CPUTIME_ID`: this thread;
/// `libc::CLOCK_PROCESS_CPUTIME_ID`: every thread of this process).
pub fn cpu_time(clock: libc::clockid_t) -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}
