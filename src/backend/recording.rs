//! `RecordingTarget`: a [`Target`] that logs every call, for tests.
//!
//! Workload tests need to assert *what* an engine asks of a filesystem, in which order, and
//! which of those calls land in which timing column. `RecordingTarget` wraps any other target
//! (the host, labfs, or the in-memory [`MemTarget`] fake) and appends one [`Record`] per call:
//! the calling thread, the virtual time at the call, the call with its arguments, and its
//! outcome. Calls on descriptors carry the path the descriptor was opened with, so a log reads
//! like an strace: `open /d/00/x RDONLY`, `fsync /d/00/x`, `close /d/00/x`.
//!
//! Timing: give it a [`VirtualClock`] and a cost per [`Op`], and each call advances the clock
//! by its cost. A workload that reads time from that clock then measures exactly the costs the
//! test chose (for one thread), so a test can say "fsync costs 1000 µs" and check that 1000
//! shows up in the FSYNC column and nowhere else.
//!
//! [`MemTarget`] is a small in-memory filesystem with a byte capacity: enough namespace
//! semantics (EEXIST, ENOENT, ENOTDIR, ENOTEMPTY, EISDIR) for workloads, and `statfs` /
//! `ENOSPC` that follow the files' sizes, so fill-the-filesystem behaviour is testable without
//! a real small filesystem. It stores file sizes, not contents: reads return zeroes.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{IoSlice, IoSliceMut};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::ThreadId;

use nix::errno::Errno;
use parking_lot::Mutex;

use super::queue::{IoQueue, QueueKind, ThreadedQueue};
use super::{
    DirEntry, FallocMode, Fd, FileKind, FileStat, FsStat, OpenFlags, Result, Target, TargetError,
};

/// A settable clock for tests: a microsecond counter plus a wall-clock epoch.
///
/// It implements [`crate::workload::Clock`]; the wall time is `epoch_secs` plus the counter.
#[derive(Debug)]
pub struct VirtualClock {
    micros: AtomicU64,
    epoch_secs: u64,
}

impl VirtualClock {
    /// A clock at counter 0 whose wall time starts at `epoch_secs`.
    pub fn new(epoch_secs: u64) -> Self {
        VirtualClock {
            micros: AtomicU64::new(0),
            epoch_secs,
        }
    }

    /// Move the clock forward by `us` microseconds.
    pub fn advance(&self, us: u64) {
        self.micros.fetch_add(us, Ordering::SeqCst);
    }

    /// The counter, in microseconds since the clock was made.
    pub fn micros(&self) -> u64 {
        self.micros.load(Ordering::SeqCst)
    }

    /// The wall-clock second the counter's zero stands for.
    pub fn epoch_secs(&self) -> u64 {
        self.epoch_secs
    }
}

/// The kind of a target call, used to give each kind a virtual cost.
#[allow(
    missing_docs,
    reason = "each variant names the Target method of the same name"
)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    Mkdir,
    Rmdir,
    Open,
    Close,
    Write,
    Pwrite,
    Read,
    Pread,
    Fsync,
    Fdatasync,
    Fstat,
    Ftruncate,
    Fallocate,
    Unlink,
    Rename,
    Link,
    Readdir,
    Stat,
    Truncate,
    Statfs,
    Sync,
    Syncfs,
    Lseek,
    Preadv,
    Pwritev,
}

/// One target call with its arguments. Descriptor calls carry the path the descriptor was
/// opened with (empty if the descriptor was unknown).
#[allow(missing_docs, reason = "fields are the arguments of the Target method")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    Mkdir {
        path: PathBuf,
        mode: u32,
    },
    Rmdir {
        path: PathBuf,
    },
    Open {
        path: PathBuf,
        flags: OpenFlags,
        mode: u32,
    },
    Close {
        path: PathBuf,
    },
    Write {
        path: PathBuf,
        len: usize,
    },
    Pwrite {
        path: PathBuf,
        len: usize,
        offset: u64,
    },
    Read {
        path: PathBuf,
        len: usize,
    },
    Pread {
        path: PathBuf,
        len: usize,
        offset: u64,
    },
    Fsync {
        path: PathBuf,
    },
    Fdatasync {
        path: PathBuf,
    },
    Fstat {
        path: PathBuf,
    },
    Ftruncate {
        path: PathBuf,
        len: u64,
    },
    Fallocate {
        path: PathBuf,
        mode: FallocMode,
        offset: u64,
        len: u64,
    },
    Unlink {
        path: PathBuf,
    },
    Rename {
        from: PathBuf,
        to: PathBuf,
    },
    Link {
        existing: PathBuf,
        new: PathBuf,
    },
    Readdir {
        path: PathBuf,
    },
    Stat {
        path: PathBuf,
    },
    Truncate {
        path: PathBuf,
        len: u64,
    },
    Statfs {
        path: PathBuf,
    },
    Sync,
    Syncfs {
        path: PathBuf,
    },
    Lseek {
        path: PathBuf,
        offset: u64,
    },
    Preadv {
        path: PathBuf,
        len: usize,
        offset: u64,
    },
    Pwritev {
        path: PathBuf,
        len: usize,
        offset: u64,
    },
}

