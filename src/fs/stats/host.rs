//! The running kernel's XFS statistics: read `/proc/fs/xfs/stat`, clear via
//! `/proc/sys/fs/xfs/stats_clear`.
//!
//! Host runs (`--fs host`) print the kernel's own counters where labfs runs print
//! [`super::global()`], so both read the same way. `/proc/fs/xfs/stat` exists only while the
//! XFS module is loaded (it is a symlink to `/sys/fs/xfs/stats/stats`). Clearing writes `1` to
//! the sysctl, which zeroes the global set (not per-mount sets) except the in-core inode
//! count; it needs root, and a container's read-only `/proc/sys` refuses it too, so the
//! errors say which of those happened rather than a bare errno.
//!
//! # Per mount, and settled
//!
//! The global file sums every XFS filesystem on the host, so a run's difference there mixes
//! in whatever else the machine did. Each XFS mount also publishes its own set at
//! `/sys/fs/xfs/<dev>/stats/stats` (`<dev>` is the block device's kernel name, the
//! superblock's `s_id`: `loop0`, `sda1`, `dm-0`), with its own `stats_clear`.
//! [`HostStatsScope::for_dirs`] finds the mount holding a run's directories (through the
//! directory's `st_dev` and `/sys/dev/block/MAJOR:MINOR`) and falls back to the global set,
//! saying why, when they are not all on one XFS filesystem.
//!
//! Since 5.15 the kernel inactivates unlinked inodes in the background (inodegc), and
//! write-back completes after `syncfs` returns to the caller's view of the counters, so a
//! reading taken right after a run misses work the run caused (the issue's `freex` 1816 of
//! 2069). [`settle`] reads until two readings [`SETTLE_POLL`] apart agree on every line but
//! `push_ail` (xfsaild counts a pass every 50 ms while its list holds items, whether or not
//! anything happens) or the timeout passes, and says which.

use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

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

/// Where the kernel publishes each XFS mount's statistics.
pub const PER_MOUNT_ROOT: &str = "/sys/fs/xfs";

/// How long [`settle`] waits between readings.
pub const SETTLE_POLL: Duration = Duration::from_millis(200);

/// How long [`settle`] waits at most, by default.
pub const SETTLE_TIMEOUT: Duration = Duration::from_secs(20);

/// Why a host run's statistics come from the global set.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum GlobalReason {
    /// The run names no directory.
    #[error("the run names no directory")]
    NoDirectory,
    /// No existing directory at or above the run's directory could be examined.
    #[error("{} cannot be examined: {error}", dir.display())]
    Unreadable {
        /// The directory.
        dir: PathBuf,
        /// Why (the I/O error's text, kept as text because the scope is a plain value).
        error: String,
    },
    /// The directory is not on a block device XFS publishes statistics for.
    #[error("{} is on device {major}:{minor}, which has no {PER_MOUNT_ROOT}/<dev>/stats (not XFS)", dir.display())]
    NotXfs {
        /// The directory.
        dir: PathBuf,
        /// Its filesystem's device number.
        major: u32,
        /// Its filesystem's device number.
        minor: u32,
    },
    /// The run's directories are on different filesystems.
    #[error("the directories are on {0} different filesystems")]
    SeveralFilesystems(usize),
}

/// Which statistics a host run reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostStatsScope {
    /// The statistics of the one XFS mount holding the run's directories.
    Mount {
        /// The block device's kernel name (`loop0`).
        device: String,
        /// The mount's stats directory, `/sys/fs/xfs/<device>/stats`.
        dir: PathBuf,
    },
    /// The global statistics of every XFS filesystem, for the reason given.
    Global(GlobalReason),
}

impl HostStatsScope {
    /// The scope for a run in `dirs`: the XFS mount holding them all, or the global set.
    /// A directory that does not exist yet (fs_mark makes its `-d`) is judged by its nearest
    /// existing ancestor.
    pub fn for_dirs(dirs: &[PathBuf]) -> HostStatsScope {
        Self::for_dirs_under(dirs, Path::new("/sys"))
    }

