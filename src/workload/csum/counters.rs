//! CPU counters around a measured loop: cycles, instructions and task-clock, per thread.
//!
//! Built on `perf-event2` rather than `perf-event`: it is the maintained fork (releases through
//! 2025, newer kernel ABI fields), its `Builder` defaults (this thread, user space only, time
//! enabled/running in every read) are what a per-loop measurement wants, and its errors are
//! plain `io::Error`s carrying the errno, so "this machine has no such counter" is told apart
//! from other failures without matching text. `perf-event` (the original crate) has had no
//! release since 2022.
//!
//! Each counter is opened on its own, not as a group: a VM without a hardware PMU (like the
//! one fslab is developed on) refuses `cycles` and `instructions` with ENOENT but still has
//! the software `task-clock`, and a group would fail as a whole. A counter that could not be
//! opened reads [`Reading::NotSupported`], printed `<not supported>` as `perf stat` does; one
//! that was opened but never scheduled (multiplexed out) reads [`Reading::NotCounted`]. Counts
//! are scaled by enabled/running time, as `perf stat` scales multiplexed counters.

use std::io;

use perf_event::events::{Hardware, Software};
use perf_event::{Builder, Counter};

/// The counters csumhist reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CounterKind {
    /// CPU cycles (hardware).
    Cycles,
    /// Instructions retired (hardware).
    Instructions,
    /// Time the thread ran on a CPU, in nanoseconds (software).
    TaskClock,
}

impl CounterKind {
    /// Every counter, in report order.
    pub const ALL: [CounterKind; 3] = [
        CounterKind::Cycles,
        CounterKind::Instructions,
        CounterKind::TaskClock,
    ];

    /// `perf stat`'s name for the counter.
    pub fn name(self) -> &'static str {
        match self {
            CounterKind::Cycles => "cycles",
            CounterKind::Instructions => "instructions",
            CounterKind::TaskClock => "task-clock",
        }
    }

    fn builder(self) -> Builder<'static> {
        match self {
            CounterKind::Cycles => Builder::new(Hardware::CPU_CYCLES),
            CounterKind::Instructions => Builder::new(Hardware::INSTRUCTIONS),
            CounterKind::TaskClock => Builder::new(Software::TASK_CLOCK),
        }
    }
}

/// One counter's value over a measured interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reading {
    /// The count (task-clock in nanoseconds), scaled for multiplexing.
    Value(f64),
    /// The machine has no such counter (or perf_event_open is not allowed).
    NotSupported,
    /// The counter exists but did not run during the interval.
    NotCounted,
}

impl Reading {
    /// The value, if there is one.
    pub fn value(self) -> Option<f64> {
        match self {
            Reading::Value(v) => Some(v),
            _ => None,
        }
    }

    /// This reading divided by `n` (per byte, per call), keeping what it is otherwise.
    pub fn per(self, n: f64) -> Reading {
        match self {
            Reading::Value(v) if n > 0.0 => Reading::Value(v / n),
            Reading::Value(_) => Reading::NotCounted,
            other => other,
        }
    }
}

/// Why a counter could not be opened: the errno of `perf_event_open`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenFailure {
    /// The counter.
    pub kind: CounterKind,
    /// The OS error number (ENOENT: no such event on this CPU; EACCES/EPERM: not allowed).
    pub errno: Option<i32>,
}

impl OpenFailure {
    /// The errno's description, e.g. "No such file or directory".
    pub fn reason(&self) -> String {
        match self.errno {
            Some(e) => io::Error::from_raw_os_error(e).to_string(),
            None => "unknown error".to_string(),
        }
    }
}

/// The three counters for the calling thread. Use it from the thread being measured.
pub struct CpuCounters {
    counters: Vec<(CounterKind, Result<Counter, OpenFailure>)>,
}

impl std::fmt::Debug for CpuCounters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.counters.iter().map(|(k, c)| (k, c.is_ok())))
            .finish()
    }
}

/// Readings of the three counters over one interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Readings {
    /// CPU cycles.
    pub cycles: Reading,
    /// Instructions retired.
    pub instructions: Reading,
    /// Task-clock nanoseconds.
    pub task_clock_ns: Reading,
}

