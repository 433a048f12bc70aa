//! The fio engine: lay out every job's files, then run the jobs, one thread per clone.
//!
//! - [`files`]: names, sizes and the layout of a clone's files.
//! - [`random`]: the random generator and fio's random map.
//! - [`worker`]: one clone's I/O loop with fio's counting rules.
//! - [`disk`]: the host's "Disk stats".
//!
//! Order of events, as in fio (`run_threads` with the default `create_serialize=1`): every
//! clone of every job is laid out first, serially and in job order, printing fio's "Laying
//! out IO file" lines; then the jobs run in batches, a new batch starting at each job that
//! waits for the previous ones (`stonewall`, and the first job of each further job file).
//! All clones of a batch run at once, each on its own thread, and the calling thread watches
//! them ([`RunEvents::tick`] every 100 ms: the ETA line and `--status-interval` reports).
//! A clone that fails keeps its error in its figures and the others go on; Ctrl-C stops every
//! clone at its next I/O and the figures so far are reported.

pub mod disk;
pub mod files;
pub mod random;
pub mod worker;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use thiserror::Error;

use super::jobset::{Job, JobSet};
use super::stats::{CloneStats, DiskUtil, JobLog, ThreadStats};
use crate::backend::{Errno, Target};
use disk::DiskWatch;
use files::{SetupError, file_paths, lay_out, plan};
use random::Rng;
use worker::{CloneProgress, CloneSetup, Worker};

/// Where and how a run happens.
pub struct EngineEnv<'a> {
    /// The target every job runs on.
    pub target: Arc<dyn Target>,
    /// Where relative file names resolve (the current directory on the host, `/` on labfs).
    pub base_dir: PathBuf,
    /// Check that every `directory=` exists (fio's rule on the host); when false, missing
    /// directories are created (labfs starts empty).
    pub verify_directories: bool,
    /// Measure the host's block devices for "Disk stats".
    pub disk_stats: bool,
    /// Raised by Ctrl-C: every clone stops at its next I/O (seen within 100 ms).
    pub stop: &'a AtomicBool,
}

/// A run that could not start.
#[derive(Debug, Error)]
pub enum EngineError {
    /// A `directory=` that is not a directory (fio: `<dir> is not a directory`).
    #[error("fio: {} is not a directory", .0.display())]
    NotADirectory(PathBuf),
}

/// What the watcher of a run sees (the ETA line, `--status-interval`).
pub struct RunView<'a> {
    clones: &'a [(Arc<CloneProgress>, String, u32)],
    /// Bytes every clone of the run will move at most (0 when time-based or unknown).
    pub planned_bytes: u64,
    /// Longest runtime among the jobs (time-based ETA), if any.
    pub runtime: Option<Duration>,
    /// When the run started.
    pub started: Instant,
    generation: &'a AtomicU64,
}

impl RunView<'_> {
    /// Bytes done so far per direction (read, write, trim).
    pub fn bytes_done(&self) -> [u64; 3] {
        let mut out = [0u64; 3];
        for (p, _, _) in self.clones {
            for (o, b) in out.iter_mut().zip(&p.bytes) {
                *o += b.load(Ordering::Relaxed);
            }
        }
        out
    }

    /// I/Os done so far per direction.
    pub fn ios_done(&self) -> [u64; 3] {
        let mut out = [0u64; 3];
        for (p, _, _) in self.clones {
            for (o, b) in out.iter_mut().zip(&p.ios) {
                *o += b.load(Ordering::Relaxed);
            }
        }
        out
    }

    /// Clones still running.
    pub fn running(&self) -> usize {
        self.clones
            .iter()
            .filter(|(p, _, _)| !p.finished.load(Ordering::Acquire))
            .count()
    }

    /// Ask every running clone for its figures and wait (up to `wait`) for them; clones
    /// that do not answer in time (inside a long call) give their previous snapshot.
    pub fn snapshot(&self, wait: Duration) -> Vec<(String, u32, ThreadStats)> {
        let generation = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        for (p, _, _) in self.clones {
            p.snapshot_wanted.store(generation, Ordering::Relaxed);
        }
        let deadline = Instant::now() + wait;
        loop {
            let all = self.clones.iter().all(|(p, _, _)| {
                p.finished.load(Ordering::Acquire)
                    || p.snapshot
                        .lock()
                        .as_ref()
                        .is_some_and(|(g, _)| *g == generation)
            });
            if all || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        self.clones
            .iter()
            .filter_map(|(p, name, group)| {
                p.snapshot
                    .lock()
                    .as_ref()
                    .map(|(_, s)| (name.clone(), *group, s.clone()))
            })
            .collect()
    }
}

