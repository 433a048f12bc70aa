//! The VFS-level types labfs defines and every layer above it shares: what a directory entry
//! is, the kinds of files, `fallocate(2)` modes. The backend layer re-exports them, so a
//! workload sees the same types whether it runs on labfs or on the host.

/// Kind of a directory entry or inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// Regular file.
    File,
    /// Directory.
    Dir,
    /// Symbolic link.
    Symlink,
    /// Anything else (device, fifo, socket).
    Other,
}

/// One directory entry as readdir returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// Entry name (bytes; need not be UTF-8).
    pub name: Vec<u8>,
    /// Inode number.
    pub ino: u64,
    /// Kind, when the filesystem records it (ftype).
    pub kind: FileKind,
}

/// `fallocate(2)` modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FallocMode {
    /// Allocate and extend the size (mode 0).
    #[default]
    Allocate,
    /// Allocate without changing the size (FALLOC_FL_KEEP_SIZE).
    KeepSize,
    /// Deallocate a range, keeping the size (FALLOC_FL_PUNCH_HOLE|FALLOC_FL_KEEP_SIZE).
    PunchHole,
    /// Zero a range (FALLOC_FL_ZERO_RANGE).
    ZeroRange,
}