impl Readings {
    /// Every reading divided by `n`.
    pub fn per(self, n: f64) -> Readings {
        Readings {
            cycles: self.cycles.per(n),
            instructions: self.instructions.per(n),
            task_clock_ns: self.task_clock_ns.per(n),
        }
    }

    /// The reading of one counter.
    pub fn get(&self, kind: CounterKind) -> Reading {
        match kind {
            CounterKind::Cycles => self.cycles,
            CounterKind::Instructions => self.instructions,
            CounterKind::TaskClock => self.task_clock_ns,
        }
    }
}

impl CpuCounters {
    /// Open every counter for the calling thread; the ones the machine lacks are remembered
    /// as unsupported.
    pub fn open() -> CpuCounters {
        CpuCounters {
            counters: CounterKind::ALL
                .into_iter()
                .map(|kind| {
                    let c = kind.builder().build().map_err(|e| OpenFailure {
                        kind,
                        errno: e.raw_os_error(),
                    });
                    (kind, c)
                })
                .collect(),
        }
    }

    /// The counters that could not be opened.
    pub fn unsupported(&self) -> Vec<OpenFailure> {
        self.counters
            .iter()
            .filter_map(|(_, c)| c.as_ref().err().copied())
            .collect()
    }

    /// Zero and start every open counter.
    pub fn start(&mut self) {
        for (_, c) in &mut self.counters {
            if let Ok(c) = c {
                // A counter that cannot be reset or enabled reads as not counted at stop.
                let _ = c.reset().and_then(|()| c.enable());
            }
        }
    }

    /// Stop every counter and read it.
    pub fn stop(&mut self) -> Readings {
        let mut read = |kind: CounterKind| -> Reading {
            let Some((_, c)) = self.counters.iter_mut().find(|(k, _)| *k == kind) else {
                return Reading::NotSupported;
            };
            let Ok(c) = c else {
                return Reading::NotSupported;
            };
            if c.disable().is_err() {
                return Reading::NotCounted;
            }
            match c.read_full() {
                Ok(data) => {
                    let enabled = data.time_enabled().map_or(0, |d| d.as_nanos());
                    let running = data.time_running().map_or(0, |d| d.as_nanos());
                    if running == 0 {
                        Reading::NotCounted
                    } else {
                        Reading::Value(data.count() as f64 * enabled as f64 / running as f64)
                    }
                }
                Err(_) => Reading::NotCounted,
            }
        };
        Readings {
            cycles: read(CounterKind::Cycles),
            instructions: read(CounterKind::Instructions),
            task_clock_ns: read(CounterKind::TaskClock),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_divide_and_keep_their_kind() {
        assert_eq!(Reading::Value(100.0).per(4.0), Reading::Value(25.0));
        assert_eq!(Reading::NotSupported.per(4.0), Reading::NotSupported);
        assert_eq!(Reading::Value(1.0).per(0.0), Reading::NotCounted);
        assert_eq!(Reading::Value(3.0).value(), Some(3.0));
        assert_eq!(Reading::NotCounted.value(), None);
    }

    #[test]
    fn task_clock_counts_a_busy_loop_and_missing_counters_say_so() {
        let mut c = CpuCounters::open();
        c.start();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        std::hint::black_box(x);
        let r = c.stop();
        let missing = c.unsupported();
        if missing.iter().any(|f| f.kind == CounterKind::TaskClock) {
            // perf_event_open itself is unavailable (e.g. a seccomp-filtered container):
            // every counter must then say so rather than report a number.
            assert_eq!(r.task_clock_ns, Reading::NotSupported);
            assert_eq!(r.cycles, Reading::NotSupported);
            return;
        }
        let ns = r.task_clock_ns.value().expect("task-clock ran");
        assert!(ns > 0.0, "{r:?}");
        for f in &missing {
            assert_eq!(r.get(f.kind), Reading::NotSupported, "{}", f.kind.name());
            assert!(!f.reason().is_empty());
        }
    }
}
