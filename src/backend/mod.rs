//! The VFS-like surface every workload sees.
//!
//! A workload engine (fs_mark loop, fio job, sync probe) calls only this trait, so the same
//! engine code runs against a real kernel filesystem ([`host::HostTarget`]) and against labfs
//! (`LabTarget`). That is what makes a labfs-vs-kernel comparison honest: the only thing that
//! changes between the two runs is the implementation behind these calls.
//!
//! The calls mirror the POSIX system calls they stand for, errno included: a workload that
//! must tolerate `EEXIST` from `mkdir` (fs_mark does) matches on [`Errno::EEXIST`] whatever the
//! target. Paths are absolute or relative paths in the target's namespace; for labfs that is
//! the filesystem's own tree (`/bench/00/...`), for the host it is the real one.

pub mod aio;
pub mod host;
pub mod lab;
pub mod open;
pub mod queue;

use std::fmt;
use std::io::{IoSlice, IoSliceMut};
use std::path::Path;
use std::sync::Arc;

use queue::{IoQueue, QueueKind};

pub use nix::errno::Errno;

pub use crate::fs::vfs::{DirEntry, FallocMode, FileKind, FileStat, FsStat};

/// Result of a target call.
pub type Result<T> = std::result::Result<T, TargetError>;

/// A failed target call: the errno a kernel would return, plus optional detail.
///
/// The detail carries what an errno cannot say, e.g. labfs's typed CRC error naming the
/// structure and block ("inode 131 CRC mismatch at block 17: expected 0x..., found 0x...").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetError {
    /// The errno a kernel would have returned for this failure.
    pub errno: Errno,
    /// Extra words from the target, shown after the errno text.
    pub detail: Option<String>,
}

impl TargetError {
    /// An error that is just an errno.
    pub fn errno(errno: Errno) -> Self {
        TargetError {
            errno,
            detail: None,
        }
    }

    /// An errno plus words saying what went wrong.
    pub fn with_detail(errno: Errno, detail: impl Into<String>) -> Self {
        TargetError {
            errno,
            detail: Some(detail.into()),
        }
    }
}

impl From<Errno> for TargetError {
    fn from(errno: Errno) -> Self {
        TargetError::errno(errno)
    }
}

impl fmt::Display for TargetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.detail {
            Some(d) => write!(f, "{} ({d})", self.errno.desc()),
            None => f.write_str(self.errno.desc()),
        }
    }
}

impl std::error::Error for TargetError {}

/// An open file on a target. Opaque: only the target that issued it knows what it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fd(pub u64);

/// How a file is opened; the subset of `open(2)` flags workloads use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OpenFlags {
    /// O_RDONLY / O_WRONLY / O_RDWR.
    pub access: Access,
    /// O_CREAT.
    pub create: bool,
    /// O_EXCL (with `create`).
    pub exclusive: bool,
    /// O_TRUNC.
    pub truncate: bool,
    /// O_APPEND.
    pub append: bool,
    /// O_DIRECT: bypass the page cache.
    pub direct: bool,
    /// O_SYNC / O_DSYNC.
    pub sync: SyncMode,
}

/// Access mode of an open file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Access {
    /// O_RDONLY.
    #[default]
    Read,
    /// O_WRONLY.
    Write,
    /// O_RDWR.
    ReadWrite,
}

/// Synchronous-write mode of an open file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SyncMode {
    /// Ordinary buffered writes.
    #[default]
    None,
    /// O_DSYNC: each write is followed by the equivalent of fdatasync.
    Data,
    /// O_SYNC: each write is followed by the equivalent of fsync.
    Full,
}

impl OpenFlags {
    /// O_RDONLY.
    pub fn read_only() -> Self {
        OpenFlags::default()
    }

    /// O_CREAT|O_RDWR|O_TRUNC, the flags fs_mark creates its files with.
    pub fn create_truncate() -> Self {
        OpenFlags {
            access: Access::ReadWrite,
            create: true,
            truncate: true,
            ..OpenFlags::default()
        }
    }

    /// Whether writes are allowed through this open.
    pub fn writable(&self) -> bool {
        !matches!(self.access, Access::Read)
    }

    /// Whether reads are allowed through this open.
    pub fn readable(&self) -> bool {
        !matches!(self.access, Access::Write)
    }
}

