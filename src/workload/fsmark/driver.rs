//! The run driver: preflight, iterations of fresh worker threads, aggregation, and the end
//! conditions (`-L` count, `-F` fill, interrupt).
//!
//! An interrupt (Ctrl-C) stops each worker after the file in hand (see `worker`); the
//! iteration then ends as any other, with its unlink pass and its row counting the files
//! made, and the run ends there with the summary: what fs_mark prints after an interrupted
//! iteration, but without waiting for the iteration to finish.
//!
//! fs_mark forks its "threads" as processes on every iteration and collects each child's
//! 19-number log line. We start real threads per iteration instead (same fresh per-iteration
//! state: seed, starting subdirectory, round-robin counters) and hand results back in memory,
//! in slot order, so aggregation sees exactly what fs_mark's parent reads.
//!
//! Before anything is printed, the driver creates each `-d` directory (EEXIST is fine), checks
//! it is a directory it can create files in, and runs the free-space check for the first
//! iteration: a bad directory or a full filesystem is one error line, never a header without a
//! table. fs_mark's `check_space` runs per worker before each iteration (`f_bavail * f_bsize`
//! must cover `-s * -n`). Outside fill mode a failed check is an error, as in fs_mark; in fill
//! mode (`-F`) it ends the run cleanly with the summary, where fs_mark exits with an error.
//! The check happens in the driver, before any worker of the iteration starts, so no iteration
//! is ever half run.
//!
//! The engine reports through a [`Reporter`]: the run header once, then each iteration's row.
//! Writing those is the report layer's job; a reporter error (a closed stdout) stops the run.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use super::config::Config;
use super::error::FsmarkError;
use super::metrics::{LatencySet, LoopStats, Summary};
use super::progress::Progress;
use super::worker::{WorkerEnv, WorkerError, WorkerOutput, run_worker};
use crate::backend::{Errno, FsStat, OpenFlags, Target};
use crate::workload::{Clock, WallTime};

/// What the engine runs on.
#[derive(Clone, Copy)]
pub struct RunEnv<'a> {
    /// The filesystem surface.
    pub target: &'a dyn Target,
    /// Timing and dates.
    pub clock: &'a dyn Clock,
    /// When set (e.g. by a SIGINT handler), every worker stops after the file in hand and
    /// cleans up; the iteration's row (what was done) is the run's last.
    pub interrupt: Option<&'a AtomicBool>,
}

/// Handed to the reporter once the preflight passed, before the first iteration.
#[derive(Debug, Clone, Copy)]
pub struct RunStart<'a> {
    /// The run.
    pub config: &'a Config,
    /// Wall-clock start time (the header's date).
    pub wall: WallTime,
}

/// Handed to the reporter as an iteration starts.
#[derive(Debug, Clone)]
pub struct LoopStart {
    /// 1-based iteration number.
    pub index: u32,
    /// Live counters, for a progress display.
    pub progress: Arc<Progress>,
}

/// One finished iteration: everything its table row and JSON entry need.
#[derive(Debug, Clone)]
pub struct LoopReport {
    /// 1-based iteration number.
    pub index: u32,
    /// FSUse% of the first directory's filesystem after the iteration.
    pub fs_use_pct: u32,
    /// Files created so far in the run (the Count column).
    pub count: u64,
    /// The aggregated figures.
    pub stats: LoopStats,
    /// Per-syscall latency of this iteration (when the config asks for it).
    pub latency: Option<LatencySet>,
}

/// Receives the run's progress as it happens; implemented by the report layer (fs_mark's
/// text, the JSON document, the statistics after each loop).
pub trait Reporter {
    /// The preflight passed and the first iteration is about to start.
    fn run_started(&mut self, start: &RunStart<'_>) -> std::io::Result<()>;
    /// An iteration's workers are about to start.
    fn loop_started(&mut self, _start: &LoopStart) -> std::io::Result<()> {
        Ok(())
    }
    /// An iteration finished.
    fn loop_finished(&mut self, report: &LoopReport) -> std::io::Result<()>;
}

/// A reporter that prints nothing: for callers that want the run's outcome, not its table
/// (benchmarks, the crash harness, the fidelity runs).
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

impl Reporter for Silent {
    fn run_started(&mut self, _start: &RunStart<'_>) -> std::io::Result<()> {
        Ok(())
    }

