//! Test support: tests that fire events or start a session take turns.
//!
//! There is one trace session per process (event flags are process-wide statics) and the test
//! harness runs tests on parallel threads, so a test that starts a session would otherwise see
//! events fired by a neighbouring test, or fail with `SessionActive`. Every such test holds
//! [`serial`] for its whole body. Tests in other modules that fire events (labfs) take it too
//! whenever a trace test could run in the same test binary.

use parking_lot::{Mutex, MutexGuard};

static SERIAL: Mutex<()> = Mutex::new(());

/// Wait for and hold the process-wide trace test lock (released when the guard drops; a test
/// that panics while holding it does not poison it).
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock()
}
