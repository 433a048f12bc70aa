//! Running a workload on a fresh labfs with the `crc32c` tracepoint aggregated.
//!
//! [`measure`] makes labfs on the device, mounts it with the checksum mode asked for, lets the
//! workload set up and quiesces labfs (both unmeasured), clears the statistics (as
//! `stats_clear` would), starts a trace session keeping [`super::calls::hist_specs`], runs the
//! measured phase, then reads the histograms and the stat block before unmounting.
//!
//! The measured phase is the workload followed by its write-home: with the journal, metadata
//! reaches its home blocks only when the AIL pushes it, so a short run would otherwise count
//! the log records and the inodes logged at fsync but few of the directory and btree blocks
//! the same work dirtied (they would be written at unmount, outside the session).
//! [`Fs::quiesce`](crate::fs::Fs::quiesce) at the end (force the log, push the AIL until it
//! is empty, write an unmount record) checksums every structure the workload changed where it
//! lives, as a long run's xfsaild would; the quiesce after setup keeps the setup's own
//! write-home out. Nothing but the workload and its write-home runs between the start and
//! the end of the session, so every checksum counted is one the workload caused.
//!
//! Two runs of the same [`Workload`] do the same operations: fs_mark's names come from the
//! wall clock, which [`PinnedClock`] holds still, and the oltp mix draws from a fixed seed. So
//! a `single` run and a `split` run checksum the same structures, and their difference is the
//! update method alone.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;
use std::time::{Duration, Instant};

use thiserror::Error;

use super::calls::{CallProfile, ProfileError, hist_specs};
use super::oltp::{self, OltpConfig, OltpError};
use crate::backend::open::{BackendConfig, LabConfig, OpenError, OpenedBackend, open};
use crate::backend::{Target, TargetError, mkdir_all};
use crate::fs::cksum::{CksumMode, CrcEngine};
use crate::fs::stats::StatFile;
use crate::trace::{TraceConfig, TraceError};
use crate::workload::fio::engine::{
    self as fio_engine, EngineEnv, EngineError, RunEvents, RunView,
};
use crate::workload::fio::jobset::JobSet;
use crate::workload::fsmark::{self, FsmarkError};
use crate::workload::{Clock, SystemClock, WallTime};

/// The built-in workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// Small files with fsync, kept: fs_mark `-S 1 -s 4096 -k`, one thread.
    FsmarkS1,
    /// A database-like mix: 16 KiB random writes with frequent fsync in a few large files,
    /// plus temporary files created and removed ([`OltpConfig::default`]).
    Oltp,
}

impl Profile {
    /// Every profile.
    pub const ALL: [Profile; 2] = [Profile::FsmarkS1, Profile::Oltp];

    /// Files per fsmark-s1 run unless `--ops` says otherwise.
    pub const FSMARK_S1_FILES: u32 = 1000;

    /// The profile's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Profile::FsmarkS1 => "fsmark-s1",
            Profile::Oltp => "oltp",
        }
    }

    /// The profile named `name`.
    pub fn from_name(name: &str) -> Option<Profile> {
        Profile::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The workload, with `ops` (files for fsmark-s1, random writes for oltp) if given.
    pub fn workload(self, ops: Option<u64>) -> Result<Workload, OpsError> {
        match self {
            Profile::FsmarkS1 => {
                let files = match ops {
                    None => Profile::FSMARK_S1_FILES,
                    Some(n) => u32::try_from(n)
                        .ok()
                        .filter(|&n| (1..=fsmark::config::MAX_FILES).contains(&n))
                        .ok_or(OpsError::Files(n))?,
                };
                let dir = PathBuf::from("/csumhist");
                let mut config = fsmark::Config::new(&dir);
                config.num_files = files;
                config.file_size = 4096;
                config.io_size = 4096;
                config.sync = fsmark::SyncMethod::FsyncBeforeClose;
                // Kept (-k): the directory the files fill is still there when the measured
                // phase ends by writing metadata home, as the kernel's periodic log work
                // (xfs_log_worker pushes the whole AIL) does in a long run. A removing run
                // frees the directory's blocks before anything writes them home, and the
                // seed's directory-block checksums would never appear.
                config.keep_files = true;
                let command = format!("fsmark -d {} -n {files} -s 4096 -S 1 -k", dir.display());
                Ok(Workload::Fsmark { config, command })
            }
            Profile::Oltp => {
                let mut config = OltpConfig::default();
                if let Some(n) = ops {
                    if n == 0 {
                        return Err(OpsError::Writes);
                    }
                    config.writes = n;
                }
                Ok(Workload::Oltp(config))
            }
        }
    }
}

