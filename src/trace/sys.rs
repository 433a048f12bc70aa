//! The few facts about the calling thread an ftrace line carries: the clock, the kernel thread
//! id, the CPU, the command name, and the number of online CPUs.
//!
//! Each is one libc call. They are wrapped here (not taken from `nix`) because the crate's nix
//! features do not include `sched`/`process`, and the calls cannot fail in ways that matter: a
//! failure degrades to a neutral value (CPU 0, an empty name) rather than losing the event.

/// Nanoseconds of `CLOCK_MONOTONIC`, the clock behind ftrace's default `local` clock.
pub(crate) fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec owned by this frame; CLOCK_MONOTONIC exists on
    // every Linux kernel this crate supports.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    if rc != 0 {
        return 0;
    }
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

/// The kernel thread id (what ftrace prints as the pid).
pub(crate) fn gettid() -> i32 {
    // SAFETY: gettid takes no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// The CPU the thread is running on now (0 if the kernel cannot say).
pub(crate) fn current_cpu() -> u32 {
    // SAFETY: sched_getcpu takes no arguments; it returns -1 on failure.
    let cpu = unsafe { libc::sched_getcpu() };
    u32::try_from(cpu).unwrap_or(0)
}

/// The thread's command name as the kernel keeps it (`comm`, at most 15 bytes).
///
/// Rust names threads with `pthread_setname_np`, which truncates to the same 15 bytes, so a
/// named Rust thread shows its name; an unnamed one shows the name it inherited.
pub(crate) fn comm() -> String {
    let mut buf = [0u8; 16];
    // SAFETY: PR_GET_NAME writes at most 16 bytes, NUL included, into the buffer we pass.
    let rc = unsafe { libc::prctl(libc::PR_GET_NAME, buf.as_mut_ptr(), 0, 0, 0) };
    if rc != 0 {
        return String::new();
    }
    let len = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..len]).into_owned()
}

/// Online CPUs, the `#P:` figure of the ftrace header.
pub(crate) fn online_cpus() -> u32 {
    // SAFETY: sysconf only reads a configuration value.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    u32::try_from(n).unwrap_or(1).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_facts_are_plausible() {
        let a = monotonic_ns();
        let b = monotonic_ns();
        assert!(b >= a && a > 0);
        assert!(current_cpu() < online_cpus().max(1024));
        let main_tid = gettid();
        let (tid, name) = std::thread::Builder::new()
            .name("sys-probe-thread-long-name".into())
            .spawn(|| (gettid(), comm()))
            .expect("spawn")
            .join()
            .expect("join");
        assert_ne!(tid, main_tid);
        assert_eq!(name, "sys-probe-threa");
    }
}
