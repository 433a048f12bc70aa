//! The shutdown state one mount shares between [`crate::fs::Fs`] and its buffer cache.
//!
//! XFS shuts a filesystem down (`xfs_force_shutdown`) when it can no longer keep its on-disk
//! image consistent, e.g. when a metadata buffer cannot be written home or the device cache
//! cannot be flushed: from then on every operation fails with EIO and nothing more is
//! written, so the image stays as it was rather than receive half an operation. The buffer
//! cache is where a write-home fails, but it does not know the `Fs`; both hold the same
//! [`ShutdownState`].
//!
//! The state is lock-free on purpose: the write-home path sets it while holding buffer
//! locks, and `check_live` runs at the start of every operation, so it must neither take a
//! lock that could invert the lock order nor contend.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::fs::error::{FsError, FsResult, ShutdownReason};

/// Whether a mount has shut down, and the first reason it did.
#[derive(Debug, Default)]
pub struct ShutdownState {
    down: AtomicBool,
    reason: OnceLock<ShutdownReason>,
}

impl ShutdownState {
    /// A live filesystem's state.
    pub fn new() -> ShutdownState {
        ShutdownState::default()
    }

    /// Shut down for `reason`. Only the first reason is kept; returns whether this call was
    /// the one that shut the filesystem down.
    pub fn shut_down(&self, reason: ShutdownReason) -> bool {
        // The reason is stored before the flag is raised, so whoever sees the flag finds it.
        let first = self.reason.set(reason).is_ok();
        self.down.store(true, Ordering::Release);
        first
    }

    /// Whether the filesystem has shut down.
    pub fn is_down(&self) -> bool {
        self.down.load(Ordering::Acquire)
    }

    /// `Err(FsError::Shutdown)` once the filesystem has shut down.
    pub fn check_live(&self) -> FsResult<()> {
        if self.is_down() {
            Err(FsError::Shutdown)
        } else {
            Ok(())
        }
    }

    /// The first reason the filesystem shut down, if it did.
    pub fn reason(&self) -> Option<&ShutdownReason> {
        if self.is_down() {
            self.reason.get()
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_first_reason_and_fails_checks_after() {
        let s = ShutdownState::new();
        assert!(s.check_live().is_ok());
        assert_eq!(s.reason(), None);
        assert!(s.shut_down("first".into()));
        assert!(!s.shut_down("second".into()));
        assert_eq!(s.check_live(), Err(FsError::Shutdown));
        assert_eq!(s.reason(), Some(&ShutdownReason::Aborted("first")));
    }
}
