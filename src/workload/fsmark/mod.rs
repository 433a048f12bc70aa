//! The fs_mark 3.3 workload, written once and generic over the [`crate::backend::Target`] it
//! runs on.
//!
//! fs_mark measures how fast a filesystem creates small files: each thread creates `-n` files
//! (open with O_CREAT|O_TRUNC, write `-s` bytes in `-w` chunks, optionally fsync, close),
//! optionally syncs in one of seven ways afterwards (`-S`), and optionally unlinks them; every
//! call is timed in microseconds and the table reports files/sec, the time not spent in those
//! calls ("App Overhead"), and min/avg/max per call kind. The module is split by idea:
//!
//! - [`config`]: the validated run ([`Config`]), sync methods and their phases, limits.
//! - [`naming`]: file names (hex time + `~` + random `[0-9A-Z]`), the C-library-compatible
//!   random generator, and the round-robin / time-hash subdirectory choice.
//! - `worker`: one thread's iteration in fs_mark's exact call order.
//! - [`metrics`]: per-thread figures, aggregation and the summary, with fs_mark's quirks.
//! - [`progress`]: each worker's phase and step count, for a progress display.
//! - [`driver`]: preflight, fresh threads per iteration, fill mode, the [`Reporter`] that the
//!   report layer implements.
//!
//! The engine never knows which target it runs on and reads time only through a
//! [`crate::workload::Clock`]; that is what lets the tests replay it on a recording target with
//! virtual time and check every column.

pub mod config;
pub mod driver;
pub mod error;
pub mod metrics;
pub mod naming;
pub mod progress;
mod worker;

pub use config::{Config, ConfigError, SubdirPolicy, SyncMethod};
pub use driver::{
    LoopReport, LoopStart, Reporter, RunEnd, RunEnv, RunOutcome, RunStart, Silent, run,
};
pub use error::FsmarkError;
pub use metrics::{LatencySet, LoopStats, MinAvgMax, Summary, SyscallKind};
pub use progress::{Phase, PhaseProgress, Progress};
