//! Ctrl-C, the way a benchmark user expects it: the first stops the run cleanly, the second
//! ends the process at once.
//!
//! The first SIGINT only raises a flag ([`install`] returns it). Engines poll it where
//! stopping is cheap and leaves a consistent state (fsmark: after the file in hand, then the
//! iteration's unlink pass, its row and the summary, as fs_mark's parent stops after an
//! iteration and still prints its summary), so the user gets the figures of the work that was
//! done. A line on stderr says so, and how to get out faster. A second SIGINT means the user
//! will not wait for that: the handler calls `_exit(130)` (128 + SIGINT, the shell's status
//! for a process ended by Ctrl-C) without unwinding, flushing or unmounting, which is what
//! "now" has to mean while a worker is inside a long fsync. A file device is then left as a
//! crash would leave it.
//!
//! The handler only touches atomics and calls `write(2)` and `_exit(2)`, all
//! async-signal-safe.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, Ordering};

/// Raised by the first Ctrl-C; what engines poll.
static STOP: AtomicBool = AtomicBool::new(false);
/// Ctrl-Cs received so far.
static COUNT: AtomicU32 = AtomicU32::new(0);
/// The line printed on the first Ctrl-C (leaked once at install, so it lives forever).
static NOTICE_PTR: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static NOTICE_LEN: AtomicUsize = AtomicUsize::new(0);

/// Exit status after a second Ctrl-C: 128 + SIGINT.
pub const INTERRUPTED_EXIT: i32 = 130;

extern "C" fn on_sigint(_: libc::c_int) {
    if COUNT.fetch_add(1, Ordering::SeqCst) > 0 {
        // SAFETY: _exit is async-signal-safe and never returns.
        unsafe { libc::_exit(INTERRUPTED_EXIT) };
    }
    STOP.store(true, Ordering::SeqCst);
    let ptr = NOTICE_PTR.load(Ordering::SeqCst);
    let len = NOTICE_LEN.load(Ordering::SeqCst);
    if !ptr.is_null() {
        // SAFETY: ptr/len describe a leaked, never-freed byte slice; write(2) is
        // async-signal-safe. A failed write to stderr has nobody to report to.
        let _ = unsafe { libc::write(libc::STDERR_FILENO, ptr.cast(), len) };
    }
}

/// Install the two-stage SIGINT handler for tool `name` and return the stop flag. Calling it
/// again only returns the same flag.
pub fn install(name: &str) -> &'static AtomicBool {
    if NOTICE_PTR.load(Ordering::SeqCst).is_null() {
        let notice = format!(
            "{name}: interrupted: stopping after the work in hand and cleaning up \
             (Ctrl-C again to quit at once)\n"
        );
        let leaked: &'static mut [u8] = Box::leak(notice.into_bytes().into_boxed_slice());
        NOTICE_LEN.store(leaked.len(), Ordering::SeqCst);
        NOTICE_PTR.store(leaked.as_mut_ptr(), Ordering::SeqCst);
        // SAFETY: the handler only uses async-signal-safe operations (see the module docs);
        // the sigaction struct is fully initialised before use.
        unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_sigint as *const () as libc::sighandler_t;
            libc::sigemptyset(&mut act.sa_mask);
            act.sa_flags = libc::SA_RESTART;
            libc::sigaction(libc::SIGINT, &act, std::ptr::null_mut());
        }
    }
    &STOP
}
