//! labfs's error type: what went wrong, with the structure and block it went wrong in.
//!
//! Corruption is never a panic: a block that fails its CRC, magic, self-address, UUID or
//! owner check becomes an [`FsError`] naming the structure and block, the operation that hit
//! it fails, and every other object stays usable. [`FsError::errno`] maps each variant onto
//! the errno a kernel filesystem would return, for the `Target` surface.

use std::fmt;

use nix::errno::Errno;
use thiserror::Error;

use crate::fs::dev::DevError;
use crate::fs::dev::signature::NotBlank;
use crate::fs::format::BlockKind;

/// Result of a labfs operation.
pub type FsResult<T> = Result<T, FsError>;

/// Everything a labfs operation can fail with.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FsError {
    /// A metadata block's stored CRC does not match its contents.
    #[error(
        "{kind} CRC mismatch at daddr {daddr}: stored {found:#010x}, computed {expected:#010x}"
    )]
    Crc {
        /// The structure that failed.
        kind: BlockKind,
        /// Its address in 512-byte sectors.
        daddr: u64,
        /// The CRC computed over the contents.
        expected: u32,
        /// The CRC stored in the block.
        found: u32,
    },
    /// A metadata block's self-description is wrong (magic, address, UUID, owner, counts).
    #[error("{kind} corrupt at daddr {daddr}: {what}")]
    Corrupt {
        /// The structure that failed.
        kind: BlockKind,
        /// Its address in 512-byte sectors.
        daddr: u64,
        /// Which check failed, e.g. "bad magic 0x00000000".
        what: String,
    },
    /// The device failed an I/O. The message repeats the device error's text (callers print
    /// errors with `Display` alone: fsck findings, errno details), and `source` hands the
    /// [`DevError`] itself to whoever walks the chain, as [`DevError::Io`] does with its
    /// system error. Equality compares the `DevError` by variant and message (see its
    /// `PartialEq`), which keeps `FsError` `Eq` for tests that compare whole errors.
    #[error("device I/O error: {what}{}: {source}", at_daddr(*.daddr))]
    Io {
        /// What labfs was doing.
        what: IoOp,
        /// The first sector of the request, where it concerns one structure or data run.
        daddr: Option<u64>,
        /// The device's own error (request, device, system error).
        #[source]
        source: DevError,
    },
    /// No free blocks or inodes left.
    #[error("no space left on device")]
    NoSpace,
    /// A path component does not exist.
    #[error("no such file or directory")]
    NotFound,
    /// The name already exists.
    #[error("file exists")]
    Exists,
    /// A path component used as a directory is not one.
    #[error("not a directory")]
    NotDir,
    /// A directory was used where a file is required.
    #[error("is a directory")]
    IsDir,
    /// rmdir or rename over a non-empty directory.
    #[error("directory not empty")]
    NotEmpty,
    /// A name longer than 255 bytes.
    #[error("file name too long")]
    NameTooLong,
    /// The file would exceed the largest size labfs supports.
    #[error("file too large")]
    TooBig,
    /// Too many links to one inode.
    #[error("too many links")]
    TooManyLinks,
    /// A bad argument (the text says which).
    #[error("invalid argument: {0}")]
    Invalid(&'static str),
    /// An fd that is not open, or not open for this access.
    #[error("bad file descriptor")]
    BadFd,
    /// The filesystem shut itself down after a failed metadata write.
    #[error("filesystem is shut down")]
    Shutdown,
    /// Unmount of a filesystem that had shut down: nothing was written, the reason says why
    /// it went down.
    #[error("the filesystem shut down earlier ({reason}); nothing more was written")]
    ShutDownBeforeUnmount {
        /// The first reason it shut down.
        reason: ShutdownReason,
    },
    /// The image is not a labfs filesystem or was made with incompatible geometry.
    #[error("not a labfs filesystem: {0}")]
    BadSuperblock(SbProblem),
}

/// " at daddr N" when an I/O error concerns one address.
fn at_daddr(daddr: Option<u64>) -> String {
    daddr.map(|d| format!(" at daddr {d}")).unwrap_or_default()
}

/// The operation an [`FsError::Io`] failed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoOp {
    /// Reading the primary superblock at mount.
    ReadSuperblock,
    /// Reading the device's first bytes to see whether it is blank.
    ProbeBlank,
    /// Reading a metadata block into the buffer cache.
    ReadMeta(BlockKind),
    /// Writing a dirty metadata buffer to its home location.
    WriteHome(BlockKind),
    /// Reading a file data block.
    ReadData,
    /// Writing a run of file data blocks.
    WriteData,
    /// Flushing the device's volatile cache to make metadata durable.
    FlushDevice,
    /// Writing a log record.
    WriteLog,
    /// Reading the log region at mount.
    ReadLog,
    /// Writing a block replayed from the log home.
    WriteReplayed,
    /// Writing zeros over the log region at mkfs.
    ZeroLog,
}

