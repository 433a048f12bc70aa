//! What one fs_mark run does: the validated configuration and fs_mark's limits.
//!
//! [`Config`] is the engine's whole input besides the target and the clock. It is built from
//! the command line by `cli::fsmark::FsmarkArgs::to_config`, which applies fs_mark 3.3's
//! checks in its order and with its messages (see [`ConfigError`]), so the engine itself never
//! re-validates: a `Config` with at least one directory and one file per thread is runnable.

use std::path::PathBuf;

use thiserror::Error;

/// Largest `-w` (MAX_IO_BUFFER_SIZE).
pub const MAX_IO_SIZE: u64 = 1024 * 1024;
/// Largest `-n` (MAX_FILES).
pub const MAX_FILES: u32 = 1_000_000;
/// Largest `-t`, and the most `-d` directories (MAX_THREADS).
pub const MAX_THREADS: u32 = 64;
/// Largest `-p`, and (a fslab limit) largest `-r` (FILENAME_SIZE).
pub const MAX_NAME_LEN: u32 = 128;
/// How long the time-hash policy stays in one subdirectory (DEFAULT_SECS_PER_DIR).
pub const SECS_PER_SUBDIR: u64 = 180;
/// Default `-s`.
pub const DEFAULT_FILE_SIZE: u64 = 50 * 1024;
/// Default `-w`.
pub const DEFAULT_IO_SIZE: u64 = 16 * 1024;
/// Default `-n`.
pub const DEFAULT_NUM_FILES: u32 = 1000;
/// Default `-p`.
pub const DEFAULT_NAME_LEN: u32 = 40;
/// Default `-r`.
pub const DEFAULT_RAND_LEN: u32 = 24;
/// Default `-l`.
pub const DEFAULT_LOG_FILE: &str = "fs_log.txt";
/// The version fs_mark prints in its header; the output format is 3.3's.
pub const FS_MARK_VERSION: &str = "3.3";

/// When and how a run makes its files durable (`-S`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SyncMethod {
    /// `-S 0`: no sync() or fsync() at all.
    NoSync,
    /// `-S 1` (default): fsync() each file before closing it.
    FsyncBeforeClose,
    /// `-S 2`: sync() after the write loop, then reopen and fsync the thread's first file.
    SyncThenFirstFile,
    /// `-S 3`: reopen and fsync every file in reverse order after the write loop.
    PostReverse,
    /// `-S 4`: sync(), then the reverse reopen/fsync pass.
    SyncPostReverse,
    /// `-S 5`: reopen and fsync every file in creation order after the write loop.
    PostInOrder,
    /// `-S 6`: sync(), then the in-order reopen/fsync pass.
    SyncPostInOrder,
    /// `-S 7` (fslab extension): syncfs() of each directory the thread wrote files into.
    SyncfsPerDir,
}

impl SyncMethod {
    /// The method for a `-S` number, if it names one.
    pub fn from_number(n: u32) -> Option<SyncMethod> {
        Some(match n {
            0 => SyncMethod::NoSync,
            1 => SyncMethod::FsyncBeforeClose,
            2 => SyncMethod::SyncThenFirstFile,
            3 => SyncMethod::PostReverse,
            4 => SyncMethod::SyncPostReverse,
            5 => SyncMethod::PostInOrder,
            6 => SyncMethod::SyncPostInOrder,
            7 => SyncMethod::SyncfsPerDir,
            _ => return None,
        })
    }

    /// The `-S` number.
    pub fn number(self) -> u32 {
        match self {
            SyncMethod::NoSync => 0,
            SyncMethod::FsyncBeforeClose => 1,
            SyncMethod::SyncThenFirstFile => 2,
            SyncMethod::PostReverse => 3,
            SyncMethod::SyncPostReverse => 4,
            SyncMethod::PostInOrder => 5,
            SyncMethod::SyncPostInOrder => 6,
            SyncMethod::SyncfsPerDir => 7,
        }
    }

