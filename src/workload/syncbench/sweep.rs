//! The sweep: sync() time against the number of cached inodes.
//!
//! The cache is filled in steps (sizes spaced evenly on a log scale up to `--max-inodes`).
//! After each step one untimed sync writes everything back, so the cache is clean, as in
//! thread 002's measurement; then each way of syncing is timed `syncs` times, the ways taking
//! turns so that a slow spell of the machine falls on both. On labfs the ways are the two
//! `sync_wait` modes, called on one mount ([`Fs::sync_waiting`]): `all` walks every cached
//! inode under the cache's locks (the kernel before the writeback list), `wblist` looks only
//! at the inodes under writeback. On the host they are `sync(2)` and `syncfs(2)` of the
//! directory's filesystem, with the kernel's inode slab read from `/proc/slabinfo`.
//!
//! Sync calls are timed with [`Instant`] rather than the workloads' microsecond
//! [`crate::workload::Clock`]: a clean `wblist` sync takes microseconds, and the ratio to the
//! walk needs the nanoseconds.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::populate::{Fill, Populate, PopulateError, Tree};
use super::slab::InodeSlab;
use super::{SyncbenchError, rss_bytes};
use crate::backend::{Errno, Target};
use crate::fs::Fs;
use crate::fs::options::SyncWait;

/// One way of syncing that the sweep times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SyncWay {
    /// labfs `sync_wait=wblist`: wait on the writeback list.
    Wblist,
    /// labfs `sync_wait=all`: walk every cached inode.
    All,
    /// The host's `sync(2)`.
    Sync,
    /// The host's `syncfs(2)` of the directory's filesystem.
    Syncfs,
}

impl SyncWay {
    /// Its name in tables and JSON keys.
    pub fn name(self) -> &'static str {
        match self {
            SyncWay::Wblist => "wblist",
            SyncWay::All => "all",
            SyncWay::Sync => "sync",
            SyncWay::Syncfs => "syncfs",
        }
    }
}

/// What the sweep syncs: a labfs mount (both wait modes) or the host (sync and syncfs).
#[derive(Clone)]
pub enum Subject {
    /// A labfs mount.
    Lab(Arc<Fs>),
    /// The host kernel.
    Host,
}

impl std::fmt::Debug for Subject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Subject::Lab(_) => f.write_str("Lab"),
            Subject::Host => f.write_str("Host"),
        }
    }
}

impl Subject {
    /// The ways of syncing compared on this subject; the first is the fast one (the
    /// denominator of the ratio).
    pub fn ways(&self) -> [SyncWay; 2] {
        match self {
            Subject::Lab(_) => [SyncWay::Wblist, SyncWay::All],
            Subject::Host => [SyncWay::Syncfs, SyncWay::Sync],
        }
    }

    fn sync(
        &self,
        target: &dyn Target,
        dir: &std::path::Path,
        way: SyncWay,
    ) -> Result<(), SyncbenchError> {
        let failed = |source| SyncbenchError::Sync {
            way: way.name(),
            source,
        };
        match (self, way) {
            (Subject::Lab(fs), SyncWay::Wblist) => fs
                .sync_waiting(SyncWait::WbList)
                .map_err(|e| failed(e.into())),
            (Subject::Lab(fs), SyncWay::All) => {
                fs.sync_waiting(SyncWait::All).map_err(|e| failed(e.into()))
            }
            (_, SyncWay::Syncfs) => target.syncfs(dir).map_err(failed),
            (_, SyncWay::Sync | SyncWay::Wblist | SyncWay::All) => target.sync().map_err(failed),
        }
    }

    /// Inodes the subject caches now: labfs's cache, or the host's inode slab.
    fn cached(&self, slab: Option<&InodeSlab>) -> Option<u64> {
        match self {
            Subject::Lab(fs) => Some(fs.icache.len() as u64),
            Subject::Host => slab.and_then(InodeSlab::objects),
        }
    }
}

/// A sweep, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepConfig {
    /// The directory the tree is made in.
    pub dir: PathBuf,
    /// Cache sizes to measure at, increasing (see [`step_sizes`]).
    pub steps: Vec<u64>,
    /// Timed sync calls per way per step.
    pub syncs: u32,
    /// Populating threads.
    pub threads: u32,
    /// Create files or stat existing ones.
    pub populate: Populate,
}

/// `steps` cache sizes from `min` to `max`, evenly spaced on a log scale (rounded, distinct,
/// the last exactly `max`).
pub fn step_sizes(min: u64, max: u64, steps: u32) -> Vec<u64> {
    if max == 0 {
        return vec![0];
    }
    let min = min.clamp(1, max);
    if steps <= 1 || min == max {
        return vec![max];
    }
    let ratio = (max as f64 / min as f64).powf(1.0 / f64::from(steps - 1));
    let mut v: Vec<u64> = (0..steps)
        .map(|i| (min as f64 * ratio.powi(i as i32)).round() as u64)
        .map(|n| n.clamp(min, max))
        .collect();
    if let Some(last) = v.last_mut() {
        *last = max;
    }
    v.dedup();
    v
}

