//! The VFS-level types labfs defines and every layer above it shares: what a directory entry
//! is, the kinds of files, what `stat(2)` and `statfs(2)` return, `fallocate(2)` modes. The backend layer re-exports them, so a
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

/// What `stat(2)` returns, in the units the kernel uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStat {
    /// Inode number.
    pub ino: u64,
    /// Kind of file.
    pub kind: FileKind,
    /// Permission bits and type, as st_mode.
    pub mode: u32,
    /// Link count.
    pub nlink: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Size in bytes.
    pub size: u64,
    /// Space used, in 512-byte units (st_blocks).
    pub blocks: u64,
    /// Preferred I/O size (st_blksize).
    pub blksize: u32,
    /// Last access, nanoseconds since the epoch.
    pub atime_ns: i64,
    /// Last data change, nanoseconds since the epoch.
    pub mtime_ns: i64,
    /// Last inode change, nanoseconds since the epoch.
    pub ctime_ns: i64,
}

/// What `statfs(2)` returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FsStat {
    /// Block size of the counts below (f_bsize).
    pub bsize: u64,
    /// Total blocks (f_blocks).
    pub blocks: u64,
    /// Free blocks (f_bfree).
    pub bfree: u64,
    /// Free blocks available to unprivileged users (f_bavail).
    pub bavail: u64,
    /// Total inodes (f_files).
    pub files: u64,
    /// Free inodes (f_ffree).
    pub ffree: u64,
    /// Longest name (f_namelen).
    pub namelen: u64,
}