impl Call {
    /// The kind of this call.
    pub fn op(&self) -> Op {
        match self {
            Call::Mkdir { .. } => Op::Mkdir,
            Call::Rmdir { .. } => Op::Rmdir,
            Call::Open { .. } => Op::Open,
            Call::Close { .. } => Op::Close,
            Call::Write { .. } => Op::Write,
            Call::Pwrite { .. } => Op::Pwrite,
            Call::Read { .. } => Op::Read,
            Call::Pread { .. } => Op::Pread,
            Call::Fsync { .. } => Op::Fsync,
            Call::Fdatasync { .. } => Op::Fdatasync,
            Call::Fstat { .. } => Op::Fstat,
            Call::Ftruncate { .. } => Op::Ftruncate,
            Call::Fallocate { .. } => Op::Fallocate,
            Call::Unlink { .. } => Op::Unlink,
            Call::Rename { .. } => Op::Rename,
            Call::Link { .. } => Op::Link,
            Call::Readdir { .. } => Op::Readdir,
            Call::Stat { .. } => Op::Stat,
            Call::Truncate { .. } => Op::Truncate,
            Call::Statfs { .. } => Op::Statfs,
            Call::Sync => Op::Sync,
            Call::Syncfs { .. } => Op::Syncfs,
            Call::Lseek { .. } => Op::Lseek,
            Call::Preadv { .. } => Op::Preadv,
            Call::Pwritev { .. } => Op::Pwritev,
        }
    }

    /// The (first) path the call names, if any.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Call::Sync => None,
            Call::Mkdir { path, .. }
            | Call::Rmdir { path }
            | Call::Open { path, .. }
            | Call::Close { path }
            | Call::Write { path, .. }
            | Call::Pwrite { path, .. }
            | Call::Read { path, .. }
            | Call::Pread { path, .. }
            | Call::Fsync { path }
            | Call::Fdatasync { path }
            | Call::Fstat { path }
            | Call::Ftruncate { path, .. }
            | Call::Fallocate { path, .. }
            | Call::Unlink { path }
            | Call::Readdir { path }
            | Call::Stat { path }
            | Call::Truncate { path, .. }
            | Call::Statfs { path }
            | Call::Syncfs { path }
            | Call::Lseek { path, .. }
            | Call::Preadv { path, .. }
            | Call::Pwritev { path, .. } => Some(path),
            Call::Rename { from, .. } => Some(from),
            Call::Link { existing, .. } => Some(existing),
        }
    }
}

/// One logged call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The thread that made the call.
    pub thread: ThreadId,
    /// That thread's name, if it has one.
    pub thread_name: Option<String>,
    /// Virtual time (µs) when the call started; 0 without a clock.
    pub at_us: u64,
    /// The call and its arguments.
    pub call: Call,
    /// The errno the call failed with, if it failed.
    pub error: Option<Errno>,
}

/// A [`Target`] wrapper that logs every call (see the module docs).
pub struct RecordingTarget {
    inner: Arc<dyn Target>,
    clock: Option<Arc<VirtualClock>>,
    costs: HashMap<Op, u64>,
    log: Mutex<Vec<Record>>,
    fd_paths: Mutex<HashMap<Fd, PathBuf>>,
}

impl std::fmt::Debug for RecordingTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordingTarget")
            .field("inner", &self.inner.describe())
            .field("records", &self.log.lock().len())
            .finish()
    }
}

impl RecordingTarget {
    /// Record the calls made to `inner`.
    pub fn new(inner: Arc<dyn Target>) -> Self {
        RecordingTarget {
            inner,
            clock: None,
            costs: HashMap::new(),
            log: Mutex::new(Vec::new()),
            fd_paths: Mutex::new(HashMap::new()),
        }
    }

    /// Record the calls made to a fresh [`MemTarget`] of `capacity` bytes.
    pub fn in_memory(capacity: u64) -> Self {
        RecordingTarget::new(Arc::new(MemTarget::new(capacity)))
    }