/// The VFS-like surface a workload runs against.
///
/// Every method may be called from many threads at once. Methods mirror the system call of
/// the same name; `Fd`s are valid only on the target that issued them.
pub trait Target: Send + Sync {
    /// One line naming the backend, device and options, for report headers.
    fn describe(&self) -> String;
    /// mkdir(2).
    fn mkdir(&self, path: &Path, mode: u32) -> Result<()>;
    /// rmdir(2).
    fn rmdir(&self, path: &Path) -> Result<()>;
    /// open(2); `mode` applies when the file is created.
    fn open(&self, path: &Path, flags: OpenFlags, mode: u32) -> Result<Fd>;
    /// close(2).
    fn close(&self, fd: Fd) -> Result<()>;
    /// write(2) at the file offset, advancing it.
    fn write(&self, fd: Fd, buf: &[u8]) -> Result<usize>;
    /// pwrite(2).
    fn pwrite(&self, fd: Fd, buf: &[u8], offset: u64) -> Result<usize>;
    /// read(2) at the file offset, advancing it.
    fn read(&self, fd: Fd, buf: &mut [u8]) -> Result<usize>;
    /// pread(2).
    fn pread(&self, fd: Fd, buf: &mut [u8], offset: u64) -> Result<usize>;
    /// fsync(2).
    fn fsync(&self, fd: Fd) -> Result<()>;
    /// fdatasync(2).
    fn fdatasync(&self, fd: Fd) -> Result<()>;
    /// fstat(2).
    fn fstat(&self, fd: Fd) -> Result<FileStat>;
    /// ftruncate(2).
    fn ftruncate(&self, fd: Fd, len: u64) -> Result<()>;
    /// fallocate(2).
    fn fallocate(&self, fd: Fd, mode: FallocMode, offset: u64, len: u64) -> Result<()>;
    /// unlink(2).
    fn unlink(&self, path: &Path) -> Result<()>;
    /// rename(2).
    fn rename(&self, from: &Path, to: &Path) -> Result<()>;
    /// link(2).
    fn link(&self, existing: &Path, new: &Path) -> Result<()>;
    /// All entries of a directory except `.` and `..`, in the filesystem's order.
    fn readdir(&self, path: &Path) -> Result<Vec<DirEntry>>;
    /// stat(2).
    fn stat(&self, path: &Path) -> Result<FileStat>;
    /// truncate(2).
    fn truncate(&self, path: &Path, len: u64) -> Result<()>;
    /// statfs(2) of the filesystem holding `path`.
    fn statfs(&self, path: &Path) -> Result<FsStat>;
    /// sync(2): every filesystem the target can reach.
    fn sync(&self) -> Result<()>;
    /// syncfs(2) of the filesystem holding `path`.
    fn syncfs(&self, path: &Path) -> Result<()>;
    /// lseek(2) with SEEK_SET: move the file offset of `fd` to `offset`.
    fn lseek(&self, fd: Fd, offset: u64) -> Result<u64>;
    /// preadv(2): read into `bufs` in order, starting at `offset`.
    fn preadv(&self, fd: Fd, bufs: &mut [IoSliceMut<'_>], offset: u64) -> Result<usize>;
    /// pwritev(2): write `bufs` in order, starting at `offset`.
    fn pwritev(&self, fd: Fd, bufs: &[IoSlice<'_>], offset: u64) -> Result<usize>;
    /// A queue keeping up to `depth` requests in flight (see [`queue`]): Linux AIO on the
    /// host, worker threads on labfs.
    fn io_queue(self: Arc<Self>, kind: QueueKind, depth: u32) -> Result<Box<dyn IoQueue>>;
}

/// Create `path`'s missing ancestors (not `path` itself), like `mkdir -p` of its parent.
/// labfs starts empty, so a workload pointed at `/mnt/x` there needs `/mnt` first.
pub fn mkdir_parents(target: &dyn Target, path: &Path) -> Result<()> {
    path.parent()
        .map_or(Ok(()), |parent| mkdir_all(target, parent))
}

/// Create `path` and its missing ancestors, like `mkdir -p`; a directory that exists is
/// fine.
pub fn mkdir_all(target: &dyn Target, path: &Path) -> Result<()> {
    let mut ancestors: Vec<&Path> = path
        .ancestors()
        .filter(|p| !p.as_os_str().is_empty())
        .collect();
    ancestors.reverse();
    for dir in ancestors {
        match target.mkdir(dir, 0o755) {
            Ok(()) => {}
            Err(e) if e.errno == Errno::EEXIST => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::MemTarget;

    #[test]
    fn mkdir_all_makes_the_path_and_its_parents_and_accepts_what_exists() {
        let t = MemTarget::new(1 << 20);
        mkdir_parents(&t, Path::new("/a/b/c")).unwrap();
        assert!(t.stat(Path::new("/a/b")).is_ok());
        assert_eq!(
            t.stat(Path::new("/a/b/c")).unwrap_err().errno,
            Errno::ENOENT,
            "mkdir_parents leaves the path itself alone"
        );
        mkdir_all(&t, Path::new("/a/b/c")).unwrap();
        assert!(t.stat(Path::new("/a/b/c")).is_ok());
        mkdir_all(&t, Path::new("/a/b/c")).unwrap();
        assert!(mkdir_all(&t, Path::new("relative/dir")).is_ok());
        assert!(t.stat(Path::new("relative/dir")).is_ok());
    }
}
