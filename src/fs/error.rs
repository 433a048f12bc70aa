//! labfs's error type: what went wrong, with the structure and block it went wrong in.
//!
//! Corruption is never a panic: a block that fails its CRC, magic, self-address, UUID or
//! owner check becomes an [`FsError`] naming the structure and block, the operation that hit
//! it fails, and every other object stays usable. [`FsError::errno`] maps each variant onto
//! the errno a kernel filesystem would return, for the `Target` surface.

use nix::errno::Errno;
use thiserror::Error;

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
    /// The device failed an I/O.
    #[error("device I/O error: {0}")]
    Io(String),
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
    /// The image is not a labfs filesystem or was made with incompatible geometry.
    #[error("not a labfs filesystem: {0}")]
    BadSuperblock(String),
}

impl FsError {
    /// The errno a kernel filesystem would return for this error.
    pub fn errno(&self) -> Errno {
        match self {
            // XFS returns EFSBADCRC (EBADMSG) and EFSCORRUPTED (EUCLEAN).
            FsError::Crc { .. } => Errno::EBADMSG,
            FsError::Corrupt { .. } | FsError::BadSuperblock(_) => Errno::EUCLEAN,
            FsError::Io(_) | FsError::Shutdown => Errno::EIO,
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