    /// [`Self::for_dirs`] with sysfs at `sys` (for tests).
    fn for_dirs_under(dirs: &[PathBuf], sys: &Path) -> HostStatsScope {
        let mut devices = Vec::new();
        for dir in dirs {
            let Some(existing) = dir.ancestors().find(|a| a.exists()) else {
                return HostStatsScope::Global(GlobalReason::Unreadable {
                    dir: dir.clone(),
                    error: "no part of the path exists".to_string(),
                });
            };
            match std::fs::metadata(existing) {
                Ok(m) => {
                    if !devices.iter().any(|(d, _)| *d == m.dev()) {
                        devices.push((m.dev(), dir.clone()));
                    }
                }
                Err(e) => {
                    return HostStatsScope::Global(GlobalReason::Unreadable {
                        dir: dir.clone(),
                        error: e.to_string(),
                    });
                }
            }
        }
        match devices.as_slice() {
            [] => HostStatsScope::Global(GlobalReason::NoDirectory),
            [(dev, dir)] => {
                let (major, minor) = (libc::major(*dev), libc::minor(*dev));
                let not_xfs = || {
                    HostStatsScope::Global(GlobalReason::NotXfs {
                        dir: dir.clone(),
                        major,
                        minor,
                    })
                };
                // /sys/dev/block/M:m links to the device's sysfs node, named as the kernel
                // names the device (the superblock's s_id).
                let link = sys.join(format!("dev/block/{major}:{minor}"));
                let Some(device) = std::fs::read_link(&link)
                    .ok()
                    .and_then(|t| t.file_name().map(|n| n.to_string_lossy().into_owned()))
                else {
                    return not_xfs();
                };
                let stats = sys.join("fs/xfs").join(&device).join("stats");
                if stats.join("stats").exists() {
                    HostStatsScope::Mount { device, dir: stats }
                } else {
                    not_xfs()
                }
            }
            several => HostStatsScope::Global(GlobalReason::SeveralFilesystems(several.len())),
        }
    }

    /// The stat file this scope reads.
    pub fn stat_path(&self) -> PathBuf {
        match self {
            HostStatsScope::Mount { dir, .. } => dir.join("stats"),
            HostStatsScope::Global(_) => PathBuf::from(HOST_STAT_PATH),
        }
    }

    /// The file that clears this scope's statistics when `1` is written.
    pub fn clear_path(&self) -> PathBuf {
        match self {
            HostStatsScope::Mount { dir, .. } => dir.join("stats_clear"),
            HostStatsScope::Global(_) => PathBuf::from(HOST_STATS_CLEAR_PATH),
        }
    }

    /// Read this scope's statistics.
    pub fn read(&self) -> Result<StatFile, HostStatsError> {
        read_stats_from(&self.stat_path())
    }

    /// Clear this scope's statistics (root).
    pub fn clear(&self) -> Result<(), HostStatsError> {
        clear_stats_at(&self.clear_path())
    }

    /// One line saying which statistics these are, for a report header.
    pub fn describe(&self) -> String {
        match self {
            HostStatsScope::Mount { device, dir } => format!(
                "per-mount {} (the XFS filesystem on {device} holding the run)",
                dir.join("stats").display()
            ),
            HostStatsScope::Global(why) => {
                format!("global {HOST_STAT_PATH}, all XFS filesystems together: {why}")
            }
        }
    }
}

/// How a [`settle`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    /// Two readings agreed after this long.
    After(Duration),
    /// The counters were still moving when the timeout passed.
    TimedOut(Duration),
}

impl std::fmt::Display for Settled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Settled::After(d) => write!(f, "settled after {} ms", d.as_millis()),
            Settled::TimedOut(d) => write!(
                f,
                "still moving after {} ms (read anyway; background work may be missing)",
                d.as_millis()
            ),
        }
    }
}

/// Whether two readings agree on every line the kernel does not bump on a timer.
fn quiet_between(a: &StatFile, b: &StatFile) -> bool {
    let moving = |f: &StatFile| {
        f.lines()
            .iter()
            .filter(|l| l.name != "push_ail")
            .cloned()
            .collect::<Vec<_>>()
    };
    moving(a) == moving(b)
}

/// Read with `read` every `poll` until two consecutive readings agree on every line but
/// `push_ail`, or `timeout` passes; return the last reading and how it ended.
pub fn settle_with(
    mut read: impl FnMut() -> Result<StatFile, HostStatsError>,
    poll: Duration,
    timeout: Duration,
) -> Result<(StatFile, Settled), HostStatsError> {
    let started = Instant::now();
    let mut last = read()?;
    loop {
        let waited = started.elapsed();
        if waited >= timeout {
            return Ok((last, Settled::TimedOut(waited)));
        }
        std::thread::sleep(poll);
        let now = read()?;
        if quiet_between(&last, &now) {
            return Ok((now, Settled::After(started.elapsed())));
        }
        last = now;
    }
}