/// Min, median and max of some sync times, in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    /// Fastest.
    pub min_s: f64,
    /// Median (the mean of the middle two for an even count).
    pub median_s: f64,
    /// Slowest.
    pub max_s: f64,
}

impl Spread {
    /// The spread of `times` (`None` when empty).
    pub fn of(times: &[Duration]) -> Option<Spread> {
        let mut s: Vec<f64> = times.iter().map(Duration::as_secs_f64).collect();
        s.sort_by(f64::total_cmp);
        let n = s.len();
        let median = match n {
            0 => return None,
            _ if n % 2 == 1 => s[n / 2],
            _ => (s[n / 2 - 1] + s[n / 2]) / 2.0,
        };
        Some(Spread {
            min_s: s[0],
            median_s: median,
            max_s: s[n - 1],
        })
    }
}

/// One way's times at one step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WayTimes {
    /// The way.
    pub way: SyncWay,
    /// Its spread.
    pub spread: Spread,
}

/// One step of the sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepRow {
    /// Files in the tree populated so far.
    pub inodes: u64,
    /// Inodes the filesystem caches (labfs's cache; the host's inode slab when readable).
    pub cached: Option<u64>,
    /// Seconds this step's population took.
    pub populate_s: f64,
    /// The fast way's times, then the slow way's.
    pub ways: [WayTimes; 2],
}

impl SweepRow {
    /// Slow way's median over the fast way's (`None` when the fast one measured 0).
    pub fn ratio(&self) -> Option<f64> {
        let fast = self.ways[0].spread.median_s;
        (fast > 0.0).then(|| self.ways[1].spread.median_s / fast)
    }
}

/// What the sweep measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepReport {
    /// The filesystem, as the backend describes it.
    pub backend: String,
    /// How the cache was filled.
    pub populate: &'static str,
    /// Populating threads.
    pub threads: u32,
    /// Timed syncs per way per step.
    pub syncs: u32,
    /// The inode slab read on the host.
    pub slab: Option<&'static str>,
    /// Seconds spent building the tree before a stat sweep (0 when it existed or for create).
    pub prebuild_s: f64,
    /// Steps done.
    pub rows: Vec<SweepRow>,
    /// Whether Ctrl-C stopped the sweep early.
    pub interrupted: bool,
    /// Growth of this process's resident set over the sweep, in bytes per cached inode (labfs).
    pub rss_bytes_per_inode: Option<f64>,
}

/// What a progress bar shows: the phase and how far it is.
#[derive(Debug, Default)]
pub struct SweepProgress {
    /// Files done in the current population phase.
    pub done: AtomicU64,
    /// Files the current phase is filling up to.
    pub total: AtomicU64,
    /// 0 populating, 1 syncing.
    phase: AtomicU8,
}

impl SweepProgress {
    /// The phase word.
    pub fn phase(&self, populate: Populate) -> &'static str {
        match self.phase.load(Ordering::Relaxed) {
            0 => populate.phase(),
            _ => "syncing",
        }
    }
}

/// Everything a sweep runs with.
pub struct SweepEnv<'a> {
    /// The filesystem calls.
    pub target: &'a dyn Target,
    /// What to sync.
    pub subject: Subject,
    /// One line naming the filesystem.
    pub backend: String,
    /// Progress counters.
    pub progress: &'a SweepProgress,
    /// Raised by Ctrl-C.
    pub interrupt: Option<&'a AtomicBool>,
}

impl SweepEnv<'_> {
    fn stopped(&self) -> bool {
        self.interrupt.is_some_and(|f| f.load(Ordering::Relaxed))
    }
}

