//! The binaries' layer: every flag a binary has, each defined once, and the one skeleton
//! every binary's `main` runs through.
//!
//! - [`tool`]: the skeleton: parse, early exits, output files, the backend, the observer,
//!   SIGINT, the engine, teardown and the exit status, for any [`tool::Command`].
//! - [`backend_args`]: `--fs`, `--device`, `-o`, `--mkfs`.
//! - [`observe`]: `--trace*` and `--stats*`, and the [`observe::Observer`] they configure.
//! - [`interrupt`]: the two-stage Ctrl-C.
//! - [`fsmark`]: fs_mark's command line and the fsmark command.
//! - [`csumhist`]: csumhist's subcommands (run, stat, bench).
//! - [`labfs`]: the admin tool's command line (mkfs, check, info, print).
//! - [`mount`]: `labfs mount` and `labfs umount` (labfs through FUSE).
//!
//! Engines (in [`crate::workload`]) never see clap: each command here turns its arguments into
//! the engine's plain configuration.

pub mod backend_args;
pub mod csumhist;
pub mod fsmark;
pub mod interrupt;
pub mod labfs;
pub mod mount;
pub mod observe;
pub mod tool;

use std::process::ExitCode;

/// How a binary ends, as its exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// The run completed (or stopped cleanly after one Ctrl-C): 0.
    Ok,
    /// The run failed (I/O error, full filesystem, corrupt image, unwritable output): 1.
    Failure,
    /// The command line was refused: 2.
    Usage,
    /// A second Ctrl-C ended the process at once: 130 (128 + SIGINT).
    Interrupted,
}

impl ExitStatus {
    /// The numeric status.
    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Ok => 0,
            ExitStatus::Failure => 1,
            ExitStatus::Usage => 2,
            ExitStatus::Interrupted => interrupt::INTERRUPTED_EXIT as u8,
        }
    }
}

impl From<ExitStatus> for ExitCode {
    fn from(status: ExitStatus) -> ExitCode {
        ExitCode::from(status.code())
    }
}
