//! One fs_mark thread's iteration: the write loop, the post-loop sync phases in fs_mark's code
//! order, and the unlink pass.
//!
//! Per file, in fs_mark's order: read the wall clock, choose the subdirectory, `mkdir` it
//! (EEXIST ignored; untimed, so it lands in App Overhead), make the name, then time
//! `open(O_CREAT|O_RDWR|O_TRUNC, 0666)` into CREAT, each `write()` of `min(-w, left)` zero
//! bytes into WRITE (a zero-size file still gets one zero-length write), `fsync()` into FSYNC
//! when `-S 1`, and `close()` into CLOSE.
//!
//! Ctrl-C (the driver's interrupt flag) stops the write loop after the file in hand and a
//! reopen pass before its next file; the sync phases are then skipped, and the unlink pass
//! still removes every file made, so an interrupted run leaves what a finished one leaves and
//! reports the files it made.
//!
//! After the loop, in this order: `sync()` (`-S 2/4/6`) or `syncfs()` per used directory
//! (`-S 7`), both into SYNC; the in-order reopen pass (`-S 5/6`); the reverse pass (`-S 3/4`);
//! the first-file reopen (`-S 2`). Each reopen is `open(O_RDONLY)`+`fsync`+`close`, timed as
//! one FSYNC sample; the first-file one adds to the FSYNC sum only. The loop time stops there;
//! the unlink pass (unless files are kept) runs afterwards, in creation order, into UNLINK.
//!
//! The hot loop allocates nothing per file: names live in one arena sized up front, paths are
//! rebuilt in one reused buffer, and the write buffer is one shared slice of zeroes.
//!
//! Paths differ from fs_mark's in one cosmetic way: without `-D` fs_mark builds `"<dir>/"` and
//! `"<dir>//<name>"`; we build `"<dir>"` and `"<dir>/<name>"` (the same calls, clean paths).

use std::collections::HashSet;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use super::config::{Config, SyncPhases};
use super::error::FsmarkError;
use super::metrics::{LatencySet, SyscallKind, ThreadTimings};
use super::naming::{NameLayout, Random, SubdirChooser, push_subdir_name};
use super::progress::{Phase, WorkerProgress};
use crate::backend::{Errno, Fd, OpenFlags, Target};
use crate::workload::Clock;

/// Mode fs_mark creates files and directories with (before the umask).
const FILE_MODE: u32 = 0o666;
const DIR_MODE: u32 = 0o777;

/// What a worker shares with the driver and the other workers.
pub(crate) struct WorkerEnv<'a> {
    pub target: &'a dyn Target,
    pub clock: &'a dyn Clock,
    pub config: &'a Config,
    /// At least `min(io_size, file_size)` zero bytes.
    pub zeroes: &'a [u8],
    /// Set when any worker failed; the others stop at their next file.
    pub abort: &'a AtomicBool,
    /// Set by the user (Ctrl-C): stop at the next file, skip the sync phases, clean up.
    pub interrupt: Option<&'a AtomicBool>,
}

impl WorkerEnv<'_> {
    fn interrupted(&self) -> bool {
        self.interrupt.is_some_and(|f| f.load(Ordering::Relaxed))
    }
}

/// One worker's result for one iteration.
#[derive(Debug)]
pub(crate) struct WorkerOutput {
    pub timings: ThreadTimings,
    pub latency: Option<LatencySet>,
}

/// Why a worker did not finish.
#[derive(Debug)]
pub(crate) enum WorkerError {
    /// It failed.
    Failed(FsmarkError),
    /// Another worker failed first and this one stopped.
    Aborted,
}

impl From<FsmarkError> for WorkerError {
    fn from(e: FsmarkError) -> Self {
        WorkerError::Failed(e)
    }
}

fn as_path(bytes: &[u8]) -> &Path {
    Path::new(OsStr::from_bytes(bytes))
}

/// `mkdir`, treating EEXIST as success (fs_mark's way).
fn mkdir_existing_ok(target: &dyn Target, path: &Path) -> Result<(), FsmarkError> {
    match target.mkdir(path, DIR_MODE) {
        Ok(()) => Ok(()),
        Err(e) if e.errno == Errno::EEXIST => Ok(()),
        Err(e) => Err(FsmarkError::call("mkdir", path, e)),
    }
}

/// The files one worker created in this iteration: names and their subdirectories.
struct FileSet {
    names: Vec<u8>,
    ends: Vec<u32>,
    subdirs: Vec<u32>,
}

impl FileSet {
    fn name(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.names[start..self.ends[i] as usize]
    }

    fn subdir(&self, i: usize) -> Option<u32> {
        self.subdirs.get(i).copied()
    }
}

/// Rewrite `path` (whose first `dir_len` bytes are the worker directory) as the directory of
/// a file in subdirectory `sub`.
fn set_dir(path: &mut Vec<u8>, dir_len: usize, sub: Option<u32>) {
    path.truncate(dir_len);
    if let Some(s) = sub {
        path.push(b'/');
        push_subdir_name(path, s);
    }
}