    /// The phases this method runs, as fs_mark's flag bits decide them.
    pub fn phases(self) -> SyncPhases {
        let none = SyncPhases::default();
        match self {
            SyncMethod::NoSync => none,
            SyncMethod::FsyncBeforeClose => SyncPhases {
                fsync_before_close: true,
                ..none
            },
            SyncMethod::SyncThenFirstFile => SyncPhases {
                sync_syscall: true,
                first_file: true,
                ..none
            },
            SyncMethod::PostReverse => SyncPhases {
                post_reverse: true,
                ..none
            },
            SyncMethod::SyncPostReverse => SyncPhases {
                sync_syscall: true,
                post_reverse: true,
                ..none
            },
            SyncMethod::PostInOrder => SyncPhases {
                post_in_order: true,
                ..none
            },
            SyncMethod::SyncPostInOrder => SyncPhases {
                sync_syscall: true,
                post_in_order: true,
                ..none
            },
            SyncMethod::SyncfsPerDir => SyncPhases {
                syncfs_dirs: true,
                ..none
            },
        }
    }

    /// The text after `Sync method: ` in the header (fs_mark's words for 0..6).
    pub fn description(self) -> &'static str {
        match self {
            SyncMethod::NoSync => "NO SYNC: Test does not issue sync() or fsync() calls.",
            SyncMethod::FsyncBeforeClose => "INBAND FSYNC: fsync() per file in write loop.",
            SyncMethod::SyncThenFirstFile => {
                "SYSTEM SYNC/SINGLE FSYNC: Issue sync() after main write loop and 1 file fsync() per subdirectory."
            }
            SyncMethod::PostReverse => {
                "POST REVERSE: Reopen and fsync() each file in reverse order after main write loop."
            }
            SyncMethod::SyncPostReverse => {
                "SYNC POST REVERSE: Issue sync() and then reopen and fsync() each file in reverse order after main write loop."
            }
            SyncMethod::PostInOrder => {
                "POST: Reopen and fsync() each file in order after main write loop."
            }
            SyncMethod::SyncPostInOrder => {
                "SYNC POST: Issue sync() and then reopen and fsync() each file in order after main write loop."
            }
            SyncMethod::SyncfsPerDir => {
                "SYNCFS: Issue syncfs() on each directory used after main write loop (fslab extension)."
            }
        }
    }
}

/// fs_mark's sync flag bits, one bool each. Post-loop phases run in the order of the fields
/// after `fsync_before_close` (fs_mark's code order; `syncfs_dirs` sits with `sync_syscall`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SyncPhases {
    /// FSYNC_BEFORE_CLOSE: fsync() inside the write loop.
    pub fsync_before_close: bool,
    /// FSYNC_SYNC_SYSCALL: one sync() after the loop, timed into SYNC.
    pub sync_syscall: bool,
    /// fslab's -S 7: syncfs() per used directory after the loop, timed into SYNC.
    pub syncfs_dirs: bool,
    /// FSYNC_POST_IN_ORDER: reopen+fsync+close each file, first to last.
    pub post_in_order: bool,
    /// FSYNC_POST_REVERSE: reopen+fsync+close each file, last to first.
    pub post_reverse: bool,
    /// FSYNC_FIRST_FILE: reopen+fsync+close the first file (sum only).
    pub first_file: bool,
}

/// How files are spread over subdirectories of each `-d` directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubdirPolicy {
    /// No `-D`: files go straight into the `-d` directory.
    None,
    /// `-D n -N k`: k files into one subdirectory, then the next.
    RoundRobin {
        /// Number of subdirectories (`-D`).
        subdirs: u32,
        /// Files per subdirectory before moving on (`-N`); 0 never moves.
        per_subdir: u32,
    },
    /// `-D n` alone: move to the next subdirectory every `secs_per_subdir` seconds.
    TimeHash {
        /// Number of subdirectories (`-D`).
        subdirs: u32,
        /// Seconds spent in one subdirectory (fs_mark: always 180).
        secs_per_subdir: u64,
    },
}

impl SubdirPolicy {
    /// Number of subdirectories, 0 without `-D`.
    pub fn subdirs(self) -> u32 {
        match self {
            SubdirPolicy::None => 0,
            SubdirPolicy::RoundRobin { subdirs, .. } | SubdirPolicy::TimeHash { subdirs, .. } => {
                subdirs
            }
        }
    }
}

