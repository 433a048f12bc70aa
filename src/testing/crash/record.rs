//! The recorder: labfs behind the [`Target`] surface, with every operation logged against
//! the device's history.
//!
//! A workload (the fs_mark engine, the fsx-like loop, an ACE sequence) runs on a
//! [`Recorder`] exactly as it would on a [`LabTarget`]. Around each call the recorder reads
//! the fault shim's [`Position`] (flushes and writes completed), so every operation knows when
//! it started and when it was acknowledged in the device's own timeline; a successful call is
//! applied to the [`Model`] and kept as a [`Step`] with what it changed and, for fsync,
//! fdatasync, sync, syncfs and unmount, what it promised ([`Persist`]).
//!
//! Calls are serialised (one lock around the call and its bookkeeping), so the steps are in
//! the order the filesystem executed them even when the workload has several threads; the
//! oracle relies on that total order. Read-only calls pass straight through and are not
//! recorded.
//!
//! New inodes get their numbers from labfs (`fstat`/`stat` after the call), so the model and
//! a crashed image name the same inodes. If labfs accepts an operation the model refuses, or
//! gives an existing name a new inode, the model and the filesystem have diverged; the
//! recorder notes the first divergence and [`Recorder::finish`] reports it as an error.

use std::collections::HashMap;
use std::io::{IoSlice, IoSliceMut};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

use crate::backend::lab::{Format, LabTarget};
use crate::backend::queue::{IoQueue, QueueKind, ThreadedQueue};
use crate::backend::{
    DirEntry, Errno, FallocMode, Fd, FileStat, FsStat, OpenFlags, Result as TargetResult, SyncMode,
    Target, TargetError,
};
use crate::fs::dev::fault::Position;
use crate::fs::dev::{BlockDev, FaultDev, MemDev};
use crate::fs::mkfs::mkfs;
use crate::fs::options::Options;
use crate::testing::crash::HarnessError;
use crate::testing::crash::image::Actual;
use crate::testing::crash::model::{Change, Ino, Model};

/// What an acknowledged operation promised to make durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Persist {
    /// fsync (or fdatasync, `datasync`) of one file or directory.
    Fsync {
        /// The inode.
        ino: Ino,
        /// fdatasync rather than fsync.
        datasync: bool,
    },
    /// sync, syncfs or unmount: everything before it.
    Sync,
}

/// One recorded operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The call, for messages ("pwrite /fsx/f0 100@4096").
    pub call: String,
    /// The device's position when the call started.
    pub started: Position,
    /// The device's position when it returned.
    pub acked: Position,
    /// What it changed in the model.
    pub change: Change,
    /// What it promised, for a persistence call.
    pub persist: Option<Persist>,
}

/// Everything a workload did: the tree it started from and each operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct History {
    /// The model at the start (all of it durable).
    pub initial: Model,
    /// The operations, in execution order.
    pub steps: Vec<Step>,
}

/// A finished recording: the device log, the history, and the crash points it covers.
pub struct Recording {
    /// The fault shim holding every write and flush.
    pub fault: Arc<FaultDev>,
    /// The operations.
    pub history: History,
    /// The options the filesystem was made and mounted with.
    pub options: Options,
    /// The first flush point with a complete filesystem on the device (after mkfs, or the
    /// clean image the recording started from).
    pub first_point: u64,
    /// The last flush point (after unmount).
    pub last_point: u64,
}

/// An open file as the recorder sees it.
struct OpenFile {
    ino: Ino,
    path: PathBuf,
    pos: u64,
    append: bool,
    sync: SyncMode,
}

struct State {
    model: Model,
    initial: Model,
    steps: Vec<Step>,
    files: HashMap<Fd, OpenFile>,
    divergence: Option<String>,
}

/// labfs on a fault shim, recording every operation; see the module docs.
pub struct Recorder {
    lab: LabTarget,
    fault: Arc<FaultDev>,
    options: Options,
    first_point: u64,
    state: Mutex<State>,
    /// Test hook: acknowledge persistence calls without making anything durable.
    lie: AtomicBool,
}

fn show(path: &Path) -> String {
    path.display().to_string()
}