impl fmt::Display for IoOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IoOp::ReadSuperblock => f.write_str("reading the superblock"),
            IoOp::ProbeBlank => f.write_str("reading the start of the device"),
            IoOp::ReadMeta(kind) => write!(f, "reading {kind}"),
            IoOp::WriteHome(kind) => write!(f, "writing {kind} home"),
            IoOp::ReadData => f.write_str("reading a data block"),
            IoOp::WriteData => f.write_str("writing data blocks"),
            IoOp::FlushDevice => f.write_str("flushing the device"),
            IoOp::WriteLog => f.write_str("writing a log record"),
            IoOp::ReadLog => f.write_str("reading the log"),
            IoOp::WriteReplayed => f.write_str("writing a block replayed from the log"),
            IoOp::ZeroLog => f.write_str("zeroing the log"),
        }
    }
}

/// A CRC that did not verify: what the contents give and what the block says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CrcMismatch {
    /// CRC computed over the contents.
    pub expected: u32,
    /// CRC stored in the structure.
    pub found: u32,
}

/// Why a device does not hold a labfs filesystem labfs can mount.
///
/// A superblock whose CRC fails is [`FsError::Crc`] (kind `Superblock`, daddr 0), like any
/// other block: XFS's superblock verifier returns EFSBADCRC for it too, and fsck places it by
/// kind and address. A superblock that verifies but whose fields contradict each other is
/// [`FsError::Corrupt`]: that is damage, not a foreign or unfinished image.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SbProblem {
    /// Sector 0 is all zeros: the device was never formatted.
    #[error("the device is blank (no superblock)")]
    Blank,
    /// Sector 0 does not start with the XFS/labfs magic.
    #[error("bad magic {found:#010x}")]
    BadMagic {
        /// The first four bytes, big-endian.
        found: u32,
    },
    /// A superblock version this labfs does not read.
    #[error("unsupported version {version}")]
    UnsupportedVersion {
        /// The version field.
        version: u16,
    },
    /// Block, sector or inode sizes other than labfs's fixed ones.
    #[error("unsupported geometry: block {block}, sector {sector}, inode {inode}")]
    UnsupportedGeometry {
        /// Block size in bytes.
        block: u32,
        /// Sector size in bytes.
        sector: u16,
        /// Inode size in bytes.
        inode: u16,
    },
    /// The filesystem is larger than the device it is on (a truncated image).
    #[error("filesystem of {dblocks} blocks does not fit the {dev_bytes}-byte device")]
    DoesNotFit {
        /// Filesystem size in blocks.
        dblocks: u64,
        /// Device size in bytes.
        dev_bytes: u64,
    },
    /// The superblock still carries mkfs's in-progress flag.
    #[error("mkfs did not finish on this image")]
    MkfsUnfinished,
    /// Asked to format only a blank device, and it was not blank: it was left alone.
    #[error(
        "the device is not blank: {found}; it was left alone (format it explicitly, \
         --mkfs, if its data may go; reading it as labfs said: {why})"
    )]
    NotBlank {
        /// What the device holds.
        found: NotBlank,
        /// Why it did not mount as labfs.
        why: Box<SbProblem>,
    },
}

/// Why a filesystem shut down (the first reason; later ones are dropped).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ShutdownReason {
    /// Metadata could not be made durable: writing a buffer home or flushing the device
    /// failed (the [`FsError::Io`] says which).
    #[error("{0}")]
    MetadataIo(Box<FsError>),
    /// Code reached a state it cannot back out of; the words say which.
    #[error("{0}")]
    Aborted(&'static str),
}

impl From<&'static str> for ShutdownReason {
    fn from(why: &'static str) -> ShutdownReason {
        ShutdownReason::Aborted(why)
    }
}

impl FsError {
    /// The error for a block of `kind` at `daddr` whose CRC did not verify: the one place a
    /// [`CrcMismatch`] becomes an [`FsError`].
    pub fn crc(kind: BlockKind, daddr: u64, m: CrcMismatch) -> FsError {
        FsError::Crc {
            kind,
            daddr,
            expected: m.expected,
            found: m.found,
        }
    }

    /// An I/O error of the device during `what`, at `daddr` if it concerns one address.
    pub fn io(what: IoOp, daddr: Option<u64>, source: DevError) -> FsError {
        FsError::Io {
            what,
            daddr,
            source,
        }
    }

    /// The errno a kernel filesystem would return for this error.
    pub fn errno(&self) -> Errno {
        match self {
            // XFS returns EFSBADCRC (EBADMSG) and EFSCORRUPTED (EUCLEAN).
            FsError::Crc { .. } => Errno::EBADMSG,
            FsError::Corrupt { .. } | FsError::BadSuperblock(_) => Errno::EUCLEAN,
            FsError::Io { .. } | FsError::Shutdown | FsError::ShutDownBeforeUnmount { .. } => {
                Errno::EIO
            }
            FsError::NoSpace => Errno::ENOSPC,
            FsError::NotFound => Errno::ENOENT,
            FsError::Exists => Errno::EEXIST,
            FsError::NotDir => Errno::ENOTDIR,
            FsError::IsDir => Errno::EISDIR,
            FsError::NotEmpty => Errno::ENOTEMPTY,
            FsError::NameTooLong => Errno::ENAMETOOLONG,
            FsError::TooBig => Errno::EFBIG,
            FsError::TooManyLinks => Errno::EMLINK,
            FsError::Invalid(_) => Errno::EINVAL,
            FsError::BadFd => Errno::EBADF,
        }
    }
}
