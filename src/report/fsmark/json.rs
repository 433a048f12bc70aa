//! fsmark's `--json` document.
//!
//! Shape (all times in microseconds; rewritten atomically after every iteration, so a partial
//! run leaves a valid document with `"summary": null`):
//!
//! ```json
//! {
//!   "tool": "fsmark",
//!   "fs_mark_version": "3.3",
//!   "command": ["fsmark", "-d", "/mnt/0", "-S4"],
//!   "target": "host: the kernel's filesystems via system calls",
//!   "config": {
//!     "dirs": ["/mnt/0"], "threads": 1, "files_per_thread": 1000, "file_size": 51200,
//!     "io_size": 16384, "sync_method": 4, "subdirs": 0, "files_per_subdir": null,
//!     "keep_files": false, "fill": false
//!   },
//!   "loops": [
//!     {
//!       "loop": 1, "fs_use_pct": 68, "count": 1000, "files": 1000,
//!       "files_per_sec": 1664.2, "app_overhead_us": 134,
//!       "latency_us": {
//!         "creat":  {"samples": 1000, "p50": 25, "p90": 31, "p99": 40, "p99_9": 52, "max": 60},
//!         "write":  {...}, "fsync": {...}, "sync": {...}, "close": {...},
//!         "unlink": {"samples": 0, "p50": null, "p90": null, "p99": null, "p99_9": null,
//!                    "max": null}
//!       }
//!     }
//!   ],
//!   "summary": {
//!     "average_files_per_sec": 1664.0, "p50_files_per_sec": 1664,
//!     "p90_files_per_sec": 1664, "p99_files_per_sec": 1664, "ended_by": "completed"
//!   }
//! }
//! ```
//!
//! `count` is cumulative (the table's Count column), `files` is this iteration's. Latency kinds
//! are the table's columns: `fsync` includes the post-loop reopen+fsync+close samples, `sync`
//! holds sync() or -S 7's syncfs() calls. `ended_by` is `completed`, `filesystem_full` (-F) or
//! `interrupted`.

use std::path::PathBuf;

use serde::Serialize;

use crate::report::latency::Percentiles;
use crate::workload::fsmark::{
    Config, LatencySet, LoopReport, RunEnd, RunOutcome, SubdirPolicy, SyscallKind,
};

/// The whole document.
#[derive(Debug, Clone, Serialize)]
pub struct Document {
    /// Always "fsmark".
    pub tool: &'static str,
    /// The fs_mark version whose output the text follows.
    pub fs_mark_version: &'static str,
    /// The command line.
    pub command: Vec<String>,
    /// The target's description.
    pub target: String,
    /// The run's settings.
    pub config: ConfigJson,
    /// One entry per finished iteration.
    pub loops: Vec<LoopJson>,
    /// Set when the run ended.
    pub summary: Option<SummaryJson>,
}

/// The run's settings.
#[derive(Debug, Clone, Serialize)]
pub struct ConfigJson {
    /// `-d` directories.
    pub dirs: Vec<PathBuf>,
    /// Worker threads.
    pub threads: u32,
    /// `-n`.
    pub files_per_thread: u32,
    /// `-s`.
    pub file_size: u64,
    /// `-w`.
    pub io_size: u64,
    /// `-S`.
    pub sync_method: u32,
    /// `-D` (0 without).
    pub subdirs: u32,
    /// `-N` (round robin only).
    pub files_per_subdir: Option<u32>,
    /// Whether files are kept.
    pub keep_files: bool,
    /// `-F`.
    pub fill: bool,
}

/// One iteration.
#[derive(Debug, Clone, Serialize)]
pub struct LoopJson {
    /// 1-based iteration number.
    #[serde(rename = "loop")]
    pub index: u32,
    /// FSUse%.
    pub fs_use_pct: u32,
    /// Cumulative files (the Count column).
    pub count: u64,
    /// Files created in this iteration.
    pub files: u64,
    /// The row's Files/sec.
    pub files_per_sec: f64,
    /// The row's App Overhead (µs).
    pub app_overhead_us: u64,
    /// Per-syscall latency (µs).
    pub latency_us: LatencyJson,
}

/// Per-syscall percentiles, in table column order.
#[derive(Debug, Clone, Serialize)]
pub struct LatencyJson {
    /// open(O_CREAT).
    pub creat: Percentiles,
    /// write().
    pub write: Percentiles,
    /// fsync() and reopen triples.
    pub fsync: Percentiles,
    /// sync() / syncfs().
    pub sync: Percentiles,
    /// close().
    pub close: Percentiles,
    /// unlink().
    pub unlink: Percentiles,
}

impl LatencyJson {
    /// The percentiles of each kind in `set`.
    pub fn of(set: &LatencySet) -> LatencyJson {
        let p = |k: SyscallKind| Percentiles::of(set.get(k));
        LatencyJson {
            creat: p(SyscallKind::Creat),
            write: p(SyscallKind::Write),
            fsync: p(SyscallKind::Fsync),
            sync: p(SyscallKind::Sync),
            close: p(SyscallKind::Close),
            unlink: p(SyscallKind::Unlink),
        }
    }
}

/// The summary lines plus why the run ended.
#[derive(Debug, Clone, Serialize)]
pub struct SummaryJson {
    /// `Average Files/sec`.
    pub average_files_per_sec: f64,
    /// `p50 Files/sec`.
    pub p50_files_per_sec: u64,
    /// `p90 Files/sec`.
    pub p90_files_per_sec: u64,
    /// `p99 Files/sec`.
    pub p99_files_per_sec: u64,
    /// `completed`, `filesystem_full` or `interrupted`.
    pub ended_by: &'static str,
}

impl Document {
    /// A document with no iterations yet.
    pub fn new(command: Vec<String>, target: String, config: &Config) -> Document {
        let files_per_subdir = match config.subdirs {
            SubdirPolicy::RoundRobin { per_subdir, .. } => Some(per_subdir),
            _ => None,
        };
        Document {
            tool: "fsmark",
            fs_mark_version: crate::workload::fsmark::config::FS_MARK_VERSION,
            command,
            target,
            config: ConfigJson {
                dirs: config.dirs.clone(),
                threads: config.threads,
                files_per_thread: config.num_files,
                file_size: config.file_size,
                io_size: config.io_size,
                sync_method: config.sync.number(),
                subdirs: config.subdirs.subdirs(),
                files_per_subdir,
                keep_files: config.keep_files,
                fill: config.fill,
            },
            loops: Vec::new(),
            summary: None,
        }
    }

    /// Add an iteration.
    pub fn push_loop(&mut self, r: &LoopReport) {
        let empty = LatencySet::new();
        self.loops.push(LoopJson {
            index: r.index,
            fs_use_pct: r.fs_use_pct,
            count: r.count,
            files: r.stats.files,
            files_per_sec: r.stats.rate_tenths as f64 / 10.0,
            app_overhead_us: r.stats.app_overhead_us,
            latency_us: LatencyJson::of(r.latency.as_ref().unwrap_or(&empty)),
        });
    }

    /// Record the end of the run.
    pub fn finish(&mut self, outcome: &RunOutcome) {
        self.summary = Some(SummaryJson {
            average_files_per_sec: outcome.summary.average,
            p50_files_per_sec: outcome.summary.p50,
            p90_files_per_sec: outcome.summary.p90,
            p99_files_per_sec: outcome.summary.p99,
            ended_by: match outcome.end {
                RunEnd::Completed => "completed",
                RunEnd::FilesystemFull { .. } => "filesystem_full",
                RunEnd::Interrupted => "interrupted",
            },
        });
    }
}