    /// Advance `clock` on every call by the call's cost (see [`RecordingTarget::with_cost`]).
    pub fn with_clock(mut self, clock: Arc<VirtualClock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Each call of kind `op` costs `us` virtual microseconds.
    pub fn with_cost(mut self, op: Op, us: u64) -> Self {
        self.costs.insert(op, us);
        self
    }

    /// A copy of the log so far.
    pub fn records(&self) -> Vec<Record> {
        self.log.lock().clone()
    }

    /// Just the calls, in order.
    pub fn calls(&self) -> Vec<Call> {
        self.log.lock().iter().map(|r| r.call.clone()).collect()
    }

    /// Forget the log so far.
    pub fn clear(&self) {
        self.log.lock().clear();
    }

    fn fd_path(&self, fd: Fd) -> PathBuf {
        self.fd_paths.lock().get(&fd).cloned().unwrap_or_default()
    }

    fn record<T>(&self, call: Call, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let at_us = self.clock.as_ref().map_or(0, |c| c.micros());
        let result = f();
        if let Some(clock) = &self.clock {
            clock.advance(self.costs.get(&call.op()).copied().unwrap_or(0));
        }
        let error = result.as_ref().err().map(|e| e.errno);
        let me = std::thread::current();
        self.log.lock().push(Record {
            thread: me.id(),
            thread_name: me.name().map(str::to_string),
            at_us,
            call,
            error,
        });
        result
    }
}

impl Target for RecordingTarget {
    fn describe(&self) -> String {
        format!("recording: {}", self.inner.describe())
    }

    fn mkdir(&self, path: &Path, mode: u32) -> Result<()> {
        let call = Call::Mkdir {
            path: path.into(),
            mode,
        };
        self.record(call, || self.inner.mkdir(path, mode))
    }

    fn rmdir(&self, path: &Path) -> Result<()> {
        self.record(Call::Rmdir { path: path.into() }, || self.inner.rmdir(path))
    }

    fn open(&self, path: &Path, flags: OpenFlags, mode: u32) -> Result<Fd> {
        let call = Call::Open {
            path: path.into(),
            flags,
            mode,
        };
        let fd = self.record(call, || self.inner.open(path, flags, mode))?;
        self.fd_paths.lock().insert(fd, path.into());
        Ok(fd)
    }

    fn close(&self, fd: Fd) -> Result<()> {
        let path = self.fd_path(fd);
        let r = self.record(Call::Close { path }, || self.inner.close(fd));
        self.fd_paths.lock().remove(&fd);
        r
    }

    fn write(&self, fd: Fd, buf: &[u8]) -> Result<usize> {
        let call = Call::Write {
            path: self.fd_path(fd),
            len: buf.len(),
        };
        self.record(call, || self.inner.write(fd, buf))
    }

    fn pwrite(&self, fd: Fd, buf: &[u8], offset: u64) -> Result<usize> {
        let call = Call::Pwrite {
            path: self.fd_path(fd),
            len: buf.len(),
            offset,
        };
        self.record(call, || self.inner.pwrite(fd, buf, offset))
    }

    fn read(&self, fd: Fd, buf: &mut [u8]) -> Result<usize> {
        let call = Call::Read {
            path: self.fd_path(fd),
            len: buf.len(),
        };
        self.record(call, || self.inner.read(fd, buf))
    }

    fn pread(&self, fd: Fd, buf: &mut [u8], offset: u64) -> Result<usize> {
        let call = Call::Pread {
            path: self.fd_path(fd),
            len: buf.len(),
            offset,
        };
        self.record(call, || self.inner.pread(fd, buf, offset))
    }

    fn fsync(&self, fd: Fd) -> Result<()> {
        let call = Call::Fsync {
            path: self.fd_path(fd),
        };
        self.record(call, || self.inner.fsync(fd))
    }

    fn fdatasync(&self, fd: Fd) -> Result<()> {
        let call = Call::Fdatasync {
            path: self.fd_path(fd),
        };
        self.record(call, || self.inner.fdatasync(fd))
    }

    fn fstat(&self, fd: Fd) -> Result<FileStat> {
        let call = Call::Fstat {
            path: self.fd_path(fd),
        };
        self.record(call, || self.inner.fstat(fd))
    }

    fn ftruncate(&self, fd: Fd, len: u64) -> Result<()> {
        let call = Call::Ftruncate {
            path: self.fd_path(fd),
            len,
        };
        self.record(call, || self.inner.ftruncate(fd, len))
    }

    fn fallocate(&self, fd: Fd, mode: FallocMode, offset: u64, len: u64) -> Result<()> {
        let call = Call::Fallocate {
            path: self.fd_path(fd),
            mode,
            offset,
            len,
        };
        self.record(call, || self.inner.fallocate(fd, mode, offset, len))
    }

    fn unlink(&self, path: &Path) -> Result<()> {
        self.record(Call::Unlink { path: path.into() }, || {
            self.inner.unlink(path)
        })
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let call = Call::Rename {
            from: from.into(),
            to: to.into(),
        };
        self.record(call, || self.inner.rename(from, to))
    }