impl Recorder {
    /// Make a new filesystem on an in-memory device of `size` bytes behind a fault shim.
    pub fn mkfs(size: u64, options: &Options) -> Result<Recorder, HarnessError> {
        let fault = Arc::new(FaultDev::new_mem(size)?);
        let dev: Arc<dyn BlockDev> = Arc::clone(&fault) as Arc<dyn BlockDev>;
        Recorder::on(fault, dev, options, true)
    }

    /// Start from a copy of a clean image (one unmounted or synced).
    pub fn resume(image: &MemDev, options: &Options) -> Result<Recorder, HarnessError> {
        let fault = Arc::new(FaultDev::over_mem(Arc::new(image.snapshot())));
        let dev: Arc<dyn BlockDev> = Arc::clone(&fault) as Arc<dyn BlockDev>;
        Recorder::on(fault, dev, options, false)
    }

    /// Run on `dev`, a device stack whose writes and flushes reach `fault` (usually `fault`
    /// itself; a test may put a misbehaving device in between). With `format`, make a new
    /// filesystem first.
    pub fn on(
        fault: Arc<FaultDev>,
        dev: Arc<dyn BlockDev>,
        options: &Options,
        format: bool,
    ) -> Result<Recorder, HarnessError> {
        // Keep every flush point: the harness crashes at all of them. The workloads it runs
        // write at most tens of MiB, which the log holds in memory.
        fault.set_log_limit(u64::MAX);
        if format {
            mkfs(Arc::clone(&dev), options)?;
        }
        let first_point = fault.flush_count();
        let lab = LabTarget::new(dev, options, Format::Never).map_err(HarnessError::Mount)?;
        // A replay must make the same device writes: the inodegc worker would inactivate
        // whenever it gets the CPU. Held, the queue runs at fixed points (the throttle, sync,
        // unmount), and a crash between them leaves orphans for recovery to free.
        lab.fs().inodegc.hold_worker(true);
        let model = Actual::read(lab.fs())?.to_model();
        Ok(Recorder {
            lab,
            fault,
            options: options.clone(),
            first_point,
            state: Mutex::new(State {
                initial: model.clone(),
                model,
                steps: Vec::new(),
                files: HashMap::new(),
                divergence: None,
            }),
            lie: AtomicBool::new(false),
        })
    }

    /// Test hook: from now on, acknowledge fsync, fdatasync, sync and syncfs without asking
    /// labfs to make anything durable: a filesystem that lies about persistence, which the
    /// harness must catch as lost acknowledged operations.
    pub fn acknowledge_without_persisting(&self, lie: bool) {
        self.lie.store(lie, Ordering::Relaxed);
    }

    fn lying(&self) -> bool {
        self.lie.load(Ordering::Relaxed)
    }

    /// The filesystem underneath (for stats or direct calls that should not be recorded).
    pub fn lab(&self) -> &LabTarget {
        &self.lab
    }

    /// The fault shim.
    pub fn fault(&self) -> &Arc<FaultDev> {
        &self.fault
    }

    /// Look at the model as it is now (a workload's read-back verification).
    pub fn with_model<R>(&self, f: impl FnOnce(&Model) -> R) -> R {
        f(&self.state.lock().model)
    }

    /// The inode an open file refers to.
    pub fn ino_of(&self, fd: Fd) -> Option<Ino> {
        self.state.lock().files.get(&fd).map(|f| f.ino)
    }

    /// Operations recorded so far.
    pub fn steps(&self) -> usize {
        self.state.lock().steps.len()
    }

    /// Unmount (recorded as a promise of everything), and hand back the recording.
    pub fn finish(self) -> Result<Recording, HarnessError> {
        let started = self.fault.position();
        self.lab.unmount().map_err(|source| HarnessError::Call {
            call: "unmount".into(),
            source,
        })?;
        let acked = self.fault.position();
        let mut st = self.state.into_inner();
        st.steps.push(Step {
            call: "unmount".into(),
            started,
            acked,
            change: Change::default(),
            persist: Some(Persist::Sync),
        });
        if let Some(d) = st.divergence {
            return Err(HarnessError::Diverged(d));
        }
        Ok(Recording {
            last_point: self.fault.flush_count(),
            fault: self.fault,
            history: History {
                initial: st.initial,
                steps: st.steps,
            },
            options: self.options,
            first_point: self.first_point,
        })
    }

