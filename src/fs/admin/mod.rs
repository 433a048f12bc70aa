//! What the `labfs` admin tool does to an image, as xfsprogs does it for XFS.
//!
//! | xfsprogs | labfs | here |
//! |---|---|---|
//! | `mkfs.xfs [-f]` | `labfs mkfs IMAGE [-f] [-o ...]` | [`mkfs`]: refuse to format over a filesystem or data without force, then make |
//! | `xfs_repair -n` | `labfs check IMAGE` | [`check`]: fsck of an image, read-only, one finding per problem |
//! | `xfs_info` | `labfs info IMAGE` | [`info`]: geometry, counters and the state of every AG |
//! | `xfs_db -c print` | `labfs print IMAGE WHAT` | [`print`](mod@print): any metadata structure, field by field, by address or path |
//!
//! The binary only parses arguments and prints what these functions return. Everything here
//! that looks at an image opens it read-only ([`image::Image::open`]), so `check`, `info` and
//! `print` work on images the user may only read and can never change one; only `mkfs`
//! writes.
//!
//! Inspection reads structures straight from the device rather than through a mount wherever
//! it can, because the images people inspect are the damaged ones: a mount refuses an image
//! whose AGF fails its CRC, but `labfs print IMAGE agf 1` must still show that AGF field by
//! field, with its CRC marked bad, and `labfs check` must still name it. When the primary
//! superblock is unreadable, the geometry comes from the first intact secondary copy, found
//! by scanning the device as `xfs_repair` does ([`image::Image::geometry`]).

pub mod check;
pub mod decode;
pub mod image;
pub mod info;
pub mod mkfs;
pub mod print;

use std::path::PathBuf;

use thiserror::Error;

use crate::fs::dev::DevError;
use crate::fs::error::FsError;

/// Why an admin command could not do its work at all (as opposed to problems it found).
#[derive(Debug, Error)]
pub enum AdminError {
    /// The image could not be opened.
    #[error(transparent)]
    Open(DevError),
    /// Reading the image failed.
    #[error(transparent)]
    Io(DevError),
    /// No intact superblock anywhere: the image does not hold a labfs filesystem.
    #[error("{}: {}", path.display(), not_labfs(reason))]
    NotLabfs {
        /// The image.
        path: PathBuf,
        /// What the first sector holds instead, or why the primary superblock failed.
        reason: FsError,
    },
    /// An address beyond the filesystem (an AG, inode or block that does not exist).
    #[error("{what} is beyond the filesystem ({limit})")]
    OutOfRange {
        /// What was asked for, e.g. "AG 9".
        what: String,
        /// What exists, e.g. "it has 4 AGs".
        limit: String,
    },
    /// Mounting the image (to resolve a path) failed.
    #[error("mounting {path} to resolve a path: {source}")]
    Mount {
        /// The image.
        path: PathBuf,
        /// Why.
        source: FsError,
    },
    /// A path does not resolve.
    #[error("{path}: {source}")]
    Path {
        /// The path as given.
        path: String,
        /// Why it does not resolve.
        source: FsError,
    },
    /// mkfs refused or failed; the reason says which.
    #[error(transparent)]
    Mkfs(#[from] mkfs::MkfsError),
}

/// Why an image is not a labfs, in one phrase that says so once.
fn not_labfs(reason: &FsError) -> String {
    match reason {
        FsError::BadSuperblock(_) => reason.to_string(),
        _ => format!("not a labfs filesystem ({reason})"),
    }
}