/// An `--ops` value a profile cannot use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum OpsError {
    /// fsmark-s1 takes 1..=1,000,000 files.
    #[error("--ops {0}: fsmark-s1 creates 1 to {max} files", max = fsmark::config::MAX_FILES)]
    Files(u64),
    /// oltp needs at least one write.
    #[error("--ops 0: oltp needs at least one write")]
    Writes,
}

/// A workload csumhist can measure.
#[derive(Debug, Clone, PartialEq)]
pub enum Workload {
    /// An fs_mark run: the `fsmark-s1` profile or any fsmark command line.
    Fsmark {
        /// The validated run.
        config: fsmark::Config,
        /// The command line it came from, for headers.
        command: String,
    },
    /// The oltp mix.
    Oltp(OltpConfig),
    /// A fiolike run: the jobs of a fio command line and its job files.
    Fio {
        /// The jobs, built as fiolike builds them.
        jobs: JobSet,
        /// The command line they came from, for headers.
        command: String,
    },
}

/// How a measured workload went.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadRun {
    /// Wall time of the measured phase (the workload and its write-home).
    pub elapsed: Duration,
    /// What it did, in one line (`1000 files created, fsync'd and removed`).
    pub summary: String,
    /// Whether an interrupt cut it short.
    pub interrupted: bool,
}

/// A clock whose wall time stands still: fs_mark draws its file names from the wall clock,
/// and two runs that must create the same names (one per checksum mode) need the same time.
/// Durations still come from the monotonic clock.
#[derive(Debug, Clone, Copy)]
pub struct PinnedClock {
    wall: WallTime,
}

impl PinnedClock {
    /// A clock whose wall time is `wall` forever.
    pub fn at(wall: WallTime) -> PinnedClock {
        PinnedClock { wall }
    }
}

impl Clock for PinnedClock {
    fn now_us(&self) -> u64 {
        SystemClock.now_us()
    }

    fn wall(&self) -> WallTime {
        self.wall
    }
}

/// The fixed wall time csumhist's fs_mark runs see: 2016-10-28 05:02:18 UTC, the minute the
/// thread's histogram was posted.
pub const PINNED_WALL: WallTime = WallTime {
    secs: 1_477_630_938,
    micros: 0,
};

/// How far a measured workload has got, for a progress bar: files (fsmark), writes (oltp) or
/// bytes moved (fio).
///
/// fs_mark's workers count their files in the iteration's own counters; the iteration in
/// progress is kept here so [`LiveProgress::done`] can read them while it runs.
#[derive(Debug, Default)]
pub struct LiveProgress {
    /// Units finished outside a running fs_mark iteration (oltp writes, fio bytes; past
    /// iterations).
    done: AtomicU64,
    /// The running fs_mark iteration's counters.
    iteration: Mutex<Option<Arc<fsmark::Progress>>>,
}

impl LiveProgress {
    /// Units done so far.
    pub fn done(&self) -> u64 {
        let running = self.iteration.lock().as_ref().map_or(0, |p| p.files_done());
        self.done.load(Ordering::Relaxed) + running
    }
}

/// An fs_mark reporter that prints nothing (csumhist reports checksums, not files/sec) and
/// keeps the live progress.
struct Quiet<'a> {
    progress: &'a LiveProgress,
}

impl fsmark::Reporter for Quiet<'_> {
    fn run_started(&mut self, _: &fsmark::RunStart<'_>) -> std::io::Result<()> {
        Ok(())
    }
    fn loop_started(&mut self, start: &fsmark::LoopStart) -> std::io::Result<()> {
        *self.progress.iteration.lock() = Some(Arc::clone(&start.progress));
        Ok(())
    }
    fn loop_finished(&mut self, _: &fsmark::LoopReport) -> std::io::Result<()> {
        if let Some(p) = self.progress.iteration.lock().take() {
            self.progress
                .done
                .fetch_add(p.files_done(), Ordering::Relaxed);
        }
        Ok(())
    }
}

/// fio's run events for a measured run: nothing printed, bytes counted for the progress bar,
/// the first clone that could not be set up kept for the error.
struct QuietFio<'a> {
    progress: &'a LiveProgress,
    setup_failed: Option<(String, String)>,
}

impl RunEvents for QuietFio<'_> {
    fn layout(&mut self, _: &str, _: u32, _: u64) {}
    fn setup_failed(&mut self, job: &str, error: &str) {
        if self.setup_failed.is_none() {
            self.setup_failed = Some((job.to_string(), error.to_string()));
        }
    }
    fn tick(&mut self, view: &RunView<'_>) {
        let bytes: u64 = view.bytes_done().iter().sum();
        self.progress.done.store(bytes, Ordering::Relaxed);
    }
}