    /// Run one call: its bookkeeping under the lock, positions around it, a step if it
    /// changed or promised anything.
    fn step<T>(
        &self,
        call: impl FnOnce(&State) -> String,
        op: impl FnOnce(&LabTarget, &mut State) -> TargetResult<(T, Change, Option<Persist>)>,
    ) -> TargetResult<T> {
        let mut st = self.state.lock();
        let started = self.fault.position();
        let (value, change, persist) = op(&self.lab, &mut st)?;
        let acked = self.fault.position();
        if change != Change::default() || persist.is_some() {
            let call = call(&st);
            st.steps.push(Step {
                call,
                started,
                acked,
                change,
                persist,
            });
        }
        Ok(value)
    }

    fn file_path(st: &State, fd: Fd) -> String {
        st.files
            .get(&fd)
            .map_or_else(|| format!("fd {}", fd.0), |f| show(&f.path))
    }
}

impl State {
    /// Apply a model operation that labfs has already performed successfully.
    fn apply(&mut self, what: &str, r: Result<Change, Errno>) -> Change {
        r.unwrap_or_else(|e| {
            self.diverge(format!("labfs did {what}, the model refuses it ({e})"));
            Change::default()
        })
    }

    fn diverge(&mut self, what: String) {
        self.divergence.get_or_insert(what);
    }

    fn open_ino(&self, fd: Fd) -> TargetResult<Ino> {
        self.files
            .get(&fd)
            .map(|f| f.ino)
            .ok_or(TargetError::errno(Errno::EBADF))
    }
}

fn bytes(path: &Path) -> &[u8] {
    path.as_os_str().as_bytes()
}

impl Target for Recorder {
    fn describe(&self) -> String {
        format!("recorded {}", self.lab.describe())
    }

    fn mkdir(&self, path: &Path, mode: u32) -> TargetResult<()> {
        self.step(
            |_| format!("mkdir {}", show(path)),
            |lab, st| {
                lab.mkdir(path, mode)?;
                let ino = lab.stat(path)?.ino;
                let r = st.model.mkdir(bytes(path), Some(ino));
                Ok(((), st.apply(&format!("mkdir {}", show(path)), r), None))
            },
        )
    }

    fn rmdir(&self, path: &Path) -> TargetResult<()> {
        self.step(
            |_| format!("rmdir {}", show(path)),
            |lab, st| {
                lab.rmdir(path)?;
                let r = st.model.rmdir(bytes(path));
                Ok(((), st.apply(&format!("rmdir {}", show(path)), r), None))
            },
        )
    }

    fn open(&self, path: &Path, flags: OpenFlags, mode: u32) -> TargetResult<Fd> {
        self.step(
            |_| {
                format!(
                    "open {}{}{}",
                    show(path),
                    if flags.create { " O_CREAT" } else { "" },
                    if flags.truncate { " O_TRUNC" } else { "" }
                )
            },
            |lab, st| {
                let existing = st.model.resolve(bytes(path)).ok();
                let fd = lab.open(path, flags, mode)?;
                let ino = lab.fstat(fd)?.ino;
                let mut change = Change::default();
                if flags.create && existing.is_none() {
                    match st.model.create(bytes(path), flags.exclusive, Some(ino)) {
                        Ok((_, c)) => change = c,
                        Err(e) => st.diverge(format!(
                            "labfs created {}, the model refuses it ({e})",
                            show(path)
                        )),
                    }
                } else if existing != Some(ino) {
                    st.diverge(format!(
                        "{} is inode {ino} in labfs, {existing:?} in the model",
                        show(path)
                    ));
                }
                let is_file = st.model.content(ino).is_some();
                if flags.truncate && flags.writable() && existing.is_some() && is_file {
                    let r = st.model.truncate(ino, 0);
                    change.data.extend(st.apply("O_TRUNC", r).data);
                }
                st.files.insert(
                    fd,
                    OpenFile {
                        ino,
                        path: path.to_path_buf(),
                        pos: 0,
                        append: flags.append,
                        sync: flags.sync,
                    },
                );
                Ok((fd, change, None))
            },
        )
    }

