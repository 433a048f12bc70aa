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

/// Who a new inode belongs to: the creating process's fsuid and fsgid.
///
/// In-process callers (the Target surface, tests) create as root; a FUSE mount passes the
/// requesting process's ids, as the kernel's `inode_init_owner` does for a local filesystem.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Owner {
    /// Owning user.
    pub uid: u32,
    /// Owning group (replaced by the directory's group under a set-group-ID directory).
    pub gid: u32,
}

/// `renameat2(2)` behaviours labfs implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RenameMode {
    /// Plain rename(2): replace whatever the new name names.
    #[default]
    Replace,
    /// RENAME_NOREPLACE: fail with EEXIST if the new name exists.
    NoReplace,
}