/// A validated fs_mark run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The `-d` directories, in command-line order.
    pub dirs: Vec<PathBuf>,
    /// Worker threads; worker `k` works in `dirs[k % dirs.len()]`.
    pub threads: u32,
    /// Files per thread per iteration (`-n`), at least 1.
    pub num_files: u32,
    /// Bytes per file (`-s`).
    pub file_size: u64,
    /// Bytes per write() (`-w`), at least 1.
    pub io_size: u64,
    /// Total name length (`-p`).
    pub name_len: u32,
    /// Random characters at the end of each name (`-r`).
    pub rand_len: u32,
    /// `-S`.
    pub sync: SyncMethod,
    /// `-D` / `-N`.
    pub subdirs: SubdirPolicy,
    /// Keep files instead of unlinking them (`-k`, implied by `-L` and `-F`).
    pub keep_files: bool,
    /// fs_mark's loop count (`-L`); 0 and 1 both mean one iteration.
    pub loops: u32,
    /// Fill mode (`-F`): iterate until the free-space check fails.
    pub fill: bool,
    /// Collect per-syscall latency histograms (for `--json` / `--latency`).
    pub latency: bool,
}

impl Config {
    /// A one-directory run with fs_mark's defaults (1000 files of 50 KiB, fsync per file).
    pub fn new(dir: impl Into<PathBuf>) -> Config {
        Config {
            dirs: vec![dir.into()],
            threads: 1,
            num_files: DEFAULT_NUM_FILES,
            file_size: DEFAULT_FILE_SIZE,
            io_size: DEFAULT_IO_SIZE,
            name_len: DEFAULT_NAME_LEN,
            rand_len: DEFAULT_RAND_LEN,
            sync: SyncMethod::FsyncBeforeClose,
            subdirs: SubdirPolicy::None,
            keep_files: false,
            loops: 0,
            fill: false,
            latency: false,
        }
    }

    /// The directory worker `slot` writes into, as fs_mark assigns them.
    pub fn worker_dir(&self, slot: usize) -> &std::path::Path {
        &self.dirs[slot % self.dirs.len()]
    }

    /// Check the invariants the engine relies on (a `Config` built by hand may break them):
    /// at least one directory, `threads` a non-zero multiple of the directory count and at
    /// most 64, at least one file, a non-zero IO size, and at least 2 subdirectories when a
    /// subdirectory policy is set.
    pub fn check(&self) -> Result<(), ConfigError> {
        let dirs = self.dirs.len() as u32;
        if dirs == 0 {
            return Err(ConfigError::NoDirectory);
        }
        if dirs > MAX_THREADS {
            return Err(ConfigError::TooManyDirs);
        }
        if self.threads > MAX_THREADS {
            return Err(ConfigError::TooManyThreads(self.threads));
        }
        if self.threads < dirs || !self.threads.is_multiple_of(dirs) {
            return Err(ConfigError::ThreadsNotMultipleOfDirs {
                threads: self.threads,
                dirs,
            });
        }
        if self.num_files == 0 {
            return Err(ConfigError::NoFiles);
        }
        if self.num_files > MAX_FILES {
            return Err(ConfigError::TooManyFiles(self.num_files));
        }
        if self.io_size == 0 {
            return Err(ConfigError::ZeroIoSize);
        }
        if self.io_size > MAX_IO_SIZE {
            return Err(ConfigError::IoSizeTooLarge(self.io_size));
        }
        if self.name_len > MAX_NAME_LEN {
            return Err(ConfigError::NameTooLong(self.name_len));
        }
        if self.rand_len > MAX_NAME_LEN {
            return Err(ConfigError::RandomTooLong(self.rand_len));
        }
        match self.subdirs {
            SubdirPolicy::None => Ok(()),
            p if p.subdirs() < 2 => Err(ConfigError::TooFewSubdirs(p.subdirs())),
            _ => Ok(()),
        }
    }

    /// Iterations to run when not in fill mode (fs_mark runs `max(loops, 1)`).
    pub fn iterations(&self) -> u32 {
        self.loops.max(1)
    }
}

