//! Filling the inode cache: creating files, or stat-ing files that exist (a parallel `find`).
//!
//! The tree has one shape, so a run can add inodes in steps and a later run can stat the tree
//! an earlier one made: under the run's directory, subdirectory `dNNNNN` holds files
//! `fNNNNNNNN`, [`FILES_PER_DIR`] to a directory, file `i` in directory `i / FILES_PER_DIR`.
//! Files are empty: the experiment is about inodes, and an empty file is clean as soon as its
//! create is on disk, which is the cache thread 002 measured (~10M clean inodes, filled by a
//! parallel find/stat over a populated filesystem).
//!
//! Work is split between threads by whole directories, so each thread works in its own
//! directories (as fs_mark's threads do) and the directory locks are not what is measured.
//! The directories are dealt out in turn (thread `t` of `T` takes directories `t`, `t + T`,
//! ...), not in contiguous blocks: labfs, like XFS, places consecutive new directories in
//! consecutive AGs and a file in its directory's AG, so with contiguous blocks the threads'
//! current directories were a fixed distance apart, and with 4 AGs and 2 threads
//! (`--max-inodes` 2M or 10M: 100 or 500 directories apart) always in the same AG: every
//! create waited for the other thread's AGI (9,588 of 13,479 context switches of a 300k
//! populate were that wait). Dealt out in turn, the two threads are always in different AGs
//! when the AG count is even, so the sweep measures the inode cache, not one AGI.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use thiserror::Error;

use crate::backend::{Errno, OpenFlags, Target, TargetError};

/// Files per subdirectory of the tree.
pub const FILES_PER_DIR: u64 = 10_000;

/// Files a worker handles between looks at the interrupt flag.
const INTERRUPT_CHECK_EVERY: u64 = 256;

/// How the cache is filled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Populate {
    /// Create empty files (each create leaves its inode cached).
    Create,
    /// Stat files an earlier run created (each lookup reads the inode into the cache).
    Stat,
}

impl Populate {
    /// The word on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Populate::Create => "create",
            Populate::Stat => "stat",
        }
    }

    /// The progress bar's phase word.
    pub fn phase(self) -> &'static str {
        match self {
            Populate::Create => "creating",
            Populate::Stat => "stat-ing",
        }
    }
}

impl std::str::FromStr for Populate {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "create" => Ok(Populate::Create),
            "stat" => Ok(Populate::Stat),
            _ => Err(format!(
                "unknown population '{s}' (expected create or stat)"
            )),
        }
    }
}

/// The tree under one directory (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tree {
    /// The run's directory.
    pub root: PathBuf,
}

impl Tree {
    /// The subdirectory holding directory-number `d`.
    pub fn dir(&self, d: u64) -> PathBuf {
        self.root.join(format!("d{d:05}"))
    }

    /// The path of file number `i`.
    pub fn file(&self, i: u64) -> PathBuf {
        self.dir(i / FILES_PER_DIR).join(format!("f{i:08}"))
    }

    /// Directories needed for files `0..files`.
    pub fn dirs_for(files: u64) -> u64 {
        files.div_ceil(FILES_PER_DIR)
    }
}

/// Populating failed.
#[derive(Debug, Error)]
pub enum PopulateError {
    /// A target call failed.
    #[error("{op} {} failed: {source}", path.display())]
    Call {
        /// The call (mkdir, open, close, stat).
        op: &'static str,
        /// Its path.
        path: PathBuf,
        /// What the target said.
        source: TargetError,
    },
    /// A worker thread could not be started.
    #[error("cannot start a populating thread: {0}")]
    Spawn(std::io::Error),
    /// A worker thread panicked (a bug).
    #[error("populating thread {0} panicked")]
    WorkerPanicked(usize),
}

fn call<'p>(op: &'static str, path: &'p Path) -> impl FnOnce(TargetError) -> PopulateError + 'p {
    move |source| PopulateError::Call {
        op,
        path: path.to_path_buf(),
        source,
    }
}

/// What to populate and how.
pub struct Fill<'a> {
    /// The filesystem.
    pub target: &'a dyn Target,
    /// The tree.
    pub tree: &'a Tree,
    /// Create or stat.
    pub how: Populate,
    /// Worker threads (at least 1).
    pub threads: u32,
    /// Counts files done (for a progress bar).
    pub done: &'a AtomicU64,
    /// Stop early when raised.
    pub interrupt: Option<&'a AtomicBool>,
}