    fn loop_finished(&mut self, _report: &LoopReport) -> std::io::Result<()> {
        Ok(())
    }
}

/// Why the run stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunEnd {
    /// All iterations ran.
    Completed,
    /// Fill mode: the free-space check failed for `dir` (fs_mark's message names it).
    FilesystemFull {
        /// The worker directory that lacked space.
        dir: String,
        /// Files one worker would have created.
        files: u32,
    },
    /// The interrupt flag was raised.
    Interrupted,
}

/// A finished run.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// Each iteration's truncated Files/sec, in run order.
    pub rates: Vec<u64>,
    /// The summary lines' figures.
    pub summary: Summary,
    /// Why it stopped.
    pub end: RunEnd,
    /// All iterations' latency merged (when the config asks for it).
    pub latency: Option<LatencySet>,
}

/// fs_mark's FSUse%: `(int)(100 * (float)(blocks - bavail) / blocks)`; reserved blocks count
/// as used, unlike df.
pub fn fs_use_pct(st: &FsStat) -> u32 {
    if st.blocks == 0 {
        return 0;
    }
    let used = st.blocks.saturating_sub(st.bavail) as f32;
    (100.0f32 * (used / st.blocks as f32)) as u32
}

fn statfs(target: &dyn Target, dir: &Path) -> Result<FsStat, FsmarkError> {
    target
        .statfs(dir)
        .map_err(|e| FsmarkError::call("statfs", dir, e))
}

/// fs_mark's `check_space` for every worker, in slot order.
fn check_space(target: &dyn Target, config: &Config) -> Result<(), FsmarkError> {
    let needed = config.file_size.saturating_mul(u64::from(config.num_files));
    for slot in 0..config.threads as usize {
        let dir = config.worker_dir(slot);
        let st = statfs(target, dir)?;
        if st.bavail.saturating_mul(st.bsize) < needed {
            return Err(FsmarkError::InsufficientSpace {
                dir: dir.display().to_string(),
                files: config.num_files,
            });
        }
    }
    Ok(())
}

/// Create each `-d` directory and prove we can create files in it.
fn preflight(target: &dyn Target, config: &Config) -> Result<(), FsmarkError> {
    let probe_name = format!(".fsmark-probe.{}", std::process::id());
    for (i, dir) in config.dirs.iter().enumerate() {
        if config.dirs[..i].contains(dir) {
            continue;
        }
        match target.mkdir(dir, 0o777) {
            Ok(()) => {}
            Err(e) if e.errno == Errno::EEXIST => {}
            Err(e) => return Err(FsmarkError::call("mkdir", dir, e)),
        }
        let st = target
            .stat(dir)
            .map_err(|e| FsmarkError::call("stat", dir, e))?;
        if st.kind != crate::backend::FileKind::Dir {
            return Err(FsmarkError::NotADirectory(dir.display().to_string()));
        }
        let probe = dir.join(&probe_name);
        let flags = OpenFlags {
            exclusive: true,
            truncate: false,
            ..OpenFlags::create_truncate()
        };
        let fd = target
            .open(&probe, flags, 0o600)
            .map_err(|source| FsmarkError::Unwritable {
                dir: dir.display().to_string(),
                source,
            })?;
        target
            .close(fd)
            .map_err(|e| FsmarkError::call("close", &probe, e))?;
        target
            .unlink(&probe)
            .map_err(|e| FsmarkError::call("unlink", &probe, e))?;
    }
    Ok(())
}