/// Run the sweep; `row_done` sees the report after each step (for files rewritten as the
/// sweep goes).
pub fn run(
    env: &SweepEnv<'_>,
    config: &SweepConfig,
    mut row_done: impl FnMut(&SweepReport) -> Result<(), SyncbenchError>,
) -> Result<SweepReport, SyncbenchError> {
    let tree = Tree {
        root: config.dir.clone(),
    };
    match env.target.mkdir(&tree.root, 0o755) {
        Ok(()) => {}
        Err(e) if e.errno == Errno::EEXIST => {}
        Err(source) => {
            return Err(PopulateError::Call {
                op: "mkdir",
                path: tree.root.clone(),
                source,
            }
            .into());
        }
    }
    let slab = match env.subject {
        Subject::Host => InodeSlab::for_dir(&tree.root),
        Subject::Lab(_) => None,
    };
    let mut report = SweepReport {
        backend: env.backend.clone(),
        populate: config.populate.name(),
        threads: config.threads,
        syncs: config.syncs,
        slab: slab.as_ref().map(|s| s.name),
        prebuild_s: 0.0,
        rows: Vec::new(),
        interrupted: false,
        rss_bytes_per_inode: None,
    };
    let max = config.steps.last().copied().unwrap_or(0);
    if config.populate == Populate::Stat {
        report.prebuild_s = prebuild(env, &tree, config, max)?;
    }
    let (rss_before, cached_before) = (rss_bytes(), env.subject.cached(slab.as_ref()));
    let mut have = 0u64;
    for &want in &config.steps {
        if env.stopped() {
            report.interrupted = true;
            break;
        }
        env.progress.phase.store(0, Ordering::Relaxed);
        env.progress.done.store(have, Ordering::Relaxed);
        env.progress.total.store(want, Ordering::Relaxed);
        let fill = Fill {
            target: env.target,
            tree: &tree,
            how: config.populate,
            threads: config.threads,
            done: &env.progress.done,
            interrupt: env.interrupt,
        };
        let t = Instant::now();
        let got = fill.run(have, want)?;
        let populate_s = t.elapsed().as_secs_f64();
        have += got;
        if have < want {
            report.interrupted = true;
            break;
        }
        env.progress.phase.store(1, Ordering::Relaxed);
        // Clean the cache: what the step left dirty is written back, untimed.
        let ways = env.subject.ways();
        env.subject.sync(env.target, &tree.root, ways[0])?;
        let mut times: [Vec<Duration>; 2] = [Vec::new(), Vec::new()];
        for _ in 0..config.syncs {
            for (k, &way) in ways.iter().enumerate() {
                let t = Instant::now();
                env.subject.sync(env.target, &tree.root, way)?;
                times[k].push(t.elapsed());
            }
        }
        let spread = |k: usize| {
            Spread::of(&times[k]).unwrap_or(Spread {
                min_s: 0.0,
                median_s: 0.0,
                max_s: 0.0,
            })
        };
        report.rows.push(SweepRow {
            inodes: have,
            cached: env.subject.cached(slab.as_ref()),
            populate_s,
            ways: [
                WayTimes {
                    way: ways[0],
                    spread: spread(0),
                },
                WayTimes {
                    way: ways[1],
                    spread: spread(1),
                },
            ],
        });
        // A tree built by this process was evicted before the stats, and they refill the
        // cache from the memory its eviction freed: the resident set barely grows then
        // (15 bytes per inode over a 10M sweep), which says nothing about the cache.
        let built_here = report.prebuild_s > 0.0;
        if !built_here
            && let (Subject::Lab(_), Some(before), Some(after), Some(Some(now))) = (
                &env.subject,
                rss_before,
                rss_bytes(),
                report.rows.last().map(|r| r.cached),
            )
        {
            let grown = now.saturating_sub(cached_before.unwrap_or(0));
            if grown > 0 {
                report.rss_bytes_per_inode =
                    Some(after.saturating_sub(before) as f64 / grown as f64);
            }
        }
        row_done(&report)?;
    }
    Ok(report)
}

/// Before a stat sweep: make sure the tree of `files` files exists; on labfs, when it had to
/// be built, write it back and empty the inode cache (the kernel's `drop_caches`), so the
/// stats are what fill it. Returns the seconds spent building.
fn prebuild(
    env: &SweepEnv<'_>,
    tree: &Tree,
    config: &SweepConfig,
    files: u64,
) -> Result<f64, SyncbenchError> {
    if files == 0 {
        return Ok(0.0);
    }
    let last = tree.file(files - 1);
    match env.target.stat(&last) {
        Ok(_) => return Ok(0.0),
        Err(e) if e.errno == Errno::ENOENT => {}
        Err(source) => {
            return Err(PopulateError::Call {
                op: "stat",
                path: last,
                source,
            }
            .into());
        }
    }
    env.progress.phase.store(0, Ordering::Relaxed);
    env.progress.done.store(0, Ordering::Relaxed);
    env.progress.total.store(files, Ordering::Relaxed);
    let t = Instant::now();
    let fill = Fill {
        target: env.target,
        tree,
        how: Populate::Create,
        threads: config.threads,
        done: &env.progress.done,
        interrupt: env.interrupt,
    };
    fill.run(0, files)?;
    if let Subject::Lab(fs) = &env.subject {
        super::degrade::drop_inode_cache(fs)?;
    }
    Ok(t.elapsed().as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_log_spaced_distinct_and_end_at_max() {
        assert_eq!(
            step_sizes(100_000, 10_000_000, 3),
            vec![100_000, 1_000_000, 10_000_000]
        );
        assert_eq!(step_sizes(1, 4, 10), vec![1, 2, 3, 4]);
        assert_eq!(step_sizes(500, 1000, 1), vec![1000]);
        assert_eq!(step_sizes(0, 0, 3), vec![0]);
        let v = step_sizes(1000, 1_000_000, 7);
        assert_eq!(v.len(), 7);
        assert!(v.windows(2).all(|w| w[0] < w[1]), "{v:?}");
        assert_eq!(v.last(), Some(&1_000_000));
    }

    #[test]
    fn spread_takes_min_median_max() {
        let ms = |v: u64| Duration::from_millis(v);
        let s = Spread::of(&[ms(3), ms(1), ms(2)]).unwrap();
        assert_eq!((s.min_s, s.median_s, s.max_s), (0.001, 0.002, 0.003));
        let s = Spread::of(&[ms(4), ms(1), ms(2), ms(3)]).unwrap();
        assert!((s.median_s - 0.0025).abs() < 1e-12);
        assert!(Spread::of(&[]).is_none());
    }
}
