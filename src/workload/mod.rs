//! Workload engines: each benchmark loop written once, target-agnostic.
//!
//! An engine calls only [`crate::backend::Target`] methods and reads time only through a
//! [`Clock`], so the same code runs against a real kernel filesystem, against labfs, and
//! against the test doubles `testing::RecordingTarget` and `testing::VirtualClock` in
//! tests. The virtual clock is what lets a test pin *which* phase of a workload lands in
//! *which* output column: every recorded call advances virtual time by a cost the test chose,
//! so each column's figure is predictable.
//!
//! - [`fsmark`]: the fs_mark 3.3 loop (create/write/fsync/close files, sync phases, unlink).
//! - [`csum`]: csumhist's checksum-size histograms, the oltp mix, and the CRC engine bench.

pub mod csum;
pub mod fsmark;

use std::time::{SystemTime, UNIX_EPOCH};

/// Wall-clock time as `gettimeofday(2)` reports it: seconds and microseconds since the epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WallTime {
    /// Whole seconds since the Unix epoch.
    pub secs: u64,
    /// Microseconds within the second (0..1_000_000).
    pub micros: u32,
}

/// Where a workload reads time: a monotonic microsecond counter for timing system calls, and
/// the wall clock for what a tool derives from the date (file names, seeds, report headers).
pub trait Clock: Send + Sync {
    /// Monotonic time in whole microseconds; only differences are meaningful.
    fn now_us(&self) -> u64;
    /// The wall-clock time.
    fn wall(&self) -> WallTime;
}

/// The machine's clocks: `CLOCK_MONOTONIC` for timing, the system time for dates.
///
/// fs_mark times calls with `gettimeofday` deltas; a monotonic clock gives the same integer
/// microseconds without going negative when NTP steps the wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_us(&self) -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: ts is valid writable storage for one timespec; CLOCK_MONOTONIC always exists
        // on Linux, so the call cannot fail.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        (ts.tv_sec as u64) * 1_000_000 + (ts.tv_nsec as u64) / 1_000
    }

    fn wall(&self) -> WallTime {
        let d = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        WallTime {
            secs: d.as_secs(),
            micros: d.subsec_micros(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_clock_is_monotonic_and_wall_is_after_2020() {
        let c = SystemClock;
        let a = c.now_us();
        let b = c.now_us();
        assert!(b >= a);
        assert!(c.wall().secs > 1_577_836_800);
        assert!(c.wall().micros < 1_000_000);
    }
}
