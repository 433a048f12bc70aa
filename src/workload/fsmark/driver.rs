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
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;

use super::config::Config;
use super::error::FsmarkError;
use super::metrics::{LatencySet, LoopStats, Summary};
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

/// The part of an iteration a worker is in, in the order it goes through them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Phase {
    /// The write loop: create, write, (fsync,) close each file.
    Creating = 0,
    /// The post-loop sync phases (`-S 2..7`): sync(), syncfs(), reopen-and-fsync passes.
    Syncing = 1,
    /// The unlink pass.
    Unlinking = 2,
    /// Finished.
    Done = 3,
}

impl Phase {
    /// The phase in a word, for a progress display.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Creating => "creating",
            Phase::Syncing => "syncing",
            Phase::Unlinking => "unlinking",
            Phase::Done => "done",
        }
    }

    fn from_u8(v: u8) -> Phase {
        match v {
            0 => Phase::Creating,
            1 => Phase::Syncing,
            2 => Phase::Unlinking,
            _ => Phase::Done,
        }
    }
}

/// How far the running iteration is: each worker's phase and the steps it has done in it.
#[derive(Debug)]
pub struct Progress {
    slots: Vec<WorkerProgress>,
    /// Steps one worker takes in each phase (indexed by `Phase as usize`, `Done` excluded).
    steps: [u64; 3],
}

/// One worker's phase and step count, on its own cache line so workers never contend.
///
/// Both live in one word (the phase in the top byte, the count below it), so moving to the
/// next phase and zeroing the count is one store: a reader never sees the new phase's count
/// under the old phase's name, which made the bar's count jump back for a poll.
#[derive(Debug, Default)]
#[repr(align(64))]
pub(crate) struct WorkerProgress {
    word: AtomicU64,
}

/// Where the phase sits in a [`WorkerProgress`] word.
const PHASE_SHIFT: u32 = 56;

impl WorkerProgress {
    /// The worker moves on to `phase`, with no step of it done yet.
    pub(crate) fn enter(&self, phase: Phase) {
        self.word
            .store(u64::from(phase as u8) << PHASE_SHIFT, Ordering::Release);
    }

    /// The worker did one more step (a file) of its phase. A phase has at most a few million
    /// steps (`-n` is at most 1,000,000 and a phase passes over each file at most twice), far
    /// below the 2^56 that would carry into the phase byte.
    pub(crate) fn step(&self) {
        self.word.fetch_add(1, Ordering::Release);
    }

    /// The worker's phase and its steps done in it, read together.
    fn read(&self) -> (Phase, u64) {
        let w = self.word.load(Ordering::Acquire);
        let phase = u8::try_from(w >> PHASE_SHIFT).map_or(Phase::Done, Phase::from_u8);
        (phase, w & ((1 << PHASE_SHIFT) - 1))
    }
}

/// A snapshot of an iteration's progress, as the slowest worker sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhaseProgress {
    /// The earliest phase any worker is still in.
    pub phase: Phase,
    /// Steps done in that phase, all workers (a worker past it counts all of its steps).
    pub done: u64,
    /// Steps the phase has, all workers (0 when it is not counted in steps, e.g. a sync()).
    pub total: u64,
}

impl Progress {
    fn new(workers: usize, config: &Config) -> Progress {
        let n = u64::from(config.num_files);
        let p = config.sync.phases();
        let reopens =
            n * (u64::from(p.post_in_order) + u64::from(p.post_reverse)) + u64::from(p.first_file);
        Progress {
            slots: (0..workers).map(|_| WorkerProgress::default()).collect(),
            steps: [n, reopens, if config.keep_files { 0 } else { n }],
        }
    }

    /// Where the iteration is.
    pub fn snapshot(&self) -> PhaseProgress {
        let phases: Vec<(Phase, u64)> = self.slots.iter().map(WorkerProgress::read).collect();
        let phase = phases.iter().map(|&(p, _)| p).min().unwrap_or(Phase::Done);
        let per_worker = self.steps.get(phase as usize).copied().unwrap_or(0);
        let done = phases
            .iter()
            .map(|&(p, d)| if p > phase { per_worker } else { d })
            .sum();
        PhaseProgress {
            phase,
            done,
            total: per_worker * self.slots.len() as u64,
        }
    }

    /// Files created so far in the iteration, all workers.
    pub fn files_done(&self) -> u64 {
        let created = self.steps[0];
        self.slots
            .iter()
            .map(|s| match s.read() {
                (Phase::Creating, done) => done,
                _ => created,
            })
            .sum()
    }
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
            let counter = &progress.slots[slot];
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
    fn progress_follows_the_slowest_worker_through_the_phases() {
        let mut c = Config::new("/d");
        c.num_files = 10;
        c.threads = 2;
        c.sync = crate::workload::fsmark::SyncMethod::PostReverse;
        let p = Progress::new(2, &c);
        let snap = |phase, done, total| PhaseProgress { phase, done, total };
        assert_eq!(p.snapshot(), snap(Phase::Creating, 0, 20));
        for _ in 0..4 {
            p.slots[0].step();
        }
        assert_eq!(p.snapshot(), snap(Phase::Creating, 4, 20));
        assert_eq!(p.files_done(), 4);
        // Worker 0 moves on: it counts as all of its creates while worker 1 still creates.
        p.slots[0].enter(Phase::Syncing);
        p.slots[1].step();
        assert_eq!(p.snapshot(), snap(Phase::Creating, 11, 20));
        p.slots[1].enter(Phase::Syncing);
        p.slots[1].step();
        assert_eq!(
            p.snapshot(),
            snap(Phase::Syncing, 1, 20),
            "one reverse pass each"
        );
        assert_eq!(p.files_done(), 20);
        p.slots[0].enter(Phase::Unlinking);
        p.slots[1].enter(Phase::Unlinking);
        p.slots[0].step();
        assert_eq!(p.snapshot(), snap(Phase::Unlinking, 1, 20));
        p.slots[0].enter(Phase::Done);
        p.slots[1].enter(Phase::Done);
        assert_eq!(p.snapshot().phase, Phase::Done);
    }

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