    fn close(&self, fd: Fd) -> TargetResult<()> {
        let mut st = self.state.lock();
        self.lab.close(fd)?;
        st.files.remove(&fd);
        Ok(())
    }

    fn write(&self, fd: Fd, buf: &[u8]) -> TargetResult<usize> {
        self.step(
            |st| format!("write {} {}", Recorder::file_path(st, fd), buf.len()),
            |lab, st| {
                let ino = st.open_ino(fd)?;
                let (offset, append, sync) = {
                    let f = &st.files[&fd];
                    (f.pos, f.append, f.sync)
                };
                let offset = if append {
                    st.model.content(ino).map_or(0, |d| d.len() as u64)
                } else {
                    offset
                };
                let n = lab.write(fd, buf)?;
                if let Some(f) = st.files.get_mut(&fd) {
                    f.pos = offset + n as u64;
                }
                let r = st.model.write(ino, offset, &buf[..n]);
                let change = st.apply("write", r);
                Ok((n, change, sync_persist(ino, sync)))
            },
        )
    }

    fn pwrite(&self, fd: Fd, buf: &[u8], offset: u64) -> TargetResult<usize> {
        self.step(
            |st| {
                format!(
                    "pwrite {} {}@{offset}",
                    Recorder::file_path(st, fd),
                    buf.len()
                )
            },
            |lab, st| {
                let ino = st.open_ino(fd)?;
                let sync = st.files[&fd].sync;
                let n = lab.pwrite(fd, buf, offset)?;
                let r = st.model.write(ino, offset, &buf[..n]);
                let change = st.apply("pwrite", r);
                Ok((n, change, sync_persist(ino, sync)))
            },
        )
    }

    fn read(&self, fd: Fd, buf: &mut [u8]) -> TargetResult<usize> {
        let mut st = self.state.lock();
        let n = self.lab.read(fd, buf)?;
        if let Some(f) = st.files.get_mut(&fd) {
            f.pos += n as u64;
        }
        Ok(n)
    }

    fn pread(&self, fd: Fd, buf: &mut [u8], offset: u64) -> TargetResult<usize> {
        self.lab.pread(fd, buf, offset)
    }

    fn lseek(&self, fd: Fd, offset: u64) -> TargetResult<u64> {
        let mut st = self.state.lock();
        let at = self.lab.lseek(fd, offset)?;
        if let Some(f) = st.files.get_mut(&fd) {
            f.pos = at;
        }
        Ok(at)
    }

