//! Clock, absolute-deadline sleep and real-time scheduling.

use std::io;

/// CLOCK_MONOTONIC in nanoseconds.
pub fn now_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CLOCK_REALTIME in nanoseconds: the clock every namespace shares, so a
/// send time stamped in one can be compared with a receive time in another.
pub fn realtime_ns() -> u64 {
    clock_ns(libc::CLOCK_REALTIME)
}

/// Sleep until CLOCK_MONOTONIC reaches `deadline_ns`. An absolute deadline
/// does not accumulate the drift of relative sleeps.
pub fn sleep_until(deadline_ns: u64) {
    clock_sleep_until(libc::CLOCK_MONOTONIC, deadline_ns)
}

/// Sleep until CLOCK_REALTIME reaches `deadline_ns`.
pub fn sleep_until_realtime(deadline_ns: u64) {
    clock_sleep_until(libc::CLOCK_REALTIME, deadline_ns)
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid pointer to a timespec.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn clock_sleep_until(clock: libc::clockid_t, deadline_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
    };
    loop {
        // SAFETY: valid timespec; remaining time is unused with TIMER_ABSTIME.
        let rc = unsafe { libc::clock_nanosleep(clock, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
        if rc != libc::EINTR {
            return;
        }
    }
}

/// 1 ns timer slack for this thread (the default 50 µs would blur delays).
pub fn tight_timer_slack() -> io::Result<()> {
    // SAFETY: prctl with integer arguments.
    let rc = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// SCHED_FIFO at `priority` for the calling thread.
pub fn realtime(priority: i32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: pid 0 = calling thread; valid sched_param.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Ask for `sig` when the parent process dies, so an emulator whose
/// orchestrator was killed does not outlive it.
pub fn die_with_parent(sig: i32) {
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, sig as libc::c_ulong, 0, 0, 0) };
}