impl Workload {
    /// One line saying what runs.
    pub fn describe(&self) -> String {
        match self {
            Workload::Fsmark { command, .. } | Workload::Fio { command, .. } => command.clone(),
            Workload::Oltp(c) => format!("oltp: {}", c.describe()),
        }
    }

    /// Unmeasured setup: the `-d` directories (and their parents) on the fresh labfs, or
    /// oltp's data files. fio jobs lay out their own files (and make their `directory=`s)
    /// when they start, as fio does, so that part of a fio run is measured.
    pub fn prepare(&self, target: &dyn Target) -> Result<(), CsumError> {
        match self {
            Workload::Fsmark { config, .. } => {
                for dir in &config.dirs {
                    let setup = |source| CsumError::Setup {
                        path: dir.clone(),
                        source,
                    };
                    mkdir_all(target, dir).map_err(setup)?;
                }
                Ok(())
            }
            Workload::Oltp(c) => Ok(oltp::prepare(target, c)?),
            Workload::Fio { .. } => Ok(()),
        }
    }

    /// The measured phase; `progress` follows the files (fsmark), writes (oltp) or I/Os (fio)
    /// done. fio's engine runs its clones on threads of their own, hence the shared target.
    pub fn run(
        &self,
        shared: &Arc<dyn Target>,
        interrupt: Option<&AtomicBool>,
        progress: &LiveProgress,
    ) -> Result<WorkloadRun, CsumError> {
        let started = Instant::now();
        let target: &dyn Target = shared.as_ref();
        match self {
            Workload::Fsmark { config, .. } => {
                let clock = PinnedClock::at(PINNED_WALL);
                let env = fsmark::RunEnv {
                    target,
                    clock: &clock,
                    interrupt,
                };
                let outcome = fsmark::run(&env, config, &mut Quiet { progress })?;
                let files = u64::from(config.num_files)
                    * u64::from(config.threads)
                    * outcome.rates.len() as u64;
                let fate = if config.keep_files { "kept" } else { "removed" };
                let sync = if config.sync == fsmark::SyncMethod::NoSync {
                    String::new()
                } else {
                    format!(" (-S {})", config.sync.number())
                };
                Ok(WorkloadRun {
                    elapsed: started.elapsed(),
                    summary: format!(
                        "{files} files of {} bytes created{sync}, {fate}",
                        config.file_size
                    ),
                    interrupted: outcome.end == fsmark::RunEnd::Interrupted,
                })
            }
            Workload::Oltp(c) => {
                let out = oltp::run(target, c, interrupt, &progress.done)?;
                Ok(WorkloadRun {
                    elapsed: started.elapsed(),
                    summary: format!(
                        "{} writes, {} fsyncs, {} temporary files created and removed",
                        out.writes, out.fsyncs, out.creates
                    ),
                    interrupted: out.interrupted,
                })
            }
            Workload::Fio { jobs, .. } => {
                let never = AtomicBool::new(false);
                let env = EngineEnv {
                    target: Arc::clone(shared),
                    base_dir: PathBuf::from("/"),
                    verify_directories: false,
                    disk_stats: false,
                    stop: interrupt.unwrap_or(&never),
                };
                let mut events = QuietFio {
                    progress,
                    setup_failed: None,
                };
                let outcome = fio_engine::run(&env, jobs, &mut events)?;
                if let Some((job, error)) = events.setup_failed {
                    return Err(CsumError::FioSetup { job, error });
                }
                if let Some(c) = outcome.clones.iter().find(|c| c.stats.error != 0) {
                    return Err(CsumError::FioJob {
                        job: c.stats.name.clone(),
                        error: c.stats.verror.clone(),
                    });
                }
                let [read, write, trim] = outcome.clones.iter().fold([0u64; 3], |mut acc, c| {
                    for (a, d) in acc.iter_mut().zip(&c.stats.dir) {
                        *a += d.total_ios;
                    }
                    acc
                });
                let bytes: u64 = outcome
                    .clones
                    .iter()
                    .flat_map(|c| &c.stats.dir)
                    .map(|d| d.io_bytes)
                    .sum();
                progress.done.store(bytes, Ordering::Relaxed);
                Ok(WorkloadRun {
                    elapsed: outcome.elapsed,
                    summary: format!(
                        "{} fio job clones: {read} reads, {write} writes, {trim} trims",
                        outcome.clones.len()
                    ),
                    interrupted: outcome.interrupted,
                })
            }
        }
    }
}

/// One measured run.
#[derive(Debug, Clone)]
pub struct Measured {
    /// The checksum update mode of this run.
    pub mode: CksumMode,
    /// The CRC engine.
    pub engine: CrcEngine,
    /// The backend line (`labfs on mem:1g (...)`).
    pub backend: String,
    /// How the workload went.
    pub workload: WorkloadRun,
    /// Every checksum helper call of the measured phase.
    pub calls: CallProfile,
    /// XFS statistics of the measured phase (cleared at its start).
    pub stats: StatFile,
}

