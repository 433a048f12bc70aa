//! Why a run stopped early. Every variant renders as one line naming the call and the path.

use std::path::Path;

use thiserror::Error;

use crate::backend::{Errno, TargetError};

/// A run failure (as opposed to a refused command line, [`super::ConfigError`]).
#[derive(Debug, Error)]
pub enum FsmarkError {
    /// A target call failed.
    #[error("{op} {path} failed: {source}{hint}", hint = full_hint(source))]
    Call {
        /// The call, in fs_mark's words (creat, write, fsync, mkdir, ...).
        op: &'static str,
        /// The path it was made on.
        path: String,
        /// What the target said.
        source: TargetError,
    },
    /// write() wrote fewer bytes than asked.
    #[error("write to {path} wrote {wrote} of {wanted} bytes (short write: filesystem full?)")]
    ShortWrite {
        /// The file.
        path: String,
        /// Bytes written.
        wrote: usize,
        /// Bytes asked for.
        wanted: usize,
    },
    /// fs_mark's free-space check failed outside fill mode.
    #[error("Insufficient free space in {dir} to create {files} new files")]
    InsufficientSpace {
        /// The worker's directory.
        dir: String,
        /// Files one worker creates per iteration.
        files: u32,
    },
    /// A `-d` path exists but is not a directory.
    #[error("{0} is not a directory")]
    NotADirectory(String),
    /// Files cannot be created in a `-d` directory.
    #[error("cannot create files in {dir}: {source}")]
    Unwritable {
        /// The directory.
        dir: String,
        /// What the target said to a trial create.
        source: TargetError,
    },
    /// A worker thread could not be started.
    #[error("cannot start worker thread: {0}")]
    Spawn(std::io::Error),
    /// A worker thread panicked (a bug).
    #[error("worker thread {0} panicked")]
    WorkerPanicked(usize),
    /// The configuration cannot be run (only possible for a hand-built `Config`).
    #[error("{0}")]
    Config(#[from] super::ConfigError),
    /// Writing the report failed (stdout, log file, JSON file).
    #[error("{0}")]
    Output(#[source] std::io::Error),
}

fn full_hint(e: &TargetError) -> &'static str {
    if e.errno == Errno::ENOSPC {
        " (filesystem full)"
    } else {
        ""
    }
}

impl FsmarkError {
    /// A failed call on `path`.
    pub fn call(op: &'static str, path: &Path, source: TargetError) -> FsmarkError {
        FsmarkError::Call {
            op,
            path: path.display().to_string(),
            source,
        }
    }

    /// Whether this is a broken pipe on the report's output (the reader went away).
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, FsmarkError::Output(e) if e.kind() == std::io::ErrorKind::BrokenPipe)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enospc_is_one_line_that_says_the_filesystem_is_full() {
        let e = FsmarkError::call("creat", Path::new("/d/x"), Errno::ENOSPC.into());
        let s = e.to_string();
        assert_eq!(
            s,
            "creat /d/x failed: No space left on device (filesystem full)"
        );
        assert!(!s.contains('\n'));
    }
}