    fn link(&self, existing: &Path, new: &Path) -> Result<()> {
        let call = Call::Link {
            existing: existing.into(),
            new: new.into(),
        };
        self.record(call, || self.inner.link(existing, new))
    }

    fn readdir(&self, path: &Path) -> Result<Vec<DirEntry>> {
        self.record(Call::Readdir { path: path.into() }, || {
            self.inner.readdir(path)
        })
    }

    fn stat(&self, path: &Path) -> Result<FileStat> {
        self.record(Call::Stat { path: path.into() }, || self.inner.stat(path))
    }

    fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        let call = Call::Truncate {
            path: path.into(),
            len,
        };
        self.record(call, || self.inner.truncate(path, len))
    }

    fn statfs(&self, path: &Path) -> Result<FsStat> {
        self.record(Call::Statfs { path: path.into() }, || {
            self.inner.statfs(path)
        })
    }

    fn sync(&self) -> Result<()> {
        self.record(Call::Sync, || self.inner.sync())
    }

    fn syncfs(&self, path: &Path) -> Result<()> {
        self.record(Call::Syncfs { path: path.into() }, || {
            self.inner.syncfs(path)
        })
    }

    fn lseek(&self, fd: Fd, offset: u64) -> Result<u64> {
        let call = Call::Lseek {
            path: self.fd_path(fd),
            offset,
        };
        self.record(call, || self.inner.lseek(fd, offset))
    }

