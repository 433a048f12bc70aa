//! csumhist's output: text tables, JSON documents and the throughput plot.
//!
//! - [`text`]: thread 004's size table (one row per ilog2 bucket, labelled with its byte range;
//!   frequency % and bytes % of total, head and tail), the per-structure breakdown, the
//!   single-vs-split comparison, the engine throughput and counter tables, the stat block.
//! - [`json`]: the same figures for scripts (`--json FILE`, `-` for stdout).
//! - [`plot`]: GB/s against size for each engine as SVG, drawn with `plotters`.
//!
//! The figures themselves come from [`crate::workload::csum`]; this module only lays them out.

pub mod json;
pub mod plot;
pub mod text;

use crate::workload::csum::calls::{CallFilter, EngineCalls, SmallBelow};
use crate::workload::csum::run::Measured;

/// What a `csumhist run` report shows: the workload's description, which calls count, the
/// small-call threshold, and the measured runs (one per checksum mode, in order).
#[derive(Debug, Clone, Copy)]
pub struct RunView<'a> {
    /// The workload, as one line.
    pub workload: &'a str,
    /// Which helper calls the tables count.
    pub filter: CallFilter,
    /// Computations under this size count as small.
    pub small_below: SmallBelow,
    /// The runs.
    pub runs: &'a [Measured],
}

/// One run's crc32c call figures, with the rates and shares the reports print.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModeStats {
    /// The counts.
    pub calls: EngineCalls,
    /// crc32c computations per second of workload.
    pub calls_per_sec: f64,
    /// Small computations as a share of all, in percent.
    pub small_calls_pct: f64,
    /// Bytes in small computations as a share of all bytes, in percent.
    pub small_bytes_pct: f64,
}

/// The figures of run `m` under `view`'s filter and threshold.
pub fn mode_stats(view: &RunView<'_>, m: &Measured) -> ModeStats {
    let calls = m.calls.engine_calls(view.filter, view.small_below);
    let secs = m.workload.elapsed.as_secs_f64();
    let share = |part: f64, whole: f64| {
        if whole > 0.0 {
            part * 100.0 / whole
        } else {
            0.0
        }
    };
    ModeStats {
        calls,
        calls_per_sec: if secs > 0.0 {
            calls.crc_calls as f64 / secs
        } else {
            0.0
        },
        small_calls_pct: share(calls.small_calls as f64, calls.crc_calls as f64),
        small_bytes_pct: share(calls.small_bytes as f64, calls.bytes as f64),
    }
}
