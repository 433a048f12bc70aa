//! [`VirtualClock`]: time that moves only when a test (or a [`super::RecordingTarget`] call)
//! moves it.
//!
//! A workload reads time only through [`Clock`], so giving it this clock makes every figure
//! it measures a sum of costs the test chose: which call lands in which output column becomes
//! an exact assertion instead of a tolerance.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::workload::{Clock, WallTime};

/// A settable clock for tests: a microsecond counter plus a wall-clock epoch.
///
/// It implements [`Clock`]; the wall time is `epoch_secs` plus the counter.
#[derive(Debug)]
pub struct VirtualClock {
    micros: AtomicU64,
    epoch_secs: u64,
}

impl VirtualClock {
    /// A clock at counter 0 whose wall time starts at `epoch_secs`.
    pub fn new(epoch_secs: u64) -> Self {
        VirtualClock {
            micros: AtomicU64::new(0),
            epoch_secs,
        }
    }

    /// Move the clock forward by `us` microseconds.
    pub fn advance(&self, us: u64) {
        self.micros.fetch_add(us, Ordering::SeqCst);
    }

    /// The counter, in microseconds since the clock was made.
    pub fn micros(&self) -> u64 {
        self.micros.load(Ordering::SeqCst)
    }

    /// The wall-clock second the counter's zero stands for.
    pub fn epoch_secs(&self) -> u64 {
        self.epoch_secs
    }
}

impl Clock for VirtualClock {
    fn now_us(&self) -> u64 {
        self.micros()
    }

    fn wall(&self) -> WallTime {
        let us = self.micros();
        WallTime {
            secs: self.epoch_secs() + us / 1_000_000,
            micros: (us % 1_000_000) as u32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn virtual_clock_wall_follows_its_counter() {
        let c = VirtualClock::new(1_000);
        c.advance(2_500_000);
        assert_eq!(c.now_us(), 2_500_000);
        assert_eq!(
            c.wall(),
            WallTime {
                secs: 1_002,
                micros: 500_000
            }
        );
    }
}