    fn preadv(&self, fd: Fd, bufs: &mut [IoSliceMut<'_>], offset: u64) -> TargetResult<usize> {
        self.lab.preadv(fd, bufs, offset)
    }

    /// One recorded pwrite of the buffers joined: the model sees the same bytes land.
    fn pwritev(&self, fd: Fd, bufs: &[IoSlice<'_>], offset: u64) -> TargetResult<usize> {
        let joined: Vec<u8> = bufs.iter().flat_map(|b| b.iter().copied()).collect();
        self.pwrite(fd, &joined, offset)
    }

    fn io_queue(self: Arc<Self>, _kind: QueueKind, depth: u32) -> TargetResult<Box<dyn IoQueue>> {
        Ok(Box::new(ThreadedQueue::new(self, depth)?))
    }

    fn fsync(&self, fd: Fd) -> TargetResult<()> {
        self.step(
            |st| format!("fsync {}", Recorder::file_path(st, fd)),
            |lab, st| {
                let ino = st.open_ino(fd)?;
                if !self.lying() {
                    lab.fsync(fd)?;
                }
                let persist = Persist::Fsync {
                    ino,
                    datasync: false,
                };
                Ok(((), Change::default(), Some(persist)))
            },
        )
    }

    fn fdatasync(&self, fd: Fd) -> TargetResult<()> {
        self.step(
            |st| format!("fdatasync {}", Recorder::file_path(st, fd)),
            |lab, st| {
                let ino = st.open_ino(fd)?;
                if !self.lying() {
                    lab.fdatasync(fd)?;
                }
                let persist = Persist::Fsync {
                    ino,
                    datasync: true,
                };
                Ok(((), Change::default(), Some(persist)))
            },
        )
    }

    fn fstat(&self, fd: Fd) -> TargetResult<FileStat> {
        self.lab.fstat(fd)
    }

    fn ftruncate(&self, fd: Fd, len: u64) -> TargetResult<()> {
        self.step(
            |st| format!("ftruncate {} {len}", Recorder::file_path(st, fd)),
            |lab, st| {
                let ino = st.open_ino(fd)?;
                lab.ftruncate(fd, len)?;
                let r = st.model.truncate(ino, len);
                Ok(((), st.apply("ftruncate", r), None))
            },
        )
    }

    fn fallocate(&self, fd: Fd, mode: FallocMode, offset: u64, len: u64) -> TargetResult<()> {
        self.step(
            |st| {
                format!(
                    "fallocate {} {mode:?} {len}@{offset}",
                    Recorder::file_path(st, fd)
                )
            },
            |lab, st| {
                let ino = st.open_ino(fd)?;
                lab.fallocate(fd, mode, offset, len)?;
                let r = st.model.fallocate(ino, mode, offset, len);
                Ok(((), st.apply("fallocate", r), None))
            },
        )
    }

    fn unlink(&self, path: &Path) -> TargetResult<()> {
        self.step(
            |_| format!("unlink {}", show(path)),
            |lab, st| {
                lab.unlink(path)?;
                let r = st.model.unlink(bytes(path));
                Ok(((), st.apply(&format!("unlink {}", show(path)), r), None))
            },
        )
    }

    fn rename(&self, from: &Path, to: &Path) -> TargetResult<()> {
        self.step(
            |_| format!("rename {} {}", show(from), show(to)),
            |lab, st| {
                lab.rename(from, to)?;
                let r = st.model.rename(bytes(from), bytes(to));
                let what = format!("rename {} {}", show(from), show(to));
                Ok(((), st.apply(&what, r), None))
            },
        )
    }

    fn link(&self, existing: &Path, new: &Path) -> TargetResult<()> {
        self.step(
            |_| format!("link {} {}", show(existing), show(new)),
            |lab, st| {
                lab.link(existing, new)?;
                let r = st.model.link(bytes(existing), bytes(new));
                let what = format!("link {} {}", show(existing), show(new));
                Ok(((), st.apply(&what, r), None))
            },
        )
    }

    fn readdir(&self, path: &Path) -> TargetResult<Vec<DirEntry>> {
        self.lab.readdir(path)
    }

    fn stat(&self, path: &Path) -> TargetResult<FileStat> {
        self.lab.stat(path)
    }

    fn truncate(&self, path: &Path, len: u64) -> TargetResult<()> {
        self.step(
            |_| format!("truncate {} {len}", show(path)),
            |lab, st| {
                lab.truncate(path, len)?;
                let r = st
                    .model
                    .resolve(bytes(path))
                    .and_then(|ino| st.model.truncate(ino, len));
                Ok(((), st.apply("truncate", r), None))
            },
        )
    }

    fn statfs(&self, path: &Path) -> TargetResult<FsStat> {
        self.lab.statfs(path)
    }

    fn sync(&self) -> TargetResult<()> {
        self.step(
            |_| "sync".to_string(),
            |lab, _| {
                if !self.lying() {
                    lab.sync()?;
                }
                Ok(((), Change::default(), Some(Persist::Sync)))
            },
        )
    }

    fn syncfs(&self, path: &Path) -> TargetResult<()> {
        self.step(
            |_| format!("syncfs {}", show(path)),
            |lab, _| {
                if !self.lying() {
                    lab.syncfs(path)?;
                }
                Ok(((), Change::default(), Some(Persist::Sync)))
            },
        )
    }
}

/// What a write through an O_SYNC / O_DSYNC descriptor promises.
fn sync_persist(ino: Ino, sync: SyncMode) -> Option<Persist> {
    match sync {
        SyncMode::None => None,
        SyncMode::Data => Some(Persist::Fsync {
            ino,
            datasync: true,
        }),
        SyncMode::Full => Some(Persist::Fsync {
            ino,
            datasync: false,
        }),
    }
}
