//! The binaries' layer: every flag a binary has, each defined once, and the one skeleton
//! every binary's `main` is built on.
//!
//! - [`tool`]: the skeleton: parse, early exits, output files, the backend, the observer,
//!   SIGINT, the engine, teardown and the exit status, for any [`tool::Command`] (fsmark);
//!   tools that cannot run as one pipeline (csumhist, the labfs admin tool) use its pieces.
//! - [`backend_args`]: `--fs`, `--device`, `-o`, `--mkfs`.
//! - [`observe`]: `--trace*` and `--stats*`, and the [`observe::Observer`] they configure.
//! - [`interrupt`]: the two-stage Ctrl-C.
//! - [`memory`]: the process's memory policy (no transparent huge pages), set first by every binary.
//! - [`fiolike`]: fio's command line and job files, and the fiolike command.
//! - [`fsmark`]: fs_mark's command line and the fsmark command.
//! - [`csumhist`]: csumhist's subcommands (run, stat, bench).
//! - [`syncbench`]: syncbench's subcommands (sweep).
//! - [`labfs`]: the admin tool's command line (mkfs, check, info, print).
//! - [`mount`]: `labfs mount` and `labfs umount` (labfs through FUSE).
//!
//! Engines (in [`crate::workload`]) never see clap: each command here turns its arguments into
//! the engine's plain configuration.

pub mod backend_args;
pub mod csumhist;
pub mod fiolike;
pub mod fsmark;
pub mod interrupt;
pub mod labfs;
pub mod memory;
pub mod mount;
pub mod observe;
pub mod syncbench;
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// Binaries only parse and print through this layer: each file in `src/bin` is a few
    /// lines whose `main` hands the process to a `fslab::cli` entry point, so all logic stays
    /// in the library where it is tested.
    #[test]
    fn every_binary_is_a_few_lines_calling_into_cli() {
        let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/bin");
        let mut seen = 0;
        for entry in std::fs::read_dir(&bin).expect("src/bin is readable") {
            let path = entry.expect("directory entry").path();
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            seen += 1;
            let text = std::fs::read_to_string(&path).expect("source is readable");
            let lines = text.lines().count();
            assert!(lines < 50, "{}: {lines} lines", path.display());
            let main = text
                .split("fn main()")
                .nth(1)
                .unwrap_or_else(|| panic!("{}: no main", path.display()));
            assert!(
                main.contains("fslab::cli::"),
                "{}: main does not call into fslab::cli",
                path.display()
            );
        }
        assert!(seen >= 3, "found the binaries");
    }
}