fn set_file(path: &mut Vec<u8>, dir_len: usize, sub: Option<u32>, name: &[u8]) {
    set_dir(path, dir_len, sub);
    path.push(b'/');
    path.extend_from_slice(name);
}

struct Worker<'a> {
    target: &'a dyn Target,
    clock: &'a dyn Clock,
    t: ThreadTimings,
    latency: Option<LatencySet>,
}

impl Worker<'_> {
    #[inline]
    fn elapsed(&self, since: u64) -> u64 {
        self.clock.now_us().saturating_sub(since)
    }

    #[inline]
    fn sample(&mut self, kind: SyscallKind, us: u64) {
        if let Some(l) = &mut self.latency {
            l.record(kind, us);
        }
    }

    /// Close `fd` after another failure, keeping the first error.
    fn close_quietly(&self, fd: Fd) {
        let _ = self.target.close(fd);
    }

    /// `open(O_RDONLY)` + `fsync` + `close` of `path`, timed as one sample.
    fn reopen_fsync(&self, path: &Path) -> Result<u64, FsmarkError> {
        let t0 = self.clock.now_us();
        let fd = self
            .target
            .open(path, OpenFlags::read_only(), FILE_MODE)
            .map_err(|e| FsmarkError::call("open", path, e))?;
        if let Err(e) = self.target.fsync(fd) {
            self.close_quietly(fd);
            return Err(FsmarkError::call("fsync", path, e));
        }
        self.target
            .close(fd)
            .map_err(|e| FsmarkError::call("close", path, e))?;
        Ok(self.elapsed(t0))
    }

    /// Write `file_size` zero bytes in `io_size` chunks, timing each call.
    fn write_file(
        &mut self,
        fd: Fd,
        path: &Path,
        file_size: u64,
        zeroes: &[u8],
    ) -> Result<(), FsmarkError> {
        let mut left = file_size;
        let mut file_us = 0;
        let mut calls = 0;
        loop {
            let len = left.min(zeroes.len() as u64) as usize;
            let t0 = self.clock.now_us();
            let r = self.target.write(fd, &zeroes[..len]);
            let d = self.elapsed(t0);
            match r {
                Ok(n) if n == len => {}
                Ok(n) => {
                    return Err(FsmarkError::ShortWrite {
                        path: path.display().to_string(),
                        wrote: n,
                        wanted: len,
                    });
                }
                Err(e) => return Err(FsmarkError::call("write", path, e)),
            }
            self.t.write.record(d);
            self.sample(SyscallKind::Write, d);
            file_us += d;
            calls += 1;
            left -= len as u64;
            if left == 0 {
                break;
            }
        }
        self.t.write_avg_sum += file_us / calls;
        Ok(())
    }
}

/// The name generator's seed: fs_mark seeds each child with its start microseconds. Forked
/// children practically never share a microsecond, but threads can, and equal seeds in one
/// directory mean equal names; so the slot goes into the bits above the microseconds (slot 0
/// keeps fs_mark's exact seed).
pub(crate) fn seed(micros: u32, slot: usize) -> u32 {
    micros ^ ((slot as u32) << 20)
}