/// [`settle_with`] on `scope`'s statistics, every [`SETTLE_POLL`] for up to `timeout`.
pub fn settle(
    scope: &HostStatsScope,
    timeout: Duration,
) -> Result<(StatFile, Settled), HostStatsError> {
    settle_with(|| scope.read(), SETTLE_POLL, timeout)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_sys(dev: u64, device: &str, xfs: bool) -> tempfile::TempDir {
        let sys = tempfile::tempdir().expect("tempdir");
        let block = sys.path().join("dev/block");
        std::fs::create_dir_all(&block).expect("dev/block");
        let node = sys.path().join("devices/virtual/block").join(device);
        std::fs::create_dir_all(&node).expect("node");
        std::os::unix::fs::symlink(
            &node,
            block.join(format!("{}:{}", libc::major(dev), libc::minor(dev))),
        )
        .expect("link");
        if xfs {
            let stats = sys.path().join("fs/xfs").join(device).join("stats");
            std::fs::create_dir_all(&stats).expect("stats dir");
            std::fs::write(stats.join("stats"), "dir 1 2 3 4\n").expect("stats");
        }
        sys
    }

    #[test]
    fn a_directory_on_an_xfs_mount_reads_that_mounts_statistics() {
        let work = tempfile::tempdir().expect("tempdir");
        let dev = std::fs::metadata(work.path()).expect("meta").dev();
        let sys = fake_sys(dev, "loop7", true);
        // The run's directory does not exist yet: its parent decides.
        let dirs = [work.path().join("t")];
        let scope = HostStatsScope::for_dirs_under(&dirs, sys.path());
        let HostStatsScope::Mount { device, dir } = &scope else {
            panic!("{scope:?}");
        };
        assert_eq!(device, "loop7");
        assert_eq!(dir, &sys.path().join("fs/xfs/loop7/stats"));
        assert_eq!(scope.clear_path(), dir.join("stats_clear"));
        assert_eq!(scope.read().expect("reads").get("dir", 3), Some(4));
        assert!(
            scope.describe().starts_with("per-mount "),
            "{}",
            scope.describe()
        );
    }

    #[test]
    fn a_directory_elsewhere_reads_the_global_statistics_and_says_why() {
        let work = tempfile::tempdir().expect("tempdir");
        let dev = std::fs::metadata(work.path()).expect("meta").dev();
        let sys = fake_sys(dev, "sda1", false);
        let scope = HostStatsScope::for_dirs_under(&[work.path().to_path_buf()], sys.path());
        assert!(
            matches!(scope, HostStatsScope::Global(GlobalReason::NotXfs { .. })),
            "{scope:?}"
        );
        assert_eq!(scope.stat_path(), Path::new(HOST_STAT_PATH));
        assert!(scope.describe().contains("not XFS"), "{}", scope.describe());
        assert_eq!(
            HostStatsScope::for_dirs_under(&[], sys.path()),
            HostStatsScope::Global(GlobalReason::NoDirectory)
        );
    }

    #[test]
    fn settling_waits_for_two_equal_readings_ignoring_push_ail() {
        let texts = [
            "dir 1 0 0 0\npush_ail 1\n",
            "dir 2 0 0 0\npush_ail 2\n",
            "dir 3 0 0 0\npush_ail 3\n",
            "dir 3 0 0 0\npush_ail 4\n",
        ];
        let mut i = 0;
        let read = || {
            let t = texts[i.min(texts.len() - 1)];
            i += 1;
            Ok(StatFile::parse(t).expect("stat text"))
        };
        let (last, how) =
            settle_with(read, Duration::from_millis(1), Duration::from_secs(10)).expect("settles");
        assert!(matches!(how, Settled::After(_)), "{how:?}");
        assert_eq!(last.get("dir", 0), Some(3));
        assert_eq!(last.get("push_ail", 0), Some(4));
    }

    #[test]
    fn settling_gives_up_at_the_timeout_and_says_so() {
        let mut n = 0u64;
        let read = || {
            n += 1;
            Ok(StatFile::parse(&format!("dir {n} 0 0 0\n")).expect("stat text"))
        };
        let (_, how) =
            settle_with(read, Duration::from_millis(1), Duration::from_millis(20)).expect("reads");
        assert!(matches!(how, Settled::TimedOut(_)), "{how:?}");
        assert!(how.to_string().contains("still moving"), "{how}");
    }

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
