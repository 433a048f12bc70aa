//! syncbench's engines: the cost of `sync()` against the size of the inode cache (thread
//! 002, "sb: add a new writeback list for sync").
//!
//! Before the writeback list, `sync(2)` found the inodes to wait on by walking every inode of
//! the superblock under `s_inode_list_lock`: with ~10M clean inodes cached, `time sync` took
//! 7.3 s with nothing to write; waiting only on the inodes under writeback took 0.04 s, and a
//! 16-way `fs_mark -S4` run stopped slowing down as its cache grew. labfs models both
//! (`sync_wait=all|wblist`, see `fs::data`), so the two results can be reproduced here:
//!
//! - [`sweep`]: fill the cache in steps ([`populate`]: creating files, or stat-ing an existing
//!   tree like a parallel `find`, on many threads) and time clean syncs in both modes at each
//!   step; on the host, `sync(2)` and `syncfs(2)` with the kernel's inode slab ([`slab`]).
//! - [`degrade`]: the fs_mark experiment, `-S4` over many loops in each mode.

pub mod degrade;
pub mod populate;
pub mod slab;
pub mod sweep;

use thiserror::Error;

use crate::backend::TargetError;
pub use populate::{Populate, PopulateError};

/// A syncbench run failed.
#[derive(Debug, Error)]
pub enum SyncbenchError {
    /// Filling the cache failed.
    #[error(transparent)]
    Populate(#[from] PopulateError),
    /// A sync call failed.
    #[error("{way} failed: {source}")]
    Sync {
        /// The way of syncing (wblist, all, sync, syncfs).
        way: &'static str,
        /// What the filesystem said.
        source: TargetError,
    },
    /// The fsmark engine failed.
    #[error("fsmark (sync_wait={mode}): {source}")]
    Fsmark {
        /// The mode of the run.
        mode: &'static str,
        /// What failed.
        source: crate::workload::fsmark::FsmarkError,
    },
    /// Writing a report file failed.
    #[error("writing {what}: {source}")]
    Output {
        /// The file, as the user named it.
        what: String,
        /// Why.
        source: std::io::Error,
    },
}

impl SyncbenchError {
    /// Whether this only says that stdout's reader went away.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, SyncbenchError::Output { source, .. } if source.kind() == std::io::ErrorKind::BrokenPipe)
    }
}

/// This process's resident set in bytes (`/proc/self/statm`), where it can be read.
pub fn rss_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(page).ok().map(|p| pages * p)
}