/// Run one iteration of worker `slot` in `dir`, reporting its phase and steps to `progress`.
pub(crate) fn run_worker(
    env: &WorkerEnv<'_>,
    slot: usize,
    dir: &Path,
    progress: &WorkerProgress,
) -> Result<WorkerOutput, WorkerError> {
    let cfg = env.config;
    let start = env.clock.wall();
    let mut rng = Random::new(seed(start.micros, slot));
    let mut chooser = SubdirChooser::new(cfg.subdirs, start.secs);
    mkdir_existing_ok(env.target, dir)?;

    let layout = NameLayout {
        name_len: cfg.name_len,
        rand_len: cfg.rand_len,
    };
    let n = cfg.num_files as usize;
    let name_len_guess = (cfg.name_len.max(cfg.rand_len) as usize).max(16);
    let has_subdirs = cfg.subdirs.subdirs() > 0;
    let mut files = FileSet {
        names: Vec::with_capacity(n * name_len_guess),
        ends: Vec::with_capacity(n),
        subdirs: Vec::with_capacity(if has_subdirs { n } else { 0 }),
    };
    let dir_bytes = dir.as_os_str().as_bytes();
    let dir_len = dir_bytes.len();
    let mut path = Vec::with_capacity(dir_len + 16 + name_len_guess);
    path.extend_from_slice(dir_bytes);

    let phases = cfg.sync.phases();
    let mut used_dirs: Vec<Option<u32>> = Vec::new();
    let mut used_set: HashSet<Option<u32>> = HashSet::new();
    let mut w = Worker {
        target: env.target,
        clock: env.clock,
        t: ThreadTimings::default(),
        latency: cfg.latency.then(LatencySet::new),
    };
    let create = OpenFlags::create_truncate();

    let loop_start = env.clock.now_us();
    let mut created = 0;
    for _ in 0..n {
        let now = env.clock.wall().secs;
        let sub = chooser.next(now);
        set_dir(&mut path, dir_len, sub);
        mkdir_existing_ok(env.target, as_path(&path))?;
        if phases.syncfs_dirs && used_set.insert(sub) {
            used_dirs.push(sub);
        }

        let name_start = files.names.len();
        layout.push_name(&mut files.names, now, &mut rng);
        files.ends.push(files.names.len() as u32);
        if let Some(s) = sub {
            files.subdirs.push(s);
        }
        path.push(b'/');
        path.extend_from_slice(&files.names[name_start..]);
        let p = as_path(&path);

        let t0 = env.clock.now_us();
        let fd = env
            .target
            .open(p, create, FILE_MODE)
            .map_err(|e| FsmarkError::call("creat", p, e))?;
        let d = w.elapsed(t0);
        w.t.creat.record(d);
        w.sample(SyscallKind::Creat, d);

        if let Err(e) = w.write_file(fd, p, cfg.file_size, env.zeroes) {
            w.close_quietly(fd);
            return Err(e.into());
        }

        if phases.fsync_before_close {
            let t0 = env.clock.now_us();
            if let Err(e) = env.target.fsync(fd) {
                w.close_quietly(fd);
                return Err(FsmarkError::call("fsync", p, e).into());
            }
            let d = w.elapsed(t0);
            w.t.fsync.record(d);
            w.sample(SyscallKind::Fsync, d);
        }

        let t0 = env.clock.now_us();
        env.target
            .close(fd)
            .map_err(|e| FsmarkError::call("close", p, e))?;
        let d = w.elapsed(t0);
        w.t.close.record(d);
        w.sample(SyscallKind::Close, d);

        created += 1;
        progress.step();
        if env.abort.load(Ordering::Relaxed) {
            return Err(WorkerError::Aborted);
        }
        if env.interrupted() {
            break;
        }
    }
    w.t.files = created as u64;
    // Interrupted: the user wants out, so the (possibly long) sync phases are skipped; the
    // files made so far are still unlinked below, as the iteration would have.
    let phases = if env.interrupted() {
        SyncPhases::default()
    } else {
        phases
    };

    progress.enter(Phase::Syncing);
    if phases.sync_syscall {
        let t0 = env.clock.now_us();
        env.target
            .sync()
            .map_err(|e| FsmarkError::call("sync", Path::new(""), e))?;
        let d = w.elapsed(t0);
        w.t.sync_us = d;
        w.sample(SyscallKind::Sync, d);
    }
    if phases.syncfs_dirs {
        for &sub in &used_dirs {
            set_dir(&mut path, dir_len, sub);
            let p = as_path(&path);
            let t0 = env.clock.now_us();
            env.target
                .syncfs(p)
                .map_err(|e| FsmarkError::call("syncfs", p, e))?;
            let d = w.elapsed(t0);
            w.t.sync_us += d;
            w.sample(SyscallKind::Sync, d);
        }
    }
    let mut reopen = |w: &mut Worker<'_>, i: usize, sum_only: bool| {
        set_file(&mut path, dir_len, files.subdir(i), files.name(i));
        let d = w.reopen_fsync(as_path(&path))?;
        progress.step();
        if sum_only {
            w.t.fsync.record_sum_only(d);
        } else {
            w.t.fsync.record(d);
        }
        w.sample(SyscallKind::Fsync, d);
        Ok::<(), FsmarkError>(())
    };
    // A reopen pass stops at the next file on Ctrl-C, like the write loop.
    if phases.post_in_order {
        for i in 0..created {
            if env.interrupted() {
                break;
            }
            reopen(&mut w, i, false)?;
        }
    }
    if phases.post_reverse {
        for i in (0..created).rev() {
            if env.interrupted() {
                break;
            }
            reopen(&mut w, i, false)?;
        }
    }
    if phases.first_file {
        reopen(&mut w, 0, true)?;
    }
    w.t.loop_us = w.elapsed(loop_start);

    if !cfg.keep_files {
        progress.enter(Phase::Unlinking);
        for i in 0..created {
            set_file(&mut path, dir_len, files.subdir(i), files.name(i));
            let p = as_path(&path);
            let t0 = env.clock.now_us();
            env.target
                .unlink(p)
                .map_err(|e| FsmarkError::call("unlink", p, e))?;
            let d = w.elapsed(t0);
            w.t.unlink.record(d);
            w.sample(SyscallKind::Unlink, d);
            progress.step();
        }
    }
    progress.enter(Phase::Done);

    Ok(WorkerOutput {
        timings: w.t,
        latency: w.latency,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_zero_keeps_fs_marks_seed_and_slots_never_share_one() {
        assert_eq!(seed(123_456, 0), 123_456);
        let seeds: HashSet<u32> = (0..64).map(|s| seed(999_999, s)).collect();
        assert_eq!(seeds.len(), 64);
    }

    #[test]
    fn file_paths_are_dir_subdir_and_name() {
        let mut p = b"/mnt/0".to_vec();
        set_file(&mut p, 6, Some(0x1a), b"abc");
        assert_eq!(p, b"/mnt/0/1a/abc");
        set_file(&mut p, 6, None, b"xyz");
        assert_eq!(p, b"/mnt/0/xyz");
        set_dir(&mut p, 6, Some(3));
        assert_eq!(p, b"/mnt/0/03");
    }
}