/// What the caller hears during a run.
pub trait RunEvents {
    /// A clone's files are being laid out (fio prints `<job>: Laying out IO file ...`).
    fn layout(&mut self, job: &str, files: u32, bytes: u64);
    /// A clone could not be set up (fio prints the error and the job does no I/O).
    fn setup_failed(&mut self, job: &str, error: &str);
    /// About every 100 ms while clones run.
    fn tick(&mut self, view: &RunView<'_>);
}

/// Everything a run produced.
#[derive(Debug)]
pub struct RunOutcome {
    /// Every clone's figures, in fio's order.
    pub clones: Vec<CloneStats>,
    /// Every clone's logs.
    pub logs: Vec<JobLog>,
    /// Number of reporting groups.
    pub groups: u32,
    /// The host's block devices over the run.
    pub disks: Vec<DiskUtil>,
    /// Whether Ctrl-C stopped the run.
    pub interrupted: bool,
    /// Wall time of the run.
    pub elapsed: Duration,
}

impl RunOutcome {
    /// Whether any clone failed.
    pub fn any_error(&self) -> bool {
        self.clones.iter().any(|c| c.stats.error != 0)
    }
}

struct Prepared {
    job: usize,
    clone: u32,
    setup: Result<files::Setup, SetupError>,
}

fn failed_stats(job: &Job, err: &SetupError) -> ThreadStats {
    let mut s = ThreadStats::new(&job.spec.name, job.groupid);
    s.error = err.errno() as i32;
    s.verror = err.to_string();
    s.job_options = job.spec.given.clone();
    s.kb_base = job.spec.kb_base;
    s.unit_base = job.spec.unit_base;
    s.latency_depth = job.spec.iodepth;
    s.members = 0;
    s
}

/// Run every job of `set` on `env.target`.
pub fn run(
    env: &EngineEnv<'_>,
    set: &JobSet,
    events: &mut dyn RunEvents,
) -> Result<RunOutcome, EngineError> {
    let started = Instant::now();
    // The clones poll their own flag; the watcher copies Ctrl-C into it.
    let interrupt = Arc::new(AtomicBool::new(env.stop.load(Ordering::Relaxed)));
    if env.verify_directories {
        for job in &set.jobs {
            for d in &job.spec.directories {
                let p = files::resolve(&env.base_dir, d);
                if !p.is_dir() {
                    return Err(EngineError::NotADirectory(d.clone()));
                }
            }
        }
    }
    // Layout, serially, every clone of every job.
    let mut prepared: Vec<Prepared> = Vec::new();
    for (ji, job) in set.jobs.iter().enumerate() {
        for clone in 0..job.spec.numjobs {
            let mut rng = Rng::new(job.spec.randseed ^ u64::from(job.first_thread_number + clone));
            let paths = file_paths(&job.spec, clone, &env.base_dir);
            let setup = plan(env.target.as_ref(), &job.spec, paths, &mut rng).and_then(|mut s| {
                if let Some((n, bytes)) = s.laid_out {
                    events.layout(&job.spec.name, n, bytes);
                }
                lay_out(env.target.as_ref(), &job.spec, &mut s, &mut rng)?;
                Ok(s)
            });
            if let Err(e) = &setup {
                events.setup_failed(&job.spec.name, &e.to_string());
            }
            prepared.push(Prepared {
                job: ji,
                clone,
                setup,
            });
        }
    }
    let disk_watch = env.disk_stats.then(|| {
        let paths: Vec<PathBuf> = prepared
            .iter()
            .filter_map(|p| p.setup.as_ref().ok())
            .flat_map(|s| s.files.iter().map(|f| f.path.clone()))
            .collect();
        DiskWatch::start(paths.iter().map(PathBuf::as_path))
    });
    // Batches: a job waiting for the previous ones starts a new batch.
    let mut batches: Vec<Vec<Prepared>> = Vec::new();
    for p in prepared {
        let job = &set.jobs[p.job];
        if batches.is_empty() || (job.waits_for_previous && p.clone == 0) {
            batches.push(Vec::new());
        }
        if let Some(b) = batches.last_mut() {
            b.push(p);
        }
    }
    let mut results: Vec<(usize, u32, CloneStats, Vec<JobLog>)> = Vec::new();
    let generation = AtomicU64::new(0);
    for batch in batches {
        if env.stop.load(Ordering::Relaxed) {
            break;
        }
        let mut handles = Vec::new();
        let mut views: Vec<(Arc<CloneProgress>, String, u32)> = Vec::new();
        let mut planned = 0u64;
        let mut runtime: Option<Duration> = None;
        for p in batch {
            let job = &set.jobs[p.job];
            let spec = Arc::new(job.spec.clone());
            let setup = match p.setup {
                Ok(s) => s,
                Err(e) => {
                    results.push((
                        p.job,
                        p.clone,
                        CloneStats {
                            stats: failed_stats(job, &e),
                            group_reporting: job.spec.group_reporting,
                        },
                        Vec::new(),
                    ));
                    continue;
                }
            };
            if spec.time_based || spec.runtime_us > 0 {
                let r = Duration::from_micros(spec.runtime_us + spec.ramp_time_us);
                runtime = Some(runtime.map_or(r, |x| x.max(r)));
            }
            planned += spec.io_size.unwrap_or(setup.size) * u64::from(spec.loops);
            let progress = Arc::new(CloneProgress::default());
            views.push((Arc::clone(&progress), spec.name.clone(), job.groupid));
            let clone_setup = CloneSetup {
                spec: Arc::clone(&spec),
                groupid: job.groupid,
                clone: p.clone,
                thread_number: job.first_thread_number + p.clone,
                files: setup.files,
                size: setup.size,
                target: Arc::clone(&env.target),
                interrupt: Arc::clone(&interrupt),
                progress: Arc::clone(&progress),
            };
            let (ji, ci, gr) = (p.job, p.clone, job.spec.group_reporting);
            let name = format!("fio-{}.{}", spec.name, p.clone);
            let job_for_err = job.clone();
            let spawned = std::thread::Builder::new().name(name).spawn(move || {
                match Worker::new(clone_setup) {
                    Ok(w) => {
                        let out = w.run();
                        (out.stats, out.logs)
                    }
                    Err((errno, what)) => {
                        progress.finished.store(true, Ordering::Release);
                        let mut s = ThreadStats::new(&job_for_err.spec.name, job_for_err.groupid);
                        s.error = errno as i32;
                        s.verror = what;
                        s.job_options = job_for_err.spec.given.clone();
                        s.latency_depth = job_for_err.spec.iodepth;
                        (s, Vec::new())
                    }
                }
            });
            match spawned {
                Ok(h) => handles.push((ji, ci, gr, h)),
                Err(e) => {
                    let mut s = ThreadStats::new(&job.spec.name, job.groupid);
                    s.error = Errno::EAGAIN as i32;
                    s.verror = format!("cannot start a thread: {e}");
                    results.push((
                        ji,
                        ci,
                        CloneStats {
                            stats: s,
                            group_reporting: gr,
                        },
                        Vec::new(),
                    ));
                }
            }
        }
        let view = RunView {
            clones: &views,
            planned_bytes: planned,
            runtime,
            started: Instant::now(),
            generation: &generation,
        };
        while handles.iter().any(|(_, _, _, h)| !h.is_finished()) {
            std::thread::sleep(Duration::from_millis(100));
            if env.stop.load(Ordering::Relaxed) {
                interrupt.store(true, Ordering::Relaxed);
            }
            events.tick(&view);
        }
        for (ji, ci, gr, h) in handles {
            let (stats, logs) = match h.join() {
                Ok(r) => r,
                Err(_) => {
                    let job = &set.jobs[ji];
                    let mut s = ThreadStats::new(&job.spec.name, job.groupid);
                    s.error = Errno::EIO as i32;
                    s.verror = "the job's thread panicked".to_string();
                    (s, Vec::new())
                }
            };
            results.push((
                ji,
                ci,
                CloneStats {
                    stats,
                    group_reporting: gr,
                },
                logs,
            ));
        }
    }
    results.sort_by_key(|(j, c, _, _)| (*j, *c));
    let mut clones = Vec::with_capacity(results.len());
    let mut logs = Vec::new();
    for (_, _, c, l) in results {
        clones.push(c);
        logs.extend(l);
    }
    Ok(RunOutcome {
        clones,
        logs,
        groups: set.groups(),
        disks: disk_watch.map(|w| w.finish()).unwrap_or_default(),
        interrupted: env.stop.load(Ordering::Relaxed),
        elapsed: started.elapsed(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::RecordingTarget;
    use crate::workload::fio::cmdline;
    use crate::workload::fio::jobfile::{Keywords, VarList};
    use crate::workload::fio::jobset::{FsReader, build};
    use crate::workload::fio::stats::build_reports;

    struct Quiet(Vec<String>);

    impl RunEvents for Quiet {
        fn layout(&mut self, job: &str, files: u32, bytes: u64) {
            self.0.push(format!("{job} {files} {bytes}"));
        }
        fn setup_failed(&mut self, job: &str, error: &str) {
            self.0.push(format!("{job} failed: {error}"));
        }
        fn tick(&mut self, _view: &RunView<'_>) {}
    }

    fn set(args: &[&str]) -> JobSet {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let cl = cmdline::parse(&args).unwrap();
        build(
            &cl,
            &FsReader,
            &VarList(&[]),
            Keywords {
                pagesize: 4096,
                mb_memory: 1024,
                ncpus: 2,
            },
        )
        .unwrap()
    }

    static NO_STOP: AtomicBool = AtomicBool::new(false);

    fn env(t: Arc<dyn Target>) -> EngineEnv<'static> {
        EngineEnv {
            target: t,
            base_dir: PathBuf::from("/"),
            verify_directories: false,
            disk_stats: false,
            stop: &NO_STOP,
        }
    }

    #[test]
    fn clones_run_in_parallel_and_group_reporting_merges_them() {
        let t: Arc<dyn Target> = Arc::new(RecordingTarget::in_memory(1 << 34));
        let s = set(&[
            "--name=w",
            "--rw=write",
            "--bs=4k",
            "--size=256k",
            "--numjobs=4",
            "--group_reporting",
            "--directory=/mnt/x",
            "--fsync=8",
        ]);
        let mut ev = Quiet(Vec::new());
        let out = run(&env(t), &s, &mut ev).unwrap();
        assert_eq!(ev.0.len(), 4, "one layout line per clone: {:?}", ev.0);
        assert_eq!(ev.0[0], "w 1 262144");
        assert_eq!(out.clones.len(), 4);
        let (reports, groups) = build_reports(&out.clones, out.groups);
        assert_eq!(reports.len(), 1);
        assert_eq!(reports[0].members, 4);
        assert_eq!(reports[0].dir[1].io_bytes, 4 * (256 << 10));
        assert_eq!(reports[0].sync_total, 4 * 7);
        assert_eq!(groups[0].io_bytes[1], 1 << 20);
    }

    #[test]
    fn a_failing_job_keeps_its_error_and_the_others_run() {
        let t: Arc<dyn Target> = Arc::new(RecordingTarget::in_memory(1 << 20));
        let s = set(&[
            "--name=big",
            "--rw=read",
            "--size=16m",
            "--directory=/d",
            "--name=small",
            "--rw=write",
            "--size=64k",
            "--directory=/e",
        ]);
        let mut ev = Quiet(Vec::new());
        let out = run(&env(t), &s, &mut ev).unwrap();
        assert!(
            ev.0.iter().any(|l| l.starts_with("big failed")),
            "{:?}",
            ev.0
        );
        assert_eq!(out.clones[0].stats.error, Errno::ENOSPC as i32);
        assert_eq!(out.clones[1].stats.error, 0);
        assert_eq!(out.clones[1].stats.dir[1].io_bytes, 64 << 10);
        assert!(out.any_error());
    }

    #[test]
    fn host_directories_must_exist() {
        let t: Arc<dyn Target> = Arc::new(crate::backend::host::HostTarget::new());
        let s = set(&["--name=x", "--size=4k", "--directory=/nonexistent/fio"]);
        let mut e = env(t);
        e.verify_directories = true;
        let err = run(&e, &s, &mut Quiet(Vec::new())).unwrap_err();
        assert_eq!(err.to_string(), "fio: /nonexistent/fio is not a directory");
    }
}
