//! The running kernel's XFS statistics: read `/proc/fs/xfs/stat`, clear via
//! `/proc/sys/fs/xfs/stats_clear`.
//!
//! Host runs (`--fs host`) print the kernel's own counters where labfs runs print
//! [`super::global()`], so both read the same way. `/proc/fs/xfs/stat` exists only while the
//! XFS module is loaded (it is a symlink to `/sys/fs/xfs/stats/stats`). Clearing writes `1` to
//! the sysctl, which zeroes the global set (not per-mount sets) except the in-core inode
//! count; it needs root, and a container's read-only `/proc/sys` refuses it too, so the
//! errors say which of those happened rather than a bare errno.

use std::io;
use std::path::{Path, PathBuf};

use thiserror::Error;

use super::decode::{DecodeError, StatFile};

/// Where the kernel publishes global XFS statistics.
pub const HOST_STAT_PATH: &str = "/proc/fs/xfs/stat";
/// The sysctl that clears them when `1` is written.
pub const HOST_STATS_CLEAR_PATH: &str = "/proc/sys/fs/xfs/stats_clear";

/// Reading or clearing the host's XFS statistics failed.
#[derive(Debug, Error)]
pub enum HostStatsError {
    /// The stat file does not exist: XFS is not loaded on this host.
    #[error("no XFS statistics on this host ({} missing)", path.display())]
    Missing {
        /// The path that was looked for.
        path: PathBuf,
    },
    /// The stat file exists but could not be read.
    #[error("cannot read XFS statistics from {}: {source}", path.display())]
    Read {
        /// The stat file.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// The stat file's text did not parse.
    #[error("XFS statistics in {} are not stat text: {source}", path.display())]
    Decode {
        /// The stat file.
        path: PathBuf,
        /// What did not parse.
        source: DecodeError,
    },
    /// Writing the clear sysctl was refused: it needs root (and a writable `/proc/sys`).
    #[error(
        "cannot clear XFS statistics: writing 1 to {} needs root and a writable /proc/sys ({source})",
        path.display()
    )]
    ClearNeedsRoot {
        /// The sysctl path.
        path: PathBuf,
        /// The I/O error (EACCES, EPERM or EROFS).
        source: io::Error,
    },
    /// The clear sysctl does not exist: XFS is not loaded.
    #[error("cannot clear XFS statistics: {} missing, XFS is not loaded", path.display())]
    ClearNoXfs {
        /// The sysctl path.
        path: PathBuf,
    },
    /// Writing the clear sysctl failed for another reason.
    #[error("cannot clear XFS statistics by writing 1 to {}: {source}", path.display())]
    Clear {
        /// The sysctl path.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
}

/// The host's stat text exactly as the kernel printed it.
pub fn read_host_stats_text() -> Result<String, HostStatsError> {
    read_stats_text_from(Path::new(HOST_STAT_PATH))
}

/// The host's statistics, parsed.
pub fn read_host_stats() -> Result<StatFile, HostStatsError> {
    read_stats_from(Path::new(HOST_STAT_PATH))
}

/// Clear the host's global XFS statistics (write `1` to `stats_clear`).
pub fn clear_host_stats() -> Result<(), HostStatsError> {
    clear_stats_at(Path::new(HOST_STATS_CLEAR_PATH))
}

/// Stat text from `path` (a stat file, e.g. `/sys/fs/xfs/<dev>/stats/stats`).
pub fn read_stats_text_from(path: &Path) -> Result<String, HostStatsError> {
    let bytes = std::fs::read(path).map_err(|source| match source.kind() {
        io::ErrorKind::NotFound => HostStatsError::Missing {
            path: path.to_path_buf(),
        },
        _ => HostStatsError::Read {
            path: path.to_path_buf(),
            source,
        },
    })?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Parsed statistics from the stat file at `path`.
pub fn read_stats_from(path: &Path) -> Result<StatFile, HostStatsError> {
    let text = read_stats_text_from(path)?;
    StatFile::parse(&text).map_err(|source| HostStatsError::Decode {
        path: path.to_path_buf(),
        source,
    })
}

/// Write `1` to the clear file at `path` (the sysctl, or a sysfs `stats_clear`).
pub fn clear_stats_at(path: &Path) -> Result<(), HostStatsError> {
    // No O_CREAT: a missing sysctl means XFS is absent, never "make a file".
    let result = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|mut f| io::Write::write_all(&mut f, b"1\n"));
    result.map_err(|source| clear_error(path, source))
}

fn clear_error(path: &Path, source: io::Error) -> HostStatsError {
    let path = path.to_path_buf();
    match source.raw_os_error() {
        Some(libc::EACCES | libc::EPERM | libc::EROFS) => {
            HostStatsError::ClearNeedsRoot { path, source }
        }
        Some(libc::ENOENT) => HostStatsError::ClearNoXfs { path },
        _ => HostStatsError::Clear { path, source },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permission_errors_say_clearing_needs_root() {
        for errno in [libc::EACCES, libc::EPERM, libc::EROFS] {
            let e = clear_error(
                Path::new(HOST_STATS_CLEAR_PATH),
                io::Error::from_raw_os_error(errno),
            );
            assert!(matches!(e, HostStatsError::ClearNeedsRoot { .. }), "{e}");
            assert!(e.to_string().contains("needs root"), "{e}");
        }
    }

    #[test]
    fn missing_sysctl_says_xfs_is_not_loaded() {
        let e = clear_error(
            Path::new(HOST_STATS_CLEAR_PATH),
            io::Error::from_raw_os_error(libc::ENOENT),
        );
        assert!(e.to_string().contains("XFS is not loaded"), "{e}");
    }

    #[test]
    fn other_clear_failures_keep_the_io_error() {
        let e = clear_error(Path::new("/x"), io::Error::from_raw_os_error(libc::EINVAL));
        assert!(matches!(e, HostStatsError::Clear { .. }), "{e}");
    }
}