/// Run every worker of one iteration; results in slot order.
fn run_iteration(
    env: &RunEnv<'_>,
    config: &Config,
    zeroes: &[u8],
    progress: &Progress,
) -> Result<Vec<WorkerOutput>, FsmarkError> {
    let abort = AtomicBool::new(false);
    let wenv = WorkerEnv {
        target: env.target,
        clock: env.clock,
        config,
        zeroes,
        abort: &abort,
        interrupt: env.interrupt,
    };
    let mut spawn_error = None;
    let results: Vec<Result<WorkerOutput, WorkerError>> = thread::scope(|s| {
        let mut handles = Vec::with_capacity(config.threads as usize);
        for slot in 0..config.threads as usize {
            let (wenv, abort) = (&wenv, &abort);
            let counter = progress.slot(slot);
            let spawned = thread::Builder::new()
                .name(format!("fsmark-{slot}"))
                .spawn_scoped(s, move || {
                    let r = run_worker(wenv, slot, config.worker_dir(slot), counter);
                    if r.is_err() {
                        abort.store(true, Ordering::Relaxed);
                    }
                    r
                });
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    abort.store(true, Ordering::Relaxed);
                    spawn_error = Some(e);
                    break;
                }
            }
        }
        handles
            .into_iter()
            .enumerate()
            .map(|(slot, h)| {
                h.join()
                    .unwrap_or(Err(WorkerError::Failed(FsmarkError::WorkerPanicked(slot))))
            })
            .collect()
    });
    let mut outputs = Vec::with_capacity(results.len());
    let mut first_error = None;
    for r in results {
        match r {
            Ok(o) => outputs.push(o),
            Err(WorkerError::Failed(e)) => {
                first_error.get_or_insert(e);
            }
            Err(WorkerError::Aborted) => {}
        }
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    if let Some(e) = spawn_error {
        return Err(FsmarkError::Spawn(e));
    }
    Ok(outputs)
}

/// Run fs_mark: preflight, iterations, and the summary figures.
pub fn run(
    env: &RunEnv<'_>,
    config: &Config,
    reporter: &mut dyn Reporter,
) -> Result<RunOutcome, FsmarkError> {
    config.check()?;
    preflight(env.target, config)?;
    check_space(env.target, config)?;
    reporter
        .run_started(&RunStart {
            config,
            wall: env.clock.wall(),
        })
        .map_err(FsmarkError::Output)?;

    let zeroes = vec![0u8; config.io_size.min(config.file_size) as usize];
    let mut rates = Vec::new();
    let mut count = 0u64;
    let mut total_latency = config.latency.then(LatencySet::new);
    let mut index = 0u32;
    let end = loop {
        index += 1;
        let progress = Arc::new(Progress::new(config.threads as usize, config));
        reporter
            .loop_started(&LoopStart {
                index,
                progress: Arc::clone(&progress),
            })
            .map_err(FsmarkError::Output)?;
        let outputs = run_iteration(env, config, &zeroes, &progress)?;

        let threads: Vec<_> = outputs.iter().map(|o| o.timings.stats()).collect();
        let stats = LoopStats::aggregate(&threads);
        let latency = config.latency.then(|| {
            let mut merged = LatencySet::new();
            for l in outputs.iter().filter_map(|o| o.latency.as_ref()) {
                merged.merge(l);
            }
            merged
        });
        if let (Some(total), Some(l)) = (&mut total_latency, &latency) {
            total.merge(l);
        }
        count += stats.files;
        rates.push(stats.rate_truncated());
        let fs_use = fs_use_pct(&statfs(env.target, &config.dirs[0])?);
        reporter
            .loop_finished(&LoopReport {
                index,
                fs_use_pct: fs_use,
                count,
                stats,
                latency,
            })
            .map_err(FsmarkError::Output)?;

        if env.interrupt.is_some_and(|f| f.load(Ordering::Relaxed)) {
            break RunEnd::Interrupted;
        }
        if !config.fill && index >= config.iterations() {
            break RunEnd::Completed;
        }
        match check_space(env.target, config) {
            Ok(()) => {}
            Err(FsmarkError::InsufficientSpace { dir, files }) if config.fill => {
                break RunEnd::FilesystemFull { dir, files };
            }
            Err(e) => return Err(e),
        }
    };
    let summary = Summary::from_rates(&rates)
        .unwrap_or_else(|| unreachable!("the loop runs at least one iteration"));
    Ok(RunOutcome {
        rates,
        summary,
        end,
        latency: total_latency,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fs_use_counts_reserved_blocks_as_used_and_truncates() {
        let st = FsStat {
            bsize: 4096,
            blocks: 1000,
            bfree: 400,
            bavail: 319,
            files: 0,
            ffree: 0,
            namelen: 255,
        };
        assert_eq!(fs_use_pct(&st), 68, "681/1000 -> 68");
        assert_eq!(fs_use_pct(&FsStat { blocks: 0, ..st }), 0);
    }
}