impl Fill<'_> {
    fn stopped(&self) -> bool {
        self.interrupt.is_some_and(|f| f.load(Ordering::Relaxed))
    }

    /// Create or stat files `from..to` of the tree. Returns how many were done (fewer than
    /// asked only when the interrupt flag was raised).
    pub fn run(&self, from: u64, to: u64) -> Result<u64, PopulateError> {
        if to <= from {
            return Ok(0);
        }
        if self.how == Populate::Create {
            self.make_dirs(from, to)?;
        }
        let threads = u64::from(self.threads.max(1)).min(to - from);
        let dirs = Tree::dirs_for(to) - from / FILES_PER_DIR;
        let results: Vec<Result<u64, PopulateError>> = std::thread::scope(|s| {
            let mut handles = Vec::new();
            for t in 0..threads {
                let share = if dirs >= threads {
                    Share::EveryNthDir {
                        first: t,
                        every: threads,
                    }
                } else {
                    // Fewer directories than threads: split the files instead.
                    let span = to - from;
                    Share::Files {
                        lo: from + span * t / threads,
                        hi: from + span * (t + 1) / threads,
                    }
                };
                let h = std::thread::Builder::new()
                    .name(format!("populate-{t}"))
                    .spawn_scoped(s, move || self.worker(share, from, to))
                    .map_err(PopulateError::Spawn);
                handles.push(h);
            }
            handles
                .into_iter()
                .enumerate()
                .map(|(i, h)| match h {
                    Ok(h) => h.join().unwrap_or(Err(PopulateError::WorkerPanicked(i))),
                    Err(e) => Err(e),
                })
                .collect()
        });
        let mut done = 0;
        for r in results {
            done += r?;
        }
        Ok(done)
    }

    /// The subdirectories files `from..to` live in (existing ones are fine).
    fn make_dirs(&self, from: u64, to: u64) -> Result<(), PopulateError> {
        for d in from / FILES_PER_DIR..Tree::dirs_for(to) {
            let dir = self.tree.dir(d);
            match self.target.mkdir(&dir, 0o755) {
                Ok(()) => {}
                Err(e) if e.errno == Errno::EEXIST => {}
                Err(e) => return Err(call("mkdir", &dir)(e)),
            }
        }
        Ok(())
    }

    /// Create or stat this thread's share of files `from..to`; returns how many it did.
    fn worker(&self, share: Share, from: u64, to: u64) -> Result<u64, PopulateError> {
        let mut done = 0;
        for (lo, hi) in share.ranges(from, to) {
            let (did, stopped) = self.fill_range(lo, hi)?;
            done += did;
            if stopped {
                break;
            }
        }
        Ok(done)
    }

    /// Files `lo..hi`: how many were done, and whether the interrupt flag stopped it.
    fn fill_range(&self, lo: u64, hi: u64) -> Result<(u64, bool), PopulateError> {
        let mut i = lo;
        while i < hi {
            if (i - lo).is_multiple_of(INTERRUPT_CHECK_EVERY) && self.stopped() {
                return Ok((i - lo, true));
            }
            let path = self.tree.file(i);
            match self.how {
                Populate::Create => {
                    // O_CREAT without O_EXCL: a rerun over a host directory reuses its files.
                    let flags = OpenFlags {
                        truncate: false,
                        ..OpenFlags::create_truncate()
                    };
                    let fd = self
                        .target
                        .open(&path, flags, 0o644)
                        .map_err(call("open", &path))?;
                    self.target.close(fd).map_err(call("close", &path))?;
                }
                Populate::Stat => {
                    self.target.stat(&path).map_err(call("stat", &path))?;
                }
            }
            self.done.fetch_add(1, Ordering::Relaxed);
            i += 1;
        }
        Ok((i - lo, false))
    }
}

/// Which of a run's files one thread handles (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Share {
    /// Every file of directories `first`, `first + every`, ... (counted from the run's first
    /// directory).
    EveryNthDir {
        /// The thread's first directory, counted from the run's first.
        first: u64,
        /// The number of threads.
        every: u64,
    },
    /// Files `lo..hi` (when there are fewer directories than threads).
    Files {
        /// The first file.
        lo: u64,
        /// One past the last file.
        hi: u64,
    },
}

impl Share {
    /// The ranges of file numbers in this share of files `from..to`, in order.
    fn ranges(self, from: u64, to: u64) -> Vec<(u64, u64)> {
        match self {
            Share::Files { lo, hi } => vec![(lo, hi)],
            Share::EveryNthDir { first, every } => (from / FILES_PER_DIR + first
                ..Tree::dirs_for(to))
                .step_by(every as usize)
                .map(|d| {
                    (
                        (d * FILES_PER_DIR).max(from),
                        ((d + 1) * FILES_PER_DIR).min(to),
                    )
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_places_files_by_number() {
        let t = Tree {
            root: PathBuf::from("/sb"),
        };
        assert_eq!(t.file(0), PathBuf::from("/sb/d00000/f00000000"));
        assert_eq!(t.file(12_345), PathBuf::from("/sb/d00001/f00012345"));
        assert_eq!(Tree::dirs_for(0), 0);
        assert_eq!(Tree::dirs_for(1), 1);
        assert_eq!(Tree::dirs_for(FILES_PER_DIR), 1);
        assert_eq!(Tree::dirs_for(FILES_PER_DIR + 1), 2);
    }

    #[test]
    fn threads_take_whole_directories_in_turn_and_cover_the_run_once() {
        let from = FILES_PER_DIR / 2;
        let to = 4 * FILES_PER_DIR + 7;
        let a = Share::EveryNthDir { first: 0, every: 2 }.ranges(from, to);
        let b = Share::EveryNthDir { first: 1, every: 2 }.ranges(from, to);
        assert_eq!(
            a,
            vec![
                (from, FILES_PER_DIR),
                (2 * FILES_PER_DIR, 3 * FILES_PER_DIR),
                (4 * FILES_PER_DIR, to)
            ]
        );
        assert_eq!(
            b,
            vec![
                (FILES_PER_DIR, 2 * FILES_PER_DIR),
                (3 * FILES_PER_DIR, 4 * FILES_PER_DIR)
            ]
        );
        let covered: u64 = a.iter().chain(&b).map(|(lo, hi)| hi - lo).sum();
        assert_eq!(covered, to - from);
    }

    #[test]
    fn populate_names_parse() {
        assert_eq!("stat".parse::<Populate>(), Ok(Populate::Stat));
        assert!(
            "find"
                .parse::<Populate>()
                .unwrap_err()
                .contains("create or stat")
        );
    }
}
