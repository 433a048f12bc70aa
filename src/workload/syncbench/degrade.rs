//! The fs_mark experiment of thread 002: `fs_mark -S4` (a `sync()` per thread per loop, then
//! the reverse fsync pass) over many loops, keeping its files, so the inode cache grows loop
//! after loop; before the writeback list every one of those syncs walked the whole cache and
//! files/sec fell from ~3,300 to ~1,700 over 32 loops, after it the rate stayed flat.
//!
//! On labfs both modes run on one mount, one after the other, each in its own directories and
//! each starting from the same cache: the cache is emptied (written back, then every clean
//! inode evicted, as `drop_caches` would) and, with a preload, filled again by stat-ing a tree
//! of `preload` files built once at the start. The fsmark engine is the one `fsmark` runs; it
//! sees the mount through [`ModeTarget`], which sends its `sync()`/`syncfs()` calls to
//! [`Fs::sync_waiting`] in the run's mode and every other call straight to the mount. On the
//! host there is one mode, the kernel's.

use std::io::{IoSlice, IoSliceMut};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};

use super::SyncbenchError;
use super::populate::{Fill, Populate, Tree};
use crate::backend::queue::{IoQueue, QueueKind, ThreadedQueue};
use crate::backend::{self, DirEntry, FallocMode, Fd, FileStat, FsStat, OpenFlags, Target};
use crate::fs::Fs;
use crate::fs::options::SyncWait;
use crate::workload::SystemClock;
use crate::workload::fsmark::{self, Config, LoopReport, Reporter, RunEnv, RunStart};

/// A labfs mount seen through the target surface, with sync() in a chosen `sync_wait` mode.
pub struct ModeTarget {
    inner: Arc<dyn Target>,
    fs: Arc<Fs>,
    wait: SyncWait,
}

impl ModeTarget {
    /// `inner` (the mount's target) with its syncs done as `wait` says.
    pub fn new(inner: Arc<dyn Target>, fs: Arc<Fs>, wait: SyncWait) -> ModeTarget {
        ModeTarget { inner, fs, wait }
    }
}