    fn preadv(&self, fd: Fd, bufs: &mut [IoSliceMut<'_>], offset: u64) -> Result<usize> {
        let call = Call::Preadv {
            path: self.fd_path(fd),
            len: bufs.iter().map(|b| b.len()).sum(),
            offset,
        };
        self.record(call, || self.inner.preadv(fd, bufs, offset))
    }

    fn pwritev(&self, fd: Fd, bufs: &[IoSlice<'_>], offset: u64) -> Result<usize> {
        let call = Call::Pwritev {
            path: self.fd_path(fd),
            len: bufs.iter().map(|b| b.len()).sum(),
            offset,
        };
        self.record(call, || self.inner.pwritev(fd, bufs, offset))
    }

    /// Queued requests are served by worker threads calling this target, so each one is
    /// recorded as the pread/pwrite/fsync it becomes.
    fn io_queue(self: Arc<Self>, _kind: QueueKind, depth: u32) -> Result<Box<dyn IoQueue>> {
        Ok(Box::new(ThreadedQueue::new(self, depth)?))
    }
}

/// Block size [`MemTarget`] reports and accounts space in.
pub const MEM_BLOCK_SIZE: u64 = 4096;

#[derive(Debug, Clone)]
struct MemInode {
    kind: FileKind,
    size: u64,
    nlink: u32,
    /// Open descriptors; an unlinked inode lives until the last one closes.
    opens: u32,
    mode: u32,
}

#[derive(Debug, Clone, Copy)]
struct MemOpen {
    ino: u64,
    offset: u64,
    flags: OpenFlags,
}

#[derive(Debug)]
struct MemState {
    /// Normalised path -> inode number; the root ("" or "/") is implicit.
    names: BTreeMap<PathBuf, u64>,
    inodes: HashMap<u64, MemInode>,
    fds: HashMap<u64, MemOpen>,
    next_ino: u64,
    next_fd: u64,
    used_blocks: u64,
}

/// An in-memory filesystem of fixed capacity (see the module docs).
#[derive(Debug)]
pub struct MemTarget {
    capacity_blocks: u64,
    state: Mutex<MemState>,
}

/// Lexically normalise a path: repeated and trailing slashes and `.` components vanish.
fn norm(path: &Path) -> PathBuf {
    path.components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect()
}

fn is_root(p: &Path) -> bool {
    p.as_os_str().is_empty() || p == Path::new("/")
}

fn blocks_for(size: u64) -> u64 {
    size.div_ceil(MEM_BLOCK_SIZE)
}

impl MemTarget {
    /// An empty filesystem that can hold `capacity` bytes of file data.
    pub fn new(capacity: u64) -> Self {
        MemTarget {
            capacity_blocks: capacity / MEM_BLOCK_SIZE,
            state: Mutex::new(MemState {
                names: BTreeMap::new(),
                inodes: HashMap::new(),
                fds: HashMap::new(),
                next_ino: 2,
                next_fd: 3,
                used_blocks: 0,
            }),
        }
    }
}

impl MemState {
    fn lookup(&self, p: &Path) -> Option<(u64, &MemInode)> {
        if is_root(p) {
            return None;
        }
        let ino = *self.names.get(p)?;
        self.inodes.get(&ino).map(|i| (ino, i))
    }

    fn kind_at(&self, p: &Path) -> Option<FileKind> {
        if is_root(p) {
            return Some(FileKind::Dir);
        }
        self.lookup(p).map(|(_, i)| i.kind)
    }

    /// ENOENT if the parent is missing, ENOTDIR if it is not a directory.
    fn check_parent(&self, p: &Path) -> Result<()> {
        let parent = p.parent().unwrap_or(Path::new(""));
        match self.kind_at(parent) {
            Some(FileKind::Dir) => Ok(()),
            Some(_) => Err(Errno::ENOTDIR.into()),
            None => Err(Errno::ENOENT.into()),
        }
    }

    fn new_inode(&mut self, kind: FileKind, mode: u32) -> u64 {
        let ino = self.next_ino;
        self.next_ino += 1;
        self.inodes.insert(
            ino,
            MemInode {
                kind,
                size: 0,
                nlink: 1,
                opens: 0,
                mode,
            },
        );
        ino
    }

    fn resize(&mut self, ino: u64, new_size: u64, capacity: u64) -> Result<()> {
        let inode = self.inodes.get(&ino).ok_or(Errno::EBADF)?;
        let (old, new) = (blocks_for(inode.size), blocks_for(new_size));
        if new > old && self.used_blocks + (new - old) > capacity {
            return Err(Errno::ENOSPC.into());
        }
        self.used_blocks = self.used_blocks + new - old;
        if let Some(inode) = self.inodes.get_mut(&ino) {
            inode.size = new_size;
        }
        Ok(())
    }

    /// Drop a name (`unlinks = 1`) or an open descriptor (`closes = 1`) from an inode, and
    /// free it once neither is left.
    fn release(&mut self, ino: u64, unlinks: u32, closes: u32) {
        let gone = match self.inodes.get_mut(&ino) {
            Some(i) => {
                i.nlink = i.nlink.saturating_sub(unlinks);
                i.opens = i.opens.saturating_sub(closes);
                i.nlink == 0 && i.opens == 0
            }
            None => false,
        };
        if gone && let Some(i) = self.inodes.remove(&ino) {
            self.used_blocks -= blocks_for(i.size);
        }
    }

    fn has_children(&self, dir: &Path) -> bool {
        self.names
            .range(dir.to_path_buf()..)
            .skip(1)
            .take_while(|(p, _)| p.starts_with(dir))
            .any(|(p, _)| p.parent() == Some(dir))
    }

    fn stat_of(ino: u64, i: &MemInode) -> FileStat {
        let type_bits = match i.kind {
            FileKind::Dir => libc::S_IFDIR,
            FileKind::Symlink => libc::S_IFLNK,
            FileKind::File | FileKind::Other => libc::S_IFREG,
        };
        FileStat {
            ino,
            kind: i.kind,
            mode: type_bits | (i.mode & 0o7777),
            nlink: i.nlink,
            uid: 0,
            gid: 0,
            size: i.size,
            blocks: blocks_for(i.size) * (MEM_BLOCK_SIZE / 512),
            blksize: MEM_BLOCK_SIZE as u32,
            atime_ns: 0,
            mtime_ns: 0,
            ctime_ns: 0,
        }
    }

    /// Account a write of `len` bytes at `offset` (all or nothing: ENOSPC if it does not fit).
    fn write_at(&mut self, open: MemOpen, len: usize, offset: u64, capacity: u64) -> Result<usize> {
        if !open.flags.writable() {
            return Err(Errno::EBADF.into());
        }
        let size = self.inodes.get(&open.ino).map_or(0, |i| i.size);
        let end = offset.saturating_add(len as u64);
        if end > size {
            self.resize(open.ino, end, capacity)?;
        }
        Ok(len)
    }

    fn open_file(&self, fd: Fd) -> Result<MemOpen> {
        self.fds
            .get(&fd.0)
            .copied()
            .ok_or_else(|| TargetError::errno(Errno::EBADF))
    }
}

impl Target for MemTarget {
    fn describe(&self) -> String {
        format!(
            "mem: in-memory fake, {} bytes",
            self.capacity_blocks * MEM_BLOCK_SIZE
        )
    }

    fn mkdir(&self, path: &Path, mode: u32) -> Result<()> {
        let p = norm(path);
        let mut s = self.state.lock();
        if s.kind_at(&p).is_some() {
            return Err(Errno::EEXIST.into());
        }
        s.check_parent(&p)?;
        let ino = s.new_inode(FileKind::Dir, mode);
        s.names.insert(p, ino);
        Ok(())
    }

    fn rmdir(&self, path: &Path) -> Result<()> {
        let p = norm(path);
        let mut s = self.state.lock();
        let (ino, kind) = match s.lookup(&p) {
            Some((ino, i)) => (ino, i.kind),
            None if is_root(&p) => return Err(Errno::EBUSY.into()),
            None => return Err(Errno::ENOENT.into()),
        };
        if kind != FileKind::Dir {
            return Err(Errno::ENOTDIR.into());
        }
        if s.has_children(&p) {
            return Err(Errno::ENOTEMPTY.into());
        }
        s.names.remove(&p);
        s.release(ino, 1, 0);
        Ok(())
    }

    fn open(&self, path: &Path, flags: OpenFlags, mode: u32) -> Result<Fd> {
        let p = norm(path);
        let mut s = self.state.lock();
        let ino = match s.lookup(&p).map(|(ino, i)| (ino, i.kind)) {
            Some(_) if flags.create && flags.exclusive => return Err(Errno::EEXIST.into()),
            Some((_, FileKind::Dir)) if flags.writable() => return Err(Errno::EISDIR.into()),
            Some((ino, _)) => {
                if flags.truncate && flags.writable() {
                    s.resize(ino, 0, self.capacity_blocks)?;
                }
                ino
            }
            None if is_root(&p) => return Err(Errno::EISDIR.into()),
            None if flags.create => {
                s.check_parent(&p)?;
                let ino = s.new_inode(FileKind::File, mode);
                s.names.insert(p, ino);
                ino
            }
            None => {
                s.check_parent(&p)?;
                return Err(Errno::ENOENT.into());
            }
        };
        let fd = s.next_fd;
        s.next_fd += 1;
        if let Some(i) = s.inodes.get_mut(&ino) {
            i.opens += 1;
        }
        s.fds.insert(
            fd,
            MemOpen {
                ino,
                offset: 0,
                flags,
            },
        );
        Ok(Fd(fd))
    }

    fn close(&self, fd: Fd) -> Result<()> {
        let mut s = self.state.lock();
        let open = s.fds.remove(&fd.0).ok_or(Errno::EBADF)?;
        s.release(open.ino, 0, 1);
        Ok(())
    }

    fn write(&self, fd: Fd, buf: &[u8]) -> Result<usize> {
        let mut s = self.state.lock();
        let open = s.open_file(fd)?;
        let size = s.inodes.get(&open.ino).map_or(0, |i| i.size);
        let offset = if open.flags.append { size } else { open.offset };
        let n = s.write_at(open, buf.len(), offset, self.capacity_blocks)?;
        if let Some(o) = s.fds.get_mut(&fd.0) {
            o.offset = offset + n as u64;
        }
        Ok(n)
    }

    fn pwrite(&self, fd: Fd, buf: &[u8], offset: u64) -> Result<usize> {
        let mut s = self.state.lock();
        let open = s.open_file(fd)?;
        s.write_at(open, buf.len(), offset, self.capacity_blocks)
    }

    fn read(&self, fd: Fd, buf: &mut [u8]) -> Result<usize> {
        let offset = self.state.lock().open_file(fd)?.offset;
        let n = self.pread(fd, buf, offset)?;
        if let Some(o) = self.state.lock().fds.get_mut(&fd.0) {
            o.offset += n as u64;
        }
        Ok(n)
    }

    fn pread(&self, fd: Fd, buf: &mut [u8], offset: u64) -> Result<usize> {
        let s = self.state.lock();
        let open = s.open_file(fd)?;
        if !open.flags.readable() {
            return Err(Errno::EBADF.into());
        }
        let size = s.inodes.get(&open.ino).map_or(0, |i| i.size);
        let n = size.saturating_sub(offset).min(buf.len() as u64) as usize;
        buf[..n].fill(0);
        Ok(n)
    }

    fn fsync(&self, fd: Fd) -> Result<()> {
        self.state.lock().open_file(fd).map(drop)
    }

    fn fdatasync(&self, fd: Fd) -> Result<()> {
        self.state.lock().open_file(fd).map(drop)
    }

    fn fstat(&self, fd: Fd) -> Result<FileStat> {
        let s = self.state.lock();
        let open = s.open_file(fd)?;
        let inode = s.inodes.get(&open.ino).ok_or(Errno::EBADF)?;
        Ok(MemState::stat_of(open.ino, inode))
    }

    fn ftruncate(&self, fd: Fd, len: u64) -> Result<()> {
        let mut s = self.state.lock();
        let open = s.open_file(fd)?;
        if !open.flags.writable() {
            return Err(Errno::EINVAL.into());
        }
        s.resize(open.ino, len, self.capacity_blocks)
    }

    fn fallocate(&self, fd: Fd, mode: FallocMode, offset: u64, len: u64) -> Result<()> {
        let mut s = self.state.lock();
        let open = s.open_file(fd)?;
        let size = s.inodes.get(&open.ino).map_or(0, |i| i.size);
        let end = offset.saturating_add(len);
        // Space is accounted by file size, so only size-extending modes change anything.
        match mode {
            FallocMode::Allocate | FallocMode::ZeroRange if end > size => {
                s.resize(open.ino, end, self.capacity_blocks)
            }
            _ => Ok(()),
        }
    }

    fn unlink(&self, path: &Path) -> Result<()> {
        let p = norm(path);
        let mut s = self.state.lock();
        let (ino, kind) = s
            .lookup(&p)
            .map(|(ino, i)| (ino, i.kind))
            .ok_or(Errno::ENOENT)?;
        if kind == FileKind::Dir {
            return Err(Errno::EISDIR.into());
        }
        s.names.remove(&p);
        s.release(ino, 1, 0);
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let (f, t) = (norm(from), norm(to));
        let mut s = self.state.lock();
        let (ino, kind) = s
            .lookup(&f)
            .map(|(ino, i)| (ino, i.kind))
            .ok_or(Errno::ENOENT)?;
        s.check_parent(&t)?;
        if kind == FileKind::Dir {
            // Directory renames would have to move every descendant name; workloads here
            // never rename directories.
            return Err(TargetError::with_detail(
                Errno::EXDEV,
                "MemTarget does not rename directories",
            ));
        }
        if let Some((old, old_kind)) = s.lookup(&t).map(|(i, n)| (i, n.kind)) {
            if old_kind == FileKind::Dir {
                return Err(Errno::EISDIR.into());
            }
            s.release(old, 1, 0);
        }
        s.names.remove(&f);
        s.names.insert(t, ino);
        Ok(())
    }

    fn link(&self, existing: &Path, new: &Path) -> Result<()> {
        let (e, n) = (norm(existing), norm(new));
        let mut s = self.state.lock();
        let (ino, kind) = s
            .lookup(&e)
            .map(|(ino, i)| (ino, i.kind))
            .ok_or(Errno::ENOENT)?;
        if kind == FileKind::Dir {
            return Err(Errno::EPERM.into());
        }
        if s.kind_at(&n).is_some() {
            return Err(Errno::EEXIST.into());
        }
        s.check_parent(&n)?;
        if let Some(i) = s.inodes.get_mut(&ino) {
            i.nlink += 1;
        }
        s.names.insert(n, ino);
        Ok(())
    }

    fn readdir(&self, path: &Path) -> Result<Vec<DirEntry>> {
        let p = norm(path);
        let s = self.state.lock();
        match s.kind_at(&p) {
            Some(FileKind::Dir) => {}
            Some(_) => return Err(Errno::ENOTDIR.into()),
            None => return Err(Errno::ENOENT.into()),
        }
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for (name, &ino) in &s.names {
            if name.parent() == Some(p.as_path()) && seen.insert(name.clone()) {
                let kind = s.inodes.get(&ino).map_or(FileKind::Other, |i| i.kind);
                let leaf = name.file_name().unwrap_or_default();
                out.push(DirEntry {
                    name: std::os::unix::ffi::OsStrExt::as_bytes(leaf).to_vec(),
                    ino,
                    kind,
                });
            }
        }
        Ok(out)
    }

    fn stat(&self, path: &Path) -> Result<FileStat> {
        let p = norm(path);
        let s = self.state.lock();
        if is_root(&p) {
            let root = MemInode {
                kind: FileKind::Dir,
                size: 0,
                nlink: 2,
                opens: 0,
                mode: 0o755,
            };
            return Ok(MemState::stat_of(1, &root));
        }
        let (ino, inode) = s.lookup(&p).ok_or(Errno::ENOENT)?;
        Ok(MemState::stat_of(ino, inode))
    }

    fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        let p = norm(path);
        let mut s = self.state.lock();
        let (ino, kind) = s
            .lookup(&p)
            .map(|(ino, i)| (ino, i.kind))
            .ok_or(Errno::ENOENT)?;
        if kind == FileKind::Dir {
            return Err(Errno::EISDIR.into());
        }
        s.resize(ino, len, self.capacity_blocks)
    }

    fn statfs(&self, path: &Path) -> Result<FsStat> {
        let p = norm(path);
        let s = self.state.lock();
        if s.kind_at(&p).is_none() {
            return Err(Errno::ENOENT.into());
        }
        let free = self.capacity_blocks.saturating_sub(s.used_blocks);
        Ok(FsStat {
            bsize: MEM_BLOCK_SIZE,
            blocks: self.capacity_blocks,
            bfree: free,
            bavail: free,
            files: 1 << 32,
            ffree: (1u64 << 32).saturating_sub(s.inodes.len() as u64),
            namelen: 255,
        })
    }

    fn sync(&self) -> Result<()> {
        Ok(())
    }

    fn syncfs(&self, path: &Path) -> Result<()> {
        let p = norm(path);
        if self.state.lock().kind_at(&p).is_none() {
            return Err(Errno::ENOENT.into());
        }
        Ok(())
    }

    fn lseek(&self, fd: Fd, offset: u64) -> Result<u64> {
        let mut s = self.state.lock();
        let o = s.fds.get_mut(&fd.0).ok_or(Errno::EBADF)?;
        o.offset = offset;
        Ok(offset)
    }

    fn preadv(&self, fd: Fd, bufs: &mut [IoSliceMut<'_>], offset: u64) -> Result<usize> {
        let mut done = 0usize;
        for b in bufs.iter_mut() {
            let n = self.pread(fd, b, offset + done as u64)?;
            done += n;
            if n < b.len() {
                break;
            }
        }
        Ok(done)
    }

    fn pwritev(&self, fd: Fd, bufs: &[IoSlice<'_>], offset: u64) -> Result<usize> {
        let len: usize = bufs.iter().map(|b| b.len()).sum();
        let mut s = self.state.lock();
        let open = s.open_file(fd)?;
        s.write_at(open, len, offset, self.capacity_blocks)
    }

    fn io_queue(self: Arc<Self>, _kind: QueueKind, depth: u32) -> Result<Box<dyn IoQueue>> {
        Ok(Box::new(ThreadedQueue::new(self, depth)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> &Path {
        Path::new(s)
    }

    #[test]
    fn mem_target_namespace_errors_match_posix() {
        let t = MemTarget::new(1 << 20);
        t.mkdir(p("/a"), 0o777).unwrap();
        assert_eq!(t.mkdir(p("/a/"), 0o777).unwrap_err().errno, Errno::EEXIST);
        assert_eq!(t.mkdir(p("/x/y"), 0o777).unwrap_err().errno, Errno::ENOENT);
        let fd = t
            .open(p("/a//f"), OpenFlags::create_truncate(), 0o666)
            .unwrap();
        assert_eq!(t.write(fd, &[0; 10]).unwrap(), 10);
        t.close(fd).unwrap();
        assert_eq!(t.stat(p("/a/f")).unwrap().size, 10);
        assert_eq!(
            t.open(p("/a/f/g"), OpenFlags::create_truncate(), 0o666)
                .unwrap_err()
                .errno,
            Errno::ENOTDIR
        );
        assert_eq!(
            t.open(p("/a/missing"), OpenFlags::read_only(), 0)
                .unwrap_err()
                .errno,
            Errno::ENOENT
        );
        assert_eq!(t.rmdir(p("/a")).unwrap_err().errno, Errno::ENOTEMPTY);
        assert_eq!(t.unlink(p("/a")).unwrap_err().errno, Errno::EISDIR);
        let names: Vec<_> = t
            .readdir(p("/a"))
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, vec![b"f".to_vec()]);
        t.unlink(p("/a/f")).unwrap();
        t.rmdir(p("/a")).unwrap();
        assert_eq!(t.stat(p("/a")).unwrap_err().errno, Errno::ENOENT);
    }

    #[test]
    fn mem_target_statfs_and_enospc_follow_file_sizes() {
        let t = MemTarget::new(4 * MEM_BLOCK_SIZE);
        t.mkdir(p("/d"), 0o777).unwrap();
        assert_eq!(t.statfs(p("/d")).unwrap().bavail, 4);
        let fd = t
            .open(p("/d/f"), OpenFlags::create_truncate(), 0o666)
            .unwrap();
        t.write(fd, &[0; 5000]).unwrap();
        assert_eq!(t.statfs(p("/d")).unwrap().bavail, 2);
        assert_eq!(t.write(fd, &[0; 12000]).unwrap_err().errno, Errno::ENOSPC);
        t.close(fd).unwrap();
        t.unlink(p("/d/f")).unwrap();
        assert_eq!(t.statfs(p("/d")).unwrap().bavail, 4);
    }

    #[test]
    fn recording_logs_calls_with_paths_and_advances_the_clock() {
        let clock = Arc::new(VirtualClock::new(0));
        let t = RecordingTarget::in_memory(1 << 20)
            .with_clock(clock.clone())
            .with_cost(Op::Fsync, 100)
            .with_cost(Op::Mkdir, 1);
        t.mkdir(p("/d"), 0o777).unwrap();
        let fd = t
            .open(p("/d/f"), OpenFlags::create_truncate(), 0o666)
            .unwrap();
        t.fsync(fd).unwrap();
        t.close(fd).unwrap();
        assert!(t.mkdir(p("/d"), 0o777).is_err());
        assert_eq!(clock.micros(), 102);
        let recs = t.records();
        assert_eq!(recs.len(), 5);
        assert_eq!(
            recs[2].call,
            Call::Fsync {
                path: "/d/f".into()
            }
        );
        assert_eq!(recs[2].at_us, 1);
        assert_eq!(
            recs[3].call,
            Call::Close {
                path: "/d/f".into()
            }
        );
        assert_eq!(recs[4].error, Some(Errno::EEXIST));
    }
}
