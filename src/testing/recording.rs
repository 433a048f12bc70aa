//! [`RecordingTarget`]: a [`Target`] that logs every call.
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

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::ThreadId;

use nix::errno::Errno;
use parking_lot::Mutex;

use super::{MemTarget, VirtualClock};
use crate::backend::{DirEntry, FallocMode, Fd, FileStat, FsStat, OpenFlags, Result, Target};

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
            | Call::Syncfs { path } => Some(path),
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> &Path {
        Path::new(s)
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
