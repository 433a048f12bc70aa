//! `labfs mkfs IMAGE`: make a labfs filesystem on an image file or block device, refusing
//! to format over anything that is already there unless forced (`mkfs.xfs -f`).
//!
//! Without force, the image is formatted only if its first MiB is all zeros and it holds no
//! labfs anywhere (a labfs whose primary superblock is damaged still has secondary copies,
//! and is still somebody's filesystem). Anything else is refused with one line saying what
//! was found.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use thiserror::Error;

use super::AdminError;
use super::image::Image;
use crate::fs::dev::file::{FileOptions, NewFiles};
use crate::fs::dev::{BlockDev, DevError, FileDev};
use crate::fs::error::FsError;
use crate::fs::format::Daddr;
use crate::fs::mkfs::{mkfs, plan};
use crate::fs::options::Options;

/// Bytes at the start of a device that must be zero for it to count as unused: the places
/// where every common filesystem, partition table and swap signature lives.
pub const PROBED_BYTES: u64 = 1 << 20;

/// What an image already holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Existing {
    /// Nothing: the probed bytes are all zero and there is no labfs.
    Nothing,
    /// A labfs filesystem (its superblock copy at `agno` verifies).
    Labfs {
        /// The AG whose superblock copy was found (0: the primary).
        agno: u32,
        /// Its label.
        label: String,
    },
    /// Non-zero bytes that are not a labfs.
    Data {
        /// The first non-zero byte's offset.
        first_nonzero: u64,
    },
}

impl fmt::Display for Existing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Existing::Nothing => f.write_str("nothing"),
            Existing::Labfs { agno: 0, label } => {
                write!(f, "a labfs filesystem (label \"{label}\")")
            }
            Existing::Labfs { agno, label } => write!(
                f,
                "a labfs filesystem whose primary superblock is damaged (AG {agno}'s copy \
                 is intact, label \"{label}\")"
            ),
            Existing::Data { first_nonzero } => write!(
                f,
                "data that is not a labfs filesystem (byte {first_nonzero} is not zero)"
            ),
        }
    }
}

/// Why `labfs mkfs` did not make a filesystem.
#[derive(Debug, Error)]
pub enum MkfsError {
    /// The image holds something and force was not given.
    #[error("{path} already holds {found}; use -f to overwrite it")]
    Refused {
        /// The image.
        path: PathBuf,
        /// What it holds.
        found: Existing,
    },
    /// The image does not exist and no size was given to create it.
    #[error("{0}: no such file (give -s SIZE to create it)")]
    Missing(PathBuf),
    /// The image could not be opened or created.
    #[error(transparent)]
    Open(DevError),
    /// Reading the image to see what it holds failed.
    #[error(transparent)]
    Probe(Box<AdminError>),
    /// mkfs itself failed (too small a device, an I/O error).
    #[error("mkfs on {path}: {source}")]
    Make {
        /// The image.
        path: PathBuf,
        /// Why.
        source: FsError,
    },
}

impl MkfsError {
    /// Making the filesystem on `path` failed.
    fn making(path: &Path, source: FsError) -> MkfsError {
        MkfsError::Make {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// What `img` holds.
pub fn probe(img: &Image) -> Result<Existing, AdminError> {
    match img.geometry() {
        Ok(located) => {
            let end = located
                .sb
                .fname
                .iter()
                .position(|&c| c == 0)
                .unwrap_or(located.sb.fname.len());
            return Ok(Existing::Labfs {
                agno: located.agno,
                label: String::from_utf8_lossy(&located.sb.fname[..end]).into_owned(),
            });
        }
        Err(AdminError::NotLabfs { .. }) => {}
        Err(e) => return Err(e),
    }
    let len = img.dev().size().min(PROBED_BYTES) as usize;
    let head = img.read(Daddr(0), len)?;
    Ok(match head.iter().position(|&b| b != 0) {
        None => Existing::Nothing,
        Some(i) => Existing::Data {
            first_nonzero: i as u64,
        },
    })
}

/// Make a labfs on `path` with `opts`; `size` creates or extends a regular file first.
/// Without `force`, an image that holds anything is refused. Returns the device made on.
///
/// A refused or failed mkfs leaves the path as it found it: the geometry is checked before
/// a file is created or extended (mkfs.xfs also validates before it writes), and a file
/// this call created is removed if making the filesystem on it fails.
pub fn make(
    path: &Path,
    size: Option<u64>,
    opts: &Options,
    force: bool,
) -> Result<Arc<dyn BlockDev>, MkfsError> {
    match size {
        None if !path.exists() => return Err(MkfsError::Missing(path.to_path_buf())),
        // With a size the device is exactly that long, whatever the file's length.
        Some(s) => plan(s, opts)
            .map(drop)
            .map_err(|source| MkfsError::making(path, source))?,
        None => {}
    }
    let created = NewFiles::among([path]);
    let dev: Arc<dyn BlockDev> = Arc::new(
        FileDev::open(
            path,
            &FileOptions {
                size,
                direct: false,
            },
        )
        .map_err(MkfsError::Open)?,
    );
    if let Err(e) = format_unless_used(path, &dev, opts, force) {
        drop(dev);
        created.remove();
        return Err(e);
    }
    Ok(dev)
}

/// Probe `dev` (unless `force`) and make the filesystem on it.
fn format_unless_used(
    path: &Path,
    dev: &Arc<dyn BlockDev>,
    opts: &Options,
    force: bool,
) -> Result<(), MkfsError> {
    if !force {
        let found = probe(&Image::on_device(path, Arc::clone(dev)))
            .map_err(|e| MkfsError::Probe(Box::new(e)))?;
        if found != Existing::Nothing {
            return Err(MkfsError::Refused {
                path: path.to_path_buf(),
                found,
            });
        }
    }
    mkfs(Arc::clone(dev), opts).map_err(|source| MkfsError::making(path, source))
}