impl Target for ModeTarget {
    fn describe(&self) -> String {
        format!("{} [sync_wait={}]", self.inner.describe(), self.wait.name())
    }
    fn mkdir(&self, path: &Path, mode: u32) -> backend::Result<()> {
        self.inner.mkdir(path, mode)
    }
    fn rmdir(&self, path: &Path) -> backend::Result<()> {
        self.inner.rmdir(path)
    }
    fn open(&self, path: &Path, flags: OpenFlags, mode: u32) -> backend::Result<Fd> {
        self.inner.open(path, flags, mode)
    }
    fn close(&self, fd: Fd) -> backend::Result<()> {
        self.inner.close(fd)
    }
    fn write(&self, fd: Fd, buf: &[u8]) -> backend::Result<usize> {
        self.inner.write(fd, buf)
    }
    fn pwrite(&self, fd: Fd, buf: &[u8], offset: u64) -> backend::Result<usize> {
        self.inner.pwrite(fd, buf, offset)
    }
    fn read(&self, fd: Fd, buf: &mut [u8]) -> backend::Result<usize> {
        self.inner.read(fd, buf)
    }
    fn pread(&self, fd: Fd, buf: &mut [u8], offset: u64) -> backend::Result<usize> {
        self.inner.pread(fd, buf, offset)
    }
    fn fsync(&self, fd: Fd) -> backend::Result<()> {
        self.inner.fsync(fd)
    }
    fn fdatasync(&self, fd: Fd) -> backend::Result<()> {
        self.inner.fdatasync(fd)
    }
    fn fstat(&self, fd: Fd) -> backend::Result<FileStat> {
        self.inner.fstat(fd)
    }
    fn ftruncate(&self, fd: Fd, len: u64) -> backend::Result<()> {
        self.inner.ftruncate(fd, len)
    }
    fn fallocate(&self, fd: Fd, mode: FallocMode, offset: u64, len: u64) -> backend::Result<()> {
        self.inner.fallocate(fd, mode, offset, len)
    }
    fn unlink(&self, path: &Path) -> backend::Result<()> {
        self.inner.unlink(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> backend::Result<()> {
        self.inner.rename(from, to)
    }
    fn link(&self, existing: &Path, new: &Path) -> backend::Result<()> {
        self.inner.link(existing, new)
    }
    fn readdir(&self, path: &Path) -> backend::Result<Vec<DirEntry>> {
        self.inner.readdir(path)
    }
    fn stat(&self, path: &Path) -> backend::Result<FileStat> {
        self.inner.stat(path)
    }
    fn truncate(&self, path: &Path, len: u64) -> backend::Result<()> {
        self.inner.truncate(path, len)
    }
    fn statfs(&self, path: &Path) -> backend::Result<FsStat> {
        self.inner.statfs(path)
    }
    fn sync(&self) -> backend::Result<()> {
        Ok(self.fs.sync_waiting(self.wait)?)
    }
    fn syncfs(&self, path: &Path) -> backend::Result<()> {
        self.inner.stat(path)?;
        Ok(self.fs.sync_waiting(self.wait)?)
    }

    fn lseek(&self, fd: Fd, offset: u64) -> backend::Result<u64> {
        self.inner.lseek(fd, offset)
    }

    fn preadv(&self, fd: Fd, bufs: &mut [IoSliceMut<'_>], offset: u64) -> backend::Result<usize> {
        self.inner.preadv(fd, bufs, offset)
    }

    fn pwritev(&self, fd: Fd, bufs: &[IoSlice<'_>], offset: u64) -> backend::Result<usize> {
        self.inner.pwritev(fd, bufs, offset)
    }

    /// Worker threads calling back into this wrapper, so their syncs take its mode too.
    fn io_queue(
        self: Arc<Self>,
        _kind: QueueKind,
        depth: u32,
    ) -> backend::Result<Box<dyn IoQueue>> {
        Ok(Box::new(ThreadedQueue::new(self, depth)?))
    }
}

/// One fs_mark table row, as the report needs it.
#[derive(Debug, Clone)]
pub struct RateRow {
    /// The row's fs_mark figures.
    pub report: LoopReport,
    /// Inodes cached when the loop ended (labfs).
    pub cached: Option<u64>,
}

/// One mode's run.
#[derive(Debug, Clone)]
pub struct ModeRun {
    /// `all`, `wblist`, or `kernel` on the host.
    pub mode: &'static str,
    /// Its rows, in loop order.
    pub rows: Vec<RateRow>,
    /// Inodes cached when the first loop started.
    pub cached_at_start: Option<u64>,
}

/// The experiment's configuration.
#[derive(Debug, Clone)]
pub struct DegradeConfig {
    /// The fsmark run (directories as given; on labfs each mode runs under `/<mode>`).
    pub fsmark: Config,
    /// Files stat-ed into the cache before each mode's run (labfs only; 0: none).
    pub preload: u64,
    /// The preload tree's directory.
    pub preload_dir: PathBuf,
    /// Threads building and stat-ing the preload tree.
    pub threads: u32,
}

/// Collects the loop reports of one run.
struct Collect<'a> {
    fs: Option<&'a Fs>,
    rows: Vec<RateRow>,
    on_loop: &'a mut dyn FnMut(&'static str, &RateRow),
    mode: &'static str,
}

impl Reporter for Collect<'_> {
    fn run_started(&mut self, _start: &RunStart<'_>) -> std::io::Result<()> {
        Ok(())
    }
    fn loop_finished(&mut self, report: &LoopReport) -> std::io::Result<()> {
        let row = RateRow {
            report: report.clone(),
            cached: self.fs.map(|fs| fs.icache.len() as u64),
        };
        (self.on_loop)(self.mode, &row);
        self.rows.push(row);
        Ok(())
    }
}

/// The directories of `config` moved under `/<mode>`.
fn under(config: &Config, mode: &str) -> Config {
    let mut c = config.clone();
    c.dirs = config
        .dirs
        .iter()
        .map(|d| {
            let rel = d.strip_prefix("/").unwrap_or(d);
            Path::new("/").join(mode).join(rel)
        })
        .collect();
    c
}

/// Empty labfs's inode cache: write everything back, then evict every clean inode nobody
/// holds (two CLOCK passes: the first clears the referenced bits).
pub(super) fn drop_inode_cache(fs: &Fs) -> Result<(), SyncbenchError> {
    fs.sync()
        .and_then(|()| fs.write_metadata_home())
        .map_err(|e| SyncbenchError::Sync {
            way: "sync",
            source: e.into(),
        })?;
    fs.icache.sweep(&fs.stats);
    fs.icache.sweep(&fs.stats);
    Ok(())
}

/// Run the experiment: on labfs (`lab` is the mount behind `target`) `sync_wait=all` then
/// `wblist`; on the host one run. `on_loop` sees each row as it is made (for progress).
pub fn run(
    target: Arc<dyn Target>,
    lab: Option<Arc<Fs>>,
    config: &DegradeConfig,
    interrupt: Option<&AtomicBool>,
    on_loop: &mut dyn FnMut(&'static str, &RateRow),
) -> Result<Vec<ModeRun>, SyncbenchError> {
    let Some(fs) = lab else {
        let mut c = Collect {
            fs: None,
            rows: Vec::new(),
            on_loop,
            mode: "kernel",
        };
        let env = RunEnv {
            target: target.as_ref(),
            clock: &SystemClock,
            interrupt,
        };
        fsmark::run(&env, &config.fsmark, &mut c).map_err(|source| SyncbenchError::Fsmark {
            mode: "kernel",
            source,
        })?;
        return Ok(vec![ModeRun {
            mode: "kernel",
            rows: c.rows,
            cached_at_start: None,
        }]);
    };
    let tree = Tree {
        root: config.preload_dir.clone(),
    };
    let done = AtomicU64::new(0);
    if config.preload > 0 {
        backend::mkdir_all(target.as_ref(), &tree.root).map_err(|source| {
            super::PopulateError::Call {
                op: "mkdir",
                path: tree.root.clone(),
                source,
            }
        })?;
        Fill {
            target: target.as_ref(),
            tree: &tree,
            how: Populate::Create,
            threads: config.threads,
            done: &done,
            interrupt,
        }
        .run(0, config.preload)?;
    }
    let mut runs = Vec::new();
    for wait in [SyncWait::All, SyncWait::WbList] {
        if interrupt.is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed)) {
            break;
        }
        let mode = wait.name();
        drop_inode_cache(&fs)?;
        if config.preload > 0 {
            Fill {
                target: target.as_ref(),
                tree: &tree,
                how: Populate::Stat,
                threads: config.threads,
                done: &done,
                interrupt,
            }
            .run(0, config.preload)?;
        }
        let c = under(&config.fsmark, mode);
        for d in &c.dirs {
            backend::mkdir_parents(target.as_ref(), d).map_err(|source| {
                super::PopulateError::Call {
                    op: "mkdir",
                    path: d.clone(),
                    source,
                }
            })?;
        }
        let cached_at_start = Some(fs.icache.len() as u64);
        let mode_target = ModeTarget::new(Arc::clone(&target), Arc::clone(&fs), wait);
        let mut collect = Collect {
            fs: Some(&fs),
            rows: Vec::new(),
            on_loop: &mut *on_loop,
            mode,
        };
        let env = RunEnv {
            target: &mode_target,
            clock: &SystemClock,
            interrupt,
        };
        fsmark::run(&env, &c, &mut collect)
            .map_err(|source| SyncbenchError::Fsmark { mode, source })?;
        runs.push(ModeRun {
            mode,
            rows: collect.rows,
            cached_at_start,
        });
    }
    Ok(runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_mode_runs_under_its_own_root() {
        let mut c = Config::new("/sbfs/0");
        c.dirs.push(PathBuf::from("/sbfs/1"));
        let moved = under(&c, "all");
        assert_eq!(
            moved.dirs,
            vec![PathBuf::from("/all/sbfs/0"), PathBuf::from("/all/sbfs/1")]
        );
    }
}