/// A command line fs_mark (or fslab) refuses. Messages are fs_mark's where it has one.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ConfigError {
    /// No `-d`.
    #[error("Must specify at least one directory with -d switch")]
    NoDirectory,
    /// `-N` without `-D`.
    #[error(
        "Must specify at more than 1 subdirectory with -D switch for -N num_per_subdir to make sense"
    )]
    FilesPerSubdirWithoutSubdirs,
    /// `-D` below 2.
    #[error("-D {0}: Number of subdirs needs to be greater than 1")]
    TooFewSubdirs(u32),
    /// More than 64 `-d`.
    #[error("-d: Max number of threads (and directories) is {MAX_THREADS}")]
    TooManyDirs,
    /// `-n` over the limit.
    #[error("-n {0}: Max files is {MAX_FILES}")]
    TooManyFiles(u32),
    /// `-n 0` (fs_mark divides by it).
    #[error("-n 0: need at least 1 file per thread")]
    NoFiles,
    /// `-p` over the limit.
    #[error("-p {0}: Max filename size is {MAX_NAME_LEN}")]
    NameTooLong(u32),
    /// `-r` over the limit (fs_mark would overflow its buffer).
    #[error("-r {0}: Max random name bytes is {MAX_NAME_LEN}")]
    RandomTooLong(u32),
    /// `-r` longer than `-p` (fs_mark prints a negative number of time-stamp bytes).
    #[error(
        "-p {name} -r {rand}: the {rand} random bytes go at the end of the name, which is only {name} bytes (-r must be at most -p, and -p at most {MAX_NAME_LEN})"
    )]
    RandomLongerThanName {
        /// `-p`.
        name: u32,
        /// `-r`.
        rand: u32,
    },
    /// `-r 0` (every name made in the same second is the same, and the unlink pass fails).
    #[error(
        "-r 0: names made in the same second would all be the same; at least 1 random byte is needed"
    )]
    NoRandomBytes,
    /// `-t 0`.
    #[error("-t 0: at least 1 thread is needed")]
    NoThreads,
    /// `-S` not 0..7.
    #[error("-S {0}: Sync method must be 0..6 (fs_mark's) or 7 (syncfs)")]
    BadSyncMethod(u32),
    /// `-t` over the limit.
    #[error("-t {0}: Max threads is {MAX_THREADS}")]
    TooManyThreads(u32),
    /// `-t` not a multiple of the directory count.
    #[error(
        "Threads ({threads}) must be an even multiple the number of directories ({dirs}) and less than {MAX_THREADS}"
    )]
    ThreadsNotMultipleOfDirs {
        /// `-t`.
        threads: u32,
        /// Number of `-d`.
        dirs: u32,
    },
    /// `-w` over the limit.
    #[error("-w {0}: MAX IO buffer size is {MAX_IO_SIZE}")]
    IoSizeTooLarge(u64),
    /// `-w 0` (fs_mark would loop forever).
    #[error("-w 0: the IO size must be at least 1 byte")]
    ZeroIoSize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sync_numbers_round_trip_and_8_is_refused() {
        for n in 0..8 {
            assert_eq!(SyncMethod::from_number(n).map(SyncMethod::number), Some(n));
        }
        assert_eq!(SyncMethod::from_number(8), None);
    }

    #[test]
    fn sync_phases_follow_fs_mark_flag_bits() {
        let p = SyncMethod::SyncThenFirstFile.phases();
        assert!(p.sync_syscall && p.first_file && !p.fsync_before_close && !p.post_reverse);
        let p = SyncMethod::SyncPostReverse.phases();
        assert!(p.sync_syscall && p.post_reverse && !p.post_in_order);
        let p = SyncMethod::SyncPostInOrder.phases();
        assert!(p.sync_syscall && p.post_in_order && !p.post_reverse);
        assert_eq!(SyncMethod::NoSync.phases(), SyncPhases::default());
        assert!(SyncMethod::SyncfsPerDir.phases().syncfs_dirs);
    }

    #[test]
    fn check_refuses_hand_built_configs_the_engine_cannot_run() {
        assert_eq!(Config::new("a").check(), Ok(()));
        let mut c = Config::new("a");
        c.dirs.clear();
        assert_eq!(c.check(), Err(ConfigError::NoDirectory));
        let mut c = Config::new("a");
        c.threads = 0;
        assert!(matches!(
            c.check(),
            Err(ConfigError::ThreadsNotMultipleOfDirs { .. })
        ));
        let mut c = Config::new("a");
        c.subdirs = SubdirPolicy::RoundRobin {
            subdirs: 0,
            per_subdir: 1,
        };
        assert_eq!(c.check(), Err(ConfigError::TooFewSubdirs(0)));
        let mut c = Config::new("a");
        c.io_size = 0;
        assert_eq!(c.check(), Err(ConfigError::ZeroIoSize));
    }

    #[test]
    fn workers_cycle_over_directories() {
        let mut c = Config::new("a");
        c.dirs.push("b".into());
        c.threads = 4;
        let dirs: Vec<_> = (0..4).map(|k| c.worker_dir(k).to_path_buf()).collect();
        assert_eq!(dirs, ["a", "b", "a", "b"].map(PathBuf::from));
    }
}