/// A measurement that failed.
#[derive(Debug, Error)]
pub enum CsumError {
    /// The device could not be opened, or labfs not made and mounted on it.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// A workload directory could not be made.
    #[error("cannot create the parents of {} on labfs: {source}", path.display())]
    Setup {
        /// The directory.
        path: PathBuf,
        /// What labfs said.
        source: TargetError,
    },
    /// The fs_mark workload failed.
    #[error("fsmark: {0}")]
    Fsmark(#[from] FsmarkError),
    /// The oltp workload failed.
    #[error(transparent)]
    Oltp(#[from] OltpError),
    /// The fio jobs could not start.
    #[error(transparent)]
    Fio(#[from] EngineError),
    /// A fio job clone could not be set up (its files laid out).
    #[error("fio job {job}: {error}")]
    FioSetup {
        /// The job.
        job: String,
        /// fio's message for it.
        error: String,
    },
    /// A fio job clone stopped on an I/O error.
    #[error("fio job {job}: {error}")]
    FioJob {
        /// The job.
        job: String,
        /// fio's message for it (`verror`).
        error: String,
    },
    /// The trace session could not start or finish.
    #[error("trace: {0}")]
    Trace(#[from] TraceError),
    /// The session did not hold the histograms.
    #[error(transparent)]
    Profile(#[from] ProfileError),
    /// Quiescing labfs (forcing the log, writing its metadata home) failed.
    #[error("writing labfs's metadata home {when}: {source}")]
    Quiesce {
        /// `after setup` or `after the workload`.
        when: &'static str,
        /// What labfs said.
        source: TargetError,
    },
    /// Unmounting (writing everything back) failed.
    #[error("unmounting labfs: {0}")]
    Unmount(#[source] TargetError),
}

/// Run `workload` with checksum mode `mode` on a labfs made fresh on `lab`'s device (with
/// its `-o` options; the cksum option is `mode` whatever `lab` says), tracing every checksum.
pub fn measure(
    lab: &LabConfig,
    mode: CksumMode,
    workload: &Workload,
    interrupt: Option<&AtomicBool>,
    progress: &LiveProgress,
) -> Result<Measured, CsumError> {
    let mut lab = lab.clone();
    lab.options.mount.cksum = mode;
    lab.mkfs = true;
    let engine = lab.options.mount.crc;
    let opened = open(&BackendConfig::Lab(lab))?;
    let measured = measure_on(&opened, workload, interrupt, progress);
    // Unmount whatever happened; a run failure is the one worth reporting first.
    let unmounted = opened.finish().map_err(CsumError::Unmount);
    let (backend, run, calls, stats) = measured?;
    unmounted?;
    Ok(Measured {
        mode,
        engine,
        backend,
        workload: run,
        calls,
        stats,
    })
}

/// The measured part of [`measure`], on an opened labfs.
fn measure_on(
    opened: &OpenedBackend,
    workload: &Workload,
    interrupt: Option<&AtomicBool>,
    progress: &LiveProgress,
) -> Result<(String, WorkloadRun, CallProfile, StatFile), CsumError> {
    let OpenedBackend::Lab(lab) = opened else {
        unreachable!("measure opens labfs only");
    };
    let shared: Arc<dyn Target> = Arc::clone(lab) as Arc<dyn Target>;
    let target: &dyn Target = lab.as_ref();
    // The inodegc worker inactivates unlinked inodes whenever it gets the CPU, so which
    // checkpoint their frees land in, and so the log records checksummed, would vary from run
    // to run. Held, the queue runs at the same points in both runs (the throttle, quiesce).
    lab.fs().inodegc.hold_worker(true);
    workload.prepare(target)?;
    let quiesce = |when| {
        lab.fs().quiesce().map_err(|e| CsumError::Quiesce {
            when,
            source: e.into(),
        })
    };
    quiesce("after setup")?;
    let stats = &lab.fs().stats;
    stats.mount().clear();
    let session = TraceConfig {
        histograms: hist_specs(),
        ..TraceConfig::default()
    }
    .start()?;
    // The write-home is part of the measured phase, its time too.
    let run = workload
        .run(&shared, interrupt, progress)
        .and_then(|mut run| {
            let started = Instant::now();
            quiesce("after the workload")?;
            run.elapsed += started.elapsed();
            Ok(run)
        });
    let summary = session.finish()?;
    let run = run?;
    let snapshot = StatFile::from(&stats.mount().snapshot());
    Ok((
        opened.describe(),
        run,
        CallProfile::from_summary(&summary)?,
        snapshot,
    ))
}
